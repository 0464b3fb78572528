//! The dead jobs of PostgreSQL job systems. Each system's tables are reproduced from a current
//! release's migrations (schema `{s}`), seeded the way the system writes dead jobs: four dead
//! (two transient, two permanent failures), one alive, one dead but locked by a worker.

use sqlx::AssertSqlSafe;

use crate::harness::{Db, Sandbox, pg_url};

struct Case {
    system: &'static str,
    /// Extra URL parameters (schema=, queue=).
    params: String,
    ddl: &'static str,
    /// Dead jobs 1..=5 (5 is the one the test locks), job 6 alive.
    seed: &'static str,
    /// How many jobs are back in a runnable state, by the system's own definition.
    retried: &'static str,
    /// Lock one dead job (as a running worker would), by key 5.
    lock: &'static str,
}

const ERRORS: [&str; 4] = [
    "upstream timed out after 30s",
    "validation failed: amount",
    "HTTP 503 Service Unavailable",
    "customer 7 not found",
];

/// River's tables (migration 6), in schema `{s}`.
pub(crate) const RIVER_DDL: &str = include_str!("../data/systems/river.sql");

fn cases() -> Vec<Case> {
    vec![
        Case {
            system: "river",
            params: "&schema={s}".into(),
            ddl: RIVER_DDL,
            seed: "INSERT INTO {s}.river_job (state, attempt, max_attempts, attempted_at, finalized_at, args, errors, kind, queue, created_at)
                   SELECT 'discarded', 25, 25, now(), now() - (g || ' minutes')::interval, jsonb_build_object('order_id', g),
                          ARRAY[jsonb_build_object('at', now(), 'attempt', 25, 'error', (ARRAY[{errors}])[1 + (g - 1) % 4], 'trace', 'main.go:12')],
                          'charge_card', 'payments', now() - (g || ' hours')::interval FROM generate_series(1, 5) g;
                   INSERT INTO {s}.river_job (args, max_attempts, kind) VALUES ('{\"order_id\": 6}', 25, 'charge_card');",
            retried: "SELECT count(*) FROM {s}.river_job WHERE state = 'available' AND finalized_at IS NULL AND max_attempts = 26",
            lock: "SELECT 1 FROM {s}.river_job WHERE id = 5 FOR UPDATE",
        },
        Case {
            system: "oban",
            params: "&schema={s}".into(),
            ddl: include_str!("../data/systems/oban.sql"),
            seed: "INSERT INTO {s}.oban_jobs (state, worker, queue, args, errors, attempt, max_attempts, discarded_at, inserted_at)
                   SELECT 'discarded', 'MyApp.ChargeCard', 'payments', jsonb_build_object('order_id', g),
                          ARRAY[jsonb_build_object('at', now(), 'attempt', 20, 'error', '** (RuntimeError) ' || (ARRAY[{errors}])[1 + (g - 1) % 4])],
                          20, 20, timezone('UTC', now()) - (g || ' minutes')::interval, timezone('UTC', now()) - (g || ' hours')::interval FROM generate_series(1, 5) g;
                   INSERT INTO {s}.oban_jobs (worker, args) VALUES ('MyApp.ChargeCard', '{\"order_id\": 6}');",
            retried: "SELECT count(*) FROM {s}.oban_jobs WHERE state = 'available' AND discarded_at IS NULL AND max_attempts = 21",
            lock: "SELECT 1 FROM {s}.oban_jobs WHERE id = 5 FOR UPDATE",
        },
        Case {
            system: "pgmq",
            params: "&queue={q}".into(),
            ddl: include_str!("../data/systems/pgmq.sql"),
            seed: "INSERT INTO pgmq.\"a_{q}\" (msg_id, read_ct, enqueued_at, archived_at, vt, message, headers)
                   SELECT g, 5, now() - (g || ' hours')::interval, now() - (g || ' minutes')::interval, now(), jsonb_build_object('order_id', g),
                          jsonb_build_object('error', (ARRAY[{errors}])[1 + (g - 1) % 4]) FROM generate_series(1, 5) g;
                   INSERT INTO pgmq.\"q_{q}\" (vt, message) VALUES (now(), '{\"order_id\": 6}');",
            retried: "SELECT count(*) - 1 FROM pgmq.\"q_{q}\"",
            lock: "SELECT 1 FROM pgmq.\"a_{q}\" WHERE msg_id = 5 FOR UPDATE",
        },
        Case {
            system: "graphile-worker",
            params: "&schema={s}".into(),
            ddl: include_str!("../data/systems/graphile-worker.sql"),
            seed: "INSERT INTO {s}._private_tasks (identifier) VALUES ('charge_card');
                   INSERT INTO {s}._private_job_queues (queue_name) VALUES ('payments');
                   INSERT INTO {s}._private_jobs (job_queue_id, task_id, payload, attempts, max_attempts, last_error, created_at, updated_at)
                   SELECT 1, 1, json_build_object('order_id', g), 25, 25, 'Error: ' || (ARRAY[{errors}])[1 + (g - 1) % 4], now() - (g || ' hours')::interval, now() - (g || ' minutes')::interval FROM generate_series(1, 5) g;
                   INSERT INTO {s}._private_jobs (task_id, payload) VALUES (1, '{\"order_id\": 6}');",
            retried: "SELECT count(*) FROM {s}._private_jobs WHERE attempts = 0 AND id <> 6",
            lock: "SELECT 1 FROM {s}._private_jobs WHERE id = 5 FOR UPDATE",
        },
        Case {
            system: "solid_queue",
            params: "&schema={s}".into(),
            ddl: include_str!("../data/systems/solid_queue.sql"),
            seed: "INSERT INTO {s}.solid_queue_jobs (queue_name, class_name, arguments, active_job_id, created_at, updated_at)
                   SELECT 'payments', 'ChargeCardJob', json_build_object('job_class', 'ChargeCardJob', 'arguments', json_build_array(g))::text, md5(g::text), now() - (g || ' hours')::interval, now() FROM generate_series(1, 6) g;
                   INSERT INTO {s}.solid_queue_failed_executions (job_id, error, created_at)
                   SELECT g, json_build_object('exception_class', 'Payments::Error', 'message', (ARRAY[{errors}])[1 + (g - 1) % 4], 'backtrace', json_build_array('app/jobs/charge_card_job.rb:7'))::text, now() - (g || ' minutes')::interval FROM generate_series(1, 5) g;",
            retried: "SELECT count(*) FROM {s}.solid_queue_ready_executions",
            lock: "SELECT 1 FROM {s}.solid_queue_failed_executions WHERE job_id = 5 FOR UPDATE",
        },
        Case {
            system: "good_job",
            params: "&schema={s}".into(),
            ddl: include_str!("../data/systems/good_job.sql"),
            seed: "INSERT INTO {s}.good_jobs (id, queue_name, priority, serialized_params, performed_at, finished_at, error, created_at, updated_at, active_job_id, executions_count, job_class, error_event)
                   SELECT ('00000000-0000-0000-0000-00000000000' || g)::uuid, 'payments', 0, jsonb_build_object('job_class', 'ChargeCardJob', 'arguments', jsonb_build_array(g)),
                          now(), now() - (g || ' minutes')::interval, 'Payments::Error: ' || (ARRAY[{errors}])[1 + (g - 1) % 4], now() - (g || ' hours')::interval, now(), gen_random_uuid(), 5, 'ChargeCardJob', 3
                   FROM generate_series(1, 5) g;
                   INSERT INTO {s}.good_jobs (id, queue_name, serialized_params, created_at, updated_at, job_class) VALUES ('00000000-0000-0000-0000-000000000006', 'payments', '{}', now(), now(), 'ChargeCardJob');",
            retried: "SELECT count(*) FROM {s}.good_jobs WHERE finished_at IS NULL AND performed_at IS NULL AND error IS NOT NULL",
            lock: "SELECT 1 FROM {s}.good_jobs WHERE id = '00000000-0000-0000-0000-000000000005' FOR UPDATE",
        },
        Case {
            system: "que",
            params: "&schema={s}".into(),
            ddl: include_str!("../data/systems/que.sql"),
            seed: "INSERT INTO {s}.que_jobs (job_class, queue, error_count, last_error_message, last_error_backtrace, expired_at, args, job_schema_version)
                   SELECT 'ChargeCard', 'payments', 15, (ARRAY[{errors}])[1 + (g - 1) % 4], 'charge_card.rb:9', now() - (g || ' minutes')::interval, jsonb_build_array(g), 2 FROM generate_series(1, 5) g;
                   INSERT INTO {s}.que_jobs (job_class, args, job_schema_version) VALUES ('ChargeCard', '[6]', 2);",
            retried: "SELECT count(*) FROM {s}.que_jobs WHERE expired_at IS NULL AND error_count = 0 AND id <> 6",
            lock: "SELECT 1 FROM {s}.que_jobs WHERE id = 5 FOR UPDATE",
        },
        Case {
            system: "pg-boss",
            params: "&schema={s}".into(),
            ddl: include_str!("../data/systems/pg-boss.sql"),
            seed: "INSERT INTO {s}.job (id, name, data, state, retry_limit, retry_count, started_on, completed_on, created_on, output)
                   SELECT ('00000000-0000-0000-0000-00000000000' || g)::uuid, 'charge-card', jsonb_build_object('order_id', g), 'failed', 2, 2, now(), now() - (g || ' minutes')::interval,
                          now() - (g || ' hours')::interval, jsonb_build_object('name', 'Error', 'message', (ARRAY[{errors}])[1 + (g - 1) % 4], 'stack', 'Error: at charge.js:3')
                   FROM generate_series(1, 5) g;
                   INSERT INTO {s}.job (id, name, data) VALUES ('00000000-0000-0000-0000-000000000006', 'charge-card', '{\"order_id\": 6}');",
            retried: "SELECT count(*) FROM {s}.job WHERE state = 'retry' AND retry_limit = 3",
            lock: "SELECT 1 FROM {s}.job WHERE id = '00000000-0000-0000-0000-000000000005' FOR UPDATE",
        },
    ]
}

