//! Reading a PostgreSQL dead-letter table: inspect, peek, export, replay, classify, tail.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::harness::{Db, Sandbox, StderrLines, pg_url};

#[tokio::test]
async fn inspect_reports_counts_ages_and_classes() {
    let db = Db::new("inspect").await;
    db.seed(12).await;
    let sb = Sandbox::new();
    let j = sb
        .run(&["inspect", &db.dlq(), "--output", "json"])
        .ok()
        .json();
    let fact = |name: &str| j[0]["facts"][name].clone();
    assert_eq!(fact("messages"), 12);
    assert_eq!(fact("table"), format!("{}.dead_letters", db.schema));
    assert_eq!(fact("retention"), "forever");
    assert!(fact("oldest").as_str().unwrap().starts_with("20"), "{j}");
    let classes = j[0]["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"].as_str().unwrap().starts_with("by failure class"))
        .unwrap();
    let total: u64 = classes["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[2].as_u64().unwrap())
        .sum();
    assert_eq!(total, 12);
    // Password never shown.
    assert!(
        !sb.run(&["inspect", &db.dlq(), "--output", "table"])
            .ok()
            .stdout
            .contains(":dlqctl@")
    );
}

#[tokio::test]
async fn peek_shows_messages_in_order_and_removes_nothing() {
    let db = Db::new("peek").await;
    db.seed(15).await;
    let sb = Sandbox::new();
    let recs = sb
        .run(&["peek", &db.dlq(), "-n", "3", "--output", "jsonl"])
        .ok()
        .jsonl();
    let ids: Vec<&str> = recs.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["ord-1", "ord-2", "ord-3"]);
    assert_eq!(recs[0]["attributes"].as_array().unwrap().len(), 2);
    assert_eq!(recs[0]["receive_count"], 5);
    assert_eq!(recs[0]["group"], "cust-1");
    assert_eq!(recs[1]["error"]["message"], "HTTP 503 Service Unavailable");
    // --output json is one array.
    let arr = sb
        .run(&["peek", &db.dlq(), "-n", "12", "--output", "json"])
        .ok()
        .json();
    assert_eq!(
        arr.as_array().unwrap().len(),
        12,
        "ordering must be by key, not text: {arr}"
    );
    assert_eq!(arr[9]["id"], "ord-10");
    assert_eq!(db.count("dead_letters").await, 15);
}

