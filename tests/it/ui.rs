//! `dlqctl ui` driven as a person would: the real binary in a pseudo-terminal (portable-pty)
//! of 80x24, its screen read back as text (vt100), keys typed once the screen shows what they
//! answer. Against PostgreSQL: a group redriven from the UI arrives in the target table.

use std::io::{Read, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

use crate::harness::{Db, Sandbox, bin};

/// How long a screen may take to show what a test waits for.
const PATIENCE: Duration = Duration::from_secs(30);

/// The terminal's screen as the program drew it, and whether the program has closed it.
struct Screen {
    parser: vt100::Parser,
    closed: bool,
}

pub struct Tui {
    screen: Arc<(Mutex<Screen>, Condvar)>,
    keys: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Tui {
    /// `dlqctl ARGS` in an 80x24 pseudo-terminal, in the sandbox's clean environment.
    pub fn start(sb: &Sandbox, args: &[&str]) -> Tui {
        Tui::start_env(sb, args, &[])
    }

    /// The same, with `env` added to the environment.
    pub fn start_env(sb: &Sandbox, args: &[&str], env: &[(String, String)]) -> Tui {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: 24,
                cols: 80,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("a pseudo-terminal");
        let mut cmd = CommandBuilder::new(bin());
        cmd.args(args);
        cmd.env_clear();
        cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default());
        cmd.env("HOME", sb.dir.path());
        cmd.env("XDG_CONFIG_HOME", sb.dir.path().join(".config"));
        cmd.env("NO_COLOR", "1");
        cmd.env("TERM", "xterm");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.cwd(sb.dir.path());
        let child = pty.slave.spawn_command(cmd).expect("dlqctl starts");
        // The program holds the only other end: its exit closes the terminal.
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().expect("pty reader");
        let keys = pty.master.take_writer().expect("pty writer");
        let screen = Arc::new((
            Mutex::new(Screen {
                parser: vt100::Parser::new(24.try_into().unwrap(), 80.try_into().unwrap(), 0),
                closed: false,
            }),
            Condvar::new(),
        ));
        let s = screen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                let n = reader.read(&mut buf).unwrap_or(0);
                let (lock, cv) = &*s;
                let mut sc = lock.lock().unwrap();
                if n == 0 {
                    sc.closed = true;
                } else {
                    sc.parser.process(&buf[..n]);
                }
                cv.notify_all();
                if n == 0 {
                    return;
                }
            }
        });
        Tui {
            screen,
            keys,
            child,
            _master: pty.master,
        }
    }

    /// Wait until the screen shows `text`; the screen then. Fails with the screen as it is
    /// after [`PATIENCE`].
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_until(&format!("{text:?}"), |s| s.contains(text))
    }

    /// Wait until the screen is as `ok` wants it (`what` names that for the failure).
    pub fn wait_until(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let (lock, cv) = &*self.screen;
        let deadline = Instant::now() + PATIENCE;
        let mut sc = lock.lock().unwrap();
        loop {
            let shown = text_of(sc.parser.screen());
            if ok(&shown) {
                return shown;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero() && !sc.closed,
                "the screen never showed {what}; it shows:\n{shown}"
            );
            sc = cv.wait_timeout(sc, left).unwrap().0;
        }
    }

    pub fn press(&mut self, keys: &str) {
        self.keys.write_all(keys.as_bytes()).unwrap();
        self.keys.flush().unwrap();
    }

    /// Wait for the program to end (it closes the terminal); its exit code. The terminal
    /// must be as it was given: off the alternate screen, the cursor shown.
    pub fn exit_code(mut self) -> u32 {
        let (lock, cv) = &*self.screen;
        let deadline = Instant::now() + PATIENCE;
        let mut sc = lock.lock().unwrap();
        while !sc.closed {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "dlqctl ui did not end");
            sc = cv.wait_timeout(sc, left).unwrap().0;
        }
        let screen = sc.parser.screen();
        assert!(
            !screen.alternate_screen() && !screen.hide_cursor(),
            "the terminal was left on the alternate screen or without a cursor:\n{}",
            text_of(screen)
        );
        drop(sc);
        self.child.wait().expect("exit status").exit_code()
    }

    /// What the terminal shows (after the program ended: the main screen).
    pub fn shown(&self) -> String {
        text_of(self.screen.0.lock().unwrap().parser.screen())
    }

    pub fn pid(&self) -> u32 {
        self.child.process_id().expect("a pid")
    }

    /// Send the program a signal.
    fn signal(&self, sig: i32) {
        let pid = self.child.process_id().expect("a pid") as i32;
        // SAFETY: kill(2) with a pid of our own child.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
    }
}

