//! Operator report op7 (2026-12-06): what a Redis run says when something changes under it: its
//! connection killed (`CLIENT KILL`), jobs removed by someone else, the set's key replaced by
//! another type. Each waits on conditions (the jobs the run retried so far), never on sleeps.

use std::collections::HashSet;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::harness::Sandbox;
use crate::pair::wait_until;
use crate::redis_harness::{RedisDb, seed_bullmq, seed_sidekiq};

/// A slow redrive of `url` (20 jobs a second, batches of 10), JSON summary on stdout.
pub fn spawn_slow(sb: &Sandbox, url: &str) -> Child {
    sb.cmd(&[
        "redrive",
        url,
        "--yes",
        "--rate",
        "20",
        "--batch-size",
        "10",
        "--output",
        "json",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("start dlqctl")
}

/// How many jobs the run retried so far: BullMQ's `wait`, Sidekiq's `queue:default`.
pub async fn retried(db: &RedisDb, bull: bool) -> u64 {
    db.llen(if bull { "bull:k:wait" } else { "queue:default" })
        .await
}

/// A connection killed mid-run (`CLIENT KILL ID`) said `cannot reach redis://…: broken pipe`
/// with the hint `check the host, port and network`, as if the server could not be reached.
/// Now it says the connection was dropped mid-run, nothing was lost, re-run to continue (exit
/// 3, no hint); and the re-run finishes.
#[tokio::test(flavor = "multi_thread")]
async fn a_connection_killed_mid_run_says_nothing_was_lost_and_the_rerun_finishes() {
    for bull in [true, false] {
        let db = RedisDb::new().await;
        let (url, ids) = if bull {
            (db.bullmq("k"), seed_bullmq(&db, "k", 300).await)
        } else {
            (db.sidekiq(), seed_sidekiq(&db, 300).await)
        };
        let sb = Sandbox::new();
        let child = spawn_slow(&sb, &url);
        wait_until(Duration::from_secs(30), "jobs retried", || async {
            retried(&db, bull).await >= 40
        })
        .await;
        // Every client of this database but the test's own is the run's.
        let own: i64 = db.q(redis::cmd("CLIENT").arg("ID")).await;
        let list: String = db.q(redis::cmd("CLIENT").arg("LIST")).await;
        let want = format!(" db={} ", db.db);
        let theirs: Vec<String> = list
            .lines()
            .filter(|l| l.contains(&want))
            .filter_map(|l| l.strip_prefix("id="))
            .filter_map(|l| l.split(' ').next())
            .filter(|id| *id != own.to_string())
            .map(str::to_string)
            .collect();
        assert!(!theirs.is_empty(), "the run's connection: {list}");
        for id in &theirs {
            let _: redis::Value = db
                .q(redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id))
                .await;
        }
        let out = child.wait_with_output().expect("dlqctl ends");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "bullmq {bull}: {stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "bullmq {bull}: {stderr}");
        assert!(
            errors[0].contains("dropped mid-run")
                && errors[0].contains("nothing was lost, re-run to continue")
                && !errors[0].contains("cannot reach"),
            "bullmq {bull}: {stderr}"
        );
        assert!(!stderr.contains("hint:"), "bullmq {bull}: {stderr}");
        sb.run(&["redrive", &url, "--yes", "--output", "json"]).ok();
        let now: HashSet<String> = if bull {
            db.lrange("bull:k:wait").await.into_iter().collect()
        } else {
            db.sidekiq_queue_jids("default").await.into_iter().collect()
        };
        assert_eq!(now, ids.into_iter().collect(), "bullmq {bull}");
        assert_eq!(retried(&db, bull).await, 300, "bullmq {bull}: none twice");
    }
}

/// BullMQ jobs removed whole by someone else mid-run (`job.remove()`: the hash and the id in
/// failed together), in two windows: between the run's read of the ids and its check of their
/// hashes (`EXISTS`), and between that check and the retry (`reprocessJob` answers -1). They
/// were reported as ids still in failed without a job hash, with a purge command to remove
/// them, and as `left in failed`, while failed no longer held them. Now they are reported as
/// removed by someone else, nothing to do. A proxy holds the run's command while the jobs go.
#[tokio::test(flavor = "multi_thread")]
async fn bullmq_jobs_removed_by_someone_else_are_not_reported_as_left_in_failed() {
    use crate::proxy::{Proxy, Trigger, When};
    for (window, command) in [("read-check", "EXISTS"), ("check-retry", "EVALSHA")] {
        let db = RedisDb::new().await;
        seed_bullmq(&db, "k", 200).await;
        let upstream = url::Url::parse(&crate::redis_harness::redis_url()).unwrap();
        let port = upstream.port().unwrap();
        let proxy = Proxy::start(format!("127.0.0.1:{port}").parse().unwrap(), false);
        let url = db
            .bullmq("k")
            .replacen(&format!(":{port}/"), &format!(":{}/", proxy.port), 1);
        let sb = Sandbox::new();
        let child = spawn_slow(&sb, &url);
        wait_until(Duration::from_secs(30), "jobs retried", || async {
            retried(&db, true).await >= 20
        })
        .await;
        proxy.arm(
            Trigger::RedisCommand(command),
            1,
            When::Stall(Duration::from_secs(10)),
        );
        wait_until(Duration::from_secs(30), "the command held", || async {
            proxy.fired() > 0
        })
        .await;
        // What BullMQ's removeJob does to a failed job, for every job still failed: its hash
        // and its id in failed go together.
        let script = "local n = 0 for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do \
             redis.call('DEL', ARGV[1] .. id) redis.call('ZREM', KEYS[1], id) n = n + 1 end return n";
        let removed: i64 = db
            .q(redis::cmd("EVAL")
                .arg(script)
                .arg(1)
                .arg("bull:k:failed")
                .arg("bull:k:"))
            .await;
        assert!(removed > 0, "{window}");
        let out = child.wait_with_output().expect("dlqctl ends");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(1), "{window}: {stdout}\n{stderr}");
        assert_eq!(db.zcard("bull:k:failed").await, 0, "{window}");
        let j: serde_json::Value = serde_json::from_str(&stdout).expect("the summary");
        let said = format!("{}{}", j["failures"], j["unaccounted"]);
        assert!(
            !said.contains("no job hash") && !said.contains("left in failed"),
            "{window}: the jobs are in no set: {said}"
        );
        assert!(said.contains("removed by someone else"), "{window}: {said}");
        let moved = j["moved"].as_u64().unwrap();
        assert_eq!(retried(&db, true).await, moved, "{window}: {j}");
    }
}

