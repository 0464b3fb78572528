//! Backend pairs: a dead-letter queue and the target its redrive writes to, on the real
//! services. The kill and fault suites (`faults.rs`) are functions over a [`Pair`], so that a
//! backend, once it implements `Pair`, is put through all of them.
//!
//! Every pair seeds `n` dead letters whose stable ids are `<prefix>-0 … <prefix>-(n-1)` (a job
//! system's are its job ids), reads back the stable id of every copy in the target, and
//! counts what is left to move.

use std::net::SocketAddr;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use sqlx::{AssertSqlSafe, Row};

use crate::harness::{Db, Kafka, Sandbox, Sqs, demo_pg_url, pg_url, sqs_endpoint};

/// A source and a target, and how dlqctl reaches them.
pub trait Pair {
    /// For failure messages: `pg-same-db`, `sqs-fifo`, ….
    fn name(&self) -> String;
    /// A fresh, empty source and target with `n` dead letters; their stable ids.
    async fn fresh(&mut self, n: usize) -> Vec<String>;
    /// The redrive of the source into the target: `redrive SOURCE [--to TARGET] [options]`.
    fn redrive(&self) -> Vec<String>;
    /// The environment the binary needs (endpoints, state directory).
    fn env(&self, sb: &Sandbox) -> Vec<(String, String)>;
    /// Once a run was killed: wait until what it held is back in the source (SQS: the hidden
    /// messages visible again). Waits on the condition, never a fixed time.
    async fn settle(&self) {}
    /// How many messages the source still has to move.
    async fn remaining(&self) -> u64;
    /// How many copies are in the target so far (cheap; polled while a run goes on).
    async fn copies(&self) -> u64;
    /// The stable id of every copy in the target, one entry per copy (None: the copy carries
    /// no stable id).
    async fn target_ids(&self) -> Vec<Option<String>>;
    /// Whether a message can be copied twice (a move between two systems, re-run after a
    /// crash); where source and target share a transaction, never.
    fn may_duplicate(&self) -> bool;
    /// The server dlqctl talks to, for a proxy to stand in for.
    fn upstream(&self) -> SocketAddr;
    /// From now on, dlqctl reaches the server through `port` (a proxy); the fixture does not.
    fn via(&mut self, port: u16);
    /// Where the copies of a redrive can be read back with `dlqctl peek` (None: a job
    /// system's in-place retry makes no copies).
    fn copies_url(&self) -> Option<String> {
        None
    }
    /// The copies as (stable id, body parsed, `dlqctl-redrive-count`), read back with
    /// `dlqctl peek` from `copies_url`.
    /// From now on (`on`), or no longer, the redrive holds what it claims for longer than a
    /// re-run takes (SQS: a visibility timeout of 300 s instead of 2), so that what a killed
    /// run held is still held when the re-run looks. Backends whose claims end with the
    /// process (row locks, a lease that runs out) need nothing.
    fn hold_long(&mut self, _on: bool) {}
    async fn copy_records(&self, sb: &Sandbox) -> Vec<(String, serde_json::Value, u32)> {
        let Some(url) = self.copies_url() else {
            return Vec::new();
        };
        sb.run_with(
            &["peek", &url, "-n", "1000", "--output", "jsonl"],
            &self.env(sb),
        )
        .ok()
        .jsonl()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap_or_default().to_string(),
                serde_json::from_str(m["body"].as_str().unwrap_or("null")).unwrap_or_default(),
                m["redrive_count"].as_u64().unwrap_or(0) as u32,
            )
        })
        .collect()
    }
}

/// Start `dlqctl redrive` for `p` in the background (it prints JSON to a pipe).
pub fn spawn_redrive<P: Pair>(p: &P, sb: &Sandbox, extra: &[&str]) -> Child {
    let mut args = p.redrive();
    args.extend(["--yes", "--output", "json"].map(String::from));
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sb.cmd(&args)
        .envs(p.env(sb))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start dlqctl")
}

