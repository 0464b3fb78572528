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
            fp.len() == 16 && fp.bytes().all(|b| b.is_ascii_hexdigit()),
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

/// check says what is wrong in its own words (issue 25): the baseline's title reads forwards,
/// a missing baseline file is named without an OS error number, nothing to check is the
/// command's refusal, not a bad QUEUE.
#[tokio::test]
async fn check_says_what_is_wrong_in_its_own_words() {
    let mut p = PgSameDb::new();
    p.fresh(3).await;
    let (dlq, _) = p.urls();
    let sb = Sandbox::new();
    let missing = sb.run(&["check", &dlq, "--baseline", "nope.json"]).code(2);
    assert!(
        missing.stderr.contains("cannot read nope.json") && !missing.stderr.contains("os error"),
        "{}",
        missing.stderr
    );
    let nothing = sb.run(&["check", &dlq]).code(2);
    assert!(
        nothing.stderr.contains("dlqctl check: nothing to check")
            && !nothing.stderr.contains("QUEUE"),
        "{}",
        nothing.stderr
    );
    sb.write("base.json", r#"{"fingerprints": []}"#);
    let r = sb
        .run(&["check", &dlq, "--baseline", "base.json", "--output", "json"])
        .code(1);
    let title = r.json()["queues"][0]["checks"][0]["title"].clone();
    assert_eq!(
        title, "No new kind of failure since base.json",
        "{}",
        r.stdout
    );
}

// ---------------------------------------------------------------- queries and fingerprints that
// can be trusted (issue 24 items 7, 8, 13, 15 and the fingerprint ids; issue 25 item 4)

/// A JSON Lines file of dead letters, one per (id, body, error message).
fn dead_letters(sb: &Sandbox, name: &str, rows: &[(String, serde_json::Value, String)]) -> String {
    let text: String = rows
        .iter()
        .map(|(id, body, error)| {
            serde_json::json!({
                "v": 1, "id": id, "native_id": id, "body": body.to_string(),
                "body_encoding": "utf8", "error": { "message": error },
            })
            .to_string()
                + "\n"
        })
        .collect();
    sb.write(name, &text).to_str().unwrap().to_string()
}

/// `n` payments `m-0 … m-(n-1)`, each with an amount and a currency, failed the same way.
fn payments(sb: &Sandbox, n: usize) -> String {
    let rows: Vec<_> = (0..n)
        .map(|i| {
            (
                format!("m-{i}"),
                serde_json::json!({ "amount_cents": 50_000 * i, "currency": "EUR" }),
                format!("customer cust-{i} not found"),
            )
        })
        .collect();
    dead_letters(sb, "payments.jsonl", &rows)
}

/// CPU time a process has used so far, in milliseconds (Linux: /proc/PID/stat).
fn cpu_ms(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name (which is in parentheses): utime is the 14th field.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    // Clock ticks are 100 per second on Linux.
    f.iter().sum::<u64>() * 10
}

/// Wait for `child` to exit within `limit`; None (and the child killed) when it did not.
fn exit_within(child: &mut std::process::Child, limit: std::time::Duration) -> Option<i32> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Start dlqctl with `args` and `env`, wait until it is busy (has used `busy_ms` of CPU), then
/// send it one SIGINT.
fn interrupt_when_busy(
    sb: &Sandbox,
    args: &[&str],
    env: &[(&str, &str)],
    busy_ms: u64,
) -> std::process::Child {
    let mut c = sb.cmd(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let child = c
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start dlqctl");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while cpu_ms(child.id()) < busy_ms {
        assert!(
            std::time::Instant::now() < deadline,
            "dlqctl never got busy"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let st = std::process::Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(st.success());
    child
}

/// Issue 24 item 7: one Ctrl-C stops a run whose `--where` spins (the expression yields to the
/// interrupt), and an expression over its budget fails loudly instead of running for ever.
#[test]
fn one_ctrl_c_stops_a_where_that_spins_and_a_budget_bounds_it() {
    let sb = Sandbox::new();
    let file = payments(&sb, 3);
    let spin = "last(range(1e18)) > 0";
    let mut child = interrupt_when_busy(
        &sb,
        &["peek", &file, "--where", spin, "--output", "jsonl"],
        &[("DLQCTL_JQ_BUDGET_MS", "600000")],
        300,
    );
    let code = exit_within(&mut child, std::time::Duration::from_secs(10));
    assert_eq!(code, Some(130), "still running 10 s after one SIGINT");

    // Over the budget on the first message: exit 2 before anything is done, naming the
    // expression and how to raise the budget.
    let mut c = sb.cmd(&["peek", &file, "--where", spin, "--output", "jsonl"]);
    c.env("DLQCTL_JQ_BUDGET_MS", "200")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let code = exit_within(&mut child, std::time::Duration::from_secs(20));
    assert_eq!(code, Some(2), "a --where over its budget ran for 20 s");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(spin) && stderr.contains("DLQCTL_JQ_BUDGET_MS"),
        "{stderr}"
    );

    // Over the budget on a later message: that message fails, loudly and once; the others pass.
    let slow = r#"if .id == "m-1" then last(range(1e18)) > 0 else true end"#;
    let r = sb.run_env(
        &["peek", &file, "--where", slow, "--output", "jsonl"],
        &[("DLQCTL_JQ_BUDGET_MS", "200")],
    );
    let ids: Vec<String> = r
        .jsonl()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["m-0", "m-2"], "{}", r.stderr);
    assert_eq!(r.stderr.matches("budget").count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("m-1"), "{}", r.stderr);
}

/// Issue 24 item 13: jq's `=` assigns; a `--where` whose result is not true or false is not a
/// test. On the first message it stops the command with exit 2 before anything changes; on a
/// later one it fails that message, loudly.
#[tokio::test(flavor = "multi_thread")]
async fn a_where_that_is_not_a_test_selects_nothing() {
    let mut p = PgSameDb::new();
    let _ = p.fresh(N).await;
    let (dlq, _) = p.urls();
    let sb = Sandbox::new();
    let assign = r#".json.tenant = "acme""#;
    for args in [
        vec!["peek", dlq.as_str(), "--where", assign],
        vec![
            "purge",
            &dlq,
            "--no-archive",
            "--where",
            assign,
            "--dry-run",
        ],
        vec!["purge", &dlq, "--no-archive", "--where", assign, "--yes"],
    ] {
        let r = sb.run(&args).code(2);
        assert!(
            r.stderr.contains("--where") && r.stderr.contains("`==`"),
            "{args:?}: {}",
            r.stderr
        );
        assert!(!r.stdout.contains("\"id\""), "{args:?}: {}", r.stdout);
    }
    assert_eq!(p.remaining().await, N as u64, "nothing was purged");

    // true/false on the first message, a string on a later one: that one fails loudly.
    let rows: Vec<_> = [
        serde_json::json!(true),
        serde_json::json!("yes"),
        serde_json::json!(false),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, vip)| {
        (
            format!("m-{i}"),
            serde_json::json!({ "vip": vip }),
            "x".to_string(),
        )
    })
    .collect();
    let file = dead_letters(&sb, "vip.jsonl", &rows);
    let r = sb
        .run(&["peek", &file, "--where", ".json.vip", "--output", "jsonl"])
        .ok();
    assert_eq!(r.jsonl().len(), 1, "{}", r.stdout);
    assert!(
        r.stderr.contains("m-1") && r.stderr.contains("not true or false"),
        "{}",
        r.stderr
    );
}

