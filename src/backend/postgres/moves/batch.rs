//! Whole batches moved in one statement, without a row-by-row decision: the range move (by
//! key range, on the session's own connection) and the claimed move (`FOR UPDATE SKIP
//! LOCKED`), and the SQL they run.

use sqlx::postgres::PgConnection;
use sqlx::{AssertSqlSafe, Row};

use super::local::copy_columns;
use super::{PgMoveSession, pg_err_moving};
use crate::backend::LocalBatch;
use crate::backend::postgres::layout::Layout;
use crate::backend::postgres::refuses_a_row;
use crate::error::Result;

/// What became of a batch tried as a range move.
pub(super) enum RangeMove {
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

impl PgMoveSession<'_> {
    /// The next batch as a range move, on the session's own connection (see the module doc):
    /// one statement, in a transaction of its own (no `BEGIN`, no `COMMIT`: one round trip a
    /// batch). The statement finds the range's upper bound, deletes the range, inserts the
    /// copies, and fails (rolling itself back) unless every deleted row's copy went in.
    pub(super) async fn range_move(
        &mut self,
        src: &Layout,
        tl: &Layout,
        queue: Option<&str>,
        end: &str,
        n: usize,
    ) -> Result<RangeMove> {
        loop {
            // The last range reached the end key: nothing is left up to it.
            if self.cursor.as_deref() == Some(end) {
                return Ok(RangeMove::Done);
            }
            let sql = range_move_sql(
                src,
                tl,
                queue.is_some(),
                &self.b.queue_clause(5),
                self.conflicts == Some(true),
                self.cursor.is_none(),
                self.opts.count_redrive,
            );
            let row = match sqlx::query(AssertSqlSafe(sql))
                .bind(self.cursor.as_deref())
                .bind(queue)
                .bind(end)
                .bind(n as i64)
                .bind(self.b.pg.queue.as_deref())
                .fetch_one(&mut self.conn)
                .await
            {
                Ok(row) => row,
                Err(e) if has_sqlstate(&e, LOCK_TIMEOUT) => {
                    tracing::debug!(after = ?self.cursor, "a row of the range is held by another transaction; this batch is claimed with SKIP LOCKED");
                    self.rolled_back().await?;
                    return Ok(RangeMove::Locked);
                }
                // The guard, or a row the target refuses (a CHECK, a value it cannot hold).
                Err(e) if has_sqlstate(&e, UNDECIDED) || refuses_a_row(&e) => {
                    tracing::debug!(after = ?self.cursor, error = %e, "not every copy of the range went in; this batch is decided row by row");
                    self.rolled_back().await?;
                    return Ok(RangeMove::Undecided);
                }
                Err(e) => return Err(pg_err_moving(&self.b.layout.display, &tl.display, e)),
            };
            let moved: i64 = row.try_get("moved").map_err(|e| self.b.err(e))?;
            let hi: String = row.try_get("hi").map_err(|e| self.b.err(e))?;
            tracing::debug!(after = ?self.cursor, %hi, moved, "range move");
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
    pub(super) async fn claimed_move(
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
            self.opts.count_redrive,
        );
        let mut tx = self.b.pool.begin().await.map_err(|e| self.err(e))?;
        let row = match sqlx::query(AssertSqlSafe(sql))
            .bind(self.cursor.as_deref())
            .bind(queue)
            .bind(end)
            .bind(n as i64)
            .bind(self.b.pg.queue.as_deref())
            .fetch_one(&mut *tx)
            .await
        {
            Ok(row) => row,
            // A row the target refuses: undo, and decide row by row for this batch.
            Err(e) if refuses_a_row(&e) => {
                tracing::debug!(error = %e, "a copy of the claimed batch was refused; this batch is decided row by row");
                tx.rollback().await.map_err(|e| self.err(e))?;
                return Ok(None);
            }
            Err(e) => return Err(pg_err_moving(&self.b.layout.display, &tl.display, e)),
        };
        let moved: i64 = row.try_get("moved").map_err(|e| self.err(e))?;
        let inserted: i64 = row.try_get("inserted").map_err(|e| self.err(e))?;
        tracing::debug!(after = ?self.cursor, moved, inserted, "claimed move");
        if moved != inserted {
            // Something did not go in: undo, and decide row by row for this batch.
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(None);
        }
        let last: Option<String> = row.try_get("last").map_err(|e| self.err(e))?;
        // What the claim passed over is still in the table (this transaction's own deletes
        // are not): every row up to the last one moved, or up to the end after a short claim.
        let upto = match last {
            Some(last) if moved as usize >= n => last,
            _ => end.to_string(),
        };
        let passed = self.unclaimed_in_range(&mut tx, &upto, &[]).await?;
        tx.commit().await.map_err(|e| self.err(e))?;
        self.passed.extend(passed);
        self.cursor = Some(upto);
        if moved == 0 {
            return Ok(Some(None));
        }
        Ok(Some(Some(LocalBatch {
            examined: moved as u64,
            moved: moved as u64,
            others: Vec::new(),
        })))
    }
}

impl PgMoveSession<'_> {
    /// After a statement on the session's connection failed: wait until the server has rolled
    /// it back. The error reaches the client before the server ends the transaction, so until
    /// the connection is ready again another connection can still find the statement's rows
    /// locked, and a claim `FOR UPDATE SKIP LOCKED` would pass over them.
    async fn rolled_back(&mut self) -> Result<()> {
        use sqlx::Connection;
        self.conn.ping().await.map_err(|e| self.err(e))
    }

