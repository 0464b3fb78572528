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
use rdkafka::consumer::{CommitMode, Consumer, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, Headers, Message as _, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use serde_json::Value;

use super::{
    Capabilities, Check, Fact, Inspection, MessageStream, MoveOptions, MoveSession, OpenOptions,
    QueueBackend, ScanOptions, SendOutcome, Status, Table, TailOptions, Term, VerifyFacts,
};
use crate::address::{Address, KafkaAddress};
use crate::config::{IdSource, QueueConfig, Retention};
use crate::error::{Error, Result};
use crate::headers::HeaderRules;
use crate::message::{AttrValue, Attribute, Message};

pub mod conventions;

/// Header carrying the stable id across a move, when no producer id is configured.
pub const STABLE_ID_HEADER: &str = "dlqctl-stable-id";
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

/// dlqctl's producer defaults (`[kafka.properties]` overrides them): keys land on the
/// partition a Java producer picks (murmur2), and a copy that cannot be delivered in 30 s is
/// reported as failed (and its dead letter kept). A batch is handed over whole and then
/// waited for, so lingering only delays it: `linger.ms=0` (librdkafka still packs what queues
/// up behind a request in flight). On a broker that answers at once, librdkafka's 5 ms made a
/// 1000-record batch take 8–11 ms instead of 4.
const PRODUCER_TUNABLES: &[(&str, &str)] = &[
    ("partitioner", "murmur2_random"),
    ("linger.ms", "0"),
    ("message.timeout.ms", "30000"),
];

/// How long a partition may give nothing before a scan treats it as drained.
fn idle() -> Duration {
    Duration::from_millis(
        std::env::var("DLQCTL_KAFKA_IDLE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3000),
    )
}

pub struct KafkaBackend {
    addr: Address,
    k: KafkaAddress,
    props: BTreeMap<String, String>,
    partitions: Vec<i32>,
    id: Option<IdSource>,
    producer: tokio::sync::OnceCell<FutureProducer>,
    exactly_once: bool,
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
        )
    )
}

fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

