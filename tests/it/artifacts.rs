//! Completions, man pages and docs/cli.md are generated from the CLI and committed; they must
//! not drift. Regenerate with `scripts/generate`.

use crate::harness::{Sandbox, repo_root};

#[test]
fn generated_files_match_the_cli() {
    let mut stale = Vec::new();
    for a in dlqctl::cli::artifacts() {
        let path = repo_root().join(&a.path);
        if std::fs::read(&path).ok().as_deref() != Some(a.contents.as_slice()) {
            stale.push(a.path);
        }
    }
    assert!(
        stale.is_empty(),
        "out of date, run scripts/generate: {stale:?}"
    );
}

#[test]
fn the_check_mode_reports_drift() {
    let sb = Sandbox::new();
    let dir = sb.dir.path().to_str().unwrap();
    sb.run(&["generate-artifacts", "--dir", dir]).ok();
    sb.run(&["generate-artifacts", "--dir", dir, "--check"])
        .ok();
    std::fs::write(sb.path("completions/dlqctl.bash"), "stale").unwrap();
    let r = sb
        .run(&["generate-artifacts", "--dir", dir, "--check"])
        .code(1);
    assert!(r.stderr.contains("completions/dlqctl.bash"), "{}", r.stderr);
}

#[test]
fn completions_print_for_every_shell() {
    let sb = Sandbox::new();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let r = sb.run(&["completions", shell]).ok();
        assert!(r.stdout.contains("redrive"), "{shell}: {}", r.stdout);
    }
    sb.run(&["completions", "tcsh"]).code(2);
}

/// `generate-artifacts` is a maintainer's command: no completion offers it (clap_complete's
/// scripts listed it, hidden as it was: `dlqctl <TAB>` in bash, 35 times in the fish script),
/// and neither does `--help`; it still runs.
#[test]
fn the_maintainers_command_is_in_no_completion() {
    for a in dlqctl::cli::artifacts() {
        let text = String::from_utf8_lossy(&a.contents);
        assert!(!text.contains("generate-artifacts"), "{}", a.path);
    }
    let sb = Sandbox::new();
    let r = sb.run(&["completions", "bash"]).ok();
    assert!(!r.stdout.contains("generate-artifacts"), "{}", r.stdout);
    let r = sb.run(&["--help"]).ok();
    assert!(!r.stdout.contains("generate-artifacts"), "{}", r.stdout);
    let r = sb.run(&["generate-artifacts", "--help"]).ok();
    assert!(r.stdout.contains("--check"), "{}", r.stdout);
}
