//! What a copy to RabbitMQ carries (operator report, 2026-12-06): the id a consumer reads is
//! the stable id whatever `meta` says, no copy expires, a repeated header name keeps every
//! value, a number keeps every digit; and a RabbitMQ DLQ can be purged into SQS.

use lapin::BasicProperties;
use lapin::types::AMQPValue;

use crate::amqp::{Kind, Rabbit, env, run, s, stable_id};
use crate::harness::{Sandbox, Sqs};

/// A record of a JSON Lines file, with `meta.properties` and attributes as given.
fn record(id: &str, meta_properties: serde_json::Value, attributes: serde_json::Value) -> String {
    serde_json::json!({
        "v": 1,
        "id": id,
        "native_id": "",
        "attributes": attributes,
        "body": format!("{{\"order\":\"{id}\"}}"),
        "body_encoding": "utf8",
        "meta": {"properties": meta_properties},
    })
    .to_string()
}

/// A file whose records say `message_id` HIJACK and `expiration` 1: the copies arrive with
/// their own ids as `message_id`, and without an expiration (they would have expired at
/// once: lost). A transform that changes `.meta` is refused, in the dry run too, and
/// nothing is sent or removed.
#[tokio::test(flavor = "multi_thread")]
async fn meta_cannot_give_a_copy_another_id_or_a_lifetime() {
    let r = Rabbit::new("meta-id").await;
    r.declare("target", Kind::Classic, &[]).await;
    let sb = Sandbox::new();
    let props = serde_json::json!({"message_id": "HIJACK", "expiration": "1", "content_type": "application/json"});
    let file = sb.write(
        "hijack.jsonl",
        &format!(
            "{}\n{}\n",
            record("f-1", props.clone(), serde_json::json!([])),
            record("f-2", props, serde_json::json!([]))
        ),
    );
    let file = file.to_string_lossy().into_owned();
    let out = run(
        &sb,
        &[
            "replay",
            &file,
            "--to",
            &r.url("target"),
            "--yes",
            "--output",
            "json",
        ],
    )
    .ok()
    .json();
    assert_eq!(out["moved"], 2, "{out}");
    // Still there after the `expiration` the records asked for.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let copies = r.drain("target").await;
    let ids: Vec<_> = copies
        .iter()
        .map(|m| stable_id(&m.delivery.properties))
        .collect();
    assert_eq!(ids, [Some("f-1".into()), Some("f-2".into())]);
    for c in &copies {
        let p = &c.delivery.properties;
        assert_eq!(*p.expiration(), None, "{p:?}");
        assert_eq!(
            p.content_type().as_ref().map(|s| s.as_str()),
            Some("application/json")
        );
    }

    // A redrive whose transform sets `.meta`: refused for every message, dry run too.
    r.pair(Kind::Classic, "orders", "dlq").await;
    for i in 0..2 {
        r.publish(
            "orders",
            br#"{"order": 1}"#,
            BasicProperties::default().with_message_id(format!("m-{i}").as_str().into()),
        )
        .await;
    }
    r.reject("orders", 2, "dlq").await;
    let (dlq, target) = (r.url("dlq"), r.url("target"));
    for code in [
        r#".meta.properties.message_id = "HIJACK""#,
        r#".meta.properties.expiration = "1""#,
    ] {
        for last in ["--dry-run", "--yes"] {
            let j = run(
                &sb,
                &[
                    "redrive",
                    &dlq,
                    "--to",
                    &target,
                    "--transform",
                    code,
                    "--output",
                    "json",
                    last,
                ],
            )
            .code(1)
            .json();
            assert_eq!(
                (j["moved"].as_u64(), j["failed"].as_u64()),
                (Some(0), Some(2)),
                "{code} {last}: {j}"
            );
            assert!(
                j.to_string().contains("cannot change .meta"),
                "{code} {last}: {j}"
            );
        }
        r.wait_ready("dlq", 2).await;
        assert_eq!(r.ready("target").await, 0, "{code}: nothing sent");
    }
}

