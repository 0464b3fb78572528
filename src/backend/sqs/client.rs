//! The SDK client for a queue's place (region, profile, endpoint), the count of requests it
//! sends, and SDK errors as dlqctl's.

use aws_config::{BehaviorVersion, Region};
use aws_sdk_sqs::Client;
use aws_sdk_sqs::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

use crate::address::SqsAddress;
use crate::backend::AwsOptions;
use crate::error::{Error, Result};

/// Map an SDK error to the spec's kinds. AccessDenied is an error, never an empty queue.
pub(super) fn sdk_err<E, R>(target: &str, e: SdkError<E, R>) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let target = target.to_string();
    match &e {
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) => {
            let text = DisplayErrorContext(&e).to_string();
            if text.contains("credentials") {
                // Nothing to grant yet: no identity at all (exit 3 all the same).
                Error::Backend {
                    target,
                    reason: "no AWS credentials found (set AWS_PROFILE, run `aws sso login`, or export AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)".into(),
                }
            } else {
                Error::Unreachable {
                    target,
                    reason: crate::error::with_rerun(last_cause(&text)),
                }
            }
        }
        _ => {
            let code = e.code().unwrap_or("Unknown").to_string();
            let msg = e.message().unwrap_or_default().to_string();
            let short = code.rsplit('.').next().unwrap_or(&code).to_string();
            match short.as_str() {
                "NonExistentQueue" | "QueueDoesNotExist" | "ResourceNotFoundException" => {
                    Error::NotFound {
                        what: format!("queue {target}"),
                        detail:
                            "check the name, region and account (AWS_REGION, --region, the URL)"
                                .into(),
                    }
                }
                "AccessDenied"
                | "AccessDeniedException"
                | "InvalidClientTokenId"
                | "SignatureDoesNotMatch"
                | "UnrecognizedClientException"
                | "ExpiredToken"
                | "InvalidSecurity"
                | "KmsAccessDenied" => Error::PermissionDenied {
                    target,
                    reason: format!("{short}: {msg}"),
                },
                _ => Error::Backend {
                    target,
                    reason: if msg.is_empty() {
                        short
                    } else {
                        format!("{short}: {msg}")
                    },
                },
            }
        }
    }
}

/// The useful part of a dispatch error's chain, on one line.
fn last_cause(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    for (needle, say) in [
        ("connection refused", "connection refused"),
        ("timed out", "timed out"),
        ("dns error", "the endpoint's host name does not resolve"),
        (
            "failed to lookup",
            "the endpoint's host name does not resolve",
        ),
        ("certificate", "TLS certificate problem"),
        ("connection reset", "connection reset"),
    ] {
        if lower.contains(needle) {
            return say.to_string();
        }
    }
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(200)
        .collect()
}

/// `AWS_MAX_ATTEMPTS` and `AWS_RETRY_MODE`, checked as the SDK reads them before it does:
/// aws-config panics on a value it cannot use (`0`, `abc`, `bogus`).
fn check_retry_environment() -> Result<()> {
    let bad = |var: &str, reason: String| Err(Error::invalid_arg(var, reason));
    if let Some(v) = std::env::var_os("AWS_MAX_ATTEMPTS") {
        let v = v.to_string_lossy();
        if !v.parse::<u32>().is_ok_and(|n| n > 0) {
            return bad(
                "AWS_MAX_ATTEMPTS",
                format!(
                    "`{v}` is not a number of attempts: give a whole number, 1 or more (1: no retries; unset: 3)"
                ),
            );
        }
    }
    if let Some(v) = std::env::var_os("AWS_RETRY_MODE") {
        let v = v.to_string_lossy();
        let mode = v.trim();
        if !(mode.eq_ignore_ascii_case("standard") || mode.eq_ignore_ascii_case("adaptive")) {
            return bad(
                "AWS_RETRY_MODE",
                format!("`{v}` is not a retry mode: give standard or adaptive (unset: standard)"),
            );
        }
    }
    Ok(())
}

/// A client for one queue's place (region, profile, endpoint).
pub(super) async fn client_for(a: &SqsAddress, o: &AwsOptions) -> Result<Client> {
    check_retry_environment()?;
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if let Some(p) = &o.profile {
        loader = loader.profile_name(p);
    }
    if let Some(r) = a.region.clone().or_else(|| o.region.clone()) {
        loader = loader.region(Region::new(r));
    }
    let endpoint = o.endpoint_url.clone().or_else(|| {
        // A queue URL that is not AWS's (an emulator) is its own endpoint.
        a.url
            .as_deref()
            .and_then(|u| url::Url::parse(u).ok())
            .filter(|u| !u.host_str().unwrap_or_default().ends_with("amazonaws.com"))
            .map(|u| u.origin().ascii_serialization())
    });
    if let Some(e) = endpoint {
        loader = loader.endpoint_url(e);
    }
    let conf = loader.load().await;
    if conf.region().is_none() {
        return Err(Error::invalid_arg(
            "--region",
            "no AWS region",
        )
        .hinted("set AWS_REGION or a region in the AWS profile, pass --region, or use a queue URL or ARN"));
    }
    let conf = aws_sdk_sqs::config::Builder::from(&conf)
        .interceptor(CountRequests)
        .build();
    Ok(Client::from_conf(conf))
}

static REQUESTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// SQS API requests sent by this process (attempts, retries included), for the benchmark.
pub fn requests() -> u64 {
    REQUESTS.load(std::sync::atomic::Ordering::Relaxed)
}

#[derive(Debug)]
struct CountRequests;

impl aws_sdk_sqs::config::Intercept for CountRequests {
    fn name(&self) -> &'static str {
        "dlqctl-count-requests"
    }

    fn read_before_transmit(
        &self,
        _ctx: &aws_sdk_sqs::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _rc: &aws_sdk_sqs::config::RuntimeComponents,
        _cfg: &mut aws_sdk_sqs::config::ConfigBag,
    ) -> std::result::Result<(), aws_sdk_sqs::error::BoxError> {
        REQUESTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}
