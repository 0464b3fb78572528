//! `--where JQ`: a jq expression over a message's record, evaluated by jaq.
//!
//! The input is the message's JSON Lines record (docs/jsonl.md) with helper fields that make
//! the common queries short (docs/triage.md, "Queries"): `.json` (the body parsed, when it is
//! JSON), `.attrs` (attribute name → value), `.error_text`, `.age_seconds`, and, computed only
//! when the expression names them, `.class`, `.rule`, `.fingerprint` and `.template`.

use chrono::{DateTime, Utc};
use jaq_core::data::JustLut;
use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Vars};
use jaq_json::Val;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::classify::{Classifier, fingerprint};
use crate::error::{Error, Result};
use crate::message::Message;

type Compiled = jaq_core::Filter<JustLut<Val>>;

/// A compiled `--where` expression.
pub struct Query {
    source: String,
    filter: Compiled,
    /// The record's fields the expression can see (see [`Fields`]).
    fields: Fields,
}

/// Which fields of the record a query gets. A jq program reads a field by its name
/// (`.json`, `."json"`, `.["json"]`, `getpath(["json"])`), so a field that the program's text
/// does not name cannot matter to it, and is not built: that keeps `--where` cheap (only
/// `.json` is parsed for `.json.amount > 1`). A program that looks at the record as a whole
/// (`keys`, `.[]`, `tojson`, `length`, …) gets every field.
#[derive(Clone, Copy, Debug)]
struct Fields {
    all: bool,
    named: [bool; FIELD_NAMES.len()],
}

