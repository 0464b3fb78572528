//! A fault-injecting TCP proxy on loopback, between dlqctl and a real service.
//!
//! It forwards bytes both ways and watches what the client sends. An armed fault fires on the
//! n-th request that matches its trigger (a byte pattern, such as an SQL keyword or an SQS
//! action name, or a Kafka API key), on any connection, once:
//!
//! * [`When::Before`]: the matching request never reaches the server; the connection is reset.
//! * [`When::AfterResponse`]: the request reaches the server, and the connection is reset as
//!   soon as the server answers, so the client never learns the outcome (a copy accepted, a
//!   commit done, and the client does not know).
//! * [`When::Stall`]: the request is held back for a while, then forwarded.
//!
//! Triggers are matched on the client's bytes, so a fault lands at the same point of a run
//! whatever the timing: deterministic without sleeps. (Our own code: toxiproxy, the usual fault
//! proxy, is a Go server outside the registries these machines reach, and its faults are
//! timed, not triggered by a request.)

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Clone, Debug)]
pub enum Trigger {
    /// The client's bytes contain this (an SQL keyword, `AmazonSQS.DeleteMessageBatch`).
    Bytes(Vec<u8>),
    /// A Kafka request with this API key (0 Produce, 8 OffsetCommit, 11 JoinGroup).
    KafkaApi(i16),
    /// An AMQP 0-9-1 method frame of this class and method (60,40 basic.publish; 60,80
    /// basic.ack; 60,20 basic.consume): a connection that opens with `AMQP` is followed
    /// frame by frame.
    Amqp(u16, u16),
    /// A Redis command with this name (`EVALSHA`, `ZREM`), read from the client's RESP
    /// arrays (a pattern in a job's payload or a script's text does not count).
    RedisCommand(&'static str),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    Before,
    AfterResponse,
    Stall(Duration),
}

#[derive(Debug)]
struct Armed {
    trigger: Trigger,
    /// Fire on this occurrence (1: the first).
    nth: usize,
    when: When,
    seen: usize,
    /// Fire on every occurrence from the nth on, until disarmed.
    always: bool,
}

#[derive(Default)]
struct State {
    armed: Mutex<Option<Armed>>,
    fired: AtomicUsize,
}

impl State {
    /// Count an occurrence of a matching request; the fault to apply, if this is the one.
    fn hit(&self, mut matches: impl FnMut(&Trigger) -> usize) -> Option<When> {
        let mut slot = self.armed.lock().unwrap();
        let a = slot.as_mut()?;
        let n = matches(&a.trigger);
        if n == 0 {
            return None;
        }
        a.seen += n;
        if a.seen >= a.nth {
            let when = a.when;
            if !a.always {
                *slot = None;
            }
            self.fired.fetch_add(1, Ordering::SeqCst);
            return Some(when);
        }
        None
    }
}

pub struct Proxy {
    pub port: u16,
    state: Arc<State>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Proxy {
    /// A proxy on 127.0.0.1 (a free port) to `upstream`, on a thread and runtime of its own.
    /// `kafka`: the clients speak Kafka's protocol (for [`Trigger::KafkaApi`]).
    pub fn start(upstream: SocketAddr, kafka: bool) -> Proxy {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        Proxy::start_on(listener, upstream, kafka)
    }

    /// A proxy on a listener bound beforehand (its port given to a broker to advertise).
    pub fn start_on(
        std_listener: std::net::TcpListener,
        upstream: SocketAddr,
        kafka: bool,
    ) -> Proxy {
        std_listener.set_nonblocking(true).unwrap();
        let port = std_listener.local_addr().unwrap().port();
        let state = Arc::new(State::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (state.clone(), stop.clone());
        let kafka_proto = kafka;
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = TcpListener::from_std(std_listener).unwrap();
                loop {
                    let Ok((client, _)) = listener.accept().await else {
                        continue;
                    };
                    if sp.load(Ordering::SeqCst) {
                        return;
                    }
                    let st = st.clone();
                    let kafka = kafka_proto;
                    tokio::spawn(async move {
                        if let Ok(server) = TcpStream::connect(upstream).await {
                            pump(client, server, st, kafka).await;
                        }
                    });
                }
            });
        });
        Proxy {
            port,
            state,
            stop,
            thread: Some(thread),
        }
    }

    /// Arm a one-shot fault: on the `nth` request matching `trigger`.
    pub fn arm(&self, trigger: Trigger, nth: usize, when: When) {
        *self.state.armed.lock().unwrap() = Some(Armed {
            trigger,
            nth: nth.max(1),
            when,
            seen: 0,
            always: false,
        });
    }

    /// Arm a lasting fault: on every request matching `trigger`, until [`Proxy::disarm`] (a
    /// call that keeps failing, whatever the client's retries).
    pub fn arm_always(&self, trigger: Trigger, when: When) {
        *self.state.armed.lock().unwrap() = Some(Armed {
            trigger,
            nth: 1,
            when,
            seen: 0,
            always: true,
        });
    }

    /// How many faults fired so far.
    pub fn fired(&self) -> usize {
        self.state.fired.load(Ordering::SeqCst)
    }

    /// Forget an armed fault that has not fired.
    pub fn disarm(&self) {
        *self.state.armed.lock().unwrap() = None;
    }
}