/// The screen's rows as text, a line each (`contents` joins the rows a line fills).
fn text_of(s: &vt100::Screen) -> String {
    s.rows(0, 80).collect::<Vec<_>>().join("\n")
}

/// 12 rows in four groups of three, and five that fail alike: the largest group, listed first.
pub async fn seeded(name: &str) -> Db {
    let db = Db::new(name).await;
    db.seed(12).await;
    db.exec(
        "INSERT INTO {s}.dead_letters (message_id, queue, payload, error)
         SELECT 'pay-'||g, 'orders', jsonb_build_object('order_id', 100 + g), 'payment declined: card expired'
         FROM generate_series(1, 5) g",
    )
    .await;
    db
}

#[tokio::test]
async fn a_group_redriven_in_the_ui_arrives_in_the_target() {
    let db = seeded("ui_move").await;
    let sb = Sandbox::new();
    let mut ui = Tui::start(&sb, &["ui", &db.dlq()]);
    ui.wait_for("dlqctl ui · queues");
    ui.wait_for("6/6/5");
    ui.press("\r");
    // Each text waited for on its own: a screen can be caught half drawn.
    ui.wait_for("groups of 17 messages");
    ui.wait_for("error: payment declined: card expired");
    ui.press("R");
    ui.wait_for("will move: 5 (5 of 17 pass the filter, counted now)");
    ui.wait_for("y to start");
    ui.press("y");
    ui.wait_for("redrive: done");
    ui.wait_for("moved 5 · skipped 12 (filter) · failed 0");
    // Back to the groups, read again: the five are gone.
    ui.press("\r");
    ui.wait_for("groups of 12 messages");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);

    assert_eq!(db.count("dead_letters").await, 12);
    let moved = db
        .query_strings("SELECT message_id FROM {s}.queue_messages ORDER BY message_id")
        .await;
    assert_eq!(moved, ["pay-1", "pay-2", "pay-3", "pay-4", "pay-5"]);
    // Recorded in the audit trail as the CLI's redrive is.
    let runs = sb.run(&["audit", "--output", "json"]).ok().json();
    let runs = runs.as_array().expect("runs");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["command"], "redrive", "{runs:?}");
}

/// Two of the group's messages marked with space: the redrive takes those two, by id.
#[tokio::test]
async fn the_marked_messages_are_redriven_and_the_rest_stay() {
    let db = seeded("ui_marked").await;
    let sb = Sandbox::new();
    let mut ui = Tui::start(&sb, &["ui", &db.dlq()]);
    ui.wait_for("6/6/5");
    ui.press("\r");
    ui.wait_for("error: payment declined: card expired");
    ui.press("\r");
    ui.wait_for("── pay-1");
    // v: the body as stored (jsonb as PostgreSQL writes it), and the card again.
    ui.press("v");
    ui.wait_for("message · raw body (v: pretty)");
    ui.wait_for("{\"order_id\": 101}");
    ui.press("v");
    ui.wait_for("message (v: raw body)");
    ui.press(" ");
    ui.wait_for("*pay-1");
    ui.press("jj ");
    ui.wait_for("2 marked");
    ui.press("R");
    ui.wait_for("will move: 2 (2 of 17 pass the filter, counted now)");
    ui.wait_for("y to start");
    ui.press("y");
    ui.wait_for("moved 2 · skipped 15 (filter) · failed 0");
    ui.press("\r");
    ui.wait_for("groups of 15 messages");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
    let moved = db
        .query_strings("SELECT message_id FROM {s}.queue_messages ORDER BY message_id")
        .await;
    assert_eq!(moved, ["pay-1", "pay-3"]);
}

