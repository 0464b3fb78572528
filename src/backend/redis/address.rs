//! The Redis job-queue forms (docs/systems/sidekiq.md, docs/systems/bullmq.md):
//!
//! ```text
//! redis[s]://[USER[:PASSWORD]@]HOST[:PORT][/DB]?system=sidekiq[&queue=NAME][&namespace=NS][&set=dead|retry]
//! redis[s]://[USER[:PASSWORD]@]HOST[:PORT][/DB]?system=bullmq&queue=NAME[&prefix=bull]
//! rediss://…[&sslcert=FILE&sslkey=FILE][&sslrootcert=FILE]
//! ```
//!
//! Parsed and shown here, whatever backends the build has (the address registry,
//! `address/registry.rs`, names this file; the rest of `backend/redis/` is behind the `redis`
//! feature).

use std::fmt;

use crate::address::form::{Form, invalid};
use crate::error::Result;

/// The forms as `--help` lists them.
pub fn usage() -> String {
    "redis[s]://HOST:PORT/DB?system=sidekiq[&queue=NAME][&namespace=NS][&set=retry]\n\
     redis[s]://HOST:PORT/DB?system=bullmq&queue=NAME[&prefix=bull]\n\
     rediss://…[&sslcert=FILE&sslkey=FILE][&sslrootcert=FILE]"
        .into()
}

/// A Redis job library dlqctl knows: `?system=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedisSystem {
    Sidekiq,
    BullMq,
}

impl RedisSystem {
    pub fn name(self) -> &'static str {
        match self {
            RedisSystem::Sidekiq => "sidekiq",
            RedisSystem::BullMq => "bullmq",
        }
    }
}

/// Which of Sidekiq's sorted sets is read: the dead set, or the retries pending (`&set=retry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SidekiqSet {
    #[default]
    Dead,
    Retry,
}

#[derive(Clone, PartialEq)]
pub struct RedisAddress {
    /// `rediss://`: TLS.
    pub tls: bool,
    pub host: String,
    pub port: u16,
    pub db: i64,
    pub user: Option<String>,
    /// From the URL (percent-decoded); else `REDISCLI_AUTH` at connect time.
    pub password: Option<String>,
    pub system: RedisSystem,
    /// Sidekiq: only this queue's jobs (the job's `queue`); BullMQ: the queue (required).
    pub queue: Option<String>,
    /// Sidekiq: the redis-namespace prefix (`NS:` before every key).
    pub namespace: Option<String>,
    /// BullMQ: the key prefix (`bull` unless given).
    pub prefix: Option<String>,
    /// Sidekiq: the dead set (default) or the retry set.
    pub set: SidekiqSet,
    /// `rediss://` only, named as for PostgreSQL: a client certificate and its key (PEM
    /// files, both or neither) for servers that ask for one (`tls-auth-clients`), and the CA
    /// to trust instead of the system's store.
    pub sslcert: Option<String>,
    pub sslkey: Option<String>,
    pub sslrootcert: Option<String>,
}

impl fmt::Debug for RedisAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the password.
        write!(f, "RedisAddress({self})")
    }
}

const OWN: &[&str] = &[
    "system",
    "queue",
    "namespace",
    "prefix",
    "set",
    "sslcert",
    "sslkey",
    "sslrootcert",
];

/// `redis://…` or `rediss://…`: the server and database, the credentials, then the query's
/// parameters, checked together.
pub fn parse(input: &str) -> Result<RedisAddress> {
    let bad = |reason: String| invalid(input, &reason);
    let u = url::Url::parse(input).map_err(|e| bad(format!("not a URL: {e}")))?;
    let tls = u.scheme().eq_ignore_ascii_case("rediss");
    let host = u
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| bad("missing host: redis://HOST:PORT/DB?system=sidekiq|bullmq".into()))?
        .to_string();
    let port = u.port().unwrap_or(6379);
    let db = database(&u).map_err(bad)?;
    crate::address::form::check_userinfo_encoding(&u, "REDISCLI_AUTH").map_err(bad)?;
    let (user, password) = credentials(&u).map_err(bad)?;
    if let Some(p) = &password {
        crate::secrets::register(p);
    }
    let q = Query::read(&u).map_err(bad)?;
    let system = q.system().map_err(bad)?;
    let set = q.set(system).map_err(bad)?;
    q.check_fits(system).map_err(bad)?;
    q.check_tls(tls).map_err(bad)?;
    Ok(RedisAddress {
        tls,
        host,
        port,
        db,
        user,
        password,
        system,
        queue: q.queue,
        namespace: q.namespace,
        prefix: q.prefix,
        set,
        sslcert: q.sslcert,
        sslkey: q.sslkey,
        sslrootcert: q.sslrootcert,
    })
}

