//! The RabbitMQ forms: `amqp://[USER[:PASSWORD]@]HOST[:PORT][/VHOST]?queue=NAME` (a queue: what
//! is read, and a target reached through the default exchange), or `…?exchange=NAME[&routing_key=KEY]`
//! (a target only), and `amqps://…` for TLS. `&api=http[s]://HOST:PORT` names the management
//! HTTP API (docs/rabbitmq.md#the-management-api).
//!
//! Compiled with or without the `rabbitmq` feature, as every address form is: a build without
//! the backend still parses the address, and says it cannot open it.

use std::fmt;

use crate::address::form::{Form, invalid};
use crate::error::Result;

/// The forms as `--help` lists them.
pub fn usage() -> String {
    "amqp[s]://USER@HOST:PORT/VHOST?queue=NAME[&api=http://HOST:15672]  (a target also\n\
     \x20 ?exchange=NAME&routing_key=KEY; the password from the URL, DLQCTL_AMQP_PASSWORD or\n\
     \x20 [rabbitmq] password)"
        .into()
}

/// A RabbitMQ address. The password is kept apart and never shown.
#[derive(Clone, Debug, PartialEq)]
pub struct AmqpAddress {
    /// `amqps://`: TLS.
    pub tls: bool,
    pub user: Option<String>,
    /// From the URL's user info (never displayed).
    pub password: Option<String>,
    pub host: String,
    pub port: u16,
    /// The virtual host, decoded (`/` when the URL has no path).
    pub vhost: String,
    pub target: AmqpTarget,
    /// `api=`: the management HTTP API's base URL.
    pub api: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AmqpTarget {
    /// A queue (read from; written to through the default exchange).
    Queue(String),
    /// An exchange and a routing key (written to only).
    Exchange {
        exchange: String,
        routing_key: String,
    },
}

impl AmqpAddress {
    /// The same broker, vhost and credentials, another target.
    pub fn with_target(&self, target: AmqpTarget) -> AmqpAddress {
        AmqpAddress {
            target,
            ..self.clone()
        }
    }

    /// The queue name, when the address names a queue.
    pub fn queue(&self) -> Option<&str> {
        match &self.target {
            AmqpTarget::Queue(q) => Some(q),
            AmqpTarget::Exchange { .. } => None,
        }
    }

    /// `HOST:PORT/VHOST` as shown in messages (the vhost encoded as in the URL).
    pub fn broker(&self) -> String {
        format!("{}:{}/{}", self.host, self.port, enc(&self.vhost))
    }
}

const PARAMS: [&str; 4] = ["queue", "exchange", "routing_key", "api"];

/// Parse `amqp://…` or `amqps://…` (the scheme already checked by the caller).
pub fn parse(input: &str) -> Result<AmqpAddress> {
    let bad = |reason: &str| invalid(input, reason);
    if input.chars().any(char::is_control) {
        return Err(bad(
            "the URL has a control character (a line break, a tab) in it",
        ));
    }
    let url = url::Url::parse(input).map_err(|e| bad(&e.to_string()))?;
    let tls = match url.scheme() {
        "amqp" => false,
        "amqps" => true,
        _ => return Err(bad("a RabbitMQ address starts with amqp:// or amqps://")),
    };
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| bad("missing host: amqp://USER@HOST:PORT/VHOST?queue=NAME"))?
        .to_string();
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8()
            .map(|c| c.into_owned())
            .map_err(|_| bad("a percent-encoded part is not UTF-8"))
    };
    crate::address::form::check_userinfo_encoding(
        &url,
        "DLQCTL_AMQP_PASSWORD or [rabbitmq] password in dlqctl.toml",
    )
    .map_err(|r| bad(&r))?;
    let user = Some(decode(url.username())?).filter(|u| !u.is_empty());
    let password = url.password().map(decode).transpose()?;
    if let Some(p) = &password {
        crate::secrets::register(p);
    }
    let path = url.path().strip_prefix('/').unwrap_or(url.path());
    if path.contains('/') {
        return Err(bad(
            "the path is the virtual host, one segment: encode a / in it as %2F (the default vhost `/` is %2F, or no path)",
        ));
    }
    let vhost = if path.is_empty() {
        "/".to_string()
    } else {
        decode(path)?
    };
    let [queue, exchange, routing_key, api] = params(input, &url)?;
    let target = target(input, queue, exchange, routing_key)?;
    if let Some(a) = &api {
        check_api(input, a)?;
    }
    Ok(AmqpAddress {
        tls,
        user,
        password,
        port: url.port().unwrap_or(if tls { 5671 } else { 5672 }),
        host,
        vhost,
        target,
        api: api.map(|a| a.trim_end_matches('/').to_string()),
    })
}

/// The query's `queue`, `exchange`, `routing_key` and `api`, each at most once; any other
/// parameter is refused with the closest known one.
fn params(input: &str, url: &url::Url) -> Result<[Option<String>; 4]> {
    let mut got: [Option<String>; 4] = Default::default();
    for (k, v) in url.query_pairs() {
        let Some(i) = PARAMS.iter().position(|p| *p == k.as_ref()) else {
            let guess = crate::text::closest(&k, PARAMS)
                .map(|g| format!("did you mean `{g}`? "))
                .unwrap_or_default();
            return Err(invalid(
                input,
                &format!(
                    "unknown parameter `{k}` ({guess}known: {})",
                    PARAMS.join(", ")
                ),
            ));
        };
        if got[i].is_some() {
            return Err(invalid(input, &format!("`{k}` is given twice")));
        }
        got[i] = Some(v.into_owned());
    }
    Ok(got)
}

