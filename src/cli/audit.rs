use crate::error::{Error, Result, exit};
use crate::output::OutputFormat;
use crate::settings::Ctx;

/// List recent runs that changed something: who, where, what, why and how it ended
///
/// Every redrive, replay and purge (not a dry run) and every native move start or cancel
/// writes an intent record to the audit log before it starts and an outcome record when it
/// ends ([audit] path in dlqctl.toml; default in the user's state directory). A run whose
/// outcome is missing crashed, or is still running. docs/audit.md has the records.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only runs started within DURATION (24h, 7d) or since TIME (RFC 3339)
    #[arg(long, value_name = "DURATION|TIME")]
    pub since: Option<String>,
    /// The newest N runs
    #[arg(long, short = 'n', default_value_t = 50, value_name = "N")]
    pub limit: usize,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    if a.limit == 0 {
        return Err(Error::invalid_arg("-n", "must be at least 1"));
    }
    let since = a
        .since
        .as_deref()
        .map(|s| {
            s.parse::<chrono::DateTime<chrono::Utc>>().or_else(|_| {
                crate::config::parse_duration(s)
                    .map(|d| chrono::Utc::now() - chrono::Duration::from_std(d).unwrap_or_default())
                    .map_err(|_| {
                        Error::invalid_arg(
                            "--since",
                            format!("`{s}` is neither a duration (24h, 7d) nor a time (2026-12-04T08:00:00Z)"),
                        )
                    })
            })
        })
        .transpose()?;
    let path = crate::audit::log_path(&ctx.config.audit, ctx.aws.state_dir.as_deref());
    let mut runs = crate::audit::read(&path, since)?;
    let skip = runs.len().saturating_sub(a.limit);
    runs.drain(..skip);
    let p = &ctx.printer;
    match p.format {
        // One run a line, for jq (`select(.command == "purge")`).
        OutputFormat::Jsonl => {
            for r in &runs {
                p.jsonl(r)?;
            }
            return Ok(exit::OK);
        }
        OutputFormat::Table => {}
        _ => return p.json(&runs).map(|_| exit::OK),
    }
    if runs.is_empty() {
        p.note(&format!("no runs recorded in {}", path.display()));
        return Ok(exit::OK);
    }
    p.line(&p.grid(&crate::ops::tables::audit::table(&runs)))?;
    p.line(&format!("{} run(s) from {}", runs.len(), path.display()))?;
    Ok(exit::OK)
}
