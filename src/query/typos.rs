//! Typos in a `--where`: a path that no message has (`.jsno.amount`, `.json.amount_cent`)
//! selects nothing, silently. The paths an expression reads from the record are found in its
//! text; each is looked up in every message the expression runs on until one has it, and at
//! the end of the run a path that was null or absent in all of them is reported on stderr,
//! with the closest field that exists (as `closest` does for URL parameters).
//!
//! Only paths the record itself is the input of are looked at: at the top of the expression or
//! of a parenthesised group, inside `select(…)`, and not after a `|` (`.items[] | .price` reads
//! `.price` from an item, not from the record). An expression with `def` is not looked at.

use jaq_json::Val;

/// A path the expression reads from the record: its text as written and its field names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Path {
    pub text: String,
    pub fields: Vec<String>,
}

/// What was seen of one path so far.
#[derive(Clone, Debug, Default)]
struct Seen {
    /// Some message has it (not null).
    found: bool,
    /// Why it is missing, from the first message that lacks it.
    why: Option<String>,
}

/// The paths of an expression and what the messages examined so far had of them.
#[derive(Debug, Default)]
pub struct Tracker {
    paths: Vec<Path>,
    seen: Vec<Seen>,
    examined: u64,
}

impl Tracker {
    pub fn new(code: &str) -> Tracker {
        let paths = rooted_paths(code);
        Tracker {
            seen: vec![Seen::default(); paths.len()],
            paths,
            examined: 0,
        }
    }

    /// Whether any path is still unseen (the caller then builds the input for [`observe`]).
    pub fn wants(&self) -> bool {
        self.seen.iter().any(|s| !s.found)
    }

    /// Look the paths not yet found up in `input` (the record the expression runs on);
    /// `fields`: the names a record has, for the hint at the top level.
    pub fn observe(&mut self, input: &Val, fields: &[&str]) {
        self.examined += 1;
        for (p, s) in self.paths.iter().zip(self.seen.iter_mut()) {
            if s.found {
                continue;
            }
            // Why it is missing is worked out once, from the first message that lacks it.
            match lookup(input, &p.fields, s.why.is_none().then_some(fields)) {
                Ok(()) => s.found = true,
                Err(why) => {
                    s.why.get_or_insert(why);
                }
            }
        }
    }

    /// One line per path that every message examined lacked.
    pub fn warnings(&self, flag: &str) -> Vec<String> {
        if self.examined == 0 {
            return Vec::new();
        }
        let n = self.examined;
        let all = if n == 1 {
            "the one message examined".to_string()
        } else {
            format!("all {n} messages examined")
        };
        self.paths
            .iter()
            .zip(&self.seen)
            .filter(|(_, s)| !s.found)
            .map(|(p, s)| {
                let why = s
                    .why
                    .as_deref()
                    .map(|w| format!(" ({w})"))
                    .unwrap_or_default();
                format!(
                    "warning: {flag}: `{}` is null or absent in {all}{why}",
                    p.text
                )
            })
            .collect()
    }
}

/// Whether `fields` lead to a value that is not null in `input`; if not, why (worked out only
/// when `top`, the names a record has, is given).
fn lookup(input: &Val, fields: &[String], top: Option<&[&str]>) -> Result<(), String> {
    let mut cur = input;
    for (i, f) in fields.iter().enumerate() {
        let Some(top) = top else {
            // Only whether it is there.
            match cur {
                Val::Obj(m) => match m.get(&Val::from(f.clone())) {
                    Some(v) if *v != Val::Null => {
                        cur = v;
                        continue;
                    }
                    _ => return Err(String::new()),
                },
                _ => return Err(String::new()),
            }
        };
        let at = if i == 0 {
            String::new()
        } else {
            format!(".{}", fields[..i].join("."))
        };
        let next = match cur {
            Val::Obj(m) => m.get(&Val::from(f.clone())),
            Val::Null if i > 0 => {
                return Err(if at == ".json" {
                    "`.json` is null: the body is not JSON".into()
                } else {
                    format!("`{at}` is null")
                });
            }
            _ if i > 0 => return Err(format!("`{at}` is not an object")),
            _ => None,
        };
        match next {
            Some(v) if *v != Val::Null => cur = v,
            Some(_) => return Err(format!("`{at}.{f}` is null")),
            None => {
                let keys: Vec<String> = match cur {
                    Val::Obj(m) if i > 0 => m.keys().filter_map(text).collect(),
                    _ => top.iter().map(|s| s.to_string()).collect(),
                };
                let guess = crate::text::closest(f, keys.iter().map(String::as_str))
                    .map(|g| format!("; did you mean `{g}`?"))
                    .unwrap_or_default();
                return Err(if i == 0 {
                    format!("no message has `.{f}`{guess}")
                } else {
                    format!("`{at}` has no `{f}`{guess}")
                });
            }
        }
    }
    Ok(())
}

