//! The fault suite: seeded SIGKILL instants and injected network faults, each followed by a
//! re-run, as functions over a backend pair (`pair.rs`). After each, three checks:
//!
//! 1. every message is in the source or in the target (nothing lost): the re-run leaves the
//!    source empty and every seeded stable id is in the target;
//! 2. every copy carries its stable id, and no other (a repeat is harmless: an idempotent
//!    consumer turns it into a no-op), and a move within one database copies nothing twice;
//! 3. the exit codes are the documented ones (a killed run aside): 0, 1 (some messages not
//!    moved) or 3 (the backend failed); never 2 ("nothing was changed") once something moved,
//!    never a panic.
//!
//! Kill instants are chosen by a seeded generator (`DLQCTL_FAULT_SEED` replays a failure): a
//! number of copies to wait for (0 = at once) and a few milliseconds more. Faults fire on the
//! n-th request of a kind, seen on the wire by the proxy (`proxy.rs`), whatever the timing.
//! Each test prints its figures (`reliability:` lines), gathered in docs/reliability.md.

use std::collections::HashSet;
use std::time::Duration;

use rand::{RngExt, SeedableRng};

use crate::harness::Sandbox;
use crate::pair::{KafkaPair, Pair, PgSameDb, PgTwoDb, River, SqsPair, spawn_redrive};
use crate::proxy::{Proxy, Trigger, When};

/// Messages per run: ten batches of four.
pub(crate) const N: usize = 40;
const BATCH: &str = "4";