/// Issue 24 item 15 and the baseline's other gaps: a classify report says whether it covered
/// the whole queue, and `check --baseline` refuses one that did not, or one that has no
/// fingerprints.
#[test]
fn a_partial_classify_says_so_and_is_no_baseline() {
    let sb = Sandbox::new();
    let file = payments(&sb, 40);
    // Each message takes a while: the run is busy when it is interrupted.
    let slow = "last(range(4e6)) > 0";
    let child = interrupt_when_busy(
        &sb,
        &[
            "classify",
            &file,
            "--by",
            "fingerprint",
            "--where",
            slow,
            "--output",
            "json",
        ],
        &[("DLQCTL_JQ_BUDGET_MS", "600000")],
        300,
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["total"].as_u64().unwrap() < 40, "{report}");
    assert_eq!(
        (&report["complete"], &report["interrupted"]),
        (&serde_json::json!(false), &serde_json::json!(true)),
        "{report}"
    );
    let partial = sb.write("partial.json", &String::from_utf8_lossy(&out.stdout));
    let r = sb
        .run(&["check", &file, "--baseline", partial.to_str().unwrap()])
        .code(2);
    assert!(r.stderr.contains("interrupted"), "{}", r.stderr);

    // --max: not the whole queue either.
    let r = sb
        .run(&[
            "classify",
            &file,
            "--by",
            "fingerprint",
            "--max",
            "5",
            "--output",
            "json",
        ])
        .ok();
    assert_eq!(r.json()["complete"], false, "{}", r.stdout);
    let capped = sb.write("capped.json", &r.stdout);
    let r = sb
        .run(&["check", &file, "--baseline", capped.to_str().unwrap()])
        .code(2);
    assert!(r.stderr.contains("--max"), "{}", r.stderr);

    // By class: no fingerprints in it, so every fingerprint would be "new".
    let r = sb
        .run(&["classify", &file, "--by", "class", "--output", "json"])
        .ok();
    assert_eq!(
        (&r.json()["complete"], &r.json()["interrupted"]),
        (&serde_json::json!(true), &serde_json::json!(false))
    );
    let by_class = sb.write("by-class.json", &r.stdout);
    let r = sb
        .run(&["check", &file, "--baseline", by_class.to_str().unwrap()])
        .code(2);
    assert!(r.stderr.contains("--by fingerprint"), "{}", r.stderr);

    // A complete one is a baseline.
    let r = sb
        .run(&["classify", &file, "--by", "fingerprint", "--output", "json"])
        .ok();
    let whole = sb.write("whole.json", &r.stdout);
    sb.run(&["check", &file, "--baseline", whole.to_str().unwrap()])
        .ok();
}

