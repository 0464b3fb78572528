//! `dlqctl ui` on the other backends, driven in a pseudo-terminal as in ui.rs: the largest
//! failure group of a Kafka dead-letter topic, a RabbitMQ dead-letter queue, an SQS
//! dead-letter queue, River's discarded jobs (the PostgreSQL job systems share one session),
//! Sidekiq's dead set and BullMQ's failed jobs is redriven from the UI, and arrives where the
//! CLI's redrive sends it.

use lapin::BasicProperties;

use crate::amqp::{Kind, Rabbit, s, table};
use crate::harness::{Kafka, Sandbox, Sqs, pg_url};
use crate::redis_harness::RedisDb;
use crate::ui::Tui;

/// Open the only queue's groups, redrive the first (the largest: `count` messages of `total`;
/// `left` after it), quit; what the summary said.
fn redrive_first_group(ui: &mut Tui, backend: &str, count: u64, total: u64, left: u64) -> String {
    ui.wait_for("dlqctl ui · queues");
    ui.wait_for(backend);
    ui.press("\r");
    // The heading: `1 group of 2 messages`, `2 groups of 9 messages`, then the border.
    ui.wait_for(&format!(" of {total} messages─"));
    ui.wait_for("selected group");
    ui.press("R");
    ui.wait_for("y to start");
    ui.press("y");
    ui.wait_for("redrive: done");
    let summary = ui.wait_for(&format!("moved {count} · "));
    ui.press("\r");
    ui.wait_for(&format!(
        " of {left} {}─",
        if left == 1 { "message" } else { "messages" }
    ));
    ui.press("q");
    summary
}

/// A Spring dead-letter topic of 9: 5 time-outs (the first group), 4 parse errors; the
/// time-outs go back to their original topic.
#[tokio::test(flavor = "multi_thread")]
async fn kafka_a_group_redriven_in_the_ui_arrives_in_the_original_topic() {
    let k = Kafka::new("ui");
    k.create("orders", 1, &[]).await;
    k.create("dlt", 1, &[]).await;
    crate::kafka::spring_dlt(&k, "dlt", 9).await;
    let sb = Sandbox::new();
    let mut ui = Tui::start_env(&sb, &["ui", &k.url("dlt")], &k.env());
    // A topic is a log: the records redriven stay in it (the redrive group's offsets say
    // they were), and the groups read the topic whole, as `classify` does.
    redrive_first_group(&mut ui, "kafka", 5, 9, 9);
    assert_eq!(ui.exit_code(), 0);
    let back = k.read_until("orders", |r| r.len() >= 5).await;
    let bodies: Vec<String> = back
        .iter()
        .map(|r| String::from_utf8_lossy(r.3.as_deref().unwrap()).into_owned())
        .collect();
    assert_eq!(
        bodies,
        (0..9)
            .step_by(2)
            .map(|i| format!("{{\"order\": {i}}}"))
            .collect::<Vec<_>>(),
        "the time-outs, in order"
    );
    let runs = sb.run(&["audit", "--output", "json"]).ok().json();
    assert_eq!(runs[0]["command"], "redrive", "{runs}");
}

/// Three messages rejected by a work queue (the first group) and one a framework wrote with
/// its own error: the three go back to the work queue, the other stays.
#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_a_group_redriven_in_the_ui_goes_back_to_its_queue() {
    let r = Rabbit::new("ui").await;
    r.pair(Kind::Classic, "orders", "dlq").await;
    let ids = r.dead_letters("orders", "dlq", "m", 3).await;
    r.publish(
        "dlq",
        b"{}",
        BasicProperties::default()
            .with_message_id("other-1".into())
            .with_headers(table(&[("x-exception-message", s("boom"))])),
    )
    .await;
    r.wait_ready("dlq", 4).await;
    let sb = Sandbox::new();
    let mut ui = Tui::start_env(&sb, &["ui", &r.url("dlq")], &r.env());
    redrive_first_group(&mut ui, "rabbitmq", 3, 4, 1);
    assert_eq!(ui.exit_code(), 0);
    let mut back: Vec<String> = r.drain_ids("orders").await.into_iter().flatten().collect();
    back.sort();
    assert_eq!(back, ids);
    let left: Vec<Option<String>> = r.drain_ids("dlq").await;
    assert_eq!(left, [Some("other-1".to_string())]);
}

/// Sidekiq's own processor kills 5 jobs: 3 time out (the first group), 2 are invalid; the
/// time-outs are retried in their queue, the others stay dead.
#[tokio::test(flavor = "multi_thread")]
async fn sidekiq_a_group_redriven_in_the_ui_is_retried_in_its_queue() {
    let db = RedisDb::new().await;
    db.sidekiq_worker(&["seed", "5", "ord"]);
    let sb = Sandbox::new();
    let mut ui = Tui::start(&sb, &["ui", &db.sidekiq()]);
    redrive_first_group(&mut ui, "sidekiq", 3, 5, 2);
    assert_eq!(ui.exit_code(), 0);
    assert_eq!(db.sidekiq_queue_jids("default").await.len(), 3);
    assert_eq!(db.sidekiq_dead_jids().await.len(), 2);
    // Sidekiq runs them: the retried are the time-outs (orders 0, 2, 4).
    db.sidekiq_worker(&["work", "3"]);
    assert_eq!(db.lrange("fixture:done").await.len(), 3);
}

