//! Who runs dlqctl, and where: named in the Kafka redrive lease, so that a second operator
//! learns who holds it.

/// The OS user name, or `unknown`.
pub fn user() -> String {
    whoami::username().unwrap_or_else(|_| "unknown".into())
}

/// The host name, or `unknown-host`.
pub fn host() -> String {
    whoami::hostname().unwrap_or_else(|_| "unknown-host".into())
}
