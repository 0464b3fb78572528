//! The backend contract, asserted once for every backend pair (`pair.rs`), the way
//! object_store's integration suite asserts its trait: a new backend is done when its pair
//! passes these, the kill points and the faults (`faults.rs`).
//!
//! 1. A redrive moves every message once, each copy with its stable id.
//! 2. A dry run changes nothing and counts what the real run would move.
//! 3. `--max N` moves N and leaves the rest.
//! 4. A filter moves what it selects; the rest stays, but for what the run had to pass to reach
//!    what it moved and says so (`committed_past`: Kafka, where one committed offset covers
//!    every record before it; zero where a message is removed on its own).
//! 5. An interrupted run (SIGINT) finishes its batch, exits 130, and a re-run moves the rest.
//! 6. A filtered run never ends clean with selected messages left: it moves every message its
//!    filter selects, or ends with exit 1 saying how many it did not examine and why (an SQS
//!    FIFO group whose first messages the filter skips hides the rest), and its dry run ends
//!    the same way.
//! 7. A re-run right after a SIGKILL accounts for what the killed run held: it moves
//!    everything (exit 0, nothing left), or says what it could not (exit 1).
//! 8. A run refused before it reads (here: no terminal to ask at, without `--yes`) reads
//!    nothing and says nothing of what reading does: the warning of a source whose reads have
//!    a side effect (an SQS receive, a RabbitMQ consumer) comes once a read has begun.
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
pub async fn contract<P: Pair>(p: &mut P, commits_past: bool) {
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

    // 4. A filter moves what it selects. (On Kafka ids[1], ids[3] and ids[5] are the first
    // three records of one partition: moving 1 and 5 passes 3.)
    let ids = p.fresh(N).await;
    let pick = [ids[1].clone(), ids[5].clone()];
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
    let past = r["committed_past"]
        .as_u64()
        .unwrap_or_else(|| panic!("{name}: the summary counts what was committed past: {r}"));
    assert_eq!(past, if commits_past { 1 } else { 0 }, "{name}: {r}");
    p.settle().await;
    assert_eq!(
        p.remaining().await,
        (N - 2) as u64 - past,
        "{name}: what the filter skipped stays, but for what the run said it committed past"
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

    // 6, 7 and 8.
    filtered_runs_account_for_what_they_select(p).await;
    a_rerun_after_a_kill_accounts_for_what_the_killed_run_held(p, commits_past).await;
    a_refused_run_says_nothing_of_reading(p).await;
}

/// Clause 8. Operator report (2026-12-06): a RabbitMQ redrive refused (no terminal to ask at,
/// a bad `--to`, a busy queue) printed `warning: reading … takes each message and gives it
/// back …` first, for a read that never happened.
pub async fn a_refused_run_says_nothing_of_reading<P: Pair>(p: &mut P) {
    let name = p.name();
    let _ = p.fresh(2).await;
    let sb = Sandbox::new();
    let r = run(p, &sb, &["--output", "json"]).await.code(2);
    assert!(
        r.stderr.contains("needs confirmation"),
        "{name}: {}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("warning: reading"),
        "{name}: a run refused before it reads says nothing of reading:\n{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{name}: {}", r.stdout);
    p.settle().await;
    assert_eq!(
        p.remaining().await,
        2,
        "{name}: a refused run moves nothing"
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
    // A filtered Kafka redrive commits past what it skips before the last record it moves
    // in a partition (one offset covers everything before it): docs/kafka.md.
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

/// `--id A --id B …`.
fn id_filter(ids: &[String]) -> Vec<&str> {
    ids.iter().flat_map(|id| ["--id", id.as_str()]).collect()
}

/// Whether a run that did not end with exit 0 said why: messages it failed, or messages it
/// left unexamined (`unaccounted`).
fn says_why(j: &serde_json::Value) -> bool {
    j["failed"].as_u64().unwrap_or(0) > 0
        || j["unaccounted"]
            .as_array()
            .is_some_and(|u| !u.is_empty() && u.iter().all(|x| x["count"].as_u64() > Some(0)))
}

/// Clause 6: the last three of 40 messages selected by id. A backend that cannot reach them
/// (SQS FIFO: its three groups start with ten messages the filter skips, and SQS hands out
/// nothing of a group behind a message still there) must end with exit 1 and say how many it
/// did not examine; its dry run predicts that. Every other moves the three, exit 0.
pub async fn filtered_runs_account_for_what_they_select<P: Pair>(p: &mut P) {
    let name = p.name();
    let ids = p.fresh(40).await;
    let pick = ids[37..].to_vec();
    let sb = Sandbox::new();
    // A read holds what it reads until it ends: with claims that outlast the run (SQS: the
    // default visibility timeout, not the pair's 2 s), what a dry run can see does not depend
    // on how fast it goes.
    p.hold_long(true);
    let mut dry = id_filter(&pick);
    dry.extend(["--dry-run", "--output", "json"]);
    let mut real = id_filter(&pick);
    real.extend(["--yes", "--output", "json"]);
    let dry = run(p, &sb, &dry).await;
    let real = run(p, &sb, &real).await;
    p.hold_long(false);
    for (what, r) in [("the dry run", &dry), ("the run", &real)] {
        let j = r.json();
        match r.code {
            0 => assert_eq!(
                j["moved"], 3,
                "{name}: {what} ended with exit 0 but moved {} of the 3 it selects: {j}",
                j["moved"]
            ),
            1 => assert!(
                says_why(&j) && j["moved"].as_u64() < Some(3),
                "{name}: {what} ended with exit 1 without saying why: {j}"
            ),
            c => panic!("{name}: {what}: exit {c}\n{}\n{}", r.stdout, r.stderr),
        }
    }
    assert_eq!(
        dry.code, real.code,
        "{name}: the dry run predicts how the run ends\ndry run: {}\nrun: {}",
        dry.stdout, real.stdout
    );
    if real.code == 0 {
        let got: HashSet<String> = p.target_ids().await.into_iter().flatten().collect();
        assert_eq!(got, pick.into_iter().collect::<HashSet<_>>(), "{name}");
    }
}

/// Clause 7: a filtered redrive (it skips every tenth message, which SQS then holds hidden
/// for the run) is killed with SIGKILL once 12 copies are in the target; the claims it held
/// outlast the re-run (`Pair::hold_long`). The re-run, at once and without the filter, moves
/// everything (exit 0: nothing left, every id in the target), or ends with exit 1 saying what
/// it could not account for. A backend whose filter consumes what it skips (Kafka) may not
/// have the skipped ones in the target.
pub async fn a_rerun_after_a_kill_accounts_for_what_the_killed_run_held<P: Pair>(
    p: &mut P,
    filter_consumes_skipped: bool,
) {
    let name = p.name();
    let ids = p.fresh(40).await;
    let selected: Vec<String> = ids
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 10 != 9)
        .map(|(_, id)| id.clone())
        .collect();
    let sb = Sandbox::new();
    p.hold_long(true);
    let mut extra = vec!["--batch-size", "4", "--rate", "20/s"];
    extra.extend(id_filter(&selected));
    let mut child = spawn_redrive(p, &sb, &extra);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() && p.copies().await < 12 {
        assert!(std::time::Instant::now() < deadline, "{name}: no progress");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = child.kill();
    child.wait().unwrap();
    p.hold_long(false);
    let r = run(p, &sb, &["--yes", "--output", "json"]).await;
    let j = r.json();
    match r.code {
        0 => {
            assert_eq!(
                p.remaining().await,
                0,
                "{name}: the re-run after a kill ended with exit 0 and left messages behind: {j}"
            );
            let got = p.target_ids().await;
            assert!(
                got.iter().all(Option::is_some),
                "{name}: a copy without its id"
            );
            let got: HashSet<String> = got.into_iter().flatten().collect();
            let all: HashSet<String> = ids.iter().cloned().collect();
            let must: HashSet<String> = if filter_consumes_skipped {
                selected.into_iter().collect()
            } else {
                all.clone()
            };
            let lost: Vec<&String> = must.difference(&got).collect();
            assert!(lost.is_empty(), "{name}: lost {lost:?}");
            let strangers: Vec<&String> = got.difference(&all).collect();
            assert!(strangers.is_empty(), "{name}: strangers {strangers:?}");
        }
        1 => assert!(
            says_why(&j),
            "{name}: the re-run after a kill ended with exit 1 without saying why: {j}"
        ),
        c => panic!("{name}: the re-run: exit {c}\n{}\n{}", r.stdout, r.stderr),
    }
}

/// The transform clause: a `--transform` cannot change a message's id as the queue's id rule
/// reads it (`id = "json:/order"` in dlqctl.toml: where a consumer reads it), nor dlqctl's own
/// attributes (`dlqctl-redrive-count`, the loop guard's count), nor `.meta` (the source's facts:
/// on RabbitMQ, the properties that set the id a consumer reads). Such a copy is refused: nothing
/// is sent, every message stays, exit 1. A transform that leaves both alone moves everything.
pub async fn transform_contract<P: Pair>(p: &mut P) {
    let name = p.name();
    for code in [
        r#".json.order = "999""#,
        r#".attrs["dlqctl-redrive-count"] = "0""#,
        // `.meta` is the source's facts: on RabbitMQ a `message_id` there was the id a
        // consumer read (operator report, 2026-12-06).
        r#".meta.properties = {"message_id": "HIJACK"}"#,
    ] {
        let _ = p.fresh(N).await;
        let sb = Sandbox::new();
        let source = p.redrive()[1].clone();
        let queue = format!(
            "[queues.dlq]\ndlq = {}\nid = \"json:/order\"\n",
            toml_string(&source)
        );
        // The pair's own config (Kafka's lease), if it has one, with the queue added.
        let mut env = p.env(&sb);
        match env.iter_mut().find(|(k, _)| k == "DLQCTL_CONFIG") {
            Some((_, path)) => {
                let own = std::fs::read_to_string(&*path).unwrap();
                let both = sb.write("transform.toml", &format!("{own}\n{queue}"));
                *path = both.to_string_lossy().into_owned();
            }
            None => {
                sb.write("dlqctl.toml", &queue);
            }
        }
        let r = sb
            .run_with(
                &args(
                    &p.redrive(),
                    &["--transform", code, "--yes", "--output", "json"],
                ),
                &env,
            )
            .code(1)
            .json();
        assert_eq!(
            (r["moved"].as_u64(), r["failed"].as_u64()),
            (Some(0), Some(N as u64)),
            "{name}: {code}: {r}"
        );
        assert_eq!(p.copies().await, 0, "{name}: {code}: nothing sent");
        p.settle().await;
        assert_eq!(p.remaining().await, N as u64, "{name}: {code}: all stayed");
    }
    let ids = p.fresh(N).await;
    let sb = Sandbox::new();
    let r = run(
        p,
        &sb,
        &[
            "--transform",
            ".json.fixed = true",
            "--yes",
            "--output",
            "json",
        ],
    )
    .await
    .ok()
    .json();
    assert_eq!(r["moved"], N as u64, "{name}: {r}");
    let dupes = check(p, &ids, &format!("{name}: a transform")).await;
    assert_eq!(dupes, 0, "{name}");
}

fn toml_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn pg_same_database_keeps_the_transform_clause() {
    transform_contract(&mut PgSameDb::new()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pg_two_databases_keep_the_transform_clause() {
    transform_contract(&mut PgTwoDb::new()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_standard_keeps_the_transform_clause() {
    transform_contract(&mut SqsPair::new(false)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_fifo_keeps_the_transform_clause() {
    transform_contract(&mut SqsPair::new(true)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kafka_keeps_the_transform_clause() {
    transform_contract(&mut KafkaPair::new()).await;
}

/// How a backend's loop guard keeps what it holds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Held messages stay where they are, for a later run.
    Holds,
    /// A held message cannot stay behind a later one that moves (Kafka: one committed offset
    /// covers every record before it), so `--max-redrives` without `--park` is refused before
    /// anything is read (docs/kafka.md).
    NeedsPark,
}

/// 6. Every copy carries `dlqctl-redrive-count` one more than its original, on every move
///    path, and `--max-redrives` holds the messages that reached it where they are (a later
///    run with a higher limit moves them, counted once more). Where a held message could
///    not stay (`Guard::NeedsPark`), the guard without `--park` is refused and moves nothing.
pub async fn every_copy_counts_and_the_guard_holds<P: crate::pair::Redriven>(
    p: &mut P,
    guard: Guard,
) {
    use std::collections::BTreeMap;
    let name = p.name();
    // The first three were redriven twice before.
    let ids = p.fresh_redriven(N, 3, 2).await;
    let sb = Sandbox::new();
    let counts = |read: Vec<(String, serde_json::Value, u32)>| -> BTreeMap<String, u32> {
        read.into_iter().map(|(id, _, c)| (id, c)).collect()
    };
    if guard == Guard::NeedsPark {
        let r = run(
            p,
            &sb,
            &["--max-redrives", "2", "--yes", "--output", "json"],
        )
        .await
        .code(2);
        assert!(r.stderr.contains("--park"), "{name}: {}", r.stderr);
        assert_eq!(p.copies().await, 0, "{name}: refused before anything moved");
        run(p, &sb, &["--yes", "--output", "json"]).await.ok();
        let mut want: BTreeMap<String, u32> = ids[3..].iter().map(|i| (i.clone(), 1)).collect();
        want.extend(ids[..3].iter().map(|i| (i.clone(), 3)));
        assert_eq!(
            counts(p.copy_records(&sb).await),
            want,
            "{name}: every copy counts one redrive more"
        );
        return;
    }
    let r = run(
        p,
        &sb,
        &["--max-redrives", "2", "--yes", "--output", "json"],
    )
    .await
    .ok()
    .json();
    assert_eq!(
        (r["moved"].as_u64(), r["held"].as_u64()),
        (Some(N as u64 - 3), Some(3)),
        "{name}: {r}"
    );
    p.settle().await;
    let held = 3;
    assert_eq!(p.remaining().await, held, "{name}: held where they were");
    let mut want: BTreeMap<String, u32> = ids[3..].iter().map(|i| (i.clone(), 1)).collect();
    assert_eq!(
        counts(p.copy_records(&sb).await),
        want,
        "{name}: every copy counts one redrive more"
    );

    let r = run(
        p,
        &sb,
        &["--max-redrives", "3", "--yes", "--output", "json"],
    )
    .await
    .ok()
    .json();
    assert_eq!(
        (r["moved"].as_u64(), r["held"].as_u64()),
        (Some(held), Some(0)),
        "{name}: {r}"
    );
    want.extend(ids[..3].iter().map(|i| (i.clone(), 3)));
    assert_eq!(
        counts(p.copy_records(&sb).await),
        want,
        "{name}: the held ones, once the limit allows, count once more"
    );
    p.settle().await;
    assert_eq!(p.remaining().await, 0, "{name}");
}

/// 7. `edit` sends the edited copy of one message (its stable id, one redrive more) and
///    leaves the backlog alone: only that message leaves the source. The plan is on the
///    terminal before the question. (The message edited is the second seeded, which on
///    Kafka is the first pending record of its partition: nothing is passed over.)
pub async fn edit_leaves_the_backlog_alone<P: Pair>(p: &mut P) {
    use crate::terminal::{at_terminal, editor_script};
    let name = p.name();
    let ids = p.fresh(N).await;
    let Some(copies) = p.copies_url() else {
        return;
    };
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
    let (code, seen) = at_terminal(
        &sb,
        &format!(
            "{env}DLQCTL_STATE_DIR='{}' EDITOR='{fix}' {} edit '{}' --id '{}' --to '{copies}'",
            sb.path("state").display(),
            env!("CARGO_BIN_EXE_dlqctl"),
            p.redrive()[1],
            ids[1]
        ),
        "Send the edited copy",
        b"y",
    );
    assert_eq!(code, 0, "{name}: {seen}");
    let ask = seen
        .find("Send the edited copy")
        .unwrap_or_else(|| panic!("{name}: no question:\n{seen}"));
    let plan = seen
        .find("operation")
        .unwrap_or_else(|| panic!("{name}: no plan:\n{seen}"));
    assert!(plan < ask, "{name}: the plan comes first:\n{seen}");
    p.settle().await;
    assert_eq!(
        p.remaining().await,
        N as u64 - 1,
        "{name}: only the edited message left the source:\n{seen}"
    );
    let got = p.copy_records(&sb).await;
    assert_eq!(got.len(), 1, "{name}: {got:?}");
    let (id, body, count) = &got[0];
    assert_eq!(id, &ids[1], "{name}: the stable id is kept");
    assert_eq!(body["fixed"], true, "{name}: the edit is sent: {body}");
    assert_eq!(*count, 1, "{name}: an edit is a redrive, counted");
}

#[tokio::test(flavor = "multi_thread")]
async fn pg_same_database_counts_and_edits() {
    let mut p = PgSameDb::new();
    every_copy_counts_and_the_guard_holds(&mut p, Guard::Holds).await;
    edit_leaves_the_backlog_alone(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pg_same_database_row_by_row_counts_and_edits() {
    let mut p = crate::pair::PgRowByRow::new();
    every_copy_counts_and_the_guard_holds(&mut p, Guard::Holds).await;
    edit_leaves_the_backlog_alone(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pg_two_databases_count_and_edit() {
    let mut p = PgTwoDb::new();
    every_copy_counts_and_the_guard_holds(&mut p, Guard::Holds).await;
    edit_leaves_the_backlog_alone(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_standard_counts_and_edits() {
    let mut p = SqsPair::new(false);
    every_copy_counts_and_the_guard_holds(&mut p, Guard::Holds).await;
    edit_leaves_the_backlog_alone(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_fifo_counts_and_edits() {
    let mut p = SqsPair::new(true);
    every_copy_counts_and_the_guard_holds(&mut p, Guard::Holds).await;
    edit_leaves_the_backlog_alone(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kafka_counts_and_edits() {
    let mut p = KafkaPair::new();
    every_copy_counts_and_the_guard_holds(&mut p, Guard::NeedsPark).await;
    edit_leaves_the_backlog_alone(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sidekiq_keeps_the_contract() {
    contract(&mut crate::pair::SidekiqPair::new(), false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bullmq_keeps_the_contract() {
    contract(&mut crate::pair::BullMqPair::new(), false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sidekiq_to_a_pg_table_keeps_the_contract() {
    contract(&mut crate::pair::SidekiqToPg::new(), false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bullmq_to_sqs_keeps_the_contract() {
    contract(&mut crate::pair::BullMqToSqs::new(), false).await;
}

// RabbitMQ (issue 27): the broker's own dead letters, on classic and quorum queues, redriven
// to the queue each died in; and RabbitMQ to and from the other backends.

#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_classic_keeps_the_contract() {
    contract(
        &mut crate::pair_rabbitmq::RabbitPair::new(crate::amqp::Kind::Classic),
        false,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_quorum_keeps_the_contract() {
    contract(
        &mut crate::pair_rabbitmq::RabbitPair::new(crate::amqp::Kind::Quorum),
        false,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_to_and_from_every_backend_keeps_the_contract() {
    use crate::pair_rabbitmq::{Cross, End};
    for (from, to, skipped_consumed) in [
        (End::Rabbit, End::Pg, false),
        (End::Pg, End::Rabbit, false),
        (End::Rabbit, End::Sqs, false),
        (End::Sqs, End::Rabbit, false),
        (End::Rabbit, End::Kafka, false),
        // A filtered Kafka redrive commits past what it skips (docs/kafka.md).
        (End::Kafka, End::Rabbit, true),
    ] {
        contract(&mut Cross::new(from, to), skipped_consumed).await;
    }
}

/// A JSON Lines file replayed into a RabbitMQ queue: every message once with its id, a dry
/// run copies nothing, `--max` and filters copy what they select.
#[tokio::test(flavor = "multi_thread")]
async fn a_json_lines_file_replays_into_rabbitmq() {
    use crate::amqp::{Kind, Rabbit};
    let mut p = PgSameDb::new();
    let ids = p.fresh(N).await;
    let (dlq, _) = p.urls();
    let sb = Sandbox::new();
    let file = sb.path("dead.jsonl");
    let file = file.to_str().unwrap();
    sb.run(&["export", &dlq, "-o", file]).ok();
    let r = Rabbit::new("jsonl").await;
    r.declare("target", Kind::Quorum, &[]).await;
    let to = r.url("target");
    let replay = |extra: &[&str]| {
        let mut a = vec![
            "replay",
            file,
            "--to",
            to.as_str(),
            "--yes",
            "--output",
            "json",
        ];
        a.extend_from_slice(extra);
        crate::amqp::run(&sb, &a).ok().json()
    };
    let got = replay(&["--dry-run"]);
    assert_eq!(got["moved"], N as u64, "{got}");
    assert_eq!(r.ready("target").await, 0, "a dry run copies nothing");
    let got = replay(&["--max", "4"]);
    assert_eq!(got["moved"], 4, "{got}");
    assert_eq!(r.drain("target").await.len(), 4);
    let got = replay(&["--id", &ids[2], "--id", &ids[7]]);
    assert_eq!(got["moved"], 2, "{got}");
    let two: HashSet<String> = r.drain_ids("target").await.into_iter().flatten().collect();
    assert_eq!(two, [ids[2].clone(), ids[7].clone()].into_iter().collect());
    let got = replay(&[]);
    assert_eq!(got["moved"], N as u64, "{got}");
    let mut all: Vec<String> = r
        .drain_ids("target")
        .await
        .into_iter()
        .map(|i| i.expect("every copy has its id"))
        .collect();
    all.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(all, want, "every message once, with its id");
}

#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_classic_keeps_the_transform_clause() {
    transform_contract(&mut crate::pair_rabbitmq::RabbitPair::new(
        crate::amqp::Kind::Classic,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_quorum_keeps_the_transform_clause() {
    transform_contract(&mut crate::pair_rabbitmq::RabbitPair::new(
        crate::amqp::Kind::Quorum,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_classic_counts_and_edits() {
    let mut p = crate::pair_rabbitmq::RabbitPair::new(crate::amqp::Kind::Classic);
    every_copy_counts_and_the_guard_holds(&mut p, Guard::Holds).await;
    edit_leaves_the_backlog_alone(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_quorum_counts_and_edits() {
    let mut p = crate::pair_rabbitmq::RabbitPair::new(crate::amqp::Kind::Quorum);
    every_copy_counts_and_the_guard_holds(&mut p, Guard::Holds).await;
    edit_leaves_the_backlog_alone(&mut p).await;
}
