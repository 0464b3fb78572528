//! librdkafka's mock cluster as a broker of its own, for `scripts/bench-queues --kafka-broker
//! mock`: a Kafka-speaking broker on loopback that serves fetches from memory, so that a
//! benchmark measures the clients rather than the broker (tansu's fetch is the bottleneck
//! there; docs/benchmarks.md).
//!
//! Prints `bootstrap HOST:PORT` on stdout, then reads commands from stdin, one per line:
//! `create TOPIC PARTITIONS` (answers `ok` or `error …`; the mock cluster has no CreateTopics).
//! Exits when stdin closes. Not a broker for anything else: no persistence, no ACLs, and its
//! transactions keep no state.

use std::io::{BufRead, Write};

use rdkafka::mocking::MockCluster;

fn main() {
    let cluster = match MockCluster::new(1) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mock_broker: cannot start the mock cluster: {e}");
            std::process::exit(1);
        }
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "bootstrap {}", cluster.bootstrap_servers()).expect("stdout");
    out.flush().expect("stdout");
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        let answer = match words.as_slice() {
            ["create", topic, parts] => match parts.parse::<i32>() {
                Ok(n) if n > 0 => match cluster.create_topic(topic, n, 1) {
                    Ok(()) => "ok".to_string(),
                    Err(e) => format!("error {e}"),
                },
                _ => format!("error bad partition count {parts}"),
            },
            [] => continue,
            _ => format!("error unknown command: {line}"),
        };
        writeln!(out, "{answer}").expect("stdout");
        out.flush().expect("stdout");
    }
}