/// The database number in the path (`/3`), 0 when there is none.
fn database(u: &url::Url) -> std::result::Result<i64, String> {
    let path = u.path().trim_matches('/');
    if path.is_empty() {
        return Ok(0);
    }
    path.parse::<i64>()
        .ok()
        .filter(|d| (0..=100_000).contains(d))
        .ok_or_else(|| format!("`/{path}` is not a database number (0, 1, …)"))
}

/// The user and password of the URL, percent-decoded.
fn credentials(u: &url::Url) -> std::result::Result<(Option<String>, Option<String>), String> {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8()
            .map(|c| c.into_owned())
            .map_err(|_| "the user or password is not UTF-8 once decoded".to_string())
    };
    let user = match u.username() {
        "" => None,
        s => Some(decode(s)?),
    };
    let password = u.password().map(decode).transpose()?;
    Ok((user, password))
}

/// The query's parameters as given (of one given twice, the last).
struct Query {
    system: Option<String>,
    queue: Option<String>,
    namespace: Option<String>,
    prefix: Option<String>,
    set: Option<String>,
    sslcert: Option<String>,
    sslkey: Option<String>,
    sslrootcert: Option<String>,
}

impl Query {
    /// Read the parameters in order, refusing an unknown name, an empty value or a control
    /// character.
    fn read(u: &url::Url) -> std::result::Result<Query, String> {
        let mut q = Query {
            system: None,
            queue: None,
            namespace: None,
            prefix: None,
            set: None,
            sslcert: None,
            sslkey: None,
            sslrootcert: None,
        };
        for (k, v) in u.query_pairs() {
            let (k, v) = (k.into_owned(), v.into_owned());
            let slot = match k.as_str() {
                "system" => &mut q.system,
                "queue" => &mut q.queue,
                "namespace" => &mut q.namespace,
                "prefix" => &mut q.prefix,
                "set" => &mut q.set,
                "sslcert" => &mut q.sslcert,
                "sslkey" => &mut q.sslkey,
                "sslrootcert" => &mut q.sslrootcert,
                other => {
                    let guess = crate::text::closest(other, OWN.iter().copied())
                        .map(|g| format!("did you mean `{g}`? "))
                        .unwrap_or_default();
                    return Err(format!(
                        "unknown parameter `{other}` ({guess}known: {})",
                        OWN.join(", ")
                    ));
                }
            };
            if v.is_empty() {
                return Err(format!("`{k}=` needs a value"));
            }
            if v.chars().any(char::is_control) {
                return Err(format!("`{k}=` has a control character in it"));
            }
            *slot = Some(v);
        }
        Ok(q)
    }

