//! RabbitMQ verify and inspect against the broker's own routing: dead-letter routes that drop
//! every dead letter, or reach another queue than the DLQ; a topic dead-letter exchange; the
//! retention hints; check's count of messages another channel holds.

use std::time::Duration;

use lapin::options::{BasicGetOptions, BasicNackOptions, ExchangeDeclareOptions, QueueBindOptions};
use lapin::types::{AMQPValue, FieldTable};

use crate::amqp::{Kind, Rabbit, run, s};
use crate::harness::Sandbox;

async fn exchange(r: &Rabbit, name: &str, kind: lapin::ExchangeKind) -> String {
    let x = r.name(name);
    r.ch.exchange_declare(
        x.as_str().into(),
        kind,
        ExchangeDeclareOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
    x
}

async fn bind(r: &Rabbit, q: &str, x: &str, key: &str) {
    r.ch.queue_bind(
        r.name(q).as_str().into(),
        x.into(),
        key.into(),
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
}

/// `dlqctl verify NAME --output json` with `[queues.NAME]` of `dlq` and, when given, `source`;
/// extra lines appended to the table.
fn verify(
    sb: &Sandbox,
    r: &Rabbit,
    dlq: &str,
    source: Option<&str>,
    extra: &str,
) -> serde_json::Value {
    let mut cfg = format!("[queues.v]\ndlq = \"{}\"\n", r.url(dlq));
    if let Some(src) = source {
        cfg.push_str(&format!("source = \"{}\"\n", r.url(src)));
    }
    cfg.push_str(extra);
    let path = sb.write(&format!("v-{dlq}.toml"), &cfg);
    let out = run(
        sb,
        &[
            "verify",
            "v",
            "--config",
            path.to_str().unwrap(),
            "--output",
            "json",
        ],
    );
    out.json()
}

/// The checks of the first queue with `id`, as (status, detail).
fn checks(v: &serde_json::Value, id: &str) -> Vec<(String, String)> {
    v["queues"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"] == id)
        .map(|c| {
            (
                c["status"].as_str().unwrap().to_string(),
                c["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// One message to `q`, rejected (requeue=false) by a consumer: the broker dead-letters it.
async fn reject_one(r: &Rabbit, q: &str) {
    r.publish_n(q, "x", 1).await;
    let m =
        r.ch.basic_get(r.name(q).as_str().into(), BasicGetOptions::default())
            .await
            .unwrap()
            .expect("a message to reject");
    m.delivery
        .acker
        .nack(BasicNackOptions {
            requeue: false,
            ..BasicNackOptions::default()
        })
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn verify_fails_a_dead_letter_route_that_drops_every_dead_letter() {
    let r = Rabbit::new("rdrop").await;
    // (a) A direct dead-letter exchange bound for keys `work` and `q`; the source's
    // dead-letter routing key is `nomatch`.
    let dlx = exchange(&r, "dlx", lapin::ExchangeKind::Direct).await;
    r.declare("qdlq", Kind::Classic, &[]).await;
    r.declare("workdlq", Kind::Classic, &[]).await;
    bind(&r, "qdlq", &dlx, "q").await;
    bind(&r, "workdlq", &dlx, "work").await;
    r.declare(
        "src6",
        Kind::Classic,
        &[
            ("x-dead-letter-exchange", s(&dlx)),
            ("x-dead-letter-routing-key", s("nomatch")),
        ],
    )
    .await;
    // The broker drops what src6 rejects: nothing reaches either queue. A control rejected
    // after it, through a key that routes, is waited for (a condition, not a sleep).
    r.declare(
        "control",
        Kind::Classic,
        &[
            ("x-dead-letter-exchange", s(&dlx)),
            ("x-dead-letter-routing-key", s("q")),
        ],
    )
    .await;
    reject_one(&r, "src6").await;
    reject_one(&r, "control").await;
    r.wait_ready("qdlq", 1).await;
    assert_eq!((r.ready("qdlq").await, r.ready("workdlq").await), (1, 0));
    let sb = Sandbox::new();
    let v = verify(&sb, &r, "qdlq", Some("src6"), "");
    let route = checks(&v, "rabbitmq-dead-letter-route");
    assert_eq!(route.len(), 1, "{v}");
    assert_eq!(route[0].0, "FAIL", "{v}");
    assert!(route[0].1.contains("dropped silently"), "{v}");
    assert!(route[0].1.contains("key `nomatch`"), "{v}");
    assert!(
        route[0].1.contains(&format!(
            "declare binding source={dlx} destination={} routing_key=nomatch",
            r.name("qdlq")
        )),
        "{v}"
    );

    // (b) Through the default exchange to a queue that does not exist.
    r.declare(
        "src7",
        Kind::Classic,
        &[
            ("x-dead-letter-exchange", s("")),
            ("x-dead-letter-routing-key", s("no-such-queue")),
        ],
    )
    .await;
    let v = verify(&sb, &r, "qdlq", Some("src7"), "");
    let route = checks(&v, "rabbitmq-dead-letter-route");
    assert_eq!(route[0].0, "FAIL", "{v}");
    assert!(route[0].1.contains("no queue named `no-such-queue`"), "{v}");

    // (c) The configured source dead-letters into another queue than the DLQ verified.
    r.declare(
        "src8",
        Kind::Classic,
        &[
            ("x-dead-letter-exchange", s(&dlx)),
            ("x-dead-letter-routing-key", s("work")),
        ],
    )
    .await;
    let v = verify(&sb, &r, "qdlq", Some("src8"), "");
    let route = checks(&v, "rabbitmq-dead-letter-route");
    assert_eq!(route[0].0, "FAIL", "{v}");
    assert!(
        route[0].1.contains(&format!(
            "reach {}, not {}",
            r.name("workdlq"),
            r.name("qdlq")
        )),
        "{v}"
    );
    // And the route that works passes, naming where it goes.
    let v = verify(&sb, &r, "workdlq", Some("src8"), "");
    assert_eq!(checks(&v, "rabbitmq-dead-letter-route")[0].0, "PASS", "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_topic_dead_letter_exchange_is_recognised_by_inspect_and_verify() {
    let r = Rabbit::new("rtopic").await;
    let tx = exchange(&r, "tx", lapin::ExchangeKind::Topic).await;
    r.declare("tdlq", Kind::Classic, &[]).await;
    bind(&r, "tdlq", &tx, "dead.#").await;
    r.declare(
        "tsrc",
        Kind::Quorum,
        &[
            ("x-dead-letter-exchange", s(&tx)),
            ("x-dead-letter-routing-key", s("dead.orders")),
            ("x-message-ttl", AMQPValue::LongInt(3_600_000)),
        ],
    )
    .await;
    // The broker routes tsrc's dead letters into tdlq.
    reject_one(&r, "tsrc").await;
    r.wait_ready("tdlq", 1).await;
    let sb = Sandbox::new();
    let v = verify(&sb, &r, "tdlq", None, "");
    let route = checks(&v, "rabbitmq-dead-letter-route");
    assert_eq!(route.len(), 1, "{v}");
    assert_eq!(route[0].0, "PASS", "{v}");
    assert!(route[0].1.contains(&r.name("tsrc")), "{v}");
    assert!(
        v["queues"][0]["redelivery"]
            .to_string()
            .contains(&format!("source {} message TTL", r.name("tsrc"))),
        "{v}"
    );
    assert_eq!(
        checks(&v, "rabbitmq-dead-lettering-guarantee").len(),
        1,
        "{v}"
    );
    assert_eq!(checks(&v, "rabbitmq-delivery-limit").len(), 1, "{v}");
    let ins = run(&sb, &["inspect", &r.url("tdlq"), "--output", "json"])
        .ok()
        .json();
    let fed = &ins[0]["tables"][0];
    assert_eq!(fed["title"], "queues that dead-letter here", "{ins}");
    assert_eq!(fed["rows"][0][0], r.name("tsrc").as_str(), "{ins}");
}

/// `[queues.NAME.dedupe]` lines: a table with a primary key and a declared retention.
async fn dedupe(db: &crate::harness::Db, retention: &str) -> String {
    db.exec("CREATE TABLE IF NOT EXISTS {s}.processed (message_id text PRIMARY KEY)")
        .await;
    format!(
        "[queues.v.dedupe]\nurl = \"{}\"\ntable = \"{}.processed\"\nretention = \"{retention}\"\n",
        crate::harness::pg_url(),
        db.schema
    )
}

/// The DLQ keeps dead letters forever (no message-ttl): the fix is RabbitMQ's (a message-ttl
/// policy), not PostgreSQL's; a declared `dlq_retention` is said to be unused.
#[tokio::test(flavor = "multi_thread")]
async fn the_retention_fix_is_rabbitmq_s_and_dlq_retention_is_reported_unused() {
    let r = Rabbit::new("rttl").await;
    r.pair(Kind::Classic, "work", "dlq").await;
    let db = crate::harness::Db::new("rttl").await;
    let sb = Sandbox::new();
    let extra = format!("dlq_retention = \"7d\"\n{}", dedupe(&db, "30d").await);
    let v = verify(&sb, &r, "dlq", None, &extra);
    let outlives = checks(&v, "dedupe-outlives-redelivery");
    assert_eq!(outlives[0].0, "FAIL", "{v}");
    let d = &outlives[0].1;
    assert!(d.contains("DLQ message TTL forever"), "{d}");
    assert!(
        d.contains(&format!(
            "rabbitmqctl set_policy --vhost / {}-ttl",
            r.name("dlq")
        )) && d.contains("{\"message-ttl\":604800000}"),
        "{d}"
    );
    assert!(
        !d.contains("pg_cron") && !d.contains("dlq_retention"),
        "{d}"
    );
    let unused = checks(&v, "rabbitmq-dlq-retention");
    assert_eq!(unused.len(), 1, "{v}");
    assert_eq!(unused[0].0, "WARN", "{v}");
    assert!(
        unused[0]
            .1
            .contains("dlq_retention = 7d in dlqctl.toml is not used for RabbitMQ")
            && unused[0].1.contains("here: none"),
        "{v}"
    );
}

/// BullMQ and Sidekiq: each FAIL of check 1 names the library's own way to keep dead jobs for
/// less, not PostgreSQL's.
#[tokio::test(flavor = "multi_thread")]
async fn job_libraries_get_their_own_retention_fix() {
    use crate::redis_harness::{RedisDb, seed_bullmq, seed_sidekiq};
    let rdb = RedisDb::new().await;
    seed_sidekiq(&rdb, 2).await;
    seed_bullmq(&rdb, "q", 2).await;
    let db = crate::harness::Db::new("rjobs").await;
    let table = dedupe(&db, "1d").await;
    let sb = Sandbox::new();
    for (dlq, says) in [
        (rdb.bullmq("q"), "removeOnFail: { age: SECONDS }"),
        (rdb.sidekiq(), "dead_timeout_in_seconds"),
    ] {
        let cfg = sb.write(
            "jobs.toml",
            &format!("[queues.v]\ndlq = \"{dlq}\"\n{table}"),
        );
        let v = sb
            .run(&[
                "verify",
                "v",
                "--config",
                cfg.to_str().unwrap(),
                "--output",
                "json",
            ])
            .json();
        let outlives = checks(&v, "dedupe-outlives-redelivery");
        assert_eq!(outlives[0].0, "FAIL", "{v}");
        assert!(outlives[0].1.contains(says), "{v}");
        assert!(!outlives[0].1.contains("pg_cron"), "{v}");
    }
}

/// `check --max-messages` counts what another channel holds unacknowledged (the management
/// API's count) and says how it counted; without the API it says held messages go unseen.
#[tokio::test(flavor = "multi_thread")]
async fn check_max_messages_counts_messages_another_channel_holds() {
    let r = Rabbit::new("rdepth").await;
    r.declare("dlq", Kind::Classic, &[]).await;
    r.publish_n("dlq", "h", 6).await;
    let other = r.conn.create_channel().await.unwrap();
    for _ in 0..6 {
        other
            .basic_get(r.name("dlq").as_str().into(), BasicGetOptions::default())
            .await
            .unwrap()
            .expect("a message to hold");
    }
    let path = format!("queues/%2F/{}", r.name("dlq"));
    crate::pair::wait_until(
        Duration::from_secs(30),
        "the API to count 6 unacknowledged",
        || async {
            let q = r.api_get(&path).await;
            q["messages_unacknowledged"] == 6 && q["messages_ready"] == 0
        },
    )
    .await;
    let sb = Sandbox::new();
    let limit = |url: &str| {
        let v = run(
            &sb,
            &["check", url, "--max-messages", "5", "--output", "json"],
        )
        .json();
        let c = &v["queues"][0]["checks"][0];
        (
            c["status"].as_str().unwrap().to_string(),
            c["detail"].as_str().unwrap().to_string(),
        )
    };
    let (status, detail) = limit(&r.url("dlq"));
    assert_eq!(status, "FAIL", "{detail}");
    assert!(
        detail.starts_with("6 messages (limit 5): 0 ready + 6 held unacknowledged"),
        "{detail}"
    );
    let (status, detail) = limit(&r.url_no_api("dlq"));
    assert_eq!(status, "PASS", "{detail}");
    assert!(
        detail.contains("without the management API, messages held unacknowledged"),
        "{detail}"
    );
    other.close(200, "".into()).await.unwrap();
}

/// A classic queue `dlq` holding one message whose `timestamp` is ten days ago.
async fn publish_ten_days_old(r: &Rabbit) {
    r.declare("dlq", Kind::Classic, &[]).await;
    let ten_days_ago = (chrono::Utc::now() - chrono::Duration::days(10)).timestamp() as u64;
    r.publish(
        "dlq",
        b"{}",
        lapin::BasicProperties::default()
            .with_message_id("old-1".into())
            .with_timestamp(ten_days_ago),
    )
    .await;
}

/// Check 7 on RabbitMQ: the oldest dead letter's age from the management API (the head
/// message's timestamp), as inspect shows it, rather than "not available".
#[tokio::test(flavor = "multi_thread")]
async fn old_dead_letters_uses_the_oldest_the_api_shows() {
    let r = Rabbit::new("rold").await;
    publish_ten_days_old(&r).await;
    let path = format!("queues/%2F/{}", r.name("dlq"));
    crate::pair::wait_until(
        Duration::from_secs(30),
        "the API to show the head message's timestamp",
        || async { r.api_get(&path).await["head_message_timestamp"].is_u64() },
    )
    .await;
    let db = crate::harness::Db::new("rold").await;
    let sb = Sandbox::new();
    let v = verify(&sb, &r, "dlq", None, &dedupe(&db, "1d").await);
    let old = checks(&v, "old-dead-letters");
    assert_eq!(old.len(), 1, "{v}");
    assert_eq!(old[0].0, "WARN", "{v}");
    assert!(
        old[0].1.contains("the oldest dead letter is 10d old"),
        "{v}"
    );
}

/// Check 7 right after a publish, before the management API has reported the queue's head
/// message: it said "message ages are not available cheaply on this backend", though a few
/// seconds later the same command gave the age. Now it says the API has not reported it yet;
/// and for a head message without a `timestamp`, that this is why.
#[tokio::test(flavor = "multi_thread")]
async fn old_dead_letters_says_why_the_oldest_age_is_not_known() {
    let r = Rabbit::new("rlag").await;
    publish_ten_days_old(&r).await;
    let db = crate::harness::Db::new("rlag").await;
    let sb = Sandbox::new();
    let v = verify(&sb, &r, "dlq", None, &dedupe(&db, "1d").await);
    let old = checks(&v, "old-dead-letters");
    assert_eq!(old.len(), 1, "{v}");
    assert!(
        old[0]
            .1
            .contains("the management API has not reported the queue's head message yet")
            || old[0].1.contains("the oldest dead letter is 10d old"),
        "{v}"
    );
    // A head message with no timestamp, once the API has counted it.
    r.declare("plain", Kind::Classic, &[]).await;
    r.publish_n("plain", "x", 1).await;
    let path = format!("queues/%2F/{}", r.name("plain"));
    crate::pair::wait_until(
        Duration::from_secs(30),
        "the API to count the message",
        || async { r.api_get(&path).await["messages"].as_u64() == Some(1) },
    )
    .await;
    let v = verify(&sb, &r, "plain", None, &dedupe(&db, "1d").await);
    let old = checks(&v, "old-dead-letters");
    assert_eq!(old.len(), 1, "{v}");
    assert!(
        old[0]
            .1
            .contains("the head message has no timestamp property"),
        "{v}"
    );
}
