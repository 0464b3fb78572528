//! Redrive from a dead-letter table.
//!
//! * Each batch is one transaction: `SELECT … FOR UPDATE SKIP LOCKED` claims rows (running or
//!   locked rows are skipped, never waited on), and the rows are deleted only in the same
//!   transaction that inserts their copies (same database) or after the target accepted them
//!   (any other target). A crash at any instant leaves each row in the table, in the target,
//!   or — only for foreign targets — in both, with the same stable id.
//! * The batches walk the table by key up to the largest key present at the start, so a run
//!   terminates and never re-reads a row it skipped.
//! * A session-level advisory lock keeps two operators from redriving one table at once.
//! * Where every row of a batch fits the target as is, the batch is moved by key range: the
//!   next `n` keys are looked up, and one statement deletes that range and inserts the copies.
//!   A range delete cannot skip locked rows, so it runs with a short `lock_timeout`: if it
//!   meets a row that another transaction holds, the batch is rolled back and moved with
//!   `FOR UPDATE SKIP LOCKED` instead (and after [`MAX_LOCK_TIMEOUTS`] such batches, every
//!   later one is). The range move writes each row once; the claim writes a row lock first,
//!   which made it cost about twice as much (`docs/benchmarks.md`).

use std::collections::HashMap;

use async_trait::async_trait;
use sqlx::postgres::PgConnection;
use sqlx::{AssertSqlSafe, Connection, Postgres, Row, Transaction};

use super::layout::{Layout, PayloadKind, QUEUE_COLUMNS};
use super::{PgBackend, pg_err, row_to_message, write};
use crate::address::Address;
use crate::backend::{LocalBatch, MoveOptions, MoveSession, SendOutcome};
use crate::error::{Error, Result};
use crate::message::Message;

/// How long a range move waits for a row lock before it gives the batch to `SKIP LOCKED`.
const RANGE_LOCK_TIMEOUT_MS: u32 = 50;
/// Batches that met a held row before range moves are given up for the rest of the run.
const MAX_LOCK_TIMEOUTS: u32 = 3;