fn fill(sql: &str, db: &Db) -> String {
    let errors = ERRORS
        .iter()
        .map(|e| format!("'{e}'"))
        .collect::<Vec<_>>()
        .join(", ");
    sql.replace("{errors}", &errors)
        .replace("{q}", &format!("{}_q", db.schema))
        .replace("{s}", &db.schema)
}

async fn count(db: &Db, sql: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(AssertSqlSafe(fill(sql, db)))
        .fetch_one(&db.pool)
        .await
        .unwrap_or_else(|e| panic!("{e}: {sql}"))
}

#[tokio::test]
async fn every_command_works_on_every_job_system() {
    for case in cases() {
        let db = Db::new(&case.system.replace('-', "_")).await;
        sqlx::raw_sql(AssertSqlSafe(fill(case.ddl, &db)))
            .execute(&db.pool)
            .await
            .unwrap_or_else(|e| panic!("{}: ddl: {e}", case.system));
        sqlx::raw_sql(AssertSqlSafe(fill(case.seed, &db)))
            .execute(&db.pool)
            .await
            .unwrap_or_else(|e| panic!("{}: seed: {e}", case.system));
        let url = format!(
            "{}?system={}{}",
            pg_url(),
            case.system,
            fill(&case.params, &db)
        );
        let sb = Sandbox::new();
        let who = case.system;

        let ins = sb.run(&["inspect", &url, "--output", "json"]).ok().json();
        let fact = |n: &str| ins[0]["facts"][n].clone();
        assert_eq!(fact("dead_jobs"), 5, "{who}: {ins}");
        assert!(fact("system").as_str().unwrap().starts_with(who), "{who}");

        let recs = sb
            .run(&["peek", &url, "-n", "10", "--output", "jsonl"])
            .ok()
            .jsonl();
        assert_eq!(recs.len(), 5, "{who}");
        let err = recs[0]["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            err.contains("timed out"),
            "{who}: the first job's error decoded: {}",
            recs[0]
        );
        assert!(
            recs[0]["body"].as_str().unwrap().contains('1'),
            "{who}: {}",
            recs[0]
        );
        if who == "pg-boss" {
            // pg-boss 10 keys jobs by (name, id): the stable id stays the job's uuid.
            assert_eq!(recs[0]["id"], "00000000-0000-0000-0000-000000000001");
            assert_eq!(
                recs[0]["native_id"],
                "charge-card:00000000-0000-0000-0000-000000000001"
            );
        }
        if who != "pgmq" {
            assert!(
                recs[0]["attributes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|a| a["name"] == "kind"),
                "{who}: kind shown"
            );
        }

        let j = sb.run(&["classify", &url, "--output", "json"]).ok().json();
        assert_eq!(j["total"], 5, "{who}");
        assert_eq!(
            j["kinds"]["transient"], 3,
            "{who}: timeout, 503, timeout: {j}"
        );
        assert_eq!(j["kinds"]["permanent"], 2, "{who}: {j}");

        let f = sb.path("dead.jsonl");
        sb.run(&["export", &url, "-o", f.to_str().unwrap()]).ok();
        assert_eq!(
            std::fs::read_to_string(&f).unwrap().lines().count(),
            5,
            "{who}"
        );

        let j = sb
            .run(&["redrive", &url, "--dry-run", "--output", "json"])
            .ok()
            .json();
        assert_eq!(j["moved"], 5, "{who}: {j}");
        assert_eq!(
            count(&db, case.retried).await,
            0,
            "{who}: a dry run changes nothing"
        );
        // A retry in place copies nothing: header rules have nothing to act on.
        let r = sb
            .run(&["redrive", &url, "--yes", "--strip-header", "x-*"])
            .code(2);
        assert!(r.stderr.contains("in place"), "{who}: {}", r.stderr);

        // A worker holds job 5: it is skipped, not waited on, and reported (exit 1: not a
        // clean finish). The rest are retried the way the system's own tools do, and the
        // alive job is untouched.
        let mut tx = db.pool.begin().await.unwrap();
        sqlx::query(AssertSqlSafe(fill(case.lock, &db)))
            .fetch_all(&mut *tx)
            .await
            .unwrap();
        let j = sb
            .run(&[
                "redrive",
                &url,
                "--class",
                "transient",
                "--yes",
                "--output",
                "json",
            ])
            .code(1)
            .json();
        assert_eq!(
            j["moved"], 2,
            "{who}: transient ones except the locked: {j}"
        );
        assert_held(&j, 1, who);
        assert_eq!(count(&db, case.retried).await, 2, "{who}");
        // Unfiltered (one statement per batch): the held job is skipped too, after at most
        // the batch's lock timeout, and reported, not failed.
        let started = std::time::Instant::now();
        let j = sb
            .run(&["redrive", &url, "--yes", "--output", "json"])
            .code(1)
            .json();
        assert_eq!(
            (j["moved"].as_u64(), j["failed"].as_u64()),
            (Some(2), Some(0)),
            "{who}: the permanent ones; the held one skipped: {j}"
        );
        assert_held(&j, 1, who);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{who}: the held job was not waited on"
        );
        assert_eq!(count(&db, case.retried).await, 4, "{who}");
        tx.rollback().await.unwrap();
        let j = sb
            .run(&["redrive", &url, "--yes", "--output", "json"])
            .ok()
            .json();
        assert_eq!(j["moved"], 1, "{who}: the job that was held: {j}");
        assert_eq!(count(&db, case.retried).await, 5, "{who}");
        if who == "pgmq" {
            // A resent pgmq message has a new msg_id: the dead one travels as the stable id.
            let carried = count(
                &db,
                "SELECT count(*) FROM pgmq.\"q_{q}\" WHERE headers ? 'dlqctl-stable-id'",
            )
            .await;
            assert_eq!(carried, 5, "pgmq stable ids");
        }
        let ins = sb.run(&["inspect", &url, "--output", "json"]).ok().json();
        assert_eq!(ins[0]["facts"]["dead_jobs"], 0, "{who}");

        // verify reports the system's pruning in the arithmetic.
        sb.write(
            "dlqctl.toml",
            &format!("[queues.jobs]\ndlq = \"{url}\"\n[queues.jobs.dedupe]\nurl = \"{}\"\ntable = \"{}.processed_messages\"\nretention = \"30d\"\n", pg_url(), db.schema),
        );
        let v = sb.run(&["verify", "--output", "json"]).json();
        let pruning = v["queues"][0]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "dead-row-pruning")
            .unwrap()
            .clone();
        assert!(
            pruning["detail"].as_str().unwrap().len() > 20,
            "{who}: {pruning}"
        );
    }
}

