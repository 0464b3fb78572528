//! AMQP field values (header values) as attributes, and back, losslessly.
//!
//! A header keeps its AMQP type in the attribute's data type, in the forms every backend
//! accepts (SQS wants `String`, `Number` or `Binary`, with a custom suffix): a long string
//! that is UTF-8 is `String`, one that is not is `Binary.longstr`; integers are
//! `Number.i8` … `Number.u32`, `Number.i64` (RabbitMQ's `l`), `Number.f32`, `Number.f64`,
//! `Number.timestamp` (seconds), `Number.decimal` (`SCALE:VALUE`); booleans `String.bool`;
//! byte arrays `Binary`; void a null value. Tables and arrays (`x-death`) are
//! `String.amqp-json`: JSON in which strings, `i64`s, doubles, booleans, void, tables and
//! arrays are themselves and any other type is tagged (`{"$timestamp": 1733356800}`,
//! `{"$i32": 5}`, `{"$bytes": "base64"}`), so that `jq` reads `x-death` as it is and a replay
//! writes back the same types.
//!
//! Attributes from other backends map by their data type: `Number…` to a number (`i64`, else
//! `f64` where a double holds every digit, else a long string of the digits), `Binary…` to a
//! byte array, anything else to a long string.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use lapin::types::{
    AMQPValue, ByteArray, DecimalValue, FieldArray, FieldTable, LongString, ShortString,
};
use serde_json::{Map, Value, json};

use crate::message::AttrValue;

pub const JSON_TYPE: &str = "String.amqp-json";

/// A header value as an attribute value.
pub fn to_attr(v: &AMQPValue) -> AttrValue {
    let num = |t: &'static str, s: String| AttrValue::Text {
        data_type: t.into(),
        value: s,
    };
    match v {
        AMQPValue::LongString(s) => match std::str::from_utf8(s.as_bytes()) {
            Ok(t) => AttrValue::text(t),
            Err(_) => AttrValue::Binary {
                data_type: "Binary.longstr".into(),
                value: s.as_bytes().to_vec(),
            },
        },
        AMQPValue::ShortString(s) => AttrValue::Text {
            data_type: "String.short".into(),
            value: s.as_str().to_string(),
        },
        AMQPValue::Boolean(b) => AttrValue::Text {
            data_type: "String.bool".into(),
            value: b.to_string(),
        },
        AMQPValue::ShortShortInt(n) => num("Number.i8", n.to_string()),
        AMQPValue::ShortShortUInt(n) => num("Number.u8", n.to_string()),
        AMQPValue::ShortInt(n) => num("Number.i16", n.to_string()),
        AMQPValue::ShortUInt(n) => num("Number.u16", n.to_string()),
        AMQPValue::LongInt(n) => num("Number.i32", n.to_string()),
        AMQPValue::LongUInt(n) => num("Number.u32", n.to_string()),
        AMQPValue::LongLongInt(n) => num("Number.i64", n.to_string()),
        AMQPValue::Float(n) => num("Number.f32", n.to_string()),
        AMQPValue::Double(n) => num("Number.f64", n.to_string()),
        AMQPValue::Timestamp(n) => num("Number.timestamp", n.to_string()),
        AMQPValue::DecimalValue(d) => num("Number.decimal", format!("{}:{}", d.scale, d.value)),
        AMQPValue::ByteArray(b) => AttrValue::Binary {
            data_type: "Binary".into(),
            value: b.as_slice().to_vec(),
        },
        AMQPValue::FieldArray(_) | AMQPValue::FieldTable(_) => AttrValue::Text {
            data_type: JSON_TYPE.into(),
            value: to_json(v).to_string(),
        },
        AMQPValue::Void => AttrValue::Null,
    }
}

