use crate::error::Result;
use crate::ops::edit::EditRequest;
use crate::settings::Ctx;

/// Fix one message by hand and send it back, keeping its stable id
///
/// Finds the message where a redrive reads (Kafka: from the redrive group's offsets) and opens
/// its body (a JSON body as JSON), attributes, key and group in $VISUAL or $EDITOR; what must
/// not change is listed in `#` lines. After you save, shows the diff and the plan, then asks;
/// then sends the edited copy the way redrive does (to --to, else its source) and removes the
/// original once the copy is accepted, unless the message changed or left meanwhile. An
/// unchanged file does nothing; what you typed is kept until it is sent, and the same command
/// reopens it. Needs a terminal (exit 2 without one); in scripts use `redrive --transform JQ`.
/// See docs/triage.md.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Dead-letter queue URL or name from dlqctl.toml
    #[arg(value_name = "QUEUE")]
    pub queue: String,
    /// The message's stable or native id
    #[arg(long, value_name = "ID")]
    pub id: String,
    /// Where to send the edited copy [default: the configured or discovered source]
    #[arg(long, value_name = "TARGET")]
    pub to: Option<String>,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let queue = ctx.queue(&a.queue)?;
    let to = a.to.as_deref().map(|t| ctx.target(t, &queue)).transpose()?;
    crate::ops::edit::run(
        ctx,
        EditRequest {
            queue,
            id: a.id,
            to,
        },
    )
    .await
}
