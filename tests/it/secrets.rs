//! No password reaches stdout or stderr, whatever the command, wherever the password was given
//! (SPEC: "Passwords never appear in output, logs or errors").
//!
//! Every command (inspect, peek, tail, classify with and without a dedupe table, export, redrive
//! --dry-run and --yes, replay, verify) runs at `-vv` with JSON output, at the default verbosity
//! with tables, and inspect once at `-vvv` (every trace line), with the password in each place
//! one can go: a PostgreSQL URL's user info (plain, and with `@ : / ? # & % + =` and a space
//! percent-encoded), `?password=` (both), `PGPASSWORD`, `~/.pgpass`, `pg_service.conf`, the
//! same URL as `--dedupe`, as the dedupe URL and the queue of `dlqctl.toml`, and as replay's
//! `--to`; wrong passwords of each kind (the authentication failure must not print them);
//! `sslpassword=` (refused by name); Kafka's `sasl.password` in `[kafka.properties]` (and a
//! mistyped key holding one); the AWS secret key and session token. The export files are
//! checked too. Each run is also held to its exit code and, where it works, to what it did (and
//! the tables and topics to what the runs did), so the test cannot pass by every command
//! failing early. The placements run side by side, each in a schema of its own.

use std::path::Path;

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

use crate::harness::{Db, Kafka, Run, Sandbox, Sqs, pg_url, sqs_endpoint};

/// The password of the first test role: letters, digits and dashes.
const PLAIN: &str = "Pl4inPw-Tq7RzXk-Vn3LpQw";
/// The password of the second: every character a URL must encode.
const SPECIAL: &str = "Hx7VqWe@Lm3:Rt9PzYu/Zc?#&%+ =Kd8Gb2Nq";
const WRONG_IN_USER_INFO: &str = "Wr0ngUi-Kj4NdBxPe";
const WRONG_IN_QUERY: &str = "Wr0ngQy-Mc6TfGhRa";
const WRONG_IN_ENV: &str = "Wr0ngEv-Pz5HsJkWu";
const SSL_KEY_PASSWORD: &str = "SslPw9-Qm5TcLrXe";
const KAFKA_PASSWORD: &str = "KfkPw8-Zr8WdNeYb";
/// The value of a mistyped key (`sasl.passwrod`): still a password, never shown.
const KAFKA_MISTYPED: &str = "KfkTy7-Bv2XsMoLi";
const AWS_SECRET_KEY: &str = "AwsSk6-Gh4JkLpQz";
const AWS_SESSION_TOKEN: &str = "AwsTk5-Yu7IoPaSd";

const SECRETS: &[&str] = &[
    PLAIN,
    SPECIAL,
    WRONG_IN_USER_INFO,
    WRONG_IN_QUERY,
    WRONG_IN_ENV,
    SSL_KEY_PASSWORD,
    KAFKA_PASSWORD,
    KAFKA_MISTYPED,
    AWS_SECRET_KEY,
    AWS_SESSION_TOKEN,
];

/// Global options of each round of commands: `-vv` (every debug line of dlqctl and its
/// libraries) with JSON, and the default verbosity with tables (where the plans, notes and
/// warnings for people are printed). The first round must be the JSON one (the SQS part reads
/// counts from it).
const ROUNDS: &[&[&str]] = &[&["-vv", "--output", "json"], &["--output", "table"]];

/// Every form in which a secret could show: as given, percent-encoded (both hex cases),
/// form-encoded, and each run of seven or more letters and digits in it, so that a partial
/// leak (a password cut at its `@`, say) is caught too. The runs are distinctive enough that
/// nothing else (request ids, schema names) contains them.
fn needles() -> Vec<String> {
    let mut out = Vec::new();
    for s in SECRETS {
        let pct = utf8_percent_encode(s, NON_ALPHANUMERIC).to_string();
        out.push(s.to_string());
        out.push(pct.clone());
        out.push(url::form_urlencoded::byte_serialize(s.as_bytes()).collect());
        for run in s.split(|c: char| !c.is_ascii_alphanumeric()) {
            if run.len() >= 7 {
                out.push(run.to_string());
            }
        }
    }
    // Lower-case hex escapes, where a client writes them so.
    let lower: Vec<String> = out
        .iter()
        .filter(|n| n.contains('%'))
        .map(|n| {
            let mut s = String::new();
            let mut chars = n.chars().peekable();
            while let Some(c) = chars.next() {
                s.push(c);
                if c == '%' {
                    for _ in 0..2 {
                        if let Some(h) = chars.next() {
                            s.push(h.to_ascii_lowercase());
                        }
                    }
                }
            }
            s
        })
        .collect();
    out.extend(lower);
    out.sort();
    out.dedup();
    out
}

