//! What `inspect` and `verify` learn of a dead-letter queue: its attributes, its own
//! RedrivePolicy, the source queues that point at it and their retention and visibility.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_sqs::types::QueueAttributeName;
use serde_json::Value;

use super::record::millis;
use super::{SqsBackend, native, sdk_err};
use crate::address::Address;
use crate::backend::{Check, Fact, Inspection, Status, Table, Term, VerifyFacts};
use crate::config::{QueueConfig, Retention};
use crate::error::Result;

fn secs(v: Option<u64>) -> String {
    v.map(|s| crate::human::fmt_duration(Duration::from_secs(s)))
        .unwrap_or_else(|| "-".into())
}

impl SqsBackend {
    /// The queues whose RedrivePolicy points here (paginated).
    pub(super) async fn source_urls(&self) -> Result<&Vec<String>> {
        self.sources
            .get_or_try_init(|| async {
                let mut out = Vec::new();
                let mut token: Option<String> = None;
                loop {
                    let r = self
                        .client
                        .list_dead_letter_source_queues()
                        .queue_url(&self.url)
                        .max_results(1000)
                        .set_next_token(token.clone())
                        .send()
                        .await
                        .map_err(|e| sdk_err(&self.shown(), e))?;
                    out.extend(r.queue_urls().iter().cloned());
                    token = r.next_token().map(str::to_string);
                    if token.is_none() {
                        break;
                    }
                }
                Ok(out)
            })
            .await
    }

