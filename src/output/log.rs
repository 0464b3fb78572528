//! The log on stderr. Without `-v` (or `DLQCTL_LOG`) only dlqctl's own warnings come through,
//! in the words every other warning uses (`warning: …`, as [`super::Printer::warn`] prints
//! them), and nothing of the libraries': lapin logs each channel error that dlqctl reports
//! itself, the AWS credential chain each provider it tried. With `-v` the log is tracing's,
//! levels and times, for debugging.

use std::fmt;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

use super::{LogWriter, Stderr};

/// What is logged at `-v` × `verbose`.
fn directives(verbose: u8) -> String {
    let level = match verbose {
        0 => return "off,dlqctl=warn".into(),
        1 => "info,sqlx=warn",
        2 => "debug,sqlx=info",
        _ => "trace",
    };
    format!("dlqctl={level},{level}")
}

/// A log event as dlqctl's own line: `warning: MESSAGE key=value …` (`error:` for an error).
struct Plain;

impl<S, N> FormatEvent<S, N> for Plain
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let lead = if *event.metadata().level() == Level::ERROR {
            "error:"
        } else {
            "warning:"
        };
        if w.has_ansi_escapes() {
            write!(w, "\x1b[33m{lead}\x1b[0m ")?;
        } else {
            write!(w, "{lead} ")?;
        }
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// The subscriber: `filter` (`DLQCTL_LOG`) where given, else what `-v` × `verbose` asks.
fn subscriber<W>(
    verbose: u8,
    filter: Option<EnvFilter>,
    writer: W,
    ansi: bool,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let b = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(ansi)
        .with_target(false);
    match filter {
        Some(f) => Box::new(b.with_env_filter(f).finish()),
        None if verbose == 0 => Box::new(
            b.with_env_filter(EnvFilter::new(directives(0)))
                .event_format(Plain)
                .finish(),
        ),
        None => Box::new(
            b.with_env_filter(EnvFilter::new(directives(verbose)))
                .finish(),
        ),
    }
}

/// The log goes to the terminal's stderr through its owner, secrets scrubbed.
pub fn init(verbose: u8, err: Stderr) {
    let filter = EnvFilter::try_from_env("DLQCTL_LOG").ok();
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ =
        tracing::subscriber::set_global_default(subscriber(verbose, filter, LogWriter(err), ansi));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Operator report (2026-12-06): a redrive printed `2026-12-06T11:30:23Z  WARN the
    /// destination this message names cannot take it: …` among dlqctl's `warning:` lines.
    /// Without `-v`: dlqctl's warnings as its own lines, nothing of the libraries' (lapin, the
    /// AWS SDK), no info.
    #[test]
    fn without_v_only_dlqctls_warnings_come_through_in_its_own_words() {
        let (p, captured) = super::super::Printer::capture(super::super::OutputFormat::Table);
        let sub = subscriber(0, None, LogWriter(p.stderr()), false);
        tracing::subscriber::with_default(sub, || {
            tracing::warn!(target: "lapin::channels", "channel error");
            tracing::error!(target: "lapin::io_loop", "connection error");
            tracing::warn!(target: "aws_config::imds", "no IMDS");
            tracing::info!(target: "dlqctl::ops", "following");
            tracing::warn!(target: "dlqctl::ops::moves", count = 2, "a destination cannot take it");
        });
        assert_eq!(
            captured.stderr(),
            "warning: a destination cannot take it count=2\n"
        );
        // With -v: tracing's lines, levels and all.
        let (p, captured) = super::super::Printer::capture(super::super::OutputFormat::Table);
        let sub = subscriber(1, None, LogWriter(p.stderr()), false);
        tracing::subscriber::with_default(sub, || {
            tracing::info!(target: "dlqctl::ops", "following");
        });
        assert!(
            captured.stderr().contains(" INFO following"),
            "{}",
            captured.stderr()
        );
    }
}
