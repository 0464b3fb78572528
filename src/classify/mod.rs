//! Failure classification: user rules first, then the built-in ones; the first match wins.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::config::{RuleConfig, RuleKind, one_line};
use crate::error::{Error, Result};
use crate::message::{ErrorInfo, Message};

mod cause;
#[cfg(test)]
mod corpus_tests;
pub mod fingerprint;

pub use cause::innermost;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Transient,
    Permanent,
    Unclassified,
}

impl From<RuleKind> for Kind {
    fn from(k: RuleKind) -> Self {
        match k {
            RuleKind::Transient => Kind::Transient,
            RuleKind::Permanent => Kind::Permanent,
            RuleKind::Ambiguous => Kind::Unclassified,
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::Transient => "transient",
            Kind::Permanent => "permanent",
            Kind::Unclassified => "unclassified",
        })
    }
}

/// The class of one message: a kind and the rule that gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Class {
    pub kind: Kind,
    pub rule: String,
}

#[derive(Clone)]
pub struct Rule {
    pub name: String,
    pub kind: Kind,
    /// One line on why a match means this kind.
    pub reason: Option<String>,
    pub builtin: bool,
    error: Option<Regex>,
    body: Option<Regex>,
    attributes: Vec<(String, Regex)>,
}

/// The built-in rules, in order: `match` has exactly the shape of a `[[rules]]` entry in
/// dlqctl.toml, so that any of them can be copied into a user's config verbatim.
pub const BUILTIN_RULES: &str = include_str!("rules.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BuiltinFile {
    rules: Vec<RuleConfig>,
}

/// The user's rules, compiled when the classifier is built (a bad one is an error before
/// anything is read), and the built-in rules, compiled on first use (a run that classifies
/// nothing does not pay for them).
pub struct Classifier {
    user: Vec<Rule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    #[serde(default)]
    rules: Vec<RuleConfig>,
    #[serde(default)]
    classify: Option<crate::config::ClassifyConfig>,
}

/// Where a rule matched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Span {
    /// `error`, `body` or `attribute:NAME`.
    pub field: String,
    /// Byte offsets of the match in that field's text (for `error`, in the whole error text).
    pub start: usize,
    pub end: usize,
    /// The matched text.
    pub text: String,
}

/// Why a message has its class: what `--explain` and `classify --test` show.
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    pub kind: Kind,
    pub rule: String,
    /// The rule's reason (none for user rules without one, or when nothing matched).
    pub reason: Option<String>,
    /// Whether the rule is a built-in one (none when nothing matched).
    pub builtin: Option<bool>,
    /// Whether the built-in rules matched the innermost cause of a wrapped error (true) or the
    /// whole error text (false).
    pub in_cause: bool,
    /// What the rule matched (none when nothing matched).
    #[serde(rename = "match")]
    pub span: Option<Span>,
    /// The rules tried before it that did not match, in order.
    pub not_matched: Vec<String>,
}

impl Explanation {
    pub fn class(&self) -> Class {
        Class {
            kind: self.kind,
            rule: self.rule.clone(),
        }
    }
}

