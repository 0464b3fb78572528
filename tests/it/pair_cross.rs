//! Cross-backend pairs (issue 26 item 6): a dead-letter queue on one backend redriven `--to` a
//! target on another, composed from the same seeds and reads as the single-backend pairs
//! (`pair.rs`, `pair_rabbitmq.rs`). They run the contract (`conformance.rs`) and its newer
//! clauses (`clauses.rs`) in both directions: PostgreSQL ↔ SQS, SQS ↔ Kafka, Kafka ↔
//! PostgreSQL, RabbitMQ ↔ each, and a job system (River) → each.

use std::net::SocketAddr;
use std::time::Duration;

use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
use sqlx::{AssertSqlSafe, Row};

use crate::amqp::{Kind, Rabbit, amqp_port};
use crate::harness::{Db, Kafka, Sandbox, Sqs};
use crate::pair::{JobSystem, Pair, wait_until};

fn local(port: u16) -> SocketAddr {
    format!("127.0.0.1:{port}").parse().unwrap()
}

/// One end of a cross-backend pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Rabbit,
    Pg,
    Sqs,
    Kafka,
    /// Dead River jobs (a source only: a job system is not a `--to`).
    River,
}

/// A dead-letter queue on one backend, a target on another.
pub struct Cross {
    from: End,
    to: End,
    port: u16,
    r: Option<Rabbit>,
    db: Option<Db>,
    sqs: Option<(Sqs, String, String)>,
    k: Option<Kafka>,
    river: Option<JobSystem>,
    seeded: usize,
    /// While seeding for the loop guard's clause: the first `k` dead letters carry
    /// `dlqctl-redrive-count = count`.
    redriven: Option<(usize, u32)>,
}

impl Cross {
    pub fn new(from: End, to: End) -> Cross {
        assert!(to != End::River, "a job system is a source only");
        assert!(from != to, "a cross pair joins two backends");
        Cross {
            from,
            to,
            port: amqp_port(),
            r: None,
            db: None,
            sqs: None,
            k: None,
            river: None,
            seeded: 0,
            redriven: None,
        }
    }

    /// Whether the source is Kafka (a filtered redrive commits past what it skips, and the
    /// loop guard needs `--park`: docs/kafka.md).
    pub fn source_is_kafka(&self) -> bool {
        self.from == End::Kafka
    }

    fn sqs_urls(&self) -> (&Sqs, &str, &str) {
        let (s, d, t) = self.sqs.as_ref().expect("fresh() first");
        (s, d, t)
    }

    fn url(&self, end: End, source: bool) -> String {
        let name = |u: &str| u.rsplit('/').next().unwrap().to_string();
        match end {
            End::Rabbit => self
                .r
                .as_ref()
                .unwrap()
                .url(if source { "dlq" } else { "target" }),
            End::Pg => {
                let db = self.db.as_ref().unwrap();
                if source {
                    db.table_url("dead_letters")
                } else if self.from == End::Rabbit {
                    // Each copy names its queue (the queue it died in).
                    db.table_url("queue_messages")
                } else {
                    // SQS and Kafka messages name no queue: the target table says which.
                    format!("{}&queue=orders", db.table_url("queue_messages"))
                }
            }
            End::Sqs => {
                let (_, d, t) = self.sqs_urls();
                format!("sqs://{}", name(if source { d } else { t }))
            }
            End::Kafka => self
                .k
                .as_ref()
                .unwrap()
                .url(if source { "dlt" } else { "orders" }),
            End::River => self.river.as_ref().unwrap().redrive()[1].clone(),
        }
    }

