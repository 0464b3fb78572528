//! Building clients: the config every client starts from (dlqctl's defaults, the user's
//! `[kafka.properties]`, then what keeps it safe), the consumers and the producer, and the
//! offsets they look up (watermarks, a range's start, committed offsets, topic configs).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rdkafka::admin::{AdminClient, AdminOptions, ResourceSpecifier};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

use super::{KafkaBackend, TIMEOUT, blocking, kafka_err, produce};
use crate::error::Result;

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
pub(super) const REDRIVE_TUNABLES: &[(&str, &str)] = &[("fetch.wait.max.ms", "100")];

/// A client config: `bootstrap.servers` from the URL, then `tunables` (dlqctl's defaults), then
/// the user's `[kafka.properties]`, which override both; then what keeps every client safe,
/// which nothing overrides: no client ever creates a topic (librdkafka's producers ask the
/// broker to create a missing topic by default, and a broker with
/// `auto.create.topics.enable=true`, Apache Kafka's default, would create a mistyped `--to`).
fn client_config(
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

impl KafkaBackend {
    /// A client config: `bootstrap.servers` from the URL, then `tunables` (dlqctl's defaults),
    /// then the user's `[kafka.properties]`, which override both. What a client needs to stay
    /// safe is set by the caller after this, so that it wins.
    pub(super) fn config(&self, tunables: &[(&str, &str)]) -> ClientConfig {
        client_config(&self.k.brokers, tunables, &self.props)
    }

    /// A consumer that never joins a group; with `group`, only to read and commit that
    /// group's offsets (still `assign()`, never `subscribe()`).
    pub(super) fn consumer(&self, group: Option<&str>) -> Result<StreamConsumer> {
        self.consumer_with(group, &[])
    }

    /// The consumer that reads and commits the redrive group's offsets: the one the topic was
    /// opened with (a client fewer to start).
    pub(super) fn redrive_consumer(&self) -> Result<Arc<BaseConsumer>> {
        match &self.opener {
            Some(c) => Ok(c.clone()),
            None => Ok(Arc::new(
                self.consumer_with(Some(&self.redrive_group()), REDRIVE_TUNABLES)?,
            )),
        }
    }

    /// [`KafkaBackend::consumer`] with more defaults of dlqctl's (the user's still win).
    pub(super) fn consumer_with<C: rdkafka::config::FromClientConfig>(
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
        c.create().map_err(|e| self.client_err(e))
    }

    /// A client that could not be created: a property refused names the config file.
    pub(super) fn client_err(&self, e: rdkafka::error::KafkaError) -> crate::error::Error {
        super::errors::client_err(&self.shown(), self.props_file.as_deref(), e)
    }

    pub(super) async fn producer(&self) -> Result<&Arc<produce::Copier>> {
        self.producer
            .get_or_try_init(|| async {
                let mut c = self.config(produce::PRODUCER_TUNABLES);
                c.set("enable.idempotence", "true").set("acks", "all");
                Ok(Arc::new(produce::Copier::new(&c, self)?))
            })
            .await
    }

    pub(super) fn watermarks(&self, c: &impl Consumer) -> Result<Vec<(i32, i64, i64)>> {
        let mut out = Vec::new();
        for &p in &self.partitions {
            let (lo, hi) = blocking(|| c.fetch_watermarks(&self.k.topic, p, TIMEOUT))
                .map_err(|e| kafka_err(&self.shown(), e))?;
            out.push((p, lo, hi));
        }
        Ok(out)
    }

    /// Start offsets for a scan: the address's range (from / since), else the beginning.
    pub(super) fn start_offsets(
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

    pub(super) fn assign(&self, c: &impl Consumer, start: &HashMap<i32, i64>) -> Result<()> {
        let mut tpl = TopicPartitionList::new();
        for (&p, &o) in start {
            tpl.add_partition_offset(&self.k.topic, p, Offset::Offset(o))
                .map_err(|e| kafka_err(&self.shown(), e))?;
        }
        c.assign(&tpl).map_err(|e| kafka_err(&self.shown(), e))
    }

    pub(super) async fn topic_configs(&self, topic: &str) -> Result<HashMap<String, String>> {
        let admin: AdminClient<DefaultClientContext> =
            self.config(&[]).create().map_err(|e| self.client_err(e))?;
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

    pub(super) fn committed(&self, c: &impl Consumer) -> Result<HashMap<i32, i64>> {
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
