//! The audit trail: every run that changes something writes an intent record before it starts
//! and an outcome record when it ends, as JSON Lines (docs/audit.md). A crash leaves the intent
//! alone: `dlqctl audit` shows that run as unfinished.
//!
//! The moved ids go inline up to [`INLINE_IDS`]; past that, every id goes to a file beside the
//! log (`audit-ids/RUN.txt`), written as the run goes, so that memory stays flat.

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
    state_dir
        .map(Path::to_path_buf)
        .or_else(|| dirs::state_dir().map(|d| d.join("dlqctl")))
        .or_else(|| dirs::data_local_dir().map(|d| d.join("dlqctl")))
        .unwrap_or_else(|| std::env::temp_dir().join("dlqctl"))
        .join("audit.jsonl")
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
            let opened = std::fs::create_dir_all(&self.dir)
                .and_then(|_| std::fs::File::create(&path))
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

/// The audit table, where configured (`[audit] url`).
#[cfg(feature = "postgres")]
type Table = crate::backend::postgres::audit::AuditTable;
#[cfg(not(feature = "postgres"))]
type Table = std::convert::Infallible;

async fn open_table(cfg: &AuditConfig) -> Result<Option<Table>> {
    let Some(url) = &cfg.url else {
        return Ok(None);
    };
    #[cfg(feature = "postgres")]
    {
        crate::secrets::register_url_password(url);
        let table = cfg.table.as_deref().unwrap_or("dlqctl_audit");
        Ok(Some(Table::open(url, table).await?))
    }
    #[cfg(not(feature = "postgres"))]
    {
        let _ = url;
        Err(Error::Unsupported {
            backend: "postgres",
            operation: "an audit table",
            reason: "dlqctl was built without the `postgres` backend: leave out [audit] url".into(),
        })
    }
}

/// A run being audited.
pub struct Audit {
    path: PathBuf,
    table: Option<Table>,
    pub run: String,
    pub ids: Ids,
}

fn append(path: &Path, v: &impl Serialize) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let mut line = serde_json::to_vec(v).map_err(|e| Error::io(path, std::io::Error::other(e)))?;
    line.push(b'\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
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
    /// audited does not run: exit 2 with the path).
    pub async fn begin(cfg: &AuditConfig, path: PathBuf, mut intent: Intent) -> Result<Audit> {
        let run = format!(
            "{}-{:x}",
            Utc::now().format("%Y%m%dT%H%M%S%.3fZ"),
            std::process::id()
        );
        intent.record = "intent".into();
        intent.run = run.clone();
        append(&path, &intent).map_err(|e| Error::Config {
            path: path.clone(),
            reason: format!(
                "cannot write the audit log ({e}); set [audit] path in dlqctl.toml to a writable file"
            ),
        })?;
        let table = open_table(cfg).await?;
        #[cfg(feature = "postgres")]
        if let Some(t) = &table {
            t.intent(&intent).await?;
        }
        let dir = path
            .parent()
            .map_or_else(|| PathBuf::from("audit-ids"), |d| d.join("audit-ids"));
        Ok(Audit {
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

    /// Write the outcome record.
    pub async fn finish(self, exit_code: i32, counts: Value, error: Option<String>) {
        let Audit {
            path,
            table,
            run,
            ids,
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
            crate::output::notice(&format!(
                "warning: cannot write the outcome to the audit log {}: {e}",
                path.display()
            ));
        }
        #[cfg(feature = "postgres")]
        if let Some(t) = &table
            && let Err(e) = t.outcome(&outcome).await
        {
            crate::output::notice(&format!(
                "warning: cannot write the outcome to the audit table: {e}"
            ));
        }
        #[cfg(not(feature = "postgres"))]
        let _ = table;
    }
}

/// One run as `dlqctl audit` lists it: its intent and, unless it never ended, its outcome.
#[derive(Serialize)]
pub struct RunRecord {
    #[serde(flatten)]
    pub intent: Intent,
    /// None: no outcome was written (the run crashed, or is still running).
    pub outcome: Option<Outcome>,
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
                    });
                }
            }
            Some("outcome") => {
                if let Ok(o) = serde_json::from_value::<Outcome>(v) {
                    outcomes.insert(o.run.clone(), o);
                }
            }
            _ => {}
        }
    }
    runs.retain(|r| since.is_none_or(|s| r.intent.time >= s));
    for r in &mut runs {
        r.outcome = outcomes.remove(&r.intent.run);
    }
    Ok(runs)
}
