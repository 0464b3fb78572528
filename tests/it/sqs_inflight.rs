//! Messages in flight that a run did not hold: received by a run killed mid receive (its
//! answer never written down), or held by another reader. Nobody can list them, they stay
//! hidden for the visibility timeout, and on a FIFO queue they hide the rest of their groups:
//! a run that ends then says how many and why, with exit 1, never a clean finish.

use std::time::Duration;

use crate::harness::{Sandbox, Sqs};
use crate::pair::wait_until;
use crate::proxy::{Proxy, When};
use crate::sqs_accounting::{
    in_queue, kill_holding_a_batch, moto, named, seed, spawn_through, sqs_action,
};

/// The first ReceiveMessage reaches the emulator, which hides its ten messages for the run's
/// visibility timeout, and its answer never reaches the run (as when the run is killed while
/// receiving). The run moves the other twenty and must not report a drained queue.
#[tokio::test(flavor = "multi_thread")]
async fn a_receive_whose_answer_was_lost_leaves_the_run_unfinished() {
    let q = Sqs::new("lostrecv").await;
    let (dlq, _) = q.create("dlq", &[]).await;
    q.create("target", &[]).await;
    seed(&q, &dlq, 30).await;
    let sb = Sandbox::new();
    let proxy = Proxy::start(moto(), false);
    proxy.arm(sqs_action("ReceiveMessage"), 1, When::AfterResponse);
    let child = spawn_through(&q, &sb, &proxy, "dlq", "target", &["--batch-size", "10"]);
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(proxy.fired(), 1, "the fault fired\n{stderr}");
    assert_eq!(
        out.status.code(),
        Some(1),
        "ten messages are hidden in the DLQ: not a clean finish\n{stdout}\n{stderr}"
    );
    let j: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(j["moved"], 20, "{j}");
    let left = &j["unaccounted"][0];
    assert_eq!(left["count"], 10, "{j}");
    let reason = left["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("in flight") && reason.contains("visibility timeout"),
        "{reason}"
    );
    assert_eq!(in_queue(&q, &dlq).await, 10);
}

/// Another reader holds the head of each FIFO group: SQS hands out nothing of those groups,
/// so the run reads nothing. It says that all ten are out of its reach (two in flight, eight
/// behind them), with exit 1, not `examined 0` and exit 0.
#[tokio::test(flavor = "multi_thread")]
async fn a_fifo_run_behind_group_heads_another_reader_holds_says_so() {
    let q = Sqs::new("fifoheld").await;
    let fifo = [("FifoQueue", "true")];
    let (dlq, _) = q.create("dlq.fifo", &fifo).await;
    let (target, _) = q.create("target.fifo", &fifo).await;
    for i in 0..10 {
        q.client
            .send_message()
            .queue_url(&dlq)
            .message_body(format!("{{\"n\": {i}}}"))
            .message_group_id(format!("g{}", i % 2))
            .message_deduplication_id(format!("d-{i}"))
            .send()
            .await
            .unwrap();
    }
    for _ in 0..2 {
        let got = q
            .client
            .receive_message()
            .queue_url(&dlq)
            .max_number_of_messages(1)
            .visibility_timeout(600)
            .send()
            .await
            .unwrap();
        assert_eq!(got.messages().len(), 1);
    }
    let sb = Sandbox::new();
    let r = sb.run_with(
        &[
            "redrive", &dlq, "--to", &target, "--yes", "--output", "json",
        ],
        &q.env(&sb),
    );
    assert_eq!(
        r.code, 1,
        "nothing was reachable\n{}\n{}",
        r.stdout, r.stderr
    );
    let j = r.json();
    assert_eq!(j["moved"], 0, "{j}");
    let left = &j["unaccounted"][0];
    assert_eq!(left["count"], 10, "{j}");
    assert!(
        left["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("FIFO group"),
        "{j}"
    );
    let table = sb.run_with(&["redrive", &dlq, "--to", &target, "--yes"], &q.env(&sb));
    assert_eq!(table.code, 1, "{}", table.stderr);
    assert!(table.stdout.contains("in flight"), "{}", table.stdout);
}

/// Killed while a round's second receive is still on its way (the proxy holds it back): the
/// first receive's messages are in the holds file already, so the re-run gives them back at
/// once and moves everything.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_killed_mid_round_has_written_down_the_receives_that_answered() {
    let q = Sqs::new("midround").await;
    let (dlq, _) = q.create("dlq", &[]).await;
    let (target, _) = q.create("target", &[]).await;
    seed(&q, &dlq, 40).await;
    let sb = Sandbox::new();
    let proxy = Proxy::start(moto(), false);
    proxy.arm(
        sqs_action("ReceiveMessage"),
        2,
        When::Stall(Duration::from_secs(600)),
    );
    let mut child = spawn_through(
        &q,
        &sb,
        &proxy,
        "dlq",
        "target",
        &["--batch-size", "20", "--parallel", "2"],
    );
    let journal = sb.path("state").join("journal");
    wait_until(
        Duration::from_secs(60),
        "the first receive's ten messages in the holds file",
        || async { hold_lines(&journal) == 10 },
    )
    .await;
    child.kill().unwrap();
    child.wait().unwrap();
    drop(proxy);
    let (d, t) = (named(&q, "dlq"), named(&q, "target"));
    let r = sb.run_with(
        &["redrive", &d, "--to", &t, "--yes", "--output", "json"],
        &q.env(&sb),
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.json()["moved"], 40, "{}", r.stdout);
    assert_eq!(in_queue(&q, &dlq).await, 0);
    assert_eq!(in_queue(&q, &target).await, 40);
}

