//! inspect: what is there and how it is configured.

use serde_json::Value;

use crate::backend::{Fact, Inspection};
use crate::classify::Classifier;
use crate::dedupe::{DedupeTable, KnownRetention};
use crate::error::{Result, exit};
use crate::settings::{Ctx, QueueRef};

pub async fn run(ctx: &Ctx, queues: Vec<QueueRef>) -> Result<i32> {
    let p = &ctx.printer;
    // The classes are the ones `classify` gives: the config's rules, then the built-in ones.
    let classifier = Classifier::new(&ctx.config.classify.rules, ctx.config.path.as_deref(), None)?;
    let mut reports = Vec::new();
    for q in &queues {
        let b = ctx.opener.open(&q.address, &q.source_options()).await?;
        let mut ins = b.inspect(&classifier).await?;
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

async fn add_dedupe(ins: &mut Inspection, cfg: &crate::config::DedupeConfig) {
    let d = match DedupeTable::open(cfg).await {
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
        d.display.clone(),
        d.display.clone(),
    ));
    ins.facts.push(Fact::new(
        "dedupe_retention",
        Value::String(shown.clone()),
        shown,
    ));
}

/// A fact's name as a table shows it: the unit is in the shown value (`14d`, `12.4 MiB`), not
/// the label (`retention`, not `retention seconds`).
fn label(name: &str) -> String {
    let base = ["_seconds", "_ms", "_bytes"]
        .iter()
        .find_map(|u| name.strip_suffix(u))
        .unwrap_or(name);
    base.replace('_', " ")
}

fn render(ctx: &Ctx, ins: &Inspection) -> Result<()> {
    let p = &ctx.printer;
    let mut t = p.table();
    t.set_header(vec![ins.queue.clone(), String::new()]);
    for f in &ins.facts {
        let shown = if f.display.is_empty() {
            match &f.value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }
        } else {
            f.display.clone()
        };
        t.add_row(vec![label(&f.name), shown]);
    }
    p.line(&t.to_string())?;
    for tab in &ins.tables {
        if tab.rows.is_empty() {
            continue;
        }
        let mut t = p.table();
        t.set_header(tab.columns.clone());
        for r in &tab.rows {
            t.add_row(
                r.iter()
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        Value::Null => "-".into(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>(),
            );
        }
        p.line(&tab.title)?;
        p.line(&t.to_string())?;
    }
    for n in &ins.notes {
        p.line(&format!("note: {n}"))?;
    }
    Ok(())
}
