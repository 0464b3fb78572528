//! A move session that only reads: replay and every dry run go through the one move engine
//! (`ops::moves::engine`) with this session. It claims by reading the source the way the run
//! would (a redrive's or purge's dry run: as a redrive reads, so Kafka from the redrive
//! group's offsets) and settles nothing. So a dry run is the real run with a sink that accepts
//! nothing and a session that settles nothing: what it predicts, it predicts by construction.
//!
//! Where the source settles by position (Kafka), a dry run of a removing run also predicts
//! what the real run's commits would pass over ([`Passing`]), from what the engine settles.

use std::collections::VecDeque;

use async_trait::async_trait;
use futures::StreamExt;

use super::passing::Passing;
use super::{Claim, MessageStream, MoveSession, QueueBackend, ScanOptions, Ticket};
use crate::error::Result;

pub struct ReadSession<'a> {
    stream: MessageStream<'a>,
    /// Batches that may wait for their copies' outcomes at once.
    depth: usize,
    passing: Passing,
    /// The partition of each message of each claimed batch not settled yet, in claim order
    /// (only where `passing` is on).
    claimed: VecDeque<Vec<Option<i32>>>,
    exhausted: bool,
}

impl<'a> ReadSession<'a> {
    /// Read `source` as `opts` says. `predict_passing`: count what a removing run's commits
    /// would pass over (only meaningful where the source settles by position).
    pub async fn begin(
        source: &'a dyn QueueBackend,
        opts: ScanOptions,
        predict_passing: bool,
        depth: usize,
    ) -> Result<ReadSession<'a>> {
        Ok(ReadSession {
            stream: source.scan(opts).await?,
            depth: depth.max(1),
            passing: Passing::new(predict_passing && source.settles_by_position()),
            claimed: VecDeque::new(),
            exhausted: false,
        })
    }
}

#[async_trait]
impl MoveSession for ReadSession<'_> {
    async fn next_batch(&mut self, n: usize) -> Result<Option<Claim>> {
        let mut messages = Vec::with_capacity(n.min(1024));
        while !self.exhausted && messages.len() < n.max(1) {
            match self.stream.next().await {
                Some(Ok(m)) => messages.push(m),
                // What this batch read so far is not offered: a read that fails part-way (a
                // bad line in a file) stops the run before anything of its batch is sent.
                Some(Err(e)) => return Err(e),
                None => self.exhausted = true,
            }
        }
        if messages.is_empty() {
            return Ok(None);
        }
        if self.passing.is_on() {
            self.claimed
                .push_back(messages.iter().map(|m| m.partition).collect());
        }
        Ok(Some(Claim::new(messages)))
    }

    /// Nothing leaves the source. Where a removing run would commit by position, what it
    /// would pass over is counted: accepted messages move, failed ones block their
    /// partition, the rest stay.
    async fn settle(
        &mut self,
        _ticket: Ticket,
        accepted: &[usize],
        failed: &[usize],
    ) -> Result<()> {
        let Some(partitions) = self.claimed.pop_front() else {
            return Ok(());
        };
        #[derive(Clone, Copy)]
        enum Fate {
            Stays,
            Moves,
            Fails,
        }
        let mut fate = vec![Fate::Stays; partitions.len()];
        for &i in accepted {
            fate[i] = Fate::Moves;
        }
        for &i in failed {
            fate[i] = Fate::Fails;
        }
        for (p, f) in partitions.into_iter().zip(fate) {
            match f {
                Fate::Stays => self.passing.skipped(p),
                Fate::Moves => self.passing.moved(p),
                Fate::Fails => self.passing.failed(p),
            }
        }
        Ok(())
    }

    fn pipeline_depth(&self) -> usize {
        self.depth
    }

    fn committed_past(&self) -> u64 {
        self.passing.passed
    }
}