/// Wait for `cond` (polled every 20 ms), up to `limit`.
pub async fn wait_until<F, Fut>(limit: Duration, what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !cond().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn with_port(url: &str, from: u16, to: u16) -> String {
    url.replace(&format!(":{from}/"), &format!(":{to}/"))
}

fn pg_port(url: &str) -> u16 {
    url::Url::parse(url).unwrap().port().unwrap()
}

fn addr_of(url: &str) -> SocketAddr {
    let u = url::Url::parse(url).unwrap();
    format!("{}:{}", u.host_str().unwrap(), u.port().unwrap())
        .parse()
        .unwrap()
}

/// n dead letters `<prefix>-i` in a generic-layout table.
async fn seed_table(db: &Db, prefix: &str, n: usize) -> Vec<String> {
    db.exec(&format!(
        "INSERT INTO {{s}}.dead_letters (message_id, queue, payload, headers, error, attempts, group_key, enqueued_at, failed_at)
         SELECT '{prefix}-'||g, 'orders', jsonb_build_object('order_id', g),
                jsonb_build_object('trace-id', 'tr-'||g), 'upstream call timed out', 5, 'cust-'||(g % 3),
                now() - interval '1 hour', now() - interval '1 minute'
           FROM generate_series(0, {}) g",
        n as i64 - 1
    ))
    .await;
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

async fn table_ids(db: &Db, table: &str) -> Vec<Option<String>> {
    sqlx::query(AssertSqlSafe(format!(
        "SELECT NULLIF(message_id, '') AS id FROM {}.{table}",
        db.schema
    )))
    .fetch_all(&db.pool)
    .await
    .expect("read ids")
    .iter()
    .map(|r| r.get::<Option<String>, _>("id"))
    .collect()
}

/// A dead-letter table and its queue table in one database: each batch moves in one
/// transaction.
pub struct PgSameDb {
    db: Option<Db>,
    port: u16,
}

impl PgSameDb {
    pub fn new() -> PgSameDb {
        PgSameDb {
            db: None,
            port: pg_port(&pg_url()),
        }
    }
    fn db(&self) -> &Db {
        self.db.as_ref().expect("fresh() first")
    }

    /// The dead-letter table's and the queue table's addresses.
    pub fn urls(&self) -> (String, String) {
        (self.db().dlq(), self.db().table_url("queue_messages"))
    }

    /// Change the tables behind dlqctl's back (`{s}` is the schema).
    pub async fn query_strings(&self, sql: &str) -> Vec<String> {
        self.db().query_strings(sql).await
    }

    pub async fn exec(&self, sql: &str) {
        self.db().exec(sql).await;
    }
}

impl Pair for PgSameDb {
    fn copies_url(&self) -> Option<String> {
        Some(self.urls().1)
    }
    async fn settle(&self) {
        self.db().wait_for_dlqctl_to_let_go().await;
    }
    fn name(&self) -> String {
        "pg-same-db".into()
    }
    async fn fresh(&mut self, n: usize) -> Vec<String> {
        let db = Db::new("pair").await;
        let ids = seed_table(&db, "m", n).await;
        self.db = Some(db);
        ids
    }
    fn redrive(&self) -> Vec<String> {
        let url = with_port(&self.db().dlq(), pg_port(&pg_url()), self.port);
        vec!["redrive".into(), url]
    }
    fn env(&self, _sb: &Sandbox) -> Vec<(String, String)> {
        Vec::new()
    }
    async fn remaining(&self) -> u64 {
        self.db().count("dead_letters").await as u64
    }
    async fn copies(&self) -> u64 {
        self.db().count("queue_messages").await as u64
    }
    async fn target_ids(&self) -> Vec<Option<String>> {
        table_ids(self.db(), "queue_messages").await
    }
    fn may_duplicate(&self) -> bool {
        false
    }
    fn upstream(&self) -> SocketAddr {
        addr_of(&pg_url())
    }
    fn via(&mut self, port: u16) {
        self.port = port;
    }
}

/// A dead-letter table in one database, its queue table in another: copied, then deleted.
pub struct PgTwoDb {
    src: Option<Db>,
    dst: Option<Db>,
    port: u16,
}

impl PgTwoDb {
    pub fn new() -> PgTwoDb {
        PgTwoDb {
            src: None,
            dst: None,
            port: pg_port(&pg_url()),
        }
    }
}

impl Pair for PgTwoDb {
    fn copies_url(&self) -> Option<String> {
        Some(self.redrive()[3].clone())
    }
    async fn settle(&self) {
        for db in [&self.src, &self.dst].into_iter().flatten() {
            db.wait_for_dlqctl_to_let_go().await;
        }
    }
    fn name(&self) -> String {
        "pg-two-db".into()
    }
    async fn fresh(&mut self, n: usize) -> Vec<String> {
        let src = Db::new("pair2").await;
        let dst = Db::new_in(&demo_pg_url(), "pair2").await;
        let ids = seed_table(&src, "m", n).await;
        (self.src, self.dst) = (Some(src), Some(dst));
        ids
    }
    fn redrive(&self) -> Vec<String> {
        let (src, dst) = (self.src.as_ref().unwrap(), self.dst.as_ref().unwrap());
        let p = pg_port(&pg_url());
        vec![
            "redrive".into(),
            with_port(
                &format!("{}?table={}.dead_letters", pg_url(), src.schema),
                p,
                self.port,
            ),
            "--to".into(),
            with_port(
                &format!("{}?table={}.queue_messages", demo_pg_url(), dst.schema),
                p,
                self.port,
            ),
        ]
    }
    fn env(&self, _sb: &Sandbox) -> Vec<(String, String)> {
        Vec::new()
    }
    async fn remaining(&self) -> u64 {
        self.src.as_ref().unwrap().count("dead_letters").await as u64
    }
    async fn copies(&self) -> u64 {
        self.dst.as_ref().unwrap().count("queue_messages").await as u64
    }
    async fn target_ids(&self) -> Vec<Option<String>> {
        table_ids(self.dst.as_ref().unwrap(), "queue_messages").await
    }
    fn may_duplicate(&self) -> bool {
        true
    }
    fn upstream(&self) -> SocketAddr {
        addr_of(&pg_url())
    }
    fn via(&mut self, port: u16) {
        self.port = port;
    }
}

/// One job system's dead jobs, seeded `n` at a time, and what "retried" means to it.
struct SystemCase {
    system: &'static str,
    ddl: &'static str,
    /// `n` dead jobs whose keys are 1..=n (uuid systems: the uuid ending in n); `{n}`.
    seed: &'static str,
    /// Dead jobs left.
    dead: &'static str,
    /// The stable id of every retried job (a "copy").
    retried: &'static str,
    /// uuid keys: `00000000-0000-0000-0000-00000000000n`.
    uuid: bool,
}

const UUID: &str = "('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid";

fn system_case(system: &'static str) -> SystemCase {
    let c = |ddl, seed, dead, retried, uuid| SystemCase {
        system,
        ddl,
        seed,
        dead,
        retried,
        uuid,
    };
    match system {
        "river" => c(
            crate::systems::RIVER_DDL,
            "INSERT INTO {s}.river_job (state, attempt, max_attempts, attempted_at, finalized_at, args, errors, kind, queue)
             SELECT 'discarded', 25, 25, now(), now(), jsonb_build_object('order_id', g),
                    ARRAY[jsonb_build_object('at', now(), 'attempt', 25, 'error', 'upstream timed out', 'trace', 'main.go:12')],
                    'charge_card', 'payments' FROM generate_series(1, {n}) g",
            "SELECT count(*) FROM {s}.river_job WHERE state = 'discarded'",
            "SELECT id::text FROM {s}.river_job WHERE state = 'available'",
            false,
        ),
        "oban" => c(
            include_str!("../data/systems/oban.sql"),
            "INSERT INTO {s}.oban_jobs (state, worker, queue, args, errors, attempt, max_attempts, discarded_at)
             SELECT 'discarded', 'MyApp.ChargeCard', 'payments', jsonb_build_object('order_id', g),
                    ARRAY[jsonb_build_object('at', now(), 'attempt', 20, 'error', '** (RuntimeError) upstream timed out')],
                    20, 20, timezone('UTC', now()) FROM generate_series(1, {n}) g",
            "SELECT count(*) FROM {s}.oban_jobs WHERE state = 'discarded'",
            "SELECT id::text FROM {s}.oban_jobs WHERE state = 'available'",
            false,
        ),
        "pgmq" => c(
            include_str!("../data/systems/pgmq.sql"),
            "INSERT INTO pgmq.\"a_{q}\" (msg_id, read_ct, enqueued_at, archived_at, vt, message, headers)
             SELECT g, 5, now(), now(), now(), jsonb_build_object('order_id', g), jsonb_build_object('error', 'upstream timed out')
             FROM generate_series(1, {n}) g",
            "SELECT count(*) FROM pgmq.\"a_{q}\"",
            "SELECT headers->>'dlqctl-stable-id' FROM pgmq.\"q_{q}\"",
            false,
        ),
        "graphile-worker" => c(
            include_str!("../data/systems/graphile-worker.sql"),
            "INSERT INTO {s}._private_tasks (identifier) VALUES ('charge_card');
             INSERT INTO {s}._private_job_queues (queue_name) VALUES ('payments');
             INSERT INTO {s}._private_jobs (job_queue_id, task_id, payload, attempts, max_attempts, last_error)
             SELECT 1, 1, json_build_object('order_id', g), 25, 25, 'Error: upstream timed out' FROM generate_series(1, {n}) g",
            "SELECT count(*) FROM {s}._private_jobs WHERE attempts >= max_attempts",
            "SELECT id::text FROM {s}._private_jobs WHERE attempts = 0",
            false,
        ),
        "solid_queue" => c(
            include_str!("../data/systems/solid_queue.sql"),
            "INSERT INTO {s}.solid_queue_jobs (queue_name, class_name, arguments, active_job_id, created_at, updated_at)
             SELECT 'payments', 'ChargeCardJob', json_build_array(g)::text, md5(g::text), now(), now() FROM generate_series(1, {n}) g;
             INSERT INTO {s}.solid_queue_failed_executions (job_id, error, created_at)
             SELECT id, json_build_object('exception_class', 'Net::ReadTimeout', 'message', 'upstream timed out')::text, now() FROM {s}.solid_queue_jobs",
            "SELECT count(*) FROM {s}.solid_queue_failed_executions",
            "SELECT job_id::text FROM {s}.solid_queue_ready_executions",
            false,
        ),
        "good_job" => c(
            include_str!("../data/systems/good_job.sql"),
            "INSERT INTO {s}.good_jobs (id, queue_name, priority, serialized_params, performed_at, finished_at, error, created_at, updated_at, active_job_id, executions_count, job_class, error_event)
             SELECT {uuid}, 'payments', 0, jsonb_build_object('job_class', 'ChargeCardJob', 'arguments', jsonb_build_array(g)),
                    now(), now(), 'Net::ReadTimeout: upstream timed out', now(), now(), gen_random_uuid(), 5, 'ChargeCardJob', 3
             FROM generate_series(1, {n}) g",
            "SELECT count(*) FROM {s}.good_jobs WHERE finished_at IS NOT NULL",
            "SELECT id::text FROM {s}.good_jobs WHERE finished_at IS NULL",
            true,
        ),
        "que" => c(
            include_str!("../data/systems/que.sql"),
            "INSERT INTO {s}.que_jobs (job_class, queue, error_count, last_error_message, expired_at, args, job_schema_version)
             SELECT 'ChargeCard', 'payments', 15, 'upstream timed out', now(), jsonb_build_array(g), 2 FROM generate_series(1, {n}) g",
            "SELECT count(*) FROM {s}.que_jobs WHERE expired_at IS NOT NULL",
            "SELECT id::text FROM {s}.que_jobs WHERE expired_at IS NULL",
            false,
        ),
        "pg-boss" => c(
            include_str!("../data/systems/pg-boss.sql"),
            "INSERT INTO {s}.job (id, name, data, state, retry_limit, retry_count, started_on, completed_on, output)
             SELECT {uuid}, 'charge-card', jsonb_build_object('order_id', g), 'failed', 2, 2, now(), now(),
                    jsonb_build_object('name', 'Error', 'message', 'upstream timed out') FROM generate_series(1, {n}) g",
            "SELECT count(*) FROM {s}.job WHERE state = 'failed'",
            "SELECT id::text FROM {s}.job WHERE state = 'retry'",
            true,
        ),
        other => panic!("no job system {other}"),
    }
}

/// Dead jobs of a job system, retried in place (a job is dead or retried, never both).
pub struct JobSystem {
    case: SystemCase,
    db: Option<Db>,
    port: u16,
}

/// Dead River jobs (the job system the fault suite uses).
pub struct River;

impl River {
    #[allow(clippy::new_ret_no_self)]
    pub fn new() -> JobSystem {
        JobSystem::new("river")
    }
}

impl JobSystem {
    pub fn new(system: &'static str) -> JobSystem {
        JobSystem {
            case: system_case(system),
            db: None,
            port: pg_port(&pg_url()),
        }
    }
    fn db(&self) -> &Db {
        self.db.as_ref().expect("fresh() first")
    }
    fn queue(&self) -> String {
        format!("{}_q", self.db().schema)
    }
    fn fill(&self, sql: &str) -> String {
        sql.replace("{q}", &self.queue())
            .replace("{uuid}", UUID)
            .replace("{s}", &self.db().schema)
    }
    async fn query(&self, sql: &str) -> Vec<Option<String>> {
        sqlx::query_scalar::<_, Option<String>>(AssertSqlSafe(self.fill(sql)))
            .fetch_all(&self.db().pool)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}: {sql}", self.case.system))
    }
}

impl Pair for JobSystem {
    fn name(&self) -> String {
        self.case.system.into()
    }
    async fn settle(&self) {
        self.db().wait_for_dlqctl_to_let_go().await;
    }
    async fn fresh(&mut self, n: usize) -> Vec<String> {
        let db = Db::new(&format!("pair{}", self.case.system.replace('-', ""))).await;
        self.db = Some(db);
        let ddl = self.fill(self.case.ddl);
        let seed = self.fill(&self.case.seed.replace("{n}", &n.to_string()));
        sqlx::raw_sql(AssertSqlSafe(ddl))
            .execute(&self.db().pool)
            .await
            .unwrap_or_else(|e| panic!("{}: ddl: {e}", self.case.system));
        sqlx::raw_sql(AssertSqlSafe(seed))
            .execute(&self.db().pool)
            .await
            .unwrap_or_else(|e| panic!("{}: seed: {e}", self.case.system));
        (1..=n)
            .map(|i| {
                if self.case.uuid {
                    format!("00000000-0000-0000-0000-{i:012}")
                } else {
                    i.to_string()
                }
            })
            .collect()
    }
    fn redrive(&self) -> Vec<String> {
        let url = with_port(&pg_url(), pg_port(&pg_url()), self.port);
        let params = if self.case.system == "pgmq" {
            format!("system=pgmq&queue={}", self.queue())
        } else {
            format!("system={}&schema={}", self.case.system, self.db().schema)
        };
        vec!["redrive".into(), format!("{url}?{params}")]
    }
    fn env(&self, _sb: &Sandbox) -> Vec<(String, String)> {
        Vec::new()
    }
    async fn remaining(&self) -> u64 {
        let n: i64 = sqlx::query_scalar(AssertSqlSafe(self.fill(self.case.dead)))
            .fetch_one(&self.db().pool)
            .await
            .unwrap();
        n as u64
    }
    async fn copies(&self) -> u64 {
        self.target_ids().await.len() as u64
    }
    async fn target_ids(&self) -> Vec<Option<String>> {
        self.query(self.case.retried).await
    }
    fn may_duplicate(&self) -> bool {
        false
    }
    fn upstream(&self) -> SocketAddr {
        addr_of(&pg_url())
    }
    fn via(&mut self, port: u16) {
        self.port = port;
    }
}

/// An SQS dead-letter queue and a target queue (standard or FIFO), on the emulator.
pub struct SqsPair {
    fifo: bool,
    /// The redrive's `--visibility-timeout`, seconds.
    visibility: u32,
    sqs: Option<Sqs>,
    dlq: String,
    target: String,
    endpoint: String,
}

impl SqsPair {
    pub fn new(fifo: bool) -> SqsPair {
        SqsPair {
            fifo,
            visibility: 2,
            sqs: None,
            dlq: String::new(),
            target: String::new(),
            endpoint: sqs_endpoint(),
        }
    }
    fn sqs(&self) -> &Sqs {
        self.sqs.as_ref().expect("fresh() first")
    }
    async fn count(&self, url: &str, attr: &str) -> u64 {
        self.sqs().attr(url, attr).await.parse().unwrap_or(0)
    }
}

impl Pair for SqsPair {
    fn copies_url(&self) -> Option<String> {
        Some(self.redrive()[3].clone())
    }
    fn name(&self) -> String {
        if self.fifo {
            "sqs-fifo"
        } else {
            "sqs-standard"
        }
        .into()
    }
    async fn fresh(&mut self, n: usize) -> Vec<String> {
        use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
        let sqs = Sqs::new(if self.fifo { "pairf" } else { "pairs" }).await;
        let sfx = if self.fifo { ".fifo" } else { "" };
        let attrs: &[(&str, &str)] = if self.fifo {
            &[("FifoQueue", "true")]
        } else {
            &[]
        };
        let (dlq, _) = sqs.create(&format!("dlq{sfx}"), attrs).await;
        let (target, _) = sqs.create(&format!("target{sfx}"), attrs).await;
        let ids: Vec<String> = (0..n).map(|i| format!("m-{i}")).collect();
        for (c, chunk) in ids.chunks(10).enumerate() {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    let mut e = SendMessageBatchRequestEntry::builder()
                        .id(format!("e{c}-{i}"))
                        .message_body(format!("{{\"order\": \"{id}\"}}"))
                        .message_attributes(
                            "dlqctl-stable-id",
                            MessageAttributeValue::builder()
                                .data_type("String")
                                .string_value(id)
                                .build()
                                .unwrap(),
                        );
                    if self.fifo {
                        e = e
                            .message_group_id(format!("g{}", i % 3))
                            .message_deduplication_id(id);
                    }
                    e.build().unwrap()
                })
                .collect();
            let out = sqs
                .client
                .send_message_batch()
                .queue_url(&dlq)
                .set_entries(Some(entries))
                .send()
                .await
                .expect("seed the DLQ");
            assert!(
                out.failed().is_empty(),
                "seeding failed: {:?}",
                out.failed()
            );
        }
        (self.dlq, self.target) = (dlq, target);
        self.sqs = Some(sqs);
        ids
    }
    fn redrive(&self) -> Vec<String> {
        let name = |url: &str| url.rsplit('/').next().unwrap().to_string();
        vec![
            "redrive".into(),
            format!("sqs://{}", name(&self.dlq)),
            "--to".into(),
            format!("sqs://{}", name(&self.target)),
            // Short, so that what a killed run held is visible again soon.
            "--visibility-timeout".into(),
            self.visibility.to_string(),
        ]
    }
    fn hold_long(&mut self, on: bool) {
        self.visibility = if on { 300 } else { 2 };
    }
    fn env(&self, sb: &Sandbox) -> Vec<(String, String)> {
        let mut env = self.sqs().env(sb);
        env.retain(|(k, _)| k != "AWS_ENDPOINT_URL");
        env.push(("AWS_ENDPOINT_URL".into(), self.endpoint.clone()));
        env
    }
    async fn settle(&self) {
        wait_until(
            Duration::from_secs(30),
            "hidden messages to reappear",
            || async {
                self.count(&self.dlq, "ApproximateNumberOfMessagesNotVisible")
                    .await
                    == 0
            },
        )
        .await;
    }
    async fn remaining(&self) -> u64 {
        self.count(&self.dlq, "ApproximateNumberOfMessages").await
            + self
                .count(&self.dlq, "ApproximateNumberOfMessagesNotVisible")
                .await
    }
    async fn copies(&self) -> u64 {
        self.count(&self.target, "ApproximateNumberOfMessages")
            .await
    }
    async fn target_ids(&self) -> Vec<Option<String>> {
        // A FIFO queue hands out a group's next message only once the one before is deleted:
        // read the target to its end, deleting as it goes (the check is the pair's last use).
        let msgs = if self.fifo {
            self.sqs().drain(&self.target).await
        } else {
            self.sqs().receive_all(&self.target).await
        };
        msgs.iter()
            .map(|m| {
                m.message_attributes()
                    .and_then(|a| a.get("dlqctl-stable-id"))
                    .and_then(|v| v.string_value())
                    .map(str::to_string)
            })
            .collect()
    }
    fn may_duplicate(&self) -> bool {
        true
    }
    fn upstream(&self) -> SocketAddr {
        addr_of(&sqs_endpoint())
    }
    fn via(&mut self, port: u16) {
        self.endpoint = format!("http://127.0.0.1:{port}");
    }
}

