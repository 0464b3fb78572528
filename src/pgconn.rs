//! A PostgreSQL connection as libpq's URI form describes it, parsed once.
//!
//! `postgres://[USER[:PASSWORD]@][HOST][:PORT][/DB][?PARAM=VALUE&…]`, where the query may also
//! give `host=` (a name, an address, or a Unix-socket directory), `hostaddr=`, `port=`,
//! `dbname=`, `user=`, `password=` and `service=` (a `pg_service.conf` entry); a value in the
//! query wins over the same part before it, as in libpq. Everything left empty comes from the
//! environment (`PGHOST`, `PGPORT`, `PGDATABASE`, `PGUSER`, `PGPASSWORD`, `PGSERVICE`) or the
//! driver's defaults when the connection is made (`backend::postgres::conn`), so
//! `postgres:///app` and `postgres://postgres@/app?host=/var/run/postgresql` work as they do
//! for psql.
//!
//! A parameter that neither dlqctl nor its driver knows is an error, never ignored: a typo such
//! as `qeue=` must not silently widen a move.

use std::fmt;

use crate::text::closest;

/// Driver parameters dlqctl passes on (sqlx's names and aliases).
const DRIVER_PARAMS: &[&str] = &[
    "sslmode",
    "ssl-mode",
    "sslrootcert",
    "ssl-root-cert",
    "ssl-ca",
    "sslcert",
    "ssl-cert",
    "sslkey",
    "ssl-key",
    "application_name",
    "options",
    "statement-cache-capacity",
];

/// Connection parameters kept as fields.
const CONNECTION_PARAMS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "service",
    "statement_cache",
];

/// libpq parameters that the driver does not implement: refused by name, value never shown.
const LIBPQ_ONLY: &[&str] = &[
    "sslpassword",
    "connect_timeout",
    "client_encoding",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "replication",
    "gssencmode",
    "sslcompression",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "sslcertmode",
    "sslnegotiation",
    "requirepeer",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "krbsrvname",
    "gsslib",
    "gssdelegation",
    "target_session_attrs",
    "load_balance_hosts",
    "passfile",
    "channel_binding",
    "require_auth",
    "fallback_application_name",
    "min_protocol_version",
    "max_protocol_version",
];

const SSL_MODES: &[&str] = &[
    "disable",
    "allow",
    "prefer",
    "require",
    "verify-ca",
    "verify-full",
];

#[derive(Clone, Default, PartialEq, Eq)]
pub struct PgConn {
    pub user: Option<String>,
    pub password: Option<String>,
    /// A host name, an IP address, or a Unix-socket directory (starts with `/`).
    pub host: Option<String>,
    pub hostaddr: Option<String>,
    pub port: Option<u16>,
    pub dbname: Option<String>,
    /// A `pg_service.conf` entry (`service=`; `PGSERVICE` when absent).
    pub service: Option<String>,
    /// `statement_cache=0`: no prepared statements (PgBouncer in transaction mode).
    pub no_statement_cache: bool,
    /// The driver's other parameters, in the order given, with sqlx's canonical names.
    pub params: Vec<(String, String)>,
}

impl fmt::Debug for PgConn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgConn")
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("host", &self.host)
            .field("hostaddr", &self.hostaddr)
            .field("port", &self.port)
            .field("dbname", &self.dbname)
            .field("service", &self.service)
            .field("params", &self.params)
            .finish()
    }
}

impl PgConn {
    /// Parse a `postgres://` or `postgresql://` URL. `own` names the caller's parameters
    /// (`table`, `queue`, …), returned beside the connection in the order given; each may
    /// appear once. The error is a reason, without the input (the caller shows it redacted).
    pub fn parse(
        input: &str,
        own: &[&str],
    ) -> std::result::Result<(PgConn, Vec<(String, String)>), String> {
        // Reasons quote decoded values (`hostaddr=%0A`): escape control characters so that the
        // error stays on one line (found by tests/it/bad_input.rs).
        Self::parse_parts(input, own).map_err(|r| crate::text::escape_controls(&r))
    }

