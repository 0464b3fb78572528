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
            let fault = st.hit(|t| match t {
                Trigger::KafkaApi(key) => apis.iter().filter(|a| *a == key).count(),
                Trigger::Bytes(p) => scan.pattern_count(p, chunk),
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
    }
}
