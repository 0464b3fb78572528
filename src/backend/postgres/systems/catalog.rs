//! What the catalog says of a system's tables, and the refusals when it is not what dlqctl expects.

use std::collections::HashSet;

use sqlx::PgPool;

use crate::backend::postgres::layout::quote_ident;
use crate::backend::postgres::pg_err;
use crate::error::{Error, Result};

pub(super) async fn exists(pool: &PgPool, rel: &str) -> Result<bool> {
    sqlx::query_scalar::<_, bool>("SELECT to_regclass($1) IS NOT NULL")
        .bind(rel)
        .fetch_one(pool)
        .await
        .map_err(|e| pg_err(rel, e))
}

pub(super) async fn columns(pool: &PgPool, rel: &str) -> Result<HashSet<String>> {
    let cols: Vec<String> = sqlx::query_scalar(
        "SELECT attname::text FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped",
    )
    .bind(rel)
    .fetch_all(pool)
    .await
    .map_err(|e| pg_err(rel, e))?;
    Ok(cols.into_iter().collect())
}

pub(super) async fn enum_has(pool: &PgPool, ty: &str, label: &str) -> Result<bool> {
    sqlx::query_scalar::<_, bool>(
        "SELECT EXISTS (SELECT 1 FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid WHERE t.oid = to_regtype($1) AND e.enumlabel = $2)",
    )
    .bind(ty)
    .bind(label)
    .fetch_one(pool)
    .await
    .map_err(|e| pg_err(ty, e))
}

pub(super) async fn function_exists(pool: &PgPool, name: &str) -> Result<bool> {
    sqlx::query_scalar::<_, bool>("SELECT to_regproc($1) IS NOT NULL OR EXISTS (SELECT 1 FROM pg_proc WHERE oid::regproc::text = $1)")
        .bind(name)
        .fetch_one(pool)
        .await
        .map_err(|e| pg_err(name, e))
}

pub(super) fn refuse(system: &str, why: String) -> Error {
    Error::Schema {
        table: format!("system={system}"),
        reason: format!("{why}; dlqctl will not guess"),
    }
    .hinted(format!(
        "docs/systems/{system}.md lists the tables and columns dlqctl expects of {system}"
    ))
}

/// The system's main table is not in `schema`: say where it is, if it is anywhere.
pub(super) async fn missing_table(pool: &PgPool, system: &str, schema: &str, table: &str) -> Error {
    let found: Vec<String> = sqlx::query_scalar(
        "SELECT n.nspname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE c.relname = $1 AND c.relkind IN ('r', 'p') AND n.nspname <> $2
          ORDER BY n.nspname = current_schema() DESC, 1",
    )
    .bind(table)
    .bind(schema)
    .fetch_all(pool)
    .await
    .unwrap_or_default();
    let e = Error::Schema {
        table: format!("system={system}"),
        reason: format!("no table {schema}.{table}"),
    };
    match found.as_slice() {
        [] => e.hinted(format!(
            "is {system} installed in this database? docs/systems/{system}.md lists the tables dlqctl expects"
        )),
        [one] => e.hinted(format!(
            "{table} is in schema {one}: add &schema={one} to the URL (and quote the URL: & is shell syntax)"
        )),
        many => e.hinted(format!(
            "{table} is in schemas {}{}: add &schema=NAME to the URL (and quote the URL: & is shell syntax)",
            many.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
            if many.len() > 5 {
                format!(" and {} more", many.len() - 5)
            } else {
                String::new()
            }
        )),
    }
}

/// `schema.table`, quoted.
pub(super) fn rel(schema: &str, table: &str) -> String {
    format!("{}.{}", quote_ident(schema), quote_ident(table))
}

pub(super) fn need(cols: &HashSet<String>, system: &str, table: &str, want: &[&str]) -> Result<()> {
    let missing: Vec<&str> = want
        .iter()
        .filter(|c| !cols.contains(**c))
        .copied()
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(refuse(
            system,
            format!("{table} has no column(s) {}", missing.join(", ")),
        ))
    }
}

pub(super) fn or_null(cols: &HashSet<String>, col: &str, expr: &str, ty: &str) -> String {
    if cols.contains(col) {
        expr.to_string()
    } else {
        format!("NULL::{ty}")
    }
}

/// Whether `rel` has a unique index (or primary key) on exactly `cols`, in that order.
pub(super) async fn unique_on(pool: &PgPool, rel: &str, cols: &[&str]) -> Result<bool> {
    sqlx::query_scalar::<_, bool>(
        "SELECT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indpred IS NULL
            AND ARRAY(SELECT a.attname::text FROM unnest(i.indkey[0:i.indnkeyatts - 1]) WITH ORDINALITY k(attnum, n)
                      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.n) = $2::text[])",
    )
    .bind(rel)
    .bind(cols)
    .fetch_one(pool)
    .await
    .map_err(|e| pg_err(rel, e))
}
