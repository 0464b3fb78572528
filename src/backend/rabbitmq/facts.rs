//! inspect and verify: what AMQP tells (ready messages, consumers) and, with the management
//! API, the queue's type, arguments and policy, its dead-letter settings, and the queues
//! that dead-letter into it.

use std::time::Duration;

use serde_json::{Value, json};

use super::address::AmqpTarget;
use super::api::{Api, QueueInfo};
use super::backend::RabbitBackend;
use crate::address::Address;
use crate::backend::{Check, Fact, Inspection, Status, Table, Term, VerifyFacts};
use crate::config::{QueueConfig, Retention};
use crate::error::Result;

const NO_API: &str = "no management API (?api=http://HOST:15672, [rabbitmq] api, or DLQCTL_RABBITMQ_API): the queue's type, arguments, policies and the dead-letter exchange's bindings cannot be seen over AMQP";

/// Where `in_flight`, `oldest` and the consumers' names come from, said once.
const STATISTICS: &str = "in_flight, oldest and the consumers' names are the management API's statistics, up to collect_statistics_interval (5 s by default) old; messages and consumers are AMQP's, exact";

fn ms(n: u64) -> String {
    crate::human::fmt_duration(Duration::from_millis(n)).to_string()
}

/// What the management API tells of a queue: its type, durability, arguments and policy, its
/// dead-letter settings and limits (each with where it is set), its oldest message.
fn queue_facts(info: &QueueInfo, ins: &mut Inspection) {
    let i = &info.0;
    ins.facts
        .push(Fact::new("type", info.kind(), info.kind().to_string()));
    ins.facts.push(Fact::new(
        "durable",
        i["durable"].clone(),
        i["durable"].to_string(),
    ));
    ins.facts.push(Fact::new(
        "arguments",
        i["arguments"].clone(),
        i["arguments"].to_string(),
    ));
    ins.facts.push(Fact::new(
        "policy",
        i["policy"].clone(),
        match i["policy"].as_str() {
            Some(p) => format!("{p} {}", i["effective_policy_definition"]),
            None => "none".into(),
        },
    ));
    for (key, fact) in [
        ("dead-letter-exchange", "dead_letter_exchange"),
        ("dead-letter-routing-key", "dead_letter_routing_key"),
        ("dead-letter-strategy", "dead_letter_strategy"),
        ("overflow", "overflow"),
    ] {
        if let Some((v, from)) = info.setting_str(key) {
            ins.facts
                .push(Fact::new(fact, v.clone(), format!("{v} ({from})")));
        }
    }
    for (key, fact, human) in [
        ("max-length", "max_length", false),
        ("message-ttl", "message_ttl_ms", true),
        ("delivery-limit", "delivery_limit", false),
    ] {
        if let Some((v, from)) = info.setting_u64(key) {
            let shown = if human { ms(v) } else { v.to_string() };
            ins.facts
                .push(Fact::new(fact, v, format!("{shown} ({from})")));
        }
    }
    if let Some(t) = i["head_message_timestamp"]
        .as_i64()
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
    {
        ins.facts.push(Fact::new(
            "oldest",
            t.to_rfc3339(),
            t.format("%Y-%m-%d %H:%M UTC").to_string(),
        ));
    }
}

/// A queue that dead-letters into this one.
pub struct Feeder {
    pub info: QueueInfo,
    /// Its dead-letter exchange (`""`: the default exchange).
    pub exchange: String,
}

impl RabbitBackend {
    pub(super) async fn inspect_queue(
        &self,
        _classifier: &crate::classify::Classifier,
    ) -> Result<Inspection> {
        let mut ins = Inspection {
            queue: self.shown(),
            backend: "rabbitmq",
            ..Inspection::default()
        };
        let q = self.source_queue()?.to_string();
        let (ready, consumers) = self.declare_passive(&q).await?;
        ins.facts
            .push(Fact::new("messages", ready, ready.to_string()));
        ins.facts
            .push(Fact::new("consumers", consumers, consumers.to_string()));
        let (Some(api), Some(info)) = (&self.api, &self.info) else {
            ins.notes.push(NO_API.into());
            return Ok(ins);
        };
        if let Ok(o) = api.overview().await
            && let Some(v) = o["rabbitmq_version"].as_str()
        {
            let cluster = o["cluster_name"].as_str().unwrap_or("?");
            ins.facts.push(Fact::new(
                "broker",
                json!({ "version": v, "cluster": cluster }),
                format!("RabbitMQ {v} (cluster {cluster})"),
            ));
        }
        if let Some(n) = info.number("messages_unacknowledged") {
            ins.facts.push(Fact::new("in_flight", n, n.to_string()));
        }
        queue_facts(info, &mut ins);
        if ins
            .facts
            .iter()
            .any(|f| f.name == "in_flight" || f.name == "oldest")
        {
            ins.notes.push(STATISTICS.into());
        }
        let who = self.consumers_of(&q).await;
        if let Some(list) = who.strip_prefix(": ") {
            ins.notes.push(format!("consumers: {list}"));
        }
        if info.kind() == "quorum" && info.setting_u64("delivery-limit").is_some() {
            ins.notes.push("a quorum queue with a delivery-limit: reads (peek, tail, export, classify) give every message back and count one delivery each, so dlqctl refuses them without --allow-onward-redrive".into());
        }
        self.feeders_table(api, &q, &mut ins).await?;
        Ok(ins)
    }

