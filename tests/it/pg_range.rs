//! Range moves (one statement a batch, its own transaction) racing other writers of the same
//! rows: every row ends up copied exactly once, or deleted by the other writer and not
//! copied; the redrive count goes on every copy dlqctl makes (docs/postgres.md, "range moves").

use std::collections::HashSet;
use std::process::Stdio;
use std::time::Duration;

use sqlx::AssertSqlSafe;

use crate::harness::{Db, Sandbox};

const N: i64 = 20_000;

/// A rival mover walks the table from the same end with the range statement's shape (a range
/// deleted, its rows copied with a marker), and a consumer deletes every 7th row without a
/// copy, both while dlqctl's range moves run over the same keys.
#[tokio::test]
async fn range_moves_racing_another_mover_copy_every_row_once() {
    let db = Db::new("rangerace").await;
    db.seed(N).await;
    let sb = Sandbox::new();
    let child = sb
        .cmd(&[
            "redrive",
            &db.dlq(),
            "--yes",
            "--batch-size",
            "100",
            "--output",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let s = &db.schema;
    let rival = format!(
        "WITH moved AS (DELETE FROM {s}.dead_letters WHERE id <= (SELECT id FROM {s}.dead_letters ORDER BY id OFFSET 49 LIMIT 1) RETURNING *)
         INSERT INTO {s}.queue_messages (message_id, queue, payload, headers)
         SELECT message_id, queue, payload, headers || '{{\"mover\": \"rival\"}}' FROM moved"
    );
    let consumer = format!(
        "DELETE FROM {s}.dead_letters WHERE id IN (SELECT id FROM {s}.dead_letters WHERE id % 7 = 0 ORDER BY id LIMIT 40) RETURNING message_id"
    );
    let mut consumed: Vec<String> = Vec::new();
    let mut rival_rounds = 0;
    while db.count("dead_letters").await > 0 && rival_rounds < 2000 {
        sqlx::query(AssertSqlSafe(rival.clone()))
            .execute(&db.pool)
            .await
            .unwrap();
        consumed.extend(
            sqlx::query_scalar::<_, String>(AssertSqlSafe(consumer.clone()))
                .fetch_all(&db.pool)
                .await
                .unwrap(),
        );
        rival_rounds += 1;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["failed"], 0, "{j}");
    assert_eq!(db.count("dead_letters").await, 0);

    let copies = db
        .query_strings("SELECT message_id FROM {s}.queue_messages")
        .await;
    let distinct: HashSet<&String> = copies.iter().collect();
    assert_eq!(distinct.len(), copies.len(), "a row was copied twice");
    let consumed: HashSet<&String> = consumed.iter().collect();
    assert!(
        distinct.is_disjoint(&consumed),
        "a row the consumer deleted was copied"
    );
    assert_eq!(
        (distinct.len() + consumed.len()) as i64,
        N,
        "every row copied or consumed (copies {}, consumed {})",
        distinct.len(),
        consumed.len()
    );
    // dlqctl's copies, and only they, count one more redrive; the summary counts them.
    let ours = db
        .query_strings(
            "SELECT count(*)::text FROM {s}.queue_messages WHERE headers->>'dlqctl-redrive-count' = '1' AND NOT headers ? 'mover'",
        )
        .await;
    let theirs = db
        .query_strings("SELECT count(*)::text FROM {s}.queue_messages WHERE headers ? 'mover' AND NOT headers ? 'dlqctl-redrive-count'")
        .await;
    let (ours, theirs): (i64, i64) = (ours[0].parse().unwrap(), theirs[0].parse().unwrap());
    assert_eq!(ours + theirs, copies.len() as i64);
    assert_eq!(j["moved"], ours, "{j}");
    assert!(
        ours > 0 && theirs > 0,
        "both movers moved rows ({ours}, {theirs})"
    );
}

/// A range whose copies cannot all go in (an active twin on a unique index) rolls itself back
/// and goes the careful way: the twin's row stays, reported; the rest move, counted once.
#[tokio::test]
async fn a_range_that_meets_a_twin_is_undone_and_moved_row_by_row() {
    let db = Db::new("rangetwin").await;
    db.seed(250).await;
    db.exec("CREATE UNIQUE INDEX ON {s}.queue_messages (message_id)")
        .await;
    db.exec("INSERT INTO {s}.queue_messages (message_id, queue, payload) VALUES ('ord-120', 'orders', '{}')")
        .await;
    let sb = Sandbox::new();
    let j = sb
        .run(&[
            "redrive",
            &db.dlq(),
            "--yes",
            "--batch-size",
            "100",
            "--output",
            "json",
        ])
        .code(1)
        .json();
    assert_eq!(j["moved"], 249, "{j}");
    assert_eq!(db.ids("dead_letters").await, ["ord-120"]);
    let counted = db
        .query_strings(
            "SELECT count(*)::text FROM {s}.queue_messages WHERE headers->>'dlqctl-redrive-count' = '1'",
        )
        .await;
    assert_eq!(counted, ["249"]);
}

/// A row the target refuses (a CHECK constraint) in a move within one database: the range
/// statement fails and is undone, the batch goes row by row, and only the refused row stays,
/// failed with the server's words; the run goes on (exit 1). Without filters the batch is a
/// range move; with one, a claimed batch moved in rounds, where the refused round is undone
/// to its savepoint. Before issue 26's fix the refused row stopped the run with exit 3.
#[tokio::test]
async fn a_row_the_target_refuses_fails_alone_in_the_same_database() {
    for filter in [None, Some(".id != \"\"")] {
        let db = Db::new("rangecheck").await;
        db.seed(250).await;
        db.exec(
            "ALTER TABLE {s}.queue_messages ADD CONSTRAINT no_120 CHECK (message_id <> 'ord-120')",
        )
        .await;
        let sb = Sandbox::new();
        let dlq = db.dlq();
        let mut args = vec![
            "redrive",
            &dlq,
            "--yes",
            "--batch-size",
            "100",
            "--output",
            "json",
        ];
        if let Some(f) = filter {
            args.extend(["--where", f]);
        }
        let j = sb.run(&args).code(1).json();
        let how = format!("filter {filter:?}: {j}");
        assert_eq!(
            (j["moved"].as_u64(), j["failed"].as_u64()),
            (Some(249), Some(1)),
            "{how}"
        );
        let failure = &j["failures"][0];
        assert_eq!(failure["ids"], serde_json::json!(["ord-120"]), "{how}");
        assert!(
            failure["reason"]
                .as_str()
                .is_some_and(|r| r.contains("no_120")),
            "{how}"
        );
        assert_eq!(db.ids("dead_letters").await, ["ord-120"], "{how}");
        assert_eq!(db.count("queue_messages").await, 249, "{how}");
    }
}
