//! Redis job queues beyond the redrive (issue 28): a Sidekiq dead set under a redis-namespace
//! prefix, `tail` and `check` on both libraries, and `rediss://` against a TLS server whose
//! certificate a private CA signed (docs/systems/sidekiq.md, docs/systems/bullmq.md).

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use crate::harness::Sandbox;
use crate::pair::wait_until;
use crate::redis_harness::{RedisDb, seed_bullmq, seed_sidekiq};

/// Every key of the database with its value as text (sorted sets with their scores), for
/// "nothing else changed".
async fn dump(db: &RedisDb) -> BTreeMap<String, String> {
    let keys: Vec<String> = db.q(redis::cmd("KEYS").arg("*")).await;
    let mut out = BTreeMap::new();
    for k in keys {
        let t: String = db.q(redis::cmd("TYPE").arg(&k)).await;
        let v = match t.as_str() {
            "zset" => format!(
                "{:?}",
                db.q::<Vec<(String, f64)>>(
                    redis::cmd("ZRANGE")
                        .arg(&k)
                        .arg(0)
                        .arg(-1)
                        .arg("WITHSCORES")
                )
                .await
            ),
            "list" => format!("{:?}", db.lrange(&k).await),
            "set" => format!(
                "{:?}",
                db.q::<std::collections::BTreeSet<String>>(redis::cmd("SMEMBERS").arg(&k))
                    .await
            ),
            "hash" => format!(
                "{:?}",
                db.q::<BTreeMap<String, String>>(redis::cmd("HGETALL").arg(&k))
                    .await
            ),
            other => other.to_string(),
        };
        out.insert(k, v);
    }
    out
}

