//! verify: the CI check of `docs/verify.md`. Each check is PASS, WARN or FAIL with the numbers
//! behind it; the exit code is 1 when any check fails.

use std::time::Duration;

use serde::Serialize;

use crate::backend::{Check, Oldest, QueueBackend, Status, Term, VerifyFacts};
use crate::config::Retention;
use crate::dedupe::{KnownRetention, Uniqueness};
use crate::error::{Result, exit};
use crate::output::OutputFormat;
use crate::settings::{Ctx, QueueRef};

#[derive(Serialize)]
pub struct VerifyReport {
    pub passed: bool,
    pub queues: Vec<QueueChecks>,
}

#[derive(Serialize)]
pub struct QueueChecks {
    pub queue: String,
    pub address: String,
    pub checks: Vec<Check>,
    /// The redelivery arithmetic of check 1.
    pub redelivery: Vec<Term>,
}

pub fn fmt_retention(r: Retention) -> String {
    match r {
        Retention::Forever => "forever".into(),
        Retention::For(d) => crate::human::fmt_duration(d).to_string(),
    }
}

fn check(id: &str, title: &str, status: Status, detail: impl Into<String>) -> Check {
    Check::new(id, title, status, detail)
}

fn add(a: Retention, b: Retention) -> Retention {
    match (a, b) {
        (Retention::For(x), Retention::For(y)) => Retention::For(x + y),
        _ => Retention::Forever,
    }
}

pub async fn run(ctx: &Ctx, queues: Vec<QueueRef>) -> Result<i32> {
    let mut out = Vec::new();
    for q in queues {
        out.push(verify_one(ctx, &q).await);
    }
    let passed = out
        .iter()
        .all(|q| q.checks.iter().all(|c| c.status != Status::Fail));
    let report = VerifyReport {
        passed,
        queues: out,
    };
    render(ctx, &report)?;
    Ok(if passed { exit::OK } else { exit::PARTIAL })
}

/// One queue's checks: reach the queue, add up how late a copy can arrive, then hold the dedupe
/// table against that.
async fn verify_one(ctx: &Ctx, q: &QueueRef) -> QueueChecks {
    let mut result = QueueChecks {
        queue: q.name.clone().unwrap_or_else(|| q.address.to_string()),
        address: q.address.to_string(),
        checks: Vec::new(),
        redelivery: Vec::new(),
    };
    let (b, facts) = match reach(ctx, q).await {
        Ok(reached) => reached,
        Err(unreachable) => {
            result.checks.push(unreachable);
            return result;
        }
    };
    result.redelivery = redelivery_terms(&facts.redelivery, q);
    let bound = Bound::of(&result.redelivery);
    result.checks = dedupe_checks(b.as_ref(), q, &bound, facts).await;
    result
}

/// Opens the queue and reads its facts; a failure of either is the failed "reachable" check.
async fn reach(
    ctx: &Ctx,
    q: &QueueRef,
) -> std::result::Result<(Box<dyn QueueBackend>, VerifyFacts), Check> {
    let b = ctx
        .opener
        .open(&q.address, &q.source_options())
        .await
        .map_err(|e| {
            check(
                "reachable",
                "Dead-letter queue is reachable",
                Status::Fail,
                e.read_only().to_string(),
            )
        })?;
    let facts = b.verify_facts(&q.cfg).await.map_err(|e| {
        check(
            "reachable",
            "Dead-letter queue is readable",
            Status::Fail,
            e.read_only().to_string(),
        )
    })?;
    Ok((b, facts))
}

/// The backend's redelivery terms followed by the declared replay window (0 when undeclared).
fn redelivery_terms(backend: &[Term], q: &QueueRef) -> Vec<Term> {
    let mut terms = backend.to_vec();
    terms.push(match q.cfg.replay_window {
        Some(d) => Term {
            label: "replay window".into(),
            value: Retention::For(d),
            source: "replay_window in dlqctl.toml".into(),
        },
        None => Term {
            label: "replay window".into(),
            value: Retention::For(Duration::ZERO),
            source: "not declared (set replay_window); counted as 0".into(),
        },
    });
    terms
}

