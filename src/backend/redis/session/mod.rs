//! A redrive of a Redis job library: batches read in (score, member) order up to the last
//! score present when the run began; each batch retried in place (one Lua script per batch:
//! Sidekiq's push, BullMQ's `reprocessJob` job by job) or, after its copies were accepted
//! elsewhere, removed. A BullMQ run that needs nothing of the jobs but their ids (no filter,
//! no stable-id rule; with the loop guard, also each job's count) reads only the failed set's
//! ids, each next page in the round trip of the last batch's script: the script reads what it
//! needs of each job itself. Every script removes the exact member first and acts only if it
//! was still there: two operators never both retry one job, and a kill at any instant leaves
//! each job dead or retried, never both or neither. A session holds the set's lock from start
//! to end (`lock.rs`): a second dlqctl mover of the set is refused at once.

use async_trait::async_trait;

mod bull;
use bull::Ahead;

use super::zset::{Cursor, Entry};
use super::{Library, RedisBackend, bullmq, ghosts_left, sidekiq};
use crate::address::Address;
use crate::backend::{
    Claim, LocalMoves, MoveOptions, MoveSession, SendOutcome, Ticket, Unaccounted,
};
use crate::config::IdSource;
use crate::error::Result;
use crate::message::Message;

pub(super) struct RedisMoveSession<'a> {
    b: &'a RedisBackend,
    cursor: Cursor,
    /// The last score when the run began (None: the set was empty).
    hi: Option<f64>,
    /// The claimed batch: each job's entry and stable id.
    claimed: Vec<(Entry, String)>,
    /// BullMQ, when the jobs' hashes are read: each claimed job's `data` as read (an edit sets
    /// its own only while the job still has that).
    read_data: Vec<Vec<u8>>,
    /// BullMQ: claim batches by their ids alone, without reading the jobs' hashes (and, for
    /// the loop guard alone, each job's redrive count).
    ids_only: bool,
    /// The size of the last claim, and (by ids alone) the next page, read ahead.
    last_n: usize,
    ahead: Option<Ahead>,
    opts: MoveOptions,
    /// SHA1 of the scripts this session runs, each loaded when first needed (a purge runs no
    /// retry: it needs no `SCRIPT LOAD` of one).
    retry_sha: Option<String>,
    remove_sha: Option<String>,
    /// BullMQ ids in failed without a job hash: of the claimed batch, those a purge claimed
    /// (indices); and those a redrive left, counted, with a few of their ids.
    ghosts: Ghosts,
    /// Of the batch settled last: accepted ids not removed, with why.
    unremoved: Vec<(usize, String)>,
    /// The set's lock, held from the start to the end of the run (one mover at a time).
    lock: super::lock::Lock,
}

/// See [`RedisMoveSession::ghosts`].
#[derive(Default)]
struct Ghosts {
    claimed: Vec<usize>,
    /// The ids left because they had no job hash when read. At the end of the run, only those
    /// still in failed (`RedisMoveSession::finish`): ghosts a purge can remove.
    left: Vec<String>,
    /// Of the ids left, those no longer in failed at the end either: their jobs were removed
    /// by someone else while the run went (`job.remove()` takes the hash and the id together,
    /// and the run read the id before and the hash after).
    removed: Vec<String>,
}

impl Ghosts {
    fn leave(&mut self, id: &str) {
        self.left.push(id.to_string());
    }
}

impl<'a> RedisMoveSession<'a> {
    pub(super) async fn begin(b: &'a RedisBackend, opts: MoveOptions) -> Result<Self> {
        // The lock first: what this run reads below is its alone until it ends.
        let lock = super::lock::acquire(b, b.lock_timeout).await?;
        let hi = b.last_score().await?;
        let ids_only = matches!(b.lib, Library::BullMq(_))
            && (!opts.need_content || opts.count_only)
            && matches!(b.id, None | Some(IdSource::Native));
        Ok(RedisMoveSession {
            ids_only,
            last_n: 0,
            ahead: None,
            b,
            cursor: Cursor::default(),
            hi,
            claimed: Vec::new(),
            read_data: Vec::new(),
            opts,
            retry_sha: None,
            remove_sha: None,
            ghosts: Ghosts::default(),
            unremoved: Vec::new(),
            lock,
        })
    }

