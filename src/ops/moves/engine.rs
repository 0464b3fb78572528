//! The one move engine: claim a batch, decide each message (policy.rs), offer the copies,
//! settle with exactly the accepted ones. Every run goes through it: a redrive and a purge
//! with the source's own move session; a replay and every dry run with a session that only
//! reads ([`ReadSession`]), and a dry run with a sink that accepts nothing, so that a dry run
//! predicts its run by construction. Up to the session's pipeline depth of batches wait for
//! their outcomes while the next are read; a local move (one backend, one transaction) copies
//! and settles in one step.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use chrono::{DateTime, Utc};

use super::flight::{Flight, land, take_off};
use super::policy::{Decision, decide, transformed};
use super::targets::{keep_first, record};
use super::{Mode, Run};
use crate::address::Address;
use crate::backend::read_session::ReadSession;
use crate::backend::{Claim, LocalNext, MoveOptions, MoveSession, ScanOptions, Ticket};
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
        .filter(|f| source.can_move_locally(f) && req.local_allowed(source, f));
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
            purge: req.mode == Mode::Purge,
        })
        .await?;
    reading_begun(run);
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
                purge: req.mode == Mode::Purge,
            },
            req.dry_run && req.mode.removes(),
            COPIES_IN_FLIGHT,
        )
        .await?;
        reading_begun(run);
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

/// Say what reading the source does to its messages, now that the read has begun (every
/// check that can refuse the run is behind it: a busy queue, a refused target, a refused
/// plan), unless the plan said it already (its `reading` or `reads` row). A purge's plan says
/// what becomes of each message.
fn reading_begun(run: &Run<'_>) {
    if run.req.mode != Mode::Purge && !run.ctx.printer.planned() {
        run.ctx.warn_reading(run.source);
    }
}

/// What the policy made of one claimed batch (indices into it).
#[derive(Default)]
pub(super) struct Sorted {
    /// Taken: copied to their destinations, or removed by a purge without an archive.
    pub(super) taken: Vec<usize>,
    /// Over the loop guard: copied to `--park`.
    pub(super) parked: Vec<usize>,
    /// Stay in the source, failed (the filters or the transform could not take them).
    pub(super) refused: Vec<usize>,
    /// Claimed after `--max` was reached: not looked at, left where they are (settled as not
    /// moved, and not counted: Kafka commits nothing at or past them).
    pub(super) unread: Vec<usize>,
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
                let next = match session.local() {
                    Some(l) => l.move_next_locally(dest, n).await?,
                    None => LocalNext::ClaimFirst,
                };
                match next {
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
            let sorted = sort(run, &mut batch, room, now, local.is_some())?;
            if run.req.mode == Mode::Purge && run.fixed.is_none() {
                purge_batch(run, session, ticket, batch, sorted).await?;
                continue;
            }
            if let Some(dest) = local {
                local_batch(run, session, ticket, dest, &batch, &sorted.taken).await?;
                continue;
            }
            let (f, sent) = take_off(run, session, batch, ticket, sorted, read_at).await;
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

/// Show on the bar what became of the messages it counts (it counts those examined): `900
/// moved, 2,100 failed`. A run whose copies the target refused read `3,000 of 3,000 (100%)`,
/// as if all had moved (operator report op7). A dry run moves nothing: it shows none.
pub(super) fn show_tally(
    bar: &indicatif::ProgressBar,
    s: &super::MoveSummary,
    req: &super::MoveRequest,
) {
    if req.dry_run {
        return;
    }
    let done = match req.mode {
        Mode::Redrive => "moved",
        Mode::Replay => "copied",
        Mode::Purge => "purged",
    };
    let mut t = format!("{} {done}", crate::output::thousands(s.moved));
    if s.failed > 0 {
        t.push_str(&format!(", {} failed", crate::output::thousands(s.failed)));
    }
    bar.set_prefix(t);
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
    show_tally(bar, s, run.req);
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
    let Run {
        req,
        s,
        tally,
        ids_found,
        ..
    } = run;
    let req = *req;
    let mut sorted = Sorted::default();
    let mut matched = 0u64;
    for (i, m) in batch.iter().enumerate() {
        if matched >= room {
            sorted.unread.push(i);
            continue;
        }
        if let Some(ids) = &req.filter.ids {
            for id in [&m.id, &m.native_id] {
                if ids.contains(id) {
                    ids_found.insert(id.clone());
                }
            }
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
    show_tally(bar, s, run.req);
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
    let edited = run.req.transform.is_some();
    let Some(local) = session.local() else {
        return Err(Error::Unsupported {
            backend: "this backend",
            operation: "local moves",
            reason: "its move session has none".into(),
        });
    };
    let outcomes = if edited {
        // `edit` in place: the edited copy is retried.
        local
            .move_locally_edited(ticket, dest, taken, batch)
            .await?
    } else {
        local.move_locally(ticket, dest, taken).await?
    };
    let Run { s, tally, bar, .. } = run;
    let key = dest.to_string();
    for (&i, o) in taken.iter().zip(&outcomes) {
        record(s, tally, &key, &batch[i].id, o);
    }
    bar.inc(batch.len() as u64);
    show_tally(bar, s, run.req);
    run.pacer.wait(run.s.moved + run.s.failed).await;
    Ok(())
}
