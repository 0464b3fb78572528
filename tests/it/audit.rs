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

/// What a reviewer reads (issue 25): the filter of each run, an archive by its absolute path,
/// the queue by its configured name, and one run a line with `--output jsonl`.
#[tokio::test(flavor = "multi_thread")]
async fn the_audit_shows_the_filter_and_the_archive_path() {
    let mut p = PgSameDb::new();
    p.fresh(10).await;
    let (dlq, _) = p.urls();
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        &format!("[queues.orders]\ndlq = \"{dlq}\"\n"),
    );
    sb.run(&[
        "purge",
        "orders",
        "--archive",
        "poison.jsonl",
        "--where",
        ".id | test(\"m-[12]$\")",
        "--reason",
        "INC-4211 poison",
        "--yes",
        "--output",
        "json",
    ])
    .ok();
    let r = runs(&sb);
    assert_eq!(r.len(), 1, "{r:?}");
    let archive = r[0]["targets"][0].as_str().unwrap_or_default();
    assert!(
        archive.starts_with("file:/") && archive.ends_with("/poison.jsonl"),
        "the archive is recorded by its absolute path: {archive}"
    );
    assert_eq!(r[0]["queue"], "orders", "{}", r[0]);
    for width in ["80", "120"] {
        let t = sb
            .run_env(&["audit", "--output", "table"], &[("COLUMNS", width)])
            .ok();
        assert!(
            t.stdout.contains("filter") && t.stdout.contains("where"),
            "{width}: a filter column:\n{}",
            t.stdout
        );
        assert!(t.stdout.contains("orders"), "{}", t.stdout);
    }
    let lines = sb.run(&["audit", "--output", "jsonl"]).ok();
    let records = lines.jsonl();
    assert_eq!(records.len(), 1, "{}", lines.stdout);
    assert_eq!(records[0]["command"], "purge", "one run a line");
}

/// A second Ctrl-C stops a run at once, before it can write its outcome: the progress it
/// recorded still says how many messages had left the dead-letter queue, exactly.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_stopped_by_a_second_ctrl_c_says_how_many_moved() {
    let mut p = PgSameDb::new();
    p.fresh(400).await;
    let (dlq, _) = p.urls();
    let sb = Sandbox::new();
    // Connected before the run starts, and the run slow enough (8 s for the 400) that the
    // lock below is taken long before it could finish, however loaded the machine.
    let pool = sqlx::PgPool::connect(&crate::harness::pg_url())
        .await
        .unwrap();
    let mut child = sb
        .cmd(&[
            "redrive",
            &dlq,
            "--batch-size",
            "5",
            "--rate",
            "50/s",
            "--yes",
            "--output",
            "json",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(Duration::from_secs(60), "35 moved", || {
        let p = &p;
        async move { p.copies().await >= 35 }
    })
    .await;
    // Hold the queue table against writes (reads go on): the run's next batch waits, so the
    // first Ctrl-C cannot finish it, and the count below is what had moved.
    let mut tx = pool.begin().await.unwrap();
    let table = dlq
        .split("source=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "LOCK TABLE {table} IN EXCLUSIVE MODE"
    )))
    .execute(&mut *tx)
    .await
    .unwrap();
    // Wait until the run's next batch is blocked on that lock. Then the first Ctrl-C cannot
    // end the run between two batches (it would stop cleanly and write its outcome), and the
    // run has counted every batch before it (it sends the next one only after counting the
    // last), so the copies counted now are what its progress must say.
    let schema = table.split('.').next().unwrap().to_string();
    wait_until(Duration::from_secs(60), "the run's next batch to wait on the lock", || {
        let (pool, schema) = (&pool, &schema);
        async move {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'dlqctl' AND wait_event_type = 'Lock' AND position($1 in query) > 0",
            )
            .bind(schema)
            .fetch_one(pool)
            .await
            .unwrap();
            waiting > 0
        }
    })
    .await;
    let moved = p.copies().await;
    let mut stderr = child.stderr.take().unwrap();
    let interrupt = || {
        let st = std::process::Command::new("kill")
            .arg("-INT")
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(st.success());
    };
    interrupt();
    // Once the first is handled ("interrupting: finishing the current batch"), the second.
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("interrupting") {
        let mut buf = [0u8; 256];
        let n = std::io::Read::read(&mut stderr, &mut buf).unwrap();
        assert!(
            n > 0,
            "no word of the interrupt: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    interrupt();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    // The server notices that the run is gone and cancels its waiting batch (dlqctl asks it to
    // check, `client_connection_check_interval`): released now, the lock lets nothing more move
    // after the run's last progress record.
    wait_until(Duration::from_secs(60), "the server to cancel the run's waiting batch", || {
        let (pool, schema) = (&pool, &schema);
        async move {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'dlqctl' AND position($1 in query) > 0",
            )
            .bind(schema)
            .fetch_one(pool)
            .await
            .unwrap();
            waiting == 0
        }
    })
    .await;
    tx.rollback().await.unwrap();
    assert_eq!(
        p.copies().await,
        moved,
        "a batch moved after the run was stopped"
    );
    let r = runs(&sb);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0]["outcome"].is_null(), "stopped at once: {}", r[0]);
    assert_eq!(r[0]["progress"]["moved"], moved, "{}", r[0]);
    assert_eq!(r[0]["progress"]["stopped"], true, "{}", r[0]);
    let t = sb
        .run_env(&["audit", "--output", "table"], &[("COLUMNS", "80")])
        .ok();
    assert!(
        t.stdout.contains(&format!(" {moved} ")) && t.stdout.contains("stopped"),
        "{}",
        t.stdout
    );
}