/// `E` writes the group as `export -o` does; it changes nothing, so `--read-only` allows it.
#[tokio::test]
async fn a_group_exported_in_the_ui_is_written_and_kept() {
    let db = seeded("ui_export").await;
    let sb = Sandbox::new();
    let mut ui = Tui::start(&sb, &["ui", "--read-only", &db.dlq()]);
    ui.wait_for("6/6/5");
    ui.press("\r");
    ui.wait_for("error: payment declined: card expired");
    ui.press("E");
    ui.wait_for("export to (a file, JSON Lines): _");
    ui.press("group.jsonl\r");
    ui.wait_for("export: done");
    ui.wait_for("exported 5 messages to group.jsonl");
    ui.press("\r");
    ui.wait_for("groups of 17 messages");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
    let file = std::fs::read_to_string(sb.path("group.jsonl")).expect("the export");
    let mut ids: Vec<String> = file
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].to_string())
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            "\"pay-1\"",
            "\"pay-2\"",
            "\"pay-3\"",
            "\"pay-4\"",
            "\"pay-5\""
        ]
    );
    assert_eq!(db.count("dead_letters").await, 17);
}

/// `e` steps aside for `dlqctl edit`: the editor (a script that changes the body), the
/// command's question on the terminal, then the UI again; the edited copy is in the target.
#[tokio::test]
async fn a_message_edited_from_the_ui_is_sent_as_edited() {
    let db = seeded("ui_edit").await;
    let sb = Sandbox::new();
    let mut ui = at_pay_1_with_a_fixing_editor(&sb, &db);
    ui.press("e");
    ui.wait_for("Send the edited copy");
    ui.press("y");
    ui.wait_for("enter: back to dlqctl ui");
    ui.press("\r");
    ui.wait_for("edit of pay-1: done");
    ui.wait_for("groups of 16 messages");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
    let sent = db
        .query_strings("SELECT message_id || ' ' || (payload->>'order_id') FROM {s}.queue_messages")
        .await;
    assert_eq!(sent, ["pay-1 999"]);
}

/// `c` shows the transient groups only (`--class transient`), and a run on one takes that class.
#[tokio::test]
async fn c_narrows_the_groups_to_a_class() {
    let db = seeded("ui_class").await;
    let sb = Sandbox::new();
    let mut ui = Tui::start(&sb, &["ui", &db.dlq()]);
    ui.wait_for("6/6/5");
    ui.press("\r");
    ui.wait_for("groups of 17 messages");
    ui.press("c");
    ui.wait_for("2 groups of 6 messages · transient");
    ui.press("R");
    ui.wait_for("will move: 3 (3 of 17 pass the filter, counted now)");
    ui.press("y");
    ui.wait_for("moved 3 · skipped 14 (filter) · failed 0");
    ui.press("\r");
    ui.wait_for("1 group of 3 messages · transient");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
    assert_eq!(db.count("queue_messages").await, 3);
}

/// `[audit] require_reason` without `--reason`: the UI asks for one before the plan; it is
/// recorded in the audit trail; an empty one does nothing.
#[tokio::test]
async fn a_reason_is_asked_where_the_audit_requires_one() {
    let db = seeded("ui_reason").await;
    let sb = Sandbox::new();
    sb.write("dlqctl.toml", "[audit]\nrequire_reason = true\n");
    let mut ui = Tui::start(&sb, &["ui", &db.dlq()]);
    ui.wait_for("6/6/5");
    ui.press("\r");
    ui.wait_for("error: payment declined: card expired");
    ui.press("R");
    ui.wait_for("reason (the audit trail requires one): _");
    ui.press("\r");
    ui.wait_for("redrive: a reason is required ([audit] require_reason); nothing done");
    ui.press("R");
    ui.wait_for("reason (the audit trail requires one): _");
    ui.press("INC-31 card expiry fixed\r");
    ui.wait_for("y to start");
    ui.press("y");
    ui.wait_for("moved 5 · skipped 12 (filter) · failed 0");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
    let runs = sb.run(&["audit", "--output", "json"]).ok().json();
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(runs[0]["reason"], "INC-31 card expiry fixed", "{runs}");
}

