//! The resolve step: raw arguments plus config plus environment become typed settings. Nothing
//! below this layer sees clap, and nothing above it builds SQL or API calls.

use std::collections::HashSet;
use std::path::Path;

use regex::Regex;

use crate::address::Address;
use crate::backend::{AwsOptions, OpenOptions};
use crate::config::{Config, QueueConfig, parse_duration};
use crate::error::{Error, Result};
use crate::filter::Filter;
pub use crate::interrupt::{Interrupt, Phase};
use crate::output::Printer;

/// Everything a command runs with.
pub struct Ctx {
    pub printer: Printer,
    pub config: Config,
    pub aws: AwsOptions,
    pub interrupt: Interrupt,
    /// How queues are opened (the real backends; in unit tests, in-memory queues).
    pub opener: crate::backend::Opener,
    /// `--reason`: why this run changes something (the audit trail).
    pub reason: Option<String>,
}

impl Ctx {
    /// `[audit] require_reason` without `--reason`: exit 2. A changing command checks this
    /// first, before it reads anything, shows a plan or asks.
    pub fn require_reason(&self) -> Result<()> {
        if self.config.audit.require_reason && self.reason.is_none() {
            return Err(crate::error::Error::invalid_arg(
                "--reason",
                format!(
                    "[audit] require_reason is set in {}",
                    self.config.file_name()
                ),
            )
            .hinted("say why with --reason TEXT"));
        }
        Ok(())
    }

    /// Say what reading `b` does to its messages, where a read has a side effect (an SQS
    /// receive, a RabbitMQ consumer). Called once the read has begun (its stream or session
    /// opened), after every check that can refuse the command: a command refused without
    /// reading says nothing of it.
    pub fn warn_reading(&self, b: &dyn crate::backend::QueueBackend) {
        if let Some(effect) = b.capabilities().read_side_effect {
            self.printer
                .warn(&format!("reading {} {effect}", b.address()));
        }
    }

    /// Start the audit of a changing run: the intent record is written before anything
    /// changes (`[audit] require_reason` without `--reason` is exit 2, before that).
    pub async fn audit(
        &self,
        command: &str,
        source: &QueueRef,
        targets: Vec<String>,
        filter: String,
    ) -> Result<crate::audit::Audit> {
        self.require_reason()?;
        crate::audit::Audit::begin(
            open_audit_table(&self.config.audit),
            crate::audit::log_path(&self.config.audit, self.aws.state_dir.as_deref()),
            crate::audit::Intent {
                record: String::new(),
                run: String::new(),
                time: chrono::Utc::now(),
                user: crate::operator::user(),
                host: crate::operator::host(),
                version: env!("CARGO_PKG_VERSION").into(),
                command: command.into(),
                argv: crate::audit::redacted_argv(),
                queue: source.name.clone(),
                source: source.address.recorded(),
                targets,
                filter,
                reason: self.reason.clone(),
            },
            self.printer.stderr(),
        )
        .await
    }
}

impl Ctx {
    /// A queue named on the command line (see [`resolve_queue`]).
    pub fn queue(&self, arg: &str) -> Result<QueueRef> {
        resolve_queue(&self.config, &self.aws, arg)
    }

    /// A redrive/replay target (see [`resolve_target`]).
    pub fn target(&self, arg: &str, source: &QueueRef) -> Result<(Address, OpenOptions)> {
        resolve_target(&self.config, &self.aws, arg, source)
    }
}

