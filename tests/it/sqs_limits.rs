//! What an operator found at SQS's edges: a message at the target's size limit, and the SDK
//! settings read from the environment.

use crate::harness::{Sandbox, Sqs};
use crate::sqs_accounting::in_queue;

/// Operator report (op5): a message at the target's MaximumMessageSize could never be
/// redriven: the `dlqctl-redrive-count` attribute dlqctl adds pushed the copy over, and neither
/// `--strip-header dlqctl-redrive-count` nor anything else removed it. Now `--strip-header`
/// naming it drops it, and without that the count gives way by itself, and the summary says
/// that copy cannot be counted by the loop guard.
#[tokio::test]
async fn a_message_at_the_size_limit_goes_without_the_redrive_count() {
    let q = Sqs::new("atlimit").await;
    let limit = [("MaximumMessageSize", "1024")];
    let (dlq, _) = q.create("dlq", &limit).await;
    let (target, _) = q.create("target", &limit).await;
    let sent = q
        .client
        .send_message()
        .queue_url(&dlq)
        .message_body("b")
        .send()
        .await
        .unwrap();
    let id = sent.message_id().unwrap().to_string();
    // The copy carries the stable id (the MessageId, in `dlqctl-stable-id`): body and that
    // attribute take the whole 1024 bytes, so the count's 27 do not fit.
    let body = "b".repeat(1024 - ("dlqctl-stable-id".len() + "String".len() + id.len()));
    q.client.purge_queue().queue_url(&dlq).send().await.unwrap();
    q.client
        .send_message()
        .queue_url(&dlq)
        .message_body(&body)
        .send()
        .await
        .unwrap();
    let sb = Sandbox::new();
    let env = q.env(&sb);
    let dry = sb.run_with(
        &[
            "redrive",
            &dlq,
            "--to",
            &target,
            "--strip-header",
            "dlqctl-redrive-count",
            "--dry-run",
            "--output",
            "json",
        ],
        &env,
    );
    assert_eq!(dry.code, 0, "{}\n{}", dry.stdout, dry.stderr);
    assert_eq!(dry.json()["would_move"], 1, "{}", dry.stdout);
    let r = sb.run_with(
        &[
            "redrive", &dlq, "--to", &target, "--yes", "--output", "json",
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let j = r.json();
    assert_eq!(j["moved"], 1, "{j}");
    let note = j["notes"][0].as_str().unwrap_or_default();
    assert!(
        note.contains("without dlqctl-redrive-count") && note.contains("1024 bytes"),
        "{j}"
    );
    assert!(
        r.stderr.contains("sent without dlqctl-redrive-count"),
        "{}",
        r.stderr
    );
    assert_eq!(in_queue(&q, &dlq).await, 0);
    let copies = q.receive_all(&target).await;
    assert_eq!(copies.len(), 1);
    let attrs = copies[0].message_attributes().cloned().unwrap_or_default();
    assert!(!attrs.contains_key("dlqctl-redrive-count"), "{attrs:?}");
    assert_eq!(copies[0].body(), Some(body.as_str()));
}

/// Operator report (op5): at `-vv` the SDK's debug lines showed the AWS access key id
/// (`access_key_id: "AKIA…"`); docs/reliability.md says the AWS keys are hidden by value. Both
/// ways a key id reaches the SDK: from the environment, and from a credentials file.
#[tokio::test]
async fn the_aws_access_key_id_is_not_shown_at_vv() {
    let q = Sqs::new("keyid").await;
    let (dlq, _) = q.create("dlq", &[]).await;
    let sb = Sandbox::new();
    let from_env = "AKIAOP5LEAKCHECKENV1";
    let mut env: Vec<(String, String)> = q
        .env(&sb)
        .into_iter()
        .filter(|(k, _)| k != "AWS_ACCESS_KEY_ID")
        .collect();
    env.push(("AWS_ACCESS_KEY_ID".into(), from_env.into()));
    let r = sb.run_with(&["-vv", "inspect", &dlq], &env);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("access_key_id"),
        "the SDK's line is there"
    );
    assert!(!r.stderr.contains(from_env), "LEAK:\n{}", r.stderr);
    let from_file = "AKIAOP5LEAKCHECKFILE";
    let creds = sb.write(
        "aws-credentials",
        &format!("[default]\naws_access_key_id = {from_file}\naws_secret_access_key = testing\n"),
    );
    let mut env: Vec<(String, String)> = q
        .env(&sb)
        .into_iter()
        .filter(|(k, _)| !k.starts_with("AWS_ACCESS_KEY_ID") && k != "AWS_SECRET_ACCESS_KEY")
        .collect();
    env.push((
        "AWS_SHARED_CREDENTIALS_FILE".into(),
        creds.to_string_lossy().into_owned(),
    ));
    env.push((
        "AWS_CONFIG_FILE".into(),
        sb.path("no-config").to_string_lossy().into_owned(),
    ));
    let r = sb.run_with(&["-vv", "inspect", &dlq], &env);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains(from_file), "LEAK:\n{}", r.stderr);
}

