//! Writing copies to a topic: the idempotent producer, the headers a copy carries, and the
//! delivery reports that decide each copy's outcome.
//!
//! rdkafka's `FutureProducer` gives every record a channel of its own and polls on a thread
//! that stops only between 100 ms waits; a redrive hands over thousands of records a batch and
//! ends as soon as the last is delivered. So this producer keeps one tracker per batch (the
//! delivery callback counts down and keeps only failures) and its own polling thread, which
//! stops within [`POLL`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::client::ClientContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use serde_json::Value;
use tokio::sync::Notify;

use super::{FROM_HEADER, STABLE_ID_HEADER, kafka_err};
use crate::backend::{PendingSend, SendOutcome};
use crate::error::{Error, Result};
use crate::message::Message;

/// dlqctl's producer defaults (`[kafka.properties]` overrides them): keys land on the
/// partition a Java producer picks (murmur2), and a copy that cannot be delivered in 30 s is
/// reported as failed (and its dead letter kept).
pub(super) const PRODUCER_TUNABLES: &[(&str, &str)] = &[
    ("partitioner", "murmur2_random"),
    ("message.timeout.ms", "30000"),
];

/// The polling thread's longest wait for delivery reports: how soon it notices a stop.
const POLL: Duration = Duration::from_millis(10);

/// The outcomes of one batch of records, filled in by the delivery callback.
struct Tracker {
    remaining: AtomicUsize,
    /// Only the records that failed, by index (the rest were delivered).
    failures: Mutex<Vec<(usize, KafkaError)>>,
    done: Notify,
}

impl Tracker {
    fn report(&self, index: usize, error: Option<KafkaError>) {
        if let Some(e) = error {
            self.failures
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((index, e));
        }
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done.notify_one();
        }
    }
}

/// A record's delivery opaque: its batch's tracker and its place in the batch.
pub(super) struct Slot {
    tracker: Arc<Tracker>,
    index: usize,
}

pub(super) struct Reports;

impl ClientContext for Reports {}

impl ProducerContext for Reports {
    type DeliveryOpaque = Box<Slot>;

    fn delivery(&self, result: &DeliveryResult<'_>, slot: Box<Slot>) {
        let error = result.as_ref().err().map(|(e, _)| e.clone());
        slot.tracker.report(slot.index, error);
    }
}

/// An idempotent (or transactional) producer and the thread that serves its delivery reports.
pub(super) struct Copier {
    inner: Arc<BaseProducer<Reports>>,
    stop: Arc<AtomicBool>,
    poller: Option<JoinHandle<()>>,
}

impl Copier {
    pub(super) fn new(config: &ClientConfig, b: &super::KafkaBackend) -> Result<Copier> {
        let inner: Arc<BaseProducer<Reports>> = Arc::new(
            config
                .create_with_context(Reports)
                .map_err(|e| b.client_err(e))?,
        );
        let stop = Arc::new(AtomicBool::new(false));
        let poller = {
            let (p, stop) = (inner.clone(), stop.clone());
            std::thread::Builder::new()
                .name("dlqctl-kafka-dr".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        p.poll(POLL);
                    }
                })
                .map_err(|e| Error::Backend {
                    target: b.shown(),
                    reason: format!("cannot start the delivery report thread: {e}"),
                })?
        };
        Ok(Copier {
            inner,
            stop,
            poller: Some(poller),
        })
    }

    pub(super) fn producer(&self) -> &BaseProducer<Reports> {
        &self.inner
    }
}

impl Drop for Copier {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.poller.take() {
            let _ = h.join();
        }
    }
}

/// Ask the cluster about `topic` through the producer, a second time.
///
/// librdkafka's idempotent producer asks for its producer id when a metadata response
/// arrives; if the first one comes back before the connection to a broker is up, the request
/// waits for a 500 ms retry timer, and so does every record queued meanwhile
/// (`rdkafka_idempotence.c`, `rd_kafka_idemp_pid_fsm`). A second metadata request, once the
/// first answered, finds the broker up and gets the id at once. Runs on a thread of its own;
/// the first send waits for it (see [`super::KafkaBackend::send_start`]).
pub(super) fn warm_up(p: &Copier, topic: &str) {
    let started = Instant::now();
    let r = p
        .producer()
        .client()
        .fetch_metadata(Some(topic), Duration::from_secs(2));
    tracing::debug!(
        ms = started.elapsed().as_millis() as u64,
        ok = r.is_ok(),
        "kafka: producer warmed up"
    );
}

