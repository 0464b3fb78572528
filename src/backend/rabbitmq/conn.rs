//! Connections: the credentials (URL, `DLQCTL_AMQP_PASSWORD`, `[rabbitmq] password`, else
//! RabbitMQ's `guest`), one AMQP connection per reader, session and sink (each named, so that
//! the management UI and a refused second run say who holds what), and the broker's errors as
//! dlqctl's.

use std::time::Duration;

use lapin::uri::{AMQPAuthority, AMQPQueryString, AMQPScheme, AMQPUri, AMQPUserInfo};
use lapin::{Connection, ConnectionProperties, ErrorKind};

use super::address::AmqpAddress;
use crate::config::RabbitmqConfig;
use crate::error::Error;

/// The environment variable a password can come from.
pub const PASSWORD_ENV: &str = "DLQCTL_AMQP_PASSWORD";
/// The environment variable the management API's URL can come from.
pub const API_ENV: &str = "DLQCTL_RABBITMQ_API";

const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// How to reach one broker and vhost, as one user.
#[derive(Clone)]
pub struct Broker {
    pub addr: AmqpAddress,
    pub user: String,
    password: String,
    pub password_from: String,
    /// The management API's base URL, when one is known.
    pub api: Option<String>,
}

impl Broker {
    /// `file`: the config file `cfg` was read from (an authentication error names it).
    pub fn new(addr: &AmqpAddress, cfg: &RabbitmqConfig, file: Option<&std::path::Path>) -> Broker {
        let env = std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty());
        let (password, password_from) = match (&addr.password, env, &cfg.password, &addr.user) {
            (Some(p), _, _, _) => (p.clone(), "the URL".into()),
            (None, Some(p), _, _) => (p, "DLQCTL_AMQP_PASSWORD".into()),
            (None, None, Some(p), _) => (
                p.clone(),
                format!("[rabbitmq] password in {}", crate::config::file_name(file)),
            ),
            (None, None, None, None) => ("guest".into(), "RabbitMQ's default (guest)".into()),
            (None, None, None, Some(_)) => (String::new(), "nowhere (no password given)".into()),
        };
        crate::secrets::register(&password);
        let api = addr
            .api
            .clone()
            .or_else(|| cfg.api.clone())
            .or_else(|| std::env::var(API_ENV).ok().filter(|a| !a.is_empty()))
            .map(|a| a.trim_end_matches('/').to_string());
        Broker {
            addr: addr.clone(),
            user: addr.user.clone().unwrap_or_else(|| "guest".into()),
            password,
            password_from,
            api,
        }
    }

    pub fn password(&self) -> &str {
        &self.password
    }

    /// The address as shown.
    pub fn shown(&self) -> String {
        self.addr.to_string()
    }

    /// A new connection, named `dlqctl PURPOSE USER@HOST pid N` in the broker's lists.
    pub async fn connect(&self, purpose: &str) -> Result<Connection, Error> {
        let uri = AMQPUri {
            scheme: if self.addr.tls {
                AMQPScheme::AMQPS
            } else {
                AMQPScheme::AMQP
            },
            authority: AMQPAuthority {
                userinfo: AMQPUserInfo {
                    username: self.user.clone(),
                    password: self.password.clone(),
                },
                host: self.addr.host.clone(),
                port: self.addr.port,
            },
            vhost: self.addr.vhost.clone(),
            query: AMQPQueryString {
                heartbeat: Some(30),
                connection_timeout: Some(CONNECT_TIMEOUT.as_millis() as u64),
                ..AMQPQueryString::default()
            },
        };
        let props = ConnectionProperties::default().with_connection_name(who(purpose).into());
        match tokio::time::timeout(CONNECT_TIMEOUT, Connection::connect_uri(uri, props)).await {
            Ok(Ok(c)) => Ok(c),
            Ok(Err(e)) => Err(self.error(&format!("vhost {}", self.addr.vhost), e)),
            Err(_) => Err(Error::Unreachable {
                target: self.shown(),
                reason: format!("no AMQP handshake within {} s", CONNECT_TIMEOUT.as_secs()),
            }),
        }
    }

    /// A broker error as dlqctl's, `what` naming the object it was about.
    pub fn error(&self, what: &str, e: lapin::Error) -> Error {
        self.error_needing(what, None, e)
    }

    /// A broker error as dlqctl's, `what` naming the object it was about; `need`: the
    /// permission the refused method needs, and what it was doing (`("write", "publishing a
    /// copy")`), for a refusal to say what to grant.
    ///
    /// A connection or channel that is gone (closed from the management UI or API, by the
    /// broker, or by the network) is one line that says so: lapin reports the next operation
    /// on it as `invalid channel state: Error (basic.ack)`, which tells an operator nothing.
    pub fn error_needing(&self, what: &str, need: Option<Need>, e: lapin::Error) -> Error {
        let target = self.shown();
        let ErrorKind::ProtocolError(p) = e.kind() else {
            return match e.kind() {
                ErrorKind::IOError(io) => Error::Unreachable {
                    target,
                    reason: closed_note(io),
                },
                ErrorKind::MissingHeartbeatError => Error::Unreachable {
                    target,
                    reason: closed_note("the broker stopped answering (no heartbeat)"),
                },
                ErrorKind::InvalidChannelState(_, op) => Error::Backend {
                    target,
                    reason: closed(&format!("{op} on {what}")),
                },
                ErrorKind::InvalidConnectionState(_) | ErrorKind::InvalidChannel(_) => {
                    Error::Backend {
                        target,
                        reason: closed(what),
                    }
                }
                _ => Error::Backend {
                    target,
                    reason: e.to_string(),
                },
            };
        };
        let text = p.get_message().as_str().to_string();
        match p.get_id() {
            403 if text.contains("Login was refused")
                || text.contains("ACCESS_REFUSED - Login") =>
            {
                Error::AuthenticationFailed {
                    target,
                    reason: text,
                    password_from: self.password_from.clone(),
                }
            }
            // Not a permission: another consumer holds the queue exclusively, as a dlqctl
            // redrive or purge does while it runs. Busy, like a held lock: exit 3, re-run later.
            403 if text.contains("in exclusive use") => Error::Backend {
                target,
                reason: format!(
                    "{what} is in exclusive use by another consumer (a dlqctl redrive or purge takes the queue with one while it runs)"
                ),
            }
            .hinted("wait for that run to end, then re-run (the broker's management UI names the consumer's connection)"),
            403 => self.denied(what, need, &text),
            404 => Error::NotFound {
                what: format!("{what} on {target}"),
                detail: text,
            },
            530 if text.contains("not found") => Error::NotFound {
                what: format!("vhost {} on {target}", self.addr.vhost),
                detail: text,
            },
            530 => Error::PermissionDenied {
                target,
                reason: text,
            }
            .hinted(format!(
                "the user `{}` has no permissions in vhost `{}`: grant them with `rabbitmqctl set_permissions -p {} {} CONFIGURE WRITE READ` (docs/permissions.md lists what each command needs)",
                self.user, self.addr.vhost, self.addr.vhost, self.user
            )),
            // CONNECTION_FORCED: closed by an operator (management UI or API) or a broker
            // shutting down.
            320 => Error::Backend {
                target,
                reason: closed(&format!("{what}: {text}")),
            },
            _ => Error::Backend {
                target,
                reason: format!("{what}: {text}"),
            },
        }
    }
}

