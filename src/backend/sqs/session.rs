//! Reading SQS: browse (peek/export/classify and every dry run) and follow (tail). The
//! redrive session is in `mover.rs`.

use std::collections::HashSet;

use aws_sdk_sqs::types::MessageSystemAttributeName;
use chrono::{DateTime, Utc};

use super::mover::HOLD_LIMIT;
use super::{SqsBackend, sdk_err};
use crate::backend::{MessageStream, Unaccounted};
use crate::error::{Error, Result};

/// Consecutive empty long polls that end a scan. One empty receive proves nothing on SQS.
const EMPTY_STREAK: u32 = 3;

/// Receive up to `n` messages, hidden for `visibility` seconds, waiting up to `wait` seconds.
/// None: SQS answered OverLimit (the queue has as many messages in flight as it allows).
pub(super) async fn receive(
    b: &SqsBackend,
    n: i32,
    visibility: i32,
    wait: i32,
) -> Result<Option<Vec<aws_sdk_sqs::types::Message>>> {
    request(&b.client, &b.url, &b.shown(), n, visibility, wait).await
}

async fn request(
    client: &aws_sdk_sqs::Client,
    url: &str,
    shown: &str,
    n: i32,
    visibility: i32,
    wait: i32,
) -> Result<Option<Vec<aws_sdk_sqs::types::Message>>> {
    let out = client
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(n.clamp(1, 10))
        .visibility_timeout(visibility)
        .wait_time_seconds(wait)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .message_attribute_names("All")
        .send()
        .await;
    match out {
        Ok(out) => Ok(Some(out.messages().to_vec())),
        Err(e) if e.as_service_error().is_some_and(|s| s.is_over_limit()) => Ok(None),
        Err(e) => Err(sdk_err(shown, e)),
    }
}

/// What tail says when SQS will not let it hold more.
fn over_limit(b: &SqsBackend) -> Error {
    Error::Backend {
        target: b.shown(),
        reason: "OverLimit: the queue has as many messages in flight as SQS allows (about 120,000), and tail keeps what it has read hidden; stop other readers, or tail with a shorter --visibility-timeout".into(),
    }
}

/// A browse receive whose handles are recorded for `close` even when the reader drops it
/// mid long poll: the server still hides what it answers, so the request runs to the end
/// in its own task, and `close` waits for it (see `SqsBackend::inflight`).
async fn receive_held(
    b: &SqsBackend,
    visibility: i32,
    wait: i32,
) -> Result<Option<Vec<aws_sdk_sqs::types::Message>>> {
    let guard = b.inflight.clone().read_owned().await;
    let (client, url, held) = (b.client.clone(), b.url.clone(), b.held.clone());
    let shown = b.shown();
    let task = tokio::spawn(async move {
        let _guard = guard;
        let r = request(&client, &url, &shown, 10, visibility, wait).await;
        if let Ok(Some(msgs)) = &r {
            held.lock().unwrap_or_else(|p| p.into_inner()).extend(
                msgs.iter()
                    .filter_map(|m| m.receipt_handle())
                    .map(str::to_string),
            );
        }
        r
    });
    task.await.unwrap_or_else(|e| {
        Err(crate::error::Error::Backend {
            target: b.shown(),
            reason: format!("the receive task failed: {e}"),
        })
    })
}

/// What a browse saw, for the count at `close` (see [`SqsBackend::read_accounting`]).
#[derive(Default)]
pub(super) struct ReadState {
    /// Distinct messages read.
    pub(super) seen: u64,
    /// The read went on until the queue showed nothing new (not cut short by its reader).
    pub(super) exhausted: bool,
    /// The read stopped at the in-flight limit, holding this many.
    pub(super) stopped_at: Option<usize>,
    pub(super) unaccounted: Vec<Unaccounted>,
}

impl SqsBackend {
    fn note_read(&self, f: impl FnOnce(&mut ReadState)) {
        f(&mut self.reads.lock().unwrap_or_else(|p| p.into_inner()));
    }

    /// Before a browse's release, where it read a standard queue to the end: the messages in
    /// flight that it did not hold (`held`): another reader's, which it could not see.
    pub(super) async fn others_in_flight(&self, held: usize) -> Option<u64> {
        let exhausted = self
            .reads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .exhausted;
        if self.fifo || !exhausted {
            return None;
        }
        match self.in_flight_now().await {
            Ok(n) => Some(n.saturating_sub(held as u64)),
            Err(e) => {
                tracing::warn!(
                    "could not count the messages in flight ({e}): messages another reader holds are not reported"
                );
                None
            }
        }
    }

    /// After a browse's release: what it could not read. A FIFO queue hands out nothing more
    /// of a group while a read holds one of its messages, so a read sees only the first (at
    /// most ten) messages of each group; no read holds more than the in-flight limit; and
    /// messages another reader holds (`others`, counted before the release) are not seen.
    pub(super) async fn read_accounting(&self, others: Option<u64>) -> Result<()> {
        if let Some(n) = others.filter(|n| *n > 0) {
            self.note_read(|r| r.unaccounted.push(in_flight(self, n)));
        }
        let (seen, exhausted, stopped_at) = {
            let r = self.reads.lock().unwrap_or_else(|p| p.into_inner());
            (r.seen, r.exhausted, r.stopped_at)
        };
        if !(stopped_at.is_some() || (self.fifo && exhausted)) {
            return Ok(());
        }
        let count = self.in_queue().await?.saturating_sub(seen);
        if count == 0 {
            return Ok(());
        }
        let reason = match stopped_at {
            Some(held) => format!(
                "not examined: the read stopped at {held} messages held in flight (a read keeps what it has read hidden until it ends, and SQS allows about 120,000 in flight per queue)"
            ),
            None => "not examined: a read keeps what it has read hidden until it ends, and SQS hands out nothing more of a FIFO message group while one of its messages is held, so a read sees at most the first 10 messages of each group. The run itself sees further, as it removes what it moves, unless a group starts with messages it leaves".into(),
        };
        self.note_read(|r| {
            r.unaccounted.push(Unaccounted {
                count,
                approximate: true,
                reason,
                until: None,
            })
        });
        Ok(())
    }
}