/// Both directions of one connection, until either side closes or a fault cuts it.
async fn pump(client: TcpStream, server: TcpStream, st: Arc<State>, kafka: bool) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    // Set when the next server bytes must not reach the client (AfterResponse).
    let cut = Arc::new(AtomicBool::new(false));
    let reset = Arc::new(tokio::sync::Notify::new());
    let (cut2, reset2) = (cut.clone(), reset.clone());
    let upstream = async move {
        let mut buf = vec![0u8; 64 * 1024];
        let mut scan = Scanner::default();
        loop {
            let n = match cr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let chunk = &buf[..n];
            // Kafka framing is followed on every chunk, armed or not, to stay in step.
            let apis = if kafka {
                scan.kafka_apis(chunk)
            } else {
                Vec::new()
            };
            let methods = scan.amqp_methods(chunk);
            // RESP is followed on every chunk too (a non-Redis client never starts with `*`).
            let redis = scan.redis_commands(chunk);
            let fault = st.hit(|t| match t {
                Trigger::KafkaApi(key) => apis.iter().filter(|a| *a == key).count(),
                Trigger::Amqp(c, m) => methods.iter().filter(|x| **x == (*c, *m)).count(),
                Trigger::Bytes(p) => scan.pattern_count(p, chunk),
                Trigger::RedisCommand(c) => redis
                    .iter()
                    .filter(|r| r.eq_ignore_ascii_case(c.as_bytes()))
                    .count(),
            });
            match fault {
                Some(When::Before) => {
                    reset2.notify_waiters();
                    return;
                }
                Some(When::AfterResponse) => {
                    cut2.store(true, Ordering::SeqCst);
                }
                Some(When::Stall(d)) => tokio::time::sleep(d).await,
                None => {}
            }
            if sw.write_all(chunk).await.is_err() {
                return;
            }
        }
    };
    let downstream = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match sr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if cut.load(Ordering::SeqCst) {
                return;
            }
            if cw.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        _ = upstream => {}
        _ = downstream => {}
        _ = reset.notified() => {}
    }
    // Dropping both streams closes them; a fault has already cut the conversation short, and
    // the client sees its connection end mid-request.
}

/// Finds triggers in a client's byte stream, across chunk boundaries.
#[derive(Default)]
struct Scanner {
    /// The tail of the previous chunk (for patterns split between two reads).
    tail: Vec<u8>,
    /// Kafka framing: bytes of the current request still to skip, and a partial header.
    skip: usize,
    header: Vec<u8>,
    /// AMQP framing: whether the stream opened with `AMQP` (None: not yet known), the bytes
    /// of the current frame still to skip, and a partial frame header.
    amqp: Option<bool>,
    amqp_skip: usize,
    amqp_header: Vec<u8>,
    /// RESP: the client's bytes not yet parsed into whole commands (None once the stream is
    /// seen not to be RESP).
    resp: Option<Vec<u8>>,
}

