//! Completions, man pages and the CLI reference, generated from the clap definition into the
//! committed `completions/`, `man/` and `docs/cli.md`. `--check` fails when they drift.
//!
//! `dlqctl generate-artifacts` (scripts/generate) is a maintainer's command, outside the CLI it
//! documents: [`super::main`] hands it here before parsing, so that no completion offers it
//! (clap_complete's scripts list hidden subcommands too) and no help or man page names it.

use std::path::PathBuf;

use clap::{CommandFactory, Parser};
use clap_complete::Shell;

use crate::error::{Error, Result, exit};

/// Write (or check) the generated files
#[derive(Parser, Debug)]
#[command(name = "dlqctl generate-artifacts")]
pub struct Args {
    /// Repository root to write into
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Only compare; exit 1 listing the files that differ
    #[arg(long)]
    pub check: bool,
}

pub struct Artifact {
    pub path: String,
    pub contents: Vec<u8>,
}

/// The CLI as the generated files show it: `--version`'s commit and target left out, so
/// that they change with the version number only.
fn command() -> clap::Command {
    super::Cli::command().long_version(None::<&str>)
}

pub fn artifacts() -> Vec<Artifact> {
    let mut out = Vec::new();
    for (shell, file) in [
        (Shell::Bash, "completions/dlqctl.bash"),
        (Shell::Zsh, "completions/_dlqctl"),
        (Shell::Fish, "completions/dlqctl.fish"),
        (Shell::PowerShell, "completions/_dlqctl.ps1"),
        (Shell::Elvish, "completions/dlqctl.elv"),
    ] {
        let mut buf = Vec::new();
        clap_complete::generate(shell, &mut command(), "dlqctl", &mut buf);
        out.push(Artifact {
            path: file.into(),
            contents: buf,
        });
    }
    let cmd = command();
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut buf)
        .expect("man page renders");
    out.push(Artifact {
        path: "man/dlqctl.1".into(),
        contents: buf,
    });
    let mut md = String::from(
        "# CLI reference\n\nGenerated from the clap definition by `scripts/generate` (checked by the test suite); do not edit by hand.\n\n",
    );
    let mut top = cmd.clone();
    md.push_str(&format!(
        "## dlqctl\n\n```text\n{}\n```\n\n",
        top.render_long_help()
    ));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("dlqctl-{}", sub.get_name());
        let sub = sub
            .clone()
            .name(name.clone())
            .display_name(format!("dlqctl {}", sub.get_name()))
            .bin_name(format!("dlqctl {}", sub.get_name()));
        let mut buf = Vec::new();
        clap_mangen::Man::new(sub.clone())
            .render(&mut buf)
            .expect("man page renders");
        out.push(Artifact {
            path: format!("man/{name}.1"),
            contents: buf,
        });
        let title = sub.get_display_name().unwrap_or_default().to_string();
        let mut sub = sub;
        let help = sub.render_long_help();
        md.push_str(&format!("## {title}\n\n```text\n{help}\n```\n\n"));
    }
    out.push(Artifact {
        path: "docs/cli.md".into(),
        contents: md.into_bytes(),
    });
    out
}

/// `dlqctl generate-artifacts ARGS…` (`args` from `generate-artifacts` on).
pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let a = match Args::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
        }
    };
    match run(a) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

fn run(a: Args) -> Result<i32> {
    let mut drift = Vec::new();
    for art in artifacts() {
        let path = a.dir.join(&art.path);
        if a.check {
            if std::fs::read(&path).ok().as_deref() != Some(art.contents.as_slice()) {
                drift.push(art.path);
            }
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        std::fs::write(&path, &art.contents).map_err(|e| Error::io(&path, e))?;
    }
    if !drift.is_empty() {
        eprintln!("out of date (run scripts/generate): {}", drift.join(", "));
        return Ok(exit::PARTIAL);
    }
    Ok(exit::OK)
}
