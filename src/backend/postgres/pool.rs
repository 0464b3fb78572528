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
        other => Error::Backend {
            target,
            reason: other.to_string(),
        },
    }
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
