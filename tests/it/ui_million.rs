//! The measurement behind docs/ui.md's "a million dead letters" (not a test of the suite: run
//! it by name with `--ignored --nocapture`; `DLQCTL_UI_ROWS` changes the size, and
//! `DLQCTL_TEST_BIN` measures another build, e.g. the release one). A PostgreSQL table of
//! scripts/bench's rows; the groups view opened; while it loads, `?` pressed again and again
//! and the time until the help is drawn measured; the UI's peak RSS (VmHWM) read at the end.

use std::time::{Duration, Instant};

use crate::harness::{Db, Sandbox};
use crate::ui::Tui;

fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

#[tokio::test]
#[ignore = "a measurement: minutes, a million rows"]
async fn a_million_dead_letters_in_the_groups_view() {
    let rows: u64 = std::env::var("DLQCTL_UI_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let db = Db::new("ui_million").await;
    let seeded = Instant::now();
    db.exec(&format!(
        "INSERT INTO {{s}}.dead_letters (message_id, queue, payload, headers, error, attempts, group_key, enqueued_at, failed_at)
         SELECT 'msg-' || g, 'orders',
                jsonb_build_object('order_id', 'ord-' || lpad(g::text, 9, '0'), 'customer_id', 'cust-' || (g * 7919 % 50000),
                    'amount_cents', 100 + (g * 37 % 99900), 'currency', (ARRAY['EUR', 'USD', 'GBP', 'SEK'])[1 + g % 4],
                    'items', jsonb_build_array(jsonb_build_object('sku', 'SKU-' || lpad((g % 997)::text, 5, '0'), 'qty', 1 + g % 5))),
                jsonb_build_object('content-type', 'application/json', 'trace-id', substr(md5(g::text), 1, 16), 'producer', 'checkout-' || (g % 8)),
                (ARRAY['timeout after 30s calling payments-api', 'validation failed: amount_cents must be positive',
                       'deadlock detected', 'upstream returned 503 Service Unavailable', 'unknown customer'])[1 + g % 5],
                1 + g % 5, 'cust-' || (g * 7919 % 50000),
                timestamptz '2025-01-01 00:00:00+00' + make_interval(secs => (g * 1209600 / {rows})::double precision),
                timestamptz '2025-01-01 00:00:30+00' + make_interval(secs => (g * 1209600 / {rows})::double precision)
         FROM generate_series(1::bigint, {rows}) AS g"
    ))
    .await;
    db.exec("VACUUM ANALYZE {s}.dead_letters").await;
    println!("seeded {rows} rows in {:.1?}", seeded.elapsed());

    let sb = Sandbox::new();
    let mut ui = Tui::start(&sb, &["ui", &db.dlq()]);
    ui.wait_for("/4000/");
    println!(
        "queues view (10,000 read): VmHWM {} KiB",
        vm_hwm_kib(ui.pid())
    );
    let opened = Instant::now();
    ui.press("\r");
    let total = format!("groups of {rows} messages");
    let (mut answers, mut progress) = (Vec::new(), Vec::new());
    loop {
        let shown = ui.wait_until("the groups or their progress", |s| {
            s.contains(&total) || s.contains("messages read…")
        });
        if shown.contains(&total) {
            break;
        }
        if let Some(l) = shown.lines().find(|l| l.contains("messages read…")) {
            progress.push(l.trim().to_string());
        }
        let asked = Instant::now();
        ui.press("?");
        ui.wait_for("this help (any key closes it)");
        answers.push(asked.elapsed());
        ui.press("x");
        ui.wait_until("the help closed", |s| !s.contains("this help (any key"));
        std::thread::sleep(Duration::from_millis(500));
    }
    let loaded = opened.elapsed();
    let hwm = vm_hwm_kib(ui.pid());
    println!(
        "groups of {rows} loaded in {loaded:.1?}; peak RSS (VmHWM) {hwm} KiB = {:.1} MiB",
        hwm as f64 / 1024.0
    );
    answers.sort();
    println!(
        "? answered {} times while loading: fastest {:?}, median {:?}, slowest {:?}",
        answers.len(),
        answers.first(),
        answers.get(answers.len() / 2),
        answers.last()
    );
    println!(
        "progress seen: {:?} … {:?}",
        progress.first(),
        progress.last()
    );
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
}