/// The longest time after first delivery at which a copy can still arrive.
struct Bound {
    /// The sum of the redelivery terms.
    total: Retention,
    /// The same sum written out, term by term, for the check details.
    arithmetic: String,
}

impl Bound {
    fn of(terms: &[Term]) -> Bound {
        Bound {
            total: terms
                .iter()
                .fold(Retention::For(Duration::ZERO), |acc, t| add(acc, t.value)),
            arithmetic: terms
                .iter()
                .map(|t| format!("{} {}", t.label, fmt_retention(t.value)))
                .collect::<Vec<_>>()
                .join(" + "),
        }
    }
}

/// Checks 2, 3 and 1 against the dedupe table, then the backend's own checks, then check 7.
/// Without a dedupe table (none declared, or it cannot be opened) only its failure and the
/// backend's checks are left.
async fn dedupe_checks(
    b: &dyn QueueBackend,
    q: &QueueRef,
    bound: &Bound,
    facts: VerifyFacts,
) -> Vec<Check> {
    let backend = facts.checks;
    let mut checks = Vec::new();
    let Some(dcfg) = &q.cfg.dedupe else {
        checks.push(check(
            "dedupe-outlives-redelivery",
            "Dedupe retention outlives redelivery",
            Status::Fail,
            format!(
                "no [queues.{}.dedupe] table declared, so nothing shows that a redriven copy is a no-op; a copy can arrive up to {} = {} after first delivery",
                q.name.as_deref().unwrap_or("NAME"),
                bound.arithmetic,
                fmt_retention(bound.total)
            ),
        ));
        checks.extend(backend);
        return checks;
    };
    let d = match crate::settings::open_dedupe(dcfg).await {
        Ok(d) => d,
        Err(e) => {
            checks.push(check(
                "dedupe-unique",
                "Dedupe table exists with a unique id",
                Status::Fail,
                e.read_only().to_string(),
            ));
            checks.extend(backend);
            return checks;
        }
    };
    checks.push(uniqueness_check(d.as_ref()).await);
    let (retention_check, known) = retention_known(d.as_ref()).await;
    checks.push(retention_check);
    checks.push(outlives_check(known, bound, facts.shorten.as_deref()));
    checks.extend(backend);
    if let Some(Retention::For(r)) = known.retention
        && !known.lower_bound
    {
        checks.push(old_dead_letters_check(b, r, facts.oldest).await);
    }
    checks
}

/// Check 2: a primary key or unique index on the id column makes a repeated insert a no-op.
async fn uniqueness_check(d: &dyn crate::dedupe::Table) -> Check {
    match d.uniqueness().await {
        Ok(Uniqueness::Unique { index, primary }) => check(
            "dedupe-unique",
            "Dedupe table exists with a unique id",
            Status::Pass,
            format!(
                "{}.{} is protected by {} {index}",
                d.display(),
                d.id_column(),
                if primary {
                    "primary key"
                } else {
                    "unique index"
                }
            ),
        ),
        Ok(Uniqueness::Partial { index, why }) => check(
            "dedupe-unique",
            "Dedupe table exists with a unique id",
            Status::Warn,
            format!(
                "{index} on {}.{} is {why}: two deliveries of one id may both insert",
                d.display(),
                d.id_column()
            ),
        ),
        Ok(Uniqueness::None) => check(
            "dedupe-unique",
            "Dedupe table exists with a unique id",
            Status::Fail,
            format!(
                "no primary key or unique index on {}.{}: two deliveries of one id both insert, so repeats are not no-ops (ALTER TABLE … ADD PRIMARY KEY ({}))",
                d.display(),
                d.id_column(),
                d.id_column()
            ),
        ),
        Err(e) => check(
            "dedupe-unique",
            "Dedupe table exists with a unique id",
            Status::Fail,
            e.read_only().to_string(),
        ),
    }
}

/// What check 3 learnt of the dedupe table's retention, for checks 1 and 7.
#[derive(Clone, Copy)]
struct DedupeRetention {
    /// None when unknown.
    retention: Option<Retention>,
    /// The retention is only the oldest row's age, so the table may keep ids longer.
    lower_bound: bool,
}

