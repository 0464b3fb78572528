//! One mover of a Redis job set at a time: the lock a redrive, purge or edit holds while it
//! runs (read-only commands take none).
//!
//! Two movers of one set would each find jobs the other had just retried (every script acts
//! only on a job still in the set, so nothing is lost or retried twice, but each run would
//! count the other's jobs as not retried, and both end with exit 1). So a mover first takes
//! `<set>:dlqctl-lock` (`dead:dlqctl-lock`, `NS:retry:dlqctl-lock`,
//! `bull:NAME:failed:dlqctl-lock`) with `SET key TOKEN NX PX timeout`, where the token names
//! the holder (`user@host pid N since TIME`) and ends in a random part of its own. A second
//! mover finds it taken and is refused at once (exit 3), with the holder's name.
//!
//! A keeper task renews the lock every third of the timeout with `lock_renew.lua` (a
//! compare-and-`PEXPIRE`: only while the value is still this run's token); at the end the run
//! releases it with `lock_release.lua` (a compare-and-`DEL`: never another run's). A run that
//! was killed (`kill -9`) renews nothing: its lock expires by itself, within the timeout of
//! its last renewal (`[redis] lock_timeout`, 30 s by default); a run on the same host that finds
//! the lock of a dlqctl process there that no longer runs takes it over at once
//! (`lock_takeover.lua`, only while it still holds that token), so a re-run right after a
//! crash need not wait. A run whose lock was not renewed
//! in time (suspended, or the server did not answer) or was taken by another claims nothing
//! more and stops, exit 3. Both scripts are shown verbatim in docs/systems/sidekiq.md.

use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;

use super::RedisBackend;
use crate::error::{Error, Result};

/// Renew the lock while it is this run's (shown in the docs verbatim).
pub(super) const RENEW_SCRIPT: &str = include_str!("lock_renew.lua");
/// Release the lock while it is this run's (shown in the docs verbatim).
pub(super) const RELEASE_SCRIPT: &str = include_str!("lock_release.lua");
/// Take over the lock of a run that is gone (shown in the docs verbatim).
pub(super) const TAKEOVER_SCRIPT: &str = include_str!("lock_takeover.lua");

/// `[redis] lock_timeout` unless given.
pub(super) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The lock's key for the set `set`.
pub(super) fn key(set: &str) -> String {
    format!("{set}:dlqctl-lock")
}

/// What the session and the keeper share.
struct State {
    /// Until when this run may act, on its monotonic clock (the last renewal sent, plus the
    /// timeout).
    until: Instant,
    /// Why the lock was lost, for good.
    lost: Option<String>,
}

/// A held lock: renewed while it lives, released by [`Lock::release`] (or left to expire when
/// dropped without).
pub(super) struct Lock {
    key: String,
    token: String,
    con: MultiplexedConnection,
    release_sha: String,
    state: Arc<Mutex<State>>,
    keeper: tokio::task::JoinHandle<()>,
    target: String,
    timeout: Duration,
}

impl Drop for Lock {
    fn drop(&mut self) {
        self.keeper.abort();
    }
}

fn guard(s: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// Take the lock of `b`'s set, or say who holds it (exit 3).
pub(super) async fn acquire(b: &RedisBackend, timeout: Duration) -> Result<Lock> {
    let timeout = timeout.clamp(Duration::from_millis(300), Duration::from_secs(3600));
    let key = key(&b.key);
    let nonce = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let token = format!(
        "{}@{} pid {} since {} #{nonce:016x}",
        crate::operator::user(),
        crate::operator::host(),
        std::process::id(),
        chrono::Utc::now().format("%Y-%m-%d %H:%M:%S UTC"),
    );
    let mut con = b.con.clone();
    let ms = timeout.as_millis() as u64;
    let sent = Instant::now();
    let taken: Option<String> = redis::cmd("SET")
        .arg(&key)
        .arg(&token)
        .arg("NX")
        .arg("PX")
        .arg(ms)
        .query_async(&mut con)
        .await
        .map_err(|e| b.err(e))?;
    if taken.is_none() && !taken_from_the_gone(b, &key, &token, ms).await? {
        return Err(held_by(b, &key, timeout).await);
    }
    let load = |src: &'static str| {
        let mut con = b.con.clone();
        async move {
            redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(src)
                .query_async::<String>(&mut con)
                .await
        }
    };
    let renew_sha = load(RENEW_SCRIPT).await.map_err(|e| b.err(e))?;
    let release_sha = load(RELEASE_SCRIPT).await.map_err(|e| b.err(e))?;
    let state = Arc::new(Mutex::new(State {
        until: sent + timeout,
        lost: None,
    }));
    let keeper = tokio::spawn(keep(
        b.con.clone(),
        key.clone(),
        token.clone(),
        renew_sha,
        timeout,
        state.clone(),
    ));
    tracing::debug!(%key, holder = %token, "redis: lock taken");
    Ok(Lock {
        key,
        token,
        con: b.con.clone(),
        release_sha,
        state,
        keeper,
        target: b.ra.to_string(),
        timeout,
    })
}

/// Where the lock is held by a dlqctl process of this host that no longer runs (killed, and so
/// not renewing it), take it over at once (a re-run right after a crash need not wait for the
/// lock to expire); only while it still holds that token. Whether it was taken.
async fn taken_from_the_gone(b: &RedisBackend, key: &str, token: &str, ms: u64) -> Result<bool> {
    let mut con = b.con.clone();
    let holder: Option<String> = redis::cmd("GET")
        .arg(key)
        .query_async(&mut con)
        .await
        .map_err(|e| b.err(e))?;
    let Some(holder) = holder.filter(|h| gone(h)) else {
        return Ok(false);
    };
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(TAKEOVER_SCRIPT)
        .query_async(&mut con)
        .await
        .map_err(|e| b.err(e))?;
    let taken: i64 = redis::cmd("EVALSHA")
        .arg(sha)
        .arg(1)
        .arg(key)
        .arg(&holder)
        .arg(token)
        .arg(ms)
        .query_async(&mut con)
        .await
        .map_err(|e| b.err(e))?;
    if taken == 1 {
        tracing::info!(
            "{}: took over {key} from a run on this host that is gone ({})",
            b.ra,
            holder.split(" #").next().unwrap_or(&holder)
        );
    }
    Ok(taken == 1)
}

