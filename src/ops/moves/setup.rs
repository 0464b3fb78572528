//! A run's setup, before anything is asked or moved: check what the run asks of the source,
//! resolve where its copies go and open that target (a missing table or queue, or a target
//! that is the source itself, is reported now), count for the plan, and gather the source's
//! own words for it.

use std::collections::HashMap;

use super::refuse::refuse_guard_without_park;
use super::targets::Targets;
use super::{Mode, MoveRequest, count, plan};
use crate::address::Address;
use crate::backend::{Capabilities, OpenOptions, QueueBackend};
use crate::error::{Error, Result};
use crate::message::Message;
use crate::settings::Ctx;

/// Where a run's copies go, resolved before anything is asked or moved.
pub(super) struct Setup {
    /// One destination for every message; None: each message's own (discovered).
    pub(super) fixed: Option<Address>,
    pub(super) targets: Targets,
    /// The destination is the source itself, which retries each message where it is (a job
    /// system's own retry): nothing is copied.
    pub(super) in_place: bool,
    /// The plan's counts.
    pub(super) facts: count::Facts,
    /// What the plan says of the source, in its own terms.
    pub(super) words: plan::Words,
}

/// An archive file that cannot be created, in the words of `--archive`: a missing directory
/// is named (dlqctl creates the file, not the directories above it).
fn archive_error(e: Error) -> Error {
    match e {
        Error::Io { path, source } if source.kind() == std::io::ErrorKind::NotFound => {
            let dir = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map_or_else(|| ".".into(), |d| d.display().to_string());
            Error::invalid_arg(
                "--archive",
                format!(
                    "cannot create {}: the directory {dir} does not exist",
                    path.display()
                ),
            )
            .hinted("create it first, or archive to a path in an existing directory")
        }
        e => e,
    }
}

/// How a target named by the user or the config is opened, with its column mapping.
fn target_options(ctx: &Ctx, columns: std::collections::BTreeMap<String, String>) -> OpenOptions {
    OpenOptions {
        id: None,
        columns,
        as_target: true,
        aws: ctx.aws.clone(),
        backends: ctx.config.backends(),
        exactly_once: false,
    }
}

impl Setup {
    /// A purge: the archive, if any, is the one target (never discovered, never the queue
    /// itself); without one, nothing is opened but the source.
    async fn for_purge(ctx: &Ctx, req: &MoveRequest, source: &dyn QueueBackend) -> Result<Setup> {
        if source.settles_by_position() && !req.filter.is_empty() {
            return Err(Error::Refused {
                command: "purge",
                reason: "a Kafka purge commits the redrive group's offsets, and an offset covers every record before it: with a filter, the records between the purged ones would be passed over too. Purge without filters (--max N for the first N), or copy the records you want elsewhere with `dlqctl replay`".into(),
            });
        }
        let mut targets = Targets {
            open: HashMap::new(),
            refused: HashMap::new(),
            options: req.to.as_ref().map_or_else(
                || target_options(ctx, Default::default()),
                |(_, o)| o.clone(),
            ),
            opener: ctx.opener.clone(),
            source_identity: source.identity().await?,
            mode: req.mode,
        };
        let fixed = req.to.as_ref().map(|(a, _)| a.clone());
        if let Some(f) = &fixed {
            targets.get(f).await.map_err(archive_error)?;
        }
        let local = fixed.as_ref().is_some_and(|f| source.can_move_locally(f));
        let facts = count::gather(ctx, req, source, true).await?;
        Ok(Setup::with_words(
            req, source, fixed, targets, local, false, facts,
        ))
    }

    /// Check what the run asks of the source, resolve its destination and open a known
    /// target (a missing table or queue, or a target that is the source itself, is reported
    /// before anything is asked or moved), and count the backlog for the plan.
    pub(super) async fn resolve(
        ctx: &Ctx,
        req: &MoveRequest,
        source: &dyn QueueBackend,
    ) -> Result<Setup> {
        // A source every read of which is refused: the refusal, and no plan before it.
        source.refuse_reads()?;
        let caps = source.capabilities();
        refuse_removing(req, &caps)?;
        if req.mode == Mode::Purge {
            return Setup::for_purge(ctx, req, source).await;
        }
        refuse_guard_without_park(req, source)?;
        let fixed = destination(ctx, req, source, &caps).await?;
        // A redrive into the queue itself, which retries each message where it is.
        let in_place = fixed
            .as_ref()
            .is_some_and(|f| *f == req.source.address && source.retries_in_place());
        refuse_unfit(req, source, &caps, fixed.as_ref(), in_place)?;
        let target_options = match &req.to {
            Some((_, o)) => o.clone(),
            None => match &req.source.cfg.source {
                Some(s) => ctx.target(s, &req.source)?.1,
                None => target_options(ctx, req.source.cfg.source_columns.clone()),
            },
        };
        let mut targets = Targets {
            open: HashMap::new(),
            refused: HashMap::new(),
            options: target_options,
            opener: ctx.opener.clone(),
            source_identity: source.identity().await?,
            mode: req.mode,
        };
        // Open a known target before the plan is shown: a missing table or queue, or a target that
        // is the source itself, is reported before anything is asked or moved.
        if let Some(f) = &fixed
            && !in_place
        {
            targets.get(f).await?;
        }
        let local = fixed
            .as_ref()
            .is_some_and(|f| source.can_move_locally(f) && req.local_allowed(source, f));
        if let Some((park, _)) = &req.park {
            targets.get(park).await?;
        }
        let facts = count::gather(
            ctx,
            req,
            source,
            req.mode.removes() || req.filter.is_empty(),
        )
        .await?;
        Ok(Setup::with_words(
            req, source, fixed, targets, local, in_place, facts,
        ))
    }

