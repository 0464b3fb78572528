use std::path::PathBuf;

use crate::classify::Classifier;
use crate::error::{Error, Result};
use crate::ops::check::{Baseline, CheckRequest};
use crate::settings::Ctx;

/// Check the state of queues now, for cron, alerting and CI
///
/// Holds each queue to limits (flags, or [queues.NAME.limits] in dlqctl.toml): how many
/// messages, how old the oldest, how many in flight (SQS), how many of a class, and with
/// --baseline FILE (a saved `classify --by fingerprint --output json`) whether a new kind of
/// failure appeared. Exit 0 when every check passes, 1 when any fails. --output junit for CI,
/// --output prometheus for node_exporter's textfile collector or a Pushgateway.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Queues to check [default: every queue in dlqctl.toml]
    #[arg(value_name = "QUEUE")]
    pub queues: Vec<String>,
    /// At most N messages
    #[arg(long, value_name = "N")]
    pub max_messages: Option<u64>,
    /// No message first enqueued longer ago than DURATION (e.g. 6h, 2d)
    #[arg(long, value_name = "DURATION")]
    pub max_age: Option<String>,
    /// SQS: at most N messages in flight
    #[arg(long, value_name = "N")]
    pub max_in_flight: Option<u64>,
    /// At most N messages of CLASS (transient, permanent, unclassified or a rule name), e.g.
    /// permanent=0 (repeatable)
    #[arg(long, value_name = "CLASS=N")]
    pub max_class: Vec<String>,
    /// A `classify --by fingerprint --output json` file: a fingerprint not in it fails
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Read at most N messages for the class and baseline checks [default: all]
    #[arg(long, value_name = "N")]
    pub scan_max: Option<u64>,
    /// Extra classification rules (TOML), ahead of the config's and the built-in ones
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let names: Vec<String> = if a.queues.is_empty() {
        ctx.config.queues.keys().cloned().collect()
    } else {
        a.queues.clone()
    };
    if names.is_empty() {
        return Err(Error::invalid_arg("QUEUE", "nothing to check")
            .hinted("name queues, or define [queues.NAME] entries in dlqctl.toml"));
    }
    let max_age = a
        .max_age
        .as_deref()
        .map(|v| crate::config::parse_duration(v).map_err(|e| Error::invalid_arg("--max-age", e)))
        .transpose()?;
    let mut classes = std::collections::BTreeMap::new();
    for c in &a.max_class {
        let (name, n) = c
            .split_once('=')
            .and_then(|(name, n)| Some((name.trim(), n.trim().parse::<u64>().ok()?)))
            .ok_or_else(|| {
                Error::invalid_arg(
                    "--max-class",
                    format!("`{c}` is not CLASS=N (e.g. permanent=0)"),
                )
            })?;
        classes.insert(name.to_string(), n);
    }
    let classifier = Classifier::new(
        &ctx.config.classify.rules,
        ctx.config.path.as_deref(),
        a.rules.as_deref(),
    )?;
    let baseline = a.baseline.as_deref().map(Baseline::load).transpose()?;
    let mut queues = Vec::new();
    for n in &names {
        let q = ctx.queue(n)?;
        // Flags apply to every queue named, over the config's limits.
        let mut l = q.cfg.limits.clone();
        l.max_messages = a.max_messages.or(l.max_messages);
        l.max_age = max_age.or(l.max_age);
        l.max_in_flight = a.max_in_flight.or(l.max_in_flight);
        l.classes.extend(classes.clone());
        queues.push((q, l));
    }
    crate::ops::check::run(
        ctx,
        CheckRequest {
            queues,
            baseline,
            classifier,
            scan_max: a.scan_max,
        },
    )
    .await
}
