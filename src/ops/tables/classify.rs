//! classify's tables: the classes, and the groups of `--by`.
//!
//! At 80 columns a group shows its keys (a fingerprint is what `--fingerprint` takes), its
//! template (the innermost cause), its kind and its count; at 120 also its rule, when it was
//! last seen and a sample id; `--output wide` adds the first time seen. The classes table keeps
//! kinds and rule names whole (they are what `--class` takes) and gives the sample the rest.

use super::{template_cell, when};
use crate::ops::classify_report::ClassifyReport;
use crate::ops::groups::GroupRow;
use crate::output::{Cell, Col, Grid};

/// The report's table: the groups with `--by`, else the classes.
pub fn table(r: &ClassifyReport) -> Grid {
    match &r.groups {
        Some(g) => groups(r, g),
        None => classes(r),
    }
}

/// A key's value: a source ARN or URL is shortened to the queue's name when narrow.
fn key_cell(key: &str, v: Option<&serde_json::Value>) -> Cell {
    let text = match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        _ => "-".into(),
    };
    if key == "source" {
        let short = text
            .rsplit([':', '/'])
            .next()
            .filter(|s| !s.is_empty())
            .unwrap_or(&text)
            .to_string();
        return Cell::with_short(text, short);
    }
    Cell::new(text)
}

/// The groups of `--by`: a column per key (the template after the fingerprint), the class
/// unless a key is the class, the counts, the times and a sample.
fn groups(r: &ClassifyReport, rows: &[GroupRow]) -> Grid {
    let by = r.by.clone().unwrap_or_default();
    let with_class = !by.iter().any(|k| k == "class" || k == "rule");
    let mut cols = Vec::new();
    for k in &by {
        cols.push(if k == "source" {
            Col::whole(k.as_str()).shorten_at(45)
        } else {
            Col::whole(k.as_str())
        });
        if k == "fingerprint" {
            cols.push(Col::text("template", 30, 2));
        }
    }
    if with_class {
        cols.push(Col::whole("class").shorten_at(55));
    }
    cols.push(Col::whole("messages"));
    if r.dedupe.is_some() {
        cols.push(Col::whole("processed"));
    }
    cols.push(Col::whole("first seen").drop_at(60));
    cols.push(Col::whole("last seen").drop_at(42));
    cols.push(Col::whole("sample").drop_at(41));
    let mut g = Grid::new(cols);
    for row in rows {
        let mut cells = Vec::new();
        for k in &by {
            cells.push(key_cell(k, row.key.get(k)));
            if k == "fingerprint" {
                cells.push(match &row.template {
                    Some(t) => template_cell(t),
                    None => Cell::new("-"),
                });
            }
        }
        if with_class {
            cells.push(Cell::with_short(
                format!("{}/{}", row.kind, row.rule),
                row.kind.to_string(),
            ));
        }
        cells.push(Cell::new(row.count.to_string()));
        if r.dedupe.is_some() {
            cells.push(Cell::new(row.processed.unwrap_or(0).to_string()));
        }
        cells.push(Cell::new(when(row.first_seen)));
        cells.push(Cell::new(when(row.last_seen)));
        cells.push(Cell::new(row.sample_id.clone()));
        g.row(cells);
    }
    g
}

/// The classes: one row per rule, kinds and rule names whole, the sample's error wrapped.
fn classes(r: &ClassifyReport) -> Grid {
    let mut cols = vec![
        Col::whole("kind"),
        Col::whole("rule"),
        Col::whole("messages"),
    ];
    if r.dedupe.is_some() {
        cols.push(Col::whole("processed"));
    }
    let redriven = r.classes.iter().any(|c| c.redriven > 0);
    if redriven {
        cols.push(Col::whole("redriven (max)").drop_at(50));
    }
    cols.extend([
        Col::whole("first seen").drop_at(60),
        Col::whole("last seen").drop_at(45),
        Col::whole("sample").drop_at(41),
        Col::text("sample error", 24, 2).drop_at(30),
    ]);
    let mut g = Grid::new(cols);
    for c in &r.classes {
        let mut cells = vec![
            Cell::new(c.kind.to_string()),
            Cell::new(c.rule.clone()),
            Cell::new(c.count.to_string()),
        ];
        if let Some(n) = c.processed {
            cells.push(Cell::new(n.to_string()));
        }
        if redriven {
            cells.push(Cell::new(format!(
                "{} ({}×)",
                c.redriven, c.max_redrive_count
            )));
        }
        let error = c.sample_error.as_deref().unwrap_or("(no error recorded)");
        cells.extend([
            Cell::new(when(c.first_seen)),
            Cell::new(when(c.last_seen)),
            Cell::new(c.sample_id.clone()),
            template_cell(error),
        ]);
        g.row(cells);
    }
    g
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::classify::Kind;
    use crate::ops::classify_report::ClassRow;

    fn report(rule: &str, sample_id: &str) -> ClassifyReport {
        ClassifyReport {
            queue: "q".into(),
            total: 3,
            complete: true,
            unseen: Vec::new(),
            interrupted: false,
            kinds: BTreeMap::new(),
            classes: vec![ClassRow {
                kind: Kind::Transient,
                rule: rule.into(),
                count: 3,
                processed: None,
                redriven: 0,
                max_redrive_count: 0,
                first_seen: None,
                last_seen: None,
                sample_id: sample_id.into(),
                sample_error: Some(
                    "upstream call timed out after 30 seconds while calling the payments service"
                        .into(),
                ),
            }],
            by: None,
            groups: None,
            dedupe: None,
            explanations: None,
        }
    }

    #[test]
    fn rule_names_and_ids_are_never_wrapped() {
        let uuid = "3fa2c1d0-9b7e-4c1a-8f00-1234567890ab";
        for width in [60, 80, 120] {
            let text =
                table(&report("downstream-payments-timeout", uuid)).render(Some(width), false);
            assert!(text.contains("downstream-payments-timeout"), "{text}");
            assert!(
                text.lines().all(|l| l.chars().count() <= width),
                "{width}:\n{text}"
            );
            if width >= 120 {
                assert!(text.contains(uuid), "{text}");
            }
        }
    }
}