impl KafkaBackend {
    pub async fn open(addr: &Address, opts: &OpenOptions) -> Result<KafkaBackend> {
        let Address::Kafka(k) = addr else {
            unreachable!("KafkaBackend::open with a non-Kafka address")
        };
        let b = KafkaBackend {
            addr: addr.clone(),
            k: k.clone(),
            props: opts.kafka.clone(),
            partitions: Vec::new(),
            id: opts.id.clone(),
            producer: tokio::sync::OnceCell::new(),
            exactly_once: opts.exactly_once,
        };
        let topic = k.topic.clone();
        let shown = b.shown();
        let md = if opts.as_target {
            // A target is written to: its producer asks for the metadata, and starts getting
            // its producer id meanwhile (the first delivery waits for it).
            let p = b.producer().await?;
            blocking(|| p.client().fetch_metadata(Some(&topic), TIMEOUT))
        } else {
            let c = b.consumer(None)?;
            blocking(|| c.fetch_metadata(Some(&topic), TIMEOUT))
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
        Ok(KafkaBackend { partitions, ..b })
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
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", self.k.brokers.join(","));
        for (k, v) in tunables {
            c.set(*k, *v);
        }
        for (k, v) in &self.props {
            c.set(k, v);
        }
        c
    }

    /// A consumer that never joins a group; with `group`, only to read and commit that
    /// group's offsets (still `assign()`, never `subscribe()`).
    fn consumer(&self, group: Option<&str>) -> Result<StreamConsumer> {
        self.consumer_with(group, &[])
    }

    /// [`KafkaBackend::consumer`] with more defaults of dlqctl's (the user's still win).
    fn consumer_with(
        &self,
        group: Option<&str>,
        tunables: &[(&str, &str)],
    ) -> Result<StreamConsumer> {
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

    async fn producer(&self) -> Result<&FutureProducer> {
        self.producer
            .get_or_try_init(|| async {
                let mut c = self.config(PRODUCER_TUNABLES);
                c.set("enable.idempotence", "true").set("acks", "all");
                c.create::<FutureProducer>()
                    .map_err(|e| kafka_err(&self.shown(), e))
            })
            .await
    }

    fn watermarks(&self, c: &StreamConsumer) -> Result<Vec<(i32, i64, i64)>> {
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
        c: &StreamConsumer,
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

    fn assign(&self, c: &StreamConsumer, start: &HashMap<i32, i64>) -> Result<()> {
        let mut tpl = TopicPartitionList::new();
        for (&p, &o) in start {
            tpl.add_partition_offset(&self.k.topic, p, Offset::Offset(o))
                .map_err(|e| kafka_err(&self.shown(), e))?;
        }
        c.assign(&tpl).map_err(|e| kafka_err(&self.shown(), e))
    }

    pub(crate) fn to_message(&self, m: &rdkafka::message::BorrowedMessage<'_>) -> Message {
        let mut attributes = Vec::new();
        if let Some(h) = m.headers() {
            for hd in h.iter() {
                attributes.push(Attribute {
                    name: hd.key.to_string(),
                    value: AttrValue::from_bytes(hd.value),
                });
            }
        }
        let ts = m
            .timestamp()
            .to_millis()
            .and_then(|ms| Utc.timestamp_millis_opt(ms).single());
        let native = format!("{}/{}@{}", m.topic(), m.partition(), m.offset());
        let dl = conventions::detect(&attributes);
        let mut msg = Message {
            id: native.clone(),
            native_id: native,
            body: m.payload().map(<[u8]>::to_vec).unwrap_or_default(),
            key: m.key().map(<[u8]>::to_vec),
            group: None,
            dedup_id: None,
            partition: Some(m.partition()),
            receive_count: None,
            enqueued_at: ts,
            dead_lettered_at: None,
            error: None,
            source: None,
            meta: Default::default(),
            attributes,
        };
        msg.meta
            .insert("topic".into(), Value::String(m.topic().into()));
        msg.meta.insert("offset".into(), Value::from(m.offset()));
        if m.payload().is_none() {
            msg.meta.insert("tombstone".into(), Value::Bool(true));
        }
        if let Some(d) = dl {
            msg.meta
                .insert("convention".into(), Value::String(d.convention.into()));
            if let Some(g) = &d.consumer_group {
                msg.meta
                    .insert("original_consumer_group".into(), Value::String(g.clone()));
            }
            // The record's own time is the dead-letter time for Spring; the original time is
            // in a header. Connect copies the original timestamp.
            if d.timestamp.is_some() {
                msg.dead_lettered_at = ts;
                msg.enqueued_at = d.timestamp;
            }
            if let (Some(t), Some(p), Some(o)) = (&d.original_topic, d.partition, d.offset) {
                msg.id = format!("{t}/{p}@{o}");
                msg.meta
                    .insert("original".into(), Value::String(msg.id.clone()));
            }
            msg.source = d.latest_topic.clone().or(d.original_topic.clone());
            if d.error.class.is_some() || d.error.message.is_some() {
                msg.error = Some(d.error);
            }
        }
        if let Some(v) = msg.attribute(STABLE_ID_HEADER).map(AttrValue::display) {
            msg.id = v;
        }
        super::apply_id_source(&mut msg, self.id.as_ref());
        msg
    }

    /// Read from the assigned partitions until each reaches `end` (exclusive) or goes idle.
    fn read<'a>(
        &'a self,
        c: StreamConsumer,
        end: HashMap<i32, i64>,
        limit: Option<u64>,
    ) -> MessageStream<'a> {
        let (since, until) = (self.k.range.since, self.k.range.until);
        Box::pin(async_stream::try_stream! {
            let mut open: HashMap<i32, i64> = end.into_iter().collect();
            let mut n = 0u64;
            // Partitions already at their end need no read.
            let positions = c.position().map_err(|e| kafka_err(&self.shown(), e))?;
            for e in positions.elements() {
                if let (Offset::Offset(o), Some(end)) = (e.offset(), open.get(&e.partition()).copied()) && o >= end {
                    open.remove(&e.partition());
                }
            }
            while !open.is_empty() {
                let m = match tokio::time::timeout(idle(), c.recv()).await {
                    Err(_) => break, // idle: nothing more arrives within the fixed range
                    Ok(r) => r.map_err(|e| kafka_err(&self.shown(), e))?,
                };
                let p = m.partition();
                let Some(&end) = open.get(&p) else { continue };
                if m.offset() >= end {
                    open.remove(&p);
                    continue;
                }
                let msg = self.to_message(&m);
                if m.offset() + 1 >= end {
                    open.remove(&p);
                }
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
                    break;
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

    fn committed(&self, c: &StreamConsumer) -> Result<HashMap<i32, i64>> {
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

    /// Copy `batch` to this topic; outcome per message once its delivery report arrived.
    async fn produce(&self, batch: &[Message]) -> Result<Vec<SendOutcome>> {
        let producer = self.producer().await?;
        send_all(producer, &self.k.topic, &self.shown(), batch).await
    }
}

/// The headers of a copy: the original ones byte for byte (nulls and repeats kept), the
/// stable id when no header carries it yet, and where the copy came from.
fn copy_headers(m: &Message) -> OwnedHeaders {
    let mut headers = OwnedHeaders::new_with_capacity(m.attributes.len() + 2);
    for a in &m.attributes {
        headers = headers.insert(Header {
            key: &a.name,
            value: a.value.as_bytes(),
        });
    }
    if m.attribute(STABLE_ID_HEADER).is_none()
        && !m
            .attributes
            .iter()
            .any(|a| a.value.as_bytes() == Some(m.id.as_bytes()))
    {
        headers = headers.insert(Header {
            key: STABLE_ID_HEADER,
            value: Some(m.id.as_bytes()),
        });
    }
    headers.insert(Header {
        key: FROM_HEADER,
        value: Some(m.native_id.as_bytes()),
    })
}

/// Queue every record, then wait for every delivery report.
async fn send_all(
    producer: &FutureProducer,
    topic: &str,
    shown: &str,
    batch: &[Message],
) -> Result<Vec<SendOutcome>> {
    let mut pending = Vec::with_capacity(batch.len());
    for m in batch {
        let tombstone = m
            .meta
            .get("tombstone")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mut rec: FutureRecord<'_, [u8], [u8]> =
            FutureRecord::to(topic).headers(copy_headers(m));
        if let Some(k) = &m.key {
            rec = rec.key(k.as_slice());
        }
        if !tombstone {
            rec = rec.payload(m.body.as_slice());
        }
        pending.push(producer.send_result(rec).map_err(|(e, _)| e));
    }
    let mut out = Vec::with_capacity(batch.len());
    for p in pending {
        out.push(match p {
            Err(e) => SendOutcome::Rejected {
                reason: e.to_string(),
            },
            Ok(fut) => match fut.await {
                Ok(Ok(_)) => SendOutcome::Sent,
                Ok(Err((e, _))) => match kafka_err(shown, e) {
                    err @ Error::Unreachable { .. } => return Err(err),
                    other => SendOutcome::Rejected {
                        reason: other.to_string(),
                    },
                },
                Err(_) => SendOutcome::Rejected {
                    reason: "the producer went away before the delivery report".into(),
                },
            },
        });
    }
    Ok(out)
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

    async fn inspect(&self) -> Result<Inspection> {
        let mut ins = Inspection {
            queue: self.shown(),
            backend: "kafka",
            ..Inspection::default()
        };
        let c = self.consumer(Some(&self.redrive_group()))?;
        let marks = self.watermarks(&c)?;
        let committed = self.committed(&c)?;
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
        let classifier = crate::classify::Classifier::builtin();
        let mut stream = self
            .scan(ScanOptions {
                limit: Some(SAMPLE),
                page_size: 500,
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
            title: format!("by failure class (built-in rules){sampled}"),
            columns: vec!["class".into(), "rule".into(), "messages".into()],
            rows: by_class
                .into_iter()
                .map(|((k, r), v)| vec![k.into(), r.into(), v.into()])
                .collect(),
        });
        Ok(ins)
    }

    async fn scan(&self, opts: ScanOptions) -> Result<MessageStream<'_>> {
        let c = self.consumer(None)?;
        let marks = self.watermarks(&c)?;
        let start = self.start_offsets(&c, &marks)?;
        let mut end: HashMap<i32, i64> = marks.iter().map(|(p, _, hi)| (*p, *hi)).collect();
        if let Some(to) = self.k.range.to {
            for (_, e) in end.iter_mut() {
                *e = (*e).min(to);
            }
        }
        self.assign(&c, &start)?;
        Ok(self.read(c, end, opts.limit))
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
            loop {
                let m = c.recv().await.map_err(|e| kafka_err(&self.shown(), e))?;
                yield self.to_message(&m);
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
        )?))
    }

    async fn send(&self, batch: &[Message]) -> Result<Vec<SendOutcome>> {
        self.produce(batch).await
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
        let c = self.consumer(None)?;
        let marks = self.watermarks(&c)?;
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

mod session {
    //! Redrive from a topic: the redrive group's committed offsets are the progress.

    use super::*;

    pub struct KafkaMoveSession<'a> {
        b: &'a KafkaBackend,
        c: Arc<StreamConsumer>,
        /// Exclusive end per partition (fixed at the start) of the partitions not done yet.
        open: HashMap<i32, i64>,
        /// (partition, offset) of the last batch, in batch order.
        batch: Vec<(i32, i64)>,
        /// The first offset per partition this run could not move: nothing at or after it is
        /// committed in this run, so the next run retries it.
        blocked: HashMap<i32, i64>,
        /// The last batch's messages (for the transactional path).
        msgs: Vec<Message>,
        /// The transactional producer of `--exactly-once`.
        tx: Option<FutureProducer>,
        /// `--keep-header` / `--strip-header`, for the copies of the transactional path.
        headers: HeaderRules,
        /// The offset committed last, per partition.
        position: HashMap<i32, i64>,
        /// Whether an asynchronous commit was sent after the last synchronous one.
        unsynced: bool,
    }

    impl<'a> KafkaMoveSession<'a> {
        pub fn begin(b: &'a KafkaBackend, headers: HeaderRules) -> Result<KafkaMoveSession<'a>> {
            let c = b.consumer_with(Some(&b.redrive_group()), REDRIVE_TUNABLES)?;
            let marks = b.watermarks(&c)?;
            let committed = b.committed(&c)?;
            let mut start = HashMap::new();
            let mut end = HashMap::new();
            for (p, lo, hi) in marks {
                start.insert(p, committed.get(&p).copied().unwrap_or(lo).max(lo));
                end.insert(p, hi);
            }
            tracing::debug!(?start, ?end, "kafka: redrive group offsets read; assigning");
            b.assign(&c, &start)?;
            let open = end
                .iter()
                .filter(|(p, e)| start.get(p).is_some_and(|s| s < e))
                .map(|(p, e)| (*p, *e))
                .collect();
            Ok(KafkaMoveSession {
                b,
                c: Arc::new(c),
                open,
                batch: Vec::new(),
                blocked: HashMap::new(),
                msgs: Vec::new(),
                tx: None,
                headers,
                position: HashMap::new(),
                unsynced: false,
            })
        }
    }

    #[async_trait]
    impl MoveSession for KafkaMoveSession<'_> {
        async fn next_batch(&mut self, n: usize) -> Result<Option<Vec<Message>>> {
            let mut out = Vec::new();
            let mut done = Vec::new();
            self.batch.clear();
            while out.len() < n && !self.open.is_empty() {
                let wait = if out.is_empty() {
                    idle()
                } else {
                    Duration::from_millis(200)
                };
                let m = match tokio::time::timeout(wait, self.c.recv()).await {
                    Err(_) if out.is_empty() => {
                        // Idle with partitions still short of their end: gaps (transaction
                        // markers, compaction) or a lagging watermark. Done.
                        self.open.clear();
                        break;
                    }
                    Err(_) => break,
                    Ok(r) => r.map_err(|e| kafka_err(&self.b.shown(), e))?,
                };
                let p = m.partition();
                let Some(&end) = self.open.get(&p) else {
                    continue;
                };
                if m.offset() + 1 >= end {
                    self.open.remove(&p);
                    done.push(p);
                }
                if m.offset() >= end {
                    continue;
                }
                self.batch.push((p, m.offset()));
                out.push(self.b.to_message(&m));
            }
            if !done.is_empty() {
                // Stop fetching what the run will not move (records that arrived after it
                // began). Otherwise the consumer keeps a long-poll fetch in flight at the end of
                // the partition, and the final commit waits behind it (seconds, on tansu).
                let mut tpl = TopicPartitionList::new();
                for p in done {
                    tpl.add_partition(&self.b.k.topic, p);
                }
                self.c
                    .pause(&tpl)
                    .map_err(|e| kafka_err(&self.b.shown(), e))?;
            }
            if self.b.exactly_once {
                // Kept for the transactional path (move_locally), which copies them itself;
                // otherwise not needed.
                self.msgs = out.clone();
                for m in &mut self.msgs {
                    self.headers.apply(m);
                }
            }
            Ok(if out.is_empty() { None } else { Some(out) })
        }

        async fn settle(&mut self, _accepted: &[usize], failed: &[usize]) -> Result<()> {
            // Everything not failed is done: moved, or skipped by the filter (a filtered
            // redrive consumes what it skips; see docs/kafka.md).
            for &i in failed {
                let (p, o) = self.batch[i];
                let b = self.blocked.entry(p).or_insert(o);
                *b = (*b).min(o);
            }
            let mut commit: HashMap<i32, i64> = HashMap::new();
            for &(p, o) in &self.batch {
                if self.blocked.get(&p).is_some_and(|b| o >= *b) {
                    continue;
                }
                let e = commit.entry(p).or_insert(o + 1);
                *e = (*e).max(o + 1);
            }
            if commit.is_empty() {
                return Ok(());
            }
            let mut tpl = TopicPartitionList::new();
            for (p, o) in commit {
                self.position.insert(p, o);
                tpl.add_partition_offset(&self.b.k.topic, p, Offset::Offset(o))
                    .map_err(|e| kafka_err(&self.b.shown(), e))?;
            }
            // Asynchronously: the commits of one consumer reach the coordinator in order, and
            // `finish` commits the last position synchronously, so a run ends with its progress
            // stored or an error. A crash before that re-reads the last batches on the next
            // run (copies with the same stable ids), never skips one.
            self.c
                .commit(&tpl, CommitMode::Async)
                .map_err(|e| kafka_err(&self.b.shown(), e))?;
            self.unsynced = true;
            Ok(())
        }

        async fn finish(&mut self) -> Result<()> {
            if !std::mem::take(&mut self.unsynced) {
                return Ok(());
            }
            let mut tpl = TopicPartitionList::new();
            for (&p, &o) in &self.position {
                tpl.add_partition_offset(&self.b.k.topic, p, Offset::Offset(o))
                    .map_err(|e| kafka_err(&self.b.shown(), e))?;
            }
            // A coordinator that moves or is still being looked up fails a commit with a
            // retriable error; retry those for a while, as the Java client's commitSync does,
            // rather than end a complete run with its progress unstored.
            let deadline = Instant::now() + TIMEOUT;
            loop {
                let c = self.c.clone();
                match blocking(|| c.commit(&tpl, CommitMode::Sync)) {
                    Ok(()) => return Ok(()),
                    Err(e) if coordinator_busy(&e) && Instant::now() < deadline => {
                        tracing::debug!(error = %e, "kafka: final commit: coordinator busy; retrying");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    Err(e) => return Err(kafka_err(&self.b.shown(), e)),
                }
            }
        }

        async fn move_locally(
            &mut self,
            target: &Address,
            selected: &[usize],
        ) -> Result<Vec<SendOutcome>> {
            let Address::Kafka(t) = target else {
                unreachable!("checked by can_move_locally")
            };
            let shown = self.b.shown();
            if self.tx.is_none() {
                let mut c = self.b.config(PRODUCER_TUNABLES);
                c.set(
                    "transactional.id",
                    format!("dlqctl-redrive.{}.{}", self.b.k.topic, t.topic),
                )
                .set("enable.idempotence", "true")
                .set("acks", "all");
                let p: FutureProducer = c.create().map_err(|e| kafka_err(&shown, e))?;
                blocking(|| p.init_transactions(TIMEOUT)).map_err(|e| txn_err(&shown, e))?;
                self.tx = Some(p);
            }
            let p = self.tx.as_ref().expect("set above");
            let msgs: Vec<Message> = selected.iter().map(|&i| self.msgs[i].clone()).collect();
            p.begin_transaction().map_err(|e| txn_err(&shown, e))?;
            let outcome = async {
                let out = send_all(p, &t.topic, &shown, &msgs).await?;
                if let Some(bad) = out.iter().find_map(|o| match o {
                    SendOutcome::Sent => None,
                    SendOutcome::Rejected { reason } | SendOutcome::Conflict { reason } => {
                        Some(reason.clone())
                    }
                }) {
                    return Err(Error::Backend {
                        target: t.topic.clone(),
                        reason: format!(
                            "a copy was refused ({bad}); the transaction is aborted, nothing moved"
                        ),
                    });
                }
                // Every record of the batch is consumed (the skipped ones too), atomically
                // with the copies.
                let mut commit: HashMap<i32, i64> = HashMap::new();
                for &(part, o) in &self.batch {
                    let e = commit.entry(part).or_insert(o + 1);
                    *e = (*e).max(o + 1);
                }
                let mut tpl = TopicPartitionList::new();
                for (part, o) in commit {
                    tpl.add_partition_offset(&self.b.k.topic, part, Offset::Offset(o))
                        .map_err(|e| kafka_err(&shown, e))?;
                }
                let cgm = self.c.group_metadata().ok_or_else(|| Error::Backend {
                    target: shown.clone(),
                    reason: "no consumer group metadata".into(),
                })?;
                blocking(|| p.send_offsets_to_transaction(&tpl, &cgm, TIMEOUT))
                    .map_err(|e| txn_err(&shown, e))?;
                blocking(|| p.commit_transaction(TIMEOUT)).map_err(|e| txn_err(&shown, e))?;
                tracing::debug!(records = msgs.len(), "kafka: transaction committed");
                Ok(out)
            }
            .await;
            if outcome.is_err() {
                let _ = blocking(|| p.abort_transaction(TIMEOUT));
            }
            outcome
        }
    }
}
