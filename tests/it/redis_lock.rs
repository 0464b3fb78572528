//! One mover of a Redis job set at a time (docs/systems/sidekiq.md#one-mover-at-a-time): a
//! redrive, purge or edit holds `<set>:dlqctl-lock` while it runs; a second mover is refused at
//! once (exit 3) naming the first; reading takes no lock; a lock left by a killed run expires.
//! Deterministic: the lock is held from the test, or the first run is slowed by `--rate` and
//! the test waits for its lock to appear (a condition, with a deadline) before it acts.

use std::time::{Duration, Instant};

use crate::harness::Sandbox;
use crate::redis_harness::{RedisDb, seed_bullmq, seed_sidekiq};

/// Wait until `cond` holds (checked every 20 ms), at most `within`.
async fn until<F, Fut>(what: &str, within: Duration, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while !cond().await {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn exists(db: &RedisDb, key: &str) -> bool {
    db.q::<i64>(redis::cmd("EXISTS").arg(key)).await == 1
}

/// A lock held by someone else (here, the test) refuses every mover of the set at once, exit 3,
/// naming the holder, and changes nothing; reading and a dry run go on; without it, the same
/// redrive runs. For both libraries.
#[tokio::test(flavor = "multi_thread")]
async fn a_held_lock_refuses_every_mover_and_no_reader() {
    for bull in [false, true] {
        let db = RedisDb::new().await;
        let (url, set) = if bull {
            seed_bullmq(&db, "q", 3).await;
            (db.bullmq("q"), "bull:q:failed")
        } else {
            seed_sidekiq(&db, 3).await;
            (db.sidekiq(), "dead")
        };
        let key = format!("{set}:dlqctl-lock");
        let _: () = db
            .q(redis::cmd("SET")
                .arg(&key)
                .arg("ann@ops-1 pid 4242 since 2026-12-06 03:12:40 UTC #00ff")
                .arg("PX")
                .arg(60_000))
            .await;
        let sb = Sandbox::new();
        for args in [
            &["redrive", &url, "--yes"][..],
            &["purge", &url, "--no-archive", "--yes"][..],
        ] {
            let r = sb.run(args).code(3);
            assert!(
                r.stderr
                    .contains(&format!("the set {set} is in use by another dlqctl"))
                    && r.stderr
                        .contains("ann@ops-1 pid 4242 since 2026-12-06 03:12:40 UTC;")
                    && !r.stderr.contains("#00ff")
                    && r.stderr.contains("expires in"),
                "bullmq {bull}: {args:?}: {}",
                r.stderr
            );
        }
        assert_eq!(db.zcard(set).await, 3, "bullmq {bull}: nothing changed");
        sb.run(&["peek", &url, "-n", "5"]).ok();
        sb.run(&["inspect", &url]).ok();
        sb.run(&["redrive", &url, "--dry-run", "--yes"]).ok();
        let holder: String = db.q(redis::cmd("GET").arg(&key)).await;
        assert!(
            holder.starts_with("ann@ops-1"),
            "another's lock is never touched"
        );
        let _: i64 = db.q(redis::cmd("DEL").arg(&key)).await;
        sb.run(&["redrive", &url, "--yes"]).ok();
        assert_eq!(db.zcard(set).await, 0, "bullmq {bull}");
        assert!(!exists(&db, &key).await, "released at the end");
    }
}

/// Two redrives of one set at once: the second is refused at once (exit 3) naming the first
/// (its pid), while the first, renewing its lock past the lock's timeout, moves every job and
/// ends with exit 0. A run killed with SIGKILL leaves its lock, which expires by itself within
/// the timeout; then a re-run moves the rest. Each job is retried once.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_redrive_is_refused_and_a_killed_run_s_lock_expires() {
    let db = RedisDb::new().await;
    seed_sidekiq(&db, 12).await;
    let sb = Sandbox::new();
    // A short lock, so that the first run (3 s at 2/s) outlives it unless renewed, and the
    // killed run's lock expires soon; not so short that a loaded machine's late renewal (every
    // third of it) loses it.
    sb.write("dlqctl.toml", "[redis]\nlock_timeout = \"2s\"\n");
    let url = db.sidekiq();
    let slow = |max: &str| {
        sb.cmd(&[
            "redrive",
            &url,
            "--rate",
            "2/s",
            "--batch-size",
            "1",
            "--max",
            max,
            "--yes",
            "--output",
            "json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
    };
    let first = slow("6");
    until("the first run's lock", Duration::from_secs(20), || {
        exists(&db, "dead:dlqctl-lock")
    })
    .await;
    let r = sb
        .run(&["redrive", &url, "--yes", "--output", "json"])
        .code(3);
    assert!(
        r.stderr
            .contains("the set dead is in use by another dlqctl")
            && r.stderr.contains(&format!(" pid {} since ", first.id())),
        "{}",
        r.stderr
    );
    assert_eq!(r.json()["moved"], 0, "{}", r.stdout);
    let out = first.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["moved"], 6, "{v}");
    assert!(!exists(&db, "dead:dlqctl-lock").await, "released");

    // Killed: the lock stays, then expires by itself.
    let mut killed = slow("6");
    until("the killed run's lock", Duration::from_secs(20), || {
        exists(&db, "dead:dlqctl-lock")
    })
    .await;
    let st = std::process::Command::new("kill")
        .args(["-KILL", &killed.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let _ = killed.wait();
    let pttl: i64 = db.q(redis::cmd("PTTL").arg("dead:dlqctl-lock")).await;
    assert!(
        pttl == -2 || (pttl > 0 && pttl <= 2000),
        "expires (or has), within the timeout: {pttl}"
    );
    until(
        "the killed run's lock to expire",
        Duration::from_secs(5),
        || async { !exists(&db, "dead:dlqctl-lock").await },
    )
    .await;
    // Killed again, holding a lock for a minute: on the same machine a re-run need not wait;
    // it finds the holder gone and takes the lock over at once (else it would be refused).
    sb.write("dlqctl.toml", "[redis]\nlock_timeout = \"60s\"\n");
    let mut killed = slow("3");
    until(
        "the second killed run's lock",
        Duration::from_secs(20),
        || exists(&db, "dead:dlqctl-lock"),
    )
    .await;
    let st = std::process::Command::new("kill")
        .args(["-KILL", &killed.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let _ = killed.wait();
    assert!(exists(&db, "dead:dlqctl-lock").await);
    let r = sb
        .run(&["redrive", &url, "--yes", "--output", "json"])
        .ok()
        .json();
    let queued = db.sidekiq_queue_jids("default").await;
    assert_eq!(queued.len(), 12, "each job once: {r}");
    assert_eq!(
        queued
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        12
    );
    assert_eq!(db.zcard("dead").await, 0);
}

/// A run suspended (SIGSTOP) past its lock's timeout whose lock another run then took claims
/// nothing more once resumed: it stops with exit 3, `lost the lock`, and the jobs it had not
/// retried stay dead (none retried twice).
#[tokio::test(flavor = "multi_thread")]
async fn a_run_that_lost_its_lock_claims_nothing_more() {
    let db = RedisDb::new().await;
    seed_sidekiq(&db, 10).await;
    let sb = Sandbox::new();
    sb.write("dlqctl.toml", "[redis]\nlock_timeout = \"1s\"\n");
    let url = db.sidekiq();
    let run = sb
        .cmd(&[
            "redrive",
            &url,
            "--rate",
            "2/s",
            "--batch-size",
            "1",
            "--yes",
            "--output",
            "json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    until("the run's lock", Duration::from_secs(20), || {
        exists(&db, "dead:dlqctl-lock")
    })
    .await;
    let signal = |sig: &str| {
        let st = std::process::Command::new("kill")
            .args([sig, &run.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    };
    signal("-STOP");
    until(
        "the suspended run's lock to expire",
        Duration::from_secs(5),
        || async { !exists(&db, "dead:dlqctl-lock").await },
    )
    .await;
    // Another holder now (the test, standing for another run).
    let _: () = db
        .q(redis::cmd("SET")
            .arg("dead:dlqctl-lock")
            .arg("bob@ops-2 pid 7 since 2026-12-06 04:00:00 UTC #01")
            .arg("PX")
            .arg(60_000))
        .await;
    let dead_then = db.zcard("dead").await;
    signal("-CONT");
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("lost the lock"), "{stderr}");
    assert!(
        db.zcard("dead").await >= dead_then.saturating_sub(1),
        "at most the batch it had claimed before it was suspended"
    );
    let holder: String = db.q(redis::cmd("GET").arg("dead:dlqctl-lock")).await;
    assert!(
        holder.starts_with("bob@ops-2"),
        "the other's lock is left alone"
    );
    let queued = db.sidekiq_queue_jids("default").await;
    let dead = db.sidekiq_dead_jids().await;
    assert_eq!(queued.len() + dead.len(), 10, "nothing lost or twice");
}
