//! The consumer's dedupe (inbox) table: `processed_messages(message_id text primary key,
//! handled_at timestamptz)` by default. Used by `classify --dedupe` and `verify`.

use std::collections::HashSet;
use std::time::Duration;

use crate::pgconn::PgConn;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, PgPool, Row};

use super::layout::quote_ident;
use super::{connect, cron, pg_err};
use crate::address::redact;
use crate::config::{DedupeConfig, Retention};
use crate::dedupe::{KnownRetention, Table, Uniqueness};
use crate::error::{Error, Result};

pub struct DedupeTable {
    pool: PgPool,
    pub display: String,
    table: String,
    schema: String,
    name: String,
    oid: i64,
    id_col: String,
    id_name: String,
    id_type: String,
    time_col: Option<String>,
    time_name: String,
    pub declared: Option<Retention>,
}

impl DedupeTable {
    /// `url` is a postgres URL; `table=`, `id_column=`, `time_column=` and `retention=` in its
    /// query override the config's values (for `--dedupe URL`).
    pub async fn open(cfg: &DedupeConfig) -> Result<DedupeTable> {
        let bad = |reason: String| Error::InvalidAddress {
            input: redact(&cfg.url),
            reason: format!(
                "{reason} (the dedupe table: postgres://USER@HOST/DB[?table=processed_messages&id_column=message_id])"
            ),
        };
        let (conn, own) = PgConn::parse(
            &cfg.url,
            &["table", "id_column", "time_column", "retention"],
        )
        .map_err(bad)?;
        let mut table = cfg.table.clone();
        let mut id_name = cfg.id_column.clone();
        let mut time_name = cfg.time_column.clone();
        let mut declared = cfg.retention;
        for (k, v) in own {
            match k.as_str() {
                "table" => table = v,
                "id_column" => id_name = v,
                "time_column" => time_name = v,
                _ => {
                    declared = Some(crate::config::parse_retention(&v).map_err(|r| {
                        Error::InvalidAddress {
                            input: redact(&cfg.url),
                            reason: r,
                        }
                    })?)
                }
            }
        }
        let pool = connect(&conn).await?;
        let row = sqlx::query(
            "SELECT c.oid::int8 AS oid, n.nspname::text AS schema, c.relname::text AS name
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)",
        )
        .bind(&table)
        .fetch_optional(&pool)
        .await
        .map_err(|e| pg_err(&table, e))?
        .ok_or_else(|| Error::NotFound {
            what: format!("dedupe table `{table}`"),
            detail: format!("no such table in {}", conn),
        })?;
        let oid: i64 = row.try_get("oid").map_err(|e| pg_err(&table, e))?;
        let schema: String = row.try_get("schema").map_err(|e| pg_err(&table, e))?;
        let name: String = row.try_get("name").map_err(|e| pg_err(&table, e))?;
        let display = format!("{schema}.{name}");
        let col_type = |col: String| {
            let pool = pool.clone();
            async move {
                sqlx::query_scalar::<_, String>(
                    "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::int8::oid AND attname = $2 AND attnum > 0 AND NOT attisdropped",
                )
                .bind(oid)
                .bind(col)
                .fetch_optional(&pool)
                .await
            }
        };
        let id_type = col_type(id_name.clone())
            .await
            .map_err(|e| pg_err(&display, e))?
            .ok_or_else(|| Error::Schema {
                table: display.clone(),
                reason: format!("has no id column `{id_name}`; set [queues.NAME.dedupe] id_column"),
            })?;
        let time_col = col_type(time_name.clone())
            .await
            .map_err(|e| pg_err(&display, e))?
            .map(|_| quote_ident(&time_name));
        Ok(DedupeTable {
            pool,
            table: format!("{}.{}", quote_ident(&schema), quote_ident(&name)),
            display,
            schema,
            name,
            oid,
            id_col: quote_ident(&id_name),
            id_name,
            id_type,
            time_col,
            time_name,
            declared,
        })
    }
}

#[async_trait]
impl Table for DedupeTable {
    fn display(&self) -> &str {
        &self.display
    }

    fn id_column(&self) -> &str {
        &self.id_name
    }

