//! edit: fix one message by hand. The message is looked up where a redrive reads; its body,
//! attributes, key and group open in `$VISUAL`/`$EDITOR` (text.rs); after saving, the diff and
//! the redrive's plan for this one message, then a question; then the edited copy (same
//! stable id) is sent the way a redrive sends it, and the original removed once the copy is
//! accepted, unless the message changed or left while the editor was open. What was typed is
//! kept until it is sent (editor.rs).

use futures::StreamExt;

use crate::backend::ScanOptions;
use crate::classify::Classifier;
use crate::error::{Error, Result, exit};
use crate::filter::Filter;
use crate::message::Message;
use crate::ops::moves::{Mode, MoveRequest, Target};
use crate::settings::{Ctx, Phase, QueueRef};

mod editor;
mod text;

pub use editor::Kept;

pub struct EditRequest {
    pub queue: QueueRef,
    pub id: String,
    pub to: Option<Target>,
}

/// The message to edit, as it was when it was read.
pub struct Found {
    pub message: Message,
    /// Kafka: the record's partition, and how many records before it there are still to be
    /// redriven (a committed offset covers all of them: the move commits past them too).
    pub passed: Option<(i32, u64)>,
}

pub async fn run(ctx: &Ctx, req: EditRequest) -> Result<i32> {
    let p = &ctx.printer;
    if !p.interactive() {
        return Err(Error::Refused {
            command: "edit",
            reason: "needs a terminal (an editor, then a question); in a script, fix messages with `dlqctl redrive --transform JQ`".into(),
        });
    }
    // Before anything is read (docs/audit.md).
    ctx.require_reason()?;
    let found = find(ctx, &req.queue, &req.id, req.to.is_none()).await?;
    let m = &found.message;
    let kept = Kept::of(
        ctx.aws.state_dir.as_deref(),
        &req.queue.address.to_string(),
        &m.id,
    );
    let fresh = text::render(m, &req.queue.label());
    match kept.earlier()? {
        Some(_) => p.note(&format!(
            "reopening your earlier edit of {} ({}); delete that file to start from the message as it is now",
            m.id,
            kept.path.display()
        )),
        None => kept.create(&fresh)?,
    }
    ctx.interrupt.set_phase(Phase::Editing);
    let edited = editor::edit(&kept.path);
    ctx.interrupt.set_phase(Phase::Reading);
    if let Err(e) = edited {
        if kept.read().is_ok_and(|t| t == fresh) {
            kept.remove();
            return Err(e);
        }
        return Err(kept.hint(e));
    }
    let bad = |why: String| {
        kept.hint(Error::Refused {
            command: "edit",
            reason: format!("{why}; nothing done"),
        })
    };
    let copy = text::parse(&kept.read()?, m).map_err(bad)?;
    if !text::changed(m, &copy) {
        kept.remove();
        p.note("unchanged: nothing done");
        return Ok(exit::OK);
    }
    // The stable id never changes: where it is read from the body, the edit must leave it.
    let mut probe = copy.clone();
    crate::backend::apply_id_source(&mut probe, req.queue.cfg.id.as_ref());
    if probe.id != m.id {
        return Err(bad(format!(
            "the stable id would change (`{}` → `{}`, read from the body as the queue's `id` says): the copy would be a different message",
            m.id, probe.id
        )));
    }
    send(ctx, &req, &found, copy, Some(&kept)).await
}

/// Send `copy` in place of the message `found` (the sending half of `edit`): the diff and the
/// plan, the question (`kept`: at a terminal, with the edit kept on disk; None: no question,
/// for tests), then a redrive of that one message. It is moved only if it is still there as it
/// was found: a message that changed meanwhile stays (exit 1), one that left is exit 3.
pub async fn send(
    ctx: &Ctx,
    req: &EditRequest,
    found: &Found,
    copy: Message,
    kept: Option<&Kept>,
) -> Result<i32> {
    let p = &ctx.printer;
    let keep = |e: Error| match kept {
        Some(k) => k.hint(e),
        None => e,
    };
    let opened = &found.message;
    let mreq = move_request(req, found, copy.clone());
    let prepared = crate::ops::moves::prepare(ctx, &mreq).await.map_err(keep)?;
    let mut rows = prepared.plan(&mreq);
    rows.extend(edit_rows(found));
    if p.is_table() || kept.is_some() {
        p.plan_note(&crate::query::diff(opened, &copy), true);
        p.plan(&rows, kept.is_some());
    }
    if kept.is_some() {
        let question = match &req.to {
            _ if prepared.in_place() => "Retry the job as edited, where it is?".to_string(),
            Some((a, _)) => format!("Send the edited copy to {a} and remove the original?"),
            None => "Send the edited copy to its source queue and remove the original?".into(),
        };
        ctx.interrupt.set_phase(Phase::Asking);
        if !p.confirm(&question, "`dlqctl edit`")? {
            p.plan_note(
                &match kept {
                    Some(k) => format!(
                        "nothing done; your edit is kept in {} (the same `dlqctl edit` reopens it)",
                        k.path.display()
                    ),
                    None => "nothing done".into(),
                },
                true,
            );
            return Ok(exit::OK);
        }
    }
    let ended = crate::ops::moves::start(ctx, mreq, prepared)
        .await
        .map_err(keep)?;
    if ended.moved == 1 {
        if let Some(k) = kept {
            k.remove();
        }
        return Ok(ended.code);
    }
    if ended.matched == 0 && ended.code != exit::INTERRUPTED {
        return Err(keep(Error::NotFound {
            what: format!("message {}", opened.id),
            detail: format!(
                "it left {} while the editor was open (redriven, purged, or taken by another run); nothing was sent",
                req.queue.address
            ),
        }));
    }
    if let Some(k) = kept {
        p.note(&format!(
            "your edit is kept in {}: run the same `dlqctl edit` to reopen it",
            k.path.display()
        ));
    }
    Ok(ended.code)
}

