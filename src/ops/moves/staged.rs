//! A run in two steps, for a command that asks its own question (`edit`): `prepare` (open
//! the source, resolve and open the destination, count), then `start` (audit, work, summary).
//! `run` does both around the plan and its question.

use super::{Mode, MoveRequest, Run, Setup, engine, plan, refuse_slices};
use crate::backend::QueueBackend;
use crate::error::Result;
use crate::settings::{Ctx, Phase};

/// A run set up and not started: its source open, its destination resolved and opened, its
/// backlog counted. `edit` shows its plan with its own question (`plan`), then `start`s it.
pub struct Prepared {
    source: Box<dyn QueueBackend>,
    pub(super) setup: Setup,
}

impl Prepared {
    /// The plan's rows, as `run` shows them before its question.
    pub fn plan(&self, req: &MoveRequest) -> Vec<(String, String)> {
        plan::plan(req, &self.setup)
    }

    /// Whether the run retries each message where it is (a job system's own retry) rather
    /// than copying it elsewhere and removing the original.
    pub fn in_place(&self) -> bool {
        self.setup.in_place
    }

    /// How many messages the run will act on, where that was counted before it starts (a
    /// filtered run's count, or an unfiltered run's exact backlog): the number a person types
    /// to confirm a large run (`dlqctl ui`).
    pub fn count(&self, req: &MoveRequest) -> Option<u64> {
        let facts = &self.setup.facts;
        match facts.count {
            Some(c) => Some(c.matched),
            None if req.filter.is_empty() => facts.backlog.filter(|b| b.exact).map(|b| b.messages),
            None => None,
        }
    }
}

/// How a started run ended (its summary is rendered already).
pub struct Ended {
    /// The exit code.
    pub code: i32,
    /// Messages that passed the filters.
    pub matched: u64,
    /// Accepted by the target.
    pub moved: u64,
}

/// Check what can be checked before anything is read (`--reason`, a Kafka slice), open the
/// source, resolve and open the destination, count the backlog.
pub async fn prepare(ctx: &Ctx, req: &MoveRequest) -> Result<Prepared> {
    if !req.dry_run {
        ctx.require_reason()?;
    }
    refuse_slices(req)?;
    let mut source_options = req.source.source_options();
    source_options.exactly_once = req.exactly_once;
    let source = ctx
        .opener
        .open(&req.source.address, &source_options)
        .await?;
    let setup = Setup::resolve(ctx, req, source.as_ref()).await?;
    Ok(Prepared { source, setup })
}

/// Work a prepared run (confirmed already) and show its summary.
pub async fn start(ctx: &Ctx, req: MoveRequest, prepared: Prepared) -> Result<Ended> {
    let Prepared { source, setup } = prepared;
    // A run that changes something is audited: the intent is on disk before it starts.
    let audit = if req.dry_run {
        None
    } else {
        let mut targets: Vec<String> = match &setup.fixed {
            Some(f) => vec![f.recorded()],
            None if req.mode == Mode::Purge => Vec::new(),
            None => vec!["each message's source queue".into()],
        };
        targets.extend(
            req.park
                .as_ref()
                .map(|(p, _)| format!("{} (park)", p.recorded())),
        );
        // `dlqctl edit` sends its one copy the way a redrive does, and is recorded as an edit.
        let command = match &req.transform {
            Some(crate::query::Transform::Replace(_)) => "edit".to_string(),
            _ => format!("{:?}", req.mode).to_lowercase(),
        };
        Some(
            ctx.audit(&command, &req.source, targets, req.filter.describe())
                .await?,
        )
    };
    ctx.interrupt.set_phase(Phase::Changing);
    let backlog = setup.facts.backlog;
    let mut run = Run::new(ctx, &req, source.as_ref(), setup);
    run.tally.audit = audit;
    let result = engine::move_loop(&mut run, backlog.map(|b| b.messages)).await;
    run.finish(result).await
}
