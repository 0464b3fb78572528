//! The clauses of the contract the real-service suite lacked (issue 26 item 6), each a
//! function over a [`Pair`] run on every pair it applies to (the table at the end says which
//! pairs leave a clause out, and why). Their in-memory counterparts are in
//! `src/ops/moves/conformance/`.
//!
//! 1. Refused copies stay: a copy the run refuses (here: a `--transform` that would change the
//!    stable id of two messages) leaves its message in the source, counted as failed with its
//!    id; the rest move; exit 1. A re-run moves the two, and nothing was copied twice. A dry
//!    run before it predicts the same (no target's pre-send check refuses a good copy).
//! 2. The source as its own target is refused before anything moves (exit 2), dry run too.
//! 3. Every copy carries `dlqctl-redrive-count` one more than its original (and
//!    `--max-redrives` holds: `conformance::every_copy_counts_and_the_guard_holds`, run where
//!    the source can be seeded with a count).
//! 4. A transform cannot change the id, dlqctl's attributes or `.meta`
//!    (`conformance::transform_contract`); a job system's
//!    in-place retry, which makes no copy to transform, refuses `--transform` up front.
//! 5. A purge with an archive removes only what it archived: the archive holds exactly what
//!    the filters selected, and what is left in the source is exactly the rest.
//! 6. The read side: two scans (`peek`, `export`) give the same messages in the same order,
//!    `inspect`'s message count (the backlog) is what a scan finds, and `tail` shows a message
//!    that arrived after it started.
//! 7. A repeated header name never loses a value silently: every value arrives, in order, or
//!    the copy is refused naming it, as the dry run predicts (`clause_repeats.rs`).
//! 8. A listed id (`--id`) that no message has is said (`ids_not_found`, exit 1), in the dry
//!    run and the run; the listed ids that exist move.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::conformance::{Guard, every_copy_counts_and_the_guard_holds, transform_contract};
use crate::faults::check;
use crate::harness::{Run, Sandbox};
use crate::pair::{JobSystem, KafkaPair, Pair, PgRowByRow, PgSameDb, PgTwoDb, SqsPair};
use crate::pair_cross::{Cross, End};
use crate::pair_rabbitmq::RabbitPair;

const N: usize = 10;

fn run<P: Pair>(p: &P, sb: &Sandbox, extra: &[&str]) -> Run {
    let mut a = p.redrive();
    a.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    sb.run_with(&a, &p.env(sb))
}

/// The ids of every failure in a summary's `failures`.
fn failed_ids(r: &serde_json::Value) -> BTreeSet<String> {
    r["failures"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|f| f["ids"].as_array().cloned().unwrap_or_default())
        .filter_map(|i| i.as_str().map(str::to_string))
        .collect()
}