    async fn seed(&mut self, n: usize) -> Vec<String> {
        let ids: Vec<String> = (0..n).map(|i| format!("m-{i}")).collect();
        let (k, count) = self.redriven.unwrap_or((0, 0));
        let count = count.to_string();
        match self.from {
            End::River => return self.river.as_mut().unwrap().fresh(n).await,
            End::Rabbit => {
                use crate::amqp::{s, table};
                let r = self.r.as_ref().unwrap();
                r.pair(Kind::Classic, "orders", "dlq").await;
                for (i, id) in ids.iter().enumerate() {
                    let mut headers = vec![("tenant", s("acme"))];
                    if i < k {
                        headers.push(("dlqctl-redrive-count", s(&count)));
                    }
                    let props = lapin::BasicProperties::default()
                        .with_message_id(id.as_str().into())
                        .with_delivery_mode(2)
                        .with_content_type("application/json".into())
                        .with_headers(table(&headers));
                    r.publish(
                        "orders",
                        format!("{{\"order\": \"{id}\"}}").as_bytes(),
                        props,
                    )
                    .await;
                }
                r.reject("orders", n, "dlq").await;
            }
            End::Pg => {
                let db = self.db.as_ref().unwrap();
                db.exec(&format!(
                    "INSERT INTO {{s}}.dead_letters (message_id, queue, payload, headers, error, attempts, enqueued_at, failed_at)
                     SELECT 'm-'||g, 'orders', jsonb_build_object('order', 'm-'||g),
                            jsonb_build_object('tenant', 'acme')
                              || CASE WHEN g < {k} THEN jsonb_build_object('dlqctl-redrive-count', '{count}') ELSE '{{}}'::jsonb END,
                            'upstream call timed out', 5, now() - interval '1 hour', now()
                       FROM generate_series(0, {}) g",
                    n as i64 - 1
                ))
                .await;
            }
            End::Sqs => {
                let (s, d, _) = self.sqs_urls();
                let text = |v: &str| {
                    MessageAttributeValue::builder()
                        .data_type("String")
                        .string_value(v)
                        .build()
                        .unwrap()
                };
                for (c, chunk) in ids.chunks(10).enumerate() {
                    let entries = chunk
                        .iter()
                        .enumerate()
                        .map(|(i, id)| {
                            let mut e = SendMessageBatchRequestEntry::builder()
                                .id(format!("e{c}-{i}"))
                                .message_body(format!("{{\"order\": \"{id}\"}}"))
                                .message_attributes("dlqctl-stable-id", text(id));
                            if c * 10 + i < k {
                                e = e.message_attributes("dlqctl-redrive-count", text(&count));
                            }
                            e.build().unwrap()
                        })
                        .collect();
                    let out = s
                        .client
                        .send_message_batch()
                        .queue_url(d)
                        .set_entries(Some(entries))
                        .send()
                        .await
                        .expect("seed SQS");
                    assert!(out.failed().is_empty(), "seeding: {:?}", out.failed());
                }
            }
            End::Kafka => {
                let kf = self.k.as_ref().unwrap();
                for (i, id) in ids.iter().enumerate() {
                    let mut headers: Vec<(&str, Option<&[u8]>)> =
                        vec![("dlqctl-stable-id", Some(id.as_bytes()))];
                    if i < k {
                        headers.push(("dlqctl-redrive-count", Some(count.as_bytes())));
                    }
                    kf.produce(
                        "dlt",
                        Some((i % 2) as i32),
                        Some(b"k"),
                        Some(format!("{{\"order\": \"{id}\"}}").as_bytes()),
                        &headers,
                    )
                    .await;
                }
            }
        }
        ids
    }

    async fn count(&self, end: End, source: bool) -> u64 {
        match end {
            End::River => self.river.as_ref().unwrap().remaining().await,
            End::Rabbit => self
                .r
                .as_ref()
                .unwrap()
                .ready(if source { "dlq" } else { "target" })
                .await
                .into(),
            End::Pg => {
                self.db
                    .as_ref()
                    .unwrap()
                    .count(if source {
                        "dead_letters"
                    } else {
                        "queue_messages"
                    })
                    .await as u64
            }
            End::Sqs => {
                let (s, d, t) = self.sqs_urls();
                let u = if source { d } else { t };
                s.visible(u).await
                    + s.attr(u, "ApproximateNumberOfMessagesNotVisible")
                        .await
                        .parse::<u64>()
                        .unwrap_or(0)
            }
            End::Kafka => {
                let k = self.k.as_ref().unwrap();
                if source {
                    let sb = Sandbox::new();
                    let r = sb
                        .run_with(&["inspect", &k.url("dlt"), "--output", "json"], &k.env())
                        .ok()
                        .json();
                    r[0]["facts"]["redrive_lag"].as_u64().unwrap_or(u64::MAX)
                } else {
                    k.high_watermarks("orders") as u64
                }
            }
        }
    }

    fn ends(&self, e: End) -> bool {
        self.from == e || self.to == e
    }
}

