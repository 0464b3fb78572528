//! The plan shown before a run (and before its question): what happens to each message, from
//! where, to where, how many.

use super::{Mode, MoveRequest};
use crate::address::Address;

/// The plan's rows: what happens, from where, to where, how many.
pub(super) fn plan(
    req: &MoveRequest,
    fixed: Option<&Address>,
    local: bool,
    backlog: Option<crate::backend::Backlog>,
) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut row = |k: &str, v: String| rows.push((k.to_string(), v));
    row("operation", what_happens(req, fixed, local));
    row(
        match req.mode {
            Mode::Redrive | Mode::Purge => "dead-letter queue",
            Mode::Replay => "from",
        },
        req.source.label(),
    );
    row(
        if req.mode == Mode::Purge {
            "archive"
        } else {
            "to"
        },
        match fixed {
            Some(f) if retried_in_place(req, f) => "where each job is (retried in place)".into(),
            Some(f) => f.to_string(),
            None if req.mode == Mode::Purge => {
                "none (--no-archive): removed messages are gone".into()
            }
            None => "each message's source queue (discovered per message)".into(),
        },
    );
    row("filter", req.filter.describe());
    let verb = match (req.mode, req.dry_run) {
        (_, true) => "would send",
        (Mode::Redrive, false) => "will move",
        (Mode::Replay, false) => "will copy",
        (Mode::Purge, false) => "will remove",
    };
    row(verb, count_text(backlog, req.max, !req.filter.is_empty()));
    row(
        "rate",
        req.rate.map_or("unlimited".into(), |r| {
            if r >= 1.0 {
                format!("{r:.0}/s")
            } else {
                format!("{:.0}/h", r * 3600.0)
            }
        }),
    );
    if req.mode == Mode::Purge && fixed.is_none() {
        // Nothing is copied: nothing to keep.
    } else if fixed.is_some_and(|f| retried_in_place(req, f)) {
        row(
            "keeps",
            "each job as it is: same id, same arguments (nothing is copied)".into(),
        );
    } else if req.headers.is_empty() {
        row(
            "keeps",
            "stable id, body, headers/attributes, group/key".into(),
        );
    } else {
        row("keeps", "stable id, body, group/key".into());
        row("headers/attributes", req.headers.describe());
    }
    if req.mode == Mode::Redrive
        && matches!(req.source.address, Address::Kafka(_))
        && !req.filter.is_empty()
    {
        row(
            "note",
            "records the filter skips are committed past too (a committed offset covers everything before it): they will not be redriven later. To copy a subset and leave the rest pending, use `dlqctl replay` instead".into(),
        );
    }
    rows
}

/// What a run does to each message, in the backend's own terms.
fn what_happens(req: &MoveRequest, fixed: Option<&Address>, local: bool) -> String {
    use crate::address::{PgAddress, PgTarget};
    if req.mode == Mode::Replay {
        return "copy each message to the target (nothing is removed from what is read)".into();
    }
    if req.mode == Mode::Purge {
        return purge_what_happens(req, fixed.is_some(), local);
    }
    match &req.source.address {
        Address::Postgres(PgAddress {
            target: PgTarget::System(name),
            ..
        }) => {
            if fixed.is_some_and(|f| retried_in_place(req, f)) {
                format!("retry each dead job in place, as {name}'s own tools do (nothing is copied)")
            } else {
                format!(
                    "copy each dead job to the target, then remove it from {name} (in the batch's transaction)"
                )
            }
        }
        Address::Postgres(_) if local => {
            "move each batch in one transaction: insert the copies, delete the dead letters".into()
        }
        Address::Postgres(_) => {
            "copy each message to the target, then delete it from the dead-letter table".into()
        }
        Address::Sqs(_) => {
            "copy each message to the target, then delete it from the dead-letter queue".into()
        }
        Address::Kafka(_) if req.exactly_once => "copy each record to the target topic and commit the redrive group's offsets past it, in one transaction (nothing is deleted from the topic)".into(),
        Address::Kafka(_) => "copy each record to the target, then commit the redrive group's offsets past it (nothing is deleted from the topic)".into(),
        Address::File(_) => "copy each message to the target".into(),
    }
}

/// What a purge does to each message, in the backend's own terms (docs/purge.md).
fn purge_what_happens(req: &MoveRequest, archived: bool, local: bool) -> String {
    use crate::address::{PgAddress, PgTarget};
    let first = if archived {
        "copy each message to the archive, then "
    } else {
        ""
    };
    let remove = match &req.source.address {
        Address::Postgres(PgAddress {
            target: PgTarget::System(name),
            ..
        }) => format!("delete the dead job as {name}'s own tools do"),
        Address::Postgres(_) if local => {
            return "archive and delete each batch in one transaction (INSERT … SELECT, DELETE)"
                .into();
        }
        Address::Postgres(_) => "delete the row".into(),
        Address::Sqs(_) => "delete it (DeleteMessage)".into(),
        Address::Kafka(_) => "commit the redrive group's offsets past it: Kafka cannot delete single records, so they stay in the topic until its retention removes them, and no redrive reads them again".into(),
        Address::File(_) => "remove it".into(),
    };
    format!("{first}{remove}")
}

/// `40 of 1,200`, where the source counts cheaply; else `counted while moving`.
fn count_text(
    backlog: Option<crate::backend::Backlog>,
    max: Option<u64>,
    filtered: bool,
) -> String {
    let Some(b) = backlog else {
        return match max {
            Some(m) => format!("at most {m} (counted while moving)"),
            None => "all (counted while moving)".into(),
        };
    };
    let about = if b.exact { "" } else { "about " };
    let n = b.messages;
    if filtered {
        let cap = max.map(|m| format!(", at most {m}")).unwrap_or_default();
        format!("those of {about}{n} that pass the filter{cap} (counted while moving)")
    } else {
        let k = max.map_or(n, |m| m.min(n));
        format!("{k} of {about}{n}")
    }
}

/// Whether the run retries each message where it is (a job system's own retry) rather than
/// copying it to `to`: the one case where the target is the source.
pub(super) fn retried_in_place(req: &MoveRequest, to: &Address) -> bool {
    *to == req.source.address
        && matches!(
            &req.source.address,
            Address::Postgres(crate::address::PgAddress {
                target: crate::address::PgTarget::System(_),
                ..
            })
        )
}
