//! An idempotent consumer in the shape dlqctl is built for (the background article's pattern):
//! the message's stable id goes into a dedupe table under a unique constraint, in the same
//! transaction as the effect (crediting a balance), so any redelivery — a retry, a redrive, a
//! replay of an export — is a no-op.
//!
//! It drains `queue_messages` (dlqctl's generic layout, docs/sql/generic-layout.sql) for one
//! queue. Payloads look like `{"account": "acc-1", "amount": 100}`; a payment to an account
//! that does not exist fails and is dead-lettered into `dead_letters` with its error.
//!
//!     cargo run --example idempotent_consumer -- DATABASE_URL [SCHEMA] [QUEUE]

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, Row};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: idempotent_consumer DATABASE_URL [SCHEMA] [QUEUE]")?;
    let schema = args.next().unwrap_or_else(|| "public".into());
    let queue = args.next().unwrap_or_else(|| "payments".into());
    println!("{}", drain(&url, &schema, &queue).await?);
    Ok(())
}

/// Drain `queue` until it is empty; what happened, as one line. (tests/it/exactly_once.rs
/// calls this function directly.)
pub async fn drain(
    url: &str,
    schema: &str,
    queue: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    let opts = PgConnectOptions::from_str(url)?.options([("search_path", schema)]);
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(opts)
        .await?;
    let mut conn = pool.acquire().await?;
    let (mut processed, mut duplicates, mut dead) = (0u64, 0u64, 0u64);
    loop {
        let mut tx = conn.begin().await?;
        let Some(row) = sqlx::query(
            "SELECT id, message_id, payload, headers, attempts, enqueued_at FROM queue_messages
              WHERE queue = $1 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
        )
        .bind(queue)
        .fetch_optional(&mut *tx)
        .await?
        else {
            break;
        };
        let id: i64 = row.get("id");
        let message_id: String = row.get("message_id");
        let payload: serde_json::Value = row.get("payload");
        let account = payload["account"].as_str().unwrap_or_default().to_string();
        let amount = payload["amount"].as_i64().unwrap_or(0);

        // 1. The dedupe record, under the primary key, in this transaction.
        let fresh = sqlx::query("INSERT INTO processed_messages (message_id, handled_at) VALUES ($1, now()) ON CONFLICT (message_id) DO NOTHING")
            .bind(&message_id)
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 1;
        if !fresh {
            // Seen before: the credit is already applied. Acknowledge.
            sqlx::query("DELETE FROM queue_messages WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            duplicates += 1;
            continue;
        }
        // 2. The effect.
        let credited = sqlx::query("UPDATE accounts SET balance = balance + $1 WHERE id = $2")
            .bind(amount)
            .bind(&account)
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 1;
        if !credited {
            // A permanent failure: undo the dedupe record and dead-letter the message.
            tx.rollback().await?;
            let mut tx = conn.begin().await?;
            sqlx::query(
                "WITH m AS (DELETE FROM queue_messages WHERE id = $1 RETURNING *)
                 INSERT INTO dead_letters (message_id, queue, payload, payload_bytes, headers, error, attempts, group_key, enqueued_at)
                 SELECT message_id, queue, payload, payload_bytes, headers, $2, attempts + 1, group_key, enqueued_at FROM m",
            )
            .bind(id)
            .bind(format!("account {account} not found"))
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            dead += 1;
            continue;
        }
        // 3. Acknowledge, in the same transaction.
        sqlx::query("DELETE FROM queue_messages WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        processed += 1;
    }
    Ok(format!(
        "processed {processed}, duplicates {duplicates}, dead-lettered {dead}"
    ))
}
