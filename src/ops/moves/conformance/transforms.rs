//! The contract for changed copies: `--transform` and `edit` send the mapped record with the
//! message's own id, and refuse a copy that would change it.

use super::*;

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