fn outside(d: &BTreeMap<String, String>, ns: &str) -> BTreeMap<String, String> {
    d.iter()
        .filter(|(k, _)| !k.starts_with(ns))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// `&namespace=NS` reads and retries `NS:dead` only: peek and inspect see its jobs, a redrive
/// pushes them to `NS:queue:NAME` and names the queue in `NS:queues`, and the keys outside the
/// namespace (another application's `dead`, `queue:default`, `queues`) are left as they were.
#[tokio::test(flavor = "multi_thread")]
async fn a_namespaced_dead_set_is_read_and_retried_within_its_namespace() {
    let db = RedisDb::new().await;
    seed_sidekiq(&db, 3).await;
    let _: () = db.q(redis::cmd("RENAME").arg("dead").arg("app:dead")).await;
    // Outside the namespace: two dead jobs, a waiting job and the queue names.
    seed_sidekiq(&db, 2).await;
    let _: i64 = db
        .q(redis::cmd("LPUSH")
            .arg("queue:default")
            .arg("{\"jid\":\"other\"}"))
        .await;
    let _: i64 = db.q(redis::cmd("SADD").arg("queues").arg("default")).await;
    let before = dump(&db).await;
    let url = format!("{}&namespace=app", db.sidekiq());
    let sb = Sandbox::new();
    let peek = sb
        .run(&["peek", &url, "-n", "10", "--output", "jsonl"])
        .ok()
        .jsonl();
    assert_eq!(peek.len(), 3, "{peek:?}");
    let ins = sb.run(&["inspect", &url, "--output", "json"]).ok().json();
    assert_eq!(ins[0]["facts"]["dead_jobs"], 3, "{ins}");
    let r = sb
        .run(&["redrive", &url, "--id", "m-1", "--yes", "--output", "json"])
        .ok()
        .json();
    assert_eq!(r["moved"], 1, "{r}");
    let r = sb
        .run(&["redrive", &url, "--yes", "--output", "json"])
        .ok()
        .json();
    assert_eq!(r["moved"], 2, "{r}");
    assert_eq!(db.zcard("app:dead").await, 0);
    let pushed: Vec<String> = db
        .lrange("app:queue:default")
        .await
        .iter()
        .map(|j| serde_json::from_str::<serde_json::Value>(j).unwrap()["jid"].to_string())
        .collect();
    assert_eq!(pushed.len(), 3, "{pushed:?}");
    let names: Vec<String> = db.q(redis::cmd("SMEMBERS").arg("app:queues")).await;
    assert_eq!(names, vec!["default"]);
    assert_eq!(
        outside(&dump(&db).await, "app:"),
        outside(&before, "app:"),
        "nothing outside the namespace changed"
    );
}

/// What Sidekiq itself writes under redis-namespace (Sidekiq 6 with `namespace:`, Debian's
/// ruby-redis-namespace): its jobs die into `NS:dead`, `&namespace=NS` retries them into
/// `NS:queue:default`, and the same Sidekiq, still namespaced, runs exactly those jobs.
#[tokio::test(flavor = "multi_thread")]
async fn a_dead_set_sidekiq_wrote_under_a_namespace_is_retried_and_worked_by_it() {
    let db = RedisDb::new().await;
    db.sidekiq_worker_in(Some("shop"), &["seed", "4", "ns"]);
    assert_eq!(
        db.zcard("dead").await,
        0,
        "Sidekiq wrote outside its namespace"
    );
    let dead = db.sidekiq_set_jids("shop:dead").await;
    assert_eq!(dead.len(), 4, "{dead:?}");
    let url = format!("{}&namespace=shop", db.sidekiq());
    let sb = Sandbox::new();
    let r = sb
        .run(&["redrive", &url, "--yes", "--output", "json"])
        .ok()
        .json();
    assert_eq!(r["moved"], 4, "{r}");
    assert_eq!(db.zcard("shop:dead").await, 0);
    db.sidekiq_worker_in(Some("shop"), &["work", "4"]);
    let mut done = db.lrange("shop:fixture:done").await;
    let mut want = dead.clone();
    done.sort();
    want.sort();
    assert_eq!(
        done, want,
        "Sidekiq ran exactly the retried jobs, once each"
    );
}

/// `tail URL` in the background until it has shown `max` jobs (JSON Lines, polling every
/// 100 ms, a minute at most without news).
fn start_tail(sb: &Sandbox, url: &str, max: u32) -> std::process::Child {
    let max = max.to_string();
    sb.cmd(&[
        "tail",
        url,
        "--max",
        &max,
        "--poll-interval",
        "100ms",
        "--idle-timeout",
        "60s",
        "--output",
        "jsonl",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap()
}

/// Wait until a client of `db` has run `cmd` last (tail took its starting point).
async fn client_ran(db: &RedisDb, cmd: &str) {
    let want = format!("db={} ", db.db);
    let last = format!("cmd={cmd}");
    wait_until(Duration::from_secs(20), "tail to start", || async {
        let list: String = db.q(redis::cmd("CLIENT").arg("LIST")).await;
        list.lines()
            .any(|l| l.contains(&want) && l.contains(&last) && !l.contains("cmd=client"))
    })
    .await;
}

/// `tail` shows a job that dies after it started (Sidekiq's processor and a BullMQ Worker kill
/// one), not the ones dead before.
#[tokio::test(flavor = "multi_thread")]
async fn tail_sees_a_job_that_dies_after_it_started() {
    for bull in [false, true] {
        let db = RedisDb::new().await;
        let url = if bull {
            seed_bullmq(&db, "tq", 2).await;
            db.bullmq("tq")
        } else {
            seed_sidekiq(&db, 2).await;
            db.sidekiq()
        };
        let sb = Sandbox::new();
        let child = start_tail(&sb, &url, 1);
        client_ran(&db, "zrange").await;
        if bull {
            db.bullmq_worker(&["seed", "tq", "1", "new"]);
        } else {
            db.sidekiq_worker(&["seed", "1", "new"]);
        }
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "bullmq {bull}: {err}");
        let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1, "bullmq {bull}: {lines:?}");
        let id = lines[0]["id"].as_str().unwrap();
        assert!(!id.starts_with("m-"), "bullmq {bull}: an old job: {id}");
        if bull {
            assert_eq!(id, "new-0");
        }
    }
}

/// `tail` follows the set by member: a job that appears with a score below the last one it
/// saw (Sidekiq's retry set is scored by the next attempt; a death written late by another
/// process) is shown, once; the ones there before are not.
#[tokio::test(flavor = "multi_thread")]
async fn tail_sees_a_job_scored_below_the_last_one_it_saw() {
    let db = RedisDb::new().await;
    seed_sidekiq(&db, 2).await;
    let sb = Sandbox::new();
    let child = start_tail(&sb, &db.sidekiq(), 2);
    client_ran(&db, "zrange").await;
    // Give the tail a poll or two past the jobs already there.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let first: Vec<(String, f64)> = db
        .q(redis::cmd("ZRANGE")
            .arg("dead")
            .arg(0)
            .arg(0)
            .arg("WITHSCORES"))
        .await;
    let (member, lowest) = &first[0];
    let add = |jid: &str, score: f64| {
        let mut job: serde_json::Value = serde_json::from_str(member).unwrap();
        job["jid"] = jid.into();
        let mut cmd = redis::cmd("ZADD");
        cmd.arg("dead").arg(score).arg(job.to_string());
        cmd
    };
    // Below every score the tail saw, then above.
    let _: i64 = db.q(&mut add("late", lowest - 30.0)).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let _: i64 = db.q(&mut add("fresh", lowest + 120.0)).await;
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids, ["late", "fresh"], "{err}");
}

