//! At a terminal: what a person sees before being asked, and what Ctrl-C at the question does.
//! The binary runs under `script` (util-linux), which gives it a pseudo-terminal and types
//! what the test feeds it.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::harness::{Db, Sandbox};

/// Run `shell` (a command line) at a pseudo-terminal; once the terminal shows `when`, type
/// `keys`. The exit code and everything the terminal showed.
pub fn at_terminal(sb: &Sandbox, shell: &str, when: &str, keys: &[u8]) -> (i32, String) {
    let mut child = Command::new("script")
        .args(["-qec", shell, "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sb.dir.path())
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .current_dir(sb.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script (util-linux) runs");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    // Read what the terminal shows on a thread; type the keys once the question is there (a
    // key typed before dlqctl reads it would reach it as something else: Ctrl-C as a signal).
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = std::io::Read::read(&mut stdout, &mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut typed = false;
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(chunk) => seen.extend(chunk),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if !typed && String::from_utf8_lossy(&seen).contains(when) {
            typed = true;
            stdin.write_all(keys).unwrap();
            stdin.flush().unwrap();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "the terminal never finished; it showed:\n{}",
                String::from_utf8_lossy(&seen)
            );
        }
    }
    reader.join().unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&seen).into_owned(),
    )
}

fn dlqctl() -> String {
    crate::harness::bin()
}

/// Whenever dlqctl asks, it has shown the plan first, on the terminal: with `--output json`,
/// and with stdout piped into another program. Answering no changes nothing.
#[tokio::test]
async fn the_plan_comes_before_every_question() {
    let db = Db::new("tty").await;
    db.seed(5).await;
    let sb = Sandbox::new();
    for shell in [
        format!("{} redrive '{}' --max 2 --output json", dlqctl(), db.dlq()),
        format!("{} redrive '{}' --max 2 | cat", dlqctl(), db.dlq()),
    ] {
        let (code, seen) = at_terminal(&sb, &shell, "Proceed?", b"n");
        assert_eq!(code, 0, "{seen}");
        let plan = seen
            .find("will move")
            .unwrap_or_else(|| panic!("no plan:\n{seen}"));
        let ask = seen
            .find("Proceed?")
            .unwrap_or_else(|| panic!("no question:\n{seen}"));
        assert!(plan < ask, "the plan comes first:\n{seen}");
        assert!(seen.contains("2 of 5"), "the plan counts:\n{seen}");
        assert!(seen.contains("nothing done"), "{seen}");
    }
    assert_eq!(db.count("dead_letters").await, 5);
    assert_eq!(db.count("queue_messages").await, 0);
}

/// Ctrl-C at the question: "cancelled; nothing done", exit 130, nothing moved.
#[tokio::test]
async fn ctrl_c_at_the_question_cancels() {
    let db = Db::new("ttyc").await;
    db.seed(3).await;
    let sb = Sandbox::new();
    let (code, seen) = at_terminal(
        &sb,
        &format!("{} redrive '{}'", dlqctl(), db.dlq()),
        "Proceed?",
        b"\x03",
    );
    assert_eq!(code, 130, "{seen}");
    assert!(seen.contains("cancelled; nothing done"), "{seen}");
    assert!(!seen.contains("finishing the current batch"), "{seen}");
    assert_eq!(db.count("dead_letters").await, 3);
}

