//! One redrive of a dead-letter topic at a time: the redrive lease.
//!
//! Two redrives of one topic would both copy the same records (each reads from the redrive
//! group's committed offsets). PostgreSQL has advisory locks for this. Kafka has no lock, but
//! every broker keeps committed offsets, and a committed offset is a value only its writer
//! changes; so the lease is one:
//!
//! * The lease lives in the consumer group `dlqctl-redrive.<topic>.lease`, as its committed
//!   "offset" on partition 0 of the topic: `expiry × 10⁶ + pid % 10⁶`, the expiry in Unix
//!   milliseconds. Its commit metadata (kept by brokers that keep metadata; tansu does not)
//!   says who holds it: `user@host pid N since TIME`. The group never has members.
//! * A redrive that finds the lease free (no value, or one whose expiry has passed) writes its
//!   own, waits a moment and reads it back: if another run wrote meanwhile, the later write
//!   won and the other run refuses. While the run lasts a thread renews the lease every third
//!   of `[kafka] lease_timeout` (10 s); at the end the run releases it (writes an expiry in
//!   the past).
//! * A run that finds the lease held watches it: a holder that renews it is alive, and the
//!   newcomer refuses (exit 3) at once, naming it; a lease that runs out without renewal was
//!   left by a run that crashed, and the newcomer takes it. So a re-run after a crash waits at
//!   most one lease timeout.
//!
//! The lease group's offset is no read position: exclude `*.lease` groups from lag alerts.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{Offset, TopicPartitionList};

use super::{KafkaBackend, blocking, kafka_err};
use crate::error::{Error, Result};

/// The holder's pid in the lease value: its last six decimal digits.
const PID_DIGITS: i64 = 1_000_000;

/// A held redrive lease; released when dropped.
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

/// A lease as read from the group: when it runs out, whose it is.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Held {
    raw: i64,
    expiry_ms: i64,
    pid: i64,
    /// `user@host pid N since TIME`, where the broker keeps commit metadata.
    who: Option<String>,
}

impl Held {
    fn from_offset(raw: i64, metadata: &str) -> Held {
        Held {
            raw,
            expiry_ms: raw / PID_DIGITS,
            pid: raw % PID_DIGITS,
            who: Some(metadata.to_string()).filter(|m| !m.is_empty()),
        }
    }

