//! Bad input never panics and never changes anything: property tests of the parsers, and a
//! table of bad command lines with their exit codes.
//!
//! The properties run the library's parsers in this process (addresses, durations, rates, the
//! config file, classification rules, JSON Lines records) on generated input: no panic, and an
//! error is always exit 2 with a message on one line. They use a fixed seed and keep no
//! regression files, so a run is repeatable and writes nothing next to the sources. The table
//! runs the real binary on bad command lines against a seeded dead-letter table and checks the
//! exit code, the one-line `error:`, and that neither table changed.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use chrono::{DateTime, Utc};
use proptest::prelude::*;
use proptest::test_runner::{Config as PropConfig, RngSeed, TestCaseError};
use serde_json::{Value, json};
use sqlx::AssertSqlSafe;

use dlqctl::address::Address;
use dlqctl::classify::Classifier;
use dlqctl::config::{
    Config, MAX_DURATION, Retention, RuleConfig, RuleKind, RuleMatch, parse_duration,
    parse_retention,
};
use dlqctl::message::{AttrValue, Attribute, ErrorInfo, Message, Record};
use dlqctl::settings::{MAX_RATE, MIN_RATE, parse_rate};

use crate::harness::{Db, Sandbox, pg_url};

// ---------------------------------------------------------------------------------------------
// Shared checks

/// 256 cases from a fixed seed (the same cases every run), no regression files. To explore
/// further, set PROPTEST_CASES and PROPTEST_RNG_SEED (proptest's own variables).
fn prop_config() -> PropConfig {
    let mut c = PropConfig {
        failure_persistence: None,
        ..PropConfig::default()
    };
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = 256;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        c.rng_seed = RngSeed::Fixed(0x00d1_cc71);
    }
    c
}

/// A message shown to the user stays on its line: no line feed, no carriage return.
fn one_line(what: &str, s: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        !s.contains('\n') && !s.contains('\r'),
        "{} is not one line: {:?}",
        what,
        s
    );
    Ok(())
}

/// An error of the library: exit 2, message and each hint on one line.
fn usage_error(e: &dlqctl::error::Error) -> Result<(), TestCaseError> {
    prop_assert_eq!(e.exit_code(), 2, "{}", e);
    one_line("the error", &e.to_string())?;
    for h in e.hints() {
        one_line("the hint", &h)?;
    }
    Ok(())
}

/// Short strings of every kind: plain, URL punctuation, any Unicode, control characters.
fn piece() -> BoxedStrategy<String> {
    prop_oneof![
        4 => "[a-z0-9_.-]{0,8}",
        3 => "[a-zA-Z0-9%@:/?#&=\\[\\] .,;'\"\\\\-]{0,10}",
        2 => any::<String>().prop_map(|s| s.chars().take(10).collect()),
        1 => "[a-z]{0,3}(\n|\r\n|\r)[a-z]{0,3}",
        1 => "[a-z]{0,3}[\\x00-\\x1f\\x7f\\u{85}\\u{2028}][a-z]{0,3}",
        1 => "%[0-9A-Fa-fzZ]{0,2}[a-z]{0,2}",
        1 => Just(String::new()),
    ]
    .boxed()
}

fn pick(items: &'static [&'static str]) -> BoxedStrategy<String> {
    prop::sample::select(items).prop_map(String::from).boxed()
}

fn number() -> BoxedStrategy<String> {
    prop_oneof![
        (0u32..100).prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        pick(&[
            "4294967298",
            "2147483648",
            "2147483647",
            "-1",
            "-0",
            "+5",
            "0x10",
            "1e3",
            "99999999999999999999999",
            " 1",
            "",
        ]),
    ]
    .boxed()
}

/// RFC 3339-looking times, in and out of range.
fn time_str() -> BoxedStrategy<String> {
    (
        0u32..=10_001,
        0u32..=13,
        0u32..=32,
        (0u32..=25, 0u32..=60, 0u32..=61),
        pick(&["", ".5", ".123456789", ".1234567891234"]),
        pick(&["Z", "z", "+00:00", "-23:59", "+24:00", "", "+5"]),
    )
        .prop_map(|(y, mo, d, (h, mi, s), frac, tz)| {
            format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{frac}{tz}")
        })
        .boxed()
}

// ---------------------------------------------------------------------------------------------
// Addresses

const PG_KEYS: &[&str] = &[
    "table",
    "system",
    "queue",
    "source",
    "schema",
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "service",
    "statement_cache",
    "sslmode",
    "ssl-mode",
    "sslrootcert",
    "ssl-ca",
    "application_name",
    "options",
    "options[search_path]",
    "statement-cache-capacity",
    "connect_timeout",
    "sslpassword",
    "qeue",
    "shema",
    "tabel",
    "sytem",
    "TABLE",
];

const PG_VALUES: &[&str] = &[
    "public.dead_letters",
    "app.dlq",
    "\"Odd\".\"Name\"",
    "a.b.c",
    "x;drop table y",
    "river",
    "oban",
    "pgmq",
    "graphile_worker",
    "pg_boss",
    "sidekiq",
    "RIVER",
    "require",
    "verify-full",
    "maybe",
    "0",
    "1",
    "off",
    "99999",
    "127.0.0.1",
    "::1",
    "/var/run/postgresql",
    "%0A",
    "%FF",
    "%zz",
    "a%00b",
];

fn pg_address() -> BoxedStrategy<String> {
    let value = prop_oneof![pick(PG_VALUES), piece()];
    let params =
        prop::collection::vec((prop_oneof![3 => pick(PG_KEYS), 1 => piece()], value), 0..5);
    (
        pick(&["postgres", "postgresql", "POSTGRES", "Postgres", "postgre"]),
        prop::option::of((piece(), prop::option::of(piece()))),
        prop_oneof![
            pick(&[
                "localhost",
                "127.0.0.1",
                "[::1]",
                "[::1",
                "db.example",
                "%2Ftmp",
                ""
            ]),
            piece()
        ],
        prop::option::of(prop_oneof![number(), piece()]),
        prop::option::of(prop_oneof![pick(&["app", "a/b", "%2F", ""]), piece()]),
        params,
        prop::option::of(piece()),
    )
        .prop_map(|(scheme, userinfo, host, port, db, params, fragment)| {
            let mut s = format!("{scheme}://");
            if let Some((u, pw)) = userinfo {
                s.push_str(&u);
                if let Some(pw) = pw {
                    s.push(':');
                    s.push_str(&pw);
                }
                s.push('@');
            }
            s.push_str(&host);
            if let Some(p) = port {
                s.push(':');
                s.push_str(&p);
            }
            if let Some(d) = db {
                s.push('/');
                s.push_str(&d);
            }
            if !params.is_empty() {
                s.push('?');
                let pairs: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                s.push_str(&pairs.join("&"));
            }
            if let Some(f) = fragment {
                s.push('#');
                s.push_str(&f);
            }
            s
        })
        .boxed()
}

fn kafka_address() -> BoxedStrategy<String> {
    let host = (
        prop_oneof![
            pick(&["broker", "127.0.0.1", "[::1]", "b-1.kafka", ""]),
            piece()
        ],
        prop::option::of(prop_oneof![number(), piece()]),
    )
        .prop_map(|(h, p)| match p {
            Some(p) => format!("{h}:{p}"),
            None => h,
        });
    let key = prop_oneof![
        3 => pick(&["partition", "from", "to", "since", "until", "offset", "partiton", "PARTITION"]),
        1 => piece(),
    ];
    let value = prop_oneof![number(), time_str(), piece()];
    let pair = (key, prop::option::of(value)).prop_map(|(k, v)| match v {
        Some(v) => format!("{k}={v}"),
        None => k,
    });
    (
        pick(&["kafka", "KAFKA", "Kafka"]),
        prop::collection::vec(host, 0..4),
        prop_oneof![
            3 => "[a-zA-Z0-9._-]{1,20}",
            1 => "[a-z]{245,255}",
            2 => piece(),
            1 => Just(String::new()),
        ],
        prop::option::of(prop::collection::vec(pair, 0..5)),
        any::<bool>(),
    )
        .prop_map(|(scheme, hosts, topic, query, slash)| {
            let mut s = format!("{scheme}://{}", hosts.join(","));
            if !topic.is_empty() || slash {
                s.push('/');
            }
            s.push_str(&topic);
            if let Some(q) = query {
                s.push('?');
                s.push_str(&q.join("&"));
            }
            s
        })
        .boxed()
}

