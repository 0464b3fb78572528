//! Tables for people, laid out for the width they are shown at.
//!
//! As kubectl and k9s do, each table says per column what a person needs at each width: a
//! column that matters less is shortened (its cells have a short form) or dropped when the
//! width runs out, in an order the table gives; `--output wide` shows every column in full.
//! Ids, numbers, times and names (what a person copies into the next command) are never
//! wrapped or cut: their column is dropped before that. Free text (templates, errors, details)
//! takes the width that is left, wrapped at spaces over a few lines and cut with `…` after
//! them; a word is never broken, a long URL, ARN or class name only at its `/`, `?`, `&`, `.`
//! or `:`.

use comfy_table::{ContentArrangement, Table, presets};
use unicode_width::UnicodeWidthStr;

/// What a table costs besides its cells: the left border, and per column one space of padding
/// either side and a rule.
const PER_COLUMN: usize = 3;
const LEFT_BORDER: usize = 1;
/// The narrowest a text column gets when nothing else can give way.
const TEXT_FLOOR: usize = 12;

/// How a column's cells are fitted into the width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// Shown whole, line by line as given: ids, numbers, times, names, words.
    Whole,
    /// Free text: gets the width left over (at least `min`, or less down to a floor of 12
    /// when nothing else can give way), wrapped over at most `lines` lines, cut with `…` after
    /// them; a cell's short form is taken where its long one would be cut.
    Text { min: usize, lines: usize },
}

/// One column: its header, how it fits, and when it gives way (a higher rank gives way first;
/// `None`: never).
#[derive(Clone, Debug)]
pub struct Col {
    header: String,
    fit: Fit,
    drop: Option<u8>,
    shorten: Option<u8>,
}

impl Col {
    /// A column shown whole (see [`Fit::Whole`]).
    pub fn whole(header: impl Into<String>) -> Col {
        Col {
            header: header.into(),
            fit: Fit::Whole,
            drop: None,
            shorten: None,
        }
    }

    /// A column of free text (see [`Fit::Text`]).
    pub fn text(header: impl Into<String>, min: usize, lines: usize) -> Col {
        Col {
            header: header.into(),
            fit: Fit::Text {
                min,
                lines: lines.max(1),
            },
            drop: None,
            shorten: None,
        }
    }

    /// Dropped when the width runs out, at this rank.
    pub fn drop_at(mut self, rank: u8) -> Col {
        self.drop = Some(rank);
        self
    }

    /// Its cells' short forms are used when the width runs out, at this rank (a text column
    /// needs no rank: each cell takes its short form where the long one would be cut).
    pub fn shorten_at(mut self, rank: u8) -> Col {
        self.shorten = Some(rank);
        self
    }
}

/// A cell: its text, and optionally a shorter form for narrow widths.
#[derive(Clone, Debug, Default)]
pub struct Cell {
    pub text: String,
    pub short: Option<String>,
}

impl Cell {
    /// Control characters in `text` (a message's id, error or header: anyone's bytes) are
    /// escaped, its line breaks kept.
    pub fn new(text: impl Into<String>) -> Cell {
        Cell {
            text: crate::text::escape_controls_but_newlines(&text.into()),
            short: None,
        }
    }

    /// A cell with a short form (used once its column is shortened).
    pub fn with_short(text: impl Into<String>, short: impl Into<String>) -> Cell {
        let text = crate::text::escape_controls_but_newlines(&text.into());
        let short = crate::text::escape_controls_but_newlines(&short.into());
        Cell {
            short: (short != text).then_some(short),
            text,
        }
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::new(s)
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::new(s)
    }
}

/// A table being built: columns, then rows.
#[derive(Clone, Debug, Default)]
pub struct Grid {
    cols: Vec<Col>,
    rows: Vec<Vec<Cell>>,
    header: bool,
}

/// What the layout decided for one column.
#[derive(Clone, Copy, Debug)]
struct Shape {
    shown: bool,
    short: bool,
    width: usize,
}

impl Grid {
    /// A table with a header row.
    pub fn new(cols: Vec<Col>) -> Grid {
        Grid {
            cols,
            rows: Vec::new(),
            header: true,
        }
    }

    /// A table of name/value rows, without a header (plans, facts).
    pub fn pairs() -> Grid {
        Grid {
            cols: vec![Col::whole(""), Col::text("", 20, usize::MAX)],
            rows: Vec::new(),
            header: false,
        }
    }

