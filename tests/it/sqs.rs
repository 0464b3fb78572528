//! SQS against the emulator (moto): real dead-lettering by RedrivePolicy, standard and FIFO,
//! attributes of every type, limits, crashes, and moves to and from PostgreSQL.

use std::process::Stdio;
use std::time::Duration;

use aws_sdk_sqs::primitives::Blob;
use aws_sdk_sqs::types::MessageAttributeValue;

use crate::harness::{Db, Sandbox, Sqs, StderrLines, assert_dry_run_predicted};

fn attr(ty: &str, v: &str) -> MessageAttributeValue {
    MessageAttributeValue::builder()
        .data_type(ty)
        .string_value(v)
        .build()
        .unwrap()
}

fn bin(v: &[u8]) -> MessageAttributeValue {
    MessageAttributeValue::builder()
        .data_type("Binary")
        .binary_value(Blob::new(v.to_vec()))
        .build()
        .unwrap()
}

/// `n` orders with attributes of every type; odd ones failed with a timeout.
async fn send_orders(q: &Sqs, url: &str, n: usize, group: bool) {
    for i in 0..n {
        let mut req = q
            .client
            .send_message()
            .queue_url(url)
            .message_body(format!("{{\"order\": {i}}}"))
            .message_attributes("message_id", attr("String", &format!("ord-{i}")))
            .message_attributes(
                "error",
                attr(
                    "String",
                    if i % 2 == 1 {
                        "upstream timed out"
                    } else {
                        "validation failed: amount"
                    },
                ),
            )
            .message_attributes("amount", attr("Number", &format!("{}", i * 10)))
            .message_attributes("ratio", attr("Number.float", "0.25"))
            .message_attributes("sig", bin(&[0, 255, i as u8]));
        if group {
            req = req
                .message_group_id(format!("cust-{}", i % 3))
                .message_deduplication_id(format!("ord-{i}"));
        }
        req.send().await.unwrap();
    }
}