#[track_caller]
fn assert_no_secret(text: &str, place: &str, what: &str) {
    for n in needles() {
        assert!(
            !text.contains(&n),
            "LEAK: `{n}` on {place} of {what}\n--- {place}:\n{text}"
        );
    }
}

/// Run dlqctl; no secret on stdout or stderr, and the exit code is `want`.
#[track_caller]
fn run(sb: &Sandbox, args: &[&str], env: &[(String, String)], want: i32) -> Run {
    let r = sb.run_with(args, env);
    let what = format!("`dlqctl {}` (env: {env:?})", args.join(" "));
    assert_no_secret(&r.stdout, "stdout", &what);
    assert_no_secret(&r.stderr, "stderr", &what);
    assert_eq!(
        r.code, want,
        "{what}: exit code {} (wanted {want})\nstdout:\n{}\nstderr:\n{}",
        r.code, r.stdout, r.stderr
    );
    r
}

/// `round` followed by `args`, as one command line.
fn cmd<'a>(round: &[&'a str], args: &[&'a str]) -> Vec<&'a str> {
    round.iter().chain(args).copied().collect()
}

fn is_json(round: &[&str]) -> bool {
    round.windows(2).any(|w| w == ["--output", "json"])
}

#[track_caller]
fn assert_file_clean(path: &Path, what: &str) {
    if let Ok(text) = std::fs::read_to_string(path) {
        assert_no_secret(&text, &path.display().to_string(), what);
    }
}

/// How a placement's commands end.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Outcome {
    Works,
    /// Every command that connects fails with this exit code.
    Fails(i32),
}

/// Where the password goes, for one PostgreSQL connection.
struct Placement {
    name: &'static str,
    /// `postgres://USER[:PASSWORD]@HOST:PORT/DB`
    base: String,
    /// Query parameters after dlqctl's own (`password=…`, `sslpassword=…`).
    extra: Vec<String>,
    env: Vec<(String, String)>,
    /// Files written into the sandbox (its HOME), mode 0600: `~/.pgpass`, `~/.pg_service.conf`.
    files: Vec<(&'static str, String)>,
    outcome: Outcome,
}

impl Placement {
    fn url(&self, own: &[String]) -> String {
        let q: Vec<&str> = own.iter().chain(&self.extra).map(String::as_str).collect();
        if q.is_empty() {
            self.base.clone()
        } else {
            format!("{}?{}", self.base, q.join("&"))
        }
    }

