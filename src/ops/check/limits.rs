//! The limits of `check`, one function each, held to the figures of a queue: what it reports,
//! completed by a census of its messages where one was taken.

use std::time::Duration;

use crate::backend::{Check, Status};
use crate::config::LimitsConfig;
use crate::ops::census::{self, Census, FingerprintCount};

use super::Baseline;

/// What a queue says of itself (the census fills in the count where it read everything).
pub(super) struct Figures {
    pub messages: Option<u64>,
    /// How the count was taken, where the backend says (RabbitMQ: ready plus held
    /// unacknowledged, or ready only without the management API).
    pub counted: Option<String>,
    pub in_flight: Option<u64>,
    /// First enqueue of the oldest message.
    pub oldest: Option<chrono::DateTime<chrono::Utc>>,
}

/// One limit held to a queue: the check as `check` reports it, and the same in a few
/// characters (`depth 12>10`, `age 1d 4h>1d`, `permanent 3>0`) for the UI's queues view.
#[derive(Clone, Debug)]
pub struct Verdict {
    pub check: Check,
    pub short: String,
}

impl Verdict {
    fn new(check: Check, short: impl Into<String>) -> Verdict {
        Verdict {
            check,
            short: short.into(),
        }
    }
}

/// Every limit set for the queue, in the order the report shows them, and the fingerprints the
/// baseline lacks (when there is a baseline and a census to hold to it).
pub(super) fn checks(
    l: &LimitsConfig,
    baseline: Option<&Baseline>,
    figures: &Figures,
    census: Option<&Census>,
) -> (Vec<Verdict>, Option<Vec<FingerprintCount>>) {
    let sample = census
        .filter(|c| !c.complete)
        .map(|c| match c.unseen.first() {
            Some(u) => format!(
                " (in the {} read; {} {})",
                crate::human::count(c.scanned, "message", "messages"),
                crate::ops::classify::unseen_count(u),
                u.reason
            ),
            None => format!(
                " (in the first {} read)",
                crate::human::count(c.scanned, "message", "messages")
            ),
        })
        .unwrap_or_default();
    let mut checks = Vec::new();
    let mut new_fingerprints = None;
    if let Some(max) = l.max_messages {
        checks.push(max_messages(
            max,
            figures.messages,
            figures.counted.as_deref(),
        ));
    }
    if let Some(max_age) = l.max_age {
        checks.push(max_age_check(max_age, figures, census, &sample));
    }
    if let Some(max) = l.max_in_flight {
        checks.push(max_in_flight(max, figures.in_flight));
    }
    if let Some(c) = census {
        for (name, max) in &l.classes {
            checks.push(max_class(c, name, *max, &sample));
        }
        if let Some(base) = baseline {
            let (check, new) = baseline_check(c, base, &sample);
            checks.push(check);
            new_fingerprints = Some(new);
        }
    }
    (checks, new_fingerprints)
}

/// `--max-messages`: warns where the queue does not report a count.
fn max_messages(max: u64, messages: Option<u64>, counted: Option<&str>) -> Verdict {
    match messages {
        Some(n) => limit_check(
            "max-messages",
            &format!(
                "At most {}",
                crate::human::count(max, "message", "messages")
            ),
            ("depth", n, max),
            &match counted {
                Some(how) => format!(
                    "{} (limit {max}): {how}",
                    crate::human::count(n, "message", "messages")
                ),
                None => format!(
                    "{} (limit {max})",
                    crate::human::count(n, "message", "messages")
                ),
            },
        ),
        None => Verdict::new(
            Check::new(
                "max-messages",
                &format!(
                    "At most {}",
                    crate::human::count(max, "message", "messages")
                ),
                Status::Warn,
                "the queue does not report a message count",
            ),
            "depth ?",
        ),
    }
}

/// `--max-age`: the oldest message the census saw, else the one the queue reports.
fn max_age_check(
    max_age: Duration,
    figures: &Figures,
    census: Option<&Census>,
    sample: &str,
) -> Verdict {
    let limit = crate::human::fmt_duration(max_age);
    let title = format!("No message older than {limit}");
    let oldest = census.and_then(|c| c.oldest).or(figures.oldest);
    match oldest {
        Some(t) => {
            let age = (chrono::Utc::now() - t).to_std().unwrap_or(Duration::ZERO);
            let (status, sign) = if age > max_age {
                (Status::Fail, ">")
            } else {
                (Status::Pass, "<=")
            };
            let shown =
                crate::human::human_age(chrono::Duration::from_std(age).unwrap_or_default());
            Verdict::new(
                Check::new(
                    "max-age",
                    &title,
                    status,
                    format!(
                        "oldest message {shown} old, first enqueued {}{sample}",
                        t.format("%Y-%m-%d %H:%M:%S UTC")
                    ),
                ),
                format!("age {}{sign}{limit}", shown.replace(' ', "")),
            )
        }
        None if figures.messages == Some(0) || census.is_some_and(|c| c.scanned == 0) => {
            Verdict::new(
                Check::new("max-age", &title, Status::Pass, "no messages"),
                "age -",
            )
        }
        None => Verdict::new(
            Check::new(
                "max-age",
                &title,
                Status::Warn,
                "the messages carry no enqueue or dead-letter time",
            ),
            "age ?",
        ),
    }
}

