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

/// `m`'s record mapped by `q`, as a message.
fn mapped(q: &Query, m: &Message) -> std::result::Result<Message, String> {
    let mut input = match serde_json::to_value(m.to_record()) {
        Ok(Value::Object(o)) => o,
        _ => return Err("the record cannot be built".into()),
    };
    let json = serde_json::from_slice::<Value>(&m.body).unwrap_or(Value::Null);
    let attrs = attrs_map(m);
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
        // The attribute that carries the stable id stays, whatever a transform does to .attrs.
        copy.attributes
            .retain(|a| new.contains_key(&a.name) || m.carries_id(a));
        for (name, v) in new {
            let value = match v {
                Value::Null => AttrValue::Null,
                Value::String(s) => AttrValue::text(s),
                other => AttrValue::text(other.to_string()),
            };
            match copy.attributes.iter_mut().find(|a| a.name == name) {
                Some(a) => a.value = value,
                None => copy.attributes.push(Attribute { name, value }),
            }
        }
    }
    Ok(copy)
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
