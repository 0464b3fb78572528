//! A JSON Lines file written by `export` (or edited by hand), read as a replay source.

use std::path::PathBuf;

use async_trait::async_trait;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use super::{
    Capabilities, Fact, Inspection, MessageStream, MoveOptions, MoveSession, OpenOptions,
    QueueBackend, QueueSink, ScanOptions, SendOutcome, TailOptions, VerifyFacts,
};
use crate::address::{Address, FileAddress};
use crate::config::{IdSource, QueueConfig};
use crate::error::{Error, Result};
use crate::message::{Message, Record};

pub struct FileBackend {
    addr: Address,
    id: Option<IdSource>,
    /// Opened as a purge's archive: the file, for appending.
    archive: Option<std::sync::Mutex<std::fs::File>>,
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
            Address::File(FileAddress::Path(p)) if opts.as_target => Some(std::sync::Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| Error::io(p, e))?,
            )),
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

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            read: true,
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
            let mut lines = BufReader::new(reader).lines();
            let mut n: u64 = 0;
            let mut line_no: u64 = 0;
            while let Some(line) = lines.next_line().await.map_err(|e| Error::io(&path, e))? {
                line_no += 1;
                if line.trim().is_empty() {
                    continue;
                }
                if opts.limit.is_some_and(|l| n >= l) {
                    break;
                }
                let input_err = |reason: String| Error::Input { what: what.clone(), line: line_no, reason };
                let rec: Record = serde_json::from_str(&line).map_err(|e| input_err(e.to_string()))?;
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
        f.write_all(&text).map_err(|e| Error::io(&path, e))?;
        f.sync_data().map_err(|e| Error::io(&path, e))?;
        Ok(vec![SendOutcome::Sent; batch.len()])
    }
}