    /// Retry the claimed jobs at `selected` in place: one outcome each. `edited`: `dlqctl
    /// edit`'s batch, whose copies at `selected` are retried instead (their body only).
    async fn retry(
        &mut self,
        selected: &[usize],
        edited: Option<&[Message]>,
    ) -> Result<Vec<SendOutcome>> {
        if selected.is_empty() {
            return Ok(Vec::new());
        }
        let b = self.b;
        let s = match (&b.lib, edited) {
            (Library::BullMq(q), None) => return self.retry_bullmq(q, selected).await,
            (Library::BullMq(q), Some(batch)) => {
                return self.retry_bullmq_edited(q, selected, batch).await;
            }
            (Library::Sidekiq(s), _) => s,
        };
        let sha = self.retry_sha().await?;
        let jobs: Vec<&(Entry, String)> = selected.iter().map(|&i| &self.claimed[i]).collect();
        let mut con = self.b.con.clone();
        let now = chrono::Utc::now();
        let mut outcomes: Vec<Option<SendOutcome>> = Vec::with_capacity(jobs.len());
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&sha)
            .arg(2)
            .arg(s.set_key())
            .arg(s.queues_key())
            .arg(&s.prefix);
        // The queue of each job sent, in order (named where its list is not a list).
        let mut queues = Vec::new();
        for (k, (e, _)) in jobs.iter().enumerate() {
            let member = match edited.map(|batch| self.edited_job(s, e, &batch[selected[k]])) {
                None => Ok(e.member.clone()),
                Some(m) => m,
            };
            match member.and_then(|m| sidekiq::retry_payload(&m, self.opts.count_redrive, now)) {
                Ok((queue, payload)) => {
                    cmd.arg(&e.member).arg(&queue).arg(payload);
                    outcomes.push(None);
                    queues.push(queue);
                }
                Err(reason) => outcomes.push(Some(SendOutcome::Rejected { reason })),
            }
        }
        let done: Vec<i64> = if queues.is_empty() {
            Vec::new()
        } else {
            cmd.query_async(&mut con).await.map_err(|e| self.b.err(e))?
        };
        let mut done = done.into_iter().zip(queues);
        Ok(outcomes
            .into_iter()
            .map(|o| {
                o.unwrap_or_else(|| match done.next() {
                    Some((1, _)) => SendOutcome::Sent,
                    Some((-1, queue)) => SendOutcome::Rejected {
                        reason: format!("sidekiq: {}queue:{queue} holds another type than a list, so Sidekiq could not read the job there; left dead (check the key with TYPE)", s.prefix),
                    },
                    _ => SendOutcome::Rejected {
                        reason: "sidekiq: no longer in the set when retried (retried or removed meanwhile); nothing pushed".into(),
                    },
                })
            })
            .collect())
    }

    /// Sidekiq: the dead job `e` as `copy` (`dlqctl edit`'s) has it: its `args` the copy's
    /// body; a copy whose other fields changed is refused (they are Sidekiq's own).
    fn edited_job(
        &self,
        s: &sidekiq::Sidekiq,
        e: &Entry,
        copy: &Message,
    ) -> std::result::Result<Vec<u8>, String> {
        if let Some(mut opened) = s.to_message(e) {
            crate::backend::finish_read(&mut opened, self.b.id.as_ref());
            only_body_changed(&opened, copy, "sidekiq", "args")?;
        }
        sidekiq::with_args(&e.member, &copy.body)
    }
}

impl RedisMoveSession<'_> {
    /// The retry script's SHA1, loaded at the first retry.
    async fn retry_sha(&mut self) -> Result<String> {
        if let Some(sha) = &self.retry_sha {
            return Ok(sha.clone());
        }
        let src = match &self.b.lib {
            Library::Sidekiq(_) => sidekiq::RETRY_SCRIPT,
            Library::BullMq(_) => bullmq::RETRY_SCRIPT,
        };
        let sha = script_load(self.b, src).await?;
        self.retry_sha = Some(sha.clone());
        Ok(sha)
    }
}

