//! The UI's I/O: each [`Effect`] becomes a task on the runtime that calls the same ops as the
//! commands (`inspect`'s backend report and census, `classify --by fingerprint`, `peek`'s
//! card, the redrive's prepare and start) and sends what it found back over a channel, so the
//! keys are answered while it works. Each task gets its own context whose printer is a
//! capture: nothing is written to the terminal the UI owns.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{DateTime, Utc};
use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};

use super::app::{
    Action, Effect, GroupItem, GroupList, Load, Loaded, MessageItem, QueueInfo, RunKind,
};
use crate::backend::ScanOptions;
use crate::classify::{Classifier, Kind};
use crate::error::{Result, exit};
use crate::filter::Filter;
use crate::ops::classify::ClassifyRequest;
use crate::ops::groups::GroupKey;
use crate::ops::moves::{Mode, MoveRequest};
use crate::output::{Captured, OutputFormat, Printer, ProgressWatch};
use crate::settings::{Ctx, FilterInput, QueueRef};

/// At most this many messages of a group are listed in the messages view.
pub const MESSAGES_SHOWN: usize = 200;

/// What every task's context is made of (the command's context without its printer).
pub struct Base {
    pub config: crate::config::Config,
    pub aws: crate::backend::AwsOptions,
    pub interrupt: crate::settings::Interrupt,
    pub opener: crate::backend::Opener,
    pub reason: Option<String>,
    /// Messages read per queue for the queues view's classes and oldest age (`inspect --scan-max`).
    pub scan_max: u64,
}

impl Base {
    /// A context whose printer is a capture that can "ask" (so a plan counts what it will
    /// move, as it does before the CLI's question; the UI asks the question itself).
    fn ctx(&self) -> (Ctx, Captured) {
        let (ctx, captured, _) = self.watched_ctx();
        (ctx, captured)
    }

    /// The same, with the progress bars of its work left where [`reporting`] reads them.
    fn watched_ctx(&self) -> (Ctx, Captured, ProgressWatch) {
        let (printer, captured) = Printer::capture(OutputFormat::Table);
        let watch = ProgressWatch::default();
        let ctx = Ctx {
            printer: printer.answering(&[]).watched(watch.clone()),
            config: self.config.clone(),
            aws: self.aws.clone(),
            interrupt: self.interrupt.clone(),
            opener: self.opener.clone(),
            reason: self.reason.clone(),
        };
        (ctx, captured, watch)
    }

    fn classifier(&self) -> Result<Classifier> {
        Classifier::new(
            &self.config.classify.rules,
            self.config.path.as_deref(),
            None,
        )
    }
}

/// Starts the tasks; holds the answer channel of the redrive waiting for its question.
pub struct Worker {
    base: Arc<Base>,
    queues: Arc<Vec<QueueRef>>,
    /// Per queue: a read for the queues view is under way (a refresh does not start another:
    /// an unreachable queue does not gather reads).
    reading: Vec<Arc<AtomicBool>>,
    tx: mpsc::UnboundedSender<Loaded>,
    answer: Option<oneshot::Sender<bool>>,
}

impl Worker {
    pub fn new(base: Base, queues: Vec<QueueRef>, tx: mpsc::UnboundedSender<Loaded>) -> Worker {
        Worker {
            reading: queues.iter().map(|_| Arc::default()).collect(),
            base: Arc::new(base),
            queues: Arc::new(queues),
            tx,
            answer: None,
        }
    }

    /// The queue at index `i` of the UI's list.
    pub fn queue(&self, i: usize) -> Option<QueueRef> {
        self.queues.get(i).cloned()
    }