/// An attribute value as a header value (see the module doc). `None`: the data type says a
/// number or a JSON table that the text is not.
pub fn from_attr(a: &AttrValue) -> Option<AMQPValue> {
    Some(match a {
        AttrValue::Null => AMQPValue::Void,
        AttrValue::Binary { data_type, value } => {
            if data_type == "Binary.longstr" {
                AMQPValue::LongString(LongString::from(value.clone()))
            } else {
                AMQPValue::ByteArray(ByteArray::from(value.clone()))
            }
        }
        AttrValue::Text { data_type, value } => {
            let v = value.trim();
            match data_type.as_ref() {
                "String.short" => AMQPValue::ShortString(ShortString::try_new(value.clone()).ok()?),
                "String.bool" => AMQPValue::Boolean(v.parse().ok()?),
                "Number.i8" => AMQPValue::ShortShortInt(v.parse().ok()?),
                "Number.u8" => AMQPValue::ShortShortUInt(v.parse().ok()?),
                "Number.i16" => AMQPValue::ShortInt(v.parse().ok()?),
                "Number.u16" => AMQPValue::ShortUInt(v.parse().ok()?),
                "Number.i32" => AMQPValue::LongInt(v.parse().ok()?),
                "Number.u32" => AMQPValue::LongUInt(v.parse().ok()?),
                "Number.i64" => AMQPValue::LongLongInt(v.parse().ok()?),
                "Number.f32" => AMQPValue::Float(v.parse().ok()?),
                "Number.f64" => AMQPValue::Double(v.parse().ok()?),
                "Number.timestamp" => AMQPValue::Timestamp(v.parse().ok()?),
                "Number.decimal" => {
                    let (s, n) = v.split_once(':')?;
                    AMQPValue::DecimalValue(DecimalValue {
                        scale: s.parse().ok()?,
                        value: n.parse().ok()?,
                    })
                }
                JSON_TYPE => from_json(&serde_json::from_str(value).ok()?)?,
                t if t == "Number" || t.starts_with("Number.") => match v.parse::<i64>() {
                    Ok(n) => AMQPValue::LongLongInt(n),
                    Err(_) => match v.parse::<f64>() {
                        Ok(d) if holds_exactly(v, d) => AMQPValue::Double(d),
                        // More digits than a double holds (123456789012345678901234567890):
                        // the digits, as a long string, rather than a number that is not it.
                        Ok(_) => AMQPValue::LongString(LongString::from(value.as_bytes().to_vec())),
                        Err(_) => return None,
                    },
                },
                _ => AMQPValue::LongString(LongString::from(value.as_bytes().to_vec())),
            }
        }
    })
}

/// Whether the double `d` read from the decimal text `v` is the number `v` says, digit for
/// digit: the significant digits of `v` are those of `d`'s shortest form (`0.1` is; the 30
/// digits of 123456789012345678901234567890 are not, a double keeps 17).
fn holds_exactly(v: &str, d: f64) -> bool {
    fn digits(s: &str) -> String {
        let mantissa = s.split(['e', 'E']).next().unwrap_or_default();
        let d: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        d.trim_start_matches('0').trim_end_matches('0').to_string()
    }
    d.is_finite() && digits(v) == digits(&format!("{d:e}"))
}

/// A header value as JSON (tables and arrays as themselves; see the module doc).
pub fn to_json(v: &AMQPValue) -> Value {
    match v {
        AMQPValue::LongString(s) => match std::str::from_utf8(s.as_bytes()) {
            Ok(t) => Value::String(t.into()),
            Err(_) => json!({ "$longstr": B64.encode(s.as_bytes()) }),
        },
        AMQPValue::ShortString(s) => json!({ "$shortstr": s.as_str() }),
        AMQPValue::Boolean(b) => Value::Bool(*b),
        AMQPValue::LongLongInt(n) => json!(n),
        AMQPValue::Double(n) => json!(n),
        AMQPValue::ShortShortInt(n) => json!({ "$i8": n }),
        AMQPValue::ShortShortUInt(n) => json!({ "$u8": n }),
        AMQPValue::ShortInt(n) => json!({ "$i16": n }),
        AMQPValue::ShortUInt(n) => json!({ "$u16": n }),
        AMQPValue::LongInt(n) => json!({ "$i32": n }),
        AMQPValue::LongUInt(n) => json!({ "$u32": n }),
        AMQPValue::Float(n) => json!({ "$f32": n }),
        AMQPValue::Timestamp(n) => json!({ "$timestamp": n }),
        AMQPValue::DecimalValue(d) => json!({ "$decimal": [d.scale, d.value] }),
        AMQPValue::ByteArray(b) => json!({ "$bytes": B64.encode(b.as_slice()) }),
        AMQPValue::FieldArray(a) => Value::Array(a.as_slice().iter().map(to_json).collect()),
        AMQPValue::FieldTable(t) => Value::Object(table_json(t)),
        AMQPValue::Void => Value::Null,
    }
}

