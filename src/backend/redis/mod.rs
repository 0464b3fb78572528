//! Redis job queues (`redis[s]://…?system=sidekiq|bullmq`): Sidekiq's dead set and BullMQ's
//! failed jobs, read where they are and retried in place the way each library does, in one
//! atomic Lua script per batch (Sidekiq's push; BullMQ's `reprocessJob`, job by job). One
//! module per library (`sidekiq.rs`, `bullmq.rs`) as the PostgreSQL job systems have one file
//! per system; the backend (this file), the reads of a sorted set (`zset.rs`), the move session
//! (`session.rs`), inspect and verify (`facts.rs`). docs/systems/sidekiq.md, bullmq.md.
//!
//! A job library is a source, never a target (`--to redis://…` is refused): a redrive
//! without `--to` retries in place; `--to` another backend copies each job there with its
//! id, then removes it from the dead set.
//!
//! `address.rs` is compiled in every build (an address parses whatever backends were built);
//! everything else here with the `redis` feature, hence the `cfg` on each item.

#[cfg(feature = "redis")]
use std::collections::HashMap;
#[cfg(feature = "redis")]
use std::time::Duration;

#[cfg(feature = "redis")]
use async_trait::async_trait;
#[cfg(feature = "redis")]
use redis::aio::MultiplexedConnection;

#[cfg(feature = "redis")]
use crate::address::Address;
#[cfg(feature = "redis")]
use crate::backend::{
    Backlog, Capabilities, Inspection, MessageStream, MoveOptions, MoveSession, OpenOptions,
    QueueBackend, ScanOptions, TailOptions, VerifyFacts,
};
#[cfg(feature = "redis")]
use crate::config::{IdSource, QueueConfig};
#[cfg(feature = "redis")]
use crate::error::{Error, Result};
#[cfg(feature = "redis")]
use crate::message::Message;
#[cfg(feature = "redis")]
use address::{RedisAddress, RedisSystem};

pub mod address;
#[cfg(feature = "redis")]
mod bullmq;
#[cfg(feature = "redis")]
mod conn;
#[cfg(feature = "redis")]
mod facts;
#[cfg(feature = "redis")]
mod lock;
#[cfg(feature = "redis")]
mod session;
#[cfg(feature = "redis")]
mod sidekiq;
#[cfg(feature = "redis")]
mod zset;

#[cfg(feature = "redis")]
use zset::{Cursor, Entry};

/// How far below now a tail's poll reads the set again: a member that appears scored
/// further back than this (a death written an hour late) is not shown (docs/systems/sidekiq.md).
#[cfg(feature = "redis")]
const TAIL_MARGIN: std::time::Duration = std::time::Duration::from_secs(3600);

/// Which library's jobs, resolved.
#[cfg(feature = "redis")]
enum Library {
    Sidekiq(sidekiq::Sidekiq),
    BullMq(bullmq::BullMq),
}

#[cfg(feature = "redis")]
pub struct RedisBackend {
    addr: Address,
    ra: RedisAddress,
    con: MultiplexedConnection,
    lib: Library,
    /// The sorted set read (`dead`, `retry`, `bull:Q:failed`).
    key: String,
    /// A redrive's dry run: the BullMQ ids without a job hash its read passed over (how many,
    /// a few of them), which the run would leave ([`QueueBackend::unaccounted`]).
    dry_ghosts: std::sync::Mutex<(u64, Vec<String>)>,
    /// `[redis] lock_timeout`: how long a mover's lock lasts unrenewed.
    lock_timeout: Duration,
    id: Option<IdSource>,
    /// What was found: `sidekiq (dead set `dead`)`, `bullmq:6.7.6 (queue mail)`.
    detected: String,
    /// Set once a move session has retried or removed a batch: a key of the wrong type after
    /// that was replaced while the run went, not a wrong address.
    midrun: std::sync::atomic::AtomicBool,
}

#[cfg(feature = "redis")]
/// Open an address of this backend (its line in `backend::OPENERS`).
pub fn open<'a>(
    addr: &'a crate::address::Address,
    opts: &'a crate::backend::OpenOptions,
) -> futures::future::BoxFuture<'a, crate::error::Result<Box<dyn crate::backend::QueueBackend>>> {
    crate::backend::boxed(RedisBackend::open(addr, opts))
}

