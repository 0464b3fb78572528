//! The dead jobs of PostgreSQL job systems (`postgres://…?system=NAME[&queue=…]`,
//! `docs/systems/`). Each preset is a "dead" predicate over the system's own tables, a decoder
//! for its error data, and the retry its own tools perform, run in short batched transactions
//! that skip running and locked rows.

use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Row};

use crate::config::IdSource;
use crate::error::Result;
use crate::message::{AttrValue, Attribute, ErrorInfo, Message};

mod backend;
mod catalog;
mod session;

mod good_job;
mod graphile;
mod oban;
mod pg_boss;
mod pgmq;
mod que;
mod river;
mod solid_queue;

pub use backend::JobSystemBackend;

/// How a system's raw error data turns into class / message / trace.
#[derive(Clone, Copy, Debug)]
pub(super) enum ErrorFormat {
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
    pub(super) from: String,
    /// The dead predicate over `j` (and joins).
    pub(super) dead: String,
    /// How jobs are keyed (and ordered, and found again).
    pub(super) key: Key,
    /// Expressions: body (bytea), kind, queue, attempt, max_attempts, error (raw text),
    /// enqueued_at, dead_at (timestamptz), extra (jsonb).
    pub(super) body: String,
    pub(super) kind: String,
    pub(super) queue: String,
    pub(super) attempt: String,
    pub(super) max_attempts: String,
    pub(super) error: String,
    pub(super) error_format: ErrorFormat,
    pub(super) enqueued_at: String,
    pub(super) dead_at: String,
    pub(super) extra: String,
    /// Rows to lock when claiming (`j`, or the failed-execution row).
    pub(super) lock_of: &'static str,
    /// The retry, for `$1` = keys (text[]); RETURNING the retried keys as text.
    pub(super) retry: String,
    /// Removing a dead job after its copy went elsewhere; `$1` = keys.
    pub(super) delete: String,
    /// Default pruning of dead rows, and where that number comes from.
    pub(super) pruning: (Option<Duration>, &'static str),
    /// The window in which its unique keys hold.
    pub(super) unique: &'static str,
    /// Why the retry cannot carry a message's stable id, where it cannot (pgmq without a
    /// `headers` column in the live queue): a redrive in place is refused unless the id
    /// lives in the body (`id = "json:/…"`).
    pub(super) retry_loses_id: Option<String>,
}

/// How a system's jobs are keyed: one column, or two (pg-boss 10 and later, whose primary key
/// is `(name, id)`: a key on `id` alone would find nothing by index). A key travels as text:
/// the column's text, or `NAME:UUID` (the uuid is the last 36 characters, whatever the name).
pub(super) struct Key {
    /// Columns (of the system's main table) and their types; the last one is 36 characters
    /// of uuid when there are two.
    cols: Vec<(&'static str, &'static str)>,
}

impl Key {
    pub(super) fn one(col: &'static str, ty: &'static str) -> Key {
        Key {
            cols: vec![(col, ty)],
        }
    }

    /// A name and a uuid.
    pub(super) fn name_and_uuid(name: &'static str, id: &'static str) -> Key {
        Key {
            cols: vec![(name, "text"), (id, "uuid")],
        }
    }

    /// The key as text, of the row `p` (`j.` or ``).
    pub(super) fn text(&self, p: &str) -> String {
        match self.cols.as_slice() {
            [(c, _)] => format!("{p}{c}::text"),
            [(n, _), (id, _)] => format!("({p}{n}::text || ':' || {p}{id}::text)"),
            _ => unreachable!("one or two key columns"),
        }
    }