/// The redrive of exactly the message found (by its native id where it has one), on Kafka
/// confined to its partition, sending `copy` in its place if it is still as it was.
fn move_request(req: &EditRequest, found: &Found, copy: Message) -> MoveRequest {
    let opened = found.message.clone();
    let wanted = if opened.native_id.is_empty() {
        opened.id.clone()
    } else {
        opened.native_id.clone()
    };
    let mut source = req.queue.clone();
    if let Some((partition, _)) = found.passed {
        // Other partitions are not read, and nothing is committed there.
        source.address.confined_to_partition(partition);
    }
    let replace = move |m: &Message| -> std::result::Result<Message, String> {
        if m.native_id != opened.native_id || m.id != opened.id {
            return Err("not the message opened in the editor".into());
        }
        if text::changed(&opened, m) {
            return Err(format!(
                "{} changed while the editor was open (its body, attributes, key or group): not replaced by the edit; run `dlqctl edit` again to see it as it is now",
                m.id
            ));
        }
        Ok(copy.clone())
    };
    MoveRequest {
        mode: Mode::Redrive,
        source,
        to: req.to.clone(),
        filter: Filter {
            ids: Some([wanted].into_iter().collect()),
            ..Filter::default()
        },
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
        transform: Some(crate::query::Transform::Replace(Box::new(replace))),
    }
}

/// The plan's rows that are edit's own: which message, and on Kafka what the move passes.
fn edit_rows(found: &Found) -> Vec<(String, String)> {
    let m = &found.message;
    let mut rows = vec![(
        "message".to_string(),
        if m.native_id.is_empty() || m.native_id == m.id {
            m.id.clone()
        } else {
            format!("{} (native id {})", m.id, m.native_id)
        },
    )];
    if let Some((partition, before)) = found.passed {
        rows.push((
            "committed past".into(),
            match before {
                0 => format!("nothing: it is the first record of partition {partition} still to be redriven"),
                1 => format!("1 record before it on partition {partition}: no later redrive reads it (a committed offset covers every record before it; it stays in the topic until its retention)"),
                n => format!("{n} records before it on partition {partition}: no later redrive reads them (a committed offset covers every record before it; they stay in the topic until its retention)"),
            },
        ));
    }
    rows
}

/// The message with stable id `id` (else native id `id`), read where a redrive reads: on
/// Kafka from the redrive group's committed offsets; a record behind them is refused.
/// `in_place`: the edit goes back where the message is (no `--to`).
async fn find(ctx: &Ctx, q: &QueueRef, id: &str, in_place: bool) -> Result<Found> {
    let b = ctx.opener.open(&q.address, &q.source_options()).await?;
    // A job system that retries a job as it is (a PostgreSQL one) cannot take an edit back in
    // place: said before the editor opens, not after (op5: River).
    if in_place && b.retries_in_place() && !b.retries_edits_in_place() {
        let _ = b.close().await;
        return Err(Error::Refused {
            command: "edit",
            reason: format!(
                "{} retries each job in place as it is, so an edited job cannot go back there; send the edited copy to another queue with --to QUEUE",
                q.address
            ),
        });
    }
    // Where removing is committing a position (Kafka), a redrive reads from the redrive
    // group's offsets, and a message behind them is out of its reach.
    let kafka = b.settles_by_position();
    let found = async {
        if let Some(f) = scan_for(b.as_ref(), id, kafka).await? {
            return Ok(f);
        }
        if kafka && let Some(f) = scan_for(b.as_ref(), id, false).await? {
            let m = f.message;
            return Err(Error::NotFound {
                what: format!("message {id} among the records to redrive"),
                detail: format!(
                    "{} is behind the redrive group's committed offset{}: it was redriven, purged or passed over already, and no redrive reads it again. To send a fixed copy anyway: `dlqctl replay` that record with --transform",
                    m.native_id,
                    m.partition
                        .map(|p| format!(" on partition {p}"))
                        .unwrap_or_default()
                ),
            });
        }
        Err(Error::NotFound {
            what: format!("message {id}"),
            detail: format!("no message with this stable or native id in {}", q.address),
        })
    }
    .await;
    let closed = b.close().await;
    let found = found?;
    closed?;
    Ok(found)
}

/// Read `b` for `id`: the first message with that stable id, else the first with that native
/// id; with the number of records before it on its partition (`as_redrive`: read from the
/// redrive group's offsets).
async fn scan_for(
    b: &dyn crate::backend::QueueBackend,
    id: &str,
    as_redrive: bool,
) -> Result<Option<Found>> {
    let mut stream = b
        .scan(ScanOptions {
            limit: None,
            page_size: 500,
            as_redrive,
            purge: false,
        })
        .await?;
    let mut before: std::collections::HashMap<Option<i32>, u64> = Default::default();
    let mut native: Option<Found> = None;
    let found = |m: Message, n: u64| Found {
        passed: m.partition.filter(|_| as_redrive).map(|p| (p, n)),
        message: m,
    };
    while let Some(m) = stream.next().await {
        let m = m?;
        let n = before.entry(m.partition).or_default();
        if m.id == id {
            return Ok(Some(found(m, *n)));
        }
        if native.is_none() && m.native_id == id {
            native = Some(found(m.clone(), *n));
        }
        *n += 1;
    }
    Ok(native)
}