/// Whether the token names a process of this host (`user@HOST pid N …`) that no longer runs as
/// dlqctl (no such process, a zombie, or another program under that pid). Where that cannot
/// be told (no /proc), the holder is taken to be alive: its lock expires by itself.
fn gone(token: &str) -> bool {
    let Some((who, rest)) = token.split_once(" pid ") else {
        return false;
    };
    let host = who.rsplit_once('@').map_or("", |(_, h)| h);
    let Some(pid) = rest.split(' ').next().and_then(|p| p.parse::<u32>().ok()) else {
        return false;
    };
    if host != crate::operator::host() || pid == std::process::id() {
        return false;
    }
    if !std::path::Path::new("/proc/self/stat").exists() {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // `PID (COMM) STATE …`: a zombie or dead, or a process that is not dlqctl.
        Ok(stat) => {
            let comm = stat
                .split_once('(')
                .and_then(|(_, r)| r.rsplit_once(')'))
                .map(|(c, r)| (c, r.trim_start().chars().next()));
            match comm {
                Some((c, state)) => !c.starts_with("dlqctl") || matches!(state, Some('Z' | 'X')),
                None => false,
            }
        }
    }
}

/// The lock is another run's: who holds it, for how long yet.
async fn held_by(b: &RedisBackend, key: &str, timeout: Duration) -> Error {
    let mut con = b.con.clone();
    let (holder, pttl): (Option<String>, i64) = redis::pipe()
        .cmd("GET")
        .arg(key)
        .cmd("PTTL")
        .arg(key)
        .query_async(&mut con)
        .await
        .unwrap_or((None, -2));
    // The token's random part is for the scripts' comparisons, not for people.
    let who = holder
        .as_deref()
        .map(|h| h.split(" #").next().unwrap_or(h).to_string())
        .unwrap_or_else(|| "a run that has just ended".into());
    let left = if pttl > 0 {
        format!(
            "; it expires in {:.0} s unless renewed",
            (pttl as f64 / 1000.0).ceil()
        )
    } else {
        String::new()
    };
    Error::Backend {
        target: b.ra.to_string(),
        reason: format!(
            "the set {} is in use by another dlqctl redrive, purge or edit ({who}; lock {key}{left}): two movers of one set would each find jobs the other had just retried",
            b.key
        ),
    }
    .hinted(format!(
        "wait for that run to end, then re-run (`redis-cli GET {key}` names the holder); the lock of a run that was killed expires by itself within {} of its last renewal ([redis] lock_timeout)",
        humantime::format_duration(timeout)
    ))
}

/// The keeper task: renew every third of the timeout while the lock is this run's; stop at
/// the first renewal that finds it another's or gone, or once the run's time ran out.
async fn keep(
    mut con: MultiplexedConnection,
    key: String,
    token: String,
    sha: String,
    timeout: Duration,
    state: Arc<Mutex<State>>,
) {
    let every = timeout / 3;
    loop {
        tokio::time::sleep(every).await;
        let sent = Instant::now();
        let renewed: redis::RedisResult<i64> = redis::cmd("EVALSHA")
            .arg(&sha)
            .arg(1)
            .arg(&key)
            .arg(&token)
            .arg(timeout.as_millis() as u64)
            .query_async(&mut con)
            .await;
        let mut st = guard(&state);
        match renewed {
            Ok(1) if st.lost.is_none() && sent < st.until => st.until = sent + timeout,
            Ok(1) => {}
            Ok(_) => {
                st.lost.get_or_insert_with(|| {
                    format!("{key} was not this run's any more when it was renewed (it expired, and another run may have taken it)")
                });
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, %key, "redis: lock not renewed");
                if Instant::now() >= st.until {
                    st.lost.get_or_insert_with(|| {
                        format!(
                            "{key} could not be renewed within its {} ({e})",
                            humantime::format_duration(timeout)
                        )
                    });
                    return;
                }
            }
        }
    }
}

impl Lock {
    /// Ok while this run may act: its time has not run out and nobody else took the lock.
    pub(super) fn check(&self) -> Result<()> {
        let mut st = guard(&self.state);
        if st.lost.is_none() && Instant::now() >= st.until {
            st.lost = Some(format!(
                "{} was not renewed within its {} (the process was suspended, or the server did not answer)",
                self.key,
                humantime::format_duration(self.timeout)
            ));
        }
        match &st.lost {
            None => Ok(()),
            Some(why) => Err(Error::Backend {
                target: self.target.clone(),
                reason: format!(
                    "lost the lock: {why}; another run may be moving these jobs now, so this run claimed nothing more (every job it retried was retried once). See what is left with `dlqctl inspect`, then re-run"
                ),
            }),
        }
    }

    /// Stop renewing and delete the lock if it is still this run's.
    pub(super) async fn release(&mut self) {
        self.keeper.abort();
        let released: redis::RedisResult<i64> = redis::cmd("EVALSHA")
            .arg(&self.release_sha)
            .arg(1)
            .arg(&self.key)
            .arg(&self.token)
            .query_async(&mut self.con)
            .await;
        if let Err(e) = released {
            // It expires by itself.
            tracing::debug!(error = %e, key = %self.key, "redis: lock not released");
        }
    }
}
