//! inspect's tables: the facts of a queue (a configured queue under its name, its address as a
//! row that breaks at `?` and `&`), and the backend's own tables (source queues, partitions,
//! classes), whose addresses give way to the queue's name when narrow.

use serde_json::Value;

use crate::backend::{Fact, Inspection, Table};
use crate::output::{Cell, Col, Grid};

/// A fact's name as a table shows it: the unit is in the shown value (`14d`, `12.4 MiB`), not
/// the label (`retention`, not `retention seconds`).
fn label(name: &str) -> String {
    let base = ["_seconds", "_ms", "_bytes"]
        .iter()
        .find_map(|u| name.strip_suffix(u))
        .unwrap_or(name);
    base.replace('_', " ")
}

fn shown(f: &Fact) -> String {
    if f.display.is_empty() {
        match &f.value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    } else {
        f.display.clone()
    }
}

/// The facts, name and value, the queue's address first (after its name, when it has one).
pub fn facts(ins: &Inspection) -> Grid {
    let mut g = Grid::pairs();
    let named = ins.facts.first().is_some_and(|f| f.name == "name");
    // The address, unless a fact shows it already (an SQS queue URL).
    let mut address_row = (!ins.facts.iter().any(|f| shown(f) == ins.queue))
        .then(|| vec![Cell::new("address"), Cell::new(ins.queue.clone())]);
    if !named && let Some(r) = address_row.take() {
        g.row(r);
    }
    for f in &ins.facts {
        g.row(vec![Cell::new(label(&f.name)), Cell::new(shown(f))]);
        if f.name == "name"
            && let Some(r) = address_row.take()
        {
            g.row(r);
        }
    }
    g
}

/// One of the backend's tables: an address in it gives way to its last segment (the queue's
/// name) when narrow, every other value is shown whole.
pub fn table(tab: &Table) -> Grid {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    };
    let is_address = |i: usize| {
        tab.rows.iter().any(|r| {
            r.get(i)
                .is_some_and(|v| text(v).contains("://") || text(v).starts_with("arn:"))
        })
    };
    let cols: Vec<Col> = tab
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if i == 0 {
                // The row's name (a queue, a partition, a class; an address's short form where
                // the address does not fit): it gives way where the table would be wider than
                // the screen (a 23-character queue name made one 81 wide).
                Col::text(c.as_str(), 12, 3)
            } else if is_address(i) {
                Col::whole(c.as_str()).shorten_at(45)
            } else {
                Col::whole(c.as_str())
            }
        })
        .collect();
    let mut g = Grid::new(cols);
    for r in &tab.rows {
        g.row(
            r.iter()
                .map(|v| {
                    let t = text(v);
                    let short = t
                        .trim_end_matches('/')
                        .rsplit(['/', ':'])
                        .next()
                        .filter(|s| !s.is_empty() && (t.contains("://") || t.starts_with("arn:")))
                        .map(str::to_string);
                    match short {
                        Some(s) => Cell::with_short(t, s),
                        None => Cell::new(t),
                    }
                })
                .collect(),
        );
    }
    g
}

#[cfg(test)]
mod tests {
    use unicode_width::UnicodeWidthStr;

    /// A table of long queue names fits the screen (an SQS inspect at 80 columns was 81 wide
    /// once its source queue's name reached 23 characters): the name gives way, cut with `…`
    /// as a long word in any text column is (`--output json` has it whole).
    #[test]
    fn a_long_name_wraps_and_the_table_fits() {
        let tab = crate::backend::Table {
            title: "source queues".into(),
            columns: [
                "queue",
                "maxReceiveCount",
                "retention",
                "visibility",
                "type",
            ]
            .map(String::from)
            .to_vec(),
            rows: vec![vec![
                "http://127.0.0.1:54330/123456789012/widths-0032018-0000-src".into(),
                3.into(),
                "4d".into(),
                "0s".into(),
                "standard".into(),
            ]],
        };
        let shown = super::table(&tab).render(Some(80), false);
        assert!(shown.lines().all(|l| l.width() <= 80), "{shown}");
        assert!(shown.contains("widths-0032018-0000-s…"), "{shown}");
    }
}
