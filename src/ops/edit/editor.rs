//! The editor, and the file it edits: kept in the state directory until the edited copy is
//! sent, so that what a person typed survives anything that fails after the editor (a typo in
//! the JSON, a refused copy, a message that changed meanwhile, a "no"), and the next `edit` of
//! that message reopens it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sha2::Digest;

use crate::error::{Error, Result};

/// The edit of one message, on disk: `STATE/edits/ID.HASH.json` (0600: it holds the body).
pub struct Kept {
    pub path: PathBuf,
}

impl Kept {
    /// Where the edit of message `id` of `queue` is kept.
    pub fn of(state_dir: Option<&Path>, queue: &str, id: &str) -> Kept {
        let hash = sha2::Sha256::digest(format!("{queue}\0{id}").as_bytes());
        let readable: String = id
            .chars()
            .take(40)
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let hex: String = hash[..4].iter().map(|b| format!("{b:02x}")).collect();
        Kept {
            path: crate::fsutil::state_dir(state_dir)
                .join("edits")
                .join(format!("{readable}.{hex}.json")),
        }
    }

    /// The text kept from an earlier edit, if there is one.
    pub fn earlier(&self) -> Result<Option<String>> {
        match std::fs::read_to_string(&self.path) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(&self.path, e)),
        }
    }

    /// Start a new edit with `text`.
    pub fn create(&self, text: &str) -> Result<()> {
        use std::io::Write;
        if let Some(dir) = self.path.parent() {
            crate::fsutil::create_dir_private(dir).map_err(|e| Error::io(dir, e))?;
        }
        let mut f =
            crate::fsutil::create_private(&self.path).map_err(|e| Error::io(&self.path, e))?;
        f.write_all(text.as_bytes())
            .and_then(|_| f.sync_all())
            .map_err(|e| Error::io(&self.path, e))
    }

    /// The text as the editor left it.
    pub fn read(&self) -> Result<String> {
        std::fs::read_to_string(&self.path).map_err(|e| Error::io(&self.path, e))
    }

    /// The edit is done with (sent, or unchanged).
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }

    /// `e`, saying where the edit is kept and how to go on.
    pub fn hint(&self, e: Error) -> Error {
        if matches!(e.root(), Error::Cancelled | Error::Interrupted) {
            return e;
        }
        e.and_hint(format!(
            "your edit is kept in {}: run the same `dlqctl edit` to reopen it (delete the file to start from the message as it is now)",
            self.path.display()
        ))
    }
}

/// The editor: `$VISUAL`, else `$EDITOR` (an empty one counts as unset, as git does), else
/// `vi`; and which it is, for messages.
fn editor() -> (OsString, &'static str) {
    for var in ["VISUAL", "EDITOR"] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.to_string_lossy().trim().is_empty()) {
            return (
                v,
                if var == "VISUAL" {
                    "$VISUAL"
                } else {
                    "$EDITOR"
                },
            );
        }
    }
    (
        if cfg!(windows) { "notepad" } else { "vi" }.into(),
        "the default editor (neither $VISUAL nor $EDITOR is set)",
    )
}

/// Open `path` in the editor and wait for it. The editor is a command line, run by the shell
/// with the file as its last argument (`EDITOR="code --wait"` works, as with git).
pub fn edit(path: &Path) -> Result<()> {
    let (ed, from) = editor();
    let shown = ed.to_string_lossy().into_owned();
    #[cfg(unix)]
    let status = {
        // `exec`: the editor takes the shell's place, so that a signal from the terminal
        // reaches it, not a shell that would die under it.
        let mut line = OsString::from("exec ");
        line.push(&ed);
        line.push(" \"$@\"");
        use std::os::unix::process::CommandExt;
        // dlqctl, in the same foreground group, ignores the terminal's Ctrl-C from before the
        // editor starts until it has exited (set after the spawn, an editor quick to read or
        // send it could find it not yet ignored); the editor starts with Ctrl-C's usual
        // meaning (an ignored signal would be inherited through exec: reset in the child).
        let _ignored = IgnoreCtrlC::now();
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.arg("-c").arg(line).arg(&ed).arg(path);
        // SAFETY: between fork and exec the child calls only `signal`, which is
        // async-signal-safe, and allocates nothing.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        cmd.spawn().and_then(|mut child| child.wait())
    };
    #[cfg(not(unix))]
    let status = {
        let mut words = shown.split_whitespace();
        std::process::Command::new(words.next().unwrap_or("notepad"))
            .args(words)
            .arg(path)
            .status()
    };
    let failed = |why: String| {
        Error::invalid_arg(
            "$VISUAL/$EDITOR",
            format!(
                "the editor `{}` ({from}) {why}; nothing done",
                crate::text::escape_controls(&shown)
            ),
        )
        .hinted("set VISUAL or EDITOR to an editor command that waits until the file is saved and closed (e.g. `vi`, `nano`, `code --wait`)")
    };
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) if s.code() == Some(127) => Err(failed("could not be started".into())),
        Ok(s) => Err(failed(match s.code() {
            Some(c) => format!("exited with status {c}"),
            None => "was stopped by a signal".into(),
        })),
        Err(e) => Err(failed(format!("could not be started ({e})"))),
    }
}

/// SIGINT ignored by the kernel for as long as this lives, then handled as before (what git
/// does around its editor). The terminal sends a Ctrl-C typed in the editor (vi uses it) to the
/// whole foreground group; the runtime's handler would see it later, after the editor exits if
/// the machine is busy, and take it as the user's Ctrl-C to the run that follows. An ignored
/// signal is discarded when sent, so none is left over.
#[cfg(unix)]
struct IgnoreCtrlC {
    before: libc::sigaction,
}

#[cfg(unix)]
impl IgnoreCtrlC {
    fn now() -> Option<IgnoreCtrlC> {
        // SAFETY: `sigaction` with a zeroed action whose handler is SIG_IGN installs no code;
        // the previous action (the runtime's handler) is written to `before`, both valid
        // pointers to `sigaction` structs for the duration of the call.
        unsafe {
            let mut ignore: libc::sigaction = std::mem::zeroed();
            ignore.sa_sigaction = libc::SIG_IGN;
            let mut before: libc::sigaction = std::mem::zeroed();
            (libc::sigaction(libc::SIGINT, &ignore, &mut before) == 0)
                .then_some(IgnoreCtrlC { before })
        }
    }
}

#[cfg(unix)]
impl Drop for IgnoreCtrlC {
    fn drop(&mut self) {
        // SAFETY: puts back the exact action `now` replaced (the runtime's own handler, with
        // its flags and mask), from a struct the kernel filled in.
        unsafe {
            libc::sigaction(libc::SIGINT, &self.before, std::ptr::null_mut());
        }
    }
}