    pub fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as text for a width (`None`: unlimited, every column in full).
    pub fn render(&self, width: Option<usize>, color: bool) -> String {
        let shapes = self.layout(width);
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled);
        if !color {
            t.force_no_tty();
        }
        let shown: Vec<usize> = (0..self.cols.len()).filter(|&i| shapes[i].shown).collect();
        if self.header {
            t.set_header(
                shown
                    .iter()
                    .map(|&i| self.cols[i].header.clone())
                    .collect::<Vec<_>>(),
            );
        }
        for r in &self.rows {
            t.add_row(
                shown
                    .iter()
                    .map(|&i| self.fitted(r.get(i), i, shapes[i]))
                    .collect::<Vec<_>>(),
            );
        }
        t.to_string()
    }

    fn fitted(&self, cell: Option<&Cell>, i: usize, s: Shape) -> String {
        let Some(c) = cell else {
            return String::new();
        };
        let text = match (&c.short, s.short) {
            (Some(short), true) => short.as_str(),
            _ => c.text.as_str(),
        };
        match self.cols[i].fit {
            Fit::Whole => text.to_string(),
            Fit::Text { lines, .. } => {
                // Free text takes its short form where the long one would be cut.
                let long = wrap(text, s.width, lines);
                match &c.short {
                    Some(short) if is_cut(&long, text) => wrap(short, s.width, lines).join("\n"),
                    _ => long.join("\n"),
                }
            }
        }
    }

    /// The widest line of column `i`'s header and cells, in the long or the short form.
    fn natural(&self, i: usize, short: bool) -> usize {
        let header = if self.header {
            self.cols[i].header.width()
        } else {
            0
        };
        self.rows
            .iter()
            .filter_map(|r| r.get(i))
            .map(|c| {
                let t = match (&c.short, short) {
                    (Some(s), true) => s,
                    _ => &c.text,
                };
                t.lines().map(UnicodeWidthStr::width).max().unwrap_or(0)
            })
            .max()
            .unwrap_or(0)
            .max(header)
            .max(1)
    }

    /// Which columns are shown, in which form, how wide: the steps the columns allow, least
    /// important first, until the table fits; then the text columns share what is left.
    fn layout(&self, width: Option<usize>) -> Vec<Shape> {
        let n = self.cols.len();
        let mut shapes: Vec<Shape> = (0..n)
            .map(|i| Shape {
                shown: true,
                short: false,
                width: self.natural(i, false),
            })
            .collect();
        let Some(width) = width else {
            return shapes;
        };
        // (rank, column, drop?) — a higher rank gives way first; at one rank the rightmost.
        let mut steps: Vec<(u8, usize, bool)> = Vec::new();
        for (i, c) in self.cols.iter().enumerate() {
            if let Some(r) = c.shorten
                && self
                    .rows
                    .iter()
                    .any(|row| row.get(i).is_some_and(|c| c.short.is_some()))
            {
                steps.push((r, i, false));
            }
            if let Some(r) = c.drop {
                steps.push((r, i, true));
            }
        }
        steps.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
        let least = |shapes: &[Shape]| -> usize {
            LEFT_BORDER
                + (0..n)
                    .filter(|&i| shapes[i].shown)
                    .map(|i| {
                        PER_COLUMN
                            + match self.cols[i].fit {
                                Fit::Whole => shapes[i].width,
                                Fit::Text { min, .. } => shapes[i].width.min(min),
                            }
                    })
                    .sum::<usize>()
        };
        let mut steps = steps.into_iter();
        while least(&shapes) > width {
            let Some((_, i, drop)) = steps.next() else {
                break;
            };
            if drop {
                shapes[i].shown = false;
            } else {
                shapes[i].short = true;
                shapes[i].width = self.natural(i, true);
            }
        }
        let text: Vec<usize> = (0..n)
            .filter(|&i| shapes[i].shown && matches!(self.cols[i].fit, Fit::Text { .. }))
            .collect();
        if least(&shapes) > width && !text.is_empty() {
            // Nothing left to give way: the text columns share what the rest leaves, down to
            // a floor (a column of a few letters says nothing).
            let fixed: usize = LEFT_BORDER
                + (0..n)
                    .filter(|&i| shapes[i].shown)
                    .map(|i| {
                        PER_COLUMN
                            + match self.cols[i].fit {
                                Fit::Whole => shapes[i].width,
                                Fit::Text { .. } => 0,
                            }
                    })
                    .sum::<usize>();
            let each = (width.saturating_sub(fixed) / text.len()).max(TEXT_FLOOR);
            for i in text {
                shapes[i].width = shapes[i].width.min(each);
            }
            return shapes;
        }
        // The text columns: their minimum, then what is left, in column order, up to their
        // natural width.
        let mut spare = width.saturating_sub(least(&shapes));
        for (shape, col) in shapes.iter_mut().zip(&self.cols) {
            if let (true, Fit::Text { min, .. }) = (shape.shown, col.fit) {
                let natural = shape.width;
                let base = natural.min(min);
                let extra = (natural - base).min(spare);
                spare -= extra;
                shape.width = base + extra;
            }
        }
        shapes
    }
}

