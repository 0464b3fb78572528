//! The backend-neutral message, and its JSON Lines form (`docs/jsonl.md`).
//!
//! One shape serves `peek`/`tail --output jsonl`, `export` and `replay`: what one command
//! writes, another reads back byte for byte.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The attribute / header that carries a message's stable id into a copy, on every backend
/// (SQS message attribute, Kafka header, PostgreSQL `headers` key), unless the configured id
/// attribute already does.
pub const STABLE_ID_ATTRIBUTE: &str = "dlqctl-stable-id";

/// The attribute / header that counts how many times dlqctl redrove or replayed a message:
/// each copy carries the original's count plus one (the loop guard, `--max-redrives`).
pub const REDRIVE_COUNT_ATTRIBUTE: &str = "dlqctl-redrive-count";

/// Version of the JSON Lines record. Bumped only for incompatible changes.
pub const RECORD_VERSION: u32 = 1;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Message {
    /// The stable id: the producer's id where configured and present, else the backend's.
    pub id: String,
    /// The backend's own id (row id, SQS MessageId, topic/partition@offset).
    pub native_id: String,
    pub body: Vec<u8>,
    /// Attributes / headers, in order; names may repeat (Kafka headers).
    pub attributes: Vec<Attribute>,
    /// Kafka record key.
    pub key: Option<Vec<u8>>,
    /// Ordering group: SQS MessageGroupId, an entity id.
    pub group: Option<String>,
    /// SQS FIFO MessageDeduplicationId.
    pub dedup_id: Option<String>,
    pub partition: Option<i32>,
    /// Receive count / attempts so far.
    pub receive_count: Option<u32>,
    /// First enqueue (original send) time.
    pub enqueued_at: Option<DateTime<Utc>>,
    /// When it was dead-lettered, where known.
    pub dead_lettered_at: Option<DateTime<Utc>>,
    pub error: Option<ErrorInfo>,
    /// The queue it failed on, as the backend recorded it.
    pub source: Option<String>,
    /// Backend-specific facts shown by `peek` (offsets, system names).
    pub meta: Meta,
    /// The attribute/header the stable id was read from (`id = "attribute:NAME"`), if one.
    /// Only this attribute, or `dlqctl-stable-id`, counts as carrying the id into a copy: an
    /// attribute that merely happens to hold the same value does not.
    pub id_attribute: Option<String>,
}

/// Backend-specific facts of a message, by name, in name order. A few entries at most, so a
/// sorted vector: a map of its own would cost each message a tree node (Kafka reads a
/// hundred thousand messages a second).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Meta(Vec<(Cow<'static, str>, serde_json::Value)>);

impl Meta {
    /// Set `name` (replacing its value if present).
    pub fn insert(&mut self, name: impl Into<Cow<'static, str>>, value: serde_json::Value) {
        let name = name.into();
        match self
            .0
            .binary_search_by(|(n, _)| n.as_ref().cmp(name.as_ref()))
        {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (name, value)),
        }
    }

    pub fn get(&self, name: &str) -> Option<&serde_json::Value> {
        self.0
            .binary_search_by(|(n, _)| n.as_ref().cmp(name))
            .ok()
            .map(|i| &self.0[i].1)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &serde_json::Value)> {
        self.0.iter().map(|(n, v)| (n.as_ref(), v))
    }
}

impl Serialize for Meta {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Meta, D::Error> {
        let map = std::collections::BTreeMap::<String, serde_json::Value>::deserialize(d)?;
        Ok(Meta(
            map.into_iter().map(|(n, v)| (Cow::Owned(n), v)).collect(),
        ))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Attribute {
    pub name: String,
    pub value: AttrValue,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    /// SQS String/Number (with custom type suffixes), Kafka headers that are UTF-8,
    /// PostgreSQL header values.
    Text {
        data_type: Cow<'static, str>,
        value: String,
    },
    Binary {
        data_type: Cow<'static, str>,
        value: Vec<u8>,
    },
    /// Kafka header with a null value.
    Null,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorInfo {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub class: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub trace: Option<String>,
}

impl ErrorInfo {
    pub fn is_empty(&self) -> bool {
        self.class.is_none() && self.message.is_none() && self.trace.is_none()
    }
}

impl AttrValue {
    pub fn text(value: impl Into<String>) -> AttrValue {
        AttrValue::Text {
            data_type: "String".into(),
            value: value.into(),
        }
    }

    /// Kafka-style raw bytes: text when valid UTF-8 (losslessly), binary otherwise.
    pub fn from_bytes(bytes: Option<&[u8]>) -> AttrValue {
        match bytes {
            None => AttrValue::Null,
            Some(b) => match std::str::from_utf8(b) {
                Ok(s) => AttrValue::text(s),
                Err(_) => AttrValue::Binary {
                    data_type: "Binary".into(),
                    value: b.to_vec(),
                },
            },
        }
    }

    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            AttrValue::Text { value, .. } => Some(value.as_bytes()),
            AttrValue::Binary { value, .. } => Some(value),
            AttrValue::Null => None,
        }
    }

