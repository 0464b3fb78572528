//! A redrive of a Redis job library: batches read in (score, member) order up to the last
//! score present when the run began; each batch retried in place (one Lua script per batch:
//! Sidekiq's push, BullMQ's `reprocessJob` job by job) or, after its copies were accepted
//! elsewhere, removed. A BullMQ run that needs nothing of the jobs but their ids (no filter,
//! no stable-id rule; with the loop guard, also each job's count) reads only the failed set's
//! ids, each next page in the round trip of the last batch's script: the script reads what it
//! needs of each job itself. Every script removes the exact member first and acts only if it
//! was still there: two operators never both retry one job, and a kill at any instant leaves
//! each job dead or retried, never both or neither.

use async_trait::async_trait;

use super::zset::{self, Cursor, Entry};
use super::{Library, RedisBackend, bullmq, ghosts_left, sidekiq};
use crate::address::Address;
use crate::backend::{
    Claim, LocalMoves, MoveOptions, MoveSession, SendOutcome, Ticket, Unaccounted,
};
use crate::config::IdSource;
use crate::error::Result;
use crate::message::{AttrValue, Attribute, Message, REDRIVE_COUNT_ATTRIBUTE};

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
}

/// See [`RedisMoveSession::ghosts`].
#[derive(Default)]
struct Ghosts {
    claimed: Vec<usize>,
    left: u64,
    examples: Vec<String>,
}

impl Ghosts {
    fn leave(&mut self, id: &str) {
        self.left += 1;
        if self.examples.len() < 5 {
            self.examples.push(id.to_string());
        }
    }
}