fn ids(msgs: &[aws_sdk_sqs::types::Message]) -> Vec<String> {
    let mut v: Vec<String> = msgs
        .iter()
        .map(|m| {
            m.message_attributes().unwrap()["message_id"]
                .string_value()
                .unwrap()
                .to_string()
        })
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn dead_lettered_messages_are_inspected_peeked_and_released() {
    let q = Sqs::new("insp").await;
    let (src, dlq) = q.pair(false, 2).await;
    send_orders(&q, &src, 12, false).await;
    q.fail_all(&src).await;
    assert_eq!(q.visible(&dlq).await, 12);
    let sb = Sandbox::new();
    let env = q.env(&sb);
    let url = format!("sqs://{}", q.name("dlq"));
    let j = sb
        .run_with(&["inspect", &url, "--output", "json"], &env)
        .ok()
        .json();
    let fact = |n: &str| j[0]["facts"][n].clone();
    assert_eq!(fact("visible"), 12);
    // A table labels facts without their unit (the value carries it): `retention | 14d`.
    let table = sb
        .run_with(&["inspect", &url, "--output", "table"], &env)
        .ok()
        .stdout;
    assert!(
        table.contains("retention ") && !table.contains("retention seconds"),
        "{table}"
    );
    assert_eq!(fact("retention_seconds"), 1_209_600);
    let sources = &j[0]["tables"][0]["rows"];
    assert_eq!(sources[0][0], src.as_str(), "{j}");
    assert_eq!(sources[0][1], 2);

    // peek says what it changes, shows attributes of every type, and gives everything back.
    let r = sb
        .run_with(&["peek", &url, "-n", "3", "--output", "jsonl"], &env)
        .ok();
    assert!(r.stderr.contains("ApproximateReceiveCount"), "{}", r.stderr);
    let recs = r.jsonl();
    assert_eq!(recs.len(), 3);
    let a = recs[0]["attributes"].as_array().unwrap();
    let ty = |n: &str| a.iter().find(|x| x["name"] == n).unwrap()["type"].clone();
    assert_eq!(
        (ty("amount"), ty("ratio"), ty("sig")),
        ("Number".into(), "Number.float".into(), "Binary".into())
    );
    assert!(recs[0]["receive_count"].as_u64().unwrap() >= 3);
    assert_eq!(q.visible(&dlq).await, 12, "peek must release what it read");

    // With a stable-id location configured, classify uses the producer's ids.
    sb.write(
        "dlqctl.toml",
        &format!("[queues.orders]\ndlq = \"{url}\"\nid = \"attribute:message_id\"\n"),
    );
    let j = sb
        .run_with(&["classify", "orders", "--output", "json"], &env)
        .ok()
        .json();
    assert_eq!(j["total"], 12);
    assert_eq!(j["kinds"]["transient"], 6);
    assert!(
        j["classes"][0]["sample_id"]
            .as_str()
            .unwrap()
            .starts_with("ord-"),
        "{j}"
    );
    assert_eq!(q.visible(&dlq).await, 12);
}

#[tokio::test]
async fn redrive_to_the_discovered_source_keeps_attributes_and_ids() {
    let q = Sqs::new("redrive").await;
    let (src, dlq) = q.pair(false, 1).await;
    send_orders(&q, &src, 14, false).await;
    q.fail_all(&src).await;
    let sb = Sandbox::new();
    let env = q.env(&sb);
    let url = format!("sqs://{}", q.name("dlq"));
    let j = sb
        .run_with(
            &[
                "redrive",
                &url,
                "--class",
                "transient",
                "--dry-run",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"], 7);
    assert_eq!(q.visible(&dlq).await, 14);
    let j = sb
        .run_with(
            &[
                "redrive",
                &url,
                "--class",
                "transient",
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"], 7, "{j}");
    assert_eq!(j["skipped"], 7);
    assert_eq!(
        q.visible(&dlq).await,
        7,
        "the permanent ones stay, visible again"
    );
    let back = q.receive_all(&src).await;
    assert_eq!(
        ids(&back),
        [
            "ord-1", "ord-11", "ord-13", "ord-3", "ord-5", "ord-7", "ord-9"
        ]
    );
    let m = back
        .iter()
        .find(|m| m.message_attributes().unwrap()["message_id"].string_value() == Some("ord-3"))
        .unwrap();
    let a = m.message_attributes().unwrap();
    assert_eq!(m.body(), Some("{\"order\": 3}"));
    assert_eq!(a["amount"].string_value(), Some("30"));
    assert_eq!(a["ratio"].data_type(), "Number.float");
    assert_eq!(a["sig"].binary_value().unwrap().as_ref(), &[0, 255, 3]);
    assert!(
        a.contains_key("dlqctl-stable-id"),
        "the DLQ MessageId travels as the stable id"
    );
}

#[tokio::test]
async fn fifo_groups_survive_and_the_dedup_window_does_not_swallow_copies() {
    let q = Sqs::new("fifo").await;
    let (src, dlq) = q.pair(true, 1).await;
    send_orders(&q, &src, 9, true).await;
    q.fail_all(&src).await;
    assert_eq!(q.visible(&dlq).await, 9);
    let sb = Sandbox::new();
    let env = q.env(&sb);
    // Within 5 minutes of the original sends: reusing their dedup ids would be dropped by
    // SQS; the default per-run ids are not.
    let j = sb
        .run_with(
            &[
                "redrive",
                &format!("sqs://{}", q.name("dlq.fifo")),
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"], 9, "{j}");
    let back = q.receive_all(&src).await;
    assert_eq!(back.len(), 9, "every copy arrived");
    for m in &back {
        let g = m.attributes().unwrap()
            [&aws_sdk_sqs::types::MessageSystemAttributeName::MessageGroupId]
            .clone();
        let id: usize = m.message_attributes().unwrap()["message_id"]
            .string_value()
            .unwrap()[4..]
            .parse()
            .unwrap();
        assert_eq!(g, format!("cust-{}", id % 3));
    }
    // A FIFO target refuses messages without a group: they are reported and kept.
    let db = Db::new("fifo").await;
    db.seed(2).await;
    db.exec("UPDATE {s}.dead_letters SET group_key = NULL WHERE message_id = 'ord-1'")
        .await;
    let r = sb
        .run_with(
            &[
                "replay",
                &db.dlq(),
                "--to",
                &src,
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .code(1);
    let j = r.json();
    assert_eq!(j["moved"], 1);
    assert!(
        j["failures"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("FIFO"),
        "{j}"
    );
}

#[tokio::test]
async fn a_dlq_with_its_own_redrive_policy_is_not_read_by_default() {
    let q = Sqs::new("onward").await;
    let (_, final_arn) = q.create("final", &[]).await;
    let policy = format!("{{\"deadLetterTargetArn\":\"{final_arn}\",\"maxReceiveCount\":3}}");
    let (dlq, _) = q
        .create("dlq2", &[("RedrivePolicy", policy.as_str())])
        .await;
    q.client
        .send_message()
        .queue_url(&dlq)
        .message_body("x")
        .send()
        .await
        .unwrap();
    let sb = Sandbox::new();
    let env = q.env(&sb);
    let r = sb.run_with(&["peek", &dlq], &env).code(2);
    assert!(
        r.stderr.contains("own RedrivePolicy") && r.stderr.contains("--allow-onward-redrive"),
        "{}",
        r.stderr
    );
    sb.run_with(&["redrive", &dlq, "--to", &dlq, "--yes"], &env)
        .code(2);
    let r = sb
        .run_with(
            &["peek", &dlq, "--allow-onward-redrive", "--output", "jsonl"],
            &env,
        )
        .ok();
    assert_eq!(r.jsonl().len(), 1);
}

#[tokio::test]
async fn limits_are_reported_per_message_and_the_rest_is_sent() {
    let q = Sqs::new("limits").await;
    let (small, _) = q.create("small", &[("MaximumMessageSize", "1024")]).await;
    let db = Db::new("sqslimits").await;
    db.seed(4).await;
    db.exec(
        "INSERT INTO {s}.dead_letters (message_id, queue, payload) VALUES ('big-1', 'orders', jsonb_build_object('blob', repeat('x', 2000)));
         INSERT INTO {s}.dead_letters (message_id, queue, payload_bytes) VALUES ('bin-1', 'orders', '\\x00ff'::bytea);
         INSERT INTO {s}.dead_letters (message_id, queue, payload, headers) SELECT 'wide-1', 'orders', '{}', jsonb_object_agg('h' || g, 'v') FROM generate_series(1, 11) g;
         INSERT INTO {s}.dead_letters (message_id, queue, payload, headers) VALUES ('nul-1', 'orders', '{}', '{\"k\": null}')",
    )
    .await;
    let sb = Sandbox::new();
    let env = q.env(&sb);
    let dlq = db.dlq();
    let redrive = |dry: bool| {
        let mut args = vec!["redrive", &dlq, "--to", &small, "--yes"];
        args.extend(["--output", "json"]);
        if dry {
            args.push("--dry-run");
        }
        sb.run_with(&args, &env).code(1).json()
    };
    // The dry run predicts each refusal SQS's limits make before sending, with its reason,
    // and exits 1 as the run will.
    let dry = redrive(true);
    let j = redrive(false);
    assert_eq!(j["moved"], 4, "{j}");
    assert_eq!(j["failed"], 4);
    let reasons = j["failures"].to_string();
    for want in ["MaximumMessageSize", "binary", "at most 10", "null value"] {
        assert!(reasons.contains(want), "{want}: {reasons}");
    }
    assert_dry_run_predicted(&dry, &j);
    assert_eq!(
        db.ids("dead_letters").await,
        ["big-1", "bin-1", "nul-1", "wide-1"],
        "the refused ones stay"
    );
    let back = q.receive_all(&small).await;
    assert_eq!(back.len(), 4);
    // Headers became attributes; the PostgreSQL row id is not the stable id, message_id is.
    let m = &back[0];
    assert!(m.message_attributes().unwrap().contains_key("trace-id"));
    assert!(
        m.message_attributes().unwrap()["dlqctl-stable-id"]
            .string_value()
            .unwrap()
            .starts_with("ord-")
    );
}

#[tokio::test]
async fn sqs_to_postgres_and_back_round_trips() {
    let q = Sqs::new("cross").await;
    let (src, _dlq) = q.pair(false, 1).await;
    send_orders(&q, &src, 5, false).await;
    q.fail_all(&src).await;
    let db = Db::new("cross").await;
    let sb = Sandbox::new();
    let env = q.env(&sb);
    sb.write(
        "dlqctl.toml",
        &format!(
            "[queues.orders]\ndlq = \"sqs://{}\"\nid = \"attribute:message_id\"\n",
            q.name("dlq")
        ),
    );
    let j = sb
        .run_with(
            &[
                "redrive",
                "orders",
                "--to",
                &format!("{}&queue=orders", db.table_url("dead_letters")),
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .ok();
    let _ = j;
    // Into a dead-letter table as a plain target: ids, bodies and attributes as headers.
    assert_eq!(
        db.ids("dead_letters").await,
        ["ord-0", "ord-1", "ord-2", "ord-3", "ord-4"]
    );
    let headers: serde_json::Value = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT headers FROM {}.dead_letters WHERE message_id = 'ord-2'",
        db.schema
    )))
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(headers["amount"], 20);
    assert_eq!(
        headers["sig"],
        serde_json::json!({"type": "Binary", "base64": "AP8C"})
    );
    // And back to SQS from PostgreSQL: the attributes are whole again.
    let j = sb
        .run_with(
            &[
                "redrive",
                &db.dlq(),
                "--to",
                &src,
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"], 5);
    let back = q.receive_all(&src).await;
    assert_eq!(ids(&back), ["ord-0", "ord-1", "ord-2", "ord-3", "ord-4"]);
    let m = back
        .iter()
        .find(|m| m.message_attributes().unwrap()["message_id"].string_value() == Some("ord-2"))
        .unwrap();
    assert_eq!(
        m.message_attributes().unwrap()["sig"]
            .binary_value()
            .unwrap()
            .as_ref(),
        &[0, 255, 2]
    );
    assert_eq!(
        m.message_attributes().unwrap()["amount"].data_type(),
        "Number"
    );
}

/// A run killed mid-way, then a re-run: none lost; a copy sent twice carries the same stable
/// id. Sent-but-not-deleted messages found in the journal are deleted, not sent again.
#[tokio::test]
async fn a_killed_redrive_loses_nothing_and_the_journal_prevents_resends() {
    let q = Sqs::new("crash").await;
    let (src, dlq) = q.pair(false, 1).await;
    send_orders(&q, &src, 60, false).await;
    q.fail_all(&src).await;
    let sb = Sandbox::new();
    let env = q.env(&sb);
    let url = format!("sqs://{}", q.name("dlq"));
    let mut child = sb
        .cmd(&[
            "redrive",
            &url,
            "--yes",
            "--rate",
            "20/s",
            "--batch-size",
            "10",
            "--visibility-timeout",
            "3",
            "--output",
            "json",
        ])
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    child.kill().unwrap();
    child.wait().unwrap();
    // Let the killed run's claims expire, then re-run.
    tokio::time::sleep(Duration::from_secs(4)).await;
    sb.run_with(&["redrive", &url, "--yes", "--output", "json"], &env)
        .ok();
    assert_eq!(q.visible(&dlq).await, 0);
    let back = q.receive_all(&src).await;
    let mut got = ids(&back);
    got.dedup();
    assert_eq!(got.len(), 60, "every message arrived");
    assert!(
        back.len() <= 60 + 10,
        "at most the batch in flight was sent twice ({})",
        back.len()
    );

    // The journal: a message recorded as sent by a crashed run is deleted, not sent again.
    send_orders(&q, &src, 2, false).await;
    q.fail_all(&src).await;
    let peeked = sb
        .run_with(&["peek", &url, "--output", "jsonl"], &env)
        .ok()
        .jsonl();
    let first = peeked[0]["native_id"].as_str().unwrap().to_string();
    let arn = q.attr(&dlq, "QueueArn").await;
    let jdir = sb.path("state").join("journal");
    std::fs::create_dir_all(&jdir).unwrap();
    let name: String = arn
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    std::fs::write(jdir.join(format!("{name}.log")), format!("sent {first}\n")).unwrap();
    let j = sb
        .run_with(&["redrive", &url, "--yes", "--output", "json"], &env)
        .ok()
        .json();
    assert_eq!(j["moved"], 1, "{j}");
    assert_eq!(q.visible(&dlq).await, 0);
    assert_eq!(q.receive_all(&src).await.len(), 1);
}

/// Messages a run skips stay hidden for the whole run: the heartbeat extends them, so they are
/// received once, not again every visibility timeout.
#[tokio::test]
async fn the_heartbeat_keeps_held_messages_hidden_on_long_runs() {
    let q = Sqs::new("beat").await;
    let (src, dlq) = q.pair(false, 1).await;
    send_orders(&q, &src, 30, false).await;
    q.fail_all(&src).await;
    let sb = Sandbox::new();
    let env = q.env(&sb);
    let url = format!("sqs://{}", q.name("dlq"));
    let before: Vec<u64> = sb
        .run_with(&["peek", &url, "-n", "30", "--output", "jsonl"], &env)
        .ok()
        .jsonl()
        .iter()
        .map(|r| r["receive_count"].as_u64().unwrap())
        .collect();
    let j = sb
        .run_with(
            &[
                "redrive",
                &url,
                "--class",
                "transient",
                "--yes",
                "--rate",
                "4/s",
                "--batch-size",
                "5",
                "--visibility-timeout",
                "2",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"], 15);
    assert!(
        j["elapsed_seconds"].as_f64().unwrap() > 3.0,
        "the run outlived the visibility timeout"
    );
    let after = sb
        .run_with(&["peek", &url, "-n", "30", "--output", "jsonl"], &env)
        .ok()
        .jsonl();
    assert_eq!(after.len(), 15);
    let max_before = before.iter().max().unwrap();
    for r in after {
        // peek (1) + the run (1) + this peek (1): no re-receives during the run.
        assert!(
            r["receive_count"].as_u64().unwrap() <= max_before + 2,
            "{r}"
        );
    }
    assert_eq!(q.visible(&dlq).await, 15);
    let _ = src;
}

#[tokio::test]
async fn unknown_queues_unreachable_endpoints_and_native_moves() {
    let q = Sqs::new("errs").await;
    let (_src, _dlq) = q.pair(false, 2).await;
    let sb = Sandbox::new();
    let env = q.env(&sb);
    let r = sb
        .run_with(&["inspect", "sqs://no-such-queue"], &env)
        .code(3);
    assert!(
        r.stderr.lines().next().unwrap().contains("not found"),
        "{}",
        r.stderr
    );
    let r = sb
        .run_with(
            &["peek", "sqs://x", "--endpoint-url", "http://127.0.0.1:1"],
            &env,
        )
        .code(3);
    assert!(r.stderr.contains("cannot reach"), "{}", r.stderr);
    assert!(
        !r.stderr.contains("testing"),
        "no credentials in errors: {}",
        r.stderr
    );
    // moto does not implement message move tasks: said plainly.
    let r = sb
        .run_with(
            &[
                "redrive",
                &format!("sqs://{}", q.name("dlq")),
                "--native",
                "--yes",
            ],
            &env,
        )
        .code(2);
    assert!(
        r.stderr.contains("StartMessageMoveTask") && r.stderr.contains("without --native"),
        "{}",
        r.stderr
    );
    // The attempt is in the audit trail: its intent, and the outcome with the refusal.
    let runs = sb
        .run_with(&["audit", "--output", "json"], &env)
        .ok()
        .json();
    let native = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["command"] == "native-redrive")
        .unwrap_or_else(|| panic!("no native run audited: {runs}"));
    assert_eq!(native["outcome"]["exit_code"], 2, "{native}");
    assert!(
        native["outcome"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("StartMessageMoveTask")),
        "{native}"
    );
    sb.run_with(
        &[
            "redrive",
            &format!("sqs://{}", q.name("dlq")),
            "--native",
            "--class",
            "transient",
        ],
        &env,
    )
    .code(2);
}

#[tokio::test]
async fn verify_checks_the_sqs_configuration() {
    let q = Sqs::new("verify").await;
    let db = Db::new("sqsverify").await;
    let (dlq, dlq_arn) = q
        .create("dlq", &[("MessageRetentionPeriod", "86400")])
        .await;
    let policy = format!("{{\"deadLetterTargetArn\":\"{dlq_arn}\",\"maxReceiveCount\":1}}");
    q.create(
        "src",
        &[
            ("RedrivePolicy", policy.as_str()),
            ("MessageRetentionPeriod", "345600"),
            ("VisibilityTimeout", "30"),
        ],
    )
    .await;
    let sb = Sandbox::new();
    let env = q.env(&sb);
    sb.write(
        "dlqctl.toml",
        &format!(
            "[queues.orders]\ndlq = \"{dlq}\"\nhandler_timeout = \"2m\"\nreplay_window = \"1d\"\n[queues.orders.dedupe]\nurl = \"{}\"\ntable = \"{}.processed_messages\"\nretention = \"3d\"\n",
            crate::harness::pg_url(),
            db.schema
        ),
    );
    let j = sb
        .run_with(&["verify", "--output", "json"], &env)
        .code(1)
        .json();
    let check = |id: &str| {
        j["queues"][0]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {j}"))
            .clone()
    };
    assert_eq!(check("sqs-redrive-policy")["status"], "PASS");
    assert_eq!(check("sqs-max-receive-count")["status"], "FAIL");
    assert_eq!(check("sqs-dlq-retention")["status"], "FAIL");
    assert_eq!(check("sqs-visibility")["status"], "FAIL");
    assert_eq!(check("sqs-fifo-match")["status"], "PASS");
    let arith = check("dedupe-outlives-redelivery");
    assert_eq!(arith["status"], "FAIL");
    assert!(arith["detail"].as_str().unwrap().contains("max(source, DLQ) retention (standard: counted from first enqueue) 4d + replay window 1d = 5d"), "{arith}");
}

#[tokio::test]
async fn fifo_groups_are_not_blocked_by_a_skipped_head_and_ten_attributes_keep_the_id() {
    let q = Sqs::new("fifohead").await;
    let (src, dlq) = q.pair(true, 1).await;
    // One group; its first message is a permanent failure, the rest transient.
    for i in 0..12 {
        q.client
            .send_message()
            .queue_url(&src)
            .message_body(format!("{{\"n\": {i}}}"))
            .message_group_id("one-group")
            .message_deduplication_id(format!("d-{i}"))
            .message_attributes(
                "error",
                attr(
                    "String",
                    if i == 0 {
                        "validation failed"
                    } else {
                        "timed out"
                    },
                ),
            )
            .send()
            .await
            .unwrap();
    }
    q.fail_all(&src).await;
    let sb = Sandbox::new();
    let env = q.env(&sb);
    let j = sb
        .run_with(
            &[
                "redrive",
                &format!("sqs://{}", q.name("dlq.fifo")),
                "--class",
                "transient",
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"], 11, "{j}");
    assert_eq!(q.visible(&dlq).await, 1);

    // Ten attributes and no room for dlqctl-stable-id: refused, not sent without its id.
    let (plain_dlq, _) = q.create("plain", &[]).await;
    let (target, _) = q.create("target", &[]).await;
    let mut req = q
        .client
        .send_message()
        .queue_url(&plain_dlq)
        .message_body("{}");
    for k in 0..10 {
        req = req.message_attributes(format!("a{k}"), attr("String", "v"));
    }
    req.send().await.unwrap();
    let r = sb
        .run_with(
            &[
                "redrive", &plain_dlq, "--to", &target, "--yes", "--output", "json",
            ],
            &env,
        )
        .code(1);
    assert!(
        r.json()["failures"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("stable id"),
        "{}",
        r.stdout
    );
    assert_eq!(q.visible(&plain_dlq).await, 1);
    // Leaving one attribute out makes room: the copy carries the other nine and its id.
    let j = sb
        .run_with(
            &[
                "redrive",
                &plain_dlq,
                "--to",
                &target,
                "--strip-header",
                "a9",
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"], 1, "{j}");
    let got = q.receive_all(&target).await;
    assert_eq!(got.len(), 1);
    let mut names: Vec<&str> = got[0]
        .message_attributes()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "a0",
            "a1",
            "a2",
            "a3",
            "a4",
            "a5",
            "a6",
            "a7",
            "a8",
            "dlqctl-stable-id"
        ]
    );
}

#[tokio::test]
async fn tail_shows_what_arrives_after_it_starts() {
    let q = Sqs::new("tail").await;
    let (src, dlq) = q.pair(false, 1).await;
    send_orders(&q, &src, 3, false).await;
    q.fail_all(&src).await;
    let sb = Sandbox::new();
    let env = q.env(&sb);
    let mut child = sb
        .cmd(&[
            "-v",
            "tail",
            &format!("sqs://{}", q.name("dlq")),
            "--idle-timeout",
            "15s",
            "--output",
            "jsonl",
        ])
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Two more are dead-lettered once the tail has passed over the three already there.
    let stderr = StderrLines::until(&mut child, "are passed over");
    // Dead-letter two more (they keep their original SentTimestamp from the source).
    send_orders(&q, &src, 2, false).await;
    q.fail_all(&src).await;
    let out = child.wait_with_output().unwrap();
    let lines = String::from_utf8_lossy(&out.stdout).lines().count();
    assert_eq!(
        lines,
        2,
        "only the new dead letters: {}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr.rest()
    );
    assert_eq!(q.visible(&dlq).await, 5, "tail gives everything back");
}

/// A tail stopped mid long poll (idle timeout, Ctrl-C) drops a receive that the server still
/// answers. The release must wait for it, or the messages that answer hides stay hidden for
/// the whole visibility timeout after dlqctl has exited.
#[tokio::test]
async fn a_tail_cut_short_mid_poll_gives_everything_back() {
    let q = Sqs::new("tailcut").await;
    let (src, dlq) = q.pair(false, 1).await;
    send_orders(&q, &src, 3, false).await;
    q.fail_all(&src).await;
    let sb = Sandbox::new();
    let mut env = q.env(&sb);
    // A long poll that is certainly in flight when the idle timeout fires.
    env.retain(|(k, _)| k != "DLQCTL_SQS_WAIT_SECONDS");
    env.push(("DLQCTL_SQS_WAIT_SECONDS".into(), "4".into()));
    let out = sb
        .cmd(&[
            "tail",
            &format!("sqs://{}", q.name("dlq")),
            "--idle-timeout",
            "1s",
            "--output",
            "jsonl",
        ])
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 0);
    assert_eq!(q.visible(&dlq).await, 3, "the tail gives everything back");
}

/// Only `dlqctl-stable-id` or the configured id attribute carries the stable id: a River job
/// with id 1 and priority 1, replayed, still gets `dlqctl-stable-id` (an attribute that merely
/// holds the same value does not count), and a stale `dlqctl-stable-id` is replaced.
#[tokio::test]
async fn an_attribute_equal_to_the_id_does_not_stand_in_for_it() {
    let q = Sqs::new("sameval").await;
    let (target, _) = q.create("target", &[]).await;
    let sb = Sandbox::new();
    let file = sb.write(
        "jobs.jsonl",
        concat!(
            r#"{"v":1,"id":"1","native_id":"1","attributes":[{"name":"priority","type":"Number","value":"1"}],"body":"{}","body_encoding":"utf8"}"#,
            "\n",
            r#"{"v":1,"id":"7","native_id":"7","attributes":[{"name":"dlqctl-stable-id","type":"String","value":"stale"}],"body":"{}","body_encoding":"utf8"}"#,
            "\n"
        ),
    );
    let name = target.rsplit('/').next().unwrap();
    sb.run_with(
        &[
            "replay",
            &file.to_string_lossy(),
            "--to",
            &format!("sqs://{name}"),
            "--yes",
            "--output",
            "json",
        ],
        &q.env(&sb),
    )
    .ok();
    let mut got: Vec<(String, Option<String>)> = q
        .receive_all(&target)
        .await
        .iter()
        .map(|m| {
            let a = m.message_attributes().cloned().unwrap_or_default();
            let get = |n: &str| a.get(n).and_then(|v| v.string_value()).map(str::to_string);
            (get("dlqctl-stable-id").unwrap_or_default(), get("priority"))
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            ("1".to_string(), Some("1".to_string())),
            ("7".to_string(), None)
        ]
    );
}

/// `--to` the DLQ itself, by another of its names (its queue URL for sqs://NAME): refused
/// before anything is read, whatever form names it.
#[tokio::test]
async fn the_dlq_as_its_own_target_is_refused() {
    let q = Sqs::new("selfto").await;
    let (dlq, _) = q.create("dlq", &[]).await;
    send_orders(&q, &dlq, 3, false).await;
    let sb = Sandbox::new();
    let name = dlq.rsplit('/').next().unwrap();
    let r = sb
        .run_with(
            &["redrive", &format!("sqs://{name}"), "--to", &dlq, "--yes"],
            &q.env(&sb),
        )
        .code(2);
    assert!(r.stderr.contains("is the queue being read"), "{}", r.stderr);
    assert_eq!(q.visible(&dlq).await, 3);
}

/// The failure reason AWS services record: Lambda's asynchronous-invocation DLQ attributes
/// (`RequestID`, `ErrorCode`, `ErrorMessage`), EventBridge's and SNS's (`ERROR_CODE`,
/// `ERROR_MESSAGE`, `RULE_ARN`, `TARGET_ARN`), and a Lambda destination's failure record in
/// the body; each is classified by what it says.
#[tokio::test]
async fn the_error_data_aws_services_record_is_read_and_classified() {
    let q = Sqs::new("carriers").await;
    let (url, _) = q.create("dlq", &[]).await;
    let send = |body: &'static str, attrs: Vec<(&'static str, MessageAttributeValue)>| {
        let mut req = q.client.send_message().queue_url(&url).message_body(body);
        for (k, v) in attrs {
            req = req.message_attributes(k, v);
        }
        req.send()
    };
    send(
        r#"{"order": 1}"#,
        vec![
            ("RequestID", attr("String", "c1a2b3")),
            ("ErrorCode", attr("Number", "200")),
            (
                "ErrorMessage",
                attr("String", "connect ECONNREFUSED 10.0.0.7:5432"),
            ),
        ],
    )
    .await
    .unwrap();
    send(
        r#"{"detail-type": "OrderPlaced"}"#,
        vec![
            (
                "RULE_ARN",
                attr(
                    "String",
                    "arn:aws:events:eu-west-1:123456789012:rule/orders",
                ),
            ),
            (
                "TARGET_ARN",
                attr(
                    "String",
                    "arn:aws:lambda:eu-west-1:123456789012:function:ship",
                ),
            ),
            ("ERROR_CODE", attr("String", "THROTTLING")),
            (
                "ERROR_MESSAGE",
                attr("String", "Rate exceeded for the target"),
            ),
        ],
    )
    .await
    .unwrap();
    send(
        r#"{"requestContext": {"condition": "RetriesExhausted"}, "responsePayload": {"errorType": "ValidationError", "errorMessage": "amount must be positive"}}"#,
        vec![],
    )
    .await
    .unwrap();
    let sb = Sandbox::new();
    let env = q.env(&sb);
    let dlq = format!("sqs://{}", q.name("dlq"));
    let recs = sb
        .run_with(&["peek", &dlq, "-n", "3", "--output", "jsonl"], &env)
        .ok()
        .jsonl();
    let error_of = |needle: &str| {
        recs.iter()
            .find(|r| r["body"].as_str().unwrap().contains(needle))
            .unwrap_or_else(|| panic!("no {needle}: {recs:?}"))["error"]
            .clone()
    };
    // Lambda's 2xx ErrorCode says nothing about the failure: only the message is kept.
    assert_eq!(error_of("order")["class"], serde_json::Value::Null);
    assert_eq!(
        error_of("order")["message"],
        "connect ECONNREFUSED 10.0.0.7:5432"
    );
    assert_eq!(error_of("OrderPlaced")["class"], "THROTTLING");
    assert_eq!(error_of("responsePayload")["class"], "ValidationError");
    let j = sb
        .run_with(&["classify", &dlq, "--output", "json"], &env)
        .ok()
        .json();
    assert_eq!(j["total"], 3, "{j}");
    assert_eq!(
        j["kinds"]["transient"], 2,
        "refused connection, throttling: {j}"
    );
    assert_eq!(j["kinds"]["permanent"], 1, "a validation error: {j}");
}

/// A filtered SQS run reads the whole queue: its plan says how many receives that takes and
/// what each costs (issue 25).
#[tokio::test]
async fn the_plan_of_a_filtered_sqs_run_says_what_its_reads_cost() {
    let q = Sqs::new("reads").await;
    let (_src, dlq) = q.pair(false, 3).await;
    for i in 0..25 {
        q.client
            .send_message()
            .queue_url(&dlq)
            .message_body(format!("{{\"n\": {i}}}"))
            .send()
            .await
            .unwrap();
    }
    let sb = Sandbox::new();
    let r = sb
        .run_with(
            &[
                "redrive",
                &dlq,
                "--match",
                "\"n\": 7}",
                "--dry-run",
                "--output",
                "table",
            ],
            &q.env(&sb),
        )
        .ok();
    assert!(
        r.stderr.contains("about 3 ReceiveMessage calls")
            && r.stderr.contains("ApproximateReceiveCount"),
        "{}",
        r.stderr
    );
}
