//! Apache Kafka dead-letter topics (`docs/kafka.md`).
//!
//! * Reads use `assign()` only: dlqctl never joins an application's consumer group (a join
//!   would rebalance live consumers).
//! * A scan fixes each partition's end offset when it starts, and ends a partition when it
//!   reaches it, or when polls come back empty for a while (offsets have gaps: transaction
//!   markers, compaction), never on a watermark alone.
//! * Redrive copies records with an idempotent producer (`partitioner=murmur2_random`, the
//!   Java client's partitioning), waits for every delivery report, and only then commits the
//!   offsets of its own group, `dlqctl-redrive.<topic>`. A crash duplicates (same stable id),
//!   never loses.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, TimeZone, Utc};
use rdkafka::admin::{AdminClient, AdminOptions, ResourceSpecifier};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers, Message as _};
use rdkafka::producer::Producer;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use serde_json::Value;

use super::{
    Capabilities, Check, Fact, Inspection, MessageStream, MoveOptions, MoveSession, OpenOptions,
    PendingSend, QueueBackend, ScanOptions, SendOutcome, Status, Table, TailOptions, Term,
    VerifyFacts,
};
use crate::address::{Address, KafkaAddress};
use crate::config::{IdSource, QueueConfig, Retention};
use crate::error::{Error, Result};
use crate::headers::HeaderRules;
use crate::message::{AttrValue, Attribute, Message};

pub mod conventions;
mod lease;
mod produce;
mod reader;
mod session;

/// Header carrying the stable id across a move, when no producer id is configured.
pub use crate::message::STABLE_ID_ATTRIBUTE as STABLE_ID_HEADER;
/// Provenance added to every record dlqctl writes to Kafka: `TOPIC/PARTITION@OFFSET` of the
/// dead letter it was copied from.
pub const FROM_HEADER: &str = "dlqctl-redriven-from";

const TIMEOUT: Duration = Duration::from_secs(10);

/// dlqctl's consumer defaults (`[kafka.properties]` overrides them). librdkafka prefetches up
/// to 64 MiB per partition by default; 8 MiB is a few dozen batches ahead, enough to keep a
/// redrive busy, and keeps memory flat however long the topic is.
const CONSUMER_TUNABLES: &[(&str, &str)] = &[
    ("queued.max.messages.kbytes", "8192"),
    // librdkafka fetches again only while fewer than `queued.min.messages` records are queued
    // (and the queue is under the kbytes bound above). 20 batches ahead: at 2,000 a redrive
    // stalled on a fresh fetch every few batches; more only adds memory.
    ("queued.min.messages", "20000"),
    // librdkafka's default wait of 1 s before fetching again once the queue is over its bounds
    // would stall a redrive for most of every second.
    ("fetch.queue.backoff.ms", "10"),
    ("fetch.max.bytes", "8388608"),
];

/// A redrive reads up to end offsets fixed at its start, and commits as it goes: a long-poll
/// fetch at the end of a partition (librdkafka's default waits 500 ms) only holds up the
/// commits queued behind it.
const REDRIVE_TUNABLES: &[(&str, &str)] = &[("fetch.wait.max.ms", "100")];

/// How long a partition may give nothing before a scan treats it as drained, by default.
const READ_IDLE: Duration = Duration::from_millis(3000);

pub struct KafkaBackend {
    addr: Address,
    k: KafkaAddress,
    props: BTreeMap<String, String>,
    partitions: Vec<i32>,
    /// How many partitions the topic has (`partitions` may be one, from `?partition=`).
    topic_partitions: usize,
    /// `[kafka] lease_timeout`: how long a redrive lease lasts unrenewed.
    lease_timeout: Duration,
    /// How long a partition may give nothing before a read treats it as drained.
    read_idle: Duration,
    id: Option<IdSource>,
    /// The consumer a dead-letter topic was opened with. It carries the redrive group's id,
    /// to read (and, in a redrive, commit) that group's offsets; it never joins the group.
    opener: Option<Arc<BaseConsumer>>,
    producer: tokio::sync::OnceCell<Arc<produce::Copier>>,
    /// The producer's warm-up (see [`produce::warm_up`]), joined by the first send, or before
    /// the producer goes (it holds the producer too).
    warm: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
    exactly_once: bool,
}

impl Drop for KafkaBackend {
    fn drop(&mut self) {
        // The warm-up is one metadata request (done long before any run ends, but a dry run
        // of an empty topic can be quicker); the producer is destroyed by its last owner.
        if let Some(h) = self
            .warm
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            let _ = blocking(|| h.join());
        }
        if let Some(c) = self.opener.take() {
            close(c);
        }
    }
}

/// Drop a consumer; if this was its last owner, close it first in short steps. (rdkafka closes
/// a consumer by polling in 100 ms steps until the close is done; one that only ever used
/// assign() is closed in a few milliseconds.)
fn close(c: Arc<BaseConsumer>) {
    if let Ok(c) = Arc::try_unwrap(c)
        && c.close_queue().is_ok()
    {
        let deadline = Instant::now() + Duration::from_secs(2);
        while !c.closed() && Instant::now() < deadline {
            c.poll(Duration::from_millis(1));
        }
    }
}

