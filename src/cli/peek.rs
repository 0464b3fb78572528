use super::FilterArgs;
use crate::error::{Error, Result};
use crate::ops::read::ReadRequest;
use crate::settings::Ctx;

/// Show messages without removing them
///
/// Stable id, age, receive count, error, group/key, attributes or headers and the body (JSON
/// pretty-printed at a terminal, binary shown as hex; the first 16 KiB of a larger body, with its
/// size). With --output jsonl each message is one line in the export format.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Queue URL or name from dlqctl.toml
    #[arg(value_name = "QUEUE")]
    pub queue: String,
    /// How many messages to show
    #[arg(short = 'n', long = "count", default_value_t = 10, value_name = "N")]
    pub count: u64,
    /// Per message: the rule that gave its class, the text it matched and the rules before it
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub filters: FilterArgs,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    if a.count == 0 {
        return Err(Error::invalid_arg("-n", "must be at least 1"));
    }
    let queue = ctx.queue(&a.queue)?;
    let (filter, classifier) = a.filters.resolve(ctx)?;
    crate::ops::read::peek(
        ctx,
        ReadRequest {
            queue,
            filter,
            classifier,
            max: Some(a.count),
            explain: a.explain,
        },
    )
    .await
}