/// Clause 1: refused copies stay. The transform changes the stable id of the third and the
/// eighth message: dlqctl refuses those two copies (nothing is sent for them), the run moves
/// the other eight and ends with exit 1 naming the two; they are still in the source, and a
/// plain re-run moves them (every id once in the target: nothing was copied twice).
///
/// Where settling is by offset (`by_offset`: a Kafka source, docs/kafka.md "A record that
/// cannot be sent"), a refused record blocks its partition for the rest of the run: the
/// records after it are sent but not committed, so they stay too and the re-run sends them
/// again. With the seeding's layout (message i in partition i % 2) the third message is the
/// second record of partition 0 and the eighth the fourth of partition 1: six stay (2, 4, 6, 8
/// and 7, 9), the re-run moves six, and four of them are in the target twice.
pub async fn refused_copies_stay<P: Pair>(p: &mut P, by_offset: bool) {
    let name = p.name();
    let ids = p.fresh(N).await;
    let bad: BTreeSet<String> = [ids[2].clone(), ids[7].clone()].into_iter().collect();
    let code = format!(
        r#"if .id == "{}" or .id == "{}" then .id = "renamed" else . end"#,
        ids[2], ids[7]
    );
    let sb = Sandbox::new();
    // The dry run predicts the run: the same refusals (the target's own checks before sending
    // refuse none of the good copies), and exit 1 as the run will.
    let dry = run(
        p,
        &sb,
        &[
            "--transform",
            &code,
            "--dry-run",
            "--yes",
            "--output",
            "json",
        ],
    );
    assert_eq!(
        dry.code, 1,
        "{name}: the dry run\n{}\n{}",
        dry.stdout, dry.stderr
    );
    let d = dry.json();
    let r = run(p, &sb, &["--transform", &code, "--yes", "--output", "json"]);
    assert_eq!(
        r.code, 1,
        "{name}: a run with refused copies ends with exit 1\n{}\n{}",
        r.stdout, r.stderr
    );
    let j = r.json();
    assert_eq!(
        (j["moved"].as_u64(), j["failed"].as_u64()),
        (Some(N as u64 - 2), Some(2)),
        "{name}: {j}"
    );
    assert_eq!(failed_ids(&j), bad, "{name}: the summary names them: {j}");
    assert_eq!(
        (&d["would_move"], &d["failed"], failed_ids(&d)),
        (&j["moved"], &j["failed"], bad.clone()),
        "{name}: the dry run predicted {d}"
    );
    p.settle().await;
    let (stay, twice) = if by_offset { (6, 4) } else { (2, 0) };
    assert_eq!(
        p.remaining().await,
        stay,
        "{name}: the refused ones stayed (and, by offset, what their partition had after them)"
    );
    let r = run(p, &sb, &["--yes", "--output", "json"]).ok().json();
    assert_eq!(
        r["moved"], stay,
        "{name}: the re-run moves what stayed: {r}"
    );
    let dupes = check(p, &ids, &format!("{name}: refused, then re-run")).await;
    assert_eq!(
        dupes, twice,
        "{name}: copies sent twice (a refused copy sent anyway, or a partition not blocked)"
    );
}

/// Clause 2: `--to` the source itself is refused before anything moves (exit 2), in a dry run
/// too; every message stays and nothing is copied.
pub async fn the_source_as_its_own_target_is_refused<P: Pair>(p: &mut P) {
    let name = p.name();
    p.fresh(N).await;
    let mut a = p.redrive();
    let source = a[1].clone();
    match a.iter().position(|x| x == "--to") {
        Some(i) => a[i + 1] = source.clone(),
        None => a.extend(["--to".to_string(), source.clone()]),
    }
    let sb = Sandbox::new();
    for extra in [&["--dry-run"][..], &["--yes"][..]] {
        let mut a = a.clone();
        a.extend(extra.iter().map(|s| s.to_string()));
        a.extend(["--output".into(), "json".into()]);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let r = sb.run_with(&a, &p.env(&sb));
        assert_eq!(
            r.code, 2,
            "{name}: --to the source ({source}) {extra:?}: refused\n{}\n{}",
            r.stdout, r.stderr
        );
        assert!(!r.stderr.trim().is_empty(), "{name}: says why");
    }
    assert_eq!(p.copies().await, 0, "{name}: nothing copied");
    p.settle().await;
    assert_eq!(p.remaining().await, N as u64, "{name}: nothing removed");
}

/// Clause 3, for pairs whose source cannot be seeded with a count: a plain redrive's copies
/// each carry `dlqctl-redrive-count` 1 and their stable id, every seeded id once.
pub async fn every_copy_counts_one_redrive<P: Pair>(p: &mut P) {
    let name = p.name();
    let ids = p.fresh(N).await;
    let sb = Sandbox::new();
    let r = run(p, &sb, &["--yes", "--output", "json"]).ok().json();
    assert_eq!(r["moved"], N as u64, "{name}: {r}");
    let got = p.copy_records(&sb).await;
    let mut seen: Vec<String> = got.iter().map(|(id, _, _)| id.clone()).collect();
    seen.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(seen, want, "{name}: every copy once, with its id");
    for (id, _, count) in &got {
        assert_eq!(*count, 1, "{name}: {id}: a copy counts one redrive");
    }
}