/// `text` wrapped to `width` columns over at most `lines` lines (each of its own lines
/// separately), the rest cut with `…`. Words are never broken: a word longer than the width
/// is split only after a `/`, `.` or `:` or before a `?` or `&` (URLs, paths, ARNs, class
/// names), and otherwise cut with `…`.
pub fn wrap(text: &str, width: usize, lines: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out: Vec<String> = Vec::new();
    'text: for para in text.lines() {
        let mut line = String::new();
        for word in words(para, width) {
            for piece in pieces(word, width) {
                if line.is_empty() {
                    line.push_str(piece);
                } else if line.width() + 1 + piece.width() <= width {
                    line.push(' ');
                    line.push_str(piece);
                } else {
                    out.push(std::mem::replace(&mut line, piece.to_string()));
                    if out.len() > lines {
                        break 'text;
                    }
                }
            }
        }
        out.push(line);
        if out.len() > lines {
            break;
        }
    }
    while out.len() > 1 && out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    let cut = out.len() > lines;
    out.truncate(lines);
    if out.is_empty() {
        out.push(String::new());
    }
    for l in out.iter_mut() {
        if l.width() > width {
            *l = with_ellipsis(l, width);
        }
    }
    if cut && let Some(last) = out.last_mut() {
        // Room for the ellipsis: the last word gives way whole (unless it is the only one).
        while last.width() + 1 > width {
            match last.rsplit_once(' ') {
                Some((head, _)) => *last = head.trim_end().to_string(),
                None => {
                    *last = with_ellipsis(last, width);
                    return out;
                }
            }
        }
        last.push('…');
    }
    out
}

/// The words of `para`: split at white space, except that a `code span` (a command to copy)
/// stays one word when it fits in the width.
fn words(para: &str, width: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = para.trim_start();
    while !rest.is_empty() {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..end];
        let mut take = end;
        // An opening backtick without its closing one in this word: the span runs on.
        if word.matches('`').count() % 2 == 1
            && let Some(close) = rest[end..].find('`')
        {
            let span_end = end + close + 1;
            let span_end = span_end
                + rest[span_end..]
                    .find(char::is_whitespace)
                    .unwrap_or(rest.len() - span_end);
            if rest[..span_end].width() <= width {
                take = span_end;
            }
        }
        out.push(&rest[..take]);
        rest = rest[take..].trim_start();
    }
    out
}

/// Pieces of a word split for wrapping: the word itself when it fits, else split where a long
/// URL, path, ARN or class name can break: before `?` and `&` and after `/` first, after `.`
/// and `:` only where that is not enough. The pieces are joined back while they fit, so two pieces of one
/// word never share a line (and never get a space between them).
fn pieces(word: &str, width: usize) -> Vec<&str> {
    if word.width() <= width {
        return vec![word];
    }
    let mut out = Vec::new();
    for strong in split_at(word, |b, i| match b {
        b'/' => Some(i + 1),
        b'?' | b'&' if i > 0 => Some(i),
        _ => None,
    }) {
        if strong.width() <= width {
            out.push(strong);
        } else {
            out.extend(split_at(strong, |b, i| {
                matches!(b, b'.' | b':').then_some(i + 1)
            }));
        }
    }
    // Join pieces back while they fit, so that a URL breaks as few times as it must.
    let offset = |p: &str| p.as_ptr() as usize - word.as_ptr() as usize;
    let mut joined: Vec<&str> = Vec::new();
    let (mut from, mut end) = (0, 0);
    for p in out {
        let p_end = offset(p) + p.len();
        if end > from && word[from..p_end].width() > width {
            joined.push(&word[from..end]);
            from = end;
        }
        end = p_end;
    }
    joined.push(&word[from..end]);
    joined
}

/// `word` cut where `at` says (at a byte offset, given the byte and its index).
fn split_at(word: &str, at: impl Fn(u8, usize) -> Option<usize>) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &b) in word.as_bytes().iter().enumerate() {
        if let Some(cut) = at(b, i)
            && cut > start
            && cut < word.len()
        {
            out.push(&word[start..cut]);
            start = cut;
        }
    }
    out.push(&word[start..]);
    out
}

