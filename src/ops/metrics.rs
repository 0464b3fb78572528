//! `--output prometheus`: OpenMetrics text for node_exporter's textfile collector or a
//! Pushgateway. The metric names and labels are listed in docs/triage.md ("Metrics") and are
//! stable: a dashboard or an alert rule built on them keeps working.

use std::fmt::Write;

use crate::ops::census::{Census, OTHER};

/// Metrics being collected: families in the order first added, samples in order.
#[derive(Default)]
pub struct Metrics {
    families: Vec<Family>,
}

struct Family {
    name: &'static str,
    help: &'static str,
    samples: Vec<(Vec<(&'static str, String)>, f64)>,
}

impl Metrics {
    /// Add a gauge sample.
    pub fn gauge(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: Vec<(&'static str, String)>,
        value: f64,
    ) {
        let i = match self.families.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                self.families.push(Family {
                    name,
                    help,
                    samples: Vec::new(),
                });
                self.families.len() - 1
            }
        };
        self.families[i].samples.push((labels, value));
    }

    /// The text: `# HELP`, `# TYPE` and samples per family, then `# EOF`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for f in &self.families {
            let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
            let _ = writeln!(out, "# TYPE {} gauge", f.name);
            for (labels, v) in &f.samples {
                out.push_str(f.name);
                if !labels.is_empty() {
                    out.push('{');
                    for (i, (k, v)) in labels.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        let _ = write!(out, "{k}=\"{}\"", escape(v));
                    }
                    out.push('}');
                }
                let _ = writeln!(out, " {}", number(*v));
            }
        }
        out.push_str("# EOF\n");
        out
    }

    /// The census metrics of one queue: by class, by fingerprint, and whether it was complete.
    pub fn census(&mut self, queue: &str, c: &Census) {
        let q = || ("queue", queue.to_string());
        self.gauge(
            "dlqctl_scanned_messages",
            "Messages read to count the classes and fingerprints.",
            vec![q()],
            c.scanned as f64,
        );
        self.gauge(
            "dlqctl_scan_complete",
            "1 when every message was read, 0 when the counts are of a sample (the first --scan-max).",
            vec![q()],
            if c.complete { 1.0 } else { 0.0 },
        );
        for ((kind, rule), n) in &c.by_class {
            self.gauge(
                "dlqctl_class_messages",
                "Messages by failure class: kind (transient, permanent, unclassified) and rule.",
                vec![q(), ("kind", kind.to_string()), ("rule", rule.clone())],
                *n as f64,
            );
        }
        for f in c.fingerprints() {
            let mut labels = vec![q(), ("fingerprint", f.fingerprint.clone())];
            if f.fingerprint != OTHER {
                labels.push(("rule", f.rule.clone()));
            }
            self.gauge(
                "dlqctl_fingerprint_messages",
                "Messages by error fingerprint (classify --by fingerprint shows the template).",
                labels,
                f.count as f64,
            );
        }
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_openmetrics() {
        let mut m = Metrics::default();
        m.gauge(
            "dlqctl_messages",
            "Messages.",
            vec![("queue", "a\"b\\c\nd".into())],
            3.0,
        );
        m.gauge(
            "dlqctl_messages",
            "Messages.",
            vec![("queue", "x".into())],
            0.5,
        );
        m.gauge("dlqctl_up", "Up.", vec![], 1.0);
        assert_eq!(
            m.render(),
            "# HELP dlqctl_messages Messages.\n# TYPE dlqctl_messages gauge\n\
             dlqctl_messages{queue=\"a\\\"b\\\\c\\nd\"} 3\n\
             dlqctl_messages{queue=\"x\"} 0.5\n\
             # HELP dlqctl_up Up.\n# TYPE dlqctl_up gauge\ndlqctl_up 1\n# EOF\n"
        );
    }
}
