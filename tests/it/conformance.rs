//! The backend contract, asserted once for every backend pair (`pair.rs`), the way
//! object_store's integration suite asserts its trait: a new backend is done when its pair
//! passes these, the kill points and the faults (`faults.rs`).
//!
//! 1. A redrive moves every message once, each copy with its stable id.
//! 2. A dry run changes nothing and counts what the real run would move.
//! 3. `--max N` moves N and leaves the rest.
//! 4. A filter moves what it selects; the rest stays (Kafka: is committed past, its documented
//!    semantics for a filtered redrive; `replay` is the way to copy a subset there).
//! 5. An interrupted run (SIGINT) finishes its batch, exits 130, and a re-run moves the rest.
//!
//! A JSON Lines file (an export) is a source for replay only: the same contract, read as
//! "copies" (`a_json_lines_file_keeps_the_replay_contract`).

use std::collections::HashSet;
use std::time::Duration;

use crate::faults::check;
use crate::harness::Sandbox;
use crate::pair::{JobSystem, KafkaPair, Pair, PgSameDb, PgTwoDb, SqsPair, spawn_redrive};

const N: usize = 10;

fn args<'a>(p: &'a [String], extra: &[&'a str]) -> Vec<&'a str> {
    let mut a: Vec<&str> = p.iter().map(String::as_str).collect();
    a.extend_from_slice(extra);
    a
}

async fn run<P: Pair>(p: &P, sb: &Sandbox, extra: &[&str]) -> crate::harness::Run {
    let r = p.redrive();
    sb.run_with(&args(&r, extra), &p.env(sb))
}

/// Every contract function, in turn, on one pair.
pub async fn contract<P: Pair>(p: &mut P, filter_consumes_skipped: bool) {
    let name = p.name();

    // 1. Everything, once, with its id.
    let ids = p.fresh(N).await;
    let sb = Sandbox::new();
    let r = run(p, &sb, &["--yes", "--output", "json"])
        .await
        .ok()
        .json();
    assert_eq!(r["moved"], N as u64, "{name}: {r}");
    let dupes = check(p, &ids, &format!("{name}: a plain redrive")).await;
    assert_eq!(dupes, 0, "{name}: a clean run copies nothing twice");

    // 2. A dry run changes nothing, and counts what the run will move.
    let _ = p.fresh(N).await;
    let sb = Sandbox::new();
    let r = run(p, &sb, &["--dry-run", "--output", "json"])
        .await
        .ok()
        .json();
    assert_eq!(r["moved"], N as u64, "{name}: the dry run counts all: {r}");
    assert_eq!(r["dry_run"], true);
    assert_eq!(p.copies().await, 0, "{name}: a dry run sent nothing");
    p.settle().await;
    assert_eq!(
        p.remaining().await,
        N as u64,
        "{name}: a dry run removed nothing"
    );

    // 3. --max leaves the rest.
    let ids = p.fresh(N).await;
    let sb = Sandbox::new();
    let r = run(p, &sb, &["--max", "4", "--yes", "--output", "json"])
        .await
        .ok()
        .json();
    assert_eq!(r["moved"], 4, "{name}: {r}");
    p.settle().await;
    assert_eq!(
        p.remaining().await,
        (N - 4) as u64,
        "{name}: --max 4 left the rest"
    );
    // ... and a second run moves exactly the rest.
    run(p, &sb, &["--yes", "--output", "json"]).await.ok();
    let dupes = check(p, &ids, &format!("{name}: --max, then the rest")).await;
    assert_eq!(dupes, 0, "{name}");

    // 4. A filter moves what it selects.
    let ids = p.fresh(N).await;
    let pick = [ids[1].clone(), ids[3].clone()];
    let sb = Sandbox::new();
    let r = run(
        p,
        &sb,
        &[
            "--id", &pick[0], "--id", &pick[1], "--yes", "--output", "json",
        ],
    )
    .await
    .ok()
    .json();
    assert_eq!(r["moved"], 2, "{name}: {r}");
    assert_eq!(r["skipped"], (N - 2) as u64, "{name}: {r}");
    let got: HashSet<String> = p.target_ids().await.into_iter().flatten().collect();
    assert_eq!(
        got,
        pick.iter().cloned().collect::<HashSet<_>>(),
        "{name}: only the selected messages were copied"
    );
    p.settle().await;
    let left = if filter_consumes_skipped { 0 } else { N - 2 };
    assert_eq!(
        p.remaining().await,
        left as u64,
        "{name}: what the filter skipped"
    );

    // 5. SIGINT: the current batch finishes, exit 130, a re-run moves the rest.
    let ids = p.fresh(40).await;
    let sb = Sandbox::new();
    let child = spawn_redrive(p, &sb, &["--batch-size", "2", "--rate", "20/s"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while p.copies().await < 2 {
        assert!(std::time::Instant::now() < deadline, "{name}: no progress");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["interrupted"], true, "{name}: {summary}");
    let moved = summary["moved"].as_u64().unwrap();
    assert!(moved < 40, "{name}: stopped early ({moved})");
    p.settle().await;
    run(p, &sb, &["--yes", "--output", "json"]).await.ok();
    let dupes = check(p, &ids, &format!("{name}: after Ctrl-C and a re-run")).await;
    assert_eq!(
        dupes, 0,
        "{name}: Ctrl-C settles what it sent: nothing twice"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn pg_same_database_keeps_the_contract() {
    contract(&mut PgSameDb::new(), false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pg_two_databases_keep_the_contract() {
    contract(&mut PgTwoDb::new(), false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn river_keeps_the_contract() {
    contract(&mut JobSystem::new("river"), false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn oban_keeps_the_contract() {
    contract(&mut JobSystem::new("oban"), false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pgmq_keeps_the_contract() {
    contract(&mut JobSystem::new("pgmq"), false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn graphile_worker_keeps_the_contract() {
    contract(&mut JobSystem::new("graphile-worker"), false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn solid_queue_keeps_the_contract() {
    contract(&mut JobSystem::new("solid_queue"), false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn good_job_keeps_the_contract() {
    contract(&mut JobSystem::new("good_job"), false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn que_keeps_the_contract() {
    contract(&mut JobSystem::new("que"), false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pg_boss_keeps_the_contract() {
    contract(&mut JobSystem::new("pg-boss"), false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_standard_keeps_the_contract() {
    contract(&mut SqsPair::new(false), false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_fifo_keeps_the_contract() {
    contract(&mut SqsPair::new(true), false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kafka_keeps_the_contract() {
    // A filtered Kafka redrive commits past what it skips (one offset covers everything
    // before it): docs/kafka.md.
    contract(&mut KafkaPair::new(), true).await;
}

/// A JSON Lines file as the source: a replay copies every message once with its id, a dry run
/// copies nothing, `--max` and filters copy what they select, and the file never changes.
#[tokio::test]
async fn a_json_lines_file_keeps_the_replay_contract() {
    let mut p = PgSameDb::new();
    let ids = p.fresh(N).await;
    let (dlq, queue) = p.urls();
    let sb = Sandbox::new();
    let file = sb.path("dead.jsonl");
    let file = file.to_str().unwrap();
    sb.run(&["export", &dlq, "-o", file]).ok();
    let before = std::fs::read(file).unwrap();
    // The table's copies are the fixture's: only the file is read from now on.
    p.exec("DELETE FROM {s}.dead_letters").await;

    let replay = |extra: &[&str]| {
        let mut a = vec![
            "replay",
            file,
            "--to",
            queue.as_str(),
            "--yes",
            "--output",
            "json",
        ];
        a.extend_from_slice(extra);
        sb.run(&a).ok().json()
    };
    let r = replay(&["--dry-run"]);
    assert_eq!(r["moved"], N as u64, "{r}");
    assert_eq!(p.copies().await, 0, "a dry run copies nothing");

    let r = replay(&["--max", "4"]);
    assert_eq!(r["moved"], 4, "{r}");
    assert_eq!(p.copies().await, 4);
    p.exec("DELETE FROM {s}.queue_messages").await;

    let r = replay(&["--id", &ids[2], "--id", &ids[7]]);
    assert_eq!(
        (r["moved"].as_u64(), r["skipped"].as_u64()),
        (Some(2), Some(N as u64 - 2)),
        "{r}"
    );
    let got: HashSet<String> = p.target_ids().await.into_iter().flatten().collect();
    assert_eq!(got, [ids[2].clone(), ids[7].clone()].into_iter().collect());
    p.exec("DELETE FROM {s}.queue_messages").await;

    let r = replay(&[]);
    assert_eq!(r["moved"], N as u64, "{r}");
    let mut got: Vec<String> = p
        .target_ids()
        .await
        .into_iter()
        .map(|i| i.expect("every copy has its id"))
        .collect();
    got.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(got, want, "every message once, with its id");
    assert_eq!(
        std::fs::read(file).unwrap(),
        before,
        "a replay never changes its file"
    );
}
