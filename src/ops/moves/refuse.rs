//! What a run refuses before it reads anything, where the source cannot do what was asked
//! the way it was asked.

use super::{Mode, MoveRequest};
use crate::address::Address;
use crate::backend::QueueBackend;
use crate::error::{Error, Result};

/// The loop guard leaves a message where it is; where settling is by position (Kafka), a held
/// record is committed past as soon as a later record of its partition moves, and could never
/// be parked or redriven later. So there the guard needs somewhere to park.
pub(super) fn refuse_guard_without_park(
    req: &MoveRequest,
    source: &dyn QueueBackend,
) -> Result<()> {
    if req.mode.removes()
        && req.max_redrives.is_some()
        && req.park.is_none()
        && source.settles_by_position()
    {
        return Err(Error::invalid_arg(
            "--max-redrives",
            "on Kafka a record the loop guard holds would be committed past as soon as a later record of its partition moves (one committed offset covers every record before it), so it could never be parked or redriven later: with --max-redrives (or max_redrives in dlqctl.toml) pass --park TARGET (a topic, queue or table) to move such records aside",
        ));
    }
    Ok(())
}

/// A Kafka redrive continues from its group's offsets: a slice of the topic is a replay.
pub(super) fn refuse_kafka_slices(req: &MoveRequest) -> Result<()> {
    if req.mode == Mode::Redrive
        && let Address::Kafka(k) = &req.source.address
        && (k.range.from.is_some()
            || k.range.to.is_some()
            || k.range.since.is_some()
            || k.range.until.is_some())
    {
        return Err(Error::invalid_arg(
            "QUEUE",
            "a Kafka redrive continues from the redrive group's committed offsets; from/to/since/until slice peek, export and replay: use `dlqctl replay` for a slice",
        ));
    }
    Ok(())
}
