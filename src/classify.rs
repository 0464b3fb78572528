//! Failure classification: user rules first, then the built-in ones; the first match wins.

use std::path::Path;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::config::{RuleConfig, RuleKind, one_line};
use crate::error::{Error, Result};
use crate::message::Message;

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

pub struct Rule {
    pub name: String,
    pub kind: Kind,
    pub builtin: bool,
    error: Option<Regex>,
    body: Option<Regex>,
    attributes: Vec<(String, Regex)>,
}

/// Built-in rules: (name, kind, regex on the error text). Transient ones come first, so a
/// "504 Gateway Timeout" is a timeout even though it also looks like an HTTP error.
const BUILTIN: &[(&str, Kind, &str)] = &[
    (
        "lock-conflict",
        Kind::Transient,
        r"(?i)deadlock|could not serialize|serialization failure|\b40001\b|\b40P01\b|lock (wait )?timeout|\b55P03\b|lock not available",
    ),
    (
        "timeout",
        Kind::Transient,
        r"(?i)timed?[ _-]?out|deadline exceeded|\b408\b|\b504\b",
    ),
    (
        "rate-limited",
        Kind::Transient,
        r"(?i)\b429\b|too many requests|rate[ _-]?limit|throttl|slow ?down",
    ),
    (
        "unavailable",
        Kind::Transient,
        r"(?i)\b50[023]\b|service unavailable|bad gateway|internal server error|temporar(y|ily)|try again|overloaded",
    ),
    (
        "connection",
        Kind::Transient,
        r"(?i)connection (reset|refused|closed|aborted|lost)|broken pipe|econn(reset|refused)|network (is )?unreachable|host unreachable|eof while|unexpected eof",
    ),
    (
        "parse-error",
        Kind::Permanent,
        r"(?i)pars(e|ing) error|failed to parse|malformed|unexpected (token|character|end of)|deserializ|could not decode|invalid json|json ?(parse|decode)|syntax ?error|not valid utf-?8",
    ),
    (
        "validation",
        Kind::Permanent,
        r"(?i)validat|invalid|constraint|violat|unprocessable|\b422\b|required field|missing (field|property)|out of range",
    ),
    (
        "not-found",
        Kind::Permanent,
        r"(?i)not found|no such|does not exist|\b404\b|\b410\b|unknown (id|user|record|customer|account|entity)",
    ),
    (
        "client-error",
        Kind::Permanent,
        r"(?i)\b4(0[0-7]|09|1[1-8])\b|bad request|unauthori[sz]ed|forbidden|conflict|payment required",
    ),
    (
        "bug",
        Kind::Permanent,
        r"(?i)nullpointer|null reference|classcast|typeerror|keyerror|attributeerror|undefined is not|panicked at|index out of (range|bounds)|nomethoderror|argumenterror",
    ),
];

pub struct Classifier {
    rules: Vec<Rule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    #[serde(default)]
    rules: Vec<RuleConfig>,
    #[serde(default)]
    classify: Option<crate::config::ClassifyConfig>,
}

impl Classifier {
    /// User rules (config, then `--rules FILE`) ahead of the built-in rules.
    pub fn new(
        config_rules: &[RuleConfig],
        config_path: Option<&Path>,
        rules_file: Option<&Path>,
    ) -> Result<Classifier> {
        let config_path = config_path.unwrap_or(Path::new(crate::config::FILE_NAME));
        let mut rules = Vec::new();
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
        // Rule names are quoted with control characters escaped, so that the error stays on
        // one line (tests/it/bad_input.rs found `name = "\n"`).
        let rule_err = |name: &str, what: &str, e: regex::Error| {
            let reason = format!(
                "rule `{}`: {what} is not a valid regex ({})",
                crate::address::escape_controls(name),
                one_line(&e.to_string())
            );
            match rules_file {
                Some(p) => Error::Rules {
                    path: p.to_path_buf(),
                    reason,
                },
                None => Error::Config {
                    path: config_path.to_path_buf(),
                    reason,
                },
            }
        };
        for r in user {
            let m = &r.matcher;
            if m.error.is_none() && m.body.is_none() && m.attributes.is_empty() {
                let reason = format!(
                    "rule `{}` matches nothing: give match.error, match.body or match.attributes",
                    crate::address::escape_controls(&r.name)
                );
                return Err(match rules_file {
                    Some(p) => Error::Rules {
                        path: p.to_path_buf(),
                        reason,
                    },
                    None => Error::Config {
                        path: config_path.to_path_buf(),
                        reason,
                    },
                });
            }
            let compile =
                |what: &str, re: &str| Regex::new(re).map_err(|e| rule_err(&r.name, what, e));
            rules.push(Rule {
                name: r.name.clone(),
                kind: r.kind.into(),
                builtin: false,
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
                    .collect::<Result<_>>()?,
            });
        }
        for (name, kind, re) in BUILTIN {
            rules.push(Rule {
                name: (*name).to_string(),
                kind: *kind,
                builtin: true,
                error: Some(Regex::new(re).expect("built-in rule regex")),
                body: None,
                attributes: Vec::new(),
            });
        }
        Ok(Classifier { rules })
    }

    pub fn builtin() -> Classifier {
        Classifier::new(&[], None, None).expect("built-in rules compile")
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Knows this class or rule name (for `--class`).
    pub fn knows(&self, name: &str) -> bool {
        matches!(
            name,
            "transient" | "permanent" | "unclassified" | "unrecognised-error" | "no-error-recorded"
        ) || self.rules.iter().any(|r| r.name == name)
    }

    pub fn classify(&self, m: &Message) -> Class {
        let error = m.error_text();
        let body = String::from_utf8_lossy(&m.body);
        for r in &self.rules {
            if r.matches(m, error.as_deref(), &body) {
                return Class {
                    kind: r.kind,
                    rule: r.name.clone(),
                };
            }
        }
        Class {
            kind: Kind::Unclassified,
            rule: if error.is_some() {
                "unrecognised-error"
            } else {
                "no-error-recorded"
            }
            .into(),
        }
    }
}

impl Rule {
    fn matches(&self, m: &Message, error: Option<&str>, body: &str) -> bool {
        if let Some(re) = &self.error {
            match error {
                Some(e) if re.is_match(e) => {}
                _ => return false,
            }
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
                "Unexpected token < in JSON at position 0",
                Kind::Permanent,
                "parse-error",
            ),
            (
                "validation failed: amount must be positive",
                Kind::Permanent,
                "validation",
            ),
            ("customer 991 not found", Kind::Permanent, "not-found"),
            ("HTTP 400 Bad Request", Kind::Permanent, "client-error"),
            ("java.lang.NullPointerException", Kind::Permanent, "bug"),
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
    fn user_rules_win() {
        let rule = RuleConfig {
            name: "flux".into(),
            kind: RuleKind::Transient,
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
