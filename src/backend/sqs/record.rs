//! A received SQS message as dlqctl's neutral message: its attributes, the failure reason an
//! application recorded, the system attributes and the stable id.

use aws_sdk_sqs::types::MessageSystemAttributeName;
use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;

use super::{STABLE_ID_ATTRIBUTE, SqsBackend};
use crate::message::{AttrValue, Attribute, ErrorInfo, Message};

/// Attributes read as the failure reason, when an application records one (compared in
/// lower case). `ErrorMessage` is what Lambda's asynchronous-invocation DLQ sets;
/// `ERROR_MESSAGE` what EventBridge's and SNS's DLQs set.
const ERROR_ATTRS: &[&str] = &[
    "error",
    "error_message",
    "errormessage",
    "x-error",
    "x-error-message",
    "exception",
    "exception_message",
    "failure_reason",
    "dlq_reason",
    "dead_letter_reason",
];
const ERROR_CLASS_ATTRS: &[&str] = &[
    "error_class",
    "errortype",
    "error_type",
    "exception_class",
    "exception_type",
    "x-error-class",
];
/// Error codes, read as the class when no class is recorded: EventBridge's and SNS's
/// `ERROR_CODE` (`THROTTLING`, `NO_PERMISSIONS`, …), Lambda's `ErrorCode` (the invocation's
/// HTTP status; a 2xx there says nothing about the failure and is left out).
const ERROR_CODE_ATTRS: &[&str] = &["error_code", "errorcode"];

pub(super) fn system_attr(
    m: &aws_sdk_sqs::types::Message,
    k: MessageSystemAttributeName,
) -> Option<&str> {
    m.attributes().and_then(|a| a.get(&k)).map(String::as_str)
}

pub(super) fn millis(s: Option<&str>) -> Option<DateTime<Utc>> {
    s.and_then(|v| v.parse::<i64>().ok())
        .and_then(|ms| Utc.timestamp_millis_opt(ms).single())
}

impl SqsBackend {
    pub(super) fn to_message(&self, m: &aws_sdk_sqs::types::Message) -> Message {
        let mut attributes: Vec<Attribute> = m
            .message_attributes()
            .map(|a| {
                a.iter()
                    .map(|(name, v)| {
                        let ty = v.data_type().to_string();
                        let value = if ty.starts_with("Binary") {
                            AttrValue::Binary {
                                data_type: ty.into(),
                                value: v
                                    .binary_value()
                                    .map(|b| b.as_ref().to_vec())
                                    .unwrap_or_default(),
                            }
                        } else {
                            AttrValue::Text {
                                data_type: ty.into(),
                                value: v.string_value().unwrap_or_default().to_string(),
                            }
                        };
                        Attribute {
                            name: name.clone(),
                            value,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        attributes.sort_by(|a, b| a.name.cmp(&b.name));
        let native_id = m.message_id().unwrap_or_default().to_string();
        let find = |names: &[&str]| {
            attributes
                .iter()
                .find(|a| names.contains(&a.name.to_ascii_lowercase().as_str()))
                .map(|a| a.value.display())
        };
        let code = find(ERROR_CODE_ATTRS).filter(|c| !c.starts_with('2') || c.len() != 3);
        let error = match (find(ERROR_CLASS_ATTRS).or(code), find(ERROR_ATTRS)) {
            (None, None) => None,
            (class, message) => Some(ErrorInfo {
                class,
                message,
                trace: None,
            }),
        };
        let mut msg = Message {
            id: native_id.clone(),
            native_id,
            body: m.body().unwrap_or_default().as_bytes().to_vec(),
            key: None,
            group: system_attr(m, MessageSystemAttributeName::MessageGroupId).map(str::to_string),
            dedup_id: system_attr(m, MessageSystemAttributeName::MessageDeduplicationId)
                .map(str::to_string),
            partition: None,
            receive_count: system_attr(m, MessageSystemAttributeName::ApproximateReceiveCount)
                .and_then(|v| v.parse().ok()),
            enqueued_at: millis(system_attr(m, MessageSystemAttributeName::SentTimestamp)),
            dead_lettered_at: None,
            error,
            source: system_attr(m, MessageSystemAttributeName::DeadLetterQueueSourceArn)
                .map(str::to_string),
            meta: Default::default(),
            attributes,
            id_attribute: None,
        };
        msg.meta.insert("queue", Value::String(self.name.clone()));
        if let Some(seq) = system_attr(m, MessageSystemAttributeName::SequenceNumber) {
            msg.meta
                .insert("sequence_number", Value::String(seq.to_string()));
        }
        if let Some(Attribute { value, .. }) = msg
            .attributes
            .iter()
            .find(|a| a.name == STABLE_ID_ATTRIBUTE)
        {
            msg.id = value.display();
        }
        crate::backend::finish_read(&mut msg, self.id.as_ref());
        msg
    }
}
