//! A JSON Lines file written by `export` (or edited by hand), read as a replay source.

use std::path::PathBuf;

use async_trait::async_trait;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

use super::{
    Capabilities, Fact, Inspection, MessageStream, MoveOptions, MoveSession, OpenOptions,
    QueueBackend, QueueSink, ScanOptions, SendOutcome, TailOptions, VerifyFacts,
};
use crate::address::{Address, FileAddress};
use crate::config::{IdSource, QueueConfig};
use crate::error::{Error, Result};
use crate::message::{Message, Record};

/// The longest line a JSON Lines source may have: a line is read whole before it is parsed,
/// so this bounds the memory one line takes (a 48 MiB body, base64-encoded, fits).
pub const MAX_LINE_BYTES: usize = 64 << 20;

pub struct FileBackend {
    addr: Address,
    id: Option<IdSource>,
    /// Opened as a purge's archive: the file for appending, opened (and created) by the first
    /// batch the run sends, so that a dry run or a refused run leaves no file behind.
    archive: Option<std::sync::Mutex<Option<std::fs::File>>>,
}

/// Open an address of this backend (its line in `backend::OPENERS`).
pub fn open<'a>(
    addr: &'a crate::address::Address,
    opts: &'a crate::backend::OpenOptions,
) -> futures::future::BoxFuture<'a, crate::error::Result<Box<dyn crate::backend::QueueBackend>>> {
    crate::backend::boxed(std::future::ready(FileBackend::open(addr, opts)))
}

impl FileBackend {
    pub fn open(addr: &Address, opts: &OpenOptions) -> Result<FileBackend> {
        if let Address::File(FileAddress::Path(p)) = addr
            && !opts.as_target
            && !p.is_file()
        {
            return Err(Error::NotFound {
                what: format!("file {}", p.display()),
                detail: "no such file (write one with `dlqctl export QUEUE -o FILE`)".into(),
            });
        }
        let archive = match addr {
            Address::File(FileAddress::Path(p)) if opts.as_target => {
                // Refused before anything is asked or moved (the open at the first batch
                // refuses a link created later).
                if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(Error::invalid_arg(
                        "--archive",
                        format!(
                            "{} is a symlink; an archive holds message bodies and is written only to a file of its own (0600)",
                            p.display()
                        ),
                    )
                    .hinted("remove the link or choose another path"));
                }
                // A directory that is not there is said before anything is asked or moved
                // (the file itself is created by the first batch).
                if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty())
                    && !dir.is_dir()
                {
                    return Err(Error::io(
                        p,
                        std::io::Error::from(std::io::ErrorKind::NotFound),
                    ));
                }
                Some(std::sync::Mutex::new(None))
            }
            _ => None,
        };
        Ok(FileBackend {
            addr: addr.clone(),
            id: opts.id.clone(),
            archive,
        })
    }

    fn path(&self) -> PathBuf {
        match &self.addr {
            Address::File(FileAddress::Path(p)) => p.clone(),
            _ => PathBuf::from("-"),
        }
    }

    fn unsupported(&self, operation: &'static str) -> Error {
        Error::Unsupported {
            backend: "a JSON Lines file",
            operation,
            reason: "a file is a replay source, not a queue: use `dlqctl replay FILE --to QUEUE`"
                .into(),
        }
    }
}

#[async_trait]
impl QueueBackend for FileBackend {
    fn address(&self) -> &Address {
        &self.addr
    }

