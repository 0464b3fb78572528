//! The text `edit` opens in the editor, and the copy read back from it.
//!
//! Only what a person may change is JSON: the body (a JSON body as JSON, indented, its bytes
//! otherwise untouched: numbers and escapes stay as they were), the attributes, the key and
//! the group. What must not change (the stable id and where it lives, the native id, the
//! error, the counts, dlqctl's own `dlqctl-*` attributes) is listed in `#` comment lines
//! above it, and taken from the message as it was.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::message::{Attribute, Message, RecordAttribute};
use crate::text::escape_controls;

/// Whether attribute `a` of `m` is kept out of the editor: dlqctl's own (`dlqctl-*`: the
/// stable id, the loop guard's count) and the one the configured stable id is read from.
pub fn hidden(m: &Message, a: &Attribute) -> bool {
    a.name.starts_with("dlqctl-") || m.id_attribute.as_deref() == Some(a.name.as_str())
}

/// The editor's text for `m` of `queue`.
pub fn render(m: &Message, queue: &str) -> String {
    let mut out = comments(m, queue);
    let mut rest = serde_json::Map::new();
    let body = match body_json(&m.body) {
        Some(pretty) => {
            rest.insert("body_encoding".into(), "json".into());
            indent_tail(&pretty, "  ")
        }
        None => {
            let (text, enc) = match std::str::from_utf8(&m.body) {
                Ok(t) => (t.to_string(), "utf8"),
                Err(_) => (B64.encode(&m.body), "base64"),
            };
            rest.insert("body_encoding".into(), enc.into());
            serde_json::Value::String(text).to_string()
        }
    };
    let attrs: Vec<RecordAttribute> = m
        .attributes
        .iter()
        .filter(|a| !hidden(m, a))
        .map(RecordAttribute::from)
        .collect();
    rest.insert(
        "attributes".into(),
        serde_json::to_value(attrs).unwrap_or_default(),
    );
    if let Some(k) = &m.key {
        let (text, enc) = match std::str::from_utf8(k) {
            Ok(t) => (t.to_string(), "utf8"),
            Err(_) => (B64.encode(k), "base64"),
        };
        rest.insert("key".into(), text.into());
        rest.insert("key_encoding".into(), enc.into());
    }
    if let Some(g) = &m.group {
        rest.insert("group".into(), g.clone().into());
    }
    let rest = serde_json::to_string_pretty(&serde_json::Value::Object(rest)).unwrap_or_default();
    let inner = rest
        .strip_prefix("{\n")
        .and_then(|r| r.strip_suffix("\n}"))
        .unwrap_or_default();
    out.push_str(&format!("{{\n  \"body\": {body},\n{inner}\n}}\n"));
    out
}

/// The `#` lines: what the file is, what to do, and what is kept as it is.
fn comments(m: &Message, queue: &str) -> String {
    let c = |s: &str| escape_controls(s);
    let mut facts = vec![format!("id {}", c(&m.id))];
    if !m.native_id.is_empty() && m.native_id != m.id {
        facts.push(format!("native id {}", c(&m.native_id)));
    }
    if let Some(s) = &m.source {
        facts.push(format!("source {}", c(s)));
    }
    if let Some(n) = m.receive_count {
        facts.push(format!("receive count {n}"));
    }
    if let Some(p) = m.partition {
        facts.push(format!("partition {p}"));
    }
    if let Some(d) = &m.dedup_id {
        facts.push(format!("deduplication id {}", c(d)));
    }
    let mut s = format!(
        "# dlqctl edit: message {} of {}\n\
         # Change the body, the attributes, the key or the group; save and quit. The diff and the\n\
         # plan follow, then a question. Lines starting with # are ignored; an unchanged file does\n\
         # nothing. Kept as they are: {}\n",
        c(&m.id),
        c(queue),
        facts.join(" · ")
    );
    if let Some(e) = m.error_text() {
        let e: String = c(&e).chars().take(300).collect();
        s.push_str(&format!("#   error: {e}\n"));
    }
    for a in m.attributes.iter().filter(|a| hidden(m, a)) {
        s.push_str(&format!("#   {} = {}\n", c(&a.name), c(&a.value.display())));
    }
    s
}

