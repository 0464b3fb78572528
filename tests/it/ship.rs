//! Shipping (docs/install.md, docs/ci.md): what `--version` says, the GitHub Action's two
//! scripts run as a CI job would run them (against the real PostgreSQL), and the release
//! metadata that has to agree with itself (license, binstall vs the release workflow's
//! archives, the action's pinned version; the container image is in container.rs). The `.deb`,
//! `cargo package` and the release workflow's drift are checked by `scripts/packaging`, which
//! scripts/test runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::harness::{Db, Sandbox, pg_url, repo_root};

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo_root())
        .args(args)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn version_names_the_commit_the_backends_and_the_target() {
    let sb = Sandbox::new();
    let j = sb.run(&["version", "--output", "json"]).ok().json();
    assert_eq!(j["name"], "dlqctl");
    assert_eq!(j["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        j["backends"],
        serde_json::json!(["sqs", "kafka", "postgres", "redis", "rabbitmq"]),
        "{j}"
    );
    assert!(j["target"].as_str().unwrap().contains("linux"), "{j}");
    assert!(j["rustc"].as_str().unwrap().starts_with("rustc "), "{j}");
    // Built from this checkout: its HEAD (build.rs reruns when HEAD moves). Before build.rs
    // is committed there is no commit to name.
    let tracked = git(&["ls-files", "--error-unmatch", "build.rs"]).is_some();
    let head = git(&["rev-parse", "HEAD"]);
    match (tracked, &head) {
        (true, Some(head)) => assert_eq!(j["commit"], head.as_str(), "{j}"),
        _ => assert!(j["commit"].is_null(), "{j}"),
    }
    let v = sb.run(&["--version"]).ok().stdout;
    let mut lines = v.lines();
    let first = lines.next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("dlqctl {} (", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    if let (true, Some(head)) = (tracked, &head) {
        assert!(first.contains(&head[..10]), "{v}");
    }
    assert_eq!(
        lines.next(),
        Some("backends: sqs, kafka, postgres, redis, rabbitmq"),
        "{v}"
    );
    assert!(
        lines.next().unwrap_or_default().starts_with("target: "),
        "{v}"
    );
    // -V stays one bare line for scripts.
    assert_eq!(
        sb.run(&["-V"]).ok().stdout.trim(),
        format!("dlqctl {}", env!("CARGO_PKG_VERSION"))
    );
    // A table for people; no config needed, a broken one does not matter.
    sb.write("dlqctl.toml", "this is not toml [");
    let t = sb.run(&["version", "--output", "table"]).ok().stdout;
    assert!(
        t.contains("backends: sqs, kafka, postgres, redis, rabbitmq"),
        "{t}"
    );
}

/// One run of an action script, as a GitHub Actions step runs it.
struct Step {
    code: i32,
    stderr: String,
    stdout: String,
    outputs: String,
    summary: String,
}

fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_dlqctl"))
        .parent()
        .expect("bin dir")
        .to_path_buf()
}

fn action_step(sb: &Sandbox, script: &str, path: &[PathBuf], env: &[(&str, &str)]) -> Step {
    let outputs = sb.path("github-output");
    let summary = sb.path("github-summary");
    let _ = std::fs::remove_file(&outputs);
    let _ = std::fs::remove_file(&summary);
    let mut dirs = path.to_vec();
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let mut c = Command::new("bash");
    c.arg(repo_root().join("action").join(script))
        .env_clear()
        .env("PATH", std::env::join_paths(dirs).expect("PATH"))
        .env("HOME", sb.dir.path())
        .env("NO_COLOR", "1")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", &outputs)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_PATH", sb.path("github-path"))
        .env("RUNNER_TEMP", sb.path("runner-temp"))
        .current_dir(sb.dir.path())
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run bash");
    Step {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        outputs: std::fs::read_to_string(&outputs).unwrap_or_default(),
        summary: std::fs::read_to_string(&summary).unwrap_or_default(),
    }
}

fn verify_config(db: &Db, retention: &str) -> String {
    format!(
        "[queues.orders]\ndlq = \"{}\"\nreplay_window = \"3d\"\ndlq_retention = \"14d\"\n\n[queues.orders.dedupe]\nurl = \"{}\"\ntable = \"{}.processed_messages\"\nretention = \"{retention}\"\n",
        db.dlq(),
        pg_url(),
        db.schema
    )
}

