//! The dead jobs of PostgreSQL job systems (`postgres://…?system=NAME[&queue=…]`,
//! `docs/systems/`). Each preset is a "dead" predicate over the system's own tables, a decoder
//! for its error data, and the retry its own tools perform, run in short batched transactions
//! that skip running and locked rows.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, PgPool, Postgres, Row, Transaction};

use super::layout::quote_ident;
use super::{connect, pg_err};
use crate::address::{Address, PgAddress, PgTarget};
use crate::backend::{
    Capabilities, Check, Fact, Inspection, MessageStream, MoveOptions, MoveSession, OpenOptions,
    QueueBackend, ScanOptions, SendOutcome, Status, Table, TailOptions, Term, VerifyFacts,
};
use crate::config::{IdSource, QueueConfig, Retention};
use crate::error::{Error, Result};
use crate::message::{AttrValue, Attribute, ErrorInfo, Message};

/// How a system's raw error data turns into class / message / trace.
#[derive(Clone, Copy, Debug)]
enum ErrorFormat {
    /// Plain text, the message.
    Text,
    /// `Class: message` (good_job).
    ClassColonMessage,
    /// JSON `{exception_class, message, backtrace}` (solid_queue) or `{message, stack}` (pg-boss).
    Json,
}

/// One preset, resolved against the catalog.
pub struct System {
    pub name: &'static str,
    /// What was detected (`river (migration 6)`, `pgmq 1.5 archive`).
    pub detected: String,
    /// `FROM … j [JOIN …]`.
    from: String,
    /// The dead predicate over `j` (and joins).
    dead: String,
    /// Key column of `j`, and its type.
    key: String,
    key_type: &'static str,
    /// Expressions: body (bytea), kind, queue, attempt, max_attempts, error (raw text),
    /// enqueued_at, dead_at (timestamptz), extra (jsonb).
    body: String,
    kind: String,
    queue: String,
    attempt: String,
    max_attempts: String,
    error: String,
    error_format: ErrorFormat,
    enqueued_at: String,
    dead_at: String,
    extra: String,
    /// Rows to lock when claiming (`j`, or the failed-execution row).
    lock_of: &'static str,
    /// The retry, for `$1` = keys (text[]); RETURNING the retried keys as text.
    retry: String,
    /// Removing a dead job after its copy went elsewhere; `$1` = keys.
    delete: String,
    /// Default pruning of dead rows, and where that number comes from.
    pruning: (Option<Duration>, &'static str),
    /// The window in which its unique keys hold.
    unique: &'static str,
    /// Why the retry cannot carry a message's stable id, where it cannot (pgmq without a
    /// `headers` column in the live queue): a redrive in place is refused unless the id
    /// lives in the body (`id = "json:/…"`).
    retry_loses_id: Option<String>,
}

async fn exists(pool: &PgPool, rel: &str) -> Result<bool> {
    sqlx::query_scalar::<_, bool>("SELECT to_regclass($1) IS NOT NULL")
        .bind(rel)
        .fetch_one(pool)
        .await
        .map_err(|e| pg_err(rel, e))
}

async fn columns(pool: &PgPool, rel: &str) -> Result<HashSet<String>> {
    let cols: Vec<String> = sqlx::query_scalar(
        "SELECT attname::text FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped",
    )
    .bind(rel)
    .fetch_all(pool)
    .await
    .map_err(|e| pg_err(rel, e))?;
    Ok(cols.into_iter().collect())
}

async fn enum_has(pool: &PgPool, ty: &str, label: &str) -> Result<bool> {
    sqlx::query_scalar::<_, bool>(
        "SELECT EXISTS (SELECT 1 FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid WHERE t.oid = to_regtype($1) AND e.enumlabel = $2)",
    )
    .bind(ty)
    .bind(label)
    .fetch_one(pool)
    .await
    .map_err(|e| pg_err(ty, e))
}

async fn function_exists(pool: &PgPool, name: &str) -> Result<bool> {
    sqlx::query_scalar::<_, bool>("SELECT to_regproc($1) IS NOT NULL OR EXISTS (SELECT 1 FROM pg_proc WHERE oid::regproc::text = $1)")
        .bind(name)
        .fetch_one(pool)
        .await
        .map_err(|e| pg_err(name, e))
}

fn refuse(system: &str, why: String) -> Error {
    Error::Schema {
        table: format!("system={system}"),
        reason: format!("{why}; dlqctl will not guess"),
    }
    .hinted(format!(
        "docs/systems/{system}.md lists the tables and columns dlqctl expects of {system}"
    ))
}

/// The system's main table is not in `schema`: say where it is, if it is anywhere.
async fn missing_table(pool: &PgPool, system: &str, schema: &str, table: &str) -> Error {
    let found: Vec<String> = sqlx::query_scalar(
        "SELECT n.nspname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE c.relname = $1 AND c.relkind IN ('r', 'p') AND n.nspname <> $2
          ORDER BY n.nspname = current_schema() DESC, 1",
    )
    .bind(table)
    .bind(schema)
    .fetch_all(pool)
    .await
    .unwrap_or_default();
    let e = Error::Schema {
        table: format!("system={system}"),
        reason: format!("no table {schema}.{table}"),
    };
    match found.as_slice() {
        [] => e.hinted(format!(
            "is {system} installed in this database? docs/systems/{system}.md lists the tables dlqctl expects"
        )),
        [one] => e.hinted(format!(
            "{table} is in schema {one}: add &schema={one} to the URL (and quote the URL: & is shell syntax)"
        )),
        many => e.hinted(format!(
            "{table} is in schemas {}{}: add &schema=NAME to the URL (and quote the URL: & is shell syntax)",
            many.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
            if many.len() > 5 {
                format!(" and {} more", many.len() - 5)
            } else {
                String::new()
            }
        )),
    }
}

/// `schema.table`, quoted.
fn rel(schema: &str, table: &str) -> String {
    format!("{}.{}", quote_ident(schema), quote_ident(table))
}

fn need(cols: &HashSet<String>, system: &str, table: &str, want: &[&str]) -> Result<()> {
    let missing: Vec<&str> = want
        .iter()
        .filter(|c| !cols.contains(**c))
        .copied()
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(refuse(
            system,
            format!("{table} has no column(s) {}", missing.join(", ")),
        ))
    }
}