/// A database of its own with River's tables and the first case's seeded jobs.
pub(crate) async fn river(name: &str) -> Db {
    let case = cases().into_iter().next().unwrap();
    let db = Db::new(name).await;
    for sql in [case.ddl, case.seed] {
        sqlx::raw_sql(AssertSqlSafe(fill(sql, &db)))
            .execute(&db.pool)
            .await
            .unwrap();
    }
    db
}

#[tokio::test]
async fn a_river_retry_that_meets_an_active_twin_is_skipped_not_fatal() {
    let db = river("twin_river").await;
    db.exec("UPDATE {s}.river_job SET unique_key = '\\x01' WHERE id IN (2, 6)")
        .await;
    let url = format!("{}?system=river&schema={}", pg_url(), db.schema);
    let sb = Sandbox::new();
    let r = sb
        .run(&["redrive", &url, "--yes", "--output", "json"])
        .code(1);
    let j = r.json();
    assert_eq!(j["moved"], 4, "{j}");
    assert_eq!(j["failed"], 1);
    assert!(
        j["failures"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("23505"),
        "{j}"
    );
    // The one-statement path names the job it left by its stable id (its key here).
    assert_eq!(j["failures"][0]["ids"], serde_json::json!(["2"]), "{j}");
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM {s}.river_job WHERE state = 'discarded'"
        )
        .await,
        1
    );
}

