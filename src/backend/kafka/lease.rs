//! One redrive of a dead-letter topic at a time: the redrive lease.
//!
//! Two redrives of one topic would both copy the same records (each reads from the redrive
//! group's committed offsets). PostgreSQL has advisory locks for this; Kafka has consumer-group
//! membership, which the group coordinator keeps alive by heartbeats and drops when they stop:
//!
//! * A redrive joins the group `dlqctl-redrive.<topic>.lease`, subscribed to the topic. It
//!   reads nothing: every partition is paused the moment it is assigned, the group never
//!   commits, and it starts at the end (`auto.offset.reset=latest`). A thread polls it to keep
//!   the membership (and to answer rebalances) until the run ends; then it leaves the group.
//! * The run holds the lease when the coordinator's first assignment gives it every partition
//!   of the topic. A second run that joins while the first is alive shares the partitions with
//!   it: members are sorted by their client id, which begins with the run's start time, so the
//!   earlier run keeps the first share and the newcomer holds fewer than all (none, for a
//!   one-partition topic). The newcomer leaves and refuses (exit 3), naming the holder where
//!   the broker lists members (the client id carries user, host, pid and start time).
//! * A holder that crashed stops heartbeating; the coordinator drops it once
//!   `session.timeout.ms` (10 s; `[kafka.properties]` may change it) has passed, and the next
//!   run gets every partition.
//!
//! Two runs that start within the same instant may both hold fewer than all partitions and
//! both refuse; neither moves anything, and a re-run succeeds.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rdkafka::ClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};

use super::{KafkaBackend, blocking, kafka_err};
use crate::error::{Error, Result};

/// How long the coordinator keeps a member that stopped heartbeating (librdkafka's
/// `session.timeout.ms`, dlqctl's default).
const SESSION_TIMEOUT: &str = "10000";

/// What the coordinator assigned, as the rebalance callback saw it.
#[derive(Default)]
struct Assignments {
    /// Partitions in the latest assignment (None: no assignment yet).
    latest: Mutex<Option<usize>>,
}

impl ClientContext for Assignments {}

impl ConsumerContext for Assignments {
    fn post_rebalance(&self, c: &BaseConsumer<Self>, r: &Rebalance<'_>) {
        if let Rebalance::Assign(tpl) = r {
            // Read nothing: the membership is the point.
            let _ = c.pause(tpl);
            *self.latest.lock().unwrap_or_else(|p| p.into_inner()) = Some(tpl.count());
        }
    }
}

/// A held redrive lease; released (the group left) when dropped.
pub(super) struct Lease {
    stop: Arc<AtomicBool>,
    keeper: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.keeper.take() {
            let _ = h.join();
        }
    }
}

pub(super) fn group(b: &KafkaBackend) -> String {
    format!("{}.lease", b.redrive_group())
}

