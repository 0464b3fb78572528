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
    /// The helper fields that cost a classification or a fingerprint, when named.
    wants_class: bool,
    wants_fingerprint: bool,
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
        let named = |word: &str| code.contains(word);
        Ok(Query {
            source: code.to_string(),
            filter,
            wants_class: named("class") || named("rule"),
            wants_fingerprint: named("fingerprint") || named("template"),
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

    /// The value the expression sees.
    fn input(
        &self,
        m: &Message,
        now: DateTime<Utc>,
        classifier: &Classifier,
    ) -> std::result::Result<Val, String> {
        let record = record_value(m, now, classifier, self.wants_class, self.wants_fingerprint);
        Val::deserialize(record).map_err(|e| e.to_string())
    }
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
    let mut attrs = Map::new();
    for a in &m.attributes {
        attrs
            .entry(a.name.clone())
            .or_insert_with(|| match &a.value {
                crate::message::AttrValue::Null => Value::Null,
                other => Value::String(other.display()),
            });
    }
    v.insert("attrs".into(), Value::Object(attrs));
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
