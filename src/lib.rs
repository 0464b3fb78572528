//! dlqctl: inspect, classify, redrive and verify dead-letter queues on Amazon SQS, Apache
//! Kafka and PostgreSQL.
//!
//! Layers, top to bottom: `cli` (clap only) → `settings` (one resolve step) → `ops` (the work)
//! → `backend` (one trait, one module per backend). `output` owns the terminal.

pub mod address;
pub mod audit;
pub mod backend;
pub mod body_error;
pub mod classify;
pub mod cli;
pub mod config;
pub mod dedupe;
pub mod error;
pub mod filter;
pub mod fsutil;
pub mod headers;
pub mod human;
pub mod interrupt;
#[cfg(feature = "kafka")]
pub mod kafka_headers;
pub mod message;
pub mod operator;
pub mod ops;
pub mod output;
pub mod pgconn;
pub mod query;
pub mod secrets;
pub mod settings;
pub mod text;
pub mod ui;
