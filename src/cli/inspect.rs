use crate::error::Result;
use crate::settings::Ctx;

/// Show what is in a dead-letter queue and how it is configured
///
/// Message counts, oldest and newest message, retention, the sources that feed it, a
/// breakdown by failure class, and the dedupe table when one is configured.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Queue URLs or names from dlqctl.toml
    #[arg(value_name = "QUEUE", required = true)]
    pub queues: Vec<String>,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let queues = a
        .queues
        .iter()
        .map(|q| ctx.queue(q))
        .collect::<Result<Vec<_>>>()?;
    crate::ops::inspect::run(ctx, queues).await
}
