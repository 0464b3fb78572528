//! Redrive from a dead-letter table.
//!
//! * Each batch is one transaction: `SELECT … FOR UPDATE SKIP LOCKED` claims rows (running or
//!   locked rows are skipped, never waited on, and counted: the run reports them and ends with
//!   exit 1), and the rows are deleted only in the same
//!   transaction that inserts their copies (same database) or after the target accepted them
//!   (any other target). A crash at any instant leaves each row in the table, in the target,
//!   or — only for foreign targets — in both, with the same stable id.
//! * The batches walk the table by key up to the largest key present at the start, so a run
//!   terminates and never re-reads a row it skipped.
//! * A session-level advisory lock keeps two operators from redriving one table at once.
//! * Where every row of a batch fits the target as is, the batch is moved by key range: one
//!   statement, a transaction of its own, looks up the next `n` keys, deletes that range and
//!   inserts the copies (and fails, leaving nothing, unless every copy went in).
//!   A range delete cannot skip locked rows, so it runs with a short `lock_timeout`: if it
//!   meets a row that another transaction holds, the batch is rolled back and moved with
//!   `FOR UPDATE SKIP LOCKED` instead (and after [`MAX_LOCK_TIMEOUTS`] such batches, every
//!   later one is). The range move writes each row once; the claim writes a row lock first,
//!   which made it cost about twice as much (`docs/benchmarks.md`).

use std::collections::HashMap;

use async_trait::async_trait;
use sqlx::postgres::PgConnection;
use sqlx::{AssertSqlSafe, Postgres, Row, Transaction};

use super::layout::{Layout, PayloadKind, QUEUE_COLUMNS};
use super::{PgBackend, pg_err, pg_err_moving, row_to_message, write};
use crate::address::{Address, PgAddress};
use crate::backend::{
    Claim, LocalBatch, LocalMoves, LocalNext, MoveOptions, MoveSession, SendOutcome, Ticket,
    Unaccounted,
};
use crate::error::{Error, Result};
use crate::message::Message;

mod batch;
mod local;

use batch::RangeMove;
use local::copy_columns;

/// How long a range move waits for a row lock before it gives the batch to `SKIP LOCKED`.
const RANGE_LOCK_TIMEOUT_MS: u32 = 50;
/// Batches that met a held row before range moves are given up for the rest of the run.
const MAX_LOCK_TIMEOUTS: u32 = 3;

pub struct PgMoveSession<'a> {
    b: &'a PgBackend,
    opts: MoveOptions,
    /// Holds the advisory lock (closing it releases the lock) and runs the range moves, with
    /// `lock_timeout` set so that a row another transaction holds is never waited on for long.
    conn: PgConnection,
    /// Whether batches are still tried as range moves (off after [`MAX_LOCK_TIMEOUTS`]).
    range_moves: bool,
    lock_timeouts: u32,
    cursor: Option<String>,
    end: Option<String>,
    tx: Option<Transaction<'static, Postgres>>,
    batch: Vec<Claimed>,
    /// The keys of rows that claims (`FOR UPDATE SKIP LOCKED`) passed over because another
    /// transaction held them; at the end, how many of them are still there (reported).
    passed: Vec<String>,
    left: u64,
    /// Target layouts for local moves, by table name.
    targets: HashMap<String, Layout>,
    /// Whether a copy can hit a unique index of the (single) batch-move target.
    conflicts: Option<bool>,
}

struct Claimed {
    native_id: String,
    message_id: String,
    binary: bool,
    has_headers: bool,
    message: Option<Message>,
}