    /// For matching and display: text as is, binary as hex.
    pub fn display(&self) -> String {
        match self {
            AttrValue::Text { value, .. } => value.clone(),
            AttrValue::Binary { value, .. } => hex(value),
            AttrValue::Null => "(null)".into(),
        }
    }
}

pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2 + 2);
    s.push_str("0x");
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

impl Message {
    pub fn attribute(&self, name: &str) -> Option<&AttrValue> {
        self.attributes
            .iter()
            .find(|a| a.name == name)
            .map(|a| &a.value)
    }

    /// Whether attribute `a` carries this message's stable id into a copy: `dlqctl-stable-id`
    /// or the configured id attribute, holding the id.
    pub fn carries_id(&self, a: &Attribute) -> bool {
        (a.name == STABLE_ID_ATTRIBUTE || self.id_attribute.as_deref() == Some(a.name.as_str()))
            && a.value.as_bytes() == Some(self.id.as_bytes())
    }

    /// Whether attribute `a` is `dlqctl-stable-id` holding this message's id: where every
    /// reader of a copy finds the id with no rule configured.
    pub fn holds_stable_id(&self, a: &Attribute) -> bool {
        a.name == STABLE_ID_ATTRIBUTE && a.value.as_bytes() == Some(self.id.as_bytes())
    }

