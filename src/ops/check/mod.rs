//! check: the state of queues now, held to limits, for cron, alerting and CI.
//!
//! Each limit is a PASS/FAIL check with the numbers behind it: how many messages, how old the
//! oldest, how many in flight (SQS), how many of a class, and which fingerprints a baseline
//! (a saved `classify --by fingerprint --output json`) has not seen: a new kind of failure.
//! Exit 1 when any check fails, like verify.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::backend::{Check, Inspection, QueueBackend, Status};
use crate::classify::Classifier;
use crate::config::LimitsConfig;
use crate::error::{Error, Result, exit};
use crate::ops::census::{self, Census, FingerprintCount};
use crate::ops::metrics::Metrics;
use crate::output::OutputFormat;
use crate::settings::{Ctx, QueueRef};

mod limits;

use limits::Figures;
pub use limits::Verdict;

/// Fingerprints a baseline file names.
#[derive(Debug)]
pub struct Baseline {
    pub path: String,
    pub fingerprints: HashSet<String>,
}

impl Baseline {
    /// Read a `classify --by fingerprint --output json` file (or an array of them, or a
    /// `{"fingerprints": [...]}` list). A report that did not cover its whole queue
    /// (`complete: false`: interrupted, or `--max`), that was not grouped by fingerprint, or
    /// whose groups overflowed into `(other groups)` is refused: every fingerprint it lacks
    /// would be reported as new.
    pub fn load(path: &Path) -> Result<Baseline> {
        let shown = path.display().to_string();
        let write_one = format!(
            "write one with `dlqctl classify QUEUE --by fingerprint --output json > {shown}`"
        );
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::invalid_arg("--baseline", format!("cannot read {}", Error::io(path, e)))
                .hinted(write_one.clone())
        })?;
        let bad = |why: &str| {
            Error::invalid_arg("--baseline", format!("{shown}: {why}")).hinted(write_one.clone())
        };
        let v: Value = serde_json::from_str(&text).map_err(|e| {
            bad(&format!(
                "not JSON ({})",
                crate::config::one_line(&e.to_string())
            ))
        })?;
        let reports = match &v {
            Value::Array(a) => a.iter().collect(),
            other => vec![other],
        };
        let mut fingerprints = HashSet::new();
        let mut found_list = false;
        for r in reports {
            if let Some(groups) = r["groups"].as_array() {
                found_list = true;
                partial(r, groups).map_err(|why| bad(&why))?;
                fingerprints.extend(
                    groups
                        .iter()
                        .filter_map(|g| g["key"]["fingerprint"].as_str())
                        .map(str::to_string),
                );
            }
            if let Some(list) = r["fingerprints"].as_array() {
                found_list = true;
                fingerprints.extend(list.iter().filter_map(Value::as_str).map(str::to_string));
            }
        }
        if !found_list {
            return Err(bad(
                "has no `groups` (was it written with --by fingerprint?)",
            ));
        }
        if let Some(old) = fingerprints
            .iter()
            .find(|f| !crate::classify::fingerprint::is_id(f))
        {
            return Err(bad(&format!(
                "`{}` is not a fingerprint of this version (sixteen hex characters, fp3): it was written by an older dlqctl",
                crate::text::escape_controls(old)
            )));
        }
        Ok(Baseline {
            path: shown,
            fingerprints,
        })
    }
}

/// Why a classify report cannot be a baseline, if it cannot.
fn partial(r: &Value, groups: &[Value]) -> std::result::Result<(), String> {
    if let Some(by) = r["by"].as_array()
        && !by.iter().any(|k| k == "fingerprint")
    {
        let by: Vec<&str> = by.iter().filter_map(Value::as_str).collect();
        return Err(format!(
            "it was written with --by {}, which records no fingerprints",
            by.join(",")
        ));
    }
    if r["complete"] == Value::Bool(false) {
        return Err(if r["interrupted"] == Value::Bool(true) {
            format!(
                "it is partial: its classify was interrupted after {} (complete: false)",
                crate::human::count(r["total"].as_u64().unwrap_or(0), "message", "messages")
            )
        } else {
            format!(
                "it is partial: it covers the first {} only (complete: false: written with --max?)",
                crate::human::count(r["total"].as_u64().unwrap_or(0), "message", "messages")
            )
        });
    }
    if groups
        .iter()
        .any(|g| g["key"]["fingerprint"] == "(other groups)")
    {
        return Err(format!(
            "it holds more than {} fingerprints: those past the first {} are not in it",
            crate::ops::groups::MAX_GROUPS,
            crate::ops::groups::MAX_GROUPS
        ));
    }
    Ok(())
}

