//! Redrive: claim a batch, offer the matching messages, settle with exactly the accepted
//! ones. Up to the session's pipeline depth of batches wait for their outcomes while the next
//! are read; a local move (one backend, one transaction) copies and settles in one step.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use chrono::Utc;

use super::copy::{destination_of, keep_first, record};
use super::targets::Tally;
use super::{Mode, MoveSummary, Run};
use crate::address::Address;
use crate::backend::{Claim, LocalNext, MoveOptions, MoveSession, SendOutcome, Ticket};
use crate::error::{Error, Result};
use crate::filter::Verdict;
use crate::message::Message;

/// Redrive: claim a batch, offer the matching messages, settle with what was accepted.
pub(super) async fn move_loop(run: &mut Run<'_>, backlog: Option<u64>) -> Result<()> {
    let (ctx, req, source) = (run.ctx, run.req, run.source);
    // A local move copies inside the backend (PostgreSQL: INSERT … SELECT), headers and all;
    // with header rules the rows go the ordinary way (read, send, delete). Kafka's local move
    // (--exactly-once) applies the rules itself.
    let local = run
        .fixed
        .clone()
        .filter(|f| source.can_move_locally(f))
        .filter(|_| req.local_allowed());
    let need_content = !req.filter.is_empty() || local.is_none() || req.max_redrives.is_some();
    let mut session = source
        .begin_move(MoveOptions {
            need_content,
            count_only: req.filter.is_empty() && local.is_some() && req.max_redrives.is_some(),
            target_columns: run.targets.options.columns.clone(),
            headers: req.headers.clone(),
            batch_size: req.batch_size,
            in_place: local.as_ref() == Some(&req.source.address),
            max: req.max,
            count_redrive: req.mode != Mode::Purge,
        })
        .await?;
    if ctx.printer.progress_enabled() {
        // The bar counts the messages looked at; `--max` caps it only without filters.
        let total = match session.remaining() {
            Some(n) => Some(n),
            None if req.filter.is_empty() => backlog,
            None => None,
        };
        if let Some(t) = total {
            let t = match req.max {
                Some(m) if req.filter.is_empty() => m.min(t),
                _ => t,
            };
            ctx.printer.set_progress_length(&run.bar, t);
        }
    }
    let result = move_batches(run, local.as_ref(), session.as_mut()).await;
    // Release what the run still holds, whatever happened (SQS: hidden messages).
    let finished = session.finish().await;
    run.s.committed_past = session.committed_past();
    run.s.unaccounted.extend(session.unaccounted());
    result.and(finished)
}

/// A batch whose copies are on their way. Batches land (are settled) in the order they were
/// claimed, once every outcome of theirs is known.
struct Flight {
    /// What settles the batch once its outcomes are in.
    ticket: Ticket,
    /// The stable id of each message of the batch (the messages themselves are dropped once
    /// their copies are handed over: the target holds what it still needs).
    ids: Vec<String>,
    /// Per destination: its address as shown, the indices sent there, their outcomes.
    sends: Vec<(String, Vec<usize>, Outcomes)>,
    /// Offered and refused before anything was sent (no destination), or claimed past
    /// `--max` and not looked at: they stay in the source.
    failed: Vec<usize>,
    read: Duration,
    started: Instant,
}

enum Outcomes {
    Coming(crate::backend::PendingSend),
    Known(Result<Vec<SendOutcome>>),
}

impl Flight {
    /// Whether every outcome of the batch is known, without waiting for any.
    fn ready(&mut self) -> bool {
        use futures::FutureExt;
        self.sends.iter_mut().all(|(_, _, o)| {
            if let Outcomes::Coming(p) = o
                && let Some(r) = p.as_mut().now_or_never()
            {
                *o = Outcomes::Known(r);
            }
            matches!(o, Outcomes::Known(_))
        })
    }
}

