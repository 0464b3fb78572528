//! Discovering retention from pg_cron jobs that prune a table.
//!
//! A job counts when its command deletes from the table (`DELETE FROM [schema.]table`) with an
//! age condition holding an interval literal (`interval '30 days'`, `'7d'::interval`); the
//! interval is read by PostgreSQL itself, so every spelling it accepts works.

use std::time::Duration;

use regex::Regex;
use sqlx::{PgPool, Row};

use super::pg_err;
use crate::error::Result;

#[derive(Clone, Debug)]
pub struct PruneJob {
    pub jobid: i64,
    pub schedule: String,
    pub command: String,
    pub retention: Option<Duration>,
}

impl PruneJob {
    pub fn describe(&self) -> String {
        match self.retention {
            Some(d) => format!(
                "pg_cron job {} ({}) deletes rows older than {}",
                self.jobid,
                self.schedule,
                crate::human::fmt_duration(d)
            ),
            None => format!(
                "pg_cron job {} ({}) deletes from it",
                self.jobid, self.schedule
            ),
        }
    }
}

/// The pg_cron job pruning `schema.table`, if any (the shortest retention when several).
pub async fn prune_jobs(pool: &PgPool, schema: &str, table: &str) -> Result<Option<PruneJob>> {
    // Without USAGE on schema cron even to_regclass fails: nothing is discoverable then.
    let has_cron: bool = match sqlx::query_scalar("SELECT to_regclass('cron.job') IS NOT NULL")
        .fetch_one(pool)
        .await
    {
        Ok(b) => b,
        Err(e)
            if e.as_database_error()
                .and_then(|d| d.code())
                .is_some_and(|c| c == "42501") =>
        {
            return Ok(None);
        }
        Err(e) => return Err(pg_err("pg_cron", e)),
    };
    if !has_cron {
        return Ok(None);
    }
    let rows = match sqlx::query("SELECT jobid::int8 AS jobid, schedule::text AS schedule, command::text AS command FROM cron.job WHERE active")
        .fetch_all(pool)
        .await
    {
        Ok(rows) => rows,
        // No permission to read cron.job: nothing discoverable, not an error.
        Err(e) if e.as_database_error().and_then(|d| d.code()).is_some_and(|c| c == "42501") => return Ok(None),
        Err(e) => return Err(pg_err("cron.job", e)),
    };
    let target = table_pattern(schema, table);
    let interval = Regex::new(r"(?i)interval\s*'([^']+)'|'([^']+)'\s*::\s*interval|make_interval\s*\(\s*days\s*=>\s*(\d+)\s*\)")
        .expect("static regex");
    let mut best: Option<PruneJob> = None;
    for r in rows {
        let command: String = r.try_get("command").unwrap_or_default();
        if !target.is_match(&command) {
            continue;
        }
        let mut retention = None;
        if let Some(c) = interval.captures(&command) {
            let lit = c
                .get(1)
                .or(c.get(2))
                .map(|m| m.as_str().to_string())
                .or_else(|| c.get(3).map(|d| format!("{} days", d.as_str())));
            if let Some(lit) = lit {
                let secs: Option<f64> =
                    sqlx::query_scalar("SELECT extract(epoch FROM $1::interval)::float8")
                        .bind(&lit)
                        .fetch_one(pool)
                        .await
                        .ok();
                retention = secs.filter(|s| *s > 0.0).map(Duration::from_secs_f64);
            }
        }
        let job = PruneJob {
            jobid: r.try_get("jobid").unwrap_or(0),
            schedule: r.try_get("schedule").unwrap_or_default(),
            command,
            retention,
        };
        best = match best {
            Some(b)
                if b.retention.is_some()
                    && (job.retention.is_none() || b.retention <= job.retention) =>
            {
                Some(b)
            }
            _ => Some(job),
        };
    }
    Ok(best)
}

fn table_pattern(schema: &str, table: &str) -> Regex {
    let t = regex::escape(table);
    let s = regex::escape(schema);
    Regex::new(&format!(
        r#"(?is)\bdelete\s+from\s+(only\s+)?(("?{s}"?)\s*\.\s*)?"?{t}"?(\s|;|$)"#
    ))
    .expect("escaped regex")
}

#[cfg(test)]
mod tests {
    use super::table_pattern;

    #[test]
    fn matches_delete_statements() {
        let p = table_pattern("public", "processed_messages");
        assert!(p.is_match(
            "DELETE FROM processed_messages WHERE handled_at < now() - interval '30 days'"
        ));
        assert!(p.is_match("delete from public.processed_messages where x"));
        assert!(p.is_match("DELETE FROM \"public\".\"processed_messages\" WHERE x"));
        assert!(!p.is_match("DELETE FROM processed_messages_archive WHERE x"));
        assert!(!p.is_match("DELETE FROM other.processed_messages WHERE x"));
    }
}
