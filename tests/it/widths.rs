//! What a person sees at 80 and at 120 columns (issue 25): inspect, classify, classify --by
//! fingerprint, check with a baseline, a plan and its summary, and the audit, on PostgreSQL,
//! SQS and Kafka, through a fixed `COLUMNS`, as insta snapshots. Besides the snapshots, every
//! table fits the width, and no header, id or word is broken across lines.
//!
//! The names the tests make have fixed widths (harness.rs pads them), and what changes from run
//! to run (names, times, UUIDs) is replaced by text of the same width, so that the snapshots
//! keep the columns exactly as laid out.

use insta::assert_snapshot;
use regex::Regex;

use crate::harness::{Db, Kafka, Sandbox, Sqs, pg_url};

/// The failures every backend holds: (error, how many). Four groups of different sizes.
const FAILURES: &[(&str, usize)] = &[
    ("PaymentDeclined: card for cus_{} declined", 4),
    ("upstream call timed out after 30s", 3),
    ("validation failed: currency must be one of EUR, USD", 2),
    ("OrderService: order {} has no line items", 1),
];

/// Each message: (n, error text).
fn failures() -> Vec<(usize, String)> {
    let mut n = 0;
    let mut out = Vec::new();
    for (text, count) in FAILURES {
        for _ in 0..*count {
            n += 1;
            out.push((n, text.replace("{}", &format!("N3kd9a{n:02}Q"))));
        }
    }
    out
}

/// `text` with `names` replaced (each by a label of the same width), then times, UUIDs, the
/// arrivals sparkline and elapsed times made the same on every run, width for width.
fn normalise(text: &str, names: &[(&str, &str)]) -> String {
    let mut out = text.to_string();
    for (name, label) in names {
        let n = name.chars().count();
        let mut l: String = label.chars().take(n).collect();
        while l.chars().count() < n {
            l.push('_');
        }
        out = out.replace(name, &l);
    }
    let digits = |re: &str, out: &str| {
        Regex::new(re)
            .unwrap()
            .replace_all(out, |c: &regex::Captures| {
                c[0].chars()
                    .map(|ch| if ch.is_ascii_digit() { '0' } else { ch })
                    .collect::<String>()
            })
            .into_owned()
    };
    out = digits(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?Z?", &out);
    out = digits(r"\b\d\d-\d\d \d\d:\d\d\b", &out);
    out = digits(r"\b\d+\.\ds\b( \([\d,.]+/s\))?", &out);
    out = Regex::new(r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
        .unwrap()
        .replace_all(&out, "uuid-uuid-uuid-uuid-uuid-uuid-uuid-uu")
        .into_owned();
    out = Regex::new(r"│[^│\n]*│")
        .unwrap()
        .replace_all(&out, |c: &regex::Captures| {
            if c[0].contains('┆') {
                c[0].to_string()
            } else {
                format!("│{}│", "▁".repeat(c[0].chars().count() - 2))
            }
        })
        .into_owned();
    // How many arrived in the busiest hour depends on whether the minutes cross an hour.
    out = Regex::new(r"\(peak \d+/h,")
        .unwrap()
        .replace_all(&out, "(peak N/h,")
        .into_owned();
    Regex::new(r"before that, by day: .*")
        .unwrap()
        .replace_all(&out, "before that, by day: …")
        .into_owned()
}

/// Every line of every table within `width` columns (prose, such as a note, wraps where the
/// terminal wraps it); the headers and the ids whole on one line.
fn assert_fits(text: &str, width: usize, whole: &[&str]) {
    for l in text.lines().filter(|l| l.contains(['│', '┌', '└', '╞'])) {
        assert!(
            l.chars().count() <= width,
            "a line wider than {width} columns ({}):\n{l}\nin:\n{text}",
            l.chars().count()
        );
    }
    for w in whole {
        assert!(
            text.contains(w),
            "`{w}` is not shown whole at {width} columns:\n{text}"
        );
    }
}

/// The commands of a triage, at `width` columns, as one text: each command line, then what it
/// printed (stdout, and the plan on stderr).
fn session(sb: &Sandbox, env: &[(String, String)], width: usize) -> String {
    let mut env = env.to_vec();
    env.push(("COLUMNS".into(), width.to_string()));
    let run = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--output", "table"]);
        let r = sb.run_with(&all, &env);
        assert!(
            r.code == 0 || (args[0] == "check" && r.code == 1),
            "{args:?}: exit {}\n{}\n{}",
            r.code,
            r.stdout,
            r.stderr
        );
        // The warning that reading SQS counts as a receive: not part of the tables.
        let stderr: String = r
            .stderr
            .lines()
            .filter(|l| !l.starts_with("warning: reading"))
            .map(|l| format!("{l}\n"))
            .collect();
        format!("$ dlqctl {}\n{stderr}{}", args.join(" "), r.stdout)
    };
    [
        run(&["inspect", "orders"]),
        run(&["classify", "orders"]),
        run(&["classify", "orders", "--by", "fingerprint"]),
        run(&[
            "check",
            "orders",
            "--baseline",
            "baseline.json",
            "--max-messages",
            "5",
        ]),
        run(&["redrive", "orders", "--class", "transient", "--dry-run"]),
    ]
    .concat()
}

/// The baseline: the fingerprints of the transient failures only (the rest are new).
fn baseline(sb: &Sandbox, env: &[(String, String)]) -> Vec<String> {
    let r = sb
        .run_with(
            &[
                "classify",
                "orders",
                "--by",
                "fingerprint",
                "--output",
                "json",
            ],
            env,
        )
        .ok();
    let all = r.json();
    let base = sb
        .run_with(
            &[
                "classify",
                "orders",
                "--by",
                "fingerprint",
                "--class",
                "transient",
                "--output",
                "json",
            ],
            env,
        )
        .ok();
    sb.write("baseline.json", &base.stdout);
    all["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"]["fingerprint"].as_str().unwrap().to_string())
        .collect()
}

