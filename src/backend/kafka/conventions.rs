//! The dead-letter header conventions of the Kafka ecosystem (`docs/kafka.md`): where each
//! framework records the original topic, partition, offset, timestamp, consumer group and the
//! error. Unknown conventions are plain messages.

use chrono::{DateTime, TimeZone, Utc};

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

struct Convention {
    name: &'static str,
    topic: &'static str,
    partition: &'static str,
    offset: &'static str,
    timestamp: Option<&'static str>,
    group: Option<&'static str>,
    /// Error class headers, best first (a cause class beats a wrapper exception).
    class: &'static [&'static str],
    message: &'static [&'static str],
    trace: &'static [&'static str],
    /// Numbers as big-endian binary (Spring) rather than decimal text.
    binary_numbers: bool,
}

const CONVENTIONS: &[Convention] = &[
    Convention {
        name: "spring-kafka",
        topic: "kafka_dlt-original-topic",
        partition: "kafka_dlt-original-partition",
        offset: "kafka_dlt-original-offset",
        timestamp: Some("kafka_dlt-original-timestamp"),
        group: Some("kafka_dlt-original-consumer-group"),
        class: &["kafka_dlt-exception-cause-fqcn", "kafka_dlt-exception-fqcn"],
        message: &["kafka_dlt-exception-message"],
        trace: &["kafka_dlt-exception-stacktrace"],
        binary_numbers: true,
    },
    Convention {
        name: "spring-cloud-stream",
        topic: "x-original-topic",
        partition: "x-original-partition",
        offset: "x-original-offset",
        timestamp: Some("x-original-timestamp"),
        group: None,
        class: &["x-exception-fqcn"],
        message: &["x-exception-message"],
        trace: &["x-exception-stacktrace"],
        binary_numbers: true,
    },
    Convention {
        name: "kafka-connect",
        topic: "__connect.errors.topic",
        partition: "__connect.errors.partition",
        offset: "__connect.errors.offset",
        timestamp: None,
        group: None,
        class: &["__connect.errors.exception.class.name"],
        message: &["__connect.errors.exception.message"],
        trace: &["__connect.errors.exception.stacktrace"],
        binary_numbers: false,
    },
    Convention {
        name: "smallrye",
        topic: "dead-letter-topic",
        partition: "dead-letter-partition",
        offset: "dead-letter-offset",
        timestamp: None,
        group: None,
        class: &[
            "dead-letter-cause-class-name",
            "dead-letter-exception-class-name",
        ],
        message: &["dead-letter-cause", "dead-letter-reason"],
        trace: &[],
        binary_numbers: false,
    },
    Convention {
        name: "karafka",
        topic: "source_topic",
        partition: "source_partition",
        offset: "source_offset",
        timestamp: None,
        group: Some("source_consumer_group"),
        class: &[],
        message: &[],
        trace: &[],
        binary_numbers: false,
    },
    Convention {
        name: "karafka",
        topic: "original_topic",
        partition: "original_partition",
        offset: "original_offset",
        timestamp: None,
        group: Some("original_consumer_group"),
        class: &[],
        message: &[],
        trace: &[],
        binary_numbers: false,
    },
    Convention {
        name: "kafka-streams",
        topic: "__streams.errors.topic",
        partition: "__streams.errors.partition",
        offset: "__streams.errors.offset",
        timestamp: None,
        group: None,
        class: &["__streams.errors.exception"],
        message: &["__streams.errors.message"],
        trace: &["__streams.errors.stacktrace"],
        binary_numbers: false,
    },
    Convention {
        name: "share-group-dlq",
        topic: "__dlq.errors.topic",
        partition: "__dlq.errors.partition",
        offset: "__dlq.errors.offset",
        timestamp: None,
        group: Some("__dlq.errors.group"),
        class: &[],
        message: &["__dlq.errors.message"],
        trace: &[],
        binary_numbers: false,
    },
];

/// Header names whose values are numbers (big-endian binary in Spring's headers).
pub fn is_numeric(name: &str) -> bool {
    CONVENTIONS
        .iter()
        .any(|c| c.partition == name || c.offset == name || c.timestamp == Some(name))
        || matches!(
            name,
            "source_attempts"
                | "__dlq.errors.delivery.count"
                | "task.id"
                | "__connect.errors.task.id"
        )
}

/// A numeric dead-letter header written as binary (Spring's big-endian partition, offset and
/// timestamp) decoded for people: the number, or for a timestamp the time (RFC 3339, UTC).
/// `None` for other headers, and for values that are already decimal text.
pub fn decoded(name: &str, v: &[u8]) -> Option<serde_json::Value> {
    if !is_numeric(name)
        || std::str::from_utf8(v)
            .ok()
            .is_some_and(|t| t.trim().parse::<i64>().is_ok())
    {
        return None;
    }
    let n = be(v)?;
    if CONVENTIONS.iter().any(|c| c.timestamp == Some(name)) {
        return Utc.timestamp_millis_opt(n).single().map(|t| {
            serde_json::Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        });
    }
    Some(serde_json::Value::from(n))
}

/// A numeric header. Spring writes big-endian binary (1, 2, 4 or 8 bytes); the others write
/// decimal text. `binary_first` says which to try first.
pub fn decode_number_as(v: &[u8], binary_first: bool) -> Option<i64> {
    if binary_first && let Some(n) = be(v) {
        return Some(n);
    }
    let text = std::str::from_utf8(v)
        .ok()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    if let Some(n) = text.and_then(|t| t.parse::<i64>().ok()) {
        return Some(n);
    }
    be(v)
}

/// Text first, then big-endian binary (for headers of unknown origin).
pub fn decode_number(v: &[u8]) -> Option<i64> {
    decode_number_as(v, false)
}

fn be(v: &[u8]) -> Option<i64> {
    match v.len() {
        1 => Some(v[0] as i8 as i64),
        2 => Some(i16::from_be_bytes([v[0], v[1]]) as i64),
        4 => Some(i32::from_be_bytes([v[0], v[1], v[2], v[3]]) as i64),
        8 => Some(i64::from_be_bytes(v.try_into().ok()?)),
        _ => None,
    }
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

    #[test]
    fn numbers() {
        assert_eq!(decode_number(b"42"), Some(42));
        assert_eq!(decode_number(&[0, 0, 0, 7]), Some(7));
        assert_eq!(decode_number_as(&[0x01], true), Some(1));
        assert_eq!(decode_number(b"0"), Some(0));
        assert_eq!(decode_number_as(&[0, 0, 0x30, 0x39], true), Some(12345));
        assert_eq!(decode_number(b"abc"), None);
    }

    #[test]
    fn spring_binary_numbers_are_decoded_for_people() {
        assert_eq!(
            decoded("kafka_dlt-original-partition", &0i32.to_be_bytes()),
            Some(serde_json::json!(0))
        );
        assert_eq!(
            decoded("kafka_dlt-original-offset", &4000i64.to_be_bytes()),
            Some(serde_json::json!(4000))
        );
        assert_eq!(
            decoded(
                "kafka_dlt-original-timestamp",
                &1_764_600_000_000i64.to_be_bytes()
            ),
            Some(serde_json::json!("2025-12-01T14:40:00.000Z"))
        );
        // Decimal text needs no decoding; other headers are left alone.
        assert_eq!(decoded("__connect.errors.partition", b"3"), None);
        assert_eq!(decoded("trace-id", &[0, 0, 0, 1]), None);
    }
}
