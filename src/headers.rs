//! `--keep-header` / `--strip-header`: which headers (Kafka) or attributes (SQS, PostgreSQL
//! `headers`) a redrive or replay copies.
//!
//! Patterns are shell-style globs on the name (`*`, `?`, `[…]`), matched case-sensitively, as
//! the backends compare names. Keep rules go first (when there are any, only what matches one
//! is carried), then strip rules. Whatever the rules say, a header whose value is the message's
//! stable id is carried: dropping it would let the consumer's dedupe check miss the repeat.
//! The provenance that dlqctl adds to a copy (`dlqctl-stable-id`, `dlqctl-redriven-from`) is
//! added after the rules.

use glob::Pattern;

use crate::error::{Error, Result};
use crate::message::Message;

#[derive(Clone, Debug, Default)]
pub struct HeaderRules {
    keep: Vec<Pattern>,
    strip: Vec<Pattern>,
}

fn patterns(arg: &str, given: &[String]) -> Result<Vec<Pattern>> {
    given
        .iter()
        .map(|p| {
            if p.is_empty() {
                return Err(
                    Error::invalid_arg(arg, "an empty pattern matches no header")
                        .hinted("give a name or a glob such as 'kafka_dlt-*'"),
                );
            }
            Pattern::new(p).map_err(|e| {
                Error::invalid_arg(arg, format!("`{p}` is not a glob pattern ({e})"))
                    .hinted("quote it, and escape a literal [ as [[]")
            })
        })
        .collect()
}

