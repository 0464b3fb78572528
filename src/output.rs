//! The one owner of the terminal: data to stdout; progress bars, prompts and diagnostics to
//! stderr, and bars and prompts only when stderr is a terminal and the output is for people.

use std::io::{self, IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use comfy_table::{ContentArrangement, Table, presets};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Tables and text for people (the default at a terminal).
    Table,
    /// One JSON document (the default when stdout is not a terminal).
    Json,
    /// One JSON object per line.
    Jsonl,
    /// JUnit XML (verify and check).
    Junit,
    /// OpenMetrics text (inspect and check).
    Prometheus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

pub struct Printer {
    pub format: OutputFormat,
    pub color: bool,
    pub quiet: bool,
    pub verbose: u8,
    progress: bool,
    interactive: bool,
    out: Mutex<Box<dyn Write + Send>>,
}

pub struct PrinterOptions {
    pub format: Option<OutputFormat>,
    pub color: ColorChoice,
    pub quiet: bool,
    pub verbose: u8,
    pub no_progress: bool,
}

/// What a [`Printer::capture`] printer wrote.
#[cfg(test)]
#[derive(Clone, Default)]
pub struct Captured(std::sync::Arc<Mutex<Vec<u8>>>);

#[cfg(test)]
impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[cfg(test)]
impl Write for Captured {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Printer {
    pub fn new(o: PrinterOptions) -> Printer {
        let stdout_tty = io::stdout().is_terminal();
        let stderr_tty = io::stderr().is_terminal();
        let format = o.format.unwrap_or(if stdout_tty {
            OutputFormat::Table
        } else {
            OutputFormat::Json
        });
        let color = match o.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => stdout_tty && std::env::var_os("NO_COLOR").is_none(),
        };
        Printer {
            format,
            color,
            quiet: o.quiet,
            verbose: o.verbose,
            progress: stderr_tty && !o.no_progress && !o.quiet && format == OutputFormat::Table,
            interactive: stderr_tty && io::stdin().is_terminal(),
            out: Mutex::new(Box::new(io::BufWriter::new(io::stdout()))),
        }
    }

    /// A printer whose stdout is a buffer (unit tests: summaries and tables rendered as
    /// users see them), with no progress bars and no questions.
    #[cfg(test)]
    pub fn capture(format: OutputFormat) -> (Printer, Captured) {
        let buf = Captured::default();
        let p = Printer {
            format,
            color: false,
            quiet: false,
            verbose: 0,
            progress: false,
            interactive: false,
            out: Mutex::new(Box::new(buf.clone())),
        };
        (p, buf)
    }

    pub fn progress_enabled(&self) -> bool {
        self.progress
    }

    /// Whether a question can be asked (stdin and stderr are terminals).
    pub fn interactive(&self) -> bool {
        self.interactive
    }

    /// A plan (name, value rows) on stderr: what a command is about to do. `asking`: a question
    /// follows, so it is shown whatever `--quiet` says.
    pub fn plan(&self, rows: &[(String, String)], asking: bool) {
        if self.quiet && !asking {
            return;
        }
        let mut t = self.table();
        for (k, v) in rows {
            t.add_row(vec![k.as_str(), v.as_str()]);
        }
        eprintln!("{t}");
    }

    /// A note that belongs to a plan (`nothing done`): shown with it.
    pub fn plan_note(&self, msg: &str, asked: bool) {
        if !self.quiet || asked {
            eprintln!("{msg}");
        }
    }

    pub fn is_table(&self) -> bool {
        self.format == OutputFormat::Table
    }

    /// Write to stdout. A closed pipe (`dlqctl peek … | head`) ends the command quietly.
    pub fn write(&self, s: &str) -> Result<()> {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        out.write_all(s.as_bytes()).map_err(map_stdout)
    }

    pub fn line(&self, s: &str) -> Result<()> {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        out.write_all(s.as_bytes())
            .and_then(|_| out.write_all(b"\n"))
            .map_err(map_stdout)
    }

    pub fn flush(&self) -> Result<()> {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        out.flush().map_err(map_stdout)
    }

    /// A JSON document (pretty) or one JSON Lines line, as the format asks.
    pub fn json<T: Serialize>(&self, v: &T) -> Result<()> {
        let text = if self.format == OutputFormat::Jsonl {
            serde_json::to_string(v)
        } else {
            serde_json::to_string_pretty(v)
        }
        .expect("serialisable output");
        self.line(&text)
    }

    pub fn jsonl<T: Serialize>(&self, v: &T) -> Result<()> {
        self.line(&serde_json::to_string(v).expect("serialisable output"))
    }

    /// Diagnostics for people, on stderr (suppressed by --quiet).
    pub fn note(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{msg}");
        }
    }

    pub fn warn(&self, msg: &str) {
        if !self.quiet {
            if self.color_stderr() {
                eprintln!("\x1b[33mwarning:\x1b[0m {msg}");
            } else {
                eprintln!("warning: {msg}");
            }
        }
    }

    fn color_stderr(&self) -> bool {
        self.color && io::stderr().is_terminal()
    }

    pub fn table(&self) -> Table {
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic);
        if !self.color {
            t.force_no_tty();
        }
        t
    }

    /// A progress bar on stderr, or a hidden one when bars are off.
    pub fn progress(&self, len: Option<u64>, what: &str) -> ProgressBar {
        if !self.progress {
            return ProgressBar::hidden();
        }
        let bar = match len {
            Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
        };
        bar.set_style(progress_style(len.is_some()));
        bar.set_message(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    }

    /// Give a progress spinner its length once it is known: it becomes a bar.
    pub fn set_progress_length(&self, bar: &ProgressBar, len: u64) {
        if !self.progress {
            return;
        }
        bar.set_length(len);
        bar.set_style(progress_style(true));
    }

    /// Ask a yes/no question at the terminal. Without one, refuse: `what` needs `--yes`.
    pub fn confirm(&self, prompt: &str, what: &str) -> Result<bool> {
        if !self.interactive {
            return Err(Error::NoTerminal { what: what.into() });
        }
        dialoguer::Confirm::new()
            .with_prompt(prompt)
            .default(false)
            .interact()
            .map_err(|e| match e {
                dialoguer::Error::IO(io) if io.kind() == io::ErrorKind::Interrupted => {
                    Error::Cancelled
                }
                dialoguer::Error::IO(io) => Error::io("terminal", io),
            })
    }
}