    fn describe(&self) -> String {
        let until = chrono::DateTime::from_timestamp_millis(self.expiry_ms)
            .map(|t| t.format("%H:%M:%S UTC").to_string())
            .unwrap_or_else(|| "?".into());
        match &self.who {
            Some(w) => format!("{w}; renewed until {until}"),
            None => format!("pid {}; renewed until {until}", self.pid),
        }
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

pub(super) fn group(b: &KafkaBackend) -> String {
    format!("{}.lease", b.redrive_group())
}

/// Reads and writes the lease value.
struct Keeper {
    c: Arc<BaseConsumer>,
    topic: String,
    shown: String,
    /// `user@host pid N since TIME`: the commit metadata.
    me: String,
    pid: i64,
}

impl Keeper {
    fn read(&self) -> Result<Option<Held>> {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition(&self.topic, 0);
        let got = self
            .c
            .committed_offsets(tpl, super::TIMEOUT)
            .map_err(|e| kafka_err(&self.shown, e))?;
        Ok(got.elements().first().and_then(|e| match e.offset() {
            Offset::Offset(o) if o > 0 => Some(Held::from_offset(o, e.metadata())),
            _ => None,
        }))
    }

    fn write(&self, expiry_ms: i64) -> Result<()> {
        let mut tpl = TopicPartitionList::new();
        let mut e = tpl.add_partition(&self.topic, 0);
        e.set_offset(Offset::Offset(expiry_ms * PID_DIGITS + self.pid))
            .map_err(|e| kafka_err(&self.shown, e))?;
        e.set_metadata(&self.me);
        self.c
            .commit(&tpl, CommitMode::Sync)
            .map_err(|e| kafka_err(&self.shown, e))
    }

    fn is_mine(&self, h: &Held) -> bool {
        h.pid == self.pid && h.who.as_ref().is_none_or(|w| *w == self.me)
    }
}

/// Take the redrive lease of `b`'s topic, or say who holds it.
pub(super) fn acquire(b: &KafkaBackend) -> Result<Lease> {
    let group = group(b);
    let timeout = b.lease_timeout.max(Duration::from_millis(300));
    let k = Keeper {
        c: Arc::new(b.consumer_with(Some(&group), &[])?),
        topic: b.k.topic.clone(),
        shown: b.shown(),
        me: format!(
            "{}@{} pid {} since {}",
            crate::operator::user(),
            crate::operator::host(),
            std::process::id(),
            chrono::Utc::now().format("%Y-%m-%d %H:%M:%S UTC")
        ),
        pid: i64::from(std::process::id()) % PID_DIGITS,
    };
    let shown = k.shown.clone();
    blocking(|| {
        let mut said = false;
        let started = Instant::now();
        // Watch a held lease until it is renewed (its holder is alive) or runs out.
        while let Some(held) = k.read()? {
            if held.expiry_ms <= now_ms() {
                break;
            }
            if !said && started.elapsed() > Duration::from_secs(1) {
                said = true;
                tracing::warn!(
                    "{shown}: another redrive's lease ({}) is still on: waiting up to {} s to see whether it is renewed",
                    held.describe(),
                    timeout.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
            match k.read()? {
                Some(now) if now.raw != held.raw && now.expiry_ms > now_ms() => {
                    return Err(held_by(&shown, &now, timeout));
                }
                _ => {}
            }
        }
        k.write(now_ms() + timeout.as_millis() as i64)?;
        // Two runs that found the lease free at once both wrote: the later write won.
        std::thread::sleep(Duration::from_millis(300));
        match k.read()? {
            Some(h) if k.is_mine(&h) => Ok(()),
            Some(other) => Err(held_by(&shown, &other, timeout)),
            None => Err(Error::Backend {
                target: shown.clone(),
                reason: format!(
                    "the redrive lease (consumer group {group}) could not be written: the broker kept no offset"
                ),
            }),
        }
    })?;
    tracing::debug!(%group, holder = %k.me, "kafka: redrive lease taken");
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let keeper = std::thread::Builder::new()
        .name("dlqctl-kafka-lease".into())
        .spawn(move || {
            let every = timeout / 3;
            let mut last = Instant::now();
            while !s2.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50).min(every));
                if last.elapsed() >= every {
                    last = Instant::now();
                    if let Err(e) = k.write(now_ms() + timeout.as_millis() as i64) {
                        tracing::warn!("could not renew the redrive lease: {e}");
                    }
                }
            }
            // Released: an expiry in the past.
            if let Err(e) = k.write(now_ms() - 1) {
                tracing::warn!(
                    "could not release the redrive lease ({e}); it runs out by itself within {} s",
                    timeout.as_secs()
                );
            }
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

fn held_by(shown: &str, h: &Held, timeout: Duration) -> Error {
    Error::Backend {
        target: shown.to_string(),
        reason: format!(
            "another dlqctl redrive of this topic is running ({}): two would copy the same records. Wait for it to finish (the lease of a run that crashed runs out within {} s), then re-run",
            h.describe(),
            timeout.as_secs()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lease_value_holds_expiry_and_pid() {
        let h = Held::from_offset(1_796_380_000_000 * PID_DIGITS + 4242, "");
        assert_eq!((h.expiry_ms, h.pid), (1_796_380_000_000, 4242));
        assert_eq!(h.describe(), "pid 4242; renewed until 10:26:40 UTC");
        let h = Held::from_offset(
            5 * PID_DIGITS + 7,
            "ann@ops-1 pid 7 since 2026-12-04 03:12:40 UTC",
        );
        assert!(h.describe().starts_with("ann@ops-1 pid 7 since"));
    }
}
