//! RabbitMQ pairs (issue 27): a dead-letter queue whose dead letters the broker made (a
//! consumer rejected them), redriven to the queue they died in; and RabbitMQ to and from a
//! PostgreSQL table, an SQS queue and a Kafka topic. They join the conformance suite, the kill
//! points and the faults (`conformance.rs`, `faults.rs`).

use std::net::SocketAddr;
use std::time::Duration;

use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
use sqlx::{AssertSqlSafe, Row};

use crate::amqp::{Kind, Rabbit, amqp_port};
use crate::harness::{Db, Kafka, Sandbox, Sqs};
use crate::pair::{Pair, wait_until};

fn local(port: u16) -> SocketAddr {
    format!("127.0.0.1:{port}").parse().unwrap()
}

/// A RabbitMQ DLQ (classic or quorum) and the work queue its dead letters came from.
pub struct RabbitPair {
    kind: Kind,
    r: Option<Rabbit>,
    port: u16,
}

impl RabbitPair {
    pub fn new(kind: Kind) -> RabbitPair {
        RabbitPair {
            kind,
            r: None,
            port: amqp_port(),
        }
    }

    pub fn r(&self) -> &Rabbit {
        self.r.as_ref().expect("fresh() first")
    }
}

impl Pair for RabbitPair {
    fn name(&self) -> String {
        match self.kind {
            Kind::Classic => "rabbitmq-classic".into(),
            Kind::Quorum => "rabbitmq-quorum".into(),
        }
    }
    async fn fresh(&mut self, n: usize) -> Vec<String> {
        let mut r = Rabbit::new("pair").await;
        r.port = self.port;
        r.pair(self.kind, "orders", "dlq").await;
        let ids = r.dead_letters("orders", "dlq", "m", n).await;
        self.r = Some(r);
        ids
    }
    fn redrive(&self) -> Vec<String> {
        // No --to: each copy goes back to the queue it died in (x-first-death-queue).
        vec!["redrive".into(), self.r().url("dlq")]
    }
    fn env(&self, _sb: &Sandbox) -> Vec<(String, String)> {
        self.r().env()
    }
    async fn settle(&self) {
        self.r().wait_no_consumer("dlq").await;
    }
    async fn remaining(&self) -> u64 {
        self.r().ready("dlq").await.into()
    }
    async fn copies(&self) -> u64 {
        self.r().ready("orders").await.into()
    }
    async fn target_ids(&self) -> Vec<Option<String>> {
        self.r().drain_ids("orders").await
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
        Some(self.r().url("orders"))
    }
}

/// One end of a cross-backend pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Rabbit,
    Pg,
    Sqs,
    Kafka,
}

/// A dead-letter queue on one backend, a target on another (one of them RabbitMQ).
pub struct Cross {
    from: End,
    to: End,
    port: u16,
    r: Option<Rabbit>,
    db: Option<Db>,
    sqs: Option<(Sqs, String, String)>,
    k: Option<Kafka>,
    seeded: usize,
}