/// The headers of a copy: the original ones byte for byte (nulls and repeats kept), the
/// stable id in `dlqctl-stable-id` when that header does not hold it yet, and where the copy
/// came from.
pub(super) fn copy_headers(m: &Message) -> OwnedHeaders {
    let mut headers = OwnedHeaders::new_with_capacity(m.attributes.len() + 2);
    // Only `dlqctl-stable-id` carries the id to every reader: the header a source's `id` rule
    // names (`header:x-request-id`) is read as the id only where the topic has that rule too,
    // and without it a reader takes the record's coordinates. A stale `dlqctl-stable-id`
    // (another value) is replaced.
    let carries_id = m.attributes.iter().any(|a| m.holds_stable_id(a));
    for a in &m.attributes {
        if !carries_id && a.name == STABLE_ID_HEADER {
            continue;
        }
        headers = headers.insert(Header {
            key: &a.name,
            value: a.value.as_bytes(),
        });
    }
    if !carries_id {
        headers = headers.insert(Header {
            key: STABLE_ID_HEADER,
            value: Some(m.id.as_bytes()),
        });
    }
    // Where it came from, when the source named it (a file's record may not: no empty value,
    // which SQS could not carry on).
    if m.native_id.is_empty() {
        return headers;
    }
    headers.insert(Header {
        key: FROM_HEADER,
        value: Some(m.native_id.as_bytes()),
    })
}

/// librdkafka's `message.max.bytes` where the config does not set it.
pub(super) const DEFAULT_MESSAGE_MAX_BYTES: usize = 1_000_000;

/// A tombstone (a record without a value) is copied as one.
fn tombstone(m: &Message) -> bool {
    m.meta
        .get("tombstone")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The size librdkafka gives a copy when it decides, before queueing it, whether the record is
/// over `message.max.bytes` (`rd_kafka_msg_new0` and `rd_kafka_msg_max_wire_size` in
/// librdkafka 2.12): a v2 record's largest overhead (36 bytes:
/// `RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD`), the key, the value, and each header of
/// [`copy_headers`] as serialized (its name and value, each after its zigzag-varint length; a
/// null value counts as empty).
pub(super) fn wire_size(m: &Message) -> usize {
    use rdkafka::message::Headers;
    const V2_MAX_OVERHEAD: usize = 36;
    fn varint(n: usize) -> usize {
        let mut z = (n as u64) << 1;
        let mut len = 1;
        while z >= 0x80 {
            z >>= 7;
            len += 1;
        }
        len
    }
    let headers = copy_headers(m);
    let headers: usize = headers
        .iter()
        .map(|h| {
            let (k, v) = (h.key.len(), h.value.map_or(0, <[u8]>::len));
            k + v + varint(k) + varint(v)
        })
        .sum();
    let key = m.key.as_ref().map_or(0, Vec::len);
    let value = if tombstone(m) { 0 } else { m.body.len() };
    V2_MAX_OVERHEAD + key + value + headers
}

/// The record a copy of `m` is: its key, its value (none for a tombstone) and
/// [`copy_headers`].
fn record<'a, C: rdkafka::util::IntoOpaque>(
    topic: &'a str,
    m: &'a Message,
    opaque: C,
) -> BaseRecord<'a, [u8], [u8], C> {
    let mut rec = BaseRecord::with_opaque_to(topic, opaque).headers(copy_headers(m));
    if let Some(k) = &m.key {
        rec = rec.key(k.as_slice());
    }
    if !tombstone(m) {
        rec = rec.payload(m.body.as_slice());
    }
    rec
}

