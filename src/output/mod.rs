//! The one owner of the terminal: data to stdout; plans, warnings, notes, progress, prompts
//! and the final error (with its hints) to stderr, and bars and prompts only when stderr is a
//! terminal and the output is for people. [`Printer::capture`] puts both streams in buffers
//! (see [`stream`] for what goes where).

use std::collections::VecDeque;
use std::io::{self, IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget};
use serde::Serialize;

use crate::error::{Error, Result};

mod log;
mod progress;
mod stream;
pub mod table;

pub use log::init as init_log;
pub use progress::{fmt_rate, thousands};
pub use stream::{Captured, LogWriter, Stderr};
pub use table::{Cell, Col, Grid};

/// The width tables are laid out for when neither `COLUMNS` nor a terminal says: wide enough
/// for every column a person needs, narrow enough to read in a file, a mail or a CI log.
pub const DEFAULT_WIDTH: usize = 120;

/// A command line suggested in a message, each word quoted for a POSIX shell where it needs it
/// (a queue name or jq text with quotes, spaces or `$` stays one word): what is shown can be
/// pasted as it is.
pub fn command_line(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| {
            shlex::try_quote(w).map_or_else(|_| w.escape_debug().to_string(), |q| q.into_owned())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a command writes to stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// Tables and text for people.
    Table,
    /// One JSON document.
    Json,
    /// One JSON object per line.
    Jsonl,
    /// JUnit XML (verify and check).
    Junit,
    /// OpenMetrics text (inspect and check).
    Prometheus,
}

/// `--output`: a format, or tables with every column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputChoice {
    /// Tables and text for people (the default at a terminal), fitted to its width
    /// (`COLUMNS` when set)
    Table,
    /// Tables with every column in full, whatever the width
    Wide,
    /// One JSON document (the default when stdout is not a terminal)
    Json,
    /// One JSON object per line (JSON Lines), for jq and scripts
    Jsonl,
    /// JUnit XML (verify and check)
    Junit,
    /// OpenMetrics text (inspect and check)
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
    /// `--output wide`: every column of every table, in full.
    wide: bool,
    /// The width tables are fitted to (stdout; plans on stderr use [`Printer::plan_width`]).
    width: usize,
    progress: bool,
    /// Without a terminal on stderr (a script, CI): a progress line this often, as rsync and
    /// curl print one (None: never, with `--quiet` or `--no-progress`).
    progress_lines: Option<Duration>,
    interactive: bool,
    out: Mutex<Box<dyn Write + Send>>,
    err: Stderr,
    /// Whether stderr is a terminal (colour on stderr), and the width plans are fitted to.
    err_tty: bool,
    err_width: usize,
    /// A captured printer's answers to its questions, in order (none left: no terminal).
    answers: Option<Mutex<VecDeque<bool>>>,
    /// `dlqctl ui`: the last progress bar made, where the UI reads how far its work is.
    watch: Option<ProgressWatch>,
    /// A plan was shown ([`Printer::plan`]): what it said need not be said again.
    planned: std::sync::atomic::AtomicBool,
}

/// Where a printer leaves the progress bar its work makes (hidden: the UI shows the count in
/// its own view instead; see [`Printer::watched`]).
#[derive(Clone, Default)]
pub struct ProgressWatch(std::sync::Arc<Mutex<Option<ProgressBar>>>);

impl ProgressWatch {
    /// The current bar's message, position and length (None: no bar yet, or it finished).
    pub fn now(&self) -> Option<(String, u64, Option<u64>)> {
        let bar = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let b = bar.as_ref().filter(|b| !b.is_finished())?;
        Some((b.message(), b.position(), b.length()))
    }
}

pub struct PrinterOptions {
    pub format: Option<OutputChoice>,
    pub color: ColorChoice,
    pub quiet: bool,
    pub verbose: u8,
    pub no_progress: bool,
    /// How often a progress line is printed when stderr is not a terminal.
    pub progress_interval: Duration,
}

/// How often a progress line is printed without a terminal, unless `DLQCTL_PROGRESS_INTERVAL`
/// (seconds) says otherwise.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(10);

