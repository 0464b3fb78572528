//! Kafka redrives that an operator can trust (issue 24): a filtered run commits only what it
//! had to pass, the redrive lease is fenced against a holder that was suspended past it, and
//! the loop guard never commits past a record it holds.

use std::collections::HashMap;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::harness::{Db, Kafka, Rec, Sandbox, assert_dry_run_predicted};
use crate::pair::wait_until;

/// `n` dead letters `r-0 … r-(n-1)`, record `i` on partition `i % partitions` (so at offset
/// `i / partitions` there), each naming `orders` as its original topic. `counts`: record
/// index → the `dlqctl-redrive-count` it carries.
async fn numbered_dlt(k: &Kafka, dlt: &str, n: usize, partitions: usize, counts: &[(usize, u32)]) {
    let orders = k.topic("orders");
    for i in 0..n {
        let id = format!("r-{i}");
        let body = format!("{{\"n\": {i}}}");
        let count = counts
            .iter()
            .find(|(j, _)| *j == i)
            .map(|(_, c)| c.to_string());
        let mut headers: Vec<(&str, Option<&[u8]>)> = vec![
            ("dlqctl-stable-id", Some(id.as_bytes())),
            ("kafka_dlt-original-topic", Some(orders.as_bytes())),
        ];
        if let Some(c) = &count {
            headers.push(("dlqctl-redrive-count", Some(c.as_bytes())));
        }
        k.produce(
            dlt,
            Some((i % partitions) as i32),
            None,
            Some(body.as_bytes()),
            &headers,
        )
        .await;
    }
}

fn stable_id(r: &Rec) -> Option<String> {
    r.4.iter()
        .find(|(n, _)| n == "dlqctl-stable-id")
        .and_then(|(_, v)| v.clone())
        .map(|v| String::from_utf8_lossy(&v).into_owned())
}

/// A filtered redrive (and `edit`, which is one with `--id`) commits only what it had to pass
/// to reach what it moved: on a partition where it moved something, up to the last record it
/// moved; elsewhere nothing. The dry run predicts, and the summary says, how many records were
/// committed past; and a dry run of a group that consumed everything says so.
#[tokio::test(flavor = "multi_thread")]
async fn a_filtered_redrive_commits_only_what_it_had_to_pass() {
    let k = Kafka::new("passed");
    k.create("orders", 1, &[]).await;
    k.create("dlt", 3, &[]).await;
    numbered_dlt(&k, "dlt", 30, 3, &[]).await;
    let sb = Sandbox::new();
    let env = k.env();
    let dlt = k.url("dlt");
    let run = |args: &[&str]| {
        let mut a = vec!["redrive", dlt.as_str()];
        a.extend_from_slice(args);
        sb.run_with(&a, &env)
    };
    // The redrive group at offset 2 of partition 0 (records 0 and 3).
    let p0 = format!("{dlt}?partition=0");
    let r = sb
        .run_with(
            &["redrive", &p0, "--max", "2", "--yes", "--output", "json"],
            &env,
        )
        .ok()
        .json();
    assert_eq!(r["moved"], 2, "{r}");

    // r-19 is on partition 1 at offset 6: the six records before it there are passed over.
    let dry = run(&["--id", "r-19", "--dry-run", "--output", "json"])
        .ok()
        .json();
    assert_eq!(
        (dry["moved"].as_u64(), dry["committed_past"].as_u64()),
        (Some(1), Some(6)),
        "the dry run predicts what the commit passes over: {dry}"
    );
    let real = run(&["--id", "r-19", "--yes", "--output", "table"]).ok();
    assert!(
        real.stdout.contains("moved 1 ")
            && real.stdout.contains("committed past 6 (")
            && real.stdout.contains("will not be redriven"),
        "{}",
        real.stdout
    );
    let copies: Vec<String> = k
        .read_until("orders", |r| r.len() >= 3)
        .await
        .iter()
        .filter_map(stable_id)
        .collect();
    assert_eq!(copies, ["r-0", "r-3", "r-19"], "only what was selected");

    // Partitions 0 and 2 are as they were; partition 1 passed r-1 … r-16 and moved r-19:
    // 30 - 2 - 1 - 6 are still pending.
    let dry = run(&["--dry-run", "--output", "json"]).ok().json();
    assert_eq!(dry["moved"], 21, "{dry}");
    assert_eq!(dry["committed_past"], 0, "{dry}");

    // A filter that matches nothing commits nothing, and says the id was not found (exit 1).
    let r = run(&["--id", "r-999", "--yes", "--output", "json"])
        .code(1)
        .json();
    assert_eq!(
        (r["moved"].as_u64(), r["committed_past"].as_u64()),
        (Some(0), Some(0)),
        "{r}"
    );
    assert_eq!(r["ids_not_found"], serde_json::json!(["r-999"]), "{r}");
    let dry = run(&["--dry-run", "--output", "json"]).ok().json();
    assert_eq!(dry["moved"], 21, "{dry}");

    // Drained: a dry run says why it would send nothing, in its plan, summary and JSON.
    run(&["--yes", "--output", "json"]).ok();
    // (r-25 was moved: not found among what is pending, exit 1.)
    let dry = run(&["--id", "r-25", "--dry-run", "--output", "table"]).code(1);
    let said = format!("{}{}", dry.stderr, dry.stdout);
    assert!(
        said.matches("has consumed everything").count() >= 2 && said.contains("dlqctl replay"),
        "plan and summary say why nothing is pending:\n{said}"
    );
    let dry = run(&["--dry-run", "--output", "json"]).ok().json();
    assert!(
        dry["notes"][0]
            .as_str()
            .is_some_and(|n| n.contains("has consumed everything")),
        "{dry}"
    );
}

