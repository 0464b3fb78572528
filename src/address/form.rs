//! What every backend's address type answers, whatever backend it belongs to: how it is shown
//! (its `Display`, secrets left out), its short name for a narrow table, how a record keeps it,
//! and the few questions a backend's own form answers. The address registry
//! (`registry.rs`) dispatches to these; nothing here names a backend.
//!
//! A bottom file of the address layer: a backend's own `address.rs` (in its folder) implements
//! [`Form`] and reports errors with [`invalid`] without naming the registry that names it.

use std::fmt;

use crate::error::Error;
use crate::text::escape_controls;

/// One backend's parsed address.
pub trait Form: fmt::Display {
    /// A short name for a narrow table: the queue, the topic, the table. Not an address: the
    /// full one is shown where there is room, and `--output wide` always shows it.
    fn brief(&self) -> String;
    /// The address as a record keeps it (the audit trail): what still says where the queue is
    /// once the shell that ran the command is gone (a file by its absolute path).
    fn recorded(&self) -> String {
        self.to_string()
    }
    /// Why a redrive cannot read this address, where it names a slice of its queue (Kafka's
    /// `from`/`to`/`since`/`until`): a redrive continues from where the last one stopped, and
    /// a slice is for reading and replaying.
    fn redrive_slice_refusal(&self) -> Option<&'static str> {
        None
    }
    /// The same queue, read only in `partition`, where the queue has partitions (Kafka), so
    /// that a move of one message reads and settles nothing elsewhere.
    fn confine_to_partition(&mut self, _partition: i32) {}
}

/// An address error: the input trimmed and redacted, and control characters in it and in the
/// reason escaped, so that the error stays on one line whatever was pasted or decoded.
/// (tests/it/bad_input.rs found `"postgre://h\n"` and `postgres://h/db?hostaddr=%0A` printing
/// a line break inside the error.)
pub fn invalid(input: &str, reason: &str) -> Error {
    Error::InvalidAddress {
        input: escape_controls(&crate::secrets::redact(input.trim())),
        reason: escape_controls(reason),
    }
}