/// The selected queue's pane: its arrivals per hour, from the census read (all 17 seeded died
/// in the last 12 minutes: the last hour or two of the 48); each refresh (`r` here) adds the
/// queue's depth to the sparkline under them.
#[tokio::test]
async fn the_queues_view_draws_the_arrivals_and_the_depth_of_each_refresh() {
    let db = seeded("ui_spark").await;
    let sb = Sandbox::new();
    let mut ui = Tui::start(&sb, &["ui", &db.dlq()]);
    ui.wait_for("6/6/5");
    let recent = |s: &str| {
        s.lines().any(|l| {
            let Some(bars) = l
                .strip_prefix("arrivals/hour, 48h ▕")
                .and_then(|b| b.strip_suffix('▏'))
            else {
                return false;
            };
            let bars: Vec<char> = bars.chars().collect();
            bars.len() == 48
                && bars[..46].iter().all(|c| *c == ' ')
                && bars[46..].iter().any(|c| *c != ' ')
        })
    };
    ui.wait_until("arrivals in the last two hours", recent);
    ui.press("r");
    ui.wait_for("depth, 2 refreshes ██");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
}

#[tokio::test]
async fn a_group_purged_in_the_ui_is_archived_first() {
    let db = seeded("ui_purge").await;
    let sb = Sandbox::new();
    let mut ui = Tui::start(&sb, &["ui", &db.dlq()]);
    ui.wait_for("6/6/5");
    ui.press("\r");
    ui.wait_for("error: payment declined: card expired");
    ui.press("X");
    ui.wait_for("archive to (a file or queue; none: no copy): _");
    ui.press("poison.jsonl\r");
    ui.wait_for("will archive and remove: 5 (5 of 17 pass the filter, counted now)");
    ui.wait_for("purge? y to start");
    ui.press("y");
    ui.wait_for("purge: done");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);

    assert_eq!(db.count("dead_letters").await, 12);
    assert_eq!(db.count("queue_messages").await, 0);
    let archive = std::fs::read_to_string(sb.path("poison.jsonl")).expect("the archive");
    let mut ids: Vec<String> = archive
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    ids.sort();
    assert_eq!(ids, ["pay-1", "pay-2", "pay-3", "pay-4", "pay-5"]);
    let runs = sb.run(&["audit", "--output", "json"]).ok().json();
    assert_eq!(runs[0]["command"], "purge", "{runs:?}");
}

#[tokio::test]
async fn a_group_replayed_in_the_ui_is_copied_and_kept() {
    let db = seeded("ui_replay").await;
    let sb = Sandbox::new();
    let mut ui = Tui::start(&sb, &["ui", &db.dlq()]);
    ui.wait_for("6/6/5");
    ui.press("\r");
    ui.wait_for("error: payment declined: card expired");
    ui.press("P");
    ui.wait_for("replay to (a queue, table, topic or file): _");
    ui.press(&format!("{}\r", db.table_url("queue_messages")));
    // A replay removes nothing: as in the CLI, its plan does not count first.
    ui.wait_for("will copy: all (counted as they are read)");
    ui.wait_for("replay? y to start");
    ui.press("y");
    ui.wait_for("replay: done");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
    assert_eq!(db.count("dead_letters").await, 17);
    assert_eq!(db.count("queue_messages").await, 5);
}

#[tokio::test]
async fn read_only_refuses_to_redrive() {
    let db = seeded("ui_ro").await;
    let sb = Sandbox::new();
    let mut ui = Tui::start(&sb, &["ui", "--read-only", &db.dlq()]);
    ui.wait_for("read-only");
    ui.wait_for("6/6/5");
    ui.press("\r");
    ui.wait_for("groups of 17 messages");
    ui.press("R");
    ui.wait_for("read-only: redrive is disabled");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
    assert_eq!(db.count("dead_letters").await, 17);
    assert_eq!(db.count("queue_messages").await, 0);
}

