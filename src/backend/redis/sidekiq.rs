//! Sidekiq (Ruby): the dead set `dead` (or the retry set `retry`), a sorted set whose members
//! are the jobs' JSON and whose scores are the times they died (or are due). A retry is what
//! Sidekiq's "Retry now" does (`SortedEntry#retry`: `retry_count` one less, `Client.push`:
//! `enqueued_at` now, `SADD queues`, `LPUSH queue:NAME`), in one Lua script that also removes
//! that exact member: Sidekiq itself removes first and pushes after, in two steps.
//! docs/systems/sidekiq.md.

use base64::Engine as _;
use chrono::{DateTime, Utc};
use indexmap::IndexMap;
use serde_json::Value;
use serde_json::value::RawValue;

use super::address::{RedisAddress, SidekiqSet};
use super::zset::Entry;
use crate::message::{AttrValue, Attribute, ErrorInfo, Message, REDRIVE_COUNT_ATTRIBUTE};

/// The retry, as one script per batch (docs/systems/sidekiq.md shows it verbatim).
pub(super) const RETRY_SCRIPT: &str = include_str!("sidekiq_retry.lua");
/// `meta.retry_refused`: why a retry in place would leave this job dead (Sidekiq's push would
/// refuse it), for a dry run to predict and an operator to read.
pub(super) const RETRY_REFUSED: &str = "retry_refused";
/// Why a member that is not a JSON object stays dead.
const NOT_AN_OBJECT: &str = "sidekiq: the dead job is not a JSON object; left dead";

/// Dead-set retention Sidekiq applies unless the application changed it (`Sidekiq.options`).
pub(super) const DEFAULT_DEAD_TIMEOUT_SECONDS: u64 = 180 * 24 * 3600;
pub(super) const DEFAULT_DEAD_MAX_JOBS: u64 = 10_000;

/// One Sidekiq address, resolved: its keys and the queue it is narrowed to.
pub(super) struct Sidekiq {
    /// `NAMESPACE:` or empty.
    pub prefix: String,
    pub set: SidekiqSet,
    pub queue: Option<String>,
}

impl Sidekiq {
    pub fn new(a: &RedisAddress) -> Sidekiq {
        Sidekiq {
            prefix: a
                .namespace
                .as_ref()
                .map(|n| format!("{n}:"))
                .unwrap_or_default(),
            set: a.set,
            queue: a.queue.clone(),
        }
    }

    /// The sorted set read.
    pub fn set_key(&self) -> String {
        format!(
            "{}{}",
            self.prefix,
            match self.set {
                SidekiqSet::Dead => "dead",
                SidekiqSet::Retry => "retry",
            }
        )
    }

    pub fn queues_key(&self) -> String {
        format!("{}queues", self.prefix)
    }

