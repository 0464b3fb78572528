//! Dead-letter routes, for inspect and verify: the vhost's topology from the management API,
//! the queues whose dead letters reach a DLQ (by [`routing`]), and verify's check of a
//! source's route: where its dead letters go, with the reasoning and the fix.

use serde_json::Value;

use super::api::{Api, QueueInfo, seg};
use super::routing::{self, Alternate, Binding, DeadLetters, Exchange, Reach, Route, Topology};
use crate::backend::{Check, Status};
use crate::error::Result;

const ID: &str = "rabbitmq-dead-letter-route";
const TITLE: &str = "The source's dead letters reach the DLQ";

impl Api {
    /// The exchanges (with their alternate exchanges) and bindings of `vhost`, and the names
    /// of `queues` (its queues, from [`Api::queues`]).
    pub async fn topology(&self, vhost: &str, queues: &[QueueInfo]) -> Result<Topology> {
        let list = |v: Option<Value>| v.and_then(|v| v.as_array().cloned()).unwrap_or_default();
        let mut t = Topology {
            queues: queues.iter().map(|q| q.name().to_string()).collect(),
            ..Topology::default()
        };
        let xs = self
            .get(&format!(
                "exchanges/{}?columns=name,type,arguments,policy",
                seg(vhost)
            ))
            .await?;
        for x in list(xs) {
            let alternate = match (
                x["arguments"]["alternate-exchange"].as_str(),
                x["policy"].as_str(),
            ) {
                (Some(ae), _) => Alternate::Exchange(ae.to_string()),
                (None, Some(p)) => self.policy_alternate(vhost, p).await,
                (None, None) => Alternate::None,
            };
            t.exchanges.insert(
                x["name"].as_str().unwrap_or_default().to_string(),
                Exchange {
                    kind: x["type"].as_str().unwrap_or("?").to_string(),
                    alternate,
                },
            );
        }
        for b in list(self.get(&format!("bindings/{}", seg(vhost))).await?) {
            let s = |f: &str| b[f].as_str().unwrap_or_default().to_string();
            t.bindings.push(Binding {
                source: s("source"),
                destination: s("destination"),
                to_exchange: b["destination_type"] == "exchange",
                key: s("routing_key"),
                arguments: b["arguments"].as_object().cloned().unwrap_or_default(),
            });
        }
        Ok(t)
    }

    /// The alternate exchange policy `p` sets, if any.
    async fn policy_alternate(&self, vhost: &str, p: &str) -> Alternate {
        match self
            .get(&format!("policies/{}/{}", seg(vhost), seg(p)))
            .await
        {
            Ok(Some(pol)) => match pol["definition"]["alternate-exchange"].as_str() {
                Some(ae) => Alternate::Exchange(ae.to_string()),
                None => Alternate::None,
            },
            Ok(None) => Alternate::None,
            Err(e) => Alternate::Unknown(format!(
                "policy {p} may set an alternate exchange, and it cannot be read ({e})"
            )),
        }
    }
}

/// A queue that dead-letters into the DLQ (or the configured source).
pub struct Feeder {
    pub info: QueueInfo,
    /// Where its dead letters go.
    pub dl: DeadLetters,
}

impl Feeder {
    /// `info`'s dead-letter route; None when it has no dead-letter exchange.
    pub fn of(t: &Topology, info: QueueInfo) -> Option<Feeder> {
        let (x, _) = info.setting_str("dead-letter-exchange")?;
        let key = info.setting_str("dead-letter-routing-key").map(|(k, _)| k);
        let dl = routing::dead_letters(t, info.name(), &x, key.as_deref());
        Some(Feeder { info, dl })
    }
}

/// The queues of `queues` (but `q`) whose dead letters reach `q`, surely or for some keys.
pub fn feeders(t: &Topology, queues: Vec<QueueInfo>, q: &str) -> Vec<Feeder> {
    queues
        .into_iter()
        .filter(|s| s.name() != q)
        .filter_map(|s| Feeder::of(t, s))
        .filter(|f| f.dl.reach(q) != Reach::None)
        .collect()
}

fn exchange_shown(t: &Topology, x: &str) -> String {
    match t.exchanges.get(x) {
        _ if x.is_empty() => "the default exchange".into(),
        Some(e) => format!("exchange `{x}` ({})", e.kind),
        None => format!("exchange `{x}`"),
    }
}

