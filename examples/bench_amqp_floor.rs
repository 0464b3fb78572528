//! The floor under dlqctl's RabbitMQ redrive, for scripts/bench-rabbitmq: the same AMQP
//! exchanges with nothing else. Batches of 1,000 deliveries (2 in flight, a prefetch with room
//! for 3), each copy published `mandatory` on a confirm-mode channel of a second connection with
//! its properties as delivered, each batch acknowledged with one `basic.ack` (`multiple`) once
//! every copy of it is confirmed. Each batch's publishes are
//! handed to the connection together, as dlqctl's are. No stable ids, no headers added, no audit, no checks: what any
//! lapin client must spend to move the messages safely.
//!
//! Usage: bench_amqp_floor AMQP_URL DLQ TARGET (the URL with its password; prints the count).

use std::collections::VecDeque;

use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions, QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties, PublisherConfirm};

const BATCH: usize = 1000;
const IN_FLIGHT: usize = 2;

#[tokio::main]
async fn main() -> Result<(), lapin::Error> {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, dlq, target] = args.as_slice() else {
        eprintln!("usage: bench_amqp_floor AMQP_URL DLQ TARGET");
        std::process::exit(2);
    };
    let consuming = Connection::connect(url, ConnectionProperties::default()).await?;
    let publishing = Connection::connect(url, ConnectionProperties::default()).await?;
    let src = consuming.create_channel().await?;
    let dst = publishing.create_channel().await?;
    dst.confirm_select(ConfirmSelectOptions::default()).await?;
    let passive = QueueDeclareOptions {
        passive: true,
        ..QueueDeclareOptions::default()
    };
    let total = src
        .queue_declare(dlq.as_str().into(), passive, FieldTable::default())
        .await?
        .message_count() as usize;
    src.basic_qos((BATCH * (IN_FLIGHT + 1)) as u16, BasicQosOptions::default())
        .await?;
    let mut deliveries = src
        .basic_consume(
            dlq.as_str().into(),
            "bench-floor".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let mandatory = BasicPublishOptions {
        mandatory: true,
        ..BasicPublishOptions::default()
    };
    // Each batch in flight: its last delivery tag and its copies' confirms.
    let mut in_flight: VecDeque<(u64, Vec<PublisherConfirm>)> = VecDeque::new();
    let mut moved = 0;
    while moved < total || !in_flight.is_empty() {
        if moved < total && in_flight.len() < IN_FLIGHT {
            let n = BATCH.min(total - moved);
            let mut batch = Vec::with_capacity(n);
            while batch.len() < n {
                let Some(d) = deliveries.next().await else {
                    break;
                };
                batch.push(d?);
            }
            let last = batch.last().map_or(0, |d| d.delivery_tag);
            // Every publish handed to the connection before any confirm is waited for.
            let publishes = batch.iter().map(|d| {
                dst.basic_publish(
                    "".into(),
                    target.as_str().into(),
                    mandatory,
                    &d.data,
                    d.properties.clone(),
                )
            });
            let confirms = futures::future::try_join_all(publishes).await?;
            moved += confirms.len();
            in_flight.push_back((last, confirms));
            continue;
        }
        let (last, confirms) = in_flight.pop_front().expect("a batch in flight");
        for c in confirms {
            assert!(c.await?.is_ack(), "a copy was not confirmed");
        }
        src.basic_ack(last, BasicAckOptions { multiple: true })
            .await?;
    }
    println!("{moved}");
    consuming.close(200, "done".into()).await?;
    publishing.close(200, "done".into()).await
}