pub(crate) fn kafka_err(target: &str, e: KafkaError) -> Error {
    // Never show a property's value: it may be a password.
    if let KafkaError::ClientConfig(_, desc, key, _value) = &e {
        return Error::Config {
            path: "[kafka.properties] in dlqctl.toml".into(),
            reason: format!("`{key}`: {desc}"),
        };
    }
    use rdkafka::types::RDKafkaErrorCode as C;
    let code = e.rdkafka_error_code();
    match code {
        Some(C::UnknownTopicOrPartition | C::UnknownTopic) => Error::NotFound {
            what: format!("topic {target}"),
            detail: "check the topic name (dlqctl never creates topics)".into(),
        },
        Some(
            C::TopicAuthorizationFailed
            | C::GroupAuthorizationFailed
            | C::ClusterAuthorizationFailed
            | C::SaslAuthenticationFailed
            | C::Authentication,
        ) => Error::PermissionDenied {
            target: target.to_string(),
            reason: e.to_string(),
        },
        Some(
            C::AllBrokersDown
            | C::BrokerTransportFailure
            | C::Resolve
            | C::OperationTimedOut
            | C::RequestTimedOut
            | C::MessageTimedOut,
        ) => Error::Unreachable {
            target: target.to_string(),
            reason: format!("{e} (nothing was lost; re-run to continue)"),
        },
        _ => Error::Backend {
            target: target.to_string(),
            reason: e.to_string(),
        },
    }
}

/// The brokers a metadata response lists, sorted: a cluster's name when it reports no id.
fn brokers_of(md: &rdkafka::metadata::Metadata) -> String {
    let mut b: Vec<String> = md
        .brokers()
        .iter()
        .map(|b| format!("{}:{}", b.host(), b.port()))
        .collect();
    b.sort();
    b.join(",")
}

/// Transactions need broker support (EndTxn, AddOffsetsToTxn); say so when it is missing.
fn txn_err(target: &str, e: KafkaError) -> Error {
    let text = e.to_string();
    if [
        "EndTxn",
        "Unsupported",
        "not supported",
        "UNSUPPORTED",
        "InvalidTxnState",
        "Transactional",
    ]
    .iter()
    .any(|n| text.contains(n))
    {
        return Error::Unsupported {
            backend: "kafka",
            operation: "--exactly-once",
            reason: format!(
                "the broker at {target} could not run the transaction ({text}); nothing was moved. Redrive without --exactly-once (at-least-once, same stable ids)"
            ),
        };
    }
    kafka_err(target, e)
}

/// A commit error that goes away once the group coordinator is found again.
fn coordinator_busy(e: &KafkaError) -> bool {
    use rdkafka::types::RDKafkaErrorCode as C;
    matches!(
        e.rdkafka_error_code(),
        Some(
            C::WaitingForCoordinator
                | C::CoordinatorLoadInProgress
                | C::CoordinatorNotAvailable
                | C::NotCoordinator
                | C::RequestTimedOut
                | C::BrokerTransportFailure
                | C::AllBrokersDown
        )
    )
}

/// A consumer error that librdkafka recovers from by itself (it reconnects, finds the new
/// leader, starts a new fetch session): the read goes on.
fn passing(e: &KafkaError) -> bool {
    use rdkafka::types::RDKafkaErrorCode as C;
    matches!(e, KafkaError::MessageConsumption(_))
        && matches!(
            e.rdkafka_error_code(),
            Some(
                C::BrokerTransportFailure
                    | C::AllBrokersDown
                    | C::Resolve
                    | C::OperationTimedOut
                    | C::RequestTimedOut
                    | C::NetworkException
                    | C::LeaderNotAvailable
                    | C::NotLeaderForPartition
                    | C::PreferredLeaderNotAvailable
                    | C::BrokerNotAvailable
                    | C::ReplicaNotAvailable
                    | C::KafkaStorageError
                    | C::FetchSessionIdNotFound
                    | C::InvalidFetchSessionEpoch
                    | C::FencedLeaderEpoch
                    | C::UnknownLeaderEpoch
                    | C::OffsetNotAvailable
            )
        )
}

/// What a read saw go wrong since its last record. A read that falls idle after a passing
/// error has not reached the end: it failed, and says why.
#[derive(Default)]
struct Trouble(Option<String>);

impl Trouble {
    /// Note a passing error (librdkafka is recovering), or say that `e` ends the read.
    fn note(&mut self, target: &str, e: KafkaError) -> Result<()> {
        if passing(&e) {
            tracing::info!(error = %e, "kafka: reading {target}: a passing error; librdkafka retries");
            self.0 = Some(e.to_string());
            Ok(())
        } else {
            Err(kafka_err(target, e))
        }
    }

    /// A record arrived: whatever went wrong before is over.
    fn clear(&mut self) {
        self.0 = None;
    }

