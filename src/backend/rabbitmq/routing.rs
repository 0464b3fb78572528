//! How RabbitMQ routes a message, on the broker's own rules (`rabbit_exchange:route` and the
//! exchange types), for the one question inspect and verify ask: which queues does a dead
//! letter with this routing key reach?
//!
//! * the default exchange (`""`): the queue named by the key, in the vhost;
//! * `direct`: a binding whose key equals the routing key;
//! * `fanout`: every binding;
//! * `topic`: keys split into words on `.`, `*` one word, `#` zero or more;
//! * `headers`: decided by the message's headers (`x-match` all or any over the binding's
//!   arguments), which a routing key does not tell: only a binding without arguments is known
//!   (`all` matches every message, `any` none);
//! * exchange-to-exchange bindings are followed, each exchange once (RabbitMQ's own guard
//!   against cycles);
//! * an exchange whose bindings match nothing passes the message to its alternate exchange
//!   (the `alternate-exchange` argument, or a policy's), as RabbitMQ does;
//! * other exchange types (plugins: consistent hash, delayed messages, …) are not modelled:
//!   what they reach is "cannot tell".
//!
//! Pure: the topology comes from the management API ([`super::api::Api::topology`]).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// A vhost's exchanges, bindings and queues, as the management API lists them.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub exchanges: BTreeMap<String, Exchange>,
    pub bindings: Vec<Binding>,
    pub queues: BTreeSet<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    /// direct, fanout, topic, headers, or a plugin's type.
    pub kind: String,
    /// Where a message that matches no binding goes.
    pub alternate: Alternate,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Alternate {
    None,
    Exchange(String),
    /// A policy applies that dlqctl could not read (it may set one).
    Unknown(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    pub source: String,
    pub destination: String,
    /// The destination is an exchange (else a queue).
    pub to_exchange: bool,
    pub key: String,
    pub arguments: Map<String, Value>,
}

/// Where one message goes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Route {
    /// The queues it surely reaches.
    pub queues: BTreeSet<String>,
    /// The queues it reaches only where its headers (or an exchange type dlqctl does not
    /// model) say so.
    pub maybe: BTreeSet<String>,
    /// Why part of the route cannot be told from the key.
    pub unsure: BTreeSet<String>,
    /// Exchanges named on the way (a binding's destination, an alternate exchange) that do
    /// not exist.
    pub missing: BTreeSet<String>,
}

impl Route {
    /// Nothing is reached, not even maybe: RabbitMQ discards the message.
    pub fn dropped(&self) -> bool {
        self.queues.is_empty() && self.maybe.is_empty()
    }
}

/// Whether a binding takes a message with the routing key.
#[derive(Clone, Debug, PartialEq)]
enum Match {
    Yes,
    No,
    /// The key alone cannot decide (why).
    Unknown(String),
}

/// The words of a topic key: split on `.`; the empty key has none (as RabbitMQ splits it).
fn words(s: &str) -> Vec<&str> {
    if s.is_empty() {
        Vec::new()
    } else {
        s.split('.').collect()
    }
}

/// Does topic binding `pattern` match routing key `key`? `*` is one word, `#` zero or more.
/// Dynamic programming over (pattern word, key word), so a pattern of many `#` stays linear.
pub fn topic_matches(pattern: &str, key: &str) -> bool {
    let p = words(pattern);
    let k = words(key);
    // m[j]: p[i..] matches k[j..], for the current i (from the end).
    let mut m = vec![false; k.len() + 1];
    m[k.len()] = true;
    for i in (0..p.len()).rev() {
        let mut next = vec![false; k.len() + 1];
        for j in (0..=k.len()).rev() {
            next[j] = match p[i] {
                "#" => m[j] || (j < k.len() && next[j + 1]),
                "*" => j < k.len() && m[j + 1],
                w => j < k.len() && k[j] == w && m[j + 1],
            };
        }
        m = next;
    }
    m[0]
}