/// `check --max-messages`, `--max-class` and `--max-age` on both libraries: 0 within the
/// limits, 1 over one (docs/exit-codes.md); nothing is changed by checking.
#[tokio::test(flavor = "multi_thread")]
async fn check_holds_both_libraries_to_their_limits() {
    let db = RedisDb::new().await;
    seed_sidekiq(&db, 3).await;
    seed_bullmq(&db, "q", 4).await;
    // One job of each first enqueued in 2020.
    let first: Vec<String> = db.q(redis::cmd("ZRANGE").arg("dead").arg(0).arg(0)).await;
    let mut old: serde_json::Value = serde_json::from_str(&first[0]).unwrap();
    old["created_at"] = serde_json::json!(1577836800.0);
    let _: i64 = db.q(redis::cmd("ZREM").arg("dead").arg(&first[0])).await;
    let _: i64 = db
        .q(redis::cmd("ZADD")
            .arg("dead")
            .arg(1577836801.0)
            .arg(old.to_string()))
        .await;
    let _: i64 = db
        .q(redis::cmd("HSET")
            .arg("bull:q:m-0")
            .arg("timestamp")
            .arg("1577836800000"))
        .await;
    let before = dump(&db).await;
    let sb = Sandbox::new();
    for (url, n) in [(db.sidekiq(), 3u64), (db.bullmq("q"), 4)] {
        let check = |args: &[&str]| {
            let mut a = vec!["check", url.as_str()];
            a.extend_from_slice(args);
            a.extend_from_slice(&["--output", "json"]);
            sb.run(&a)
        };
        let r = check(&["--max-messages", &n.to_string()]);
        assert_eq!(r.code, 0, "{url}: {}\n{}", r.stdout, r.stderr);
        let r = check(&["--max-messages", &(n - 1).to_string()]);
        assert_eq!(r.code, 1, "{url}: {}\n{}", r.stdout, r.stderr);
        // A class the jobs have, at its count and one under.
        let kinds = sb.run(&["classify", &url, "--output", "json"]).ok().json()["kinds"].clone();
        let (class, k) = kinds
            .as_object()
            .unwrap()
            .iter()
            .find_map(|(c, v)| v.as_u64().filter(|&k| k > 0).map(|k| (c.clone(), k)))
            .unwrap_or_else(|| panic!("{url}: {kinds}"));
        let r = check(&["--max-class", &format!("{class}={k}")]);
        assert_eq!(r.code, 0, "{url}: {}\n{}", r.stdout, r.stderr);
        let r = check(&["--max-class", &format!("{class}={}", k - 1)]);
        assert_eq!(r.code, 1, "{url}: {}\n{}", r.stdout, r.stderr);
        // The 2020 job is older than a year; none is older than 100 years.
        let r = check(&["--max-age", "36500d"]);
        assert_eq!(r.code, 0, "{url}: {}\n{}", r.stdout, r.stderr);
        let r = check(&["--max-age", "365d"]);
        assert_eq!(r.code, 1, "{url}: {}\n{}", r.stdout, r.stderr);
    }
    assert_eq!(dump(&db).await, before, "checking changed nothing");
}