/// `dlqctl edit`: the editor changes the record, the diff is shown, "y" sends the edited copy
/// with the same id and removes the original; an unchanged file does nothing; no terminal is
/// exit 2.
#[tokio::test]
async fn edit_sends_the_fixed_copy_with_its_id() {
    let db = Db::new("ttye").await;
    db.seed(3).await;
    let sb = Sandbox::new();
    let target = db.table_url("queue_messages");
    // An editor that fixes the body, as a person would.
    let (code, seen) = at_terminal(
        &sb,
        &format!(
            "EDITOR='sed -i s/order_id/fixed_order_id/' {} edit '{}' --id ord-1 --to '{target}'",
            dlqctl(),
            db.dlq()
        ),
        "Send the edited copy",
        b"y",
    );
    assert_eq!(code, 0, "{seen}");
    assert!(
        seen.contains("+") && seen.contains("fixed_order_id"),
        "the diff:\n{seen}"
    );
    assert_eq!(db.count("dead_letters").await, 2, "{seen}");
    let rows = db
        .query_strings("SELECT message_id || ' ' || payload::text FROM {s}.queue_messages")
        .await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(
        rows[0].starts_with("ord-1 ") && rows[0].contains("fixed_order_id"),
        "{rows:?}"
    );
    // Unchanged: nothing done.
    let (code, seen) = at_terminal(
        &sb,
        &format!(
            "EDITOR=true {} edit '{}' --id ord-2 --to '{target}'",
            dlqctl(),
            db.dlq()
        ),
        "never asked",
        b"",
    );
    assert_eq!(code, 0, "{seen}");
    assert!(seen.contains("unchanged: nothing done"), "{seen}");
    assert_eq!(db.count("dead_letters").await, 2);
    // No terminal: exit 2, before anything is read.
    let r = sb.run(&["edit", &db.dlq(), "--id", "ord-2"]).code(2);
    assert!(r.stderr.contains("needs a terminal"), "{}", r.stderr);
}

/// `dlqctl edit` is recorded in the audit trail as an edit, not as the redrive it sends its copy
/// with (issue 25).
#[tokio::test]
async fn an_edit_is_audited_as_an_edit() {
    let db = Db::new("ttyaudit").await;
    db.seed(2).await;
    let sb = Sandbox::new();
    let target = db.table_url("queue_messages");
    let (code, seen) = at_terminal(
        &sb,
        &format!(
            "EDITOR='sed -i s/order_id/fixed_order_id/' {} edit '{}' --id ord-1 --to '{target}' --reason 'fix the order id'",
            dlqctl(),
            db.dlq()
        ),
        "Send the edited copy",
        b"y",
    );
    assert_eq!(code, 0, "{seen}");
    let runs = sb.run(&["audit", "--output", "json"]).ok().json();
    let runs = runs.as_array().expect("runs");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["command"], "edit", "{}", runs[0]);
    assert_eq!(runs[0]["outcome"]["counts"]["moved"], 1, "{}", runs[0]);
}

/// Without a terminal (a script, CI), a long run prints a progress line on stderr every so
/// often (`DLQCTL_PROGRESS_INTERVAL`, 10 s by default), as rsync and curl do; `-q` and
/// `--no-progress` print none, and stdout keeps only the data (issue 25).
#[tokio::test]
async fn without_a_terminal_a_long_run_prints_progress_lines() {
    let db = Db::new("lines").await;
    db.seed(12).await;
    let sb = Sandbox::new();
    let env = [("DLQCTL_PROGRESS_INTERVAL", "0.1")];
    // Twelve messages at 20/s take over half a second: several intervals.
    let r = sb
        .run_env(
            &[
                "redrive",
                &db.dlq(),
                "--rate",
                "20/s",
                "--batch-size",
                "1",
                "--yes",
                "--output",
                "json",
            ],
            &env,
        )
        .ok();
    let lines: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("redriving: "))
        .collect();
    assert!(!lines.is_empty(), "no progress line:\n{}", r.stderr);
    assert!(
        lines
            .iter()
            .all(|l| l.contains(" messages") && l.contains("/s, ")),
        "{lines:?}"
    );
    assert_eq!(r.json()["moved"], 12, "stdout is the summary alone");
    db.exec("INSERT INTO {s}.dead_letters (message_id, queue, payload, error) SELECT 'q-'||g, 'orders', '{}', 'x' FROM generate_series(1, 12) g").await;
    for quiet in ["-q", "--no-progress"] {
        let r = sb
            .run_env(
                &[
                    "redrive",
                    &db.dlq(),
                    "--rate",
                    "20/s",
                    "--batch-size",
                    "1",
                    "--max",
                    "6",
                    "--yes",
                    "--output",
                    "json",
                    quiet,
                ],
                &env,
            )
            .ok();
        assert!(
            !r.stderr.contains("redriving: "),
            "{quiet}: no progress lines:\n{}",
            r.stderr
        );
    }
}

