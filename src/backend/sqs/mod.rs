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
use std::time::Duration;

use async_trait::async_trait;
use aws_config::{BehaviorVersion, Region};
use aws_sdk_sqs::Client;
use aws_sdk_sqs::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::types::{
    ChangeMessageVisibilityBatchRequestEntry, MessageSystemAttributeName, QueueAttributeName,
};
use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;
use tokio::sync::OnceCell;

use super::{
    AwsOptions, Capabilities, Check, Fact, Inspection, MessageStream, MoveOptions, MoveSession,
    OpenOptions, QueueBackend, ScanOptions, SendOutcome, Status, Table, TailOptions, Term,
    VerifyFacts,
};
use crate::address::{Address, SqsAddress};
use crate::config::{IdSource, QueueConfig, Retention};
use crate::error::{Error, Result};
use crate::message::{AttrValue, Attribute, ErrorInfo, Message};

mod journal;
pub mod native;
mod send;
mod session;

/// The attribute dlqctl adds to carry a stable id across a move when the producer gave none
/// (SQS gives every copy a new MessageId).
pub use crate::message::STABLE_ID_ATTRIBUTE;

/// Attributes read as the failure reason, when an application records one.
const ERROR_ATTRS: &[&str] = &[
    "error",
    "error_message",
    "errormessage",
    "x-error",
    "x-error-message",
    "exception",
    "exception_message",
    "failure_reason",
    "dlq_reason",
    "dead_letter_reason",
];
const ERROR_CLASS_ATTRS: &[&str] = &[
    "error_class",
    "errortype",
    "error_type",
    "exception_class",
    "exception_type",
    "x-error-class",
];

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
    sources: OnceCell<Vec<String>>,
}

/// Map an SDK error to the spec's kinds. AccessDenied is an error, never an empty queue.
pub(crate) fn sdk_err<E, R>(target: &str, e: SdkError<E, R>) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let target = target.to_string();
    match &e {
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) => {
            let text = DisplayErrorContext(&e).to_string();
            if text.contains("credentials") {
                Error::PermissionDenied {
                    target,
                    reason: "no AWS credentials found (set AWS_PROFILE, run `aws sso login`, or export AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)".into(),
                }
            } else {
                Error::Unreachable {
                    target,
                    reason: format!(
                        "{} (nothing was lost; re-run to continue)",
                        last_cause(&text)
                    ),
                }
            }
        }
        _ => {
            let code = e.code().unwrap_or("Unknown").to_string();
            let msg = e.message().unwrap_or_default().to_string();
            let short = code.rsplit('.').next().unwrap_or(&code).to_string();
            match short.as_str() {
                "NonExistentQueue" | "QueueDoesNotExist" | "ResourceNotFoundException" => {
                    Error::NotFound {
                        what: format!("queue {target}"),
                        detail:
                            "check the name, region and account (AWS_REGION, --region, the URL)"
                                .into(),
                    }
                }
                "AccessDenied"
                | "AccessDeniedException"
                | "InvalidClientTokenId"
                | "SignatureDoesNotMatch"
                | "UnrecognizedClientException"
                | "ExpiredToken"
                | "InvalidSecurity"
                | "KmsAccessDenied" => Error::PermissionDenied {
                    target,
                    reason: format!("{short}: {msg}"),
                },
                _ => Error::Backend {
                    target,
                    reason: if msg.is_empty() {
                        short
                    } else {
                        format!("{short}: {msg}")
                    },
                },
            }
        }
    }
}

/// The useful part of a dispatch error's chain, on one line.
fn last_cause(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    for (needle, say) in [
        ("connection refused", "connection refused"),
        ("timed out", "timed out"),
        ("dns error", "the endpoint's host name does not resolve"),
        (
            "failed to lookup",
            "the endpoint's host name does not resolve",
        ),
        ("certificate", "TLS certificate problem"),
        ("connection reset", "connection reset"),
    ] {
        if lower.contains(needle) {
            return say.to_string();
        }
    }
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(200)
        .collect()
}

