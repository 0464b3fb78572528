//! The plan shown before a run (and before its question): what happens to each message, from
//! where, to where, how many.

use super::count::count_text;
use super::{Mode, MoveRequest, Setup};

/// What the plan says of the source, in the backend's own terms, gathered when the run is
/// set up (the plan names no backend: each says its own words).
#[derive(Debug, Default)]
pub(super) struct Words {
    /// What happens to each message ([`crate::backend::QueueBackend::describe_move`]).
    pub(super) operation: String,
    /// What a filtered read costs, where it has a price (SQS's receives).
    pub(super) reads: Option<String>,
    /// What reading the source does to its messages, where it does something (a RabbitMQ
    /// consumer, an SQS receive) and `reads` does not say it: the plan's `reading` row, and the
    /// warning a run prints as it begins to read when no plan was shown
    /// ([`crate::settings::Ctx::warn_reading`]).
    pub(super) reading: Option<&'static str>,
    /// Removing is committing a position past a message (Kafka's offsets): the plan says what
    /// that passes over.
    pub(super) by_position: bool,
    /// The source is a job library (retried in place): dlqctl does not enqueue into one, so
    /// a purge's archive comes back only into another backend, or through the application.
    pub(super) job_library: bool,
}

/// The plan's rows: what happens, from where, to where, how many.
pub(super) fn plan(req: &MoveRequest, setup: &Setup) -> Vec<(String, String)> {
    let (fixed, facts, words) = (setup.fixed.as_ref(), &setup.facts, &setup.words);
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut row = |k: &str, v: String| rows.push((k.to_string(), v));
    row("operation", words.operation.clone());
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
            Some(_) if setup.in_place => "where each job is (retried in place)".into(),
            Some(f) => f.to_string(),
            None if req.mode == Mode::Purge && words.by_position => "none (--no-archive): no copy is kept; the records stay in the topic until its retention removes them".into(),
            None if req.mode == Mode::Purge => "none (--no-archive): no copy is kept, removed messages are gone".into(),
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
    if let Some(l) = &facts.left {
        row("left", format!("{}: {}", l.count, l.reason));
    }
    if let Some(reads) = &words.reads {
        row("reads", reads.clone());
    }
    if let Some(effect) = words.reading {
        row("reading", effect.to_string());
    }
    if let Some(why) = &facts.nothing_pending {
        row("pending", format!("none: {why}"));
    }
    if let Some(c) = facts.count.filter(|c| c.passed > 0) {
        row(
            "committed past",
            format!(
                "{} the filter skips lie before the last record moved in their partition: the redrive group's offsets will pass them, and they will not be redriven (they stay in the topic until its retention; `dlqctl replay` still reads them)",
                crate::human::count(c.passed, "record", "records")
            ),
        );
    }
    row(
        "rate",
        req.rate.map_or("unlimited".into(), |r| {
            let per = if r >= 1.0 {
                format!("{r:.0}/s")
            } else {
                format!("{:.0}/h", r * 3600.0)
            };
            format!(
                "{per} on average: batches of {}, each sent when the run is due to send it",
                req.batch_size
            )
        }),
    );
    for (k, v) in keeps(req, setup) {
        row(&k, v);
    }
    if req.mode == Mode::Purge && fixed.is_some() && words.job_library {
        row(
            "note",
            "dlqctl does not enqueue into a job library: the archived jobs can be replayed into another backend, or enqueued again by the application from the archive (docs/purge.md)".into(),
        );
    }
    if req.mode == Mode::Redrive && words.by_position && !req.filter.is_empty() {
        row(
            "note",
            "a committed offset covers every record before it: in a partition where a record moves, the records the filter skips before it are committed past and will not be redriven; those after the last one moved stay pending. To copy a subset and leave everything pending, use `dlqctl replay` instead".into(),
        );
    }
    rows
}