/// A dead-letter topic whose records name their original topic (Spring's headers), on a
/// broker: the shared one, or one of the pair's own that advertises a proxy.
pub struct KafkaPair {
    bootstrap: String,
    k: Option<Kafka>,
    /// Messages seeded by the last `fresh`.
    seeded: usize,
    /// A broker of this pair's own (killed with the pair).
    broker: Option<Child>,
}

impl Drop for KafkaPair {
    fn drop(&mut self) {
        if let Some(b) = self.broker.as_mut() {
            let _ = b.kill();
            let _ = b.wait();
        }
    }
}

impl KafkaPair {
    pub fn new() -> KafkaPair {
        KafkaPair {
            bootstrap: crate::harness::kafka_bootstrap(),
            k: None,
            seeded: 0,
            broker: None,
        }
    }

    /// A pair on a tansu of its own, listening on a free port and advertising `advertised`
    /// (a proxy in front of it), so that every client connection goes through the proxy.
    pub async fn own_broker(advertised: u16) -> (KafkaPair, SocketAddr) {
        let bin = std::env::var("DLQCTL_TEST_TANSU_BIN").unwrap_or_else(|_| {
            panic!("DLQCTL_TEST_TANSU_BIN is not set: run the suite with `scripts/test`")
        });
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new(bin)
            .args([
                "broker",
                "--storage-engine",
                "memory://tansu/",
                "--listener-url",
                &format!("tcp://127.0.0.1:{port}"),
                "--advertised-listener-url",
                &format!("tcp://127.0.0.1:{advertised}"),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start tansu");
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        wait_until(Duration::from_secs(30), "tansu to listen", || async {
            std::net::TcpStream::connect(addr).is_ok()
        })
        .await;
        (
            KafkaPair {
                bootstrap: format!("127.0.0.1:{advertised}"),
                k: None,
                seeded: 0,
                broker: Some(child),
            },
            addr,
        )
    }

    fn k(&self) -> &Kafka {
        self.k.as_ref().expect("fresh() first")
    }
}

impl Pair for KafkaPair {
    fn copies_url(&self) -> Option<String> {
        Some(self.k().url("orders"))
    }
    /// Read with the fixture's own consumer: tansu's high watermark is wrong for batched
    /// produces (../shared/reference/kafka.md), so `dlqctl peek` stops early on its copies.
    async fn copy_records(&self, _sb: &Sandbox) -> Vec<(String, serde_json::Value, u32)> {
        let header = |r: &crate::harness::Rec, name: &str| {
            r.4.iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, v)| v.clone())
                .map(|v| String::from_utf8_lossy(&v).into_owned())
        };
        let seeded = self.seeded;
        self.k()
            .read_until("orders", |recs| {
                recs.iter()
                    .filter_map(|r| header(r, "dlqctl-stable-id"))
                    .collect::<std::collections::HashSet<_>>()
                    .len()
                    >= seeded
            })
            .await
            .iter()
            .map(|r| {
                (
                    header(r, "dlqctl-stable-id").unwrap_or_default(),
                    r.3.as_deref()
                        .and_then(|b| serde_json::from_slice(b).ok())
                        .unwrap_or_default(),
                    header(r, "dlqctl-redrive-count")
                        .and_then(|c| c.parse().ok())
                        .unwrap_or(0),
                )
            })
            .collect()
    }
    fn name(&self) -> String {
        "kafka".into()
    }
    async fn fresh(&mut self, n: usize) -> Vec<String> {
        let k = Kafka::at(&self.bootstrap, "pairk", &[]);
        k.create("orders", 2, &[]).await;
        k.create("dlt", 2, &[]).await;
        let orders = k.topic("orders");
        let ids: Vec<String> = (0..n).map(|i| format!("m-{i}")).collect();
        for (i, id) in ids.iter().enumerate() {
            k.produce(
                "dlt",
                Some((i % 2) as i32),
                Some(format!("cust-{}", i % 5).as_bytes()),
                Some(format!("{{\"order\": \"{id}\"}}").as_bytes()),
                &[
                    ("dlqctl-stable-id", Some(id.as_bytes())),
                    ("kafka_dlt-original-topic", Some(orders.as_bytes())),
                ],
            )
            .await;
        }
        self.k = Some(k);
        self.seeded = n;
        ids
    }
    fn redrive(&self) -> Vec<String> {
        vec!["redrive".into(), self.k().url("dlt")]
    }
    fn env(&self, sb: &Sandbox) -> Vec<(String, String)> {
        // A short lease: a re-run after a kill waits for the dead run's lease to run out.
        let cfg = sb.write("kafka-lease.toml", "[kafka]\nlease_timeout = \"2s\"\n");
        let mut env = self.k().env();
        env.push(("DLQCTL_CONFIG".into(), cfg.to_string_lossy().into_owned()));
        env
    }
    async fn remaining(&self) -> u64 {
        let sb = Sandbox::new();
        let r = sb
            .run_with(
                &["inspect", &self.k().url("dlt"), "--output", "json"],
                &self.k().env(),
            )
            .ok()
            .json();
        r[0]["facts"]["redrive_lag"].as_u64().unwrap_or(u64::MAX)
    }
    async fn copies(&self) -> u64 {
        self.k().high_watermarks("orders") as u64
    }
    async fn target_ids(&self) -> Vec<Option<String>> {
        let id = |r: &crate::harness::Rec| {
            r.4.iter()
                .find(|(n, _)| n == "dlqctl-stable-id")
                .and_then(|(_, v)| v.clone())
        };
        let seeded = self.seeded;
        self.k()
            .read_until("orders", |recs| {
                recs.iter()
                    .filter_map(id)
                    .collect::<std::collections::HashSet<_>>()
                    .len()
                    >= seeded
            })
            .await
            .iter()
            .map(|r| {
                r.4.iter()
                    .find(|(n, _)| n == "dlqctl-stable-id")
                    .and_then(|(_, v)| v.clone())
                    .map(|v| String::from_utf8_lossy(&v).into_owned())
            })
            .collect()
    }
    fn may_duplicate(&self) -> bool {
        true
    }
    fn upstream(&self) -> SocketAddr {
        panic!(
            "a Kafka pair is proxied with KafkaPair::own_broker (clients follow the advertised address)"
        )
    }
    fn via(&mut self, _port: u16) {}
}