    pub(super) async fn queue_attrs(&self, url: &str) -> Result<HashMap<String, String>> {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::All)
            .send()
            .await
            .map_err(|e| sdk_err(url, e))?;
        Ok(out
            .attributes()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.as_str().to_string(), v.clone()))
                    .collect()
            })
            .unwrap_or_default())
    }

    pub(super) async fn inspect_queue(
        &self,
        _classifier: &crate::classify::Classifier,
    ) -> Result<Inspection> {
        let mut ins = Inspection {
            queue: self.shown(),
            backend: "sqs",
            ..Inspection::default()
        };
        ins.facts.extend(self.count_facts());
        ins.facts.extend(self.setting_facts());
        self.add_redrive_policies(&mut ins);
        self.add_sources(&mut ins).await;
        self.add_move_tasks(&mut ins).await;
        ins.notes.push("SQS reports no message ages without receiving; `dlqctl peek` shows them (and counts as a receive)".into());
        Ok(ins)
    }

    /// The queue's identity and its approximate counts: visible, in flight, delayed, and their
    /// sum.
    fn count_facts(&self) -> Vec<Fact> {
        let n = |k: &str| self.attr_u64(k).unwrap_or(0);
        let mut messages = Fact::new(
            "messages",
            n("ApproximateNumberOfMessages")
                + n("ApproximateNumberOfMessagesNotVisible")
                + n("ApproximateNumberOfMessagesDelayed"),
            "(approximate) visible + in flight + delayed",
        );
        messages.display = format!("{} (approximate)", messages.value);
        vec![
            Fact::new("queue_url", self.url.clone(), self.url.clone()),
            Fact::new("arn", self.arn.clone(), self.arn.clone()),
            Fact::new(
                "type",
                if self.fifo { "fifo" } else { "standard" },
                if self.fifo { "FIFO" } else { "standard" },
            ),
            messages,
            Fact::new(
                "visible",
                n("ApproximateNumberOfMessages"),
                n("ApproximateNumberOfMessages").to_string(),
            ),
            Fact::new(
                "in_flight",
                n("ApproximateNumberOfMessagesNotVisible"),
                n("ApproximateNumberOfMessagesNotVisible").to_string(),
            ),
            Fact::new(
                "delayed",
                n("ApproximateNumberOfMessagesDelayed"),
                n("ApproximateNumberOfMessagesDelayed").to_string(),
            ),
        ]
    }

    /// Retention, visibility timeout, size limit, content-based deduplication (FIFO) and the
    /// creation time.
    fn setting_facts(&self) -> Vec<Fact> {
        let mut facts = vec![
            Fact::new(
                "retention_seconds",
                self.attr_u64("MessageRetentionPeriod"),
                secs(self.attr_u64("MessageRetentionPeriod")),
            ),
            Fact::new(
                "visibility_timeout_seconds",
                self.attr_u64("VisibilityTimeout"),
                secs(self.attr_u64("VisibilityTimeout")),
            ),
            Fact::new(
                "maximum_message_size",
                self.max_size as u64,
                format!("{} bytes", self.max_size),
            ),
        ];
        if self.fifo {
            let cbd = self
                .attrs
                .get("ContentBasedDeduplication")
                .is_some_and(|v| v == "true");
            facts.push(Fact::new(
                "content_based_deduplication",
                cbd,
                cbd.to_string(),
            ));
        }
        if let Some(t) = millis(
            self.attrs
                .get("CreatedTimestamp")
                .map(|s| format!("{s}000"))
                .as_deref(),
        ) {
            facts.push(Fact::new(
                "created",
                t.to_rfc3339(),
                t.format("%Y-%m-%d %H:%M UTC").to_string(),
            ));
        }
        facts
    }

    /// The queue's own RedrivePolicy (with a note: reading can push messages onward) and its
    /// RedriveAllowPolicy.
    fn add_redrive_policies(&self, ins: &mut Inspection) {
        match self.own_redrive_policy() {
            Some(p) => {
                ins.facts
                    .push(Fact::new("own_redrive_policy", p.clone(), p.to_string()));
                ins.notes.push("this queue has its own RedrivePolicy: reading it (peek, tail, export, classify) can push messages onward, so dlqctl refuses without --allow-onward-redrive".into());
            }
            None => ins
                .facts
                .push(Fact::new("own_redrive_policy", Value::Null, "none")),
        }
        if let Some(p) = self.attrs.get("RedriveAllowPolicy") {
            ins.facts.push(Fact::new(
                "redrive_allow_policy",
                serde_json::from_str::<Value>(p).unwrap_or(Value::String(p.clone())),
                p.clone(),
            ));
        }
    }

    /// The table of source queues, with their maxReceiveCount, retention, visibility and type;
    /// a note when there are none or they cannot be listed.
    async fn add_sources(&self, ins: &mut Inspection) {
        let mut sources = Table {
            title: "source queues (RedrivePolicy pointing here)".into(),
            columns: vec![
                "queue".into(),
                "maxReceiveCount".into(),
                "retention".into(),
                "visibility".into(),
                "type".into(),
            ],
            rows: Vec::new(),
        };
        match self.source_urls().await {
            Ok(urls) => {
                for u in urls {
                    let a = self.queue_attrs(u).await.unwrap_or_default();
                    let policy: Value = a
                        .get("RedrivePolicy")
                        .and_then(|p| serde_json::from_str(p).ok())
                        .unwrap_or(Value::Null);
                    sources.rows.push(vec![
                        u.clone().into(),
                        policy["maxReceiveCount"].clone(),
                        secs(a.get("MessageRetentionPeriod").and_then(|v| v.parse().ok())).into(),
                        secs(a.get("VisibilityTimeout").and_then(|v| v.parse().ok())).into(),
                        (if a.get("FifoQueue").is_some_and(|v| v == "true") {
                            "FIFO"
                        } else {
                            "standard"
                        })
                        .into(),
                    ]);
                }
                if urls.is_empty() {
                    ins.notes
                        .push("no queue's RedrivePolicy points here".into());
                }
            }
            Err(e) => ins.notes.push(format!("ListDeadLetterSourceQueues: {e}")),
        }
        ins.tables.push(sources);
    }

    /// The native move tasks: a table when there are any, else a fact saying none run.
    async fn add_move_tasks(&self, ins: &mut Inspection) {
        match native::list_tasks(&self.client, &self.arn).await {
            Ok(tasks) if !tasks.is_empty() => ins.tables.push(native::tasks_table(&tasks)),
            Ok(_) => ins.facts.push(Fact::new(
                "move_tasks",
                Value::Array(vec![]),
                "none running",
            )),
            Err(e) => ins.notes.push(format!("native move tasks: {e}")),
        }
    }

    pub(super) async fn verify_queue(&self, cfg: &QueueConfig) -> Result<VerifyFacts> {
        let mut facts = VerifyFacts {
            shorten: Some(
                "the DLQ's MessageRetentionPeriod: `aws sqs set-queue-attributes --queue-url … --attributes MessageRetentionPeriod=SECONDS`".into(),
            ),
            ..VerifyFacts::default()
        };
        let dlq_ret = self.attr_u64("MessageRetentionPeriod").unwrap_or(345_600);
        let sources = self.verified_sources(cfg).await?;
        if sources.is_empty() {
            facts.checks.push(Check::new("sqs-redrive-policy", "A source's RedrivePolicy points at this DLQ", Status::Fail, format!("no queue's RedrivePolicy targets {} (set `source` in dlqctl.toml or attach a RedrivePolicy)", self.arn)));
        }
        let mut longest_src = 0u64;
        for u in &sources {
            let a = self.queue_attrs(u).await?;
            let src = Source {
                name: u.rsplit('/').next().unwrap_or(u),
                retention: a
                    .get("MessageRetentionPeriod")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(345_600),
                attrs: &a,
            };
            longest_src = longest_src.max(src.retention);
            facts.checks.extend(self.policy_checks(&src));
            facts.checks.push(self.fifo_match_check(&src));
            if !self.fifo {
                facts.checks.push(retention_check(&src, dlq_ret));
            }
            if let Some(h) = cfg.handler_timeout {
                facts.checks.push(visibility_check(&src, h));
            }
        }
        facts.redelivery = self.redelivery_terms(longest_src, dlq_ret);
        Ok(facts)
    }

    /// The source queues to verify: the configured `source` (looked up by name when it has no
    /// URL), else every queue whose RedrivePolicy points here.
    async fn verified_sources(&self, cfg: &QueueConfig) -> Result<Vec<String>> {
        Ok(match &cfg.source {
            Some(s) => match Address::parse(s) {
                Ok(Address::Sqs(a)) => match a.url {
                    Some(u) => vec![u],
                    None => {
                        let r = self
                            .client
                            .get_queue_url()
                            .queue_name(&a.name)
                            .send()
                            .await
                            .map_err(|e| sdk_err(s, e))?;
                        r.queue_url()
                            .map(|u| vec![u.to_string()])
                            .unwrap_or_default()
                    }
                },
                _ => Vec::new(),
            },
            None => self.source_urls().await?.clone(),
        })
    }

    /// Whether the source's RedrivePolicy points here and, when it does, whether its
    /// maxReceiveCount leaves room for retries.
    fn policy_checks(&self, src: &Source) -> Vec<Check> {
        let name = src.name;
        let policy: Option<Value> = src
            .attrs
            .get("RedrivePolicy")
            .and_then(|p| serde_json::from_str(p).ok());
        match &policy {
            Some(p) if p["deadLetterTargetArn"].as_str() == Some(self.arn.as_str()) => vec![
                Check::new(
                    "sqs-redrive-policy",
                    "The source's RedrivePolicy points at this DLQ",
                    Status::Pass,
                    format!("{name} → {}", self.name),
                ),
                max_receive_count_check(name, p),
            ],
            Some(p) => vec![Check::new(
                "sqs-redrive-policy",
                "The source's RedrivePolicy points at this DLQ",
                Status::Fail,
                format!(
                    "{name}'s RedrivePolicy targets {}, not {}",
                    p["deadLetterTargetArn"].as_str().unwrap_or("?"),
                    self.arn
                ),
            )],
            None => vec![Check::new(
                "sqs-redrive-policy",
                "The source's RedrivePolicy points at this DLQ",
                Status::Fail,
                format!("{name} has no RedrivePolicy"),
            )],
        }
    }

    /// SQS dead-letters FIFO into FIFO and standard into standard only.
    fn fifo_match_check(&self, src: &Source) -> Check {
        let src_fifo = src.attrs.get("FifoQueue").is_some_and(|v| v == "true");
        if src_fifo == self.fifo {
            Check::new(
                "sqs-fifo-match",
                "Source and DLQ are the same type",
                Status::Pass,
                format!("both {}", if self.fifo { "FIFO" } else { "standard" }),
            )
        } else {
            Check::new(
                "sqs-fifo-match",
                "Source and DLQ are the same type",
                Status::Fail,
                format!(
                    "{} is {} but {} is {}: SQS requires FIFO with FIFO",
                    src.name,
                    if src_fifo { "FIFO" } else { "standard" },
                    self.name,
                    if self.fifo { "FIFO" } else { "standard" }
                ),
            )
        }
    }

    /// The arithmetic: standard queues keep the first enqueue time (a copy can arrive until
    /// the longer of the two retentions ends); FIFO queues reset it (they add up).
    fn redelivery_terms(&self, longest_src: u64, dlq_ret: u64) -> Vec<Term> {
        if self.fifo {
            vec![
                Term {
                    label: "source retention".into(),
                    value: Retention::For(Duration::from_secs(longest_src)),
                    source: "MessageRetentionPeriod of the source".into(),
                },
                Term {
                    label: "DLQ retention (FIFO: counted from dead-lettering)".into(),
                    value: Retention::For(Duration::from_secs(dlq_ret)),
                    source: "MessageRetentionPeriod of the DLQ".into(),
                },
            ]
        } else {
            vec![Term {
                label: "max(source, DLQ) retention (standard: counted from first enqueue)".into(),
                value: Retention::For(Duration::from_secs(longest_src.max(dlq_ret))),
                source: "MessageRetentionPeriod of source and DLQ".into(),
            }]
        }
    }
}

