//! Amazon SQS (and SQS-compatible endpoints such as moto), done the way SQS really behaves:
//!
//! * there is no side-effect-free read: every receive increments ApproximateReceiveCount, so
//!   a DLQ with its own RedrivePolicy is refused unless `--allow-onward-redrive`;
//! * a browse hides what it read for the scan's duration, dedupes by MessageId, and makes it
//!   visible again at the end (`ChangeMessageVisibilityBatch` to 0);
//! * a scan ends on a streak of empty long polls, never on the first empty receive, and an
//!   error (AccessDenied, …) is an error, never "the queue is empty";
//! * sends are packed into batches of ≤10 entries and ≤ the target's MaximumMessageSize,
//!   `Failed[]` is read per entry, and only the sent entries are deleted from the DLQ.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{ChangeMessageVisibilityBatchRequestEntry, QueueAttributeName};
use serde_json::Value;
use tokio::sync::OnceCell;

use super::{
    AwsOptions, Capabilities, Inspection, MessageStream, MoveOptions, MoveSession, NativeMoves,
    OpenOptions, QueueBackend, QueueSink, ScanOptions, SendOutcome, TailOptions, VerifyFacts,
};
use crate::address::{Address, SqsAddress};
use crate::config::{IdSource, QueueConfig};
use crate::error::{Error, Result};
use crate::message::Message;

mod calls;
mod client;
mod facts;
mod holds;
mod journal;
mod mover;
pub mod native;
mod record;
mod send;
mod session;

pub use client::requests;
use client::{client_for, sdk_err};

/// The attribute dlqctl adds to carry a stable id across a move when the producer gave none
/// (SQS gives every copy a new MessageId).
pub use crate::message::STABLE_ID_ATTRIBUTE;

pub struct SqsBackend {
    addr: Address,
    client: Client,
    url: String,
    arn: String,
    name: String,
    attrs: HashMap<String, String>,
    fifo: bool,
    max_size: usize,
    id: Option<IdSource>,
    opts: AwsOptions,
    /// Receipt handles of browsed messages, made visible again by `close`.
    held: Arc<Mutex<Vec<String>>>,
    /// Held (read) by every browse receive while it is in flight; `close` takes it for
    /// writing, so it releases only after a receive cut short by the reader has answered.
    inflight: Arc<tokio::sync::RwLock<()>>,
    /// What browses read, and what they could not (see `read_accounting`).
    reads: Mutex<session::ReadState>,
    sources: OnceCell<Vec<String>>,
    /// Stable ids of copies sent (or, in a dry run, to be sent) without the loop guard's count
    /// to fit the target's MaximumMessageSize.
    uncounted: Mutex<std::collections::BTreeSet<String>>,
}

/// `arn:aws:sqs:REGION:ACCOUNT:NAME` → an address.
pub(crate) fn arn_address(arn: &str) -> Option<Address> {
    Address::parse(arn).ok()
}

/// Open an address of this backend (its line in `backend::OPENERS`).
pub fn open<'a>(
    addr: &'a crate::address::Address,
    opts: &'a crate::backend::OpenOptions,
) -> futures::future::BoxFuture<'a, crate::error::Result<Box<dyn crate::backend::QueueBackend>>> {
    crate::backend::boxed(SqsBackend::open(addr, opts))
}

