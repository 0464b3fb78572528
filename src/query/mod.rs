//! `--where JQ`: a jq expression over a message's record, evaluated by jaq.
//!
//! The input is the message's JSON Lines record (docs/jsonl.md) with helper fields that make
//! the common queries short (docs/triage.md, "Queries"): `.json` (the body parsed, when it is
//! JSON), `.attrs` (attribute name → value), `.error_text`, `.age_seconds`, and, computed only
//! when the expression names them, `.class`, `.rule`, `.fingerprint` and `.template`.
//!
//! A `--where` is a test: its first output must be `true` or `false` (no output: not
//! selected). Each evaluation runs under a budget and yields to Ctrl-C ([`eval`]). The paths
//! it reads that no message has are reported at the end ([`typos`]).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use jaq_core::Compiler;
use jaq_core::load::{Arena, File, Loader};
use jaq_json::Val;

use crate::classify::Classifier;
use crate::error::{Error, Result};
use crate::interrupt::Interrupt;
use crate::message::Message;

mod eval;
mod record;
mod transform;
mod typos;

pub use eval::{DEFAULT_BUDGET, set_default_budget};
pub use transform::{Transform, diff};

use eval::Compiled;
pub use record::record_value;
use record::{FIELD_NAMES, Fields, attrs_map};

/// A compiled `--where` expression.
pub struct Query {
    source: String,
    filter: Compiled,
    /// The record's fields the expression can see (see [`Fields`]).
    fields: Fields,
    /// The time budget of one evaluation, and the Ctrl-C flag.
    limits: eval::Limits,
    /// The paths it reads from the record, and whether the messages examined had them.
    typos: Mutex<typos::Tracker>,
    /// It has been evaluated on a message.
    ran: AtomicBool,
    /// Messages it failed on (the first one is said on stderr by the filter).
    failed: AtomicU64,
    /// Whether it says what it found when dropped (a `--where`; not a transform).
    flag_reports: bool,
    /// Where it says so: the terminal's stderr (see [`Query::watch`]).
    notes: crate::output::Stderr,
}

/// What a `--where` said of one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Test {
    True,
    /// `false`, or no output at all (`empty`, `select(…)` of nothing).
    False,
    /// Its first output is not a boolean: what it was, in a few words.
    NotBoolean(String),
    /// It failed on this message (`.body.x` on a string): jq's error.
    Failed(String),
    /// It ran past its budget on this message.
    OverBudget,
    /// Ctrl-C: stopped in the middle.
    Interrupted,
}

const _: () = {
    fn shareable<T: Send + Sync>() {}
    let _ = shareable::<Query>;
};

