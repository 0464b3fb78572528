//! `rediss://` end to end: a TLS-only redis-server of the test's own, its certificate signed
//! by a private CA made here (rcgen), trusted through `SSL_CERT_FILE`; a CA that did not sign
//! it is one line of error, exit 3, and nothing changes; a server that asks for a client
//! certificate gets the one the URL names (`sslcert`, `sslkey`, `sslrootcert`)
//! (docs/systems/sidekiq.md#tls).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::harness::Sandbox;
use crate::pair::wait_until;

/// A private CA and a server certificate it signed for 127.0.0.1, as PEM files in `sb`:
/// (ca.pem, server.pem, server.key); and a client certificate it signed, (client.pem,
/// client.key).
fn certificates(sb: &Sandbox, name: &str) -> ((String, String, String), (String, String)) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, format!("dlqctl test CA {name}"));
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &Issuer::from_params(&ca, &ca_key))
        .unwrap();
    let client_key = KeyPair::generate().unwrap();
    let mut client = CertificateParams::new(Vec::<String>::new()).unwrap();
    client
        .distinguished_name
        .push(rcgen::DnType::CommonName, "dlqctl test client");
    let client = client
        .signed_by(&client_key, &Issuer::from_params(&ca, &ca_key))
        .unwrap();
    let path = |f: &str, text: &str| {
        sb.write(&format!("{name}-{f}"), text)
            .to_string_lossy()
            .into_owned()
    };
    (
        (
            path("ca.pem", &ca_cert.pem()),
            path("server.pem", &server.pem()),
            path("server.key", &key.serialize_pem()),
        ),
        (
            path("client.pem", &client.pem()),
            path("client.key", &client_key.serialize_pem()),
        ),
    )
}

/// A TLS-only redis-server on a free port, stopped when dropped.
struct TlsRedis {
    child: Child,
    port: u16,
    ca: String,
    /// The client certificate and key the CA signed (the server asks for one when started
    /// with `clients`).
    client: (String, String),
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl TlsRedis {
    async fn start(sb: &Sandbox, clients: bool) -> TlsRedis {
        let ((ca, cert, key), client) = certificates(sb, "server");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("redis-server")
            .args(["--port", "0", "--tls-port", &port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--tls-cert-file", &cert, "--tls-key-file", &key])
            .args(["--tls-ca-cert-file", &ca, "--tls-auth-clients"])
            .arg(if clients { "yes" } else { "no" })
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (scripts/services start redis installs it)");
        let r = TlsRedis {
            child,
            port,
            ca,
            client,
        };
        wait_until(Duration::from_secs(20), "the TLS redis-server", || async {
            r.cli(&["PING"]).is_some_and(|o| o == "PONG")
        })
        .await;
        r
    }

    /// redis-cli over TLS, trusting the CA: its output, None when it failed.
    fn cli(&self, args: &[&str]) -> Option<String> {
        let out = Command::new("redis-cli")
            .args(["--tls", "--cacert", &self.ca, "-h", "127.0.0.1"])
            .args(["--cert", &self.client.0, "--key", &self.client.1])
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !text.starts_with("Could not connect")).then_some(text)
    }

    fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}/0?system=sidekiq", self.port)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rediss_trusts_a_private_ca_through_ssl_cert_file_and_refuses_another() {
    let sb = Sandbox::new();
    let r = TlsRedis::start(&sb, false).await;
    for (i, jid) in ["tls-1", "tls-2"].iter().enumerate() {
        let job = serde_json::json!({
            "class": "ChargeJob", "args": [i], "queue": "default", "jid": jid, "retry": 0,
            "created_at": 1764932400.0, "enqueued_at": 1764932400.0,
            "error_class": "Net::ReadTimeout", "error_message": "timed out",
            "failed_at": 1764932401.0,
        });
        let score = format!("{}", 1764932401.0 + i as f64);
        r.cli(&["ZADD", "dead", &score, &job.to_string()]).unwrap();
    }
    let ((other_ca, _, _), _) = certificates(&sb, "other");
    let url = r.url();
    let run = |ca: Option<&str>, args: &[&str]| {
        let mut a = args.to_vec();
        a.insert(1, &url);
        match ca {
            Some(ca) => sb.run_env(&a, &[("SSL_CERT_FILE", ca)]),
            None => sb.run(&a),
        }
    };
    // A CA that did not sign the server's certificate, or none (the system's store): one
    // line, exit 3, nothing retried.
    for ca in [Some(other_ca.as_str()), None] {
        let out = run(ca, &["redrive", "--yes"]);
        assert_eq!(out.code, 3, "{ca:?}: {}", out.stderr);
        let errors: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| !l.starts_with("  hint:"))
            .collect();
        assert_eq!(errors.len(), 1, "{ca:?}: one line:\n{}", out.stderr);
        assert!(
            errors[0].starts_with("error:") && errors[0].contains("certificate"),
            "{ca:?}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains("hint:") && out.stderr.contains("SSL_CERT_FILE"),
            "{ca:?}: says how to trust a CA: {}",
            out.stderr
        );
        assert_eq!(r.cli(&["ZCARD", "dead"]).as_deref(), Some("2"));
    }
    // The CA that signed it: read, and retried in place.
    let peek = run(Some(&r.ca), &["peek", "--output", "jsonl"])
        .ok()
        .jsonl();
    assert_eq!(peek.len(), 2, "{peek:?}");
    assert_eq!(peek[0]["id"], "tls-1");
    let out = run(Some(&r.ca), &["redrive", "--yes", "--output", "json"])
        .ok()
        .json();
    assert_eq!(out["moved"], 2, "{out}");
    assert_eq!(r.cli(&["ZCARD", "dead"]).as_deref(), Some("0"));
    assert_eq!(r.cli(&["LLEN", "queue:default"]).as_deref(), Some("2"));
}

