//! Kafka against a real broker (tansu): dead-letter topics written the way Spring, Kafka
//! Connect and SmallRye write them, read with assign() only, redriven with the redrive group.

use std::process::Stdio;
use std::time::Duration;

use crate::harness::{Db, Kafka, Rec, Sandbox, StderrLines, java_partition};

/// Spring's DeadLetterPublishingRecoverer: names as text, numbers big-endian binary.
pub async fn spring_dlt(k: &Kafka, dlt: &str, n: i64) {
    for i in 0..n {
        let (cause, msg) = if i % 2 == 0 {
            ("java.net.SocketTimeoutException", "Read timed out")
        } else {
            (
                "com.fasterxml.jackson.core.JsonParseException",
                "Unexpected character ('<' (code 60))",
            )
        };
        let key = format!("cust-{}", i % 5);
        let body = format!("{{\"order\": {i}}}");
        let ts = (1_764_600_000_000i64 + i * 1000).to_be_bytes();
        let part = ((i % 3) as i32).to_be_bytes();
        let off = (1000 + i).to_be_bytes();
        k.produce(
            dlt,
            Some(0),
            Some(key.as_bytes()),
            Some(body.as_bytes()),
            &[
                ("trace-id", Some(format!("tr-{i}").as_bytes())),
                ("x-null", None),
                ("x-rep", Some(b"1")),
                ("x-rep", Some(b"2")),
                (
                    "kafka_dlt-original-topic",
                    Some(k.topic("orders").as_bytes()),
                ),
                ("kafka_dlt-original-partition", Some(&part)),
                ("kafka_dlt-original-offset", Some(&off)),
                ("kafka_dlt-original-timestamp", Some(&ts)),
                ("kafka_dlt-original-consumer-group", Some(b"billing")),
                (
                    "kafka_dlt-exception-fqcn",
                    Some(b"org.springframework.kafka.listener.ListenerExecutionFailedException"),
                ),
                ("kafka_dlt-exception-cause-fqcn", Some(cause.as_bytes())),
                ("kafka_dlt-exception-message", Some(msg.as_bytes())),
            ],
        )
        .await;
    }
}

/// A redrive of `dlt` paced by `--rate`, started in the background (stdout as given).
fn slow_redrive(
    sb: &Sandbox,
    k: &Kafka,
    dlt: &str,
    batch: &str,
    rate: &str,
    stdout: Stdio,
) -> std::process::Child {
    sb.cmd(&[
        "redrive",
        &k.url(dlt),
        "--yes",
        "--batch-size",
        batch,
        "--rate",
        rate,
        "--output",
        "json",
    ])
    .envs(k.env())
    .stdout(stdout)
    .stderr(Stdio::piped())
    .spawn()
    .unwrap()
}

