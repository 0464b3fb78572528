//! Error fingerprints: one failure, one short id, whatever ids, numbers or times it mentions.
//!
//! A message's fingerprint is its error type plus the first line of its error message with the
//! variable parts replaced by placeholders (the *template*), hashed to eight hex characters.
//! Two messages that failed the same way have the same fingerprint; `classify --by fingerprint`
//! groups by it and `--fingerprint` selects a group. The rules are documented in
//! docs/triage.md ("Fingerprints") and pinned by the tests below and the corpus: changing them
//! changes every fingerprint, which breaks saved baselines (`check --baseline`), so a change is
//! a breaking change.

use std::sync::LazyLock;

use regex::Regex;
use sha2::{Digest, Sha256};

use crate::message::Message;

/// Version of the normalisation, hashed into every id: a change to the rules bumps it.
const VERSION: &str = "fp1";

/// Characters of the template kept (after normalisation).
const MAX_TEMPLATE: usize = 300;

/// The template of a message with no error recorded.
pub const NO_ERROR: &str = "(no error recorded)";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    /// Eight lowercase hex characters.
    pub id: String,
    /// `Type: message` with the variable parts replaced.
    pub template: String,
}

/// What a rule puts in place of a match: a placeholder, or a function that decides (`None`
/// keeps the text).
enum With {
    Text(&'static str),
    Decide(fn(&str) -> Option<&'static str>),
}

/// The replacements, in the order they apply: the earlier ones take text that a later one
/// would cut into pieces (a timestamp holds numbers, an email holds a path-like part).
static RULES: LazyLock<Vec<(Regex, With)>> = LazyLock::new(|| {
    use With::{Decide, Text};
    [
        // Quoted values, with the quotes: 'x', "x", `x`. A single quote opens only after a
        // non-word character, so that "can't" and "user's" stay words.
        (r#""[^"\n]{0,200}""#, Text("<str>")),
        (r"(^|[^\w])'[^'\n]{0,200}'", Text("${1}<str>")),
        (r"`[^`\n]{0,200}`", Text("<str>")),
        // ISO-8601 timestamps and dates, and times of day.
        (
            r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?",
            Text("<ts>"),
        ),
        (r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b", Text("<ts>")),
        (
            r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
            Text("<uuid>"),
        ),
        (r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", Text("<email>")),
        (r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", Text("<ip>")),
        // IPv6: hex groups and colons, with a digit (so that `std::io` and `de::Error` stay).
        (
            r"(?i)\[?\b[0-9a-f]{1,4}(?::[0-9a-f]{0,4}){2,7}\b\]?",
            Decide(|m| m.bytes().any(|b| b.is_ascii_digit()).then_some("<ip>")),
        ),
        // Paths: two segments or more (`/var/lib/x`, `C:\data\x`, `/v1/orders/7`), starting
        // where a word starts: a URL keeps its host (`https://payments.internal/charge`).
        (
            r#"(^|[\s(\[=,;'"])((?:[A-Za-z]:)?(?:[/\\][\w.@~-]+){2,}[/\\]?)"#,
            Text("${1}<path>"),
        ),
        (r"(?i)\b0x[0-9a-f]+\b", Text("<hex>")),
        // Ids: a token of 8 characters or more that mixes letters and digits (`cus_N3kd9aQ`,
        // `ord-88120`, a 24-character object id); shorter ones (`utf8`) keep their letters.
        (
            r"\b[\w-]*(?:\d[\w-]*[A-Za-z]|[A-Za-z][\w-]*\d)[\w-]*\b",
            Decide(|m| (m.len() >= 8).then_some("<id>")),
        ),
        // Whatever digits are left.
        (r"-?\d+(?:\.\d+)?", Text("<num>")),
    ]
    .into_iter()
    .map(|(re, with)| (Regex::new(re).expect("a valid fingerprint rule"), with))
    .collect()
});

/// The template of an error: its type, then the first line of its message, normalised.
pub fn template(error_type: Option<&str>, message: Option<&str>) -> String {
    let first = message
        .and_then(|m| m.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("");
    let error_type = error_type.map(str::trim).filter(|t| !t.is_empty());
    if error_type.is_none() && first.is_empty() {
        return NO_ERROR.into();
    }
    let mut text = first.to_string();
    for (re, with) in RULES.iter() {
        text = match with {
            With::Text(t) => re.replace_all(&text, *t).into_owned(),
            With::Decide(f) => re
                .replace_all(&text, |c: &regex::Captures| {
                    f(&c[0]).map_or_else(|| c[0].to_string(), str::to_string)
                })
                .into_owned(),
        };
    }
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = match error_type {
        Some(t) if text.is_empty() => t.to_string(),
        Some(t) => format!("{t}: {text}"),
        None => text,
    };
    if out.chars().count() > MAX_TEMPLATE {
        out = out.chars().take(MAX_TEMPLATE).collect();
    }
    out
}

/// The id of a template: the first eight hex characters of its SHA-256 (with the version).
pub fn id_of(template: &str) -> String {
    let digest = Sha256::new()
        .chain_update(VERSION)
        .chain_update([0])
        .chain_update(template)
        .finalize();
    digest[..4].iter().map(|b| format!("{b:02x}")).collect()
}

/// A message's fingerprint.
pub fn fingerprint(m: &Message) -> Fingerprint {
    let (error_type, message) = match &m.error {
        Some(e) => (e.class.as_deref(), e.message.as_deref()),
        None => (None, None),
    };
    let template = template(error_type, message);
    Fingerprint {
        id: id_of(&template),
        template,
    }
}

/// Whether `s` has the shape of a fingerprint id (for `--fingerprint`).
pub fn is_id(s: &str) -> bool {
    s.len() == 8
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(message: &str) -> String {
        template(None, Some(message))
    }

    #[test]
    fn variable_parts_become_placeholders() {
        for (text, want) in [
            (
                "order 8812 for customer 77 failed",
                "order <num> for customer <num> failed",
            ),
            ("user 'alice@example.com' not found", "user <str> not found"),
            (
                "mail to bob.smith+x@mail.example.co.uk bounced",
                "mail to <email> bounced",
            ),
            (
                "job 3fa2c1d0-9b7e-4c1a-8f00-1234567890ab timed out",
                "job <uuid> timed out",
            ),
            (
                "deadline 2026-12-04T17:48:40.123Z passed at 17:48:41",
                "deadline <ts> passed at <ts>",
            ),
            (
                "connect to 10.0.3.17:5432 refused",
                "connect to <ip> refused",
            ),
            ("no route to fe80::1:2:3 now", "no route to <ip> now"),
            ("cannot open /var/lib/app/data/7.json", "cannot open <path>"),
            ("bad pointer 0xdeadBEEF", "bad pointer <hex>"),
            (
                "POST https://payments.internal/v1/charges/ch_3Nk8aQ2x failed",
                "POST https://payments.internal/v<num>/charges/<id> failed",
            ),
            (r"cannot read C:\data\in\7.csv", "cannot read <path>"),
            ("open(/tmp/a/b) failed", "open(<path>) failed"),
            (
                "customer cus_N3kd9aQ has no card",
                "customer <id> has no card",
            ),
            ("object 65a1f0c2e4b0a1b2c3d4e5f6 gone", "object <id> gone"),
            (
                r#"duplicate key value violates unique constraint "orders_pkey""#,
                "duplicate key value violates unique constraint <str>",
            ),
            ("amount -12.50 is negative", "amount <num> is negative"),
            (
                "can't parse the user's record",
                "can't parse the user's record",
            ),
            ("HTTP 503 from `payments`", "HTTP <num> from <str>"),
        ] {
            assert_eq!(t(text), want, "{text}");
        }
    }

    #[test]
    fn the_same_failure_with_other_values_has_one_fingerprint() {
        let a = template(
            Some("PaymentDeclined"),
            Some("card for cus_N3kd9aQ declined: amount 1299 at 2026-01-02T03:04:05Z"),
        );
        let b = template(
            Some("PaymentDeclined"),
            Some("card for cus_Zx81kqP0 declined: amount 5 at 2025-11-30T23:59:59Z"),
        );
        assert_eq!(a, b);
        assert_eq!(id_of(&a), id_of(&b));
        assert_eq!(
            a,
            "PaymentDeclined: card for <id> declined: amount <num> at <ts>"
        );
        let other = template(Some("PaymentDeclined"), Some("card expired"));
        assert_ne!(id_of(&a), id_of(&other));
        // The type is part of the failure.
        assert_ne!(
            id_of(&template(Some("A"), Some("x"))),
            id_of(&template(Some("B"), Some("x")))
        );
    }

    #[test]
    fn only_the_first_line_counts_and_whitespace_collapses() {
        assert_eq!(
            t("\n  boom   at   7\n\tat com.x.Y.z(Y.java:12)\n"),
            "boom at <num>"
        );
        assert_eq!(template(None, None), NO_ERROR);
        assert_eq!(template(Some(" "), Some("")), NO_ERROR);
        assert_eq!(template(Some("E"), None), "E");
        let long = "x ".repeat(400);
        assert_eq!(t(&long).chars().count(), MAX_TEMPLATE);
    }

    /// The ids are part of the contract (saved baselines name them): pinned.
    #[test]
    fn ids_are_stable() {
        assert_eq!(id_of(NO_ERROR), id_of(NO_ERROR));
        let id = id_of("PaymentDeclined: card for <id> declined: amount <num> at <ts>");
        assert!(is_id(&id), "{id}");
        assert_eq!(
            id, PINNED_ID,
            "the fingerprint normalisation or hash changed"
        );
        assert!(!is_id("3fa2c1"));
        assert!(!is_id("3FA2C1D0"));
    }

    const PINNED_ID: &str = "133f852a";
}
