//! What `inspect` shows of a Redis job library and what `verify` knows of its retention:
//! Sidekiq's `dead_timeout_in_seconds` and `dead_max_jobs` (a count: a burst pushes older
//! dead jobs out early), BullMQ's `removeOnFail` (failed jobs are otherwise kept forever).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::TryStreamExt;

use super::address::SidekiqSet;
use super::zset::{self, Cursor};
use super::{Library, RedisBackend, sidekiq};
use crate::backend::{Check, Fact, Inspection, Status, Table, Term, Unaccounted, VerifyFacts};
use crate::config::{QueueConfig, Retention};
use crate::error::Result;

/// What a redrive of BullMQ's failed set would leave of what the plan counts: the ids with no
/// job hash ([`super::ghosts_left`]), found by `EXISTS` on each id, a page at a time. None on
/// Sidekiq, or where there are none.
pub(super) async fn ghosts(b: &RedisBackend) -> Result<Option<Unaccounted>> {
    let Library::BullMq(q) = &b.lib else {
        return Ok(None);
    };
    let mut con = b.con.clone();
    let mut cursor = Cursor::default();
    let (mut n, mut examples) = (0u64, Vec::new());
    loop {
        let page = zset::next_page(&mut con, &b.key, &mut cursor, 1000, None)
            .await
            .map_err(|e| b.err(e))?;
        if page.is_empty() {
            break;
        }
        let ids: Vec<String> = page
            .iter()
            .map(|e| String::from_utf8_lossy(&e.member).into_owned())
            .collect();
        let mut pipe = redis::pipe();
        for id in &ids {
            pipe.cmd("EXISTS").arg(q.key(id));
        }
        let there: Vec<bool> = pipe.query_async(&mut con).await.map_err(|e| b.err(e))?;
        for (id, there) in ids.into_iter().zip(there) {
            if !there {
                n += 1;
                if examples.len() < 5 {
                    examples.push(id);
                }
            }
        }
    }
    Ok(super::ghosts_left(b, n, &examples))
}

fn time_fact(name: &str, t: Option<DateTime<Utc>>) -> Fact {
    Fact::new(
        name,
        t.map(|t| t.to_rfc3339()),
        t.map_or("-".into(), |t| {
            t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
        }),
    )
}

/// One pass over the jobs (the first `sample` classified): counts by class of job and by
/// failure class, oldest and newest enqueue and death.
struct Census {
    n: u64,
    oldest: Option<DateTime<Utc>>,
    newest: Option<DateTime<Utc>>,
    first_dead: Option<DateTime<Utc>>,
    last_dead: Option<DateTime<Utc>>,
    /// Deaths in the last 24 hours.
    last_day: u64,
    by_kind: BTreeMap<(String, String), u64>,
    by_class: BTreeMap<(String, String), u64>,
    /// BullMQ: each `removeOnFail` value seen, and how many jobs set it.
    remove_on_fail: BTreeMap<String, u64>,
}

async fn census(
    b: &RedisBackend,
    classifier: Option<&crate::classify::Classifier>,
) -> Result<Census> {
    let now = Utc::now();
    let mut c = Census {
        n: 0,
        oldest: None,
        newest: None,
        first_dead: None,
        last_dead: None,
        last_day: 0,
        by_kind: BTreeMap::new(),
        by_class: BTreeMap::new(),
        remove_on_fail: BTreeMap::new(),
    };
    let mut all = b.all(1000);
    while let Some(m) = all.try_next().await? {
        c.n += 1;
        let min = |a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let max = |a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>| match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        c.oldest = min(c.oldest, m.enqueued_at);
        c.newest = max(c.newest, m.enqueued_at);
        c.first_dead = min(c.first_dead, m.dead_lettered_at);
        c.last_dead = max(c.last_dead, m.dead_lettered_at);
        if m.dead_lettered_at
            .is_some_and(|d| now - d < chrono::Duration::days(1))
        {
            c.last_day += 1;
        }
        let attr = |n: &str| m.attribute(n).map(|v| v.display()).unwrap_or_default();
        let kind = match &b.lib {
            Library::Sidekiq(_) => m
                .attribute("wrapped")
                .map(|v| v.display())
                .unwrap_or_else(|| attr("class")),
            Library::BullMq(_) => attr("name"),
        };
        *c.by_kind
            .entry((kind, m.source.clone().unwrap_or_default()))
            .or_default() += 1;
        if let Some(cl) = classifier.filter(|_| c.n <= 2000) {
            let k = cl.classify(&m);
            *c.by_class.entry((k.kind.to_string(), k.rule)).or_default() += 1;
        }
        if let Some(r) = m
            .attribute("opts")
            .and_then(|o| o.as_bytes())
            .and_then(super::bullmq::remove_on_fail)
        {
            *c.remove_on_fail.entry(r.to_string()).or_default() += 1;
        }
    }
    Ok(c)
}

