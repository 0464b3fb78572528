//! edit: fix one message by hand. The record opens in `$VISUAL`/`$EDITOR`; after saving, the
//! diff and a question; then the edited copy (same stable id) is sent the way a redrive sends
//! it, and the original is removed once the copy is accepted.

use futures::StreamExt;

use crate::backend::ScanOptions;
use crate::classify::Classifier;
use crate::error::{Error, Result, exit};
use crate::filter::Filter;
use crate::message::{Message, Record};
use crate::ops::moves::{Mode, MoveRequest, Target};
use crate::settings::{Ctx, QueueRef};

pub struct EditRequest {
    pub queue: QueueRef,
    pub id: String,
    pub to: Option<Target>,
}

pub async fn run(ctx: &Ctx, req: EditRequest) -> Result<i32> {
    let p = &ctx.printer;
    if !p.interactive() {
        return Err(Error::invalid_arg(
            "edit",
            "needs a terminal (an editor, then a question); in a script, fix messages with `dlqctl redrive --transform JQ`",
        ));
    }
    let original = find(ctx, &req.queue, &req.id).await?;
    let text = serde_json::to_string_pretty(&original.to_record()).expect("serialisable") + "\n";
    let edited = dialoguer::Editor::new()
        .extension(".json")
        .require_save(false)
        .edit(&text)
        .map_err(|e| Error::io("the editor ($VISUAL, $EDITOR)", e.into()))?;
    let Some(edited) = edited.filter(|e| e.trim() != text.trim()) else {
        p.note("unchanged: nothing done");
        return Ok(exit::OK);
    };
    let bad = |why: String| Error::invalid_arg("edit", format!("{why}; nothing done"));
    let record: Record = serde_json::from_str(&edited)
        .map_err(|e| bad(format!("the edited record is not valid ({e})")))?;
    if record.id != original.id {
        return Err(bad(format!(
            "the stable id cannot change (was `{}`): the copy would be a different message",
            original.id
        )));
    }
    let copy = Message::from_record(record).map_err(|e| bad(format!("the edited record: {e}")))?;
    p.write(&crate::query::diff(&original, &copy))?;
    let to = match &req.to {
        Some((a, _)) => a.to_string(),
        None => "its source queue".into(),
    };
    if !p.confirm(
        &format!("Send the edited copy to {to} and remove the original?"),
        "`dlqctl edit`",
    )? {
        p.plan_note("nothing done", true);
        return Ok(exit::OK);
    }
    let filter = Filter {
        ids: Some([original.id.clone()].into_iter().collect()),
        ..Filter::default()
    };
    crate::ops::moves::run(
        ctx,
        MoveRequest {
            mode: Mode::Redrive,
            source: req.queue,
            to: req.to,
            filter,
            classifier: Classifier::builtin(),
            max: Some(1),
            rate: None,
            batch_size: 100,
            dry_run: false,
            yes: true,
            exactly_once: false,
            headers: Default::default(),
            max_redrives: None,
            park: None,
            transform: Some(crate::query::Transform::Replace(Box::new(copy))),
        },
    )
    .await
}

/// The message with stable or native id `id`.
async fn find(ctx: &Ctx, q: &QueueRef, id: &str) -> Result<Message> {
    let b = ctx.opener.open(&q.address, &q.source_options()).await?;
    let found = async {
        let mut stream = b
            .scan(ScanOptions {
                limit: None,
                page_size: 500,
                ..ScanOptions::default()
            })
            .await?;
        while let Some(m) = stream.next().await {
            let m = m?;
            if m.id == id || m.native_id == id {
                return Ok(Some(m));
            }
        }
        Ok::<_, Error>(None)
    }
    .await;
    let closed = b.close().await;
    let found = found?;
    closed?;
    found.ok_or_else(|| Error::NotFound {
        what: format!("message {id}"),
        detail: format!("no message with this stable or native id in {}", q.address),
    })
}
