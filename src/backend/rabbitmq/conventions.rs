//! What RabbitMQ and the frameworks on it record in a dead letter (docs/rabbitmq.md#what-a-dead-letter-says):
//!
//! * the broker: `x-death` (newest first, one entry per queue and reason), `x-first-death-*`,
//!   `x-last-death-*`, and quorum queues' `x-delivery-count`;
//! * Spring AMQP's `RepublishMessageRecoverer`: `x-exception-message`, `x-exception-stacktrace`
//!   (its first line is `Class: message`), `x-original-exchange`, `x-original-routingKey`;
//! * MassTransit's `_error` queues: `MT-Fault-ExceptionType`, `MT-Fault-Message`,
//!   `MT-Fault-StackTrace`, `MT-Fault-Timestamp`, `MT-Fault-InputAddress` (the endpoint's
//!   `rabbitmq://HOST/VHOST/QUEUE`), `MT-Reason`;
//! * NServiceBus's `error` queue: `NServiceBus.ExceptionInfo.ExceptionType`, `….Message`,
//!   `….StackTrace`, `NServiceBus.FailedQ` (`QUEUE` or `QUEUE@MACHINE`),
//!   `NServiceBus.TimeOfFailure` (`yyyy-MM-dd HH:mm:ss:ffffff Z`).

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use lapin::types::{AMQPValue, FieldTable};

use super::fields::{int, text};
use crate::message::ErrorInfo;

/// Where a dead letter came from and why, as its headers say.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeadLetter {
    /// `rabbitmq`, `spring-amqp`, `masstransit`, `nservicebus` (None: no convention).
    pub convention: Option<&'static str>,
    /// The queue it first died in (`x-first-death-queue`, MassTransit's input queue,
    /// NServiceBus's FailedQ).
    pub queue: Option<String>,
    /// The exchange and routing key it was published with (Spring's `x-original-*`, or the
    /// first death's `exchange` and `routing-keys`).
    pub exchange: Option<(String, String)>,
    /// `x-first-death-reason`: rejected, expired, maxlen, delivery_limit.
    pub reason: Option<String>,
    /// When it was dead-lettered (the newest `x-death` entry's time, or the framework's).
    pub at: Option<DateTime<Utc>>,
    /// Times dead-lettered (the `x-death` counts added up).
    pub deaths: Option<u32>,
    pub error: ErrorInfo,
}

fn get<'a>(h: &'a FieldTable, name: &str) -> Option<&'a AMQPValue> {
    h.inner().get(name)
}

fn get_text(h: &FieldTable, name: &str) -> Option<String> {
    get(h, name).and_then(text).filter(|s| !s.is_empty())
}

fn seconds(n: i64) -> Option<DateTime<Utc>> {
    Utc.timestamp_opt(n, 0).single()
}

/// Read the headers of a delivery.
pub fn read(h: &FieldTable) -> DeadLetter {
    let mut d = DeadLetter::default();
    broker(h, &mut d);
    if let Some(m) = get_text(h, "x-exception-message") {
        d.convention = Some("spring-amqp");
        let trace = get_text(h, "x-exception-stacktrace");
        d.error = ErrorInfo {
            class: trace.as_deref().and_then(first_class),
            message: Some(m),
            trace,
        };
        if let Some(e) = get_text(h, "x-original-exchange")
            .or_else(|| get(h, "x-original-exchange").map(|_| String::new()))
        {
            let rk = get_text(h, "x-original-routingKey").unwrap_or_default();
            d.exchange = Some((e, rk));
        }
    } else if let Some(t) = get_text(h, "MT-Fault-ExceptionType") {
        d.convention = Some("masstransit");
        d.error = ErrorInfo {
            class: Some(t),
            message: get_text(h, "MT-Fault-Message"),
            trace: get_text(h, "MT-Fault-StackTrace"),
        };
        if let Some(q) = get_text(h, "MT-Fault-InputAddress").and_then(|a| last_segment(&a)) {
            d.queue = Some(q);
        }
        if let Some(t) =
            get_text(h, "MT-Fault-Timestamp").and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
        {
            d.at = Some(t.with_timezone(&Utc));
        }
    } else if let Some(t) = get_text(h, "NServiceBus.ExceptionInfo.ExceptionType") {
        d.convention = Some("nservicebus");
        d.error = ErrorInfo {
            class: Some(t),
            message: get_text(h, "NServiceBus.ExceptionInfo.Message"),
            trace: get_text(h, "NServiceBus.ExceptionInfo.StackTrace"),
        };
        if let Some(q) = get_text(h, "NServiceBus.FailedQ") {
            // `QUEUE@MACHINE` on the transports that name the machine.
            d.queue = Some(q.split('@').next().unwrap_or(&q).to_string());
        }
        if let Some(t) = get_text(h, "NServiceBus.TimeOfFailure").and_then(|t| nsb_time(&t)) {
            d.at = Some(t);
        }
    } else if let Some(m) = get_text(h, "MT-Reason") {
        d.convention = Some("masstransit");
        d.error.message = Some(m);
    }
    d
}

