//! `dlqctl ui`: a terminal UI over the same engine as the commands (docs/ui.md).
//!
//! Three parts that never blur: `app.rs`, the state and what each key does (pure); `draw.rs`,
//! what the screen shows of that state (pure); `worker.rs`, the I/O, in tasks that send their
//! results back over a channel. This file owns the terminal: it is put in raw mode on the
//! alternate screen and given back as it was on every way out (return, error, panic, Ctrl-C,
//! SIGTERM).

use std::io::IsTerminal;
use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use tokio::sync::mpsc;

use crate::error::{Error, Result, exit};
use crate::settings::{Ctx, QueueRef};

pub mod app;
pub mod arrivals;
mod aside;
pub mod draw;
mod limits;
pub mod raw;
pub mod types;
mod worker;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_actions;
#[cfg(test)]
mod tests_body;

use app::{App, Effect, Key};

/// What `dlqctl ui` was asked for, resolved.
pub struct UiRequest {
    pub queues: Vec<QueueRef>,
    /// No action: the keys that change something say they are disabled.
    pub read_only: bool,
    /// How often the queues view is read again.
    pub refresh: Duration,
    /// Messages read per queue for its classes and oldest age.
    pub scan_max: u64,
    /// Styles beyond the selection (`--color`, NO_COLOR).
    pub color: bool,
}

/// `ctx` is lent to `dlqctl edit` (`e`) with the reason typed for it.
pub async fn run(ctx: &mut Ctx, req: UiRequest) -> Result<i32> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(Error::Refused {
            command: "ui",
            reason:
                "needs a terminal (stdin and stdout); for scripts use inspect, classify or peek"
                    .into(),
        });
    }
    let mut app = App::new(req.queues.iter().map(label).collect(), req.read_only);
    app.color = req.color;
    for (row, q) in app.queues.iter_mut().zip(&req.queues) {
        row.limited = crate::ops::check::has_limits(&q.cfg.limits);
    }
    app.needs_reason = ctx.config.audit.require_reason && ctx.reason.is_none();
    let (tx, rx) = mpsc::unbounded_channel();
    let mut worker = worker::Worker::new(
        worker::Base {
            config: ctx.config.clone(),
            aws: ctx.aws.clone(),
            interrupt: ctx.interrupt.clone(),
            opener: ctx.opener.clone(),
            reason: ctx.reason.clone(),
            scan_max: req.scan_max,
        },
        req.queues,
        tx,
    );
    // The log and the signal handler write to stderr: held while the screen is drawn, shown
    // after (a line written on the screen would break it).
    let held = Held::default();
    let stderr = ctx.printer.stderr();
    let mut terminal_stderr = stderr.swap(Box::new(held.clone()));
    let entered = Terminal::enter();
    let r = match entered {
        Ok(mut guard) => {
            let r = event_loop(
                &mut guard.0,
                &mut app,
                &mut worker,
                rx,
                req.refresh,
                ctx,
                &mut terminal_stderr,
            )
            .await;
            drop(guard);
            r
        }
        Err(e) => Err(e),
    };
    stderr.swap(terminal_stderr);
    stderr.write(&held.text());
    // A run that ended as the UI closed (Ctrl-C during a redrive): its summary stays on screen.
    if let Some(app::Action::Done { summary, .. } | app::Action::Failed(summary)) = &app.action {
        ctx.printer.notice(summary.trim_end());
    }
    r.map(|()| {
        if ctx.interrupt.is_set() {
            exit::INTERRUPTED
        } else {
            exit::OK
        }
    })
}

/// What was written to stderr while the UI was up.
#[derive(Clone, Default)]
struct Held(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Held {
    fn text(&self) -> String {
        let b = self.0.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&b).into_owned()
    }
}

