//! Redriving a PostgreSQL dead-letter table: nothing lost, nothing doubled, ids kept.

use std::process::Stdio;
use std::time::Duration;

use sqlx::{AssertSqlSafe, Row};

use crate::harness::{Db, Sandbox, pg_url};

#[tokio::test]
async fn dry_run_changes_nothing_and_no_terminal_means_no_move() {
    let db = Db::new("dry").await;
    db.seed(10).await;
    let sb = Sandbox::new();
    let j = sb
        .run(&["redrive", &db.dlq(), "--dry-run", "--output", "json"])
        .ok()
        .json();
    assert_eq!(j["dry_run"], true);
    assert_eq!(j["moved"], 10);
    assert!(
        j["destinations"][0]["to"]
            .as_str()
            .unwrap()
            .contains("queue_messages")
    );
    let r = sb.run(&["redrive", &db.dlq()]).code(2);
    assert!(r.stderr.contains("--yes"), "{}", r.stderr);
    assert_eq!(db.count("dead_letters").await, 10);
    assert_eq!(db.count("queue_messages").await, 0);
}

#[tokio::test]
async fn redrive_moves_everything_with_ids_headers_and_groups() {
    let db = Db::new("move").await;
    db.seed(2500).await;
    db.exec("INSERT INTO {s}.dead_letters (message_id, queue, payload_bytes, error) VALUES ('bin-1', 'orders', '\\x00ff10'::bytea, 'x')").await;
    let before: Vec<(String, String)> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT message_id, md5(coalesce(payload::text, '') || coalesce(encode(payload_bytes, 'hex'), '') || headers::text || queue || coalesce(group_key, '')) FROM {}.dead_letters ORDER BY message_id",
        db.schema
    )))
    .fetch_all(&db.pool)
    .await
    .unwrap();
    let sb = Sandbox::new();
    let j = sb
        .run(&[
            "redrive",
            &db.dlq(),
            "--yes",
            "--batch-size",
            "400",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(j["moved"], 2501);
    assert_eq!(j["failed"], 0);
    assert_eq!(db.count("dead_letters").await, 0);
    // Every row arrives as it was, but for the loop guard's count of one more redrive.
    let counted: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT count(*) FROM {}.queue_messages WHERE headers->>'dlqctl-redrive-count' = '1'",
        db.schema
    )))
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(counted, 2501);
    let after: Vec<(String, String)> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT message_id, md5(coalesce(payload::text, '') || coalesce(encode(payload_bytes, 'hex'), '') || (headers - 'dlqctl-redrive-count')::text || queue || coalesce(group_key, '')) FROM {}.queue_messages ORDER BY message_id",
        db.schema
    )))
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(before, after);
    // A second run finds nothing and says so.
    let j = sb
        .run(&["redrive", &db.dlq(), "--yes", "--output", "json"])
        .ok()
        .json();
    assert_eq!(j["moved"], 0);
}

#[tokio::test]
async fn filters_and_max_leave_the_rest_in_place() {
    let db = Db::new("filt").await;
    db.seed(20).await;
    let sb = Sandbox::new();
    let j = sb
        .run(&[
            "redrive",
            &db.dlq(),
            "--class",
            "transient",
            "--max",
            "4",
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(j["moved"], 4);
    assert_eq!(db.count("queue_messages").await, 4);
    let j = sb
        .run(&[
            "redrive",
            &db.dlq(),
            "--class",
            "transient",
            "--yes",
            "--output",
            "json",
            "--batch-size",
            "3",
        ])
        .ok()
        .json();
    assert_eq!(j["moved"], 6);
    assert_eq!(j["skipped"], 10);
    let left = db.ids("dead_letters").await;
    assert_eq!(left.len(), 10);
    let permanent: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT count(*) FROM {}.dead_letters WHERE error ~ 'validation|not found'",
        db.schema
    )))
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(permanent, 10, "only the permanent failures are left");
}

