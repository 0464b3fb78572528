//! The JSON shape of every command's output, and what a person sees of a plan, as snapshots
//! (insta): a field renamed, removed or moved fails here first. The shapes are documented in
//! docs/json.md. Values that change from run to run (times, schema names, ports, elapsed times) are
//! redacted; the structure and the stable values are kept.

use insta::{assert_json_snapshot, assert_snapshot, with_settings};

use crate::harness::{Db, Sandbox, pg_url};

/// Filters for text output: the test's schema, the server's port, times, elapsed times, widths.
fn filters(db: &Db) -> Vec<(String, String)> {
    let port = url::Url::parse(&pg_url()).unwrap().port().unwrap();
    vec![
        (regex::escape(&db.schema), "[schema]".into()),
        (format!(":{port}/"), ":[port]/".into()),
        (
            r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d| UTC)?".into(),
            "[time]".into(),
        ),
        // A run's elapsed time and rate.
        (r"\d+\.\ds( \([\d,.]+/s\))?".into(), "[elapsed]".into()),
        // Ages relative to now.
        (r"\b\d+[dhms]( \d+[hms])* ago\b".into(), "[age] ago".into()),
        // Table widths follow the longest cell, which holds the schema name: one space of
        // padding, one rule character.
        (r" +(┆|│)".into(), " $1".into()),
        ("─+".into(), "─".into()),
    ]
}

fn settle(db: &Db, body: impl FnOnce()) {
    let f = filters(db);
    let f: Vec<(&str, &str)> = f.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    with_settings!({ filters => f, prepend_module_to_snapshot => false }, { body() });
}

fn json_text(db: &Db, v: &serde_json::Value) -> serde_json::Value {
    // Redact through the text filters too (schema names inside strings).
    let text = serde_json::to_string(v).unwrap();
    let mut out = text;
    for (re, with) in filters(db) {
        out = regex::Regex::new(&re)
            .unwrap()
            .replace_all(&out, with.as_str())
            .into_owned();
    }
    serde_json::from_str(&out).unwrap()
}

