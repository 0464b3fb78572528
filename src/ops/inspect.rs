//! inspect: what is there and how it is configured.

use serde_json::Value;

use crate::backend::{Fact, Inspection};
use crate::classify::Classifier;
use crate::dedupe::KnownRetention;
use crate::error::{Result, exit};
use crate::ops::census::{self, Census};
use crate::ops::metrics::Metrics;
use crate::output::OutputFormat;
use crate::settings::{Ctx, QueueRef};

pub struct InspectRequest {
    pub queues: Vec<QueueRef>,
    /// Read at most this many messages for the arrivals and the per-fingerprint counts
    /// (0: none).
    pub scan_max: u64,
    /// Read them also where reading has a side effect (SQS receive counts).
    pub scan_anyway: bool,
}

pub async fn run(ctx: &Ctx, req: InspectRequest) -> Result<i32> {
    let p = &ctx.printer;
    // The classes are the ones `classify` gives: the config's rules, then the built-in ones.
    let classifier = Classifier::new(&ctx.config.classify.rules, ctx.config.path.as_deref(), None)?;
    let mut reports = Vec::new();
    let mut metrics = Metrics::default();
    for q in &req.queues {
        let b = ctx.opener.open(&q.address, &q.source_options()).await?;
        let mut ins = b.inspect(&classifier).await?;
        let census = match (req.scan_max, b.capabilities().read_side_effect) {
            (0, _) => None,
            (_, Some(effect)) if !req.scan_anyway => {
                ins.notes.push(format!(
                    "arrivals and fingerprints not counted: reading {effect} (add --scan to read anyway)"
                ));
                None
            }
            (cap, _) => Some(census::take(ctx, b.as_ref(), &classifier, Some(cap), None).await?),
        };
        if let Some(c) = &census {
            ins.arrivals = Some(arrivals_json(c));
            // A file cannot say how many it holds: the census can, when it read them all.
            if c.complete && !ins.facts.iter().any(|f| f.name == "messages") {
                ins.facts
                    .push(Fact::new("messages", c.scanned, c.scanned.to_string()));
            }
        }
        let label = q.name.clone().unwrap_or_else(|| q.address.to_string());
        queue_metrics(&mut metrics, &label, &ins, census.as_ref());
        b.close().await?;
        // A declared retention is the one verify reasons with: show that one.
        if let Some(d) = q.cfg.dlq_retention
            && let Some(f) = ins.facts.iter_mut().find(|f| f.name == "retention")
        {
            let found = f.display.clone();
            *f = Fact::new(
                "retention",
                d.as_secs(),
                format!(
                    "{} (declared dlq_retention; the queue itself says: {found})",
                    crate::human::fmt_duration(d)
                ),
            );
        }
        if let Some(d) = &q.cfg.dedupe {
            add_dedupe(&mut ins, d).await;
        }
        if let Some(n) = &q.name {
            ins.facts.insert(0, Fact::new("name", n.clone(), n.clone()));
        }
        reports.push(ins);
    }
    match p.format {
        OutputFormat::Prometheus => {
            p.write(&metrics.render())?;
            return Ok(exit::OK);
        }
        // One shape whatever the number of queues: an array of reports, or a report a line.
        crate::output::OutputFormat::Jsonl => {
            for r in &reports {
                p.jsonl(r)?;
            }
            return Ok(exit::OK);
        }
        crate::output::OutputFormat::Json | crate::output::OutputFormat::Junit => {
            return p.json(&reports).map(|_| exit::OK);
        }
        crate::output::OutputFormat::Table => {}
    }
    for (i, ins) in reports.iter().enumerate() {
        if i > 0 {
            p.line("")?;
        }
        render(ctx, ins)?;
    }
    Ok(exit::OK)
}

/// The census's arrivals as `inspect --output json` shows them.
fn arrivals_json(c: &Census) -> Value {
    serde_json::json!({
        "scanned": c.scanned,
        "complete": c.complete,
        "hourly_until": c.arrivals.until,
        "hourly": c.arrivals.hourly,
        "daily": c.arrivals.daily,
        "unknown": c.arrivals.unknown,
    })
}

