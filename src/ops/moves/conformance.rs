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
    insta::with_settings!({filters => vec![(r"\d+\.\ds( \([\d,.]+/s\))?", "[time]")]}, {
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

/// Where settling a message settles every one before it in its partition (a Kafka redrive
/// group's offsets), a filtered run passes over only the skipped messages before the last one
/// it moves in each partition; the rest stay. Its dry run predicts how many it passes over,
/// and the summary says how many it did (`committed_past`); where each message is removed on
/// its own, that is always 0.
#[tokio::test]
async fn a_filtered_run_passes_over_only_what_it_must_and_says_how_many() {
    for by_position in [true, false] {
        let pair = Pair::seeded(40);
        {
            let q = pair.queues.queue(&pair.dlq);
            let mut q = q.lock().unwrap();
            q.by_position = by_position;
            for (i, m) in q.messages.iter_mut().enumerate() {
                m.partition = Some((i % 4) as i32);
            }
        }
        // m13 is the fourth message of partition 1, m22 the sixth of partition 2.
        let request = |dry_run: bool| {
            let mut req = pair.request(Mode::Redrive);
            req.dry_run = dry_run;
            req.batch_size = 7;
            req.filter.ids = Some(["m13", "m22"].map(String::from).into_iter().collect());
            req
        };
        let passed: Vec<String> = if by_position {
            [1, 5, 9, 2, 6, 10, 14, 18]
                .map(|i| format!("m{i}"))
                .to_vec()
        } else {
            Vec::new()
        };
        let (ctx, out) = pair.ctx(OutputFormat::Json);
        assert_eq!(run(&ctx, request(true)).await.unwrap(), exit::OK);
        let dry = summary(&out);
        assert_eq!(
            (dry["moved"].as_u64(), dry["committed_past"].as_u64()),
            (Some(2), Some(passed.len() as u64)),
            "by position: {by_position}: {dry}"
        );
        assert_eq!(pair.ids(&pair.dlq), all(40), "a dry run changes nothing");

        let (ctx, out) = pair.ctx(OutputFormat::Json);
        assert_eq!(run(&ctx, request(false)).await.unwrap(), exit::OK);
        let real = summary(&out);
        assert_eq!(
            real["committed_past"], dry["committed_past"],
            "the dry run predicted it: {real}"
        );
        assert_eq!(pair.ids(&pair.main), ["m13", "m22"]);
        let left: Vec<String> = all(40)
            .into_iter()
            .filter(|id| id != "m13" && id != "m22" && !passed.contains(id))
            .collect();
        assert_eq!(
            pair.ids(&pair.dlq),
            left,
            "by position: {by_position}: only what the run passed over is gone"
        );
    }
}

/// Where settling is by position, a message the loop guard holds would be passed over by the
/// next move in its partition: a redrive with `--max-redrives` needs `--park` there, and is
/// refused before anything moves (dry run included); with `--park` it runs.
#[tokio::test]
async fn where_settling_is_by_position_the_loop_guard_needs_a_park() {
    let pair = Pair::seeded(10);
    pair.queues.queue(&pair.dlq).lock().unwrap().by_position = true;
    for dry_run in [true, false] {
        let (ctx, _) = pair.ctx(OutputFormat::Json);
        let mut req = pair.request(Mode::Redrive);
        req.max_redrives = Some(2);
        req.dry_run = dry_run;
        let e = run(&ctx, req).await.unwrap_err();
        assert_eq!(e.exit_code(), exit::USAGE, "{e}");
        assert!(e.to_string().contains("--park"), "{e}");
    }
    assert_eq!(pair.ids(&pair.dlq), all(10), "nothing moved");
    let park = Address::parse("postgres://app@db.internal/orders?table=parked").unwrap();
    let (ctx, out) = pair.ctx(OutputFormat::Json);
    let mut req = pair.request(Mode::Redrive);
    req.max_redrives = Some(2);
    req.park = Some((park, crate::backend::OpenOptions::default()));
    assert_eq!(run(&ctx, req).await.unwrap(), exit::OK);
    assert_eq!(summary(&out)["moved"], 10);
    assert!(pair.ids(&pair.dlq).is_empty());
}

/// An accepted copy whose original the source did not remove (an SQS delete answered
/// Failed[], or acknowledged and undone) is a failure with its reason, not a move: the run ends
/// with exit 1 and the audit does not list it as moved. Redrive and purge alike.
#[tokio::test]
async fn a_copy_whose_original_stays_is_failed_not_moved() {
    for mode in [Mode::Redrive, Mode::Purge] {
        let pair = Pair::seeded(70);
        pair.queues.queue(&pair.dlq).lock().unwrap().keep_on_delete = Some("poison".into());
        let state = tempfile::tempdir().unwrap();
        let (mut ctx, out) = pair.ctx(OutputFormat::Json);
        ctx.aws.state_dir = Some(state.path().to_path_buf());
        let mut req = pair.request(mode);
        if mode == Mode::Purge {
            req.to = None;
        }
        assert_eq!(run(&ctx, req).await.unwrap(), exit::PARTIAL, "{mode:?}");
        let stuck: Vec<String> = all(70)
            .into_iter()
            .filter(|id| id[1..].parse::<usize>().unwrap() % 7 == 3)
            .collect();
        assert_eq!(pair.ids(&pair.dlq), stuck, "{mode:?}");
        let s = summary(&out);
        assert_eq!(
            (s["moved"].as_u64(), s["failed"].as_u64()),
            (Some(60), Some(10)),
            "{mode:?}: {s}"
        );
        assert_eq!(s["failures"][0]["reason"], "the source did not remove it");
        let audit = std::fs::read_to_string(state.path().join("audit.jsonl")).unwrap();
        let outcome: serde_json::Value = audit
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|r| r["record"] == "outcome")
            .unwrap();
        let listed: Vec<&str> = outcome["ids"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert_eq!(listed.len(), 60, "{mode:?}");
        assert!(
            stuck.iter().all(|id| !listed.contains(&id.as_str())),
            "{mode:?}: the audit lists a message that stayed as moved"
        );
    }
}

/// A transform cannot change the id as the queue's id rule reads it (`id = "json:/order"`: a
/// consumer reads the id there), nor dlqctl's own attributes (`dlqctl-redrive-count`, the loop
/// guard's count; `dlqctl-stable-id`): such a copy is refused, and the message stays.
#[tokio::test]
async fn a_transform_cannot_change_the_rule_id_nor_dlqctl_attributes() {
    let pair = Pair::seeded(10);
    // Redriven four times already: one more is allowed under --max-redrives 5.
    for m in pair
        .queues
        .queue(&pair.dlq)
        .lock()
        .unwrap()
        .messages
        .iter_mut()
    {
        for _ in 0..4 {
            m.count_redrive();
        }
    }
    for code in [
        ".json.order = 999",
        "del(.json.order)",
        r#".attrs["dlqctl-redrive-count"] = "0""#,
        r#"del(.attrs["dlqctl-redrive-count"])"#,
        ".attributes = []",
        r#".attrs["dlqctl-stable-id"] = "other""#,
    ] {
        for dry_run in [true, false] {
            let (ctx, out) = pair.ctx(OutputFormat::Json);
            let mut req = pair.request(Mode::Redrive);
            req.source.cfg.id = Some(crate::config::IdSource::Json("/order".into()));
            req.max_redrives = Some(5);
            req.dry_run = dry_run;
            req.transform = Some(crate::query::Transform::compile(code).unwrap());
            assert_eq!(run(&ctx, req).await.unwrap(), exit::PARTIAL, "{code}");
            let s = summary(&out);
            assert_eq!(
                (s["moved"].as_u64(), s["failed"].as_u64()),
                (Some(0), Some(10)),
                "{code}: {s}"
            );
            assert!(pair.ids(&pair.main).is_empty(), "{code}: nothing sent");
            assert_eq!(pair.ids(&pair.dlq), all(10), "{code}: every message stayed");
        }
    }
    // A transform that leaves them alone goes through; each copy counts one more redrive.
    let (ctx, _) = pair.ctx(OutputFormat::Json);
    let mut req = pair.request(Mode::Redrive);
    req.source.cfg.id = Some(crate::config::IdSource::Json("/order".into()));
    req.max_redrives = Some(5);
    req.transform = Some(crate::query::Transform::compile(".json.fixed = true").unwrap());
    assert_eq!(run(&ctx, req).await.unwrap(), exit::OK);
    let copies = pair.queues.messages(&pair.main);
    assert_eq!(copies.len(), 10);
    assert!(copies.iter().all(|m| m.redrive_count() == 5));
}

/// `edit`'s sending half: only the edited message leaves the source, as the edited copy (its
/// stable id, one redrive more), the backlog untouched; a message that changed after it was
/// opened stays as it is now (failed, exit 1); one that left is an error (exit 3), not a
/// clean "moved 0".
#[tokio::test]
async fn an_edit_moves_only_its_message_and_never_a_changed_one() {
    use crate::ops::edit::{EditRequest, Found, send};
    let pair = Pair::seeded(300);
    let edit = |pair: &Pair| EditRequest {
        queue: resolve_queue(&Config::default(), &AwsOptions::default(), DLQ).unwrap(),
        id: String::new(),
        to: Some((pair.main.clone(), crate::backend::OpenOptions::default())),
    };
    let opened = |pair: &Pair, i: usize| Found {
        message: pair.queues.messages(&pair.dlq)[i].clone(),
        passed: None,
    };
    let fixed = |m: &Message| Message {
        body: br#"{"order": 150, "fixed": true}"#.to_vec(),
        ..m.clone()
    };
    let found = opened(&pair, 150);
    let (ctx, _) = pair.ctx(OutputFormat::Json);
    let code = send(&ctx, &edit(&pair), &found, fixed(&found.message), None)
        .await
        .unwrap();
    assert_eq!(code, exit::OK);
    let mut left = all(300);
    left.remove(150);
    assert_eq!(pair.ids(&pair.dlq), left, "the backlog is untouched");
    let copies = pair.queues.messages(&pair.main);
    assert_eq!(copies.len(), 1);
    assert_eq!(
        (copies[0].id.as_str(), copies[0].body.as_slice()),
        ("m150", &br#"{"order": 150, "fixed": true}"#[..])
    );
    assert_eq!(copies[0].redrive_count(), 1);

    // Changed after it was opened: it stays, as it is now.
    let found = opened(&pair, 7);
    pair.queues.queue(&pair.dlq).lock().unwrap().messages[7].body =
        b"{\"order\": 7, \"v\": 2}".to_vec();
    let (ctx, out) = pair.ctx(OutputFormat::Json);
    let code = send(&ctx, &edit(&pair), &found, fixed(&found.message), None)
        .await
        .unwrap();
    assert_eq!(code, exit::PARTIAL);
    let s = summary(&out);
    assert!(
        s["failures"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("changed while the editor was open"),
        "{s}"
    );
    assert_eq!(
        pair.queues.messages(&pair.dlq)[7].body,
        b"{\"order\": 7, \"v\": 2}"
    );
    assert_eq!(pair.queues.messages(&pair.main).len(), 1);

    // Gone: an error, nothing sent.
    let found = opened(&pair, 9);
    pair.queues
        .queue(&pair.dlq)
        .lock()
        .unwrap()
        .messages
        .remove(9);
    let (ctx, _) = pair.ctx(OutputFormat::Json);
    let e = send(&ctx, &edit(&pair), &found, fixed(&found.message), None)
        .await
        .unwrap_err();
    assert_eq!(e.exit_code(), 3, "{e}");
    assert!(e.to_string().contains("while the editor was open"), "{e}");
    assert_eq!(pair.queues.messages(&pair.main).len(), 1);
    assert_eq!(pair.ids(&pair.dlq).len(), 298);
}