impl HeaderRules {
    pub fn new(keep: &[String], strip: &[String]) -> Result<HeaderRules> {
        Ok(HeaderRules {
            keep: patterns("--keep-header", keep)?,
            strip: patterns("--strip-header", strip)?,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.keep.is_empty() && self.strip.is_empty()
    }

    /// Whether a header of this name is copied (the stable-id exception aside).
    pub fn carries(&self, name: &str) -> bool {
        (self.keep.is_empty() || self.keep.iter().any(|p| p.matches(name)))
            && !self.strip.iter().any(|p| p.matches(name))
    }

    /// Drop from `m` the headers the rules leave out (never the stable id; the loop guard's
    /// count only when `--strip-header` names it exactly: no `--keep-header` and no glob drops
    /// it by accident).
    pub fn apply(&self, m: &mut Message) {
        if self.is_empty() {
            return;
        }
        let id = m.id.as_bytes();
        let keep_count = !self.strips_count();
        m.attributes.retain(|a| {
            a.value.as_bytes() == Some(id)
                || (a.name == crate::message::REDRIVE_COUNT_ATTRIBUTE && keep_count)
                || self.carries(&a.name)
        });
    }

    /// `--strip-header dlqctl-redrive-count`, by its name: the copies go without the loop
    /// guard's count (a message at the target's size limit).
    pub fn strips_count(&self) -> bool {
        self.strip
            .iter()
            .any(|p| p.as_str() == crate::message::REDRIVE_COUNT_ATTRIBUTE)
    }

    /// For the plan: what the copies carry.
    pub fn describe(&self) -> String {
        let list = |ps: &[Pattern]| {
            ps.iter()
                .map(Pattern::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let rules = match (self.keep.is_empty(), self.strip.is_empty()) {
            (true, true) => "all".into(),
            (false, true) => format!("only {}", list(&self.keep)),
            (true, false) => format!("all but {}", list(&self.strip)),
            (false, false) => format!("only {}, but not {}", list(&self.keep), list(&self.strip)),
        };
        // dlqctl's own headers go whatever the rules say (the loop guard's count, the stable
        // id): where the rules would leave one out, say so.
        let own = [
            crate::message::REDRIVE_COUNT_ATTRIBUTE,
            crate::message::STABLE_ID_ATTRIBUTE,
        ];
        if self.strips_count() {
            format!(
                "{rules}; no {} (--max-redrives counts these copies from 0 again); always kept: {} (dlqctl's own) and the header holding the stable id",
                own[0], own[1]
            )
        } else if own.iter().all(|n| self.carries(n)) {
            rules
        } else {
            format!(
                "{rules}; always kept: {}, {} (dlqctl's own) and the header holding the stable id",
                own[0], own[1]
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{AttrValue, Attribute};

    fn msg(id: &str, names: &[(&str, &str)]) -> Message {
        Message {
            id: id.into(),
            attributes: names
                .iter()
                .map(|(n, v)| Attribute {
                    name: (*n).into(),
                    value: AttrValue::Text {
                        data_type: "String".into(),
                        value: (*v).into(),
                    },
                })
                .collect(),
            ..Message::default()
        }
    }

    fn names(m: &Message) -> Vec<&str> {
        m.attributes.iter().map(|a| a.name.as_str()).collect()
    }

    /// Operator report (2026-12-06): `--strip-header 'dlqctl-*'` was described as leaving
    /// them out, yet dlqctl's own headers are always sent: the description says so.
    #[test]
    fn the_description_says_what_is_always_kept() {
        let r = HeaderRules::new(&["tenant".into()], &["dlqctl-*".into()]).unwrap();
        let d = r.describe();
        assert!(
            d.starts_with("only tenant, but not dlqctl-*; always kept:")
                && d.contains("dlqctl-stable-id")
                && d.contains("dlqctl-redrive-count"),
            "{d}"
        );
        let r = HeaderRules::new(&[], &["kafka_dlt-*".into()]).unwrap();
        assert_eq!(
            r.describe(),
            "all but kafka_dlt-*",
            "nothing of dlqctl's left out"
        );
    }

    /// Keep rules that name neither still carry the loop guard's count (a copy redriven
    /// `--max-redrives` times must not start again at 0) and the stable id.
    #[test]
    fn no_rule_drops_the_redrive_count_or_the_stable_id() {
        let r = HeaderRules::new(&["x-*".into()], &["dlqctl-*".into()]).unwrap();
        let mut m = msg("k-1", &[("trace-id", "t"), ("x-a", "1"), ("my-id", "k-1")]);
        m.count_redrive();
        m.count_redrive();
        r.apply(&mut m);
        assert_eq!(names(&m), ["x-a", "my-id", "dlqctl-redrive-count"]);
        assert_eq!(m.redrive_count(), 2);
    }

    /// Operator report (op5): a message at the target's size limit could not go, and
    /// `--strip-header dlqctl-redrive-count` did not remove the count. Named exactly, it does
    /// (and the plan says what that costs); a glob still does not.
    #[test]
    fn strip_header_naming_the_redrive_count_drops_it() {
        let r = HeaderRules::new(&[], &["dlqctl-redrive-count".into()]).unwrap();
        let mut m = msg("k-1", &[("tenant", "t")]);
        m.count_redrive();
        r.apply(&mut m);
        assert_eq!(names(&m), ["tenant"]);
        let d = r.describe();
        assert!(
            d.contains("no dlqctl-redrive-count") && d.contains("from 0 again"),
            "{d}"
        );
        let r = HeaderRules::new(&[], &["dlqctl-redrive-*".into()]).unwrap();
        let mut m = msg("k-1", &[("tenant", "t")]);
        m.count_redrive();
        r.apply(&mut m);
        assert_eq!(names(&m), ["tenant", "dlqctl-redrive-count"]);
    }

    #[test]
    fn keep_then_strip_in_order_with_repeats() {
        let r = HeaderRules::new(
            &["kafka_dlt-*".into(), "trace-id".into()],
            &["kafka_dlt-exception-stacktrace".into()],
        )
        .unwrap();
        let mut m = msg(
            "orders/0@7",
            &[
                ("trace-id", "t1"),
                ("x-other", "a"),
                ("kafka_dlt-original-topic", "orders"),
                ("kafka_dlt-exception-stacktrace", "at …"),
                ("kafka_dlt-original-topic", "orders-retry"),
                ("Trace-Id", "case matters"),
            ],
        );
        r.apply(&mut m);
        assert_eq!(
            names(&m),
            [
                "trace-id",
                "kafka_dlt-original-topic",
                "kafka_dlt-original-topic"
            ]
        );
        assert_eq!(
            r.describe(),
            "only kafka_dlt-*, trace-id, but not kafka_dlt-exception-stacktrace; always kept: dlqctl-redrive-count, dlqctl-stable-id (dlqctl's own) and the header holding the stable id"
        );
    }

    #[test]
    fn the_header_holding_the_stable_id_is_always_carried() {
        let r = HeaderRules::new(&[], &["x-*".into()]).unwrap();
        let mut m = msg("req-42", &[("x-request-id", "req-42"), ("x-trace", "t")]);
        r.apply(&mut m);
        assert_eq!(names(&m), ["x-request-id"]);
        assert!(!r.carries("x-request-id"), "only the id exception keeps it");
    }

    #[test]
    fn no_rules_change_nothing_and_bad_patterns_are_refused() {
        let r = HeaderRules::new(&[], &[]).unwrap();
        let before = msg("a", &[("k", "v")]);
        let mut m = before.clone();
        r.apply(&mut m);
        assert_eq!(m, before);
        assert_eq!(r.describe(), "all");
        let e = HeaderRules::new(&["[oops".into()], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--keep-header") && e.contains("[oops"), "{e}");
        let e = HeaderRules::new(&[], &[String::new()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--strip-header") && e.contains("empty"), "{e}");
    }
}
