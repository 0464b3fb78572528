//! The management HTTP API, for what AMQP cannot see: a queue's type, its arguments and the
//! policy that applies to it, its consumers, an exchange's bindings.
//!
//! A small client over reqwest (HTTP/1, rustls on ring, the system's roots) rather than the
//! RabbitMQ team's `rabbitmq_http_client`: that crate's `rbase64` dependency installs mimalloc
//! as the global allocator of any program that links it, and its typed responses target
//! RabbitMQ 3.13 and 4.x. Every call here reads JSON fields that 3.10 has too, leniently.

use std::sync::Arc;
use std::time::Duration;

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;

use super::conn::Broker;
use crate::error::{Error, Result};

const TIMEOUT: Duration = Duration::from_secs(10);

pub struct Api {
    base: String,
    user: String,
    password: String,
    client: reqwest::Client,
}

pub(super) fn seg(s: &str) -> String {
    utf8_percent_encode(s, NON_ALPHANUMERIC).to_string()
}

fn tls() -> Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Backend {
            target: "the management API".into(),
            reason: format!("TLS: {e}"),
        })?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

impl Api {
    /// The API of `b`, where one is configured.
    pub fn of(b: &Broker) -> Result<Option<Api>> {
        let Some(base) = &b.api else {
            return Ok(None);
        };
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls()?)
            .timeout(TIMEOUT)
            .build()
            .map_err(|e| Error::Backend {
                target: base.clone(),
                reason: format!("cannot build an HTTP client: {e}"),
            })?;
        Ok(Some(Api {
            base: base.clone(),
            user: b.user.clone(),
            password: b.password().to_string(),
            client,
        }))
    }

    /// GET `/api/PATH`; `None` on 404.
    pub(super) async fn get(&self, path: &str) -> Result<Option<Value>> {
        let url = format!("{}/api/{path}", self.base);
        let shown = || format!("the management API at {}", self.base);
        let r = self
            .client
            .get(&url)
            .basic_auth(&self.user, Some(&self.password))
            .send()
            .await
            .map_err(|e| {
                Error::Unreachable {
                    target: shown(),
                    reason: crate::secrets::scrub(&e.without_url().to_string()),
                }
                .hinted("check the API's host and port (`api=` in the URL, `[rabbitmq] api` in dlqctl.toml or DLQCTL_RABBITMQ_API); without an API address dlqctl works from AMQP alone, and does without what only the API shows (docs/rabbitmq.md)")
            })?;
        match r.status().as_u16() {
            404 => return Ok(None),
            401 => {
                return Err(Error::AuthenticationFailed {
                    target: shown(),
                    reason: "401 Unauthorized (the management API takes the AMQP user and password; the user needs a management tag, e.g. monitoring)".into(),
                    password_from: "the AMQP address's credentials".into(),
                });
            }
            403 => {
                return Err(Error::PermissionDenied {
                    target: shown(),
                    reason: format!("403 Forbidden on /api/{path}"),
                }
                .hinted(format!(
                    "the user `{}` needs a management tag for the API (`rabbitmqctl set_user_tags {} monitoring`), and the `management` tag sees only the vhosts it has permissions in (docs/permissions.md)",
                    self.user, self.user
                )));
            }
            s if s >= 400 => {
                return Err(Error::Backend {
                    target: shown(),
                    reason: format!("HTTP {s} on /api/{path}"),
                });
            }
            _ => {}
        }
        r.json().await.map(Some).map_err(|e| Error::Backend {
            target: shown(),
            reason: format!("/api/{path}: {}", e.without_url()),
        })
    }

    /// `/api/queues/VHOST/NAME`.
    pub async fn queue(&self, vhost: &str, name: &str) -> Result<Option<QueueInfo>> {
        Ok(self
            .get(&format!("queues/{}/{}", seg(vhost), seg(name)))
            .await?
            .map(QueueInfo))
    }

    /// Every queue of the vhost (name, arguments, effective policy), to find the queues that
    /// dead-letter into an exchange.
    pub async fn queues(&self, vhost: &str) -> Result<Vec<QueueInfo>> {
        Ok(self
            .get(&format!(
                "queues/{}?columns=name,type,arguments,policy,effective_policy_definition",
                seg(vhost)
            ))
            .await?
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .map(QueueInfo)
            .collect())
    }

    /// `/api/overview`: the cluster's name and version.
    pub async fn overview(&self) -> Result<Value> {
        Ok(self.get("overview").await?.unwrap_or(Value::Null))
    }

    /// The client-given name of a connection (`connection_name`), by its broker name.
    pub async fn connection_name(&self, name: &str) -> Result<Option<String>> {
        Ok(self
            .get(&format!("connections/{}", seg(name)))
            .await?
            .and_then(|c| {
                c["client_properties"]["connection_name"]
                    .as_str()
                    .map(str::to_string)
            }))
    }
}

