//! The queues view's CHECK column: the queue held to its `[queues.NAME.limits]` by `check`'s
//! own code ([`crate::ops::check::verdicts`]), from what the view read of it anyway.

use crate::backend::{Inspection, Status};
use crate::classify::Classifier;
use crate::ops::census::Census;
use crate::settings::QueueRef;

use super::app::CheckStatus;

/// What `check` says of `q` (None: no limits). `census`: the view's census of its messages,
/// None where it took none (reading counts as a receive: SQS); a limit that needs one then
/// says so rather than reading.
pub fn status(
    q: &QueueRef,
    classifier: &Classifier,
    ins: &Inspection,
    census: Option<&Census>,
) -> Option<CheckStatus> {
    let l = &q.cfg.limits;
    if !crate::ops::check::has_limits(l) {
        return None;
    }
    if let Err(e) = crate::ops::check::validate(q, l, classifier, false) {
        return Some(CheckStatus {
            short: "error (below)".into(),
            failed: true,
            lines: vec![format!("check: {e}")],
        });
    }
    // As `check` does: a census only where a limit needs one.
    let wanted = crate::ops::check::needs_scan(l, ins);
    let unread = wanted && census.is_none();
    let mut verdicts = crate::ops::check::verdicts(l, ins, census.filter(|_| wanted));
    // Unread, the age is not known, not missing from the messages.
    verdicts.retain(|v| !(unread && v.check.id == "max-age" && v.check.status == Status::Warn));
    let mut lines: Vec<String> = verdicts
        .iter()
        .map(|v| format!("{} {}: {}", v.check.status, v.check.title, v.check.detail))
        .collect();
    if unread {
        lines.push(
            "not held here: the limits that need its messages read (not read in this view); dlqctl check reads them"
                .into(),
        );
    }
    let failed: Vec<&str> = verdicts
        .iter()
        .filter(|v| v.check.status == Status::Fail)
        .map(|v| v.short.as_str())
        .collect();
    let warned = verdicts.iter().find(|v| v.check.status == Status::Warn);
    let short = match (failed.as_slice(), warned) {
        ([first], _) => format!("FAIL {first}"),
        ([first, more @ ..], _) => format!("FAIL {first} +{}", more.len()),
        ([], _) if unread => "needs scan".into(),
        ([], Some(w)) => format!("WARN {}", w.short),
        ([], None) => "OK".into(),
    };
    Some(CheckStatus {
        short,
        failed: !failed.is_empty(),
        lines,
    })
}
