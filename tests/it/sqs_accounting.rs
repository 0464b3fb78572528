//! SQS runs account for every message they leave: a FIFO group blocked behind a message the
//! run skips, what a killed run held, deletes that did not take effect, and the in-flight
//! limit each end with exit 1 and say how many and why, never with a clean finish.

use std::process::Stdio;
use std::time::Duration;

use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};

use crate::harness::{Sandbox, Sqs};
use crate::pair::wait_until;
use crate::proxy::{Proxy, Trigger, When};

/// `n` messages `{"n": i}` with the attribute `message_id` = `m-i` (the stable id).
pub(crate) async fn seed(q: &Sqs, url: &str, n: usize) {
    for start in (0..n).step_by(10) {
        let entries = (start..n.min(start + 10))
            .map(|i| {
                SendMessageBatchRequestEntry::builder()
                    .id(format!("e{i}"))
                    .message_body(format!("{{\"n\": {i}}}"))
                    .message_attributes(
                        "message_id",
                        MessageAttributeValue::builder()
                            .data_type("String")
                            .string_value(format!("m-{i}"))
                            .build()
                            .unwrap(),
                    )
                    .build()
                    .unwrap()
            })
            .collect();
        let out = q
            .client
            .send_message_batch()
            .queue_url(url)
            .set_entries(Some(entries))
            .send()
            .await
            .unwrap();
        assert!(out.failed().is_empty(), "{:?}", out.failed());
    }
}

/// Visible plus in flight.
pub(crate) async fn in_queue(q: &Sqs, url: &str) -> u64 {
    let n = |a: &'static str| async move { q.attr(url, a).await.parse::<u64>().unwrap() };
    n("ApproximateNumberOfMessages").await + n("ApproximateNumberOfMessagesNotVisible").await
}

/// The distinct `message_id`s in `url` (read to the end; copies may repeat).
pub(crate) async fn ids_in(q: &Sqs, url: &str) -> std::collections::BTreeSet<String> {
    q.receive_all(url)
        .await
        .iter()
        .filter_map(|m| {
            m.message_attributes()?
                .get("message_id")?
                .string_value()
                .map(str::to_string)
        })
        .collect()
}

pub(crate) fn env_via(q: &Sqs, sb: &Sandbox, port: u16) -> Vec<(String, String)> {
    let mut env = q.env(sb);
    env.retain(|(k, _)| k != "AWS_ENDPOINT_URL");
    env.push((
        "AWS_ENDPOINT_URL".into(),
        format!("http://127.0.0.1:{port}"),
    ));
    env
}

/// The emulator's address, for a proxy to stand in for.
pub(crate) fn moto() -> std::net::SocketAddr {
    let u = url::Url::parse(&crate::harness::sqs_endpoint()).unwrap();
    format!("{}:{}", u.host_str().unwrap(), u.port().unwrap())
        .parse()
        .unwrap()
}

pub(crate) fn sqs_action(a: &str) -> Trigger {
    Trigger::Bytes(format!("AmazonSQS.{a}").into_bytes())
}

/// One FIFO group: twelve messages the filter skips, then three it selects. SQS hands out at
/// most ten a receive and nothing of a group behind a message still there, so no run can reach
/// the three without removing the twelve: the dry run, the purge and the redrive each end with
/// exit 1, saying how many messages they did not examine and why.
#[tokio::test]
async fn a_filtered_run_on_a_fifo_queue_says_what_a_skipped_group_head_blocks() {
    let q = Sqs::new("fifoblock").await;
    let fifo = [("FifoQueue", "true")];
    let (dlq, _) = q.create("dlq.fifo", &fifo).await;
    let (target, _) = q.create("target.fifo", &fifo).await;
    for i in 0..15 {
        let k = if i < 12 { "a" } else { "p" };
        q.client
            .send_message()
            .queue_url(&dlq)
            .message_body(format!("{{\"k\": \"{k}\", \"n\": {i}}}"))
            .message_group_id("g")
            .message_deduplication_id(format!("d-{i}"))
            .send()
            .await
            .unwrap();
    }
    let sb = Sandbox::new();
    let env = q.env(&sb);
    let pick = r#".json.k == "p""#;
    let runs: [(&str, Vec<&str>); 4] = [
        (
            "purge --dry-run",
            vec!["purge", &dlq, "--where", pick, "--no-archive", "--dry-run"],
        ),
        (
            "purge",
            vec!["purge", &dlq, "--where", pick, "--no-archive", "--yes"],
        ),
        (
            "redrive --dry-run",
            vec![
                "redrive",
                &dlq,
                "--to",
                &target,
                "--where",
                pick,
                "--dry-run",
            ],
        ),
        (
            "redrive",
            vec!["redrive", &dlq, "--to", &target, "--where", pick, "--yes"],
        ),
    ];
    for (what, mut args) in runs {
        args.extend(["--output", "json"]);
        let r = sb.run_with(&args, &env);
        assert_eq!(
            r.code, 1,
            "{what}: the three matching messages were not reached, so the run must not end clean\nstdout:\n{}\nstderr:\n{}",
            r.stdout, r.stderr
        );
        let j = r.json();
        assert_eq!(j["moved"], 0, "{what}: {j}");
        let left = &j["unaccounted"][0];
        assert_eq!(
            left["count"], 5,
            "{what}: 15 in the queue, 10 examined: {j}"
        );
        let reason = left["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("FIFO") && reason.contains("group"),
            "{what}: {reason}"
        );
        assert_eq!(in_queue(&q, &dlq).await, 15, "{what}: nothing was removed");
    }
    // The table summary says it too.
    let r = sb.run_with(
        &["purge", &dlq, "--where", pick, "--no-archive", "--dry-run"],
        &env,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.contains("not examined"), "{}", r.stdout);
}

