//! GoodJob (Rails): finished jobs with an error; the retry is `GoodJob::Job#retry_job`.

use sqlx::PgPool;
use std::time::Duration;

use super::catalog::{columns, exists, missing_table, need, or_null, rel};
use super::{ErrorFormat, Key, System};
use crate::error::Result;

pub(super) async fn detect(pool: &PgPool, schema: &str) -> Result<System> {
    let t = rel(schema, "good_jobs");
    if !exists(pool, &t).await? {
        return Err(missing_table(pool, "good_job", schema, "good_jobs").await);
    }
    let cols = columns(pool, &t).await?;
    need(
        &cols,
        "good_job",
        "good_jobs",
        &[
            "id",
            "queue_name",
            "serialized_params",
            "scheduled_at",
            "performed_at",
            "finished_at",
            "error",
            "created_at",
        ],
    )?;
    let locks = if cols.contains("locked_by_id") {
        ", locked_by_id = NULL, locked_at = NULL"
    } else {
        ""
    };
    Ok(System {
        name: "good_job",
        detected: format!(
            "good_job ({schema}.good_jobs{})",
            if cols.contains("job_class") {
                ""
            } else {
                ", pre-3.0 columns"
            }
        ),
        from: format!("{t} j"),
        dead: "j.finished_at IS NOT NULL AND j.error IS NOT NULL".into(),
        key: Key::one("id", "uuid"),
        body: "convert_to(j.serialized_params::text, 'UTF8')".into(),
        kind: format!(
            "COALESCE({}, j.serialized_params->>'job_class')",
            or_null(&cols, "job_class", "j.job_class", "text")
        ),
        queue: "j.queue_name".into(),
        attempt: or_null(&cols, "executions_count", "j.executions_count", "int8"),
        max_attempts: "NULL::int8".into(),
        error: "j.error".into(),
        error_format: ErrorFormat::ClassColonMessage,
        enqueued_at: "j.created_at".into(),
        dead_at: "j.finished_at".into(),
        extra: format!(
            "jsonb_build_object('active_job_id', {}, 'priority', j.priority, 'concurrency_key', {})",
            or_null(&cols, "active_job_id", "j.active_job_id", "uuid"),
            or_null(&cols, "concurrency_key", "j.concurrency_key", "text")
        ),
        lock_of: "j",
        // GoodJob::Job#retry_job: runnable again, now.
        retry: format!(
            "UPDATE {t} SET finished_at = NULL, performed_at = NULL, scheduled_at = now(){locks}{} WHERE id = ANY($1::text[]::uuid[]) AND finished_at IS NOT NULL AND error IS NOT NULL RETURNING id::text",
            if cols.contains("updated_at") {
                ", updated_at = now()"
            } else {
                ""
            }
        ),
        delete: format!(
            "DELETE FROM {t} WHERE id = ANY($1::text[]::uuid[]) AND finished_at IS NOT NULL RETURNING id::text"
        ),
        pruning: (
            Some(Duration::from_secs(14 * 86400)),
            "good_job deletes finished (and discarded) jobs after 14 days (cleanup_preserved_jobs_before_seconds_ago)",
        ),
        unique: "concurrency keys limit runs; they are not unique ids",
        retry_loses_id: None,
    })
}
