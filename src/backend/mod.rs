//! Backends behind one object-safe trait, chosen by the address's URL scheme.
//!
//! The layers above see only [`QueueBackend`] and [`MoveSession`]; each backend lives in
//! its own module. An operation a backend cannot do fails up front with
//! [`Error::Unsupported`], never half-way.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use futures::Stream;
use futures::future::BoxFuture;
use serde::Serialize;

use crate::address::Address;
use crate::config::{IdSource, QueueConfig, Retention};
use crate::error::{Error, Result};
use crate::message::Message;

pub mod file;
mod inspection;
#[cfg(feature = "kafka")]
pub mod kafka;
#[cfg(test)]
pub mod memory;
pub mod passing;
#[cfg(feature = "postgres")]
pub mod postgres;
// RabbitMQ and Redis: `address.rs` is built always (the address registry names it), the rest
// of the folder with the feature.
pub mod rabbitmq;
pub mod read_session;
pub mod redis;
mod session;
#[cfg(feature = "sqs")]
pub mod sqs;

pub type MessageStream<'a> = Pin<Box<dyn Stream<Item = Result<Message>> + Send + 'a>>;

/// The outcomes of copies already handed to a target, one per message, in order; resolved once
/// the target has answered for each (see [`QueueBackend::send_start`]).
pub use inspection::{Fact, Inspection, Table};
pub use session::{
    Claim, LocalBatch, LocalMoves, LocalNext, MoveOptions, MoveSession, SendOutcome, Ticket,
    Unaccounted,
};

pub type PendingSend = Pin<Box<dyn Future<Output = Result<Vec<SendOutcome>>> + Send + 'static>>;

/// What a backend can and cannot do, reported before any work starts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Capabilities {
    /// Can follow new arrivals.
    pub tail: bool,
    /// Can remove one message after its copy is accepted elsewhere (redrive).
    pub delete: bool,
    /// Why not, where `delete` is false for a reason of this queue's own (a RabbitMQ stream).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_delete: Option<&'static str>,
    /// Copies and settles in one transaction with a target on the same cluster
    /// (`redrive --exactly-once`; Kafka).
    pub exactly_once: bool,
    /// Its sink takes copies only as a purge's archive (appended and synced): a redrive or
    /// replay into it is `export` (a JSON Lines file).
    pub archive_only: bool,
    /// A replay reads up to ends fixed when it starts (Kafka's end offsets), so a range can be
    /// replayed into the queue itself (reprocessing) and the replay still ends.
    pub bounded_reads: bool,
    /// Reading changes something, and what (e.g. SQS receive counts).
    pub read_side_effect: Option<&'static str>,
    /// Can tell each message's own source queue (SQS DeadLetterQueueSourceArn or the queues
    /// whose RedrivePolicy points here; Kafka original-topic headers).
    pub per_message_destination: bool,
}

/// How a non-destructive read starts.
#[derive(Clone, Debug, Default)]
pub struct ScanOptions {
    /// Stop after this many messages (None: all).
    pub limit: Option<u64>,
    /// Messages to read per round trip.
    pub page_size: usize,
    /// Read what a redrive would read (a redrive's dry run): on Kafka, from the redrive
    /// group's committed offsets instead of the low watermarks.
    pub as_redrive: bool,
    /// With `as_redrive`, read what a purge would (a purge's dry run and its count): a BullMQ
    /// id in failed without a job hash is a message then, one a purge removes; a redrive's
    /// read counts it as left instead ([`QueueBackend::unaccounted`]).
    pub purge: bool,
}

/// How many messages a queue holds, where it can tell cheaply (the plan's count, the
/// progress bar's length).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backlog {
    pub messages: u64,
    /// False where the number is an estimate (SQS's approximate counts, Kafka offsets, which
    /// may have gaps).
    pub exact: bool,
}

