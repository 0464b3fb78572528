//! The command line: clap definitions only, one file per subcommand, and the dispatch.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::backend::{AwsOptions, DedupStrategy};
use crate::classify::Classifier;
use crate::config::Config;
use crate::error::{Error, Result, exit};
use crate::filter::Filter;
use crate::output::{ColorChoice, OutputChoice, OutputFormat, Printer, PrinterOptions};
use crate::settings::{Ctx, FilterInput, Interrupt, build_filter};

mod audit;
mod check;
mod classify;
mod completions;
mod edit;
mod export;
mod generate;
mod inspect;
mod peek;
mod purge;
mod redrive;
mod replay;
mod signals;
mod tail;
mod ui;
mod verify;
mod version;

pub use generate::{Artifact, artifacts};
pub use version::{BuildInfo, build_info};

/// The crate's description (Cargo.toml): the two never differ.
const ABOUT: &str = env!("CARGO_PKG_DESCRIPTION");

const LONG_ABOUT: &str = "\
Inspect, classify, redrive and verify dead-letter queues on Amazon SQS, Apache Kafka, PostgreSQL,
RabbitMQ and Redis (Sidekiq, BullMQ).

Redrive and replay keep every message's stable id, so idempotent consumers turn repeats into
no-ops, and no command deletes a message before its copy is accepted by the target.";

/// The addresses and exit codes under `--help` (the backends' forms from the registry).
fn after_help() -> String {
    let forms: String = crate::address::BACKENDS
        .iter()
        .flat_map(|b| {
            (b.usage)()
                .lines()
                .map(|l| format!("  {l}\n"))
                .collect::<Vec<_>>()
        })
        .collect();
    format!(
        "\
QUEUE is a URL or the name of a [queues.NAME] entry in dlqctl.toml:
{forms}
Exit codes: 0 success, 1 a check failed or some messages were not moved, 2 usage or config
error, 3 backend unreachable / not found / permission denied, 130 interrupted."
    )
}

#[derive(Parser, Debug)]
#[command(name = "dlqctl", version, long_version = build_info().long_version(), about = ABOUT, long_about = LONG_ABOUT, after_help = after_help())]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Args, Debug)]
pub struct GlobalArgs {
    /// Output format [default: table at a terminal, json otherwise]
    #[arg(long, global = true, value_enum, value_name = "FORMAT")]
    pub output: Option<OutputChoice>,
    /// Config file [default: ./dlqctl.toml, then the user config dir]
    #[arg(long, global = true, env = "DLQCTL_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print only data and errors
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// More diagnostics on stderr (-v, -vv)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Never show progress: no bar at a terminal, no progress lines on stderr without one
    /// (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)
    #[arg(long, global = true)]
    pub no_progress: bool,
    /// Why this run changes something: recorded in the audit trail (docs/audit.md)
    #[arg(long, global = true, value_name = "TEXT")]
    pub reason: Option<String>,
    /// When to use colour
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    #[command(flatten)]
    pub aws: AwsArgs,
}

/// Amazon SQS options (the standard AWS environment and profiles apply underneath).
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Amazon SQS")]
pub struct AwsArgs {
    /// AWS profile [env: AWS_PROFILE]
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,
    /// AWS region, unless the queue URL or ARN names one [env: AWS_REGION]
    #[arg(long, global = true, value_name = "REGION")]
    pub region: Option<String>,
    /// SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]
    #[arg(long, global = true, value_name = "URL")]
    pub endpoint_url: Option<String>,
    /// Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)
    #[arg(long, global = true)]
    pub allow_onward_redrive: bool,
    /// How copies sent to a FIFO queue get their MessageDeduplicationId
    #[arg(long = "dedup-id", global = true, value_enum, default_value_t = DedupArg::PerRun, value_name = "STRATEGY")]
    pub dedup: DedupArg,
    /// Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]
    #[arg(long, global = true, value_name = "SECONDS", value_parser = clap::value_parser!(i32).range(1..=43200))]
    pub visibility_timeout: Option<i32>,
    /// SQS requests in flight at once
    #[arg(long, global = true, default_value_t = 4, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub parallel: u16,
}

