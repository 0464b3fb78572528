//! classify: group messages by failure reason, with a sample per class; optionally mark the
//! ones a dedupe table already records as processed (a replay of those is a no-op).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde::Serialize;

use crate::backend::{self, ScanOptions};
use crate::classify::{Classifier, Explanation, Kind};
use crate::config::DedupeConfig;
use crate::dedupe::DedupeTable;
use crate::error::{Result, exit};
use crate::filter::Filter;
use crate::message::Message;
use crate::ops::groups::{GroupKey, GroupRow, Groups, Slot};
use crate::settings::{Ctx, QueueRef};

pub struct ClassifyRequest {
    pub queue: QueueRef,
    pub filter: Filter,
    pub classifier: Classifier,
    pub dedupe: Option<DedupeConfig>,
    pub max: Option<u64>,
    /// Say per message which rule matched, what it matched and which rules did not.
    pub explain: bool,
    /// `--by`: group by these keys as well.
    pub by: Vec<GroupKey>,
}

#[derive(Serialize)]
pub struct ClassifyReport {
    pub queue: String,
    pub total: u64,
    pub kinds: BTreeMap<Kind, u64>,
    pub classes: Vec<ClassRow>,
    /// With --by: the keys, and the groups largest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<GroupRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe: Option<DedupeSummary>,
    /// With --explain: one entry per message, in the order read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanations: Option<Vec<MessageExplanation>>,
}

/// How many messages `classify --explain` explains (the rest are counted as usual): the
/// explanations are kept until the report is printed.
const EXPLAINED_AT_MOST: usize = 10_000;

/// `--explain`: a message's id and how it got its class.
#[derive(Serialize)]
pub struct MessageExplanation {
    pub id: String,
    #[serde(flatten)]
    pub explanation: Explanation,
}

#[derive(Serialize)]
pub struct ClassRow {
    pub kind: Kind,
    pub rule: String,
    pub count: u64,
    /// Already recorded in the dedupe table (with --dedupe).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processed: Option<u64>,
    /// Redriven or replayed by dlqctl before (a `dlqctl-redrive-count` of 1 or more), and the
    /// highest count: a class that keeps coming back (the loop guard, `--max-redrives`).
    #[serde(skip_serializing_if = "is_zero")]
    pub redriven: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub max_redrive_count: u64,
    pub first_seen: Option<DateTime<Utc>>,
    pub last_seen: Option<DateTime<Utc>>,
    pub sample_id: String,
    pub sample_error: Option<String>,
}

#[derive(Serialize)]
pub struct DedupeSummary {
    pub table: String,
    pub processed: u64,
    pub not_processed: u64,
}

pub async fn run(ctx: &Ctx, req: ClassifyRequest) -> Result<i32> {
    let b = ctx
        .opener
        .open(&req.queue.address, &req.queue.source_options())
        .await?;
    if let Some(effect) = b.capabilities().read_side_effect {
        ctx.printer
            .warn(&format!("reading {} {effect}", req.queue.address));
    }
    let r = classify_with(ctx, &req, b.as_ref()).await;
    let closed = b.close().await;
    let code = r?;
    closed?;
    Ok(code)
}

