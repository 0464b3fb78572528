//! The container image (Dockerfile, docs/install.md): its shape, and a build context that holds
//! everything `cargo build` needs. No container engine runs here, so the Dockerfile is read, and
//! `.dockerignore` is applied to the paths Cargo.toml names, as Docker applies it.

use std::path::Path;

use crate::harness::repo_root;

#[test]
fn the_container_image_is_a_static_binary_on_distroless_as_nonroot() {
    let d = std::fs::read_to_string(repo_root().join("Dockerfile")).unwrap();
    let lines: Vec<&str> = d
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .collect();
    let last_from = lines
        .iter()
        .rposition(|l| l.starts_with("FROM "))
        .expect("FROM");
    let final_stage = &lines[last_from..];
    assert!(
        d.contains("ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot")
            && final_stage[0] == "FROM ${BASE_IMAGE}",
        "{d}"
    );
    // A musl (static) build stage, the binary copied out of it, nothing else run.
    assert!(d.contains("FROM rust:${RUST_VERSION}-alpine"), "{d}");
    assert!(
        !final_stage.iter().any(|l| l.starts_with("RUN ")),
        "{final_stage:?}"
    );
    assert!(
        final_stage.contains(&"USER nonroot:nonroot"),
        "{final_stage:?}"
    );
    assert_eq!(final_stage.last(), Some(&"CMD [\"--help\"]"));
    assert!(
        final_stage.contains(&"ENTRYPOINT [\"dlqctl\"]"),
        "{final_stage:?}"
    );
    assert!(d.contains("cargo build --release --locked"), "{d}");
}

/// `.dockerignore` as Docker reads it: a line is a pattern on the path from the context's root
/// (a leading `/` means the same), `!` takes a path back, the last pattern that matches a path
/// or one of its parent directories wins.
struct DockerIgnore(Vec<(bool, glob::Pattern)>);

impl DockerIgnore {
    fn read() -> Self {
        let text = std::fs::read_to_string(repo_root().join(".dockerignore")).unwrap_or_default();
        let rules = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| {
                let (keep, p) = l.strip_prefix('!').map_or((false, l), |p| (true, p));
                let p = p.trim().trim_start_matches('/').trim_end_matches('/');
                (
                    keep,
                    glob::Pattern::new(p).unwrap_or_else(|e| panic!("{l}: {e}")),
                )
            })
            .collect();
        DockerIgnore(rules)
    }

    fn excludes(&self, path: &str) -> bool {
        let opts = glob::MatchOptions {
            require_literal_separator: true,
            ..Default::default()
        };
        let parents: Vec<&Path> = Path::new(path)
            .ancestors()
            .filter(|p| p != &Path::new(""))
            .collect();
        let mut excluded = false;
        for (keep, pattern) in &self.0 {
            if parents.iter().any(|p| pattern.matches_path_with(p, opts)) {
                excluded = !keep;
            }
        }
        excluded
    }
}

/// Each file a build of this manifest has to find, as its alternatives (a target without a
/// `path` is `DIR/NAME.rs` or `DIR/NAME/main.rs`): without one, cargo stops while it reads the
/// manifest, before it compiles anything.
fn paths_cargo_needs() -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
    let manifest: toml::Table = text.parse().unwrap();
    let mut need = vec![
        vec!["Cargo.toml".to_string()],
        vec!["Cargo.lock".to_string()],
        vec!["src/main.rs".to_string()],
    ];
    let package = manifest["package"].as_table().expect("[package]");
    match package.get("build") {
        Some(toml::Value::String(b)) => need.push(vec![b.clone()]),
        Some(_) => {}
        None if repo_root().join("build.rs").exists() => need.push(vec!["build.rs".into()]),
        None => {}
    }
    for (kind, dir) in [
        ("bin", "src/bin"),
        ("example", "examples"),
        ("bench", "benches"),
        ("test", "tests"),
    ] {
        for target in manifest
            .get(kind)
            .and_then(|t| t.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(path) = target.get("path").and_then(|p| p.as_str()) {
                need.push(vec![path.to_string()]);
            } else {
                let name = target["name"].as_str().expect("a target's name");
                need.push(vec![
                    format!("{dir}/{name}.rs"),
                    format!("{dir}/{name}/main.rs"),
                ]);
            }
        }
    }
    // Path dependencies, in any dependency table.
    let mut tables = vec![&manifest];
    if let Some(targets) = manifest.get("target").and_then(|t| t.as_table()) {
        tables.extend(targets.values().filter_map(|t| t.as_table()));
    }
    for table in tables {
        for deps in ["dependencies", "dev-dependencies", "build-dependencies"] {
            for dep in table
                .get(deps)
                .and_then(|d| d.as_table())
                .into_iter()
                .flat_map(|d| d.values())
            {
                if let Some(path) = dep.get("path").and_then(|p| p.as_str()) {
                    need.push(vec![format!("{path}/Cargo.toml")]);
                }
            }
        }
    }
    need
}

/// `[[example]] bench_amqp_floor` with `/examples/` in .dockerignore broke `cargo build` in the
/// Dockerfile: the container build of docs/install.md failed before compiling anything.
#[test]
fn the_build_context_holds_every_path_cargo_toml_needs() {
    let ignore = DockerIgnore::read();
    assert!(ignore.excludes("target/release/dlqctl") && ignore.excludes("tests/it/main.rs"));
    for alternatives in paths_cargo_needs() {
        let present: Vec<&String> = alternatives
            .iter()
            .filter(|p| repo_root().join(p).exists())
            .collect();
        assert!(
            !present.is_empty(),
            "Cargo.toml needs one of {alternatives:?}: none exists"
        );
        assert!(
            present.iter().any(|p| !ignore.excludes(p)),
            ".dockerignore leaves {present:?} out of the build context, which Cargo.toml needs"
        );
    }
}