#[cfg(feature = "redis")]
impl RedisBackend {
    pub async fn open(addr: &Address, opts: &OpenOptions) -> Result<RedisBackend> {
        let Address::Redis(ra) = addr else {
            unreachable!("a redis address")
        };
        if opts.as_target {
            return Err(Error::Unsupported {
                backend: "redis",
                operation: "writing into a job library",
                reason: format!(
                    "system={} is a source; redrive retries its dead jobs in place, so leave out --to (or replay into a table, queue or topic)",
                    ra.system.name()
                ),
            });
        }
        let mut con = conn::connect(ra).await?;
        let (lib, detected) = match ra.system {
            RedisSystem::Sidekiq => {
                let s = sidekiq::Sidekiq::new(ra);
                let d = format!("sidekiq (sorted set `{}`)", s.set_key());
                (Library::Sidekiq(s), d)
            }
            RedisSystem::BullMq => {
                let b = bullmq::BullMq::new(ra);
                let v: Option<String> = redis::cmd("HGET")
                    .arg(b.key("meta"))
                    .arg("version")
                    .query_async(&mut con)
                    .await
                    .map_err(|e| conn::err(&ra.to_string(), "the URL", None, e))?;
                // Without a version, whether the queue has failed jobs decides the error.
                let failed: u64 = if v.is_none() {
                    redis::cmd("ZCARD")
                        .arg(b.set_key())
                        .query_async(&mut con)
                        .await
                        .unwrap_or(0)
                } else {
                    0
                };
                let v = b.check_version(v.as_deref(), failed, &ra.to_string())?;
                let d = format!("{v} (queue `{}`, failed set `{}`)", b.queue, b.set_key());
                (Library::BullMq(b), d)
            }
        };
        let key = match &lib {
            Library::Sidekiq(s) => s.set_key(),
            Library::BullMq(b) => b.set_key(),
        };
        Ok(RedisBackend {
            addr: addr.clone(),
            ra: ra.clone(),
            con,
            lib,
            key,
            dry_ghosts: Default::default(),
            lock_timeout: opts
                .backends
                .redis
                .lock_timeout
                .unwrap_or(lock::DEFAULT_TIMEOUT),
            id: opts.id.clone(),
            detected,
            midrun: Default::default(),
        })
    }

    fn err(&self, e: redis::RedisError) -> Error {
        conn::run_err(
            &self.ra.to_string(),
            "the URL or REDISCLI_AUTH",
            Some(&self.key),
            self.midrun.load(std::sync::atomic::Ordering::Relaxed),
            e,
        )
    }

    /// The next page of jobs after `cursor` (scores up to `hi`): the entries read, and the
    /// messages of those that are jobs of this address (Sidekiq's `&queue=` leaves others
    /// out; a BullMQ id whose hash is gone is no job), aligned by index into the entries.
    async fn page(
        &self,
        cursor: &mut Cursor,
        n: usize,
        hi: Option<f64>,
    ) -> Result<Option<Vec<(Entry, Message)>>> {
        self.page_with(cursor, n, hi, false).await
    }

    /// [`RedisBackend::page`]; `ghosts`: with a BullMQ id whose job hash is gone as a message
    /// too, marked ([`bullmq::NO_JOB_HASH`]), for a move session to purge or count.
    async fn page_with(
        &self,
        cursor: &mut Cursor,
        n: usize,
        hi: Option<f64>,
        ghosts: bool,
    ) -> Result<Option<Vec<(Entry, Message)>>> {
        loop {
            let mut con = self.con.clone();
            let entries = zset::next_page(&mut con, &self.key, cursor, n, hi)
                .await
                .map_err(|e| self.err(e))?;
            if entries.is_empty() {
                return Ok(None);
            }
            let jobs = self.messages(entries, ghosts).await?;
            if !jobs.is_empty() {
                return Ok(Some(jobs));
            }
        }
    }