pub(super) async fn inspect(
    b: &RedisBackend,
    classifier: &crate::classify::Classifier,
) -> Result<Inspection> {
    let mut ins = Inspection {
        queue: b.ra.to_string(),
        backend: "redis",
        ..Inspection::default()
    };
    ins.facts
        .push(Fact::new("system", b.detected.clone(), b.detected.clone()));
    let c = census(b, Some(classifier)).await?;
    let n = Names::of(b);
    ins.facts.push(Fact::new(n.jobs, c.n, c.n.to_string()));
    ins.facts.push(Fact::new("messages", c.n, c.n.to_string()));
    ins.facts.push(time_fact("oldest", c.oldest));
    ins.facts.push(time_fact("newest", c.newest));
    ins.facts.push(time_fact(n.first, c.first_dead));
    ins.facts.push(time_fact(n.last, c.last_dead));
    let mut con = b.con.clone();
    match &b.lib {
        Library::Sidekiq(s) => sidekiq_facts(b, s, c.n, &mut ins).await?,
        Library::BullMq(q) => {
            let mut pipe = redis::pipe();
            pipe.cmd("LLEN").arg(q.key("wait"));
            pipe.cmd("LLEN").arg(q.key("active"));
            pipe.cmd("ZCARD").arg(q.key("delayed"));
            pipe.cmd("ZCARD").arg(q.key("completed"));
            pipe.cmd("HEXISTS").arg(q.key("meta")).arg("paused");
            pipe.cmd("ZCARD").arg(q.set_key());
            let (wait, active, delayed, completed, paused, ids): (u64, u64, u64, u64, bool, u64) =
                pipe.query_async(&mut con).await.map_err(|e| b.err(e))?;
            if ids > c.n {
                ins.notes.push(format!(
                    "{} of the {ids} ids in {} have no job hash (a removal left them behind): peek and export do not show them, a redrive leaves them (nothing to retry, exit 1), and `{}` removes them",
                    ids - c.n,
                    q.set_key(),
                    crate::output::command_line(&[
                        "dlqctl",
                        "purge",
                        &b.ra.to_string(),
                        "--where",
                        ".meta.no_job_hash != null",
                        "--no-archive",
                    ])
                ));
            }
            for (name, n) in [
                ("waiting", wait),
                ("active", active),
                ("delayed", delayed),
                ("completed", completed),
            ] {
                ins.facts.push(Fact::new(name, n, n.to_string()));
            }
            ins.facts
                .push(Fact::new("paused", paused, paused.to_string()));
            ins.facts.push(Fact::new(
                "remove_on_fail",
                serde_json::to_value(&c.remove_on_fail).unwrap_or_default(),
                remove_on_fail_text(&c.remove_on_fail, c.n),
            ));
        }
    }
    ins.tables.push(Table {
        title: format!("{} by job class and queue", n.column),
        columns: vec!["job".into(), "queue".into(), n.column.into()],
        rows: sorted_rows(c.by_kind),
    });
    ins.tables.push(Table {
        title: format!("by failure class ({} 2000)", n.first_2000),
        columns: vec!["class".into(), "rule".into(), n.column.into()],
        rows: c
            .by_class
            .into_iter()
            .map(|((k, r), v)| vec![k.into(), r.into(), v.into()])
            .collect(),
    });
    Ok(ins)
}

