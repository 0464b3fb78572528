//! Decoding a record into dlqctl's neutral message.

use chrono::{TimeZone, Utc};
use rdkafka::message::{Headers, Message as _};
use serde_json::Value;

use super::{KafkaBackend, STABLE_ID_HEADER, conventions};
use crate::config::IdSource;
use crate::message::{AttrValue, Attribute, Message};

impl KafkaBackend {
    pub(super) fn to_message(&self, m: &rdkafka::message::BorrowedMessage<'_>) -> Message {
        decode(m, self.id.as_ref())
    }
}

/// A record as dlqctl's neutral message: headers in order, the dead-letter convention's facts,
/// and the stable id (the configured location, else `dlqctl-stable-id`, else the original
/// coordinates, else the record's own).
pub(super) fn decode(m: &rdkafka::message::BorrowedMessage<'_>, id: Option<&IdSource>) -> Message {
    use std::fmt::Write as _;
    let attributes: Vec<Attribute> = match m.headers() {
        Some(h) => h
            .iter()
            .map(|hd| Attribute {
                name: hd.key.to_string(),
                value: AttrValue::from_bytes(hd.value),
            })
            .collect(),
        None => Vec::new(),
    };
    let ts = m
        .timestamp()
        .to_millis()
        .and_then(|ms| Utc.timestamp_millis_opt(ms).single());
    let (topic, partition, offset) = (m.topic(), m.partition(), m.offset());
    let mut native = String::with_capacity(topic.len() + 24);
    let _ = write!(native, "{topic}/{partition}@{offset}");
    let dl = conventions::detect(&attributes);
    let mut msg = Message {
        id: String::new(),
        native_id: native,
        body: m.payload().map(<[u8]>::to_vec).unwrap_or_default(),
        key: m.key().map(<[u8]>::to_vec),
        group: None,
        dedup_id: None,
        partition: Some(partition),
        receive_count: None,
        enqueued_at: ts,
        dead_lettered_at: None,
        error: None,
        source: None,
        meta: Default::default(),
        attributes,
        id_attribute: None,
    };
    msg.meta.insert("topic", Value::String(topic.into()));
    msg.meta.insert("offset", Value::from(offset));
    if m.payload().is_none() {
        msg.meta.insert("tombstone", Value::Bool(true));
    }
    if let Some(d) = dl {
        msg.meta
            .insert("convention", Value::String(d.convention.into()));
        if let Some(g) = d.consumer_group {
            msg.meta.insert("original_consumer_group", Value::String(g));
        }
        // The record's own time is the dead-letter time for Spring; the original time is
        // in a header. Connect copies the original timestamp.
        if d.timestamp.is_some() {
            msg.dead_lettered_at = ts;
            msg.enqueued_at = d.timestamp;
        }
        if let (Some(t), Some(p), Some(o)) = (&d.original_topic, d.partition, d.offset) {
            let mut original = String::with_capacity(t.len() + 24);
            let _ = write!(original, "{t}/{p}@{o}");
            msg.meta.insert("original", Value::String(original.clone()));
            msg.id = original;
        }
        msg.source = d.latest_topic.or(d.original_topic);
        if d.error.class.is_some() || d.error.message.is_some() {
            msg.error = Some(d.error);
        }
    }
    if let Some(v) = msg.attribute(STABLE_ID_HEADER).map(AttrValue::display) {
        msg.id = v;
    }
    if msg.id.is_empty() {
        msg.id = msg.native_id.clone();
    }
    crate::backend::finish_read(&mut msg, id);
    msg
}
