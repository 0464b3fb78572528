//! redrive (move) and replay (copy): one engine, two ways of reading the source.
//!
//! The rule that everything here serves: a message leaves the dead-letter queue only after
//! its copy was accepted by the target. Every batch is claimed, offered, and then settled
//! with exactly the accepted indices.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use chrono::Utc;
use futures::StreamExt;
use serde::Serialize;

use crate::address::Address;
use crate::backend::{self, MoveOptions, OpenOptions, QueueBackend, ScanOptions, SendOutcome};
use crate::classify::Classifier;
use crate::error::{Error, Result, exit};
use crate::filter::Filter;
use crate::headers::HeaderRules;
use crate::message::Message;
use crate::settings::{Ctx, QueueRef};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Move: the copy is accepted, then the original is deleted.
    Redrive,
    /// Copy: nothing is removed from the source.
    Replay,
}

pub struct MoveRequest {
    pub mode: Mode,
    pub source: QueueRef,
    /// The user's `--to`, resolved; None: each message's discovered source.
    pub to: Option<(Address, OpenOptions)>,
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
    /// Accepted by the target (with --dry-run: would be offered).
    pub moved: u64,
    /// Did not pass the filters: left untouched.
    pub skipped: u64,
    /// Offered and not accepted: left in the source.
    pub failed: u64,
    pub destinations: Vec<DestinationCount>,
    pub failures: Vec<FailureGroup>,
    pub interrupted: bool,
    /// Set when a backend failed mid-run (the run stopped; nothing was lost).
    pub aborted: Option<String>,
    pub elapsed_seconds: f64,
    pub messages_per_second: f64,
    /// API requests this run sent to SQS (present when SQS was involved).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sqs_requests: Option<u64>,
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

#[derive(Default)]
struct Tally {
    failures: BTreeMap<String, FailureGroup>,
    dest: BTreeMap<String, u64>,
}

impl Tally {
    fn fail(&mut self, reason: &str, id: &str) {
        let g = self
            .failures
            .entry(reason.to_string())
            .or_insert_with(|| FailureGroup {
                reason: reason.to_string(),
                count: 0,
                ids: Vec::new(),
            });
        g.count += 1;
        if g.ids.len() < 5 {
            g.ids.push(id.to_string());
        }
    }
}

/// Opened targets, one per distinct address.
struct Targets {
    open: HashMap<String, Box<dyn QueueBackend>>,
    /// Discovered destinations that cannot take copies, with why.
    refused: HashMap<String, String>,
    options: OpenOptions,
    /// What the source resolves to: no copy goes back into the queue being read.
    source_identity: Option<String>,
    mode: Mode,
}

impl Targets {
    /// Open `addr` once, as a target. Errors when it cannot take copies: missing, not
    /// writable, or the very queue being read (whatever URL names it).
    async fn get(&mut self, addr: &Address) -> Result<&dyn QueueBackend> {
        let key = addr.to_string();
        if !self.open.contains_key(&key) {
            let b = backend::open(addr, &self.options).await?;
            if !b.capabilities().write {
                return Err(Error::Unsupported {
                    backend: addr.backend_name(),
                    operation: "accepting copies",
                    reason: format!("{addr} cannot be a redrive or replay target"),
                });
            }
            // A Kafka replay reads up to end offsets fixed at its start, so a range can be
            // replayed into its own topic (reprocessing); every other copy into the source
            // would be read again, and a redrive would chase its own copies.
            let bounded = self.mode == Mode::Replay && matches!(addr, Address::Kafka(_));
            let identity = b.identity().await?;
            tracing::debug!(target = %addr, ?identity, source = ?self.source_identity, "target opened");
            if let Some(src) = &self.source_identity
                && !bounded
                && identity.as_ref() == Some(src)
            {
                return Err(Error::invalid_arg(
                    "--to",
                    format!(
                        "{addr} is the queue being read: its copies would be read again{}; pass another --to",
                        if self.mode == Mode::Redrive {
                            " and moved once more, without end"
                        } else {
                            ""
                        }
                    ),
                ));
            }
            self.open.insert(key.clone(), b);
        }
        Ok(self.open[&key].as_ref())
    }

