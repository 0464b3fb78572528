//! redrive (move) and replay (copy): one engine, two ways of reading the source.
//!
//! The rule that everything here serves: a message leaves the dead-letter queue only after
//! its copy was accepted by the target. Every batch is claimed, offered, and then settled
//! with exactly the accepted indices.
//!
//! `run` goes in steps: open the source and resolve where copies go (`Setup`), show the plan
//! and ask (plan.rs), then a `Run` does the work (engine.rs, for every run and every dry run,
//! deciding each message by the one policy in policy.rs), and render.rs shows the summary.

use std::time::Instant;

use serde::Serialize;

use crate::address::Address;
use crate::backend::{OpenOptions, QueueBackend};
use crate::classify::Classifier;
use crate::error::{Error, Result, exit};
use crate::filter::Filter;
use crate::headers::HeaderRules;
use crate::message::Message;
use crate::settings::{Ctx, Phase, QueueRef};

#[cfg(test)]
mod conformance;
mod count;
mod engine;
mod flight;
mod plan;
mod policy;
mod refuse;
mod render;
mod setup;
mod staged;
mod targets;

pub use staged::{Ended, Prepared, prepare, start};

use refuse::refuse_slices;
use setup::Setup;
use targets::{Pacer, Tally, Targets};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Move: the copy is accepted, then the original is deleted.
    Redrive,
    /// Copy: nothing is removed from the source.
    Replay,
    /// Remove: each message is copied to the archive (`to`) first, when there is one, then
    /// deleted (docs/purge.md).
    Purge,
}

impl Mode {
    /// Whether the run removes what it selects from the source.
    pub fn removes(self) -> bool {
        self != Mode::Replay
    }
}

/// A target resolved from the command line: where, and how to open it.
pub type Target = (Address, OpenOptions);

pub struct MoveRequest {
    pub mode: Mode,
    pub source: QueueRef,
    /// The user's `--to` (purge: `--archive`), resolved; None: each message's discovered
    /// source (purge: `--no-archive`).
    pub to: Option<Target>,
    pub filter: Filter,
    pub classifier: Classifier,
    pub max: Option<u64>,
    /// Messages per second.
    pub rate: Option<f64>,
    pub batch_size: usize,
    pub dry_run: bool,
    pub yes: bool,
    /// Kafka → Kafka on one cluster: copies and offsets in one transaction.
    pub exactly_once: bool,
    /// `--keep-header` / `--strip-header`.
    pub headers: HeaderRules,
    /// The loop guard: messages redriven this many times already are left where they are,
    /// or parked.
    pub max_redrives: Option<u32>,
    /// `--park`: where messages over `max_redrives` go instead.
    pub park: Option<Target>,
    /// `--transform JQ`: each copy is the message's record mapped by this.
    pub transform: Option<crate::query::Transform>,
}

impl MoveRequest {
    /// Whether `m` has been redriven `--max-redrives` times already.
    pub fn over_limit(&self, m: &Message) -> bool {
        self.max_redrives.is_some_and(|n| m.redrive_count() >= n)
    }

    /// Whether the backend may move messages itself (in SQL, in place): not when a copy
    /// needs something done message by message (header rules, a transform, parking). The
    /// loop guard alone keeps local moves, batch by batch (see `one_step_allowed`).
    /// An edit retried in place (below) is one too: the backend retries the edited copy.
    fn local_allowed(&self, source: &dyn QueueBackend, target: &Address) -> bool {
        (self.headers.is_empty() || self.exactly_once)
            && self.park.is_none()
            && (self.transform.is_none() || self.edit_in_place(source, target))
    }

    /// Whether this is `dlqctl edit` retrying the edited job where it is, on a backend that
    /// retries a job changed ([`QueueBackend::retries_edits_in_place`]: Redis).
    fn edit_in_place(&self, source: &dyn QueueBackend, target: &Address) -> bool {
        matches!(self.transform, Some(crate::query::Transform::Replace(_)))
            && *target == self.source.address
            && source.retries_edits_in_place()
    }

    /// Whether this is `dlqctl edit`'s move of the one message edited (its copy replaces the
    /// message): the messages its id filter passes over are the others, not a user's filter's.
    fn is_edit(&self) -> bool {
        matches!(self.transform, Some(crate::query::Transform::Replace(_)))
    }