    /// The setup, with what the plan says of the source in its own words. `local`: the
    /// backend moves the messages itself (one transaction, or a job system's retry).
    fn with_words(
        req: &MoveRequest,
        source: &dyn QueueBackend,
        fixed: Option<Address>,
        targets: Targets,
        local: bool,
        in_place: bool,
        facts: count::Facts,
    ) -> Setup {
        let operation = if req.mode == Mode::Replay {
            "copy each message to the target (nothing is removed from what is read)".into()
        } else {
            source.describe_move(&crate::backend::MoveHow {
                purge: req.mode == Mode::Purge,
                archived: fixed.is_some(),
                in_place,
                local,
                exactly_once: req.exactly_once,
            })
        };
        let reads = if req.filter.is_empty() {
            None
        } else {
            source.describe_filtered_read(facts.backlog)
        };
        let words = plan::Words {
            operation,
            // What reading does, where the `reads` row does not say it already; not for a
            // purge, whose plan says what becomes of each message.
            reading: source
                .capabilities()
                .read_side_effect
                .filter(|_| reads.is_none() && req.mode != Mode::Purge),
            reads,
            by_position: source.settles_by_position(),
            job_library: source.retries_in_place(),
        };
        Setup {
            fixed,
            targets,
            in_place,
            facts,
            words,
        }
    }
}

/// A redrive or purge needs a source that can remove a message after copying it.
fn refuse_removing(req: &MoveRequest, caps: &Capabilities) -> Result<()> {
    if req.mode.removes() && !caps.delete {
        return Err(Error::Unsupported {
            backend: req.source.address.backend_name(),
            operation: if req.mode == Mode::Purge {
                "purge"
            } else {
                "redrive"
            },
            reason: format!(
                "{}; use `dlqctl replay` to copy",
                caps.no_delete
                    .unwrap_or("this queue cannot remove a message after copying it")
            ),
        });
    }
    Ok(())
}

/// Where every copy goes: `--to`, else the configured `source`, else the source's own
/// answer; None where the source knows each message's own destination.
async fn destination(
    ctx: &Ctx,
    req: &MoveRequest,
    source: &dyn QueueBackend,
    caps: &Capabilities,
) -> Result<Option<Address>> {
    Ok(match &req.to {
        Some((a, _)) => Some(a.clone()),
        None => match &req.source.cfg.source {
            Some(s) => Some(ctx.target(s, &req.source)?.0),
            // Backends that know each message's own source (SQS's DeadLetterQueueSourceArn,
            // Kafka's original-topic header) decide per message.
            None if caps.per_message_destination => None,
            None => source.destination(&Message::default()).await?,
        },
    })
}

/// What the request asks that this source and destination cannot do: a replay without a
/// target, `--exactly-once` off one Kafka cluster, a transform, a park or header rules on a
/// retry in place (nothing is copied), no destination at all.
fn refuse_unfit(
    req: &MoveRequest,
    source: &dyn QueueBackend,
    caps: &Capabilities,
    fixed: Option<&Address>,
    in_place: bool,
) -> Result<()> {
    if req.mode == Mode::Replay && fixed.is_none() {
        return Err(Error::invalid_arg("--to", "replay needs a target").hinted("pass --to QUEUE"));
    }
    if req.exactly_once && !(caps.exactly_once && fixed.is_some_and(|f| source.can_move_locally(f)))
    {
        return Err(Error::invalid_arg(
            "--exactly-once",
            "needs a Kafka dead-letter topic and --to a topic on the same cluster (kafka://SAME-BROKERS/TOPIC)",
        ));
    }
    let edit = fixed.is_some_and(|f| req.edit_in_place(source, f));
    if ((req.transform.is_some() && !edit) || req.park.is_some()) && in_place {
        return Err(Error::invalid_arg(
            if req.transform.is_some() {
                "--transform"
            } else {
                "--park"
            },
            "this redrive retries each job in place: nothing is copied, so there is nothing to transform or park",
        )
        .hinted("redrive --to another queue to transform or park"));
    }
    if !req.headers.is_empty() && in_place {
        return Err(Error::invalid_arg(
            "--keep-header/--strip-header",
            "this redrive retries each job in place: nothing is copied, so there are no headers to choose",
        ));
    }
    if fixed.is_none() && !caps.per_message_destination {
        return Err(Error::invalid_arg(
            "--to",
            format!(
                "no destination for {}",
                req.source.address
            ),
        )
        .hinted("pass --to TARGET, or set `source` in dlqctl.toml (PostgreSQL: or &source=SCHEMA.TABLE in the URL)"));
    }
    Ok(())
}