/// What became of a batch tried as a range move.
enum RangeMove {
    /// Moved and committed.
    Moved(LocalBatch),
    /// Nothing left up to the end key.
    Done,
    /// A row of the range is held by another transaction: rolled back.
    Locked,
    /// Not every copy went in (a unique conflict, a duplicate id), or the range held more
    /// rows than asked for: rolled back, for the careful path to decide row by row.
    Undecided,
}

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

    /// The next batch as a range move, on the session's own connection (see the module doc).
    async fn range_move(
        &mut self,
        src: &Layout,
        tl: &Layout,
        queue: Option<&str>,
        end: &str,
        n: usize,
    ) -> Result<RangeMove> {
        loop {
            let first = self.cursor.is_none();
            let mut tx = self.conn.begin().await.map_err(|e| self.b.err(e))?;
            let bound = range_bound_sql(src, first, &self.b.queue_clause(4));
            let hi: Option<String> = match sqlx::query_scalar(AssertSqlSafe(bound))
                .bind(self.cursor.as_deref())
                .bind(end)
                .bind(n as i64)
                .bind(self.b.pg.queue.as_deref())
                .fetch_one(&mut *tx)
                .await
            {
                Ok(hi) => hi,
                Err(e) if is_lock_timeout(&e) => {
                    tx.rollback().await.map_err(|e| self.b.err(e))?;
                    return Ok(RangeMove::Locked);
                }
                Err(e) => return Err(self.b.err(e)),
            };
            let Some(hi) = hi else {
                tx.commit().await.map_err(|e| self.b.err(e))?;
                return Ok(RangeMove::Done);
            };
            let sql = range_move_sql(
                src,
                tl,
                queue.is_some(),
                &self.b.queue_clause(4),
                self.conflicts == Some(true),
                first,
            );
            let row = match sqlx::query(AssertSqlSafe(sql))
                .bind(self.cursor.as_deref())
                .bind(queue)
                .bind(&hi)
                .bind(self.b.pg.queue.as_deref())
                .fetch_one(&mut *tx)
                .await
            {
                Ok(row) => row,
                Err(e) if is_lock_timeout(&e) => {
                    tx.rollback().await.map_err(|e| self.b.err(e))?;
                    tracing::debug!(after = ?self.cursor, "a row of the range is held by another transaction; this batch is claimed with SKIP LOCKED");
                    return Ok(RangeMove::Locked);
                }
                Err(e) => return Err(pg_err(&tl.display, e)),
            };
            let moved: i64 = row.try_get("moved").map_err(|e| self.b.err(e))?;
            let inserted: i64 = row.try_get("inserted").map_err(|e| self.b.err(e))?;
            if moved != inserted || moved as usize > n {
                tx.rollback().await.map_err(|e| self.b.err(e))?;
                return Ok(RangeMove::Undecided);
            }
            tx.commit().await.map_err(|e| self.b.err(e))?;
            self.cursor = Some(hi);
            if moved > 0 {
                return Ok(RangeMove::Moved(LocalBatch {
                    examined: moved as u64,
                    moved: moved as u64,
                    others: Vec::new(),
                }));
            }
            // Every row of the range went away meanwhile (deleted by someone else): go on.
        }
    }

    /// The next batch claimed `FOR UPDATE SKIP LOCKED` and moved in one statement. `None` when
    /// not every copy went in (rolled back, for the careful path); `Some(None)` at the end.
    async fn claimed_move(
        &mut self,
        src: &Layout,
        tl: &Layout,
        queue: Option<&str>,
        end: &str,
        n: usize,
    ) -> Result<Option<Option<LocalBatch>>> {
        let sql = batch_move_sql(
            src,
            tl,
            queue.is_some(),
            &self.b.queue_clause(5),
            self.conflicts == Some(true),
        );
        let mut tx = self.b.pool.begin().await.map_err(|e| self.err(e))?;
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(self.cursor.as_deref())
            .bind(queue)
            .bind(end)
            .bind(n as i64)
            .bind(self.b.pg.queue.as_deref())
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| pg_err(&tl.display, e))?;
        let moved: i64 = row.try_get("moved").map_err(|e| self.err(e))?;
        let inserted: i64 = row.try_get("inserted").map_err(|e| self.err(e))?;
        if moved == 0 {
            tx.commit().await.map_err(|e| self.err(e))?;
            return Ok(Some(None));
        }
        if moved != inserted {
            // Something did not go in: undo, and decide row by row for this batch.
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(None);
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        self.cursor = row.try_get("last").map_err(|e| self.err(e))?;
        Ok(Some(Some(LocalBatch {
            examined: moved as u64,
            moved: moved as u64,
            others: Vec::new(),
        })))
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

#[async_trait]
impl MoveSession for PgMoveSession<'_> {
    async fn next_batch(&mut self, n: usize) -> Result<Option<Vec<Message>>> {
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
        if rows.is_empty() {
            tx.commit().await.map_err(|e| self.err(e))?;
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
        self.cursor = batch.last().map(|c| c.native_id.clone());
        self.batch = batch;
        self.tx = Some(tx);
        Ok(Some(out))
    }

    async fn settle(&mut self, accepted: &[usize], _failed: &[usize]) -> Result<()> {
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

    fn can_move_batches(&self, target: &Address) -> bool {
        // Only where no row can need a per-row decision: no configured id, and a target that
        // holds every source row as is.
        matches!(target, Address::Postgres(_)) && self.b.id.is_none()
    }

    async fn move_next_locally(
        &mut self,
        target: &Address,
        n: usize,
    ) -> Result<Option<LocalBatch>> {
        let Address::Postgres(t) = target else {
            unreachable!("checked by can_move_batches")
        };
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
                let (cols, _) = copy_columns(&src, &tl, t.queue.is_some());
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
        let Some(batch) = self.next_batch(n).await? else {
            return Ok(None);
        };
        let all: Vec<usize> = (0..batch.len()).collect();
        let outcomes = self.move_locally(target, &all).await?;
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

    async fn move_locally(
        &mut self,
        target: &Address,
        selected: &[usize],
    ) -> Result<Vec<SendOutcome>> {
        let Address::Postgres(t) = target else {
            unreachable!("checked by can_move_locally")
        };
        let table = t.table().expect("checked by can_move_locally").to_string();
        let pool = self.b.pool.clone();
        let tl = self.target_layout(&table, t.queue.is_some(), &pool).await?;
        let src = self.b.layout.clone();
        let mut outcomes: Vec<Option<SendOutcome>> = vec![None; selected.len()];

        // The configured stable-id location (id = "json:/…") can only be applied row by row.
        let fast = self.b.id.is_none()
            && payload_compatible(src.payload(), tl.payload())
            && !(tl.col("queue").is_some_and(|c| c.not_null)
                && t.queue.is_none()
                && src.col("queue").is_none());
        if !fast {
            // Types that need checking row by row: build the copies here, still inside this
            // batch's transaction, so the move stays atomic.
            self.load(selected).await?;
            let msgs: Vec<Message> = selected
                .iter()
                .map(|&i| self.batch[i].message.clone().unwrap_or_default())
                .collect();
            let tx = self.tx.as_mut().expect("a claimed batch");
            let res = write::insert_messages(tx, &tl, t.queue.as_deref(), &msgs)
                .await
                .map_err(|e| pg_err(&tl.display, e))?;
            let accepted: Vec<usize> = selected
                .iter()
                .zip(&res)
                .filter(|(_, o)| **o == SendOutcome::Sent)
                .map(|(&i, _)| i)
                .collect();
            self.settle(&accepted, &[]).await?;
            return Ok(res);
        }

        // Rows the target cannot hold without loss stay where they are.
        let mut movable: Vec<(usize, usize)> = Vec::new(); // (position in selected, batch index)
        for (pos, &i) in selected.iter().enumerate() {
            let c = &self.batch[i];
            if c.binary
                && tl.payload() != PayloadKind::Bytea
                && (tl.col("payload_bytes").is_none() || tl.cols["payload"].not_null)
            {
                outcomes[pos] = Some(SendOutcome::Rejected {
                    reason: format!(
                        "the body is binary and {} cannot hold it (no payload_bytes column, or its payload column is NOT NULL)",
                        tl.display
                    ),
                });
            } else if c.has_headers && tl.col("headers").is_none() {
                outcomes[pos] = Some(SendOutcome::Rejected {
                    reason: format!(
                        "{} has no headers column; the row's headers would be lost",
                        tl.display
                    ),
                });
            } else {
                movable.push((pos, i));
            }
        }

        // Ids the target column would not store as they are stay where they are.
        let ids: Vec<&str> = movable
            .iter()
            .map(|&(_, i)| self.batch[i].message_id.as_str())
            .collect();
        let tx = self.tx.as_mut().expect("a claimed batch");
        let altered = write::ids_that_change(tx, &tl.display, &tl.cols["message_id"].ty, &ids)
            .await
            .map_err(|e| pg_err(&tl.display, e))?;
        if !altered.is_empty() {
            movable.retain(|&(pos, i)| match altered.get(&self.batch[i].message_id) {
                Some(reason) => {
                    outcomes[pos] = Some(SendOutcome::Rejected {
                        reason: reason.clone(),
                    });
                    false
                }
                None => true,
            });
        }

        // Rounds of distinct message ids, so that "inserted" maps back to exactly one row.
        let mut rounds: Vec<Vec<(usize, usize)>> = Vec::new();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for &(pos, i) in &movable {
            let k = seen.entry(self.batch[i].message_id.as_str()).or_default();
            if rounds.len() <= *k {
                rounds.push(Vec::new());
            }
            rounds[*k].push((pos, i));
            *k += 1;
        }

        let sql = local_move_sql(&src, &tl, t.queue.is_some());
        let tx = self.tx.as_mut().expect("a claimed batch");
        for round in rounds {
            let ids: Vec<&str> = round
                .iter()
                .map(|&(_, i)| self.batch[i].native_id.as_str())
                .collect();
            let moved: Vec<String> = sqlx::query_scalar(AssertSqlSafe(sql.clone()))
                .bind(&ids)
                .bind(t.queue.as_deref())
                .fetch_all(&mut **tx)
                .await
                .map_err(|e| pg_err(&tl.display, e))?;
            let moved: std::collections::HashSet<String> = moved.into_iter().collect();
            for (pos, i) in round {
                outcomes[pos] = Some(if moved.contains(&self.batch[i].native_id) {
                    SendOutcome::Sent
                } else {
                    SendOutcome::Conflict {
                        reason: format!(
                            "{} already holds a row with a unique key of this message (an active twin); left in the dead-letter table",
                            tl.display
                        ),
                    }
                });
            }
        }
        let tx = self.tx.take().expect("a claimed batch");
        tx.commit().await.map_err(|e| self.err(e))?;
        self.batch.clear();
        Ok(outcomes
            .into_iter()
            .map(|o| o.expect("an outcome per selected row"))
            .collect())
    }
}

/// The target columns a local move fills and the expressions over the source row that fill
/// them (`$2` is the queue override).
fn copy_columns(src: &Layout, tgt: &Layout, queue_override: bool) -> (Vec<String>, Vec<String>) {
    let sid = &src.cols["id"].sql;
    let smid = &src.cols["message_id"].sql;
    let mut cols = vec![
        tgt.cols["message_id"].sql.clone(),
        tgt.cols["payload"].sql.clone(),
    ];
    let sp = &src.cols["payload"].sql;
    let payload = match (src.payload(), tgt.payload()) {
        (_, PayloadKind::Bytea) => src.body_expr(),
        (PayloadKind::Jsonb | PayloadKind::Json, PayloadKind::Text) => format!("{sp}::text"),
        (_, PayloadKind::Jsonb) => format!("{sp}::jsonb"),
        (_, PayloadKind::Json) => format!("{sp}::json"),
        _ => sp.clone(),
    };
    // The stable id: the producer's, else the row's own key (as everywhere else).
    let mut vals = vec![
        // An empty message_id is no id (as everywhere dlqctl reads one): the key stands in.
        format!(
            "COALESCE(NULLIF({smid}::text, ''), {sid}::text)::{}",
            tgt.cols["message_id"].ty
        ),
        payload,
    ];
    if let Some(c) = tgt.col("payload_bytes")
        && tgt.payload() != PayloadKind::Bytea
    {
        cols.push(c.sql.clone());
        vals.push(
            src.col("payload_bytes")
                .map_or("NULL::bytea".into(), |s| s.sql.clone()),
        );
    }
    if let Some(c) = tgt.col("headers") {
        cols.push(c.sql.clone());
        vals.push(match src.col("headers") {
            Some(s) => format!("COALESCE({}::jsonb, '{{}}'::jsonb)::{}", s.sql, c.ty),
            None => format!("'{{}}'::{}", c.ty),
        });
    }
    if let Some(c) = tgt.col("queue") {
        let v = match (queue_override, src.col("queue")) {
            (true, _) => Some("$2::text".to_string()),
            (false, Some(s)) => Some(format!("{}::text", s.sql)),
            (false, None) => None,
        };
        if let Some(v) = v {
            cols.push(c.sql.clone());
            vals.push(format!("{v}::{}", c.ty));
        }
    }
    if let (Some(c), Some(s)) = (tgt.col("group_key"), src.col("group_key")) {
        cols.push(c.sql.clone());
        vals.push(s.sql.clone());
    }
    if let Some(c) = tgt.col("enqueued_at") {
        cols.push(c.sql.clone());
        vals.push("now()".into());
    }
    (cols, vals)
}

/// One statement: copy the listed rows into the queue table and delete exactly those whose
/// copy went in. `$1` the row keys (text), `$2` the queue name override.
fn local_move_sql(src: &Layout, tgt: &Layout, queue_override: bool) -> String {
    let sid = &src.cols["id"].sql;
    let smid = &src.cols["message_id"].sql;
    let (cols, vals) = copy_columns(src, tgt, queue_override);
    let queue_ref = if queue_override {
        ""
    } else {
        " AND $2::text IS NULL"
    };
    format!(
        "WITH src AS (SELECT * FROM {st} WHERE {sid} = ANY($1::text[]::{ty}[]){queue_ref}),
              ins AS (INSERT INTO {tt} ({cols}) SELECT {vals} FROM src ORDER BY {sid} ON CONFLICT DO NOTHING RETURNING {tmid}::text AS mid)
         DELETE FROM {st} d WHERE d.{sid} = ANY($1::text[]::{ty}[]) AND COALESCE(NULLIF(d.{smid}::text, ''), d.{sid}::text) IN (SELECT mid FROM ins) RETURNING d.{sid}::text",
        st = src.table,
        tt = tgt.table,
        cols = cols.join(", "),
        vals = vals.join(", "),
        tmid = tgt.cols["message_id"].sql,
        ty = src.id_type(),
    )
}

/// The optimistic claim-and-move of a whole batch in one statement: delete the next rows by
/// key (`FOR UPDATE SKIP LOCKED`), insert their copies, and report how many of each. When the
/// counts differ (a unique conflict, a duplicate id in the batch) the caller rolls the
/// transaction back and takes the careful path for that batch. `$1` cursor, `$2` queue
/// override, `$3` end key, `$4` limit, `$5` the source's queue filter.
fn batch_move_sql(
    src: &Layout,
    tgt: &Layout,
    queue_override: bool,
    queue_clause: &str,
    can_conflict: bool,
) -> String {
    let sid = &src.cols["id"].sql;
    let (queue_ref, insert) = copy_moved_sql(src, tgt, queue_override, can_conflict);
    format!(
        "WITH moved AS (
            DELETE FROM {st} WHERE {sid} IN (
                SELECT {sid} FROM {st} WHERE ($1::text IS NULL OR {sid} > $1::text::{ty}) AND {sid} <= $3::text::{ty}{queue_clause}
                 ORDER BY {sid} LIMIT $4 FOR UPDATE SKIP LOCKED){queue_ref}
            RETURNING *),
         {insert}
         SELECT (SELECT {sid}::text FROM moved ORDER BY moved.{sid} DESC LIMIT 1) AS last,
                (SELECT count(*) FROM moved)::int8 AS moved, (SELECT count(*) FROM ins)::int8 AS inserted",
        st = src.table,
        ty = src.id_type(),
    )
}

/// What the two one-statement moves share: the condition that references `$2` when the
/// queue is not overridden, and the `ins` CTE that copies the `moved` rows into the target.
/// Without a unique index that a copy could hit, a plain INSERT: speculative insertion
/// (ON CONFLICT) costs about as much again per row.
fn copy_moved_sql(
    src: &Layout,
    tgt: &Layout,
    queue_override: bool,
    can_conflict: bool,
) -> (&'static str, String) {
    let (cols, vals) = copy_columns(src, tgt, queue_override);
    let conflict = if can_conflict {
        format!(" ORDER BY {} ON CONFLICT DO NOTHING", src.cols["id"].sql)
    } else {
        String::new()
    };
    let queue_ref = if queue_override {
        ""
    } else {
        " AND $2::text IS NULL"
    };
    let insert = format!(
        "ins AS (INSERT INTO {} ({}) SELECT {} FROM moved{conflict} RETURNING 1)",
        tgt.table,
        cols.join(", "),
        vals.join(", "),
    );
    (queue_ref, insert)
}

/// The lower bound of a range: after the cursor `$1`, or (first batch) none.
fn after_cursor_sql(src: &Layout, first: bool) -> String {
    if first {
        "$1::text IS NULL".to_string()
    } else {
        format!("{} > $1::text::{}", src.cols["id"].sql, src.id_type())
    }
}

/// Whether a statement gave up waiting for a lock (`lock_timeout`, SQLSTATE 55P03).
fn is_lock_timeout(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|c| c == "55P03")
}

/// The last of the next `$3` keys after the cursor `$1` (none on the first batch), up to the
/// end key `$2`: the upper bound of a range move. `$4` the source's queue filter.
fn range_bound_sql(src: &Layout, first: bool, queue_clause: &str) -> String {
    let sid = &src.cols["id"].sql;
    format!(
        "SELECT max(k)::text FROM (SELECT {sid} AS k FROM {st} WHERE {after} AND {sid} <= $2::text::{ty}{queue_clause} ORDER BY {sid} LIMIT $3) b",
        st = src.table,
        after = after_cursor_sql(src, first),
        ty = src.id_type(),
    )
}

/// A range move: delete the rows after the cursor `$1` (none on the first batch) up to `$3`,
/// insert their copies, and count both. Both bounds are parameters, so that the planner sees a
/// short range (an index range scan) in custom and generic plans alike. `$2` the queue
/// override, `$4` the source's queue filter.
fn range_move_sql(
    src: &Layout,
    tgt: &Layout,
    queue_override: bool,
    queue_clause: &str,
    can_conflict: bool,
    first: bool,
) -> String {
    let sid = &src.cols["id"].sql;
    let (queue_ref, insert) = copy_moved_sql(src, tgt, queue_override, can_conflict);
    format!(
        "WITH moved AS (
            DELETE FROM {st} WHERE {after} AND {sid} <= $3::text::{ty}{queue_clause}{queue_ref} RETURNING *),
         {insert}
         SELECT (SELECT count(*) FROM moved)::int8 AS moved, (SELECT count(*) FROM ins)::int8 AS inserted",
        st = src.table,
        after = after_cursor_sql(src, first),
        ty = src.id_type(),
    )
}