/// `--dedup-id`: how copies sent to a FIFO queue get their MessageDeduplicationId (the
/// settings' [`DedupStrategy`]; clap's types stay in this layer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DedupArg {
    /// A new id for each run, derived from the stable id: retries inside one run are still
    /// deduplicated by SQS, and no copy collides with the original send's 5-minute window.
    PerRun,
    /// The message's own deduplication id if it has one, else its stable id (inside the
    /// 5-minute window SQS drops the copy).
    Keep,
    /// Always the stable id (same caveat as keep).
    StableId,
}

impl From<DedupArg> for DedupStrategy {
    fn from(a: DedupArg) -> DedupStrategy {
        match a {
            DedupArg::PerRun => DedupStrategy::PerRun,
            DedupArg::Keep => DedupStrategy::Keep,
            DedupArg::StableId => DedupStrategy::StableId,
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    Inspect(inspect::Args),
    Peek(peek::Args),
    Tail(tail::Args),
    Classify(classify::Args),
    Redrive(redrive::Args),
    Replay(replay::Args),
    Purge(purge::Args),
    Edit(edit::Args),
    Export(export::Args),
    Verify(verify::Args),
    Check(check::Args),
    Audit(audit::Args),
    Ui(ui::Args),
    Completions(completions::Args),
    Version(version::Args),
}

/// Filters shared by the commands that read messages.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Filters")]
pub struct FilterArgs {
    /// Only this class: transient, permanent, unclassified, or a rule name (repeatable)
    #[arg(long = "class", value_name = "CLASS")]
    pub class: Vec<String>,
    /// Only messages whose body matches REGEX
    #[arg(long = "match", value_name = "REGEX")]
    pub body: Option<String>,
    /// Only messages whose error (class and message) matches REGEX
    #[arg(long, value_name = "REGEX")]
    pub error: Option<String>,
    /// Only messages with attribute/header NAME matching REGEX (repeatable)
    #[arg(long = "attr", value_name = "NAME=REGEX")]
    pub attrs: Vec<String>,
    /// Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)
    #[arg(long, value_name = "DURATION")]
    pub older_than: Option<String>,
    /// Only messages first enqueued more recently than DURATION
    #[arg(long, value_name = "DURATION")]
    pub newer_than: Option<String>,
    /// Only these stable or native ids (repeatable)
    #[arg(long = "id", value_name = "ID")]
    pub ids: Vec<String>,
    /// Only the ids listed in FILE, one per line (- for stdin)
    #[arg(long, value_name = "FILE")]
    pub ids_from: Option<PathBuf>,
    /// Only messages with this error fingerprint (as `classify --by fingerprint` shows, or a
    /// unique prefix of 8 or more characters; comma-separated or repeated)
    #[arg(long = "fingerprint", value_name = "FP")]
    pub fingerprints: Vec<String>,
    /// Only messages for which the jq expression JQ is true (it must give true or false), over
    /// the message's record with .json (the body parsed), .attrs (name → value), .error_text,
    /// .class, .rule, .fingerprint (docs/triage.md), e.g. '.json.amount_cents > 100000'
    #[arg(long = "where", value_name = "JQ")]
    pub query: Option<String>,
    /// Extra classification rules (TOML), ahead of the config's and the built-in ones
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
}

/// Which headers/attributes a copy carries (redrive, replay, purge --archive).
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Headers")]
pub struct HeaderArgs {
    /// Copy only the headers/attributes whose name matches PATTERN (a glob: *, ?, […];
    /// repeatable). The one holding the stable id is always copied
    #[arg(long = "keep-header", value_name = "PATTERN")]
    pub keep: Vec<String>,
    /// Do not copy the headers/attributes whose name matches PATTERN (a glob; repeatable;
    /// applied after --keep-header), e.g. 'kafka_dlt-*'
    #[arg(long = "strip-header", value_name = "PATTERN")]
    pub strip: Vec<String>,
}

/// `--max N` (redrive, replay, purge, export, classify, tail): a count from 1. `--max 0` would
/// do nothing and exit 0 as if it had done it all, so it is refused, as `peek -n 0` is (and
/// in the same words: checked here, not by clap, whose errors read otherwise).
pub fn max_count(max: Option<u64>) -> Result<Option<u64>> {
    match max {
        Some(0) => Err(Error::invalid_arg(
            "--max",
            "must be at least 1 (--max 0 would do nothing)",
        )
        .hinted("leave --max out for no limit")),
        n => Ok(n),
    }
}

/// How a changing run goes (redrive, replay, purge): how many, how fast, asked or not.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// At most N messages
    #[arg(long, value_name = "N")]
    pub max: Option<u64>,
    /// At most this many messages per second on average over the run (50, 50/s, 3000/m): each
    /// batch waits until the run is due to send it; without --batch-size a batch is one
    /// second's worth (at least 1 message)
    #[arg(long, value_name = "RATE")]
    pub rate: Option<String>,
    /// Messages per batch (one transaction on PostgreSQL) [default: 1000; with --rate, one
    /// second's worth, at least 1]
    #[arg(long, value_name = "N")]
    pub batch_size: Option<usize>,
    /// Show the plan and what would happen; change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation (required without a terminal)
    #[arg(short = 'y', long)]
    pub yes: bool,
}

impl RunArgs {
    pub fn rate(&self) -> Result<Option<f64>> {
        self.rate
            .as_deref()
            .map(|r| crate::settings::parse_rate(r).map_err(|e| Error::invalid_arg("--rate", e)))
            .transpose()
    }