/// Clause 8: `--id` of one message that exists and one that does not: the one moves, the
/// other is named as not found, and the run ends with exit 1, as its dry run says (op5: exit
/// 0 and no word of the id).
pub async fn a_listed_id_not_found_is_said<P: Pair>(p: &mut P) {
    let name = p.name();
    let ids = p.fresh(N).await;
    let sb = Sandbox::new();
    let missing = "no-such-id-0001";
    for extra in ["--dry-run", "--yes"] {
        let r = run(
            p,
            &sb,
            &["--id", &ids[2], "--id", missing, extra, "--output", "json"],
        );
        assert_eq!(
            r.code, 1,
            "{name} {extra}: {}
{}",
            r.stdout, r.stderr
        );
        let j = r.json();
        assert_eq!(j["moved"], 1, "{name} {extra}: {j}");
        assert_eq!(
            j["ids_not_found"],
            serde_json::json!([missing]),
            "{name} {extra}: {j}"
        );
    }
    assert_eq!(
        p.copies().await,
        1,
        "{name}: the listed id that exists moved"
    );
    let r = run(p, &sb, &["--id", missing, "--yes", "--output", "table"]);
    assert_eq!(r.code, 1, "{name}: {}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("not found: 1 listed id (--id)") && r.stdout.contains(missing),
        "{name}: {}",
        r.stdout
    );
}

/// Clause 4 where a redrive retries in place (a job system, Sidekiq, BullMQ): there is no copy
/// to transform, so `--transform` is refused before anything moves (exit 2).
pub async fn an_in_place_retry_refuses_a_transform<P: Pair>(p: &mut P) {
    let name = p.name();
    p.fresh(N).await;
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
    );
    assert_eq!(r.code, 2, "{name}: refused\n{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("--transform"),
        "{name}: names the option: {}",
        r.stderr
    );
    assert_eq!(p.copies().await, 0, "{name}: nothing retried");
    assert_eq!(p.remaining().await, N as u64, "{name}: nothing moved");
}

/// The stable ids of every message in `source`, in the order `export` writes them.
fn exported(sb: &Sandbox, source: &str, opts: &[String], env: &[(String, String)]) -> Vec<String> {
    let file = sb.path(&format!("export-{}.jsonl", rand_suffix()));
    let f = file.to_str().unwrap();
    let mut a = vec!["export", source, "-o", f];
    a.extend(opts.iter().map(String::as_str));
    sb.run_with(&a, env).ok();
    crate::purge::archived(&file)
}

/// The ids of `records` in the order read, by partition (the record's `partition`; one list where the
/// source has none).
fn by_partition(records: &[serde_json::Value]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in records {
        out.entry(m["partition"].to_string())
            .or_default()
            .push(m["id"].as_str().unwrap_or_default().to_string());
    }
    out
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst)
}

/// The pair's options for its source without its target (SQS: a short visibility timeout,
/// a global option every read takes).
fn read_opts<P: Pair>(p: &P) -> Vec<String> {
    crate::purge::options(p)
}

