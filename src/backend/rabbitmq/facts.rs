//! inspect and verify: what AMQP tells (ready messages, consumers) and, with the management
//! API, the queue's type, arguments and policy, its dead-letter settings, and the queues
//! that dead-letter into it.

use std::time::Duration;

use serde_json::{Value, json};

use super::address::{AmqpAddress, AmqpTarget};
use super::api::{Api, QueueInfo};
use super::backend::RabbitBackend;
use super::routes::{self, Feeder};
use super::routing::Topology;
use crate::address::Address;
use crate::backend::{Check, Fact, Inspection, Oldest, Status, Table, Term, VerifyFacts};
use crate::config::{QueueConfig, Retention};
use crate::error::Result;

const NO_API: &str = "no management API (?api=http://HOST:15672, [rabbitmq] api, or DLQCTL_RABBITMQ_API): the queue's type, arguments, policies and the dead-letter exchange's bindings cannot be seen over AMQP";

/// Where `in_flight`, `oldest` and the consumers' names come from, said once.
const STATISTICS: &str = "in_flight, oldest and the consumers' names are the management API's statistics, up to collect_statistics_interval (5 s by default) old; messages and consumers are AMQP's, exact";

fn ms(n: u64) -> String {
    crate::human::fmt_duration(Duration::from_millis(n)).to_string()
}

/// The messages of the queue, held ones included (`check --max-messages`): AMQP's ready count
/// plus the management API's unacknowledged one. The API's statistics are up to
/// `collect_statistics_interval` old: where its ready count disagrees with AMQP's, the larger of
/// AMQP's ready count and the API's total is taken, and said.
fn depth(ready: u32, info: &QueueInfo) -> Fact {
    let ready = u64::from(ready);
    let held = info.number("messages_unacknowledged").unwrap_or(0);
    if info.number("messages_ready") == Some(ready) {
        return Fact::new(
            "depth",
            ready + held,
            format!(
                "{ready} ready + {held} held unacknowledged by a consumer or channel (AMQP's ready count, the management API's unacknowledged count)"
            ),
        );
    }
    let total = info.number("messages").unwrap_or(0);
    Fact::new(
        "depth",
        ready.max(total),
        format!(
            "the larger of {ready} ready (AMQP) and the management API's {total} (ready + unacknowledged; its statistics lag AMQP's by up to 5 s and disagree now)"
        ),
    )
}

/// The oldest dead letter, from the API's `head_message_timestamp` (the head message's
/// `timestamp` property, where its publisher set one). Right after a queue is declared or its
/// first message published, the API has no statistics of it yet (no `messages`), or still those
/// of an empty queue (`messages` 0 while AMQP counts some ready): its head is not reported yet.
fn oldest(ready: u32, info: &QueueInfo) -> Oldest {
    let reported = info.number("messages");
    if ready == 0 && reported == Some(0) {
        return Oldest::Empty;
    }
    if let Some(t) = info.0["head_message_timestamp"]
        .as_i64()
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
    {
        return Oldest::At(t);
    }
    match reported {
        None | Some(0) => Oldest::Unreported(HEAD_NOT_REPORTED),
        Some(_) => Oldest::Unreported(
            "the head message has no timestamp property (its publisher set none), so its age cannot be read",
        ),
    }
}

