//! peek, tail and export: reading without removing.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;

use crate::backend::{self, ScanOptions, TailOptions};
use crate::classify::Classifier;
use crate::error::{Error, Result, exit};
use crate::filter::Filter;
use crate::message::Message;
use crate::ops::card::card;
use crate::output::OutputFormat;
use crate::settings::{Ctx, QueueRef};

pub struct ReadRequest {
    pub queue: QueueRef,
    pub filter: Filter,
    pub classifier: Classifier,
    pub max: Option<u64>,
    /// peek --explain: say which rule gave each message its class, and what it matched.
    pub explain: bool,
}

pub async fn peek(ctx: &Ctx, req: ReadRequest) -> Result<i32> {
    let b = ctx
        .opener
        .open(&req.queue.address, &req.queue.source_options())
        .await?;
    let r = peek_with(ctx, &req, b.as_ref()).await;
    // Reads that hold messages (SQS) give them back, after an error too.
    let closed = b.close().await;
    let code = r?;
    closed?;
    Ok(code)
}

async fn peek_with(ctx: &Ctx, req: &ReadRequest, b: &dyn backend::QueueBackend) -> Result<i32> {
    let p = &ctx.printer;
    let limit = req.max.unwrap_or(10);
    let mut stream = b
        .scan(ScanOptions {
            limit: if req.filter.is_empty() {
                Some(limit)
            } else {
                None
            },
            page_size: if req.filter.is_empty() {
                limit.min(500) as usize
            } else {
                500
            },
            ..ScanOptions::default()
        })
        .await?;
    ctx.warn_reading(b);
    let now = Utc::now();
    let mut shown = 0u64;
    let json_array = p.format == OutputFormat::Json;
    let read = async {
        while shown < limit {
            if ctx.interrupt.is_set() {
                break;
            }
            let Some(m) = stream.next().await else { break };
            let m = m?;
            if !req.filter.matches(&m, now, &req.classifier)? {
                continue;
            }
            shown += 1;
            emit(ctx, &m, &req.classifier, shown, json_array, req.explain)?;
        }
        Ok::<(), Error>(())
    }
    .await;
    // stdout holds one JSON document or nothing, whatever ends the read: the `[` went out with
    // the first record, and the array is closed after an error too (the records read before
    // it, as `--output jsonl` leaves them); an error before the first record leaves stdout
    // empty. The error itself goes to stderr, with its exit code.
    if json_array {
        match (&read, shown) {
            (Err(_), 0) => {}
            (Ok(()), 0) => p.line("[]")?,
            (Err(_), _) => {
                // A closed stdout ends the command quietly: the error says so.
                let _ = p.line("\n]").and_then(|()| p.flush());
            }
            (Ok(()), _) => p.line("\n]")?,
        }
    } else if read.is_ok() && p.is_table() && shown == 0 {
        p.note("no messages");
    }
    read?;
    p.flush()?;
    Ok(if ctx.interrupt.is_set() {
        exit::INTERRUPTED
    } else {
        exit::OK
    })
}

fn emit(
    ctx: &Ctx,
    m: &Message,
    c: &Classifier,
    n: u64,
    json_array: bool,
    explain: bool,
) -> Result<()> {
    let p = &ctx.printer;
    if p.format == OutputFormat::Table {
        let mut text = card(m, c, p.color, p.width());
        if explain {
            // The explanation goes under the header line and the facts.
            let lines: String = crate::ops::classify::explanation_lines(&c.explain(m))
                .into_iter()
                .skip(1)
                .map(|l| format!("  {l}\n"))
                .collect();
            let at = text
                .match_indices('\n')
                .nth(1)
                .map_or(text.len(), |(i, _)| i + 1);
            text.insert_str(at, &lines);
        }
        return p.write(&text);
    }
    // JSON: the export record with the error fingerprint (ignored when read back), and an
    // `explain` object under --explain.
    let mut record = serde_json::to_value(m.to_record()).expect("serialisable");
    if let serde_json::Value::Object(o) = &mut record {
        o.insert(
            "fingerprint".into(),
            crate::classify::fingerprint::fingerprint(m).id.into(),
        );
        o.insert("redrive_count".into(), m.redrive_count().into());
    }
    if explain && let serde_json::Value::Object(o) = &mut record {
        o.insert(
            "explain".into(),
            serde_json::to_value(c.explain(m)).expect("serialisable"),
        );
    }
    match p.format {
        OutputFormat::Json if json_array => {
            let text = serde_json::to_string_pretty(&record).expect("serialisable");
            p.write(if n == 1 { "[\n" } else { ",\n" })?;
            p.write(&text)
        }
        _ => p.jsonl(&record),
    }
}