/// Read dlqctl's own environment variables, once, into the settings the backends take (no
/// backend reads the environment itself): `DLQCTL_SQS_WAIT_SECONDS` (an SQS receive's long
/// poll, 0-20 s, default 2), `DLQCTL_STATE_DIR` (where the SQS journal lives),
/// `DLQCTL_KAFKA_IDLE_MS` (how long a Kafka read waits on a silent partition, default 3000) and
/// `DLQCTL_JQ_BUDGET_MS` (how long a `--where` or `--transform` may take on one message,
/// default 1000). `DLQCTL_SQS_HOLD_LIMIT` lowers the number of SQS messages a run holds in
/// flight before it stops taking more (default 110,000, under SQS's limit of about 120,000 per
/// queue): for tests only, which cannot put 120,000 messages into the emulator (undocumented
/// for users).
/// A value that is not a number, or out of range, is warned about (the default, or the nearest
/// value allowed, applies), never taken silently.
pub fn from_environment(aws: &mut AwsOptions, config: &mut Config) {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let wait = "DLQCTL_SQS_WAIT_SECONDS";
    aws.wait_seconds = match number::<i64>(wait, "a number of seconds, 0-20", "2") {
        Some(n) if !(0..=20).contains(&n) => {
            let used = n.clamp(0, 20);
            tracing::warn!(
                "{wait}={n} is outside what SQS allows for a receive's wait (0-20 seconds): {used} is used"
            );
            used as i32
        }
        Some(n) => n as i32,
        None => 2,
    };
    aws.state_dir = var("DLQCTL_STATE_DIR").map(std::path::PathBuf::from);
    aws.hold_limit = number("DLQCTL_SQS_HOLD_LIMIT", "a number of messages", "110000");
    config.kafka.read_idle = number("DLQCTL_KAFKA_IDLE_MS", "a number of milliseconds", "3000")
        .map(std::time::Duration::from_millis);
    if let Some(ms) = number::<u64>("DLQCTL_JQ_BUDGET_MS", "a number of milliseconds", "1000") {
        crate::query::set_default_budget(std::time::Duration::from_millis(ms.max(1)));
    }
}

/// The number in dlqctl's environment variable `k`, where it is set to one; where it is set to
/// something else, a warning saying what it takes (`what`) and that the default applies.
fn number<T: std::str::FromStr>(k: &str, what: &str, default: &str) -> Option<T> {
    let v = std::env::var(k).ok().filter(|v| !v.trim().is_empty())?;
    let n = v.trim().parse::<T>().ok();
    if n.is_none() {
        tracing::warn!("{k}={v:?} is not {what}: the default ({default}) is used");
    }
    n
}

/// The audit table of `[audit] url`, where one is configured (in PostgreSQL).
async fn open_audit_table(
    cfg: &crate::config::AuditConfig,
) -> Result<Option<Box<dyn crate::audit::Table>>> {
    let Some(url) = &cfg.url else {
        return Ok(None);
    };
    #[cfg(feature = "postgres")]
    {
        crate::secrets::register_url_password(url);
        let table = cfg.table.as_deref().unwrap_or("dlqctl_audit");
        let table = crate::backend::postgres::audit::AuditTable::open(url, table).await?;
        Ok(Some(Box::new(table)))
    }
    #[cfg(not(feature = "postgres"))]
    {
        let _ = url;
        Err(Error::Unsupported {
            backend: "postgres",
            operation: "an audit table",
            reason: "dlqctl was built without the `postgres` backend: leave out [audit] url".into(),
        })
    }
}

/// The dedupe table `cfg` names (in PostgreSQL).
pub async fn open_dedupe(
    cfg: &crate::config::DedupeConfig,
) -> Result<Box<dyn crate::dedupe::Table>> {
    #[cfg(feature = "postgres")]
    {
        let table = crate::backend::postgres::dedupe::DedupeTable::open(cfg).await?;
        Ok(Box::new(table))
    }
    #[cfg(not(feature = "postgres"))]
    {
        let _ = cfg;
        Err(Error::Unsupported {
            backend: "postgres",
            operation: "dedupe tables",
            reason: "dlqctl was built without the `postgres` backend, and the dedupe table lives in PostgreSQL".into(),
        })
    }
}

/// A queue named on the command line: its address and its config entry (or defaults).
#[derive(Clone, Debug)]
pub struct QueueRef {
    pub name: Option<String>,
    pub address: Address,
    pub cfg: QueueConfig,
    pub aws: AwsOptions,
    /// The backends' own sections of the config file.
    pub backends: crate::config::BackendConfig,
}

impl QueueRef {
    pub fn label(&self) -> String {
        match &self.name {
            Some(n) => format!("{n} ({})", self.address),
            None => self.address.to_string(),
        }
    }

    /// Options to open this queue as a dead-letter source.
    pub fn source_options(&self) -> OpenOptions {
        OpenOptions {
            id: self.cfg.id.clone(),
            columns: self.cfg.columns.clone(),
            as_target: false,
            aws: self.aws.clone(),
            backends: self.backends.clone(),
            exactly_once: false,
        }
    }
}

