//! The backends as addresses know them: one entry each, the one list that `Address::parse`,
//! `backend_name`, how an address is shown, the unknown-scheme error and `--help` read
//! (object_store's `parse_url`, or [`JOB_SYSTEMS`](super::JOB_SYSTEMS) for job systems).
//!
//! An entry gives the backend's `Address` variant and address type (the type implements
//! [`Form`]: its `Display`, `brief`, …), its name (and cargo feature), the URL schemes it
//! claims, whether this build has it, its docs page, its parse function and its `--help`
//! lines. How a backend opens is the other half of its registration,
//! `backend::OPENERS`: opening names the backend's code, which sits above this layer
//! (docs/architecture.md, "Adding a backend").

use std::fmt;

use super::form::{Form, invalid};
use super::{FileAddress, KafkaAddress, PgAddress, SqsAddress};
use crate::backend::rabbitmq::address::AmqpAddress;
use crate::backend::redis::address::RedisAddress;
use crate::error::Result;

/// One backend, as its addresses know it.
pub struct Backend {
    /// Its name: its cargo feature, `inspect`'s `backend`, the not-built error.
    pub name: &'static str,
    /// What an address of it starts with (`sqs://`, `arn:`), matched without regard to case.
    /// The first is the scheme the unknown-scheme error names.
    pub schemes: &'static [&'static str],
    /// The cargo feature it is built with (its name), or None where every build has it.
    pub feature: Option<&'static str>,
    /// Whether this build has the backend (`cfg!` of its feature). A build without it still
    /// parses its addresses, and `backend::open` says it was not built.
    pub built: bool,
    /// Its page, from the repository's root.
    pub docs: &'static str,
    /// One address of each scheme, in the order of `schemes` (the round-trip test).
    #[cfg_attr(not(test), allow(dead_code))]
    examples: &'static [&'static str],
    /// Its forms as `--help` lists them.
    pub usage: fn() -> String,
    /// Also the input that has no scheme (a file's path, `-`; one backend at most).
    bare: bool,
    parse: fn(&str) -> Result<Address>,
}

/// The registry: `Variant(AddressType) { … }`, one entry per backend, in the order errors and
/// `--help` list them. The macro makes the `Address` enum, [`BACKENDS`] and the dispatch of
/// [`Address::form`] from the same entries, so that none can be left out.
macro_rules! backends {
    ($(
        $(#[$doc:meta])*
        $variant:ident($ty:ty) {
            name: $name:literal,
            schemes: [$($scheme:literal),+ $(,)?],
            feature: $feature:expr,
            built: $built:expr,
            docs: $docs:literal,
            examples: [$($example:literal),+ $(,)?],
            usage: $usage:path,
            bare: $bare:literal,
            parse: $parse:path $(,)?
        }
    )*) => {
        /// A queue address, parsed once: one variant per registered backend.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Address {
            $($(#[$doc])* $variant($ty),)*
        }

        /// The registered backends.
        pub const BACKENDS: &[Backend] = &[$(Backend {
            name: $name,
            schemes: &[$($scheme),+],
            feature: $feature,
            built: $built,
            docs: $docs,
            examples: &[$($example),+],
            usage: $usage,
            bare: $bare,
            parse: |input| $parse(input).map(Address::$variant),
        },)*];

        impl Address {
            /// The backend's own address: how it is shown, its short name, its questions.
            pub fn form(&self) -> &dyn Form {
                match self {
                    $(Address::$variant(a) => a,)*
                }
            }

            fn form_mut(&mut self) -> &mut dyn Form {
                match self {
                    $(Address::$variant(a) => a,)*
                }
            }

            /// The backend's name (its registry entry's).
            pub fn backend_name(&self) -> &'static str {
                match self {
                    $(Address::$variant(_) => $name,)*
                }
            }
        }
    };
}

backends! {
    Sqs(SqsAddress) {
        name: "sqs",
        schemes: ["sqs://", "https://", "http://", "arn:"],
        feature: Some("sqs"),
        built: cfg!(feature = "sqs"),
        docs: "docs/sqs.md",
        examples: [
            "sqs://orders-dlq",
            "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq",
            "http://localhost:4566/000000000000/orders-dlq.fifo",
            "arn:aws:sqs:us-east-1:123456789012:orders-dlq",
        ],
        usage: super::sqs::usage,
        bare: false,
        parse: super::sqs::parse,
    }
    Kafka(KafkaAddress) {
        name: "kafka",
        schemes: ["kafka://"],
        feature: Some("kafka"),
        built: cfg!(feature = "kafka"),
        docs: "docs/kafka.md",
        examples: ["kafka://b1:9092,b2:9092/orders.DLT?partition=2&from=10"],
        usage: super::kafka::usage,
        bare: false,
        parse: super::kafka::parse,
    }
    Postgres(PgAddress) {
        name: "postgres",
        schemes: ["postgres://", "postgresql://"],
        feature: Some("postgres"),
        built: cfg!(feature = "postgres"),
        docs: "docs/postgres.md",
        examples: [
            "postgres://app@db:5433/app?table=ops.dead_letters&source=ops.jobs",
            "postgresql://app@db/app?system=oban&queue=mailers",
        ],
        usage: super::postgres::usage,
        bare: false,
        parse: super::postgres::parse,
    }
    /// Redis job queues: Sidekiq's dead set, BullMQ's failed jobs.
    Redis(RedisAddress) {
        name: "redis",
        schemes: ["redis://", "rediss://"],
        feature: Some("redis"),
        built: cfg!(feature = "redis"),
        docs: "docs/systems/sidekiq.md",
        examples: [
            "redis://127.0.0.1:6379/0?system=sidekiq&queue=mailers",
            "rediss://cache:6380/2?system=bullmq&queue=emails",
        ],
        usage: crate::backend::redis::address::usage,
        bare: false,
        parse: crate::backend::redis::address::parse,
    }
    Rabbitmq(AmqpAddress) {
        name: "rabbitmq",
        schemes: ["amqp://", "amqps://"],
        feature: Some("rabbitmq"),
        built: cfg!(feature = "rabbitmq"),
        docs: "docs/rabbitmq.md",
        examples: [
            "amqp://app@mq:5672/%2F?queue=orders.dlq",
            "amqps://app@mq:5671/prod?exchange=orders&routing_key=created",
        ],
        usage: crate::backend::rabbitmq::address::usage,
        bare: false,
        parse: crate::backend::rabbitmq::address::parse,
    }
    File(FileAddress) {
        name: "file",
        schemes: ["file:"],
        feature: None,
        built: true,
        docs: "docs/jsonl.md",
        examples: ["file:dlq-backup.txt"],
        usage: super::file::usage,
        bare: true,
        parse: super::file::parse,
    }
}

impl Backend {
    /// The scheme errors name it by: the first, without its `://` or `:`.
    pub fn scheme(&self) -> &'static str {
        let s = self.schemes[0];
        s.strip_suffix("://")
            .or_else(|| s.strip_suffix(':'))
            .unwrap_or(s)
    }

    /// The registered backend called `name`.
    pub fn named(name: &str) -> Option<&'static Backend> {
        BACKENDS.iter().find(|b| b.name == name)
    }

    /// An address of it (tests).
    #[cfg(test)]
    pub fn example(&self) -> &'static str {
        self.examples[0]
    }

    fn claims(&self, input: &str) -> bool {
        self.schemes.iter().any(|s| {
            input
                .get(..s.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(s))
        })
    }
}