/// What inspect calls the jobs of the set read and the first and last score. Sidekiq's retry
/// set is scored by each job's next retry (a time to come), not by a death: its facts say so.
struct Names {
    jobs: &'static str,
    first: &'static str,
    last: &'static str,
    /// The tables' count column.
    column: &'static str,
    /// Which 2000 jobs the failure classes are counted over (the set's order).
    first_2000: &'static str,
}

impl Names {
    fn of(b: &RedisBackend) -> Names {
        if retry_set(b) {
            Names {
                jobs: "retry_jobs",
                first: "next_retry_at",
                last: "last_retry_at",
                column: "jobs to retry",
                first_2000: "the 2000 due first",
            }
        } else {
            Names {
                jobs: "dead_jobs",
                first: "first_dead",
                last: "last_dead",
                column: "dead jobs",
                first_2000: "oldest",
            }
        }
    }
}

/// Whether `b` reads Sidekiq's retry set (`&set=retry`).
fn retry_set(b: &RedisBackend) -> bool {
    matches!(&b.lib, Library::Sidekiq(s) if s.set == SidekiqSet::Retry)
}

/// inspect's Sidekiq facts: the other set's size, the default retention, and a note where
/// nothing at this database and prefix is Sidekiq's (`n`: the jobs in the set read).
async fn sidekiq_facts(
    b: &RedisBackend,
    s: &sidekiq::Sidekiq,
    n_read: u64,
    ins: &mut Inspection,
) -> Result<()> {
    let mut con = b.con.clone();
    let other = match s.set {
        SidekiqSet::Dead => format!("{}retry", s.prefix),
        SidekiqSet::Retry => format!("{}dead", s.prefix),
    };
    let n: u64 = redis::cmd("ZCARD")
        .arg(&other)
        .query_async(&mut con)
        .await
        .map_err(|e| b.err(e))?;
    ins.facts.push(Fact::new(
        if s.set == SidekiqSet::Dead {
            "retry_set"
        } else {
            "dead_set"
        },
        n,
        format!("{n} (`{other}`)"),
    ));
    if n_read == 0 && n == 0 {
        // An empty dead set looks the same at the wrong /DB or without namespace=:
        // say so where nothing here is Sidekiq's.
        let mut pipe = redis::pipe();
        for k in ["queues", "processes", "stat:processed"] {
            pipe.cmd("EXISTS").arg(format!("{}{k}", s.prefix));
        }
        let seen: Vec<u64> = pipe.query_async(&mut con).await.map_err(|e| b.err(e))?;
        if seen.iter().all(|&e| e == 0) {
            ins.notes.push(format!(
                "no Sidekiq keys here ({p}queues, {p}processes, {p}stat:processed): if dead jobs are expected, check the URL's /DB number and namespace= (redis-namespace's prefix)",
                p = s.prefix
            ));
        }
    }
    ins.facts.push(Fact::new(
        "dead_retention_default",
        serde_json::json!({
            "dead_timeout_in_seconds": sidekiq::DEFAULT_DEAD_TIMEOUT_SECONDS,
            "dead_max_jobs": sidekiq::DEFAULT_DEAD_MAX_JOBS,
        }),
        "180 days and 10,000 jobs, whichever comes first (Sidekiq's defaults; verify reads [queues.NAME.sidekiq])",
    ));
    Ok(())
}

fn sorted_rows(by: BTreeMap<(String, String), u64>) -> Vec<Vec<serde_json::Value>> {
    let mut rows: Vec<_> = by.into_iter().collect();
    rows.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    rows.into_iter()
        .take(30)
        .map(|((k, q), n)| vec![k.into(), q.into(), n.into()])
        .collect()
}

