"""Seed the dead-letter queues of docs/triage.md's walk-through (scripts/triage-walkthrough).

A night on call: an orders service on PostgreSQL, SQS and Kafka, with the failures a real
outage leaves behind: a burst of declined payments after a deploy, a downstream that reset its
connections, a few poison messages, and Spring Kafka's wrapped exceptions.

Usage: triage-seed.py pg|sqs|kafka ADDRESS
  pg     ADDRESS is the PostgreSQL URL (schema `triage`, generic layout, psql on PATH)
  sqs    ADDRESS is the SQS endpoint (queues triage-orders and triage-orders-dlq)
  kafka  ADDRESS is the bootstrap server (topics triage-orders and triage-orders.DLT)
Deterministic: the same data on every run (times relative to now).
"""

import json
import os
import random
import struct
import subprocess
import sys
import time

rng = random.Random(25)

# (error text, how many), the same failures on every backend, in the backend's own form below.
FAILURES = [
    ("PaymentDeclined: card for {card} declined", 1400),
    ("upstream call timed out after 30s", 420),
    ("validation failed: currency must be one of EUR, USD", 180),
    ("connection reset by peer", 97),
    ("ERROR: deadlock detected (SQLSTATE 40P01)", 60),
    ("OrderService: order {order} has no line items", 9),
]


def card():
    """A payment provider's customer id: letters and at least one digit."""
    chars = [rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghjkmnpqrstuvwxyz23456789") for _ in range(9)]
    chars.insert(rng.randrange(10), rng.choice("23456789"))
    return "cus_" + "".join(chars)


def messages(scale):
    """(n, error, minutes ago dead-lettered, body) for the whole night, oldest first."""
    out = []
    n = 0
    for text, count in FAILURES:
        for _ in range(max(1, count * scale // 100)):
            n += 1
            order = 88000 + n
            err = text.format(card=card(), order=order)
            if text.startswith("PaymentDeclined"):
                minutes = rng.randint(60, 130)  # the burst: 03:00 to 04:10, a deploy
            elif text.startswith("OrderService"):
                minutes = rng.randint(200, 6000)  # a trickle over four days: poison
            else:
                minutes = rng.randint(30, 2800)
            body = {
                "order_id": order,
                "customer": f"cust-{order % 211}",
                "amount_cents": 100 + (order * 7919) % 250000,
                "currency": ["EUR", "USD", "GBP"][order % 3],
            }
            out.append((order, err, minutes, body))
    out.sort(key=lambda m: -m[2])
    return out


def seed_pg(url):
    rows = []
    for order, err, minutes, body in messages(100):
        tenant = ["acme", "globex", "initech"][order % 3]
        rows.append(
            "('ord-%d', 'orders', '%s'::jsonb, '%s'::jsonb, '%s', 5, 'cust-%d', now() - interval '%d minutes', now() - interval '%d minutes')"
            % (order, json.dumps(body), json.dumps({"tenant": tenant, "trace-id": "%032x" % rng.getrandbits(128)}),
               err.replace("'", "''"), order % 211, minutes + 5, minutes))
    layout = open(os.path.join(os.path.dirname(__file__), "..", "docs", "sql", "generic-layout.sql")).read()
    sql = "DROP SCHEMA IF EXISTS triage CASCADE; CREATE SCHEMA triage; SET search_path TO triage;\n" + layout + "\n"
    sql += "INSERT INTO dead_letters (message_id, queue, payload, headers, error, attempts, group_key, enqueued_at, failed_at) VALUES\n"
    sql += ",\n".join(rows) + ";\n"
    env = dict(os.environ, PGOPTIONS="--client-min-messages=warning")
    subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-q", "-f", "-"], input=sql.encode(), check=True, env=env)
    print(f"{len(rows)} dead letters in triage.dead_letters")


def seed_sqs(endpoint):
    import boto3

    sqs = boto3.client("sqs", endpoint_url=endpoint, region_name=os.environ.get("AWS_REGION", "us-east-1"))
    for name in ("triage-orders", "triage-orders-dlq"):
        try:
            sqs.delete_queue(QueueUrl=sqs.get_queue_url(QueueName=name)["QueueUrl"])
        except sqs.exceptions.QueueDoesNotExist:
            pass
    dlq = sqs.create_queue(QueueName="triage-orders-dlq", Attributes={"MessageRetentionPeriod": "1209600"})["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    src = sqs.create_queue(QueueName="triage-orders", Attributes={
        "VisibilityTimeout": "0",
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 1}),
    })["QueueUrl"]
    msgs = messages(25)
    for k in range(0, len(msgs), 10):
        entries = []
        for i, (order, err, _minutes, body) in enumerate(msgs[k:k + 10]):
            entries.append({"Id": str(i), "MessageBody": json.dumps(body), "MessageAttributes": {
                "error": {"DataType": "String", "StringValue": err},
                "tenant": {"DataType": "String", "StringValue": ["acme", "globex", "initech"][order % 3]},
            }})
        sqs.send_message_batch(QueueUrl=src, Entries=entries)

    def count(url):
        a = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
        return int(a["Attributes"]["ApproximateNumberOfMessages"])

    # The consumer fails every delivery; the RedrivePolicy moves each message on the receive
    # after maxReceiveCount.
    for _ in range(10 * len(msgs)):
        if count(dlq) >= len(msgs):
            break
        sqs.receive_message(QueueUrl=src, MaxNumberOfMessages=10, VisibilityTimeout=0)
    sqs.set_queue_attributes(QueueUrl=src, Attributes={"VisibilityTimeout": "60"})
    print(f"{count(dlq)} messages dead-lettered into triage-orders-dlq")