impl Printer {
    pub fn new(o: PrinterOptions) -> Printer {
        let stdout_tty = io::stdout().is_terminal();
        let stderr_tty = io::stderr().is_terminal();
        let wide = o.format == Some(OutputChoice::Wide);
        let format = match o.format {
            Some(OutputChoice::Table | OutputChoice::Wide) => OutputFormat::Table,
            Some(OutputChoice::Json) => OutputFormat::Json,
            Some(OutputChoice::Jsonl) => OutputFormat::Jsonl,
            Some(OutputChoice::Junit) => OutputFormat::Junit,
            Some(OutputChoice::Prometheus) => OutputFormat::Prometheus,
            None if stdout_tty => OutputFormat::Table,
            None => OutputFormat::Json,
        };
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
            wide,
            width: width_of(&io::stdout()),
            progress: stderr_tty && !o.no_progress && !o.quiet && format == OutputFormat::Table,
            progress_lines: (!stderr_tty && !o.no_progress && !o.quiet)
                .then_some(o.progress_interval),
            interactive: stderr_tty && io::stdin().is_terminal(),
            out: Mutex::new(Box::new(io::BufWriter::new(io::stdout()))),
            err: Stderr::default(),
            err_tty: stderr_tty,
            err_width: width_of(&io::stderr()),
            answers: None,
            watch: None,
            planned: Default::default(),
        }
    }

    /// A printer whose stdout and stderr are buffers (tests, and anything else that shows
    /// what a person would see: summaries, tables, plans, warnings, errors), with no progress
    /// and no questions (see [`Printer::answering`]).
    pub fn capture(format: OutputFormat) -> (Printer, Captured) {
        let buf = Captured::default();
        let p = Printer {
            format,
            color: false,
            quiet: false,
            verbose: 0,
            wide: false,
            width: DEFAULT_WIDTH,
            progress: false,
            progress_lines: None,
            interactive: false,
            out: Mutex::new(Box::new(buf.stdout_writer())),
            err: Stderr::to(buf.stderr_writer()),
            err_tty: false,
            err_width: DEFAULT_WIDTH,
            answers: None,
            watch: None,
            planned: Default::default(),
        };
        (p, buf)
    }

    /// A captured printer that answers its questions with `answers`, in order: each question
    /// and its answer are written to stderr as a person would have seen them.
    pub fn answering(mut self, answers: &[bool]) -> Printer {
        self.interactive = true;
        self.answers = Some(Mutex::new(answers.iter().copied().collect()));
        self
    }

    /// The same printer, whose progress bars are left in `watch` for the caller to read.
    pub fn watched(mut self, watch: ProgressWatch) -> Printer {
        self.watch = Some(watch);
        self
    }

    /// The stderr half of the terminal, for code that has no printer (see [`Stderr`]).
    pub fn stderr(&self) -> Stderr {
        self.err.clone()
    }

    /// Whether progress is shown (a bar at a terminal, or lines without one): worth knowing
    /// how much there is to do.
    pub fn progress_enabled(&self) -> bool {
        self.progress || self.progress_lines.is_some()
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
        let mut g = Grid::pairs();
        for (k, v) in rows {
            g.row(vec![Cell::new(k.as_str()), Cell::new(v.as_str())]);
        }
        self.err
            .line(&g.render(self.plan_width(), self.color_stderr()));
        self.planned
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a plan was shown on stderr (a run's warnings that its plan already gave are
    /// not repeated).
    pub fn planned(&self) -> bool {
        self.planned.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The width a table on stdout is fitted to; `None` with `--output wide` (every column).
    pub fn width(&self) -> Option<usize> {
        (!self.wide).then_some(self.width)
    }

    /// The width of the plan on stderr.
    fn plan_width(&self) -> Option<usize> {
        (!self.wide).then_some(self.err_width)
    }

    /// Prose for people (a note), wrapped at spaces to stdout's width, the lines after the
    /// first indented under its text.
    pub fn para(&self, lead: &str, text: &str) -> String {
        let Some(width) = self.width() else {
            return format!("{lead}{text}");
        };
        let indent = lead.chars().count();
        let lines = table::wrap(text, width.saturating_sub(indent).max(20), usize::MAX);
        let pad = " ".repeat(indent);
        lines
            .iter()
            .enumerate()
            .map(|(i, l)| format!("{}{l}", if i == 0 { lead } else { &pad }))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A sentence of a summary (what was held, committed past, left, a note), wrapped at
    /// spaces to stdout's width, the lines after the first indented by two spaces (as
    /// [`Printer::facts`] does).
    pub fn prose(&self, text: &str) -> String {
        let Some(width) = self.width() else {
            return text.to_string();
        };
        table::wrap(text, width.saturating_sub(2).max(20), usize::MAX)
            .iter()
            .enumerate()
            .map(|(i, l)| if i == 0 { l.clone() } else { format!("  {l}") })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Facts joined by ` · `, on as many lines as stdout's width needs (a fact is never
    /// broken; the lines after the first are indented by two spaces).
    pub fn facts(&self, parts: &[String]) -> String {
        let room = self.width().unwrap_or(usize::MAX);
        let mut out = String::new();
        let mut line = String::new();
        for f in parts {
            if !line.is_empty() && line.chars().count() + 3 + f.chars().count() > room {
                out.push_str(&line);
                out.push_str("\n  ");
                line.clear();
            } else if !line.is_empty() {
                line.push_str(" · ");
            }
            line.push_str(f);
        }
        out.push_str(&line);
        out
    }

    /// A table as text, fitted to stdout's width (or in full with `--output wide`).
    pub fn grid(&self, g: &Grid) -> String {
        g.render(self.width(), self.color)
    }

    /// A printer that fits tables to `width` (unit tests: what a terminal of that width shows).
    #[cfg(test)]
    pub fn with_width(mut self, width: Option<usize>) -> Printer {
        match width {
            Some(w) => {
                self.width = w;
                self.err_width = w;
            }
            None => self.wide = true,
        }
        self
    }

    /// A note that belongs to a plan (`nothing done`): shown with it.
    pub fn plan_note(&self, msg: &str, asked: bool) {
        if !self.quiet || asked {
            self.err.line(msg);
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
            self.err.line(msg);
        }
    }

    /// A warning on stderr, wrapped at spaces to stderr's width (a word is never broken by the
    /// terminal's wrap), the lines after the first under its text.
    pub fn warn(&self, msg: &str) {
        if self.quiet {
            return;
        }
        let lead = "warning: ";
        let text = match self.plan_width() {
            Some(w) => table::wrap(msg, w.saturating_sub(lead.len()).max(20), usize::MAX)
                .join(&format!("\n{}", " ".repeat(lead.len()))),
            None => msg.to_string(),
        };
        if self.color_stderr() {
            self.err.line(&format!("\x1b[33mwarning:\x1b[0m {text}"));
        } else {
            self.err.line(&format!("{lead}{text}"));
        }
    }

    /// A line on stderr whatever `--quiet` says (a run's own warning that must be seen).
    pub fn notice(&self, msg: &str) {
        self.err.line(msg);
    }

    /// The error that ends a command, and its hints, one `hint:` line each, on stderr
    /// (secrets scrubbed). A closed stdout ends quietly; an interrupt or a cancelled question
    /// says only that.
    pub fn error(&self, e: &Error) {
        match e.root() {
            Error::ClosedOutput => {}
            Error::Interrupted => self.err.line("interrupted"),
            Error::Cancelled => self.err.line("cancelled; nothing done"),
            _ => {
                let mut text = format!("error: {}", crate::secrets::scrub(&e.to_string()));
                for h in e.hints() {
                    text.push_str(&format!("\n  hint: {}", crate::secrets::scrub(&h)));
                }
                self.err.line(&text);
            }
        }
    }

    fn color_stderr(&self) -> bool {
        self.color && self.err_tty
    }

    /// A progress bar on stderr at a terminal; without one, a hidden bar whose state a line on
    /// stderr reports every so often (see [`PROGRESS_INTERVAL`]); else a hidden one.
    pub fn progress(&self, len: Option<u64>, what: &str) -> ProgressBar {
        if !self.progress {
            let bar = ProgressBar::hidden();
            if let Some(n) = len {
                bar.set_length(n);
            }
            bar.set_message(what.to_string());
            if let Some(every) = self.progress_lines {
                progress::report_lines(&bar, every, self.err.clone());
            }
            if let Some(w) = &self.watch {
                *w.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(bar.clone());
            }
            return bar;
        }
        // A bar redraws itself in place: it is drawn on the terminal (stderr) by indicatif,
        // only when stderr is one (`progress` says so), never into a capture.
        let bar = ProgressBar::with_draw_target(len, ProgressDrawTarget::stderr());
        bar.set_style(progress::style(len.is_some()));
        bar.set_message(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    }

    /// Give a progress spinner its length once it is known: it becomes a bar (and a progress
    /// line says "of N").
    pub fn set_progress_length(&self, bar: &ProgressBar, len: u64) {
        bar.set_length(len);
        if self.progress {
            bar.set_style(progress::style(true));
        }
    }

    /// Ask a yes/no question at the terminal. Without one, refuse: `what` needs `--yes`.
    pub fn confirm(&self, prompt: &str, what: &str) -> Result<bool> {
        if !self.interactive {
            return Err(Error::NoTerminal { what: what.into() });
        }
        if let Some(answers) = &self.answers {
            let answer = answers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop_front()
                .ok_or_else(|| Error::NoTerminal { what: what.into() })?;
            let said = if answer { "yes" } else { "no" };
            self.err.line(&format!("{prompt} [y/N] {said}"));
            return Ok(answer);
        }
        // dialoguer draws the question on the terminal itself (stderr), as a bar is drawn.
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

/// The width to fit tables to: `COLUMNS` when set (a fixed width for scripts and tests), else
/// the terminal's, else [`DEFAULT_WIDTH`].
fn width_of(stream: &impl std::os::fd::AsFd) -> usize {
    if let Some(n) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
    {
        return n;
    }
    terminal_size::terminal_size_of(stream)
        .map(|(w, _)| usize::from(w.0))
        .filter(|&w| w > 0)
        .unwrap_or(DEFAULT_WIDTH)
}

fn map_stdout(e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Error::ClosedOutput
    } else {
        Error::io("stdout", e)
    }
}

#[cfg(test)]
mod tests;