/// Clause 5: a purge with an archive removes only what it archived. With filters (three
/// messages by id) the archive holds exactly those three and the source exactly the other
/// seven; without (Kafka: a filtered purge would commit past what it skips, so `--max 4`),
/// the archive holds four distinct seeded ids and the source six.
pub async fn purge_removes_only_what_it_archived<P: Pair>(p: &mut P, filters: bool) {
    let name = p.name();
    let ids = p.fresh(N).await;
    let sb = Sandbox::new();
    let env = p.env(&sb);
    let source = p.redrive()[1].clone();
    let archive = sb.path("archive.jsonl");
    let opts = crate::purge::options(p);
    let pick = [ids[2].clone(), ids[5].clone(), ids[7].clone()];
    let mut a = vec![
        "purge",
        source.as_str(),
        "--archive",
        archive.to_str().unwrap(),
    ];
    if filters {
        a.extend(pick.iter().flat_map(|i| ["--id", i.as_str()]));
    } else {
        a.extend(["--max", "4"]);
    }
    a.extend(opts.iter().map(String::as_str));
    a.extend(["--yes", "--output", "json"]);
    let r = sb.run_with(&a, &env).ok().json();
    let k = if filters { 3 } else { 4 };
    assert_eq!(r["moved"], k as u64, "{name}: {r}");
    let got = crate::purge::archived(&archive);
    let set: BTreeSet<String> = got.iter().cloned().collect();
    assert_eq!(set.len(), got.len(), "{name}: archived once each: {got:?}");
    assert_eq!(got.len(), k, "{name}: {got:?}");
    assert!(
        set.iter().all(|i| ids.contains(i)),
        "{name}: archived only seeded ids: {got:?}"
    );
    if filters {
        assert_eq!(
            set,
            pick.iter().cloned().collect(),
            "{name}: the archive holds what the filters selected"
        );
    }
    p.settle().await;
    assert_eq!(
        p.remaining().await,
        (N - k) as u64,
        "{name}: only the archived left"
    );
    if filters {
        let left: BTreeSet<String> = exported(&sb, &source, &read_opts(p), &env)
            .into_iter()
            .collect();
        let want: BTreeSet<String> = ids.iter().filter(|i| !set.contains(*i)).cloned().collect();
        assert_eq!(
            left, want,
            "{name}: what is left is exactly what was not archived"
        );
    }
}

/// One more dead letter in a pair's source, after `fresh` (for `tail`).
pub trait Source: Pair {
    /// Add a dead letter; its stable id.
    async fn add(&self, k: usize) -> String;
}

/// Clause 6: the read side. Two `peek`s and two `export`s of a fresh source give the same
/// ids (in the same order where the backend has one: `ordered`; an SQS queue hands out its
/// messages in no promised order), every seeded id once; `inspect`'s message count is what
/// they found.
pub async fn scans_are_stable_and_the_backlog_is_what_they_find<P: Pair>(p: &mut P, ordered: bool) {
    let name = p.name();
    let ids = p.fresh(N).await;
    let sb = Sandbox::new();
    let env = p.env(&sb);
    let source = p.redrive()[1].clone();
    let opts = read_opts(p);
    let peek = || {
        let mut a = vec![source.as_str(), "-n", "100", "--output", "jsonl"];
        a.insert(0, "peek");
        a.extend(opts.iter().map(String::as_str));
        sb.run_with(&a, &env).ok().jsonl()
    };
    let export = || {
        let file = sb.path(&format!("export-{}.jsonl", rand_suffix()));
        let mut a = vec!["export", source.as_str(), "-o", file.to_str().unwrap()];
        a.extend(opts.iter().map(String::as_str));
        sb.run_with(&a, &env).ok();
        std::fs::read_to_string(&file)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("an export line is JSON"))
            .collect::<Vec<serde_json::Value>>()
    };
    let scans = [
        ("peek", peek()),
        ("peek again", peek()),
        ("export", export()),
        ("export again", export()),
    ];
    let want: BTreeSet<String> = ids.iter().cloned().collect();
    for (what, records) in &scans {
        let got: Vec<String> = records
            .iter()
            .map(|m| m["id"].as_str().unwrap_or_default().to_string())
            .collect();
        let set: BTreeSet<String> = got.iter().cloned().collect();
        assert_eq!(
            (got.len(), &set),
            (N, &want),
            "{name}: {what} shows every message once: {got:?}"
        );
    }
    if ordered {
        // The order is the source's within a partition (Kafka reads its partitions side by
        // side, so their interleaving is not promised); a queue without partitions is one.
        for pair in scans.chunks(2) {
            assert_eq!(
                by_partition(&pair[1].1),
                by_partition(&pair[0].1),
                "{name}: {} gives the order the first gave",
                pair[1].0
            );
        }
    }
    p.settle().await;
    let mut a = vec!["inspect", source.as_str(), "--output", "json"];
    a.extend(opts.iter().map(String::as_str));
    let r = sb.run_with(&a, &env).ok().json();
    assert_eq!(
        r[0]["facts"]["messages"].as_u64(),
        Some(N as u64),
        "{name}: the backlog is what a scan finds: {r}"
    );
}

