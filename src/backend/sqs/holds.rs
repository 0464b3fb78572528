//! What a redrive holds: every message it received and has not yet deleted or given back, with
//! the newest receipt handle it got for it and until when it stays hidden at the least; and the
//! holds file, which lets the next run give back at once what a killed run held, instead of
//! leaving it hidden for the visibility timeout while the re-run reports a clean finish.
//!
//! The holds file is `JOURNAL_DIR/QUEUE.RUN.holds` (beside the journal), locked (an advisory
//! exclusive lock, released by the system when the process dies) while its run lives. Lines:
//! `run PID VISIBILITY STARTED_UNIX`, `hold MESSAGE_ID RECEIPT_HANDLE`, `until UNIX` (every
//! message held so far is visible again by then at the latest), `gone MESSAGE_ID` (deleted or
//! given back). A run that finds another run's file unlocked knows that run is dead.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use chrono::{DateTime, Utc};

use super::SqsBackend;
use super::calls::{self, Item};
use crate::backend::Unaccounted;
use crate::error::{Error, Result};

struct Hold {
    receipt: String,
    /// Hidden until at least then (from before the receive or heartbeat that set it).
    expires: Instant,
}

/// The messages a run holds, by MessageId (shared with the heartbeat).
#[derive(Default)]
pub(super) struct Holds(Mutex<HashMap<String, Hold>>);

impl Holds {
    fn map(&self) -> MutexGuard<'_, HashMap<String, Hold>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hold `id` with `receipt` (a newer receipt replaces an older one).
    pub(super) fn put(&self, id: &str, receipt: &str, expires: Instant) {
        self.map().insert(
            id.to_string(),
            Hold {
                receipt: receipt.to_string(),
                expires,
            },
        );
    }

    /// Stop holding `ids` (deleted or given back); the ones that were held.
    pub(super) fn take(&self, ids: &[String]) -> Vec<Item> {
        let mut m = self.map();
        ids.iter()
            .filter_map(|id| m.remove(id).map(|h| (id.clone(), h.receipt)))
            .collect()
    }

    pub(super) fn drain(&self) -> Vec<Item> {
        self.map().drain().map(|(id, h)| (id, h.receipt)).collect()
    }

    pub(super) fn len(&self) -> usize {
        self.map().len()
    }

    pub(super) fn snapshot(&self) -> Vec<Item> {
        self.map()
            .iter()
            .map(|(id, h)| (id.clone(), h.receipt.clone()))
            .collect()
    }

    /// The newest receipt of `id` and until when it is hidden at the least.
    pub(super) fn get(&self, id: &str) -> Option<(String, Instant)> {
        self.map().get(id).map(|h| (h.receipt.clone(), h.expires))
    }

    /// These were made hidden until `until` (a heartbeat, a claim), unless received again
    /// since (another receipt).
    pub(super) fn extended(&self, items: &[Item], until: Instant) {
        let mut m = self.map();
        for (id, receipt) in items {
            if let Some(h) = m.get_mut(id)
                && h.receipt == *receipt
                && h.expires < until
            {
                h.expires = until;
            }
        }
    }
}

/// This run's holds file (see the module doc).
pub(super) struct HoldLog {
    path: PathBuf,
    file: File,
}

fn unix(t: DateTime<Utc>) -> i64 {
    t.timestamp()
}

