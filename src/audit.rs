//! The audit trail: every run that changes something writes an intent record before it starts
//! and an outcome record when it ends, as JSON Lines (docs/audit.md). In between, a progress
//! record every few seconds (and one when a second Ctrl-C stops the run at once) says how many
//! messages have left the source so far: a run that never wrote its outcome still says that.
//!
//! The moved ids go inline up to [`INLINE_IDS`]; past that, every id goes to a file beside the
//! log (`audit-ids/RUN.txt`), written as the run goes, so that memory stays flat.

use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::AuditConfig;
use crate::error::{Error, Result};

/// Ids kept in the outcome record itself.
pub const INLINE_IDS: usize = 1000;

/// Where the log is: `[audit] path`, else `DLQCTL_STATE_DIR/audit.jsonl`, else the user's
/// state directory.
pub fn log_path(cfg: &AuditConfig, state_dir: Option<&Path>) -> PathBuf {
    if let Some(p) = &cfg.path {
        return p.clone();
    }
    crate::fsutil::state_dir(state_dir).join("audit.jsonl")
}

/// What a run is about to do (written before it starts).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Intent {
    pub record: String,
    pub run: String,
    pub time: DateTime<Utc>,
    pub user: String,
    pub host: String,
    pub version: String,
    pub command: String,
    /// The command line, secrets redacted.
    pub argv: Vec<String>,
    /// The source's name in dlqctl.toml, when it was named by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// The source's address (a file's path absolute).
    pub source: String,
    pub targets: Vec<String>,
    pub filter: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How it ended (written after).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Outcome {
    pub record: String,
    pub run: String,
    pub time: DateTime<Utc>,
    pub exit_code: i32,
    /// The run's counts (its summary's `examined`, `moved`, `failed`, …).
    pub counts: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The stable ids moved, when at most [`INLINE_IDS`].
    #[serde(default)]
    pub ids: Vec<String>,
    /// Every id moved, one per line, when more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids_file: Option<PathBuf>,
    /// False when some messages were moved by the backend in one statement without their ids
    /// coming back (a PostgreSQL range move): `counts.moved` has how many.
    pub ids_complete: bool,
}

/// How far a run had got (written every few seconds while it runs, and when a second Ctrl-C
/// stops it at once).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Progress {
    pub record: String,
    pub run: String,
    pub time: DateTime<Utc>,
    /// Messages that had left the source (accepted by their target, or purged).
    pub moved: u64,
    /// Written as the process stopped at once (a second Ctrl-C): nothing moved after it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
}

/// How often a progress record is written while a run moves messages.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// The run under way in this process: its count, which the progress task writes (see
/// [`progress_task`]), and the last progress record a second Ctrl-C writes.
struct Live {
    path: PathBuf,
    run: String,
    moved: u64,
    /// The count of the last progress record written.
    written: u64,
}

static LIVE: std::sync::Mutex<Option<Live>> = std::sync::Mutex::new(None);

fn live() -> std::sync::MutexGuard<'static, Option<Live>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Every [`PROGRESS_EVERY`], while the count has moved since the last record, a progress record
/// with the count as it is then. A timer, not the count's own updates, writes it: a run whose
/// batch is counted just after a record and which then waits on a slow read (an SQS receive)
/// still records that batch within two seconds, so a run killed then shows every message that
/// had left the source. The record is written under the lock the count is updated under, so it
/// never trails an outcome (which clears the run first).
fn progress_task(run: String) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(PROGRESS_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            let mut guard = live();
            let Some(l) = guard.as_mut().filter(|l| l.run == run) else {
                return;
            };
            if l.moved == l.written {
                continue;
            }
            l.written = l.moved;
            let p = Progress {
                record: "progress".into(),
                run: l.run.clone(),
                time: Utc::now(),
                moved: l.moved,
                stopped: false,
            };
            if let Err(e) = append(&l.path, &p) {
                tracing::warn!(error = %e, "cannot write progress to the audit log");
            }
        }
    })
}

/// Called as the process stops at once (a second Ctrl-C): the run under way, if any, records
/// how many messages had left the source.
pub fn stopped() {
    if let Some(l) = live().take() {
        let _ = append(
            &l.path,
            &Progress {
                record: "progress".into(),
                run: l.run,
                time: Utc::now(),
                moved: l.moved,
                stopped: true,
            },
        );
    }
}