    /// Whether a local mover may claim and move a batch in one step, unseen: only when no
    /// message needs looking at (no filter, no loop guard).
    fn one_step_allowed(&self) -> bool {
        self.filter.is_empty() && self.max_redrives.is_none()
    }
}

#[derive(Debug, Default, Serialize)]
pub struct MoveSummary {
    pub operation: String,
    pub dry_run: bool,
    /// What was read: the dead-letter queue of a redrive, the source of a replay.
    pub from: String,
    pub filter: String,
    /// What the copies carry of the headers/attributes (`all`, or the header rules).
    pub headers: String,
    /// Messages looked at.
    pub examined: u64,
    /// Messages that passed the filters.
    pub matched: u64,
    /// Accepted by the target (with --dry-run: would be offered; `would_move`, `would_copy`
    /// or `would_remove` says the same in the run's own words).
    pub moved: u64,
    /// --dry-run: `would_move` (redrive), `would_copy` (replay) or `would_remove` (purge), the
    /// count a real run would act on.
    #[serde(flatten, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub would: std::collections::BTreeMap<&'static str, u64>,
    /// Did not pass the filters: left untouched (`dlqctl edit`: the messages read before the
    /// one edited).
    pub skipped: u64,
    /// Why `skipped` were skipped, as the summary line says it: `filter`, or for `dlqctl edit`
    /// `not the message edited` (not in the JSON: `operation` and `filter` say it).
    #[serde(skip)]
    pub skipped_because: &'static str,
    /// Offered and not accepted: left in the source. Also the copies counted in
    /// `copied_not_removed`.
    pub failed: u64,
    /// Accepted by the target, but their originals were not removed from the source: the
    /// source refused the removal, or the run stopped as it settled their batch (a connection
    /// closed at the acknowledgement). Their copies are in the target and the originals in the
    /// source, so a re-run may send them again: duplicates with the same stable ids. Counted
    /// under `failed` too, with the reason in `failures`; never under `moved`. Present when
    /// not 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub copied_not_removed: u64,
    /// Redriven `--max-redrives` times already: left in the source (loop guard).
    pub held: u64,
    /// Redriven `--max-redrives` times already: moved to `--park` instead.
    pub parked: u64,
    /// The run's `--max-redrives` (for the held line's command; not in the JSON: the caller
    /// passed it).
    #[serde(skip)]
    pub max_redrives: Option<u32>,
    /// Skipped, yet passed over by what was settled after them (Kafka: records before the last
    /// one moved in their partition, which the committed offset covers): they will not be
    /// redriven. With --dry-run: would be. 0 where each message is removed on its own.
    pub committed_past: u64,
    /// What the source says about what the run found (a Kafka redrive group that has consumed
    /// everything), and what a target did to copies (SQS: sent without the loop guard's count
    /// to fit its size limit).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// With `--transform --dry-run`: unified diffs of the first few messages, as they would
    /// be sent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub transform_preview: Vec<String>,
    pub destinations: Vec<DestinationCount>,
    pub failures: Vec<FailureGroup>,
    /// Messages left in the source that the run neither examined nor removed, or cannot say
    /// what became of, with why (present when there are any; the run then ends with exit 1).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unaccounted: Vec<crate::backend::Unaccounted>,
    /// `--id`: the ids listed that no message the run read has as its stable or native id
    /// (present when there are any, after a run that read to the end; it then ends with exit
    /// 1).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ids_not_found: Vec<String>,
    pub interrupted: bool,
    /// Set when a backend failed mid-run (the run stopped; nothing was lost).
    pub aborted: Option<String>,
    pub elapsed_seconds: f64,
    pub messages_per_second: f64,
    /// API requests this run sent to SQS (present when SQS was involved).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sqs_requests: Option<u64>,
}

