//! Solid Queue (Rails): `solid_queue_failed_executions`; the retry is `FailedExecution#retry`.

use sqlx::PgPool;

use super::catalog::{columns, exists, need, or_null, refuse, rel};
use super::{ErrorFormat, Key, System};
use crate::error::Result;

pub(super) async fn detect(pool: &PgPool, schema: &str) -> Result<System> {
    let jobs = rel(schema, "solid_queue_jobs");
    let failed = rel(schema, "solid_queue_failed_executions");
    let ready = rel(schema, "solid_queue_ready_executions");
    for t in [&jobs, &failed, &ready] {
        if !exists(pool, t).await? {
            return Err(refuse("solid_queue", format!("no table {t}")));
        }
    }
    let cols = columns(pool, &jobs).await?;
    need(
        &cols,
        "solid_queue",
        "solid_queue_jobs",
        &[
            "id",
            "queue_name",
            "class_name",
            "arguments",
            "priority",
            "created_at",
        ],
    )?;
    Ok(System {
        name: "solid_queue",
        detected: format!("solid_queue ({schema})"),
        from: format!("{jobs} j JOIN {failed} f ON f.job_id = j.id"),
        dead: "true".into(),
        key: Key::one("id", "bigint"),
        body: "convert_to(j.arguments::text, 'UTF8')".into(),
        kind: "j.class_name".into(),
        queue: "j.queue_name".into(),
        attempt: "NULL::int8".into(),
        max_attempts: "NULL::int8".into(),
        error: "f.error".into(),
        error_format: ErrorFormat::Json,
        enqueued_at: "j.created_at".into(),
        dead_at: "f.created_at".into(),
        extra: format!(
            "jsonb_build_object('active_job_id', {}, 'priority', j.priority)",
            or_null(&cols, "active_job_id", "j.active_job_id", "text")
        ),
        lock_of: "f",
        // FailedExecution#retry: the failed execution goes, a ready execution comes.
        retry: format!(
            "WITH f AS (DELETE FROM {failed} WHERE job_id = ANY($1::text[]::bigint[]) RETURNING job_id), r AS (INSERT INTO {ready} (job_id, queue_name, priority, created_at) SELECT j.id, j.queue_name, j.priority, now() FROM {jobs} j JOIN f ON f.job_id = j.id RETURNING job_id) SELECT job_id::text FROM r"
        ),
        delete: format!(
            "WITH f AS (DELETE FROM {failed} WHERE job_id = ANY($1::text[]::bigint[]) RETURNING job_id) DELETE FROM {jobs} j USING f WHERE j.id = f.job_id RETURNING j.id::text"
        ),
        pruning: (None, "solid_queue never clears failed executions"),
        unique: "no unique keys (a ready execution per job: retrying a job that is already ready conflicts)",
        retry_loses_id: None,
    })
}
