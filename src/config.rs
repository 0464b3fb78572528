//! `dlqctl.toml`: named queues and what the live systems cannot tell (see `docs/config.md`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::error::{Error, Result};

pub const FILE_NAME: &str = "dlqctl.toml";

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub queues: BTreeMap<String, QueueConfig>,
    #[serde(default)]
    pub classify: ClassifyConfig,
    /// Kafka client properties (security.protocol, sasl.*, ssl.*), applied to every Kafka queue.
    #[serde(default)]
    pub kafka: KafkaConfig,
    /// The audit trail of changing runs (docs/audit.md).
    #[serde(default)]
    pub audit: AuditConfig,
    /// RabbitMQ settings, for every RabbitMQ queue (docs/rabbitmq.md; issue 27).
    #[serde(default)]
    pub rabbitmq: RabbitmqConfig,
    /// Redis job-queue settings, for every Redis address (docs/systems/sidekiq.md#one-mover-at-a-time).
    #[serde(default)]
    pub redis: RedisConfig,
    /// Where the file was read from; set by [`Config::load`].
    #[serde(skip)]
    pub path: Option<PathBuf>,
}

/// `[audit]`: where the trail of changing runs goes (docs/audit.md).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// The JSON Lines log [default: the user's state directory, `dlqctl/audit.jsonl`].
    pub path: Option<PathBuf>,
    /// Every changing run must say why (`--reason TEXT`).
    #[serde(default)]
    pub require_reason: bool,
    /// A PostgreSQL database whose `table` gets a row per run too (docs/audit.md has the DDL).
    pub url: Option<String>,
    /// [default: dlqctl_audit]
    pub table: Option<String>,
}

/// The settings of the backends that have a `[section]` of their own, as one value: every
/// queue is opened with it, and each backend reads its own field. A backend with settings adds
/// its section to [`Config`], a field here, and a line in [`Config::backends`], in this file
/// only.
#[derive(Clone, Debug, Default)]
pub struct BackendConfig {
    pub kafka: KafkaConfig,
    pub rabbitmq: RabbitmqConfig,
    pub redis: RedisConfig,
    /// The file these sections were read from (`--config`, `DLQCTL_CONFIG` or the default
    /// lookup), for errors that name a setting's source.
    pub file: Option<PathBuf>,
}

impl Config {
    /// The backends' own sections.
    pub fn backends(&self) -> BackendConfig {
        BackendConfig {
            kafka: self.kafka.clone(),
            rabbitmq: self.rabbitmq.clone(),
            redis: self.redis.clone(),
            file: self.path.clone(),
        }
    }

    /// How an error names the file this config was read from.
    pub fn file_name(&self) -> String {
        file_name(self.path.as_deref())
    }
}

/// `path`, shown; "the config file" when there is none (a setting's default).
pub fn file_name(path: Option<&Path>) -> String {
    path.map_or_else(
        || "the config file".to_string(),
        |p| p.display().to_string(),
    )
}

/// `[rabbitmq]`: the management API and a password kept out of URLs (docs/rabbitmq.md).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RabbitmqConfig {
    /// The management HTTP API's base URL (`http://HOST:15672`), where a queue's URL has no
    /// `api=`.
    pub api: Option<String>,
    /// The AMQP user's password, where the URL has none (before it: `DLQCTL_AMQP_PASSWORD`).
    pub password: Option<String>,
}