    fn want(&self, ok: i32) -> i32 {
        match self.outcome {
            Outcome::Works => ok,
            Outcome::Fails(c) => c,
        }
    }
}

fn enc(s: &str) -> String {
    utf8_percent_encode(s, NON_ALPHANUMERIC).to_string()
}

/// Host, port and database of the test server.
fn server() -> (String, u16, String) {
    let u = url::Url::parse(&pg_url()).expect("DLQCTL_TEST_PG_URL is a URL");
    (
        u.host_str().expect("a host").to_string(),
        u.port().unwrap_or(5432),
        u.path().trim_start_matches('/').to_string(),
    )
}

/// `HOST:PORT/DB` of the test server.
fn host_port_db() -> String {
    let (host, port, db) = server();
    format!("{host}:{port}/{db}")
}

fn pgpassword(v: &str) -> Vec<(String, String)> {
    vec![("PGPASSWORD".to_string(), v.to_string())]
}

fn placements(plain_role: &str, special_role: &str) -> Vec<Placement> {
    let hpd = host_port_db();
    let (host, port, db) = server();
    let p = |name, base: String, extra: Vec<String>, env, outcome| Placement {
        name,
        base,
        extra,
        env,
        files: vec![],
        outcome,
    };
    let with_file = |mut p: Placement, name, text| {
        p.files.push((name, text));
        p
    };
    vec![
        p(
            "user info",
            format!("postgres://{plain_role}:{PLAIN}@{hpd}"),
            vec![],
            vec![],
            Outcome::Works,
        ),
        p(
            "user info, percent-encoded",
            format!("postgres://{special_role}:{}@{hpd}", enc(SPECIAL)),
            vec![],
            vec![],
            Outcome::Works,
        ),
        p(
            "?password=",
            format!("postgres://{plain_role}@{hpd}"),
            vec![format!("password={PLAIN}")],
            vec![],
            Outcome::Works,
        ),
        p(
            "?password=, percent-encoded",
            format!("postgres://{special_role}@{hpd}"),
            vec![format!("password={}", enc(SPECIAL))],
            vec![],
            Outcome::Works,
        ),
        p(
            "PGPASSWORD",
            format!("postgres://{special_role}@{hpd}"),
            vec![],
            pgpassword(SPECIAL),
            Outcome::Works,
        ),
        with_file(
            p(
                "~/.pgpass",
                format!("postgres://{special_role}@{hpd}"),
                vec![],
                vec![],
                Outcome::Works,
            ),
            ".pgpass",
            format!(
                "{host}:{port}:{db}:{special_role}:{}\n",
                SPECIAL.replace('\\', "\\\\").replace(':', "\\:")
            ),
        ),
        with_file(
            p(
                "pg_service.conf",
                format!("postgres:///{db}"),
                vec!["service=dlqctl-secrets".to_string()],
                vec![],
                Outcome::Works,
            ),
            ".pg_service.conf",
            format!(
                "[dlqctl-secrets]\nhost={host}\nport={port}\nuser={special_role}\npassword={SPECIAL}\n"
            ),
        ),
        p(
            "wrong password in the user info",
            format!("postgres://{plain_role}:{WRONG_IN_USER_INFO}@{hpd}"),
            vec![],
            vec![],
            Outcome::Fails(3),
        ),
        p(
            "wrong ?password=",
            format!("postgres://{plain_role}@{hpd}"),
            vec![format!("password={WRONG_IN_QUERY}")],
            vec![],
            Outcome::Fails(3),
        ),
        p(
            "wrong PGPASSWORD",
            format!("postgres://{special_role}@{hpd}"),
            vec![],
            pgpassword(WRONG_IN_ENV),
            Outcome::Fails(3),
        ),
        p(
            "sslpassword= beside a user-info password",
            format!("postgres://{plain_role}:{PLAIN}@{hpd}"),
            vec![format!("sslpassword={SSL_KEY_PASSWORD}")],
            vec![],
            Outcome::Fails(2),
        ),
        p(
            "sslpassword= beside PGPASSWORD",
            format!("postgres://{special_role}@{hpd}"),
            vec![format!("sslpassword={}", enc(SSL_KEY_PASSWORD))],
            pgpassword(SPECIAL),
            Outcome::Fails(2),
        ),
    ]
}

const DEAD_LETTERS: i64 = 6;

/// Every command against one placement, in every round. `seed` is an export file (two
/// records, written with the harness's own URL) for replay.
fn pg_commands(p: &Placement, schema: &str, seed: &Path, seed_records: usize) {
    let sb = Sandbox::new();
    for (name, text) in &p.files {
        use std::os::unix::fs::PermissionsExt;
        let f = sb.write(name, text);
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let dlq = p.url(&[
        format!("table={schema}.dead_letters"),
        format!("source={schema}.queue_messages"),
    ]);
    let target = p.url(&[format!("table={schema}.queue_messages")]);
    let dedupe = p.url(&[format!("table={schema}.processed_messages")]);
    sb.write(
        "dlqctl.toml",
        &format!(
            "[queues.orders]\ndlq = \"{dlq}\"\ndlq_retention = \"14d\"\ntime_to_dead_letter = \"1h\"\nreplay_window = \"3d\"\n\n[queues.orders.dedupe]\nurl = \"{}\"\ntable = \"{schema}.processed_messages\"\nretention = \"30d\"\n",
            p.url(&[])
        ),
    );
    let seed = seed.to_str().expect("a UTF-8 path");
    let env = &p.env;
    let works = p.outcome == Outcome::Works;
    let ctx = |what: &str| format!("[{}] {what}", p.name);
    // -vvv once: everything the libraries log.
    run(&sb, &["-vvv", "inspect", &dlq], env, p.want(0));
    for (i, round) in ROUNDS.iter().enumerate() {
        let json = works && is_json(round);

        let r = run(&sb, &cmd(round, &["inspect", &dlq]), env, p.want(0));
        if json {
            let m = r.json()[0]["facts"]["messages"].as_i64();
            assert!(m.is_some_and(|m| m > 0), "{}: {}", ctx("inspect"), r.stdout);
        }

        let r = run(&sb, &cmd(round, &["peek", &dlq, "-n", "2"]), env, p.want(0));
        if works {
            assert!(r.stdout.contains("ord-"), "{}: {}", ctx("peek"), r.stdout);
        }
        if json {
            assert_eq!(
                r.json().as_array().map(Vec::len),
                Some(2),
                "{}",
                ctx("peek")
            );
        }

        let r = run(
            &sb,
            &cmd(
                round,
                &[
                    "tail",
                    &dlq,
                    "--from-start",
                    "--max",
                    "1",
                    // Ended by --max as soon as the first message is read; the timeout only
                    // bounds a failure (1s was too short on a loaded machine).
                    "--idle-timeout",
                    "60s",
                ],
            ),
            env,
            p.want(0),
        );
        if works {
            assert!(r.stdout.contains("ord-"), "{}: {}", ctx("tail"), r.stdout);
        }

        // The dedupe table given on the command line, and in dlqctl.toml.
        for args in [
            &["classify", &dlq, "--dedupe", &dedupe][..],
            &["classify", "orders"][..],
        ] {
            let r = run(&sb, &cmd(round, args), env, p.want(0));
            if json {
                let j = r.json();
                assert!(j["total"].as_i64().is_some_and(|t| t > 0), "{j}");
                assert_eq!(
                    j["dedupe"]["processed"],
                    j["total"],
                    "{}: {j}",
                    ctx("classify")
                );
            }
        }

        let file = sb.path(&format!("export-{i}.jsonl"));
        let f = file.to_str().expect("a UTF-8 path");
        run(&sb, &cmd(round, &["export", &dlq, "-o", f]), env, p.want(0));
        assert_file_clean(&file, &ctx("export"));
        if works {
            let lines = std::fs::read_to_string(&file)
                .expect("the export")
                .lines()
                .count();
            assert!(lines > 0, "{}", ctx("export"));
        } else {
            assert!(!file.exists(), "{}", ctx("a failed export left a file"));
        }

        let r = run(
            &sb,
            &cmd(round, &["redrive", &dlq, "--dry-run"]),
            env,
            p.want(0),
        );
        if json {
            let j = r.json();
            assert_eq!(j["dry_run"], true, "{j}");
            assert!(j["moved"].as_i64().is_some_and(|m| m > 0), "{j}");
        }

        let r = run(
            &sb,
            &cmd(round, &["redrive", &dlq, "--yes", "--max", "1"]),
            env,
            p.want(0),
        );
        if json {
            assert_eq!(r.json()["moved"], 1, "{}: {}", ctx("redrive"), r.stdout);
        }

        let r = run(
            &sb,
            &cmd(round, &["replay", seed, "--to", &target, "--yes"]),
            env,
            p.want(0),
        );
        if json {
            assert_eq!(
                r.json()["moved"],
                seed_records,
                "{}: {}",
                ctx("replay"),
                r.stdout
            );
        }

        // verify reports an unreachable queue as a failed check (exit 1), a refused URL as a
        // config error.
        let want = match p.outcome {
            Outcome::Works => 0,
            Outcome::Fails(3) => 1,
            Outcome::Fails(c) => c,
        };
        let r = run(&sb, &cmd(round, &["verify"]), env, want);
        if json {
            assert_eq!(r.json()["passed"], true, "{}: {}", ctx("verify"), r.stdout);
        }
    }
}

/// A role of this run, with `password`, that may do anything in the test database. The roles
/// of earlier runs whose process is gone (a run that failed before dropping its own) are
/// dropped first; those of a run still going are left alone.
async fn role(db: &Db, name: &str, password: &str) -> String {
    let old: Vec<String> = sqlx::query_scalar(
        "SELECT rolname::text FROM pg_roles WHERE rolname LIKE 'dlqctl\\_secret\\_%'",
    )
    .fetch_all(&db.pool)
    .await
    .expect("list roles");
    for r in old {
        let pid = r.rsplit('_').next().unwrap_or_default();
        if !Path::new("/proc").join(pid).exists() {
            db.exec(&format!("DROP ROLE IF EXISTS {r}")).await;
        }
    }
    let role = format!("dlqctl_secret_{name}_{}", std::process::id());
    db.exec(&format!(
        "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN SUPERUSER PASSWORD '{password}'"
    ))
    .await;
    role
}

#[tokio::test(flavor = "multi_thread")]
async fn no_command_shows_a_password_wherever_it_was_given() {
    assert!(
        !SECRETS.iter().any(|s| s.contains('\'')),
        "the passwords go into SQL literals"
    );
    // Replay's source: an export written with the harness's own URL (no secret in it).
    let src = Db::new("secrets_src").await;
    src.seed(2).await;
    let setup = Sandbox::new();
    let seed = setup.path("seed.jsonl");
    setup
        .run(&["export", &src.dlq(), "-o", seed.to_str().unwrap()])
        .ok();
    let seed_records = std::fs::read_to_string(&seed).unwrap().lines().count();
    assert_eq!(seed_records, 2);

    let plain_role = role(&src, "plain", PLAIN).await;
    let special_role = role(&src, "special", SPECIAL).await;
    let placements = placements(&plain_role, &special_role);
    let mut dbs = Vec::new();
    for _ in &placements {
        let db = Db::new("secrets").await;
        db.seed(DEAD_LETTERS).await;
        db.exec(&format!(
            "INSERT INTO {{s}}.processed_messages (message_id) SELECT 'ord-'||g FROM generate_series(1, {DEAD_LETTERS}) g"
        ))
        .await;
        dbs.push(db);
    }

    // Kafka: a dead-letter topic and its source, with SASL properties in the config file.
    let k = Kafka::new("secrets");
    k.create("dlt", 1, &[]).await;
    k.create("orders", 1, &[]).await;
    for i in 0..4 {
        let body = format!("{{\"order\": {i}}}");
        k.produce(
            "dlt",
            Some(0),
            Some(format!("cust-{i}").as_bytes()),
            Some(body.as_bytes()),
            &[
                ("message_id", Some(format!("kord-{i}").as_bytes())),
                ("kafka_dlt-exception-message", Some(b"Read timed out")),
            ],
        )
        .await;
    }
    let kdedupe = Db::new("secrets_k").await;
    kdedupe
        .exec("INSERT INTO {s}.processed_messages (message_id) VALUES ('kord-0')")
        .await;

    // SQS: a dead-letter queue with two messages, and a source.
    let sqs = Sqs::new("secrets").await;
    let sqs_sandbox = Sandbox::new();
    let (sqs_dlq, _) = sqs.create("dlq", &[]).await;
    let (sqs_src, _) = sqs.create("src", &[]).await;
    for i in 0..2 {
        sqs.client
            .send_message()
            .queue_url(&sqs_dlq)
            .message_body(format!("{{\"order\": {i}}}"))
            .send()
            .await
            .expect("send");
    }

    std::thread::scope(|s| {
        for (p, db) in placements.iter().zip(&dbs) {
            let seed = &seed;
            std::thread::Builder::new()
                .name(p.name.to_string())
                .spawn_scoped(s, move || pg_commands(p, &db.schema, seed, seed_records))
                .unwrap();
        }
        let seed = &seed;
        let kafka = KafkaSetup {
            dlt: k.url("dlt"),
            orders: k.url("orders"),
            env: k.env(),
            dedupe_schema: &kdedupe.schema,
            role: &plain_role,
        };
        std::thread::Builder::new()
            .name("kafka".into())
            .spawn_scoped(s, move || kafka_commands(kafka, seed, seed_records))
            .unwrap();
        let sqs_env = sqs.env(&sqs_sandbox);
        let (sqs_dlq, sqs_src) = (&sqs_dlq, &sqs_src);
        std::thread::Builder::new()
            .name("sqs".into())
            .spawn_scoped(s, move || sqs_commands(sqs_dlq, sqs_src, sqs_env))
            .unwrap();
    });

    // What the commands did: each working round redrove one dead letter and replayed the seed.
    for (p, db) in placements.iter().zip(&dbs) {
        let rounds = ROUNDS.len() as i64;
        let (left, copied) = match p.outcome {
            Outcome::Works => (DEAD_LETTERS - rounds, rounds * (1 + seed_records as i64)),
            Outcome::Fails(_) => (DEAD_LETTERS, 0),
        };
        assert_eq!(db.count("dead_letters").await, left, "[{}]", p.name);
        assert_eq!(db.count("queue_messages").await, copied, "[{}]", p.name);
    }
    let rounds = ROUNDS.len() as i64;
    let want = (rounds * (1 + seed_records as i64)) as usize;
    let copies = k.read_until("orders", |r| r.len() >= want).await;
    assert_eq!(
        copies.len(),
        want,
        "each Kafka round redrove one record and replayed the seed"
    );

    for r in [&plain_role, &special_role] {
        src.exec(&format!("DROP ROLE IF EXISTS {r}")).await;
    }
}

/// What the Kafka part needs of the fixtures (`Kafka` itself stays on the test's thread).
struct KafkaSetup<'a> {
    dlt: String,
    orders: String,
    env: Vec<(String, String)>,
    dedupe_schema: &'a str,
    role: &'a str,
}

/// Kafka with `sasl.password` (and `sasl.username`, under PLAINTEXT so that the broker is
/// reachable) in `[kafka.properties]`, and a dedupe table whose URL has a password (in the
/// config file's user info, and in `--dedupe`'s `?password=`); then a mistyped property holding
/// a password, which librdkafka refuses by its name.
fn kafka_commands(k: KafkaSetup, seed: &Path, seed_records: usize) {
    let sb = Sandbox::new();
    let seed = seed.to_str().expect("a UTF-8 path");
    let KafkaSetup {
        dlt,
        orders,
        env,
        dedupe_schema,
        role,
    } = k;
    let dedupe_url = format!("postgres://{role}:{PLAIN}@{}", host_port_db());
    let config = |props: &str| {
        format!(
            "[kafka.properties]\n{props}\n\n[queues.kdlt]\ndlq = \"{dlt}\"\nsource = \"{orders}\"\nid = \"header:message_id\"\nreplay_window = \"3d\"\n\n[queues.kdlt.dedupe]\nurl = \"{dedupe_url}\"\ntable = \"{}.processed_messages\"\nretention = \"30d\"\n",
            dedupe_schema
        )
    };
    sb.write(
        "dlqctl.toml",
        &config(&format!(
            "\"security.protocol\" = \"PLAINTEXT\"\n\"sasl.mechanism\" = \"PLAIN\"\n\"sasl.username\" = \"dlqctl-sasl-user\"\n\"sasl.password\" = \"{KAFKA_PASSWORD}\""
        )),
    );
    let cli_dedupe = format!(
        "postgres://{role}@{}?table={}.processed_messages&password={PLAIN}",
        host_port_db(),
        dedupe_schema
    );
    // -vvv once: librdkafka's and rdkafka's trace lines.
    run(&sb, &["-vvv", "inspect", "kdlt"], &env, 0);
    for (i, round) in ROUNDS.iter().enumerate() {
        let json = is_json(round);
        let r = run(&sb, &cmd(round, &["inspect", "kdlt"]), &env, 0);
        if json {
            assert!(r.stdout.contains("\"queue\""), "{}", r.stdout);
        }
        let r = run(&sb, &cmd(round, &["peek", "kdlt", "-n", "2"]), &env, 0);
        assert!(r.stdout.contains("kord-"), "kafka peek: {}", r.stdout);
        let r = run(
            &sb,
            &cmd(
                round,
                &[
                    "tail",
                    &dlt,
                    "--from-start",
                    "--max",
                    "1",
                    // Ended by --max as soon as the first message is read; the timeout only
                    // bounds a failure (1s was too short on a loaded machine).
                    "--idle-timeout",
                    "60s",
                ],
            ),
            &env,
            0,
        );
        assert!(r.stdout.contains("order"), "kafka tail: {}", r.stdout);
        for args in [
            &["classify", "kdlt"][..],
            &["classify", &dlt, "--dedupe", &cli_dedupe][..],
        ] {
            let r = run(&sb, &cmd(round, args), &env, 0);
            if json {
                let j = r.json();
                assert_eq!(j["total"], 4, "{j}");
                assert_eq!(j["dedupe"]["processed"], 1, "{j}");
            }
        }
        let file = sb.path(&format!("kexport-{i}.jsonl"));
        let f = file.to_str().unwrap();
        run(&sb, &cmd(round, &["export", "kdlt", "-o", f]), &env, 0);
        assert_file_clean(&file, "kafka export");
        assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 4);
        let r = run(&sb, &cmd(round, &["redrive", "kdlt", "--dry-run"]), &env, 0);
        if json {
            assert!(
                r.json()["moved"].as_i64().is_some_and(|m| m > 0),
                "{}",
                r.stdout
            );
        }
        let r = run(
            &sb,
            &cmd(round, &["redrive", "kdlt", "--yes", "--max", "1"]),
            &env,
            0,
        );
        if json {
            assert_eq!(r.json()["moved"], 1, "{}", r.stdout);
        }
        let r = run(
            &sb,
            &cmd(round, &["replay", seed, "--to", &orders, "--yes"]),
            &env,
            0,
        );
        if json {
            assert_eq!(r.json()["moved"], seed_records, "{}", r.stdout);
        }
        let r = run(&sb, &cmd(round, &["verify", "kdlt"]), &env, 0);
        if json {
            assert_eq!(r.json()["passed"], true, "{}", r.stdout);
        }
    }

