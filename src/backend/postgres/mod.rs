//! PostgreSQL: dead-letter tables in the generic layout (`docs/postgres.md`).
//!
//! All SQL is built from catalog names (quoted) and bound values; nothing the user typed is
//! ever interpolated.

use std::time::Duration;

use crate::pgconn::PgConn;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};
use sqlx::{AssertSqlSafe, ConnectOptions, Row};

use super::{
    Capabilities, Check, Fact, Inspection, MessageStream, MoveOptions, MoveSession, OpenOptions,
    QueueBackend, ScanOptions, SendOutcome, Status, Table, TailOptions, Term, VerifyFacts,
};
use crate::address::{Address, PgAddress, PgTarget, redact};
use crate::config::{IdSource, QueueConfig, Retention};
use crate::error::{Error, Result};
use crate::message::{ErrorInfo, Message};
use crate::output::{human_age, human_bytes};

pub mod conn;
pub mod cron;
pub mod dedupe;
pub mod headers;
pub mod layout;
mod moves;
pub mod systems;
mod write;

use layout::{DLQ_COLUMNS, Layout, QUEUE_COLUMNS};

pub struct PgBackend {
    addr: Address,
    pg: PgAddress,
    pool: PgPool,
    layout: Layout,
    id: Option<IdSource>,
    as_target: bool,
}

/// Map a driver error to the spec's error kinds, naming `target` (never its password).
pub fn pg_err(target: &str, e: sqlx::Error) -> Error {
    let target = redact(target);
    if let Some(db) = e.as_database_error() {
        let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
        let msg = db.message().to_string();
        return match code.as_str() {
            "28P01" | "28000" => Error::PermissionDenied {
                target,
                reason: format!("authentication failed ({msg})"),
            },
            "42501" => Error::PermissionDenied {
                target,
                reason: msg,
            },
            "3D000" => Error::NotFound {
                what: "database".into(),
                detail: msg,
            },
            "42P01" => Error::NotFound {
                what: "table".into(),
                detail: msg,
            },
            "57P01" | "57P02" | "57P03" | "08000" | "08003" | "08006" => Error::Unreachable {
                target,
                reason: format!(
                    "{msg} (the server went away; nothing was lost, re-run to continue)"
                ),
            },
            _ => Error::Backend {
                target,
                reason: format!("{msg} (SQLSTATE {code})"),
            },
        };
    }
    match e {
        sqlx::Error::Io(io) => Error::Unreachable {
            target,
            reason: format!("{io} (nothing was lost; re-run to continue)"),
        },
        sqlx::Error::Tls(t) => Error::Unreachable {
            target,
            reason: format!("TLS: {t}"),
        },
        sqlx::Error::PoolTimedOut => Error::Unreachable {
            target,
            reason: "timed out connecting".into(),
        },
        sqlx::Error::Configuration(c) => Error::InvalidAddress {
            input: target,
            reason: c.to_string(),
        },
        other => Error::Backend {
            target,
            reason: other.to_string(),
        },
    }
}

/// Connect to the server of `conn`, resolved as libpq would (see [`conn::resolve`]).
pub async fn connect(c: &PgConn) -> Result<PgPool> {
    let shown = c.to_string();
    let resolved = conn::resolve(c)?;
    let opts = resolved.options;
    let auth = |e: Error| match e {
        Error::PermissionDenied { target, reason }
            if reason.starts_with("authentication failed") =>
        {
            Error::AuthenticationFailed {
                target,
                reason: reason
                    .trim_start_matches("authentication failed (")
                    .trim_end_matches(')')
                    .to_string(),
                password_from: resolved.password.describe(),
            }
        }
        other => other,
    };
    // One direct connection first: a refused connection or a bad password is reported as
    // what it is, at once, instead of as a pool timeout.
    let first = tokio::time::timeout(Duration::from_secs(15), opts.connect())
        .await
        .map_err(|_| Error::Unreachable {
            target: shown.clone(),
            reason: "timed out connecting after 15s".into(),
        })?
        .map_err(|e| auth(pg_err(&shown, e)))?;
    drop(first);
    PgPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(Duration::from_secs(15))
        .connect_with(opts)
        .await
        .map_err(|e| auth(pg_err(&shown, e)))
}