/// Operator report (op5): a bad `AWS_MAX_ATTEMPTS` (0, abc) or `AWS_RETRY_MODE` (bogus) made
/// every SQS command panic in aws-config (exit 101, a backtrace). Now a one-line configuration
/// error, exit 2, naming the variable and what it takes.
#[tokio::test]
async fn bad_sdk_retry_settings_are_a_one_line_config_error() {
    let q = Sqs::new("retryenv").await;
    let (dlq, _) = q.create("dlq", &[]).await;
    let sb = Sandbox::new();
    for (var, value, valid) in [
        ("AWS_MAX_ATTEMPTS", "0", "1 or more"),
        ("AWS_MAX_ATTEMPTS", "abc", "1 or more"),
        ("AWS_RETRY_MODE", "bogus", "standard or adaptive"),
    ] {
        let mut env = q.env(&sb);
        env.push((var.into(), value.into()));
        let r = sb.run_with(&["inspect", &dlq], &env);
        assert_eq!(r.code, 2, "{var}={value}: {}", r.stderr);
        let first = r.stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("error: ")
                && first.contains(var)
                && first.contains(&format!("`{value}`"))
                && first.contains(valid),
            "{var}={value}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
    let mut env = q.env(&sb);
    env.push(("AWS_MAX_ATTEMPTS".into(), "1".into()));
    env.push(("AWS_RETRY_MODE".into(), "Adaptive".into()));
    let r = sb.run_with(&["inspect", &dlq], &env);
    assert_eq!(r.code, 0, "valid values pass: {}", r.stderr);
}

/// Operator report (op5): missing AWS credentials were reported as `permission denied`, with
/// the hint to grant permissions. They are said to be missing, with how to give them (exit 3,
/// as before).
#[tokio::test]
async fn missing_credentials_are_not_called_a_permission_problem() {
    let q = Sqs::new("nocreds").await;
    let (dlq, _) = q.create("dlq", &[]).await;
    let sb = Sandbox::new();
    let mut env: Vec<(String, String)> = q
        .env(&sb)
        .into_iter()
        .filter(|(k, _)| k != "AWS_ACCESS_KEY_ID" && k != "AWS_SECRET_ACCESS_KEY")
        .collect();
    env.push(("AWS_EC2_METADATA_DISABLED".into(), "true".into()));
    env.push((
        "AWS_CONFIG_FILE".into(),
        sb.path("no-config").to_string_lossy().into_owned(),
    ));
    env.push((
        "AWS_SHARED_CREDENTIALS_FILE".into(),
        sb.path("no-credentials").to_string_lossy().into_owned(),
    ));
    let r = sb.run_with(&["inspect", &dlq], &env);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("no AWS credentials found")
            && r.stderr.contains("AWS_ACCESS_KEY_ID")
            && !r.stderr.contains("permission denied")
            && !r.stderr.contains("grant"),
        "{}",
        r.stderr
    );
}

/// Operator report (op5): `DLQCTL_SQS_WAIT_SECONDS=30` was clamped to 20 and `abc` fell back
/// to 2, both silently. Each is warned about, saying what is used.
#[tokio::test]
async fn a_wait_setting_sqs_cannot_use_is_warned_about() {
    let q = Sqs::new("waitenv").await;
    let (dlq, _) = q.create("dlq", &[]).await;
    let sb = Sandbox::new();
    for (value, says) in [
        (
            "30",
            "DLQCTL_SQS_WAIT_SECONDS=30 is outside what SQS allows for a receive's wait (0-20 seconds): 20 is used",
        ),
        (
            "abc",
            "DLQCTL_SQS_WAIT_SECONDS=\"abc\" is not a number of seconds, 0-20: the default (2) is used",
        ),
    ] {
        let mut env: Vec<(String, String)> = q
            .env(&sb)
            .into_iter()
            .filter(|(k, _)| k != "DLQCTL_SQS_WAIT_SECONDS")
            .collect();
        env.push(("DLQCTL_SQS_WAIT_SECONDS".into(), value.into()));
        let r = sb.run_with(&["inspect", &dlq], &env);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stderr.contains(says), "{value}: {}", r.stderr);
    }
}
