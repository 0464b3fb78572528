//! The work behind each command. Operations take resolved settings (`crate::settings`), talk
//! to backends through `crate::backend`, and report through the `Printer`.

pub mod classify;
pub mod inspect;
pub mod moves;
pub mod native;
pub mod read;
pub mod verify;
