//! Test harness: the real binary in a clean environment, against the real PostgreSQL started
//! by `scripts/services` (its URL in DLQCTL_TEST_PG_URL; `scripts/test` sets it).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use sqlx::postgres::PgPoolOptions;
use sqlx::{AssertSqlSafe, PgPool};

pub const LAYOUT_SQL: &str = include_str!("../../docs/sql/generic-layout.sql");

pub fn pg_url() -> String {
    std::env::var("DLQCTL_TEST_PG_URL").unwrap_or_else(|_| {
        panic!(
            "DLQCTL_TEST_PG_URL is not set: run the suite with `scripts/test` (it starts PostgreSQL), or `eval \"$(scripts/services env)\"` after `scripts/services start pg`"
        )
    })
}

/// A dry run's summary predicted its run's: what it would move, what it would fail, and why
/// (the refusals a target makes before sending, `QueueSink::check`).
pub fn assert_dry_run_predicted(dry: &serde_json::Value, run: &serde_json::Value) {
    assert_eq!(
        (&dry["would_move"], &dry["failed"], &dry["failures"]),
        (&run["moved"], &run["failed"], &run["failures"]),
        "the dry run: {dry}"
    );
}

/// One output of the binary.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    pub fn jsonl(&self) -> Vec<serde_json::Value> {
        self.stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}"))
            })
            .collect()
    }

    #[track_caller]
    pub fn ok(self) -> Run {
        assert_eq!(
            self.code, 0,
            "exit code {}\nstdout:\n{}\nstderr:\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }

    #[track_caller]
    pub fn code(self, want: i32) -> Run {
        assert_eq!(
            self.code, want,
            "exit code {} (wanted {want})\nstdout:\n{}\nstderr:\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }
}

/// A spawned dlqctl's stderr, read in the background; `until` has seen a given line.
pub struct StderrLines(std::thread::JoinHandle<String>);

impl StderrLines {
    /// Read `child`'s (piped) stderr until a line contains `needle`, which the command prints
    /// once it has reached a known point (a tail's start, fixed): a condition to wait on,
    /// where a sleep guesses. Panics with what it printed if it exits first, or after 120 s.
    pub fn until(child: &mut Child, needle: &str) -> StderrLines {
        let err = child.stderr.take().expect("stderr piped");
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                all.push_str(&line);
                all.push('\n');
                let _ = tx.send(line);
            }
            all
        });
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) if line.contains(needle) => return StderrLines(reader),
                Ok(_) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!(
                    "dlqctl exited without printing {needle:?}; stderr:\n{}",
                    reader.join().unwrap_or_default()
                ),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    panic!("dlqctl did not print {needle:?} within 120 s")
                }
            }
        }
    }

    /// All of stderr, once the command has exited.
    pub fn rest(self) -> String {
        self.0.join().expect("the stderr reader")
    }
}

/// The binary under test: this build's, or `DLQCTL_TEST_BIN` (another build, e.g. to show
/// that a new test fails on the code before a fix).
pub fn bin() -> String {
    std::env::var("DLQCTL_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_dlqctl").into())
}

/// A scratch directory as the working directory and HOME, so no user config leaks in.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).expect("write file");
        p
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join(".config"))
            .env("NO_COLOR", "1")
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        // A developer's log filter reaches the binary (a failing run's stderr then shows it).
        if let Some(log) = std::env::var_os("DLQCTL_LOG") {
            c.env("DLQCTL_LOG", log);
        }
        c
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_env(args, &[])
    }

    pub fn run_with(&self, args: &[&str], env: &[(String, String)]) -> Run {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        self.run_env(args, &env)
    }

    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut c = self.cmd(args);
        for (k, v) in env {
            c.env(k, v);
        }
        let out: Output = c.output().expect("run dlqctl");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

