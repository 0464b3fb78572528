//! The one move engine: claim a batch, decide each message (policy.rs), offer the copies,
//! settle with exactly the accepted ones. Every run goes through it: a redrive and a purge
//! with the source's own move session; a replay and every dry run with a session that only
//! reads ([`ReadSession`]), and a dry run with a sink that accepts nothing, so that a dry run
//! predicts its run by construction. Up to the session's pipeline depth of batches wait for
//! their outcomes while the next are read; a local move (one backend, one transaction) copies
//! and settles in one step.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::policy::{Decision, decide, transformed};
use super::targets::{keep_first, record};
use super::{Mode, Run};
use crate::address::Address;
use crate::backend::read_session::ReadSession;
use crate::backend::{
    Claim, LocalNext, MoveOptions, MoveSession, ScanOptions, SendOutcome, Ticket,
};
use crate::error::{Error, Result};
use crate::message::Message;

/// How many transformed messages a dry run shows as diffs.
const PREVIEWS: usize = 3;

/// How many batches of copies a replay or dry run may have on their way at once (nothing
/// waits for them but the summary).
const COPIES_IN_FLIGHT: usize = 4;

/// Work the run: a redrive or purge claims from the source's move session; a replay or a dry
/// run reads (see the module's comment).
pub(super) async fn move_loop(run: &mut Run<'_>, backlog: Option<u64>) -> Result<()> {
    if run.req.dry_run || !run.req.mode.removes() {
        return read_loop(run).await;
    }
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

/// A replay or a dry run: the engine over a session that reads and settles nothing. A dry
/// run of a redrive or purge reads what the run would (Kafka: from the redrive group's
/// offsets) and predicts what its commits would pass over.
async fn read_loop(run: &mut Run<'_>) -> Result<()> {
    let (req, source) = (run.req, run.source);
    let result = async {
        let mut session = ReadSession::begin(
            source,
            ScanOptions {
                limit: None,
                page_size: req.batch_size,
                as_redrive: req.mode.removes(),
            },
            req.dry_run && req.mode.removes(),
            COPIES_IN_FLIGHT,
        )
        .await?;
        let result = move_batches(run, None, &mut session).await;
        run.s.committed_past = session.committed_past();
        result
    }
    .await;
    // Reads that hold messages (SQS) give them back, after an error too.
    let closed = source.close().await;
    run.s.unaccounted.extend(source.unaccounted());
    result.and(closed)
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

/// What the policy made of one claimed batch (indices into it).
#[derive(Default)]
struct Sorted {
    /// Taken: copied to their destinations, or removed by a purge without an archive.
    taken: Vec<usize>,
    /// Over the loop guard: copied to `--park`.
    parked: Vec<usize>,
    /// Stay in the source, failed (the filters or the transform could not take them).
    refused: Vec<usize>,
    /// Claimed after `--max` was reached: not looked at, left where they are (settled as not
    /// moved, and not counted: Kafka commits nothing at or past them).
    unread: Vec<usize>,
}

/// The loop: claim, sort, then move each batch the way the run moves (a purge without an
/// archive removes, a local move moves inside the backend, otherwise copies go out), until
/// the source is exhausted, `--max` is reached or the run is stopped. Whatever happened,
/// every batch on its way lands.
async fn move_batches(
    run: &mut Run<'_>,
    local: Option<&Address>,
    session: &mut (dyn MoveSession + '_),
) -> Result<()> {
    let now = Utc::now();
    // A local move copies and settles in one step; otherwise up to `depth` batches wait for
    // their outcomes while the next ones are read and sent.
    let depth = if local.is_some() {
        1
    } else {
        session.pipeline_depth().max(1)
    };
    let mut flights: VecDeque<Flight> = VecDeque::new();
    // Whether to ask the session to claim and move each batch in one step (until it says it
    // cannot).
    let mut one_step = true;
    let result = async {
        loop {
            if run.ctx.interrupt.is_set() {
                return Err(Error::Interrupted);
            }
            let (req, s) = (run.req, &run.s);
            let room = req.max.map_or(u64::MAX, |m| m.saturating_sub(s.matched));
            if room == 0 {
                break;
            }
            // A filtered run claims whole batches: how many of them match is known only once
            // they are read (a batch of `room` would find one message of a million in a million
            // round trips). What is claimed past `--max` is left as it is (see `Sorted`).
            let n = if req.filter.is_empty() || local.is_some() {
                (req.batch_size as u64).min(room) as usize
            } else {
                req.batch_size
            };
            if let Some(dest) = local
                && req.one_step_allowed()
                && one_step
            {
                match session.move_next_locally(dest, n).await? {
                    LocalNext::Moved(b) => counted_local_step(run, dest, b).await,
                    LocalNext::Exhausted => break,
                    // This session claims first: from now on, batch by batch below.
                    LocalNext::ClaimFirst => one_step = false,
                }
                continue;
            }
            // Settle what has landed (so that a slow run commits as it goes), then wait for
            // the oldest batch while `depth` are on their way.
            while flights.len() >= depth || flights.front_mut().is_some_and(Flight::ready) {
                let f = flights.pop_front().expect("non-empty");
                land(f, session, run).await?;
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
            let sorted = sort(run, &mut batch, room, now, local.is_some())?;
            if run.req.mode == Mode::Purge && run.fixed.is_none() {
                purge_batch(run, session, ticket, batch, sorted).await?;
                continue;
            }
            if let Some(dest) = local {
                local_batch(run, session, ticket, dest, &batch, &sorted.taken).await?;
                continue;
            }
            let mut f = Flight {
                ticket,
                ids: batch.iter().map(|m| m.id.clone()).collect(),
                sends: Vec::new(),
                failed: sorted.refused,
                read,
                started: read_at,
            };
            f.failed.extend(sorted.unread);
            // A session that is no longer the only mover (Kafka: it lost the redrive lease)
            // sends nothing more; the batch lands unsent and the run stops.
            let sent = match session.holds() {
                Ok(()) => dispatch(run, &mut f, &batch, sorted.taken, sorted.parked).await,
                Err(e) => Err(e),
            };
            session.recycle(batch);
            flights.push_back(f);
            sent?;
            while flights.front_mut().is_some_and(Flight::ready) {
                let f = flights.pop_front().expect("non-empty");
                land(f, session, run).await?;
            }
            run.pacer.wait(run.s.matched).await;
        }
        Ok(())
    }
    .await;
    // Whatever happened, every batch on its way lands: what was delivered is settled (Kafka:
    // committed), what was not stays in the source.
    let mut result = result;
    while let Some(f) = flights.pop_front() {
        keep_first(&mut result, land(f, session, run).await);
    }
    result
}

/// Count a batch a local mover claimed and moved in one step, unseen.
async fn counted_local_step(run: &mut Run<'_>, dest: &Address, b: crate::backend::LocalBatch) {
    let Run { s, tally, bar, .. } = run;
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
    run.pacer.wait(run.s.moved + run.s.failed).await;
}

/// Apply the policy to each message of a claimed batch, up to `room` selected, and count:
/// examined, matched, skipped, failed, held. Then shape the copies: a taken message is
/// transformed (a dry run keeps the first few diffs), and every copy but a purge's counts one
/// more redrive.
fn sort(
    run: &mut Run<'_>,
    batch: &mut [Message],
    room: u64,
    now: DateTime<Utc>,
    local: bool,
) -> Result<Sorted> {
    let Run { req, s, tally, .. } = run;
    let req = *req;
    let mut sorted = Sorted::default();
    let mut matched = 0u64;
    for (i, m) in batch.iter().enumerate() {
        if matched >= room {
            sorted.unread.push(i);
            continue;
        }
        let d = decide(req, m, now)?;
        matched += u64::from(d.selected());
        match d {
            Decision::Skip => s.skipped += 1,
            Decision::Fail(reason) => {
                s.failed += 1;
                tally.fail(&reason, &m.id);
                sorted.refused.push(i);
            }
            Decision::Hold => s.held += 1,
            Decision::Park => sorted.parked.push(i),
            Decision::Take => sorted.taken.push(i),
        }
    }
    s.examined += (batch.len() - sorted.unread.len()) as u64;
    s.matched += matched;
    // --transform: each taken copy is its record mapped; a message the transform refuses
    // stays (failed, with the reason). A parked copy goes as it is.
    if req.transform.is_some() {
        let mut kept = Vec::with_capacity(sorted.taken.len());
        for i in std::mem::take(&mut sorted.taken) {
            match transformed(req, &batch[i]).expect("a transform") {
                Ok(copy) => {
                    if req.dry_run && s.transform_preview.len() < PREVIEWS {
                        s.transform_preview
                            .push(crate::query::diff(&batch[i], &copy));
                    }
                    batch[i] = copy;
                    kept.push(i);
                }
                Err(reason) => {
                    s.failed += 1;
                    tally.fail(&reason, &batch[i].id);
                    sorted.refused.push(i);
                }
            }
        }
        sorted.taken = kept;
    }
    if !local && req.mode != Mode::Purge {
        for &i in sorted.taken.iter().chain(&sorted.parked) {
            batch[i].count_redrive();
        }
    }
    Ok(sorted)
}

/// A purge without an archive: what the policy took leaves the source now, the rest stays (no
/// batch is ever in flight in this mode). A dry run's session removes nothing.
async fn purge_batch(
    run: &mut Run<'_>,
    session: &mut (dyn MoveSession + '_),
    ticket: Ticket,
    batch: Vec<Message>,
    sorted: Sorted,
) -> Result<()> {
    let Run { s, tally, bar, .. } = run;
    let kept: Vec<usize> = sorted
        .refused
        .iter()
        .chain(&sorted.unread)
        .copied()
        .collect();
    session.settle(ticket, &sorted.taken, &kept).await?;
    let unremoved: HashMap<usize, String> = session.unremoved().into_iter().collect();
    for &i in &sorted.taken {
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
    run.pacer.wait(run.s.matched).await;
    Ok(())
}

/// A local move: the backend copies the taken messages into `dest` and settles the batch in
/// one step.
async fn local_batch(
    run: &mut Run<'_>,
    session: &mut (dyn MoveSession + '_),
    ticket: Ticket,
    dest: &Address,
    batch: &[Message],
    taken: &[usize],
) -> Result<()> {
    let Run { s, tally, bar, .. } = run;
    let outcomes = session.move_locally(ticket, dest, taken).await?;
    let key = dest.to_string();
    for (&i, o) in taken.iter().zip(&outcomes) {
        record(s, tally, &key, &batch[i].id, o);
    }
    bar.inc(batch.len() as u64);
    run.pacer.wait(run.s.moved + run.s.failed).await;
    Ok(())
}

/// Group a batch's copies by destination (parked ones to `--park`) and hand each group to its
/// target, or in a dry run to a sink that accepts everything and sends nothing. A message
/// with no destination, or whose discovered destination cannot take it, stays (failed). A
/// destination that fails as a whole stops the run: its messages and the batch's unsent rest
/// stay in the source (not counted as failed: the summary says the run stopped), once what is
/// already on its way has landed.
async fn dispatch(
    run: &mut Run<'_>,
    f: &mut Flight,
    batch: &[Message],
    taken: Vec<usize>,
    parked: Vec<usize>,
) -> Result<()> {
    let Run {
        req,
        source,
        fixed,
        in_place,
        targets,
        s,
        tally,
        ..
    } = run;
    let (req, fixed) = (*req, fixed.as_ref());
    let mut groups: BTreeMap<String, (Address, Vec<usize>)> = BTreeMap::new();
    if let Some((park, _)) = &req.park
        && !parked.is_empty()
    {
        s.parked += parked.len() as u64;
        groups.insert(park.to_string(), (park.clone(), parked));
    }
    if let Some(d) = fixed {
        // One destination for all: no per-message lookup.
        groups
            .entry(d.to_string())
            .or_insert_with(|| (d.clone(), Vec::new()))
            .1
            .extend(taken);
    } else {
        for i in taken {
            match source.destination(&batch[i]).await? {
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
        let started = if req.dry_run {
            // The dry run's sink: each target is opened (a missing table or queue shows now; a
            // job system's in-place retry has no separate target), nothing is sent, and every
            // copy counts as one the run would offer.
            if *in_place && fixed == Some(&addr) {
                Ok(())
            } else {
                targets.get(&addr).await.map(|_| ())
            }
            .map(|()| Outcomes::Known(Ok(vec![SendOutcome::Sent; idx.len()])))
        } else {
            // The whole batch goes to one place (the usual case): send it as it is.
            let copied: Vec<Message>;
            let msgs: &[Message] = if idx.len() == batch.len() && req.headers.is_empty() {
                batch
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
            match targets.get(&addr).await {
                Ok(t) => t.send_start(msgs).await.map(Outcomes::Coming),
                Err(e) => Err(e),
            }
        };
        match started {
            Ok(outcomes) => f.sends.push((key, idx, outcomes)),
            Err(e) => {
                f.failed.extend(idx);
                f.failed.extend(groups.flat_map(|(_, (_, idx))| idx));
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Wait for every outcome of a batch, count them, and settle it: the accepted messages leave
/// the source. A destination that failed as a whole fails the run after the batch is
/// settled; its messages stay in the source.
async fn land(f: Flight, session: &mut (dyn MoveSession + '_), run: &mut Run<'_>) -> Result<()> {
    let Run { s, tally, bar, .. } = run;
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