    /// `system=`: required, any case.
    fn system(&self) -> std::result::Result<RedisSystem, String> {
        match self
            .system
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("sidekiq") => Ok(RedisSystem::Sidekiq),
            Some("bullmq") => Ok(RedisSystem::BullMq),
            Some(other) => Err(format!("unknown system `{other}` (known: sidekiq, bullmq)")),
            None => {
                Err("say which job library: ?system=sidekiq or ?system=bullmq&queue=NAME".into())
            }
        }
    }

    /// `set=`: Sidekiq's dead (default) or retry set; BullMQ has only its failed set.
    fn set(&self, system: RedisSystem) -> std::result::Result<SidekiqSet, String> {
        match (system, self.set.as_deref()) {
            (_, None) | (RedisSystem::Sidekiq, Some("dead")) => Ok(SidekiqSet::Dead),
            (RedisSystem::Sidekiq, Some("retry")) => Ok(SidekiqSet::Retry),
            (RedisSystem::Sidekiq, Some(other)) => Err(format!(
                "`set={other}`: Sidekiq's sets are dead (the default) and retry"
            )),
            (RedisSystem::BullMq, Some("failed")) => Ok(SidekiqSet::Dead),
            (RedisSystem::BullMq, Some(_)) => {
                Err("BullMQ's dead jobs are its failed set: leave out `set=`".into())
            }
        }
    }

    /// The certificate files go with TLS, and a client certificate with its key.
    fn check_tls(&self, tls: bool) -> std::result::Result<(), String> {
        let given = [
            ("sslcert", &self.sslcert),
            ("sslkey", &self.sslkey),
            ("sslrootcert", &self.sslrootcert),
        ];
        if let Some((name, _)) = given.iter().find(|(_, v)| v.is_some())
            && !tls
        {
            return Err(format!("`{name}=` needs TLS: rediss://…"));
        }
        match (&self.sslcert, &self.sslkey) {
            (Some(_), None) => Err("`sslcert=` needs its key: &sslkey=FILE".into()),
            (None, Some(_)) => Err("`sslkey=` needs its certificate: &sslcert=FILE".into()),
            _ => Ok(()),
        }
    }

    /// Refuse the other library's parameters, and BullMQ without its queue.
    fn check_fits(&self, system: RedisSystem) -> std::result::Result<(), String> {
        match system {
            RedisSystem::Sidekiq if self.prefix.is_some() => Err(
                "`prefix=` is BullMQ's; a Sidekiq key prefix (redis-namespace) is `namespace=`"
                    .into(),
            ),
            RedisSystem::BullMq if self.namespace.is_some() => Err(
                "`namespace=` is Sidekiq's; BullMQ's key prefix is `prefix=` (default bull)".into(),
            ),
            RedisSystem::BullMq if self.queue.is_none() => {
                Err("system=bullmq needs the queue: ?system=bullmq&queue=NAME".into())
            }
            _ => Ok(()),
        }
    }
}

impl RedisAddress {
    /// BullMQ's key prefix.
    pub fn bull_prefix(&self) -> &str {
        self.prefix.as_deref().unwrap_or("bull")
    }
}

/// How a Redis address is shown: its form, the password as `***`.
impl fmt::Display for RedisAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let enc = |s: &str| {
            percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
        };
        write!(f, "redis{}://", if self.tls { "s" } else { "" })?;
        match (&self.user, &self.password) {
            (Some(u), Some(_)) => write!(f, "{}:***@", enc(u))?,
            (None, Some(_)) => write!(f, ":***@")?,
            (Some(u), None) => write!(f, "{}@", enc(u))?,
            (None, None) => {}
        }
        let host = if self.host.contains(':') && !self.host.starts_with('[') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        write!(
            f,
            "{host}:{}/{}?system={}",
            self.port,
            self.db,
            self.system.name()
        )?;
        if let Some(q) = &self.queue {
            write!(f, "&queue={}", enc(q))?;
        }
        if let Some(n) = &self.namespace {
            write!(f, "&namespace={}", enc(n))?;
        }
        if let Some(p) = &self.prefix {
            write!(f, "&prefix={}", enc(p))?;
        }
        if self.set == SidekiqSet::Retry {
            write!(f, "&set=retry")?;
        }
        // Paths as they are, but for what a query value cannot hold.
        const PATH: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
            .add(b' ')
            .add(b'#')
            .add(b'%')
            .add(b'&')
            .add(b'+');
        for (name, v) in [
            ("sslcert", &self.sslcert),
            ("sslkey", &self.sslkey),
            ("sslrootcert", &self.sslrootcert),
        ] {
            if let Some(v) = v {
                write!(
                    f,
                    "&{name}={}",
                    percent_encoding::utf8_percent_encode(v, PATH)
                )?;
            }
        }
        Ok(())
    }
}

