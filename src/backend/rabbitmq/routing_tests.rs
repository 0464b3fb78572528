use proptest::prelude::*;
use serde_json::json;

use super::*;

fn x(kind: &str) -> Exchange {
    Exchange {
        kind: kind.into(),
        alternate: Alternate::None,
    }
}

fn bind(source: &str, dest: &str, key: &str) -> Binding {
    Binding {
        source: source.into(),
        destination: dest.into(),
        to_exchange: false,
        key: key.into(),
        arguments: Map::new(),
    }
}

fn e2e(source: &str, dest: &str, key: &str) -> Binding {
    Binding {
        to_exchange: true,
        ..bind(source, dest, key)
    }
}

fn topo(exchanges: &[(&str, Exchange)], bindings: Vec<Binding>, queues: &[&str]) -> Topology {
    Topology {
        exchanges: exchanges
            .iter()
            .map(|(n, e)| (n.to_string(), e.clone()))
            .collect(),
        bindings,
        queues: queues.iter().map(|q| q.to_string()).collect(),
    }
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn topic_patterns_match_as_rabbitmq_matches_them() {
    for (pattern, key, want) in [
        ("dead.#", "dead.orders", true),
        ("dead.#", "dead", true),
        ("dead.#", "dead.a.b.c", true),
        ("dead.#", "deadly", false),
        ("dead.*", "dead.orders", true),
        ("dead.*", "dead", false),
        ("dead.*", "dead.a.b", false),
        ("*.orders", "dead.orders", true),
        ("#", "", true),
        ("#", "anything.at.all", true),
        ("*", "", false),
        ("", "", true),
        ("", "a", false),
        ("a.#.b", "a.b", true),
        ("a.#.b", "a.x.y.b", true),
        ("a.#.b", "a.x.y.c", false),
        ("#.#", "a", true),
        ("a..b", "a..b", true),
        ("a.*.b", "a..b", true),
        ("work", "work", true),
        ("work", "q", false),
    ] {
        assert_eq!(topic_matches(pattern, key), want, "{pattern} vs {key}");
    }
}

/// The reference: a plain backtracking matcher (exponential, fine for short inputs).
fn slow(p: &[&str], k: &[&str]) -> bool {
    match p.split_first() {
        None => k.is_empty(),
        Some((&"#", rest)) => (0..=k.len()).any(|i| slow(rest, &k[i..])),
        Some((&"*", rest)) => !k.is_empty() && slow(rest, &k[1..]),
        Some((w, rest)) => k.first() == Some(w) && slow(rest, &k[1..]),
    }
}

proptest! {
    #[test]
    fn topic_matching_agrees_with_the_backtracking_reference(
        p in proptest::collection::vec(prop_oneof!["#", "\\*", "a", "b", ""], 0..6),
        k in proptest::collection::vec(prop_oneof!["a", "b", ""], 0..6),
    ) {
        let (ps, ks) = (p.join("."), k.join("."));
        prop_assert_eq!(topic_matches(&ps, &ks), slow(&words(&ps), &words(&ks)), "{} vs {}", ps, ks);
    }

    #[test]
    fn a_key_with_its_own_words_as_pattern_always_matches(k in "[a-z]{1,3}(\\.[a-z]{0,3}){0,4}") {
        prop_assert!(topic_matches(&k, &k));
        prop_assert!(topic_matches("#", &k));
    }
}

#[test]
fn a_direct_exchange_routes_only_keys_it_has_a_binding_for() {
    let t = topo(
        &[("op3.dlx", x("direct"))],
        vec![
            bind("op3.dlx", "qdlq", "q"),
            bind("op3.dlx", "work.dlq", "work"),
        ],
        &["qdlq", "work.dlq"],
    );
    assert_eq!(route(&t, "op3.dlx", "q").queues, set(&["qdlq"]));
    assert!(route(&t, "op3.dlx", "nomatch").dropped());
}

#[test]
fn the_default_exchange_routes_to_the_queue_named_by_the_key() {
    let t = topo(&[], vec![], &["dlq"]);
    assert_eq!(route(&t, "", "dlq").queues, set(&["dlq"]));
    assert!(route(&t, "", "no-such-queue").dropped());
}

#[test]
fn fanout_and_topic_exchanges() {
    let t = topo(
        &[("f", x("fanout")), ("t", x("topic"))],
        vec![bind("f", "a", "ignored"), bind("t", "tdlq", "dead.#")],
        &["a", "tdlq"],
    );
    assert_eq!(route(&t, "f", "whatever").queues, set(&["a"]));
    assert_eq!(route(&t, "t", "dead.orders").queues, set(&["tdlq"]));
    assert!(route(&t, "t", "live.orders").dropped());
}

#[test]
fn headers_bindings_are_known_only_without_arguments() {
    let mut any = bind("h", "maybe", "");
    any.arguments = json!({"x-match": "any", "kind": "a"})
        .as_object()
        .unwrap()
        .clone();
    let all_empty = bind("h", "every", "");
    let mut any_empty = bind("h", "never", "");
    any_empty.arguments = json!({"x-match": "any"}).as_object().unwrap().clone();
    let t = topo(
        &[("h", x("headers"))],
        vec![any, all_empty, any_empty],
        &["maybe", "every", "never"],
    );
    let r = route(&t, "h", "k");
    assert_eq!(r.queues, set(&["every"]));
    assert_eq!(r.maybe, set(&["maybe"]));
    assert!(
        r.unsure.iter().any(|w| w.contains("headers")),
        "{:?}",
        r.unsure
    );
}

#[test]
fn exchange_to_exchange_bindings_are_followed_and_cycles_end() {
    let t = topo(
        &[("a", x("topic")), ("b", x("direct")), ("c", x("fanout"))],
        vec![
            e2e("a", "b", "dead.*"),
            e2e("b", "c", "dead.x"),
            e2e("c", "a", ""),
            bind("c", "end", ""),
        ],
        &["end"],
    );
    assert_eq!(route(&t, "a", "dead.x").queues, set(&["end"]));
    assert!(route(&t, "a", "dead.y").dropped());
}

#[test]
fn an_alternate_exchange_takes_what_matches_nothing() {
    let mut main = x("direct");
    main.alternate = Alternate::Exchange("ae".into());
    let t = topo(
        &[("main", main), ("ae", x("fanout"))],
        vec![bind("main", "hit", "k"), bind("ae", "unrouted", "")],
        &["hit", "unrouted"],
    );
    assert_eq!(route(&t, "main", "k").queues, set(&["hit"]));
    assert_eq!(route(&t, "main", "other").queues, set(&["unrouted"]));
    // An alternate exchange that does not exist: dropped, and named.
    let mut lost = x("direct");
    lost.alternate = Alternate::Exchange("gone".into());
    let t = topo(&[("lost", lost)], vec![], &[]);
    let r = route(&t, "lost", "k");
    assert!(r.dropped());
    assert_eq!(r.missing, set(&["gone"]));
}

#[test]
fn a_plugin_exchange_type_cannot_be_told() {
    let t = topo(
        &[("d", x("x-delayed-message"))],
        vec![bind("d", "q", "k")],
        &["q"],
    );
    let r = route(&t, "d", "k");
    assert_eq!(r.maybe, set(&["q"]));
    assert!(!r.dropped());
}

#[test]
fn dead_letters_keep_the_message_keys_unless_a_dead_letter_key_is_set() {
    let t = topo(
        &[
            ("in", x("direct")),
            ("pat", x("topic")),
            ("dlx", x("direct")),
        ],
        vec![
            bind("in", "src", "orders"),
            bind("pat", "src", "orders.*"),
            bind("dlx", "dlq", "orders"),
        ],
        &["src", "dlq"],
    );
    let d = dead_letters(&t, "src", "dlx", None);
    assert_eq!(d.routes.len(), 1);
    assert_eq!(d.routes[0].0, "orders");
    assert_eq!(d.unknown_keys, ["`pat` (topic, key `orders.*`)"]);
    assert_eq!(d.reach("dlq"), Reach::Some);
    let fixed = dead_letters(&t, "src", "dlx", Some("orders"));
    assert_eq!(fixed.reach("dlq"), Reach::Every);
    assert_eq!(
        dead_letters(&t, "src", "dlx", Some("nomatch")).reach("dlq"),
        Reach::None
    );
    // A queue with no binding of its own gets its messages through the default exchange,
    // keyed by its name.
    let t = topo(
        &[("dlx", x("fanout"))],
        vec![bind("dlx", "dlq", "")],
        &["lone", "dlq"],
    );
    let d = dead_letters(&t, "lone", "dlx", None);
    assert_eq!(d.routes[0].0, "lone");
    assert_eq!(d.reach("dlq"), Reach::Every);
}

/// Keys dlqctl cannot know (a source fed only by a fanout) reach a fanout DLX's queue whatever
/// they are (every dead letter arrives); through a direct DLX they cannot be told, which is
/// not "none" (verify failed such a route, suggesting an empty key).
#[test]
fn unknown_keys_are_settled_by_a_route_that_takes_any_key() {
    let fed = |dlx: &str, key: &str| {
        topo(
            &[("in", x("fanout")), ("dlx", x(dlx))],
            vec![bind("in", "src", ""), bind("dlx", "dlq", key)],
            &["src", "dlq"],
        )
    };
    let d = dead_letters(&fed("fanout", ""), "src", "dlx", None);
    assert!(d.routes.is_empty() && !d.unknown_keys.is_empty(), "{d:?}");
    assert_eq!(d.reach("dlq"), Reach::Every);
    assert_eq!(
        dead_letters(&fed("topic", "#"), "src", "dlx", None).reach("dlq"),
        Reach::Every
    );
    assert_eq!(
        dead_letters(&fed("direct", "orders"), "src", "dlx", None).reach("dlq"),
        Reach::Some
    );
}

/// A source with bindings also gets what is published straight to it (the default exchange,
/// keyed by its name): where that key does not reach the DLQ, it is said.
#[test]
fn the_key_of_a_message_published_straight_to_the_source_is_routed_too() {
    let t = topo(
        &[("in", x("direct")), ("dlx", x("direct"))],
        vec![bind("in", "src", "orders"), bind("dlx", "dlq", "orders")],
        &["src", "dlq"],
    );
    let d = dead_letters(&t, "src", "dlx", None);
    assert_eq!(d.reach("dlq"), Reach::Every, "the bound keys all reach it");
    let (k, r) = d.own_key.as_ref().expect("the source's own key");
    assert_eq!(k, "src");
    assert!(r.dropped(), "{r:?}");
    let c = crate::backend::rabbitmq::routes::route_check(&t, "/", "src", &d, "dlq");
    assert_eq!(c.status, crate::backend::Status::Warn, "{}", c.detail);
    assert!(
        c.detail.contains("published straight to src"),
        "{}",
        c.detail
    );
    // With a dead-letter key, every dead letter carries it: no own key to follow.
    assert!(
        dead_letters(&t, "src", "dlx", Some("orders"))
            .own_key
            .is_none()
    );
}