static SEQ: AtomicU32 = AtomicU32::new(0);
static CLEANED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the test process `pid` (the number in a schema's or cron job's name, zero-padded
/// in a schema's: `0012345` parses as 12345) has ended.
fn ended(pid: &str) -> bool {
    pid.parse::<u32>()
        .map(|p| p != std::process::id() && !std::path::Path::new(&format!("/proc/{p}")).exists())
        .unwrap_or(false)
}

/// Drop the `t_NAME_PID_N` schemas and `dlqctl-test-PID-…` cron jobs of test runs that ended.
async fn drop_schemas_of_ended_runs(pool: &PgPool) {
    let names: Vec<String> =
        sqlx::query_scalar("SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 't\\_%'")
            .fetch_all(pool)
            .await
            .unwrap_or_default();
    for n in names {
        let parts: Vec<&str> = n.rsplitn(3, '_').collect();
        if parts.len() == 3 && ended(parts[1]) {
            let _ = sqlx::raw_sql(AssertSqlSafe(format!(
                "DROP SCHEMA IF EXISTS \"{n}\" CASCADE"
            )))
            .execute(pool)
            .await;
        }
    }
    let jobs: Vec<(i64, String)> =
        sqlx::query_as("SELECT jobid, jobname FROM cron.job WHERE jobname LIKE 'dlqctl-test-%'")
            .fetch_all(pool)
            .await
            .unwrap_or_default();
    for (id, name) in jobs {
        let pid = name
            .trim_start_matches("dlqctl-test-")
            .split('-')
            .next()
            .unwrap_or("");
        if ended(pid) {
            let _ = sqlx::query("SELECT cron.unschedule($1)")
                .bind(id)
                .execute(pool)
                .await;
        }
    }
}

/// A schema of its own for one test, with the generic layout created in it.
pub struct Db {
    pub pool: PgPool,
    pub schema: String,
}

impl Db {
    pub async fn new(name: &str) -> Db {
        Db::new_in(&pg_url(), name).await
    }

    /// Like [`Db::new`], in the database at `url` (the demo database, for moves between two).
    pub async fn new_in(url: &str, name: &str) -> Db {
        let n = SEQ.fetch_add(1, Ordering::SeqCst);
        // Fixed widths (the pid and the sequence padded): what a table shows of a name has the
        // same width on every run (tests/it/widths.rs). Four digits: one run makes over a
        // thousand names (queues, topics, schemas share the sequence).
        let schema = format!("t_{}_{:07}_{:04}", name, std::process::id(), n);
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect(url)
            .await
            .expect("connect to the test PostgreSQL");
        // Schemas of earlier runs are dropped by the first test of this run; a failed test's
        // data stays until then, for inspection. Only those of processes that have ended: a
        // test run beside this one (another checkout's) keeps its own.
        if url == pg_url() && !CLEANED.swap(true, Ordering::SeqCst) {
            drop_schemas_of_ended_runs(&pool).await;
        }
        sqlx::raw_sql(AssertSqlSafe(format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};"
        )))
        .execute(&pool)
        .await
        .expect("create schema");
        let mut conn = pool.acquire().await.expect("conn");
        sqlx::raw_sql(AssertSqlSafe(format!(
            "SET search_path TO {schema}; {LAYOUT_SQL}; RESET search_path;"
        )))
        .execute(&mut *conn)
        .await
        .expect("create layout");
        Db { pool, schema }
    }

    /// `postgres://…?table=SCHEMA.dead_letters&source=SCHEMA.queue_messages`
    pub fn dlq(&self) -> String {
        format!(
            "{}?table={s}.dead_letters&source={s}.queue_messages",
            pg_url(),
            s = self.schema
        )
    }

    pub fn table_url(&self, table: &str) -> String {
        format!("{}?table={}.{table}", pg_url(), self.schema)
    }

    pub async fn exec(&self, sql: &str) {
        let sql = sql.replace("{s}", &self.schema);
        sqlx::raw_sql(AssertSqlSafe(sql.clone()))
            .execute(&self.pool)
            .await
            .unwrap_or_else(|e| panic!("{e}\n{sql}"));
    }

    /// One text column of a query's rows (`{s}` is the schema).
    pub async fn query_strings(&self, sql: &str) -> Vec<String> {
        sqlx::query_scalar(AssertSqlSafe(sql.replace("{s}", &self.schema)))
            .fetch_all(&self.pool)
            .await
            .unwrap_or_else(|e| panic!("{e}\n{sql}"))
    }

    pub async fn count(&self, table: &str) -> i64 {
        sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT count(*) FROM {}.{table}",
            self.schema
        )))
        .fetch_one(&self.pool)
        .await
        .expect("count")
    }

    /// Wait until no dlqctl session works on this schema's tables any more. A killed dlqctl's
    /// last statement still runs to its end on the server (and commits, if it is a
    /// transaction of its own), and its session-level advisory lock lasts until the server
    /// sees that the client is gone: counts taken, or a re-run started, before then would
    /// see a moment the run never left the tables in.
    pub async fn wait_for_dlqctl_to_let_go(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let n: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'dlqctl' AND pid <> pg_backend_pid() AND position($1 in query) > 0",
            )
            .bind(&self.schema)
            .fetch_one(&self.pool)
            .await
            .expect("pg_stat_activity");
            if n == 0 {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{n} dlqctl sessions still on {} after 30 s",
                self.schema
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// Hold the dead letters with these message ids `FOR UPDATE` until the returned
    /// transaction ends (another worker busy with them).
    pub async fn hold(&self, message_ids: &[&str]) -> sqlx::Transaction<'static, sqlx::Postgres> {
        let mut tx = self.pool.begin().await.expect("begin");
        sqlx::query(AssertSqlSafe(format!(
            "SELECT 1 FROM {}.dead_letters WHERE message_id = ANY($1) FOR UPDATE",
            self.schema
        )))
        .bind(message_ids)
        .fetch_all(&mut *tx)
        .await
        .expect("lock rows");
        tx
    }

    pub async fn ids(&self, table: &str) -> Vec<String> {
        sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT message_id FROM {}.{table} ORDER BY message_id",
            self.schema
        )))
        .fetch_all(&self.pool)
        .await
        .expect("ids")
    }

    /// `n` dead letters `ord-1..n` with a mix of errors: i%4 == 0 timeout (transient),
    /// 1 validation (permanent), 2 HTTP 503 (transient), 3 not found (permanent).
    pub async fn seed(&self, n: i64) {
        self.exec(&format!(
            "INSERT INTO {{s}}.dead_letters (message_id, queue, payload, headers, error, attempts, group_key, enqueued_at, failed_at)
             SELECT 'ord-'||g, 'orders', jsonb_build_object('order_id', g, 'amount', g * 10),
                    jsonb_build_object('trace-id', 'tr-'||g, 'tenant', CASE WHEN g % 2 = 0 THEN 'acme' ELSE 'globex' END),
                    (ARRAY['upstream call timed out after 30s', 'validation failed: amount must be positive', 'HTTP 503 Service Unavailable', 'customer 7 not found'])[1 + g % 4],
                    5, 'cust-'||(g % 3), now() - (g || ' hours')::interval, now() - (g || ' minutes')::interval
             FROM generate_series(1, {n}) g"
        ))
        .await;
    }
}