/// Unfiltered ranges go two at a time, each on a connection of its own: a held job and an
/// active twin in the second of a pair send that range key by key (the held job skipped and
/// reported, the twin left and failed), while the first range's retry is counted.
#[tokio::test]
async fn ranges_retried_side_by_side_skip_held_jobs_and_twins() {
    let db = river("pair_river").await;
    let retried = cases().into_iter().next().unwrap().retried;
    db.exec("UPDATE {s}.river_job SET unique_key = '\\x01' WHERE id IN (4, 6)")
        .await;
    let mut tx = db.pool.begin().await.unwrap();
    sqlx::query(AssertSqlSafe(fill(
        "SELECT 1 FROM {s}.river_job WHERE id = 3 FOR UPDATE",
        &db,
    )))
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    let url = format!("{}?system=river&schema={}", pg_url(), db.schema);
    let sb = Sandbox::new();
    // Ranges (…, 2] and (2, 4] at once, then (4, 5].
    let j = sb
        .run(&[
            "redrive",
            &url,
            "--yes",
            "--batch-size",
            "2",
            "--output",
            "json",
        ])
        .code(1)
        .json();
    assert_eq!(
        (j["moved"].as_u64(), j["failed"].as_u64()),
        (Some(3), Some(1)),
        "1, 2 and 5 retried; 4 meets its twin: {j}"
    );
    assert_eq!(j["failures"][0]["ids"], serde_json::json!(["4"]), "{j}");
    assert_held(&j, 1, "river");
    tx.rollback().await.unwrap();
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM {s}.river_job WHERE state = 'discarded' AND id IN (3, 4)"
        )
        .await,
        2
    );
    assert_eq!(count(&db, retried).await, 3);
}