/// `--max-in-flight`: only SQS reports messages in flight; elsewhere a warning.
fn max_in_flight(max: u64, in_flight: Option<u64>) -> Verdict {
    let title = format!(
        "At most {} in flight",
        crate::human::count(max, "message", "messages")
    );
    match in_flight {
        Some(n) => limit_check(
            "max-in-flight",
            &title,
            ("in-flight", n, max),
            &format!(
                "{n} in flight (limit {max}): received by a consumer or a run, not yet deleted"
            ),
        ),
        None => Verdict::new(
            Check::new(
                "max-in-flight",
                &title,
                Status::Warn,
                "not applicable: only SQS reports messages in flight",
            ),
            "in-flight n/a",
        ),
    }
}

/// `--max-class NAME=N`: the messages of a kind (transient, permanent, unclassified) or of a
/// rule.
fn max_class(c: &Census, name: &str, max: u64, sample: &str) -> Verdict {
    let n: u64 = c
        .by_class
        .iter()
        .filter(|((kind, rule), _)| kind.to_string() == *name || rule == name)
        .map(|(_, n)| n)
        .sum();
    let v = limit_check(
        &format!("class:{name}"),
        &format!(
            "At most {max} {name} {}",
            if max == 1 { "message" } else { "messages" }
        ),
        (name, n, max),
        &format!("{n} {name} (limit {max}){sample}"),
    );
    // Within the limit on what was read, but not if the messages it could not see are of
    // this class: not a pass.
    if v.check.status == Status::Pass && n + c.unseen_count() > max {
        return unsure(v, format!("{name} {n}+?"));
    }
    v
}

/// A passing verdict that a read which could not see every message cannot give: a warning.
fn unsure(mut v: Verdict, short: String) -> Verdict {
    v.check.status = Status::Warn;
    v.short = short;
    v
}

/// `--baseline`: fails on any fingerprint the baseline has not seen, naming the first five;
/// also returns all of them.
fn baseline_check(c: &Census, base: &Baseline, sample: &str) -> (Verdict, Vec<FingerprintCount>) {
    let new: Vec<FingerprintCount> = c
        .fingerprints()
        .into_iter()
        .filter(|f| f.fingerprint != census::OTHER && !base.fingerprints.contains(&f.fingerprint))
        .cloned()
        .collect();
    let title = format!("No new kind of failure since {}", base.path);
    let check = if new.is_empty() {
        Check::new(
            "baseline",
            &title,
            Status::Pass,
            format!(
                "{} fingerprint(s), all in the baseline{sample}",
                c.by_fingerprint.len()
            ),
        )
    } else {
        let listed: Vec<String> = new
            .iter()
            .take(5)
            .map(|f| format!("{} ({}): {}", f.fingerprint, f.count, f.template))
            .collect();
        let more = if new.len() > 5 {
            format!("; and {} more", new.len() - 5)
        } else {
            String::new()
        };
        Check::new(
            "baseline",
            &title,
            Status::Fail,
            format!(
                "{} new fingerprint(s){sample}: {}{more}",
                new.len(),
                listed.join("; ")
            ),
        )
    };
    let short = format!("{} new fp", new.len());
    let v = Verdict::new(check, short);
    // No new fingerprint in what was read says nothing of what could not be read.
    let v = if v.check.status == Status::Pass && c.unseen_count() > 0 {
        unsure(v, "0 new fp+?".into())
    } else {
        v
    };
    (v, new)
}

/// A count held to its limit; `figure` is the short name, the count and the limit.
fn limit_check(id: &str, title: &str, figure: (&str, u64, u64), detail: &str) -> Verdict {
    let (name, n, max) = figure;
    let (status, sign) = if n > max {
        (Status::Fail, ">")
    } else {
        (Status::Pass, "<=")
    };
    Verdict::new(
        Check::new(id, title, status, detail),
        format!("{name} {n}{sign}{max}"),
    )
}