/// A headers binding, for a message whose headers are not known.
fn headers_match(args: &Map<String, Value>) -> Match {
    let how = args.get("x-match").and_then(Value::as_str).unwrap_or("all");
    let with_x = how.ends_with("-with-x");
    let decisive = args
        .keys()
        .any(|k| k != "x-match" && (with_x || !k.starts_with("x-")));
    match (how, decisive) {
        ("all" | "all-with-x", false) => Match::Yes,
        ("any" | "any-with-x", false) => Match::No,
        _ => Match::Unknown(format!(
            "a headers binding (x-match={how}, {}) decides by each message's headers, which the routing key does not tell",
            Value::Object(args.clone())
        )),
    }
}

fn binding_match(kind: &str, exchange: &str, b: &Binding, key: &str) -> Match {
    match kind {
        "direct" => bool_match(b.key == key),
        "fanout" => Match::Yes,
        "topic" => bool_match(topic_matches(&b.key, key)),
        "headers" => headers_match(&b.arguments),
        other => Match::Unknown(format!(
            "exchange `{exchange}` is of type {other}, whose routing dlqctl does not model"
        )),
    }
}

fn bool_match(b: bool) -> Match {
    if b { Match::Yes } else { Match::No }
}

/// Where a message published to `exchange` with routing key `key` goes.
pub fn route(t: &Topology, exchange: &str, key: &str) -> Route {
    let mut r = Route::default();
    if exchange.is_empty() {
        if t.queues.contains(key) {
            r.queues.insert(key.to_string());
        }
        return r;
    }
    let mut seen = BTreeMap::new();
    walk(t, exchange, key, true, &mut seen, &mut r);
    // A queue reached surely is not "maybe" as well.
    r.maybe = r.maybe.difference(&r.queues).cloned().collect();
    r
}

/// Route through exchange `x`; `sure`: the message surely gets here. Each exchange is walked
/// once (again only to turn a "maybe" into a "sure"), as RabbitMQ visits each once.
fn walk(
    t: &Topology,
    x: &str,
    key: &str,
    sure: bool,
    seen: &mut BTreeMap<String, bool>,
    r: &mut Route,
) {
    match seen.get(x) {
        Some(&was) if was || !sure => return,
        _ => {}
    }
    seen.insert(x.to_string(), sure);
    let Some(ex) = t.exchanges.get(x) else {
        r.missing.insert(x.to_string());
        return;
    };
    let (mut matched, mut unknown) = (false, false);
    for b in t.bindings.iter().filter(|b| b.source == x) {
        let here = match binding_match(&ex.kind, x, b, key) {
            Match::No => continue,
            Match::Yes => {
                matched = true;
                sure
            }
            Match::Unknown(why) => {
                unknown = true;
                r.unsure.insert(why);
                false
            }
        };
        if b.to_exchange {
            walk(t, &b.destination, key, here, seen, r);
        } else if here {
            r.queues.insert(b.destination.clone());
        } else {
            r.maybe.insert(b.destination.clone());
        }
    }
    if matched {
        return;
    }
    // Nothing matched surely: RabbitMQ hands the message to the alternate exchange.
    match &ex.alternate {
        Alternate::None => {}
        Alternate::Exchange(ae) => walk(t, ae, key, sure && !unknown, seen, r),
        Alternate::Unknown(why) => {
            r.unsure.insert(why.clone());
        }
    }
}

/// Where a queue's dead letters go.
#[derive(Clone, Debug, PartialEq)]
pub struct DeadLetters {
    /// The dead-letter exchange (`""`: the default exchange).
    pub exchange: String,
    /// The dead-letter routing key, when set: every dead letter carries it. Else each keeps
    /// the routing keys its message was published with.
    pub fixed_key: Option<String>,
    /// Each routing key a dead letter can carry, as far as known, and its route.
    pub routes: Vec<(String, Route)>,
    /// The source's bindings whose messages' keys cannot be known (a pattern, a fanout or a
    /// headers exchange), as `exchange (type, key)`.
    pub unknown_keys: Vec<String>,
    /// Where a key no binding names goes (with unknown keys): a route that reaches a queue
    /// whatever the key (a fanout, a `#` binding) settles them.
    pub any_key: Option<Route>,
    /// A queue with bindings also gets the messages published straight to it (the default
    /// exchange, keyed by its name): that key's route, where no dead-letter key is set.
    pub own_key: Option<(String, Route)>,
}

