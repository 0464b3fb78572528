//! A job system's dead jobs as a queue: detection at open, the reads (keyset pages), inspect,
//! verify's facts.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, PgPool, Row};

use super::System;
use super::session::SystemMoveSession;
use crate::address::{Address, PgAddress, PgTarget};
use crate::backend::postgres::{connect, pg_err};
use crate::backend::{
    Capabilities, Check, Fact, Inspection, MessageStream, MoveOptions, MoveSession, OpenOptions,
    QueueBackend, ScanOptions, Status, Table, TailOptions, Term, VerifyFacts,
};
use crate::config::{IdSource, QueueConfig, Retention};
use crate::error::{Error, Result};
use crate::message::Message;

pub struct JobSystemBackend {
    addr: Address,
    pg: PgAddress,
    pub(super) pool: PgPool,
    pub(super) sys: System,
    pub(super) id: Option<IdSource>,
}

impl JobSystemBackend {
    pub async fn open(addr: &Address, opts: &OpenOptions) -> Result<JobSystemBackend> {
        let Address::Postgres(pg) = addr else {
            unreachable!("postgres address")
        };
        let PgTarget::System(name) = &pg.target else {
            unreachable!("system address")
        };
        if opts.as_target {
            return Err(Error::Unsupported {
                backend: "postgres",
                operation: "writing into a job system",
                reason: format!(
                    "system={name} is a source; redrive retries its dead jobs in place, so leave out --to (or replay into a table, queue or topic)"
                ),
            });
        }
        let pool = connect(&pg.conn).await?;
        let sys = System::detect(&pool, name, pg.schema.as_deref(), pg.queue.as_deref()).await?;
        Ok(JobSystemBackend {
            addr: addr.clone(),
            pg: pg.clone(),
            pool,
            sys,
            id: opts.id.clone(),
        })
    }

    pub(super) fn err(&self, e: sqlx::Error) -> Error {
        pg_err(&format!("{} ({})", self.sys.detected, self.addr), e)
    }

    /// `AND queue = $n` when the address names one (pgmq's queue is the table itself).
    pub(super) fn queue_clause(&self, n: usize) -> String {
        match (&self.pg.queue, self.sys.name) {
            (Some(_), name) if name != "pgmq" => format!(" AND {}::text = ${n}", self.sys.queue),
            _ => format!(" AND ${n}::text IS NULL"),
        }
    }

    pub(super) fn queue_param(&self) -> Option<&str> {
        if self.sys.name == "pgmq" {
            None
        } else {
            self.pg.queue.as_deref()
        }
    }

    async fn page(&self, after: Option<&str>, limit: i64) -> Result<Vec<Message>> {
        let s = &self.sys;
        let sql = format!(
            "SELECT {} FROM {} WHERE {} AND ($1::text IS NULL OR {}){} ORDER BY {} LIMIT $2",
            s.select_list(),
            s.from,
            s.dead,
            s.key.cmp("j.", ">", 1),
            self.queue_clause(3),
            s.key.order("j.", ""),
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(after)
            .bind(limit)
            .bind(self.queue_param())
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| s.to_message(r, self.id.as_ref()).map_err(|e| self.err(e)))
            .collect()
    }
}

