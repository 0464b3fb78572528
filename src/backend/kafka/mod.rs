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
use chrono::Utc;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message as _;
use rdkafka::producer::Producer;
use rdkafka::{Offset, TopicPartitionList};

use super::{
    Capabilities, Inspection, MessageStream, MoveOptions, MoveSession, OpenOptions, PendingSend,
    QueueBackend, QueueSink, ScanOptions, SendOutcome, TailOptions, VerifyFacts,
};
use crate::address::{Address, KafkaAddress};
use crate::config::{IdSource, QueueConfig};
use crate::error::{Error, Result};
use crate::headers::HeaderRules;
use crate::message::Message;

mod client;
pub mod conventions;
mod errors;
mod facts;
mod lease;
mod produce;
mod reader;
mod record;
mod session;

use client::REDRIVE_TUNABLES;
use errors::{Trouble, brokers_of, coordinator_busy, kafka_err, txn_err};
use record::decode;

/// Header carrying the stable id across a move, when no producer id is configured.
pub use crate::message::STABLE_ID_ATTRIBUTE as STABLE_ID_HEADER;
/// Provenance added to every record dlqctl writes to Kafka: `TOPIC/PARTITION@OFFSET` of the
/// dead letter it was copied from.
pub const FROM_HEADER: &str = "dlqctl-redriven-from";

const TIMEOUT: Duration = Duration::from_secs(10);

/// How long a partition may give nothing before a scan treats it as drained, by default.
const READ_IDLE: Duration = Duration::from_millis(3000);

pub struct KafkaBackend {
    addr: Address,
    k: KafkaAddress,
    props: BTreeMap<String, String>,
    /// The config file `props` were read from (errors name it).
    props_file: Option<std::path::PathBuf>,
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

fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// Open an address of this backend (its line in `backend::OPENERS`).
pub fn open<'a>(
    addr: &'a crate::address::Address,
    opts: &'a crate::backend::OpenOptions,
) -> futures::future::BoxFuture<'a, crate::error::Result<Box<dyn crate::backend::QueueBackend>>> {
    crate::backend::boxed(KafkaBackend::open(addr, opts))
}

impl KafkaBackend {
    pub async fn open(addr: &Address, opts: &OpenOptions) -> Result<KafkaBackend> {
        let Address::Kafka(k) = addr else {
            unreachable!("KafkaBackend::open with a non-Kafka address")
        };
        let mut b = KafkaBackend {
            addr: addr.clone(),
            k: k.clone(),
            props: opts.backends.kafka.properties.clone(),
            props_file: opts.backends.file.clone(),
            lease_timeout: opts
                .backends
                .kafka
                .lease_timeout
                .unwrap_or(Duration::from_secs(10)),
            read_idle: opts.backends.kafka.read_idle.unwrap_or(READ_IDLE),
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
}

#[async_trait]
impl QueueBackend for KafkaBackend {
    fn address(&self) -> &Address {
        &self.addr
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            tail: true,
            delete: true,
            read_side_effect: None,
            per_message_destination: true,
            exactly_once: true,
            archive_only: false,
            bounded_reads: true,
            no_delete: None,
        }
    }

    async fn inspect(&self, classifier: &crate::classify::Classifier) -> Result<Inspection> {
        self.inspect_topic(classifier).await
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

    fn settles_by_position(&self) -> bool {
        true
    }

    fn describe_move(&self, how: &crate::backend::MoveHow) -> String {
        if how.purge {
            return crate::backend::archive_then(
                how.archived,
                "commit the redrive group's offsets past each record: Kafka cannot delete single records, so they stay in the topic until its retention removes them, and no redrive reads them again",
            );
        }
        if how.exactly_once {
            "copy each record to the target topic and commit the redrive group's offsets past it, in one transaction (nothing is deleted from the topic)".into()
        } else {
            "copy each record to the target, then commit the redrive group's offsets past it (nothing is deleted from the topic)".into()
        }
    }

    async fn nothing_pending(&self) -> Result<Option<String>> {
        let Some(o) = &self.opener else {
            return Ok(None);
        };
        let marks = self.watermarks(o.as_ref())?;
        let committed = self.committed(o.as_ref())?;
        let held: i64 = marks.iter().map(|(_, lo, hi)| (hi - lo).max(0)).sum();
        let pending = marks
            .iter()
            .any(|(p, lo, hi)| committed.get(p).copied().unwrap_or(*lo).max(*lo) < *hi);
        Ok((held > 0 && !pending).then(|| {
            format!(
                "the redrive group {} has consumed everything: nothing pending. The topic still holds about {} (until its retention deletes them): `dlqctl replay` reads the topic from the start, `dlqctl peek` and `classify` show them",
                self.redrive_group(),
                crate::human::count(held as u64, "record", "records")
            )
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
        self.verify_topic(cfg).await
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

    fn sink(&self) -> Option<&dyn QueueSink> {
        Some(self)
    }
}

#[async_trait]
impl QueueSink for KafkaBackend {
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

    /// librdkafka refuses a record over `message.max.bytes` before queueing it: the same
    /// arithmetic here ([`produce::wire_size`]), so that a dry run predicts the refusal with the
    /// real run's words. The broker's own limit (the topic's `max.message.bytes`) shows in a
    /// real run only.
    fn check(&self, copy: &Message) -> std::result::Result<(), String> {
        let max = self
            .props
            .get("message.max.bytes")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(produce::DEFAULT_MESSAGE_MAX_BYTES);
        if produce::wire_size(copy) > max {
            let e = KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge);
            return Err(kafka_err(&self.shown(), e).to_string());
        }
        Ok(())
    }
}
