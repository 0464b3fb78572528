//! A redrive (or purge) from an SQS queue, accounting for every message it receives.
//!
//! Claimed messages are hidden (visibility timeout) and a heartbeat extends that while the run
//! holds them. Accepted ones are journalled as sent, then deleted, one DeleteMessageBatch at a
//! time, with the newest receipt handle this run got for each, after claiming again any whose
//! hold is about to run out; a delete that does not take effect is reported, not counted as a
//! move. The rest stay hidden until the run ends (standard queues: so that the run does not
//! see them twice) or are given back at once (FIFO: holding one locks its group).
//!
//! What a run cannot account for is reported at its end ([`Unaccounted`]): FIFO groups it
//! could not read past, messages left unexamined at the in-flight limit, what an interrupted
//! earlier run held and could not be given back, and what is in flight at the end that the run
//! did not hold (another reader's, or a killed run's whose receive never answered it).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_sdk_sqs::types::MessageSystemAttributeName;
use chrono::Utc;
use futures::StreamExt;
use futures::stream::FuturesUnordered;

use super::SqsBackend;
use super::calls::{self, Heartbeat, Item};
use super::holds::{HoldLog, Holds, give_back_earlier};
use super::journal::{Journal, place};
use super::record::system_attr;
use super::session::receive;
use crate::backend::{Claim, MoveSession, Ticket, Unaccounted};
use crate::error::{Error, Result};
use crate::message::Message;

#[path = "mover_accounting.rs"]
mod accounting;

/// Consecutive rounds that bring nothing new and end a run (see `session::EMPTY_STREAK`).
const EMPTY_STREAK: u32 = 3;

/// Messages a run holds at most before it stops taking more: under SQS's limit of about
/// 120,000 in flight per queue, with room for the queue's other readers.
pub(super) const HOLD_LIMIT: usize = 110_000;

/// What this run did with a message it received.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Left in the queue (skipped, held by the loop guard, not sent, not removed).
    Left,
    /// Deleted by this run.
    Removed,
}

pub struct SqsMoveSession<'a> {
    b: &'a SqsBackend,
    /// The batch claimed last: MessageIds, in order.
    batch: Vec<String>,
    holds: Arc<Holds>,
    log: Arc<Mutex<HoldLog>>,
    seen: HashMap<String, Fate>,
    /// FIFO: groups whose messages last came back starting with one this run left.
    blocked: BTreeSet<String>,
    streak: u32,
    /// The last round returned fewer messages than it asked for.
    short: bool,
    /// The last `next_batch` found nothing more (the stop rule), rather than `--max` or an
    /// interruption ending the run.
    exhausted: bool,
    /// The run stopped taking messages at the in-flight limit (how many it held then).
    stopped_at: Option<usize>,
    journal: Journal,
    heartbeat: tokio::task::JoinHandle<()>,
    heartbeat_failed: calls::Failed,
    /// Of the batch settled last: accepted but not removed, with why.
    unremoved: Vec<(usize, String)>,
    /// Messages this run deleted that came back and could not be deleted again.
    undeleted: u64,
    unaccounted: Vec<Unaccounted>,
    /// Counted at the end ([`SqsMoveSession::count_others`]).
    others: Option<accounting::Others>,
    /// The queue's messages once an interrupted run's were given back (see `begin`).
    remaining: Option<u64>,
}

