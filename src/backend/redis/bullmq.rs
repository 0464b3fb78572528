//! BullMQ (Node.js): the failed set `<prefix>:<queue>:failed` (score: `finishedOn` in ms,
//! member: the job id) and each job's hash `<prefix>:<queue>:<id>`. A retry runs BullMQ's
//! own `reprocessJob` (what `job.retry()` runs) in a batched form, job by job, derived from the
//! pinned version's script, and a removal its own `removeJob` (what `job.remove()` runs)
//! verbatim, each only while the job is still in `failed`. docs/systems/bullmq.md.

use std::collections::HashMap;

use chrono::DateTime;
use serde_json::Value;

use super::address::RedisAddress;
use crate::error::Error;
use crate::message::{AttrValue, Attribute, ErrorInfo, Message};

/// The BullMQ release whose scripts dlqctl runs, and the `meta` versions it accepts.
pub(super) const PINNED: &str = "6.7.6";
/// `meta.version` values of the layout the pinned scripts are for (`bullmq:6.x`).
pub(super) const KNOWN_MAJOR: &str = "bullmq:6.";

/// `job.retry()` for a batch of jobs in one call: dlqctl's batched form of BullMQ 6.7.6's
/// `reprocessJob-9.lua` (each job with that script's checks and effects, in order; the diff
/// is stated in docs/systems/bullmq.md), with the loop guard's count on each retried job's
/// hash (`ARGV[6]` = "1"). One code per job: 1 retried, -1 hash gone, -3 no longer failed,
/// -4 the job's key not a hash, -5 a parent's key of another type; a queue key of another type
/// is an error before any write.
pub(super) const RETRY_SCRIPT: &str = include_str!("bullmq_reprocessJobs.lua");
/// `dlqctl edit` in place: the checks of bullmq_editJob.lua (the job still failed as it was
/// opened), the batched retry of that one job, then the edited data set if it was retried,
/// in one script (docs/systems/bullmq.md#edit).
pub(super) const EDIT_SCRIPT: &str = concat!(
    include_str!("bullmq_editJob.lua"),
    "local function bullmq_retry()\n",
    include_str!("bullmq_reprocessJobs.lua"),
    "end\n",
    include_str!("bullmq_editJobEnd.lua")
);
/// BullMQ 6.7.6's `reprocessJob-9.lua` verbatim: what the batched script is derived from
/// (and what the tests hold it to).
#[cfg(test)]
pub(super) const REPROCESS_JOB_9: &str = include_str!("bullmq_reprocessJob-9.lua");

/// `job.remove()` (BullMQ 6.7.6's `removeJob-2.lua`, verbatim inside the function), only
/// while the job is still failed (`KEYS[3]`): -100 when it is not.
pub(super) const REMOVE_SCRIPT: &str = concat!(
    "if redis.call('ZSCORE', KEYS[3], ARGV[1]) == false then return -100 end\n",
    "local function bullmq_remove_job()\n",
    include_str!("bullmq_removeJob-2.lua"),
    "\nend\n",
    "return bullmq_remove_job()\n"
);

/// `meta.no_job_hash`: an id in the failed set whose job hash is gone (a removal left it
/// behind): no job to retry; a purge removes the id, and its archive record says why.
pub(super) const NO_JOB_HASH: &str = "no_job_hash";

/// A purge's removal of an id in failed with no job hash: that member alone, only while it
/// still has no job hash, in one script (1 removed, 0 not in failed any more, -1 the job's key
/// exists now: left as it is).
pub(super) const REMOVE_GHOST_SCRIPT: &str = include_str!("bullmq_removeGhost.lua");

/// One BullMQ queue: its key prefix (`bull:NAME:`).
pub(super) struct BullMq {
    pub queue: String,
    /// `PREFIX:QUEUE:`.
    pub base: String,
}

impl BullMq {
    pub fn new(a: &RedisAddress) -> BullMq {
        let queue = a.queue.clone().unwrap_or_default();
        BullMq {
            base: format!("{}:{}:", a.bull_prefix(), queue),
            queue,
        }
    }

    pub fn key(&self, name: &str) -> String {
        format!("{}{name}", self.base)
    }

    pub fn set_key(&self) -> String {
        self.key("failed")
    }

