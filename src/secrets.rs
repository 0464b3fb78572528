//! Secrets never reach the terminal, and ordinary words stay readable.
//!
//! Two layers. [`redact`] hides the password of anything URL-shaped by its structure (user
//! info, `password=`-like parameters), and every address goes through it (or through the
//! address's own `Display`) before it is shown. Underneath, everything written to stderr
//! (errors, hints, logs, including the libraries' own log lines) passes [`scrub`], which hides
//! secrets where they stand as secrets, whatever their value: the user info of every URL in the
//! text, the value of every `password=`/`secret=`/`token=`-like key (`key=value`, `"key":
//! "value"`, `key: Some("value")`). Every secret dlqctl is given (URL passwords, `PGPASSWORD`,
//! secret Kafka properties, AWS keys) is also [`register`]ed, and a registered secret that is
//! distinctive (see [`distinctive`]) is hidden wherever it turns up in the text, which catches
//! what the structure did not foresee (a driver that logs a parameter's value in prose). A short
//! plain word (`postgres`, `testing`) is not hidden in prose: hiding it there would blank the
//! URL scheme, a rule name, a file name, and a reader learns nothing from `***://***@`.
use std::sync::{LazyLock, RwLock};

use regex::Regex;

/// Query parameters whose value is a secret, in any URL dlqctl shows.
const SECRET_PARAMS: &[&str] = &[
    "password",
    "sslpassword",
    "sasl.password",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "sasl.oauthbearer.client.secret",
    "sasl.jaas.config",
    "secret",
    "token",
    "x-amz-security-token",
    "x-amz-signature",
];

/// Whether a parameter or property name holds a secret (`sasl.password`, `sslpassword`,
/// `ssl.key.password`, `…secret…`, `…token…`).
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    SECRET_PARAMS.contains(&n.as_str())
        || n.contains("password")
        || n.contains("secret")
        || n.contains("token")
        || n.contains("jaas")
        || n.ends_with(".key.pem")
        || n == "ssl.key.pem"
}

/// Hide the password of anything URL-shaped: the user info's password (with or without `//`,
/// with `@` inside the password), and the value of every secret query parameter. What cannot
/// be told apart is hidden too: showing too little is a nuisance, showing a password is a leak.
pub fn redact(s: &str) -> String {
    let mut out = redact_userinfo(s);
    out = redact_params(&out);
    scrub(&out)
}

fn redact_userinfo(s: &str) -> String {
    // scheme ":" ["//"] userinfo "@" …, the scheme being letters, digits, + - .
    let Some(colon) = s.find(':') else {
        return s.to_string();
    };
    let scheme = &s[..colon];
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return s.to_string();
    }
    let mut start = colon + 1;
    if s[start..].starts_with("//") {
        start += 2;
    } else if s[start..].starts_with('/') {
        start += 1;
    }
    let rest = &s[start..];
    // The user name ends at the first ':'; it cannot hold '/', '?', '#' or '@'.
    let Some(pw_at) = rest.find(':') else {
        return s.to_string();
    };
    let user = &rest[..pw_at];
    if user.contains(['/', '?', '#', '@']) {
        return s.to_string();
    }
    // The password runs to the last '@' (a password may hold '@', '/', '?' unencoded).
    let Some(at) = rest.rfind('@') else {
        return s.to_string();
    };
    if at <= pw_at {
        return s.to_string();
    }
    format!("{}{}:***{}", &s[..start], user, &rest[at..])
}

fn redact_params(s: &str) -> String {
    let Some(q) = s.find('?') else {
        return s.to_string();
    };
    let (head, query) = s.split_at(q + 1);
    let parts: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, _)) if is_secret_name(&percent_decode(k)) => format!("{k}=***"),
            _ => pair.to_string(),
        })
        .collect();
    format!("{head}{}", parts.join("&"))
}

fn percent_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("k={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| s.to_string())
}

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Whether a secret is distinctive enough to be hidden wherever it appears in free text: twelve
/// characters or more, or six or more mixing letters with digits or symbols (`hunter2`,
/// `S3cret!`, any generated password or key). A plain word (`postgres`, `dlqctl`, `testing`)
/// is not: it is hidden only where it stands as a secret (see [`scrub`]).
pub fn distinctive(secret: &str) -> bool {
    let n = secret.chars().count();
    let letters = secret.chars().any(char::is_alphabetic);
    let others = secret.chars().any(|c| !c.is_alphabetic());
    n >= 12 || (n >= 6 && letters && others)
}