/// Every field a query can see: the record's (docs/jsonl.md), then the helpers.
const FIELD_NAMES: [&str; 25] = [
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
    fn of(code: &str) -> Fields {
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

const _: () = {
    fn shareable<T: Send + Sync>() {}
    let _ = shareable::<Query>;
};

impl std::fmt::Debug for Query {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Query({:?})", self.source)
    }
}

impl Query {
    /// Compile `code` (the value of `flag`); an error names the place and what was expected.
    pub fn compile(flag: &str, code: &str) -> Result<Query> {
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs());
        let funs = jaq_core::funs()
            .chain(jaq_std::funs())
            .chain(jaq_json::funs());
        let arena = Arena::default();
        let loader = Loader::new(defs);
        let bad = |at: &str, what: String| {
            let pos = jaq_core::load::span(code, at).start;
            Error::invalid_arg(
                flag,
                format!(
                    "not a valid jq expression at character {}: {what} (in `{}`)",
                    code[..pos].chars().count() + 1,
                    crate::address::escape_controls(code)
                ),
            )
        };
        let modules = loader
            .load(&arena, File { code, path: () })
            .map_err(|errs| {
                use jaq_core::load::Error as E;
                let Some((_, e)) = errs.into_iter().next() else {
                    return Error::invalid_arg(flag, "not a valid jq expression");
                };
                match e {
                    E::Lex(es) => match es.into_iter().next() {
                        Some((expect, at)) => bad(at, format!("expected {}", expect.as_str())),
                        None => Error::invalid_arg(flag, "not a valid jq expression"),
                    },
                    E::Parse(es) => match es.into_iter().next() {
                        Some((expect, found)) => {
                            let found_text = if found.is_empty() {
                                "the end".to_string()
                            } else {
                                format!("`{found}`")
                            };
                            // An empty `found` is the end of the text.
                            let at = if found.is_empty() {
                                &code[code.len()..]
                            } else {
                                found
                            };
                            bad(
                                at,
                                format!("expected {}, found {found_text}", expect.as_str()),
                            )
                        }
                        None => Error::invalid_arg(flag, "not a valid jq expression"),
                    },
                    E::Io(es) => Error::invalid_arg(
                        flag,
                        format!(
                            "cannot load {}",
                            es.into_iter()
                                .map(|(p, e)| format!("{p}: {e}"))
                                .collect::<Vec<_>>()
                                .join("; ")
                        ),
                    ),
                }
            })?;
        let filter = Compiler::default()
            .with_funs(funs)
            .compile(modules)
            .map_err(|errs| {
                let Some((_, es)) = errs.into_iter().next() else {
                    return Error::invalid_arg(flag, "not a valid jq expression");
                };
                match es.into_iter().next() {
                    Some((name, undefined)) => {
                        bad(name, format!("undefined {} `{name}`", undefined.as_str()))
                    }
                    None => Error::invalid_arg(flag, "not a valid jq expression"),
                }
            })?;
        Ok(Query {
            source: code.to_string(),
            filter,
            fields: Fields::of(code),
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Does `m` pass: is the expression's first output truthy (not false or null)? An
    /// expression that fails on a message (`.json.x` when the body is not JSON) is an error.
    pub fn matches(
        &self,
        m: &Message,
        now: DateTime<Utc>,
        classifier: &Classifier,
    ) -> std::result::Result<bool, String> {
        let input = self.input(m, now, classifier)?;
        let ctx = jaq_core::Ctx::<JustLut<Val>>::new(&self.filter.lut, Vars::new([]));
        let mut out = self.filter.id.run((ctx, input)).map(jaq_core::unwrap_valr);
        match out.next() {
            None => Ok(false),
            Some(Ok(v)) => Ok(!matches!(v, Val::Null | Val::Bool(false))),
            Some(Err(e)) => Err(one_line(&e.to_string())),
        }
    }

    /// The value the expression sees: the fields it names (all when it looks at the whole).
    fn input(
        &self,
        m: &Message,
        now: DateTime<Utc>,
        classifier: &Classifier,
    ) -> std::result::Result<Val, String> {
        let f = &self.fields;
        if f.all {
            let record = record_value(m, now, classifier, true, true);
            return Val::deserialize(record).map_err(|e| e.to_string());
        }
        let mut obj = jaq_json::Map::default();
        let mut put = |name: &str, v: Val| {
            obj.insert(Val::from(name.to_string()), v);
        };
        let text = |s: Option<&str>| s.map_or(Val::Null, |s| Val::from(s.to_string()));
        let time = |t: Option<DateTime<Utc>>| match t {
            Some(t) => Val::deserialize(serde_json::to_value(t).unwrap_or(Value::Null))
                .unwrap_or(Val::Null),
            None => Val::Null,
        };
        // Whatever serde makes of a value, as jaq sees it.
        let via_json = |v: Value| Val::deserialize(v).unwrap_or(Val::Null);
        if f.wants("json") {
            put(
                "json",
                jaq_json::read::parse_single(&m.body).unwrap_or(Val::Null),
            );
        }
        if f.wants("id") {
            put("id", Val::from(m.id.clone()));
        }
        if f.wants("native_id") {
            put("native_id", Val::from(m.native_id.clone()));
        }
        if f.wants("v") {
            put("v", Val::from(crate::message::RECORD_VERSION as isize));
        }
        if f.wants("source") {
            put("source", text(m.source.as_deref()));
        }
        if f.wants("enqueued_at") {
            put("enqueued_at", time(m.enqueued_at));
        }
        if f.wants("dead_lettered_at") {
            put("dead_lettered_at", time(m.dead_lettered_at));
        }
        if f.wants("receive_count") {
            put(
                "receive_count",
                m.receive_count.map_or(Val::Null, |n| Val::from(n as isize)),
            );
        }
        if f.wants("group") {
            put("group", text(m.group.as_deref()));
        }
        if f.wants("dedup_id") {
            put("dedup_id", text(m.dedup_id.as_deref()));
        }
        if f.wants("partition") {
            put(
                "partition",
                m.partition.map_or(Val::Null, |n| Val::from(n as isize)),
            );
        }
        if f.wants("id_attribute") {
            put("id_attribute", text(m.id_attribute.as_deref()));
        }
        if f.wants("error_text") {
            put("error_text", text(m.error_text().as_deref()));
        }
        if f.wants("age_seconds") {
            put(
                "age_seconds",
                m.age(now)
                    .map_or(Val::Null, |a| Val::from(a.num_seconds() as isize)),
            );
        }
        // The rest as the record has them (serialised the same way).
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
        if wants_record {
            let r = m.to_record();
            if f.wants("key") {
                put("key", text(r.key.as_deref()));
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
                    put(name, via_json(get(&r)));
                }
            }
            if f.wants("body") {
                put("body", Val::from(r.body));
            }
        }
        if f.wants("attrs") {
            put("attrs", via_json(attrs_map(m)));
        }
        if f.wants("class") || f.wants("rule") {
            let c = classifier.classify(m);
            put("class", Val::from(c.kind.to_string()));
            put("rule", Val::from(c.rule));
        }
        if f.wants("fingerprint") {
            let fp = fingerprint::fingerprint(m);
            put("fingerprint", Val::from(fp.id));
            put("template", Val::from(fp.template));
        }
        Ok(Val::obj(obj))
    }
}

/// `--transform JQ`: maps a message's record to the record to send (docs/triage.md,
/// "Transforms"). The input is the record with `.json` (the body parsed) and `.attrs`
/// (name → value); a change to `.json` becomes the body, a change to `.attrs` the attributes.
pub enum Transform {
    Jq(Query),
    /// `dlqctl edit`: the record as the operator saved it, for the one message with its id.
    Replace(Box<Message>),
}

impl Transform {
    pub fn compile(code: &str) -> Result<Transform> {
        let mut query = Query::compile("--transform", code)?;
        query.fields.all = true;
        Ok(Transform::Jq(query))
    }

    pub fn source(&self) -> &str {
        match self {
            Transform::Jq(q) => &q.source,
            Transform::Replace(_) => "the edited record",
        }
    }

    /// The copy to send instead of `m`, or why there is none (the message then stays where
    /// it is, counted as failed with this reason).
    pub fn apply(&self, m: &Message) -> std::result::Result<Message, String> {
        let q = match self {
            Transform::Jq(q) => q,
            Transform::Replace(edited) if edited.id == m.id => return Ok((**edited).clone()),
            Transform::Replace(_) => return Err("not the edited message".into()),
        };
        let mut input = match serde_json::to_value(m.to_record()) {
            Ok(Value::Object(o)) => o,
            _ => return Err("the record cannot be built".into()),
        };
        let json = serde_json::from_slice::<Value>(&m.body).unwrap_or(Value::Null);
        let attrs = attrs_map(m);
        input.insert("json".into(), json.clone());
        input.insert("attrs".into(), attrs.clone());
        let input = Val::deserialize(Value::Object(input)).map_err(|e| e.to_string())?;
        let ctx = jaq_core::Ctx::<JustLut<Val>>::new(&q.filter.lut, Vars::new([]));
        let mut out = q.filter.id.run((ctx, input)).map(jaq_core::unwrap_valr);
        let first = match out.next() {
            None => return Err("--transform gave no record (empty)".into()),
            Some(Err(e)) => {
                return Err(format!("--transform failed: {}", one_line(&e.to_string())));
            }
            Some(Ok(v)) => v,
        };
        if out.next().is_some() {
            return Err("--transform gave more than one record".into());
        }
        let Ok(Value::Object(mut o)) = serde_json::from_str::<Value>(&first.to_string()) else {
            return Err("--transform must give an object (the record)".into());
        };
        if o.get("id") != Some(&Value::String(m.id.clone())) {
            return Err(format!(
                "--transform cannot change the stable id ({}): the copy would be a different message",
                crate::address::escape_controls(&m.id)
            ));
        }
        // A changed .json is the new body; changed .attrs are the new attributes.
        if let Some(new) = o.remove("json")
            && new != json
        {
            o.insert("body".into(), Value::String(new.to_string()));
            o.insert("body_encoding".into(), Value::String("utf8".into()));
        }
        let new_attrs = o.remove("attrs");
        for helper in [
            "error_text",
            "age_seconds",
            "class",
            "rule",
            "fingerprint",
            "template",
        ] {
            o.remove(helper);
        }
        let record: crate::message::Record = serde_json::from_value(Value::Object(o))
            .map_err(|e| format!("--transform gave a record that is not valid: {e}"))?;
        let mut copy = Message::from_record(record)?;
        if let Some(Value::Object(new)) = new_attrs
            && Value::Object(new.clone()) != attrs
        {
            copy.attributes
                .retain(|a| new.contains_key(&a.name) || copy_carries(m, a));
            for (name, v) in new {
                let value = match v {
                    Value::Null => crate::message::AttrValue::Null,
                    Value::String(s) => crate::message::AttrValue::text(s),
                    other => crate::message::AttrValue::text(other.to_string()),
                };
                match copy.attributes.iter_mut().find(|a| a.name == name) {
                    Some(a) => a.value = value,
                    None => copy
                        .attributes
                        .push(crate::message::Attribute { name, value }),
                }
            }
        }
        Ok(copy)
    }
}

/// The attribute that carries the stable id stays, whatever a transform does to `.attrs`.
fn copy_carries(m: &Message, a: &crate::message::Attribute) -> bool {
    m.carries_id(a)
}

/// A unified diff of a message's record before and after a transform (for `--dry-run`).
pub fn diff(before: &Message, after: &Message) -> String {
    let pretty = |m: &Message| {
        let mut v = serde_json::to_value(m.to_record()).unwrap_or_default();
        // The body as people read it: parsed, when it is JSON.
        if let Ok(j) = serde_json::from_slice::<Value>(&m.body)
            && let Value::Object(o) = &mut v
        {
            o.insert("body".into(), j);
        }
        serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
    };
    let (a, b) = (pretty(before), pretty(after));
    similar::TextDiff::from_lines(&a, &b)
        .unified_diff()
        .context_radius(2)
        .header(
            &format!("{} (before)", before.id),
            &format!("{} (sent)", after.id),
        )
        .to_string()
}

/// A field of the record as serde writes it.
type Serialised = fn(&crate::message::Record) -> Value;

/// `.attrs`: attribute name → value (the first of repeated names; binary as hex).
fn attrs_map(m: &Message) -> Value {
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

fn one_line(s: &str) -> String {
    crate::address::escape_controls(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{AttrValue, Attribute, ErrorInfo};

    fn msg() -> Message {
        Message {
            id: "ord-1".into(),
            native_id: "1".into(),
            body: br#"{"amount_cents": 250000, "currency": "EUR"}"#.to_vec(),
            attributes: vec![Attribute {
                name: "tenant".into(),
                value: AttrValue::text("acme"),
            }],
            enqueued_at: Some(Utc::now() - chrono::Duration::hours(2)),
            error: Some(ErrorInfo {
                class: Some("PaymentDeclined".into()),
                message: Some("card for cus_N3kd9aQ declined".into()),
                trace: None,
            }),
            ..Message::default()
        }
    }

    fn eval(code: &str, m: &Message) -> std::result::Result<bool, String> {
        Query::compile("--where", code)
            .unwrap()
            .matches(m, Utc::now(), &Classifier::builtin())
    }

    #[test]
    fn helper_fields_make_common_queries_short() {
        let m = msg();
        for (code, want) in [
            (".json.amount_cents > 100000", true),
            (".json.currency == \"USD\"", false),
            (".attrs.tenant == \"acme\"", true),
            (
                ".attributes | any(.name == \"tenant\" and .value == \"acme\")",
                true,
            ),
            (".error_text | test(\"declined\")", true),
            (".age_seconds > 3600", true),
            (".class == \"permanent\"", false),
            (".rule", true),
            (".id | startswith(\"ord-\")", true),
            ("empty", false),
            ("null", false),
            (".fingerprint | length == 8", true),
            (".template | contains(\"<id>\")", true),
        ] {
            assert_eq!(eval(code, &m), Ok(want), "{code}");
        }
        // A body that is not JSON: .json is null, and a query that indexes into a string fails.
        let mut text = msg();
        text.body = b"plain text".to_vec();
        assert_eq!(eval(".json == null", &text), Ok(true));
        assert_eq!(eval(".json.a", &text), Ok(false));
        assert!(eval(".body.a", &text).is_err());
    }

    /// Building only the named fields changes nothing but the cost: every expression gives
    /// what it gives on the whole record.
    #[test]
    fn named_fields_give_what_the_whole_record_gives() {
        let mut m = msg();
        m.key = Some(vec![0xff, 0x01]);
        m.group = Some("g1".into());
        m.receive_count = Some(4);
        m.meta.insert("topic", serde_json::json!("orders.DLT"));
        let c = Classifier::builtin();
        let now = Utc::now();
        for code in [
            ".json.amount_cents > 100000",
            ".json.currency",
            ".id",
            ".native_id",
            ".v",
            ".source",
            ".enqueued_at",
            ".enqueued_at | fromdate > 0",
            ".dead_lettered_at",
            ".receive_count",
            ".group",
            ".dedup_id",
            ".partition",
            ".key",
            ".key_encoding",
            ".error.class",
            ".error",
            ".attributes[0].value",
            ".body",
            ".body | fromjson | .currency",
            ".body_encoding",
            ".meta.topic",
            ".id_attribute",
            ".attrs.tenant",
            ".error_text",
            ".age_seconds > 60",
            ".class",
            ".rule",
            ".fingerprint",
            ".template",
            ".nosuch",
        ] {
            let lazy = Query::compile("--where", code).unwrap();
            assert!(!lazy.fields.all, "{code}");
            let mut whole = Query::compile("--where", code).unwrap();
            whole.fields.all = true;
            let eval = |q: &Query| {
                let ctx = jaq_core::Ctx::<JustLut<Val>>::new(&q.filter.lut, Vars::new([]));
                let input = q.input(&m, now, &c).unwrap();
                q.filter
                    .id
                    .run((ctx, input))
                    .map(jaq_core::unwrap_valr)
                    .map(|r| r.map(|v| v.to_string()).map_err(|e| e.to_string()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(eval(&lazy), eval(&whole), "{code}");
        }
        assert!(
            Query::compile("--where", "keys | length > 3")
                .unwrap()
                .fields
                .all
        );
        assert!(
            Query::compile("--where", ".[] | strings")
                .unwrap()
                .fields
                .all
        );
    }

    #[test]
    fn a_transform_edits_the_body_and_attributes_and_keeps_the_id() {
        let m = msg();
        let t = Transform::compile(
            r#".json.currency = "USD" | .attrs.tenant = "zeta" | .attrs.fixed = "1""#,
        )
        .unwrap();
        let out = t.apply(&m).unwrap();
        assert_eq!(out.id, m.id);
        let body: Value = serde_json::from_slice(&out.body).unwrap();
        assert_eq!(body["currency"], "USD");
        assert_eq!(body["amount_cents"], 250000);
        assert_eq!(out.attribute("tenant").unwrap().display(), "zeta");
        assert_eq!(out.attribute("fixed").unwrap().display(), "1");
        // The record's own fields work too, and an unchanged transform is the message.
        let same = Transform::compile(".").unwrap().apply(&m).unwrap();
        assert_eq!(same, m);
        let grouped = Transform::compile(r#".group = "g2""#)
            .unwrap()
            .apply(&m)
            .unwrap();
        assert_eq!(grouped.group.as_deref(), Some("g2"));
        // The stable id cannot change; nothing, or two records, is no copy.
        for (code, why) in [
            (r#".id = "other""#, "cannot change the stable id"),
            ("empty", "no record"),
            (". , .", "more than one"),
            ("1", "must give an object"),
            (".body = 3", "not valid"),
        ] {
            let e = Transform::compile(code).unwrap().apply(&m).unwrap_err();
            assert!(e.contains(why), "{code}: {e}");
        }
        let d = diff(&m, &out);
        assert!(
            d.contains("-    \"currency\": \"EUR\"") && d.contains("+    \"currency\": \"USD\""),
            "{d}"
        );
    }

    #[test]
    fn a_bad_expression_names_the_place() {
        for (code, want) in [
            (
                ".json.amount >",
                "at character 15: expected term, found the end",
            ),
            (
                ".a | nosuch(1)",
                "at character 6: undefined filter `nosuch`",
            ),
            (".a == $x", "at character 7: undefined variable `$x`"),
            ("\"open", "at character 6: expected closing quote"),
        ] {
            let e = Query::compile("--where", code).unwrap_err().to_string();
            assert!(e.contains(want), "{code}: {e}");
            assert!(e.contains("--where"), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn a_query_is_shareable() {
        let q = std::sync::Arc::new(Query::compile("--where", ".json.amount_cents > 1").unwrap());
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let q = q.clone();
                std::thread::spawn(move || {
                    (0..200)
                        .all(|_| q.matches(&msg(), Utc::now(), &Classifier::builtin()) == Ok(true))
                })
            })
            .collect();
        assert!(handles.into_iter().all(|h| h.join().unwrap()));
    }
}
