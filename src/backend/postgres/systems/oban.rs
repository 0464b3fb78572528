//! Oban (Elixir): `oban_jobs` rows in state `discarded`; the retry is `Oban.retry_job/2`.

use sqlx::PgPool;

use super::catalog::{columns, enum_has, exists, missing_table, need, or_null, refuse, rel};
use super::{ErrorFormat, Key, System};
use crate::backend::postgres::layout::quote_ident;
use crate::error::Result;

pub(super) async fn detect(pool: &PgPool, schema: &str) -> Result<System> {
    let t = rel(schema, "oban_jobs");
    if !exists(pool, &t).await? {
        return Err(missing_table(pool, "oban", schema, "oban_jobs").await);
    }
    if !enum_has(
        pool,
        &format!("{}.oban_job_state", quote_ident(schema)),
        "discarded",
    )
    .await?
    {
        return Err(refuse(
            "oban",
            "type oban_job_state has no 'discarded' state".into(),
        ));
    }
    let cols = columns(pool, &t).await?;
    need(
        &cols,
        "oban",
        "oban_jobs",
        &[
            "id",
            "state",
            "queue",
            "worker",
            "args",
            "errors",
            "attempt",
            "max_attempts",
            "inserted_at",
            "scheduled_at",
            "discarded_at",
        ],
    )?;
    Ok(System {
        name: "oban",
        detected: format!("oban ({schema}.oban_jobs)"),
        from: format!("{t} j"),
        dead: "j.state = 'discarded'".into(),
        key: Key::one("id", "bigint"),
        body: "convert_to(j.args::text, 'UTF8')".into(),
        kind: "j.worker".into(),
        queue: "j.queue".into(),
        attempt: "j.attempt".into(),
        max_attempts: "j.max_attempts".into(),
        error: "j.errors[array_length(j.errors, 1)]->>'error'".into(),
        error_format: ErrorFormat::Text,
        // Oban stores UTC in timestamp without time zone.
        enqueued_at: "j.inserted_at AT TIME ZONE 'UTC'".into(),
        dead_at: "j.discarded_at AT TIME ZONE 'UTC'".into(),
        extra: format!(
            "jsonb_build_object('priority', j.priority{}{})",
            or_null(&cols, "tags", ", 'tags', to_jsonb(j.tags)", "text").replace("NULL::text", ""),
            or_null(&cols, "meta", ", 'meta', j.meta", "text").replace("NULL::text", "")
        ),
        lock_of: "j",
        // Oban.retry_job/2.
        retry: format!(
            "UPDATE {t} SET state = 'available', max_attempts = GREATEST(max_attempts, attempt + 1), scheduled_at = (now() AT TIME ZONE 'UTC'), completed_at = NULL, cancelled_at = NULL, discarded_at = NULL WHERE id = ANY($1::text[]::bigint[]) AND state = 'discarded' RETURNING id::text"
        ),
        delete: format!(
            "DELETE FROM {t} WHERE id = ANY($1::text[]::bigint[]) AND state = 'discarded' RETURNING id::text"
        ),
        pruning: (
            None,
            "Oban's Pruner is off unless configured (then its default max_age deletes discarded jobs after 60 s): declare dlq_retention when it runs",
        ),
        unique: "unique jobs are unique for their period (default 60 s), and only against rows still present",
        retry_loses_id: None,
    })
}