/// `[redis]`: the lock a redrive, purge or edit of a Redis job set holds while it runs.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisConfig {
    /// How long the lock lasts unrenewed (its `PX`): how soon a run may go after one that was
    /// killed. Default 30s.
    #[serde(default, deserialize_with = "opt_duration")]
    pub lock_timeout: Option<Duration>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaConfig {
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    /// How long a redrive's lease on a dead-letter topic lasts without renewal: how soon a
    /// re-run may go after a redrive crashed (docs/kafka.md#the-redrive-lease). Default 10s.
    #[serde(default, deserialize_with = "opt_duration")]
    pub lease_timeout: Option<Duration>,
    /// How long a read waits for a partition that gives nothing before it treats it as
    /// drained. Not a file key: `DLQCTL_KAFKA_IDLE_MS`, read once by the settings.
    #[serde(skip)]
    pub read_idle: Option<Duration>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// The dead-letter queue (or table, or topic).
    #[serde(alias = "url")]
    pub dlq: String,
    /// Where redrive sends messages back to, when it cannot be discovered.
    pub source: Option<String>,
    /// Where the stable id lives: `attribute:NAME`, `header:NAME`, `json:/pointer`, `native`.
    pub id: Option<IdSource>,
    #[serde(default, deserialize_with = "opt_duration")]
    pub handler_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "opt_duration")]
    pub replay_window: Option<Duration>,
    /// Declared dead-letter retention, for backends that cannot report one (a pruning job
    /// outside the database, say).
    #[serde(default, deserialize_with = "opt_duration")]
    pub dlq_retention: Option<Duration>,
    /// Declared longest time from first delivery to dead-lettering (retries and backoff).
    #[serde(default, deserialize_with = "opt_duration")]
    pub time_to_dead_letter: Option<Duration>,
    /// Column mapping of a PostgreSQL dead-letter table (logical name → your column).
    #[serde(default)]
    pub columns: BTreeMap<String, String>,
    /// Column mapping of the PostgreSQL queue table that redrive writes into.
    #[serde(default)]
    pub source_columns: BTreeMap<String, String>,
    pub dedupe: Option<DedupeConfig>,
    /// The loop guard: redrive and replay leave messages redriven this many times already
    /// (`--max-redrives`).
    pub max_redrives: Option<u32>,
    /// What `dlqctl check` holds the queue to.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// `[queues.NAME.sidekiq]`: the application's Sidekiq settings where it changed them
    /// (verify's retention of the dead set; docs/systems/sidekiq.md).
    pub sidekiq: Option<SidekiqConfig>,
}

/// Sidekiq's dead-set retention, as the application configured it (`Sidekiq.options`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SidekiqConfig {
    /// Dead jobs older than this are trimmed when another job dies (default 180 days).
    pub dead_timeout_in_seconds: Option<u64>,
    /// The dead set keeps at most this many jobs (default 10,000).
    pub dead_max_jobs: Option<u64>,
}

/// `[queues.NAME.limits]`: the state `dlqctl check` accepts (docs/triage.md).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct LimitsConfig {
    /// At most this many messages.
    pub max_messages: Option<u64>,
    /// No message first enqueued longer ago than this.
    #[serde(default, deserialize_with = "opt_duration")]
    pub max_age: Option<Duration>,
    /// SQS: at most this many messages in flight (received, not yet deleted).
    pub max_in_flight: Option<u64>,
    /// Per class (transient, permanent, unclassified, or a rule name): at most this many,
    /// e.g. `permanent = 0`.
    #[serde(flatten)]
    pub classes: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DedupeConfig {
    pub url: String,
    #[serde(default = "default_dedupe_table")]
    pub table: String,
    #[serde(default = "default_id_column")]
    pub id_column: String,
    #[serde(default = "default_time_column")]
    pub time_column: String,
    #[serde(default, deserialize_with = "opt_retention")]
    pub retention: Option<Retention>,
}

pub fn default_dedupe_table() -> String {
    "processed_messages".into()
}
pub fn default_id_column() -> String {
    "message_id".into()
}
pub fn default_time_column() -> String {
    "handled_at".into()
}