impl Scanner {
    /// How many times `p` occurs in the stream, counting the occurrences that end in `chunk`.
    fn pattern_count(&mut self, p: &[u8], chunk: &[u8]) -> usize {
        let mut hay = std::mem::take(&mut self.tail);
        let start = hay.len();
        hay.extend_from_slice(chunk);
        let n = hay
            .windows(p.len())
            .enumerate()
            .filter(|(i, w)| *w == p && i + p.len() > start)
            .count();
        let keep = p.len().saturating_sub(1).min(hay.len());
        self.tail = hay[hay.len() - keep..].to_vec();
        n
    }

    /// The names of the Redis commands (RESP arrays of bulk strings) completed in `chunk`.
    fn redis_commands(&mut self, chunk: &[u8]) -> Vec<Vec<u8>> {
        let buf = self.resp.get_or_insert_with(Vec::new);
        if buf.is_empty() && chunk.first().is_some_and(|b| *b != b'*') {
            return Vec::new();
        }
        buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        let mut at = 0;
        while let Some((name, len)) = resp_command(&buf[at..]) {
            out.push(name);
            at += len;
        }
        buf.drain(..at);
        out
    }

    /// The API keys of the Kafka requests that start in `chunk` (size i32, api_key i16, …).
    fn kafka_apis(&mut self, chunk: &[u8]) -> Vec<i16> {
        let mut out = Vec::new();
        let mut rest = chunk;
        while !rest.is_empty() {
            if self.skip > 0 {
                let k = self.skip.min(rest.len());
                self.skip -= k;
                rest = &rest[k..];
                continue;
            }
            let k = (6 - self.header.len()).min(rest.len());
            self.header.extend_from_slice(&rest[..k]);
            rest = &rest[k..];
            if self.header.len() == 6 {
                let size = i32::from_be_bytes(self.header[..4].try_into().unwrap());
                out.push(i16::from_be_bytes(self.header[4..6].try_into().unwrap()));
                self.skip = (size.max(2) as usize) - 2;
                self.header.clear();
            }
        }
        out
    }
}

/// The first whole RESP command in `b`: its name and its length in bytes.
fn resp_command(b: &[u8]) -> Option<(Vec<u8>, usize)> {
    fn line(b: &[u8], at: usize) -> Option<(&[u8], usize)> {
        let end = b[at..].windows(2).position(|w| w == b"\r\n")? + at;
        Some((&b[at..end], end + 2))
    }
    let (head, mut at) = line(b, 0)?;
    let n: usize = std::str::from_utf8(head.strip_prefix(b"*")?)
        .ok()?
        .parse()
        .ok()?;
    let mut name = Vec::new();
    for i in 0..n {
        let (len, next) = line(b, at)?;
        let len: usize = std::str::from_utf8(len.strip_prefix(b"$")?)
            .ok()?
            .parse()
            .ok()?;
        if b.len() < next + len + 2 {
            return None;
        }
        if i == 0 {
            name = b[next..next + len].to_vec();
        }
        at = next + len + 2;
    }
    Some((name, at))
}

