//! The fault suite on RabbitMQ (issue 27): the kill points and the AMQP faults of `faults.rs`
//! on a classic and a quorum DLQ, and across backends (to and from PostgreSQL, SQS, Kafka).
//! The proxy follows AMQP frames (`Trigger::Amqp(class, method)`, `proxy.rs`).

use std::time::Duration;

use crate::faults::{Figures, N, fault, kill_points, points};
use crate::pair::Pair;
use crate::proxy::{Proxy, Trigger, When};

/// The faults an AMQP connection meets (issue 27), on the wire between dlqctl and the broker:
/// a reset on a publish (mid-batch) and after one (the copy enqueued, its confirm lost), on an
/// acknowledgement (between copy and ack) and after one, on the consume, a stall. `reads` and
/// `writes`: whether the proxied connections read the DLQ and publish the copies.
async fn amqp_faults<P: Pair>(p: &mut P, f: &mut Figures, reads: bool, writes: bool) {
    let proxy = Proxy::start(p.upstream(), false);
    p.via(proxy.port);
    let publish = Trigger::Amqp(60, 40);
    let ack = Trigger::Amqp(60, 80);
    let cases: Vec<(&str, Trigger, usize, When)> = vec![
        (
            "reset on a basic.publish (mid-batch)",
            publish.clone(),
            6,
            When::Before,
        ),
        (
            "reset after a basic.publish, before its confirm",
            publish.clone(),
            6,
            When::AfterResponse,
        ),
        (
            "reset on a basic.ack (between copy and ack)",
            ack.clone(),
            3,
            When::Before,
        ),
        ("reset after a basic.ack", ack, 3, When::AfterResponse),
        (
            "reset on the basic.consume",
            Trigger::Amqp(60, 20),
            1,
            When::Before,
        ),
        (
            "a 2 s stall on a basic.publish",
            publish,
            2,
            When::Stall(Duration::from_secs(2)),
        ),
    ];
    for (what, t, nth, when) in cases {
        let publishing = matches!(t, Trigger::Amqp(60, 40));
        if (publishing && !writes) || (!publishing && !reads) {
            continue;
        }
        let codes: &[i32] = if matches!(when, When::Stall(_)) {
            &[0]
        } else {
            &[0, 3]
        };
        f.duplicates += fault(p, &proxy, |x| x.arm(t, nth, when), codes, what).await;
        f.faults += 1;
        f.messages += N;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_survives_kills_and_faults() {
    use crate::amqp::Kind;
    let mut p = crate::pair_rabbitmq::RabbitPair::new(Kind::Classic);
    let mut f = kill_points(&mut p, points()).await;
    amqp_faults(&mut p, &mut f, true, true).await;
    f.report("rabbitmq-classic", "publish with confirms, then ack");
}

#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_quorum_survives_kills_and_faults() {
    use crate::amqp::Kind;
    let mut p = crate::pair_rabbitmq::RabbitPair::new(Kind::Quorum);
    let mut f = kill_points(&mut p, points()).await;
    amqp_faults(&mut p, &mut f, true, true).await;
    f.report("rabbitmq-quorum", "publish with confirms, then ack");
}

/// Kill points and faults across backends, one pair: the faults on the AMQP side where the
/// other side is a PostgreSQL table; `kills` seeded kill points.
async fn rabbitmq_cross(
    from: crate::pair_rabbitmq::End,
    to: crate::pair_rabbitmq::End,
    kills: usize,
) {
    use crate::pair_rabbitmq::{Cross, End};
    let mut p = Cross::new(from, to);
    let mut f = kill_points(&mut p, kills).await;
    if from == End::Pg || to == End::Pg {
        amqp_faults(&mut p, &mut f, from == End::Rabbit, to == End::Rabbit).await;
    }
    f.report(&p.name(), "across backends");
}

/// Kill points on the pairs with SQS and Kafka: 5 by default (their re-runs wait on SQS long
/// polls and Kafka's idle partitions, seconds each); `DLQCTL_KILL_POINTS` sets more.
fn cross_points() -> usize {
    std::env::var("DLQCTL_KILL_POINTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5)
}

#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_to_postgres_survives_kills_and_faults() {
    use crate::pair_rabbitmq::End;
    rabbitmq_cross(End::Rabbit, End::Pg, points()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_to_rabbitmq_survives_kills_and_faults() {
    use crate::pair_rabbitmq::End;
    rabbitmq_cross(End::Pg, End::Rabbit, points()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_and_sqs_survive_kills() {
    use crate::pair_rabbitmq::End;
    rabbitmq_cross(End::Rabbit, End::Sqs, cross_points()).await;
    rabbitmq_cross(End::Sqs, End::Rabbit, cross_points()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rabbitmq_and_kafka_survive_kills() {
    use crate::pair_rabbitmq::End;
    rabbitmq_cross(End::Rabbit, End::Kafka, cross_points()).await;
    rabbitmq_cross(End::Kafka, End::Rabbit, cross_points()).await;
}