    /// A destination a message names (SQS `DeadLetterQueueSourceArn`, Kafka's original-topic
    /// header): one that does not exist, cannot be written or is the source itself refuses
    /// its messages, with the reason, instead of stopping the run. Other errors (an
    /// unreachable service) still stop it.
    async fn discovered(
        &mut self,
        addr: &Address,
    ) -> Result<std::result::Result<&dyn QueueBackend, String>> {
        let key = addr.to_string();
        if let Some(r) = self.refused.get(&key) {
            return Ok(Err(r.clone()));
        }
        match self.get(addr).await {
            Ok(_) => {}
            Err(
                e @ (Error::NotFound { .. }
                | Error::InvalidArgument { .. }
                | Error::Unsupported { .. }
                | Error::PermissionDenied { .. }),
            ) => {
                let reason =
                    format!("the destination this message names cannot take it: {e}; pass --to");
                tracing::warn!("{reason}");
                self.refused.insert(key, reason.clone());
                return Ok(Err(reason));
            }
            Err(e) => return Err(e),
        }
        Ok(Ok(self.open[&key].as_ref()))
    }
}

/// Paces sends to `rate` messages per second.
struct Pacer {
    rate: Option<f64>,
    start: Instant,
}

impl Pacer {
    async fn wait(&self, done: u64) {
        if let Some(r) = self.rate {
            let due = Duration::from_secs_f64(done as f64 / r);
            let el = self.start.elapsed();
            if due > el {
                tokio::time::sleep(due - el).await;
            }
        }
    }
}

pub async fn run(ctx: &Ctx, req: MoveRequest) -> Result<i32> {
    let p = &ctx.printer;
    if req.mode == Mode::Redrive
        && let crate::address::Address::Kafka(k) = &req.source.address
        && (k.range.from.is_some()
            || k.range.to.is_some()
            || k.range.since.is_some()
            || k.range.until.is_some())
    {
        return Err(Error::invalid_arg(
            "QUEUE",
            "a Kafka redrive continues from the redrive group's committed offsets; from/to/since/until slice peek, export and replay: use `dlqctl replay` for a slice",
        ));
    }
    let mut source_options = req.source.source_options();
    source_options.exactly_once = req.exactly_once;
    let source = backend::open(&req.source.address, &source_options).await?;
    let caps = source.capabilities();
    if req.mode == Mode::Redrive && !caps.delete {
        return Err(Error::Unsupported {
            backend: req.source.address.backend_name(),
            operation: "redrive",
            reason:
                "this queue cannot remove a message after copying it; use `dlqctl replay` to copy"
                    .into(),
        });
    }
    if let Some(effect) = caps.read_side_effect {
        p.warn(&format!("reading {} {effect}", req.source.address));
    }
    let fixed = match &req.to {
        Some((a, _)) => Some(a.clone()),
        None => match &req.source.cfg.source {
            Some(s) => Some(ctx.target(s, &req.source)?.0),
            // Backends that know each message's own source (SQS's DeadLetterQueueSourceArn,
            // Kafka's original-topic header) decide per message.
            None if caps.per_message_destination => None,
            None => source.destination(&Message::default()).await?,
        },
    };
    if req.mode == Mode::Replay && fixed.is_none() {
        return Err(Error::invalid_arg(
            "--to",
            "replay needs a target: --to QUEUE",
        ));
    }
    if req.exactly_once
        && !(matches!(req.source.address, Address::Kafka(_))
            && fixed.as_ref().is_some_and(|f| source.can_move_locally(f)))
    {
        return Err(Error::invalid_arg(
            "--exactly-once",
            "needs a Kafka dead-letter topic and --to a topic on the same cluster (kafka://SAME-BROKERS/TOPIC)",
        ));
    }
    if !req.headers.is_empty() && fixed.as_ref().is_some_and(|f| retried_in_place(&req, f)) {
        return Err(Error::invalid_arg(
            "--keep-header/--strip-header",
            "this redrive retries each job in place: nothing is copied, so there are no headers to choose",
        ));
    }
    if fixed.is_none() && !caps.per_message_destination {
        return Err(Error::invalid_arg(
            "--to",
            format!(
                "no destination for {}: pass --to TARGET, or set `source` in dlqctl.toml (PostgreSQL: or &source=SCHEMA.TABLE in the URL)",
                req.source.address
            ),
        ));
    }
    let target_options = match &req.to {
        Some((_, o)) => o.clone(),
        None => match &req.source.cfg.source {
            Some(s) => ctx.target(s, &req.source)?.1,
            None => OpenOptions {
                id: None,
                columns: req.source.cfg.source_columns.clone(),
                as_target: true,
                aws: ctx.aws.clone(),
                kafka: ctx.config.kafka.clone(),
                exactly_once: false,
            },
        },
    };

    let mut targets = Targets {
        open: HashMap::new(),
        refused: HashMap::new(),
        options: target_options,
        source_identity: source.identity().await?,
        mode: req.mode,
    };
    // Open a known target before the plan is shown: a missing table or queue, or a target that
    // is the source itself, is reported before anything is asked or moved.
    if let Some(f) = &fixed
        && !retried_in_place(&req, f)
    {
        targets.get(f).await?;
    }

    // The plan: shown at a terminal, and always before a question (on stderr, whatever
    // --output or --quiet say).
    let asking = !req.dry_run && !req.yes;
    let local = fixed.as_ref().is_some_and(|f| source.can_move_locally(f))
        && (req.headers.is_empty() || req.exactly_once);
    let backlog = if req.mode == Mode::Redrive || req.filter.is_empty() {
        source
            .backlog(req.mode == Mode::Redrive)
            .await
            .unwrap_or_else(|e| {
                tracing::debug!(error = %e, "no count for the plan");
                None
            })
    } else {
        None
    };
    if p.is_table() || (asking && p.interactive()) {
        let plan = plan(&req, fixed.as_ref(), local, backlog);
        p.plan(&plan, asking);
    }
    if asking {
        let what = format!("{:?}", req.mode).to_lowercase();
        ctx.interrupt.set_phase(crate::settings::Phase::Asking);
        if !p.confirm("Proceed?", &format!("`dlqctl {what}`"))? {
            p.plan_note("nothing done", true);
            return Ok(exit::OK);
        }
    }
    ctx.interrupt.set_phase(crate::settings::Phase::Changing);

    let started = Instant::now();
    let pacer = Pacer {
        rate: req.rate,
        start: started,
    };
    let mut s = MoveSummary {
        operation: format!("{:?}", req.mode).to_lowercase(),
        dry_run: req.dry_run,
        from: req.source.address.to_string(),
        filter: req.filter.describe(),
        headers: req.headers.describe(),
        ..MoveSummary::default()
    };
    let mut tally = Tally::default();
    let moving = !(req.dry_run || req.mode == Mode::Replay);
    // A redrive asks its session first (a Kafka session knows from the offsets it starts at):
    // see `move_loop`.
    let total = if !moving && req.filter.is_empty() {
        backlog.map(|b| b.messages)
    } else {
        None
    };
    let bar = p.progress(
        total.map(|t| req.max.map_or(t, |m| m.min(t))),
        match req.mode {
            Mode::Redrive => "redriving",
            Mode::Replay => "replaying",
        },
    );

    let result = if !moving {
        let r = copy_loop(
            ctx,
            &req,
            source.as_ref(),
            fixed.as_ref(),
            &mut targets,
            &pacer,
            &mut s,
            &mut tally,
            &bar,
        )
        .await;
        // Reads that hold messages (SQS) give them back, after an error too.
        let closed = source.close().await;
        r.and(closed)
    } else {
        move_loop(
            ctx,
            &req,
            source.as_ref(),
            fixed.as_ref(),
            backlog.map(|b| b.messages),
            &mut targets,
            &pacer,
            &mut s,
            &mut tally,
            &bar,
        )
        .await
    };
    bar.finish_and_clear();
    let aborted = match result {
        Ok(()) => None,
        Err(Error::Interrupted) => {
            s.interrupted = true;
            None
        }
        Err(e) => {
            s.aborted = Some(e.to_string());
            Some(e)
        }
    };
    s.elapsed_seconds = started.elapsed().as_secs_f64();
    s.messages_per_second = if s.elapsed_seconds > 0.0 {
        s.moved as f64 / s.elapsed_seconds
    } else {
        0.0
    };
    #[cfg(feature = "sqs")]
    {
        let n = crate::backend::sqs::requests();
        s.sqs_requests = (n > 0).then_some(n);
    }
    s.failures = tally.failures.into_values().collect();
    s.failures.sort_by_key(|f| std::cmp::Reverse(f.count));
    s.destinations = tally
        .dest
        .into_iter()
        .map(|(to, messages)| DestinationCount { to, messages })
        .collect();
    render(ctx, &s)?;
    if let Some(e) = aborted {
        // Exit 2 promises that nothing changed: once copies went out, it cannot be given.
        return Err(if s.moved > 0 && !s.dry_run {
            Error::Stopped {
                source: Box::new(e),
            }
        } else {
            e
        });
    }
    Ok(if s.interrupted {
        exit::INTERRUPTED
    } else if s.failed > 0 {
        exit::PARTIAL
    } else {
        exit::OK
    })
}

/// The plan's rows: what happens, from where, to where, how many.
fn plan(
    req: &MoveRequest,
    fixed: Option<&Address>,
    local: bool,
    backlog: Option<crate::backend::Backlog>,
) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut row = |k: &str, v: String| rows.push((k.to_string(), v));
    row("operation", what_happens(req, fixed, local));
    row(
        match req.mode {
            Mode::Redrive => "dead-letter queue",
            Mode::Replay => "from",
        },
        req.source.label(),
    );
    row(
        "to",
        match fixed {
            Some(f) if retried_in_place(req, f) => "where each job is (retried in place)".into(),
            Some(f) => f.to_string(),
            None => "each message's source queue (discovered per message)".into(),
        },
    );
    row("filter", req.filter.describe());
    let verb = match (req.mode, req.dry_run) {
        (_, true) => "would send",
        (Mode::Redrive, false) => "will move",
        (Mode::Replay, false) => "will copy",
    };
    row(verb, count_text(backlog, req.max, !req.filter.is_empty()));
    row(
        "rate",
        req.rate.map_or("unlimited".into(), |r| {
            if r >= 1.0 {
                format!("{r:.0}/s")
            } else {
                format!("{:.0}/h", r * 3600.0)
            }
        }),
    );
    if fixed.is_some_and(|f| retried_in_place(req, f)) {
        row(
            "keeps",
            "each job as it is: same id, same arguments (nothing is copied)".into(),
        );
    } else if req.headers.is_empty() {
        row(
            "keeps",
            "stable id, body, headers/attributes, group/key".into(),
        );
    } else {
        row("keeps", "stable id, body, group/key".into());
        row("headers/attributes", req.headers.describe());
    }
    if req.mode == Mode::Redrive
        && matches!(req.source.address, Address::Kafka(_))
        && !req.filter.is_empty()
    {
        row(
            "note",
            "records the filter skips are committed past too (a committed offset covers everything before it): they will not be redriven later. To copy a subset and leave the rest pending, use `dlqctl replay` instead".into(),
        );
    }
    rows
}

