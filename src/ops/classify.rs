//! classify: group messages by failure reason, with a sample per class; optionally mark the
//! ones a dedupe table already records as processed (a replay of those is a no-op).

use std::collections::BTreeMap;

use chrono::Utc;
use futures::StreamExt;

use crate::backend::{self, ScanOptions};
use crate::classify::{Classifier, Explanation, Kind};
use crate::config::DedupeConfig;
use crate::error::{Result, exit};
use crate::filter::Filter;
use crate::message::Message;
use crate::ops::classify_report::{ClassRow, ClassifyReport, DedupeSummary, MessageExplanation};
use crate::ops::groups::{GroupKey, Groups, Slot};
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

/// How many messages `classify --explain` explains (the rest are counted as usual): the
/// explanations are kept until the report is printed.
const EXPLAINED_AT_MOST: usize = 10_000;

pub async fn run(ctx: &Ctx, req: ClassifyRequest) -> Result<i32> {
    let b = ctx
        .opener
        .open(&req.queue.address, &req.queue.source_options())
        .await?;
    let r = classify_with(ctx, &req, b.as_ref()).await;
    let closed = b.close().await;
    let code = r?;
    closed?;
    Ok(code)
}

/// The report alone, not printed (`dlqctl ui`'s failure groups): open, scan, count, close.
pub async fn report(ctx: &Ctx, req: &ClassifyRequest) -> Result<ClassifyReport> {
    let b = ctx
        .opener
        .open(&req.queue.address, &req.queue.source_options())
        .await?;
    let r = gather(ctx, req, b.as_ref(), false).await;
    let closed = b.close().await;
    let report = r?;
    closed?;
    Ok(report)
}

/// Scan the queue and count each message (gather), build the report (decide), print it.
async fn classify_with(
    ctx: &Ctx,
    req: &ClassifyRequest,
    b: &dyn backend::QueueBackend,
) -> Result<i32> {
    let report = gather(ctx, req, b, true).await?;
    render(ctx, &report)?;
    Ok(if ctx.interrupt.is_set() {
        exit::INTERRUPTED
    } else {
        exit::OK
    })
}

/// Scan the queue and count each message that passes the filter into its class (and group).
/// `announce`: say what the read does, once it has begun (`dlqctl ui` says it in its view).
async fn gather(
    ctx: &Ctx,
    req: &ClassifyRequest,
    b: &dyn backend::QueueBackend,
    announce: bool,
) -> Result<ClassifyReport> {
    let p = &ctx.printer;
    let dedupe = match &req.dedupe {
        Some(cfg) => Some(crate::settings::open_dedupe(cfg).await?),
        None => None,
    };
    let mut stream = b
        .scan(ScanOptions {
            limit: if req.filter.is_empty() { req.max } else { None },
            page_size: 1000,
            ..ScanOptions::default()
        })
        .await?;
    if announce {
        ctx.warn_reading(b);
    }
    let now = Utc::now();
    let bar = p.progress(None, "classifying");
    let mut tally = Tally::new(req, dedupe.is_some());
    while let Some(m) = stream.next().await {
        if ctx.interrupt.is_set() {
            break;
        }
        if req.max.is_some_and(|mx| tally.total >= mx) {
            tally.capped = true;
            break;
        }
        let m = m?;
        if !req.filter.matches(&m, now, &req.classifier)? {
            continue;
        }
        tally.total += 1;
        bar.inc(1);
        tally.count(req, &m, dedupe.as_deref()).await?;
    }
    if let Some(d) = dedupe.as_deref() {
        tally.mark_pending(d).await?;
    }
    bar.finish_and_clear();
    Ok(tally.into_report(ctx, req, dedupe.as_deref(), b.unseen()))
}

/// What the scan has counted so far.
struct Tally {
    rows: BTreeMap<(Kind, String), ClassRow>,
    /// Messages that passed the filter.
    total: u64,
    /// Waiting for the dedupe table's answer, asked a thousand at a time.
    pending: Vec<Pending>,
    /// `--by`.
    groups: Option<Groups>,
    /// Recorded in the dedupe table as processed.
    processed_total: u64,
    /// `--explain`: the first EXPLAINED_AT_MOST messages' explanations.
    explanations: Option<Vec<MessageExplanation>>,
    /// The scan stopped at `--max`.
    capped: bool,
}

impl Tally {
    fn new(req: &ClassifyRequest, dedupe: bool) -> Tally {
        Tally {
            rows: BTreeMap::new(),
            total: 0,
            pending: Vec::new(),
            groups: (!req.by.is_empty()).then(|| Groups::new(req.by.clone(), dedupe)),
            processed_total: 0,
            explanations: req.explain.then(Vec::new),
            capped: false,
        }
    }

    /// Count one message that passed the filter: classify (or explain) it, add it to its class
    /// and group, and queue it for the dedupe table.
    async fn count(
        &mut self,
        req: &ClassifyRequest,
        m: &Message,
        dedupe: Option<&dyn crate::dedupe::Table>,
    ) -> Result<()> {
        let class = match &mut self.explanations {
            // Memory stays bounded: the first EXPLAINED_AT_MOST are explained, the rest counted.
            Some(list) if list.len() < EXPLAINED_AT_MOST => {
                let explained = req.classifier.explain(m);
                let class = explained.class();
                list.push(MessageExplanation {
                    id: m.id.clone(),
                    explanation: explained,
                });
                class
            }
            _ => req.classifier.classify(m),
        };
        let slot = self.groups.as_mut().map(|g| g.add(m, &class));
        let key = (class.kind, class.rule);
        add(&mut self.rows, &key, m, dedupe.is_some());
        if let Some(d) = dedupe {
            self.pending.push(Pending {
                id: m.id.clone(),
                class: key,
                group: slot,
            });
            if self.pending.len() >= 1000 {
                self.mark_pending(d).await?;
            }
        }
        Ok(())
    }