impl std::io::Write for Held {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut b = self.0.lock().unwrap_or_else(|p| p.into_inner());
        b.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn label(q: &QueueRef) -> String {
    q.name.clone().unwrap_or_else(|| q.address.to_string())
}

type Screen = ratatui::Terminal<ratatui::backend::CrosstermBackend<std::io::Stdout>>;

/// The terminal in raw mode on the alternate screen; given back as it was when dropped, and
/// by the panic hook it installs.
struct Terminal(Screen);

impl Terminal {
    fn enter() -> Result<Terminal> {
        let io = |e: std::io::Error| Error::io("terminal", e);
        enable_raw_mode().map_err(io)?;
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        if let Err(e) = execute!(std::io::stdout(), EnterAlternateScreen) {
            restore();
            return Err(io(e));
        }
        let backend = ratatui::backend::CrosstermBackend::new(std::io::stdout());
        match ratatui::Terminal::new(backend) {
            Ok(t) => Ok(Terminal(t)),
            Err(e) => {
                restore();
                Err(io(e))
            }
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.0.show_cursor();
        restore();
    }
}

/// Leave the alternate screen and raw mode (safe to call twice).
fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        LeaveAlternateScreen,
        ratatui::crossterm::cursor::Show
    );
}

/// Keys from a thread that blocks on the terminal, to the loop; stopped (and waited for)
/// before another program is given the terminal (`e`: the editor), so that none of its keys
/// are taken.
struct Keys {
    rx: mpsc::UnboundedReceiver<Key>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Keys {
    fn stop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn spawn_keys() -> Keys {
    let (tx, rx) = mpsc::unbounded_channel();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = stop.clone();
    let thread = std::thread::spawn(move || {
        loop {
            // Polled, so that the thread ends soon after the loop stops listening.
            if stopped.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            match event::poll(Duration::from_millis(100)) {
                Ok(false) if tx.is_closed() => return,
                Ok(false) => continue,
                Ok(true) => {}
                Err(_) => return,
            }
            let Ok(ev) = event::read() else { return };
            if let Some(k) = key(ev)
                && tx.send(k).is_err()
            {
                return;
            }
        }
    });
    Keys {
        rx,
        stop,
        thread: Some(thread),
    }
}

/// A crossterm event as the state machine's key (None: not one it knows).
fn key(ev: Event) -> Option<Key> {
    let Event::Key(k) = ev else { return None };
    if k.kind == KeyEventKind::Release {
        return None;
    }
    Some(match k.code {
        KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => Key::Interrupt,
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::PageUp => Key::PageUp,
        _ => return None,
    })
}

/// Draw, then wait for a key, a result or the refresh timer; until `q`, Ctrl-C or SIGTERM
/// (during a redrive, those stop it after its current batch, as in the CLI, and the UI closes
/// once its summary is in).
async fn event_loop(
    screen: &mut Screen,
    app: &mut App,
    worker: &mut worker::Worker,
    mut results: mpsc::UnboundedReceiver<app::Loaded>,
    refresh: Duration,
    ctx: &mut Ctx,
    terminal_stderr: &mut Box<dyn std::io::Write + Send>,
) -> Result<()> {
    let mut keys = spawn_keys();
    let mut tick = tokio::time::interval(refresh);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        screen
            .draw(|f| draw::draw(f, app))
            .map_err(|e| Error::io("terminal", e))?;
        let running = app.action == Some(app::Action::Running);
        let effect = tokio::select! {
            k = keys.rx.recv() => match k {
                Some(k) => app.on_key(k),
                None => Effect::Quit,
            },
            Some(l) = results.recv() => {
                app.on_loaded(l);
                Effect::None
            }
            _ = tick.tick() => match app.view {
                app::View::Queues => Effect::LoadQueues,
                _ => Effect::None,
            },
            () = ctx.interrupt.wait(), if !running => Effect::Quit,
        };
        match effect {
            Effect::Quit => return Ok(()),
            Effect::Stop => ctx.interrupt.trigger(),
            Effect::Edit { queue, id, reason } => {
                let Some(queue) = worker.queue(queue) else {
                    continue;
                };
                keys.stop();
                // The reason typed for this edit, for it alone.
                let given = reason
                    .is_some()
                    .then(|| std::mem::replace(&mut ctx.reason, reason));
                let outcome = aside::edit(screen, ctx, terminal_stderr, queue, id).await;
                if let Some(given) = given {
                    ctx.reason = given;
                }
                keys = spawn_keys();
                let e = app.edited(outcome?);
                worker.perform(e);
            }
            e => worker.perform(e),
        }
    }
}
