//! Reading SQS: browse (peek/export/classify), follow (tail) and the redrive session.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_sqs::types::{
    ChangeMessageVisibilityBatchRequestEntry, DeleteMessageBatchRequestEntry,
    MessageSystemAttributeName,
};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use futures::stream::FuturesUnordered;

use super::journal::Journal;
use super::{SqsBackend, sdk_err};
use crate::backend::{Claim, MessageStream, MoveSession, Ticket};
use crate::error::{Error, Result};
use crate::message::Message;

/// Consecutive empty long polls that end a scan. One empty receive proves nothing on SQS.
const EMPTY_STREAK: u32 = 3;

/// Long-poll wait per receive, seconds.
async fn receive(
    b: &SqsBackend,
    n: i32,
    visibility: i32,
    wait: i32,
) -> Result<Vec<aws_sdk_sqs::types::Message>> {
    request(&b.client, &b.url, &b.shown(), n, visibility, wait).await
}

async fn request(
    client: &aws_sdk_sqs::Client,
    url: &str,
    shown: &str,
    n: i32,
    visibility: i32,
    wait: i32,
) -> Result<Vec<aws_sdk_sqs::types::Message>> {
    let out = client
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(n.clamp(1, 10))
        .visibility_timeout(visibility)
        .wait_time_seconds(wait)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .message_attribute_names("All")
        .send()
        .await
        .map_err(|e| sdk_err(shown, e))?;
    Ok(out.messages().to_vec())
}