pub fn table_json(t: &FieldTable) -> Map<String, Value> {
    t.inner()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), to_json(v)))
        .collect()
}

/// The inverse of [`to_json`]; `None` for a tag that does not hold its type.
pub fn from_json(v: &Value) -> Option<AMQPValue> {
    Some(match v {
        Value::Null => AMQPValue::Void,
        Value::Bool(b) => AMQPValue::Boolean(*b),
        Value::String(s) => AMQPValue::LongString(LongString::from(s.as_bytes().to_vec())),
        Value::Number(n) => match n.as_i64() {
            Some(i) => AMQPValue::LongLongInt(i),
            None => AMQPValue::Double(n.as_f64()?),
        },
        Value::Array(a) => AMQPValue::FieldArray(FieldArray::from(
            a.iter().map(from_json).collect::<Option<Vec<_>>>()?,
        )),
        Value::Object(o) => {
            if o.len() == 1
                && let Some((k, x)) = o.iter().next()
                && let Some(tag) = k.strip_prefix('$')
            {
                return tagged(tag, x);
            }
            let mut t = FieldTable::default();
            for (k, x) in o {
                t.insert(ShortString::try_new(k.clone()).ok()?, from_json(x)?);
            }
            AMQPValue::FieldTable(t)
        }
    })
}

fn tagged(tag: &str, x: &Value) -> Option<AMQPValue> {
    let int = || x.as_i64();
    let bytes = || B64.decode(x.as_str()?).ok();
    Some(match tag {
        "longstr" => AMQPValue::LongString(LongString::from(bytes()?)),
        "shortstr" => AMQPValue::ShortString(ShortString::try_new(x.as_str()?).ok()?),
        "i8" => AMQPValue::ShortShortInt(int()?.try_into().ok()?),
        "u8" => AMQPValue::ShortShortUInt(int()?.try_into().ok()?),
        "i16" => AMQPValue::ShortInt(int()?.try_into().ok()?),
        "u16" => AMQPValue::ShortUInt(int()?.try_into().ok()?),
        "i32" => AMQPValue::LongInt(int()?.try_into().ok()?),
        "u32" => AMQPValue::LongUInt(int()?.try_into().ok()?),
        "f32" => AMQPValue::Float(x.as_f64()? as f32),
        "timestamp" => AMQPValue::Timestamp(x.as_u64()?),
        "decimal" => AMQPValue::DecimalValue(DecimalValue {
            scale: x.get(0)?.as_u64()?.try_into().ok()?,
            value: x.get(1)?.as_u64()?.try_into().ok()?,
        }),
        "bytes" => AMQPValue::ByteArray(ByteArray::from(bytes()?)),
        _ => return None,
    })
}

/// A header's text, for the conventions (a long or short string; a number as its digits).
pub fn text(v: &AMQPValue) -> Option<String> {
    match v {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        AMQPValue::ShortString(s) => Some(s.as_str().to_string()),
        AMQPValue::ByteArray(b) => Some(String::from_utf8_lossy(b.as_slice()).into_owned()),
        AMQPValue::Void => None,
        other => match to_json(other) {
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        },
    }
}

