//! Message filters shared by peek, tail, classify, redrive, replay and export.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use regex::Regex;

use crate::classify::{Class, Classifier, fingerprint};
use crate::message::Message;
use crate::query::Query;

#[derive(Default)]
pub struct Filter {
    /// Class kind (`transient`…) or rule name.
    pub class: Vec<String>,
    pub body: Option<Regex>,
    pub error: Option<Regex>,
    pub attributes: Vec<(String, Regex)>,
    pub older_than: Option<Duration>,
    pub newer_than: Option<Duration>,
    pub ids: Option<HashSet<String>>,
    /// Error fingerprints (`--fingerprint`).
    pub fingerprints: Vec<String>,
    /// `--where JQ`.
    pub query: Option<Query>,
    /// Whether a `--where` failure has been reported (once per run).
    pub query_failed: AtomicBool,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.class.is_empty()
            && self.body.is_none()
            && self.error.is_none()
            && self.attributes.is_empty()
            && self.older_than.is_none()
            && self.newer_than.is_none()
            && self.ids.is_none()
            && self.fingerprints.is_empty()
            && self.query.is_none()
    }

    pub fn needs_classifier(&self) -> bool {
        !self.class.is_empty()
    }

    /// Does `m` pass? `class` is computed lazily by the caller's classifier.
    pub fn matches(&self, m: &Message, now: DateTime<Utc>, classifier: &Classifier) -> bool {
        if let Some(ids) = &self.ids
            && !ids.contains(&m.id)
            && !ids.contains(&m.native_id)
        {
            return false;
        }
        if self.older_than.is_some() || self.newer_than.is_some() {
            let Some(age) = m.age(now).and_then(|a| a.to_std().ok()) else {
                return false;
            };
            if self.older_than.is_some_and(|d| age < d) || self.newer_than.is_some_and(|d| age > d)
            {
                return false;
            }
        }
        if let Some(re) = &self.error
            && !m.error_text().is_some_and(|e| re.is_match(&e))
        {
            return false;
        }
        if let Some(re) = &self.body
            && !re.is_match(&String::from_utf8_lossy(&m.body))
        {
            return false;
        }
        if !self
            .attributes
            .iter()
            .all(|(name, re)| m.attribute(name).is_some_and(|v| re.is_match(&v.display())))
        {
            return false;
        }
        if !self.class.is_empty() {
            let Class { kind, rule } = classifier.classify(m);
            let kind = kind.to_string();
            if !self.class.iter().any(|c| *c == kind || *c == rule) {
                return false;
            }
        }
        if !self.fingerprints.is_empty() {
            let id = fingerprint::fingerprint(m).id;
            if !self.fingerprints.contains(&id) {
                return false;
            }
        }
        if let Some(q) = &self.query {
            return match q.matches(m, now, classifier) {
                Ok(yes) => yes,
                Err(e) => {
                    // Like jq's `select`, a message the expression fails on is not selected;
                    // said once, on stderr, so that a typo does not pass unnoticed.
                    if !self.query_failed.swap(true, Ordering::Relaxed) {
                        crate::output::notice(&format!(
                            "warning: --where failed on message {}: {e}; the messages it fails on are not selected",
                            crate::address::escape_controls(&m.id)
                        ));
                    }
                    false
                }
            };
        }
        true
    }

    /// One-line description for plans and summaries.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.class.is_empty() {
            parts.push(format!("class {}", self.class.join("|")));
        }
        if let Some(r) = &self.body {
            parts.push(format!("body ~ /{r}/"));
        }
        if let Some(r) = &self.error {
            parts.push(format!("error ~ /{r}/"));
        }
        for (n, r) in &self.attributes {
            parts.push(format!("{n} ~ /{r}/"));
        }
        if let Some(d) = self.older_than {
            parts.push(format!("older than {}", crate::human::fmt_duration(d)));
        }
        if let Some(d) = self.newer_than {
            parts.push(format!("newer than {}", crate::human::fmt_duration(d)));
        }
        if let Some(ids) = &self.ids {
            parts.push(format!("{} listed ids", ids.len()));
        }
        if !self.fingerprints.is_empty() {
            parts.push(format!("fingerprint {}", self.fingerprints.join("|")));
        }
        if let Some(q) = &self.query {
            parts.push(format!("where `{}`", q.source()));
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{AttrValue, Attribute, ErrorInfo};

    #[test]
    fn filters_combine_with_and() {
        let now = Utc::now();
        let m = Message {
            id: "a".into(),
            native_id: "1".into(),
            body: b"{\"customer\":7}".to_vec(),
            attributes: vec![Attribute {
                name: "tenant".into(),
                value: AttrValue::text("acme"),
            }],
            enqueued_at: Some(now - chrono::Duration::hours(5)),
            error: Some(ErrorInfo {
                message: Some("timed out".into()),
                ..ErrorInfo::default()
            }),
            ..Message::default()
        };
        let c = Classifier::builtin();
        let mut f = Filter::default();
        assert!(f.matches(&m, now, &c));
        f.older_than = Some(Duration::from_secs(3600));
        f.class = vec!["transient".into()];
        f.attributes = vec![("tenant".into(), Regex::new("^acme$").unwrap())];
        assert!(f.matches(&m, now, &c));
        f.newer_than = Some(Duration::from_secs(4 * 3600));
        assert!(!f.matches(&m, now, &c));
        f.newer_than = None;
        f.class = vec!["permanent".into()];
        assert!(!f.matches(&m, now, &c));
        f.class = vec!["timeout".into()];
        f.ids = Some(["1".to_string()].into_iter().collect());
        assert!(f.matches(&m, now, &c));
        f.body = Some(Regex::new("customer\":8").unwrap());
        assert!(!f.matches(&m, now, &c));
    }
}