    /// Start the work an effect asks for (Quit, Stop and Edit are the caller's).
    pub fn perform(&mut self, e: Effect) {
        let (base, tx) = (self.base.clone(), self.tx.clone());
        match e {
            Effect::None | Effect::Quit | Effect::Stop | Effect::Edit { .. } => {}
            Effect::LoadQueues => {
                for (i, (q, reading)) in self.queues.iter().zip(&self.reading).enumerate() {
                    if reading.swap(true, Ordering::SeqCst) {
                        continue;
                    }
                    let (base, tx, q, reading) =
                        (base.clone(), tx.clone(), q.clone(), reading.clone());
                    tokio::spawn(async move {
                        let info = queue_info(&base, &q).await;
                        reading.store(false, Ordering::SeqCst);
                        let _ = tx.send(Loaded::Queue(i, loaded(info)));
                    });
                }
            }
            Effect::LoadGroups {
                queue,
                query,
                class,
            } => {
                let Some(q) = self.queues.get(queue).cloned() else {
                    return;
                };
                tokio::spawn(async move {
                    let groups = loaded(groups(&base, q, query.as_deref(), class, &tx).await);
                    let _ = tx.send(Loaded::Groups {
                        queue,
                        query,
                        class,
                        groups,
                    });
                });
            }
            Effect::LoadMessages {
                queue,
                fingerprint,
                query,
                class,
            } => {
                let Some(q) = self.queues.get(queue).cloned() else {
                    return;
                };
                tokio::spawn(async move {
                    let fp = fingerprint.as_deref();
                    let r = messages(&base, q, fp, query.as_deref(), class).await;
                    let _ = tx.send(Loaded::Messages {
                        queue,
                        fingerprint,
                        messages: loaded(r),
                    });
                });
            }
            Effect::PlanRun {
                kind,
                queue,
                fingerprint,
                query,
                class,
                reason,
                ids,
                to,
            } => {
                let Some(q) = self.queues.get(queue).cloned() else {
                    return;
                };
                let (answer, asked) = oneshot::channel();
                // A redrive still waiting for its answer is dropped: its sender goes here.
                self.answer = Some(answer);
                tokio::spawn(async move {
                    let group = Group {
                        source: q,
                        fingerprint,
                        query,
                        class,
                        ids,
                        reason,
                    };
                    let r = run(&base, kind, group, to.as_deref(), &tx, asked).await;
                    if let Err(e) = r {
                        let _ = tx.send(Loaded::Action(Action::Failed(e.to_string())));
                    }
                });
            }
            Effect::Answer(yes) => {
                if let Some(a) = self.answer.take() {
                    let _ = a.send(yes);
                }
            }
        }
    }
}

fn loaded<T>(r: Result<T>) -> Load<T> {
    match r {
        Ok(t) => Load::Ready(t),
        Err(e) => Load::Failed(e.to_string()),
    }
}

/// The filter of a group: its fingerprint and the view's `--where` (the commands' parser).
fn filter(
    ctx: &Ctx,
    fingerprint: Option<&str>,
    query: Option<&str>,
    ids: &[String],
    class: Option<&str>,
) -> Result<Filter> {
    let fingerprints: Vec<String> = fingerprint.map(str::to_string).into_iter().collect();
    let class: Vec<String> = class.map(str::to_string).into_iter().collect();
    let mut f = crate::settings::build_filter(FilterInput {
        class: &class,
        body: None,
        error: None,
        attrs: &[],
        older_than: None,
        newer_than: None,
        ids,
        ids_from: None,
        fingerprints: &fingerprints,
        query,
    })?;
    if let Some(q) = &mut f.query {
        q.watch(&ctx.interrupt, ctx.printer.stderr());
    }
    Ok(f)
}

/// A queues-view row: `inspect`'s count, and (where reading changes nothing) a census of
/// up to `scan_max` messages for the classes and the oldest age.
async fn queue_info(base: &Base, q: &QueueRef) -> Result<QueueInfo> {
    let (ctx, _) = base.ctx();
    let classifier = base.classifier()?;
    let b = ctx.opener.open(&q.address, &q.source_options()).await?;
    let mut info = QueueInfo::default();
    let r = async {
        let ins = b.inspect(&classifier).await?;
        info.backend = ins.backend.to_string();
        info.depth = ins
            .facts
            .iter()
            .find(|f| f.name == "messages" || f.name == "dead_jobs")
            // SQS's `3 (approximate)` as `~3`: the column is 7 wide.
            .map(|f| match f.display.strip_suffix(" (approximate)") {
                Some(n) => format!("~{n}"),
                None => f.display.clone(),
            });
        if let Some(effect) = b.capabilities().read_side_effect {
            info.note = Some(format!(
                "not scanned: reading {effect}; enter reads its messages"
            ));
            info.check = super::limits::status(q, &classifier, &ins, None);
            return Ok(());
        }
        let c = crate::ops::census::take(&ctx, b.as_ref(), &classifier, Some(base.scan_max), None)
            .await?;
        // `--scan-max 0` reads none: the limits that need them are not held.
        let read = Some(&c).filter(|c| c.scanned > 0 || c.complete);
        info.check = super::limits::status(q, &classifier, &ins, read);
        info.oldest = c.oldest.map(age);
        info.arrivals = super::arrivals::ArrivalLine::of(&c.arrivals, c.scanned);
        let k = |kind| c.by_kind.get(&kind).copied().unwrap_or(0);
        info.classes = Some(format!(
            "{}/{}/{}{}",
            k(Kind::Transient),
            k(Kind::Permanent),
            k(Kind::Unclassified),
            if c.complete { "" } else { " (part)" }
        ));
        Ok(())
    }
    .await;
    let closed = b.close().await;
    r?;
    closed?;
    Ok(info)
}

