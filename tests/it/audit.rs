//! The audit trail: an intent before a changing run, an outcome after, the ids moved (inline,
//! or in a file past 1,000), secrets redacted, `--reason` required when configured, and a
//! SIGKILL leaves the intent alone (`dlqctl audit` shows the run unfinished).

use std::process::Stdio;
use std::time::Duration;

use crate::harness::Sandbox;
use crate::pair::{Pair, PgSameDb, wait_until};

fn runs(sb: &Sandbox) -> Vec<serde_json::Value> {
    sb.run(&["audit", "--output", "json"])
        .ok()
        .json()
        .as_array()
        .expect("an array of runs")
        .clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn changing_runs_leave_an_intent_and_an_outcome() {
    let mut p = PgSameDb::new();
    let ids = p.fresh(1200).await;
    let (dlq, queue) = p.urls();
    let sb = Sandbox::new();

    // Reading and dry runs change nothing: nothing is recorded.
    sb.run(&["peek", &dlq, "-n", "1", "--output", "json"]).ok();
    sb.run(&["redrive", &dlq, "--dry-run", "--output", "json"])
        .ok();
    assert!(runs(&sb).is_empty());

    // A replay of 1,200: the ids go to a file beside the log.
    sb.run(&[
        "replay",
        &dlq,
        "--to",
        &queue,
        "--reason",
        "INC-4211: payments back",
        "--yes",
        "--output",
        "json",
    ])
    .ok();
    let r = runs(&sb);
    assert_eq!(r.len(), 1, "{r:?}");
    let run = &r[0];
    assert_eq!(run["record"], "intent");
    assert_eq!(run["command"], "replay");
    assert_eq!(run["reason"], "INC-4211: payments back");
    assert!(run["user"].is_string() && run["host"].is_string(), "{run}");
    let argv = run["argv"].to_string();
    assert!(
        !argv.contains(":dlqctl@"),
        "the password is redacted: {argv}"
    );
    assert!(argv.contains("***"), "{argv}");
    let o = &run["outcome"];
    assert_eq!(o["exit_code"], 0, "{o}");
    assert_eq!(o["counts"]["moved"], 1200, "{o}");
    assert_eq!(
        o["ids"],
        serde_json::json!([]),
        "past 1,000 the ids are in a file"
    );
    assert_eq!(o["ids_complete"], true, "{o}");
    let file = std::fs::read_to_string(o["ids_file"].as_str().unwrap()).unwrap();
    let mut got: Vec<&str> = file.lines().collect();
    got.sort_unstable();
    let mut want: Vec<&str> = ids.iter().map(String::as_str).collect();
    want.sort_unstable();
    assert_eq!(got, want, "every id replayed, once");

    // A purge of three: inline ids.
    sb.run(&[
        "purge",
        &dlq,
        "--max",
        "3",
        "--no-archive",
        "--reason",
        "test data",
        "--yes",
        "--output",
        "json",
    ])
    .ok();
    let r = runs(&sb);
    assert_eq!(r.len(), 2);
    assert_eq!(r[1]["command"], "purge");
    assert_eq!(
        r[1]["outcome"]["ids"].as_array().map(Vec::len),
        Some(3),
        "{}",
        r[1]
    );

    // [audit] require_reason: no --reason, no run (exit 2, nothing removed).
    sb.write("dlqctl.toml", "[audit]\nrequire_reason = true\n");
    let before = p.remaining().await;
    let e = sb
        .run(&["purge", &dlq, "--no-archive", "--yes", "--output", "json"])
        .code(2);
    assert!(e.stderr.contains("--reason"), "{}", e.stderr);
    assert_eq!(p.remaining().await, before);
    assert_eq!(runs(&sb).len(), 2, "a refused run records nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_run_leaves_its_intent() {
    let mut p = PgSameDb::new();
    p.fresh(40).await;
    let (dlq, _) = p.urls();
    let sb = Sandbox::new();
    let archive = sb.path("a.jsonl");
    let mut child = sb
        .cmd(&[
            "purge",
            &dlq,
            "--archive",
            archive.to_str().unwrap(),
            "--batch-size",
            "2",
            "--rate",
            "10/s",
            "--yes",
            "--output",
            "json",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let path = archive.clone();
    wait_until(Duration::from_secs(60), "the first archived batch", || {
        let n = std::fs::read_to_string(&path)
            .unwrap_or_default()
            .lines()
            .count();
        async move { n >= 2 }
    })
    .await;
    child.kill().unwrap();
    child.wait().unwrap();
    let r = runs(&sb);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["command"], "purge");
    assert!(
        r[0]["outcome"].is_null(),
        "no outcome after SIGKILL: {}",
        r[0]
    );
    let table = sb.run(&["audit", "--output", "table"]).ok();
    assert!(table.stdout.contains("unfinished"), "{}", table.stdout);
}

/// `[audit] url`: the same run as a row of the table (the DDL of docs/sql/audit.sql).
#[tokio::test(flavor = "multi_thread")]
async fn the_audit_table_gets_a_row_per_run() {
    let mut p = PgSameDb::new();
    let ids = p.fresh(5).await;
    let (dlq, _) = p.urls();
    let ddl = std::fs::read_to_string(crate::harness::repo_root().join("docs/sql/audit.sql"))
        .unwrap()
        .replace("CREATE TABLE dlqctl_audit", "CREATE TABLE {s}.dlqctl_audit")
        .replace("ON dlqctl_audit", "ON {s}.dlqctl_audit");
    p.exec(&ddl).await;
    let sb = Sandbox::new();
    let schema = dlq
        .split("table=")
        .nth(1)
        .unwrap()
        .split('.')
        .next()
        .unwrap();
    sb.write(
        "dlqctl.toml",
        &format!(
            "[audit]\nurl = \"{}\"\ntable = \"{schema}.dlqctl_audit\"\n",
            crate::harness::pg_url()
        ),
    );
    sb.run(&[
        "purge",
        &dlq,
        "--max",
        "2",
        "--no-archive",
        "--reason",
        "poison",
        "--yes",
        "--output",
        "json",
    ])
    .ok();
    let rows = p
        .query_strings(
            "SELECT command || '|' || reason || '|' || exit_code || '|' || (counts->>'moved') || '|' \
                    || array_length(ids, 1) || '|' || (finished_at >= started_at) || '|' \
                    || array_to_string(argv, ' ')
               FROM {s}.dlqctl_audit",
        )
        .await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    let cols: Vec<&str> = rows[0].split('|').collect();
    assert_eq!(
        &cols[..6],
        ["purge", "poison", "0", "2", "2", "true"],
        "{rows:?}"
    );
    assert!(
        !cols[6].contains(":dlqctl@"),
        "the password is redacted: {}",
        cols[6]
    );
    let moved: Vec<String> = p
        .query_strings("SELECT unnest(ids) FROM {s}.dlqctl_audit")
        .await;
    assert!(moved.iter().all(|id| ids.contains(id)), "{moved:?}");
}