async fn classify_with(
    ctx: &Ctx,
    req: &ClassifyRequest,
    b: &dyn backend::QueueBackend,
) -> Result<i32> {
    let p = &ctx.printer;
    let dedupe = match &req.dedupe {
        Some(cfg) => Some(DedupeTable::open(cfg).await?),
        None => None,
    };
    let mut stream = b
        .scan(ScanOptions {
            limit: if req.filter.is_empty() { req.max } else { None },
            page_size: 1000,
            ..ScanOptions::default()
        })
        .await?;
    let now = Utc::now();
    let bar = p.progress(None, "classifying");
    let mut rows: BTreeMap<(Kind, String), ClassRow> = BTreeMap::new();
    let mut total = 0u64;
    let mut pending: Vec<Pending> = Vec::new();
    let mut groups = (!req.by.is_empty()).then(|| Groups::new(req.by.clone(), dedupe.is_some()));
    let mut processed_total = 0u64;
    let mut explanations = req.explain.then(Vec::new);
    while let Some(m) = stream.next().await {
        if ctx.interrupt.is_set() {
            break;
        }
        if req.max.is_some_and(|mx| total >= mx) {
            break;
        }
        let m = m?;
        if !req.filter.matches(&m, now, &req.classifier) {
            continue;
        }
        total += 1;
        bar.inc(1);
        let class = match &mut explanations {
            // Memory stays bounded: the first EXPLAINED_AT_MOST are explained, the rest counted.
            Some(list) if list.len() < EXPLAINED_AT_MOST => {
                let explained = req.classifier.explain(&m);
                let class = explained.class();
                list.push(MessageExplanation {
                    id: m.id.clone(),
                    explanation: explained,
                });
                class
            }
            _ => req.classifier.classify(&m),
        };
        let slot = groups.as_mut().map(|g| g.add(&m, &class));
        let key = (class.kind, class.rule);
        add(&mut rows, &key, &m, dedupe.is_some());
        if let Some(d) = &dedupe {
            pending.push(Pending {
                id: m.id.clone(),
                class: key,
                group: slot,
            });
            if pending.len() >= 1000 {
                processed_total += mark(d, &mut pending, &mut rows, groups.as_mut()).await?;
            }
        }
    }
    if let Some(d) = &dedupe {
        processed_total += mark(d, &mut pending, &mut rows, groups.as_mut()).await?;
    }
    bar.finish_and_clear();
    let mut classes: Vec<ClassRow> = rows.into_values().collect();
    classes.sort_by(|a, b| a.kind.cmp(&b.kind).then(b.count.cmp(&a.count)));
    let mut kinds = BTreeMap::new();
    for k in [Kind::Transient, Kind::Permanent, Kind::Unclassified] {
        kinds.insert(k, 0);
    }
    for c in &classes {
        *kinds.entry(c.kind).or_default() += c.count;
    }
    let report = ClassifyReport {
        queue: req.queue.address.to_string(),
        total,
        kinds,
        classes,
        by: groups
            .as_ref()
            .map(|g| g.by().iter().map(GroupKey::name).collect()),
        groups: groups.map(Groups::into_rows),
        dedupe: dedupe.as_ref().map(|d| DedupeSummary {
            table: d.display.clone(),
            processed: processed_total,
            not_processed: total - processed_total,
        }),
        explanations,
    };
    render(ctx, &report)?;
    Ok(if ctx.interrupt.is_set() {
        exit::INTERRUPTED
    } else {
        exit::OK
    })
}