/// What a run does to each message, in the backend's own terms.
fn what_happens(req: &MoveRequest, fixed: Option<&Address>, local: bool) -> String {
    use crate::address::{PgAddress, PgTarget};
    if req.mode == Mode::Replay {
        return "copy each message to the target (nothing is removed from what is read)".into();
    }
    match &req.source.address {
        Address::Postgres(PgAddress {
            target: PgTarget::System(name),
            ..
        }) => {
            if fixed.is_some_and(|f| retried_in_place(req, f)) {
                format!("retry each dead job in place, as {name}'s own tools do (nothing is copied)")
            } else {
                format!(
                    "copy each dead job to the target, then remove it from {name} (in the batch's transaction)"
                )
            }
        }
        Address::Postgres(_) if local => {
            "move each batch in one transaction: insert the copies, delete the dead letters".into()
        }
        Address::Postgres(_) => {
            "copy each message to the target, then delete it from the dead-letter table".into()
        }
        Address::Sqs(_) => {
            "copy each message to the target, then delete it from the dead-letter queue".into()
        }
        Address::Kafka(_) if req.exactly_once => "copy each record to the target topic and commit the redrive group's offsets past it, in one transaction (nothing is deleted from the topic)".into(),
        Address::Kafka(_) => "copy each record to the target, then commit the redrive group's offsets past it (nothing is deleted from the topic)".into(),
        Address::File(_) => "copy each message to the target".into(),
    }
}