pub struct CheckRequest {
    /// Each queue with the limits it is held to.
    pub queues: Vec<(QueueRef, LimitsConfig)>,
    pub baseline: Option<Baseline>,
    pub classifier: Classifier,
    /// Read at most this many messages for the per-class and baseline checks (None: all).
    pub scan_max: Option<u64>,
}

#[derive(Serialize)]
pub struct CheckReport {
    pub passed: bool,
    /// Stopped by Ctrl-C: the queues after the current one were not checked.
    pub interrupted: bool,
    pub queues: Vec<QueueState>,
}

#[derive(Serialize)]
pub struct QueueState {
    pub queue: String,
    pub address: String,
    pub checks: Vec<Check>,
    /// Whether the messages read for the class and baseline checks were all of them (absent
    /// when no message was read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub complete: Option<bool>,
    /// Fingerprints the baseline does not have, largest first (with --baseline).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_fingerprints: Option<Vec<FingerprintCount>>,
    #[serde(skip)]
    census: Option<Census>,
    #[serde(skip)]
    inspection: Option<crate::backend::Inspection>,
}

pub fn needs_census(l: &LimitsConfig, baseline: bool) -> bool {
    baseline || !l.classes.is_empty()
}

pub async fn run(ctx: &Ctx, req: CheckRequest) -> Result<i32> {
    for (q, l) in &req.queues {
        validate(q, l, &req.classifier, req.baseline.is_some())?;
    }
    let mut out = Vec::new();
    for (q, l) in &req.queues {
        out.push(check_one(ctx, &req, q, l).await);
        if ctx.interrupt.is_set() {
            break;
        }
    }
    let passed = out
        .iter()
        .all(|q| q.checks.iter().all(|c| c.status != Status::Fail));
    let report = CheckReport {
        passed,
        interrupted: ctx.interrupt.is_set(),
        queues: out,
    };
    render(ctx, &report)?;
    Ok(if ctx.interrupt.is_set() {
        exit::INTERRUPTED
    } else if passed {
        exit::OK
    } else {
        exit::PARTIAL
    })
}

/// Before anything is read: every queue has something to check, and every class is known.
pub fn validate(q: &QueueRef, l: &LimitsConfig, c: &Classifier, baseline: bool) -> Result<()> {
    if !has_limits(l) && !baseline {
        return Err(Error::Refused {
            command: "check",
            reason: format!(
                "nothing to check for {}: give --max-messages, --max-age, --max-in-flight, --max-class or --baseline, or set [queues.NAME.limits] in dlqctl.toml",
                q.name.clone().unwrap_or_else(|| q.label())
            ),
        });
    }
    for name in l.classes.keys() {
        if !c.knows(name) {
            return Err(Error::invalid_arg(
                "--max-class",
                format!(
                    "`{name}` (a limit of {}) is neither transient, permanent, unclassified nor a rule name",
                    q.name.clone().unwrap_or_else(|| q.label())
                ),
            ));
        }
    }
    Ok(())
}

/// One queue's checks: read what the queue reports, read its messages where a limit needs
/// them, then hold each limit to the figures.
async fn check_one(ctx: &Ctx, req: &CheckRequest, q: &QueueRef, l: &LimitsConfig) -> QueueState {
    let mut state = QueueState {
        queue: q.name.clone().unwrap_or_else(|| q.address.to_string()),
        address: q.address.to_string(),
        checks: Vec::new(),
        complete: None,
        new_fingerprints: None,
        census: None,
        inspection: None,
    };
    let (b, mut ins) = match reach(ctx, req, q).await {
        Ok(reached) => reached,
        Err(unreachable) => {
            state.checks.push(unreachable);
            return state;
        }
    };
    let census = if wants_scan(req.baseline.is_some(), l, &Figures::reported(&ins)) {
        match scan(ctx, req, b.as_ref()).await {
            Ok(c) => Some(c),
            Err(unreadable) => {
                state.checks.push(unreadable);
                None
            }
        }
    } else {
        None
    };
    let _ = b.close().await;
    let (checks, new_fingerprints) = held(l, req.baseline.as_ref(), &mut ins, census.as_ref());
    state.checks.extend(checks.into_iter().map(|v| v.check));
    state.new_fingerprints = new_fingerprints;
    state.complete = census.as_ref().map(|c| c.complete);
    state.census = census;
    state.inspection = Some(ins);
    state
}

