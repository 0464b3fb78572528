//! What a run keeps beside the engine: the targets it opened (each once, never the source
//! itself), the failures it tallies by reason, and the pace it keeps.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use super::{FailureGroup, Mode};
use crate::address::Address;
use crate::backend::{self, OpenOptions, QueueBackend, QueueSink};
use crate::error::{Error, Result};

#[derive(Default)]
pub(super) struct Tally {
    pub(super) failures: BTreeMap<String, FailureGroup>,
    pub(super) dest: BTreeMap<String, u64>,
    /// The run's audit (a changing run): the ids moved are added as they are accepted.
    pub(super) audit: Option<crate::audit::Audit>,
    /// Copies accepted in a batch whose settle failed (the run stops there): their originals
    /// stay in the source.
    pub(super) unsettled: u64,
}

impl Tally {
    /// A message left the source (accepted by its target, or purged).
    pub(super) fn moved(&mut self, id: &str) {
        if let Some(a) = &mut self.audit {
            a.moved(id);
        }
    }

    /// `n` messages left the source in one statement whose ids did not come back.
    pub(super) fn moved_unlisted(&mut self, n: u64) {
        if let Some(a) = &mut self.audit {
            a.ids.complete = false;
            a.moved_unlisted(n);
        }
    }
}

impl Tally {
    pub(super) fn fail(&mut self, reason: &str, id: &str) {
        let g = self
            .failures
            .entry(reason.to_string())
            .or_insert_with(|| FailureGroup {
                reason: reason.to_string(),
                count: 0,
                ids: Vec::new(),
            });
        g.count += 1;
        if g.ids.len() < 5 {
            g.ids.push(id.to_string());
        }
    }
}

/// Opened targets, one per distinct address.
pub(super) struct Targets {
    pub(super) open: HashMap<String, Box<dyn QueueBackend>>,
    /// Discovered destinations that cannot take copies, with why.
    pub(super) refused: HashMap<String, String>,
    pub(super) options: OpenOptions,
    pub(super) opener: backend::Opener,
    /// What the source resolves to: no copy goes back into the queue being read.
    pub(super) source_identity: Option<String>,
    pub(super) mode: Mode,
}

impl Targets {
    /// Open `addr` once, as a target. Errors when it cannot take copies: missing, not
    /// writable, or the very queue being read (whatever URL names it).
    pub(super) async fn get(&mut self, addr: &Address) -> Result<&dyn QueueSink> {
        let key = addr.to_string();
        if !self.open.contains_key(&key) {
            let b = self.opener.open(addr, &self.options).await?;
            // A file takes copies only as a purge's archive (appended, synced): a redrive or
            // replay into a file is `export`.
            let caps = b.capabilities();
            if b.sink().is_none() || (caps.archive_only && self.mode != Mode::Purge) {
                let e = Error::Unsupported {
                    backend: addr.backend_name(),
                    operation: "accepting copies",
                    reason: format!("{addr} cannot be a redrive or replay target"),
                };
                return Err(if caps.archive_only {
                    e.hinted("to write messages to a file use `dlqctl export QUEUE -o FILE` (with the same filters), or `dlqctl purge QUEUE --archive FILE` to archive them there, then remove them")
                } else {
                    e
                });
            }
            // A Kafka replay reads up to end offsets fixed at its start, so a range can be
            // replayed into its own topic (reprocessing); every other copy into the source
            // would be read again, and a redrive would chase its own copies.
            let bounded = self.mode == Mode::Replay && caps.bounded_reads;
            let identity = b.identity().await?;
            tracing::debug!(target = %addr, ?identity, source = ?self.source_identity, "target opened");
            if let Some(src) = &self.source_identity
                && !bounded
                && identity.as_ref() == Some(src)
            {
                return Err(match self.mode {
                    Mode::Purge => Error::invalid_arg(
                        "--archive",
                        format!(
                            "{addr} is the queue being purged: an archive keeps copies somewhere else"
                        ),
                    )
                    .hinted("archive to FILE.jsonl, or to another table, queue or topic"),
                    mode => Error::invalid_arg(
                        "--to",
                        format!(
                            "{addr} is the queue being read: its copies would be read again{}",
                            if mode != Mode::Replay {
                                " and moved once more, without end"
                            } else {
                                ""
                            }
                        ),
                    )
                    .hinted("pass another --to"),
                });
            }
            self.open.insert(key.clone(), b);
        }
        Ok(self.open[&key]
            .sink()
            .expect("opened targets are checked to have a sink"))
    }

    /// A destination a message names (SQS `DeadLetterQueueSourceArn`, Kafka's original-topic
    /// header): one that does not exist, cannot be written or is the source itself refuses
    /// its messages, with the reason, instead of stopping the run. Other errors (an
    /// unreachable service) still stop it.
    pub(super) async fn discovered(
        &mut self,
        addr: &Address,
        printer: &crate::output::Printer,
    ) -> Result<std::result::Result<&dyn QueueBackend, String>> {
        let key = addr.to_string();
        if let Some(r) = self.refused.get(&key) {
            return Ok(Err(r.clone()));
        }
        match self.get(addr).await {
            Ok(_) => {}
            Err(
                e @ (Error::NotFound { .. }
                | Error::InvalidArgument { .. }
                | Error::Unsupported { .. }
                | Error::PermissionDenied { .. }),
            ) => {
                let reason =
                    format!("the destination this message names cannot take it: {e}; pass --to");
                // Said once per destination, as every warning is (its messages are
                // counted under the summary's failures).
                printer.warn(&reason);
                self.refused.insert(key, reason.clone());
                return Ok(Err(reason));
            }
            Err(e) => return Err(e),
        }
        Ok(Ok(self.open[&key].as_ref()))
    }
}

/// Paces sends to `rate` messages per second.
pub(super) struct Pacer {
    pub(super) rate: Option<f64>,
    pub(super) start: Instant,
}

impl Pacer {
    pub(super) async fn wait(&self, done: u64) {
        if let Some(r) = self.rate {
            let due = Duration::from_secs_f64(done as f64 / r);
            let el = self.start.elapsed();
            if due > el {
                tokio::time::sleep(due - el).await;
            }
        }
    }
}

/// Count one offered copy's outcome: moved (to `dest`), or failed with the target's reason.
pub(super) fn record(
    s: &mut super::MoveSummary,
    tally: &mut Tally,
    dest: &str,
    id: &str,
    o: &backend::SendOutcome,
) {
    match o {
        backend::SendOutcome::Sent => {
            s.moved += 1;
            tally.moved(id);
            match tally.dest.get_mut(dest) {
                Some(n) => *n += 1,
                None => {
                    tally.dest.insert(dest.to_string(), 1);
                }
            }
        }
        backend::SendOutcome::Rejected { reason } | backend::SendOutcome::Conflict { reason } => {
            s.failed += 1;
            tally.fail(reason, id);
        }
    }
}

/// The first error of a run is the one it reports; a later one (batches landing after it) is
/// only logged.
pub(super) fn keep_first(result: &mut Result<()>, later: Result<()>) {
    if let Err(e) = later {
        if result.is_ok() {
            *result = Err(e);
        } else {
            tracing::debug!(error = %e, "a later batch failed too");
        }
    }
}
