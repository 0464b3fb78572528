//! The RabbitMQ fixture: the broker started by `scripts/services start rabbitmq`
//! (DLQCTL_AMQP_URL, DLQCTL_RABBITMQ_API), queues named per process and test, and dead letters
//! made by the broker itself: a consumer rejects with requeue=false, a TTL expires, a length
//! limit overflows.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicGetOptions, BasicNackOptions, BasicPublishOptions,
    BasicQosOptions, ConfirmSelectOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};

static SEQ: AtomicU32 = AtomicU32::new(0);
static CLEANED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `amqp://USER:PASSWORD@127.0.0.1:PORT/%2f` (no query).
pub fn amqp_url() -> String {
    std::env::var("DLQCTL_AMQP_URL").unwrap_or_else(|_| {
        panic!("DLQCTL_AMQP_URL is not set: run the suite with `scripts/test`, or `eval \"$(scripts/services env)\"` after `scripts/services start rabbitmq`")
    })
}

/// The management API's base URL.
pub fn api_url() -> String {
    std::env::var("DLQCTL_RABBITMQ_API")
        .unwrap_or_else(|_| panic!("DLQCTL_RABBITMQ_API is not set: see amqp_url()"))
}

/// (user, password) of the test broker.
pub fn credentials() -> (String, String) {
    let u = url::Url::parse(&amqp_url()).unwrap();
    (
        u.username().to_string(),
        u.password().unwrap_or("").to_string(),
    )
}

pub fn amqp_port() -> u16 {
    url::Url::parse(&amqp_url()).unwrap().port().unwrap()
}

pub fn s(v: &str) -> AMQPValue {
    AMQPValue::LongString(LongString::from(v.as_bytes().to_vec()))
}

pub fn table(pairs: &[(&str, AMQPValue)]) -> FieldTable {
    let mut t = FieldTable::default();
    for (k, v) in pairs {
        t.insert(ShortString::from(*k), v.clone());
    }
    t
}

/// What kind of queues a test uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Classic,
    Quorum,
}

pub struct Rabbit {
    pub conn: Connection,
    pub ch: Channel,
    pub prefix: String,
    /// dlqctl reaches the broker on this port (a proxy's, or the broker's).
    pub port: u16,
    http: reqwest::Client,
}