fn or_null(cols: &HashSet<String>, col: &str, expr: &str, ty: &str) -> String {
    if cols.contains(col) {
        expr.to_string()
    } else {
        format!("NULL::{ty}")
    }
}

impl System {
    pub async fn detect(
        pool: &PgPool,
        name: &str,
        schema: Option<&str>,
        queue: Option<&str>,
    ) -> Result<System> {
        match name {
            "river" => river(pool, schema.unwrap_or("public")).await,
            "oban" => oban(pool, schema.unwrap_or("public")).await,
            "pgmq" => pgmq(pool, queue).await,
            "graphile-worker" => graphile(pool, schema.unwrap_or("graphile_worker")).await,
            "solid_queue" => solid_queue(pool, schema.unwrap_or("public")).await,
            "good_job" => good_job(pool, schema.unwrap_or("public")).await,
            "que" => que(pool, schema.unwrap_or("public")).await,
            "pg-boss" => pg_boss(pool, schema.unwrap_or("pgboss")).await,
            other => Err(refuse(other, "unknown system".into())),
        }
    }

    /// `max(key)` as text (there is no max(uuid): uuids compare like their text form).
    fn max_key(&self) -> String {
        if self.key_type == "uuid" {
            format!("max({}::text)", self.key)
        } else {
            format!("max({})::text", self.key)
        }
    }

    fn select_list(&self) -> String {
        format!(
            "{key}::text AS id, {body} AS body, {kind}::text AS kind, {queue}::text AS queue, ({attempt})::int8 AS attempt, ({max})::int8 AS max_attempts, ({error})::text AS error, ({enq})::timestamptz AS enqueued_at, ({dead})::timestamptz AS dead_at, ({extra})::jsonb AS extra",
            key = self.key,
            body = self.body,
            kind = self.kind,
            queue = self.queue,
            attempt = self.attempt,
            max = self.max_attempts,
            error = self.error,
            enq = self.enqueued_at,
            dead = self.dead_at,
            extra = self.extra,
        )
    }