#[async_trait]
impl QueueBackend for JobSystemBackend {
    fn address(&self) -> &Address {
        &self.addr
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            tail: true,
            delete: true,
            read_side_effect: None,
            per_message_destination: false,
            ..Capabilities::default()
        }
    }

    async fn backlog(&self, _for_redrive: bool) -> Result<Option<crate::backend::Backlog>> {
        let s = &self.sys;
        let sql = format!(
            "SELECT count(*)::int8 FROM {} WHERE {}{}",
            s.from,
            s.dead,
            self.queue_clause(1)
        );
        let n: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(self.queue_param())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(Some(crate::backend::Backlog {
            messages: n as u64,
            exact: true,
        }))
    }

    async fn inspect(&self, classifier: &crate::classify::Classifier) -> Result<Inspection> {
        let s = &self.sys;
        let mut ins = Inspection {
            queue: self.addr.to_string(),
            backend: "postgres",
            ..Inspection::default()
        };
        ins.facts
            .push(Fact::new("system", s.detected.clone(), s.detected.clone()));
        let sql = format!(
            "SELECT count(*)::int8 AS n, min(({e})::timestamptz) AS oldest, max(({e})::timestamptz) AS newest, min(({d})::timestamptz) AS first_dead, max(({d})::timestamptz) AS last_dead FROM {} WHERE {}{}",
            s.from,
            s.dead,
            self.queue_clause(1),
            e = s.enqueued_at,
            d = s.dead_at
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(self.queue_param())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        let n: i64 = row.try_get("n").unwrap_or(0);
        ins.facts.push(Fact::new("dead_jobs", n, n.to_string()));
        ins.facts.push(Fact::new("messages", n, n.to_string()));
        for (name, col) in [
            ("oldest", "oldest"),
            ("newest", "newest"),
            ("first_dead", "first_dead"),
            ("last_dead", "last_dead"),
        ] {
            let t: Option<DateTime<Utc>> = row.try_get(col).ok().flatten();
            ins.facts.push(Fact::new(
                name,
                t.map(|t| t.to_rfc3339()),
                t.map_or("-".into(), |t| {
                    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
                }),
            ));
        }
        ins.facts.push(Fact::new(
            "default_pruning",
            s.pruning.0.map(|d| d.as_secs()),
            s.pruning.1,
        ));
        let sql = format!(
            "SELECT {k}::text AS kind, {q}::text AS queue, count(*)::int8 AS n FROM {} WHERE {}{} GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 30",
            s.from,
            s.dead,
            self.queue_clause(1),
            k = s.kind,
            q = s.queue
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(self.queue_param())
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        ins.tables.push(Table {
            title: "dead jobs by kind and queue".into(),
            columns: vec!["kind".into(), "queue".into(), "dead jobs".into()],
            rows: rows
                .iter()
                .map(|r| {
                    vec![
                        r.try_get::<Option<String>, _>("kind").ok().flatten().into(),
                        r.try_get::<Option<String>, _>("queue")
                            .ok()
                            .flatten()
                            .into(),
                        r.try_get::<i64, _>("n").unwrap_or(0).into(),
                    ]
                })
                .collect(),
        });
        let mut by: BTreeMap<(String, String), u64> = BTreeMap::new();
        for m in self.page(None, 2000).await? {
            let c = classifier.classify(&m);
            *by.entry((c.kind.to_string(), c.rule)).or_default() += 1;
        }
        ins.tables.push(Table {
            title: "by failure class (oldest 2000)".into(),
            columns: vec!["class".into(), "rule".into(), "dead jobs".into()],
            rows: by
                .into_iter()
                .map(|((k, r), v)| vec![k.into(), r.into(), v.into()])
                .collect(),
        });
        Ok(ins)
    }

    async fn scan(&self, opts: ScanOptions) -> Result<MessageStream<'_>> {
        Ok(crate::backend::postgres::keyset_pages(
            opts,
            move |after, n| async move { self.page(after.as_deref(), n).await },
        ))
    }

    async fn tail(&self, opts: TailOptions) -> Result<MessageStream<'_>> {
        // Most systems notify on insert only, never on "became dead": poll by key.
        // (A job that dies later than a newer one died is still seen: keys are re-read
        // from the last one shown, and each key is shown once.)
        let s = &self.sys;
        let start: Option<String> = if opts.from_start {
            None
        } else {
            let sql = s.last_key_query(&self.queue_clause(1));
            sqlx::query_scalar(AssertSqlSafe(sql))
                .bind(self.queue_param())
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| self.err(e))?
        };
        Ok(Box::pin(async_stream::try_stream! {
            let mut after = start;
            loop {
                let rows = self.page(after.as_deref(), 500).await?;
                let full = rows.len() == 500;
                for m in rows {
                    after = Some(m.native_id.clone());
                    yield m;
                }
                if !full {
                    tokio::time::sleep(opts.poll_interval).await;
                }
            }
        }))
    }

    fn can_move_locally(&self, target: &Address) -> bool {
        *target == self.addr
    }

    fn retries_in_place(&self) -> bool {
        true
    }

    fn describe_move(&self, how: &crate::backend::MoveHow) -> String {
        let PgTarget::System(name) = &self.pg.target else {
            unreachable!("system address")
        };
        match (how.purge, how.archived) {
            (true, true) => crate::backend::archive_then(
                true,
                &format!("delete the dead job as {name}'s own tools do"),
            ),
            (true, false) => format!("delete each selected dead job as {name}'s own tools do"),
            (false, _) if how.in_place => format!(
                "retry each dead job in place, as {name}'s own tools do (nothing is copied)"
            ),
            (false, _) => format!(
                "copy each dead job to the target, then remove it from {name} (in the batch's transaction)"
            ),
        }
    }

    async fn begin_move(&self, opts: MoveOptions) -> Result<Box<dyn MoveSession + '_>> {
        if opts.in_place
            && let Some(why) = &self.sys.retry_loses_id
            && !matches!(self.id, Some(IdSource::Json(_)))
        {
            return Err(Error::Unsupported {
                backend: "postgres",
                operation: "a redrive in place",
                reason: format!(
                    "{why}. Add the column (ALTER TABLE … ADD COLUMN headers jsonb, as pgmq 1.5 does), set `id = \"json:/POINTER\"` to an id in the body, or redrive --to another queue"
                ),
            });
        }
        Ok(Box::new(SystemMoveSession::begin(self, &opts).await?))
    }

    async fn destination(&self, _m: &Message) -> Result<Option<Address>> {
        // The retry happens in place, the way the system's own tools do it.
        Ok(Some(self.addr.clone()))
    }

    async fn verify_facts(&self, cfg: &QueueConfig) -> Result<VerifyFacts> {
        let s = &self.sys;
        let mut f = VerifyFacts::default();
        let (value, source) = match (cfg.dlq_retention, s.pruning.0) {
            (Some(d), _) => (
                Retention::For(d),
                "dlq_retention in dlqctl.toml".to_string(),
            ),
            (None, Some(d)) => (Retention::For(d), format!("{} default", s.name)),
            (None, None) => (
                Retention::Forever,
                format!("{}: dead jobs are kept until deleted", s.name),
            ),
        };
        f.redelivery.push(Term {
            label: "time to dead-letter".into(),
            value: Retention::For(cfg.time_to_dead_letter.unwrap_or_default()),
            source: if cfg.time_to_dead_letter.is_some() {
                "time_to_dead_letter in dlqctl.toml".into()
            } else {
                "not declared (set time_to_dead_letter); counted as 0".into()
            },
        });
        f.redelivery.push(Term {
            label: "dead-job retention".into(),
            value,
            source,
        });
        f.checks.push(Check {
            id: "dead-row-pruning".into(),
            title: "Dead-job pruning the system performs by default".into(),
            status: if s.pruning.0.is_some() || cfg.dlq_retention.is_some() {
                Status::Pass
            } else {
                Status::Warn
            },
            detail: format!("{}; unique keys: {}", s.pruning.1, s.unique),
        });
        Ok(f)
    }

    async fn count_older_than(&self, age: Duration) -> Result<Option<u64>> {
        let s = &self.sys;
        let sql = format!(
            "SELECT count(*)::int8 FROM {} WHERE {} AND COALESCE(({e})::timestamptz, ({d})::timestamptz) < now() - make_interval(secs => $2){}",
            s.from,
            s.dead,
            self.queue_clause(1),
            e = s.enqueued_at,
            d = s.dead_at
        );
        let n: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(self.queue_param())
            .bind(age.as_secs_f64())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(Some(n as u64))
    }
}