impl HoldLog {
    /// Create and lock this run's file in `dir`, beside the journal `name.log`.
    pub(super) fn create(dir: &Path, name: &str, visibility: i32) -> Result<HoldLog> {
        let now = Utc::now();
        let pid = std::process::id();
        let path = dir.join(format!(
            "{name}.{pid}-{}.holds",
            now.timestamp_nanos_opt().unwrap_or_default()
        ));
        let mut o = OpenOptions::new();
        o.create_new(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
        let mut file = o.open(&path).map_err(|e| Error::io(&path, e))?;
        file.try_lock().map_err(|e| {
            Error::io(
                &path,
                std::io::Error::other(format!("cannot lock this run's holds file: {e}")),
            )
        })?;
        writeln!(file, "run {pid} {visibility} {}", unix(now)).map_err(|e| Error::io(&path, e))?;
        Ok(HoldLog { path, file })
    }

    /// Messages just received: on disk (synced) before anything is done with them, so that a
    /// run killed from here on leaves them to the next run to give back.
    pub(super) fn held(&mut self, items: &[Item], until: DateTime<Utc>) -> Result<()> {
        let mut text = String::new();
        for (id, receipt) in items {
            text.push_str(&format!("hold {id} {receipt}\n"));
        }
        text.push_str(&format!("until {}\n", unix(until)));
        self.file
            .write_all(text.as_bytes())
            .and_then(|_| self.file.sync_data())
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Every message held is hidden until `until` at the latest (after a heartbeat).
    pub(super) fn until(&mut self, until: DateTime<Utc>) {
        self.append(&format!("until {}\n", unix(until)));
    }

    /// Deleted or given back: nothing for a later run to give back.
    pub(super) fn gone<'a>(&mut self, ids: impl IntoIterator<Item = &'a String>) {
        let text: String = ids.into_iter().map(|id| format!("gone {id}\n")).collect();
        if !text.is_empty() {
            self.append(&text);
        }
    }

    fn append(&mut self, text: &str) {
        // Best effort: a line missing here at worst makes a later run give back a message
        // that is already gone or visible (SQS refuses that entry).
        if let Err(e) = self.file.write_all(text.as_bytes()) {
            tracing::warn!(path = %self.path.display(), "cannot write the holds file: {e}");
        }
    }

    /// The run is over and holds nothing: remove the file.
    pub(super) fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

/// Another run's holds file, read back.
pub(super) struct Earlier {
    pub(super) path: PathBuf,
    /// Open (and locked, for a dead run's) while it is looked at.
    _file: File,
    /// Its run still holds the lock: it is alive.
    pub(super) alive: bool,
    pub(super) pid: String,
    /// Hidden until then at the latest.
    pub(super) until: Option<DateTime<Utc>>,
    /// What it held and had not deleted or given back.
    pub(super) holds: Vec<Item>,
}

/// The holds files of other runs of the queue `name` in `dir` (not `own`).
pub(super) fn earlier_runs(dir: &Path, name: &str, own: &Path) -> Vec<Earlier> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let prefix = format!("{name}.");
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let file_name = e.file_name().to_string_lossy().into_owned();
        let of_this_queue = file_name.strip_prefix(&prefix).is_some_and(is_run_file);
        if path == own || !of_this_queue {
            continue;
        }
        match read_earlier(&path) {
            Ok(Some(r)) => out.push(r),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), "cannot read an earlier run's holds: {e}")
            }
        }
    }
    out
}

/// `PID-NANOS.holds`.
fn is_run_file(rest: &str) -> bool {
    rest.strip_suffix(".holds")
        .is_some_and(|r| r.chars().all(|c| c.is_ascii_digit() || c == '-'))
}

fn read_earlier(path: &Path) -> std::io::Result<Option<Earlier>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let alive = match file.try_lock() {
        Ok(()) => false,
        Err(std::fs::TryLockError::WouldBlock) => true,
        Err(std::fs::TryLockError::Error(e)) => return Err(e),
    };
    let mut pid = String::new();
    let mut until = None;
    let mut holds: HashMap<String, String> = HashMap::new();
    for line in BufReader::new(&file).lines() {
        let line = line?;
        let mut w = line.split(' ');
        match (w.next(), w.next(), w.next()) {
            (Some("run"), Some(p), _) => pid = p.to_string(),
            (Some("hold"), Some(id), Some(receipt)) => {
                holds.insert(id.to_string(), receipt.to_string());
            }
            (Some("gone"), Some(id), _) => {
                holds.remove(id);
            }
            (Some("until"), Some(t), _) => {
                let t = t.parse().ok().and_then(|t| DateTime::from_timestamp(t, 0));
                until = until.max(t);
            }
            _ => {}
        }
    }
    Ok(Some(Earlier {
        path: path.to_path_buf(),
        _file: file,
        alive,
        pid,
        until,
        holds: holds.into_iter().collect(),
    }))
}

impl Earlier {
    /// Keep only `left` for a later run (given back or not held: the rest), or remove the file
    /// when nothing is left.
    pub(super) fn keep_only(&self, left: &[Item]) {
        if left.is_empty() {
            let _ = std::fs::remove_file(&self.path);
            return;
        }
        let mut text = format!("run {} 0 0\n", self.pid);
        for (id, receipt) in left {
            text.push_str(&format!("hold {id} {receipt}\n"));
        }
        if let Some(t) = self.until {
            text.push_str(&format!("until {}\n", unix(t)));
        }
        let tmp = self.path.with_extension("holds.tmp");
        if let Err(e) = std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, &self.path)) {
            tracing::warn!(path = %self.path.display(), "cannot rewrite an earlier run's holds: {e}");
        }
    }
}

