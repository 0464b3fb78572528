//! `redrive --native`: the backend's own server-side move (SQS message move tasks). No
//! filters and no editing; every moved message gets a new MessageId (a stable id carried in
//! an attribute survives).

use std::time::Duration;

use serde::Serialize;

use crate::address::Address;
use crate::backend::{NativeMoveTask, NativeMoves};
use crate::error::{Error, Result, exit};
use crate::settings::{Ctx, QueueRef};

pub struct NativeRequest {
    pub source: QueueRef,
    pub to: Option<Address>,
    pub rate: Option<f64>,
    pub dry_run: bool,
    pub yes: bool,
    pub cancel: bool,
    pub wait: bool,
}

#[derive(Serialize)]
struct NativeSummary {
    operation: &'static str,
    source: String,
    task: Option<NativeMoveTask>,
    dry_run: bool,
}

/// Start the service's move task (or cancel the running one): show the plan, ask, record the
/// start in the audit log, then report the task or follow it to its end.
pub async fn run(ctx: &Ctx, req: NativeRequest) -> Result<i32> {
    let p = &ctx.printer;
    if !req.dry_run {
        // Before anything is read (docs/audit.md).
        ctx.require_reason()?;
    }
    let b = ctx
        .opener
        .open(&req.source.address, &req.source.source_options())
        .await?;
    let Some(b) = b.native_moves() else {
        return Err(Error::Unsupported {
            backend: req.source.address.backend_name(),
            operation: "native redrive",
            reason: "only SQS has a server-side move (--native); leave out --native".into(),
        });
    };
    if req.cancel {
        return cancel(ctx, &req, b).await;
    }
    let asking = !req.dry_run && !req.yes;
    if p.is_table() || (asking && p.interactive()) {
        p.plan(&plan(&req), asking);
    }
    if req.dry_run {
        emit(ctx, &req, None, "native-redrive (dry run)")?;
        return Ok(exit::OK);
    }
    if asking {
        ctx.interrupt.set_phase(crate::settings::Phase::Asking);
        if !p.confirm("Start the move task?", "`dlqctl redrive --native`")? {
            p.plan_note("nothing done", true);
            return Ok(exit::OK);
        }
    }
    ctx.interrupt.set_phase(crate::settings::Phase::Changing);
    let handle = start(ctx, &req, b).await?;
    if !req.wait {
        let task = b
            .tasks()
            .await?
            .into_iter()
            .find(|t| t.handle.as_deref() == Some(handle.as_str()));
        emit(ctx, &req, task, "native-redrive started")?;
        return Ok(exit::OK);
    }
    follow(ctx, &req, b, &handle).await
}

/// Prints a task (or its absence) as the outcome of `op`: a line for people, else JSON.
fn emit(
    ctx: &Ctx,
    req: &NativeRequest,
    task: Option<NativeMoveTask>,
    op: &'static str,
) -> Result<()> {
    let p = &ctx.printer;
    let s = NativeSummary {
        operation: op,
        source: req.source.address.to_string(),
        task,
        dry_run: req.dry_run,
    };
    if !p.is_table() {
        return p.json(&s);
    }
    match &s.task {
        Some(t) => p.line(&format!(
            "{op}: task {} {} · moved {}{}{}",
            t.handle.as_deref().unwrap_or("-"),
            t.status,
            t.moved,
            t.to_move.map(|n| format!(" of {n}")).unwrap_or_default(),
            t.failure
                .as_deref()
                .map(|f| format!(" · {f}"))
                .unwrap_or_default()
        )),
        None => p.line(&format!("{op}: no task")),
    }
}

