//! Operator report op7 (2026-12-06), RabbitMQ runs that must end: the DLQ deleted while a
//! redrive or `purge --archive` reads it (the broker cancels the consumer), and one Ctrl-C
//! while the target's confirms never come. Each waits on conditions; a run that hangs fails
//! the test after a bound rather than hanging it.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::amqp::{Kind, Rabbit, run};
use crate::harness::Sandbox;
use crate::pair::wait_until;
use crate::proxy::{Proxy, Trigger, When};

/// A spawned dlqctl's exit code, stdout and stderr (both to files in the sandbox), or a panic
/// naming `what` when it has not ended within `limit` (it is killed first).
fn ended(mut child: Child, sb: &Sandbox, limit: Duration, what: &str) -> (i32, String, String) {
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(st) = child.try_wait().expect("dlqctl's status") {
            break st;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what}: dlqctl still ran after {limit:?}; stderr:\n{}",
                std::fs::read_to_string(sb.path("err")).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (
        status.code().unwrap_or(-1),
        std::fs::read_to_string(sb.path("out")).unwrap_or_default(),
        std::fs::read_to_string(sb.path("err")).unwrap_or_default(),
    )
}

fn spawn(sb: &Sandbox, args: &[&str]) -> Child {
    sb.cmd(args)
        .envs(crate::amqp::env())
        .stdout(std::fs::File::create(sb.path("out")).unwrap())
        .stderr(std::fs::File::create(sb.path("err")).unwrap())
        .stdin(Stdio::null())
        .spawn()
        .expect("start dlqctl")
}

/// Deleting the DLQ mid-run made the run hang (progress stuck, no error) and one Ctrl-C did
/// not end it: the broker's basic.cancel ended the consumer, and giving back what the reader
/// held waited for the consumer's end a second time. Now the run stops with one `not found`
/// line (exit 3), settles what it copied, prints its summary and records the outcome.
#[tokio::test(flavor = "multi_thread")]
async fn a_dlq_deleted_mid_run_ends_the_run_with_one_line_and_the_summary() {
    for (kind, purge) in [
        (Kind::Classic, false),
        (Kind::Quorum, false),
        (Kind::Classic, true),
    ] {
        let what = format!("{kind:?} {}", if purge { "purge" } else { "redrive" });
        let r = Rabbit::new("deleted").await;
        r.declare("dlq", kind, &[]).await;
        r.declare("target", Kind::Classic, &[]).await;
        r.publish_n("dlq", "m", 300).await;
        let sb = Sandbox::new();
        let (dlq, target) = (r.url("dlq"), r.url("target"));
        let archive = sb.path("archive.jsonl").display().to_string();
        let mut args = vec!["redrive", &dlq, "--to", &target];
        if purge {
            args = vec!["purge", &dlq, "--archive", &archive];
        }
        let slow = [
            "--yes",
            "--rate",
            "20",
            "--batch-size",
            "10",
            "--output",
            "json",
        ];
        args.extend(slow);
        let child = spawn(&sb, &args);
        let lines = |f: &str| std::fs::read_to_string(f).map_or(0, |t| t.lines().count());
        wait_until(Duration::from_secs(30), "messages moved", || async {
            if purge {
                lines(&archive) >= 40
            } else {
                r.ready("target").await >= 40
            }
        })
        .await;
        r.api_delete(&format!("queues/%2F/{}", r.name("dlq"))).await;
        let (code, stdout, stderr) = ended(child, &sb, Duration::from_secs(60), &what);
        assert_eq!(code, 3, "{what}: {stdout}\n{stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{what}: one error: {stderr}");
        assert!(
            errors[0].contains("not found")
                && errors[0].contains("was deleted while the run read it")
                && errors[0].contains("nothing dlqctl took was lost"),
            "{what}: {stderr}"
        );
        let j: serde_json::Value = serde_json::from_str(&stdout).expect("the summary");
        let moved = j["moved"].as_u64().unwrap();
        assert!(moved > 0, "{what}: {j}");
        if purge {
            let archived = lines(&archive) as u64;
            assert!(
                archived >= moved,
                "{what}: every purged message archived: {j}"
            );
        } else {
            assert_eq!(
                u64::from(r.ready("target").await),
                moved + j["copied_not_removed"].as_u64().unwrap_or(0),
                "{what}: {j}"
            );
        }
        let runs = run(&sb, &["audit", "--output", "json"]).ok().json();
        assert_eq!(runs[0]["outcome"]["exit_code"], 3, "{what}: {runs}");
    }
}