/// `sqs://NAME` for a queue the fixture created (an emulator URL would be its own endpoint,
/// past the proxy).
pub(crate) fn named(q: &Sqs, name: &str) -> String {
    format!("sqs://{}", q.name(name))
}

/// Spawn a redrive of `dlq` into `target` through `proxy` (JSON on a pipe).
pub(crate) fn spawn_through(
    q: &Sqs,
    sb: &Sandbox,
    proxy: &Proxy,
    dlq: &str,
    target: &str,
    extra: &[&str],
) -> std::process::Child {
    let (dlq, target) = (named(q, dlq), named(q, target));
    let mut args = vec![
        "redrive", &dlq, "--to", &target, "--yes", "--output", "json",
    ];
    args.extend_from_slice(extra);
    sb.cmd(&args)
        .envs(env_via(q, sb, proxy.port))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Kill (SIGKILL) a redrive of 200 messages at a deterministic point: its first batch was
/// copied and its delete is on the wire (the proxy resets every DeleteMessageBatch), so the run
/// holds that batch, hidden for its visibility timeout (300 s).
pub(crate) async fn kill_holding_a_batch(q: &Sqs, sb: &Sandbox, dlq: &str) {
    let proxy = Proxy::start(moto(), false);
    proxy.arm_always(sqs_action("DeleteMessageBatch"), When::Before);
    let mut child = spawn_through(
        q,
        sb,
        &proxy,
        "dlq",
        "target",
        &["--batch-size", "10", "--visibility-timeout", "300"],
    );
    wait_until(Duration::from_secs(60), "the first delete", || async {
        proxy.fired() > 0
    })
    .await;
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        q.attr(dlq, "ApproximateNumberOfMessagesNotVisible").await,
        "10",
        "the killed run held its batch"
    );
}

/// A re-run right after a SIGKILL gives back what the killed run held (its receipt handles
/// are in the journal) and moves everything: the DLQ ends empty, not with messages hidden for
/// the killed run's visibility timeout.
#[tokio::test(flavor = "multi_thread")]
async fn a_rerun_after_a_kill_releases_what_the_killed_run_held() {
    let q = Sqs::new("killhold").await;
    let (dlq, _) = q.create("dlq", &[]).await;
    let (target, _) = q.create("target", &[]).await;
    seed(&q, &dlq, 200).await;
    let sb = Sandbox::new();
    kill_holding_a_batch(&q, &sb, &dlq).await;
    let (d, t) = (named(&q, "dlq"), named(&q, "target"));
    let r = sb.run_with(
        &["redrive", &d, "--to", &t, "--yes", "--output", "json"],
        &q.env(&sb),
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(
        in_queue(&q, &dlq).await,
        0,
        "the re-run ended with exit 0 and left messages in the DLQ (in flight: {}): {}",
        q.attr(&dlq, "ApproximateNumberOfMessagesNotVisible").await,
        r.stdout
    );
    assert_eq!(
        ids_in(&q, &target).await.len(),
        200,
        "every message arrived"
    );
}

/// When the re-run cannot give back what the killed run held, it says how many and until
/// when, and ends with exit 1.
#[tokio::test(flavor = "multi_thread")]
async fn a_rerun_that_cannot_release_a_killed_runs_holds_says_so() {
    let q = Sqs::new("killheld").await;
    let (dlq, _) = q.create("dlq", &[]).await;
    let (_target, _) = q.create("target", &[]).await;
    seed(&q, &dlq, 200).await;
    let sb = Sandbox::new();
    kill_holding_a_batch(&q, &sb, &dlq).await;
    let (d, t) = (named(&q, "dlq"), named(&q, "target"));
    let proxy = Proxy::start(moto(), false);
    proxy.arm_always(sqs_action("ChangeMessageVisibilityBatch"), When::Before);
    let r = sb.run_with(
        &["redrive", &d, "--to", &t, "--yes", "--output", "json"],
        &env_via(&q, &sb, proxy.port),
    );
    assert_eq!(
        r.code, 1,
        "10 messages stay hidden: not a clean finish\n{}\n{}",
        r.stdout, r.stderr
    );
    let j = r.json();
    assert_eq!(j["moved"], 190, "{j}");
    let left = &j["unaccounted"][0];
    assert_eq!(left["count"], 10, "{j}");
    assert!(left["until"].is_string(), "{j}");
    assert!(
        left["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("interrupted"),
        "{j}"
    );
}

/// The emulator's DeleteMessageBatch can answer Failed[] (here: the queue was purged while
/// the delete was on its way): those messages were copied but not removed. They are counted
/// as failed with the reason, the run ends with exit 1, and the audit does not list them as
/// moved.
#[tokio::test(flavor = "multi_thread")]
async fn a_delete_that_fails_is_counted_and_not_audited_as_moved() {
    let q = Sqs::new("delfail").await;
    let (dlq, _) = q.create("dlq", &[]).await;
    let (_target, _) = q.create("target", &[]).await;
    seed(&q, &dlq, 10).await;
    let sb = Sandbox::new();
    let proxy = Proxy::start(moto(), false);
    proxy.arm(
        sqs_action("DeleteMessageBatch"),
        1,
        When::Stall(Duration::from_secs(3)),
    );
    let child = spawn_through(&q, &sb, &proxy, "dlq", "target", &[]);
    wait_until(Duration::from_secs(60), "the delete", || async {
        proxy.fired() > 0
    })
    .await;
    q.client.purge_queue().queue_url(&dlq).send().await.unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "ten deletes failed: not a clean finish\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (j["moved"].as_u64(), j["failed"].as_u64()),
        (Some(0), Some(10)),
        "{j}"
    );
    assert!(
        j["failures"][0]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("ReceiptHandleIsInvalid"),
        "{j}"
    );
    let audit = std::fs::read_to_string(sb.path("state").join("audit.jsonl")).unwrap();
    let outcome: serde_json::Value = audit
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["record"] == "outcome")
        .expect("an outcome record");
    assert_eq!(outcome["ids"], serde_json::json!([]), "{outcome}");
}

