//! `classify --by KEY[,KEY…]`: failure groups, the way a person thinks of them.
//!
//! Each message gets one value per KEY; messages with the same values form a group, counted
//! with its first and last dead-letter time and a sample. The number of groups is capped
//! ([`MAX_GROUPS`]) so that a key with a value per message (`attr:order_id`) keeps memory
//! bounded: the messages of any further group are counted in one `(other groups)` row.

use std::collections::HashMap;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::classify::{Class, Kind, fingerprint};
use crate::message::Message;

/// Distinct groups kept; the messages of further ones are counted together.
pub const MAX_GROUPS: usize = 10_000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupKey {
    /// transient, permanent, unclassified.
    Class,
    Rule,
    Fingerprint,
    /// The queue the message failed on, as the backend recorded it.
    Source,
    /// Kafka record key, else the ordering group (SQS MessageGroupId, a job system's entity).
    Key,
    Attr(String),
    Hour,
    Day,
}

impl GroupKey {
    pub fn name(&self) -> String {
        match self {
            GroupKey::Class => "class".into(),
            GroupKey::Rule => "rule".into(),
            GroupKey::Fingerprint => "fingerprint".into(),
            GroupKey::Source => "source".into(),
            GroupKey::Key => "key".into(),
            GroupKey::Attr(n) => format!("attr:{n}"),
            GroupKey::Hour => "hour".into(),
            GroupKey::Day => "day".into(),
        }
    }
}

impl FromStr for GroupKey {
    type Err = String;
    fn from_str(s: &str) -> Result<GroupKey, String> {
        Ok(match s.trim() {
            "class" => GroupKey::Class,
            "rule" => GroupKey::Rule,
            "fingerprint" => GroupKey::Fingerprint,
            "source" => GroupKey::Source,
            "key" => GroupKey::Key,
            "hour" => GroupKey::Hour,
            "day" => GroupKey::Day,
            other => match other.strip_prefix("attr:") {
                Some(name) if !name.is_empty() => GroupKey::Attr(name.to_string()),
                _ => {
                    return Err(format!(
                        "`{}` is not a grouping key: use class, rule, fingerprint, source, key, attr:NAME, hour or day",
                        crate::text::escape_controls(other)
                    ));
                }
            },
        })
    }
}

/// When a message was dead-lettered, for first/last seen and `hour`/`day`: where the backend
/// does not know it, its first enqueue.
pub fn seen(m: &Message) -> Option<DateTime<Utc>> {
    m.dead_lettered_at.or(m.enqueued_at)
}

#[derive(Serialize)]
pub struct GroupRow {
    /// KEY → value, in the order of --by (null where a message has no such value).
    pub key: Map<String, Value>,
    /// With `fingerprint`: the normalised error the fingerprint stands for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// The class of the group's first message.
    pub kind: Kind,
    pub rule: String,
    pub count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processed: Option<u64>,
    pub first_seen: Option<DateTime<Utc>>,
    pub last_seen: Option<DateTime<Utc>>,
    pub sample_id: String,
    pub sample_error: Option<String>,
}

/// The groups being counted.
pub struct Groups {
    by: Vec<GroupKey>,
    index: HashMap<Vec<Value>, usize>,
    rows: Vec<GroupRow>,
    other: Option<GroupRow>,
    dedupe: bool,
}

/// Where a message was counted, for marking it processed later.
#[derive(Clone, Copy)]
pub struct Slot(Option<usize>);

impl Groups {
    pub fn new(by: Vec<GroupKey>, dedupe: bool) -> Groups {
        Groups {
            by,
            index: HashMap::new(),
            rows: Vec::new(),
            other: None,
            dedupe,
        }
    }

    pub fn by(&self) -> &[GroupKey] {
        &self.by
    }

    /// Count `m` (of class `class`) in its group.
    pub fn add(&mut self, m: &Message, class: &Class) -> Slot {
        let fp = self
            .by
            .contains(&GroupKey::Fingerprint)
            .then(|| fingerprint::fingerprint(m));
        let values: Vec<Value> = self
            .by
            .iter()
            .map(|k| value(k, m, class, fp.as_ref()))
            .collect();
        let slot = match self.index.get(&values) {
            Some(&i) => Some(i),
            None if self.rows.len() < MAX_GROUPS => {
                let key = self
                    .by
                    .iter()
                    .map(GroupKey::name)
                    .zip(values.iter().cloned())
                    .collect();
                self.rows
                    .push(new_row(key, fp.map(|f| f.template), m, class, self.dedupe));
                self.index.insert(values, self.rows.len() - 1);
                Some(self.rows.len() - 1)
            }
            None => None,
        };
        let row = match slot {
            Some(i) => &mut self.rows[i],
            None => self.other.get_or_insert_with(|| {
                let key = self
                    .by
                    .iter()
                    .map(|k| (k.name(), Value::String("(other groups)".into())))
                    .collect();
                new_row(key, None, m, class, self.dedupe)
            }),
        };
        row.count += 1;
        if let Some(t) = seen(m) {
            row.first_seen = Some(row.first_seen.map_or(t, |f| f.min(t)));
            row.last_seen = Some(row.last_seen.map_or(t, |l| l.max(t)));
        }
        Slot(slot)
    }

