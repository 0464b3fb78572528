//! Clause 7 of the contract (`clauses.rs`): a repeated header name never loses a value
//! silently. A record that repeats a name (`dup`: `first`, `second`: Kafka headers, a
//! PostgreSQL header array, a file) replayed to a pair's target either arrives with every
//! value, in order (as two attributes, or as one holding a JSON array: RabbitMQ's field
//! array), or is refused before anything is sent, naming the attribute (SQS: one value per
//! name), and the dry run predicts which.
//!
//! Kafka is left out here: its copies are read with the fixture's own consumer (tansu's high
//! watermark stops `peek` early on them), and `kafka::…strip_header…` already checks that a
//! repeated header reaches a copy twice.

use crate::harness::Sandbox;
use crate::pair::{Pair, PgSameDb, SqsPair};
use crate::pair_rabbitmq::RabbitPair;

/// The values of every attribute `name` of a record, in order (a JSON array's elements for
/// a JSON type).
fn values(record: &serde_json::Value, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for a in record["attributes"].as_array().into_iter().flatten() {
        if a["name"] != name {
            continue;
        }
        let text = a["value"].as_str().unwrap_or_default();
        let is_json = a["type"]
            .as_str()
            .is_some_and(|t| t.to_ascii_lowercase().ends_with("json"));
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Array(items)) if is_json => out.extend(
                items
                    .iter()
                    .map(|v| v.as_str().unwrap_or_default().to_string()),
            ),
            _ => out.push(text.to_string()),
        }
    }
    out
}

pub async fn repeated_names_are_kept_or_refused<P: Pair>(p: &mut P) {
    let name = p.name();
    let _ = p.fresh(1).await;
    let url = p.copies_url().expect("a pair with copies");
    let sb = Sandbox::new();
    let env = p.env(&sb);
    let id = format!("rep-{}-{}", std::process::id(), rand_suffix());
    let line = serde_json::json!({
        "v": 1, "id": id, "native_id": "", "source": "orders", "group": "g",
        "attributes": [
            {"name": "dup", "type": "String", "value": "first"},
            {"name": "dup", "type": "String", "value": "second"},
        ],
        "body": "{\"order\":\"rep\"}", "body_encoding": "utf8",
    });
    let file = sb.write("rep.jsonl", &format!("{line}\n"));
    let file = file.to_string_lossy().into_owned();
    let replay = |last: &str| {
        let r = sb.run_with(
            &["replay", &file, "--to", &url, last, "--output", "json"],
            &env,
        );
        assert!(r.code <= 1, "{name}: {last}: exit {}: {}", r.code, r.stderr);
        r.json()
    };
    let dry = replay("--dry-run");
    let run = replay("--yes");
    assert_eq!(
        (dry["moved"].as_u64(), dry["failed"].as_u64()),
        (run["moved"].as_u64(), run["failed"].as_u64()),
        "{name}: the dry run predicts the run: {dry}\n{run}"
    );
    match run["moved"].as_u64() {
        Some(0) => {
            assert_eq!(run["failed"], 1, "{name}: {run}");
            assert!(
                run["failures"].to_string().contains("`dup`"),
                "{name}: the refusal names the attribute: {run}"
            );
        }
        Some(1) => {
            let records = sb
                .run_with(&["peek", &url, "-n", "1000", "--output", "jsonl"], &env)
                .ok()
                .jsonl();
            let copy = records
                .iter()
                .find(|r| r["id"] == id.as_str())
                .unwrap_or_else(|| panic!("{name}: the copy {id} is not in {url}"));
            assert_eq!(
                values(copy, "dup"),
                ["first", "second"],
                "{name}: every value, in order: {copy}"
            );
        }
        _ => panic!("{name}: {run}"),
    }
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn pg_keeps_every_value_of_a_repeated_name() {
    repeated_names_are_kept_or_refused(&mut PgSameDb::new()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_standard_refuses_a_repeated_name() {
    repeated_names_are_kept_or_refused(&mut SqsPair::new(false)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_fifo_refuses_a_repeated_name() {
    repeated_names_are_kept_or_refused(&mut SqsPair::new(true)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_keeps_every_value_of_a_repeated_name() {
    repeated_names_are_kept_or_refused(&mut RabbitPair::new(crate::amqp::Kind::Classic)).await;
}
