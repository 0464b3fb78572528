//! `--transform JQ`: maps a message's record to the record to send (docs/triage.md,
//! "Transforms"). The input is the record with `.json` (the body parsed) and `.attrs`
//! (name → value); a change to `.json` becomes the body, a change to `.attrs` the attributes.
//!
//! Two things a copy keeps whatever the transform says: its id, as the record's `.id` and as
//! the queue's id rule reads it (`id = "json:/order"`: where a consumer reads it), and dlqctl's
//! own attributes (`dlqctl-*`: the loop guard's count, the stable id), which are dlqctl's, not
//! the transform's. A transform that changes either is refused for that message.

use serde::Deserialize;
use serde_json::Value;

use super::{Query, attrs_map, eval};
use crate::config::IdSource;
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::message::{AttrValue, Attribute, Message};

/// The prefix of the attributes that are dlqctl's own.
const DLQCTL_ATTRIBUTES: &str = "dlqctl-";

pub enum Transform {
    Jq(Box<Query>),
    /// `dlqctl edit`: the copy to send for the one message opened in the editor, or why there
    /// is none (another message, or that one changed since it was opened: `ops::edit`).
    Replace(Box<Replacement>),
}

/// What `edit` sends instead of a message it is offered (see [`Transform::Replace`]).
pub type Replacement = dyn Fn(&Message) -> std::result::Result<Message, String> + Send + Sync;

impl Transform {
    pub fn compile(code: &str) -> Result<Transform> {
        let mut query = Query::compile("--transform", code)?;
        query.fields.all = true;
        Ok(Transform::Jq(Box::new(query)))
    }

    /// Stop a transform that spins when `interrupt` is set (Ctrl-C).
    pub fn watching(mut self, interrupt: &Interrupt) -> Transform {
        if let Transform::Jq(q) = &mut self {
            q.limits.interrupt = Some(interrupt.clone());
        }
        self
    }

    pub fn source(&self) -> &str {
        match self {
            Transform::Jq(q) => &q.source,
            Transform::Replace(_) => "the edited record",
        }
    }

    /// The copy to send instead of `m`, or why there is none (the message then stays where
    /// it is, counted as failed with this reason). `id_rule`: where the source queue's
    /// messages carry their id (`id = …` in dlqctl.toml), which the copy must carry unchanged.
    pub fn apply(
        &self,
        m: &Message,
        id_rule: Option<&IdSource>,
    ) -> std::result::Result<Message, String> {
        let copy = match self {
            Transform::Jq(q) => mapped(q, m)?,
            Transform::Replace(copy_for) => copy_for(m)?,
        };
        let what = match self {
            Transform::Jq(_) => "--transform",
            Transform::Replace(_) => "the edit",
        };
        if let Some(rule) = id_rule {
            let (before, after) = (id_by_rule(m, rule), id_by_rule(&copy, rule));
            if before != after {
                let shown = |s: &str| {
                    if s.is_empty() {
                        "none".to_string()
                    } else {
                        format!("`{}`", crate::text::escape_controls(s))
                    }
                };
                return Err(format!(
                    "{what} cannot change the id the queue's id rule ({}) reads: it was {}, the copy would have {}; a consumer would see another message",
                    rule_text(rule),
                    shown(&before),
                    shown(&after)
                ));
            }
        }
        let (before, after) = (dlqctl_attributes(m), dlqctl_attributes(&copy));
        if before != after {
            let changed: Vec<&str> = before
                .iter()
                .chain(&after)
                .filter(|a| !(before.contains(a) && after.contains(a)))
                .map(|(n, _)| n.as_str())
                .collect();
            let mut names = changed;
            names.sort_unstable();
            names.dedup();
            return Err(format!(
                "{what} cannot change {}: dlqctl-* attributes are dlqctl's (the loop guard's count, the stable id), not the transform's",
                names.join(", ")
            ));
        }
        Ok(copy)
    }
}

/// The id `rule` reads from `m` (empty when it finds none).
fn id_by_rule(m: &Message, rule: &IdSource) -> String {
    let mut probe = m.clone();
    probe.id.clear();
    crate::backend::apply_id_source(&mut probe, Some(rule));
    probe.id
}