    /// `--batch-size`, else [`default_batch_size`] for the `--rate`.
    pub fn batch_size(&self) -> Result<usize> {
        match self.batch_size {
            Some(n) if !(1..=10_000).contains(&n) => {
                Err(Error::invalid_arg("--batch-size", "must be 1 to 10000"))
            }
            Some(n) => Ok(n),
            None => Ok(default_batch_size(self.rate()?)),
        }
    }
}

/// Messages per batch without `--batch-size`.
pub const DEFAULT_BATCH_SIZE: usize = 1000;

/// The batch size without `--batch-size`: 1000, and with a rate of R messages a second a
/// second's worth, R (at least 1, at most 1000). A rate paces whole batches (each waits until
/// the run is due to send it), so a batch of 1000 at `--rate 10` would send 1000 at once and
/// then pause 100 s.
pub fn default_batch_size(rate: Option<f64>) -> usize {
    match rate {
        None => DEFAULT_BATCH_SIZE,
        Some(r) => (r.floor() as usize).clamp(1, DEFAULT_BATCH_SIZE),
    }
}

/// The loop guard (redrive, replay).
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Loop guard")]
pub struct GuardArgs {
    /// Leave messages that dlqctl has redriven or replayed N times already where they are
    /// (their dlqctl-redrive-count header/attribute) [default: max_redrives in dlqctl.toml]
    #[arg(long, value_name = "N")]
    pub max_redrives: Option<u32>,
    /// With --max-redrives: move those messages to TARGET instead (a queue, table or topic)
    #[arg(long, value_name = "TARGET", requires = "max_redrives")]
    pub park: Option<String>,
}

impl GuardArgs {
    /// The limit (flag, else the queue's `max_redrives`) and the park target, resolved.
    pub fn resolve(
        &self,
        ctx: &Ctx,
        source: &crate::settings::QueueRef,
    ) -> Result<(Option<u32>, Option<crate::ops::moves::Target>)> {
        let limit = self.max_redrives.or(source.cfg.max_redrives);
        if limit == Some(0) {
            return Err(Error::invalid_arg(
                "--max-redrives",
                "must be at least 1 (0 would hold every message)",
            ));
        }
        let park = self
            .park
            .as_deref()
            .map(|t| ctx.target(t, source))
            .transpose()?;
        Ok((limit, park))
    }
}

impl HeaderArgs {
    pub fn resolve(&self) -> Result<crate::headers::HeaderRules> {
        crate::headers::HeaderRules::new(&self.keep, &self.strip)
    }
}

impl FilterArgs {
    pub fn resolve(&self, ctx: &Ctx) -> Result<(Filter, Classifier)> {
        let classifier = Classifier::new(
            &ctx.config.classify.rules,
            ctx.config.path.as_deref(),
            self.rules.as_deref(),
        )?;
        for c in &self.class {
            if !classifier.knows(c) {
                let known = ["transient", "permanent", "unclassified"]
                    .into_iter()
                    .chain(classifier.rules().map(|r| r.name.as_str()));
                let guess = crate::text::closest(c, known);
                // The user's own rules are few and named; the built-in ones (about 130) are
                // not listed on one line, but where they are documented.
                let yours: Vec<&str> = classifier
                    .rules()
                    .filter(|r| !r.builtin)
                    .map(|r| r.name.as_str())
                    .collect();
                let yours = if yours.is_empty() {
                    String::new()
                } else {
                    format!(" (your rules: {})", yours.join(", "))
                };
                let e = Error::invalid_arg(
                    "--class",
                    format!(
                        "`{c}` is neither transient, permanent, unclassified nor a rule name{yours}"
                    ),
                );
                return Err(match guess {
                    Some(g) => e.hinted(format!("did you mean `{g}`?")),
                    None => e.hinted(
                        "the built-in rules' names are in docs/classification.md; `dlqctl classify QUEUE` shows the rule of each group",
                    ),
                });
            }
        }
        let filter = build_filter(FilterInput {
            class: &self.class,
            body: self.body.as_deref(),
            error: self.error.as_deref(),
            attrs: &self.attrs,
            older_than: self.older_than.as_deref(),
            newer_than: self.newer_than.as_deref(),
            ids: &self.ids,
            ids_from: self.ids_from.as_deref(),
            fingerprints: &self.fingerprints,
            query: self.query.as_deref(),
        })?;
        let mut filter = filter;
        if let Some(q) = &mut filter.query {
            // A --where that spins yields to Ctrl-C.
            q.watch(&ctx.interrupt, ctx.printer.stderr());
        }
        Ok((filter, classifier))
    }
}

/// The binary's entry point: parse, run, and turn the outcome into an exit code.
pub fn main() -> i32 {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "generate-artifacts") {
        return generate::main(&args[1..]);
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
        }
    };
    crate::secrets::register_environment();
    let printer = printer(&cli.global);
    crate::output::init_log(cli.global.verbose, printer.stderr());
    tracing::debug!(version = env!("CARGO_PKG_VERSION"), "start");
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            printer.notice(&format!("error: cannot start the runtime: {e}"));
            return exit::USAGE;
        }
    };
    let code = rt.block_on(run(cli, printer));
    tracing::debug!(code, "done; shutting down");
    // Do not wait for idle pool connections to close.
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    code
}