#[tokio::test]
async fn an_active_twin_is_reported_and_its_dead_letter_kept() {
    let db = Db::new("twin").await;
    db.seed(6).await;
    db.exec(
        "CREATE UNIQUE INDEX ON {s}.queue_messages (message_id);
         INSERT INTO {s}.queue_messages (message_id, queue, payload) VALUES ('ord-3', 'orders', '{\"twin\": true}');
         INSERT INTO {s}.dead_letters (message_id, queue, payload) VALUES ('ord-5', 'orders', '{\"again\": true}')",
    )
    .await;
    let sb = Sandbox::new();
    let r = sb
        .run(&["redrive", &db.dlq(), "--yes", "--output", "json"])
        .code(1);
    let j = r.json();
    assert_eq!(j["moved"], 5, "{j}");
    assert_eq!(j["failed"], 2, "the twin of ord-3 and the second ord-5");
    assert!(
        j["failures"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("unique"),
        "{j}"
    );
    assert_eq!(db.ids("dead_letters").await, ["ord-3", "ord-5"]);
    assert_eq!(db.count("queue_messages").await, 6);
}

#[tokio::test]
async fn locked_rows_are_skipped_not_waited_on() {
    let db = Db::new("locked").await;
    db.seed(8).await;
    let tx = db.hold(&["ord-2", "ord-7"]).await;
    let sb = Sandbox::new();
    let j = sb
        .run(&[
            "redrive",
            &db.dlq(),
            "--yes",
            "--output",
            "json",
            "--batch-size",
            "3",
        ])
        .code(1)
        .json();
    assert_eq!(j["moved"], 6);
    assert_eq!(j["unaccounted"][0]["count"], 2, "{j}");
    assert_eq!(db.ids("dead_letters").await, ["ord-2", "ord-7"]);
    tx.rollback().await.unwrap();
    let j = sb
        .run(&["redrive", &db.dlq(), "--yes", "--output", "json"])
        .ok()
        .json();
    assert_eq!(j["moved"], 2);
    assert_eq!(db.count("queue_messages").await, 8);
}

/// Batches are moved by key range, which cannot skip a locked row: a batch that meets one is
/// rolled back after `lock_timeout` and claimed with SKIP LOCKED, and after three such batches
/// every later one is claimed that way from the start. The held rows are reported (exit 1).
#[tokio::test]
async fn held_rows_send_range_moves_to_skip_locked() {
    let db = Db::new("heldrange").await;
    db.seed(30).await;
    let held = ["ord-2", "ord-5", "ord-8", "ord-11", "ord-14", "ord-20"];
    let tx = db.hold(&held).await;
    let sb = Sandbox::new();
    let r = sb
        .run(&[
            "redrive",
            &db.dlq(),
            "--yes",
            "--output",
            "json",
            "--batch-size",
            "3",
            "-vv",
        ])
        .code(1);
    assert_eq!(r.json()["moved"], 24, "{}", r.stderr);
    assert_eq!(r.json()["unaccounted"][0]["count"], 6, "{}", r.stderr);
    assert!(
        r.stderr.contains("claiming with SKIP LOCKED from now on"),
        "{}",
        r.stderr
    );
    let mut left = db.ids("dead_letters").await;
    left.sort();
    let mut want: Vec<String> = held.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(left, want);
    assert_eq!(db.count("queue_messages").await, 24);
    tx.rollback().await.unwrap();
}

#[tokio::test]
async fn two_operators_cannot_redrive_one_table_at_once() {
    let db = Db::new("advisory").await;
    db.seed(3).await;
    let mut conn = db.pool.acquire().await.unwrap();
    sqlx::query(AssertSqlSafe(format!(
        "SELECT pg_advisory_lock(hashtextextended('dlqctl.redrive:' || '{}.dead_letters'::regclass::oid, 0))",
        db.schema
    )))
    .execute(&mut *conn)
    .await
    .unwrap();
    let sb = Sandbox::new();
    let r = sb.run(&["redrive", &db.dlq(), "--yes"]).code(3);
    assert!(r.stderr.contains("advisory lock"), "{}", r.stderr);
    assert_eq!(db.count("dead_letters").await, 3);
    sqlx::query("SELECT pg_advisory_unlock_all()")
        .execute(&mut *conn)
        .await
        .unwrap();
}

/// Ctrl-C (SIGINT) and kill -9 in the middle of a redrive: every message is in exactly one
/// of the two tables, and a re-run finishes the job.
#[tokio::test]
async fn interrupted_or_killed_redrives_lose_nothing() {
    for signal in ["-INT", "-KILL"] {
        let db = Db::new("crash").await;
        db.seed(3000).await;
        let sb = Sandbox::new();
        let mut child = sb
            .cmd(&[
                "redrive",
                &db.dlq(),
                "--yes",
                "--batch-size",
                "50",
                "--rate",
                "2000/s",
                "--output",
                "json",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until it is under way.
        for _ in 0..100 {
            if db.count("queue_messages").await > 100 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let st = std::process::Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(st.success());
        let status = child.wait().unwrap();
        db.wait_for_dlqctl_to_let_go().await;
        let (dlq, queue) = (
            db.count("dead_letters").await,
            db.count("queue_messages").await,
        );
        assert_eq!(
            dlq + queue,
            3000,
            "{signal}: nothing lost, nothing doubled (dlq {dlq}, queue {queue})"
        );
        assert!(
            queue > 0 && dlq > 0,
            "{signal}: stopped mid-run (dlq {dlq}, queue {queue})"
        );
        if signal == "-INT" {
            assert_eq!(status.code(), Some(130));
        }
        sb.run(&["redrive", &db.dlq(), "--yes", "--output", "json"])
            .ok();
        assert_eq!(db.count("dead_letters").await, 0);
        let distinct: i64 = sqlx::query(AssertSqlSafe(format!(
            "SELECT count(DISTINCT message_id) AS n FROM {}.queue_messages",
            db.schema
        )))
        .fetch_one(&db.pool)
        .await
        .unwrap()
        .get("n");
        assert_eq!((distinct, db.count("queue_messages").await), (3000, 3000));
    }
}

#[tokio::test]
async fn targets_with_other_payload_types_and_missing_columns() {
    let db = Db::new("types").await;
    db.seed(3).await;
    db.exec(
        "INSERT INTO {s}.dead_letters (message_id, queue, payload_bytes, error) VALUES ('bin-1', 'orders', '\\xdeadbeef'::bytea, 'x');
         CREATE TABLE {s}.text_jobs (id bigserial PRIMARY KEY, message_id text NOT NULL, body text NOT NULL, headers jsonb, queue text);
         CREATE TABLE {s}.bytes_jobs (id bigserial PRIMARY KEY, message_id text NOT NULL, payload bytea NOT NULL, headers jsonb)",
    )
    .await;
    let sb = Sandbox::new();
    // A text payload column (mapped from `body`): the binary row cannot go there.
    let cfg = sb.write(
        "dlqctl.toml",
        &format!(
            "[queues.orders]\ndlq = \"{}\"\nsource = \"{}\"\n[queues.orders.source_columns]\npayload = \"body\"\n",
            db.dlq(),
            db.table_url("text_jobs")
        ),
    );
    let _ = cfg;
    let r = sb
        .run(&["redrive", "orders", "--yes", "--output", "json"])
        .code(1);
    let j = r.json();
    assert_eq!(j["moved"], 3, "{j}");
    assert!(
        j["failures"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("binary"),
        "{j}"
    );
    assert_eq!(db.ids("dead_letters").await, ["bin-1"]);
    let body: String = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT body FROM {}.text_jobs WHERE message_id = 'ord-1'",
        db.schema
    )))
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["order_id"],
        1
    );
    // A bytea payload column takes anything, byte for byte.
    let r = sb
        .run(&[
            "redrive",
            &db.dlq(),
            "--to",
            &db.table_url("bytes_jobs"),
            "--yes",
            "--output",
            "json",
        ])
        .ok();
    assert_eq!(r.json()["moved"], 1);
    let b: Vec<u8> = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT payload FROM {}.bytes_jobs",
        db.schema
    )))
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(b, [0xde, 0xad, 0xbe, 0xef]);
}