/// One Ctrl-C must end a RabbitMQ run within a bound even when the target never confirms
/// the batch's copies (here a proxy holds the publisher's frames): the batch lands without
/// them (their originals stay in the DLQ), and the run exits 130 with its summary. Before, the
/// run waited for the confirms as long as they took (forever), and only a second Ctrl-C ended
/// it, without a summary.
#[tokio::test(flavor = "multi_thread")]
async fn one_ctrl_c_ends_a_run_whose_confirms_never_come() {
    let r = Rabbit::new("noconfirm").await;
    r.declare("dlq", Kind::Classic, &[]).await;
    r.declare("target", Kind::Classic, &[]).await;
    r.publish_n("dlq", "m", 100).await;
    let proxy = Proxy::start(
        format!("127.0.0.1:{}", crate::amqp::amqp_port())
            .parse()
            .unwrap(),
        false,
    );
    // The third publish waits ten minutes before it reaches the broker.
    proxy.arm(
        Trigger::Amqp(60, 40),
        3,
        When::Stall(Duration::from_secs(600)),
    );
    let target =
        r.url("target")
            .replacen(&format!(":{}/", r.port), &format!(":{}/", proxy.port), 1);
    let sb = Sandbox::new();
    let dlq = r.url("dlq");
    let child = spawn(
        &sb,
        &[
            "redrive",
            &dlq,
            "--to",
            &target,
            "--yes",
            "--batch-size",
            "1",
            "--output",
            "json",
        ],
    );
    wait_until(Duration::from_secs(30), "the stalled publish", || async {
        proxy.fired() > 0
    })
    .await;
    let st = std::process::Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(st.success());
    let (code, stdout, stderr) = ended(child, &sb, Duration::from_secs(30), "one Ctrl-C");
    assert_eq!(code, 130, "{stdout}\n{stderr}");
    let j: serde_json::Value = serde_json::from_str(&stdout).expect("the summary");
    assert_eq!(j["interrupted"], true, "{j}");
    let moved = j["moved"].as_u64().unwrap();
    r.wait_no_consumer("dlq").await;
    assert_eq!(u64::from(r.ready("dlq").await), 100 - moved, "{j}");
}

/// The progress line of a run whose copies the target refused read `redriving: 3,000 messages
/// of 3,000 (100%)`, as if all had moved (op7, a target queue deleted mid-run). The bar counts
/// the messages examined; the line now says so, and what became of them.
#[tokio::test(flavor = "multi_thread")]
async fn the_progress_line_says_what_it_counts_and_what_became_of_it() {
    use lapin::options::ExchangeDeclareOptions;
    use lapin::types::FieldTable;
    let r = Rabbit::new("tally").await;
    r.declare("dlq", Kind::Classic, &[]).await;
    r.publish_n("dlq", "m", 20).await;
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
    let mut env = crate::amqp::env();
    env.push(("DLQCTL_PROGRESS_INTERVAL".into(), "0.1".into()));
    let out = sb.run_with(
        &[
            "redrive",
            &r.url("dlq"),
            "--to",
            &to,
            "--rate",
            "20",
            "--batch-size",
            "2",
            "--yes",
            "--output",
            "json",
        ],
        &env,
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("redriving: "))
        .collect();
    assert!(!lines.is_empty(), "no progress line: {}", out.stderr);
    let last = lines.last().unwrap();
    assert!(
        last.contains(" of 20 messages examined (")
            && last.contains("0 moved, ")
            && last.contains(" failed)"),
        "{lines:?}"
    );
}
