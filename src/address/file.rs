//! The JSON Lines file form: `file:PATH`, a path ending in `.jsonl` / `.ndjson` (what `export`
//! writes), or `-` for stdin. The registry hands it whatever has no scheme.

use std::path::PathBuf;

use super::FileAddress;
use super::form::{Form, invalid};
use crate::error::Result;

/// The forms as `--help` lists them.
pub(super) fn usage() -> String {
    "FILE.jsonl | file:PATH | -   (a file written by `dlqctl export`, for replay)".into()
}

/// `file:PATH`, or input with no scheme: `-`, `NAME.jsonl`, `NAME.ndjson`.
pub(super) fn parse(input: &str) -> Result<FileAddress> {
    let bad = |reason: &str| invalid(input, reason);
    if input == "-" {
        return Ok(FileAddress::Stdin);
    }
    if let Some(head) = input.get(..5)
        && head.eq_ignore_ascii_case("file:")
    {
        let rest = &input[5..];
        let path = rest.strip_prefix("//").unwrap_or(rest);
        if path.is_empty() {
            return Err(bad("file: needs a path, e.g. file:dlq-backup.jsonl"));
        }
        return Ok(FileAddress::Path(PathBuf::from(path)));
    }
    if input.ends_with(".jsonl") || input.ends_with(".ndjson") {
        return Ok(FileAddress::Path(PathBuf::from(input)));
    }
    // Something that looks like a file: say how a file is named.
    if input.contains(['.', '/', '\\']) {
        return Err(bad(
            "not a URL; a JSON Lines file is named FILE.jsonl (or .ndjson), or file:PATH for any other name",
        ));
    }
    Err(bad("not a URL"))
}

impl std::fmt::Display for FileAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileAddress::Path(p) => write!(f, "file:{}", p.display()),
            FileAddress::Stdin => write!(f, "-"),
        }
    }
}

impl Form for FileAddress {
    /// The file's name.
    fn brief(&self) -> String {
        match self {
            FileAddress::Path(p) => p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            FileAddress::Stdin => "-".into(),
        }
    }

    /// A file by its absolute path.
    fn recorded(&self) -> String {
        match self {
            FileAddress::Path(p) => {
                let abs = std::path::absolute(p).unwrap_or_else(|_| p.clone());
                format!("file:{}", abs.display())
            }
            FileAddress::Stdin => self.to_string(),
        }
    }
}