#[tokio::test]
async fn replay_from_a_queue_copies_and_keeps_the_source() {
    let db = Db::new("replayq").await;
    db.seed(5).await;
    let sb = Sandbox::new();
    let r = sb
        .run(&[
            "replay",
            &db.dlq(),
            "--to",
            &db.table_url("queue_messages"),
            "--yes",
            "--class",
            "permanent",
            "--output",
            "json",
        ])
        .ok();
    assert_eq!(r.json()["moved"], 3);
    assert_eq!(db.count("dead_letters").await, 5);
    assert_eq!(db.ids("queue_messages").await, ["ord-1", "ord-3", "ord-5"]);
    sb.run(&["replay", &db.dlq(), "--yes"]).code(2);
}

#[tokio::test]
async fn the_configured_stable_id_and_missing_ids_are_honoured_by_local_moves() {
    let db = Db::new("idloc").await;
    db.exec(
        "ALTER TABLE {s}.dead_letters ALTER COLUMN message_id DROP NOT NULL;
         INSERT INTO {s}.dead_letters (message_id, queue, payload, headers) VALUES ('row-a', 'orders', '{}', '{\"x-request-id\": \"req-a\"}');
         INSERT INTO {s}.dead_letters (message_id, queue, payload) VALUES (NULL, 'orders', '{\"no\": \"id\"}')",
    )
    .await;
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        &format!(
            "[queues.o]\ndlq = \"{}\"\nid = \"header:x-request-id\"\n",
            db.dlq()
        ),
    );
    let j = sb
        .run(&["redrive", "o", "--yes", "--output", "json"])
        .ok()
        .json();
    assert_eq!(j["moved"], 2, "{j}");
    let mut ids = db.ids("queue_messages").await;
    ids.sort();
    let null_row_id: String = ids.iter().find(|i| *i != "req-a").unwrap().clone();
    assert!(
        ids.contains(&"req-a".to_string()),
        "the configured id, not the column: {ids:?}"
    );
    assert!(
        null_row_id.parse::<i64>().is_ok(),
        "no producer id: the row key is the stable id ({null_row_id})"
    );
    // Without a configured id the NULL-id row also moves exactly once (the fast path).
    db.exec(
        "INSERT INTO {s}.dead_letters (message_id, queue, payload) VALUES (NULL, 'orders', '{}')",
    )
    .await;
    sb.run(&["--config", "/dev/null", "redrive", &db.dlq(), "--yes"])
        .ok();
    sb.run(&["--config", "/dev/null", "redrive", &db.dlq(), "--yes"])
        .ok();
    assert_eq!(db.count("dead_letters").await, 0);
    assert_eq!(db.count("queue_messages").await, 3);
}