/// The registered schemes as the unknown-scheme error lists them: `sqs, kafka … or file`.
fn expected() -> String {
    let names: Vec<&str> = BACKENDS.iter().map(Backend::scheme).collect();
    match names.split_last() {
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

impl Address {
    /// Parse a URL form. Names from the config file are resolved before this is called.
    pub fn parse(input: &str) -> Result<Address> {
        let bad = |reason: &str| invalid(input, reason);
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return Err(bad("empty"));
        }
        if let Some(b) = BACKENDS.iter().find(|b| b.claims(trimmed)) {
            // A file's name may hold a `?`: only URLs have parameters.
            if !b.bare {
                super::form::refuse_repeated_parameter(trimmed)?;
            }
            return (b.parse)(trimmed);
        }
        if !trimmed.contains("://") {
            return match BACKENDS.iter().find(|b| b.bare) {
                Some(b) => (b.parse)(trimmed),
                None => Err(bad("not a URL")),
            };
        }
        let scheme = trimmed.split("://").next().unwrap_or_default();
        Err(bad(&format!(
            "unknown scheme `{}` (expected {})",
            scheme.to_ascii_lowercase(),
            expected()
        )))
    }

    /// A short name for a narrow table (the backend's [`Form::brief`]).
    pub fn brief(&self) -> String {
        self.form().brief()
    }

    /// The address as a record keeps it (the backend's [`Form::recorded`]).
    pub fn recorded(&self) -> String {
        self.form().recorded()
    }

    /// Why a redrive cannot read this address ([`Form::redrive_slice_refusal`]).
    pub fn redrive_slice_refusal(&self) -> Option<&'static str> {
        self.form().redrive_slice_refusal()
    }

    /// The same queue, read only in `partition` ([`Form::confine_to_partition`]).
    pub fn confined_to_partition(&mut self, partition: i32) {
        self.form_mut().confine_to_partition(partition);
    }
}

