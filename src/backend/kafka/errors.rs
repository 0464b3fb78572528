//! Kafka errors as dlqctl's: which are the user's to fix, which pass by themselves (librdkafka
//! recovers), and what a read that fell idle in trouble reports.

use std::time::Duration;

use rdkafka::error::KafkaError;

use crate::error::{Error, Result};

pub(super) fn kafka_err(target: &str, e: KafkaError) -> Error {
    client_err(target, None, e)
}

/// [`kafka_err`] for the creation of a client: a property librdkafka refuses is named with
/// the config file it was read from (`file`).
pub(super) fn client_err(target: &str, file: Option<&std::path::Path>, e: KafkaError) -> Error {
    // Never show a property's value: it may be a password.
    if let KafkaError::ClientConfig(_, desc, key, _value) = &e {
        return Error::Config {
            path: crate::config::file_name(file).into(),
            reason: format!("[kafka.properties] `{key}`: {desc}"),
        };
    }
    use rdkafka::types::RDKafkaErrorCode as C;
    let code = e.rdkafka_error_code();
    match code {
        Some(C::UnknownTopicOrPartition | C::UnknownTopic) => Error::NotFound {
            what: format!("topic {target}"),
            detail: "check the topic name (dlqctl never creates topics)".into(),
        },
        Some(
            C::TopicAuthorizationFailed
            | C::GroupAuthorizationFailed
            | C::ClusterAuthorizationFailed
            | C::SaslAuthenticationFailed
            | C::Authentication,
        ) => Error::PermissionDenied {
            target: target.to_string(),
            reason: e.to_string(),
        },
        Some(
            C::AllBrokersDown
            | C::BrokerTransportFailure
            | C::Resolve
            | C::OperationTimedOut
            | C::RequestTimedOut
            | C::MessageTimedOut,
        ) => Error::Unreachable {
            target: target.to_string(),
            reason: crate::error::with_rerun(&e),
        },
        _ => Error::Backend {
            target: target.to_string(),
            reason: e.to_string(),
        },
    }
}

/// The brokers a metadata response lists, sorted: a cluster's name when it reports no id.
pub(super) fn brokers_of(md: &rdkafka::metadata::Metadata) -> String {
    let mut b: Vec<String> = md
        .brokers()
        .iter()
        .map(|b| format!("{}:{}", b.host(), b.port()))
        .collect();
    b.sort();
    b.join(",")
}

/// Transactions need broker support (EndTxn, AddOffsetsToTxn); say so when it is missing.
pub(super) fn txn_err(target: &str, e: KafkaError) -> Error {
    let text = e.to_string();
    if [
        "EndTxn",
        "Unsupported",
        "not supported",
        "UNSUPPORTED",
        "InvalidTxnState",
        "Transactional",
    ]
    .iter()
    .any(|n| text.contains(n))
    {
        return Error::Unsupported {
            backend: "kafka",
            operation: "--exactly-once",
            reason: format!(
                "the broker at {target} could not run the transaction ({text}); nothing was moved. Redrive without --exactly-once (at-least-once, same stable ids)"
            ),
        };
    }
    kafka_err(target, e)
}

/// A commit error that goes away once the group coordinator is found again.
pub(super) fn coordinator_busy(e: &KafkaError) -> bool {
    use rdkafka::types::RDKafkaErrorCode as C;
    matches!(
        e.rdkafka_error_code(),
        Some(
            C::WaitingForCoordinator
                | C::CoordinatorLoadInProgress
                | C::CoordinatorNotAvailable
                | C::NotCoordinator
                | C::RequestTimedOut
                | C::BrokerTransportFailure
                | C::AllBrokersDown
        )
    )
}

/// A consumer error that librdkafka recovers from by itself (it reconnects, finds the new
/// leader, starts a new fetch session): the read goes on.
fn passing(e: &KafkaError) -> bool {
    use rdkafka::types::RDKafkaErrorCode as C;
    matches!(e, KafkaError::MessageConsumption(_))
        && matches!(
            e.rdkafka_error_code(),
            Some(
                C::BrokerTransportFailure
                    | C::AllBrokersDown
                    | C::Resolve
                    | C::OperationTimedOut
                    | C::RequestTimedOut
                    | C::NetworkException
                    | C::LeaderNotAvailable
                    | C::NotLeaderForPartition
                    | C::PreferredLeaderNotAvailable
                    | C::BrokerNotAvailable
                    | C::ReplicaNotAvailable
                    | C::KafkaStorageError
                    | C::FetchSessionIdNotFound
                    | C::InvalidFetchSessionEpoch
                    | C::FencedLeaderEpoch
                    | C::UnknownLeaderEpoch
                    | C::OffsetNotAvailable
            )
        )
}

/// What a read saw go wrong since its last record. A read that falls idle after a passing
/// error has not reached the end: it failed, and says why.
#[derive(Default)]
pub(super) struct Trouble(Option<String>);

impl Trouble {
    /// Note a passing error (librdkafka is recovering), or say that `e` ends the read.
    pub(super) fn note(&mut self, target: &str, e: KafkaError) -> Result<()> {
        if passing(&e) {
            tracing::info!(error = %e, "kafka: reading {target}: a passing error; librdkafka retries");
            self.0 = Some(e.to_string());
            Ok(())
        } else {
            Err(kafka_err(target, e))
        }
    }

    /// A record arrived: whatever went wrong before is over.
    pub(super) fn clear(&mut self) {
        self.0 = None;
    }

    /// The read fell idle: done, unless it fell idle in trouble.
    pub(super) fn idle(&self, target: &str, idle: Duration) -> Result<()> {
        match &self.0 {
            None => Ok(()),
            Some(e) => Err(Error::Unreachable {
                target: target.to_string(),
                reason: crate::error::with_rerun(format!(
                    "{e}, and no record for {} since",
                    crate::human::fmt_duration(idle)
                )),
            }),
        }
    }
}
