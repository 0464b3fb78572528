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
    insta::with_settings!({filters => vec![(r"\d+\.\ds \(\d+/s\)", "[time]")]}, {
        insta::assert_snapshot!(out.text());
    });
}

/// A purge with an archive: each message copied there (same id), then removed; one without
/// removes what the filters select and nothing else; a dry run removes nothing.
#[tokio::test]
async fn a_purge_archives_first_or_removes_what_it_selects() {
    let pair = Pair::seeded(60);
    let (ctx, out) = pair.ctx(OutputFormat::Json);
    let mut req = pair.request(Mode::Purge);
    req.dry_run = true;
    assert_eq!(run(&ctx, req).await.unwrap(), exit::OK);
    assert_eq!(pair.ids(&pair.dlq), all(60));
    assert_eq!(summary(&out)["moved"], 60);

    let (ctx, _) = pair.ctx(OutputFormat::Json);
    let mut req = pair.request(Mode::Purge);
    req.filter.class = vec!["permanent".into()];
    assert_eq!(run(&ctx, req).await.unwrap(), exit::OK);
    let (permanent, transient): (Vec<String>, Vec<String>) = all(60)
        .into_iter()
        .partition(|id| id[1..].parse::<usize>().unwrap() % 4 == 0);
    assert_eq!(pair.ids(&pair.main), permanent, "archived first, ids kept");
    assert_eq!(pair.ids(&pair.dlq), transient);
    assert!(
        pair.queues
            .messages(&pair.main)
            .iter()
            .all(|m| m.redrive_count() == 0),
        "an archive copy is not a redrive"
    );

    let (ctx, out) = pair.ctx(OutputFormat::Json);
    let mut req = pair.request(Mode::Purge);
    req.to = None;
    req.max = Some(10);
    assert_eq!(run(&ctx, req).await.unwrap(), exit::OK);
    assert_eq!(summary(&out)["moved"], 10);
    assert_eq!(
        pair.ids(&pair.dlq),
        transient[10..].to_vec(),
        "removed, nothing else"
    );
    assert_eq!(
        pair.ids(&pair.main).len(),
        permanent.len(),
        "and copied nowhere"
    );
}

/// The loop guard: every copy counts one more redrive; a message at --max-redrives stays
/// (held), or goes to --park.
#[tokio::test]
async fn the_loop_guard_holds_or_parks_what_keeps_coming_back() {
    let pair = Pair::seeded(20);
    // m0..m4 were redriven twice already.
    for m in pair.queues.queue(&pair.dlq).lock().unwrap().messages[..5].iter_mut() {
        m.count_redrive();
        m.count_redrive();
    }
    let (ctx, out) = pair.ctx(OutputFormat::Json);
    let mut req = pair.request(Mode::Redrive);
    req.max_redrives = Some(2);
    assert_eq!(run(&ctx, req).await.unwrap(), exit::OK);
    let s = summary(&out);
    assert_eq!(
        (s["moved"].as_u64(), s["held"].as_u64()),
        (Some(15), Some(5)),
        "{s}"
    );
    assert_eq!(pair.ids(&pair.dlq), all(5), "held where they were");
    let copies = pair.queues.messages(&pair.main);
    assert!(
        copies.iter().all(|m| m.redrive_count() == 1),
        "each copy counts one"
    );

    let park = Address::parse("postgres://app@db.internal/orders?table=parked").unwrap();
    let (ctx, out) = pair.ctx(OutputFormat::Json);
    let mut req = pair.request(Mode::Redrive);
    req.max_redrives = Some(2);
    req.park = Some((park.clone(), crate::backend::OpenOptions::default()));
    assert_eq!(run(&ctx, req).await.unwrap(), exit::OK);
    let s = summary(&out);
    assert_eq!(
        (s["parked"].as_u64(), s["held"].as_u64()),
        (Some(5), Some(0)),
        "{s}"
    );
    assert_eq!(pair.ids(&park), all(5));
    assert!(pair.ids(&pair.dlq).is_empty());
    assert!(
        pair.queues
            .messages(&park)
            .iter()
            .all(|m| m.redrive_count() == 3)
    );

    // A replay counts too, and the limit applies to it.
    let pair = Pair::seeded(4);
    pair.queues.queue(&pair.dlq).lock().unwrap().messages[0].count_redrive();
    let (ctx, out) = pair.ctx(OutputFormat::Json);
    let mut req = pair.request(Mode::Replay);
    req.max_redrives = Some(1);
    assert_eq!(run(&ctx, req).await.unwrap(), exit::OK);
    assert_eq!(summary(&out)["held"], 1);
    assert_eq!(pair.ids(&pair.main), all(4)[1..].to_vec());
}

/// --transform: each copy is the record mapped, same id; a message the transform refuses stays
/// (failed, with the reason); a dry run shows diffs and changes nothing.
#[tokio::test]
async fn a_transform_sends_the_mapped_record_and_never_a_new_id() {
    let pair = Pair::seeded(12);
    let (ctx, out) = pair.ctx(OutputFormat::Json);
    let mut req = pair.request(Mode::Redrive);
    req.dry_run = true;
    req.transform = Some(crate::query::Transform::compile(".json.fixed = true").unwrap());
    assert_eq!(run(&ctx, req).await.unwrap(), exit::OK);
    let s = summary(&out);
    assert_eq!(
        s["transform_preview"].as_array().map(Vec::len),
        Some(3),
        "{s}"
    );
    assert!(
        s["transform_preview"][0]
            .as_str()
            .unwrap()
            .contains("+    \"fixed\": true"),
        "{s}"
    );
    assert_eq!(pair.ids(&pair.dlq), all(12), "a dry run changes nothing");

    let (ctx, out) = pair.ctx(OutputFormat::Json);
    let mut req = pair.request(Mode::Redrive);
    // Odd orders get a new id: refused, they stay.
    req.transform = Some(
        crate::query::Transform::compile(
            r#"if (.json.order % 2 == 1) then .id = "new" else .json.fixed = true end"#,
        )
        .unwrap(),
    );
    assert_eq!(run(&ctx, req).await.unwrap(), exit::PARTIAL);
    let s = summary(&out);
    assert_eq!(
        (s["moved"].as_u64(), s["failed"].as_u64()),
        (Some(6), Some(6)),
        "{s}"
    );
    assert!(
        s["failures"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("stable id"),
        "{s}"
    );
    let copies = pair.queues.messages(&pair.main);
    assert!(copies.iter().all(|m| {
        let b: serde_json::Value = serde_json::from_slice(&m.body).unwrap();
        b["fixed"] == true
            && b["order"].as_u64().unwrap().is_multiple_of(2)
            && m.id == format!("m{}", b["order"])
    }));
    assert_eq!(pair.ids(&pair.dlq).len(), 6, "the refused ones stayed");
}