/// The second database of the test server (`dlqctl_demo`), for moves between two databases.
pub fn demo_pg_url() -> String {
    std::env::var("DLQCTL_DEMO_PG_URL").unwrap_or_else(|_| {
        panic!("DLQCTL_DEMO_PG_URL is not set: run the suite with `scripts/test`")
    })
}

pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The SQS emulator (moto) started by `scripts/services start sqs`.
pub fn sqs_endpoint() -> String {
    std::env::var("DLQCTL_TEST_SQS_ENDPOINT").unwrap_or_else(|_| {
        panic!("DLQCTL_TEST_SQS_ENDPOINT is not set: run the suite with `scripts/test` (it starts the SQS emulator)")
    })
}

pub struct Sqs {
    pub client: aws_sdk_sqs::Client,
    pub prefix: String,
}

impl Sqs {
    pub async fn new(name: &str) -> Sqs {
        let n = SEQ.fetch_add(1, Ordering::SeqCst);
        let conf = aws_sdk_sqs::Config::builder()
            .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
            .region(aws_sdk_sqs::config::Region::new("us-east-1"))
            .endpoint_url(sqs_endpoint())
            .credentials_provider(aws_sdk_sqs::config::Credentials::new(
                "testing", "testing", None, None, "test",
            ))
            .build();
        Sqs {
            client: aws_sdk_sqs::Client::from_conf(conf),
            prefix: format!("{name}-{:07}-{n:04}", std::process::id()),
        }
    }

    /// The environment the binary needs to reach the emulator.
    pub fn env(&self, sb: &Sandbox) -> Vec<(String, String)> {
        vec![
            ("AWS_ENDPOINT_URL".into(), sqs_endpoint()),
            ("AWS_ACCESS_KEY_ID".into(), "testing".into()),
            ("AWS_SECRET_ACCESS_KEY".into(), "testing".into()),
            ("AWS_REGION".into(), "us-east-1".into()),
            ("DLQCTL_SQS_WAIT_SECONDS".into(), "1".into()),
            (
                "DLQCTL_STATE_DIR".into(),
                sb.path("state").to_string_lossy().into_owned(),
            ),
        ]
    }

    pub fn name(&self, q: &str) -> String {
        if let Some(base) = q.strip_suffix(".fifo") {
            format!("{}-{base}.fifo", self.prefix)
        } else {
            format!("{}-{q}", self.prefix)
        }
    }