impl SqsBackend {
    pub async fn open(addr: &Address, opts: &OpenOptions) -> Result<SqsBackend> {
        let Address::Sqs(a) = addr else {
            unreachable!("SqsBackend::open with a non-SQS address")
        };
        let client = client_for(a, &opts.aws).await?;
        let shown = addr.to_string();
        let url = match &a.url {
            Some(u) => u.clone(),
            None => {
                let mut req = client.get_queue_url().queue_name(&a.name);
                if let Some(acct) = &a.account {
                    req = req.queue_owner_aws_account_id(acct);
                }
                req.send()
                    .await
                    .map_err(|e| sdk_err(&shown, e))?
                    .queue_url()
                    .ok_or_else(|| Error::NotFound {
                        what: format!("queue {shown}"),
                        detail: String::new(),
                    })?
                    .to_string()
            }
        };
        let out = client
            .get_queue_attributes()
            .queue_url(&url)
            .attribute_names(QueueAttributeName::All)
            .send()
            .await
            .map_err(|e| sdk_err(&shown, e))?;
        let attrs: HashMap<String, String> = out
            .attributes()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.as_str().to_string(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let fifo = attrs.get("FifoQueue").is_some_and(|v| v == "true") || a.name.ends_with(".fifo");
        let max_size = attrs
            .get("MaximumMessageSize")
            .and_then(|v| v.parse().ok())
            .unwrap_or(262_144);
        Ok(SqsBackend {
            addr: addr.clone(),
            client,
            arn: attrs.get("QueueArn").cloned().unwrap_or_default(),
            url,
            name: a.name.clone(),
            attrs,
            fifo,
            max_size,
            id: opts.id.clone(),
            opts: opts.aws.clone(),
            held: Arc::default(),
            inflight: Arc::default(),
            reads: Mutex::default(),
            sources: OnceCell::new(),
            uncounted: Mutex::default(),
        })
    }

    fn shown(&self) -> String {
        self.addr.to_string()
    }

    /// The messages in the queue now: visible, in flight and delayed (approximate on AWS;
    /// exact on moto).
    pub(crate) async fn in_queue(&self) -> Result<u64> {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
            .send()
            .await
            .map_err(|e| sdk_err(&self.shown(), e))?;
        Ok(out
            .attributes()
            .map(|a| a.values().filter_map(|v| v.parse::<u64>().ok()).sum())
            .unwrap_or(0))
    }

    /// ApproximateNumberOfMessages now (a stop-rule input, never the only one).
    pub(crate) async fn visible_now(&self) -> Result<u64> {
        self.count_now(QueueAttributeName::ApproximateNumberOfMessages)
            .await
    }

    /// ApproximateNumberOfMessagesNotVisible now: the messages someone holds (in flight).
    pub(crate) async fn in_flight_now(&self) -> Result<u64> {
        self.count_now(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .await
    }

    async fn count_now(&self, name: QueueAttributeName) -> Result<u64> {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(name.clone())
            .send()
            .await
            .map_err(|e| sdk_err(&self.shown(), e))?;
        Ok(out
            .attributes()
            .and_then(|a| a.get(&name))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    fn attr_u64(&self, k: &str) -> Option<u64> {
        self.attrs.get(k).and_then(|v| v.parse().ok())
    }

    fn own_redrive_policy(&self) -> Option<Value> {
        self.attrs
            .get("RedrivePolicy")
            .and_then(|p| serde_json::from_str(p).ok())
    }

    /// Reading a DLQ that has its own RedrivePolicy can push messages onward.
    fn guard_reads(&self) -> Result<()> {
        if let Some(p) = self.own_redrive_policy()
            && !self.opts.allow_onward_redrive
        {
            return Err(Error::invalid_arg(
                "QUEUE",
                format!(
                    "{} has its own RedrivePolicy (maxReceiveCount {}, to {}): every read counts as a receive and can move messages onward",
                    self.name,
                    p["maxReceiveCount"],
                    p["deadLetterTargetArn"].as_str().unwrap_or("?")
                ),
            )
            .hinted("pass --allow-onward-redrive to read anyway"));
        }
        Ok(())
    }

    pub(crate) fn visibility(&self) -> i32 {
        self.opts.visibility_timeout.unwrap_or(300).clamp(1, 43_200)
    }

    /// Make messages visible again (best effort, in batches of 10).
    pub(crate) async fn release(&self, handles: &[String]) -> Result<()> {
        for chunk in handles.chunks(10) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    ChangeMessageVisibilityBatchRequestEntry::builder()
                        .id(format!("r{i}"))
                        .receipt_handle(h)
                        .visibility_timeout(0)
                        .build()
                        .expect("all required fields set")
                })
                .collect();
            self.client
                .change_message_visibility_batch()
                .queue_url(&self.url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| sdk_err(&self.shown(), e))?;
        }
        Ok(())
    }

    /// Note a copy that goes without the loop guard's count (see `send::drop_count_to_fit`);
    /// true the first time for this id.
    fn uncounted(&self, id: &str) -> bool {
        self.uncounted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string())
    }

    fn url_address(&self, url: &str) -> Address {
        match Address::parse(url) {
            Ok(a) => a,
            Err(_) => Address::Sqs(SqsAddress {
                name: url.rsplit('/').next().unwrap_or(url).to_string(),
                url: Some(url.to_string()),
                region: None,
                account: None,
            }),
        }
    }
}

#[async_trait]
impl QueueBackend for SqsBackend {
    fn address(&self) -> &Address {
        &self.addr
    }

    fn describe_move(&self, how: &crate::backend::MoveHow) -> String {
        match (how.purge, how.archived) {
            (true, true) => crate::backend::archive_then(true, "delete it (DeleteMessageBatch)"),
            (true, false) => "delete each selected message (DeleteMessageBatch)".into(),
            (false, _) => {
                "copy each message to the target, then delete it from the dead-letter queue".into()
            }
        }
    }

