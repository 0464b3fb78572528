//! The record a query sees: the message's JSON Lines record (docs/jsonl.md) with the helper
//! fields, built only as far as the expression can look (see [`Fields`]).

use chrono::{DateTime, Utc};
use jaq_json::Val;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::classify::{Classifier, fingerprint};
use crate::message::Message;

/// Which fields of the record a query gets. A jq program reads a field by its name
/// (`.json`, `."json"`, `.["json"]`, `getpath(["json"])`), so a field that the program's text
/// does not name cannot matter to it, and is not built: that keeps `--where` cheap (only
/// `.json` is parsed for `.json.amount > 1`). A program that looks at the record as a whole
/// (`keys`, `.[]`, `tojson`, `length`, …) gets every field.
#[derive(Clone, Copy, Debug)]
pub(super) struct Fields {
    pub(super) all: bool,
    named: [bool; FIELD_NAMES.len()],
}

/// Every field a query can see: the record's (docs/jsonl.md), then the helpers.
pub(super) const FIELD_NAMES: [&str; 25] = [
    "v",
    "id",
    "native_id",
    "source",
    "enqueued_at",
    "dead_lettered_at",
    "receive_count",
    "group",
    "dedup_id",
    "partition",
    "key",
    "key_encoding",
    "error",
    "attributes",
    "body",
    "body_encoding",
    "meta",
    "id_attribute",
    "json",
    "attrs",
    "error_text",
    "age_seconds",
    "class",
    "rule",
    "fingerprint",
];

/// Tokens that look at the record as a whole: with any of them, every field is built.
const WHOLE_RECORD: [&str; 20] = [
    "[]",
    ".[",
    "..",
    "keys",
    "entries",
    "tojson",
    "tostring",
    "tostream",
    "paths",
    "getpath",
    "has(",
    "in(",
    "del(",
    "map_values",
    "length",
    "@",
    "add",
    "debug",
    "walk",
    "$__",
];

impl Fields {
    pub(super) fn of(code: &str) -> Fields {
        let mut named = [false; FIELD_NAMES.len()];
        for (i, f) in FIELD_NAMES.iter().enumerate() {
            named[i] = code.contains(f);
        }
        // `.template` comes with the fingerprint.
        if code.contains("template") {
            named[FIELD_NAMES.len() - 1] = true;
        }
        Fields {
            all: WHOLE_RECORD.iter().any(|t| code.contains(t)),
            named,
        }
    }

    fn wants(&self, name: &str) -> bool {
        self.all
            || FIELD_NAMES
                .iter()
                .position(|f| *f == name)
                .is_some_and(|i| self.named[i])
    }
}

/// The value the expression sees: the fields it names (all when it looks at the whole).
pub(super) fn input(
    f: &Fields,
    m: &Message,
    now: DateTime<Utc>,
    classifier: &Classifier,
) -> std::result::Result<Val, String> {
    if f.all {
        let record = record_value(m, now, classifier, true, true);
        return Val::deserialize(record).map_err(|e| e.to_string());
    }
    let mut obj = jaq_json::Map::default();
    message_fields(f, m, now, &mut obj);
    record_fields(f, m, &mut obj);
    derived_fields(f, m, classifier, &mut obj);
    Ok(Val::obj(obj))
}

fn put(obj: &mut jaq_json::Map, name: &str, v: Val) {
    obj.insert(Val::from(name.to_string()), v);
}

fn text(s: Option<&str>) -> Val {
    s.map_or(Val::Null, |s| Val::from(s.to_string()))
}

fn time(t: Option<DateTime<Utc>>) -> Val {
    match t {
        Some(t) => {
            Val::deserialize(serde_json::to_value(t).unwrap_or(Value::Null)).unwrap_or(Val::Null)
        }
        None => Val::Null,
    }
}

/// Whatever serde makes of a value, as jaq sees it.
fn via_json(v: Value) -> Val {
    Val::deserialize(v).unwrap_or(Val::Null)
}

