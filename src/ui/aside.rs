//! `e`: the UI steps aside for `dlqctl edit`. The terminal is given back as it was (main
//! screen, cooked mode, stderr no longer held), the command's own code runs on it (the editor,
//! the diff, the plan, its question, its summary), and once enter is pressed the UI takes the
//! terminal again.

use std::io::Write;

use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{Clear, ClearType, EnterAlternateScreen, enable_raw_mode};

use super::Screen;
use crate::error::{Error, Result, exit};
use crate::ops::edit::EditRequest;
use crate::settings::{Ctx, QueueRef};

/// Run `dlqctl edit QUEUE --id ID` on the terminal; what the status line says of it after.
/// An error of the edit is the command's (printed, then the UI comes back); an error of the
/// terminal ends the UI.
pub async fn edit(
    screen: &mut Screen,
    ctx: &Ctx,
    terminal_stderr: &mut Box<dyn Write + Send>,
    queue: QueueRef,
    id: String,
) -> Result<String> {
    super::restore();
    let stderr = ctx.printer.stderr();
    let held = stderr.swap(std::mem::replace(
        terminal_stderr,
        Box::new(std::io::sink()),
    ));
    let req = EditRequest {
        queue,
        id: id.clone(),
        to: None,
    };
    let outcome = match crate::ops::edit::run(ctx, req).await {
        Ok(exit::OK) => format!("edit of {id}: done; what it said is on the terminal after the UI"),
        Ok(code) => format!("edit of {id}: ended with exit code {code}"),
        Err(e) => {
            stderr.write(&format!("dlqctl: {e}\n"));
            format!("edit of {id}: {e}")
        }
    };
    // The summary (stdout) before the line that asks for enter.
    let _ = ctx.printer.flush();
    stderr.write("enter: back to dlqctl ui\n");
    // The answer is read off the runtime's threads: the tasks of the views go on meanwhile.
    let _ = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)
    })
    .await;
    *terminal_stderr = stderr.swap(held);
    let io = |e: std::io::Error| Error::io("terminal", e);
    enable_raw_mode().map_err(io)?;
    execute!(
        std::io::stdout(),
        EnterAlternateScreen,
        Clear(ClearType::All)
    )
    .map_err(io)?;
    // Everything is drawn again, on a terminal of its own: ratatui's clear() would ask the
    // terminal where its cursor is, which not every terminal answers.
    *screen = ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()))
        .map_err(io)?;
    Ok(outcome)
}