/// Wait (up to 10 s) until `topic` has at least `n` records by its high watermarks.
async fn wait_for(k: &Kafka, topic: &str, n: i64) {
    for _ in 0..100 {
        if k.high_watermarks(topic) >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The distinct `dlqctl-stable-id` values of records a redrive wrote (each must have one).
fn distinct_stable_ids(recs: &[Rec]) -> Vec<Vec<u8>> {
    let mut ids: Vec<Vec<u8>> = recs
        .iter()
        .map(|r| {
            r.4.iter()
                .find(|(n, _)| n == "dlqctl-stable-id")
                .and_then(|(_, v)| v.clone())
                .expect("every copy carries dlqctl-stable-id")
        })
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

#[tokio::test(flavor = "multi_thread")]
async fn spring_connect_and_smallrye_dead_letters_are_understood() {
    let k = Kafka::new("conv");
    k.create("orders", 3, &[]).await;
    k.create("dlt", 1, &[("retention.ms", "604800000")]).await;
    spring_dlt(&k, "dlt", 4).await;
    k.produce(
        "dlt",
        None,
        None,
        Some(b"\xff\x00binary"),
        &[
            ("__connect.errors.topic", Some(b"pg.public.orders")),
            ("__connect.errors.partition", Some(b"0")),
            ("__connect.errors.offset", Some(b"77")),
            (
                "__connect.errors.exception.class.name",
                Some(b"org.apache.kafka.connect.errors.DataException"),
            ),
            (
                "__connect.errors.exception.message",
                Some(b"Failed to deserialize data for topic pg.public.orders"),
            ),
        ],
    )
    .await;
    k.produce(
        "dlt",
        None,
        Some(b"k"),
        Some(b"{}"),
        &[
            ("dead-letter-topic", Some(b"payments-in")),
            ("dead-letter-reason", Some(b"HTTP 503 Service Unavailable")),
            ("dead-letter-partition", Some(b"2")),
            ("dead-letter-offset", Some(b"9")),
        ],
    )
    .await;
    let sb = Sandbox::new();
    let env = k.env();
    let recs = sb
        .run_with(
            &["peek", &k.url("dlt"), "-n", "10", "--output", "jsonl"],
            &env,
        )
        .ok()
        .jsonl();
    assert_eq!(recs.len(), 6);
    let orders = k.topic("orders");
    assert_eq!(
        recs[0]["id"],
        format!("{orders}/0@1000"),
        "the original coordinates are the stable id"
    );
    assert_eq!(recs[1]["id"], format!("{orders}/1@1001"));
    assert_eq!(recs[0]["source"], orders.as_str());
    // Spring's binary numbers, decoded beside the raw value (for people and jq).
    let decoded = |rec: &serde_json::Value, name: &str| {
        rec["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .map(|a| a["decoded"].clone())
    };
    assert_eq!(
        decoded(&recs[1], "kafka_dlt-original-partition"),
        Some(serde_json::json!(1))
    );
    assert_eq!(
        decoded(&recs[1], "kafka_dlt-original-offset"),
        Some(serde_json::json!(1001))
    );
    assert_eq!(
        decoded(&recs[0], "kafka_dlt-original-timestamp"),
        Some(serde_json::json!("2025-12-01T14:40:00.000Z"))
    );
    let card = sb
        .run_with(
            &["peek", &k.url("dlt"), "-n", "2", "--output", "table"],
            &env,
        )
        .ok()
        .stdout;
    assert!(
        card.contains("kafka_dlt-original-offset = 1001 (raw"),
        "{card}"
    );
    assert_eq!(
        recs[0]["error"]["class"], "java.net.SocketTimeoutException",
        "the cause, not the wrapper"
    );
    assert_eq!(
        recs[0]["enqueued_at"], "2025-12-01T14:40:00Z",
        "original timestamp header"
    );
    assert_eq!(recs[0]["meta"]["original_consumer_group"], "billing");
    assert_eq!(recs[0]["key"], "cust-0");
    let attrs = recs[0]["attributes"].as_array().unwrap();
    assert_eq!(attrs.iter().filter(|a| a["name"] == "x-rep").count(), 2);
    assert!(
        attrs
            .iter()
            .any(|a| a["name"] == "x-null" && a["value"].is_null() && a.get("base64").is_none())
    );
    assert_eq!(recs[4]["id"], "pg.public.orders/0@77");
    assert_eq!(recs[4]["body_encoding"], "base64");
    assert_eq!(recs[5]["source"], "payments-in");

    let j = sb
        .run_with(&["classify", &k.url("dlt"), "--output", "json"], &env)
        .ok()
        .json();
    assert_eq!(j["total"], 6);
    assert_eq!(j["kinds"]["transient"], 3, "two timeouts and the 503: {j}");
    // Jackson's `Unexpected character ('<' (code 60))` at the first character is what an HTML
    // error page gives as often as a bad payload: ambiguous (docs/classification.md).
    assert_eq!(j["kinds"]["permanent"], 1, "the Connect deserializer: {j}");
    assert_eq!(
        j["kinds"]["unclassified"], 2,
        "the two JSON parse errors at a `<`: {j}"
    );
    let ins = sb
        .run_with(&["inspect", &k.url("dlt"), "--output", "json"], &env)
        .ok()
        .json();
    let fact = |n: &str| ins[0]["facts"][n].clone();
    assert_eq!(fact("messages"), 6);
    assert_eq!(fact("retention_ms"), 604800000, "a number, as json.md says");
    assert_eq!(
        fact("cleanup_policy"),
        serde_json::Value::Null,
        "not reported: null"
    );
    let by_topic = ins[0]["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["title"]
                .as_str()
                .unwrap()
                .starts_with("by original topic")
        })
        .unwrap();
    assert!(by_topic["rows"].to_string().contains(&orders));
}

#[tokio::test(flavor = "multi_thread")]
async fn peek_by_offset_and_time_and_tail_new_arrivals() {
    let k = Kafka::new("range");
    k.create("dlt", 2, &[]).await;
    spring_dlt(&k, "dlt", 6).await; // all on partition 0, offsets 0..6
    let sb = Sandbox::new();
    let env = k.env();
    let u = format!("{}?partition=0&from=2&to=4", k.url("dlt"));
    let recs = sb
        .run_with(&["peek", &u, "-n", "10", "--output", "jsonl"], &env)
        .ok()
        .jsonl();
    let offs: Vec<i64> = recs
        .iter()
        .map(|r| r["meta"]["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offs, [2, 3]);
    // By time: the original-timestamp header (14:40:00 + i seconds).
    let u = format!("{}?since=2025-12-01T14:40:03Z", k.url("dlt"));
    let recs = sb
        .run_with(&["peek", &u, "-n", "10", "--output", "jsonl"], &env)
        .ok()
        .jsonl();
    assert_eq!(recs.len(), 3, "{recs:?}");
    let u = format!("{}?until=2025-12-01T14:40:02Z", k.url("dlt"));
    assert_eq!(
        sb.run_with(&["peek", &u, "-n", "10", "--output", "jsonl"], &env)
            .ok()
            .jsonl()
            .len(),
        2
    );

    // tail: only new arrivals, until idle. The records are produced once the tail has fixed
    // where it starts (its `-v` line says so).
    let mut child = sb
        .cmd(&[
            "-v",
            "tail",
            &k.url("dlt"),
            "--idle-timeout",
            "10s",
            "--output",
            "jsonl",
        ])
        .envs(env.iter().map(|(a, b)| (a.as_str(), b.as_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = StderrLines::until(&mut child, "following kafka://");
    k.produce("dlt", Some(1), Some(b"new"), Some(b"{\"new\": 1}"), &[])
        .await;
    k.produce("dlt", Some(0), Some(b"new"), Some(b"{\"new\": 2}"), &[])
        .await;
    let out = child.wait_with_output().unwrap();
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(out.status.code(), Some(0), "{}", stderr.rest());
    assert_eq!(lines.len(), 2, "{lines:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn redrive_to_the_original_topic_lands_keys_where_java_would() {
    let k = Kafka::new("redrive");
    k.create("orders", 3, &[]).await;
    k.create("dlt", 1, &[]).await;
    spring_dlt(&k, "dlt", 10).await;
    let sb = Sandbox::new();
    let env = k.env();
    let j = sb
        .run_with(
            &[
                "redrive",
                &k.url("dlt"),
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
    assert_eq!(j["moved"], 5, "{j}");
    assert_eq!(j["skipped"], 5);
    // The permanent ones before the last transient one (8) were passed over; 9 stays pending.
    assert_eq!(j["committed_past"], 4, "{j}");
    let back = k.read_all("orders").await;
    assert_eq!(back.len(), 5);
    for (p, _, key, value, headers) in &back {
        let key = key.clone().unwrap();
        assert_eq!(
            *p,
            java_partition(&key, 3),
            "key {:?}",
            String::from_utf8_lossy(&key)
        );
        assert!(value.as_ref().unwrap().starts_with(b"{\"order\": "));
        let names: Vec<&str> = headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            &names[..4],
            ["trace-id", "x-null", "x-rep", "x-rep"],
            "order kept"
        );
        assert_eq!(headers[1].1, None, "a null header stays null");
        assert!(names.contains(&"dlqctl-stable-id") && names.contains(&"dlqctl-redriven-from"));
    }
    // The redrive group remembers: a second run moves only what lay after the last record
    // moved (the ones passed over were committed past).
    let j = sb
        .run_with(
            &["redrive", &k.url("dlt"), "--yes", "--output", "json"],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"], 1, "{j}");
    let ins = sb
        .run_with(&["inspect", &k.url("dlt"), "--output", "json"], &env)
        .ok()
        .json();
    let lag = ins[0]["facts"]["redrive_lag"].clone();
    assert_eq!(lag, 0);
    // --to another topic (a per-group retry topic, say) works on the same records by --from.
    k.create("orders-retry-billing", 1, &[]).await;
    let j = sb
        .run_with(
            &[
                "replay",
                &k.url("dlt"),
                "--to",
                &k.url("orders-retry-billing"),
                "--attr",
                "kafka_dlt-original-consumer-group=^billing$",
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"], 10);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_redrive_loses_nothing_and_continues_from_the_committed_offsets() {
    let k = Kafka::new("crash");
    k.create("orders", 2, &[]).await;
    k.create("dlt", 1, &[]).await;
    spring_dlt(&k, "dlt", 40).await;
    let sb = Sandbox::new();
    let env = k.env();
    let mut child = slow_redrive(&sb, &k, "dlt", "5", "10/s", Stdio::null());
    // Kill it once it is under way.
    wait_for(&k, "orders", 1).await;
    child.kill().unwrap();
    child.wait().unwrap();
    let partial = k.read_all("orders").await.len();
    assert!(partial > 0 && partial < 40, "stopped mid-run ({partial})");
    sb.run_with(
        &["redrive", &k.url("dlt"), "--yes", "--output", "json"],
        &env,
    )
    .ok();
    let back = k.read_all("orders").await;
    let ids = distinct_stable_ids(&back);
    assert_eq!(ids.len(), 40, "every record arrived");
    // With --rate each batch is committed as soon as it is delivered: a kill leaves at most
    // the batch on its way uncommitted, and the one before it if that one's asynchronous
    // commit had not reached the broker yet (docs/kafka.md, "Crashes and Ctrl-C").
    assert!(
        back.len() <= 40 + 2 * 5,
        "at most two batches twice ({})",
        back.len()
    );
}

/// Ctrl-C in the middle of a redrive with several batches on their way: it stops reading, lets
/// them be delivered and commits them in order, so the summary, the target and the redrive
/// group agree; a re-run moves exactly the rest.
#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_redrive_commits_every_batch_it_delivered() {
    let k = Kafka::new("sigint");
    k.create("orders", 3, &[]).await;
    k.create("dlt", 1, &[]).await;
    spring_dlt(&k, "dlt", 400).await;
    let sb = Sandbox::new();
    let env = k.env();
    let child = slow_redrive(&sb, &k, "dlt", "10", "200/s", Stdio::piped());
    wait_for(&k, "orders", 60).await;
    let st = std::process::Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["interrupted"], true, "{j}");
    let moved = j["moved"].as_i64().unwrap();
    assert!(moved > 0 && moved < 400, "stopped mid-run ({moved})");
    assert_eq!(
        k.read_all("orders").await.len() as i64,
        moved,
        "the summary counts every copy delivered"
    );
    let lag = |sb: &Sandbox| {
        let ins = sb
            .run_with(&["inspect", &k.url("dlt"), "--output", "json"], &env)
            .ok()
            .json();
        ins[0]["facts"]["redrive_lag"].as_i64().unwrap()
    };
    assert_eq!(lag(&sb), 400 - moved, "every delivered batch was committed");
    let j = sb
        .run_with(
            &[
                "redrive",
                &k.url("dlt"),
                "--yes",
                "--batch-size",
                "25",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"].as_i64().unwrap(), 400 - moved, "{j}");
    let back = k.read_all("orders").await;
    let ids = distinct_stable_ids(&back);
    assert_eq!((back.len(), ids.len()), (400, 400), "each once, none lost");
    assert_eq!(lag(&sb), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn export_then_replay_round_trips_bytes() {
    let k = Kafka::new("bytes");
    k.create("dlt", 1, &[]).await;
    k.create("copy", 1, &[]).await;
    k.produce(
        "dlt",
        None,
        Some(&[0xff, 0x00, 0x10]),
        Some(&[0x00, 0x9f, 0x92, 0x96]),
        &[
            ("bin", Some(&[0xde, 0xad])),
            ("n", None),
            ("r", Some(b"a")),
            ("r", Some(b"b")),
        ],
    )
    .await;
    k.produce("dlt", None, None, None, &[("tomb", Some(b"stone"))])
        .await;
    k.produce("dlt", None, Some(b"plain"), Some(b"{\"ok\": true}"), &[])
        .await;
    let sb = Sandbox::new();
    let env = k.env();
    let f = sb.path("dlt.jsonl");
    sb.run_with(&["export", &k.url("dlt"), "-o", f.to_str().unwrap()], &env)
        .ok();
    sb.run_with(
        &[
            "replay",
            f.to_str().unwrap(),
            "--to",
            &k.url("copy"),
            "--yes",
        ],
        &env,
    )
    .ok();
    let a = k.read_all("dlt").await;
    let b = k.read_all("copy").await;
    assert_eq!(a.len(), 3);
    assert_eq!(b.len(), 3);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.2, y.2, "key");
        assert_eq!(x.3, y.3, "value (a tombstone stays a tombstone)");
        let yh: Vec<_> =
            y.4.iter()
                .filter(|(n, _)| !n.starts_with("dlqctl-"))
                .cloned()
                .collect();
        assert_eq!(x.4, yh, "headers byte for byte");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kafka_to_sqs_and_postgres_to_kafka() {
    let k = Kafka::new("xk");
    k.create("orders", 3, &[]).await;
    k.create("dlt", 1, &[]).await;
    spring_dlt(&k, "dlt", 3).await;
    let q = crate::harness::Sqs::new("xk").await;
    let (target, _) = q.create("target", &[]).await;
    let sb = Sandbox::new();
    let mut env = k.env();
    env.extend(q.env(&sb));
    // Kafka → SQS: headers become attributes; the null header cannot go: reported, kept.
    let r = sb
        .run_with(
            &[
                "replay",
                &k.url("dlt"),
                "--to",
                &target,
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .code(1);
    assert!(
        r.json()["failures"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("null"),
        "{}",
        r.stdout
    );
    // PostgreSQL → Kafka.
    let db = Db::new("xk").await;
    db.seed(4).await;
    let j = sb
        .run_with(
            &[
                "redrive",
                &db.dlq(),
                "--to",
                &k.url("orders"),
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"], 4);
    let back = k.read_all("orders").await;
    assert_eq!(back.len(), 4);
    let h = &back[0].4;
    assert!(
        h.iter()
            .any(|(n, v)| n == "dlqctl-stable-id" && v.as_deref().unwrap().starts_with(b"ord-")),
        "{h:?}"
    );
    assert_eq!(db.count("dead_letters").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn verify_and_errors() {
    let k = Kafka::new("kv");
    k.create(
        "dlt",
        1,
        &[("cleanup.policy", "compact"), ("retention.ms", "86400000")],
    )
    .await;
    k.create("orders", 1, &[("retention.ms", "259200000")])
        .await;
    let db = Db::new("kv").await;
    let sb = Sandbox::new();
    let env = k.env();
    sb.write(
        "dlqctl.toml",
        &format!(
            "[queues.o]\ndlq = \"{}\"\nsource = \"{}\"\nreplay_window = \"1d\"\n[queues.o.dedupe]\nurl = \"{}\"\ntable = \"{}.processed_messages\"\nretention = \"7d\"\n",
            k.url("dlt"),
            k.url("orders"),
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
    assert_eq!(check("kafka-cleanup-policy")["status"], "FAIL");
    assert_eq!(check("kafka-retention-readable")["status"], "PASS");
    let c = check("dedupe-outlives-redelivery");
    assert_eq!(c["status"], "PASS", "{c}");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains("source topic retention 3d + DLT retention 1d + replay window 1d = 5d"),
        "{c}"
    );
    let r = sb.run_with(&["peek", &k.url("nope")], &env).code(3);
    assert!(
        r.stderr.contains("not found") || r.stderr.contains("Unknown"),
        "{}",
        r.stderr
    );
    let r = sb
        .run_with(&["peek", "kafka://127.0.0.1:1/x"], &env)
        .code(3);
    assert!(
        r.stderr.lines().next().unwrap().starts_with("error: "),
        "{}",
        r.stderr
    );
}

/// tansu has no EndTxn: --exactly-once must say so and move nothing.
#[tokio::test(flavor = "multi_thread")]
async fn exactly_once_needs_broker_transactions_and_says_so() {
    let k = Kafka::new("eos");
    k.create("orders", 1, &[]).await;
    k.create("dlt", 1, &[]).await;
    spring_dlt(&k, "dlt", 3).await;
    let sb = Sandbox::new();
    let env = k.env();
    let r = sb
        .run_with(&["redrive", &k.url("dlt"), "--exactly-once", "--yes"], &env)
        .code(2);
    assert!(r.stderr.contains("--to"), "{}", r.stderr);
    let r = sb.run_with(
        &[
            "redrive",
            &k.url("dlt"),
            "--to",
            &k.url("orders"),
            "--exactly-once",
            "--yes",
            "--output",
            "json",
        ],
        &env,
    );
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("--exactly-once") && r.stderr.contains("nothing was moved"),
        "{}",
        r.stderr
    );
    let j = sb
        .run_with(&["inspect", &k.url("dlt"), "--output", "json"], &env)
        .ok()
        .json();
    let lag = j[0]["facts"]["redrive_lag"].clone();
    assert_eq!(lag, 3, "no offsets committed");
}

/// Where the broker has transactions (librdkafka's mock cluster: tansu has none), an
/// `--exactly-once` redrive runs its whole protocol (InitProducerId, AddPartitionsToTxn,
/// AddOffsetsToTxn, TxnOffsetCommit, EndTxn) and the copies arrive byte for byte, keys where a
/// Java producer puts them. The mock keeps no transaction state, so what a real broker adds
/// (the offsets stored with the commit, markers for read_committed) is not checked here.
#[tokio::test(flavor = "multi_thread")]
async fn exactly_once_redrive_runs_its_transactions_on_a_broker_that_has_them() {
    let k = Kafka::mock("eos-mock");
    k.create("orders", 3, &[]).await;
    k.create("dlt", 1, &[]).await;
    spring_dlt(&k, "dlt", 7).await;
    let sb = Sandbox::new();
    let env = k.env();
    let r = sb.run_with(
        &[
            "redrive",
            &k.url("dlt"),
            "--to",
            &k.url("orders"),
            "--exactly-once",
            "--strip-header",
            "kafka_dlt-exception-message",
            "--batch-size",
            "3",
            "--yes",
            "--output",
            "json",
            "-vv",
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let j = r.json();
    assert_eq!(j["moved"], 7, "{j}");
    assert_eq!(j["failed"], 0, "{j}");
    let dlt = k.read_all("dlt").await;
    let back = k.read_all("orders").await;
    assert_eq!(back.len(), 7, "{back:?}");
    for (p, _, key, value, headers) in &back {
        let key = key.clone().unwrap();
        assert_eq!(
            *p,
            java_partition(&key, 3),
            "key {:?}",
            String::from_utf8_lossy(&key)
        );
        // The values are distinct ({"order": i}): find the dead letter by its value.
        let (.., src_headers) = dlt
            .iter()
            .find(|d| d.3 == *value)
            .unwrap_or_else(|| panic!("no dead letter with the value {value:?}"));
        let kept: Vec<_> = src_headers
            .iter()
            .filter(|(n, _)| n != "kafka_dlt-exception-message")
            .cloned()
            .collect();
        assert_eq!(
            &headers[..kept.len()],
            &kept[..],
            "headers carried in order, without the stripped one"
        );
        let names: Vec<&str> = headers.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.contains(&"dlqctl-stable-id") && names.contains(&"dlqctl-redriven-from"));
        assert!(!names.contains(&"kafka_dlt-exception-message"), "{names:?}");
        // The transactional path counts the redrive too (the loop guard), as every path does.
        let count = headers
            .iter()
            .find(|(n, _)| n == "dlqctl-redrive-count")
            .and_then(|(_, v)| v.clone());
        assert_eq!(count.as_deref(), Some(&b"1"[..]), "{names:?}");
        assert_eq!(names.len(), kept.len() + 3, "{names:?}");
    }
    // Three batches of at most 3 records: three transactions, each committed.
    let commits = r.stderr.matches("kafka: transaction committed").count();
    assert_eq!(commits, 3, "{}", r.stderr);
}

/// --strip-header and --keep-header choose what a copy carries; the destination still comes
/// from the dead-letter headers (read before the rules), and the stable id is carried.
#[tokio::test(flavor = "multi_thread")]
async fn header_rules_choose_what_a_copy_carries() {
    let k = Kafka::new("hdr");
    k.create("orders", 3, &[]).await;
    k.create("copies", 1, &[]).await;
    k.create("dlt", 1, &[]).await;
    spring_dlt(&k, "dlt", 4).await;
    let sb = Sandbox::new();
    let env = k.env();
    let orders = k.topic("orders");
    let j = sb
        .run_with(
            &[
                "redrive",
                &k.url("dlt"),
                "--strip-header",
                "kafka_dlt-*",
                "--strip-header",
                "x-rep",
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"], 4, "{j}");
    assert_eq!(j["headers"], "all but kafka_dlt-*, x-rep", "{j}");
    assert_eq!(j["destinations"][0]["to"], k.url("orders"), "{j}");
    let back = k.read_all("orders").await;
    assert_eq!(back.len(), 4);
    let mut ids: Vec<String> = Vec::new();
    for (.., headers) in &back {
        let names: Vec<&str> = headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "trace-id",
                "x-null",
                // The loop guard's count goes with every copy, like the stable id.
                "dlqctl-redrive-count",
                "dlqctl-stable-id",
                "dlqctl-redriven-from"
            ],
            "{headers:?}"
        );
        ids.push(String::from_utf8(headers[3].1.clone().unwrap()).unwrap());
    }
    ids.sort();
    let mut want: Vec<String> = (0..4)
        .map(|i| format!("{orders}/{}@{}", i % 3, 1000 + i))
        .collect();
    want.sort();
    assert_eq!(ids, want, "the original coordinates stay the stable id");

    let j = sb
        .run_with(
            &[
                "replay",
                &k.url("dlt"),
                "--to",
                &k.url("copies"),
                "--keep-header",
                "x-*",
                "--keep-header",
                "trace-id",
                "--strip-header",
                "x-null",
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"], 4, "{j}");
    for (.., headers) in &k.read_all("copies").await {
        let names: Vec<&str> = headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "trace-id",
                "x-rep",
                "x-rep",
                "dlqctl-redrive-count",
                "dlqctl-stable-id",
                "dlqctl-redriven-from"
            ],
            "{headers:?}"
        );
        assert_eq!(headers[1].1.as_deref(), Some(&b"1"[..]));
        assert_eq!(
            headers[2].1.as_deref(),
            Some(&b"2"[..]),
            "repeats kept in order"
        );
    }
}

/// A destination that fails mid-run must not let the redrive group commit past what was not
/// sent; ranges are refused for redrive (they are for peek, export and replay).
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_destination_blocks_the_commit_and_ranges_are_for_replay() {
    let k = Kafka::new("block");
    k.create("orders", 1, &[]).await;
    k.create("dlt", 1, &[]).await;
    let orders = k.topic("orders");
    let missing = k.topic("later");
    for (i, t) in [orders.as_str(), missing.as_str(), orders.as_str()]
        .iter()
        .enumerate()
    {
        k.produce(
            "dlt",
            None,
            Some(format!("k{i}").as_bytes()),
            Some(b"{}"),
            &[("kafka_dlt-original-topic", Some(t.as_bytes()))],
        )
        .await;
    }
    let sb = Sandbox::new();
    let env = k.env();
    // The record whose original topic does not exist is refused (dlqctl never creates a
    // topic); the others move, and nothing is committed past the refused one.
    let r = sb
        .run_with(
            &["redrive", &k.url("dlt"), "--yes", "--output", "json"],
            &env,
        )
        .code(1)
        .json();
    assert_eq!(
        (r["moved"].as_u64(), r["failed"].as_u64()),
        (Some(2), Some(1))
    );
    assert!(
        r["failures"][0]["reason"]
            .as_str()
            .is_some_and(|s| s.contains("never creates topics") && s.contains("later")),
        "{r}"
    );
    let ins = sb
        .run_with(&["inspect", &k.url("dlt"), "--output", "json"], &env)
        .ok()
        .json();
    let lag = ins[0]["facts"]["redrive_lag"].as_i64().unwrap();
    assert!(
        lag >= 2,
        "the unsent record and what follows stay pending (lag {lag})"
    );
    k.create("later", 1, &[]).await;
    sb.run_with(
        &["redrive", &k.url("dlt"), "--yes", "--output", "json"],
        &env,
    )
    .ok();
    assert_eq!(k.read_all("later").await.len(), 1);
    assert!(k.read_all("orders").await.len() >= 2);
    let r = sb
        .run_with(
            &["redrive", &format!("{}?from=1", k.url("dlt")), "--yes"],
            &env,
        )
        .code(2);
    assert!(r.stderr.contains("replay"), "{}", r.stderr);
    let r = sb
        .run_with(
            &["peek", &k.url("dlt")],
            &[(
                "DLQCTL_CONFIG".into(),
                sb.write(
                    "k.toml",
                    "[kafka.properties]\n\"sasl.passwrd\" = \"hunter2-SECRET\"\n",
                )
                .to_string_lossy()
                .into_owned(),
            )],
        )
        .code(2);
    assert!(
        !r.stderr.contains("hunter2") && r.stderr.contains("sasl.passwrd"),
        "{}",
        r.stderr
    );
}

/// zstd is built in: dlqctl reads records compressed with zstd and writes its copies with zstd
/// when `compression.type` says so, every byte kept. (The fixture writes one record per request
/// and reads the copies with its own client: tansu's high watermark is wrong after a
/// multi-record batch, which a peek of the copies would trust.)
#[tokio::test(flavor = "multi_thread")]
async fn zstd_compressed_records_are_read_and_written() {
    let k = Kafka::with_producer("zstd", &[("compression.type", "zstd")]);
    k.create("dlt", 1, &[]).await;
    k.create("copy", 1, &[]).await;
    let body = "{\"order\": 1, \"pad\": \"".to_string() + &"z".repeat(2000) + "\"}";
    for i in 0..3 {
        let key = format!("k{i}");
        k.produce(
            "dlt",
            None,
            Some(key.as_bytes()),
            Some(body.as_bytes()),
            &[("h", Some(b"v"))],
        )
        .await;
    }
    let sb = Sandbox::new();
    let env = k.env();
    let rows = sb
        .run_with(&["peek", &k.url("dlt"), "--output", "jsonl"], &env)
        .ok()
        .jsonl();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[2]["key"], "k2");
    assert_eq!(rows[2]["body"], body.as_str());
    sb.write(
        "dlqctl.toml",
        "[kafka.properties]\n\"compression.type\" = \"zstd\"\n",
    );
    let j = sb
        .run_with(
            &[
                "redrive",
                &k.url("dlt"),
                "--to",
                &k.url("copy"),
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"], 3, "{j}");
    let copies = k.read_all("copy").await;
    assert_eq!(copies.len(), 3);
    for (i, c) in copies.iter().enumerate() {
        assert_eq!(c.2.as_deref(), Some(format!("k{i}").as_bytes()));
        assert_eq!(c.3.as_deref(), Some(body.as_bytes()));
    }
}

/// Two redrives of one dead-letter topic: the second refuses (exit 3) while the first holds the
/// redrive lease, nothing is copied twice, and once the first is over (or killed) a redrive
/// runs again.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_redrive_of_one_topic_refuses_while_the_first_runs() {
    let k = Kafka::new("lease");
    k.create("orders", 2, &[]).await;
    k.create("dlt", 2, &[]).await;
    spring_dlt(&k, "dlt", 60).await;
    let sb = Sandbox::new();
    // A 2 s lease: the first run renews it every 0.7 s, so the second sees it held at once.
    let cfg = sb.write("lease.toml", "[kafka]\nlease_timeout = \"2s\"\n");
    let mut env = k.env();
    env.push(("DLQCTL_CONFIG".into(), cfg.to_string_lossy().into_owned()));
    // Twelve seconds at 5/s: the second run comes while the first runs.
    let first = sb
        .cmd(&[
            "redrive",
            &k.url("dlt"),
            "--yes",
            "--batch-size",
            "5",
            "--rate",
            "5/s",
            "--output",
            "json",
        ])
        .envs(env.clone())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&k, "orders", 1).await;
    assert!(
        k.high_watermarks("orders") >= 1,
        "the first run is under way"
    );
    let second = sb
        .run_with(
            &["redrive", &k.url("dlt"), "--yes", "--output", "json"],
            &env,
        )
        .code(3);
    assert!(
        second
            .stderr
            .contains("another dlqctl redrive of this topic is running"),
        "{}",
        second.stderr
    );
    assert!(second.stdout.trim().is_empty() || second.json()["moved"] == 0);
    let out = first.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back = k.read_all("orders").await;
    assert_eq!(
        back.len(),
        60,
        "every record once: the second run copied nothing"
    );
    assert_eq!(distinct_stable_ids(&back).len(), 60);
    // The lease was given back: the next run may go (and finds nothing to move).
    let r = sb
        .run_with(
            &["redrive", &k.url("dlt"), "--yes", "--output", "json"],
            &env,
        )
        .ok()
        .json();
    assert_eq!(r["moved"], 0);
    // A killed holder does not block the next run for long: the coordinator drops it.
    spring_dlt(&k, "dlt", 20).await;
    let mut killed = sb
        .cmd(&[
            "redrive",
            &k.url("dlt"),
            "--yes",
            "--batch-size",
            "2",
            "--rate",
            "10/s",
        ])
        .envs(env.clone())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&k, "orders", 61).await;
    killed.kill().unwrap();
    killed.wait().unwrap();
    sb.run_with(
        &["redrive", &k.url("dlt"), "--yes", "--output", "json"],
        &env,
    )
    .ok();
    // (spring_dlt gives the 20 new records the first 20's stable ids: count copies and lag.)
    assert!(k.read_all("orders").await.len() >= 80);
    let ins = sb
        .run_with(&["inspect", &k.url("dlt"), "--output", "json"], &env)
        .ok()
        .json();
    let lag = ins[0]["facts"]["redrive_lag"].as_i64();
    assert_eq!(lag, Some(0), "{ins}");
}

/// A `--to` topic that does not exist is refused before anything is read or asked, in a dry run
/// too, and no client creates it (tansu never auto-creates; the client setting that forbids it
/// on brokers that would is checked in the unit tests).
#[tokio::test(flavor = "multi_thread")]
async fn a_missing_target_topic_is_refused_up_front_and_never_created() {
    let k = Kafka::new("nocreate");
    k.create("dlt", 1, &[]).await;
    spring_dlt(&k, "dlt", 3).await;
    let sb = Sandbox::new();
    let env = k.env();
    let (dlt, to) = (k.url("dlt"), k.url("ordres"));
    for extra in [&["--dry-run"][..], &["--yes"][..]] {
        let mut args = vec!["redrive", dlt.as_str(), "--to", to.as_str()];
        args.extend(extra);
        let r = sb.run_with(&args, &env).code(3);
        assert!(
            r.stderr.contains("ordres") && r.stderr.contains("not found"),
            "{}",
            r.stderr
        );
    }
    // The DLT is untouched and the typo topic does not exist.
    let r = sb.run_with(&["inspect", &k.url("ordres")], &env).code(3);
    assert!(r.stderr.contains("not found"), "{}", r.stderr);
    assert_eq!(k.high_watermarks("dlt"), 3);
    // --to the DLT itself: refused before anything moves.
    let r = sb
        .run_with(
            &["redrive", &k.url("dlt"), "--to", &k.url("dlt"), "--yes"],
            &env,
        )
        .code(2);
    assert!(r.stderr.contains("is the queue being read"), "{}", r.stderr);
    assert_eq!(k.high_watermarks("dlt"), 3);
}

/// Only `dlqctl-stable-id` or the configured id header carries the stable id into a copy (a
/// header that happens to hold the same value does not), and a stale one is replaced.
#[tokio::test(flavor = "multi_thread")]
async fn a_header_equal_to_the_id_does_not_stand_in_for_it() {
    let k = Kafka::new("sameval");
    k.create("orders", 1, &[]).await;
    let sb = Sandbox::new();
    let file = sb.write(
        "jobs.jsonl",
        concat!(
            r#"{"v":1,"id":"1","native_id":"1","attributes":[{"name":"priority","value":"1"}],"body":"{}","body_encoding":"utf8"}"#,
            "\n",
            r#"{"v":1,"id":"7","native_id":"7","attributes":[{"name":"dlqctl-stable-id","value":"stale"}],"body":"{}","body_encoding":"utf8"}"#,
            "\n"
        ),
    );
    sb.run_with(
        &[
            "replay",
            &file.to_string_lossy(),
            "--to",
            &k.url("orders"),
            "--yes",
            "--output",
            "json",
        ],
        &k.env(),
    )
    .ok();
    let recs = k.read_all("orders").await;
    let ids: Vec<Vec<Option<Vec<u8>>>> = recs
        .iter()
        .map(|r| {
            r.4.iter()
                .filter(|(n, _)| n == "dlqctl-stable-id")
                .map(|(_, v)| v.clone())
                .collect()
        })
        .collect();
    assert_eq!(
        ids,
        vec![vec![Some(b"1".to_vec())], vec![Some(b"7".to_vec())]],
        "one dlqctl-stable-id each, with the message's id"
    );
}

/// A dry run reads what the real run would: from the redrive group's committed offsets. After
/// a filtered redrive (which commits past what it skipped), a dry run predicts the next real
/// run exactly, and its plan says that skipped records are committed past.
#[tokio::test(flavor = "multi_thread")]
async fn a_dry_run_predicts_the_real_run_from_the_committed_offsets() {
    let k = Kafka::new("dryoff");
    k.create("orders", 1, &[]).await;
    k.create("dlt", 1, &[]).await;
    spring_dlt(&k, "dlt", 12).await;
    let sb = Sandbox::new();
    let env = k.env();
    let dlt = k.url("dlt");
    let run = |args: &[&str]| {
        let mut a = vec!["redrive", dlt.as_str()];
        a.extend_from_slice(args);
        a.extend(["--output", "json"]);
        sb.run_with(&a, &env)
    };
    // Moves 3 transient records; commits past the permanent ones it skipped on the way.
    run(&["--class", "transient", "--max", "3", "--yes"]).ok();
    for class in ["permanent", "transient"] {
        let dry = run(&["--class", class, "--dry-run"]).ok().json();
        let real = run(&["--class", class, "--yes"]).ok().json();
        assert_eq!(
            dry["moved"], real["moved"],
            "{class}: the dry run said {} and the run moved {}",
            dry["moved"], real["moved"]
        );
    }
    // At a terminal-less table output the plan says what a filtered Kafka redrive does.
    let r = sb
        .run_with(
            &[
                "redrive",
                &k.url("dlt"),
                "--class",
                "transient",
                "--dry-run",
                "--output",
                "table",
            ],
            &env,
        )
        .ok();
    assert!(
        r.stderr.contains("committed past") && r.stderr.contains("dlqctl replay"),
        "{}",
        r.stderr
    );
}

/// `edit` on a dead-letter topic looks the record up where a redrive reads (from the redrive
/// group's committed offsets): before its question the plan says how many records before it on
/// its partition are committed past; only that partition moves; a record behind the group's
/// offsets is refused with the reason.
#[tokio::test(flavor = "multi_thread")]
async fn edit_reads_where_a_redrive_would_and_says_what_it_passes() {
    use crate::pair::{KafkaPair, Pair};
    use crate::terminal::{at_terminal, editor_script};
    let mut p = KafkaPair::new();
    // m-i on partition i % 2: m-20 is the eleventh record of partition 0.
    let ids = p.fresh(30).await;
    let sb = Sandbox::new();
    let fix = editor_script(
        &sb,
        "fix.sh",
        "sed -i 's/\"body\": {/\"body\": {\"fixed\": true,/' \"$1\"",
    );
    let env: String = p
        .env(&sb)
        .iter()
        .map(|(k, v)| format!("{k}='{v}' "))
        .collect();
    let dlt = p.redrive()[1].clone();
    let edit = |id: &str| {
        format!(
            "{env}DLQCTL_STATE_DIR='{}' EDITOR='{fix}' {} edit '{dlt}' --id '{id}'",
            sb.path("state").display(),
            env!("CARGO_BIN_EXE_dlqctl"),
        )
    };
    let (code, seen) = at_terminal(&sb, &edit(&ids[20]), "Send the edited copy", b"y");
    assert_eq!(code, 0, "{seen}");
    let ask = seen.find("Send the edited copy").unwrap();
    let note = seen
        .find("10 records before it on partition 0")
        .unwrap_or_else(|| panic!("the plan says what is passed:\n{seen}"));
    assert!(note < ask, "before the question:\n{seen}");
    // Partition 0 is committed past m-20 (11 records), partition 1 is untouched.
    assert_eq!(p.remaining().await, 19, "{seen}");

    // m-4 was passed over: refused, with the reason, nothing sent.
    let (code, seen) = at_terminal(&sb, &edit(&ids[4]), "never asked", b"");
    assert_eq!(code, 3, "{seen}");
    assert!(seen.contains("behind the redrive group"), "{seen}");
    assert_eq!(p.remaining().await, 19);
}
