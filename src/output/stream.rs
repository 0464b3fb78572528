//! The two streams of the terminal as [`super::Printer`] owns them, and the capture that
//! stands in for them: what a test (or a future TUI) reads instead of a terminal.
//!
//! Everything dlqctl shows a person goes through here: stdout (data) through the printer,
//! stderr through a [`Stderr`] handle that the printer lends to code that has no printer (the
//! signal handler, a `--where`'s notes when its filter is dropped, the audit trail's warnings,
//! the log, progress lines). Two exceptions, both at a terminal only: indicatif's bars and
//! dialoguer's questions draw on the terminal itself (they move the cursor), and clap prints
//! its own usage errors and `--help` before there is a printer.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

/// The stderr half of the terminal: plans, warnings, notes, progress lines, the log and the
/// final error. Cheap to clone; every clone writes to the same place, a line at a time.
#[derive(Clone)]
pub struct Stderr(Arc<Mutex<Box<dyn Write + Send>>>);

impl Default for Stderr {
    /// The process's stderr, unbuffered (a line is seen as soon as it is written).
    fn default() -> Stderr {
        Stderr::to(io::stderr())
    }
}

impl Stderr {
    pub fn to(w: impl Write + Send + 'static) -> Stderr {
        Stderr(Arc::new(Mutex::new(Box::new(w))))
    }

    /// One line (a newline is added). A stderr that cannot be written to is not an error of
    /// the command's: the line is lost.
    pub fn line(&self, s: &str) {
        let mut w = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let _ = w
            .write_all(s.as_bytes())
            .and_then(|_| w.write_all(b"\n"))
            .and_then(|_| w.flush());
    }

    /// Write to `w` from now on instead; what was written to before is returned (to be put
    /// back). `dlqctl ui` holds the log and the signal handler's lines this way while it draws
    /// on the terminal, and shows them once it has given the terminal back.
    pub fn swap(&self, w: Box<dyn Write + Send>) -> Box<dyn Write + Send> {
        let mut cur = self.0.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::replace(&mut *cur, w)
    }

    /// Text as it is (a log event brings its own newline).
    pub fn write(&self, s: &str) {
        let mut w = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let _ = w.write_all(s.as_bytes()).and_then(|_| w.flush());
    }
}

/// The log (`-v`, `DLQCTL_LOG`, and the warnings dlqctl logs) on the terminal's stderr,
/// secrets scrubbed: one event, one write.
#[derive(Clone)]
pub struct LogWriter(pub Stderr);

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogEvent;
    fn make_writer(&'a self) -> LogEvent {
        LogEvent(Vec::new(), self.0.clone())
    }
}

/// Collects one event's text and writes it, scrubbed, when dropped.
pub struct LogEvent(Vec<u8>, Stderr);

impl Write for LogEvent {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for LogEvent {
    fn drop(&mut self) {
        if !self.0.is_empty() {
            self.1
                .write(&crate::secrets::scrub(&String::from_utf8_lossy(&self.0)));
        }
    }
}

/// What a [`super::Printer::capture`] printer wrote: stdout, stderr, and both as a person at
/// the terminal would have seen them, in order.
#[derive(Clone, Default)]
pub struct Captured {
    out: Arc<Mutex<Vec<u8>>>,
    err: Arc<Mutex<Vec<u8>>>,
    screen: Arc<Mutex<Vec<u8>>>,
}

fn text(b: &Mutex<Vec<u8>>) -> String {
    String::from_utf8_lossy(&b.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
}

impl Captured {
    /// What went to stdout.
    pub fn text(&self) -> String {
        text(&self.out)
    }

    /// What went to stderr.
    pub fn stderr(&self) -> String {
        text(&self.err)
    }

    /// Both streams, interleaved as they were written.
    pub fn screen(&self) -> String {
        text(&self.screen)
    }

    pub(super) fn stdout_writer(&self) -> Tap {
        Tap {
            stream: self.out.clone(),
            screen: self.screen.clone(),
        }
    }

    pub(super) fn stderr_writer(&self) -> Tap {
        Tap {
            stream: self.err.clone(),
            screen: self.screen.clone(),
        }
    }
}

/// One captured stream, and the screen both share.
pub(super) struct Tap {
    stream: Arc<Mutex<Vec<u8>>>,
    screen: Arc<Mutex<Vec<u8>>>,
}

impl Write for Tap {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let mut screen = self.screen.lock().unwrap_or_else(|p| p.into_inner());
        self.stream
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(b);
        screen.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