fn text(v: &Val) -> Option<String> {
    match v {
        Val::TStr(b) | Val::BStr(b) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}

/// A group the scanner is inside: whether the record is its input, and whether a `|` came.
#[derive(Clone, Copy)]
struct Group {
    rooted: bool,
    piped: bool,
}

/// The paths of `code` whose input is the record (see the module's comment).
pub fn rooted_paths(code: &str) -> Vec<Path> {
    let s: Vec<char> = code.chars().collect();
    if has_word(code, "def") {
        return Vec::new();
    }
    let mut out: Vec<Path> = Vec::new();
    let mut stack = vec![Group {
        rooted: true,
        piped: false,
    }];
    let mut i = 0;
    // The last character that was not a space (to tell `.a` from `x.a` and `$v.a`).
    let mut prev: Option<char> = None;
    let mut prev_word = String::new();
    while i < s.len() {
        let c = s[i];
        let top = *stack.last().expect("the outer group");
        match c {
            '"' => {
                i = skip_string(&s, i);
                prev = Some('"');
                continue;
            }
            '#' => {
                while i < s.len() && s[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '|' => {
                if let Some(g) = stack.last_mut() {
                    g.piped = true;
                }
            }
            '(' | '[' | '{' => {
                let call = c == '(' && prev.is_some_and(|p| p.is_alphanumeric() || p == '_');
                let rooted = top.rooted
                    && !top.piped
                    && (!call || prev_word == "select" || is_keyword(&prev_word))
                    // `x[…]`, `.a[…]`: an index, not an array.
                    && !(c == '[' && prev.is_some_and(|p| !is_operator(p)));
                stack.push(Group {
                    rooted,
                    piped: false,
                });
            }
            ')' | ']' | '}' if stack.len() > 1 => {
                stack.pop();
            }
            ';' | ',' => {
                // `if`/`reduce` arguments, array items: each starts afresh in its group.
                if let Some(g) = stack.last_mut()
                    && c == ','
                {
                    g.piped = false;
                }
            }
            '.' if starts_term(prev) || is_keyword(&prev_word) => {
                let (path, end) = read_path(&s, i);
                if top.rooted
                    && !top.piped
                    && let Some(p) = path
                    && !out.contains(&p)
                {
                    out.push(p);
                }
                i = end;
                prev = Some('x');
                prev_word.clear();
                continue;
            }
            _ => {}
        }
        let word = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
        if word(c) {
            // A new word starts after anything that is not part of one (a space too).
            if i == 0 || !word(s[i - 1]) {
                prev_word.clear();
            }
            prev_word.push(c);
        } else if !c.is_whitespace() {
            prev_word.clear();
        }
        if !c.is_whitespace() {
            prev = Some(c);
        }
        i += 1;
    }
    out
}

/// Whether a `.` after `prev` starts a new term (`.a`) rather than continuing one (`x.a`).
fn starts_term(prev: Option<char>) -> bool {
    match prev {
        None => true,
        Some(p) => {
            !(p.is_alphanumeric() || matches!(p, '_' | '$' | ')' | ']' | '}' | '"' | '?' | '.'))
        }
    }
}

fn is_operator(c: char) -> bool {
    matches!(
        c,
        '(' | '[' | '{' | ',' | ';' | ':' | '|' | '=' | '<' | '>' | '+' | '-' | '*' | '/' | '%'
    )
}

fn is_keyword(w: &str) -> bool {
    matches!(
        w,
        "if" | "then" | "elif" | "else" | "and" | "or" | "not" | "try" | "catch"
    )
}

fn has_word(code: &str, word: &str) -> bool {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| w == word)
}

/// The end of the string literal starting at `i` (jq's `\(…)` interpolations are skipped with
/// it: a path inside one is not looked at).
fn skip_string(s: &[char], mut i: usize) -> usize {
    i += 1;
    while i < s.len() {
        match s[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// The simple path starting at the `.` at `i`: `.a.b`, `."a"`, `.["a"]`, `.a["b"]`, with `?`
/// allowed; it ends at the first other segment (`[0]`, `[]`). None when it names no field.
fn read_path(s: &[char], mut i: usize) -> (Option<Path>, usize) {
    let start = i;
    let mut fields = Vec::new();
    loop {
        let dot = i < s.len() && s[i] == '.';
        let j = if dot { i + 1 } else { i };
        if j < s.len() && (s[j].is_alphabetic() || s[j] == '_') && dot {
            let mut k = j;
            while k < s.len() && (s[k].is_alphanumeric() || s[k] == '_') {
                k += 1;
            }
            fields.push(s[j..k].iter().collect());
            i = k;
        } else if j < s.len() && s[j] == '"' && dot {
            match quoted(s, j) {
                Some((name, k)) => {
                    fields.push(name);
                    i = k;
                }
                None => break,
            }
        } else if j + 1 < s.len() && s[j] == '[' && s[j + 1] == '"' && (dot || !fields.is_empty()) {
            match quoted(s, j + 1) {
                Some((name, k)) if k < s.len() && s[k] == ']' => {
                    fields.push(name);
                    i = k + 1;
                }
                _ => break,
            }
        } else {
            break;
        }
        while i < s.len() && s[i] == '?' {
            i += 1;
        }
    }
    if fields.is_empty() {
        // `.`, `..`, `.[]`: no field; go past the dot.
        return (None, start + 1);
    }
    let text: String = s[start..i].iter().filter(|c| **c != '?').collect();
    (Some(Path { text, fields }), i)
}

/// A plain string literal at `i` (no escapes, no interpolation) and the index after it.
fn quoted(s: &[char], i: usize) -> Option<(String, usize)> {
    let mut k = i + 1;
    while k < s.len() && s[k] != '"' {
        if s[k] == '\\' {
            return None;
        }
        k += 1;
    }
    (k < s.len()).then(|| (s[i + 1..k].iter().collect(), k + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(code: &str) -> Vec<String> {
        rooted_paths(code).into_iter().map(|p| p.text).collect()
    }

    #[test]
    fn the_paths_the_record_is_the_input_of() {
        for (code, want) in [
            (".json.amount_cents > 100000", vec![".json.amount_cents"]),
            (
                r#".json.a == 1 and (.attrs.tenant == "x" or .json.b)"#,
                vec![".json.a", ".attrs.tenant", ".json.b"],
            ),
            (
                r#".attrs["dlqctl-x"] == "1""#,
                vec![r#".attrs["dlqctl-x"]"#],
            ),
            (r#"."json".a"#, vec![r#"."json".a"#]),
            (".json.items[0].price > 5", vec![".json.items"]),
            (".json.items[] | .price > 5", vec![".json.items"]),
            (".attributes | any(.name == \"t\")", vec![".attributes"]),
            ("select(.json.x) | .y", vec![".json.x"]),
            ("map(.x) | length", vec![]),
            ("$__loc__.file", vec![]),
            ("def f: .x; f", vec![]),
            (r#".error_text | test("a.b")"#, vec![".error_text"]),
            ("[.json.a, .json.b] | add", vec![".json.a", ".json.b"]),
            (
                "if .json.a then .json.b else .json.c end",
                vec![".json.a", ".json.b", ".json.c"],
            ),
            (".json?.a? // 0", vec![".json.a"]),
            ("(.json | .a) and .id", vec![".json", ".id"]),
            (".. | numbers", vec![]),
        ] {
            assert_eq!(paths(code), want, "{code}");
        }
    }

    fn record() -> Val {
        let v = serde_json::json!({
            "id": "m-1",
            "json": { "amount_cents": 5, "currency": "EUR", "none": null },
            "attrs": { "tenant": "acme" },
        });
        serde::Deserialize::deserialize(v).unwrap()
    }

    #[test]
    fn a_path_no_message_has_is_said_with_the_closest_field() {
        const FIELDS: [&str; 4] = ["id", "json", "attrs", "body"];
        let mut t = Tracker::new(
            ".jsno.amount_cents > 1 and .json.amount_cent > 1 and .json.none and .attrs.tenant and .id.x",
        );
        assert!(t.wants());
        assert!(
            t.warnings("--where").is_empty(),
            "nothing examined, nothing said"
        );
        t.observe(&record(), &FIELDS);
        t.observe(&record(), &FIELDS);
        let w = t.warnings("--where");
        assert_eq!(
            w,
            [
                "warning: --where: `.jsno.amount_cents` is null or absent in all 2 messages examined (no message has `.jsno`; did you mean `json`?)",
                "warning: --where: `.json.amount_cent` is null or absent in all 2 messages examined (`.json` has no `amount_cent`; did you mean `amount_cents`?)",
                "warning: --where: `.json.none` is null or absent in all 2 messages examined (`.json.none` is null)",
                "warning: --where: `.id.x` is null or absent in all 2 messages examined (`.id` is not an object)",
            ]
        );
        // One message with the path is enough.
        let mut t = Tracker::new(".json.rare == 1");
        t.observe(&record(), &FIELDS);
        let with: Val =
            serde::Deserialize::deserialize(serde_json::json!({"json": {"rare": 1}})).unwrap();
        t.observe(&with, &FIELDS);
        assert!(!t.wants());
        assert!(t.warnings("--where").is_empty());
    }
}