#[tokio::test]
async fn the_action_passes_with_a_junit_report_when_every_check_passes() {
    let db = Db::new("actpass").await;
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("ops")).unwrap();
    sb.write("ops/dlqctl.toml", &verify_config(&db, "30d"));
    let s = action_step(
        &sb,
        "run.sh",
        &[bin_dir()],
        &[
            ("DLQCTL_ACTION_CONFIG", "ops/dlqctl.toml"),
            ("DLQCTL_ACTION_REPORT", "reports/verify.xml"),
        ],
    );
    assert_eq!(s.code, 0, "{}\n{}", s.stdout, s.stderr);
    let xml = std::fs::read_to_string(sb.path("reports/verify.xml")).expect("the report");
    assert!(
        xml.contains("<testsuites name=\"dlqctl verify\"") && xml.contains("failures=\"0\""),
        "{xml}"
    );
    assert!(s.outputs.contains("exit-code=0\n"), "{}", s.outputs);
    assert!(
        s.outputs.contains("report=reports/verify.xml\n"),
        "{}",
        s.outputs
    );
    assert!(s.outputs.contains("failures=0\n"), "{}", s.outputs);
    assert!(s.summary.contains("checks passed"), "{}", s.summary);
    assert!(!s.stdout.contains("::error"), "{}", s.stdout);
}

#[tokio::test]
async fn the_action_fails_the_job_and_names_the_failed_check() {
    let db = Db::new("actfail").await;
    let sb = Sandbox::new();
    // dlqctl's own lookup: ./dlqctl.toml, no config input.
    sb.write("dlqctl.toml", &verify_config(&db, "7d"));
    let s = action_step(&sb, "run.sh", &[bin_dir()], &[]);
    assert_eq!(s.code, 1, "{}\n{}", s.stdout, s.stderr);
    let xml = std::fs::read_to_string(sb.path("dlqctl-report.xml")).expect("the report");
    assert!(xml.contains("<failure message=\"dedupe 7d &lt;= "), "{xml}");
    assert!(s.outputs.contains("exit-code=1\n"), "{}", s.outputs);
    assert!(s.outputs.contains("failures=1\n"), "{}", s.outputs);
    // An annotation per failed check, with the XML decoded, and a table in the summary.
    assert!(
        s.stdout.contains(
            "::error title=dlqctl verify: orders: dedupe-outlives-redelivery::dedupe 7d <= "
        ),
        "{}",
        s.stdout
    );
    assert!(
        s.summary.contains("1 of ")
            && s.summary
                .contains("| orders | dedupe-outlives-redelivery: Dedupe retention outlives redelivery | dedupe 7d <= "),
        "{}",
        s.summary
    );
}

/// A queue that cannot be reached is the failed check `reachable` (exit 1, in the report), not
/// an exit 3 with no report, as docs/ci.md once said.
#[test]
fn the_action_reports_an_unreachable_queue_as_a_failed_check() {
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        "[queues.down]\ndlq = \"postgres://dlqctl:dlqctl@127.0.0.1:1/dlqctl_test?table=app.dead_letters\"\n",
    );
    let s = action_step(&sb, "run.sh", &[bin_dir()], &[]);
    assert_eq!(s.code, 1, "{}\n{}", s.stdout, s.stderr);
    assert!(
        s.outputs
            .contains("exit-code=1\nreport=dlqctl-report.xml\n"),
        "{}",
        s.outputs
    );
    assert!(
        s.stdout
            .contains("::error title=dlqctl verify: down: reachable::"),
        "{}",
        s.stdout
    );
}

