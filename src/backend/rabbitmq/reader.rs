//! Reading a queue over AMQP, which has no peek: a consumer takes each message, and the
//! reader either acknowledges it (a move, once its copy is confirmed) or holds it,
//! unacknowledged, until the reader closes, when RabbitMQ puts it back (with `redelivered`
//! set; on a quorum queue its delivery count goes up by one).
//!
//! A consumer gets at most `prefetch` unacknowledged messages. A reader that holds more than
//! that (a scan, or a move whose filter skips many) cancels its consumer and starts another
//! on the same channel: what the old one delivered stays held by the channel, and the new one
//! has a prefetch of its own. So a reader holds any number of messages at a constant cost
//! here (the broker keeps them), and never sees one twice.

use std::collections::VecDeque;
use std::time::Duration;

use futures::StreamExt;
use lapin::message::Delivery;
use lapin::options::{
    BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions,
    QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString};
use lapin::{Channel, Connection, Consumer};

use super::conn::{Broker, close};
use crate::error::{Error, Result};

/// How a reader consumes.
#[derive(Clone, Debug)]
pub struct ReadMode {
    /// At most this many unacknowledged messages per consumer.
    pub prefetch: u16,
    /// The only consumer of the queue (a move): RabbitMQ refuses it while the queue has
    /// another consumer, and refuses any other while it is there.
    pub exclusive: bool,
    /// A stream: read from its first offset, each delivery acknowledged at once (a stream
    /// removes nothing; the acknowledgement is its credit).
    pub stream: bool,
}

/// A delivery and the consumer (generation) it came from.
pub struct Got {
    pub delivery: Delivery,
    pub generation: u32,
}

pub struct Reader {
    pub conn: Connection,
    pub ch: Channel,
    broker: Broker,
    queue: String,
    mode: ReadMode,
    consumer: Option<Consumer>,
    /// The current consumer's number: `generation` of what it delivers.
    generation: u32,
    /// Messages the current consumer delivered that are not acknowledged (its prefetch in
    /// use).
    unsettled: u32,
    /// Deliveries taken from a cancelled consumer, not yet handed out.
    buffer: VecDeque<Got>,
    /// What the queue held when the reader started (ready messages).
    pub at_start: u32,
    pub consumers_at_start: u32,
    /// Deliveries received and acknowledged so far, and the highest delivery tag.
    delivered: u64,
    acked: u64,
    last_tag: u64,
    /// The highest delivery tag acknowledged.
    max_acked: u64,
}

/// How long draining a cancelled consumer waits for the end of its deliveries: the end comes
/// once, and a consumer the broker cancelled (its queue deleted) may have given it already.
const DRAIN_WAIT: Duration = Duration::from_secs(5);

/// How long `give_back` waits for the broker to have applied the reader's acknowledgements
/// and returns.
const SETTLE_WAIT: Duration = Duration::from_secs(10);

impl Reader {
    /// A connection of its own (named `dlqctl PURPOSE …`), a channel, and the queue's size.
    pub async fn open(
        broker: &Broker,
        queue: &str,
        mode: ReadMode,
        purpose: &str,
    ) -> Result<Reader> {
        let conn = broker.connect(purpose).await?;
        let ch = conn
            .create_channel()
            .await
            .map_err(|e| broker.error("a channel", e))?;
        let q = ch
            .queue_declare(
                queue.into(),
                QueueDeclareOptions::default().passive(),
                FieldTable::default(),
            )
            .await
            .map_err(|e| broker.error(&format!("queue {queue}"), e))?;
        ch.basic_qos(mode.prefetch.max(1), BasicQosOptions::default())
            .await
            .map_err(|e| broker.error("basic.qos", e))?;
        Ok(Reader {
            at_start: q.message_count(),
            consumers_at_start: q.consumer_count(),
            conn,
            ch,
            broker: broker.clone(),
            queue: queue.to_string(),
            mode,
            consumer: None,
            generation: 0,
            unsettled: 0,
            buffer: VecDeque::new(),
            delivered: 0,
            acked: 0,
            last_tag: 0,
            max_acked: 0,
        })
    }

    /// An error of the reader's channel: of its methods only `basic.consume` needs a
    /// permission (read).
    fn err(&self, e: lapin::Error) -> Error {
        self.broker.error_needing(
            &format!("queue {}", self.queue),
            Some(("read", "reading it (basic.consume)")),
            e,
        )
    }

    async fn start_consumer(&mut self) -> Result<()> {
        self.generation += 1;
        self.unsettled = 0;
        let mut args = FieldTable::default();
        if self.mode.stream {
            args.insert(
                "x-stream-offset".into(),
                AMQPValue::LongString(LongString::from(b"first".to_vec())),
            );
        }
        let tag = format!("dlqctl-{}-{}", std::process::id(), self.generation);
        let c = self
            .ch
            .basic_consume(
                self.queue.as_str().into(),
                tag.into(),
                BasicConsumeOptions {
                    exclusive: self.mode.exclusive,
                    ..BasicConsumeOptions::default()
                },
                args,
            )
            .await
            .map_err(|e| self.err(e))?;
        self.consumer = Some(c);
        Ok(())
    }

