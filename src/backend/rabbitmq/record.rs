//! A delivery as a message, and a message as a publish: the body, the headers (typed, see
//! `fields.rs`), the properties (in `meta.properties`, so that a copy to RabbitMQ gets them
//! back), and the stable id.

use chrono::{TimeZone, Utc};
use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::conventions;
use super::fields::{JSON_TYPE, from_attr, int, to_attr, to_json};
use crate::config::IdSource;
use crate::message::{AttrValue, Attribute, Message, STABLE_ID_ATTRIBUTE};

/// Quorum queues count deliveries in this header; it changes with every return, so it is
/// left out of the native id.
pub const DELIVERY_COUNT: &str = "x-delivery-count";

/// A stream gives each delivery its offset in this header: where the message sits in the
/// stream, the broker's and not the message's (a copy does not carry it, and it is left out
/// of the native id, as the delivery count is).
pub const STREAM_OFFSET: &str = "x-stream-offset";

/// The headers the broker adds to a delivery: not part of the message.
const BROKER_HEADERS: [&str; 2] = [DELIVERY_COUNT, STREAM_OFFSET];

/// What a delivery carries besides its body.
pub struct Delivered<'a> {
    pub exchange: &'a str,
    pub routing_key: &'a str,
    pub redelivered: bool,
    pub properties: &'a BasicProperties,
}

/// The properties that are set, by their AMQP names (`meta.properties`).
fn properties_json(p: &BasicProperties) -> Map<String, Value> {
    let mut m = Map::new();
    let mut s = |k: &str, v: &Option<ShortString>| {
        if let Some(v) = v {
            m.insert(k.into(), Value::String(v.as_str().into()));
        }
    };
    s("content_type", p.content_type());
    s("content_encoding", p.content_encoding());
    s("correlation_id", p.correlation_id());
    s("reply_to", p.reply_to());
    s("expiration", p.expiration());
    s("message_id", p.message_id());
    s("type", p.kind());
    s("user_id", p.user_id());
    s("app_id", p.app_id());
    s("cluster_id", p.cluster_id());
    if let Some(v) = p.delivery_mode() {
        m.insert("delivery_mode".into(), json!(v));
    }
    if let Some(v) = p.priority() {
        m.insert("priority".into(), json!(v));
    }
    if let Some(v) = p.timestamp() {
        m.insert("timestamp".into(), json!(v));
    }
    m
}

/// The headers as attributes (a quorum queue's delivery count is the broker's, not the
/// message's: it is the receive count, and a copy does not carry it), and the stable native
/// id: a digest of what does not change while the message waits (the body, the properties
/// as JSON, the other headers as a JSON object). Two identical messages share it. One pass:
/// each header is turned into JSON once, for the digest and, a table or an array, for its
/// attribute (whose text [`to_attr`] makes, reused for the digest), with no JSON object built for the digest
/// (the bytes are serde_json's compact form, as `Value::to_string` writes them).
fn attributes_and_id(
    body: &[u8],
    props: &Map<String, Value>,
    headers: &FieldTable,
) -> (Vec<Attribute>, String) {
    let mut h = Sha256::new();
    h.update(body);
    let mut buf = Vec::with_capacity(512);
    json_into(&mut buf, props);
    h.update(&buf);
    buf.clear();
    let mut attributes = Vec::with_capacity(headers.inner().len());
    buf.push(b'{');
    for (k, v) in headers.inner() {
        if BROKER_HEADERS.contains(&k.as_str()) {
            continue;
        }
        if !attributes.is_empty() {
            buf.push(b',');
        }
        json_into(&mut buf, k.as_str());
        buf.push(b':');
        let value = to_attr(v);
        match &value {
            // A table or an array: its attribute is already its compact JSON.
            AttrValue::Text { data_type, value } if data_type == JSON_TYPE => {
                buf.extend_from_slice(value.as_bytes())
            }
            _ => json_into(&mut buf, &to_json(v)),
        }
        attributes.push(Attribute {
            name: k.as_str().to_string(),
            value,
        });
    }
    buf.push(b'}');
    h.update(&buf);
    let d = h.finalize();
    let mut s = String::with_capacity(20);
    s.push_str("rmq-");
    for b in &d[..8] {
        s.push_str(&format!("{b:02x}"));
    }
    (attributes, s)
}

/// Append `v` as compact JSON.
fn json_into<T: serde::Serialize + ?Sized>(buf: &mut Vec<u8>, v: &T) {
    // Writing JSON into a Vec does not fail, and these values serialize.
    let _ = serde_json::to_writer(&mut *buf, v);
}