    /// Check 2: a primary key or unique index on exactly the id column.
    async fn uniqueness(&self) -> Result<Uniqueness> {
        let rows = sqlx::query(
            "SELECT ic.relname::text AS index, i.indisprimary AS primary, i.indpred IS NOT NULL AS partial,
                    i.indexprs IS NOT NULL AS expr,
                    array_length(i.indkey::int2[], 1) AS ncols,
                    (SELECT array_agg(a.attname::text ORDER BY k.ord) FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(attnum, ord)
                       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum) AS cols
               FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
              WHERE i.indrelid = $1::int8::oid AND i.indisunique AND i.indisvalid",
        )
        .bind(self.oid)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| pg_err(&self.display, e))?;
        let mut partial = None;
        for r in rows {
            let index: String = r.try_get("index").unwrap_or_default();
            let cols: Vec<String> = r
                .try_get::<Option<Vec<String>>, _>("cols")
                .ok()
                .flatten()
                .unwrap_or_default();
            if !cols.contains(&self.id_name) {
                continue;
            }
            let is_partial: bool = r.try_get("partial").unwrap_or(false);
            let is_expr: bool = r.try_get("expr").unwrap_or(false);
            if cols.len() == 1 && !is_partial && !is_expr {
                return Ok(Uniqueness::Unique {
                    index,
                    primary: r.try_get("primary").unwrap_or(false),
                });
            }
            let why = if is_partial {
                "a partial index: only some rows are unique".to_string()
            } else {
                format!("unique only together with ({})", cols.join(", "))
            };
            partial = Some(Uniqueness::Partial { index, why });
        }
        Ok(partial.unwrap_or(Uniqueness::None))
    }

    /// Check 3: declared, discovered (pg_cron prune job, expiry column), or a lower bound.
    async fn retention(&self) -> Result<KnownRetention> {
        if let Some(r) = self.declared {
            return Ok(KnownRetention::Declared(r));
        }
        if let Some(job) = cron::prune_jobs(&self.pool, &self.schema, &self.name).await?
            && let Some(d) = job.retention
        {
            return Ok(KnownRetention::Discovered {
                retention: Retention::For(d),
                how: job.describe(),
            });
        }
        // An expiry column next to the time column: the longest (expiry - handled) is how long
        // ids are meant to be kept.
        for exp in ["expires_at", "expire_at", "expires", "expiry"] {
            let exists: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = $1::int8::oid AND attname = $2 AND NOT attisdropped)",
            )
            .bind(self.oid)
            .bind(exp)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| pg_err(&self.display, e))?;
            if exists && let Some(t) = &self.time_col {
                let sql = format!(
                    "SELECT extract(epoch FROM max({} - {t}))::float8 FROM {}",
                    quote_ident(exp),
                    self.table
                );
                let secs: Option<f64> = sqlx::query_scalar(AssertSqlSafe(sql))
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| pg_err(&self.display, e))?;
                if let Some(s) = secs.filter(|s| *s > 0.0) {
                    return Ok(KnownRetention::Discovered {
                        retention: Retention::For(Duration::from_secs_f64(s)),
                        how: format!(
                            "expiry column {exp}: ids are kept up to {} after {}",
                            crate::human::fmt_duration(Duration::from_secs(s as u64)),
                            self.time_name
                        ),
                    });
                }
            }
        }
        match &self.time_col {
            Some(t) => {
                let sql = format!("SELECT min({t})::timestamptz FROM {}", self.table);
                let oldest: Option<DateTime<Utc>> = sqlx::query_scalar(AssertSqlSafe(sql))
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| pg_err(&self.display, e))?;
                Ok(match oldest {
                    Some(o) => KnownRetention::AtLeast {
                        age: (Utc::now() - o).to_std().unwrap_or_default(),
                        oldest: o,
                    },
                    None => KnownRetention::Unknown(
                        "the table is empty and no retention is declared".into(),
                    ),
                })
            }
            None => Ok(KnownRetention::Unknown(format!(
                "no time column `{}` to measure, no pg_cron job, nothing declared",
                self.time_name
            ))),
        }
    }

    /// Which of `ids` are recorded as processed.
    async fn processed(&self, ids: &[String]) -> Result<HashSet<String>> {
        if ids.is_empty() {
            return Ok(HashSet::new());
        }
        // Compare in the column's own type so its index is used; when an id does not cast
        // (a non-uuid into a uuid column), fall back to comparing as text.
        let typed = format!(
            "SELECT {c}::text FROM {} WHERE {c} = ANY($1::text[]::{}[])",
            self.table,
            self.id_type,
            c = self.id_col
        );
        let found: Vec<String> = match sqlx::query_scalar(AssertSqlSafe(typed))
            .bind(ids)
            .fetch_all(&self.pool)
            .await
        {
            Ok(f) => f,
            Err(e)
                if e.as_database_error()
                    .and_then(|d| d.code())
                    .is_some_and(|c| c == "22P02") =>
            {
                let sql = format!(
                    "SELECT {c}::text FROM {} WHERE {c}::text = ANY($1::text[])",
                    self.table,
                    c = self.id_col
                );
                sqlx::query_scalar(AssertSqlSafe(sql))
                    .bind(ids)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| pg_err(&self.display, e))?
            }
            Err(e) => return Err(pg_err(&self.display, e)),
        };
        Ok(found.into_iter().collect())
    }
}
