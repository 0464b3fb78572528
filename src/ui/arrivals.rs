//! The queues view's arrivals line: how many messages died in each of the last 48 hours, from
//! the census the view already read (the one `inspect` shows as `arrivals`), never a second
//! read of the queue.

use crate::ops::census::{Arrivals, HOURS, sparkline};

/// A queue's dead-letter arrivals as the selected queue's pane draws them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArrivalLine {
    /// Messages per hour, oldest first; the last is the current hour (a time in the future,
    /// a clock ahead, counts there too).
    pub hourly: Vec<u64>,
    /// Messages that died before the first of those hours.
    pub older: u64,
    /// Messages with neither a dead-letter nor an enqueue time.
    pub unknown: u64,
}

impl ArrivalLine {
    /// The census's arrivals; None when it read no message (nothing to draw).
    pub fn of(a: &Arrivals, scanned: u64) -> Option<ArrivalLine> {
        (scanned > 0).then(|| ArrivalLine {
            hourly: a.hourly.clone(),
            older: a.daily.values().sum(),
            unknown: a.unknown,
        })
    }

    /// `arrivals/hour, 48h ▕  ▁ █▏ +3 older`; with no time at all, says so rather than draw
    /// an empty line.
    pub fn text(&self) -> String {
        if self.hourly.iter().sum::<u64>() + self.older == 0 {
            return "arrivals: no times recorded".into();
        }
        let mut s = format!("arrivals/hour, {HOURS}h ▕{}▏", sparkline(&self.hourly));
        if self.older > 0 {
            s.push_str(&format!(" +{} older", self.older));
        }
        if self.unknown > 0 {
            s.push_str(&format!(" {} no time", self.unknown));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Duration, Utc};

    use super::*;

    fn line(times: &[Option<DateTime<Utc>>], now: DateTime<Utc>) -> Option<ArrivalLine> {
        let mut a = Arrivals::new(now);
        for t in times {
            a.add(*t);
        }
        ArrivalLine::of(&a, times.len() as u64)
    }

    fn now() -> DateTime<Utc> {
        "2026-12-05T20:30:00Z".parse().expect("a time")
    }

    /// The 48 hours drawn, oldest first.
    fn bars(l: &ArrivalLine) -> String {
        sparkline(&l.hourly)
    }

    #[test]
    fn one_message_is_one_bar_in_its_hour() {
        let l = line(&[Some(now() - Duration::hours(3))], now()).expect("read");
        assert_eq!(l.hourly.len(), HOURS);
        assert_eq!(l.hourly[HOURS - 4], 1, "{:?}", l.hourly);
        assert_eq!(l.hourly.iter().sum::<u64>(), 1);
        assert_eq!(
            l.text(),
            format!("arrivals/hour, 48h ▕{}█   ▏", " ".repeat(HOURS - 4))
        );
    }

    #[test]
    fn all_in_one_bucket_is_one_full_bar() {
        let t = now() - Duration::minutes(5);
        let l = line(&[Some(t); 7], now()).expect("read");
        assert_eq!(l.hourly[HOURS - 1], 7);
        assert_eq!(bars(&l), format!("{}█", " ".repeat(HOURS - 1)));
        assert_eq!((l.older, l.unknown), (0, 0));
    }

    #[test]
    fn a_time_in_the_future_counts_in_the_current_hour() {
        let l = line(
            &[
                Some(now() + Duration::days(2)),
                Some(now() - Duration::hours(1)),
            ],
            now(),
        )
        .expect("read");
        assert_eq!(l.hourly[HOURS - 1], 1, "{:?}", l.hourly);
        assert_eq!(l.hourly[HOURS - 2], 1, "{:?}", l.hourly);
        assert_eq!(l.hourly.iter().sum::<u64>(), 2);
    }

    #[test]
    fn older_and_timeless_messages_are_counted_beside_the_line() {
        let l = line(&[Some(now() - Duration::days(3)), None, Some(now())], now()).expect("read");
        assert!(l.text().ends_with("█▏ +1 older 1 no time"), "{}", l.text());
        // Every message older than the 48 hours: an empty line, and how many are older.
        let l = line(&[Some(now() - Duration::days(9))], now()).expect("read");
        assert_eq!(
            l.text(),
            format!("arrivals/hour, 48h ▕{}▏ +1 older", " ".repeat(HOURS))
        );
    }

    #[test]
    fn no_times_say_so_and_no_messages_draw_nothing() {
        let l = line(&[None, None], now()).expect("read");
        assert_eq!(l.text(), "arrivals: no times recorded");
        assert_eq!(line(&[], now()), None);
    }
}
