//! Failure classification: user rules first, then the built-in ones; the first match wins.

use std::borrow::Cow;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::{RuleConfig, RuleKind, one_line};
use crate::error::{Error, Result};
use crate::message::{ErrorInfo, Message};

mod cause;
#[cfg(test)]
mod corpus_tests;
pub mod fingerprint;
mod rule;
#[cfg(test)]
mod taxonomy_tests;

pub use cause::innermost;
pub use rule::{BUILTIN_RULES, Rule};

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

/// The user's rules, compiled when the classifier is built (a bad one is an error before
/// anything is read), and the built-in rules, compiled on first use (a run that classifies
/// nothing does not pay for them).
pub struct Classifier {
    user: Vec<Rule>,
    /// Whether a user rule looks at the body (else the body is not decoded for the rules).
    user_body: bool,
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
    /// The published taxonomy the rule comes from, and where it is (built-in rules; user rules
    /// that say).
    pub taxonomy: Option<String>,
    pub source: Option<String>,
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

    fn found(r: &Rule, span: Span, in_cause: bool, not_matched: Vec<String>) -> Explanation {
        Explanation {
            kind: r.kind,
            rule: r.name.clone(),
            reason: r.reason.clone(),
            taxonomy: r.taxonomy.clone(),
            source: r.source.clone(),
            builtin: Some(r.builtin),
            in_cause,
            span: Some(span),
            not_matched,
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
        Ok(Classifier {
            user_body: rules.iter().any(Rule::needs_body),
            user: rules,
        })
    }

    pub fn builtin() -> Classifier {
        Classifier::new(&[], None, None).expect("built-in rules compile")
    }

    /// Every rule, in the order they are tried: the user's, then the built-in ones.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.user.iter().chain(&rule::builtin().rules)
    }

    /// Knows this class or rule name (for `--class`).
    pub fn knows(&self, name: &str) -> bool {
        matches!(
            name,
            "transient" | "permanent" | "unclassified" | "unrecognised-error" | "no-error-recorded"
        ) || self.rules().any(|r| r.name == name)
    }

    /// The class of `m`: what [`Classifier::explain`] says, without the explanation (no spans,
    /// no list of the rules that did not match: once per message, that is most of the work).
    pub fn classify(&self, m: &Message) -> Class {
        let error = m.error_str();
        let error = error.as_deref();
        let body = self.body(m);
        let class = |r: &Rule| Class {
            kind: r.kind,
            rule: r.name.clone(),
        };
        if let Some(r) = self.user.iter().find(|r| r.holds(m, error, &body)) {
            return class(r);
        }
        let Some(error) = error else {
            return unmatched("no-error-recorded");
        };
        let builtin = rule::builtin();
        let first = innermost(error)
            .and_then(|cause| builtin.first(cause))
            .or_else(|| builtin.first(error));
        match first {
            Some(i) => class(&builtin.rules[i]),
            None => unmatched("unrecognised-error"),
        }
    }

    /// The class of `m` and how it was found. User rules look at the whole error text; the
    /// built-in rules look at the innermost cause of a wrapped error first (see
    /// [`cause::innermost`]), then at the whole text. The first match wins.
    pub fn explain(&self, m: &Message) -> Explanation {
        let error = m.error_str();
        let error = error.as_deref();
        let body = self.body(m);
        let mut not_matched: Vec<String> = Vec::new();
        for r in &self.user {
            match r.find(m, error, error, &body) {
                Some(span) => return Explanation::found(r, span, false, not_matched),
                None => not_matched.push(r.name.clone()),
            }
        }
        let builtin = rule::builtin();
        if let Some(error) = error {
            let cause = innermost(error);
            for (part, in_cause) in [(cause, true), (Some(error), false)] {
                let Some(part) = part else { continue };
                let Some(i) = builtin.first(part) else {
                    continue;
                };
                let r = &builtin.rules[i];
                // (The set and the rule's own regex are the same pattern: they agree.)
                let Some(span) = r.find(m, Some(error), Some(part), &body) else {
                    continue;
                };
                // The rules before the first match failed on both texts they were tried on.
                not_matched.extend(builtin.rules[..i].iter().map(|r| r.name.clone()));
                return Explanation::found(r, span, in_cause, not_matched);
            }
        }
        not_matched.extend(builtin.rules.iter().map(|r| r.name.clone()));
        Explanation {
            not_matched,
            ..Explanation::unmatched(error.is_some())
        }
    }