/// Three letters for `i`: templates that no digit normalisation merges.
fn letters(mut i: usize) -> String {
    let mut s = String::new();
    for _ in 0..3 {
        s.push((b'a' + (i % 26) as u8) as char);
        i /= 26;
    }
    s
}

/// `check --baseline`: a new fingerprint is flagged even past the first 10,000 fingerprints.
#[test]
fn a_new_fingerprint_past_ten_thousand_is_still_new() {
    let sb = Sandbox::new();
    let rows: Vec<_> = (0..10_005)
        .map(|i| {
            (
                format!("m-{i}"),
                serde_json::json!({}),
                format!("failure of kind {}", letters(i)),
            )
        })
        .collect();
    let file = dead_letters(&sb, "kinds.jsonl", &rows);
    let known = dead_letters(&sb, "known.jsonl", &rows[..10_000]);
    let r = sb
        .run(&["peek", &known, "-n", "20000", "--output", "jsonl"])
        .ok();
    let fps: Vec<serde_json::Value> = r.jsonl().iter().map(|m| m["fingerprint"].clone()).collect();
    assert_eq!(fps.len(), 10_000);
    let base = sb.write(
        "known.json",
        &serde_json::json!({ "fingerprints": fps }).to_string(),
    );
    let r = sb
        .run(&[
            "check",
            &file,
            "--baseline",
            base.to_str().unwrap(),
            "--output",
            "json",
        ])
        .code(1)
        .json();
    let new = r["queues"][0]["new_fingerprints"].as_array().unwrap();
    let counted: u64 = new.iter().map(|f| f["count"].as_u64().unwrap()).sum();
    assert_eq!(counted, 5, "{r}");
}

