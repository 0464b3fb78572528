use std::path::PathBuf;

use super::FilterArgs;
use crate::error::Result;
use crate::ops::read::{ExportRequest, ReadRequest};
use crate::settings::Ctx;

/// Write messages as JSON Lines, losslessly, without removing them
///
/// One record per line (docs/jsonl.md): binary bodies and headers base64, everything else as
/// it was. The file can be edited and fed back with `dlqctl replay FILE --to QUEUE`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Queue URL or name from dlqctl.toml
    #[arg(value_name = "QUEUE")]
    pub queue: String,
    /// Write to FILE instead of stdout (written as FILE.partial, renamed when complete)
    #[arg(short = 'o', long = "output-file", value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    /// Export at most N messages
    #[arg(long, value_name = "N")]
    pub max: Option<u64>,
    /// Replace FILE if it exists (without it, an existing file is an error; a symbolic link is
    /// refused either way)
    #[arg(long, requires = "output_file")]
    pub force: bool,
    #[command(flatten)]
    pub filters: FilterArgs,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let max = crate::cli::max_count(a.max)?;
    let queue = ctx.queue(&a.queue)?;
    let (filter, classifier) = a.filters.resolve(ctx)?;
    crate::ops::read::export(
        ctx,
        ExportRequest {
            read: ReadRequest {
                queue,
                filter,
                classifier,
                max,
                explain: false,
            },
            output: a.output_file,
            force: a.force,
        },
    )
    .await
}
