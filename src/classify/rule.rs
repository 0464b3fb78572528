//! One classification rule, compiled, and the built-in rules compiled together.
//!
//! The built-in rules only look at the error text, so they are compiled a second time as one
//! [`RegexSet`]: one pass over a text says which of them match, and the first of those wins.
//! That keeps the cost of a message flat in the number of rules (issue 30: 45 regexes tried in
//! turn made `classify` 1.7 times slower than the first release's ten).

use std::sync::{LazyLock, OnceLock};

use regex::Regex;
use regex::bytes::{Regex as BytesRegex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde::Deserialize;

use super::{Kind, Span};
use crate::config::{RuleConfig, one_line};
use crate::message::Message;

#[derive(Clone)]
pub struct Rule {
    pub name: String,
    pub kind: Kind,
    /// One line on why a match means this kind.
    pub reason: Option<String>,
    /// The published list or table the rule comes from (`classify --explain` names it).
    pub taxonomy: Option<String>,
    /// Where that list or table is (a URL).
    pub source: Option<String>,
    pub builtin: bool,
    error: Option<ErrorRegex>,
    body: Option<Regex>,
    attributes: Vec<(String, Regex)>,
}

/// A rule's error regex. A built-in rule's is compiled on first use: `classify` decides with
/// the set alone, and only `--explain` needs a rule's own regex (for the span). Compiling the
/// 50-odd of them up front cost 8 MiB of memory that plain classification never used.
///
/// A built-in rule's regex is ASCII-only (`unicode(false)`, as in the set): its patterns are
/// ASCII, and Unicode `(?i)`, `\b` and `\s` made the set's automaton larger and slower (see
/// [`SET_DFA_BYTES`]). A user rule's keeps the regex crate's Unicode defaults.
#[derive(Clone)]
struct ErrorRegex {
    pattern: String,
    unicode: bool,
    re: OnceLock<BytesRegex>,
}

impl ErrorRegex {
    fn get(&self) -> &BytesRegex {
        self.re.get_or_init(|| {
            // The same pattern already compiled, as part of the set or on its own.
            compile_error_regex(&self.pattern, self.unicode).expect("a rule's regex compiles")
        })
    }
}

/// An error regex; the error text is matched as bytes, so that an ASCII-only regex (the
/// built-in rules') may use `.`, `\S` and `[^…]` like a Unicode one.
fn compile_error_regex(pattern: &str, unicode: bool) -> Result<BytesRegex, regex::Error> {
    RegexBuilder::new(pattern).unicode(unicode).build()
}

/// The built-in rules, in order: `match` has exactly the shape of a `[[rules]]` entry in
/// dlqctl.toml, so that any of them can be copied into a user's config verbatim.
pub const BUILTIN_RULES: &str = include_str!("rules.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BuiltinFile {
    pub rules: Vec<RuleConfig>,
}

/// The built-in rules and their error regexes as one set (index `i` is rule `i`'s).
pub(super) struct Builtin {
    pub rules: Vec<Rule>,
    set: RegexSet,
}

/// The lazy DFA of the set keeps the states it has built between messages; the rules are many
/// and large, so it gets room for them (a fixed amount: memory does not grow with the queue).
/// Texts as varied as tests/data/errors need about 28 MiB of states with the 74 rules of the
/// second round and between 40 and 48 MiB with the 89 of the third: with less, the cache is
/// cleared over and over and the set falls back to its NFA (a debug build classifying 1,000 of
/// the corpus texts in a cycle: 17.3 s with 32 MiB, 11.3 s with 40, 8.1 s with 48, against 6.8 s
/// for the 74 rules with 32; peak RSS 12 MiB above that run). A queue's texts repeat, so
/// it usually fills a fraction of this: the cache only grows as states are built, and the cap
/// is the worst case.
///
/// The set is ASCII-only (`unicode(false)`: the patterns are ASCII; `(?i)` no longer adds the
/// Kelvin sign and the long s to every k and s, and `\b` no longer makes the lazy DFA give up on
/// non-ASCII text). `examples/classify_bench.rs` (release, the 839 texts of the third round
/// cycled to 1,000,000 messages): 14.96 s and 57.3 MiB peak RSS with Unicode, 2.03 s and
/// 46.9 MiB ASCII-only. The cap still matters: 32 MiB or less thrashes (over 30 s). The 98
/// rules of the sixth round need a little more than 48 MiB on the 1,156 texts of the corpus:
/// with 48 the set thrashed (a debug build, 3,000 messages: 79 to 98 s, against 31 s for the
/// fifth round's 96 rules with 48 MiB); with 64, 37 s and a peak RSS 7 MiB above the fifth's
/// (70.5 against 63.2 MiB; 96 MiB gains nothing more: 32 s, 70.8 MiB).
/// The seventh round's 102 rules keep the 64 MiB (release, 1,000,000 messages of the 1,269
/// texts: median 4.32 s of five runs, peak RSS 76.1 MiB; the sixth round's 98 on the 1,158 texts
/// of their time: median 4.76 s, 68.0 MiB).
const SET_DFA_BYTES: usize = 64 << 20;

impl Builtin {
    /// The index of the first rule whose regex matches `text`.
    pub fn first(&self, text: &str) -> Option<usize> {
        self.set.matches(text.as_bytes()).iter().next()
    }
}

/// The built-in rules, compiled once, on first use (a run that classifies nothing does not
/// pay for them).
pub(super) fn builtin() -> &'static Builtin {
    static BUILTIN: LazyLock<Builtin> = LazyLock::new(|| {
        let file: BuiltinFile =
            toml::from_str(BUILTIN_RULES).expect("src/classify/rules.toml parses");
        let rules: Vec<Rule> = file
            .rules
            .iter()
            .map(|r| Rule::compile(r, true).expect("built-in rule compiles"))
            .collect();
        let patterns = file.rules.iter().map(|r| {
            r.matcher
                .error
                .as_deref()
                .expect("every built-in rule matches the error text")
        });
        let set = RegexSetBuilder::new(patterns)
            .unicode(false)
            .dfa_size_limit(SET_DFA_BYTES)
            .build()
            .expect("built-in rules compile as one set");
        Builtin { rules, set }
    });
    &BUILTIN
}

