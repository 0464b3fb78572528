//! The summary at the end of a run: a few lines at a terminal, one JSON object otherwise
//! (docs/json.md).

use super::MoveSummary;
use crate::error::Result;
use crate::message::REDRIVE_COUNT_ATTRIBUTE;
use crate::settings::Ctx;

pub(super) fn render(ctx: &Ctx, s: &MoveSummary) -> Result<()> {
    let p = &ctx.printer;
    if !p.is_table() {
        return p.json(s);
    }
    text(p, s)
}

/// The command that shows the messages a run held: those redriven `--max-redrives` times.
fn held_peek(s: &MoveSummary) -> String {
    let test = held_test(s.max_redrives.unwrap_or(1));
    crate::output::command_line(&["dlqctl", "peek", &s.from, "--where", &test])
}

/// The `--where` test that selects messages redriven at least `n` times (the loop guard's
/// count is a string attribute, absent before the first redrive).
fn held_test(n: u32) -> String {
    format!(r#"(.attrs["{REDRIVE_COUNT_ATTRIBUTE}"] // "0" | tonumber) >= {n}"#)
}

/// The summary as a table-mode run prints it: each sentence wrapped to stdout's width.
fn text(p: &crate::output::Printer, s: &MoveSummary) -> Result<()> {
    for d in &s.transform_preview {
        p.write(d)?;
    }
    summary_line(p, s)?;
    if let Some(why) = removed_nothing(s) {
        p.line(&p.prose(why))?;
    }
    let archived = !s.destinations.is_empty();
    for d in &s.destinations {
        p.line(&p.para(&format!("  {} → ", d.messages), &d.to))?;
    }
    if s.copied_not_removed > 0 {
        p.line(&p.prose(&format!(
            "copied but not removed {} (their copies are in the target and the originals still in the source: a re-run may send them again, duplicates with the same stable ids; listed below)",
            s.copied_not_removed
        )))?;
    }
    if s.held > 0 {
        p.line(&p.prose(&format!(
            "held {} (redriven --max-redrives times already; left where they were: look at them with `{}`)",
            s.held,
            held_peek(s)
        )))?;
    }
    if s.committed_past > 0 {
        p.line(&p.prose(&format!(
            "{} {} (skipped, but before a record moved from their partition): they {} be redriven; they stay in the topic until its retention (`dlqctl replay` still reads them)",
            if s.dry_run {
                "would commit past"
            } else {
                "committed past"
            },
            s.committed_past,
            if s.dry_run { "would not" } else { "will not" }
        )))?;
    }
    if s.parked > 0 {
        p.line(&p.prose(&format!(
            "parked {} (redriven --max-redrives times already; moved to --park)",
            s.parked
        )))?;
    }
    if !s.failures.is_empty() {
        p.line("not sent (left where they were):")?;
        for f in &s.failures {
            // Ids and reasons carry anyone's bytes: control characters escaped.
            p.line(&crate::text::escape_controls(&format!(
                "  {:>6}  {}  (e.g. {})",
                f.count,
                f.reason,
                f.ids.join(", ")
            )))?;
        }
    }
    if !s.ids_not_found.is_empty() {
        let n = s.ids_not_found.len() as u64;
        p.line(&p.prose(&format!(
            "not found: {} (--id): no message read has it as its stable or native id: {}",
            crate::human::count(n, "listed id", "listed ids"),
            s.ids_not_found.join(", ")
        )))?;
    }
    for u in &s.unaccounted {
        // Where the summary cannot say that everything selected was moved: how many, why.
        p.line(&p.prose(&format!(
            "left {}{}: {}{}",
            if u.approximate { "about " } else { "" },
            u.count,
            u.reason,
            u.until
                .map(|t| format!(" (until {} UTC at the latest)", t.format("%H:%M:%S")))
                .unwrap_or_default()
        )))?;
    }
    if s.interrupted {
        p.line(&p.prose(match s.operation.as_str() {
            "replay" => "interrupted: nothing was removed; the copies sent so far stay in the target",
            "purge" if archived => {
                "interrupted: every message is in the dead-letter queue or in the archive; re-run to continue"
            }
            "purge" => "interrupted: the messages not yet removed are still in the dead-letter queue; re-run to continue",
            _ => "interrupted: every message is in the dead-letter queue or in the target; re-run to continue",
        }))?;
    }
    if let Some(a) = &s.aborted {
        p.line(&p.prose(&format!("stopped: {a}")))?;
    }
    for n in &s.notes {
        p.line(&p.prose(n))?;
    }
    if s.dry_run {
        p.line("dry run: nothing was sent or removed")?;
    }
    Ok(())
}

/// Why a purge that ended well removed nothing, said plainly (`removed 0` read like a
/// failure): None where it removed something, or the lines below say why not (failures,
/// messages left, an interrupt, an error).
fn removed_nothing(s: &MoveSummary) -> Option<&'static str> {
    if s.operation != "purge" || s.dry_run || s.moved > 0 || s.interrupted || s.aborted.is_some() {
        return None;
    }
    if s.examined == 0 {
        Some("nothing to purge: the dead-letter queue held no message to read; nothing was removed")
    } else if s.matched == 0 {
        Some("nothing matched the filters: nothing was removed")
    } else {
        None
    }
}

