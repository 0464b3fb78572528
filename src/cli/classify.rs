use super::FilterArgs;
use crate::error::Result;
use crate::ops::classify::ClassifyRequest;
use crate::settings::Ctx;

/// Group messages by failure reason: transient, permanent (poison) or unclassified
///
/// Uses the error data each ecosystem records, user rules (config and --rules) ahead of the
/// built-in ones. With a dedupe table (--dedupe, or [queues.NAME.dedupe]) it also counts the
/// messages whose id is already recorded as processed: replaying those is a no-op.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Queue URL or name from dlqctl.toml
    #[arg(value_name = "QUEUE")]
    pub queue: String,
    /// Dedupe table: postgres://USER@HOST/DB[?table=processed_messages&id_column=message_id]
    #[arg(long, value_name = "URL")]
    pub dedupe: Option<String>,
    /// Look at no more than N messages
    #[arg(long, value_name = "N")]
    pub max: Option<u64>,
    #[command(flatten)]
    pub filters: FilterArgs,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let queue = ctx.queue(&a.queue)?;
    let (filter, classifier) = a.filters.resolve(ctx)?;
    let dedupe = match &a.dedupe {
        Some(url) => Some(crate::dedupe::config_for_url(url)),
        None => queue.cfg.dedupe.clone(),
    };
    crate::ops::classify::run(
        ctx,
        ClassifyRequest {
            queue,
            filter,
            classifier,
            dedupe,
            max: a.max,
        },
    )
    .await
}