/// At the end of the command that used it (when the filter holding it is dropped), a
/// `--where` says on stderr what the run should hear of it: every command that takes filters
/// gets this without doing anything.
impl Drop for Query {
    fn drop(&mut self) {
        if self.flag_reports {
            for l in self.report("--where") {
                self.notes.line(&l);
            }
        }
    }
}

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
        let funs = eval::funs();
        let arena = Arena::default();
        let loader = Loader::new(defs);
        let bad = |at: &str, what: String| {
            let pos = jaq_core::load::span(code, at).start;
            let e = Error::invalid_arg(
                flag,
                format!(
                    "not a valid jq expression at character {}: {what} (in `{}`)",
                    code[..pos].chars().count() + 1,
                    crate::text::escape_controls(code),
                ),
            );
            match syntax_hint(code) {
                Some(h) => e.hinted(h),
                None => e,
            }
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
            limits: eval::Limits::default(),
            typos: Mutex::new(typos::Tracker::new(code)),
            ran: AtomicBool::new(false),
            failed: AtomicU64::new(0),
            flag_reports: flag == "--where",
            // Until a command hands it the printer's stderr (`watch`): the process's, or in
            // the library's own tests nowhere, so that their output stays clean.
            notes: if cfg!(test) {
                crate::output::Stderr::to(std::io::sink())
            } else {
                crate::output::Stderr::default()
            },
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Stop an evaluation that spins when `interrupt` is set (Ctrl-C), and say what the run
    /// should hear of the expression on `notes` (the printer's stderr).
    pub fn watch(&mut self, interrupt: &Interrupt, notes: crate::output::Stderr) {
        self.limits.interrupt = Some(interrupt.clone());
        self.notes = notes;
    }

    /// Where the expression's notes go (the filter's warning about a message it failed on).
    pub fn notes(&self) -> &crate::output::Stderr {
        &self.notes
    }

    /// The time one evaluation may take.
    pub fn budget(&self) -> std::time::Duration {
        self.limits.budget()
    }

    #[cfg(test)]
    pub fn set_budget(&mut self, d: std::time::Duration) {
        self.limits.budget = Some(d);
    }

    /// What the expression says of `m`.
    pub fn test(&self, m: &Message, now: DateTime<Utc>, classifier: &Classifier) -> Test {
        let input = match self.input(m, now, classifier) {
            Ok(v) => v,
            Err(e) => return Test::Failed(one_line(&e)),
        };
        if let Ok(mut t) = self.typos.lock()
            && t.wants()
        {
            t.observe(&input, &FIELD_NAMES);
        }
        let first = eval::run(&self.filter, input, &self.limits, |out| out.next());
        match first {
            Err(eval::Stop::Budget) => Test::OverBudget,
            Err(eval::Stop::Interrupted) => Test::Interrupted,
            Ok(None) | Ok(Some(Ok(Val::Bool(false)))) => Test::False,
            Ok(Some(Ok(Val::Bool(true)))) => Test::True,
            Ok(Some(Ok(v))) => Test::NotBoolean(describe(&v)),
            Ok(Some(Err(e))) => Test::Failed(one_line(&e)),
        }
    }

    /// [`Query::test`], and whether this was the first message it ran on.
    pub fn test_counted(
        &self,
        m: &Message,
        now: DateTime<Utc>,
        classifier: &Classifier,
    ) -> (Test, bool) {
        let test = self.test(m, now, classifier);
        (test, !self.ran.swap(true, Ordering::Relaxed))
    }

    /// Count one more message it failed on; true for the first.
    pub fn failed_once(&self) -> bool {
        self.failed.fetch_add(1, Ordering::Relaxed) == 0
    }

    /// What a run should hear of the expression at its end: how many messages it failed on,
    /// and the paths it reads that no message examined had (a typo, likely).
    pub fn report(&self, flag: &str) -> Vec<String> {
        let mut lines = Vec::new();
        let failed = self.failed.load(Ordering::Relaxed);
        if failed > 1 {
            lines.push(format!(
                "warning: {flag} failed on {failed} messages in all; they were not selected"
            ));
        }
        lines.extend(self.typo_warnings(flag));
        lines
    }

    /// Whether the text has a lone `=` (jq's assignment), for the hint that `==` compares.
    pub fn assigns(&self) -> bool {
        let b = self.source.as_bytes();
        (0..b.len()).any(|i| {
            b[i] == b'='
                && b.get(i + 1).is_none_or(|c| *c != b'=')
                && !(i > 0 && b"=!<>|+-*/%".contains(&b[i - 1]))
        })
    }

    /// The paths the expression reads that every message examined lacked, one line each.
    pub fn typo_warnings(&self, flag: &str) -> Vec<String> {
        self.typos
            .lock()
            .map(|t| t.warnings(flag))
            .unwrap_or_default()
    }

    /// The value the expression sees (see [`record::input`]).
    fn input(
        &self,
        m: &Message,
        now: DateTime<Utc>,
        classifier: &Classifier,
    ) -> std::result::Result<Val, String> {
        record::input(&self.fields, m, now, classifier)
    }
}

fn one_line(s: &str) -> String {
    crate::text::escape_controls(s)
}