impl<'a> PgMoveSession<'a> {
    pub async fn begin(b: &'a PgBackend, opts: MoveOptions) -> Result<PgMoveSession<'a>> {
        let target = b.target();
        let mut lock = b
            .pool
            .acquire()
            .await
            .map_err(|e| pg_err(&target, e))?
            .detach();
        let key = format!("dlqctl.redrive:{}", b.layout.oid);
        let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock(hashtextextended($1, 0))")
            .bind(&key)
            .fetch_one(&mut lock)
            .await
            .map_err(|e| pg_err(&target, e))?;
        if !got {
            return Err(Error::Backend {
                target: b.layout.display.clone(),
                reason: "another dlqctl redrive holds this table's advisory lock; wait for it to finish (SELECT pid FROM pg_locks WHERE locktype = 'advisory' shows who)".into(),
            });
        }
        sqlx::query(AssertSqlSafe(format!(
            "SET lock_timeout = '{RANGE_LOCK_TIMEOUT_MS}ms'"
        )))
        .execute(&mut lock)
        .await
        .map_err(|e| pg_err(&target, e))?;
        let end = b.max_id().await?;
        Ok(PgMoveSession {
            b,
            opts,
            conn: lock,
            range_moves: true,
            lock_timeouts: 0,
            cursor: None,
            end,
            tx: None,
            batch: Vec::new(),
            passed: Vec::new(),
            left: 0,
            targets: HashMap::new(),
            conflicts: None,
        })
    }

    fn err(&self, e: sqlx::Error) -> Error {
        self.b.err(e)
    }

    async fn target_layout(
        &mut self,
        table: &str,
        queue_given: bool,
        pool: &sqlx::PgPool,
    ) -> Result<Layout> {
        if let Some(l) = self.targets.get(table) {
            return Ok(l.clone());
        }
        let l = Layout::resolve(
            pool,
            table,
            QUEUE_COLUMNS,
            &self.opts.target_columns,
            "queues.NAME.source_columns",
        )
        .await?;
        write::check_insertable(&l)?;
        if queue_given && l.col("queue").is_none() {
            return Err(Error::Schema {
                table: l.display.clone(),
                reason: "queue= was given but the table has no queue column".into(),
            });
        }
        if l.oid == self.b.layout.oid {
            return Err(Error::invalid_arg(
                "--to",
                "the target is the dead-letter table itself",
            ));
        }
        self.targets.insert(table.to_string(), l.clone());
        Ok(l)
    }

    /// Fill in full messages for the selected rows, when the batch was claimed ids-only.
    async fn load(&mut self, selected: &[usize]) -> Result<()> {
        let missing: Vec<String> = selected
            .iter()
            .filter(|&&i| self.batch[i].message.is_none())
            .map(|&i| self.batch[i].native_id.clone())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let l = &self.b.layout;
        let sql = format!(
            "SELECT {} FROM {} WHERE {} = ANY($1::text[]::{}[])",
            l.select_list(),
            l.table,
            l.cols["id"].sql,
            l.id_type()
        );
        let tx = self.tx.as_mut().expect("a claimed batch");
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(&missing)
            .fetch_all(&mut **tx)
            .await
            .map_err(|e| pg_err(&l.display, e))?;
        let mut by_id = HashMap::new();
        for r in &rows {
            let m = row_to_message(r, l, self.b.id.as_ref()).map_err(|e| pg_err(&l.display, e))?;
            by_id.insert(m.native_id.clone(), m);
        }
        for &i in selected {
            if self.batch[i].message.is_none() {
                self.batch[i].message = by_id.remove(&self.batch[i].native_id);
            }
        }
        Ok(())
    }
}

/// Is every value of the source payload storable in the target payload column as is?
fn payload_compatible(src: PayloadKind, tgt: PayloadKind) -> bool {
    use PayloadKind::*;
    src == tgt
        || tgt == Bytea
        || (tgt == Text && matches!(src, Jsonb | Json))
        || (matches!(tgt, Jsonb | Json) && matches!(src, Jsonb | Json))
}

impl PgMoveSession<'_> {
    /// The unfiltered move into a table of this database: a key range where the target
    /// holds every row as is, else claimed rows (`SKIP LOCKED`), else the rows one by one.
    async fn next_local(
        &mut self,
        target: &Address,
        t: &PgAddress,
        n: usize,
    ) -> Result<Option<LocalBatch>> {
        let Some(end) = self.end.clone() else {
            return Ok(None);
        };
        let table = t.table().expect("a table target").to_string();
        let pool = self.b.pool.clone();
        let tl = self.target_layout(&table, t.queue.is_some(), &pool).await?;
        let src = self.b.layout.clone();
        // Whole-range statements copy ids unseen: only into a column that stores every id as
        // it is (a varchar(8) or uuid column is checked id by id, below).
        let holds_everything = write::stores_text_as_is(&tl.cols["message_id"].ty)
            && payload_compatible(src.payload(), tl.payload())
            && (src.col("payload_bytes").is_none()
                || tl.payload() == PayloadKind::Bytea
                || (tl.col("payload_bytes").is_some() && !tl.cols["payload"].not_null))
            && (src.col("headers").is_none() || tl.col("headers").is_some())
            && !(tl.col("queue").is_some_and(|c| c.not_null)
                && t.queue.is_none()
                && src.col("queue").is_none());
        if holds_everything {
            if self.conflicts.is_none() {
                let (cols, _) = copy_columns(&src, &tl, t.queue.is_some(), false);
                let names: Vec<String> = cols
                    .iter()
                    .map(|c| c.trim_matches('"').replace("\"\"", "\""))
                    .collect();
                let can: bool = sqlx::query_scalar(
                    "SELECT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = $1::int8::oid AND i.indisunique
                       AND (i.indexprs IS NOT NULL OR EXISTS (SELECT 1 FROM unnest(i.indkey::int2[]) k
                             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k WHERE a.attname = ANY($2))))",
                )
                .bind(tl.oid as i64)
                .bind(&names)
                .fetch_one(&self.b.pool)
                .await
                .map_err(|e| pg_err(&tl.display, e))?;
                self.conflicts = Some(can);
            }
            let mut undecided = false;
            if self.range_moves {
                match self
                    .range_move(&src, &tl, t.queue.as_deref(), &end, n)
                    .await?
                {
                    RangeMove::Moved(b) => return Ok(Some(b)),
                    RangeMove::Done => return Ok(None),
                    RangeMove::Undecided => undecided = true,
                    RangeMove::Locked => {
                        self.lock_timeouts += 1;
                        if self.lock_timeouts >= MAX_LOCK_TIMEOUTS {
                            tracing::debug!(
                                "range moves met held rows {MAX_LOCK_TIMEOUTS} times; claiming with SKIP LOCKED from now on"
                            );
                            self.range_moves = false;
                        }
                    }
                }
            }
            if !undecided
                && let Some(b) = self
                    .claimed_move(&src, &tl, t.queue.as_deref(), &end, n)
                    .await?
            {
                return Ok(b);
            }
        }
        let Some(Claim {
            messages: batch,
            ticket,
        }) = self.next_batch(n).await?
        else {
            return Ok(None);
        };
        let all: Vec<usize> = (0..batch.len()).collect();
        let outcomes = self.move_locally(ticket, target, &all).await?;
        let mut out = LocalBatch {
            examined: batch.len() as u64,
            ..LocalBatch::default()
        };
        for (m, o) in batch.iter().zip(outcomes) {
            if o == SendOutcome::Sent {
                out.moved += 1;
            } else {
                out.others.push((m.id.clone(), o));
            }
        }
        Ok(Some(out))
    }
}