impl Scanner {
    /// The (class, method) of the AMQP method frames that start in `chunk`, once the stream
    /// opened with the protocol header `AMQP\0\0\x09\x01`; nothing for other protocols.
    fn amqp_methods(&mut self, chunk: &[u8]) -> Vec<(u16, u16)> {
        let mut rest = chunk;
        if self.amqp.is_none() {
            let k = (8 - self.amqp_header.len()).min(rest.len());
            self.amqp_header.extend_from_slice(&rest[..k]);
            rest = &rest[k..];
            if self.amqp_header.len() < 8 {
                return Vec::new();
            }
            self.amqp = Some(self.amqp_header.starts_with(b"AMQP"));
            self.amqp_header.clear();
        }
        let mut out = Vec::new();
        if self.amqp != Some(true) {
            return out;
        }
        while !rest.is_empty() {
            if self.amqp_skip > 0 {
                let k = self.amqp_skip.min(rest.len());
                self.amqp_skip -= k;
                rest = &rest[k..];
                continue;
            }
            // type (1), channel (2), size (4), and for a method frame class and method (4).
            let need = if self.amqp_header.first() == Some(&1) {
                11
            } else {
                7
            };
            let k = (need - self.amqp_header.len()).min(rest.len());
            self.amqp_header.extend_from_slice(&rest[..k]);
            rest = &rest[k..];
            if self.amqp_header.len() < need {
                continue;
            }
            let size = u32::from_be_bytes(self.amqp_header[3..7].try_into().unwrap()) as usize;
            if need == 11 {
                let class = u16::from_be_bytes(self.amqp_header[7..9].try_into().unwrap());
                let method = u16::from_be_bytes(self.amqp_header[9..11].try_into().unwrap());
                out.push((class, method));
                self.amqp_skip = size.saturating_sub(4) + 1;
            } else if self.amqp_header[0] == 1 {
                // A method frame's header is complete only with its class and method.
                continue;
            } else {
                self.amqp_skip = size + 1;
            }
            self.amqp_header.clear();
        }
        out
    }
}

#[cfg(test)]
mod amqp_tests {
    use super::*;

    #[test]
    fn amqp_method_frames_across_chunks() {
        let frame = |t: u8, payload: &[u8]| {
            let mut f = vec![t, 0, 1];
            f.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            f.extend_from_slice(payload);
            f.push(0xce);
            f
        };
        let mut bytes = b"AMQP\x00\x00\x09\x01".to_vec();
        bytes.extend(frame(1, &[0, 60, 0, 40, 9, 9, 9]));
        bytes.extend(frame(2, &[0, 60, 0, 0, 1, 2]));
        bytes.extend(frame(3, b"body"));
        bytes.extend(frame(8, &[]));
        bytes.extend(frame(1, &[0, 60, 0, 80, 1]));
        let mut s = Scanner::default();
        let mut got = Vec::new();
        for c in bytes.chunks(3) {
            got.extend(s.amqp_methods(c));
        }
        assert_eq!(got, vec![(60, 40), (60, 80)]);
        let mut other = Scanner::default();
        assert!(
            other
                .amqp_methods(b"\x00\x00\x00\x10GET / HTTP/1.1")
                .is_empty()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_across_chunks_and_kafka_frames() {
        let mut s = Scanner::default();
        assert_eq!(s.pattern_count(b"DELETE", b"xxDEL"), 0);
        assert_eq!(s.pattern_count(b"DELETE", b"ETE yy DELETE"), 2);
        let mut s = Scanner::default();
        // Two requests: api 3 (size 6: key, version, 2 bytes) and api 8 split in two reads.
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&6i32.to_be_bytes());
        bytes.extend_from_slice(&3i16.to_be_bytes());
        bytes.extend_from_slice(&[0, 0, 9, 9]);
        bytes.extend_from_slice(&4i32.to_be_bytes());
        bytes.extend_from_slice(&8i16.to_be_bytes());
        bytes.extend_from_slice(&[0, 1]);
        assert_eq!(s.kafka_apis(&bytes[..13]), vec![3]);
        assert_eq!(s.kafka_apis(&bytes[13..]), vec![8]);
        // Redis: two commands, the second split across reads; a name inside a value does
        // not count.
        let mut s = Scanner::default();
        let cmds =
            b"*2\r\n$4\r\nZREM\r\n$7\r\nEVALSHA\r\n*3\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$1\r\n0\r\n";
        assert_eq!(s.redis_commands(&cmds[..30]), vec![b"ZREM".to_vec()]);
        assert_eq!(s.redis_commands(&cmds[30..]), vec![b"EVALSHA".to_vec()]);
    }
}