    /// The steps of [`PgConn::parse`]: the scheme, the parts before the query, the query's
    /// parameters in order, then the checks of the whole.
    fn parse_parts(
        input: &str,
        own: &[&str],
    ) -> std::result::Result<(PgConn, Vec<(String, String)>), String> {
        let input = input.trim();
        check_scheme(input)?;
        let (url, empty_host) = parse_url(input)?;
        // `?password=` too: decoding keeps a `%` that starts no escape as typed.
        let query_password = url.query().unwrap_or_default().split('&').any(|pair| {
            pair.split_once('=').is_some_and(|(k, v)| {
                k == "password" && crate::address::form::bad_percent_encoding(v)
            })
        });
        if query_password {
            return Err(crate::address::form::bad_percent_reason(
                "password",
                "PGPASSWORD or ~/.pgpass",
            ));
        }
        let mut c = PgConn::from_authority_and_path(&url, empty_host)?;
        let mut mine: Vec<(String, String)> = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        for (k, v) in url.query_pairs() {
            let (k, v) = (k.into_owned(), v.into_owned());
            if seen.contains(&k) {
                return Err(format!("`{k}` is given twice"));
            }
            seen.push(k.clone());
            if own.contains(&k.as_str()) {
                mine.push((k, v));
                continue;
            }
            c.apply_param(k, v, own)?;
        }
        c.refuse_control_in_host()?;
        c.register_password();
        Ok((c, mine))
    }

    /// The user, password, host, port and database given before the query, percent-decoded.
    fn from_authority_and_path(
        url: &url::Url,
        empty_host: bool,
    ) -> std::result::Result<PgConn, String> {
        let mut c = PgConn::default();
        crate::address::form::check_userinfo_encoding(url, "PGPASSWORD or ~/.pgpass")?;
        if !url.username().is_empty() {
            c.user = Some(decode_part(url.username())?);
        }
        if let Some(p) = url.password() {
            c.password = Some(decode_part(p)?);
        }
        if !empty_host && let Some(h) = url.host_str().filter(|h| !h.is_empty()) {
            let h = decode_part(h)?;
            c.host = Some(h.trim_start_matches('[').trim_end_matches(']').to_string());
        }
        c.port = url.port();
        let path = url.path().trim_start_matches('/');
        if path.contains('/') {
            return Err(format!(
                "`/{path}` is not a database name (postgres://USER@HOST:PORT/DB?…)"
            ));
        }
        if !path.is_empty() {
            c.dbname = Some(decode_part(path)?);
        }
        Ok(c)
    }

    /// Apply one query parameter that is not the caller's own: a connection part (the query
    /// wins over the authority, as in libpq), a driver parameter, or a refusal.
    fn apply_param(
        &mut self,
        k: String,
        v: String,
        own: &[&str],
    ) -> std::result::Result<(), String> {
        match k.as_str() {
            "host" => self.host = Some(v).filter(|v| !v.is_empty()),
            "hostaddr" => {
                if v.parse::<std::net::IpAddr>().is_err() {
                    return Err(format!("hostaddr=`{v}` is not an IP address"));
                }
                self.hostaddr = Some(v);
            }
            "port" => {
                self.port = Some(
                    v.parse::<u16>()
                        .ok()
                        .filter(|p| *p > 0)
                        .ok_or_else(|| format!("port=`{v}` is not a port number (1-65535)"))?,
                )
            }
            "dbname" => self.dbname = Some(v).filter(|v| !v.is_empty()),
            "user" => self.user = Some(v).filter(|v| !v.is_empty()),
            "password" => self.password = Some(v),
            "service" => self.service = Some(v).filter(|v| !v.is_empty()),
            "statement_cache" => match v.as_str() {
                "0" | "off" | "false" => self.no_statement_cache = true,
                "1" | "on" | "true" => self.no_statement_cache = false,
                _ => {
                    return Err(format!(
                        "statement_cache=`{v}`: use 0 (no prepared statements) or 1"
                    ));
                }
            },
            "sslmode" | "ssl-mode" => {
                if !SSL_MODES.contains(&v.as_str()) {
                    return Err(format!(
                        "sslmode=`{v}` is not one of {}",
                        SSL_MODES.join(", ")
                    ));
                }
                self.params.push(("sslmode".into(), v));
            }
            "statement-cache-capacity" => {
                if v.parse::<usize>().is_err() {
                    return Err(format!("statement-cache-capacity=`{v}` is not a number"));
                }
                self.params.push((k, v));
            }
            name if DRIVER_PARAMS.contains(&name) || name.starts_with("options[") => {
                let canonical = match name {
                    "ssl-root-cert" | "ssl-ca" => "sslrootcert",
                    "ssl-cert" => "sslcert",
                    "ssl-key" => "sslkey",
                    other => other,
                };
                self.params.push((canonical.to_string(), v));
            }
            name if LIBPQ_ONLY.contains(&name) => {
                return Err(format!(
                    "`{name}` is a libpq parameter that dlqctl's PostgreSQL driver (sqlx) does not support; remove it"
                ));
            }
            other => return Err(unknown_parameter(other, own)),
        }
        Ok(())
    }

