//! Que (Ruby): expired jobs (`expired_at` set); the retry clears it and the error count and runs the job now.

use sqlx::PgPool;

use super::catalog::{columns, exists, missing_table, need, or_null, rel};
use super::{ErrorFormat, Key, System};
use crate::error::Result;

pub(super) async fn detect(pool: &PgPool, schema: &str) -> Result<System> {
    let t = rel(schema, "que_jobs");
    if !exists(pool, &t).await? {
        return Err(missing_table(pool, "que", schema, "que_jobs").await);
    }
    let cols = columns(pool, &t).await?;
    need(
        &cols,
        "que",
        "que_jobs",
        &[
            "id",
            "job_class",
            "queue",
            "args",
            "error_count",
            "last_error_message",
            "run_at",
            "expired_at",
        ],
    )?;
    Ok(System {
        name: "que",
        detected: format!(
            "que ({schema}.que_jobs{})",
            if cols.contains("kwargs") {
                ", Que 2"
            } else {
                ""
            }
        ),
        from: format!("{t} j"),
        dead: "j.expired_at IS NOT NULL".into(),
        key: Key::one("id", "bigint"),
        body: if cols.contains("kwargs") {
            "convert_to(jsonb_build_object('args', j.args, 'kwargs', j.kwargs)::text, 'UTF8')"
                .into()
        } else {
            "convert_to(j.args::text, 'UTF8')".into()
        },
        kind: "j.job_class".into(),
        queue: "j.queue".into(),
        attempt: "j.error_count".into(),
        max_attempts: "NULL::int8".into(),
        error: "j.last_error_message".into(),
        error_format: ErrorFormat::Text,
        enqueued_at: "NULL::timestamptz".into(),
        dead_at: "j.expired_at".into(),
        extra: format!(
            "jsonb_build_object('priority', j.priority, 'backtrace', {})",
            or_null(
                &cols,
                "last_error_backtrace",
                "j.last_error_backtrace",
                "text"
            )
        ),
        lock_of: "j",
        retry: format!(
            "UPDATE {t} SET error_count = 0, expired_at = NULL, run_at = now() WHERE id = ANY($1::text[]::bigint[]) AND expired_at IS NOT NULL RETURNING id::text"
        ),
        delete: format!(
            "DELETE FROM {t} WHERE id = ANY($1::text[]::bigint[]) AND expired_at IS NOT NULL RETURNING id::text"
        ),
        pruning: (None, "Que keeps expired jobs forever"),
        unique: "no unique keys",
        retry_loses_id: None,
    })
}