/// Clause 6 (tail): `tail` started on a source shows a message that arrives after it started,
/// and not the ones already there. It cannot say when it has read what was there, so a new
/// message is added every 500 ms until it shows one (at most 30 s).
pub async fn tail_sees_a_new_message<P: Source>(p: &mut P) {
    let name = p.name();
    let ids = p.fresh(3).await;
    let sb = Sandbox::new();
    let source = p.redrive()[1].clone();
    let mut a = vec![
        "tail",
        source.as_str(),
        "--max",
        "1",
        "--poll-interval",
        "100ms",
        "--idle-timeout",
        "60s",
        "--output",
        "jsonl",
    ];
    let opts = read_opts(p);
    a.extend(opts.iter().map(String::as_str));
    let mut child = sb
        .cmd(&a)
        .envs(p.env(&sb))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start dlqctl tail");
    let out = Arc::new(Mutex::new(String::new()));
    let mut stdout = child.stdout.take().unwrap();
    let buf = out.clone();
    let reader = std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut chunk) {
            if n == 0 {
                break;
            }
            buf.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut added = Vec::new();
    'outer: loop {
        added.push(p.add(added.len()).await);
        let next = Instant::now() + Duration::from_millis(500);
        while Instant::now() < next {
            if out.lock().unwrap().contains('\n') || child.try_wait().unwrap().is_some() {
                break 'outer;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{name}: tail showed nothing in 30 s of new messages ({added:?})");
        }
    }
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).ok();
    assert!(status.success(), "{name}: tail --max 1: {status}\n{err}");
    let text = out.lock().unwrap().clone();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap())
        .unwrap_or_else(|e| panic!("{name}: {e}: {text}"));
    let id = first["id"].as_str().unwrap_or_default().to_string();
    assert!(
        !ids.contains(&id),
        "{name}: tail showed {id}, which was there before it started"
    );
    assert!(
        added.contains(&id),
        "{name}: tail showed {id}, not one of the new messages {added:?}"
    );
}

// Which pair runs which clause. A pair is left out of a clause where it cannot apply:
// - job systems (River … pg-boss), Sidekiq and BullMQ retry in place: a redrive without
//   `--to` is their normal mode, so "the source as its own target" (2) and a refused copy
//   (1: there is no copy to refuse) do not apply, and their retried job carries no dlqctl
//   attributes (3); `--transform` is refused up front instead (4).
// - the transform clause (4) needs a body with an `order` field for its id rule: Sidekiq's
//   and BullMQ's cross pairs and River's jobs have none (their job args).
// - the loop guard (3) needs a source seeded with a count: River's jobs carry no attributes,
//   so River → … runs the plain count (every copy carries 1).
// - PgRowByRow has an id rule of its own in its config: the transform clause's second rule
//   for the same table would be ambiguous; it runs the other clauses.