async fn move_batches(
    run: &mut Run<'_>,
    local: Option<&Address>,
    session: &mut (dyn MoveSession + '_),
) -> Result<()> {
    let Run {
        ctx,
        req,
        source,
        fixed,
        targets,
        pacer,
        s,
        tally,
        bar,
    } = run;
    let (ctx, req, source, fixed) = (*ctx, *req, *source, fixed.as_ref());
    let now = Utc::now();
    // A local move copies and settles in one step; otherwise up to `depth` batches wait for
    // their outcomes while the next ones are read and sent.
    let depth = if local.is_some() {
        1
    } else {
        session.pipeline_depth().max(1)
    };
    let mut flights: std::collections::VecDeque<Flight> = std::collections::VecDeque::new();
    // Whether to ask the session to claim and move each batch in one step (until it says it
    // cannot).
    let mut one_step = true;
    let result = async {
        loop {
            if ctx.interrupt.is_set() {
                return Err(Error::Interrupted);
            }
            let room = req.max.map_or(u64::MAX, |m| m.saturating_sub(s.matched));
            if room == 0 {
                break;
            }
            // A filtered run claims whole batches: how many of them match is known only once
            // they are read (a batch of `room` would find one message of a million in a million
            // round trips). What is claimed past `--max` is left as it is (below).
            let n = if req.filter.is_empty() || local.is_some() {
                (req.batch_size as u64).min(room) as usize
            } else {
                req.batch_size
            };
            if let Some(dest) = local
                && req.one_step_allowed()
                && one_step
            {
                let b = match session.move_next_locally(dest, n).await? {
                    LocalNext::Moved(b) => b,
                    LocalNext::Exhausted => break,
                    LocalNext::ClaimFirst => {
                        // This session claims first: from now on, batch by batch below.
                        one_step = false;
                        continue;
                    }
                };
                let key = dest.to_string();
                s.examined += b.examined;
                s.matched += b.examined;
                s.moved += b.moved;
                if b.moved > 0 {
                    *tally.dest.entry(key.clone()).or_default() += b.moved;
                    tally.moved_unlisted(b.moved);
                }
                for (id, o) in &b.others {
                    record(s, tally, &key, id, o);
                }
                bar.inc(b.examined);
                pacer.wait(s.moved + s.failed).await;
                continue;
            }
            // Settle what has landed (so that a slow run commits as it goes), then wait for
            // the oldest batch while `depth` are on their way.
            while flights.len() >= depth || flights.front_mut().is_some_and(Flight::ready) {
                let f = flights.pop_front().expect("non-empty");
                land(f, session, s, tally, bar).await?;
            }
            let read_at = Instant::now();
            let Some(Claim {
                messages: mut batch,
                ticket,
            }) = session.next_batch(n).await?
            else {
                break;
            };
            let read = read_at.elapsed();
            let mut selected = Vec::new();
            // What the filters could not decide stays, counted as failed (Kafka: never
            // committed past).
            let mut refused = Vec::new();
            // Claimed after `--max` was reached: not looked at, left where they are (settled
            // as not moved, and not counted: Kafka commits nothing at or past them).
            let mut unread = Vec::new();
            for (i, m) in batch.iter().enumerate() {
                if selected.len() as u64 >= room {
                    unread.push(i);
                    continue;
                }
                match req.filter.verdict(m, now, &req.classifier)? {
                    Verdict::Selected => selected.push(i),
                    Verdict::Failed(reason) => {
                        s.failed += 1;
                        tally.fail(&reason, &m.id);
                        refused.push(i);
                    }
                    Verdict::Skipped => s.skipped += 1,
                }
            }
            s.examined += (batch.len() - unread.len()) as u64;
            s.matched += selected.len() as u64;
            // The loop guard: a message redriven --max-redrives times already stays (or is
            // parked); every copy counts one more redrive.
            let mut parked = Vec::new();
            if req.max_redrives.is_some() {
                selected.retain(|&i| {
                    if !req.over_limit(&batch[i]) {
                        return true;
                    }
                    if req.park.is_some() {
                        parked.push(i);
                    } else {
                        s.held += 1;
                    }
                    false
                });
            }
            // --transform: each selected copy is its record mapped; a message the transform
            // refuses stays (failed, with the reason).
            if let Some(t) = &req.transform {
                let id_rule = req.source.cfg.id.as_ref();
                selected.retain(|&i| match t.apply(&batch[i], id_rule) {
                    Ok(copy) => {
                        batch[i] = copy;
                        true
                    }
                    Err(reason) => {
                        s.failed += 1;
                        tally.fail(&reason, &batch[i].id);
                        refused.push(i);
                        false
                    }
                });
            }
            if local.is_none() && req.mode != Mode::Purge {
                for &i in selected.iter().chain(&parked) {
                    batch[i].count_redrive();
                }
            }

            if req.mode == Mode::Purge && fixed.is_none() {
                // A purge without an archive: what the filters selected leaves the source
                // now, the rest stays (no batch is ever in flight in this mode).
                let kept: Vec<usize> = refused.iter().chain(&unread).copied().collect();
                session.settle(ticket, &selected, &kept).await?;
                let unremoved: HashMap<usize, String> = session.unremoved().into_iter().collect();
                for &i in &selected {
                    match unremoved.get(&i) {
                        Some(reason) => {
                            s.failed += 1;
                            tally.fail(reason, &batch[i].id);
                        }
                        None => {
                            s.moved += 1;
                            tally.moved(&batch[i].id);
                        }
                    }
                }
                bar.inc(batch.len() as u64);
                session.recycle(batch);
                pacer.wait(s.matched).await;
                continue;
            }

            if let Some(dest) = local {
                let outcomes = session.move_locally(ticket, dest, &selected).await?;
                let key = dest.to_string();
                for (&i, o) in selected.iter().zip(&outcomes) {
                    record(s, tally, &key, &batch[i].id, o);
                }
                bar.inc(batch.len() as u64);
                pacer.wait(s.moved + s.failed).await;
                continue;
            }
            refused.extend(unread);
            let mut f = Flight {
                ticket,
                ids: Vec::new(),
                sends: Vec::new(),
                failed: refused,
                read,
                started: read_at,
            };
            // A session that is no longer the only mover (Kafka: it lost the redrive lease)
            // sends nothing more; the batch lands unsent and the run stops.
            if let Err(e) = session.holds() {
                f.ids = batch.iter().map(|m| m.id.clone()).collect();
                session.recycle(batch);
                flights.push_back(f);
                return Err(e);
            }
            let mut groups: BTreeMap<String, (Address, Vec<usize>)> = BTreeMap::new();
            if let Some((park, _)) = &req.park
                && !parked.is_empty()
            {
                s.parked += parked.len() as u64;
                groups.insert(
                    park.to_string(),
                    (park.clone(), std::mem::take(&mut parked)),
                );
            }
            if let Some(d) = fixed {
                // One destination for all: no per-message lookup.
                groups
                    .entry(d.to_string())
                    .or_insert_with(|| (d.clone(), Vec::new()))
                    .1
                    .extend(selected);
            } else {
                for i in selected {
                    match destination_of(source, fixed, &batch[i]).await? {
                        Some(a) => groups
                            .entry(a.to_string())
                            .or_insert_with(|| (a, Vec::new()))
                            .1
                            .push(i),
                        None => {
                            s.failed += 1;
                            f.failed.push(i);
                            tally.fail(
                                "no destination known for this message: pass --to",
                                &batch[i].id,
                            );
                        }
                    }
                }
            }
            let mut groups = groups.into_iter();
            while let Some((key, (addr, idx))) = groups.next() {
                if idx.is_empty() {
                    continue;
                }
                let parking = req.park.as_ref().is_some_and(|(p, _)| *p == addr);
                if fixed.is_none()
                    && !parking
                    && let Err(reason) = targets.discovered(&addr).await?
                {
                    for i in idx {
                        s.failed += 1;
                        f.failed.push(i);
                        tally.fail(&reason, &batch[i].id);
                    }
                    continue;
                }
                // The whole batch goes to one place (the usual case): send it as it is.
                let copied: Vec<Message>;
                let msgs: &[Message] = if idx.len() == batch.len() && req.headers.is_empty() {
                    &batch
                } else {
                    copied = idx
                        .iter()
                        .map(|&i| {
                            let mut m = batch[i].clone();
                            req.headers.apply(&mut m);
                            m
                        })
                        .collect();
                    &copied
                };
                let started = async {
                    let t = targets.get(&addr).await?;
                    t.send_start(msgs).await
                }
                .await;
                match started {
                    Ok(pending) => f.sends.push((key, idx, Outcomes::Coming(pending))),
                    Err(e) => {
                        // This destination failed as a whole: nothing more is sent. Its
                        // messages and the batch's unsent rest stay in the source (not counted
                        // as failed: the run stops with this error, and the summary says so),
                        // once what is already on its way has landed.
                        f.failed.extend(idx);
                        f.failed.extend(groups.flat_map(|(_, (_, idx))| idx));
                        f.ids = batch.iter().map(|m| m.id.clone()).collect();
                        session.recycle(batch);
                        flights.push_back(f);
                        return Err(e);
                    }
                }
            }
            f.ids = batch.iter().map(|m| m.id.clone()).collect();
            session.recycle(batch);
            flights.push_back(f);
            while flights.front_mut().is_some_and(Flight::ready) {
                let f = flights.pop_front().expect("non-empty");
                land(f, session, s, tally, bar).await?;
            }
            pacer.wait(s.matched).await;
        }
        Ok(())
    }
    .await;
    // Whatever happened, every batch on its way lands: what was delivered is settled (Kafka:
    // committed), what was not stays in the source.
    let mut result = result;
    while let Some(f) = flights.pop_front() {
        keep_first(&mut result, land(f, session, s, tally, bar).await);
    }
    result
}

/// Wait for every outcome of a batch, count them, and settle it: the accepted messages leave
/// the source. A destination that failed as a whole fails the run after the batch is
/// settled; its messages stay in the source.
async fn land(
    f: Flight,
    session: &mut (dyn MoveSession + '_),
    s: &mut MoveSummary,
    tally: &mut Tally,
    bar: &indicatif::ProgressBar,
) -> Result<()> {
    let waited = Instant::now();
    let mut accepted = Vec::new();
    let mut failed = f.failed;
    let mut error = None;
    // Counted once the batch is settled: an accepted copy whose original could not be
    // removed is a failure, not a move (and the audit does not list it).
    let mut outcomes_of = Vec::new();
    for (key, idx, outcomes) in f.sends {
        let outcomes = match outcomes {
            Outcomes::Known(r) => r,
            Outcomes::Coming(pending) => pending.await,
        };
        match outcomes {
            Ok(outcomes) => {
                for (&i, o) in idx.iter().zip(outcomes) {
                    if o == SendOutcome::Sent {
                        accepted.push(i);
                    } else {
                        failed.push(i);
                    }
                    outcomes_of.push((key.clone(), i, o));
                }
            }
            Err(e) => {
                // Not counted as failed messages: the run stops with this error, and the
                // summary says so.
                failed.extend(idx);
                error.get_or_insert(e);
            }
        }
    }
    let waited = waited.elapsed();
    let settled = session.settle(f.ticket, &accepted, &failed).await;
    let unremoved: HashMap<usize, String> = match settled {
        Ok(()) => session.unremoved().into_iter().collect(),
        Err(_) => HashMap::new(),
    };
    for (key, i, o) in outcomes_of {
        match unremoved.get(&i) {
            Some(reason) if o == SendOutcome::Sent => {
                s.failed += 1;
                tally.fail(reason, &f.ids[i]);
            }
            _ => record(s, tally, &key, &f.ids[i], &o),
        }
    }
    settled?;
    bar.inc(f.ids.len() as u64);
    tracing::debug!(
        records = f.ids.len(),
        read_ms = f.read.as_millis() as u64,
        wait_ms = waited.as_millis() as u64,
        total_ms = f.started.elapsed().as_millis() as u64,
        "batch"
    );
    error.map_or(Ok(()), Err)
}