    fn decode_error(&self, raw: Option<String>) -> Option<ErrorInfo> {
        let raw = raw.filter(|r| !r.trim().is_empty())?;
        Some(match self.error_format {
            ErrorFormat::Text => ErrorInfo {
                message: Some(raw),
                ..ErrorInfo::default()
            },
            ErrorFormat::ClassColonMessage => match raw.split_once(": ") {
                Some((c, m)) if !c.contains(' ') => ErrorInfo {
                    class: Some(c.into()),
                    message: Some(m.into()),
                    trace: None,
                },
                _ => ErrorInfo {
                    message: Some(raw),
                    ..ErrorInfo::default()
                },
            },
            ErrorFormat::Json => match serde_json::from_str::<Value>(&raw) {
                Ok(v) => {
                    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
                    let trace = match v.get("backtrace").or(v.get("stack")) {
                        Some(Value::Array(a)) => Some(
                            a.iter()
                                .filter_map(Value::as_str)
                                .collect::<Vec<_>>()
                                .join("\n"),
                        ),
                        Some(Value::String(t)) => Some(t.clone()),
                        _ => None,
                    };
                    ErrorInfo {
                        class: s("exception_class").or(s("name")),
                        message: s("message").or_else(|| (!v.is_object()).then(|| v.to_string())),
                        trace,
                    }
                }
                Err(_) => ErrorInfo {
                    message: Some(raw),
                    ..ErrorInfo::default()
                },
            },
        })
    }

    fn to_message(
        &self,
        row: &PgRow,
        id: Option<&IdSource>,
    ) -> std::result::Result<Message, sqlx::Error> {
        let key: String = row.try_get("id")?;
        let extra: Option<Value> = row.try_get("extra")?;
        let mut attributes = Vec::new();
        let mut push = |name: &str, v: Option<String>| {
            if let Some(v) = v {
                attributes.push(Attribute {
                    name: name.into(),
                    value: AttrValue::text(v),
                });
            }
        };
        let kind: Option<String> = row.try_get("kind")?;
        let queue: Option<String> = row.try_get("queue")?;
        let attempt: Option<i64> = row.try_get("attempt")?;
        let max: Option<i64> = row.try_get("max_attempts")?;
        push("kind", kind);
        push("queue", queue.clone());
        push("attempt", attempt.map(|a| a.to_string()));
        push("max_attempts", max.map(|a| a.to_string()));
        if let Some(Value::Object(o)) = &extra {
            for (k, v) in o {
                match v {
                    Value::Null => {}
                    Value::String(s) => push(k, Some(s.clone())),
                    other => push(k, Some(other.to_string())),
                }
            }
        }
        let mut m = Message {
            id: key.clone(),
            native_id: key,
            body: row.try_get("body")?,
            attributes,
            receive_count: attempt.and_then(|a| u32::try_from(a).ok()),
            enqueued_at: row.try_get("enqueued_at")?,
            dead_lettered_at: row.try_get("dead_at")?,
            error: self.decode_error(row.try_get("error")?),
            source: queue,
            ..Message::default()
        };
        m.meta.insert("system", Value::String(self.name.into()));
        if let Some(Value::String(id)) = extra
            .as_ref()
            .and_then(|e| e.get("headers"))
            .and_then(|h| h.get("dlqctl-stable-id"))
        {
            m.id = id.clone();
        }
        crate::backend::apply_id_source(&mut m, id);
        Ok(m)
    }
}