/// Fingerprint ids: 64 bits (sixteen hex characters); `--fingerprint` takes a unique prefix of
/// eight or more, and refuses an ambiguous one naming the candidates.
#[test]
fn fingerprints_are_sixteen_hex_and_take_a_unique_prefix() {
    let sb = Sandbox::new();
    let file = payments(&sb, 300);
    let r = sb
        .run(&["classify", &file, "--by", "fingerprint", "--output", "json"])
        .ok()
        .json();
    // Issue 24 item 8: one failure, one group, whatever the length of the id.
    let groups = r["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{r}");
    let fp = groups[0]["key"]["fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        fp.len() == 16 && fp.bytes().all(|b| b.is_ascii_hexdigit()),
        "{fp}"
    );
    for given in [&fp[..], &fp[..8], &fp[..11]] {
        let r = sb
            .run(&[
                "peek",
                &file,
                "--fingerprint",
                given,
                "-n",
                "1000",
                "--output",
                "jsonl",
            ])
            .ok();
        assert_eq!(r.jsonl().len(), 300, "--fingerprint {given}");
    }
    let r = sb.run(&["peek", &file, "--fingerprint", &fp[..7]]).code(2);
    assert!(r.stderr.contains("at least 8"), "{}", r.stderr);
    // Two failures whose ids share their first eight hex characters (found by search).
    let rows: Vec<_> = AMBIGUOUS
        .iter()
        .enumerate()
        .map(|(i, e)| (format!("m-{i}"), serde_json::json!({}), e.to_string()))
        .collect();
    let file = dead_letters(&sb, "ambiguous.jsonl", &rows);
    let r = sb
        .run(&["classify", &file, "--by", "fingerprint", "--output", "json"])
        .ok()
        .json();
    let ids: Vec<String> = r["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"]["fingerprint"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2, "{r}");
    assert_eq!(ids[0][..8], ids[1][..8], "{ids:?}");
    let r = sb
        .run(&["peek", &file, "--fingerprint", &ids[0][..8]])
        .code(2);
    assert!(
        r.stderr.contains(&ids[0]) && r.stderr.contains(&ids[1]),
        "{}",
        r.stderr
    );
    let r = sb
        .run(&["peek", &file, "--fingerprint", &ids[0], "--output", "jsonl"])
        .ok();
    assert_eq!(r.jsonl().len(), 1);
}

/// Two error texts whose fingerprint ids share their first eight hex characters.
const AMBIGUOUS: [&str; 2] = ["failure of kind cydd", "failure of kind esol"];

/// Issue 25 item 4: a path that is null or absent in every message examined is said on stderr,
/// with the closest field that exists; `&&` is hinted as `and`.
#[test]
fn a_typo_in_a_where_is_said() {
    let sb = Sandbox::new();
    let file = payments(&sb, 5);
    for (code, typo, closest) in [
        (".jsno.amount_cents > 100000", "`.jsno`", "`json`"),
        (
            ".json.amount_cent > 100000",
            "`.json.amount_cent`",
            "`amount_cents`",
        ),
    ] {
        let r = sb
            .run(&["peek", &file, "--where", code, "--output", "jsonl"])
            .ok();
        assert!(r.stdout.trim().is_empty(), "{code}: {}", r.stdout);
        assert!(
            r.stderr.contains(typo) && r.stderr.contains(closest),
            "{code}: {}",
            r.stderr
        );
    }
    // A path that some message has is no typo.
    let r = sb
        .run(&[
            "peek",
            &file,
            "--where",
            ".json.amount_cents > 100000",
            "--output",
            "jsonl",
        ])
        .ok();
    assert_eq!(r.jsonl().len(), 2);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    let r = sb
        .run(&[
            "peek",
            &file,
            "--where",
            ".json.amount_cents > 1 && .json.currency == \"EUR\"",
        ])
        .code(2);
    assert!(r.stderr.contains("`and`"), "{}", r.stderr);
}