/// What the address names: a queue, or an exchange and a routing key (a target only).
fn target(
    input: &str,
    queue: Option<String>,
    exchange: Option<String>,
    routing_key: Option<String>,
) -> Result<AmqpTarget> {
    let bad = |reason: &str| Err(invalid(input, reason));
    match (queue, exchange) {
        (Some(q), None) if routing_key.is_none() => {
            if q.is_empty() || q.len() > 255 {
                return bad("a queue name is 1 to 255 bytes");
            }
            Ok(AmqpTarget::Queue(q))
        }
        (None, Some(e)) => {
            if e.len() > 255 {
                return bad("an exchange name is at most 255 bytes");
            }
            Ok(AmqpTarget::Exchange {
                exchange: e,
                routing_key: routing_key.unwrap_or_default(),
            })
        }
        (Some(_), Some(_)) => bad(
            "give `queue=` or `exchange=`, not both (a queue is written to through the default exchange)",
        ),
        (Some(_), None) => {
            bad("`routing_key=` goes with `exchange=` (a queue is its own routing key)")
        }
        (None, None) => bad(
            "missing queue: amqp://USER@HOST:PORT/VHOST?queue=NAME (or ?exchange=NAME&routing_key=KEY for a target)",
        ),
    }
}

/// `api=` is the management API's http(s)://HOST:PORT, without credentials of its own.
fn check_api(input: &str, a: &str) -> Result<()> {
    let bad = |reason: &str| Err(invalid(input, reason));
    let u =
        url::Url::parse(a).map_err(|e| invalid(input, &format!("`api={a}` is not a URL ({e})")))?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
        return bad(&format!(
            "`api={a}` should be the management API's http(s)://HOST:PORT"
        ));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return bad(
            "`api=` takes no user or password: the management API is called with the AMQP user's",
        );
    }
    Ok(())
}

/// A query value or a vhost as it goes in the URL.
fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

impl fmt::Display for AmqpAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "amqps" } else { "amqp" };
        let user = self
            .user
            .as_deref()
            .map(|u| format!("{}@", enc(u)))
            .unwrap_or_default();
        write!(f, "{scheme}://{user}{}", self.broker())?;
        match &self.target {
            AmqpTarget::Queue(q) => write!(f, "?queue={}", enc(q))?,
            AmqpTarget::Exchange {
                exchange,
                routing_key,
            } => {
                write!(f, "?exchange={}", enc(exchange))?;
                if !routing_key.is_empty() {
                    write!(f, "&routing_key={}", enc(routing_key))?;
                }
            }
        }
        if let Some(a) = &self.api {
            write!(f, "&api={a}")?;
        }
        Ok(())
    }
}

impl Form for AmqpAddress {
    /// The queue, or the exchange and its routing key.
    fn brief(&self) -> String {
        match &self.target {
            AmqpTarget::Queue(q) => q.clone(),
            AmqpTarget::Exchange {
                exchange,
                routing_key,
            } => format!("exchange {exchange} key {routing_key}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_and_display() {
        let a = parse("amqp://app:s3cret@mq.internal:5672/%2F?queue=orders.dlq").unwrap();
        assert_eq!(
            (a.user.as_deref(), a.password.as_deref(), a.vhost.as_str()),
            (Some("app"), Some("s3cret"), "/")
        );
        assert_eq!(a.queue(), Some("orders.dlq"));
        // The password is never shown.
        assert_eq!(
            a.to_string(),
            "amqp://app@mq.internal:5672/%2F?queue=orders.dlq"
        );
        let b =
            parse("amqps://h/prod?exchange=orders&routing_key=order.created&api=https://h:15671/")
                .unwrap();
        assert!(b.tls && b.port == 5671 && b.vhost == "prod");
        assert_eq!(
            b.target,
            AmqpTarget::Exchange {
                exchange: "orders".into(),
                routing_key: "order.created".into()
            }
        );
        assert_eq!(
            b.to_string(),
            "amqps://h:5671/prod?exchange=orders&routing_key=order.created&api=https://h:15671"
        );
        // A name with spaces and slashes round-trips.
        let c = parse("amqp://h/v%2Fx?queue=a%20b%2Fc").unwrap();
        assert_eq!((c.vhost.as_str(), c.queue()), ("v/x", Some("a b/c")));
        assert_eq!(parse(&c.to_string()).unwrap(), c);
        assert_eq!(parse("amqp://h?queue=q").unwrap().vhost, "/");
    }

    #[test]
    fn bad_forms_say_what_to_do() {
        for (input, says) in [
            ("amqp://h/v", "missing queue"),
            ("amqp://h/a/b?queue=q", "one segment"),
            ("amqp://h?queue=q&exchange=e", "not both"),
            ("amqp://h?queue=q&routing_key=k", "goes with `exchange=`"),
            ("amqp://h?qeue=q", "did you mean `queue`"),
            ("amqp://h?queue=q&api=ftp://x", "http(s)"),
            ("amqp://h?queue=q&api=http://u:p@x", "no user or password"),
            ("amqp://h?queue=", "1 to 255"),
            ("amqp://h?queue=q&queue=r", "twice"),
        ] {
            let e = parse(input).unwrap_err().to_string();
            assert!(e.contains(says), "{input}: {e}");
        }
        let e = parse("amqp://u:hunter22@h?nope=1").unwrap_err().to_string();
        assert!(!e.contains("hunter22"), "{e}");
    }
}