    /// A host is shown as it is (`postgres://HOST/…`): a decoded line break would split every
    /// message that names the address (tests/it/bad_input.rs found `postgres://a%0Ab/db`).
    fn refuse_control_in_host(&self) -> std::result::Result<(), String> {
        if let Some(h) = &self.host
            && h.chars().any(char::is_control)
        {
            return Err(format!(
                "host `{}` has a control character in it",
                crate::text::escape_controls(h)
            ));
        }
        Ok(())
    }

    /// Have the password scrubbed from everything shown. (A password equal to the user name is
    /// shown by the user name anyway; scrubbing it would only blank every mention of that name.)
    fn register_password(&self) {
        if let Some(p) = &self.password
            && self.user.as_ref() != Some(p)
        {
            crate::secrets::register(p);
        }
    }

    /// Whether the host is a Unix-socket directory.
    pub fn is_socket(&self) -> bool {
        self.host.as_deref().is_some_and(|h| h.starts_with('/'))
    }

    /// The URL form, password hidden, with `extra` parameters (dlqctl's own) after the
    /// driver's.
    pub fn display_with(&self, extra: &[(&str, &str)]) -> String {
        let mut s = String::from("postgres://");
        if let Some(u) = &self.user {
            s.push_str(&encode_userinfo(u));
            if self.password.is_some() {
                s.push_str(":***");
            }
            s.push('@');
        } else if self.password.is_some() {
            s.push_str(":***@");
        }
        if let Some(h) = self.host.as_deref().filter(|_| !self.is_socket()) {
            if h.contains(':') {
                s.push_str(&format!("[{h}]"));
            } else {
                s.push_str(h);
            }
        }
        if let Some(p) = self.port {
            s.push_str(&format!(":{p}"));
        }
        s.push('/');
        if let Some(d) = &self.dbname {
            s.push_str(&encode_path(d));
        }
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        if self.is_socket()
            && let Some(h) = &self.host
        {
            q.append_pair("host", h);
        }
        if let Some(a) = &self.hostaddr {
            q.append_pair("hostaddr", a);
        }
        if let Some(svc) = &self.service {
            q.append_pair("service", svc);
        }
        if self.no_statement_cache {
            q.append_pair("statement_cache", "0");
        }
        for (k, v) in &self.params {
            if crate::secrets::is_secret_name(k) {
                q.append_pair(k, "***");
            } else {
                q.append_pair(k, v);
            }
        }
        for (k, v) in extra {
            q.append_pair(k, v);
        }
        let q = q.finish();
        if !q.is_empty() {
            s.push('?');
            // Keep `/` and `,` readable (socket directories, schema lists).
            s.push_str(&q.replace("%2F", "/").replace("%2C", ","));
        }
        s
    }
}

impl fmt::Display for PgConn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display_with(&[]))
    }
}

/// The scheme must be `postgres` or `postgresql` (any case).
fn check_scheme(input: &str) -> std::result::Result<(), String> {
    let scheme_end = input
        .find("://")
        .ok_or("a PostgreSQL URL starts with postgres:// (postgres://USER@HOST:PORT/DB?…)")?;
    if !matches!(
        input[..scheme_end].to_ascii_lowercase().as_str(),
        "postgres" | "postgresql"
    ) {
        return Err("a PostgreSQL URL starts with postgres:// or postgresql://".into());
    }
    Ok(())
}

