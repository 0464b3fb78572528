//! Queue addresses: the URL forms of the spec, parsed once into typed values.
//!
//! The backends and their schemes are one list, `registry.rs`; each backend's form is its own
//! file (its address type, parse function, `--help` lines, and [`Form`]: how it is shown):
//! here `sqs.rs`, `kafka.rs`, `postgres.rs` (with `pgconn.rs`), `file.rs` (JSON Lines), and
//! in the backend's own folder `backend/redis/address.rs` and `backend/rabbitmq/address.rs`,
//! which are compiled in every build (an address parses whatever backends were built).
//! `form.rs` is what every form implements, below them all.

use std::path::PathBuf;

mod file;
pub mod form;
mod kafka;
mod postgres;
mod registry;
mod sqs;

pub use form::Form;
pub use registry::{Address, BACKENDS, Backend};

#[derive(Clone, Debug, PartialEq)]
pub struct PgAddress {
    /// The connection (dlqctl's own parameters removed).
    pub conn: crate::pgconn::PgConn,
    pub target: PgTarget,
    /// `queue=NAME`: the slice of a shared table (its `queue` column), or of a job system.
    pub queue: Option<String>,
    /// `source=SCHEMA.TABLE`: the queue table a generic dead-letter table redrives into.
    pub source_table: Option<String>,
    /// `schema=NAME`: where a job system's tables live, when not its default schema.
    pub schema: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum PgTarget {
    /// A table in the generic layout (`docs/postgres.md`).
    Table(String),
    /// The dead jobs of a known job system.
    System(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct SqsAddress {
    pub name: String,
    /// A full queue URL when one was given (AWS or an emulator).
    pub url: Option<String>,
    pub region: Option<String>,
    pub account: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct KafkaAddress {
    pub brokers: Vec<String>,
    pub topic: String,
    /// `?partition=P&from=OFFSET&to=OFFSET&since=TIME&until=TIME`: a slice of the topic (for
    /// peek, export and replay). `to` and `until` are exclusive.
    pub range: KafkaRange,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct KafkaRange {
    pub partition: Option<i32>,
    pub from: Option<i64>,
    pub to: Option<i64>,
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    pub until: Option<chrono::DateTime<chrono::Utc>>,
}

impl KafkaRange {
    pub fn is_empty(&self) -> bool {
        *self == KafkaRange::default()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum FileAddress {
    Path(PathBuf),
    Stdin,
}

/// A PostgreSQL job system dlqctl knows. This is the one list: address parsing, `--help`, and
/// the backend's detection (`backend::postgres::systems`, one file per system) all read it.
pub struct JobSystem {
    /// `?system=NAME`.
    pub name: &'static str,
    /// The schema its tables are in unless `&schema=` says otherwise (None: not configurable;
    /// pgmq's tables are in schema `pgmq`, one per `&queue=`).
    pub default_schema: Option<&'static str>,
}

pub const JOB_SYSTEMS: &[JobSystem] = &[
    JobSystem {
        name: "river",
        default_schema: Some("public"),
    },
    JobSystem {
        name: "oban",
        default_schema: Some("public"),
    },
    JobSystem {
        name: "pgmq",
        default_schema: None,
    },
    JobSystem {
        name: "graphile-worker",
        default_schema: Some("graphile_worker"),
    },
    JobSystem {
        name: "solid_queue",
        default_schema: Some("public"),
    },
    JobSystem {
        name: "good_job",
        default_schema: Some("public"),
    },
    JobSystem {
        name: "que",
        default_schema: Some("public"),
    },
    JobSystem {
        name: "pg-boss",
        default_schema: Some("pgboss"),
    },
];

/// The job systems' names, in the list's order.
pub fn job_system_names() -> impl Iterator<Item = &'static str> {
    JOB_SYSTEMS.iter().map(|s| s.name)
}

/// The job system called `name`.
pub fn job_system(name: &str) -> Option<&'static JobSystem> {
    JOB_SYSTEMS.iter().find(|s| s.name == name)
}

pub use crate::secrets::redact;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction() {
        assert_eq!(redact("postgres://a:b@h/d"), "postgres://a:***@h/d");
        assert_eq!(
            redact("postgres://a:b@h:99999/d"),
            "postgres://a:***@h:99999/d"
        );
        assert_eq!(redact("postgres://a@h/d"), "postgres://a@h/d");
    }
}
