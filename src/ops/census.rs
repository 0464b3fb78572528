//! A census of a queue: one pass over its messages, counting them by class and fingerprint,
//! finding the oldest, and bucketing the dead-letter arrivals over time. `inspect` (arrivals,
//! `--output prometheus`) and `check` (per-class maxima, `--baseline`, `max_age`) read it.
//!
//! Memory is bounded whatever the queue's size: at most [`MAX_GROUPS`] fingerprints (the rest
//! counted together), 48 hourly buckets, and one bucket per older day.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Duration, NaiveDate, Timelike, Utc};
use futures::StreamExt;
use serde::Serialize;

use crate::backend::{QueueBackend, ScanOptions};
use crate::classify::{Classifier, Kind, fingerprint};
use crate::error::Result;
use crate::ops::groups::{MAX_GROUPS, seen};
use crate::settings::Ctx;

/// Hours shown one by one; older arrivals are counted per day.
pub const HOURS: usize = 48;

/// The fingerprint under which the messages of groups past the cap are counted.
pub const OTHER: &str = "(other)";

/// With a baseline: the fingerprint under which the messages of *new* fingerprints (not in
/// the baseline) past the cap are counted, so that `check --baseline` still flags them.
pub const OTHER_NEW: &str = "(other new)";

#[derive(Clone, Debug, Default, Serialize)]
pub struct FingerprintCount {
    pub fingerprint: String,
    pub template: String,
    pub kind: Option<Kind>,
    pub rule: String,
    pub count: u64,
}

#[derive(Debug, Default)]
pub struct Census {
    /// Messages counted.
    pub scanned: u64,
    /// False when the scan stopped at its cap (or was interrupted), or could not see some
    /// messages (`unseen`): the counts are a sample.
    pub complete: bool,
    /// Messages the scan could not see, how many and why ([`QueueBackend::unseen`]).
    pub unseen: Vec<crate::backend::Unaccounted>,
    pub by_kind: BTreeMap<Kind, u64>,
    pub by_class: BTreeMap<(Kind, String), u64>,
    pub by_fingerprint: HashMap<String, FingerprintCount>,
    /// The earliest first-enqueue (else dead-letter) time seen.
    pub oldest: Option<DateTime<Utc>>,
    pub arrivals: Arrivals,
}

/// Dead-letter arrivals: per hour for the last 48 hours, per day before that.
#[derive(Clone, Debug, Serialize)]
pub struct Arrivals {
    /// The start of the newest hour bucket (the current hour).
    pub until: DateTime<Utc>,
    /// Oldest first: `hourly[47]` is the current hour.
    pub hourly: Vec<u64>,
    /// Older arrivals by day (UTC), oldest first.
    pub daily: BTreeMap<NaiveDate, u64>,
    /// Messages with no dead-letter or enqueue time.
    pub unknown: u64,
}

impl Default for Arrivals {
    fn default() -> Arrivals {
        Arrivals::new(Utc::now())
    }
}

impl Arrivals {
    pub fn new(now: DateTime<Utc>) -> Arrivals {
        let until = now
            .with_minute(0)
            .and_then(|t| t.with_second(0))
            .and_then(|t| t.with_nanosecond(0))
            .unwrap_or(now);
        Arrivals {
            until,
            hourly: vec![0; HOURS],
            daily: BTreeMap::new(),
            unknown: 0,
        }
    }

    pub fn add(&mut self, t: Option<DateTime<Utc>>) {
        let Some(t) = t else {
            self.unknown += 1;
            return;
        };
        let first_hour = self.until - Duration::hours(HOURS as i64 - 1);
        if t >= first_hour {
            let i = ((t - first_hour).num_hours() as usize).min(HOURS - 1);
            self.hourly[i] += 1;
        } else {
            *self.daily.entry(t.date_naive()).or_default() += 1;
        }
    }

    /// The hourly counts as a sparkline, oldest hour first.
    pub fn sparkline(&self) -> String {
        sparkline(&self.hourly)
    }
}

