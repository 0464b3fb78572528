//! The reader thread of redrives and scans: it polls a consumer that was assigned its
//! partitions, turns records into messages and hands them over in batches through a bounded
//! channel, so that reading and decoding overlap with whatever the caller does with them.

use std::sync::atomic::{AtomicBool, Ordering};

use rdkafka::consumer::BaseConsumer;
use tokio::sync::mpsc;

use super::*;

/// How many batches the reader may have ready ahead of the engine.
const READ_AHEAD: usize = 2;
/// A batch closes when no record arrived for this long (the rest of the topic may be slow to
/// come, or there is none).
const BATCH_CLOSE: Duration = Duration::from_millis(200);
/// The reader's longest poll, so that it notices a stop soon.
const POLL: Duration = Duration::from_millis(20);

/// Records read, in offset order per partition, and where each came from.
pub(super) struct ReadBatch {
    pub(super) msgs: Vec<Message>,
    pub(super) offsets: Vec<(i32, i64)>,
}

impl ReadBatch {
    fn with_capacity(n: usize) -> ReadBatch {
        ReadBatch {
            msgs: Vec::with_capacity(n),
            offsets: Vec::with_capacity(n),
        }
    }
}

/// The reader thread: polls until every partition reached the end fixed at the start (or
/// nothing arrived for [`idle`]), pausing each partition at its end so that the consumer stops
/// fetching what this run will not move.
struct Reader {
    c: Arc<BaseConsumer>,
    topic: String,
    shown: String,
    id: Option<IdSource>,
    /// Exclusive end per partition of the partitions not done yet.
    open: HashMap<i32, i64>,
    batch_size: usize,
    tx: mpsc::Sender<Result<ReadBatch>>,
    stop: Arc<AtomicBool>,
    /// Batches given back, to be dropped here (see [`Reading::recycle`]).
    used: std::sync::mpsc::Receiver<Vec<Message>>,
    /// How long a partition may give nothing before it counts as drained.
    idle: Duration,
}

/// A running reader thread and its batches.
pub(super) struct Reading {
    rx: mpsc::Receiver<Result<ReadBatch>>,
    stop: Arc<AtomicBool>,
    used: std::sync::mpsc::Sender<Vec<Message>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Reading {
    /// Start reading `c` (assigned already) until each partition of `open` reaches its end
    /// there (exclusive), in batches of up to `batch_size` records.
    pub(super) fn start(
        b: &KafkaBackend,
        c: Arc<BaseConsumer>,
        open: HashMap<i32, i64>,
        batch_size: usize,
    ) -> Result<Reading> {
        let (tx, rx) = mpsc::channel(READ_AHEAD);
        let (used, returned) = std::sync::mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let reader = Reader {
            c,
            topic: b.k.topic.clone(),
            shown: b.shown(),
            id: b.id.clone(),
            open,
            batch_size: batch_size.max(1),
            tx,
            stop: stop.clone(),
            used: returned,
            idle: b.read_idle,
        };
        let thread = std::thread::Builder::new()
            .name("dlqctl-kafka-read".into())
            .spawn(move || reader.run())
            .map_err(|e| Error::Backend {
                target: b.shown(),
                reason: format!("cannot start the reader thread: {e}"),
            })?;
        Ok(Reading {
            rx,
            stop,
            used,
            thread: Some(thread),
        })
    }

    /// Hand a batch's messages back to the reader thread, which allocated them, to be dropped
    /// there: glibc serves a free from another thread by locking the allocating thread's arena,
    /// and the reader, allocating all the time, would wait on it.
    pub(super) fn recycle(&self, msgs: Vec<Message>) {
        // Once the reader has ended, they are dropped here instead.
        let _ = self.used.send(msgs);
    }

    /// The next batch; `None` once everything was read.
    pub(super) async fn next(&mut self) -> Option<Result<ReadBatch>> {
        self.rx.recv().await
    }

    /// End the reader thread (at its next poll, or at once if it waits to hand over a batch)
    /// and wait for it, so that the consumer is closed by its owner, not by a thread that the
    /// process may not wait for.
    pub(super) fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.rx.close();
        while self.rx.try_recv().is_ok() {}
        if let Some(h) = self.thread.take() {
            let _ = blocking(|| h.join());
        }
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        self.stop();
    }
}

