//! Attributes ⇄ a `jsonb` headers object, losslessly (`docs/postgres.md#headers`):
//!
//! * `"name": "text"` — a String attribute;
//! * `"name": null` — a null header (Kafka);
//! * `"name": {"base64": "…", "type": "Binary"}` — binary;
//! * `"name": {"value": "12", "type": "Number"}` — a typed SQS attribute;
//! * `"name": [v1, v2]` — a repeated name (Kafka), each element in one of the forms above;
//! * any other JSON value — kept as its JSON text with type `Json`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Map, Value};

use crate::message::{AttrValue, Attribute};

pub fn from_json(v: &Value) -> Vec<Attribute> {
    let mut out = Vec::new();
    match v {
        Value::Object(map) => {
            for (name, value) in map {
                match value {
                    Value::Array(items) => {
                        for item in items {
                            out.push(Attribute {
                                name: name.clone(),
                                value: one(item),
                            });
                        }
                    }
                    other => out.push(Attribute {
                        name: name.clone(),
                        value: one(other),
                    }),
                }
            }
        }
        Value::Null => {}
        other => out.push(Attribute {
            name: "headers".into(),
            value: AttrValue::Text {
                data_type: "Json".into(),
                value: other.to_string(),
            },
        }),
    }
    out
}

fn one(v: &Value) -> AttrValue {
    match v {
        Value::Null => AttrValue::Null,
        Value::String(s) => AttrValue::text(s.clone()),
        Value::Object(o) => {
            let ty = o.get("type").and_then(Value::as_str);
            if let Some(b) = o.get("base64").and_then(Value::as_str)
                && let Ok(bytes) = B64.decode(b)
            {
                return AttrValue::Binary {
                    data_type: ty.unwrap_or("Binary").to_string().into(),
                    value: bytes,
                };
            }
            if let (Some(ty), Some(Value::String(val))) = (ty, o.get("value")) {
                return AttrValue::Text {
                    data_type: ty.to_string().into(),
                    value: val.clone(),
                };
            }
            json_text(v)
        }
        Value::Number(n) => AttrValue::Text {
            data_type: "Number".into(),
            value: n.to_string(),
        },
        other => json_text(other),
    }
}

fn json_text(v: &Value) -> AttrValue {
    AttrValue::Text {
        data_type: "Json".into(),
        value: v.to_string(),
    }
}

fn to_value(a: &AttrValue) -> Value {
    match a {
        AttrValue::Null => Value::Null,
        AttrValue::Text { data_type, value } if data_type == "String" => {
            Value::String(value.clone())
        }
        AttrValue::Text { data_type, value }
            if data_type == "Number"
                && serde_json::from_str::<serde_json::Number>(value)
                    .is_ok_and(|n| n.to_string() == *value) =>
        {
            serde_json::from_str(value).unwrap_or(Value::Null)
        }
        AttrValue::Text { data_type, value } if data_type == "Json" => {
            serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.clone()))
        }
        AttrValue::Text { data_type, value } => {
            let mut o = Map::new();
            o.insert("type".into(), Value::String(data_type.to_string()));
            o.insert("value".into(), Value::String(value.clone()));
            Value::Object(o)
        }
        AttrValue::Binary { data_type, value } => {
            let mut o = Map::new();
            o.insert("type".into(), Value::String(data_type.to_string()));
            o.insert("base64".into(), Value::String(B64.encode(value)));
            Value::Object(o)
        }
    }
}

pub fn to_json(attrs: &[Attribute]) -> Value {
    let mut map: Map<String, Value> = Map::new();
    for a in attrs {
        let v = to_value(&a.value);
        match map.get_mut(&a.name) {
            None => {
                map.insert(a.name.clone(), v);
            }
            Some(Value::Array(items)) if attrs.iter().filter(|x| x.name == a.name).count() > 1 => {
                items.push(v)
            }
            Some(existing) => {
                let first = existing.take();
                *existing = Value::Array(vec![first, v]);
            }
        }
    }
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let attrs = vec![
            Attribute {
                name: "trace".into(),
                value: AttrValue::text("abc"),
            },
            Attribute {
                name: "n".into(),
                value: AttrValue::Text {
                    data_type: "Number.int".into(),
                    value: "7".into(),
                },
            },
            Attribute {
                name: "bin".into(),
                value: AttrValue::Binary {
                    data_type: "Binary".into(),
                    value: vec![0, 1, 255],
                },
            },
            Attribute {
                name: "rep".into(),
                value: AttrValue::text("1"),
            },
            Attribute {
                name: "rep".into(),
                value: AttrValue::Null,
            },
            Attribute {
                name: "rep".into(),
                value: AttrValue::text("3"),
            },
            Attribute {
                name: "nul".into(),
                value: AttrValue::Null,
            },
        ];
        let j = to_json(&attrs);
        let mut back = from_json(&j);
        let mut want = attrs.clone();
        back.sort_by(|a, b| a.name.cmp(&b.name));
        want.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(back, want);
    }

    #[test]
    fn plain_objects_read_naturally() {
        let a = from_json(&serde_json::json!({"x-tenant": "acme", "retries": 3, "ctx": {"a": 1}}));
        assert_eq!(a[0].value, AttrValue::text("acme"));
        assert_eq!(
            a[1].value,
            AttrValue::Text {
                data_type: "Number".into(),
                value: "3".into()
            }
        );
        assert_eq!(
            a[2].value,
            AttrValue::Text {
                data_type: "Json".into(),
                value: "{\"a\":1}".into()
            }
        );
        // And back: a Json attribute returns to the same JSON.
        assert_eq!(to_json(&a)["ctx"], serde_json::json!({"a": 1}));
        assert_eq!(to_json(&a)["retries"], serde_json::json!(3));
    }
}