const HEAD_NOT_REPORTED: &str = "the management API has not reported the queue's head message yet (its statistics lag by up to collect_statistics_interval, 5 s by default): run verify again in a few seconds";

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
            ins.facts.push(Fact::new("depth", ready, format!("{ready} ready, over AMQP: without the management API, messages held unacknowledged by a consumer or channel cannot be seen or counted")));
            ins.notes.push(NO_API.into());
            return Ok(ins);
        };
        ins.facts.push(depth(ready, info));
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
                json!(f.dl.exchange),
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

    /// The queues of this vhost whose dead letters reach queue `q` ([`routes::feeders`]).
    pub(super) async fn feeders(&self, api: &Api, q: &str) -> Result<Vec<Feeder>> {
        let (t, queues) = self.topology(api).await?;
        Ok(routes::feeders(&t, queues, q))
    }

    /// This vhost's topology, and its queues.
    async fn topology(&self, api: &Api) -> Result<(Topology, Vec<QueueInfo>)> {
        let vhost = &self.amqp().vhost;
        let queues = api.queues(vhost).await?;
        Ok((api.topology(vhost, &queues).await?, queues))
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
        let vhost = &self.amqp().vhost;
        f.shorten = Some(ttl_fix(vhost, &q, cfg.dlq_retention, self.info.as_ref()));
        if let Some(d) = cfg.dlq_retention {
            f.checks
                .push(unused_dlq_retention(vhost, &q, d, self.info.as_ref()));
        }
        let (Some(api), Some(info)) = (&self.api, &self.info) else {
            f.checks.push(Check::new(
                "rabbitmq-management-api",
                "The management API is reachable",
                Status::Warn,
                NO_API,
            ));
            f.oldest = Oldest::Unreported(
                "the head message's timestamp comes from the management API, and no API address is known",
            );
            f.redelivery.push(Term {
                label: "DLQ message TTL".into(),
                value: Retention::Forever,
                source: "unknown without the management API (counted as unbounded)".into(),
            });
            return Ok(f);
        };
        f.oldest = oldest(ready, info);
        // Sources: the configured one, else the queues whose dead letters land here.
        let (t, queues) = self.topology(api).await?;
        let sources = match cfg.source.as_deref().map(Address::parse) {
            Some(Ok(Address::Rabbitmq(a))) => self.configured_source(api, &t, &a, &mut f).await?,
            _ => routes::feeders(&t, queues, &q),
        };
        for s in &sources {
            if let Some((ttl, from)) = s.info.setting_u64("message-ttl") {
                f.redelivery.push(Term {
                    label: format!("source {} message TTL", s.info.name()),
                    value: Retention::For(Duration::from_millis(ttl)),
                    source: from.to_string(),
                });
            }
            f.checks
                .push(routes::route_check(&t, vhost, s.info.name(), &s.dl, &q));
            check_source(s, &mut f);
        }
        if sources.is_empty() && cfg.source.is_none() {
            f.checks.push(Check::new(
                "rabbitmq-dead-letter-route",
                "The source's dead letters reach the DLQ",
                Status::Warn,
                "no queue of this vhost has a dead-letter route that reaches here, and no `source` is configured",
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
        check_dlq(info, &mut f);
        Ok(f)
    }

    /// The configured source queue, where it is one of this vhost with a dead-letter exchange
    /// (else a FAIL that says why not).
    async fn configured_source(
        &self,
        api: &Api,
        t: &Topology,
        a: &AmqpAddress,
        f: &mut VerifyFacts,
    ) -> Result<Vec<Feeder>> {
        let vhost = &self.amqp().vhost;
        let AmqpTarget::Queue(name) = &a.target else {
            return Ok(Vec::new());
        };
        let fail = |detail: String| {
            Check::new(
                "rabbitmq-dead-letter-route",
                "The source's dead letters reach the DLQ",
                Status::Fail,
                detail,
            )
        };
        if &a.vhost != vhost {
            f.checks.push(fail(format!(
                "the source {name} is in vhost `{}`, the DLQ in vhost `{vhost}`: RabbitMQ dead-letters within a vhost only",
                a.vhost
            )));
            return Ok(Vec::new());
        }
        let Some(info) = api.queue(vhost, name).await? else {
            f.checks.push(fail(format!(
                "the source queue {name} does not exist in vhost `{vhost}`"
            )));
            return Ok(Vec::new());
        };
        match Feeder::of(t, info) {
            Some(s) => Ok(vec![s]),
            None => {
                f.checks.push(fail(format!(
                    "{name} has no dead-letter exchange (no x-dead-letter-exchange argument, no dead-letter-exchange policy): RabbitMQ discards what it rejects, expires or overflows"
                )));
                Ok(Vec::new())
            }
        }
    }
}

/// How to keep the dead letters of DLQ `q` for `keep` (a placeholder when not declared): a
/// `message-ttl` policy, or the queue argument.
fn ttl_fix(vhost: &str, q: &str, keep: Option<Duration>, info: Option<&QueueInfo>) -> String {
    let ms = keep.map_or("MILLISECONDS".to_string(), |d| d.as_millis().to_string());
    let existing = match info.and_then(|i| i.0["policy"].as_str()) {
        Some(p) => format!(
            "; {q} has policy {p} already, and only one policy applies to a queue: add message-ttl to {p}'s definition instead"
        ),
        None => String::new(),
    };
    format!(
        "a message-ttl on the DLQ: `rabbitmqctl set_policy --vhost {vhost} {q}-ttl '^{}$' '{{\"message-ttl\":{ms}}}' --apply-to queues`, or the x-message-ttl argument when declaring it{existing}",
        regex::escape(q)
    )
}

/// `dlq_retention` is declared for a RabbitMQ DLQ: not used (the broker's own message-ttl is
/// read), said with what the queue has and the fix.
fn unused_dlq_retention(vhost: &str, q: &str, d: Duration, info: Option<&QueueInfo>) -> Check {
    let has = match info.map(|i| i.setting_u64("message-ttl")) {
        Some(Some((ttl, from))) => format!("{} ({from})", ms(ttl)),
        Some(None) => "none: dead letters wait until removed".into(),
        None => "unknown without the management API".into(),
    };
    Check::new(
        "rabbitmq-dlq-retention",
        "dlq_retention matches the DLQ's message-ttl",
        Status::Warn,
        format!(
            "dlq_retention = {} in dlqctl.toml is not used for RabbitMQ: the broker keeps dead letters as long as the DLQ's message-ttl says, and verify reads that (here: {has}); to keep them {}, set {}",
            crate::human::fmt_duration(d),
            crate::human::fmt_duration(d),
            ttl_fix(vhost, q, Some(d), info)
        ),
    )
}

/// The source's dead-lettering guarantee and its delivery limit.
fn check_source(s: &Feeder, f: &mut VerifyFacts) {
    let name = s.info.name();
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
}

/// The DLQ's own limits: a length limit that drops dead letters, reads that count.
fn check_dlq(info: &QueueInfo, f: &mut VerifyFacts) {
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