    /// The table of the queues that dead-letter into `q` (a note where none does).
    async fn feeders_table(&self, api: &Api, q: &str, ins: &mut Inspection) -> Result<()> {
        let mut fed = Table {
            title: "queues that dead-letter here".into(),
            columns: vec![
                "queue".into(),
                "type".into(),
                "dead-letter exchange".into(),
                "message-ttl".into(),
                "delivery-limit".into(),
            ],
            rows: Vec::new(),
        };
        for f in self.feeders(api, q).await? {
            fed.rows.push(vec![
                f.info.name().into(),
                f.info.kind().into(),
                json!(f.exchange),
                f.info
                    .setting_u64("message-ttl")
                    .map_or(Value::Null, |(v, _)| json!(v)),
                f.info
                    .setting_u64("delivery-limit")
                    .map_or(Value::Null, |(v, _)| json!(v)),
            ]);
        }
        if fed.rows.is_empty() {
            ins.notes
                .push("no queue of this vhost dead-letters here (no dead-letter exchange routes to this queue)".into());
        } else {
            ins.tables.push(fed);
        }
        Ok(())
    }

    /// The queues of this vhost whose dead-letter exchange routes to queue `q`.
    pub(super) async fn feeders(&self, api: &Api, q: &str) -> Result<Vec<Feeder>> {
        let vhost = &self.amqp().vhost;
        let bound = api.bindings_to(vhost, q).await?;
        let mut out = Vec::new();
        for s in api.queues(vhost).await? {
            if s.name() == q {
                continue;
            }
            let Some((x, _)) = s.setting_str("dead-letter-exchange") else {
                continue;
            };
            let key = s.setting_str("dead-letter-routing-key").map(|(k, _)| k);
            let routes = if x.is_empty() {
                key.as_deref() == Some(q)
            } else {
                bound.iter().any(|(src, k)| {
                    *src == x && key.as_ref().is_none_or(|want| want == k || k.is_empty())
                })
            };
            if routes {
                out.push(Feeder {
                    info: s,
                    exchange: x,
                });
            }
        }
        Ok(out)
    }

    pub(super) async fn verify_queue(&self, cfg: &QueueConfig) -> Result<VerifyFacts> {
        let mut f = VerifyFacts::default();
        let q = self.source_queue()?.to_string();
        let (ready, _) = self.declare_passive(&q).await?;
        f.checks.push(Check::new(
            "rabbitmq-dlq-exists",
            "The dead-letter queue exists",
            Status::Pass,
            format!("{q}: {ready} message(s) ready"),
        ));
        let (Some(api), Some(info)) = (&self.api, &self.info) else {
            f.checks.push(Check::new(
                "rabbitmq-management-api",
                "The management API is reachable",
                Status::Warn,
                NO_API,
            ));
            f.redelivery.push(Term {
                label: "DLQ message TTL".into(),
                value: Retention::Forever,
                source: "unknown without the management API (counted as unbounded)".into(),
            });
            return Ok(f);
        };
        // Sources: the configured one, else the queues whose dead letters land here.
        let mut sources = Vec::new();
        match cfg.source.as_deref().map(Address::parse) {
            Some(Ok(Address::Rabbitmq(a))) => {
                if let AmqpTarget::Queue(s) = &a.target
                    && let Some(info) = api.queue(&a.vhost, s).await?
                {
                    let x = info
                        .setting_str("dead-letter-exchange")
                        .map(|(x, _)| x)
                        .unwrap_or_default();
                    sources.push(Feeder { info, exchange: x });
                }
            }
            _ => sources = self.feeders(api, &q).await?,
        }
        for s in &sources {
            if let Some((ttl, from)) = s.info.setting_u64("message-ttl") {
                f.redelivery.push(Term {
                    label: format!("source {} message TTL", s.info.name()),
                    value: Retention::For(Duration::from_millis(ttl)),
                    source: from.to_string(),
                });
            }
            self.check_source(api, s, &mut f).await?;
        }
        if sources.is_empty() {
            f.checks.push(Check::new(
                "rabbitmq-dead-letter-route",
                "A source queue dead-letters here",
                Status::Warn,
                "no queue of this vhost has a dead-letter exchange that routes here, and no `source` is configured",
            ));
        }
        match info.setting_u64("message-ttl") {
            Some((ttl, from)) => f.redelivery.push(Term {
                label: "DLQ message TTL".into(),
                value: Retention::For(Duration::from_millis(ttl)),
                source: from.to_string(),
            }),
            None => f.redelivery.push(Term {
                label: "DLQ message TTL".into(),
                value: Retention::Forever,
                source: format!("{q} has no message-ttl: dead letters wait until removed"),
            }),
        }
        self.check_dlq(info, &mut f);
        Ok(f)
    }

