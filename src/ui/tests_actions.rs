//! The UI's later keys without a terminal: marks, export and edit, progress, `c` (tests.rs
//! has the views and the first actions, and the helpers these use).

use super::app::*;
use super::tests::{app, group, in_groups, screen};

/// The messages view of the first group, with `n` messages `pay-1 …` loaded.
fn in_messages(n: usize) -> App {
    let mut a = in_groups();
    a.on_key(Key::Enter);
    let m = |i: usize| MessageItem {
        id: format!("pay-{i}"),
        age: "2h".into(),
        redrives: 0,
        error: "payment declined: card expired".into(),
        detail: String::new(),
        raw: String::new(),
    };
    a.on_loaded(Loaded::Messages {
        queue: 0,
        fingerprint: Some("dfe35c88e1721244".into()),
        messages: Load::Ready((1..=n).map(m).collect()),
    });
    a
}

#[test]
fn space_marks_messages_and_the_actions_take_the_marked() {
    let mut a = in_messages(3);
    a.on_key(Key::Char(' '));
    a.on_key(Key::Down);
    a.on_key(Key::Down);
    a.on_key(Key::Char(' '));
    let s = screen(&a);
    assert!(
        s.contains("250 messages of group dfe35c88 · 2 marked"),
        "{s}"
    );
    assert!(
        s.contains(" *pay-1") && s.contains(" pay-2") && s.contains("*pay-3"),
        "{s}"
    );
    assert_eq!(
        a.on_key(Key::Char('R')),
        Effect::PlanRun {
            kind: RunKind::Redrive,
            queue: 0,
            fingerprint: Some("dfe35c88e1721244".into()),
            query: None,
            class: None,
            reason: None,
            ids: vec!["pay-1".into(), "pay-3".into()],
            to: None,
        }
    );
    // The summary's enter goes back to the groups, read again; the marks are gone.
    a.on_loaded(Loaded::Action(Action::Done {
        summary: "moved 2".into(),
        ok: true,
    }));
    assert!(matches!(a.on_key(Key::Enter), Effect::LoadGroups { .. }));
    assert_eq!(a.view, View::Groups);
    assert!(a.marked.is_empty());
    // Space again unmarks; esc drops the marks; the group's own R takes no ids.
    let mut a = in_messages(2);
    a.on_key(Key::Char(' '));
    a.on_key(Key::Char(' '));
    assert!(a.marked.is_empty(), "{:?}", a.marked);
    a.on_key(Key::Char(' '));
    a.on_key(Key::Esc);
    assert!(a.marked.is_empty());
    assert!(matches!(a.on_key(Key::Char('R')), Effect::PlanRun { ids, .. } if ids.is_empty()));
}

#[test]
fn export_is_allowed_in_read_only_and_edit_is_not() {
    let mut a = in_messages(2);
    a.read_only = true;
    a.on_key(Key::Char(' '));
    a.on_key(Key::Char('E'));
    for c in "out.jsonl".chars() {
        a.on_key(Key::Char(c));
    }
    assert!(screen(&a).contains("export to (a file, JSON Lines): out.jsonl_"));
    assert_eq!(
        a.on_key(Key::Enter),
        Effect::PlanRun {
            kind: RunKind::Export,
            queue: 0,
            fingerprint: Some("dfe35c88e1721244".into()),
            query: None,
            class: None,
            reason: None,
            ids: vec!["pay-1".into()],
            to: Some("out.jsonl".into()),
        }
    );
    // Nothing to confirm: it runs at once.
    assert_eq!(a.action, Some(Action::Running));
    a.on_loaded(Loaded::Action(Action::Done {
        summary: "exported 1 message to out.jsonl".into(),
        ok: true,
    }));
    assert!(screen(&a).contains("export: done"));
    let mut a = in_messages(2);
    a.read_only = true;
    assert_eq!(a.on_key(Key::Char('e')), Effect::None);
    assert_eq!(
        a.status,
        "read-only: edit is disabled (started with --read-only)"
    );
    a.read_only = false;
    assert_eq!(
        a.on_key(Key::Char('e')),
        Effect::Edit {
            queue: 0,
            id: "pay-1".into(),
            reason: None
        }
    );
}