impl<'a> RedisMoveSession<'a> {
    pub(super) async fn begin(b: &'a RedisBackend, opts: MoveOptions) -> Result<Self> {
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

    /// BullMQ, `dlqctl edit`: each edited job by one call of bullmq_editJob.lua and the
    /// batched `reprocessJob` (its `data` set to the copy's body while it is still failed with
    /// the `data` this run read, then retried); a copy whose other fields differ from the
    /// job's now is refused.
    async fn retry_bullmq_edited(
        &mut self,
        q: &bullmq::BullMq,
        selected: &[usize],
        batch: &[Message],
    ) -> Result<Vec<SendOutcome>> {
        let sha = script_load(self.b, bullmq::EDIT_SCRIPT).await?;
        let mut con = self.b.con.clone();
        let mut out = Vec::with_capacity(selected.len());
        for &i in selected {
            let (e, id) = &self.claimed[i];
            let h: std::collections::HashMap<String, Vec<u8>> = redis::cmd("HGETALL")
                .arg(q.key(id))
                .query_async(&mut con)
                .await
                .map_err(|e| self.b.err(e))?;
            let opened = q.to_message(id, e.score, &h).map(|mut m| {
                crate::backend::finish_read(&mut m, self.b.id.as_ref());
                m
            });
            let checked = match &opened {
                None => Err("bullmq: the job's hash is gone (removed meanwhile)".to_string()),
                Some(o) => only_body_changed(o, &batch[i], "bullmq", "data"),
            };
            if let Err(reason) = checked {
                out.push(SendOutcome::Rejected { reason });
                continue;
            }
            let mut cmd = reprocess_call(&sha, q, self.opts.count_redrive);
            cmd.arg(&e.member)
                .arg(self.read_data.get(i).map(Vec::as_slice).unwrap_or_default())
                .arg(&batch[i].body);
            let codes: Vec<i64> = cmd.query_async(&mut con).await.map_err(|e| self.b.err(e))?;
            out.push(match codes.first() {
                Some(&-3) => SendOutcome::Rejected {
                    reason: "bullmq: no longer failed as it was read (retried, removed or changed meanwhile); nothing changed".into(),
                },
                Some(&c) => bullmq_outcome(c),
                None => bullmq_outcome(0),
            });
        }
        Ok(out)
    }

    /// BullMQ: the batch in one call of the batched `reprocessJob` (bullmq_reprocessJobs.lua).
    /// Claiming by ids alone, the next page's `ZRANGE` goes in the same round trip, after the
    /// script (what it reads is what a read after the retry would read).
    async fn retry_bullmq(
        &mut self,
        q: &bullmq::BullMq,
        selected: &[usize],
    ) -> Result<Vec<SendOutcome>> {
        let sha = self.retry_sha().await?;
        let mut cmd = reprocess_call(&sha, q, self.opts.count_redrive);
        for &i in selected {
            cmd.arg(&self.claimed[i].0.member);
        }
        let mut con = self.b.con.clone();
        let next = match self.hi {
            Some(hi) if self.ids_only => {
                let extra = zset::first_extra(&self.cursor);
                Some(zset::page_cmd(
                    &self.b.key,
                    &self.cursor,
                    self.last_n,
                    Some(hi),
                    extra,
                ))
            }
            _ => None,
        };
        let codes: Vec<i64> = match next {
            None => cmd.query_async(&mut con).await.map_err(|e| self.b.err(e))?,
            Some((read, want)) => {
                let mut pipe = redis::pipe();
                pipe.add_command(cmd).add_command(read);
                let (codes, raw): (Vec<i64>, Vec<(Vec<u8>, f64)>) = pipe
                    .query_async(&mut con)
                    .await
                    .map_err(|e| self.b.err(e))?;
                let before = self.cursor.clone();
                if let Some(page) = zset::take_page(&mut self.cursor, raw, self.last_n, want) {
                    self.ahead = Some(Ahead {
                        n: self.last_n,
                        before,
                        page,
                    });
                }
                codes
            }
        };
        if codes.len() != selected.len() {
            return Err(crate::error::Error::Backend {
                target: self.b.ra.to_string(),
                reason: format!(
                    "the retry script answered {} codes for {} jobs (was it replaced?); run again: each job is retried at most once",
                    codes.len(),
                    selected.len()
                ),
            });
        }
        Ok(codes.into_iter().map(bullmq_outcome).collect())
    }

    /// BullMQ by ids alone: the next page of up to `n` ids (the one read ahead, when it was
    /// read for `n`).
    async fn next_ids(&mut self, n: usize, hi: f64) -> Result<Vec<Entry>> {
        match self.ahead.take() {
            Some(a) if a.n == n => return Ok(a.page),
            Some(a) => self.cursor = a.before,
            None => {}
        }
        let mut con = self.b.con.clone();
        zset::next_page(&mut con, &self.b.key, &mut self.cursor, n, Some(hi))
            .await
            .map_err(|e| self.b.err(e))
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

    /// BullMQ by ids alone: whether each job's hash exists (an id without one is no job to
    /// retry), and for the loop guard its `dlqctl-redrive-count`, in one pipeline.
    async fn job_checks(&self, entries: &[Entry]) -> Result<Vec<(bool, Option<Vec<u8>>)>> {
        let Library::BullMq(q) = &self.b.lib else {
            return Ok(vec![(true, None); entries.len()]);
        };
        let counts = self.opts.need_content;
        let mut pipe = redis::pipe();
        for e in entries {
            let key = q.key(&String::from_utf8_lossy(&e.member));
            pipe.cmd("EXISTS").arg(&key);
            if counts {
                pipe.cmd("HGET").arg(&key).arg(REDRIVE_COUNT_ATTRIBUTE);
            }
        }
        let mut con = self.b.con.clone();
        let raw: Vec<redis::Value> = pipe.query_async(&mut con).await.map_err(|e| self.b.err(e))?;
        let mut raw = raw.into_iter();
        let mut out = Vec::with_capacity(entries.len());
        for _ in entries {
            let there = matches!(raw.next(), Some(redis::Value::Int(1)));
            let count = if counts {
                match raw.next() {
                    Some(redis::Value::BulkString(b)) => Some(b),
                    _ => None,
                }
            } else {
                None
            };
            out.push((there, count));
        }
        Ok(out)
    }

    /// A purge's removal of the ids without a job hash it claimed and was told to remove
    /// (each only while it still has none): the ids not removed, with why.
    async fn remove_ghosts(&mut self, q: &bullmq::BullMq, ids: &[usize]) -> Result<()> {
        let sha = script_load(self.b, bullmq::REMOVE_GHOST_SCRIPT).await?;
        let mut pipe = redis::pipe();
        for &i in ids {
            let id = String::from_utf8_lossy(&self.claimed[i].0.member).into_owned();
            pipe.cmd("EVALSHA")
                .arg(&sha)
                .arg(2)
                .arg(q.key(&id))
                .arg(q.set_key())
                .arg(&self.claimed[i].0.member);
        }
        let mut con = self.b.con.clone();
        let codes: Vec<i64> = pipe.query_async(&mut con).await.map_err(|e| self.b.err(e))?;
        for (&i, c) in ids.iter().zip(codes) {
            if c == -1 {
                self.unremoved.push((
                    i,
                    "bullmq: the id had no job hash when read, and has one now (a job was added under that id meanwhile): left in failed".into(),
                ));
            }
        }
        Ok(())
    }
}

/// A page read ahead (BullMQ by ids alone): for a claim of `n`, and the cursor before it.
struct Ahead {
    n: usize,
    before: Cursor,
    page: Vec<Entry>,
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

/// What BullMQ's `reprocessJob` answered for one job.
fn bullmq_outcome(code: i64) -> SendOutcome {
    match code {
        1 => SendOutcome::Sent,
        -1 => SendOutcome::Rejected {
            reason: "bullmq: the job's hash is gone (removed meanwhile, after the run found it); left in failed".into(),
        },
        -3 => SendOutcome::Rejected {
            reason: "bullmq: no longer in failed when retried (retried or removed meanwhile)"
                .into(),
        },
        -4 => SendOutcome::Rejected {
            reason: "bullmq: the job's key holds another type than a hash, so it is no job BullMQ could run; left in failed (check the key with TYPE)".into(),
        },
        -5 => SendOutcome::Rejected {
            reason: "bullmq: a key of the job's parent (its parentKey's :dependencies, :unsuccessful, :failed or :processed) holds another type than BullMQ gives it; left in failed".into(),
        },
        other => SendOutcome::Rejected {
            reason: format!("bullmq: reprocessJob returned {other}"),
        },
    }
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

    async fn settle(
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
                        .arg("1")
                        .arg(&q.base);
                }
                let codes: Vec<i64> = pipe
                    .query_async(&mut con)
                    .await
                    .map_err(|e| self.b.err(e))?;
                for (c, &i) in codes.iter().zip(accepted) {
                    if *c != 1 {
                        // Its copy is in the target; the job stays where it is now (a second
                        // copy with the same id is harmless).
                        tracing::debug!(id = %self.claimed[i].1, code = c, "bullmq: removeJob did not remove");
                    }
                }
            }
        }
        Ok(())
    }

