//! The batch calls a redrive makes on the messages it holds, read entry by entry:
//! `ChangeMessageVisibilityBatch` (the heartbeat, giving back, claiming again) and
//! `DeleteMessageBatch`. Both answer HTTP 200 with a `Failed[]` list when some entries failed;
//! every entry's outcome is returned, in order, so that nothing is counted done that was not.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{
    ChangeMessageVisibilityBatchRequestEntry, DeleteMessageBatchRequestEntry,
};
use futures::StreamExt;

use super::holds::{HoldLog, Holds};
use super::sdk_err;

/// Why an entry of a batch call did not take effect.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Refusal {
    /// SQS refused the entry (in `Failed[]`, or absent from both lists).
    Entry { code: String, message: String },
    /// The request failed as a whole, after the SDK's retries.
    Request(String),
}

impl Refusal {
    /// The receipt handle no longer holds the message: it was deleted, became visible again,
    /// or another reader received it since.
    pub(super) fn not_held(&self) -> bool {
        match self {
            Refusal::Entry { code, .. } => matches!(
                code.rsplit('.').next().unwrap_or(code),
                "ReceiptHandleIsInvalid" | "MessageNotInflight"
            ),
            Refusal::Request(_) => false,
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Entry { code, message } if message.is_empty() => f.write_str(code),
            Refusal::Entry { code, message } => write!(f, "{code}: {message}"),
            Refusal::Request(e) => f.write_str(e),
        }
    }
}

/// One message held: its MessageId and the newest receipt handle this run got for it.
pub(super) type Item = (String, String);

/// Per entry of one answer (`Successful[]` / `Failed[]`, ids `x{i}`): done, or why not.
fn entries(
    n: usize,
    successful: impl Iterator<Item = String>,
    failed: impl Iterator<Item = (String, String, String)>,
) -> Vec<Result<(), Refusal>> {
    let index = |id: &str| id.trim_start_matches('x').parse::<usize>().ok();
    let mut out = vec![
        Err(Refusal::Entry {
            code: "NoAnswer".into(),
            message: "the answer listed this entry neither as successful nor as failed".into(),
        });
        n
    ];
    for id in successful {
        if let Some(slot) = index(&id).and_then(|i| out.get_mut(i)) {
            *slot = Ok(());
        }
    }
    for (id, code, message) in failed {
        if let Some(slot) = index(&id).and_then(|i| out.get_mut(i)) {
            *slot = Err(Refusal::Entry { code, message });
        }
    }
    out
}

/// Set the visibility timeout of `items` to `seconds`, 10 a request, up to `parallel`
/// requests at once. One outcome per item, in order.
pub(super) async fn change_visibility(
    client: &Client,
    url: &str,
    shown: &str,
    items: &[Item],
    seconds: i32,
    parallel: usize,
) -> Vec<Result<(), Refusal>> {
    let calls: Vec<_> = items
        .chunks(10)
        .map(|chunk| change_chunk(client, url, shown, chunk, seconds))
        .collect();
    let answers: Vec<Vec<Result<(), Refusal>>> = futures::stream::iter(calls)
        .buffered(parallel.max(1))
        .collect()
        .await;
    answers.into_iter().flatten().collect()
}

async fn change_chunk(
    client: &Client,
    url: &str,
    shown: &str,
    chunk: &[Item],
    seconds: i32,
) -> Vec<Result<(), Refusal>> {
    let entries_in = chunk
        .iter()
        .enumerate()
        .map(|(i, (_, receipt))| {
            ChangeMessageVisibilityBatchRequestEntry::builder()
                .id(format!("x{i}"))
                .receipt_handle(receipt)
                .visibility_timeout(seconds)
                .build()
                .expect("all required fields set")
        })
        .collect();
    match client
        .change_message_visibility_batch()
        .queue_url(url)
        .set_entries(Some(entries_in))
        .send()
        .await
    {
        Ok(out) => entries(
            chunk.len(),
            out.successful().iter().map(|s| s.id().to_string()),
            out.failed().iter().map(|f| {
                let m = f.message().unwrap_or_default().to_string();
                (f.id().to_string(), f.code().to_string(), m)
            }),
        ),
        Err(e) => {
            let why = sdk_err(shown, e).to_string();
            vec![Err(Refusal::Request(why)); chunk.len()]
        }
    }
}

