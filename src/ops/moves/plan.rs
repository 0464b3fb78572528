//! The plan shown before a run (and before its question): what happens to each message, from
//! where, to where, how many.

use super::count::{Facts, count_text};
use super::{Mode, MoveRequest};
use crate::address::Address;

/// The plan's rows: what happens, from where, to where, how many.
pub(super) fn plan(
    req: &MoveRequest,
    fixed: Option<&Address>,
    local: bool,
    facts: &Facts,
) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut row = |k: &str, v: String| rows.push((k.to_string(), v));
    row("operation", what_happens(req, fixed, local));
    // A configured queue by its name, its address on a line of its own.
    row(
        match req.mode {
            Mode::Redrive | Mode::Purge => "dead-letter queue",
            Mode::Replay => "from",
        },
        match &req.source.name {
            Some(n) => format!("{n}\n{}", req.source.address),
            None => req.source.address.to_string(),
        },
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
            None if req.mode == Mode::Purge => match req.source.address {
                Address::Kafka(_) => "none (--no-archive): no copy is kept; the records stay in the topic until its retention removes them".into(),
                _ => "none (--no-archive): no copy is kept, removed messages are gone".into(),
            },
            None => "each message's source queue (discovered per message)".into(),
        },
    );
    row("filter", req.filter.describe());
    let verb = match (req.mode, req.dry_run, fixed.is_some()) {
        (Mode::Redrive, true, _) => "would move",
        (Mode::Replay, true, _) => "would copy",
        (Mode::Purge, true, true) => "would archive and remove",
        (Mode::Purge, true, false) => "would remove",
        (Mode::Redrive, false, _) => "will move",
        (Mode::Replay, false, _) => "will copy",
        (Mode::Purge, false, true) => "will archive and remove",
        (Mode::Purge, false, false) => "will remove",
    };
    row(verb, count_text(facts, req.max, !req.filter.is_empty()));
    if let Some(reads) = sqs_reads(req, facts.backlog) {
        row("reads", reads);
    }
    if let Some(why) = &facts.nothing_pending {
        row("pending", format!("none: {why}"));
    }
    if let Some(c) = facts.count.filter(|c| c.passed > 0) {
        row(
            "committed past",
            format!(
                "{} records the filter skips lie before the last record moved in their partition: the redrive group's offsets will pass them, and they will not be redriven (they stay in the topic until its retention; `dlqctl replay` still reads them)",
                c.passed
            ),
        );
    }
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
    let keeps = if req.mode == Mode::Purge {
        "the archive keeps"
    } else {
        "keeps"
    };
    if req.mode == Mode::Purge && fixed.is_none() {
        // Nothing is copied: nothing to keep.
    } else if fixed.is_some_and(|f| retried_in_place(req, f)) {
        row(
            keeps,
            "each job as it is: same id, same arguments (nothing is copied)".into(),
        );
    } else if let Some(t) = &req.transform {
        // The copy is what the transform makes of the record: only the id is sure to stay.
        row(
            keeps,
            "the stable id; body, headers/attributes and group/key as the transform makes them"
                .into(),
        );
        row("transform", t.source().to_string());
        if !req.headers.is_empty() {
            row("headers/attributes", req.headers.describe());
        }
    } else if req.headers.is_empty() {
        row(
            keeps,
            "stable id, body, headers/attributes, group/key".into(),
        );
    } else {
        row(keeps, "stable id, body, group/key".into());
        row("headers/attributes", req.headers.describe());
    }
    if req.mode == Mode::Redrive
        && matches!(req.source.address, Address::Kafka(_))
        && !req.filter.is_empty()
    {
        row(
            "note",
            "a committed offset covers every record before it: in a partition where a record moves, the records the filter skips before it are committed past and will not be redriven; those after the last one moved stay pending. To copy a subset and leave everything pending, use `dlqctl replay` instead".into(),
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
        // Redis job queues (backend/redis/).
        Address::Redis(r) => {
            // The library by its own name (the address says `system=sidekiq`).
            let library = match r.system {
                crate::address::RedisSystem::Sidekiq => "Sidekiq",
                crate::address::RedisSystem::BullMq => "BullMQ",
            };
            if fixed.is_some_and(|f| retried_in_place(req, f)) {
                format!("retry each dead job in place, as {library}'s own retry does, removing it from the set in the same atomic script (nothing is copied)")
            } else {
                format!("copy each dead job to the target, then remove it from {library}'s set")
            }
        }
        // RabbitMQ (issue 27).
        Address::Rabbitmq(_) => "copy each message to the target (publisher confirms, mandatory), then acknowledge it in the dead-letter queue; what is skipped or refused goes back to the queue when the run ends, marked redelivered".into(),
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
        }) if archived => format!("delete the dead job as {name}'s own tools do"),
        Address::Postgres(PgAddress {
            target: PgTarget::System(name),
            ..
        }) => format!("delete each selected dead job as {name}'s own tools do"),
        Address::Postgres(_) if local => {
            return "archive and delete each batch in one transaction (INSERT … SELECT, DELETE)"
                .into();
        }
        Address::Postgres(_) if archived => "delete its row".into(),
        Address::Postgres(_) => "delete each selected row".into(),
        Address::Sqs(_) if archived => "delete it (DeleteMessage)".into(),
        Address::Sqs(_) => "delete each selected message (DeleteMessage)".into(),
        Address::Kafka(_) => "commit the redrive group's offsets past each record: Kafka cannot delete single records, so they stay in the topic until its retention removes them, and no redrive reads them again".into(),
        Address::File(_) if archived => "remove it".into(),
        Address::File(_) => "remove each selected message".into(),
        // Redis job queues (backend/redis/).
        Address::Redis(r) if r.system == crate::address::RedisSystem::BullMq && archived => {
            "delete the failed job as BullMQ's job.remove() does".into()
        }
        Address::Redis(r) if r.system == crate::address::RedisSystem::BullMq => {
            "delete each selected failed job as BullMQ's job.remove() does".into()
        }
        Address::Redis(_) if archived => "remove the dead job from the set (ZREM)".into(),
        Address::Redis(_) => "remove each selected dead job from the set (ZREM)".into(),
        // RabbitMQ (issue 27).
        Address::Rabbitmq(_) if archived => "acknowledge it (basic.ack)".into(),
        Address::Rabbitmq(_) => "acknowledge each selected message (basic.ack)".into(),
    };
    format!("{first}{remove}")
}

/// A filtered SQS run reads the whole queue to find what the filter selects: how many receives
/// that is, and what each costs (a receive counts towards the message's receive count and hides
/// it until the run ends; SQS bills per request).
fn sqs_reads(req: &MoveRequest, backlog: Option<crate::backend::Backlog>) -> Option<String> {
    if !matches!(req.source.address, Address::Sqs(_)) || req.filter.is_empty() {
        return None;
    }
    let calls = match backlog {
        Some(b) => {
            let calls = b.messages.div_ceil(10).max(1);
            format!(
                "every message (about {}) is received to be filtered: about {calls} ReceiveMessage call{} of 10",
                b.messages,
                if calls == 1 { "" } else { "s" }
            )
        }
        None => "every message is received to be filtered, 10 per ReceiveMessage call".into(),
    };
    Some(format!(
        "{calls}; each receive adds 1 to the message's ApproximateReceiveCount and hides it until the run ends (the ones the filter skips too), and SQS bills each call"
    ))
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
            }) | Address::Redis(_) // Redis job queues (backend/redis/)
        )
}