#[tokio::test]
async fn the_action_runs_check_with_quoted_arguments() {
    let db = Db::new("actcheck").await;
    db.seed(4).await;
    let sb = Sandbox::new();
    let queue = db.dlq();
    // Four dead letters: two permanent. A limit that holds, then one that does not.
    let pass = format!("'{queue}' --max-messages 10\n--max-age \"30d\"");
    let s = action_step(
        &sb,
        "run.sh",
        &[bin_dir()],
        &[
            ("DLQCTL_ACTION_COMMAND", "check"),
            ("DLQCTL_ACTION_ARGS", &pass),
        ],
    );
    assert_eq!(s.code, 0, "{}\n{}", s.stdout, s.stderr);
    let fail = format!("\"{queue}\" --max-class permanent=0");
    let s = action_step(
        &sb,
        "run.sh",
        &[bin_dir()],
        &[
            ("DLQCTL_ACTION_COMMAND", "check"),
            ("DLQCTL_ACTION_ARGS", &fail),
        ],
    );
    assert_eq!(s.code, 1, "{}\n{}", s.stdout, s.stderr);
    let xml = std::fs::read_to_string(sb.path("dlqctl-report.xml")).unwrap();
    assert!(
        xml.contains("<testsuites name=\"dlqctl check\"") && xml.contains("<failure"),
        "{xml}"
    );
    assert!(
        s.stdout
            .contains(": class:permanent::2 permanent (limit 0)"),
        "{}",
        s.stdout
    );
    // The queue's password is not in the log.
    assert!(
        s.stderr.contains("+ dlqctl check ") && !s.stderr.contains(":dlqctl@"),
        "{}",
        s.stderr
    );
}

#[test]
fn the_action_stops_on_usage_errors_without_a_report() {
    let sb = Sandbox::new();
    // An unknown queue name: exit 2, dlqctl's message in the log, no report to upload.
    let s = action_step(
        &sb,
        "run.sh",
        &[bin_dir()],
        &[("DLQCTL_ACTION_ARGS", "no-such-queue")],
    );
    assert_eq!(s.code, 2, "{}\n{}", s.stdout, s.stderr);
    assert!(s.stderr.contains("no-such-queue"), "{}", s.stderr);
    assert!(
        s.outputs.contains("exit-code=2\nreport=\n"),
        "{}",
        s.outputs
    );
    assert!(!sb.path("dlqctl-report.xml").exists());
    assert!(
        s.stdout.contains("::error title=dlqctl verify::"),
        "{}",
        s.stdout
    );
    // Neither verify nor check; an unmatched quote.
    let s = action_step(
        &sb,
        "run.sh",
        &[bin_dir()],
        &[("DLQCTL_ACTION_COMMAND", "redrive")],
    );
    assert_eq!(s.code, 2, "{}", s.stdout);
    let s = action_step(
        &sb,
        "run.sh",
        &[bin_dir()],
        &[("DLQCTL_ACTION_ARGS", "'orders")],
    );
    assert_eq!(s.code, 2, "{}", s.stdout);
    assert!(s.stdout.contains("cannot split args"), "{}", s.stdout);
}

/// A release directory as the release workflow lays it out: vX.Y.Z/ARCHIVE and ARCHIVE.sha256.
fn fake_release(sb: &Sandbox, version: &str, checksum: Option<&str>) -> String {
    let target = match std::env::consts::ARCH {
        "aarch64" => "aarch64-unknown-linux-musl",
        _ => "x86_64-unknown-linux-musl",
    };
    let name = format!("dlqctl-{target}");
    let stage = sb.path(&format!("stage/{name}"));
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::write(
        stage.join("dlqctl"),
        format!("#!/bin/sh\necho 'dlqctl {version} (fake)'\n"),
    )
    .unwrap();
    let dir = sb.path(&format!("releases/v{version}"));
    std::fs::create_dir_all(&dir).unwrap();
    let archive = dir.join(format!("{name}.tar.xz"));
    let ok = Command::new("tar")
        .arg("-cJf")
        .arg(&archive)
        .arg("-C")
        .arg(sb.path("stage"))
        .arg(&name)
        .status()
        .expect("tar");
    assert!(ok.success());
    let sum = match checksum {
        Some(s) => s.to_string(),
        None => {
            let out = Command::new("sha256sum").arg(&archive).output().unwrap();
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .next()
                .unwrap()
                .to_string()
        }
    };
    std::fs::write(
        dir.join(format!("{name}.tar.xz.sha256")),
        format!("{sum} *{name}.tar.xz\n"),
    )
    .unwrap();
    format!("file://{}", sb.path("releases").display())
}