/// The refusal of a parameter nobody reads, with the nearest known name or, failing that, the
/// list of known ones.
fn unknown_parameter(other: &str, own: &[&str]) -> String {
    let known = own
        .iter()
        .chain(CONNECTION_PARAMS)
        .chain(DRIVER_PARAMS)
        .copied();
    let hint = match closest(other, known) {
        Some(s) => format!(" (did you mean `{s}`?)"),
        None => format!(
            " (dlqctl reads {}; the driver reads {})",
            own.join(", "),
            CONNECTION_PARAMS
                .iter()
                .chain(DRIVER_PARAMS)
                .copied()
                .filter(|p| !p.contains('-') && *p != "statement_cache")
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    format!("unknown parameter `{other}`{hint}")
}

/// Parse with the url crate, which refuses user info before an empty host
/// (`postgres://user@/db`, libpq's form for a Unix socket): such a URL is parsed with a
/// placeholder host, reported as empty.
fn parse_url(input: &str) -> std::result::Result<(url::Url, bool), String> {
    match url::Url::parse(input) {
        Ok(u) => Ok((u, false)),
        Err(url::ParseError::EmptyHost) => {
            let after = input.find("://").map_or(0, |i| i + 3);
            let at = input[after..]
                .char_indices()
                .filter(|&(_, ch)| ch == '@')
                .map(|(i, _)| after + i)
                .find(|&i| {
                    matches!(
                        input[i + 1..].chars().next(),
                        None | Some('/' | '?' | ':' | '#')
                    )
                })
                .ok_or("empty host")?;
            let patched = format!("{}@dlqctl-no-host{}", &input[..at], &input[at + 1..]);
            url::Url::parse(&patched)
                .map(|u| (u, true))
                .map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// A part of the URL before the query, percent-decoded.
fn decode_part(s: &str) -> std::result::Result<String, String> {
    percent_encoding_decode(s).ok_or_else(|| "the URL is not valid UTF-8".to_string())
}

fn percent_encoding_decode(s: &str) -> Option<String> {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(|c| c.into_owned())
}

/// What must be escaped in the user name and the database name of a URL.
const COMPONENT: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b':')
    .add(b'@')
    .add(b'/')
    .add(b'?')
    .add(b'#')
    .add(b'%');

fn encode_userinfo(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, COMPONENT).to_string()
}

fn encode_path(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, COMPONENT).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PgConn {
        PgConn::parse(s, &["table"]).unwrap().0
    }

    #[test]
    fn authority_and_query_parts() {
        let c = p("postgres://app:s3cret@db:5433/app?sslmode=require&table=x");
        assert_eq!(c.user.as_deref(), Some("app"));
        assert_eq!(c.password.as_deref(), Some("s3cret"));
        assert_eq!(c.host.as_deref(), Some("db"));
        assert_eq!(c.port, Some(5433));
        assert_eq!(c.dbname.as_deref(), Some("app"));
        assert_eq!(
            c.params,
            vec![("sslmode".to_string(), "require".to_string())]
        );
        // The query wins, as in libpq.
        let c = p("postgres://u@h/app?dbname=app2&host=h2&port=7&user=v&password=pw");
        assert_eq!(
            (
                c.host.as_deref(),
                c.port,
                c.dbname.as_deref(),
                c.user.as_deref()
            ),
            (Some("h2"), Some(7), Some("app2"), Some("v"))
        );
        assert_eq!(c.password.as_deref(), Some("pw"));
    }

    #[test]
    fn unix_sockets_and_empty_parts() {
        let c = p("postgres://postgres@/app?host=/var/run/postgresql&table=t");
        assert_eq!(c.user.as_deref(), Some("postgres"));
        assert_eq!(c.host.as_deref(), Some("/var/run/postgresql"));
        assert!(c.is_socket());
        assert_eq!(c.dbname.as_deref(), Some("app"));
        assert_eq!(
            c.to_string(),
            "postgres://postgres@/app?host=/var/run/postgresql"
        );
        let c = p("postgres:///app?table=t");
        assert_eq!(
            (c.host.as_deref(), c.dbname.as_deref()),
            (None, Some("app"))
        );
        let c = p("postgresql://%2Fvar%2Frun%2Fpostgresql/app");
        assert_eq!(c.host.as_deref(), Some("/var/run/postgresql"));
        let c = p("postgres://u:pw@/app");
        assert_eq!(c.password.as_deref(), Some("pw"));
        assert_eq!(c.host, None);
    }

    #[test]
    fn unknown_and_unsupported_parameters_are_refused() {
        let e =
            PgConn::parse("postgres://h/db?table=t&qeue=billing", &["table", "queue"]).unwrap_err();
        assert!(
            e.contains("`qeue`") && e.contains("did you mean `queue`"),
            "{e}"
        );
        let e = PgConn::parse("postgres://h/db?shema=x", &["schema"]).unwrap_err();
        assert!(e.contains("did you mean `schema`"), "{e}");
        let e = PgConn::parse("postgres://h/db?sslpassword=S3cret", &[]).unwrap_err();
        assert!(e.contains("sslpassword") && !e.contains("S3cret"), "{e}");
        assert!(PgConn::parse("postgres://h/db?port=99999", &[]).is_err());
        assert!(PgConn::parse("postgres://h/db?sslmode=maybe", &[]).is_err());
        assert!(PgConn::parse("postgres://h/db?table=a&table=b", &["table"]).is_err());
        assert!(PgConn::parse("mysql://h/db", &[]).is_err());
    }

    #[test]
    fn display_hides_the_password_wherever_it_was_given() {
        for s in [
            "postgres://u:S3cret@h/db",
            "postgres://u@h/db?password=S3cret",
            "postgres://u:S3cret@/db?host=/tmp",
        ] {
            let shown = p(s).to_string();
            assert!(
                !shown.contains("S3cret") && shown.contains("***"),
                "{shown}"
            );
            assert!(!format!("{:?}", p(s)).contains("S3cret"));
        }
    }
}