/// Remember a secret, so that [`scrub`] hides it wherever it turns up, when it is
/// [`distinctive`]; a secret that is not is still hidden where it stands as one (user info, a
/// secret parameter or key), by the structure around it.
pub fn register(secret: &str) {
    if !distinctive(secret) {
        return;
    }
    let mut forms = vec![secret.to_string()];
    // As it appears inside a URL, too.
    let encoded: String = url::form_urlencoded::byte_serialize(secret.as_bytes()).collect();
    if encoded != secret {
        forms.push(encoded);
    }
    let mut all = SECRETS.write().unwrap_or_else(|p| p.into_inner());
    for f in forms {
        if !all.contains(&f) {
            all.push(f);
        }
    }
    // Longest first, so that a secret containing another is replaced whole.
    all.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// Register the secrets of the environment dlqctl runs in: `PGPASSWORD`, the AWS keys (the
/// access key id too), and
/// a password in an endpoint URL (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_SQS`).
pub fn register_environment() {
    for var in [
        "PGPASSWORD",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
    ] {
        if let Ok(v) = std::env::var(var) {
            register(&v);
        }
    }
    for var in ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS"] {
        if let Ok(v) = std::env::var(var) {
            register_url_password(&v);
        }
    }
}

/// Register the password of a URL (an endpoint given with user info), if it has one: the SDK
/// logs endpoints at debug level.
pub fn register_url_password(url: &str) {
    if let Ok(u) = url::Url::parse(url)
        && let Some(p) = u.password()
    {
        register(p);
        if let Ok(decoded) = percent_encoding::percent_decode_str(p).decode_utf8() {
            register(&decoded);
        }
    }
}

/// Anything URL-shaped in free text (a scheme, `:`, then no space or quote).
static URL_IN_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"[A-Za-z][A-Za-z0-9+.-]*:/{0,2}[^\s`'"<>()\[\]]*@[^\s`'"<>()\[\]]*"#)
        .expect("regex")
});

/// What, in a key's name, makes its value a secret. An AWS access key id is one too (with the
/// secret key it names an account's credentials): the SDK's debug lines show it as
/// `access_key_id: "AKIA…"`, a signed request as `Credential=AKIA…/…`, STS as `AccessKeyId`.
const SECRET_KEYS: &str = "password|passwd|secret|token|jaas|access_key_id|accesskeyid|credential";

/// `key=value` where the key names a secret (`password=`, `sasl.password=`, `PGPASSWORD=`,
/// `x-amz-security-token=`).
static SECRET_ASSIGNED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r#"(?i)([\w.-]*(?:{SECRET_KEYS})[\w.-]*=)([^\s&,;"'`)\]]+)"#
    ))
    .expect("regex")
});

/// `"key": "value"`, `key: "value"`, `key: Some("value")` where the key names a secret (JSON,
/// and the `Debug` form of a configuration).
static SECRET_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r#"(?i)("?[\w.-]*(?:{SECRET_KEYS})[\w.-]*"?\s*:\s*(?:Some\()?")((?:[^"\\]|\\.)*)(")"#,
    ))
    .expect("regex")
});