def seed_kafka(bootstrap):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for name, config in (("triage-orders", {"retention.ms": str(7 * 86400 * 1000)}),
                         ("triage-orders.DLT", {"retention.ms": str(14 * 86400 * 1000)})):
        if name in admin.list_topics(timeout=10).topics:
            for f in admin.delete_topics([name], operation_timeout=10).values():
                f.result()
            for _ in range(50):
                if name not in admin.list_topics(timeout=10).topics:
                    break
                time.sleep(0.2)
        for f in admin.create_topics([NewTopic(name, 3, 1, config=config)]).values():
            f.result()
    # Spring Kafka's DeadLetterPublishingRecoverer: the listener's wrapper exception, its cause.
    listener = "Listener method 'public void com.acme.orders.OrderListener.on(com.acme.orders.Order)' threw exception"
    causes = {
        "PaymentDeclined": "com.acme.payments.PaymentDeclinedException",
        "upstream": "java.net.SocketTimeoutException",
        "validation": "jakarta.validation.ConstraintViolationException",
        "connection": "java.net.SocketException",
        "ERROR": "org.springframework.dao.CannotAcquireLockException",
        "OrderService": "com.acme.orders.EmptyOrderException",
    }
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    now_ms = int(time.time() * 1000)
    msgs = messages(40)
    for order, err, minutes, body in msgs:
        cause = next(c for k, c in causes.items() if err.startswith(k))
        key = f"cust-{order % 211}".encode()
        partition = order % 3
        ts = now_ms - minutes * 60_000
        message = f"{listener}; nested exception is {cause}: {err}"
        headers = [
            ("traceparent", f"00-{order:032x}-{order * 7:016x}-01".encode()),
            ("tenant", ["acme", "globex", "initech"][order % 3].encode()),
            ("kafka_dlt-original-topic", b"triage-orders"),
            ("kafka_dlt-original-partition", struct.pack(">i", partition)),
            ("kafka_dlt-original-offset", struct.pack(">q", order * 3)),
            ("kafka_dlt-original-timestamp", struct.pack(">q", ts - 90_000)),
            ("kafka_dlt-original-timestamp-type", b"CreateTime"),
            ("kafka_dlt-original-consumer-group", b"orders"),
            ("kafka_dlt-exception-fqcn", b"org.springframework.kafka.listener.ListenerExecutionFailedException"),
            ("kafka_dlt-exception-cause-fqcn", cause.encode()),
            ("kafka_dlt-exception-message", message.encode()),
            ("kafka_dlt-exception-stacktrace", f"{cause}: {err}\n\tat com.acme.orders.OrderListener.on(OrderListener.java:42)\n".encode()),
        ]
        # One record per produce request, flushed: tansu reports a wrong high watermark for
        # multi-record batches.
        producer.produce("triage-orders.DLT", key=key, value=json.dumps(body).encode(), partition=partition,
                         headers=headers, timestamp=ts)
        producer.flush(10)
    print(f"{len(msgs)} Spring Kafka dead letters in triage-orders.DLT")


if __name__ == "__main__":
    {"pg": seed_pg, "sqs": seed_sqs, "kafka": seed_kafka}[sys.argv[1]](sys.argv[2])