/// A pair whose dead letters can be seeded as messages dlqctl redrove before (their
/// `dlqctl-redrive-count` set): the loop guard's clause of the contract
/// (`conformance::every_copy_counts_and_the_guard_holds`).
pub trait Redriven: Pair {
    /// `n` fresh dead letters, as [`Pair::fresh`] seeds them, the first `k` of them carrying
    /// `dlqctl-redrive-count = count`; their stable ids.
    async fn fresh_redriven(&mut self, n: usize, k: usize, count: u32) -> Vec<String>;
}

/// Set `dlqctl-redrive-count` on the dead letters with these message ids.
async fn mark_redriven(db: &Db, ids: &[String], count: u32) {
    let list: Vec<String> = ids.iter().map(|i| format!("'{i}'")).collect();
    db.exec(&format!(
        "UPDATE {{s}}.dead_letters SET headers = headers || jsonb_build_object('dlqctl-redrive-count', '{count}')
          WHERE message_id IN ({})",
        list.join(", ")
    ))
    .await;
}

impl Redriven for PgSameDb {
    async fn fresh_redriven(&mut self, n: usize, k: usize, count: u32) -> Vec<String> {
        let ids = self.fresh(n).await;
        mark_redriven(self.db(), &ids[..k], count).await;
        ids
    }
}

