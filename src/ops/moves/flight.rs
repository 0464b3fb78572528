//! A claimed batch on its way (a [`Flight`]): its copies grouped by destination and handed to
//! their targets (or, in a dry run, to a sink that accepts everything and sends nothing), then
//! landed: every outcome counted and the batch settled with exactly the accepted messages.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use super::Run;
use super::engine::Sorted;
use super::targets::record;
use crate::address::Address;
use crate::backend::{MoveSession, SendOutcome, Ticket};
use crate::error::Result;
use crate::message::Message;

/// The reason of a copy accepted in a batch whose settle failed.
const UNSETTLED: &str = "copied, but the run stopped before the original was removed: the copy is in the target and the original still in the source; a re-run sends it again (a duplicate with the same stable id)";

/// How long the target's answers (or a send it blocks, as RabbitMQ blocks a publisher under a
/// resource alarm) are waited for once a Ctrl-C came: then the batch lands without them (the
/// originals stay in the source) and the run ends with its summary. An answer that never comes
/// must not outlive the Ctrl-C.
const AFTER_INTERRUPT: Duration = Duration::from_secs(5);

/// The reason of a copy whose target had not answered when the wait after a Ctrl-C ran out.
const UNANSWERED: &str = "the target had not confirmed the copy when the run was interrupted: the copy may be in the target, and the original stays in the source; a re-run sends it again (a duplicate with the same stable id)";

/// `fut`, unless a Ctrl-C came and `AFTER_INTERRUPT` passed since it was seen here: `None`.
async fn unless_interrupted<T>(
    interrupt: &crate::interrupt::Interrupt,
    fut: impl std::future::Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        biased;
        r = fut => Some(r),
        () = async {
            interrupt.wait().await;
            tokio::time::sleep(AFTER_INTERRUPT).await;
        } => None,
    }
}