impl MoveSummary {
    /// The run's time and rate, the SQS requests it made, and a dry run's `would_…` count.
    fn timed(&mut self, elapsed_seconds: f64, mode: Mode) {
        self.elapsed_seconds = elapsed_seconds;
        self.messages_per_second = if elapsed_seconds > 0.0 {
            self.moved as f64 / elapsed_seconds
        } else {
            0.0
        };
        self.sqs_requests = crate::backend::sqs_requests();
        if self.dry_run {
            let key = match mode {
                Mode::Redrive => "would_move",
                Mode::Replay => "would_copy",
                Mode::Purge => "would_remove",
            };
            self.would.insert(key, self.moved);
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Serialize)]
pub struct DestinationCount {
    pub to: String,
    pub messages: u64,
}

#[derive(Debug, Serialize)]
pub struct FailureGroup {
    pub reason: String,
    pub count: u64,
    /// Up to five stable ids.
    pub ids: Vec<String>,
}

/// One redrive or replay under way: what it reads, where its copies go, what it has counted.
struct Run<'a> {
    ctx: &'a Ctx,
    req: &'a MoveRequest,
    source: &'a dyn QueueBackend,
    fixed: Option<Address>,
    /// See [`Setup::in_place`].
    in_place: bool,
    targets: Targets,
    pacer: Pacer,
    s: MoveSummary,
    tally: Tally,
    bar: indicatif::ProgressBar,
    /// `--id`: the listed ids seen among the messages read.
    ids_found: std::collections::HashSet<String>,
}

/// The summary's notes from the targets (SQS: copies sent without the loop guard's count),
/// and, when nothing was read, why, where the source can tell more than "empty".
async fn notes(
    s: &mut MoveSummary,
    targets: &Targets,
    source: &dyn QueueBackend,
    req: &MoveRequest,
    ok: bool,
) {
    for t in targets.open.values() {
        s.notes
            .extend(t.sink().map(|k| k.notes()).unwrap_or_default());
    }
    if s.examined == 0 && req.mode.removes() && ok {
        s.notes
            .extend(source.nothing_pending().await.unwrap_or_else(|e| {
                tracing::debug!(error = %e, "no word on what is pending");
                None
            }));
    }
}

/// `--id`: the listed ids that no message read has (sorted), once the run read every message
/// it could select: it ended without an error or an interruption, was not `dlqctl edit` (which
/// says so itself), and was not cut short by `--max`.
fn ids_not_found(
    req: &MoveRequest,
    aborted: &Option<Error>,
    s: &MoveSummary,
    found: &std::collections::HashSet<String>,
) -> Vec<String> {
    let read_all = aborted.is_none()
        && !s.interrupted
        && !req.is_edit()
        && req.max.is_none_or(|m| s.matched < m);
    let mut missing: Vec<String> = match &req.filter.ids {
        Some(ids) if read_all => ids.difference(found).cloned().collect(),
        _ => Vec::new(),
    };
    missing.sort();
    missing
}

impl MoveSummary {
    /// Whether something selected was not moved, or cannot be accounted for, or was not
    /// found: the run then ends with exit 1.
    fn incomplete(&self) -> bool {
        self.failed > 0 || !self.unaccounted.is_empty() || !self.ids_not_found.is_empty()
    }
}

pub async fn run(ctx: &Ctx, req: MoveRequest) -> Result<i32> {
    let prepared = prepare(ctx, &req).await?;
    if !confirmed(ctx, &req, &prepared.setup, "Proceed?")? {
        return Ok(exit::OK);
    }
    Ok(start(ctx, req, prepared).await?.code)
}

/// The plan, shown at a terminal and always before a question (on stderr, whatever --output
/// or --quiet say), with every count and note it has; then the question, unless --yes or
/// --dry-run.
fn confirmed(ctx: &Ctx, req: &MoveRequest, setup: &Setup, question: &str) -> Result<bool> {
    let p = &ctx.printer;
    let asking = !req.dry_run && !req.yes;
    if p.is_table() || (asking && p.interactive()) {
        let plan = plan::plan(req, setup);
        p.plan(&plan, asking);
    }
    if asking {
        let what = format!("{:?}", req.mode).to_lowercase();
        ctx.interrupt.set_phase(Phase::Asking);
        let question = if setup.facts.uncounted.is_some() {
            format!("{question} (how many match is known only as the run receives them)")
        } else {
            question.to_string()
        };
        if !p.confirm(&question, &format!("`dlqctl {what}`"))? {
            p.plan_note("nothing done", true);
            return Ok(false);
        }
    }
    Ok(true)
}