    /// Refuse a queue whose `meta` says another layout than the pinned scripts know.
    /// `failed`: the jobs in the failed set, which tell a queue that lost its `meta` (to
    /// `queue.obliterate()`, which deletes it while the Queue object stays open) from none.
    pub fn check_version(
        &self,
        meta_version: Option<&str>,
        failed: u64,
        target: &str,
    ) -> Result<String, Error> {
        match meta_version {
            Some(v) if is_known(v) => Ok(v.to_string()),
            Some(v) => Err(Error::Unsupported {
                backend: "redis",
                operation: "this BullMQ queue",
                reason: format!(
                    "{target}: {}meta says `version` = `{v}`; dlqctl runs BullMQ {PINNED}'s own scripts (reprocessJob-9, removeJob-2), written for the layout of bullmq 6.x, and will not guess another's (docs/systems/bullmq.md)",
                    self.base
                ),
            }),
            None if failed > 0 => Err(Error::Unsupported {
                backend: "redis",
                operation: "this BullMQ queue",
                reason: format!(
                    "{target}: {}failed holds {failed} job{}, but {}meta has no `version`, which tells dlqctl the layout its scripts are for; BullMQ writes it when a Queue object connects, and `queue.obliterate()` deletes it",
                    self.base,
                    if failed == 1 { "" } else { "s" },
                    self.base
                ),
            }
            .hinted(format!(
                "let the application open the queue once with BullMQ (`new Queue('{}', …)` writes `version`), then run dlqctl again",
                self.queue
            ))),
            None => Err(Error::NotFound {
                what: format!("BullMQ queue `{}` ({}meta)", self.queue, self.base),
                detail: format!(
                    "{target}: no `version` in {}meta, which every BullMQ queue writes: check queue= and prefix= (docs/systems/bullmq.md)",
                    self.base
                ),
            }),
        }
    }

    /// A job's hash as a message (None: the hash is gone).
    pub fn to_message(
        &self,
        id: &str,
        score: f64,
        h: &HashMap<String, Vec<u8>>,
    ) -> Option<Message> {
        if h.is_empty() {
            return None;
        }
        let text = |k: &str| h.get(k).map(|v| String::from_utf8_lossy(v).into_owned());
        let ms = |k: &str| {
            text(k)
                .and_then(|t| t.parse::<i64>().ok())
                .and_then(DateTime::from_timestamp_millis)
        };
        let mut attributes = Vec::new();
        let mut names: Vec<&String> = h.keys().collect();
        names.sort_by_key(|n| (n.as_str() != "name", n.as_str()));
        for k in names {
            if matches!(
                k.as_str(),
                "data" | "stacktrace" | "failedReason" | "returnvalue"
            ) {
                continue;
            }
            attributes.push(Attribute {
                name: if k == "atm" {
                    "attemptsMade".into()
                } else {
                    k.clone()
                },
                value: AttrValue::from_bytes(Some(&h[k])),
            });
        }
        let trace = text("stacktrace")
            .and_then(|t| serde_json::from_str::<Vec<Value>>(&t).ok())
            .and_then(|a| a.last().and_then(Value::as_str).map(str::to_string));
        let message = text("failedReason").filter(|m| !m.is_empty());
        let error = ErrorInfo {
            class: trace
                .as_deref()
                .and_then(|t| error_class(t, message.as_deref())),
            message,
            trace,
        };
        let mut m = Message {
            id: id.to_string(),
            native_id: id.to_string(),
            body: h.get("data").cloned().unwrap_or_default(),
            attributes,
            receive_count: text("atm").and_then(|a| a.parse().ok()),
            enqueued_at: ms("timestamp"),
            dead_lettered_at: ms("finishedOn").or(DateTime::from_timestamp_millis(score as i64)),
            error: (!error.is_empty()).then_some(error),
            source: Some(self.queue.clone()),
            ..Message::default()
        };
        m.meta.insert("system", Value::String("bullmq".into()));
        Some(m)
    }
}

impl BullMq {
    /// What stands for an id in failed with no job hash: the id, its score as the time it
    /// failed, and why there is nothing else ([`NO_JOB_HASH`]).
    pub fn ghost(&self, id: &str, score: f64) -> Message {
        let why = format!(
            "no job hash: {} does not exist (a removal left the id in {} behind); nothing to retry",
            self.key(id),
            self.set_key()
        );
        let mut m = Message {
            id: id.to_string(),
            native_id: id.to_string(),
            dead_lettered_at: DateTime::from_timestamp_millis(score as i64),
            error: Some(ErrorInfo {
                message: Some(why.clone()),
                ..ErrorInfo::default()
            }),
            source: Some(self.queue.clone()),
            ..Message::default()
        };
        m.meta.insert("system", Value::String("bullmq".into()));
        m.meta.insert(NO_JOB_HASH, Value::String(why));
        m
    }
}