async fn river(pool: &PgPool, schema: &str) -> Result<System> {
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
        key: "j.id".into(),
        key_type: "bigint",
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

async fn oban(pool: &PgPool, schema: &str) -> Result<System> {
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
        key: "j.id".into(),
        key_type: "bigint",
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

async fn pgmq(pool: &PgPool, queue: Option<&str>) -> Result<System> {
    let Some(q) = queue else {
        return Err(Error::invalid_arg(
            "queue",
            "system=pgmq needs &queue=NAME (the queue whose dead messages to read)",
        ));
    };
    if !exists(pool, "pgmq.meta").await? {
        return Err(refuse(
            "pgmq",
            "no table pgmq.meta (is the pgmq extension installed?)".into(),
        ));
    }
    let known: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pgmq.meta WHERE queue_name = $1)")
            .bind(q)
            .fetch_one(pool)
            .await
            .map_err(|e| pg_err("pgmq.meta", e))?;
    if !known {
        return Err(Error::NotFound {
            what: format!("pgmq queue `{q}`"),
            detail: "it is not in pgmq.meta".into(),
        });
    }
    let live = rel("pgmq", &format!("q_{q}"));
    // Dead messages: a `<queue>_dlq` queue by convention, else the archive.
    let dlq = rel("pgmq", &format!("q_{q}_dlq"));
    let archive = rel("pgmq", &format!("a_{q}"));
    let (dead_t, what, dead_at) = if exists(pool, &dlq).await? {
        (dlq, format!("pgmq queue {q}_dlq"), "j.enqueued_at")
    } else if exists(pool, &archive).await? {
        (archive, format!("pgmq archive a_{q}"), "j.archived_at")
    } else {
        return Err(refuse(
            "pgmq",
            format!("neither pgmq.q_{q}_dlq nor pgmq.a_{q} exists"),
        ));
    };
    let cols = columns(pool, &dead_t).await?;
    need(
        &cols,
        "pgmq",
        &what,
        &["msg_id", "read_ct", "enqueued_at", "message"],
    )?;
    let live_cols = columns(pool, &live).await?;
    let dead_headers = cols.contains("headers");
    let live_headers = live_cols.contains("headers");
    let hdr = if dead_headers {
        "j.headers"
    } else {
        "NULL::jsonb"
    };
    Ok(System {
        name: "pgmq",
        detected: format!(
            "pgmq ({what}{})",
            if dead_headers { ", with headers" } else { "" }
        ),
        from: format!("{dead_t} j"),
        dead: "true".into(),
        key: "j.msg_id".into(),
        key_type: "bigint",
        body: "convert_to(j.message::text, 'UTF8')".into(),
        kind: "NULL::text".into(),
        queue: format!("'{}'::text", q.replace('\'', "''")),
        attempt: "j.read_ct".into(),
        max_attempts: "NULL::int8".into(),
        error: format!("COALESCE({hdr}->>'error', {hdr}->>'x-error', {hdr}->>'last_error')"),
        error_format: ErrorFormat::Text,
        enqueued_at: "j.enqueued_at".into(),
        dead_at: dead_at.into(),
        extra: format!("jsonb_build_object('headers', {hdr})"),
        lock_of: "j",
        // pgmq.send (an insert into q_<queue>, visible now) then delete from the dead queue,
        // in one transaction.
        retry: format!(
            "WITH m AS (DELETE FROM {dead_t} WHERE msg_id = ANY($1::text[]::bigint[]) RETURNING msg_id, message, {dh} AS headers), s AS (INSERT INTO {live} (vt, message{h}) SELECT now(), message{hv} FROM m RETURNING 1) SELECT msg_id::text FROM m",
            dh = if dead_headers { "headers" } else { "NULL::jsonb" },
            h = if live_headers { ", headers" } else { "" },
            // The new msg_id is not the stable id: the dead one travels in the headers (the
            // dead message's headers, or new ones when it had none).
            hv = if live_headers {
                ", jsonb_set(COALESCE(headers, '{}'::jsonb), '{dlqctl-stable-id}', to_jsonb(COALESCE(headers->>'dlqctl-stable-id', msg_id::text)))"
            } else {
                ""
            }
        ),
        delete: format!(
            "DELETE FROM {dead_t} WHERE msg_id = ANY($1::text[]::bigint[]) RETURNING msg_id::text"
        ),
        pruning: (
            None,
            "pgmq never prunes queues or archives (partitioned queues: pg_partman's retention)",
        ),
        unique: "pgmq has no unique keys: a redriven message is a new msg_id, its stable id is the dead msg_id",
        retry_loses_id: (!live_headers).then(|| {
            format!(
                "{live} has no headers column (pgmq before 1.5), so a retry would give each message a new msg_id and nothing would carry the dead one{}",
                if dead_headers {
                    ", and the dead messages' headers would be dropped"
                } else {
                    ""
                }
            )
        }),
    })
}

async fn graphile(pool: &PgPool, schema: &str) -> Result<System> {
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
        key: "j.id".into(),
        key_type: "bigint",
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

async fn solid_queue(pool: &PgPool, schema: &str) -> Result<System> {
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
        key: "j.id".into(),
        key_type: "bigint",
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

async fn good_job(pool: &PgPool, schema: &str) -> Result<System> {
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
        key: "j.id".into(),
        key_type: "uuid",
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

async fn que(pool: &PgPool, schema: &str) -> Result<System> {
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
        key: "j.id".into(),
        key_type: "bigint",
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

async fn pg_boss(pool: &PgPool, schema: &str) -> Result<System> {
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
        key: "j.id".into(),
        key_type: "uuid",
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
        // boss.retry(): back to 'retry' with one more attempt allowed.
        retry: format!(
            "UPDATE {t} SET state = 'retry', retry_limit = retry_limit + 1, completed_on = NULL, start_after = now() WHERE id = ANY($1::text[]::uuid[]) AND state = 'failed' RETURNING id::text"
        ),
        delete: format!(
            "DELETE FROM {t} WHERE id = ANY($1::text[]::uuid[]) AND state = 'failed' RETURNING id::text"
        ),
        pruning: (
            Some(Duration::from_secs(7 * 86400)),
            "pg-boss deletes completed jobs (failed is a completed state) after 7 days by default",
        ),
        unique: "singletonKey holds only while a job with that key is in an active state",
        retry_loses_id: None,
    })
}

/// A job system's dead jobs as a queue.
pub struct JobSystemBackend {
    addr: Address,
    pg: PgAddress,
    pool: PgPool,
    sys: System,
    id: Option<IdSource>,
}

impl JobSystemBackend {
    pub async fn open(addr: &Address, opts: &OpenOptions) -> Result<JobSystemBackend> {
        let Address::Postgres(pg) = addr else {
            unreachable!("postgres address")
        };
        let PgTarget::System(name) = &pg.target else {
            unreachable!("system address")
        };
        if opts.as_target {
            return Err(Error::Unsupported {
                backend: "postgres",
                operation: "writing into a job system",
                reason: format!(
                    "system={name} is a source; redrive retries its dead jobs in place, so leave out --to (or replay into a table, queue or topic)"
                ),
            });
        }
        let pool = connect(&pg.conn).await?;
        let sys = System::detect(&pool, name, pg.schema.as_deref(), pg.queue.as_deref()).await?;
        Ok(JobSystemBackend {
            addr: addr.clone(),
            pg: pg.clone(),
            pool,
            sys,
            id: opts.id.clone(),
        })
    }

    fn err(&self, e: sqlx::Error) -> Error {
        pg_err(&format!("{} ({})", self.sys.detected, self.addr), e)
    }

    /// `AND queue = $n` when the address names one (pgmq's queue is the table itself).
    fn queue_clause(&self, n: usize) -> String {
        match (&self.pg.queue, self.sys.name) {
            (Some(_), name) if name != "pgmq" => format!(" AND {}::text = ${n}", self.sys.queue),
            _ => format!(" AND ${n}::text IS NULL"),
        }
    }

    fn queue_param(&self) -> Option<&str> {
        if self.sys.name == "pgmq" {
            None
        } else {
            self.pg.queue.as_deref()
        }
    }

    async fn page(&self, after: Option<&str>, limit: i64) -> Result<Vec<Message>> {
        let s = &self.sys;
        let sql = format!(
            "SELECT {} FROM {} WHERE {} AND ($1::text IS NULL OR {key} > $1::text::{ty}){} ORDER BY {key} LIMIT $2",
            s.select_list(),
            s.from,
            s.dead,
            self.queue_clause(3),
            key = s.key,
            ty = s.key_type
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(after)
            .bind(limit)
            .bind(self.queue_param())
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| s.to_message(r, self.id.as_ref()).map_err(|e| self.err(e)))
            .collect()
    }
}

#[async_trait]
impl QueueBackend for JobSystemBackend {
    fn address(&self) -> &Address {
        &self.addr
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            read: true,
            tail: true,
            delete: true,
            write: false,
            read_side_effect: None,
            per_message_destination: false,
        }
    }

    async fn backlog(&self, _for_redrive: bool) -> Result<Option<crate::backend::Backlog>> {
        let s = &self.sys;
        let sql = format!(
            "SELECT count(*)::int8 FROM {} WHERE {}{}",
            s.from,
            s.dead,
            self.queue_clause(1)
        );
        let n: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(self.queue_param())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(Some(crate::backend::Backlog {
            messages: n as u64,
            exact: true,
        }))
    }

    async fn inspect(&self, classifier: &crate::classify::Classifier) -> Result<Inspection> {
        let s = &self.sys;
        let mut ins = Inspection {
            queue: self.addr.to_string(),
            backend: "postgres",
            ..Inspection::default()
        };
        ins.facts
            .push(Fact::new("system", s.detected.clone(), s.detected.clone()));
        let sql = format!(
            "SELECT count(*)::int8 AS n, min(({e})::timestamptz) AS oldest, max(({e})::timestamptz) AS newest, min(({d})::timestamptz) AS first_dead, max(({d})::timestamptz) AS last_dead FROM {} WHERE {}{}",
            s.from,
            s.dead,
            self.queue_clause(1),
            e = s.enqueued_at,
            d = s.dead_at
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(self.queue_param())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        let n: i64 = row.try_get("n").unwrap_or(0);
        ins.facts.push(Fact::new("dead_jobs", n, n.to_string()));
        ins.facts.push(Fact::new("messages", n, n.to_string()));
        for (name, col) in [
            ("oldest", "oldest"),
            ("newest", "newest"),
            ("first_dead", "first_dead"),
            ("last_dead", "last_dead"),
        ] {
            let t: Option<DateTime<Utc>> = row.try_get(col).ok().flatten();
            ins.facts.push(Fact::new(
                name,
                t.map(|t| t.to_rfc3339()),
                t.map_or("-".into(), |t| {
                    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
                }),
            ));
        }
        ins.facts.push(Fact::new(
            "default_pruning",
            s.pruning.0.map(|d| d.as_secs()),
            s.pruning.1,
        ));
        let sql = format!(
            "SELECT {k}::text AS kind, {q}::text AS queue, count(*)::int8 AS n FROM {} WHERE {}{} GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 30",
            s.from,
            s.dead,
            self.queue_clause(1),
            k = s.kind,
            q = s.queue
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(self.queue_param())
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        ins.tables.push(Table {
            title: "dead jobs by kind and queue".into(),
            columns: vec!["kind".into(), "queue".into(), "dead jobs".into()],
            rows: rows
                .iter()
                .map(|r| {
                    vec![
                        r.try_get::<Option<String>, _>("kind").ok().flatten().into(),
                        r.try_get::<Option<String>, _>("queue")
                            .ok()
                            .flatten()
                            .into(),
                        r.try_get::<i64, _>("n").unwrap_or(0).into(),
                    ]
                })
                .collect(),
        });
        let mut by: BTreeMap<(String, String), u64> = BTreeMap::new();
        for m in self.page(None, 2000).await? {
            let c = classifier.classify(&m);
            *by.entry((c.kind.to_string(), c.rule)).or_default() += 1;
        }
        ins.tables.push(Table {
            title: "by failure class (oldest 2000)".into(),
            columns: vec!["class".into(), "rule".into(), "dead jobs".into()],
            rows: by
                .into_iter()
                .map(|((k, r), v)| vec![k.into(), r.into(), v.into()])
                .collect(),
        });
        Ok(ins)
    }

    async fn scan(&self, opts: ScanOptions) -> Result<MessageStream<'_>> {
        Ok(super::keyset_pages(opts, move |after, n| async move {
            self.page(after.as_deref(), n).await
        }))
    }

    async fn tail(&self, opts: TailOptions) -> Result<MessageStream<'_>> {
        // Most systems notify on insert only, never on "became dead": poll by key.
        // (A job that dies later than a newer one died is still seen: keys are re-read
        // from the last one shown, and each key is shown once.)
        let s = &self.sys;
        let start: Option<String> = if opts.from_start {
            None
        } else {
            let sql = format!(
                "SELECT {} FROM {} WHERE {}{}",
                s.max_key(),
                s.from,
                s.dead,
                self.queue_clause(1)
            );
            sqlx::query_scalar(AssertSqlSafe(sql))
                .bind(self.queue_param())
                .fetch_one(&self.pool)
                .await
                .map_err(|e| self.err(e))?
        };
        Ok(Box::pin(async_stream::try_stream! {
            let mut after = start;
            loop {
                let rows = self.page(after.as_deref(), 500).await?;
                let full = rows.len() == 500;
                for m in rows {
                    after = Some(m.native_id.clone());
                    yield m;
                }
                if !full {
                    tokio::time::sleep(opts.poll_interval).await;
                }
            }
        }))
    }

    fn can_move_locally(&self, target: &Address) -> bool {
        *target == self.addr
    }

    async fn begin_move(&self, opts: MoveOptions) -> Result<Box<dyn MoveSession + '_>> {
        if opts.in_place
            && let Some(why) = &self.sys.retry_loses_id
            && !matches!(self.id, Some(IdSource::Json(_)))
        {
            return Err(Error::Unsupported {
                backend: "postgres",
                operation: "a redrive in place",
                reason: format!(
                    "{why}. Add the column (ALTER TABLE … ADD COLUMN headers jsonb, as pgmq 1.5 does), set `id = \"json:/POINTER\"` to an id in the body, or redrive --to another queue"
                ),
            });
        }
        Ok(Box::new(SystemMoveSession::begin(self).await?))
    }

    async fn send(&self, _batch: &[Message]) -> Result<Vec<SendOutcome>> {
        Err(Error::Unsupported {
            backend: "postgres",
            operation: "writing into a job system",
            reason: "job systems are sources; replay into a table, queue or topic".into(),
        })
    }

    async fn destination(&self, _m: &Message) -> Result<Option<Address>> {
        // The retry happens in place, the way the system's own tools do it.
        Ok(Some(self.addr.clone()))
    }

    async fn verify_facts(&self, cfg: &QueueConfig) -> Result<VerifyFacts> {
        let s = &self.sys;
        let mut f = VerifyFacts::default();
        let (value, source) = match (cfg.dlq_retention, s.pruning.0) {
            (Some(d), _) => (
                Retention::For(d),
                "dlq_retention in dlqctl.toml".to_string(),
            ),
            (None, Some(d)) => (Retention::For(d), format!("{} default", s.name)),
            (None, None) => (
                Retention::Forever,
                format!("{}: dead jobs are kept until deleted", s.name),
            ),
        };
        f.redelivery.push(Term {
            label: "time to dead-letter".into(),
            value: Retention::For(cfg.time_to_dead_letter.unwrap_or_default()),
            source: if cfg.time_to_dead_letter.is_some() {
                "time_to_dead_letter in dlqctl.toml".into()
            } else {
                "not declared (set time_to_dead_letter); counted as 0".into()
            },
        });
        f.redelivery.push(Term {
            label: "dead-job retention".into(),
            value,
            source,
        });
        f.checks.push(Check {
            id: "dead-row-pruning".into(),
            title: "Dead-job pruning the system performs by default".into(),
            status: if s.pruning.0.is_some() || cfg.dlq_retention.is_some() {
                Status::Pass
            } else {
                Status::Warn
            },
            detail: format!("{}; unique keys: {}", s.pruning.1, s.unique),
        });
        Ok(f)
    }

    async fn count_older_than(&self, age: Duration) -> Result<Option<u64>> {
        let s = &self.sys;
        let sql = format!(
            "SELECT count(*)::int8 FROM {} WHERE {} AND COALESCE(({e})::timestamptz, ({d})::timestamptz) < now() - make_interval(secs => $2){}",
            s.from,
            s.dead,
            self.queue_clause(1),
            e = s.enqueued_at,
            d = s.dead_at
        );
        let n: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(self.queue_param())
            .bind(age.as_secs_f64())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(Some(n as u64))
    }

    async fn oldest(&self) -> Result<Option<DateTime<Utc>>> {
        Ok(None)
    }
}

/// Batches of dead jobs, each claimed `FOR UPDATE … SKIP LOCKED` in its own transaction.
struct SystemMoveSession<'a> {
    b: &'a JobSystemBackend,
    cursor: Option<String>,
    end: Option<String>,
    tx: Option<Transaction<'static, Postgres>>,
    keys: Vec<String>,
}