fn rule_text(rule: &IdSource) -> String {
    match rule {
        IdSource::Attribute(n) => format!("attribute:{n}"),
        IdSource::Json(p) => format!("json:{p}"),
        IdSource::Native => "native".into(),
    }
}

/// The `dlqctl-*` attributes of `m`, as (name, value) in name order.
fn dlqctl_attributes(m: &Message) -> Vec<(String, Option<Vec<u8>>)> {
    let mut v: Vec<_> = m
        .attributes
        .iter()
        .filter(|a| a.name.starts_with(DLQCTL_ATTRIBUTES))
        .map(|a| (a.name.clone(), a.value.as_bytes().map(<[u8]>::to_vec)))
        .collect();
    v.sort();
    v
}

/// Refuses a transform's `.meta` (`new`) that is not the message's: `.meta` is what the source
/// said about the message (RabbitMQ's properties, Kafka's offsets), not the copy's to set: a
/// `message_id` or an `expiration` there would change the id a consumer reads, or let the
/// copy expire (docs/triage.md, "Transforms").
fn same_meta(m: &Message, new: Option<Value>) -> std::result::Result<(), String> {
    let old = serde_json::to_value(&m.meta).unwrap_or_default();
    let new = new.unwrap_or_else(|| Value::Object(Default::default()));
    if new == old || same_after_jq(&old, &new) {
        return Ok(());
    }
    Err(format!(
        "--transform cannot change .meta ({}): meta is what the source said about the message (its properties, offsets), not the copy's; set .json, .body, .attrs, .group or .key",
        changed_keys(&old, &new).join(", ")
    ))
}

/// Whether `after` is `before` as jq gives it back unchanged (a number may come back in
/// another form: `1.0` as `1`).
fn same_after_jq(before: &Value, after: &Value) -> bool {
    jaq_json::Val::deserialize(before.clone())
        .ok()
        .and_then(|v| serde_json::from_str::<Value>(&v.to_string()).ok())
        .is_some_and(|v| &v == after)
}

/// The names of `meta`'s entries that differ between `a` and `b` (`meta.NAME`).
fn changed_keys(a: &Value, b: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let (a, b) = (
        a.as_object().unwrap_or(&empty),
        b.as_object().unwrap_or(&empty),
    );
    let mut names: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| format!("meta.{}", crate::text::escape_controls(k)))
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        names.push("meta".into());
    }
    names
}