impl Rabbit {
    pub async fn new(name: &str) -> Rabbit {
        let n = SEQ.fetch_add(1, Ordering::SeqCst);
        let conn = Connection::connect(&amqp_url(), ConnectionProperties::default())
            .await
            .expect("connect to the test RabbitMQ");
        let ch = conn.create_channel().await.expect("channel");
        ch.confirm_select(ConfirmSelectOptions::default())
            .await
            .expect("confirm.select");
        let r = Rabbit {
            conn,
            ch,
            prefix: format!("t.{name}.{}.{n}", std::process::id()),
            port: amqp_port(),
            http: reqwest::Client::builder()
                .tls_backend_preconfigured(
                    rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
                        rustls::crypto::ring::default_provider(),
                    ))
                    .with_safe_default_protocol_versions()
                    .unwrap()
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth(),
                )
                .build()
                .unwrap(),
        };
        if !CLEANED.swap(true, Ordering::SeqCst) {
            r.clean_earlier_runs().await;
        }
        r
    }

    /// Queues of earlier runs (`t.NAME.PID.N` of a process that is gone) are deleted by the
    /// first test of this run; a failed test's queues stay until then, for inspection. A run
    /// still going (another worktree's, on the shared broker) keeps its queues.
    async fn clean_earlier_runs(&self) {
        let gone = |name: &str| match name.split('.').nth(2).map(str::parse::<u32>) {
            Some(Ok(pid)) => !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            _ => false,
        };
        for q in self
            .api_get("queues/%2F?columns=name")
            .await
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let name = q["name"].as_str().unwrap_or_default();
            if name.starts_with("t.") && gone(name) {
                let _ = self
                    .ch
                    .queue_delete(name.into(), QueueDeleteOptions::default())
                    .await;
            }
        }
    }

    pub async fn api_get(&self, path: &str) -> serde_json::Value {
        let (u, p) = credentials();
        self.http
            .get(format!("{}/api/{path}", api_url()))
            .basic_auth(u, Some(p))
            .send()
            .await
            .expect("management API")
            .json()
            .await
            .unwrap_or(serde_json::Value::Null)
    }

    pub async fn api_put(&self, path: &str, body: serde_json::Value) {
        let (u, p) = credentials();
        let r = self
            .http
            .put(format!("{}/api/{path}", api_url()))
            .basic_auth(u, Some(p))
            .json(&body)
            .send()
            .await
            .expect("management API");
        assert!(r.status().is_success(), "PUT {path}: {}", r.status());
    }

    /// DELETE on the management API (closing a connection by name, as an operator does).
    pub async fn api_delete(&self, path: &str) {
        let (u, p) = credentials();
        let r = self
            .http
            .delete(format!("{}/api/{path}", api_url()))
            .basic_auth(u, Some(p))
            .send()
            .await
            .expect("management API");
        assert!(r.status().is_success(), "DELETE {path}: {}", r.status());
    }

    pub fn name(&self, q: &str) -> String {
        format!("{}.{q}", self.prefix)
    }

    /// dlqctl's address of queue `q` (through `self.port`), with the management API, as
    /// dlqctl shows it: the password comes from the environment ([`env`]).
    pub fn url(&self, q: &str) -> String {
        format!("{}&api={}", self.url_no_api(q), api_url())
    }

    /// The same, without the management API.
    pub fn url_no_api(&self, q: &str) -> String {
        let (user, _) = credentials();
        format!(
            "amqp://{user}@127.0.0.1:{}/%2F?queue={}",
            self.port,
            self.name(q)
        )
    }

    pub async fn declare(&self, q: &str, kind: Kind, args: &[(&str, AMQPValue)]) {
        let mut t = table(args);
        if kind == Kind::Quorum {
            t.insert("x-queue-type".into(), s("quorum"));
        }
        self.ch
            .queue_declare(
                self.name(q).as_str().into(),
                QueueDeclareOptions {
                    durable: true,
                    ..QueueDeclareOptions::default()
                },
                t,
            )
            .await
            .unwrap_or_else(|e| panic!("declare {q}: {e}"));
    }

    /// A work queue `work` whose dead letters go to `dlq` (through the default exchange).
    pub async fn pair(&self, kind: Kind, work: &str, dlq: &str) {
        self.declare(dlq, kind, &[]).await;
        self.declare(
            work,
            kind,
            &[
                ("x-dead-letter-exchange", s("")),
                ("x-dead-letter-routing-key", s(&self.name(dlq))),
            ],
        )
        .await;
    }

    /// Publish to queue `q` (default exchange), confirmed.
    pub async fn publish(&self, q: &str, body: &[u8], props: BasicProperties) {
        let c = self
            .ch
            .basic_publish(
                "".into(),
                self.name(q).as_str().into(),
                BasicPublishOptions::default(),
                body,
                props,
            )
            .await
            .expect("publish");
        assert!(c.await.expect("confirm").is_ack(), "publish confirmed");
    }

    /// `n` messages `{prefix}-i` (message_id, body `{"order": "ID"}`, a tenant header) to `q`.
    pub async fn publish_n(&self, q: &str, prefix: &str, n: usize) -> Vec<String> {
        let ids: Vec<String> = (0..n).map(|i| format!("{prefix}-{i}")).collect();
        for id in &ids {
            let props = BasicProperties::default()
                .with_message_id(id.as_str().into())
                .with_delivery_mode(2)
                .with_content_type("application/json".into())
                .with_headers(table(&[("tenant", s("acme"))]));
            self.publish(q, format!("{{\"order\": \"{id}\"}}").as_bytes(), props)
                .await;
        }
        ids
    }

    /// Consume `n` messages of `q` and reject each with requeue=false: the broker
    /// dead-letters them (reason `rejected`) into `dlq`. The channel stays open until `dlq`
    /// has them (a quorum queue may apply a closed channel's return of its unsettled messages
    /// before the rejects sent just before the close).
    pub async fn reject(&self, q: &str, n: usize, dlq: &str) {
        let ch = self.conn.create_channel().await.unwrap();
        ch.basic_qos(100, BasicQosOptions::default()).await.unwrap();
        let mut c = ch
            .basic_consume(
                self.name(q).as_str().into(),
                "rejecter".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .unwrap();
        for _ in 0..n {
            let d = tokio::time::timeout(Duration::from_secs(10), c.next())
                .await
                .expect("a message to reject")
                .unwrap()
                .unwrap();
            d.nack(BasicNackOptions {
                requeue: false,
                ..BasicNackOptions::default()
            })
            .await
            .unwrap();
        }
        self.wait_ready(dlq, n as u32).await;
        ch.close(200, "".into()).await.unwrap();
    }

    /// `n` dead letters in `dlq`, rejected by `work`'s consumer; their ids.
    pub async fn dead_letters(&self, work: &str, dlq: &str, prefix: &str, n: usize) -> Vec<String> {
        let ids = self.publish_n(work, prefix, n).await;
        self.reject(work, n, dlq).await;
        ids
    }

    /// (ready, consumers) of `q`.
    pub async fn counts(&self, q: &str) -> (u32, u32) {
        let ch = self.conn.create_channel().await.unwrap();
        let r = ch
            .queue_declare(
                self.name(q).as_str().into(),
                QueueDeclareOptions::default().passive(),
                FieldTable::default(),
            )
            .await
            .unwrap_or_else(|e| panic!("{q}: {e}"));
        let _ = ch.close(200, "".into()).await;
        (r.message_count(), r.consumer_count())
    }

    pub async fn ready(&self, q: &str) -> u32 {
        self.counts(q).await.0
    }

    /// Wait until `q` has `n` ready messages (dead-lettering is asynchronous).
    pub async fn wait_ready(&self, q: &str, n: u32) {
        crate::pair::wait_until(
            Duration::from_secs(30),
            &format!("{n} messages in {q}"),
            || async { self.ready(q).await >= n },
        )
        .await;
    }

    /// Wait until `q` has no consumer (a killed run's connection is gone: what it held is
    /// back in the queue).
    pub async fn wait_no_consumer(&self, q: &str) {
        crate::pair::wait_until(
            Duration::from_secs(30),
            &format!("no consumer on {q}"),
            || async { self.counts(q).await.1 == 0 },
        )
        .await;
    }

    /// Every message of `q`, taken (acknowledged).
    pub async fn drain(&self, q: &str) -> Vec<lapin::message::BasicGetMessage> {
        let mut out = Vec::new();
        while let Some(m) = self
            .ch
            .basic_get(self.name(q).as_str().into(), BasicGetOptions::default())
            .await
            .unwrap()
        {
            m.delivery
                .acker
                .ack(BasicAckOptions::default())
                .await
                .unwrap();
            out.push(m);
        }
        out
    }

    /// The stable ids of every message of `q` (taken): `message_id`, else `dlqctl-stable-id`.
    pub async fn drain_ids(&self, q: &str) -> Vec<Option<String>> {
        self.drain(q)
            .await
            .iter()
            .map(|m| stable_id(&m.delivery.properties))
            .collect()
    }

    /// The environment dlqctl needs: the password.
    pub fn env(&self) -> Vec<(String, String)> {
        env()
    }
}

/// The password of the test broker, as dlqctl takes it from the environment.
pub fn env() -> Vec<(String, String)> {
    vec![("DLQCTL_AMQP_PASSWORD".into(), credentials().1)]
}

/// Run dlqctl with the broker's password in its environment.
pub fn run(sb: &crate::harness::Sandbox, args: &[&str]) -> crate::harness::Run {
    sb.run_with(args, &env())
}

pub fn header_text(p: &BasicProperties, name: &str) -> Option<String> {
    match p.headers().as_ref()?.inner().get(name)? {
        AMQPValue::LongString(v) => Some(String::from_utf8_lossy(v.as_bytes()).into_owned()),
        other => Some(format!("{other:?}")),
    }
}

pub fn stable_id(p: &BasicProperties) -> Option<String> {
    p.message_id()
        .as_ref()
        .map(|m| m.as_str().to_string())
        .or_else(|| header_text(p, "dlqctl-stable-id"))
}