/// The terminal's owner, as the global options ask.
fn printer(g: &GlobalArgs) -> Printer {
    Printer::new(PrinterOptions {
        format: g.output,
        color: g.color,
        quiet: g.quiet,
        verbose: g.verbose,
        no_progress: g.no_progress,
        progress_interval: std::env::var("DLQCTL_PROGRESS_INTERVAL")
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map_or(
                crate::output::PROGRESS_INTERVAL,
                std::time::Duration::from_secs_f64,
            ),
    })
}

async fn run(cli: Cli, printer: Printer) -> i32 {
    let g = &cli.global;
    if printer.format == OutputFormat::Junit
        && !matches!(cli.command, Command::Verify(_) | Command::Check(_))
    {
        return report(
            &printer,
            &Error::invalid_arg(
                "--output",
                "junit is for `dlqctl verify` and `dlqctl check` only",
            ),
        );
    }
    if printer.format == OutputFormat::Prometheus
        && !matches!(cli.command, Command::Inspect(_) | Command::Check(_))
    {
        return report(
            &printer,
            &Error::invalid_arg(
                "--output",
                "prometheus is for `dlqctl inspect` and `dlqctl check` only",
            ),
        );
    }
    let mut config = match &cli.command {
        // These never need the config; a broken one must not stop them.
        Command::Completions(_) | Command::Version(_) => Config::default(),
        _ => match Config::load(g.config.as_deref()) {
            Ok(c) => c,
            Err(e) => return report(&printer, &e),
        },
    };
    let a = &g.aws;
    if let Some(e) = &a.endpoint_url {
        crate::secrets::register_url_password(e);
    }
    let mut aws = AwsOptions {
        profile: a.profile.clone(),
        region: a.region.clone(),
        endpoint_url: a.endpoint_url.clone(),
        allow_onward_redrive: a.allow_onward_redrive,
        dedup: a.dedup.into(),
        visibility_timeout: a.visibility_timeout,
        parallel: a.parallel as usize,
        ..AwsOptions::default()
    };
    crate::settings::from_environment(&mut aws, &mut config);
    let mut ctx = Ctx {
        printer,
        config,
        aws,
        interrupt: Interrupt::default(),
        opener: crate::backend::Opener::default(),
        reason: g.reason.clone(),
    };
    signals::spawn_signal_handler(ctx.interrupt.clone(), ctx.printer.stderr());
    // Commands that only read: an error never says "re-run to continue" (nothing to continue).
    let read_only = matches!(
        cli.command,
        Command::Inspect(_)
            | Command::Peek(_)
            | Command::Tail(_)
            | Command::Classify(_)
            | Command::Export(_)
            | Command::Verify(_)
            | Command::Check(_)
            | Command::Audit(_)
    );
    let result = match cli.command {
        Command::Inspect(a) => inspect::run(&ctx, a).await,
        Command::Peek(a) => peek::run(&ctx, a).await,
        Command::Tail(a) => tail::run(&ctx, a).await,
        Command::Classify(a) => classify::run(&ctx, a).await,
        Command::Redrive(a) => redrive::run(&ctx, a).await,
        Command::Replay(a) => replay::run(&ctx, a).await,
        Command::Purge(a) => purge::run(&ctx, a).await,
        Command::Edit(a) => edit::run(&ctx, a).await,
        Command::Export(a) => export::run(&ctx, a).await,
        Command::Verify(a) => verify::run(&ctx, a).await,
        Command::Check(a) => check::run(&ctx, a).await,
        Command::Audit(a) => audit::run(&ctx, a).await,
        Command::Ui(a) => ui::run(&mut ctx, a).await,
        Command::Completions(a) => completions::run(&ctx, a),
        Command::Version(a) => version::run(&ctx, a),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) if read_only => report(&ctx.printer, &e.read_only()),
        Err(e) => report(&ctx.printer, &e),
    };
    let _ = ctx.printer.flush();
    code
}