/// A URL, or the name of a `[queues.NAME]` entry.
pub fn resolve_queue(config: &Config, aws: &AwsOptions, arg: &str) -> Result<QueueRef> {
    if let Some(cfg) = config.queues.get(arg) {
        let address = Address::parse(&cfg.dlq).map_err(|e| Error::Config {
            path: config.path.clone().unwrap_or_default(),
            reason: format!("[queues.{arg}] dlq: {e}"),
        })?;
        return Ok(QueueRef {
            name: Some(arg.to_string()),
            address,
            cfg: cfg.clone(),
            aws: aws.clone(),
            backends: config.backends(),
        });
    }
    if let Some(e) = unknown_name(config, arg) {
        return Err(e);
    }
    let address = Address::parse(arg)?;
    // A URL that matches a configured queue's address picks up its settings: of one entry
    // only. Two entries with the same `dlq` differ in what matters (the dedupe table, the
    // source, the limits), and guessing between them would check or move by the wrong one.
    let found: Vec<_> = config
        .queues
        .iter()
        .filter(|(_, q)| Address::parse(&q.dlq).ok().as_ref() == Some(&address))
        .collect();
    if let [(first, _), (second, _), ..] = found.as_slice() {
        let names: Vec<String> = found.iter().map(|(n, _)| format!("[queues.{n}]")).collect();
        return Err(Error::Config {
            path: config.path.clone().unwrap_or_default(),
            reason: format!(
                "{} is the dlq of {}, whose settings differ; dlqctl will not guess which one you mean",
                address,
                names.join(" and ")
            ),
        }
        .hinted(format!(
            "name the entry instead of its URL (`{first}` or `{second}`), or give each entry its own dlq"
        )));
    }
    Ok(match found.first().copied() {
        Some((name, cfg)) => QueueRef {
            name: Some(name.clone()),
            address,
            cfg: cfg.clone(),
            aws: aws.clone(),
            backends: config.backends(),
        },
        None => QueueRef {
            name: None,
            address,
            cfg: QueueConfig::default(),
            aws: aws.clone(),
            backends: config.backends(),
        },
    })
}

/// A bare name (no scheme, no `:`, no `.`, not `-`) that no `[queues.NAME]` defines, given as a
/// queue or a target (`--to`, `--archive`, `--park`): the unknown-queue error, with the closest
/// configured name or the URL forms as its hint (where parsing it as an address would only
/// say `not a URL`).
fn unknown_name(config: &Config, arg: &str) -> Option<Error> {
    let looks_like_name =
        !arg.contains("://") && !arg.contains(':') && !arg.contains('.') && arg != "-";
    if !looks_like_name || config.queues.contains_key(arg) {
        return None;
    }
    let e = Error::UnknownQueue {
        name: arg.to_string(),
        config: config.path.clone(),
    };
    let hint = match crate::text::closest(arg, config.queues.keys().map(String::as_str)) {
        Some(c) => format!("did you mean `{c}`?"),
        None => format!(
            "name the queue by its URL (an SQS queue: sqs://{arg}; a Kafka topic: kafka://HOST:PORT/{arg}; a RabbitMQ queue: amqp://USER@HOST:PORT/VHOST?queue={arg}; a BullMQ queue: redis://HOST:PORT/DB?system=bullmq&queue={arg}; a table: postgres://USER@HOST:PORT/DB?table={arg}), or define [queues.{arg}] in dlqctl.toml (--config FILE or DLQCTL_CONFIG)"
        ),
    };
    Some(e.hinted(hint))
}

