//! Retrying or removing dead jobs: batches claimed `FOR UPDATE … SKIP LOCKED`, each in its
//! own transaction, the retry the system's own tools perform.

use std::collections::HashSet;

use async_trait::async_trait;
use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, Postgres, Row, Transaction};

use super::backend::JobSystemBackend;
use crate::address::Address;
use crate::backend::{
    Claim, LocalBatch, LocalMoves, LocalNext, MoveOptions, MoveSession, QueueBackend, SendOutcome,
    Ticket, Unaccounted,
};
use crate::error::Result;
use crate::message::Message;

mod passed;
mod ranges;

use ranges::Ranges;

/// Batches of dead jobs, each claimed `FOR UPDATE … SKIP LOCKED` in its own transaction.
pub(super) struct SystemMoveSession<'a> {
    b: &'a JobSystemBackend,
    cursor: Option<String>,
    end: Option<String>,
    tx: Option<Transaction<'static, Postgres>>,
    keys: Vec<String>,
    /// The unfiltered retry as key ranges, where the system's retry allows one and no
    /// `&queue=` or `--max` narrows the run (ranges.rs).
    ranges: Option<Ranges>,
    /// The keys of dead jobs passed over because another transaction held them; at the end,
    /// how many of them are still dead (reported).
    passed: HashSet<String>,
    left: u64,
}