/// A client for one queue's place (region, profile, endpoint).
async fn client_for(a: &SqsAddress, o: &AwsOptions) -> Result<Client> {
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if let Some(p) = &o.profile {
        loader = loader.profile_name(p);
    }
    if let Some(r) = a.region.clone().or_else(|| o.region.clone()) {
        loader = loader.region(Region::new(r));
    }
    let endpoint = o.endpoint_url.clone().or_else(|| {
        // A queue URL that is not AWS's (an emulator) is its own endpoint.
        a.url
            .as_deref()
            .and_then(|u| url::Url::parse(u).ok())
            .filter(|u| !u.host_str().unwrap_or_default().ends_with("amazonaws.com"))
            .map(|u| u.origin().ascii_serialization())
    });
    if let Some(e) = endpoint {
        loader = loader.endpoint_url(e);
    }
    let conf = loader.load().await;
    if conf.region().is_none() {
        return Err(Error::invalid_arg(
            "--region",
            "no AWS region: set AWS_REGION or a region in the AWS profile, pass --region, or use a queue URL or ARN",
        ));
    }
    let conf = aws_sdk_sqs::config::Builder::from(&conf)
        .interceptor(CountRequests)
        .build();
    Ok(Client::from_conf(conf))
}

static REQUESTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// SQS API requests sent by this process (attempts, retries included), for the benchmark.
pub fn requests() -> u64 {
    REQUESTS.load(std::sync::atomic::Ordering::Relaxed)
}

#[derive(Debug)]
struct CountRequests;

