//! `dlqctl audit` as a reviewer reads it: when, what, on which queue, with which filter, how
//! many moved and how it ended, and why. At 80 columns the queue is its configured name (else
//! a short form of its address), targets and who ran it need more room; `--output wide` shows
//! the addresses in full.

use crate::address::Address;
use crate::audit::RunRecord;
use crate::output::{Cell, Col, Grid};

/// An address as recorded, and its short form: the configured name, else a short name.
fn queue_cell(name: Option<&str>, recorded: &str) -> Cell {
    let short = match name {
        Some(n) => n.to_string(),
        None => Address::parse(recorded).map_or_else(|_| recorded.to_string(), |a| a.brief()),
    };
    let full = match name {
        Some(n) => format!("{n} ({recorded})"),
        None => recorded.to_string(),
    };
    Cell::with_short(full, short)
}

/// A target as recorded (`ADDRESS` or `ADDRESS (park)`), and its short form.
fn target_short(t: &str) -> String {
    let (addr, park) = match t.strip_suffix(" (park)") {
        Some(a) => (a, " (park)"),
        None => (t, ""),
    };
    match Address::parse(addr) {
        Ok(a) => format!("{}{park}", a.brief()),
        Err(_) => t.to_string(),
    }
}

/// How many left the source: the outcome's count, else the last progress record's.
fn moved(r: &RunRecord) -> String {
    match (&r.outcome, &r.progress) {
        (Some(o), _) => o
            .counts
            .get("moved")
            .and_then(serde_json::Value::as_u64)
            .map_or("-".into(), |n| n.to_string()),
        (None, Some(p)) => p.moved.to_string(),
        (None, None) => "?".into(),
    }
}

/// How the run ended: its exit code, `stopped` (a second Ctrl-C), or `unfinished` (a crash, or
/// still running).
fn ended(r: &RunRecord) -> String {
    match (&r.outcome, &r.progress) {
        (Some(o), _) => o.exit_code.to_string(),
        (None, Some(p)) if p.stopped => "stopped".into(),
        (None, _) => "unfinished".into(),
    }
}

pub fn table(runs: &[RunRecord]) -> Grid {
    let mut g = Grid::new(vec![
        Col::whole("started").shorten_at(50),
        Col::whole("who").shorten_at(58).drop_at(56),
        Col::whole("command"),
        Col::whole("queue").shorten_at(54),
        Col::whole("to").shorten_at(53).drop_at(45),
        Col::text("filter", 16, 2),
        Col::whole("moved"),
        Col::whole("exit"),
        Col::text("reason", 16, 2).drop_at(40),
    ]);
    for r in runs {
        let i = &r.intent;
        let targets = if i.targets.is_empty() {
            Cell::new("-")
        } else {
            Cell::with_short(
                i.targets.join(", "),
                i.targets
                    .iter()
                    .map(|t| target_short(t))
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        };
        let host = format!("{}@{}", i.user, i.host);
        g.row(vec![
            Cell::with_short(
                i.time.format("%Y-%m-%d %H:%M:%S").to_string(),
                i.time.format("%m-%d %H:%M").to_string(),
            ),
            Cell::with_short(host, i.user.clone()),
            Cell::new(i.command.clone()),
            queue_cell(i.queue.as_deref(), &i.source),
            targets,
            Cell::new(i.filter.clone()),
            Cell::new(moved(r)),
            Cell::new(ended(r)),
            Cell::new(i.reason.clone().unwrap_or_else(|| "-".into())),
        ]);
    }
    g
}
