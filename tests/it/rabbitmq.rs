//! RabbitMQ, command by command (issue 27), on the broker started by `scripts/services start
//! rabbitmq`, with dead letters the broker made: rejected, expired, over a length limit; and
//! the ones the frameworks publish to their error queues themselves. The moves are in
//! `rabbitmq_moves.rs`.

use std::collections::HashSet;
use std::time::Duration;

use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable};

use crate::amqp::{Kind, Rabbit, run, s, stable_id, table};
use crate::harness::Sandbox;

/// A DLQ fed by three work queues whose dead letters the broker makes three ways: `rejected`
/// (a consumer rejects), `expired` (a 1 ms TTL), `maxlen` (a length limit of 2, drop-head).
async fn three_reasons(r: &Rabbit, kind: Kind) -> Vec<String> {
    r.declare("dlq", kind, &[]).await;
    fn dl<'a>(r: &Rabbit, extra: &[(&'a str, AMQPValue)]) -> Vec<(&'a str, AMQPValue)> {
        let mut a = vec![
            ("x-dead-letter-exchange", s("")),
            ("x-dead-letter-routing-key", s(&r.name("dlq"))),
        ];
        a.extend_from_slice(extra);
        a
    }
    r.declare("rejects", kind, &dl(r, &[])).await;
    let mut ids = r.dead_letters("rejects", "dlq", "rej", 2).await;
    // Expiry and length limits are classic-queue arguments here (quorum queues take them
    // too, but not a per-queue TTL of 1 ms on 3.10 with the same guarantees).
    r.declare(
        "expires",
        Kind::Classic,
        &dl(r, &[("x-message-ttl", AMQPValue::LongInt(1))]),
    )
    .await;
    ids.extend(r.publish_n("expires", "exp", 2).await);
    r.wait_ready("dlq", 4).await;
    r.declare(
        "short",
        Kind::Classic,
        &dl(r, &[("x-max-length", AMQPValue::LongInt(2))]),
    )
    .await;
    ids.extend(r.publish_n("short", "len", 3).await[..1].to_vec());
    r.wait_ready("dlq", 5).await;
    ids
}

