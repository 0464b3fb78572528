//! Progress: a bar at a terminal; without one (a script, a CI job), a line on stderr every so
//! often, as rsync and curl print one, so that a long read is never silent for minutes.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// A bar when the length is known, else a spinner with a count.
pub(super) fn style(bar: bool) -> ProgressStyle {
    if bar {
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({rate}, eta {eta}) {prefix}")
    } else {
        ProgressStyle::with_template("{spinner} {msg} {pos} ({rate}) {prefix}")
    }
    .expect("static template")
    .with_key(
        "rate",
        |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{}", fmt_rate(s.per_sec()));
        },
    )
    .progress_chars("=> ")
}

/// Print a line about `bar` on stderr every `every` until it is finished or dropped: what it
/// does, how many so far (of how many, when known), how fast, for how long.
pub(super) fn report_lines(bar: &ProgressBar, every: Duration, err: super::Stderr) {
    let weak = bar.downgrade();
    let tick = every.min(Duration::from_millis(100));
    std::thread::spawn(move || {
        let mut last = Instant::now();
        loop {
            std::thread::sleep(tick);
            let Some(bar) = weak.upgrade() else {
                return;
            };
            if bar.is_finished() {
                return;
            }
            if last.elapsed() >= every {
                last = Instant::now();
                err.line(&line(&bar));
            }
        }
    });
}

/// `classifying: 12,000 messages of 40,000 (30%), 1,020/s, 11s`. A bar with a prefix counts
/// the messages looked at, and its prefix says what became of them (a move's tally): `redriving:
/// 3,000 of 3,000 messages examined (100%; 900 moved, 2,100 failed), 300/s, 10s`.
fn line(bar: &ProgressBar) -> String {
    let pos = bar.position();
    let tally = bar.prefix();
    if !tally.is_empty() {
        let of = match bar.length() {
            Some(n) if n > 0 => format!(
                " of {} messages examined ({}%; {tally})",
                thousands(n),
                (pos.min(n) * 100 / n)
            ),
            _ => format!(" messages examined ({tally})"),
        };
        return format!(
            "{}: {}{of}, {}, {}s",
            bar.message(),
            thousands(pos),
            fmt_rate(bar.per_sec()),
            bar.elapsed().as_secs()
        );
    }
    let of = match bar.length() {
        Some(n) if n > 0 => format!(" of {} ({}%)", thousands(n), (pos.min(n) * 100 / n)),
        _ => String::new(),
    };
    format!(
        "{}: {} {}{of}, {}, {}s",
        bar.message(),
        thousands(pos),
        if pos == 1 { "message" } else { "messages" },
        fmt_rate(bar.per_sec()),
        bar.elapsed().as_secs()
    )
}

pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Messages per second as a person reads them: `99,130/s`, `12/s`, `0.5/s`.
pub fn fmt_rate(per_sec: f64) -> String {
    if !per_sec.is_finite() || per_sec <= 0.0 {
        return "0/s".into();
    }
    if per_sec < 10.0 {
        return format!("{per_sec:.1}/s");
    }
    format!("{}/s", thousands(per_sec.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_rounded() {
        assert_eq!(fmt_rate(99_129.595_3), "99,130/s");
        assert_eq!(fmt_rate(1_234_567.0), "1,234,567/s");
        assert_eq!(fmt_rate(12.4), "12/s");
        assert_eq!(fmt_rate(0.46), "0.5/s");
        assert_eq!(fmt_rate(f64::NAN), "0/s");
    }

    #[test]
    fn a_line_says_what_how_many_and_how_fast() {
        let bar = ProgressBar::hidden();
        bar.set_length(40_000);
        bar.set_message("classifying");
        bar.inc(12_000);
        let l = line(&bar);
        assert!(
            l.starts_with("classifying: 12,000 messages of 40,000 (30%), "),
            "{l}"
        );
        // A move's bar: what was examined, and what became of it.
        let moving = ProgressBar::hidden();
        moving.set_length(3_000);
        moving.set_message("redriving");
        moving.set_prefix("900 moved, 2,100 failed");
        moving.inc(3_000);
        assert!(
            line(&moving).starts_with(
                "redriving: 3,000 of 3,000 messages examined (100%; 900 moved, 2,100 failed), "
            ),
            "{}",
            line(&moving)
        );
        let open = ProgressBar::hidden();
        open.set_message("reading");
        open.inc(7);
        assert!(
            line(&open).starts_with("reading: 7 messages, "),
            "{}",
            line(&open)
        );
    }
}
