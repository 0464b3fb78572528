//! The move engine's contract on in-memory queues (no services): everything once with its
//! stable id, dry runs change nothing, `--max` and filters leave the rest, refused copies stay,
//! an interrupted run loses nothing, a replay removes nothing. The same contract runs against
//! every real backend pair in `tests/it/conformance.rs`.

use std::sync::Arc;

use regex::Regex;

use super::{Mode, MoveRequest, run};
use crate::address::Address;
use crate::backend::memory::Queues;
use crate::backend::{AwsOptions, Opener};
use crate::classify::Classifier;
use crate::config::Config;
use crate::error::exit;
use crate::filter::Filter;
use crate::message::{ErrorInfo, Message};
use crate::output::{Captured, OutputFormat, Printer};
use crate::settings::{Ctx, Interrupt, resolve_queue};

mod guards;
mod predict;
mod terminal;
mod transforms;

const DLQ: &str = "postgres://app@db.internal/orders?table=dead_letters";
const MAIN: &str = "postgres://app@db.internal/orders?table=queue_messages";

/// A source and a target in memory, and the context a run gets.
struct Pair {
    queues: Arc<Queues>,
    dlq: Address,
    main: Address,
}

impl Pair {
    /// `n` dead letters, ids `m0…`; every fourth failed permanently ("validation failed"),
    /// every seventh body holds "poison".
    fn seeded(n: usize) -> Pair {
        let queues = Arc::new(Queues::default());
        let dlq = Address::parse(DLQ).unwrap();
        let main = Address::parse(MAIN).unwrap();
        let q = queues.queue(&dlq);
        q.lock().unwrap().messages = (0..n)
            .map(|i| Message {
                id: format!("m{i}"),
                native_id: format!("row-{i}"),
                body: if i % 7 == 3 {
                    format!("{{\"order\": {i}, \"poison\": true}}")
                } else {
                    format!("{{\"order\": {i}}}")
                }
                .into_bytes(),
                error: Some(ErrorInfo {
                    message: Some(if i % 4 == 0 {
                        "validation failed: amount".into()
                    } else {
                        "upstream timed out after 30s".into()
                    }),
                    ..ErrorInfo::default()
                }),
                ..Message::default()
            })
            .collect();
        Pair { queues, dlq, main }
    }

    fn ctx(&self, format: OutputFormat) -> (Ctx, Captured) {
        let (printer, out) = Printer::capture(format);
        let ctx = Ctx {
            printer,
            config: Config::default(),
            aws: AwsOptions::default(),
            interrupt: Interrupt::default(),
            opener: Opener {
                memory: Some(self.queues.clone()),
            },
            reason: None,
        };
        (ctx, out)
    }

    fn request(&self, mode: Mode) -> MoveRequest {
        let source = resolve_queue(&Config::default(), &AwsOptions::default(), DLQ).unwrap();
        MoveRequest {
            mode,
            source,
            to: Some((self.main.clone(), crate::backend::OpenOptions::default())),
            filter: Filter::default(),
            classifier: Classifier::builtin(),
            max: None,
            rate: None,
            batch_size: 40,
            dry_run: false,
            yes: true,
            exactly_once: false,
            headers: Default::default(),
            max_redrives: None,
            park: None,
            transform: None,
        }
    }

    fn ids(&self, addr: &Address) -> Vec<String> {
        self.queues
            .messages(addr)
            .into_iter()
            .map(|m| m.id)
            .collect()
    }
}

fn all(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("m{i}")).collect()
}

fn summary(out: &Captured) -> serde_json::Value {
    serde_json::from_str(&out.text()).unwrap_or_else(|e| panic!("{e}: {}", out.text()))
}

/// Every message arrives once, in order, with its stable id; the source is empty.
#[tokio::test]
async fn a_redrive_moves_everything_once_with_its_id() {
    let pair = Pair::seeded(250);
    let (ctx, out) = pair.ctx(OutputFormat::Json);
    let code = run(&ctx, pair.request(Mode::Redrive)).await.unwrap();
    assert_eq!(code, exit::OK);
    assert_eq!(pair.ids(&pair.main), all(250));
    assert!(pair.ids(&pair.dlq).is_empty());
    let copies = pair.queues.messages(&pair.main);
    assert!(copies.iter().all(|m| m.native_id.starts_with("mem-")));
    let s = summary(&out);
    assert_eq!(
        (s["moved"].as_u64(), s["examined"].as_u64()),
        (Some(250), Some(250))
    );
}

#[tokio::test]
async fn a_dry_run_changes_nothing() {
    let pair = Pair::seeded(90);
    let (ctx, out) = pair.ctx(OutputFormat::Json);
    let mut req = pair.request(Mode::Redrive);
    req.dry_run = true;
    assert_eq!(run(&ctx, req).await.unwrap(), exit::OK);
    assert_eq!(pair.ids(&pair.dlq), all(90));
    assert!(pair.ids(&pair.main).is_empty());
    assert_eq!(summary(&out)["moved"], 90, "counted as would-send");
}

