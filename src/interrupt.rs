//! Ctrl-C and SIGTERM, as the long operations see them: a flag set once, and what a first
//! Ctrl-C means where the command is. The bottom layer: nothing here imports from the crate
//! (the settings hold one, `Ctx::interrupt`; the reading, query and move code watch it).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Set once by Ctrl-C / SIGTERM. Long operations stop at the next safe point.
#[derive(Clone, Default)]
pub struct Interrupt {
    flag: Arc<AtomicBool>,
    notify: Arc<Notify>,
    /// Where a command that changes something is: see [`Phase`].
    phase: Arc<std::sync::atomic::AtomicU8>,
}

/// What a first Ctrl-C means, by where the command is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Reading (peek, tail, export, classify): stop reading, show what was read.
    Reading = 0,
    /// At the question before a change: nothing was done, the command ends at once.
    Asking = 1,
    /// Changing (redrive, replay): finish the current batch, then stop.
    Changing = 2,
    /// An editor runs in the foreground (`edit`): a Ctrl-C is the editor's (vi uses it), and
    /// dlqctl ignores it.
    Editing = 3,
}

impl Interrupt {
    pub fn set_phase(&self, p: Phase) {
        self.phase.store(p as u8, Ordering::SeqCst);
    }

    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::SeqCst) {
            1 => Phase::Asking,
            2 => Phase::Changing,
            3 => Phase::Editing,
            _ => Phase::Reading,
        }
    }

    pub fn trigger(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    pub async fn wait(&self) {
        loop {
            let n = self.notify.notified();
            if self.is_set() {
                return;
            }
            n.await;
        }
    }
}