#[derive(Clone, Debug)]
pub struct TailOptions {
    pub from_start: bool,
    pub poll_interval: Duration,
}

/// One verify check's result, with the numbers behind it.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub id: String,
    pub title: String,
    pub status: Status,
    pub detail: String,
}

impl Check {
    pub fn new(id: &str, title: &str, status: Status, detail: impl Into<String>) -> Check {
        Check {
            id: id.into(),
            title: title.into(),
            status,
            detail: detail.into(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Pass,
    Warn,
    Fail,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Status::Pass => "PASS",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        })
    }
}

/// One term of the redelivery arithmetic: how long after first delivery a copy can still
/// arrive is the sum of the terms.
#[derive(Clone, Debug, Serialize)]
pub struct Term {
    pub label: String,
    #[serde(serialize_with = "ser_retention")]
    pub value: Retention,
    /// Where the number comes from (`queue attribute`, `declared in dlqctl.toml`, `default`).
    pub source: String,
}

fn ser_retention<S: serde::Serializer>(
    r: &Retention,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match r {
        Retention::For(d) => s.serialize_u64(d.as_secs()),
        Retention::Forever => s.serialize_str("forever"),
    }
}

/// What a backend knows for `verify`.
#[derive(Clone, Debug, Default)]
pub struct VerifyFacts {
    /// Terms of the longest time after first delivery at which a copy can still arrive,
    /// excluding the declared replay window (added by verify).
    pub redelivery: Vec<Term>,
    /// Backend-specific checks (SQS policy checks, Kafka topic checks, job-system pruning).
    pub checks: Vec<Check>,
    /// How to keep dead letters for less on this backend, for the fix of check 1 when the
    /// dedupe retention is too short (None: `dlq_retention / a pg_cron job`, PostgreSQL's).
    pub shorten: Option<String>,
    /// The oldest dead letter, for check 7 where the backend cannot count by age
    /// ([`QueueBackend::count_older_than`] gives None).
    pub oldest: Oldest,
}

/// What a backend knows of its oldest message without reading the others.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Oldest {
    #[default]
    Unknown,
    /// The queue holds nothing.
    Empty,
    /// First enqueued then (RabbitMQ: the head message's `timestamp` property).
    At(chrono::DateTime<chrono::Utc>),
    /// The backend can tell it, but not this time: why (RabbitMQ: the management API has not
    /// reported the queue's head message yet, the head message has no `timestamp`).
    Unreported(&'static str),
}