impl<'a> SystemMoveSession<'a> {
    pub(super) async fn begin(
        b: &'a JobSystemBackend,
        opts: &MoveOptions,
    ) -> Result<SystemMoveSession<'a>> {
        let s = &b.sys;
        let sql = s.last_key_query(&b.queue_clause(1));
        let last_key = async {
            sqlx::query_scalar::<_, String>(AssertSqlSafe(sql))
                .bind(b.queue_param())
                .fetch_optional(&b.pool)
                .await
                .map_err(|e| b.err(e))
        };
        // The end key and the range connections at once.
        let (end, ranges) = if b.queue_param().is_none() && opts.max.is_none() {
            tokio::try_join!(last_key, Ranges::open(b))?
        } else {
            (last_key.await?, None)
        };
        Ok(SystemMoveSession {
            b,
            cursor: None,
            end,
            tx: None,
            keys: Vec::new(),
            ranges,
            passed: HashSet::new(),
            left: 0,
        })
    }

    /// Run `sql` for `keys` (claimed in the open transaction) as one statement. On a unique
    /// violation (an active twin) the statement fails and takes the transaction with it: the
    /// batch is rolled back and done again key by key (`one_by_one`), so that only the
    /// conflicting jobs are left. The common case costs one statement and no savepoint.
    /// Returns the keys retried, the ones that met an active twin, and the ones skipped
    /// because someone held them when the batch went key by key.
    async fn run_each(&mut self, sql: &str, keys: &[String]) -> Result<Retried> {
        let tx = self.tx.as_mut().expect("a claimed batch");
        match sqlx::query_scalar::<_, String>(AssertSqlSafe(sql.to_string()))
            .bind(keys)
            .fetch_all(&mut **tx)
            .await
        {
            Ok(done) => Ok(Retried {
                done: done.into_iter().collect(),
                ..Retried::default()
            }),
            Err(e) if is_unique_violation(&e) || is_lock_timeout(&e) => {
                tracing::debug!(error = %e, "the batch as one statement failed: again key by key");
                let tx = self.tx.take().expect("a claimed batch");
                tx.rollback().await.map_err(|e| self.b.err(e))?;
                let (done, conflicts, claimed) = self.one_by_one(sql, keys).await?;
                let claimed: HashSet<&String> = claimed.iter().collect();
                let skipped: HashSet<String> = keys
                    .iter()
                    .filter(|k| !claimed.contains(k))
                    .cloned()
                    .collect();
                self.passed.extend(skipped.iter().cloned());
                Ok(Retried {
                    done,
                    conflicts,
                    skipped,
                })
            }
            Err(e) => Err(self.b.err(e)),
        }
    }

    /// Claim `keys` again in a new transaction (skipping the ones that are locked or no longer
    /// dead now) and run `sql` for each under a savepoint of its own: a job whose unique key an
    /// active twin holds is left as it is, the others go.
    async fn one_by_one(
        &mut self,
        sql: &str,
        keys: &[String],
    ) -> Result<(HashSet<String>, HashSet<String>, Vec<String>)> {
        let s = &self.b.sys;
        let claim = format!(
            "SELECT {} FROM {} WHERE {} AND {} ORDER BY {} FOR UPDATE OF {lock} SKIP LOCKED",
            s.key.text("j."),
            s.from,
            s.dead,
            s.key.any("j.", 1),
            s.key.order("j.", ""),
            lock = s.lock_of
        );
        let mut tx = self.b.pool.begin().await.map_err(|e| self.b.err(e))?;
        let claimed: Vec<String> = sqlx::query_scalar(AssertSqlSafe(claim))
            .bind(keys)
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| self.b.err(e))?;
        let mut done = HashSet::new();
        let mut conflicts = HashSet::new();
        for k in &claimed {
            sqlx::query("SAVEPOINT dlqctl_one")
                .execute(&mut *tx)
                .await
                .map_err(|e| self.b.err(e))?;
            match sqlx::query_scalar::<_, String>(AssertSqlSafe(sql.to_string()))
                .bind(std::slice::from_ref(k))
                .fetch_all(&mut *tx)
                .await
            {
                Ok(d) => {
                    sqlx::query("RELEASE SAVEPOINT dlqctl_one")
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| self.b.err(e))?;
                    done.extend(d);
                }
                Err(e) if is_unique_violation(&e) => {
                    sqlx::query("ROLLBACK TO SAVEPOINT dlqctl_one")
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| self.b.err(e))?;
                    conflicts.insert(k.clone());
                }
                Err(e) => return Err(self.b.err(e)),
            }
        }
        self.tx = Some(tx);
        Ok((done, conflicts, claimed))
    }

    /// Claim the next rows (up to `n`, skipping locked ones) in a new transaction, selecting
    /// `columns`. Empty when the session's range is exhausted.
    async fn claim(&mut self, n: usize, columns: &str) -> Result<Vec<PgRow>> {
        self.select(n, columns, true).await
    }

    /// The next rows after the cursor, in a new transaction; `lock`: claim them
    /// (`FOR UPDATE … SKIP LOCKED`), else only read their keys (the unfiltered retry, whose
    /// statement locks each row itself and re-checks that it is dead).
    async fn select(&mut self, n: usize, columns: &str, lock: bool) -> Result<Vec<PgRow>> {
        let Some(end) = self.end.clone() else {
            return Ok(Vec::new());
        };
        let s = &self.b.sys;
        let sql = format!(
            "SELECT {columns} FROM {} WHERE {} AND {} AND {}{} ORDER BY {} LIMIT $4{}",
            s.from,
            s.dead,
            after_cursor(s, self.cursor.is_none()),
            s.key.cmp("j.", "<=", 2),
            self.b.queue_clause(3),
            s.key.order("j.", ""),
            if lock {
                format!(" FOR UPDATE OF {} SKIP LOCKED", s.lock_of)
            } else {
                String::new()
            }
        );
        let mut tx = self.b.pool.begin().await.map_err(|e| self.b.err(e))?;
        if !lock {
            // A job a worker holds is not waited on for long: the statement fails (55P03)
            // and the batch goes the careful way, which skips it.
            sqlx::query("SET LOCAL lock_timeout = '200ms'")
                .execute(&mut *tx)
                .await
                .map_err(|e| self.b.err(e))?;
        }
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
        } else {
            self.tx = Some(tx);
        }
        Ok(rows)
    }

    /// Commit the open batch whose `keys` were examined: what it moved, and for each job it
    /// left, its stable id (read before the commit) and why.
    async fn commit_batch(
        &mut self,
        keys: &[String],
        done: &HashSet<String>,
        conflicts: &HashSet<String>,
    ) -> Result<LocalNext> {
        let left: Vec<String> = keys
            .iter()
            .filter(|k| !done.contains(*k))
            .cloned()
            .collect();
        let ids = if left.is_empty() {
            Vec::new()
        } else {
            self.ids_of(&left).await?
        };
        let tx = self.tx.take().expect("a claimed batch");
        tx.commit().await.map_err(|e| self.b.err(e))?;
        Ok(LocalNext::Moved(LocalBatch {
            examined: keys.len() as u64,
            moved: done.len() as u64,
            others: left
                .iter()
                .zip(ids)
                .map(|(k, id)| (id, self.outcome(k, done, conflicts)))
                .collect(),
        }))
    }

    /// Retry `keys` (claimed) in place and commit: which were retried, and which met an
    /// active twin.
    async fn retry(&mut self, keys: &[String]) -> Result<(HashSet<String>, HashSet<String>)> {
        let sql = self.b.sys.retry.clone();
        let r = if keys.is_empty() {
            Retried::default()
        } else {
            self.run_each(&sql, keys).await?
        };
        let tx = self.tx.take().expect("a claimed batch");
        tx.commit().await.map_err(|e| self.b.err(e))?;
        Ok((r.done, r.conflicts))
    }

    fn outcome(
        &self,
        key: &str,
        done: &HashSet<String>,
        conflicts: &HashSet<String>,
    ) -> SendOutcome {
        let name = self.b.sys.name;
        if done.contains(key) {
            SendOutcome::Sent
        } else if conflicts.contains(key) {
            SendOutcome::Conflict {
                reason: format!(
                    "{name}: an active twin holds this job's unique key (SQLSTATE 23505); left dead"
                ),
            }
        } else {
            SendOutcome::Rejected {
                reason: format!("{name}: the job was no longer dead or was locked when retried"),
            }
        }
    }

    /// The stable ids of claimed jobs that were not retried (read before the claim's
    /// transaction ends; a job that is gone keeps its key as its id).
    async fn ids_of(&mut self, keys: &[String]) -> Result<Vec<String>> {
        let s = &self.b.sys;
        let sql = format!(
            "SELECT {} FROM {} WHERE {}",
            s.select_list(),
            s.from,
            s.key.any("j.", 1),
        );
        let tx = self.tx.as_mut().expect("a claimed batch");
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(keys)
            .fetch_all(&mut **tx)
            .await
            .map_err(|e| self.b.err(e))?;
        let mut by_key = std::collections::HashMap::new();
        for r in &rows {
            let m = s
                .to_message(r, self.b.id.as_ref())
                .map_err(|e| self.b.err(e))?;
            by_key.insert(m.native_id.clone(), m.id);
        }
        Ok(keys
            .iter()
            .map(|k| by_key.remove(k).unwrap_or_else(|| k.clone()))
            .collect())
    }
}

