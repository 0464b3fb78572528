//! Ctrl-C and SIGTERM while a command runs: the first stops it gently (at the end of a batch,
//! or at once while it asks), the second at once.

use crate::error::exit;
use crate::settings::{Interrupt, Phase};

/// Ctrl-C and SIGTERM; what it says goes to the terminal's stderr (`err`).
pub(super) fn spawn_signal_handler(interrupt: Interrupt, err: crate::output::Stderr) {
    tokio::spawn(async move {
        #[cfg(unix)]
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let mut count = 0;
        loop {
            #[cfg(unix)]
            let got = match term.as_mut() {
                Some(t) => tokio::select! {
                    r = tokio::signal::ctrl_c() => r.is_ok(),
                    r = t.recv() => r.is_some(),
                },
                None => tokio::signal::ctrl_c().await.is_ok(),
            };
            #[cfg(not(unix))]
            let got = tokio::signal::ctrl_c().await.is_ok();
            if !got {
                return;
            }
            if interrupt.phase() == Phase::Editing {
                // The editor's: the terminal sends it to the whole foreground group.
                continue;
            }
            count += 1;
            if count == 1 {
                match interrupt.phase() {
                    Phase::Asking => {
                        err.line("\ncancelled; nothing done");
                        std::process::exit(exit::INTERRUPTED);
                    }
                    Phase::Changing => err.line(
                        "\ninterrupting: finishing the current batch (press Ctrl-C again to stop at once)",
                    ),
                    Phase::Reading | Phase::Editing => {
                        err.line("\ninterrupting (press Ctrl-C again to stop at once)")
                    }
                }
                interrupt.trigger();
            } else {
                // The open transaction, if any, is rolled back by the server: nothing is lost.
                // The audit trail says how many had left the source by now.
                crate::audit::stopped();
                err.line("stopped");
                std::process::exit(exit::INTERRUPTED);
            }
        }
    });
}