    pub async fn create(&self, q: &str, attrs: &[(&str, &str)]) -> (String, String) {
        let mut req = self.client.create_queue().queue_name(self.name(q));
        for (k, v) in attrs {
            req = req.attributes(aws_sdk_sqs::types::QueueAttributeName::from(*k), *v);
        }
        let url = req
            .send()
            .await
            .expect("create queue")
            .queue_url()
            .unwrap()
            .to_string();
        let arn = self.attr(&url, "QueueArn").await;
        (url, arn)
    }

    pub async fn attr(&self, url: &str, name: &str) -> String {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
            .send()
            .await
            .expect("attributes");
        out.attributes()
            .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::from(name)))
            .cloned()
            .unwrap_or_default()
    }

    pub async fn visible(&self, url: &str) -> u64 {
        self.attr(url, "ApproximateNumberOfMessages")
            .await
            .parse()
            .unwrap()
    }

    /// A standard (or FIFO) source with a RedrivePolicy into a DLQ.
    pub async fn pair(&self, fifo: bool, max_receive: u32) -> (String, String) {
        let sfx = if fifo { ".fifo" } else { "" };
        let fifo_attrs: &[(&str, &str)] = if fifo { &[("FifoQueue", "true")] } else { &[] };
        let mut dlq_attrs = vec![("MessageRetentionPeriod", "1209600")];
        dlq_attrs.extend_from_slice(fifo_attrs);
        let (dlq, dlq_arn) = self.create(&format!("dlq{sfx}"), &dlq_attrs).await;
        let policy =
            format!("{{\"deadLetterTargetArn\":\"{dlq_arn}\",\"maxReceiveCount\":{max_receive}}}");
        let mut src_attrs = vec![
            ("RedrivePolicy", policy.as_str()),
            ("VisibilityTimeout", "0"),
        ];
        src_attrs.extend_from_slice(fifo_attrs);
        let (src, _) = self.create(&format!("src{sfx}"), &src_attrs).await;
        (src, dlq)
    }

    /// Receive from `url` (visibility 0) until moto has moved everything to the DLQ (it does
    /// so lazily, on the receive after maxReceiveCount).
    pub async fn fail_all(&self, url: &str) {
        for _ in 0..500 {
            let r = self
                .client
                .receive_message()
                .queue_url(url)
                .max_number_of_messages(10)
                .visibility_timeout(0)
                .send()
                .await
                .unwrap();
            if r.messages().is_empty() && self.visible(url).await == 0 {
                return;
            }
        }
        panic!("messages were not dead-lettered");
    }

    /// Everything in `url`, received (and hidden for a minute).
    pub async fn receive_all(&self, url: &str) -> Vec<aws_sdk_sqs::types::Message> {
        self.receive_until_empty(url, false).await
    }

    /// Receive and delete everything in `url` (a FIFO queue gives a group's next message only
    /// after the one before is deleted).
    pub async fn drain(&self, url: &str) -> Vec<aws_sdk_sqs::types::Message> {
        self.receive_until_empty(url, true).await
    }

    async fn receive_until_empty(
        &self,
        url: &str,
        delete: bool,
    ) -> Vec<aws_sdk_sqs::types::Message> {
        let mut out = Vec::new();
        let mut empty = 0;
        while empty < 2 {
            let r = self
                .client
                .receive_message()
                .queue_url(url)
                .max_number_of_messages(10)
                .visibility_timeout(60)
                .message_attribute_names("All")
                .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
                .send()
                .await
                .unwrap();
            if r.messages().is_empty() {
                empty += 1;
                continue;
            }
            if delete {
                let entries = r
                    .messages()
                    .iter()
                    .enumerate()
                    .map(|(i, m)| {
                        aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                            .id(format!("d{i}"))
                            .receipt_handle(m.receipt_handle().unwrap())
                            .build()
                            .unwrap()
                    })
                    .collect();
                self.client
                    .delete_message_batch()
                    .queue_url(url)
                    .set_entries(Some(entries))
                    .send()
                    .await
                    .unwrap();
                empty = 0;
            }
            out.extend(r.messages().iter().cloned());
        }
        out
    }
}

/// The Kafka broker (tansu) started by `scripts/services start kafka`.
pub fn kafka_bootstrap() -> String {
    std::env::var("DLQCTL_TEST_KAFKA_BOOTSTRAP").unwrap_or_else(|_| {
        panic!("DLQCTL_TEST_KAFKA_BOOTSTRAP is not set: run the suite with `scripts/test` (it starts the Kafka broker)")
    })
}