/// Five orders dead-lettered by SQS itself (a source whose RedrivePolicy gives up after one
/// receive): 3 time-outs (the first group), 2 invalid. The queues view does not read the DLQ;
/// enter asks for its groups (the read, as `classify`); the time-outs go back to the source
/// the RedrivePolicy names, the others stay, visible again.
#[tokio::test(flavor = "multi_thread")]
async fn sqs_a_group_redriven_in_the_ui_goes_back_to_its_source() {
    let q = Sqs::new("uiredrive").await;
    let (src, dlq) = q.pair(false, 1).await;
    let text = |v: &str| {
        aws_sdk_sqs::types::MessageAttributeValue::builder()
            .data_type("String")
            .string_value(v)
            .build()
            .unwrap()
    };
    for i in 0..5 {
        let error = if i % 2 == 0 {
            "upstream timed out"
        } else {
            "validation failed: amount"
        };
        q.client
            .send_message()
            .queue_url(&src)
            .message_body(format!("{{\"order\": {i}}}"))
            .message_attributes("message_id", text(&format!("ord-{i}")))
            .message_attributes("error", text(error))
            .send()
            .await
            .expect("send");
    }
    q.fail_all(&src).await;
    assert_eq!(q.visible(&dlq).await, 5);
    let sb = Sandbox::new();
    let url = format!("sqs://{}", q.name("dlq"));
    let env = q.env(&sb);
    let mut ui = Tui::start_env(&sb, &["ui", &url], &env);
    ui.wait_for("not read (below)");
    redrive_first_group(&mut ui, "sqs", 3, 5, 2);
    assert_eq!(ui.exit_code(), 0);
    let mut back: Vec<String> = q
        .receive_all(&src)
        .await
        .iter()
        .map(|m| {
            let a = m.message_attributes().expect("attributes");
            a["message_id"]
                .string_value()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    back.sort();
    assert_eq!(back, ["ord-0", "ord-2", "ord-4"]);
    assert_eq!(q.visible(&dlq).await, 2, "the invalid ones stay, visible");
    let runs = sb
        .run_with(&["audit", "--output", "json"], &env)
        .ok()
        .json();
    assert_eq!(runs[0]["command"], "redrive", "{runs}");
}

/// BullMQ's own Worker fails 5 jobs: 3 time out (the first group), 2 are TypeErrors; the
/// time-outs are retried (back in `wait`), the others stay failed, and BullMQ runs the three.
#[tokio::test(flavor = "multi_thread")]
async fn bullmq_a_group_redriven_in_the_ui_is_retried_in_its_queue() {
    let db = RedisDb::new().await;
    db.bullmq_worker(&["seed", "ord", "5"]);
    let sb = Sandbox::new();
    let mut ui = Tui::start(&sb, &["ui", &db.bullmq("ord")]);
    redrive_first_group(&mut ui, "bullmq", 3, 5, 2);
    assert_eq!(ui.exit_code(), 0);
    let mut waiting = db.lrange("bull:ord:wait").await;
    waiting.sort();
    assert_eq!(waiting, ["m-0", "m-2", "m-4"]);
    let mut failed = db.zrange("bull:ord:failed").await;
    failed.sort();
    assert_eq!(failed, ["m-1", "m-3"]);
    db.bullmq_worker(&["work", "ord", "3"]);
    assert_eq!(db.lrange("fixture:done").await.len(), 3);
}

/// River's discarded jobs: 5, two time-outs (the first group) and three failures of one job
/// each. The time-outs are retried in place, as River's own `JobRetry` does (`available`
/// again, one more attempt allowed); the others stay discarded.
#[tokio::test(flavor = "multi_thread")]
async fn river_a_group_redriven_in_the_ui_is_retried_in_place() {
    let db = crate::systems::river("ui_river").await;
    let url = format!("{}?system=river&schema={}", pg_url(), db.schema);
    let sb = Sandbox::new();
    let mut ui = Tui::start(&sb, &["ui", &url]);
    redrive_first_group(&mut ui, "river", 2, 5, 3);
    assert_eq!(ui.exit_code(), 0);
    let retried: Vec<(i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT id, errors[array_length(errors, 1)]->>'error' FROM {}.river_job
          WHERE state = 'available' AND finalized_at IS NULL AND max_attempts = 26 ORDER BY id",
        db.schema
    )))
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        retried,
        [
            (1, "upstream timed out after 30s".to_string()),
            (5, "upstream timed out after 30s".to_string())
        ],
        "the time-outs, retried in place"
    );
    assert_eq!(db.count("river_job WHERE state = 'discarded'").await, 3);
}
