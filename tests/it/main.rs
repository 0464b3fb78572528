//! The integration suite: one binary, the real dlqctl, real services (see harness.rs).

mod artifacts;
mod audit;
mod bad_input;
mod conformance;
mod dispose;
mod exactly_once;
mod faults;
mod harness;
mod kafka;
mod pair;
mod pg_errors;
mod pg_read;
mod pg_redrive;
mod pg_verify;
mod proxy;
mod purge;
mod secrets;
mod shapes;
mod sqs;
mod systems;
mod terminal;
mod triage;
