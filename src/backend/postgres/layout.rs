//! The generic table layouts (`docs/postgres.md`), the user's column mapping, and the SQL
//! built from them. Table and column names come from the catalog and are always quoted;
//! values are always bound parameters.

use std::collections::BTreeMap;

use sqlx::{PgPool, Row};

use super::pg_err;
use crate::error::{Error, Result};

/// The logical columns of a dead-letter table: (name, default column, required).
pub const DLQ_COLUMNS: &[(&str, &str, bool)] = &[
    ("id", "id", true),
    ("message_id", "message_id", true),
    ("payload", "payload", true),
    ("payload_bytes", "payload_bytes", false),
    ("headers", "headers", false),
    ("error", "error", false),
    ("attempts", "attempts", false),
    ("enqueued_at", "enqueued_at", false),
    ("failed_at", "failed_at", false),
    ("queue", "queue", false),
    ("group_key", "group_key", false),
];

/// The logical columns of a queue table that redrive writes into.
pub const QUEUE_COLUMNS: &[(&str, &str, bool)] = &[
    ("id", "id", false),
    ("message_id", "message_id", true),
    ("payload", "payload", true),
    ("payload_bytes", "payload_bytes", false),
    ("headers", "headers", false),
    ("queue", "queue", false),
    ("group_key", "group_key", false),
    ("enqueued_at", "enqueued_at", false),
];

#[derive(Clone, Debug)]
pub struct Column {
    /// Quoted identifier, ready for SQL.
    pub sql: String,
    /// The column's type as `format_type` prints it (`jsonb`, `bigint`, `timestamp with time zone`).
    pub ty: String,
    pub not_null: bool,
    pub has_default: bool,
}

/// A table resolved through the catalog, with its logical columns mapped.
#[derive(Clone, Debug)]
pub struct Layout {
    /// `"schema"."table"`, quoted.
    pub table: String,
    /// `schema.table` for people.
    pub display: String,
    pub schema: String,
    pub name: String,
    pub oid: u32,
    pub cols: BTreeMap<&'static str, Column>,
    /// NOT NULL columns without a default that no logical column maps to.
    pub required_unmapped: Vec<String>,
}

