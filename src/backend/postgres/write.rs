//! Writing copies into a queue table: one multi-row INSERT per batch, `ON CONFLICT DO NOTHING`
//! so that a unique key held by an active twin is reported per message instead of failing the
//! batch.

use std::collections::HashMap;

use sqlx::{AssertSqlSafe, Connection, PgConnection};

use super::headers;
use super::layout::{Layout, PayloadKind};
use crate::backend::SendOutcome;
use crate::error::{Error, Result};
use crate::message::Message;

/// Refuse up front a target with a required column that dlqctl cannot fill.
pub fn check_insertable(l: &Layout) -> Result<()> {
    if l.required_unmapped.is_empty() {
        return Ok(());
    }
    Err(Error::Schema {
        table: l.display.clone(),
        reason: format!(
            "column(s) {} are NOT NULL without a default, and dlqctl fills only message_id, payload, payload_bytes, headers, queue, group_key and enqueued_at",
            l.required_unmapped.join(", ")
        ),
    })
}

/// How one message's body lands in the target's payload columns.
pub(crate) enum Placed {
    Ok {
        payload: Option<String>,
        payload_bin: Option<Vec<u8>>,
    },
    Rejected(String),
}

pub(crate) fn place_body(l: &Layout, m: &Message) -> Placed {
    let has_bytes = l.col("payload_bytes").is_some();
    let payload_nullable = !l.cols["payload"].not_null;
    let as_bytes = |why: &str| {
        if has_bytes && payload_nullable {
            Placed::Ok {
                payload: None,
                payload_bin: Some(m.body.clone()),
            }
        } else {
            Placed::Rejected(format!(
                "{why}, and {} cannot hold it: {} (docs/postgres.md#binary-payloads)",
                l.display,
                if has_bytes {
                    "its payload column is NOT NULL"
                } else {
                    "it has no payload_bytes column"
                }
            ))
        }
    };
    match l.payload() {
        PayloadKind::Bytea => Placed::Ok {
            payload: None,
            payload_bin: Some(m.body.clone()),
        },
        PayloadKind::Text => match std::str::from_utf8(&m.body) {
            Ok(s) if !s.contains('\0') => Placed::Ok {
                payload: Some(s.to_string()),
                payload_bin: None,
            },
            _ => as_bytes("the body is binary (not UTF-8 text)"),
        },
        PayloadKind::Json | PayloadKind::Jsonb => {
            match serde_json::from_slice::<serde::de::IgnoredAny>(&m.body) {
                // jsonb cannot hold \u0000 either.
                Ok(_) if !m.body.windows(6).any(|w| w == b"\\u0000") => Placed::Ok {
                    payload: Some(String::from_utf8_lossy(&m.body).into_owned()),
                    payload_bin: None,
                },
                _ => as_bytes("the body is not JSON"),
            }
        }
    }
}

/// Whether every text value is stored by a column of type `ty` exactly as it is (so that no
/// stable id needs checking).
pub(crate) fn stores_text_as_is(ty: &str) -> bool {
    matches!(ty, "text" | "character varying" | "citext")
}