/// `hold` lines in the holds files under `dir`.
fn hold_lines(dir: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".holds"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .map(|t| t.lines().filter(|l| l.starts_with("hold ")).count())
        .sum()
}

/// Operator report (op5): a killed SQS run's audit progress undercounted by about a batch
/// (records came on the first delete of a batch after two seconds, counting only it). While a
/// run waits on a receive (here held back by the proxy), its progress record says how many
/// messages have left the DLQ, and after a SIGKILL `dlqctl audit` shows that count.
#[tokio::test(flavor = "multi_thread")]
async fn a_killed_runs_audit_progress_counts_every_message_that_left() {
    let q = Sqs::new("progress").await;
    let (dlq, _) = q.create("dlq", &[]).await;
    q.create("target", &[]).await;
    seed(&q, &dlq, 30).await;
    let sb = Sandbox::new();
    let proxy = Proxy::start(moto(), false);
    proxy.arm(
        sqs_action("ReceiveMessage"),
        3,
        When::Stall(Duration::from_secs(600)),
    );
    let mut child = spawn_through(&q, &sb, &proxy, "dlq", "target", &["--batch-size", "10"]);
    wait_until(Duration::from_secs(60), "the third receive", || async {
        proxy.fired() > 0
    })
    .await;
    let audit = sb.path("state").join("audit.jsonl");
    wait_until(
        Duration::from_secs(60),
        "a progress record of every message that left the DLQ",
        || async { last_progress(&audit) == Some(30 - in_queue(&q, &dlq).await) },
    )
    .await;
    child.kill().unwrap();
    child.wait().unwrap();
    let left_dlq = 30 - in_queue(&q, &dlq).await;
    assert!(left_dlq >= 10, "a batch was moved: {left_dlq}");
    let r = sb.run_with(&["audit", "--output", "json"], &q.env(&sb));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let runs = r.json();
    let run = &runs.as_array().expect("a list")[0];
    assert!(run["outcome"].is_null(), "unfinished: {run}");
    assert_eq!(run["progress"]["moved"], left_dlq, "{run}");
}

/// The count of the last progress record in the audit log at `path`.
fn last_progress(path: &std::path::Path) -> Option<u64> {
    std::fs::read_to_string(path)
        .ok()?
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|r| r["record"] == "progress")?["moved"]
        .as_u64()
}

/// Operator report (op5): the progress of a re-run after a kill counted only the messages
/// visible when the plan was made (`redriving: 40 messages of 2,920`), not the ones the re-run
/// then made visible again. The length is counted again once they are back.
#[tokio::test(flavor = "multi_thread")]
async fn a_reruns_progress_counts_what_it_gave_back() {
    let q = Sqs::new("rerunbar").await;
    let (dlq, _) = q.create("dlq", &[]).await;
    q.create("target", &[]).await;
    seed(&q, &dlq, 200).await;
    let sb = Sandbox::new();
    kill_holding_a_batch(&q, &sb, &dlq).await;
    let (d, t) = (named(&q, "dlq"), named(&q, "target"));
    let mut env = q.env(&sb);
    env.push(("DLQCTL_PROGRESS_INTERVAL".into(), "0.1".into()));
    let r = sb.run_with(
        &[
            "redrive", &d, "--to", &t, "--rate", "200/s", "--yes", "--output", "json",
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let lines: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("redriving: "))
        .collect();
    // Lines before the session began (a loaded machine) have no length yet.
    let counted: Vec<&&str> = lines.iter().filter(|l| l.contains(" of ")).collect();
    assert!(!counted.is_empty(), "no progress line:\n{}", r.stderr);
    assert!(counted.iter().all(|l| l.contains(" of 200 ")), "{lines:?}");
}

/// A dry run predicts that: three of ten messages held by another reader are reported, and
/// the dry run ends with exit 1 as the run would.
#[tokio::test(flavor = "multi_thread")]
async fn a_dry_run_reports_what_another_reader_holds() {
    let q = Sqs::new("dryheld").await;
    let (dlq, _) = q.create("dlq", &[]).await;
    let (target, _) = q.create("target", &[]).await;
    seed(&q, &dlq, 10).await;
    let got = q
        .client
        .receive_message()
        .queue_url(&dlq)
        .max_number_of_messages(3)
        .visibility_timeout(600)
        .send()
        .await
        .unwrap();
    assert_eq!(got.messages().len(), 3);
    let sb = Sandbox::new();
    let r = sb.run_with(
        &[
            "redrive",
            &dlq,
            "--to",
            &target,
            "--dry-run",
            "--output",
            "json",
        ],
        &q.env(&sb),
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let j = r.json();
    assert_eq!(j["would_move"], 7, "{j}");
    assert_eq!(j["unaccounted"][0]["count"], 3, "{j}");
    assert_eq!(in_queue(&q, &dlq).await, 10, "the dry run changed nothing");
}