impl Redriven for PgTwoDb {
    async fn fresh_redriven(&mut self, n: usize, k: usize, count: u32) -> Vec<String> {
        let ids = self.fresh(n).await;
        mark_redriven(self.src.as_ref().unwrap(), &ids[..k], count).await;
        ids
    }
}

/// A dead-letter table and its queue table in one database, the stable id configured in the
/// body (`id = "json:/order_id"`): the configured id is applied row by row, so a redrive moves
/// each claimed batch row by row (read, insert, delete in the batch's transaction) instead of
/// in one statement.
pub struct PgRowByRow(PgSameDb);

impl PgRowByRow {
    pub fn new() -> PgRowByRow {
        PgRowByRow(PgSameDb::new())
    }
}

impl Pair for PgRowByRow {
    fn copies_url(&self) -> Option<String> {
        self.0.copies_url()
    }
    async fn settle(&self) {
        self.0.settle().await;
    }
    fn name(&self) -> String {
        "pg-same-db-row-by-row".into()
    }
    async fn fresh(&mut self, n: usize) -> Vec<String> {
        self.0.fresh(n).await;
        // The stable id is the body's order_id: 0 … n-1.
        (0..n).map(|i| i.to_string()).collect()
    }
    fn redrive(&self) -> Vec<String> {
        self.0.redrive()
    }
    fn env(&self, sb: &Sandbox) -> Vec<(String, String)> {
        let cfg = sb.write(
            "row-by-row.toml",
            &format!(
                "[queues.rows]\ndlq = \"{}\"\nid = \"json:/order_id\"\n",
                self.0.redrive()[1]
            ),
        );
        vec![("DLQCTL_CONFIG".into(), cfg.to_string_lossy().into_owned())]
    }
    async fn remaining(&self) -> u64 {
        self.0.remaining().await
    }
    async fn copies(&self) -> u64 {
        self.0.copies().await
    }
    async fn target_ids(&self) -> Vec<Option<String>> {
        self.0.target_ids().await
    }
    fn may_duplicate(&self) -> bool {
        false
    }
    fn upstream(&self) -> SocketAddr {
        self.0.upstream()
    }
    fn via(&mut self, port: u16) {
        self.0.via(port);
    }
}

