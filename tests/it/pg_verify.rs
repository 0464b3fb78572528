//! verify against PostgreSQL: the retention arithmetic, the dedupe table's unique id, how its
//! retention is known (declared, pg_cron, lower bound), old dead letters, JUnit output.

use crate::harness::{Db, Sandbox, pg_url};

fn config(db: &Db, dedupe_extra: &str, queue_extra: &str) -> String {
    format!(
        "[queues.orders]\ndlq = \"{}\"\nreplay_window = \"3d\"\n{queue_extra}\n[queues.orders.dedupe]\nurl = \"{}\"\ntable = \"{}.processed_messages\"\n{dedupe_extra}\n",
        db.dlq(),
        pg_url(),
        db.schema
    )
}

fn check<'a>(j: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    j["queues"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}: {j}"))
}

#[tokio::test]
async fn passes_when_ids_outlive_every_copy() {
    let db = Db::new("vpass").await;
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        &config(
            &db,
            "retention = \"30d\"",
            "dlq_retention = \"14d\"\ntime_to_dead_letter = \"1h\"",
        ),
    );
    let r = sb.run(&["verify", "--output", "json"]).ok();
    let j = r.json();
    assert_eq!(j["passed"], true, "{j}");
    let c = check(&j, "dedupe-outlives-redelivery");
    assert_eq!(c["status"], "PASS");
    assert_eq!(
        c["detail"],
        "dedupe 30d > time to dead-letter 1h + dead-letter retention 14d + replay window 3d = 17d 1h"
    );
    assert_eq!(check(&j, "dedupe-unique")["status"], "PASS");
    assert_eq!(check(&j, "old-dead-letters")["status"], "PASS");
    let table = sb.run(&["verify", "--output", "table"]).ok().stdout;
    assert!(
        table.contains("PASS") && table.contains("17d 1h"),
        "{table}"
    );
}

#[tokio::test]
async fn fails_with_the_arithmetic_when_ids_are_forgotten_first() {
    let db = Db::new("vfail").await;
    db.exec("INSERT INTO {s}.dead_letters (message_id, queue, payload, enqueued_at) VALUES ('old-1', 'orders', '{}', now() - interval '9 days')").await;
    let sb = Sandbox::new();
    sb.write(
        "dlqctl.toml",
        &config(&db, "retention = \"7d\"", "dlq_retention = \"14d\""),
    );
    let r = sb.run(&["verify", "--output", "json"]).code(1);
    let j = r.json();
    let c = check(&j, "dedupe-outlives-redelivery");
    assert_eq!(c["status"], "FAIL");
    assert!(c["detail"].as_str().unwrap().contains("dedupe 7d <= time to dead-letter 0s + dead-letter retention 14d + replay window 3d = 17d"), "{c}");
    let old = check(&j, "old-dead-letters");
    assert_eq!(old["status"], "WARN");
    assert!(
        old["detail"]
            .as_str()
            .unwrap()
            .starts_with("1 dead letters are older"),
        "{old}"
    );
    // JUnit for CI.
    let x = sb.run(&["verify", "--output", "junit"]).code(1).stdout;
    assert!(
        x.contains("<testsuite name=\"orders\"") && x.contains("<failure"),
        "{x}"
    );
    // A forever-kept DLQ needs ids kept forever.
    sb.write("dlqctl.toml", &config(&db, "retention = \"90d\"", ""));
    let j = sb.run(&["verify", "--output", "json"]).code(1).json();
    assert!(
        check(&j, "dedupe-outlives-redelivery")["detail"]
            .as_str()
            .unwrap()
            .contains("forever")
    );
    assert_eq!(check(&j, "dead-row-pruning")["status"], "WARN");
    sb.write("dlqctl.toml", &config(&db, "retention = \"forever\"", ""));
    assert_eq!(
        sb.run(&["verify", "--output", "json"]).ok().json()["passed"],
        true
    );
}