/// Take the redrive lease of `b`'s topic, or say who holds it.
pub(super) fn acquire(b: &KafkaBackend) -> Result<Lease> {
    let group = group(b);
    let started = chrono::Utc::now();
    let client_id = format!(
        "dlqctl-lease-{:015}-{}@{}-pid{}",
        started.timestamp_millis(),
        crate::operator::user(),
        crate::operator::host(),
        std::process::id()
    );
    // The session timeout and heartbeat are librdkafka's own properties: `[kafka.properties]`
    // may change them (a shorter timeout lets a re-run after a crash start sooner).
    let mut cfg = b.config(&[
        ("queued.max.messages.kbytes", "1024"),
        ("session.timeout.ms", SESSION_TIMEOUT),
        ("heartbeat.interval.ms", "1000"),
    ]);
    let session_ms: u64 = cfg
        .get("session.timeout.ms")
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    cfg.set("group.id", &group)
        .set("client.id", &client_id)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "latest")
        // Eager assignment by member order: the earlier run (the smaller client id) keeps the
        // first share.
        .set("partition.assignment.strategy", "range");
    let c: BaseConsumer<Assignments> = cfg
        .create_with_context(Assignments::default())
        .map_err(|e| kafka_err(&b.shown(), e))?;
    c.subscribe(&[&b.k.topic])
        .map_err(|e| kafka_err(&b.shown(), e))?;
    let total = b.topic_partitions;
    // A live holder rejoins within a second; a dead one is dropped after the session timeout.
    let deadline = Instant::now() + Duration::from_millis(session_ms + 10_000);
    let got = blocking(|| {
        loop {
            if let Some(Err(e)) = c.poll(Duration::from_millis(100))
                && !super::passing(&e)
            {
                return Err(kafka_err(&b.shown(), e));
            }
            if let Some(n) = *c.context().latest.lock().unwrap_or_else(|p| p.into_inner()) {
                return Ok(Some(n));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
        }
    })?;
    match got {
        Some(n) if n >= total => {
            tracing::debug!(%group, %client_id, partitions = n, "kafka: redrive lease taken");
            let stop = Arc::new(AtomicBool::new(false));
            let s2 = stop.clone();
            let keeper = std::thread::Builder::new()
                .name("dlqctl-kafka-lease".into())
                .spawn(move || {
                    while !s2.load(Ordering::Relaxed) {
                        let _ = c.poll(Duration::from_millis(100));
                    }
                    // Leave the group now rather than after the session timeout.
                    c.unsubscribe();
                    let _ = c.poll(Duration::from_millis(10));
                })
                .map_err(|e| Error::Backend {
                    target: b.shown(),
                    reason: format!("cannot start the lease thread: {e}"),
                })?;
            Ok(Lease {
                stop,
                keeper: Some(keeper),
            })
        }
        other => {
            let holders = holders(&c, &group, &client_id);
            c.unsubscribe();
            let who = if holders.is_empty() {
                format!(
                    "another run is a member of the consumer group {group} (this broker does not say which)"
                )
            } else {
                holders.join("; ")
            };
            Err(Error::Backend {
                target: b.shown(),
                reason: format!(
                    "another dlqctl redrive of this topic is running ({who}){}: two would copy the same records. Wait for it to finish (a run that crashed lets go within {} s), then re-run",
                    if other.is_none() {
                        ", or the group coordinator did not answer in time"
                    } else {
                        ""
                    },
                    session_ms.div_ceil(1000)
                ),
            })
        }
    }
}

/// The other members of the lease group, as the broker lists them (`user@host, pid N, since
/// TIME`).
fn holders(c: &BaseConsumer<Assignments>, group: &str, me: &str) -> Vec<String> {
    let Ok(list) = blocking(|| c.fetch_group_list(Some(group), Duration::from_secs(5))) else {
        return Vec::new();
    };
    list.groups()
        .iter()
        .flat_map(|g| g.members())
        .filter(|m| m.client_id() != me)
        .map(|m| describe_holder(m.client_id(), m.client_host()))
        .collect()
}

/// `dlqctl-lease-<millis>-<user>@<host>-pid<N>` as a person reads it.
fn describe_holder(client_id: &str, client_host: &str) -> String {
    let Some(rest) = client_id.strip_prefix("dlqctl-lease-") else {
        return format!("{client_id} from {client_host}");
    };
    let (millis, rest) = rest.split_once('-').unwrap_or(("", rest));
    let (who, pid) = rest.rsplit_once("-pid").unwrap_or((rest, "?"));
    let since = millis
        .parse::<i64>()
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| "?".into());
    format!("{who}, pid {pid}, since {since}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn holders_are_described_from_their_client_id() {
        assert_eq!(
            super::describe_holder(
                "dlqctl-lease-001796380000000-ann@ops-1-pid4242",
                "/10.0.0.7"
            ),
            "ann@ops-1, pid 4242, since 2026-11-30 09:46:40 UTC"
        );
        assert_eq!(
            super::describe_holder("someone-else", "/10.0.0.8"),
            "someone-else from /10.0.0.8"
        );
    }
}
