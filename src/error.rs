//! Typed errors. Every error knows its exit code (see `docs/exit-codes.md`) and, where there
//! is one, a hint telling the user what to do next. Messages never contain secrets: anything
//! that could carry a password goes through [`crate::secrets::redact`] first.

use std::path::PathBuf;

/// Exit codes of the spec. Stable: runbooks depend on them.
pub mod exit {
    pub const OK: i32 = 0;
    /// A check failed, or some messages could not be moved.
    pub const PARTIAL: i32 = 1;
    /// Usage or configuration error.
    pub const USAGE: i32 = 2;
    /// Backend unreachable, not found, or permission denied.
    pub const BACKEND: i32 = 3;
    /// Interrupted (Ctrl-C / SIGINT / SIGTERM).
    pub const INTERRUPTED: i32 = 130;
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid queue address `{input}`: {reason}")]
    InvalidAddress { input: String, reason: String },

    #[error("unknown queue `{name}`: it is not a URL and no [queues.{name}] is defined{}", config_note(.config))]
    UnknownQueue {
        name: String,
        config: Option<PathBuf>,
    },

    #[error("config file {}: {reason}", .path.display())]
    Config { path: PathBuf, reason: String },

    #[error("rules file {}: {reason}", .path.display())]
    Rules { path: PathBuf, reason: String },

    #[error("invalid value for {arg}: {reason}")]
    InvalidArgument { arg: String, reason: String },

    #[error("{what} needs confirmation, but there is no terminal to ask at")]
    NoTerminal { what: String },

    /// A command refused as asked, for a reason of its own (not one argument's value): `dlqctl
    /// edit` without a terminal, `dlqctl check` with nothing to check.
    #[error("dlqctl {command}: {reason}")]
    Refused {
        command: &'static str,
        reason: String,
    },

    #[error("cannot reach {target}: {reason}")]
    Unreachable { target: String, reason: String },

    #[error("{what} not found{}", detail_note(.detail))]
    NotFound { what: String, detail: String },

    #[error("permission denied on {target}: {reason}")]
    PermissionDenied { target: String, reason: String },

    #[error("authentication failed on {target}: {reason}; the password came from {password_from}")]
    AuthenticationFailed {
        target: String,
        reason: String,
        password_from: &'static str,
    },

    #[error("{table}: {reason}")]
    Schema { table: String, reason: String },

    #[error("{backend} does not support {operation}: {reason}")]
    Unsupported {
        backend: &'static str,
        operation: &'static str,
        reason: String,
    },

    #[error("{target}: {reason}")]
    Backend { target: String, reason: String },

    #[error("{}: {}", .path.display(), io_reason(.source))]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("{what}: line {line}: {reason}")]
    Input {
        what: String,
        line: u64,
        reason: String,
    },

    /// A run stopped on an error after it had changed something. Never exit 2, which
    /// promises that nothing was changed: a local error (the journal, a bad input line) is
    /// exit 1 (some messages were not moved), a backend error keeps its exit 3.
    #[error("{source}")]
    Stopped { source: Box<Error> },

    #[error("interrupted")]
    Interrupted,

    /// An error with a hint of its own, given where it was raised (it replaces the kind's
    /// generic hint: a job system's missing table gets a `schema=` hint, not the column
    /// mapping one).
    #[error("{source}")]
    Hinted { source: Box<Error>, hint: String },

    /// Ctrl-C at a question: nothing was done.
    #[error("cancelled; nothing done")]
    Cancelled,

    /// stdout was closed by the reader (`| head`): not an error for the user.
    #[error("output closed")]
    ClosedOutput,
}

/// An I/O error in words (`no such file or directory`), without the OS's error number.
fn io_reason(e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::NotFound => "no such file or directory".into(),
        ErrorKind::PermissionDenied => "permission denied".into(),
        ErrorKind::AlreadyExists => "already exists".into(),
        _ => {
            let text = e.to_string();
            match text.find(" (os error ") {
                Some(i) => text[..i].to_string(),
                None => text,
            }
        }
    }
}

fn config_note(path: &Option<PathBuf>) -> String {
    match path {
        Some(p) => format!(" in {}", p.display()),
        None => " (no config file found)".to_string(),
    }
}

fn detail_note(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::InvalidAddress { .. }
            | Error::UnknownQueue { .. }
            | Error::Config { .. }
            | Error::Rules { .. }
            | Error::InvalidArgument { .. }
            | Error::NoTerminal { .. }
            | Error::Refused { .. }
            | Error::Schema { .. }
            | Error::Unsupported { .. }
            | Error::Input { .. } => exit::USAGE,
            Error::Unreachable { .. }
            | Error::NotFound { .. }
            | Error::PermissionDenied { .. }
            | Error::AuthenticationFailed { .. }
            | Error::Backend { .. } => exit::BACKEND,
            Error::Io { .. } => exit::USAGE,
            Error::Hinted { source, .. } => source.exit_code(),
            Error::Stopped { source } => match source.exit_code() {
                exit::USAGE => exit::PARTIAL,
                other => other,
            },
            Error::Interrupted | Error::Cancelled => exit::INTERRUPTED,
            Error::ClosedOutput => exit::OK,
        }
    }

    /// What the user should do about it, shown under the error.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Error::InvalidAddress { .. } => "addresses look like sqs://NAME, kafka://HOST:PORT/TOPIC, postgres://USER@HOST:PORT/DB?table=SCHEMA.TABLE or amqp://USER@HOST:PORT/VHOST?queue=NAME (see `dlqctl --help`)".into(),
            Error::UnknownQueue { .. } => "pass a full URL, or define the queue in dlqctl.toml (--config FILE or DLQCTL_CONFIG)".into(),
            Error::Config { .. } => "fix the file, or point --config / DLQCTL_CONFIG at another one".into(),
            Error::Rules { .. } => "rules are [[rules]] (or [[classify.rules]]) tables with name, kind = \"transient\"|\"permanent\" and match = { error = \"REGEX\" }".into(),
            Error::NoTerminal { .. } => "review the plan with --dry-run, then re-run with --yes".into(),
            Error::Unreachable { .. } => "check the host, port and network (and the endpoint or region for SQS)".into(),
            Error::PermissionDenied { .. } => "grant the permissions listed in docs/permissions.md to the user or role dlqctl runs as".into(),
            Error::AuthenticationFailed { .. } => "check the user name and that password (in a URL, percent-encode @ : / ? #); ~/.pgpass must be mode 0600; the server's pg_hba.conf decides which method it expects".into(),
            Error::Schema { .. } => "map your column names in dlqctl.toml under [queues.NAME.columns] (see docs/postgres.md)".into(),
            Error::Stopped { source } => return source.hint(),
            Error::Hinted { hint, .. } => hint.clone(),
            Error::Interrupted | Error::Cancelled => return None,

            _ => return None,
        })
    }

    /// The error under any wrapping (a hint, a mid-run stop).
    pub fn root(&self) -> &Error {
        match self {
            Error::Hinted { source, .. } | Error::Stopped { source } => source.root(),
            other => other,
        }
    }

    /// This error, with `hint` shown under it instead of its kind's generic one.
    pub fn hinted(self, hint: impl Into<String>) -> Self {
        Error::Hinted {
            source: Box::new(self),
            hint: hint.into(),
        }
    }

    pub fn invalid_arg(arg: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            arg: arg.into(),
            reason: reason.into(),
        }
    }

    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