impl Redriven for PgRowByRow {
    async fn fresh_redriven(&mut self, n: usize, k: usize, count: u32) -> Vec<String> {
        self.0.fresh_redriven(n, k, count).await;
        (0..n).map(|i| i.to_string()).collect()
    }
}

impl Redriven for SqsPair {
    async fn fresh_redriven(&mut self, n: usize, k: usize, count: u32) -> Vec<String> {
        use aws_sdk_sqs::types::MessageAttributeValue;
        // Fresh, empty queues; then the dead letters as `fresh` sends them, with the count.
        self.fresh(0).await;
        let text = |v: &str| {
            MessageAttributeValue::builder()
                .data_type("String")
                .string_value(v)
                .build()
                .unwrap()
        };
        let ids: Vec<String> = (0..n).map(|i| format!("m-{i}")).collect();
        for (i, id) in ids.iter().enumerate() {
            let mut send = self
                .sqs()
                .client
                .send_message()
                .queue_url(&self.dlq)
                .message_body(format!("{{\"order\": \"{id}\"}}"))
                .message_attributes("dlqctl-stable-id", text(id));
            if i < k {
                send = send.message_attributes("dlqctl-redrive-count", text(&count.to_string()));
            }
            if self.fifo {
                send = send
                    .message_group_id(format!("g{}", i % 3))
                    .message_deduplication_id(id);
            }
            send.send().await.expect("seed the DLQ");
        }
        ids
    }
}

