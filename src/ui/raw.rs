//! The messages view's raw body (`v`): the body exactly as stored, but never written raw to
//! the terminal.

use std::fmt::Write;

/// `body` byte for byte: text as it is, each control character as its Rust escape (`\n`,
/// `\u{1b}`, with a line break after each `\n`) and each byte that is not UTF-8 as `\xNN`.
pub fn raw_body(body: &[u8]) -> String {
    if body.is_empty() {
        return "(empty body)".into();
    }
    let mut out = String::with_capacity(body.len() + 16);
    for chunk in body.utf8_chunks() {
        for line in chunk.valid().split_inclusive('\n') {
            out.push_str(&crate::text::escape_controls(line));
            if line.ends_with('\n') {
                out.push('\n');
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::raw_body;

    #[test]
    fn text_stays_and_control_and_non_utf8_bytes_are_escaped() {
        assert_eq!(raw_body(br#"{"a":1}"#), r#"{"a":1}"#);
        assert_eq!(raw_body(b"a\nb\r\n"), "a\\n\nb\\r\\n\n");
        assert_eq!(raw_body(b"\x1b[2Jok\xff\xfe"), "\\u{1b}[2Jok\\xff\\xfe");
        assert_eq!(raw_body("café".as_bytes()), "café");
        assert_eq!(raw_body(b""), "(empty body)");
    }
}