impl<'a> Run<'a> {
    fn new(
        ctx: &'a Ctx,
        req: &'a MoveRequest,
        source: &'a dyn QueueBackend,
        setup: Setup,
    ) -> Run<'a> {
        let p = &ctx.printer;
        let backlog = setup.facts.backlog;
        let started = Instant::now();
        let pacer = Pacer {
            rate: req.rate,
            start: started,
        };
        let s = MoveSummary {
            operation: format!("{:?}", req.mode).to_lowercase(),
            dry_run: req.dry_run,
            from: req.source.address.to_string(),
            filter: req.filter.describe(),
            max_redrives: req.max_redrives,
            skipped_because: if req.is_edit() {
                "not the message edited"
            } else {
                "filter"
            },
            headers: match &req.transform {
                Some(t) => format!(
                    "{}; transformed by `{}`",
                    req.headers.describe(),
                    t.source()
                ),
                None => req.headers.describe(),
            },
            ..MoveSummary::default()
        };
        let tally = Tally::default();
        let moving = !req.dry_run && req.mode.removes();
        // A redrive asks its session first (a Kafka session knows from the offsets it starts at):
        // see `move_loop`.
        let total = if !moving && req.filter.is_empty() {
            backlog.map(|b| b.messages)
        } else {
            None
        };
        let bar = p.progress(
            total.map(|t| req.max.map_or(t, |m| m.min(t))),
            match (req.dry_run, req.mode) {
                (true, _) => "dry run, reading",
                (false, Mode::Redrive) => "redriving",
                (false, Mode::Replay) => "replaying",
                (false, Mode::Purge) => "purging",
            },
        );

        Run {
            ctx,
            req,
            source,
            fixed: setup.fixed,
            in_place: setup.in_place,
            targets: setup.targets,
            pacer,
            s,
            tally,
            bar,
            ids_found: Default::default(),
        }
    }

    /// Count, render the summary, and say how the run ended: the exit code, or the error
    /// that stopped it.
    async fn finish(self, result: Result<()>) -> Result<Ended> {
        let Run {
            ctx,
            req,
            source,
            mut s,
            tally,
            bar,
            pacer,
            ids_found,
            targets,
            ..
        } = self;
        notes(&mut s, &targets, source, req, result.is_ok()).await;
        let started = pacer.start;
        bar.finish_and_clear();
        let aborted = match result {
            Ok(()) => None,
            Err(Error::Interrupted) => {
                s.interrupted = true;
                None
            }
            Err(e) => {
                s.aborted = Some(match tally.unsettled {
                    0 => e.to_string(),
                    n => format!(
                        "{e}; the copies of the last {n} message(s) had been accepted by the target, but their originals were not removed: they are still in the source, and a re-run sends them again (duplicates with the same stable ids)"
                    ),
                });
                Some(e)
            }
        };
        s.ids_not_found = ids_not_found(req, &aborted, &s, &ids_found);
        // Whether copies went out or messages left the source: exit 2, which promises that
        // nothing changed, cannot be given any more.
        let changed = !s.dry_run && (s.moved > 0 || s.copied_not_removed > 0);
        s.timed(started.elapsed().as_secs_f64(), req.mode);
        s.failures = tally.failures.into_values().collect();
        s.failures.sort_by_key(|f| std::cmp::Reverse(f.count));
        s.destinations = tally
            .dest
            .into_iter()
            .map(|(to, messages)| DestinationCount { to, messages })
            .collect();
        if let Some(a) = tally.audit {
            // The code `main` will exit with (see the end of this function).
            let code = match &aborted {
                Some(e) if changed && e.exit_code() == exit::USAGE => exit::PARTIAL,
                Some(e) => e.exit_code(),
                None if s.interrupted => exit::INTERRUPTED,
                None if s.incomplete() => exit::PARTIAL,
                None => exit::OK,
            };
            a.finish(
                code,
                serde_json::to_value(&s).unwrap_or_default(),
                s.aborted.clone(),
            )
            .await;
        }
        // A usage error before anything was read (a queue the run refuses to read, found once
        // it was opened) ends as every other usage error does: the error alone, stdout empty.
        let refused = aborted
            .as_ref()
            .is_some_and(|e| e.exit_code() == exit::USAGE && s.examined == 0);
        if !refused {
            render::render(ctx, &s)?;
        }
        if let Some(e) = aborted {
            // Exit 2 promises that nothing changed: once copies went out, it cannot be given.
            return Err(if changed {
                Error::Stopped {
                    source: Box::new(e),
                }
            } else {
                e
            });
        }
        Ok(Ended {
            code: if s.interrupted {
                exit::INTERRUPTED
            } else if s.incomplete() {
                exit::PARTIAL
            } else {
                exit::OK
            },
            matched: s.matched,
            moved: s.moved,
        })
    }
}