fn remove_on_fail_text(seen: &BTreeMap<String, u64>, n: u64) -> String {
    if seen.is_empty() {
        return if n == 1 {
            "not set on the one failed job: it is kept until removed".into()
        } else {
            format!("not set on any of the {n} failed jobs: they are kept until removed")
        };
    }
    let list: Vec<String> = seen
        .iter()
        .map(|(v, k)| format!("{v} ({})", crate::human::count(*k, "job", "jobs")))
        .collect();
    format!(
        "{} of {}: {}",
        seen.values().sum::<u64>(),
        crate::human::count(n, "failed job", "failed jobs"),
        list.join(", ")
    )
}

pub(super) async fn verify_facts(b: &RedisBackend, cfg: &QueueConfig) -> Result<VerifyFacts> {
    let c = census(b, None).await?;
    let mut f = VerifyFacts::default();
    f.redelivery.push(Term {
        label: "time to dead-letter".into(),
        value: Retention::For(cfg.time_to_dead_letter.unwrap_or_default()),
        source: if cfg.time_to_dead_letter.is_some() {
            "time_to_dead_letter in dlqctl.toml".into()
        } else {
            "not declared (set time_to_dead_letter); counted as 0".into()
        },
    });
    match &b.lib {
        Library::Sidekiq(_) if retry_set(b) => sidekiq_retry_set(cfg, &c, &mut f),
        Library::Sidekiq(_) => sidekiq_retention(cfg, &c, &mut f),
        Library::BullMq(_) => bullmq_retention(cfg, &c, &mut f),
    }
    f.shorten = Some(match &b.lib {
        Library::Sidekiq(_) => "lower Sidekiq's dead_timeout_in_seconds (Sidekiq.configure_server { |c| c[:dead_timeout_in_seconds] = … }); dead_max_jobs caps the dead set by count, which pushes jobs out early in a burst but bounds no age".into(),
        Library::BullMq(_) => "removeOnFail with an age on the jobs or the Worker, e.g. removeOnFail: { age: SECONDS }, then declare it as dlq_retention (a Worker's option is not stored in Redis)".into(),
    });
    Ok(f)
}

/// Sidekiq trims its dead set when a job dies: older than `dead_timeout_in_seconds`, and
/// beyond the newest `dead_max_jobs`. The timeout is a retention; the count is not (a burst
/// of deaths pushes older jobs out early), so it is a WARN with the arithmetic.
fn sidekiq_retention(cfg: &QueueConfig, c: &Census, f: &mut VerifyFacts) {
    let sk = cfg.sidekiq.clone().unwrap_or_default();
    let timeout = sk
        .dead_timeout_in_seconds
        .unwrap_or(sidekiq::DEFAULT_DEAD_TIMEOUT_SECONDS);
    let max = sk.dead_max_jobs.unwrap_or(sidekiq::DEFAULT_DEAD_MAX_JOBS);
    let from = |set: bool| {
        if set {
            "[queues.NAME.sidekiq] in dlqctl.toml"
        } else {
            "Sidekiq's default"
        }
    };
    let (value, source) = match cfg.dlq_retention {
        Some(d) => (d, "dlq_retention in dlqctl.toml".to_string()),
        None => (
            Duration::from_secs(timeout),
            format!(
                "dead_timeout_in_seconds = {timeout} ({})",
                from(sk.dead_timeout_in_seconds.is_some())
            ),
        ),
    };
    f.redelivery.push(Term {
        label: "dead-job retention".into(),
        value: Retention::For(value),
        source,
    });
    let room = max.saturating_sub(c.n);
    let rate = c.last_day;
    let mut detail = format!(
        "dead_max_jobs = {max} ({}): the dead set holds {} now, so {room} more {} the oldest out before dead_timeout_in_seconds ({})",
        from(sk.dead_max_jobs.is_some()),
        c.n,
        if room == 1 {
            "death pushes"
        } else {
            "deaths push"
        },
        crate::human::fmt_duration(Duration::from_secs(timeout))
    );
    if rate > 0 {
        let full_in = Duration::from_secs_f64(room as f64 / rate as f64 * 86400.0);
        let kept = Duration::from_secs_f64(max as f64 / rate as f64 * 86400.0);
        detail.push_str(&format!(
            "; at the last 24 hours' {} the set is full in {} and then keeps a dead job {} (< {} only if that is shorter)",
            crate::human::count(rate, "death/day", "deaths/day"),
            crate::human::fmt_duration(full_in),
            crate::human::fmt_duration(kept),
            crate::human::fmt_duration(Duration::from_secs(timeout)),
        ));
    } else {
        detail.push_str("; no deaths in the last 24 hours");
    }
    f.checks.push(Check::new(
        "sidekiq-dead-max-jobs",
        "Sidekiq's dead set is capped by a count (dead_max_jobs)",
        Status::Warn,
        detail,
    ));
}