pub fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Payload column types dlqctl can read and write.
pub fn payload_kind(ty: &str) -> Option<PayloadKind> {
    Some(match ty {
        "jsonb" => PayloadKind::Jsonb,
        "json" => PayloadKind::Json,
        "text" | "character varying" => PayloadKind::Text,
        t if t.starts_with("character varying") => PayloadKind::Text,
        "bytea" => PayloadKind::Bytea,
        _ => return None,
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadKind {
    Jsonb,
    Json,
    Text,
    Bytea,
}

impl Layout {
    /// Look the table up (`to_regclass`, bound), read its columns, apply the mapping.
    pub async fn resolve(
        pool: &PgPool,
        name: &str,
        spec: &[(&'static str, &'static str, bool)],
        mapping: &BTreeMap<String, String>,
        mapping_key: &str,
    ) -> Result<Layout> {
        check_mapping_names(name, spec, mapping, mapping_key)?;
        let rel = find_table(pool, name).await?;
        let actual = read_columns(pool, name, rel.oid).await?;
        let display = format!("{}.{}", rel.schema, rel.name);
        let mapped = map_columns(&display, spec, mapping, mapping_key, &actual)?;
        let required_unmapped = actual
            .iter()
            .filter(|(_, c)| c.not_null && !c.has_default)
            .filter(|(_, c)| !mapped.values().any(|m: &Column| m.sql == c.sql))
            .map(|(n, _)| n.clone())
            .collect();
        let layout = Layout {
            table: format!("{}.{}", quote_ident(&rel.schema), quote_ident(&rel.name)),
            required_unmapped,
            display,
            schema: rel.schema,
            name: rel.name,
            oid: rel.oid as u32,
            cols: mapped,
        };
        layout.check_types()?;
        Ok(layout)
    }

    fn check_types(&self) -> Result<()> {
        let bad = |logical: &str, want: &str| Error::Schema {
            table: self.display.clone(),
            reason: format!(
                "column for `{logical}` has type {}, expected {want}",
                self.cols[logical].ty
            ),
        };
        if let Some(p) = self.cols.get("payload")
            && payload_kind(&p.ty).is_none()
        {
            return Err(bad("payload", "jsonb, json, text or bytea"));
        }
        if let Some(c) = self.cols.get("payload_bytes")
            && c.ty != "bytea"
        {
            return Err(bad("payload_bytes", "bytea"));
        }
        if let Some(c) = self.cols.get("headers")
            && !matches!(c.ty.as_str(), "jsonb" | "json")
        {
            return Err(bad("headers", "jsonb or json"));
        }
        for t in ["enqueued_at", "failed_at"] {
            if let Some(c) = self.cols.get(t)
                && !c.ty.starts_with("timestamp")
            {
                return Err(bad(t, "timestamptz"));
            }
        }
        if let Some(c) = self.cols.get("attempts")
            && !matches!(c.ty.as_str(), "integer" | "bigint" | "smallint")
        {
            return Err(bad("attempts", "an integer"));
        }
        Ok(())
    }

    pub fn col(&self, logical: &str) -> Option<&Column> {
        self.cols.get(logical)
    }

    pub fn payload(&self) -> PayloadKind {
        payload_kind(&self.cols["payload"].ty).unwrap_or(PayloadKind::Text)
    }

    /// A select-list entry for `logical` as `alias`, or a typed NULL when the column is absent.
    fn expr(&self, logical: &str, cast: &str, null_type: &str) -> String {
        match self.cols.get(logical) {
            Some(c) => format!("{}{cast} AS {logical}", c.sql),
            None => format!("NULL::{null_type} AS {logical}"),
        }
    }

    /// The body as bytes, whatever the payload column's type.
    pub fn body_expr(&self) -> String {
        let p = &self.cols["payload"].sql;
        let main = match self.payload() {
            PayloadKind::Bytea => p.clone(),
            PayloadKind::Jsonb | PayloadKind::Json => format!("convert_to({p}::text, 'UTF8')"),
            PayloadKind::Text => format!("convert_to({p}, 'UTF8')"),
        };
        match self.cols.get("payload_bytes") {
            Some(b) => format!("COALESCE({}, {main}, ''::bytea)", b.sql),
            None => format!("COALESCE({main}, ''::bytea)"),
        }
    }

    /// The row key, qualified: select lists alias `id` to text, and ORDER BY would otherwise
    /// pick the alias and sort as text.
    pub fn key(&self) -> String {
        format!("{}.{}", self.table, self.cols["id"].sql)
    }

    pub fn id_type(&self) -> &str {
        &self.cols["id"].ty
    }

    /// The full select list of a dead-letter row.
    pub fn select_list(&self) -> String {
        [
            format!("{}::text AS id", self.cols["id"].sql),
            format!("{}::text AS message_id", self.cols["message_id"].sql),
            format!("{} AS body", self.body_expr()),
            self.expr("headers", "::jsonb", "jsonb"),
            self.expr("error", "::text", "text"),
            self.expr("attempts", "::int8", "int8"),
            self.expr("enqueued_at", "::timestamptz", "timestamptz"),
            self.expr("failed_at", "::timestamptz", "timestamptz"),
            self.expr("queue", "::text", "text"),
            self.expr("group_key", "::text", "text"),
        ]
        .join(", ")
    }

    /// Age column for "older than": first enqueue, else dead-letter time.
    pub fn age_expr(&self) -> Option<String> {
        match (self.cols.get("enqueued_at"), self.cols.get("failed_at")) {
            (Some(e), Some(f)) => Some(format!("COALESCE({}, {})", e.sql, f.sql)),
            (Some(c), None) | (None, Some(c)) => Some(c.sql.clone()),
            (None, None) => None,
        }
    }
}

/// Every key of the user's mapping must be a logical column of `spec`.
fn check_mapping_names(
    name: &str,
    spec: &[(&'static str, &'static str, bool)],
    mapping: &BTreeMap<String, String>,
    mapping_key: &str,
) -> Result<()> {
    for k in mapping.keys() {
        if !spec.iter().any(|(l, _, _)| l == k) {
            return Err(Error::Schema {
                table: name.to_string(),
                reason: format!(
                    "[{mapping_key}] maps unknown column `{k}` (known: {})",
                    spec.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
                ),
            });
        }
    }
    Ok(())
}

/// A table as the catalog names it.
struct Relation {
    oid: i64,
    schema: String,
    name: String,
}

/// Find the table `name` names (with the search_path), refusing a view or other relation.
async fn find_table(pool: &PgPool, name: &str) -> Result<Relation> {
    let row = sqlx::query(
        "SELECT c.oid::int8 AS oid, n.nspname::text AS schema, c.relname::text AS name, c.relkind::text AS kind
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE c.oid = to_regclass($1)",
    )
    .bind(name)
    .fetch_optional(pool)
    .await
    .map_err(|e| match e.as_database_error().and_then(|d| d.code()) {
        Some(c) if c == "42602" || c == "42601" => Error::InvalidAddress {
            input: name.to_string(),
            reason: "not a valid table name".into(),
        },
        _ => pg_err(name, e),
    })?
    .ok_or_else(|| Error::NotFound {
        what: format!("table `{name}`"),
        detail: "create it (docs/postgres.md has the DDL), or check table= and the search_path".into(),
    })?;
    let oid: i64 = row.try_get("oid").map_err(|e| pg_err(name, e))?;
    let schema: String = row.try_get("schema").map_err(|e| pg_err(name, e))?;
    let relname: String = row.try_get("name").map_err(|e| pg_err(name, e))?;
    let kind: String = row.try_get("kind").map_err(|e| pg_err(name, e))?;
    if !matches!(kind.as_str(), "r" | "p") {
        return Err(Error::Schema {
            table: name.to_string(),
            reason: "is not a table (a view or other relation); point table= at the table itself"
                .into(),
        });
    }
    Ok(Relation {
        oid,
        schema,
        name: relname,
    })
}

/// The table's columns by name, with their types and whether a value may be left out.
async fn read_columns(pool: &PgPool, name: &str, oid: i64) -> Result<BTreeMap<String, Column>> {
    let cols = sqlx::query(
        "SELECT a.attname::text AS name, format_type(a.atttypid, a.atttypmod) AS ty,
                a.attnotnull AS not_null, (a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '') AS has_default
           FROM pg_attribute a
          WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped",
    )
    .bind(oid)
    .fetch_all(pool)
    .await
    .map_err(|e| pg_err(name, e))?;
    let mut actual: BTreeMap<String, Column> = BTreeMap::new();
    for c in cols {
        let n: String = c.try_get("name").map_err(|e| pg_err(name, e))?;
        actual.insert(
            n.clone(),
            Column {
                sql: quote_ident(&n),
                ty: c.try_get("ty").map_err(|e| pg_err(name, e))?,
                not_null: c.try_get("not_null").map_err(|e| pg_err(name, e))?,
                has_default: c.try_get("has_default").map_err(|e| pg_err(name, e))?,
            },
        );
    }
    Ok(actual)
}

/// Each logical column of `spec` to the table's column: the mapped name, else the default
/// name. A required column, or a mapped one, that the table lacks is an error.
fn map_columns(
    display: &str,
    spec: &[(&'static str, &'static str, bool)],
    mapping: &BTreeMap<String, String>,
    mapping_key: &str,
    actual: &BTreeMap<String, Column>,
) -> Result<BTreeMap<&'static str, Column>> {
    let mut mapped = BTreeMap::new();
    for (logical, default, required) in spec {
        let explicit = mapping.get(*logical);
        let col_name = explicit.map(String::as_str).unwrap_or(default);
        match actual.get(col_name) {
            Some(c) => {
                mapped.insert(*logical, c.clone());
            }
            None if *required || explicit.is_some() => {
                return Err(Error::Schema {
                    table: display.to_string(),
                    reason: format!(
                        "has no column `{col_name}` for `{logical}`{}; its columns are {}. Map it with [{mapping_key}] {logical} = \"COLUMN\"",
                        if explicit.is_some() {
                            " (as mapped)"
                        } else {
                            ""
                        },
                        actual.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                });
            }
            None => {}
        }
    }
    Ok(mapped)
}

/// Read a table's row estimate and size.
pub async fn table_size(pool: &PgPool, l: &Layout) -> Result<(i64, i64)> {
    let row = sqlx::query(
        "SELECT pg_total_relation_size($1::int8::oid)::int8 AS bytes, GREATEST(c.reltuples, 0)::int8 AS estimate FROM pg_class c WHERE c.oid = $1::int8::oid",
    )
    .bind(l.oid as i64)
    .fetch_one(pool)
    .await
    .map_err(|e| pg_err(&l.display, e))?;
    Ok((
        row.try_get("bytes").unwrap_or(0),
        row.try_get("estimate").unwrap_or(0),
    ))
}
