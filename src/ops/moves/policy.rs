//! What happens to one message in a move, and why: the one per-message policy. The engine
//! applies it in every run (redrive, replay, purge, edit, and each of their dry runs), and the
//! plan's count before the question predicts with it (count.rs). Pure: it reads the message
//! and the request, and changes nothing.

use chrono::{DateTime, Utc};

use super::{Mode, MoveRequest};
use crate::error::Result;
use crate::filter::Verdict;
use crate::message::Message;

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Decision {
    /// The filters did not select it: it stays, untouched.
    Skip,
    /// The filters could not say (a `--where` failed on it): it stays, failed with the reason.
    Fail(String),
    /// Selected, and redriven `--max-redrives` times already, with no `--park`: it stays
    /// (the loop guard holds it).
    Hold,
    /// Selected, and over `--max-redrives`: its copy goes to `--park`, as it is.
    Park,
    /// Selected: it moves (its copy goes to its destination, or a purge without an archive
    /// removes it).
    Take,
}

impl Decision {
    /// Whether the filters selected the message (it counts as matched).
    pub(super) fn selected(&self) -> bool {
        matches!(self, Decision::Hold | Decision::Park | Decision::Take)
    }
}

/// What the run does with `m`. Errors stop the run before it acts on `m` (see
/// [`crate::filter::Filter::verdict`]).
pub(super) fn decide(req: &MoveRequest, m: &Message, now: DateTime<Utc>) -> Result<Decision> {
    Ok(match req.filter.verdict(m, now, &req.classifier)? {
        Verdict::Skipped => Decision::Skip,
        Verdict::Failed(reason) => Decision::Fail(reason),
        // A purge removes what it selects (or archives it first): no loop guard.
        Verdict::Selected if req.mode != Mode::Purge && req.over_limit(m) => {
            if req.park.is_some() {
                Decision::Park
            } else {
                Decision::Hold
            }
        }
        Verdict::Selected => Decision::Take,
    })
}

/// The copy a taken message sends with `--transform`: its record mapped (same id, same
/// dlqctl attributes; see [`crate::query::Transform::apply`]). None: no transform, the copy
/// is the message. Err: the transform refuses it, and it stays, failed with the reason.
pub(super) fn transformed(
    req: &MoveRequest,
    m: &Message,
) -> Option<std::result::Result<Message, String>> {
    req.transform
        .as_ref()
        .map(|t| t.apply(m, req.source.cfg.id.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::Address;
    use crate::backend::AwsOptions;
    use crate::config::Config;
    use crate::filter::Filter;
    use crate::settings::resolve_queue;

    fn request(mode: Mode, max_redrives: Option<u32>, park: bool) -> MoveRequest {
        let source = resolve_queue(
            &Config::default(),
            &AwsOptions::default(),
            "postgres://app@db.internal/orders?table=dead_letters",
        );
        let park_at = Address::parse("postgres://app@db.internal/orders?table=parked").unwrap();
        MoveRequest {
            mode,
            source: source.unwrap(),
            to: None,
            filter: Filter {
                body: Some(regex::Regex::new("keep").unwrap()),
                ..Filter::default()
            },
            classifier: crate::classify::Classifier::builtin(),
            max: None,
            rate: None,
            batch_size: 10,
            dry_run: false,
            yes: true,
            exactly_once: false,
            headers: Default::default(),
            max_redrives,
            park: park.then(|| (park_at, Default::default())),
            transform: None,
        }
    }

    fn message(body: &str, redrives: u32) -> Message {
        let mut m = Message {
            id: "m".into(),
            body: body.as_bytes().to_vec(),
            ..Message::default()
        };
        for _ in 0..redrives {
            m.count_redrive();
        }
        m
    }

    #[test]
    fn the_filters_then_the_loop_guard_decide() {
        let now = Utc::now();
        let guard = request(Mode::Redrive, Some(2), false);
        assert_eq!(
            decide(&guard, &message("drop", 0), now).unwrap(),
            Decision::Skip
        );
        assert_eq!(
            decide(&guard, &message("keep", 1), now).unwrap(),
            Decision::Take
        );
        assert_eq!(
            decide(&guard, &message("keep", 2), now).unwrap(),
            Decision::Hold
        );
        let park = request(Mode::Redrive, Some(2), true);
        assert_eq!(
            decide(&park, &message("keep", 3), now).unwrap(),
            Decision::Park
        );
        // Skipped before the guard looks: a message that does not match is never held.
        assert_eq!(
            decide(&park, &message("drop", 3), now).unwrap(),
            Decision::Skip
        );
        let purge = request(Mode::Purge, Some(2), false);
        assert_eq!(
            decide(&purge, &message("keep", 5), now).unwrap(),
            Decision::Take
        );
        assert!(Decision::Hold.selected() && Decision::Park.selected());
        assert!(!Decision::Skip.selected() && !Decision::Fail(String::new()).selected());
    }
}