/// A retention: a duration, or forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Retention {
    For(Duration),
    Forever,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassifyConfig {
    #[serde(default)]
    pub rules: Vec<RuleConfig>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    pub name: String,
    pub kind: RuleKind,
    /// One line on why a match means this kind (shown by `classify --test` and `--explain`).
    #[serde(default)]
    pub reason: Option<String>,
    /// The published taxonomy the rule encodes (a library's list of retryable errors, an
    /// error table), and where it is: shown by `classify --test` and `--explain`.
    #[serde(default)]
    pub taxonomy: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(rename = "match")]
    pub matcher: RuleMatch,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleKind {
    Transient,
    Permanent,
    /// The text alone cannot decide: a match leaves the message unclassified (and stops the
    /// rules after it from guessing).
    Ambiguous,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleMatch {
    /// Regex on the error text (class and message).
    pub error: Option<String>,
    /// Regex on the body (lossy UTF-8).
    pub body: Option<String>,
    /// Regex on named attributes / headers.
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
}

/// Where a message's stable id lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdSource {
    Attribute(String),
    Json(String),
    Native,
}

impl std::str::FromStr for IdSource {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        if s == "native" {
            return Ok(IdSource::Native);
        }
        match s.split_once(':') {
            Some(("attribute" | "header", name)) if !name.is_empty() => {
                Ok(IdSource::Attribute(name.to_string()))
            }
            Some(("json", ptr)) if ptr.starts_with('/') => Ok(IdSource::Json(ptr.to_string())),
            _ => Err(format!(
                "`{s}` is not an id location (attribute:NAME, header:NAME, json:/pointer or native)"
            )),
        }
    }
}

impl<'de> Deserialize<'de> for IdSource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

fn opt_duration<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Duration>, D::Error> {
    let s = Option::<String>::deserialize(d)?;
    s.map(|s| parse_duration(&s).map_err(serde::de::Error::custom))
        .transpose()
}

fn opt_retention<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Retention>, D::Error> {
    let s = Option::<String>::deserialize(d)?;
    s.map(|s| parse_retention(&s).map_err(serde::de::Error::custom))
        .transpose()
}

/// `30s`, `2m`, `3d`, `1h 30m`: humantime's grammar.
pub fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    // The reasons quote the input: control characters escaped, so the error stays on one line
    // (tests/it/bad_input.rs found `--older-than $'\n'` printing a line break).
    duration(s).map_err(|e| crate::text::escape_controls(&e))
}

fn duration(s: &str) -> std::result::Result<Duration, String> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|e| format!("`{s}` is not a duration ({e}); use e.g. 90s, 15m, 36h, 14d"))?;
    if d > MAX_DURATION {
        return Err(format!(
            "`{s}` is longer than dlqctl's limit of 100 years; use a shorter duration, or `forever` where a retention is meant"
        ));
    }
    Ok(d)
}

/// The longest duration dlqctl accepts anywhere: longer than any retention, short enough that
/// no date arithmetic on it overflows.
pub const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 86_400 + 25 * 86_400);

pub fn parse_retention(s: &str) -> std::result::Result<Retention, String> {
    match s.trim() {
        "forever" | "infinite" | "never" => Ok(Retention::Forever),
        other => parse_duration(other).map(Retention::For),
    }
}

impl Config {
    /// Find and read the config file: `--config` (or `DLQCTL_CONFIG`, which clap folds into
    /// it), `./dlqctl.toml`, then the user's config directory. A file named explicitly must
    /// exist; the others are optional.
    pub fn load(explicit: Option<&Path>) -> Result<Config> {
        if let Some(path) = explicit {
            return Self::read(path);
        }
        let mut candidates = vec![PathBuf::from(FILE_NAME)];
        if let Some(dir) = dirs::config_dir() {
            candidates.push(dir.join("dlqctl").join(FILE_NAME));
        }
        for path in candidates {
            if path.is_file() {
                return Self::read(&path);
            }
        }
        Ok(Config::default())
    }

