//! River (Go): `river_job` rows in state `discarded`; the retry is River's `JobRetry`.

use sqlx::{AssertSqlSafe, PgPool};
use std::time::Duration;

use super::catalog::{columns, enum_has, exists, missing_table, need, refuse, rel};
use super::{ErrorFormat, Key, System};
use crate::backend::postgres::layout::quote_ident;
use crate::backend::postgres::pg_err;
use crate::error::Result;

pub(super) async fn detect(pool: &PgPool, schema: &str) -> Result<System> {
    let t = rel(schema, "river_job");
    if !exists(pool, &t).await? {
        return Err(missing_table(pool, "river", schema, "river_job").await);
    }
    if !enum_has(
        pool,
        &format!("{}.river_job_state", quote_ident(schema)),
        "discarded",
    )
    .await?
    {
        return Err(refuse(
            "river",
            "type river_job_state has no 'discarded' state".into(),
        ));
    }
    let cols = columns(pool, &t).await?;
    need(
        &cols,
        "river",
        "river_job",
        &[
            "id",
            "args",
            "attempt",
            "max_attempts",
            "errors",
            "kind",
            "queue",
            "state",
            "finalized_at",
            "scheduled_at",
            "created_at",
        ],
    )?;
    let version: Option<i64> = if exists(pool, &rel(schema, "river_migration")).await? {
        sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT max(version)::int8 FROM {}",
            rel(schema, "river_migration")
        )))
        .fetch_one(pool)
        .await
        .map_err(|e| pg_err(&t, e))?
    } else {
        None
    };
    Ok(System {
        name: "river",
        detected: format!(
            "river ({schema}.river_job{})",
            version
                .map(|v| format!(", migration {v}"))
                .unwrap_or_default()
        ),
        from: format!("{t} j"),
        dead: "j.state = 'discarded'".into(),
        key: Key::one("id", "bigint"),
        body: "convert_to(j.args::text, 'UTF8')".into(),
        kind: "j.kind".into(),
        queue: "j.queue".into(),
        attempt: "j.attempt".into(),
        max_attempts: "j.max_attempts".into(),
        error: "j.errors[array_length(j.errors, 1)]->>'error'".into(),
        error_format: ErrorFormat::Text,
        enqueued_at: "j.created_at".into(),
        dead_at: "j.finalized_at".into(),
        extra: format!(
            "jsonb_build_object('priority', j.priority{}{})",
            if cols.contains("tags") {
                ", 'tags', to_jsonb(j.tags)"
            } else {
                ""
            },
            if cols.contains("unique_key") {
                ", 'unique_key', encode(j.unique_key, 'hex')"
            } else {
                ""
            }
        ),
        lock_of: "j",
        // River's own JobRetry: back to available, one more attempt if it used them all.
        retry: format!(
            "UPDATE {t} SET state = 'available', max_attempts = CASE WHEN attempt = max_attempts THEN max_attempts + 1 ELSE max_attempts END, finalized_at = NULL, scheduled_at = now() WHERE id = ANY($1::text[]::bigint[]) AND state = 'discarded' RETURNING id::text"
        ),
        delete: format!(
            "DELETE FROM {t} WHERE id = ANY($1::text[]::bigint[]) AND state = 'discarded' RETURNING id::text"
        ),
        pruning: (
            Some(Duration::from_secs(7 * 86400)),
            "River's cleaner deletes discarded jobs after 7 days (DiscardedJobRetentionPeriod)",
        ),
        unique: "unique_key holds only in the job's unique_states; discarded is not among the defaults, so a retry can meet an active twin (river_job_unique_idx, SQLSTATE 23505)",
        retry_loses_id: None,
    })
}