/// A redrive/replay target: a URL, or the name of a `[queues.NAME]` entry (its `dlq` URL and
/// `columns` mapping are the target's). The source queue's `source_columns` mapping applies
/// when the target is that queue's configured `source`.
pub fn resolve_target(
    config: &Config,
    aws: &AwsOptions,
    arg: &str,
    source: &QueueRef,
) -> Result<(Address, OpenOptions)> {
    if let Some(cfg) = config.queues.get(arg) {
        let address = Address::parse(&cfg.dlq)?;
        return Ok((
            address,
            OpenOptions {
                id: None,
                columns: cfg.columns.clone(),
                as_target: true,
                aws: aws.clone(),
                backends: config.backends(),
                exactly_once: false,
            },
        ));
    }
    if let Some(e) = unknown_name(config, arg) {
        return Err(e);
    }
    let address = Address::parse(arg)?;
    let is_configured_source = source
        .cfg
        .source
        .as_deref()
        .and_then(|s| Address::parse(s).ok())
        .is_some_and(|s| s == address);
    Ok((
        address,
        OpenOptions {
            id: None,
            columns: if is_configured_source {
                source.cfg.source_columns.clone()
            } else {
                Default::default()
            },
            as_target: true,
            aws: aws.clone(),
            backends: config.backends(),
            exactly_once: false,
        },
    ))
}

/// Raw filter values, as they come from the command line.
#[derive(Default)]
pub struct FilterInput<'a> {
    pub class: &'a [String],
    pub body: Option<&'a str>,
    pub error: Option<&'a str>,
    pub attrs: &'a [String],
    pub older_than: Option<&'a str>,
    pub newer_than: Option<&'a str>,
    pub ids: &'a [String],
    pub ids_from: Option<&'a Path>,
    pub fingerprints: &'a [String],
    pub query: Option<&'a str>,
}

/// `--fingerprint`: ids as `classify --by fingerprint` shows them, or unique prefixes of them.
fn fingerprints(given: &[String]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for fp in given.iter().flat_map(|v| v.split(',')).map(str::trim) {
        let fp = fp.to_ascii_lowercase();
        if !crate::classify::fingerprint::is_prefix(&fp) {
            return Err(Error::invalid_arg(
                "--fingerprint",
                format!(
                    "`{}` is not a fingerprint",
                    crate::text::escape_controls(&fp)
                ),
            )
            .hinted("give its sixteen hex characters, or a unique prefix of at least 8, as `dlqctl classify QUEUE --by fingerprint` shows them"));
        }
        out.push(fp);
    }
    Ok(out)
}

pub fn build_filter(f: FilterInput<'_>) -> Result<Filter> {
    let re = |arg: &str, v: &str| {
        Regex::new(v).map_err(|e| {
            Error::invalid_arg(
                arg,
                format!(
                    "not a valid regex: {}",
                    crate::config::one_line(&e.to_string())
                ),
            )
        })
    };
    let dur = |arg: &str, v: &str| parse_duration(v).map_err(|e| Error::invalid_arg(arg, e));
    let mut attributes = Vec::new();
    for a in f.attrs {
        let (name, pat) = a
            .split_once('=')
            .ok_or_else(|| Error::invalid_arg("--attr", format!("`{a}` is not NAME=REGEX")))?;
        attributes.push((name.to_string(), re("--attr", pat)?));
    }
    let mut ids: Option<HashSet<String>> = None;
    if !f.ids.is_empty() {
        ids.get_or_insert_default().extend(f.ids.iter().cloned());
    }
    if let Some(path) = f.ids_from {
        let text = if path == Path::new("-") {
            std::io::read_to_string(std::io::stdin()).map_err(|e| Error::io("stdin", e))?
        } else {
            std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?
        };
        ids.get_or_insert_default().extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string),
        );
    }
    let filter = Filter {
        class: f.class.to_vec(),
        body: f.body.map(|v| re("--match", v)).transpose()?,
        error: f.error.map(|v| re("--error", v)).transpose()?,
        attributes,
        older_than: f.older_than.map(|v| dur("--older-than", v)).transpose()?,
        newer_than: f.newer_than.map(|v| dur("--newer-than", v)).transpose()?,
        ids,
        fingerprints: fingerprints(f.fingerprints)?,
        query: f
            .query
            .map(|q| crate::query::Query::compile("--where", q))
            .transpose()?,
        resolved: Default::default(),
    };
    if let (Some(o), Some(n)) = (filter.older_than, filter.newer_than)
        && o >= n
    {
        return Err(Error::invalid_arg(
            "--older-than/--newer-than",
            "nothing can be older than the first and newer than the second",
        ));
    }
    Ok(filter)
}