/// `bullmq:6.MINOR.PATCH`, with a pre-release (`-beta.1`) at most: the layout the pinned
/// scripts are for, and nothing that only starts like it.
fn is_known(v: &str) -> bool {
    let Some(rest) = v.strip_prefix(KNOWN_MAJOR) else {
        return false;
    };
    let (release, pre) = rest.split_once('-').unwrap_or((rest, "alpha"));
    let parts: Vec<&str> = release.split('.').collect();
    parts.len() == 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && !pre.is_empty()
        && pre
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
}

/// `TypeError` of a Node.js stack whose first line is `TypeError: message`.
fn error_class(trace: &str, message: Option<&str>) -> Option<String> {
    let first = trace.lines().next()?;
    let (class, rest) = first.split_once(": ").unwrap_or((first, ""));
    let plain = !class.is_empty()
        && class
            .chars()
            .all(|c| c.is_alphanumeric() || "_$.".contains(c));
    (plain && message.is_none_or(|m| m.starts_with(rest) || rest.starts_with(m)))
        .then(|| class.to_string())
}

/// What a job's `removeOnFail` option says (`true`, a count, `{age, count}`), as shown by
/// verify; None when the job does not set it.
pub(super) fn remove_on_fail(opts: &[u8]) -> Option<Value> {
    let o: Value = serde_json::from_slice(opts).ok()?;
    o.get("removeOnFail")
        .filter(|v| !v.is_null() && *v != &Value::Bool(false))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b() -> BullMq {
        BullMq {
            queue: "mail".into(),
            base: "bull:mail:".into(),
        }
    }

    #[test]
    fn a_failed_job_becomes_a_message() {
        let h: HashMap<String, Vec<u8>> = [
            ("name", "send"),
            ("data", r#"{"to":"a@b"}"#),
            ("opts", r#"{"attempts":2,"removeOnFail":{"age":3600}}"#),
            ("timestamp", "1700000000000"),
            ("finishedOn", "1700000005000"),
            ("atm", "2"),
            ("failedReason", "connect ECONNREFUSED 127.0.0.1:25"),
            ("stacktrace", r#"["Error: first","Error: connect ECONNREFUSED 127.0.0.1:25\n    at f (x.js:1:2)"]"#),
            ("dlqctl-redrive-count", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect();
        let m = b().to_message("7", 1700000005000.0, &h).unwrap();
        assert_eq!((m.id.as_str(), m.receive_count), ("7", Some(2)));
        assert_eq!(m.body, br#"{"to":"a@b"}"#);
        assert_eq!(
            m.error_text().as_deref(),
            Some("Error: connect ECONNREFUSED 127.0.0.1:25")
        );
        assert!(
            m.error
                .as_ref()
                .unwrap()
                .trace
                .as_ref()
                .unwrap()
                .contains("x.js:1:2")
        );
        assert_eq!(m.attributes[0].name, "name");
        assert_eq!(m.redrive_count(), 1);
        assert_eq!(m.enqueued_at.unwrap().timestamp_millis(), 1700000000000);
        assert_eq!(
            remove_on_fail(&h["opts"]),
            Some(serde_json::json!({"age": 3600}))
        );
        assert!(b().to_message("8", 1.0, &HashMap::new()).is_none());
    }

    #[test]
    fn only_the_pinned_layout_is_accepted() {
        assert!(b().check_version(Some("bullmq:6.7.6"), 0, "t").is_ok());
        assert!(
            b().check_version(Some("bullmq:6.0.0-beta.1"), 0, "t")
                .is_ok()
        );
        for v in [
            "bullmq:6",
            "bullmq:6.x-beta",
            "bullmq:6.7.6:extra",
            "bullmq:6.7",
            "bullmq:6.7.6-",
        ] {
            assert!(b().check_version(Some(v), 0, "t").is_err(), "{v}");
        }
        let e = b()
            .check_version(Some("bullmq:4.17.0"), 0, "t")
            .unwrap_err();
        assert!(
            e.to_string().contains("bullmq:4.17.0") && e.to_string().contains("6.7.6"),
            "{e}"
        );
        let none = b().check_version(None, 0, "t").unwrap_err();
        assert_eq!(none.exit_code(), 3, "no queue: not found");
        // Failed jobs and no version (after queue.obliterate()): found, its layout unknown.
        let lost = b().check_version(None, 7, "t").unwrap_err();
        assert_eq!(lost.exit_code(), 2);
        assert!(lost.to_string().contains("holds 7 jobs"), "{lost}");
        assert!(
            lost.hints().join(" ").contains("new Queue('mail'"),
            "{lost:?}"
        );
        assert!(REPROCESS_JOB_9.contains("Attempts to reprocess a job"));
        assert!(RETRY_SCRIPT.contains("batched form of BullMQ 6.7.6's reprocessJob-9.lua"));
        assert!(REMOVE_SCRIPT.contains("removeJobWithChildren"));
    }
}