#[async_trait]
pub trait QueueBackend: Send + Sync {
    fn address(&self) -> &Address;
    fn capabilities(&self) -> Capabilities;
    async fn inspect(&self, classifier: &crate::classify::Classifier) -> Result<Inspection>;
    /// Read messages, oldest first, without removing them.
    async fn scan(&self, opts: ScanOptions) -> Result<MessageStream<'_>>;
    /// Follow arrivals until the stream is dropped.
    async fn tail(&self, opts: TailOptions) -> Result<MessageStream<'_>>;
    /// Can a move session of this queue move messages into `target` by itself, atomically
    /// (e.g. in one database transaction)?
    fn can_move_locally(&self, _target: &Address) -> bool {
        false
    }
    /// Why every read of this queue would be refused (a read could push its messages onward:
    /// an SQS DLQ with its own RedrivePolicy, a RabbitMQ quorum queue with a delivery limit,
    /// without `--allow-onward-redrive`), checked by a run before its plan is shown, so that
    /// a refused run shows no plan. Reads check it again themselves.
    fn refuse_reads(&self) -> Result<()> {
        Ok(())
    }
    /// Begin a redrive from this queue.
    async fn begin_move(&self, opts: MoveOptions) -> Result<Box<dyn MoveSession + '_>>;
    /// The writing side, where this queue accepts copies (a redrive's or replay's target).
    /// None: it cannot be a target (a job system, a JSON Lines file).
    fn sink(&self) -> Option<&dyn QueueSink> {
        None
    }
    /// What this queue resolves to, whatever URL named it (SQS: the queue's ARN; Kafka: the
    /// cluster and topic; PostgreSQL: the server instance, database and table). Two backends
    /// with the same identity are the same queue. `None`: the backend cannot tell.
    async fn identity(&self) -> Result<Option<String>> {
        Ok(None)
    }
    /// How many messages there are to read (`for_redrive`: what a redrive would still look
    /// at: on Kafka, from the redrive group's committed offsets), where that is cheap.
    async fn backlog(&self, _for_redrive: bool) -> Result<Option<Backlog>> {
        Ok(None)
    }
    /// Whether removing a message here is committing a position past it (Kafka: the redrive
    /// group's offset), so that settling one message settles every message before it in its
    /// partition ([`Message::partition`]). A filtered run then passes over the skipped
    /// messages before the last one it moves in a partition: its dry run and its summary count
    /// them (`committed_past`). False where each message is removed on its own.
    fn settles_by_position(&self) -> bool {
        false
    }
    /// What a redrive or purge does to each message of this source, in the backend's own
    /// terms: the plan's "operation" row. The default fits a queue that removes one message at
    /// a time.
    fn describe_move(&self, how: &MoveHow) -> String {
        if how.purge {
            let remove = if how.archived {
                "remove it"
            } else {
                "remove each selected message"
            };
            archive_then(how.archived, remove)
        } else {
            "copy each message to the target, then remove it from the dead-letter queue".into()
        }
    }
    /// Whether a redrive into this very queue retries each message where it is (a job
    /// system's own retry), rather than being refused as a copy into the queue being read.
    fn retries_in_place(&self) -> bool {
        false
    }
    /// Whether a retry in place can retry a job changed (`dlqctl edit`: its body as edited),
    /// through [`MoveSession::move_locally_edited`].
    fn retries_edits_in_place(&self) -> bool {
        false
    }
    /// Why a retry in place would refuse `m` before trying (a dry run's prediction, as
    /// [`QueueSink::check`] is a target's); None: it would try.
    fn in_place_refusal(&self, _m: &Message) -> Option<String> {
        None
    }
    /// What a filtered run costs to read, where reading has a price the plan should name
    /// (SQS: receive calls, receive counts, billing). `backlog`: the plan's count, if any.
    fn describe_filtered_read(&self, _backlog: Option<Backlog>) -> Option<String> {
        None
    }
    /// Why a redrive finds nothing to read, where the queue can tell more than "empty" (Kafka:
    /// the redrive group has consumed every record the topic still holds). Shown in the plan
    /// and in the summary of a run that examined nothing.
    async fn nothing_pending(&self) -> Result<Option<String>> {
        Ok(None)
    }
    /// What a redrive would leave of what [`QueueBackend::backlog`] counts, known without
    /// reading the messages (BullMQ: ids in the failed set with no job hash, which a redrive
    /// leaves and reports apart): the plan counts it apart, as the summary does. Asked only
    /// when a plan is shown.
    async fn left_by_redrive(&self) -> Result<Option<Unaccounted>> {
        Ok(None)
    }
    /// Where a redrive of `m` goes when the user did not say (None: unknown).
    async fn destination(&self, m: &Message) -> Result<Option<Address>>;
    /// Facts for `verify`.
    async fn verify_facts(&self, cfg: &QueueConfig) -> Result<VerifyFacts>;
    /// Number of messages whose age (from first enqueue) exceeds `age`, where cheap.
    async fn count_older_than(&self, _age: Duration) -> Result<Option<u64>> {
        Ok(None)
    }
    /// The service's own move task, where there is one (SQS: StartMessageMoveTask).
    fn native_moves(&self) -> Option<&dyn NativeMoves> {
        None
    }
    /// Give back whatever reads still hold (SQS: make browsed messages visible again).
    async fn close(&self) -> Result<()> {
        Ok(())
    }
    /// What the reads under way cannot see, known as soon as a read has started: messages
    /// the queue holds that another reader holds at the moment (RabbitMQ: unacknowledged by
    /// another consumer or channel, where the management API counts them). A read that
    /// reports any is not complete: classify and check say `complete: false`, export ends
    /// with exit 1.
    fn unseen(&self) -> Vec<Unaccounted> {
        Vec::new()
    }
    /// After [`QueueBackend::close`]: what the reads left unexamined, where the backend can
    /// tell (an SQS FIFO queue hands out nothing more of a group while a read holds one of
    /// its messages), so that a dry run says so.
    fn unaccounted(&self) -> Vec<Unaccounted> {
        Vec::new()
    }
}

