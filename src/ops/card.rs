//! One message for people (`peek` and `tail` at a terminal, `dlqctl ui`'s detail): a header
//! line, the facts, the error, the attributes and the body.

use chrono::Utc;

use crate::classify::Classifier;
use crate::message::{AttrValue, Message, hex};

/// `lead` then `text`, wrapped to `width` with the lines after the first under the text (a
/// long value breaks at spaces, or at a URL's or a class name's separators), and a line feed.
fn hanging(lead: &str, text: &str, width: Option<usize>) -> String {
    let indent = lead.chars().count();
    match width {
        Some(w) => {
            let lines = crate::output::table::wrap(text, w.saturating_sub(indent).max(24), 6);
            format!(
                "{lead}{}\n",
                lines.join(&format!("\n{}", " ".repeat(indent)))
            )
        }
        None => format!("{lead}{text}\n"),
    }
}

/// One message for people: a header line, the facts, the body (JSON pretty-printed, binary
/// as a hex preview, control characters escaped).
pub fn card(m: &Message, c: &Classifier, color: bool, width: Option<usize>) -> String {
    let now = Utc::now();
    let (b, r) = if color {
        ("\x1b[1m", "\x1b[0m")
    } else {
        ("", "")
    };
    // Anyone's bytes (ids, names, errors) with their control characters escaped: an ESC
    // would drive the terminal.
    let esc = crate::text::escape_controls;
    let mut s = format!("{b}── {}{r}", esc(&m.id));
    if m.native_id != m.id && !m.native_id.is_empty() {
        s.push_str(&format!("  (native {})", esc(&m.native_id)));
    }
    s.push('\n');
    let mut facts = Vec::new();
    if let Some(a) = m.age(now) {
        facts.push(format!("age {}", crate::human::human_age(a)));
    }
    if let Some(n) = m.receive_count {
        facts.push(format!("receives {n}"));
    }
    let redrives = m.redrive_count();
    if redrives > 0 {
        facts.push(format!("redriven {redrives}×"));
    }
    if let Some(q) = &m.source {
        facts.push(format!("source {}", esc(q)));
    }
    if let Some(g) = &m.group {
        facts.push(format!("group {}", esc(g)));
    }
    if let Some(k) = &m.key {
        facts.push(format!("key {}", safe_text(k, 80)));
    }
    if let Some(pt) = m.partition {
        facts.push(format!("partition {pt}"));
    }
    let class = c.classify(m);
    facts.push(format!("class {}/{}", class.kind, class.rule));
    facts.push(format!(
        "fingerprint {}",
        crate::classify::fingerprint::fingerprint(m).id
    ));
    // The facts, a line each as wide as the terminal (a fact is never broken), and the error
    // wrapped under its label.
    let room = width.map_or(usize::MAX, |w| w.saturating_sub(2).max(20));
    let mut line = String::new();
    for f in facts {
        if !line.is_empty() && line.chars().count() + 3 + f.chars().count() > room {
            s.push_str(&format!("  {line}\n"));
            line.clear();
        }
        if !line.is_empty() {
            line.push_str(" · ");
        }
        line.push_str(&f);
    }
    s.push_str(&format!("  {line}\n"));
    if let Some(e) = m.error_text() {
        let e = esc(&one_line_trunc(&e, 300));
        match width {
            Some(w) => {
                let lines = crate::output::table::wrap(&e, w.saturating_sub(9).max(20), 4);
                s.push_str(&format!("  error: {}\n", lines.join("\n         ")));
            }
            None => s.push_str(&format!("  error: {e}\n")),
        }
    }
    for a in &m.attributes {
        let v = match &a.value {
            AttrValue::Text { value, .. } => safe_text(value.as_bytes(), 200),
            AttrValue::Binary { value, .. } => {
                format!("{} ({} bytes)", preview_hex(value, 32), value.len())
            }
            AttrValue::Null => "(null)".into(),
        };
        // Spring's binary partition, offset and timestamp, as numbers and a date.
        let v = match crate::message::decoded_header(&a.name, a.value.as_bytes()) {
            Some(serde_json::Value::String(t)) => format!("{t} (raw {v})"),
            Some(n) => format!("{n} (raw {v})"),
            None => v,
        };
        s.push_str(&hanging(&format!("  {} = ", esc(&a.name)), &v, width));
    }
    s.push_str(&at_most(body_for_people(&m.body), m.body.len()));
    s.push('\n');
    s
}

