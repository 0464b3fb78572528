//! pgmq: a queue's `<queue>_dlq` queue, else its archive; the retry is `pgmq.send` and a delete, in one transaction.

use sqlx::PgPool;

use super::catalog::{columns, exists, need, refuse, rel};
use super::{ErrorFormat, Key, System};
use crate::backend::postgres::pg_err;
use crate::error::{Error, Result};

/// Check the queue is pgmq's, find where its dead messages are, check their columns, and
/// build the SQL from whether each side has a headers column.
pub(super) async fn detect(pool: &PgPool, queue: Option<&str>) -> Result<System> {
    let Some(q) = queue else {
        return Err(Error::invalid_arg(
            "queue",
            "system=pgmq needs &queue=NAME (the queue whose dead messages to read)",
        ));
    };
    check_queue_known(pool, q).await?;
    let live = rel("pgmq", &format!("q_{q}"));
    let dead = find_dead(pool, q).await?;
    let cols = columns(pool, &dead.table).await?;
    need(
        &cols,
        "pgmq",
        &dead.what,
        &["msg_id", "read_ct", "enqueued_at", "message"],
    )?;
    let live_cols = columns(pool, &live).await?;
    Ok(system(
        q,
        &live,
        dead,
        cols.contains("headers"),
        live_cols.contains("headers"),
    ))
}

/// The pgmq extension is installed and `q` is one of its queues.
async fn check_queue_known(pool: &PgPool, q: &str) -> Result<()> {
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
    Ok(())
}

/// Where a queue's dead messages are.
struct Dead {
    /// The table, quoted.
    table: String,
    /// For people: `pgmq queue Q_dlq` or `pgmq archive a_Q`.
    what: String,
    /// The column of the time a message died.
    at: &'static str,
}

/// Dead messages: a `<queue>_dlq` queue by convention, else the archive.
async fn find_dead(pool: &PgPool, q: &str) -> Result<Dead> {
    let dlq = rel("pgmq", &format!("q_{q}_dlq"));
    let archive = rel("pgmq", &format!("a_{q}"));
    if exists(pool, &dlq).await? {
        Ok(Dead {
            table: dlq,
            what: format!("pgmq queue {q}_dlq"),
            at: "j.enqueued_at",
        })
    } else if exists(pool, &archive).await? {
        Ok(Dead {
            table: archive,
            what: format!("pgmq archive a_{q}"),
            at: "j.archived_at",
        })
    } else {
        Err(refuse(
            "pgmq",
            format!("neither pgmq.q_{q}_dlq nor pgmq.a_{q} exists"),
        ))
    }
}

/// The system's SQL for queue `q`, its live table `live` and its dead messages.
fn system(q: &str, live: &str, dead: Dead, dead_headers: bool, live_headers: bool) -> System {
    let Dead {
        table: dead_t,
        what,
        at: dead_at,
    } = dead;
    let hdr = if dead_headers {
        "j.headers"
    } else {
        "NULL::jsonb"
    };
    System {
        name: "pgmq",
        detected: format!(
            "pgmq ({what}{})",
            if dead_headers { ", with headers" } else { "" }
        ),
        from: format!("{dead_t} j"),
        dead: "true".into(),
        key: Key::one("msg_id", "bigint"),
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
        retry: retry_sql(&dead_t, live, dead_headers, live_headers),
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
    }
}

/// The retry: pgmq.send (an insert into q_<queue>, visible now) then delete from the dead
/// queue, in one transaction.
fn retry_sql(dead_t: &str, live: &str, dead_headers: bool, live_headers: bool) -> String {
    format!(
        "WITH m AS (DELETE FROM {dead_t} WHERE msg_id = ANY($1::text[]::bigint[]) RETURNING msg_id, message, {dh} AS headers), s AS (INSERT INTO {live} (vt, message{h}) SELECT now(), message{hv} FROM m RETURNING 1) SELECT msg_id::text FROM m",
        dh = if dead_headers {
            "headers"
        } else {
            "NULL::jsonb"
        },
        h = if live_headers { ", headers" } else { "" },
        // The new msg_id is not the stable id: the dead one travels in the headers (the
        // dead message's headers, or new ones when it had none).
        hv = if live_headers {
            ", jsonb_set(COALESCE(headers, '{}'::jsonb), '{dlqctl-stable-id}', to_jsonb(COALESCE(headers->>'dlqctl-stable-id', msg_id::text)))"
        } else {
            ""
        }
    )
}
