//! RabbitMQ: what a command says when it is refused or meets a refusal (operator report,
//! 2026-12-06): nothing of reading before a read has begun, its warnings in dlqctl's own
//! `warning:` lines, and a refused permission named with its object, its vhost, the address
//! and the permission to grant.

use lapin::BasicProperties;
use lapin::options::{
    ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::AMQPValue;

use crate::amqp::{Kind, Rabbit, run, s, table};
use crate::harness::Sandbox;

/// The read warning (`reading … takes each message and gives it back …`) was printed before
/// checks that then refused the command, for a read that never happened. Now it comes once
/// the read has begun, or in the plan; a refused command takes no message (none comes back
/// marked redelivered).
#[tokio::test(flavor = "multi_thread")]
async fn a_command_refused_before_it_reads_says_nothing_of_reading() {
    let r = Rabbit::new("refused").await;
    r.declare("dlq", Kind::Classic, &[]).await;
    r.publish_n("dlq", "m", 2).await;
    r.declare("other", Kind::Classic, &[]).await;
    r.declare(
        "limited",
        Kind::Quorum,
        &[("x-delivery-limit", AMQPValue::LongInt(2))],
    )
    .await;
    let sb = Sandbox::new();
    let (dlq, other, limited) = (r.url("dlq"), r.url("other"), r.url("limited"));
    let missing = r.url("missing");
    let export_to = sb.path("no-such-dir/dlq.jsonl");
    let export_to = export_to.to_str().unwrap();
    // Another run holds the lock of `dlq` (the queue is busy).
    let lock = format!("dlqctl.lock.{}", r.name("dlq"));
    r.ch.queue_declare(
        lock.as_str().into(),
        QueueDeclareOptions {
            exclusive: true,
            auto_delete: true,
            ..QueueDeclareOptions::default()
        },
        Default::default(),
    )
    .await
    .unwrap();
    let json = ["--output", "json"];
    for (args, code, why) in [
        (
            vec!["redrive", &dlq, "--to", &dlq, "--yes"],
            2,
            "is the queue being read",
        ),
        (
            vec!["redrive", &dlq, "--to", &missing, "--yes"],
            3,
            "not found",
        ),
        (
            vec!["replay", &dlq, "--to", &missing, "--yes"],
            3,
            "not found",
        ),
        (
            vec!["redrive", &dlq, "--to", &other],
            2,
            "needs confirmation",
        ),
        (
            vec!["redrive", &dlq, "--to", &other, "--yes"],
            3,
            "another dlqctl run",
        ),
        (vec!["export", &dlq, "-o", export_to], 2, "no-such-dir"),
        (vec!["peek", &limited], 2, "delivery-limit 2"),
        (vec!["classify", &limited], 2, "delivery-limit 2"),
        (
            vec!["redrive", &limited, "--to", &other, "--yes"],
            2,
            "delivery-limit 2",
        ),
    ] {
        let mut a = args.clone();
        a.extend(json);
        let e = run(&sb, &a).code(code);
        assert!(e.stderr.contains(why), "{args:?}: {}", e.stderr);
        assert!(
            !e.stderr.contains("warning: reading"),
            "{args:?}: refused before reading, and says it reads:\n{}",
            e.stderr
        );
    }
    r.ch.queue_delete(lock.as_str().into(), QueueDeleteOptions::default())
        .await
        .unwrap();
    // Nothing was read: no message was taken and given back.
    let left = r.drain("dlq").await;
    assert_eq!(left.len(), 2);
    assert!(left.iter().all(|m| !m.delivery.redelivered), "none read");

    // A read says what it does, once: a warning as it begins, or the plan's `reading` row.
    r.publish_n("dlq", "n", 2).await;
    let dry = ["redrive", &dlq, "--to", &other, "--dry-run", "--output"];
    let d = run(&sb, &[&dry[..], &["json"]].concat()).ok();
    assert_eq!(
        d.stderr.matches("warning: reading").count(),
        1,
        "{}",
        d.stderr
    );
    let t = run(&sb, &[&dry[..], &["table"]].concat()).ok();
    assert!(
        !t.stderr.contains("warning: reading")
            && t.stderr.contains("reading")
            && t.stderr.contains("takes each message"),
        "the plan says it:\n{}",
        t.stderr
    );
    let p = run(&sb, &["peek", &dlq, "--output", "jsonl"]).ok();
    assert_eq!(
        p.stderr.matches("warning: reading").count(),
        1,
        "{}",
        p.stderr
    );
}

/// A redrive without `--to` whose messages name a queue that is gone printed that as a
/// tracing line (`2026-12-06T11:30:23Z  WARN the destination this message names …`) among
/// dlqctl's `warning:` lines. Now it is one `warning:` line per destination, however many
/// batches meet it, and no library's log comes through without `-v`.
#[tokio::test(flavor = "multi_thread")]
async fn a_destination_that_cannot_take_copies_is_one_warning_line() {
    let r = Rabbit::new("gone").await;
    r.declare("dlq", Kind::Classic, &[]).await;
    for i in 0..3 {
        let props = BasicProperties::default()
            .with_message_id(format!("g{i}").into())
            .with_headers(table(&[("x-first-death-queue", s(&r.name("gone")))]));
        r.publish("dlq", b"{}", props).await;
    }
    let sb = Sandbox::new();
    let e = run(
        &sb,
        &[
            "redrive",
            &r.url("dlq"),
            "--batch-size",
            "1",
            "--yes",
            "--output",
            "json",
        ],
    )
    .code(1);
    assert_eq!(e.json()["failed"], 3, "{}", e.stdout);
    let lines: Vec<&str> = e.stderr.lines().collect();
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("warning: the destination this message names cannot take it"))
            .count(),
        1,
        "{}",
        e.stderr
    );
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("warning: ") || l.starts_with("         ")),
        "only dlqctl's own warning lines:\n{}",
        e.stderr
    );
    assert_eq!(r.ready("dlq").await, 3, "nothing moved");
}

