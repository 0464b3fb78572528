use crate::error::Result;
use crate::settings::Ctx;

/// Show what is in a dead-letter queue and how it is configured
///
/// Message counts, oldest and newest message, retention, the sources that feed it, a
/// breakdown by failure class, the dead-letter arrivals over time (a sparkline of the last 48
/// hours), and the dedupe table when one is configured. --output prometheus prints the same
/// as OpenMetrics gauges (docs/triage.md lists them).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Queue URLs or names from dlqctl.toml
    #[arg(value_name = "QUEUE", required = true)]
    pub queues: Vec<String>,
    /// Read at most N messages for the arrivals over time and the per-fingerprint counts
    /// (0: read none)
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub scan_max: u64,
    /// Read them on SQS too, where each read counts as a receive
    #[arg(long)]
    pub scan: bool,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let queues = a
        .queues
        .iter()
        .map(|q| ctx.queue(q))
        .collect::<Result<Vec<_>>>()?;
    crate::ops::inspect::run(
        ctx,
        crate::ops::inspect::InspectRequest {
            queues,
            scan_max: a.scan_max,
            scan_anyway: a.scan,
        },
    )
    .await
}
