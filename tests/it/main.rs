//! The integration suite: one binary, the real dlqctl, real services (see harness.rs).

mod artifacts;
mod exactly_once;
mod harness;
mod kafka;
mod pg_errors;
mod pg_read;
mod pg_redrive;
mod pg_verify;
mod sqs;
mod systems;
