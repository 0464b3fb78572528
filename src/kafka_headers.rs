//! The dead-letter header conventions of the Kafka ecosystem (`docs/kafka.md`): the header
//! names each framework writes the original topic, partition, offset, timestamp, consumer group
//! and the error under, and its numbers as written (Spring's big-endian binary, the others'
//! decimal text). Plain data: nothing here imports from the crate, so that the JSON Lines
//! record (`message.rs`) can show a binary number decoded; the Kafka backend reads a message's
//! headers with it (`backend/kafka/conventions.rs`).

use chrono::{TimeZone, Utc};

/// One framework's headers.
pub struct Convention {
    pub name: &'static str,
    pub topic: &'static str,
    pub partition: &'static str,
    pub offset: &'static str,
    pub timestamp: Option<&'static str>,
    pub group: Option<&'static str>,
    /// Error class headers, best first (a cause class beats a wrapper exception).
    pub class: &'static [&'static str],
    pub message: &'static [&'static str],
    pub trace: &'static [&'static str],
    /// Numbers as big-endian binary (Spring) rather than decimal text.
    pub binary_numbers: bool,
}

pub const CONVENTIONS: &[Convention] = &[
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

#[cfg(test)]
mod tests {
    use super::*;

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
