//! The moving side of a queue: a [`MoveSession`] claims batches, each with a [`Ticket`] that
//! only a session can issue, and settles each with exactly the accepted messages; what a run
//! asks of it ([`MoveOptions`]) and what it reports back.

use async_trait::async_trait;
use serde::Serialize;

use crate::address::Address;
use crate::error::Result;
use crate::message::Message;

#[derive(Clone, Debug, Default)]
pub struct MoveOptions {
    /// The batch rows must carry bodies and attributes (a filter or a foreign target needs
    /// them); when false a local mover may fetch ids only.
    pub need_content: bool,
    /// Of the content, only each message's redrive count is needed (the loop guard on an
    /// unfiltered local move): a local mover may fetch ids and that count alone.
    pub count_only: bool,
    /// Column mapping of a PostgreSQL target table, for local moves.
    pub target_columns: std::collections::BTreeMap<String, String>,
    /// The headers a copy carries; a local mover that copies messages itself applies them.
    pub headers: crate::headers::HeaderRules,
    /// Messages per batch (`--batch-size`), for sessions that read ahead.
    pub batch_size: usize,
    /// The run retries the messages where they are (a job system's own retry), not copies
    /// them elsewhere.
    pub in_place: bool,
    /// `--max`: no batch may move more than it was asked for (a job system's key-range retry,
    /// which would also retry a job that died inside the range meanwhile, is not used then).
    pub max: Option<u64>,
    /// A local mover's copies count one more redrive (`dlqctl-redrive-count`): a redrive's do,
    /// a purge's archive copies do not.
    pub count_redrive: bool,
    /// The run is a purge: what it claims is removed (with an archive, once copied there), never
    /// retried. A BullMQ id in failed without a job hash is claimed then, to be removed; a
    /// redrive leaves it and says so ([`MoveSession::unaccounted`]).
    pub purge: bool,
}

/// Messages a run leaves in the source that it neither examined nor removed, or cannot say
/// what became of, and why (SQS: behind a FIFO group's head that the run left, past the
/// in-flight limit, held by an interrupted earlier run). A run that reports any ends with
/// exit 1: it cannot say that it moved everything its filters selected.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unaccounted {
    /// How many (an estimate where `approximate`: from the queue's approximate counts).
    pub count: u64,
    pub approximate: bool,
    /// Why, and what to do, in one line.
    pub reason: String,
    /// When they become visible to a re-run by themselves, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<chrono::DateTime<chrono::Utc>>,
}

/// The result of offering one message to a target.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum SendOutcome {
    Sent,
    /// Not accepted; the message stays in the dead-letter queue.
    Rejected {
        reason: String,
    },
    /// Already present in the target (a unique key held by an active twin).
    Conflict {
        reason: String,
    },
}

/// What one claim-and-move step did.
#[derive(Debug, Default)]
pub struct LocalBatch {
    /// Messages looked at.
    pub examined: u64,
    /// Moved.
    pub moved: u64,
    /// Not moved, by stable id, with why.
    pub others: Vec<(String, SendOutcome)>,
}

/// What [`LocalMoves::move_next_locally`] did.
#[derive(Debug)]
pub enum LocalNext {
    /// A batch was claimed and moved.
    Moved(LocalBatch),
    /// Nothing is left (of what the session began with).
    Exhausted,
    /// Not in one step for this session or target: claim, then `move_locally`.
    ClaimFirst,
}

/// A batch a [`MoveSession`] claimed: its messages, and the ticket that settles it.
pub struct Claim {
    pub messages: Vec<Message>,
    pub ticket: Ticket,
}

/// The right to settle one claimed batch. Only a session (in `crate::backend`) can issue one,
/// with the batch it claims; `settle` and `move_locally` take it by value. So a batch that was
/// not claimed cannot be settled, and one that was cannot be settled twice: what the sessions'
/// open transactions and offsets rely on is checked by the compiler, not at run time.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a claimed batch is settled with its ticket"]
pub struct Ticket(());

impl Claim {
    /// A batch a session claimed (only sessions make claims).
    pub(in crate::backend) fn new(messages: Vec<Message>) -> Claim {
        Claim {
            messages,
            ticket: Ticket(()),
        }
    }
}

/// A redrive in progress on the dead-letter side. Claimed messages are invisible to other
/// movers until [`MoveSession::settle`]; nothing is deleted except what `settle` is told was
/// accepted by the target.
#[async_trait]
pub trait MoveSession: Send {
    /// Claim the next batch of up to `n` messages. `None` when the queue, as it stood when the
    /// session began, is exhausted.
    async fn next_batch(&mut self, n: usize) -> Result<Option<Claim>>;