#[tokio::test]
async fn peek_filters() {
    let db = Db::new("peekf").await;
    db.seed(20).await;
    let sb = Sandbox::new();
    let url = db.dlq();
    let ids = |args: &[&str]| -> Vec<String> {
        let mut a = vec!["peek", &url[..], "-n", "100", "--output", "jsonl"];
        a.extend_from_slice(args);
        sb.run(&a)
            .ok()
            .jsonl()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&["--class", "permanent"]).len(), 10);
    assert_eq!(
        ids(&["--class", "timeout"]),
        ["ord-4", "ord-8", "ord-12", "ord-16", "ord-20"]
    );
    assert_eq!(ids(&["--error", "503"]).len(), 5);
    assert_eq!(ids(&["--attr", "tenant=^acme$"]).len(), 10);
    assert_eq!(ids(&["--match", "\"order_id\":\\s*7\\b"]), ["ord-7"]);
    assert_eq!(
        ids(&["--older-than", "18h"]),
        ["ord-18", "ord-19", "ord-20"]
    );
    assert_eq!(ids(&["--newer-than", "2h30m"]), ["ord-1", "ord-2"]);
    assert_eq!(ids(&["--id", "ord-3", "--id", "ord-9"]), ["ord-3", "ord-9"]);
    let f = sb.write("ids.txt", "# picked by hand\nord-5\n\nord-6\n");
    assert_eq!(
        ids(&["--ids-from", f.to_str().unwrap()]),
        ["ord-5", "ord-6"]
    );
    // Filters combine.
    assert_eq!(
        ids(&["--class", "transient", "--attr", "tenant=globex"]).len(),
        0
    );
    let r = sb.run(&["peek", &db.dlq(), "--class", "flaky"]).code(2);
    assert!(
        r.stderr.contains("--class") && r.stderr.contains("flaky"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn peek_shows_binary_and_hostile_bodies_safely() {
    let db = Db::new("peekbin").await;
    db.exec(
        "INSERT INTO {s}.dead_letters (message_id, queue, payload_bytes, error) VALUES ('bin-1', 'orders', '\\x00ff1b5b326a'::bytea, 'could not decode protobuf');
         INSERT INTO {s}.dead_letters (message_id, queue, payload, error) VALUES ('esc-1', 'orders', to_jsonb(E'\\u001b[2J wipe'::text), 'x')",
    )
    .await;
    let sb = Sandbox::new();
    let r = sb.run(&["peek", &db.dlq(), "--output", "table"]).ok();
    assert!(
        r.stdout.contains("binary body, 6 bytes: 0x00ff1b5b326a"),
        "{}",
        r.stdout
    );
    assert!(
        !r.stdout.contains('\u{1b}'),
        "raw escape reached the terminal: {:?}",
        r.stdout
    );
    let recs = sb
        .run(&["peek", &db.dlq(), "--output", "jsonl"])
        .ok()
        .jsonl();
    assert_eq!(recs[0]["body_encoding"], "base64");
    assert_eq!(recs[0]["body"], "AP8bWzJq");
}

#[tokio::test]
async fn export_is_lossless_and_replay_copies_it_back() {
    let db = Db::new("export").await;
    db.seed(30).await;
    db.exec("INSERT INTO {s}.dead_letters (message_id, queue, payload_bytes, headers, error) VALUES ('bin-1', 'orders', '\\x00ff10'::bytea, '{\"k\": {\"type\": \"Binary\", \"base64\": \"AAE=\"}, \"n\": null}', 'x')").await;
    let sb = Sandbox::new();
    let file = sb.path("dlq.jsonl");
    let r = sb
        .run(&["export", &db.dlq(), "-o", file.to_str().unwrap()])
        .ok();
    assert!(r.stderr.contains("exported 31 messages"), "{}", r.stderr);
    assert!(!sb.path("dlq.jsonl.partial").exists());
    let lines = std::fs::read_to_string(&file).unwrap();
    assert_eq!(lines.lines().count(), 31);

    // Replay the file into the queue table: ids, bodies and headers arrive unchanged, but for
    // the loop guard's count of one more redrive.
    let r = sb
        .run(&[
            "replay",
            file.to_str().unwrap(),
            "--to",
            &db.table_url("queue_messages"),
            "--yes",
            "--output",
            "json",
        ])
        .ok();
    assert_eq!(r.json()["moved"], 31, "{}", r.stdout);
    assert_eq!(db.count("dead_letters").await, 31, "replay removes nothing");
    let rows: Vec<(String, bool)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT q.message_id, (q.payload IS NOT DISTINCT FROM d.payload AND q.payload_bytes IS NOT DISTINCT FROM d.payload_bytes AND q.headers - 'dlqctl-redrive-count' = d.headers AND q.headers->>'dlqctl-redrive-count' = '1' AND q.queue = d.queue AND q.group_key IS NOT DISTINCT FROM d.group_key)
           FROM {s}.queue_messages q JOIN {s}.dead_letters d USING (message_id)",
        s = db.schema
    )))
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 31);
    for (id, same) in rows {
        assert!(same, "{id} changed on the way through export and replay");
    }
}