/// A file whose record repeats a header name (`dup`: first, second) and holds a number no
/// AMQP type holds: the copy keeps both values, in order (a field array), and every digit
/// (a long string).
#[tokio::test(flavor = "multi_thread")]
async fn repeated_names_and_big_numbers_arrive_whole() {
    let r = Rabbit::new("dup-big").await;
    r.declare("target", Kind::Classic, &[]).await;
    let sb = Sandbox::new();
    let file = sb.write(
        "dup.jsonl",
        &format!(
            "{}\n",
            record(
                "d-1",
                serde_json::json!({}),
                serde_json::json!([
                    {"name": "dup", "type": "String", "value": "first"},
                    {"name": "big", "type": "Number", "value": "123456789012345678901234567890"},
                    {"name": "dup", "type": "String", "value": "second"},
                ])
            )
        ),
    );
    let file = file.to_string_lossy().into_owned();
    let out = run(
        &sb,
        &[
            "replay",
            &file,
            "--to",
            &r.url("target"),
            "--yes",
            "--output",
            "json",
        ],
    )
    .ok()
    .json();
    assert_eq!(out["moved"], 1, "{out}");
    let copies = r.drain("target").await;
    assert_eq!(copies.len(), 1);
    let h = copies[0]
        .delivery
        .properties
        .headers()
        .clone()
        .unwrap_or_default();
    assert_eq!(
        h.inner().get("dup"),
        Some(&AMQPValue::FieldArray(vec![s("first"), s("second")].into())),
        "{h:?}"
    );
    assert_eq!(
        h.inner().get("big"),
        Some(&s("123456789012345678901234567890")),
        "{h:?}"
    );
}

/// A RabbitMQ DLQ purged into an SQS archive: the broker's `x-first-death-exchange` is empty
/// (dead-lettered through the default exchange) and SQS takes no empty value. The dry run
/// predicts the refusal and names the fix; `purge --strip-header` is the fix, and then every
/// message is archived and removed.
#[tokio::test(flavor = "multi_thread")]
async fn a_rabbitmq_dlq_purges_into_sqs_with_strip_header() {
    let r = Rabbit::new("purge-sqs").await;
    r.pair(Kind::Classic, "work", "dlq").await;
    r.dead_letters("work", "dlq", "p", 3).await;
    let sqs = Sqs::new("pp-arch").await;
    let (arch, _) = sqs.create("arch", &[]).await;
    let sb = Sandbox::new();
    let mut e = env();
    e.extend(sqs.env(&sb));
    let dlq = r.url("dlq");
    let dry = sb
        .run_with(
            &[
                "purge",
                &dlq,
                "--archive",
                &arch,
                "--dry-run",
                "--output",
                "json",
            ],
            &e,
        )
        .code(1)
        .json();
    let text = dry.to_string();
    assert!(
        text.contains("x-first-death-exchange") && text.contains("--strip-header"),
        "the refusal names the fix: {dry}"
    );
    let out = sb
        .run_with(
            &[
                "purge",
                &dlq,
                "--archive",
                &arch,
                "--strip-header",
                "x-first-death-exchange",
                "--strip-header",
                "x-last-death-exchange",
                "--yes",
                "--output",
                "json",
            ],
            &e,
        )
        .ok()
        .json();
    assert_eq!(out["moved"], 3, "{out}");
    assert_eq!(r.ready("dlq").await, 0);
    // --strip-header without an archive has nothing to strip from.
    let refused = sb.run_with(
        &[
            "purge",
            &dlq,
            "--no-archive",
            "--strip-header",
            "x-*",
            "--yes",
        ],
        &e,
    );
    refused.code(2);
}

/// A file's records with a group and a key, replayed to RabbitMQ (which has neither): the
/// plan says they are not kept, where it said "keeps: …, group/key".
#[tokio::test(flavor = "multi_thread")]
async fn the_plan_says_what_a_hop_to_rabbitmq_does_not_keep() {
    let r = Rabbit::new("hop-plan").await;
    r.declare("target", Kind::Classic, &[]).await;
    let sb = Sandbox::new();
    let line = serde_json::json!({
        "v": 1, "id": "g-1", "native_id": "", "group": "g", "key": "k",
        "attributes": [], "body": "{}", "body_encoding": "utf8",
    });
    let file = sb.write("g.jsonl", &format!("{line}\n"));
    let file = file.to_string_lossy().into_owned();
    let out = sb.run_with(
        &[
            "replay",
            &file,
            "--to",
            &r.url("target"),
            "--dry-run",
            "--output",
            "table",
        ],
        &[env(), vec![("COLUMNS".into(), "200".into())]].concat(),
    );
    let out = out.ok();
    let plan = format!("{}{}", out.stdout, out.stderr);
    assert!(
        plan.contains("not kept: group, key (rabbitmq has no place for them)"),
        "{plan}"
    );
    assert!(!plan.contains("group/key"), "{plan}");
}
