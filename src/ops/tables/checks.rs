//! The checks of verify and check: a table per queue (named by its configured name, its address
//! under it where it fits), the new fingerprints of `check --baseline` as a table of their own (one row each,
//! not one cell of them all), then the verdict.

use super::template_cell;
use crate::backend::{Check, Status};
use crate::error::Result;
use crate::ops::census::FingerprintCount;
use crate::output::{Cell, Col, Grid, Printer};

/// One queue's checks, as the table shows them.
pub struct QueueChecks<'a> {
    pub queue: &'a str,
    pub address: &'a str,
    pub checks: &'a [Check],
    /// `check --baseline`: the fingerprints the baseline does not have.
    pub new_fingerprints: Option<&'a [FingerprintCount]>,
}

/// The checks of every queue, then the verdict.
pub fn render<'a>(
    p: &Printer,
    queues: impl Iterator<Item = QueueChecks<'a>>,
    passed: bool,
) -> Result<()> {
    let (mut n, mut fails, mut warns) = (0, 0, 0);
    for q in queues {
        n += 1;
        let listed = q.new_fingerprints.filter(|f| !f.is_empty());
        let mut g = Grid::new(vec![
            Col::whole(""),
            Col::text("check", 24, usize::MAX),
            Col::text("detail", 30, usize::MAX),
        ]);
        for c in q.checks {
            let detail = match (c.id.as_str(), listed) {
                ("baseline", Some(_)) => listed_below(&c.detail),
                _ => c.detail.clone(),
            };
            g.row(vec![
                Cell::new(c.status.to_string()),
                Cell::new(c.title.clone()),
                Cell::new(detail),
            ]);
            fails += usize::from(c.status == Status::Fail);
            warns += usize::from(c.status == Status::Warn);
        }
        p.line(q.queue)?;
        // A configured queue is named by its name; its address under it where it fits.
        let address = format!("  {}", q.address);
        if q.queue != q.address && p.width().is_none_or(|w| address.chars().count() <= w) {
            p.line(&address)?;
        }
        p.line(&p.grid(&g))?;
        if let Some(new) = listed {
            p.line("new fingerprints (not in the baseline), largest first:")?;
            p.line(&p.grid(&fingerprints(new)))?;
        }
    }
    p.line(&format!(
        "{}: {n} queue(s), {fails} failed, {warns} warning(s)",
        if passed { "PASS" } else { "FAIL" },
    ))
}

/// The baseline check's detail when its fingerprints are listed in a table below: the count,
/// without the list (`3 new fingerprint(s) (in the first … read): 4c4b54d8 (9): …`).
fn listed_below(detail: &str) -> String {
    match detail.split_once(": ") {
        Some((head, _)) => format!("{head}: listed below"),
        None => detail.to_string(),
    }
}

/// The new fingerprints: id, count, class and template, a row each.
fn fingerprints(new: &[FingerprintCount]) -> Grid {
    let mut g = Grid::new(vec![
        Col::whole("fingerprint"),
        Col::text("template", 30, 2),
        Col::whole("class").shorten_at(55),
        Col::whole("messages"),
    ]);
    for f in new {
        let kind = f.kind.map_or_else(|| "-".to_string(), |k| k.to_string());
        g.row(vec![
            Cell::new(f.fingerprint.clone()),
            template_cell(&f.template),
            Cell::with_short(format!("{kind}/{}", f.rule), kind),
            Cell::new(f.count.to_string()),
        ]);
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baseline_detail_points_at_the_list() {
        assert_eq!(
            listed_below(
                "2 new fingerprint(s) (in the first 10 messages read): 4c4b54d8 (9): x: y"
            ),
            "2 new fingerprint(s) (in the first 10 messages read): listed below"
        );
    }
}
