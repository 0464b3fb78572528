use super::FilterArgs;
use crate::error::Result;
use crate::ops::classify::ClassifyRequest;
use crate::settings::Ctx;

/// Group messages by failure reason: transient, permanent (poison) or unclassified
///
/// Uses the error data each ecosystem records, user rules (config and --rules) ahead of the
/// built-in ones. With a dedupe table (--dedupe, or [queues.NAME.dedupe]) it also counts the
/// messages whose id is already recorded as processed: replaying those is a no-op.
///
/// With --test 'TEXT' it classifies that error text alone, without a queue (for writing rules):
/// the class, the rule, its reason and what it matched. docs/classification.md has the rules.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Queue URL or name from dlqctl.toml
    #[arg(value_name = "QUEUE", required_unless_present = "test")]
    pub queue: Option<String>,
    /// Classify this error text instead of a queue's messages
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["queue", "dedupe", "max", "explain"])]
    pub test: Option<String>,
    /// Per message (the first 10,000): the rule that matched, the text it matched and the rules before it
    #[arg(long)]
    pub explain: bool,
    /// Dedupe table: postgres://USER@HOST/DB[?table=processed_messages&id_column=message_id]
    #[arg(long, value_name = "URL")]
    pub dedupe: Option<String>,
    /// Group by KEY[,KEY…]: class, rule, fingerprint, source, key (Kafka key or ordering
    /// group), attr:NAME, hour, day (of the dead-letter time)
    #[arg(
        long,
        value_name = "KEY",
        value_delimiter = ',',
        conflicts_with = "test"
    )]
    pub by: Vec<String>,
    /// Look at no more than N messages
    #[arg(long, value_name = "N")]
    pub max: Option<u64>,
    #[command(flatten)]
    pub filters: FilterArgs,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let max = crate::cli::max_count(a.max)?;
    let (filter, classifier) = a.filters.resolve(ctx)?;
    let Some(queue) = &a.queue else {
        let text = a.test.as_deref().unwrap_or_default();
        return crate::ops::classify::test_text(ctx, &classifier, text);
    };
    // Parsed here rather than by clap: a one-line error, like every other bad value.
    let by =
        a.by.iter()
            .map(|k| {
                k.parse()
                    .map_err(|e| crate::error::Error::invalid_arg("--by", e))
            })
            .collect::<Result<Vec<_>>>()?;
    let queue = ctx.queue(queue)?;
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
            max,
            explain: a.explain,
            by,
        },
    )
    .await
}