#[tokio::test(flavor = "multi_thread")]
async fn pg_same_database_keeps_the_new_clauses() {
    let mut p = PgSameDb::new();
    refused_copies_stay(&mut p, false).await;
    the_source_as_its_own_target_is_refused(&mut p).await;
    purge_removes_only_what_it_archived(&mut p, true).await;
    scans_are_stable_and_the_backlog_is_what_they_find(&mut p, true).await;
    tail_sees_a_new_message(&mut p).await;
    a_listed_id_not_found_is_said(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pg_same_database_row_by_row_keeps_the_new_clauses() {
    let mut p = PgRowByRow::new();
    refused_copies_stay(&mut p, false).await;
    the_source_as_its_own_target_is_refused(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pg_two_databases_keep_the_new_clauses() {
    let mut p = PgTwoDb::new();
    refused_copies_stay(&mut p, false).await;
    the_source_as_its_own_target_is_refused(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_standard_keeps_the_new_clauses() {
    let mut p = SqsPair::new(false);
    refused_copies_stay(&mut p, false).await;
    the_source_as_its_own_target_is_refused(&mut p).await;
    purge_removes_only_what_it_archived(&mut p, true).await;
    scans_are_stable_and_the_backlog_is_what_they_find(&mut p, false).await;
    a_listed_id_not_found_is_said(&mut p).await;
}

/// `tail` on SQS shows a message sent after it started, while messages keep arriving (the
/// first pass over what was there ends once it has read as many as the queue held).
#[tokio::test(flavor = "multi_thread")]
async fn sqs_standard_tail_sees_a_new_message() {
    let mut p = SqsPair::new(false);
    tail_sees_a_new_message(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_fifo_keeps_the_new_clauses() {
    let mut p = SqsPair::new(true);
    refused_copies_stay(&mut p, false).await;
    the_source_as_its_own_target_is_refused(&mut p).await;
    purge_removes_only_what_it_archived(&mut p, true).await;
    scans_are_stable_and_the_backlog_is_what_they_find(&mut p, false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kafka_keeps_the_new_clauses() {
    let mut p = KafkaPair::new();
    refused_copies_stay(&mut p, true).await;
    the_source_as_its_own_target_is_refused(&mut p).await;
    // A filtered Kafka purge is refused (it would commit past what it skips): --max.
    purge_removes_only_what_it_archived(&mut p, false).await;
    scans_are_stable_and_the_backlog_is_what_they_find(&mut p, true).await;
    tail_sees_a_new_message(&mut p).await;
    a_listed_id_not_found_is_said(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_classic_keeps_the_new_clauses() {
    let mut p = RabbitPair::new(crate::amqp::Kind::Classic);
    refused_copies_stay(&mut p, false).await;
    the_source_as_its_own_target_is_refused(&mut p).await;
    purge_removes_only_what_it_archived(&mut p, true).await;
    scans_are_stable_and_the_backlog_is_what_they_find(&mut p, true).await;
    tail_sees_a_new_message(&mut p).await;
    a_listed_id_not_found_is_said(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_quorum_keeps_the_new_clauses() {
    let mut p = RabbitPair::new(crate::amqp::Kind::Quorum);
    refused_copies_stay(&mut p, false).await;
    the_source_as_its_own_target_is_refused(&mut p).await;
    purge_removes_only_what_it_archived(&mut p, true).await;
    scans_are_stable_and_the_backlog_is_what_they_find(&mut p, true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn river_keeps_the_new_clauses() {
    let mut p = JobSystem::new("river");
    an_in_place_retry_refuses_a_transform(&mut p).await;
    purge_removes_only_what_it_archived(&mut p, true).await;
    scans_are_stable_and_the_backlog_is_what_they_find(&mut p, true).await;
    tail_sees_a_new_message(&mut p).await;
    a_listed_id_not_found_is_said(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_job_system_keeps_the_new_clauses() {
    for system in [
        "oban",
        "pgmq",
        "graphile-worker",
        "solid_queue",
        "good_job",
        "que",
        "pg-boss",
    ] {
        let mut p = JobSystem::new(system);
        an_in_place_retry_refuses_a_transform(&mut p).await;
        purge_removes_only_what_it_archived(&mut p, true).await;
        scans_are_stable_and_the_backlog_is_what_they_find(&mut p, true).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sidekiq_and_bullmq_keep_the_new_clauses() {
    let mut p = crate::pair::SidekiqPair::new();
    an_in_place_retry_refuses_a_transform(&mut p).await;
    purge_removes_only_what_it_archived(&mut p, true).await;
    scans_are_stable_and_the_backlog_is_what_they_find(&mut p, true).await;
    let mut p = crate::pair::BullMqPair::new();
    an_in_place_retry_refuses_a_transform(&mut p).await;
    purge_removes_only_what_it_archived(&mut p, true).await;
    scans_are_stable_and_the_backlog_is_what_they_find(&mut p, true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn redis_to_other_backends_keep_the_new_clauses() {
    // `--to` the dead set itself is Sidekiq's (BullMQ's) in-place retry, not a copy: the
    // source-as-target clause is left out, as for the in-place pairs.
    let mut p = crate::pair::SidekiqToPg::new();
    refused_copies_stay(&mut p, false).await;
    every_copy_counts_one_redrive(&mut p).await;
    // Not the redrive-count clause: a BullMQ job carries its hash's fields as attributes, more
    // than SQS's 10 leave room for beside the stable id, so an SQS copy drops the count first
    // (docs/sqs.md, "Attributes").
    let mut p = crate::pair::BullMqToSqs::new();
    refused_copies_stay(&mut p, false).await;
}

/// A cross pair through the whole contract and every new clause that applies.
async fn cross(from: End, to: End) {
    let mut p = Cross::new(from, to);
    let by_offset = p.source_is_kafka();
    crate::conformance::contract(&mut p, by_offset).await;
    refused_copies_stay(&mut p, by_offset).await;
    if from != End::River {
        // `--to` a job system's own URL is its in-place retry (its normal mode), not a copy.
        the_source_as_its_own_target_is_refused(&mut p).await;
    }
    if from == End::River {
        every_copy_counts_one_redrive(&mut p).await;
    } else {
        let guard = if p.source_is_kafka() {
            Guard::NeedsPark
        } else {
            Guard::Holds
        };
        every_copy_counts_and_the_guard_holds(&mut p, guard).await;
        transform_contract(&mut p).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn pg_to_sqs() {
    cross(End::Pg, End::Sqs).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_to_pg() {
    cross(End::Sqs, End::Pg).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_to_kafka() {
    cross(End::Sqs, End::Kafka).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kafka_to_sqs() {
    cross(End::Kafka, End::Sqs).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kafka_to_pg() {
    cross(End::Kafka, End::Pg).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pg_to_kafka() {
    cross(End::Pg, End::Kafka).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn river_to_pg() {
    cross(End::River, End::Pg).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn river_to_sqs() {
    cross(End::River, End::Sqs).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn river_to_kafka() {
    cross(End::River, End::Kafka).await;
}

/// RabbitMQ ↔ PostgreSQL: the contract already runs on them
/// (`conformance::rabbitmq_to_and_from_every_backend_keeps_the_contract`); the new clauses.
#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_and_pg_keep_the_new_clauses() {
    for (from, to) in [(End::Rabbit, End::Pg), (End::Pg, End::Rabbit)] {
        let mut p = Cross::new(from, to);
        refused_copies_stay(&mut p, false).await;
        the_source_as_its_own_target_is_refused(&mut p).await;
        every_copy_counts_and_the_guard_holds(&mut p, Guard::Holds).await;
        transform_contract(&mut p).await;
    }
}

/// A JSON Lines file (an export) replayed into each backend: every message once with its id,
/// a dry run copies nothing, `--max` and filters copy what they select, and the file never
/// changes. (PostgreSQL and RabbitMQ: `conformance::a_json_lines_file_*`.)
async fn a_json_lines_file_replays_into(to: End) {
    // The pair's source is only used to make the file; its target is the replay's.
    let mut p = Cross::new(End::Pg, to);
    let name = format!("jsonl->{to:?}");
    let ids = p.fresh(N).await;
    let sb = Sandbox::new();
    let env = p.env(&sb);
    let file = sb.path("dead.jsonl");
    let file = file.to_str().unwrap().to_string();
    let source = p.redrive()[1].clone();
    let target = p.redrive()[3].clone();
    sb.run_with(&["export", &source, "-o", &file], &env).ok();
    let before = std::fs::read(&file).unwrap();
    let replay = |extra: &[&str]| {
        let mut a = vec![
            "replay",
            file.as_str(),
            "--to",
            target.as_str(),
            "--yes",
            "--output",
            "json",
        ];
        a.extend_from_slice(extra);
        sb.run_with(&a, &env).ok().json()
    };
    let r = replay(&["--dry-run"]);
    assert_eq!(r["moved"], N as u64, "{name}: {r}");
    assert_eq!(p.copies().await, 0, "{name}: a dry run copies nothing");
    let r = replay(&["--id", &ids[2], "--id", &ids[7]]);
    assert_eq!(
        (r["moved"].as_u64(), r["skipped"].as_u64()),
        (Some(2), Some(N as u64 - 2)),
        "{name}: {r}"
    );
    let r = replay(&["--max", "4"]);
    assert_eq!(r["moved"], 4, "{name}: {r}");
    // The target now holds ids 2 and 7, then the file's first four.
    let mut want: Vec<String> = vec![ids[2].clone(), ids[7].clone()];
    want.extend(
        crate::purge::archived(std::path::Path::new(&file))[..4]
            .iter()
            .cloned(),
    );
    want.sort();
    let mut got: Vec<String> = p
        .target_ids()
        .await
        .into_iter()
        .map(|i| i.unwrap_or_else(|| panic!("{name}: a copy without its id")))
        .collect();
    got.sort();
    assert_eq!(
        got, want,
        "{name}: what the filters and --max selected, once"
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "{name}: a replay never changes its file"
    );
    assert_eq!(
        p.remaining().await,
        N as u64,
        "{name}: the export removed nothing"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_json_lines_file_replays_into_sqs() {
    a_json_lines_file_replays_into(End::Sqs).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_json_lines_file_replays_into_kafka() {
    a_json_lines_file_replays_into(End::Kafka).await;
}

/// Clause 5 where the archive refuses a copy: a PostgreSQL archive table in another database
/// (copied, then deleted) whose CHECK constraint refuses `m-3`. The purge ends with exit 1
/// naming m-3; every other message is archived and removed; m-3 is still in the dead-letter
/// table and not in the archive.
#[tokio::test(flavor = "multi_thread")]
async fn a_purge_keeps_what_its_archive_refuses_in_another_database() {
    purge_with_a_refusing_archive(false).await;
}

/// The same in one database, where the purge moves each batch in one transaction: the
/// refused copy is undone alone (before issue 26's fix it stopped the purge, exit 3).
#[tokio::test(flavor = "multi_thread")]
async fn a_purge_keeps_what_its_archive_refuses_in_the_same_database() {
    purge_with_a_refusing_archive(true).await;
}

async fn purge_with_a_refusing_archive(same_db: bool) {
    use crate::harness::{Db, demo_pg_url};
    {
        let src = Db::new("purgeref").await;
        let other = if same_db {
            None
        } else {
            Some(Db::new_in(&demo_pg_url(), "purgeref").await)
        };
        let dst = other.as_ref().unwrap_or(&src);
        dst.exec("ALTER TABLE {s}.queue_messages ADD CONSTRAINT no_m3 CHECK (message_id <> 'm-3')")
            .await;
        src.exec(
            "INSERT INTO {s}.dead_letters (message_id, queue, payload, error)
             SELECT 'm-'||g, 'orders', jsonb_build_object('order', g), 'timed out' FROM generate_series(0, 9) g",
        )
        .await;
        let archive = if same_db {
            src.table_url("queue_messages")
        } else {
            format!("{}?table={}.queue_messages", demo_pg_url(), dst.schema)
        };
        let sb = Sandbox::new();
        let r = sb.run(&[
            "purge",
            &src.table_url("dead_letters"),
            "--archive",
            &archive,
            "--yes",
            "--output",
            "json",
        ]);
        let what = if same_db {
            "same database"
        } else {
            "two databases"
        };
        assert_eq!(r.code, 1, "{what}: exit 1\n{}\n{}", r.stdout, r.stderr);
        let j = r.json();
        assert_eq!(
            (j["moved"].as_u64(), j["failed"].as_u64()),
            (Some(9), Some(1)),
            "{what}: {j}"
        );
        assert_eq!(
            failed_ids(&j),
            ["m-3".to_string()].into_iter().collect(),
            "{what}: {j}"
        );
        let mut archived = dst.ids("queue_messages").await;
        archived.sort();
        let want: Vec<String> = (0..10)
            .filter(|i| *i != 3)
            .map(|i| format!("m-{i}"))
            .collect();
        assert_eq!(archived, want, "{what}: the archive");
        assert_eq!(
            src.ids("dead_letters").await,
            ["m-3"],
            "{what}: only what was archived was removed"
        );
    }
}