fn age(t: DateTime<Utc>) -> String {
    crate::human::human_age(Utc::now() - t)
}

fn seen(t: Option<DateTime<Utc>>) -> String {
    t.map_or("-".into(), |t| t.format("%Y-%m-%d %H:%M").to_string())
}

/// The failure groups: `classify --by fingerprint` under the view's `--where`.
async fn groups(
    base: &Base,
    queue: QueueRef,
    query: Option<&str>,
    class: Option<&str>,
    tx: &mpsc::UnboundedSender<Loaded>,
) -> Result<GroupList> {
    let (ctx, _, watch) = base.watched_ctx();
    let req = ClassifyRequest {
        queue,
        filter: filter(&ctx, None, query, &[], class)?,
        classifier: base.classifier()?,
        dedupe: None,
        max: None,
        explain: false,
        by: vec![GroupKey::Fingerprint],
    };
    let r = reporting(&watch, false, tx, crate::ops::classify::report(&ctx, &req)).await?;
    let items = r
        .groups
        .unwrap_or_default()
        .into_iter()
        .map(|g| GroupItem {
            // The groups past the first 10,000 are one row without a fingerprint of its own.
            fingerprint: g
                .key
                .get("fingerprint")
                .and_then(|v| v.as_str())
                .filter(|_| g.template.is_some())
                .map(str::to_string),
            class: format!("{}/{}", g.kind, g.rule),
            count: g.count,
            first_seen: seen(g.first_seen),
            last_seen: seen(g.last_seen),
            error: g.template.or(g.sample_error).unwrap_or_default(),
        })
        .collect();
    Ok(GroupList {
        items,
        total: r.total,
        complete: r.complete,
    })
}

/// The first [`MESSAGES_SHOWN`] messages of a group (None: of the filter alone), with
/// `peek --explain`'s card of each.
async fn messages(
    base: &Base,
    q: QueueRef,
    fingerprint: Option<&str>,
    query: Option<&str>,
    class: Option<&str>,
) -> Result<Vec<MessageItem>> {
    let (ctx, _) = base.ctx();
    let classifier = base.classifier()?;
    let f = filter(&ctx, fingerprint, query, &[], class)?;
    let b = ctx.opener.open(&q.address, &q.source_options()).await?;
    let now = Utc::now();
    let mut out = Vec::new();
    let r = async {
        let mut stream = b
            .scan(ScanOptions {
                limit: None,
                page_size: 1000,
                ..ScanOptions::default()
            })
            .await?;
        while let Some(m) = stream.next().await {
            let m = m?;
            if !f.matches(&m, now, &classifier)? {
                continue;
            }
            out.push(item(&m, &classifier, now));
            if out.len() >= MESSAGES_SHOWN || ctx.interrupt.is_set() {
                break;
            }
        }
        Ok::<_, crate::error::Error>(())
    }
    .await;
    let closed = b.close().await;
    r?;
    closed?;
    Ok(out)
}

fn item(m: &crate::message::Message, c: &Classifier, now: DateTime<Utc>) -> MessageItem {
    let mut detail = crate::ops::card::card(m, c, false, None);
    detail.push_str("classification:\n");
    for l in crate::ops::classify::explanation_lines(&c.explain(m)) {
        detail.push_str(&format!("  {l}\n"));
    }
    MessageItem {
        id: m.id.clone(),
        age: m.age(now).map_or("-".into(), crate::human::human_age),
        redrives: m.redrive_count(),
        error: m.error_text().unwrap_or_default(),
        detail,
        raw: super::raw::raw_body(&m.body),
    }
}

/// The messages an action takes: a queue's group under the view's filter (no fingerprint:
/// the filter alone, as the command's `--where` takes it); of those, the marked ones when there
/// are any (by id, as `--id` selects them).
struct Group {
    source: QueueRef,
    fingerprint: Option<String>,
    query: Option<String>,
    class: Option<&'static str>,
    ids: Vec<String>,
    /// Typed in the UI where the audit requires one (None: `dlqctl ui --reason`'s).
    reason: Option<String>,
}