impl Cross {
    pub fn new(from: End, to: End) -> Cross {
        Cross {
            from,
            to,
            port: amqp_port(),
            r: None,
            db: None,
            sqs: None,
            k: None,
            seeded: 0,
        }
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
                db.table_url(if source {
                    "dead_letters"
                } else {
                    "queue_messages"
                })
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
        }
    }

    async fn seed(&mut self, n: usize) -> Vec<String> {
        let ids: Vec<String> = (0..n).map(|i| format!("m-{i}")).collect();
        match self.from {
            End::Rabbit => {
                let r = self.r.as_ref().unwrap();
                r.pair(Kind::Classic, "orders", "dlq").await;
                return r.dead_letters("orders", "dlq", "m", n).await;
            }
            End::Pg => {
                self.db.as_ref().unwrap().exec(&format!(
                    "INSERT INTO {{s}}.dead_letters (message_id, queue, payload, headers, error, attempts, enqueued_at, failed_at)
                     SELECT 'm-'||g, 'orders', jsonb_build_object('order', 'm-'||g), jsonb_build_object('tenant', 'acme'),
                            'upstream call timed out', 5, now() - interval '1 hour', now()
                       FROM generate_series(0, {}) g",
                    n as i64 - 1
                ))
                .await;
            }
            End::Sqs => {
                let (s, d, _) = self.sqs_urls();
                for (c, chunk) in ids.chunks(10).enumerate() {
                    let entries = chunk
                        .iter()
                        .enumerate()
                        .map(|(i, id)| {
                            SendMessageBatchRequestEntry::builder()
                                .id(format!("e{c}-{i}"))
                                .message_body(format!("{{\"order\": \"{id}\"}}"))
                                .message_attributes(
                                    "dlqctl-stable-id",
                                    MessageAttributeValue::builder()
                                        .data_type("String")
                                        .string_value(id)
                                        .build()
                                        .unwrap(),
                                )
                                .build()
                                .unwrap()
                        })
                        .collect();
                    s.client
                        .send_message_batch()
                        .queue_url(d)
                        .set_entries(Some(entries))
                        .send()
                        .await
                        .expect("seed SQS");
                }
            }
            End::Kafka => {
                let k = self.k.as_ref().unwrap();
                for (i, id) in ids.iter().enumerate() {
                    k.produce(
                        "dlt",
                        Some((i % 2) as i32),
                        Some(b"k"),
                        Some(format!("{{\"order\": \"{id}\"}}").as_bytes()),
                        &[("dlqctl-stable-id", Some(id.as_bytes()))],
                    )
                    .await;
                }
            }
        }
        ids
    }

    async fn count(&self, end: End, source: bool) -> u64 {
        match end {
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
}

impl Pair for Cross {
    fn name(&self) -> String {
        format!("{:?}->{:?}", self.from, self.to).to_lowercase()
    }
    async fn fresh(&mut self, n: usize) -> Vec<String> {
        let mut r = Rabbit::new("cross").await;
        r.port = self.port;
        if self.to == End::Rabbit {
            r.declare("target", Kind::Classic, &[]).await;
        }
        self.r = Some(r);
        if [self.from, self.to].contains(&End::Pg) {
            self.db = Some(Db::new("cross").await);
        }
        if [self.from, self.to].contains(&End::Sqs) {
            let s = Sqs::new("cross").await;
            let (d, _) = s.create("dlq", &[]).await;
            let (t, _) = s.create("target", &[]).await;
            self.sqs = Some((s, d, t));
        }
        if [self.from, self.to].contains(&End::Kafka) {
            let k = Kafka::new("cross");
            k.create("dlt", 2, &[]).await;
            k.create("orders", 1, &[]).await;
            self.k = Some(k);
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
        let mut env = crate::amqp::env();
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
            End::Kafka => {
                let id = |r: &crate::harness::Rec| {
                    r.4.iter()
                        .find(|(n, _)| n == "dlqctl-stable-id")
                        .and_then(|(_, v)| v.clone())
                        .map(|v| String::from_utf8_lossy(&v).into_owned())
                };
                let seeded = self.seeded;
                self.k
                    .as_ref()
                    .unwrap()
                    .read_until("orders", |recs| {
                        recs.iter()
                            .filter_map(id)
                            .collect::<std::collections::HashSet<_>>()
                            .len()
                            >= seeded
                    })
                    .await
                    .iter()
                    .map(id)
                    .collect()
            }
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
}

impl crate::pair::Redriven for RabbitPair {
    /// As `fresh`: published to the work queue, rejected by its consumer, dead-lettered by the
    /// broker; the first `k` published with `dlqctl-redrive-count = count` (a long string, as
    /// dlqctl writes it), which the dead letter keeps.
    async fn fresh_redriven(&mut self, n: usize, k: usize, count: u32) -> Vec<String> {
        use crate::amqp::{s, table};
        let mut r = Rabbit::new("pair").await;
        r.port = self.port;
        r.pair(self.kind, "orders", "dlq").await;
        let ids: Vec<String> = (0..n).map(|i| format!("m-{i}")).collect();
        for (i, id) in ids.iter().enumerate() {
            let mut headers = vec![("tenant", s("acme"))];
            if i < k {
                headers.push(("dlqctl-redrive-count", s(&count.to_string())));
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
        self.r = Some(r);
        ids
    }
}