    /// The read fell idle: done, unless it fell idle in trouble.
    fn idle(&self, target: &str, idle: Duration) -> Result<()> {
        match &self.0 {
            None => Ok(()),
            Some(e) => Err(Error::Unreachable {
                target: target.to_string(),
                reason: format!(
                    "{e}, and no record for {} since (nothing was lost; re-run to continue)",
                    crate::output::fmt_duration(idle)
                ),
            }),
        }
    }
}

/// A client config: `bootstrap.servers` from the URL, then `tunables` (dlqctl's defaults), then
/// the user's `[kafka.properties]`, which override both; then what keeps every client safe,
/// which nothing overrides: no client ever creates a topic (librdkafka's producers ask the
/// broker to create a missing topic by default, and a broker with
/// `auto.create.topics.enable=true`, Apache Kafka's default, would create a mistyped `--to`).
pub(crate) fn client_config(
    brokers: &[String],
    tunables: &[(&str, &str)],
    props: &BTreeMap<String, String>,
) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", brokers.join(","));
    for (k, v) in tunables {
        c.set(*k, *v);
    }
    for (k, v) in props {
        c.set(k, v);
    }
    c.set("allow.auto.create.topics", "false");
    c
}

fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

impl KafkaBackend {
    pub async fn open(addr: &Address, opts: &OpenOptions) -> Result<KafkaBackend> {
        let Address::Kafka(k) = addr else {
            unreachable!("KafkaBackend::open with a non-Kafka address")
        };
        let mut b = KafkaBackend {
            addr: addr.clone(),
            k: k.clone(),
            props: opts.kafka.properties.clone(),
            lease_timeout: opts.kafka.lease_timeout.unwrap_or(Duration::from_secs(10)),
            read_idle: opts.kafka.read_idle.unwrap_or(READ_IDLE),
            partitions: Vec::new(),
            topic_partitions: 0,
            id: opts.id.clone(),
            opener: None,
            producer: tokio::sync::OnceCell::new(),
            warm: std::sync::Mutex::new(None),
            exactly_once: opts.exactly_once,
        };
        let topic = k.topic.clone();
        let shown = b.shown();
        let md = if opts.as_target {
            // A target is written to: its producer asks for the metadata, and starts getting
            // its producer id meanwhile.
            let p = b.producer().await?.clone();
            let md = blocking(|| p.producer().client().fetch_metadata(Some(&topic), TIMEOUT));
            if md.is_ok() {
                let t = topic.clone();
                let spawned = std::thread::Builder::new()
                    .name("dlqctl-kafka-warm".into())
                    .spawn(move || produce::warm_up(&p, &t));
                // Without the thread, the first send may wait for librdkafka's timer instead.
                *b.warm.get_mut().unwrap_or_else(|p| p.into_inner()) = spawned.ok();
            }
            md
        } else {
            let c: Arc<BaseConsumer> =
                Arc::new(b.consumer_with(Some(&b.redrive_group()), REDRIVE_TUNABLES)?);
            let md = blocking(|| c.fetch_metadata(Some(&topic), TIMEOUT));
            b.opener = Some(c);
            md
        }
        .map_err(|e| kafka_err(&shown, e))?;
        let t = md
            .topics()
            .iter()
            .find(|t| t.name() == topic)
            .ok_or_else(|| Error::NotFound {
                what: format!("topic {shown}"),
                detail: String::new(),
            })?;
        if let Some(err) = t.error() {
            let e = KafkaError::MetadataFetch(err.into());
            return Err(kafka_err(&shown, e));
        }
        let mut partitions: Vec<i32> = t.partitions().iter().map(|p| p.id()).collect();
        if partitions.is_empty() {
            return Err(Error::NotFound {
                what: format!("topic {shown}"),
                detail: "it has no partitions (does it exist?)".into(),
            });
        }
        partitions.sort();
        b.topic_partitions = partitions.len();
        if let Some(p) = k.range.partition {
            if !partitions.contains(&p) {
                return Err(Error::invalid_arg(
                    "partition",
                    format!("{shown} has partitions {partitions:?}, not {p}"),
                ));
            }
            partitions = vec![p];
        }
        tracing::debug!(topic = %shown, partitions = partitions.len(), "kafka: opened");
        b.partitions = partitions;
        Ok(b)
    }

    fn shown(&self) -> String {
        self.addr.to_string()
    }

    pub fn redrive_group(&self) -> String {
        format!("dlqctl-redrive.{}", self.k.topic)
    }

    /// A client config: `bootstrap.servers` from the URL, then `tunables` (dlqctl's defaults),
    /// then the user's `[kafka.properties]`, which override both. What a client needs to stay
    /// safe is set by the caller after this, so that it wins.
    fn config(&self, tunables: &[(&str, &str)]) -> ClientConfig {
        client_config(&self.k.brokers, tunables, &self.props)
    }

    /// A consumer that never joins a group; with `group`, only to read and commit that
    /// group's offsets (still `assign()`, never `subscribe()`).
    fn consumer(&self, group: Option<&str>) -> Result<StreamConsumer> {
        self.consumer_with(group, &[])
    }