/// Each limit held to what was read of the queue: its inspection, and a census where one was
/// taken (the count it gives is added to the inspection where the queue reports none).
fn held(
    l: &LimitsConfig,
    baseline: Option<&Baseline>,
    ins: &mut Inspection,
    census: Option<&Census>,
) -> (Vec<Verdict>, Option<Vec<FingerprintCount>>) {
    let mut figures = Figures::reported(ins);
    // A file cannot say how many it holds: the census can, when it read them all.
    let counted = census.filter(|c| c.complete).map(|c| c.scanned);
    if let (None, Some(n)) = (figures.messages, counted) {
        ins.facts
            .push(crate::backend::Fact::new("messages", n, n.to_string()));
    }
    figures.messages = figures.messages.or(counted);
    limits::checks(l, baseline, &figures, census)
}

/// The verdicts `check` gives a queue held to `l` (no baseline), from its inspection and a
/// census of its messages where one was taken: the UI's queues view, which reads the queue
/// itself. See [`needs_scan`] for when the census is wanted.
pub fn verdicts(l: &LimitsConfig, ins: &Inspection, census: Option<&Census>) -> Vec<Verdict> {
    held(l, None, &mut ins.clone(), census).0
}

/// Whether `check` would read the queue's messages to hold it to `l` (no baseline): for the
/// class limits, and for the age or the count where the queue does not report them.
pub fn needs_scan(l: &LimitsConfig, ins: &Inspection) -> bool {
    wants_scan(false, l, &Figures::reported(ins))
}

/// Whether any limit is set (`[queues.NAME.limits]` is not empty).
pub fn has_limits(l: &LimitsConfig) -> bool {
    l.max_messages.is_some()
        || l.max_age.is_some()
        || l.max_in_flight.is_some()
        || !l.classes.is_empty()
}

/// Opens the queue and inspects it; a failure of either is the failed "reachable" check.
async fn reach(
    ctx: &Ctx,
    req: &CheckRequest,
    q: &QueueRef,
) -> std::result::Result<(Box<dyn QueueBackend>, Inspection), Check> {
    let fail = |title: &str, e: Error| {
        Check::new("reachable", title, Status::Fail, e.read_only().to_string())
    };
    let b = match ctx.opener.open(&q.address, &q.source_options()).await {
        Ok(b) => b,
        Err(e) => return Err(fail("Queue is reachable", e)),
    };
    match b.inspect(&req.classifier).await {
        Ok(ins) => Ok((b, ins)),
        Err(e) => {
            let unreadable = fail("Queue is readable", e);
            let _ = b.close().await;
            Err(unreadable)
        }
    }
}

impl Figures {
    /// The figures the queue reports itself, in its inspection's facts.
    fn reported(ins: &Inspection) -> Figures {
        let fact = |name: &str| {
            ins.facts
                .iter()
                .find(|f| f.name == name)
                .map(|f| f.value.clone())
        };
        // A backend's `depth` (held messages included) wins over its `messages`, and says how
        // it was counted.
        let depth = ins.facts.iter().find(|f| f.name == "depth");
        Figures {
            messages: depth
                .and_then(|f| f.value.as_u64())
                .or(fact("messages").as_ref().and_then(Value::as_u64)),
            counted: depth.map(|f| f.display.clone()),
            in_flight: fact("in_flight").as_ref().and_then(Value::as_u64),
            oldest: fact("oldest")
                .as_ref()
                .and_then(Value::as_str)
                .and_then(|t| t.parse::<chrono::DateTime<chrono::Utc>>().ok()),
        }
    }
}

/// Whether the messages must be read: for the classes and the baseline, and for the age or
/// the count where the queue cannot tell.
fn wants_scan(baseline: bool, l: &LimitsConfig, reported: &Figures) -> bool {
    needs_census(l, baseline)
        || (l.max_age.is_some() && reported.oldest.is_none() && reported.messages != Some(0))
        || (l.max_messages.is_some() && reported.messages.is_none())
}