    /// The job a member holds, as a message; None when `&queue=` leaves it out (or it is not
    /// a job at all: a member that is not a JSON object is shown as it is, with no queue).
    pub fn to_message(&self, e: &Entry) -> Option<Message> {
        let (args, job) = match parse_member(&e.member) {
            Some((args, job)) => (args, Some(job)),
            None => (None, None),
        };
        let queue = job
            .as_ref()
            .and_then(|j| j.get("queue"))
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some(want) = &self.queue
            && queue.as_deref() != Some(want.as_str())
        {
            return None;
        }
        let dead_at = time_of(&Value::from(e.score));
        let Some(job) = job else {
            let id = member_id(&e.member);
            let mut m = Message {
                id: id.clone(),
                native_id: id,
                body: e.member.clone(),
                dead_lettered_at: dead_at,
                ..Message::default()
            };
            m.meta.insert("system", Value::String("sidekiq".into()));
            m.meta
                .insert(RETRY_REFUSED, Value::String(NOT_AN_OBJECT.into()));
            return Some(m);
        };
        let refused = push_checks(
            job.get("class").cloned(),
            args.as_ref()
                .is_some_and(|a| a.trim_ascii_start().starts_with(b"[")),
            job.get("queue").cloned(),
        )
        .err();
        let s = |k: &str| job.get(k).and_then(Value::as_str).map(str::to_string);
        let jid = s("jid").unwrap_or_else(|| member_id(&e.member));
        let mut attributes = Vec::new();
        for (k, v) in &job {
            if matches!(
                k.as_str(),
                "args" | "error_backtrace" | "error_message" | "error_class"
            ) {
                continue;
            }
            let text = match v {
                Value::Null => continue,
                Value::String(t) => t.clone(),
                other => other.to_string(),
            };
            attributes.push(Attribute {
                name: k.clone(),
                value: AttrValue::text(text),
            });
        }
        let error = ErrorInfo {
            class: s("error_class"),
            message: s("error_message"),
            trace: job.get("error_backtrace").and_then(backtrace),
        };
        let mut m = Message {
            id: jid.clone(),
            native_id: jid,
            body: args.unwrap_or_default(),
            attributes,
            receive_count: job
                .get("retry_count")
                .and_then(Value::as_u64)
                .map(|c| c.saturating_add(1).min(u64::from(u32::MAX)) as u32),
            enqueued_at: job
                .get("created_at")
                .or(job.get("enqueued_at"))
                .and_then(time_of),
            dead_lettered_at: dead_at,
            error: (!error.is_empty()).then_some(error),
            source: queue,
            ..Message::default()
        };
        m.meta.insert("system", Value::String("sidekiq".into()));
        if let Some(reason) = refused {
            m.meta.insert(RETRY_REFUSED, Value::String(reason));
        }
        m.meta.insert(
            "set",
            Value::String(
                match self.set {
                    SidekiqSet::Dead => "dead",
                    SidekiqSet::Retry => "retry",
                }
                .into(),
            ),
        );
        Some(m)
    }
}

/// The id of a member that has no `jid`: its text, or, where it is not valid UTF-8 (its text
/// would hold U+FFFD, which no `--id` can spell), `member-sha256:` and the first 16 hex digits
/// of the SHA-256 of its bytes: the same on every read.
fn member_id(member: &[u8]) -> String {
    match std::str::from_utf8(member) {
        Ok(text) => text.to_string(),
        Err(_) => {
            use sha2::Digest;
            let d = sha2::Sha256::digest(member);
            let hex: String = d[..8].iter().map(|b| format!("{b:02x}")).collect();
            format!("member-sha256:{hex}")
        }
    }
}

/// What `SortedEntry#retry` and `Client.push` make of a dead job before pushing it: its
/// queue, and the job to push (every other field kept byte for byte).
pub(super) fn retry_payload(
    member: &[u8],
    count_redrive: bool,
    now: DateTime<Utc>,
) -> Result<(String, Vec<u8>), String> {
    let mut job: IndexMap<String, Box<RawValue>> =
        serde_json::from_slice(member).map_err(|_| NOT_AN_OBJECT.to_string())?;
    let raw = |v: String| RawValue::from_string(v).map_err(|e| e.to_string());
    let field = |k: &str| {
        job.get(k)
            .map(|v| serde_json::from_str::<Value>(v.get()).unwrap_or(Value::Null))
    };
    let queue = push_checks(
        field("class"),
        field("args").is_some_and(|a| a.is_array()),
        field("queue"),
    )?;
    job.insert(
        "queue".into(),
        raw(Value::String(queue.clone()).to_string())?,
    );
    if !job.contains_key("retry") {
        job.insert("retry".into(), raw("true".into())?);
    }
    // SortedEntry#retry: `msg["retry_count"] -= 1 if msg["retry_count"]`.
    if let Some(c) = job
        .get("retry_count")
        .and_then(|c| c.get().parse::<i64>().ok())
    {
        job.insert("retry_count".into(), raw((c - 1).to_string())?);
    }
    // Client#atomic_push: `entry["enqueued_at"] = now`, in the job's own time format.
    let ms = job
        .get("created_at")
        .or(job.get("enqueued_at"))
        .is_some_and(|t| is_millis(t.get()));
    let enq = if ms {
        now.timestamp_millis().to_string()
    } else {
        format!("{}", now.timestamp_micros() as f64 / 1e6)
    };
    job.insert("enqueued_at".into(), raw(enq)?);
    if count_redrive {
        let n = job
            .get(REDRIVE_COUNT_ATTRIBUTE)
            .and_then(|c| c.get().trim_matches('"').parse::<u64>().ok())
            .unwrap_or(0);
        job.insert(REDRIVE_COUNT_ATTRIBUTE.into(), raw((n + 1).to_string())?);
    }
    let out = serde_json::to_vec(&job).map_err(|e| e.to_string())?;
    Ok((queue, out))
}

