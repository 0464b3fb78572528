//! `dlqctl purge` on every backend, through the contract's pairs (`pair.rs`): archive first
//! or say `--no-archive`; a dry run changes nothing; `--max` and filters remove what they
//! select; and a SIGKILL during a purge with an archive leaves every message in the queue, the
//! archive, or both (a re-run finishes, and every id is archived).

use std::collections::HashSet;
use std::process::Stdio;
use std::time::Duration;

use crate::harness::Sandbox;
use crate::pair::{JobSystem, KafkaPair, Pair, PgSameDb, SqsPair, wait_until};

const N: usize = 10;

/// The pair's own options for its source (SQS: a short visibility timeout, so that what a
/// killed run held shows again soon), without its redrive target.
pub fn options<P: Pair>(p: &P) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = p.redrive().into_iter().skip(2);
    while let Some(a) = it.next() {
        if a == "--to" {
            it.next();
        } else {
            out.push(a);
        }
    }
    out
}

/// The stable ids in a JSON Lines archive, one per line (with repeats).
pub fn archived(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("an archive line is JSON");
            v["id"].as_str().expect("an id").to_string()
        })
        .collect()
}

pub async fn purge_contract<P: Pair>(p: &mut P, filters: bool) {
    let name = p.name();
    let ids = p.fresh(N).await;
    let sb = Sandbox::new();
    let env = p.env(&sb);
    let source = p.redrive()[1].clone();
    let archive = sb.path("poison.jsonl");
    let file = archive.to_str().unwrap();
    let opts = options(p);
    let purge = |extra: &[&str]| {
        let mut a = vec!["purge", source.as_str(), "--output", "json"];
        a.extend(opts.iter().map(String::as_str));
        a.extend_from_slice(extra);
        sb.run_with(&a, &env)
    };

    // Neither --archive nor --no-archive: refused, nothing removed.
    let r = purge(&["--yes"]).code(2);
    assert!(r.stderr.contains("--no-archive"), "{name}: {}", r.stderr);
    // A dry run removes nothing and writes no archive.
    let r = purge(&["--archive", file, "--dry-run"]).ok().json();
    assert_eq!(r["moved"], N as u64, "{name}: {r}");
    assert_eq!(r["operation"], "purge", "{name}: {r}");
    p.settle().await;
    assert_eq!(
        p.remaining().await,
        N as u64,
        "{name}: a dry run removed nothing"
    );
    assert!(
        archived(&archive).is_empty(),
        "{name}: a dry run archived nothing"
    );

    // --max 4 with an archive: four archived with their ids, then removed.
    let r = purge(&["--archive", file, "--max", "4", "--yes"])
        .ok()
        .json();
    assert_eq!(r["moved"], 4, "{name}: {r}");
    p.settle().await;
    assert_eq!(p.remaining().await, (N - 4) as u64, "{name}");
    let got = archived(&archive);
    assert_eq!(got.len(), 4, "{name}: {got:?}");
    assert!(got.iter().all(|id| ids.contains(id)), "{name}: {got:?}");
    assert_eq!(
        p.copies().await,
        0,
        "{name}: a purge sends nothing to the source queue"
    );

    if filters {
        // A filter removes what it selects, without an archive when told so.
        let pick = ids
            .iter()
            .find(|id| !got.contains(id))
            .expect("one left")
            .clone();
        let r = purge(&["--id", &pick, "--no-archive", "--yes"]).ok().json();
        assert_eq!(r["moved"], 1, "{name}: {r}");
        p.settle().await;
        assert_eq!(p.remaining().await, (N - 5) as u64, "{name}");
    } else {
        // Kafka: a filter would pass over the records between the purged ones.
        let r = purge(&["--id", &ids[0], "--no-archive", "--yes"]).code(2);
        assert!(r.stderr.contains("Kafka purge"), "{name}: {}", r.stderr);
    }
    // The rest, without an archive.
    let r = purge(&["--no-archive", "--yes"]).ok().json();
    let rest = if filters { N - 5 } else { N - 4 };
    assert_eq!(r["moved"], rest as u64, "{name}: {r}");
    p.settle().await;
    assert_eq!(p.remaining().await, 0, "{name}: purged");
    assert_eq!(
        archived(&archive).len(),
        4,
        "{name}: --no-archive wrote nothing"
    );
}