/// A queue as the API shows it.
#[derive(Clone, Debug)]
pub struct QueueInfo(pub Value);

/// Where a queue setting comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum From {
    Argument,
    /// The effective policy (a user policy, an operator policy, or both merged).
    Policy(String),
}

impl std::fmt::Display for From {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            From::Argument => f.write_str("queue argument"),
            From::Policy(p) => write!(f, "policy {p}"),
        }
    }
}

/// Numeric limits where RabbitMQ applies the lower of the argument and the policies.
const LOWEST_WINS: &[&str] = &[
    "max-length",
    "max-length-bytes",
    "message-ttl",
    "expires",
    "delivery-limit",
];

impl QueueInfo {
    pub fn name(&self) -> &str {
        self.0["name"].as_str().unwrap_or_default()
    }

    /// classic, quorum or stream.
    pub fn kind(&self) -> &str {
        self.0["type"].as_str().unwrap_or("classic")
    }

    pub fn number(&self, field: &str) -> Option<u64> {
        self.0[field].as_u64()
    }

    /// A setting (`dead-letter-exchange`, `message-ttl`, …): from the queue's `x-` argument,
    /// the policy or the operator policy, as RabbitMQ resolves them.
    pub fn setting(&self, key: &str) -> Option<(Value, From)> {
        let arg = self.0["arguments"]
            .get(format!("x-{key}"))
            .cloned()
            .map(|v| (v, From::Argument));
        let policy = self.0["effective_policy_definition"]
            .get(key)
            .cloned()
            .map(|v| {
                let name = self.0["policy"]
                    .as_str()
                    .or(self.0["operator_policy"].as_str())
                    .unwrap_or("?")
                    .to_string();
                (v, From::Policy(name))
            });
        if LOWEST_WINS.contains(&key) {
            return [arg, policy]
                .into_iter()
                .flatten()
                .filter(|(v, _)| v.as_u64().is_some())
                .min_by_key(|(v, _)| v.as_u64());
        }
        arg.or(policy)
    }

    pub fn setting_str(&self, key: &str) -> Option<(String, From)> {
        self.setting(key)
            .and_then(|(v, f)| v.as_str().map(|s| (s.to_string(), f)))
    }

    pub fn setting_u64(&self, key: &str) -> Option<(u64, From)> {
        self.setting(key)
            .and_then(|(v, f)| v.as_u64().map(|n| (n, f)))
    }

    /// The consumers, as `connection name (peer)`, from `consumer_details`.
    pub fn consumers(&self) -> Vec<(String, String)> {
        self.0["consumer_details"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|c| {
                        let ch = &c["channel_details"];
                        (
                            ch["connection_name"].as_str().unwrap_or("?").to_string(),
                            format!(
                                "{}:{}",
                                ch["peer_host"].as_str().unwrap_or("?"),
                                ch["peer_port"].as_u64().unwrap_or(0)
                            ),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The connection that owns an exclusive queue (its broker name).
    pub fn owner(&self) -> Option<String> {
        self.0["owner_pid_details"]["name"]
            .as_str()
            .map(str::to_string)
    }
}
