//! Exactly-once effects, end to end: messages fail and are dead-lettered, the cause is fixed,
//! they are redriven (twice), an export of the dead letters is replayed on top, and one
//! message that had already taken effect before it was dead-lettered comes back too. Every
//! balance must be credited exactly once.

use std::collections::BTreeMap;

use sqlx::AssertSqlSafe;

use crate::harness::{Db, Sandbox, pg_url};

/// The example consumer, compiled into this test (its `main` only reads the arguments): the
/// suite then needs no second build of it as a program.
#[path = "../../examples/idempotent_consumer.rs"]
#[allow(dead_code)]
mod idempotent_consumer;

async fn consume(db: &Db) -> String {
    idempotent_consumer::drain(&pg_url(), &db.schema, "payments")
        .await
        .expect("the example consumer drains the queue")
}

#[tokio::test]
async fn every_balance_is_credited_exactly_once() {
    let db = Db::new("exactly").await;
    db.exec(
        "CREATE TABLE {s}.accounts (id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
         INSERT INTO {s}.accounts (id) VALUES ('acc-0'), ('acc-1'), ('acc-2');
         INSERT INTO {s}.queue_messages (message_id, queue, payload, group_key)
         SELECT 'pay-'||g, 'payments', jsonb_build_object('account', 'acc-'||(g % 4), 'amount', g * 10), 'acc-'||(g % 4)
           FROM generate_series(1, 40) g",
    )
    .await;
    // acc-3 does not exist yet: its 10 payments fail and are dead-lettered.
    assert_eq!(
        consume(&db).await,
        "processed 30, duplicates 0, dead-lettered 10"
    );
    assert_eq!(db.count("dead_letters").await, 10);
    // pay-1 took effect, but its handler timed out after the commit and it was dead-lettered
    // anyway: a real at-least-once duplicate.
    db.exec("INSERT INTO {s}.dead_letters (message_id, queue, payload, error) VALUES ('pay-1', 'payments', '{\"account\": \"acc-1\", \"amount\": 10}', 'handler timed out after 30s')").await;

    let sb = Sandbox::new();
    let backup = sb.path("dead-letters.jsonl");
    sb.run(&["export", &db.dlq(), "-o", backup.to_str().unwrap()])
        .ok();
    let j = sb
        .run(&[
            "classify",
            &db.dlq(),
            "--dedupe",
            &format!("{}?table={}.processed_messages", pg_url(), db.schema),
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(
        j["dedupe"]["processed"], 1,
        "classify sees that pay-1 already took effect"
    );

    // Fix the cause, redrive, consume.
    db.exec("INSERT INTO {s}.accounts (id) VALUES ('acc-3')")
        .await;
    let j = sb
        .run(&["redrive", &db.dlq(), "--yes", "--output", "json"])
        .ok()
        .json();
    assert_eq!(j["moved"], 11);
    assert_eq!(
        consume(&db).await,
        "processed 10, duplicates 1, dead-lettered 0"
    );
    // Redrive again: nothing left, nothing happens.
    assert_eq!(
        sb.run(&["redrive", &db.dlq(), "--yes", "--output", "json"])
            .ok()
            .json()["moved"],
        0
    );
    // Replay the backup on top: all duplicates.
    let j = sb
        .run(&[
            "replay",
            backup.to_str().unwrap(),
            "--to",
            &db.table_url("queue_messages"),
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(j["moved"], 11);
    assert_eq!(
        consume(&db).await,
        "processed 0, duplicates 11, dead-lettered 0"
    );

    let balances: Vec<(String, i64)> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT id, balance FROM {}.accounts ORDER BY id",
        db.schema
    )))
    .fetch_all(&db.pool)
    .await
    .unwrap();
    let mut want: BTreeMap<String, i64> = BTreeMap::new();
    for g in 1..=40i64 {
        *want.entry(format!("acc-{}", g % 4)).or_default() += g * 10;
    }
    assert_eq!(balances.into_iter().collect::<BTreeMap<_, _>>(), want);
    assert_eq!(db.count("processed_messages").await, 40);
    assert_eq!(db.count("dead_letters").await, 0);
    assert_eq!(db.count("queue_messages").await, 0);
}
