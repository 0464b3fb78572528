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

    /// A cursor standing after `e` (a tail starts after the last member).
    pub fn after_entry(e: Entry) -> Cursor {
        Cursor {
            last: Some((e.score, e.member)),
            same: 1,
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

#[cfg(test)]
mod tests {
    use super::*;

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