    /// The consumer that reads and commits the redrive group's offsets: the one the topic was
    /// opened with (a client fewer to start).
    fn redrive_consumer(&self) -> Result<Arc<BaseConsumer>> {
        match &self.opener {
            Some(c) => Ok(c.clone()),
            None => Ok(Arc::new(
                self.consumer_with(Some(&self.redrive_group()), REDRIVE_TUNABLES)?,
            )),
        }
    }

    /// [`KafkaBackend::consumer`] with more defaults of dlqctl's (the user's still win).
    fn consumer_with<C: rdkafka::config::FromClientConfig>(
        &self,
        group: Option<&str>,
        tunables: &[(&str, &str)],
    ) -> Result<C> {
        let mut c = self.config(&[CONSUMER_TUNABLES, tunables].concat());
        c.set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("enable.partition.eof", "false")
            .set("auto.offset.reset", "earliest")
            .set(
                "group.id",
                group
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("dlqctl-reader-{}", std::process::id())),
            );
        c.create().map_err(|e| kafka_err(&self.shown(), e))
    }

    async fn producer(&self) -> Result<&Arc<produce::Copier>> {
        self.producer
            .get_or_try_init(|| async {
                let mut c = self.config(produce::PRODUCER_TUNABLES);
                c.set("enable.idempotence", "true").set("acks", "all");
                Ok(Arc::new(produce::Copier::new(&c, &self.shown())?))
            })
            .await
    }

    fn watermarks(&self, c: &impl Consumer) -> Result<Vec<(i32, i64, i64)>> {
        let mut out = Vec::new();
        for &p in &self.partitions {
            let (lo, hi) = blocking(|| c.fetch_watermarks(&self.k.topic, p, TIMEOUT))
                .map_err(|e| kafka_err(&self.shown(), e))?;
            out.push((p, lo, hi));
        }
        Ok(out)
    }

    /// Start offsets for a scan: the address's range (from / since), else the beginning.
    fn start_offsets(
        &self,
        c: &impl Consumer,
        marks: &[(i32, i64, i64)],
    ) -> Result<HashMap<i32, i64>> {
        let mut start: HashMap<i32, i64> = marks.iter().map(|(p, lo, _)| (*p, *lo)).collect();
        if let Some(f) = self.k.range.from {
            for (_, s) in start.iter_mut() {
                *s = (*s).max(f);
            }
        }
        if let Some(since) = self.k.range.since {
            let mut tpl = TopicPartitionList::new();
            for &p in &self.partitions {
                tpl.add_partition_offset(
                    &self.k.topic,
                    p,
                    Offset::Offset(since.timestamp_millis()),
                )
                .map_err(|e| kafka_err(&self.shown(), e))?;
            }
            let found = blocking(|| c.offsets_for_times(tpl, TIMEOUT))
                .map_err(|e| kafka_err(&self.shown(), e))?;
            for e in found.elements() {
                let hi = marks
                    .iter()
                    .find(|m| m.0 == e.partition())
                    .map_or(0, |m| m.2);
                let o = match e.offset() {
                    Offset::Offset(o) => o,
                    _ => hi, // nothing at or after that time
                };
                let s = start.entry(e.partition()).or_insert(o);
                *s = (*s).max(o);
            }
        }
        Ok(start)
    }

    fn assign(&self, c: &impl Consumer, start: &HashMap<i32, i64>) -> Result<()> {
        let mut tpl = TopicPartitionList::new();
        for (&p, &o) in start {
            tpl.add_partition_offset(&self.k.topic, p, Offset::Offset(o))
                .map_err(|e| kafka_err(&self.shown(), e))?;
        }
        c.assign(&tpl).map_err(|e| kafka_err(&self.shown(), e))
    }

    pub(crate) fn to_message(&self, m: &rdkafka::message::BorrowedMessage<'_>) -> Message {
        decode(m, self.id.as_ref())
    }

    /// The messages of a reading, within the address's time range, up to `limit`.
    fn read<'a>(&'a self, mut reading: reader::Reading, limit: Option<u64>) -> MessageStream<'a> {
        let (since, until) = (self.k.range.since, self.k.range.until);
        Box::pin(async_stream::try_stream! {
            let mut n = 0u64;
            'batches: while let Some(batch) = reading.next().await {
                for msg in batch?.msgs {
                    // Time ranges hold for the record's time as dlqctl reads it (the original
                    // timestamp header where a convention records one): offsets_for_times only
                    // finds where to start.
                    if until.is_some_and(|u| msg.enqueued_at.is_some_and(|t| t >= u))
                        || since.is_some_and(|s| msg.enqueued_at.is_some_and(|t| t < s))
                    {
                        continue;
                    }
                    n += 1;
                    yield msg;
                    if limit.is_some_and(|l| n >= l) {
                        break 'batches;
                    }
                }
            }
        })
    }

    async fn topic_configs(&self, topic: &str) -> Result<HashMap<String, String>> {
        let admin: AdminClient<DefaultClientContext> = self
            .config(&[])
            .create()
            .map_err(|e| kafka_err(&self.shown(), e))?;
        let res = admin
            .describe_configs(
                &[ResourceSpecifier::Topic(topic)],
                &AdminOptions::new().request_timeout(Some(TIMEOUT)),
            )
            .await
            .map_err(|e| kafka_err(topic, e))?;
        let mut out = HashMap::new();
        for r in res {
            match r {
                Ok(cfg) => {
                    for e in cfg.entries {
                        if let Some(v) = e.value {
                            out.insert(e.name, v);
                        }
                    }
                }
                Err(code) => return Err(kafka_err(topic, KafkaError::AdminOp(code))),
            }
        }
        Ok(out)
    }

    fn committed(&self, c: &impl Consumer) -> Result<HashMap<i32, i64>> {
        let mut tpl = TopicPartitionList::new();
        for &p in &self.partitions {
            tpl.add_partition(&self.k.topic, p);
        }
        let got = blocking(|| c.committed_offsets(tpl, TIMEOUT))
            .map_err(|e| kafka_err(&self.shown(), e))?;
        Ok(got
            .elements()
            .iter()
            .filter_map(|e| match e.offset() {
                Offset::Offset(o) => Some((e.partition(), o)),
                _ => None,
            })
            .collect())
    }
}