impl<'a> SystemMoveSession<'a> {
    async fn begin(b: &'a JobSystemBackend) -> Result<SystemMoveSession<'a>> {
        let s = &b.sys;
        let sql = format!(
            "SELECT {} FROM {} WHERE {}{}",
            s.max_key(),
            s.from,
            s.dead,
            b.queue_clause(1)
        );
        let end: Option<String> = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(b.queue_param())
            .fetch_one(&b.pool)
            .await
            .map_err(|e| b.err(e))?;
        Ok(SystemMoveSession {
            b,
            cursor: None,
            end,
            tx: None,
            keys: Vec::new(),
        })
    }

    /// Run `sql` for `keys`; on a unique violation (an active twin), again key by key under
    /// savepoints so only the conflicting jobs are skipped.
    async fn run_each(
        &mut self,
        sql: &str,
        keys: &[String],
    ) -> Result<(HashSet<String>, HashSet<String>)> {
        let tx = self.tx.as_mut().expect("a claimed batch");
        sqlx::query("SAVEPOINT dlqctl_batch")
            .execute(&mut **tx)
            .await
            .map_err(|e| self.b.err(e))?;
        match sqlx::query_scalar::<_, String>(AssertSqlSafe(sql.to_string()))
            .bind(keys)
            .fetch_all(&mut **tx)
            .await
        {
            Ok(done) => {
                sqlx::query("RELEASE SAVEPOINT dlqctl_batch")
                    .execute(&mut **tx)
                    .await
                    .map_err(|e| self.b.err(e))?;
                Ok((done.into_iter().collect(), HashSet::new()))
            }
            Err(e)
                if e.as_database_error()
                    .and_then(|d| d.code())
                    .is_some_and(|c| c == "23505") =>
            {
                sqlx::query("ROLLBACK TO SAVEPOINT dlqctl_batch")
                    .execute(&mut **tx)
                    .await
                    .map_err(|e| self.b.err(e))?;
                let mut done = HashSet::new();
                let mut conflicts = HashSet::new();
                for k in keys {
                    sqlx::query("SAVEPOINT dlqctl_one")
                        .execute(&mut **tx)
                        .await
                        .map_err(|e| self.b.err(e))?;
                    match sqlx::query_scalar::<_, String>(AssertSqlSafe(sql.to_string()))
                        .bind(std::slice::from_ref(k))
                        .fetch_all(&mut **tx)
                        .await
                    {
                        Ok(d) => {
                            sqlx::query("RELEASE SAVEPOINT dlqctl_one")
                                .execute(&mut **tx)
                                .await
                                .map_err(|e| self.b.err(e))?;
                            done.extend(d);
                        }
                        Err(e)
                            if e.as_database_error()
                                .and_then(|d| d.code())
                                .is_some_and(|c| c == "23505") =>
                        {
                            sqlx::query("ROLLBACK TO SAVEPOINT dlqctl_one")
                                .execute(&mut **tx)
                                .await
                                .map_err(|e| self.b.err(e))?;
                            conflicts.insert(k.clone());
                        }
                        Err(e) => return Err(self.b.err(e)),
                    }
                }
                Ok((done, conflicts))
            }
            Err(e) => Err(self.b.err(e)),
        }
    }
}

#[async_trait]
impl MoveSession for SystemMoveSession<'_> {
    async fn next_batch(&mut self, n: usize) -> Result<Option<Vec<Message>>> {
        let Some(end) = self.end.clone() else {
            return Ok(None);
        };
        let s = &self.b.sys;
        let sql = format!(
            "SELECT {} FROM {} WHERE {} AND ($1::text IS NULL OR {key} > $1::text::{ty}) AND {key} <= $2::text::{ty}{} ORDER BY {key} LIMIT $4 FOR UPDATE OF {lock} SKIP LOCKED",
            s.select_list(),
            s.from,
            s.dead,
            self.b.queue_clause(3),
            key = s.key,
            ty = s.key_type,
            lock = s.lock_of
        );
        let mut tx = self.b.pool.begin().await.map_err(|e| self.b.err(e))?;
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(self.cursor.as_deref())
            .bind(&end)
            .bind(self.b.queue_param())
            .bind(n as i64)
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| self.b.err(e))?;
        if rows.is_empty() {
            tx.commit().await.map_err(|e| self.b.err(e))?;
            return Ok(None);
        }
        let msgs: Vec<Message> = rows
            .iter()
            .map(|r| {
                s.to_message(r, self.b.id.as_ref())
                    .map_err(|e| self.b.err(e))
            })
            .collect::<Result<_>>()?;
        self.keys = msgs.iter().map(|m| m.native_id.clone()).collect();
        self.cursor = self.keys.last().cloned();
        self.tx = Some(tx);
        Ok(Some(msgs))
    }

    async fn settle(&mut self, accepted: &[usize], _failed: &[usize]) -> Result<()> {
        if !accepted.is_empty() {
            let keys: Vec<String> = accepted.iter().map(|&i| self.keys[i].clone()).collect();
            let sql = self.b.sys.delete.clone();
            self.run_each(&sql, &keys).await?;
        }
        let tx = self.tx.take().expect("a claimed batch");
        tx.commit().await.map_err(|e| self.b.err(e))?;
        Ok(())
    }

    async fn move_locally(
        &mut self,
        _target: &Address,
        selected: &[usize],
    ) -> Result<Vec<SendOutcome>> {
        let keys: Vec<String> = selected.iter().map(|&i| self.keys[i].clone()).collect();
        let sql = self.b.sys.retry.clone();
        let (done, conflicts) = if keys.is_empty() {
            Default::default()
        } else {
            self.run_each(&sql, &keys).await?
        };
        let tx = self.tx.take().expect("a claimed batch");
        tx.commit().await.map_err(|e| self.b.err(e))?;
        Ok(keys
            .iter()
            .map(|k| {
                if done.contains(k) {
                    SendOutcome::Sent
                } else if conflicts.contains(k) {
                    SendOutcome::Conflict { reason: format!("{}: an active twin holds this job's unique key (SQLSTATE 23505); left dead", self.b.sys.name) }
                } else {
                    SendOutcome::Rejected { reason: format!("{}: the job was no longer dead or was locked when retried", self.b.sys.name) }
                }
            })
            .collect())
    }
}