/// The ids a run moved, inline first, then spilled to a file.
pub struct Ids {
    inline: Vec<String>,
    file: Option<(PathBuf, std::io::BufWriter<std::fs::File>)>,
    dir: PathBuf,
    run: String,
    pub count: u64,
    pub complete: bool,
}

impl Ids {
    pub fn push(&mut self, id: &str) {
        self.count += 1;
        if self.file.is_none() && self.inline.len() < INLINE_IDS {
            self.inline.push(id.to_string());
            return;
        }
        if self.file.is_none() {
            let path = self.dir.join(format!("{}.txt", self.run));
            let opened = crate::fsutil::create_dir_private(&self.dir)
                .and_then(|_| crate::fsutil::create_private(&path))
                .map(std::io::BufWriter::new);
            match opened {
                Ok(mut w) => {
                    for i in self.inline.drain(..) {
                        let _ = writeln!(w, "{i}");
                    }
                    self.file = Some((path, w));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot write the audit ids file");
                    self.complete = false;
                    return;
                }
            }
        }
        if let Some((_, w)) = &mut self.file {
            let _ = writeln!(w, "{id}");
        }
    }
}

/// Where the trail is written besides the log: the table of `[audit] url`, one row per run
/// (the PostgreSQL backend implements it). The caller opens it (`Ctx::audit`), so that the
/// trail names no backend.
#[async_trait::async_trait]
pub trait Table: Send + Sync {
    /// Insert the run's row, before it starts.
    async fn intent(&self, i: &Intent) -> Result<()>;
    /// Complete the run's row, when it ends.
    async fn outcome(&self, o: &Outcome) -> Result<()>;
}

/// A run being audited.
pub struct Audit {
    path: PathBuf,
    table: Option<Box<dyn Table>>,
    pub run: String,
    pub ids: Ids,
    /// Messages that left the source (listed in `ids` or not).
    moved: u64,
    /// Writes the progress records ([`progress_task`]).
    progress: tokio::task::JoinHandle<()>,
    /// Where a warning about the trail goes: the terminal's stderr.
    notes: crate::output::Stderr,
}

/// Append one record to the log (created 0600, never through a symlink) and sync it.
fn append(path: &Path, v: &impl Serialize) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::fsutil::create_dir_private(dir).map_err(|e| Error::io(dir, e))?;
    }
    let mut line = serde_json::to_vec(v).map_err(|e| Error::io(path, std::io::Error::other(e)))?;
    line.push(b'\n');
    let mut f = crate::fsutil::append_private(path).map_err(|e| Error::io(path, e))?;
    f.write_all(&line).map_err(|e| Error::io(path, e))?;
    f.sync_data().map_err(|e| Error::io(path, e))
}

/// The command line as given, every URL's password and every registered secret hidden.
pub fn redacted_argv() -> Vec<String> {
    std::env::args()
        .map(|a| crate::secrets::redact(&a))
        .collect()
}

impl Audit {
    /// Write the intent record; the run starts only when it is written (a run that cannot be
    /// audited does not run: exit 2 with the path). `table` opens the audit table, where one
    /// is configured: it is awaited once the run has its id, before the log is written.
    /// Warnings about the trail go to `notes` (the printer's stderr).
    pub async fn begin(
        table: impl Future<Output = Result<Option<Box<dyn Table>>>>,
        path: PathBuf,
        mut intent: Intent,
        notes: crate::output::Stderr,
    ) -> Result<Audit> {
        let run = format!(
            "{}-{:x}",
            Utc::now().format("%Y%m%dT%H%M%S%.3fZ"),
            std::process::id()
        );
        intent.record = "intent".into();
        intent.run = run.clone();
        // The table is reached before the log is written: a table that cannot be reached
        // leaves nothing behind.
        let table = table.await?;
        append(&path, &intent).map_err(|e| Error::Config {
            path: path.clone(),
            reason: format!(
                "cannot write the audit log ({e}); set [audit] path in dlqctl.toml to a writable file"
            ),
        })?;
        if let Some(t) = &table
            && let Err(e) = t.intent(&intent).await
        {
            // The log has the intent: it gets the outcome too (the run did not start), so
            // that `dlqctl audit` shows no run as unfinished that never began.
            let outcome = Outcome {
                record: "outcome".into(),
                run,
                time: Utc::now(),
                exit_code: e.exit_code(),
                counts: Value::Object(Default::default()),
                error: Some(format!(
                    "not started: the audit table refused the intent: {e}"
                )),
                ids: Vec::new(),
                ids_file: None,
                ids_complete: true,
            };
            if let Err(w) = append(&path, &outcome) {
                notes.line(&format!(
                    "warning: cannot write the outcome to the audit log {}: {w}",
                    path.display()
                ));
            }
            return Err(e);
        }
        let dir = path
            .parent()
            .map_or_else(|| PathBuf::from("audit-ids"), |d| d.join("audit-ids"));
        *live() = Some(Live {
            path: path.clone(),
            run: run.clone(),
            moved: 0,
            written: 0,
        });
        Ok(Audit {
            moved: 0,
            progress: progress_task(run.clone()),
            notes,
            path,
            table,
            ids: Ids {
                inline: Vec::new(),
                file: None,
                dir,
                run: run.clone(),
                count: 0,
                complete: true,
            },
            run,
        })
    }

