//! Redrive from a topic: the redrive group's committed offsets are the progress.
//!
//! A reader thread polls the redrive consumer, turns records into messages and hands them over
//! in batches through a bounded channel, so that reading, decoding and the copies' round trips
//! overlap. Batches are settled in the order they were claimed; a batch's offsets are committed
//! only once every copy in it (and in every batch before it) was delivered.
//!
//! A committed offset covers every record before it, so what a run commits is exactly what it
//! had to pass to reach what it moved: on each partition, up to the last record it moved, short
//! of the first record it could not move. A partition where nothing moved is not committed; the
//! skipped records after the last moved one stay pending; the skipped ones before it are
//! counted (`committed_past`). Every claim, copy and commit first asks the redrive lease.

use std::collections::VecDeque;

use rdkafka::consumer::BaseConsumer;

use super::reader::{ReadBatch, Reading};
use super::*;
use crate::backend::{Claim, LocalMoves, Ticket};

/// How many claimed batches may wait for their delivery reports at once.
const IN_FLIGHT: usize = 4;

pub struct KafkaMoveSession<'a> {
    b: &'a KafkaBackend,
    c: Arc<BaseConsumer>,
    reading: Reading,
    /// Read and not handed out yet (a batch split by a smaller request).
    leftover: Option<ReadBatch>,
    /// (partition, offset) of every record of each claimed batch not settled yet, oldest
    /// first.
    claimed: VecDeque<Vec<(i32, i64)>>,
    /// Records left to look at when the session began (end minus start offsets).
    remaining: u64,
    /// The first offset per partition this run could not move: nothing at or after it is
    /// committed in this run, so the next run retries it.
    blocked: HashMap<i32, i64>,
    /// Per partition, the records skipped since the last one moved there (not committed).
    skipped: HashMap<i32, u64>,
    /// Skipped records that a commit passed over (before a moved record of their partition).
    committed_past: u64,
    /// The last batch's messages (for the transactional path).
    msgs: Vec<Message>,
    /// The transactional producer of `--exactly-once`.
    tx: Option<produce::Copier>,
    /// `--keep-header` / `--strip-header`, for the copies of the transactional path.
    headers: HeaderRules,
    /// The offset committed last, per partition.
    position: HashMap<i32, i64>,
    /// Whether an asynchronous commit was sent after the last synchronous one.
    unsynced: bool,
    /// This run's hold on the topic: no second redrive copies the same records meanwhile.
    lease: super::lease::Lease,
}

impl<'a> KafkaMoveSession<'a> {
    pub fn begin(
        b: &'a KafkaBackend,
        headers: HeaderRules,
        batch_size: usize,
    ) -> Result<KafkaMoveSession<'a>> {
        // The lease first: the committed offsets read below are this run's alone until it ends.
        let lease = super::lease::acquire(b)?;
        let c = b.redrive_consumer()?;
        // Start fetching first (at the committed offsets, else at the beginning; librdkafka
        // moves a start that retention deleted to the low watermark), then fix the end: the
        // watermark query takes as long as a fetch on some brokers, and overlaps it.
        let committed = b.committed(c.as_ref())?;
        let mut tpl = TopicPartitionList::new();
        for &p in &b.partitions {
            let at = committed
                .get(&p)
                .map_or(Offset::Beginning, |&o| Offset::Offset(o));
            tpl.add_partition_offset(&b.k.topic, p, at)
                .map_err(|e| kafka_err(&b.shown(), e))?;
        }
        c.assign(&tpl).map_err(|e| kafka_err(&b.shown(), e))?;
        let marks = b.watermarks(c.as_ref())?;
        let mut start = HashMap::new();
        let mut open = HashMap::new();
        let mut done = TopicPartitionList::new();
        for (p, lo, hi) in marks {
            let s = committed.get(&p).copied().unwrap_or(lo).max(lo);
            start.insert(p, s);
            if s < hi {
                open.insert(p, hi);
            } else {
                done.add_partition(&b.k.topic, p);
            }
        }
        tracing::debug!(?start, end = ?open, "kafka: redrive group offsets and end offsets read");
        if done.count() > 0 {
            // Nothing to move there: stop fetching it.
            c.pause(&done).map_err(|e| kafka_err(&b.shown(), e))?;
        }
        let remaining = open
            .iter()
            .map(|(p, e)| (e - start.get(p).copied().unwrap_or(*e)).max(0) as u64)
            .sum();
        let reading = Reading::start(b, c.clone(), open, batch_size)?;
        Ok(KafkaMoveSession {
            b,
            c,
            reading,
            leftover: None,
            claimed: VecDeque::new(),
            remaining,
            blocked: HashMap::new(),
            skipped: HashMap::new(),
            committed_past: 0,
            msgs: Vec::new(),
            tx: None,
            headers,
            position: HashMap::new(),
            unsynced: false,
            lease,
        })
    }

    /// The offsets to commit for a settled batch (records in offset order per partition):
    /// per partition, one past the last record moved (`accepted`), short of the first record
    /// that could not be sent in this run (`failed`). The rest were skipped: those before a
    /// moved record of their partition are committed past (and counted), the others stay
    /// pending.
    fn advance(
        &mut self,
        batch: &[(i32, i64)],
        accepted: &[usize],
        failed: &[usize],
    ) -> HashMap<i32, i64> {
        let mut commit: HashMap<i32, i64> = HashMap::new();
        for (i, &(p, o)) in batch.iter().enumerate() {
            if self.blocked.get(&p).is_some_and(|b| o >= *b) {
                continue;
            }
            if failed.contains(&i) {
                self.blocked.insert(p, o);
            } else if accepted.contains(&i) {
                self.committed_past += self.skipped.remove(&p).unwrap_or(0);
                commit.insert(p, o + 1);
            } else {
                *self.skipped.entry(p).or_default() += 1;
            }
        }
        commit
    }

    fn offsets_tpl(&self, offsets: &HashMap<i32, i64>) -> Result<TopicPartitionList> {
        let mut tpl = TopicPartitionList::new();
        for (&p, &o) in offsets {
            tpl.add_partition_offset(&self.b.k.topic, p, Offset::Offset(o))
                .map_err(|e| kafka_err(&self.b.shown(), e))?;
        }
        Ok(tpl)
    }
}