/// SIGKILL a purge with an archive once the archive holds a batch; a re-run finishes; every
/// seeded id is in the archive and nothing is left (nothing was lost in between).
pub async fn purge_survives_a_kill<P: Pair>(p: &mut P) {
    let name = p.name();
    let ids = p.fresh(40).await;
    let sb = Sandbox::new();
    let env = p.env(&sb);
    let source = p.redrive()[1].clone();
    let archive = sb.path("archive.jsonl");
    let file = archive.to_str().unwrap().to_string();
    let opts = options(p);
    let mut args = vec![
        "purge",
        source.as_str(),
        "--archive",
        file.as_str(),
        "--batch-size",
        "2",
        "--rate",
        "20/s",
        "--yes",
        "--output",
        "json",
    ];
    args.extend(opts.iter().map(String::as_str));
    let mut child = sb
        .cmd(&args)
        .envs(env.clone())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start dlqctl purge");
    let path = archive.clone();
    wait_until(Duration::from_secs(60), "the archive's first batch", || {
        let n = archived(&path).len();
        async move { n >= 2 }
    })
    .await;
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    p.settle().await;
    let in_archive: HashSet<String> = archived(&archive).into_iter().collect();
    let left = p.remaining().await;
    assert!(
        in_archive.len() as u64 + left >= ids.len() as u64,
        "{name}: after the kill {} archived + {left} in the queue < {} seeded",
        in_archive.len(),
        ids.len()
    );
    let mut args = vec![
        "purge",
        &source,
        "--archive",
        &file,
        "--yes",
        "--output",
        "json",
    ];
    args.extend(opts.iter().map(String::as_str));
    let r = sb.run_with(&args, &env).ok().json();
    assert!(r["moved"].as_u64().unwrap() <= left, "{name}: {r}");
    p.settle().await;
    assert_eq!(p.remaining().await, 0, "{name}: the re-run purged the rest");
    let in_archive: HashSet<String> = archived(&archive).into_iter().collect();
    let lost: Vec<&String> = ids.iter().filter(|i| !in_archive.contains(*i)).collect();
    assert!(
        lost.is_empty(),
        "{name}: neither in the queue nor the archive: {lost:?}"
    );
}