impl PgBackend {
    pub async fn open(addr: &Address, opts: &OpenOptions) -> Result<PgBackend> {
        let Address::Postgres(pg) = addr else {
            unreachable!("PgBackend::open with a non-postgres address")
        };
        let table = match &pg.target {
            PgTarget::Table(t) => t.clone(),
            PgTarget::System(name) => {
                return Err(Error::Unsupported {
                    backend: "postgres",
                    operation: "job-system presets",
                    reason: format!(
                        "system={name} is not available in this version; point table= at a dead-letter table in the generic layout"
                    ),
                });
            }
        };
        let pool = connect(&pg.conn).await?;
        let (spec, key) = if opts.as_target {
            (QUEUE_COLUMNS, "queues.NAME.source_columns")
        } else {
            (DLQ_COLUMNS, "queues.NAME.columns")
        };
        let layout = Layout::resolve(&pool, &table, spec, &opts.columns, key).await?;
        if opts.as_target {
            write::check_insertable(&layout)?;
        }
        if pg.queue.is_some() && layout.col("queue").is_none() {
            return Err(Error::Schema {
                table: layout.display.clone(),
                reason: "queue= was given but the table has no queue column".into(),
            });
        }
        Ok(PgBackend {
            addr: addr.clone(),
            pg: pg.clone(),
            pool,
            layout,
            id: opts.id.clone(),
            as_target: opts.as_target,
        })
    }

    fn target(&self) -> String {
        format!("{} ({})", self.layout.display, self.pg.conn)
    }

    fn err(&self, e: sqlx::Error) -> Error {
        pg_err(&self.target(), e)
    }

    /// `AND queue = $n` when the address names a queue slice. Always mentions `$n`, so the
    /// caller always binds `self.pg.queue` there.
    fn queue_clause(&self, param: usize) -> String {
        match (&self.pg.queue, self.layout.col("queue")) {
            (Some(_), Some(c)) => format!(" AND {}::text = ${param}", c.sql),
            _ => format!(" AND ${param}::text IS NULL"),
        }
    }

    fn row_to_message(&self, row: &PgRow) -> Result<Message> {
        row_to_message(row, &self.layout, self.id.as_ref()).map_err(|e| self.err(e))
    }