/// A record as dlqctl's neutral message: headers in order, the dead-letter convention's facts,
/// and the stable id (the configured location, else `dlqctl-stable-id`, else the original
/// coordinates, else the record's own).
fn decode(m: &rdkafka::message::BorrowedMessage<'_>, id: Option<&IdSource>) -> Message {
    use std::fmt::Write as _;
    let attributes: Vec<Attribute> = match m.headers() {
        Some(h) => h
            .iter()
            .map(|hd| Attribute {
                name: hd.key.to_string(),
                value: AttrValue::from_bytes(hd.value),
            })
            .collect(),
        None => Vec::new(),
    };
    let ts = m
        .timestamp()
        .to_millis()
        .and_then(|ms| Utc.timestamp_millis_opt(ms).single());
    let (topic, partition, offset) = (m.topic(), m.partition(), m.offset());
    let mut native = String::with_capacity(topic.len() + 24);
    let _ = write!(native, "{topic}/{partition}@{offset}");
    let dl = conventions::detect(&attributes);
    let mut msg = Message {
        id: String::new(),
        native_id: native,
        body: m.payload().map(<[u8]>::to_vec).unwrap_or_default(),
        key: m.key().map(<[u8]>::to_vec),
        group: None,
        dedup_id: None,
        partition: Some(partition),
        receive_count: None,
        enqueued_at: ts,
        dead_lettered_at: None,
        error: None,
        source: None,
        meta: Default::default(),
        attributes,
        id_attribute: None,
    };
    msg.meta.insert("topic", Value::String(topic.into()));
    msg.meta.insert("offset", Value::from(offset));
    if m.payload().is_none() {
        msg.meta.insert("tombstone", Value::Bool(true));
    }
    if let Some(d) = dl {
        msg.meta
            .insert("convention", Value::String(d.convention.into()));
        if let Some(g) = d.consumer_group {
            msg.meta.insert("original_consumer_group", Value::String(g));
        }
        // The record's own time is the dead-letter time for Spring; the original time is
        // in a header. Connect copies the original timestamp.
        if d.timestamp.is_some() {
            msg.dead_lettered_at = ts;
            msg.enqueued_at = d.timestamp;
        }
        if let (Some(t), Some(p), Some(o)) = (&d.original_topic, d.partition, d.offset) {
            let mut original = String::with_capacity(t.len() + 24);
            let _ = write!(original, "{t}/{p}@{o}");
            msg.meta.insert("original", Value::String(original.clone()));
            msg.id = original;
        }
        msg.source = d.latest_topic.or(d.original_topic);
        if d.error.class.is_some() || d.error.message.is_some() {
            msg.error = Some(d.error);
        }
    }
    if let Some(v) = msg.attribute(STABLE_ID_HEADER).map(AttrValue::display) {
        msg.id = v;
    }
    if msg.id.is_empty() {
        msg.id = msg.native_id.clone();
    }
    super::apply_id_source(&mut msg, id);
    msg
}