/// `m`'s record mapped by `q`, as a message.
fn mapped(q: &Query, m: &Message) -> std::result::Result<Message, String> {
    let mut input = match serde_json::to_value(m.to_record()) {
        Ok(Value::Object(o)) => o,
        _ => return Err("the record cannot be built".into()),
    };
    let json = serde_json::from_slice::<Value>(&m.body).unwrap_or(Value::Null);
    let attrs = attrs_map(m);
    // `.meta` is there even when empty, so that a transform that sets an entry of it is
    // refused as a change of `.meta` rather than failing on a null.
    input
        .entry("meta")
        .or_insert_with(|| Value::Object(Default::default()));
    input.insert("json".into(), json.clone());
    input.insert("attrs".into(), attrs.clone());
    let input = jaq_json::Val::deserialize(Value::Object(input)).map_err(|e| e.to_string())?;
    let outputs = eval::run(&q.filter, input, &q.limits, |out| {
        let first = out.next();
        let more = first.is_some() && out.next().is_some();
        (first, more)
    });
    let first = match outputs {
        Err(eval::Stop::Budget) => {
            return Err(format!(
                "--transform ran past its budget of {} (DLQCTL_JQ_BUDGET_MS raises it)",
                crate::human::fmt_duration(q.limits.budget())
            ));
        }
        Err(eval::Stop::Interrupted) => return Err("interrupted (Ctrl-C)".into()),
        Ok((_, true)) => return Err("--transform gave more than one record".into()),
        Ok((None, _)) => return Err("--transform gave no record (empty)".into()),
        Ok((Some(Err(e)), _)) => {
            return Err(format!(
                "--transform failed: {}",
                crate::text::escape_controls(&e)
            ));
        }
        Ok((Some(Ok(v)), _)) => v,
    };
    let Ok(Value::Object(mut o)) = serde_json::from_str::<Value>(&first.to_string()) else {
        return Err("--transform must give an object (the record)".into());
    };
    if o.get("id") != Some(&Value::String(m.id.clone())) {
        return Err(format!(
            "--transform cannot change the stable id ({}): the copy would be a different message",
            crate::text::escape_controls(&m.id)
        ));
    }
    same_meta(m, o.remove("meta"))?;
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
    copy.meta = m.meta.clone();
    if let Some(Value::Object(new)) = new_attrs
        && Value::Object(new.clone()) != attrs
    {
        // The attribute that carries the stable id stays, whatever a transform does to .attrs.
        copy.attributes
            .retain(|a| new.contains_key(&a.name) || m.carries_id(a));
        for (name, v) in new {
            // An attribute the transform left as it was shown keeps its value and type as
            // they were (an AMQP i32, a boolean, bytes, an x-death table): `.attrs` shows
            // them as text, and text is not what they are.
            if attrs.get(&name) == Some(&v) {
                continue;
            }
            let old = m.attribute(&name);
            let value = typed(old, v);
            match copy.attributes.iter_mut().find(|a| a.name == name) {
                Some(a) => a.value = value,
                None => copy.attributes.push(Attribute { name, value }),
            }
        }
    }
    Ok(copy)
}

/// The attribute value a transform gave as `v` in `.attrs`, where the attribute was `old`
/// (None: a new one). A string in the form `.attrs` shows the old value's type in (a number
/// for a `Number…` type, `true`/`false` for `String.bool`, JSON for a JSON type, `0x…` hex for
/// binary) keeps that type; otherwise the JSON value says the type: a string is `String`, a
/// number `Number`, a boolean `String.bool`, an object or array `Json` (or the old JSON type),
/// null a null value (docs/triage.md, "Transforms").
fn typed(old: Option<&AttrValue>, v: Value) -> AttrValue {
    let kept = |data_type: &std::borrow::Cow<'static, str>, value: String| AttrValue::Text {
        data_type: data_type.clone(),
        value,
    };
    match (old, v) {
        (_, Value::Null) => AttrValue::Null,
        (Some(AttrValue::Binary { data_type, .. }), Value::String(s)) => match unhex(&s) {
            Some(bytes) => AttrValue::Binary {
                data_type: data_type.clone(),
                value: bytes,
            },
            None => AttrValue::text(s),
        },
        (Some(AttrValue::Text { data_type, .. }), Value::String(s)) if text_fits(data_type, &s) => {
            kept(data_type, s)
        }
        (_, Value::String(s)) => AttrValue::text(s),
        (Some(AttrValue::Text { data_type, .. }), Value::Number(n))
            if is_number_type(data_type) && text_fits(data_type, &n.to_string()) =>
        {
            kept(data_type, n.to_string())
        }
        (_, Value::Number(n)) => AttrValue::Text {
            data_type: "Number".into(),
            value: n.to_string(),
        },
        (_, Value::Bool(b)) => AttrValue::Text {
            data_type: "String.bool".into(),
            value: b.to_string(),
        },
        (Some(AttrValue::Text { data_type, .. }), json) if is_json_type(data_type) => {
            kept(data_type, json.to_string())
        }
        (_, json) => AttrValue::Text {
            data_type: "Json".into(),
            value: json.to_string(),
        },
    }
}

fn is_number_type(data_type: &str) -> bool {
    data_type == "Number" || data_type.starts_with("Number.")
}

/// `Json` (PostgreSQL headers), `String.json` (SQS), `String.amqp-json` (RabbitMQ tables and
/// arrays).
fn is_json_type(data_type: &str) -> bool {
    data_type == "Json" || data_type.to_ascii_lowercase().ends_with("json")
}