fn snapshots(name: &str, sb: &Sandbox, env: &[(String, String)], names: &[(&str, &str)]) {
    let fps = baseline(sb, env);
    let fp: Vec<&str> = fps.iter().map(String::as_str).collect();
    for width in [80, 120] {
        let text = session(sb, env, width);
        let mut whole = vec!["fingerprint", "unclassified", "permanent", "transient"];
        whole.extend(&fp);
        assert_fits(&text, width, &whole);
        insta::with_settings!({ prepend_module_to_snapshot => false }, {
            assert_snapshot!(format!("{name}_{width}"), normalise(&text, names));
        });
    }
}

#[tokio::test]
async fn postgres_tables_at_80_and_120_columns() {
    let db = Db::new("widths").await;
    for (n, error) in failures() {
        db.exec(&format!(
            "INSERT INTO {{s}}.dead_letters (message_id, queue, payload, headers, error, attempts, enqueued_at, failed_at)
             VALUES ('ord-{n}', 'orders', '{{\"order_id\": {n}}}', '{{\"tenant\": \"acme\"}}', '{}', 5,
                     now() - interval '3 days 2 hours' + interval '1 hour' * {n}, now() - interval '1 day 2 hours' - interval '1 minute' * {n})",
            error.replace('\'', "''")
        ))
        .await;
    }
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        &format!("[queues.orders]\ndlq = \"{}\"\n", db.dlq()),
    );
    let port = url::Url::parse(&pg_url())
        .unwrap()
        .port()
        .unwrap()
        .to_string();
    snapshots(
        "widths_postgres",
        &sb,
        &[],
        &[(&db.schema, "SCHEMA"), (&port, "PORT")],
    );
}

#[tokio::test]
async fn sqs_tables_at_80_and_120_columns() {
    let sqs = Sqs::new("widths").await;
    let (_src, dlq) = sqs.pair(false, 3).await;
    let attr = |v: &str| {
        aws_sdk_sqs::types::MessageAttributeValue::builder()
            .data_type("String")
            .string_value(v)
            .build()
            .unwrap()
    };
    for (n, error) in failures() {
        sqs.client
            .send_message()
            .queue_url(&dlq)
            .message_body(format!("{{\"order_id\": {n}}}"))
            .message_attributes("error", attr(&error))
            .send()
            .await
            .unwrap();
    }
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        &format!("[queues.orders]\ndlq = \"{dlq}\"\n"),
    );
    let endpoint = crate::harness::sqs_endpoint();
    snapshots(
        "widths_sqs",
        &sb,
        &sqs.env(&sb),
        &[(&sqs.prefix, "PREFIX"), (&endpoint, "ENDPOINT")],
    );
}