    /// Ask the dedupe table about the pending messages and count the processed ones.
    async fn mark_pending(&mut self, d: &dyn crate::dedupe::Table) -> Result<()> {
        self.processed_total +=
            mark(d, &mut self.pending, &mut self.rows, self.groups.as_mut()).await?;
        Ok(())
    }

    /// The report: classes by kind then count, the totals per kind, and whether the scan saw
    /// the whole queue.
    fn into_report(
        self,
        ctx: &Ctx,
        req: &ClassifyRequest,
        dedupe: Option<&dyn crate::dedupe::Table>,
        unseen: Vec<crate::backend::Unaccounted>,
    ) -> ClassifyReport {
        let Tally {
            rows,
            total,
            groups,
            processed_total,
            explanations,
            capped,
            ..
        } = self;
        let mut classes: Vec<ClassRow> = rows.into_values().collect();
        classes.sort_by(|a, b| a.kind.cmp(&b.kind).then(b.count.cmp(&a.count)));
        let mut kinds = BTreeMap::new();
        for k in [Kind::Transient, Kind::Permanent, Kind::Unclassified] {
            kinds.insert(k, 0);
        }
        for c in &classes {
            *kinds.entry(c.kind).or_default() += c.count;
        }
        let interrupted = ctx.interrupt.is_set();
        // Without filters the scan itself stops at --max: reaching it is taken as "not all".
        let capped = capped || req.max.is_some_and(|mx| total >= mx);
        ClassifyReport {
            queue: req.queue.address.to_string(),
            total,
            complete: !interrupted && !capped && unseen.is_empty(),
            unseen,
            interrupted,
            kinds,
            classes,
            by: groups
                .as_ref()
                .map(|g| g.by().iter().map(GroupKey::name).collect()),
            groups: groups.map(Groups::into_rows),
            dedupe: dedupe.map(|d| DedupeSummary {
                table: d.display().to_string(),
                processed: processed_total,
                not_processed: total - processed_total,
            }),
            explanations,
        }
    }
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

/// A message waiting for the dedupe table's answer: its id, and where it was counted.
struct Pending {
    id: String,
    class: (Kind, String),
    group: Option<Slot>,
}

async fn mark(
    d: &dyn crate::dedupe::Table,
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
    p.line(&p.grid(&crate::ops::tables::classify::table(r)))?;
    let k = |kind| r.kinds.get(&kind).copied().unwrap_or(0);
    p.line(&format!(
        "{}: {} transient, {} permanent, {} unclassified",
        crate::human::count(r.total, "message", "messages"),
        k(Kind::Transient),
        k(Kind::Permanent),
        k(Kind::Unclassified)
    ))?;
    for u in &r.unseen {
        p.line(&format!("partial: {} {}", unseen_count(u), u.reason))?;
    }
    if !r.complete && (r.interrupted || r.unseen.is_empty()) {
        p.line(&format!(
            "partial: {} after {}; the queue may hold more",
            if r.interrupted {
                "interrupted (Ctrl-C)"
            } else {
                "stopped at --max"
            },
            crate::human::count(r.total, "message", "messages")
        ))?;
    }
    if let Some(d) = &r.dedupe {
        p.line(&format!(
            "{} already recorded in {} (replaying them is a no-op); {} not yet processed",
            d.processed, d.table, d.not_processed
        ))?;
    }
    Ok(())
}

/// `5 messages` or `about 5 messages` (an estimate) a read could not see.
pub fn unseen_count(u: &crate::backend::Unaccounted) -> String {
    let about = if u.approximate { "about " } else { "" };
    format!(
        "{about}{}",
        crate::human::count(u.count, "message", "messages")
    )
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
    if let Some(t) = &e.taxonomy {
        match &e.source {
            Some(s) => lines.push(format!("taxonomy: {t} ({s})")),
            None => lines.push(format!("taxonomy: {t}")),
        }
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
            crate::text::escape_controls(&s.text)
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
    fn an_explanation_names_the_rule_the_match_and_the_rules_before() {
        let e = Classifier::builtin().explain_text(
            "org.x.Wrapper: failed\nCaused by: java.net.SocketException: Connection reset",
        );
        let lines = explanation_lines(&e);
        assert_eq!(lines[0], "class transient/connection", "{lines:?}");
        assert!(lines[1].starts_with("reason: "), "{lines:?}");
        // Issue 30: the explanation names the taxonomy the rule comes from, and where it is.
        assert!(
            lines[2].starts_with("taxonomy: ") && lines[2].contains("https://"),
            "{lines:?}"
        );
        assert!(
            lines[3].contains("innermost cause") && lines[3].ends_with(": Connection reset"),
            "{lines:?}"
        );
        assert!(
            lines[4].starts_with(
                "did not match: declared-permanent, go-runtime-fatal, handler-missing, php-engine-identifier, code-deadlock, lock-conflict, "
            ),
            "{lines:?}"
        );
        let none = Classifier::builtin().explain_text("the flux capacitor hiccuped");
        assert_eq!(
            explanation_lines(&none)[..2],
            ["class unclassified/unrecognised-error", "no rule matched"]
        );
    }
}