#[tokio::test]
async fn a_binary_row_and_a_not_null_payload_is_refused_per_message() {
    let db = Db::new("nnull").await;
    db.seed(2).await;
    db.exec(
        "INSERT INTO {s}.dead_letters (message_id, queue, payload_bytes) VALUES ('bin-1', 'orders', '\\x00ff'::bytea);
         CREATE TABLE {s}.strict (id bigserial PRIMARY KEY, message_id text NOT NULL, queue text NOT NULL, payload jsonb NOT NULL, payload_bytes bytea, headers jsonb)",
    )
    .await;
    let sb = Sandbox::new();
    let j = sb
        .run(&[
            "redrive",
            &db.dlq(),
            "--to",
            &db.table_url("strict"),
            "--yes",
            "--output",
            "json",
        ])
        .code(1)
        .json();
    assert_eq!(j["moved"], 2);
    assert!(
        j["failures"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("NOT NULL"),
        "{j}"
    );
    assert_eq!(db.ids("dead_letters").await, ["bin-1"]);
}

#[tokio::test]
async fn no_destination_and_missing_targets_are_refused_up_front() {
    let db = Db::new("nodest").await;
    db.seed(2).await;
    let sb = Sandbox::new();
    let url = format!(
        "{}?table={}.dead_letters",
        crate::harness::pg_url(),
        db.schema
    );
    let r = sb.run(&["redrive", &url, "--yes"]).code(2);
    assert!(
        r.stderr.contains("no destination") && r.stderr.contains("--to"),
        "{}",
        r.stderr
    );
    let r = sb
        .run(&["redrive", &url, "--to", &db.table_url("nope"), "--dry-run"])
        .code(3);
    assert!(
        r.stderr.contains("not found"),
        "a dry run opens the target: {}",
        r.stderr
    );
    assert_eq!(db.count("dead_letters").await, 2);
}

/// With --strip-header a same-database redrive cannot copy rows inside the server (INSERT …
/// SELECT copies the headers whole): it reads, sends and deletes them the ordinary way, and the
/// copies carry only the headers the rules keep. A bad pattern is refused before anything moves.
#[tokio::test]
async fn header_rules_choose_which_headers_a_row_carries() {
    let db = Db::new("hdr").await;
    db.seed(30).await;
    let sb = Sandbox::new();
    let r = sb
        .run(&["redrive", &db.dlq(), "--yes", "--strip-header", "[x"])
        .code(2);
    assert!(r.stderr.contains("--strip-header"), "{}", r.stderr);
    assert_eq!(db.count("dead_letters").await, 30);
    let j = sb
        .run(&[
            "redrive",
            &db.dlq(),
            "--yes",
            "--strip-header",
            "ten*",
            "--batch-size",
            "7",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(j["moved"], 30, "{j}");
    assert_eq!(db.count("dead_letters").await, 0);
    let rows: Vec<(String, serde_json::Value)> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT message_id, headers FROM {}.queue_messages ORDER BY message_id",
        db.schema
    )))
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 30);
    for (id, h) in &rows {
        let n = id.strip_prefix("ord-").unwrap();
        assert_eq!(h["trace-id"], format!("tr-{n}"), "{id}: {h}");
        assert!(h.get("tenant").is_none(), "{id}: {h}");
    }
}

