//! One multiplexed connection per address, and what Redis's errors mean to a user.

use redis::aio::MultiplexedConnection;

use super::address::RedisAddress;
use crate::error::Error;

/// Where the password came from, for an authentication error.
fn password_from(a: &RedisAddress) -> (Option<String>, &'static str) {
    if let Some(p) = &a.password {
        return (Some(p.clone()), "the URL");
    }
    match std::env::var("REDISCLI_AUTH") {
        Ok(p) if !p.is_empty() => {
            crate::secrets::register(&p);
            (Some(p), "REDISCLI_AUTH")
        }
        _ => (
            None,
            "nowhere (none given: put it in the URL or REDISCLI_AUTH)",
        ),
    }
}

/// Connect to the server an address names (TLS for `rediss://`, through rustls).
pub(super) async fn connect(a: &RedisAddress) -> Result<MultiplexedConnection, Error> {
    let (password, from) = password_from(a);
    let mut u = url::Url::parse(&format!(
        "{}://{}:{}/{}",
        if a.tls { "rediss" } else { "redis" },
        if a.host.contains(':') && !a.host.starts_with('[') {
            format!("[{}]", a.host)
        } else {
            a.host.clone()
        },
        a.port,
        a.db
    ))
    .map_err(|e| Error::InvalidAddress {
        input: a.to_string(),
        reason: e.to_string(),
    })?;
    if let Some(user) = &a.user {
        let _ = u.set_username(user);
    }
    if let Some(p) = &password {
        let _ = u.set_password(Some(p));
    }
    if a.tls {
        // Both of rustls's providers may be compiled in (the AWS SDK brings aws-lc-rs): say
        // which one, once per process.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let target = a.to_string();
    let client = match tls_files(a)? {
        Some(certs) => redis::Client::build_with_tls(u.as_str(), certs),
        None => redis::Client::open(u.as_str()),
    }
    .map_err(|e| err(&target, from, None, e))?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(std::time::Duration::from_secs(10)))
        .set_response_timeout(Some(std::time::Duration::from_secs(60)));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|e| err(&target, from, None, e))
}

/// The certificate files an address names (`sslcert`, `sslkey`, `sslrootcert`), read; None
/// when it names none (the system's store, and no client certificate).
fn tls_files(a: &RedisAddress) -> Result<Option<redis::TlsCertificates>, Error> {
    if a.sslcert.is_none() && a.sslrootcert.is_none() {
        return Ok(None);
    }
    let read = |name: &str, path: &str| {
        std::fs::read(path).map_err(|e| {
            Error::invalid_arg(name, format!("cannot read {path}: {e}"))
                .hinted("a PEM file: the client certificate (sslcert), its key (sslkey), the CA to trust (sslrootcert)")
        })
    };
    let client_tls = match (&a.sslcert, &a.sslkey) {
        (Some(cert), Some(key)) => Some(redis::ClientTlsConfig {
            client_cert: read("sslcert", cert)?,
            client_key: read("sslkey", key)?,
        }),
        _ => None,
    };
    let root_cert = a
        .sslrootcert
        .as_deref()
        .map(|p| read("sslrootcert", p))
        .transpose()?;
    Ok(Some(redis::TlsCertificates {
        client_tls,
        root_cert,
    }))
}

/// A Redis error of a connection that was made (mid-run): a connection dropped then is not a
/// server that cannot be reached (the operator report op7: `cannot reach …: broken pipe`, with
/// a hint to check the network, for a `CLIENT KILL`). Each call dlqctl makes is one command
/// or one script, which Redis runs whole or not at all: nothing was lost.
/// `midrun`: a batch was retried or removed before (a key of another type now was replaced
/// while the run went).
pub(super) fn run_err(
    target: &str,
    password_from: &'static str,
    key: Option<&str>,
    midrun: bool,
    e: redis::RedisError,
) -> Error {
    if midrun && let Some(reason) = wrong_type(&e) {
        let key = key.unwrap_or("KEY");
        return Error::Backend {
            target: target.into(),
            reason: format!(
                "a key the run uses changed type while the run went ({reason}); nothing was changed by that call, and what was moved before stays moved"
            ),
        }
        .hinted(format!(
            "someone replaced the key during the run (it held what the job library keeps there when the run began): `redis-cli -n DB TYPE {key}` shows what is there now; once it is the library's again, re-run to continue"
        ));
    }
    if (e.is_connection_dropped() || e.is_io_error()) && !e.is_timeout() {
        let reason = crate::secrets::scrub(&e.to_string());
        return Error::Backend {
            target: target.into(),
            reason: format!(
                "the connection to the server was dropped mid-run ({reason}): by the server (CLIENT KILL, a restart, its idle timeout) or the network; nothing was lost, re-run to continue"
            ),
        };
    }
    err(target, password_from, key, e)
}

