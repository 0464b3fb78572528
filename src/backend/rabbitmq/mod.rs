//! RabbitMQ dead-letter queues over AMQP 0-9-1 (lapin), with the management HTTP API where
//! AMQP cannot see (docs/rabbitmq.md).
//!
//! * Reading: AMQP has no peek. A read consumes and holds each message, and the broker puts
//!   it back when the read ends (`reader.rs`); a quorum queue counts that as a delivery, so a
//!   quorum DLQ with a delivery limit is read only with `--allow-onward-redrive`. A stream is
//!   read from its first offset and loses nothing.
//! * Moving: one run per queue (an exclusive lock queue and an exclusive consumer), the
//!   messages the queue held when it began, each acknowledged once its copy is confirmed
//!   (`session.rs`).
//! * Writing: publisher confirms and `mandatory`, so an unroutable copy is a failure, not a
//!   silent drop (`sink.rs`).
//! * What a dead letter says: `x-death` and the frameworks' headers (`conventions.rs`); the
//!   stable id is the `message_id` property, else `dlqctl-stable-id`, else a digest of the
//!   message (`record.rs`).
//!
//! Everything RabbitMQ-specific lives in this folder; `address` is compiled in every build
//! (an address parses whatever backends were built), the rest with the `rabbitmq` feature.

pub mod address;
#[cfg(feature = "rabbitmq")]
mod api;
#[cfg(feature = "rabbitmq")]
mod backend;
#[cfg(feature = "rabbitmq")]
mod conn;
#[cfg(feature = "rabbitmq")]
mod conventions;
#[cfg(feature = "rabbitmq")]
mod facts;
#[cfg(feature = "rabbitmq")]
mod fields;
#[cfg(feature = "rabbitmq")]
mod reader;
#[cfg(feature = "rabbitmq")]
mod record;
#[cfg(feature = "rabbitmq")]
mod routes;
#[cfg(feature = "rabbitmq")]
mod routing;
#[cfg(feature = "rabbitmq")]
mod session;
#[cfg(feature = "rabbitmq")]
mod sink;

#[cfg(feature = "rabbitmq")]
pub use backend::RabbitBackend;

#[cfg(feature = "rabbitmq")]
/// Open an address of this backend (its line in `backend::OPENERS`).
pub fn open<'a>(
    addr: &'a crate::address::Address,
    opts: &'a crate::backend::OpenOptions,
) -> futures::future::BoxFuture<'a, crate::error::Result<Box<dyn crate::backend::QueueBackend>>> {
    crate::backend::boxed(RabbitBackend::open(addr, opts))
}