/// Hide every secret in `text`: the user info of each URL, the value of each secret key, and
/// each registered [`distinctive`] secret, by `***`.
pub fn scrub(text: &str) -> String {
    let mut out = text.to_string();
    if out.contains('@') {
        out = URL_IN_TEXT
            .replace_all(&out, |c: &regex::Captures| redact_userinfo(&c[0]))
            .into_owned();
    }
    if SECRET_ASSIGNED.is_match(&out) {
        out = SECRET_ASSIGNED
            .replace_all(&out, |c: &regex::Captures| format!("{}***", &c[1]))
            .into_owned();
    }
    if SECRET_FIELD.is_match(&out) {
        out = SECRET_FIELD
            .replace_all(&out, |c: &regex::Captures| format!("{}***{}", &c[1], &c[3]))
            .into_owned();
    }
    let all = SECRETS.read().unwrap_or_else(|p| p.into_inner());
    for s in all.iter() {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), "***");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_user_info() {
        assert_eq!(redact("postgres://a:b@h/d"), "postgres://a:***@h/d");
        assert_eq!(
            redact("postgres://a:b@h:99999/d"),
            "postgres://a:***@h:99999/d"
        );
        assert_eq!(redact("postgres://a@h/d"), "postgres://a@h/d");
        // No authority (`scheme:/…`), and an '@' inside the password.
        assert_eq!(
            redact("postgres:/app:S3cret@db/app"),
            "postgres:/app:***@db/app"
        );
        assert_eq!(
            redact("postgres://u:p@ss@word@h/db?table=t"),
            "postgres://u:***@h/db?table=t"
        );
        assert!(!redact("postgres://u:S3cret@/db?host=/run").contains("S3cret"));
        // A host:port without user info is left alone.
        assert_eq!(redact("kafka://h:9092,i:9093/t"), "kafka://h:9092,i:9093/t");
        assert_eq!(
            redact("https://sqs.eu-west-1.amazonaws.com/1/q"),
            "https://sqs.eu-west-1.amazonaws.com/1/q"
        );
    }

    #[test]
    fn secret_parameters() {
        assert_eq!(
            redact("postgres://u@h/db?password=S3cret&table=t"),
            "postgres://u@h/db?password=***&table=t"
        );
        assert_eq!(
            redact("postgres://u@h/db?table=t&sslpassword=k3y"),
            "postgres://u@h/db?table=t&sslpassword=***"
        );
        assert_eq!(
            redact("postgres://u@h/db?pass%77ord=x"),
            "postgres://u@h/db?pass%77ord=***"
        );
    }

    #[test]
    fn a_plain_word_is_hidden_only_where_it_stands_as_a_secret() {
        register("postgres");
        let text = "error: authentication failed on postgres://postgres@127.0.0.1:5432/postgres: see docs/postgres.md (rule postgres-unavailable)";
        assert_eq!(scrub(text), text, "no secret in it: nothing hidden");
        assert_eq!(
            scrub("connecting to postgres://app:postgres@db:5432/app"),
            "connecting to postgres://app:***@db:5432/app"
        );
        assert_eq!(
            scrub("PGPASSWORD=postgres host=db password=postgres sslmode=require"),
            "PGPASSWORD=*** host=db password=*** sslmode=require"
        );
        assert_eq!(
            scrub(
                r#"{"user": "app", "password": "postgres"} PgConn { password: Some("postgres") }"#
            ),
            r#"{"user": "app", "password": "***"} PgConn { password: Some("***") }"#
        );
        // Prose about passwords keeps its words.
        let prose = "password authentication failed; the password came from PGPASSWORD";
        assert_eq!(scrub(prose), prose);
    }

    /// Operator report (op5): `-vv` showed the AWS access key id in the SDK's debug lines.
    /// By structure too, for a key read from a profile (not registered from the environment).
    #[test]
    fn aws_access_key_ids_are_hidden_where_they_stand_as_keys() {
        assert_eq!(
            scrub(
                r#"Identity { data: Credentials { provider_name: "Profile", access_key_id: "AKIAPROFILEKEY12345", secret_access_key: "***" } }"#
            ),
            r#"Identity { data: Credentials { provider_name: "Profile", access_key_id: "***", secret_access_key: "***" } }"#
        );
        assert_eq!(
            scrub(
                "authorization: AWS4-HMAC-SHA256 Credential=AKIAPROFILEKEY12345/20261206/us-east-1/sqs/aws4_request, SignedHeaders=host"
            ),
            "authorization: AWS4-HMAC-SHA256 Credential=***, SignedHeaders=host"
        );
        assert_eq!(
            scrub(r#"{"AccessKeyId": "ASIASTSKEY1234567890"} AWS_ACCESS_KEY_ID=AKIAENV"#),
            r#"{"AccessKeyId": "***"} AWS_ACCESS_KEY_ID=***"#
        );
    }

    #[test]
    fn distinctive_secrets_are_hidden_everywhere() {
        for s in [
            "hunter2",
            "S3cret!",
            "Pl4inPw-Tq7RzXk",
            "correcthorsebatterystaple",
        ] {
            assert!(distinctive(s), "{s}");
        }
        for s in ["postgres", "dlqctl", "testing", "admin", "CamelCase"] {
            assert!(!distinctive(s), "{s}");
        }
    }

    #[test]
    fn registered_secrets_are_scrubbed() {
        register("hunter2-registered");
        assert_eq!(
            scrub("ignoring key=sslpassword value=hunter2-registered"),
            "ignoring key=sslpassword value=***"
        );
        assert_eq!(scrub("nothing here"), "nothing here");
        register("a b&c-registered");
        assert_eq!(scrub("x=a+b%26c-registered"), "x=***");
    }
}