#[async_trait]
impl QueueBackend for KafkaBackend {
    fn address(&self) -> &Address {
        &self.addr
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            read: true,
            tail: true,
            delete: true,
            write: true,
            read_side_effect: None,
            per_message_destination: true,
        }
    }

    async fn inspect(&self, classifier: &crate::classify::Classifier) -> Result<Inspection> {
        let mut ins = Inspection {
            queue: self.shown(),
            backend: "kafka",
            ..Inspection::default()
        };
        let c = self.redrive_consumer()?;
        let marks = self.watermarks(c.as_ref())?;
        let committed = self.committed(c.as_ref())?;
        let mut total = 0i64;
        let mut lag = 0i64;
        let mut t = Table {
            title: format!("partitions (redrive group {})", self.redrive_group()),
            columns: vec![
                "partition".into(),
                "low".into(),
                "high".into(),
                "messages".into(),
                "redrive committed".into(),
                "redrive lag".into(),
            ],
            rows: Vec::new(),
        };
        for (p, lo, hi) in &marks {
            let n = hi - lo;
            total += n;
            let com = committed.get(p).copied();
            let l = hi - com.unwrap_or(*lo).max(*lo);
            lag += l;
            t.rows.push(vec![
                (*p).into(),
                (*lo).into(),
                (*hi).into(),
                n.into(),
                com.map_or(Value::Null, Value::from),
                l.into(),
            ]);
        }
        ins.facts.push(Fact::new(
            "topic",
            self.k.topic.clone(),
            self.k.topic.clone(),
        ));
        ins.facts.push(Fact::new(
            "partitions",
            marks.len() as u64,
            marks.len().to_string(),
        ));
        ins.facts.push(Fact::new(
            "messages",
            total,
            format!("{total} (high - low watermarks; offsets can have gaps)"),
        ));
        ins.facts.push(Fact::new(
            "redrive_lag",
            lag,
            format!("{lag} not yet redriven by {}", self.redrive_group()),
        ));
        match self.topic_configs(&self.k.topic).await {
            Ok(cfg) => {
                let ret = cfg.get("retention.ms").cloned();
                let shown = match ret.as_deref().map(str::parse::<i64>) {
                    Some(Ok(ms)) if ms < 0 => "forever (-1)".to_string(),
                    Some(Ok(ms)) => crate::output::fmt_duration(Duration::from_millis(ms as u64)),
                    _ => "not reported by the broker".to_string(),
                };
                ins.facts.push(Fact::new(
                    "retention_ms",
                    ret.map_or(Value::Null, Value::from),
                    shown,
                ));
                let cp = cfg
                    .get("cleanup.policy")
                    .cloned()
                    .unwrap_or_else(|| "delete (default; not reported)".into());
                ins.facts.push(Fact::new("cleanup_policy", cp.clone(), cp));
            }
            Err(e) => ins.notes.push(format!("DescribeConfigs: {e}")),
        }
        ins.tables.push(t);
        // Oldest/newest and breakdowns from a bounded sample of the oldest records.
        const SAMPLE: u64 = 2000;
        let mut by_topic: BTreeMap<String, u64> = BTreeMap::new();
        let mut by_class: BTreeMap<(String, String), u64> = BTreeMap::new();
        let (mut oldest, mut newest): (Option<DateTime<Utc>>, Option<DateTime<Utc>>) = (None, None);
        let mut stream = self
            .scan(ScanOptions {
                limit: Some(SAMPLE),
                page_size: 500,
                ..ScanOptions::default()
            })
            .await?;
        let mut seen = 0u64;
        while let Some(m) = futures::StreamExt::next(&mut stream).await {
            let m = m?;
            seen += 1;
            if let Some(t) = m.enqueued_at {
                oldest = Some(oldest.map_or(t, |o| o.min(t)));
                newest = Some(newest.map_or(t, |n| n.max(t)));
            }
            *by_topic
                .entry(
                    m.source
                        .clone()
                        .unwrap_or_else(|| "(no dead-letter headers)".into()),
                )
                .or_default() += 1;
            let c = classifier.classify(&m);
            *by_class.entry((c.kind.to_string(), c.rule)).or_default() += 1;
        }
        ins.facts.push(Fact::new(
            "oldest",
            oldest.map(|t| t.to_rfc3339()),
            oldest.map_or("-".into(), |t| {
                t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
            }),
        ));
        ins.facts.push(Fact::new(
            "newest",
            newest.map(|t| t.to_rfc3339()),
            newest.map_or("-".into(), |t| {
                t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
            }),
        ));
        let sampled = if seen >= SAMPLE {
            format!(" (oldest {SAMPLE})")
        } else {
            String::new()
        };
        ins.tables.push(Table {
            title: format!("by original topic{sampled}"),
            columns: vec!["original topic".into(), "messages".into()],
            rows: by_topic
                .into_iter()
                .map(|(k, v)| vec![k.into(), v.into()])
                .collect(),
        });
        ins.tables.push(Table {
            title: format!("by failure class{sampled}"),
            columns: vec!["class".into(), "rule".into(), "messages".into()],
            rows: by_class
                .into_iter()
                .map(|((k, r), v)| vec![k.into(), r.into(), v.into()])
                .collect(),
        });
        Ok(ins)
    }

    async fn scan(&self, opts: ScanOptions) -> Result<MessageStream<'_>> {
        let c: Arc<BaseConsumer> = Arc::new(self.consumer_with(None, &[])?);
        let marks = self.watermarks(c.as_ref())?;
        let mut start = self.start_offsets(c.as_ref(), &marks)?;
        if opts.as_redrive {
            // A redrive's dry run reads what the redrive would: from the redrive group's
            // committed offsets (read with the consumer the topic was opened with, which
            // carries that group's id; nothing is committed).
            let committed = match &self.opener {
                Some(o) => self.committed(o.as_ref())?,
                None => HashMap::new(),
            };
            for (p, s) in start.iter_mut() {
                if let Some(c) = committed.get(p) {
                    *s = (*s).max(*c);
                }
            }
        }
        let mut open = HashMap::new();
        for (p, _, hi) in &marks {
            let end = self.k.range.to.map_or(*hi, |to| to.min(*hi));
            if start.get(p).is_some_and(|s| *s < end) {
                open.insert(*p, end);
            }
        }
        // Partitions already at their end need no read.
        start.retain(|p, _| open.contains_key(p));
        self.assign(c.as_ref(), &start)?;
        let batch = match opts.limit {
            Some(l) => opts.page_size.min(l.try_into().unwrap_or(usize::MAX)),
            None => opts.page_size,
        };
        let reading = reader::Reading::start(self, c, open, batch.max(1))?;
        Ok(self.read(reading, opts.limit))
    }

    async fn tail(&self, opts: TailOptions) -> Result<MessageStream<'_>> {
        let c = self.consumer(None)?;
        let marks = self.watermarks(&c)?;
        let start: HashMap<i32, i64> = marks
            .iter()
            .map(|(p, lo, hi)| (*p, if opts.from_start { *lo } else { *hi }))
            .collect();
        self.assign(&c, &start)?;
        Ok(Box::pin(async_stream::try_stream! {
            let mut trouble = Trouble::default();
            loop {
                match c.recv().await {
                    Ok(m) => yield self.to_message(&m),
                    // A tail waits for arrivals anyway: a passing error only waits longer.
                    Err(e) => trouble.note(&self.shown(), e)?,
                }
            }
        }))
    }

    /// With `--exactly-once`, a move to a topic of the same cluster is one Kafka transaction:
    /// the copies and the redrive group's offsets commit together.
    fn can_move_locally(&self, target: &Address) -> bool {
        self.exactly_once && matches!(target, Address::Kafka(t) if t.brokers == self.k.brokers)
    }

    async fn begin_move(&self, opts: MoveOptions) -> Result<Box<dyn MoveSession + '_>> {
        Ok(Box::new(session::KafkaMoveSession::begin(
            self,
            opts.headers,
            opts.batch_size,
        )?))
    }

    async fn send(&self, batch: &[Message]) -> Result<Vec<SendOutcome>> {
        self.send_start(batch).await?.await
    }

    /// Queue the copies and return at once; each outcome follows its delivery report.
    async fn send_start(&self, batch: &[Message]) -> Result<PendingSend> {
        let producer = self.producer().await?;
        let warm = self.warm.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = warm {
            let _ = blocking(|| h.join());
        }
        Ok(produce::enqueue(producer, &self.k.topic, &self.shown(), batch).await)
    }

    async fn backlog(&self, for_redrive: bool) -> Result<Option<super::Backlog>> {
        let Some(o) = &self.opener else {
            return Ok(None);
        };
        let marks = self.watermarks(o.as_ref())?;
        let committed = if for_redrive {
            self.committed(o.as_ref())?
        } else {
            HashMap::new()
        };
        let n: i64 = marks
            .iter()
            .map(|(p, lo, hi)| {
                let from = committed.get(p).copied().unwrap_or(*lo).max(*lo);
                (hi - from).max(0)
            })
            .sum();
        // Offsets, not records: transaction markers and compaction leave gaps.
        Ok(Some(super::Backlog {
            messages: n as u64,
            exact: false,
        }))
    }

    async fn identity(&self) -> Result<Option<String>> {
        // The cluster id where the broker reports one, else the brokers it lists: two
        // bootstrap lists can name one cluster.
        let cluster = match (&self.opener, self.producer.get()) {
            (Some(c), _) => blocking(|| {
                let c = c.client();
                c.fetch_cluster_id(TIMEOUT).ok_or(()).or_else(|_| {
                    c.fetch_metadata(None, TIMEOUT)
                        .map(|m| brokers_of(&m))
                        .map_err(|_| ())
                })
            }),
            (None, Some(p)) => blocking(|| {
                let c = p.producer().client();
                c.fetch_cluster_id(TIMEOUT).ok_or(()).or_else(|_| {
                    c.fetch_metadata(None, TIMEOUT)
                        .map(|m| brokers_of(&m))
                        .map_err(|_| ())
                })
            }),
            (None, None) => Err(()),
        };
        Ok(cluster.ok().map(|c| format!("kafka:{c}/{}", self.k.topic)))
    }

    async fn destination(&self, m: &Message) -> Result<Option<Address>> {
        Ok(m.source.as_ref().map(|t| {
            Address::Kafka(KafkaAddress {
                brokers: self.k.brokers.clone(),
                topic: t.clone(),
                range: Default::default(),
            })
        }))
    }

    async fn verify_facts(&self, cfg: &QueueConfig) -> Result<VerifyFacts> {
        let mut f = VerifyFacts::default();
        let check = |id: &str, title: &str, status: Status, detail: String| {
            Check::new(id, title, status, detail)
        };
        f.checks.push(check(
            "kafka-dlt-exists",
            "The dead-letter topic exists",
            Status::Pass,
            format!(
                "{} with {} partition(s)",
                self.k.topic,
                self.partitions.len()
            ),
        ));
        let dlt = self.topic_configs(&self.k.topic).await;
        let ms = |cfg: &HashMap<String, String>| {
            cfg.get("retention.ms").and_then(|v| v.parse::<i64>().ok())
        };
        let ret = |ms: i64| {
            if ms < 0 {
                Retention::Forever
            } else {
                Retention::For(Duration::from_millis(ms as u64))
            }
        };
        match &dlt {
            Ok(c) => {
                let policy = c
                    .get("cleanup.policy")
                    .cloned()
                    .unwrap_or_else(|| "delete".into());
                f.checks.push(match policy.as_str() {
                    p if p.contains("compact") && p.contains("delete") => check("kafka-cleanup-policy", "cleanup.policy keeps dead letters", Status::Warn, format!("cleanup.policy={p}: compaction keeps only the latest record per key, so dead letters with a repeated key are lost")),
                    p if p.contains("compact") => check("kafka-cleanup-policy", "cleanup.policy keeps dead letters", Status::Fail, format!("cleanup.policy={p}: compaction deletes every dead letter but the latest per key")),
                    p => check("kafka-cleanup-policy", "cleanup.policy keeps dead letters", Status::Pass, format!("cleanup.policy={p}")),
                });
                match ms(c) {
                    Some(v) => {
                        f.checks.push(check(
                            "kafka-retention-readable",
                            "retention.ms is readable",
                            Status::Pass,
                            format!("{}: retention.ms={v}", self.k.topic),
                        ));
                        f.redelivery.push(Term {
                            label: "DLT retention".into(),
                            value: ret(v),
                            source: format!("retention.ms of {}", self.k.topic),
                        });
                    }
                    None => {
                        f.checks.push(check("kafka-retention-readable", "retention.ms is readable", Status::Warn, format!("the broker did not report retention.ms for {}; counted as the broker default of 7d", self.k.topic)));
                        f.redelivery.push(Term {
                            label: "DLT retention".into(),
                            value: Retention::For(Duration::from_secs(7 * 86400)),
                            source: "broker default (not reported)".into(),
                        });
                    }
                }
            }
            Err(e) => f.checks.push(check(
                "kafka-retention-readable",
                "retention.ms is readable",
                Status::Fail,
                e.to_string(),
            )),
        }
        let source = match &cfg.source {
            Some(s) => match Address::parse(s) {
                Ok(Address::Kafka(k)) => Some(k.topic),
                _ => None,
            },
            None => None,
        };
        if let Some(src) = source {
            match self.topic_configs(&src).await {
                Ok(c) => match ms(&c) {
                    Some(v) => f.redelivery.insert(
                        0,
                        Term {
                            label: "source topic retention".into(),
                            value: ret(v),
                            source: format!("retention.ms of {src}"),
                        },
                    ),
                    None => f.checks.push(check(
                        "kafka-retention-readable",
                        "retention.ms is readable",
                        Status::Warn,
                        format!("the broker did not report retention.ms for {src}"),
                    )),
                },
                Err(e) => f.checks.push(check(
                    "kafka-source-topic",
                    "The source topic is readable",
                    Status::Fail,
                    e.to_string(),
                )),
            }
        } else {
            f.checks.push(check(
                "kafka-source-topic",
                "The source topic is known",
                Status::Warn,
                "no `source` in dlqctl.toml: the source topic's retention is not in the arithmetic"
                    .into(),
            ));
        }
        Ok(f)
    }

    async fn count_older_than(&self, age: Duration) -> Result<Option<u64>> {
        let c = self.redrive_consumer()?;
        let marks = self.watermarks(c.as_ref())?;
        let cutoff = Utc::now() - chrono::Duration::from_std(age).unwrap_or_default();
        let mut tpl = TopicPartitionList::new();
        for &p in &self.partitions {
            tpl.add_partition_offset(&self.k.topic, p, Offset::Offset(cutoff.timestamp_millis()))
                .map_err(|e| kafka_err(&self.shown(), e))?;
        }
        let found = blocking(|| c.offsets_for_times(tpl, TIMEOUT))
            .map_err(|e| kafka_err(&self.shown(), e))?;
        let mut n = 0u64;
        for e in found.elements() {
            let (lo, hi) = marks
                .iter()
                .find(|m| m.0 == e.partition())
                .map_or((0, 0), |m| (m.1, m.2));
            let first_newer = match e.offset() {
                Offset::Offset(o) => o,
                _ => hi,
            };
            n += (first_newer - lo).max(0) as u64;
        }
        Ok(Some(n))
    }

    async fn oldest(&self) -> Result<Option<DateTime<Utc>>> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_client_ever_creates_a_topic() {
        // Not even when the user's properties ask for it.
        let mut props = BTreeMap::new();
        props.insert("allow.auto.create.topics".to_string(), "true".to_string());
        let c = client_config(&["h:1".to_string()], produce::PRODUCER_TUNABLES, &props);
        assert_eq!(c.get("allow.auto.create.topics"), Some("false"));
        let c = client_config(&["h:1".to_string()], CONSUMER_TUNABLES, &BTreeMap::new());
        assert_eq!(c.get("allow.auto.create.topics"), Some("false"));
    }
}