/// Check 3: how long the dedupe table keeps ids, and how dlqctl knows.
async fn retention_known(d: &dyn crate::dedupe::Table) -> (Check, DedupeRetention) {
    let known = |retention, lower_bound| DedupeRetention {
        retention,
        lower_bound,
    };
    match d.retention().await {
        Ok(KnownRetention::Declared(r)) => (
            check(
                "dedupe-retention-known",
                "Dedupe retention is known",
                Status::Pass,
                format!("declared: {}", fmt_retention(r)),
            ),
            known(Some(r), false),
        ),
        Ok(KnownRetention::Discovered { retention, how }) => (
            check(
                "dedupe-retention-known",
                "Dedupe retention is known",
                Status::Pass,
                format!("discovered: {how}"),
            ),
            known(Some(retention), false),
        ),
        Ok(KnownRetention::AtLeast { age, oldest }) => (
            check(
                "dedupe-retention-known",
                "Dedupe retention is known",
                Status::Warn,
                format!(
                    "only a lower bound: the oldest row is {} old ({}); declare retention in [queues.NAME.dedupe]",
                    fmt_retention(Retention::For(Duration::from_secs(age.as_secs()))),
                    oldest.format("%Y-%m-%d %H:%M UTC")
                ),
            ),
            known(
                Some(Retention::For(Duration::from_secs(age.as_secs()))),
                true,
            ),
        ),
        Ok(KnownRetention::Unknown(why)) => (
            check(
                "dedupe-retention-known",
                "Dedupe retention is known",
                Status::Fail,
                format!("{why}; declare retention in [queues.NAME.dedupe]"),
            ),
            known(None, false),
        ),
        Err(e) => (
            check(
                "dedupe-retention-known",
                "Dedupe retention is known",
                Status::Fail,
                e.read_only().to_string(),
            ),
            known(None, false),
        ),
    }
}

/// Check 1, the arithmetic: ids must be kept longer than a copy can take to arrive. `shorten`:
/// how this backend keeps dead letters for less (None: PostgreSQL's ways).
fn outlives_check(known: DedupeRetention, bound: &Bound, shorten: Option<&str>) -> Check {
    let Some(r) = known.retention else {
        return check(
            "dedupe-outlives-redelivery",
            "Dedupe retention outlives redelivery",
            Status::Fail,
            format!(
                "dedupe retention unknown; a copy can arrive up to {} = {}",
                bound.arithmetic,
                fmt_retention(bound.total)
            ),
        );
    };
    let ok = r > bound.total || r == Retention::Forever;
    let rel = if ok { ">" } else { "<=" };
    let detail = format!(
        "dedupe {}{} {rel} {} = {}",
        if known.lower_bound { "at least " } else { "" },
        fmt_retention(r),
        bound.arithmetic,
        fmt_retention(bound.total)
    );
    let status = match (ok, known.lower_bound) {
        (true, _) => Status::Pass,
        (false, true) => Status::Warn,
        (false, false) => Status::Fail,
    };
    let hint = if ok {
        String::new()
    } else if bound.total == Retention::Forever {
        format!(
            ": dead letters are kept forever, so keep ids forever or prune the dead letters ({})",
            shorten.unwrap_or("dlq_retention / a pg_cron job")
        )
    } else {
        match shorten {
            Some(how) => format!(
                ": keep ids longer than {}, or keep dead letters for less ({how})",
                fmt_retention(bound.total)
            ),
            None => format!(": keep ids longer than {}", fmt_retention(bound.total)),
        }
    };
    check(
        "dedupe-outlives-redelivery",
        "Dedupe retention outlives redelivery",
        status,
        format!("{detail}{hint}"),
    )
}