impl<'a> SqsMoveSession<'a> {
    pub async fn begin(b: &'a SqsBackend) -> Result<SqsMoveSession<'a>> {
        let journal = Journal::open(b.opts.state_dir.as_deref(), &b.arn, &b.url)?;
        let (dir, name) = place(b.opts.state_dir.as_deref(), &b.arn, &b.url)?;
        let log = HoldLog::create(&dir, &name, b.visibility())?;
        let (earlier, given_back) = give_back_earlier(b, &dir, &name, log.path()).await;
        // The plan counted the visible messages before those came back: count again (the
        // progress bar's length), in flight included.
        let remaining = if given_back > 0 {
            b.in_queue().await.ok()
        } else {
            None
        };
        let holds: Arc<Holds> = Arc::default();
        let log = Arc::new(Mutex::new(log));
        let heartbeat_failed = calls::Failed::default();
        let heartbeat = Heartbeat {
            client: b.client.clone(),
            url: b.url.clone(),
            shown: b.shown(),
            holds: holds.clone(),
            log: log.clone(),
            visibility: b.visibility(),
            parallel: b.opts.parallel.max(4),
            failed: heartbeat_failed.clone(),
        }
        .spawn();
        Ok(SqsMoveSession {
            b,
            batch: Vec::new(),
            holds,
            log,
            seen: HashMap::new(),
            blocked: BTreeSet::new(),
            streak: 0,
            short: false,
            exhausted: false,
            stopped_at: None,
            journal,
            heartbeat,
            heartbeat_failed,
            unremoved: Vec::new(),
            undeleted: 0,
            unaccounted: earlier,
            others: None,
            remaining,
        })
    }

    fn log(&self) -> std::sync::MutexGuard<'_, HoldLog> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stop holding `ids` and make them visible again now (FIFO: holding one locks its
    /// group). A failure only delays them: they reappear when their timeout runs out.
    async fn give_back(&self, ids: &[String]) {
        let items = self.holds.take(ids);
        if items.is_empty() {
            return;
        }
        let b = self.b;
        let out =
            calls::change_visibility(&b.client, &b.url, &b.shown(), &items, 0, b.opts.parallel)
                .await;
        if let Some(Err(e)) = out
            .iter()
            .find(|o| o.as_ref().is_err_and(|e| !e.not_held()))
        {
            tracing::warn!(
                "could not make messages visible again ({e}); they reappear by themselves within {}s",
                b.visibility()
            );
        }
        self.log().gone(ids);
    }

    /// Delete `ids` (held), claiming again first any whose hold is about to run out: per id,
    /// deleted or why not. They are no longer held either way.
    async fn delete(&self, ids: &[String]) -> Vec<std::result::Result<(), String>> {
        let b = self.b;
        let vis = b.visibility();
        let margin = Duration::from_secs((vis as u64 / 4).clamp(1, 30));
        let now = Instant::now();
        let mut out: Vec<std::result::Result<(), String>> = vec![Ok(()); ids.len()];
        let mut fresh: Vec<(usize, Item)> = Vec::new();
        let mut lapsing: Vec<(usize, Item)> = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            match self.holds.get(id) {
                Some((receipt, expires)) if expires > now + margin => {
                    fresh.push((i, (id.clone(), receipt)))
                }
                Some((receipt, _)) => lapsing.push((i, (id.clone(), receipt))),
                None => out[i] = Err("this run no longer held it".into()),
            }
        }
        if !lapsing.is_empty() {
            // The heartbeat could not keep up (or could not extend these): a delete with a
            // receipt whose hold ran out may be answered Successful and do nothing, and the
            // message may be another reader's now. Claim it again first.
            let items: Vec<Item> = lapsing.iter().map(|(_, it)| it.clone()).collect();
            let claimed = calls::change_visibility(
                &b.client,
                &b.url,
                &b.shown(),
                &items,
                vis,
                b.opts.parallel,
            )
            .await;
            for ((i, item), c) in lapsing.into_iter().zip(claimed) {
                match c {
                    Ok(()) => fresh.push((i, item)),
                    Err(e) => {
                        out[i] = Err(format!(
                            "copied, but this run's hold on it ran out before the delete (--visibility-timeout {vis}s) and it could not be claimed again ({e}): it stays in the dead-letter queue (or another reader has it), and a re-run on this machine deletes it without sending it again"
                        ))
                    }
                }
            }
        }
        let items: Vec<Item> = fresh.iter().map(|(_, it)| it.clone()).collect();
        let deleted = calls::delete(&b.client, &b.url, &b.shown(), &items).await;
        for ((i, _), d) in fresh.into_iter().zip(deleted) {
            if let Err(e) = d {
                out[i] = Err(format!(
                    "copied, but the delete failed ({e}): it stays in the dead-letter queue, and a re-run on this machine deletes it without sending it again"
                ));
            }
        }
        self.holds.take(ids);
        self.log().gone(ids);
        out
    }

    /// Messages received again: an interrupted earlier run's sends (journal), messages this
    /// run deleted whose delete did not take effect, and (FIFO) the kept head of a group.
    async fn handle_returns(&mut self, sent_before: Vec<String>, back: Vec<String>) -> Result<()> {
        if !sent_before.is_empty() {
            let out = self.delete(&sent_before).await;
            let done: Vec<String> = sent_before
                .into_iter()
                .zip(&out)
                .filter(|(_, o)| o.is_ok())
                .map(|(id, _)| id)
                .collect();
            tracing::warn!(
                count = done.len(),
                "deleted messages that an interrupted earlier run had already sent"
            );
            self.journal.deleted(&done)?;
            for id in done {
                self.seen.insert(id, Fate::Removed);
            }
        }
        if !back.is_empty() {
            // The server answered Successful to their delete, and here they are again.
            let out = self.delete(&back).await;
            let failed = out.iter().filter(|o| o.is_err()).count() as u64;
            tracing::warn!(
                count = back.len(),
                failed,
                "messages this run had deleted came back (the delete did not take effect): deleted again"
            );
            self.undeleted += failed;
        }
        Ok(())
    }

