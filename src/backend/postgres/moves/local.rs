//! A claimed batch moved into a table of the same database row by row: rows the target
//! cannot hold as they are stay in the dead-letter table (with the reason), the rest are
//! copied and deleted in the batch's transaction.

use std::collections::HashMap;

use sqlx::AssertSqlSafe;

use super::{PgMoveSession, payload_compatible, pg_err, pg_err_moving, write};
use crate::address::Address;
use crate::backend::postgres::layout::{Layout, PayloadKind};
use crate::backend::postgres::{refuses_a_row, row_refusal};
use crate::backend::{MoveSession, SendOutcome, Ticket};
use crate::error::Result;
use crate::message::Message;

/// Outcomes by position in the selection, filled in step by step.
type Outcomes = Vec<Option<SendOutcome>>;

/// A selected row that can move: its position in the selection and its index in the batch.
type Movable = (usize, usize);

impl PgMoveSession<'_> {
    pub(super) async fn move_claimed_locally(
        &mut self,
        ticket: Ticket,
        target: &Address,
        selected: &[usize],
    ) -> Result<Vec<SendOutcome>> {
        let Address::Postgres(t) = target else {
            unreachable!("checked by can_move_locally")
        };
        let table = t.table().expect("checked by can_move_locally").to_string();
        let pool = self.b.pool.clone();
        let tl = self.target_layout(&table, t.queue.is_some(), &pool).await?;
        let src = self.b.layout.clone();
        let mut outcomes: Outcomes = vec![None; selected.len()];

        // The configured stable-id location (id = "json:/…") can only be applied row by row.
        let fast = self.b.id.is_none()
            && payload_compatible(src.payload(), tl.payload())
            && !(tl.col("queue").is_some_and(|c| c.not_null)
                && t.queue.is_none()
                && src.col("queue").is_none());
        if !fast {
            return self
                .copy_row_by_row(ticket, &tl, t.queue.as_deref(), selected)
                .await;
        }

        let mut movable = self.holdable(&tl, selected, &mut outcomes);
        self.keep_unaltered_ids(&tl, &mut movable, &mut outcomes)
            .await?;
        let rounds = self.rounds(&movable);
        let sql = local_move_sql(&src, &tl, t.queue.is_some(), self.opts.count_redrive);
        self.move_rounds(&sql, &tl, t.queue.as_deref(), rounds, &mut outcomes)
            .await?;
        let tx = self.tx.take().expect("a claimed batch");
        tx.commit().await.map_err(|e| self.err(e))?;
        self.batch.clear();
        Ok(outcomes
            .into_iter()
            .map(|o| o.expect("an outcome per selected row"))
            .collect())
    }

    /// Types that need checking row by row: build the copies here, still inside this batch's
    /// transaction, so the move stays atomic.
    async fn copy_row_by_row(
        &mut self,
        ticket: Ticket,
        tl: &Layout,
        queue: Option<&str>,
        selected: &[usize],
    ) -> Result<Vec<SendOutcome>> {
        self.load(selected).await?;
        let count = self.opts.count_redrive;
        let msgs: Vec<Message> = selected
            .iter()
            .map(|&i| {
                let mut m = self.batch[i].message.clone().unwrap_or_default();
                // The copy counts one more redrive, as the one-statement move's does.
                if count {
                    m.count_redrive();
                }
                m
            })
            .collect();
        let tx = self.tx.as_mut().expect("a claimed batch");
        let res = write::insert_messages(tx, tl, queue, &msgs)
            .await
            .map_err(|e| pg_err(&tl.display, e))?;
        let accepted: Vec<usize> = selected
            .iter()
            .zip(&res)
            .filter(|(_, o)| **o == SendOutcome::Sent)
            .map(|(&i, _)| i)
            .collect();
        self.settle(ticket, &accepted, &[]).await?;
        Ok(res)
    }

    /// The selected rows the target can hold without loss; the others (a binary body without
    /// room for bytes, headers without a headers column) stay where they are, rejected.
    fn holdable(&self, tl: &Layout, selected: &[usize], outcomes: &mut Outcomes) -> Vec<Movable> {
        let mut movable = Vec::new();
        for (pos, &i) in selected.iter().enumerate() {
            let c = &self.batch[i];
            if c.binary
                && tl.payload() != PayloadKind::Bytea
                && (tl.col("payload_bytes").is_none() || tl.cols["payload"].not_null)
            {
                outcomes[pos] = Some(SendOutcome::Rejected {
                    reason: format!(
                        "the body is binary and {} cannot hold it (no payload_bytes column, or its payload column is NOT NULL)",
                        tl.display
                    ),
                });
            } else if c.has_headers && tl.col("headers").is_none() {
                outcomes[pos] = Some(SendOutcome::Rejected {
                    reason: format!(
                        "{} has no headers column; the row's headers would be lost",
                        tl.display
                    ),
                });
            } else {
                movable.push((pos, i));
            }
        }
        movable
    }

    /// Ids the target column would not store as they are stay where they are, rejected with
    /// the reason.
    async fn keep_unaltered_ids(
        &mut self,
        tl: &Layout,
        movable: &mut Vec<Movable>,
        outcomes: &mut Outcomes,
    ) -> Result<()> {
        let ids: Vec<&str> = movable
            .iter()
            .map(|&(_, i)| self.batch[i].message_id.as_str())
            .collect();
        let tx = self.tx.as_mut().expect("a claimed batch");
        let altered = write::ids_that_change(tx, &tl.display, &tl.cols["message_id"].ty, &ids)
            .await
            .map_err(|e| pg_err(&tl.display, e))?;
        if !altered.is_empty() {
            movable.retain(|&(pos, i)| match altered.get(&self.batch[i].message_id) {
                Some(reason) => {
                    outcomes[pos] = Some(SendOutcome::Rejected {
                        reason: reason.clone(),
                    });
                    false
                }
                None => true,
            });
        }
        Ok(())
    }

    /// Rounds of distinct message ids, so that "inserted" maps back to exactly one row.
    fn rounds(&self, movable: &[Movable]) -> Vec<Vec<Movable>> {
        let mut rounds: Vec<Vec<Movable>> = Vec::new();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for &(pos, i) in movable {
            let k = seen.entry(self.batch[i].message_id.as_str()).or_default();
            if rounds.len() <= *k {
                rounds.push(Vec::new());
            }
            rounds[*k].push((pos, i));
            *k += 1;
        }
        rounds
    }

    /// Runs the one-statement move once per round: a row whose copy went in is sent (and
    /// deleted), one whose copy met an active twin stays, a conflict. A round the target
    /// refuses (a CHECK, a value it cannot hold: SQLSTATE class 22 or 23) is undone to its
    /// savepoint and done again row by row, so that only the refused rows stay, failed with
    /// the server's words.
    async fn move_rounds(
        &mut self,
        sql: &str,
        tl: &Layout,
        queue: Option<&str>,
        rounds: Vec<Vec<Movable>>,
        outcomes: &mut Outcomes,
    ) -> Result<()> {
        for round in rounds {
            let ids: Vec<String> = round
                .iter()
                .map(|&(_, i)| self.batch[i].native_id.clone())
                .collect();
            let mut moved = std::collections::HashSet::new();
            match self.move_guarded(sql, &ids, queue, tl).await? {
                Ok(m) => moved.extend(m),
                Err(_) => {
                    for (&(pos, _), id) in round.iter().zip(&ids) {
                        match self
                            .move_guarded(sql, std::slice::from_ref(id), queue, tl)
                            .await?
                        {
                            Ok(m) => moved.extend(m),
                            Err(reason) => {
                                outcomes[pos] = Some(SendOutcome::Rejected {
                                    reason: format!("{} refused the copy: {reason}", tl.display),
                                })
                            }
                        }
                    }
                }
            }
            for (pos, i) in round {
                if outcomes[pos].is_some() {
                    continue;
                }
                outcomes[pos] = Some(if moved.contains(&self.batch[i].native_id) {
                    SendOutcome::Sent
                } else {
                    SendOutcome::Conflict {
                        reason: format!(
                            "{} already holds a row with a unique key of this message (an active twin); left in the dead-letter table",
                            tl.display
                        ),
                    }
                });
            }
        }
        Ok(())
    }

    /// The local move of `ids` under a savepoint: the keys moved, or (rolled back to the
    /// savepoint) the server's words when the target refused a copy.
    async fn move_guarded(
        &mut self,
        sql: &str,
        ids: &[String],
        queue: Option<&str>,
        tl: &Layout,
    ) -> Result<std::result::Result<Vec<String>, String>> {
        let from = &self.b.layout.display;
        let tx = self.tx.as_mut().expect("a claimed batch");
        let err = |e| pg_err_moving(from, &tl.display, e);
        sqlx::query("SAVEPOINT dlqctl_round")
            .execute(&mut **tx)
            .await
            .map_err(err)?;
        match sqlx::query_scalar(AssertSqlSafe(sql.to_string()))
            .bind(ids)
            .bind(queue)
            .fetch_all(&mut **tx)
            .await
        {
            Ok(moved) => {
                sqlx::query("RELEASE SAVEPOINT dlqctl_round")
                    .execute(&mut **tx)
                    .await
                    .map_err(err)?;
                Ok(Ok(moved))
            }
            Err(e) if refuses_a_row(&e) => {
                sqlx::query("ROLLBACK TO SAVEPOINT dlqctl_round")
                    .execute(&mut **tx)
                    .await
                    .map_err(err)?;
                Ok(Err(row_refusal(&e)))
            }
            Err(e) => Err(err(e)),
        }
    }
}