/// Delete `items`, one `DeleteMessageBatch` at a time: moto (5.2.5) rebuilds a queue's
/// message list on every delete without a lock, so two batches at once can undo each other's
/// deletes while both answer Successful (docs/sqs.md). One outcome per item, in order.
pub(super) async fn delete(
    client: &Client,
    url: &str,
    shown: &str,
    items: &[Item],
) -> Vec<Result<(), Refusal>> {
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(10) {
        let entries_in = chunk
            .iter()
            .enumerate()
            .map(|(i, (_, receipt))| {
                DeleteMessageBatchRequestEntry::builder()
                    .id(format!("x{i}"))
                    .receipt_handle(receipt)
                    .build()
                    .expect("all required fields set")
            })
            .collect();
        match client
            .delete_message_batch()
            .queue_url(url)
            .set_entries(Some(entries_in))
            .send()
            .await
        {
            Ok(answer) => out.extend(entries(
                chunk.len(),
                answer.successful().iter().map(|s| s.id().to_string()),
                answer.failed().iter().map(|f| {
                    let m = f.message().unwrap_or_default().to_string();
                    (f.id().to_string(), f.code().to_string(), m)
                }),
            )),
            Err(e) => {
                let why = sdk_err(shown, e).to_string();
                out.extend(chunk.iter().map(|_| Err(Refusal::Request(why.clone()))));
            }
        }
    }
    out
}

/// Where the heartbeat reports a failed request: the messages held may become visible to
/// another reader once their timeout runs out, so the run takes no new batch.
pub(super) type Failed = Arc<Mutex<Option<String>>>;

/// Every third of the visibility timeout, extend every message the run holds (the current
/// batch, and what it skipped or could not send), so that a long run never lets a message it
/// holds reappear. An entry the heartbeat cannot extend (`Failed[]`) keeps its old deadline:
/// the run claims it again before deleting it.
pub(super) struct Heartbeat {
    pub(super) client: Client,
    pub(super) url: String,
    pub(super) shown: String,
    pub(super) holds: Arc<Holds>,
    pub(super) log: Arc<Mutex<HoldLog>>,
    pub(super) visibility: i32,
    pub(super) parallel: usize,
    pub(super) failed: Failed,
}

impl Heartbeat {
    pub(super) fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let vis = Duration::from_secs(self.visibility as u64);
            let period = Duration::from_secs((self.visibility as u64 / 3).max(1));
            loop {
                tokio::time::sleep(period).await;
                let all = self.holds.snapshot();
                if all.is_empty() {
                    continue;
                }
                let (started, started_utc) = (Instant::now(), chrono::Utc::now());
                let outcomes = change_visibility(
                    &self.client,
                    &self.url,
                    &self.shown,
                    &all,
                    self.visibility,
                    self.parallel,
                )
                .await;
                let mut extended = Vec::with_capacity(all.len());
                let mut failure = None;
                for (item, outcome) in all.into_iter().zip(outcomes) {
                    match outcome {
                        Ok(()) => extended.push(item),
                        Err(Refusal::Request(e)) => failure = Some(e),
                        Err(e) => {
                            tracing::debug!(message_id = %item.0, "the heartbeat could not extend it: {e}")
                        }
                    }
                }
                self.holds.extended(&extended, started + vis);
                if let Ok(mut log) = self.log.lock() {
                    log.until(started_utc + vis);
                }
                if let Some(e) = failure {
                    tracing::warn!("visibility heartbeat failed: {e}");
                    self.failed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get_or_insert(e);
                    return;
                }
                tracing::debug!(messages = extended.len(), "visibility extended");
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_gets_an_outcome() {
        let out = entries(
            3,
            ["x0".to_string()].into_iter(),
            [(
                "x2".to_string(),
                "ReceiptHandleIsInvalid".to_string(),
                "gone".to_string(),
            )]
            .into_iter(),
        );
        assert_eq!(out[0], Ok(()));
        assert!(matches!(&out[1], Err(Refusal::Entry { code, .. }) if code == "NoAnswer"));
        assert!(out[2].as_ref().unwrap_err().not_held());
        assert_eq!(
            out[2].as_ref().unwrap_err().to_string(),
            "ReceiptHandleIsInvalid: gone"
        );
    }
}
