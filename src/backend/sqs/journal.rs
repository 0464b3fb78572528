//! The local redrive journal: which messages were accepted by the target but not yet deleted
//! from the DLQ. A run that dies between the two leaves entries behind, and the next run
//! deletes those messages instead of sending them again.
//!
//! One file per queue under `$DLQCTL_STATE_DIR` (default `~/.local/state/dlqctl/journal/`),
//! lines `sent MESSAGE_ID` / `deleted MESSAGE_ID`, flushed and synced before each delete.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub struct Journal {
    path: PathBuf,
    file: File,
    /// Sent and not yet known to be deleted.
    pending: HashSet<String>,
}

/// The journal directory: `STATE_DIR/journal` (`DLQCTL_STATE_DIR`, resolved by the settings),
/// else the user's state directory.
fn dir(state_dir: Option<&Path>) -> PathBuf {
    crate::fsutil::state_dir(state_dir).join("journal")
}

/// The journal directory (created) and the queue's file name stem: its ARN (else URL) with
/// every character other than `[A-Za-z0-9.-]` replaced by `_`.
pub(super) fn place(state_dir: Option<&Path>, arn: &str, url: &str) -> Result<(PathBuf, String)> {
    let key = if arn.is_empty() { url } else { arn };
    let name: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let d = dir(state_dir);
    crate::fsutil::create_dir_private(&d).map_err(|e| Error::io(&d, e))?;
    Ok((d, name))
}

impl Journal {
    pub fn open(state_dir: Option<&Path>, arn: &str, url: &str) -> Result<Journal> {
        let (d, name) = place(state_dir, arn, url)?;
        let path = d.join(format!("{name}.log"));
        let mut pending = HashSet::new();
        if let Ok(f) = File::open(&path) {
            for line in BufReader::new(f).lines() {
                let line = line.map_err(|e| Error::io(&path, e))?;
                match line.split_once(' ') {
                    Some(("sent", id)) => {
                        pending.insert(id.to_string());
                    }
                    Some(("deleted", id)) => {
                        pending.remove(id);
                    }
                    _ => {}
                }
            }
        }
        if !pending.is_empty() {
            tracing::warn!(count = pending.len(), path = %path.display(), "an earlier redrive was interrupted after sending; those messages will be deleted, not sent again");
        }
        // Private, never through a symbolic link, its directory synced (src/fsutil.rs).
        let file = crate::fsutil::append_private(&path).map_err(|e| Error::io(&path, e))?;
        Ok(Journal {
            path,
            file,
            pending,
        })
    }

    pub fn was_sent(&self, id: &str) -> bool {
        self.pending.contains(id)
    }

    fn append(&mut self, kind: &str, ids: &[String]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut text = String::new();
        for id in ids {
            text.push_str(kind);
            text.push(' ');
            text.push_str(id);
            text.push('\n');
        }
        self.file
            .write_all(text.as_bytes())
            .and_then(|_| self.file.sync_data())
            .map_err(|e| Error::io(&self.path, e))
    }

    pub fn sent(&mut self, ids: &[String]) -> Result<()> {
        self.append("sent", ids)?;
        self.pending.extend(ids.iter().cloned());
        Ok(())
    }

    pub fn deleted(&mut self, ids: &[String]) -> Result<()> {
        self.append("deleted", ids)?;
        for id in ids {
            self.pending.remove(id);
        }
        Ok(())
    }

    /// Rewrite the file with only what is still pending (remove it when nothing is).
    pub fn compact(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            let _ = std::fs::remove_file(&self.path);
            return Ok(());
        }
        let tmp = self.path.with_extension("log.tmp");
        let mut text = String::new();
        for id in &self.pending {
            text.push_str("sent ");
            text.push_str(id);
            text.push('\n');
        }
        let _ = std::fs::remove_file(&tmp);
        crate::fsutil::create_private(&tmp)
            .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|_| f.sync_data()))
            .and_then(|_| std::fs::rename(&tmp, &self.path))
            .and_then(|_| crate::fsutil::sync_parent(&self.path))
            .map_err(|e| Error::io(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_survives_a_restart_and_compacts() {
        let d = tempfile::tempdir().unwrap();
        let mut j = Journal::open(Some(d.path()), "arn:aws:sqs:us-east-1:1:q", "").unwrap();
        j.sent(&["a".into(), "b".into()]).unwrap();
        j.deleted(&["a".into()]).unwrap();
        drop(j);
        let mut j = Journal::open(Some(d.path()), "arn:aws:sqs:us-east-1:1:q", "").unwrap();
        assert!(j.was_sent("b") && !j.was_sent("a"));
        j.deleted(&["b".into()]).unwrap();
        j.compact().unwrap();
        assert!(
            !d.path()
                .join("journal")
                .join("arn_aws_sqs_us-east-1_1_q.log")
                .exists()
        );
    }
}
