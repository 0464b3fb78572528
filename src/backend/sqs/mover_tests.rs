//! The move session against recorded SQS exchanges, for what moto never answers: OverLimit,
//! a DeleteMessageBatch entry in `Failed[]`, a message that comes back after its delete was
//! answered Successful, a hold that ran out before the delete.

use super::*;
use crate::address::Address;
use crate::backend::AwsOptions;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_smithy_http_client::test_util::{ReplayEvent, StaticReplayClient};
use aws_smithy_types::body::SdkBody;

/// An SQS queue whose endpoint answers `answers` in order (status, JSON body).
fn backend(answers: &[(u16, &str)], state: &std::path::Path) -> SqsBackend {
    let http = StaticReplayClient::new(
        answers
            .iter()
            .map(|(status, body)| {
                ReplayEvent::new(
                    http::Request::builder()
                        .uri("https://sqs.us-east-1.amazonaws.com/")
                        .body(SdkBody::empty())
                        .unwrap(),
                    http::Response::builder()
                        .status(*status)
                        .header("content-type", "application/x-amz-json-1.0")
                        .body(SdkBody::from(body.to_string()))
                        .unwrap(),
                )
            })
            .collect(),
    );
    let conf = aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::for_tests())
        .http_client(http)
        .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
        .build();
    SqsBackend {
        addr: Address::parse("sqs://orders").unwrap(),
        client: aws_sdk_sqs::Client::from_conf(conf),
        url: "https://sqs.us-east-1.amazonaws.com/123456789012/orders".into(),
        arn: "arn:aws:sqs:us-east-1:123456789012:orders".into(),
        name: "orders".into(),
        attrs: Default::default(),
        fifo: false,
        max_size: 1_048_576,
        id: None,
        opts: AwsOptions {
            parallel: 1,
            wait_seconds: 0,
            state_dir: Some(state.to_path_buf()),
            ..AwsOptions::default()
        },
        held: Default::default(),
        inflight: Default::default(),
        reads: Default::default(),
        sources: Default::default(),
        uncounted: Default::default(),
    }
}

