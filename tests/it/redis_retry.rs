//! BullMQ's retry in batches (src/backend/redis/bullmq_reprocessJobs.lua): one script call
//! retries a batch job by job with what BullMQ's own `reprocessJob-9.lua` (`job.retry()`)
//! does, which these tests hold it to, and an unfiltered redrive claims the jobs by id alone
//! (docs/systems/bullmq.md).

use std::collections::{BTreeMap, HashSet};

use redis::Value;

use crate::harness::Sandbox;
use crate::redis_harness::{RedisDb, seed_bullmq};

const BATCHED: &str = include_str!("../../src/backend/redis/bullmq_reprocessJobs.lua");
const VERBATIM: &str = include_str!("../../src/backend/redis/bullmq_reprocessJob-9.lua");

/// BullMQ's job hash fields as it writes them for a failed job, with `opts` and any others.
fn job(opts: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut f: Vec<(String, String)> = [
        ("name", "charge"),
        ("data", r#"{"n":1}"#),
        ("opts", opts),
        ("timestamp", "1700000000000"),
        ("delay", "0"),
        ("priority", "0"),
        ("processedOn", "1700000001000"),
        ("finishedOn", "1700000002000"),
        ("atm", "2"),
        ("ats", "2"),
        ("failedReason", "connect ETIMEDOUT 10.0.0.7:443"),
        ("stacktrace", r#"["Error: connect ETIMEDOUT"]"#),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (k, v) in extra {
        match f.iter_mut().find(|(name, _)| name == k) {
            Some(e) => e.1 = v.to_string(),
            None => f.push((k.to_string(), v.to_string())),
        }
    }
    f
}

/// A queue `q` with every kind of failed job the retry treats apart: plain, `lifo` (true,
/// a truthy 1, false), prioritized, flow children (parent's `unsuccessful` set, its `failed`
/// hash, a parent that is gone), a hash without `priority`/`opts`; an id whose hash is gone
/// and a job no longer failed. `meta` as given (paused, concurrency). The ids to retry, in
/// order: every one, and the first again.
async fn lay_out(db: &RedisDb, meta: &[(&str, &str)], active: usize) -> Vec<String> {
    let mut p = redis::pipe();
    let mut m = redis::cmd("HSET");
    m.arg("bull:q:meta").arg("version").arg("bullmq:6.7.6");
    for (k, v) in meta {
        m.arg(*k).arg(*v);
    }
    p.add_command(m);
    for i in 0..active {
        p.cmd("LPUSH").arg("bull:q:active").arg(format!("busy-{i}"));
    }
    p.cmd("LPUSH").arg("bull:q:wait").arg("w-0");
    let jobs: Vec<(&str, Vec<(String, String)>)> = vec![
        ("a", job(r#"{"attempts":3}"#, &[])),
        ("b", job(r#"{"attempts":3,"lifo":true}"#, &[])),
        ("c", job(r#"{"lifo":1}"#, &[])),
        ("d", job(r#"{"lifo":false}"#, &[])),
        ("e", job(r#"{}"#, &[("priority", "5")])),
        ("f", job(r#"{}"#, &[("priority", "2")])),
        ("g", job(r#"{}"#, &[("parentKey", "bull:p:one")])),
        ("h", job(r#"{}"#, &[("parentKey", "bull:p:two")])),
        ("i", job(r#"{}"#, &[("parentKey", "bull:p:gone")])),
        ("j", vec![("name".into(), "bare".into())]),
        ("k", job(r#"{"lifo":""}"#, &[])),
        ("done", job(r#"{}"#, &[])),
    ];
    for (id, fields) in &jobs {
        let mut h = redis::cmd("HSET");
        h.arg(format!("bull:q:{id}"));
        for (k, v) in fields {
            h.arg(k).arg(v);
        }
        p.add_command(h);
        if *id != "done" {
            p.cmd("ZADD").arg("bull:q:failed").arg(1000).arg(*id);
        }
    }
    p.cmd("ZADD").arg("bull:q:failed").arg(1000).arg("gone");
    p.cmd("HSET").arg("bull:p:one").arg("name").arg("parent");
    p.cmd("ZADD")
        .arg("bull:p:one:unsuccessful")
        .arg(1)
        .arg("bull:q:g");
    p.cmd("HSET").arg("bull:p:two").arg("name").arg("parent");
    p.cmd("HSET")
        .arg("bull:p:two:failed")
        .arg("bull:q:h")
        .arg("boom");
    let mut con = db.con.clone();
    let _: Value = p.query_async(&mut con).await.unwrap();
    let mut ids: Vec<String> = jobs.iter().map(|(id, _)| id.to_string()).collect();
    ids.insert(3, "gone".into());
    ids.push("a".into());
    ids
}

/// `job.opts.lifo ? 'R' : 'L'` + `PUSH`, with JavaScript's truthiness.
fn push_of(opts: Option<&str>) -> &'static str {
    let lifo = opts
        .and_then(|o| serde_json::from_str::<serde_json::Value>(o).ok())
        .and_then(|o| o.get("lifo").cloned())
        .is_some_and(|v| match v {
            serde_json::Value::Null => false,
            serde_json::Value::Bool(b) => b,
            serde_json::Value::Number(n) => n.as_f64() != Some(0.0),
            serde_json::Value::String(s) => !s.is_empty(),
            _ => true,
        });
    if lifo { "RPUSH" } else { "LPUSH" }
}

const QUEUE_KEYS: [&str; 8] = [
    "events",
    "failed",
    "wait",
    "meta",
    "active",
    "marker",
    "prioritized",
    "pc",
];

/// Each job by BullMQ's own reprocessJob-9, one call per job as `job.retry()` makes it, and
/// the loop guard's count where it retried (what dlqctl ran per job before batching).
async fn retry_one_by_one(db: &RedisDb, ids: &[String]) -> Vec<i64> {
    let mut codes = Vec::new();
    for id in ids {
        let opts: Option<String> = db
            .q(redis::cmd("HGET").arg(format!("bull:q:{id}")).arg("opts"))
            .await;
        let mut c = redis::cmd("EVAL");
        c.arg(VERBATIM).arg(9).arg(format!("bull:q:{id}"));
        for k in ["events", "failed", "wait", "meta", "active", "marker"] {
            c.arg(format!("bull:q:{k}"));
        }
        c.arg("bull:q:prioritized").arg("bull:q:pc");
        c.arg(id)
            .arg(push_of(opts.as_deref()))
            .arg("failedReason")
            .arg("failed")
            .arg("0")
            .arg("0");
        let r: i64 = db.q(&mut c).await;
        if r == 1 {
            let _: i64 = db
                .q(redis::cmd("HINCRBY")
                    .arg(format!("bull:q:{id}"))
                    .arg("dlqctl-redrive-count")
                    .arg(1))
                .await;
        }
        codes.push(r);
    }
    codes
}

/// The batch in one call of dlqctl's script.
async fn retry_batched(db: &RedisDb, ids: &[String]) -> Vec<i64> {
    let mut c = redis::cmd("EVAL");
    c.arg(BATCHED).arg(8);
    for k in QUEUE_KEYS {
        c.arg(format!("bull:q:{k}"));
    }
    c.arg("bull:q:")
        .arg("failedReason")
        .arg("failed")
        .arg("0")
        .arg("0")
        .arg("1")
        .arg(ids);
    db.q(&mut c).await
}

/// Everything in the database, by key (a stream's entries without their time-made ids).
async fn dump(db: &RedisDb) -> BTreeMap<String, String> {
    let keys: Vec<String> = db.q(redis::cmd("KEYS").arg("*")).await;
    let mut out = BTreeMap::new();
    for k in keys {
        let t: String = db.q(redis::cmd("TYPE").arg(&k)).await;
        let v = match t.as_str() {
            "hash" => {
                let h: BTreeMap<String, String> = db.q(redis::cmd("HGETALL").arg(&k)).await;
                format!("{h:?}")
            }
            "list" => format!("{:?}", db.lrange(&k).await),
            "set" => {
                let mut s: Vec<String> = db.q(redis::cmd("SMEMBERS").arg(&k)).await;
                s.sort();
                format!("{s:?}")
            }
            "zset" => {
                let z: Vec<(String, f64)> = db
                    .q(redis::cmd("ZRANGE")
                        .arg(&k)
                        .arg(0)
                        .arg(-1)
                        .arg("WITHSCORES"))
                    .await;
                format!("{z:?}")
            }
            "stream" => {
                let x: Vec<(String, Vec<String>)> =
                    db.q(redis::cmd("XRANGE").arg(&k).arg("-").arg("+")).await;
                format!("{:?}", x.into_iter().map(|e| e.1).collect::<Vec<_>>())
            }
            _ => {
                let s: Option<String> = db.q(redis::cmd("GET").arg(&k)).await;
                format!("{s:?}")
            }
        };
        out.insert(format!("{k} ({t})"), v);
    }
    out
}

/// One call of the batched script leaves the database exactly as BullMQ's reprocessJob-9
/// run job by job does (with the loop guard's count), and answers each job's code as it
/// does: on a running queue, a paused one and one at its concurrency, over a mix of every
/// kind of job, an id whose hash is gone (-1), a job someone else retried (-3) and a job
/// named twice (-3 the second time).
#[tokio::test(flavor = "multi_thread")]
async fn the_batched_retry_does_job_by_job_what_reprocess_job_9_does() {
    let cases: [(&[(&str, &str)], usize); 3] = [
        (&[], 0),
        (&[("paused", "1")], 0),
        (&[("concurrency", "2"), ("opts.maxLenEvents", "500")], 2),
    ];
    for (meta, active) in cases {
        let (one, batch) = (RedisDb::new().await, RedisDb::new().await);
        let ids = lay_out(&one, meta, active).await;
        lay_out(&batch, meta, active).await;
        let want = retry_one_by_one(&one, &ids).await;
        let got = retry_batched(&batch, &ids).await;
        assert_eq!(got, want, "codes, meta {meta:?}");
        assert_eq!(
            want.iter().filter(|&&c| c == 1).count(),
            11,
            "the mix retried: {want:?}"
        );
        assert_eq!(
            (want[3], want[want.len() - 2], want[want.len() - 1]),
            (-1, -3, -3),
            "the hash gone, no longer failed, named twice: {want:?}"
        );
        let (a, b) = (dump(&one).await, dump(&batch).await);
        for (k, v) in &a {
            assert_eq!(b.get(k), Some(v), "{k}, meta {meta:?}");
        }
        assert_eq!(
            a.keys().collect::<Vec<_>>(),
            b.keys().collect::<Vec<_>>(),
            "meta {meta:?}"
        );
    }
}

/// An unfiltered redrive claims the failed jobs by id alone (no hash read) and retries them
/// in one script call per batch: BullMQ's own Worker then runs each under its id, each job
/// carries the loop guard's count, and an id in `failed` whose hash is gone is not offered:
/// left where it is (not lost, not pushed) and reported apart, not as failed (exit 1).
#[tokio::test(flavor = "multi_thread")]
async fn an_unfiltered_redrive_retries_by_id_and_counts_a_vanished_job() {
    let db = RedisDb::new().await;
    db.bullmq_worker(&["seed", "pay", "6", "ord"]);
    let _: i64 = db
        .q(redis::cmd("ZADD")
            .arg("bull:pay:failed")
            .arg(1)
            .arg("ghost"))
        .await;
    let sb = Sandbox::new();
    let r = sb
        .run(&[
            "redrive",
            &db.bullmq("pay"),
            "--batch-size",
            "4",
            "--yes",
            "--output",
            "json",
        ])
        .code(1)
        .json();
    assert_eq!(
        (r["moved"].as_u64(), r["failed"].as_u64()),
        (Some(6), Some(0)),
        "{r}"
    );
    assert_ghost_left(&r, "pay", 1);
    assert_eq!(db.zrange("bull:pay:failed").await, vec!["ghost"]);
    let wait = db.lrange("bull:pay:wait").await;
    let ords: HashSet<String> = (0..6).map(|i| format!("ord-{i}")).collect();
    assert_eq!(wait.len(), 6, "{wait:?}");
    assert_eq!(wait.iter().cloned().collect::<HashSet<_>>(), ords);
    for id in &ords {
        let n: Option<i64> = db
            .q(redis::cmd("HGET")
                .arg(format!("bull:pay:{id}"))
                .arg("dlqctl-redrive-count"))
            .await;
        assert_eq!(n, Some(1), "{id}");
    }
    db.bullmq_worker(&["work", "pay", "6"]);
    let done: HashSet<String> = db.lrange("fixture:done").await.into_iter().collect();
    assert_eq!(done, ords);
}

/// Two operators retrying one BullMQ queue at once never both retry a job: each id is pushed
/// once, and every job is retried by one of them (the second refused by the first's lock, or
/// after it: `redis_lock.rs`).
#[tokio::test(flavor = "multi_thread")]
async fn two_operators_never_both_retry_a_bullmq_job() {
    let db = RedisDb::new().await;
    seed_bullmq(&db, "q", 400).await;
    let sb = Sandbox::new();
    let url = db.bullmq("q");
    let spawn = || {
        sb.cmd(&[
            "redrive",
            &url,
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
    assert_eq!(moved(a) + moved(b), 400);
    let wait = db.lrange("bull:q:wait").await;
    assert_eq!(wait.len(), 400, "each job pushed once");
    assert_eq!(wait.into_iter().collect::<HashSet<_>>().len(), 400);
    assert_eq!(db.zcard("bull:q:failed").await, 0);
}

/// Claiming by ids alone reads each next page in the round trip of the last batch's retry:
/// with `--max` the last claim is smaller than the page read ahead, which is then read again
/// from where it began; jobs sharing one score (read in byte order) are each retried once.
#[tokio::test(flavor = "multi_thread")]
async fn the_page_read_ahead_gives_way_to_max_and_shared_scores() {
    let db = RedisDb::new().await;
    let ids = seed_bullmq(&db, "q", 10).await;
    let mut p = redis::pipe();
    for id in &ids {
        p.cmd("ZADD").arg("bull:q:failed").arg(1000).arg(id);
    }
    let mut con = db.con.clone();
    let _: Value = p.query_async(&mut con).await.unwrap();
    let sb = Sandbox::new();
    let run = |max: &str| {
        let mut args = vec![
            "redrive".to_string(),
            db.bullmq("q"),
            "--batch-size".into(),
            "3".into(),
            "--yes".into(),
            "--output".into(),
            "json".into(),
        ];
        if !max.is_empty() {
            args.extend(["--max".to_string(), max.to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        sb.run(&args).ok().json()
    };
    let r = run("7");
    assert_eq!(r["moved"], 7, "{r}");
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(db.zrange("bull:q:failed").await, sorted[7..].to_vec());
    let r = run("");
    assert_eq!(r["moved"], 3, "{r}");
    let wait = db.lrange("bull:q:wait").await;
    assert_eq!(wait.len(), 10, "{wait:?}");
    assert_eq!(
        wait.into_iter().collect::<HashSet<_>>(),
        ids.into_iter().collect::<HashSet<_>>()
    );
}

/// The loop guard on an unfiltered BullMQ run reads each job's `dlqctl-redrive-count` alone
/// (not the whole hash): a job retried `--max-redrives` times already stays failed (held), the
/// others are retried with one more on their count.
#[tokio::test(flavor = "multi_thread")]
async fn the_loop_guard_reads_the_count_alone_and_holds_a_bullmq_job() {
    let db = RedisDb::new().await;
    seed_bullmq(&db, "q", 3).await;
    let _: i64 = db
        .q(redis::cmd("HSET")
            .arg("bull:q:m-1")
            .arg("dlqctl-redrive-count")
            .arg(2))
        .await;
    let sb = Sandbox::new();
    let run = |max: &str| {
        sb.run(&[
            "redrive",
            &db.bullmq("q"),
            "--max-redrives",
            max,
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json()
    };
    let r = run("2");
    assert_eq!(
        (r["moved"].as_u64(), r["held"].as_u64()),
        (Some(2), Some(1)),
        "{r}"
    );
    assert_eq!(db.zrange("bull:q:failed").await, vec!["m-1"]);
    let count = |id: &str| {
        let id = id.to_string();
        let db = &db;
        async move {
            let n: Option<i64> = db
                .q(redis::cmd("HGET")
                    .arg(format!("bull:q:{id}"))
                    .arg("dlqctl-redrive-count"))
                .await;
            n
        }
    };
    assert_eq!((count("m-0").await, count("m-2").await), (Some(1), Some(1)));
    let r = run("3");
    assert_eq!(r["moved"], 1, "{r}");
    assert_eq!(count("m-1").await, Some(3));
    assert_eq!(db.zcard("bull:q:failed").await, 0);
}

/// The one `unaccounted` line of a run that left `n` BullMQ ids without a job hash in
/// `bull:QUEUE:failed`: the reason, and the purge that removes them.
fn assert_ghost_left(r: &serde_json::Value, queue: &str, n: u64) {
    let u = r["unaccounted"].as_array().unwrap_or_else(|| panic!("{r}"));
    assert_eq!(u.len(), 1, "{r}");
    assert_eq!(u[0]["count"], n, "{r}");
    let why = u[0]["reason"].as_str().unwrap();
    assert!(
        why.contains(&format!("ids in bull:{queue}:failed with no job hash"))
            && why.contains("nothing to retry")
            && why.contains("dlqctl purge")
            && why.contains(".meta.no_job_hash != null"),
        "{why}"
    );
    assert!(r["failures"].as_array().is_none_or(Vec::is_empty), "{r}");
}

/// Ids in `failed` without a job hash: every redrive (unfiltered by id, filtered by hash, its
/// dry run) leaves them and says so, apart from what failed (exit 1); the purge that the
/// reason names removes them alone, atomically, each archived with a record that says it had
/// no job hash; the script leaves an id whose hash appeared meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn ids_without_a_job_hash_are_left_by_a_redrive_and_removed_by_a_purge() {
    let db = RedisDb::new().await;
    seed_bullmq(&db, "q", 3).await;
    for ghost in ["ghost-1", "ghost-2"] {
        let _: i64 = db
            .q(redis::cmd("ZADD").arg("bull:q:failed").arg(5).arg(ghost))
            .await;
    }
    let sb = Sandbox::new();
    let url = db.bullmq("q");
    let run = |extra: &[&str]| {
        let mut args = vec!["redrive", url.as_str(), "--yes", "--output", "json"];
        args.extend_from_slice(extra);
        sb.run(&args).code(1).json()
    };
    // A filtered dry run and a filtered run (the hashes read) leave them, said apart.
    let r = run(&["--where", ".json.n >= 1", "--dry-run"]);
    assert_eq!(r["moved"], 2, "{r}");
    assert_ghost_left(&r, "q", 2);
    let r = run(&["--where", ".json.n >= 1"]);
    assert_eq!(
        (r["moved"].as_u64(), r["failed"].as_u64()),
        (Some(2), Some(0)),
        "{r}"
    );
    assert_ghost_left(&r, "q", 2);
    // The purge the reason names: its dry run counts the two ids alone.
    let d = sb
        .run(&[
            "purge",
            &url,
            "--where",
            ".meta.no_job_hash != null",
            "--no-archive",
            "--dry-run",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(
        (d["would_remove"].as_u64(), d["skipped"].as_u64()),
        (Some(2), Some(1)),
        "{d}"
    );
    // The purge: the two ids alone, each archived as a record of why.
    let archive = sb.path("ghosts.jsonl");
    let p = sb
        .run(&[
            "purge",
            &url,
            "--where",
            ".meta.no_job_hash != null",
            "--archive",
            archive.to_str().unwrap(),
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(
        (p["moved"].as_u64(), p["skipped"].as_u64()),
        (Some(2), Some(1)),
        "{p}"
    );
    assert_eq!(db.zrange("bull:q:failed").await, vec!["m-0"]);
    let records = std::fs::read_to_string(&archive).unwrap();
    assert_eq!(records.lines().count(), 2, "{records}");
    for line in records.lines() {
        let rec: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(
            rec["meta"]["no_job_hash"]
                .as_str()
                .is_some_and(|w| w.contains("no job hash")),
            "{rec}"
        );
    }
    // With none left, a redrive ends clean.
    let r = sb
        .run(&["redrive", &url, "--yes", "--output", "json"])
        .ok()
        .json();
    assert_eq!(r["moved"], 1, "{r}");
    // The script removes an id only while it has no job hash, and that member alone.
    let script = include_str!("../../src/backend/redis/bullmq_removeGhost.lua");
    let _: i64 = db
        .q(redis::cmd("ZADD")
            .arg("bull:q:failed")
            .arg(5)
            .arg("back")
            .arg(6)
            .arg("other"))
        .await;
    let _: i64 = db
        .q(redis::cmd("HSET").arg("bull:q:back").arg("data").arg("{}"))
        .await;
    let remove = |id: &str| {
        let mut c = redis::cmd("EVAL");
        c.arg(script)
            .arg(2)
            .arg(format!("bull:q:{id}"))
            .arg("bull:q:failed")
            .arg(id);
        c
    };
    let code: i64 = db.q(&mut remove("back")).await;
    assert_eq!(code, -1, "a job hash now: left");
    let code: i64 = db.q(&mut remove("other")).await;
    assert_eq!(code, 1);
    let code: i64 = db.q(&mut remove("other")).await;
    assert_eq!(code, 0);
    assert_eq!(db.zrange("bull:q:failed").await, vec!["back"]);
}

/// The plan counted ids in `failed` with no job hash among the jobs it would move, while the
/// run left them and reported them apart. The plan now counts the jobs alone and says the ids
/// apart (its `left` row), as the summary does.
#[tokio::test(flavor = "multi_thread")]
async fn the_plan_counts_ids_without_a_job_hash_apart() {
    let db = RedisDb::new().await;
    seed_bullmq(&db, "q", 3).await;
    let _: i64 = db
        .q(redis::cmd("ZADD")
            .arg("bull:q:failed")
            .arg(5)
            .arg("ghost-1"))
        .await;
    let sb = Sandbox::new();
    let url = db.bullmq("q");
    let d = sb
        .run(&["redrive", &url, "--dry-run", "--output", "table"])
        .code(1);
    let plan = d.stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(plan.contains("would move ┆ 3 of 3 "), "{}", d.stderr);
    assert!(
        plan.contains("left ┆ 1: ids in bull:q:failed with no job hash (e.g. ghost-1;"),
        "{}",
        d.stderr
    );
}