/// A delivery as a message.
pub fn to_message(d: Delivered<'_>, body: Vec<u8>, id: Option<&IdSource>) -> Message {
    let empty = FieldTable::default();
    let headers = d.properties.headers().as_ref().unwrap_or(&empty);
    let props = properties_json(d.properties);
    let dl = conventions::read(headers);
    let (attributes, native_id) = attributes_and_id(&body, &props, headers);
    let mut m = Message {
        native_id,
        body,
        attributes,
        enqueued_at: d
            .properties
            .timestamp()
            .and_then(|t| i64::try_from(t).ok())
            .and_then(|t| Utc.timestamp_opt(t, 0).single()),
        dead_lettered_at: dl.at,
        receive_count: headers
            .inner()
            .get(DELIVERY_COUNT)
            .and_then(int)
            .and_then(|n| u32::try_from(n).ok())
            .or(dl.deaths),
        source: dl.queue.clone(),
        ..Message::default()
    };
    if !dl.error.is_empty() {
        m.error = Some(dl.error.clone());
    }
    if let Some(c) = dl.convention {
        m.meta.insert("convention", json!(c));
    }
    if let Some(r) = &dl.reason {
        m.meta.insert("death_reason", json!(r));
    }
    if let Some((e, k)) = &dl.exchange {
        m.meta
            .insert("original", json!({ "exchange": e, "routing_key": k }));
    }
    m.meta.insert("exchange", json!(d.exchange));
    m.meta.insert("routing_key", json!(d.routing_key));
    if d.redelivered {
        m.meta.insert("redelivered", json!(true));
    }
    m.id = props
        .get("message_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .or_else(|| m.attribute(STABLE_ID_ATTRIBUTE).map(AttrValue::display))
        .unwrap_or_else(|| m.native_id.clone());
    if !props.is_empty() {
        m.meta.insert("properties", Value::Object(props));
    }
    crate::backend::finish_read(&mut m, id);
    m
}

/// Why a message cannot be published as it is.
pub type Refusal = String;

/// A message as a publish: its properties (headers inside) for a copy, from
/// `meta.properties` but for two: `message_id` is the stable id, and there is no
/// `expiration` (docs/rabbitmq.md, "What a copy carries"). `user` is the connection's user:
/// RabbitMQ refuses a `user_id` that is not the publisher's, so another one is left out.
pub fn to_publish(m: &Message, user: &str) -> Result<BasicProperties, Refusal> {
    let empty = Map::new();
    let p = m
        .meta
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let short = |k: &str| -> Result<Option<ShortString>, Refusal> {
        match p.get(k).and_then(Value::as_str) {
            None => Ok(None),
            Some(v) => ShortString::try_new(v)
                .map(Some)
                .map_err(|_| format!("property {k} is longer than 255 bytes")),
        }
    };
    let mut props = BasicProperties::default();
    if let Some(v) = short("content_type")? {
        props = props.with_content_type(v);
    }
    if let Some(v) = short("content_encoding")? {
        props = props.with_content_encoding(v);
    }
    if let Some(v) = short("correlation_id")? {
        props = props.with_correlation_id(v);
    }
    if let Some(v) = short("reply_to")? {
        props = props.with_reply_to(v);
    }
    // No `expiration`: RabbitMQ removes it from a message it dead-letters (keeping it in
    // `x-death`'s `original-expiration`) so that it does not expire again, and a copy that
    // expires before a consumer takes it is a loss.
    if let Some(v) = short("type")? {
        props = props.with_type(v);
    }
    if let Some(v) = short("app_id")? {
        props = props.with_app_id(v);
    }
    if let Some(v) = short("cluster_id")? {
        props = props.with_cluster_id(v);
    }
    if let Some(v) = short("user_id")?.filter(|u| u.as_str() == user) {
        props = props.with_user_id(v);
    }
    // The id a consumer reads (and dlqctl reads back first) is the stable id, whatever
    // `meta.properties.message_id` says (a file's, an edited record's). An id over 255 bytes
    // cannot be a `message_id`: `dlqctl-stable-id` carries it.
    // Where the original's `message_id` was the stable id already, no `dlqctl-stable-id` is
    // added (as before: a RabbitMQ-to-RabbitMQ copy has the headers its original had).
    let mut carried_by_property = false;
    if !m.id.is_empty()
        && let Ok(id) = ShortString::try_new(m.id.clone())
    {
        carried_by_property = p.get("message_id").and_then(Value::as_str) == Some(m.id.as_str());
        props = props.with_message_id(id);
    }
    // Persistent unless the original said otherwise (a copy from another backend is
    // persistent).
    let mode = p
        .get("delivery_mode")
        .and_then(Value::as_u64)
        .and_then(|v| u8::try_from(v).ok())
        .unwrap_or(2);
    props = props.with_delivery_mode(mode);
    if let Some(v) = p.get("priority").and_then(Value::as_u64) {
        props = props.with_priority(u8::try_from(v).map_err(|_| "priority is not 0-255")?);
    }
    if let Some(v) = p.get("timestamp").and_then(Value::as_u64) {
        props = props.with_timestamp(v);
    } else if let Some(t) = m
        .enqueued_at
        .and_then(|t| u64::try_from(t.timestamp()).ok())
    {
        props = props.with_timestamp(t);
    }
    props = props.with_headers(headers(m, carried_by_property)?);
    Ok(props)
}

/// The copy's headers: the message's attributes in their types (a repeated name as a field
/// array of its values), and the stable id in `dlqctl-stable-id` unless the `message_id`
/// property carries it (a configured id header is read as the id only where the queue has that
/// rule too).
fn headers(m: &Message, carried_by_property: bool) -> Result<FieldTable, Refusal> {
    let carried = carried_by_property || m.attributes.iter().any(|a| m.holds_stable_id(a));
    let mut t = FieldTable::default();
    let mut repeated = std::collections::HashSet::new();
    for a in &m.attributes {
        if !carried && a.name == STABLE_ID_ATTRIBUTE {
            continue;
        }
        let name = ShortString::try_new(a.name.clone()).map_err(|_| {
            format!(
                "header name `{}…` is longer than 255 bytes",
                short_name(&a.name)
            )
        })?;
        let value = from_attr(&a.value).ok_or_else(|| {
            format!(
                "header `{}` says type {} but holds `{}`",
                a.name,
                match &a.value {
                    AttrValue::Text { data_type, .. } | AttrValue::Binary { data_type, .. } =>
                        data_type.as_ref(),
                    AttrValue::Null => "null",
                },
                a.value.display()
            )
        })?;
        // A name that repeats (Kafka headers, a file's attributes): an AMQP table holds a name
        // once, so its values go as one field array, in order.
        match t.inner().get(&name) {
            None => {
                t.insert(name, value);
            }
            Some(first) => {
                let mut values = match first {
                    AMQPValue::FieldArray(a) if repeated.contains(&name) => a.as_slice().to_vec(),
                    other => vec![other.clone()],
                };
                values.push(value);
                repeated.insert(name.clone());
                t.insert(name, AMQPValue::FieldArray(values.into()));
            }
        }
    }
    if !carried {
        t.insert(
            STABLE_ID_ATTRIBUTE.into(),
            AMQPValue::LongString(LongString::from(m.id.as_bytes().to_vec())),
        );
    }
    Ok(t)
}

fn short_name(n: &str) -> String {
    n.chars().take(40).collect()
}

/// The stable id a copy read back carries: its `message_id`, else `dlqctl-stable-id`.
#[cfg(test)]
pub fn carried_id(p: &BasicProperties) -> Option<String> {
    p.message_id()
        .as_ref()
        .map(|s| s.as_str().to_string())
        .or_else(|| {
            p.headers()
                .as_ref()
                .and_then(|h| h.inner().get(STABLE_ID_ATTRIBUTE))
                .and_then(super::fields::text)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivered(p: &BasicProperties) -> Delivered<'_> {
        Delivered {
            exchange: "",
            routing_key: "orders.dlq",
            redelivered: false,
            properties: p,
        }
    }

    #[test]
    fn ids_properties_and_headers_survive_a_copy() {
        let mut h = FieldTable::default();
        h.insert("tenant".into(), AMQPValue::LongString("acme".into()));
        h.insert("retries".into(), AMQPValue::LongInt(3));
        let p = BasicProperties::default()
            .with_message_id("ord-7".into())
            .with_content_type("application/json".into())
            .with_delivery_mode(2)
            .with_timestamp(1_733_356_800)
            .with_user_id("someone-else".into())
            .with_headers(h.clone());
        let m = to_message(delivered(&p), b"{}".to_vec(), None);
        assert_eq!(m.id, "ord-7");
        assert!(m.native_id.starts_with("rmq-"));
        assert_eq!(m.enqueued_at.map(|t| t.timestamp()), Some(1_733_356_800));
        let copy = to_publish(&m, "dlqctl").unwrap();
        assert_eq!(
            copy.message_id().as_ref().map(|s| s.as_str()),
            Some("ord-7")
        );
        assert_eq!(
            copy.content_type().as_ref().map(|s| s.as_str()),
            Some("application/json")
        );
        assert_eq!(*copy.delivery_mode(), Some(2));
        assert_eq!(*copy.user_id(), None, "another user's user_id is left out");
        // message_id carries the id: no dlqctl-stable-id.
        assert_eq!(copy.headers().as_ref(), Some(&h));
    }

    #[test]
    fn without_a_message_id_the_copy_carries_the_native_one() {
        let p = BasicProperties::default();
        let m = to_message(delivered(&p), b"x".to_vec(), None);
        assert_eq!(m.id, m.native_id);
        let again = to_message(delivered(&p), b"x".to_vec(), None);
        assert_eq!(again.native_id, m.native_id, "stable across reads");
        let copy = to_publish(&m, "u").unwrap();
        assert_eq!(carried_id(&copy).as_deref(), Some(m.id.as_str()));
        assert_eq!(*copy.delivery_mode(), Some(2), "persistent by default");
        // Read back, the copy has the same id.
        let back = to_message(delivered(&copy), b"x".to_vec(), None);
        assert_eq!(back.id, m.id);
    }

    #[test]
    fn a_header_that_cannot_be_written_is_a_refusal() {
        let m = Message {
            id: "a".into(),
            attributes: vec![Attribute {
                name: "n".repeat(300),
                value: AttrValue::text("v"),
            }],
            ..Message::default()
        };
        assert!(to_publish(&m, "u").unwrap_err().contains("longer than 255"));
    }

    /// Operator report (2026-12-06): a copy's id and lifetime came from `meta.properties`
    /// (a transform's, or a file's): `message_id` HIJACK on two messages, `expiration` "1" on
    /// copies that then expired. The copy's `message_id` is its stable id, always, and a copy
    /// never carries `expiration`.
    #[test]
    fn a_copys_message_id_is_its_stable_id_and_it_never_expires() {
        let mut m = Message {
            id: "ord-7".into(),
            ..Message::default()
        };
        m.meta.insert(
            "properties",
            json!({"message_id": "HIJACK", "expiration": "1", "content_type": "text/plain"}),
        );
        let copy = to_publish(&m, "u").unwrap();
        assert_eq!(
            copy.message_id().as_ref().map(|s| s.as_str()),
            Some("ord-7")
        );
        assert_eq!(*copy.expiration(), None);
        assert_eq!(
            copy.content_type().as_ref().map(|s| s.as_str()),
            Some("text/plain")
        );
        let back = to_message(delivered(&copy), b"x".to_vec(), None);
        assert_eq!(back.id, "ord-7", "read back, the id a consumer reads");
        // From another backend (no properties): the stable id is the message_id too.
        let m = Message {
            id: "sqs-1".into(),
            ..Message::default()
        };
        let copy = to_publish(&m, "u").unwrap();
        assert_eq!(
            copy.message_id().as_ref().map(|s| s.as_str()),
            Some("sqs-1")
        );
    }

    /// Operator report (2026-12-06): two `dup` headers (a file's, Kafka's) arrived as one,
    /// `dup=second`. An AMQP table cannot repeat a name: the values go as a field array, in
    /// order.
    #[test]
    fn a_repeated_name_is_sent_as_an_array_of_its_values() {
        let attr = |n: &str, v: &str| Attribute {
            name: n.into(),
            value: AttrValue::text(v),
        };
        let m = Message {
            id: "a".into(),
            attributes: vec![
                attr("dup", "first"),
                attr("t", "x"),
                attr("dup", "second"),
                attr("dup", "third"),
            ],
            ..Message::default()
        };
        let copy = to_publish(&m, "u").unwrap();
        let h = copy.headers().clone().unwrap();
        assert_eq!(
            h.inner().get("dup"),
            Some(&AMQPValue::FieldArray(
                vec![
                    AMQPValue::LongString("first".into()),
                    AMQPValue::LongString("second".into()),
                    AMQPValue::LongString("third".into())
                ]
                .into()
            ))
        );
        assert_eq!(h.inner().get("t"), Some(&AMQPValue::LongString("x".into())));
    }

    /// The native id as it was first written (a JSON object of the headers built, then
    /// written): ids in earlier exports and audits must still match.
    fn native_id_as_before(body: &[u8], p: &BasicProperties) -> String {
        let empty = FieldTable::default();
        let headers = p.headers().as_ref().unwrap_or(&empty);
        let mut h = Sha256::new();
        h.update(body);
        h.update(Value::Object(properties_json(p)).to_string());
        let t: Map<String, Value> = super::super::fields::table_json(headers)
            .into_iter()
            .filter(|(k, _)| k != DELIVERY_COUNT)
            .collect();
        h.update(Value::Object(t).to_string());
        let d = h.finalize();
        let hex: String = d[..8].iter().map(|b| format!("{b:02x}")).collect();
        format!("rmq-{hex}")
    }

    #[test]
    fn the_native_id_and_the_attributes_are_those_of_before() {
        let mut death = FieldTable::default();
        death.insert("count".into(), AMQPValue::LongLongInt(1));
        death.insert(
            "queue".into(),
            AMQPValue::LongString("orders \"eu\"".into()),
        );
        death.insert("time".into(), AMQPValue::Timestamp(1_733_356_800));
        let mut h = FieldTable::default();
        h.insert(
            "x-death".into(),
            AMQPValue::FieldArray(vec![AMQPValue::FieldTable(death)].into()),
        );
        h.insert("bin".into(), AMQPValue::LongString(vec![0xff, 1].into()));
        h.insert("f".into(), AMQPValue::Double(0.1));
        h.insert("n".into(), AMQPValue::LongInt(-5));
        h.insert("é\n".into(), AMQPValue::Void);
        h.insert(DELIVERY_COUNT.into(), AMQPValue::LongLongInt(2));
        let p = BasicProperties::default()
            .with_content_type("application/json".into())
            .with_priority(3)
            .with_headers(h.clone());
        let m = to_message(delivered(&p), b"{\"a\":1}".to_vec(), None);
        assert_eq!(m.native_id, native_id_as_before(b"{\"a\":1}", &p));
        let before: Vec<Attribute> = h
            .inner()
            .iter()
            .filter(|(k, _)| k.as_str() != DELIVERY_COUNT)
            .map(|(k, v)| Attribute {
                name: k.as_str().to_string(),
                value: to_attr(v),
            })
            .collect();
        assert_eq!(m.attributes, before);
        let bare = BasicProperties::default();
        let m = to_message(delivered(&bare), b"x".to_vec(), None);
        assert_eq!(m.native_id, native_id_as_before(b"x", &bare));
    }

    #[test]
    fn a_quorum_queues_delivery_count_leaves_the_native_id_alone() {
        // A broker-made dead letter: x-first-death-* sort after x-delivery-count, which a
        // quorum queue adds once the message was returned.
        let mut h = FieldTable::default();
        h.insert("tenant".into(), AMQPValue::LongString("acme".into()));
        for k in ["exchange", "queue", "reason"] {
            h.insert(
                format!("x-first-death-{k}").as_str().into(),
                AMQPValue::LongString(k.into()),
            );
        }
        let first = BasicProperties::default().with_headers(h.clone());
        h.insert(DELIVERY_COUNT.into(), AMQPValue::LongLongInt(1));
        let returned = BasicProperties::default().with_headers(h);
        let a = to_message(delivered(&first), b"x".to_vec(), None);
        let b = to_message(delivered(&returned), b"x".to_vec(), None);
        assert_eq!(a.native_id, b.native_id, "the first read and a later one");
    }

    /// Replayed from a stream, a message is as it was published: its offset in the stream
    /// (the header a stream consumer gets) is neither an attribute (its copies would carry
    /// it) nor part of the native id (the same message in two streams is the same message).
    #[test]
    fn a_streams_offset_is_not_part_of_the_message() {
        let mut h = FieldTable::default();
        h.insert("tenant".into(), AMQPValue::LongString("acme".into()));
        let published = BasicProperties::default().with_headers(h.clone());
        h.insert(STREAM_OFFSET.into(), AMQPValue::LongLongInt(41));
        let from_stream = BasicProperties::default().with_headers(h);
        let a = to_message(delivered(&published), b"x".to_vec(), None);
        let b = to_message(delivered(&from_stream), b"x".to_vec(), None);
        let names: Vec<&str> = b.attributes.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["tenant"]);
        assert_eq!(a.native_id, b.native_id);
        let copy = to_publish(&b, "u").unwrap();
        let headers = copy.headers().clone().unwrap_or_default();
        assert!(!headers.inner().contains_key(STREAM_OFFSET), "{headers:?}");
    }
}