fn sqs_address() -> BoxedStrategy<String> {
    let name = prop_oneof![
        3 => "[a-zA-Z0-9_-]{1,12}(\\.fifo)?",
        1 => "[a-z]{78,82}",
        2 => piece(),
    ];
    prop_oneof![
        (pick(&["sqs", "SQS"]), name.clone(), pick(&["", "/", "//"]))
            .prop_map(|(s, n, tail)| format!("{s}://{n}{tail}")),
        (
            pick(&["https", "http", "HTTPS"]),
            prop_oneof![
                pick(&[
                    "sqs.eu-west-1.amazonaws.com",
                    "sqs.us-east-1.amazonaws.com",
                    "localhost:4566",
                    "127.0.0.1:54330",
                    "sqs.amazonaws.com",
                    ""
                ]),
                piece()
            ],
            prop::collection::vec(prop_oneof![number(), name.clone(), piece()], 0..4),
        )
            .prop_map(|(scheme, host, segs)| format!("{scheme}://{host}/{}", segs.join("/"))),
        (
            pick(&[
                "arn:aws:sqs",
                "arn:aws-cn:sqs",
                "arn:aws:sns",
                "arn::sqs",
                "arn"
            ]),
            prop::collection::vec(
                prop_oneof![pick(&["us-east-1", "123456789012", ""]), name, piece()],
                0..5
            ),
        )
            .prop_map(|(head, parts)| format!("{head}:{}", parts.join(":"))),
    ]
    .boxed()
}

fn file_address() -> BoxedStrategy<String> {
    prop_oneof![
        piece().prop_map(|p| format!("file:{p}")),
        piece().prop_map(|p| format!("file://{p}")),
        piece().prop_map(|p| format!("{p}.jsonl")),
        piece().prop_map(|p| format!("{p}.ndjson")),
        pick(&["-", " - ", "file:", "file://", ".jsonl", "backup.JSONL"]),
    ]
    .boxed()
}

fn any_address() -> BoxedStrategy<String> {
    prop_oneof![
        3 => pg_address(),
        3 => kafka_address(),
        2 => sqs_address(),
        1 => file_address(),
        1 => any::<String>(),
        1 => (piece(), piece()).prop_map(|(a, b)| format!("{a}://{b}")),
        1 => (piece(), pick(&["postgres://u@h/db?table=t", "kafka://a:1/t", "sqs://q"]), piece())
            .prop_map(|(a, b, c)| format!("{a}{b}{c}")),
    ]
    .boxed()
}