    /// The body as text, for user rules that look at it (else empty: nothing decodes it).
    fn body<'a>(&self, m: &'a Message) -> Cow<'a, str> {
        if self.user_body {
            String::from_utf8_lossy(&m.body)
        } else {
            Cow::Borrowed("")
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

fn unmatched(rule: &str) -> Class {
    Class {
        kind: Kind::Unclassified,
        rule: rule.into(),
    }
}

impl Explanation {
    /// No rule matched: `unrecognised-error`, or `no-error-recorded` without an error text.
    fn unmatched(has_error: bool) -> Explanation {
        let rule = if has_error {
            "unrecognised-error"
        } else {
            "no-error-recorded"
        };
        Explanation {
            kind: Kind::Unclassified,
            rule: rule.into(),
            reason: None,
            taxonomy: None,
            source: None,
            builtin: None,
            in_cause: false,
            span: None,
            not_matched: Vec::new(),
        }
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
                "socket-error-text",
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
                "json-parse",
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

    /// The set and a rule's own regex are both ASCII-only (rule.rs): on a text with non-ASCII
    /// letters around the match, `classify` and `--explain` still agree, and the span slices the
    /// text at character boundaries.
    #[test]
    fn non_ascii_texts_are_classified_alike_with_and_without_explain() {
        let c = Classifier::builtin();
        for (text, rule) in [
            (
                "Zeitüberschreitung: Connection refused (Größe 503 €)",
                "socket-error-text",
            ),
            ("Ошибка: KeyError: 'тайм-аут'", "argument-error"),
            ("注文 88213: deadlock detected", "lock-conflict"),
            ("ünknöwn fäilure", "unrecognised-error"),
        ] {
            let e = c.explain_text(text);
            let got = c.classify(&with_error(text));
            assert_eq!((got.kind, got.rule.as_str()), (e.kind, rule), "{text}");
            assert_eq!(e.rule, rule, "{text}");
            if let Some(span) = e.span {
                assert_eq!(&text[span.start..span.end], span.text, "{text}");
            }
        }
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
            Some("declared-permanent")
        );
        assert!(!e.not_matched.contains(&"timeout".to_string()));
    }

    #[test]
    fn builtin_rules_are_user_rules() {
        // Every built-in rule parses as a user's [[classify.rules]] entry, reason and all.
        let file: rule::BuiltinFile = toml::from_str(BUILTIN_RULES).unwrap();
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
            taxonomy: None,
            source: None,
            matcher: RuleMatch {
                error: Some("(?i)flux".into()),
                ..RuleMatch::default()
            },
        };
        let c = Classifier::new(&[rule], None, None).unwrap();
        assert_eq!(c.classify(&with_error("flux not found")).rule, "flux");
        assert!(c.knows("flux") && c.knows("transient") && !c.knows("nope"));
    }

    /// Issue 24 item 12: a number in the 4xx/5xx range is a status code only where the text
    /// says it is one; an amount, a balance or an index is not.
    #[test]
    fn numbers_are_status_codes_only_where_the_text_says_so() {
        let c = Classifier::builtin();
        for text in [
            "PaymentDeclined: card declined by issuer (order 82733, amount 500.28 EUR)",
            "PaymentDeclined: card declined by issuer (order 82733, amount 404.29 EUR)",
            "insufficient funds: balance 503.10 below amount 620.00",
            "order 502 has 429 items; shipment 504 of 410 pending",
        ] {
            let got = c.classify(&with_error(text));
            assert_eq!(got.kind, Kind::Unclassified, "{text}: {got:?}");
        }
        for (text, kind, rule) in [
            ("HTTP 503", Kind::Transient, "unavailable"),
            (
                "the server responded with status 500",
                Kind::Transient,
                "unavailable",
            ),
            (
                "Request failed with status code 404",
                Kind::Permanent,
                "not-found",
            ),
            (
                "upstream said 503 Service Unavailable",
                Kind::Transient,
                "unavailable",
            ),
            ("status: 429", Kind::Transient, "rate-limited"),
            ("HTTP/1.1 504", Kind::Transient, "timeout"),
            ("statusCode=422", Kind::Permanent, "validation"),
        ] {
            let got = c.classify(&with_error(text));
            assert_eq!((got.kind, got.rule.as_str()), (kind, rule), "{text}");
        }
    }

    #[test]
    fn bad_rules_are_config_errors() {
        let rule = RuleConfig {
            name: "broken".into(),
            kind: RuleKind::Permanent,
            reason: None,
            taxonomy: None,
            source: None,
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
