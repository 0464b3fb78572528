//! Errors that a message's body embeds, for messages no carrier (attribute, header, column)
//! recorded one of (docs/config.md, "Where the error text comes from").

use serde_json::Value;

use crate::message::ErrorInfo;

/// An error a body embeds, for messages no carrier (attribute, header, column) recorded one
/// of. Only shapes that are errors by construction are read, never a business field that
/// happens to be called `error`:
/// - a Lambda destination's failure record: `responsePayload.errorType` / `.errorMessage`
///   (and `.stackTrace`);
/// - a Lambda error payload: top-level `errorType` / `errorMessage` / `stackTrace`;
/// - a serialised exception under `error` or `exception`: an object with a `message` and a
///   `type`, `class`, `name` or `stack`.
pub fn error_in_body(body: &[u8]) -> Option<ErrorInfo> {
    let start = body.iter().position(|b| !b.is_ascii_whitespace())?;
    if body[start] != b'{' || body.len() > 256 * 1024 {
        return None;
    }
    // Every shape read below has a key with `error` or `exception` in it; a body without
    // either (nor a `\u` escape that could spell one) is not parsed at all.
    let has = |needle: &[u8]| body.windows(needle.len()).any(|w| w == needle);
    if !has(b"error") && !has(b"exception") && !has(b"\\u") {
        return None;
    }
    let v: Value = serde_json::from_slice(body).ok()?;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let trace = |v: Option<&Value>| match v {
        Some(Value::Array(a)) => Some(
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        Some(Value::String(t)) => Some(t.clone()),
        _ => None,
    };
    let lambda = |p: &Value| {
        let (class, message) = (text(p, "errorType"), text(p, "errorMessage"));
        (class.is_some() || message.is_some()).then(|| ErrorInfo {
            class,
            message,
            trace: trace(p.get("stackTrace")),
        })
    };
    if let Some(e) = v.get("responsePayload").and_then(lambda) {
        return Some(e);
    }
    if let Some(e) = lambda(&v) {
        return Some(e);
    }
    for key in ["error", "exception"] {
        let Some(e) = v.get(key).filter(|e| e.is_object()) else {
            continue;
        };
        let class = text(e, "type").or(text(e, "class")).or(text(e, "name"));
        let message = text(e, "message");
        let stack = e.get("stack").or(e.get("backtrace"));
        if message.is_some() && (class.is_some() || stack.is_some()) {
            return Some(ErrorInfo {
                class,
                message,
                trace: trace(stack),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::error_in_body;

    #[test]
    fn lambda_failure_records_and_payloads_are_read() {
        let record = br#"{"version":"1.0","requestContext":{"condition":"RetriesExhausted","approximateInvokeCount":3},
            "requestPayload":{"order":7},"responsePayload":{"errorType":"Error","errorMessage":"connect ETIMEDOUT 10.0.0.5:5432","stackTrace":["at a.js:1"]}}"#;
        let e = error_in_body(record).unwrap();
        assert_eq!(e.class.as_deref(), Some("Error"));
        assert_eq!(
            e.message.as_deref(),
            Some("connect ETIMEDOUT 10.0.0.5:5432")
        );
        assert_eq!(e.trace.as_deref(), Some("at a.js:1"));
        let payload = br#"{"errorMessage":"Task timed out after 3.00 seconds","errorType":"Sandbox.Timedout"}"#;
        assert_eq!(
            error_in_body(payload).unwrap().class.as_deref(),
            Some("Sandbox.Timedout")
        );
    }

    #[test]
    fn a_serialised_exception_is_read_and_a_business_field_is_not() {
        let e = error_in_body(br#"{"exception":{"class":"ActiveRecord::RecordNotFound","message":"Couldn't find User"}}"#).unwrap();
        assert_eq!(e.class.as_deref(), Some("ActiveRecord::RecordNotFound"));
        // An event about a declined card is data, not the failure of its handler.
        assert_eq!(
            error_in_body(br#"{"status":"failed","error":"card declined"}"#),
            None
        );
        assert_eq!(
            error_in_body(br#"{"error":{"message":"card declined"}}"#),
            None
        );
        assert_eq!(error_in_body(b"not json"), None);
        assert_eq!(error_in_body(br#"["errorMessage"]"#), None);
        // A key spelled with an escape is still a key.
        let escaped = br#"{"\u0065rror":{"class":"E","message":"m"}}"#;
        assert_eq!(error_in_body(escaped).unwrap().class.as_deref(), Some("E"));
        assert_eq!(error_in_body(br#"{"order":7,"items":[]}"#), None);
    }
}