impl Rule {
    /// A rule from its config; the error is one line naming the rule.
    pub(super) fn compile(r: &RuleConfig, builtin: bool) -> std::result::Result<Rule, String> {
        // Rule names are quoted with control characters escaped, so that the error stays on
        // one line (tests/it/bad_input.rs found `name = "\n"`).
        let name = crate::text::escape_controls(&r.name);
        let m = &r.matcher;
        if m.error.is_none() && m.body.is_none() && m.attributes.is_empty() {
            return Err(format!(
                "rule `{name}` matches nothing: give match.error, match.body or match.attributes"
            ));
        }
        let compile = |what: &str, re: &str| {
            Regex::new(re).map_err(|e| {
                format!(
                    "rule `{name}`: {what} is not a valid regex ({})",
                    one_line(&e.to_string())
                )
            })
        };
        Ok(Rule {
            name: r.name.clone(),
            kind: r.kind.into(),
            reason: r.reason.clone(),
            taxonomy: r.taxonomy.clone(),
            source: r.source.clone(),
            builtin,
            error: m
                .error
                .as_deref()
                .map(|re| {
                    // A user rule's regex is compiled here, so that a bad one is an error before
                    // anything is read; a built-in one's is checked by the set and compiled when
                    // `--explain` needs it.
                    let compiled = OnceLock::new();
                    if !builtin {
                        let user = compile_error_regex(re, true).map_err(|e| {
                            format!(
                                "rule `{name}`: match.error is not a valid regex ({})",
                                one_line(&e.to_string())
                            )
                        })?;
                        let _ = compiled.set(user);
                    }
                    Ok::<_, String>(ErrorRegex {
                        pattern: re.to_string(),
                        unicode: !builtin,
                        re: compiled,
                    })
                })
                .transpose()?,
            body: m
                .body
                .as_deref()
                .map(|re| compile("match.body", re))
                .transpose()?,
            attributes: m
                .attributes
                .iter()
                .map(|(k, re)| Ok((k.clone(), compile("match.attributes", re)?)))
                .collect::<std::result::Result<_, String>>()?,
        })
    }

    /// Whether the rule looks at the body.
    pub(super) fn needs_body(&self) -> bool {
        self.body.is_some()
    }

    /// Whether every condition of this rule holds for `m` (`error`: its error text).
    pub(super) fn holds(&self, m: &Message, error: Option<&str>, body: &str) -> bool {
        if let Some(re) = &self.error
            && !error.is_some_and(|e| re.get().is_match(e.as_bytes()))
        {
            return false;
        }
        if let Some(re) = &self.body
            && !re.is_match(body)
        {
            return false;
        }
        self.attributes
            .iter()
            .all(|(name, re)| m.attribute(name).is_some_and(|v| re.is_match(&v.display())))
    }

    /// Where this rule matches `m`, its error regex looking at `part` (the whole `error` text
    /// or a slice of it), or `None`. Every condition must hold; the span is the error's match,
    /// else the body's, else the first attribute's.
    pub(super) fn find(
        &self,
        m: &Message,
        error: Option<&str>,
        part: Option<&str>,
        body: &str,
    ) -> Option<Span> {
        let mut span = None;
        if let Some(re) = &self.error {
            let (error, part) = (error?, part?);
            let found = re.get().find(part.as_bytes())?;
            let base = part.as_ptr() as usize - error.as_ptr() as usize;
            span = Some(Span {
                field: "error".into(),
                start: base + found.start(),
                end: base + found.end(),
                text: String::from_utf8_lossy(found.as_bytes()).into_owned(),
            });
        }
        if let Some(re) = &self.body {
            let found = re.find(body)?;
            span.get_or_insert_with(|| Span {
                field: "body".into(),
                start: found.start(),
                end: found.end(),
                text: found.as_str().to_string(),
            });
        }
        for (name, re) in &self.attributes {
            let value = m.attribute(name)?.display();
            let found = re.find(&value)?;
            span.get_or_insert_with(|| Span {
                field: format!("attribute:{name}"),
                start: found.start(),
                end: found.end(),
                text: found.as_str().to_string(),
            });
        }
        span
    }
}