fn check_address(input: &str) -> Result<(), TestCaseError> {
    let a = match Address::parse(input) {
        Err(e) => return usage_error(&e),
        Ok(a) => a,
    };
    let shown = a.to_string();
    match &a {
        // A file path is the user's own name for the file, shown as given.
        Address::File(_) => {}
        // What identifies a queue or a slice shows on one line and parses back to itself (the
        // display is what plans, summaries and target lookups use). The password shows as ***.
        Address::Postgres(p) => {
            one_line("an accepted address", &shown)?;
            let again = Address::parse(&shown);
            let same = match &again {
                Ok(Address::Postgres(q)) => {
                    let mut q = q.clone();
                    if p.conn.password.is_some() {
                        q.conn.password = p.conn.password.clone();
                    }
                    q == *p
                }
                _ => false,
            };
            prop_assert!(
                same,
                "{:?} shows as {:?}, which parses to {:?}",
                input,
                shown,
                again
            );
        }
        Address::Kafka(_) => {
            one_line("an accepted address", &shown)?;
            let again = Address::parse(&shown);
            prop_assert!(
                again.as_ref().ok() == Some(&a),
                "{:?} shows as {:?}, which parses to {:?}",
                input,
                shown,
                again
            );
        }
        // A Redis job queue: one line, parses back to itself (the password shows as ***).
        Address::Redis(r) => {
            one_line("an accepted address", &shown)?;
            let again = Address::parse(&shown);
            let same = match &again {
                Ok(Address::Redis(q)) => {
                    let mut q = q.clone();
                    q.password = r.password.clone();
                    q == *r
                }
                _ => false,
            };
            prop_assert!(
                same,
                "{:?} shows as {:?}, which parses to {:?}",
                input,
                shown,
                again
            );
        }
        // RabbitMQ (issue 27): shown without its password, and parses back to itself.
        Address::Rabbitmq(r) => {
            one_line("an accepted address", &shown)?;
            prop_assert!(
                !shown.contains(':')
                    || r.password
                        .as_deref()
                        .is_none_or(|p| p.len() < 4 || !shown.contains(p))
            );
            let again = Address::parse(&shown);
            let same = match &again {
                Ok(Address::Rabbitmq(t)) => {
                    let mut t = t.clone();
                    t.password = r.password.clone();
                    t == *r
                }
                _ => false,
            };
            prop_assert!(
                same,
                "{:?} shows as {:?}, which parses to {:?}",
                input,
                shown,
                again
            );
        }
        // An ARN shows as sqs://NAME: region and account are not part of the display.
        Address::Sqs(s) => {
            one_line("an accepted address", &shown)?;
            let again = Address::parse(&shown);
            prop_assert!(
                matches!(&again, Ok(Address::Sqs(t)) if t.name == s.name && t.url == s.url),
                "{:?} shows as {:?}, which parses to {:?}",
                input,
                shown,
                again
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(prop_config())]

    #[test]
    fn addresses_never_panic_and_fail_as_usage_errors(input in any_address()) {
        check_address(&input)?;
        // The same with surrounding white space, which the parser trims.
        check_address(&format!(" \t{input}\n"))?;
    }

    #[test]
    fn postgres_urls_parse_or_say_why_on_one_line(input in pg_address()) {
        let own = ["table", "system", "queue", "source", "schema"];
        match dlqctl::pgconn::PgConn::parse(&input, &own) {
            Err(reason) => one_line("the reason", &reason)?,
            Ok((conn, mine)) => {
                for (k, _) in &mine {
                    prop_assert!(own.contains(&k.as_str()), "{} is not dlqctl's", k);
                }
                if let Some(p) = conn.password.as_deref().filter(|p| p.len() >= 4) {
                    // (The same text may show as another part: `dbname=x&password=x`.)
                    let shown = conn.to_string();
                    let elsewhere = dlqctl::pgconn::PgConn { password: None, ..conn.clone() }
                        .to_string()
                        .matches(p)
                        .count();
                    prop_assert!(
                        shown.matches(p).count() <= elsewhere,
                        "{:?} shows its password: {}",
                        input,
                        shown
                    );
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Durations and rates

fn duration_input() -> BoxedStrategy<String> {
    let unit = pick(&[
        "ns", "us", "ms", "s", "sec", "m", "min", "h", "hr", "d", "day", "w", "week", "M", "month",
        "y", "year", "years", "parsecs", "",
    ]);
    let part = (number(), unit).prop_map(|(n, u)| format!("{n}{u}"));
    prop_oneof![
        4 => prop::collection::vec(part, 1..4).prop_map(|p| p.join(" ")),
        1 => (1u64..=200, pick(&["y", "years", "d"])).prop_map(|(n, u)| format!("{n}{u}")),
        1 => pick(&["forever", "infinite", "never", "200000000000y", "100y", "101y", "0s", "", " "]),
        1 => piece(),
        1 => any::<String>(),
    ]
    .boxed()
}

fn rate_input() -> BoxedStrategy<String> {
    let n = prop_oneof![
        number(),
        any::<f64>().prop_map(|f| f.to_string()),
        any::<f64>().prop_map(|f| format!("{f:e}")),
        pick(&[
            "1e-300",
            "1e300",
            "NaN",
            "inf",
            "-inf",
            "0",
            "0.0",
            "-0",
            "1e-5",
            "0.0002778"
        ]),
    ];
    prop_oneof![
        4 => (n, prop::option::of(pick(&["s", "sec", "m", "min", "h", "week", "", " s", "s/s"])))
            .prop_map(|(n, u)| match u {
                Some(u) => format!("{n}/{u}"),
                None => n,
            }),
        1 => piece(),
        1 => any::<String>(),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(prop_config())]

    #[test]
    fn durations_stay_within_the_limit(input in duration_input()) {
        match parse_duration(&input) {
            Ok(d) => prop_assert!(d <= MAX_DURATION, "{:?} -> {:?}", input, d),
            Err(e) => one_line("the error", &e)?,
        }
        match parse_retention(&input) {
            Ok(Retention::For(d)) => prop_assert!(d <= MAX_DURATION, "{:?} -> {:?}", input, d),
            Ok(Retention::Forever) => {}
            Err(e) => one_line("the error", &e)?,
        }
    }

    #[test]
    fn rates_are_finite_and_in_range(input in rate_input()) {
        match parse_rate(&input) {
            Ok(r) => prop_assert!(
                r.is_finite() && (MIN_RATE..=MAX_RATE).contains(&r),
                "{:?} -> {}", input, r
            ),
            Err(e) => one_line("the error", &e)?,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The config file and classification rules

/// A TOML basic string holding exactly `s`.
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn regex_input() -> BoxedStrategy<String> {
    prop_oneof![
        3 => "[a-z()\\[\\]{}*+?|\\\\^$.0-9,:<>PpdDwWsSx-]{0,12}",
        1 => pick(&[
            "(?i)timed? ?out|429|503",
            "(unclosed",
            "[z-a]",
            "a{99999999}",
            "(?P<n>x)(?P<n>y)",
            "\\p{Nope}",
            "\\",
            "",
            "(?<!x)y",
            "x{2,1}",
        ]),
        1 => piece(),
    ]
    .boxed()
}

fn toml_value() -> BoxedStrategy<String> {
    prop_oneof![
        3 => piece().prop_map(|s| toml_str(&s)),
        3 => duration_input().prop_map(|s| toml_str(&s)),
        3 => any_address().prop_map(|s| toml_str(&s)),
        2 => pick(&[
            "attribute:message_id",
            "header:x-id",
            "json:/order_id",
            "json:order_id",
            "native",
            "attribute:",
            "body:x",
        ])
        .prop_map(|s| toml_str(&s)),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<bool>().prop_map(|b| b.to_string()),
        1 => pick(&[
            "[]",
            "{}",
            "[\"a\", 1]",
            "{ error = \"x\" }",
            "{ id = \"pk\" }",
            "1979-05-27T07:32:00Z",
            "nan",
            "inf",
            "1.5",
            "'literal'",
            "\"\"\"multi\nline\"\"\"",
        ]),
        1 => regex_input().prop_map(|s| toml_str(&s)),
    ]
    .boxed()
}

const QUEUE_KEYS: &[&str] = &[
    "dlq",
    "url",
    "source",
    "id",
    "handler_timeout",
    "replay_window",
    "dlq_retention",
    "time_to_dead_letter",
    "handler_timout",
    "dead_letter",
];

const DEDUPE_KEYS: &[&str] = &[
    "url",
    "table",
    "id_column",
    "time_column",
    "retention",
    "retension",
];

fn toml_entries(keys: &'static [&'static str]) -> BoxedStrategy<Vec<(String, String)>> {
    let key = prop_oneof![
        6 => pick(keys),
        1 => piece().prop_map(|k| toml_str(&k)),
    ];
    prop::collection::vec((key, toml_value()), 0..6).boxed()
}

fn toml_rule() -> BoxedStrategy<String> {
    (
        prop::option::of(piece()),
        prop::option::of(prop_oneof![
            pick(&["transient", "permanent", "Transient", "sometimes", ""]),
            piece()
        ]),
        prop::option::of(regex_input()),
        prop::option::of(regex_input()),
        prop::collection::btree_map(piece(), regex_input(), 0..2),
        any::<bool>(),
    )
        .prop_map(|(name, kind, error, body, attrs, typo)| {
            let mut s = String::new();
            if let Some(n) = name {
                s.push_str(&format!("name = {}\n", toml_str(&n)));
            }
            if let Some(k) = kind {
                s.push_str(&format!("kind = {}\n", toml_str(&k)));
            }
            let mut m = Vec::new();
            if let Some(e) = error {
                m.push(format!("error = {}", toml_str(&e)));
            }
            if let Some(b) = body {
                m.push(format!("body = {}", toml_str(&b)));
            }
            if !attrs.is_empty() {
                let a: Vec<String> = attrs
                    .iter()
                    .map(|(k, v)| format!("{} = {}", toml_str(k), toml_str(v)))
                    .collect();
                m.push(format!("attributes = {{ {} }}", a.join(", ")));
            }
            if typo {
                m.push("eror = \"x\"".into());
            }
            s.push_str(&format!("match = {{ {} }}\n", m.join(", ")));
            s
        })
        .boxed()
}

fn config_text() -> BoxedStrategy<String> {
    let queue = (
        prop_oneof![3 => "[a-z]{1,8}", 1 => piece()],
        toml_entries(QUEUE_KEYS),
        prop::option::of(toml_entries(DEDUPE_KEYS)),
        prop::option::of(prop::collection::vec((piece(), piece()), 0..3)),
    );
    (
        prop::collection::vec(queue, 0..3),
        prop::collection::vec(toml_rule(), 0..3),
        prop::option::of(prop::collection::vec((piece(), piece()), 0..3)),
        prop::option::of(piece()),
    )
        .prop_map(|(queues, rules, kafka, garbage)| {
            let mut s = String::new();
            for (name, entries, dedupe, columns) in queues {
                s.push_str(&format!("[queues.{}]\n", toml_str(&name)));
                for (k, v) in entries {
                    s.push_str(&format!("{k} = {v}\n"));
                }
                if let Some(d) = dedupe {
                    s.push_str(&format!("[queues.{}.dedupe]\n", toml_str(&name)));
                    for (k, v) in d {
                        s.push_str(&format!("{k} = {v}\n"));
                    }
                }
                if let Some(c) = columns {
                    s.push_str(&format!("[queues.{}.columns]\n", toml_str(&name)));
                    for (k, v) in c {
                        s.push_str(&format!("{} = {}\n", toml_str(&k), toml_str(&v)));
                    }
                }
            }
            for r in rules {
                s.push_str("[[classify.rules]]\n");
                s.push_str(&r);
            }
            if let Some(props) = kafka {
                s.push_str("[kafka.properties]\n");
                for (k, v) in props {
                    s.push_str(&format!("{} = {}\n", toml_str(&k), toml_str(&v)));
                }
            }
            if let Some(g) = garbage {
                s.push_str(&g);
                s.push('\n');
            }
            s
        })
        .boxed()
}

fn check_config(cfg: &Config) -> Result<(), TestCaseError> {
    let aws = dlqctl::backend::AwsOptions::default();
    for (name, q) in &cfg.queues {
        for d in [
            q.handler_timeout,
            q.replay_window,
            q.dlq_retention,
            q.time_to_dead_letter,
        ]
        .into_iter()
        .flatten()
        {
            prop_assert!(d <= MAX_DURATION, "[queues.{}]: {:?}", name, d);
        }
        if let Some(Retention::For(d)) = q.dedupe.as_ref().and_then(|d| d.retention) {
            prop_assert!(d <= MAX_DURATION, "[queues.{}.dedupe]: {:?}", name, d);
        }
        // Naming the queue resolves its address, or is a usage error.
        if let Err(e) = dlqctl::settings::resolve_queue(cfg, &aws, name) {
            usage_error(&e)?;
        }
    }
    if let Err(e) = Classifier::new(&cfg.classify.rules, cfg.path.as_deref(), None) {
        usage_error(&e)?;
    }
    Ok(())
}

/// A message that exercises every part of a rule.
fn probe_message() -> Message {
    Message {
        id: "m-1".into(),
        body: br#"{"order": 7, "error": "timed out"}"#.to_vec(),
        attributes: vec![Attribute {
            name: "x-reason".into(),
            value: AttrValue::text("upstream 503"),
        }],
        error: Some(ErrorInfo {
            class: Some("TimeoutError".into()),
            message: Some("upstream call timed out after 30s".into()),
            trace: None,
        }),
        ..Message::default()
    }
}

fn rule_config() -> BoxedStrategy<RuleConfig> {
    (
        piece(),
        any::<bool>(),
        prop::option::of(regex_input()),
        prop::option::of(regex_input()),
        prop::collection::btree_map(piece(), regex_input(), 0..2),
    )
        .prop_map(|(name, transient, error, body, attributes)| RuleConfig {
            name,
            kind: if transient {
                RuleKind::Transient
            } else {
                RuleKind::Permanent
            },
            reason: None,
            taxonomy: None,
            source: None,
            matcher: RuleMatch {
                error,
                body,
                attributes: attributes.into_iter().collect::<BTreeMap<_, _>>(),
            },
        })
        .boxed()
}

proptest! {
    #![proptest_config(prop_config())]

    #[test]
    fn config_files_load_or_fail_as_usage_errors(text in config_text()) {
        // toml alone never panics on it...
        let direct = toml::from_str::<Config>(&text);
        // ...and neither does reading it as a file, which is what the binary does.
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("dlqctl.toml");
        std::fs::write(&path, &text).expect("write config");
        match Config::read(&path) {
            Err(e) => {
                // Beyond toml: a backend's table under another backend's queue.
                prop_assert!(
                    direct.is_err() || e.to_string().contains("applies to"),
                    "toml accepts what Config::read refuses: {}",
                    e
                );
                usage_error(&e)?;
            }
            Ok(cfg) => {
                prop_assert!(direct.is_ok());
                check_config(&cfg)?;
            }
        }
    }

    #[test]
    fn rules_compile_or_fail_as_usage_errors(rules in prop::collection::vec(rule_config(), 0..4)) {
        match Classifier::new(&rules, Some(Path::new("dlqctl.toml")), None) {
            Err(e) => usage_error(&e)?,
            Ok(c) => {
                let class = c.classify(&probe_message());
                prop_assert!(c.knows(&class.rule), "{:?}", class);
                for r in &rules {
                    prop_assert!(c.knows(&r.name));
                }
            }
        }
    }

    #[test]
    fn rules_files_load_or_fail_as_usage_errors(
        rules in prop::collection::vec(toml_rule(), 0..3),
        nested in any::<bool>(),
        garbage in prop::option::of(piece()),
    ) {
        let header = if nested { "[[classify.rules]]\n" } else { "[[rules]]\n" };
        let mut text: String = rules.iter().map(|r| format!("{header}{r}")).collect();
        if let Some(g) = garbage {
            text.push_str(&g);
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("rules.toml");
        std::fs::write(&path, &text).expect("write rules");
        match Classifier::new(&[], None, Some(&path)) {
            Err(e) => usage_error(&e)?,
            Ok(c) => {
                let class = c.classify(&probe_message());
                prop_assert!(c.knows(&class.rule));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// JSON Lines records

fn time() -> BoxedStrategy<DateTime<Utc>> {
    // Mostly years 1 to 9999; also the whole range chrono holds (RFC 3339 with a sign and a
    // fifth year digit: `+10000-01-01T00:00:00Z`), to the nanosecond.
    let (min, max) = (
        DateTime::<Utc>::MIN_UTC.timestamp(),
        DateTime::<Utc>::MAX_UTC.timestamp(),
    );
    (
        prop_oneof![
            3 => -62_135_596_800i64..=253_402_300_799i64,
            1 => min..=max,
        ],
        0u32..1_000_000_000,
    )
        .prop_map(|(s, n)| DateTime::from_timestamp(s, n).expect("in range"))
        .boxed()
}

fn bytes() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        any::<String>().prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..24),
        Just(br#"{"order_id": 1, "amount": 10}"#.to_vec()),
    ]
    .boxed()
}

fn attribute() -> BoxedStrategy<Attribute> {
    let text_type = prop_oneof![
        pick(&["String", "Number", "Number.int", "Json"]),
        "\\PC{0,6}"
    ];
    let bin_type = prop_oneof![pick(&["Binary", "Binary.gz"]), "\\PC{0,6}"];
    let value = prop_oneof![
        (text_type, any::<String>()).prop_map(|(t, v)| AttrValue::Text {
            data_type: t.into(),
            value: v,
        }),
        (bin_type, prop::collection::vec(any::<u8>(), 0..16)).prop_map(|(t, v)| {
            AttrValue::Binary {
                data_type: t.into(),
                value: v,
            }
        }),
        Just(AttrValue::Null),
    ];
    (any::<String>(), value)
        .prop_map(|(name, value)| Attribute { name, value })
        .boxed()
}

fn json_leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ]
    .boxed()
}

/// JSON without floats: serde_json's default float parsing may differ from the written value
/// in the last digit, so floats are not part of the lossless promise of `meta`.
fn json_value() -> BoxedStrategy<Value> {
    json_leaf()
        .prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                prop::collection::btree_map("\\PC{0,4}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
}

fn error_info() -> BoxedStrategy<Option<ErrorInfo>> {
    // An error with nothing in it is written as no error (the record leaves it out).
    prop::option::of(
        (
            prop::option::of(any::<String>()),
            prop::option::of(any::<String>()),
            prop::option::of(any::<String>()),
        )
            .prop_filter("some part known", |(c, m, t)| {
                c.is_some() || m.is_some() || t.is_some()
            })
            .prop_map(|(class, message, trace)| ErrorInfo {
                class,
                message,
                trace,
            }),
    )
    .boxed()
}

fn message() -> BoxedStrategy<Message> {
    let ids = (
        any::<String>(),
        any::<String>(),
        bytes(),
        prop::collection::vec(attribute(), 0..4),
        prop::option::of(bytes()),
        prop::option::of(any::<String>()),
        prop::option::of(any::<String>()),
        prop::option::of(any::<i32>()),
    );
    let facts = (
        prop::option::of(any::<u32>()),
        prop::option::of(time()),
        prop::option::of(time()),
        error_info(),
        prop::option::of(any::<String>()),
        prop::collection::vec(("\\PC{1,8}", json_value()), 0..3),
        prop::option::of(any::<String>()),
    );
    (ids, facts)
        .prop_map(
            |(
                (id, native_id, body, attributes, key, group, dedup_id, partition),
                (receive_count, enqueued_at, dead_lettered_at, error, source, meta, id_attribute),
            )| {
                let mut m = Message {
                    id,
                    native_id,
                    body,
                    attributes,
                    key,
                    group,
                    dedup_id,
                    partition,
                    receive_count,
                    enqueued_at,
                    dead_lettered_at,
                    error,
                    source,
                    id_attribute,
                    ..Message::default()
                };
                for (k, v) in meta {
                    m.meta.insert(k, v);
                }
                m
            },
        )
        .boxed()
}

const RECORD_FIELDS: &[&str] = &[
    "v",
    "id",
    "native_id",
    "source",
    "enqueued_at",
    "dead_lettered_at",
    "receive_count",
    "group",
    "dedup_id",
    "partition",
    "key",
    "key_encoding",
    "error",
    "attributes",
    "body",
    "body_encoding",
    "meta",
    "id_attribute",
];

/// Values that sit on the edges of what each field accepts.
fn odd_value() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => json_value(),
        3 => piece().prop_map(Value::from),
        2 => pick(&["utf8", "base64", "UTF8", "hex", "base64\n", "a\nb", "", "!!", "AAA", "2026-13-01T00:00:00Z"])
            .prop_map(Value::from),
        1 => pick(&["2026-12-01T08:00:00Z", "+20000-01-01T00:00:00Z", "2026-12-01"]).prop_map(Value::from),
        1 => Just(json!(1.5)),
        1 => Just(json!(-1)),
        1 => Just(json!(u64::MAX)),
        1 => Just(json!(4294967296u64)),
        1 => Just(json!(1e300)),
        1 => time_str().prop_map(Value::from),
    ]
    .boxed()
}

#[derive(Clone, Debug)]
enum Mutation {
    Remove(&'static str),
    Set(&'static str, Value),
    AddAttribute(Value),
    Truncate(usize),
}

fn mutation() -> BoxedStrategy<Mutation> {
    let field = prop::sample::select(RECORD_FIELDS);
    // Mostly well-typed (a string name, string values), so that the checks after the JSON
    // parsing are reached too.
    let text = || {
        prop_oneof![
            3 => piece().prop_map(Value::from),
            1 => odd_value(),
        ]
    };
    let attr = (
        prop::option::weighted(0.9, text()),
        prop::option::of(text()),
        prop::option::of(text()),
        prop::option::of(prop_oneof![
            pick(&["!!", "AAA", "3q2+7w==", "3q2+7w=", "", "a\nb"]).prop_map(Value::from),
            text()
        ]),
    )
        .prop_map(|(name, ty, value, b64)| {
            let mut o = serde_json::Map::new();
            for (k, v) in [
                ("name", name),
                ("type", ty),
                ("value", value),
                ("base64", b64),
            ] {
                if let Some(v) = v {
                    o.insert(k.into(), v);
                }
            }
            Value::Object(o)
        });
    prop_oneof![
        2 => field.clone().prop_map(Mutation::Remove),
        4 => (field, odd_value()).prop_map(|(f, v)| Mutation::Set(f, v)),
        2 => attr.prop_map(Mutation::AddAttribute),
        1 => any::<usize>().prop_map(Mutation::Truncate),
    ]
    .boxed()
}

fn record_line() -> BoxedStrategy<String> {
    let mutated = (message(), prop::collection::vec(mutation(), 1..4)).prop_map(|(m, muts)| {
        let mut v = serde_json::to_value(m.to_record()).expect("record to JSON");
        let mut cut = None;
        for mu in muts {
            let o = v.as_object_mut().expect("a record is an object");
            match mu {
                Mutation::Remove(f) => {
                    o.remove(f);
                }
                Mutation::Set(f, x) => {
                    o.insert(f.into(), x);
                }
                Mutation::AddAttribute(a) => {
                    if let Some(Value::Array(list)) = o.get_mut("attributes") {
                        list.push(a);
                    }
                }
                Mutation::Truncate(at) => cut = Some(at),
            }
        }
        let line = v.to_string();
        match cut {
            Some(at) => line.chars().take(at % (line.chars().count() + 1)).collect(),
            None => line,
        }
    });
    prop_oneof![
        6 => mutated,
        1 => any::<String>(),
        1 => json_value().prop_map(|v| v.to_string()),
        1 => (bytes(), pick(&["base64", "utf8"])).prop_map(|(b, enc)| {
            json!({"v": 1, "id": "x", "body": String::from_utf8_lossy(&b), "body_encoding": enc})
                .to_string()
        }),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(prop_config())]

    #[test]
    fn record_lines_read_or_fail_on_one_line(line in record_line()) {
        match serde_json::from_str::<Record>(&line) {
            Err(e) => one_line("the JSON error", &e.to_string())?,
            Ok(r) => match Message::from_record(r) {
                Err(e) => one_line("the record error", &e)?,
                Ok(mut m) => {
                    // What was read writes back as one line and reads back the same (an error
                    // object with nothing in it, `"error": {}`, is written as no error).
                    let again = serde_json::to_string(&m.to_record()).expect("to JSON");
                    one_line("a written record", &again)?;
                    let back = Message::from_record(serde_json::from_str(&again).expect("reads"));
                    if m.error.as_ref().is_some_and(ErrorInfo::is_empty) {
                        m.error = None;
                    }
                    prop_assert_eq!(back.as_ref(), Ok(&m));
                }
            },
        }
    }

    #[test]
    fn messages_survive_the_record_round_trip(m in message()) {
        let line = serde_json::to_string(&m.to_record()).expect("record to JSON");
        one_line("a JSON Lines record", &line)?;
        let record: Record = serde_json::from_str(&line)
            .map_err(|e| TestCaseError::fail(format!("{e}: {line}")))?;
        let back = Message::from_record(record).map_err(TestCaseError::fail)?;
        prop_assert_eq!(back, m);
    }
}

#[test]
fn base64_in_records_is_standard_with_padding() {
    // The round trip above relies on it; docs/jsonl.md promises it.
    let m = Message {
        id: "b".into(),
        body: vec![0xde, 0xad, 0xbe, 0xef],
        ..Message::default()
    };
    let r = m.to_record();
    assert_eq!(
        r.body,
        base64::engine::general_purpose::STANDARD.encode([0xde, 0xad, 0xbe, 0xef])
    );
    assert_eq!(r.body, "3q2+7w==");
}

// ---------------------------------------------------------------------------------------------
// Bad command lines against the real binary

/// Files the table refers to, relative to the sandbox (the binary's working directory).
fn write_files(sb: &Sandbox, dlq: &str) {
    let good =
        r#"{"v":1,"id":"pay-17","source":"orders","body":"{\"a\":1}","body_encoding":"utf8"}"#;
    sb.write(
        "typo.toml",
        &format!("[queues.orders]\ndlq = \"{dlq}\"\nhandler_timout = \"2m\"\n"),
    );
    sb.write("not-toml.toml", "this is = not [toml\n");
    sb.write(
        "bad-duration.toml",
        &format!("[queues.orders]\ndlq = \"{dlq}\"\nreplay_window = \"3 parsecs\"\n"),
    );
    sb.write(
        "huge-duration.toml",
        &format!("[queues.orders]\ndlq = \"{dlq}\"\nhandler_timeout = \"200000000000y\"\n"),
    );
    sb.write(
        "bad-id.toml",
        &format!("[queues.orders]\ndlq = \"{dlq}\"\nid = \"json:order_id\"\n"),
    );
    sb.write(
        "bad-rule.toml",
        "[[classify.rules]]\nname = \"broken\"\nkind = \"transient\"\nmatch = { error = \"(unclosed\" }\n",
    );
    sb.write(
        "bad-dlq.toml",
        "[queues.orders]\ndlq = \"postgres://h/db?table=t&qeue=billing\"\n",
    );
    // A Sidekiq table under a PostgreSQL queue (accepted and never read, before).
    sb.write(
        "misplaced-sidekiq.toml",
        &format!("[queues.orders]\ndlq = \"{dlq}\"\n[queues.orders.sidekiq]\ndead_max_jobs = 5\n"),
    );
    sb.write(
        "bad-kind.rules.toml",
        "[[rules]]\nname = \"flaky\"\nkind = \"sometimes\"\nmatch = { error = \"x\" }\n",
    );
    sb.write("empty.rules.toml", "# nothing here\n");
    sb.write(
        "no-match.rules.toml",
        "[[rules]]\nname = \"vague\"\nkind = \"permanent\"\nmatch = {}\n",
    );
    sb.write(
        "typo.rules.toml",
        "[[rules]]\nname = \"x\"\nkind = \"permanent\"\nmatch = { eror = \"x\" }\n",
    );
    sb.write("good.jsonl", &format!("{good}\n"));
    sb.write("not-json.jsonl", "this is not JSON\n");
    sb.write(
        "bad-base64.jsonl",
        "{\"v\":1,\"id\":\"b\",\"body\":\"!!not base64\",\"body_encoding\":\"base64\"}\n",
    );
    sb.write(
        "version-9.jsonl",
        "{\"v\":9,\"id\":\"b\",\"body\":\"x\",\"body_encoding\":\"utf8\"}\n",
    );
    sb.write(
        "no-encoding.jsonl",
        "{\"v\":1,\"id\":\"b\",\"body\":\"x\"}\n",
    );
    sb.write(
        "both-forms.jsonl",
        "{\"v\":1,\"id\":\"b\",\"body\":\"x\",\"body_encoding\":\"utf8\",\"attributes\":[{\"name\":\"a\",\"value\":\"1\",\"base64\":\"AQ==\"}]}\n",
    );
    // Two good lines, then a bad one: the batch in the making is not sent.
    sb.write(
        "good-then-bad.jsonl",
        &format!(
            "{good}\n{}\n\n{{\"v\":1,\"id\":\"c\"}}\n",
            good.replace("pay-17", "pay-18")
        ),
    );
}

/// Each row: arguments, exit code, a fragment of the `error:` line. Placeholders: `{dlq}` the
/// seeded dead-letter table (with `&source=` its queue table), `{dl}` the dead-letter table
/// alone, `{src}` the queue table, `{pg}` the database URL, `{s}` the schema, `{nodb}` a
/// database that does not exist on the same server.
#[rustfmt::skip]
const ROWS: &[(&[&str], i32, &str)] = &[
    // Rates, batch sizes, durations.
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--rate", "1e-300"], 2, "invalid value for --rate"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--rate", "0"], 2, "must be positive"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--rate", "NaN"], 2, "--rate"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--rate", "1e300"], 2, "out of range"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--rate", "fast"], 2, "not a rate"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--rate", "5/week"], 2, "unknown rate unit `week`"),
    (&["replay", "good.jsonl", "--to", "{src}", "--yes", "--rate=-3/s"], 2, "--rate"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--batch-size", "0"], 2, "--batch-size"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--batch-size", "10001"], 2, "1 to 10000"),
    (&["replay", "good.jsonl", "--to", "{src}", "--yes", "--batch-size", "0"], 2, "--batch-size"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--older-than", "200000000000y"], 2, "100 years"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--newer-than", "3 parsecs"], 2, "not a duration"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--older-than", "2d", "--newer-than", "1d"], 2, "nothing can be older"),
    (&["tail", "{dlq}", "--poll-interval", "0", "--idle-timeout", "1s"], 2, "--poll-interval"),
    (&["tail", "{dlq}", "--poll-interval", "2h", "--idle-timeout", "1s"], 2, "at most 1h"),
    (&["tail", "{dlq}", "--idle-timeout", "soon", "--max", "1", "--from-start"], 2, "--idle-timeout"),
    (&["peek", "{dlq}", "-n", "0"], 2, "-n"),
    (&["audit", "-n", "0"], 2, "-n"),
    // Filters and headers.
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--class", "transiet"], 2, "`transiet` is neither"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--match", "(unclosed"], 2, "--match: not a valid regex"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--error", "[z-a]"], 2, "--error"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--attr", "tenant"], 2, "NAME=REGEX"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--attr", "tenant=(acme"], 2, "--attr"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--ids-from", "missing-ids.txt"], 2, "missing-ids.txt"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--keep-header", ""], 2, "empty pattern"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--strip-header", "[oops"], 2, "not a glob pattern"),
    // Safety: the target is the queue being read, no terminal to confirm at, wrong modes.
    (&["redrive", "{dlq}", "--to", "{dl}", "--yes"], 2, "is the queue being read"),
    (&["redrive", "{dlq}", "--to", "{src}"], 2, "no terminal"),
    (&["redrive", "{dl}", "--yes"], 2, "no destination"),
    // A bare name as a target is looked up as the queue argument is.
    (&["redrive", "{dlq}", "--to", "w2", "--yes"], 2, "unknown queue `w2`: it is not a URL and no [queues.w2] is defined"),
    (&["purge", "{dlq}", "--archive", "w2", "--yes"], 2, "unknown queue `w2`: it is not a URL"),
    (&["redrive", "{dlq}", "--to", "{src}", "--max-redrives", "2", "--park", "w2", "--yes"], 2, "unknown queue `w2`: it is not a URL"),
    (&["redrive", "{dlq}", "--to", "kafka://127.0.0.1:9/t", "--yes", "--exactly-once"], 2, "--exactly-once"),
    (&["--output", "junit", "redrive", "{dlq}", "--to", "{src}", "--yes"], 2, "junit is for `dlqctl verify` and `dlqctl check` only"),
    (&["--output", "junit", "peek", "{dlq}"], 2, "junit"),
    (&["redrive", "good.jsonl", "--to", "{src}", "--yes"], 2, "does not support redrive"),
    (&["--output", "prometheus", "peek", "{dlq}"], 2, "prometheus is for `dlqctl inspect` and `dlqctl check` only"),
    (&["peek", "{dlq}", "--where", ".json.amount >"], 2, "at character 15: expected term, found the end"),
    // Found on the first message, once the JSON array would have begun: stdout stays empty.
    (&["peek", "{dlq}", "--where", ".json.amount = 3"], 2, "a --where must be a test"),
    (&["redrive", "{dlq}", "--to", "{src}", "--where", ".a | nosuch", "--yes"], 2, "undefined filter `nosuch`"),
    (&["redrive", "{dlq}", "--to", "{src}", "--fingerprint", "3fa2c1", "--yes"], 2, "is not a fingerprint"),
    (&["classify", "{dlq}", "--by", "tenant"], 2, "attr:NAME"),
    (&["check", "{dlq}"], 2, "nothing to check"),
    (&["check", "{dlq}", "--max-class", "permanent"], 2, "is not CLASS=N"),
    (&["check", "{dlq}", "--max-class", "permanant=0"], 2, "neither transient, permanent"),
    (&["check", "{dlq}", "--baseline", "good.jsonl"], 2, "has no `groups`"),
    (&["replay", "good.jsonl", "--to", "copy.jsonl", "--yes"], 2, "cannot be a redrive or replay target"),
    (&["redrive", "{dlq}", "--to", "file:///tmp/dlqctl-never-written.jsonl", "--yes"], 2, "cannot be a redrive or replay target"),
    (&["verify"], 2, "nothing to verify"),
    // PostgreSQL addresses: typos are refused, never ignored.
    (&["redrive", "{pg}?table={s}.dead_letters&source={s}.queue_messages&qeue=billing", "--yes"], 2, "did you mean `queue`"),
    (&["redrive", "{dlq}", "--to", "{src}&shema=x", "--yes"], 2, "did you mean `schema`"),
    (&["redrive", "{dlq}", "--to", "{src}&qeue=billing", "--yes"], 2, "unknown parameter `qeue`"),
    (&["peek", "{pg}?system=sidekiq"], 2, "unknown system `sidekiq`"),
    (&["peek", "{pg}?system=rivr"], 2, "did you mean `river`"),
    (&["peek", "{pg}"], 2, "say what to read"),
    (&["peek", "{pg}?table={s}.dead_letters&system=river"], 2, "not both"),
    (&["peek", "{pg}?table={s}.dead_letters&table=x"], 2, "`table` is given twice"),
    (&["peek", "redis://127.0.0.1:9/0?system=sidekiq&queue=default&queue=nope"], 2, "`queue` is given twice"),
    (&["peek", "kafka://127.0.0.1:9/t?partition=0&partition=1"], 2, "`partition` is given twice"),
    (&["peek", "https://sqs.us-east-1.amazonaws.com/1/q?a=1&a=2"], 2, "`a` is given twice"),
    (&["redrive", "{dlq}", "--to", "amqp://127.0.0.1:9/%2F?queue=a&queue=b", "--yes"], 2, "`queue` is given twice"),
    (&["peek", "{pg}?table={s}.dead_letters&sslmode=maybe"], 2, "sslmode"),
    (&["peek", "{pg}?table={s}.dead_letters&port=99999"], 2, "not a port number"),
    (&["peek", "{pg}?table={s}.dead_letters&connect_timeout=5"], 2, "libpq parameter"),
    (&["peek", "{pg}?table={s}.dead_letters&hostaddr=%0A"], 2, "hostaddr=`\\n`"),
    (&["peek", "{pg}?table="], 2, "table= is empty"),
    (&["peek", "{pg}?table=a;drop"], 2, "not a table name"),
    (&["peek", "postgres://h/a/b?table=x"], 2, "not a database name"),
    (&["peek", "postgres://u@h/db?table=t&hostaddr=db.example"], 2, "not an IP address"),
    // Kafka, SQS and other addresses (refused before any connection).
    (&["peek", "kafka://127.0.0.1:9/t?partition=4294967298"], 2, "`partition=4294967298`"),
    (&["peek", "kafka://127.0.0.1:9/t?partition=-1"], 2, "not a partition number"),
    (&["peek", "kafka://broker/topic"], 2, "HOST:PORT"),
    (&["peek", "kafka://127.0.0.1:9"], 2, "missing topic"),
    (&["peek", "kafka://127.0.0.1:9/t?offset=3"], 2, "unknown parameter `offset`"),
    (&["peek", "kafka://127.0.0.1:9/t?since=yesterday"], 2, "RFC 3339"),
    (&["peek", "kafka://127.0.0.1:9/t?from=-5"], 2, "is not an offset"),
    (&["peek", "kafka://127.0.0.1:9/bad!topic"], 2, "Kafka topic name"),
    (&["redrive", "kafka://127.0.0.1:9/t?from=3", "--to", "{src}", "--yes"], 2, "slice peek, export and replay"),
    (&["redrive", "{dlq}", "--to", "kafka://127.0.0.1:9/t?partiton=1", "--yes"], 2, "unknown parameter `partiton`"),
    (&["peek", "sqs://bad/name"], 2, "bare queue name"),
    (&["peek", "sqs://has space"], 2, "not an SQS queue name"),
    (&["peek", "arn:aws:sns:us-east-1:1:q"], 2, "arn:aws:sqs:REGION:ACCOUNT:NAME"),
    (&["peek", "https://sqs.us-east-1.amazonaws.com/onlyname"], 2, "SQS queue URL"),
    (&["peek", "nats://x/y"], 2, "unknown scheme `nats`"),
    (&["peek", " postgre://h/db\n"], 2, "unknown scheme `postgre`"),
    (&["peek", "orders"], 2, "unknown queue `orders`"),
    (&["peek", "file:"], 2, "file: needs a path"),
    // Config and rules files.
    (&["--config", "typo.toml", "peek", "orders"], 2, "handler_timout"),
    (&["--config", "not-toml.toml", "peek", "{dlq}"], 2, "not-toml.toml"),
    (&["--config", "bad-duration.toml", "peek", "orders"], 2, "3 parsecs"),
    (&["--config", "huge-duration.toml", "peek", "orders"], 2, "100 years"),
    (&["--config", "bad-id.toml", "peek", "orders"], 2, "json:order_id"),
    (&["--config", "bad-rule.toml", "redrive", "{dlq}", "--to", "{src}", "--yes"], 2, "rule `broken`"),
    (&["--config", "bad-dlq.toml", "peek", "orders"], 2, "did you mean `queue`"),
    (&["--config", "misplaced-sidekiq.toml", "peek", "{dlq}"], 2, "[queues.orders.sidekiq] applies to a Sidekiq set"),
    (&["--config", "/nonexistent/dlqctl.toml", "peek", "{dlq}"], 2, "/nonexistent/dlqctl.toml"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--rules", "bad-kind.rules.toml"], 2, "sometimes"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--rules", "empty.rules.toml"], 2, "no rules in it"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--rules", "no-match.rules.toml"], 2, "matches nothing"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--rules", "typo.rules.toml"], 2, "eror"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--rules", "missing.rules.toml"], 2, "missing.rules.toml"),
    // JSON Lines input: nothing of a bad file reaches the target.
    (&["replay", "not-json.jsonl", "--to", "{src}", "--yes"], 2, "not-json.jsonl: line 1"),
    (&["replay", "bad-base64.jsonl", "--to", "{src}", "--yes"], 2, "invalid base64"),
    (&["replay", "version-9.jsonl", "--to", "{src}", "--yes"], 2, "record version 9"),
    (&["replay", "no-encoding.jsonl", "--to", "{src}", "--yes"], 2, "missing field `body_encoding`"),
    (&["replay", "both-forms.jsonl", "--to", "{src}", "--yes"], 2, "both value and base64"),
    (&["replay", "good-then-bad.jsonl", "--to", "{src}", "--yes"], 2, "line 4"),
    // An error after two records were shown: the JSON array on stdout is closed.
    (&["peek", "good-then-bad.jsonl", "-n", "10"], 2, "line 4"),
    // --max 0 in dlqctl's words, as -n 0 (it was clap's `invalid value '0' for '--max <N>'`).
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--max", "0"], 2, "invalid value for --max: must be at least 1"),
    (&["replay", "good.jsonl", "--to", "{src}", "--yes", "--max", "0"], 2, "invalid value for --max: must be at least 1"),
    (&["purge", "{dlq}", "--no-archive", "--yes", "--max", "0"], 2, "invalid value for --max: must be at least 1"),
    (&["export", "{dlq}", "--max", "0"], 2, "invalid value for --max: must be at least 1"),
    (&["classify", "{dlq}", "--max", "0"], 2, "invalid value for --max: must be at least 1"),
    (&["tail", "{dlq}", "--max", "0"], 2, "invalid value for --max: must be at least 1"),
    // Not found: exit 3, still nothing changed.
    (&["replay", "missing.jsonl", "--to", "{src}", "--yes"], 3, "not found"),
    (&["redrive", "{dlq}", "--to", "{pg}?table={s}.nope", "--yes"], 3, "not found"),
    (&["inspect", "{pg}?table={s}.nope"], 3, "not found"),
    (&["peek", "{nodb}?table=t"], 3, "dlqctl_no_such_db"),
];

/// Rows clap itself refuses: its `error:` line, then its usage block.
#[rustfmt::skip]
const CLAP_ROWS: &[(&[&str], &str)] = &[
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--bogus"], "unexpected argument '--bogus'"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--max", "many"], "invalid value 'many'"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--batch-size", "-1"], "-1"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--cancel"], "--native"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--dedup-id", "sometimes"], "invalid value 'sometimes'"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--parallel", "0"], "--parallel"),
    (&["redrive", "{dlq}", "--to", "{src}", "--yes", "--visibility-timeout", "0"], "--visibility-timeout"),
    (&["--output", "xml", "peek", "{dlq}"], "invalid value 'xml'"),
    (&["--color", "sometimes", "peek", "{dlq}"], "invalid value 'sometimes'"),
    (&["replay", "good.jsonl"], "--to"),
    (&["redrive"], "<QUEUE>"),
    (&["frobnicate", "{dlq}"], "unrecognized subcommand 'frobnicate'"),
];