/// A queue or a topic as the archive: the copies arrive there (same ids, not counted as a
/// redrive), and only those leave the source.
pub async fn purge_into_a_queue<P: Pair>(p: &mut P) {
    let name = p.name();
    let ids = p.fresh(N).await;
    let archive = p.copies_url().expect("a pair with a readable target");
    let sb = Sandbox::new();
    let env = p.env(&sb);
    let source = p.redrive()[1].clone();
    let mut args = vec![
        "purge",
        source.as_str(),
        "--archive",
        archive.as_str(),
        "--max",
        "3",
    ];
    let opts = options(p);
    args.extend(opts.iter().map(String::as_str));
    args.extend(["--yes", "--output", "json"]);
    let r = sb.run_with(&args, &env).ok().json();
    assert_eq!(r["moved"], 3, "{name}: {r}");
    assert_eq!(r["destinations"][0]["to"], archive.as_str(), "{name}: {r}");
    p.settle().await;
    assert_eq!(p.remaining().await, (N - 3) as u64, "{name}");
    let got = p.copy_records(&sb).await;
    assert_eq!(got.len(), 3, "{name}: {got:?}");
    for (id, _, count) in &got {
        assert!(ids.contains(id), "{name}: {id}");
        assert_eq!(*count, 0, "{name}: an archive copy is not a redrive");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn purge_on_a_postgres_table() {
    let mut p = PgSameDb::new();
    purge_contract(&mut p, true).await;
    purge_survives_a_kill(&mut p).await;
    // An archive table in the same database: archived and deleted in one transaction.
    let ids = p.fresh(N).await;
    let (dlq, queue) = p.urls();
    let sb = Sandbox::new();
    let r = sb
        .run(&[
            "purge",
            &dlq,
            "--archive",
            &queue,
            "--max",
            "3",
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(r["moved"], 3, "{r}");
    let got: Vec<String> = p.target_ids().await.into_iter().flatten().collect();
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|id| ids.contains(id)), "{got:?}");
    assert_eq!(p.remaining().await, (N - 3) as u64);
}

#[tokio::test(flavor = "multi_thread")]
async fn purge_on_river() {
    let mut p = JobSystem::new("river");
    purge_contract(&mut p, true).await;
    purge_survives_a_kill(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn purge_on_every_job_system() {
    for system in [
        "oban",
        "pgmq",
        "graphile-worker",
        "solid_queue",
        "good_job",
        "que",
        "pg-boss",
    ] {
        purge_contract(&mut JobSystem::new(system), true).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn purge_on_sqs() {
    let mut p = SqsPair::new(false);
    purge_contract(&mut p, true).await;
    purge_survives_a_kill(&mut p).await;
    purge_into_a_queue(&mut p).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn purge_on_kafka() {
    let mut p = KafkaPair::new();
    purge_contract(&mut p, false).await;
    purge_survives_a_kill(&mut p).await;
    purge_into_a_queue(&mut p).await;
}

/// A purge and a transform say what happens in their own words (issue 25): a dry run of a
/// purge "would remove" (JSON `would_remove`), never "would send"; an archive that is the queue
/// itself, a file name without .jsonl and a missing directory are errors in `--archive`'s
/// words; a transform's plan does not promise the body is kept.
#[tokio::test]
async fn purge_and_transform_say_what_happens_in_their_own_words() {
    let mut p = PgSameDb::new();
    p.fresh(10).await;
    let (dlq, _) = p.urls();
    let sb = Sandbox::new();
    let dry = sb
        .run(&[
            "purge",
            &dlq,
            "--no-archive",
            "--max",
            "7",
            "--dry-run",
            "--output",
            "table",
        ])
        .ok();
    for text in [&dry.stdout, &dry.stderr] {
        assert!(text.contains("would remove"), "{text}");
        assert!(!text.contains("would send"), "{text}");
    }
    assert!(dry.stdout.starts_with("would remove 7 "), "{}", dry.stdout);
    let json = sb
        .run(&[
            "purge",
            &dlq,
            "--no-archive",
            "--max",
            "7",
            "--dry-run",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(json["would_remove"], 7, "{json}");

    let itself = sb
        .run(&["purge", &dlq, "--archive", &dlq, "--dry-run"])
        .code(2);
    assert!(
        itself.stderr.contains("--archive") && !itself.stderr.contains("--to"),
        "{}",
        itself.stderr
    );
    let json_name = sb
        .run(&["purge", &dlq, "--archive", "poison.json", "--dry-run"])
        .code(2);
    assert!(
        json_name.stderr.contains(".jsonl") && json_name.stderr.contains("file:"),
        "{}",
        json_name.stderr
    );
    let missing = sb
        .run(&[
            "purge",
            &dlq,
            "--archive",
            "no-such-dir/poison.jsonl",
            "--max",
            "1",
            "--yes",
        ])
        .code(2);
    assert!(
        missing.stderr.contains("no-such-dir does not exist")
            && !missing.stderr.contains("os error"),
        "{}",
        missing.stderr
    );
    assert_eq!(p.remaining().await, 10, "nothing removed");

    let transform = sb
        .run(&[
            "redrive",
            &dlq,
            "--transform",
            ".json.order_id = 0",
            "--max",
            "1",
            "--dry-run",
            "--output",
            "table",
        ])
        .ok();
    assert!(
        !transform.stderr.contains("stable id, body")
            && transform.stderr.contains(".json.order_id = 0"),
        "the plan says the transform makes the body:\n{}",
        transform.stderr
    );
    assert!(
        transform.stderr.contains("would move"),
        "{}",
        transform.stderr
    );
}

/// A JSON Lines archive is created only when the run starts: a dry run, the refusal without a
/// terminal, and "no" at the question leave no file. The file holds message bodies: created
/// 0600, and a symlink in its place is refused before anything is removed.
#[tokio::test(flavor = "multi_thread")]
async fn an_archive_file_is_created_private_and_only_by_a_run() {
    use std::os::unix::fs::PermissionsExt;
    let mut p = PgSameDb::new();
    p.fresh(N).await;
    let (dlq, _) = p.urls();
    let sb = Sandbox::new();
    let archive = sb.path("poison.jsonl");
    let file = archive.to_str().unwrap();
    sb.run(&[
        "purge",
        &dlq,
        "--archive",
        file,
        "--dry-run",
        "--output",
        "json",
    ])
    .ok();
    assert!(!archive.exists(), "a dry run creates no archive");
    sb.run(&["purge", &dlq, "--archive", file, "--output", "json"])
        .code(2);
    assert!(!archive.exists(), "a refused run creates no archive");
    let (code, seen) = crate::terminal::at_terminal(
        &sb,
        &format!(
            "{} purge '{dlq}' --archive '{file}'",
            env!("CARGO_BIN_EXE_dlqctl")
        ),
        "Proceed?",
        b"n",
    );
    assert_eq!(code, 0, "{seen}");
    assert!(!archive.exists(), "\"no\" creates no archive: {seen}");

    sb.run(&[
        "purge",
        &dlq,
        "--archive",
        file,
        "--max",
        "3",
        "--yes",
        "--output",
        "json",
    ])
    .ok();
    let mode = std::fs::metadata(&archive).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(archived(&archive).len(), 3);

    let elsewhere = sb.path("elsewhere.txt");
    std::fs::write(&elsewhere, "mine\n").unwrap();
    let linked = sb.path("linked.jsonl");
    std::os::unix::fs::symlink(&elsewhere, &linked).unwrap();
    let r = sb.run(&[
        "purge",
        &dlq,
        "--archive",
        linked.to_str().unwrap(),
        "--yes",
        "--output",
        "json",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("symlink"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "mine\n");
    assert_eq!(p.remaining().await, (N - 3) as u64, "nothing removed");
}

/// `--rate R` without `--batch-size` moves a second's worth at a time: the first batch of a
/// `--rate 10` run is at most 10 messages, not the default 1000 (all 30 at once, then a pause).
#[tokio::test(flavor = "multi_thread")]
async fn a_rate_without_a_batch_size_moves_a_seconds_worth_at_a_time() {
    let mut p = PgSameDb::new();
    p.fresh(30).await;
    let (dlq, _) = p.urls();
    let sb = Sandbox::new();
    let plan = sb
        .run(&[
            "purge",
            &dlq,
            "--no-archive",
            "--rate",
            "10",
            "--dry-run",
            "--output",
            "table",
        ])
        .ok();
    let text = format!("{}{}", plan.stdout, plan.stderr);
    assert!(text.contains("10/s on average: batches of 10"), "{text}");
    let archive = sb.path("a.jsonl");
    let mut child = sb
        .cmd(&[
            "purge",
            &dlq,
            "--archive",
            archive.to_str().unwrap(),
            "--rate",
            "10",
            "--yes",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = || {
        std::fs::read_to_string(&archive)
            .unwrap_or_default()
            .lines()
            .count()
    };
    wait_until(
        Duration::from_secs(60),
        "the first archived batch",
        || async { lines() > 0 },
    )
    .await;
    let first = lines();
    assert!(
        first <= 20,
        "{first} archived at once: not a second's worth"
    );
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(lines(), 30);
}

/// A purge with --archive that removed nothing said `removed 0 · skipped 3 (filter) · …`,
/// which reads like a failure. It now says plainly that it removed nothing, and why: nothing
/// matched the filters, or there was nothing to read.
#[tokio::test(flavor = "multi_thread")]
async fn a_purge_that_removes_nothing_says_so_plainly() {
    let db = crate::redis_harness::RedisDb::new().await;
    crate::redis_harness::seed_sidekiq(&db, 3).await;
    let sb = Sandbox::new();
    let url = db.sidekiq();
    let archive = sb.path("kept.jsonl");
    let purge = |url: &str, filter: &[&str]| {
        let mut a = vec![
            "purge",
            url,
            "--archive",
            archive.to_str().unwrap(),
            "--yes",
            "--output",
            "table",
        ];
        a.extend_from_slice(filter);
        let out = sb.run(&a).ok().stdout;
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let none = purge(&url, &["--where", "false"]);
    assert!(
        none.starts_with("removed nothing · skipped 3 (filter)")
            && none.contains("nothing matched the filters: nothing was removed")
            && !none.contains("removed 0"),
        "{none}"
    );
    assert_eq!(db.zcard("dead").await, 3);
    let empty = crate::redis_harness::RedisDb::new().await;
    let out = purge(&empty.sidekiq(), &[]);
    assert!(
        out.starts_with("removed nothing") && out.contains("nothing to purge"),
        "{out}"
    );
}

/// The plan's note that dlqctl does not enqueue into a job library (so an archive of jobs
/// comes back into another backend, or through the application) was tested on BullMQ only:
/// a purge of a Sidekiq dead set and of a PostgreSQL job system says it too.
#[tokio::test(flavor = "multi_thread")]
async fn a_purge_of_any_job_library_says_where_its_archive_can_come_back() {
    let db = crate::redis_harness::RedisDb::new().await;
    crate::redis_harness::seed_sidekiq(&db, 2).await;
    let mut river = JobSystem::new("river");
    river.fresh(2).await;
    let sb = Sandbox::new();
    let archive = sb.path("jobs.jsonl");
    let archive = archive.to_str().unwrap();
    let river_url = river.redrive()[1].clone();
    for (url, env) in [(db.sidekiq(), Vec::new()), (river_url, river.env(&sb))] {
        let r = sb
            .run_with(
                &[
                    "purge",
                    &url,
                    "--archive",
                    archive,
                    "--dry-run",
                    "--output",
                    "table",
                ],
                &env,
            )
            .ok();
        let plan = r.stderr.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            plan.contains("dlqctl does not enqueue into a job library"),
            "{url}: {}",
            r.stderr
        );
    }
}

/// The SQS purge plan names the call the purge makes: it said `DeleteMessage`, purge.md and
/// the code `DeleteMessageBatch`.
#[tokio::test(flavor = "multi_thread")]
async fn the_sqs_purge_plan_names_the_call_it_makes() {
    let sqs = crate::harness::Sqs::new("purgecall").await;
    let (url, _) = sqs.create("dlq", &[]).await;
    let sb = Sandbox::new();
    let env = sqs.env(&sb);
    for archive in [&["--no-archive"][..], &["--archive", "kept.jsonl"]] {
        let mut args = vec!["purge", url.as_str(), "--dry-run", "--output", "table"];
        args.extend(archive);
        let r = sb.run_with(&args, &env).ok();
        assert!(r.stderr.contains("(DeleteMessageBatch)"), "{}", r.stderr);
    }
}
