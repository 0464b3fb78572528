//! Fix-and-resend and the loop guard on the real backends: a `--transform` copy carries the
//! mapped body and the stable id, every copy counts one more redrive (`dlqctl-redrive-count`,
//! read back from the target), and `--max-redrives` holds or parks what keeps coming back.

use std::collections::HashSet;

use crate::harness::Sandbox;
use crate::pair::{KafkaPair, Pair, PgSameDb, SqsPair};

const N: usize = 10;

pub async fn transform_and_count<P: Pair>(p: &mut P) {
    let name = p.name();
    let ids = p.fresh(N).await;
    if p.copies_url().is_none() {
        return;
    }
    let sb = Sandbox::new();
    let env = p.env(&sb);
    let mut a: Vec<String> = p.redrive();
    a.extend(
        [
            "--transform",
            ".json.fixed = true",
            "--yes",
            "--output",
            "json",
        ]
        .map(String::from),
    );
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let r = sb.run_with(&a, &env).ok().json();
    assert_eq!(r["moved"], N as u64, "{name}: {r}");
    p.settle().await;
    let read = p.copy_records(&sb).await;
    let got: HashSet<String> = read.iter().map(|(id, _, _)| id.clone()).collect();
    assert_eq!(
        got,
        ids.iter().cloned().collect(),
        "{name}: the ids are kept"
    );
    for (id, body, count) in &read {
        assert_eq!(*count, 1, "{name}: {id}");
        assert_eq!(body["fixed"], true, "{name}: {id}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn transform_and_count_on_postgres() {
    transform_and_count(&mut PgSameDb::new()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn transform_and_count_on_sqs() {
    transform_and_count(&mut SqsPair::new(false)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn transform_and_count_on_kafka() {
    transform_and_count(&mut KafkaPair::new()).await;
}

/// PostgreSQL, where a redrive moves rows in SQL: the statement counts the redrive too, and
/// `--max-redrives` holds (or parks) the rows at the limit.
#[tokio::test(flavor = "multi_thread")]
async fn the_loop_guard_on_postgres() {
    let mut p = PgSameDb::new();
    let ids = p.fresh(N).await;
    let (dlq, _) = p.urls();
    let sb = Sandbox::new();
    p.exec(&format!(
        "UPDATE {{s}}.dead_letters SET headers = headers || '{{\"dlqctl-redrive-count\": \"3\"}}'
          WHERE message_id IN ('{}', '{}')",
        ids[0], ids[1]
    ))
    .await;
    let r = sb
        .run(&[
            "redrive",
            &dlq,
            "--max-redrives",
            "3",
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(
        (r["moved"].as_u64(), r["held"].as_u64()),
        (Some(8), Some(2)),
        "{r}"
    );
    assert_eq!(p.remaining().await, 2, "held where they were");
    let counts = p
        .query_strings("SELECT headers->>'dlqctl-redrive-count' FROM {s}.queue_messages")
        .await;
    assert_eq!(
        counts,
        vec!["1"; 8],
        "the SQL move counted one redrive each"
    );
    // --park: the held ones go elsewhere, counted once more.
    p.exec("CREATE TABLE {s}.parked (LIKE {s}.queue_messages INCLUDING ALL)")
        .await;
    let park = dlq
        .replace(".dead_letters", ".parked")
        .split("&source=")
        .next()
        .unwrap()
        .to_string();
    let r = sb
        .run(&[
            "redrive",
            &dlq,
            "--max-redrives",
            "3",
            "--park",
            &park,
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(
        (r["parked"].as_u64(), r["moved"].as_u64()),
        (Some(2), Some(2)),
        "{r}"
    );
    assert_eq!(p.remaining().await, 0);
    let parked = p
        .query_strings("SELECT message_id || '=' || (headers->>'dlqctl-redrive-count') FROM {s}.parked ORDER BY 1")
        .await;
    let mut want = vec![format!("{}=4", ids[0]), format!("{}=4", ids[1])];
    want.sort();
    assert_eq!(parked, want);
}