/// What the terminal showed with the table's rules dropped and spaces collapsed, so that a
/// plan row reads `key value`.
fn flat(seen: &str) -> String {
    seen.replace(['│', '┆', '║'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A filtered destructive run shows, before it asks, how many messages match: counted first
/// where a read changes nothing (a PostgreSQL table; a Kafka topic from the redrive group's
/// offsets). On Kafka the plan also says, before the question, how many records the commit
/// would pass over; the summary after "y" says how many it did.
#[tokio::test(flavor = "multi_thread")]
async fn a_filtered_run_counts_what_matches_before_it_asks() {
    let db = Db::new("ttycnt").await;
    db.seed(8).await;
    let sb = Sandbox::new();
    let (code, seen) = at_terminal(
        &sb,
        &format!("{} redrive '{}' --class transient", dlqctl(), db.dlq()),
        "Proceed?",
        b"n",
    );
    assert_eq!(code, 0, "{seen}");
    let seen = flat(&seen);
    let ask = seen.find("Proceed?").expect("asked");
    let count = seen
        .find("4 of 8 pass the filter")
        .unwrap_or_else(|| panic!("no count before the question:\n{seen}"));
    assert!(count < ask, "{seen}");
    assert_eq!(db.count("dead_letters").await, 8);

    // Kafka: 12 records on 3 partitions; r-7 is the third record of partition 1.
    let k = crate::harness::Kafka::new("ttycnt");
    k.create("orders", 1, &[]).await;
    k.create("dlt", 3, &[]).await;
    let orders = k.topic("orders");
    for i in 0..12 {
        k.produce(
            "dlt",
            Some(i % 3),
            None,
            Some(format!("{{\"n\": {i}}}").as_bytes()),
            &[
                ("dlqctl-stable-id", Some(format!("r-{i}").as_bytes())),
                ("kafka_dlt-original-topic", Some(orders.as_bytes())),
            ],
        )
        .await;
    }
    let shell = format!(
        "DLQCTL_KAFKA_IDLE_MS=2000 {} redrive '{}' --id r-7",
        dlqctl(),
        k.url("dlt")
    );
    let (code, seen) = at_terminal(&sb, &shell, "Proceed?", b"y");
    assert_eq!(code, 0, "{seen}");
    let seen = flat(&seen);
    let ask = seen.find("Proceed?").expect("asked");
    for said in [
        "1 of 12 pass the filter",
        "committed past 2 records",
        "will not be redriven",
    ] {
        let at = seen
            .find(said)
            .unwrap_or_else(|| panic!("`{said}` not shown:\n{seen}"));
        assert!(at < ask, "`{said}` comes before the question:\n{seen}");
    }
    let after = &seen[ask..];
    assert!(
        after.contains("moved 1 ") && after.contains("committed past 2 ("),
        "the summary counts what was committed past:\n{seen}"
    );
}

/// Where counting first would change what it reads (an SQS receive counts and hides each
/// message), a filtered run does not count before it asks, and its plan and its question say
/// so. Answering no moves nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_filtered_run_on_sqs_says_that_it_cannot_count_first() {
    let sqs = crate::harness::Sqs::new("ttycnt").await;
    let (dlq, _) = sqs.create("dlq", &[]).await;
    let (target, _) = sqs.create("target", &[]).await;
    for i in 0..3 {
        sqs.client
            .send_message()
            .queue_url(&dlq)
            .message_body(format!("{{\"n\": {i}}}"))
            .send()
            .await
            .unwrap();
    }
    let sb = Sandbox::new();
    let env: String = sqs
        .env(&sb)
        .iter()
        .map(|(k, v)| format!("{k}='{v}' "))
        .collect();
    let name = |url: &str| url.rsplit('/').next().unwrap().to_string();
    let shell = format!(
        "{env}{} redrive sqs://{} --to sqs://{} --where '.json.n == 1'",
        dlqctl(),
        name(&dlq),
        name(&target)
    );
    let (code, seen) = at_terminal(&sb, &shell, "Proceed?", b"n");
    assert_eq!(code, 0, "{seen}");
    let seen = flat(&seen);
    let ask = seen.find("Proceed?").expect("asked");
    let plan = seen
        .find("not counted first")
        .unwrap_or_else(|| panic!("the plan says why there is no count:\n{seen}"));
    assert!(plan < ask, "{seen}");
    assert!(
        seen[ask..].starts_with("Proceed? (how many match is known only as the run receives them)"),
        "the question says it too:\n{seen}"
    );
    assert!(seen.contains("nothing done"), "{seen}");
    assert_eq!(sqs.visible(&target).await, 0);
}

/// An executable editor script in the sandbox: `sh` code run on the file to edit (`$1`).
pub fn editor_script(sb: &Sandbox, name: &str, code: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let p = sb.write(name, &format!("#!/bin/sh\nset -e\n{code}\n"));
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.to_string_lossy().into_owned()
}

/// `dlqctl edit ARGS` at a terminal with `EDITOR=editor` and a state directory of its own
/// (where an edit that did not go through is kept).
fn edit_at_terminal(
    sb: &Sandbox,
    editor: &str,
    args: &str,
    when: &str,
    keys: &[u8],
) -> (i32, String) {
    at_terminal(
        sb,
        &format!(
            // exec: dlqctl is the terminal's foreground process, as under a person's shell
            // (which is not in the group a Ctrl-C at the terminal is sent to).
            "DLQCTL_STATE_DIR='{}' EDITOR='{editor}' exec {} edit {args}",
            sb.path("state").display(),
            dlqctl()
        ),
        when,
        keys,
    )
}

/// The edits kept in the state directory (an edit that did not go through).
fn kept_edits(sb: &Sandbox) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(sb.path("state").join("edits")) {
        Ok(d) => d.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

/// `VISUAL=""` is no editor: `edit` uses $EDITOR (as git does); with neither set and no `vi`
/// to fall back on, one line says so (exit 2). Never a panic.
#[tokio::test]
async fn edit_with_an_empty_visual_uses_editor_and_never_panics() {
    let db = Db::new("ttyv").await;
    db.seed(2).await;
    let sb = Sandbox::new();
    let target = db.table_url("queue_messages");
    let fix = editor_script(&sb, "fix.sh", "sed -i 's/order_id/fixed_order_id/' \"$1\"");
    let (code, seen) = at_terminal(
        &sb,
        &format!(
            "VISUAL= EDITOR='{fix}' {} edit '{}' --id ord-1 --to '{target}'",
            dlqctl(),
            db.dlq()
        ),
        "Send the edited copy",
        b"y",
    );
    assert!(!seen.contains("panicked"), "{seen}");
    assert_eq!(code, 0, "{seen}");
    assert_eq!(db.count("queue_messages").await, 1, "{seen}");
    let (code, seen) = at_terminal(
        &sb,
        &format!(
            "VISUAL= EDITOR= PATH=/nonexistent {} edit '{}' --id ord-2 --to '{target}'",
            dlqctl(),
            db.dlq()
        ),
        "never asked",
        b"",
    );
    assert!(!seen.contains("panicked"), "{seen}");
    assert_eq!(code, 2, "{seen}");
    assert!(seen.contains("error:") && seen.contains("EDITOR"), "{seen}");
    assert_eq!(db.count("dead_letters").await, 1, "nothing done: {seen}");
}

/// The editor gets a JSON body as JSON (the obvious edit works) and the fields that must not
/// change out of the way; the diff and the plan are on the terminal before the question; "n"
/// changes nothing and keeps the edit, which the next `edit` of that message reopens.
#[tokio::test]
async fn edit_shows_json_then_the_diff_and_plan_then_asks() {
    let db = Db::new("ttyj").await;
    db.seed(3).await;
    let sb = Sandbox::new();
    let target = db.table_url("queue_messages");
    let seen_file = sb.path("opened.txt");
    let fix = editor_script(
        &sb,
        "fix.sh",
        &format!(
            "cp \"$1\" '{}'\nsed -i 's/\"order_id\": 2$/\"order_id\": 200/' \"$1\"",
            seen_file.display()
        ),
    );
    let args = format!("'{}' --id ord-2 --to '{target}'", db.dlq());
    let (code, seen) = edit_at_terminal(&sb, &fix, &args, "Send the edited copy", b"n");
    assert_eq!(code, 0, "{seen}");
    let ask = seen
        .find("Send the edited copy")
        .unwrap_or_else(|| panic!("no question:\n{seen}"));
    let diff = seen
        .find("\"order_id\": 200")
        .unwrap_or_else(|| panic!("no diff:\n{seen}"));
    let plan = seen
        .find("then delete it from the dead-letter table")
        .unwrap_or_else(|| panic!("no plan:\n{seen}"));
    assert!(
        diff < ask && plan < ask,
        "the diff and the plan come first:\n{seen}"
    );
    assert!(seen[ask..].contains("nothing done"), "{seen}");
    assert_eq!(db.count("dead_letters").await, 3);
    assert_eq!(db.count("queue_messages").await, 0);
    let opened = std::fs::read_to_string(&seen_file).unwrap();
    assert!(
        opened.contains("\"body\": {") && !opened.contains("\\\""),
        "the body as JSON, nothing escaped:\n{opened}"
    );
    assert!(
        !opened.contains("\"native_id\"") && !opened.contains("\"receive_count\""),
        "what cannot change is not among what can:\n{opened}"
    );
    assert_eq!(kept_edits(&sb).len(), 1, "answered no: the edit is kept");

    // Again: the kept edit is reopened (the script finds nothing more to change), sent.
    let (code, seen) = edit_at_terminal(&sb, &fix, &args, "Send the edited copy", b"y");
    assert_eq!(code, 0, "{seen}");
    let rows = db
        .query_strings("SELECT message_id || ' ' || payload::text FROM {s}.queue_messages")
        .await;
    assert_eq!(
        rows,
        vec!["ord-2 {\"amount\": 20, \"order_id\": 200}"],
        "{seen}"
    );
    assert_eq!(db.count("dead_letters").await, 2);
    assert!(kept_edits(&sb).is_empty(), "sent: nothing kept");
}

/// What the person typed survives a failure after the editor: an invalid record is exit 2
/// with the file named, and the next `edit` reopens it to fix.
#[tokio::test]
async fn edit_keeps_what_was_typed_when_it_fails() {
    let db = Db::new("ttyk").await;
    db.seed(3).await;
    let sb = Sandbox::new();
    let target = db.table_url("queue_messages");
    let args = format!("'{}' --id ord-1 --to '{target}'", db.dlq());
    let typo = editor_script(
        &sb,
        "typo.sh",
        "sed -i 's/\"order_id\": 1$/\"order_id\": 100,,/' \"$1\"",
    );
    let (code, seen) = edit_at_terminal(&sb, &typo, &args, "never asked", b"");
    assert_eq!(code, 2, "{seen}");
    let kept = kept_edits(&sb);
    assert_eq!(kept.len(), 1, "{seen}");
    assert!(
        seen.contains(&*kept[0].file_name().unwrap().to_string_lossy()),
        "the error names the kept file:\n{seen}"
    );
    assert!(std::fs::read_to_string(&kept[0]).unwrap().contains("100,,"));
    assert_eq!(db.count("dead_letters").await, 3);

    let fixup = editor_script(&sb, "fixup.sh", "sed -i 's/100,,/100/' \"$1\"");
    let (code, seen) = edit_at_terminal(&sb, &fixup, &args, "Send the edited copy", b"y");
    assert_eq!(code, 0, "{seen}");
    let rows = db
        .query_strings("SELECT payload->>'order_id' FROM {s}.queue_messages")
        .await;
    assert_eq!(rows, vec!["100"], "{seen}");
    assert!(kept_edits(&sb).is_empty());
}

/// While the editor is open nothing is held: what is sent is compared with what was opened.
/// A message changed meanwhile is not replaced by the stale edit (exit 1), nor is one that
/// left and came back under the same stable id as another row (exit 3); the edit is kept.
#[tokio::test]
async fn edit_never_replaces_a_message_that_changed_while_the_editor_was_open() {
    let db = Db::new("ttys").await;
    db.seed(3).await;
    let sb = Sandbox::new();
    let target = db.table_url("queue_messages");
    let pg = crate::harness::pg_url();
    let meanwhile = |name: &str, sql: &str| {
        editor_script(
            &sb,
            name,
            &format!(
                "psql -q '{pg}' -c \"{}\" >/dev/null\nsed -i 's/amount/fixed_amount/' \"$1\"",
                sql.replace("{s}", &db.schema)
            ),
        )
    };
    let changed = meanwhile(
        "changed.sh",
        "UPDATE {s}.dead_letters SET payload = payload || '{\\\"note\\\": 1}' WHERE message_id = 'ord-1'",
    );
    let args = format!("'{}' --id ord-1 --to '{target}'", db.dlq());
    let (code, seen) = edit_at_terminal(&sb, &changed, &args, "Send the edited copy", b"y");
    assert_eq!(code, 1, "{seen}");
    assert!(seen.contains("changed"), "{seen}");
    assert_eq!(db.count("queue_messages").await, 0, "{seen}");
    assert_eq!(
        db.query_strings(
            "SELECT payload->>'note' FROM {s}.dead_letters WHERE message_id = 'ord-1'"
        )
        .await,
        vec!["1"],
        "the message as it is now stays"
    );
    assert_eq!(kept_edits(&sb).len(), 1, "the edit is kept");

    let returned = meanwhile(
        "returned.sh",
        "INSERT INTO {s}.dead_letters (message_id, queue, payload) SELECT message_id, queue, payload || '{\\\"again\\\": 1}' FROM {s}.dead_letters WHERE message_id = 'ord-2'; DELETE FROM {s}.dead_letters WHERE message_id = 'ord-2' AND NOT payload ? 'again'",
    );
    let args = format!("'{}' --id ord-2 --to '{target}'", db.dlq());
    let started = std::time::Instant::now();
    let (code, seen) = edit_at_terminal(&sb, &returned, &args, "Send the edited copy", b"y");
    assert_eq!(code, 3, "{seen}");
    assert!(seen.contains("while the editor was open"), "{seen}");
    assert_eq!(db.count("queue_messages").await, 0, "{seen}");
    assert_eq!(db.count("dead_letters").await, 3);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

/// A Ctrl-C while the editor runs is the editor's (vi uses it): the terminal sends it to the
/// whole foreground group, and dlqctl ignores it there, instead of cancelling the run that
/// follows (or, at the second, exiting under the editor). dlqctl has the kernel ignore SIGINT
/// while the editor runs, as git does: a handler that saw the signal only after the editor
/// exited (a busy machine) would take it for the user's (a full run at three tests at a time
/// did). The editor reads dlqctl's ignored signals in /proc, so that this is checked whatever
/// the machine's load.
#[tokio::test]
async fn ctrl_c_in_the_editor_is_the_editors() {
    let db = Db::new("ttyi").await;
    db.seed(2).await;
    let sb = Sandbox::new();
    let target = db.table_url("queue_messages");
    let ignored = sb.path("sigign");
    let editor = editor_script(
        &sb,
        "ctrl-c.sh",
        &format!(
            "grep '^SigIgn:' /proc/$PPID/status > '{}'\ntrap '' INT\nkill -INT 0\nkill -INT 0\nsed -i 's/amount/fixed_amount/' \"$1\"",
            ignored.display()
        ),
    );
    let args = format!("'{}' --id ord-1 --to '{target}'", db.dlq());
    let (code, seen) = edit_at_terminal(&sb, &editor, &args, "Send the edited copy", b"y");
    let mask = std::fs::read_to_string(&ignored).unwrap();
    let mask = u64::from_str_radix(mask.trim_start_matches("SigIgn:").trim(), 16).unwrap();
    assert_eq!(
        mask & 0b10,
        0b10,
        "SIGINT (bit 2) not ignored by dlqctl under the editor: {mask:x}"
    );
    assert_eq!(code, 0, "{seen}");
    assert!(!seen.contains("interrupting"), "{seen}");
    assert_eq!(db.count("queue_messages").await, 1, "{seen}");
}

/// `edit` on RabbitMQ (issue 27): the fixed copy goes to the target with the same id, the
/// original is acknowledged, the others stay.
#[tokio::test(flavor = "multi_thread")]
async fn edit_fixes_a_rabbitmq_dead_letter() {
    use crate::amqp::{Kind, Rabbit, credentials, stable_id};
    let r = Rabbit::new("edit").await;
    r.pair(Kind::Classic, "orders", "dlq").await;
    r.dead_letters("orders", "dlq", "m", 3).await;
    r.declare("fixed", Kind::Classic, &[]).await;
    let sb = Sandbox::new();
    let (code, seen) = at_terminal(
        &sb,
        &format!(
            "DLQCTL_AMQP_PASSWORD='{}' EDITOR='sed -i s/order/fixed_order/' {} edit '{}' --id m-1 --to '{}'",
            credentials().1,
            dlqctl(),
            r.url("dlq"),
            r.url("fixed")
        ),
        "Send the edited copy",
        b"y",
    );
    assert_eq!(code, 0, "{seen}");
    assert!(seen.contains("fixed_order"), "the diff:\n{seen}");
    let copies = r.drain("fixed").await;
    assert_eq!(copies.len(), 1);
    assert_eq!(
        stable_id(&copies[0].delivery.properties).as_deref(),
        Some("m-1")
    );
    assert!(String::from_utf8_lossy(&copies[0].delivery.data).contains("fixed_order"));
    r.wait_no_consumer("dlq").await;
    assert_eq!(
        r.ready("dlq").await,
        2,
        "the original left, the others stayed"
    );
}

/// `dlqctl edit` of a PostgreSQL job system's dead job, back in place: refused before the
/// editor opens (the system retries a job as it is), with the way out (`--to`). op5 saw the
/// editor open, then a refusal naming a `--transform` that was never given.
#[tokio::test]
async fn an_edit_that_cannot_go_back_in_place_is_refused_before_the_editor() {
    use crate::pair::{Pair, River};
    let mut river = River::new();
    let ids = river.fresh(1).await;
    let url = river.redrive()[1].clone();
    let sb = Sandbox::new();
    let marker = sb.path("the-editor-ran");
    let (code, seen) = at_terminal(
        &sb,
        &format!(
            "EDITOR='touch {}' {} edit '{url}' --id {}",
            marker.display(),
            dlqctl(),
            ids[0]
        ),
        "error",
        b"",
    );
    assert_eq!(code, 2, "{seen}");
    assert!(seen.contains("--to QUEUE"), "{seen}");
    assert!(!seen.contains("--transform"), "{seen}");
    assert!(!marker.exists(), "the editor opened");
    assert_eq!(river.remaining().await, 1);
}
