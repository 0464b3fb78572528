//! The Redis side of the suite: a database of its own per test on the shared server
//! (`scripts/services start redis`), and the job libraries themselves, run by the fixtures
//! under tests/fixtures/ (Sidekiq's processor, a BullMQ Worker).

use std::process::Command;

use redis::aio::MultiplexedConnection;

use crate::harness::repo_root;

/// The server `scripts/services start redis` runs.
pub fn redis_url() -> String {
    std::env::var("DLQCTL_REDIS_URL").unwrap_or_else(|_| {
        panic!("DLQCTL_REDIS_URL is not set: run the suite with `scripts/test` (or `eval \"$(bash scripts/services env)\"` after `scripts/services start redis`)")
    })
}

/// One database of the shared server, emptied, for one test (the server has 1000: numbers
/// are handed out in turn from a counter in database 0).
pub struct RedisDb {
    pub db: i64,
    pub con: MultiplexedConnection,
    /// `redis://HOST:PORT` as dlqctl is told (a proxy's port, once `via` is called).
    pub base: String,
}

impl RedisDb {
    pub async fn new() -> RedisDb {
        let base = redis_url();
        let admin = redis::Client::open(format!("{base}/0")).unwrap();
        let mut a = admin
            .get_multiplexed_async_connection()
            .await
            .expect("redis");
        let n: i64 = redis::cmd("INCR")
            .arg("dlqctl-test:next-db")
            .query_async(&mut a)
            .await
            .unwrap();
        let db = 1 + n.rem_euclid(999);
        let client = redis::Client::open(format!("{base}/{db}")).unwrap();
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        let () = redis::cmd("FLUSHDB").query_async(&mut con).await.unwrap();
        RedisDb { db, con, base }
    }

    /// The database's URL on the real server (for the fixtures).
    pub fn server_url(&self) -> String {
        format!("{}/{}", redis_url(), self.db)
    }

    pub fn sidekiq(&self) -> String {
        format!("{}/{}?system=sidekiq", self.base, self.db)
    }

    pub fn bullmq(&self, queue: &str) -> String {
        format!("{}/{}?system=bullmq&queue={queue}", self.base, self.db)
    }

    pub async fn q<T: redis::FromRedisValue>(&self, cmd: &mut redis::Cmd) -> T {
        let mut con = self.con.clone();
        cmd.query_async(&mut con).await.expect("redis command")
    }

    pub async fn zcard(&self, key: &str) -> u64 {
        self.q(redis::cmd("ZCARD").arg(key)).await
    }

    pub async fn llen(&self, key: &str) -> u64 {
        self.q(redis::cmd("LLEN").arg(key)).await
    }

    pub async fn lrange(&self, key: &str) -> Vec<String> {
        self.q(redis::cmd("LRANGE").arg(key).arg(0).arg(-1)).await
    }

    pub async fn zrange(&self, key: &str) -> Vec<String> {
        self.q(redis::cmd("ZRANGE").arg(key).arg(0).arg(-1)).await
    }

    /// The jids of the jobs waiting in Sidekiq's `queue:NAME`.
    pub async fn sidekiq_queue_jids(&self, queue: &str) -> Vec<String> {
        jids(&self.lrange(&format!("queue:{queue}")).await)
    }

    /// The jids in Sidekiq's dead set.
    pub async fn sidekiq_dead_jids(&self) -> Vec<String> {
        self.sidekiq_set_jids("dead").await
    }

    /// The jids of the jobs in a sorted set of Sidekiq's (`dead`, `retry`, `NS:dead`).
    pub async fn sidekiq_set_jids(&self, key: &str) -> Vec<String> {
        jids(&self.zrange(key).await)
    }

    /// Run Sidekiq's processor (tests/fixtures/sidekiq_worker.rb) on this database.
    pub fn sidekiq_worker(&self, args: &[&str]) {
        self.sidekiq_worker_in(None, args);
    }