#[tokio::test]
async fn the_json_of_every_command_has_one_documented_shape() {
    let db = Db::new("shapes").await;
    db.seed(8).await;
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        &format!(
            "[queues.orders]\ndlq = \"{}\"\ndlq_retention = \"14d\"\nreplay_window = \"3d\"\n[queues.orders.dedupe]\nurl = \"{}\"\ntable = \"{}.processed_messages\"\nretention = \"30d\"\n[[classify.rules]]\nname = \"our-upstream-timeout\"\nkind = \"transient\"\nmatch = {{ error = \"upstream call timed out\" }}\n",
            db.dlq(),
            pg_url(),
            db.schema
        ),
    );
    db.exec("INSERT INTO {s}.processed_messages (message_id) VALUES ('ord-1')")
        .await;
    let run = |args: &[&str]| sb.run(args).ok().json();

    // inspect: an array, one report per queue, facts an object (one queue or two).
    let one = run(&["inspect", "orders", "--output", "json"]);
    let two = run(&["inspect", "orders", &db.dlq(), "--output", "json"]);
    assert_eq!(two.as_array().map(Vec::len), Some(2));
    assert_eq!(one[0]["facts"]["messages"], 8);
    assert_eq!(
        one[0]["facts"]["retention"],
        14 * 86_400,
        "the declared retention, as verify has it"
    );
    // The classes are classify's: the config's rule comes before the built-in ones.
    assert!(
        one[0]["tables"]
            .to_string()
            .contains("our-upstream-timeout"),
        "{one}"
    );
    // Arrivals: 48 hourly counts and the days before, all eight messages somewhere.
    let a = &one[0]["arrivals"];
    let hourly: Vec<u64> = a["hourly"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let daily: u64 = a["daily"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(hourly.len(), 48, "{a}");
    assert_eq!(hourly.iter().sum::<u64>() + daily, 8, "{a}");
    let peek = run(&["peek", "orders", "-n", "2", "--output", "json"]);
    let classify = run(&["classify", "orders", "--output", "json"]);
    let groups = run(&[
        "classify",
        "orders",
        "--by",
        "fingerprint,class",
        "--output",
        "json",
    ]);
    let check = sb
        .run(&[
            "check",
            "orders",
            "--max-messages",
            "100",
            "--max-class",
            "permanent=0",
            "--output",
            "json",
        ])
        .json();
    let dry = run(&[
        "redrive",
        "orders",
        "--class",
        "transient",
        "--dry-run",
        "--output",
        "json",
    ]);
    let verify = run(&["verify", "--output", "json"]);
    let moved = run(&[
        "redrive", "orders", "--max", "2", "--yes", "--output", "json",
    ]);
    settle(&db, || {
        assert_json_snapshot!("inspect", json_text(&db, &one), {
            "[].facts.size_bytes" => "[bytes]",
            // Which hour a message falls in depends on the minute the test runs: counted above.
            "[].arrivals.hourly" => "[48 hourly counts]",
            "[].arrivals.daily" => "[daily counts]",
        });
        assert_json_snapshot!("classify_by", json_text(&db, &groups));
        assert_json_snapshot!("check", json_text(&db, &check));
        assert_json_snapshot!("peek", json_text(&db, &peek));
        assert_json_snapshot!("classify", json_text(&db, &classify));
        assert_json_snapshot!("redrive_dry_run", json_text(&db, &dry), {
            ".elapsed_seconds" => "[elapsed]",
            ".messages_per_second" => "[rate]",
        });
        assert_json_snapshot!("redrive", json_text(&db, &moved), {
            ".elapsed_seconds" => "[elapsed]",
            ".messages_per_second" => "[rate]",
        });
        assert_json_snapshot!("verify", json_text(&db, &verify));
    });
}

/// What a person sees before a move: the plan, with a count, in the backend's own words.
#[tokio::test]
async fn the_plan_says_how_many_and_what_happens() {
    let db = Db::new("plan").await;
    db.seed(6).await;
    let sb = Sandbox::new();
    let dry = sb
        .run(&[
            "redrive",
            &db.dlq(),
            "--max",
            "4",
            "--dry-run",
            "--output",
            "table",
        ])
        .ok();
    let filtered = sb
        .run(&[
            "redrive",
            &db.dlq(),
            "--class",
            "permanent",
            "--dry-run",
            "--output",
            "table",
        ])
        .ok();
    settle(&db, || {
        assert_snapshot!("plan_postgres_dry_run", dry.stderr);
        assert_snapshot!("plan_postgres_filtered", filtered.stderr);
        assert_snapshot!("summary_postgres_dry_run", dry.stdout);
    });
}

/// `classify --test` needs no queue: the class, the rule, its reason and the match span, with
/// user rules ahead of the built-in ones (docs/json.md#classify---test-and---explain).
#[test]
fn classify_test_explains_one_text() {
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        "[[classify.rules]]\nname = \"inventory-down\"\nkind = \"transient\"\nreason = \"the inventory service restarts nightly\"\nmatch = { error = \"(?i)inventory-service\" }\n",
    );
    let text =
        "org.x.Wrapper: listener failed\nCaused by: java.net.SocketException: Connection reset";
    let e = sb
        .run(&["classify", "--test", text, "--output", "json"])
        .ok()
        .json();
    assert_eq!(e["kind"], "transient");
    assert_eq!(e["rule"], "connection");
    assert_eq!(e["builtin"], true);
    assert_eq!(e["in_cause"], true);
    assert!(e["reason"].as_str().is_some_and(|r| !r.is_empty()), "{e}");
    let (start, end) = (
        e["match"]["start"].as_u64().unwrap() as usize,
        e["match"]["end"].as_u64().unwrap() as usize,
    );
    assert_eq!(&text[start..end], e["match"]["text"]);
    assert_eq!(e["match"]["field"], "error");
    let tried = e["not_matched"].as_array().unwrap();
    assert_eq!(tried[0], "inventory-down", "user rules come first: {e}");

    let user = sb
        .run(&[
            "classify",
            "--test",
            "inventory-service: 502",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(user["rule"], "inventory-down");
    assert_eq!(user["builtin"], false);
    assert_eq!(user["reason"], "the inventory service restarts nightly");

    let none = sb
        .run(&[
            "classify",
            "--test",
            "the flux capacitor hiccuped",
            "--output",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(none["kind"], "unclassified");
    assert_eq!(none["rule"], "unrecognised-error");
    assert!(
        none["match"].is_null() && none["reason"].is_null(),
        "{none}"
    );

    let people = sb
        .run(&[
            "classify",
            "--test",
            "ERROR: deadlock detected (SQLSTATE 40P01)",
            "--output",
            "table",
        ])
        .ok();
    assert!(
        people
            .stdout
            .starts_with("class transient/lock-conflict\nreason: "),
        "{}",
        people.stdout
    );
    // A queue and --test together is a usage error.
    sb.run(&["classify", "orders", "--test", "x"]).code(2);
}

/// `--explain` on classify and peek: per message, the rule, what it matched, the rules before.
#[tokio::test]
async fn explain_says_why_each_message_has_its_class() {
    let db = Db::new("explain").await;
    db.seed(4).await;
    let sb = Sandbox::new();
    let report = sb
        .run(&["classify", &db.dlq(), "--explain", "--output", "json"])
        .ok()
        .json();
    let list = report["explanations"].as_array().expect("explanations");
    assert_eq!(list.len(), 4, "{report}");
    for e in list {
        assert!(
            e["id"].as_str().is_some_and(|id| id.starts_with("ord-")),
            "{e}"
        );
        assert!(
            e["match"]["text"].as_str().is_some_and(|t| !t.is_empty()),
            "{e}"
        );
        assert!(e["not_matched"].is_array() && e["in_cause"] == false, "{e}");
    }
    let timeout = list.iter().find(|e| e["id"] == "ord-4").expect("ord-4");
    assert_eq!(timeout["rule"], "timeout");
    assert_eq!(timeout["match"]["text"], "timed out");
    // Without --explain the report has no explanations.
    let plain = sb
        .run(&["classify", &db.dlq(), "--output", "json"])
        .ok()
        .json();
    assert!(plain.get("explanations").is_none(), "{plain}");

    let records = sb
        .run(&[
            "peek",
            &db.dlq(),
            "-n",
            "2",
            "--explain",
            "--output",
            "jsonl",
        ])
        .ok()
        .jsonl();
    assert_eq!(records.len(), 2);
    for r in &records {
        assert!(r["explain"]["rule"].is_string(), "{r}");
        assert!(r["explain"]["match"]["end"].is_u64(), "{r}");
    }
    let cards = sb
        .run(&[
            "peek",
            &db.dlq(),
            "-n",
            "1",
            "--explain",
            "--output",
            "table",
        ])
        .ok();
    assert!(cards.stdout.contains("  reason: "), "{}", cards.stdout);
    assert!(
        cards.stdout.contains("  did not match: "),
        "{}",
        cards.stdout
    );
}

/// `--output jsonl` is one JSON object per line, on every command that prints data (issue 25):
/// `jq 'select(.command == "purge")'` takes each line as it comes. docs/json.md says what each
/// line is, command by command.
#[tokio::test]
async fn every_jsonl_output_is_one_object_per_line() {
    let db = Db::new("jsonl").await;
    db.seed(8).await;
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        &format!(
            "[queues.orders]\ndlq = \"{}\"\n[queues.orders.limits]\nmax_messages = 100\n",
            db.dlq()
        ),
    );
    let queue = db.table_url("queue_messages");
    let archive = db.table_url("queue_messages");
    let commands: Vec<Vec<&str>> = vec![
        vec!["inspect", "orders"],
        vec!["inspect", "orders", &queue],
        vec!["peek", "orders", "-n", "2"],
        vec!["peek", "orders", "-n", "1", "--explain"],
        vec!["tail", "orders", "--from-start", "--max", "2"],
        vec!["classify", "orders"],
        vec!["classify", "orders", "--by", "fingerprint"],
        vec!["classify", "--test", "connection reset by peer"],
        vec!["export", "orders", "--max", "2"],
        vec!["verify"],
        vec!["check", "orders"],
        vec!["redrive", "orders", "--max", "2", "--dry-run"],
        vec!["redrive", "orders", "--max", "1", "--yes"],
        vec!["replay", "orders", "--to", &queue, "--max", "1", "--yes"],
        vec!["purge", "orders", "--max", "1", "--no-archive", "--dry-run"],
        vec![
            "purge",
            "orders",
            "--max",
            "1",
            "--archive",
            &archive,
            "--yes",
        ],
        vec!["audit"],
        vec!["version"],
    ];
    for args in commands {
        let mut all = args.clone();
        all.extend(["--output", "jsonl"]);
        let r = sb.run(&all);
        assert!(
            r.code == 0 || (args[0] == "verify" && r.code == 1),
            "{args:?}: exit {}\n{}",
            r.code,
            r.stderr
        );
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert!(!lines.is_empty(), "{args:?} printed nothing");
        for l in lines {
            let v: serde_json::Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{args:?}: not a JSON line ({e}):\n{l}"));
            assert!(
                v.is_object(),
                "{args:?}: a line that is not an object:\n{l}"
            );
        }
    }
}
