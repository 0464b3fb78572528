//! Reading a sorted set in (score, member) order, page by page, from where the last page
//! ended: Sidekiq's dead and retry sets (member: the job), BullMQ's failed set (member: the
//! job id). Members with one score are in byte order (Redis's own order for ties), so a
//! cursor of (score, member) never shows a member twice and never skips one that stays.

use redis::aio::MultiplexedConnection;

/// One member of a sorted set and its score.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Entry {
    pub member: Vec<u8>,
    pub score: f64,
}

/// Where the next page starts.
#[derive(Clone, Debug, Default)]
pub(super) struct Cursor {
    last: Option<(f64, Vec<u8>)>,
    /// Members shown so far with the last score (the next page asks for this many more, to
    /// see past them).
    same: usize,
}

impl Cursor {
    fn after(&self, e: &Entry) -> bool {
        match &self.last {
            None => true,
            Some((s, m)) => e.score > *s || (e.score == *s && e.member > *m),
        }
    }

    fn advance(&mut self, e: &Entry) {
        match &self.last {
            Some((s, _)) if *s == e.score => self.same += 1,
            _ => self.same = 1,
        }
        self.last = Some((e.score, e.member.clone()));
    }

    /// A cursor standing before every member scored `score` or more.
    pub fn before(score: f64) -> Cursor {
        Cursor {
            // The empty member sorts before any other of its score.
            last: Some((score, Vec::new())),
            same: 0,
        }
    }

    /// The score the cursor stands at (None: the start).
    pub fn score(&self) -> Option<f64> {
        self.last.as_ref().map(|(s, _)| *s)
    }
}

/// A score as Redis reads it back to the same double (Rust prints the shortest form that
/// round-trips).
pub(super) fn score_arg(s: f64) -> String {
    if s.is_infinite() {
        if s > 0.0 { "+inf" } else { "-inf" }.into()
    } else {
        format!("{s}")
    }
}

/// The `ZRANGE` that reads the next page of up to `n` members after the cursor, with scores up
/// to `hi` (inclusive; None: no bound), asking `extra` more to see past the members already
/// shown with the cursor's score; and how many it asks for.
pub(super) fn page_cmd(
    key: &str,
    cursor: &Cursor,
    n: usize,
    hi: Option<f64>,
    extra: usize,
) -> (redis::Cmd, usize) {
    let lo = cursor.score().map_or_else(|| "-inf".to_string(), score_arg);
    let hi = hi.map_or_else(|| "+inf".to_string(), score_arg);
    let want = n + extra;
    let mut cmd = redis::cmd("ZRANGE");
    cmd.arg(key)
        .arg(lo)
        .arg(hi)
        .arg("BYSCORE")
        .arg("LIMIT")
        .arg(0)
        .arg(want)
        .arg("WITHSCORES");
    (cmd, want)
}

/// The page in what that `ZRANGE` answered, the cursor moved past it; None (the cursor as it
/// was) when a run of members with the cursor's score is longer than it asked past: ask again
/// for more.
pub(super) fn take_page(
    cursor: &mut Cursor,
    raw: Vec<(Vec<u8>, f64)>,
    n: usize,
    want: usize,
) -> Option<Vec<Entry>> {
    let full = raw.len() == want;
    let page: Vec<Entry> = raw
        .into_iter()
        .map(|(member, score)| Entry { member, score })
        .filter(|e| cursor.after(e))
        .take(n)
        .collect();
    if page.is_empty() && full {
        return None;
    }
    for e in &page {
        cursor.advance(e);
    }
    Some(page)
}

/// The next page of up to `n` members after the cursor, with scores up to `hi` (inclusive;
/// None: no bound), and the cursor moved past them.
pub(super) async fn next_page(
    con: &mut MultiplexedConnection,
    key: &str,
    cursor: &mut Cursor,
    n: usize,
    hi: Option<f64>,
) -> redis::RedisResult<Vec<Entry>> {
    let mut extra = cursor.same;
    loop {
        let (cmd, want) = page_cmd(key, cursor, n, hi, extra);
        let raw: Vec<(Vec<u8>, f64)> = cmd.query_async(con).await?;
        if let Some(page) = take_page(cursor, raw, n, want) {
            return Ok(page);
        }
        // A run of members with the cursor's score longer than we asked past: further.
        extra += n.max(extra);
    }
}

/// How many members after the cursor's score a page asks for beyond `n` at first.
pub(super) fn first_extra(cursor: &Cursor) -> usize {
    cursor.same
}