impl Classifier {
    /// User rules (config, then `--rules FILE`) ahead of the built-in rules.
    pub fn new(
        config_rules: &[RuleConfig],
        config_path: Option<&Path>,
        rules_file: Option<&Path>,
    ) -> Result<Classifier> {
        let config_path = config_path.unwrap_or(Path::new(crate::config::FILE_NAME));
        let mut user = config_rules.to_vec();
        if let Some(path) = rules_file {
            let text = std::fs::read_to_string(path).map_err(|e| Error::Rules {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
            let file: RulesFile = toml::from_str(&text).map_err(|e| Error::Rules {
                path: path.to_path_buf(),
                reason: one_line(&e.to_string()),
            })?;
            // Rules from the file come first: they are the most specific to this run.
            let mut from_file = file.rules;
            from_file.extend(file.classify.map(|c| c.rules).unwrap_or_default());
            if from_file.is_empty() {
                return Err(Error::Rules {
                    path: path.to_path_buf(),
                    reason: "no rules in it".into(),
                });
            }
            from_file.extend(user);
            user = from_file;
        }
        let bad = |reason: String| match rules_file {
            Some(p) => Error::Rules {
                path: p.to_path_buf(),
                reason,
            },
            None => Error::Config {
                path: config_path.to_path_buf(),
                reason,
            },
        };
        let mut rules = Vec::new();
        for r in &user {
            rules.push(Rule::compile(r, false).map_err(bad)?);
        }
        Ok(Classifier { user: rules })
    }

    pub fn builtin() -> Classifier {
        Classifier::new(&[], None, None).expect("built-in rules compile")
    }

    /// Every rule, in the order they are tried: the user's, then the built-in ones.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.user.iter().chain(builtin_rules())
    }

    /// Knows this class or rule name (for `--class`).
    pub fn knows(&self, name: &str) -> bool {
        matches!(
            name,
            "transient" | "permanent" | "unclassified" | "unrecognised-error" | "no-error-recorded"
        ) || self.rules().any(|r| r.name == name)
    }

    pub fn classify(&self, m: &Message) -> Class {
        self.decide(m, false).class()
    }

    /// The class of `m` and how it was found. User rules look at the whole error text; the
    /// built-in rules look at the innermost cause of a wrapped error first (see
    /// [`cause::innermost`]), then at the whole text. The first match wins.
    pub fn explain(&self, m: &Message) -> Explanation {
        self.decide(m, true)
    }

    /// The first rule that matches; `misses`: also name the rules before it that did not
    /// (for `--explain`; plain classification skips that work, once per message).
    fn decide(&self, m: &Message, misses: bool) -> Explanation {
        let error = m.error_text();
        let body = String::from_utf8_lossy(&m.body);
        let error = error.as_deref();
        let cause = error.and_then(cause::innermost);
        let mut not_matched: Vec<String> = Vec::new();
        let found = |r: &Rule, span: Span, in_cause: bool, not_matched: Vec<String>| Explanation {
            kind: r.kind,
            rule: r.name.clone(),
            reason: r.reason.clone(),
            builtin: Some(r.builtin),
            in_cause,
            span: Some(span),
            not_matched,
        };
        for r in &self.user {
            match r.find(m, error, error, &body) {
                Some(span) => return found(r, span, false, not_matched),
                None if misses => not_matched.push(r.name.clone()),
                None => {}
            }
        }
        for (part, in_cause) in [(cause, true), (error, false)] {
            if in_cause && part.is_none() {
                continue;
            }
            for r in builtin_rules() {
                match r.find(m, error, part, &body) {
                    Some(span) => return found(r, span, in_cause, not_matched),
                    None if misses && !not_matched.contains(&r.name) => {
                        not_matched.push(r.name.clone())
                    }
                    None => {}
                }
            }
        }
        Explanation {
            kind: Kind::Unclassified,
            rule: if error.is_some() {
                "unrecognised-error"
            } else {
                "no-error-recorded"
            }
            .into(),
            reason: None,
            builtin: None,
            in_cause: false,
            span: None,
            not_matched,
        }
    }

    /// Classify an error text alone, as a message whose error message is `text`
    /// (`classify --test`).
    pub fn explain_text(&self, text: &str) -> Explanation {
        self.explain(&Message {
            error: Some(ErrorInfo {
                message: Some(text.to_string()),
                ..ErrorInfo::default()
            }),
            ..Message::default()
        })
    }
}

/// The built-in rules, compiled once, on first use.
fn builtin_rules() -> &'static [Rule] {
    static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
        toml::from_str::<BuiltinFile>(BUILTIN_RULES)
            .expect("src/classify/rules.toml parses")
            .rules
            .iter()
            .map(|r| Rule::compile(r, true).expect("built-in rule compiles"))
            .collect()
    });
    &RULES
}

