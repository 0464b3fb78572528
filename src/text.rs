//! Small text helpers every layer uses: control characters escaped for one-line messages, and
//! the likely intended word for a typo. The bottom layer: nothing here imports from the crate.

/// `s` with each control character (line feed, carriage return, tab, NUL, …) written as its
/// Rust escape (`\n`), for messages that must stay on one line.
pub fn escape_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// [`escape_controls`] for a table cell, whose line breaks are its own: every control
/// character but `\n` escaped (a message's id or error with an ESC in it would otherwise
/// drive the terminal).
pub fn escape_controls_but_newlines(s: &str) -> String {
    if !s.chars().any(|c| c.is_control() && c != '\n') {
        return s.to_string();
    }
    s.split('\n')
        .map(escape_controls)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The closest of `known` to `word`, when it is close enough to be a likely typo.
pub fn closest<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|k| (strsim::damerau_levenshtein(word, k), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4) && *d < k.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}
