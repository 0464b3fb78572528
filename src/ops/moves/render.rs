//! The summary at the end of a run: a few lines at a terminal, one JSON object otherwise
//! (docs/json.md).

use super::MoveSummary;
use crate::error::Result;
use crate::settings::Ctx;

pub(super) fn render(ctx: &Ctx, s: &MoveSummary) -> Result<()> {
    let p = &ctx.printer;
    if !p.is_table() {
        return p.json(s);
    }
    for d in &s.transform_preview {
        p.write(d)?;
    }
    let verb = match (s.dry_run, s.operation.as_str()) {
        (true, _) => "would send",
        (false, "replay") => "copied",
        (false, "purge") if s.destinations.is_empty() => "removed",
        (false, "purge") => "archived and removed",
        (false, _) => "moved",
    };
    p.line(&format!(
        "{verb} {} · skipped {} (filter) · failed {} · examined {} · {:.1}s{}",
        s.moved,
        s.skipped,
        s.failed,
        s.examined,
        s.elapsed_seconds,
        if s.dry_run {
            String::new()
        } else {
            format!(" ({:.0}/s)", s.messages_per_second)
        }
    ))?;
    for d in &s.destinations {
        p.line(&format!("  → {}  {}", d.to, d.messages))?;
    }
    if s.held > 0 {
        p.line(&format!(
            "held {} (redriven --max-redrives times already; left where they were: look at them with `dlqctl peek QUEUE --where '.attrs[\"dlqctl-redrive-count\"]'`)",
            s.held
        ))?;
    }
    if s.parked > 0 {
        p.line(&format!(
            "parked {} (redriven --max-redrives times already; moved to --park)",
            s.parked
        ))?;
    }
    if !s.failures.is_empty() {
        p.line("not sent (left where they were):")?;
        for f in &s.failures {
            p.line(&format!(
                "  {:>6}  {}  (e.g. {})",
                f.count,
                f.reason,
                f.ids.join(", ")
            ))?;
        }
    }
    if s.interrupted {
        p.line(if s.operation == "replay" {
            "interrupted: nothing was removed; the copies sent so far stay in the target"
        } else {
            "interrupted: every message is in the dead-letter queue or in the target; re-run to continue"
        })?;
    }
    if let Some(a) = &s.aborted {
        p.line(&format!("stopped: {a}"))?;
    }
    if s.dry_run {
        p.line("dry run: nothing was sent or removed")?;
    }
    Ok(())
}
