//! The innermost cause of a wrapped error text.
//!
//! Wrappers say where a failure surfaced ("could not execute statement", "fetch failed",
//! "Error while trying to deserialize arguments"); the root cause says what went wrong, and
//! that decides whether a retry can succeed. Each ecosystem marks its chain differently:
//!
//! | ecosystem | marker | innermost cause |
//! |---|---|---|
//! | Python | "The above exception was the direct cause…", "During handling of the above exception…" | the first traceback |
//! | PHP | a line starting `Next ` | the exception before the first `Next` |
//! | Rust (anyhow) | a line `Caused by:` then a (numbered) list | the last entry of the list |
//! | Java, Ruby | a line starting `Caused by: ` / `Caused by ` | the last one, to the end |
//! | Node.js | `[cause]: ` | the last one, to the end |
//! | .NET | ` ---> ` | the last inner exception's line |
//! | Elixir | `** (EXIT) ` | the last exit reason's line |
//! | Spring | `nested exception is ` | the rest of the last one's line |
//! | Rails (ActiveJob) | `Error while trying to deserialize arguments: ` | the rest of that line |

use std::sync::LazyLock;

use regex::Regex;

static PYTHON: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^(The above exception was the direct cause of the following exception:|During handling of the above exception, another exception occurred:)").expect("regex")
});
static PHP_NEXT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?m)^Next ").expect("regex"));
static ANYHOW: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^Caused by:[ \t]*\r?$").expect("regex"));
static ANYHOW_END: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^(Stack backtrace:|note: )").expect("regex"));
static CAUSED_BY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^[ \t]*Caused by:? ").expect("regex"));
static NODE_CAUSE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\[cause\]: ").expect("regex"));
static LINE_MARKERS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r" ---> |\*\* \(EXIT\) |nested exception is ").expect("regex"));
/// ActiveJob's DeserializationError quotes the message of the error that stopped it (a record not
/// found, a lost connection) after this (activejob/lib/active_job/arguments.rb); its line only, so
/// that a backtrace below (a `timeout.rb` frame) does not speak for the cause.
const ACTIVEJOB: &str = "Error while trying to deserialize arguments: ";
/// Every marker above as a literal: one pass says whether a text is a chain at all (most are
/// not, and then none of the searches above runs).
static ANY_MARKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"The above exception|During handling of the above|\nNext |Caused by|\[cause\]: | ---> |\*\* \(EXIT\) |nested exception is |Error while trying to deserialize arguments: ").expect("regex")
});

/// The part of `text` that holds its root cause when `text` is a chain of wrapped errors, else
/// `None`. Always a subslice of `text`, so that match offsets in it carry over.
pub fn innermost(text: &str) -> Option<&str> {
    if !ANY_MARKER.is_match(text) {
        return None;
    }
    let nonempty = |s: &str| !s.trim().is_empty();
    if let Some(m) = PYTHON.find(text) {
        return Some(&text[..m.start()]).filter(|s| nonempty(s));
    }
    if let Some(m) = PHP_NEXT.find(text) {
        return Some(&text[..m.start()]).filter(|s| nonempty(s));
    }
    if let Some(m) = ANYHOW.find(text) {
        let rest = &text[m.end()..];
        let list = match ANYHOW_END.find(rest) {
            Some(end) => &rest[..end.start()],
            None => rest,
        };
        let last = list.lines().rev().find(|l| nonempty(l))?;
        return Some(subslice(text, last.trim()));
    }
    if let Some(m) = CAUSED_BY.find_iter(text).last() {
        return Some(&text[m.end()..]).filter(|s| nonempty(s));
    }
    if let Some(m) = NODE_CAUSE.find_iter(text).last() {
        return Some(&text[m.end()..]).filter(|s| nonempty(s));
    }
    if let Some(m) = LINE_MARKERS.find_iter(text).last() {
        let rest = &text[m.end()..];
        let line = rest.lines().next().unwrap_or(rest);
        return Some(subslice(text, line)).filter(|s| nonempty(s));
    }
    if let Some(at) = text.find(ACTIVEJOB) {
        let rest = &text[at + ACTIVEJOB.len()..];
        let line = rest.lines().next().unwrap_or(rest);
        return Some(subslice(text, line)).filter(|s| nonempty(s));
    }
    None
}

/// `part` (a slice of `text`, maybe trimmed) as a slice of `text`.
fn subslice<'a>(text: &'a str, part: &str) -> &'a str {
    let start = part.as_ptr() as usize - text.as_ptr() as usize;
    &text[start..start + part.len()]
}

#[cfg(test)]
mod tests {
    use super::innermost;

    #[test]
    fn finds_the_root_cause_of_each_chain() {
        let cases = [
            (
                "org.x.WrapperException: could not execute; nested exception is java.net.SocketException: Connection reset\n\tat a.b(C.java:1)",
                Some("java.net.SocketException: Connection reset"),
            ),
            (
                "a.Outer: outer\nCaused by: b.Middle: middle\n\tat x\nCaused by: c.Inner: inner\n\tat y",
                Some("c.Inner: inner\n\tat y"),
            ),
            (
                "Error: failed\nCaused by:\n    0: middle\n    1: operation timed out\nStack backtrace:\n   0: anyhow::x",
                Some("1: operation timed out"),
            ),
            (
                "Traceback:\nOperationalError: closed\n\nThe above exception was the direct cause of the following exception:\n\nWrapped: x",
                Some("Traceback:\nOperationalError: closed\n\n"),
            ),
            (
                "PDOException: gone away\nStack trace:\n#0 x\nNext QueryException: gone away",
                Some("PDOException: gone away\nStack trace:\n#0 x\n"),
            ),
            (
                "TypeError: fetch failed\n  [cause]: ConnectTimeoutError: x\n  }",
                Some("ConnectTimeoutError: x\n  }"),
            ),
            (
                "Outer: o\n ---> Inner: i\n ---> Innermost: n\n   at X.Y()",
                Some("Innermost: n"),
            ),
            (
                "** (exit) exited in: GenServer.call(X, :y, 5000)\n    ** (EXIT) time out\n    (elixir) lib",
                Some("time out"),
            ),
            (
                "ActiveJob::DeserializationError: Error while trying to deserialize arguments: Couldn't find User with 'id'=42\n/app/vendor/ruby/timeout.rb:43:in `timeout'",
                Some("Couldn't find User with 'id'=42"),
            ),
            // A marker at the very end: no cause (and no slice outside the text).
            ("Outer: o\n ---> ", None),
            (
                "ActiveJob::DeserializationError: Error while trying to deserialize arguments: ",
                None,
            ),
            ("plain error: no chain here", None),
        ];
        for (text, want) in cases {
            assert_eq!(innermost(text), want, "{text}");
        }
    }
}