impl Pair for Cross {
    fn name(&self) -> String {
        format!("{:?}->{:?}", self.from, self.to).to_lowercase()
    }
    async fn fresh(&mut self, n: usize) -> Vec<String> {
        self.r = None;
        if self.ends(End::Rabbit) {
            let mut r = Rabbit::new("cross").await;
            r.port = self.port;
            if self.to == End::Rabbit {
                r.declare("target", Kind::Classic, &[]).await;
            }
            self.r = Some(r);
        }
        if self.ends(End::Pg) {
            self.db = Some(Db::new("cross").await);
        }
        if self.ends(End::Sqs) {
            let s = Sqs::new("cross").await;
            let (d, _) = s.create("dlq", &[]).await;
            let (t, _) = s.create("target", &[]).await;
            self.sqs = Some((s, d, t));
        }
        if self.ends(End::Kafka) {
            let k = Kafka::new("cross");
            k.create("dlt", 2, &[]).await;
            k.create("orders", 1, &[]).await;
            self.k = Some(k);
        }
        if self.from == End::River {
            self.river = Some(JobSystem::new("river"));
        }
        self.seeded = n;
        self.seed(n).await
    }
    fn redrive(&self) -> Vec<String> {
        let mut a = vec![
            "redrive".into(),
            self.url(self.from, true),
            "--to".into(),
            self.url(self.to, false),
        ];
        if self.from == End::Rabbit && self.to == End::Sqs {
            // SQS takes no empty attribute, and the broker's x-first-death-exchange is empty
            // for the default exchange (docs/rabbitmq.md: to other backends).
            a.extend(["--strip-header".into(), "x-*".into()]);
        }
        if self.from == End::Sqs {
            // Short, so that what a killed run held is visible again soon.
            a.extend(["--visibility-timeout".into(), "2".into()]);
        }
        a
    }
    fn env(&self, sb: &Sandbox) -> Vec<(String, String)> {
        let mut env = Vec::new();
        if self.ends(End::Rabbit) {
            env.extend(crate::amqp::env());
        }
        if let Some((s, _, _)) = &self.sqs {
            env.extend(s.env(sb));
        }
        if let Some(k) = &self.k {
            env.extend(k.env());
            let cfg = sb.write("kafka-lease.toml", "[kafka]\nlease_timeout = \"2s\"\n");
            env.push(("DLQCTL_CONFIG".into(), cfg.to_string_lossy().into_owned()));
        }
        env
    }
    async fn settle(&self) {
        match self.from {
            End::Rabbit => self.r.as_ref().unwrap().wait_no_consumer("dlq").await,
            End::Sqs => {
                let (s, d, _) = self.sqs_urls();
                wait_until(
                    Duration::from_secs(30),
                    "hidden messages to reappear",
                    || async { s.attr(d, "ApproximateNumberOfMessagesNotVisible").await == "0" },
                )
                .await;
            }
            _ => {}
        }
    }
    async fn remaining(&self) -> u64 {
        self.count(self.from, true).await
    }
    async fn copies(&self) -> u64 {
        self.count(self.to, false).await
    }
    async fn target_ids(&self) -> Vec<Option<String>> {
        match self.to {
            End::River => unreachable!("a job system is a source only"),
            End::Rabbit => self.r.as_ref().unwrap().drain_ids("target").await,
            End::Pg => {
                let db = self.db.as_ref().unwrap();
                sqlx::query(AssertSqlSafe(format!(
                    "SELECT NULLIF(message_id, '') AS id FROM {}.queue_messages",
                    db.schema
                )))
                .fetch_all(&db.pool)
                .await
                .unwrap()
                .iter()
                .map(|r| r.get::<Option<String>, _>("id"))
                .collect()
            }
            End::Sqs => {
                let (s, _, t) = self.sqs_urls();
                s.receive_all(t)
                    .await
                    .iter()
                    .map(|m| {
                        m.message_attributes()
                            .and_then(|a| a.get("dlqctl-stable-id"))
                            .and_then(|v| v.string_value())
                            .map(str::to_string)
                    })
                    .collect()
            }
            End::Kafka => self
                .kafka_copies()
                .await
                .into_iter()
                .map(|(id, _, _)| id)
                .collect(),
        }
    }
    fn may_duplicate(&self) -> bool {
        true
    }
    fn upstream(&self) -> SocketAddr {
        local(amqp_port())
    }
    fn via(&mut self, port: u16) {
        self.port = port;
        if let Some(r) = self.r.as_mut() {
            r.port = port;
        }
    }
    fn copies_url(&self) -> Option<String> {
        Some(self.url(self.to, false))
    }
    /// A Kafka target is read with the fixture's own consumer (tansu's high watermark is
    /// wrong for batched produces: ../shared/reference/kafka.md); the others with `dlqctl peek`.
    async fn copy_records(&self, sb: &Sandbox) -> Vec<(String, serde_json::Value, u32)> {
        if self.to == End::Kafka {
            return self
                .kafka_copies()
                .await
                .into_iter()
                .map(|(id, body, count)| (id.unwrap_or_default(), body, count))
                .collect();
        }
        let url = self.url(self.to, false);
        sb.run_with(
            &["peek", &url, "-n", "1000", "--output", "jsonl"],
            &self.env(sb),
        )
        .ok()
        .jsonl()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap_or_default().to_string(),
                serde_json::from_str(m["body"].as_str().unwrap_or("null")).unwrap_or_default(),
                m["redrive_count"].as_u64().unwrap_or(0) as u32,
            )
        })
        .collect()
    }
}

