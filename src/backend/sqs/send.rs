//! Sending copies into an SQS queue: validate each message against what SQS accepts, pack
//! batches of ≤10 entries within the target's MaximumMessageSize, send batches in parallel
//! (bounded), and read `Failed[]` entry by entry.

use std::collections::HashMap;
use std::sync::OnceLock;

use aws_sdk_sqs::primitives::Blob;
use aws_sdk_sqs::types::builders::SendMessageBatchRequestEntryBuilder;
use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
use futures::StreamExt;

use super::{STABLE_ID_ATTRIBUTE, SqsBackend, sdk_err};
use crate::backend::{DedupStrategy, SendOutcome};
use crate::error::Result;
use crate::message::{AttrValue, Message};

pub const MAX_ATTRIBUTES: usize = 10;

/// Characters SQS allows in a body or string attribute.
fn allowed(c: char) -> bool {
    matches!(c, '\u{9}' | '\u{a}' | '\u{d}' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..='\u{10ffff}')
}

fn valid_attr_name(n: &str) -> bool {
    let lower = n.to_ascii_lowercase();
    !n.is_empty()
        && n.len() <= 256
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !n.starts_with('.')
        && !n.ends_with('.')
        && !n.contains("..")
        && !lower.starts_with("aws.")
        && !lower.starts_with("amazon.")
}

pub struct Prepared {
    entry: SendMessageBatchRequestEntry,
    size: usize,
}

/// One id per process run.
fn run_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        format!(
            "{:012x}",
            fnv1a(format!("{t}-{}", std::process::id()).as_bytes()) & 0xffff_ffff_ffff
        )
    })
}