    pub fn read(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Config {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let mut cfg: Config = toml::from_str(&text).map_err(|e| {
            let mut reason = one_line(&e.to_string());
            if reason.contains("duplicate field `dlq`") {
                // serde reports the alias's clash without the entry's line.
                reason.push_str(" (`url` is another name for `dlq`: give one of them)");
            }
            Error::Config {
                path: path.to_path_buf(),
                reason,
            }
        })?;
        cfg.path = Some(path.to_path_buf());
        if let Some(reason) = cfg.misplaced_table() {
            return Err(Error::Config {
                path: path.to_path_buf(),
                reason,
            });
        }
        for (k, v) in &cfg.kafka.properties {
            if crate::secrets::is_secret_name(k) {
                crate::secrets::register(v);
            }
        }
        Ok(cfg)
    }
}

impl Config {
    /// A queue's backend-specific table under a queue whose `dlq` is another backend's (a
    /// `[queues.X.sidekiq]` under an SQS queue), which nothing would read: the entry and the
    /// fix, in one line. A `dlq` that does not parse is left for the command that uses it.
    fn misplaced_table(&self) -> Option<String> {
        use crate::address::Address;
        use crate::backend::redis::address::RedisSystem;
        for (name, q) in &self.queues {
            let Ok(dlq) = Address::parse(&q.dlq) else {
                continue;
            };
            let sidekiq = matches!(&dlq, Address::Redis(r) if r.system == RedisSystem::Sidekiq);
            let postgres = matches!(dlq, Address::Postgres(_));
            let (table, wants) = if q.sidekiq.is_some() && !sidekiq {
                (
                    "sidekiq",
                    "a Sidekiq set (redis://HOST:PORT/DB?system=sidekiq)",
                )
            } else if !q.columns.is_empty() && !postgres {
                (
                    "columns",
                    "a PostgreSQL dead-letter table (postgres://…?table=…)",
                )
            } else {
                continue;
            };
            let entry = format!("[queues.{name}.{table}]");
            return Some(format!(
                "{entry} applies to {wants}, but queues.{name}'s dlq is {} ({}): remove {entry}, or set dlq to the address it applies to",
                dlq,
                dlq.backend_name()
            ));
        }
        None
    }
}

/// toml's errors span several lines with a source excerpt; keep the message and location.
pub fn one_line(s: &str) -> String {
    let mut lines = s.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or_default().trim().to_string();
    let last = s
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('|') && !l.contains("-->"))
        .unwrap_or_default()
        .trim()
        .to_string();
    // A lone carriage return is not a line end to `lines()`: escape what is left (found by
    // tests/it/bad_input.rs: `kind = "\r"` in a rule).
    crate::text::escape_controls(&if last.is_empty() || last == first {
        first
    } else {
        format!("{first} {last}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example_parses() {
        let cfg: Config = toml::from_str(
            r#"
[queues.orders]
dlq = "sqs://orders-dlq"
source = "sqs://orders"
id = "attribute:message_id"
handler_timeout = "2m"
replay_window = "3d"

[queues.orders.dedupe]
url = "postgres://app@db/app"
table = "processed_messages"
id_column = "message_id"
time_column = "handled_at"
retention = "30d"

[[classify.rules]]
name = "downstream-timeout"
kind = "transient"
match = { error = "(?i)timed? ?out|429|503" }
"#,
        )
        .unwrap();
        let q = &cfg.queues["orders"];
        assert_eq!(q.id, Some(IdSource::Attribute("message_id".into())));
        assert_eq!(q.handler_timeout, Some(Duration::from_secs(120)));
        assert_eq!(
            q.dedupe.as_ref().unwrap().retention,
            Some(Retention::For(Duration::from_secs(30 * 86400)))
        );
        assert_eq!(cfg.classify.rules[0].kind, RuleKind::Transient);
    }

    /// `url` is an alias of `dlq`: an entry with both says so, not only serde's bare
    /// "duplicate field".
    #[test]
    fn url_and_dlq_together_name_the_alias() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dlqctl.toml");
        std::fs::write(&path, "[queues.a]\ndlq = \"sqs://a\"\nurl = \"sqs://b\"\n").unwrap();
        let e = Config::read(&path).unwrap_err().to_string();
        assert!(e.contains("duplicate field `dlq`"), "{e}");
        assert!(e.contains("`url` is another name for `dlq`"), "{e}");
    }

    /// `[queues.X.sidekiq]` (or `columns`) under a queue of another backend was accepted and
    /// never read: it is refused at load, naming the entry and the fix.
    #[test]
    fn a_backend_table_under_another_backend_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dlqctl.toml");
        let load = |text: &str| {
            std::fs::write(&path, text).unwrap();
            Config::read(&path)
        };
        let e = load(
            "[queues.jobs]\ndlq = \"sqs://orders-dlq\"\n[queues.jobs.sidekiq]\ndead_max_jobs = 5\n",
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::USAGE);
        let text = e.to_string();
        assert!(
            text.contains("[queues.jobs.sidekiq] applies to a Sidekiq set")
                && text.contains("sqs://orders-dlq (sqs)")
                && text.contains("remove [queues.jobs.sidekiq]")
                && !text.contains('\n'),
            "{text}"
        );
        let e =
            load("[queues.t]\ndlq = \"kafka://k:9092/t.dlt\"\n[queues.t.columns]\nid = \"pk\"\n")
                .unwrap_err()
                .to_string();
        assert!(
            e.contains("[queues.t.columns] applies to a PostgreSQL"),
            "{e}"
        );
        for fine in [
            "[queues.jobs]\ndlq = \"redis://h:6379/0?system=sidekiq\"\n[queues.jobs.sidekiq]\ndead_max_jobs = 5\n",
            "[queues.t]\ndlq = \"postgres://u@h/db?table=public.dlq\"\n[queues.t.columns]\nid = \"pk\"\n",
            "[queues.b]\ndlq = \"redis://h:6379/0?system=bullmq&queue=q\"\n",
        ] {
            assert!(load(fine).is_ok(), "{fine}");
        }
    }