/// How a run moves, for [`QueueBackend::describe_move`].
#[derive(Clone, Copy, Debug, Default)]
pub struct MoveHow {
    /// A purge (otherwise a redrive).
    pub purge: bool,
    /// A purge keeps a copy in an archive first.
    pub archived: bool,
    /// A redrive into the queue itself, which retries each message where it is.
    pub in_place: bool,
    /// The backend moves each batch itself ([`QueueBackend::can_move_locally`]).
    pub local: bool,
    /// `--exactly-once`.
    pub exactly_once: bool,
}

/// A purge's words: the archive copy first, when there is one, then `remove`.
pub fn archive_then(archived: bool, remove: &str) -> String {
    if archived {
        format!("copy each message to the archive, then {remove}")
    } else {
        remove.to_string()
    }
}

/// The writing side of a queue: it accepts copies.
#[async_trait]
pub trait QueueSink: Send + Sync {
    /// Accept copies of `batch`; one outcome per message, in order. An `Err` means the target
    /// itself failed (nothing in this batch may be assumed sent).
    async fn send(&self, batch: &[Message]) -> Result<Vec<SendOutcome>>;
    /// Hand copies of `batch` to the target and return their outcomes to come, so that the next
    /// batch can be read while the target answers (Kafka's producer queues records and reports
    /// each delivery later). The default sends now, as [`QueueSink::send`] does.
    async fn send_start(&self, batch: &[Message]) -> Result<PendingSend> {
        let outcomes = self.send(batch).await;
        Ok(Box::pin(futures::future::ready(outcomes)))
    }
    /// Why the target would refuse this copy before sending anything (SQS: a binary body, one
    /// over MaximumMessageSize; a table with no column for its headers; a property RabbitMQ
    /// cannot carry): the refusals a dry run predicts. What only the server decides (a
    /// constraint, an unroutable copy) shows in a real run. The default refuses nothing.
    fn check(&self, _copy: &Message) -> std::result::Result<(), String> {
        Ok(())
    }

    /// What the target did to copies that the run's summary should say (SQS: copies that went
    /// without the loop guard's count to fit the size limit). The default says nothing.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A queue service's own move task (SQS: StartMessageMoveTask, ListMessageMoveTasks,
/// CancelMessageMoveTask), for `redrive --native`.
#[async_trait]
pub trait NativeMoves: Send + Sync {
    /// Start a move of every message to `to` (None: each message's source); returns the
    /// task's handle.
    async fn start(&self, to: Option<&Address>, rate: Option<f64>) -> Result<String>;
    /// The queue's recent tasks, newest first.
    async fn tasks(&self) -> Result<Vec<NativeMoveTask>>;
    /// Cancel a running task; returns how many it had moved.
    async fn cancel(&self, handle: &str) -> Result<u64>;
}

/// A server-side move task (SQS message move task).
#[derive(Clone, Debug, Serialize)]
pub struct NativeMoveTask {
    pub handle: Option<String>,
    pub status: String,
    pub source: String,
    pub destination: Option<String>,
    pub moved: u64,
    pub to_move: Option<u64>,
    pub rate: Option<i32>,
    pub failure: Option<String>,
    pub started_ms: i64,
}

/// Per-queue settings a backend is opened with.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    pub id: Option<IdSource>,
    pub columns: std::collections::BTreeMap<String, String>,
    /// Whether this backend is opened as a redrive/replay target (different table checks).
    pub as_target: bool,
    pub aws: AwsOptions,
    /// The backends' own sections of the config file (`[kafka]`, `[rabbitmq]`).
    pub backends: crate::config::BackendConfig,
    /// Kafka: move with transactions (`redrive --exactly-once`).
    pub exactly_once: bool,
}

