//! Bad input: one clear line naming the problem, a hint, the documented exit code, and
//! nothing changed. Secrets never appear.

use crate::harness::{Db, Sandbox, pg_url};

#[track_caller]
fn one_error_line(stderr: &str) -> &str {
    let first = stderr.lines().next().unwrap_or_default();
    assert!(first.starts_with("error: "), "{stderr}");
    first
}

#[tokio::test]
async fn addresses_and_names() {
    let sb = Sandbox::new();
    let r = sb
        .run(&["inspect", "postgres://u:hunter2@localhost/db"])
        .code(2);
    assert!(one_error_line(&r.stderr).contains("table="), "{}", r.stderr);
    assert!(!r.stderr.contains("hunter2"));
    let r = sb.run(&["peek", "nats://x/y"]).code(2);
    assert!(one_error_line(&r.stderr).contains("unknown scheme"));
    let r = sb.run(&["peek", "orders"]).code(2);
    assert!(
        one_error_line(&r.stderr).contains("unknown queue `orders`"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("hint:"));
    let r = sb.run(&["peek", "kafka://broker/topic"]).code(2);
    assert!(one_error_line(&r.stderr).contains("HOST:PORT"));
    sb.run(&["peek"]).code(2);
    sb.run(&["redrive", "x", "--rate", "fast"]).code(2);
}

#[tokio::test]
async fn missing_tables_wrong_mappings_and_bad_config() {
    let db = Db::new("errs").await;
    let sb = Sandbox::new();
    let r = sb
        .run(&["inspect", &format!("{}?table={}.nope", pg_url(), db.schema)])
        .code(3);
    assert!(
        one_error_line(&r.stderr).contains("not found"),
        "{}",
        r.stderr
    );
    db.exec("CREATE TABLE {s}.mine (pk bigserial PRIMARY KEY, msg_id text, body jsonb, err text)")
        .await;
    let url = format!("{}?table={}.mine", pg_url(), db.schema);
    let r = sb.run(&["peek", &url]).code(2);
    let line = one_error_line(&r.stderr);
    assert!(
        line.contains("`id`") && line.contains("body, err, msg_id, pk"),
        "{line}"
    );
    assert!(r.stderr.contains("[queues.NAME.columns]"));
    // With the mapping it works.
    sb.write(
        "dlqctl.toml",
        &format!("[queues.mine]\ndlq = \"{url}\"\n[queues.mine.columns]\nid = \"pk\"\nmessage_id = \"msg_id\"\npayload = \"body\"\nerror = \"err\"\n"),
    );
    db.exec("INSERT INTO {s}.mine (msg_id, body, err) VALUES ('m-1', '{\"a\": 1}', 'timed out')")
        .await;
    let recs = sb.run(&["peek", "mine", "--output", "jsonl"]).ok().jsonl();
    assert_eq!(recs[0]["id"], "m-1");
    assert_eq!(recs[0]["error"]["message"], "timed out");
    // A mapping to a column that is not there.
    sb.write("dlqctl.toml", &format!("[queues.mine]\ndlq = \"{url}\"\n[queues.mine.columns]\nid = \"pk\"\nmessage_id = \"message_ref\"\npayload = \"body\"\n"));
    let r = sb.run(&["peek", "mine"]).code(2);
    assert!(
        one_error_line(&r.stderr).contains("message_ref"),
        "{}",
        r.stderr
    );
    // A typo in the config file.
    sb.write(
        "dlqctl.toml",
        &format!("[queues.mine]\ndlq = \"{url}\"\nhandler_timout = \"2m\"\n"),
    );
    let r = sb.run(&["peek", "mine"]).code(2);
    assert!(
        one_error_line(&r.stderr).contains("handler_timout"),
        "{}",
        r.stderr
    );
    // --config to a missing file.
    sb.run(&["--config", "/nonexistent/dlqctl.toml", "peek", "mine"])
        .code(2);
    // The target is the dead-letter table itself.
    db.seed(1).await;
    let r = sb
        .run(&[
            "--config",
            "/dev/null",
            "redrive",
            &db.dlq(),
            "--to",
            &db.table_url("dead_letters"),
            "--yes",
        ])
        .code(2);
    assert!(r.stderr.contains("is the queue being read"), "{}", r.stderr);
    assert_eq!(db.count("dead_letters").await, 1);
}

#[tokio::test]
async fn unreachable_servers_and_bad_passwords() {
    let sb = Sandbox::new();
    let r = sb
        .run(&["inspect", "postgres://dlqctl:s3cr3t@127.0.0.1:1/db?table=t"])
        .code(3);
    assert!(
        one_error_line(&r.stderr).contains("cannot reach"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("s3cr3t"), "{}", r.stderr);
    let url = pg_url().replace("dlqctl:dlqctl@", "dlqctl:wrong-pass-42@");
    let r = sb.run(&["inspect", &format!("{url}?table=x")]).code(3);
    // Authentication is its own error, and says where the password came from.
    assert!(
        one_error_line(&r.stderr).contains("authentication failed")
            && r.stderr.contains("came from the URL"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("wrong-pass-42"), "{}", r.stderr);
    // PGPASSWORD is honoured when the URL has none.
    let url = pg_url().replace("dlqctl:dlqctl@", "dlqctl@");
    let db = Db::new("pgpass").await;
    db.seed(1).await;
    let r = sb
        .run_env(
            &[
                "inspect",
                &format!("{url}?table={}.dead_letters", db.schema),
                "--output",
                "json",
            ],
            &[("PGPASSWORD", "dlqctl")],
        )
        .ok();
    assert!(r.stdout.contains("\"messages\""));
}

/// Names and classes with a typo get a suggestion; a bare SQS queue name is pointed at its
/// URL form; an existing export file is not overwritten without --force.
#[tokio::test]
async fn typos_get_a_suggestion_and_backups_are_not_overwritten() {
    let db = Db::new("typos").await;
    db.seed(2).await;
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        &format!("[queues.orders]\ndlq = \"{}\"\n", db.dlq()),
    );
    let r = sb.run(&["inspect", "order"]).code(2);
    assert!(r.stderr.contains("did you mean `orders`"), "{}", r.stderr);
    let r = sb.run(&["inspect", "demo-orders-dlq"]).code(2);
    assert!(r.stderr.contains("sqs://demo-orders-dlq"), "{}", r.stderr);
    let r = sb.run(&["peek", "orders", "--class", "transiet"]).code(2);
    assert!(
        r.stderr.contains("did you mean `transient`"),
        "{}",
        r.stderr
    );
    let r = sb
        .run(&["inspect", &format!("{}&qeue=billing", db.dlq())])
        .code(2);
    assert!(r.stderr.contains("did you mean `queue`"), "{}", r.stderr);
    let backup = sb.write("backup.jsonl", "keep me\n");
    let r = sb
        .run(&["export", "orders", "-o", &backup.to_string_lossy()])
        .code(2);
    assert!(r.stderr.contains("--force"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), "keep me\n");
    sb.run(&[
        "export",
        "orders",
        "-o",
        &backup.to_string_lossy(),
        "--force",
    ])
    .ok();
    assert_eq!(std::fs::read_to_string(&backup).unwrap().lines().count(), 2);
}

/// A move inside the database refused for want of a grant names the table PostgreSQL names:
/// with INSERT on the target and no DELETE on the dead-letter table, the error is about the
/// dead-letter table (op5: it named the target, whose grant was there). Nothing moved.
#[tokio::test]
async fn a_refused_grant_names_the_table_it_is_missing_on() {
    let db = Db::new("grant").await;
    db.seed(5).await;
    let role = format!("dlqctl_grant_{}", std::process::id());
    db.exec(&format!(
        "DROP ROLE IF EXISTS {role};
         CREATE ROLE {role} LOGIN PASSWORD 'grant-test';
         GRANT USAGE ON SCHEMA {{s}} TO {role};
         GRANT SELECT ON ALL TABLES IN SCHEMA {{s}} TO {role};
         GRANT USAGE ON ALL SEQUENCES IN SCHEMA {{s}} TO {role};
         GRANT INSERT ON {{s}}.queue_messages TO {role};"
    ))
    .await;
    let url = db.dlq().replacen(
        "postgres://dlqctl:dlqctl@",
        &format!("postgres://{role}:grant-test@"),
        1,
    );
    assert!(url.contains(&role), "the harness's URL form changed: {url}");
    let sb = Sandbox::new();
    let r = sb.run(&["redrive", &url, "--yes"]).code(3);
    let first = one_error_line(&r.stderr);
    assert!(
        first.contains(&format!("permission denied on {}.dead_letters", db.schema)),
        "{}",
        r.stderr
    );
    assert_eq!(db.count("dead_letters").await, 5);
    db.exec(&format!("DROP OWNED BY {role} CASCADE; DROP ROLE {role};"))
        .await;
}

/// An export onto a symbolic link is refused before anything is read, dangling or not, with
/// `--force` too (docs/jsonl.md, docs/exit-codes.md): a dangling link was missed by the check,
/// the whole export ran into a partial file and then blamed a race; `--force` replaced the link.
#[tokio::test]
async fn an_export_onto_a_symbolic_link_is_refused_before_anything_is_read() {
    let db = Db::new("exportlink").await;
    db.seed(2).await;
    let dlq = db.dlq();
    let sb = Sandbox::new();
    let target = sb.write("target.jsonl", "keep me\n");
    let link = sb.path("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let dangling = sb.path("dangling.jsonl");
    std::os::unix::fs::symlink(sb.path("nowhere.jsonl"), &dangling).unwrap();
    for (path, force) in [
        (&dangling, false),
        (&dangling, true),
        (&link, false),
        (&link, true),
    ] {
        let mut args = vec!["export", dlq.as_str(), "-o", path.to_str().unwrap()];
        args.extend(force.then_some("--force"));
        let r = sb.run(&args).code(2);
        assert!(
            r.stderr.contains("is a symbolic link") && r.stderr.contains("even with --force"),
            "{}",
            r.stderr
        );
        assert!(std::fs::symlink_metadata(path).unwrap().is_symlink());
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me\n");
    assert!(!sb.path("nowhere.jsonl").exists());
    let left: Vec<_> = std::fs::read_dir(sb.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".partial"))
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "partial files left: {left:?}");
}

/// Errors that name where a setting came from name the file given with `--config`: a
/// `[kafka.properties]` librdkafka refuses and `[audit] require_reason` said `dlqctl.toml`.
#[test]
fn errors_name_the_config_file_given_with_config() {
    let sb = Sandbox::new();
    let props = sb.write(
        "bad-kprop.toml",
        "[kafka.properties]\n\"no.such.prop\" = \"1\"\n",
    );
    let r = sb
        .run(&[
            "inspect",
            "kafka://127.0.0.1:1/orders.DLT",
            "--config",
            props.to_str().unwrap(),
        ])
        .code(2);
    assert!(
        r.stderr.contains(&format!(
            "config file {}: [kafka.properties] `no.such.prop`",
            props.display()
        )),
        "{}",
        r.stderr
    );
    let reason = sb.write("reqreason.toml", "[audit]\nrequire_reason = true\n");
    let r = sb
        .run(&[
            "redrive",
            "postgres://dlqctl@127.0.0.1:1/db?table=app.dead_letters",
            "--to",
            "postgres://dlqctl@127.0.0.1:1/db?table=app.jobs",
            "--yes",
            "--config",
            reason.to_str().unwrap(),
        ])
        .code(2);
    assert!(
        r.stderr.contains(&format!(
            "[audit] require_reason is set in {}",
            reason.display()
        )),
        "{}",
        r.stderr
    );
}

/// "(nothing was lost; re-run to continue)" is for commands that move or remove: a read-only
/// command (inspect, verify's `reachable` detail) had it on an unreachable server too.
#[test]
fn only_commands_that_move_say_nothing_was_lost() {
    let sb = Sandbox::new();
    let down = "postgres://dlqctl@127.0.0.1:1/db?table=app.dead_letters";
    let r = sb.run(&["inspect", down]).code(3);
    assert!(
        r.stderr.contains("cannot reach") && !r.stderr.contains("nothing was lost"),
        "{}",
        r.stderr
    );
    let config = sb.write("down.toml", &format!("[queues.down]\ndlq = \"{down}\"\n"));
    let r = sb
        .run(&[
            "verify",
            "--config",
            config.to_str().unwrap(),
            "--output",
            "json",
        ])
        .code(1);
    assert!(
        r.stdout.contains("cannot reach") && !r.stdout.contains("nothing was lost"),
        "{}",
        r.stdout
    );
    let r = sb
        .run(&[
            "redrive",
            down,
            "--to",
            "postgres://dlqctl@127.0.0.1:1/db?table=app.jobs",
            "--yes",
        ])
        .code(3);
    assert!(
        r.stderr.contains("(nothing was lost; re-run to continue)"),
        "{}",
        r.stderr
    );
}

/// `--class` with a name that is no class and no rule listed every built-in rule's name (about
/// 130) on the error line; it now says where they are, and names only the user's own rules.
#[test]
fn an_unknown_class_does_not_list_every_built_in_rule() {
    let sb = Sandbox::new();
    sb.write("dlq.jsonl", "");
    let r = sb
        .run(&[
            "peek",
            "dlq.jsonl",
            "--class",
            "flaky",
            "--config",
            "/dev/null",
        ])
        .code(2);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert!(
        lines[0].ends_with("`flaky` is neither transient, permanent, unclassified nor a rule name")
            && lines[1].contains("docs/classification.md"),
        "{}",
        r.stderr
    );
    let rules = sb.write(
        "mine.toml",
        "[[rules]]\nname = \"card-declined\"\nkind = \"permanent\"\nmatch = { error = \"declined\" }\n",
    );
    let r = sb
        .run(&[
            "peek",
            "dlq.jsonl",
            "--class",
            "flaky",
            "--config",
            "/dev/null",
            "--rules",
            rules.to_str().unwrap(),
        ])
        .code(2);
    assert!(
        r.stderr
            .contains("nor a rule name (your rules: card-declined)\n"),
        "{}",
        r.stderr
    );
}

/// A host that answers something other than PostgreSQL (here HTTP): the error said where in
/// sqlx it was raised (`(sqlx_postgres::connection::tls:95)`) and had no hint.
#[test]
fn a_server_that_is_not_postgresql_is_named_without_sqlx_internals() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in listener.incoming().flatten() {
            let mut buf = [0u8; 64];
            let _ = c.read(&mut buf);
            let _ = c.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        }
    });
    let sb = Sandbox::new();
    let r = sb
        .run(&[
            "inspect",
            &format!("postgres://app:pw@127.0.0.1:{port}/app?table=a.b"),
        ])
        .code(3);
    assert!(
        r.stderr.contains("does not speak PostgreSQL's protocol")
            && !r.stderr.contains("sqlx")
            && r.stderr.contains("hint: check the host and port"),
        "{}",
        r.stderr
    );
}