#[tokio::test]
async fn unexpected_schemas_are_refused_and_systems_replay_elsewhere() {
    let db = Db::new("sysref").await;
    let sb = Sandbox::new();
    db.exec("CREATE TABLE {s}.river_job (id bigserial PRIMARY KEY, kind text)")
        .await;
    let r = sb
        .run(&[
            "inspect",
            &format!("{}?system=river&schema={}", pg_url(), db.schema),
        ])
        .code(2);
    assert!(
        r.stderr.contains("river_job_state") && r.stderr.contains("will not guess"),
        "{}",
        r.stderr
    );
    let r = sb
        .run(&[
            "inspect",
            &format!("{}?system=oban&schema={}", pg_url(), db.schema),
        ])
        .code(2);
    assert!(r.stderr.contains("oban_jobs"), "{}", r.stderr);
    sb.run(&["inspect", &format!("{}?system=pgmq", pg_url())])
        .code(2);
    // Que into the generic queue table: the job id is the stable id.
    let que = cases().into_iter().find(|c| c.system == "que").unwrap();
    sqlx::raw_sql(AssertSqlSafe(fill(que.ddl, &db)))
        .execute(&db.pool)
        .await
        .unwrap();
    sqlx::raw_sql(AssertSqlSafe(fill(que.seed, &db)))
        .execute(&db.pool)
        .await
        .unwrap();
    let url = format!("{}?system=que&schema={}", pg_url(), db.schema);
    let j = sb
        .run(&[
            "replay",
            &url,
            "--to",
            &format!("{}&queue=payments", db.table_url("queue_messages")),
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(j["moved"], 5);
    let mut ids = db.ids("queue_messages").await;
    ids.sort();
    assert_eq!(ids, ["1", "2", "3", "4", "5"]);
    // A job system is a source: copies cannot be written into it.
    let r = sb
        .run(&["replay", &db.dlq(), "--to", &url, "--yes"])
        .code(2);
    assert!(r.stderr.contains("job system"), "{}", r.stderr);
}

/// pgmq keeps the stable id where it can, and refuses where it cannot: a live queue without a
/// `headers` column (pgmq before 1.5) would give each retried message a new msg_id and
/// nothing would carry the dead one; dead messages without headers get new headers holding
/// the id.
#[tokio::test]
async fn pgmq_keeps_the_stable_id_or_refuses_to_retry() {
    let db = Db::new("pgmqid").await;
    let (old, new) = (format!("{}_old", db.schema), format!("{}_new", db.schema));
    db.exec(&format!(
        "CREATE SCHEMA IF NOT EXISTS pgmq;
         CREATE TABLE IF NOT EXISTS pgmq.meta (queue_name varchar UNIQUE NOT NULL, is_partitioned boolean NOT NULL, is_unlogged boolean NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
         INSERT INTO pgmq.meta VALUES ('{old}', false, false), ('{new}', false, false) ON CONFLICT DO NOTHING;
         -- live queue without headers, archive with them
         CREATE TABLE pgmq.\"q_{old}\" (msg_id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY, read_ct integer NOT NULL DEFAULT 0, enqueued_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL, message jsonb);
         CREATE TABLE pgmq.\"a_{old}\" (msg_id bigint PRIMARY KEY, read_ct integer NOT NULL DEFAULT 0, enqueued_at timestamptz NOT NULL DEFAULT now(), archived_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL, message jsonb, headers jsonb);
         INSERT INTO pgmq.\"a_{old}\" (msg_id, vt, message, headers) VALUES (41, now(), '{{\"order_id\": 1}}', '{{\"error\": \"timeout\"}}');
         -- live queue with headers, archive without
         CREATE TABLE pgmq.\"q_{new}\" (msg_id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY, read_ct integer NOT NULL DEFAULT 0, enqueued_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL, message jsonb, headers jsonb);
         CREATE TABLE pgmq.\"a_{new}\" (msg_id bigint PRIMARY KEY, read_ct integer NOT NULL DEFAULT 0, enqueued_at timestamptz NOT NULL DEFAULT now(), archived_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL, message jsonb);
         INSERT INTO pgmq.\"a_{new}\" (msg_id, vt, message) VALUES (42, now(), '{{\"order_id\": 2}}');"
    ))
    .await;
    let sb = Sandbox::new();
    let url = |q: &str| format!("{}?system=pgmq&queue={q}", pg_url());
    let r = sb
        .run(&["redrive", &url(&old), "--yes", "--output", "json"])
        .code(2);
    assert!(
        r.stderr.contains("has no headers column") && r.stderr.contains("msg_id"),
        "{}",
        r.stderr
    );
    assert_eq!(
        count(&db, &format!("SELECT count(*) FROM pgmq.\"a_{old}\"")).await,
        1,
        "nothing was retried"
    );
    // With the id in the body, the retry may go: the id travels there.
    let cfg = sb.write(
        "pgmq.toml",
        &format!(
            "[queues.old]\ndlq = \"{}\"\nid = \"json:/order_id\"\n",
            url(&old)
        ),
    );
    sb.run(&[
        "--config",
        &cfg.to_string_lossy(),
        "redrive",
        "old",
        "--yes",
        "--output",
        "json",
    ])
    .ok();
    assert_eq!(
        count(&db, &format!("SELECT count(*) FROM pgmq.\"q_{old}\"")).await,
        1
    );
    sb.run(&["redrive", &url(&new), "--yes", "--output", "json"])
        .ok();
    let carried: String = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT headers->>'dlqctl-stable-id' FROM pgmq.\"q_{new}\""
    )))
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(carried, "42", "the dead msg_id travels in new headers");
    db.exec(&format!(
        "DROP TABLE pgmq.\"q_{old}\", pgmq.\"a_{old}\", pgmq.\"q_{new}\", pgmq.\"a_{new}\"; DELETE FROM pgmq.meta WHERE queue_name IN ('{old}', '{new}')"
    ))
    .await;
}

