//! pg-boss (Node.js): jobs in state `failed`; the retry is pg-boss's `retry()`.

use sqlx::PgPool;
use std::time::Duration;

use super::catalog::{
    columns, enum_has, exists, missing_table, need, or_null, refuse, rel, unique_on,
};
use super::{ErrorFormat, Key, System};
use crate::backend::postgres::layout::quote_ident;
use crate::error::Result;

pub(super) async fn detect(pool: &PgPool, schema: &str) -> Result<System> {
    let t = rel(schema, "job");
    if !exists(pool, &t).await? {
        return Err(missing_table(pool, "pg-boss", schema, "job").await);
    }
    if !enum_has(
        pool,
        &format!("{}.job_state", quote_ident(schema)),
        "failed",
    )
    .await?
    {
        return Err(refuse(
            "pg-boss",
            "type job_state has no 'failed' state".into(),
        ));
    }
    let cols = columns(pool, &t).await?;
    // pg-boss 10 and later key jobs by (name, id) (the table is partitioned by name): a key on
    // id alone would find nothing by index.
    let key = if unique_on(pool, &t, &["id"]).await? {
        Key::one("id", "uuid")
    } else {
        Key::name_and_uuid("name", "id")
    };
    need(
        &cols,
        "pg-boss",
        "job",
        &[
            "id",
            "name",
            "data",
            "state",
            "retry_limit",
            "retry_count",
            "start_after",
            "created_on",
            "completed_on",
            "output",
        ],
    )?;
    Ok(System {
        name: "pg-boss",
        detected: format!("pg-boss ({schema}.job)"),
        from: format!("{t} j"),
        dead: "j.state = 'failed'".into(),
        // boss.retry(): back to 'retry' with one more attempt allowed.
        retry: format!(
            "UPDATE {t} SET state = 'retry', retry_limit = retry_limit + 1, completed_on = NULL, start_after = now() WHERE {} AND state = 'failed' RETURNING {}",
            key.any("", 1),
            key.text("")
        ),
        delete: format!(
            "DELETE FROM {t} WHERE {} AND state = 'failed' RETURNING {}",
            key.any("", 1),
            key.text("")
        ),
        key,
        body: "convert_to(COALESCE(j.data, 'null'::jsonb)::text, 'UTF8')".into(),
        kind: "j.name".into(),
        queue: "j.name".into(),
        attempt: "j.retry_count".into(),
        max_attempts: "j.retry_limit".into(),
        error: "j.output::text".into(),
        error_format: ErrorFormat::Json,
        enqueued_at: "j.created_on".into(),
        dead_at: "j.completed_on".into(),
        extra: format!(
            "jsonb_build_object('singleton_key', {}, 'priority', {})",
            or_null(&cols, "singleton_key", "j.singleton_key", "text"),
            or_null(&cols, "priority", "j.priority", "int")
        ),
        lock_of: "j",
        pruning: (
            Some(Duration::from_secs(7 * 86400)),
            "pg-boss deletes completed jobs (failed is a completed state) after 7 days by default",
        ),
        unique: "singletonKey holds only while a job with that key is in an active state",
        retry_loses_id: None,
    })
}