/// `40 of 1,200`, where the source counts cheaply; else `counted while moving`.
fn count_text(
    backlog: Option<crate::backend::Backlog>,
    max: Option<u64>,
    filtered: bool,
) -> String {
    let Some(b) = backlog else {
        return match max {
            Some(m) => format!("at most {m} (counted while moving)"),
            None => "all (counted while moving)".into(),
        };
    };
    let about = if b.exact { "" } else { "about " };
    let n = b.messages;
    if filtered {
        let cap = max.map(|m| format!(", at most {m}")).unwrap_or_default();
        format!("those of {about}{n} that pass the filter{cap} (counted while moving)")
    } else {
        let k = max.map_or(n, |m| m.min(n));
        format!("{k} of {about}{n}")
    }
}

/// Whether the run retries each message where it is (a job system's own retry) rather than
/// copying it to `to`: the one case where the target is the source.
fn retried_in_place(req: &MoveRequest, to: &Address) -> bool {
    *to == req.source.address
        && matches!(
            &req.source.address,
            Address::Postgres(crate::address::PgAddress {
                target: crate::address::PgTarget::System(_),
                ..
            })
        )
}

async fn destination_of(
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

/// How many batches of copies may be on their way at once (a replay removes nothing, so
/// nothing waits for them but the summary).
const COPIES_IN_FLIGHT: usize = 4;

/// Replay, and every dry run: read without removing, offer copies (or only count them).
#[allow(clippy::too_many_arguments)]
async fn copy_loop(
    ctx: &Ctx,
    req: &MoveRequest,
    source: &dyn QueueBackend,
    fixed: Option<&Address>,
    targets: &mut Targets,
    pacer: &Pacer,
    s: &mut MoveSummary,
    tally: &mut Tally,
    bar: &indicatif::ProgressBar,
) -> Result<()> {
    let mut stream = source
        .scan(ScanOptions {
            limit: None,
            page_size: req.batch_size,
            // A redrive's dry run reads exactly what the redrive would (Kafka: from the
            // redrive group's offsets).
            as_redrive: req.mode == Mode::Redrive,
        })
        .await?;
    let now = Utc::now();
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
            if !req.filter.matches(&m, now, &req.classifier) {
                s.skipped += 1;
                continue;
            }
            s.matched += 1;
            let found;
            let (key, addr) = match (fixed, &fixed_key) {
                (Some(a), Some(k)) => (k.as_str(), a),
                _ => match source.destination(&m).await? {
                    Some(a) => {
                        found = (a.to_string(), a);
                        (found.0.as_str(), &found.1)
                    }
                    None => {
                        s.failed += 1;
                        tally.fail("no destination known for this message: pass --to", &m.id);
                        continue;
                    }
                },
            };
            if fixed.is_none()
                && let Err(reason) = targets.discovered(addr).await?
            {
                s.failed += 1;
                tally.fail(&reason, &m.id);
                continue;
            }
            if req.dry_run {
                // A dry run still opens each target: a missing table or queue shows now. (A
                // job system's in-place retry has no separate target.)
                if !retried_in_place(req, addr) {
                    targets.get(addr).await?;
                }
                s.moved += 1;
                match tally.dest.get_mut(key) {
                    Some(n) => *n += 1,
                    None => {
                        tally.dest.insert(key.to_string(), 1);
                    }
                }
                continue;
            }
            let mut m = m;
            req.headers.apply(&mut m);
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
    // Whatever happened, the copies already on their way are counted.
    let mut result = result;
    while let Some(f) = flights.pop_front() {
        keep_first(&mut result, land_copies(f, s, tally).await);
    }
    result
}

/// The first error of a run is the one it reports; a later one (batches landing after it) is
/// only logged.
fn keep_first(result: &mut Result<()>, later: Result<()>) {
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

fn record(s: &mut MoveSummary, tally: &mut Tally, dest: &str, id: &str, o: &SendOutcome) {
    match o {
        SendOutcome::Sent => {
            s.moved += 1;
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

/// Redrive: claim a batch, offer the matching messages, settle with what was accepted.
#[allow(clippy::too_many_arguments)]
async fn move_loop(
    ctx: &Ctx,
    req: &MoveRequest,
    source: &dyn QueueBackend,
    fixed: Option<&Address>,
    backlog: Option<u64>,
    targets: &mut Targets,
    pacer: &Pacer,
    s: &mut MoveSummary,
    tally: &mut Tally,
    bar: &indicatif::ProgressBar,
) -> Result<()> {
    // A local move copies inside the backend (PostgreSQL: INSERT … SELECT), headers and all;
    // with header rules the rows go the ordinary way (read, send, delete). Kafka's local move
    // (--exactly-once) applies the rules itself.
    let local = fixed
        .filter(|f| source.can_move_locally(f))
        .filter(|_| req.headers.is_empty() || req.exactly_once);
    let need_content = !req.filter.is_empty() || local.is_none();
    let mut session = source
        .begin_move(MoveOptions {
            need_content,
            target_columns: targets.options.columns.clone(),
            headers: req.headers.clone(),
            batch_size: req.batch_size,
            in_place: local == Some(&req.source.address),
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
            ctx.printer.set_progress_length(bar, t);
        }
    }
    let result = move_batches(
        ctx,
        req,
        source,
        fixed,
        local,
        session.as_mut(),
        targets,
        pacer,
        s,
        tally,
        bar,
    )
    .await;
    // Release what the run still holds, whatever happened (SQS: hidden messages).
    let finished = session.finish().await;
    result.and(finished)
}

/// A batch whose copies are on their way. Batches land (are settled) in the order they were
/// claimed, once every outcome of theirs is known.
struct Flight {
    /// The stable id of each message of the batch (the messages themselves are dropped once
    /// their copies are handed over: the target holds what it still needs).
    ids: Vec<String>,
    /// Per destination: its address as shown, the indices sent there, their outcomes.
    sends: Vec<(String, Vec<usize>, Outcomes)>,
    /// Offered and refused before anything was sent (no destination).
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

#[allow(clippy::too_many_arguments)]
async fn move_batches(
    ctx: &Ctx,
    req: &MoveRequest,
    source: &dyn QueueBackend,
    fixed: Option<&Address>,
    local: Option<&Address>,
    session: &mut (dyn crate::backend::MoveSession + '_),
    targets: &mut Targets,
    pacer: &Pacer,
    s: &mut MoveSummary,
    tally: &mut Tally,
    bar: &indicatif::ProgressBar,
) -> Result<()> {
    let now = Utc::now();
    // A local move copies and settles in one step; otherwise up to `depth` batches wait for
    // their outcomes while the next ones are read and sent.
    let depth = if local.is_some() {
        1
    } else {
        session.pipeline_depth().max(1)
    };
    let mut flights: std::collections::VecDeque<Flight> = std::collections::VecDeque::new();
    let result = async {
        loop {
            if ctx.interrupt.is_set() {
                return Err(Error::Interrupted);
            }
            let room = req.max.map_or(u64::MAX, |m| m.saturating_sub(s.matched));
            if room == 0 {
                break;
            }
            let n = (req.batch_size as u64).min(room) as usize;
            if let Some(dest) = local
                && req.filter.is_empty()
                && session.can_move_batches(dest)
            {
                let Some(b) = session.move_next_locally(dest, n).await? else {
                    break;
                };
                let key = dest.to_string();
                s.examined += b.examined;
                s.matched += b.examined;
                s.moved += b.moved;
                if b.moved > 0 {
                    *tally.dest.entry(key.clone()).or_default() += b.moved;
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
            let Some(batch) = session.next_batch(n).await? else {
                break;
            };
            let read = read_at.elapsed();
            s.examined += batch.len() as u64;
            let mut selected = Vec::new();
            for (i, m) in batch.iter().enumerate() {
                if req.filter.matches(m, now, &req.classifier) && (selected.len() as u64) < room {
                    selected.push(i);
                } else {
                    s.skipped += 1;
                }
            }
            s.matched += selected.len() as u64;

            if let Some(dest) = local {
                let outcomes = session.move_locally(dest, &selected).await?;
                let key = dest.to_string();
                for (&i, o) in selected.iter().zip(&outcomes) {
                    record(s, tally, &key, &batch[i].id, o);
                }
                bar.inc(batch.len() as u64);
                pacer.wait(s.moved + s.failed).await;
                continue;
            }
            let mut f = Flight {
                ids: Vec::new(),
                sends: Vec::new(),
                failed: Vec::new(),
                read,
                started: read_at,
            };
            let mut groups: BTreeMap<String, (Address, Vec<usize>)> = BTreeMap::new();
            if let Some(d) = fixed {
                // One destination for all: no per-message lookup.
                groups.insert(d.to_string(), (d.clone(), selected));
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
                if fixed.is_none()
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
    session: &mut (dyn crate::backend::MoveSession + '_),
    s: &mut MoveSummary,
    tally: &mut Tally,
    bar: &indicatif::ProgressBar,
) -> Result<()> {
    let waited = Instant::now();
    let mut accepted = Vec::new();
    let mut failed = f.failed;
    let mut error = None;
    for (key, idx, outcomes) in f.sends {
        let outcomes = match outcomes {
            Outcomes::Known(r) => r,
            Outcomes::Coming(pending) => pending.await,
        };
        match outcomes {
            Ok(outcomes) => {
                for (&i, o) in idx.iter().zip(&outcomes) {
                    if *o == SendOutcome::Sent {
                        accepted.push(i);
                    } else {
                        failed.push(i);
                    }
                    record(s, tally, &key, &f.ids[i], o);
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
    session.settle(&accepted, &failed).await?;
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

fn render(ctx: &Ctx, s: &MoveSummary) -> Result<()> {
    let p = &ctx.printer;
    if !p.is_table() {
        return p.json(s);
    }
    let verb = match (s.dry_run, s.operation.as_str()) {
        (true, _) => "would send",
        (false, "replay") => "copied",
        (false, _) => "moved",
    };
    p.line(&format!(
        "{verb} {} · skipped {} (filter) · failed {} · examined {} · {:.1}s{}",
        s.moved,
        s.skipped,
        s.failed,
        s.examined,
        s.elapsed_seconds,
        if s.dry_run {
            String::new()
        } else {
            format!(" ({:.0}/s)", s.messages_per_second)
        }
    ))?;
    for d in &s.destinations {
        p.line(&format!("  → {}  {}", d.to, d.messages))?;
    }
    if !s.failures.is_empty() {
        p.line("not sent (left where they were):")?;
        for f in &s.failures {
            p.line(&format!(
                "  {:>6}  {}  (e.g. {})",
                f.count,
                f.reason,
                f.ids.join(", ")
            ))?;
        }
    }
    if s.interrupted {
        p.line(if s.operation == "replay" {
            "interrupted: nothing was removed; the copies sent so far stay in the target"
        } else {
            "interrupted: every message is in the dead-letter queue or in the target; re-run to continue"
        })?;
    }
    if let Some(a) = &s.aborted {
        p.line(&format!("stopped: {a}"))?;
    }
    if s.dry_run {
        p.line("dry run: nothing was sent or removed")?;
    }
    Ok(())
}