fn received(ids: &[&str]) -> String {
    let msgs: Vec<String> = ids
        .iter()
        .map(|id| format!(r#"{{"MessageId":"{id}","ReceiptHandle":"r-{id}","Body":"{{}}"}}"#))
        .collect();
    format!(r#"{{"Messages":[{}]}}"#, msgs.join(","))
}

#[tokio::test]
async fn over_limit_from_a_receive_stops_the_run_and_says_how_many_were_not_examined() {
    let state = tempfile::tempdir().unwrap();
    let b = backend(
        &[
            (
                403,
                r#"{"__type":"com.amazonaws.sqs#OverLimit","message":"too many messages in flight"}"#,
            ),
            (
                200,
                r#"{"Attributes":{"ApproximateNumberOfMessages":"7","ApproximateNumberOfMessagesNotVisible":"0","ApproximateNumberOfMessagesDelayed":"0"}}"#,
            ),
        ],
        state.path(),
    );
    let mut s = SqsMoveSession::begin(&b).await.unwrap();
    assert!(
        s.next_batch(10).await.unwrap().is_none(),
        "no batch past OverLimit"
    );
    s.finish().await.unwrap();
    let u = s.unaccounted();
    assert_eq!(u.len(), 1, "{u:?}");
    assert_eq!(u[0].count, 7);
    assert!(u[0].reason.contains("in flight"), "{}", u[0].reason);
}

#[tokio::test]
async fn a_failed_delete_is_unremoved_and_a_message_that_comes_back_is_deleted_again() {
    let state = tempfile::tempdir().unwrap();
    let b = backend(
        &[
            (200, &received(&["a", "b"])),
            (
                200,
                r#"{"Successful":[{"Id":"x0"}],"Failed":[{"Id":"x1","SenderFault":true,"Code":"ReceiptHandleIsInvalid","Message":"gone"}]}"#,
            ),
            // `a` comes back: its delete did not take effect. It is deleted again.
            (200, &received(&["a"])),
            (200, r#"{"Successful":[{"Id":"x0"}],"Failed":[]}"#),
            (200, r#"{"Messages":[]}"#),
            (200, r#"{"Attributes":{"ApproximateNumberOfMessages":"0"}}"#),
        ],
        state.path(),
    );
    let mut s = SqsMoveSession::begin(&b).await.unwrap();
    let claim = s.next_batch(10).await.unwrap().unwrap();
    assert_eq!(claim.messages.len(), 2);
    s.settle(claim.ticket, &[0, 1], &[]).await.unwrap();
    let unremoved = s.unremoved();
    assert_eq!(unremoved.len(), 1, "{unremoved:?}");
    assert_eq!(unremoved[0].0, 1);
    assert!(
        unremoved[0].1.contains("ReceiptHandleIsInvalid: gone"),
        "{}",
        unremoved[0].1
    );
    assert!(s.next_batch(10).await.unwrap().is_none());
    s.finish().await.unwrap();
    assert!(s.unaccounted().is_empty(), "{:?}", s.unaccounted());
    assert_eq!(s.undeleted, 0);
}

#[tokio::test]
async fn a_hold_that_ran_out_is_claimed_again_before_the_delete() {
    let state = tempfile::tempdir().unwrap();
    let b = backend(
        &[
            (200, &received(&["a", "b"])),
            // The claim: `a` is still this run's, `b` is not (another reader has it).
            (
                200,
                r#"{"Successful":[{"Id":"x0"}],"Failed":[{"Id":"x1","SenderFault":true,"Code":"AWS.SimpleQueueService.MessageNotInflight","Message":"not in flight"}]}"#,
            ),
            (200, r#"{"Successful":[{"Id":"x0"}],"Failed":[]}"#),
        ],
        state.path(),
    );
    let mut s = SqsMoveSession::begin(&b).await.unwrap();
    let claim = s.next_batch(10).await.unwrap().unwrap();
    // Both holds run out now (a heartbeat that could not keep up).
    let now = Instant::now();
    s.holds.put("a", "r-a", now);
    s.holds.put("b", "r-b", now);
    s.settle(claim.ticket, &[0, 1], &[]).await.unwrap();
    let unremoved = s.unremoved();
    assert_eq!(unremoved.len(), 1, "{unremoved:?}");
    assert_eq!(unremoved[0].0, 1);
    assert!(unremoved[0].1.contains("ran out"), "{}", unremoved[0].1);
}

#[tokio::test]
async fn a_fifo_message_received_twice_in_one_round_is_claimed_once_and_stays_held() {
    let state = tempfile::tempdir().unwrap();
    let mut b = backend(
        &[
            (200, &received(&["a", "b"])),
            // The round's second receive, once `a`'s hold ran out (a loaded machine): `a`
            // again, under a newer receipt.
            (
                200,
                r#"{"Messages":[{"MessageId":"a","ReceiptHandle":"r2-a","Body":"{}"}]}"#,
            ),
            (
                200,
                r#"{"Successful":[{"Id":"x0"},{"Id":"x1"}],"Failed":[]}"#,
            ),
        ],
        state.path(),
    );
    b.fifo = true;
    b.opts.parallel = 2;
    let mut s = SqsMoveSession::begin(&b).await.unwrap();
    let claim = s.next_batch(20).await.unwrap().unwrap();
    assert_eq!(claim.messages.len(), 2, "`a` is claimed once");
    let (receipt, _) = s.holds.get("a").expect("`a` is still held, not given back");
    assert_eq!(receipt, "r2-a", "held under its newest receipt");
    s.settle(claim.ticket, &[0, 1], &[]).await.unwrap();
    assert!(s.unremoved().is_empty(), "both copied messages are deleted");
}
