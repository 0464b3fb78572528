use super::FilterArgs;
use crate::error::Result;
use crate::ops::moves::{Mode, MoveRequest};
use crate::settings::Ctx;

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
    #[command(flatten)]
    pub run: super::RunArgs,
    #[command(flatten)]
    pub filters: FilterArgs,
    // Which headers/attributes the archive's copies carry (with --archive only).
    #[command(flatten)]
    pub headers: super::HeaderArgs,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let max = crate::cli::max_count(a.run.max)?;
    let source = ctx.queue(&a.queue)?;
    let (filter, classifier) = a.filters.resolve(ctx)?;
    let headers = a.headers.resolve()?;
    if a.archive.is_none() && !headers.is_empty() {
        return Err(crate::error::Error::invalid_arg(
            "--no-archive",
            "--keep-header/--strip-header choose what an archive's copies carry, and nothing is copied",
        )
        .hinted("drop --keep-header/--strip-header, or purge with --archive TARGET"));
    }
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
            max,
            rate: a.run.rate()?,
            batch_size: a.run.batch_size()?,
            dry_run: a.run.dry_run,
            yes: a.run.yes,
            exactly_once: false,
            headers,
            max_redrives: None,
            park: None,
            transform: None,
        },
    )
    .await
}
