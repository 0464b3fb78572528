//! What `inspect` and `verify` learn of a dead-letter topic: its partitions and the redrive
//! group's lag, its configs (retention, cleanup policy), and a sample of its oldest records.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rdkafka::consumer::BaseConsumer;
use serde_json::Value;

use super::KafkaBackend;
use crate::address::Address;
use crate::backend::{
    Check, Fact, Inspection, QueueBackend, ScanOptions, Status, Table, Term, VerifyFacts,
};
use crate::config::{QueueConfig, Retention};
use crate::error::Result;

/// How many of the oldest records `inspect` reads for the times and breakdowns.
const SAMPLE: u64 = 2000;

/// The partitions as `inspect` shows them: a row each, and the sums.
struct Partitions {
    table: Table,
    count: usize,
    /// High minus low watermark, summed.
    total: i64,
    /// Records the redrive group has not committed past, summed.
    lag: i64,
}

/// What a sample of the oldest records shows.
#[derive(Default)]
struct Sample {
    seen: u64,
    oldest: Option<DateTime<Utc>>,
    newest: Option<DateTime<Utc>>,
    by_topic: BTreeMap<String, u64>,
    by_class: BTreeMap<(String, String), u64>,
}

impl KafkaBackend {
    pub(super) async fn inspect_topic(
        &self,
        classifier: &crate::classify::Classifier,
    ) -> Result<Inspection> {
        let mut ins = Inspection {
            queue: self.shown(),
            backend: "kafka",
            ..Inspection::default()
        };
        let c = self.redrive_consumer()?;
        let parts = self.partitions_table(c.as_ref())?;
        ins.facts.extend(self.partition_facts(&parts));
        self.add_topic_configs(&mut ins).await;
        ins.tables.push(parts.table);
        // Oldest/newest and breakdowns from a bounded sample of the oldest records.
        let sample = self.sample_oldest(classifier).await?;
        sample.add_to(&mut ins);
        Ok(ins)
    }

    /// Each partition's watermarks, message count and the redrive group's committed offset and
    /// lag.
    fn partitions_table(&self, c: &BaseConsumer) -> Result<Partitions> {
        let marks = self.watermarks(c)?;
        let committed = self.committed(c)?;
        let mut total = 0i64;
        let mut lag = 0i64;
        let mut t = Table {
            title: format!("partitions (redrive group {})", self.redrive_group()),
            columns: vec![
                "partition".into(),
                "low".into(),
                "high".into(),
                "messages".into(),
                "redrive committed".into(),
                "redrive lag".into(),
            ],
            rows: Vec::new(),
        };
        for (p, lo, hi) in &marks {
            let n = hi - lo;
            total += n;
            let com = committed.get(p).copied();
            let l = hi - com.unwrap_or(*lo).max(*lo);
            lag += l;
            t.rows.push(vec![
                (*p).into(),
                (*lo).into(),
                (*hi).into(),
                n.into(),
                com.map_or(Value::Null, Value::from),
                l.into(),
            ]);
        }
        Ok(Partitions {
            table: t,
            count: marks.len(),
            total,
            lag,
        })
    }

    /// The topic, its partition count, its message count and the redrive group's lag.
    fn partition_facts(&self, parts: &Partitions) -> Vec<Fact> {
        let (total, lag) = (parts.total, parts.lag);
        vec![
            Fact::new("topic", self.k.topic.clone(), self.k.topic.clone()),
            Fact::new("partitions", parts.count as u64, parts.count.to_string()),
            Fact::new(
                "messages",
                total,
                format!("{total} (high - low watermarks; offsets can have gaps)"),
            ),
            Fact::new(
                "redrive_lag",
                lag,
                format!("{lag} not yet redriven by {}", self.redrive_group()),
            ),
        ]
    }