    /// One more message of `slot` is already recorded in the dedupe table.
    pub fn mark_processed(&mut self, slot: Slot) {
        let row = match slot.0 {
            Some(i) => self.rows.get_mut(i),
            None => self.other.as_mut(),
        };
        if let Some(r) = row {
            *r.processed.get_or_insert(0) += 1;
        }
    }

    /// The groups, largest first (ties by first seen), `(other groups)` last.
    pub fn into_rows(self) -> Vec<GroupRow> {
        let mut rows = self.rows;
        rows.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then(a.first_seen.cmp(&b.first_seen))
                .then(a.sample_id.cmp(&b.sample_id))
        });
        rows.extend(self.other);
        rows
    }
}

fn new_row(
    key: Map<String, Value>,
    template: Option<String>,
    m: &Message,
    class: &Class,
    dedupe: bool,
) -> GroupRow {
    GroupRow {
        key,
        template,
        kind: class.kind,
        rule: class.rule.clone(),
        count: 0,
        processed: dedupe.then_some(0),
        first_seen: None,
        last_seen: None,
        sample_id: m.id.clone(),
        sample_error: m.error_text().map(|e| e.chars().take(200).collect()),
    }
}

fn value(k: &GroupKey, m: &Message, class: &Class, fp: Option<&fingerprint::Fingerprint>) -> Value {
    let text = |s: Option<String>| s.map_or(Value::Null, Value::String);
    match k {
        GroupKey::Class => Value::String(class.kind.to_string()),
        GroupKey::Rule => Value::String(class.rule.clone()),
        GroupKey::Fingerprint => text(fp.map(|f| f.id.clone())),
        GroupKey::Source => text(m.source.clone()),
        GroupKey::Key => text(
            m.key
                .as_deref()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .or_else(|| m.group.clone()),
        ),
        GroupKey::Attr(name) => text(m.attribute(name).map(|v| v.display())),
        GroupKey::Hour => text(seen(m).map(|t| t.format("%Y-%m-%dT%H:00Z").to_string())),
        GroupKey::Day => text(seen(m).map(|t| t.format("%Y-%m-%d").to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{AttrValue, Attribute, ErrorInfo};

    fn msg(id: &str, tenant: &str, error: &str, hour: u32) -> Message {
        Message {
            id: id.into(),
            attributes: vec![Attribute {
                name: "tenant".into(),
                value: AttrValue::text(tenant),
            }],
            dead_lettered_at: Some(
                "2026-12-04T00:00:00Z".parse::<DateTime<Utc>>().unwrap()
                    + chrono::Duration::minutes(i64::from(hour) * 60 + 5),
            ),
            error: Some(ErrorInfo {
                message: Some(error.into()),
                ..ErrorInfo::default()
            }),
            ..Message::default()
        }
    }

    #[test]
    fn messages_group_by_every_key_given() {
        let class = Class {
            kind: Kind::Permanent,
            rule: "validation".into(),
        };
        let mut g = Groups::new(
            vec![
                GroupKey::Fingerprint,
                GroupKey::Attr("tenant".into()),
                GroupKey::Hour,
            ],
            false,
        );
        for m in [
            msg("a", "acme", "order 1 invalid", 3),
            msg("b", "acme", "order 22 invalid", 3),
            msg("c", "zeta", "order 3 invalid", 3),
            msg("d", "acme", "order 4 invalid", 4),
            msg("e", "acme", "timeout", 3),
        ] {
            g.add(&m, &class);
        }
        let rows = g.into_rows();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0].count, 2);
        assert_eq!(rows[0].sample_id, "a");
        assert_eq!(
            rows[0].template.as_deref(),
            Some("order <num> invalid"),
            "{:?}",
            rows[0].key
        );
        assert_eq!(rows[0].key["attr:tenant"], "acme");
        assert_eq!(rows[0].key["hour"], "2026-12-04T03:00Z");
        assert_eq!(
            rows[0].key["fingerprint"],
            fingerprint::id_of("order <num> invalid").as_str()
        );
        assert_eq!(
            rows[0].key.keys().collect::<Vec<_>>(),
            ["fingerprint", "attr:tenant", "hour"]
        );
    }

    #[test]
    fn groups_beyond_the_cap_are_counted_together() {
        let class = Class {
            kind: Kind::Unclassified,
            rule: "unrecognised-error".into(),
        };
        let mut g = Groups::new(vec![GroupKey::Attr("tenant".into())], true);
        for i in 0..MAX_GROUPS + 5 {
            let s = g.add(&msg(&format!("m{i}"), &format!("t{i}"), "x", 1), &class);
            if i == MAX_GROUPS + 1 {
                g.mark_processed(s);
            }
        }
        let rows = g.into_rows();
        assert_eq!(rows.len(), MAX_GROUPS + 1);
        let other = rows.last().unwrap();
        assert_eq!(other.count, 5);
        assert_eq!(other.processed, Some(1));
        assert_eq!(other.key["attr:tenant"], "(other groups)");
    }

    #[test]
    fn keys_parse_and_say_what_is_allowed() {
        assert_eq!(
            "attr:tenant".parse::<GroupKey>(),
            Ok(GroupKey::Attr("tenant".into()))
        );
        assert_eq!("day".parse::<GroupKey>(), Ok(GroupKey::Day));
        let e = "tenant".parse::<GroupKey>().unwrap_err();
        assert!(e.contains("attr:NAME"), "{e}");
        assert!("attr:".parse::<GroupKey>().is_err());
    }
}
