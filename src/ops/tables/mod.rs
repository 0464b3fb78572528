//! What the tables of inspect, classify, check, verify and audit show at each width: per
//! table, the columns a person needs at 80 columns, those added at 120, and those only
//! `--output wide` shows (the layout is `output::table`'s).
//!
//! Ranks (a higher rank gives way first, see `Col::drop_at` and `Col::shorten_at`) follow one
//! scale across the tables: 60 and over, what is there for completeness (first seen); 40–59,
//! what a wide terminal has room for (last seen, a rule's name beside its kind, a sample); 20–39,
//! context worth a line (a sample's error); under 20, what decides the next command.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use regex::Regex;

pub mod audit;
pub mod checks;
pub mod classify;
pub mod inspect;

/// A time as tables show it.
pub fn when(t: Option<DateTime<Utc>>) -> String {
    t.map_or("-".into(), |t| t.format("%Y-%m-%d %H:%M").to_string())
}

/// A fingerprint's template, or an error, as a person reads it: its innermost cause (a Spring
/// listener's wrapper says where a failure surfaced, its cause what went wrong), and a short
/// form without Java package names for narrow columns. The fingerprint itself is of the whole
/// template.
pub fn template_cell(template: &str) -> crate::output::Cell {
    let inner = crate::classify::innermost(template)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(template);
    let inner = crate::text::escape_controls(inner);
    crate::output::Cell::with_short(inner.clone(), without_packages(&inner))
}

static PACKAGE: LazyLock<Regex> = LazyLock::new(|| {
    // `com.acme.payments.PaymentDeclinedException` → `PaymentDeclinedException`: lower-case
    // segments with dots before a capitalised name.
    Regex::new(r"\b(?:[a-z][a-z0-9_]*\.){2,}([A-Z][\w$]*)").expect("regex")
});

/// `text` with the package of every Java class name left out.
pub fn without_packages(text: &str) -> String {
    PACKAGE.replace_all(text, "$1").into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_shows_its_innermost_cause() {
        let spring = "com.acme.PaymentDeclinedException: Listener method <str> threw exception; nested exception is com.acme.payments.PaymentDeclinedException: card for <id> declined";
        let c = template_cell(spring);
        assert_eq!(
            c.text,
            "com.acme.payments.PaymentDeclinedException: card for <id> declined"
        );
        assert_eq!(
            c.short.as_deref(),
            Some("PaymentDeclinedException: card for <id> declined")
        );
        let plain = template_cell("connection reset by peer");
        assert_eq!(plain.text, "connection reset by peer");
        assert!(plain.short.is_none());
        // Versions and hosts are not packages.
        assert_eq!(
            without_packages("POST https://payments.internal/charge v1.2.3"),
            "POST https://payments.internal/charge v1.2.3"
        );
    }
}
