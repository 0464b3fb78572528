//! What a person sees of a run, captured: the plan, the question and its answer, a
//! `--where`'s warnings and the final error with its hints all go through the printer.

use super::*;
use crate::query::Query;

fn ctx_with(pair: &Pair, printer: Printer) -> Ctx {
    Ctx {
        printer,
        config: Config::default(),
        aws: AwsOptions::default(),
        interrupt: Interrupt::default(),
        opener: Opener {
            memory: Some(pair.queues.clone()),
        },
        reason: None,
    }
}

/// Asked, the plan comes first, then the question; answered no, nothing is done and stdout
/// stays empty.
#[tokio::test]
async fn the_plan_and_the_question_are_captured_in_order() {
    let pair = Pair::seeded(8);
    let (printer, cap) = Printer::capture(OutputFormat::Json);
    let ctx = ctx_with(&pair, printer.answering(&[false]));
    let mut req = pair.request(Mode::Redrive);
    req.yes = false;
    assert_eq!(run(&ctx, req).await.unwrap(), exit::OK);
    assert_eq!(pair.ids(&pair.dlq), all(8), "answered no: nothing moved");
    let err = cap.stderr();
    let plan = err
        .find("operation")
        .unwrap_or_else(|| panic!("no plan:\n{err}"));
    let asked = err.find("Proceed? [y/N] no").expect("the question");
    let none = err.find("nothing done").expect("the note");
    assert!(plan < asked && asked < none, "{err}");
    assert_eq!(cap.text(), "", "nothing on stdout");
}

/// A `--where` that fails on a later message warns on the run's stderr, and says at the end
/// (after the summary) how many it failed on: both in the capture, not on the process's
/// stderr.
#[tokio::test]
async fn a_where_warns_through_the_printer() {
    let pair = Pair::seeded(6);
    let (printer, cap) = Printer::capture(OutputFormat::Json);
    let ctx = ctx_with(&pair, printer);
    let mut req = pair.request(Mode::Redrive);
    let mut q = Query::compile("--where", r#"if .id == "m0" then true else .id end"#).unwrap();
    q.watch(&ctx.interrupt, ctx.printer.stderr());
    req.filter.query = Some(q);
    assert_eq!(run(&ctx, req).await.unwrap(), exit::PARTIAL);
    let err = cap.stderr();
    assert!(err.contains("warning: `if .id"), "{err}");
    assert!(err.contains("on message m1"), "{err}");
    assert!(
        err.contains("warning: --where failed on 5 messages in all"),
        "{err}"
    );
    // The report comes as the filter is dropped, after the run's summary.
    let screen = cap.screen();
    let summary = screen.find("\"moved\"").expect("the summary");
    let report = screen.find("failed on 5 messages").unwrap();
    assert!(summary < report, "{screen}");
}

/// A refused run's error, printed by the printer: the problem on the error line, the fix on
/// the hint line under it.
#[tokio::test]
async fn a_refusal_shows_its_hint_under_the_error() {
    let pair = Pair::seeded(3);
    pair.queues.queue(&pair.dlq).lock().unwrap().by_position = true;
    let (printer, cap) = Printer::capture(OutputFormat::Table);
    let ctx = ctx_with(&pair, printer);
    let mut req = pair.request(Mode::Redrive);
    req.max_redrives = Some(2);
    let e = run(&ctx, req).await.unwrap_err();
    ctx.printer.error(&e);
    let err = cap.stderr();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("error: invalid value for --max-redrives: on Kafka")
            && lines[0].ends_with("could never be parked or redriven later"),
        "{err}"
    );
    assert!(
        lines[1].starts_with("  hint: with --max-redrives") && lines[1].contains("--park TARGET"),
        "{err}"
    );
}