/// The permission a method needs on its object (`configure`, `write`, `read`), and what the
/// method was doing (`publishing a copy`).
pub type Need = (&'static str, &'static str);

impl Broker {
    /// A refused permission (ACCESS_REFUSED): the object, its vhost and the address (its
    /// password never shown); with `need`, what the method needs and the grant that fixes it.
    fn denied(&self, what: &str, need: Option<Need>, text: &str) -> Error {
        let vhost = &self.addr.vhost;
        let object = refused_object(text).unwrap_or_else(|| what.to_string());
        let e = Error::PermissionDenied {
            target: format!("{object} in vhost `{vhost}` ({})", self.shown()),
            reason: match need {
                Some((perm, doing)) => format!("{doing} needs {perm} permission: {text}"),
                None => text.to_string(),
            },
        };
        let Some((perm, _)) = need else {
            return e;
        };
        let user = &self.user;
        e.hinted(format!(
            "grant the user `{user}` {perm} permission on {object}: in vhost `{vhost}`, its {perm} pattern must match the name (`rabbitmqctl set_permissions -p {vhost} {user} CONFIGURE WRITE READ`; docs/permissions.md lists what each command needs)"
        ))
    }
}

/// `exchange `orders`` from RabbitMQ's `ACCESS_REFUSED - access to exchange 'orders' in vhost
/// '/' refused for user 'ops'`.
fn refused_object(text: &str) -> Option<String> {
    let rest = text.split_once("access to ")?.1;
    let (kind, rest) = rest.split_once(" '")?;
    let (name, _) = rest.rsplit_once("' in vhost '")?;
    matches!(kind, "queue" | "exchange").then(|| format!("{kind} `{name}`"))
}

