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
//! its last renewal (`[redis] lock_timeout`, 30 s by default); a run of the same user on the same
//! machine (host, boot and pid namespace, in the token) that finds the lock of a process that
//! surely no longer runs (its pid free, or another process's since) takes it over at once
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
    release: redis::Script,
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
    let mut token = format!(
        "{}@{} pid {} since {} #{nonce:016x}",
        crate::operator::user(),
        crate::operator::host(),
        std::process::id(),
        chrono::Utc::now().format("%Y-%m-%d %H:%M:%S UTC"),
    );
    // Where this process can be told apart for sure (the boot, the pid namespace and its own
    // start), a later run on this machine can tell that it is gone (`gone`).
    if let Some(id) = identity(std::process::id()) {
        token.push_str(&format!(" on {id}"));
    }
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
    // redis::Script sends EVALSHA and loads the script again where the server lost it
    // (`SCRIPT FLUSH`, a failover), which a bare EVALSHA would take for a lost lock.
    let renew = redis::Script::new(RENEW_SCRIPT);
    let release = redis::Script::new(RELEASE_SCRIPT);
    let state = Arc::new(Mutex::new(State {
        until: sent + timeout,
        lost: None,
    }));
    let keeper = tokio::spawn(keep(
        b.con.clone(),
        key.clone(),
        token.clone(),
        renew,
        timeout,
        state.clone(),
    ));
    tracing::debug!(%key, holder = %token, "redis: lock taken");
    Ok(Lock {
        key,
        token,
        con: b.con.clone(),
        release,
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

/// Whether the token names a process that surely no longer runs: one of this user, host,
/// boot and pid namespace (the token's `on BOOT/PIDNS/START`, which only such a process can
/// be compared with), whose pid is free or now another process's (another start time), or a
/// zombie. Anything less sure (no /proc, another user, host, boot or namespace, a token without
/// the identity) is taken to be alive: its lock expires by itself.
fn gone(token: &str) -> bool {
    let Some((who, rest)) = token.split_once(" pid ") else {
        return false;
    };
    let Some(pid) = rest.split(' ').next().and_then(|p| p.parse::<u32>().ok()) else {
        return false;
    };
    let me = format!("{}@{}", crate::operator::user(), crate::operator::host());
    if who != me || pid == std::process::id() {
        return false;
    }
    let Some(theirs) = rest.rsplit_once(" on ").map(|(_, id)| id.trim()) else {
        return false;
    };
    let Some(mine) = identity(std::process::id()) else {
        return false;
    };
    // The same boot and pid namespace: the pid means the same process here as there.
    let machine = |id: &str| id.rsplit_once('/').map(|(m, _)| m.to_string());
    if machine(theirs).is_none() || machine(theirs) != machine(&mine) {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // Our own user's processes are never hidden (hidepid hides other users'), so a
        // missing entry is a free pid.
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        Ok(stat) => {
            let now = identity(pid);
            let zombie = stat
                .rsplit_once(')')
                .and_then(|(_, r)| r.trim_start().chars().next())
                .is_some_and(|c| matches!(c, 'Z' | 'X'));
            // Another start time: the pid was reused. Unreadable: taken to be alive.
            zombie || now.is_some_and(|n| n != theirs)
        }
    }
}

/// `BOOT_ID/PIDNS/START` of process `pid`: the boot, its pid namespace, and its start time
/// since boot (field 22 of /proc/PID/stat); None where /proc does not tell them.
fn identity(pid: u32) -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let ns = std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok()?;
    let ns = ns.to_string_lossy();
    let ns = ns.trim_start_matches("pid:[").trim_end_matches(']');
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After `(COMM)`: the state is field 3, the start time field 22.
    let start = stat.rsplit_once(')')?.1.split_whitespace().nth(19)?;
    Some(format!("{}/{ns}/{start}", boot.trim()))
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
    renew: redis::Script,
    timeout: Duration,
    state: Arc<Mutex<State>>,
) {
    let every = timeout / 3;
    loop {
        tokio::time::sleep(every).await;
        let sent = Instant::now();
        let renewed: redis::RedisResult<i64> = renew
            .key(&key)
            .arg(&token)
            .arg(timeout.as_millis() as u64)
            .invoke_async(&mut con)
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
        let released: redis::RedisResult<i64> = self
            .release
            .key(&self.key)
            .arg(&self.token)
            .invoke_async(&mut self.con)
            .await;
        if let Err(e) = released {
            // It expires by itself.
            tracing::debug!(error = %e, key = %self.key, "redis: lock not released");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{gone, identity};

    fn token(pid: u32, id: Option<&str>) -> String {
        let me = format!("{}@{}", crate::operator::user(), crate::operator::host());
        let on = id.map_or(String::new(), |i| format!(" on {i}"));
        format!("{me} pid {pid} since 2026-12-06 12:00:00 UTC #0123456789abcdef{on}")
    }

    /// A holder is gone only when surely so: its pid free, or reused (another start time),
    /// on this user's machine, boot and pid namespace. Anything less sure waits the lock out.
    #[test]
    fn only_a_holder_surely_gone_is_taken_over() {
        let Some(mine) = identity(std::process::id()) else {
            return; // no /proc: nothing is ever taken over (asserted below for the token alone)
        };
        let machine = mine.rsplit_once('/').unwrap().0.to_string();
        let mut alive = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let theirs = identity(alive.id()).expect("a child's identity");
        assert!(!gone(&token(alive.id(), Some(&theirs))), "alive");
        assert!(
            gone(&token(alive.id(), Some(&format!("{machine}/1")))),
            "the pid is another process's now (another start time)"
        );
        assert!(!gone(&token(alive.id(), None)), "no identity: waited out");
        let other_boot = format!("00000000-0000-0000-0000-000000000000/{}", &theirs[37..]);
        assert!(!gone(&token(alive.id(), Some(&other_boot))), "another boot");
        alive.kill().unwrap();
        alive.wait().unwrap();
        assert!(gone(&token(alive.id(), Some(&theirs))), "its pid is free");
        assert!(
            !gone(&token(std::process::id(), Some(&mine))),
            "this process"
        );
        let elsewhere = token(alive.id(), Some(&theirs)).replacen('@', "@another-host.", 1);
        assert!(!gone(&elsewhere), "another host");
    }
}