#[test]
fn the_groups_read_and_a_run_show_their_progress() {
    let mut a = app();
    a.on_key(Key::Enter);
    a.on_loaded(Loaded::Progress {
        run: false,
        text: "classifying: 120000 messages read…".into(),
    });
    assert!(screen(&a).contains("classifying: 120000 messages read…"));
    // A run's progress is for its box only, and only while it is under way.
    a.on_loaded(Loaded::Progress {
        run: true,
        text: "redriving: 3000 messages read…".into(),
    });
    assert_eq!(a.run_progress, None);
    let mut a = in_groups();
    a.on_key(Key::Char('R'));
    a.on_loaded(Loaded::Progress {
        run: true,
        text: "counting what passes the filter: 2000 messages read…".into(),
    });
    assert!(screen(&a).contains("counting what passes the filter: 2000 messages read…"));
    a.on_loaded(Loaded::Action(Action::Confirm {
        plan: vec![],
        count: Some(3),
        typed: String::new(),
    }));
    a.on_key(Key::Char('y'));
    a.on_loaded(Loaded::Progress {
        run: true,
        text: "redriving: 3000 of 3000 messages read…".into(),
    });
    let s = screen(&a);
    assert!(s.contains("redriving: 3000 of 3000 messages read…"), "{s}");
    assert!(s.contains("Ctrl-C stops it after its current batch"), "{s}");
}

#[test]
fn c_cycles_the_class_of_the_groups_and_the_actions_take_it() {
    let mut a = in_groups();
    let mut seen = vec![];
    for _ in 0..4 {
        match a.on_key(Key::Char('c')) {
            Effect::LoadGroups { class, .. } => seen.push(class),
            e => panic!("{e:?}"),
        }
        if a.class == Some("permanent") {
            assert!(screen(&a).contains("failure groups · permanent"));
        }
    }
    assert_eq!(
        seen,
        [
            Some("transient"),
            Some("permanent"),
            Some("unclassified"),
            None
        ]
    );
    // The groups of another class, arriving late, are not shown; the class is in the run.
    a.on_key(Key::Char('c'));
    a.on_loaded(Loaded::Groups {
        queue: 0,
        query: None,
        class: None,
        groups: Load::Ready(GroupList::default()),
    });
    assert_eq!(a.groups, Load::Loading);
    a.on_loaded(Loaded::Groups {
        queue: 0,
        query: None,
        class: Some("transient"),
        groups: Load::Ready(GroupList {
            items: vec![group(
                "93a62330ca7b26b6",
                "transient/timeout",
                3,
                "timed out",
            )],
            total: 3,
            complete: true,
        }),
    });
    assert!(screen(&a).contains("1 group of 3 messages · transient"));
    assert!(matches!(
        a.on_key(Key::Char('R')),
        Effect::PlanRun {
            class: Some("transient"),
            ..
        }
    ));
}

#[test]
fn a_reason_is_asked_first_where_the_audit_requires_one() {
    let mut a = in_groups();
    a.needs_reason = true;
    a.on_key(Key::Char('X'));
    for c in "arch.jsonl".chars() {
        a.on_key(Key::Char(c));
    }
    assert_eq!(a.on_key(Key::Enter), Effect::None);
    assert!(screen(&a).contains("reason (the audit trail requires one): _"));
    for c in "INC-1".chars() {
        a.on_key(Key::Char(c));
    }
    assert!(matches!(
        a.on_key(Key::Enter),
        Effect::PlanRun { kind: RunKind::Purge, reason: Some(r), to: Some(t), .. }
            if r == "INC-1" && t == "arch.jsonl"
    ));
    // Asked again for the next run; an export needs none.
    a.on_key(Key::Esc);
    a.on_key(Key::Char('R'));
    assert!(a.input.is_some());
    a.on_key(Key::Esc);
    a.on_key(Key::Char('E'));
    for c in "x.jsonl".chars() {
        a.on_key(Key::Char(c));
    }
    assert!(matches!(
        a.on_key(Key::Enter),
        Effect::PlanRun {
            kind: RunKind::Export,
            reason: None,
            ..
        }
    ));
}

#[test]
fn the_queues_view_draws_the_depth_at_each_refresh() {
    let mut a = app();
    let at = |d: &str| Loaded::Queue(0, Load::Ready(super::tests::info(d, "1h", "1/0/0")));
    a.on_loaded(at("10"));
    assert!(!screen(&a).contains("refreshes"), "one sample: no line yet");
    for d in ["20", "40", "80"] {
        a.on_loaded(at(d));
    }
    assert_eq!(a.queues[0].depths, [10, 20, 40, 80]);
    let s = screen(&a);
    let line = s
        .lines()
        .find(|l| l.contains("depth, 4 refreshes"))
        .expect(&s);
    assert!(line.ends_with("refreshes ▁▂▄█"), "{line}");
    for _ in 0..DEPTH_SAMPLES {
        a.on_loaded(at("5"));
    }
    assert_eq!(a.queues[0].depths.len(), DEPTH_SAMPLES);
}