/// The target columns a local move fills and the expressions over the source row that fill
/// them (`$2` is the queue override).
pub(super) fn copy_columns(
    src: &Layout,
    tgt: &Layout,
    queue_override: bool,
    count: bool,
) -> (Vec<String>, Vec<String>) {
    let sid = &src.cols["id"].sql;
    let smid = &src.cols["message_id"].sql;
    let mut cols = vec![
        tgt.cols["message_id"].sql.clone(),
        tgt.cols["payload"].sql.clone(),
    ];
    let sp = &src.cols["payload"].sql;
    let payload = match (src.payload(), tgt.payload()) {
        (_, PayloadKind::Bytea) => src.body_expr(),
        (PayloadKind::Jsonb | PayloadKind::Json, PayloadKind::Text) => format!("{sp}::text"),
        (_, PayloadKind::Jsonb) => format!("{sp}::jsonb"),
        (_, PayloadKind::Json) => format!("{sp}::json"),
        _ => sp.clone(),
    };
    // The stable id: the producer's, else the row's own key (as everywhere else).
    let mut vals = vec![
        // An empty message_id is no id (as everywhere dlqctl reads one): the key stands in.
        format!(
            "COALESCE(NULLIF({smid}::text, ''), {sid}::text)::{}",
            tgt.cols["message_id"].ty
        ),
        payload,
    ];
    if let Some(c) = tgt.col("payload_bytes")
        && tgt.payload() != PayloadKind::Bytea
    {
        cols.push(c.sql.clone());
        vals.push(
            src.col("payload_bytes")
                .map_or("NULL::bytea".into(), |s| s.sql.clone()),
        );
    }
    if let Some(c) = tgt.col("headers") {
        cols.push(c.sql.clone());
        // The copy counts one more redrive (the loop guard's `dlqctl-redrive-count`): the
        // previous count where it is a number, else 0, plus one. Most rows have no count yet:
        // for them, one concatenation with a constant (about half the server CPU of building
        // every row's count from its headers; docs/benchmarks.md).
        let h = match src.col("headers") {
            Some(s) if s.not_null && s.ty == "jsonb" => s.sql.clone(),
            Some(s) => format!("COALESCE({}::jsonb, '{{}}'::jsonb)", s.sql),
            None => "'{}'::jsonb".into(),
        };
        let n = crate::message::REDRIVE_COUNT_ATTRIBUTE;
        vals.push(if count {
            format!(
                "(CASE WHEN {h} ? '{n}' THEN {h} || jsonb_build_object('{n}', ((CASE WHEN {h}->>'{n}' ~ '^[0-9]{{1,9}}$' THEN ({h}->>'{n}')::int ELSE 0 END) + 1)::text) ELSE {h} || '{{\"{n}\": \"1\"}}'::jsonb END)::{}",
                c.ty
            )
        } else {
            format!("{h}::{}", c.ty)
        });
    }
    if let Some(c) = tgt.col("queue") {
        let v = match (queue_override, src.col("queue")) {
            (true, _) => Some("$2::text".to_string()),
            (false, Some(s)) => Some(format!("{}::text", s.sql)),
            (false, None) => None,
        };
        if let Some(v) = v {
            cols.push(c.sql.clone());
            vals.push(format!("{v}::{}", c.ty));
        }
    }
    if let (Some(c), Some(s)) = (tgt.col("group_key"), src.col("group_key")) {
        cols.push(c.sql.clone());
        vals.push(s.sql.clone());
    }
    if let Some(c) = tgt.col("enqueued_at") {
        cols.push(c.sql.clone());
        vals.push("now()".into());
    }
    (cols, vals)
}