    async fn page(&self, after: Option<&str>, limit: i64) -> Result<Vec<Message>> {
        let l = &self.layout;
        let id = l.key();
        let sql = format!(
            "SELECT {} FROM {} WHERE ($1::text IS NULL OR {id} > $1::text::{}){} ORDER BY {id} LIMIT $2",
            l.select_list(),
            l.table,
            l.id_type(),
            self.queue_clause(3)
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(after)
            .bind(limit)
            .bind(self.pg.queue.as_deref())
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(|r| self.row_to_message(r)).collect()
    }

    async fn max_id(&self) -> Result<Option<String>> {
        let l = &self.layout;
        let sql = format!(
            "SELECT max({})::text FROM {} WHERE true{}",
            l.key(),
            l.table,
            self.queue_clause(1)
        );
        sqlx::query_scalar::<_, Option<String>>(AssertSqlSafe(sql))
            .bind(self.pg.queue.as_deref())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    /// A NOTIFY channel, when a trigger on the table sends one (`docs/postgres.md#tail`).
    async fn notify_channel(&self) -> Result<Option<String>> {
        let srcs: Vec<String> = sqlx::query_scalar(
            "SELECT p.prosrc FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
              WHERE t.tgrelid = $1::int8::oid AND NOT t.tgisinternal AND p.prosrc ILIKE '%pg_notify%'",
        )
        .bind(self.layout.oid as i64)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.err(e))?;
        let re = regex::Regex::new(r"(?i)pg_notify\s*\(\s*'([^']+)'").expect("static regex");
        Ok(srcs
            .iter()
            .find_map(|s| re.captures(s).map(|c| c[1].to_string())))
    }
}

/// Whether two addresses reach the same database as the same user, so that a move between
/// them can be one transaction. Compared on the resolved connections (the URL's query
/// parameters, the service entry and the environment applied), never on the URL text.
pub fn same_database(a: &PgAddress, b: &PgAddress) -> bool {
    match (conn::resolve(&a.conn), conn::resolve(&b.conn)) {
        (Ok(x), Ok(y)) => conn::identity(&x.options) == conn::identity(&y.options),
        _ => false,
    }
}

/// Read a table page by page by key (`page(after, n)` returns up to `n` rows after the key),
/// so memory stays flat whatever the table's size and no transaction stays open.
pub(crate) fn keyset_pages<'a, F, Fut>(opts: ScanOptions, page: F) -> MessageStream<'a>
where
    F: Fn(Option<String>, i64) -> Fut + Send + 'a,
    Fut: std::future::Future<Output = Result<Vec<Message>>> + Send + 'a,
{
    let size = opts.page_size.clamp(1, 5000) as i64;
    Box::pin(async_stream::try_stream! {
        let mut after: Option<String> = None;
        let mut n = 0u64;
        loop {
            let want = match opts.limit {
                Some(l) if l <= n => break,
                Some(l) => size.min((l - n) as i64),
                None => size,
            };
            let rows = page(after.clone(), want).await?;
            let got = rows.len() as i64;
            let last = rows.last().map(|m| m.native_id.clone());
            for m in rows {
                n += 1;
                yield m;
            }
            if got < want {
                break;
            }
            after = last;
        }
    })
}

pub(crate) fn row_to_message(
    row: &PgRow,
    layout: &Layout,
    id: Option<&IdSource>,
) -> std::result::Result<Message, sqlx::Error> {
    let native_id: String = row.try_get("id")?;
    let message_id: Option<String> = row.try_get("message_id")?;
    let hdrs: Option<serde_json::Value> = row.try_get("headers")?;
    let error: Option<String> = row.try_get("error")?;
    let attempts: Option<i64> = row.try_get("attempts")?;
    let mut m = Message {
        id: message_id
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| native_id.clone()),
        native_id,
        body: row.try_get("body")?,
        attributes: hdrs.map(|h| headers::from_json(&h)).unwrap_or_default(),
        receive_count: attempts.and_then(|a| u32::try_from(a).ok()),
        enqueued_at: row.try_get("enqueued_at")?,
        dead_lettered_at: row.try_get("failed_at")?,
        error: error.map(|e| ErrorInfo {
            message: Some(e),
            ..ErrorInfo::default()
        }),
        source: row.try_get("queue")?,
        group: row.try_get("group_key")?,
        ..Message::default()
    };
    m.meta
        .insert("table", serde_json::Value::String(layout.display.clone()));
    super::apply_id_source(&mut m, id);
    Ok(m)
}

