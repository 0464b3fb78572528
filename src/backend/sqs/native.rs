//! SQS's own server-side redrive: StartMessageMoveTask, ListMessageMoveTasks,
//! CancelMessageMoveTask. No filters, no editing, one active task per queue, ≤500 messages/s,
//! and every moved message gets a new MessageId (stable ids in attributes survive).

use aws_sdk_sqs::Client;
use serde_json::Value;

use super::sdk_err;
use crate::backend::{NativeMoveTask, Table};
use crate::error::{Error, Result};

pub type MoveTask = NativeMoveTask;

fn unsupported_or(e: Error) -> Error {
    match &e {
        // moto answers these calls with HTTP 500; some emulators with InvalidAction.
        Error::Backend { reason, .. }
            if reason.contains("InternalFailure")
                || reason.contains("InvalidAction")
                || reason.contains("not implemented")
                || reason.contains("Unknown") =>
        {
            Error::Unsupported {
                backend: "sqs",
                operation: "native redrive (message move tasks)",
                reason: format!(
                    "this endpoint does not implement StartMessageMoveTask/ListMessageMoveTasks ({reason}); use the client-side redrive (without --native)"
                ),
            }
        }
        _ => e,
    }
}

pub async fn start(
    client: &Client,
    source_arn: &str,
    destination_arn: Option<&str>,
    rate: Option<f64>,
) -> Result<String> {
    let mut req = client.start_message_move_task().source_arn(source_arn);
    if let Some(d) = destination_arn {
        req = req.destination_arn(d);
    }
    if let Some(r) = rate {
        let r = r.round() as i32;
        if !(1..=500).contains(&r) {
            return Err(Error::invalid_arg(
                "--rate",
                "a native move runs at 1 to 500 messages per second",
            ));
        }
        req = req.max_number_of_messages_per_second(r);
    }
    let out = req
        .send()
        .await
        .map_err(|e| unsupported_or(sdk_err(source_arn, e)))?;
    Ok(out.task_handle().unwrap_or_default().to_string())
}

pub async fn list_tasks(client: &Client, source_arn: &str) -> Result<Vec<MoveTask>> {
    let out = client
        .list_message_move_tasks()
        .source_arn(source_arn)
        .max_results(10)
        .send()
        .await
        .map_err(|e| unsupported_or(sdk_err(source_arn, e)))?;
    Ok(out
        .results()
        .iter()
        .map(|t| MoveTask {
            handle: t.task_handle().map(str::to_string),
            status: t.status().unwrap_or_default().to_string(),
            source: t.source_arn().unwrap_or_default().to_string(),
            destination: t.destination_arn().map(str::to_string),
            moved: t.approximate_number_of_messages_moved().max(0) as u64,
            to_move: t
                .approximate_number_of_messages_to_move()
                .map(|n| n.max(0) as u64),
            rate: t.max_number_of_messages_per_second(),
            failure: t.failure_reason().map(str::to_string),
            started_ms: t.started_timestamp(),
        })
        .collect())
}

pub async fn cancel(client: &Client, handle: &str) -> Result<u64> {
    let out = client
        .cancel_message_move_task()
        .task_handle(handle)
        .send()
        .await
        .map_err(|e| unsupported_or(sdk_err(handle, e)))?;
    Ok(out.approximate_number_of_messages_moved().max(0) as u64)
}