    /// Settle the batch `ticket` came with (batches are settled in the order they were
    /// claimed): remove the messages at `accepted` (indices into that batch), whose copies
    /// were accepted. `failed` were offered
    /// and refused; the rest were skipped by the filters. Queues that delete one message keep
    /// both failed and skipped ones; Kafka, which can only commit an offset, consumes the
    /// skipped ones and stops committing at the first failure.
    async fn settle(&mut self, ticket: Ticket, accepted: &[usize], failed: &[usize]) -> Result<()>;

    /// How many claimed batches may wait for their copies' outcomes at once (settled in claim
    /// order). 1: each batch is settled before the next is claimed. More only where claiming
    /// ahead holds nothing back from other movers and settling in order is all the source needs
    /// (Kafka: an offset commit per batch).
    fn pipeline_depth(&self) -> usize {
        1
    }

    /// Give back a claimed batch once its copies are handed over and nothing needs its
    /// messages any more. A session that builds messages on a thread of its own drops them
    /// there (glibc's allocator serves a free from another thread by locking the arena of the
    /// thread that allocated, which made that thread wait); the default drops them here.
    fn recycle(&mut self, _batch: Vec<Message>) {}

    /// How many messages the session will look at, where the source can tell cheaply (the
    /// progress bar's length).
    fn remaining(&self) -> Option<u64> {
        None
    }

    /// Where the backend said it moves into a target itself
    /// ([`QueueBackend::can_move_locally`]): the session's local moves. None where it has none.
    fn local(&mut self) -> Option<&mut dyn LocalMoves> {
        None
    }

    /// The run is over: release whatever is still held (SQS: messages kept hidden so that a
    /// run does not see them twice).
    async fn finish(&mut self) -> Result<()> {
        Ok(())
    }

    /// Whether the session may still move anything: Err once it lost what makes it the only
    /// mover (Kafka: the redrive lease). The engine asks before it sends a batch's copies;
    /// the session itself checks before every claim and every settle.
    fn holds(&self) -> Result<()> {
        Ok(())
    }

    /// How many messages the filters skipped that settling passed over anyway (Kafka: records
    /// before the last one moved in their partition, which the committed offset covers).
    fn committed_past(&self) -> u64 {
        0
    }

    /// Of the batch settled last: the accepted messages (indices into that batch) whose
    /// removal did not take effect, each with why. Their copies were accepted, the originals
    /// are still in the source: they count as failed, not moved.
    fn unremoved(&mut self) -> Vec<(usize, String)> {
        Vec::new()
    }

    /// After [`MoveSession::finish`]: what the run leaves that it can account for neither as
    /// moved nor as skipped or failed (see [`Unaccounted`]).
    fn unaccounted(&self) -> Vec<Unaccounted> {
        Vec::new()
    }
}

/// A move session's moves into a target the backend moves into itself (one transaction, or a
/// job system's retry in place), asked for with [`MoveSession::local`].
#[async_trait]
pub trait LocalMoves: Send {
    /// With no filter: claim and move the next batch of up to `n` into `target` (one the
    /// backend said it [moves into itself](QueueBackend::can_move_locally)) in one step.
    /// [`LocalNext::ClaimFirst`] where this session cannot (then the engine claims each batch
    /// with `next_batch` and moves it with `move_locally`).
    async fn move_next_locally(&mut self, _target: &Address, _n: usize) -> Result<LocalNext> {
        Ok(LocalNext::ClaimFirst)
    }

    /// Move the messages at `selected` (of the batch `ticket` claimed) into `target` and settle
    /// the batch in one step. Returns one outcome per selected index.
    async fn move_locally(
        &mut self,
        ticket: Ticket,
        target: &Address,
        selected: &[usize],
    ) -> Result<Vec<SendOutcome>>;

    /// [`LocalMoves::move_locally`] retrying in place the edited copies in `batch` (at the
    /// `selected` indices) instead of the jobs as they are (only called when
    /// [`QueueBackend::retries_edits_in_place`](crate::backend::QueueBackend::retries_edits_in_place)
    /// said yes).
    async fn move_locally_edited(
        &mut self,
        _ticket: Ticket,
        _target: &Address,
        _selected: &[usize],
        _batch: &[Message],
    ) -> Result<Vec<SendOutcome>> {
        Err(crate::error::Error::Unsupported {
            backend: "this backend",
            operation: "retrying an edited job in place",
            reason: "its retry takes the job as it is".into(),
        })
    }
}