impl Cross {
    /// Every record of the Kafka target: (stable id, body parsed, `dlqctl-redrive-count`).
    async fn kafka_copies(&self) -> Vec<(Option<String>, serde_json::Value, u32)> {
        let header = |r: &crate::harness::Rec, name: &str| {
            r.4.iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, v)| v.clone())
                .map(|v| String::from_utf8_lossy(&v).into_owned())
        };
        let seeded = self.seeded;
        self.k
            .as_ref()
            .unwrap()
            .read_until("orders", |recs| {
                recs.iter()
                    .filter_map(|r| header(r, "dlqctl-stable-id"))
                    .collect::<std::collections::HashSet<_>>()
                    .len()
                    >= seeded
            })
            .await
            .iter()
            .map(|r| {
                (
                    header(r, "dlqctl-stable-id"),
                    r.3.as_deref()
                        .and_then(|b| serde_json::from_slice(b).ok())
                        .unwrap_or_default(),
                    header(r, "dlqctl-redrive-count")
                        .and_then(|c| c.parse().ok())
                        .unwrap_or(0),
                )
            })
            .collect()
    }
}

impl crate::pair::Redriven for Cross {
    async fn fresh_redriven(&mut self, n: usize, k: usize, count: u32) -> Vec<String> {
        assert!(
            self.from != End::River,
            "a River job carries no dlqctl attributes"
        );
        self.redriven = Some((k, count));
        let ids = self.fresh(n).await;
        self.redriven = None;
        ids
    }
}

/// A file's record without a stable id (`"id": ""`) is refused on every target, before
/// anything is sent: a copy would otherwise get a new identity on each replay (op5: SQS and
/// Kafka copied it, PostgreSQL refused it). The dry run predicts the refusal; the record with
/// an id beside it goes.
#[tokio::test(flavor = "multi_thread")]
async fn a_record_without_a_stable_id_is_refused_by_every_target() {
    let sb = Sandbox::new();
    let file = sb.write(
        "noid.jsonl",
        concat!(
            r#"{"v":1,"id":"","body":"x","body_encoding":"utf8"}"#,
            "\n",
            r#"{"v":1,"id":"has-1","body":"y","body_encoding":"utf8"}"#,
            "\n"
        ),
    );
    let file = file.to_string_lossy().into_owned();
    let sqs = Sqs::new("noid").await;
    let (sqs_target, _) = sqs.create("target", &[]).await;
    let k = Kafka::new("noid");
    k.create("target", 1, &[]).await;
    let db = Db::new("noid").await;
    let r = Rabbit::new("noid").await;
    r.declare("target", Kind::Classic, &[]).await;
    let mut env = sqs.env(&sb);
    env.extend(k.env());
    env.extend(r.env());
    let targets = [
        sqs_target.clone(),
        k.url("target"),
        format!("{}&queue=noid", db.table_url("queue_messages")),
        r.url("target"),
    ];
    for t in &targets {
        for dry in [true, false] {
            let mut args = vec!["replay", &file, "--to", t, "--output", "json"];
            args.push(if dry { "--dry-run" } else { "--yes" });
            let j = sb.run_with(&args, &env).code(1).json();
            assert_eq!(
                (j["moved"].as_u64(), j["failed"].as_u64()),
                (Some(1), Some(1)),
                "{t} (dry run {dry}): {j}"
            );
            assert!(
                j.to_string().contains("the message has no stable id"),
                "{j}"
            );
        }
    }
    assert_eq!(sqs.receive_all(&sqs_target).await.len(), 1);
    let recs = k.read_until("target", |r| !r.is_empty()).await;
    assert_eq!(recs.len(), 1);
    // A record with no `native_id` names no source: no empty `dlqctl-redriven-from`, which
    // SQS could not carry on (op5).
    assert!(
        !recs[0].4.iter().any(|(n, _)| n == "dlqctl-redriven-from"),
        "{:?}",
        recs[0].4
    );
    assert_eq!(db.count("queue_messages").await, 1);
    assert_eq!(r.drain_ids("target").await, [Some("has-1".to_string())]);
}
