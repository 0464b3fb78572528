//! `inspect`'s report, as each backend fills it in and the output layer renders it.

use serde::Serialize;

/// `inspect`'s report: named facts and tables, rendered by the output layer.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Inspection {
    pub queue: String,
    pub backend: &'static str,
    /// In JSON an object, name → value, in this order (`jq .facts.messages`).
    #[serde(serialize_with = "facts_as_object")]
    pub facts: Vec<Fact>,
    pub tables: Vec<Table>,
    pub notes: Vec<String>,
    /// Dead-letter arrivals over time (`inspect` adds them from a census of the messages).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<serde_json::Value>,
}

fn facts_as_object<S: serde::Serializer>(
    facts: &[Fact],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.collect_map(facts.iter().map(|f| (&f.name, &f.value)))
}

#[derive(Clone, Debug, Serialize)]
pub struct Fact {
    pub name: String,
    pub value: serde_json::Value,
    /// How a person reads it (`3 days`, `12.4 MiB`).
    #[serde(skip)]
    pub display: String,
}

impl Fact {
    pub fn new(
        name: &str,
        value: impl Into<serde_json::Value>,
        display: impl Into<String>,
    ) -> Fact {
        Fact {
            name: name.into(),
            value: value.into(),
            display: display.into(),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<serde_json::Value>>,
}
