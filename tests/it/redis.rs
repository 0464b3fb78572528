//! Redis job queues end to end, with the libraries themselves: Sidekiq's processor and a
//! BullMQ Worker fail jobs until they are dead; dlqctl reads, classifies and retries them;
//! the library's own worker runs the retried ones under the same id, and the others stay
//! dead (docs/systems/sidekiq.md, docs/systems/bullmq.md).

use std::collections::HashSet;

use crate::harness::{Db, Sandbox, repo_root};
use crate::redis_harness::{RedisDb, seed_bullmq, seed_sidekiq};

fn set(v: Vec<String>) -> HashSet<String> {
    v.into_iter().collect()
}

/// The ids of the jobs in a JSON Lines output.
fn ids(jsonl: &[serde_json::Value]) -> HashSet<String> {
    jsonl
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn sidekiq_dead_jobs_are_read_classified_and_retried_the_way_sidekiq_does() {
    let db = RedisDb::new().await;
    // Sidekiq's own processor: orders 0, 2, 4 time out (Net::ReadTimeout), 1, 3, 5 are
    // invalid (ArgumentError); retry: 0, so each dies at once.
    db.sidekiq_worker(&["seed", "6", "ord"]);
    let url = db.sidekiq();
    let sb = Sandbox::new();
    let all = sb
        .run(&["peek", &url, "-n", "10", "--output", "jsonl"])
        .ok()
        .jsonl();
    assert_eq!(all.len(), 6);
    let jid_of = |n: u64| {
        all.iter()
            .find(|m| {
                serde_json::from_str::<serde_json::Value>(m["body"].as_str().unwrap()).unwrap()[0]
                    == n
            })
            .map(|m| m["id"].as_str().unwrap().to_string())
            .unwrap()
    };
    let m0 = all.iter().find(|m| m["id"] == jid_of(0)).unwrap();
    assert_eq!(m0["error"]["class"], "Net::ReadTimeout", "{m0}");
    assert!(
        m0["error"]["trace"]
            .as_str()
            .unwrap()
            .contains("sidekiq_worker.rb"),
        "the compressed backtrace is read: {m0}"
    );
    assert_eq!(m0["source"], "default");
    let r = sb.run(&["classify", &url, "--output", "json"]).ok().json();
    assert_eq!(
        (
            r["kinds"]["transient"].as_u64(),
            r["kinds"]["permanent"].as_u64()
        ),
        (Some(3), Some(3)),
        "Ruby's errors classified: {r}"
    );
    let ins = sb.run(&["inspect", &url, "--output", "json"]).ok().json();
    assert_eq!(ins[0]["facts"]["dead_jobs"], 6, "{ins}");
    // export: every job, losslessly.
    let file = sb.path("dead.jsonl");
    sb.run(&["export", &url, "-o", file.to_str().unwrap()]).ok();
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 6);

    // The transient ones are retried in place; the rest stay dead.
    let r = sb
        .run(&[
            "redrive",
            &url,
            "--class",
            "transient",
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(
        (r["moved"].as_u64(), r["skipped"].as_u64()),
        (Some(3), Some(3)),
        "{r}"
    );
    let retried: HashSet<String> = [0, 2, 4].iter().map(|&n| jid_of(n)).collect();
    assert_eq!(set(db.sidekiq_queue_jids("default").await), retried);
    assert_eq!(
        db.q::<Vec<String>>(redis::cmd("SMEMBERS").arg("queues"))
            .await,
        vec!["default"]
    );
    // Sidekiq's own processor runs them, under the same jids.
    db.sidekiq_worker(&["work", "3"]);
    assert_eq!(set(db.lrange("fixture:done").await), retried);
    let dead: HashSet<String> = [1, 3, 5].iter().map(|&n| jid_of(n)).collect();
    assert_eq!(
        set(db.sidekiq_dead_jids().await),
        dead,
        "the others stay dead"
    );
    // The run is in the audit trail.
    let audit = sb.run(&["audit", "--output", "json"]).ok().json();
    assert_eq!(audit.as_array().unwrap().len(), 1, "{audit}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bullmq_failed_jobs_are_retried_by_its_own_reprocess_script() {
    let db = RedisDb::new().await;
    // A BullMQ Worker: orders 0, 2, 4, 6 time out (ETIMEDOUT), 1, 3, 5, 7 are TypeErrors;
    // attempts: 2, so each lands in `failed` after its second attempt.
    db.bullmq_worker(&["seed", "payments", "8", "ord"]);
    let url = db.bullmq("payments");
    let sb = Sandbox::new();
    let r = sb.run(&["classify", &url, "--output", "json"]).ok().json();
    assert_eq!(
        (
            r["kinds"]["transient"].as_u64(),
            r["kinds"]["permanent"].as_u64()
        ),
        (Some(4), Some(4)),
        "Node's errors classified: {r}"
    );
    let peek = sb
        .run(&["peek", &url, "--id", "ord-1", "--output", "jsonl"])
        .ok()
        .jsonl();
    assert_eq!(peek[0]["error"]["class"], "TypeError", "{:?}", peek);
    assert_eq!(peek[0]["receive_count"], 2);
    let r = sb
        .run(&[
            "redrive",
            &url,
            "--class",
            "transient",
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(r["moved"], 4, "{r}");
    let retried = set(vec![
        "ord-0".into(),
        "ord-2".into(),
        "ord-4".into(),
        "ord-6".into(),
    ]);
    assert_eq!(set(db.lrange("bull:payments:wait").await), retried);
    // BullMQ's event stream says `waiting`, as for job.retry().
    let events: redis::Value = db
        .q(redis::cmd("XRANGE")
            .arg("bull:payments:events")
            .arg("-")
            .arg("+"))
        .await;
    assert!(format!("{events:?}").contains("waiting"));
    db.bullmq_worker(&["work", "payments", "4"]);
    assert_eq!(set(db.lrange("fixture:done").await), retried);
    assert_eq!(set(db.zrange("bull:payments:completed").await), retried);
    assert_eq!(
        set(db.zrange("bull:payments:failed").await),
        set(vec![
            "ord-1".into(),
            "ord-3".into(),
            "ord-5".into(),
            "ord-7".into()
        ]),
        "the others stay failed"
    );
}

/// A queue written by a BullMQ whose layout the pinned scripts do not know is refused, with
/// the reason, before anything is read.
#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_bullmq_layout_is_refused() {
    let db = RedisDb::new().await;
    seed_bullmq(&db, "old", 2).await;
    let _: i64 = db
        .q(redis::cmd("HSET")
            .arg("bull:old:meta")
            .arg("version")
            .arg("bullmq:3.15.8"))
        .await;
    let sb = Sandbox::new();
    let r = sb.run(&["redrive", &db.bullmq("old"), "--yes"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("bullmq:3.15.8") && r.stderr.contains("6.7.6"),
        "{}",
        r.stderr
    );
    assert_eq!(db.zcard("bull:old:failed").await, 2);
    let r = sb.run(&["peek", &db.bullmq("nope")]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("check queue= and prefix="),
        "{}",
        r.stderr
    );
    // Another application's `dead` key: the wrong database, said so.
    let _: () = db.q(redis::cmd("SET").arg("dead").arg("a string")).await;
    let r = sb.run(&["inspect", &db.sidekiq()]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("WRONGTYPE") && r.stderr.contains("is not the job library's"),
        "{}",
        r.stderr
    );
    // A peek fails as it reads: no JSON array left open on stdout.
    let r = sb.run(&["peek", &db.sidekiq()]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("WRONGTYPE"), "{}", r.stderr);
    assert_eq!(r.stdout, "", "stdout is one JSON document or nothing");
}

/// Sidekiq 8 writes integer milliseconds and compresses the backtrace: read, and retried with
/// `enqueued_at` in milliseconds too. (Debian ships Sidekiq 6.4: the job is a fixture in
/// Sidekiq 8's format, tests/fixtures/sidekiq8_dead_job.json.)
#[tokio::test(flavor = "multi_thread")]
async fn a_sidekiq_8_dead_job_is_read_and_retried() {
    let db = RedisDb::new().await;
    let job =
        std::fs::read_to_string(repo_root().join("tests/fixtures/sidekiq8_dead_job.json")).unwrap();
    let job: serde_json::Value = serde_json::from_str(&job).unwrap();
    let _: i64 = db
        .q(redis::cmd("ZADD")
            .arg("dead")
            .arg(1764932401.123)
            .arg(job.to_string()))
        .await;
    let sb = Sandbox::new();
    let m = sb
        .run(&["peek", &db.sidekiq(), "--output", "jsonl"])
        .ok()
        .jsonl();
    assert_eq!(m[0]["id"], "2f5a0c8e4b1d7a9c3e6f8b20");
    assert_eq!(m[0]["enqueued_at"], "2025-12-05T11:00:00.123Z");
    assert_eq!(m[0]["error"]["class"], "Stripe::APIConnectionError");
    assert!(
        m[0]["error"]["trace"]
            .as_str()
            .unwrap()
            .starts_with("app/jobs/charge_job.rb:14:in 'ChargeJob#perform'"),
        "{}",
        m[0]
    );
    sb.run(&["redrive", &db.sidekiq(), "--yes", "--output", "json"])
        .ok();
    let pushed: serde_json::Value =
        serde_json::from_str(&db.lrange("queue:billing").await[0]).unwrap();
    assert!(pushed["enqueued_at"].is_i64(), "milliseconds: {pushed}");
    assert_eq!(pushed["jid"], "2f5a0c8e4b1d7a9c3e6f8b20");
    assert_eq!(
        pushed["retry_count"], 4,
        "one less, as Sidekiq's retry does"
    );
}

/// The loop guard in place: a job dlqctl retried that dies again carries its count (Sidekiq
/// keeps the job's fields), and the next run with `--max-redrives 1` leaves it.
#[tokio::test(flavor = "multi_thread")]
async fn the_loop_guard_holds_jobs_that_keep_dying() {
    let db = RedisDb::new().await;
    db.sidekiq_worker(&["seed", "2", "lg"]);
    let sb = Sandbox::new();
    let url = db.sidekiq();
    let run = |max: &str| {
        sb.run(&[
            "redrive",
            &url,
            "--max-redrives",
            max,
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json()
    };
    let r = run("1");
    assert_eq!(r["moved"], 2, "{r}");
    // Sidekiq runs them again; they fail and die again, with dlqctl's count.
    db.sidekiq_worker(&["fail", "2"]);
    let dead = sb.run(&["peek", &url, "--output", "jsonl"]).ok().jsonl();
    assert!(dead.iter().all(|m| m["redrive_count"] == 1), "{dead:?}");
    let r = run("1");
    assert_eq!(
        (r["moved"].as_u64(), r["held"].as_u64()),
        (Some(0), Some(2)),
        "{r}"
    );
    assert_eq!(db.zcard("dead").await, 2, "held: left dead");
    let r = run("2");
    assert_eq!(r["moved"], 2, "{r}");
}

/// Purge with an archive: each job is written to the archive first, then removed; the BullMQ
/// job's hash goes with it (BullMQ's own removeJob).
#[tokio::test(flavor = "multi_thread")]
async fn purge_archives_then_removes() {
    let db = RedisDb::new().await;
    seed_bullmq(&db, "q", 5).await;
    let sb = Sandbox::new();
    let archive = sb.path("archive.jsonl");
    // The plan says where an archive of jobs can come back to: not into the library.
    let plan = sb
        .run(&[
            "purge",
            &db.bullmq("q"),
            "--archive",
            archive.to_str().unwrap(),
            "--dry-run",
            "--output",
            "table",
        ])
        .ok();
    assert!(
        plan.stderr
            .contains("dlqctl does not enqueue into a job library"),
        "{}",
        plan.stderr
    );
    let r = sb
        .run(&[
            "purge",
            &db.bullmq("q"),
            "--archive",
            archive.to_str().unwrap(),
            "--id",
            "m-1",
            "--id",
            "m-3",
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(r["moved"], 2, "{r}");
    let archived: Vec<serde_json::Value> = std::fs::read_to_string(&archive)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(ids(&archived), set(vec!["m-1".into(), "m-3".into()]));
    assert_eq!(db.zcard("bull:q:failed").await, 3);
    let gone: bool = db.q(redis::cmd("EXISTS").arg("bull:q:m-1")).await;
    assert!(!gone, "BullMQ's removeJob deleted the job's hash");
    // A replay of the archive into a job library is refused: it has no sink.
    let r = sb.run(&[
        "replay",
        archive.to_str().unwrap(),
        "--to",
        &db.bullmq("q"),
        "--yes",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("writing into a job library"),
        "{}",
        r.stderr
    );
}

/// A failed flow parent copied elsewhere (or archived) is removed alone: its healthy child,
/// delayed and never dead, stays where BullMQ keeps it. (BullMQ's `job.remove()` removes a
/// parent's children by default; dlqctl removed a delayed child that was never copied.)
#[tokio::test(flavor = "multi_thread")]
async fn moving_a_failed_flow_parent_leaves_its_healthy_children() {
    let db = RedisDb::new().await;
    db.bullmq_worker(&["flow", "fl"]);
    let failed = db.zrange("bull:fl:failed").await;
    assert_eq!(
        set(failed),
        set(vec!["flow-bad".into(), "flow-parent".into()])
    );
    assert_eq!(
        db.zrange("bull:fl:delayed").await,
        vec!["flow-late".to_string()]
    );
    let sb = Sandbox::new();
    let archive = sb.path("flow.jsonl");
    let r = sb
        .run(&[
            "purge",
            &db.bullmq("fl"),
            "--archive",
            archive.to_str().unwrap(),
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(r["moved"], 2, "{r}");
    assert_eq!(db.zcard("bull:fl:failed").await, 0);
    assert_eq!(
        db.zrange("bull:fl:delayed").await,
        vec!["flow-late".to_string()],
        "the delayed child is still delayed"
    );
    let kept: bool = db.q(redis::cmd("EXISTS").arg("bull:fl:flow-late")).await;
    assert!(kept, "the delayed child's hash is kept");
}

/// A job BullMQ's removeJob leaves (here: locked, as a worker's active job is) after its copy
/// was archived is reported copied and not removed, with the reason, and the run exits 1: it was
/// counted as moved and only logged at debug level.
#[tokio::test(flavor = "multi_thread")]
async fn a_job_remove_job_leaves_is_said_copied_not_removed() {
    let db = RedisDb::new().await;
    seed_bullmq(&db, "lk", 3).await;
    let _: () = db
        .q(redis::cmd("SET")
            .arg("bull:lk:m-1:lock")
            .arg("worker-token"))
        .await;
    let sb = Sandbox::new();
    let archive = sb.path("lk.jsonl");
    let r = sb.run(&[
        "purge",
        &db.bullmq("lk"),
        "--archive",
        archive.to_str().unwrap(),
        "--yes",
        "--output",
        "json",
    ]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let j = r.json();
    assert_eq!(
        (j["moved"].as_u64(), j["copied_not_removed"].as_u64()),
        (Some(2), Some(1)),
        "{j}"
    );
    assert!(j.to_string().contains("a worker holds its lock"), "{j}");
    assert_eq!(db.zrange("bull:lk:failed").await, vec!["m-1".to_string()]);
}

/// `--transform` copies elsewhere (the id kept); in place there is nothing to transform.
#[tokio::test(flavor = "multi_thread")]
async fn transform_goes_to_another_backend_not_in_place() {
    let db = RedisDb::new().await;
    seed_sidekiq(&db, 3).await;
    let pg = Db::new("sktr").await;
    let sb = Sandbox::new();
    let r = sb.run(&["redrive", &db.sidekiq(), "--transform", ".body", "--yes"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("retries each job in place"),
        "{}",
        r.stderr
    );
    let r = sb
        .run(&[
            "redrive",
            &db.sidekiq(),
            "--to",
            &pg.table_url("queue_messages"),
            "--transform",
            ".body |= (fromjson | {order: .[1]} | tojson)",
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(r["moved"], 3, "{r}");
    let rows = pg
        .query_strings(
            "SELECT message_id || ' ' || payload::text FROM {s}.queue_messages ORDER BY 1",
        )
        .await;
    assert_eq!(rows[0], r#"m-0 {"order": "m-0"}"#, "{rows:?}");
    assert_eq!(db.zcard("dead").await, 0);
}

/// Two operators at once never both retry one job: every job is pushed once. (The second
/// run is refused by the first's lock, or they run one after the other: `redis_lock.rs`; the
/// scripts' own guarantee, each acting only on a job still in the set, is what holds against
/// Sidekiq's own "Retry now" meanwhile.)
#[tokio::test(flavor = "multi_thread")]
async fn two_operators_never_both_retry_a_job() {
    let db = RedisDb::new().await;
    seed_sidekiq(&db, 400).await;
    let sb = Sandbox::new();
    let spawn = || {
        sb.cmd(&[
            "redrive",
            &db.sidekiq(),
            "--batch-size",
            "7",
            "--yes",
            "--output",
            "json",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let moved = |c: std::process::Child| {
        let out = c.wait_with_output().unwrap();
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["moved"]
            .as_u64()
            .unwrap()
    };
    let total = moved(a) + moved(b);
    assert_eq!(total, 400);
    let jids = db.sidekiq_queue_jids("default").await;
    assert_eq!(jids.len(), 400, "each job pushed once");
    assert_eq!(set(jids).len(), 400);
}

/// verify: Sidekiq's dead set is capped by a count (WARN with the arithmetic), its timeout is
/// the retention; BullMQ keeps failed jobs forever unless removeOnFail says otherwise.
#[tokio::test(flavor = "multi_thread")]
async fn verify_reports_each_library_s_retention() {
    let db = RedisDb::new().await;
    seed_sidekiq(&db, 40).await;
    seed_bullmq(&db, "q", 3).await;
    let sb = Sandbox::new();
    let cfg = sb.write(
        "dlqctl.toml",
        &format!(
            "[queues.jobs]\ndlq = \"{}\"\n[queues.jobs.sidekiq]\ndead_timeout_in_seconds = 604800\ndead_max_jobs = 100\n\n[queues.bull]\ndlq = \"{}\"\n",
            db.sidekiq(),
            db.bullmq("q")
        ),
    );
    let r = sb.run_env(
        &["verify", "jobs", "bull", "--output", "json"],
        &[("DLQCTL_CONFIG", cfg.to_str().unwrap())],
    );
    let v = r.json();
    let checks = |q: usize| v["queues"][q]["checks"].as_array().unwrap().clone();
    let sk = checks(0);
    let cap = sk
        .iter()
        .find(|c| c["id"] == "sidekiq-dead-max-jobs")
        .unwrap();
    assert_eq!(cap["status"], "WARN");
    let d = cap["detail"].as_str().unwrap();
    assert!(
        d.contains("dead_max_jobs = 100")
            && d.contains("holds 40 now, so 60 more deaths")
            && d.contains("40 deaths/day"),
        "{d}"
    );
    let terms = &v["queues"][0]["redelivery"];
    assert!(terms.to_string().contains("604800"), "{terms}");
    let bq = checks(1);
    let rof = bq
        .iter()
        .find(|c| c["id"] == "bullmq-remove-on-fail")
        .unwrap();
    assert_eq!(rof["status"], "WARN", "{rof}");
    assert!(
        rof["detail"]
            .as_str()
            .unwrap()
            .contains("kept until removed")
    );
}

/// Sidekiq's retry set is scored by each job's next retry, a time to come: inspect and verify
/// name its facts for that (`retry_jobs`, `next_retry_at`, `last_retry_at`, no `dead_*`), and
/// verify does not count its jobs as deaths against the dead set's cap. The dead set keeps its
/// names.
#[tokio::test(flavor = "multi_thread")]
async fn the_retry_set_s_facts_are_retries_to_come_not_deaths() {
    let db = RedisDb::new().await;
    seed_sidekiq(&db, 3).await;
    let now = chrono::Utc::now().timestamp();
    let mut zadd = redis::cmd("ZADD");
    zadd.arg("retry");
    for (i, job) in db.zrange("dead").await.iter().enumerate() {
        zadd.arg(now + 600 + 60 * i as i64).arg(job);
    }
    let _: i64 = db.q(&mut zadd).await;
    let _: i64 = db.q(redis::cmd("DEL").arg("dead")).await;
    let url = format!("{}&set=retry", db.sidekiq());
    let sb = Sandbox::new();
    let j = sb.run(&["inspect", &url, "--output", "json"]).ok().json();
    let facts = &j[0]["facts"];
    assert_eq!(facts["retry_jobs"], 3, "{facts}");
    for gone in ["dead_jobs", "first_dead", "last_dead"] {
        assert!(facts.get(gone).is_none(), "{gone}: {facts}");
    }
    let at = |k: &str| {
        chrono::DateTime::parse_from_rfc3339(facts[k].as_str().unwrap())
            .unwrap()
            .timestamp()
    };
    assert_eq!(
        (at("next_retry_at"), at("last_retry_at")),
        (now + 600, now + 720)
    );
    let text = sb.run(&["inspect", &url, "--output", "table"]).ok().stdout;
    assert!(
        text.contains("next retry at") && text.contains("jobs to retry"),
        "{text}"
    );
    assert!(
        !text.contains("dead jobs") && !text.contains("first dead"),
        "{text}"
    );
    let cfg = sb.write("dlqctl.toml", &format!("[queues.r]\ndlq = \"{url}\"\n"));
    let v = sb
        .run_env(
            &["verify", "r", "--output", "json"],
            &[("DLQCTL_CONFIG", cfg.to_str().unwrap())],
        )
        .json();
    let checks = v["queues"][0]["checks"].to_string();
    assert!(
        checks.contains("sidekiq-retry-set") && checks.contains("next retry at"),
        "{checks}"
    );
    assert!(
        !checks.contains("sidekiq-dead-max-jobs") && !checks.contains("deaths"),
        "{checks}"
    );
    // The dead set keeps its names.
    let dead = RedisDb::new().await;
    seed_sidekiq(&dead, 1).await;
    let j = sb
        .run(&["inspect", &dead.sidekiq(), "--output", "json"])
        .ok()
        .json();
    assert_eq!(j[0]["facts"]["dead_jobs"], 1, "{j}");
    assert!(j[0]["facts"].get("first_dead").is_some(), "{j}");
}

/// Counts of one were plural (`1 deaths/day`, `(1 jobs)`): verify's details say them in the
/// singular.
#[tokio::test(flavor = "multi_thread")]
async fn verify_says_a_count_of_one_in_the_singular() {
    let db = RedisDb::new().await;
    seed_sidekiq(&db, 1).await;
    seed_bullmq(&db, "rof", 1).await;
    let _: i64 = db
        .q(redis::cmd("HSET")
            .arg("bull:rof:m-0")
            .arg("opts")
            .arg(r#"{"attempts":1,"removeOnFail":100}"#))
        .await;
    let sb = Sandbox::new();
    let cfg = sb.write(
        "dlqctl.toml",
        &format!(
            "[queues.jobs]\ndlq = \"{}\"\n[queues.jobs.sidekiq]\ndead_max_jobs = 2\n\n[queues.bull]\ndlq = \"{}\"\n",
            db.sidekiq(),
            db.bullmq("rof")
        ),
    );
    let v = sb
        .run_env(
            &["verify", "jobs", "bull", "--output", "json"],
            &[("DLQCTL_CONFIG", cfg.to_str().unwrap())],
        )
        .json();
    let detail = |q: usize, id: &str| {
        v["queues"][q]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {v}"))["detail"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let cap = detail(0, "sidekiq-dead-max-jobs");
    assert!(
        cap.contains("holds 1 now, so 1 more death pushes the oldest out")
            && cap.contains("1 death/day"),
        "{cap}"
    );
    let rof = detail(1, "bullmq-remove-on-fail");
    assert!(rof.contains("100 (1 job)"), "{rof}");
}