    /// The source's dead-letter route, its dead-lettering guarantee, its delivery limit.
    async fn check_source(&self, api: &Api, s: &Feeder, f: &mut VerifyFacts) -> Result<()> {
        let vhost = &self.amqp().vhost;
        let name = s.info.name();
        let route = if s.exchange.is_empty() {
            (
                Status::Pass,
                format!("{name} dead-letters through the default exchange"),
            )
        } else {
            match api.exchange(vhost, &s.exchange).await? {
                None => (
                    Status::Fail,
                    format!(
                        "{name}'s dead-letter exchange `{}` does not exist: RabbitMQ drops its dead letters silently",
                        s.exchange
                    ),
                ),
                Some(_) => {
                    let b = api.bindings_from(vhost, &s.exchange).await?;
                    if b.is_empty() {
                        (
                            Status::Fail,
                            format!(
                                "{name}'s dead-letter exchange `{}` has no bindings: RabbitMQ drops its dead letters silently",
                                s.exchange
                            ),
                        )
                    } else {
                        let to: Vec<String> = b
                            .iter()
                            .map(|x| {
                                format!(
                                    "{} (key `{}`)",
                                    x["destination"].as_str().unwrap_or("?"),
                                    x["routing_key"].as_str().unwrap_or("")
                                )
                            })
                            .collect();
                        (
                            Status::Pass,
                            format!("{name} → exchange `{}` → {}", s.exchange, to.join(", ")),
                        )
                    }
                }
            }
        };
        f.checks.push(Check::new(
            "rabbitmq-dead-letter-route",
            "The dead-letter exchange exists and routes to a queue",
            route.0,
            route.1,
        ));
        let strategy = s.info.setting_str("dead-letter-strategy").map(|(v, _)| v);
        let overflow = s.info.setting_str("overflow").map(|(v, _)| v);
        let (status, detail) = match s.info.kind() {
            "quorum"
                if strategy.as_deref() == Some("at-least-once")
                    && overflow.as_deref() == Some("reject-publish") =>
            {
                (
                    Status::Pass,
                    format!(
                        "{name}: quorum, dead-letter-strategy=at-least-once, overflow=reject-publish"
                    ),
                )
            }
            "quorum" => (
                Status::Warn,
                format!(
                    "{name}: quorum queue with dead-letter-strategy={} and overflow={}: dead-lettering is at-most-once (a broker failure can lose a dead letter); at-least-once needs dead-letter-strategy=at-least-once and overflow=reject-publish",
                    strategy.as_deref().unwrap_or("at-most-once"),
                    overflow.as_deref().unwrap_or("drop-head")
                ),
            ),
            kind => (
                Status::Warn,
                format!(
                    "{name}: a {kind} queue dead-letters at most once (a broker failure or a full DLQ can lose a dead letter); only quorum queues can do at-least-once"
                ),
            ),
        };
        f.checks.push(Check::new(
            "rabbitmq-dead-lettering-guarantee",
            "Dead-lettering is at-least-once",
            status,
            detail,
        ));
        if s.info.kind() == "quorum" {
            f.checks.push(match s.info.setting_u64("delivery-limit") {
                Some((n, from)) => Check::new("rabbitmq-delivery-limit", "The source has a delivery limit", Status::Pass, format!("{name}: delivery-limit {n} ({from}): a message that keeps failing is dead-lettered after {n} returns")),
                None => Check::new("rabbitmq-delivery-limit", "The source has a delivery limit", Status::Warn, format!("{name}: no delivery-limit: a message its consumer keeps returning (nack with requeue) is redelivered forever and never dead-lettered (RabbitMQ 4.0 sets 20 by default)")),
            });
        }
        Ok(())
    }

    /// The DLQ's own limits: a length limit that drops dead letters, reads that count.
    fn check_dlq(&self, info: &QueueInfo, f: &mut VerifyFacts) {
        let name = info.name();
        let overflow = info
            .setting_str("overflow")
            .map(|(v, _)| v)
            .unwrap_or_else(|| "drop-head".into());
        f.checks.push(match info.setting_u64("max-length") {
            Some((n, from)) if overflow == "drop-head" => Check::new("rabbitmq-dlq-length-limit", "The DLQ keeps every dead letter", Status::Warn, format!("{name}: max-length {n} ({from}) with overflow=drop-head: when full, the oldest dead letters are dropped (or dead-lettered onward)")),
            Some((n, from)) => Check::new("rabbitmq-dlq-length-limit", "The DLQ keeps every dead letter", Status::Warn, format!("{name}: max-length {n} ({from}) with overflow={overflow}: when full, new dead letters are refused, and at-most-once dead-lettering drops them")),
            None => Check::new("rabbitmq-dlq-length-limit", "The DLQ keeps every dead letter", Status::Pass, format!("{name}: no max-length")),
        });
        if info.kind() == "quorum"
            && let Some((n, from)) = info.setting_u64("delivery-limit")
        {
            f.checks.push(Check::new("rabbitmq-dlq-delivery-limit", "Reading the DLQ cannot push messages onward", Status::Warn, format!("{name}: a quorum DLQ with delivery-limit {n} ({from}): every read that gives a message back counts one delivery; dlqctl refuses reads without --allow-onward-redrive")));
        }
    }
}
