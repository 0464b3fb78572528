//! How an address is shown: the form it was given in, with the password of a PostgreSQL
//! connection redacted and a Kafka slice's range kept.

use std::fmt;

use super::{Address, FileAddress, PgTarget};

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Postgres(p) => {
                let mut extra: Vec<(&str, &str)> = Vec::new();
                match &p.target {
                    PgTarget::Table(t) => extra.push(("table", t)),
                    PgTarget::System(name) => extra.push(("system", name)),
                }
                if let Some(s) = &p.schema {
                    extra.push(("schema", s));
                }
                if let Some(q) = &p.queue {
                    extra.push(("queue", q));
                }
                if let Some(s) = &p.source_table {
                    extra.push(("source", s));
                }
                f.write_str(&p.conn.display_with(&extra))
            }
            Address::Sqs(s) => match (&s.url, &s.region, &s.account) {
                (Some(u), _, _) => write!(f, "{u}"),
                // An ARN stays an ARN: the region and account tell two same-named queues apart.
                (None, Some(r), Some(a)) => write!(f, "arn:aws:sqs:{r}:{a}:{}", s.name),
                _ => write!(f, "sqs://{}", s.name),
            },
            Address::Kafka(k) => {
                write!(f, "kafka://{}/{}", k.brokers.join(","), k.topic)?;
                let r = &k.range;
                let mut q: Vec<String> = Vec::new();
                if let Some(p) = r.partition {
                    q.push(format!("partition={p}"));
                }
                if let Some(o) = r.from {
                    q.push(format!("from={o}"));
                }
                if let Some(o) = r.to {
                    q.push(format!("to={o}"));
                }
                let time = |t: &chrono::DateTime<chrono::Utc>| {
                    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
                };
                if let Some(t) = &r.since {
                    q.push(format!("since={}", time(t)));
                }
                if let Some(t) = &r.until {
                    q.push(format!("until={}", time(t)));
                }
                if !q.is_empty() {
                    write!(f, "?{}", q.join("&"))?;
                }
                Ok(())
            }
            Address::File(FileAddress::Path(p)) => write!(f, "file:{}", p.display()),
            Address::File(FileAddress::Stdin) => write!(f, "-"),
            Address::Redis(r) => write!(f, "{r}"),
            // RabbitMQ (issue 27): shown by backend/rabbitmq/address.rs, password left out.
            Address::Rabbitmq(a) => write!(f, "{a}"),
        }
    }
}

impl Address {
    /// A short name for a narrow table: the SQS queue's name, the Kafka topic, the PostgreSQL
    /// database and table (or job system), a file's name. Not an address: the full one is
    /// shown where there is room, and `--output wide` always shows it.
    pub fn brief(&self) -> String {
        match self {
            Address::Postgres(p) => {
                let db = p.conn.dbname.as_deref().or(p.conn.service.as_deref());
                let what = match &p.target {
                    PgTarget::Table(t) => t.clone(),
                    PgTarget::System(s) => match &p.queue {
                        Some(q) => format!("{s} queue {q}"),
                        None => s.clone(),
                    },
                };
                match db {
                    Some(db) => format!("{db}: {what}"),
                    None => what,
                }
            }
            Address::Sqs(s) => s.name.clone(),
            Address::Kafka(k) => k.topic.clone(),
            Address::File(FileAddress::Path(p)) => p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            Address::File(FileAddress::Stdin) => "-".into(),
            // Redis job queues (backend/redis/): the system, its set, the queue.
            Address::Redis(r) => {
                let set = match (r.system, r.set) {
                    (crate::address::RedisSystem::Sidekiq, crate::address::SidekiqSet::Retry) => {
                        " retry set"
                    }
                    (crate::address::RedisSystem::Sidekiq, _) => " dead set",
                    (crate::address::RedisSystem::BullMq, _) => "",
                };
                match &r.queue {
                    Some(q) => format!("{}{set} queue {q}", r.system.name()),
                    None => format!("{}{set}", r.system.name()),
                }
            }
            // RabbitMQ (backend/rabbitmq/): the queue, or the exchange and its routing key.
            Address::Rabbitmq(a) => match &a.target {
                crate::backend::rabbitmq::address::AmqpTarget::Queue(q) => q.clone(),
                crate::backend::rabbitmq::address::AmqpTarget::Exchange {
                    exchange,
                    routing_key,
                } => format!("exchange {exchange} key {routing_key}"),
            },
        }
    }

    /// The address as a record keeps it (the audit trail): a file by its absolute path, which
    /// still says where it is once the shell that ran the command is gone.
    pub fn recorded(&self) -> String {
        match self {
            Address::File(FileAddress::Path(p)) => {
                let abs = std::path::absolute(p).unwrap_or_else(|_| p.clone());
                format!("file:{}", abs.display())
            }
            other => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brief_names_and_recorded_paths() {
        let pg = Address::parse("postgres://u:pw@h:5432/app?table=ops.dead_letters&source=ops.q")
            .unwrap();
        assert_eq!(pg.brief(), "app: ops.dead_letters");
        let sqs = Address::parse("https://sqs.eu-west-1.amazonaws.com/123/orders-dlq").unwrap();
        assert_eq!(sqs.brief(), "orders-dlq");
        let kafka = Address::parse("kafka://b1:9092,b2:9092/orders.DLT").unwrap();
        assert_eq!(kafka.brief(), "orders.DLT");
        let file = Address::parse("poison.jsonl").unwrap();
        assert_eq!(file.brief(), "poison.jsonl");
        let recorded = file.recorded();
        assert!(
            recorded.starts_with("file:/") && recorded.ends_with("/poison.jsonl"),
            "{recorded}"
        );
        assert_eq!(kafka.recorded(), kafka.to_string());
    }
}