    /// The jobs the entries hold, as messages (`ghosts`: see [`RedisBackend::page_with`]).
    async fn messages(&self, entries: Vec<Entry>, ghosts: bool) -> Result<Vec<(Entry, Message)>> {
        let mut out = Vec::with_capacity(entries.len());
        match &self.lib {
            Library::Sidekiq(s) => {
                for e in entries {
                    if let Some(mut m) = s.to_message(&e) {
                        crate::backend::finish_read(&mut m, self.id.as_ref());
                        out.push((e, m));
                    }
                }
            }
            Library::BullMq(b) => {
                let mut pipe = redis::pipe();
                for e in &entries {
                    pipe.cmd("HGETALL")
                        .arg(b.key(&String::from_utf8_lossy(&e.member)));
                }
                let mut con = self.con.clone();
                let hashes: Vec<HashMap<String, Vec<u8>>> =
                    pipe.query_async(&mut con).await.map_err(|e| self.err(e))?;
                for (e, h) in entries.into_iter().zip(hashes) {
                    let id = String::from_utf8_lossy(&e.member).into_owned();
                    if let Some(mut m) = b.to_message(&id, e.score, &h) {
                        crate::backend::finish_read(&mut m, self.id.as_ref());
                        out.push((e, m));
                    } else if ghosts {
                        let m = b.ghost(&id, e.score);
                        out.push((e, m));
                    }
                }
            }
        }
        Ok(out)
    }

    /// Where a tail's poll starts reading: [`TAIL_MARGIN`] before now, in the set's scores
    /// (Sidekiq: seconds, BullMQ: milliseconds), or higher where `seen` forgot members.
    fn tail_floor(&self, seen: &zset::Seen) -> f64 {
        let now = chrono::Utc::now().timestamp_millis() as f64 - TAIL_MARGIN.as_millis() as f64;
        seen.floor(match &self.lib {
            Library::Sidekiq(_) => now / 1000.0,
            Library::BullMq(_) => now,
        })
    }

    /// The highest score in the set now (a redrive's end: jobs that die during the run are
    /// left for the next one).
    async fn last_score(&self) -> Result<Option<f64>> {
        let mut con = self.con.clone();
        let last: Vec<(Vec<u8>, f64)> = redis::cmd("ZRANGE")
            .arg(&self.key)
            .arg(-1)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(&mut con)
            .await
            .map_err(|e| self.err(e))?;
        Ok(last.first().map(|(_, s)| *s))
    }

    /// Every job, oldest death first, `page` at a time (inspect, verify, counts).
    fn all(&self, page: usize) -> MessageStream<'_> {
        Box::pin(async_stream::try_stream! {
            let mut cursor = Cursor::default();
            while let Some(jobs) = self.page(&mut cursor, page, None).await? {
                for (_, m) in jobs {
                    yield m;
                }
            }
        })
    }
}