/// A batch whose copies are on their way. Batches land (are settled) in the order they were
/// claimed, once every outcome of theirs is known.
pub(super) struct Flight {
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
    pub(super) fn ready(&mut self) -> bool {
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

/// Send a sorted batch's copies on their way: the batch becomes a flight, which lands once
/// its outcomes are in (also when sending failed: what went out is settled, the rest stays).
/// A session that is no longer the only mover (Kafka: it lost the redrive lease) sends
/// nothing more; the batch lands unsent and the run stops.
pub(super) async fn take_off(
    run: &mut Run<'_>,
    session: &mut (dyn MoveSession + '_),
    batch: Vec<Message>,
    ticket: Ticket,
    sorted: Sorted,
    read_at: Instant,
) -> (Flight, Result<()>) {
    let mut f = Flight {
        ticket,
        ids: batch.iter().map(|m| m.id.clone()).collect(),
        sends: Vec::new(),
        failed: sorted.refused,
        read: read_at.elapsed(),
        started: read_at,
    };
    f.failed.extend(sorted.unread);
    let sent = match session.holds() {
        Ok(()) => dispatch(run, &mut f, &batch, sorted.taken, sorted.parked).await,
        Err(e) => Err(e),
    };
    session.recycle(batch);
    (f, sent)
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
    let groups = by_destination(run, f, batch, taken, parked).await?;
    let Run {
        ctx,
        req,
        fixed,
        in_place,
        targets,
        s,
        tally,
        source,
        ..
    } = run;
    let (req, fixed) = (*req, fixed.as_ref());
    let mut groups = groups.into_iter();
    while let Some((key, (addr, idx))) = groups.next() {
        // A copy without a stable id (a file's record with `"id": ""`) would reach its target
        // with a new identity each time: refused on every target, before anything is sent
        // (docs/jsonl.md). An in-place retry keeps the message itself.
        let (idx, no_id): (Vec<usize>, Vec<usize>) = if *in_place && fixed == Some(&addr) {
            (idx, Vec::new())
        } else {
            idx.into_iter().partition(|&i| !batch[i].id.is_empty())
        };
        for i in no_id {
            s.failed += 1;
            f.failed.push(i);
            tally.fail(NO_STABLE_ID, "(none)");
        }
        if idx.is_empty() {
            continue;
        }
        let parking = req.park.as_ref().is_some_and(|(p, _)| *p == addr);
        if fixed.is_none()
            && !parking
            && let Err(reason) = targets.discovered(&addr, &ctx.printer).await?
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
            // copy counts as one the run would offer, but those the target says it would
            // refuse before sending (QueueSink::check).
            if *in_place && fixed == Some(&addr) {
                let predicted = idx
                    .iter()
                    .map(|&i| match source.in_place_refusal(&batch[i]) {
                        None => SendOutcome::Sent,
                        Some(reason) => SendOutcome::Rejected { reason },
                    })
                    .collect();
                Ok(Outcomes::Known(Ok(predicted)))
            } else {
                let t = targets.get(&addr).await;
                t.map(|t| Outcomes::Known(Ok(predict(req, t, batch, &idx))))
            }
        } else {
            unless_interrupted(&ctx.interrupt, send(req, targets, &addr, batch, &idx))
                .await
                .unwrap_or(Err(crate::error::Error::Interrupted))
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

/// The copies by destination, keyed by the address as shown: the parked ones under `--park`,
/// the taken ones under the one destination or each message's own. A message with no
/// destination stays (failed).
async fn by_destination(
    run: &mut Run<'_>,
    f: &mut Flight,
    batch: &[Message],
    taken: Vec<usize>,
    parked: Vec<usize>,
) -> Result<BTreeMap<String, (Address, Vec<usize>)>> {
    let Run {
        req,
        source,
        fixed,
        s,
        tally,
        ..
    } = run;
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
        return Ok(groups);
    }
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
    Ok(groups)
}

/// A dry run's outcome of each copy: refused where the target says it would refuse it before
/// sending, else offered. The copies are checked as they would go (after the header rules).
fn predict(
    req: &super::MoveRequest,
    t: &dyn crate::backend::QueueSink,
    batch: &[Message],
    idx: &[usize],
) -> Vec<SendOutcome> {
    idx.iter()
        .map(|&i| {
            let checked = if req.headers.is_empty() {
                t.check(&batch[i])
            } else {
                let mut m = batch[i].clone();
                req.headers.apply(&mut m);
                t.check(&m)
            };
            match checked {
                Ok(()) => SendOutcome::Sent,
                Err(reason) => SendOutcome::Rejected { reason },
            }
        })
        .collect()
}

/// Why a copy without a stable id is refused (the words PostgreSQL's target used first).
const NO_STABLE_ID: &str = "the message has no stable id";

/// Hand the copies at `idx` to the target at `addr` (with the header rules applied); their
/// outcomes come later.
async fn send(
    req: &super::MoveRequest,
    targets: &mut super::targets::Targets,
    addr: &Address,
    batch: &[Message],
    idx: &[usize],
) -> Result<Outcomes> {
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
    let t = targets.get(addr).await?;
    Ok(Outcomes::Coming(t.send_start(msgs).await?))
}

/// Wait for every outcome of a batch, count them, and settle it: the accepted messages leave
/// the source. A destination that failed as a whole fails the run after the batch is
/// settled; its messages stay in the source.
pub(super) async fn land(
    f: Flight,
    session: &mut (dyn MoveSession + '_),
    run: &mut Run<'_>,
) -> Result<()> {
    let Run {
        s, tally, bar, ctx, ..
    } = run;
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
            Outcomes::Coming(pending) => unless_interrupted(&ctx.interrupt, pending)
                .await
                .unwrap_or_else(|| {
                    Ok(idx
                        .iter()
                        .map(|_| SendOutcome::Rejected {
                            reason: UNANSWERED.into(),
                        })
                        .collect())
                }),
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
    // A batch counts as moved only once it is settled. When the settle fails (the connection
    // closed at the acknowledgement), its accepted copies are in the target and their
    // originals were not removed: not moved, and said so (the run stops with the error).
    let unremoved: HashMap<usize, String> = match &settled {
        Ok(()) => session.unremoved().into_iter().collect(),
        Err(_) => accepted
            .iter()
            .map(|&i| (i, UNSETTLED.to_string()))
            .collect(),
    };
    for (key, i, o) in outcomes_of {
        match unremoved.get(&i) {
            Some(reason) if o == SendOutcome::Sent => {
                s.failed += 1;
                s.copied_not_removed += 1;
                tally.fail(reason, &f.ids[i]);
                if settled.is_err() {
                    tally.unsettled += 1;
                }
            }
            _ => record(s, tally, &key, &f.ids[i], &o),
        }
    }
    settled?;
    bar.inc(f.ids.len() as u64);
    super::engine::show_tally(bar, s, run.req);
    tracing::debug!(
        records = f.ids.len(),
        read_ms = f.read.as_millis() as u64,
        wait_ms = waited.as_millis() as u64,
        total_ms = f.started.elapsed().as_millis() as u64,
        "batch"
    );
    error.map_or(Ok(()), Err)
}