/// An integer header (any width; a timestamp's seconds).
pub fn int(v: &AMQPValue) -> Option<i64> {
    Some(match v {
        AMQPValue::ShortShortInt(n) => (*n).into(),
        AMQPValue::ShortShortUInt(n) => (*n).into(),
        AMQPValue::ShortInt(n) => (*n).into(),
        AMQPValue::ShortUInt(n) => (*n).into(),
        AMQPValue::LongInt(n) => (*n).into(),
        AMQPValue::LongUInt(n) => (*n).into(),
        AMQPValue::LongLongInt(n) => *n,
        AMQPValue::Timestamp(n) => i64::try_from(*n).ok()?,
        AMQPValue::LongString(s) => std::str::from_utf8(s.as_bytes())
            .ok()?
            .trim()
            .parse()
            .ok()?,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_round_trips_through_an_attribute() {
        let mut death = FieldTable::default();
        death.insert("count".into(), AMQPValue::LongLongInt(3));
        death.insert("time".into(), AMQPValue::Timestamp(1_733_356_800));
        death.insert(
            "routing-keys".into(),
            AMQPValue::FieldArray(vec![AMQPValue::LongString("orders".into())].into()),
        );
        let values = [
            AMQPValue::LongString("text".into()),
            AMQPValue::LongString(LongString::from(vec![0xff, 0])),
            AMQPValue::ShortString("s".into()),
            AMQPValue::Boolean(true),
            AMQPValue::ShortShortInt(-3),
            AMQPValue::ShortShortUInt(3),
            AMQPValue::ShortInt(-300),
            AMQPValue::ShortUInt(300),
            AMQPValue::LongInt(-70_000),
            AMQPValue::LongUInt(70_000),
            AMQPValue::LongLongInt(-1 << 40),
            AMQPValue::Float(1.5),
            AMQPValue::Double(2.25),
            AMQPValue::Timestamp(1_733_356_800),
            AMQPValue::DecimalValue(DecimalValue {
                scale: 2,
                value: 1234,
            }),
            AMQPValue::ByteArray(ByteArray::from(vec![1, 2, 3])),
            AMQPValue::FieldArray(vec![AMQPValue::FieldTable(death.clone())].into()),
            AMQPValue::FieldTable(death),
            AMQPValue::Void,
        ];
        for v in values {
            let a = to_attr(&v);
            assert_eq!(from_attr(&a), Some(v.clone()), "{a:?}");
        }
    }

    #[test]
    fn x_death_reads_as_plain_json() {
        let mut t = FieldTable::default();
        t.insert("count".into(), AMQPValue::LongLongInt(1));
        t.insert("reason".into(), AMQPValue::LongString("rejected".into()));
        t.insert("time".into(), AMQPValue::Timestamp(5));
        let v = to_json(&AMQPValue::FieldArray(
            vec![AMQPValue::FieldTable(t)].into(),
        ));
        assert_eq!(
            v,
            json!([{"count": 1, "reason": "rejected", "time": {"$timestamp": 5}}])
        );
    }

    /// Operator report (2026-12-06): a Number attribute 123456789012345678901234567890
    /// arrived as the double 1.2345678901234568e29. A number that neither an i64 nor a double
    /// holds exactly goes as its digits (a long string); one that fits goes as before.
    #[test]
    fn a_number_no_amqp_type_holds_goes_as_its_digits() {
        let num = |v: &str| AttrValue::Text {
            data_type: "Number".into(),
            value: v.into(),
        };
        for (v, want) in [
            (
                "123456789012345678901234567890",
                AMQPValue::LongString("123456789012345678901234567890".into()),
            ),
            (
                "0.12345678901234567890123",
                AMQPValue::LongString("0.12345678901234567890123".into()),
            ),
            ("42", AMQPValue::LongLongInt(42)),
            ("4.5", AMQPValue::Double(4.5)),
            ("0.1", AMQPValue::Double(0.1)),
            ("1e300", AMQPValue::Double(1e300)),
            (
                "-9223372036854775809",
                AMQPValue::LongString("-9223372036854775809".into()),
            ),
        ] {
            assert_eq!(from_attr(&num(v)), Some(want), "{v}");
        }
    }

    #[test]
    fn other_backends_attributes_map_by_type() {
        assert_eq!(
            from_attr(&AttrValue::Text {
                data_type: "Number".into(),
                value: "42".into()
            }),
            Some(AMQPValue::LongLongInt(42))
        );
        assert_eq!(
            from_attr(&AttrValue::Text {
                data_type: "Number.int".into(),
                value: "4.5".into()
            }),
            Some(AMQPValue::Double(4.5))
        );
        assert_eq!(
            from_attr(&AttrValue::text("x")),
            Some(AMQPValue::LongString("x".into()))
        );
        assert_eq!(
            from_attr(&AttrValue::Text {
                data_type: "Number.i32".into(),
                value: "nope".into()
            }),
            None
        );
    }
}