/// `m` opens the messages of the `/` filter alone (every group's); R there plans a redrive of
/// the filter, no fingerprint, and marks narrow it by id; without a filter `m` says to set one.
#[test]
fn m_lists_the_messages_of_the_filter_and_r_acts_on_it() {
    let mut a = in_groups();
    assert_eq!(a.on_key(Key::Char('m')), Effect::None);
    assert!(a.status.contains("set one with /"), "{}", a.status);
    a.query = Some(".json.amount > 60".into());
    assert_eq!(
        a.on_key(Key::Char('m')),
        Effect::LoadMessages {
            queue: 0,
            fingerprint: None,
            query: Some(".json.amount > 60".into()),
            class: None
        }
    );
    // A group's messages arriving late are not the filter's.
    a.on_loaded(Loaded::Messages {
        queue: 0,
        fingerprint: Some("dfe35c88e1721244".into()),
        messages: Load::Ready(Vec::new()),
    });
    assert_eq!(a.messages, Load::Loading);
    let m = |id: &str, error: &str| MessageItem {
        id: id.into(),
        age: "2h".into(),
        redrives: 0,
        error: error.into(),
        detail: format!("── {id}\n  error: {error}\n"),
        raw: String::new(),
    };
    a.on_loaded(Loaded::Messages {
        queue: 0,
        fingerprint: None,
        messages: Load::Ready(vec![
            m("ord-7", "customer 7 not found"),
            m("ord-8", "upstream call timed out after 30s"),
        ]),
    });
    insta::assert_snapshot!(screen(&a));
    let plan = |a: &mut App| a.on_key(Key::Char('R'));
    assert_eq!(
        plan(&mut a),
        Effect::PlanRun {
            kind: RunKind::Redrive,
            queue: 0,
            fingerprint: None,
            query: Some(".json.amount > 60".into()),
            class: None,
            reason: None,
            ids: Vec::new(),
            to: None,
        }
    );
    a.action = None;
    a.on_key(Key::Char(' '));
    assert!(matches!(
        plan(&mut a),
        Effect::PlanRun { fingerprint: None, ids, .. } if ids == ["ord-7"]
    ));
    // Back in the groups, R is the selected group's again.
    a.action = None;
    a.on_key(Key::Esc);
    assert!(matches!(
        plan(&mut a),
        Effect::PlanRun {
            fingerprint: Some(_),
            ..
        }
    ));
    a.action = None;
    a.read_only = true;
    a.on_key(Key::Char('m'));
    assert_eq!(plan(&mut a), Effect::None);
    assert!(
        a.status.starts_with("read-only: redrive is disabled"),
        "{}",
        a.status
    );
}

/// `e` where the audit requires a reason: asked first (an empty one does nothing), then the
/// edit is asked for with it.
#[test]
fn e_asks_for_a_reason_where_the_audit_requires_one() {
    let mut a = in_messages(2);
    a.needs_reason = true;
    assert_eq!(a.on_key(Key::Char('e')), Effect::None);
    assert!(screen(&a).contains("reason (the audit trail requires one): _"));
    assert_eq!(a.on_key(Key::Enter), Effect::None);
    assert_eq!(
        a.status,
        "edit: a reason is required ([audit] require_reason); nothing done"
    );
    a.on_key(Key::Char('e'));
    for c in "INC-9".chars() {
        a.on_key(Key::Char(c));
    }
    assert_eq!(
        a.on_key(Key::Enter),
        Effect::Edit {
            queue: 0,
            id: "pay-1".into(),
            reason: Some("INC-9".into())
        }
    );
}

/// The result box showed a CLI warning's continuation lines with the nine spaces that line
/// them up under `warning: ` in a terminal: the box wraps them itself, unindented.
#[test]
fn the_result_box_rewraps_a_warning_without_its_indentation() {
    let mut a = in_messages(1);
    a.action = Some(Action::Running);
    a.on_loaded(Loaded::Action(Action::Done {
        summary: "moved 3 · failed 0\nwarning: reading q takes each\n         message back\n  3 → sqs://target\n".into(),
        ok: true,
    }));
    let s = screen(&a);
    assert!(
        s.contains("warning: reading q takes each message back"),
        "{s}"
    );
    assert!(!s.contains("         message back"), "{s}");
    // The summary's own indentation stays.
    assert!(s.contains("  3 → sqs://target"), "{s}");
}
