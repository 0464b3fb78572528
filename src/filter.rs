//! Message filters shared by peek, tail, classify, redrive, replay and export.
//!
//! A message passes when it passes every filter given. A `--where` that cannot say (it fails
//! on the message, gives something other than true or false, or runs past its budget) fails
//! that message: it is not selected, the first such failure is said on stderr, and a move
//! counts it as failed. On the first message it is evaluated on, such an expression stops the
//! command with exit 2 before anything changes: it is not a test. `--fingerprint` takes full
//! ids or unique prefixes; a prefix that turns out to begin two fingerprints stops the command.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use regex::Regex;

use crate::classify::{Class, Classifier, fingerprint};
use crate::error::{Error, Result};
use crate::message::Message;
use crate::query::{Query, Test};

/// What the filters say of one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Selected,
    Skipped,
    /// The filters could not say (a `--where` failed on it): the message is not selected and,
    /// in a move, counted as failed with this reason.
    Failed(String),
}

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
    /// Error fingerprints (`--fingerprint`): full ids or prefixes of at least
    /// [`fingerprint::MIN_PREFIX`] characters.
    pub fingerprints: Vec<String>,
    /// `--where JQ`. At the end of the command it says on stderr how many messages it failed
    /// on and which paths no message had (see [`Query::report`]).
    pub query: Option<Query>,
    /// Each fingerprint prefix given → the first full id it matched.
    pub resolved: Mutex<HashMap<String, String>>,
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

    /// Does `m` pass? For the commands that read: a message the filters fail on is not
    /// shown (said once on stderr), and Ctrl-C in the middle of a `--where` is "no" (the
    /// caller's loop sees the flag). An error stops the command (see [`Filter::verdict`]).
    pub fn matches(
        &self,
        m: &Message,
        now: DateTime<Utc>,
        classifier: &Classifier,
    ) -> Result<bool> {
        match self.verdict(m, now, classifier) {
            Ok(v) => Ok(v == Verdict::Selected),
            Err(Error::Interrupted) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// What the filters say of `m`. An error stops the command before it acts on `m`: a
    /// `--where` that is not a test (or over its budget) on the first message it runs on, a
    /// fingerprint prefix that begins two fingerprints, or Ctrl-C in the middle of a
    /// `--where` ([`Error::Interrupted`]).
    pub fn verdict(
        &self,
        m: &Message,
        now: DateTime<Utc>,
        classifier: &Classifier,
    ) -> Result<Verdict> {
        if let Some(ids) = &self.ids
            && !ids.contains(&m.id)
            && !ids.contains(&m.native_id)
        {
            return Ok(Verdict::Skipped);
        }
        if self.older_than.is_some() || self.newer_than.is_some() {
            let Some(age) = m.age(now).and_then(|a| a.to_std().ok()) else {
                return Ok(Verdict::Skipped);
            };
            if self.older_than.is_some_and(|d| age < d) || self.newer_than.is_some_and(|d| age > d)
            {
                return Ok(Verdict::Skipped);
            }
        }
        if let Some(re) = &self.error
            && !m.error_text().is_some_and(|e| re.is_match(&e))
        {
            return Ok(Verdict::Skipped);
        }
        if let Some(re) = &self.body
            && !re.is_match(&String::from_utf8_lossy(&m.body))
        {
            return Ok(Verdict::Skipped);
        }
        if !self
            .attributes
            .iter()
            .all(|(name, re)| m.attribute(name).is_some_and(|v| re.is_match(&v.display())))
        {
            return Ok(Verdict::Skipped);
        }
        if !self.class.is_empty() {
            let Class { kind, rule } = classifier.classify(m);
            let kind = kind.to_string();
            if !self.class.iter().any(|c| *c == kind || *c == rule) {
                return Ok(Verdict::Skipped);
            }
        }
        if !self.fingerprints.is_empty() && !self.fingerprint_matches(m)? {
            return Ok(Verdict::Skipped);
        }
        match &self.query {
            Some(q) => self.query_verdict(q, m, now, classifier),
            None => Ok(Verdict::Selected),
        }
    }

    /// Whether `m`'s fingerprint is one given (or begins with a prefix given).
    fn fingerprint_matches(&self, m: &Message) -> Result<bool> {
        let id = fingerprint::fingerprint(m).id;
        let Some(given) = self
            .fingerprints
            .iter()
            .find(|f| id.starts_with(f.as_str()))
        else {
            return Ok(false);
        };
        if given.len() == id.len() {
            return Ok(true);
        }
        let mut resolved = self
            .resolved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let first = resolved.entry(given.clone()).or_insert_with(|| id.clone());
        if *first != id {
            return Err(Error::invalid_arg(
                "--fingerprint",
                format!("`{given}` is ambiguous: it begins {first} and {id}"),
            )
            .hinted("give more of the fingerprint (all sixteen characters are unique)"));
        }
        Ok(true)
    }

    fn query_verdict(
        &self,
        q: &Query,
        m: &Message,
        now: DateTime<Utc>,
        classifier: &Classifier,
    ) -> Result<Verdict> {
        let (test, first) = q.test_counted(m, now, classifier);
        let id = crate::text::escape_controls(&m.id);
        let src = crate::text::escape_controls(q.source());
        let budget = crate::human::fmt_duration(q.budget());
        let assigns = if q.assigns() {
            " (jq's `=` assigns; compare with `==`)"
        } else {
            ""
        };
        let why = match test {
            Test::True => return Ok(Verdict::Selected),
            Test::False => return Ok(Verdict::Skipped),
            Test::Interrupted => return Err(Error::Interrupted),
            Test::NotBoolean(what) if first => {
                let e = Error::invalid_arg(
                    "--where",
                    format!(
                        "`{src}` gave {what} on the first message ({id}), not true or false: a --where must be a test; nothing done"
                    ),
                );
                return Err(if q.assigns() {
                    e.hinted("jq's `=` assigns; compare with `==`")
                } else {
                    e
                });
            }
            Test::OverBudget if first => {
                return Err(Error::invalid_arg(
                    "--where",
                    format!(
                        "`{src}` ran past its budget of {budget} on the first message ({id}); nothing done"
                    ),
                )
                .hinted("simplify it, or raise the budget with DLQCTL_JQ_BUDGET_MS"));
            }
            Test::NotBoolean(what) => {
                format!("--where gave {what}, not true or false{assigns}")
            }
            Test::OverBudget => {
                format!("--where ran past its budget of {budget} (DLQCTL_JQ_BUDGET_MS raises it)")
            }
            Test::Failed(e) => format!("--where failed: {e}{assigns}"),
        };
        if q.failed_once() {
            q.notes().line(&format!(
                "warning: `{src}` on message {id}: {why}; the messages it fails on are not selected"
            ));
        }
        Ok(Verdict::Failed(why))
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
            parts.push(crate::human::count(
                ids.len() as u64,
                "listed id",
                "listed ids",
            ));
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
        assert!(f.matches(&m, now, &c).unwrap());
        f.older_than = Some(Duration::from_secs(3600));
        f.class = vec!["transient".into()];
        f.attributes = vec![("tenant".into(), Regex::new("^acme$").unwrap())];
        assert!(f.matches(&m, now, &c).unwrap());
        f.newer_than = Some(Duration::from_secs(4 * 3600));
        assert!(!f.matches(&m, now, &c).unwrap());
        f.newer_than = None;
        f.class = vec!["permanent".into()];
        assert!(!f.matches(&m, now, &c).unwrap());
        f.class = vec!["timeout".into()];
        f.ids = Some(["1".to_string()].into_iter().collect());
        assert!(f.matches(&m, now, &c).unwrap());
        f.body = Some(Regex::new("customer\":8").unwrap());
        assert!(!f.matches(&m, now, &c).unwrap());
    }

    fn failed_with(e: &str, id: &str) -> Message {
        Message {
            id: id.into(),
            body: b"{}".to_vec(),
            error: Some(ErrorInfo {
                message: Some(e.into()),
                ..ErrorInfo::default()
            }),
            ..Message::default()
        }
    }

    /// A `--where` that is not a test stops the command on the first message; on a later one
    /// it fails that message (a move counts it as failed).
    #[test]
    fn a_where_must_be_a_test() {
        let (now, c) = (Utc::now(), Classifier::builtin());
        let with_query = |code: &str| Filter {
            query: Some(Query::compile("--where", code).unwrap()),
            ..Filter::default()
        };
        let f = with_query(".json.tenant = \"acme\"");
        let e = f.verdict(&failed_with("x", "m-1"), now, &c).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("a --where must be a test"), "{e}");
        assert_eq!(e.hints(), ["jq's `=` assigns; compare with `==`"], "{e}");

        let f = with_query("if .id == \"m-1\" then true else .id end");
        assert_eq!(
            f.verdict(&failed_with("x", "m-1"), now, &c).unwrap(),
            Verdict::Selected
        );
        let later = f.verdict(&failed_with("x", "m-2"), now, &c).unwrap();
        assert!(
            matches!(&later, Verdict::Failed(why) if why.contains("the string \"m-2\"")),
            "{later:?}"
        );
        assert!(!f.matches(&failed_with("x", "m-3"), now, &c).unwrap());
    }

    /// `--fingerprint` takes a prefix; one that begins two fingerprints stops the command.
    #[test]
    fn a_fingerprint_prefix_must_be_unique() {
        let (now, c) = (Utc::now(), Classifier::builtin());
        // These two ids share their first eight characters (found by search).
        let (a, b) = (
            failed_with("failure of kind cydd", "a"),
            failed_with("failure of kind esol", "b"),
        );
        let (ida, idb) = (
            fingerprint::fingerprint(&a).id,
            fingerprint::fingerprint(&b).id,
        );
        assert_eq!(ida[..8], idb[..8]);
        assert_ne!(ida, idb);
        let f = Filter {
            fingerprints: vec![ida[..8].to_string()],
            ..Filter::default()
        };
        assert!(f.matches(&a, now, &c).unwrap());
        let e = f.matches(&b, now, &c).unwrap_err().to_string();
        assert!(e.contains(&ida) && e.contains(&idb), "{e}");
        let f = Filter {
            fingerprints: vec![ida[..9].to_string()],
            ..Filter::default()
        };
        assert!(f.matches(&a, now, &c).unwrap());
        assert!(!f.matches(&b, now, &c).unwrap());
    }
}