/// What a run stopped by a lost connection leaves, and what to do: [`crate::error::RERUN`] and
/// why (a read-only command drops the whole note).
fn closed_note(reason: impl std::fmt::Display) -> String {
    format!(
        "{reason} ({}: re-running is safe, copies carry their stable ids)",
        crate::error::RERUN
    )
}

/// The reason of an error on a connection or channel that is gone, `at` naming the operation.
fn closed(at: &str) -> String {
    closed_note(format!(
        "the AMQP connection was closed (at {at}), e.g. by an operator from the management UI or API, or by the broker"
    ))
}

/// `dlqctl redrive root@build-7 pid 4242`: who holds a connection.
pub fn who(purpose: &str) -> String {
    format!(
        "dlqctl {purpose} {}@{} pid {}",
        crate::operator::user(),
        crate::operator::host(),
        std::process::id()
    )
}

/// Close a connection politely (its channels' unacknowledged messages go back to their
/// queues); a connection that is already gone is fine.
pub async fn close(c: &Connection) {
    if c.status().connected() {
        let _ = tokio::time::timeout(
            Duration::from_secs(5),
            c.close(200, "dlqctl is done".into()),
        )
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The object a refusal is about, from RabbitMQ's words (a refusal says it, the reason
    /// quotes them).
    #[test]
    fn a_refusal_names_its_object() {
        let t = "ACCESS_REFUSED - access to exchange 'orders.retry' in vhost 'shop' refused for user 'ops'";
        assert_eq!(
            refused_object(t).as_deref(),
            Some("exchange `orders.retry`")
        );
        let t =
            "ACCESS_REFUSED - write access to queue 'it''s' in vhost '/' refused for user 'ops'";
        assert_eq!(refused_object(t).as_deref(), Some("queue `it''s`"));
        assert_eq!(
            refused_object("ACCESS_REFUSED - queue name 'amq.x' contains reserved prefix 'amq.*'"),
            None
        );
        assert_eq!(
            refused_object("NOT_ALLOWED - access to vhost '/' refused for user 'ops'"),
            None
        );
    }

    /// Operator report (2026-12-06): a connection closed from the management API under a
    /// redrive ended with `…: invalid channel state: Error (basic.ack)`. A connection or channel
    /// that is gone is one line that says so, what was lost (nothing) and what to do (re-run);
    /// exit 3, no hint under it.
    #[test]
    fn a_closed_connection_is_one_clear_line() {
        let addr =
            super::super::address::parse("amqp://guest@localhost:5672/%2F?queue=d8").unwrap();
        let b = Broker::new(&addr, &RabbitmqConfig::default(), None);
        for kind in [
            ErrorKind::InvalidChannelState(lapin::ChannelState::Error, "basic.ack"),
            ErrorKind::InvalidChannelState(lapin::ChannelState::Closed, "basic.publish"),
            ErrorKind::InvalidConnectionState(lapin::ConnectionState::Closed),
        ] {
            let e = b.error("queue d8", lapin::Error::from(kind));
            let text = e.to_string();
            assert!(
                text.contains("the AMQP connection was closed")
                    && text.contains("by an operator")
                    && text.contains("nothing was lost; re-run to continue")
                    && text.contains("copies carry their stable ids")
                    && !text.contains("invalid channel state"),
                "{text}"
            );
            assert!(!text.contains('\n'), "{text}");
            assert_eq!(e.exit_code(), crate::error::exit::BACKEND, "{text}");
            assert!(e.hints().is_empty(), "{:?}", e.hints());
        }
        let e = b.error(
            "queue d8",
            lapin::Error::from(ErrorKind::InvalidChannelState(
                lapin::ChannelState::Error,
                "basic.ack",
            )),
        );
        assert!(e.to_string().contains("(at basic.ack on queue d8)"), "{e}");
    }
}
