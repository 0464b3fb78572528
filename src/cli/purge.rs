use super::FilterArgs;
use crate::error::{Error, Result};
use crate::ops::moves::{Mode, MoveRequest};
use crate::settings::{Ctx, parse_rate};

/// Remove messages from a dead-letter queue, archiving each one first
///
/// With --archive TARGET (a JSON Lines file, a table, a queue or a topic) each message is
/// copied there first, keeping its stable id, and removed only after the archive accepted it.
/// Removing without a copy must be asked for with --no-archive. Prints the plan and asks at a
/// terminal; without a terminal it refuses unless --yes is given. SQS: DeleteMessage; a
/// PostgreSQL table: DELETE of the row; a job system: the delete its own tools do; Kafka: the
/// redrive group's offsets move past the purged records (docs/purge.md).
#[derive(clap::Args, Debug)]
#[command(group = clap::ArgGroup::new("archive_or_not").required(true).args(["archive", "no_archive"]))]
pub struct Args {
    /// Dead-letter queue URL or name from dlqctl.toml
    #[arg(value_name = "QUEUE")]
    pub queue: String,
    /// Copy each message here before removing it: FILE.jsonl, a table, a queue or a topic
    #[arg(long, value_name = "TARGET")]
    pub archive: Option<String>,
    /// Remove the messages without keeping a copy anywhere
    #[arg(long)]
    pub no_archive: bool,
    /// Remove at most N messages
    #[arg(long, value_name = "N")]
    pub max: Option<u64>,
    /// At most this many messages per second (50, 50/s, 3000/m)
    #[arg(long, value_name = "RATE")]
    pub rate: Option<String>,
    /// Messages per batch (one transaction on PostgreSQL)
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub batch_size: usize,
    /// Show what would be removed; change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation (required without a terminal)
    #[arg(short = 'y', long)]
    pub yes: bool,
    #[command(flatten)]
    pub filters: FilterArgs,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let source = ctx.queue(&a.queue)?;
    let (filter, classifier) = a.filters.resolve(ctx)?;
    let to = a
        .archive
        .as_deref()
        .map(|t| ctx.target(t, &source))
        .transpose()?;
    crate::ops::moves::run(
        ctx,
        MoveRequest {
            mode: Mode::Purge,
            source,
            to,
            filter,
            classifier,
            max: a.max,
            rate: a
                .rate
                .as_deref()
                .map(|r| parse_rate(r).map_err(|e| Error::invalid_arg("--rate", e)))
                .transpose()?,
            batch_size: super::redrive::check_batch(a.batch_size)?,
            dry_run: a.dry_run,
            yes: a.yes,
            exactly_once: false,
            headers: Default::default(),
            max_redrives: None,
            park: None,
            transform: None,
        },
    )
    .await
}