/// Why a key reaches nothing: the exchange's rule and its bindings.
fn why_nowhere(t: &Topology, vhost: &str, x: &str, key: &str) -> String {
    if x.is_empty() {
        return format!("no queue named `{key}` in vhost `{vhost}`");
    }
    let rule = match t.exchanges.get(x).map(|e| e.kind.as_str()) {
        Some("direct") => "a direct exchange routes a key equal to a binding's key",
        Some("topic") => {
            "a topic exchange matches words split on `.`, `*` one word, `#` zero or more"
        }
        Some("headers") => "a headers exchange matches the message's headers",
        _ => "",
    };
    let bound: Vec<String> = t
        .bindings
        .iter()
        .filter(|b| b.source == x)
        .map(|b| format!("`{}` → {}", b.key, b.destination))
        .collect();
    let bound = if bound.is_empty() {
        "it has no bindings".to_string()
    } else {
        format!("its bindings: {}", bound.join(", "))
    };
    if rule.is_empty() {
        bound
    } else {
        format!("{rule}; {bound}")
    }
}

fn route_shown(r: &Route) -> String {
    let mut parts = Vec::new();
    if !r.queues.is_empty() {
        parts.push(r.queues.iter().cloned().collect::<Vec<_>>().join(", "));
    }
    if !r.maybe.is_empty() {
        parts.push(format!(
            "maybe {} (cannot tell: {})",
            r.maybe.iter().cloned().collect::<Vec<_>>().join(", "),
            r.unsure.iter().cloned().collect::<Vec<_>>().join("; ")
        ));
    }
    if parts.is_empty() {
        parts.push("no queue".into());
    }
    if !r.missing.is_empty() {
        parts.push(format!(
            "(exchange {} on the way does not exist)",
            r.missing
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    parts.join(" ")
}

/// How to make dead letters with `key` reach `dlq`.
fn fix(t: &Topology, vhost: &str, source: &str, x: &str, key: &str, dlq: &str) -> String {
    if x.is_empty() {
        return format!(
            "set the dead-letter routing key to the DLQ's name: `rabbitmqctl set_policy --vhost {vhost} {source}-dlx '^{}$' '{{\"dead-letter-exchange\":\"\",\"dead-letter-routing-key\":\"{dlq}\"}}' --apply-to queues` (a queue's own x-dead-letter-routing-key wins over a policy: then re-declare the queue with x-dead-letter-routing-key={dlq})",
            regex::escape(source)
        );
    }
    let bind = match t.exchanges.get(x).map(|e| e.kind.as_str()) {
        Some("direct" | "topic" | "fanout" | "headers") => format!(
            "bind the DLQ for that key: `rabbitmqadmin --vhost={vhost} declare binding source={x} destination={dlq} routing_key={key}`"
        ),
        _ => format!("route key `{key}` of `{x}` to {dlq}"),
    };
    // A key the DLQ is bound with already, where the exchange compares keys as they are.
    let direct = t
        .exchanges
        .get(x)
        .is_some_and(|e| e.kind == "direct" || e.kind == "topic");
    let bound = t.bindings.iter().find(|b| {
        b.source == x
            && b.destination == dlq
            && !b.to_exchange
            && !b.key.split('.').any(|w| w == "*" || w == "#")
    });
    match bound {
        Some(b) if direct => format!(
            "{bind}, or set {source}'s dead-letter routing key to `{}`, which {dlq} is bound with (a dead-letter-routing-key policy, or the x-dead-letter-routing-key argument)",
            b.key
        ),
        _ => bind,
    }
}

/// verify's check of `name`'s dead-letter route (in `vhost`, whose topology is `t`): its
/// dead letters must reach some queue, and `dlq` among them.
pub fn route_check(t: &Topology, vhost: &str, name: &str, dl: &DeadLetters, dlq: &str) -> Check {
    let x = &dl.exchange;
    if !x.is_empty() && !t.exchanges.contains_key(x) {
        return Check::new(
            ID,
            TITLE,
            Status::Fail,
            format!(
                "{name}'s dead-letter exchange `{x}` does not exist: RabbitMQ drops its dead letters silently (declare it and bind {dlq}: `rabbitmqadmin --vhost={vhost} declare exchange name={x} type=direct`, then a binding)"
            ),
        );
    }
    let lead = match &dl.fixed_key {
        Some(k) => format!(
            "{name} → {} with dead-letter-routing-key `{k}`",
            exchange_shown(t, x)
        ),
        None => format!(
            "{name} → {} with each message's own routing key (no dead-letter-routing-key): it depends on each message's routing key; for the keys {name}'s bindings give",
            exchange_shown(t, x)
        ),
    };
    let mut steps: Vec<String> = dl
        .routes
        .iter()
        .map(|(k, r)| format!("key `{k}` → {}", route_shown(r)))
        .collect();
    if !dl.unknown_keys.is_empty() {
        steps.push(format!(
            "messages that arrive through {} carry keys dlqctl cannot know",
            dl.unknown_keys.join(", ")
        ));
    }
    let said = format!("{lead}: {}", steps.join("; "));
    verdict(t, vhost, name, dl, dlq, &said)
}

/// The route check's status and detail, given what it found (`said`).
fn verdict(
    t: &Topology,
    vhost: &str,
    name: &str,
    dl: &DeadLetters,
    dlq: &str,
    said: &str,
) -> Check {
    let x = &dl.exchange;
    let dropped: Vec<&String> = dl
        .routes
        .iter()
        .filter(|(_, r)| r.dropped())
        .map(|(k, _)| k)
        .collect();
    if let Some(k) = dropped.first() {
        return Check::new(
            ID,
            TITLE,
            Status::Fail,
            format!(
                "{said}. Dead letters are dropped silently: RabbitMQ discards a dead letter that routes nowhere (key `{k}`: {}). Fix: {}",
                why_nowhere(t, vhost, x, k),
                fix(t, vhost, name, x, k, dlq)
            ),
        );
    }
    // Keys that surely do not reach the DLQ (a key that may reach it is "cannot tell").
    let missed: Vec<&String> = dl
        .routes
        .iter()
        .filter(|(_, r)| !r.queues.contains(dlq) && !r.maybe.contains(dlq))
        .map(|(k, _)| k)
        .collect();
    match dl.reach(dlq) {
        Reach::None => Check::new(
            ID,
            TITLE,
            Status::Fail,
            format!(
                "{said}: its dead letters reach {}, not {dlq}. Fix: {}",
                reached(dl),
                fix(
                    t,
                    vhost,
                    name,
                    x,
                    missed.first().map_or("", |k| k.as_str()),
                    dlq
                )
            ),
        ),
        Reach::Some if dl.routes.is_empty() || missed.is_empty() => Check::new(
            ID,
            TITLE,
            Status::Warn,
            format!("{said}: cannot tell whether every dead letter reaches {dlq}"),
        ),
        Reach::Some => Check::new(
            ID,
            TITLE,
            Status::Warn,
            format!(
                "{said}: dead letters with key {} may not reach {dlq}. Fix: {}",
                missed
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                fix(t, vhost, name, x, missed[0], dlq)
            ),
        ),
        Reach::Every => match &dl.own_key {
            // Messages published straight to the source (the default exchange) dead-letter
            // with its name as their key.
            Some((k, r)) if !r.queues.contains(dlq) => Check::new(
                ID,
                TITLE,
                Status::Warn,
                format!(
                    "{said}; but a message published straight to {name} (the default exchange) dead-letters with key `{k}` → {}. Fix, if anything publishes so: {}",
                    route_shown(r),
                    fix(t, vhost, name, x, k, dlq)
                ),
            ),
            _ => Check::new(ID, TITLE, Status::Pass, said),
        },
    }
}

/// Every queue the dead letters reach, surely or maybe.
fn reached(dl: &DeadLetters) -> String {
    let mut all: Vec<String> = dl
        .routes
        .iter()
        .flat_map(|(_, r)| r.queues.iter().chain(r.maybe.iter()).cloned())
        .collect();
    all.sort();
    all.dedup();
    all.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(kind: &str, args: serde_json::Value) -> Topology {
        let mut t = Topology::default();
        t.exchanges.insert(
            "x".into(),
            Exchange {
                kind: kind.into(),
                alternate: Alternate::None,
            },
        );
        t.bindings.push(Binding {
            source: "x".into(),
            destination: "dlq".into(),
            to_exchange: false,
            key: "k".into(),
            arguments: args.as_object().cloned().unwrap_or_default(),
        });
        t.queues = ["dlq".to_string(), "src".to_string()].into();
        t
    }

    fn check(t: &Topology, key: &str) -> Check {
        let dl = routing::dead_letters(t, "src", "x", Some(key));
        route_check(t, "/", "src", &dl, "dlq")
    }

    #[test]
    fn a_headers_binding_is_cannot_tell_and_a_missed_key_is_dropped() {
        let h = topo(
            "headers",
            serde_json::json!({"x-match": "any", "kind": "a"}),
        );
        let c = check(&h, "k");
        assert_eq!(c.status, Status::Warn, "{}", c.detail);
        assert!(c.detail.contains("cannot tell"), "{}", c.detail);
        let d = topo("direct", serde_json::json!({}));
        assert_eq!(check(&d, "k").status, Status::Pass);
        let c = check(&d, "nomatch");
        assert_eq!(c.status, Status::Fail);
        assert!(c.detail.contains("dropped silently"), "{}", c.detail);
        assert!(
            c.detail
                .contains("or set src's dead-letter routing key to `k`"),
            "{}",
            c.detail
        );
    }
}