    /// The in-flight limit is reached (or SQS said OverLimit): take no more.
    fn stop_at_limit(&mut self) {
        let held = self.holds.len();
        tracing::warn!(
            held,
            "stopping: this run holds as many messages as SQS lets a queue have in flight"
        );
        self.stopped_at.get_or_insert(held);
    }
}

impl Drop for SqsMoveSession<'_> {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}

impl SqsMoveSession<'_> {
    /// One ReceiveMessage's answer, as soon as it comes (not once the round's other receives
    /// have answered too): in the holds file (synced) and held, so that a run killed from here
    /// on leaves them to the next run to give back.
    fn hold(&self, got: &[aws_sdk_sqs::types::Message], asked_at: Instant) -> Result<()> {
        let items = receipts(got);
        if items.is_empty() {
            return Ok(());
        }
        let vis = self.b.visibility();
        self.log()
            .held(&items, Utc::now() + chrono::Duration::seconds(vis as i64))?;
        let expires = asked_at + Duration::from_secs(vis as u64);
        for (id, receipt) in &items {
            // A message received again (its hold ran out) is held with its newest receipt:
            // only that one deletes it.
            self.holds.put(id, receipt, expires);
        }
        Ok(())
    }

    /// A round's messages (held already): the new ones to claim (in order); the rest are dealt
    /// with here.
    async fn sort(
        &mut self,
        got: Vec<aws_sdk_sqs::types::Message>,
    ) -> Result<Vec<(String, Message)>> {
        let items = receipts(&got);
        let mut out = Vec::new();
        // Claimed in this round: one that comes twice (its hold ran out between two of the
        // round's receives) is claimed once, under its newest receipt, and not given back.
        let mut claimed = HashSet::new();
        let (mut sent_before, mut back, mut again) = (Vec::new(), Vec::new(), Vec::new());
        let (mut groups_new, mut groups_again) = (BTreeSet::new(), BTreeSet::new());
        for (m, (id, _)) in got.iter().zip(items) {
            let group = system_attr(m, MessageSystemAttributeName::MessageGroupId);
            if self.journal.was_sent(&id) {
                // Sent by an interrupted earlier run (or by this one, its delete failed):
                // delete it now, do not send it again.
                sent_before.push(id);
                continue;
            }
            if claimed.contains(&id) {
                continue;
            }
            match self.seen.get(&id) {
                None => {
                    self.seen.insert(id.clone(), Fate::Left);
                    claimed.insert(id.clone());
                    groups_new.extend(group.map(str::to_string));
                    out.push((id, self.b.to_message(m)));
                }
                Some(Fate::Left) => {
                    groups_again.extend(group.map(str::to_string));
                    again.push(id);
                }
                Some(Fate::Removed) => back.push(id),
            }
        }
        if self.b.fifo {
            // Seen before and left: holding it would lock its group, so give it back. A
            // group that comes back starting with such a message, and nothing new, is
            // blocked: SQS hands out nothing of it behind that message.
            self.give_back(&again).await;
            self.blocked.extend(groups_again);
            for g in &groups_new {
                self.blocked.remove(g);
            }
        }
        self.handle_returns(sent_before, back).await?;
        Ok(out)
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
        if self.stopped_at.is_some() {
            return Ok(None);
        }
        let b = self.b;
        let want = n.clamp(1, 10 * b.opts.parallel.max(1));
        let limit = b.opts.hold_limit.unwrap_or(HOLD_LIMIT);
        let vis = b.visibility();
        loop {
            if self.holds.len() + want > limit {
                self.stop_at_limit();
                return Ok(None);
            }
            // Once a round comes back short or empty the queue is nearly drained: one receive
            // a round from then on, so the stop rule costs 2-3 requests, not 2-3 x --parallel.
            let calls = if self.streak > 0 || self.short {
                1
            } else {
                want.div_ceil(10)
            };
            let asked_at = Instant::now();
            let mut recv = FuturesUnordered::new();
            let mut asked = 0usize;
            for c in 0..calls {
                let ask = (want - c * 10).min(10);
                asked += ask;
                recv.push(receive(b, ask as i32, vis, b.opts.wait_seconds));
            }
            let mut got = Vec::new();
            let mut over = false;
            while let Some(r) = recv.next().await {
                match r? {
                    Some(msgs) => {
                        self.hold(&msgs, asked_at)?;
                        got.extend(msgs)
                    }
                    None => over = true,
                }
            }
            drop(recv);
            self.short = got.len() < asked;
            let out = self.sort(got).await?;
            if over {
                self.stop_at_limit();
            }
            if out.is_empty() {
                if over {
                    return Ok(None);
                }
                self.streak += 1;
                if self.streak >= EMPTY_STREAK || (self.streak >= 2 && b.visible_now().await? == 0)
                {
                    self.exhausted = true;
                    return Ok(None);
                }
                continue;
            }
            self.streak = 0;
            let (ids, msgs): (Vec<String>, Vec<Message>) = out.into_iter().unzip();
            self.batch = ids;
            return Ok(Some(Claim::new(msgs)));
        }
    }

    async fn settle(
        &mut self,
        _ticket: Ticket,
        accepted: &[usize],
        _failed: &[usize],
    ) -> Result<()> {
        self.unremoved.clear();
        let acc: HashSet<usize> = accepted.iter().copied().collect();
        let (sent, kept): (Vec<(usize, String)>, Vec<(usize, String)>) =
            std::mem::take(&mut self.batch)
                .into_iter()
                .enumerate()
                .partition(|(i, _)| acc.contains(i));
        let sent_ids: Vec<String> = sent.iter().map(|(_, id)| id.clone()).collect();
        // Journal first: a crash between here and the delete makes the next run delete these
        // instead of sending them again.
        self.journal.sent(&sent_ids)?;
        if self.b.fifo {
            // Holding a FIFO message locks its whole group: give skipped and refused ones back
            // at once (they are in `seen`, so this run does not take them again).
            let kept: Vec<String> = kept.into_iter().map(|(_, id)| id).collect();
            self.give_back(&kept).await;
        }
        let outcomes = self.delete(&sent_ids).await;
        let mut deleted = Vec::new();
        for ((i, id), o) in sent.into_iter().zip(outcomes) {
            match o {
                Ok(()) => {
                    self.seen.insert(id.clone(), Fate::Removed);
                    deleted.push(id);
                }
                Err(reason) => {
                    tracing::warn!(message_id = %id, "{reason}");
                    self.unremoved.push((i, reason));
                }
            }
        }
        self.journal.deleted(&deleted)?;
        Ok(())
    }

    async fn finish(&mut self) -> Result<()> {
        self.heartbeat.abort();
        self.count_others().await;
        let held = self.holds.drain();
        let b = self.b;
        let out =
            calls::change_visibility(&b.client, &b.url, &b.shown(), &held, 0, b.opts.parallel)
                .await;
        // Giving back what the run held is a courtesy: a message not given back reappears by
        // itself when its visibility timeout runs out, and the holds file makes the next run
        // give it back at once. Nothing is lost, so a failure here does not fail the run.
        let mut kept = Vec::new();
        let mut given = Vec::new();
        for ((id, _), o) in held.into_iter().zip(out) {
            match o {
                Err(e) if !e.not_held() => kept.push((id, e)),
                _ => given.push(id),
            }
        }
        if let Some((_, e)) = kept.first() {
            tracing::warn!(
                "could not make {} visible again ({e}); they reappear by themselves within {}s, or at once on the next run",
                crate::human::count(kept.len() as u64, "held message", "held messages"),
                b.visibility()
            );
            self.log().gone(&given);
        } else {
            self.log().remove();
        }
        self.account().await;
        self.journal.compact()?;
        Ok(())
    }

    fn unremoved(&mut self) -> Vec<(usize, String)> {
        std::mem::take(&mut self.unremoved)
    }

    fn remaining(&self) -> Option<u64> {
        self.remaining
    }

    fn unaccounted(&self) -> Vec<Unaccounted> {
        self.unaccounted.clone()
    }
}

/// (MessageId, receipt handle) of each message received.
fn receipts(got: &[aws_sdk_sqs::types::Message]) -> Vec<Item> {
    got.iter()
        .map(|m| {
            (
                m.message_id().unwrap_or_default().to_string(),
                m.receipt_handle().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[cfg(test)]
#[path = "mover_tests.rs"]
mod tests;
