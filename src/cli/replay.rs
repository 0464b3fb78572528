use super::{FilterArgs, HeaderArgs};
use crate::error::Result;
use crate::ops::moves::{Mode, MoveRequest};
use crate::settings::Ctx;

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
    #[command(flatten)]
    pub run: super::RunArgs,
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
    let max = crate::cli::max_count(a.run.max)?;
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
            max,
            rate: a.run.rate()?,
            batch_size: a.run.batch_size()?,
            dry_run: a.run.dry_run,
            yes: a.run.yes,
            exactly_once: false,
            headers: a.headers.resolve()?,
            max_redrives,
            park,
            transform: a
                .transform
                .as_deref()
                .map(|code| {
                    crate::query::Transform::compile(code).map(|t| t.watching(&ctx.interrupt))
                })
                .transpose()?,
        },
    )
    .await
}