/// The first line: what was done (or would be), to how many, how fast.
fn summary_line(p: &crate::output::Printer, s: &MoveSummary) -> Result<()> {
    let archived = !s.destinations.is_empty();
    let verb = match (s.dry_run, s.operation.as_str()) {
        (true, "replay") => "would copy",
        (true, "purge") if archived => "would archive and remove",
        (true, "purge") => "would remove",
        (true, _) => "would move",
        (false, "replay") => "copied",
        (false, "purge") if archived => "archived and removed",
        (false, "purge") => "removed",
        (false, _) => "moved",
    };
    // A rate says something only when something moved, over a time long enough to measure.
    let rate = if s.dry_run || s.moved == 0 || s.elapsed_seconds < 0.05 {
        String::new()
    } else {
        format!(" ({})", crate::output::fmt_rate(s.messages_per_second))
    };
    let done = if s.moved == 0 && !s.dry_run && s.operation == "purge" {
        "removed nothing".to_string()
    } else {
        format!("{verb} {}", s.moved)
    };
    p.line(&p.facts(&[
        done,
        format!(
            "skipped {} ({})",
            s.skipped,
            match s.skipped_because {
                "" => "filter",
                why => why,
            }
        ),
        format!("failed {}", s.failed),
        format!("examined {} in {:.1}s{rate}", s.examined, s.elapsed_seconds),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{OutputFormat, Printer};

    /// A slow run (SQS: a few messages a second) says its rate with a decimal, not `(0/s)`; a
    /// dry run says what it would do in the run's own words.
    #[test]
    fn a_summary_says_its_rate_and_its_verb() {
        let (p, out) = Printer::capture(OutputFormat::Table);
        let s = MoveSummary {
            operation: "redrive".into(),
            moved: 3,
            examined: 3,
            elapsed_seconds: 12.0,
            messages_per_second: 0.3,
            ..MoveSummary::default()
        };
        line(&p, &s);
        let dry = MoveSummary {
            operation: "purge".into(),
            dry_run: true,
            moved: 7,
            examined: 7,
            ..MoveSummary::default()
        };
        line(&p, &dry);
        let edit = MoveSummary {
            operation: "redrive".into(),
            moved: 1,
            skipped: 5,
            examined: 6,
            skipped_because: "not the message edited",
            ..MoveSummary::default()
        };
        line(&p, &edit);
        let text = out.text();
        assert!(
            text.starts_with("moved 3 · skipped 0 (filter) · "),
            "{text}"
        );
        assert!(
            text.contains("\nmoved 1 · skipped 5 (not the message edited) · "),
            "{text}"
        );
        assert!(text.contains("examined 3 in 12.0s"), "{text}");
        assert!(text.contains("12.0s (0.3/s)"), "{text}");
        assert!(text.contains("\nwould remove 7 · "), "{text}");
    }

    /// At 80 columns every sentence of a summary wraps at spaces (a command in backticks
    /// whole), the lines after the first indented: the committed-past line, what was left and
    /// why, the interrupt, a note.
    #[test]
    fn a_summary_at_80_columns_wraps_each_sentence() {
        let (p, out) = Printer::capture(OutputFormat::Table);
        let p = p.with_width(Some(80));
        let s = MoveSummary {
            operation: "redrive".into(),
            moved: 6,
            skipped: 6,
            examined: 12,
            elapsed_seconds: 1.1,
            messages_per_second: 5.5,
            committed_past: 4,
            interrupted: true,
            unaccounted: vec![crate::backend::Unaccounted {
                count: 3,
                approximate: true,
                reason: "received by this run and not deleted (the delete was not confirmed): they come back to the dead-letter queue when their visibility timeout ends".into(),
                until: None,
            }],
            notes: vec!["the redrive group has consumed everything in the topic: nothing is pending (reset its offsets to redrive again)".into()],
            ..MoveSummary::default()
        };
        text(&p, &s).unwrap();
        let text = out.text();
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        assert!(text.contains("\ncommitted past 4 (skipped,"), "{text}");
        assert!(text.contains("`dlqctl replay`"), "{text}");
        assert!(text.contains("\nleft about 3: received"), "{text}");
        assert!(text.contains("\ninterrupted: every message"), "{text}");
        assert!(
            text.lines().filter(|l| l.starts_with("  ")).count() >= 4,
            "{text}"
        );
    }

    /// The held line's command runs as it is printed: its `--where` is a test (not the count
    /// itself, which a `--where` refuses) and selects exactly what the loop guard held.
    #[test]
    fn the_held_line_names_a_peek_that_selects_the_held_messages() {
        let (p, out) = Printer::capture(OutputFormat::Table);
        let s = MoveSummary {
            operation: "redrive".into(),
            from: "sqs://orders-dlq".into(),
            held: 2,
            max_redrives: Some(3),
            ..MoveSummary::default()
        };
        text(&p, &s).unwrap();
        let text = out.text().replace('\n', " ");
        let command = text
            .split('`')
            .nth(1)
            .unwrap_or_default()
            .replace("   ", " ");
        let words = shlex::split(&command).unwrap_or_default();
        assert_eq!(words[..3], ["dlqctl", "peek", "sqs://orders-dlq"], "{text}");
        assert_eq!(words[3], "--where", "{text}");
        let code = &words[4];
        let q = crate::query::Query::compile("--where", code).unwrap();
        let classifier = crate::classify::Classifier::builtin();
        let with = |count: Option<&str>| {
            let mut m = crate::message::Message::default();
            if let Some(c) = count {
                m.attributes.push(crate::message::Attribute {
                    name: REDRIVE_COUNT_ATTRIBUTE.into(),
                    value: crate::message::AttrValue::from_bytes(Some(c.as_bytes())),
                });
            }
            q.test(&m, chrono::Utc::now(), &classifier)
        };
        use crate::query::Test;
        assert!(
            matches!(with(Some("3")), Test::True),
            "{:?}",
            with(Some("3"))
        );
        assert!(matches!(with(Some("4")), Test::True));
        assert!(matches!(with(Some("2")), Test::False));
        assert!(matches!(with(None), Test::False), "{:?}", with(None));
    }

    /// Copies accepted whose originals stayed (a settle that failed as the run stopped) are
    /// said in their own line, not folded into `moved`.
    #[test]
    fn the_summary_says_what_was_copied_but_not_removed() {
        let (p, out) = Printer::capture(OutputFormat::Table);
        let s = MoveSummary {
            operation: "redrive".into(),
            moved: 100,
            failed: 10,
            copied_not_removed: 10,
            examined: 110,
            aborted: Some("amqp://…: the AMQP connection was closed".into()),
            ..MoveSummary::default()
        };
        text(&p, &s).unwrap();
        let text = out.text().replace('\n', " ");
        assert!(text.starts_with("moved 100 · "), "{text}");
        assert!(
            text.contains("copied but not removed 10 (their copies are in the target"),
            "{text}"
        );
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["copied_not_removed"], 10);
        let clean = serde_json::to_value(MoveSummary::default()).unwrap();
        assert!(
            clean.get("copied_not_removed").is_none(),
            "present when not 0"
        );
    }

    fn line(p: &Printer, s: &MoveSummary) {
        summary_line(p, s).unwrap();
    }
}