    /// How many times dlqctl redrove or replayed this message before (0 without the
    /// attribute, or when it is not a number).
    pub fn redrive_count(&self) -> u32 {
        self.attribute(REDRIVE_COUNT_ATTRIBUTE)
            .and_then(|v| v.as_bytes())
            .and_then(|b| std::str::from_utf8(b).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Make this message the copy of a redrive or replay: its count, plus one.
    pub fn count_redrive(&mut self) {
        let next = AttrValue::text((self.redrive_count() + 1).to_string());
        match self
            .attributes
            .iter_mut()
            .find(|a| a.name == REDRIVE_COUNT_ATTRIBUTE)
        {
            Some(a) => a.value = next,
            None => self.attributes.push(Attribute {
                name: REDRIVE_COUNT_ATTRIBUTE.into(),
                value: next,
            }),
        }
    }

    pub fn body_utf8(&self) -> Option<&str> {
        std::str::from_utf8(&self.body).ok()
    }

    /// Class and message on one line, for matching and tables.
    pub fn error_text(&self) -> Option<String> {
        let e = self.error.as_ref()?;
        match (&e.class, &e.message) {
            (Some(c), Some(m)) => Some(format!("{c}: {m}")),
            (Some(c), None) => Some(c.clone()),
            (None, Some(m)) => Some(m.clone()),
            (None, None) => None,
        }
    }

    /// [`Message::error_text`] without a copy where there is nothing to join (for the rules,
    /// once per message).
    pub fn error_str(&self) -> Option<std::borrow::Cow<'_, str>> {
        let e = self.error.as_ref()?;
        match (&e.class, &e.message) {
            (Some(c), Some(m)) => Some(format!("{c}: {m}").into()),
            (Some(c), None) => Some(c.as_str().into()),
            (None, Some(m)) => Some(m.as_str().into()),
            (None, None) => None,
        }
    }

    /// Age counts from the first enqueue, like every retention the spec reasons about; where
    /// the backend does not know it, from the dead-letter time.
    pub fn age(&self, now: DateTime<Utc>) -> Option<chrono::Duration> {
        self.enqueued_at
            .or(self.dead_lettered_at)
            .map(|t| now.signed_duration_since(t))
    }

    pub fn to_record(&self) -> Record {
        let (body, body_encoding) = encode_bytes(&self.body);
        let (key, key_encoding) = match &self.key {
            Some(k) => {
                let (v, e) = encode_bytes(k);
                (Some(v), Some(e))
            }
            None => (None, None),
        };
        Record {
            v: RECORD_VERSION,
            id: self.id.clone(),
            native_id: self.native_id.clone(),
            source: self.source.clone(),
            enqueued_at: self.enqueued_at,
            dead_lettered_at: self.dead_lettered_at,
            receive_count: self.receive_count,
            group: self.group.clone(),
            dedup_id: self.dedup_id.clone(),
            partition: self.partition,
            key,
            key_encoding,
            error: self.error.clone().filter(|e| !e.is_empty()),
            attributes: self.attributes.iter().map(RecordAttribute::from).collect(),
            body,
            body_encoding,
            meta: self.meta.clone(),
            id_attribute: self.id_attribute.clone(),
        }
    }

    pub fn from_record(r: Record) -> Result<Message, String> {
        if r.v != RECORD_VERSION {
            return Err(format!(
                "record version {} is not supported (this dlqctl reads version {RECORD_VERSION})",
                r.v
            ));
        }
        let body = decode_bytes(&r.body, r.body_encoding).map_err(|e| format!("body: {e}"))?;
        let key = match (&r.key, r.key_encoding) {
            (Some(k), enc) => Some(
                decode_bytes(k, enc.unwrap_or(Encoding::Utf8)).map_err(|e| format!("key: {e}"))?,
            ),
            (None, _) => None,
        };
        let attributes = r
            .attributes
            .into_iter()
            .map(Attribute::try_from)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Message {
            id: r.id,
            native_id: r.native_id,
            body,
            attributes,
            key,
            group: r.group,
            dedup_id: r.dedup_id,
            partition: r.partition,
            receive_count: r.receive_count,
            enqueued_at: r.enqueued_at,
            dead_lettered_at: r.dead_lettered_at,
            error: r.error,
            source: r.source,
            meta: r.meta,
            id_attribute: r.id_attribute,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    Utf8,
    Base64,
}

/// By hand rather than derived: serde's "unknown variant" error quotes the value as it is, so
/// `"body_encoding": "base64\n"` broke `replay`'s one-line error in two (found by
/// tests/it/bad_input.rs). Same words, control characters escaped.
impl<'de> Deserialize<'de> for Encoding {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Encoding, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Encoding;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("`utf8` or `base64`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Encoding, E> {
                match v {
                    "utf8" => Ok(Encoding::Utf8),
                    "base64" => Ok(Encoding::Base64),
                    other => Err(E::custom(format_args!(
                        "unknown variant `{}`, expected `utf8` or `base64`",
                        crate::text::escape_controls(other)
                    ))),
                }
            }
        }
        d.deserialize_str(Visitor)
    }
}

fn encode_bytes(b: &[u8]) -> (String, Encoding) {
    match std::str::from_utf8(b) {
        Ok(s) => (s.to_string(), Encoding::Utf8),
        Err(_) => (B64.encode(b), Encoding::Base64),
    }
}

fn decode_bytes(s: &str, enc: Encoding) -> Result<Vec<u8>, String> {
    match enc {
        Encoding::Utf8 => Ok(s.as_bytes().to_vec()),
        Encoding::Base64 => B64.decode(s).map_err(|e| format!("invalid base64 ({e})")),
    }
}

/// One line of JSON Lines output. Field order is the documented order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    pub v: u32,
    pub id: String,
    #[serde(default)]
    pub native_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enqueued_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead_lettered_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedup_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_encoding: Option<Encoding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    #[serde(default)]
    pub attributes: Vec<RecordAttribute>,
    pub body: String,
    pub body_encoding: Encoding,
    #[serde(default, skip_serializing_if = "Meta::is_empty")]
    pub meta: Meta,
    /// The attribute that carries the stable id, where the id came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_attribute: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RecordAttribute {
    pub name: String,
    /// `String`, `Number`, `Binary` (with SQS custom suffixes such as `Number.int`), `Json`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub data_type: Option<String>,
    /// Text value, or null for a Kafka null header.
    #[serde(default)]
    pub value: Option<String>,
    /// Binary value, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base64: Option<String>,
    /// For people and `jq`: a Kafka dead-letter header that holds a number as binary (Spring's
    /// partition, offset, timestamp), decoded. Derived from the value; ignored when read back.
    #[serde(default, skip_serializing_if = "Option::is_none", skip_deserializing)]
    pub decoded: Option<serde_json::Value>,
}

impl From<&Attribute> for RecordAttribute {
    fn from(a: &Attribute) -> Self {
        let decoded = decoded_header(&a.name, a.value.as_bytes());
        match &a.value {
            AttrValue::Text { data_type, value } => RecordAttribute {
                name: a.name.clone(),
                data_type: Some(data_type.to_string()),
                value: Some(value.clone()),
                base64: None,
                decoded,
            },
            AttrValue::Binary { data_type, value } => RecordAttribute {
                name: a.name.clone(),
                data_type: Some(data_type.to_string()),
                value: None,
                base64: Some(B64.encode(value)),
                decoded,
            },
            AttrValue::Null => RecordAttribute {
                name: a.name.clone(),
                data_type: None,
                value: None,
                base64: None,
                decoded: None,
            },
        }
    }
}