/// What a batch's retry did, key by key.
#[derive(Default)]
struct Retried {
    done: HashSet<String>,
    conflicts: HashSet<String>,
    /// Held by someone when the batch went key by key: skipped, as a claim skips them.
    skipped: HashSet<String>,
}

/// After the cursor `$1` (a key), or nothing on the first batch. Not `$1 IS NULL OR …`: a
/// generic plan would read that as a scan from the first key, on every batch.
fn after_cursor(s: &super::System, first: bool) -> String {
    if first {
        "$1::text IS NULL".into()
    } else {
        s.key.cmp("j.", ">", 1)
    }
}

/// `lock_timeout` expired (55P03): a row of the batch is held by someone else.
fn is_lock_timeout(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|c| c == "55P03")
}

fn is_unique_violation(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|c| c == "23505")
}

#[async_trait]
impl MoveSession for SystemMoveSession<'_> {
    fn local(&mut self) -> Option<&mut dyn LocalMoves> {
        Some(self)
    }

    async fn finish(&mut self) -> Result<()> {
        self.left = self.still_dead(&self.passed).await?;
        Ok(())
    }

    fn unaccounted(&self) -> Vec<Unaccounted> {
        crate::backend::postgres::moves::held_rows(self.left)
    }

    async fn next_batch(&mut self, n: usize) -> Result<Option<Claim>> {
        let Some(end) = self.end.clone() else {
            return Ok(None);
        };
        let rows = self.claim(n, &self.b.sys.select_list()).await?;
        let msgs: Vec<Message> = rows
            .iter()
            .map(|r| {
                self.b
                    .sys
                    .to_message(r, self.b.id.as_ref())
                    .map_err(|e| self.b.err(e))
            })
            .collect::<Result<_>>()?;
        self.keys = msgs.iter().map(|m| m.native_id.clone()).collect();
        // What the claim passed over (held by another transaction): every dead job up to the
        // last one claimed, or up to the end after a short claim, which then ends the walk.
        let upto = match self.keys.last() {
            Some(last) if self.keys.len() >= n => last.clone(),
            _ => end,
        };
        let in_range = self.dead_in_range(&upto).await?;
        let claimed: HashSet<&String> = self.keys.iter().collect();
        let unclaimed: Vec<String> = in_range
            .into_iter()
            .filter(|k| !claimed.contains(k))
            .collect();
        self.passed.extend(unclaimed);
        self.cursor = Some(upto);
        if msgs.is_empty() {
            return Ok(None);
        }
        Ok(Some(Claim::new(msgs)))
    }

    async fn settle(
        &mut self,
        _ticket: Ticket,
        accepted: &[usize],
        _failed: &[usize],
    ) -> Result<()> {
        if !accepted.is_empty() {
            let keys: Vec<String> = accepted.iter().map(|&i| self.keys[i].clone()).collect();
            let sql = self.b.sys.delete.clone();
            self.run_each(&sql, &keys).await?;
        }
        let tx = self.tx.take().expect("a claimed batch");
        tx.commit().await.map_err(|e| self.b.err(e))?;
        Ok(())
    }
}

