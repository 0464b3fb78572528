//! What the plan says about how many, gathered before it is shown: the backlog where the
//! source counts cheaply; for a filtered run that will ask, how many messages match, read
//! first where a read changes nothing (a PostgreSQL table or job system, a Kafka topic from the
//! redrive group's offsets, a file), and on a source that settles by position how many skipped
//! records the run would commit past; where a read has a side effect (an SQS receive), why
//! there is no count; and why a redrive would find nothing pending.

use chrono::Utc;
use futures::StreamExt;

use super::MoveRequest;
use super::policy::{Decision, decide};
use crate::backend::passing::Passing;
use crate::backend::{Backlog, QueueBackend, ScanOptions};
use crate::error::{Error, Result};
use crate::settings::Ctx;

/// Everything the plan counts.
#[derive(Debug, Default)]
pub(super) struct Facts {
    pub(super) backlog: Option<Backlog>,
    /// Counted first: a filtered run that asks, where reading changes nothing.
    pub(super) count: Option<Count>,
    /// A filtered run that asks where reading first would change something: what a read does.
    pub(super) uncounted: Option<&'static str>,
    /// Why a redrive finds nothing pending (Kafka: the redrive group consumed everything).
    pub(super) nothing_pending: Option<String>,
    /// What a redrive would leave of the backlog, and why (BullMQ's ids with no job hash):
    /// not counted in what it will move.
    pub(super) left: Option<crate::backend::Unaccounted>,
}

/// How many messages a filtered run would take, counted before it asks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Count {
    /// Read (from where the run would start).
    pub(super) examined: u64,
    /// Passed the filters (up to `--max`).
    pub(super) matched: u64,
    /// Skipped, and passed over by a later move in their partition (Kafka).
    pub(super) passed: u64,
    /// False when the count stopped at `--max` matches.
    pub(super) complete: bool,
}

/// The plan's counts. `wanted`: whether the backlog is worth a count at all (a filtered
/// replay's would say little). The backlog is only counted when someone will see it (a table,
/// a progress bar, a question).
pub(super) async fn gather(
    ctx: &Ctx,
    req: &MoveRequest,
    source: &dyn QueueBackend,
    wanted: bool,
) -> Result<Facts> {
    let p = &ctx.printer;
    let asking = !req.dry_run && !req.yes;
    let shown = p.is_table() || p.progress_enabled() || asking;
    let mut facts = Facts::default();
    if shown && wanted {
        facts.backlog = source
            .backlog(req.mode.removes())
            .await
            .unwrap_or_else(|e| {
                tracing::debug!(error = %e, "no count for the plan");
                None
            });
    }
    let plan_shown = p.is_table() || (asking && p.interactive());
    if req.mode.removes() && plan_shown && facts.backlog.is_none_or(|b| b.messages == 0) {
        facts.nothing_pending = source.nothing_pending().await.unwrap_or_else(|e| {
            tracing::debug!(error = %e, "no word on what is pending");
            None
        });
    }
    if req.mode == super::Mode::Redrive && plan_shown && facts.backlog.is_some() {
        facts.left = source.left_by_redrive().await.unwrap_or_else(|e| {
            tracing::debug!(error = %e, "no count of what a redrive would leave");
            None
        });
    }
    if asking && p.interactive() && req.mode.removes() && !req.filter.is_empty() {
        match source.capabilities().read_side_effect {
            Some(effect) => facts.uncounted = Some(effect),
            None => facts.count = Some(matches(ctx, req, source).await?),
        }
    }
    Ok(facts)
}

/// Read what the run would read, as it would (a redrive's read: Kafka from the redrive
/// group's offsets), and count what the filters select, up to `--max`.
async fn matches(ctx: &Ctx, req: &MoveRequest, source: &dyn QueueBackend) -> Result<Count> {
    let mut stream = source
        .scan(ScanOptions {
            limit: None,
            page_size: req.batch_size,
            as_redrive: true,
            purge: req.mode == super::Mode::Purge,
        })
        .await?;
    let now = Utc::now();
    let mut passing = Passing::new(source.settles_by_position());
    let mut c = Count {
        complete: true,
        ..Count::default()
    };
    let bar = ctx
        .printer
        .progress(None, "counting what passes the filter");
    while let Some(m) = stream.next().await {
        if ctx.interrupt.is_set() {
            bar.finish_and_clear();
            return Err(Error::Interrupted);
        }
        let m = m?;
        c.examined += 1;
        bar.inc(1);
        // The engine's policy, message by message (what the run would send, it counts as
        // moved: the count cannot know which copies a target would refuse).
        let d = decide(req, &m, now)?;
        match d {
            Decision::Skip | Decision::Hold => passing.skipped(m.partition),
            Decision::Fail(_) => passing.failed(m.partition),
            Decision::Park | Decision::Take => passing.moved(m.partition),
        }
        if !d.selected() {
            continue;
        }
        c.matched += 1;
        if req.max.is_some_and(|max| c.matched >= max) {
            c.complete = false;
            break;
        }
    }
    bar.finish_and_clear();
    drop(stream);
    source.close().await?;
    c.passed = passing.passed;
    Ok(c)
}

/// The plan's "will move" value: `40 of 1,200`, a count made now, or `counted as they are read`.
pub(super) fn count_text(facts: &Facts, max: Option<u64>, filtered: bool) -> String {
    if let Some(c) = facts.count {
        return if c.complete {
            format!(
                "{} ({} of {} pass the filter, counted now)",
                c.matched, c.matched, c.examined
            )
        } else {
            format!(
                "{} (the first {} that pass the filter, among {} read, counted now: the run stops there)",
                c.matched, c.matched, c.examined
            )
        };
    }
    // The plan's `reading` (or `reads`) row says what a read does.
    let how = if facts.uncounted.is_some() {
        "not counted first, since reading changes the messages (below); counted as they are read"
    } else {
        "counted as they are read"
    };
    let Some(b) = facts.backlog else {
        return match max {
            Some(m) => format!("at most {m} ({how})"),
            None => format!("all ({how})"),
        };
    };
    let about = if b.exact { "" } else { "about " };
    // What the run would leave is counted apart (the plan's `left` row).
    let n = b
        .messages
        .saturating_sub(facts.left.as_ref().map_or(0, |l| l.count));
    if filtered {
        let cap = max.map(|m| format!(", at most {m}")).unwrap_or_default();
        format!("those of {about}{n} that pass the filter{cap} ({how})")
    } else {
        let k = max.map_or(n, |m| m.min(n));
        format!("{k} of {about}{n}")
    }
}