/// A dead-letter header holding a number as binary, decoded (see [`RecordAttribute::decoded`]).
pub fn decoded_header(name: &str, value: Option<&[u8]>) -> Option<serde_json::Value> {
    #[cfg(feature = "kafka")]
    {
        value.and_then(|v| crate::kafka_headers::decoded(name, v))
    }
    #[cfg(not(feature = "kafka"))]
    {
        let _ = (name, value);
        None
    }
}

impl TryFrom<RecordAttribute> for Attribute {
    type Error = String;
    fn try_from(r: RecordAttribute) -> Result<Self, String> {
        // The name as the errors quote it: control characters escaped, so that `replay`'s
        // error stays on one line (tests/it/bad_input.rs found `"name": "\n"`).
        let shown = || crate::text::escape_controls(&r.name);
        let value = match (r.value, r.base64) {
            (Some(_), Some(_)) => {
                return Err(format!("attribute `{}` has both value and base64", shown()));
            }
            (Some(v), None) => AttrValue::Text {
                data_type: r.data_type.map_or(Cow::Borrowed("String"), Cow::Owned),
                value: v,
            },
            (None, Some(b)) => AttrValue::Binary {
                data_type: r.data_type.map_or(Cow::Borrowed("Binary"), Cow::Owned),
                value: B64
                    .decode(b)
                    .map_err(|e| format!("attribute `{}`: invalid base64 ({e})", shown()))?,
            },
            (None, None) => AttrValue::Null,
        };
        Ok(Attribute {
            name: r.name,
            value,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trip_is_lossless() {
        let m = Message {
            id: "ord-1".into(),
            native_id: "42".into(),
            body: vec![0, 159, 146, 150, b'x'],
            attributes: vec![
                Attribute {
                    name: "a".into(),
                    value: AttrValue::text("1"),
                },
                Attribute {
                    name: "a".into(),
                    value: AttrValue::Null,
                },
                Attribute {
                    name: "bin".into(),
                    value: AttrValue::Binary {
                        data_type: "Binary.gz".into(),
                        value: vec![1, 2, 255],
                    },
                },
            ],
            key: Some(vec![0xff]),
            group: Some("g".into()),
            receive_count: Some(3),
            enqueued_at: Some(Utc::now()),
            error: Some(ErrorInfo {
                class: Some("E".into()),
                message: Some("boom".into()),
                trace: None,
            }),
            ..Message::default()
        };
        let line = serde_json::to_string(&m.to_record()).unwrap();
        let back = Message::from_record(serde_json::from_str(&line).unwrap()).unwrap();
        assert_eq!(back, m);
        assert!(line.contains("\"body_encoding\":\"base64\""), "{line}");
    }

    #[test]
    fn meta_keeps_names_in_order_and_round_trips() {
        let mut m = Message {
            id: "x".into(),
            ..Message::default()
        };
        m.meta.insert("topic", serde_json::json!("orders.DLT"));
        m.meta.insert("offset", serde_json::json!(7));
        m.meta
            .insert("convention", serde_json::json!("spring-kafka"));
        m.meta.insert("offset", serde_json::json!(8));
        assert_eq!(m.meta.get("offset"), Some(&serde_json::json!(8)));
        assert_eq!(m.meta.get("partition"), None);
        let line = serde_json::to_string(&m.to_record()).unwrap();
        assert!(
            line.contains(
                r#""meta":{"convention":"spring-kafka","offset":8,"topic":"orders.DLT"}"#
            ),
            "{line}"
        );
        let back = Message::from_record(serde_json::from_str(&line).unwrap()).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn utf8_body_stays_readable() {
        let m = Message {
            id: "x".into(),
            body: br#"{"a":1}"#.to_vec(),
            ..Message::default()
        };
        let line = serde_json::to_string(&m.to_record()).unwrap();
        assert!(
            line.contains(r#""body":"{\"a\":1}","body_encoding":"utf8""#),
            "{line}"
        );
    }

    #[test]
    fn bad_records_are_reported() {
        let r: Record =
            serde_json::from_str(r#"{"v":1,"id":"x","body":"!!","body_encoding":"base64"}"#)
                .unwrap();
        assert!(Message::from_record(r).unwrap_err().contains("base64"));
        let r: Record =
            serde_json::from_str(r#"{"v":9,"id":"x","body":"","body_encoding":"utf8"}"#).unwrap();
        assert!(Message::from_record(r).unwrap_err().contains("version 9"));
    }
}
