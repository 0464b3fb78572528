//! At a terminal: what a person sees before being asked, and what Ctrl-C at the question does.
//! The binary runs under `script` (util-linux), which gives it a pseudo-terminal and types
//! what the test feeds it.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::harness::{Db, Sandbox};

/// Run `shell` (a command line) at a pseudo-terminal; once the terminal shows `when`, type
/// `keys`. The exit code and everything the terminal showed.
fn at_terminal(sb: &Sandbox, shell: &str, when: &str, keys: &[u8]) -> (i32, String) {
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

fn dlqctl() -> &'static str {
    env!("CARGO_BIN_EXE_dlqctl")
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