/// A routing key no binding names (`#` matches it, `*` does not: three words).
const ANY_KEY: &str = "dlqctl.any-key.probe";

/// How much of a queue's dead letters reach a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Every key known reaches it surely, and every key is known.
    Every,
    /// Some do, or may.
    Some,
    None,
}

impl DeadLetters {
    pub fn reach(&self, q: &str) -> Reach {
        let sure = |r: &Route| r.queues.contains(q);
        let may = |r: &Route| sure(r) || r.maybe.contains(q);
        // Unknown keys are settled only by a route that takes any key.
        let unknown_reach = self.unknown_keys.is_empty() || self.any_key.as_ref().is_some_and(sure);
        if (!self.routes.is_empty() || !self.unknown_keys.is_empty())
            && unknown_reach
            && self.routes.iter().all(|(_, r)| sure(r))
        {
            Reach::Every
        } else if self.routes.iter().any(|(_, r)| may(r)) || !self.unknown_keys.is_empty() {
            // Keys dlqctl cannot know may reach it: cannot tell, not "none".
            Reach::Some
        } else {
            Reach::None
        }
    }
}

/// Where the dead letters of queue `source` go: through `exchange`, with `fixed_key` (the
/// dead-letter routing key) when set, else with the keys its messages arrive with.
pub fn dead_letters(
    t: &Topology,
    source: &str,
    exchange: &str,
    fixed_key: Option<&str>,
) -> DeadLetters {
    let (keys, unknown_keys) = match fixed_key {
        Some(k) => (vec![k.to_string()], Vec::new()),
        None => message_keys(t, source),
    };
    let own_key = (fixed_key.is_none() && !keys.iter().any(|k| k == source))
        .then(|| (source.to_string(), route(t, exchange, source)));
    DeadLetters {
        any_key: (!unknown_keys.is_empty()).then(|| route(t, exchange, ANY_KEY)),
        own_key,
        exchange: exchange.to_string(),
        fixed_key: fixed_key.map(str::to_string),
        routes: keys
            .into_iter()
            .map(|k| {
                let r = route(t, exchange, &k);
                (k, r)
            })
            .collect(),
        unknown_keys,
    }
}

/// The routing keys the messages of queue `q` arrive with, where its bindings tell them: a
/// direct binding's key, a topic binding's key without wildcards; the queue's own name when
/// it has no binding but the default exchange's (messages published straight to it).
fn message_keys(t: &Topology, q: &str) -> (Vec<String>, Vec<String>) {
    let mut keys = BTreeSet::new();
    let mut unknown = Vec::new();
    let bound: Vec<&Binding> = t
        .bindings
        .iter()
        .filter(|b| !b.to_exchange && b.destination == q && !b.source.is_empty())
        .collect();
    if bound.is_empty() {
        keys.insert(q.to_string());
    }
    for b in bound {
        let kind = t.exchanges.get(&b.source).map_or("?", |x| x.kind.as_str());
        let exact = match kind {
            "direct" => true,
            "topic" => !words(&b.key).iter().any(|w| *w == "*" || *w == "#"),
            _ => false,
        };
        if exact {
            keys.insert(b.key.clone());
        } else {
            unknown.push(format!("`{}` ({kind}, key `{}`)", b.source, b.key));
        }
    }
    (keys.into_iter().collect(), unknown)
}

#[cfg(test)]
#[path = "routing_tests.rs"]
mod tests;
