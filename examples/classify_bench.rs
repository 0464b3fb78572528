//! How fast the built-in rules classify, and how much memory that takes: the public corpus's
//! texts (tests/data/errors, never the held-out set) cycled to N messages (default 1,000,000),
//! classified one by one. Prints the time and the peak RSS (VmHWM, Linux).
//!
//! ```sh
//! cargo run --release --example classify_bench [N [DIR]]
//! ```

use std::time::Instant;

use dlqctl::classify::{Classifier, Kind};
use dlqctl::message::{ErrorInfo, Message};

#[derive(serde::Deserialize)]
struct Corpus {
    case: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    text: String,
}

fn vm_hwm() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l["VmHWM:".len()..].trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("N is a number of messages"))
        .unwrap_or(1_000_000);
    let dir = std::env::args()
        .nth(2)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/errors").to_string());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/data/errors")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let messages: Vec<Message> = files
        .iter()
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).expect("corpus file");
            let corpus: Corpus = toml::from_str(&text).expect("corpus parses");
            corpus.case
        })
        .map(|c| Message {
            error: Some(ErrorInfo {
                message: Some(c.text),
                ..ErrorInfo::default()
            }),
            ..Message::default()
        })
        .collect();
    let classifier = Classifier::builtin();
    let before = vm_hwm();
    let start = Instant::now();
    let mut transient = 0usize;
    for m in messages.iter().cycle().take(n) {
        if classifier.classify(m).kind == Kind::Transient {
            transient += 1;
        }
    }
    let took = start.elapsed();
    println!(
        "{n} messages ({} distinct texts): {:.2} s, {transient} transient; VmHWM {} before, {} after",
        messages.len(),
        took.as_secs_f64(),
        before,
        vm_hwm()
    );
}