    /// A message left the source (accepted by its target, or purged).
    pub fn moved(&mut self, id: &str) {
        self.ids.push(id);
        self.moved_unlisted(1);
    }

    /// `n` messages left the source in one statement whose ids did not come back.
    pub fn moved_unlisted(&mut self, n: u64) {
        self.moved += n;
        if let Some(l) = live().as_mut() {
            l.moved = self.moved;
        }
    }

    /// Write the outcome record.
    pub async fn finish(self, exit_code: i32, counts: Value, error: Option<String>) {
        *live() = None;
        self.progress.abort();
        let Audit {
            path,
            table,
            run,
            ids,
            notes,
            ..
        } = self;
        let moved = counts.get("moved").and_then(Value::as_u64).unwrap_or(0);
        let mut ids_file = None;
        let mut inline = ids.inline;
        if let Some((p, mut w)) = ids.file {
            let _ = w.flush();
            ids_file = Some(p);
            inline.clear();
        }
        let outcome = Outcome {
            record: "outcome".into(),
            run,
            time: Utc::now(),
            exit_code,
            counts,
            error,
            ids: inline,
            ids_file,
            ids_complete: ids.complete && ids.count >= moved,
        };
        if let Err(e) = append(&path, &outcome) {
            notes.line(&format!(
                "warning: cannot write the outcome to the audit log {}: {e}",
                path.display()
            ));
        }
        if let Some(t) = &table
            && let Err(e) = t.outcome(&outcome).await
        {
            notes.line(&format!(
                "warning: cannot write the outcome to the audit table: {e}"
            ));
        }
    }
}

/// One run as `dlqctl audit` lists it: its intent and, unless it never ended, its outcome.
#[derive(Serialize)]
pub struct RunRecord {
    #[serde(flatten)]
    pub intent: Intent,
    /// None: no outcome was written (the run crashed, was stopped at once, or is running).
    pub outcome: Option<Outcome>,
    /// The last progress record of a run without an outcome: how many had moved by then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<Progress>,
}

/// The runs in the log since `since`, oldest first.
pub fn read(path: &Path, since: Option<DateTime<Utc>>) -> Result<Vec<RunRecord>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut runs: Vec<RunRecord> = Vec::new();
    let mut outcomes: std::collections::HashMap<String, Outcome> = Default::default();
    let mut progress: std::collections::HashMap<String, Progress> = Default::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match v["record"].as_str() {
            Some("intent") => {
                if let Ok(i) = serde_json::from_value::<Intent>(v) {
                    runs.push(RunRecord {
                        intent: i,
                        outcome: None,
                        progress: None,
                    });
                }
            }
            Some("outcome") => {
                if let Ok(o) = serde_json::from_value::<Outcome>(v) {
                    outcomes.insert(o.run.clone(), o);
                }
            }
            Some("progress") => {
                if let Ok(p) = serde_json::from_value::<Progress>(v) {
                    progress.insert(p.run.clone(), p);
                }
            }
            _ => {}
        }
    }
    runs.retain(|r| since.is_none_or(|s| r.intent.time >= s));
    for r in &mut runs {
        r.outcome = outcomes.remove(&r.intent.run);
        if r.outcome.is_none() {
            r.progress = progress.remove(&r.intent.run);
        }
    }
    Ok(runs)
}
