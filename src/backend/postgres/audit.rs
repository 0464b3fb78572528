//! The audit trail's PostgreSQL table (`[audit] url`, `table`): one row per run, inserted
//! before it starts, completed when it ends. dlqctl does not create the table: the DDL is in
//! docs/audit.md (and docs/sql/audit.sql).

use async_trait::async_trait;
use sqlx::{AssertSqlSafe, PgPool};

use super::layout::quote_ident;
use super::{connect, pg_err};
use crate::address::redact;
use crate::audit::{Intent, Outcome, Table};
use crate::error::{Error, Result};
use crate::pgconn::PgConn;

pub struct AuditTable {
    pool: PgPool,
    table: String,
}

impl AuditTable {
    pub async fn open(url: &str, table: &str) -> Result<AuditTable> {
        let (conn, _) = PgConn::parse(url, &[]).map_err(|reason| Error::InvalidAddress {
            input: redact(url),
            reason: format!("{reason} ([audit] url)"),
        })?;
        let pool = connect(&conn).await?;
        let table = match table.split_once('.') {
            Some((s, t)) => format!("{}.{}", quote_ident(s), quote_ident(t)),
            None => quote_ident(table),
        };
        Ok(AuditTable { pool, table })
    }
}

#[async_trait]
impl Table for AuditTable {
    async fn intent(&self, i: &Intent) -> Result<()> {
        sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO {} (run, started_at, os_user, host, version, command, argv, source, targets, filter, reason)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            self.table
        )))
        .bind(&i.run)
        .bind(i.time)
        .bind(&i.user)
        .bind(&i.host)
        .bind(&i.version)
        .bind(&i.command)
        .bind(&i.argv)
        .bind(&i.source)
        .bind(&i.targets)
        .bind(&i.filter)
        .bind(&i.reason)
        .execute(&self.pool)
        .await
        .map_err(|e| pg_err(&self.table, e))?;
        Ok(())
    }

    async fn outcome(&self, o: &Outcome) -> Result<()> {
        sqlx::query(AssertSqlSafe(format!(
            "UPDATE {} SET finished_at = $2, exit_code = $3, counts = $4, error = $5, ids = $6,
                    ids_file = $7, ids_complete = $8
              WHERE run = $1",
            self.table
        )))
        .bind(&o.run)
        .bind(o.time)
        .bind(o.exit_code)
        .bind(sqlx::types::Json(&o.counts))
        .bind(&o.error)
        .bind(&o.ids)
        .bind(o.ids_file.as_ref().map(|p| p.display().to_string()))
        .bind(o.ids_complete)
        .execute(&self.pool)
        .await
        .map_err(|e| pg_err(&self.table, e))?;
        Ok(())
    }
}