/// Same-database moves are decided on the resolved connection, not the URL's text: a target
/// whose `?dbname=` names another database is written there, by the two-step path.
#[tokio::test]
async fn a_dbname_parameter_sends_copies_to_that_database() {
    let db = Db::new("dbname").await;
    db.seed(3).await;
    // The same schema and tables in the other database.
    let other = sqlx::PgPool::connect(&crate::harness::demo_pg_url())
        .await
        .unwrap();
    sqlx::raw_sql(AssertSqlSafe(format!(
        "DROP SCHEMA IF EXISTS {s} CASCADE; CREATE SCHEMA {s}; SET search_path TO {s}; {}; RESET search_path;",
        crate::harness::LAYOUT_SQL,
        s = db.schema
    )))
    .execute(&other)
    .await
    .unwrap();
    let sb = Sandbox::new();
    let r = sb
        .run(&[
            "redrive",
            &format!("{}?table={}.dead_letters", pg_url(), db.schema),
            "--to",
            &format!(
                "{}?dbname=dlqctl_demo&table={}.queue_messages",
                pg_url(),
                db.schema
            ),
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(r["moved"], 3);
    assert!(
        r["destinations"][0]["to"]
            .as_str()
            .is_some_and(|t| t.contains("dlqctl_demo")),
        "{r}"
    );
    assert_eq!(
        db.count("queue_messages").await,
        0,
        "nothing in the source database"
    );
    let n: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT count(*) FROM {}.queue_messages",
        db.schema
    )))
    .fetch_one(&other)
    .await
    .unwrap();
    assert_eq!(n, 3, "the copies are in dlqctl_demo");
    assert_eq!(db.count("dead_letters").await, 0);
    sqlx::raw_sql(AssertSqlSafe(format!("DROP SCHEMA {} CASCADE", db.schema)))
        .execute(&other)
        .await
        .unwrap();
}