fn map_stdout(e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Error::ClosedOutput
    } else {
        Error::io("stdout", e)
    }
}

/// A bar when the length is known, else a spinner with a count.
fn progress_style(bar: bool) -> ProgressStyle {
    if bar {
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({rate}, eta {eta})")
    } else {
        ProgressStyle::with_template("{spinner} {msg} {pos} ({rate})")
    }
    .expect("static template")
    .with_key(
        "rate",
        |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{}", fmt_rate(s.per_sec()));
        },
    )
    .progress_chars("=> ")
}

/// Messages per second as a person reads them: `99,130/s`, `12/s`, `0.5/s`.
pub fn fmt_rate(per_sec: f64) -> String {
    if !per_sec.is_finite() || per_sec <= 0.0 {
        return "0/s".into();
    }
    if per_sec < 10.0 {
        return format!("{per_sec:.1}/s");
    }
    let n = per_sec.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    format!("{out}/s")
}

/// An error that ends a command, and its hint, on stderr (secrets scrubbed). A closed stdout
/// ends quietly; an interrupt or a cancelled question says only that.
pub fn error(e: &crate::error::Error) {
    use crate::error::Error;
    match e.root() {
        Error::ClosedOutput => {}
        Error::Interrupted => eprintln!("interrupted"),
        Error::Cancelled => eprintln!("cancelled; nothing done"),
        _ => {
            eprintln!("error: {}", crate::secrets::scrub(&e.to_string()));
            if let Some(h) = e.hint() {
                eprintln!("  hint: {}", crate::secrets::scrub(&h));
            }
        }
    }
}

/// A line on stderr outside any command's output (the signal handler's notes).
pub fn notice(msg: &str) {
    eprintln!("{msg}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_rounded() {
        assert_eq!(fmt_rate(99_129.595_3), "99,130/s");
        assert_eq!(fmt_rate(1_234_567.0), "1,234,567/s");
        assert_eq!(fmt_rate(12.4), "12/s");
        assert_eq!(fmt_rate(0.46), "0.5/s");
        assert_eq!(fmt_rate(f64::NAN), "0/s");
    }
}
