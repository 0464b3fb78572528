//! What a person sees, captured: both streams of a [`Printer::capture`] printer.

use std::time::Duration;

use super::*;

/// A plan, a warning and an error with its hints reach stderr in the order they were given,
/// and stdout only what was written to it; the screen has both as they came.
#[test]
fn plan_warning_and_error_are_captured_in_order() {
    let (p, cap) = Printer::capture(OutputFormat::Table);
    p.plan(&[("source".into(), "orders-dlq".into())], false);
    p.line("data").unwrap();
    p.warn("the queue has no redrive policy");
    let e = Error::invalid_arg("--to", "orders-dlq is the queue being read")
        .hinted("pass another --to")
        .hinted("or replay it with `dlqctl replay`");
    p.error(&e);
    let err = cap.stderr();
    let at = |s: &str| err.find(s).unwrap_or_else(|| panic!("no `{s}` in:\n{err}"));
    assert!(at("source") < at("warning: the queue has no redrive policy"));
    assert!(
        err.ends_with(
            "error: invalid value for --to: orders-dlq is the queue being read\n  hint: pass another --to\n  hint: or replay it with `dlqctl replay`\n"
        ),
        "{err}"
    );
    assert!(at("warning:") < at("error:"));
    assert_eq!(cap.text(), "data\n");
    let screen = cap.screen();
    assert!(
        screen.find("source").unwrap() < screen.find("data").unwrap()
            && screen.find("data").unwrap() < screen.find("warning:").unwrap(),
        "{screen}"
    );
}

/// `--quiet` silences the plan, notes and warnings, never the error or a notice.
#[test]
fn quiet_keeps_the_error() {
    let (mut p, cap) = Printer::capture(OutputFormat::Table);
    p.quiet = true;
    p.plan(&[("source".into(), "q".into())], false);
    p.note("a note");
    p.warn("a warning");
    p.notice("stopped");
    p.error(&Error::NotFound {
        what: "queue q".into(),
        detail: String::new(),
    });
    assert_eq!(cap.stderr(), "stopped\nerror: queue q not found\n");
}

/// A secret in a captured error or its hint is scrubbed.
#[test]
fn secrets_are_scrubbed_in_captured_errors() {
    crate::secrets::register("hunter2-capture");
    let (p, cap) = Printer::capture(OutputFormat::Json);
    let e = Error::Unreachable {
        target: "db".into(),
        reason: "refused for password hunter2-capture".into(),
    }
    .hinted("check hunter2-capture");
    p.error(&e);
    let err = cap.stderr();
    assert!(!err.contains("hunter2"), "{err}");
    assert_eq!(
        err,
        "error: cannot reach db: refused for password ***\n  hint: check ***\n"
    );
}

/// An interrupt, a cancelled question and a closed stdout say only that (or nothing).
#[test]
fn an_interrupt_says_only_that() {
    let (p, cap) = Printer::capture(OutputFormat::Table);
    p.error(&Error::Interrupted.hinted("ignored"));
    p.error(&Error::ClosedOutput);
    p.error(&Error::Stopped {
        source: Box::new(Error::Cancelled),
    });
    assert_eq!(cap.stderr(), "interrupted\ncancelled; nothing done\n");
}

/// Without a terminal, progress lines go to the printer's stderr.
#[test]
fn progress_lines_are_captured() {
    let (mut p, cap) = Printer::capture(OutputFormat::Json);
    p.progress_lines = Some(Duration::from_millis(20));
    let bar = p.progress(Some(10), "reading");
    bar.inc(4);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !cap.stderr().contains("reading: 4 messages of 10") {
        assert!(
            std::time::Instant::now() < deadline,
            "no progress line: {:?}",
            cap.stderr()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    bar.finish();
}

/// A question a captured printer cannot answer is refused as at no terminal.
#[test]
fn a_question_without_answers_needs_a_terminal() {
    let (p, cap) = Printer::capture(OutputFormat::Table);
    let e = p.confirm("Proceed?", "`dlqctl purge`").unwrap_err();
    assert!(matches!(e, Error::NoTerminal { .. }), "{e}");
    let p = p.answering(&[true]);
    assert!(p.confirm("Proceed?", "`dlqctl purge`").unwrap());
    assert!(p.confirm("Again?", "`dlqctl purge`").is_err(), "one answer");
    assert_eq!(cap.stderr(), "Proceed? [y/N] yes\n");
}

/// The audit trail's warnings (an outcome it could not write) go to the printer's stderr.
#[tokio::test]
async fn an_audit_warning_is_captured() {
    let (p, cap) = Printer::capture(OutputFormat::Json);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let intent = crate::audit::Intent {
        record: String::new(),
        run: String::new(),
        time: chrono::Utc::now(),
        user: "u".into(),
        host: "h".into(),
        version: "0".into(),
        command: "purge".into(),
        argv: Vec::new(),
        queue: None,
        source: "mem://q".into(),
        targets: Vec::new(),
        filter: String::new(),
        reason: None,
    };
    let audit = crate::audit::Audit::begin(async { Ok(None) }, path.clone(), intent, p.stderr())
        .await
        .unwrap();
    // The log becomes a directory: the outcome cannot be appended.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    audit.finish(0, serde_json::json!({"moved": 0}), None).await;
    let err = cap.stderr();
    assert!(
        err.starts_with("warning: cannot write the outcome to the audit log"),
        "{err}"
    );
}

/// A suggested command pastes as it is: each word comes back whole from a POSIX shell's
/// splitting, quotes, spaces and `$` in it included.
#[test]
fn a_suggested_command_line_splits_back_into_its_words() {
    let words = [
        "dlqctl",
        "peek",
        "sqs://orders-dlq.fifo",
        "--where",
        r#".group == "it's \"$HOME\" tenant 7""#,
    ];
    let line = command_line(&words);
    assert!(
        line.starts_with("dlqctl peek sqs://orders-dlq.fifo --where "),
        "{line}"
    );
    assert_eq!(shlex::split(&line).unwrap(), words, "{line}");
    let simple = command_line(&[
        "dlqctl",
        "peek",
        "sqs://q.fifo",
        "--where",
        r#".group == "cust-7""#,
    ]);
    assert_eq!(
        simple,
        r#"dlqctl peek sqs://q.fifo --where '.group == "cust-7"'"#
    );
}
