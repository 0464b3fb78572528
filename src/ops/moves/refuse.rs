//! What a run refuses before it reads anything, where the source cannot do what was asked
//! the way it was asked.

use super::{Mode, MoveRequest};
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
            "on Kafka a record the loop guard holds would be committed past as soon as a later record of its partition moves (one committed offset covers every record before it), so it could never be parked or redriven later",
        )
        .hinted("with --max-redrives (or max_redrives in dlqctl.toml) pass --park TARGET (a topic, queue or table) to move such records aside"));
    }
    Ok(())
}

/// A redrive continues from where the last one stopped: a slice of the queue (Kafka's
/// `from`/`to`/`since`/`until`) is a replay.
pub(super) fn refuse_slices(req: &MoveRequest) -> Result<()> {
    if req.mode == Mode::Redrive
        && let Some(why) = req.source.address.redrive_slice_refusal()
    {
        return Err(Error::invalid_arg("QUEUE", why).hinted("use `dlqctl replay` for a slice"));
    }
    Ok(())
}
