//! Retrying or removing dead jobs: batches claimed `FOR UPDATE … SKIP LOCKED`, each in its
//! own transaction, the retry the system's own tools perform.

use std::collections::HashSet;

use async_trait::async_trait;
use sqlx::{AssertSqlSafe, Postgres, Transaction};

use super::backend::JobSystemBackend;
use crate::address::Address;
use crate::backend::{MoveSession, SendOutcome};
use crate::error::Result;
use crate::message::Message;

/// Batches of dead jobs, each claimed `FOR UPDATE … SKIP LOCKED` in its own transaction.
pub(super) struct SystemMoveSession<'a> {
    b: &'a JobSystemBackend,
    cursor: Option<String>,
    end: Option<String>,
    tx: Option<Transaction<'static, Postgres>>,
    keys: Vec<String>,
}

impl<'a> SystemMoveSession<'a> {
    pub(super) async fn begin(b: &'a JobSystemBackend) -> Result<SystemMoveSession<'a>> {
        let s = &b.sys;
        let sql = format!(
            "SELECT {} FROM {} WHERE {}{}",
            s.max_key(),
            s.from,
            s.dead,
            b.queue_clause(1)
        );
        let end: Option<String> = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(b.queue_param())
            .fetch_one(&b.pool)
            .await
            .map_err(|e| b.err(e))?;
        Ok(SystemMoveSession {
            b,
            cursor: None,
            end,
            tx: None,
            keys: Vec::new(),
        })
    }

    /// Run `sql` for `keys`; on a unique violation (an active twin), again key by key under
    /// savepoints so only the conflicting jobs are skipped.
    async fn run_each(
        &mut self,
        sql: &str,
        keys: &[String],
    ) -> Result<(HashSet<String>, HashSet<String>)> {
        let tx = self.tx.as_mut().expect("a claimed batch");
        sqlx::query("SAVEPOINT dlqctl_batch")
            .execute(&mut **tx)
            .await
            .map_err(|e| self.b.err(e))?;
        match sqlx::query_scalar::<_, String>(AssertSqlSafe(sql.to_string()))
            .bind(keys)
            .fetch_all(&mut **tx)
            .await
        {
            Ok(done) => {
                sqlx::query("RELEASE SAVEPOINT dlqctl_batch")
                    .execute(&mut **tx)
                    .await
                    .map_err(|e| self.b.err(e))?;
                Ok((done.into_iter().collect(), HashSet::new()))
            }
            Err(e)
                if e.as_database_error()
                    .and_then(|d| d.code())
                    .is_some_and(|c| c == "23505") =>
            {
                sqlx::query("ROLLBACK TO SAVEPOINT dlqctl_batch")
                    .execute(&mut **tx)
                    .await
                    .map_err(|e| self.b.err(e))?;
                let mut done = HashSet::new();
                let mut conflicts = HashSet::new();
                for k in keys {
                    sqlx::query("SAVEPOINT dlqctl_one")
                        .execute(&mut **tx)
                        .await
                        .map_err(|e| self.b.err(e))?;
                    match sqlx::query_scalar::<_, String>(AssertSqlSafe(sql.to_string()))
                        .bind(std::slice::from_ref(k))
                        .fetch_all(&mut **tx)
                        .await
                    {
                        Ok(d) => {
                            sqlx::query("RELEASE SAVEPOINT dlqctl_one")
                                .execute(&mut **tx)
                                .await
                                .map_err(|e| self.b.err(e))?;
                            done.extend(d);
                        }
                        Err(e)
                            if e.as_database_error()
                                .and_then(|d| d.code())
                                .is_some_and(|c| c == "23505") =>
                        {
                            sqlx::query("ROLLBACK TO SAVEPOINT dlqctl_one")
                                .execute(&mut **tx)
                                .await
                                .map_err(|e| self.b.err(e))?;
                            conflicts.insert(k.clone());
                        }
                        Err(e) => return Err(self.b.err(e)),
                    }
                }
                Ok((done, conflicts))
            }
            Err(e) => Err(self.b.err(e)),
        }
    }
}

#[async_trait]
impl MoveSession for SystemMoveSession<'_> {
    async fn next_batch(&mut self, n: usize) -> Result<Option<Vec<Message>>> {
        let Some(end) = self.end.clone() else {
            return Ok(None);
        };
        let s = &self.b.sys;
        let sql = format!(
            "SELECT {} FROM {} WHERE {} AND ($1::text IS NULL OR {key} > $1::text::{ty}) AND {key} <= $2::text::{ty}{} ORDER BY {key} LIMIT $4 FOR UPDATE OF {lock} SKIP LOCKED",
            s.select_list(),
            s.from,
            s.dead,
            self.b.queue_clause(3),
            key = s.key,
            ty = s.key_type,
            lock = s.lock_of
        );
        let mut tx = self.b.pool.begin().await.map_err(|e| self.b.err(e))?;
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
            return Ok(None);
        }
        let msgs: Vec<Message> = rows
            .iter()
            .map(|r| {
                s.to_message(r, self.b.id.as_ref())
                    .map_err(|e| self.b.err(e))
            })
            .collect::<Result<_>>()?;
        self.keys = msgs.iter().map(|m| m.native_id.clone()).collect();
        self.cursor = self.keys.last().cloned();
        self.tx = Some(tx);
        Ok(Some(msgs))
    }

    async fn settle(&mut self, accepted: &[usize], _failed: &[usize]) -> Result<()> {
        if !accepted.is_empty() {
            let keys: Vec<String> = accepted.iter().map(|&i| self.keys[i].clone()).collect();
            let sql = self.b.sys.delete.clone();
            self.run_each(&sql, &keys).await?;
        }
        let tx = self.tx.take().expect("a claimed batch");
        tx.commit().await.map_err(|e| self.b.err(e))?;
        Ok(())
    }

    async fn move_locally(
        &mut self,
        _target: &Address,
        selected: &[usize],
    ) -> Result<Vec<SendOutcome>> {
        let keys: Vec<String> = selected.iter().map(|&i| self.keys[i].clone()).collect();
        let sql = self.b.sys.retry.clone();
        let (done, conflicts) = if keys.is_empty() {
            Default::default()
        } else {
            self.run_each(&sql, &keys).await?
        };
        let tx = self.tx.take().expect("a claimed batch");
        tx.commit().await.map_err(|e| self.b.err(e))?;
        Ok(keys
            .iter()
            .map(|k| {
                if done.contains(k) {
                    SendOutcome::Sent
                } else if conflicts.contains(k) {
                    SendOutcome::Conflict { reason: format!("{}: an active twin holds this job's unique key (SQLSTATE 23505); left dead", self.b.sys.name) }
                } else {
                    SendOutcome::Rejected { reason: format!("{}: the job was no longer dead or was locked when retried", self.b.sys.name) }
                }
            })
            .collect())
    }
}
