//! The RabbitMQ backend: a queue (read, moved from, written to through the default exchange)
//! or an exchange and routing key (written to), on one vhost.

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use lapin::options::QueueDeclareOptions;
use lapin::types::FieldTable;
use lapin::{Channel, Connection};

use super::address::{AmqpAddress, AmqpTarget};
use super::api::{Api, QueueInfo};
use super::conn::{Broker, close};
use super::reader::{ReadMode, Reader};
use super::record::{Delivered, to_message};
use super::session::RabbitMoveSession;
use super::sink::{Publisher, not_a_queue};
use crate::address::Address;
use crate::backend::{
    Backlog, Capabilities, Inspection, MessageStream, MoveOptions, MoveSession, OpenOptions,
    PendingSend, QueueBackend, QueueSink, ScanOptions, SendOutcome, TailOptions, Unaccounted,
    VerifyFacts,
};
use crate::config::{IdSource, QueueConfig};
use crate::error::{Error, Result};
use crate::message::Message;

/// How long a read waits for a delivery before it takes the queue as drained
/// (`DLQCTL_AMQP_IDLE_MS`).
const IDLE: Duration = Duration::from_millis(2000);

const SIDE_EFFECT: &str = "takes each message and gives it back when the read ends: it comes back marked redelivered, and on a quorum queue its delivery count goes up by one";
const SIDE_EFFECT_PAST_LIMIT: &str = "takes each message and gives it back when the read ends, and this quorum queue has a delivery-limit (read anyway: --allow-onward-redrive): each message's delivery count goes up by one, and one that reaches the limit is dead-lettered onward or dropped by RabbitMQ, as `dlqctl inspect` shows";
/// Without the management API the queue's type and limits are unknown, so a read of a quorum
/// queue with a delivery-limit cannot be refused: the warning says what that risks, and how to
/// let dlqctl refuse it.
const SIDE_EFFECT_UNKNOWN: &str = "takes each message and gives it back when the read ends, and without the management API dlqctl cannot tell the queue's type: if it is a quorum queue with a delivery-limit (RabbitMQ 4.0 gives every quorum queue 20), each read counts one delivery, and a message that reaches the limit is dead-lettered onward or dropped by RabbitMQ. Give the API (`api=http://HOST:15672` in the URL, or `[rabbitmq] api` in dlqctl.toml) and dlqctl refuses such a read (docs/rabbitmq.md)";

pub struct RabbitBackend {
    addr: Address,
    a: AmqpAddress,
    broker: Broker,
    pub(super) api: Option<Api>,
    /// The queue as the management API shows it (type, arguments, policy), when it can.
    pub(super) info: Option<QueueInfo>,
    id: Option<IdSource>,
    allow_limit_reads: bool,
    idle: Duration,
    control: tokio::sync::OnceCell<Connection>,
    publisher: tokio::sync::OnceCell<Publisher>,
    /// The channels of reads under way, and the queue's consumers before each, closed by
    /// `close` (which gives their messages back).
    readers: Mutex<Vec<(Channel, u32)>>,
    /// What the last read could not see: messages other consumers or channels held
    /// unacknowledged when it began ([`RabbitBackend::held_by_others`]).
    unseen: Mutex<Vec<Unaccounted>>,
    /// Which broker and vhost this is, as the broker shows it ([`RabbitBackend::place`]).
    place: tokio::sync::OnceCell<String>,
}

/// The marker queues this process's backends declared ([`RabbitBackend::place`]).
static MARKERS: Mutex<Vec<String>> = Mutex::new(Vec::new());

