//! RabbitMQ moves (issue 27): where a redrive goes, unroutable copies, the lock and a foreign
//! consumer, purge, `--transform`, the loop guard, the audit trail, and verify's checks.

use lapin::BasicProperties;
use lapin::options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};

use crate::amqp::{Kind, Rabbit, run, s, stable_id, table};
use crate::harness::{Db, Sandbox};
use crate::pair::Pair;
use crate::pair_rabbitmq::RabbitPair;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn redrive_sends_each_message_where_it_came_from() {
    let r = Rabbit::new("dest").await;
    // Two work queues dead-letter into one DLQ; a Spring recoverer's message names an
    // exchange and a routing key.
    r.pair(Kind::Classic, "a", "dlq").await;
    r.declare(
        "b",
        Kind::Quorum,
        &[
            ("x-dead-letter-exchange", s("")),
            ("x-dead-letter-routing-key", s(&r.name("dlq"))),
        ],
    )
    .await;
    let a = r.dead_letters("a", "dlq", "a", 2).await;
    r.publish_n("b", "b", 2).await;
    r.reject("b", 2, "dlq").await;
    r.wait_ready("dlq", 4).await;
    let exchange = r.name("shop");
    r.ch.exchange_declare(
        exchange.as_str().into(),
        lapin::ExchangeKind::Topic,
        ExchangeDeclareOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
    r.declare("spring-target", Kind::Classic, &[]).await;
    r.ch.queue_bind(
        r.name("spring-target").as_str().into(),
        exchange.as_str().into(),
        "order.#".into(),
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
    r.publish(
        "dlq",
        b"{}",
        BasicProperties::default()
            .with_message_id("spring-1".into())
            .with_headers(table(&[
                ("x-exception-message", s("boom")),
                ("x-original-exchange", s(&exchange)),
                ("x-original-routingKey", s("order.created")),
            ])),
    )
    .await;
    let sb = Sandbox::new();
    let out = run(
        &sb,
        &["redrive", &r.url("dlq"), "--yes", "--output", "json"],
    )
    .ok()
    .json();
    assert_eq!(out["moved"], 5, "{out}");
    let ids = |q: &'static str| {
        let r = &r;
        async move {
            let mut v: Vec<String> = r.drain_ids(q).await.into_iter().flatten().collect();
            v.sort();
            v
        }
    };
    assert_eq!(ids("a").await, a);
    assert_eq!(ids("b").await, vec!["b-0", "b-1"]);
    assert_eq!(ids("spring-target").await, vec!["spring-1"]);
    assert_eq!(r.ready("dlq").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unroutable_copy_is_a_failure_and_stays() {
    let r = Rabbit::new("unroutable").await;
    r.pair(Kind::Classic, "orders", "dlq").await;
    r.dead_letters("orders", "dlq", "m", 3).await;
    let exchange = r.name("nowhere");
    r.ch.exchange_declare(
        exchange.as_str().into(),
        lapin::ExchangeKind::Direct,
        ExchangeDeclareOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
    let to = r.url("x").replace(
        &format!("queue={}", r.name("x")),
        &format!("exchange={exchange}&routing_key=none"),
    );
    let sb = Sandbox::new();
    let out = run(
        &sb,
        &[
            "redrive",
            &r.url("dlq"),
            "--to",
            &to,
            "--yes",
            "--output",
            "json",
        ],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let j = out.json();
    assert_eq!(
        (j["moved"].as_u64(), j["failed"].as_u64()),
        (Some(0), Some(3)),
        "{j}"
    );
    assert!(j["failures"].to_string().contains("unroutable"), "{j}");
    r.wait_no_consumer("dlq").await;
    assert_eq!(r.ready("dlq").await, 3, "nothing left the DLQ");
    // A missing target queue is refused before anything is read.
    let e = run(
        &sb,
        &["redrive", &r.url("dlq"), "--to", &r.url("missing"), "--yes"],
    )
    .code(3);
    assert!(e.stderr.contains("not found"), "{}", e.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_run_or_a_consumer_is_refused_by_name() {
    let r = Rabbit::new("lock").await;
    r.pair(Kind::Classic, "orders", "dlq").await;
    r.dead_letters("orders", "dlq", "m", 2).await;
    // Another run holds the lock queue (a connection of its own, named as dlqctl names them).
    let other = lapin::Connection::connect(
        &crate::amqp::amqp_url(),
        lapin::ConnectionProperties::default()
            .with_connection_name("dlqctl redrive alice@ops-1 pid 4242".into()),
    )
    .await
    .unwrap();
    let ch = other.create_channel().await.unwrap();
    ch.queue_declare(
        format!("dlqctl.lock.{}", r.name("dlq")).as_str().into(),
        QueueDeclareOptions {
            exclusive: true,
            auto_delete: true,
            ..QueueDeclareOptions::default()
        },
        table(&[("dlqctl-holder", s("dlqctl redrive alice@ops-1 pid 4242"))]),
    )
    .await
    .unwrap();
    let sb = Sandbox::new();
    let e = run(&sb, &["redrive", &r.url("dlq"), "--yes"]).code(3);
    assert!(
        e.stderr.contains("another dlqctl run") && e.stderr.contains("alice@ops-1 pid 4242"),
        "{}",
        e.stderr
    );
    other.close(200, "".into()).await.unwrap();
    // An application consuming the DLQ: refused, with the consumer named.
    let app = lapin::Connection::connect(
        &crate::amqp::amqp_url(),
        lapin::ConnectionProperties::default().with_connection_name("billing-dlq-worker".into()),
    )
    .await
    .unwrap();
    let ach = app.create_channel().await.unwrap();
    ach.basic_qos(1, Default::default()).await.unwrap();
    let _c = ach
        .basic_consume(
            r.name("dlq").as_str().into(),
            "app".into(),
            Default::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    // The management API names a consumer once its statistics come in (every few seconds).
    crate::pair::wait_until(
        Duration::from_secs(30),
        "the API to list the consumer",
        || async {
            r.api_get(&format!("queues/%2F/{}", r.name("dlq"))).await["consumer_details"]
                .as_array()
                .is_some_and(|c| !c.is_empty())
        },
    )
    .await;
    let e = run(&sb, &["redrive", &r.url("dlq"), "--yes"]).code(3);
    assert!(e.stderr.contains("billing-dlq-worker"), "{}", e.stderr);
    app.close(200, "".into()).await.unwrap();
    r.wait_no_consumer("dlq").await;
    assert_eq!(r.ready("dlq").await, 2, "nothing moved");
}

#[tokio::test(flavor = "multi_thread")]
async fn purge_transform_and_the_loop_guard_on_rabbitmq() {
    let mut p = RabbitPair::new(Kind::Quorum);
    crate::purge::purge_contract(&mut p, true).await;
    crate::purge::purge_survives_a_kill(&mut p).await;
    crate::purge::purge_into_a_queue(&mut p).await;
    crate::dispose::transform_and_count(&mut p).await;

    // The loop guard, as it happens: copies go back to the work queue, whose consumer
    // rejects them again; the second redrive holds them (their count is 1).
    let ids = p.fresh(4).await;
    let sb = Sandbox::new();
    let dlq = p.r().url("dlq");
    run(&sb, &["redrive", &dlq, "--yes", "--output", "json"]).ok();
    p.r().reject("orders", 4, "dlq").await;
    let out = run(
        &sb,
        &[
            "redrive",
            &dlq,
            "--max-redrives",
            "1",
            "--yes",
            "--output",
            "json",
        ],
    )
    .ok()
    .json();
    assert_eq!(
        (out["moved"].as_u64(), out["held"].as_u64()),
        (Some(0), Some(4)),
        "{out}"
    );
    p.settle().await;
    assert_eq!(p.remaining().await, 4);
    // --park: they go to a queue of their own, counted once more.
    p.r().declare("parked", Kind::Classic, &[]).await;
    let out = run(
        &sb,
        &[
            "redrive",
            &dlq,
            "--max-redrives",
            "1",
            "--park",
            &p.r().url("parked"),
            "--yes",
            "--output",
            "json",
        ],
    )
    .ok()
    .json();
    assert_eq!(out["parked"], 4, "{out}");
    let parked = p.r().drain("parked").await;
    let mut got: Vec<String> = parked
        .iter()
        .filter_map(|m| stable_id(&m.delivery.properties))
        .collect();
    got.sort();
    assert_eq!(got, ids);
    for m in &parked {
        assert_eq!(
            crate::amqp::header_text(&m.delivery.properties, "dlqctl-redrive-count").as_deref(),
            Some("2")
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_audit_trail_records_a_rabbitmq_redrive() {
    let mut p = RabbitPair::new(Kind::Classic);
    let ids = p.fresh(3).await;
    let sb = Sandbox::new();
    let dlq = p.r().url("dlq");
    run(
        &sb,
        &[
            "redrive", &dlq, "--reason", "INC-27", "--yes", "--output", "json",
        ],
    )
    .ok();
    let runs = run(&sb, &["audit", "--output", "json"]).ok().json();
    let run = &runs[0];
    assert_eq!(run["command"], "redrive", "{runs}");
    assert_eq!(run["reason"], "INC-27");
    let argv = run["argv"].to_string();
    assert!(
        !argv.contains(&crate::amqp::credentials().1),
        "the password is redacted: {argv}"
    );
    let o = run["outcome"].to_string();
    for id in &ids {
        assert!(o.contains(id.as_str()), "{o}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn verify_checks_routes_guarantees_limits_and_the_arithmetic() {
    let r = Rabbit::new("verify").await;
    // orders (classic) → DLX `dl` (exists, bound) → dlq (quorum, max-length drop-head, no TTL);
    // payments (quorum, at-least-once) → default exchange → dlq;
    // lost (classic) → DLX `missing` (no such exchange).
    let dl = r.name("dl");
    r.ch.exchange_declare(
        dl.as_str().into(),
        lapin::ExchangeKind::Fanout,
        ExchangeDeclareOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
    r.declare(
        "dlq",
        Kind::Quorum,
        &[("x-max-length", AMQPValue::LongInt(100))],
    )
    .await;
    r.ch.queue_bind(
        r.name("dlq").as_str().into(),
        dl.as_str().into(),
        "".into(),
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
    r.declare(
        "orders",
        Kind::Classic,
        &[("x-dead-letter-exchange", s(&dl))],
    )
    .await;
    r.declare(
        "payments",
        Kind::Quorum,
        &[
            ("x-dead-letter-exchange", s("")),
            ("x-dead-letter-routing-key", s(&r.name("dlq"))),
            ("x-dead-letter-strategy", s("at-least-once")),
            ("x-overflow", s("reject-publish")),
            ("x-delivery-limit", AMQPValue::LongInt(5)),
        ],
    )
    .await;
    let db = Db::new("rverify").await;
    db.exec("CREATE TABLE {s}.processed (message_id text PRIMARY KEY, handled_at timestamptz)")
        .await;
    let sb = Sandbox::new();
    let cfg = sb.write(
        "dlqctl.toml",
        &format!(
            "[queues.orders]\ndlq = \"{}\"\n[queues.orders.dedupe]\nurl = \"{}\"\ntable = \"{}.processed\"\nretention = \"30d\"\n",
            r.url("dlq"),
            crate::harness::pg_url(),
            db.schema
        ),
    );
    let out = run(
        &sb,
        &[
            "verify",
            "orders",
            "--config",
            cfg.to_str().unwrap(),
            "--output",
            "json",
        ],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    let checks = &v["queues"][0]["checks"];
    let status = |id: &str, says: &str| -> Vec<String> {
        checks
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["id"] == id && c["detail"].as_str().unwrap_or("").contains(says))
            .map(|c| c["status"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        status("rabbitmq-dead-letter-route", &r.name("orders")),
        ["PASS"],
        "{v}"
    );
    assert_eq!(
        status("rabbitmq-dead-lettering-guarantee", &r.name("orders")),
        ["WARN"],
        "{v}"
    );
    assert_eq!(
        status("rabbitmq-dead-lettering-guarantee", &r.name("payments")),
        ["PASS"],
        "{v}"
    );
    assert_eq!(
        status("rabbitmq-delivery-limit", &r.name("payments")),
        ["PASS"],
        "{v}"
    );
    assert_eq!(
        status("rabbitmq-dlq-length-limit", "drop-head"),
        ["WARN"],
        "{v}"
    );
    // The DLQ keeps dead letters forever: a 30-day dedupe retention is too short.
    let terms = v["queues"][0]["redelivery"].to_string();
    assert!(terms.contains("forever"), "{v}");
    // A dead-letter exchange that does not exist: FAIL (dead letters dropped silently).
    r.declare(
        "lost",
        Kind::Classic,
        &[("x-dead-letter-exchange", s(&r.name("missing")))],
    )
    .await;
    let cfg2 = sb.write(
        "lost.toml",
        &format!(
            "[queues.lost]\ndlq = \"{}\"\nsource = \"{}\"\n",
            r.url("dlq"),
            r.url("lost")
        ),
    );
    let v = run(
        &sb,
        &[
            "verify",
            "lost",
            "--config",
            cfg2.to_str().unwrap(),
            "--output",
            "json",
        ],
    )
    .code(1)
    .json();
    assert!(
        v.to_string()
            .contains("does not exist: RabbitMQ drops its dead letters silently"),
        "{v}"
    );
}

/// The queue being read is refused as a target however its URL spells the broker: the
/// identity is what the broker shows (a marker queue), not the host name.
#[tokio::test(flavor = "multi_thread")]
async fn the_queue_being_read_is_refused_as_a_target_under_another_host_name() {
    let r = Rabbit::new("self").await;
    r.declare("d9", Kind::Classic, &[]).await;
    r.publish_n("d9", "s", 2).await;
    let sb = Sandbox::new();
    let dlq = r.url("d9");
    let alias = dlq.replacen("@127.0.0.1:", "@localhost:", 1);
    assert_ne!(dlq, alias);
    let purge = run(&sb, &["purge", &dlq, "--archive", &alias, "--yes"]).code(2);
    assert!(
        purge.stderr.contains("is the queue being purged"),
        "{}",
        purge.stderr
    );
    let redrive = run(&sb, &["redrive", &dlq, "--to", &alias, "--yes"]).code(2);
    assert!(
        redrive.stderr.contains("is the queue being read"),
        "{}",
        redrive.stderr
    );
    // Another queue on the same broker, spelled either way, is a target.
    r.declare("other", Kind::Classic, &[]).await;
    let other = r.url("other").replacen("@127.0.0.1:", "@localhost:", 1);
    run(&sb, &["redrive", &dlq, "--to", &other, "--yes"]).ok();
    assert_eq!(r.ready("other").await, 2);
    assert_eq!(r.ready("d9").await, 0);
}

/// Operator report (2026-12-06): `--transform '.attrs.newh = "x"'` sent every header of the
/// copy as a string (an i32 as `'5'`, a boolean as `'true'`, bytes as `'0xff00'`, `x-death` as
/// JSON text, whose history RabbitMQ then reset). Headers the transform leaves alone keep their
/// AMQP types: the copy's `x-death` is the broker's array of tables, its int an i32.
#[tokio::test(flavor = "multi_thread")]
async fn a_transform_that_adds_a_header_keeps_the_others_typed() {
    let r = Rabbit::new("tx-types").await;
    r.pair(Kind::Classic, "orders", "dlq").await;
    r.declare("target", Kind::Classic, &[]).await;
    r.publish(
        "orders",
        br#"{"order": 1}"#,
        BasicProperties::default()
            .with_message_id("typed-1".into())
            .with_headers(table(&[
                ("i", AMQPValue::LongInt(5)),
                ("b", AMQPValue::Boolean(true)),
                (
                    "bin",
                    AMQPValue::ByteArray(lapin::types::ByteArray::from(vec![0xff, 0x00])),
                ),
                ("tenant", s("acme")),
            ])),
    )
    .await;
    r.reject("orders", 1, "dlq").await;
    let sb = Sandbox::new();
    let out = run(
        &sb,
        &[
            "redrive",
            &r.url("dlq"),
            "--to",
            &r.url("target"),
            "--transform",
            r#".attrs.newh = "x""#,
            "--yes",
            "--output",
            "json",
        ],
    )
    .ok()
    .json();
    assert_eq!(out["moved"], 1, "{out}");
    let copies = r.drain("target").await;
    assert_eq!(copies.len(), 1);
    let p = &copies[0].delivery.properties;
    let h = p.headers().clone().unwrap_or_default();
    let get = |n: &str| h.inner().get(n).cloned();
    assert_eq!(get("i"), Some(AMQPValue::LongInt(5)), "{h:?}");
    assert_eq!(get("b"), Some(AMQPValue::Boolean(true)), "{h:?}");
    assert_eq!(
        get("bin"),
        Some(AMQPValue::ByteArray(lapin::types::ByteArray::from(vec![
            0xff, 0x00
        ]))),
        "{h:?}"
    );
    assert_eq!(get("newh"), Some(s("x")), "{h:?}");
    let Some(AMQPValue::FieldArray(deaths)) = get("x-death") else {
        panic!("x-death is not an array: {h:?}");
    };
    let Some(AMQPValue::FieldTable(death)) = deaths.as_slice().first() else {
        panic!("x-death holds no table: {deaths:?}");
    };
    let d = death.inner();
    assert_eq!(d.get("reason"), Some(&s("rejected")), "{d:?}");
    assert_eq!(d.get("queue"), Some(&s(&r.name("orders"))), "{d:?}");
    assert!(
        matches!(d.get("count"), Some(AMQPValue::LongLongInt(1))),
        "{d:?}"
    );
    assert!(
        matches!(d.get("time"), Some(AMQPValue::Timestamp(_))),
        "{d:?}"
    );
    assert_eq!(stable_id(p).as_deref(), Some("typed-1"));
    assert_eq!(r.ready("dlq").await, 0);
}

/// Operator report (2026-12-06): the redrive's connection closed from the management API
/// mid-run (`DELETE /api/connections/NAME`). The run stops with exit 3 and one clear error
/// line; `moved` is exactly what left the DLQ (it was 110 for 100 removed: the batch whose
/// `basic.ack` failed was counted), and the batches whose copies the target confirmed but
/// whose acknowledgement failed are reported as copied but not removed. Nothing is lost: the
/// DLQ and the target hold every id, the unremoved ones twice at most.
#[tokio::test(flavor = "multi_thread")]
async fn a_connection_closed_mid_run_counts_only_what_left_the_dlq() {
    use std::process::Stdio;
    let r = Rabbit::new("closed").await;
    r.declare("dlq", Kind::Classic, &[]).await;
    r.declare("target", Kind::Classic, &[]).await;
    let ids = r.publish_n("dlq", "m", 300).await;
    let sb = Sandbox::new();
    let child = sb
        .cmd(&[
            "redrive",
            &r.url("dlq"),
            "--to",
            &r.url("target"),
            "--yes",
            "--rate",
            "20",
            "--batch-size",
            "10",
            "--output",
            "json",
        ])
        .envs(crate::amqp::env())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start dlqctl");
    let pid = format!("pid {}", child.id());
    crate::pair::wait_until(Duration::from_secs(30), "copies in the target", || async {
        r.ready("target").await >= 40
    })
    .await;
    // The management API lists a connection once its statistics come in; dlqctl's name for it
    // is `user_provided_name`, the API's own `name` is its address.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let name = loop {
        let found = r
            .api_get("connections?columns=name,user_provided_name")
            .await
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| {
                c["user_provided_name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("dlqctl redrive ") && n.ends_with(&pid))
            })
            .and_then(|c| c["name"].as_str())
            .map(str::to_string);
        if let Some(n) = found {
            break n;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run's connection is not listed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let encoded: String =
        percent_encoding::utf8_percent_encode(&name, percent_encoding::NON_ALPHANUMERIC)
            .to_string();
    r.api_delete(&format!("connections/{encoded}")).await;
    let out = child.wait_with_output().expect("dlqctl ends");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    // One line (the read's warning about redelivery aside), no hint under it.
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "one error: {stderr}");
    assert!(!stderr.contains("hint:"), "{stderr}");
    assert!(
        errors[0].starts_with("error: ")
            && errors[0].contains("the AMQP connection was closed")
            && errors[0].contains("nothing was lost; re-run to continue"),
        "{stderr}"
    );
    let j: serde_json::Value = serde_json::from_str(&stdout).expect("the summary");
    r.wait_no_consumer("dlq").await;
    let left = u64::from(r.ready("dlq").await);
    let copied = u64::from(r.ready("target").await);
    let moved = j["moved"].as_u64().unwrap();
    assert_eq!(moved, 300 - left, "moved is what left the DLQ: {j}");
    let unremoved = j["copied_not_removed"].as_u64().unwrap_or(0);
    assert_eq!(
        moved + unremoved,
        copied,
        "every confirmed copy is moved or reported as copied but not removed: {j}"
    );
    assert_eq!(j["failed"].as_u64(), Some(unremoved), "{j}");
    if unremoved > 0 {
        let aborted = j["aborted"].as_str().unwrap_or_default();
        assert!(
            aborted.contains("duplicates with the same stable ids"),
            "{j}"
        );
    }
    // Nothing lost: every id is in the DLQ or in the target.
    let mut seen: Vec<String> = r.drain_ids("dlq").await.into_iter().flatten().collect();
    seen.extend(r.drain_ids("target").await.into_iter().flatten());
    seen.sort();
    seen.dedup();
    assert_eq!(seen, {
        let mut v = ids.clone();
        v.sort();
        v
    });
    eprintln!("closed mid-run: moved {moved}, copied but not removed {unremoved}, left {left}");
}