    /// Start consuming now, rather than at the first `next`: a read the broker refuses (no
    /// read permission, a consumer in exclusive use) is refused before the command says it
    /// reads.
    pub async fn begin(&mut self) -> Result<()> {
        if self.consumer.is_none() {
            self.start_consumer().await?;
        }
        Ok(())
    }

    /// Cancel the current consumer; what it delivered meanwhile is kept for `next`.
    async fn rotate(&mut self) -> Result<()> {
        if let Some(mut c) = self.consumer.take() {
            self.ch
                .basic_cancel(c.tag(), BasicCancelOptions::default())
                .await
                .map_err(|e| self.err(e))?;
            // After cancel-ok, the stream ends behind the deliveries already sent.
            while let Ok(Some(d)) = tokio::time::timeout(DRAIN_WAIT, c.next()).await {
                let delivery = d.map_err(|e| self.err(e))?;
                self.delivered += 1;
                self.last_tag = self.last_tag.max(delivery.delivery_tag);
                self.buffer.push_back(Got {
                    delivery,
                    generation: self.generation,
                });
            }
        }
        self.start_consumer().await
    }

    /// The next delivery; `None` when nothing came for `idle`. `want`: how many the caller
    /// is about to take (so that the consumer has room for them).
    pub async fn next(&mut self, idle: Duration, want: u32) -> Result<Option<Got>> {
        if let Some(g) = self.buffer.pop_front() {
            return Ok(Some(g));
        }
        if self.consumer.is_none() {
            self.start_consumer().await?;
        } else if self.unsettled.saturating_add(want.max(1)) > u32::from(self.mode.prefetch) {
            self.rotate().await?;
            if let Some(g) = self.buffer.pop_front() {
                return Ok(Some(g));
            }
        }
        let c = self.consumer.as_mut().expect("started");
        match tokio::time::timeout(idle, c.next()).await {
            Err(_) => Ok(None),
            Ok(None) => {
                // The broker cancelled the consumer (basic.cancel): its stream has ended, and
                // nothing more comes from it.
                self.consumer = None;
                Err(self.cancelled().await)
            }
            Ok(Some(Err(e))) => Err(self.err(e)),
            Ok(Some(Ok(delivery))) => {
                self.unsettled += 1;
                self.delivered += 1;
                self.last_tag = self.last_tag.max(delivery.delivery_tag);
                if self.mode.stream {
                    self.ack(delivery.delivery_tag, self.generation).await?;
                }
                Ok(Some(Got {
                    delivery,
                    generation: self.generation,
                }))
            }
        }
    }

    /// Why the broker cancelled the consumer: the queue was deleted (asked on a channel of its
    /// own: a passive declare of a missing queue closes its channel), or something else
    /// cancelled it (a quorum queue's leader moved, a policy changed it).
    async fn cancelled(&self) -> Error {
        const DONE: &str = "what was moved before stays moved, and nothing dlqctl took was lost";
        let gone = match self.conn.create_channel().await {
            Ok(ch) => {
                let r = ch
                    .queue_declare(
                        self.queue.as_str().into(),
                        QueueDeclareOptions::default().passive(),
                        FieldTable::default(),
                    )
                    .await;
                let gone = matches!(&r, Err(e) if matches!(e.kind(), lapin::ErrorKind::ProtocolError(p) if p.get_id() == 404));
                if r.is_ok() {
                    let _ = ch.close(200, "".into()).await;
                }
                gone
            }
            Err(_) => false,
        };
        if gone {
            Error::NotFound {
                what: format!("queue {} on {}", self.queue, self.broker.shown()),
                detail: format!(
                    "it was deleted while the run read it (the broker cancelled dlqctl's consumer); {DONE}; the messages not yet moved went with the queue"
                ),
            }
        } else {
            Error::Backend {
                target: self.broker.shown(),
                reason: format!(
                    "the broker cancelled dlqctl's consumer of queue {} while the run read it (the queue still exists: a quorum queue's leader moved, or a policy changed it); {DONE}; re-run to continue",
                    self.queue
                ),
            }
        }
    }

