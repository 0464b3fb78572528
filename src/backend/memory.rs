//! In-memory queues for unit tests: the move engine's contract checked without services
//! (`ops::moves::conformance`). A queue is a list of messages; a move session claims them
//! in order and removes exactly the ones `settle` is told were accepted; a send appends a
//! copy that keeps the stable id and gets a native id of its own. A queue may instead settle
//! by position, as a Kafka topic's redrive group does (`by_position`): settling a message
//! then also removes the skipped messages before it in its partition. Faults: a target that
//! refuses some bodies, a source that keeps some it was told to remove, a settle that fails
//! (`fail_settle_at`), an interrupt after so many copies.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::{
    Backlog, Capabilities, Claim, Fact, Inspection, MessageStream, MoveOptions, MoveSession,
    OpenOptions, QueueBackend, QueueSink, ScanOptions, SendOutcome, TailOptions, Ticket,
    VerifyFacts,
};
use crate::address::Address;
use crate::config::QueueConfig;
use crate::error::{Error, Result};
use crate::interrupt::Interrupt;
use crate::message::Message;

/// One queue's messages and what happens to the copies offered to it.
#[derive(Default)]
pub struct Queue {
    pub messages: Vec<Message>,
    /// Copies accepted so far (the next native id).
    accepted: u64,
    /// Refuse copies whose body contains this text (a target that rejects some messages).
    pub reject_bodies_with: Option<String>,
    /// Refuse copies whose body contains this text, and say so before sending
    /// ([`QueueSink::check`]: SQS's binary bodies, a table without a column a copy needs).
    pub refuse_before_send_with: Option<String>,
    /// After this many accepted copies, set the interrupt (Ctrl-C in the middle of a run).
    pub interrupt_after: Option<(u64, Interrupt)>,
    /// Settle by position per `Message::partition`, like a Kafka redrive group's offsets.
    pub by_position: bool,
    /// A source whose removal of a message does not take effect when its body contains this
    /// (an SQS delete answered Failed, or acknowledged and undone).
    pub keep_on_delete: Option<String>,
    /// Fail the n-th settle (1 for the first) of a move session from this queue, removing
    /// nothing, as a connection closed under a run does (RabbitMQ: the `basic.ack` of a batch
    /// whose copies the target had confirmed).
    pub fail_settle_at: Option<u64>,
    /// Settles so far.
    settles: u64,
}

/// The in-memory queues of one test, by address.
#[derive(Default)]
pub struct Queues {
    queues: Mutex<HashMap<String, Arc<Mutex<Queue>>>>,
}

impl Queues {
    /// The queue at `addr`, created empty on first use.
    pub fn queue(&self, addr: &Address) -> Arc<Mutex<Queue>> {
        self.queues
            .lock()
            .unwrap()
            .entry(addr.to_string())
            .or_default()
            .clone()
    }

    /// The messages at `addr` now.
    pub fn messages(&self, addr: &Address) -> Vec<Message> {
        self.queue(addr).lock().unwrap().messages.clone()
    }

    pub fn open(&self, addr: &Address, _opts: &OpenOptions) -> Result<Box<dyn QueueBackend>> {
        Ok(Box::new(MemoryBackend {
            addr: addr.clone(),
            q: self.queue(addr),
        }))
    }
}

pub struct MemoryBackend {
    addr: Address,
    q: Arc<Mutex<Queue>>,
}

#[async_trait]
impl QueueBackend for MemoryBackend {
    fn address(&self) -> &Address {
        &self.addr
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            tail: false,
            delete: true,
            read_side_effect: None,
            per_message_destination: false,
            ..Capabilities::default()
        }
    }

    async fn inspect(&self, _classifier: &crate::classify::Classifier) -> Result<Inspection> {
        let n = self.q.lock().unwrap().messages.len();
        let mut ins = Inspection {
            queue: self.addr.to_string(),
            backend: "memory",
            ..Inspection::default()
        };
        ins.facts.push(Fact::new("messages", n, n.to_string()));
        Ok(ins)
    }

    async fn scan(&self, opts: ScanOptions) -> Result<MessageStream<'_>> {
        let mut all = self.q.lock().unwrap().messages.clone();
        if let Some(l) = opts.limit {
            all.truncate(l as usize);
        }
        Ok(Box::pin(futures::stream::iter(all.into_iter().map(Ok))))
    }

    async fn tail(&self, _opts: TailOptions) -> Result<MessageStream<'_>> {
        Err(Error::Unsupported {
            backend: "memory",
            operation: "tail",
            reason: "in-memory queues are for unit tests".into(),
        })
    }

    async fn begin_move(&self, _opts: MoveOptions) -> Result<Box<dyn MoveSession + '_>> {
        let end = self.q.lock().unwrap().messages.len();
        Ok(Box::new(MemorySession {
            addr: self.addr.clone(),
            q: self.q.clone(),
            next: 0,
            end,
            claimed: Vec::new(),
            skipped: HashMap::new(),
            blocked: std::collections::HashSet::new(),
            committed_past: 0,
            unremoved: Vec::new(),
        }))
    }

    async fn identity(&self) -> Result<Option<String>> {
        Ok(Some(format!("memory:{}", self.addr)))
    }

    fn settles_by_position(&self) -> bool {
        self.q.lock().unwrap().by_position
    }

    async fn backlog(&self, _for_redrive: bool) -> Result<Option<Backlog>> {
        Ok(Some(Backlog {
            messages: self.q.lock().unwrap().messages.len() as u64,
            exact: true,
        }))
    }

    async fn destination(&self, _m: &Message) -> Result<Option<Address>> {
        Ok(None)
    }

    async fn verify_facts(&self, _cfg: &QueueConfig) -> Result<VerifyFacts> {
        Ok(VerifyFacts::default())
    }

    fn sink(&self) -> Option<&dyn QueueSink> {
        Some(self)
    }
}