    /// retention.ms and cleanup.policy as the broker reports them; a note when it does not.
    async fn add_topic_configs(&self, ins: &mut Inspection) {
        match self.topic_configs(&self.k.topic).await {
            Ok(cfg) => {
                // JSON: the broker's numbers and words (null where it does not report one);
                // the table: what they mean.
                let ret = cfg.get("retention.ms").map(|v| v.trim().parse::<i64>());
                let (value, shown) = match ret {
                    Some(Ok(ms)) if ms < 0 => (Value::from(ms), "forever (-1)".to_string()),
                    Some(Ok(ms)) => (
                        Value::from(ms),
                        crate::human::fmt_duration(Duration::from_millis(ms as u64)),
                    ),
                    _ => (Value::Null, "not reported by the broker".to_string()),
                };
                ins.facts.push(Fact::new("retention_ms", value, shown));
                let cp = cfg.get("cleanup.policy").cloned();
                let shown = cp
                    .clone()
                    .unwrap_or_else(|| "delete (default; not reported)".into());
                ins.facts.push(Fact::new(
                    "cleanup_policy",
                    cp.map_or(Value::Null, Value::from),
                    shown,
                ));
            }
            Err(e) => ins.notes.push(format!("DescribeConfigs: {e}")),
        }
    }

    /// Reads the oldest `SAMPLE` records: their times, original topics and failure classes.
    async fn sample_oldest(&self, classifier: &crate::classify::Classifier) -> Result<Sample> {
        let mut s = Sample::default();
        let mut stream = self
            .scan(ScanOptions {
                limit: Some(SAMPLE),
                page_size: 500,
                ..ScanOptions::default()
            })
            .await?;
        while let Some(m) = futures::StreamExt::next(&mut stream).await {
            let m = m?;
            s.seen += 1;
            if let Some(t) = m.enqueued_at {
                s.oldest = Some(s.oldest.map_or(t, |o| o.min(t)));
                s.newest = Some(s.newest.map_or(t, |n| n.max(t)));
            }
            *s.by_topic
                .entry(
                    m.source
                        .clone()
                        .unwrap_or_else(|| "(no dead-letter headers)".into()),
                )
                .or_default() += 1;
            let c = classifier.classify(&m);
            *s.by_class.entry((c.kind.to_string(), c.rule)).or_default() += 1;
        }
        Ok(s)
    }

    pub(super) async fn verify_topic(&self, cfg: &QueueConfig) -> Result<VerifyFacts> {
        let mut f = VerifyFacts {
            shorten: Some(format!(
                "the dead-letter topic's retention.ms: `kafka-configs --bootstrap-server … --alter --entity-type topics --entity-name {} --add-config retention.ms=MILLISECONDS`",
                self.k.topic
            )),
            ..VerifyFacts::default()
        };
        f.checks.push(Check::new(
            "kafka-dlt-exists",
            "The dead-letter topic exists",
            Status::Pass,
            format!(
                "{} with {} partition(s)",
                self.k.topic,
                self.partitions.len()
            ),
        ));
        match self.topic_configs(&self.k.topic).await {
            Ok(c) => {
                f.checks.push(cleanup_policy_check(&c));
                let (check, term) = self.dlt_retention(&c);
                f.checks.push(check);
                f.redelivery.push(term);
            }
            Err(e) => f.checks.push(Check::new(
                "kafka-retention-readable",
                "retention.ms is readable",
                Status::Fail,
                e.to_string(),
            )),
        }
        self.add_source_retention(cfg, &mut f).await;
        Ok(f)
    }

    /// Whether the broker reports the dead-letter topic's retention.ms, and the term it adds
    /// (the broker default of 7 days where it does not).
    fn dlt_retention(&self, c: &HashMap<String, String>) -> (Check, Term) {
        match retention_ms(c) {
            Some(v) => (
                Check::new(
                    "kafka-retention-readable",
                    "retention.ms is readable",
                    Status::Pass,
                    format!("{}: retention.ms={v}", self.k.topic),
                ),
                Term {
                    label: "DLT retention".into(),
                    value: retention(v),
                    source: format!("retention.ms of {}", self.k.topic),
                },
            ),
            None => (
                Check::new(
                    "kafka-retention-readable",
                    "retention.ms is readable",
                    Status::Warn,
                    format!(
                        "the broker did not report retention.ms for {}; counted as the broker default of 7d",
                        self.k.topic
                    ),
                ),
                Term {
                    label: "DLT retention".into(),
                    value: Retention::For(Duration::from_secs(7 * 86400)),
                    source: "broker default (not reported)".into(),
                },
            ),
        }
    }