/// The stable ids among `ids` that a target column of type `ty` would not store unchanged
/// (`varchar(8)` truncates, `uuid` lowercases, `bigint` drops leading zeros), each with the
/// reason. Checked with the server's own cast, inside the caller's transaction (a savepoint
/// keeps an invalid value from aborting it).
pub(crate) async fn ids_that_change(
    conn: &mut PgConnection,
    table: &str,
    ty: &str,
    ids: &[&str],
) -> std::result::Result<HashMap<String, String>, sqlx::Error> {
    let mut out = HashMap::new();
    if stores_text_as_is(ty) || ids.is_empty() {
        return Ok(out);
    }
    let sql = format!("SELECT u.x, (u.x::{ty})::text FROM unnest($1::text[]) u(x)");
    let reason = |id: &str, stored: Option<&str>| match stored {
        Some(s) => format!(
            "the stable id `{id}` would be stored as `{s}` by {table}.message_id ({ty}): the copy would not carry the same id; widen the column (ALTER TABLE … ALTER COLUMN message_id TYPE text)"
        ),
        None => format!(
            "the stable id `{id}` is not a valid {ty} for {table}.message_id: the copy would not carry the same id; widen the column (ALTER TABLE … ALTER COLUMN message_id TYPE text)"
        ),
    };
    let mut sp = conn.begin().await?;
    match sqlx::query_as::<_, (String, Option<String>)>(AssertSqlSafe(sql.clone()))
        .bind(ids)
        .fetch_all(&mut *sp)
        .await
    {
        Ok(rows) => {
            sp.commit().await?;
            for (id, stored) in rows {
                if stored.as_deref() != Some(id.as_str()) {
                    out.insert(id.clone(), reason(&id, stored.as_deref()));
                }
            }
        }
        // A value the type cannot hold at all (class 22: data exception): find which, one by
        // one, each under a savepoint of its own.
        Err(e)
            if e.as_database_error()
                .and_then(|d| d.code())
                .is_some_and(|c| c.starts_with("22")) =>
        {
            sp.rollback().await?;
            for id in ids {
                let mut one = conn.begin().await?;
                match sqlx::query_as::<_, (String, Option<String>)>(AssertSqlSafe(sql.clone()))
                    .bind([*id])
                    .fetch_one(&mut *one)
                    .await
                {
                    Ok((_, stored)) => {
                        one.commit().await?;
                        if stored.as_deref() != Some(*id) {
                            out.insert(id.to_string(), reason(id, stored.as_deref()));
                        }
                    }
                    Err(e)
                        if e.as_database_error()
                            .and_then(|d| d.code())
                            .is_some_and(|c| c.starts_with("22")) =>
                    {
                        one.rollback().await?;
                        out.insert(id.to_string(), reason(id, None));
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Err(e) => return Err(e),
    }
    Ok(out)
}

/// Insert copies of `msgs` in one statement; outcome per message, in order.
pub(crate) async fn insert_messages(
    conn: &mut PgConnection,
    l: &Layout,
    queue: Option<&str>,
    msgs: &[Message],
) -> std::result::Result<Vec<SendOutcome>, sqlx::Error> {
    let mut out: Vec<Option<SendOutcome>> = vec![None; msgs.len()];
    let id_ty = &l.cols["message_id"].ty;
    let all_ids: Vec<&str> = msgs
        .iter()
        .map(|m| m.id.as_str())
        .filter(|i| !i.is_empty())
        .collect();
    let altered = ids_that_change(conn, &l.display, id_ty, &all_ids).await?;
    let mut rows = Rows::default();
    for (i, m) in msgs.iter().enumerate() {
        match row(l, queue, &altered, m) {
            Ok(r) => rows.push(l, i, m, r),
            Err(reason) => out[i] = Some(SendOutcome::Rejected { reason }),
        }
    }
    if !rows.order.is_empty() {
        let inserted: Vec<String> = sqlx::query_scalar(AssertSqlSafe(insert_statement(l)))
            .bind(&rows.ids)
            .bind(&rows.payloads)
            .bind(&rows.bins)
            .bind(&rows.hdrs)
            .bind(&rows.queues)
            .bind(&rows.groups)
            .fetch_all(&mut *conn)
            .await?;
        for (i, outcome) in match_inserted(l, msgs, &rows.order, inserted) {
            out[i] = Some(outcome);
        }
    }
    Ok(out
        .into_iter()
        .map(|o| o.expect("every message has an outcome"))
        .collect())
}

/// One message's values for the columns that vary with the message's body and queue.
struct Row {
    payload: Option<String>,
    bin: Option<Vec<u8>>,
    queue: Option<String>,
}

/// The row a message becomes, or why it cannot become one: no stable id, an id the id column
/// would change, attributes without a headers column, no queue name for a required queue
/// column, or a body the payload columns cannot hold.
/// Why a copy of `m` could not be a row of the table, known before the INSERT (the server's
/// own refusals, and a changed id's, show only then).
pub(crate) fn check(
    l: &Layout,
    queue: Option<&str>,
    m: &Message,
) -> std::result::Result<(), String> {
    row(l, queue, &HashMap::new(), m).map(|_| ())
}

fn row(
    l: &Layout,
    queue: Option<&str>,
    altered: &HashMap<String, String>,
    m: &Message,
) -> std::result::Result<Row, String> {
    if m.id.is_empty() {
        return Err("the message has no stable id".into());
    }
    if let Some(reason) = altered.get(&m.id).cloned() {
        return Err(reason);
    }
    if !m.attributes.is_empty() && l.col("headers").is_none() {
        return Err(format!(
            "{} has no headers column; the message's {} would be lost",
            l.display,
            crate::human::count(m.attributes.len() as u64, "attribute", "attributes")
        ));
    }
    let q = queue.map(str::to_string).or_else(|| m.source.clone());
    if q.is_none() && l.col("queue").is_some_and(|c| c.not_null) {
        return Err(format!(
            "{} needs a queue name and the message has none: add &queue=NAME to the target",
            l.display
        ));
    }
    match place_body(l, m) {
        Placed::Ok {
            payload,
            payload_bin,
        } => Ok(Row {
            payload,
            bin: payload_bin,
            queue: q,
        }),
        Placed::Rejected(reason) => Err(reason),
    }
}

/// The rows to insert, column by column: each column is bound as one array to UNNEST.
#[derive(Default)]
struct Rows {
    ids: Vec<String>,
    payloads: Vec<Option<String>>,
    bins: Vec<Option<Vec<u8>>>,
    hdrs: Vec<Option<String>>,
    queues: Vec<Option<String>>,
    groups: Vec<Option<String>>,
    /// The index in the batch of each row.
    order: Vec<usize>,
}

impl Rows {
    fn push(&mut self, l: &Layout, i: usize, m: &Message, r: Row) {
        self.ids.push(m.id.clone());
        if l.payload() == PayloadKind::Bytea {
            self.payloads.push(None);
            self.bins.push(r.bin);
        } else {
            self.payloads.push(r.payload);
            self.bins.push(r.bin);
        }
        self.hdrs
            .push(Some(headers::to_json(&m.attributes).to_string()));
        self.queues.push(r.queue);
        self.groups.push(m.group.clone());
        self.order.push(i);
    }
}

/// The INSERT of the unnested rows into the columns the layout maps, in the rows' order,
/// skipping conflicts and returning the ids that went in.
fn insert_statement(l: &Layout) -> String {
    let mut cols = vec![
        l.cols["message_id"].sql.clone(),
        l.cols["payload"].sql.clone(),
    ];
    let mut vals = vec![
        format!("u.m::{}", l.cols["message_id"].ty),
        match l.payload() {
            PayloadKind::Bytea => "u.b".to_string(),
            PayloadKind::Jsonb => "u.p::jsonb".to_string(),
            PayloadKind::Json => "u.p::json".to_string(),
            PayloadKind::Text => "u.p".to_string(),
        },
    ];
    if let Some(c) = l.col("payload_bytes")
        && l.payload() != PayloadKind::Bytea
    {
        cols.push(c.sql.clone());
        vals.push("u.b".into());
    }
    if let Some(c) = l.col("headers") {
        cols.push(c.sql.clone());
        vals.push(format!("u.h::{}", c.ty));
    }
    if let Some(c) = l.col("queue") {
        cols.push(c.sql.clone());
        vals.push(format!("u.q::{}", c.ty));
    }
    if let Some(c) = l.col("group_key") {
        cols.push(c.sql.clone());
        vals.push("u.g".into());
    }
    if let Some(c) = l.col("enqueued_at") {
        cols.push(c.sql.clone());
        vals.push("now()".into());
    }
    format!(
        "INSERT INTO {} ({}) SELECT {} FROM UNNEST($1::text[], $2::text[], $3::bytea[], $4::text[], $5::text[], $6::text[]) WITH ORDINALITY AS u(m, p, b, h, q, g, ord) ORDER BY u.ord ON CONFLICT DO NOTHING RETURNING {}::text",
        l.table,
        cols.join(", "),
        vals.join(", "),
        l.cols["message_id"].sql
    )
}

/// Each row's outcome, by its index in the batch: sent when its id came back, else a conflict
/// with an active twin.
fn match_inserted(
    l: &Layout,
    msgs: &[Message],
    order: &[usize],
    inserted: Vec<String>,
) -> Vec<(usize, SendOutcome)> {
    // Match returned ids back as a multiset: with duplicates in one batch, the first
    // occurrences (insert order) are the ones that went in.
    let mut counts: HashMap<String, usize> = HashMap::new();
    for id in inserted {
        *counts.entry(id).or_default() += 1;
    }
    order
        .iter()
        .map(|&i| {
            let outcome = match counts.get_mut(&msgs[i].id) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    SendOutcome::Sent
                }
                _ => SendOutcome::Conflict {
                    reason: format!(
                        "{} already holds a row with a unique key of this message (an active twin)",
                        l.display
                    ),
                },
            };
            (i, outcome)
        })
        .collect()
}