fn reasons(records: &[serde_json::Value]) -> Vec<(String, String, String)> {
    let mut v: Vec<_> = records
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap_or("?").to_string(),
                m["meta"]["death_reason"]
                    .as_str()
                    .unwrap_or("?")
                    .to_string(),
                m["source"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread")]
async fn peek_export_and_replay_read_what_the_broker_wrote_and_keep_it() {
    for kind in [Kind::Classic, Kind::Quorum] {
        let r = Rabbit::new("peek").await;
        let ids = three_reasons(&r, kind).await;
        let sb = Sandbox::new();
        let dlq = r.url("dlq");
        let first = run(&sb, &["peek", &dlq, "-n", "100", "--output", "jsonl"]).ok();
        assert!(
            first.stderr.contains("marked redelivered"),
            "a read says what it does: {}",
            first.stderr
        );
        let got = reasons(&first.jsonl());
        let want: Vec<(String, String, String)> = {
            let mut w = vec![
                (ids[0].clone(), "rejected".into(), r.name("rejects")),
                (ids[1].clone(), "rejected".into(), r.name("rejects")),
                (ids[2].clone(), "expired".into(), r.name("expires")),
                (ids[3].clone(), "expired".into(), r.name("expires")),
                (ids[4].clone(), "maxlen".into(), r.name("short")),
            ];
            w.sort();
            w
        };
        assert_eq!(got, want, "{kind:?}");
        // Nothing was removed: a second read sees the same, and the queue holds them all.
        let again = run(&sb, &["peek", &dlq, "-n", "100", "--output", "jsonl"])
            .ok()
            .jsonl();
        assert_eq!(reasons(&again), want, "{kind:?}: a second read");
        assert_eq!(r.ready("dlq").await, 5, "{kind:?}");
        let m = &first.jsonl()[0];
        let x_death = m["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == "x-death")
            .expect("x-death");
        assert_eq!(x_death["type"], "String.amqp-json", "{m}");
        assert_eq!(
            m["meta"]["properties"]["content_type"], "application/json",
            "{m}"
        );

        // export, then replay into a queue of the other type: the same headers (typed),
        // properties and bodies; the file is unchanged.
        let file = sb.path("dlq.jsonl");
        let f = file.to_str().unwrap();
        run(&sb, &["export", &dlq, "-o", f]).ok();
        let other = if kind == Kind::Classic {
            Kind::Quorum
        } else {
            Kind::Classic
        };
        r.declare("restored", other, &[]).await;
        let out = run(
            &sb,
            &[
                "replay",
                f,
                "--to",
                &r.url("restored"),
                "--yes",
                "--output",
                "json",
            ],
        )
        .ok()
        .json();
        assert_eq!(out["moved"], 5, "{out}");
        let restored = r.drain("restored").await;
        let originals = r.drain("dlq").await;
        assert_eq!(restored.len(), 5);
        for o in &originals {
            let id = stable_id(&o.delivery.properties);
            let c = restored
                .iter()
                .find(|c| stable_id(&c.delivery.properties) == id)
                .unwrap_or_else(|| panic!("{id:?} replayed"));
            assert_eq!(c.delivery.data, o.delivery.data);
            let mut ch = c.delivery.properties.headers().clone().unwrap_or_default();
            let mut oh = FieldTable::default();
            for (k, v) in o
                .delivery
                .properties
                .headers()
                .clone()
                .unwrap_or_default()
                .inner()
            {
                // A quorum queue's delivery count is the broker's, not the message's.
                if k.as_str() != "x-delivery-count" {
                    oh.insert(k.clone(), v.clone());
                }
            }
            assert_eq!(
                ch.inner().get("dlqctl-redrive-count"),
                Some(&s("1")),
                "a replay counts one redrive"
            );
            let mut keep = FieldTable::default();
            for (k, v) in ch.inner() {
                if !["dlqctl-redrive-count", "x-delivery-count"].contains(&k.as_str()) {
                    keep.insert(k.clone(), v.clone());
                }
            }
            ch = keep;
            assert_eq!(ch, oh, "{id:?}: every header, in its type");
            assert_eq!(
                c.delivery.properties.content_type(),
                o.delivery.properties.content_type()
            );
            assert_eq!(*c.delivery.properties.delivery_mode(), Some(2));
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn inspect_shows_the_queue_its_settings_and_what_feeds_it() {
    let r = Rabbit::new("inspect").await;
    r.pair(Kind::Quorum, "orders", "dlq").await;
    r.dead_letters("orders", "dlq", "m", 3).await;
    // A policy the way production sets dead-lettering: the DLQ gets a length limit.
    r.api_put(
        &format!("policies/%2F/{}", r.name("limit")),
        serde_json::json!({"pattern": format!("^{}$", regex_escape(&r.name("dlq"))), "apply-to": "queues", "definition": {"max-length": 1000}}),
    )
    .await;
    let sb = Sandbox::new();
    // A policy applies a moment after it is set.
    let mut got = serde_json::Value::Null;
    crate::pair::wait_until(Duration::from_secs(30), "the policy to apply", || {
        got = run(&sb, &["inspect", &r.url("dlq"), "--output", "json"])
            .ok()
            .json();
        let ok = got[0]["facts"]["max_length"] == 1000;
        async move { ok }
    })
    .await;
    let f = &got[0]["facts"];
    assert_eq!(f["messages"], 3, "{got}");
    assert_eq!(f["type"], "quorum", "{got}");
    assert_eq!(f["consumers"], 0);
    assert!(f["broker"]["version"].is_string(), "{got}");
    // The API's statistics may lag, and inspect says so, once.
    let notes = got[0]["notes"].to_string();
    assert_eq!(
        notes
            .matches("up to collect_statistics_interval (5 s by default) old")
            .count(),
        1,
        "{got}"
    );
    let fed = &got[0]["tables"][0];
    assert_eq!(fed["rows"][0][0], r.name("orders").as_str(), "{got}");
    // Without the management API: what AMQP tells, and why not more.
    let plain = run(&sb, &["inspect", &r.url_no_api("dlq"), "--output", "json"])
        .ok()
        .json();
    assert_eq!(plain[0]["facts"]["messages"], 3);
    assert!(
        plain[0]["notes"].to_string().contains("management API"),
        "{plain}"
    );
    // --output prometheus.
    let prom = run(&sb, &["inspect", &r.url("dlq"), "--output", "prometheus"]).ok();
    assert!(prom.stdout.contains("dlqctl_messages{"), "{}", prom.stdout);
}

fn regex_escape(s: &str) -> String {
    regex::escape(s)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_quorum_dlq_with_a_delivery_limit_is_read_only_when_allowed() {
    let r = Rabbit::new("limit").await;
    r.declare(
        "dlq",
        Kind::Quorum,
        &[("x-delivery-limit", AMQPValue::LongInt(2))],
    )
    .await;
    r.publish_n("dlq", "m", 2).await;
    let sb = Sandbox::new();
    let e = run(&sb, &["peek", &r.url("dlq")]).code(2);
    assert!(
        e.stderr.contains("delivery-limit 2") && e.stderr.contains("--allow-onward-redrive"),
        "{}",
        e.stderr
    );
    assert!(!e.stderr.contains("warning: reading"), "{}", e.stderr);
    // Allowed: each read gives the messages back and counts one delivery (x-delivery-count),
    // and the read's warning says what the limit then does.
    for _ in 0..2 {
        let w = run(
            &sb,
            &[
                "peek",
                &r.url("dlq"),
                "--allow-onward-redrive",
                "--output",
                "json",
            ],
        )
        .ok();
        assert!(
            w.stderr.contains("delivery-limit")
                && w.stderr.contains("dead-lettered onward or dropped"),
            "{}",
            w.stderr
        );
    }
    let v = run(
        &sb,
        &[
            "peek",
            &r.url("dlq"),
            "--allow-onward-redrive",
            "--output",
            "jsonl",
        ],
    )
    .ok()
    .jsonl();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0]["receive_count"], 2, "{}", v[0]);
    // A redrive is refused as well: what it skips or fails goes back and counts.
    run(
        &sb,
        &["redrive", &r.url("dlq"), "--to", &r.url("dlq"), "--yes"],
    )
    .code(2);
    // Refused as a usage error is: the error alone, no summary on stdout.
    let dry = run(
        &sb,
        &["redrive", &r.url("dlq"), "--dry-run", "--output", "json"],
    )
    .code(2);
    assert!(
        dry.stdout.is_empty() && dry.stderr.contains("delivery-limit 2"),
        "{}{}",
        dry.stdout,
        dry.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn classify_and_check_read_what_the_frameworks_record() {
    let r = Rabbit::new("classify").await;
    r.declare("errors", Kind::Classic, &[]).await;
    let with = |id: &str, h: &[(&str, AMQPValue)]| {
        BasicProperties::default()
            .with_message_id(id.into())
            .with_headers(table(h))
    };
    // Spring AMQP's RepublishMessageRecoverer, MassTransit's _error queue, NServiceBus.
    r.publish(
        "errors",
        b"{}",
        with(
            "spring-1",
            &[
                ("x-exception-message", s("Connection refused")),
                (
                    "x-exception-stacktrace",
                    s("java.net.ConnectException: Connection refused\n\tat java.base/sun.nio.ch.Net.connect0(Native Method)"),
                ),
                ("x-original-exchange", s("shop")),
                ("x-original-routingKey", s("order.created")),
            ],
        ),
    )
    .await;
    r.publish(
        "errors",
        b"{}",
        with(
            "mt-1",
            &[
                (
                    "MT-Fault-ExceptionType",
                    s("System.Text.Json.JsonException"),
                ),
                (
                    "MT-Fault-Message",
                    s("'<' is an invalid start of a value. LineNumber: 0 | BytePositionInLine: 0."),
                ),
                (
                    "MT-Fault-InputAddress",
                    s("rabbitmq://localhost/submit-order"),
                ),
                ("MT-Reason", s("fault")),
            ],
        ),
    )
    .await;
    r.publish(
        "errors",
        b"{}",
        with(
            "nsb-1",
            &[
                (
                    "NServiceBus.ExceptionInfo.ExceptionType",
                    s("System.TimeoutException"),
                ),
                (
                    "NServiceBus.ExceptionInfo.Message",
                    s("The operation has timed out."),
                ),
                ("NServiceBus.FailedQ", s("Sales")),
                (
                    "NServiceBus.TimeOfFailure",
                    s("2026-12-04 10:11:12:123456 Z"),
                ),
            ],
        ),
    )
    .await;
    let sb = Sandbox::new();
    let msgs = run(&sb, &["peek", &r.url("errors"), "--output", "jsonl"])
        .ok()
        .jsonl();
    let conv: HashSet<String> = msgs
        .iter()
        .map(|m| {
            format!(
                "{}={}",
                m["id"].as_str().unwrap(),
                m["meta"]["convention"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        conv,
        [
            "spring-1=spring-amqp",
            "mt-1=masstransit",
            "nsb-1=nservicebus"
        ]
        .map(String::from)
        .into_iter()
        .collect()
    );
    let c = run(&sb, &["classify", &r.url("errors"), "--output", "json"])
        .ok()
        .json();
    let text = c.to_string();
    assert!(
        text.contains("transient") && text.contains("permanent"),
        "{c}"
    );
    // --by and --where as on every backend.
    run(
        &sb,
        &[
            "classify",
            &r.url("errors"),
            "--by",
            "fingerprint",
            "--output",
            "json",
        ],
    )
    .ok();
    let w = run(
        &sb,
        &[
            "peek",
            &r.url("errors"),
            "--where",
            r#".meta.convention == "nservicebus""#,
            "--output",
            "jsonl",
        ],
    )
    .ok()
    .jsonl();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0]["error"]["class"], "System.TimeoutException");
    // check: three messages over a limit of two.
    let cfg = sb.write(
        "dlqctl.toml",
        &format!(
            "[queues.errors]\ndlq = \"{}\"\n[queues.errors.limits]\nmax_messages = 2\n",
            r.url("errors")
        ),
    );
    let chk = run(
        &sb,
        &[
            "check",
            "errors",
            "--config",
            cfg.to_str().unwrap(),
            "--output",
            "json",
        ],
    );
    assert_eq!(chk.code, 1, "{}\n{}", chk.stdout, chk.stderr);
    assert_eq!(r.ready("errors").await, 3, "reading removed nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn tail_follows_arrivals_without_taking_them() {
    let r = Rabbit::new("tail").await;
    r.declare("dlq", Kind::Classic, &[]).await;
    r.publish_n("dlq", "old", 2).await;
    let sb = Sandbox::new();
    let out = run(
        &sb,
        &[
            "tail",
            &r.url("dlq"),
            "--from-start",
            "--max",
            "2",
            "--output",
            "jsonl",
        ],
    )
    .ok()
    .jsonl();
    assert_eq!(out.len(), 2);
    // Without --from-start: only what arrives.
    let child = sb
        .cmd(&["tail", &r.url("dlq"), "--max", "1", "--output", "jsonl"])
        .envs(crate::amqp::env())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::pair::wait_until(
        Duration::from_secs(30),
        "tail to hold the queue",
        || async { r.counts("dlq").await.1 == 1 && r.ready("dlq").await == 0 },
    )
    .await;
    r.publish_n("dlq", "new", 1).await;
    let o = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("new-0") && !text.contains("old-"), "{text}");
    r.wait_no_consumer("dlq").await;
    assert_eq!(r.ready("dlq").await, 3, "tail took nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_credentials_and_missing_things_are_one_line_errors() {
    let r = Rabbit::new("bad").await;
    r.declare("dlq", Kind::Classic, &[]).await;
    let sb = Sandbox::new();
    let (user, _) = crate::amqp::credentials();
    let wrong = r
        .url("dlq")
        .replace(&format!("{user}@"), &format!("{user}:wrong-password@"));
    let e = run(&sb, &["peek", &wrong]).code(3);
    assert!(
        e.stderr.contains("authentication failed") && e.stderr.contains("the URL"),
        "{}",
        e.stderr
    );
    assert!(!e.stderr.contains("wrong-password"), "{}", e.stderr);
    assert!(
        e.stderr.contains("rabbitmqctl list_users") && !e.stderr.contains("pg_hba"),
        "the hint is RabbitMQ's: {}",
        e.stderr
    );
    let e = run(&sb, &["peek", &r.url("nope")]).code(3);
    assert!(e.stderr.contains("not found"), "{}", e.stderr);
    assert_eq!(
        e.stderr
            .trim()
            .lines()
            .filter(|l| l.starts_with("error"))
            .count(),
        1,
        "{}",
        e.stderr
    );
    let vhost = r.url("dlq").replace("/%2F?", "/no-such-vhost?");
    let e = run(&sb, &["peek", &vhost]).code(3);
    assert!(e.stderr.contains("no-such-vhost"), "{}", e.stderr);
    let e = run(&sb, &["peek", "amqp://u:p@127.0.0.1:1/%2f?queue=q"]).code(3);
    assert!(e.stderr.contains("cannot reach"), "{}", e.stderr);
    assert!(
        !e.stderr.contains("SQS"),
        "the hint is not SQS's: {}",
        e.stderr
    );
    // An API that does not answer: said, with the way to do without it.
    let dead_api = format!("{}&api=http://127.0.0.1:1", r.url_no_api("dlq"));
    let e = run(&sb, &["peek", &dead_api]).code(3);
    assert!(
        e.stderr.contains("the management API at") && e.stderr.contains("AMQP alone"),
        "{}",
        e.stderr
    );
    assert!(!e.stderr.contains("SQS"), "{}", e.stderr);
    // No password anywhere: said where it was looked for.
    let e = sb.run(&["peek", &r.url("dlq")]).code(3);
    assert!(e.stderr.contains("no password given"), "{}", e.stderr);
}

/// A queue another consumer holds exclusively (as a dlqctl redrive or purge holds its DLQ while
/// it runs) is busy, not forbidden: each read says so and to wait, exits 3 as a held lock does,
/// and leaves no broken JSON on stdout.
#[tokio::test(flavor = "multi_thread")]
async fn a_read_of_a_queue_in_exclusive_use_says_to_wait_for_its_holder() {
    let r = Rabbit::new("busy").await;
    r.declare("dlq", Kind::Classic, &[]).await;
    r.publish_n("dlq", "m", 3).await;
    let holder = lapin::Connection::connect(
        &crate::amqp::amqp_url(),
        lapin::ConnectionProperties::default(),
    )
    .await
    .unwrap();
    let ch = holder.create_channel().await.unwrap();
    ch.basic_qos(1, Default::default()).await.unwrap();
    let _held = ch
        .basic_consume(
            r.name("dlq").as_str().into(),
            "holder".into(),
            lapin::options::BasicConsumeOptions {
                exclusive: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .unwrap();
    let sb = Sandbox::new();
    let url = r.url("dlq");
    for args in [
        &["peek", &url][..],
        &["peek", &url, "--output", "jsonl"],
        &["classify", &url],
        &["inspect", &url, "--scan"],
        &["export", &url],
    ] {
        let e = run(&sb, args).code(3);
        let said = format!("dlqctl {}:\n{}{}", args.join(" "), e.stdout, e.stderr);
        assert!(
            e.stderr.contains(&format!(
                "queue {} is in exclusive use by another consumer (a dlqctl redrive or purge",
                r.name("dlq")
            )),
            "{said}"
        );
        assert!(
            e.stderr
                .contains("hint: wait for that run to end, then re-run"),
            "{said}"
        );
        assert!(
            !e.stderr.contains("permission denied") && !e.stderr.contains("grant"),
            "{said}"
        );
        assert!(e.stdout.trim().is_empty(), "{said}");
    }
    holder.close(200, "".into()).await.unwrap();
}

/// Messages another channel holds unacknowledged (taken with basic.get, not acknowledged, no
/// consumer) are in the queue but no read sees them. Where the management API counts them,
/// every read says so: classify and check are not complete, export and redrive end with
/// exit 1 and name them.
#[tokio::test(flavor = "multi_thread")]
async fn messages_another_channel_holds_are_reported_not_silently_missed() {
    use lapin::options::BasicGetOptions;
    let r = Rabbit::new("held").await;
    r.declare("dlq", Kind::Classic, &[]).await;
    r.declare("back", Kind::Classic, &[]).await;
    r.publish_n("dlq", "h", 20).await;
    // Another client's channel takes 5 and holds them.
    let other = r.conn.create_channel().await.unwrap();
    for _ in 0..5 {
        other
            .basic_get(r.name("dlq").as_str().into(), BasicGetOptions::default())
            .await
            .unwrap()
            .expect("a message to hold");
    }
    // The management API counts them once its statistics come in (every 5 s by default).
    // dlqctl takes the API's count only while its ready count agrees with AMQP's, and each
    // read below holds the 15 for a moment: before each command, wait until the statistics
    // show the queue at rest again (a condition, not a sleep).
    let path = format!("queues/%2F/{}", r.name("dlq"));
    let at_rest = || async {
        crate::pair::wait_until(
            Duration::from_secs(30),
            "the API to count 15 ready and 5 unacknowledged",
            || async {
                let q = r.api_get(&path).await;
                q["messages_unacknowledged"] == 5 && q["messages_ready"] == 15
            },
        )
        .await
    };
    at_rest().await;
    let sb = Sandbox::new();
    let dlq = r.url("dlq");

    let c = run(&sb, &["classify", &dlq, "--output", "json"])
        .ok()
        .json();
    assert_eq!(c["total"], 15, "{c}");
    assert_eq!(c["complete"], false, "{c}");
    assert_eq!(c["unseen"][0]["count"], 5, "{c}");
    // The count is the API's, and says it may lag.
    assert!(
        c["unseen"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("(the management API's count, up to 5 s old)"),
        "{c}"
    );
    at_rest().await;
    let table = run(&sb, &["classify", &dlq, "--output", "table"]).ok();
    assert!(
        table
            .stdout
            .contains("partial: about 5 messages not read: held unacknowledged"),
        "{}",
        table.stdout
    );

    at_rest().await;
    let chk = run(
        &sb,
        &[
            "check",
            &dlq,
            "--max-class",
            "unclassified=16",
            "--output",
            "json",
        ],
    );
    let j = chk.json();
    assert_eq!(j["queues"][0]["complete"], false, "{j}");
    let verdict = &j["queues"][0]["checks"][0];
    assert_eq!(
        verdict["status"], "WARN",
        "15 read, 5 unseen, limit 16: {j}"
    );
    assert!(
        verdict["detail"]
            .as_str()
            .unwrap()
            .contains("(in the 15 messages read; about 5 messages not read: held"),
        "{j}"
    );

    at_rest().await;
    let ex = run(&sb, &["export", &dlq]).code(1);
    assert_eq!(ex.stdout.lines().count(), 15);
    assert!(
        ex.stderr.contains("partial export: about 5 messages"),
        "{}",
        ex.stderr
    );

    at_rest().await;
    let dry = run(
        &sb,
        &[
            "redrive",
            &dlq,
            "--to",
            &r.url("back"),
            "--dry-run",
            "--output",
            "json",
        ],
    )
    .code(1);
    assert!(dry.stdout.contains("held unacknowledged"), "{}", dry.stdout);
    at_rest().await;
    let rd = run(
        &sb,
        &[
            "redrive",
            &dlq,
            "--to",
            &r.url("back"),
            "--yes",
            "--output",
            "json",
        ],
    )
    .code(1);
    let s = rd.json();
    assert_eq!(s["moved"], 15, "{s}");
    assert_eq!(s["unaccounted"][0]["count"], 5, "{s}");
    assert!(
        s["unaccounted"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("another consumer or channel"),
        "{s}"
    );
    other.close(200, "".into()).await.unwrap();
    r.wait_ready("dlq", 5).await;
}
