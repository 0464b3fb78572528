//! A move (redrive, purge): one run per queue at a time, the messages the queue held when it
//! began, each acknowledged only once its copy is confirmed.
//!
//! * The lock: the run declares an exclusive queue `dlqctl.lock.QUEUE` on its connection. A
//!   second run's declare is refused (RESOURCE_LOCKED) while the first's connection lives, and
//!   the broker deletes the lock when that connection ends, killed or not. The refusal names
//!   the holder where the management API can tell.
//! * The consumer is exclusive: RabbitMQ refuses it while the queue has another consumer
//!   (an application's, a second tool's), and refuses any other while the run lasts.
//! * A claim is the next deliveries, up to the count the queue had at the start (arrivals
//!   after it, such as copies that fail again and come back, wait for the next run).
//! * `settle` acknowledges the accepted ones; the rest (skipped by a filter, refused by the
//!   target) stay unacknowledged, so the run never sees them twice, and go back to the queue
//!   when the run ends (or dies: the broker requeues what a closed connection held).

use std::collections::VecDeque;
use std::time::Duration;

use async_trait::async_trait;
use lapin::options::QueueDeclareOptions;
use lapin::types::FieldTable;

use super::backend::RabbitBackend;
use super::reader::{ReadMode, Reader};
use super::record::{Delivered, to_message};
use crate::backend::{Claim, MoveSession, Ticket, Unaccounted};
use crate::error::{Error, Result};

/// The lock queue's argument that names its holder (the management API shows arguments at
/// once; connection names only once its statistics come in).
pub const HOLDER: &str = "dlqctl-holder";

fn holder(verb: &str) -> FieldTable {
    let mut t = FieldTable::default();
    let who = format!(
        "{} since {}",
        super::conn::who(verb),
        chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ")
    );
    t.insert(
        HOLDER.into(),
        lapin::types::AMQPValue::LongString(who.into_bytes().into()),
    );
    t
}

/// The lock queue of a dead-letter queue.
pub fn lock_name(queue: &str) -> String {
    let mut n = format!("dlqctl.lock.{queue}");
    while n.len() > 255 {
        n.pop();
    }
    n
}

impl RabbitBackend {
    /// Why the lock of `queue` was refused, naming its holder where the API can tell.
    pub(super) async fn lock_refused(&self, queue: &str, lock: &str, e: lapin::Error) -> Error {
        let locked = matches!(e.kind(), lapin::ErrorKind::ProtocolError(p) if p.get_id() == 405);
        if !locked {
            return self
                .broker()
                .error(&format!("the lock queue {lock} (configure permission)"), e)
                .hinted(format!("a redrive or a purge declares an exclusive queue `{lock}` as its lock: grant the user configure permission on `^dlqctl\\.lock\\.` (docs/permissions.md)"));
        }
        let mut holder = String::new();
        if let Some(api) = &self.api
            && let Ok(Some(info)) = api.queue(&self.amqp().vhost, lock).await
        {
            if let Some(who) = info.0["arguments"][HOLDER].as_str() {
                holder = format!(" ({who})");
            } else if let Some(conn) = info.owner() {
                let name = api.connection_name(&conn).await.ok().flatten();
                holder = format!(
                    " ({}, connection {conn})",
                    name.as_deref()
                        .unwrap_or("a client without a connection name")
                );
            }
        }
        Error::Backend {
            target: self.shown(),
            reason: format!(
                "another dlqctl run is moving messages of {queue}{holder}: it holds the lock queue {lock}, and two runs would move the same messages. Wait for it to finish (a run that died lets go of the lock with its connection), then re-run"
            ),
        }
    }

    /// `: NAME (HOST:PORT), …` of the queue's consumers, where the API can tell.
    pub(super) async fn consumers_of(&self, queue: &str) -> String {
        let Some(api) = &self.api else {
            return String::new();
        };
        match api.queue(&self.amqp().vhost, queue).await {
            Ok(Some(info)) => {
                let mut named = Vec::new();
                for (conn, peer) in info.consumers() {
                    // The name the client gave its connection, where it gave one.
                    let given = api.connection_name(&conn).await.ok().flatten();
                    named.push(format!("{} ({peer})", given.unwrap_or(conn)));
                }
                if named.is_empty() {
                    String::new()
                } else {
                    format!(": {}", named.join(", "))
                }
            }
            _ => String::new(),
        }
    }
}

pub struct RabbitMoveSession<'a> {
    b: &'a RabbitBackend,
    reader: Reader,
    /// How many the queue held at the start: the run looks at no more.
    limit: u64,
    seen: u64,
    idle: Duration,
    /// The claimed batches not yet settled, oldest first: each delivery's tag and consumer
    /// generation, by index.
    claimed: VecDeque<Vec<(u64, u32)>>,
    /// What other consumers or channels held unacknowledged when the run began: it cannot
    /// see them, and says so.
    held: Option<Unaccounted>,
}

