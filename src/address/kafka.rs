//! The Kafka form: `kafka://HOST:PORT[,HOST:PORT…]/TOPIC[?partition=P&from=…&to=…&since=…&until=…]`.

use super::form::{Form, invalid};
use super::{KafkaAddress, KafkaRange};
use crate::error::Result;

/// The form as `--help` lists it.
pub(super) fn usage() -> String {
    "kafka://HOST:PORT[,HOST:PORT...]/TOPIC".into()
}

pub(super) fn parse(input: &str) -> Result<KafkaAddress> {
    let bad = |reason: &str| invalid(input, reason);
    let rest = &input["kafka://".len()..];
    let (hosts, topic) = rest
        .split_once('/')
        .ok_or_else(|| bad("missing topic: kafka://HOST:PORT/TOPIC"))?;
    if hosts.contains('@') {
        // Credentials have no place in a Kafka address (and would be shown with it).
        return Err(bad(
            "a Kafka address takes no user or password: put SASL credentials in [kafka.properties] of dlqctl.toml (sasl.username, sasl.password)",
        ));
    }
    let (topic, query) = topic.split_once('?').unwrap_or((topic, ""));
    let topic = topic.trim_end_matches('/');
    let mut range = KafkaRange::default();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let time = |v: &str| {
            chrono::DateTime::parse_from_rfc3339(v)
                .map(|t| t.with_timezone(&chrono::Utc))
                .map_err(|_| {
                    bad(&format!(
                        "`{k}={v}` is not an RFC 3339 time (e.g. 2026-12-01T08:00:00Z)"
                    ))
                })
        };
        let num = |v: &str| {
            v.parse::<i64>()
                .ok()
                .filter(|o| *o >= 0)
                .ok_or_else(|| bad(&format!("`{k}={v}` is not an offset (a number from 0)")))
        };
        match k {
            "partition" => {
                range.partition =
                    Some(v.parse::<i32>().ok().filter(|p| *p >= 0).ok_or_else(|| {
                        bad(&format!(
                            "`partition={v}` is not a partition number (0 to 2147483647)"
                        ))
                    })?)
            }
            "from" => range.from = Some(num(v)?),
            "to" => range.to = Some(num(v)?),
            "since" => range.since = Some(time(v)?),
            "until" => range.until = Some(time(v)?),
            other => {
                let guess =
                    crate::text::closest(other, ["partition", "from", "to", "since", "until"])
                        .map(|g| format!("did you mean `{g}`? "))
                        .unwrap_or_default();
                return Err(bad(&format!(
                    "unknown parameter `{other}` ({guess}known: partition, from, to, since, until)"
                )));
            }
        }
    }
    if topic.is_empty() {
        return Err(bad("missing topic: kafka://HOST:PORT/TOPIC"));
    }
    if topic.len() > 249
        || !topic
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(bad("a Kafka topic name is at most 249 of [a-zA-Z0-9._-]"));
    }
    let mut brokers = Vec::new();
    for h in hosts.split(',') {
        let h = h.trim();
        let (host, port) = h
            .rsplit_once(':')
            .ok_or_else(|| bad("each broker needs HOST:PORT"))?;
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(bad("each broker needs HOST:PORT with a numeric port"));
        }
        // (tests/it/bad_input.rs found `kafka://a\nb:1/t` accepted, and shown on two lines.)
        if host.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(bad(
                "a broker's host has a space or a control character in it",
            ));
        }
        brokers.push(h.to_string());
    }
    Ok(KafkaAddress {
        brokers,
        topic: topic.to_string(),
        range,
    })
}

/// The brokers and topic, and a slice's range.
impl std::fmt::Display for KafkaAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "kafka://{}/{}", self.brokers.join(","), self.topic)?;
        let r = &self.range;
        let mut q: Vec<String> = Vec::new();
        if let Some(p) = r.partition {
            q.push(format!("partition={p}"));
        }
        if let Some(o) = r.from {
            q.push(format!("from={o}"));
        }
        if let Some(o) = r.to {
            q.push(format!("to={o}"));
        }
        let time = |t: &chrono::DateTime<chrono::Utc>| {
            t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
        };
        if let Some(t) = &r.since {
            q.push(format!("since={}", time(t)));
        }
        if let Some(t) = &r.until {
            q.push(format!("until={}", time(t)));
        }
        if !q.is_empty() {
            write!(f, "?{}", q.join("&"))?;
        }
        Ok(())
    }
}

impl Form for KafkaAddress {
    /// The topic.
    fn brief(&self) -> String {
        self.topic.clone()
    }

    fn redrive_slice_refusal(&self) -> Option<&'static str> {
        let r = &self.range;
        (r.from.is_some() || r.to.is_some() || r.since.is_some() || r.until.is_some()).then_some(
            "a Kafka redrive continues from the redrive group's committed offsets; from/to/since/until slice peek, export and replay",
        )
    }

    fn confine_to_partition(&mut self, partition: i32) {
        self.range.partition = Some(partition);
    }
}

#[cfg(test)]
mod tests {
    use crate::address::Address;

    #[test]
    fn kafka_forms() {
        let Address::Kafka(k) = Address::parse("kafka://a:9092,b:9093/orders.DLT").unwrap() else {
            panic!()
        };
        assert_eq!(k.brokers, vec!["a:9092", "b:9093"]);
        assert_eq!(k.topic, "orders.DLT");
        assert!(Address::parse("kafka://a:9092").is_err());
        assert!(Address::parse("kafka://a/t").is_err());
        assert!(Address::parse("kafka://a:x/t").is_err());
        let Address::Kafka(k) =
            Address::parse("kafka://a:1/t?partition=2&from=10&to=20&since=2026-12-01T00:00:00Z")
                .unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (
                k.topic.as_str(),
                k.range.partition,
                k.range.from,
                k.range.to
            ),
            ("t", Some(2), Some(10), Some(20))
        );
        assert!(Address::parse("kafka://a:1/t?from=x").is_err());
        assert!(Address::parse("kafka://a:1/t?offset=1").is_err());
        // Out of range: never wrapped (4294967298 would be partition 2 as an i32).
        assert!(Address::parse("kafka://a:1/t?partition=4294967298").is_err());
        assert!(Address::parse("kafka://a:1/t?partition=-1").is_err());
        assert!(Address::parse("kafka://a:1/t?from=-5").is_err());
        // The display keeps what tells two slices apart.
        assert_eq!(
            Address::parse("kafka://a:1/t?partition=2&from=10")
                .unwrap()
                .to_string(),
            "kafka://a:1/t?partition=2&from=10"
        );
    }
}