#[tokio::test]
async fn export_to_a_closed_pipe_exits_quietly() {
    let db = Db::new("pipe").await;
    db.seed(3000).await;
    let sb = Sandbox::new();
    let mut child = sb
        .cmd(&["export", &db.dlq()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is gone (like `| head -1`).
    let out = child.wait_with_output().unwrap();
    assert!(first.starts_with("{\"v\":1"), "{first}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn classify_counts_classes_and_marks_processed_ids() {
    let db = Db::new("classify").await;
    db.seed(20).await;
    db.exec("INSERT INTO {s}.processed_messages (message_id) VALUES ('ord-4'), ('ord-8'), ('ord-1'), ('not-in-dlq')").await;
    let sb = Sandbox::new();
    let dedupe = format!(
        "{}?table={}.processed_messages",
        crate::harness::pg_url(),
        db.schema
    );
    let j = sb
        .run(&[
            "classify",
            &db.dlq(),
            "--dedupe",
            &dedupe,
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(j["total"], 20);
    assert_eq!(j["kinds"]["transient"], 10);
    assert_eq!(j["kinds"]["permanent"], 10);
    assert_eq!(j["dedupe"]["processed"], 3);
    let timeout = j["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["rule"] == "timeout")
        .unwrap();
    assert_eq!(timeout["count"], 5);
    assert_eq!(timeout["processed"], 2);
    assert_eq!(timeout["sample_error"], "upstream call timed out after 30s");

    // User rules come first.
    let rules = sb.write(
        "rules.toml",
        "[[rules]]\nname = \"customer-missing\"\nkind = \"transient\"\nmatch = { error = \"customer \\\\d+ not found\" }\n",
    );
    let j = sb
        .run(&[
            "classify",
            &db.dlq(),
            "--rules",
            rules.to_str().unwrap(),
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(j["kinds"]["transient"], 15, "{j}");
    let bad = sb.write(
        "bad.toml",
        "[[rules]]\nname = \"x\"\nkind = \"sometimes\"\nmatch = { error = \"y\" }\n",
    );
    let r = sb
        .run(&["classify", &db.dlq(), "--rules", bad.to_str().unwrap()])
        .code(2);
    assert_eq!(
        r.stderr.lines().next().unwrap().matches("error:").count(),
        1
    );
    assert!(
        r.stderr.contains("bad.toml") && r.stderr.contains("sometimes"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn tail_follows_new_rows_with_and_without_notify() {
    for with_trigger in [true, false] {
        let db = Db::new("tail").await;
        if !with_trigger {
            db.exec("DROP TRIGGER dead_letters_notify ON {s}.dead_letters")
                .await;
        }
        db.seed(2).await;
        let sb = Sandbox::new();
        let started = Instant::now();
        let mut child = sb
            .cmd(&[
                "-v",
                "tail",
                &db.dlq(),
                "--idle-timeout",
                "8s",
                "--poll-interval",
                "200ms",
                "--output",
                "jsonl",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The rows arrive once the tail has fixed where it starts (its `-v` line).
        let stderr = StderrLines::until(&mut child, "following postgres://");
        db.exec("INSERT INTO {s}.dead_letters (message_id, queue, payload) VALUES ('new-1', 'orders', '{}'), ('new-2', 'orders', '[1]')").await;
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", stderr.rest());
        let ids: Vec<String> = stdout
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            ids,
            ["new-1", "new-2"],
            "trigger={with_trigger}: existing rows are not repeated"
        );
        // It ends by itself once idle (a bound for a hang, far above the 8 s).
        assert!(started.elapsed() < Duration::from_secs(90));

        let r = sb
            .run(&[
                "tail",
                &db.dlq(),
                "--from-start",
                "--max",
                "3",
                "--output",
                "jsonl",
            ])
            .ok();
        assert_eq!(r.jsonl().len(), 3);
    }
}

/// psql's habits: a Unix socket (libpq's `user@/db?host=DIR` form), a URL as short as
/// `postgres:///?table=…` with PGHOST, PGPORT, PGDATABASE and PGUSER, and a pg_service.conf
/// entry (`service=` or PGSERVICE).
#[tokio::test]
async fn unix_sockets_the_environment_and_service_files_connect() {
    let db = Db::new("socket").await;
    db.seed(2).await;
    let dir = std::env::var("DLQCTL_TEST_PG_SOCKET_DIR")
        .expect("DLQCTL_TEST_PG_SOCKET_DIR (scripts/services env)");
    let port = url::Url::parse(&pg_url())
        .unwrap()
        .port()
        .unwrap()
        .to_string();
    let t = format!("table={}.dead_letters", db.schema);
    let sb = Sandbox::new();
    let messages = |r: crate::harness::Run| {
        let j = r.ok().json();
        j[0]["facts"]["messages"].as_i64().unwrap()
    };
    let socket = format!("postgres://dlqctl@/dlqctl_test?host={dir}&port={port}&{t}");
    let r = sb.run(&["inspect", &socket, "--output", "json"]);
    assert!(r.stdout.contains(&format!("host={dir}")), "{}", r.stdout);
    assert_eq!(messages(r), 2);
    let env = [
        ("PGHOST", dir.as_str()),
        ("PGPORT", port.as_str()),
        ("PGDATABASE", "dlqctl_test"),
        ("PGUSER", "dlqctl"),
    ];
    let short = format!("postgres:///?{t}");
    assert_eq!(
        messages(sb.run_env(&["inspect", &short, "--output", "json"], &env)),
        2
    );
    let services = sb.write(
        "pg_service.conf",
        &format!(
            "# the tests' server\n[tests]\nhost=127.0.0.1\nport={port}\ndbname=dlqctl_test\nuser=dlqctl\npassword=dlqctl\n"
        ),
    );
    let file = services.to_string_lossy().into_owned();
    assert_eq!(
        messages(sb.run_env(
            &[
                "inspect",
                &format!("postgres:///?service=tests&{t}"),
                "--output",
                "json"
            ],
            &[("PGSERVICEFILE", file.as_str())],
        )),
        2
    );
    assert_eq!(
        messages(sb.run_env(
            &["inspect", &short, "--output", "json"],
            &[("PGSERVICEFILE", file.as_str()), ("PGSERVICE", "tests")],
        )),
        2
    );
    // A service that is not there is named, exit 2.
    let r = sb
        .run_env(
            &["inspect", &format!("postgres:///?service=nope&{t}")],
            &[("PGSERVICEFILE", file.as_str())],
        )
        .code(2);
    assert!(r.stderr.contains("service `nope`"), "{}", r.stderr);
}

/// A run that stops on a local error after it moved messages never exits 2 ("nothing was
/// changed"): a bad line in a replay file after two lines were sent is exit 1, the summary says
/// why, and the two copies stay.
#[tokio::test]
async fn a_bad_line_after_sent_copies_is_exit_1_not_2() {
    let db = Db::new("badline").await;
    let sb = Sandbox::new();
    let file = sb.write(
        "mixed.jsonl",
        concat!(
            r#"{"v":1,"id":"a-1","source":"orders","body":"{\"a\":1}","body_encoding":"utf8"}"#,
            "\n",
            r#"{"v":1,"id":"a-2","source":"orders","body":"{\"a\":2}","body_encoding":"utf8"}"#,
            "\n",
            "this is not JSON\n"
        ),
    );
    let r = sb
        .run(&[
            "replay",
            &file.to_string_lossy(),
            "--to",
            &db.table_url("queue_messages"),
            "--batch-size",
            "1",
            "--yes",
            "--output",
            "json",
        ])
        .code(1);
    assert!(r.stderr.contains("line 3"), "{}", r.stderr);
    assert!(
        r.json()["aborted"]
            .as_str()
            .is_some_and(|a| a.contains("line 3")),
        "{}",
        r.stdout
    );
    assert_eq!(db.ids("queue_messages").await, vec!["a-1", "a-2"]);
}

/// `export -o FILE` never replaces a FILE that appeared while it ran (checked at the end too,
/// atomically), and two exports to one FILE do not share a partial file. The file holds
/// message bodies: 0600.
#[tokio::test]
async fn export_never_overwrites_a_file_that_appeared_meanwhile() {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let out = sb.path("out.jsonl");
    let line = |id: &str| {
        format!("{{\"v\":1,\"id\":\"{id}\",\"body\":\"x\",\"body_encoding\":\"utf8\"}}\n")
    };
    let start = || {
        sb.cmd(&["export", "-", "-o", out.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let partials = || {
        std::fs::read_dir(sb.dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains("partial")
            })
            .count()
    };
    let wait_for = |n: usize| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while partials() < n {
            assert!(std::time::Instant::now() < deadline, "no partial file");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };

    // Someone else writes FILE while the export runs: it is not replaced.
    let mut a = start();
    a.stdin
        .as_mut()
        .unwrap()
        .write_all(line("a").as_bytes())
        .unwrap();
    wait_for(1);
    std::fs::write(&out, "theirs\n").unwrap();
    drop(a.stdin.take());
    let r = a.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{stderr}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "theirs\n");
    assert!(
        stderr.contains("partial"),
        "says where the export is: {stderr}"
    );
    std::fs::remove_file(&out).unwrap();
    for e in std::fs::read_dir(sb.dir.path()).unwrap() {
        let e = e.unwrap();
        if e.file_name().to_string_lossy().contains("partial") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }

    // Two exports to one FILE: each writes its own partial file; the first to finish wins.
    let mut a = start();
    a.stdin
        .as_mut()
        .unwrap()
        .write_all(line("a").as_bytes())
        .unwrap();
    wait_for(1);
    let mut b = start();
    b.stdin
        .as_mut()
        .unwrap()
        .write_all(line("b").as_bytes())
        .unwrap();
    wait_for(2);
    drop(a.stdin.take());
    assert_eq!(a.wait_with_output().unwrap().status.code(), Some(0));
    drop(b.stdin.take());
    assert_eq!(b.wait_with_output().unwrap().status.code(), Some(2));
    let won = std::fs::read_to_string(&out).unwrap();
    assert!(
        won.lines().count() == 1 && won.contains("\"id\":\"a\""),
        "the first export's file, whole: {won}"
    );
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "an export holds message bodies");
}

/// A JSON Lines source names the line that is not UTF-8, and refuses a line longer than its
/// limit (naming it) instead of reading it whole into memory.
#[tokio::test]
async fn a_json_lines_source_names_its_bad_line() {
    use std::io::Write;
    let sb = Sandbox::new();
    let good = "{\"v\":1,\"id\":\"a\",\"body\":\"x\",\"body_encoding\":\"utf8\"}\n";
    let mut bad = good.repeat(2).into_bytes();
    bad.extend_from_slice(b"{\"v\":1,\"id\":\"\xff\xfe\"}\n");
    let file = sb.path("bad.jsonl");
    std::fs::write(&file, bad).unwrap();
    let r = sb
        .run(&[
            "peek",
            file.to_str().unwrap(),
            "-n",
            "10",
            "--output",
            "jsonl",
        ])
        .code(2);
    assert!(r.stderr.contains("line 3"), "{}", r.stderr);

    let file = sb.path("huge.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
    f.write_all(good.as_bytes()).unwrap();
    f.write_all(b"{\"v\":1,\"id\":\"h\",\"body_encoding\":\"utf8\",\"body\":\"")
        .unwrap();
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..65 {
        f.write_all(&chunk).unwrap();
    }
    f.write_all(b"\"}\n").unwrap();
    f.flush().unwrap();
    drop(f);
    let r = sb
        .run(&[
            "peek",
            file.to_str().unwrap(),
            "-n",
            "10",
            "--output",
            "jsonl",
        ])
        .code(2);
    assert!(
        r.stderr.contains("line 2") && r.stderr.contains("longer than"),
        "{}",
        r.stderr
    );
}

/// A JSON Lines file takes copies only as a purge's archive: `--to FILE` and `--park FILE` are
/// refused, and the refusal creates no file.
#[tokio::test]
async fn a_refused_file_target_is_not_created() {
    let db = Db::new("fileto").await;
    db.seed(2).await;
    let sb = Sandbox::new();
    let to = sb.path("to.jsonl");
    let park = sb.path("park.jsonl");
    let to_s = to.to_str().unwrap();
    let park_s = park.to_str().unwrap();
    for args in [
        vec!["redrive", &db.dlq(), "--to", to_s, "--yes"],
        vec!["replay", &db.dlq(), "--to", to_s, "--yes"],
        vec![
            "redrive",
            &db.dlq(),
            "--max-redrives",
            "1",
            "--park",
            park_s,
            "--yes",
        ],
    ] {
        let r = sb.run(&args).code(2);
        assert!(
            !to.exists() && !park.exists(),
            "{args:?} created its file: {}",
            r.stderr
        );
    }
    assert_eq!(db.count("dead_letters").await, 2);
}