#[async_trait]
impl MoveSession for PgMoveSession<'_> {
    fn local(&mut self) -> Option<&mut dyn LocalMoves> {
        Some(self)
    }

    async fn finish(&mut self) -> Result<()> {
        self.left = self.passed_and_left().await?;
        Ok(())
    }

    fn unaccounted(&self) -> Vec<Unaccounted> {
        held_rows(self.left)
    }

    async fn next_batch(&mut self, n: usize) -> Result<Option<Claim>> {
        assert!(self.tx.is_none(), "settle the last batch first");
        let Some(end) = self.end.clone() else {
            return Ok(None);
        };
        let l = &self.b.layout;
        let id = l.key();
        let flags = format!(
            "{} AS is_binary, {} AS has_headers",
            l.col("payload_bytes")
                .map_or("false".into(), |c| format!("({} IS NOT NULL)", c.sql)),
            l.col("headers").map_or("false".into(), |c| format!(
                "({0} IS NOT NULL AND {0}::jsonb <> '{{}}'::jsonb)",
                c.sql
            )),
        );
        let list = if self.opts.need_content {
            format!("{}, {flags}", l.select_list())
        } else {
            format!(
                "{id}::text AS id, {}::text AS message_id, {flags}",
                l.cols["message_id"].sql
            )
        };
        let sql = format!(
            "SELECT {list} FROM {} WHERE ($1::text IS NULL OR {id} > $1::text::{ty}) AND {id} <= $2::text::{ty}{} ORDER BY {id} LIMIT $4 FOR UPDATE SKIP LOCKED",
            l.table,
            self.b.queue_clause(3),
            ty = l.id_type(),
        );
        let mut tx = self.b.pool.begin().await.map_err(|e| self.err(e))?;
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(self.cursor.as_deref())
            .bind(&end)
            .bind(self.b.pg.queue.as_deref())
            .bind(n as i64)
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        // What the claim passed over (held by another transaction): every row up to the last
        // one claimed, or up to the end after a short claim, which then ends the walk.
        let upto = match rows.last() {
            Some(r) if rows.len() >= n => r.try_get::<String, _>("id").map_err(|e| self.err(e))?,
            _ => end.clone(),
        };
        let claimed = rows
            .iter()
            .map(|r| r.try_get::<String, _>("id"))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        let passed = self.unclaimed_in_range(&mut tx, &upto, &claimed).await?;
        self.passed.extend(passed);
        if rows.is_empty() {
            tx.commit().await.map_err(|e| self.err(e))?;
            self.cursor = Some(upto);
            return Ok(None);
        }
        let mut batch = Vec::with_capacity(rows.len());
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let native_id: String = r.try_get("id").map_err(|e| self.err(e))?;
            let message_id: Option<String> = r.try_get("message_id").map_err(|e| self.err(e))?;
            let message = if self.opts.need_content {
                Some(row_to_message(r, l, self.b.id.as_ref()).map_err(|e| self.err(e))?)
            } else {
                None
            };
            let shown = message.clone().unwrap_or_else(|| Message {
                id: message_id
                    .clone()
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(|| native_id.clone()),
                native_id: native_id.clone(),
                ..Message::default()
            });
            out.push(shown);
            batch.push(Claimed {
                message_id: message_id
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(|| native_id.clone()),
                native_id,
                binary: r.try_get("is_binary").unwrap_or(false),
                has_headers: r.try_get("has_headers").unwrap_or(false),
                message,
            });
        }
        self.cursor = Some(upto);
        self.batch = batch;
        self.tx = Some(tx);
        Ok(Some(Claim::new(out)))
    }

    async fn settle(
        &mut self,
        _ticket: Ticket,
        accepted: &[usize],
        _failed: &[usize],
    ) -> Result<()> {
        let mut tx = self.tx.take().expect("a claimed batch");
        if !accepted.is_empty() {
            let l = &self.b.layout;
            let ids: Vec<&str> = accepted
                .iter()
                .map(|&i| self.batch[i].native_id.as_str())
                .collect();
            let sql = format!(
                "DELETE FROM {} WHERE {} = ANY($1::text[]::{}[])",
                l.table,
                l.cols["id"].sql,
                l.id_type()
            );
            sqlx::query(AssertSqlSafe(sql))
                .bind(&ids)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        self.batch.clear();
        Ok(())
    }
}