#[test]
fn the_action_installs_the_pinned_release_after_checking_its_checksum() {
    let sb = Sandbox::new();
    let url = fake_release(&sb, "9.8.7", None);
    let s = action_step(
        &sb,
        "install.sh",
        &[],
        &[("DLQCTL_VERSION", "9.8.7"), ("DLQCTL_RELEASES_URL", &url)],
    );
    assert_eq!(s.code, 0, "{}\n{}", s.stdout, s.stderr);
    let dir = sb.path("runner-temp/dlqctl-bin");
    let out = Command::new(dir.join("dlqctl")).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "dlqctl 9.8.7 (fake)\n"
    );
    assert!(s.stderr.contains("installed dlqctl 9.8.7"), "{}", s.stderr);
    // Later steps find it on PATH.
    let gh_path = std::fs::read_to_string(sb.path("github-path")).unwrap_or_default();
    assert_eq!(gh_path, format!("{}\n", dir.display()));

    // A wrong checksum installs nothing.
    let sb = Sandbox::new();
    let url = fake_release(&sb, "9.8.7", Some(&"0".repeat(64)));
    let s = action_step(
        &sb,
        "install.sh",
        &[],
        &[("DLQCTL_VERSION", "9.8.7"), ("DLQCTL_RELEASES_URL", &url)],
    );
    assert_eq!(s.code, 1, "{}\n{}", s.stdout, s.stderr);
    assert!(s.stdout.contains("checksum mismatch"), "{}", s.stdout);
    assert!(!sb.path("runner-temp/dlqctl-bin/dlqctl").exists());
    // A release that does not exist, and a version that is not pinned.
    let s = action_step(
        &sb,
        "install.sh",
        &[],
        &[("DLQCTL_VERSION", "9.9.9"), ("DLQCTL_RELEASES_URL", &url)],
    );
    assert_eq!(s.code, 1, "{}", s.stdout);
    assert!(s.stdout.contains("cannot download"), "{}", s.stdout);
    let s = action_step(&sb, "install.sh", &[], &[("DLQCTL_VERSION", "latest")]);
    assert_eq!(s.code, 1, "{}", s.stdout);
    assert!(
        s.stdout.contains("must be a release version"),
        "{}",
        s.stdout
    );
}

fn read_toml(name: &str) -> toml::Table {
    let text = std::fs::read_to_string(repo_root().join(name)).expect(name);
    text.parse().unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn package() -> toml::Table {
    read_toml("Cargo.toml")["package"]
        .as_table()
        .expect("[package]")
        .clone()
}

#[test]
fn the_license_files_are_the_ones_cargo_toml_names() {
    let p = package();
    assert_eq!(p["license"].as_str(), Some("MIT OR Apache-2.0"));
    assert!(p.get("license-file").is_none());
    let mit = std::fs::read_to_string(repo_root().join("LICENSE-MIT")).expect("LICENSE-MIT");
    assert!(
        mit.starts_with("MIT License\n\nCopyright (c) ")
            && mit.contains("THE SOFTWARE IS PROVIDED \"AS IS\""),
        "{mit}"
    );
    let apache =
        std::fs::read_to_string(repo_root().join("LICENSE-APACHE")).expect("LICENSE-APACHE");
    assert!(
        apache.contains("Apache License\n                           Version 2.0, January 2004")
            && apache.contains("END OF TERMS AND CONDITIONS"),
        "LICENSE-APACHE is not the Apache License 2.0 text"
    );
    for key in [
        "repository",
        "homepage",
        "readme",
        "keywords",
        "categories",
        "exclude",
    ] {
        assert!(p.contains_key(key), "Cargo.toml lacks package.{key}");
    }
}

#[test]
fn the_action_installs_the_release_of_this_version() {
    let action = std::fs::read_to_string(repo_root().join("action.yml")).unwrap();
    let pinned = format!("default: \"{}\"", env!("CARGO_PKG_VERSION"));
    let version_input = action
        .split("\n  version:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n  report:").next())
        .expect("a version input in action.yml");
    assert!(
        version_input.lines().any(|l| l.trim() == pinned),
        "action.yml's version default is not {} (bump it with Cargo.toml): {version_input}",
        env!("CARGO_PKG_VERSION")
    );
    // Both steps run the scripts the tests above run.
    assert!(action.contains("run: bash \"$GITHUB_ACTION_PATH/action/install.sh\""));
    assert!(action.contains("run: bash \"$GITHUB_ACTION_PATH/action/run.sh\""));
}

