use super::redrive::check_batch;
use super::{FilterArgs, HeaderArgs};
use crate::error::{Error, Result};
use crate::ops::moves::{Mode, MoveRequest};
use crate::settings::{Ctx, parse_rate};

/// Send copies of messages to a target; nothing is removed from the source
///
/// SOURCE is a queue, or a JSON Lines file written by `dlqctl export` (FILE.jsonl, file:PATH,
/// or - for stdin). Copies keep their stable ids, so an idempotent consumer ignores the ones it
/// already processed.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Queue URL, name from dlqctl.toml, or export file
    #[arg(value_name = "SOURCE")]
    pub source: String,
    /// Where to send the copies
    #[arg(long, value_name = "TARGET", required = true)]
    pub to: String,
    /// Copy at most N messages
    #[arg(long, value_name = "N")]
    pub max: Option<u64>,
    /// At most this many messages per second (50, 50/s, 3000/m)
    #[arg(long, value_name = "RATE")]
    pub rate: Option<String>,
    /// Messages per batch
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub batch_size: usize,
    /// Show what would be sent; change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation (required without a terminal)
    #[arg(short = 'y', long)]
    pub yes: bool,
    #[command(flatten)]
    pub filters: FilterArgs,
    #[command(flatten)]
    pub headers: HeaderArgs,
    /// Send each message's record mapped by the jq expression JQ (body as .json, attributes as
    /// .attrs, key, group); the stable id cannot change. With --dry-run: a diff of the first few
    #[arg(long, value_name = "JQ")]
    pub transform: Option<String>,
    #[command(flatten)]
    pub guard: super::GuardArgs,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let source = ctx.queue(&a.source)?;
    let (filter, classifier) = a.filters.resolve(ctx)?;
    let to = Some(ctx.target(&a.to, &source)?);
    let (max_redrives, park) = a.guard.resolve(ctx, &source)?;
    crate::ops::moves::run(
        ctx,
        MoveRequest {
            mode: Mode::Replay,
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
            batch_size: check_batch(a.batch_size)?,
            dry_run: a.dry_run,
            yes: a.yes,
            exactly_once: false,
            headers: a.headers.resolve()?,
            max_redrives,
            park,
            transform: a
                .transform
                .as_deref()
                .map(crate::query::Transform::compile)
                .transpose()?,
        },
    )
    .await
}