/// The failed (dead) set replaced by a key of another type mid-run: the error was the client
/// library's debug form (`Pipeline failures: [(Index 0, error: "dlqctl:": …), (Index 1, error:
/// "WRONGTYPE" …)]`) with a hint that blamed the address. Now one line says the key changed
/// type while the run went and that call changed nothing, with a hint that fits; exit 3.
#[tokio::test(flavor = "multi_thread")]
async fn a_set_replaced_by_another_type_mid_run_is_one_line_that_says_so() {
    for bull in [true, false] {
        let db = RedisDb::new().await;
        let set = if bull { "bull:k:failed" } else { "dead" };
        let (url, _) = if bull {
            (db.bullmq("k"), seed_bullmq(&db, "k", 200).await)
        } else {
            (db.sidekiq(), seed_sidekiq(&db, 200).await)
        };
        let sb = Sandbox::new();
        let child = spawn_slow(&sb, &url);
        wait_until(Duration::from_secs(30), "jobs retried", || async {
            retried(&db, bull).await >= 20
        })
        .await;
        let saved = format!("{set}-saved");
        let _: () = db.q(redis::cmd("RENAME").arg(set).arg(&saved)).await;
        let _: i64 = db.q(redis::cmd("SADD").arg(set).arg("x")).await;
        let out = child.wait_with_output().expect("dlqctl ends");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "bullmq {bull}: {stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "bullmq {bull}: {stderr}");
        assert!(
            errors[0].contains("changed type while the run went")
                && errors[0].contains("nothing was changed by that call")
                && !errors[0].contains("Pipeline"),
            "bullmq {bull}: {stderr}"
        );
        assert!(
            stderr.contains("hint: someone replaced the key during the run")
                && !stderr.contains("is not the job library's"),
            "bullmq {bull}: {stderr}"
        );
        let left = db.zcard(&saved).await;
        assert_eq!(left + retried(&db, bull).await, 200, "bullmq {bull}");
    }
}