/// Check 7: dead letters older than the dedupe retention may have had their ids forgotten.
async fn old_dead_letters_check(b: &dyn QueueBackend, r: Duration, oldest: Oldest) -> Check {
    match b.count_older_than(r).await {
        Ok(None) if matches!(oldest, Oldest::Empty | Oldest::At(_)) => oldest_check(r, oldest),
        Ok(None) if let Oldest::Unreported(why) = oldest => check(
            "old-dead-letters",
            "No dead letters older than the dedupe retention",
            Status::Warn,
            format!("the oldest dead letter's age is not known: {why}"),
        ),
        Ok(Some(0)) => check(
            "old-dead-letters",
            "No dead letters older than the dedupe retention",
            Status::Pass,
            format!("none older than {}", fmt_retention(Retention::For(r))),
        ),
        Ok(Some(n)) => check(
            "old-dead-letters",
            "No dead letters older than the dedupe retention",
            Status::Warn,
            format!(
                "{n} dead letters are older than the dedupe retention ({}): their ids may be forgotten, so redriving them would run their side effects again (find them with `peek --older-than {}`)",
                fmt_retention(Retention::For(r)),
                crate::human::fmt_duration(r)
            ),
        ),
        Ok(None) => check(
            "old-dead-letters",
            "No dead letters older than the dedupe retention",
            Status::Warn,
            "message ages are not available cheaply on this backend",
        ),
        Err(e) => check(
            "old-dead-letters",
            "No dead letters older than the dedupe retention",
            Status::Warn,
            e.read_only().to_string(),
        ),
    }
}

/// Check 7 from the oldest dead letter alone (the backend cannot count by age): whether any is
/// older, not how many.
fn oldest_check(r: Duration, oldest: Oldest) -> Check {
    let title = "No dead letters older than the dedupe retention";
    let limit = fmt_retention(Retention::For(r));
    let Oldest::At(t) = oldest else {
        return check("old-dead-letters", title, Status::Pass, "no dead letters");
    };
    let age = (chrono::Utc::now() - t).to_std().unwrap_or(Duration::ZERO);
    let shown = crate::human::human_age(chrono::Duration::from_std(age).unwrap_or_default());
    let when = t.format("%Y-%m-%d %H:%M UTC");
    if age <= r {
        check(
            "old-dead-letters",
            title,
            Status::Pass,
            format!("none older than {limit}: the oldest is {shown} old (first enqueued {when})"),
        )
    } else {
        check(
            "old-dead-letters",
            title,
            Status::Warn,
            format!(
                "the oldest dead letter is {shown} old (first enqueued {when}), older than the dedupe retention ({limit}): its id may be forgotten, so redriving it would run its side effects again; how many others are that old cannot be counted cheaply here (find them with `peek --older-than {}`)",
                crate::human::fmt_duration(r)
            ),
        )
    }
}

fn render(ctx: &Ctx, r: &VerifyReport) -> Result<()> {
    let p = &ctx.printer;
    match p.format {
        OutputFormat::Junit => p.line(&junit(
            "dlqctl verify",
            r.queues
                .iter()
                .map(|q| (q.queue.as_str(), q.checks.as_slice())),
        )),
        OutputFormat::Json | OutputFormat::Jsonl | OutputFormat::Prometheus => p.json(r),
        OutputFormat::Table => checks_table(
            p,
            r.queues
                .iter()
                .map(|q| (q.queue.as_str(), q.address.as_str(), q.checks.as_slice())),
            r.passed,
        ),
    }
}

/// Checks for people: a table per queue, then the verdict (verify and check).
pub fn checks_table<'a>(
    p: &crate::output::Printer,
    queues: impl Iterator<Item = (&'a str, &'a str, &'a [Check])>,
    passed: bool,
) -> Result<()> {
    crate::ops::tables::checks::render(
        p,
        queues.map(
            |(queue, address, checks)| crate::ops::tables::checks::QueueChecks {
                queue,
                address,
                checks,
                new_fingerprints: None,
            },
        ),
        passed,
    )
}

/// Checks as JUnit XML: a suite per queue, a test case per check (verify and check).
pub fn junit<'a>(name: &str, queues: impl Iterator<Item = (&'a str, &'a [Check])>) -> String {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let mut report = Report::new(name);
    for (queue, checks) in queues {
        let mut suite = TestSuite::new(queue);
        for c in checks {
            let status = match c.status {
                Status::Fail => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(c.detail.clone());
                    s
                }
                _ => TestCaseStatus::success(),
            };
            let mut tc = TestCase::new(format!("{}: {}", c.id, c.title), status);
            tc.set_classname(queue);
            tc.set_system_out(format!("{}: {}", c.status, c.detail));
            suite.add_test_case(tc);
        }
        report.add_test_suite(suite);
    }
    report.to_string().unwrap_or_default()
}