/// `--cancel`: asks, then cancels the running task, recorded in the audit log.
async fn cancel(ctx: &Ctx, req: &NativeRequest, b: &dyn NativeMoves) -> Result<i32> {
    let p = &ctx.printer;
    let tasks = b.tasks().await?;
    let Some(running) = tasks.into_iter().find(|t| t.status == "RUNNING") else {
        p.note("no native move task is running for this queue");
        return Ok(exit::OK);
    };
    let handle = running.handle.clone().unwrap_or_default();
    if !req.yes
        && !p.confirm(
            &format!("Cancel native move task {handle}?"),
            "`dlqctl redrive --native --cancel`",
        )?
    {
        return Ok(exit::OK);
    }
    let audit = ctx
        .audit(
            "native-cancel",
            &req.source,
            Vec::new(),
            format!("task {handle}"),
        )
        .await?;
    let moved = match b.cancel(&handle).await {
        Ok(n) => n,
        Err(e) => {
            audit
                .finish(e.exit_code(), serde_json::json!({}), Some(e.to_string()))
                .await;
            return Err(e);
        }
    };
    audit
        .finish(
            exit::OK,
            serde_json::json!({ "task": handle, "moved": moved }),
            None,
        )
        .await;
    emit(
        ctx,
        req,
        Some(NativeMoveTask {
            moved,
            status: "CANCELLING".into(),
            ..running
        }),
        "cancel",
    )?;
    Ok(exit::OK)
}

/// The plan shown before the task starts.
fn plan(req: &NativeRequest) -> Vec<(String, String)> {
    vec![
        (
            "operation".to_string(),
            "the service's own move task (StartMessageMoveTask): copy each message to the target, then delete it from the dead-letter queue".to_string(),
        ),
        ("dead-letter queue".to_string(), req.source.label()),
        (
            "to".to_string(),
            req.to.as_ref().map_or(
                "each message's source queue (the queue it failed on)".into(),
                ToString::to_string,
            ),
        ),
        (
            "rate".to_string(),
            req.rate.map_or("service default".into(), |r| {
                format!("{r:.0}/s (at most 500)")
            }),
        ),
        (
            "note".to_string(),
            "no filters; every moved message gets a new MessageId".to_string(),
        ),
    ]
}

/// Starts the task, recorded in the audit log; returns its handle.
async fn start(ctx: &Ctx, req: &NativeRequest, b: &dyn NativeMoves) -> Result<String> {
    let audit = ctx
        .audit(
            "native-redrive",
            &req.source,
            vec![req.to.as_ref().map_or_else(
                || "each message's source queue".to_string(),
                ToString::to_string,
            )],
            "none (a native move task takes no filters)".into(),
        )
        .await?;
    // The outcome is the task's start: it runs on the server from then on (its progress is
    // in `dlqctl inspect`, and this run's own output).
    match b.start(req.to.as_ref(), req.rate).await {
        Ok(h) => {
            audit
                .finish(
                    exit::OK,
                    serde_json::json!({ "task": h, "started": true }),
                    None,
                )
                .await;
            Ok(h)
        }
        Err(e) => {
            audit
                .finish(e.exit_code(), serde_json::json!({}), Some(e.to_string()))
                .await;
            Err(e)
        }
    }
}

/// `--wait`: polls the task every two seconds, with a progress bar, until it ends or Ctrl-C
/// (which leaves it running on the server).
async fn follow(ctx: &Ctx, req: &NativeRequest, b: &dyn NativeMoves, handle: &str) -> Result<i32> {
    let p = &ctx.printer;
    let bar = p.progress(None, "native move");
    loop {
        let tasks = b.tasks().await?;
        let task = tasks
            .into_iter()
            .find(|t| t.handle.as_deref() == Some(handle) || t.handle.is_none());
        if let Some(t) = &task {
            if let Some(n) = t.to_move {
                bar.set_length(n);
            }
            bar.set_position(t.moved);
            if matches!(t.status.as_str(), "COMPLETED" | "FAILED" | "CANCELLED") {
                bar.finish_and_clear();
                let failed = t.status != "COMPLETED";
                emit(ctx, req, task.clone(), "native-redrive")?;
                return Ok(if failed { exit::PARTIAL } else { exit::OK });
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            _ = ctx.interrupt.wait() => {
                bar.finish_and_clear();
                p.warn(&format!("the move task {handle} keeps running on the server; stop it with `dlqctl redrive {} --native --cancel`", req.source.address));
                return Err(Error::Interrupted);
            }
        }
    }
}