/// Give back what interrupted earlier runs of this queue held (their holds files); what
/// cannot be given back, or is held by a run still going, is reported. Also: how many were
/// given back.
pub(super) async fn give_back_earlier(
    b: &SqsBackend,
    dir: &std::path::Path,
    name: &str,
    own: &std::path::Path,
) -> (Vec<Unaccounted>, u64) {
    let now = Utc::now();
    let mut out = Vec::new();
    let mut given_back = 0;
    for e in earlier_runs(dir, name, own) {
        let current = e.until.is_some_and(|t| t > now) && !e.holds.is_empty();
        if e.alive {
            if current {
                out.push(Unaccounted {
                    count: e.holds.len() as u64,
                    approximate: false,
                    reason: format!(
                        "held by another dlqctl run of this queue on this machine (pid {}), still running: this run did not see them",
                        e.pid
                    ),
                    until: e.until,
                });
            }
            continue;
        }
        if !current {
            e.keep_only(&[]);
            continue;
        }
        let outcomes =
            calls::change_visibility(&b.client, &b.url, &b.shown(), &e.holds, 0, b.opts.parallel)
                .await;
        let mut left = Vec::new();
        let mut why = None;
        for (item, o) in e.holds.iter().zip(outcomes) {
            match o {
                Ok(()) => {}
                Err(r) if r.not_held() => {}
                Err(r) => {
                    why.get_or_insert(r);
                    left.push(item.clone());
                }
            }
        }
        let given = e.holds.len() - left.len();
        given_back += given as u64;
        if given > 0 {
            tracing::warn!(
                count = given,
                pid = %e.pid,
                "made visible again what an interrupted earlier run held"
            );
        }
        e.keep_only(&left);
        if let Some(why) = why {
            out.push(Unaccounted {
                count: left.len() as u64,
                approximate: false,
                reason: format!(
                    "hidden by an interrupted earlier run (pid {}) that held them: they could not be made visible again ({why}), so this run did not see them; re-run once they are visible",
                    e.pid
                ),
                until: e.until,
            });
        }
    }
    (out, given_back)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_runs_holds_are_read_back_and_a_live_runs_are_left_alone() {
        let d = tempfile::tempdir().unwrap();
        let mut live = HoldLog::create(d.path(), "q", 300).unwrap();
        let until = Utc::now() + chrono::Duration::seconds(300);
        live.held(
            &[("a".into(), "ra".into()), ("b".into(), "rb".into())],
            until,
        )
        .unwrap();
        live.gone([&"a".to_string()]);
        // Another run's file, as a killed run leaves it (nobody holds its lock).
        let dead = d.path().join("q.1-2.holds");
        std::fs::write(
            &dead,
            "run 1 300 0\nhold x rx1\nhold x rx2\nhold y ry\nuntil 4000000000\ngone y\n",
        )
        .unwrap();
        // Not a holds file of this queue.
        std::fs::write(d.path().join("q2.1-2.holds"), "hold z rz\n").unwrap();
        let mut found = earlier_runs(d.path(), "q", Path::new("/nowhere"));
        found.sort_by_key(|e| e.alive);
        assert_eq!(found.len(), 2);
        assert!(!found[0].alive && found[1].alive);
        assert_eq!(found[0].holds, vec![("x".into(), "rx2".into())]);
        assert_eq!(found[0].until.map(|t| t.timestamp()), Some(4_000_000_000));
        assert_eq!(found[1].holds, vec![("b".into(), "rb".into())]);
        found[0].keep_only(&[]);
        assert!(!dead.exists());
        live.remove();
        assert!(!live.path().exists());
    }

    #[test]
    fn newer_receipts_replace_older_ones_and_extensions_follow_the_receipt() {
        let h = Holds::default();
        let t0 = Instant::now();
        h.put("m", "r1", t0);
        h.put("m", "r2", t0);
        let later = t0 + std::time::Duration::from_secs(5);
        h.extended(&[("m".into(), "r1".into())], later);
        assert_eq!(
            h.get("m"),
            Some(("r2".into(), t0)),
            "an old receipt extends nothing"
        );
        h.extended(&[("m".into(), "r2".into())], later);
        assert_eq!(h.get("m"), Some(("r2".into(), later)));
        assert_eq!(
            h.take(&["m".into(), "n".into()]),
            vec![("m".into(), "r2".into())]
        );
        assert_eq!(h.len(), 0);
    }
}