impl Redriven for KafkaPair {
    async fn fresh_redriven(&mut self, n: usize, k: usize, count: u32) -> Vec<String> {
        // Fresh, empty topics; then the dead letters as `fresh` produces them, with the count.
        self.fresh(0).await;
        let orders = self.k().topic("orders");
        let count = count.to_string();
        let ids: Vec<String> = (0..n).map(|i| format!("m-{i}")).collect();
        for (i, id) in ids.iter().enumerate() {
            let mut headers: Vec<(&str, Option<&[u8]>)> = vec![
                ("dlqctl-stable-id", Some(id.as_bytes())),
                ("kafka_dlt-original-topic", Some(orders.as_bytes())),
            ];
            if i < k {
                headers.push(("dlqctl-redrive-count", Some(count.as_bytes())));
            }
            self.k()
                .produce(
                    "dlt",
                    Some((i % 2) as i32),
                    Some(format!("cust-{}", i % 5).as_bytes()),
                    Some(format!("{{\"order\": \"{id}\"}}").as_bytes()),
                    &headers,
                )
                .await;
        }
        self.seeded = n;
        ids
    }
}

/// Dead Sidekiq jobs (made by Sidekiq itself), retried in place: a "copy" is a job back in
/// `queue:default` under its jid.
pub struct SidekiqPair {
    db: Option<crate::redis_harness::RedisDb>,
    port: Option<u16>,
}

impl SidekiqPair {
    pub fn new() -> SidekiqPair {
        SidekiqPair {
            db: None,
            port: None,
        }
    }
    fn db(&self) -> &crate::redis_harness::RedisDb {
        self.db.as_ref().expect("fresh() first")
    }
    fn url(&self) -> String {
        let url = self.db().sidekiq();
        match self.port {
            Some(p) => with_port(&url, addr_of(&crate::redis_harness::redis_url()).port(), p),
            None => url,
        }
    }
}

impl Pair for SidekiqPair {
    fn name(&self) -> String {
        "sidekiq".into()
    }
    async fn fresh(&mut self, n: usize) -> Vec<String> {
        let db = crate::redis_harness::RedisDb::new().await;
        let ids = crate::redis_harness::seed_sidekiq(&db, n).await;
        self.db = Some(db);
        ids
    }
    fn redrive(&self) -> Vec<String> {
        vec!["redrive".into(), self.url()]
    }
    fn env(&self, _sb: &Sandbox) -> Vec<(String, String)> {
        Vec::new()
    }
    async fn remaining(&self) -> u64 {
        self.db().zcard("dead").await
    }
    async fn copies(&self) -> u64 {
        self.db().llen("queue:default").await
    }
    async fn target_ids(&self) -> Vec<Option<String>> {
        self.db()
            .sidekiq_queue_jids("default")
            .await
            .into_iter()
            .map(Some)
            .collect()
    }
    fn may_duplicate(&self) -> bool {
        false
    }
    fn upstream(&self) -> SocketAddr {
        addr_of(&crate::redis_harness::redis_url())
    }
    fn via(&mut self, port: u16) {
        self.port = Some(port);
    }
}

/// Failed BullMQ jobs (made by BullMQ itself), retried in place by its own reprocessJob: a
/// "copy" is a job id back in `wait`.
pub struct BullMqPair {
    db: Option<crate::redis_harness::RedisDb>,
    port: Option<u16>,
}

impl BullMqPair {
    pub fn new() -> BullMqPair {
        BullMqPair {
            db: None,
            port: None,
        }
    }
    fn db(&self) -> &crate::redis_harness::RedisDb {
        self.db.as_ref().expect("fresh() first")
    }
}

impl Pair for BullMqPair {
    fn name(&self) -> String {
        "bullmq".into()
    }
    async fn fresh(&mut self, n: usize) -> Vec<String> {
        let db = crate::redis_harness::RedisDb::new().await;
        let ids = crate::redis_harness::seed_bullmq(&db, "orders", n).await;
        self.db = Some(db);
        ids
    }
    fn redrive(&self) -> Vec<String> {
        let url = self.db().bullmq("orders");
        let url = match self.port {
            Some(p) => with_port(&url, addr_of(&crate::redis_harness::redis_url()).port(), p),
            None => url,
        };
        vec!["redrive".into(), url]
    }
    fn env(&self, _sb: &Sandbox) -> Vec<(String, String)> {
        Vec::new()
    }
    async fn remaining(&self) -> u64 {
        self.db().zcard("bull:orders:failed").await
    }
    async fn copies(&self) -> u64 {
        self.db().llen("bull:orders:wait").await
    }
    async fn target_ids(&self) -> Vec<Option<String>> {
        self.db()
            .lrange("bull:orders:wait")
            .await
            .into_iter()
            .map(Some)
            .collect()
    }
    fn may_duplicate(&self) -> bool {
        false
    }
    fn upstream(&self) -> SocketAddr {
        addr_of(&crate::redis_harness::redis_url())
    }
    fn via(&mut self, port: u16) {
        self.port = Some(port);
    }
}