/// The broker's own headers: `x-death` and `x-first-death-*`.
fn broker(h: &FieldTable, d: &mut DeadLetter) {
    let deaths: Vec<&FieldTable> = match get(h, "x-death") {
        Some(AMQPValue::FieldArray(a)) => a
            .as_slice()
            .iter()
            .filter_map(|v| match v {
                AMQPValue::FieldTable(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let first_queue = get_text(h, "x-first-death-queue");
    let first_reason = get_text(h, "x-first-death-reason");
    if deaths.is_empty() && first_queue.is_none() {
        return;
    }
    d.convention = Some("rabbitmq");
    d.at = deaths
        .first()
        .and_then(|t| get(t, "time"))
        .and_then(int)
        .and_then(seconds);
    let total: i64 = deaths
        .iter()
        .filter_map(|t| get(t, "count").and_then(int))
        .sum();
    d.deaths = u32::try_from(total).ok().filter(|n| *n > 0);
    // The first death's entry: its queue and reason, else the oldest entry.
    let first = deaths
        .iter()
        .find(|t| {
            get_text(t, "queue") == first_queue
                && (first_reason.is_none() || get_text(t, "reason") == first_reason)
        })
        .or(deaths.last());
    d.queue = first_queue.or_else(|| first.and_then(|t| get_text(t, "queue")));
    d.reason = first_reason.or_else(|| first.and_then(|t| get_text(t, "reason")));
    let exchange = get(h, "x-first-death-exchange")
        .map(|v| text(v).unwrap_or_default())
        .or_else(|| {
            first
                .and_then(|t| get(t, "exchange"))
                .map(|v| text(v).unwrap_or_default())
        });
    let key = first
        .and_then(|t| match get(t, "routing-keys") {
            Some(AMQPValue::FieldArray(a)) => a.as_slice().first().and_then(text),
            _ => None,
        })
        .unwrap_or_default();
    if let Some(e) = exchange {
        d.exchange = Some((e, key));
    }
}

/// The exception class on a Java stack trace's first line (`com.x.FooException: message`).
fn first_class(trace: &str) -> Option<String> {
    let line = trace.lines().next()?.trim();
    let class = line.split(':').next()?.trim();
    (!class.is_empty() && !class.contains(' ') && class.contains('.')).then(|| class.to_string())
}

/// The last path segment of `rabbitmq://HOST/VHOST/QUEUE?params`.
fn last_segment(address: &str) -> Option<String> {
    let u = url::Url::parse(address).ok()?;
    let seg = u.path_segments()?.rev().find(|s| !s.is_empty())?;
    percent_encoding::percent_decode_str(seg)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

/// NServiceBus's wire format: `2026-12-04 10:11:12:123456 Z`.
fn nsb_time(s: &str) -> Option<DateTime<Utc>> {
    let t = s.trim().trim_end_matches('Z').trim();
    NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S:%6f")
        .ok()
        .map(|n| n.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;
    use lapin::types::{FieldArray, LongString};

    fn s(v: &str) -> AMQPValue {
        AMQPValue::LongString(LongString::from(v.as_bytes().to_vec()))
    }

    fn table(pairs: &[(&str, AMQPValue)]) -> FieldTable {
        let mut t = FieldTable::default();
        for (k, v) in pairs {
            t.insert((*k).into(), v.clone());
        }
        t
    }

    #[test]
    fn the_brokers_headers() {
        let newest = table(&[
            ("queue", s("orders.retry")),
            ("reason", s("expired")),
            ("count", AMQPValue::LongLongInt(2)),
            ("time", AMQPValue::Timestamp(1_733_400_000)),
        ]);
        let first = table(&[
            ("queue", s("orders")),
            ("reason", s("rejected")),
            ("count", AMQPValue::LongLongInt(3)),
            ("exchange", s("shop")),
            (
                "routing-keys",
                AMQPValue::FieldArray(FieldArray::from(vec![s("order.created")])),
            ),
            ("time", AMQPValue::Timestamp(1_733_300_000)),
        ]);
        let h = table(&[
            (
                "x-death",
                AMQPValue::FieldArray(FieldArray::from(vec![
                    AMQPValue::FieldTable(newest),
                    AMQPValue::FieldTable(first),
                ])),
            ),
            ("x-first-death-queue", s("orders")),
            ("x-first-death-reason", s("rejected")),
            ("x-first-death-exchange", s("shop")),
        ]);
        let d = read(&h);
        assert_eq!(d.convention, Some("rabbitmq"));
        assert_eq!(d.queue.as_deref(), Some("orders"));
        assert_eq!(d.reason.as_deref(), Some("rejected"));
        assert_eq!(d.exchange, Some(("shop".into(), "order.created".into())));
        assert_eq!(d.deaths, Some(5));
        assert_eq!(d.at.map(|t| t.timestamp()), Some(1_733_400_000));
    }

    #[test]
    fn the_frameworks_headers() {
        let spring = read(&table(&[
            ("x-exception-message", s("boom")),
            (
                "x-exception-stacktrace",
                s(
                    "org.springframework.amqp.AmqpRejectAndDontRequeueException: boom\n\tat x.Y.z(Y.java:1)",
                ),
            ),
            ("x-original-exchange", s("")),
            ("x-original-routingKey", s("orders")),
        ]));
        assert_eq!(spring.convention, Some("spring-amqp"));
        assert_eq!(
            spring.error.class.as_deref(),
            Some("org.springframework.amqp.AmqpRejectAndDontRequeueException")
        );
        assert_eq!(spring.exchange, Some((String::new(), "orders".into())));
        let mt = read(&table(&[
            ("MT-Fault-ExceptionType", s("System.TimeoutException")),
            ("MT-Fault-Message", s("The operation has timed out.")),
            (
                "MT-Fault-InputAddress",
                s("rabbitmq://mq/shop/submit-order?temporary=false"),
            ),
            ("MT-Fault-Timestamp", s("2026-12-04T10:11:12.5Z")),
        ]));
        assert_eq!(mt.queue.as_deref(), Some("submit-order"));
        assert_eq!(
            mt.error.message.as_deref(),
            Some("The operation has timed out.")
        );
        assert!(mt.at.is_some());
        let nsb = read(&table(&[
            (
                "NServiceBus.ExceptionInfo.ExceptionType",
                s("System.InvalidOperationException"),
            ),
            (
                "NServiceBus.ExceptionInfo.Message",
                s("Operation is not valid"),
            ),
            ("NServiceBus.FailedQ", s("Sales@MACHINE1")),
            (
                "NServiceBus.TimeOfFailure",
                s("2026-12-04 10:11:12:123456 Z"),
            ),
        ]));
        assert_eq!(nsb.queue.as_deref(), Some("Sales"));
        assert_eq!(
            nsb.at.map(|t| t.to_rfc3339()),
            Some("2026-12-04T10:11:12.123456+00:00".into())
        );
        assert_eq!(read(&FieldTable::default()), DeadLetter::default());
    }
}
