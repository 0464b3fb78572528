//! The consumer's dedupe (inbox) table, as the commands see it: a [`Table`] to ask, and what it
//! answers. It lives in PostgreSQL (the PostgreSQL backend implements [`Table`]; the commands
//! open it through the settings); a build without the `postgres` backend refuses it with a
//! clear error instead of failing to build.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::config::{
    DedupeConfig, Retention, default_dedupe_table, default_id_column, default_time_column,
};
use crate::error::Result;

/// A config for a bare `--dedupe URL`.
pub fn config_for_url(url: &str) -> DedupeConfig {
    DedupeConfig {
        url: url.to_string(),
        table: default_dedupe_table(),
        id_column: default_id_column(),
        time_column: default_time_column(),
        retention: None,
    }
}

/// How the id column is protected against a second insert.
#[derive(Debug, Clone, PartialEq)]
pub enum Uniqueness {
    /// A primary key or unique index on exactly the id column.
    Unique {
        index: String,
        primary: bool,
    },
    /// Unique only together with other columns, or only for some rows.
    Partial {
        index: String,
        why: String,
    },
    None,
}

/// How long ids are kept, and how dlqctl knows.
#[derive(Debug, Clone)]
pub enum KnownRetention {
    Declared(Retention),
    Discovered {
        retention: Retention,
        how: String,
    },
    /// Only a lower bound: the oldest row's age.
    AtLeast {
        age: Duration,
        oldest: DateTime<Utc>,
    },
    Unknown(String),
}

/// A dedupe table, open.
#[async_trait::async_trait]
pub trait Table: Send + Sync {
    /// The table as shown: `schema.name`.
    fn display(&self) -> &str;
    fn id_column(&self) -> &str;
    /// Check 2: a primary key or unique index on exactly the id column.
    async fn uniqueness(&self) -> Result<Uniqueness>;
    /// Check 3: declared, discovered (pg_cron prune job, expiry column), or a lower bound.
    async fn retention(&self) -> Result<KnownRetention>;
    /// Which of `ids` are recorded as processed.
    async fn processed(&self, ids: &[String]) -> Result<HashSet<String>>;
}