pub struct Kafka {
    pub bootstrap: String,
    pub prefix: String,
    producer: rdkafka::producer::FutureProducer,
    /// librdkafka's in-process mock cluster, for what tansu cannot do (transactions); the
    /// brokers listen on loopback while it lives, so a dlqctl child process can use them.
    mock: Option<rdkafka::mocking::MockCluster<'static, rdkafka::producer::DefaultProducerContext>>,
}

/// One record as read back: partition, offset, key, value, headers (in order, nulls kept).
pub type Rec = (
    i32,
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(String, Option<Vec<u8>>)>,
);

impl Kafka {
    pub fn new(name: &str) -> Kafka {
        Kafka::with_producer(name, &[])
    }

    /// Like `new`, with extra properties for the fixture's producer (e.g. compression).
    pub fn with_producer(name: &str, props: &[(&str, &str)]) -> Kafka {
        Kafka::at(&kafka_bootstrap(), name, props)
    }

    /// A fixture on the broker at `bootstrap` (a broker of the test's own).
    pub fn at(bootstrap: &str, name: &str, props: &[(&str, &str)]) -> Kafka {
        let n = SEQ.fetch_add(1, Ordering::SeqCst);
        let bootstrap = bootstrap.to_string();
        let mut c = rdkafka::ClientConfig::new();
        c.set("bootstrap.servers", &bootstrap).set("linger.ms", "0");
        for (k, v) in props {
            c.set(*k, *v);
        }
        let producer = c.create().expect("producer");
        Kafka {
            bootstrap,
            prefix: format!("{name}-{:07}-{n:04}", std::process::id()),
            producer,
            mock: None,
        }
    }

    /// A fixture on librdkafka's mock cluster (one broker, in this process) instead of tansu.
    /// It speaks the transactional protocol but keeps no transaction state: TxnOffsetCommit
    /// stores nothing and EndTxn writes no markers (librdkafka's `rdkafka_mock_handlers.c`).
    pub fn mock(name: &str) -> Kafka {
        let n = SEQ.fetch_add(1, Ordering::SeqCst);
        let mock = rdkafka::mocking::MockCluster::new(1).expect("mock cluster");
        let bootstrap = mock.bootstrap_servers();
        let producer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .set("linger.ms", "0")
            .create()
            .expect("producer");
        Kafka {
            bootstrap,
            prefix: format!("{name}-{:07}-{n:04}", std::process::id()),
            producer,
            mock: Some(mock),
        }
    }

    pub fn topic(&self, t: &str) -> String {
        format!("{}-{t}", self.prefix)
    }

    pub fn url(&self, t: &str) -> String {
        format!("kafka://{}/{}", self.bootstrap, self.topic(t))
    }

    pub async fn create(&self, t: &str, partitions: i32, configs: &[(&str, &str)]) {
        use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
        if let Some(m) = &self.mock {
            assert!(
                configs.is_empty(),
                "the mock cluster takes no topic configs"
            );
            m.create_topic(&self.topic(t), partitions, 1)
                .expect("create a topic on the mock cluster");
            return;
        }
        let admin: AdminClient<rdkafka::client::DefaultClientContext> =
            rdkafka::ClientConfig::new()
                .set("bootstrap.servers", &self.bootstrap)
                .create()
                .expect("admin");
        let name = self.topic(t);
        let mut nt = NewTopic::new(&name, partitions, TopicReplication::Fixed(1));
        for (k, v) in configs {
            nt = nt.set(k, v);
        }
        let r = admin
            .create_topics(&[nt], &AdminOptions::new())
            .await
            .expect("create topics");
        for x in r {
            x.unwrap_or_else(|e| panic!("create {name}: {e:?}"));
        }
    }