/// A value in a few words, for "gave … instead of true or false".
fn describe(v: &Val) -> String {
    match v {
        Val::Null => "null".into(),
        Val::Bool(b) => b.to_string(),
        Val::Num(_) => format!("the number {v}"),
        Val::TStr(_) | Val::BStr(_) => {
            let text = v.to_string();
            if text.chars().count() > 40 {
                "a string".into()
            } else {
                format!("the string {}", one_line(&text))
            }
        }
        Val::Arr(_) => "an array".into(),
        Val::Obj(_) => "an object".into(),
    }
}

/// A hint for what people bring from other languages: `&&`, `||`, `!`.
fn syntax_hint(code: &str) -> Option<&'static str> {
    if code.contains("&&") || code.contains("||") {
        Some("jq writes `and` and `or`, not `&&` and `||`")
    } else if code
        .char_indices()
        .any(|(i, c)| c == '!' && !code[i + 1..].starts_with('='))
    {
        Some("jq negates with `| not` (or `!=`), not `!`")
    } else {
        None
    }
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

    fn eval(code: &str, m: &Message) -> Test {
        Query::compile("--where", code)
            .unwrap()
            .test(m, Utc::now(), &Classifier::builtin())
    }

    #[test]
    fn helper_fields_make_common_queries_short() {
        let m = msg();
        for (code, want) in [
            (".json.amount_cents > 100000", Test::True),
            (".json.currency == \"USD\"", Test::False),
            (".attrs.tenant == \"acme\"", Test::True),
            (
                ".attributes | any(.name == \"tenant\" and .value == \"acme\")",
                Test::True,
            ),
            (".error_text | test(\"declined\")", Test::True),
            (".age_seconds > 3600", Test::True),
            (".class == \"permanent\"", Test::False),
            (".rule != null", Test::True),
            (".id | startswith(\"ord-\")", Test::True),
            ("empty", Test::False),
            (".fingerprint | length == 16", Test::True),
            (".template | contains(\"<id>\")", Test::True),
            // Not a test: jq's `=` gives the record back; a field's value is no boolean.
            (
                ".json.tenant = \"acme\"",
                Test::NotBoolean("an object".into()),
            ),
            (
                ".json.currency",
                Test::NotBoolean("the string \"EUR\"".into()),
            ),
            ("null", Test::NotBoolean("null".into())),
            (
                ".json.amount_cents",
                Test::NotBoolean("the number 250000".into()),
            ),
        ] {
            assert_eq!(eval(code, &m), want, "{code}");
        }
        // A body that is not JSON: .json is null, and a query that indexes into a string fails.
        let mut text = msg();
        text.body = b"plain text".to_vec();
        assert_eq!(eval(".json == null", &text), Test::True);
        assert_eq!(eval(".json.a == null", &text), Test::True);
        assert!(matches!(eval(".body.a", &text), Test::Failed(_)));
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
                let input = q.input(&m, now, &c).unwrap();
                eval::run(&q.filter, input, &q.limits, |out| {
                    out.map(|r| r.map(|v| v.to_string())).collect::<Vec<_>>()
                })
                .unwrap()
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
            (
                ".a > 1 && .b",
                "jq writes `and` and `or`, not `&&` and `||`",
            ),
            ("!.a", "jq negates with `| not`"),
        ] {
            let err = Query::compile("--where", code).unwrap_err();
            let e = err.to_string();
            let shown = format!("{e}\n{}", err.hints().join("\n"));
            assert!(shown.contains(want), "{code}: {shown}");
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
                        .all(|_| q.test(&msg(), Utc::now(), &Classifier::builtin()) == Test::True)
                })
            })
            .collect();
        assert!(handles.into_iter().all(|h| h.join().unwrap()));
    }
}

#[cfg(test)]
mod more_tests {
    use super::*;

    #[test]
    fn a_lone_equals_sign_is_an_assignment() {
        for (code, assigns) in [
            (r#".json.tenant = "acme""#, true),
            (r#".json.tenant == "acme""#, false),
            (".a != 1 and .b <= 2 and .c >= 3", false),
            (".a |= 1", false),
            (".a += 1", false),
        ] {
            assert_eq!(
                Query::compile("--where", code).unwrap().assigns(),
                assigns,
                "{code}"
            );
        }
    }
}