pub struct TailRequest {
    pub read: ReadRequest,
    pub from_start: bool,
    pub idle_timeout: Option<Duration>,
    pub poll_interval: Duration,
}

pub async fn tail(ctx: &Ctx, req: TailRequest) -> Result<i32> {
    let r = &req.read;
    let b = ctx
        .opener
        .open(&r.queue.address, &r.queue.source_options())
        .await?;
    if !b.capabilities().tail {
        return Err(Error::Unsupported {
            backend: r.queue.address.backend_name(),
            operation: "tail",
            reason: "this source cannot follow new messages".into(),
        });
    }
    let r = tail_with(ctx, &req, b.as_ref()).await;
    let closed = b.close().await;
    let code = r?;
    closed?;
    Ok(code)
}

async fn tail_with(ctx: &Ctx, req: &TailRequest, b: &dyn backend::QueueBackend) -> Result<i32> {
    let p = &ctx.printer;
    let r = &req.read;
    let mut stream = b
        .tail(TailOptions {
            from_start: req.from_start,
            poll_interval: req.poll_interval,
        })
        .await?;
    ctx.warn_reading(b);
    if p.is_table() {
        p.note(&format!("following {} (Ctrl-C to stop)", r.queue.address));
    }
    // Where the tail starts is fixed now (`-v`), except on SQS: its stream passes over the
    // queue's backlog first, where it can be interrupted, and says so when done.
    tracing::info!(
        "following {} from {}",
        r.queue.address,
        if req.from_start { "the start" } else { "now" }
    );
    let mut shown = 0u64;
    loop {
        if r.max.is_some_and(|m| shown >= m) {
            break;
        }
        let next = async {
            match req.idle_timeout {
                Some(t) => tokio::time::timeout(t, stream.next()).await.ok(),
                None => Some(stream.next().await),
            }
        };
        let item = tokio::select! {
            item = next => item,
            _ = ctx.interrupt.wait() => return Ok(exit::INTERRUPTED),
        };
        let Some(item) = item else { break }; // idle timeout
        let Some(m) = item else { break };
        let m = m?;
        if !r.filter.matches(&m, Utc::now(), &r.classifier)? {
            continue;
        }
        shown += 1;
        match p.format {
            OutputFormat::Table => p.write(&card(&m, &r.classifier, p.color, p.width()))?,
            _ => p.jsonl(&m.to_record())?,
        }
        p.flush()?;
    }
    p.flush()?;
    Ok(exit::OK)
}

pub struct ExportRequest {
    pub read: ReadRequest,
    pub output: Option<PathBuf>,
    /// Replace an existing output file.
    pub force: bool,
}

pub async fn export(ctx: &Ctx, req: ExportRequest) -> Result<i32> {
    if let Some(path) = &req.output
        && path.as_os_str() != "-"
    {
        refuse_existing(path, req.force)?;
    }
    let b = ctx
        .opener
        .open(&req.read.queue.address, &req.read.queue.source_options())
        .await?;
    let r = export_with(ctx, &req, b.as_ref()).await;
    let closed = b.close().await;
    let code = r?;
    closed?;
    Ok(code)
}

/// Checked before anything is read: a backup is not overwritten by accident (`--force` replaces
/// a file), and a symbolic link is refused, dangling or not, `--force` or not (an export is
/// written only to a file of its own, never through a link nor in place of one).
fn refuse_existing(path: &std::path::Path, force: bool) -> Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if meta.file_type().is_symlink() {
        return Err(Error::invalid_arg(
            "--output-file",
            format!(
                "{} is a symbolic link; dlqctl writes an export only to a file of its own (0600), never through a link nor in place of one, even with --force",
                path.display()
            ),
        )
        .hinted("remove the link, or choose another name"));
    }
    if !force {
        return Err(Error::invalid_arg(
            "--output-file",
            format!("{} exists; dlqctl does not overwrite it", path.display()),
        )
        .hinted("choose another name, or pass --force to replace it"));
    }
    Ok(())
}