impl KafkaBackend {
    /// The messages of a reading, within the address's time range, up to `limit`.
    pub(super) fn read<'a>(
        &'a self,
        mut reading: Reading,
        limit: Option<u64>,
    ) -> MessageStream<'a> {
        let (since, until) = (self.k.range.since, self.k.range.until);
        Box::pin(async_stream::try_stream! {
            let mut n = 0u64;
            'batches: while let Some(batch) = reading.next().await {
                for msg in batch?.msgs {
                    // Time ranges hold for the record's time as dlqctl reads it (the original
                    // timestamp header where a convention records one): offsets_for_times only
                    // finds where to start.
                    if until.is_some_and(|u| msg.enqueued_at.is_some_and(|t| t >= u))
                        || since.is_some_and(|s| msg.enqueued_at.is_some_and(|t| t < s))
                    {
                        continue;
                    }
                    n += 1;
                    yield msg;
                    if limit.is_some_and(|l| n >= l) {
                        break 'batches;
                    }
                }
            }
        })
    }
}

impl Reader {
    fn run(mut self) {
        self.read();
        // The end of the channel tells the receiver that everything was read; then the
        // consumer goes (a scan's consumer belongs to its reader alone).
        let Reader { c, tx, .. } = self;
        drop(tx);
        close(c);
    }

    fn read(&mut self) {
        let idle = self.idle;
        let mut batch = ReadBatch::with_capacity(self.batch_size);
        let mut last = Instant::now();
        let mut trouble = Trouble::default();
        while !self.open.is_empty() && !self.stop.load(Ordering::Relaxed) {
            while let Ok(used) = self.used.try_recv() {
                drop(used);
            }
            let wait = if batch.msgs.is_empty() {
                POLL
            } else {
                BATCH_CLOSE.saturating_sub(last.elapsed()).min(POLL)
            };
            match self.c.poll(wait) {
                None if !batch.msgs.is_empty() => {
                    if last.elapsed() >= BATCH_CLOSE && !self.hand_over(&mut batch) {
                        return;
                    }
                }
                None => {
                    if last.elapsed() >= idle {
                        if let Err(e) = trouble.idle(&self.shown, idle) {
                            let _ = self.tx.blocking_send(Err(e));
                            return;
                        }
                        // Partitions still short of their end: gaps (transaction markers,
                        // compaction) or a high watermark that was wrong. Done.
                        tracing::debug!(open = ?self.open, "kafka: reader idle; done");
                        self.open.clear();
                    }
                }
                Some(Err(e)) => {
                    if let Err(e) = trouble.note(&self.shown, e) {
                        let _ = self.tx.blocking_send(Err(e));
                        return;
                    }
                }
                Some(Ok(m)) => {
                    trouble.clear();
                    let (p, o) = (m.partition(), m.offset());
                    let Some(&end) = self.open.get(&p) else {
                        continue;
                    };
                    if o + 1 >= end {
                        self.open.remove(&p);
                        self.pause(p);
                    }
                    if o >= end {
                        continue;
                    }
                    last = Instant::now();
                    batch.offsets.push((p, o));
                    batch.msgs.push(decode(&m, self.id.as_ref()));
                    if batch.msgs.len() >= self.batch_size && !self.hand_over(&mut batch) {
                        return;
                    }
                }
            }
        }
        if !batch.msgs.is_empty() {
            self.hand_over(&mut batch);
        }
    }

    /// Send the batch to the session (waiting while it is [`READ_AHEAD`] batches behind).
    /// False when the session is gone.
    fn hand_over(&self, batch: &mut ReadBatch) -> bool {
        let full = std::mem::replace(batch, ReadBatch::with_capacity(self.batch_size));
        self.tx.blocking_send(Ok(full)).is_ok()
    }

    /// Stop fetching a partition that reached its end (records that arrived after the run
    /// began wait for the next run). Otherwise the consumer keeps a long-poll fetch in flight
    /// at the end of the partition, and the final commit waits behind it.
    fn pause(&self, p: i32) {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition(&self.topic, p);
        if let Err(e) = self.c.pause(&tpl) {
            tracing::debug!(partition = p, error = %e, "kafka: pause failed");
        }
    }
}
