//! The contract's guards: a purge archives first, the loop guard holds or parks, settling by
//! position passes over only what it must, and a copy whose original stays is failed.

use super::*;

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

/// The loop guard: every copy counts one more redrive (header rules never drop the count); a
/// message at --max-redrives stays (held), or goes to --park.
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
    // Header rules that keep only other headers still carry the count.
    req.headers = crate::headers::HeaderRules::new(&["x-*".into()], &[]).unwrap();
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
        "each copy counts one, whatever the header rules keep"
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
        assert!(e.to_string().contains("could never be parked"), "{e}");
        assert!(e.hints().concat().contains("pass --park TARGET"), "{e}");
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

/// A batch counts as moved only once it is settled (operator report, RabbitMQ, 2026-12-06:
/// a connection closed at the `basic.ack` of a batch whose copies the target had confirmed
/// reported 110 moved while 100 had left the DLQ). Here the fourth settle fails: the run stops
/// with the backend's error (exit 3); `moved`, the audit's count and its ids are the 30
/// removed; the fourth batch is reported as copied but not removed (in `failed`, `failures`,
/// `copied_not_removed` and the abort reason), its originals still in the source; a re-run
/// moves the rest, and the fourth batch's messages are in the target twice, with their ids.
/// Redrive and purge with an archive alike.
#[tokio::test]
async fn a_batch_whose_settle_failed_is_not_counted_as_moved() {
    for mode in [Mode::Redrive, Mode::Purge] {
        let pair = Pair::seeded(100);
        pair.queues.queue(&pair.dlq).lock().unwrap().fail_settle_at = Some(4);
        let state = tempfile::tempdir().unwrap();
        let (mut ctx, out) = pair.ctx(OutputFormat::Json);
        ctx.aws.state_dir = Some(state.path().to_path_buf());
        let mut req = pair.request(mode);
        req.batch_size = 10;
        let e = run(&ctx, req).await.unwrap_err();
        assert_eq!(e.exit_code(), exit::BACKEND, "{mode:?}: {e}");
        assert!(e.to_string().contains("nothing was lost"), "{mode:?}: {e}");
        let removed = 100 - pair.ids(&pair.dlq).len() as u64;
        assert_eq!(removed, 30, "{mode:?}");
        assert_eq!(
            pair.ids(&pair.main),
            all(40),
            "{mode:?}: four batches copied"
        );
        let s = summary(&out);
        assert_eq!(s["moved"].as_u64(), Some(removed), "{mode:?}: {s}");
        assert_eq!(
            (s["copied_not_removed"].as_u64(), s["failed"].as_u64()),
            (Some(10), Some(10)),
            "{mode:?}: {s}"
        );
        assert_eq!(s["destinations"][0]["messages"], 30, "{mode:?}: {s}");
        assert!(
            s["failures"][0]["reason"]
                .as_str()
                .is_some_and(|r| r
                    .contains("the copy is in the target and the original still in the source")),
            "{mode:?}: {s}"
        );
        assert_eq!(s["failures"][0]["ids"][0], "m30", "{mode:?}: {s}");
        let aborted = s["aborted"].as_str().unwrap_or_default();
        assert!(
            aborted.contains("the last 10 message(s)") && aborted.contains("duplicates"),
            "{mode:?}: {aborted}"
        );
        let audit = std::fs::read_to_string(state.path().join("audit.jsonl")).unwrap();
        let outcome: serde_json::Value = audit
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|r| r["record"] == "outcome")
            .unwrap();
        assert_eq!(outcome["counts"]["moved"], 30, "{mode:?}: {outcome}");
        assert_eq!(outcome["counts"]["copied_not_removed"], 10, "{mode:?}");
        assert_eq!(outcome["exit_code"], exit::BACKEND, "{mode:?}");
        assert_eq!(outcome["error"].as_str(), Some(aborted), "{mode:?}");
        let listed: Vec<&str> = outcome["ids"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert_eq!(listed, all(30), "{mode:?}: the audit lists only what left");

        // The re-run moves the rest; the fourth batch is in the target twice, same ids.
        pair.queues.queue(&pair.dlq).lock().unwrap().fail_settle_at = None;
        let (ctx, out) = pair.ctx(OutputFormat::Json);
        assert_eq!(run(&ctx, pair.request(mode)).await.unwrap(), exit::OK);
        assert_eq!(summary(&out)["moved"], 70, "{mode:?}");
        assert!(pair.ids(&pair.dlq).is_empty(), "{mode:?}");
        let mut got = pair.ids(&pair.main);
        got.sort();
        let mut want = all(100);
        want.extend(all(40)[30..].iter().cloned());
        want.sort();
        assert_eq!(got, want, "{mode:?}: nothing lost, the fourth batch twice");
    }
}