#[cfg(feature = "redis")]
#[async_trait]
impl QueueBackend for RedisBackend {
    fn address(&self) -> &Address {
        &self.addr
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            tail: true,
            delete: true,
            read_side_effect: None,
            per_message_destination: false,
            ..Capabilities::default()
        }
    }

    async fn inspect(&self, classifier: &crate::classify::Classifier) -> Result<Inspection> {
        facts::inspect(self, classifier).await
    }

    /// A redrive's read (its dry run) sees BullMQ ids without a job hash too: a purge's as
    /// messages it would remove, a redrive's counted as left ([`QueueBackend::unaccounted`]).
    async fn scan(&self, opts: ScanOptions) -> Result<MessageStream<'_>> {
        let page = opts.page_size.clamp(1, 5000);
        if opts.as_redrive {
            *self.dry_ghosts.lock().unwrap_or_else(|p| p.into_inner()) = Default::default();
        }
        Ok(Box::pin(async_stream::try_stream! {
            let mut cursor = Cursor::default();
            let mut left = opts.limit.unwrap_or(u64::MAX);
            while left > 0 {
                let n = (page as u64).min(left) as usize;
                let Some(jobs) = self.page_with(&mut cursor, n, None, opts.as_redrive).await? else { break };
                for (_, m) in jobs {
                    if left == 0 {
                        break;
                    }
                    if !opts.purge && m.meta.get(bullmq::NO_JOB_HASH).is_some() {
                        let mut g = self.dry_ghosts.lock().unwrap_or_else(|p| p.into_inner());
                        g.0 += 1;
                        if g.1.len() < 5 {
                            g.1.push(m.id.clone());
                        }
                        continue;
                    }
                    left -= 1;
                    yield m;
                }
            }
        }))
    }

    /// Follow the set by member, not by a score cursor: a member can appear with a score
    /// below ones already seen (Sidekiq's retry set is scored by the next attempt's time, which
    /// a fresh failure often has sooner than an older job; a death can be written late by
    /// another process). Each poll reads the members scored from [`TAIL_MARGIN`] before now
    /// up and shows those not seen before ([`zset::Seen`]: at most
    /// [`zset::SEEN_AT_MOST`] remembered). What was there when the tail started is shown only
    /// with `--from-start`.
    async fn tail(&self, opts: TailOptions) -> Result<MessageStream<'_>> {
        let mut seen = zset::Seen::new(zset::SEEN_AT_MOST);
        // What is there when the tail starts is remembered, not shown (unless --from-start).
        if !opts.from_start {
            let mut cursor = Cursor::before(self.tail_floor(&seen));
            while let Some(jobs) = self.page(&mut cursor, 500, None).await? {
                for (e, _) in jobs {
                    seen.first_time(&e);
                }
                seen.prune(self.tail_floor(&seen));
            }
        }
        Ok(Box::pin(async_stream::try_stream! {
            let mut first = opts.from_start;
            loop {
                let mut cursor = if first {
                    Cursor::default()
                } else {
                    tokio::time::sleep(opts.poll_interval).await;
                    Cursor::before(self.tail_floor(&seen))
                };
                first = false;
                while let Some(jobs) = self.page(&mut cursor, 500, None).await? {
                    for (e, m) in jobs {
                        if seen.first_time(&e) {
                            yield m;
                        }
                    }
                    seen.prune(self.tail_floor(&seen));
                }
            }
        }))
    }

    fn can_move_locally(&self, target: &Address) -> bool {
        *target == self.addr
    }

    fn retries_in_place(&self) -> bool {
        true
    }

    fn in_place_refusal(&self, m: &Message) -> Option<String> {
        m.meta
            .get(sidekiq::RETRY_REFUSED)
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    }

    fn retries_edits_in_place(&self) -> bool {
        true
    }

    fn describe_move(&self, how: &crate::backend::MoveHow) -> String {
        let Address::Redis(r) = &self.addr else {
            unreachable!("redis address")
        };
        // The library by its own name (the address says `system=sidekiq`).
        let (library, bull) = match r.system {
            RedisSystem::Sidekiq => ("Sidekiq", false),
            RedisSystem::BullMq => ("BullMQ", true),
        };
        match (how.purge, how.archived) {
            (true, archived) if bull => crate::backend::archive_then(
                archived,
                if archived {
                    "delete the failed job as BullMQ's job.remove() does"
                } else {
                    "delete each selected failed job as BullMQ's job.remove() does"
                },
            ),
            (true, true) => {
                crate::backend::archive_then(true, "remove the dead job from the set (ZREM)")
            }
            (true, false) => "remove each selected dead job from the set (ZREM)".into(),
            (false, _) if how.in_place => format!(
                "retry each dead job in place, as {library}'s own retry does, removing it from the set in the same atomic script (nothing is copied)"
            ),
            (false, _) => {
                format!("copy each dead job to the target, then remove it from {library}'s set")
            }
        }
    }

    async fn begin_move(&self, opts: MoveOptions) -> Result<Box<dyn MoveSession + '_>> {
        Ok(Box::new(
            session::RedisMoveSession::begin(self, opts).await?,
        ))
    }

    async fn identity(&self) -> Result<Option<String>> {
        Ok(Some(format!(
            "redis://{}:{}/{}/{}{}",
            self.ra.host.to_ascii_lowercase(),
            self.ra.port,
            self.ra.db,
            self.key,
            self.ra
                .queue
                .as_ref()
                .map(|q| format!("?queue={q}"))
                .unwrap_or_default()
        )))
    }

    async fn backlog(&self, _for_redrive: bool) -> Result<Option<Backlog>> {
        if let Library::Sidekiq(s) = &self.lib
            && s.queue.is_some()
        {
            // Only this queue's jobs: counted by reading them.
            use futures::TryStreamExt;
            let n = self
                .all(1000)
                .try_fold(0u64, |n, _| async move { Ok(n + 1) })
                .await?;
            return Ok(Some(Backlog {
                messages: n,
                exact: true,
            }));
        }
        let mut con = self.con.clone();
        let n: u64 = redis::cmd("ZCARD")
            .arg(&self.key)
            .query_async(&mut con)
            .await
            .map_err(|e| self.err(e))?;
        Ok(Some(Backlog {
            messages: n,
            exact: true,
        }))
    }

    async fn left_by_redrive(&self) -> Result<Option<crate::backend::Unaccounted>> {
        facts::ghosts(self).await
    }

    async fn destination(&self, _m: &Message) -> Result<Option<Address>> {
        // The retry happens in place, the way the library's own tools do it.
        Ok(Some(self.addr.clone()))
    }

    async fn verify_facts(&self, cfg: &QueueConfig) -> Result<VerifyFacts> {
        facts::verify_facts(self, cfg).await
    }

    fn unaccounted(&self) -> Vec<crate::backend::Unaccounted> {
        let g = self.dry_ghosts.lock().unwrap_or_else(|p| p.into_inner());
        ghosts_left(self, g.0, &g.1).into_iter().collect()
    }

    async fn count_older_than(&self, age: Duration) -> Result<Option<u64>> {
        use futures::TryStreamExt;
        let now = chrono::Utc::now();
        let age = chrono::Duration::from_std(age).unwrap_or(chrono::Duration::MAX);
        let n = self
            .all(1000)
            .try_fold(0u64, |n, m| async move {
                Ok(n + u64::from(m.age(now).is_some_and(|a| a > age)))
            })
            .await?;
        Ok(Some(n))
    }
}

