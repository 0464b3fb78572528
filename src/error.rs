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

/// What an error on a lost connection adds for a run that moves or removes messages: each is
/// still where it was or already at the target, and a re-run carries on. A read-only command
/// leaves it out ([`Error::read_only`]): it has nothing to lose or continue.
pub const RERUN: &str = "nothing was lost; re-run to continue";

/// `reason (nothing was lost; re-run to continue)`.
pub fn with_rerun(reason: impl std::fmt::Display) -> String {
    format!("{reason} ({RERUN})")
}

/// `reason` without the [`with_rerun`] note (and what the note goes on to say, up to its `)`).
fn without_rerun(reason: String) -> String {
    let Some(at) = reason.find(&format!(" ({RERUN}")) else {
        return reason;
    };
    let end = reason[at..].find(')').map_or(reason.len(), |i| at + i + 1);
    format!("{}{}", &reason[..at], &reason[end..])
}

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

    /// A value given on the command line (or its stand-in in dlqctl.toml) that cannot be
    /// used: `reason` names the problem, `hint` (given where it is raised, with
    /// [`Error::hinted`]) the fix.
    #[error("invalid value for {arg}: {reason}")]
    InvalidArgument {
        arg: String,
        reason: String,
        hint: Option<String>,
    },

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
        password_from: String,
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
    /// mapping one). Hints stack: each wrapping adds a line under those it wraps.
    #[error("{source}")]
    Hinted { source: Box<Error>, hint: String },

    /// Ctrl-C at a question: nothing was done.
    #[error("cancelled; nothing done")]
    Cancelled,

    /// stdout was closed by the reader (`| head`): not an error for the user.
    #[error("output closed")]
    ClosedOutput,
}

