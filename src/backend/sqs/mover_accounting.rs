//! What a run leaves that it cannot account for, reported at its end ([`Unaccounted`]).

use super::{Fate, SqsMoveSession};
use crate::backend::Unaccounted;

/// The messages in flight at the end that this run did not hold, and did not report already
/// (an earlier run's holds), counted before the run gave back what it held; or why not.
pub(super) type Others = std::result::Result<u64, String>;

impl SqsMoveSession<'_> {
    /// Before the end's give-back, once the run found nothing more: what the queue has in
    /// flight that is neither this run's nor reported already. A receive whose answer never
    /// reached the run (killed mid receive, the connection lost) hides messages nobody can
    /// list, and on a FIFO queue hides the rest of their groups too: a run that ends clean
    /// then would claim a drained queue.
    pub(super) async fn count_others(&mut self) {
        if !self.exhausted {
            return;
        }
        let own = self.holds.len() as u64;
        let reported: u64 = self.unaccounted.iter().map(|u| u.count).sum();
        self.others = Some(match self.b.in_flight_now().await {
            Ok(n) => Ok(n.saturating_sub(own + reported)),
            Err(e) => Err(e.to_string()),
        });
    }

    /// At the end: what the run leaves that it cannot account for.
    pub(super) async fn account(&mut self) {
        if self.undeleted > 0 {
            self.unaccounted.push(Unaccounted {
                count: self.undeleted,
                approximate: false,
                reason: "copied to the target, but their delete did not take effect (they came back) and deleting them again failed: they are still in the dead-letter queue, and a re-run moves them again (same stable id)".into(),
                until: None,
            });
        }
        let others = match self.others.take() {
            Some(Ok(n)) => n,
            Some(Err(e)) => {
                tracing::warn!(
                    "could not count the messages in flight at the end ({e}): messages another reader holds are not reported"
                );
                0
            }
            None => 0,
        };
        let fifo = self.b.fifo && self.exhausted;
        let blocked = fifo && !self.blocked.is_empty();
        let limit = self.stopped_at.is_some();
        if !limit && !fifo {
            if others > 0 {
                self.unaccounted.push(self.in_flight(others));
            }
            return;
        }
        if !limit && !blocked && others == 0 {
            return;
        }
        let left = self.seen.values().filter(|f| **f == Fate::Left).count() as u64;
        let (mut count, note) = match self.b.in_queue().await {
            Ok(total) => (total.saturating_sub(left), String::new()),
            Err(e) => (0, format!(" (the queue's count could not be read: {e})")),
        };
        if !limit && others > 0 {
            // Held elsewhere, and (FIFO) the rest of their groups behind them.
            let held = if blocked {
                others.min(count)
            } else {
                count.max(others)
            };
            self.unaccounted.push(self.in_flight(held));
            count = count.saturating_sub(held);
            if !blocked {
                return;
            }
        }
        if count == 0 && note.is_empty() {
            return;
        }
        let reason = match self.stopped_at {
            Some(held) => format!(
                "not examined: the run stopped taking messages at {held} held in flight (it keeps what it skips hidden so as not to read it twice, and SQS allows about 120,000 in flight per queue), and gave those back. Re-run to examine more (each run reads what it skipped again), or first move what the filter skips to another queue{note}"
            ),
            None => self.blocked_reason(&note),
        };
        self.unaccounted.push(Unaccounted {
            count,
            approximate: true,
            reason,
            until: None,
        });
    }

    /// `count` messages in flight that this run did not hold (on FIFO: with their groups).
    fn in_flight(&self, count: u64) -> Unaccounted {
        super::super::session::in_flight(self.b, count)
    }

    fn blocked_reason(&self, note: &str) -> String {
        let groups: Vec<&str> = self.blocked.iter().map(String::as_str).collect();
        format!(
            "not examined: {} FIFO message group(s) ({}) start with messages this run left in the queue (skipped by the filters, over --max-redrives or not sent), and SQS hands out nothing of a group behind a message that is still there (at most 10 a receive). Remove or move those first (`{}`), or run without the filter that skips them{note}",
            groups.len(),
            groups
                .iter()
                .take(3)
                .copied()
                .collect::<Vec<_>>()
                .join(", "),
            crate::output::command_line(&[
                "dlqctl",
                "peek",
                &self.b.addr.to_string(),
                "--where",
                &format!(".group == {}", serde_json::Value::from(groups[0])),
            ]),
        )
    }
}