/// An empty message_id is no id: a local move gives the copy the row's key, as every read does,
/// never the shared id `''`.
#[tokio::test]
async fn an_empty_message_id_is_replaced_by_the_row_key_in_local_moves() {
    let db = Db::new("emptyid").await;
    db.exec(
        "INSERT INTO {s}.dead_letters (message_id, queue, payload) VALUES ('', 'orders', '{\"a\": 1}'), ('', 'orders', '{\"a\": 2}'), ('ord-3', 'orders', '{\"a\": 3}')",
    )
    .await;
    let keys: Vec<String> = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT id::text FROM {}.dead_letters WHERE message_id = '' ORDER BY id",
        db.schema
    )))
    .fetch_all(&db.pool)
    .await
    .unwrap();
    let sb = Sandbox::new();
    sb.run(&["redrive", &db.dlq(), "--yes", "--output", "json"])
        .ok();
    let mut want = keys.clone();
    want.push("ord-3".into());
    want.sort();
    assert_eq!(db.ids("queue_messages").await, want);
}

/// A target whose message_id column would change an id (varchar(8) truncates, uuid lowercases)
/// gets no copy of that message: it is refused with the reason and stays in the dead-letter
/// table, and a re-run adds nothing.
#[tokio::test]
async fn ids_a_narrower_target_column_would_change_are_refused() {
    let db = Db::new("narrow").await;
    db.exec(
        "CREATE TABLE {s}.short_q (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, message_id varchar(8) NOT NULL, queue text NOT NULL, payload jsonb, payload_bytes bytea, headers jsonb NOT NULL DEFAULT '{}');
         CREATE TABLE {s}.uuid_q (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, message_id uuid NOT NULL, queue text NOT NULL, payload jsonb, payload_bytes bytea, headers jsonb NOT NULL DEFAULT '{}');
         INSERT INTO {s}.dead_letters (message_id, queue, payload) VALUES
           ('ord-1', 'orders', '{}'), ('order-number-2', 'orders', '{}'),
           ('6f1c1a9e-7b1e-4c53-9d1c-2f3e4a5b6c7d', 'orders', '{}'), ('6F1C1A9E-7B1E-4C53-9D1C-2F3E4A5B6C7E', 'orders', '{}'), ('not-a-uuid', 'orders', '{}')",
    )
    .await;
    let sb = Sandbox::new();
    let dlq = format!("{}?table={}.dead_letters", pg_url(), db.schema);
    for round in 0..2 {
        // Same database (one transaction per batch): the refused rows stay.
        let r = sb
            .run(&[
                "redrive",
                &dlq,
                "--to",
                &db.table_url("short_q"),
                "--id",
                "ord-1",
                "--id",
                "order-number-2",
                "--yes",
                "--output",
                "json",
            ])
            .code(1)
            .json();
        assert_eq!(r["moved"], if round == 0 { 1 } else { 0 }, "{r}");
        let reason = r["failures"][0]["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("would be stored as `order-nu`")
                && reason.contains("character varying(8)"),
            "{r}"
        );
    }
    assert_eq!(
        db.count("short_q").await,
        1,
        "a re-run adds no truncated copy"
    );
    let r = sb
        .run(&[
            "redrive",
            &dlq,
            "--to",
            &db.table_url("uuid_q"),
            "--yes",
            "--output",
            "json",
        ])
        .code(1)
        .json();
    // The lowercase uuid moves; the uppercase one would be stored lowercased; the others are
    // no uuids.
    assert_eq!(r["moved"], 1, "{r}");
    assert_eq!(r["failed"], 3, "{r}");
    let ids: Vec<String> = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT message_id FROM {}.dead_letters ORDER BY message_id",
        db.schema
    )))
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        ids,
        vec![
            "6F1C1A9E-7B1E-4C53-9D1C-2F3E4A5B6C7E",
            "not-a-uuid",
            "order-number-2"
        ]
    );
}
