//! From a parsed [`PgConn`] to the driver's options, the way libpq resolves a connection:
//! the URL's parts first, then the `pg_service.conf` entry (`service=` or `PGSERVICE`), then
//! the environment (`PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGPASSWORD`, `PGSSLMODE`, …),
//! then the defaults (a Unix socket in /var/run/postgresql or /tmp if one exists, else
//! localhost; the user's name), and `~/.pgpass` for a password still missing.
//!
//! The service file is read here (a few lines of libpq's INI format): sqlx does not read it,
//! and the `postgres-service` crate builds a rust-postgres `Config`, which would bring in a
//! second PostgreSQL driver for the sake of a parser.

use std::collections::BTreeMap;
use std::path::PathBuf;

use sqlx::postgres::PgConnectOptions;

use crate::error::{Error, Result};
use crate::pgconn::PgConn;

/// Where the password of a connection comes from, for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PasswordSource {
    Url,
    Service,
    Environment,
    /// `~/.pgpass` (or `PGPASSFILE`), or nowhere.
    PassFileOrNone,
}

impl PasswordSource {
    pub fn describe(self) -> &'static str {
        match self {
            PasswordSource::Url => "the URL",
            PasswordSource::Service => "the pg_service.conf entry",
            PasswordSource::Environment => "PGPASSWORD",
            PasswordSource::PassFileOrNone => {
                "~/.pgpass (PGPASSFILE) if it has a matching line, else nowhere (no password was given)"
            }
        }
    }
}

/// The resolved connection: the driver's options and where each part came from.
pub struct Resolved {
    pub options: PgConnectOptions,
    pub password: PasswordSource,
}

/// The connection's identity: two connections with the same identity reach the same
/// database as the same user, so one transaction can span them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// A host name or IP address, or a socket directory.
    pub host: String,
    pub port: u16,
    pub database: String,
    pub user: String,
}

/// Resolve `c` as libpq would (see the module doc). Fails only on a service that is named
/// and not found, or an unreadable service file.
pub fn resolve(c: &PgConn) -> Result<Resolved> {
    let mut q: BTreeMap<&str, String> = BTreeMap::new();
    let mut params: Vec<(String, String)> = Vec::new();
    let mut password = None;
    // The URL first.
    if let Some(v) = &c.host {
        q.insert("host", v.clone());
    }
    if let Some(v) = &c.hostaddr {
        q.insert("hostaddr", v.clone());
    }
    if let Some(v) = c.port {
        q.insert("port", v.to_string());
    }
    if let Some(v) = &c.dbname {
        q.insert("dbname", v.clone());
    }
    if let Some(v) = &c.user {
        q.insert("user", v.clone());
    }
    if let Some(v) = &c.password {
        q.insert("password", v.clone());
        password = Some(PasswordSource::Url);
    }
    // Then the service entry, for what the URL left open.
    let service = c
        .service
        .clone()
        .or_else(|| std::env::var("PGSERVICE").ok().filter(|s| !s.is_empty()));
    if let Some(name) = &service {
        for (k, v) in lookup_service(name)? {
            match k.as_str() {
                "host" | "hostaddr" | "port" | "dbname" | "user" | "password" => {
                    let key: &'static str = match k.as_str() {
                        "host" => "host",
                        "hostaddr" => "hostaddr",
                        "port" => "port",
                        "dbname" => "dbname",
                        "user" => "user",
                        _ => "password",
                    };
                    if !q.contains_key(key) {
                        if key == "password" {
                            crate::secrets::register(&v);
                            password = Some(PasswordSource::Service);
                        }
                        q.insert(key, v);
                    }
                }
                "sslmode" | "sslrootcert" | "sslcert" | "sslkey" | "application_name"
                | "options" => {
                    if !c.params.iter().any(|(n, _)| n == &k) {
                        params.push((k, v));
                    }
                }
                // What the driver cannot do is left out, as libpq leaves out what it does
                // not know of a service entry only at its peril: name it at debug level.
                other => {
                    tracing::debug!(parameter = other, service = %name, "pg_service.conf: parameter not supported by the driver; ignored")
                }
            }
        }
    }
    let mut url = url::Url::parse("postgres:///").expect("a static URL");
    {
        let mut qp = url.query_pairs_mut();
        for (k, v) in &q {
            qp.append_pair(k, v);
        }
        for (k, v) in params.iter().chain(&c.params) {
            qp.append_pair(k, v);
        }
    }
    if url.query() == Some("") {
        url.set_query(None);
    }
    // The environment and the defaults fill the rest (sqlx reads PGHOST, PGPORT, PGUSER,
    // PGDATABASE, PGPASSWORD, … and ~/.pgpass).
    let mut options = <PgConnectOptions as sqlx::ConnectOptions>::from_url(&url).map_err(|e| {
        Error::InvalidAddress {
            input: c.to_string(),
            reason: e.to_string(),
        }
    })?;
    if password.is_none() && std::env::var_os("PGPASSWORD").is_some() {
        password = Some(PasswordSource::Environment);
    }
    if c.no_statement_cache {
        options = options.statement_cache_capacity(0);
    }
    if !c.params.iter().any(|(k, _)| k == "application_name") {
        options = options.application_name("dlqctl");
    }
    Ok(Resolved {
        options,
        password: password.unwrap_or(PasswordSource::PassFileOrNone),
    })
}