/// How many members `tail` remembers ([`Seen`]): 100,000 (each a 64-bit digest and a
/// score, about 3 MB with the table's overhead).
pub(super) const SEEN_AT_MOST: usize = 100_000;

/// What `tail` has seen of a sorted set, by member and score, so that a member that appears
/// with a score below ones already seen (Sidekiq's retry set is scored by the next attempt's
/// time, which a fresh failure often has sooner than an older job; a death written late by
/// another process) is shown, once. Each poll re-reads the members scored from the floor up:
/// the floor is the caller's (a margin below now), raised when more than [`SEEN_AT_MOST`]
/// members are above it, past the lowest ones, which are then forgotten.
#[derive(Debug, Default)]
pub(super) struct Seen {
    members: std::collections::HashMap<u64, f64>,
    /// Raised past the members forgotten for room: none below it is read again.
    raised: Option<f64>,
    at_most: usize,
}

fn digest(e: &Entry) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    e.member.hash(&mut h);
    e.score.to_bits().hash(&mut h);
    h.finish()
}

impl Seen {
    pub fn new(at_most: usize) -> Seen {
        Seen {
            at_most: at_most.max(1),
            ..Seen::default()
        }
    }

    /// Where this poll reads from: `floor`, or higher where members were forgotten.
    pub fn floor(&self, floor: f64) -> f64 {
        self.raised.map_or(floor, |r| r.max(floor))
    }

    /// Whether `e` (a member with its score) is seen for the first time; it is remembered.
    /// The same member with another score (a job that died again) is new.
    pub fn first_time(&mut self, e: &Entry) -> bool {
        self.members.insert(digest(e), e.score).is_none()
    }

    /// Forget the members below `floor` (no poll reads them again), and the lowest ones past
    /// the bound.
    pub fn prune(&mut self, floor: f64) {
        self.members.retain(|_, s| *s >= floor);
        if self.members.len() > self.at_most {
            let mut scores: Vec<f64> = self.members.values().copied().collect();
            scores.sort_by(f64::total_cmp);
            // Keep the highest `at_most`; a tie at the threshold keeps all of its score.
            let keep_from = scores[scores.len() - self.at_most];
            self.members.retain(|_, s| *s >= keep_from);
            self.raised = Some(self.raised.map_or(keep_from, |r| r.max(keep_from)));
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.members.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_shows_a_member_once_and_forgets_below_the_floor_and_past_the_bound() {
        let e = |m: &str, s: f64| Entry {
            member: m.as_bytes().to_vec(),
            score: s,
        };
        let mut seen = Seen::new(3);
        assert!(seen.first_time(&e("a", 10.0)));
        assert!(!seen.first_time(&e("a", 10.0)));
        // Below what was seen: still new.
        assert!(seen.first_time(&e("b", 5.0)));
        // The same member scored again (it died again): new.
        assert!(seen.first_time(&e("a", 12.0)));
        seen.prune(6.0);
        assert_eq!(seen.len(), 2, "b is below the floor");
        assert_eq!(seen.floor(6.0), 6.0);
        for (i, m) in ["c", "d", "f"].iter().enumerate() {
            assert!(seen.first_time(&e(m, 20.0 + i as f64)));
        }
        seen.prune(6.0);
        assert_eq!(seen.len(), 3);
        assert_eq!(seen.floor(6.0), 20.0, "raised past the forgotten");
        assert_eq!(seen.floor(30.0), 30.0);
        assert!(!Cursor::before(5.0).after(&e("", 5.0)));
        assert!(Cursor::before(5.0).after(&e("a", 5.0)));
        assert!(!Cursor::before(5.0).after(&e("z", 4.9)));
    }

    #[test]
    fn a_cursor_orders_by_score_then_bytes() {
        let mut c = Cursor::default();
        let e = |m: &str, s: f64| Entry {
            member: m.as_bytes().to_vec(),
            score: s,
        };
        assert!(c.after(&e("a", 1.0)));
        c.advance(&e("b", 1.0));
        assert!(!c.after(&e("a", 1.0)));
        assert!(!c.after(&e("b", 1.0)));
        assert!(c.after(&e("c", 1.0)));
        assert!(c.after(&e("a", 1.5)));
        c.advance(&e("c", 1.0));
        assert_eq!(c.same, 2);
        c.advance(&e("a", 2.0));
        assert_eq!(c.same, 1);
        assert_eq!(score_arg(1700000000.123456), "1700000000.123456");
        assert_eq!(score_arg(f64::INFINITY), "+inf");
    }
}