/// The archive name cargo-dist gives a target (dist-workspace.toml: .tar.xz, Windows .zip;
/// tarballs hold a `dlqctl-TARGET/` directory, zips are flat). scripts/packaging also checks
/// the binstall metadata against `dist plan` itself when the pinned dist is installed.
#[test]
fn binstall_fetches_the_archives_the_release_workflow_builds() {
    let dist = read_toml("dist-workspace.toml");
    let dist = dist["dist"].as_table().unwrap();
    assert_eq!(dist["unix-archive"].as_str(), Some(".tar.xz"));
    assert_eq!(dist["windows-archive"].as_str(), Some(".zip"));
    let include: Vec<&str> = dist["include"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(include, ["man/", "completions/"]);
    let p = package();
    let repo = p["repository"].as_str().unwrap();
    let meta = p["metadata"]["binstall"].as_table().expect("binstall");
    let targets = dist["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 5);
    for t in targets.iter().filter_map(|t| t.as_str()) {
        let windows = t.contains("windows");
        let over = meta
            .get("overrides")
            .and_then(|o| o.get(t))
            .and_then(|o| o.as_table());
        let get = |k: &str| {
            over.and_then(|o| o.get(k))
                .or_else(|| meta.get(k))
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string()
        };
        let (fmt, suffix) = if windows {
            ("zip", ".zip")
        } else {
            ("txz", ".tar.xz")
        };
        assert_eq!(get("pkg-fmt"), fmt, "{t}");
        let url = get("pkg-url")
            .replace("{ repo }", repo)
            .replace("{ version }", env!("CARGO_PKG_VERSION"))
            .replace("{ name }", "dlqctl")
            .replace("{ target }", t)
            .replace("{ archive-suffix }", suffix);
        assert_eq!(
            url,
            format!(
                "{repo}/releases/download/v{}/dlqctl-{t}{suffix}",
                env!("CARGO_PKG_VERSION")
            )
        );
        let bin = get("bin-dir")
            .replace("{ name }", "dlqctl")
            .replace("{ target }", t)
            .replace("{ bin }", "dlqctl")
            .replace("{ binary-ext }", if windows { ".exe" } else { "" });
        let want = if windows {
            "dlqctl.exe".to_string()
        } else {
            format!("dlqctl-{t}/dlqctl")
        };
        assert_eq!(bin, want, "{t}");
    }
    // The generated workflow is committed, with the .deb job it calls.
    let release = std::fs::read_to_string(repo_root().join(".github/workflows/release.yml"))
        .expect("release.yml (dist generate)");
    assert!(
        release.contains("uses: ./.github/workflows/build-deb.yml"),
        "release.yml does not call build-deb.yml"
    );
}

/// The version in `@vX.Y.Z`, `releases/download/vX.Y.Z/` and `dlqctl_X.Y.Z-1_amd64.deb` in the
/// install and CI instructions is this version: a release bump updates them (docs/install.md).
#[test]
fn the_install_instructions_name_this_version() {
    let version = env!("CARGO_PKG_VERSION");
    for doc in ["README.md", "docs/install.md", "docs/ci.md"] {
        let text = std::fs::read_to_string(repo_root().join(doc)).unwrap();
        let mut found = 0;
        for marker in ["dlqctl/dlqctl@v", "releases/download/v", "dlqctl_"] {
            for (at, _) in text.match_indices(marker) {
                let rest = &text[at + marker.len()..];
                let v: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.')
                    .collect();
                let v = v.trim_end_matches('.');
                if v.is_empty() {
                    continue; // releases/download/v$DLQCTL_VERSION, dlqctl_VERSION-1
                }
                assert_eq!(v, version, "{doc}: {marker}{v}");
                found += 1;
            }
        }
        assert!(found > 0, "{doc} names no release");
    }
}