/// Client.push's `validate` and `normalize_item` (Sidekiq 6.4, job_util.rb), which raise after
/// "Retry now" has taken the job out of the set: what they refuse is refused before, and what
/// they make of the queue (`default_worker_options`' `default` where there is none, a number or
/// boolean as its text) is the queue pushed to.
fn push_checks(
    class: Option<Value>,
    args_array: bool,
    queue: Option<Value>,
) -> Result<String, String> {
    if !class.is_some_and(|c| c.is_string()) || !args_array {
        return Err("sidekiq: the dead job has no `class` name and `args` array, which Sidekiq's push requires (\"Job must be a Hash with 'class' and 'args' keys\"); left dead".into());
    }
    match queue {
        None => Ok("default".to_string()),
        Some(Value::String(q)) if !q.is_empty() => Ok(q),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(v.to_string()),
        Some(_) => Err("sidekiq: the dead job's `queue` is empty, null or not a name, which Sidekiq's push refuses (\"Job must include a valid queue name\"); left dead".into()),
    }
}

/// A job's fields, in the member's order.
type Fields = serde_json::Map<String, Value>;

/// A member read once: its `args` as it spells them, byte for byte (through a `Value` an
/// integer beyond 2^64 became a float and `"caf\u00e9"` became `"café"`, and a copy would
/// carry that while the original was removed), and every other field. None where it is not a
/// JSON object. A member with `args` twice (which the one read refuses) is read again as a
/// value, its last `args` as that value's text.
fn parse_member(member: &[u8]) -> Option<(Option<Vec<u8>>, Fields)> {
    /// `args` when present, `null` too (as its text, as before).
    fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
        serde::Deserialize::deserialize(d).map(Some)
    }
    #[derive(serde::Deserialize)]
    struct Job<'a> {
        #[serde(borrow, default, deserialize_with = "present")]
        args: Option<&'a RawValue>,
        #[serde(flatten)]
        rest: Fields,
    }
    match serde_json::from_slice::<Job>(member) {
        Ok(j) => Some((j.args.map(|a| a.get().as_bytes().to_vec()), j.rest)),
        Err(_) => match serde_json::from_slice::<Value>(member).ok()? {
            Value::Object(mut o) => {
                let args = o.shift_remove("args").map(|a| a.to_string().into_bytes());
                Some((args, o))
            }
            _ => None,
        },
    }
}

/// The dead job `member` with its `args` replaced by `body` (`dlqctl edit`'s copy: a JSON
/// array), every other field kept byte for byte.
pub(super) fn with_args(member: &[u8], body: &[u8]) -> Result<Vec<u8>, String> {
    let mut job: IndexMap<String, Box<RawValue>> =
        serde_json::from_slice(member).map_err(|_| NOT_AN_OBJECT.to_string())?;
    let args = serde_json::from_slice::<Box<RawValue>>(body)
        .ok()
        .filter(|a| a.get().trim_start().starts_with('['))
        .ok_or("sidekiq: the edited body is not a JSON array (a job's args); left dead")?;
    job.insert("args".into(), args);
    serde_json::to_vec(&job).map_err(|e| e.to_string())
}

/// Sidekiq 8 writes times as integer milliseconds; up to 7, float seconds.
fn is_millis(t: &str) -> bool {
    !t.contains(['.', 'e', 'E']) && t.parse::<i64>().is_ok_and(|v| v > 100_000_000_000)
}

/// A Sidekiq time: float epoch seconds (up to 7) or integer epoch milliseconds (8).
pub(super) fn time_of(v: &Value) -> Option<DateTime<Utc>> {
    let f = v.as_f64()?;
    if f > 100_000_000_000.0 {
        DateTime::from_timestamp_millis(f as i64)
    } else {
        DateTime::from_timestamp_micros((f * 1e6).round() as i64)
    }
}