/// `permission denied on a publisher confirm: ACCESS_REFUSED - access to exchange 'x' …`
/// named neither the target nor the grant that fixes it. A refused permission names the
/// object, its vhost and the address (the password never shown), what the method needed and
/// the grant; a read refused by the broker is refused before the command says it reads.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_permission_names_the_object_the_vhost_and_the_grant() {
    let r = Rabbit::new("perm").await;
    r.declare("dlq", Kind::Classic, &[]).await;
    r.publish_n("dlq", "m", 2).await;
    r.declare("in", Kind::Classic, &[]).await;
    let x = r.name("x");
    r.ch.exchange_declare(
        x.as_str().into(),
        lapin::ExchangeKind::Direct,
        ExchangeDeclareOptions::default(),
        Default::default(),
    )
    .await
    .unwrap();
    r.ch.queue_bind(
        r.name("in").as_str().into(),
        x.as_str().into(),
        "k".into(),
        QueueBindOptions::default(),
        Default::default(),
    )
    .await
    .unwrap();
    // A user of its own, whose permissions each step sets (removed at the end; a failed
    // run's is removed by the next run, once its process is gone).
    for u in r
        .api_get("users?columns=name")
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        let name = u["name"].as_str().unwrap_or_default();
        let pid = name
            .strip_prefix("t.perm.")
            .and_then(|n| n.split('.').next());
        if let Some(Ok(pid)) = pid.map(str::parse::<u32>)
            && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        {
            r.api_delete(&format!("users/{name}")).await;
        }
    }
    let user = format!("{}.user", r.prefix);
    let password = "perm-test-pw-7731";
    r.api_put(
        &format!("users/{user}"),
        serde_json::json!({"password": password, "tags": "monitoring"}),
    )
    .await;
    let grant = |configure: &str, write: &str, read: &str| {
        let body = serde_json::json!({"configure": configure, "write": write, "read": read});
        let path = format!("permissions/%2F/{user}");
        let r = &r;
        async move { r.api_put(&path, body).await }
    };
    let main_user = format!("{}@", crate::amqp::credentials().0);
    let as_user = |url: String| url.replacen(&main_user, &format!("{user}@"), 1);
    let env = vec![("DLQCTL_AMQP_PASSWORD".to_string(), password.to_string())];
    let sb = Sandbox::new();
    let dlq = as_user(r.url("dlq"));
    let to_x = format!(
        "amqp://{user}@127.0.0.1:{}/%2F?exchange={x}&routing_key=k",
        r.port
    );
    let says = |e: &crate::harness::Run, object: &str, address: &str, perm: &str| {
        for want in [
            format!("permission denied on {object} in vhost `/` ({address}"),
            format!("needs {perm} permission"),
            format!("grant the user `{user}` {perm} permission on {object}"),
            format!("set_permissions -p / {user} "),
        ] {
            assert!(e.stderr.contains(&want), "`{want}` in:\n{}", e.stderr);
        }
        assert!(!e.stderr.contains(password), "{}", e.stderr);
    };

    // No write permission on the target exchange: the publisher confirm is refused.
    grant("^dlqctl\\.lock\\.", "^$", ".*").await;
    let e = sb
        .run_with(
            &["redrive", &dlq, "--to", &to_x, "--yes", "--output", "json"],
            &env,
        )
        .code(3);
    let address = format!("amqp://{user}@127.0.0.1:{}/%2F?exchange={x}", r.port);
    says(&e, &format!("exchange `{x}`"), &address, "write");
    assert!(e.stderr.contains("publishing a copy"), "{}", e.stderr);
    r.wait_no_consumer("dlq").await;
    assert_eq!(r.ready("dlq").await, 2, "nothing left the DLQ");

    // No read permission on the DLQ: refused before anything is said of reading.
    grant("^dlqctl\\.lock\\.", ".*", "^$").await;
    let dlq_object = format!("queue `{}`", r.name("dlq"));
    let dlq_address = as_user(r.url_no_api("dlq"));
    for cmd in ["peek", "export"] {
        let e = sb.run_with(&[cmd, &dlq, "--output", "json"], &env).code(3);
        says(&e, &dlq_object, &dlq_address, "read");
        assert!(!e.stderr.contains("warning: reading"), "{}", e.stderr);
    }

    // No configure permission for the run's lock: named, with the pattern to grant.
    grant("^$", ".*", ".*").await;
    let e = sb
        .run_with(
            &["redrive", &dlq, "--to", &as_user(r.url("in")), "--yes"],
            &env,
        )
        .code(3);
    let lock = format!(
        "queue `dlqctl.lock.{}` in vhost `/` ({dlq_address}",
        r.name("dlq")
    );
    assert!(
        e.stderr.contains(&lock)
            && e.stderr
                .contains("configure permission on `^dlqctl\\.lock\\.`"),
        "{}",
        e.stderr
    );
    r.api_delete(&format!("users/{user}")).await;
    assert_eq!(r.ready("dlq").await, 2, "nothing left the DLQ");
}

