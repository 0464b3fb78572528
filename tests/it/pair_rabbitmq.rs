//! RabbitMQ pairs (issue 27): a dead-letter queue whose dead letters the broker made (a
//! consumer rejected them), redriven to the queue they died in; and RabbitMQ to and from a
//! PostgreSQL table, an SQS queue and a Kafka topic (`pair_cross.rs`). They join the conformance suite, the kill
//! points and the faults (`conformance.rs`, `faults.rs`).

use std::net::SocketAddr;

use crate::amqp::{Kind, Rabbit, amqp_port};
use crate::harness::Sandbox;
use crate::pair::Pair;

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

pub use crate::pair_cross::{Cross, End};

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

impl crate::clauses::Source for RabbitPair {
    /// One more message rejected into the DLQ (its work queue is empty after `fresh`).
    async fn add(&self, k: usize) -> String {
        self.r()
            .dead_letters("orders", "dlq", &format!("new{k}"), 1)
            .await
            .remove(0)
    }
}