    #[test]
    fn typos_are_errors() {
        let e = toml::from_str::<Config>("[queues.a]\ndlq = \"x\"\nhandler_timout = \"2m\"\n")
            .unwrap_err();
        assert!(e.to_string().contains("handler_timout"), "{e}");
        assert!(
            toml::from_str::<Config>("[queues.a]\ndlq = \"x\"\nreplay_window = \"3 parsecs\"\n")
                .is_err()
        );
        assert!("json:order_id".parse::<IdSource>().is_err());
        // Absurd durations are refused, not overflowed later.
        assert!(
            toml::from_str::<Config>(
                "[queues.a]\ndlq = \"x\"\nreplay_window = \"500000000000y\"\n"
            )
            .is_err()
        );
        assert!(parse_duration("200000000000y").is_err());
        assert!(parse_duration("100y").is_ok());
        assert_eq!(
            "header:x-id".parse::<IdSource>(),
            Ok(IdSource::Attribute("x-id".into()))
        );
    }

    /// Every key of `[queues.NAME]` (as serde lists them for an unknown one) has a row in
    /// docs/config.md's table: `[queues.NAME.sidekiq]` had none.
    #[test]
    fn every_queue_key_is_in_the_docs() {
        let e = toml::from_str::<Config>("[queues.x]\ndlq = \"a.jsonl\"\nnot_a_key = 1\n")
            .unwrap_err()
            .to_string();
        let keys = e.split("expected one of ").nth(1).expect(&e);
        let docs = include_str!("../docs/config.md");
        let table = &docs[docs.find("### `[queues.NAME]`").unwrap()..];
        let table = &table[table.find("\n|").unwrap()..];
        let table = &table[..table.find("\n\n").unwrap()];
        for key in keys.split(", ").map(|k| k.trim().trim_matches('`')) {
            let row = [format!("| `{key}`"), format!("| `[queues.NAME.{key}]`")];
            assert!(
                key == "url" || row.iter().any(|r| table.contains(r.as_str())),
                "docs/config.md's [queues.NAME] table has no row for `{key}`"
            );
        }
    }
}