/// How much of a body a card shows at a terminal: a screenful or so of a large message, not
/// megabytes of it.
const BODY_SHOWN: usize = 16 * 1024;

/// `shown` cut after its last whole line within [`BODY_SHOWN`] bytes, with a note of the
/// body's size and how to see all of it.
fn at_most(shown: String, bytes: usize) -> String {
    if shown.len() <= BODY_SHOWN {
        return shown;
    }
    let mut end = BODY_SHOWN;
    while !shown.is_char_boundary(end) {
        end -= 1;
    }
    let end = shown[..end].rfind('\n').map_or(end, |i| i + 1);
    format!(
        "{}  … (the body has {bytes} bytes; `--output json` or `dlqctl export` shows all of it)\n",
        &shown[..end]
    )
}

fn body_for_people(body: &[u8]) -> String {
    if body.is_empty() {
        return "  (empty body)\n".into();
    }
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
        let pretty = serde_json::to_string_pretty(&v).expect("value serialises");
        return indent(&pretty);
    }
    match std::str::from_utf8(body) {
        Ok(t)
            if !t
                .chars()
                .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r')) =>
        {
            indent(t)
        }
        Ok(t) => indent(&t.escape_debug().to_string()),
        Err(_) => format!(
            "  binary body, {} bytes: {}\n",
            body.len(),
            preview_hex(body, 64)
        ),
    }
}

/// An id, a header name and an error with an ESC in them are shown escaped: anyone's bytes
/// never drive the terminal (the body and header values were already escaped).
#[cfg(test)]
#[test]
fn control_characters_in_a_card_are_escaped() {
    let m = Message {
        id: "esc\x1b[31mred".into(),
        error: Some(crate::message::ErrorInfo {
            message: Some("boom \x1b[41mRED\x1b[0m".into()),
            ..Default::default()
        }),
        attributes: vec![crate::message::Attribute {
            name: "x-\x1b[2Jname".into(),
            value: AttrValue::text("v".to_string()),
        }],
        ..Message::default()
    };
    let shown = card(&m, &Classifier::builtin(), false, Some(80));
    assert!(!shown.contains('\x1b'), "{shown:?}");
    assert!(shown.contains("esc\\u{1b}[31mred"), "{shown}");
}

#[cfg(test)]
#[test]
fn a_large_body_is_cut_at_a_terminal_and_says_so() {
    let big = format!("[{}]", vec!["\"xxxxxxxxxxxxxxxxxxxx\""; 5000].join(","));
    let shown = at_most(body_for_people(big.as_bytes()), big.len());
    assert!(shown.len() < BODY_SHOWN + 200, "{}", shown.len());
    assert!(shown.ends_with(&format!(
        "… (the body has {} bytes; `--output json` or `dlqctl export` shows all of it)\n",
        big.len()
    )));
    assert!(shown.lines().rev().nth(1).unwrap().ends_with("\","));
    let small = body_for_people(b"{\"a\":1}");
    assert_eq!(at_most(small.clone(), 7), small);
}

fn indent(t: &str) -> String {
    let mut s = String::new();
    for l in t.lines() {
        s.push_str("  ");
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn preview_hex(b: &[u8], n: usize) -> String {
    if b.len() > n {
        format!("{}…", hex(&b[..n]))
    } else {
        hex(b)
    }
}

/// Text that cannot hurt a terminal: control characters escaped, long values cut.
fn safe_text(b: &[u8], max: usize) -> String {
    match std::str::from_utf8(b) {
        Ok(t) => {
            let e: String = t
                .chars()
                .flat_map(|c| {
                    if c.is_control() {
                        c.escape_debug().collect::<Vec<_>>()
                    } else {
                        vec![c]
                    }
                })
                .collect();
            one_line_trunc(&e, max)
        }
        Err(_) => preview_hex(b, max / 2),
    }
}

fn one_line_trunc(s: &str, max: usize) -> String {
    let first = s.lines().next().unwrap_or_default();
    let mut out: String = first.chars().take(max).collect();
    if first.chars().count() > max || s.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}
