use super::FilterArgs;
use crate::config::parse_duration;
use crate::error::{Error, Result};
use crate::ops::read::{ReadRequest, TailRequest};
use crate::settings::Ctx;

/// Follow messages as they arrive, without consuming them
///
/// Runs until interrupted, --max messages were shown, or nothing arrived for --idle-timeout.
/// Output is one message per line (jsonl) when stdout is not a terminal.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Queue URL or name from dlqctl.toml
    #[arg(value_name = "QUEUE")]
    pub queue: String,
    /// Start with the messages already there
    #[arg(long)]
    pub from_start: bool,
    /// Stop after N messages
    #[arg(long, value_name = "N")]
    pub max: Option<u64>,
    /// Stop when nothing arrives for DURATION
    #[arg(long, value_name = "DURATION")]
    pub idle_timeout: Option<String>,
    /// How often to look for new messages
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    pub poll_interval: String,
    #[command(flatten)]
    pub filters: FilterArgs,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let max = crate::cli::max_count(a.max)?;
    let queue = ctx.queue(&a.queue)?;
    let (filter, classifier) = a.filters.resolve(ctx)?;
    let idle_timeout = a
        .idle_timeout
        .as_deref()
        .map(|d| parse_duration(d).map_err(|e| Error::invalid_arg("--idle-timeout", e)))
        .transpose()?;
    let poll_interval =
        parse_duration(&a.poll_interval).map_err(|e| Error::invalid_arg("--poll-interval", e))?;
    if poll_interval.is_zero() || poll_interval > std::time::Duration::from_secs(3600) {
        return Err(Error::invalid_arg(
            "--poll-interval",
            "must be more than 0 and at most 1h",
        ));
    }
    crate::ops::read::tail(
        ctx,
        TailRequest {
            read: ReadRequest {
                queue,
                filter,
                classifier,
                max,
                explain: false,
            },
            from_start: a.from_start,
            idle_timeout,
            poll_interval,
        },
    )
    .await
}