/// Everything in both tables, as text: any change to any row changes it.
async fn snapshot(db: &Db) -> String {
    let sql = format!(
        "SELECT coalesce((SELECT string_agg(t::text, E'\\n' ORDER BY t.id) FROM {s}.dead_letters t), '')
             || E'\\n--\\n' ||
                coalesce((SELECT string_agg(t::text, E'\\n' ORDER BY t.id) FROM {s}.queue_messages t), '')",
        s = db.schema
    );
    sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(&db.pool)
        .await
        .expect("snapshot")
}

#[tokio::test]
async fn bad_command_lines_change_nothing() {
    let db = Db::new("badin").await;
    db.seed(4).await;
    db.exec(
        "INSERT INTO {s}.queue_messages (message_id, queue, payload) VALUES ('live-1', 'orders', '{\"a\": 1}')",
    )
    .await;
    let sb = Sandbox::new();
    write_files(&sb, &db.dlq());
    let nodb = match pg_url().rsplit_once('/') {
        Some((server, _)) => format!("{server}/dlqctl_no_such_db"),
        None => panic!("unexpected test database URL {}", pg_url()),
    };
    let fill = |arg: &str| {
        arg.replace("{dlq}", &db.dlq())
            .replace("{dl}", &db.table_url("dead_letters"))
            .replace("{src}", &db.table_url("queue_messages"))
            .replace("{pg}", &pg_url())
            .replace("{nodb}", &nodb)
            .replace("{s}", &db.schema)
    };
    let before = snapshot(&db).await;
    assert_eq!(
        (
            db.count("dead_letters").await,
            db.count("queue_messages").await
        ),
        (4, 1)
    );
    assert!(ROWS.len() + CLAP_ROWS.len() >= 50);

    let rows = ROWS
        .iter()
        .map(|(args, code, says)| (*args, *code, *says, false))
        .chain(CLAP_ROWS.iter().map(|(args, says)| (*args, 2, *says, true)));
    let mut failures = Vec::new();
    for (args, code, says, by_clap) in rows {
        let args: Vec<String> = args.iter().map(|a| fill(a)).collect();
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = sb.run(&argv);
        let mut wrong = Vec::new();
        if r.code != code {
            wrong.push(format!("exit {} (wanted {code})", r.code));
        }
        let lines: Vec<&str> = r.stderr.lines().collect();
        let first = lines.first().copied().unwrap_or_default();
        if !first.starts_with("error: ") {
            wrong.push("stderr does not start with `error: `".into());
        }
        // clap names missing arguments on the lines under its error.
        let said = if by_clap { r.stderr.as_str() } else { first };
        if !said.contains(says) {
            wrong.push(format!("the error does not say {says:?}"));
        }
        if lines.iter().filter(|l| l.starts_with("error:")).count() != 1 {
            wrong.push("more than one `error:` line".into());
        }
        if by_clap {
            // clap's own shape: the error, then a usage block that ends with `--help`.
            if lines.last().is_none_or(|l| !l.contains("--help")) {
                wrong.push("no usage block after clap's error".into());
            }
        } else {
            let rest = &lines[1.min(lines.len())..];
            if !rest.iter().all(|l| l.starts_with("  hint: ")) {
                wrong.push("more than the error line and its `  hint:` lines".into());
            }
        }
        // A script reads stdout (JSON here: it is not a terminal): one document, or nothing.
        if !r.stdout.trim().is_empty() && serde_json::from_str::<Value>(&r.stdout).is_err() {
            wrong.push("stdout is neither empty nor one JSON document".into());
        }
        for panic_text in ["panicked", "RUST_BACKTRACE", "stack backtrace"] {
            if r.stderr.contains(panic_text) || r.stdout.contains(panic_text) {
                wrong.push(format!("{panic_text:?} in the output"));
            }
        }
        if r.stderr.contains(":dlqctl@") {
            wrong.push("the database password is shown".into());
        }
        let counts = (
            db.count("dead_letters").await,
            db.count("queue_messages").await,
        );
        if counts != (4, 1) {
            wrong.push(format!(
                "dead_letters/queue_messages hold {counts:?} rows, not (4, 1)"
            ));
        }
        if snapshot(&db).await != before {
            wrong.push("a row of dead_letters or queue_messages changed".into());
        }
        if !wrong.is_empty() {
            failures.push(format!(
                "dlqctl {}\n  {}\n  stdout: {}\n  stderr: {}",
                args.join(" "),
                wrong.join("; "),
                r.stdout.trim(),
                r.stderr.trim().replace('\n', "\n          ")
            ));
            if counts != (4, 1) || snapshot(&db).await != before {
                // Later rows would all report this row's change.
                break;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} bad command line(s) misbehaved:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// What the table does not read (it reads the error line): the hints that say what to run
/// instead. Files only: no service is needed.
#[test]
fn hints_say_what_to_run_instead() {
    let sb = Sandbox::new();
    write_files(&sb, "postgres://h/db?table=t");
    for (args, hint) in [
        (
            &["replay", "good.jsonl", "--to", "file:copy.jsonl", "--yes"][..],
            "hint: to write messages to a file use `dlqctl export QUEUE -o FILE` (with the same filters), or `dlqctl purge QUEUE --archive FILE`",
        ),
        (
            &["replay", "good.jsonl", "--to", "w2", "--yes"][..],
            "hint: name the queue by its URL (an SQS queue: sqs://w2;",
        ),
    ] {
        let r = sb.run(args).code(2);
        assert!(
            r.stderr.contains(hint),
            "dlqctl {}: no {hint:?} in\n{}",
            args.join(" "),
            r.stderr
        );
        assert!(r.stdout.is_empty(), "{}", r.stdout);
        assert!(!sb.path("copy.jsonl").exists(), "a file was written");
    }
}

/// A user or password with a `%` that starts no escape (`%zz`) is a URL error on every scheme
/// that takes one (exit 2, before anything is opened), naming the part and the fix and never
/// showing the password: the URL parser keeps such a `%` as typed, and the server refused the
/// password as wrong (Redis: an authentication failure, exit 3). Kafka and SQS addresses take
/// no user info at all (also exit 2).
#[test]
fn a_password_with_bad_percent_encoding_is_a_url_error_on_every_scheme() {
    let sb = Sandbox::new();
    // Port 1: were the URL accepted, the run would fail to connect (exit 3), not exit 2.
    for (url, part) in [
        (
            "redis://:pw%zzsecret@127.0.0.1:1/0?system=sidekiq",
            "password",
        ),
        (
            "rediss://app:pw%zzsecret@127.0.0.1:1/0?system=bullmq&queue=q",
            "password",
        ),
        (
            "redis://app:pw%4secret@127.0.0.1:1/0?system=sidekiq",
            "password",
        ),
        (
            "redis://a%zzb:pwsecret@127.0.0.1:1/0?system=sidekiq",
            "user",
        ),
        (
            "postgres://app:pw%zzsecret@127.0.0.1:1/db?table=dead_letters",
            "password",
        ),
        (
            "postgresql://app:pw%secret@127.0.0.1:1/db?system=river",
            "password",
        ),
        (
            "postgres://app@127.0.0.1:1/db?table=dead_letters&password=pw%zzsecret",
            "password",
        ),
        (
            "amqp://app:pw%zzsecret@127.0.0.1:1/%2F?queue=orders.dlq",
            "password",
        ),
        (
            "amqps://app:pwsecret%@127.0.0.1:1/%2F?queue=orders.dlq",
            "password",
        ),
        (
            "kafka://app:pw%zzsecret@127.0.0.1:1/orders.DLT",
            "user or password",
        ),
        (
            "https://app:pw%zzsecret@sqs.eu-west-1.amazonaws.com/123456789012/q",
            "user or password",
        ),
    ] {
        let r = sb.run(&["peek", url, "-n", "1"]).code(2);
        let want = if part.contains(" or ") {
            "takes no user or password".to_string()
        } else {
            format!("the {part} in the URL is not valid percent-encoding")
        };
        assert!(r.stderr.contains(&want), "{url}: {}", r.stderr);
        if !part.contains(" or ") {
            assert!(r.stderr.contains("`%25`"), "{url}: the fix: {}", r.stderr);
        }
        assert!(
            !r.stderr.contains("secret"),
            "{url}: shows the password: {}",
            r.stderr
        );
        assert!(r.stderr.starts_with("error: "), "{url}: {}", r.stderr);
        assert_eq!(
            r.stderr
                .lines()
                .filter(|l| !l.starts_with("  hint: "))
                .count(),
            1,
            "{url}: one line: {}",
            r.stderr
        );
    }
    // Valid escapes still pass the parse (the run then fails to connect: exit 3).
    sb.run(&[
        "peek",
        "redis://:p%25w@127.0.0.1:1/0?system=sidekiq",
        "-n",
        "1",
    ])
    .code(3);
}

/// The inputs the properties found, kept as examples: each once put a line break inside its
/// error (or, accepted, inside every message that names it). See the fixes in src/.
#[test]
fn inputs_the_properties_found() {
    let one_line = |s: &str| {
        assert!(!s.contains(['\n', '\r']), "not one line: {s:?}");
    };
    for input in [
        "postgre://localhost\n",
        "postgres://db.example?hostaddr=%0A&table=t",
        "postgres://a%0Ab/db?table=t",
        "postgres://h/db?table=t&host=a%0Ab",
        "kafka://a\nb:1/t",
        "kafka://a:1/t?\n=1",
        "https://\na/0/0",
    ] {
        let e = Address::parse(input).expect_err(input);
        assert_eq!(e.exit_code(), 2, "{e}");
        one_line(&e.to_string());
    }
    one_line(&parse_duration("\n").unwrap_err());
    one_line(&parse_duration("1d\n2x").unwrap_err());
    one_line(&parse_rate("\n").unwrap_err());
    one_line(&parse_rate("5/x\ry").unwrap_err());
    let vague = RuleConfig {
        name: "\n".into(),
        kind: RuleKind::Permanent,
        reason: None,
        taxonomy: None,
        source: None,
        matcher: RuleMatch::default(),
    };
    let e = Classifier::new(&[vague], None, None)
        .err()
        .expect("a rule without match");
    one_line(&e.to_string());
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("rules.toml");
    std::fs::write(
        &path,
        "[[rules]]\nname = \"x\"\nkind = \"\\r\"\nmatch = { error = \"x\" }\n",
    )
    .expect("write");
    let e = Classifier::new(&[], None, Some(&path))
        .err()
        .expect("an unknown kind");
    assert_eq!(e.exit_code(), 2);
    one_line(&e.to_string());
    for line in [
        r#"{"v":1,"id":"x","attributes":[{"name":"\n","base64":"!!"}],"body":"","body_encoding":"utf8"}"#,
        r#"{"v":1,"id":"x","attributes":[{"name":"\r","value":"1","base64":"AQ=="}],"body":"","body_encoding":"utf8"}"#,
        r#"{"v":1,"id":"x","key":"k","key_encoding":"base64\n","body":"","body_encoding":"utf8"}"#,
    ] {
        let e = serde_json::from_str::<Record>(line)
            .map_err(|e| e.to_string())
            .and_then(Message::from_record)
            .expect_err(line);
        one_line(&e);
    }
}

/// RabbitMQ addresses (issue 27): user info with and without a password, vhosts, queue and
/// exchange parameters, unknown ones and typos.
fn amqp_address() -> BoxedStrategy<String> {
    let user = prop_oneof![
        Just(String::new()),
        pick(&["app@", "app:s3cr3t-pw@", "a%40b:p%2Fw@"]),
        piece().prop_map(|p| format!("{p}@")),
    ];
    let key = prop_oneof![
        3 => pick(&["queue", "exchange", "routing_key", "api", "qeue", "QUEUE"]),
        1 => piece(),
    ];
    let value = prop_oneof![
        3 => "[a-zA-Z0-9._-]{0,12}",
        1 => pick(&["http://h:15672", "https://h:15671/", "ftp://x", "http://u:p@h"]),
        1 => piece(),
    ];
    let pair = (key, value).prop_map(|(k, v)| format!("{k}={v}"));
    (
        pick(&["amqp", "amqps", "AMQP"]),
        user,
        prop_oneof![pick(&["mq", "127.0.0.1", "mq:5672", "mq:x", ""]), piece()],
        prop_oneof![pick(&["", "/", "/%2F", "/prod", "/a/b"]), piece()],
        prop::collection::vec(pair, 0..4),
    )
        .prop_map(|(scheme, user, host, vhost, q)| {
            format!("{scheme}://{user}{host}{vhost}?{}", q.join("&"))
        })
        .boxed()
}

proptest! {
    #![proptest_config(prop_config())]

    #[test]
    fn amqp_addresses_never_panic_and_never_show_a_password(input in amqp_address()) {
        check_address(&input)?;
        if let Ok(a) = Address::parse(&input) {
            let shown = a.to_string();
            prop_assert!(!shown.contains("s3cr3t-pw"), "{input:?} shows as {shown:?}");
        }
    }
}