/// Print an error (and its hints) on stderr; return its exit code.
fn report(printer: &Printer, e: &Error) -> i32 {
    printer.error(e);
    e.exit_code()
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_cli_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }

    /// `--rate R` without `--batch-size` sends a second's worth at a time, not 1000 at once
    /// and then a long pause; an explicit `--batch-size` is kept.
    #[test]
    fn a_rate_without_a_batch_size_batches_a_seconds_worth() {
        use super::default_batch_size as b;
        assert_eq!(b(None), 1000);
        assert_eq!(b(Some(10.0)), 10);
        assert_eq!(b(Some(2.5)), 2);
        assert_eq!(b(Some(0.5)), 1, "below 1/s: one at a time");
        assert_eq!(b(Some(1.0 / 3600.0)), 1);
        assert_eq!(b(Some(50_000.0)), 1000, "never above the default");
        let args = |extra: &[&str]| {
            let mut v = vec!["dlqctl", "redrive", "q"];
            v.extend_from_slice(extra);
            match <super::Cli as clap::Parser>::try_parse_from(v)
                .unwrap()
                .command
            {
                super::Command::Redrive(a) => a.run.batch_size().unwrap(),
                _ => unreachable!(),
            }
        };
        assert_eq!(args(&[]), 1000);
        assert_eq!(args(&["--rate", "10"]), 10);
        assert_eq!(args(&["--rate", "600/m"]), 10);
        assert_eq!(args(&["--rate", "10", "--batch-size", "500"]), 500);
    }
}
