//! One redrive of a dead-letter topic at a time: the redrive lease, fenced by time.
//!
//! Two redrives of one topic would both copy the same records (each reads from the redrive
//! group's committed offsets). Kafka fences a stale group member's commits by the group's
//! generation and a stale transactional producer by its epoch, but both need the broker's
//! group or transaction coordinator to take part (tansu 0.6.0 checks neither: it stores every
//! OffsetCommit whatever its generation, and has no EndTxn). So the fence is on dlqctl's side,
//! and it never compares two hosts' clocks:
//!
//! * The lease is the committed "offset" of the consumer group `dlqctl-redrive.<topic>.lease`
//!   on partition 0 of the topic: `stamp × 10⁶ + timeout × 10³ + pid % 10³`, where `stamp` is
//!   the holder's wall-clock renewal time plus its timeout in Unix milliseconds (shown to
//!   people, never compared), `timeout` the holder's `[kafka] lease_timeout` in whole seconds
//!   (1 to 999). A new value at every renewal; 0 is a released lease. Its commit metadata
//!   (kept by brokers that keep it; tansu does not) says who holds it.
//! * The holder may act only until its own monotonic clock says `lease_timeout` has passed
//!   since it *sent* its last successful write. The session asks before every claim, every
//!   copy it sends and every commit; once that time has passed (the process was suspended,
//!   the broker did not answer) or the keeper saw another value, the lease is lost for good:
//!   the run stops with an error and commits nothing more.
//! * A newcomer that finds a value watches it on *its own* monotonic clock: a value that
//!   changes belongs to a live holder (the newcomer refuses); one that stays the same for the
//!   longer of the two timeouts plus a margin was abandoned, since its holder can no longer
//!   act by then, and the newcomer takes it (writes its own value, waits, reads it back: of
//!   two newcomers the later write wins and the other refuses).
//! * The keeper thread renews every third of the timeout, after reading that the value is
//!   still its own; at the end it releases the lease (writes 0) only if the value is still its
//!   own and its time has not run out.
//!
//! What remains (docs/kafka.md): a holder suspended between its check and the request that
//! follows it (a commit, a copy, a renewal) sends that request late; and copies already handed
//! to the producer before a suspension are delivered after it. Both are duplicates with the
//! same stable ids, bounded by what the holder had on its way; never a loss, since offsets are
//! only committed for delivered copies.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{Offset, TopicPartitionList};

use super::{KafkaBackend, blocking, kafka_err};
use crate::error::{Error, Result};

/// The holder's timeout (whole seconds) and pid in the lease value's last six digits.
const LOW: i64 = 1_000_000;
const PID_DIGITS: i64 = 1_000;
/// The longest timeout the value can carry.
const MAX_TIMEOUT_S: u64 = 999;

/// A held redrive lease; released when dropped.
pub(super) struct Lease {
    shared: Arc<Shared>,
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

impl Lease {
    /// Ok while this run may act: its time has not run out and nobody else took the lease.
    pub(super) fn check(&self) -> Result<()> {
        self.shared.check()
    }
}

/// What the session and the keeper thread share.
struct Shared {
    state: Mutex<State>,
    timeout: Duration,
    shown: String,
}

struct State {
    /// Until when the holder may act, on its monotonic clock.
    until: Instant,
    /// Why the lease was lost (for good).
    lost: Option<String>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ok while this run may act; once its time ran out, lost for good.
    fn check(&self) -> Result<()> {
        let mut st = self.lock();
        if st.lost.is_none() && Instant::now() >= st.until {
            st.lost = Some(format!(
                "it was not renewed within its {} (the process was suspended, or the broker did not answer)",
                humantime::format_duration(self.timeout)
            ));
        }
        match &st.lost {
            None => Ok(()),
            Some(why) => Err(Error::Backend {
                target: self.shown.clone(),
                reason: format!(
                    "lost the redrive lease: {why}; another redrive may be moving these records now, so this run stopped and committed nothing more. See what is left with `dlqctl inspect`, then re-run"
                ),
            }),
        }
    }

    fn lose(&self, why: String) {
        let mut st = self.lock();
        if st.lost.is_none() {
            st.lost = Some(why);
        }
    }

    fn renewed(&self, until: Instant) {
        let mut st = self.lock();
        if st.lost.is_none() {
            st.until = until;
        }
    }
}

/// A lease as read from the group.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Held {
    raw: i64,
    /// The holder's wall-clock renewal time plus its timeout (for people only).
    stamp_ms: i64,
    timeout: Duration,
    pid: i64,
    /// `user@host pid N since TIME`, where the broker keeps commit metadata.
    who: Option<String>,
}