fn add(
    rows: &mut BTreeMap<(Kind, String), ClassRow>,
    key: &(Kind, String),
    m: &Message,
    dedupe: bool,
) {
    let seen = m.dead_lettered_at.or(m.enqueued_at);
    let row = rows.entry(key.clone()).or_insert_with(|| ClassRow {
        kind: key.0,
        rule: key.1.clone(),
        count: 0,
        processed: dedupe.then_some(0),
        redriven: 0,
        max_redrive_count: 0,
        first_seen: seen,
        last_seen: seen,
        sample_id: m.id.clone(),
        sample_error: m.error_text().map(|e| e.chars().take(200).collect()),
    });
    row.count += 1;
    let redrives = u64::from(m.redrive_count());
    if redrives > 0 {
        row.redriven += 1;
        row.max_redrive_count = row.max_redrive_count.max(redrives);
    }
    if let Some(t) = seen {
        row.first_seen = Some(row.first_seen.map_or(t, |f| f.min(t)));
        row.last_seen = Some(row.last_seen.map_or(t, |l| l.max(t)));
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A message waiting for the dedupe table's answer: its id, and where it was counted.
struct Pending {
    id: String,
    class: (Kind, String),
    group: Option<Slot>,
}

async fn mark(
    d: &DedupeTable,
    pending: &mut Vec<Pending>,
    rows: &mut BTreeMap<(Kind, String), ClassRow>,
    mut groups: Option<&mut Groups>,
) -> Result<u64> {
    if pending.is_empty() {
        return Ok(0);
    }
    let ids: Vec<String> = pending.iter().map(|p| p.id.clone()).collect();
    let done = d.processed(&ids).await?;
    let mut n = 0;
    for p in pending.drain(..) {
        if done.contains(&p.id)
            && let Some(r) = rows.get_mut(&p.class)
        {
            *r.processed.get_or_insert(0) += 1;
            n += 1;
            if let (Some(g), Some(slot)) = (groups.as_deref_mut(), p.group) {
                g.mark_processed(slot);
            }
        }
    }
    Ok(n)
}

/// The groups of `--by` as a table: a column per key (the template after the fingerprint),
/// the class unless a key is the class, the counts, the times and a sample.
fn groups_table(
    r: &ClassifyReport,
    groups: &[GroupRow],
    mut t: comfy_table::Table,
) -> comfy_table::Table {
    let by = r.by.clone().unwrap_or_default();
    let with_class = !by.iter().any(|k| k == "class" || k == "rule");
    let mut header: Vec<String> = Vec::new();
    for k in &by {
        header.push(k.clone());
        if k == "fingerprint" {
            header.push("template".into());
        }
    }
    if with_class {
        header.push("class".into());
    }
    header.push("messages".into());
    if r.dedupe.is_some() {
        header.push("processed".into());
    }
    header.extend(["first seen", "last seen", "sample"].map(String::from));
    t.set_header(header);
    for g in groups {
        let mut row: Vec<String> = Vec::new();
        for k in &by {
            row.push(match g.key.get(k) {
                Some(serde_json::Value::String(s)) => s.clone(),
                _ => "-".into(),
            });
            if k == "fingerprint" {
                row.push(g.template.clone().unwrap_or_else(|| "-".into()));
            }
        }
        if with_class {
            row.push(format!("{}/{}", g.kind, g.rule));
        }
        row.push(g.count.to_string());
        if r.dedupe.is_some() {
            row.push(g.processed.unwrap_or(0).to_string());
        }
        row.push(when(g.first_seen));
        row.push(when(g.last_seen));
        row.push(g.sample_id.clone());
        t.add_row(row);
    }
    t
}

fn when(t: Option<DateTime<Utc>>) -> String {
    t.map_or("-".into(), |t| t.format("%Y-%m-%d %H:%M").to_string())
}

/// The classes as a table: one row per rule, kinds and rule names never wrapped.
fn classes_table(r: &ClassifyReport, mut t: comfy_table::Table) -> comfy_table::Table {
    let mut header = vec!["kind", "rule", "messages"];
    if r.dedupe.is_some() {
        header.push("processed");
    }
    let redriven = r.classes.iter().any(|c| c.redriven > 0);
    if redriven {
        header.push("redriven (max)");
    }
    header.extend(["first seen", "last seen", "sample"]);
    t.set_header(header);
    for c in &r.classes {
        let mut row = vec![c.kind.to_string(), c.rule.clone(), c.count.to_string()];
        if let Some(n) = c.processed {
            row.push(n.to_string());
        }
        if redriven {
            row.push(format!("{} ({}×)", c.redriven, c.max_redrive_count));
        }
        row.push(when(c.first_seen));
        row.push(when(c.last_seen));
        row.push(format!(
            "{}: {}",
            c.sample_id,
            c.sample_error.as_deref().unwrap_or("(no error recorded)")
        ));
        t.add_row(row);
    }
    // Kinds and rule names are words to copy into --class: never wrapped mid-word (the sample
    // column wraps instead).
    for (i, longest) in [
        (0, r.classes.iter().map(|c| c.kind.to_string().len()).max()),
        (1, r.classes.iter().map(|c| c.rule.chars().count()).max()),
    ] {
        if let (Some(col), Some(n)) = (t.column_mut(i), longest) {
            col.set_constraint(comfy_table::ColumnConstraint::LowerBoundary(
                // (The width includes the one-space padding on either side.)
                comfy_table::Width::Fixed(n.max(4) as u16 + 2),
            ));
        }
    }
    t
}

fn render(ctx: &Ctx, r: &ClassifyReport) -> Result<()> {
    let p = &ctx.printer;
    if !p.is_table() {
        return p.json(r);
    }
    for e in r.explanations.iter().flatten() {
        p.line(&format!("── {}", e.id))?;
        for l in explanation_lines(&e.explanation) {
            p.line(&format!("  {l}"))?;
        }
    }
    let t = match &r.groups {
        Some(g) => groups_table(r, g, p.table()),
        None => classes_table(r, p.table()),
    };
    p.line(&t.to_string())?;
    let k = |kind| r.kinds.get(&kind).copied().unwrap_or(0);
    p.line(&format!(
        "{} messages: {} transient, {} permanent, {} unclassified",
        r.total,
        k(Kind::Transient),
        k(Kind::Permanent),
        k(Kind::Unclassified)
    ))?;
    if let Some(d) = &r.dedupe {
        p.line(&format!(
            "{} already recorded in {} (replaying them is a no-op); {} not yet processed",
            d.processed, d.table, d.not_processed
        ))?;
    }
    Ok(())
}

/// `classify --test TEXT`: the class of an error text alone, and why.
pub fn test_text(ctx: &Ctx, classifier: &Classifier, text: &str) -> Result<i32> {
    let p = &ctx.printer;
    let e = classifier.explain_text(text);
    if !p.is_table() {
        p.json(&e)?;
        return Ok(exit::OK);
    }
    for l in explanation_lines(&e) {
        p.line(&l)?;
    }
    Ok(exit::OK)
}

/// An explanation for people: the class and rule, its reason, what it matched, the rules
/// before it.
pub fn explanation_lines(e: &Explanation) -> Vec<String> {
    let mut lines = vec![format!("class {}/{}", e.kind, e.rule)];
    if let Some(r) = &e.reason {
        lines.push(format!("reason: {r}"));
    }
    if let Some(s) = &e.span {
        let place = if e.in_cause {
            " in the innermost cause"
        } else {
            ""
        };
        let builtin = if e.builtin == Some(true) {
            "built-in"
        } else {
            "user"
        };
        lines.push(format!(
            "matched ({builtin} rule, {}{place}, bytes {}..{}): {}",
            s.field,
            s.start,
            s.end,
            crate::address::escape_controls(&s.text)
        ));
    } else {
        lines.push("no rule matched".into());
    }
    if !e.not_matched.is_empty() {
        lines.push(format!("did not match: {}", e.not_matched.join(", ")));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_names_are_not_wrapped_mid_word() {
        let row = |rule: &str| ClassRow {
            kind: Kind::Transient,
            rule: rule.into(),
            count: 3,
            processed: None,
            redriven: 0,
            max_redrive_count: 0,
            first_seen: None,
            last_seen: None,
            sample_id: "ord-1".into(),
            sample_error: Some(
                "upstream call timed out after 30 seconds while calling the payments service"
                    .into(),
            ),
        };
        let r = ClassifyReport {
            queue: "q".into(),
            total: 3,
            kinds: BTreeMap::new(),
            classes: vec![row("downstream-payments-timeout")],
            by: None,
            groups: None,
            dedupe: None,
            explanations: None,
        };
        let mut t = comfy_table::Table::new();
        t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
            .set_width(80);
        let text = classes_table(&r, t).to_string();
        assert!(text.contains("downstream-payments-timeout"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    }

    #[test]
    fn an_explanation_names_the_rule_the_match_and_the_rules_before() {
        let e = Classifier::builtin().explain_text(
            "org.x.Wrapper: failed\nCaused by: java.net.SocketException: Connection reset",
        );
        let lines = explanation_lines(&e);
        assert_eq!(lines[0], "class transient/connection", "{lines:?}");
        assert!(lines[1].starts_with("reason: "), "{lines:?}");
        assert!(
            lines[2].contains("innermost cause") && lines[2].ends_with(": Connection reset"),
            "{lines:?}"
        );
        assert!(
            lines[3].starts_with("did not match: lock-conflict, "),
            "{lines:?}"
        );
        let none = Classifier::builtin().explain_text("the flux capacitor hiccuped");
        assert_eq!(
            explanation_lines(&none)[..2],
            ["class unclassified/unrecognised-error", "no rule matched"]
        );
    }
}