/// A redrive of a quorum queue with a delivery limit showed its plan (in table mode) and was
/// refused after it, for a run that never read anything. The refusal now comes first and
/// alone, whatever the command that would read (redrive, its dry run, replay, purge) and the
/// output mode: no plan, stdout empty, nothing taken.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_refused_for_a_delivery_limit_shows_no_plan() {
    let r = Rabbit::new("limitplan").await;
    r.declare(
        "limited",
        Kind::Quorum,
        &[("x-delivery-limit", AMQPValue::LongInt(2))],
    )
    .await;
    r.publish_n("limited", "m", 2).await;
    r.declare("other", Kind::Classic, &[]).await;
    let sb = Sandbox::new();
    let (limited, other) = (r.url("limited"), r.url("other"));
    for output in ["table", "json"] {
        for args in [
            vec!["redrive", &limited, "--to", &other, "--yes"],
            vec!["redrive", &limited, "--to", &other, "--dry-run"],
            vec!["replay", &limited, "--to", &other, "--yes"],
            vec!["purge", &limited, "--archive", &other, "--yes"],
            vec!["purge", &limited, "--no-archive", "--yes"],
        ] {
            let mut a = args.clone();
            a.extend(["--output", output]);
            let e = run(&sb, &a).code(2);
            let first = e.stderr.lines().find(|l| !l.trim().is_empty());
            assert!(
                first.is_some_and(|l| l.starts_with("error:") && l.contains("delivery-limit 2")),
                "{a:?}: the refusal first:\n{}",
                e.stderr
            );
            assert!(
                !e.stderr.contains("operation") && !e.stderr.contains("will move"),
                "{a:?}: a plan for a refused run:\n{}",
                e.stderr
            );
            assert_eq!(e.stdout, "", "{a:?}");
        }
    }
    assert_eq!(r.ready("limited").await, 2, "nothing taken");
}

/// Without the management API dlqctl cannot tell a quorum queue, nor refuse a read of one with
/// a delivery limit; the warning said only that delivery counts go up. It now says the risk
/// (a message at the limit is dead-lettered onward or dropped) and how to avoid it (the API,
/// in the URL or dlqctl.toml).
#[tokio::test(flavor = "multi_thread")]
async fn a_read_without_the_api_warns_of_the_delivery_limit() {
    let r = Rabbit::new("noapi").await;
    r.declare(
        "limited",
        Kind::Quorum,
        &[("x-delivery-limit", AMQPValue::LongInt(5))],
    )
    .await;
    r.publish_n("limited", "m", 1).await;
    let sb = Sandbox::new();
    let p = run(&sb, &["peek", &r.url_no_api("limited"), "--output", "json"]).ok();
    let said = p.stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in [
        "warning: reading",
        "cannot tell the queue's type",
        "delivery-limit",
        "dead-lettered onward or dropped",
        "`api=http://HOST:15672` in the URL",
        "`[rabbitmq] api` in dlqctl.toml",
    ] {
        assert!(said.contains(want), "{want}:\n{}", p.stderr);
    }
    // With the API the same read is refused instead.
    run(&sb, &["peek", &r.url("limited"), "--output", "json"]).code(2);
}