impl Held {
    fn from_offset(raw: i64, metadata: &str) -> Held {
        Held {
            raw,
            stamp_ms: raw / LOW,
            timeout: Duration::from_secs(((raw % LOW) / PID_DIGITS) as u64),
            pid: raw % PID_DIGITS,
            who: Some(metadata.to_string()).filter(|m| !m.is_empty()),
        }
    }

    fn describe(&self) -> String {
        let until = chrono::DateTime::from_timestamp_millis(self.stamp_ms)
            .map(|t| t.format("%H:%M:%S UTC").to_string())
            .unwrap_or_else(|| "?".into());
        match &self.who {
            Some(w) => format!("{w}; renewed until {until} by its clock"),
            None => format!(
                "pid ending in {:03}; renewed until {until} by its clock",
                self.pid
            ),
        }
    }

    /// How long a newcomer watches this value unchanged before it takes it as abandoned: the
    /// longer of the two timeouts, plus a margin for a request on its way and clock rates.
    fn patience(&self, own: Duration) -> Duration {
        let t = own.max(self.timeout);
        t + (t / 4).max(Duration::from_millis(500))
    }
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
    timeout: Duration,
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

    /// A new value of this holder's (a different one at every renewal).
    fn value(&self) -> i64 {
        let stamp = chrono::Utc::now().timestamp_millis() + self.timeout.as_millis() as i64;
        let secs = self.timeout.as_secs_f64().ceil() as i64;
        stamp * LOW + secs.clamp(1, MAX_TIMEOUT_S as i64) * PID_DIGITS + self.pid
    }

    fn write(&self, value: i64) -> Result<()> {
        let mut tpl = TopicPartitionList::new();
        let mut e = tpl.add_partition(&self.topic, 0);
        e.set_offset(Offset::Offset(value))
            .map_err(|e| kafka_err(&self.shown, e))?;
        e.set_metadata(&self.me);
        self.c
            .commit(&tpl, CommitMode::Sync)
            .map_err(|e| kafka_err(&self.shown, e))
    }
}

/// Take the redrive lease of `b`'s topic, or say who holds it.
pub(super) fn acquire(b: &KafkaBackend) -> Result<Lease> {
    let group = group(b);
    let timeout = b.lease_timeout.clamp(
        Duration::from_millis(300),
        Duration::from_secs(MAX_TIMEOUT_S),
    );
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
        timeout,
    };
    let (sent, mine) = blocking(|| take(&k))?;
    tracing::debug!(%group, holder = %k.me, value = mine, "kafka: redrive lease taken");
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            until: sent + timeout,
            lost: None,
        }),
        timeout,
        shown: b.shown(),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let (s2, stop2) = (shared.clone(), stop.clone());
    let keeper = std::thread::Builder::new()
        .name("dlqctl-kafka-lease".into())
        .spawn(move || keep(&k, &s2, &stop2, mine))
        .map_err(|e| Error::Backend {
            target: b.shown(),
            reason: format!("cannot start the lease thread: {e}"),
        })?;
    Ok(Lease {
        shared,
        stop,
        keeper: Some(keeper),
    })
}

