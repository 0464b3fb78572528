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