#[async_trait]
impl MoveSession for KafkaMoveSession<'_> {
    fn local(&mut self) -> Option<&mut dyn LocalMoves> {
        Some(self)
    }

    async fn next_batch(&mut self, n: usize) -> Result<Option<Claim>> {
        self.lease.check()?;
        let mut batch = match self.leftover.take() {
            Some(b) => b,
            None => match self.reading.next().await {
                None => return Ok(None),
                Some(r) => r?,
            },
        };
        if batch.msgs.len() > n {
            self.leftover = Some(ReadBatch {
                msgs: batch.msgs.split_off(n),
                offsets: batch.offsets.split_off(n),
            });
        }
        self.claimed.push_back(batch.offsets);
        if self.b.exactly_once {
            // Kept for the transactional path (move_locally), which copies them itself.
            self.msgs = batch.msgs.clone();
            for m in &mut self.msgs {
                self.headers.apply(m);
                // A copy counts one more redrive (the loop guard), as on every move path.
                m.count_redrive();
            }
        }
        Ok(Some(Claim::new(batch.msgs)))
    }

    async fn settle(
        &mut self,
        _ticket: Ticket,
        accepted: &[usize],
        failed: &[usize],
    ) -> Result<()> {
        let Some(batch) = self.claimed.pop_front() else {
            return Ok(());
        };
        // A run that lost its lease commits nothing more (another may be moving these).
        self.lease.check()?;
        let commit = self.advance(&batch, accepted, failed);
        if commit.is_empty() {
            return Ok(());
        }
        let tpl = self.offsets_tpl(&commit)?;
        self.position.extend(commit);
        // Asynchronously: the commits of one consumer reach the coordinator in order, and
        // `finish` commits the last position synchronously, so a run ends with its progress
        // stored or an error. A crash before that re-reads the last batches on the next
        // run (copies with the same stable ids), never skips one.
        self.c
            .commit(&tpl, CommitMode::Async)
            .map_err(|e| kafka_err(&self.b.shown(), e))?;
        self.unsynced = true;
        Ok(())
    }

    fn pipeline_depth(&self) -> usize {
        // The transactional path copies and commits each batch in one transaction.
        if self.b.exactly_once { 1 } else { IN_FLIGHT }
    }

    fn recycle(&mut self, batch: Vec<Message>) {
        self.reading.recycle(batch);
    }

    fn remaining(&self) -> Option<u64> {
        Some(self.remaining)
    }

    fn holds(&self) -> Result<()> {
        self.lease.check()
    }

    fn committed_past(&self) -> u64 {
        self.committed_past
    }

    async fn finish(&mut self) -> Result<()> {
        self.reading.stop();
        if !std::mem::take(&mut self.unsynced) {
            return Ok(());
        }
        // The positions were sent already (asynchronously); without the lease they are not
        // sent again: what did not land is sent again by the next run (same stable ids).
        self.lease.check()?;
        let tpl = self.offsets_tpl(&self.position)?;
        // A coordinator that moves or is still being looked up fails a commit with a
        // retriable error; retry those for a while, as the Java client's commitSync does,
        // rather than end a complete run with its progress unstored.
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let c = self.c.clone();
            match blocking(|| c.commit(&tpl, CommitMode::Sync)) {
                Ok(()) => return Ok(()),
                Err(e) if coordinator_busy(&e) && Instant::now() < deadline => {
                    tracing::debug!(error = %e, "kafka: final commit: coordinator busy; retrying");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(kafka_err(&self.b.shown(), e)),
            }
        }
    }
}

