//! Error fingerprints: one failure, one short id, whatever ids, numbers or times it mentions.
//!
//! A message's fingerprint is its error type plus the first line of its error message with the
//! variable parts replaced by placeholders (the *template*), hashed to sixteen hex characters
//! (64 bits: among 10,000 templates the chance that two share an id is about 3 in a trillion;
//! with 32 bits it was about 1 in 100).
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
/// fp2: ids of 64 bits; a word followed by a number (`cust-7`, `JOB42`, `int64`) keeps its
/// word, whatever the number's length.
/// fp3: key=value pairs, names in parentheses and typographic quotes are placeholders too.
/// (Still fp3: a path in parentheses, `(Errno::EACCES)`, stays whole. Only such texts get
/// new templates, hence new ids; no template's id changes.)
const VERSION: &str = "fp3";

/// Hex characters in an id.
pub const ID_LEN: usize = 16;

/// The fewest characters of an id that `--fingerprint` takes as a prefix.
pub const MIN_PREFIX: usize = 8;

/// Characters of the template kept (after normalisation).
const MAX_TEMPLATE: usize = 300;

/// The template of a message with no error recorded.
pub const NO_ERROR: &str = "(no error recorded)";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    /// Sixteen lowercase hex characters.
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
        // Other quotes: typographic and guillemets.
        (
            "\u{201c}[^\u{201d}\n]{0,200}\u{201d}|\u{2018}[^\u{2019}\n]{0,200}\u{2019}|\u{ab}[^\u{bb}\n]{0,200}\u{bb}|\u{201e}[^\u{201c}\u{201d}\n]{0,200}[\u{201c}\u{201d}]",
            Text("<str>"),
        ),
        // A name in parentheses (`(tenant acme)`, `(tenant: acme)`, `(tenant=acme)`): the name
        // stays, the value goes. One word alone in parentheses (`(closed)`) is a reason, not a
        // name: it stays; so does a path (`(Errno::ECONNREFUSED)`, Ruby's errno classes: the
        // class is the failure, not a value), whose `::` is no separator.
        (
            r"\(([A-Za-z_][\w.-]*)(?:[:=] *| +)[^()\s:][^()\s]*\)",
            Text("(${1} <v>)"),
        ),
        // key=value pairs (`tenant=acme`, `user_id=u-17`, a URL's query): the key stays.
        (
            r#"\b([A-Za-z_][\w.-]*)=[^\s,;&)\]}"'<>]+(?:,[^\s,;&)\]}"'<>=]+)*"#,
            Text("${1}=<v>"),
        ),
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
        // A word and a number (`cust-7`, `ord-88120`, `JOB42`, `int64`, `v1.2`): the word stays,
        // whatever the number's length (so `cust-99` and `cust-100` are one failure).
        (
            r"\b([A-Za-z]+[-_]?)\d+(?:\.\d+)?\b",
            Text("${1}<num>"),
        ),
        // Ids: a token of 8 characters or more that mixes letters and digits (`cus_N3kd9aQ`,
        // a 24-character object id); shorter ones (`e2e`) keep their letters.
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

