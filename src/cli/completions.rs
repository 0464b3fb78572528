use clap::CommandFactory;
use clap_complete::Shell;

use crate::error::{Result, exit};
use crate::settings::Ctx;

/// Print a shell completion script
///
/// e.g. `dlqctl completions bash > /etc/bash_completion.d/dlqctl`. The same scripts ship in
/// completions/.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// bash, zsh, fish, powershell or elvish
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut super::Cli::command(), "dlqctl", &mut buf);
    ctx.printer.write(&String::from_utf8_lossy(&buf))?;
    Ok(exit::OK)
}