    /// The source topic's retention, first in the arithmetic, when dlqctl.toml names the
    /// source; otherwise, or where it cannot be read, a check says so.
    async fn add_source_retention(&self, cfg: &QueueConfig, f: &mut VerifyFacts) {
        let source = match &cfg.source {
            Some(s) => match Address::parse(s) {
                Ok(Address::Kafka(k)) => Some(k.topic),
                _ => None,
            },
            None => None,
        };
        let Some(src) = source else {
            f.checks.push(Check::new(
                "kafka-source-topic",
                "The source topic is known",
                Status::Warn,
                "no `source` in dlqctl.toml: the source topic's retention is not in the arithmetic",
            ));
            return;
        };
        match self.topic_configs(&src).await {
            Ok(c) => match retention_ms(&c) {
                Some(v) => f.redelivery.insert(
                    0,
                    Term {
                        label: "source topic retention".into(),
                        value: retention(v),
                        source: format!("retention.ms of {src}"),
                    },
                ),
                None => f.checks.push(Check::new(
                    "kafka-retention-readable",
                    "retention.ms is readable",
                    Status::Warn,
                    format!("the broker did not report retention.ms for {src}"),
                )),
            },
            Err(e) => f.checks.push(Check::new(
                "kafka-source-topic",
                "The source topic is readable",
                Status::Fail,
                e.to_string(),
            )),
        }
    }
}

/// A topic's retention.ms, where the broker reports it.
fn retention_ms(cfg: &HashMap<String, String>) -> Option<i64> {
    cfg.get("retention.ms").and_then(|v| v.parse::<i64>().ok())
}

/// retention.ms as a retention: negative is forever.
fn retention(ms: i64) -> Retention {
    if ms < 0 {
        Retention::Forever
    } else {
        Retention::For(Duration::from_millis(ms as u64))
    }
}

/// Compaction keeps only the latest record per key, so it loses dead letters.
fn cleanup_policy_check(c: &HashMap<String, String>) -> Check {
    let policy = c
        .get("cleanup.policy")
        .cloned()
        .unwrap_or_else(|| "delete".into());
    match policy.as_str() {
        p if p.contains("compact") && p.contains("delete") => Check::new(
            "kafka-cleanup-policy",
            "cleanup.policy keeps dead letters",
            Status::Warn,
            format!(
                "cleanup.policy={p}: compaction keeps only the latest record per key, so dead letters with a repeated key are lost"
            ),
        ),
        p if p.contains("compact") => Check::new(
            "kafka-cleanup-policy",
            "cleanup.policy keeps dead letters",
            Status::Fail,
            format!(
                "cleanup.policy={p}: compaction deletes every dead letter but the latest per key"
            ),
        ),
        p => Check::new(
            "kafka-cleanup-policy",
            "cleanup.policy keeps dead letters",
            Status::Pass,
            format!("cleanup.policy={p}"),
        ),
    }
}

impl Sample {
    /// The oldest and newest times as facts, the breakdowns by original topic and by failure
    /// class as tables (titled as a sample when the sample was full).
    fn add_to(self, ins: &mut Inspection) {
        let (oldest, newest) = (self.oldest, self.newest);
        ins.facts.push(Fact::new(
            "oldest",
            oldest.map(|t| t.to_rfc3339()),
            oldest.map_or("-".into(), |t| {
                t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
            }),
        ));
        ins.facts.push(Fact::new(
            "newest",
            newest.map(|t| t.to_rfc3339()),
            newest.map_or("-".into(), |t| {
                t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
            }),
        ));
        let sampled = if self.seen >= SAMPLE {
            format!(" (oldest {SAMPLE})")
        } else {
            String::new()
        };
        ins.tables.push(Table {
            title: format!("by original topic{sampled}"),
            columns: vec!["original topic".into(), "messages".into()],
            rows: self
                .by_topic
                .into_iter()
                .map(|(k, v)| vec![k.into(), v.into()])
                .collect(),
        });
        ins.tables.push(Table {
            title: format!("by failure class{sampled}"),
            columns: vec!["class".into(), "rule".into(), "messages".into()],
            rows: self
                .by_class
                .into_iter()
                .map(|((k, r), v)| vec![k.into(), r.into(), v.into()])
                .collect(),
        });
    }
}