/// One statement: copy the listed rows into the queue table and delete exactly those whose
/// copy went in. `$1` the row keys (text), `$2` the queue name override.
fn local_move_sql(src: &Layout, tgt: &Layout, queue_override: bool, count: bool) -> String {
    let sid = &src.cols["id"].sql;
    let smid = &src.cols["message_id"].sql;
    let (cols, vals) = copy_columns(src, tgt, queue_override, count);
    let queue_ref = if queue_override {
        ""
    } else {
        " AND $2::text IS NULL"
    };
    format!(
        "WITH src AS (SELECT * FROM {st} WHERE {sid} = ANY($1::text[]::{ty}[]){queue_ref}),
              ins AS (INSERT INTO {tt} ({cols}) SELECT {vals} FROM src ORDER BY {sid} ON CONFLICT DO NOTHING RETURNING {tmid}::text AS mid)
         DELETE FROM {st} d WHERE d.{sid} = ANY($1::text[]::{ty}[]) AND COALESCE(NULLIF(d.{smid}::text, ''), d.{sid}::text) IN (SELECT mid FROM ins) RETURNING d.{sid}::text",
        st = src.table,
        tt = tgt.table,
        cols = cols.join(", "),
        vals = vals.join(", "),
        tmid = tgt.cols["message_id"].sql,
        ty = src.id_type(),
    )
}
