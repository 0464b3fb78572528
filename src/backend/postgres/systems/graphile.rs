//! graphile-worker (Node.js): jobs that used all their attempts and are not locked; the retry is its `reschedule_jobs` (attempts back to 0, run now).

use sqlx::PgPool;

use super::catalog::{columns, exists, function_exists, missing_table, need, or_null, refuse, rel};
use super::{ErrorFormat, Key, System};
use crate::backend::postgres::layout::quote_ident;
use crate::error::Result;

pub(super) async fn detect(pool: &PgPool, schema: &str) -> Result<System> {
    let jobs = rel(schema, "_private_jobs");
    if !exists(pool, &jobs).await? {
        if exists(pool, &rel(schema, "jobs")).await? {
            return Err(refuse(
                "graphile-worker",
                format!(
                    "{schema}.jobs without {schema}._private_jobs is graphile-worker < 0.14, which is not supported"
                ),
            ));
        }
        return Err(missing_table(pool, "graphile-worker", schema, "_private_jobs").await);
    }
    let cols = columns(pool, &jobs).await?;
    need(
        &cols,
        "graphile-worker",
        "_private_jobs",
        &[
            "id",
            "task_id",
            "payload",
            "attempts",
            "max_attempts",
            "last_error",
            "run_at",
            "created_at",
            "locked_at",
        ],
    )?;
    let tasks = rel(schema, "_private_tasks");
    let queues = rel(schema, "_private_job_queues");
    let reschedule = format!("{}.reschedule_jobs", quote_ident(schema));
    let has_fn = function_exists(pool, &format!("{schema}.reschedule_jobs")).await?;
    let retry = if has_fn {
        // graphile-worker's own reschedule_jobs (it skips locked jobs itself).
        format!(
            "SELECT id::text FROM {reschedule}($1::text[]::bigint[], run_at => now(), attempts => 0)"
        )
    } else {
        format!(
            "UPDATE {jobs} SET run_at = now(), attempts = 0, updated_at = now() WHERE id = ANY($1::text[]::bigint[]) AND locked_at IS NULL RETURNING id::text"
        )
    };
    Ok(System {
        name: "graphile-worker",
        detected: format!(
            "graphile-worker ({schema}._private_jobs{})",
            if has_fn { ", reschedule_jobs()" } else { "" }
        ),
        from: format!(
            "{jobs} j JOIN {tasks} t ON t.id = j.task_id LEFT JOIN {queues} q ON q.id = j.job_queue_id"
        ),
        dead: "j.attempts >= j.max_attempts AND j.locked_at IS NULL".into(),
        key: Key::one("id", "bigint"),
        body: "convert_to(j.payload::text, 'UTF8')".into(),
        kind: "t.identifier".into(),
        queue: "q.queue_name".into(),
        attempt: "j.attempts".into(),
        max_attempts: "j.max_attempts".into(),
        error: "j.last_error".into(),
        error_format: ErrorFormat::Text,
        enqueued_at: "j.created_at".into(),
        dead_at: or_null(&cols, "updated_at", "j.updated_at", "timestamptz"),
        extra: format!(
            "jsonb_build_object('key', {}, 'priority', j.priority)",
            or_null(&cols, "key", "j.key", "text")
        ),
        lock_of: "j",
        retry,
        delete: format!(
            "DELETE FROM {jobs} WHERE id = ANY($1::text[]::bigint[]) AND locked_at IS NULL RETURNING id::text"
        ),
        pruning: (
            None,
            "graphile-worker keeps permanently failed jobs forever (until `graphile-worker --cleanup DELETE_PERMAFAILED_JOBS`)",
        ),
        unique: "job_key (`key`) is unique while the job row exists",
        retry_loses_id: None,
    })
}