/// The operator's report: a long redrive from a deep queue (moto takes about a second a
/// receive there) said `moved 200 · failed 0` and left some of those messages in the DLQ.
/// moto rebuilds a queue's message list on every delete without a lock, so two
/// DeleteMessageBatch calls at once can undo each other's deletes while both answer
/// Successful. Every message the run moved must be gone from the DLQ.
#[tokio::test(flavor = "multi_thread")]
async fn a_redrive_from_a_deep_queue_removes_every_message_it_moved() {
    let q = Sqs::new("deep").await;
    let (dlq, _) = q.create("dlq", &[]).await;
    let (target, _) = q.create("target", &[]).await;
    seed(&q, &dlq, 1500).await;
    let sb = Sandbox::new();
    let r = sb.run_with(
        &[
            "redrive",
            &dlq,
            "--to",
            &target,
            "--max",
            "400",
            "--parallel",
            "8",
            "--batch-size",
            "80",
            "--yes",
            "--output",
            "json",
        ],
        &q.env(&sb),
    );
    let j = r.json();
    let (moved, failed) = (j["moved"].as_u64().unwrap(), j["failed"].as_u64().unwrap());
    assert_eq!(moved + failed, 400, "{j}");
    assert_eq!(
        in_queue(&q, &dlq).await,
        1500 - moved,
        "moved {moved} · failed {failed}, exit {}: the DLQ must hold exactly what was not moved",
        r.code
    );
}

/// A filtered run on a standard queue holds what it skips (so that it does not read it again)
/// and SQS allows about 120,000 messages in flight per queue. The run stops taking messages
/// before that (the limit is lowered for the test with `DLQCTL_SQS_HOLD_LIMIT`, which only
/// tests use), gives back what it holds, and ends with exit 1 saying how many it did not
/// examine.
#[tokio::test(flavor = "multi_thread")]
async fn a_filtered_run_stops_before_the_in_flight_limit_and_says_so() {
    let q = Sqs::new("overlimit").await;
    let (dlq, _) = q.create("dlq", &[]).await;
    let (target, _) = q.create("target", &[]).await;
    seed(&q, &dlq, 100).await;
    let sb = Sandbox::new();
    let mut env = q.env(&sb);
    env.push(("DLQCTL_SQS_HOLD_LIMIT".into(), "30".into()));
    // Selects one in ten (m-0, m-10, …), skips the rest.
    let r = sb.run_with(
        &[
            "redrive",
            &dlq,
            "--to",
            &target,
            "--where",
            ".json.n % 10 == 0",
            "--batch-size",
            "10",
            "--parallel",
            "1",
            "--yes",
            "--output",
            "json",
        ],
        &env,
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let j = r.json();
    let left = &j["unaccounted"][0];
    let examined = j["examined"].as_u64().unwrap();
    assert!(examined < 100, "{j}");
    assert_eq!(left["count"], 100 - examined, "{j}");
    assert!(
        left["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("in flight"),
        "{j}"
    );
    assert_eq!(
        q.attr(&dlq, "ApproximateNumberOfMessagesNotVisible").await,
        "0",
        "what the run held was given back"
    );
}