/// `dlqctl edit` on both libraries, in place: the edited job is retried under its id with
/// its body as edited (Sidekiq's `args`, BullMQ's `data`), the library's own worker runs it,
/// and the other dead jobs stay as they were: nothing lost, nothing twice. A change to a
/// field that is the library's own is refused, and nothing changes.
#[tokio::test(flavor = "multi_thread")]
async fn edit_retries_the_edited_job_in_place() {
    use crate::terminal::{at_terminal, editor_script};
    let sb = Sandbox::new();
    // The body's "m-1" (the args' second element, the data's `order`), not the id's.
    let fix = editor_script(
        &sb,
        "fix.sh",
        r#"sed -i -e '/"body": \[/,/\]/ s/"m-1"/"fixed-1"/' -e '/"body": {/,/}/ s/"m-1"/"fixed-1"/' "$1""#,
    );
    // A field of the library's own: Sidekiq's `queue`, BullMQ's `name`.
    let meddle = editor_script(
        &sb,
        "meddle.sh",
        r#"sed -i -e 's/"value": "default"/"value": "other"/' -e 's/"value": "charge"/"value": "other"/' "$1""#,
    );
    let edit = |editor: &str, url: &str, id: &str| {
        at_terminal(
            &sb,
            &format!(
                "DLQCTL_STATE_DIR='{}' EDITOR='{editor}' {} edit '{url}' --id {id}",
                sb.path("state").display(),
                env!("CARGO_BIN_EXE_dlqctl"),
            ),
            // A retry in place, asked as one.
            "Retry the job as edited, where it is?",
            b"y",
        )
    };
    for bull in [false, true] {
        let db = RedisDb::new().await;
        let url = if bull {
            seed_bullmq(&db, "q", 3).await;
            db.bullmq("q")
        } else {
            seed_sidekiq(&db, 3).await;
            db.sidekiq()
        };
        let before = dump(&db).await;
        let dead_before = db.zrange("dead").await;
        // A field of m-2 other than its body changed: refused, nothing changed.
        let (code, seen) = edit(&meddle, &url, "m-2");
        assert_eq!(code, 1, "bullmq {bull}: {seen}");
        assert!(
            seen.contains("its other fields are"),
            "bullmq {bull}: {seen}"
        );
        assert_eq!(dump(&db).await, before, "bullmq {bull}: {seen}");

        let (code, seen) = edit(&fix, &url, "m-1");
        assert_eq!(code, 0, "bullmq {bull}: {seen}");
        assert!(seen.contains("its arguments as edited"), "{seen}");
        // m-0, read before m-1, was passed over because it is not the job edited: no filter
        // was given, and the summary does not say there was one.
        assert!(
            seen.contains("skipped 1 (not the message edited)") && !seen.contains("(filter)"),
            "bullmq {bull}: {seen}"
        );
        if bull {
            assert_eq!(db.zrange("bull:q:failed").await, vec!["m-0", "m-2"]);
            assert_eq!(db.lrange("bull:q:wait").await, vec!["m-1"]);
            let data: String = db.q(redis::cmd("HGET").arg("bull:q:m-1").arg("data")).await;
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&data).unwrap(),
                serde_json::json!({"n": 1, "order": "fixed-1"})
            );
            for id in ["m-0", "m-2"] {
                let k = format!("bull:q:{id}");
                assert_eq!(dump(&db).await[&k], before[&k], "{id} untouched");
            }
            db.bullmq_worker(&["work", "q", "1"]);
        } else {
            let dead = db.sidekiq_dead_jids().await;
            assert_eq!(dead, vec!["m-0", "m-2"]);
            assert_eq!(
                db.zrange("dead").await,
                dead_before
                    .iter()
                    .filter(|j| !j.contains("\"jid\":\"m-1\""))
                    .cloned()
                    .collect::<Vec<_>>(),
                "the others byte for byte"
            );
            let queued = db.lrange("queue:default").await;
            assert_eq!(queued.len(), 1, "{queued:?}");
            let job: serde_json::Value = serde_json::from_str(&queued[0]).unwrap();
            assert_eq!(job["jid"], "m-1");
            assert_eq!(job["args"], serde_json::json!([1, "fixed-1"]));
            db.sidekiq_worker(&["work", "1"]);
        }
        assert_eq!(
            db.lrange("fixture:done").await,
            vec!["m-1"],
            "run under its id"
        );
    }
}

