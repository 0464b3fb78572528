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
        }
    }
}
