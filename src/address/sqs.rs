//! The SQS forms: a queue URL (`https://sqs.REGION.amazonaws.com/ACCOUNT/NAME`, or an
//! emulator's), an ARN (`arn:aws:sqs:REGION:ACCOUNT:NAME`), and the queue name rules
//! `sqs://NAME` shares.

use url::Url;

use super::SqsAddress;
use super::form::{Form, invalid};
use crate::error::Result;

/// The forms as `--help` lists them.
pub(super) fn usage() -> String {
    "sqs://NAME | https://sqs.REGION.amazonaws.com/ACCOUNT/NAME | arn:aws:sqs:REGION:ACCOUNT:NAME"
        .into()
}

/// `sqs://NAME`, a queue URL (`http[s]://`) or an ARN (`arn:`).
pub(super) fn parse(input: &str) -> Result<SqsAddress> {
    let bad = |reason: &str| invalid(input, reason);
    let scheme = input.split(':').next().unwrap_or_default();
    if scheme.eq_ignore_ascii_case("arn") {
        return parse_sqs_arn(input)
            .ok_or_else(|| bad("an SQS ARN looks like arn:aws:sqs:REGION:ACCOUNT:NAME"));
    }
    if !scheme.eq_ignore_ascii_case("sqs") {
        return parse_sqs_url(input);
    }
    let name = &input["sqs://".len()..];
    let name = name.trim_end_matches('/');
    if name.is_empty() || name.contains('/') {
        return Err(bad("sqs://NAME takes a bare queue name"));
    }
    validate_sqs_name(name).map_err(|r| bad(&r))?;
    Ok(SqsAddress {
        name: name.to_string(),
        url: None,
        region: None,
        account: None,
    })
}

fn parse_sqs_url(input: &str) -> Result<SqsAddress> {
    let bad = |reason: &str| invalid(input, reason);
    if url::Url::parse(input).is_ok_and(|u| !u.username().is_empty() || u.password().is_some()) {
        // A queue URL never holds credentials (and would be shown with them).
        return Err(bad(
            "an SQS queue URL takes no user or password: credentials come from the AWS configuration (AWS_PROFILE, --profile, the credential chain)",
        ));
    }
    // The url crate drops tabs and line breaks inside the input, but the queue URL is kept as
    // given: refuse them (tests/it/bad_input.rs found `https://\na/0/0` accepted).
    if input.chars().any(char::is_control) {
        return Err(bad(
            "the URL has a control character (a line break, a tab) in it",
        ));
    }
    let url = Url::parse(input).map_err(|e| bad(&e.to_string()))?;
    let segs: Vec<&str> = url
        .path_segments()
        .map(|s| s.filter(|p| !p.is_empty()).collect())
        .unwrap_or_default();
    let [account, name] = segs.as_slice() else {
        return Err(bad(
            "an SQS queue URL looks like https://sqs.REGION.amazonaws.com/ACCOUNT/NAME",
        ));
    };
    validate_sqs_name(name).map_err(|r| bad(&r))?;
    let host = url.host_str().unwrap_or_default();
    let region = host
        .strip_prefix("sqs.")
        .and_then(|h| h.split('.').next())
        .filter(|r| r.contains('-'))
        .map(str::to_string);
    Ok(SqsAddress {
        name: name.to_string(),
        url: Some(input.trim_end_matches('/').to_string()),
        region,
        account: Some(account.to_string()),
    })
}

fn parse_sqs_arn(input: &str) -> Option<SqsAddress> {
    let parts: Vec<&str> = input.split(':').collect();
    if parts.len() != 6 || parts[2] != "sqs" || parts[3].is_empty() || parts[4].is_empty() {
        return None;
    }
    validate_sqs_name(parts[5]).ok()?;
    Some(SqsAddress {
        name: parts[5].to_string(),
        url: None,
        region: Some(parts[3].to_string()),
        account: Some(parts[4].to_string()),
    })
}

fn validate_sqs_name(name: &str) -> std::result::Result<(), String> {
    let base = name.strip_suffix(".fifo").unwrap_or(name);
    if name.len() > 80
        || base.is_empty()
        || !base
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "`{name}` is not an SQS queue name (1-80 of [a-zA-Z0-9_-], FIFO names end in .fifo)"
        ));
    }
    Ok(())
}

impl std::fmt::Display for SqsAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.url, &self.region, &self.account) {
            (Some(u), _, _) => write!(f, "{u}"),
            // An ARN stays an ARN: the region and account tell two same-named queues apart.
            (None, Some(r), Some(a)) => write!(f, "arn:aws:sqs:{r}:{a}:{}", self.name),
            _ => write!(f, "sqs://{}", self.name),
        }
    }
}

impl Form for SqsAddress {
    /// The queue's name.
    fn brief(&self) -> String {
        self.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use crate::address::Address;

    #[test]
    fn sqs_forms() {
        let Address::Sqs(s) = Address::parse("sqs://orders-dlq").unwrap() else {
            panic!()
        };
        assert_eq!(s.name, "orders-dlq");
        let Address::Sqs(s) =
            Address::parse("https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo").unwrap()
        else {
            panic!()
        };
        assert_eq!(s.region.as_deref(), Some("eu-west-1"));
        assert_eq!(s.account.as_deref(), Some("123456789012"));
        let Address::Sqs(s) = Address::parse("arn:aws:sqs:us-east-1:123456789012:q").unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (s.name.as_str(), s.region.as_deref()),
            ("q", Some("us-east-1"))
        );
        assert!(Address::parse("sqs://bad/name").is_err());
        assert!(Address::parse("sqs://has space").is_err());
        assert!(Address::parse("arn:aws:sns:us-east-1:1:q").is_err());
    }
}
