//! Connecting to a server (a direct connection first, then the pool), and driver errors as
//! dlqctl's.

use std::time::Duration;

use sqlx::ConnectOptions;
use sqlx::postgres::{PgPool, PgPoolOptions};

use super::conn;
use crate::address::redact;
use crate::error::{Error, Result};
use crate::pgconn::PgConn;

/// Map a driver error to the spec's error kinds, naming `target` (never its password).
pub fn pg_err(target: &str, e: sqlx::Error) -> Error {
    let target = redact(target);
    if let Some(db) = e.as_database_error() {
        let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
        let msg = db.message().to_string();
        return match code.as_str() {
            "28P01" | "28000" => Error::PermissionDenied {
                target,
                reason: format!("authentication failed ({msg})"),
            },
            "42501" => Error::PermissionDenied {
                target,
                reason: msg,
            },
            "3D000" => Error::NotFound {
                what: "database".into(),
                detail: msg,
            },
            "42P01" => Error::NotFound {
                what: "table".into(),
                detail: msg,
            },
            "57P01" | "57P02" | "57P03" | "08000" | "08003" | "08006" => Error::Unreachable {
                target,
                reason: crate::error::with_rerun(format!("{msg}: the server went away")),
            },
            _ => Error::Backend {
                target,
                reason: format!("{msg} (SQLSTATE {code})"),
            },
        };
    }
    match e {
        sqlx::Error::Io(io) => Error::Unreachable {
            target,
            reason: crate::error::with_rerun(io),
        },
        sqlx::Error::Tls(t) => Error::Unreachable {
            target,
            reason: format!("TLS: {t}"),
        },
        sqlx::Error::PoolTimedOut => Error::Unreachable {
            target,
            reason: "timed out connecting".into(),
        },
        sqlx::Error::Configuration(c) => Error::InvalidAddress {
            input: target,
            reason: c.to_string(),
        },
        sqlx::Error::Protocol(p) => Error::Backend {
            target,
            reason: format!(
                "what answered does not speak PostgreSQL's protocol: {}",
                without_source_location(&p)
            ),
        }
        .hinted("check the host and port: is it a PostgreSQL server (not a proxy, a web server or another database)?"),
        other => Error::Backend {
            target,
            reason: without_source_location(&other.to_string()).to_string(),
        },
    }
}

/// A driver error of one statement that moves rows from the table `from` into `to` (a move
/// inside the database): a refused grant names the table PostgreSQL names ("permission
/// denied for table kdl": the dead-letter table's DELETE, not the target's INSERT).
pub fn pg_err_moving(from: &str, to: &str, e: sqlx::Error) -> Error {
    let named = e
        .as_database_error()
        .filter(|d| d.code().as_deref() == Some("42501"))
        .and_then(|d| {
            d.message()
                .strip_prefix("permission denied for table ")
                .map(str::to_string)
        });
    let bare = |t: &str| {
        let last = t.rsplit('.').next().unwrap_or(t);
        last.trim_matches('"').replace("\"\"", "\"")
    };
    match named {
        Some(n) if bare(from) == n && bare(to) != n => pg_err(from, e),
        _ => pg_err(to, e),
    }
}

/// sqlx's protocol errors end with where in sqlx they were raised (`… (sqlx_postgres::
/// connection::tls:95)`): the driver's internals, nothing the user can act on.
fn without_source_location(text: &str) -> &str {
    let Some((before, at)) = text.rsplit_once(" (") else {
        return text;
    };
    let Some(at) = at.strip_suffix(')') else {
        return text;
    };
    let internal = at.starts_with("sqlx")
        && at.contains("::")
        && at
            .rsplit_once(':')
            .is_some_and(|(_, line)| !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()));
    if internal { before } else { text }
}

/// Connect to the server of `conn`, resolved as libpq would (see [`conn::resolve`]).
pub async fn connect(c: &PgConn) -> Result<PgPool> {
    let shown = c.to_string();
    let resolved = conn::resolve(c)?;
    let opts = resolved.options;
    let auth = |e: Error| match e {
        Error::PermissionDenied { target, reason }
            if reason.starts_with("authentication failed") =>
        {
            Error::AuthenticationFailed {
                target,
                reason: reason
                    .trim_start_matches("authentication failed (")
                    .trim_end_matches(')')
                    .to_string(),
                password_from: resolved.password.describe().into(),
            }
        }
        other => other,
    };
    // One direct connection first: a refused connection or a bad password is reported as
    // what it is, at once, instead of as a pool timeout.
    let first = tokio::time::timeout(Duration::from_secs(15), opts.connect())
        .await
        .map_err(|_| Error::Unreachable {
            target: shown.clone(),
            reason: "timed out connecting after 15s".into(),
        })?
        .map_err(|e| auth(pg_err(&shown, e)))?;
    drop(first);
    let behind_a_pooler = c.no_statement_cache;
    PgPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(Duration::from_secs(15))
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if !behind_a_pooler {
                    notice_a_vanished_client(conn).await;
                }
                Ok(())
            })
        })
        .connect_with(opts)
        .await
        .map_err(|e| auth(pg_err(&shown, e)))
}

/// Ask the server (PostgreSQL 14 and later) to check every second, while a statement runs,
/// that dlqctl is still connected, and to cancel the statement if it is not. Without it, a
/// batch statement waiting on a lock when dlqctl is stopped (a second Ctrl-C, a kill) would
/// still run and commit once the lock is released, after the run's last progress record: the
/// audit trail's "moved" would be a batch short. Older servers do not know the setting; a
/// server that refuses it only loses this check. Not sent through a pooler
/// (`no_statement_cache`), whose server sessions other clients share.
async fn notice_a_vanished_client(conn: &mut sqlx::PgConnection) {
    if conn.server_version_num().is_some_and(|v| v >= 140_000) {
        let _ = sqlx::query("SET client_connection_check_interval = '1s'")
            .execute(conn)
            .await;
    }
}

#[cfg(test)]
mod tests {
    /// Operator report: a host that answered HTTP gave `… unexpected response from
    /// SSLRequest: 0x48 (sqlx_postgres::connection::tls:95)`, sqlx's source location, no hint.
    #[test]
    fn a_protocol_error_names_no_sqlx_source_location() {
        let e = super::pg_err(
            "postgres://app:pw@10.0.0.1:5432/app",
            sqlx::Error::Protocol(
                "unexpected response from SSLRequest: 0x48 (sqlx_postgres::connection::tls:95)"
                    .into(),
            ),
        );
        let text = e.to_string();
        assert!(
            text.ends_with("unexpected response from SSLRequest: 0x48") && !text.contains("pw"),
            "{text}"
        );
        assert!(
            e.hints().iter().any(|h| h.contains("host and port")),
            "{e:?}"
        );
        assert_eq!(super::without_source_location("a (b)"), "a (b)");
        assert_eq!(super::without_source_location("x (sqlx_core::y:12)"), "x");
    }
}
