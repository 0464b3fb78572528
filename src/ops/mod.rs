//! The work behind each command. Operations take resolved settings (`crate::settings`), talk
//! to backends through `crate::backend`, and report through the `Printer`.

pub mod card;
pub mod census;
pub mod check;
pub mod classify;
pub mod classify_report;
pub mod edit;
pub mod groups;
pub mod inspect;
pub mod metrics;
pub mod moves;
pub mod native;
pub mod read;
pub mod tables;
pub mod verify;