/// `count` messages in flight that a run or read did not hold (on FIFO: with their groups).
pub(super) fn in_flight(b: &SqsBackend, count: u64) -> Unaccounted {
    let queue_vis = b
        .attrs
        .get("VisibilityTimeout")
        .map_or_else(|| "?".into(), |v| format!("{v}s"));
    let what = if b.fifo {
        "in flight, or behind a message in flight in its FIFO group (SQS hands out nothing of a group behind a message someone holds): held"
    } else {
        "in flight: held"
    };
    Unaccounted {
        count,
        approximate: true,
        reason: format!(
            "not examined: {what} by another reader (a consumer, another dlqctl command, or a dlqctl run killed while receiving, before it could write them to its holds file), so this run could not see them. They become visible again when that reader's visibility timeout runs out (a dlqctl run's --visibility-timeout, 300s unless set; a consumer's, the queue's VisibilityTimeout of {queue_vis} unless it asked for another), unless it deletes them first: re-run then (`{}` shows `in flight`)",
            crate::output::command_line(&["dlqctl", "inspect", &b.addr.to_string()]),
        ),
        until: None,
    }
}

/// Hide what was read for the scan's duration, dedupe by MessageId, stop on a streak of
/// empty long polls; `close()` makes everything visible again.
pub fn browse(
    b: &SqsBackend,
    limit: Option<u64>,
    since: Option<DateTime<Utc>>,
) -> MessageStream<'_> {
    let vis = b.visibility();
    let hold_limit = b.opts.hold_limit.unwrap_or(HOLD_LIMIT);
    Box::pin(async_stream::try_stream! {
        let mut seen: HashSet<String> = HashSet::new();
        let mut streak = 0;
        let mut n = 0u64;
        'outer: loop {
            let held = b.held.lock().unwrap_or_else(|p| p.into_inner()).len();
            if held + 10 > hold_limit {
                b.note_read(|r| r.stopped_at = Some(held));
                break;
            }
            // Every handle is recorded before anything is yielded: a reader that stops early
            // (peek -n 2) must still release all ten.
            let Some(msgs) = receive_held(b, vis, b.opts.wait_seconds).await? else {
                b.note_read(|r| r.stopped_at = Some(held));
                break;
            };
            let mut fresh = 0;
            for m in msgs {
                let id = m.message_id().unwrap_or_default().to_string();
                if !seen.insert(id) {
                    continue;
                }
                fresh += 1;
                let msg = b.to_message(&m);
                if since.is_some_and(|s| msg.enqueued_at.is_some_and(|t| t < s)) {
                    continue;
                }
                n += 1;
                b.note_read(|r| r.seen = seen.len() as u64);
                yield msg;
                if limit.is_some_and(|l| n >= l) {
                    break 'outer;
                }
            }
            b.note_read(|r| r.seen = seen.len() as u64);
            if fresh == 0 {
                streak += 1;
                if streak >= EMPTY_STREAK || (streak >= 2 && b.visible_now().await? == 0) {
                    b.note_read(|r| r.exhausted = true);
                    break;
                }
            } else {
                streak = 0;
            }
        }
    })
}

/// Follow: like browse, but never stops on empty polls. Without `--from-start` the messages
/// already there are read once first, not shown (a dead-lettered message keeps its original
/// SentTimestamp, so time cannot tell old from new): as many as the queue said it held when
/// the tail began, or until polls bring nothing new. Counting them, not waiting for quiet, ends
/// that first pass while messages keep arriving (a tail is for a queue that is busy).
pub fn follow(b: &SqsBackend, from_start: bool) -> MessageStream<'_> {
    let vis = b.visibility();
    Box::pin(async_stream::try_stream! {
        let mut seen: HashSet<String> = HashSet::new();
        if !from_start {
            let backlog = b.visible_now().await?;
            let mut streak = 0;
            while streak < EMPTY_STREAK && (seen.len() as u64) < backlog {
                let msgs = receive_held(b, vis, b.opts.wait_seconds)
                    .await?
                    .ok_or_else(|| over_limit(b))?;
                let mut fresh = 0;
                for m in &msgs {
                    if seen.insert(m.message_id().unwrap_or_default().to_string()) {
                        fresh += 1;
                    }
                }
                streak = if fresh == 0 { streak + 1 } else { 0 };
            }
            tracing::info!(
                "tail: the {} messages already in the queue are passed over; following new ones",
                seen.len()
            );
        }
        loop {
            let msgs = receive_held(b, vis, 5).await?.ok_or_else(|| over_limit(b))?;
            for m in msgs {
                let id = m.message_id().unwrap_or_default().to_string();
                if !seen.insert(id) {
                    continue;
                }
                yield b.to_message(&m);
            }
        }
    })
}