/// What a wrong-type refusal says, in one clause: the retry script's own word where it gave one
/// (`dlqctl: KEY holds a set, …`), else Redis's; None when the error is no such refusal. A
/// pipeline's errors come as one (`Pipeline failures: [(Index 0, …), …]`): the first that
/// tells is used.
fn wrong_type(e: &redis::RedisError) -> Option<String> {
    let items = e.clone().into_server_errors()?;
    let own = items
        .iter()
        .find(|(_, s)| s.code() == "dlqctl:" && s.details().is_some_and(|d| d.contains(" holds ")));
    if let Some((_, s)) = own {
        let d = s.details().unwrap_or_default();
        // `…; nothing was changed` is said by the caller, once.
        return Some(
            d.split("; nothing was changed")
                .next()
                .unwrap_or(d)
                .to_string(),
        );
    }
    items
        .iter()
        .find(|(_, s)| s.code() == "WRONGTYPE")
        .map(|(_, s)| {
            format!(
                "WRONGTYPE: {}",
                s.details()
                    .unwrap_or("Operation against a key holding the wrong kind of value")
            )
        })
}

/// A Redis error as one of dlqctl's: unreachable, authentication, permission (ACL), or the
/// server's own word. `key`: the set the address reads, named where a key holds another type.
pub(super) fn err(
    target: &str,
    password_from: &'static str,
    key: Option<&str>,
    e: redis::RedisError,
) -> Error {
    let reason = crate::secrets::scrub(&e.to_string());
    let code = e.code().unwrap_or_default().to_string();
    if code == "WRONGPASS"
        || reason.contains("WRONGPASS")
        || code == "NOAUTH"
        || e.kind() == redis::ErrorKind::AuthenticationFailed
    {
        return Error::AuthenticationFailed {
            target: target.into(),
            reason,
            password_from: password_from.into(),
        };
    }
    // The connection's SELECT refused by an ACL comes back as the crate's own error.
    if code == "NOPERM" || reason.contains("no permissions to run") {
        return Error::PermissionDenied {
            target: target.into(),
            reason,
        };
    }
    if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() || e.is_connection_refusal() {
        let certificate = reason.contains("certificate");
        let asks = reason.contains("CertificateRequired");
        let e = Error::Unreachable {
            target: target.into(),
            reason,
        };
        // The server wants a client certificate; or rustls refused the server's certificate:
        // say how a private CA is trusted.
        return if asks {
            e.hinted("the server asks for a client certificate (tls-auth-clients): name it and its key in the URL, &sslcert=FILE&sslkey=FILE (docs/systems/sidekiq.md#tls)")
        } else if certificate {
            e.hinted("the server's certificate must be signed by a CA in the system's store, in the PEM file SSL_CERT_FILE names, or in the one the URL's &sslrootcert=FILE names (docs/systems/sidekiq.md#tls)")
        } else {
            e
        };
    }
    let wrong_type = code == "WRONGTYPE" || reason.contains("WRONGTYPE");
    let no_db = reason.contains("DB index is out of range");
    let e = Error::Backend {
        target: target.into(),
        reason,
    };
    if wrong_type {
        // Another application's key of the same name: the wrong database, namespace or prefix.
        let which = key.map_or("KEY".to_string(), |k| format!("{k} (and the job keys)"));
        return e.hinted(format!("a key dlqctl reads holds another kind of value: this database, namespace= or prefix= is not the job library's (check the /DB number and the address's namespace= or prefix=; `redis-cli -n DB TYPE {which}` shows what is there)"));
    }
    if no_db {
        return e.hinted("the server has fewer databases than the URL's /DB number (its `databases` setting, 16 by default): check the number after the port");
    }
    e
}