/// The edit script sets a job's data and retries it only while the job is failed with the
/// data that was read: data changed meanwhile, or a job no longer failed, is -3 and nothing
/// changes; else the data is set and BullMQ's retry runs (1).
#[tokio::test(flavor = "multi_thread")]
async fn the_bullmq_edit_script_changes_nothing_unless_the_job_is_as_read() {
    // As src/backend/redis/bullmq.rs composes it (EDIT_SCRIPT).
    const EDIT: &str = concat!(
        include_str!("../../src/backend/redis/bullmq_editJob.lua"),
        "local function bullmq_retry()\n",
        include_str!("../../src/backend/redis/bullmq_reprocessJobs.lua"),
        "end\n",
        include_str!("../../src/backend/redis/bullmq_editJobEnd.lua")
    );
    let db = RedisDb::new().await;
    seed_bullmq(&db, "q", 2).await;
    let read: String = db.q(redis::cmd("HGET").arg("bull:q:m-0").arg("data")).await;
    let edit = |id: &str, opened: &str| {
        let mut c = redis::cmd("EVAL");
        c.arg(EDIT).arg(8);
        for k in [
            "events",
            "failed",
            "wait",
            "meta",
            "active",
            "marker",
            "prioritized",
            "pc",
        ] {
            c.arg(format!("bull:q:{k}"));
        }
        c.arg("bull:q:")
            .arg("failedReason")
            .arg("failed")
            .arg("0")
            .arg("0")
            .arg("1")
            .arg(id)
            .arg(opened)
            .arg(r#"{"edited":true}"#);
        c
    };
    let before = dump(&db).await;
    let codes: Vec<i64> = db.q(&mut edit("m-0", r#"{"n":0,"order":"other"}"#)).await;
    assert_eq!(codes, vec![-3], "data changed since it was read");
    let codes: Vec<i64> = db.q(&mut edit("gone", &read)).await;
    assert_eq!(codes, vec![-3], "not failed");
    assert_eq!(dump(&db).await, before, "nothing changed");
    let codes: Vec<i64> = db.q(&mut edit("m-0", &read)).await;
    assert_eq!(codes, vec![1]);
    let data: String = db.q(redis::cmd("HGET").arg("bull:q:m-0").arg("data")).await;
    assert_eq!(data, r#"{"edited":true}"#);
    assert_eq!(db.lrange("bull:q:wait").await, vec!["m-0"]);
    assert_eq!(db.zrange("bull:q:failed").await, vec!["m-1"]);
}

/// inspect says what an empty or short answer may hide: a database with nothing of
/// Sidekiq's (the wrong /DB or namespace=), and BullMQ ids in `failed` without a job hash.
#[tokio::test(flavor = "multi_thread")]
async fn inspect_says_what_no_command_shows() {
    let sb = Sandbox::new();
    let inspect = |url: &str| {
        sb.run(&["inspect", url, "--output", "json"]).ok().json()[0]["notes"].to_string()
    };
    let empty = RedisDb::new().await;
    let notes = inspect(&empty.sidekiq());
    assert!(notes.contains("no Sidekiq keys here"), "{notes}");
    let sk = RedisDb::new().await;
    seed_sidekiq(&sk, 1).await;
    assert!(!inspect(&sk.sidekiq()).contains("no Sidekiq keys"));
    let bq = RedisDb::new().await;
    seed_bullmq(&bq, "g", 2).await;
    let _: i64 = bq
        .q(redis::cmd("ZADD").arg("bull:g:failed").arg(1).arg("ghost"))
        .await;
    let notes = inspect(&bq.bullmq("g"));
    assert!(
        notes.contains("1 of the 3 ids in bull:g:failed have no job hash"),
        "{notes}"
    );
}

/// A dead-set member that is not valid UTF-8 (no job: Sidekiq wrote no such member, another
/// writer did) was shown with an id holding U+FFFD, which no `--id` could select. Its id is
/// now `member-sha256:` and 16 hex digits of its bytes' SHA-256: the same on every read, and
/// selectable.
#[tokio::test(flavor = "multi_thread")]
async fn a_member_that_is_not_utf8_has_an_id_that_selects_it() {
    let db = RedisDb::new().await;
    seed_sidekiq(&db, 1).await;
    let _: i64 = db
        .q(redis::cmd("ZADD")
            .arg("dead")
            .arg(1)
            .arg(&b"{\"jid\":\"x\xff\xfe\"}"[..]))
        .await;
    let sb = Sandbox::new();
    let url = db.sidekiq();
    let ids = |extra: &[&str]| -> Vec<String> {
        let mut a = vec!["peek", url.as_str(), "--output", "jsonl"];
        a.extend_from_slice(extra);
        sb.run(&a)
            .ok()
            .jsonl()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect()
    };
    let all = ids(&[]);
    assert_eq!(all.len(), 2, "{all:?}");
    let odd = all.iter().find(|i| *i != "m-0").unwrap().clone();
    assert!(
        odd.starts_with("member-sha256:") && !odd.contains('\u{fffd}'),
        "{odd}"
    );
    assert_eq!(ids(&[]), all, "stable");
    assert_eq!(ids(&["--id", &odd]), vec![odd.clone()]);
}
