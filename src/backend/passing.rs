//! What a run passes over where settling a message settles every one before it in its
//! partition (Kafka's committed offsets, [`QueueBackend::settles_by_position`]): the skipped
//! messages before the last one moved in their partition. The Kafka session counts what it
//! commits; a dry run ([`ReadSession`]) and the count before the question predict it here,
//! message by message, in the order the source reads them (offset order within a partition).
//!
//! [`QueueBackend::settles_by_position`]: crate::backend::QueueBackend::settles_by_position
//! [`ReadSession`]: crate::backend::read_session::ReadSession

use std::collections::{HashMap, HashSet};

#[derive(Debug, Default)]
pub struct Passing {
    /// Off where each message is removed on its own: nothing is ever passed over.
    on: bool,
    /// Per partition, the messages skipped since the last one moved there.
    skipped: HashMap<Option<i32>, u64>,
    /// Partitions where a message could not be moved: nothing at or after it is settled.
    blocked: HashSet<Option<i32>>,
    /// Skipped messages that a later move in their partition passed over.
    pub passed: u64,
}

impl Passing {
    pub fn new(on: bool) -> Passing {
        Passing {
            on,
            ..Passing::default()
        }
    }

    /// Whether anything is ever passed over (the source settles by position).
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// A message of `partition` stays (the filters skipped it, or the loop guard held it).
    pub fn skipped(&mut self, partition: Option<i32>) {
        if self.on && !self.blocked.contains(&partition) {
            *self.skipped.entry(partition).or_default() += 1;
        }
    }

    /// A message of `partition` moves (or would): what was skipped before it there is passed
    /// over.
    pub fn moved(&mut self, partition: Option<i32>) {
        if self.on && !self.blocked.contains(&partition) {
            self.passed += self.skipped.remove(&partition).unwrap_or(0);
        }
    }

    /// A message of `partition` cannot be moved: the partition settles nothing from here on.
    pub fn failed(&mut self, partition: Option<i32>) {
        if self.on {
            self.blocked.insert(partition);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(p: i32) -> Option<i32> {
        Some(p)
    }

    #[test]
    fn only_what_lies_before_a_move_in_its_partition_is_passed() {
        let mut t = Passing::new(true);
        t.skipped(at(0));
        t.skipped(at(1));
        t.skipped(at(0));
        t.moved(at(0));
        assert_eq!(t.passed, 2, "partition 0's two");
        t.skipped(at(0));
        t.skipped(at(1));
        t.failed(at(1));
        t.moved(at(1));
        assert_eq!(t.passed, 2, "blocked partition 1 settles nothing more");
        let mut off = Passing::new(false);
        off.skipped(at(0));
        off.moved(at(0));
        assert_eq!(off.passed, 0);
    }
}
