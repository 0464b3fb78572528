//! The messages view's raw body (`v`) and the queues view's arrivals, without a terminal.

use super::app::*;
use super::raw::raw_body;
use super::tests::{in_groups, screen};

/// The messages view of the first group, showing one message whose body is `body`.
fn showing(body: &[u8], pretty: &str) -> App {
    let mut a = in_groups();
    a.on_key(Key::Enter);
    a.on_loaded(Loaded::Messages {
        queue: 0,
        fingerprint: Some("dfe35c88e1721244".into()),
        messages: Load::Ready(vec![MessageItem {
            id: "pay-1".into(),
            age: "2h".into(),
            redrives: 0,
            error: "payment declined: card expired".into(),
            detail: format!("── pay-1\n  error: payment declined: card expired\n{pretty}"),
            raw: raw_body(body),
        }]),
    });
    a
}

#[test]
fn v_toggles_the_detail_between_pretty_and_raw() {
    let mut a = showing(b"{}", "  {}\n");
    assert!(!a.raw);
    a.on_key(Key::Char('J'));
    assert_eq!(a.on_key(Key::Char('v')), Effect::None);
    assert!(a.raw);
    // The raw body starts at its top.
    assert_eq!(a.detail_scroll, 0);
    // It stays raw from message to message, and v makes it pretty again.
    a.on_key(Key::Down);
    assert!(a.raw);
    a.on_key(Key::Char('v'));
    assert!(!a.raw);
    // Elsewhere v does nothing.
    a.on_key(Key::Esc);
    a.on_key(Key::Char('v'));
    assert!(!a.raw);
}

#[test]
fn a_json_body_pretty_and_raw() {
    let body = br#"{"order_id":101,"note":"line1\nline2","total":12.5}"#;
    let mut a = showing(
        body,
        "  {\n    \"order_id\": 101,\n    \"note\": \"line1\\nline2\",\n    \"total\": 12.5\n  }\n",
    );
    insta::assert_snapshot!("json_pretty", screen(&a));
    a.on_key(Key::Char('v'));
    insta::assert_snapshot!("json_raw", screen(&a));
}

#[test]
fn a_binary_body_pretty_and_raw() {
    // A terminal escape (clear the screen), a tab, a line break, and bytes that are not UTF-8.
    let body = b"\x1b[2J\tPK\x03\x04\xff\xfe\x00ok\nend";
    let mut a = showing(
        body,
        "  binary body, 18 bytes: 1b 5b 32 4a 09 50 4b 03 04 ff fe 00 6f 6b 0a 65 6e 64\n",
    );
    insta::assert_snapshot!("binary_pretty", screen(&a));
    a.on_key(Key::Char('v'));
    let raw = screen(&a);
    assert!(!raw.contains('\x1b'), "{raw}");
    insta::assert_snapshot!("binary_raw", raw);
}

#[test]
fn the_selected_queue_draws_its_arrivals_per_hour() {
    use super::arrivals::ArrivalLine;
    let mut a = super::tests::app();
    let mut hourly = vec![0; crate::ops::census::HOURS];
    let n = hourly.len();
    hourly[n - 6..].copy_from_slice(&[1, 2, 4, 8, 3, 1]);
    hourly[10] = 2;
    if let Load::Ready(i) = &mut a.queues[0].info {
        i.arrivals = Some(ArrivalLine {
            hourly,
            older: 3,
            unknown: 0,
        });
    }
    a.queues[0].depths = vec![12, 15, 17];
    insta::assert_snapshot!(screen(&a));
    // Where no message carries a time it says so, and draws no line.
    if let Load::Ready(i) = &mut a.queues[3].info {
        i.arrivals = Some(ArrivalLine {
            hourly: vec![0; crate::ops::census::HOURS],
            older: 0,
            unknown: 3,
        });
    }
    a.on_key(Key::Char('j'));
    a.on_key(Key::Char('j'));
    a.on_key(Key::Char('j'));
    assert_eq!(a.queue_sel, 3);
    let s = screen(&a);
    assert!(s.contains("\narrivals: no times recorded\n"), "{s}");
    assert!(!s.contains("arrivals/hour"), "{s}");
}
