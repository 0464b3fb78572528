//! What the claims passed over: dead jobs another transaction held when a claim
//! (`FOR UPDATE … SKIP LOCKED`) reached them, found in the claim's key range and checked again
//! at the end of the run (reported when they are still dead).

use std::collections::HashSet;

use sqlx::AssertSqlSafe;

use super::{SystemMoveSession, after_cursor};
use crate::error::Result;

impl SystemMoveSession<'_> {
    /// The keys of the dead jobs after the cursor up to `upto` (in the open claim's
    /// transaction, if any), to find what a claim `FOR UPDATE … SKIP LOCKED` passed over.
    pub(super) async fn dead_in_range(&mut self, upto: &str) -> Result<Vec<String>> {
        let s = &self.b.sys;
        let sql = format!(
            "SELECT {} FROM {} WHERE {} AND {} AND {}{}",
            s.key.text("j."),
            s.from,
            s.dead,
            after_cursor(s, self.cursor.is_none()),
            s.key.cmp("j.", "<=", 2),
            self.b.queue_clause(3),
        );
        let q = sqlx::query_scalar::<_, String>(AssertSqlSafe(sql))
            .bind(self.cursor.as_deref())
            .bind(upto)
            .bind(self.b.queue_param());
        let keys = match self.tx.as_mut() {
            Some(tx) => q.fetch_all(&mut **tx).await,
            None => q.fetch_all(&self.b.pool).await,
        };
        keys.map_err(|e| self.b.err(e))
    }

    /// How many of `keys` (passed over by claims) are still dead at the end: not retried or
    /// removed meanwhile by whoever held them.
    pub(super) async fn still_dead(&self, keys: &HashSet<String>) -> Result<u64> {
        if keys.is_empty() {
            return Ok(0);
        }
        let s = &self.b.sys;
        let sql = format!(
            "SELECT count(*) FROM {} WHERE {} AND {}",
            s.from,
            s.dead,
            s.key.any("j.", 1)
        );
        let keys: Vec<&String> = keys.iter().collect();
        let n: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(keys)
            .fetch_one(&self.b.pool)
            .await
            .map_err(|e| self.b.err(e))?;
        Ok(n as u64)
    }
}
