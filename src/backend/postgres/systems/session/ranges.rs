//! An unfiltered redrive in place as key ranges: the upper keys of the next ranges of
//! `--batch-size` dead jobs are read ahead in one statement, and the ranges are retried
//! [`RANGES_AT_ONCE`] at a time, each on a connection of the run's own, each one statement
//! that is its own transaction (docs/systems/README.md, "redrive").

use std::collections::VecDeque;

use sqlx::AssertSqlSafe;
use sqlx::postgres::PgConnection;

use super::super::backend::JobSystemBackend;
use super::SystemMoveSession;
use crate::backend::{LocalBatch, LocalNext};
use crate::error::{Error, Result};

/// How many ranges are retried at once, each on a connection of its own. They are disjoint,
/// and each is its own transaction: no job is in two of them.
pub(super) const RANGES_AT_ONCE: usize = 2;

/// How many ranges' upper keys one read of the bounds finds (a job that dies in a range
/// between that read and the range's retry is retried with it, as one that dies during the
/// retry's statement).
const READ_AHEAD: usize = 32;

/// The statements and connections of a run's range retries.
pub(super) struct Ranges {
    /// The retry of a range (`System::retry_range`): the first one's, the later ones'.
    retry: [String; 2],
    /// The read of the next ranges' upper keys (`System::range_bounds`): the first, the later.
    bounds: [String; 2],
    /// One connection per range at once, each with `lock_timeout` set (closed, not returned
    /// to the pool, at the end).
    conns: Vec<PgConnection>,
    /// The upper keys of the next ranges, read ahead.
    ahead: VecDeque<String>,
    /// Where the bounds read so far end; `done`: at the end key.
    read_to: Option<String>,
    done: bool,
    /// The error of a range retried beside others that were counted: returned next.
    pending: Option<Error>,
}

impl Ranges {
    /// The range statements of `b`'s system, where its retry allows them, and their
    /// connections, opened at once.
    pub(super) async fn open(b: &JobSystemBackend) -> Result<Option<Ranges>> {
        let s = &b.sys;
        let Some(retry) = s.retry_range(true).zip(s.retry_range(false)) else {
            return Ok(None);
        };
        let conns = futures::future::try_join_all((0..RANGES_AT_ONCE).map(|_| async {
            let mut conn = b.pool.acquire().await.map_err(|e| b.err(e))?.detach();
            // A job a worker holds is not waited on for long: the statement fails (55P03)
            // and the range goes key by key, which skips it.
            sqlx::query("SET lock_timeout = '200ms'")
                .execute(&mut conn)
                .await
                .map_err(|e| b.err(e))?;
            Ok::<_, Error>(conn)
        }))
        .await?;
        Ok(Some(Ranges {
            retry: [retry.0, retry.1],
            bounds: [s.range_bounds(true), s.range_bounds(false)],
            conns,
            ahead: VecDeque::new(),
            read_to: None,
            done: false,
            pending: None,
        }))
    }
}

impl Ranges {
    /// The read of the next bounds after what was read so far, if they do not reach the end
    /// yet and fewer than [`RANGES_AT_ONCE`] are left: its statement and where it starts.
    fn next_read(&self) -> Option<(String, Option<String>)> {
        (self.ahead.len() < RANGES_AT_ONCE && !self.done).then(|| {
            (
                self.bounds[usize::from(self.read_to.is_some())].clone(),
                self.read_to.clone(),
            )
        })
    }

    /// Take the upper keys a read found: fewer than [`READ_AHEAD`] means the dead jobs left
    /// after the last one are fewer than a range's, and the last range ends at the end key.
    fn take(&mut self, found: Vec<String>, end: &str) {
        let short = found.len() < READ_AHEAD;
        for hi in found {
            self.ahead.push_back(hi.clone());
            self.read_to = Some(hi);
        }
        if short {
            self.done = true;
            if self.read_to.as_deref() != Some(end) {
                self.ahead.push_back(end.to_string());
                self.read_to = Some(end.to_string());
            }
        }
    }
}

/// The upper keys of the next [`READ_AHEAD`] ranges of `n` dead jobs after `read_to`, up to
/// the end key: the key of every `n`th dead job. On the pool (no row locks are taken), so
/// that it runs beside the ranges under way.
async fn read_bounds(
    b: &JobSystemBackend,
    (sql, read_to): (String, Option<String>),
    end: &str,
    n: usize,
) -> Result<Vec<String>> {
    sqlx::query_scalar::<_, String>(AssertSqlSafe(sql))
        .bind(read_to)
        .bind(end)
        .bind((n * READ_AHEAD) as i64)
        .bind(n as i64)
        .fetch_all(&b.pool)
        .await
        .map_err(|e| b.err(e))
}