/// An SQS queue is listed, not read: its messages are not received (their receive counts stay
/// as they were), and its row says why; the PostgreSQL queue beside it is read.
#[tokio::test]
async fn the_queues_view_does_not_receive_from_sqs() {
    let db = seeded("ui_sqs").await;
    let q = crate::harness::Sqs::new("ui").await;
    let (url, _) = q.create("dlq", &[]).await;
    for i in 0..3 {
        q.client
            .send_message()
            .queue_url(&url)
            .message_body(format!("{{\"n\":{i}}}"))
            .send()
            .await
            .expect("send");
    }
    let sb = Sandbox::new();
    let sqs = format!("sqs://{}", q.name("dlq"));
    let mut ui = Tui::start_env(&sb, &["ui", &db.dlq(), &sqs], &q.env(&sb));
    ui.wait_for("6/6/5");
    ui.wait_for("not read (below)");
    ui.press("j");
    ui.wait_for("ApproximateReceiveCount");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
    let counts = receive_counts(&q, &url).await;
    assert_eq!(counts, ["1", "1", "1"], "received by the UI before");
}

/// Receive up to 10 messages of `url`: each one's ApproximateReceiveCount (`1`: received
/// here for the first time).
pub async fn receive_counts(q: &crate::harness::Sqs, url: &str) -> Vec<String> {
    let got = q
        .client
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .message_system_attribute_names(
            aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
        )
        .send()
        .await
        .expect("receive");
    got.messages()
        .iter()
        .map(|m| {
            m.attributes()
                .and_then(|a| {
                    a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount)
                })
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

/// Ctrl-C (a key in raw mode) quits; SIGTERM too, with exit code 130 and its note printed
/// once the terminal is given back. Both leave the terminal as it was (see `exit_code`).
#[tokio::test]
async fn ctrl_c_and_sigterm_give_the_terminal_back() {
    let db = seeded("ui_sig").await;
    let sb = Sandbox::new();
    let mut ui = Tui::start(&sb, &["ui", &db.dlq()]);
    ui.wait_for("6/6/5");
    ui.press("\x03");
    assert_eq!(ui.exit_code(), 0);

    let ui = Tui::start(&sb, &["ui", &db.dlq()]);
    ui.wait_for("6/6/5");
    ui.signal(libc::SIGTERM);
    ui.wait_for("interrupting");
    let shown = ui.shown();
    assert!(
        !shown.contains("6/6/5"),
        "the UI is still on screen:\n{shown}"
    );
    assert_eq!(ui.exit_code(), 130);
}

#[test]
fn without_a_terminal_it_refuses() {
    let sb = Sandbox::new();
    let r = sb
        .run(&["ui", "postgres://127.0.0.1:1/x?table=dead_letters"])
        .code(2);
    assert!(
        r.stderr.starts_with("error: dlqctl ui: needs a terminal"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}

/// The UI on `db`'s dead letters with an editor that changes pay-1's `order_id` 101 to 999,
/// on pay-1's detail (a state directory of the sandbox's own keeps the edit).
pub fn at_pay_1_with_a_fixing_editor(sb: &Sandbox, db: &Db) -> Tui {
    let fix = crate::terminal::editor_script(
        sb,
        "fix.sh",
        r#"sed -i 's/"order_id": 101/"order_id": 999/' "$1""#,
    );
    let env = [
        ("EDITOR".to_string(), fix),
        (
            "DLQCTL_STATE_DIR".to_string(),
            sb.path("state").to_string_lossy().into_owned(),
        ),
    ];
    let mut ui = Tui::start_env(sb, &["ui", &db.dlq()], &env);
    ui.wait_for("6/6/5");
    ui.press("\r");
    ui.wait_for("error: payment declined: card expired");
    ui.press("\r");
    ui.wait_for("── pay-1");
    ui
}