/// The slowest `--rate`: one message an hour.
pub const MIN_RATE: f64 = 1.0 / 3600.0;
/// The fastest `--rate`: a million messages a second.
pub const MAX_RATE: f64 = 1_000_000.0;

/// `--rate 50`, `--rate 50/s`, `--rate 3000/m`.
pub fn parse_rate(s: &str) -> std::result::Result<f64, String> {
    // The reasons quote the input: control characters escaped, so the error stays on one line
    // (tests/it/bad_input.rs found `--rate $'\n'` printing a line break).
    rate(s).map_err(|e| crate::text::escape_controls(&e))
}

fn rate(s: &str) -> std::result::Result<f64, String> {
    let (n, per) = match s.split_once('/') {
        Some((n, u)) => (n, u),
        None => (s, "s"),
    };
    let n: f64 = n
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a rate (e.g. 50/s, 3000/m)"))?;
    let secs = match per.trim() {
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => return Err(format!("unknown rate unit `{other}` (s, m or h)")),
    };
    if !(n > 0.0 && n.is_finite()) {
        return Err("the rate must be positive".into());
    }
    let rate = n / secs;
    // Between one message an hour and a million a second: beyond either end a pause or a
    // rate overflows, and neither is a redrive anyone means.
    if !(MIN_RATE..=MAX_RATE).contains(&rate) {
        return Err(format!("`{s}` is out of range: from 1/h to 1000000/s"));
    }
    Ok(rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("50/s"), Ok(50.0));
        assert_eq!(parse_rate("120/m"), Ok(2.0));
        assert_eq!(parse_rate("7"), Ok(7.0));
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("5/week").is_err());
        // Out of range, never a panic later.
        assert!(parse_rate("1e-300").is_err());
        assert!(parse_rate("1e300").is_err());
        assert!(parse_rate("NaN").is_err());
        assert!(parse_rate("inf").is_err());
        assert_eq!(parse_rate("1/h"), Ok(MIN_RATE));
    }

    #[test]
    fn names_and_urls() {
        let cfg: Config =
            toml::from_str("[queues.orders]\ndlq = \"postgres://u@h/db?table=dlq\"\n").unwrap();
        let aws = AwsOptions::default();
        let q = resolve_queue(&cfg, &aws, "orders").unwrap();
        assert_eq!(q.name.as_deref(), Some("orders"));
        let q = resolve_queue(&cfg, &aws, "postgres://u@h/db?table=dlq").unwrap();
        assert_eq!(q.name.as_deref(), Some("orders"));
        let e = resolve_queue(&cfg, &aws, "payments").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("payments"));
    }

    /// A URL that is the `dlq` of two entries picks neither: their dedupe tables, sources and
    /// limits differ, and a guess would verify or move by the wrong one.
    #[test]
    fn a_url_of_two_entries_is_refused_naming_both() {
        let cfg: Config = toml::from_str(
            "[queues.work]\ndlq = \"postgres://u@h/db?table=dlq\"\n\
             [queues.another]\ndlq = \"postgres://u@h/db?table=dlq\"\n",
        )
        .unwrap();
        let aws = AwsOptions::default();
        let e = resolve_queue(&cfg, &aws, "postgres://u@h/db?table=dlq").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let text = format!("{e} {}", e.hints().join(" "));
        assert!(
            text.contains("[queues.another] and [queues.work]"),
            "{text}"
        );
        assert!(text.contains("`another` or `work`"), "{text}");
        assert_eq!(
            resolve_queue(&cfg, &aws, "work").unwrap().name.as_deref(),
            Some("work")
        );
    }

    #[test]
    fn filter_errors() {
        assert!(
            build_filter(FilterInput {
                body: Some("(x"),
                ..Default::default()
            })
            .is_err()
        );
        assert!(
            build_filter(FilterInput {
                attrs: &["novalue".into()],
                ..Default::default()
            })
            .is_err()
        );
        assert!(
            build_filter(FilterInput {
                older_than: Some("2d"),
                newer_than: Some("1d"),
                ..Default::default()
            })
            .is_err()
        );
        assert!(
            build_filter(FilterInput {
                older_than: Some("1d"),
                newer_than: Some("2d"),
                ..Default::default()
            })
            .is_ok()
        );
    }
}