impl SystemMoveSession<'_> {
    /// The next ranges after the cursor, up to [`RANGES_AT_ONCE`] at once, each one retry
    /// statement and one transaction. A range whose statement meets a held row (55P03 after
    /// 200 ms) or a unique violation is rolled back and goes key by key (`range_key_by_key`),
    /// which skips held jobs and leaves conflicting ones. Returns what all of them did.
    pub(super) async fn retry_next_ranges(&mut self, n: usize) -> Result<LocalNext> {
        let r = self.ranges.as_mut().expect("range retries");
        if let Some(e) = r.pending.take() {
            return Err(e);
        }
        let Some(end) = self.end.clone() else {
            return Ok(LocalNext::Exhausted);
        };
        // The first bounds are read before the first ranges; the next ones beside the ranges
        // under way.
        if let Some(read) = r.next_read() {
            let found = read_bounds(self.b, read, &end, n).await?;
            r.take(found, &end);
        }
        let mut work: Vec<(Option<String>, String)> = Vec::new();
        let mut lo = self.cursor.clone();
        while work.len() < r.conns.len()
            && let Some(hi) = r.ahead.pop_front()
        {
            work.push((lo.clone(), hi.clone()));
            lo = Some(hi);
        }
        if work.is_empty() {
            return Ok(LocalNext::Exhausted);
        }
        let read = r.next_read();
        let Ranges { retry, conns, .. } = r;
        let ranges =
            futures::future::join_all(conns.iter_mut().zip(&work).map(|(conn, (lo, hi))| {
                let sql = retry[usize::from(lo.is_some())].clone();
                async move {
                    sqlx::query_scalar::<_, i64>(AssertSqlSafe(sql))
                        .bind(lo.as_deref())
                        .bind(hi)
                        .fetch_one(conn)
                        .await
                }
            }));
        let b = self.b;
        let ahead = async {
            match read {
                Some(read) => Some(read_bounds(b, read, &end, n).await),
                None => None,
            }
        };
        let (results, found) = tokio::join!(ranges, ahead);
        match found {
            Some(Ok(found)) => self
                .ranges
                .as_mut()
                .expect("range retries")
                .take(found, &end),
            Some(Err(e)) => self.keep_first(e),
            None => {}
        }
        let mut all = LocalBatch::default();
        for (i, ((lo, hi), result)) in work.into_iter().zip(results).enumerate() {
            match result {
                Ok(k) => {
                    tracing::debug!(after = ?lo, %hi, retried = k, "range retry");
                    all.examined += k as u64;
                    all.moved += k as u64;
                }
                Err(e) if super::is_unique_violation(&e) || super::is_lock_timeout(&e) => {
                    tracing::debug!(error = %e, after = ?lo, %hi, "the range as one statement failed: key by key");
                    // The error arrives before the server has rolled the statement back:
                    // until the connection is ready again, its row locks would make the
                    // claims below skip those jobs.
                    let conn = &mut self.ranges.as_mut().expect("range retries").conns[i];
                    if let Err(e) = sqlx::Connection::ping(conn).await {
                        self.keep_first(self.b.err(e));
                        continue;
                    }
                    self.cursor = lo;
                    match self.range_by_keys(&hi, n).await {
                        Ok(b) => merge(&mut all, b),
                        Err(e) => self.keep_first(e),
                    }
                }
                Err(e) => self.keep_first(self.b.err(e)),
            }
            self.cursor = Some(hi);
        }
        // What ran beside a range that failed was counted: its error comes next.
        let r = self.ranges.as_mut().expect("range retries");
        if all.examined == 0
            && all.others.is_empty()
            && let Some(e) = r.pending.take()
        {
            return Err(e);
        }
        Ok(LocalNext::Moved(all))
    }

    /// Keep the first error of the ranges retried at once.
    fn keep_first(&mut self, e: Error) {
        let r = self.ranges.as_mut().expect("range retries");
        r.pending.get_or_insert(e);
    }

    /// The range after the cursor up to `hi`, rolled back, key by key, `n` keys a batch.
    async fn range_by_keys(&mut self, hi: &str, n: usize) -> Result<LocalBatch> {
        let mut all = LocalBatch::default();
        while let LocalNext::Moved(b) = self.range_key_by_key(hi, n).await? {
            merge(&mut all, b);
        }
        Ok(all)
    }

    /// The next `n` dead jobs after the cursor up to `end` (a range that failed as one
    /// statement, rolled back), key by key; Exhausted when there are none.
    async fn range_key_by_key(&mut self, end: &str, n: usize) -> Result<LocalNext> {
        let s = &self.b.sys;
        let k = s.key.columns("j.");
        let after = super::after_cursor(s, self.cursor.is_none());
        let upto = s.key.cmp("j.", "<=", 2);
        let in_range = format!(
            "SELECT {} FROM {} WHERE {} AND {after} AND {upto} ORDER BY {k} LIMIT $3",
            s.key.text("j."),
            s.from,
            s.dead
        );
        let keys: Vec<String> = sqlx::query_scalar(AssertSqlSafe(in_range))
            .bind(self.cursor.as_deref())
            .bind(end)
            .bind(n as i64)
            .fetch_all(&self.b.pool)
            .await
            .map_err(|e| self.b.err(e))?;
        let Some(last) = keys.last() else {
            return Ok(LocalNext::Exhausted);
        };
        self.cursor = Some(last.clone());
        let sql = self.b.sys.retry.clone();
        // Jobs a worker holds are not claimed: skipped, as a claim skips them.
        let (done, conflicts, claimed) = self.one_by_one(&sql, &keys).await?;
        let took: std::collections::HashSet<&String> = claimed.iter().collect();
        self.passed
            .extend(keys.iter().filter(|k| !took.contains(k)).cloned());
        self.commit_batch(&claimed, &done, &conflicts).await
    }
}

fn merge(all: &mut LocalBatch, b: LocalBatch) {
    all.examined += b.examined;
    all.moved += b.moved;
    all.others.extend(b.others);
}
