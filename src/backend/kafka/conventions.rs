//! The dead-letter header conventions of the Kafka ecosystem (`docs/kafka.md`): where each
//! framework records the original topic, partition, offset, timestamp, consumer group and the
//! error. Unknown conventions are plain messages. The header names and the numbers' encoding
//! are in `kafka_headers.rs`; this reads a message's headers with them.

use chrono::{DateTime, TimeZone, Utc};

use crate::kafka_headers::{CONVENTIONS, decode_number_as};
use crate::message::{Attribute, ErrorInfo};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeadLetterInfo {
    pub convention: &'static str,
    pub original_topic: Option<String>,
    /// The latest hop (Spring appends the original headers again at each retry hop).
    pub latest_topic: Option<String>,
    pub partition: Option<i64>,
    pub offset: Option<i64>,
    pub timestamp: Option<DateTime<Utc>>,
    pub consumer_group: Option<String>,
    pub error: ErrorInfo,
}

fn text(attrs: &[Attribute], name: &str, first: bool) -> Option<String> {
    let mut it = attrs
        .iter()
        .filter(|a| a.name == name)
        .filter_map(|a| a.value.as_bytes());
    let v = if first { it.next() } else { it.next_back() }?;
    Some(String::from_utf8_lossy(v).into_owned())
}

fn number(attrs: &[Attribute], name: &str, binary: bool) -> Option<i64> {
    attrs
        .iter()
        .find(|a| a.name == name)
        .and_then(|a| a.value.as_bytes())
        .and_then(|v| decode_number_as(v, binary))
}

pub fn detect(attrs: &[Attribute]) -> Option<DeadLetterInfo> {
    let c = CONVENTIONS
        .iter()
        .find(|c| attrs.iter().any(|a| a.name == c.topic))?;
    let pick = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| text(attrs, n, false).filter(|s| !s.is_empty()))
    };
    Some(DeadLetterInfo {
        convention: c.name,
        original_topic: text(attrs, c.topic, true),
        latest_topic: text(attrs, c.topic, false),
        partition: number(attrs, c.partition, c.binary_numbers),
        offset: number(attrs, c.offset, c.binary_numbers),
        timestamp: c
            .timestamp
            .and_then(|t| number(attrs, t, c.binary_numbers))
            .and_then(|ms| Utc.timestamp_millis_opt(ms).single()),
        consumer_group: c.group.and_then(|g| text(attrs, g, false)),
        error: ErrorInfo {
            class: pick(c.class),
            message: pick(c.message),
            trace: pick(c.trace),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::AttrValue;

    fn h(name: &str, v: &[u8]) -> Attribute {
        Attribute {
            name: name.into(),
            value: AttrValue::from_bytes(Some(v)),
        }
    }

    #[test]
    fn spring_headers_decode_binary_numbers_and_prefer_the_cause() {
        let attrs = vec![
            h("kafka_dlt-original-topic", b"orders"),
            h("kafka_dlt-original-partition", &3i32.to_be_bytes()),
            h("kafka_dlt-original-offset", &1234i64.to_be_bytes()),
            h(
                "kafka_dlt-original-timestamp",
                &1_764_680_000_000i64.to_be_bytes(),
            ),
            h("kafka_dlt-original-consumer-group", b"billing"),
            h(
                "kafka_dlt-exception-fqcn",
                b"org.springframework.kafka.listener.ListenerExecutionFailedException",
            ),
            h(
                "kafka_dlt-exception-cause-fqcn",
                b"java.net.SocketTimeoutException",
            ),
            h("kafka_dlt-exception-message", b"Read timed out"),
            // A second hop appends the headers again.
            h("kafka_dlt-original-topic", b"orders-retry-0"),
        ];
        let d = detect(&attrs).unwrap();
        assert_eq!(d.convention, "spring-kafka");
        assert_eq!(d.original_topic.as_deref(), Some("orders"));
        assert_eq!(d.latest_topic.as_deref(), Some("orders-retry-0"));
        assert_eq!((d.partition, d.offset), (Some(3), Some(1234)));
        assert_eq!(d.timestamp.unwrap().timestamp_millis(), 1_764_680_000_000);
        assert_eq!(d.consumer_group.as_deref(), Some("billing"));
        assert_eq!(
            d.error.class.as_deref(),
            Some("java.net.SocketTimeoutException")
        );
    }

    #[test]
    fn connect_and_smallrye_use_text() {
        let d = detect(&[
            h("__connect.errors.topic", b"pg.public.orders"),
            h("__connect.errors.partition", b"0"),
            h("__connect.errors.offset", b"77"),
            h(
                "__connect.errors.exception.class.name",
                b"org.apache.kafka.connect.errors.DataException",
            ),
        ])
        .unwrap();
        assert_eq!(
            (d.convention, d.partition, d.offset),
            ("kafka-connect", Some(0), Some(77))
        );
        let d = detect(&[
            h("dead-letter-topic", b"in"),
            h("dead-letter-reason", b"boom"),
            h("dead-letter-cause", b""),
        ])
        .unwrap();
        assert_eq!(d.error.message.as_deref(), Some("boom"));
        assert!(detect(&[h("trace-id", b"x")]).is_none());
    }
}