    fn unremoved(&mut self) -> Vec<(usize, String)> {
        std::mem::take(&mut self.unremoved)
    }

    fn unaccounted(&self) -> Vec<Unaccounted> {
        ghosts_left(self.b, self.ghosts.left, &self.ghosts.examples)
            .into_iter()
            .collect()
    }
}

impl RedisMoveSession<'_> {
    /// The claim of ids read alone: the messages of those whose job hash exists (and their
    /// redrive count); an id without one is left, and counted.
    fn claim_ids(
        &mut self,
        entries: Vec<Entry>,
        checks: Vec<(bool, Option<Vec<u8>>)>,
    ) -> Vec<Message> {
        let mut messages = Vec::with_capacity(entries.len());
        for (e, (there, count)) in entries.into_iter().zip(checks) {
            let id = String::from_utf8_lossy(&e.member).into_owned();
            if !there {
                self.ghosts.leave(&id);
                continue;
            }
            let mut m = Message {
                id: id.clone(),
                native_id: id.clone(),
                ..Message::default()
            };
            if let Some(c) = count {
                m.attributes.push(Attribute {
                    name: REDRIVE_COUNT_ATTRIBUTE.into(),
                    value: AttrValue::from_bytes(Some(&c)),
                });
            }
            messages.push(m);
            self.claimed.push((e, id));
        }
        messages
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
        self.retry(selected, None).await
    }

    async fn move_locally_edited(
        &mut self,
        _ticket: Ticket,
        _target: &Address,
        selected: &[usize],
        batch: &[Message],
    ) -> Result<Vec<SendOutcome>> {
        self.retry(selected, Some(batch)).await
    }
}

/// The call of a script built on BullMQ's `reprocessJob` (the batched retry, the edit): its
/// eight keys and the arguments every such call starts with; the caller adds the jobs.
fn reprocess_call(sha: &str, q: &bullmq::BullMq, count_redrive: bool) -> redis::Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(sha).arg(8);
    for k in [
        "events",
        "failed",
        "wait",
        "meta",
        "active",
        "marker",
        "prioritized",
        "pc",
    ] {
        cmd.arg(q.key(k));
    }
    cmd.arg(&q.base)
        .arg("failedReason")
        .arg("failed")
        .arg("0")
        .arg("0")
        .arg(if count_redrive { "1" } else { "0" });
    cmd
}