impl RabbitBackend {
    pub async fn open(addr: &Address, opts: &OpenOptions) -> Result<RabbitBackend> {
        let Address::Rabbitmq(a) = addr else {
            unreachable!("RabbitBackend::open with a non-RabbitMQ address")
        };
        let broker = Broker::new(a, &opts.backends.rabbitmq, opts.backends.file.as_deref());
        let api = Api::of(&broker)?;
        let idle = std::env::var("DLQCTL_AMQP_IDLE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(IDLE, Duration::from_millis);
        let mut b = RabbitBackend {
            addr: addr.clone(),
            a: a.clone(),
            broker,
            api,
            info: None,
            id: opts.id.clone(),
            allow_limit_reads: opts.aws.allow_onward_redrive,
            idle,
            control: tokio::sync::OnceCell::new(),
            publisher: tokio::sync::OnceCell::new(),
            readers: Mutex::new(Vec::new()),
            unseen: Mutex::new(Vec::new()),
            place: tokio::sync::OnceCell::new(),
        };
        if opts.as_target {
            b.publisher().await?;
        } else if let Some(q) = a.queue() {
            // The queue must exist (a passive declare), whatever the API says.
            b.declare_passive(q).await?;
            if let Some(api) = &b.api {
                b.info = api.queue(&a.vhost, q).await?;
            }
        }
        Ok(b)
    }

    pub(super) fn broker(&self) -> &Broker {
        &self.broker
    }

    pub(super) fn amqp(&self) -> &AmqpAddress {
        &self.a
    }

    pub(super) fn id_source(&self) -> Option<&IdSource> {
        self.id.as_ref()
    }

    pub(super) fn idle(&self) -> Duration {
        self.idle
    }

    pub(super) fn shown(&self) -> String {
        self.addr.to_string()
    }

    async fn publisher(&self) -> Result<&Publisher> {
        self.publisher
            .get_or_try_init(|| Publisher::open(&self.broker))
            .await
    }

    /// A channel on the backend's own connection, for one call (a channel error closes it).
    pub(super) async fn channel(&self) -> Result<Channel> {
        let c = self
            .control
            .get_or_try_init(|| self.broker.connect("inspect"))
            .await?;
        c.create_channel()
            .await
            .map_err(|e| self.broker.error("a channel", e))
    }

    /// (ready messages, consumers) of a queue, by a passive declare.
    pub(super) async fn declare_passive(&self, q: &str) -> Result<(u32, u32)> {
        let ch = self.channel().await?;
        let r = ch
            .queue_declare(
                q.into(),
                QueueDeclareOptions::default().passive(),
                FieldTable::default(),
            )
            .await
            .map_err(|e| self.broker.error(&format!("queue {q}"), e))?;
        let _ = ch.close(200, "".into()).await;
        Ok((r.message_count(), r.consumer_count()))
    }

    pub(super) fn source_queue(&self) -> Result<&str> {
        self.a.queue().ok_or_else(|| not_a_queue(&self.shown()))
    }

    pub(super) fn kind(&self) -> Option<&str> {
        self.info.as_ref().map(QueueInfo::kind)
    }

    fn is_stream(&self) -> bool {
        self.kind() == Some("stream")
    }

    /// Reading a quorum queue with a delivery limit can push messages past it: each message
    /// read and given back counts one delivery, and at the limit RabbitMQ dead-letters or
    /// drops it.
    pub(super) fn guard_reads(&self) -> Result<()> {
        let Some(info) = &self.info else {
            return Ok(());
        };
        if info.kind() != "quorum" || self.allow_limit_reads {
            return Ok(());
        }
        let Some((limit, from)) = info.setting_u64("delivery-limit") else {
            return Ok(());
        };
        let onward = match info.setting_str("dead-letter-exchange") {
            Some((x, _)) => format!("dead-letters it (to exchange `{x}`)"),
            None => "drops it".into(),
        };
        Err(Error::invalid_arg(
            "QUEUE",
            format!(
                "{} is a quorum queue with delivery-limit {limit} ({from}): every message a read gives back counts one delivery, and past the limit RabbitMQ {onward}",
                self.shown()
            ),
        )
        .hinted("pass --allow-onward-redrive to read anyway"))
    }

    fn mode(&self, page: usize, exclusive: bool) -> ReadMode {
        ReadMode {
            prefetch: u16::try_from(page.max(1).saturating_mul(2)).unwrap_or(u16::MAX),
            exclusive,
            stream: self.is_stream(),
        }
    }

    async fn reader(&self, page: usize, purpose: &str) -> Result<Reader> {
        let q = self.source_queue()?;
        let r = Reader::open(&self.broker, q, self.mode(page, false), purpose).await?;
        self.readers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((r.ch.clone(), r.consumers_at_start));
        Ok(r)
    }

    /// The messages of `q` that another consumer or channel holds unacknowledged, which no
    /// read can see until they are acknowledged or given back. AMQP does not count them; the
    /// management API does (`messages_unacknowledged`), from statistics up to
    /// `collect_statistics_interval` (5 s by default) old. So they are counted only where the
    /// API's ready count agrees with `ready`, what a passive declare gave just before (no
    /// message of this reader's taken yet): a count from before the last change (a run that
    /// just gave back or removed what it held) is not taken for one held now. None without the
    /// API, or where it cannot tell.
    pub(super) async fn held_by_others(&self, q: &str, ready: u32) -> Option<Unaccounted> {
        let api = self.api.as_ref()?;
        let info = match api.queue(&self.a.vhost, q).await {
            Ok(Some(info)) => info,
            Ok(None) => return None,
            Err(e) => {
                tracing::debug!(error = %e, "rabbitmq: no unacknowledged count from the management API");
                return None;
            }
        };
        let held = info.number("messages_unacknowledged").unwrap_or(0);
        if held == 0 || info.number("messages_ready") != Some(u64::from(ready)) {
            return None;
        }
        Some(Unaccounted {
            count: held,
            approximate: true,
            reason: format!(
                "not read: held unacknowledged by another consumer or channel of {q} (the management API's count, up to 5 s old): no AMQP read sees a message while someone holds it; re-run once it is acknowledged or given back (the management UI's Channels page names the holder)"
            ),
            until: None,
        })
    }

    /// Note what a read that found `ready` messages cannot see ([`QueueBackend::unseen`]).
    async fn note_unseen(&self, q: &str, ready: u32) {
        let held = self.held_by_others(q, ready).await;
        *self.unseen.lock().unwrap_or_else(|p| p.into_inner()) = held.into_iter().collect();
    }

    /// Which broker and vhost this backend reaches, whatever host name, address or port its URL
    /// spells: `marker QUEUE` when the broker shows it a marker queue, else `HOST:PORT/VHOST`
    /// as spelled. AMQP names no server (lapin does not show the server's properties), so the
    /// broker is asked: the first backend of the process declares an exclusive queue
    /// `dlqctl.lock.id.PID.N` (the lock queues' prefix, whose configure permission a redrive
    /// needs anyway) on its connection, and every other looks for the markers already
    /// declared (a passive declare: there, or exclusive to another connection, is the same
    /// broker and vhost; not found is another). Two round trips per backend, once.
    async fn place(&self) -> String {
        self.place
            .get_or_init(|| async {
                match self.marker().await {
                    Ok(m) => format!("marker {m}"),
                    Err(e) => {
                        tracing::debug!(error = %e, "rabbitmq: no marker queue; the identity is the address as spelled");
                        format!(
                            "{}:{}/{}",
                            self.a.host.to_ascii_lowercase(),
                            self.a.port,
                            self.a.vhost
                        )
                    }
                }
            })
            .await
            .clone()
    }

    /// A marker queue this backend's broker and vhost has: one another backend of this process
    /// declared, else one declared now (kept while the backend's connection lives).
    async fn marker(&self) -> Result<String> {
        let known: Vec<String> = MARKERS.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for m in known {
            let ch = self.channel().await?;
            let found = ch
                .queue_declare(
                    m.as_str().into(),
                    QueueDeclareOptions::default().passive(),
                    FieldTable::default(),
                )
                .await;
            match found {
                Ok(_) => {
                    let _ = ch.close(200, "".into()).await;
                    return Ok(m);
                }
                // RESOURCE_LOCKED: exclusive to the connection that declared it, so it is here.
                Err(e) if matches!(e.kind(), lapin::ErrorKind::ProtocolError(p) if p.get_id() == 405) =>
                {
                    return Ok(m);
                }
                Err(_) => {}
            }
        }
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let m = format!(
            "dlqctl.lock.id.{}.{}",
            std::process::id(),
            SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let ch = self.channel().await?;
        ch.queue_declare(
            m.as_str().into(),
            QueueDeclareOptions {
                exclusive: true,
                auto_delete: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .map_err(|e| {
            self.broker.error_needing(
                &format!("marker queue {m}"),
                Some(("configure", "declaring the marker queue (queue.declare)")),
                e,
            )
        })?;
        let _ = ch.close(200, "".into()).await;
        MARKERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(m.clone());
        Ok(m)
    }

    fn message(&self, d: lapin::message::Delivery) -> Message {
        to_message(
            Delivered {
                exchange: d.exchange.as_str(),
                routing_key: d.routing_key.as_str(),
                redelivered: d.redelivered,
                properties: &d.properties,
            },
            d.data,
            self.id.as_ref(),
        )
    }

    /// The address of queue `q` (or exchange and key) on this broker.
    fn sibling(&self, target: AmqpTarget) -> Address {
        let target = match target {
            AmqpTarget::Exchange {
                exchange,
                routing_key,
            } if exchange.is_empty() => AmqpTarget::Queue(routing_key),
            t => t,
        };
        Address::Rabbitmq(self.a.with_target(target))
    }
}

#[async_trait]
impl QueueBackend for RabbitBackend {
    fn address(&self) -> &Address {
        &self.addr
    }

    fn describe_move(&self, how: &crate::backend::MoveHow) -> String {
        match (how.purge, how.archived) {
            (true, true) => crate::backend::archive_then(true, "acknowledge it (basic.ack)"),
            (true, false) => "acknowledge each selected message (basic.ack)".into(),
            (false, _) => "copy each message to the target (publisher confirms, mandatory), then acknowledge it in the dead-letter queue; what is skipped or refused goes back to the queue when the run ends, marked redelivered".into(),
        }
    }

    fn capabilities(&self) -> Capabilities {
        let queue = self.a.queue().is_some();
        Capabilities {
            tail: queue,
            delete: queue && !self.is_stream(),
            no_delete: self.is_stream().then_some(
                "a stream keeps every message until its retention removes it, so none can be removed after its copy is sent",
            ),
            read_side_effect: match self.kind() {
                Some("stream") => None,
                Some("quorum")
                    if self.allow_limit_reads
                        && self
                            .info
                            .as_ref()
                            .is_some_and(|i| i.setting_u64("delivery-limit").is_some()) =>
                {
                    Some(SIDE_EFFECT_PAST_LIMIT)
                }
                Some(_) => Some(SIDE_EFFECT),
                None => Some(SIDE_EFFECT_UNKNOWN),
            },
            per_message_destination: true,
            ..Capabilities::default()
        }
    }

    async fn inspect(&self, classifier: &crate::classify::Classifier) -> Result<Inspection> {
        self.inspect_queue(classifier).await
    }

    fn refuse_reads(&self) -> Result<()> {
        self.guard_reads()
    }

    async fn scan(&self, opts: ScanOptions) -> Result<MessageStream<'_>> {
        self.guard_reads()?;
        let page = opts.page_size.clamp(1, 10_000);
        let mut reader = self.reader(page, "read").await?;
        // A stream has no count to stop at: it ends when nothing more comes.
        let total = if self.is_stream() {
            u64::MAX
        } else {
            self.note_unseen(self.source_queue()?, reader.at_start)
                .await;
            u64::from(reader.at_start)
        };
        reader.begin().await?;
        let limit = opts.limit.map_or(total, |l| l.min(total));
        let idle = self.idle;
        Ok(Box::pin(async_stream::try_stream! {
            let mut n = 0u64;
            while n < limit {
                let want = (limit - n).min(page as u64) as u32;
                let Some(got) = reader.next(idle, want).await? else { break };
                n += 1;
                yield self.message(got.delivery);
            }
            reader.give_back().await;
        }))
    }

    async fn tail(&self, opts: TailOptions) -> Result<MessageStream<'_>> {
        self.guard_reads()?;
        let mut reader = self.reader(100, "tail").await?;
        reader.begin().await?;
        // What is there now is read (and held) first, shown only with --from-start.
        let mut skip = if opts.from_start || self.is_stream() {
            0
        } else {
            u64::from(reader.at_start)
        };
        let idle = opts.poll_interval.max(Duration::from_millis(200));
        Ok(Box::pin(async_stream::try_stream! {
            loop {
                let Some(got) = reader.next(idle, 1).await? else { continue };
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                yield self.message(got.delivery);
            }
        }))
    }

    async fn begin_move(&self, opts: MoveOptions) -> Result<Box<dyn MoveSession + '_>> {
        let q = self.source_queue()?;
        if self.is_stream() {
            return Err(Error::Unsupported {
                backend: "rabbitmq",
                operation: "redrive or purge from a stream",
                reason: "a stream keeps every message until its retention removes it; copy with `dlqctl replay`".into(),
            });
        }
        self.guard_reads()?;
        // A purge's archive copies count no redrive: what the run is, as its connection and
        // lock name it.
        let verb = if opts.count_redrive {
            "redrive"
        } else {
            "purge"
        };
        Ok(Box::new(
            RabbitMoveSession::begin(self, q, opts.batch_size.max(1), verb).await?,
        ))
    }

    fn sink(&self) -> Option<&dyn QueueSink> {
        Some(self)
    }

    fn unseen(&self) -> Vec<Unaccounted> {
        self.unseen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// A dry run's read reports what it could not see, as the run's session would.
    fn unaccounted(&self) -> Vec<Unaccounted> {
        self.unseen()
    }

    /// The broker and vhost as the broker shows them ([`RabbitBackend::place`]), and the
    /// queue (or exchange and key): two URLs naming one queue (`127.0.0.1` and `localhost`)
    /// have one identity.
    async fn identity(&self) -> Result<Option<String>> {
        let place = format!("rabbitmq:{}", self.place().await);
        Ok(Some(match &self.a.target {
            AmqpTarget::Queue(q) => format!("{place}/queue/{q}"),
            AmqpTarget::Exchange {
                exchange,
                routing_key,
            } if exchange.is_empty() => format!("{place}/queue/{routing_key}"),
            AmqpTarget::Exchange {
                exchange,
                routing_key,
            } => format!("{place}/exchange/{exchange}/{routing_key}"),
        }))
    }

    async fn backlog(&self, _for_redrive: bool) -> Result<Option<Backlog>> {
        let Some(q) = self.a.queue() else {
            return Ok(None);
        };
        if self.is_stream() {
            return Ok(None);
        }
        let (ready, _) = self.declare_passive(q).await?;
        Ok(Some(Backlog {
            messages: u64::from(ready),
            exact: true,
        }))
    }

    /// Spring's `x-original-exchange`/`routingKey`, else the queue it first died in (through
    /// the default exchange: the original exchange may also route to other queues, which
    /// would get the message twice), MassTransit's input queue, NServiceBus's FailedQ.
    async fn destination(&self, m: &Message) -> Result<Option<Address>> {
        if m.meta.get("convention").and_then(|c| c.as_str()) == Some("spring-amqp")
            && let Some(o) = m.meta.get("original")
            && let (Some(e), Some(k)) = (o["exchange"].as_str(), o["routing_key"].as_str())
        {
            return Ok(Some(self.sibling(AmqpTarget::Exchange {
                exchange: e.into(),
                routing_key: k.into(),
            })));
        }
        Ok(m.source
            .as_ref()
            .filter(|q| !q.is_empty())
            .map(|q| self.sibling(AmqpTarget::Queue(q.clone()))))
    }

    async fn verify_facts(&self, cfg: &QueueConfig) -> Result<VerifyFacts> {
        self.verify_queue(cfg).await
    }

    async fn close(&self) -> Result<()> {
        let chans = std::mem::take(&mut *self.readers.lock().unwrap_or_else(|p| p.into_inner()));
        let mut before = None;
        for (ch, consumers) in chans {
            if ch.status().connected() {
                let _ = ch.close(200, "dlqctl read done".into()).await;
            }
            before = Some(before.map_or(consumers, |b: u32| b.min(consumers)));
        }
        // The broker drops a closed channel's consumer a moment after the close: wait for it,
        // so that what comes next (edit's move, an exclusive consumer) does not meet it.
        if let (Some(before), Some(q)) = (before, self.a.queue()) {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
            while let Ok((_, now)) = self.declare_passive(q).await {
                if now <= before || tokio::time::Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        if let Some(p) = self.publisher.get() {
            p.close().await;
        }
        if let Some(c) = self.control.get() {
            close(c).await;
        }
        Ok(())
    }
}

#[async_trait]
impl QueueSink for RabbitBackend {
    async fn send(&self, batch: &[Message]) -> Result<Vec<SendOutcome>> {
        self.send_start(batch).await?.await
    }

    async fn send_start(&self, batch: &[Message]) -> Result<PendingSend> {
        self.publisher().await?.send_start(batch).await
    }

    fn check(&self, copy: &Message) -> std::result::Result<(), String> {
        super::record::to_publish(copy, &self.broker.user).map(|_| ())
    }
}