    // A mistyped property name: librdkafka refuses it, and its value is not shown.
    let bad = Sandbox::new();
    bad.write(
        "dlqctl.toml",
        &config(&format!(
            "\"sasl.username\" = \"dlqctl-sasl-user\"\n\"sasl.passwrod\" = \"{KAFKA_MISTYPED}\""
        )),
    );
    let file = bad.path("kexport.jsonl");
    let f = file.to_str().unwrap();
    for round in ROUNDS {
        for args in [
            &["inspect", "kdlt"][..],
            &["peek", "kdlt"][..],
            &["tail", "kdlt", "--max", "1", "--idle-timeout", "1s"][..],
            &["classify", "kdlt"][..],
            &["export", "kdlt", "-o", f][..],
            &["redrive", "kdlt", "--dry-run"][..],
            &["redrive", "kdlt", "--yes"][..],
            &["replay", seed, "--to", "kdlt", "--yes"][..],
        ] {
            let r = run(&bad, &cmd(round, args), &env, 2);
            assert!(r.stderr.contains("sasl.passwrod"), "{}", r.stderr);
        }
        run(&bad, &cmd(round, &["verify", "kdlt"]), &env, 1);
    }
}

/// SQS with a distinctive secret key and session token: a queue that works (every reading
/// command in the first round, inspect and peek in each), and one that does not exist, with the
/// endpoint given by --endpoint-url. (Each SQS read waits for empty receives: the rounds are
/// kept short.)
fn sqs_commands(dlq: &str, src: &str, env: Vec<(String, String)>) {
    let sb = Sandbox::new();
    let mut env: Vec<(String, String)> = env
        .into_iter()
        .filter(|(k, _)| k != "AWS_SECRET_ACCESS_KEY")
        .collect();
    env.push(("AWS_SECRET_ACCESS_KEY".into(), AWS_SECRET_KEY.into()));
    env.push(("AWS_SESSION_TOKEN".into(), AWS_SESSION_TOKEN.into()));
    let no_endpoint: Vec<(String, String)> = env
        .iter()
        .filter(|(k, _)| k != "AWS_ENDPOINT_URL")
        .cloned()
        .collect();
    let endpoint = sqs_endpoint();
    let file = sb.path("sqs-export.jsonl");
    let f = file.to_str().expect("a UTF-8 path");
    // -vvv once: the SDK's trace lines (signing, the session token as a header).
    run(&sb, &["-vvv", "inspect", dlq], &env, 0);
    for (i, round) in ROUNDS.iter().enumerate() {
        let r = run(&sb, &cmd(round, &["inspect", dlq]), &env, 0);
        if is_json(round) {
            assert_eq!(r.json()[0]["facts"]["visible"], 2, "{}", r.stdout);
        }
        run(&sb, &cmd(round, &["peek", dlq]), &env, 0);
        if i == 0 {
            for args in [
                &["tail", dlq, "--max", "1", "--idle-timeout", "1s"][..],
                &["classify", dlq][..],
                &["export", dlq, "-o", f][..],
                &["redrive", dlq, "--to", src, "--dry-run"][..],
            ] {
                run(&sb, &cmd(round, args), &env, 0);
            }
            assert_file_clean(&file, "sqs export");
        }
        let r = run(
            &sb,
            &cmd(
                round,
                &[
                    "inspect",
                    "sqs://nonexistent-queue",
                    "--endpoint-url",
                    &endpoint,
                ],
            ),
            &no_endpoint,
            3,
        );
        assert!(r.stderr.contains("not found"), "{}", r.stderr);
    }
}