#[async_trait]
impl LocalMoves for SystemMoveSession<'_> {
    /// An unfiltered redrive in place: each batch is one claim of keys (no content read) and
    /// the system's retry as one statement; only a batch that meets a unique violation goes
    /// key by key (`run_each`).
    async fn move_next_locally(&mut self, target: &Address, n: usize) -> Result<LocalNext> {
        if *target != *self.b.address() {
            return Ok(LocalNext::ClaimFirst);
        }
        if self.ranges.is_some() {
            return self.retry_next_ranges(n).await;
        }
        let key = self.b.sys.key.text("j.");
        let rows = self.select(n, &format!("{key} AS id"), false).await?;
        if rows.is_empty() {
            return Ok(LocalNext::Exhausted);
        }
        let keys: Vec<String> = rows
            .iter()
            .map(|r| r.try_get::<String, _>("id"))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| self.b.err(e))?;
        self.cursor = keys.last().cloned();
        let sql = self.b.sys.retry.clone();
        let Retried {
            done,
            conflicts,
            skipped,
        } = self.run_each(&sql, &keys).await?;
        // Jobs held by someone when the batch went key by key are skipped, as a claim skips
        // them: neither examined nor counted.
        let keys: Vec<String> = keys.into_iter().filter(|k| !skipped.contains(k)).collect();
        self.commit_batch(&keys, &done, &conflicts).await
    }

    async fn move_locally(
        &mut self,
        _ticket: Ticket,
        _target: &Address,
        selected: &[usize],
    ) -> Result<Vec<SendOutcome>> {
        let keys: Vec<String> = selected.iter().map(|&i| self.keys[i].clone()).collect();
        let (done, conflicts) = self.retry(&keys).await?;
        Ok(keys
            .iter()
            .map(|k| self.outcome(k, &done, &conflicts))
            .collect())
    }
}
