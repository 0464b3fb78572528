//! Replay, and every dry run: read without removing, offer copies (or only count them).

use std::collections::BTreeMap;

use chrono::Utc;
use futures::StreamExt;

use super::plan::retried_in_place;
use super::targets::{Tally, Targets};
use super::{Mode, MoveSummary, Run};
use crate::address::Address;
use crate::backend::{QueueBackend, ScanOptions, SendOutcome};
use crate::error::{Error, Result};
use crate::message::Message;

pub(super) async fn destination_of(
    source: &dyn QueueBackend,
    fixed: Option<&Address>,
    m: &Message,
) -> Result<Option<Address>> {
    match fixed {
        Some(a) => Ok(Some(a.clone())),
        None => source.destination(m).await,
    }
}

/// Copies on their way, batch by batch: per destination, its address as shown, the stable ids
/// sent there, and their outcomes to come.
type CopyFlight = Vec<(String, Vec<String>, crate::backend::PendingSend)>;

/// How many transformed messages a dry run shows as diffs.
const PREVIEWS: usize = 3;

/// How many batches of copies may be on their way at once (a replay removes nothing, so
/// nothing waits for them but the summary).
const COPIES_IN_FLIGHT: usize = 4;

/// Replay, and every dry run: read without removing, offer copies (or only count them).
pub(super) async fn copy_loop(run: &mut Run<'_>) -> Result<()> {
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
    let mut stream = source
        .scan(ScanOptions {
            limit: None,
            page_size: req.batch_size,
            // A redrive's dry run reads exactly what the redrive would (Kafka: from the
            // redrive group's offsets).
            as_redrive: req.mode.removes(),
        })
        .await?;
    let now = Utc::now();
    // A redrive's dry run predicts what the run's commits would pass over (Kafka).
    let mut passing = super::passing::Passing::new(
        req.dry_run && req.mode.removes() && source.settles_by_position(),
    );
    let fixed_key = fixed.map(ToString::to_string);
    // The batch being gathered, by destination.
    let mut batch: BTreeMap<String, (Address, Vec<Message>)> = BTreeMap::new();
    let mut batched = 0usize;
    let mut flights: std::collections::VecDeque<CopyFlight> = std::collections::VecDeque::new();
    let result = async {
        loop {
            if ctx.interrupt.is_set() {
                flights.push_back(send_copies(targets, &mut batch).await?);
                return Err(Error::Interrupted);
            }
            if req.max.is_some_and(|m| s.matched >= m) {
                break;
            }
            let Some(m) = stream.next().await else { break };
            let m = m?;
            s.examined += 1;
            bar.inc(1);
            match req.filter.verdict(&m, now, &req.classifier)? {
                crate::filter::Verdict::Selected => {}
                crate::filter::Verdict::Skipped => {
                    s.skipped += 1;
                    passing.skipped(&m);
                    continue;
                }
                crate::filter::Verdict::Failed(reason) => {
                    s.failed += 1;
                    passing.failed(&m);
                    tally.fail(&reason, &m.id);
                    continue;
                }
            }
            s.matched += 1;
            if req.mode == Mode::Purge && fixed.is_none() {
                // A dry run of a purge without an archive: counted, nothing to send.
                s.moved += 1;
                passing.moved(&m);
                continue;
            }
            // The loop guard: over --max-redrives, the message stays, or goes to --park.
            let over = req.over_limit(&m);
            if over && req.park.is_none() {
                s.held += 1;
                passing.skipped(&m);
                continue;
            }
            let found;
            let park_key;
            let (key, addr) = match (fixed, &fixed_key) {
                _ if over => {
                    let (a, _) = req.park.as_ref().expect("parking");
                    s.parked += 1;
                    park_key = a.to_string();
                    (park_key.as_str(), a)
                }
                (Some(a), Some(k)) => (k.as_str(), a),
                _ => match source.destination(&m).await? {
                    Some(a) => {
                        found = (a.to_string(), a);
                        (found.0.as_str(), &found.1)
                    }
                    None => {
                        s.failed += 1;
                        passing.failed(&m);
                        tally.fail("no destination known for this message: pass --to", &m.id);
                        continue;
                    }
                },
            };
            if fixed.is_none()
                && !over
                && let Err(reason) = targets.discovered(addr).await?
            {
                s.failed += 1;
                passing.failed(&m);
                tally.fail(&reason, &m.id);
                continue;
            }
            if req.dry_run
                && let Some(t) = &req.transform
            {
                // The dry run of a transform: what would be sent instead, the first few as diffs.
                match t.apply(&m, req.source.cfg.id.as_ref()) {
                    Ok(copy) if s.transform_preview.len() < PREVIEWS => {
                        s.transform_preview.push(crate::query::diff(&m, &copy));
                    }
                    Ok(_) => {}
                    Err(reason) => {
                        s.failed += 1;
                        passing.failed(&m);
                        tally.fail(&reason, &m.id);
                        continue;
                    }
                }
            }
            if req.dry_run {
                // A dry run still opens each target: a missing table or queue shows now. (A
                // job system's in-place retry has no separate target.)
                if !retried_in_place(req, addr) {
                    targets.get(addr).await?;
                }
                s.moved += 1;
                passing.moved(&m);
                match tally.dest.get_mut(key) {
                    Some(n) => *n += 1,
                    None => {
                        tally.dest.insert(key.to_string(), 1);
                    }
                }
                continue;
            }
            let mut m = match &req.transform {
                Some(t) => match t.apply(&m, req.source.cfg.id.as_ref()) {
                    Ok(copy) => copy,
                    Err(reason) => {
                        s.failed += 1;
                        tally.fail(&reason, &m.id);
                        continue;
                    }
                },
                None => m,
            };
            req.headers.apply(&mut m);
            m.count_redrive();
            match batch.get_mut(key) {
                Some((_, msgs)) => msgs.push(m),
                None => {
                    batch.insert(key.to_string(), (addr.clone(), vec![m]));
                }
            }
            batched += 1;
            if batched >= req.batch_size {
                batched = 0;
                flights.push_back(send_copies(targets, &mut batch).await?);
                while flights.len() > COPIES_IN_FLIGHT {
                    let f = flights.pop_front().expect("non-empty");
                    land_copies(f, s, tally).await?;
                }
                pacer.wait(s.matched).await;
            }
        }
        flights.push_back(send_copies(targets, &mut batch).await?);
        Ok(())
    }
    .await;
    s.committed_past = passing.passed;
    // Whatever happened, the copies already on their way are counted.
    let mut result = result;
    while let Some(f) = flights.pop_front() {
        keep_first(&mut result, land_copies(f, s, tally).await);
    }
    result
}