/// What the editable part may hold: anything else is a mistake worth saying.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Editable<'a> {
    #[serde(borrow)]
    body: &'a RawValue,
    body_encoding: String,
    #[serde(default)]
    attributes: Vec<RecordAttribute>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    key_encoding: Option<String>,
    #[serde(default)]
    group: Option<String>,
}

/// The copy the saved `text` describes: `original` with the body, attributes, key and group
/// as edited. Or why the text is not one.
pub fn parse(text: &str, original: &Message) -> Result<Message, String> {
    // Comment lines become empty lines, so that a parse error's line is the file's.
    let json: String = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with('#') {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let e: Editable<'_> = serde_json::from_str(&json).map_err(|e| {
        format!(
            "the edited text is not valid ({}): the body, attributes, key and group as JSON, with `#` comment lines",
            escape_controls(&e.to_string())
        )
    })?;
    let raw = e.body.get();
    let body = match e.body_encoding.as_str() {
        // Unchanged: the body's own bytes (its spacing included).
        "json" if body_json(&original.body).is_some_and(|p| indent_tail(&p, "  ") == raw) => {
            original.body.clone()
        }
        "json" => minify(raw).into_bytes(),
        "utf8" => serde_json::from_str::<String>(raw)
            .map_err(|_| "with body_encoding utf8, the body is a JSON string".to_string())?
            .into_bytes(),
        "base64" => {
            let s: String = serde_json::from_str(raw)
                .map_err(|_| "with body_encoding base64, the body is a JSON string".to_string())?;
            B64.decode(s.trim())
                .map_err(|e| format!("the body is not valid base64 ({e})"))?
        }
        other => {
            return Err(format!(
                "body_encoding `{}` is none of json, utf8, base64",
                escape_controls(other)
            ));
        }
    };
    let mut visible = Vec::new();
    for r in e.attributes {
        let a = Attribute::try_from(r)?;
        if hidden(original, &a) {
            return Err(format!(
                "attribute `{}` is not the edit's to set (dlqctl's own, or where the stable id is read from)",
                escape_controls(&a.name)
            ));
        }
        visible.push(a);
    }
    let key = match (e.key, e.key_encoding.as_deref()) {
        (None, _) => None,
        (Some(k), None | Some("utf8")) => Some(k.into_bytes()),
        (Some(k), Some("base64")) => Some(
            B64.decode(k.trim())
                .map_err(|e| format!("the key is not valid base64 ({e})"))?,
        ),
        (Some(_), Some(other)) => {
            return Err(format!(
                "key_encoding `{}` is neither utf8 nor base64",
                escape_controls(other)
            ));
        }
    };
    Ok(Message {
        body,
        attributes: with_hidden(original, visible),
        key,
        group: e.group,
        ..original.clone()
    })
}

/// The edited attributes with the hidden ones of `original` back where they were.
fn with_hidden(original: &Message, mut visible: Vec<Attribute>) -> Vec<Attribute> {
    for (i, a) in original.attributes.iter().enumerate() {
        if hidden(original, a) {
            visible.insert(i.min(visible.len()), a.clone());
        }
    }
    visible
}

/// Whether `copy` differs from `original` in anything an edit can change.
pub fn changed(original: &Message, copy: &Message) -> bool {
    original.body != copy.body
        || original.attributes != copy.attributes
        || original.key != copy.key
        || original.group != copy.group
}

/// A JSON body, indented for people (its tokens, numbers and escapes as they are); None when
/// the body is not JSON.
fn body_json(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<serde::de::IgnoredAny>(body).ok()?;
    Some(pretty(std::str::from_utf8(body).ok()?))
}

/// Every line of `s` after the first indented by `by`.
fn indent_tail(s: &str, by: &str) -> String {
    s.replace('\n', &format!("\n{by}"))
}