#[tokio::test]
async fn a_dedupe_table_without_a_unique_id_fails() {
    let db = Db::new("vuniq").await;
    db.exec("CREATE TABLE {s}.loose (message_id text, handled_at timestamptz DEFAULT now()); CREATE TABLE {s}.scoped (tenant text, message_id text, handled_at timestamptz, UNIQUE (tenant, message_id))").await;
    let sb = Sandbox::new();
    for (table, status) in [("loose", "FAIL"), ("scoped", "WARN")] {
        let cfg = config(&db, "retention = \"30d\"", "dlq_retention = \"1d\"")
            .replace(".processed_messages", &format!(".{table}"));
        sb.write("dlqctl.toml", &cfg);
        let j = sb.run(&["verify", "--output", "json"]).json();
        assert_eq!(check(&j, "dedupe-unique")["status"], status, "{table}: {j}");
    }
    let cfg = config(&db, "retention = \"30d\"", "").replace(".processed_messages", ".missing");
    sb.write("dlqctl.toml", &cfg);
    let j = sb.run(&["verify", "--output", "json"]).code(1).json();
    assert!(
        check(&j, "dedupe-unique")["detail"]
            .as_str()
            .unwrap()
            .contains("not found"),
        "{j}"
    );
}

#[tokio::test]
async fn retention_is_discovered_from_pg_cron_or_bounded_by_the_oldest_row() {
    let db = Db::new("vcron").await;
    let sb = Sandbox::new();
    // Nothing declared, empty table: unknown.
    sb.write("dlqctl.toml", &config(&db, "", "dlq_retention = \"2d\""));
    let j = sb.run(&["verify", "--output", "json"]).code(1).json();
    assert_eq!(check(&j, "dedupe-retention-known")["status"], "FAIL");
    // The oldest row is a lower bound.
    db.exec("INSERT INTO {s}.processed_messages VALUES ('a', now() - interval '10 days')")
        .await;
    let j = sb.run(&["verify", "--output", "json"]).json();
    assert_eq!(check(&j, "dedupe-retention-known")["status"], "WARN");
    assert_eq!(
        check(&j, "dedupe-outlives-redelivery")["status"],
        "PASS",
        "10 days > 2d + 3d: {j}"
    );
    // A pg_cron job that prunes it: discovered, and the DLQ's own pruning job too.
    let job = format!("dlqctl-test-{}-{}", std::process::id(), db.schema);
    db.exec(&format!(
        "SELECT cron.schedule('{job}', '0 3 * * *', $$DELETE FROM {{s}}.processed_messages WHERE handled_at < now() - interval '45 days'$$);
         SELECT cron.schedule('{job}-dlq', '*/5 * * * *', $$DELETE FROM {{s}}.dead_letters WHERE failed_at < now() - '20 days'::interval$$)"
    ))
    .await;
    sb.write("dlqctl.toml", &config(&db, "", ""));
    let j = sb.run(&["verify", "--output", "json"]).ok().json();
    let known = check(&j, "dedupe-retention-known");
    assert!(known["detail"].as_str().unwrap().contains("45d"), "{known}");
    let c = check(&j, "dedupe-outlives-redelivery");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains("dead-letter retention 20d"),
        "{c}"
    );
    assert_eq!(check(&j, "dead-row-pruning")["status"], "PASS");
    db.exec(&format!(
        "SELECT cron.unschedule('{job}'); SELECT cron.unschedule('{job}-dlq')"
    ))
    .await;
}

#[tokio::test]
async fn verify_needs_queues_and_reports_unreachable_ones() {
    let sb = Sandbox::new();
    sb.run(&["verify"]).code(2);
    sb.write(
        "dlqctl.toml",
        "[queues.gone]\ndlq = \"postgres://x:pw@127.0.0.1:1/db?table=t\"\n",
    );
    let j = sb.run(&["verify", "--output", "json"]).code(1).json();
    assert_eq!(check(&j, "reachable")["status"], "FAIL");
    assert!(!j.to_string().contains(":pw@"));
}