fn time_fact(name: &str, t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Fact {
    match t {
        Some(t) => Fact::new(
            name,
            t.to_rfc3339(),
            format!(
                "{} ago ({})",
                human_age(now - t),
                t.format("%Y-%m-%d %H:%M:%S UTC")
            ),
        ),
        None => Fact::new(name, serde_json::Value::Null, "-"),
    }
}

#[async_trait]
impl QueueBackend for PgBackend {
    fn address(&self) -> &Address {
        &self.addr
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            read: !self.as_target,
            tail: !self.as_target,
            delete: !self.as_target,
            write: true,
            read_side_effect: None,
            per_message_destination: false,
        }
    }

    async fn inspect(&self, classifier: &crate::classify::Classifier) -> Result<Inspection> {
        let l = &self.layout;
        let now = Utc::now();
        let mut ins = Inspection {
            queue: self.addr.to_string(),
            backend: "postgres",
            ..Inspection::default()
        };
        let age = l.age_expr();
        let dl = l.col("failed_at").map(|c| c.sql.clone());
        let sql = format!(
            "SELECT count(*)::int8 AS n, {} AS oldest, {} AS newest, {} AS first_dead, {} AS last_dead FROM {} WHERE true{}",
            age.as_ref()
                .map_or("NULL::timestamptz".into(), |a| format!("min({a})")),
            age.as_ref()
                .map_or("NULL::timestamptz".into(), |a| format!("max({a})")),
            dl.as_ref()
                .map_or("NULL::timestamptz".into(), |a| format!("min({a})")),
            dl.as_ref()
                .map_or("NULL::timestamptz".into(), |a| format!("max({a})")),
            l.table,
            self.queue_clause(1)
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(self.pg.queue.as_deref())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        let n: i64 = row.try_get("n").map_err(|e| self.err(e))?;
        let (bytes, _) = layout::table_size(&self.pool, l).await?;
        ins.facts
            .push(Fact::new("table", l.display.clone(), l.display.clone()));
        if let Some(q) = &self.pg.queue {
            ins.facts.push(Fact::new("queue", q.clone(), q.clone()));
        }
        ins.facts.push(Fact::new("messages", n, n.to_string()));
        let t = |c: &str| row.try_get::<Option<DateTime<Utc>>, _>(c).ok().flatten();
        ins.facts.push(time_fact("oldest", t("oldest"), now));
        ins.facts.push(time_fact("newest", t("newest"), now));
        ins.facts
            .push(time_fact("first_dead_lettered", t("first_dead"), now));
        ins.facts
            .push(time_fact("last_dead_lettered", t("last_dead"), now));
        ins.facts
            .push(Fact::new("size_bytes", bytes, human_bytes(bytes)));
        match cron::prune_jobs(&self.pool, &l.schema, &l.name).await? {
            Some(job) => ins.facts.push(Fact::new(
                "retention",
                job.retention.map(|d| d.as_secs()),
                job.describe(),
            )),
            None => ins.facts.push(Fact::new(
                "retention",
                "forever",
                "forever (no pg_cron job prunes this table)",
            )),
        }
        if let Some(source) = &self.pg.source_table {
            ins.facts
                .push(Fact::new("source", source.clone(), source.clone()));
        }

        if let Some(q) = l.col("queue")
            && self.pg.queue.is_none()
        {
            let sql = format!(
                "SELECT {q}::text AS queue, count(*)::int8 AS n FROM {} GROUP BY 1 ORDER BY 2 DESC LIMIT 20",
                l.table,
                q = q.sql
            );
            let rows = sqlx::query(AssertSqlSafe(sql))
                .fetch_all(&self.pool)
                .await
                .map_err(|e| self.err(e))?;
            ins.tables.push(Table {
                title: "by source queue".into(),
                columns: vec!["queue".into(), "messages".into()],
                rows: rows
                    .iter()
                    .map(|r| {
                        vec![
                            r.try_get::<Option<String>, _>("queue")
                                .ok()
                                .flatten()
                                .into(),
                            r.try_get::<i64, _>("n").unwrap_or(0).into(),
                        ]
                    })
                    .collect(),
            });
        }

        // Failure classes: cheap on a sample of the newest rows (error text only).
        if let Some(e) = l.col("error") {
            const SAMPLE: i64 = 5000;
            let sql = format!(
                "SELECT left({e}::text, 2000) FROM {} WHERE true{} ORDER BY {} DESC LIMIT $2",
                l.table,
                self.queue_clause(1),
                l.key(),
                e = e.sql
            );
            let errors: Vec<Option<String>> = sqlx::query_scalar(AssertSqlSafe(sql))
                .bind(self.pg.queue.as_deref())
                .bind(SAMPLE)
                .fetch_all(&self.pool)
                .await
                .map_err(|e| self.err(e))?;
            let c = classifier;
            let mut counts: std::collections::BTreeMap<(String, String), u64> = Default::default();
            for err in &errors {
                let m = Message {
                    error: err.clone().map(|msg| ErrorInfo {
                        message: Some(msg),
                        ..ErrorInfo::default()
                    }),
                    ..Message::default()
                };
                let class = c.classify(&m);
                *counts
                    .entry((class.kind.to_string(), class.rule))
                    .or_default() += 1;
            }
            let mut rows: Vec<_> = counts.into_iter().collect();
            rows.sort_by_key(|r| std::cmp::Reverse(r.1));
            ins.tables.push(Table {
                title: if errors.len() as i64 >= SAMPLE {
                    format!("by failure class (newest {SAMPLE})")
                } else {
                    "by failure class".into()
                },
                columns: vec!["class".into(), "rule".into(), "messages".into()],
                rows: rows
                    .into_iter()
                    .map(|((k, r), n)| vec![k.into(), r.into(), n.into()])
                    .collect(),
            });
        }
        Ok(ins)
    }

    async fn scan(&self, opts: ScanOptions) -> Result<MessageStream<'_>> {
        Ok(keyset_pages(opts, move |after, n| async move {
            self.page(after.as_deref(), n).await
        }))
    }

    async fn tail(&self, opts: TailOptions) -> Result<MessageStream<'_>> {
        let start = if opts.from_start {
            None
        } else {
            self.max_id().await?
        };
        let channel = self.notify_channel().await?;
        let mut listener = match &channel {
            Some(ch) => {
                let mut l = sqlx::postgres::PgListener::connect_with(&self.pool)
                    .await
                    .map_err(|e| self.err(e))?;
                l.listen(ch).await.map_err(|e| self.err(e))?;
                tracing::debug!(channel = %ch, "tail: LISTEN as a wake-up hint");
                Some(l)
            }
            None => None,
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
                if full {
                    continue;
                }
                match listener.as_mut() {
                    // NOTIFY is only a hint: rows are always re-read by key, and a lost
                    // notification costs at most one poll interval.
                    Some(l) => {
                        let _ = tokio::time::timeout(opts.poll_interval * 5, l.recv()).await;
                    }
                    None => tokio::time::sleep(opts.poll_interval).await,
                }
            }
        }))
    }

    fn can_move_locally(&self, target: &Address) -> bool {
        matches!(target, Address::Postgres(t) if matches!(t.target, PgTarget::Table(_)) && same_database(&self.pg, t))
    }

    async fn begin_move(&self, opts: MoveOptions) -> Result<Box<dyn MoveSession + '_>> {
        if self.as_target {
            unreachable!("begin_move on a target-opened table");
        }
        Ok(Box::new(moves::PgMoveSession::begin(self, opts).await?))
    }

    async fn send(&self, batch: &[Message]) -> Result<Vec<SendOutcome>> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let out = write::insert_messages(&mut tx, &self.layout, self.pg.queue.as_deref(), batch)
            .await
            .map_err(|e| self.err(e))?;
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(out)
    }

    async fn backlog(&self, _for_redrive: bool) -> Result<Option<super::Backlog>> {
        let sql = format!(
            "SELECT count(*)::int8 FROM {} WHERE true{}",
            self.layout.table,
            self.queue_clause(1)
        );
        let n: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(self.pg.queue.as_deref())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(Some(super::Backlog {
            messages: n as u64,
            exact: true,
        }))
    }

    async fn identity(&self) -> Result<Option<String>> {
        // The postmaster's start time tells two servers apart (to the microsecond) without
        // any privilege; the database and the table's oid do the rest.
        let id: String = sqlx::query_scalar(
            "SELECT pg_postmaster_start_time()::text || '/' || current_database() || '/' || $1::int8::text",
        )
        .bind(self.layout.oid as i64)
        .fetch_one(&self.pool)
        .await
        .map_err(|e| self.err(e))?;
        Ok(Some(format!("postgres:{id}")))
    }

    async fn destination(&self, _m: &Message) -> Result<Option<Address>> {
        Ok(self
            .pg
            .source_table
            .as_ref()
            .map(|t| Address::Postgres(self.pg.with_table(t))))
    }

    async fn verify_facts(&self, cfg: &QueueConfig) -> Result<VerifyFacts> {
        let l = &self.layout;
        let mut facts = VerifyFacts::default();
        facts.redelivery.push(match cfg.time_to_dead_letter {
            Some(d) => Term {
                label: "time to dead-letter".into(),
                value: Retention::For(d),
                source: "time_to_dead_letter in dlqctl.toml".into(),
            },
            None => Term {
                label: "time to dead-letter".into(),
                value: Retention::For(Duration::ZERO),
                source: "not declared (set time_to_dead_letter); counted as 0".into(),
            },
        });
        let job = cron::prune_jobs(&self.pool, &l.schema, &l.name).await?;
        let (value, source, check) = match (cfg.dlq_retention, &job) {
            (Some(d), _) => (
                Retention::For(d),
                "dlq_retention in dlqctl.toml".to_string(),
                Check {
                    id: "dead-row-pruning".into(),
                    title: "Dead-letter pruning".into(),
                    status: Status::Pass,
                    detail: format!(
                        "declared dlq_retention {}{}",
                        crate::output::fmt_duration(d),
                        job.as_ref()
                            .map(|j| format!("; also found {}", j.describe()))
                            .unwrap_or_default()
                    ),
                },
            ),
            (None, Some(j)) => match j.retention {
                Some(d) => (
                    Retention::For(d),
                    j.describe(),
                    Check {
                        id: "dead-row-pruning".into(),
                        title: "Dead-letter pruning".into(),
                        status: Status::Pass,
                        detail: j.describe(),
                    },
                ),
                None => (
                    Retention::Forever,
                    format!("{} (its age limit could not be read)", j.describe()),
                    Check {
                        id: "dead-row-pruning".into(),
                        title: "Dead-letter pruning".into(),
                        status: Status::Warn,
                        detail: format!(
                            "{}, but its age limit could not be read; declare dlq_retention",
                            j.describe()
                        ),
                    },
                ),
            },
            (None, None) => (
                Retention::Forever,
                "no pruning found: rows stay until deleted".to_string(),
                Check {
                    id: "dead-row-pruning".into(),
                    title: "Dead-letter pruning".into(),
                    status: Status::Warn,
                    detail: format!(
                        "nothing prunes {} (no pg_cron job, no dlq_retention declared): dead letters are kept forever",
                        l.display
                    ),
                },
            ),
        };
        facts.redelivery.push(Term {
            label: "dead-letter retention".into(),
            value,
            source,
        });
        facts.checks.push(check);
        Ok(facts)
    }

    async fn count_older_than(&self, age: Duration) -> Result<Option<u64>> {
        let Some(a) = self.layout.age_expr() else {
            return Ok(None);
        };
        let sql = format!(
            "SELECT count(*)::int8 FROM {} WHERE {a} < now() - make_interval(secs => $2){}",
            self.layout.table,
            self.queue_clause(1)
        );
        let n: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(self.pg.queue.as_deref())
            .bind(age.as_secs_f64())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(Some(n as u64))
    }

    async fn oldest(&self) -> Result<Option<DateTime<Utc>>> {
        let Some(a) = self.layout.age_expr() else {
            return Ok(None);
        };
        let sql = format!(
            "SELECT min({a}) FROM {} WHERE true{}",
            self.layout.table,
            self.queue_clause(1)
        );
        sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(self.pg.queue.as_deref())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }
}