/// A server that asks for a client certificate (`tls-auth-clients yes`): without one the
/// handshake fails (exit 3, nothing changed); with the URL's `sslcert`/`sslkey` and the CA in
/// `sslrootcert` (no SSL_CERT_FILE), the dead job is read and retried. A file that cannot be
/// read is a usage error (exit 2) naming it; `sslcert` without `sslkey`, or on `redis://`, is
/// refused before connecting.
#[tokio::test(flavor = "multi_thread")]
async fn rediss_presents_the_client_certificate_the_url_names() {
    let sb = Sandbox::new();
    let r = TlsRedis::start(&sb, true).await;
    let job = serde_json::json!({
        "class": "ChargeJob", "args": [1], "queue": "default", "jid": "mtls-1", "retry": 0,
        "created_at": 1764932400.0, "enqueued_at": 1764932400.0,
        "error_class": "Net::ReadTimeout", "error_message": "timed out",
        "failed_at": 1764932401.0,
    });
    r.cli(&["ZADD", "dead", "1764932401", &job.to_string()])
        .unwrap();
    let enc = |p: &str| url::form_urlencoded::byte_serialize(p.as_bytes()).collect::<String>();
    let with_ca = format!("{}&sslrootcert={}", r.url(), enc(&r.ca));
    // No client certificate: the server ends the handshake.
    let out = sb.run(&["peek", &with_ca]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(out.stderr.starts_with("error:"), "{}", out.stderr);
    assert!(
        out.stderr.contains("hint:") && out.stderr.contains("&sslcert=FILE&sslkey=FILE"),
        "says how to give one: {}",
        out.stderr
    );
    // Half a pair, or TLS files on a plain connection: refused up front.
    let half = format!("{with_ca}&sslcert={}", enc(&r.client.0));
    let out = sb.run(&["peek", &half]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("sslkey"), "{}", out.stderr);
    let plain = format!(
        "redis://127.0.0.1:{}/0?system=sidekiq&sslrootcert=ca.pem",
        r.port
    );
    let out = sb.run(&["peek", &plain]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("needs TLS"), "{}", out.stderr);
    // A key file that is not there: named.
    let missing = format!("{half}&sslkey=nowhere.key");
    let out = sb.run(&["peek", &missing]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("nowhere.key"), "{}", out.stderr);
    assert_eq!(r.cli(&["ZCARD", "dead"]).as_deref(), Some("1"));
    // The pair and the CA: read and retried in place.
    let full = format!("{half}&sslkey={}", enc(&r.client.1));
    let peek = sb.run(&["peek", &full, "--output", "jsonl"]).ok().jsonl();
    assert_eq!(peek.len(), 1, "{peek:?}");
    assert_eq!(peek[0]["id"], "mtls-1");
    let out = sb
        .run(&["redrive", &full, "--yes", "--output", "json"])
        .ok()
        .json();
    assert_eq!(out["moved"], 1, "{out}");
    assert_eq!(r.cli(&["ZCARD", "dead"]).as_deref(), Some("0"));
}