/// AWS settings from the command line (the SDK's standard environment and profiles apply
/// underneath).
#[derive(Clone, Debug, Default)]
pub struct AwsOptions {
    pub profile: Option<String>,
    pub region: Option<String>,
    pub endpoint_url: Option<String>,
    /// Read a DLQ that has its own RedrivePolicy although receives may push messages onward.
    pub allow_onward_redrive: bool,
    /// How FIFO targets get a MessageDeduplicationId.
    pub dedup: DedupStrategy,
    /// Seconds a claimed message stays hidden before the heartbeat extends it.
    pub visibility_timeout: Option<i32>,
    /// Receive/send batches in flight at once.
    pub parallel: usize,
    /// Seconds a receive waits for messages (long polling; `DLQCTL_SQS_WAIT_SECONDS`, 0-20).
    pub wait_seconds: i32,
    /// Where the redrive journal lives (`DLQCTL_STATE_DIR`; default the user's state
    /// directory).
    pub state_dir: Option<std::path::PathBuf>,
    /// How many messages a run may hold in flight before it stops taking more (None: the
    /// default, under SQS's limit; `DLQCTL_SQS_HOLD_LIMIT`, for tests).
    pub hold_limit: Option<usize>,
}

/// How a FIFO target gets each copy's MessageDeduplicationId.
///
/// SQS FIFO drops, silently, a send whose deduplication id was used in the last 5 minutes:
/// SendMessage succeeds and nothing is enqueued. A redrive soon after the original send that
/// reuses the original id would delete the dead letter and lose the message, so the default
/// derives a fresh id per run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DedupStrategy {
    /// A new id for each run, derived from the stable id: retries inside one run are still
    /// deduplicated by SQS, and no copy collides with the original send's 5-minute window.
    #[default]
    PerRun,
    /// The message's own deduplication id if it has one, else its stable id (inside the
    /// 5-minute window SQS drops the copy).
    Keep,
    /// Always the stable id (same caveat as keep).
    StableId,
}

/// SQS API requests this process has sent, when any (a run's summary reports them).
pub fn sqs_requests() -> Option<u64> {
    #[cfg(feature = "sqs")]
    {
        let n = sqs::requests();
        if n > 0 {
            return Some(n);
        }
    }
    None
}

/// How ops open a queue: the real backends, or in unit tests the in-memory queues of a
/// [`memory::Queues`] (by address).
#[derive(Clone, Default)]
pub struct Opener {
    #[cfg(test)]
    pub memory: Option<std::sync::Arc<memory::Queues>>,
}

impl Opener {
    pub async fn open(&self, addr: &Address, opts: &OpenOptions) -> Result<Box<dyn QueueBackend>> {
        #[cfg(test)]
        if let Some(m) = &self.memory {
            return m.open(addr, opts);
        }
        open(addr, opts).await
    }
}

/// How a backend opens one of its addresses (`open` in the backend's folder).
pub type OpenFn =
    for<'a> fn(&'a Address, &'a OpenOptions) -> BoxFuture<'a, Result<Box<dyn QueueBackend>>>;