#[tokio::test]
async fn kafka_tables_at_80_and_120_columns() {
    let k = Kafka::new("widths");
    k.create("dlt", 1, &[]).await;
    k.create("orders", 1, &[]).await;
    let original = k.topic("orders");
    let listener = "Listener method 'public void com.acme.orders.OrderListener.on(com.acme.orders.Order)' threw exception";
    let start = chrono::Utc::now().timestamp_millis() - 26 * 3_600_000;
    for (n, error) in failures() {
        let cause = if error.starts_with("PaymentDeclined") {
            "com.acme.payments.PaymentDeclinedException"
        } else if error.starts_with("upstream") {
            "java.net.SocketTimeoutException"
        } else if error.starts_with("validation") {
            "jakarta.validation.ConstraintViolationException"
        } else {
            "com.acme.orders.EmptyOrderException"
        };
        let message = format!("{listener}; nested exception is {cause}: {error}");
        let ts = (start + n as i64 * 60_000).to_be_bytes();
        let offset = (1000 + n as i64).to_be_bytes();
        let value = format!("{{\"order_id\": {n}}}");
        k.produce(
            "dlt",
            Some(0),
            Some(format!("cust-{n}").as_bytes()),
            Some(value.as_bytes()),
            &[
                ("kafka_dlt-original-topic", Some(original.as_bytes())),
                ("kafka_dlt-original-partition", Some(&0i32.to_be_bytes())),
                ("kafka_dlt-original-offset", Some(&offset)),
                ("kafka_dlt-original-timestamp", Some(&ts)),
                (
                    "kafka_dlt-exception-fqcn",
                    Some(b"org.springframework.kafka.listener.ListenerExecutionFailedException"),
                ),
                ("kafka_dlt-exception-cause-fqcn", Some(cause.as_bytes())),
                ("kafka_dlt-exception-message", Some(message.as_bytes())),
            ],
        )
        .await;
    }
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        &format!("[queues.orders]\ndlq = \"{}\"\n", k.url("dlt")),
    );
    snapshots(
        "widths_kafka",
        &sb,
        &k.env(),
        &[(&k.prefix, "PREFIX"), (&k.bootstrap, "BOOTSTRAP")],
    );
}

/// The audit table at 80 and 120 columns: a purge with an archive and a reason, a filtered
/// redrive. Who ran them is rewritten in the log to fixed names (the table's layout must not
/// depend on the machine's user and host names).
#[tokio::test]
async fn audit_table_at_80_and_120_columns() {
    let db = Db::new("widthsaudit").await;
    for (n, error) in failures() {
        db.exec(&format!(
            "INSERT INTO {{s}}.dead_letters (message_id, queue, payload, error) VALUES ('ord-{n}', 'orders', '{{}}', '{}')",
            error.replace('\'', "''")
        ))
        .await;
    }
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        &format!("[queues.orders]\ndlq = \"{}\"\n", db.dlq()),
    );
    sb.run(&[
        "purge",
        "orders",
        "--error",
        "no line items",
        "--archive",
        "poison.jsonl",
        "--reason",
        "INC-4211: poison orders, archived",
        "--yes",
    ])
    .ok();
    sb.run(&["redrive", "orders", "--class", "transient", "--yes"])
        .ok();
    let log = sb.path(".local/state/dlqctl/audit.jsonl");
    let text = std::fs::read_to_string(&log).expect("the audit log");
    let fixed: String = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v["record"] == "intent" {
                v["user"] = "oncall".into();
                v["host"] = "ops-bastion".into();
            }
            format!("{v}\n")
        })
        .collect();
    std::fs::write(&log, fixed).unwrap();
    let port = url::Url::parse(&pg_url())
        .unwrap()
        .port()
        .unwrap()
        .to_string();
    let home = sb.dir.path().to_string_lossy().into_owned();
    for width in [80, 120] {
        let r = sb
            .run_env(
                &["audit", "--output", "table"],
                &[("COLUMNS", &width.to_string())],
            )
            .ok();
        assert_fits(&r.stdout, width, &["orders", "purge", "redrive"]);
        let text = normalise(
            &r.stdout,
            &[(&db.schema, "SCHEMA"), (&port, "PORT"), (&home, "HOME")],
        );
        insta::with_settings!({ prepend_module_to_snapshot => false }, {
            assert_snapshot!(format!("widths_audit_{width}"), text);
        });
    }
}

