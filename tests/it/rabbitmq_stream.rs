//! A RabbitMQ stream (issue 27: "a stream is read by offset and loses nothing"): reads change
//! nothing, a replay copies, and a redrive or purge, which would have to remove from it, is
//! refused with the stream's reason before anything is sent.

use crate::amqp::{Kind, Rabbit, run, s};
use crate::harness::Sandbox;

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_is_read_by_offset_replayed_and_never_removed_from() {
    let r = Rabbit::new("stream").await;
    r.declare("s", Kind::Classic, &[("x-queue-type", s("stream"))])
        .await;
    r.declare("copy", Kind::Classic, &[]).await;
    let ids = r.publish_n("s", "st", 3).await;
    let sb = Sandbox::new();
    let url = r.url("s");
    let ids_of = |jsonl: Vec<serde_json::Value>| -> Vec<String> {
        jsonl
            .iter()
            .map(|m| m["id"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    // Read twice: the same three, in order, and no word of redeliveries (nothing changed).
    for _ in 0..2 {
        let p = run(&sb, &["peek", &url, "-n", "10", "--output", "jsonl"]).ok();
        assert_eq!(ids_of(p.jsonl()), ids, "{}", p.stderr);
        assert!(!p.stderr.contains("redelivered"), "{}", p.stderr);
    }
    // A redrive and a purge are refused, saying why: a stream removes nothing.
    for args in [
        vec!["redrive", url.as_str(), "--to", "", "--yes"],
        vec!["purge", url.as_str(), "--no-archive", "--yes"],
    ] {
        let copy = r.url("copy");
        let args: Vec<&str> = args
            .into_iter()
            .map(|a| if a.is_empty() { copy.as_str() } else { a })
            .collect();
        let e = run(&sb, &args).code(2);
        assert!(
            e.stderr.contains("a stream keeps every message") && e.stderr.contains("replay"),
            "{args:?}: {}",
            e.stderr
        );
    }
    assert_eq!(r.ready("copy").await, 0, "nothing was sent");
    // A replay copies each with its id; the stream still holds all three.
    let done = run(
        &sb,
        &[
            "replay",
            &url,
            "--to",
            &r.url("copy"),
            "--yes",
            "--output",
            "json",
        ],
    )
    .ok()
    .json();
    assert_eq!(done["moved"], 3, "{done}");
    let copied: Vec<String> = r.drain_ids("copy").await.into_iter().flatten().collect();
    assert_eq!(copied, ids);
    let p = run(&sb, &["peek", &url, "-n", "10", "--output", "jsonl"]).ok();
    assert_eq!(ids_of(p.jsonl()), ids);
}
