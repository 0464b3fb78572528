use crate::error::{Error, Result};
use crate::settings::Ctx;

/// Browse dead-letter queues in a terminal UI: queues, failure groups, messages; redrive a group
///
/// The queues view shows each queue's depth, oldest message, classes and, where
/// [queues.NAME.limits] are set, what `dlqctl check` says of it (SQS queues are not read
/// there: a read counts as a receive); enter opens a queue's failure groups (`classify --by
/// fingerprint`; / sets a --where jq filter, c a class, m lists the filter's messages), enter
/// again a group's messages with the detail of one; space marks messages. R redrives the
/// selected group (or the filter's messages, or the marked ones),
/// P replays them to a target, X purges them (archived first unless `none`): the same plan as
/// the command, a question (typing the count above 100 messages), the same engine and audit
/// trail. E exports them to a file; e edits one message in $EDITOR as `dlqctl edit` does.
/// ? lists the keys.
/// Needs a terminal (exit 2 without one). docs/ui.md has the keys and what is not built yet.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Queue URLs or names from dlqctl.toml [default: every queue in dlqctl.toml]
    #[arg(value_name = "QUEUE")]
    pub queues: Vec<String>,
    /// Change nothing: the keys that would (R, P, X, e) say they are disabled; E still exports
    #[arg(long)]
    pub read_only: bool,
    /// Read the queues view again every SECS seconds
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub refresh: u64,
    /// Read at most N messages per queue for the queues view's classes, oldest age and class limits (0: none)
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub scan_max: u64,
}

pub async fn run(ctx: &mut Ctx, a: Args) -> Result<i32> {
    let names: Vec<String> = if a.queues.is_empty() {
        ctx.config.queues.keys().cloned().collect()
    } else {
        a.queues
    };
    if names.is_empty() {
        return Err(Error::invalid_arg(
            "QUEUE",
            "no queue given and none configured in dlqctl.toml",
        ));
    }
    let queues = names
        .iter()
        .map(|q| ctx.queue(q))
        .collect::<Result<Vec<_>>>()?;
    crate::ui::run(
        ctx,
        crate::ui::UiRequest {
            queues,
            read_only: a.read_only,
            refresh: std::time::Duration::from_secs(a.refresh),
            scan_max: a.scan_max,
            color: ctx.printer.color,
        },
    )
    .await
}
