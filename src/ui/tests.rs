//! The UI without a terminal: what each key does to the state (app.rs), and what each view
//! shows at 80x24 (draw.rs, on ratatui's test backend, snapshot with insta).

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::app::*;
use super::draw::draw;

/// The screen an app draws at 80x24, a line per row, trailing blanks trimmed.
pub(super) fn screen(app: &App) -> String {
    screen_of(app, 80, 24)
}

/// The screen at a size of its own.
pub(super) fn screen_of(app: &App, width: u16, height: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    t.draw(|f| draw(f, app)).expect("draws");
    let buf = t.backend().buffer();
    (0..buf.area.height)
        .map(|y| {
            let row: String = (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect();
            row.trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub(super) fn info(depth: &str, oldest: &str, classes: &str) -> QueueInfo {
    QueueInfo {
        backend: "postgres".into(),
        depth: Some(depth.into()),
        oldest: Some(oldest.into()),
        classes: Some(classes.into()),
        note: None,
        check: None,
        arrivals: None,
    }
}

fn check(short: &str, failed: bool, lines: &[&str]) -> Option<CheckStatus> {
    Some(CheckStatus {
        short: short.into(),
        failed,
        lines: lines.iter().map(|l| l.to_string()).collect(),
    })
}

/// Four queues: one read that fails its limits, one SQS (not scanned; its class limit needs a
/// scan), one that failed to open (no limits), one that passes.
pub(super) fn app() -> App {
    let mut a = App::new(
        vec![
            "orders-dlq".into(),
            "payments-dlq".into(),
            "broken".into(),
            "refunds-dlq".into(),
        ],
        false,
    );
    a.queues[0].info = Load::Ready(QueueInfo {
        check: check(
            "FAIL depth 17>10 +1",
            true,
            &[
                "FAIL At most 10 messages: 17 messages (limit 10)",
                "PASS No message older than 1d: oldest message 12h old, first enqueued 2026-12-05 00:00:00 UTC",
                "FAIL At most 0 permanent messages: 6 permanent (limit 0)",
            ],
        ),
        ..info("17", "12h", "6/6/5")
    });
    a.queues[1].info = Load::Ready(QueueInfo {
        backend: "sqs".into(),
        depth: Some("~240".into()),
        note: Some("not scanned: reading increments each message's ApproximateReceiveCount (SQS has no side-effect-free read) and hides it until the read ends; enter reads its messages".into()),
        check: check("needs scan", false, &["not held here: the limits that need its messages read (not read in this view); dlqctl check reads them"]),
        ..QueueInfo::default()
    });
    a.queues[2].info = Load::Failed("connection refused (127.0.0.1:1)".into());
    a.queues[3].info = Load::Ready(QueueInfo {
        check: check(
            "OK",
            false,
            &["PASS At most 100 messages: 3 messages (limit 100)"],
        ),
        ..info("3", "2m", "3/0/0")
    });
    a
}

pub(super) fn group(fp: &str, class: &str, count: u64, error: &str) -> GroupItem {
    GroupItem {
        fingerprint: Some(fp.into()),
        class: class.into(),
        count,
        first_seen: "2026-12-05 09:00".into(),
        last_seen: "2026-12-05 12:00".into(),
        error: error.into(),
    }
}

/// The groups of orders-dlq, loaded.
pub(super) fn in_groups() -> App {
    let mut a = app();
    assert_eq!(
        a.on_key(Key::Enter),
        Effect::LoadGroups {
            queue: 0,
            query: None,
            class: None
        }
    );
    a.on_loaded(Loaded::Groups {
        queue: 0,
        query: None,
        class: None,
        groups: Load::Ready(GroupList {
            items: vec![
                group(
                    "dfe35c88e1721244",
                    "unclassified/unrecognised-error",
                    250,
                    "payment declined: card expired",
                ),
                group(
                    "93a62330ca7b26b6",
                    "transient/timeout",
                    3,
                    "upstream call timed out after <num>s",
                ),
            ],
            total: 253,
            complete: true,
        }),
    });
    a
}

#[test]
fn queues_view() {
    insta::assert_snapshot!(screen(&app()));
}

/// Queues given as URLs are told apart: the column grows while CLASSES keeps its room, and a
/// longer URL shows its end, where `?queue=…` is.
#[test]
fn queues_given_as_urls_show_where_they_differ() {
    let a = App::new(
        vec![
            "amqp://dlqctl@127.0.0.1:5672/%2F?queue=orders.dlq".into(),
            "amqp://dlqctl@127.0.0.1:5672/%2F?queue=payments.dlq".into(),
            "redis://127.0.0.1:6379/0?system=sidekiq".into(),
        ],
        true,
    );
    let s = screen(&a);
    for end in [
        "=orders.dlq",
        "=payments.dlq",
        "system=sidekiq",
        "CLASSES t/p/u",
    ] {
        assert!(s.contains(end), "{end} not shown:\n{s}");
    }
    // A tiny screen draws, the column no narrower than before.
    let mut t = Terminal::new(TestBackend::new(20, 10)).expect("test terminal");
    t.draw(|f| draw(f, &a)).expect("draws");
}

/// A queue with limits that cannot be read fails its check, as `check` fails it.
#[test]
fn a_queue_with_limits_that_cannot_be_read_fails_its_check() {
    let mut a = app();
    let row = |a: &App| {
        let s = screen(a);
        let row = s
            .lines()
            .find(|l| l.starts_with(" broken"))
            .map(str::to_string);
        row.unwrap_or_else(|| panic!("no row of broken:\n{s}"))
    };
    assert!(row(&a).ends_with("connection  -"), "{}", row(&a));
    a.queues[2].limited = true;
    assert!(
        row(&a).ends_with("connection  FAIL reachable"),
        "{}",
        row(&a)
    );
}

#[test]
fn queues_view_says_why_a_queue_is_not_scanned_and_what_failed() {
    let mut a = app();
    a.on_key(Key::Char('j'));
    let sqs = screen(&a);
    assert!(sqs.contains("has no side-effect-free read"), "{sqs}");
    a.on_key(Key::Char('j'));
    insta::assert_snapshot!(screen(&a));
}

#[test]
fn groups_view_with_a_filter() {
    let mut a = in_groups();
    a.query = Some(".json.amount > 100".into());
    a.on_key(Key::Char('j'));
    insta::assert_snapshot!(screen(&a));
}

#[test]
fn messages_view_with_the_detail_pane() {
    let mut a = in_groups();
    let fingerprint = Some("dfe35c88e1721244".to_string());
    assert_eq!(
        a.on_key(Key::Enter),
        Effect::LoadMessages {
            queue: 0,
            fingerprint: Some("dfe35c88e1721244".into()),
            query: None,
            class: None
        }
    );
    let m = |id: &str| MessageItem {
        id: id.into(),
        age: "2h".into(),
        redrives: 1,
        error: "payment declined: card expired".into(),
        detail: format!(
            "── {id}\n  age 2h · class unclassified/unrecognised-error\n  error: payment declined: card expired\n  tenant = acme\n  {{\n    \"order_id\": 101\n  }}\nclassification:\n  no rule matched\n"
        ),
        raw: String::new(),
    };
    a.on_loaded(Loaded::Messages {
        queue: 0,
        fingerprint,
        messages: Load::Ready(vec![m("pay-1"), m("pay-2")]),
    });
    a.on_key(Key::Down);
    insta::assert_snapshot!(screen(&a));
    // J scrolls the detail; moving to another message starts it at the top again.
    a.on_key(Key::Char('J'));
    assert_eq!(a.detail_scroll, 10);
    assert!(!screen(&a).contains("── pay-2"));
    a.on_key(Key::Up);
    assert_eq!(a.detail_scroll, 0);
    assert!(screen(&a).contains("── pay-1"));
}

#[test]
fn redrive_plan_asks_for_the_count() {
    let mut a = in_groups();
    a.on_key(Key::Char('R'));
    a.on_loaded(Loaded::Action(Action::Confirm {
        plan: vec![
            (
                "operation".into(),
                "move each batch in one transaction".into(),
            ),
            ("to".into(), "postgres://db?table=queue_messages".into()),
            ("filter".into(), "fingerprint dfe35c88e1721244".into()),
            (
                "will move".into(),
                "250 (250 of 253 pass the filter, counted now)".into(),
            ),
        ],
        count: Some(250),
        typed: String::new(),
    }));
    a.on_key(Key::Char('2'));
    a.on_key(Key::Char('5'));
    insta::assert_snapshot!(screen(&a));
}

#[test]
fn redrive_summary() {
    let mut a = in_groups();
    a.action = Some(Action::Done {
        summary: "moved 250 · skipped 3 (filter) · failed 0 · examined 253 in [time]\n  250 → postgres://db?table=queue_messages\n".into(),
        ok: true,
    });
    insta::assert_snapshot!(screen(&a));
    assert_eq!(a.on_key(Key::Char('q')), Effect::Quit);
}

#[test]
fn help_and_read_only() {
    let mut a = App::new(vec!["orders-dlq".into()], true);
    a.on_key(Key::Char('?'));
    insta::assert_snapshot!(screen(&a));
}

#[test]
fn a_filter_typed_after_slash_sets_the_groups_query() {
    let mut a = in_groups();
    assert_eq!(a.on_key(Key::Char('/')), Effect::None);
    for c in ".json.amount > 10".chars() {
        assert_eq!(a.on_key(Key::Char(c)), Effect::None);
    }
    // Typing goes to the filter: `j` and `q` are letters there, not keys.
    a.on_key(Key::Char('0'));
    a.on_key(Key::Char('q'));
    a.on_key(Key::Backspace);
    assert!(screen(&a).contains("where: .json.amount > 100_"));
    assert_eq!(
        a.on_key(Key::Enter),
        Effect::LoadGroups {
            queue: 0,
            query: Some(".json.amount > 100".into()),
            class: None
        }
    );
    assert_eq!(a.query.as_deref(), Some(".json.amount > 100"));
    assert_eq!(a.groups, Load::Loading);
    // The groups of the old filter, arriving late, are not shown.
    a.on_loaded(Loaded::Groups {
        queue: 0,
        query: None,
        class: None,
        groups: Load::Ready(GroupList::default()),
    });
    assert_eq!(a.groups, Load::Loading);
    // An empty filter clears it; esc while typing keeps the one there was.
    a.on_key(Key::Char('/'));
    a.on_key(Key::Esc);
    assert_eq!(a.query.as_deref(), Some(".json.amount > 100"));
    a.on_key(Key::Char('/'));
    for _ in 0..30 {
        a.on_key(Key::Backspace);
    }
    assert_eq!(
        a.on_key(Key::Enter),
        Effect::LoadGroups {
            queue: 0,
            query: None,
            class: None
        }
    );
}

#[test]
fn read_only_refuses_to_redrive() {
    let mut a = in_groups();
    a.read_only = true;
    assert_eq!(a.on_key(Key::Char('R')), Effect::None);
    assert_eq!(a.action, None);
    assert!(a.status.contains("read-only"), "{}", a.status);
    assert!(screen(&a).contains("read-only: redrive is disabled"));
}

#[test]
fn a_small_redrive_is_confirmed_with_y() {
    let mut a = in_groups();
    a.on_key(Key::Char('j'));
    assert_eq!(
        a.on_key(Key::Char('R')),
        Effect::PlanRun {
            kind: RunKind::Redrive,
            queue: 0,
            fingerprint: Some("93a62330ca7b26b6".into()),
            query: None,
            class: None,
            reason: None,
            ids: vec![],
            to: None,
        }
    );
    assert_eq!(a.action, Some(Action::Planning));
    // Keys other than the answers do nothing while the plan is shown.
    a.on_loaded(Loaded::Action(Action::Confirm {
        plan: vec![],
        count: Some(3),
        typed: String::new(),
    }));
    assert_eq!(a.on_key(Key::Char('q')), Effect::None);
    assert_eq!(a.on_key(Key::Char('y')), Effect::Answer(true));
    assert_eq!(a.action, Some(Action::Running));
    // A run is not left by q; Ctrl-C stops it after its batch.
    assert_eq!(a.on_key(Key::Char('q')), Effect::None);
    assert_eq!(a.on_key(Key::Interrupt), Effect::Stop);
}

#[test]
fn replay_and_purge_ask_where_the_copies_go() {
    let mut a = in_groups();
    a.query = Some(".json.x".into());
    assert_eq!(a.on_key(Key::Char('P')), Effect::None);
    for c in "orders-retry".chars() {
        assert_eq!(a.on_key(Key::Char(c)), Effect::None);
    }
    assert!(screen(&a).contains("replay to (a queue, table, topic or file): orders-retry_"));
    assert_eq!(
        a.on_key(Key::Enter),
        Effect::PlanRun {
            kind: RunKind::Replay,
            queue: 0,
            fingerprint: Some("dfe35c88e1721244".into()),
            query: Some(".json.x".into()),
            class: None,
            reason: None,
            ids: vec![],
            to: Some("orders-retry".into()),
        }
    );
    assert_eq!(a.on_key(Key::Esc), Effect::Answer(false));
    assert_eq!(a.status, "replay cancelled; nothing done");
    // An empty target asks nothing; `none` purges without an archive.
    a.on_key(Key::Char('X'));
    assert_eq!(a.on_key(Key::Enter), Effect::None);
    assert_eq!(a.action, None);
    a.on_key(Key::Char('X'));
    for c in "none".chars() {
        a.on_key(Key::Char(c));
    }
    let e = a.on_key(Key::Enter);
    assert!(
        matches!(
            e,
            Effect::PlanRun {
                kind: RunKind::Purge,
                to: None,
                ..
            }
        ),
        "{e:?}"
    );
    a.on_loaded(Loaded::Action(Action::Confirm {
        plan: vec![],
        count: Some(3),
        typed: String::new(),
    }));
    assert!(screen(&a).contains("purge? y to start"));
}

/// The question of a long plan is on screen at any size: the popup's wrapping is measured at
/// its own width (on a 100-column screen it was measured at 94 and drawn at 74, cutting the
/// question off), and a plan taller than the screen shows its end.
#[test]
fn the_question_under_a_long_plan_is_always_shown() {
    let mut a = in_groups();
    a.on_key(Key::Char('X'));
    for c in "none".chars() {
        a.on_key(Key::Char(c));
    }
    a.on_key(Key::Enter);
    let row = |k: &str| {
        (
            k.to_string(),
            format!("{k} {}", "words of a long plan value ".repeat(3)),
        )
    };
    a.on_loaded(Loaded::Action(Action::Confirm {
        plan: [
            "operation",
            "dead-letter queue",
            "archive",
            "filter",
            "would remove",
            "keeps",
            "note",
        ]
        .into_iter()
        .map(row)
        .collect(),
        count: Some(3),
        typed: String::new(),
    }));
    for (w, h) in [(80, 24), (100, 30), (120, 30), (80, 14)] {
        let s = screen_of(&a, w, h);
        assert!(s.contains("purge? y to start"), "{w}x{h}:\n{s}");
    }
}

#[test]
fn read_only_refuses_replay_and_purge_before_asking() {
    let mut a = in_groups();
    a.read_only = true;
    for (k, name) in [('P', "replay"), ('X', "purge")] {
        assert_eq!(a.on_key(Key::Char(k)), Effect::None);
        assert_eq!(a.input, None);
        assert_eq!(
            a.status,
            format!("read-only: {name} is disabled (started with --read-only)")
        );
    }
}

#[test]
fn a_large_redrive_is_confirmed_by_typing_its_count() {
    let mut a = in_groups();
    a.on_key(Key::Char('R'));
    a.on_loaded(Loaded::Action(Action::Confirm {
        plan: vec![],
        count: Some(250),
        typed: String::new(),
    }));
    assert_eq!(a.on_key(Key::Char('y')), Effect::None);
    for c in "25".chars() {
        a.on_key(Key::Char(c));
    }
    assert_eq!(a.on_key(Key::Enter), Effect::None, "25 is not 250");
    a.on_key(Key::Char('0'));
    assert_eq!(a.on_key(Key::Enter), Effect::Answer(true));
}

#[test]
fn esc_cancels_a_redrive_and_its_late_plan_is_not_shown() {
    let mut a = in_groups();
    a.on_key(Key::Char('R'));
    assert_eq!(a.on_key(Key::Esc), Effect::Answer(false));
    assert_eq!(a.action, None);
    a.on_loaded(Loaded::Action(Action::Confirm {
        plan: vec![],
        count: Some(1),
        typed: String::new(),
    }));
    assert_eq!(a.action, None);
    assert!(a.status.contains("nothing done"));
}

#[test]
fn the_row_of_the_other_groups_is_neither_opened_nor_acted_on() {
    let mut a = in_groups();
    if let Load::Ready(g) = &mut a.groups {
        g.items[0].fingerprint = None;
    }
    assert_eq!(a.on_key(Key::Enter), Effect::None);
    assert_eq!(a.view, View::Groups);
    assert!(
        a.status.contains("narrow them with / first"),
        "{}",
        a.status
    );
    assert_eq!(a.on_key(Key::Char('R')), Effect::None);
    assert_eq!(a.action, None);
    assert_eq!(a.on_key(Key::Char('X')), Effect::None);
    assert_eq!(a.input, None);
}

#[test]
fn moving_stays_in_the_list_and_esc_goes_back() {
    let mut a = app();
    a.on_key(Key::Char('k'));
    assert_eq!(a.queue_sel, 0);
    for _ in 0..5 {
        a.on_key(Key::Char('j'));
    }
    assert_eq!(a.queue_sel, 3);
    a.on_key(Key::Enter);
    assert_eq!(a.view, View::Groups);
    a.on_key(Key::Esc);
    assert_eq!(a.view, View::Queues);
    assert_eq!(a.on_key(Key::Char('q')), Effect::Quit);
    assert_eq!(a.on_key(Key::Interrupt), Effect::Quit);
}