fn fnv1a(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
        (h ^ *x as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// Everything SQS would refuse, refused here with a reason; nothing is silently dropped.
pub fn prepare(b: &SqsBackend, i: usize, m: &Message) -> std::result::Result<Prepared, String> {
    let body = text_body(m)?;
    let (mut attrs, attrs_size) = attributes(m)?;
    let mut size = body.len() + attrs_size;
    make_room_for_id(m, &mut attrs);
    if attrs.len() > MAX_ATTRIBUTES {
        return Err(too_many_attributes(attrs.len()));
    }
    let id_size = carry_stable_id(m, &mut attrs)?;
    size += id_size;
    if attrs.len() > MAX_ATTRIBUTES {
        return Err(too_many_attributes(attrs.len()));
    }
    let count = count_bytes(&attrs);
    if size > b.max_size && count > 0 && size - count <= b.max_size {
        drop_count(b, m, &mut attrs);
        size -= count;
    }
    // Where `dlqctl-stable-id` alone stands over the size, the configured id attribute,
    // which holds the id, carries it alone (as where the 10 attributes leave no room; a
    // reader of the target then needs the same `id` rule).
    if size > b.max_size
        && id_size > 0
        && size - id_size <= b.max_size
        && m.attributes.iter().any(|a| m.carries_id(a))
    {
        attrs.remove(STABLE_ID_ATTRIBUTE);
        size -= id_size;
    }
    if size > b.max_size {
        return Err(too_big(b, size, count, id_size));
    }
    let e = SendMessageBatchRequestEntry::builder()
        .id(format!("m{i}"))
        .message_body(body)
        .set_message_attributes(Some(attrs));
    Ok(Prepared {
        entry: with_group(b, m, e)?.build().map_err(|e| e.to_string())?,
        size,
    })
}

/// The body as SQS text: UTF-8, of characters SQS allows, not empty.
fn text_body(m: &Message) -> std::result::Result<&str, String> {
    let body = std::str::from_utf8(&m.body).map_err(|_| {
        "the body is binary (not UTF-8); SQS bodies are text: export it and replay it into a backend that takes bytes, or base64 it first".to_string()
    })?;
    if let Some(bad) = body.chars().find(|c| !allowed(*c)) {
        return Err(format!(
            "the body contains U+{:04X}, which SQS does not allow in a message",
            bad as u32
        ));
    }
    if body.is_empty() {
        return Err("the body is empty; SQS needs at least one character".into());
    }
    Ok(body)
}

/// The message's attributes or headers as SQS attributes, each name valid and used once, with
/// the bytes they count towards MaximumMessageSize.
fn attributes(
    m: &Message,
) -> std::result::Result<(HashMap<String, MessageAttributeValue>, usize), String> {
    let mut attrs: HashMap<String, MessageAttributeValue> = HashMap::new();
    let mut size = 0;
    for a in &m.attributes {
        if !valid_attr_name(&a.name) {
            return Err(format!(
                "attribute/header name `{}` is not a valid SQS attribute name",
                a.name
            ));
        }
        if attrs.contains_key(&a.name) {
            return Err(format!(
                "attribute/header `{}` appears more than once; SQS attributes are unique (one value per name): leave it out with --strip-header '{}', or send to a target that keeps every value (PostgreSQL, Kafka, RabbitMQ, a file)",
                a.name, a.name
            ));
        }
        let (v, bytes) = attribute_value(&a.name, &a.value)?;
        size += bytes;
        attrs.insert(a.name.clone(), v);
    }
    Ok((attrs, size))
}

/// One attribute's value as SQS carries it (a JSON one as `String.json`), and its size: name,
/// data type and value.
fn attribute_value(
    name: &str,
    value: &AttrValue,
) -> std::result::Result<(MessageAttributeValue, usize), String> {
    let (v, size) = match value {
        AttrValue::Null => {
            return Err(format!(
                "header `{name}` has a null value, which SQS cannot carry"
            ));
        }
        AttrValue::Text { data_type, value } => {
            if value.is_empty() {
                return Err(empty_refusal(name));
            }
            if let Some(bad) = value.chars().find(|c| !allowed(*c)) {
                return Err(format!(
                    "attribute `{name}` contains U+{:04X}, which SQS does not allow",
                    bad as u32
                ));
            }
            let ty = if data_type == "Json" {
                "String.json"
            } else {
                data_type.as_ref()
            };
            (
                MessageAttributeValue::builder()
                    .data_type(ty)
                    .string_value(value)
                    .build(),
                name.len() + ty.len() + value.len(),
            )
        }
        AttrValue::Binary { data_type, value } => (
            MessageAttributeValue::builder()
                .data_type(data_type.as_ref())
                .binary_value(Blob::new(value.clone()))
                .build(),
            name.len() + data_type.len() + value.len(),
        ),
    };
    let v = v.map_err(|e| format!("attribute `{name}`: {e}"))?;
    Ok((v, size))
}

/// Why an empty attribute cannot go (SQS refuses an empty String value, and has no way to
/// say "empty" that another reader would understand), and the fix.
fn empty_refusal(name: &str) -> String {
    let broker = if name.starts_with("x-first-death-") || name.starts_with("x-last-death-") {
        " (RabbitMQ leaves it empty for a message dead-lettered through the default exchange)"
    } else {
        ""
    };
    format!(
        "attribute `{name}` is empty{broker}; SQS needs a value: leave it out with --strip-header '{name}'"
    )
}

/// The loop guard's count gives way to the user's attributes and the stable id: a copy
/// that would need an 11th attribute for it goes without (docs/sqs.md). Where the configured
/// id attribute holds the id, the stable id can go without `dlqctl-stable-id` instead (see
/// [`carry_stable_id`]), and the count stays.
fn make_room_for_id(m: &Message, attrs: &mut HashMap<String, MessageAttributeValue>) {
    let needs_id = !m.id.is_empty()
        && !m.attributes.iter().any(|a| m.carries_id(a))
        && !attrs.contains_key(STABLE_ID_ATTRIBUTE);
    if attrs.len() + usize::from(needs_id) > MAX_ATTRIBUTES
        && attrs
            .remove(crate::message::REDRIVE_COUNT_ATTRIBUTE)
            .is_some()
    {
        tracing::debug!(id = %m.id, "no room for dlqctl-redrive-count among 10 attributes");
    }
}

/// The bytes `dlqctl-redrive-count` takes (0 without it).
fn count_bytes(attrs: &HashMap<String, MessageAttributeValue>) -> usize {
    let name = crate::message::REDRIVE_COUNT_ATTRIBUTE;
    attrs.get(name).map_or(0, |v| {
        name.len()
            + v.data_type().len()
            + v.string_value().map_or(0, str::len)
            + v.binary_value().map_or(0, |v| v.as_ref().len())
    })
}

/// The loop guard's count gives way for size too: a copy over the target's
/// MaximumMessageSize only because of `dlqctl-redrive-count` goes without it, and the run says
/// so (warned here, and in the summary: [`SqsBackend::uncounted`]); its count starts again
/// from 1 on its next redrive.
fn drop_count(b: &SqsBackend, m: &Message, attrs: &mut HashMap<String, MessageAttributeValue>) {
    let name = crate::message::REDRIVE_COUNT_ATTRIBUTE;
    attrs.remove(name);
    if b.uncounted(&m.id) {
        tracing::warn!(
            id = %m.id,
            "sent without {name}: with it the copy would be over the target's MaximumMessageSize ({} bytes), so --max-redrives counts it from 0 again",
            b.max_size
        );
    }
}

/// Why a copy of `size` bytes cannot go, with what dlqctl's own attributes take of it
/// (`count`: the loop guard's, `id`: the stable id's).
fn too_big(b: &SqsBackend, size: usize, count: usize, id: usize) -> String {
    let mut ours = Vec::new();
    if count > 0 {
        ours.push(format!(
            "{count} for {}",
            crate::message::REDRIVE_COUNT_ATTRIBUTE
        ));
    }
    if id > 0 {
        ours.push(format!("{id} for {STABLE_ID_ATTRIBUTE}"));
    }
    let mut why = format!(
        "{size} bytes is more than the target's MaximumMessageSize ({} bytes)",
        b.max_size
    );
    if !ours.is_empty() {
        why.push_str(&format!(
            ", of which dlqctl's own attributes take {}",
            ours.join(" and ")
        ));
    }
    if id > 0 && size - count - id <= b.max_size {
        why.push_str(&format!(
            ": without {STABLE_ID_ATTRIBUTE} it would fit; set `id = \"attribute:NAME\"` to an attribute of the message that holds its id, or leave an attribute out with --strip-header NAME"
        ));
    }
    why
}

/// Carries the stable id in `dlqctl-stable-id` when that attribute does not hold it yet (SQS
/// gives every copy a new MessageId); returns the bytes that adds. A copy without it would
/// break "same id, every time": refuse instead.
fn carry_stable_id(
    m: &Message,
    attrs: &mut HashMap<String, MessageAttributeValue>,
) -> std::result::Result<usize, String> {
    // `dlqctl-stable-id` is read as the id with no rule configured; the attribute a source's
    // `id` rule names (`attribute:message_id`) only where the target queue has that rule too.
    if m.id.is_empty() || m.attributes.iter().any(|a| m.holds_stable_id(a)) {
        return Ok(0);
    }
    // A stale `dlqctl-stable-id` (another value) is replaced, not kept beside the id.
    attrs.remove(STABLE_ID_ATTRIBUTE);
    if attrs.len() >= MAX_ATTRIBUTES {
        // No room: the configured id attribute, which holds the id, carries it alone (a reader
        // of the target needs the same `id` rule).
        if m.attributes.iter().any(|a| m.carries_id(a)) {
            return Ok(0);
        }
        return Err(format!(
            "{} attributes and none carries the stable id, which needs an 11th (SQS allows {MAX_ATTRIBUTES}): set `id = \"attribute:NAME\"` to an attribute that holds the id",
            attrs.len()
        ));
    }
    let ty = "String";
    attrs.insert(
        STABLE_ID_ATTRIBUTE.into(),
        MessageAttributeValue::builder()
            .data_type(ty)
            .string_value(&m.id)
            .build()
            .map_err(|e| e.to_string())?,
    );
    Ok(STABLE_ID_ATTRIBUTE.len() + ty.len() + m.id.len())
}

fn too_many_attributes(n: usize) -> String {
    format!("{n} attributes; SQS allows at most {MAX_ATTRIBUTES} per message")
}

/// The copy's MessageGroupId and, on a FIFO queue (where the group is required), its
/// MessageDeduplicationId.
fn with_group(
    b: &SqsBackend,
    m: &Message,
    e: SendMessageBatchRequestEntryBuilder,
) -> std::result::Result<SendMessageBatchRequestEntryBuilder, String> {
    if !b.fifo {
        // Standard queues take a MessageGroupId too (fair queues): keep it.
        return Ok(match m.group.clone() {
            Some(g) => e.message_group_id(g),
            None => e,
        });
    }
    let group = m.group.clone().or_else(|| {
        m.key
            .as_deref()
            .and_then(|k| std::str::from_utf8(k).ok())
            .map(str::to_string)
    });
    let Some(g) = group else {
        return Err("the target is a FIFO queue and the message has no group (MessageGroupId) or key to use as one; give it one with --transform '.group = \"NAME\"' (or send it to a standard queue)".into());
    };
    if g.len() > 128 {
        return Err("MessageGroupId longer than 128 characters".into());
    }
    let dedup = dedup_id(b, m);
    if dedup.len() > 128 {
        return Err(
            "MessageDeduplicationId longer than 128 characters (use --dedup-id per-run)".into(),
        );
    }
    Ok(e.message_group_id(g).message_deduplication_id(dedup))
}

/// The MessageDeduplicationId `--dedup-id` asks for.
fn dedup_id(b: &SqsBackend, m: &Message) -> String {
    match b.opts.dedup {
        DedupStrategy::Keep => m.dedup_id.clone().unwrap_or_else(|| m.id.clone()),
        DedupStrategy::StableId => m.id.clone(),
        // Stable id and native id: two different messages sharing a stable id must not
        // collide (SQS would drop the second silently).
        DedupStrategy::PerRun => format!(
            "dlqctl-{}-{:016x}",
            run_id(),
            fnv1a(format!("{}\u{0}{}", m.id, m.native_id).as_bytes())
        ),
    }
}

pub async fn send(b: &SqsBackend, batch: &[Message]) -> Result<Vec<SendOutcome>> {
    let mut out: Vec<Option<SendOutcome>> = vec![None; batch.len()];
    let mut ready: Vec<(usize, Prepared)> = Vec::new();
    for (i, m) in batch.iter().enumerate() {
        match prepare(b, i, m) {
            Ok(p) => ready.push((i, p)),
            Err(reason) => out[i] = Some(SendOutcome::Rejected { reason }),
        }
    }
    // Pack: ≤10 entries and ≤ MaximumMessageSize per request.
    let mut packs: Vec<Vec<(usize, Prepared)>> = Vec::new();
    let mut cur: Vec<(usize, Prepared)> = Vec::new();
    let mut cur_size = 0;
    for (i, p) in ready {
        if !cur.is_empty() && (cur.len() == 10 || cur_size + p.size > b.max_size) {
            packs.push(std::mem::take(&mut cur));
            cur_size = 0;
        }
        cur_size += p.size;
        cur.push((i, p));
    }
    if !cur.is_empty() {
        packs.push(cur);
    }
    // FIFO order holds within a group only if its packs go out one after another.
    let parallel = if b.fifo { 1 } else { b.opts.parallel.max(1) };
    let mut results = futures::stream::iter(packs.into_iter().map(|pack| async move {
        let idx: Vec<usize> = pack.iter().map(|(i, _)| *i).collect();
        let entries = pack.into_iter().map(|(_, p)| p.entry).collect();
        let r = b
            .client
            .send_message_batch()
            .queue_url(&b.url)
            .set_entries(Some(entries))
            .send()
            .await;
        (idx, r)
    }))
    .buffer_unordered(parallel);
    let mut first_err = None;
    while let Some((idx, r)) = results.next().await {
        match r {
            Ok(o) => {
                for s in o.successful() {
                    if let Some(i) = s
                        .id()
                        .strip_prefix('m')
                        .and_then(|n| n.parse::<usize>().ok())
                    {
                        out[i] = Some(SendOutcome::Sent);
                    }
                }
                for f in o.failed() {
                    if let Some(i) = f
                        .id()
                        .strip_prefix('m')
                        .and_then(|n| n.parse::<usize>().ok())
                    {
                        out[i] = Some(SendOutcome::Rejected {
                            reason: format!("{}: {}", f.code(), f.message().unwrap_or_default()),
                        });
                    }
                }
                for i in idx {
                    if out[i].is_none() {
                        out[i] = Some(SendOutcome::Rejected {
                            reason: "missing from the SendMessageBatch response".into(),
                        });
                    }
                }
            }
            Err(e) => {
                // A whole request failed: those entries are unknown, the rest may have gone.
                // Entries already accepted must still be reported (and deleted by the caller),
                // so record the error and carry on collecting.
                let err = sdk_err(&b.shown(), e);
                for i in idx {
                    out[i] = Some(SendOutcome::Rejected {
                        reason: format!("request failed: {err}"),
                    });
                }
                first_err.get_or_insert(err);
            }
        }
    }
    if let Some(e) = first_err
        && !out.iter().any(|o| matches!(o, Some(SendOutcome::Sent)))
    {
        return Err(e);
    }
    Ok(out
        .into_iter()
        .map(|o| {
            o.unwrap_or(SendOutcome::Rejected {
                reason: "not sent".into(),
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    //! Partial batch failures come back as HTTP 200 with `Failed[]` (moto never produces
    //! them for these inputs), so this runs against a recorded exchange.
    use super::*;
    use crate::address::Address;
    use crate::backend::QueueSink;
    use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
    use aws_smithy_http_client::test_util::{ReplayEvent, StaticReplayClient};
    use aws_smithy_types::body::SdkBody;

    fn backend(resp: &str) -> SqsBackend {
        let http = StaticReplayClient::new(vec![ReplayEvent::new(
            http::Request::builder()
                .uri("https://sqs.us-east-1.amazonaws.com/")
                .body(SdkBody::empty())
                .unwrap(),
            http::Response::builder()
                .status(200)
                .body(SdkBody::from(resp.to_string()))
                .unwrap(),
        )]);
        let conf = aws_sdk_sqs::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::for_tests())
            .http_client(http)
            .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
            .build();
        SqsBackend {
            addr: Address::parse("sqs://orders").unwrap(),
            client: aws_sdk_sqs::Client::from_conf(conf),
            url: "https://sqs.us-east-1.amazonaws.com/123456789012/orders".into(),
            arn: "arn:aws:sqs:us-east-1:123456789012:orders".into(),
            name: "orders".into(),
            attrs: Default::default(),
            fifo: false,
            max_size: 1_048_576,
            id: None,
            opts: Default::default(),
            held: Default::default(),
            inflight: Default::default(),
            reads: Default::default(),
            sources: Default::default(),
            uncounted: Default::default(),
        }
    }

    fn msg(id: &str) -> Message {
        Message {
            id: id.into(),
            native_id: id.into(),
            body: format!("{{\"id\":\"{id}\"}}").into_bytes(),
            ..Message::default()
        }
    }

    /// Operator report (2026-12-06): a RabbitMQ DLQ purged into SQS failed on every message
    /// with "`x-first-death-exchange` is empty; SQS needs a value", no hint; a repeated name
    /// must not lose a value. Both are refused before anything is sent (the dry run's check),
    /// each naming the fix.
    #[test]
    fn an_empty_or_repeated_attribute_is_refused_with_the_fix() {
        let b = backend("{}");
        let with = |attrs: &[(&str, &str)]| {
            let mut m = msg("a");
            m.attributes = attrs
                .iter()
                .map(|(n, v)| crate::message::Attribute {
                    name: (*n).into(),
                    value: AttrValue::text(*v),
                })
                .collect();
            m
        };
        let e = prepare(&b, 0, &with(&[("x-first-death-exchange", "")]))
            .err()
            .unwrap();
        assert!(
            e.contains("--strip-header 'x-first-death-exchange'") && e.contains("default exchange"),
            "{e}"
        );
        let e = prepare(&b, 0, &with(&[("dup", "first"), ("dup", "second")]))
            .err()
            .unwrap();
        assert!(
            e.contains("appears more than once") && e.contains("--strip-header 'dup'"),
            "{e}"
        );
    }

    /// Operator report (op5): a message at the target's MaximumMessageSize could never be
    /// redriven, because the count dlqctl adds (`dlqctl-redrive-count`) pushed the copy over.
    /// The count gives way (the copy goes without it, and the run says so); what is over
    /// anyway is refused, naming dlqctl's stable-id attribute when that makes the difference.
    #[test]
    fn the_redrive_count_gives_way_for_size() {
        let mut b = backend("{}");
        b.max_size = 1000;
        let stable = STABLE_ID_ATTRIBUTE.len() + "String".len() + "big".len();
        let count = crate::message::REDRIVE_COUNT_ATTRIBUTE.len() + "String".len() + 1;
        let sized = |body: usize| {
            let mut m = Message {
                body: vec![b'b'; body],
                ..msg("big")
            };
            m.count_redrive();
            m
        };
        let at_limit = sized(1000 - stable);
        let p = prepare(&b, 0, &at_limit).unwrap();
        assert_eq!(p.size, 1000);
        let attrs = p.entry.message_attributes().unwrap();
        assert!(!attrs.contains_key(crate::message::REDRIVE_COUNT_ATTRIBUTE));
        assert!(attrs.contains_key(STABLE_ID_ATTRIBUTE));
        let notes = QueueSink::notes(&b);
        assert!(
            notes.len() == 1 && notes[0].contains("1 copy") && notes[0].contains("(e.g. big)"),
            "{notes:?}"
        );
        let fits = sized(1000 - stable - count);
        let p = prepare(&b, 0, &fits).unwrap();
        assert!(
            p.entry
                .message_attributes()
                .unwrap()
                .contains_key(crate::message::REDRIVE_COUNT_ATTRIBUTE),
            "a copy that fits keeps its count"
        );
        let e = prepare(&b, 0, &sized(1000 - stable + 1)).err().unwrap();
        assert!(
            e.contains(&format!("{} bytes", 1001 + count))
                && e.contains("without dlqctl-stable-id it would fit"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn failed_entries_are_reported_one_by_one() {
        let b = backend(
            r#"{"Successful":[{"Id":"m0","MessageId":"x0","MD5OfMessageBody":"-"},{"Id":"m2","MessageId":"x2","MD5OfMessageBody":"-"}],
                "Failed":[{"Id":"m1","SenderFault":false,"Code":"InternalError","Message":"try again"}]}"#,
        );
        let out = send(&b, &[msg("a"), msg("b"), msg("c")]).await.unwrap();
        assert_eq!(out[0], SendOutcome::Sent);
        assert_eq!(
            out[1],
            SendOutcome::Rejected {
                reason: "InternalError: try again".into()
            }
        );
        assert_eq!(out[2], SendOutcome::Sent);
    }

    #[test]
    fn packing_respects_count_and_size() {
        let b = backend("{}");
        let big = Message {
            body: vec![b'x'; 400_000],
            ..msg("big")
        };
        let mut sizes = Vec::new();
        for (i, m) in [big.clone(), big.clone(), big].iter().enumerate() {
            sizes.push(prepare(&b, i, m).unwrap().size);
        }
        assert!(
            sizes.iter().sum::<usize>() > b.max_size,
            "three 400 kB messages do not fit one request"
        );
        let e = prepare(
            &b,
            0,
            &Message {
                body: "a\u{0}b".into(),
                ..msg("nul")
            },
        )
        .err()
        .unwrap();
        assert!(e.contains("U+0000"), "{e}");
    }
}
