//! Numbers as people read them (`45d`, `17d 1h`, `3.2 MiB`): one spelling for every layer
//! (backends describe facts with them, output shows them).

use std::time::Duration;

/// A count and its noun, singular for one: `1 job`, `3 jobs`, `1 death/day`.
pub fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

pub fn human_bytes(n: i64) -> String {
    let n = n as f64;
    if n >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.1} GiB", n / (1024.0 * 1024.0 * 1024.0))
    } else if n >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", n / (1024.0 * 1024.0))
    } else if n >= 1024.0 {
        format!("{:.1} KiB", n / 1024.0)
    } else {
        format!("{n} B")
    }
}

pub fn human_age(d: chrono::Duration) -> String {
    let secs = d.num_seconds().max(0) as u64;
    let rounded = if secs >= 86400 {
        secs - secs % 3600
    } else if secs >= 3600 {
        secs - secs % 60
    } else {
        secs
    };
    fmt_duration(Duration::from_secs(rounded)).to_string()
}

/// Durations the way dlqctl.toml spells them: `45d`, `17d 1h`, `2m 30s`, `0s`.
pub fn fmt_duration(d: Duration) -> String {
    let mut secs = d.as_secs();
    if secs == 0 {
        return if d.is_zero() {
            "0s".into()
        } else {
            format!("{}ms", d.as_millis())
        };
    }
    let mut parts = Vec::new();
    for (unit, n) in [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)] {
        if secs >= n {
            parts.push(format!("{}{unit}", secs / n));
            secs %= n;
        }
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_say_one_in_the_singular() {
        assert_eq!(count(1, "job", "jobs"), "1 job");
        assert_eq!(count(0, "job", "jobs"), "0 jobs");
        assert_eq!(count(2, "death/day", "deaths/day"), "2 deaths/day");
    }

    #[test]
    fn durations_read_like_the_config() {
        assert_eq!(fmt_duration(Duration::from_secs(45 * 86_400)), "45d");
        assert_eq!(
            fmt_duration(Duration::from_secs(17 * 86_400 + 3600)),
            "17d 1h"
        );
        assert_eq!(fmt_duration(Duration::from_secs(150)), "2m 30s");
        assert_eq!(fmt_duration(Duration::ZERO), "0s");
        let back = humantime::parse_duration(&fmt_duration(Duration::from_secs(90_061))).unwrap();
        assert_eq!(back, Duration::from_secs(90_061));
    }
}