/// Sidekiq's retry set: each job is retried by Sidekiq at its score (the next retry, a time
/// to come) and, once its retries run out, moves to the dead set, whose retention then applies
/// (the redelivery's term). Its facts are the retries to come, not deaths; the dead set's cap
/// is verify's of the dead set (the address without `&set=retry`).
fn sidekiq_retry_set(cfg: &QueueConfig, c: &Census, f: &mut VerifyFacts) {
    let sk = cfg.sidekiq.clone().unwrap_or_default();
    let timeout = sk
        .dead_timeout_in_seconds
        .unwrap_or(sidekiq::DEFAULT_DEAD_TIMEOUT_SECONDS);
    let (value, source) = match cfg.dlq_retention {
        Some(d) => (d, "dlq_retention in dlqctl.toml".to_string()),
        None => (
            Duration::from_secs(timeout),
            format!(
                "a job whose retries run out moves to the dead set: dead_timeout_in_seconds = {timeout}"
            ),
        ),
    };
    f.redelivery.push(Term {
        label: "dead-job retention (after the last retry)".into(),
        value: Retention::For(value),
        source,
    });
    let at = |t: Option<DateTime<Utc>>| {
        t.map_or("-".into(), |t| {
            t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
        })
    };
    f.checks.push(Check::new(
        "sidekiq-retry-set",
        "Sidekiq's retry set: jobs Sidekiq retries at their time",
        Status::Pass,
        format!(
            "the retry set holds {}, next retry at {}, last retry at {}; Sidekiq retries each at its time, and one whose retries run out moves to the dead set (verify the dead set, the address without &set=retry, for its cap: dead_max_jobs)",
            crate::human::count(c.n, "job", "jobs"),
            at(c.first_dead),
            at(c.last_dead)
        ),
    ));
}

/// BullMQ keeps failed jobs forever unless `removeOnFail` (a job option, or the Worker's,
/// which Redis does not show) removes them.
fn bullmq_retention(cfg: &QueueConfig, c: &Census, f: &mut VerifyFacts) {
    let (value, source) = match cfg.dlq_retention {
        Some(d) => (
            Retention::For(d),
            "dlq_retention in dlqctl.toml".to_string(),
        ),
        None => (
            Retention::Forever,
            "bullmq: failed jobs are kept until removed (removeOnFail)".to_string(),
        ),
    };
    f.redelivery.push(Term {
        label: "dead-job retention".into(),
        value,
        source,
    });
    let status = if c.remove_on_fail.is_empty() && cfg.dlq_retention.is_none() {
        Status::Warn
    } else {
        Status::Pass
    };
    f.checks.push(Check::new(
        "bullmq-remove-on-fail",
        "BullMQ's removeOnFail on the failed jobs",
        status,
        format!(
            "{}; a Worker's own removeOnFail is not stored in Redis: declare dlq_retention if it sets one",
            remove_on_fail_text(&c.remove_on_fail, c.n)
        ),
    ));
}