/// A job system's table in another schema than the URL says: the hint names the schema (and
/// the shell's `&`), never the generic layout's column mapping. (In a database of its own, so
/// that other tests' River schemas are not found too.)
#[tokio::test]
async fn a_system_in_another_schema_is_found_and_named() {
    let name = format!("dlqctl_t_schema_{}", std::process::id());
    let admin = sqlx::PgPool::connect(&pg_url()).await.unwrap();
    for sql in [
        format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        format!("CREATE DATABASE {name}"),
    ] {
        sqlx::raw_sql(AssertSqlSafe(sql))
            .execute(&admin)
            .await
            .unwrap();
    }
    let url = pg_url().replace("/dlqctl_test", &format!("/{name}"));
    let own = sqlx::PgPool::connect(&url).await.unwrap();
    sqlx::raw_sql(AssertSqlSafe(format!(
        "CREATE SCHEMA demo_river; {}",
        RIVER_DDL.replace("{s}", "demo_river")
    )))
    .execute(&own)
    .await
    .unwrap();
    own.close().await;
    let sb = Sandbox::new();
    let r = sb.run(&["inspect", &format!("{url}?system=river")]).code(2);
    let _ = sqlx::raw_sql(AssertSqlSafe(format!("DROP DATABASE {name} WITH (FORCE)")))
        .execute(&admin)
        .await;
    assert!(
        r.stderr
            .contains("river_job is in schema demo_river: add &schema=demo_river")
            && r.stderr.contains("quote the URL"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("columns"), "{}", r.stderr);
}

/// The run's summary reports `n` rows passed over because another transaction held them.
fn assert_held(j: &serde_json::Value, n: u64, who: &str) {
    let u = &j["unaccounted"];
    assert_eq!(u.as_array().map(Vec::len), Some(1), "{who}: {j}");
    assert_eq!(u[0]["count"], n, "{who}: {j}");
    assert!(
        u[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("another transaction held them")),
        "{who}: {j}"
    );
}