/// Redrive, replay or purge one group: the CLI's prepare (its plan and count), the UI's
/// question, the CLI's start (its audit trail, its engine, its summary).
async fn run(
    base: &Base,
    kind: RunKind,
    group: Group,
    to: Option<&str>,
    tx: &mpsc::UnboundedSender<Loaded>,
    asked: oneshot::Receiver<bool>,
) -> Result<()> {
    if kind == RunKind::Export {
        return export(base, group, to.unwrap_or_default(), tx).await;
    }
    let (mut ctx, captured, watch) = base.watched_ctx();
    let Group {
        source,
        fingerprint,
        query,
        class,
        ids,
        reason,
    } = group;
    if reason.is_some() {
        ctx.reason = reason;
    }
    let to = to.map(|t| ctx.target(t, &source)).transpose()?;
    // The loop guard of the queue, as `redrive` and `replay` apply it (`purge` has none).
    let max_redrives = match kind {
        RunKind::Purge => None,
        _ => source.cfg.max_redrives.filter(|&n| n > 0),
    };
    let req = MoveRequest {
        mode: match kind {
            RunKind::Redrive => Mode::Redrive,
            RunKind::Replay => Mode::Replay,
            RunKind::Purge | RunKind::Export => Mode::Purge,
        },
        filter: filter(&ctx, fingerprint.as_deref(), query.as_deref(), &ids, class)?,
        classifier: base.classifier()?,
        source,
        to,
        max: None,
        rate: None,
        batch_size: 1000,
        dry_run: false,
        yes: false,
        exactly_once: false,
        headers: crate::headers::HeaderRules::default(),
        max_redrives,
        park: None,
        transform: None,
    };
    let prepared = reporting(&watch, true, tx, crate::ops::moves::prepare(&ctx, &req)).await?;
    let _ = tx.send(Loaded::Action(Action::Confirm {
        plan: prepared.plan(&req),
        count: prepared.count(&req),
        typed: String::new(),
    }));
    if asked.await != Ok(true) {
        return Ok(());
    }
    let ended = reporting(
        &watch,
        true,
        tx,
        crate::ops::moves::start(&ctx, req, prepared),
    )
    .await;
    let _ = tx.send(Loaded::Action(match ended {
        Ok(e) => Action::Done {
            summary: captured.screen(),
            ok: e.code == exit::OK,
        },
        Err(e) => Action::Failed(format!("{}\n{e}", captured.screen())),
    }));
    Ok(())
}

/// `E`: the group (or its marked messages) written to `path` by `export -o PATH`'s own code
/// (nothing is asked: nothing changes; an existing file is refused as the command refuses it).
async fn export(
    base: &Base,
    group: Group,
    path: &str,
    tx: &mpsc::UnboundedSender<Loaded>,
) -> Result<()> {
    let (ctx, captured, watch) = base.watched_ctx();
    let req = crate::ops::read::ExportRequest {
        read: crate::ops::read::ReadRequest {
            filter: filter(
                &ctx,
                group.fingerprint.as_deref(),
                group.query.as_deref(),
                &group.ids,
                group.class,
            )?,
            queue: group.source,
            classifier: base.classifier()?,
            max: None,
            explain: false,
        },
        output: Some(path.into()),
        force: false,
    };
    let ended = reporting(&watch, true, tx, crate::ops::read::export(&ctx, req)).await;
    let _ = tx.send(Loaded::Action(match ended {
        Ok(code) => Action::Done {
            summary: captured.screen(),
            ok: code == exit::OK,
        },
        Err(e) => Action::Failed(format!("{}\n{e}", captured.screen())),
    }));
    Ok(())
}

/// Await `work`, sending how far its progress bar is (the one the CLI would draw) every
/// 250 ms: `run`, of a run (plan, redrive, export…), else of the groups' read.
async fn reporting<T>(
    watch: &ProgressWatch,
    run: bool,
    tx: &mpsc::UnboundedSender<Loaded>,
    work: impl std::future::Future<Output = T>,
) -> T {
    let mut work = std::pin::pin!(work);
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(250));
    loop {
        tokio::select! {
            t = &mut work => return t,
            _ = tick.tick() => {
                if let Some((what, n, of)) = watch.now() {
                    let of = of.map_or(String::new(), |t| format!(" of {t}"));
                    let text = format!("{what}: {n}{of} messages read…");
                    let _ = tx.send(Loaded::Progress { run, text });
                }
            }
        }
    }
}