/// The loop guard on Kafka: a record at `--max-redrives` cannot stay pending while the records
/// after it are committed (one offset covers everything before it), so a Kafka redrive with
/// the guard needs `--park`: refused before anything is read (exit 2), whether the limit comes
/// from the flag or from dlqctl.toml. With `--park` the records at the limit go there and the
/// rest move.
#[tokio::test(flavor = "multi_thread")]
async fn the_loop_guard_on_kafka_parks_and_never_commits_past_a_held_record() {
    let k = Kafka::new("guard");
    k.create("orders", 1, &[]).await;
    k.create("parked", 1, &[]).await;
    k.create("dlt", 1, &[]).await;
    numbered_dlt(&k, "dlt", 10, 1, &[(2, 3), (7, 3)]).await;
    let sb = Sandbox::new();
    let env = k.env();
    let dlt = k.url("dlt");
    let r = sb
        .run_with(&["redrive", &dlt, "--max-redrives", "3", "--yes"], &env)
        .code(2);
    assert!(
        r.stderr.contains("--park") && r.stderr.contains("committed past"),
        "{}",
        r.stderr
    );
    let cfg = sb.write(
        "guard.toml",
        &format!("[queues.dlt]\ndlq = \"{dlt}\"\nmax_redrives = 3\n"),
    );
    let mut with_cfg = env.clone();
    with_cfg.push(("DLQCTL_CONFIG".into(), cfg.to_string_lossy().into_owned()));
    let r = sb.run_with(&["redrive", "dlt", "--yes"], &with_cfg).code(2);
    assert!(r.stderr.contains("max_redrives"), "{}", r.stderr);
    assert_eq!(k.high_watermarks("orders"), 0, "nothing was sent");
    // A dry run predicts the run: refused too. A replay commits nothing: the guard holds
    // there as everywhere.
    sb.run_with(&["redrive", &dlt, "--max-redrives", "3", "--dry-run"], &env)
        .code(2);
    k.create("copies", 1, &[]).await;
    let r = sb
        .run_with(
            &[
                "replay",
                &dlt,
                "--to",
                &k.url("copies"),
                "--max-redrives",
                "3",
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    assert_eq!(
        (r["moved"].as_u64(), r["held"].as_u64()),
        (Some(8), Some(2)),
        "{r}"
    );

    let r = sb
        .run_with(
            &[
                "redrive",
                &dlt,
                "--max-redrives",
                "3",
                "--park",
                &k.url("parked"),
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    // `moved` counts every accepted copy, the parked ones too.
    assert_eq!(
        (
            r["moved"].as_u64(),
            r["parked"].as_u64(),
            r["held"].as_u64()
        ),
        (Some(10), Some(2), Some(0)),
        "{r}"
    );
    assert_eq!(r["committed_past"], 0, "{r}");
    let parked: Vec<String> = k
        .read_until("parked", |r| r.len() >= 2)
        .await
        .iter()
        .filter_map(stable_id)
        .collect();
    assert_eq!(parked, ["r-2", "r-7"]);
}

/// The lease group's value (its committed offset on partition 0), read the way dlqctl reads
/// it; 0 when there is none.
fn lease_value(k: &Kafka, dlt: &str) -> i64 {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let topic = k.topic(dlt);
    let c: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", &k.bootstrap)
        .set("group.id", format!("dlqctl-redrive.{topic}.lease"))
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = rdkafka::TopicPartitionList::new();
    tpl.add_partition(&topic, 0);
    let got = c
        .committed_offsets(tpl, Duration::from_secs(10))
        .expect("committed offsets");
    match got.elements().first().map(|e| e.offset()) {
        Some(rdkafka::Offset::Offset(o)) => o,
        _ => 0,
    }
}

fn signal(child: &Child, sig: &str) {
    let st = std::process::Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.id().to_string())
        .status()
        .expect("kill");
    assert!(st.success(), "kill -{sig}");
}

/// The redrive lease is fenced. Operator A redrives slowly and is suspended (SIGSTOP) past
/// its lease; operator B finds the lease unrenewed, takes it and redrives; A, resumed
/// (SIGCONT), finds that it lost the lease before it claims, sends or commits anything more,
/// leaves B's lease alone, and stops: exit 3 with one line saying so. B finishes (exit 0).
/// Every record arrives; the copies twice are at most what A had on its way when it was
/// stopped: its pipeline of claimed batches (4) and the batch before them whose asynchronous
/// commit may not have landed, 5 batches of 5.
#[tokio::test(flavor = "multi_thread")]
async fn a_redrive_suspended_past_its_lease_stops_and_the_next_one_finishes() {
    const N: usize = 150;
    let k = Kafka::new("fence");
    k.create("orders", 1, &[]).await;
    k.create("dlt", 1, &[]).await;
    numbered_dlt(&k, "dlt", N, 1, &[]).await;
    let sb = Sandbox::new();
    let cfg = sb.write("lease.toml", "[kafka]\nlease_timeout = \"2s\"\n");
    let mut env = k.env();
    env.push(("DLQCTL_CONFIG".into(), cfg.to_string_lossy().into_owned()));
    let redrive = |rate: &str| {
        sb.cmd(&[
            "redrive",
            &k.url("dlt"),
            "--yes",
            "--batch-size",
            "5",
            "--rate",
            rate,
            "--output",
            "json",
        ])
        .envs(env.clone())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start dlqctl")
    };
    let a = redrive("10/s");
    wait_until(Duration::from_secs(30), "A's first copies", || async {
        k.high_watermarks("orders") >= 10
    })
    .await;
    signal(&a, "STOP");
    let held_by_a = lease_value(&k, "dlt");
    assert_ne!(held_by_a, 0, "A holds the lease");
    let b = redrive("40/s");
    wait_until(Duration::from_secs(30), "B to take the lease", || async {
        let v = lease_value(&k, "dlt");
        v != 0 && v != held_by_a
    })
    .await;
    let before_b = k.high_watermarks("orders");
    wait_until(Duration::from_secs(30), "B's first copies", || async {
        k.high_watermarks("orders") > before_b
    })
    .await;
    signal(&a, "CONT");
    let a = a.wait_with_output().unwrap();
    let b = b.wait_with_output().unwrap();
    let a_err = String::from_utf8_lossy(&a.stderr);
    let b_err = String::from_utf8_lossy(&b.stderr);
    assert_eq!(
        b.status.code(),
        Some(0),
        "B finishes, its lease untouched:\n{b_err}"
    );
    assert_eq!(a.status.code(), Some(3), "A stops:\n{a_err}");
    let lost: Vec<&str> = a_err
        .lines()
        .filter(|l| l.contains("lost the redrive lease"))
        .collect();
    assert!(
        lost.len() == 1 && lost[0].starts_with("error: "),
        "one line says why A stopped:\n{a_err}"
    );
    let recs = k
        .read_until("orders", |r| {
            r.iter()
                .filter_map(stable_id)
                .collect::<std::collections::HashSet<_>>()
                .len()
                >= N
        })
        .await;
    let mut per_id: HashMap<String, usize> = HashMap::new();
    for r in &recs {
        *per_id
            .entry(stable_id(r).expect("every copy has its id"))
            .or_default() += 1;
    }
    assert_eq!(per_id.len(), N, "every record arrived");
    let twice = recs.len() - N;
    assert!(
        twice <= 25,
        "{twice} copies twice: more than A had on its way ({} copies of {N})",
        recs.len()
    );
}

/// A copy over the producer's `message.max.bytes` is refused before it is sent: the dry run
/// predicts it with the real run's reason and exits 1 as the run will, the row stays, and the
/// rest are delivered.
#[tokio::test(flavor = "multi_thread")]
async fn a_copy_over_message_max_bytes_is_predicted_refused_and_kept() {
    let k = Kafka::new("maxbytes");
    k.create("orders", 1, &[]).await;
    let db = Db::new("kafkamax").await;
    db.seed(3).await;
    db.exec(
        "INSERT INTO {s}.dead_letters (message_id, queue, payload) VALUES ('big-1', 'orders', jsonb_build_object('blob', repeat('x', 2500)))",
    )
    .await;
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        "[kafka.properties]\n\"message.max.bytes\" = \"2000\"\n",
    );
    let (dlq, to) = (db.dlq(), k.url("orders"));
    let redrive = |dry: bool| {
        let mut args = vec!["redrive", &dlq, "--to", &to, "--yes", "--output", "json"];
        if dry {
            args.push("--dry-run");
        }
        sb.run_with(&args, &k.env()).code(1).json()
    };
    let dry = redrive(true);
    assert_eq!(
        k.read_all("orders").await.len(),
        0,
        "a dry run sends nothing"
    );
    let j = redrive(false);
    assert_eq!((&j["moved"], &j["failed"]), (&3.into(), &1.into()), "{j}");
    assert!(
        j["failures"].to_string().contains("too large"),
        "librdkafka's reason: {j}"
    );
    assert_dry_run_predicted(&dry, &j);
    assert_eq!(
        db.ids("dead_letters").await,
        ["big-1"],
        "the refused one stays"
    );
    assert_eq!(k.read_all("orders").await.len(), 3);
}

/// The stable id a source's `id` rule reads (`header:x-request-id`) travels to every reader:
/// each copy, to Kafka and to SQS, carries it in `dlqctl-stable-id`, which a topic or queue
/// read with no rule takes as the id
/// (op5's SQS → Kafka → SQS hop: the rule's header alone left the copy's id to its
/// coordinates). A record whose `dlqctl-stable-id` already holds the id gets no second one.
#[tokio::test(flavor = "multi_thread")]
async fn an_id_read_by_a_rule_reaches_readers_without_it() {
    let k = Kafka::new("idrule");
    k.create("dlt", 1, &[]).await;
    k.create("copies", 1, &[]).await;
    for i in 0..3 {
        let id = format!("req-{i}");
        let mut headers: Vec<(&str, Option<&[u8]>)> = vec![("x-request-id", Some(id.as_bytes()))];
        if i == 2 {
            headers.push(("dlqctl-stable-id", Some(id.as_bytes())));
        }
        k.produce("dlt", Some(0), None, Some(b"{}"), &headers).await;
    }
    let sb = Sandbox::new();
    let cfg = sb.write(
        "ids.toml",
        &format!(
            "[queues.dlt]\ndlq = \"{}\"\nid = \"header:x-request-id\"\n",
            k.url("dlt")
        ),
    );
    let mut env = k.env();
    env.push(("DLQCTL_CONFIG".into(), cfg.to_string_lossy().into_owned()));
    let j = sb
        .run_with(
            &[
                "replay",
                "dlt",
                "--to",
                &k.url("copies"),
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"], 3, "{j}");
    let recs = k.read_until("copies", |r| r.len() >= 3).await;
    assert_eq!(recs.len(), 3);
    k.create("check", 1, &[]).await;
    for (_, _, _, value, headers) in &recs {
        let ids: Vec<_> = headers
            .iter()
            .filter(|(n, _)| n == "dlqctl-stable-id")
            .map(|(_, v)| v.clone())
            .collect();
        let want = headers.iter().find(|(n, _)| n == "x-request-id").unwrap();
        assert_eq!(
            ids,
            vec![want.1.clone()],
            "one dlqctl-stable-id, the id: {headers:?}"
        );
        // Each copy again, one record per request (tansu's high watermark counts a batch of
        // several as one: docs/kafka.md), for dlqctl to read with no rule.
        let h: Vec<(&str, Option<&[u8]>)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_deref()))
            .collect();
        k.produce("check", Some(0), None, value.as_deref(), &h)
            .await;
    }
    let peek = sb
        .run_with(
            &["peek", &k.url("check"), "-n", "10", "--output", "jsonl"],
            &k.env(),
        )
        .ok()
        .jsonl();
    let mut got: Vec<&str> = peek.iter().map(|m| m["id"].as_str().unwrap()).collect();
    got.sort();
    assert_eq!(got, ["req-0", "req-1", "req-2"], "{peek:?}");

    // To SQS, read with no rule: the copies carry the rule's ids in `dlqctl-stable-id` too.
    let sqs = crate::harness::Sqs::new("idrule").await;
    let (queue, _) = sqs.create("copies", &[]).await;
    env.extend(sqs.env(&sb));
    let j = sb
        .run_with(
            &["replay", "dlt", "--to", &queue, "--yes", "--output", "json"],
            &env,
        )
        .ok()
        .json();
    assert_eq!(j["moved"], 3, "{j}");
    let mut got: Vec<String> = sqs
        .receive_all(&queue)
        .await
        .iter()
        .filter_map(|m| {
            let a = m.message_attributes()?;
            Some(a.get("dlqctl-stable-id")?.string_value()?.to_string())
        })
        .collect();
    got.sort();
    assert_eq!(got, ["req-0", "req-1", "req-2"]);
}
