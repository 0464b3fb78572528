//! Build facts for `dlqctl --version` and `dlqctl version`: the commit the binary was built
//! from, the target and the compiler (ripgrep and uv do the same in their build scripts).
//!
//! The commit comes from, in order: `DLQCTL_BUILD_COMMIT` (a container build without `.git`),
//! `.cargo_vcs_info.json` (a crate unpacked from its `.crate` tarball: crates.io, `cargo
//! package`), then `git` in the source tree. None of them: the version says "commit unknown".
//! The script reruns only when one of those changes, not on every edit.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DLQCTL_BUILD_COMMIT");
    let (commit, date) = from_env()
        .or_else(|| from_vcs_info(&dir))
        .or_else(|| from_git(&dir))
        .unwrap_or_default();
    println!("cargo:rustc-env=DLQCTL_BUILD_COMMIT_HASH={commit}");
    println!("cargo:rustc-env=DLQCTL_BUILD_COMMIT_DATE={date}");
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rustc-env=DLQCTL_BUILD_TARGET={target}");
    let profile = std::env::var("PROFILE").unwrap_or_default();
    println!("cargo:rustc-env=DLQCTL_BUILD_PROFILE={profile}");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let rustc = run(Command::new(rustc).arg("--version")).unwrap_or_default();
    println!("cargo:rustc-env=DLQCTL_BUILD_RUSTC={rustc}");
}

/// A full hex commit id, or nothing.
fn hex_id(s: &str) -> Option<String> {
    let s = s.trim();
    (s.len() >= 7 && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| s.to_ascii_lowercase())
}

fn from_env() -> Option<(String, String)> {
    let v = std::env::var("DLQCTL_BUILD_COMMIT").ok()?;
    Some((hex_id(&v)?, String::new()))
}

/// `{"git": {"sha1": "…", "dirty": true}, "path_in_vcs": ""}`, written by `cargo package`.
fn from_vcs_info(dir: &Path) -> Option<(String, String)> {
    let path = dir.join(".cargo_vcs_info.json");
    let text = std::fs::read_to_string(&path).ok()?;
    println!("cargo:rerun-if-changed={}", path.display());
    let rest = &text[text.find("\"sha1\"")? + "\"sha1\"".len()..];
    let value = rest
        .trim_start()
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix('"')?;
    let sha = hex_id(&value[..value.find('"')?])?;
    Some((sha, String::new()))
}

fn from_git(dir: &Path) -> Option<(String, String)> {
    let git = |args: &[&str]| run(Command::new("git").arg("-C").arg(dir).args(args));
    // Only our own repository: not one this source happens to sit in (a vendored copy).
    git(&["ls-files", "--error-unmatch", "build.rs"])?;
    let line = git(&["log", "-1", "--format=%H %cs"])?;
    let (sha, date) = line.split_once(' ')?;
    let sha = hex_id(sha)?;
    // Rerun when HEAD moves: HEAD itself (a branch switch, a detached checkout), the branch's
    // ref (a commit) and packed-refs. In a worktree these live in different directories.
    let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(branch);
    }
    for name in watch {
        if let Some(p) = git(&["rev-parse", "--path-format=absolute", "--git-path", &name])
            && Path::new(&p).exists()
        {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    Some((sha, date.to_string()))
}

fn run(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}
