//! Redrive from a topic: the redrive group's committed offsets are the progress.
//!
//! A reader thread polls the redrive consumer, turns records into messages and hands them over
//! in batches through a bounded channel, so that reading, decoding and the copies' round trips
//! overlap. Batches are settled in the order they were claimed; a batch's offsets are committed
//! only once every copy in it (and in every batch before it) was delivered.

use std::collections::VecDeque;

use rdkafka::consumer::BaseConsumer;

use super::reader::{ReadBatch, Reading};
use super::*;
use crate::backend::{Claim, Ticket};

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
    _lease: super::lease::Lease,
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
            msgs: Vec::new(),
            tx: None,
            headers,
            position: HashMap::new(),
            unsynced: false,
            _lease: lease,
        })
    }

    /// The offsets to commit for a settled batch: `last + 1` per partition, short of the
    /// first record that could not be sent in this run.
    fn commit_offsets(&self, batch: &[(i32, i64)]) -> HashMap<i32, i64> {
        let mut commit: HashMap<i32, i64> = HashMap::new();
        for &(p, o) in batch {
            if self.blocked.get(&p).is_some_and(|b| o >= *b) {
                continue;
            }
            let e = commit.entry(p).or_insert(o + 1);
            *e = (*e).max(o + 1);
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
    async fn next_batch(&mut self, n: usize) -> Result<Option<Claim>> {
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
            }
        }
        Ok(Some(Claim::new(batch.msgs)))
    }

    async fn settle(
        &mut self,
        _ticket: Ticket,
        _accepted: &[usize],
        failed: &[usize],
    ) -> Result<()> {
        let Some(batch) = self.claimed.pop_front() else {
            return Ok(());
        };
        // Everything not failed is done: moved, or skipped by the filter (a filtered
        // redrive consumes what it skips; see docs/kafka.md).
        for &i in failed {
            let (p, o) = batch[i];
            let b = self.blocked.entry(p).or_insert(o);
            *b = (*b).min(o);
        }
        let commit = self.commit_offsets(&batch);
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

    async fn finish(&mut self) -> Result<()> {
        self.reading.stop();
        if !std::mem::take(&mut self.unsynced) {
            return Ok(());
        }
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
        if self.tx.is_none() {
            let mut c = self.b.config(produce::PRODUCER_TUNABLES);
            c.set(
                "transactional.id",
                format!("dlqctl-redrive.{}.{}", self.b.k.topic, t.topic),
            )
            .set("enable.idempotence", "true")
            .set("acks", "all");
            let p = produce::Copier::new(&c, &shown)?;
            blocking(|| p.producer().init_transactions(TIMEOUT)).map_err(|e| txn_err(&shown, e))?;
            self.tx = Some(p);
        }
        let p = self.tx.as_ref().expect("set above");
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
            // Every record of the batch is consumed (the skipped ones too), atomically
            // with the copies.
            let mut commit: HashMap<i32, i64> = HashMap::new();
            for &(part, o) in &batch {
                let e = commit.entry(part).or_insert(o + 1);
                *e = (*e).max(o + 1);
            }
            let tpl = self.offsets_tpl(&commit)?;
            let cgm = self.c.group_metadata().ok_or_else(|| Error::Backend {
                target: shown.clone(),
                reason: "no consumer group metadata".into(),
            })?;
            blocking(|| p.send_offsets_to_transaction(&tpl, &cgm, TIMEOUT))
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