    fn describe_move(&self, how: &super::MoveHow) -> String {
        if how.purge {
            let remove = if how.archived {
                "remove it"
            } else {
                "remove each selected message"
            };
            super::archive_then(how.archived, remove)
        } else {
            "copy each message to the target".into()
        }
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            archive_only: true,
            ..Capabilities::default()
        }
    }

    fn sink(&self) -> Option<&dyn QueueSink> {
        self.archive.as_ref().map(|_| self as &dyn QueueSink)
    }

    /// The file and its size; the messages are counted by `inspect`'s and `check`'s census.
    async fn inspect(&self, _classifier: &crate::classify::Classifier) -> Result<Inspection> {
        let path = self.path();
        let mut ins = Inspection {
            queue: self.addr.to_string(),
            backend: "file",
            ..Inspection::default()
        };
        let shown = path.display().to_string();
        ins.facts.push(Fact::new("file", shown.clone(), shown));
        if let Address::File(FileAddress::Path(p)) = &self.addr {
            let bytes = tokio::fs::metadata(p)
                .await
                .map_err(|e| Error::io(p, e))?
                .len() as i64;
            ins.facts.push(Fact::new(
                "size_bytes",
                bytes,
                crate::human::human_bytes(bytes),
            ));
        }
        Ok(ins)
    }

    async fn scan(&self, opts: ScanOptions) -> Result<MessageStream<'_>> {
        let path = self.path();
        let reader: Box<dyn AsyncRead + Send + Unpin> = match &self.addr {
            Address::File(FileAddress::Stdin) => Box::new(tokio::io::stdin()),
            _ => Box::new(
                tokio::fs::File::open(&path)
                    .await
                    .map_err(|e| Error::io(&path, e))?,
            ),
        };
        let id = self.id.clone();
        let what = path.display().to_string();
        Ok(Box::pin(async_stream::try_stream! {
            let mut reader = BufReader::new(reader);
            let mut buf = Vec::new();
            let mut n: u64 = 0;
            let mut line_no: u64 = 0;
            loop {
                line_no += 1;
                let input_err = |reason: String| Error::Input { what: what.clone(), line: line_no, reason };
                let Some(line) = next_line(&mut reader, &mut buf).await.map_err(|e| match e {
                    LineError::Io(e) => Error::io(&path, e),
                    LineError::TooLong => input_err(format!(
                        "longer than {} (dlqctl reads at most that much of one line)",
                        crate::human::human_bytes(MAX_LINE_BYTES as i64)
                    )),
                    LineError::NotUtf8(e) => input_err(format!("not UTF-8 ({e})")),
                })?
                else {
                    break;
                };
                if line.trim().is_empty() {
                    continue;
                }
                if opts.limit.is_some_and(|l| n >= l) {
                    break;
                }
                let rec: Record = serde_json::from_str(line).map_err(|e| input_err(e.to_string()))?;
                let mut m = Message::from_record(rec).map_err(input_err)?;
                super::finish_read(&mut m, id.as_ref());
                n += 1;
                yield m;
            }
        }))
    }

    async fn tail(&self, _opts: TailOptions) -> Result<MessageStream<'_>> {
        Err(self.unsupported("tail"))
    }

    async fn begin_move(&self, _opts: MoveOptions) -> Result<Box<dyn MoveSession + '_>> {
        Err(self.unsupported("redrive"))
    }

    async fn destination(&self, _m: &Message) -> Result<Option<Address>> {
        Ok(None)
    }

    async fn verify_facts(&self, _cfg: &QueueConfig) -> Result<VerifyFacts> {
        Err(self.unsupported("verify"))
    }
}

/// A purge's archive: each batch appended as JSON Lines records (the `export` format) and
/// synced to disk before the messages are accepted, so that they are removed from the queue
/// only once the file holds them.
#[async_trait]
impl QueueSink for FileBackend {
    async fn send(&self, batch: &[Message]) -> Result<Vec<SendOutcome>> {
        use std::io::Write;
        let path = self.path();
        let mut text = Vec::new();
        for m in batch {
            serde_json::to_writer(&mut text, &m.to_record())
                .map_err(|e| Error::io(&path, std::io::Error::other(e)))?;
            text.push(b'\n');
        }
        let file = self
            .archive
            .as_ref()
            .expect("a sink only when opened as an archive");
        let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_none() {
            // The run's first batch: the file is created (0600) now, or appended to.
            *f = Some(crate::fsutil::append_private(&path).map_err(|e| Error::io(&path, e))?);
        }
        let f = f.as_mut().expect("opened above");
        f.write_all(&text).map_err(|e| Error::io(&path, e))?;
        f.sync_data().map_err(|e| Error::io(&path, e))?;
        Ok(vec![SendOutcome::Sent; batch.len()])
    }
}

enum LineError {
    Io(std::io::Error),
    TooLong,
    NotUtf8(std::str::Utf8Error),
}

/// The next line of `r` (without its line break), read into `buf`: None at the end. A line
/// longer than [`MAX_LINE_BYTES`] is an error as soon as that many bytes were read.
async fn next_line<'b, R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &'b mut Vec<u8>,
) -> std::result::Result<Option<&'b str>, LineError> {
    buf.clear();
    let mut limited = r.take(MAX_LINE_BYTES as u64 + 1);
    let n = limited
        .read_until(b'\n', buf)
        .await
        .map_err(LineError::Io)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    } else if buf.len() > MAX_LINE_BYTES {
        return Err(LineError::TooLong);
    }
    std::str::from_utf8(buf)
        .map(Some)
        .map_err(LineError::NotUtf8)
}