#[async_trait]
impl QueueSink for MemoryBackend {
    async fn send(&self, batch: &[Message]) -> Result<Vec<SendOutcome>> {
        let mut q = self.q.lock().unwrap();
        let mut out = Vec::with_capacity(batch.len());
        for m in batch {
            if body_has(m, &q.reject_bodies_with) || body_has(m, &q.refuse_before_send_with) {
                out.push(SendOutcome::Rejected {
                    reason: "the target refused this body".into(),
                });
                continue;
            }
            q.accepted += 1;
            let mut copy = m.clone();
            copy.native_id = format!("mem-{}", q.accepted);
            q.messages.push(copy);
            out.push(SendOutcome::Sent);
            if let Some((after, i)) = &q.interrupt_after
                && q.accepted >= *after
            {
                i.trigger();
            }
        }
        Ok(out)
    }

    fn check(&self, copy: &Message) -> std::result::Result<(), String> {
        if body_has(copy, &self.q.lock().unwrap().refuse_before_send_with) {
            return Err("the target refused this body".into());
        }
        Ok(())
    }
}

/// Whether `m`'s body contains `text` (None: nothing to look for).
fn body_has(m: &Message, text: &Option<String>) -> bool {
    text.as_ref()
        .is_some_and(|t| String::from_utf8_lossy(&m.body).contains(t.as_str()))
}

/// Claims the messages that were in the queue when it began, in order; `settle` removes the
/// accepted ones of the claimed batch (by native id: the queue may have grown meanwhile).
struct MemorySession {
    addr: Address,
    q: Arc<Mutex<Queue>>,
    next: usize,
    end: usize,
    /// Native id and partition of each message of the claimed batch.
    claimed: Vec<(String, Option<i32>)>,
    /// By position: per partition, the skipped messages since the last one settled there.
    skipped: HashMap<Option<i32>, Vec<String>>,
    /// By position: partitions where a message was refused (nothing after it is settled).
    blocked: std::collections::HashSet<Option<i32>>,
    committed_past: u64,
    /// Of the batch settled last: accepted, but not removed (`keep_on_delete`).
    unremoved: Vec<(usize, String)>,
}

impl MemorySession {
    /// The native ids that settling the claimed batch removes: the accepted ones, and where
    /// the queue settles by position the skipped ones before them in their partitions.
    fn gone(&mut self, by_position: bool, accepted: &[usize], failed: &[usize]) -> Vec<String> {
        if !by_position {
            return accepted
                .iter()
                .map(|&i| self.claimed[i].0.clone())
                .collect();
        }
        let mut gone = Vec::new();
        for (i, (id, p)) in self.claimed.iter().enumerate() {
            if self.blocked.contains(p) {
                continue;
            }
            if failed.contains(&i) {
                self.blocked.insert(*p);
            } else if accepted.contains(&i) {
                let passed = self.skipped.remove(p).unwrap_or_default();
                self.committed_past += passed.len() as u64;
                gone.extend(passed);
                gone.push(id.clone());
            } else {
                self.skipped.entry(*p).or_default().push(id.clone());
            }
        }
        gone
    }
}

#[async_trait]
impl MoveSession for MemorySession {
    async fn next_batch(&mut self, n: usize) -> Result<Option<Claim>> {
        let q = self.q.lock().unwrap();
        // Settled messages left the list: `next` counts the ones kept before it.
        let upto = (self.next + n).min(self.end).min(q.messages.len());
        if self.next >= upto {
            return Ok(None);
        }
        let batch = q.messages[self.next..upto].to_vec();
        self.claimed = batch
            .iter()
            .map(|m| (m.native_id.clone(), m.partition))
            .collect();
        Ok(Some(Claim::new(batch)))
    }

    async fn settle(
        &mut self,
        _ticket: Ticket,
        accepted: &[usize],
        failed: &[usize],
    ) -> Result<()> {
        let q = self.q.clone();
        let mut q = q.lock().unwrap();
        q.settles += 1;
        if q.fail_settle_at == Some(q.settles) {
            // Nothing removed: the batch stays in the queue, before the next claim.
            self.next += self.claimed.len();
            self.claimed.clear();
            return Err(Error::Unreachable {
                target: self.addr.to_string(),
                reason: crate::error::with_rerun("the connection was closed (an injected fault)"),
            });
        }
        let mut gone = self.gone(q.by_position, accepted, failed);
        // keep_on_delete: an accepted message whose removal does not take effect stays.
        for &i in accepted {
            let id = &self.claimed[i].0;
            let sticks = q.keep_on_delete.as_ref().is_some_and(|t| {
                q.messages.iter().any(|m| {
                    m.native_id == *id && String::from_utf8_lossy(&m.body).contains(t.as_str())
                })
            });
            if sticks {
                gone.retain(|g| g != id);
                self.unremoved
                    .push((i, "the source did not remove it".to_string()));
            }
        }
        // Messages before the batch (passed over now) and in it leave the list.
        let before = q.messages[..self.next]
            .iter()
            .filter(|m| gone.contains(&m.native_id))
            .count();
        let kept = self.claimed.len() - (gone.len() - before);
        q.messages.retain(|m| !gone.contains(&m.native_id));
        self.next = self.next - before + kept;
        self.end -= gone.len();
        self.claimed.clear();
        Ok(())
    }

    fn committed_past(&self) -> u64 {
        self.committed_past
    }

    fn unremoved(&mut self) -> Vec<(usize, String)> {
        std::mem::take(&mut self.unremoved)
    }
}
