//! classify's report: what the command fills (`ops/classify.rs`) and its tables show
//! (`ops/tables/classify.rs`), and `--output json` writes. In one place that both use, so that
//! the command and its table do not import each other.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::classify::{Explanation, Kind};
use crate::ops::groups::GroupRow;

#[derive(Serialize)]
pub struct ClassifyReport {
    pub queue: String,
    pub total: u64,
    /// Whether every message of the queue was read: false when Ctrl-C stopped the run or
    /// `--max` did, or the queue holds messages the read could not see (`unseen`): the counts
    /// are then of part of the queue; `check --baseline` refuses it.
    pub complete: bool,
    /// Messages the read could not see, how many and why (RabbitMQ: held unacknowledged by
    /// another consumer or channel).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unseen: Vec<crate::backend::Unaccounted>,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
    pub kinds: BTreeMap<Kind, u64>,
    pub classes: Vec<ClassRow>,
    /// With --by: the keys, and the groups largest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<GroupRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe: Option<DedupeSummary>,
    /// With --explain: one entry per message, in the order read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanations: Option<Vec<MessageExplanation>>,
}

/// `--explain`: a message's id and how it got its class.
#[derive(Serialize)]
pub struct MessageExplanation {
    pub id: String,
    #[serde(flatten)]
    pub explanation: Explanation,
}

#[derive(Serialize)]
pub struct ClassRow {
    pub kind: Kind,
    pub rule: String,
    pub count: u64,
    /// Already recorded in the dedupe table (with --dedupe).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processed: Option<u64>,
    /// Redriven or replayed by dlqctl before (a `dlqctl-redrive-count` of 1 or more), and the
    /// highest count: a class that keeps coming back (the loop guard, `--max-redrives`).
    #[serde(skip_serializing_if = "is_zero")]
    pub redriven: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub max_redrive_count: u64,
    pub first_seen: Option<DateTime<Utc>>,
    pub last_seen: Option<DateTime<Utc>>,
    pub sample_id: String,
    pub sample_error: Option<String>,
}

#[derive(Serialize)]
pub struct DedupeSummary {
    pub table: String,
    pub processed: u64,
    pub not_processed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