/// A source queue as verify sees it.
struct Source<'a> {
    /// The last part of its URL.
    name: &'a str,
    /// MessageRetentionPeriod in seconds (SQS's default of four days when absent).
    retention: u64,
    attrs: &'a HashMap<String, String>,
}

/// FAIL at a maxReceiveCount of 1 (one receive that never reached a consumer dead-letters),
/// WARN at 2-3.
fn max_receive_count_check(name: &str, policy: &Value) -> Check {
    let mrc = policy["maxReceiveCount"]
        .as_u64()
        .or_else(|| {
            policy["maxReceiveCount"]
                .as_str()
                .and_then(|s| s.parse().ok())
        })
        .unwrap_or(0);
    let (st, why) = match mrc {
        0 | 1 => (
            Status::Fail,
            "a message can be dead-lettered after one receive that never reached a consumer",
        ),
        2..=3 => (
            Status::Warn,
            "few retries: transient failures may be dead-lettered",
        ),
        _ => (Status::Pass, "room for retries"),
    };
    Check::new(
        "sqs-max-receive-count",
        "maxReceiveCount leaves room for retries (FAIL at 1, WARN at 2-3)",
        st,
        format!("{name}: maxReceiveCount {mrc}: {why}"),
    )
}

/// Standard queues only: a dead letter keeps its first enqueue time, so a DLQ that keeps
/// messages for less than the source lets them expire soon after they arrive.
fn retention_check(src: &Source, dlq_ret: u64) -> Check {
    let (name, src_ret) = (src.name, src.retention);
    if dlq_ret >= src_ret {
        Check::new(
            "sqs-dlq-retention",
            "DLQ retention ≥ source retention",
            Status::Pass,
            format!("{} ≥ {} ({name})", secs(Some(dlq_ret)), secs(Some(src_ret))),
        )
    } else {
        Check::new(
            "sqs-dlq-retention",
            "DLQ retention ≥ source retention",
            Status::Fail,
            format!(
                "{} < {} ({name}): a standard queue keeps the original enqueue time, so messages can expire in the DLQ soon after they arrive",
                secs(Some(dlq_ret)),
                secs(Some(src_ret))
            ),
        )
    }
}

/// The source's visibility timeout (SQS's default of 30 s when absent) must exceed the handler
/// timeout, or a slow handler overlaps its own redelivery.
fn visibility_check(src: &Source, handler_timeout: Duration) -> Check {
    let (name, h) = (src.name, handler_timeout);
    let vis: u64 = src
        .attrs
        .get("VisibilityTimeout")
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    if Duration::from_secs(vis) > h {
        Check::new(
            "sqs-visibility",
            "Visibility timeout exceeds the handler timeout",
            Status::Pass,
            format!(
                "{name}: {} > {}",
                secs(Some(vis)),
                crate::human::fmt_duration(h)
            ),
        )
    } else {
        Check::new(
            "sqs-visibility",
            "Visibility timeout exceeds the handler timeout",
            Status::Fail,
            format!(
                "{name}: {} <= handler timeout {}: a slow handler runs at the same time as its own redelivery",
                secs(Some(vis)),
                crate::human::fmt_duration(h)
            ),
        )
    }
}