pub fn tasks_table(tasks: &[MoveTask]) -> Table {
    Table {
        title: "native move tasks (newest first)".into(),
        columns: vec![
            "status".into(),
            "moved".into(),
            "to move".into(),
            "destination".into(),
            "failure".into(),
        ],
        rows: tasks
            .iter()
            .map(|t| {
                vec![
                    t.status.clone().into(),
                    t.moved.into(),
                    t.to_move.map_or(Value::Null, Value::from),
                    t.destination
                        .clone()
                        .unwrap_or_else(|| "original sources".into())
                        .into(),
                    t.failure.clone().map_or(Value::Null, Value::from),
                ]
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    //! The client against recorded HTTP exchanges (moto does not implement these calls).
    use super::*;
    use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
    use aws_smithy_http_client::test_util::{ReplayEvent, StaticReplayClient};
    use aws_smithy_types::body::SdkBody;

    fn client(events: Vec<ReplayEvent>) -> (Client, StaticReplayClient) {
        let http = StaticReplayClient::new(events);
        let conf = aws_sdk_sqs::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::for_tests())
            .http_client(http.clone())
            .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
            .build();
        (Client::from_conf(conf), http)
    }

    fn ev(target: &str, req: &str, status: u16, resp: &str) -> ReplayEvent {
        ReplayEvent::new(
            http::Request::builder()
                .uri("https://sqs.us-east-1.amazonaws.com/")
                .header("x-amz-target", format!("AmazonSQS.{target}"))
                .body(SdkBody::from(req.to_string()))
                .unwrap(),
            http::Response::builder()
                .status(status)
                .body(SdkBody::from(resp.to_string()))
                .unwrap(),
        )
    }

    const ARN: &str = "arn:aws:sqs:us-east-1:123456789012:orders-dlq";

    #[tokio::test]
    async fn start_list_and_cancel() {
        let (c, http) = client(vec![
            ev(
                "StartMessageMoveTask",
                r#"{"SourceArn":"arn:aws:sqs:us-east-1:123456789012:orders-dlq","MaxNumberOfMessagesPerSecond":50}"#,
                200,
                r#"{"TaskHandle":"th-1"}"#,
            ),
            ev(
                "ListMessageMoveTasks",
                r#"{"SourceArn":"arn:aws:sqs:us-east-1:123456789012:orders-dlq","MaxResults":10}"#,
                200,
                r#"{"Results":[{"TaskHandle":"th-1","Status":"RUNNING","SourceArn":"arn:aws:sqs:us-east-1:123456789012:orders-dlq","ApproximateNumberOfMessagesMoved":120,"ApproximateNumberOfMessagesToMove":400,"MaxNumberOfMessagesPerSecond":50,"StartedTimestamp":1764680000000}]}"#,
            ),
            ev(
                "CancelMessageMoveTask",
                r#"{"TaskHandle":"th-1"}"#,
                200,
                r#"{"ApproximateNumberOfMessagesMoved":130}"#,
            ),
        ]);
        assert_eq!(start(&c, ARN, None, Some(50.0)).await.unwrap(), "th-1");
        let t = list_tasks(&c, ARN).await.unwrap();
        assert_eq!(
            (t[0].status.as_str(), t[0].moved, t[0].to_move),
            ("RUNNING", 120, Some(400))
        );
        assert_eq!(cancel(&c, "th-1").await.unwrap(), 130);
        http.relaxed_requests_match();
    }

    #[tokio::test]
    async fn rates_are_checked_and_unsupported_endpoints_say_so() {
        let (c, _) = client(vec![ev(
            "StartMessageMoveTask",
            "{}",
            500,
            r#"{"__type":"InternalFailure","message":"not implemented"}"#,
        )]);
        assert_eq!(
            start(&c, ARN, None, Some(900.0))
                .await
                .unwrap_err()
                .exit_code(),
            2
        );
        let e = start(&c, ARN, None, None).await.unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
        assert!(e.to_string().contains("without --native"), "{e}");
    }

    #[tokio::test]
    async fn one_task_per_queue_is_reported() {
        let (c, _) = client(vec![ev(
            "StartMessageMoveTask",
            "{}",
            400,
            r#"{"__type":"com.amazonaws.sqs#UnsupportedOperation","message":"There is already a task running. Only one active task is allowed for each source queue arn at a given time."}"#,
        )]);
        let e = start(&c, ARN, None, None).await.unwrap_err();
        assert!(e.to_string().contains("already a task running"), "{e}");
    }
}