/// A browse receive whose handles are recorded for `close` even when the reader drops it
/// mid long poll: the server still hides what it answers, so the request runs to the end
/// in its own task, and `close` waits for it (see `SqsBackend::inflight`).
async fn receive_held(
    b: &SqsBackend,
    visibility: i32,
    wait: i32,
) -> Result<Vec<aws_sdk_sqs::types::Message>> {
    let guard = b.inflight.clone().read_owned().await;
    let (client, url, held) = (b.client.clone(), b.url.clone(), b.held.clone());
    let shown = b.shown();
    let task = tokio::spawn(async move {
        let _guard = guard;
        let r = request(&client, &url, &shown, 10, visibility, wait).await;
        if let Ok(msgs) = &r {
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

/// Hide what was read for the scan's duration, dedupe by MessageId, stop on a streak of
/// empty long polls; `close()` makes everything visible again.
pub fn browse(
    b: &SqsBackend,
    limit: Option<u64>,
    since: Option<DateTime<Utc>>,
) -> MessageStream<'_> {
    let vis = b.visibility();
    Box::pin(async_stream::try_stream! {
        let mut seen: HashSet<String> = HashSet::new();
        let mut streak = 0;
        let mut n = 0u64;
        'outer: loop {
            // Every handle is recorded before anything is yielded: a reader that stops early
            // (peek -n 2) must still release all ten.
            let msgs = receive_held(b, vis, b.opts.wait_seconds).await?;
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
                yield msg;
                if limit.is_some_and(|l| n >= l) {
                    break 'outer;
                }
            }
            if fresh == 0 {
                streak += 1;
                if streak >= EMPTY_STREAK || (streak >= 2 && b.visible_now().await? == 0) {
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
/// SentTimestamp, so time cannot tell old from new).
pub fn follow(b: &SqsBackend, from_start: bool) -> MessageStream<'_> {
    let vis = b.visibility();
    Box::pin(async_stream::try_stream! {
        let mut seen: HashSet<String> = HashSet::new();
        if !from_start {
            let mut streak = 0;
            while streak < EMPTY_STREAK {
                let msgs = receive_held(b, vis, b.opts.wait_seconds).await?;
                let mut fresh = 0;
                for m in &msgs {
                    if seen.insert(m.message_id().unwrap_or_default().to_string()) {
                        fresh += 1;
                    }
                }
                streak = if fresh == 0 { streak + 1 } else { 0 };
            }
        }
        loop {
            let msgs = receive_held(b, vis, 5).await?;
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

#[derive(Clone)]
struct Claimed {
    id: String,
    receipt: String,
}

/// A redrive from an SQS queue.
///
/// Claimed messages are hidden (visibility timeout), and a heartbeat extends that while the
/// run holds them. Accepted ones are journalled as sent, then deleted (only those); the rest
/// stay hidden until the run ends, so the run does not see them again, and are then released.
pub struct SqsMoveSession<'a> {
    b: &'a SqsBackend,
    batch: Vec<Claimed>,
    held: Arc<Mutex<Vec<Claimed>>>,
    current: Arc<Mutex<Vec<Claimed>>>,
    seen: HashSet<String>,
    streak: u32,
    /// The last round returned fewer messages than it asked for.
    short: bool,
    journal: Journal,
    heartbeat: tokio::task::JoinHandle<()>,
    /// Set by the heartbeat when it could not extend the claimed messages' visibility: after
    /// the timeout another operator may take them, so the run takes no new batch.
    heartbeat_failed: Arc<Mutex<Option<Error>>>,
}

impl<'a> SqsMoveSession<'a> {
    pub async fn begin(b: &'a SqsBackend) -> Result<SqsMoveSession<'a>> {
        let journal = Journal::open(b.opts.state_dir.as_deref(), &b.arn, &b.url)?;
        let held: Arc<Mutex<Vec<Claimed>>> = Arc::default();
        let current: Arc<Mutex<Vec<Claimed>>> = Arc::default();
        let vis = b.visibility();
        let (client, url) = (b.client.clone(), b.url.clone());
        let (h2, c2) = (held.clone(), current.clone());
        let heartbeat_failed: Arc<Mutex<Option<Error>>> = Arc::default();
        let (failed, shown) = (heartbeat_failed.clone(), b.shown());
        // The heartbeat: every third of the visibility timeout, extend every message this run
        // holds, so a long run never lets a claimed message reappear.
        let heartbeat = tokio::spawn(async move {
            let period = Duration::from_secs((vis as u64 / 3).max(1));
            loop {
                tokio::time::sleep(period).await;
                let all: Vec<Claimed> = {
                    let mut v = h2.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    v.extend(c2.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned());
                    v
                };
                for chunk in all.chunks(10) {
                    let entries = chunk
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            ChangeMessageVisibilityBatchRequestEntry::builder()
                                .id(format!("h{i}"))
                                .receipt_handle(&c.receipt)
                                .visibility_timeout(vis)
                                .build()
                                .expect("all required fields set")
                        })
                        .collect();
                    if let Err(e) = client
                        .change_message_visibility_batch()
                        .queue_url(&url)
                        .set_entries(Some(entries))
                        .send()
                        .await
                    {
                        tracing::warn!(
                            "visibility heartbeat failed: {}",
                            aws_sdk_sqs::error::DisplayErrorContext(&e)
                        );
                        let cause = sdk_err(&shown, e);
                        let mut slot = failed.lock().unwrap_or_else(|p| p.into_inner());
                        slot.get_or_insert(cause);
                        return;
                    }
                }
                tracing::debug!(messages = all.len(), "visibility extended");
            }
        });
        Ok(SqsMoveSession {
            b,
            batch: Vec::new(),
            held,
            current,
            seen: HashSet::new(),
            streak: 0,
            short: false,
            journal,
            heartbeat,
            heartbeat_failed,
        })
    }

    async fn delete(&self, items: &[Claimed]) -> Result<Vec<String>> {
        let mut deleted = Vec::new();
        let mut calls = FuturesUnordered::new();
        for chunk in items.chunks(10) {
            let entries: Vec<_> = chunk
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    DeleteMessageBatchRequestEntry::builder()
                        .id(format!("d{i}"))
                        .receipt_handle(&c.receipt)
                        .build()
                        .expect("all required fields set")
                })
                .collect();
            let req = self
                .b
                .client
                .delete_message_batch()
                .queue_url(&self.b.url)
                .set_entries(Some(entries));
            calls.push(async move { (chunk, req.send().await) });
        }
        while let Some((chunk, r)) = calls.next().await {
            let out = r.map_err(|e| sdk_err(&self.b.shown(), e))?;
            for f in out.failed() {
                let i: usize = f.id().trim_start_matches('d').parse().unwrap_or(usize::MAX);
                if let Some(c) = chunk.get(i) {
                    tracing::warn!(message_id = %c.id, code = f.code(), "copy sent but delete failed: it will reappear in the DLQ (same stable id, harmless duplicate)");
                }
            }
            for s in out.successful() {
                let i: usize = s.id().trim_start_matches('d').parse().unwrap_or(usize::MAX);
                if let Some(c) = chunk.get(i) {
                    deleted.push(c.id.clone());
                }
            }
        }
        Ok(deleted)
    }
}

impl Drop for SqsMoveSession<'_> {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}

#[async_trait]
impl MoveSession for SqsMoveSession<'_> {
    async fn next_batch(&mut self, n: usize) -> Result<Option<Claim>> {
        if let Some(cause) = self
            .heartbeat_failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            // The messages held now may become visible to another operator once their
            // timeout runs out: take no more, settle what is on its way, and say why.
            return Err(Error::Backend {
                target: self.b.shown(),
                reason: format!(
                    "the visibility heartbeat failed ({cause}), so the messages this run holds could be taken by another consumer once their visibility timeout ({}s) runs out: no new batch was taken. Let ChangeMessageVisibility work (docs/permissions.md) and re-run",
                    self.b.visibility()
                ),
            });
        }
        let want = n.clamp(1, 10 * self.b.opts.parallel.max(1));
        let vis = self.b.visibility();
        loop {
            // Once a round comes back short or empty the queue is nearly drained: one receive
            // a round from then on, so the stop rule costs 2-3 requests, not 2-3 x --parallel.
            let calls = if self.streak > 0 || self.short {
                1
            } else {
                want.div_ceil(10)
            };
            let mut recv = FuturesUnordered::new();
            let mut asked = 0usize;
            for c in 0..calls {
                let ask = (want - c * 10).min(10);
                asked += ask;
                recv.push(receive(self.b, ask as i32, vis, self.b.opts.wait_seconds));
            }
            let mut received = 0usize;
            let mut out = Vec::new();
            let mut resend_done: Vec<Claimed> = Vec::new();
            let mut again: Vec<Claimed> = Vec::new();
            while let Some(r) = recv.next().await {
                let r = r?;
                received += r.len();
                for m in r {
                    let id = m.message_id().unwrap_or_default().to_string();
                    let receipt = m.receipt_handle().unwrap_or_default().to_string();
                    if self.journal.was_sent(&id) {
                        // Sent by an interrupted earlier run but never deleted: delete it now,
                        // do not send it again.
                        resend_done.push(Claimed { id, receipt });
                        continue;
                    }
                    if !self.seen.insert(id.clone()) {
                        // Seen before in this run (a FIFO message given back, or one whose
                        // visibility ran out): give it back again, or keep holding it.
                        again.push(Claimed { id, receipt });
                        continue;
                    }
                    out.push((Claimed { id, receipt }, self.b.to_message(&m)));
                }
            }
            self.short = received < asked;
            if !again.is_empty() {
                if self.b.fifo {
                    let handles: Vec<String> = again.into_iter().map(|c| c.receipt).collect();
                    self.b.release(&handles).await?;
                } else {
                    self.held
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .extend(again);
                }
            }
            if !resend_done.is_empty() {
                let deleted = self.delete(&resend_done).await?;
                tracing::warn!(
                    count = deleted.len(),
                    "deleted messages that an interrupted earlier run had already sent"
                );
                self.journal.deleted(&deleted)?;
            }
            if out.is_empty() {
                self.streak += 1;
                if self.streak >= EMPTY_STREAK
                    || (self.streak >= 2 && self.b.visible_now().await? == 0)
                {
                    return Ok(None);
                }
                continue;
            }
            self.streak = 0;
            let (claimed, msgs): (Vec<Claimed>, Vec<Message>) = out.into_iter().unzip();
            *self.current.lock().unwrap_or_else(|p| p.into_inner()) = claimed.clone();
            self.batch = claimed;
            return Ok(Some(Claim::new(msgs)));
        }
    }

    async fn settle(
        &mut self,
        _ticket: Ticket,
        accepted: &[usize],
        _failed: &[usize],
    ) -> Result<()> {
        let batch = std::mem::take(&mut self.batch);
        let acc: HashSet<usize> = accepted.iter().copied().collect();
        let sent: Vec<Claimed> = batch
            .iter()
            .enumerate()
            .filter(|(i, _)| acc.contains(i))
            .map(|(_, c)| c.clone())
            .collect();
        let kept: Vec<Claimed> = batch
            .iter()
            .enumerate()
            .filter(|(i, _)| !acc.contains(i))
            .map(|(_, c)| c.clone())
            .collect();
        // Journal first: a crash between here and the delete makes the next run delete these
        // instead of sending them again.
        self.journal
            .sent(&sent.iter().map(|c| c.id.clone()).collect::<Vec<_>>())?;
        if self.b.fifo {
            // Holding a FIFO message locks its whole group: give skipped and refused ones back
            // at once (they are in `seen`, so this run does not take them again).
            let handles: Vec<String> = kept.into_iter().map(|c| c.receipt).collect();
            self.b.release(&handles).await?;
        } else {
            self.held
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(kept);
        }
        self.current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        let deleted = self.delete(&sent).await?;
        self.journal.deleted(&deleted)?;
        Ok(())
    }

    async fn finish(&mut self) -> Result<()> {
        self.heartbeat.abort();
        let held: Vec<String> =
            std::mem::take(&mut *self.held.lock().unwrap_or_else(|p| p.into_inner()))
                .into_iter()
                .map(|c| c.receipt)
                .collect();
        // Giving back what the run held is a courtesy: a message not given back reappears by
        // itself when its visibility timeout runs out. Nothing is lost, so a failure here
        // does not fail the run.
        if let Err(e) = self.b.release(&held).await {
            tracing::warn!(
                "could not make {} held messages visible again ({e}); they reappear by themselves within {}s",
                held.len(),
                self.b.visibility()
            );
        }
        self.journal.compact()?;
        Ok(())
    }
}