/// Dead Sidekiq jobs redriven `--to` a PostgreSQL table: copied with their jid, then removed
/// from the dead set.
pub struct SidekiqToPg {
    inner: SidekiqPair,
    pg: Option<Db>,
}

impl SidekiqToPg {
    pub fn new() -> SidekiqToPg {
        SidekiqToPg {
            inner: SidekiqPair::new(),
            pg: None,
        }
    }
}

impl Pair for SidekiqToPg {
    fn copies_url(&self) -> Option<String> {
        self.pg.as_ref().map(|d| d.table_url("queue_messages"))
    }
    fn name(&self) -> String {
        "sidekiq-to-pg".into()
    }
    async fn fresh(&mut self, n: usize) -> Vec<String> {
        self.pg = Some(Db::new("skpg").await);
        self.inner.fresh(n).await
    }
    fn redrive(&self) -> Vec<String> {
        let mut r = self.inner.redrive();
        r.push("--to".into());
        r.push(self.copies_url().unwrap());
        r
    }
    fn env(&self, sb: &Sandbox) -> Vec<(String, String)> {
        self.inner.env(sb)
    }
    async fn remaining(&self) -> u64 {
        self.inner.remaining().await
    }
    async fn copies(&self) -> u64 {
        self.pg.as_ref().unwrap().count("queue_messages").await as u64
    }
    async fn target_ids(&self) -> Vec<Option<String>> {
        table_ids(self.pg.as_ref().unwrap(), "queue_messages").await
    }
    fn may_duplicate(&self) -> bool {
        true
    }
    fn upstream(&self) -> SocketAddr {
        self.inner.upstream()
    }
    fn via(&mut self, port: u16) {
        self.inner.via(port);
    }
}

/// Failed BullMQ jobs redriven `--to` an SQS queue: copied with their id, then removed with
/// BullMQ's own removeJob.
pub struct BullMqToSqs {
    inner: BullMqPair,
    sqs: SqsPair,
}

impl BullMqToSqs {
    pub fn new() -> BullMqToSqs {
        BullMqToSqs {
            inner: BullMqPair::new(),
            sqs: SqsPair::new(false),
        }
    }
}

impl Pair for BullMqToSqs {
    fn copies_url(&self) -> Option<String> {
        self.sqs.copies_url()
    }
    fn name(&self) -> String {
        "bullmq-to-sqs".into()
    }
    async fn fresh(&mut self, n: usize) -> Vec<String> {
        // The SQS pair's dead-letter queue stays empty: only its target is used.
        self.sqs.fresh(0).await;
        self.inner.fresh(n).await
    }
    fn redrive(&self) -> Vec<String> {
        let mut r = self.inner.redrive();
        r.push("--to".into());
        r.push(self.sqs.redrive()[3].clone());
        r
    }
    fn env(&self, sb: &Sandbox) -> Vec<(String, String)> {
        self.sqs.env(sb)
    }
    async fn remaining(&self) -> u64 {
        self.inner.remaining().await
    }
    async fn copies(&self) -> u64 {
        self.sqs.copies().await
    }
    async fn target_ids(&self) -> Vec<Option<String>> {
        self.sqs.target_ids().await
    }
    fn may_duplicate(&self) -> bool {
        true
    }
    fn upstream(&self) -> SocketAddr {
        self.inner.upstream()
    }
    fn via(&mut self, port: u16) {
        self.inner.via(port);
    }
}

// One more dead letter in a source after `fresh`, for `tail` (`clauses::Source`).

impl crate::clauses::Source for PgSameDb {
    async fn add(&self, k: usize) -> String {
        let id = format!("new-{k}");
        self.exec(&format!(
            "INSERT INTO {{s}}.dead_letters (message_id, queue, payload, error) VALUES ('{id}', 'orders', '{{\"order_id\": {}}}', 'late')",
            1000 + k
        ))
        .await;
        id
    }
}

impl crate::clauses::Source for SqsPair {
    async fn add(&self, k: usize) -> String {
        use aws_sdk_sqs::types::MessageAttributeValue;
        let id = format!("new-{k}");
        let mut send = self
            .sqs()
            .client
            .send_message()
            .queue_url(&self.dlq)
            .message_body(format!("{{\"order\": \"{id}\"}}"))
            .message_attributes(
                "dlqctl-stable-id",
                MessageAttributeValue::builder()
                    .data_type("String")
                    .string_value(&id)
                    .build()
                    .unwrap(),
            );
        if self.fifo {
            send = send.message_group_id("late").message_deduplication_id(&id);
        }
        send.send().await.expect("add to the DLQ");
        id
    }
}

impl crate::clauses::Source for KafkaPair {
    async fn add(&self, k: usize) -> String {
        let id = format!("new-{k}");
        let orders = self.k().topic("orders");
        self.k()
            .produce(
                "dlt",
                Some((k % 2) as i32),
                Some(b"late"),
                Some(format!("{{\"order\": \"{id}\"}}").as_bytes()),
                &[
                    ("dlqctl-stable-id", Some(id.as_bytes())),
                    ("kafka_dlt-original-topic", Some(orders.as_bytes())),
                ],
            )
            .await;
        id
    }
}

/// River only: one more discarded job (its id is the next of the table's sequence).
impl crate::clauses::Source for JobSystem {
    async fn add(&self, _k: usize) -> String {
        assert_eq!(self.case.system, "river", "add: River only");
        let seed = self.fill(&self.case.seed.replace("{n}", "1"));
        sqlx::raw_sql(AssertSqlSafe(seed))
            .execute(&self.db().pool)
            .await
            .expect("add a dead job");
        self.query("SELECT max(id)::text FROM {s}.river_job")
            .await
            .remove(0)
            .expect("an id")
    }
}