impl Rule {
    /// A rule from its config; the error is one line naming the rule.
    fn compile(r: &RuleConfig, builtin: bool) -> std::result::Result<Rule, String> {
        // Rule names are quoted with control characters escaped, so that the error stays on
        // one line (tests/it/bad_input.rs found `name = "\n"`).
        let name = crate::address::escape_controls(&r.name);
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
            builtin,
            error: m
                .error
                .as_deref()
                .map(|re| compile("match.error", re))
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

    /// Where this rule matches `m`, its error regex looking at `part` (the whole `error` text
    /// or a slice of it), or `None`. Every condition must hold; the span is the error's match,
    /// else the body's, else the first attribute's.
    fn find(
        &self,
        m: &Message,
        error: Option<&str>,
        part: Option<&str>,
        body: &str,
    ) -> Option<Span> {
        let mut span = None;
        if let Some(re) = &self.error {
            let (error, part) = (error?, part?);
            let found = re.find(part)?;
            let base = part.as_ptr() as usize - error.as_ptr() as usize;
            span = Some(Span {
                field: "error".into(),
                start: base + found.start(),
                end: base + found.end(),
                text: found.as_str().to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RuleMatch;
    use crate::message::ErrorInfo;

    fn with_error(e: &str) -> Message {
        Message {
            error: Some(ErrorInfo {
                message: Some(e.into()),
                ..ErrorInfo::default()
            }),
            ..Message::default()
        }
    }

    #[test]
    fn builtin_rules() {
        let c = Classifier::builtin();
        let cases = [
            (
                "upstream request timed out after 30s",
                Kind::Transient,
                "timeout",
            ),
            ("HTTP 504 Gateway Timeout", Kind::Transient, "timeout"),
            (
                "HTTP 429 Too Many Requests",
                Kind::Transient,
                "rate-limited",
            ),
            ("503 Service Unavailable", Kind::Transient, "unavailable"),
            (
                "read tcp: connection reset by peer",
                Kind::Transient,
                "connection",
            ),
            (
                "ERROR: deadlock detected (SQLSTATE 40P01)",
                Kind::Transient,
                "lock-conflict",
            ),
            (
                "could not serialize access due to concurrent update",
                Kind::Transient,
                "lock-conflict",
            ),
            (
                "Unexpected token } in JSON at position 12",
                Kind::Permanent,
                "parse-error",
            ),
            // An HTML error page where JSON was expected: often a proxy's, so not decided.
            (
                "Unexpected token < in JSON at position 0",
                Kind::Unclassified,
                "html-instead-of-json",
            ),
            (
                "validation failed: amount must be positive",
                Kind::Permanent,
                "validation",
            ),
            ("customer 991 not found", Kind::Permanent, "not-found"),
            ("HTTP 400 Bad Request", Kind::Permanent, "client-error"),
            (
                "java.lang.NullPointerException",
                Kind::Permanent,
                "null-dereference",
            ),
            (
                "pq: insert violates foreign key constraint (SQLSTATE 23503)",
                Kind::Unclassified,
                "foreign-key-violation",
            ),
            (
                "the flux capacitor hiccuped",
                Kind::Unclassified,
                "unrecognised-error",
            ),
        ];
        for (err, kind, rule) in cases {
            let got = c.classify(&with_error(err));
            assert_eq!((got.kind, got.rule.as_str()), (kind, rule), "{err}");
        }
        assert_eq!(c.classify(&Message::default()).rule, "no-error-recorded");
    }

    #[test]
    fn the_innermost_cause_decides() {
        let c = Classifier::builtin();
        // The wrapper reads like a connection failure; the root cause is a bug.
        let text = "com.acme.RetryException: gave up after connection reset on attempt 1\nCaused by: java.lang.NullPointerException: customer is null";
        let e = c.explain_text(text);
        assert_eq!(
            (e.kind, e.rule.as_str()),
            (Kind::Permanent, "null-dereference")
        );
        assert!(e.in_cause);
        let span = e.span.expect("a match");
        assert_eq!(&text[span.start..span.end], span.text);
        assert_eq!(span.text, "NullPointer");
        // No chain: the whole text.
        let e = c.explain_text("upstream call timed out after 30s");
        assert_eq!(e.rule, "timeout");
        assert!(!e.in_cause);
        assert_eq!(
            e.not_matched.first().map(String::as_str),
            Some("lock-conflict")
        );
        assert!(!e.not_matched.contains(&"timeout".to_string()));
    }

    #[test]
    fn builtin_rules_are_user_rules() {
        // Every built-in rule parses as a user's [[classify.rules]] entry, reason and all.
        let file: BuiltinFile = toml::from_str(BUILTIN_RULES).unwrap();
        let mut names = std::collections::HashSet::new();
        for r in &file.rules {
            assert!(names.insert(r.name.clone()), "duplicate rule {}", r.name);
            assert!(
                r.reason.as_deref().is_some_and(|x| !x.contains('\n')),
                "{}",
                r.name
            );
            let text = toml::to_string(&serde_json::json!({
                "classify": { "rules": [{
                    "name": r.name, "kind": format!("{:?}", r.kind).to_lowercase(),
                    "reason": r.reason, "match": { "error": r.matcher.error },
                }]}
            }))
            .unwrap();
            let cfg: crate::config::Config = toml::from_str(&text).unwrap();
            let user = Classifier::new(&cfg.classify.rules, None, None).unwrap();
            assert_eq!(user.rules().next().unwrap().name, r.name);
        }
    }

    #[test]
    fn user_rules_win() {
        let rule = RuleConfig {
            name: "flux".into(),
            kind: RuleKind::Transient,
            reason: None,
            matcher: RuleMatch {
                error: Some("(?i)flux".into()),
                ..RuleMatch::default()
            },
        };
        let c = Classifier::new(&[rule], None, None).unwrap();
        assert_eq!(c.classify(&with_error("flux not found")).rule, "flux");
        assert!(c.knows("flux") && c.knows("transient") && !c.knows("nope"));
    }

    #[test]
    fn bad_rules_are_config_errors() {
        let rule = RuleConfig {
            name: "broken".into(),
            kind: RuleKind::Permanent,
            reason: None,
            matcher: RuleMatch {
                error: Some("(unclosed".into()),
                ..RuleMatch::default()
            },
        };
        let e = Classifier::new(&[rule], None, None).err().unwrap();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("broken"), "{e}");
    }
}