#[async_trait]
impl LocalMoves for PgMoveSession<'_> {
    async fn move_next_locally(&mut self, target: &Address, n: usize) -> Result<LocalNext> {
        // Only where no row can need a per-row decision: no configured id, and a target that
        // holds every source row as is.
        let (Address::Postgres(t), None) = (target, &self.b.id) else {
            return Ok(LocalNext::ClaimFirst);
        };
        Ok(match self.next_local(target, t, n).await? {
            Some(b) => LocalNext::Moved(b),
            None => LocalNext::Exhausted,
        })
    }

    async fn move_locally(
        &mut self,
        ticket: Ticket,
        target: &Address,
        selected: &[usize],
    ) -> Result<Vec<SendOutcome>> {
        self.move_claimed_locally(ticket, target, selected).await
    }
}

/// What a run reports of the rows its claims (`FOR UPDATE SKIP LOCKED`) passed over because
/// another transaction held them, and that are still there at its end: the run ends with
/// exit 1 rather than a clean finish.
pub(super) fn held_rows(left: u64) -> Vec<Unaccounted> {
    if left == 0 {
        return Vec::new();
    }
    vec![Unaccounted {
        count: left,
        approximate: false,
        reason: "not examined: another transaction held them locked when the run reached them (a worker, a consumer or an open session; pg_stat_activity shows who), and a claim skips held rows rather than wait; they are still in the dead-letter table, untouched: re-run once that transaction has ended".into(),
        until: None,
    }]
}
