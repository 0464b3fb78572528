//! In-memory queues for unit tests: the move engine's contract checked without services
//! (`ops::moves::conformance`). A queue is a list of messages; a move session claims them
//! in order and removes exactly the ones `settle` is told were accepted; a send appends a
//! copy that keeps the stable id and gets a native id of its own.

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
use crate::message::Message;
use crate::settings::Interrupt;

/// One queue's messages and what happens to the copies offered to it.
#[derive(Default)]
pub struct Queue {
    pub messages: Vec<Message>,
    /// Copies accepted so far (the next native id).
    accepted: u64,
    /// Refuse copies whose body contains this text (a target that rejects some messages).
    pub reject_bodies_with: Option<String>,
    /// After this many accepted copies, set the interrupt (Ctrl-C in the middle of a run).
    pub interrupt_after: Option<(u64, Interrupt)>,
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
            read: true,
            tail: false,
            delete: true,
            write: true,
            read_side_effect: None,
            per_message_destination: false,
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
            q: self.q.clone(),
            next: 0,
            end,
            claimed: Vec::new(),
        }))
    }

    async fn identity(&self) -> Result<Option<String>> {
        Ok(Some(format!("memory:{}", self.addr)))
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
            if q.reject_bodies_with
                .as_ref()
                .is_some_and(|t| String::from_utf8_lossy(&m.body).contains(t.as_str()))
            {
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
}

/// Claims the messages that were in the queue when it began, in order; `settle` removes the
/// accepted ones of the claimed batch (by native id: the queue may have grown meanwhile).
struct MemorySession {
    q: Arc<Mutex<Queue>>,
    next: usize,
    end: usize,
    claimed: Vec<String>,
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
        self.claimed = batch.iter().map(|m| m.native_id.clone()).collect();
        Ok(Some(Claim::new(batch)))
    }

    async fn settle(
        &mut self,
        _ticket: Ticket,
        accepted: &[usize],
        _failed: &[usize],
    ) -> Result<()> {
        let gone: Vec<&String> = accepted.iter().map(|&i| &self.claimed[i]).collect();
        let mut q = self.q.lock().unwrap();
        q.messages.retain(|m| !gone.contains(&&m.native_id));
        let kept = self.claimed.len() - accepted.len();
        self.next += kept;
        self.end -= accepted.len();
        self.claimed.clear();
        Ok(())
    }
}
