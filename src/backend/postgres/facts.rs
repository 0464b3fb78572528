//! What `inspect` and `verify` learn of a dead-letter table: counts and ages, size, the
//! breakdowns by queue and failure class, and the prune job that bounds its retention.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, Row};

use super::{PgBackend, cron, layout};
use crate::backend::{Check, Fact, Inspection, Status, Table, Term, VerifyFacts};
use crate::config::{QueueConfig, Retention};
use crate::error::Result;
use crate::human::{human_age, human_bytes};
use crate::message::{ErrorInfo, Message};

fn time_fact(name: &str, t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Fact {
    match t {
        Some(t) => Fact::new(
            name,
            t.to_rfc3339(),
            format!(
                "{} ago ({})",
                human_age(now - t),
                t.format("%Y-%m-%d %H:%M:%S UTC")
            ),
        ),
        None => Fact::new(name, serde_json::Value::Null, "-"),
    }
}

/// The count and the four times of the dead-letter rows, in one query.
struct Summary {
    messages: i64,
    oldest: Option<DateTime<Utc>>,
    newest: Option<DateTime<Utc>>,
    first_dead: Option<DateTime<Utc>>,
    last_dead: Option<DateTime<Utc>>,
}

impl PgBackend {
    pub(super) async fn inspect_table(
        &self,
        classifier: &crate::classify::Classifier,
    ) -> Result<Inspection> {
        let l = &self.layout;
        let now = Utc::now();
        let mut ins = Inspection {
            queue: self.addr.to_string(),
            backend: "postgres",
            ..Inspection::default()
        };
        let s = self.summary().await?;
        let (bytes, _) = layout::table_size(&self.pool, l).await?;
        ins.facts
            .push(Fact::new("table", l.display.clone(), l.display.clone()));
        if let Some(q) = &self.pg.queue {
            ins.facts.push(Fact::new("queue", q.clone(), q.clone()));
        }
        ins.facts
            .push(Fact::new("messages", s.messages, s.messages.to_string()));
        ins.facts.push(time_fact("oldest", s.oldest, now));
        ins.facts.push(time_fact("newest", s.newest, now));
        ins.facts
            .push(time_fact("first_dead_lettered", s.first_dead, now));
        ins.facts
            .push(time_fact("last_dead_lettered", s.last_dead, now));
        ins.facts
            .push(Fact::new("size_bytes", bytes, human_bytes(bytes)));
        ins.facts.push(self.retention_fact().await?);
        if let Some(source) = &self.pg.source_table {
            ins.facts
                .push(Fact::new("source", source.clone(), source.clone()));
        }
        if let Some(t) = self.by_queue_table().await? {
            ins.tables.push(t);
        }
        if let Some(t) = self.by_class_table(classifier).await? {
            ins.tables.push(t);
        }
        Ok(ins)
    }

    /// How many rows, the oldest and newest by age, and the first and last dead-lettered.
    async fn summary(&self) -> Result<Summary> {
        let l = &self.layout;
        let age = l.age_expr();
        let dl = l.col("failed_at").map(|c| c.sql.clone());
        let sql = format!(
            "SELECT count(*)::int8 AS n, {} AS oldest, {} AS newest, {} AS first_dead, {} AS last_dead FROM {} WHERE true{}",
            age.as_ref()
                .map_or("NULL::timestamptz".into(), |a| format!("min({a})")),
            age.as_ref()
                .map_or("NULL::timestamptz".into(), |a| format!("max({a})")),
            dl.as_ref()
                .map_or("NULL::timestamptz".into(), |a| format!("min({a})")),
            dl.as_ref()
                .map_or("NULL::timestamptz".into(), |a| format!("max({a})")),
            l.table,
            self.queue_clause(1)
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(self.pg.queue.as_deref())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        let messages: i64 = row.try_get("n").map_err(|e| self.err(e))?;
        let t = |c: &str| row.try_get::<Option<DateTime<Utc>>, _>(c).ok().flatten();
        Ok(Summary {
            messages,
            oldest: t("oldest"),
            newest: t("newest"),
            first_dead: t("first_dead"),
            last_dead: t("last_dead"),
        })
    }

    /// The pg_cron job that prunes the table, else "forever".
    async fn retention_fact(&self) -> Result<Fact> {
        let l = &self.layout;
        Ok(
            match cron::prune_jobs(&self.pool, &l.schema, &l.name).await? {
                Some(job) => Fact::new(
                    "retention",
                    job.retention.map(|d| d.as_secs()),
                    job.describe(),
                ),
                None => Fact::new(
                    "retention",
                    "forever",
                    "forever (no pg_cron job prunes this table)",
                ),
            },
        )
    }

    /// The 20 source queues with the most rows, where the table has a queue column and the
    /// address names no queue.
    async fn by_queue_table(&self) -> Result<Option<Table>> {
        let l = &self.layout;
        let Some(q) = l.col("queue") else {
            return Ok(None);
        };
        if self.pg.queue.is_some() {
            return Ok(None);
        }
        let sql = format!(
            "SELECT {q}::text AS queue, count(*)::int8 AS n FROM {} GROUP BY 1 ORDER BY 2 DESC LIMIT 20",
            l.table,
            q = q.sql
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(Some(Table {
            title: "by source queue".into(),
            columns: vec!["queue".into(), "messages".into()],
            rows: rows
                .iter()
                .map(|r| {
                    vec![
                        r.try_get::<Option<String>, _>("queue")
                            .ok()
                            .flatten()
                            .into(),
                        r.try_get::<i64, _>("n").unwrap_or(0).into(),
                    ]
                })
                .collect(),
        }))
    }

    /// Failure classes: cheap on a sample of the newest rows (error text only), where the
    /// table has an error column.
    async fn by_class_table(
        &self,
        classifier: &crate::classify::Classifier,
    ) -> Result<Option<Table>> {
        const SAMPLE: i64 = 5000;
        let l = &self.layout;
        let Some(e) = l.col("error") else {
            return Ok(None);
        };
        let sql = format!(
            "SELECT left({e}::text, 2000) FROM {} WHERE true{} ORDER BY {} DESC LIMIT $2",
            l.table,
            self.queue_clause(1),
            l.key(),
            e = e.sql
        );
        let errors: Vec<Option<String>> = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(self.pg.queue.as_deref())
            .bind(SAMPLE)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        let mut counts: std::collections::BTreeMap<(String, String), u64> = Default::default();
        for err in &errors {
            let m = Message {
                error: err.clone().map(|msg| ErrorInfo {
                    message: Some(msg),
                    ..ErrorInfo::default()
                }),
                ..Message::default()
            };
            let class = classifier.classify(&m);
            *counts
                .entry((class.kind.to_string(), class.rule))
                .or_default() += 1;
        }
        let mut rows: Vec<_> = counts.into_iter().collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.1));
        Ok(Some(Table {
            title: if errors.len() as i64 >= SAMPLE {
                format!("by failure class (newest {SAMPLE})")
            } else {
                "by failure class".into()
            },
            columns: vec!["class".into(), "rule".into(), "messages".into()],
            rows: rows
                .into_iter()
                .map(|((k, r), n)| vec![k.into(), r.into(), n.into()])
                .collect(),
        }))
    }

    pub(super) async fn verify_table(&self, cfg: &QueueConfig) -> Result<VerifyFacts> {
        let l = &self.layout;
        let mut facts = VerifyFacts::default();
        facts.redelivery.push(match cfg.time_to_dead_letter {
            Some(d) => Term {
                label: "time to dead-letter".into(),
                value: Retention::For(d),
                source: "time_to_dead_letter in dlqctl.toml".into(),
            },
            None => Term {
                label: "time to dead-letter".into(),
                value: Retention::For(Duration::ZERO),
                source: "not declared (set time_to_dead_letter); counted as 0".into(),
            },
        });
        let job = cron::prune_jobs(&self.pool, &l.schema, &l.name).await?;
        let (value, source, check) = match (cfg.dlq_retention, &job) {
            (Some(d), _) => (
                Retention::For(d),
                "dlq_retention in dlqctl.toml".to_string(),
                Check {
                    id: "dead-row-pruning".into(),
                    title: "Dead-letter pruning".into(),
                    status: Status::Pass,
                    detail: format!(
                        "declared dlq_retention {}{}",
                        crate::human::fmt_duration(d),
                        job.as_ref()
                            .map(|j| format!("; also found {}", j.describe()))
                            .unwrap_or_default()
                    ),
                },
            ),
            (None, Some(j)) => match j.retention {
                Some(d) => (
                    Retention::For(d),
                    j.describe(),
                    Check {
                        id: "dead-row-pruning".into(),
                        title: "Dead-letter pruning".into(),
                        status: Status::Pass,
                        detail: j.describe(),
                    },
                ),
                None => (
                    Retention::Forever,
                    format!("{} (its age limit could not be read)", j.describe()),
                    Check {
                        id: "dead-row-pruning".into(),
                        title: "Dead-letter pruning".into(),
                        status: Status::Warn,
                        detail: format!(
                            "{}, but its age limit could not be read; declare dlq_retention",
                            j.describe()
                        ),
                    },
                ),
            },
            (None, None) => (
                Retention::Forever,
                "no pruning found: rows stay until deleted".to_string(),
                Check {
                    id: "dead-row-pruning".into(),
                    title: "Dead-letter pruning".into(),
                    status: Status::Warn,
                    detail: format!(
                        "nothing prunes {} (no pg_cron job, no dlq_retention declared): dead letters are kept forever",
                        l.display
                    ),
                },
            ),
        };
        facts.redelivery.push(Term {
            label: "dead-letter retention".into(),
            value,
            source,
        });
        facts.checks.push(check);
        Ok(facts)
    }
}