/// Shown as its backend shows it, secrets left out.
impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.form(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generic hint of a bad address (error.rs, below this layer) shows every backend's
    /// first form: a backend added to the table without it fails here.
    #[test]
    fn the_bad_address_hint_names_every_backend() {
        let e = crate::error::Error::InvalidAddress {
            input: "x".into(),
            reason: "y".into(),
        };
        let hint = e.hints().join(" ");
        for b in BACKENDS {
            let form = if b.schemes[0] == "file:" {
                ".jsonl"
            } else {
                b.schemes[0]
            };
            assert!(hint.contains(form), "the hint does not show {form}: {hint}");
        }
    }

    #[test]
    fn every_scheme_parses_and_displays_round_trip() {
        for b in BACKENDS {
            assert_eq!(
                b.schemes.len(),
                b.examples.len(),
                "{}: one example a scheme",
                b.name
            );
            for (scheme, example) in b.schemes.iter().zip(b.examples) {
                assert!(example.starts_with(scheme), "{example} is not {scheme}");
                let a = Address::parse(example).unwrap_or_else(|e| panic!("{example}: {e}"));
                assert_eq!(a.backend_name(), b.name, "{example}");
                let shown = a.to_string();
                assert_eq!(
                    Address::parse(&shown).unwrap(),
                    a,
                    "{example} shown as {shown}"
                );
                assert!(!a.brief().is_empty(), "{example}");
                // Upper case claims it too.
                let upper = format!(
                    "{}{}",
                    scheme.to_ascii_uppercase(),
                    &example[scheme.len()..]
                );
                assert_eq!(Address::parse(&upper).unwrap().backend_name(), b.name);
            }
        }
    }

    #[test]
    fn unknown_scheme_lists_exactly_the_registered_schemes() {
        let e = Address::parse("resque://h/q").unwrap_err().to_string();
        let list = e
            .split("(expected ")
            .nth(1)
            .and_then(|s| s.split(')').next())
            .unwrap_or_else(|| panic!("{e}"));
        let listed: Vec<&str> = list
            .split([',', ' '])
            .filter(|w| !w.is_empty() && *w != "or")
            .collect();
        let registered: Vec<&str> = BACKENDS.iter().map(Backend::scheme).collect();
        assert_eq!(listed, registered, "{e}");
        assert_eq!(list, "sqs, kafka, postgres, redis, amqp or file");
    }

    #[test]
    fn every_backend_has_its_docs_page_and_help() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for b in BACKENDS {
            assert!(root.join(b.docs).is_file(), "{}: no {}", b.name, b.docs);
            let usage = (b.usage)();
            assert!(usage.contains(b.scheme()), "{}: {usage}", b.name);
        }
        for b in BACKENDS {
            // The not-built error names the backend: its feature has its name.
            assert!(b.feature.is_none_or(|f| f == b.name), "{}", b.name);
            assert!(b.feature.is_some() || b.built, "{}", b.name);
        }
        let mut names: Vec<&str> = BACKENDS.iter().map(|b| b.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), BACKENDS.len(), "two backends share a name");
        assert_eq!(BACKENDS.iter().filter(|b| b.bare).count(), 1);
    }

    /// The last of two values does not silently win, whatever the backend.
    #[test]
    fn every_url_backend_refuses_a_repeated_parameter() {
        for input in [
            "sqs://orders-dlq?x=1&x=2",
            "kafka://b1:9092/orders.DLT?partition=1&partition=2",
            "postgres://app@db/app?table=a&table=b",
            "redis://127.0.0.1:6379/0?system=sidekiq&queue=default&queue=nope",
            "amqp://app@mq/%2F?queue=a&queue=b",
        ] {
            let e = Address::parse(input).expect_err(input);
            assert_eq!(e.exit_code(), 2, "{input}: {e}");
            assert!(e.to_string().contains("is given twice"), "{input}: {e}");
        }
        // A file's name is not a URL.
        assert!(Address::parse("file:a?x=1&x=2.jsonl").is_ok());
    }

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
        assert!(
            Address::parse("kafka:x")
                .unwrap_err()
                .to_string()
                .contains("not a URL")
        );
        assert!(
            Address::parse("  ")
                .unwrap_err()
                .to_string()
                .contains("empty")
        );
    }

    #[test]
    fn brief_names_and_recorded_paths() {
        let pg = Address::parse("postgres://u:pw@h:5432/app?table=ops.dead_letters&source=ops.q")
            .unwrap();
        assert_eq!(pg.brief(), "app: ops.dead_letters");
        let sqs = Address::parse("https://sqs.eu-west-1.amazonaws.com/123/orders-dlq").unwrap();
        assert_eq!(sqs.brief(), "orders-dlq");
        let kafka = Address::parse("kafka://b1:9092,b2:9092/orders.DLT").unwrap();
        assert_eq!(kafka.brief(), "orders.DLT");
        let file = Address::parse("poison.jsonl").unwrap();
        assert_eq!(file.brief(), "poison.jsonl");
        let recorded = file.recorded();
        assert!(
            recorded.starts_with("file:/") && recorded.ends_with("/poison.jsonl"),
            "{recorded}"
        );
        assert_eq!(kafka.recorded(), kafka.to_string());
    }
}