/// An edited copy retried in place carries its body only (Sidekiq's `args`, BullMQ's
/// `data`): a change to anything else is refused, with the reason.
fn only_body_changed(
    opened: &Message,
    copy: &Message,
    library: &str,
    field: &str,
) -> std::result::Result<(), String> {
    if opened.attributes != copy.attributes || opened.key != copy.key || opened.group != copy.group
    {
        return Err(format!(
            "{library}: a job retried in place can be edited in its body (the job's `{field}`) only; its other fields are {library}'s own: left where it is"
        ));
    }
    Ok(())
}

/// `SCRIPT LOAD`: the scripts run by their SHA1 from then on (EVALSHA).
async fn script_load(b: &RedisBackend, src: &str) -> Result<String> {
    let mut con = b.con.clone();
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(src)
        .query_async::<String>(&mut con)
        .await
        .map_err(|e| b.err(e))
}

#[async_trait]
impl MoveSession for RedisMoveSession<'_> {
    fn local(&mut self) -> Option<&mut dyn LocalMoves> {
        Some(self)
    }

    async fn next_batch(&mut self, n: usize) -> Result<Option<Claim>> {
        self.lock.check()?;
        let Some(hi) = self.hi else {
            return Ok(None);
        };
        self.claimed.clear();
        self.read_data.clear();
        self.last_n = n;
        self.ghosts.claimed.clear();
        if self.ids_only {
            let mut messages = Vec::new();
            while messages.is_empty() {
                let entries = self.next_ids(n, hi).await?;
                if entries.is_empty() {
                    return Ok(None);
                }
                let checks = self.job_checks(&entries).await?;
                messages = self.claim_ids(entries, checks);
            }
            return Ok(Some(Claim::new(messages)));
        }
        loop {
            let Some(jobs) = self
                .b
                .page_with(&mut self.cursor, n, Some(hi), true)
                .await?
            else {
                return Ok(None);
            };
            let mut messages = Vec::with_capacity(jobs.len());
            let bull = matches!(self.b.lib, Library::BullMq(_));
            for (e, m) in jobs {
                if m.meta.get(bullmq::NO_JOB_HASH).is_some() {
                    if !self.opts.purge {
                        // No job to retry or copy: left, and said (unaccounted).
                        self.ghosts.leave(&m.id);
                        continue;
                    }
                    self.ghosts.claimed.push(messages.len());
                }
                self.claimed.push((e, m.id.clone()));
                if bull {
                    self.read_data.push(m.body.clone());
                }
                messages.push(m);
            }
            if !messages.is_empty() {
                return Ok(Some(Claim::new(messages)));
            }
        }
    }

    async fn settle(&mut self, ticket: Ticket, accepted: &[usize], failed: &[usize]) -> Result<()> {
        let r = self.remove(ticket, accepted, failed).await;
        self.ran(r.is_ok());
        r
    }

    fn holds(&self) -> Result<()> {
        self.lock.check()
    }

    async fn finish(&mut self) -> Result<()> {
        if let Library::BullMq(q) = &self.b.lib
            && !self.ghosts.left.is_empty()
        {
            match self.in_failed(q, &self.ghosts.left).await {
                Ok(there) => {
                    let (left, removed) = std::mem::take(&mut self.ghosts.left)
                        .into_iter()
                        .zip(there)
                        .partition::<Vec<_>, _>(|(_, t)| *t);
                    self.ghosts.left = left.into_iter().map(|(id, _)| id).collect();
                    self.ghosts.removed = removed.into_iter().map(|(id, _)| id).collect();
                }
                Err(e) => tracing::debug!(error = %e, "bullmq: whether the ghosts are in failed"),
            }
        }
        self.lock.release().await;
        Ok(())
    }

    fn unremoved(&mut self) -> Vec<(usize, String)> {
        std::mem::take(&mut self.unremoved)
    }

    fn unaccounted(&self) -> Vec<Unaccounted> {
        let g = &self.ghosts;
        let few = |ids: &[String]| ids.iter().take(5).cloned().collect::<Vec<_>>();
        let mut out: Vec<Unaccounted> = ghosts_left(self.b, g.left.len() as u64, &few(&g.left))
            .into_iter()
            .collect();
        if let Library::BullMq(q) = &self.b.lib
            && !g.removed.is_empty()
        {
            out.push(Unaccounted {
                count: g.removed.len() as u64,
                approximate: false,
                reason: format!(
                    "jobs removed by someone else while the run went (e.g. {}): their job hash and their id in {} are gone (as job.remove() takes them); nothing to do",
                    few(&g.removed).join(", "),
                    q.set_key()
                ),
                until: None,
            });
        }
        out
    }
}