    /// The keys of the rows after the cursor up to `upto` that the table holds (in `conn`'s
    /// transaction) other than `claimed`: what a claim `FOR UPDATE SKIP LOCKED` passed over,
    /// held by another transaction.
    pub(super) async fn unclaimed_in_range(
        &self,
        conn: &mut PgConnection,
        upto: &str,
        claimed: &[String],
    ) -> Result<Vec<String>> {
        let l = &self.b.layout;
        let (id, ty) = (&l.cols["id"].sql, l.id_type());
        let sql = format!(
            "SELECT {id}::text FROM {} WHERE {} AND {id} <= $2::text::{ty}{} AND {id} <> ALL($4::text[]::{ty}[])",
            l.table,
            after_cursor_sql(l, self.cursor.is_none()),
            self.b.queue_clause(3),
        );
        sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(self.cursor.as_deref())
            .bind(upto)
            .bind(self.b.pg.queue.as_deref())
            .bind(claimed)
            .fetch_all(conn)
            .await
            .map_err(|e| self.err(e))
    }

    /// At the end: which of the rows the claims passed over are still in the table (the
    /// others went meanwhile: deleted by the transaction that held them).
    pub(super) async fn passed_and_left(&self) -> Result<u64> {
        if self.passed.is_empty() {
            return Ok(0);
        }
        let l = &self.b.layout;
        let sql = format!(
            "SELECT count(*) FROM {} WHERE {} = ANY($1::text[]::{}[])",
            l.table,
            l.cols["id"].sql,
            l.id_type()
        );
        let n: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(&self.passed)
            .fetch_one(&self.b.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(n as u64)
    }
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
    count: bool,
) -> String {
    let sid = &src.cols["id"].sql;
    let (queue_ref, insert) = copy_moved_sql(src, tgt, queue_override, can_conflict, count);
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
    count: bool,
) -> (&'static str, String) {
    let (cols, vals) = copy_columns(src, tgt, queue_override, count);
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

/// SQLSTATE of a statement that gave up waiting for a lock (`lock_timeout`).
const LOCK_TIMEOUT: &str = "55P03";
/// SQLSTATE of a range move whose guard found that not every deleted row's copy went in
/// (`division_by_zero`, raised on purpose: see [`range_move_sql`]).
const UNDECIDED: &str = "22012";

/// Whether a database error has this SQLSTATE.
fn has_sqlstate(e: &sqlx::Error, code: &str) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|c| c == code)
}

/// A range move in one statement: the range's upper bound `hi` is the `$4`th key after the
/// cursor `$1` (none on the first batch), or the end key `$3` when fewer are left; the rows
/// after the cursor up to `hi` are deleted and their copies inserted. Both bounds reach the
/// `DELETE` as parameters (the cursor and an init plan's value), so that the planner sees a
/// short range (an index range scan) in custom and generic plans alike. `$2` the queue
/// override, `$5` the source's queue filter.
///
/// The statement is its own transaction, and it guards itself: unless every deleted row's
/// copy went in (a unique conflict skipped one, a trigger dropped one) and the range held at
/// most `$4` rows, the last expression divides by zero, so the statement fails and nothing of
/// it stays (the caller takes the batch down the careful path). Deleted and inserted rows are
/// the same rows, because the `INSERT` reads exactly the `DELETE`'s `RETURNING`: under read
/// committed a `DELETE` returns only the rows this statement deleted (a row that another
/// transaction deleted first is skipped, one that it updated is re-checked against the range
/// and deleted only if it is still in it), so a concurrent mover of the same rows can neither
/// make a row be copied twice nor make one disappear uncopied. See docs/reliability.md.
fn range_move_sql(
    src: &Layout,
    tgt: &Layout,
    queue_override: bool,
    queue_clause: &str,
    can_conflict: bool,
    first: bool,
    count: bool,
) -> String {
    let sid = &src.cols["id"].sql;
    let (queue_ref, insert) = copy_moved_sql(src, tgt, queue_override, can_conflict, count);
    // A plain `$1 IS NULL OR id > $1` would be planned as a scan from the start of the index
    // in a generic plan: the first batch has its own statement.
    let after = after_cursor_sql(src, first);
    format!(
        "WITH b AS (SELECT COALESCE((SELECT {sid} FROM {st} WHERE {after} AND {sid} <= $3::text::{ty}{queue_clause}
                 ORDER BY {sid} OFFSET $4 - 1 LIMIT 1), $3::text::{ty}) AS hi),
         moved AS (
            DELETE FROM {st} WHERE {after} AND {sid} <= (SELECT hi FROM b){queue_clause}{queue_ref} RETURNING *),
         {insert}
         SELECT (SELECT hi FROM b)::text AS hi, m.n AS moved,
                1 / (CASE WHEN m.n = i.n AND m.n <= $4 THEN 1 ELSE 0 END) AS guard
           FROM (SELECT count(*) AS n FROM moved) m, (SELECT count(*) AS n FROM ins) i",
        st = src.table,
        ty = src.id_type(),
    )
}