async fn export_with(ctx: &Ctx, req: &ExportRequest, b: &dyn backend::QueueBackend) -> Result<i32> {
    let p = &ctx.printer;
    let r = &req.read;
    // To a file: write beside it and move it into place at the end, so a failed export never
    // leaves a truncated file that looks complete. Created before the read begins: a file
    // that cannot be created refuses the export before anything is read.
    let mut file = match &req.output {
        Some(path) if path.as_os_str() != "-" => Some(Partial::create(path)?),
        _ => None,
    };
    let mut stream = b
        .scan(ScanOptions {
            limit: if r.filter.is_empty() { r.max } else { None },
            page_size: 1000,
            ..ScanOptions::default()
        })
        .await?;
    ctx.warn_reading(b);
    let bar = p.progress(None, "exporting");
    let now = Utc::now();
    let mut n = 0u64;
    let mut interrupted = false;
    while let Some(m) = stream.next().await {
        if ctx.interrupt.is_set() {
            interrupted = true;
            break;
        }
        if r.max.is_some_and(|mx| n >= mx) {
            break;
        }
        let m = m?;
        if !r.filter.matches(&m, now, &r.classifier)? {
            continue;
        }
        n += 1;
        let line = serde_json::to_string(&m.to_record()).expect("serialisable");
        match &mut file {
            Some(f) => f.line(&line)?,
            None => p.line(&line)?,
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    if let (Some(f), Some(path)) = (file, &req.output) {
        if interrupted {
            let kept = f.keep()?;
            p.warn(&format!(
                "interrupted: {} written to {}",
                crate::human::count(n, "message", "messages"),
                kept.display()
            ));
            return Ok(exit::INTERRUPTED);
        }
        f.persist(path, req.force)?;
        p.note(&format!(
            "exported {} to {}",
            crate::human::count(n, "message", "messages"),
            path.display()
        ));
    } else {
        p.flush()?;
        if interrupted {
            return Ok(exit::INTERRUPTED);
        }
    }
    // What the read could not see is not in the export: said, and not a clean finish.
    let unseen = b.unseen();
    for u in &unseen {
        p.warn(&format!(
            "partial export: {} {}",
            crate::ops::classify::unseen_count(u),
            u.reason
        ));
    }
    Ok(if unseen.is_empty() {
        exit::OK
    } else {
        exit::PARTIAL
    })
}

/// An export's file while it is written: beside the output, under a name of its own (two
/// exports to one file never share it), created 0600 (it holds message bodies).
struct Partial {
    file: std::io::BufWriter<tempfile::NamedTempFile>,
}

impl Partial {
    fn create(path: &std::path::Path) -> Result<Partial> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        let name = path
            .file_name()
            .map_or_else(|| "export".into(), |n| n.to_string_lossy().into_owned());
        let f = tempfile::Builder::new()
            .prefix(&format!("{name}."))
            .suffix(".partial")
            .tempfile_in(dir)
            .map_err(|e| Error::io(dir.join(format!("{name}.*.partial")), e))?;
        Ok(Partial {
            file: std::io::BufWriter::new(f),
        })
    }

    fn path(&self) -> &std::path::Path {
        self.file.get_ref().path()
    }

    fn line(&mut self, line: &str) -> Result<()> {
        self.file
            .write_all(line.as_bytes())
            .and_then(|_| self.file.write_all(b"\n"))
            .map_err(|e| Error::io(self.file.get_ref().path(), e))
    }

    /// Flushed and synced, as a file of its own: its path.
    fn keep(self) -> Result<PathBuf> {
        let f = self.finish()?;
        let path = f.path().to_path_buf();
        f.keep().map_err(|e| Error::io(&path, e.error))?;
        Ok(path)
    }

    fn finish(self) -> Result<tempfile::NamedTempFile> {
        let path = self.path().to_path_buf();
        let f = self
            .file
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        f.as_file().sync_all().map_err(|e| Error::io(&path, e))?;
        Ok(f)
    }

    /// Move into place at `path`: never over a file that appeared while the export ran
    /// (atomically; `force` replaces it). The directory is synced after.
    fn persist(self, path: &std::path::Path, force: bool) -> Result<()> {
        let f = self.finish()?;
        let partial = f.path().to_path_buf();
        let done = if force {
            f.persist(path).map(drop)
        } else {
            f.persist_noclobber(path).map(drop)
        };
        match done {
            Ok(()) => crate::fsutil::sync_parent(path).map_err(|e| Error::io(path, e)),
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                let kept = e.file.keep().map(|(_, p)| p).unwrap_or(partial);
                Err(Error::invalid_arg(
                    "--output-file",
                    format!(
                        "{} was created while the export ran; dlqctl does not overwrite it: the export is in {}",
                        path.display(),
                        kept.display()
                    ),
                )
                .hinted("rename it, or export again with --force"))
            }
            Err(e) => Err(Error::io(path, e.error)),
        }
    }
}