/// How many claimed batches wait for their copies' confirms while the next is read and
/// published. The run's exclusive consumer holds nothing back from other movers (there are
/// none), and batches are acknowledged in claim order, so one `basic.ack` with `multiple`
/// still settles each. The consumer's prefetch has room for them and the next
/// ([`RabbitMoveSession::begin`]).
const IN_FLIGHT: usize = 2;

impl<'a> RabbitMoveSession<'a> {
    /// `verb`: the run (redrive, purge), as its connection and lock name it.
    pub async fn begin(
        b: &'a RabbitBackend,
        queue: &str,
        batch: usize,
        verb: &str,
    ) -> Result<Self> {
        // Room for the batches in flight and the next: it is on its way while they are copied.
        let prefetch = u16::try_from(batch.saturating_mul(IN_FLIGHT + 1)).unwrap_or(u16::MAX);
        let mut reader = Reader::open(
            b.broker(),
            queue,
            ReadMode {
                prefetch,
                exclusive: true,
                stream: false,
            },
            verb,
        )
        .await?;
        let lock = lock_name(queue);
        if let Err(e) = reader
            .ch
            .queue_declare(
                lock.as_str().into(),
                QueueDeclareOptions {
                    exclusive: true,
                    auto_delete: true,
                    ..QueueDeclareOptions::default()
                },
                holder(verb),
            )
            .await
        {
            reader.close().await;
            return Err(b.lock_refused(queue, &lock, e).await);
        }
        if reader.consumers_at_start > 0 {
            let who = b.consumers_of(queue).await;
            reader.close().await;
            return Err(Error::Backend {
                target: b.broker().shown(),
                reason: format!(
                    "queue {queue} has {} consumer(s){who}: a redrive takes the queue's messages with an exclusive consumer, and two consumers would share them. Stop the other consumer, or wait for it, then re-run",
                    reader.consumers_at_start
                ),
            });
        }
        let held = b.held_by_others(queue, reader.at_start).await;
        if let Err(e) = reader.begin().await {
            reader.close().await;
            return Err(e);
        }
        Ok(RabbitMoveSession {
            held,
            limit: u64::from(reader.at_start),
            b,
            reader,
            seen: 0,
            idle: b.idle(),
            claimed: VecDeque::new(),
        })
    }
}

#[async_trait]
impl MoveSession for RabbitMoveSession<'_> {
    async fn next_batch(&mut self, n: usize) -> Result<Option<Claim>> {
        let want = (n as u64).min(self.limit.saturating_sub(self.seen)) as usize;
        if want == 0 {
            return Ok(None);
        }
        let mut batch = Vec::with_capacity(want);
        let mut claimed = Vec::with_capacity(want);
        while batch.len() < want {
            let room = (want - batch.len()) as u32;
            let Some(got) = self.reader.next(self.idle, room).await? else {
                break;
            };
            let d = got.delivery;
            claimed.push((d.delivery_tag, got.generation));
            let m = to_message(
                Delivered {
                    exchange: d.exchange.as_str(),
                    routing_key: d.routing_key.as_str(),
                    redelivered: d.redelivered,
                    properties: &d.properties,
                },
                d.data,
                self.b.id_source(),
            );
            batch.push(m);
        }
        if batch.is_empty() {
            // Fewer than at the start: others took some, or they expired.
            self.limit = self.seen;
            self.reader.at_start = u32::try_from(self.seen).unwrap_or(u32::MAX);
            return Ok(None);
        }
        self.seen += batch.len() as u64;
        self.claimed.push_back(claimed);
        Ok(Some(Claim::new(batch)))
    }

    async fn settle(
        &mut self,
        _ticket: Ticket,
        accepted: &[usize],
        _failed: &[usize],
    ) -> Result<()> {
        // Batches are settled in the order they were claimed (the engine's contract).
        let claimed = self.claimed.pop_front().unwrap_or_default();
        let tags: Vec<(u64, u32)> = accepted.iter().map(|&i| claimed[i]).collect();
        self.reader.ack_all(&tags).await
    }

    fn pipeline_depth(&self) -> usize {
        IN_FLIGHT
    }

    fn remaining(&self) -> Option<u64> {
        Some(self.limit)
    }

    async fn finish(&mut self) -> Result<()> {
        // What was skipped or refused goes back to the queue; the lock goes with the
        // connection.
        self.reader.give_back().await;
        Ok(())
    }

    fn unaccounted(&self) -> Vec<Unaccounted> {
        self.held.iter().cloned().collect()
    }
}