    /// Run Sidekiq's processor with its keys under a redis-namespace prefix (`NS:dead`, …).
    pub fn sidekiq_worker_in(&self, namespace: Option<&str>, args: &[&str]) {
        let mut cmd = Command::new("ruby");
        cmd.arg(repo_root().join("tests/fixtures/sidekiq_worker.rb"))
            .args(args)
            .env("REDIS_URL", self.server_url());
        if let Some(ns) = namespace {
            cmd.env("SIDEKIQ_NAMESPACE", ns);
        }
        let out = cmd
            .output()
            .expect("run ruby (scripts/services start redis installs ruby-sidekiq)");
        assert!(
            out.status.success(),
            "sidekiq_worker.rb {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Run a BullMQ Worker (tests/fixtures/bullmq_worker.js) on this database.
    pub fn bullmq_worker(&self, args: &[&str]) {
        let dir = std::env::var("DLQCTL_TEST_BULLMQ_DIR")
            .expect("DLQCTL_TEST_BULLMQ_DIR is not set: scripts/services env sets it");
        let out = Command::new("node")
            .arg(repo_root().join("tests/fixtures/bullmq_worker.js"))
            .args(args)
            .env("REDIS_URL", self.server_url())
            .env("NODE_PATH", format!("{dir}/node_modules"))
            .output()
            .expect("run node");
        assert!(
            out.status.success(),
            "bullmq_worker.js {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Dead jobs as Sidekiq itself writes them, made once per process by its own processor:
/// the pairs copy them (with new jids) to seed forty at a time without a Ruby run each.
static SIDEKIQ_TEMPLATE: tokio::sync::OnceCell<Vec<String>> = tokio::sync::OnceCell::const_new();
/// A failed job's hash and the queue's meta as BullMQ itself writes them.
#[allow(clippy::type_complexity)]
static BULLMQ_TEMPLATE: tokio::sync::OnceCell<(Vec<(String, String)>, Vec<(String, String)>)> =
    tokio::sync::OnceCell::const_new();

/// `n` dead Sidekiq jobs whose jids are `m-0 … m-(n-1)`, copies of ones Sidekiq made.
pub async fn seed_sidekiq(db: &RedisDb, n: usize) -> Vec<String> {
    let template = SIDEKIQ_TEMPLATE
        .get_or_init(|| async {
            let t = RedisDb::new().await;
            t.sidekiq_worker(&["seed", "2", "t"]);
            t.zrange("dead").await
        })
        .await;
    let now = chrono::Utc::now().timestamp_micros() as f64 / 1e6;
    let mut cmd = redis::cmd("ZADD");
    cmd.arg("dead");
    let ids: Vec<String> = (0..n).map(|i| format!("m-{i}")).collect();
    for (i, id) in ids.iter().enumerate() {
        let mut job: serde_json::Value = serde_json::from_str(&template[i % 2]).unwrap();
        job["jid"] = id.clone().into();
        job["args"] = serde_json::json!([i, id]);
        cmd.arg(now - 60.0 + i as f64 * 0.001).arg(job.to_string());
    }
    if n > 0 {
        let _: i64 = db.q(&mut cmd).await;
    }
    ids
}

/// `n` failed BullMQ jobs `m-0 … m-(n-1)` in queue `q`, copies of ones BullMQ made.
pub async fn seed_bullmq(db: &RedisDb, q: &str, n: usize) -> Vec<String> {
    let (job, meta) = BULLMQ_TEMPLATE
        .get_or_init(|| async {
            let t = RedisDb::new().await;
            t.bullmq_worker(&["seed", "tq", "1", "t"]);
            let job: Vec<(String, String)> = t.q(redis::cmd("HGETALL").arg("bull:tq:t-0")).await;
            let meta: Vec<(String, String)> = t.q(redis::cmd("HGETALL").arg("bull:tq:meta")).await;
            (job, meta)
        })
        .await;
    let mut pipe = redis::pipe();
    let mut hset = redis::cmd("HSET");
    hset.arg(format!("bull:{q}:meta"));
    for (k, v) in meta {
        hset.arg(k).arg(v);
    }
    pipe.add_command(hset);
    let now = chrono::Utc::now().timestamp_millis();
    let ids: Vec<String> = (0..n).map(|i| format!("m-{i}")).collect();
    for (i, id) in ids.iter().enumerate() {
        let mut h = redis::cmd("HSET");
        h.arg(format!("bull:{q}:{id}"));
        for (k, v) in job {
            let v = match k.as_str() {
                "data" => serde_json::json!({"n": i, "order": id}).to_string(),
                "opts" => serde_json::json!({"jobId": id, "attempts": 2}).to_string(),
                _ => v.clone(),
            };
            h.arg(k).arg(v);
        }
        pipe.add_command(h);
        pipe.cmd("ZADD")
            .arg(format!("bull:{q}:failed"))
            .arg(now - 60_000 + i as i64)
            .arg(id);
    }
    let mut con = db.con.clone();
    let _: redis::Value = pipe.query_async(&mut con).await.unwrap();
    ids
}

/// The `jid` of each Sidekiq job (its JSON).
fn jids(jobs: &[String]) -> Vec<String> {
    jobs.iter()
        .map(|j| {
            serde_json::from_str::<serde_json::Value>(j).unwrap()["jid"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}