/// A queue's gauges: its facts, and its census when taken.
pub fn queue_metrics(m: &mut Metrics, queue: &str, ins: &Inspection, census: Option<&Census>) {
    let q = || vec![("queue", queue.to_string())];
    let fact = |name: &str| ins.facts.iter().find(|f| f.name == name).map(|f| &f.value);
    if let Some(n) = fact("messages").and_then(Value::as_f64) {
        m.gauge(
            "dlqctl_messages",
            "Messages in the dead-letter queue (approximate on SQS).",
            q(),
            n,
        );
    }
    let oldest = census.and_then(|c| c.oldest).or_else(|| {
        fact("oldest")
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<chrono::DateTime<chrono::Utc>>().ok())
    });
    if let Some(t) = oldest {
        m.gauge(
            "dlqctl_oldest_message_age_seconds",
            "Age of the oldest message, from its first enqueue (else its dead-lettering).",
            q(),
            (chrono::Utc::now() - t).num_seconds().max(0) as f64,
        );
    }
    if let Some(n) = fact("in_flight").and_then(Value::as_f64) {
        m.gauge(
            "dlqctl_in_flight_messages",
            "SQS: messages received and not yet deleted or returned.",
            q(),
            n,
        );
    }
    if let Some(n) = fact("redrive_lag").and_then(Value::as_f64) {
        m.gauge(
            "dlqctl_redrive_lag_messages",
            "Kafka: records of the dead-letter topic past the redrive group's committed offsets.",
            q(),
            n,
        );
    }
    if let Some(c) = census {
        m.census(queue, c);
    }
}

async fn add_dedupe(ins: &mut Inspection, cfg: &crate::config::DedupeConfig) {
    let d = match crate::settings::open_dedupe(cfg).await {
        Ok(d) => d,
        Err(e) => {
            ins.notes.push(format!("dedupe table: {e}"));
            return;
        }
    };
    let shown = match d.retention().await {
        Ok(KnownRetention::Declared(r)) => {
            format!("{} (declared)", crate::ops::verify::fmt_retention(r))
        }
        Ok(KnownRetention::Discovered { how, .. }) => how,
        Ok(KnownRetention::AtLeast { age, .. }) => format!(
            "at least {} (oldest row)",
            crate::human::fmt_duration(std::time::Duration::from_secs(age.as_secs()))
        ),
        Ok(KnownRetention::Unknown(why)) => format!("unknown: {why}"),
        Err(e) => format!("unreadable: {e}"),
    };
    ins.facts.push(Fact::new(
        "dedupe_table",
        d.display().to_string(),
        d.display().to_string(),
    ));
    ins.facts.push(Fact::new(
        "dedupe_retention",
        Value::String(shown.clone()),
        shown,
    ));
}

fn render(ctx: &Ctx, ins: &Inspection) -> Result<()> {
    let p = &ctx.printer;
    p.line(&p.grid(&crate::ops::tables::inspect::facts(ins)))?;
    for tab in &ins.tables {
        if tab.rows.is_empty() {
            continue;
        }
        p.line(&tab.title)?;
        p.line(&p.grid(&crate::ops::tables::inspect::table(tab)))?;
    }
    if let Some(a) = &ins.arrivals {
        for l in arrival_lines(a) {
            p.line(&l)?;
        }
    }
    for n in &ins.notes {
        p.line(&p.para("note: ", n))?;
    }
    Ok(())
}

/// Days listed one by one under the sparkline; earlier ones are summed.
const DAYS_LISTED: usize = 14;

/// The arrivals for people: the last 48 hours as a sparkline, older days as numbers.
fn arrival_lines(a: &Value) -> Vec<String> {
    let hourly: Vec<u64> = a["hourly"]
        .as_array()
        .map(|v| v.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let peak = hourly.iter().copied().max().unwrap_or(0);
    let last48: u64 = hourly.iter().sum();
    let sample = if a["complete"] == Value::Bool(false) {
        format!(
            " (of the first {})",
            crate::human::count(a["scanned"].as_u64().unwrap_or(0), "message", "messages")
        )
    } else {
        String::new()
    };
    let mut lines = vec![
        format!(
            "arrivals{sample} by hour, last 48 h, oldest left (peak {peak}/h, {last48} in all):"
        ),
        format!("  │{}│", census::sparkline(&hourly)),
    ];
    if let Some(days) = a["daily"].as_object()
        && !days.is_empty()
    {
        let skip = days.len().saturating_sub(DAYS_LISTED);
        let earlier: u64 = days.values().take(skip).filter_map(Value::as_u64).sum();
        let mut listed: Vec<String> = days
            .iter()
            .skip(skip)
            .map(|(d, n)| format!("{d} {n}"))
            .collect();
        if earlier > 0 {
            listed.insert(0, format!("earlier {earlier}"));
        }
        lines.push(format!("  before that, by day: {}", listed.join(" · ")));
    }
    lines
}
