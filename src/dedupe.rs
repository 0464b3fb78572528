//! The consumer's dedupe (inbox) table, as the commands see it: it lives in PostgreSQL
//! (`backend::postgres::dedupe`); a build without the `postgres` backend refuses it with a
//! clear error instead of failing to build.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::config::{
    DedupeConfig, Retention, default_dedupe_table, default_id_column, default_time_column,
};

#[cfg(feature = "postgres")]
pub use crate::backend::postgres::dedupe::DedupeTable;

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

/// Without the `postgres` backend there is no dedupe table: opening one says so, and no value
/// of this type exists.
#[cfg(not(feature = "postgres"))]
pub struct DedupeTable {
    pub display: String,
    never: std::convert::Infallible,
}

#[cfg(not(feature = "postgres"))]
impl DedupeTable {
    pub async fn open(_cfg: &DedupeConfig) -> crate::error::Result<DedupeTable> {
        Err(crate::error::Error::Unsupported {
            backend: "postgres",
            operation: "dedupe tables",
            reason: "dlqctl was built without the `postgres` backend, and the dedupe table lives in PostgreSQL".into(),
        })
    }

    pub fn id_column(&self) -> &str {
        match self.never {}
    }

    pub async fn uniqueness(&self) -> crate::error::Result<Uniqueness> {
        match self.never {}
    }

    pub async fn retention(&self) -> crate::error::Result<KnownRetention> {
        match self.never {}
    }

    pub async fn processed(
        &self,
        _ids: &[String],
    ) -> crate::error::Result<std::collections::HashSet<String>> {
        match self.never {}
    }
}
