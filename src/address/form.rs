//! What every backend's address type answers, whatever backend it belongs to: how it is shown
//! (its `Display`, secrets left out), its short name for a narrow table, how a record keeps it,
//! and the few questions a backend's own form answers. The address registry
//! (`registry.rs`) dispatches to these; nothing here names a backend.
//!
//! A bottom file of the address layer: a backend's own `address.rs` (in its folder) implements
//! [`Form`] and reports errors with [`invalid`] without naming the registry that names it.

use std::fmt;

use crate::error::Error;
use crate::text::escape_controls;

/// One backend's parsed address.
pub trait Form: fmt::Display {
    /// A short name for a narrow table: the queue, the topic, the table. Not an address: the
    /// full one is shown where there is room, and `--output wide` always shows it.
    fn brief(&self) -> String;
    /// The address as a record keeps it (the audit trail): what still says where the queue is
    /// once the shell that ran the command is gone (a file by its absolute path).
    fn recorded(&self) -> String {
        self.to_string()
    }
    /// Why a redrive cannot read this address, where it names a slice of its queue (Kafka's
    /// `from`/`to`/`since`/`until`): a redrive continues from where the last one stopped, and
    /// a slice is for reading and replaying.
    fn redrive_slice_refusal(&self) -> Option<&'static str> {
        None
    }
    /// The same queue, read only in `partition`, where the queue has partitions (Kafka), so
    /// that a move of one message reads and settles nothing elsewhere.
    fn confine_to_partition(&mut self, _partition: i32) {}
}

/// An address error: the input trimmed and redacted, and control characters in it and in the
/// reason escaped, so that the error stays on one line whatever was pasted or decoded.
/// (tests/it/bad_input.rs found `"postgre://h\n"` and `postgres://h/db?hostaddr=%0A` printing
/// a line break inside the error.)
pub fn invalid(input: &str, reason: &str) -> Error {
    Error::InvalidAddress {
        input: escape_controls(&crate::secrets::redact(input.trim())),
        reason: escape_controls(reason),
    }
}

/// Whether a URL's user or password (as the URL parser keeps it, still percent-encoded) has a
/// `%` that starts no escape (`%zz`, a `%` at the end): the parser keeps such a `%` as typed,
/// and a password sent that way is refused by the server as if it were wrong (an
/// authentication failure, exit 3, for what is a typo in the URL).
pub fn bad_percent_encoding(part: &str) -> bool {
    let b = part.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        c == b'%'
            && !(b.len() > i + 2 && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit())
    })
}

/// Why a URL with [`bad_percent_encoding`] in its `what` ("user" or "password") is refused,
/// and what to do (`elsewhere`: where else the password may come from); the value itself is
/// never shown.
pub fn bad_percent_reason(what: &str, elsewhere: &str) -> String {
    format!(
        "the {what} in the URL is not valid percent-encoding (a `%` not followed by two hex digits): write a `%` in it as `%25` (and `@ : / ? #` as `%40 %3A %2F %3F %23`), or leave the password out of the URL and give it in {elsewhere}"
    )
}

/// The user and password of `u` checked with [`bad_percent_encoding`]: the reason for the
/// first that fails.
pub fn check_userinfo_encoding(u: &url::Url, elsewhere: &str) -> Result<(), String> {
    for (what, part) in [
        ("user", u.username()),
        ("password", u.password().unwrap_or("")),
    ] {
        if bad_percent_encoding(part) {
            return Err(bad_percent_reason(what, elsewhere));
        }
    }
    Ok(())
}

/// A query parameter given twice (`?queue=default&queue=nope`): refused on every backend's
/// address, where the backend's own parsing would let the last one win (or the first) without
/// a word. Names are compared as decoded (`%71ueue` is `queue`); an empty name is left to the
/// backend, which refuses it as unknown.
pub fn refuse_repeated_parameter(input: &str) -> Result<(), Error> {
    let Some((_, query)) = input.split_once('?') else {
        return Ok(());
    };
    let query = query.split('#').next().unwrap_or_default();
    let mut seen: Vec<std::borrow::Cow<'_, str>> = Vec::new();
    for (name, _) in url::form_urlencoded::parse(query.as_bytes()) {
        if name.is_empty() {
            continue;
        }
        if seen.contains(&name) {
            let shown = escape_controls(&name);
            return Err(
                invalid(input, &format!("`{shown}` is given twice")).hinted(format!(
                    "give `{shown}=` once: dlqctl does not pick one of two values"
                )),
            );
        }
        seen.push(name);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_parameter_is_refused_by_name() {
        for (input, name) in [
            (
                "redis://h:6379/0?system=sidekiq&queue=default&queue=nope",
                "queue",
            ),
            ("amqp://h/%2F?queue=a&%71ueue=b", "queue"),
            ("kafka://h:9092/t?from=1&to=5&from=2", "from"),
            (
                "postgres://h/db?table=t&sslmode=require&sslmode=disable",
                "sslmode",
            ),
            (
                "postgres://h/db?table=t&options[search_path]=a&options[search_path]=b",
                "options[search_path]",
            ),
        ] {
            let e = refuse_repeated_parameter(input).expect_err(input);
            assert_eq!(e.exit_code(), 2, "{e}");
            assert!(
                e.to_string().contains(&format!("`{name}` is given twice")),
                "{e}"
            );
            assert!(
                e.hints()[0].contains(&format!("give `{name}=` once")),
                "{e}"
            );
        }
        for input in [
            "redis://h:6379/0?system=sidekiq&queue=default",
            "postgres://h/db?table=t&options[a]=1&options[b]=2",
            "sqs://orders-dlq",
            "kafka://h:9092/t?from=1#from=2",
        ] {
            refuse_repeated_parameter(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        }
    }
}