/// A password in the user info of a Kafka or SQS address, or of the SQS endpoint, is not shown
/// either. (Found by this file: all three are printed today, see the report of the change.)
#[tokio::test(flavor = "multi_thread")]
async fn user_info_in_kafka_and_sqs_addresses_is_never_shown() {
    let sqs = Sqs::new("secrets_ui").await;
    let (dlq, _) = sqs.create("dlq", &[]).await;
    let sb = Sandbox::new();
    let env = sqs.env(&sb);
    let no_endpoint: Vec<(String, String)> = env
        .iter()
        .filter(|(k, _)| k != "AWS_ENDPOINT_URL")
        .cloned()
        .collect();
    let endpoint = url::Url::parse(&sqs_endpoint()).unwrap();
    let with_user_info = |u: &url::Url, password: &str| {
        let mut u = u.clone();
        u.set_username("dlqctl").unwrap();
        u.set_password(Some(password)).unwrap();
        u.to_string()
    };
    let queue = url::Url::parse(&dlq).unwrap();
    let kafka = format!(
        "kafka://dlqctl:{KAFKA_PASSWORD}@{}/nonexistent-topic",
        crate::harness::kafka_bootstrap()
    );
    type Case<'a> = (Vec<String>, &'a [(String, String)]);
    let cases: Vec<Case> = vec![
        (vec!["inspect".into(), kafka], &[]),
        (vec!["inspect".into(), with_user_info(&queue, PLAIN)], &env),
        (
            vec![
                "inspect".into(),
                "sqs://nonexistent-queue".into(),
                "--endpoint-url".into(),
                with_user_info(&endpoint, SPECIAL),
            ],
            &no_endpoint,
        ),
    ];
    // Every case runs, and the failure lists every leak.
    let mut leaks = Vec::new();
    for (args, env) in &cases {
        for round in [&["-vv", "--output", "json"][..], &["--output", "table"][..]] {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let all = cmd(round, &args);
            let r = sb.run_with(&all, env);
            let what = format!("`dlqctl {}`", all.join(" "));
            for (place, text) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
                for line in text.lines() {
                    if let Some(n) = needles().iter().find(|n| line.contains(n.as_str())) {
                        leaks.push(format!("{what}: `{n}` on {place}: {line}"));
                    }
                }
            }
            assert!(
                [0, 2, 3].contains(&r.code),
                "{what}: exit code {}\n{}",
                r.code,
                r.stderr
            );
        }
    }
    assert!(leaks.is_empty(), "LEAKS:\n{}", leaks.join("\n"));
}

