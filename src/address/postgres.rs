//! The PostgreSQL form: `postgres://USER@HOST:PORT/DB?table=SCHEMA.TABLE` or
//! `…?system=NAME[&queue=NAME]`, and what a parsed one answers.

use super::form::{Form, invalid};
use super::{PgAddress, PgTarget, job_system, job_system_names};
use crate::error::Result;

/// The forms as `--help` lists them (the job systems from the one list).
pub(super) fn usage() -> String {
    let systems = job_system_names().collect::<Vec<_>>().join("|");
    format!(
        "postgres://USER@HOST:PORT/DB?table=SCHEMA.TABLE[&queue=NAME][&source=SCHEMA.TABLE]\n\
         postgres://USER@HOST:PORT/DB?system={systems}[&queue=NAME]"
    )
}

/// Query parameters that belong to dlqctl, not to the database driver.
const PG_OWN_PARAMS: &[&str] = &["table", "system", "queue", "source", "schema"];

pub(super) fn parse(input: &str) -> Result<PgAddress> {
    let bad = |reason: String| invalid(input, &reason);
    let (conn, own) = crate::pgconn::PgConn::parse(input, PG_OWN_PARAMS).map_err(bad)?;
    let mut table = None;
    let mut system = None;
    let mut queue = None;
    let mut source = None;
    let mut schema = None;
    for (k, v) in own {
        let slot = match k.as_str() {
            "table" => &mut table,
            "system" => &mut system,
            "queue" => &mut queue,
            "source" => &mut source,
            _ => &mut schema,
        };
        *slot = Some(v);
    }
    let target = match (table, system) {
        (Some(_), Some(_)) => return Err(bad("give either table= or system=, not both".into())),
        (None, None) => {
            return Err(bad(format!(
                "say what to read: ?table=SCHEMA.TABLE for a dead-letter table, or ?system={}",
                job_system_names().collect::<Vec<_>>().join("|")
            )));
        }
        (Some(t), None) => {
            validate_table_name(&t).map_err(bad)?;
            PgTarget::Table(t)
        }
        (None, Some(s)) => {
            let s = s
                .to_ascii_lowercase()
                .replace("graphile_worker", "graphile-worker")
                .replace("pg_boss", "pg-boss");
            if job_system(&s).is_none() {
                let hint = crate::text::closest(&s, job_system_names())
                    .map(|c| format!("did you mean `{c}`? "))
                    .unwrap_or_default();
                return Err(bad(format!(
                    "unknown system `{s}` ({hint}known: {})",
                    job_system_names().collect::<Vec<_>>().join(", ")
                )));
            }
            PgTarget::System(s)
        }
    };
    if let Some(s) = &source {
        validate_table_name(s).map_err(bad)?;
    }
    if let Some(s) = &schema
        && (s.is_empty() || s.len() > 63 || s.chars().any(|c| c.is_control()))
    {
        return Err(bad(format!("`{s}` is not a schema name")));
    }
    Ok(PgAddress {
        conn,
        target,
        queue,
        source_table: source,
        schema,
    })
}

/// `SCHEMA.TABLE` or `TABLE`, each part a plain or quoted identifier. The name is only ever
/// passed to `to_regclass()` as a bound parameter; this check exists to give a clear error early.
fn validate_table_name(t: &str) -> std::result::Result<(), String> {
    if t.is_empty() {
        return Err("table= is empty".into());
    }
    if t.len() > 130 || t.chars().any(|c| c.is_control() || c == ';') {
        return Err(format!("`{t}` is not a table name"));
    }
    Ok(())
}

impl PgAddress {
    pub fn table(&self) -> Option<&str> {
        match &self.target {
            PgTarget::Table(t) => Some(t),
            PgTarget::System(_) => None,
        }
    }

    /// The same connection, another table.
    pub fn with_table(&self, table: &str) -> PgAddress {
        PgAddress {
            conn: self.conn.clone(),
            target: PgTarget::Table(table.to_string()),
            queue: None,
            source_table: None,
            schema: None,
        }
    }
}

/// The connection (its password redacted) and dlqctl's own parameters.
impl std::fmt::Display for PgAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut extra: Vec<(&str, &str)> = Vec::new();
        match &self.target {
            PgTarget::Table(t) => extra.push(("table", t)),
            PgTarget::System(name) => extra.push(("system", name)),
        }
        if let Some(s) = &self.schema {
            extra.push(("schema", s));
        }
        if let Some(q) = &self.queue {
            extra.push(("queue", q));
        }
        if let Some(s) = &self.source_table {
            extra.push(("source", s));
        }
        f.write_str(&self.conn.display_with(&extra))
    }
}

impl Form for PgAddress {
    /// The database and table (or job system and queue).
    fn brief(&self) -> String {
        let db = self.conn.dbname.as_deref().or(self.conn.service.as_deref());
        let what = match &self.target {
            PgTarget::Table(t) => t.clone(),
            PgTarget::System(s) => match &self.queue {
                Some(q) => format!("{s} queue {q}"),
                None => s.clone(),
            },
        };
        match db {
            Some(db) => format!("{db}: {what}"),
            None => what,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::Address;

    #[test]
    fn postgres_table_and_params() {
        let a =
            Address::parse("postgres://app:s3cret@db:5433/app?table=public.dlq&sslmode=require")
                .unwrap();
        let Address::Postgres(p) = &a else { panic!() };
        assert_eq!(p.table(), Some("public.dlq"));
        assert_eq!(
            p.conn.params,
            vec![("sslmode".to_string(), "require".to_string())]
        );
        let shown = a.to_string();
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("table=public.dlq"));
        let a = Address::parse(
            "postgres://app@db/app?system=river&schema=ux_river&password=s3cret&queue=mail",
        )
        .unwrap();
        assert_eq!(
            a.to_string(),
            "postgres://app:***@db/app?system=river&schema=ux_river&queue=mail"
        );
    }

    #[test]
    fn postgres_needs_table_or_system() {
        let e = Address::parse("postgres://u:pw@h/db").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(!e.to_string().contains("pw@"), "{e}");
        assert!(Address::parse("postgres://u@h/db?system=sidekiq").is_err());
        assert!(Address::parse("postgres://u@h/db?system=river&table=x").is_err());
        assert!(Address::parse("postgres://u@h/a/b?table=x").is_err());
        // A socket connection, and one that takes everything from the environment.
        assert!(
            Address::parse("postgres://postgres@/app?host=/var/run/postgresql&table=x").is_ok()
        );
        assert!(Address::parse("postgres:///app?table=x").is_ok());
        let Address::Postgres(p) =
            Address::parse("postgres://u@h/db?system=oban&queue=mail").unwrap()
        else {
            panic!()
        };
        assert_eq!(p.target, PgTarget::System("oban".into()));
        assert_eq!(p.queue.as_deref(), Some("mail"));
    }
}
