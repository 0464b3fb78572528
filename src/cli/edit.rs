use crate::error::Result;
use crate::ops::edit::EditRequest;
use crate::settings::Ctx;

/// Fix one message by hand and send it back, keeping its stable id
///
/// Opens the message's record (docs/jsonl.md) in $VISUAL or $EDITOR. After you save, shows
/// the diff and asks; then sends the edited copy the way redrive does (to --to, else its
/// source) and removes the original once the copy is accepted. An unchanged file does nothing.
/// Needs a terminal (exit 2 without one); in scripts use `redrive --transform JQ`.
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