/// A password that is a common word (`PGPASSWORD=postgres`) is hidden where it stands as a
/// password, and nowhere else: the URL scheme, the rule names and the docs' file names in an
/// error stay readable (issue 25).
#[test]
fn a_password_that_is_a_common_word_blanks_nothing_else() {
    let sb = Sandbox::new();
    let url = pg_url();
    let u = url::Url::parse(&url).unwrap();
    let no_password = format!(
        "postgres://{}@{}:{}{}",
        u.username(),
        u.host_str().unwrap(),
        u.port().unwrap(),
        u.path()
    );
    let env = pgpassword("postgres");
    // A wrong password: the error names the server by its URL.
    let r = sb
        .run_with(
            &[
                "inspect",
                &format!("{no_password}?table=public.dead_letters"),
            ],
            &env,
        )
        .code(3);
    assert!(
        r.stderr.contains(&no_password) && !r.stderr.contains("***"),
        "nothing to hide, nothing hidden:\n{}",
        r.stderr
    );
    // The same word as the password of a URL: hidden there, and only there.
    let with_password = format!(
        "postgres://{}:postgres@{}:{}{}?table=public.dead_letters&sslmode=bogus",
        u.username(),
        u.host_str().unwrap(),
        u.port().unwrap(),
        u.path()
    );
    let r = sb.run_with(&["inspect", &with_password], &env).code(2);
    assert!(
        r.stderr
            .contains(&format!("postgres://{}:***@", u.username()))
            && r.stderr.contains("postgres://USER@HOST")
            && !r.stderr.contains(":postgres@"),
        "{}",
        r.stderr
    );
    // A missing table: the hint names docs/postgres.md.
    let r = sb
        .run_with(
            &["peek", &format!("{url}?table=public.no_such_table")],
            &env,
        )
        .code(3);
    assert!(r.stderr.contains("docs/postgres.md"), "{}", r.stderr);
}