/// What a redrive leaves of the BullMQ ids in failed without a job hash (`n`, a few of them in
/// `examples`): no job to retry or copy, and how to remove them.
#[cfg(feature = "redis")]
fn ghosts_left(
    b: &RedisBackend,
    n: u64,
    examples: &[String],
) -> Option<crate::backend::Unaccounted> {
    let Library::BullMq(q) = &b.lib else {
        return None;
    };
    (n > 0).then(|| crate::backend::Unaccounted {
        count: n,
        approximate: false,
        reason: format!(
            "ids in {} with no job hash (e.g. {}; {}ID does not exist): nothing to retry; `{}` removes the ids (add --archive FILE to keep a record)",
            q.set_key(),
            examples.join(", "),
            q.base,
            crate::output::command_line(&[
                "dlqctl",
                "purge",
                &b.addr.to_string(),
                "--where",
                ".meta.no_job_hash != null",
                "--no-archive",
            ])
        ),
        until: None,
    })
}

#[cfg(all(test, feature = "redis"))]
mod tests {
    /// docs/systems/ show the scripts dlqctl runs verbatim: a change to one fails here until
    /// the page shows it.
    #[test]
    fn the_docs_show_the_scripts_verbatim() {
        let sk = include_str!("../../../docs/systems/sidekiq.md");
        assert!(sk.contains(super::sidekiq::RETRY_SCRIPT));
        let bq = include_str!("../../../docs/systems/bullmq.md");
        assert!(bq.contains(include_str!("bullmq_reprocessJob-9.lua")));
        assert!(bq.contains(super::bullmq::RETRY_SCRIPT));
        assert!(bq.contains(include_str!("bullmq_removeJob-2.lua")));
        assert!(bq.contains(include_str!("bullmq_editJob.lua")));
        assert!(bq.contains(include_str!("bullmq_editJobEnd.lua")));
        assert!(bq.contains(super::bullmq::REMOVE_GHOST_SCRIPT));
        for page in [sk, bq] {
            assert!(page.contains(super::lock::RENEW_SCRIPT));
            assert!(page.contains(super::lock::RELEASE_SCRIPT));
            assert!(page.contains(super::lock::TAKEOVER_SCRIPT));
        }
    }
}