/// Whether `s` is a value of `data_type` as `.attrs` shows one.
fn text_fits(data_type: &str, s: &str) -> bool {
    let t = s.trim();
    if is_json_type(data_type) {
        serde_json::from_str::<Value>(s).is_ok()
    } else if data_type == "String.bool" {
        t == "true" || t == "false"
    } else if data_type == "Number.decimal" {
        t.split_once(':')
            .is_some_and(|(a, b)| a.parse::<u8>().is_ok() && b.parse::<i64>().is_ok())
    } else if data_type.starts_with("Number.f") || data_type == "Number" {
        t.parse::<f64>().is_ok_and(f64::is_finite)
    } else if is_number_type(data_type) {
        t.parse::<i128>().is_ok()
    } else {
        true
    }
}

/// The bytes of `0x…` hex, as `.attrs` shows a binary value.
fn unhex(s: &str) -> Option<Vec<u8>> {
    let h = s.strip_prefix("0x")?;
    if h.len() % 2 != 0 {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ErrorInfo;

    fn msg() -> Message {
        Message {
            id: "ord-1".into(),
            native_id: "1".into(),
            body: br#"{"order": 7, "amount_cents": 250000, "currency": "EUR"}"#.to_vec(),
            attributes: vec![
                Attribute {
                    name: "tenant".into(),
                    value: AttrValue::text("acme"),
                },
                Attribute {
                    name: "dlqctl-redrive-count".into(),
                    value: AttrValue::text("4"),
                },
            ],
            error: Some(ErrorInfo {
                class: Some("PaymentDeclined".into()),
                message: Some("card for cus_N3kd9aQ declined".into()),
                trace: None,
            }),
            ..Message::default()
        }
    }

    fn apply(code: &str, rule: Option<&IdSource>) -> std::result::Result<Message, String> {
        Transform::compile(code).unwrap().apply(&msg(), rule)
    }

    #[test]
    fn a_transform_edits_the_body_and_attributes_and_keeps_the_id() {
        let m = msg();
        let out = apply(
            r#".json.currency = "USD" | .attrs.tenant = "zeta" | .attrs.fixed = "1""#,
            None,
        )
        .unwrap();
        assert_eq!(out.id, m.id);
        let body: Value = serde_json::from_slice(&out.body).unwrap();
        assert_eq!(body["currency"], "USD");
        assert_eq!(body["amount_cents"], 250000);
        assert_eq!(out.attribute("tenant").unwrap().display(), "zeta");
        assert_eq!(out.attribute("fixed").unwrap().display(), "1");
        // The record's own fields work too, and an unchanged transform is the message.
        assert_eq!(apply(".", None).unwrap(), m);
        assert_eq!(
            apply(r#".group = "g2""#, None).unwrap().group.as_deref(),
            Some("g2")
        );
        // The stable id cannot change; nothing, or two records, is no copy.
        for (code, why) in [
            (r#".id = "other""#, "cannot change the stable id"),
            ("empty", "no record"),
            (". , .", "more than one"),
            ("1", "must give an object"),
            (".body = 3", "not valid"),
        ] {
            let e = apply(code, None).unwrap_err();
            assert!(e.contains(why), "{code}: {e}");
        }
        let d = diff(&m, &out);
        assert!(
            d.contains("-    \"currency\": \"EUR\"") && d.contains("+    \"currency\": \"USD\""),
            "{d}"
        );
    }

    /// Issue 24 item 6: the id as the queue's rule reads it, and dlqctl's own attributes, are
    /// not the transform's to change.
    #[test]
    fn the_rule_id_and_dlqctl_attributes_stay() {
        let order = IdSource::Json("/order".into());
        let tenant = IdSource::Attribute("tenant".into());
        for (code, rule, why) in [
            (".json.order = 999", Some(&order), "json:/order"),
            ("del(.json.order)", Some(&order), "the copy would have none"),
            (
                r#".attrs.tenant = "zeta""#,
                Some(&tenant),
                "attribute:tenant",
            ),
            (
                r#".attrs["dlqctl-redrive-count"] = "0""#,
                None,
                "cannot change dlqctl-redrive-count",
            ),
            (
                r#"del(.attrs["dlqctl-redrive-count"])"#,
                None,
                "dlqctl-redrive-count",
            ),
            (".attrs = {}", None, "dlqctl-redrive-count"),
            (".attributes = []", None, "dlqctl-redrive-count"),
            (
                r#".attrs["dlqctl-stable-id"] = "x""#,
                None,
                "dlqctl-stable-id",
            ),
        ] {
            let e = apply(code, rule).unwrap_err();
            assert!(e.contains(why), "{code}: {e}");
        }
        // What leaves them alone goes through, under any rule.
        for rule in [None, Some(&order), Some(&tenant), Some(&IdSource::Native)] {
            apply(".json.currency = \"USD\" | .attrs.fixed = \"1\"", rule).unwrap();
        }
        // An edit (a replaced record) is held to the same.
        let mut edited = msg();
        edited.body = br#"{"order": 8}"#.to_vec();
        let e = Transform::Replace(Box::new(move |_: &Message| Ok(edited.clone())))
            .apply(&msg(), Some(&order))
            .unwrap_err();
        assert!(e.contains("the edit cannot change the id"), "{e}");
    }

    /// Operator report (RabbitMQ, 2026-12-06): `.meta.properties.message_id = "HIJACK"` gave
    /// two copies the same id a consumer reads, and `.meta.properties.expiration = "1"` copies
    /// that expired at once. `.meta` is the source's facts: changing it is refused, as a
    /// change of `.id` is; a transform that leaves it alone keeps it exactly.
    #[test]
    fn a_transform_cannot_change_meta() {
        let mut m = msg();
        m.meta.insert(
            "properties",
            serde_json::json!({"message_id": "ord-1", "priority": 3, "content_type": "application/json"}),
        );
        m.meta.insert("ratio", serde_json::json!(1.0));
        for (code, why) in [
            (
                r#".meta.properties.message_id = "HIJACK""#,
                "cannot change .meta (meta.properties)",
            ),
            (r#".meta.properties.expiration = "1""#, "meta.properties"),
            ("del(.meta)", "meta.properties, meta.ratio"),
            (r#".meta.new = 1"#, "meta.new"),
        ] {
            let e = Transform::compile(code)
                .unwrap()
                .apply(&m, None)
                .unwrap_err();
            assert!(e.contains(why), "{code}: {e}");
        }
        let out = Transform::compile(r#".json.currency = "USD""#)
            .unwrap()
            .apply(&m, None)
            .unwrap();
        assert_eq!(out.meta, m.meta, "left alone, meta is kept as it was");
        // A message without meta: adding one is a change too.
        let e = apply(r#".meta.properties = {"message_id": "HIJACK"}"#, None).unwrap_err();
        assert!(e.contains("cannot change .meta"), "{e}");
    }

    /// A typed attribute of every kind a backend reads (AMQP headers, SQS Number, PostgreSQL
    /// JSON, a Kafka null and a repeated name).
    fn typed_msg() -> Message {
        let attr = |name: &str, value: AttrValue| Attribute {
            name: name.into(),
            value,
        };
        let t = |data_type: &'static str, value: &str| AttrValue::Text {
            data_type: data_type.into(),
            value: value.into(),
        };
        let mut m = msg();
        m.attributes.extend([
            attr("i", t("Number.i32", "5")),
            attr("n", t("Number", "3.5")),
            attr("b", t("String.bool", "true")),
            attr("s", t("String.short", "abc")),
            attr(
                "bin",
                AttrValue::Binary {
                    data_type: "Binary".into(),
                    value: vec![0xff, 0x00],
                },
            ),
            attr(
                "x-death",
                t(
                    "String.amqp-json",
                    r#"[{"count":1,"queue":"orders","time":{"$timestamp":1733356800}}]"#,
                ),
            ),
            attr("pg", t("Json", r#"{"a":[1,2]}"#)),
            attr("gone", AttrValue::Null),
            attr("rep", AttrValue::text("one")),
            attr("rep", AttrValue::text("two")),
        ]);
        m
    }

    /// Operator report (RabbitMQ, 2026-12-06): a transform that adds one attribute turned
    /// every other header into a string (i32, bool, bytes, and `x-death`, whose history
    /// RabbitMQ then reset). What the transform leaves alone is sent exactly as it was, value
    /// and type; what it changes or adds gets the type its value says.
    #[test]
    fn a_transform_keeps_the_attributes_it_does_not_change_as_they_were() {
        let m = typed_msg();
        let t = Transform::compile(r#".attrs.newh = "x""#).unwrap();
        let out = t.apply(&m, None).unwrap();
        let (head, added) = out.attributes.split_at(m.attributes.len());
        assert_eq!(head, m.attributes.as_slice(), "unchanged, type for type");
        assert_eq!(
            added,
            [Attribute {
                name: "newh".into(),
                value: AttrValue::text("x"),
            }]
        );
        assert_eq!(out.body, m.body);

        // Changed in the form `.attrs` shows them: the type stays.
        let t = Transform::compile(
            r#".attrs.i = "6" | .attrs.b = "false" | .attrs.bin = "0x0102"
               | .attrs["x-death"] |= (fromjson | .[0].count = 2 | tojson)
               | .attrs.pg = {"a": [3]} | .attrs.n = 4"#,
        )
        .unwrap();
        let out = t.apply(&m, None).unwrap();
        let v = |name: &str| out.attribute(name).unwrap().clone();
        let text = |data_type: &'static str, value: &str| AttrValue::Text {
            data_type: data_type.into(),
            value: value.into(),
        };
        assert_eq!(v("i"), text("Number.i32", "6"));
        assert_eq!(v("b"), text("String.bool", "false"));
        assert_eq!(
            v("bin"),
            AttrValue::Binary {
                data_type: "Binary".into(),
                value: vec![1, 2],
            }
        );
        assert_eq!(
            v("x-death"),
            text(
                "String.amqp-json",
                r#"[{"count":2,"queue":"orders","time":{"$timestamp":1733356800}}]"#
            )
        );
        assert_eq!(v("pg"), text("Json", r#"{"a":[3]}"#));
        assert_eq!(v("n"), text("Number", "4"));
        assert_eq!(v("s"), text("String.short", "abc"), "untouched");

        // Changed to another kind, or new: the JSON value says the type.
        let t = Transform::compile(
            r#".attrs.i = "many" | .attrs.bin = "plain" | .attrs.k = 7 | .attrs.f = true
               | .attrs.o = {"x": 1} | .attrs.z = null"#,
        )
        .unwrap();
        let out = t.apply(&m, None).unwrap();
        let v = |name: &str| out.attribute(name).unwrap().clone();
        assert_eq!(v("i"), AttrValue::text("many"));
        assert_eq!(v("bin"), AttrValue::text("plain"));
        assert_eq!(v("k"), text("Number", "7"));
        assert_eq!(v("f"), text("String.bool", "true"));
        assert_eq!(v("o"), text("Json", r#"{"x":1}"#));
        assert_eq!(v("z"), AttrValue::Null);
        let reps: Vec<_> = out.attributes.iter().filter(|a| a.name == "rep").collect();
        assert_eq!(
            reps.len(),
            2,
            "a repeated name left alone keeps every value"
        );

        // Removed by name: gone, the others stay as they were.
        let out = Transform::compile(r#"del(.attrs.i)"#)
            .unwrap()
            .apply(&m, None)
            .unwrap();
        let mut want = m.attributes.clone();
        want.retain(|a| a.name != "i");
        assert_eq!(out.attributes, want);
    }

    #[test]
    fn a_transform_over_its_budget_fails_its_message() {
        let mut t = Transform::compile(". as $r | last(range(1e18)) | $r").unwrap();
        if let Transform::Jq(q) = &mut t {
            q.limits.budget = Some(std::time::Duration::from_millis(50));
        }
        let e = t.apply(&msg(), None).unwrap_err();
        assert!(e.contains("budget"), "{e}");
    }
}