    /// Acknowledge these deliveries (tag, generation). Where they are exactly the channel's
    /// unacknowledged deliveries up to the highest of them (the usual batch: nothing held
    /// before it), one `basic.ack` with `multiple` does it; otherwise each is acknowledged,
    /// their frames handed to the connection together rather than one wait each.
    pub async fn ack_all(&mut self, tags: &[(u64, u32)]) -> Result<()> {
        let (Some(lo), Some(hi)) = (
            tags.iter().map(|t| t.0).min(),
            tags.iter().map(|t| t.0).max(),
        ) else {
            return Ok(());
        };
        // Tags are distinct; every earlier acknowledgement is below `lo` and there are lo - 1
        // of them, and these are hi - lo + 1: then they are 1..=hi, all of them.
        let exact = self.max_acked < lo && self.acked + tags.len() as u64 == hi;
        if exact {
            let multiple = BasicAckOptions { multiple: true };
            self.ch
                .basic_ack(hi, multiple)
                .await
                .map_err(|e| self.err(e))?;
        } else {
            let acks = tags
                .iter()
                .map(|&(tag, _)| self.ch.basic_ack(tag, BasicAckOptions::default()));
            for r in futures::future::join_all(acks).await {
                r.map_err(|e| self.err(e))?;
            }
        }
        // RabbitMQ answers no basic.ack: a connection lost after the ack was written and before
        // the broker read it would leave the messages in the queue while the run counts them
        // moved. A synchronous method on the same channel, which the broker handles after the
        // ack, makes its answer the ack's: basic.qos with the prefetch the channel has (it
        // changes nothing: it applies to consumers started later, with the same value).
        self.ch
            .basic_qos(self.mode.prefetch.max(1), BasicQosOptions::default())
            .await
            .map_err(|e| self.err(e))?;
        self.acked += tags.len() as u64;
        self.max_acked = self.max_acked.max(hi);
        let current = tags.iter().filter(|t| t.1 == self.generation).count() as u32;
        self.unsettled = self.unsettled.saturating_sub(current);
        Ok(())
    }

    /// Acknowledge (remove) one delivery.
    pub async fn ack(&mut self, tag: u64, generation: u32) -> Result<()> {
        self.ch
            .basic_ack(tag, BasicAckOptions::default())
            .await
            .map_err(|e| self.err(e))?;
        self.acked += 1;
        self.max_acked = self.max_acked.max(tag);
        if generation == self.generation {
            self.unsettled = self.unsettled.saturating_sub(1);
        }
        Ok(())
    }

    /// Give back everything held and close, once the broker has applied this reader's
    /// acknowledgements. A quorum queue's client in the broker may still hold a channel's
    /// last acknowledgements when the channel closes, and the close returns those messages
    /// to the queue: acknowledged, copied, and back (found by the quorum conformance run).
    /// So the held messages are returned explicitly (basic.nack, requeue), after the
    /// acknowledgements, and the reader waits until the queue shows them ready again: then
    /// every acknowledgement before them was applied too. A stream removes nothing: it is
    /// closed at once.
    pub async fn give_back(&mut self) {
        // Bounded: a broker that does not answer (a cancel-ok, a declare) must not hold the
        // end of the run; closing the connection gives back what it held all the same.
        if !self.mode.stream && self.conn.status().connected() {
            match tokio::time::timeout(SETTLE_WAIT + DRAIN_WAIT, self.return_held()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "rabbitmq: giving back by closing the connection");
                }
                Err(_) => tracing::debug!("rabbitmq: no answer; giving back by closing"),
            }
        }
        self.close().await;
    }

    async fn return_held(&mut self) -> Result<()> {
        if let Some(c) = self.consumer.take() {
            self.ch
                .basic_cancel(c.tag(), BasicCancelOptions::default())
                .await
                .map_err(|e| self.err(e))?;
            let mut c = c;
            while let Ok(Some(d)) = tokio::time::timeout(DRAIN_WAIT, c.next()).await {
                if let Ok(d) = d {
                    self.delivered += 1;
                    self.last_tag = self.last_tag.max(d.delivery_tag);
                }
            }
        }
        self.buffer.clear();
        if self.delivered > self.acked {
            self.ch
                .basic_nack(
                    self.last_tag,
                    BasicNackOptions {
                        multiple: true,
                        requeue: true,
                    },
                )
                .await
                .map_err(|e| self.err(e))?;
        }
        // Nothing else takes from the queue while the reader is there only for an exclusive
        // reader; a shared one waits for at least what it found, less what it removed.
        if !self.mode.exclusive && self.consumers_at_start > 0 {
            return Ok(());
        }
        let expect = u64::from(self.at_start).saturating_sub(self.acked);
        let deadline = tokio::time::Instant::now() + SETTLE_WAIT;
        loop {
            let q = self
                .ch
                .queue_declare(
                    self.queue.as_str().into(),
                    QueueDeclareOptions::default().passive(),
                    FieldTable::default(),
                )
                .await
                .map_err(|e| self.err(e))?;
            if u64::from(q.message_count()) >= expect || tokio::time::Instant::now() >= deadline {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Give back everything held (RabbitMQ requeues what a closed channel had not
    /// acknowledged) and close the connection.
    pub async fn close(&mut self) {
        self.buffer.clear();
        self.consumer = None;
        close(&self.conn).await;
    }
}
