use crate::error::{Error, Result};
use crate::settings::Ctx;

/// Check queue configuration for CI
///
/// Above all: the dedupe table keeps ids longer than any copy of a message can still arrive
/// (DLQ retention, redrives, replays), with the arithmetic printed. Exit 0 when every check
/// passes, 1 when any fails. Use --output junit for CI systems.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Queues to check [default: every queue in dlqctl.toml]
    #[arg(value_name = "QUEUE")]
    pub queues: Vec<String>,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let names: Vec<String> = if a.queues.is_empty() {
        ctx.config.queues.keys().cloned().collect()
    } else {
        a.queues
    };
    if names.is_empty() {
        return Err(Error::invalid_arg("QUEUE", "nothing to verify")
            .hinted("name queues, or define [queues.NAME] entries in dlqctl.toml"));
    }
    let queues = names
        .iter()
        .map(|q| ctx.queue(q))
        .collect::<Result<Vec<_>>>()?;
    crate::ops::verify::run(ctx, queues).await
}