#[tokio::test]
async fn max_moves_the_first_n_and_leaves_the_rest() {
    let pair = Pair::seeded(100);
    let (ctx, _) = pair.ctx(OutputFormat::Json);
    let mut req = pair.request(Mode::Redrive);
    req.max = Some(55);
    assert_eq!(run(&ctx, req).await.unwrap(), exit::OK);
    assert_eq!(pair.ids(&pair.main), all(55));
    assert_eq!(pair.ids(&pair.dlq), all(100)[55..].to_vec());
}

#[tokio::test]
async fn a_filter_moves_only_what_matches() {
    let pair = Pair::seeded(100);
    let (ctx, out) = pair.ctx(OutputFormat::Json);
    let mut req = pair.request(Mode::Redrive);
    req.filter.class = vec!["transient".into()];
    assert_eq!(run(&ctx, req).await.unwrap(), exit::OK);
    let (permanent, transient): (Vec<String>, Vec<String>) = all(100)
        .into_iter()
        .partition(|id| id[1..].parse::<usize>().unwrap() % 4 == 0);
    assert_eq!(pair.ids(&pair.main), transient);
    assert_eq!(pair.ids(&pair.dlq), permanent);
    assert_eq!(summary(&out)["skipped"], 25);
}

#[tokio::test]
async fn refused_copies_stay_in_the_source_and_the_run_says_so() {
    let pair = Pair::seeded(70);
    pair.queues
        .queue(&pair.main)
        .lock()
        .unwrap()
        .reject_bodies_with = Some("poison".into());
    let (ctx, out) = pair.ctx(OutputFormat::Json);
    assert_eq!(
        run(&ctx, pair.request(Mode::Redrive)).await.unwrap(),
        exit::PARTIAL
    );
    let poisoned: Vec<String> = all(70)
        .into_iter()
        .filter(|id| id[1..].parse::<usize>().unwrap() % 7 == 3)
        .collect();
    assert_eq!(pair.ids(&pair.dlq), poisoned);
    assert_eq!(pair.ids(&pair.main).len(), 70 - poisoned.len());
    let s = summary(&out);
    assert_eq!(s["failed"], poisoned.len());
    assert_eq!(s["failures"][0]["ids"][0], "m3");
}

#[tokio::test]
async fn an_interrupted_redrive_loses_nothing_and_a_rerun_finishes() {
    let pair = Pair::seeded(200);
    let (ctx, out) = pair.ctx(OutputFormat::Json);
    pair.queues
        .queue(&pair.main)
        .lock()
        .unwrap()
        .interrupt_after = Some((50, ctx.interrupt.clone()));
    assert_eq!(
        run(&ctx, pair.request(Mode::Redrive)).await.unwrap(),
        exit::INTERRUPTED
    );
    let (left, moved) = (pair.ids(&pair.dlq), pair.ids(&pair.main));
    assert!(!left.is_empty() && !moved.is_empty(), "stopped midway");
    let mut both: Vec<String> = left.iter().chain(&moved).cloned().collect();
    both.sort();
    let mut want = all(200);
    want.sort();
    assert_eq!(both, want, "each message in exactly one place");
    assert_eq!(summary(&out)["interrupted"], true);

    pair.queues
        .queue(&pair.main)
        .lock()
        .unwrap()
        .interrupt_after = None;
    let (ctx, _) = pair.ctx(OutputFormat::Json);
    assert_eq!(
        run(&ctx, pair.request(Mode::Redrive)).await.unwrap(),
        exit::OK
    );
    assert!(pair.ids(&pair.dlq).is_empty());
    assert_eq!(pair.ids(&pair.main).len(), 200);
}

#[tokio::test]
async fn a_replay_copies_and_removes_nothing() {
    let pair = Pair::seeded(60);
    let (ctx, _) = pair.ctx(OutputFormat::Json);
    assert_eq!(
        run(&ctx, pair.request(Mode::Replay)).await.unwrap(),
        exit::OK
    );
    assert_eq!(pair.ids(&pair.dlq), all(60));
    assert_eq!(pair.ids(&pair.main), all(60));
}

#[tokio::test]
async fn the_source_as_its_own_target_is_refused_before_anything_moves() {
    let pair = Pair::seeded(10);
    let (ctx, _) = pair.ctx(OutputFormat::Json);
    let mut req = pair.request(Mode::Redrive);
    req.to = Some((pair.dlq.clone(), Default::default()));
    let e = run(&ctx, req).await.unwrap_err();
    assert_eq!(e.exit_code(), exit::USAGE, "{e}");
    assert_eq!(pair.ids(&pair.dlq), all(10));
}

/// The summary a person reads at a terminal, as they see it (times masked).
#[tokio::test]
async fn the_human_summary_names_what_stayed_and_why() {
    let pair = Pair::seeded(30);
    pair.queues
        .queue(&pair.main)
        .lock()
        .unwrap()
        .reject_bodies_with = Some("poison".into());
    let (ctx, out) = pair.ctx(OutputFormat::Table);
    let mut req = pair.request(Mode::Redrive);
    req.filter.error = Some(Regex::new("timed out").unwrap());
    assert_eq!(run(&ctx, req).await.unwrap(), exit::PARTIAL);
    insta::with_settings!({filters => vec![(r"\d+\.\ds( \([\d,.]+/s\))?", "[time]")]}, {
        insta::assert_snapshot!(out.text());
    });
}