/// `error_backtrace`: an array of lines (Sidekiq 5), or base64 of zlib-deflated JSON of one
/// (6 and later; Ruby's `Base64.encode64` breaks it into lines).
fn backtrace(v: &Value) -> Option<String> {
    let lines = match v {
        Value::Array(a) => a.clone(),
        Value::String(s) => match decompress(s) {
            Some(a) => a,
            None => return Some(s.clone()),
        },
        _ => return None,
    };
    Some(
        lines
            .iter()
            .map(|l| l.as_str().map_or_else(|| l.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

fn decompress(s: &str) -> Option<Vec<Value>> {
    use std::io::Read;
    let clean: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(clean)
        .ok()?;
    let mut json = Vec::new();
    flate2::read::ZlibDecoder::new(&bytes[..])
        .take(16 << 20)
        .read_to_end(&mut json)
        .ok()?;
    serde_json::from_slice(&json).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sk(queue: Option<&str>) -> Sidekiq {
        Sidekiq {
            prefix: String::new(),
            set: SidekiqSet::Dead,
            queue: queue.map(str::to_string),
        }
    }

    fn entry(job: &str, score: f64) -> Entry {
        Entry {
            member: job.as_bytes().to_vec(),
            score,
        }
    }

    #[test]
    fn a_sidekiq_6_job_becomes_a_message() {
        let job = r#"{"retry":3,"queue":"mailers","class":"SendMail","args":[42,"x"],"jid":"b4a577edbccf1d805744efa9","created_at":1700000000.25,"enqueued_at":1700000100.5,"error_message":"boom","error_class":"RuntimeError","failed_at":1700000001.0,"retry_count":3,"retried_at":1700000200.0}"#;
        let m = sk(None).to_message(&entry(job, 1700000300.5)).unwrap();
        assert_eq!(m.id, "b4a577edbccf1d805744efa9");
        assert_eq!(m.body, br#"[42,"x"]"#);
        assert_eq!(m.receive_count, Some(4));
        assert_eq!(m.source.as_deref(), Some("mailers"));
        assert_eq!(m.error_text().as_deref(), Some("RuntimeError: boom"));
        assert_eq!(m.enqueued_at.unwrap().timestamp_millis(), 1700000000250);
        assert_eq!(
            m.dead_lettered_at.unwrap().timestamp_millis(),
            1700000300500
        );
        assert_eq!(m.attribute("class").unwrap().display(), "SendMail");
        assert!(sk(Some("default")).to_message(&entry(job, 1.0)).is_none());
    }

    /// One read of a member gives what two gave: the fields but `args` in order, `args` byte
    /// for byte (`null` as `null`), a member with `args` twice as its last value, and no job
    /// for a member that is not an object.
    #[test]
    fn a_member_is_read_once_into_its_args_and_fields() {
        let (args, rest) = parse_member(br#"{"b":1,"args":[1.10, "x"],"a":null}"#).unwrap();
        assert_eq!(args.as_deref(), Some(&br#"[1.10, "x"]"#[..]));
        assert_eq!(rest.keys().collect::<Vec<_>>(), ["b", "a"]);
        let (args, _) = parse_member(br#"{"args":null}"#).unwrap();
        assert_eq!(args.as_deref(), Some(&b"null"[..]));
        let (args, rest) = parse_member(br#"{"args":[1],"q":2,"args":[2]}"#).unwrap();
        assert_eq!((args.as_deref(), rest.len()), (Some(&b"[2]"[..]), 1));
        assert!(parse_member(b"[1]").is_none() && parse_member(b"nope").is_none());
        assert!(parse_member(br#"{"q":1}"#).unwrap().0.is_none());
    }

    /// A member that is not valid UTF-8 has an id `--id` can spell, the same on every read.
    #[test]
    fn a_member_that_is_not_utf8_has_a_hash_for_its_id() {
        let e = Entry {
            member: b"{\"jid\":\"x\xff\"}".to_vec(),
            score: 1.0,
        };
        let m = sk(None).to_message(&e).unwrap();
        assert!(
            m.id.starts_with("member-sha256:") && m.id.len() == 30,
            "{}",
            m.id
        );
        assert_eq!(m.id, m.native_id);
        assert_eq!(sk(None).to_message(&e).unwrap().id, m.id);
        let text = sk(None).to_message(&entry("not json", 1.0)).unwrap();
        assert_eq!(text.id, "not json");
    }

    #[test]
    fn a_sidekiq_8_job_has_millisecond_times_and_a_compressed_backtrace() {
        // Ruby: Base64.encode64(Zlib::Deflate.deflate(JSON.dump(["a.rb:1", "b.rb:2"]))).
        let lines = serde_json::to_vec(&["app/jobs/x.rb:12:in `perform'", "lib/y.rb:3"]).unwrap();
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut z, &lines).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(z.finish().unwrap());
        let wrapped = format!("{}\n{}\n", &b64[..20], &b64[20..]);
        let job = serde_json::json!({
            "queue": "default", "class": "X", "args": [], "jid": "j8",
            "created_at": 1700000000123i64, "failed_at": 1700000001000i64,
            "error_class": "ArgumentError", "error_message": "bad", "error_backtrace": wrapped,
        })
        .to_string();
        let m = sk(None).to_message(&entry(&job, 1700000002.0)).unwrap();
        assert_eq!(m.enqueued_at.unwrap().timestamp_millis(), 1700000000123);
        assert_eq!(
            m.error.unwrap().trace.as_deref(),
            Some("app/jobs/x.rb:12:in `perform'\nlib/y.rb:3")
        );
        let now = DateTime::from_timestamp_millis(1800000000000).unwrap();
        let (_, out) = retry_payload(job.as_bytes(), false, now).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["enqueued_at"], 1800000000000i64);
    }

    /// The body is the member's `args` byte for byte: what a copy elsewhere carries, once the
    /// dead job is gone.
    #[test]
    fn the_body_is_the_args_as_written() {
        let args = r#"[123456789012345678901234, 9007199254740993,1.10,"caf\u00e9","a\/b"]"#;
        let job = format!(r#"{{"class":"HardJob","args":{args},"jid":"big","queue":"q"}}"#);
        let m = sk(None).to_message(&entry(&job, 1700000300.5)).unwrap();
        assert_eq!(String::from_utf8(m.body).unwrap(), args);
    }

    #[test]
    fn the_retry_payload_is_what_sidekiq_pushes() {
        let job = r#"{"retry":3,"queue":"mailers","class":"SendMail","args":[12345678901234567890123,1.10],"jid":"j","created_at":1700000000.25,"retry_count":3}"#;
        let now = DateTime::from_timestamp_micros(1_800_000_000_123_456).unwrap();
        let (q, out) = retry_payload(job.as_bytes(), true, now).unwrap();
        assert_eq!(q, "mailers");
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            r#"{"retry":3,"queue":"mailers","class":"SendMail","args":[12345678901234567890123,1.10],"jid":"j","created_at":1700000000.25,"retry_count":2,"enqueued_at":1800000000.123456,"dlqctl-redrive-count":1}"#
        );
        let (_, again) = retry_payload(text.as_bytes(), true, now).unwrap();
        assert!(
            String::from_utf8(again)
                .unwrap()
                .contains(r#""dlqctl-redrive-count":2"#)
        );
        assert!(retry_payload(b"[1]", false, now).is_err());
        assert!(retry_payload(br#"{"jid":"x"}"#, false, now).is_err());
        // As Client.push's validate and normalize_item: no queue is `default` (with
        // `retry: true`), a number or a boolean is its text; an empty, null or other queue,
        // args that are not an array or no class are refused before the job leaves the set.
        let of = |job: &str| retry_payload(job.as_bytes(), false, now);
        let (q, out) = of(r#"{"class":"A","args":[]}"#).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            (q.as_str(), &v["queue"], &v["retry"]),
            ("default", &Value::from("default"), &Value::Bool(true))
        );
        let (q, out) = of(r#"{"class":"A","args":[],"queue":123,"retry":false}"#).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            (q.as_str(), &v["queue"], &v["retry"]),
            ("123", &Value::from("123"), &Value::Bool(false))
        );
        for bad in [
            r#"{"class":"A","args":[],"queue":""}"#,
            r#"{"class":"A","args":[],"queue":null}"#,
            r#"{"class":"A","args":[],"queue":{"a":1}}"#,
            r#"{"class":"A","args":{},"queue":"q"}"#,
            r#"{"args":[],"queue":"q"}"#,
        ] {
            assert!(of(bad).is_err(), "{bad}");
        }
    }
}