impl Form for RedisAddress {
    /// The system, its set, the queue.
    fn brief(&self) -> String {
        let set = match (self.system, self.set) {
            (RedisSystem::Sidekiq, SidekiqSet::Retry) => " retry set",
            (RedisSystem::Sidekiq, SidekiqSet::Dead) => " dead set",
            (RedisSystem::BullMq, _) => "",
        };
        match &self.queue {
            Some(q) => format!("{}{set} queue {q}", self.system.name()),
            None => format!("{}{set}", self.system.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::Address;

    fn parse(s: &str) -> RedisAddress {
        match Address::parse(s).unwrap() {
            Address::Redis(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn sidekiq_and_bullmq_forms() {
        let r = parse("redis://127.0.0.1:6380/3?system=sidekiq&namespace=app&queue=mailers");
        assert_eq!((r.port, r.db, r.system), (6380, 3, RedisSystem::Sidekiq));
        assert_eq!(r.namespace.as_deref(), Some("app"));
        assert_eq!(r.set, SidekiqSet::Dead);
        assert_eq!(
            r.to_string(),
            "redis://127.0.0.1:6380/3?system=sidekiq&queue=mailers&namespace=app"
        );
        let r = parse("rediss://u:s3cr%40t@h/?system=bullmq&queue=mail&prefix=b2");
        assert!(r.tls);
        assert_eq!(r.password.as_deref(), Some("s3cr@t"));
        assert_eq!((r.port, r.db, r.bull_prefix()), (6379, 0, "b2"));
        assert_eq!(
            r.to_string(),
            "rediss://u:***@h:6379/0?system=bullmq&queue=mail&prefix=b2"
        );
        assert!(!format!("{r:?}").contains("s3cr"));
        let r = parse("redis://h:1/0?system=sidekiq&set=retry");
        assert_eq!(r.set, SidekiqSet::Retry);
        assert!(r.to_string().ends_with("&set=retry"));
    }

    #[test]
    fn refusals_name_the_problem() {
        for (url, says) in [
            ("redis://h:1/0", "?system=sidekiq"),
            ("redis://h:1/0?system=resque", "unknown system"),
            ("redis://h:1/0?system=bullmq", "needs the queue"),
            ("redis://h:1/x?system=sidekiq", "database number"),
            (
                "redis://h:1/0?system=sidekiq&sett=retry",
                "did you mean `set`",
            ),
            (
                "redis://h:1/0?system=sidekiq&set=morgue",
                "dead (the default) and retry",
            ),
            ("redis://h:1/0?system=sidekiq&prefix=x", "namespace="),
            ("redis://h:1/0?system=bullmq&queue=q&namespace=x", "prefix="),
            (
                "redis://h:1/0?system=bullmq&queue=q&set=retry",
                "failed set",
            ),
            (
                "redis://h:1/0?system=sidekiq&sslrootcert=ca.pem",
                "`sslrootcert=` needs TLS",
            ),
            (
                "rediss://h:1/0?system=sidekiq&sslcert=c.pem",
                "&sslkey=FILE",
            ),
            (
                "rediss://h:1/0?system=sidekiq&sslkey=c.key",
                "&sslcert=FILE",
            ),
        ] {
            let e = Address::parse(url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
        }
    }

    #[test]
    fn tls_files_are_kept_and_shown() {
        let r = parse(
            "rediss://h:1/0?system=bullmq&queue=q&sslcert=/c.pem&sslkey=/c.key&sslrootcert=/ca.pem",
        );
        assert_eq!(
            (
                r.sslcert.as_deref(),
                r.sslkey.as_deref(),
                r.sslrootcert.as_deref()
            ),
            (Some("/c.pem"), Some("/c.key"), Some("/ca.pem"))
        );
        assert_eq!(
            r.to_string(),
            "rediss://h:1/0?system=bullmq&queue=q&sslcert=/c.pem&sslkey=/c.key&sslrootcert=/ca.pem"
        );
    }
}