/// What the copies keep of each message (the plan's "keeps" rows), with the transform and the
/// header rules where they change it.
fn keeps(req: &MoveRequest, setup: &Setup) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut row = |k: &str, v: String| rows.push((k.to_string(), v));
    let keeps = if req.mode == Mode::Purge {
        "the archive keeps"
    } else {
        "keeps"
    };
    if req.mode == Mode::Purge && setup.fixed.is_none() {
        // Nothing is copied: nothing to keep.
    } else if setup.in_place && req.transform.is_some() {
        // `dlqctl edit` retrying the edited job where it is.
        row(
            keeps,
            "the job: same id, its arguments as edited (nothing is copied)".into(),
        );
    } else if setup.in_place {
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
    } else {
        let source = req.source.address.backend_name();
        let target = setup.fixed.as_ref().map_or(source, |a| a.backend_name());
        let headers = if req.headers.is_empty() {
            ", headers/attributes"
        } else {
            ""
        };
        row(
            keeps,
            format!("stable id, body{headers}{}", hop(source, target)),
        );
        if !req.headers.is_empty() {
            row("headers/attributes", req.headers.describe());
        }
    }
    rows
}

/// The parts of a message that only some backends have, and the backends that have each:
/// the ordering group (SQS's MessageGroupId, PostgreSQL's `group_key`), the record key
/// (Kafka), the AMQP properties (RabbitMQ: content type and encoding, correlation id, …). A
/// file (and a test's memory queue) holds them all.
const PARTS: [(&str, &[&str]); 3] = [
    ("group", &["sqs", "postgres", "file", "memory"]),
    ("key", &["kafka", "file", "memory"]),
    ("AMQP properties", &["rabbitmq", "file", "memory"]),
];

/// What a copy from a `source` backend to a `target` one keeps of the parts only some have,
/// and what it cannot keep (docs/triage.md, "What a copy keeps"): `, group` or `, AMQP
/// properties; not kept: group/key (rabbitmq has no place for them)`.
pub(super) fn hop(source: &str, target: &str) -> String {
    let has = |part: &[&str], b: &str| part.contains(&b) || !known(b);
    let mut kept = String::new();
    let mut lost: Vec<&str> = Vec::new();
    for (name, backends) in PARTS {
        match (has(backends, source), has(backends, target)) {
            (true, true) => {
                kept.push_str(", ");
                kept.push_str(name);
            }
            (true, false) => lost.push(name),
            _ => {}
        }
    }
    if lost.is_empty() {
        return kept;
    }
    let what = lost.join(", ");
    let them = if lost.len() == 1 && name_is_singular(lost[0]) {
        "it"
    } else {
        "them"
    };
    format!("{kept}; not kept: {what} ({target} has no place for {them})")
}

fn known(backend: &str) -> bool {
    PARTS.iter().any(|(_, b)| b.contains(&backend)) || backend == "redis"
}

fn name_is_singular(part: &str) -> bool {
    part != "AMQP properties"
}

#[cfg(test)]
mod tests {
    use super::hop;

    /// Operator report (2026-12-06): RabbitMQ → PostgreSQL → RabbitMQ lost content_type,
    /// content_encoding, correlation_id and the other properties, and a file's group and key
    /// were dropped on a RabbitMQ target, while the plan said "keeps: stable id, body,
    /// headers/attributes, group/key". The plan names what each hop keeps, and what not.
    #[test]
    fn the_plan_says_what_each_hop_keeps() {
        for (source, target, want) in [
            ("rabbitmq", "rabbitmq", ", AMQP properties"),
            (
                "rabbitmq",
                "postgres",
                "; not kept: AMQP properties (postgres has no place for them)",
            ),
            (
                "rabbitmq",
                "sqs",
                "; not kept: AMQP properties (sqs has no place for them)",
            ),
            ("postgres", "sqs", ", group"),
            ("sqs", "sqs", ", group"),
            ("kafka", "kafka", ", key"),
            (
                "kafka",
                "rabbitmq",
                "; not kept: key (rabbitmq has no place for it)",
            ),
            (
                "file",
                "rabbitmq",
                ", AMQP properties; not kept: group, key (rabbitmq has no place for them)",
            ),
            ("rabbitmq", "file", ", AMQP properties"),
            (
                "sqs",
                "kafka",
                "; not kept: group (kafka has no place for it)",
            ),
        ] {
            assert_eq!(hop(source, target), want, "{source} → {target}");
        }
    }
}