/// The identity of a resolved connection (see [`Identity`]).
pub fn identity(o: &PgConnectOptions) -> Identity {
    let host = match o.get_socket() {
        Some(s) => s.display().to_string(),
        None => o.get_host().to_string(),
    };
    Identity {
        host: host.trim_end_matches('/').to_string(),
        port: o.get_port(),
        database: o.get_database().unwrap_or(o.get_username()).to_string(),
        user: o.get_username().to_string(),
    }
}

/// The service files libpq reads, in order: `PGSERVICEFILE` (else `~/.pg_service.conf`), then
/// `PGSYSCONFDIR/pg_service.conf` (else Debian's `/etc/postgresql-common/pg_service.conf`).
fn service_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    match std::env::var_os("PGSERVICEFILE") {
        Some(f) => out.push(PathBuf::from(f)),
        None => {
            if let Some(h) = dirs::home_dir() {
                out.push(h.join(".pg_service.conf"));
            }
        }
    }
    let sys = std::env::var_os("PGSYSCONFDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/postgresql-common"));
    out.push(sys.join("pg_service.conf"));
    out
}

/// The entry `name` of the first service file that defines it.
fn lookup_service(name: &str) -> Result<Vec<(String, String)>> {
    let files = service_files();
    for f in &files {
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(f, e)),
        };
        if let Some(entry) = parse_service(&text, name).map_err(|reason| Error::Config {
            path: f.clone(),
            reason,
        })? {
            return Ok(entry);
        }
    }
    Err(Error::Config {
        path: files.first().cloned().unwrap_or_default(),
        reason: format!(
            "service `{name}` is not defined in {}",
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    })
}

/// libpq's service-file format: `[name]` sections of `key=value` lines; `#` starts a comment.
fn parse_service(
    text: &str,
    name: &str,
) -> std::result::Result<Option<Vec<(String, String)>>, String> {
    let mut current: Option<&str> = None;
    let mut found: Option<Vec<(String, String)>> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if found.is_some() {
                break;
            }
            current = Some(section.trim());
            if current == Some(name) {
                found = Some(Vec::new());
            }
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(format!("line {}: syntax error (expected key=value)", n + 1));
        };
        if current == Some(name)
            && let Some(entry) = found.as_mut()
        {
            entry.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_file_sections() {
        let text = "# comment\n[other]\nhost=x\n\n[app]\nhost = db.internal\nport=5433\ndbname=app\n[last]\nport=1\n";
        let e = parse_service(text, "app").unwrap().unwrap();
        assert_eq!(
            e,
            vec![
                ("host".to_string(), "db.internal".to_string()),
                ("port".to_string(), "5433".to_string()),
                ("dbname".to_string(), "app".to_string())
            ]
        );
        assert_eq!(parse_service(text, "missing").unwrap(), None);
        assert!(parse_service("[a]\nnonsense\n", "a").is_err());
    }

    #[test]
    fn query_parameters_decide_the_identity() {
        let parse = |s: &str| PgConn::parse(s, &["table"]).unwrap().0;
        let a = identity(
            &resolve(&parse("postgres://u@h/app?table=x"))
                .unwrap()
                .options,
        );
        let b = identity(
            &resolve(&parse("postgres://u@h/app?dbname=app2&table=y"))
                .unwrap()
                .options,
        );
        assert_eq!(a.database, "app");
        assert_eq!(b.database, "app2");
        assert_ne!(a, b);
        let c = identity(
            &resolve(&parse("postgres://u@h:5432/app?table=z"))
                .unwrap()
                .options,
        );
        assert_eq!(a, c);
        let s = identity(
            &resolve(&parse("postgres://u@/app?host=/var/run/postgresql/"))
                .unwrap()
                .options,
        );
        assert_eq!(s.host, "/var/run/postgresql");
    }
}