impl RedisMoveSession<'_> {
    /// A batch went through with the keys as they were (see `RedisBackend::midrun`).
    fn ran(&self, ok: bool) {
        if ok {
            self.b
                .midrun
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// `settle`: the accepted messages leave the set (Sidekiq: `ZREM`; BullMQ: `removeJob`,
    /// and a purge's ids without a job hash by their own script).
    async fn remove(
        &mut self,
        _ticket: Ticket,
        accepted: &[usize],
        _failed: &[usize],
    ) -> Result<()> {
        self.unremoved.clear();
        if accepted.is_empty() {
            return Ok(());
        }
        let mut con = self.b.con.clone();
        match &self.b.lib {
            Library::Sidekiq(_) => {
                let mut cmd = redis::cmd("ZREM");
                cmd.arg(&self.b.key);
                for &i in accepted {
                    cmd.arg(&self.claimed[i].0.member);
                }
                let _: i64 = cmd.query_async(&mut con).await.map_err(|e| self.b.err(e))?;
            }
            Library::BullMq(q) => {
                let (ghosts, jobs): (Vec<usize>, Vec<usize>) = accepted
                    .iter()
                    .partition(|i| self.ghosts.claimed.contains(i));
                if !ghosts.is_empty() {
                    self.remove_ghosts(q, &ghosts).await?;
                }
                if jobs.is_empty() {
                    return Ok(());
                }
                let accepted = &jobs[..];
                if self.remove_sha.is_none() {
                    self.remove_sha = Some(script_load(self.b, bullmq::REMOVE_SCRIPT).await?);
                }
                let sha = self.remove_sha.as_deref().unwrap_or_default();
                let mut pipe = redis::pipe();
                for &i in accepted {
                    let id = String::from_utf8_lossy(&self.claimed[i].0.member);
                    pipe.cmd("EVALSHA")
                        .arg(sha)
                        .arg(3)
                        .arg(q.key(&id))
                        .arg(q.key("repeat"))
                        .arg(q.key("failed"))
                        .arg(id.as_ref())
                        // removeChildren off: only the dead job leaves. A failed parent's
                        // children are not dead letters (a delayed one would be deleted
                        // without a copy); BullMQ lets a child finish without its parent.
                        .arg("0")
                        .arg(&q.base);
                }
                let codes: Vec<i64> = pipe
                    .query_async(&mut con)
                    .await
                    .map_err(|e| self.b.err(e))?;
                for (&c, &i) in codes.iter().zip(accepted) {
                    if c != 1 {
                        // Its copy is in the target and the job is where it is now: copied,
                        // not removed (a re-run copies it again, under the same id).
                        self.unremoved.push((i, remove_refusal(c)));
                    }
                }
            }
        }
        Ok(())
    }
}

#[async_trait]
impl LocalMoves for RedisMoveSession<'_> {
    async fn move_locally(
        &mut self,
        _ticket: Ticket,
        _target: &Address,
        selected: &[usize],
    ) -> Result<Vec<SendOutcome>> {
        let r = self.retry(selected, None).await;
        self.ran(r.is_ok());
        r
    }

    async fn move_locally_edited(
        &mut self,
        _ticket: Ticket,
        _target: &Address,
        selected: &[usize],
        batch: &[Message],
    ) -> Result<Vec<SendOutcome>> {
        let r = self.retry(selected, Some(batch)).await;
        self.ran(r.is_ok());
        r
    }
}

/// Why BullMQ's `removeJob` (in dlqctl's wrapper) left a job whose copy was sent.
fn remove_refusal(code: i64) -> String {
    let why = match code {
        -100 => {
            "it was no longer in failed when it was to be removed (retried or removed meanwhile)"
        }
        0 => "a worker holds its lock (it is active), and removeJob leaves a locked job",
        -8 => "it is a job scheduler's job, which BullMQ removes only with its scheduler",
        _ => "BullMQ's removeJob did not remove it",
    };
    format!("bullmq: {why} (code {code}); left where it is")
}
