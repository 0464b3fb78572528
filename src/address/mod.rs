//! Queue addresses: the URL forms of the spec, parsed once into typed values.
//!
//! | backend | forms |
//! |---|---|
//! | SQS | `sqs://NAME`, `https://sqs.REGION.amazonaws.com/ACCOUNT/NAME`, `arn:aws:sqs:REGION:ACCOUNT:NAME` |
//! | Kafka | `kafka://HOST:PORT[,HOST:PORT…]/TOPIC` |
//! | PostgreSQL | `postgres://USER@HOST:PORT/DB?table=SCHEMA.TABLE`, `…?system=NAME[&queue=NAME]` |
//! | Redis | `redis[s]://HOST:PORT/DB?system=sidekiq[&queue=…]`, `…?system=bullmq&queue=NAME` |
//! | RabbitMQ | `amqp[s]://USER@HOST:PORT/VHOST?queue=NAME`, `…?exchange=NAME&routing_key=KEY` (`backend/rabbitmq/address.rs`) |
//! | file | `file:PATH`, or a path ending in `.jsonl` / `.ndjson` (what `export` writes), `-` for stdin |

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::text::escape_controls;

mod display;
mod kafka;
mod postgres;
mod sqs;
// Redis job queues (Sidekiq, BullMQ): the form lives with the backend, compiled in every build.
#[path = "../backend/redis/address.rs"]
mod redis;

use kafka::parse_kafka;
use postgres::parse_postgres;
pub use redis::{RedisAddress, RedisSystem, SidekiqSet};
use sqs::{parse_sqs_arn, parse_sqs_url, validate_sqs_name};

#[derive(Clone, Debug, PartialEq)]
pub enum Address {
    Postgres(PgAddress),
    Sqs(SqsAddress),
    Kafka(KafkaAddress),
    File(FileAddress),
    /// Redis job queues: Sidekiq's dead set, BullMQ's failed jobs (`backend/redis/address.rs`).
    Redis(RedisAddress),
    // RabbitMQ (issue 27): its form is parsed and shown in backend/rabbitmq/address.rs.
    Rabbitmq(crate::backend::rabbitmq::address::AmqpAddress),
}

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

/// An address error: the input trimmed and redacted, and control characters in it and in the
/// reason escaped, so that the error stays on one line whatever was pasted or decoded.
/// (tests/it/bad_input.rs found `"postgre://h\n"` and `postgres://h/db?hostaddr=%0A` printing
/// a line break inside the error.)
fn invalid(input: &str, reason: &str) -> Error {
    Error::InvalidAddress {
        input: escape_controls(&redact(input.trim())),
        reason: escape_controls(reason),
    }
}

impl Address {
    /// Parse a URL form. Names from the config file are resolved before this is called.
    pub fn parse(input: &str) -> Result<Address> {
        let bad = |reason: &str| invalid(input, reason);
        let input = input.trim();
        if input.is_empty() {
            return Err(bad("empty"));
        }
        if input == "-" {
            return Ok(Address::File(FileAddress::Stdin));
        }
        if let Some(rest) = input.strip_prefix("file:") {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err(bad("file: needs a path, e.g. file:dlq-backup.jsonl"));
            }
            return Ok(Address::File(FileAddress::Path(PathBuf::from(path))));
        }
        if input.starts_with("arn:") {
            return parse_sqs_arn(input)
                .ok_or_else(|| bad("an SQS ARN looks like arn:aws:sqs:REGION:ACCOUNT:NAME"));
        }
        if !input.contains("://") {
            if input.ends_with(".jsonl") || input.ends_with(".ndjson") {
                return Ok(Address::File(FileAddress::Path(PathBuf::from(input))));
            }
            // Something that looks like a file: say how a file is named.
            if input.contains(['.', '/', '\\']) {
                return Err(bad(
                    "not a URL; a JSON Lines file is named FILE.jsonl (or .ndjson), or file:PATH for any other name",
                ));
            }
            return Err(bad("not a URL"));
        }
        let scheme = input
            .split("://")
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        match scheme.as_str() {
            "postgres" | "postgresql" => parse_postgres(input),
            "sqs" => {
                let name = &input["sqs://".len()..];
                let name = name.trim_end_matches('/');
                if name.is_empty() || name.contains('/') {
                    return Err(bad("sqs://NAME takes a bare queue name"));
                }
                validate_sqs_name(name).map_err(|r| bad(&r))?;
                Ok(Address::Sqs(SqsAddress {
                    name: name.to_string(),
                    url: None,
                    region: None,
                    account: None,
                }))
            }
            "kafka" => parse_kafka(input),
            // RabbitMQ (issue 27).
            "amqp" | "amqps" => {
                crate::backend::rabbitmq::address::parse(input).map(Address::Rabbitmq)
            }
            "http" | "https" => parse_sqs_url(input),
            "redis" | "rediss" => redis::parse_redis(input),
            other => Err(bad(&format!(
                "unknown scheme `{other}` (expected sqs, kafka, postgres, redis, amqp or file)"
            ))),
        }
    }

    pub fn backend_name(&self) -> &'static str {
        match self {
            Address::Postgres(_) => "postgres",
            Address::Sqs(_) => "sqs",
            Address::Kafka(_) => "kafka",
            Address::File(_) => "file",
            Address::Redis(_) => "redis",
            Address::Rabbitmq(_) => "rabbitmq",
        }
    }

    /// Why a redrive cannot read this address, where it names a slice of its queue (Kafka's
    /// `from`/`to`/`since`/`until`): a redrive continues from where the last one stopped, and a
    /// slice is for reading and replaying.
    pub fn redrive_slice_refusal(&self) -> Option<&'static str> {
        match self {
            Address::Kafka(k)
                if k.range.from.is_some()
                    || k.range.to.is_some()
                    || k.range.since.is_some()
                    || k.range.until.is_some() =>
            {
                Some(
                    "a Kafka redrive continues from the redrive group's committed offsets; from/to/since/until slice peek, export and replay",
                )
            }
            _ => None,
        }
    }

    /// The same queue, read only in `partition` (where the queue has partitions: Kafka), so
    /// that a move of one message reads and settles nothing elsewhere.
    pub fn confined_to_partition(&mut self, partition: i32) {
        if let Address::Kafka(k) = self {
            k.range.partition = Some(partition);
        }
    }
}

pub use crate::secrets::redact;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_unknown() {
        assert_eq!(
            Address::parse("backup.jsonl").unwrap(),
            Address::File(FileAddress::Path("backup.jsonl".into()))
        );
        assert_eq!(
            Address::parse("-").unwrap(),
            Address::File(FileAddress::Stdin)
        );
        let e = Address::parse("resque://h/q").unwrap_err();
        assert!(e.to_string().contains("unknown scheme"));
    }

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
