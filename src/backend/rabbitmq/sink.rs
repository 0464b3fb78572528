//! Writing copies: every publish is `mandatory` on a channel in confirm mode, so that a copy
//! counts as sent only once the broker confirmed it (enqueued, and persisted where the queue
//! is durable), and a copy that no queue took (unroutable) comes back as a failure instead of
//! vanishing.

use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::{Channel, Confirmation, Connection, ExchangeKind, PublisherConfirm};

use super::address::AmqpTarget;
use super::conn::{Broker, Need, close};
use super::record::to_publish;
use crate::backend::{PendingSend, SendOutcome};
use crate::error::{Error, Result};
use crate::message::Message;

/// What a publish needs: write permission on the target's exchange (`amq.default` for a
/// queue).
const PUBLISH: Option<Need> = Some(("write", "publishing a copy (basic.publish)"));

/// A copy of a batch: refused before it was sent (why), or published (its confirm).
enum Slot {
    Refused(String),
    Sent(PublisherConfirm),
}

/// How long a failed publish waits for the confirms before it to give the broker's reason
/// (they fail at once where the broker closed the channel).
const CAUSE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

pub struct Publisher {
    conn: Connection,
    ch: Channel,
    exchange: String,
    routing_key: String,
    broker: Broker,
}

impl Publisher {
    /// A connection and a confirm-mode channel to the target, once it was checked to exist.
    pub async fn open(broker: &Broker) -> Result<Publisher> {
        let conn = broker.connect("publisher").await?;
        let ch = conn
            .create_channel()
            .await
            .map_err(|e| broker.error("a channel", e))?;
        let (exchange, routing_key) = match &broker.addr.target {
            AmqpTarget::Queue(q) => {
                ch.queue_declare(
                    q.as_str().into(),
                    QueueDeclareOptions::default().passive(),
                    FieldTable::default(),
                )
                .await
                .map_err(|e| broker.error(&format!("queue {q}"), e))?;
                (String::new(), q.clone())
            }
            AmqpTarget::Exchange {
                exchange,
                routing_key,
            } => {
                if !exchange.is_empty() {
                    ch.exchange_declare(
                        exchange.as_str().into(),
                        ExchangeKind::Direct,
                        ExchangeDeclareOptions {
                            passive: true,
                            ..ExchangeDeclareOptions::default()
                        },
                        FieldTable::default(),
                    )
                    .await
                    .map_err(|e| broker.error(&format!("exchange {exchange}"), e))?;
                }
                (exchange.clone(), routing_key.clone())
            }
        };
        ch.confirm_select(ConfirmSelectOptions::default())
            .await
            .map_err(|e| broker.error("confirm.select", e))?;
        Ok(Publisher {
            conn,
            ch,
            exchange,
            routing_key,
            broker: broker.clone(),
        })
    }

    /// Publish every message of `batch`; their outcomes follow the broker's confirms.
    pub async fn send_start(&self, batch: &[Message]) -> Result<PendingSend> {
        // Every publish of the batch is handed to the connection before any is waited for:
        // one wait per batch, not per message. Each future, first polled in order, takes its
        // delivery tag and queues its frames in one step, so each confirm is its own.
        let mut slots = Vec::with_capacity(batch.len());
        let mut publishes = Vec::with_capacity(batch.len());
        for m in batch {
            match to_publish(m, &self.broker.user) {
                Ok(props) => {
                    slots.push(None);
                    publishes.push(self.ch.basic_publish(
                        self.exchange.as_str().into(),
                        self.routing_key.as_str().into(),
                        BasicPublishOptions {
                            mandatory: true,
                            ..BasicPublishOptions::default()
                        },
                        &m.body,
                        props,
                    ));
                }
                Err(reason) => slots.push(Some(Slot::Refused(reason))),
            }
        }
        let mut published = futures::future::join_all(publishes).await.into_iter();
        let mut failed = None;
        for slot in &mut slots {
            if slot.is_none() {
                match published
                    .next()
                    .expect("one publish per message not refused")
                {
                    Ok(confirm) => *slot = Some(Slot::Sent(confirm)),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
        }
        if let Some(e) = failed {
            return Err(self.publish_failed(slots, e).await);
        }
        let slots: Vec<Slot> = slots.into_iter().flatten().collect();
        let broker = self.broker.clone();
        let (exchange, key) = (self.exchange.clone(), self.routing_key.clone());
        let what = self.what();
        Ok(Box::pin(async move {
            let mut out = Vec::with_capacity(slots.len());
            for s in slots {
                out.push(match s {
                    Slot::Refused(reason) => SendOutcome::Rejected { reason },
                    Slot::Sent(c) => match c.await {
                        Ok(Confirmation::Ack(None)) | Ok(Confirmation::NotRequested) => {
                            SendOutcome::Sent
                        }
                        Ok(Confirmation::Ack(Some(r))) | Ok(Confirmation::Nack(Some(r))) => {
                            SendOutcome::Rejected {
                                reason: format!(
                                    "returned unroutable ({}): no queue is bound to exchange `{exchange}` with routing key `{key}`",
                                    r.reply_text.as_str()
                                ),
                            }
                        }
                        Ok(Confirmation::Nack(None)) => SendOutcome::Rejected {
                            reason: "the broker refused the copy (nack): a full queue with overflow=reject-publish, or an internal error".into(),
                        },
                        Err(e) => return Err(broker.error_needing(&what, PUBLISH, e)),
                    },
                });
            }
            Ok(out)
        }))
    }

    pub async fn close(&self) {
        close(&self.conn).await;
    }

    /// The exchange, as an error names it where the broker's words do not.
    fn what(&self) -> String {
        if self.exchange.is_empty() {
            "the default exchange".into()
        } else {
            format!("exchange {}", self.exchange)
        }
    }

    /// A publish that failed: where the broker closed the channel (a refused permission), the
    /// confirms of the copies published before it carry the broker's reason, and the later
    /// publishes only meet a closed channel; the reason is the error.
    async fn publish_failed(&self, slots: Vec<Option<Slot>>, e: lapin::Error) -> Error {
        for slot in slots.into_iter().flatten() {
            let Slot::Sent(c) = slot else { continue };
            if let Ok(Err(cause)) = tokio::time::timeout(CAUSE_WAIT, c).await
                && matches!(cause.kind(), lapin::ErrorKind::ProtocolError(_))
            {
                return self.broker.error_needing(&self.what(), PUBLISH, cause);
            }
        }
        self.broker.error_needing(&self.what(), PUBLISH, e)
    }
}

/// Error for a target that is an exchange being read.
pub fn not_a_queue(shown: &str) -> Error {
    Error::invalid_arg(
        "QUEUE",
        format!(
            "{shown} names an exchange: messages are read from a queue; an exchange is a target only"
        ),
    )
    .hinted("name the queue with ?queue=NAME")
}