/// `[audit] require_reason` is checked before anything is read: without `--reason`, a run
/// whose queue cannot even be reached is refused for the missing reason (exit 2), and at a
/// terminal no plan is shown and no question asked.
#[tokio::test(flavor = "multi_thread")]
async fn a_missing_reason_is_refused_before_anything_is_read() {
    let sb = Sandbox::new();
    sb.write("dlqctl.toml", "[audit]\nrequire_reason = true\n");
    let nowhere = "postgres://dlqctl@127.0.0.1:1/nowhere?table=dead_letters";
    let to = "postgres://dlqctl@127.0.0.1:1/nowhere?table=queue_messages";
    for args in [
        vec!["redrive", nowhere, "--to", to, "--yes"],
        vec!["replay", nowhere, "--to", to, "--yes"],
        vec!["purge", nowhere, "--no-archive", "--yes"],
    ] {
        let r = sb.run(&args).code(2);
        assert!(r.stderr.contains("--reason"), "{args:?}: {}", r.stderr);
    }
    // A dry run changes nothing: no reason needed (it fails on the unreachable queue).
    sb.run(&["redrive", nowhere, "--to", to, "--dry-run"])
        .code(3);
    assert!(runs(&sb).is_empty());
}

/// An audit table that refuses the intent (here: it does not exist) stops the run before it
/// starts, and leaves no phantom "unfinished" run in the log: the run is recorded as ended
/// without starting, with the reason.
#[tokio::test(flavor = "multi_thread")]
async fn an_audit_table_that_fails_leaves_no_unfinished_run() {
    let mut p = PgSameDb::new();
    p.fresh(3).await;
    let (dlq, _) = p.urls();
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        &format!(
            "[audit]\nurl = \"{}\"\ntable = \"no_such_schema.dlqctl_audit\"\n",
            crate::harness::pg_url()
        ),
    );
    let r = sb.run(&["redrive", &dlq, "--yes", "--output", "json"]);
    assert_ne!(r.code, 0, "{}", r.stderr);
    assert_eq!(p.remaining().await, 3, "nothing moved");
    for run in runs(&sb) {
        assert!(
            !run["outcome"].is_null(),
            "a run that never started is not unfinished: {run}"
        );
        assert_ne!(run["outcome"]["exit_code"], 0, "{run}");
    }
}

/// The audit log and its ids file hold message ids and reasons: created 0600, never through a
/// symlink.
#[tokio::test(flavor = "multi_thread")]
async fn the_audit_log_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let mut p = PgSameDb::new();
    p.fresh(1005).await;
    let (dlq, _) = p.urls();
    let sb = Sandbox::new();
    let log = sb.path("state/audit.jsonl");
    sb.write(
        "dlqctl.toml",
        &format!("[audit]\npath = \"{}\"\n", log.display()),
    );
    sb.run(&["purge", &dlq, "--no-archive", "--yes", "--output", "json"])
        .ok();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&log), 0o600, "the log");
    let ids = std::fs::read_dir(sb.path("state/audit-ids"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(mode(&ids), 0o600, "the ids file");

    // A symlink where the log should be: refused, nothing removed, the link's target untouched.
    p.fresh(2).await;
    let (dlq, _) = p.urls();
    let elsewhere = sb.path("elsewhere.txt");
    std::fs::write(&elsewhere, "mine\n").unwrap();
    let linked = sb.path("linked.jsonl");
    std::os::unix::fs::symlink(&elsewhere, &linked).unwrap();
    sb.write(
        "dlqctl.toml",
        &format!("[audit]\npath = \"{}\"\n", linked.display()),
    );
    let r = sb.run(&["purge", &dlq, "--no-archive", "--yes", "--output", "json"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("symlink"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "mine\n");
    assert_eq!(p.remaining().await, 2);
}