/// Whether `lines` (wrapped from `text`) lost some of it.
fn is_cut(lines: &[String], text: &str) -> bool {
    let kept: usize = lines.iter().map(|l| l.split_whitespace().count()).sum();
    lines.iter().any(|l| l.ends_with('…')) || kept < text.split_whitespace().count()
}

/// `s` cut to `width` columns, ending in `…`.
pub fn truncate(s: &str, width: usize) -> String {
    if s.width() <= width {
        return s.to_string();
    }
    with_ellipsis(s, width)
}

/// `s` ending in `…`, within `width` columns.
fn with_ellipsis(s: &str, width: usize) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if out.width() + c.to_string().width() + 1 > width {
            break;
        }
        out.push(c);
    }
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    /// A cell shows control characters escaped and keeps its own line breaks.
    #[test]
    fn cells_escape_control_characters_but_line_breaks() {
        assert_eq!(Cell::new("a\x1b[31mb\nc").text, "a\\u{1b}[31mb\nc");
        let c = Cell::with_short("id\x07long", "id\x07");
        assert_eq!(
            (c.text.as_str(), c.short.as_deref()),
            ("id\\u{7}long", Some("id\\u{7}"))
        );
    }

    use super::*;

    #[test]
    fn words_are_never_broken() {
        assert_eq!(
            wrap("upstream call timed out after 30s", 14, 9),
            ["upstream call", "timed out", "after 30s"]
        );
        // Over the line limit: cut with an ellipsis.
        assert_eq!(
            wrap("upstream call timed out after 30s", 14, 2),
            ["upstream call", "timed out…"]
        );
        // The ellipsis takes the place of a whole word.
        assert_eq!(
            wrap("validation failed: currency must be", 20, 1),
            ["validation failed:…"]
        );
        // A word longer than the width is cut, not broken.
        assert_eq!(wrap("ord-3fa2c1d0-9b7e-4c1a", 10, 3), ["ord-3fa2c…"]);
        // A command in backticks stays on one line.
        assert_eq!(
            wrap("to copy a subset, use `dlqctl replay` instead", 25, 9),
            ["to copy a subset, use", "`dlqctl replay` instead"]
        );
        assert_eq!(wrap("", 10, 2), [""]);
    }

    #[test]
    fn urls_break_at_their_parameters_first() {
        let url =
            "postgres://u:***@127.0.0.1:5432/app?table=ops.dead_letters&source=ops.queue_messages";
        assert_eq!(
            wrap(url, 40, 9),
            [
                "postgres://u:***@127.0.0.1:5432/app",
                "?table=ops.dead_letters",
                "&source=ops.queue_messages"
            ]
        );
        assert_eq!(
            wrap(
                "com.acme.payments.PaymentDeclinedException: declined",
                24,
                9
            ),
            ["com.acme.payments.", "PaymentDeclinedExceptio…", "declined"]
        );
    }

    fn grid() -> Grid {
        let mut g = Grid::new(vec![
            Col::whole("id"),
            Col::text("text", 10, 2),
            Col::whole("class").shorten_at(50),
            Col::whole("first").drop_at(60),
            Col::whole("last").drop_at(40),
        ]);
        g.row(vec![
            "ord-1".into(),
            "connection reset by peer".into(),
            Cell::with_short("transient/connection", "transient"),
            "2026-12-04 03:00".into(),
            "2026-12-04 04:00".into(),
        ]);
        g
    }

    #[test]
    fn columns_give_way_in_their_order() {
        let wide = grid().render(None, false);
        assert!(
            wide.contains("transient/connection") && wide.contains("first"),
            "{wide}"
        );
        // All of it needs 83 columns: `first` goes first, then `class` is shortened, then
        // `last` goes.
        let at = |w: usize| grid().render(Some(w), false);
        assert!(at(83).contains("first"), "{}", at(83));
        let t = at(80);
        assert!(
            !t.contains("first") && t.contains("transient/connection"),
            "{t}"
        );
        let t = at(60);
        assert!(!t.contains("/connection") && t.contains("last"), "{t}");
        let t = at(50);
        assert!(!t.contains("last") && t.contains("ord-1"), "{t}");
        // Narrower than everything that cannot give way: the text column goes below its
        // minimum (down to a floor) before the table overflows.
        let t = at(45);
        assert!(t.lines().all(|l| l.chars().count() <= 45), "{t}");
        for w in [45, 50, 60, 80, 83] {
            assert!(
                at(w).lines().all(|l| l.chars().count() <= w),
                "{w}:\n{}",
                at(w)
            );
        }
    }
}