/// The id of a template: the first sixteen hex characters of its SHA-256 (with the version).
pub fn id_of(template: &str) -> String {
    let digest = Sha256::new()
        .chain_update(VERSION)
        .chain_update([0])
        .chain_update(template)
        .finalize();
    digest[..ID_LEN / 2]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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

/// Whether `s` has the shape of a fingerprint id.
pub fn is_id(s: &str) -> bool {
    s.len() == ID_LEN && is_hex(s)
}

/// Whether `s` can stand for an id on `--fingerprint`: the id, or a prefix of at least
/// [`MIN_PREFIX`] characters.
pub fn is_prefix(s: &str) -> bool {
    (MIN_PREFIX..=ID_LEN).contains(&s.len()) && is_hex(s)
}

fn is_hex(s: &str) -> bool {
    s.bytes()
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
            ("order ord-88120 failed", "order ord-<num> failed"),
            ("field of type int64", "field of type int<num>"),
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
        assert!(is_prefix(&id[..8]) && is_prefix(&id) && !is_prefix(&id[..7]));
    }

    const PINNED_ID: &str = "ef5ad7b560df8133";

    /// One failure, one template, whatever the length of the ids and numbers it mentions
    /// (issue 24 item 8: `cust-99` and `cust-100` made two groups).
    #[test]
    fn an_id_is_one_placeholder_whatever_its_length() {
        let first = t("customer cust-0 not found");
        for n in 0..=297 {
            assert_eq!(
                t(&format!("customer cust-{n} not found")),
                first,
                "cust-{n}"
            );
        }
        for (a, b) in [
            ("order ord-7 failed", "order ord-88120 failed"),
            ("job JOB42 stuck", "job JOB4200917 stuck"),
            ("user u_1 unknown", "user u_123456789 unknown"),
        ] {
            assert_eq!(t(a), t(b), "{a} / {b}");
        }
    }
    /// Issue 30 item 5: the variable parts people put in errors (a name in parentheses,
    /// key=value pairs, quoted values whatever the quotes) do not split one failure into
    /// groups. Each group is one failure as it appears in the corpus or the operator's session.
    #[test]
    fn names_in_parentheses_pairs_and_any_quotes_are_one_failure() {
        let groups: &[&[&str]] = &[
            &[
                "currency XTS is not supported (tenant acme)",
                "currency XTS is not supported (tenant globex)",
                "currency XTS is not supported (tenant: initech)",
                "currency XTS is not supported (tenant=umbrella)",
            ],
            &[
                "rate limit exceeded tenant=acme user_id=u-17 retry_after=2s",
                "rate limit exceeded tenant=globex user_id=u-90812 retry_after=30s",
            ],
            &[
                "unknown product \u{201c}Blue Mug\u{201d}",
                "unknown product \u{2018}Red Plate\u{2019}",
                "unknown product \u{ab}Tea Pot\u{bb}",
                "unknown product \"Green Cup\"",
                "unknown product 'Spoon'",
                "unknown product `Fork`",
            ],
            &[
                "GET https://api.internal/v1/rates?base=EUR&symbols=USD failed",
                "GET https://api.internal/v1/rates?base=GBP&symbols=JPY,CHF failed",
            ],
        ];
        for group in groups {
            let first = t(group[0]);
            for text in &group[1..] {
                assert_eq!(t(text), first, "{text} / {}", group[0]);
            }
        }
        // What the failure is stays: another message, another template.
        assert_ne!(
            t("currency XTS is not supported (tenant acme)"),
            t("currency XTS is disabled (tenant acme)")
        );
        // A Ruby errno class in parentheses is the failure itself: two errnos, two templates.
        assert_eq!(
            t("open failed (Errno::ECONNREFUSED)"),
            "open failed (Errno::ECONNREFUSED)"
        );
        assert_ne!(
            t("open failed (Errno::ECONNREFUSED)"),
            t("open failed (Errno::EACCES)")
        );
        assert_eq!(t("bad (tenant: acme)"), "bad (tenant <v>)");
        // A parenthesised reason of one word is not a name: it stays.
        assert_eq!(
            t("Net::ReadTimeout with #<TCPSocket:(closed)>"),
            "Net::ReadTimeout with #<TCPSocket:(closed)>"
        );
    }

    /// The fingerprints the docs show are the ones dlqctl computes for their text: json.md's
    /// `new_fingerprints` example had an id from an older version, and runbook-redrive.md's
    /// `peek` sample another.
    #[test]
    fn the_docs_show_the_fingerprints_dlqctl_computes() {
        let json = include_str!("../../docs/json.md");
        let mut seen = 0;
        for at in json.match_indices("{ \"fingerprint\": ").map(|(i, _)| i) {
            let line = &json[at..at + json[at..].find('}').unwrap() + 1];
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let template = v["template"].as_str().unwrap();
            assert_eq!(v["fingerprint"], id_of(template), "docs/json.md: {line}");
            seen += 1;
        }
        assert!(seen > 0, "docs/json.md shows no fingerprint");
        let runbook = include_str!("../../docs/runbook-redrive.md");
        let sample = &runbook[runbook.find("\n── order-00005").unwrap()..];
        let id = sample
            .split("fingerprint ")
            .nth(1)
            .unwrap()
            .split('\n')
            .next()
            .unwrap();
        let error = sample
            .split("\n  error: ")
            .nth(1)
            .unwrap()
            .split('\n')
            .next()
            .unwrap();
        assert_eq!(
            id,
            id_of(&t(error)),
            "docs/runbook-redrive.md: the peek sample"
        );
    }
}