    /// A filtered SQS run reads the whole queue to find what the filter selects: how many
    /// receives that is, and what each costs (a receive counts towards the message's receive
    /// count and hides it until the run ends; SQS bills per request).
    fn describe_filtered_read(&self, backlog: Option<crate::backend::Backlog>) -> Option<String> {
        let calls = match backlog {
            Some(b) => {
                let calls = b.messages.div_ceil(10).max(1);
                format!(
                    "every message (about {}) is received to be filtered: about {calls} ReceiveMessage call{} of 10",
                    b.messages,
                    if calls == 1 { "" } else { "s" }
                )
            }
            None => "every message is received to be filtered, 10 per ReceiveMessage call".into(),
        };
        Some(format!(
            "{calls}; each receive adds 1 to the message's ApproximateReceiveCount and hides it until the run ends (the ones the filter skips too), and SQS bills each call"
        ))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            tail: true,
            delete: true,
            per_message_destination: true,
            read_side_effect: Some(
                "increments each message's ApproximateReceiveCount (SQS has no side-effect-free read) and hides it until the read ends",
            ),
            ..Capabilities::default()
        }
    }

    async fn inspect(&self, classifier: &crate::classify::Classifier) -> Result<Inspection> {
        self.inspect_queue(classifier).await
    }

    fn refuse_reads(&self) -> Result<()> {
        self.guard_reads()
    }

    async fn scan(&self, opts: ScanOptions) -> Result<MessageStream<'_>> {
        self.guard_reads()?;
        Ok(session::browse(self, opts.limit, None))
    }

    async fn tail(&self, opts: TailOptions) -> Result<MessageStream<'_>> {
        self.guard_reads()?;
        Ok(session::follow(self, opts.from_start))
    }

    async fn begin_move(&self, _opts: MoveOptions) -> Result<Box<dyn MoveSession + '_>> {
        self.guard_reads()?;
        Ok(Box::new(mover::SqsMoveSession::begin(self).await?))
    }

    async fn backlog(&self, _for_redrive: bool) -> Result<Option<super::Backlog>> {
        // What a receive can get now: in-flight and delayed messages are not read by a run.
        Ok(Some(super::Backlog {
            messages: self.visible_now().await?,
            exact: false,
        }))
    }

    async fn identity(&self) -> Result<Option<String>> {
        Ok(Some(if self.arn.is_empty() {
            format!("sqs:{}", self.url)
        } else {
            format!("sqs:{}", self.arn)
        }))
    }

    async fn destination(&self, m: &Message) -> Result<Option<Address>> {
        if let Some(src) = m.source.as_deref().and_then(arn_address) {
            return Ok(Some(src));
        }
        let urls = self.source_urls().await?;
        Ok(match urls.as_slice() {
            [one] => Some(self.url_address(one)),
            _ => None,
        })
    }

    async fn verify_facts(&self, cfg: &QueueConfig) -> Result<VerifyFacts> {
        self.verify_queue(cfg).await
    }

    async fn close(&self) -> Result<()> {
        // A reader that stopped mid long poll (tail's idle timeout, Ctrl-C) dropped a request
        // the server still answers: wait for it, or its messages stay hidden after the release.
        let _quiet = self.inflight.write().await;
        let held = std::mem::take(&mut *self.held.lock().unwrap_or_else(|p| p.into_inner()));
        let others = self.others_in_flight(held.len()).await;
        self.release(&held).await?;
        self.read_accounting(others).await
    }

    fn unaccounted(&self) -> Vec<super::Unaccounted> {
        self.reads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .unaccounted
            .clone()
    }

    fn native_moves(&self) -> Option<&dyn NativeMoves> {
        Some(self)
    }

    fn sink(&self) -> Option<&dyn QueueSink> {
        Some(self)
    }
}

#[async_trait]
impl QueueSink for SqsBackend {
    async fn send(&self, batch: &[Message]) -> Result<Vec<SendOutcome>> {
        send::send(self, batch).await
    }

    fn check(&self, copy: &Message) -> std::result::Result<(), String> {
        send::prepare(self, 0, copy).map(|_| ())
    }

    fn notes(&self) -> Vec<String> {
        let ids = self.uncounted.lock().unwrap_or_else(|p| p.into_inner());
        if ids.is_empty() {
            return Vec::new();
        }
        let some: Vec<&str> = ids.iter().take(5).map(String::as_str).collect();
        vec![format!(
            "{} cop{} sent to {} without {} (e.g. {}): with it they would be over its MaximumMessageSize ({} bytes), so --max-redrives counts them from 0 again the next time they are redriven",
            ids.len(),
            if ids.len() == 1 { "y" } else { "ies" },
            self.addr,
            crate::message::REDRIVE_COUNT_ATTRIBUTE,
            some.join(", "),
            self.max_size
        )]
    }
}

/// `redrive --native`: the queue's own message move task.
#[async_trait]
impl NativeMoves for SqsBackend {
    async fn start(&self, to: Option<&Address>, rate: Option<f64>) -> Result<String> {
        let dest = match to {
            Some(Address::Sqs(_)) => {
                let b = SqsBackend::open(
                    to.expect("checked"),
                    &OpenOptions {
                        aws: self.opts.clone(),
                        as_target: true,
                        ..OpenOptions::default()
                    },
                )
                .await?;
                Some(b.arn.clone())
            }
            Some(other) => {
                return Err(Error::Unsupported {
                    backend: "sqs",
                    operation: "native redrive",
                    reason: format!("StartMessageMoveTask moves to SQS queues only, not {other}"),
                });
            }
            None => None,
        };
        native::start(&self.client, &self.arn, dest.as_deref(), rate).await
    }

    async fn tasks(&self) -> Result<Vec<native::MoveTask>> {
        native::list_tasks(&self.client, &self.arn).await
    }

    async fn cancel(&self, handle: &str) -> Result<u64> {
        native::cancel(&self.client, handle).await
    }
}