impl Error {
    /// The error as a read-only command (inspect, peek, classify, export, verify, check, audit,
    /// tail) shows it: without [`RERUN`], which is for commands that move or remove.
    pub fn read_only(self) -> Error {
        match self {
            Error::Unreachable { target, reason } => Error::Unreachable {
                target,
                reason: without_rerun(reason),
            },
            Error::Backend { target, reason } => Error::Backend {
                target,
                reason: without_rerun(reason),
            },
            Error::Hinted { source, hint } => Error::Hinted {
                source: Box::new(source.read_only()),
                hint,
            },
            Error::Stopped { source } => Error::Stopped {
                source: Box::new(source.read_only()),
            },
            other => other,
        }
    }
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

/// What to check after a refused login, in the terms of the backend `target` names (its
/// password sources and the server's own account settings).
fn auth_hint(target: &str) -> &'static str {
    let url = target.trim_start_matches("the management API at ");
    let scheme = url.split("://").next().unwrap_or_default();
    match scheme {
        "amqp" | "amqps" => {
            "check the user name and that password (in a URL, percent-encode @ : / ? #; else DLQCTL_AMQP_PASSWORD or [rabbitmq] password); `rabbitmqctl list_users` shows the node's users, and the built-in guest user logs in from localhost only"
        }
        "redis" | "rediss" => {
            "check the user name and that password (in a URL, percent-encode @ : / ? #); the server's requirepass or `ACL LIST` decides who logs in (no user name: the default user)"
        }
        "http" | "https" => {
            "check the user name and that password; the management API takes the AMQP user, which needs a management tag (e.g. monitoring)"
        }
        _ => {
            "check the user name and that password (in a URL, percent-encode @ : / ? #); ~/.pgpass must be mode 0600; the server's pg_hba.conf decides which method it expects"
        }
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

    /// What the user should do about it, one `hint:` line each under the error: the hints
    /// given where it was raised and on its way up (innermost first), else its kind's generic
    /// one.
    pub fn hints(&self) -> Vec<String> {
        let mut given = Vec::new();
        self.given_hints(&mut given);
        if given.is_empty() {
            given.extend(self.root().generic_hint());
        }
        given
    }

    /// The hints given to this error (with [`Error::hinted`]), innermost first.
    fn given_hints(&self, out: &mut Vec<String>) {
        match self {
            Error::Hinted { source, hint } => {
                source.given_hints(out);
                out.push(hint.clone());
            }
            Error::Stopped { source } => source.given_hints(out),
            Error::InvalidArgument { hint: Some(h), .. } => out.push(h.clone()),
            _ => {}
        }
    }

    /// The hint of the error's kind, shown when none was given where it was raised.
    fn generic_hint(&self) -> Option<String> {
        Some(match self {
            Error::InvalidAddress { .. } => "addresses look like sqs://NAME, kafka://HOST:PORT/TOPIC, postgres://USER@HOST:PORT/DB?table=SCHEMA.TABLE, redis://HOST:PORT/DB?system=sidekiq, amqp://USER@HOST:PORT/VHOST?queue=NAME or FILE.jsonl (see `dlqctl --help`)".into(),
            Error::UnknownQueue { .. } => "pass a full URL, or define the queue in dlqctl.toml (--config FILE or DLQCTL_CONFIG)".into(),
            Error::Config { .. } => "fix the file, or point --config / DLQCTL_CONFIG at another one".into(),
            Error::Rules { .. } => "rules are [[rules]] (or [[classify.rules]]) tables with name, kind = \"transient\"|\"permanent\" and match = { error = \"REGEX\" }".into(),
            Error::NoTerminal { .. } => "review the plan with --dry-run, then re-run with --yes".into(),
            Error::Unreachable { target, .. } if target.starts_with("sqs") => "check the endpoint, the region and the network".into(),
            Error::Unreachable { .. } => "check the host, port and network".into(),
            Error::PermissionDenied { .. } => "grant the permissions listed in docs/permissions.md to the user or role dlqctl runs as".into(),
            Error::AuthenticationFailed { target, .. } => auth_hint(target).into(),
            Error::Input { .. } => "each line is one message record, as `dlqctl export` writes it (docs/jsonl.md lists its fields)".into(),
            Error::Schema { .. } => "map your column names in dlqctl.toml under [queues.NAME.columns] (see docs/postgres.md)".into(),
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

    /// This error, with `hint` shown under it instead of its kind's generic one (and under
    /// any hint it already has). An `InvalidArgument` keeps its first hint itself, so that it
    /// stays an `InvalidArgument` to code that matches on it.
    pub fn hinted(self, hint: impl Into<String>) -> Self {
        match self {
            Error::InvalidArgument {
                arg,
                reason,
                hint: None,
            } => Error::InvalidArgument {
                arg,
                reason,
                hint: Some(hint.into()),
            },
            other => Error::Hinted {
                source: Box::new(other),
                hint: hint.into(),
            },
        }
    }

    /// This error with one more hint under all it shows now, its kind's generic one included
    /// (context added on the way up: where an edit is kept).
    pub fn and_hint(self, hint: impl Into<String>) -> Self {
        let mut given = Vec::new();
        self.given_hints(&mut given);
        let base = match self.root().generic_hint() {
            Some(generic) if given.is_empty() => self.hinted(generic),
            _ => self,
        };
        base.hinted(hint)
    }

    /// A value that cannot be used: `reason` names the problem; give the fix with
    /// [`Error::hinted`].
    pub fn invalid_arg(arg: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            arg: arg.into(),
            reason: reason.into(),
            hint: None,
        }
    }

    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hint given where an error is raised replaces its kind's generic one; hints given on
    /// the way up stack under it; wrapping keeps the exit code.
    #[test]
    fn hints_stack_and_replace_the_generic_one() {
        let plain = Error::Unreachable {
            target: "db".into(),
            reason: "refused".into(),
        };
        assert_eq!(plain.hints().len(), 1, "the kind's generic hint");
        assert!(plain.hints()[0].starts_with("check the host"));
        let e = plain
            .hinted("start the database")
            .hinted("or pass another URL");
        assert_eq!(e.hints(), ["start the database", "or pass another URL"]);
        assert_eq!(e.exit_code(), exit::BACKEND);
        let stopped = Error::Stopped {
            source: Box::new(e),
        };
        assert_eq!(stopped.hints().len(), 2);
        assert_eq!(stopped.exit_code(), exit::BACKEND);
    }

    /// A refused login's hint names the backend's own password sources and account settings:
    /// PostgreSQL's pg_hba.conf is no help on a RabbitMQ or Redis login.
    #[test]
    fn a_refused_login_is_hinted_in_its_backends_terms() {
        let hint = |target: &str| {
            Error::AuthenticationFailed {
                target: target.into(),
                reason: "refused".into(),
                password_from: "the URL".into(),
            }
            .hints()
            .join("\n")
        };
        assert!(hint("postgres://u@h:5432/db?table=t").contains("pg_hba.conf"));
        let amqp = hint("amqp://u@h:5672/%2F?queue=q");
        assert!(
            amqp.contains("DLQCTL_AMQP_PASSWORD") && !amqp.contains("pg_hba"),
            "{amqp}"
        );
        let redis = hint("rediss://u@h:6379/0?system=sidekiq");
        assert!(
            redis.contains("ACL LIST") && !redis.contains("pg_hba"),
            "{redis}"
        );
        let api = hint("the management API at http://h:15672");
        assert!(
            api.contains("management tag") && !api.contains("pg_hba"),
            "{api}"
        );
    }

    /// A bad line of a JSON Lines file says what a line must be, and where that is written.
    #[test]
    fn a_bad_input_line_points_at_the_record_format() {
        let e = Error::Input {
            what: "dead.jsonl".into(),
            line: 2,
            reason: "missing field `body_encoding`".into(),
        };
        assert!(
            e.hints().join("\n").contains("docs/jsonl.md"),
            "{:?}",
            e.hints()
        );
    }

    /// `and_hint` adds context under what is shown now, the generic hint included.
    #[test]
    fn and_hint_keeps_the_generic_one() {
        let e = Error::Unreachable {
            target: "db".into(),
            reason: "refused".into(),
        }
        .and_hint("your edit is kept");
        let h = e.hints();
        assert_eq!(h.len(), 2, "{h:?}");
        assert!(h[0].starts_with("check the host"));
        assert_eq!(h[1], "your edit is kept");
        let given = Error::invalid_arg("--to", "x").hinted("a").and_hint("b");
        assert_eq!(given.hints(), ["a", "b"]);
    }

    /// An `InvalidArgument` keeps its hint itself: it is still one to code that matches, its
    /// message names the problem only, and it is exit 2.
    #[test]
    fn an_invalid_argument_carries_its_hint() {
        let e =
            Error::invalid_arg("--to", "it is the queue being read").hinted("pass another --to");
        assert!(
            matches!(&e, Error::InvalidArgument { hint: Some(h), .. } if h == "pass another --to")
        );
        assert_eq!(
            e.to_string(),
            "invalid value for --to: it is the queue being read"
        );
        assert_eq!(e.hints(), ["pass another --to"]);
        assert_eq!(e.exit_code(), exit::USAGE);
        assert!(
            Error::invalid_arg("-n", "must be at least 1")
                .hints()
                .is_empty()
        );
        let twice = Error::invalid_arg("-n", "x").hinted("a").hinted("b");
        assert_eq!(twice.hints(), ["a", "b"]);
        assert_eq!(twice.exit_code(), exit::USAGE);
    }
}
