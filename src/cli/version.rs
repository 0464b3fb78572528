//! `dlqctl --version` and `dlqctl version`: what this binary is, for bug reports. The commit,
//! target and compiler come from build.rs; the backends from the cargo features compiled in.

use serde::Serialize;

use crate::error::{Result, exit};
use crate::settings::Ctx;

/// Print the version, commit, backends and build target (--output json for bug reports)
#[derive(clap::Args, Debug)]
pub struct Args {}

/// The facts `dlqctl version --output json` prints (docs/json.md#version).
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct BuildInfo {
    pub name: &'static str,
    pub version: &'static str,
    /// The full commit id; `None` when the source had no git metadata.
    pub commit: Option<&'static str>,
    /// The commit's date (YYYY-MM-DD), when built from a git checkout.
    pub commit_date: Option<&'static str>,
    /// The backends compiled in (cargo features), in a fixed order.
    pub backends: Vec<&'static str>,
    pub target: &'static str,
    /// `release` or `debug` (cargo's PROFILE: custom profiles report what they inherit).
    pub profile: &'static str,
    pub rustc: &'static str,
}

fn non_empty(s: &'static str) -> Option<&'static str> {
    (!s.is_empty()).then_some(s)
}

pub fn build_info() -> BuildInfo {
    // The backends behind a cargo feature that this build has, in the registry's order.
    let backends = crate::address::BACKENDS
        .iter()
        .filter(|b| b.feature.is_some() && b.built)
        .map(|b| b.name)
        .collect();
    BuildInfo {
        name: env!("CARGO_PKG_NAME"),
        version: env!("CARGO_PKG_VERSION"),
        commit: non_empty(env!("DLQCTL_BUILD_COMMIT_HASH")),
        commit_date: non_empty(env!("DLQCTL_BUILD_COMMIT_DATE")),
        backends,
        target: env!("DLQCTL_BUILD_TARGET"),
        profile: env!("DLQCTL_BUILD_PROFILE"),
        rustc: env!("DLQCTL_BUILD_RUSTC"),
    }
}

impl BuildInfo {
    /// What follows "dlqctl " in `--version`: `0.1.0 (1a2b3c4d5e 2026-12-04)`, then one line
    /// each for the backends and the target.
    pub fn long_version(&self) -> String {
        let commit = match (self.commit, self.commit_date) {
            (Some(c), Some(d)) => format!("{} {d}", &c[..c.len().min(10)]),
            (Some(c), None) => c[..c.len().min(10)].to_string(),
            (None, _) => "commit unknown".to_string(),
        };
        let backends = if self.backends.is_empty() {
            "none".to_string()
        } else {
            self.backends.join(", ")
        };
        format!(
            "{} ({commit})\nbackends: {backends}\ntarget: {} ({})",
            self.version, self.target, self.profile
        )
    }
}

pub fn run(ctx: &Ctx, _a: Args) -> Result<i32> {
    let info = build_info();
    if ctx.printer.is_table() {
        ctx.printer
            .line(&format!("{} {}", info.name, info.long_version()))?;
        ctx.printer.line(&format!("rustc: {}", info.rustc))?;
    } else {
        ctx.printer.json(&info)?;
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    /// Every backend behind a cargo feature, as the texts that list them name it.
    fn backends() -> Vec<(&'static str, &'static str)> {
        let names = |f: &str| match f {
            "sqs" => "SQS",
            "kafka" => "Kafka",
            "postgres" => "PostgreSQL",
            "redis" => "Redis",
            "rabbitmq" => "RabbitMQ",
            other => panic!("a new backend `{other}`: name it here and in the texts below"),
        };
        crate::address::BACKENDS
            .iter()
            .filter_map(|b| b.feature)
            .map(|f| (f, names(f)))
            .collect()
    }

    /// The lists of backends outside the registry (`--help`, the crate and the .deb
    /// descriptions, the feature lists of README.md and docs/install.md) name all of them.
    #[test]
    fn every_list_of_backends_names_every_backend() {
        let manifest: toml::Table = include_str!("../../Cargo.toml").parse().unwrap();
        let deb = manifest["package"]["metadata"]["deb"]["extended-description"]
            .as_str()
            .unwrap();
        let help = [super::super::ABOUT, super::super::LONG_ABOUT].join(" ");
        for (_, name) in backends() {
            for (what, text) in [("--help", help.as_str()), (".deb description", deb)] {
                assert!(text.contains(name), "{what} does not name {name}: {text}");
            }
        }
        let features: Vec<String> = backends().iter().map(|(f, _)| format!("`{f}`")).collect();
        let features = features.join(", ");
        let readme = include_str!("../../README.md");
        assert!(
            readme.contains(&format!("cargo feature ({features}; all by default)")),
            "README.md: the features are {features}"
        );
        let install = include_str!("../../docs/install.md");
        assert!(
            install.contains(&format!("(features {features})")),
            "docs/install.md: the features are {features}"
        );
    }
}