/// Reads the messages into a census (which warns, once the read has begun, where reading has
/// side effects); a failure is the failed "Messages are readable" check.
async fn scan(
    ctx: &Ctx,
    req: &CheckRequest,
    b: &dyn QueueBackend,
) -> std::result::Result<Census, Check> {
    let known = req.baseline.as_ref().map(|b| &b.fingerprints);
    census::take(ctx, b, &req.classifier, req.scan_max, known)
        .await
        .map_err(|e| {
            Check::new(
                "reachable",
                "Messages are readable",
                Status::Fail,
                e.read_only().to_string(),
            )
        })
}

fn render(ctx: &Ctx, r: &CheckReport) -> Result<()> {
    let p = &ctx.printer;
    match p.format {
        OutputFormat::Junit => p.line(&crate::ops::verify::junit(
            "dlqctl check",
            r.queues
                .iter()
                .map(|q| (q.queue.as_str(), q.checks.as_slice())),
        )),
        OutputFormat::Json | OutputFormat::Jsonl => p.json(r),
        OutputFormat::Prometheus => p.write(&metrics(r).render()),
        OutputFormat::Table => crate::ops::tables::checks::render(
            p,
            r.queues
                .iter()
                .map(|q| crate::ops::tables::checks::QueueChecks {
                    queue: &q.queue,
                    address: &q.address,
                    checks: &q.checks,
                    new_fingerprints: q.new_fingerprints.as_deref(),
                }),
            r.passed,
        ),
    }
}

/// The queues' gauges, and a `dlqctl_check_passed` per check.
fn metrics(r: &CheckReport) -> Metrics {
    let mut m = Metrics::default();
    for q in &r.queues {
        if let Some(ins) = &q.inspection {
            crate::ops::inspect::queue_metrics(&mut m, &q.queue, ins, q.census.as_ref());
        }
    }
    let mut by_check: BTreeMap<(&str, &str), bool> = BTreeMap::new();
    for q in &r.queues {
        for c in &q.checks {
            by_check.insert((q.queue.as_str(), c.id.as_str()), c.status != Status::Fail);
        }
    }
    for ((queue, check), ok) in by_check {
        m.gauge(
            "dlqctl_check_passed",
            "1 when the check passed (or only warned), 0 when it failed.",
            vec![("queue", queue.to_string()), ("check", check.to_string())],
            if ok { 1.0 } else { 0.0 },
        );
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> std::result::Result<Baseline, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.json");
        std::fs::write(&path, text).unwrap();
        Baseline::load(&path).map_err(|e| e.to_string())
    }

    #[test]
    fn only_a_whole_fingerprint_report_is_a_baseline() {
        let fp = "28cf12f9e7f989ec";
        let group = format!(r#"{{"key": {{"fingerprint": "{fp}"}}, "count": 3}}"#);
        let ok = load(&format!(
            r#"{{"total": 3, "complete": true, "interrupted": false, "by": ["fingerprint"], "groups": [{group}]}}"#
        ))
        .unwrap();
        assert!(ok.fingerprints.contains(fp));
        // Written before dlqctl said whether a report was complete: taken as it is.
        load(&format!(
            r#"{{"by": ["fingerprint"], "groups": [{group}]}}"#
        ))
        .unwrap();
        load(&format!(r#"{{"fingerprints": ["{fp}"]}}"#)).unwrap();
        for (text, why) in [
            (
                format!(
                    r#"{{"total": 2, "complete": false, "interrupted": true, "by": ["fingerprint"], "groups": [{group}]}}"#
                ),
                "interrupted after 2 messages",
            ),
            (
                format!(
                    r#"{{"total": 5, "complete": false, "interrupted": false, "by": ["fingerprint"], "groups": [{group}]}}"#
                ),
                "--max",
            ),
            (
                r#"{"complete": true, "by": ["class"], "groups": [{"key": {"class": "transient"}}]}"#.to_string(),
                "written with --by class",
            ),
            (
                format!(
                    r#"{{"complete": true, "by": ["fingerprint"], "groups": [{group}, {{"key": {{"fingerprint": "(other groups)"}}}}]}}"#
                ),
                "more than 10000 fingerprints",
            ),
            (r#"{"fingerprints": ["4c4b54d8"]}"#.to_string(), "older dlqctl"),
            (r#"{"total": 3}"#.to_string(), "has no `groups`"),
        ] {
            let e = load(&text).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
    }
}
