use super::{FilterArgs, GuardArgs, HeaderArgs};
use crate::error::{Error, Result};
use crate::ops::moves::{Mode, MoveRequest};
use crate::settings::Ctx;

/// Move messages back to their source queue, keeping their stable ids
///
/// Prints the plan (how many, from where, to where) and asks at a terminal; without a
/// terminal it refuses unless --yes is given. A message is removed from the dead-letter queue
/// only after its copy is accepted by the target; an interrupted run can be re-run safely.
/// Ends with a summary; exit 1 when some messages were not moved (they stay where they were).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Dead-letter queue URL or name from dlqctl.toml
    #[arg(value_name = "QUEUE")]
    pub queue: String,
    /// Where to send the messages [default: the configured or discovered source]
    #[arg(long, value_name = "TARGET")]
    pub to: Option<String>,
    #[command(flatten)]
    pub run: super::RunArgs,
    /// SQS: use the service's own move task (StartMessageMoveTask); no filters, ≤500/s
    #[arg(long)]
    pub native: bool,
    /// With --native: cancel the running move task
    #[arg(long, requires = "native")]
    pub cancel: bool,
    /// With --native: start the task and return instead of following its progress
    #[arg(long, requires = "native")]
    pub no_wait: bool,
    /// Send each message's record mapped by the jq expression JQ (body as .json, attributes as
    /// .attrs, key, group); the stable id cannot change. With --dry-run: a diff of the first few
    #[arg(long, value_name = "JQ", conflicts_with = "native")]
    pub transform: Option<String>,
    /// Kafka → Kafka on one cluster: copies and the redrive group's offsets in one transaction
    /// (consumers of the target need isolation.level=read_committed)
    #[arg(long, conflicts_with = "native")]
    pub exactly_once: bool,
    #[command(flatten)]
    pub filters: FilterArgs,
    #[command(flatten)]
    pub headers: HeaderArgs,
    #[command(flatten)]
    pub guard: GuardArgs,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let max = crate::cli::max_count(a.run.max)?;
    let source = ctx.queue(&a.queue)?;
    let rate = a.run.rate()?;
    let headers = a.headers.resolve()?;
    if a.native {
        if !headers.is_empty() {
            return Err(Error::invalid_arg(
                "--native",
                "a native move task copies messages as they are",
            )
            .hinted("drop --keep-header/--strip-header, or redrive without --native"));
        }
        let (filter, _) = a.filters.resolve(ctx)?;
        if !filter.is_empty() || a.run.max.is_some() {
            return Err(Error::invalid_arg(
                "--native",
                "a native move task cannot filter or limit",
            )
            .hinted("drop the filters and --max, or redrive without --native"));
        }
        let to =
            a.to.as_deref()
                .map(|t| ctx.target(t, &source))
                .transpose()?
                .map(|(addr, _)| addr);
        return crate::ops::native::run(
            ctx,
            crate::ops::native::NativeRequest {
                source,
                to,
                rate,
                dry_run: a.run.dry_run,
                yes: a.run.yes,
                cancel: a.cancel,
                wait: !a.no_wait,
            },
        )
        .await;
    }
    let (filter, classifier) = a.filters.resolve(ctx)?;
    let (max_redrives, park) = a.guard.resolve(ctx, &source)?;
    let to =
        a.to.as_deref()
            .map(|t| ctx.target(t, &source))
            .transpose()?;
    crate::ops::moves::run(
        ctx,
        MoveRequest {
            mode: Mode::Redrive,
            source,
            to,
            filter,
            classifier,
            max,
            rate,
            batch_size: a.run.batch_size()?,
            dry_run: a.run.dry_run,
            yes: a.run.yes,
            exactly_once: a.exactly_once,
            headers,
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