/// Wait until the lease is free or abandoned, write this run's value and read it back. The
/// time the write was sent (this run may act until then plus its timeout) and the value.
fn take(k: &Keeper) -> Result<(Instant, i64)> {
    let started = Instant::now();
    let mut watching: Option<(Held, Instant)> = None;
    let mut said = false;
    while let Some(now) = k.read()? {
        match &watching {
            None => watching = Some((now, Instant::now())),
            // Renewed: its holder is alive.
            Some((first, _)) if first.raw != now.raw => {
                return Err(held_by(&k.shown, &now, k.timeout));
            }
            Some((first, since)) if since.elapsed() >= first.patience(k.timeout) => {
                tracing::info!(
                    "{}: the redrive lease of a run that stopped renewing it ({}) is abandoned: taking it",
                    k.shown,
                    first.describe()
                );
                break;
            }
            Some(_) => {}
        }
        if let Some((first, _)) = &watching
            && !said
            && started.elapsed() > Duration::from_secs(1)
        {
            said = true;
            tracing::warn!(
                "{}: another redrive's lease ({}) is on: waiting up to {} s to see whether it is renewed",
                k.shown,
                first.describe(),
                first.patience(k.timeout).as_secs_f64().ceil()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let sent = Instant::now();
    let mine = k.value();
    k.write(mine)?;
    // Two runs that found the lease free at once both wrote: the later write won.
    std::thread::sleep(Duration::from_millis(300));
    match k.read()? {
        Some(h) if h.raw == mine => Ok((sent, mine)),
        Some(other) => Err(held_by(&k.shown, &other, k.timeout)),
        None => Err(Error::Backend {
            target: k.shown.clone(),
            reason:
                "the redrive lease could not be written: the broker kept no offset for its group"
                    .into(),
        }),
    }
}

/// The keeper thread: renew every third of the timeout while the value is still this run's
/// and its time has not run out; then release what is still its own.
fn keep(k: &Keeper, shared: &Shared, stop: &AtomicBool, mut mine: i64) {
    let every = k.timeout / 3;
    let mut last = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50).min(every));
        if last.elapsed() < every {
            continue;
        }
        last = Instant::now();
        // A process suspended past its lease wakes up here: it must not write.
        if shared.check().is_err() {
            return;
        }
        match k.read() {
            Ok(Some(h)) if h.raw == mine => {}
            Ok(other) => {
                shared.lose(match other {
                    Some(h) => format!("another redrive holds it now ({})", h.describe()),
                    None => "it was released or deleted by someone else".into(),
                });
                return;
            }
            Err(e) => {
                tracing::warn!("could not read the redrive lease to renew it: {e}");
                continue;
            }
        }
        let sent = Instant::now();
        if shared.check().is_err() {
            return;
        }
        let value = k.value();
        match k.write(value) {
            Ok(()) => {
                mine = value;
                shared.renewed(sent + k.timeout);
            }
            Err(e) => tracing::warn!("could not renew the redrive lease: {e}"),
        }
    }
    // Released (0) only while it is still this run's and its time has not run out: a
    // newcomer may take an abandoned lease at any moment after that.
    if shared.check().is_ok()
        && matches!(k.read(), Ok(Some(h)) if h.raw == mine)
        && shared.check().is_ok()
        && let Err(e) = k.write(0)
    {
        tracing::warn!(
            "could not release the redrive lease ({e}); the next redrive takes it once it sees it unrenewed for {} s",
            k.timeout.as_secs_f64().ceil()
        );
    }
}

fn held_by(shown: &str, h: &Held, own: Duration) -> Error {
    Error::Backend {
        target: shown.to_string(),
        reason: format!(
            "another dlqctl redrive of this topic is running ({}): two would copy the same records. Wait for it to finish (the lease of a run that crashed is taken over once it has gone unrenewed for {} s), then re-run",
            h.describe(),
            h.patience(own).as_secs_f64().ceil()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lease_value_holds_stamp_timeout_and_pid() {
        let h = Held::from_offset(1_796_380_000_000 * LOW + 10 * PID_DIGITS + 242, "");
        assert_eq!(
            (h.stamp_ms, h.timeout, h.pid),
            (1_796_380_000_000, Duration::from_secs(10), 242)
        );
        assert_eq!(
            h.describe(),
            "pid ending in 242; renewed until 10:26:40 UTC by its clock"
        );
        let h = Held::from_offset(5 * LOW + 7, "ann@ops-1 pid 7 since 2026-12-04 03:12:40 UTC");
        assert!(h.describe().starts_with("ann@ops-1 pid 7 since"));
    }

    /// A newcomer waits out the longer of the two timeouts, with a margin.
    #[test]
    fn patience_covers_the_holders_timeout() {
        let h = Held::from_offset(LOW + 30 * PID_DIGITS, "");
        assert_eq!(
            h.patience(Duration::from_secs(2)),
            Duration::from_millis(37_500)
        );
        let h = Held::from_offset(LOW + PID_DIGITS, "");
        assert_eq!(
            h.patience(Duration::from_secs(2)),
            Duration::from_millis(2_500)
        );
    }

    #[test]
    fn a_holder_whose_time_ran_out_may_not_act() {
        let s = Shared {
            state: Mutex::new(State {
                until: Instant::now() + Duration::from_secs(60),
                lost: None,
            }),
            timeout: Duration::from_secs(2),
            shown: "kafka://b:9092/t".into(),
        };
        assert!(s.check().is_ok());
        s.lock().until = Instant::now() - Duration::from_millis(1);
        let e = s.check().unwrap_err().to_string();
        assert!(
            e.contains("lost the redrive lease") && e.contains("suspended"),
            "{e}"
        );
        // For good: a later renewal does not bring it back.
        s.renewed(Instant::now() + Duration::from_secs(60));
        assert!(s.check().is_err());
    }
}