    /// One record per produce request, awaited (tansu's high watermark is only right then).
    pub async fn produce(
        &self,
        t: &str,
        partition: Option<i32>,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&str, Option<&[u8]>)],
    ) {
        use rdkafka::message::{Header, OwnedHeaders};
        let mut h = OwnedHeaders::new();
        for (k, v) in headers {
            h = h.insert(Header { key: k, value: *v });
        }
        let name = self.topic(t);
        let mut rec: rdkafka::producer::FutureRecord<'_, [u8], [u8]> =
            rdkafka::producer::FutureRecord::to(&name).headers(h);
        if let Some(p) = partition {
            rec = rec.partition(p);
        }
        if let Some(k) = key {
            rec = rec.key(k);
        }
        if let Some(v) = value {
            rec = rec.payload(v);
        }
        self.producer
            .send(rec, std::time::Duration::from_secs(10))
            .await
            .map_err(|(e, _)| e)
            .expect("produce");
    }

    /// Everything in the topic, read with assign() from the beginning until idle.
    pub async fn read_all(&self, t: &str) -> Vec<Rec> {
        self.read_until(t, |_| false).await
    }

    /// The topic from the beginning, until `enough` says the records read so far are all that
    /// is expected and then one more second brings nothing new (or until idle for 3 s).
    pub async fn read_until(&self, t: &str, enough: impl Fn(&[Rec]) -> bool) -> Vec<Rec> {
        use rdkafka::Message as _;
        use rdkafka::consumer::{Consumer, StreamConsumer};
        use rdkafka::message::Headers;
        let name = self.topic(t);
        let c: StreamConsumer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", &self.bootstrap)
            .set("group.id", format!("test-reader-{}", std::process::id()))
            .set("enable.auto.commit", "false")
            .create()
            .expect("consumer");
        let md = c
            .fetch_metadata(Some(&name), std::time::Duration::from_secs(10))
            .expect("metadata");
        let mut tpl = rdkafka::TopicPartitionList::new();
        for p in md.topics()[0].partitions() {
            tpl.add_partition_offset(&name, p.id(), rdkafka::Offset::Beginning)
                .unwrap();
        }
        c.assign(&tpl).unwrap();
        let mut out: Vec<Rec> = Vec::new();
        loop {
            let idle = if enough(&out) { 1 } else { 3 };
            let Ok(Ok(m)) =
                tokio::time::timeout(std::time::Duration::from_secs(idle), c.recv()).await
            else {
                break;
            };
            let headers = m
                .headers()
                .map(|h| {
                    h.iter()
                        .map(|x| (x.key.to_string(), x.value.map(<[u8]>::to_vec)))
                        .collect()
                })
                .unwrap_or_default();
            out.push((
                m.partition(),
                m.offset(),
                m.key().map(<[u8]>::to_vec),
                m.payload().map(<[u8]>::to_vec),
                headers,
            ));
        }
        out.sort_by_key(|r| (r.0, r.1));
        out
    }

    /// Sum of the partitions' high watermarks (a lower bound on tansu; enough to see that
    /// something arrived).
    pub fn high_watermarks(&self, t: &str) -> i64 {
        use rdkafka::consumer::{BaseConsumer, Consumer};
        let name = self.topic(t);
        let c: BaseConsumer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", &self.bootstrap)
            .create()
            .expect("consumer");
        let md = c
            .fetch_metadata(Some(&name), std::time::Duration::from_secs(10))
            .expect("metadata");
        md.topics()[0]
            .partitions()
            .iter()
            .map(|p| {
                c.fetch_watermarks(&name, p.id(), std::time::Duration::from_secs(10))
                    .map(|(_, hi)| hi)
                    .unwrap_or(0)
            })
            .sum()
    }

    pub fn env(&self) -> Vec<(String, String)> {
        vec![("DLQCTL_KAFKA_IDLE_MS".into(), "2000".into())]
    }
}

/// Kafka's murmur2 partitioner (what a Java producer does with a key).
pub fn java_partition(key: &[u8], partitions: i32) -> i32 {
    let seed: u32 = 0x9747_b28c;
    let m: u32 = 0x5bd1_e995;
    let r = 24;
    let len = key.len();
    let mut h: u32 = seed ^ (len as u32);
    let chunks = len / 4;
    for i in 0..chunks {
        let mut k =
            u32::from_le_bytes([key[4 * i], key[4 * i + 1], key[4 * i + 2], key[4 * i + 3]]);
        k = k.wrapping_mul(m);
        k ^= k >> r;
        k = k.wrapping_mul(m);
        h = h.wrapping_mul(m);
        h ^= k;
    }
    let tail = &key[chunks * 4..];
    if tail.len() >= 3 {
        h ^= (tail[2] as u32) << 16;
    }
    if tail.len() >= 2 {
        h ^= (tail[1] as u32) << 8;
    }
    if !tail.is_empty() {
        h ^= tail[0] as u32;
        h = h.wrapping_mul(m);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(m);
    h ^= h >> 15;
    ((h & 0x7fff_ffff) % partitions as u32) as i32
}