/// Hand every record of `batch` to the producer (librdkafka copies it into its queue), and
/// return the outcomes to come, all known once the last delivery report arrived.
pub(super) async fn enqueue(
    producer: &Copier,
    topic: &str,
    shown: &str,
    batch: &[Message],
) -> PendingSend {
    let tracker = Arc::new(Tracker {
        remaining: AtomicUsize::new(batch.len()),
        failures: Mutex::new(Vec::new()),
        done: Notify::new(),
    });
    for (index, m) in batch.iter().enumerate() {
        let slot = Box::new(Slot {
            tracker: tracker.clone(),
            index,
        });
        let mut rec = record(topic, m, slot);
        // librdkafka's queue is bounded (queue.buffering.max.messages): wait for deliveries
        // to make room rather than fail the copy.
        loop {
            match producer.inner.send(rec) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    rec = back;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err((e, back)) => {
                    // Refused before it was queued: no delivery report will come.
                    tracker.report(index, Some(e));
                    drop(back);
                    break;
                }
            }
        }
    }
    let shown = shown.to_string();
    let n = batch.len();
    Box::pin(async move { outcomes(&tracker, n, &shown).await })
}

/// Wait for the last delivery report of a batch; every record not reported failed was
/// delivered.
async fn outcomes(tracker: &Tracker, n: usize, shown: &str) -> Result<Vec<SendOutcome>> {
    while tracker.remaining.load(Ordering::Acquire) > 0 {
        tracker.done.notified().await;
    }
    let mut out = vec![SendOutcome::Sent; n];
    let failures = std::mem::take(&mut *tracker.failures.lock().unwrap_or_else(|p| p.into_inner()));
    for (i, e) in failures {
        out[i] = match kafka_err(shown, e) {
            err @ Error::Unreachable { .. } => return Err(err),
            other => SendOutcome::Rejected {
                reason: other.to_string(),
            },
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rdkafka::producer::BaseProducer;

    use super::*;
    use crate::message::{AttrValue, Attribute};

    /// A copy of `n` bytes of body, with a key, headers and a tombstone flag as given.
    fn copy(
        key: Option<usize>,
        body: usize,
        headers: &[(usize, Option<usize>)],
        tomb: bool,
    ) -> Message {
        let mut m = Message {
            id: "ord-7".into(),
            native_id: "orders.DLT/0@41".into(),
            body: vec![b'x'; body],
            key: key.map(|n| vec![b'k'; n]),
            attributes: headers
                .iter()
                .enumerate()
                .map(|(i, (name, value))| Attribute {
                    name: format!("{i}{}", "h".repeat(*name)),
                    value: value.map_or(AttrValue::Null, |n| AttrValue::text("v".repeat(n))),
                })
                .collect(),
            ..Message::default()
        };
        if tomb {
            m.meta.insert("tombstone", Value::Bool(true));
        }
        m
    }

    /// One producer for every case: librdkafka's smallest allowed `message.max.bytes`, and
    /// nothing listening on port 9 (a record over the limit is refused in `send`, before any
    /// connection; the others wait in its queue).
    fn producer() -> &'static BaseProducer {
        static P: std::sync::OnceLock<BaseProducer> = std::sync::OnceLock::new();
        P.get_or_init(|| {
            ClientConfig::new()
                .set("bootstrap.servers", "127.0.0.1:9")
                .set("message.max.bytes", "1000")
                .create()
                .expect("a producer")
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// The dry run's arithmetic and librdkafka's own refusal agree on copies within two
        /// bytes of the limit: keys, tombstones, headers with null and long values (lengths
        /// past a one-byte varint included).
        #[test]
        fn wire_size_is_what_librdkafka_refuses_over_message_max_bytes(
            key in proptest::option::of(0usize..200),
            headers in proptest::collection::vec((0usize..150, proptest::option::of(0usize..200)), 0..4),
            tomb in any::<bool>(),
            off in -2i64..=2,
        ) {
            let rest = wire_size(&copy(key, 0, &headers, tomb)) as i64;
            let body = (1000 + off - rest).max(0) as usize;
            let m = copy(key, body, &headers, tomb);
            let refused = match producer().send(record("t", &m, ())) {
                Ok(()) => false,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge), _)) => true,
                Err((e, _)) => panic!("unexpected {e}"),
            };
            prop_assert_eq!(wire_size(&m) > 1000, refused, "wire size {}", wire_size(&m));
        }
    }
}