/// Valid JSON `s` re-indented by two spaces; nothing but whitespace outside strings changes.
fn pretty(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    let mut depth = 0usize;
    let (mut in_str, mut escaped) = (false, false);
    let mut chars = s.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    while let Some(ch) = chars.next() {
        if in_str {
            out.push(ch);
            match (escaped, ch) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match ch {
            ' ' | '\t' | '\n' | '\r' => {}
            '"' => {
                in_str = true;
                out.push(ch);
            }
            '{' | '[' => {
                out.push(ch);
                // An empty object or array stays on its line.
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('}' | ']')) {
                    out.push(chars.next().unwrap_or_default());
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(ch);
            }
            ',' => {
                out.push(ch);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            other => out.push(other),
        }
    }
    out
}

/// Valid JSON `s` without the whitespace outside strings.
fn minify(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let (mut in_str, mut escaped) = (false, false);
    for ch in s.chars() {
        if in_str {
            match (escaped, ch) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            out.push(ch);
        } else if ch == '"' {
            in_str = true;
            out.push(ch);
        } else if !ch.is_whitespace() {
            out.push(ch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::AttrValue;

    fn message(body: &str) -> Message {
        Message {
            id: "ord-1".into(),
            native_id: "17".into(),
            body: body.as_bytes().to_vec(),
            attributes: vec![
                Attribute {
                    name: "tenant".into(),
                    value: AttrValue::text("acme"),
                },
                Attribute {
                    name: "dlqctl-redrive-count".into(),
                    value: AttrValue::text("2"),
                },
            ],
            group: Some("cust-1".into()),
            ..Message::default()
        }
    }

    #[test]
    fn a_json_body_is_json_and_comes_back_byte_for_byte() {
        let m = message(
            r#"{"order": 2, "price": 1.50, "big": 123456789012345678901234, "s": "\u00e9\"x", "e": [], "o": {}}"#,
        );
        let text = render(&m, "postgres://db?table=dlq");
        assert!(text.contains("\"body\": {\n    \"order\": 2,"), "{text}");
        assert!(
            text.contains("\"price\": 1.50"),
            "numbers as they were: {text}"
        );
        assert!(!text.contains("\"dlqctl-redrive-count\""), "{text}");
        assert!(text.contains("#   dlqctl-redrive-count = 2"), "{text}");
        assert!(!text.contains("native_id"), "{text}");
        let copy = parse(&text, &m).unwrap();
        assert_eq!(copy, m, "unchanged: the same message, the same bytes");
        assert!(!changed(&m, &copy));

        let edited = text.replace("\"order\": 2", "\"order\": 200");
        let copy = parse(&edited, &m).unwrap();
        assert_eq!(
            std::str::from_utf8(&copy.body).unwrap(),
            r#"{"order":200,"price":1.50,"big":123456789012345678901234,"s":"\u00e9\"x","e":[],"o":{}}"#
        );
        assert_eq!(copy.attributes, m.attributes, "the hidden count is back");
        assert_eq!((copy.id.as_str(), copy.native_id.as_str()), ("ord-1", "17"));
        assert!(changed(&m, &copy));
    }

    #[test]
    fn text_and_binary_bodies_and_mistakes() {
        let m = message("plain text");
        let text = render(&m, "q");
        assert!(text.contains("\"body\": \"plain text\""), "{text}");
        assert!(text.contains("\"body_encoding\": \"utf8\""), "{text}");
        assert_eq!(parse(&text, &m).unwrap(), m);

        let mut b = message("");
        b.body = vec![0, 255, 7];
        let text = render(&b, "q");
        assert!(text.contains("\"body_encoding\": \"base64\""), "{text}");
        assert_eq!(parse(&text, &b).unwrap(), b);

        let e = parse(&text.replace("\"group\"", "\"id\": \"x\", \"group\""), &b).unwrap_err();
        assert!(e.contains("unknown field `id`"), "{e}");
        let e = parse(
            &text.replace(
                "\"attributes\": [",
                "\"attributes\": [{\"name\": \"dlqctl-redrive-count\", \"value\": \"0\"},",
            ),
            &b,
        )
        .unwrap_err();
        assert!(e.contains("dlqctl-redrive-count"), "{e}");
        let e = parse("{\n  \"body\": 1,,\n}", &b).unwrap_err();
        assert!(e.contains("line 2"), "{e}");
    }
}