/// The first error of a run is the one it reports; a later one (batches landing after it) is
/// only logged.
pub(super) fn keep_first(result: &mut Result<()>, later: Result<()>) {
    if let Err(e) = later {
        if result.is_ok() {
            *result = Err(e);
        } else {
            tracing::debug!(error = %e, "a later batch failed too");
        }
    }
}

/// Hand the gathered batch to its targets, destination by destination.
async fn send_copies(
    targets: &mut Targets,
    batch: &mut BTreeMap<String, (Address, Vec<Message>)>,
) -> Result<CopyFlight> {
    let mut flight = Vec::with_capacity(batch.len());
    for (key, (addr, msgs)) in std::mem::take(batch) {
        let t = targets.get(&addr).await?;
        let pending = t.send_start(&msgs).await?;
        flight.push((key, msgs.into_iter().map(|m| m.id).collect(), pending));
    }
    Ok(flight)
}

/// Wait for a batch's outcomes and count them.
async fn land_copies(flight: CopyFlight, s: &mut MoveSummary, tally: &mut Tally) -> Result<()> {
    for (key, ids, pending) in flight {
        let outcomes = pending.await?;
        for (id, o) in ids.iter().zip(&outcomes) {
            record(s, tally, &key, id, o);
        }
    }
    Ok(())
}

pub(super) fn record(
    s: &mut MoveSummary,
    tally: &mut Tally,
    dest: &str,
    id: &str,
    o: &SendOutcome,
) {
    match o {
        SendOutcome::Sent => {
            s.moved += 1;
            tally.moved(id);
            match tally.dest.get_mut(dest) {
                Some(n) => *n += 1,
                None => {
                    tally.dest.insert(dest.to_string(), 1);
                }
            }
        }
        SendOutcome::Rejected { reason } | SendOutcome::Conflict { reason } => {
            s.failed += 1;
            tally.fail(reason, id);
        }
    }
}