#[async_trait]
impl LocalMoves for KafkaMoveSession<'_> {
    async fn move_locally(
        &mut self,
        _ticket: Ticket,
        target: &Address,
        selected: &[usize],
    ) -> Result<Vec<SendOutcome>> {
        let Address::Kafka(t) = target else {
            unreachable!("checked by can_move_locally")
        };
        let shown = self.b.shown();
        let batch = self.claimed.pop_front().unwrap_or_default();
        self.lease.check()?;
        if selected.is_empty() {
            // Nothing to copy: no transaction, and nothing to commit (the skipped records
            // stay pending unless a later record of their partition moves).
            self.advance(&batch, &[], &[]);
            return Ok(Vec::new());
        }
        if self.tx.is_none() {
            let mut c = self.b.config(produce::PRODUCER_TUNABLES);
            c.set(
                "transactional.id",
                format!("dlqctl-redrive.{}.{}", self.b.k.topic, t.topic),
            )
            .set("enable.idempotence", "true")
            .set("acks", "all");
            let p = produce::Copier::new(&c, self.b)?;
            blocking(|| p.producer().init_transactions(TIMEOUT)).map_err(|e| txn_err(&shown, e))?;
            self.tx = Some(p);
        }
        // Up to the last record copied in each partition, atomically with the copies; the
        // counts are put back if the transaction does not commit.
        let before = (
            self.committed_past,
            self.blocked.clone(),
            self.skipped.clone(),
        );
        let commit = self.advance(&batch, selected, &[]);
        let tpl = self.offsets_tpl(&commit)?;
        let outcome = self.in_transaction(t, selected, &tpl).await;
        if outcome.is_err() {
            (self.committed_past, self.blocked, self.skipped) = before;
        }
        outcome
    }
}

impl KafkaMoveSession<'_> {
    /// Copy the messages at `selected` into `t` and commit `tpl`, in one transaction.
    async fn in_transaction(
        &self,
        t: &crate::address::KafkaAddress,
        selected: &[usize],
        tpl: &TopicPartitionList,
    ) -> Result<Vec<SendOutcome>> {
        let shown = self.b.shown();
        let p = self.tx.as_ref().expect("set by move_locally");
        let msgs: Vec<Message> = selected.iter().map(|&i| self.msgs[i].clone()).collect();
        let p = p.producer();
        p.begin_transaction().map_err(|e| txn_err(&shown, e))?;
        let outcome = async {
            let out = produce::enqueue(
                self.tx.as_ref().expect("set above"),
                &t.topic,
                &shown,
                &msgs,
            )
            .await
            .await?;
            if let Some(bad) = out.iter().find_map(|o| match o {
                SendOutcome::Sent => None,
                SendOutcome::Rejected { reason } | SendOutcome::Conflict { reason } => {
                    Some(reason.clone())
                }
            }) {
                return Err(Error::Backend {
                    target: t.topic.clone(),
                    reason: format!(
                        "a copy was refused ({bad}); the transaction is aborted, nothing moved"
                    ),
                });
            }
            let cgm = self.c.group_metadata().ok_or_else(|| Error::Backend {
                target: shown.clone(),
                reason: "no consumer group metadata".into(),
            })?;
            blocking(|| p.send_offsets_to_transaction(tpl, &cgm, TIMEOUT))
                .map_err(|e| txn_err(&shown, e))?;
            blocking(|| p.commit_transaction(TIMEOUT)).map_err(|e| txn_err(&shown, e))?;
            tracing::debug!(records = msgs.len(), "kafka: transaction committed");
            Ok(out)
        }
        .await;
        if outcome.is_err() {
            let _ = blocking(|| p.abort_transaction(TIMEOUT));
        }
        outcome
    }
}