/// ▁▂▃▄▅▆▇█ scaled to the largest value; a zero is a space-like low bar.
pub fn sparkline(values: &[u64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = values.iter().copied().max().unwrap_or(0);
    values
        .iter()
        .map(|&v| {
            if v == 0 || max == 0 {
                ' '
            } else {
                BARS[((v * 7).div_ceil(max) as usize).min(7)]
            }
        })
        .collect()
}

impl Census {
    /// How many messages the scan could not see (see `unseen`).
    pub fn unseen_count(&self) -> u64 {
        self.unseen.iter().map(|u| u.count).sum()
    }

    /// Count one message.
    pub fn add(&mut self, m: &crate::message::Message, classifier: &Classifier) {
        self.add_against(m, classifier, None);
    }

    /// Count one message; `known`: a baseline's fingerprints, so that a new one past the cap
    /// is counted as new ([`OTHER_NEW`]) rather than lost in [`OTHER`].
    pub fn add_against(
        &mut self,
        m: &crate::message::Message,
        classifier: &Classifier,
        known: Option<&HashSet<String>>,
    ) {
        self.scanned += 1;
        let class = classifier.classify(m);
        *self.by_kind.entry(class.kind).or_default() += 1;
        let fp = fingerprint::fingerprint(m);
        let full = self.by_fingerprint.len() >= MAX_GROUPS;
        let past = |name: &str, what: &str| FingerprintCount {
            fingerprint: name.into(),
            template: format!("(messages of {what}fingerprints past the first 10,000)"),
            ..FingerprintCount::default()
        };
        let entry = if self.by_fingerprint.contains_key(&fp.id) || !full {
            self.by_fingerprint
                .entry(fp.id.clone())
                .or_insert_with(|| FingerprintCount {
                    fingerprint: fp.id,
                    template: fp.template,
                    kind: Some(class.kind),
                    rule: class.rule.clone(),
                    count: 0,
                })
        } else if known.is_some_and(|k| !k.contains(&fp.id)) {
            self.by_fingerprint
                .entry(OTHER_NEW.into())
                .or_insert_with(|| past(OTHER_NEW, "new "))
        } else {
            self.by_fingerprint
                .entry(OTHER.into())
                .or_insert_with(|| past(OTHER, ""))
        };
        entry.count += 1;
        *self.by_class.entry((class.kind, class.rule)).or_default() += 1;
        if let Some(t) = m.enqueued_at.or(m.dead_lettered_at) {
            self.oldest = Some(self.oldest.map_or(t, |o| o.min(t)));
        }
        self.arrivals.add(seen(m));
    }

    /// The fingerprints, largest first.
    pub fn fingerprints(&self) -> Vec<&FingerprintCount> {
        let mut v: Vec<_> = self.by_fingerprint.values().collect();
        v.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then(a.fingerprint.cmp(&b.fingerprint))
        });
        v
    }
}

/// Read up to `cap` messages of `b` (all with None) and count them; `known`: a baseline's
/// fingerprints (see [`Census::add_against`]).
pub async fn take(
    ctx: &Ctx,
    b: &dyn QueueBackend,
    classifier: &Classifier,
    cap: Option<u64>,
    known: Option<&HashSet<String>>,
) -> Result<Census> {
    let mut census = Census::default();
    let mut stream = b
        .scan(ScanOptions {
            limit: cap,
            page_size: 1000,
            ..ScanOptions::default()
        })
        .await?;
    // What the read does, once it has begun (`dlqctl ui` reads no source with a side effect).
    ctx.warn_reading(b);
    let mut stopped = false;
    let bar = ctx.printer.progress(None, "reading");
    while let Some(m) = stream.next().await {
        if ctx.interrupt.is_set() || cap.is_some_and(|c| census.scanned >= c) {
            stopped = true;
            break;
        }
        census.add_against(&m?, classifier, known);
        bar.inc(1);
    }
    bar.finish_and_clear();
    census.unseen = b.unseen();
    census.complete =
        !stopped && cap.is_none_or(|c| census.scanned < c) && census.unseen.is_empty();
    Ok(census)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_go_to_their_hour_or_their_day() {
        let now: DateTime<Utc> = "2026-12-04T17:48:40Z".parse().unwrap();
        let mut a = Arrivals::new(now);
        assert_eq!(
            a.until,
            "2026-12-04T17:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
        a.add(Some(now));
        a.add(Some(now - Duration::minutes(30)));
        a.add(Some(now - Duration::hours(47)));
        a.add(Some(now - Duration::hours(49)));
        a.add(Some(now - Duration::days(5)));
        a.add(None);
        assert_eq!(a.hourly[HOURS - 1], 2, "{:?}", a.hourly);
        assert_eq!(a.hourly[0], 1, "{:?}", a.hourly);
        assert_eq!(a.hourly.iter().sum::<u64>(), 3);
        assert_eq!(
            a.daily.keys().map(|d| d.to_string()).collect::<Vec<_>>(),
            ["2026-11-29", "2026-12-02"]
        );
        assert_eq!(a.unknown, 1);
    }

    #[test]
    fn a_sparkline_scales_to_the_largest() {
        assert_eq!(sparkline(&[0, 1, 4, 8]), " ▂▅█");
        assert_eq!(sparkline(&[0, 0]), "  ");
        assert_eq!(sparkline(&[]), "");
    }

    /// With a baseline, a new fingerprint past the cap is still counted as new.
    #[test]
    fn a_new_fingerprint_past_the_cap_is_counted_as_new() {
        let c = Classifier::builtin();
        let msg = |e: String| crate::message::Message {
            error: Some(crate::message::ErrorInfo {
                message: Some(e),
                ..Default::default()
            }),
            ..Default::default()
        };
        let kind = |i: usize| {
            format!(
                "kind {}{}{}",
                (b'a' + (i % 26) as u8) as char,
                (b'a' + (i / 26 % 26) as u8) as char,
                (b'a' + (i / 676 % 26) as u8) as char
            )
        };
        let known: HashSet<String> = (0..MAX_GROUPS)
            .map(|i| fingerprint::fingerprint(&msg(kind(i))).id)
            .collect();
        let mut census = Census::default();
        for i in 0..MAX_GROUPS + 3 {
            census.add_against(&msg(kind(i)), &c, Some(&known));
        }
        assert_eq!(census.by_fingerprint[OTHER_NEW].count, 3);
        assert!(!census.by_fingerprint.contains_key(OTHER));
    }
}