/// What a filtered run counts before it asks (issue 24), at an 80-column terminal: the plan's
/// count, Kafka's "committed past" row, and after "y" the summary's committed-past sentence,
/// each within 80 columns, no word broken.
#[tokio::test(flavor = "multi_thread")]
async fn the_count_before_asking_fits_80_columns() {
    let sb = Sandbox::new();
    let shown = |seen: &str| -> Vec<String> {
        seen.replace('\r', "")
            .lines()
            .map(|l| l.replace("\u{1b}[?25l", "").replace("\u{1b}[?25h", ""))
            .filter(|l| !l.contains('\u{1b}'))
            .collect()
    };
    let fits = |seen: &str| {
        for l in shown(seen) {
            assert!(
                l.chars().count() <= 80,
                "a line wider than 80 columns ({}):\n{l}\nin:\n{seen}",
                l.chars().count()
            );
        }
    };

    let db = Db::new("widthscnt").await;
    db.seed(8).await;
    let (code, seen) = crate::terminal::at_terminal(
        &sb,
        &format!(
            "COLUMNS=80 {} redrive '{}' --class transient",
            crate::harness::bin(),
            db.dlq()
        ),
        "Proceed?",
        b"n",
    );
    assert_eq!(code, 0, "{seen}");
    fits(&seen);
    assert!(seen.contains("4 of 8 pass the filter"), "{seen}");

    let k = Kafka::new("widthscnt");
    k.create("orders", 1, &[]).await;
    k.create("dlt", 3, &[]).await;
    let orders = k.topic("orders");
    for i in 0..12 {
        k.produce(
            "dlt",
            Some(i % 3),
            None,
            Some(format!("{{\"n\": {i}}}").as_bytes()),
            &[
                ("dlqctl-stable-id", Some(format!("r-{i}").as_bytes())),
                ("kafka_dlt-original-topic", Some(orders.as_bytes())),
            ],
        )
        .await;
    }
    let (code, seen) = crate::terminal::at_terminal(
        &sb,
        &format!(
            "COLUMNS=80 DLQCTL_KAFKA_IDLE_MS=2000 {} redrive '{}' --id r-7",
            crate::harness::bin(),
            k.url("dlt")
        ),
        "Proceed?",
        b"y",
    );
    assert_eq!(code, 0, "{seen}");
    fits(&seen);
    let lines = shown(&seen);
    assert!(
        lines.iter().any(|l| l.contains("│ committed past ")),
        "the plan's row:\n{seen}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("committed past 2 (")),
        "the summary's sentence:\n{seen}"
    );
    assert!(seen.contains("`dlqctl replay`"), "{seen}");
}

/// Sidekiq's dead set (issue 28) at 80 and 120 columns: the same session as the other
/// backends, on jobs Sidekiq itself made, their errors rewritten to the four failures. The
/// database number is kept at three digits, so that the address has the same width each run.
#[tokio::test(flavor = "multi_thread")]
async fn redis_tables_at_80_and_120_columns() {
    use crate::redis_harness::{RedisDb, redis_url, seed_sidekiq};
    let mut db = RedisDb::new().await;
    for _ in 0..200 {
        if db.db >= 100 {
            break;
        }
        db = RedisDb::new().await;
    }
    assert!(db.db >= 100, "a three-digit database");
    let errors = [
        ("Stripe::CardError", "card for cus_{} declined"),
        ("Net::ReadTimeout", "upstream call timed out after 30s"),
        (
            "ActiveRecord::RecordInvalid",
            "Validation failed: Currency must be one of EUR, USD",
        ),
        ("OrderService::EmptyOrder", "order {} has no line items"),
    ];
    let mut kinds = Vec::new();
    for (i, (_, count)) in FAILURES.iter().enumerate() {
        kinds.extend(std::iter::repeat_n(i, *count));
    }
    let ids = seed_sidekiq(&db, kinds.len()).await;
    let jobs: Vec<String> = db.zrange("dead").await;
    let start = chrono::Utc::now().timestamp() as f64 - 26.0 * 3600.0;
    let mut cmd = redis::cmd("ZADD");
    cmd.arg("dead");
    for (n, kind) in kinds.iter().enumerate() {
        let old = jobs
            .iter()
            .find(|j| j.contains(&format!("\"{}\"", ids[n])))
            .unwrap();
        let _: i64 = db.q(redis::cmd("ZREM").arg("dead").arg(old)).await;
        let mut job: serde_json::Value = serde_json::from_str(old).unwrap();
        let (class, message) = errors[*kind];
        let at = start + n as f64;
        job["error_class"] = class.into();
        job["error_message"] = message
            .replace("{}", &format!("N3kd9a{:02}Q", n + 1))
            .into();
        job["failed_at"] = at.into();
        cmd.arg(at).arg(job.to_string());
    }
    let _: i64 = db.q(&mut cmd).await;
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        &format!("[queues.orders]\ndlq = \"{}\"\n", db.sidekiq()),
    );
    let base = redis_url();
    snapshots(
        "widths_redis",
        &sb,
        &[],
        &[(&base, "REDIS"), (&format!("/{}?", db.db), "/DB?")],
    );
}