/// The fields read straight off the message, with `.json`, `.error_text` and `.age_seconds`.
fn message_fields(f: &Fields, m: &Message, now: DateTime<Utc>, obj: &mut jaq_json::Map) {
    if f.wants("json") {
        put(
            obj,
            "json",
            jaq_json::read::parse_single(&m.body).unwrap_or(Val::Null),
        );
    }
    if f.wants("id") {
        put(obj, "id", Val::from(m.id.clone()));
    }
    if f.wants("native_id") {
        put(obj, "native_id", Val::from(m.native_id.clone()));
    }
    if f.wants("v") {
        put(obj, "v", Val::from(crate::message::RECORD_VERSION as isize));
    }
    if f.wants("source") {
        put(obj, "source", text(m.source.as_deref()));
    }
    if f.wants("enqueued_at") {
        put(obj, "enqueued_at", time(m.enqueued_at));
    }
    if f.wants("dead_lettered_at") {
        put(obj, "dead_lettered_at", time(m.dead_lettered_at));
    }
    if f.wants("receive_count") {
        put(
            obj,
            "receive_count",
            m.receive_count.map_or(Val::Null, |n| Val::from(n as isize)),
        );
    }
    if f.wants("group") {
        put(obj, "group", text(m.group.as_deref()));
    }
    if f.wants("dedup_id") {
        put(obj, "dedup_id", text(m.dedup_id.as_deref()));
    }
    if f.wants("partition") {
        put(
            obj,
            "partition",
            m.partition.map_or(Val::Null, |n| Val::from(n as isize)),
        );
    }
    if f.wants("id_attribute") {
        put(obj, "id_attribute", text(m.id_attribute.as_deref()));
    }
    if f.wants("error_text") {
        put(obj, "error_text", text(m.error_text().as_deref()));
    }
    if f.wants("age_seconds") {
        put(
            obj,
            "age_seconds",
            m.age(now)
                .map_or(Val::Null, |a| Val::from(a.num_seconds() as isize)),
        );
    }
}

/// The rest as the record has them (serialised the same way); the record is built only when
/// one of them is named.
fn record_fields(f: &Fields, m: &Message, obj: &mut jaq_json::Map) {
    let wants_record = [
        "key",
        "key_encoding",
        "error",
        "attributes",
        "body",
        "body_encoding",
        "meta",
    ]
    .iter()
    .any(|n| f.wants(n));
    if !wants_record {
        return;
    }
    let r = m.to_record();
    if f.wants("key") {
        put(obj, "key", text(r.key.as_deref()));
    }
    // The record's structured fields, serialised as the record has them.
    let structured: [(&str, Serialised); 5] = [
        ("key_encoding", |r| {
            serde_json::to_value(r.key_encoding).unwrap_or_default()
        }),
        ("error", |r| {
            serde_json::to_value(&r.error).unwrap_or_default()
        }),
        ("attributes", |r| {
            serde_json::to_value(&r.attributes).unwrap_or_default()
        }),
        ("body_encoding", |r| {
            serde_json::to_value(r.body_encoding).unwrap_or_default()
        }),
        ("meta", |r| {
            serde_json::to_value(&r.meta).unwrap_or_default()
        }),
    ];
    for (name, get) in structured {
        if f.wants(name) {
            put(obj, name, via_json(get(&r)));
        }
    }
    if f.wants("body") {
        put(obj, "body", Val::from(r.body));
    }
}

/// The helpers that take work: the attribute map, the class and rule, the fingerprint and its
/// template.
fn derived_fields(f: &Fields, m: &Message, classifier: &Classifier, obj: &mut jaq_json::Map) {
    if f.wants("attrs") {
        put(obj, "attrs", via_json(attrs_map(m)));
    }
    if f.wants("class") || f.wants("rule") {
        let c = classifier.classify(m);
        put(obj, "class", Val::from(c.kind.to_string()));
        put(obj, "rule", Val::from(c.rule));
    }
    if f.wants("fingerprint") {
        let fp = fingerprint::fingerprint(m);
        put(obj, "fingerprint", Val::from(fp.id));
        put(obj, "template", Val::from(fp.template));
    }
}

/// A field of the record as serde writes it.
type Serialised = fn(&crate::message::Record) -> Value;

/// `.attrs`: attribute name → value (the first of repeated names; binary as hex).
pub(super) fn attrs_map(m: &Message) -> Value {
    let mut attrs = Map::new();
    for a in &m.attributes {
        attrs
            .entry(a.name.clone())
            .or_insert_with(|| match &a.value {
                crate::message::AttrValue::Null => Value::Null,
                other => Value::String(other.display()),
            });
    }
    Value::Object(attrs)
}

/// The record with the helper fields (`docs/triage.md` lists them).
pub fn record_value(
    m: &Message,
    now: DateTime<Utc>,
    classifier: &Classifier,
    with_class: bool,
    with_fingerprint: bool,
) -> Value {
    let mut v = match serde_json::to_value(m.to_record()) {
        Ok(Value::Object(o)) => o,
        _ => Map::new(),
    };
    let json = serde_json::from_slice::<Value>(&m.body).unwrap_or(Value::Null);
    v.insert("json".into(), json);
    v.insert("attrs".into(), attrs_map(m));
    v.insert(
        "error_text".into(),
        m.error_text().map_or(Value::Null, Value::String),
    );
    v.insert(
        "age_seconds".into(),
        m.age(now).map_or(Value::Null, |a| a.num_seconds().into()),
    );
    if with_class {
        let c = classifier.classify(m);
        v.insert("class".into(), Value::String(c.kind.to_string()));
        v.insert("rule".into(), Value::String(c.rule));
    }
    if with_fingerprint {
        let f = fingerprint::fingerprint(m);
        v.insert("fingerprint".into(), Value::String(f.id));
        v.insert("template".into(), Value::String(f.template));
    }
    Value::Object(v)
}
