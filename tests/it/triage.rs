//! Triage on every backend, through the same pairs as the contract (`pair.rs`): content
//! queries (`--where`), fingerprints (`classify --by fingerprint`, `--fingerprint`), and
//! `check` with limits and a baseline, in every output it has.

use std::collections::HashSet;

use crate::harness::Sandbox;
use crate::pair::{JobSystem, KafkaPair, Pair, PgSameDb, SqsPair};

const N: usize = 10;

/// Selects by content (the body parsed as JSON) and by id: the messages whose id ends in 1 or
/// 3, two of every pair's ten whether its ids count from 0 or from 1.
const WHERE: &str = r#"(.json | type) == "object" and (.id | test("[13]$"))"#;

fn picked(ids: &[String]) -> HashSet<String> {
    ids.iter()
        .filter(|i| i.ends_with('1') || i.ends_with('3'))
        .cloned()
        .collect()
}

pub async fn triage<P: Pair>(p: &mut P) {
    let name = p.name();
    let ids = p.fresh(N).await;
    let sb = Sandbox::new();
    let env = p.env(&sb);
    let source = p.redrive()[1].clone();
    let run = |a: &[&str]| sb.run_with(a, &env);

    // A bad expression: exit 2, naming the place, before anything is read or moved.
    let redrive_args = p.redrive();
    let mut bad: Vec<&str> = redrive_args.iter().map(String::as_str).collect();
    bad.extend(["--where", ".json.order >", "--yes"]);
    let r = run(&bad).code(2);
    assert!(
        r.stderr.contains("--where") && r.stderr.contains("at character 14"),
        "{name}: {}",
        r.stderr
    );
    p.settle().await;
    assert_eq!(p.copies().await, 0, "{name}: a bad --where moved nothing");

    // Fingerprints: every message in a group, every group with an id and a template.
    let r = run(&[
        "classify",
        &source,
        "--by",
        "fingerprint",
        "--output",
        "json",
    ])
    .ok();
    let report = r.json();
    assert_eq!(report["total"], N as u64, "{name}: {report}");
    let groups = report["groups"].as_array().expect("groups");
    let counted: u64 = groups.iter().map(|g| g["count"].as_u64().unwrap()).sum();
    assert_eq!(counted, N as u64, "{name}: {report}");
    for g in groups {
        let fp = g["key"]["fingerprint"].as_str().unwrap();
        assert!(
            fp.len() == 8 && fp.bytes().all(|b| b.is_ascii_hexdigit()),
            "{name}: {g}"
        );
        assert!(g["template"].is_string(), "{name}: {g}");
    }
    let fp = groups[0]["key"]["fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    let base = sb.write("baseline.json", &r.stdout);
    let base = base.to_str().unwrap();

    // check: within the limits and the baseline, exit 0; over a limit, exit 1.
    let r = run(&[
        "check",
        &source,
        "--max-messages",
        &N.to_string(),
        "--baseline",
        base,
        "--output",
        "json",
    ])
    .ok()
    .json();
    assert_eq!(r["passed"], true, "{name}: {r}");
    assert_eq!(
        r["queues"][0]["new_fingerprints"],
        serde_json::json!([]),
        "{name}: {r}"
    );
    let r = run(&[
        "check",
        &source,
        "--max-messages",
        &(N - 1).to_string(),
        "--output",
        "prometheus",
    ])
    .code(1);
    assert!(
        r.stdout.contains("check=\"max-messages\"} 0\n") && r.stdout.ends_with("# EOF\n"),
        "{name}: {}",
        r.stdout
    );
    let r = run(&[
        "check",
        &source,
        "--max-messages",
        &(N - 1).to_string(),
        "--output",
        "junit",
    ])
    .code(1);
    assert!(r.stdout.contains("<failure"), "{name}: {}", r.stdout);

    // inspect --output prometheus: the queue's gauges in OpenMetrics text.
    let r = run(&["inspect", &source, "--output", "prometheus"]).ok();
    assert!(
        r.stdout.contains("# TYPE dlqctl_messages gauge\n")
            && r.stdout.contains("dlqctl_messages{queue=")
            && r.stdout.ends_with("# EOF\n"),
        "{name}: {}",
        r.stdout
    );
    if name == "kafka" {
        assert!(
            r.stdout.contains("dlqctl_redrive_lag_messages{"),
            "{}",
            r.stdout
        );
    }
    if !name.starts_with("sqs") {
        // Read where reading changes nothing: per-fingerprint counts.
        assert!(
            r.stdout.contains(&format!("fingerprint=\"{fp}\"")),
            "{name}: {}",
            r.stdout
        );
    }

    // --where selects by content, in peek as in redrive; peek shows each fingerprint.
    let r = run(&["peek", &source, "--where", WHERE, "--output", "jsonl"]).ok();
    let shown = r.jsonl();
    let got: HashSet<String> = shown
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(got, picked(&ids), "{name}: peek --where");
    assert!(
        shown.iter().all(|m| m["fingerprint"] == fp.as_str()),
        "{name}"
    );

    // --fingerprint selects a failure group: all of it, or nothing for another group.
    let dry = |extra: &[&str]| {
        let mut a: Vec<&str> = redrive_args.iter().map(String::as_str).collect();
        a.extend(["--dry-run", "--output", "json"]);
        a.extend_from_slice(extra);
        run(&a).ok().json()
    };
    assert_eq!(dry(&["--fingerprint", &fp])["moved"], N as u64, "{name}");
    assert_eq!(dry(&["--fingerprint", "00000000"])["moved"], 0, "{name}");

    // A redrive with --where moves exactly what it selects, with the stable ids.
    let mut a: Vec<&str> = redrive_args.iter().map(String::as_str).collect();
    a.extend(["--where", WHERE, "--yes", "--output", "json"]);
    let r = run(&a).ok().json();
    assert_eq!(r["moved"], 2, "{name}: {r}");
    let got: HashSet<String> = p.target_ids().await.into_iter().flatten().collect();
    assert_eq!(got, picked(&ids), "{name}: redrive --where");
}

#[tokio::test(flavor = "multi_thread")]
async fn triage_on_a_postgres_table() {
    triage(&mut PgSameDb::new()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn triage_on_river() {
    triage(&mut JobSystem::new("river")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn triage_on_pg_boss() {
    triage(&mut JobSystem::new("pg-boss")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn triage_on_sqs() {
    triage(&mut SqsPair::new(false)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn triage_on_kafka() {
    triage(&mut KafkaPair::new()).await;
}

/// A JSON Lines file (an export): `--where` on export and replay, fingerprints, and `check`.
#[tokio::test(flavor = "multi_thread")]
async fn triage_on_a_json_lines_file() {
    let mut p = PgSameDb::new();
    let ids = p.fresh(N).await;
    let (dlq, queue) = p.urls();
    let sb = Sandbox::new();
    let file = sb.path("picked.jsonl");
    let file = file.to_str().unwrap();
    sb.run(&["export", &dlq, "--where", WHERE, "-o", file]).ok();
    let text = std::fs::read_to_string(file).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    let r = sb
        .run(&[
            "classify",
            file,
            "--by",
            "fingerprint,day",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(r["total"], 2, "{r}");
    assert_eq!(r["by"], serde_json::json!(["fingerprint", "day"]), "{r}");
    let r = sb
        .run(&[
            "check",
            file,
            "--max-messages",
            "2",
            "--max-class",
            "transient=2",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(r["passed"], true, "{r}");
    let r = sb
        .run(&[
            "check",
            file,
            "--max-class",
            "transient=1",
            "--output",
            "json",
        ])
        .code(1)
        .json();
    assert_eq!(r["queues"][0]["checks"][0]["status"], "FAIL", "{r}");
    let r = sb
        .run(&[
            "replay",
            file,
            "--to",
            &queue,
            "--where",
            r#".id | endswith("1")"#,
            "--yes",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(r["moved"], 1, "{r}");
    let got: HashSet<String> = p.target_ids().await.into_iter().flatten().collect();
    assert_eq!(
        got,
        ids.iter().filter(|i| i.ends_with('1')).cloned().collect(),
    );
}