/// The seed of the kill instants: fixed, so a run can be replayed; overridden by
/// `DLQCTL_FAULT_SEED`.
fn seed() -> u64 {
    std::env::var("DLQCTL_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261204)
}

/// Kill points per pair: 20, or `DLQCTL_KILL_POINTS` (to replay one, or to go further).
pub(crate) fn points() -> usize {
    std::env::var("DLQCTL_KILL_POINTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
}

/// What a pair went through, for docs/reliability.md.
#[derive(Default, Debug)]
pub struct Figures {
    pub kills: usize,
    /// Kill instants at which the run had already finished (nothing to kill).
    pub finished_first: usize,
    pub faults: usize,
    pub messages: usize,
    pub lost: usize,
    /// Copies of a message beyond the first, all with its stable id.
    pub duplicates: usize,
}

impl Figures {
    pub(crate) fn report(&self, pair: &str, what: &str) {
        eprintln!(
            "reliability: {pair} {what}: kill points {} (run over before the instant: {}), faults {}, messages {}, lost {}, duplicates {} (all with their stable id)",
            self.kills, self.finished_first, self.faults, self.messages, self.lost, self.duplicates
        );
    }
}

/// The checks after a re-run (see the module doc); returns the number of duplicates.
pub async fn check<P: Pair>(p: &P, ids: &[String], context: &str) -> usize {
    assert_eq!(
        p.remaining().await,
        0,
        "{context}: the re-run left messages in the source"
    );
    let got = p.target_ids().await;
    assert!(
        got.iter().all(Option::is_some),
        "{context}: a copy without its stable id"
    );
    let got: Vec<String> = got.into_iter().flatten().collect();
    let seen: HashSet<&str> = got.iter().map(String::as_str).collect();
    let seeded: HashSet<&str> = ids.iter().map(String::as_str).collect();
    let lost: Vec<&&str> = seeded.difference(&seen).collect();
    assert!(lost.is_empty(), "{context}: lost {lost:?}");
    let strangers: Vec<&&str> = seen.difference(&seeded).collect();
    assert!(
        strangers.is_empty(),
        "{context}: copies with ids that were never seeded: {strangers:?}"
    );
    let duplicates = got.len() - seen.len();
    if !p.may_duplicate() {
        assert_eq!(
            duplicates, 0,
            "{context}: a one-transaction move copied twice"
        );
    }
    duplicates
}

/// Re-run the redrive to its end (exit 0) and check. A re-run may end with exit 1 having
/// reported, honestly, that it lost its hold on some messages (SQS: their visibility ran out
/// before the heartbeat extended it, which a loaded machine makes likelier with the pairs' 2 s
/// timeout): their copies were sent, the originals were not deleted and are counted failed,
/// so one more run settles them. Any other failure, or a third such run, fails the test.
async fn rerun_and_check<P: Pair>(p: &P, sb: &Sandbox, ids: &[String], context: &str) -> usize {
    let mut args = p.redrive();
    args.extend(["--yes", "--output", "json"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    for attempt in 1..=3 {
        let r = sb.run_with(&args, &p.env(sb));
        let lost_hold_only = r.code == 1
            && serde_json::from_str::<serde_json::Value>(&r.stdout).is_ok_and(|j| {
                j["failures"].as_array().is_some_and(|f| {
                    !f.is_empty()
                        && f.iter()
                            .all(|g| g["reason"] == "this run no longer held it")
                })
            });
        if r.code == 0 {
            break;
        }
        assert!(
            lost_hold_only && attempt < 3,
            "{context}: the re-run failed\nstdout:\n{}\nstderr:\n{}",
            r.stdout,
            r.stderr
        );
        p.settle().await;
    }
    check(p, ids, context).await
}

/// `points` seeded SIGKILL instants, each followed by a re-run and the checks.
pub async fn kill_points<P: Pair>(p: &mut P, points: usize) -> Figures {
    let seed = seed();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ hash(&p.name()));
    let mut f = Figures::default();
    for k in 0..points {
        let started = std::time::Instant::now();
        let ids = p.fresh(N).await;
        let seeded = started.elapsed();
        let at = rng.random_range(0..N as u64);
        let extra = Duration::from_millis(rng.random_range(0..25));
        let context = format!(
            "{} kill point {k} (seed {seed}: after {at} copies and {} ms)",
            p.name(),
            extra.as_millis()
        );
        let sb = Sandbox::new();
        let mut child = spawn_redrive(p, &sb, &["--batch-size", BATCH, "--rate", "400/s"]);
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            if child.try_wait().unwrap().is_some() || p.copies().await >= at {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{context}: the run made no progress"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(extra).await;
        match child.try_wait().unwrap() {
            Some(status) => {
                // Over before the instant: it must have succeeded.
                f.finished_first += 1;
                let out = child.wait_with_output().unwrap();
                assert_eq!(
                    status.code(),
                    Some(0),
                    "{context}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            None => {
                child.kill().unwrap();
                child.wait().unwrap();
            }
        }
        let killed_at = started.elapsed();
        p.settle().await;
        let settled_at = started.elapsed();
        f.kills += 1;
        f.messages += N;
        f.duplicates += rerun_and_check(p, &sb, &ids, &context).await;
        eprintln!(
            "{context}: seeded {:?}, killed {:?}, settled {:?}, re-run and checked {:?}",
            seeded,
            killed_at,
            settled_at,
            started.elapsed()
        );
    }
    f
}

/// One injected fault: arm it, run a redrive through the proxy, expect one of `codes`, then
/// re-run and check. Returns the number of duplicates.
pub async fn fault<P: Pair>(
    p: &mut P,
    proxy: &Proxy,
    arm: impl FnOnce(&Proxy),
    codes: &[i32],
    what: &str,
) -> usize {
    let ids = p.fresh(N).await;
    let context = format!("{} fault `{what}`", p.name());
    let before = proxy.fired();
    arm(proxy);
    let sb = Sandbox::new();
    let mut args = p.redrive();
    args.extend(["--yes", "--output", "json", "--batch-size", BATCH].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = sb.run_with(&args, &p.env(&sb));
    proxy.disarm();
    assert!(
        proxy.fired() > before,
        "{context}: the fault never fired (the run did not send such a request)\nstderr:\n{}",
        r.stderr
    );
    assert!(
        codes.contains(&r.code),
        "{context}: exit {} (documented here: {codes:?})\nstdout:\n{}\nstderr:\n{}",
        r.code,
        r.stdout,
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{context}: {}", r.stderr);
    if r.code == 3 {
        // A failed backend is reported as one error line, with the summary on stdout.
        assert!(r.stderr.contains("error:"), "{context}: {}", r.stderr);
    }
    p.settle().await;
    // What the run says it moved left the source: a batch whose removal was lost is not
    // counted (a RabbitMQ ack written and not read before a reset, a failed delete).
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&r.stdout)
        && let Some(moved) = v["moved"].as_u64()
    {
        let left = p.remaining().await;
        assert!(
            moved <= N as u64 - left,
            "{context}: the run says it moved {moved}, but {left} of {N} are still in the source\nstdout:\n{}",
            r.stdout
        );
    }
    rerun_and_check(p, &sb, &ids, &context).await
}

fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// The faults a PostgreSQL pair meets: the connection reset mid-batch, between the copy and
/// the delete, around the commit; a stall.
/// `ranges`: the pair moves by key range, each batch one statement that is its own
/// transaction (no `COMMIT` is sent: the statement's own commit is the point to fault).
async fn pg_faults<P: Pair>(p: &mut P, f: &mut Figures, ranges: bool) {
    let proxy = Proxy::start(p.upstream(), false);
    p.via(proxy.port);
    // The proxy sees a statement's text only when a connection prepares it: a batch's DELETE
    // is sent as text once per pooled connection. Range moves have two texts (the first
    // batch's and the later ones'), so a second is always sent; a claimed batch's DELETE has
    // one, and whether a later batch prepares it again depends on which pooled connection
    // it gets. Those fault the first DELETE.
    // The same holds for a claimed batch's copy (INSERT): a second text is sent only when a
    // later batch gets another pooled connection, which a busy machine makes rare (a run under
    // load sent none), so the first copy is reset.
    let delete_nth = if ranges { 2 } else { 1 };
    let mut cases: Vec<(&str, Trigger, usize, When)> = vec![
        (
            "reset mid-batch (the copy statement)",
            Trigger::Bytes(b"INSERT INTO".to_vec()),
            delete_nth,
            When::Before,
        ),
        (
            "reset before a DELETE (between copy and delete)",
            Trigger::Bytes(b"DELETE FROM".to_vec()),
            delete_nth,
            When::Before,
        ),
        (
            "reset after a DELETE ran, before its answer",
            Trigger::Bytes(b"DELETE FROM".to_vec()),
            delete_nth,
            When::AfterResponse,
        ),
    ];
    if ranges {
        cases.push((
            "a 2 s stall on a range statement",
            Trigger::Bytes(b"WITH b AS".to_vec()),
            2,
            When::Stall(Duration::from_secs(2)),
        ));
    } else {
        cases.extend([
            (
                "reset before a COMMIT",
                Trigger::Bytes(b"COMMIT".to_vec()),
                3,
                When::Before,
            ),
            (
                "reset after a COMMIT, before its answer",
                Trigger::Bytes(b"COMMIT".to_vec()),
                3,
                When::AfterResponse,
            ),
            (
                "a 2 s stall on a COMMIT",
                Trigger::Bytes(b"COMMIT".to_vec()),
                2,
                When::Stall(Duration::from_secs(2)),
            ),
        ]);
    }
    for (what, t, nth, when) in cases {
        let codes: &[i32] = if matches!(when, When::Stall(_)) {
            &[0]
        } else {
            &[0, 3]
        };
        f.duplicates += fault(p, &proxy, |x| x.arm(t, nth, when), codes, what).await;
        f.faults += 1;
        f.messages += N;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn pg_same_database_survives_kills_and_faults() {
    let mut p = PgSameDb::new();
    let mut f = kill_points(&mut p, points()).await;
    pg_faults(&mut p, &mut f, true).await;
    f.report("pg-same-db", "generic layout, one transaction per batch");
}

#[tokio::test(flavor = "multi_thread")]
async fn pg_two_databases_survive_kills_and_faults() {
    let mut p = PgTwoDb::new();
    let mut f = kill_points(&mut p, points()).await;
    pg_faults(&mut p, &mut f, false).await;
    f.report("pg-two-db", "copy into another database, then delete");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_system_survives_kills_and_faults() {
    let mut p = River::new();
    let mut f = kill_points(&mut p, points()).await;
    let proxy = Proxy::start(p.upstream(), false);
    p.via(proxy.port);
    for (what, t, nth, when) in [
        (
            "reset before a retry UPDATE",
            Trigger::Bytes(b"UPDATE".to_vec()),
            2,
            When::Before,
        ),
        // Each range retry is one statement and its own transaction: no COMMIT is sent.
        (
            "a 2 s stall on a range retry",
            Trigger::Bytes(b"UPDATE".to_vec()),
            2,
            When::Stall(Duration::from_secs(2)),
        ),
    ] {
        f.duplicates += fault(&mut p, &proxy, |x| x.arm(t, nth, when), &[0, 3], what).await;
        f.faults += 1;
        f.messages += N;
    }
    f.report("river", "retried in place");
}

async fn sqs_faults(p: &mut SqsPair, f: &mut Figures) {
    let proxy = Proxy::start(p.upstream(), false);
    p.via(proxy.port);
    let sqs = |a: &str| Trigger::Bytes(format!("AmazonSQS.{a}").into_bytes());
    let cases: Vec<(&str, Trigger, usize, When)> = vec![
        (
            "reset on a SendMessageBatch (mid-batch)",
            sqs("SendMessageBatch"),
            2,
            When::Before,
        ),
        (
            "reset after a SendMessageBatch, before its answer",
            sqs("SendMessageBatch"),
            2,
            When::AfterResponse,
        ),
        (
            "reset on a DeleteMessageBatch (between copy and delete)",
            sqs("DeleteMessageBatch"),
            1,
            When::Before,
        ),
        (
            "reset after a DeleteMessageBatch, before its answer",
            sqs("DeleteMessageBatch"),
            1,
            When::AfterResponse,
        ),
        (
            "reset on a ReceiveMessage",
            sqs("ReceiveMessage"),
            2,
            When::Before,
        ),
        (
            "a 2 s stall on a SendMessageBatch",
            sqs("SendMessageBatch"),
            1,
            When::Stall(Duration::from_secs(2)),
        ),
    ];
    for (what, t, nth, when) in cases {
        // The SDK retries a reset request: most runs recover (0).
        f.duplicates += fault(p, &proxy, |x| x.arm(t, nth, when), &[0, 1, 3], what).await;
        f.faults += 1;
        f.messages += N;
    }
    // The visibility heartbeat keeps failing: the run takes no new batch and stops (exit 3),
    // before a held message could become visible to someone else. (Standard queues: a FIFO
    // run gives skipped messages back at once, so it holds nothing between batches.)
    if p.name() == "sqs-fifo" {
        return;
    }
    let ids = p.fresh(N).await;
    let sb = Sandbox::new();
    proxy.arm_always(sqs("ChangeMessageVisibilityBatch"), When::Before);
    let mut args = p.redrive();
    // A filter that skips one in ten: the skipped messages stay hidden until the run ends
    // (so that it does not read them twice), and the heartbeat must extend them. One message
    // a batch at 5/s: the run outlasts the first heartbeat (1 s: a third of the pair's 2 s
    // visibility timeout, at least 1 s) many times over.
    args.extend(
        [
            "--yes",
            "--output",
            "json",
            "--batch-size",
            "1",
            "--rate",
            "5/s",
            "--match",
            r#""m-\d*[0-8]""#,
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = sb.run_with(&args, &p.env(&sb));
    proxy.disarm();
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("visibility heartbeat failed") && r.stderr.contains("no new batch"),
        "{}",
        r.stderr
    );
    let moved = r.json()["moved"].as_u64().unwrap();
    assert!(moved < N as u64, "stopped early ({moved} of {N})");
    p.settle().await;
    f.duplicates += rerun_and_check(p, &sb, &ids, "heartbeat failure").await;
    f.faults += 1;
    f.messages += N;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_standard_survives_kills_and_faults() {
    let mut p = SqsPair::new(false);
    let mut f = kill_points(&mut p, points()).await;
    sqs_faults(&mut p, &mut f).await;
    f.report("sqs-standard", "send, journal, delete");
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_fifo_survives_kills_and_faults() {
    let mut p = SqsPair::new(true);
    let mut f = kill_points(&mut p, points()).await;
    sqs_faults(&mut p, &mut f).await;
    f.report("sqs-fifo", "send, journal, delete");
}

#[tokio::test(flavor = "multi_thread")]
async fn kafka_survives_kills_and_faults() {
    let mut p = KafkaPair::new();
    let mut f = kill_points(&mut p, points()).await;
    // Faults need a broker that advertises the proxy (clients follow advertised addresses).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (mut q, broker) = KafkaPair::own_broker(listener.local_addr().unwrap().port()).await;
    let proxy = Proxy::start_on(listener, broker, true);
    for (what, t, nth, when) in [
        (
            "reset on a Produce (mid-batch)",
            Trigger::KafkaApi(0),
            2,
            When::Before,
        ),
        (
            "reset after a Produce, before its answer",
            Trigger::KafkaApi(0),
            2,
            When::AfterResponse,
        ),
        (
            "reset on an OffsetCommit (during the commit)",
            Trigger::KafkaApi(8),
            1,
            When::Before,
        ),
        (
            "reset after an OffsetCommit, before its answer",
            Trigger::KafkaApi(8),
            1,
            When::AfterResponse,
        ),
        ("reset on a Fetch", Trigger::KafkaApi(1), 2, When::Before),
        (
            "a 2 s stall on a Produce",
            Trigger::KafkaApi(0),
            1,
            When::Stall(Duration::from_secs(2)),
        ),
    ] {
        f.duplicates += fault(&mut q, &proxy, |x| x.arm(t, nth, when), &[0, 3], what).await;
        f.faults += 1;
        f.messages += N;
    }
    f.report("kafka", "produce, then commit");
}

/// The checks can fail: a copy lost behind dlqctl's back is caught.
#[tokio::test(flavor = "multi_thread")]
async fn the_checks_catch_a_lost_message() {
    let mut p = PgSameDb::new();
    let ids = p.fresh(3).await;
    let sb = Sandbox::new();
    let mut args = p.redrive();
    args.extend(["--yes", "--output", "json"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sb.run(&args).ok();
    p.exec("DELETE FROM {s}.queue_messages WHERE message_id = 'm-1'")
        .await;
    let caught = tokio::spawn(async move { check(&p, &ids, "self-test").await }).await;
    let msg = caught
        .expect_err("check accepted a lost message")
        .into_panic()
        .downcast::<String>()
        .map(|s| *s)
        .unwrap_or_default();
    assert!(msg.contains("lost") && msg.contains("m-1"), "{msg}");
}

/// The faults a Redis job library meets: the connection reset before the retry script, after
/// it ran and before its answer (the client cannot know it ran), before a removal and after
/// it; a stall. Each script removes the exact member and acts only if it was there, so a
/// re-run retries the rest and nothing twice.
async fn redis_faults<P: Pair>(p: &mut P, f: &mut Figures, retry: bool) {
    let proxy = Proxy::start(p.upstream(), false);
    p.via(proxy.port);
    let (cmd, what) = if retry {
        ("EVALSHA", "the retry script (EVALSHA)")
    } else {
        ("ZREM", "the removal (ZREM)")
    };
    let cases: Vec<(String, Trigger, usize, When)> = vec![
        (
            format!("reset before {what}"),
            Trigger::RedisCommand(cmd),
            2,
            When::Before,
        ),
        (
            format!("reset after {what} ran, before its answer"),
            Trigger::RedisCommand(cmd),
            2,
            When::AfterResponse,
        ),
        (
            "reset on a read (ZRANGE)".into(),
            Trigger::RedisCommand("ZRANGE"),
            3,
            When::Before,
        ),
        (
            format!("a 2 s stall on {what}"),
            Trigger::RedisCommand(cmd),
            1,
            When::Stall(Duration::from_secs(2)),
        ),
    ];
    for (what, t, nth, when) in cases {
        let codes: &[i32] = if matches!(when, When::Stall(_)) {
            &[0]
        } else {
            &[0, 3]
        };
        f.duplicates += fault(p, &proxy, |x| x.arm(t, nth, when), codes, &what).await;
        f.faults += 1;
        f.messages += N;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sidekiq_survives_kills_and_faults() {
    let mut p = crate::pair::SidekiqPair::new();
    let mut f = kill_points(&mut p, points()).await;
    redis_faults(&mut p, &mut f, true).await;
    f.report("sidekiq", "retried in place, one Lua script per batch");
}

#[tokio::test(flavor = "multi_thread")]
async fn bullmq_survives_kills_and_faults() {
    let mut p = crate::pair::BullMqPair::new();
    let mut f = kill_points(&mut p, points()).await;
    redis_faults(&mut p, &mut f, true).await;
    f.report(
        "bullmq",
        "retried in place by BullMQ's reprocessJob, one script call per batch",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sidekiq_to_a_pg_table_survives_kills_and_faults() {
    let mut p = crate::pair::SidekiqToPg::new();
    let mut f = kill_points(&mut p, points()).await;
    redis_faults(&mut p, &mut f, false).await;
    f.report("sidekiq-to-pg", "copied into a table, then removed (ZREM)");
}