impl aws_sdk_sqs::config::Intercept for CountRequests {
    fn name(&self) -> &'static str {
        "dlqctl-count-requests"
    }

    fn read_before_transmit(
        &self,
        _ctx: &aws_sdk_sqs::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _rc: &aws_sdk_sqs::config::RuntimeComponents,
        _cfg: &mut aws_sdk_sqs::config::ConfigBag,
    ) -> std::result::Result<(), aws_sdk_sqs::error::BoxError> {
        REQUESTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

pub(crate) fn system_attr(
    m: &aws_sdk_sqs::types::Message,
    k: MessageSystemAttributeName,
) -> Option<&str> {
    m.attributes().and_then(|a| a.get(&k)).map(String::as_str)
}

fn millis(s: Option<&str>) -> Option<DateTime<Utc>> {
    s.and_then(|v| v.parse::<i64>().ok())
        .and_then(|ms| Utc.timestamp_millis_opt(ms).single())
}

/// `arn:aws:sqs:REGION:ACCOUNT:NAME` → an address.
pub(crate) fn arn_address(arn: &str) -> Option<Address> {
    Address::parse(arn).ok()
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
            sources: OnceCell::new(),
        })
    }

    fn shown(&self) -> String {
        self.addr.to_string()
    }

    /// ApproximateNumberOfMessages now (a stop-rule input, never the only one).
    pub(crate) async fn visible_now(&self) -> Result<u64> {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .send()
            .await
            .map_err(|e| sdk_err(&self.shown(), e))?;
        Ok(out
            .attributes()
            .and_then(|a| a.get(&QueueAttributeName::ApproximateNumberOfMessages))
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
                    "{} has its own RedrivePolicy (maxReceiveCount {}, to {}): every read counts as a receive and can move messages onward. Pass --allow-onward-redrive to read anyway",
                    self.name,
                    p["maxReceiveCount"],
                    p["deadLetterTargetArn"].as_str().unwrap_or("?")
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn visibility(&self) -> i32 {
        self.opts.visibility_timeout.unwrap_or(300).clamp(1, 43_200)
    }

    pub(crate) fn to_message(&self, m: &aws_sdk_sqs::types::Message) -> Message {
        let mut attributes: Vec<Attribute> = m
            .message_attributes()
            .map(|a| {
                a.iter()
                    .map(|(name, v)| {
                        let ty = v.data_type().to_string();
                        let value = if ty.starts_with("Binary") {
                            AttrValue::Binary {
                                data_type: ty.into(),
                                value: v
                                    .binary_value()
                                    .map(|b| b.as_ref().to_vec())
                                    .unwrap_or_default(),
                            }
                        } else {
                            AttrValue::Text {
                                data_type: ty.into(),
                                value: v.string_value().unwrap_or_default().to_string(),
                            }
                        };
                        Attribute {
                            name: name.clone(),
                            value,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        attributes.sort_by(|a, b| a.name.cmp(&b.name));
        let native_id = m.message_id().unwrap_or_default().to_string();
        let find = |names: &[&str]| {
            attributes
                .iter()
                .find(|a| names.contains(&a.name.to_ascii_lowercase().as_str()))
                .map(|a| a.value.display())
        };
        let error = match (find(ERROR_CLASS_ATTRS), find(ERROR_ATTRS)) {
            (None, None) => None,
            (class, message) => Some(ErrorInfo {
                class,
                message,
                trace: None,
            }),
        };
        let mut msg = Message {
            id: native_id.clone(),
            native_id,
            body: m.body().unwrap_or_default().as_bytes().to_vec(),
            key: None,
            group: system_attr(m, MessageSystemAttributeName::MessageGroupId).map(str::to_string),
            dedup_id: system_attr(m, MessageSystemAttributeName::MessageDeduplicationId)
                .map(str::to_string),
            partition: None,
            receive_count: system_attr(m, MessageSystemAttributeName::ApproximateReceiveCount)
                .and_then(|v| v.parse().ok()),
            enqueued_at: millis(system_attr(m, MessageSystemAttributeName::SentTimestamp)),
            dead_lettered_at: None,
            error,
            source: system_attr(m, MessageSystemAttributeName::DeadLetterQueueSourceArn)
                .map(str::to_string),
            meta: Default::default(),
            attributes,
            id_attribute: None,
        };
        msg.meta.insert("queue", Value::String(self.name.clone()));
        if let Some(seq) = system_attr(m, MessageSystemAttributeName::SequenceNumber) {
            msg.meta
                .insert("sequence_number", Value::String(seq.to_string()));
        }
        if let Some(Attribute { value, .. }) = msg
            .attributes
            .iter()
            .find(|a| a.name == STABLE_ID_ATTRIBUTE)
        {
            msg.id = value.display();
        }
        super::apply_id_source(&mut msg, self.id.as_ref());
        msg
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

    /// The queues whose RedrivePolicy points here (paginated).
    async fn source_urls(&self) -> Result<&Vec<String>> {
        self.sources
            .get_or_try_init(|| async {
                let mut out = Vec::new();
                let mut token: Option<String> = None;
                loop {
                    let r = self
                        .client
                        .list_dead_letter_source_queues()
                        .queue_url(&self.url)
                        .max_results(1000)
                        .set_next_token(token.clone())
                        .send()
                        .await
                        .map_err(|e| sdk_err(&self.shown(), e))?;
                    out.extend(r.queue_urls().iter().cloned());
                    token = r.next_token().map(str::to_string);
                    if token.is_none() {
                        break;
                    }
                }
                Ok(out)
            })
            .await
    }

    async fn queue_attrs(&self, url: &str) -> Result<HashMap<String, String>> {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::All)
            .send()
            .await
            .map_err(|e| sdk_err(url, e))?;
        Ok(out
            .attributes()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.as_str().to_string(), v.clone()))
                    .collect()
            })
            .unwrap_or_default())
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

fn secs(v: Option<u64>) -> String {
    v.map(|s| crate::output::fmt_duration(Duration::from_secs(s)))
        .unwrap_or_else(|| "-".into())
}

#[async_trait]
impl QueueBackend for SqsBackend {
    fn address(&self) -> &Address {
        &self.addr
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            read: true,
            tail: true,
            delete: true,
            write: true,
            per_message_destination: true,
            read_side_effect: Some(
                "increments each message's ApproximateReceiveCount (SQS has no side-effect-free read) and hides it until the read ends",
            ),
        }
    }

    async fn inspect(&self, _classifier: &crate::classify::Classifier) -> Result<Inspection> {
        let mut ins = Inspection {
            queue: self.shown(),
            backend: "sqs",
            ..Inspection::default()
        };
        let n = |k: &str| self.attr_u64(k).unwrap_or(0);
        ins.facts
            .push(Fact::new("queue_url", self.url.clone(), self.url.clone()));
        ins.facts
            .push(Fact::new("arn", self.arn.clone(), self.arn.clone()));
        ins.facts.push(Fact::new(
            "type",
            if self.fifo { "fifo" } else { "standard" },
            if self.fifo { "FIFO" } else { "standard" },
        ));
        ins.facts.push(Fact::new(
            "messages",
            n("ApproximateNumberOfMessages")
                + n("ApproximateNumberOfMessagesNotVisible")
                + n("ApproximateNumberOfMessagesDelayed"),
            "(approximate) visible + in flight + delayed",
        ));
        if let Some(f) = ins.facts.last_mut() {
            f.display = format!("{} (approximate)", f.value);
        }
        ins.facts.push(Fact::new(
            "visible",
            n("ApproximateNumberOfMessages"),
            n("ApproximateNumberOfMessages").to_string(),
        ));
        ins.facts.push(Fact::new(
            "in_flight",
            n("ApproximateNumberOfMessagesNotVisible"),
            n("ApproximateNumberOfMessagesNotVisible").to_string(),
        ));
        ins.facts.push(Fact::new(
            "delayed",
            n("ApproximateNumberOfMessagesDelayed"),
            n("ApproximateNumberOfMessagesDelayed").to_string(),
        ));
        ins.facts.push(Fact::new(
            "retention_seconds",
            self.attr_u64("MessageRetentionPeriod"),
            secs(self.attr_u64("MessageRetentionPeriod")),
        ));
        ins.facts.push(Fact::new(
            "visibility_timeout_seconds",
            self.attr_u64("VisibilityTimeout"),
            secs(self.attr_u64("VisibilityTimeout")),
        ));
        ins.facts.push(Fact::new(
            "maximum_message_size",
            self.max_size as u64,
            format!("{} bytes", self.max_size),
        ));
        if self.fifo {
            let cbd = self
                .attrs
                .get("ContentBasedDeduplication")
                .is_some_and(|v| v == "true");
            ins.facts.push(Fact::new(
                "content_based_deduplication",
                cbd,
                cbd.to_string(),
            ));
        }
        if let Some(t) = millis(
            self.attrs
                .get("CreatedTimestamp")
                .map(|s| format!("{s}000"))
                .as_deref(),
        ) {
            ins.facts.push(Fact::new(
                "created",
                t.to_rfc3339(),
                t.format("%Y-%m-%d %H:%M UTC").to_string(),
            ));
        }
        match self.own_redrive_policy() {
            Some(p) => {
                ins.facts
                    .push(Fact::new("own_redrive_policy", p.clone(), p.to_string()));
                ins.notes.push("this queue has its own RedrivePolicy: reading it (peek, tail, export, classify) can push messages onward, so dlqctl refuses without --allow-onward-redrive".into());
            }
            None => ins
                .facts
                .push(Fact::new("own_redrive_policy", Value::Null, "none")),
        }
        if let Some(p) = self.attrs.get("RedriveAllowPolicy") {
            ins.facts.push(Fact::new(
                "redrive_allow_policy",
                serde_json::from_str::<Value>(p).unwrap_or(Value::String(p.clone())),
                p.clone(),
            ));
        }
        let mut sources = Table {
            title: "source queues (RedrivePolicy pointing here)".into(),
            columns: vec![
                "queue".into(),
                "maxReceiveCount".into(),
                "retention".into(),
                "visibility".into(),
                "type".into(),
            ],
            rows: Vec::new(),
        };
        match self.source_urls().await {
            Ok(urls) => {
                for u in urls {
                    let a = self.queue_attrs(u).await.unwrap_or_default();
                    let policy: Value = a
                        .get("RedrivePolicy")
                        .and_then(|p| serde_json::from_str(p).ok())
                        .unwrap_or(Value::Null);
                    sources.rows.push(vec![
                        u.clone().into(),
                        policy["maxReceiveCount"].clone(),
                        secs(a.get("MessageRetentionPeriod").and_then(|v| v.parse().ok())).into(),
                        secs(a.get("VisibilityTimeout").and_then(|v| v.parse().ok())).into(),
                        (if a.get("FifoQueue").is_some_and(|v| v == "true") {
                            "FIFO"
                        } else {
                            "standard"
                        })
                        .into(),
                    ]);
                }
                if urls.is_empty() {
                    ins.notes
                        .push("no queue's RedrivePolicy points here".into());
                }
            }
            Err(e) => ins.notes.push(format!("ListDeadLetterSourceQueues: {e}")),
        }
        ins.tables.push(sources);
        match native::list_tasks(&self.client, &self.arn).await {
            Ok(tasks) if !tasks.is_empty() => ins.tables.push(native::tasks_table(&tasks)),
            Ok(_) => ins.facts.push(Fact::new(
                "move_tasks",
                Value::Array(vec![]),
                "none running",
            )),
            Err(e) => ins.notes.push(format!("native move tasks: {e}")),
        }
        ins.notes.push("SQS reports no message ages without receiving; `dlqctl peek` shows them (and counts as a receive)".into());
        Ok(ins)
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
        Ok(Box::new(session::SqsMoveSession::begin(self).await?))
    }

    async fn send(&self, batch: &[Message]) -> Result<Vec<SendOutcome>> {
        send::send(self, batch).await
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
        let mut facts = VerifyFacts::default();
        let dlq_ret = self.attr_u64("MessageRetentionPeriod").unwrap_or(345_600);
        let sources: Vec<String> = match &cfg.source {
            Some(s) => match Address::parse(s) {
                Ok(Address::Sqs(a)) => match a.url {
                    Some(u) => vec![u],
                    None => {
                        let r = self
                            .client
                            .get_queue_url()
                            .queue_name(&a.name)
                            .send()
                            .await
                            .map_err(|e| sdk_err(s, e))?;
                        r.queue_url()
                            .map(|u| vec![u.to_string()])
                            .unwrap_or_default()
                    }
                },
                _ => Vec::new(),
            },
            None => self.source_urls().await?.clone(),
        };
        let check = |id: &str, title: &str, status: Status, detail: String| {
            Check::new(id, title, status, detail)
        };
        if sources.is_empty() {
            facts.checks.push(check("sqs-redrive-policy", "A source's RedrivePolicy points at this DLQ", Status::Fail, format!("no queue's RedrivePolicy targets {} (set `source` in dlqctl.toml or attach a RedrivePolicy)", self.arn)));
        }
        let mut longest_src = 0u64;
        for u in &sources {
            let a = self.queue_attrs(u).await?;
            let name = u.rsplit('/').next().unwrap_or(u);
            let src_ret: u64 = a
                .get("MessageRetentionPeriod")
                .and_then(|v| v.parse().ok())
                .unwrap_or(345_600);
            longest_src = longest_src.max(src_ret);
            let src_fifo = a.get("FifoQueue").is_some_and(|v| v == "true");
            let policy: Option<Value> = a
                .get("RedrivePolicy")
                .and_then(|p| serde_json::from_str(p).ok());
            match &policy {
                Some(p) if p["deadLetterTargetArn"].as_str() == Some(self.arn.as_str()) => {
                    facts.checks.push(check(
                        "sqs-redrive-policy",
                        "The source's RedrivePolicy points at this DLQ",
                        Status::Pass,
                        format!("{name} → {}", self.name),
                    ));
                    let mrc = p["maxReceiveCount"]
                        .as_u64()
                        .or_else(|| p["maxReceiveCount"].as_str().and_then(|s| s.parse().ok()))
                        .unwrap_or(0);
                    let (st, why) = match mrc {
                        0 | 1 => (
                            Status::Fail,
                            "a message can be dead-lettered after one receive that never reached a consumer",
                        ),
                        2..=3 => (
                            Status::Warn,
                            "few retries: transient failures may be dead-lettered",
                        ),
                        _ => (Status::Pass, "room for retries"),
                    };
                    facts.checks.push(check(
                        "sqs-max-receive-count",
                        "maxReceiveCount leaves room for retries (FAIL at 1, WARN at 2-3)",
                        st,
                        format!("{name}: maxReceiveCount {mrc}: {why}"),
                    ));
                }
                Some(p) => facts.checks.push(check(
                    "sqs-redrive-policy",
                    "The source's RedrivePolicy points at this DLQ",
                    Status::Fail,
                    format!(
                        "{name}'s RedrivePolicy targets {}, not {}",
                        p["deadLetterTargetArn"].as_str().unwrap_or("?"),
                        self.arn
                    ),
                )),
                None => facts.checks.push(check(
                    "sqs-redrive-policy",
                    "The source's RedrivePolicy points at this DLQ",
                    Status::Fail,
                    format!("{name} has no RedrivePolicy"),
                )),
            }
            facts.checks.push(if src_fifo == self.fifo {
                check(
                    "sqs-fifo-match",
                    "Source and DLQ are the same type",
                    Status::Pass,
                    format!("both {}", if self.fifo { "FIFO" } else { "standard" }),
                )
            } else {
                check(
                    "sqs-fifo-match",
                    "Source and DLQ are the same type",
                    Status::Fail,
                    format!(
                        "{name} is {} but {} is {}: SQS requires FIFO with FIFO",
                        if src_fifo { "FIFO" } else { "standard" },
                        self.name,
                        if self.fifo { "FIFO" } else { "standard" }
                    ),
                )
            });
            if !self.fifo {
                facts.checks.push(if dlq_ret >= src_ret {
                    check("sqs-dlq-retention", "DLQ retention ≥ source retention", Status::Pass, format!("{} ≥ {} ({name})", secs(Some(dlq_ret)), secs(Some(src_ret))))
                } else {
                    check("sqs-dlq-retention", "DLQ retention ≥ source retention", Status::Fail, format!("{} < {} ({name}): a standard queue keeps the original enqueue time, so messages can expire in the DLQ soon after they arrive", secs(Some(dlq_ret)), secs(Some(src_ret))))
                });
            }
            if let Some(h) = cfg.handler_timeout {
                let vis: u64 = a
                    .get("VisibilityTimeout")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(30);
                facts.checks.push(if Duration::from_secs(vis) > h {
                    check("sqs-visibility", "Visibility timeout exceeds the handler timeout", Status::Pass, format!("{name}: {} > {}", secs(Some(vis)), crate::output::fmt_duration(h)))
                } else {
                    check("sqs-visibility", "Visibility timeout exceeds the handler timeout", Status::Fail, format!("{name}: {} <= handler timeout {}: a slow handler runs at the same time as its own redelivery", secs(Some(vis)), crate::output::fmt_duration(h)))
                });
            }
        }
        // The arithmetic: standard queues keep the first enqueue time (a copy can arrive until
        // the longer of the two retentions ends); FIFO queues reset it (they add up).
        if self.fifo {
            facts.redelivery.push(Term {
                label: "source retention".into(),
                value: Retention::For(Duration::from_secs(longest_src)),
                source: "MessageRetentionPeriod of the source".into(),
            });
            facts.redelivery.push(Term {
                label: "DLQ retention (FIFO: counted from dead-lettering)".into(),
                value: Retention::For(Duration::from_secs(dlq_ret)),
                source: "MessageRetentionPeriod of the DLQ".into(),
            });
        } else {
            facts.redelivery.push(Term {
                label: "max(source, DLQ) retention (standard: counted from first enqueue)".into(),
                value: Retention::For(Duration::from_secs(longest_src.max(dlq_ret))),
                source: "MessageRetentionPeriod of source and DLQ".into(),
            });
        }
        Ok(facts)
    }

    async fn count_older_than(&self, _age: Duration) -> Result<Option<u64>> {
        // Ages need a receive, which has side effects: not cheap on SQS.
        Ok(None)
    }

    async fn oldest(&self) -> Result<Option<DateTime<Utc>>> {
        Ok(None)
    }

    async fn close(&self) -> Result<()> {
        // A reader that stopped mid long poll (tail's idle timeout, Ctrl-C) dropped a request
        // the server still answers: wait for it, or its messages stay hidden after the release.
        let _quiet = self.inflight.write().await;
        let held = std::mem::take(&mut *self.held.lock().unwrap_or_else(|p| p.into_inner()));
        self.release(&held).await
    }

    async fn start_native_move(&self, to: Option<&Address>, rate: Option<f64>) -> Result<String> {
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

    async fn native_moves(&self) -> Result<Vec<native::MoveTask>> {
        native::list_tasks(&self.client, &self.arn).await
    }

    async fn cancel_native_move(&self, handle: &str) -> Result<u64> {
        native::cancel(&self.client, handle).await
    }
}
