//! The BullMQ half of a Redis move session: the batched `reprocessJob` (and `dlqctl edit`'s
//! form of it), claims by ids alone with the page read ahead, and the ids in `failed` without
//! a job hash (docs/systems/bullmq.md).

use super::{RedisMoveSession, only_body_changed, script_load};
use crate::backend::SendOutcome;
use crate::backend::redis::zset::{self, Cursor, Entry};
use crate::backend::redis::{Library, bullmq};
use crate::error::Result;
use crate::message::{AttrValue, Attribute, Message, REDRIVE_COUNT_ATTRIBUTE};

impl RedisMoveSession<'_> {
    /// BullMQ, `dlqctl edit`: each edited job by one call of bullmq_editJob.lua and the
    /// batched `reprocessJob` (its `data` set to the copy's body while it is still failed with
    /// the `data` this run read, then retried); a copy whose other fields differ from the
    /// job's now is refused.
    pub(super) async fn retry_bullmq_edited(
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
    pub(super) async fn retry_bullmq(
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
                    "the retry script answered {} for {} (was it replaced?); run again: each job is retried at most once",
                    crate::human::count(codes.len() as u64, "code", "codes"),
                    crate::human::count(selected.len() as u64, "job", "jobs")
                ),
            });
        }
        // -1: the job's hash was gone. Left in failed only if its id still is there; a job
        // removed whole (job.remove()) took its id too. The script's codes stay BullMQ's.
        let gone: Vec<String> = selected
            .iter()
            .zip(&codes)
            .filter(|(_, c)| **c == -1)
            // The job's id (its member in failed), not its stable id (an `id` rule's).
            .map(|(&i, _)| String::from_utf8_lossy(&self.claimed[i].0.member).into_owned())
            .collect();
        let mut there = if gone.is_empty() {
            Vec::new()
        } else {
            self.in_failed(q, &gone).await?
        }
        .into_iter();
        Ok(codes
            .into_iter()
            .map(|c| match c {
                -1 if there.next() == Some(false) => SendOutcome::Rejected {
                    reason: REMOVED.into(),
                },
                c => bullmq_outcome(c),
            })
            .collect())
    }

    /// Whether each id is in the failed set now (one pipeline of `ZSCORE`s a thousand at a
    /// time: every Redis has it).
    pub(super) async fn in_failed(&self, q: &bullmq::BullMq, ids: &[String]) -> Result<Vec<bool>> {
        let mut con = self.b.con.clone();
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(1000) {
            let mut pipe = redis::pipe();
            for id in chunk {
                pipe.cmd("ZSCORE").arg(q.set_key()).arg(id);
            }
            let scores: Vec<Option<f64>> = pipe
                .query_async(&mut con)
                .await
                .map_err(|e| self.b.err(e))?;
            out.extend(scores.iter().map(Option::is_some));
        }
        Ok(out)
    }

    /// BullMQ by ids alone: the next page of up to `n` ids (the one read ahead, when it was
    /// read for `n`).
    pub(super) async fn next_ids(&mut self, n: usize, hi: f64) -> Result<Vec<Entry>> {
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

    /// BullMQ by ids alone: whether each job's hash exists (an id without one is no job to
    /// retry), and for the loop guard its `dlqctl-redrive-count`, in one pipeline.
    pub(super) async fn job_checks(
        &self,
        entries: &[Entry],
    ) -> Result<Vec<(bool, Option<Vec<u8>>)>> {
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
        let raw: Vec<redis::Value> = pipe
            .query_async(&mut con)
            .await
            .map_err(|e| self.b.err(e))?;
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
    pub(super) async fn remove_ghosts(&mut self, q: &bullmq::BullMq, ids: &[usize]) -> Result<()> {
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
        let codes: Vec<i64> = pipe
            .query_async(&mut con)
            .await
            .map_err(|e| self.b.err(e))?;
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

    /// The claim of ids read alone: the messages of those whose job hash exists (and their
    /// redrive count); an id without one is left, and counted.
    pub(super) fn claim_ids(
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

/// A page read ahead (BullMQ by ids alone): for a claim of `n`, and the cursor before it.
pub(super) struct Ahead {
    n: usize,
    before: Cursor,
    page: Vec<Entry>,
}

/// A job whose hash and id in failed were both gone when it was to be retried.
const REMOVED: &str = "bullmq: the job was removed by someone else while the run went (its hash and its id in failed are gone, as job.remove() takes them); nothing to do";

/// What BullMQ's `reprocessJob` answered for one job.
pub(super) fn bullmq_outcome(code: i64) -> SendOutcome {
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

/// The call of a script built on BullMQ's `reprocessJob` (the batched retry, the edit): its
/// eight keys and the arguments every such call starts with; the caller adds the jobs.
pub(super) fn reprocess_call(sha: &str, q: &bullmq::BullMq, count_redrive: bool) -> redis::Cmd {
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