/// The other half of the backend registry (the first, `address::BACKENDS`, is how addresses
/// parse and show): how each backend this build has opens, by its registry name, one line each
/// behind its feature. Opening names the backend's code, which sits above the address layer,
/// so it cannot be in the same table. A registered backend missing here was not built.
pub const OPENERS: &[(&str, OpenFn)] = &[
    #[cfg(feature = "sqs")]
    ("sqs", sqs::open),
    #[cfg(feature = "kafka")]
    ("kafka", kafka::open),
    #[cfg(feature = "postgres")]
    ("postgres", postgres::open),
    #[cfg(feature = "redis")]
    ("redis", redis::open),
    #[cfg(feature = "rabbitmq")]
    ("rabbitmq", rabbitmq::open),
    ("file", file::open),
];

/// A backend's `open` as an [`OpenFn`] returns it.
pub fn boxed<'a, B: QueueBackend + 'static>(
    opening: impl Future<Output = Result<B>> + Send + 'a,
) -> BoxFuture<'a, Result<Box<dyn QueueBackend>>> {
    Box::pin(async move { Ok(Box::new(opening.await?) as Box<dyn QueueBackend>) })
}

/// Pick and connect the backend for an address.
pub async fn open(addr: &Address, opts: &OpenOptions) -> Result<Box<dyn QueueBackend>> {
    open_from(OPENERS, addr, opts).await
}

async fn open_from(
    openers: &[(&str, OpenFn)],
    addr: &Address,
    opts: &OpenOptions,
) -> Result<Box<dyn QueueBackend>> {
    let name = addr.backend_name();
    match openers.iter().find(|(n, _)| *n == name) {
        Some((_, open)) => open(addr, opts).await,
        None => Err(Error::Unsupported {
            backend: name,
            operation: "this build",
            reason: format!("dlqctl was built without the `{name}` backend"),
        }),
    }
}

/// What every backend does last to a message it read: the configured stable-id location,
/// and, where no carrier recorded an error, an error the body embeds
/// ([`crate::body_error::error_in_body`]).
pub fn finish_read(m: &mut Message, id: Option<&IdSource>) {
    apply_id_source(m, id);
    if m.error.is_none() {
        m.error = crate::body_error::error_in_body(&m.body);
    }
}

/// Apply the configured stable-id location to a message read from a backend.
pub fn apply_id_source(m: &mut Message, id: Option<&IdSource>) {
    let Some(id) = id else { return };
    let found = match id {
        IdSource::Native => Some(m.native_id.clone()),
        IdSource::Attribute(name) => m.attribute(name).and_then(|v| match v {
            crate::message::AttrValue::Null => None,
            other => {
                Some(String::from_utf8_lossy(other.as_bytes().unwrap_or_default()).into_owned())
            }
        }),
        IdSource::Json(ptr) => serde_json::from_slice::<serde_json::Value>(&m.body)
            .ok()
            .and_then(|v| {
                v.pointer(ptr).map(|x| match x {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
            }),
    };
    if let Some(f) = found.filter(|s| !s.is_empty()) {
        m.id = f;
        if let IdSource::Attribute(name) = id {
            m.id_attribute = Some(name.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backends_this_build_has_open_and_no_other() {
        for b in crate::address::BACKENDS {
            let opens = OPENERS.iter().any(|(n, _)| *n == b.name);
            assert_eq!(opens, b.built, "{}: registered built={}", b.name, b.built);
        }
        for (name, _) in OPENERS {
            assert!(crate::address::Backend::named(name).is_some(), "{name}");
        }
    }

    #[tokio::test]
    async fn a_backend_not_built_says_so() {
        for b in crate::address::BACKENDS {
            let a = Address::parse(b.example()).unwrap();
            let Err(e) = open_from(&[], &a, &OpenOptions::default()).await else {
                panic!("{} opened without an opener", b.name)
            };
            assert!(matches!(e, Error::Unsupported { .. }), "{e}");
            let want = format!("dlqctl was built without the `{}` backend", b.name);
            assert!(e.to_string().contains(&want), "{e}");
        }
    }
}
