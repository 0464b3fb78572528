use crate::error::{Error, Result, exit};
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
    if !p.is_table() {
        p.json(&runs)?;
        return Ok(exit::OK);
    }
    if runs.is_empty() {
        p.note(&format!("no runs recorded in {}", path.display()));
        return Ok(exit::OK);
    }
    let mut t = p.table();
    t.set_header(vec![
        "started",
        "who",
        "command",
        "source → targets",
        "moved",
        "exit",
        "reason",
    ]);
    for r in &runs {
        let i = &r.intent;
        let (moved, code) = match &r.outcome {
            Some(o) => (
                o.counts
                    .get("moved")
                    .and_then(serde_json::Value::as_u64)
                    .map_or("-".into(), |n| n.to_string()),
                o.exit_code.to_string(),
            ),
            None => ("?".into(), "unfinished".into()),
        };
        let targets = if i.targets.is_empty() {
            "(no archive)".to_string()
        } else {
            i.targets.join(", ")
        };
        t.add_row(vec![
            i.time.format("%Y-%m-%d %H:%M:%S").to_string(),
            format!("{}@{}", i.user, i.host),
            i.command.clone(),
            format!("{} → {targets}", i.source),
            moved,
            code,
            i.reason.clone().unwrap_or_default(),
        ]);
    }
    p.line(&t.to_string())?;
    p.line(&format!("{} run(s) from {}", runs.len(), path.display()))?;
    Ok(exit::OK)
}
