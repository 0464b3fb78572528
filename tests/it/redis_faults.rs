//! A key of another type than the library gives it, in the middle of a retry in place. Redis
//! keeps what a script wrote before an error stopped it, so the retry scripts check every key a
//! write could fail on before writing: a job whose own keys are wrong is refused alone and left
//! where it is, the others of its batch are retried; a queue key that is wrong refuses the whole
//! call and changes nothing (docs/systems/sidekiq.md, docs/systems/bullmq.md).

use std::collections::HashSet;

use crate::harness::Sandbox;
use crate::redis_harness::{RedisDb, seed_bullmq, seed_sidekiq};

fn set(ids: Vec<String>) -> HashSet<String> {
    ids.into_iter().collect()
}

/// A dead Sidekiq job (`member`, as seeded) as another job: its `jid` and `queue` replaced.
fn variant(member: &str, jid: &str, queue: &str) -> String {
    let mut job: serde_json::Value = serde_json::from_str(member).unwrap();
    job["jid"] = jid.into();
    job["queue"] = queue.into();
    job.to_string()
}

/// BullMQ: a failed id whose key is a string (`m-1z`), between good jobs, in one batch.
#[tokio::test(flavor = "multi_thread")]
async fn a_bullmq_job_of_another_type_strands_no_other_job_of_its_batch() {
    let db = RedisDb::new().await;
    let ids = seed_bullmq(&db, "u", 3).await;
    // Between m-1 and m-2 in the failed set's order.
    let score: f64 = db
        .q(redis::cmd("ZSCORE").arg("bull:u:failed").arg("m-1"))
        .await;
    let _: i64 = db
        .q(redis::cmd("ZADD")
            .arg("bull:u:failed")
            .arg(score)
            .arg("m-1z"))
        .await;
    let _: () = db.q(redis::cmd("SET").arg("bull:u:m-1z").arg("x")).await;
    let r = Sandbox::new()
        .run(&["redrive", &db.bullmq("u"), "--yes", "--output", "json"])
        .code(1)
        .json();
    assert_eq!(
        (r["moved"].as_u64(), r["failed"].as_u64()),
        (Some(3), Some(1)),
        "{r}"
    );
    assert!(r.to_string().contains("another type than a hash"), "{r}");
    assert_eq!(set(db.lrange("bull:u:wait").await), set(ids));
    assert_eq!(db.zrange("bull:u:failed").await, vec!["m-1z"]);
}

/// BullMQ: the queue's `wait` list is a string: the call is refused before any write.
#[tokio::test(flavor = "multi_thread")]
async fn a_bullmq_queue_key_of_another_type_refuses_the_retry_and_changes_nothing() {
    let db = RedisDb::new().await;
    let ids = seed_bullmq(&db, "v", 3).await;
    let _: () = db.q(redis::cmd("SET").arg("bull:v:wait").arg("x")).await;
    let before: Vec<(String, String)> = db.q(redis::cmd("HGETALL").arg("bull:v:m-0")).await;
    let r = Sandbox::new().run(&["redrive", &db.bullmq("v"), "--yes", "--output", "json"]);
    let r = r.code(3);
    assert!(
        r.stderr.contains("bull:v:wait holds a string") && r.stderr.contains("nothing was changed"),
        "{}",
        r.stderr
    );
    assert_eq!(set(db.zrange("bull:v:failed").await), set(ids));
    let after: Vec<(String, String)> = db.q(redis::cmd("HGETALL").arg("bull:v:m-0")).await;
    assert_eq!(before, after);
    let events: u64 = db.q(redis::cmd("EXISTS").arg("bull:v:events")).await;
    assert_eq!(events, 0);
}

/// Sidekiq: a dead job whose queue's key is a string, between good jobs, in one batch.
#[tokio::test(flavor = "multi_thread")]
async fn a_sidekiq_job_whose_queue_is_another_type_strands_no_other_job() {
    let db = RedisDb::new().await;
    let ids = seed_sidekiq(&db, 3).await;
    let dead = db.zrange("dead").await;
    let bad = variant(&dead[1], "bad-1", "broken");
    let score: f64 = db.q(redis::cmd("ZSCORE").arg("dead").arg(&dead[1])).await;
    let _: i64 = db
        .q(redis::cmd("ZADD").arg("dead").arg(score).arg(&bad))
        .await;
    let _: () = db.q(redis::cmd("SET").arg("queue:broken").arg("x")).await;
    let r = Sandbox::new()
        .run(&["redrive", &db.sidekiq(), "--yes", "--output", "json"])
        .code(1)
        .json();
    assert_eq!(
        (r["moved"].as_u64(), r["failed"].as_u64()),
        (Some(3), Some(1)),
        "{r}"
    );
    assert!(
        r.to_string().contains("queue:broken holds another type"),
        "{r}"
    );
    assert_eq!(set(db.sidekiq_queue_jids("default").await), set(ids));
    assert_eq!(db.sidekiq_dead_jids().await, vec!["bad-1"]);
}

/// Sidekiq: `queues` is a string: the call is refused before any write.
#[tokio::test(flavor = "multi_thread")]
async fn a_sidekiq_queues_key_of_another_type_refuses_the_retry_and_changes_nothing() {
    let db = RedisDb::new().await;
    let ids = seed_sidekiq(&db, 3).await;
    let _: () = db.q(redis::cmd("SET").arg("queues").arg("x")).await;
    let r = Sandbox::new()
        .run(&["redrive", &db.sidekiq(), "--yes"])
        .code(3);
    assert!(r.stderr.contains("queues holds a string"), "{}", r.stderr);
    assert_eq!(set(db.sidekiq_dead_jids().await), set(ids));
    assert_eq!(db.llen("queue:default").await, 0);
}

/// Sidekiq: a dry run predicts the dead jobs a retry in place leaves dead before trying (what
/// Sidekiq's push would refuse), and the run refuses exactly those, leaving them dead.
#[tokio::test(flavor = "multi_thread")]
async fn a_sidekiq_dry_run_predicts_the_jobs_its_push_would_refuse() {
    let db = RedisDb::new().await;
    let ids = seed_sidekiq(&db, 3).await;
    let dead = db.zrange("dead").await;
    let no_queue = variant(&dead[0], "empty-queue", "");
    for (i, member) in ["this is not json", "[1,2,3]", &no_queue]
        .iter()
        .enumerate()
    {
        let _: i64 = db
            .q(redis::cmd("ZADD").arg("dead").arg(1 + i).arg(*member))
            .await;
    }
    let sb = Sandbox::new();
    let args = ["redrive", &db.sidekiq(), "--yes", "--output", "json"];
    let dry = sb.run(&[&args[..], &["--dry-run"]].concat()).code(1).json();
    let run = sb.run(&args).code(1).json();
    crate::harness::assert_dry_run_predicted(&dry, &run);
    assert_eq!(
        (run["moved"].as_u64(), run["failed"].as_u64()),
        (Some(3), Some(3)),
        "{run}"
    );
    assert!(
        run.to_string()
            .contains("Job must include a valid queue name"),
        "{run}"
    );
    assert_eq!(set(db.sidekiq_queue_jids("default").await), set(ids));
    assert_eq!(db.zcard("dead").await, 3);
}
