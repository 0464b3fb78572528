//! `dlqctl ui` beyond ui.rs, driven in a pseudo-terminal as there: the queues view's CHECK
//! column (each queue held to its `[queues.NAME.limits]` as `dlqctl check` holds it), a redrive
//! of a `/` filter's messages (no group), and the reason an edit is asked for.

use crate::harness::{Sandbox, Sqs};
use crate::ui::{Tui, at_pay_1_with_a_fixing_editor, receive_counts, seeded};

/// The row of `queue` on `screen` (selected or not), blanks at its end trimmed.
fn row<'a>(screen: &'a str, queue: &str) -> Option<&'a str> {
    screen
        .lines()
        .find(|l| {
            l.get(1..)
                .is_some_and(|l| l.starts_with(&format!("{queue} ")))
        })
        .map(str::trim_end)
}

/// Two names for one table of 17 (6 of them permanent): `calm` allows 100 messages and
/// passes, `noisy` allows 10 and no permanent one and fails both, as `dlqctl check` says; an
/// SQS queue whose class limit needs its messages read says so, and is not read.
#[tokio::test]
async fn the_queues_view_shows_what_check_says_of_each_queue() {
    let db = seeded("ui_check").await;
    let q = Sqs::new("uicheck").await;
    let (url, _) = q.create("dlq", &[]).await;
    for i in 0..3 {
        q.client
            .send_message()
            .queue_url(&url)
            .message_body(format!("{{\"n\":{i}}}"))
            .send()
            .await
            .expect("send");
    }
    let sb = Sandbox::new();
    let dlq = db.dlq();
    sb.write(
        "dlqctl.toml",
        &format!(
            "[queues.calm]\ndlq = \"{dlq}\"\n[queues.calm.limits]\nmax_messages = 100\n\n\
             [queues.noisy]\ndlq = \"{dlq}\"\n[queues.noisy.limits]\nmax_messages = 10\npermanent = 0\n\n\
             [queues.remote]\ndlq = \"sqs://{}\"\n[queues.remote.limits]\npermanent = 0\n\n\
             [queues.plain]\ndlq = \"{dlq}\"\n",
            q.name("dlq")
        ),
    );
    let mut ui = Tui::start_env(&sb, &["ui"], &q.env(&sb));
    let ends = |queue: &'static str, end: &'static str| {
        move |s: &str| row(s, queue).is_some_and(|r| r.ends_with(end))
    };
    ui.wait_until("calm OK", ends("calm", "6/6/5              OK"));
    let shown = ui.wait_until(
        "noisy FAIL",
        ends("noisy", "6/6/5              FAIL depth 17>10 +1"),
    );
    ui.wait_until(
        "remote needs scan",
        ends(
            "remote",
            "sqs      ~3      -       not read (below)   needs scan",
        ),
    );
    ui.wait_until("plain -", ends("plain", "6/6/5              -"));
    // The selected queue's pane: each limit as `check` reports it.
    assert!(row(&shown, "calm").is_some(), "{shown}");
    ui.press("j");
    ui.wait_for("FAIL At most 10 messages: 17 messages (limit 10)");
    ui.wait_for("FAIL At most 0 permanent messages: 6 permanent (limit 0)");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
    // The same verdicts from the command.
    assert!(
        sb.run(&["check", "calm"]).code(0).stdout.contains("PASS"),
        "calm passes"
    );
    let noisy = sb.run(&["check", "noisy"]).code(1).stdout;
    assert!(noisy.contains("17 messages (limit 10)"), "{noisy}");
    assert!(noisy.contains("6 permanent (limit 0)"), "{noisy}");
    // The SQS queue was not read.
    assert_eq!(receive_counts(&q, &url).await, ["1", "1", "1"]);
}

/// A `/` filter across groups, its messages opened with `m` (no group chosen), redriven with R:
/// exactly the six orders over 60 (of three kinds of error) arrive in the target, the other
/// eleven stay; the plan and the audit trail are the command's (`redrive --where`).
#[tokio::test]
async fn the_messages_of_a_filter_are_redriven_without_a_group() {
    let db = seeded("ui_where").await;
    let sb = Sandbox::new();
    let mut ui = Tui::start(&sb, &["ui", &db.dlq()]);
    ui.wait_for("6/6/5");
    ui.press("\r");
    ui.wait_for("groups of 17 messages");
    ui.press("/");
    ui.wait_for("where: _");
    ui.press(".json.amount > 60\r");
    ui.wait_for("groups of 6 messages · where .json.amount > 60");
    ui.press("m");
    ui.wait_for("6 messages · where .json.amount > 60");
    ui.wait_for("R/P/X/E filter or marked");
    ui.wait_for("── ord-");
    ui.press("R");
    ui.wait_for("will move: 6 (6 of 17 pass the filter, counted now)");
    ui.wait_for("y to start");
    ui.press("y");
    ui.wait_for("redrive: done");
    ui.wait_for("moved 6 · skipped 11 (filter) · failed 0");
    ui.press("\r");
    ui.wait_for("0 groups of 0 messages · where .json.amount > 60");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
    let moved = db
        .query_strings("SELECT message_id FROM {s}.queue_messages ORDER BY message_id")
        .await;
    assert_eq!(
        moved,
        ["ord-10", "ord-11", "ord-12", "ord-7", "ord-8", "ord-9"]
    );
    assert_eq!(db.count("dead_letters").await, 11);
    let runs = sb.run(&["audit", "--output", "json"]).ok().json();
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(runs[0]["command"], "redrive", "{runs}");
    let args = runs[0].to_string();
    assert!(args.contains(".json.amount > 60"), "{runs}");
}

/// `[audit] require_reason` without `--reason`: `e` asks for one, and `dlqctl edit` records it.
#[tokio::test]
async fn an_edit_from_the_ui_asks_for_the_reason_the_audit_requires() {
    let db = seeded("ui_edit_reason").await;
    let sb = Sandbox::new();
    sb.write("dlqctl.toml", "[audit]\nrequire_reason = true\n");
    let mut ui = at_pay_1_with_a_fixing_editor(&sb, &db);
    ui.press("e");
    ui.wait_for("reason (the audit trail requires one): _");
    ui.press("INC-31 amount typo\r");
    ui.wait_for("Send the edited copy");
    ui.press("y");
    ui.wait_for("enter: back to dlqctl ui");
    ui.press("\r");
    ui.wait_for("edit of pay-1: done");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
    let sent = db
        .query_strings("SELECT message_id || ' ' || (payload->>'order_id') FROM {s}.queue_messages")
        .await;
    assert_eq!(sent, ["pay-1 999"]);
    let runs = sb
        .run_with(
            &["audit", "--output", "json"],
            &[(
                "DLQCTL_STATE_DIR".to_string(),
                sb.path("state").to_string_lossy().into_owned(),
            )],
        )
        .ok()
        .json();
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(runs[0]["command"], "edit", "{runs}");
    assert_eq!(runs[0]["reason"], "INC-31 amount typo", "{runs}");
}