    /// The job's own id in a text key (the stable id): the whole key, or the uuid of
    /// `NAME:UUID`.
    pub(super) fn job_id<'k>(&self, key: &'k str) -> &'k str {
        match self.cols.len() {
            1 => key,
            _ => key.get(key.len().saturating_sub(36)..).unwrap_or(key),
        }
    }

    /// The columns, in key order, for ORDER BY (`suffix`: `` or ` DESC`).
    pub(super) fn order(&self, p: &str, suffix: &str) -> String {
        self.cols
            .iter()
            .map(|(c, _)| format!("{p}{c}{suffix}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The typed value(s) of a text key in SQL expression `t`.
    fn values(&self, t: &str) -> String {
        match self.cols.as_slice() {
            [(_, ty)] => format!("{t}::text::{ty}"),
            [(_, nt), (_, it)] => {
                format!("(left({t}::text, -37)::{nt}, right({t}::text, 36)::{it})")
            }
            _ => unreachable!("one or two key columns"),
        }
    }

    /// The key's column(s) of the row `p`: `j.id`, or `(j.name, j.id)`.
    pub(super) fn columns(&self, p: &str) -> String {
        match self.cols.as_slice() {
            [(c, _)] => format!("{p}{c}"),
            _ => format!("({})", self.order(p, "")),
        }
    }

    /// The row's key compared with the text key `$n` (`op`: `>`, `<=`); a row comparison,
    /// so that the primary key's index serves it.
    pub(super) fn cmp(&self, p: &str, op: &str, n: usize) -> String {
        format!("{} {op} {}", self.columns(p), self.values(&format!("${n}")))
    }

    /// The row's key is one of the text keys in `$n` (a text[]).
    pub(super) fn any(&self, p: &str, n: usize) -> String {
        match self.cols.as_slice() {
            [(c, ty)] => format!("{p}{c} = ANY(${n}::text[]::{ty}[])"),
            _ => format!(
                "{} IN (SELECT {} FROM unnest(${n}::text[]) k)",
                self.columns(p),
                self.values("k")
                    .trim_start_matches('(')
                    .trim_end_matches(')')
            ),
        }
    }
}

impl System {
    pub async fn detect(
        pool: &PgPool,
        name: &str,
        schema: Option<&str>,
        queue: Option<&str>,
    ) -> Result<System> {
        let Some(info) = crate::address::job_system(name) else {
            return Err(catalog::refuse(name, "unknown system".into()));
        };
        let schema = schema.or(info.default_schema).unwrap_or("public");
        match info.name {
            "river" => river::detect(pool, schema).await,
            "oban" => oban::detect(pool, schema).await,
            "pgmq" => pgmq::detect(pool, queue).await,
            "graphile-worker" => graphile::detect(pool, schema).await,
            "solid_queue" => solid_queue::detect(pool, schema).await,
            "good_job" => good_job::detect(pool, schema).await,
            "que" => que::detect(pool, schema).await,
            "pg-boss" => pg_boss::detect(pool, schema).await,
            other => unreachable!(
                "{other} is in address::JOB_SYSTEMS but has no file here (see the test below)"
            ),
        }
    }

    /// The retry of the dead jobs in a key range instead of a list of keys, in one statement:
    /// after the cursor `$1` (none when `first`) up to the bound `$2` (a key, from
    /// [`System::range_bounds`]). Returns how many jobs were retried (`retried`). Derived from
    /// the retry where its keys are one column's (`COL = ANY($1::text[]::TYPE[])`); None
    /// otherwise (graphile-worker's function takes a list; pg-boss 10's two-column key).
    /// The cursor is a condition of its own, not `$1 IS NULL OR …`, which a generic plan
    /// would read as a scan from the first key on every batch.
    pub(super) fn retry_range(&self, first: bool) -> Option<String> {
        static ANY: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"\b([a-z_]+) = ANY\(\$1::text\[\]::([a-z]+)\[\]\)").expect("regex")
        });
        let mut found = ANY.find_iter(&self.retry);
        let m = found.next()?;
        if found.next().is_some() {
            return None;
        }
        let c = ANY.captures(m.as_str())?;
        let (col, ty) = (&c[1], &c[2]);
        let after = if first {
            "$1::text IS NULL".to_string()
        } else {
            format!("{col} > $1::text::{ty}")
        };
        let retry = format!(
            "{}{after} AND {col} <= $2::text::{ty}{}",
            &self.retry[..m.start()],
            &self.retry[m.end()..]
        );
        // A data-modifying WITH must be at the top: a retry that is one (pgmq, solid_queue)
        // lends its CTEs to this statement, and its last statement becomes `dlqctl_retried`
        // (a name no retry uses).
        let (ctes, last) = split_ctes(&retry);
        Some(format!(
            "WITH {ctes}dlqctl_retried AS ({last}) SELECT count(*)::int8 AS retried FROM dlqctl_retried"
        ))
    }

    /// The upper keys of the next ranges of `$4` dead jobs each, read in one statement: of
    /// the first `$3` dead jobs after the cursor `$1` (none when `first`) up to the end key
    /// `$2`, the key of every `$4`th, in key order, as text.
    pub(super) fn range_bounds(&self, first: bool) -> String {
        let k = self.key.columns("j.");
        format!(
            "SELECT d.hi::text AS hi FROM (SELECT {k} AS hi, row_number() OVER (ORDER BY {k}) AS n FROM {from} WHERE {dead} AND {after} AND {upto} ORDER BY {k} LIMIT $3) d WHERE d.n % $4 = 0 ORDER BY d.n",
            from = self.from,
            dead = self.dead,
            after = if first {
                "$1::text IS NULL".to_string()
            } else {
                self.key.cmp("j.", ">", 1)
            },
            upto = self.key.cmp("j.", "<=", 2),
        )
    }

    /// The last dead job's key (the end of a redrive), in text.
    pub(super) fn last_key_query(&self, queue_clause: &str) -> String {
        format!(
            "SELECT {} FROM {} WHERE {}{queue_clause} ORDER BY {} LIMIT 1",
            self.key.text("j."),
            self.from,
            self.dead,
            self.key.order("j.", " DESC")
        )
    }

    pub(super) fn select_list(&self) -> String {
        format!(
            "{key} AS id, {body} AS body, {kind}::text AS kind, {queue}::text AS queue, ({attempt})::int8 AS attempt, ({max})::int8 AS max_attempts, ({error})::text AS error, ({enq})::timestamptz AS enqueued_at, ({dead})::timestamptz AS dead_at, ({extra})::jsonb AS extra",
            key = self.key.text("j."),
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

    pub(super) fn decode_error(&self, raw: Option<String>) -> Option<ErrorInfo> {
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

    pub(super) fn to_message(
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
            id: self.key.job_id(&key).to_string(),
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
        crate::backend::finish_read(&mut m, id);
        Ok(m)
    }
}

/// A statement's leading CTEs (`a AS (…), b AS (…), `, with the trailing comma and space)
/// and its last statement; no CTEs when it has no `WITH`. Parentheses inside quoted strings
/// are not counted.
fn split_ctes(sql: &str) -> (String, &str) {
    let Some(rest) = sql.strip_prefix("WITH ") else {
        return (String::new(), sql);
    };
    let (mut depth, mut quoted, mut end) = (0usize, false, None);
    for (i, ch) in rest.char_indices() {
        match ch {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => {
                depth -= 1;
                // A CTE closed: another follows after a comma, else the last statement.
                if depth == 0 && !rest[i + 1..].trim_start().starts_with(',') {
                    end = Some(i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    match end {
        Some(e) => (format!("{}, ", &rest[..e]), rest[e..].trim_start()),
        None => (String::new(), sql),
    }
}

#[cfg(test)]
mod tests {
    use super::{Key, split_ctes};

    /// A retry that is a WITH statement lends its CTEs to the range statement; parentheses in
    /// quotes and in the last statement do not end the list.
    #[test]
    fn split_ctes_finds_the_last_statement() {
        let (c, last) = split_ctes("UPDATE t SET a = 1 WHERE id > 0 RETURNING id::text");
        assert_eq!(
            (c.as_str(), last),
            ("", "UPDATE t SET a = 1 WHERE id > 0 RETURNING id::text")
        );
        let (c, last) = split_ctes(
            "WITH m AS (DELETE FROM d WHERE x = ')' RETURNING id), s AS (INSERT INTO l (v) SELECT f(id) FROM m RETURNING 1) SELECT (id)::text FROM m",
        );
        assert_eq!(
            c,
            "m AS (DELETE FROM d WHERE x = ')' RETURNING id), s AS (INSERT INTO l (v) SELECT f(id) FROM m RETURNING 1), "
        );
        assert_eq!(last, "SELECT (id)::text FROM m");
    }

    /// Every system in the one list has a description here (the dispatch in `detect`).
    #[test]
    fn every_listed_system_has_a_file() {
        let source = include_str!("mod.rs");
        for name in crate::address::job_system_names() {
            assert!(
                source.contains(&format!("            \"{name}\" => ")),
                "{name} is in address::JOB_SYSTEMS but System::detect does not dispatch it"
            );
        }
    }

    #[test]
    fn a_two_column_key_is_compared_as_a_row_and_keeps_the_job_id() {
        let k = Key::name_and_uuid("name", "id");
        assert_eq!(k.text("j."), "(j.name::text || ':' || j.id::text)");
        assert_eq!(
            k.cmp("j.", ">", 1),
            "(j.name, j.id) > (left($1::text, -37)::text, right($1::text, 36)::uuid)"
        );
        assert_eq!(
            k.any("", 1),
            "(name, id) IN (SELECT left(k::text, -37)::text, right(k::text, 36)::uuid FROM unnest($1::text[]) k)"
        );
        assert_eq!(k.order("j.", " DESC"), "j.name DESC, j.id DESC");
        let key = "billing:charge:00000000-0000-0000-0000-000000000005";
        assert_eq!(k.job_id(key), "00000000-0000-0000-0000-000000000005");
    }

    #[test]
    fn a_one_column_key_is_the_column() {
        let k = Key::one("id", "bigint");
        assert_eq!(k.text("j."), "j.id::text");
        assert_eq!(k.cmp("j.", "<=", 2), "j.id <= $2::text::bigint");
        assert_eq!(k.any("", 1), "id = ANY($1::text[]::bigint[])");
        assert_eq!(k.job_id("42"), "42");
    }
}
