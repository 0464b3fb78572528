//! PostgreSQL: dead-letter tables in the generic layout (`docs/postgres.md`).
//!
//! All SQL is built from catalog names (quoted) and bound values; nothing the user typed is
//! ever interpolated.

use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgPool, PgRow};
use sqlx::{AssertSqlSafe, Row};

use super::{
    Capabilities, Inspection, MessageStream, MoveOptions, MoveSession, OpenOptions, QueueBackend,
    QueueSink, ScanOptions, SendOutcome, TailOptions, VerifyFacts,
};
use crate::address::{Address, PgAddress, PgTarget};
use crate::config::{IdSource, QueueConfig};
use crate::error::{Error, Result};
use crate::message::{ErrorInfo, Message};

pub mod audit;
pub mod conn;
pub mod cron;
pub mod dedupe;
mod facts;
pub mod headers;
pub mod layout;
mod moves;
mod pool;
pub mod systems;
mod write;

use layout::{DLQ_COLUMNS, Layout, QUEUE_COLUMNS};

pub use pool::{connect, pg_err, pg_err_moving};

pub struct PgBackend {
    addr: Address,
    pg: PgAddress,
    pool: PgPool,
    layout: Layout,
    id: Option<IdSource>,
    as_target: bool,
}

/// Open an address of this backend (its line in `backend::OPENERS`): a job system's dead
/// jobs (`?system=`), else a dead-letter table.
pub fn open<'a>(
    addr: &'a Address,
    opts: &'a OpenOptions,
) -> futures::future::BoxFuture<'a, Result<Box<dyn crate::backend::QueueBackend>>> {
    match addr {
        Address::Postgres(crate::address::PgAddress {
            target: crate::address::PgTarget::System(_),
            ..
        }) => crate::backend::boxed(systems::JobSystemBackend::open(addr, opts)),
        _ => crate::backend::boxed(PgBackend::open(addr, opts)),
    }
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
    super::finish_read(&mut m, id);
    Ok(m)
}

#[async_trait]
impl QueueBackend for PgBackend {
    fn address(&self) -> &Address {
        &self.addr
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            tail: !self.as_target,
            delete: !self.as_target,
            read_side_effect: None,
            per_message_destination: false,
            ..Capabilities::default()
        }
    }

    async fn inspect(&self, classifier: &crate::classify::Classifier) -> Result<Inspection> {
        self.inspect_table(classifier).await
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

    fn describe_move(&self, how: &super::MoveHow) -> String {
        match (how.purge, how.local) {
            (true, true) => {
                "archive and delete each batch in one transaction (INSERT … SELECT, DELETE)".into()
            }
            (true, false) if how.archived => super::archive_then(true, "delete its row"),
            (true, false) => "delete each selected row".into(),
            (false, true) => {
                "move each batch in one transaction: insert the copies, delete the dead letters"
                    .into()
            }
            (false, false) => {
                "copy each message to the target, then delete it from the dead-letter table".into()
            }
        }
    }

    async fn begin_move(&self, opts: MoveOptions) -> Result<Box<dyn MoveSession + '_>> {
        if self.as_target {
            unreachable!("begin_move on a target-opened table");
        }
        Ok(Box::new(moves::PgMoveSession::begin(self, opts).await?))
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
        self.verify_table(cfg).await
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

    fn sink(&self) -> Option<&dyn QueueSink> {
        Some(self)
    }
}

#[async_trait]
impl QueueSink for PgBackend {
    /// One INSERT per batch. A row the table refuses (a CHECK, NOT NULL or foreign key, a value
    /// it cannot hold) fails the whole INSERT: then the batch goes row by row, each in its own
    /// transaction, so that the refused copy is rejected with the server's reason (and stays
    /// in the source) while the rest are accepted.
    async fn send(&self, batch: &[Message]) -> Result<Vec<SendOutcome>> {
        match self.insert(batch).await {
            Err(e) if batch.len() > 1 && refuses_a_row(&e) => {
                tracing::debug!(error = %e, "a row was refused: inserting the batch row by row");
                let mut out = Vec::with_capacity(batch.len());
                for m in batch {
                    match self.insert(std::slice::from_ref(m)).await {
                        Ok(mut one) => out.push(one.pop().expect("one outcome per message")),
                        Err(e) if refuses_a_row(&e) => out.push(SendOutcome::Rejected {
                            reason: format!("{} refused it: {}", self.target(), row_refusal(&e)),
                        }),
                        Err(e) => return Err(self.err(e)),
                    }
                }
                Ok(out)
            }
            Err(e) if refuses_a_row(&e) => Ok(vec![SendOutcome::Rejected {
                reason: format!("{} refused it: {}", self.target(), row_refusal(&e)),
            }]),
            r => r.map_err(|e| self.err(e)),
        }
    }

    fn check(&self, copy: &Message) -> std::result::Result<(), String> {
        write::check(&self.layout, self.pg.queue.as_deref(), copy)
    }
}

impl PgBackend {
    /// The batch in one transaction (one INSERT).
    async fn insert(
        &self,
        batch: &[Message],
    ) -> std::result::Result<Vec<SendOutcome>, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let out =
            write::insert_messages(&mut tx, &self.layout, self.pg.queue.as_deref(), batch).await?;
        tx.commit().await?;
        Ok(out)
    }
}

/// Whether the server refused a row for what it holds (SQLSTATE class 22, a data exception,
/// or 23, an integrity constraint), not for anything about the connection or the statement.
fn refuses_a_row(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|c| c.starts_with("22") || c.starts_with("23"))
}

/// The server's words for a refused row.
fn row_refusal(e: &sqlx::Error) -> String {
    e.as_database_error()
        .map_or_else(|| e.to_string(), |d| d.message().to_string())
}
