//! What the screen shows of an [`App`]: pure functions of the state, drawn on any ratatui
//! backend (the terminal's, or the test backend of the snapshots in tests.rs).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{
    Block, Borders, Cell, Clear, Paragraph, Row, Sparkline, Table, TableState, Wrap,
};

use super::app::{Action, App, Load, QueueInfo, QueueRow, TYPE_COUNT_ABOVE, View};

/// The keys under each view (the help, `?`, lists them all).
const KEYS: [&str; 4] = [
    "j/k move  enter groups  r refresh  ? help  q quit",
    "j/k  enter open  / filter  m msgs  c class  R redrive P replay X purge E export",
    "j/k  space mark  e edit  J/K scroll  R/P/X/E group or marked  esc back  ? help",
    "j/k  space mark  e edit  J/K scroll  R/P/X/E filter or marked  esc back  ? help",
];

pub fn draw(f: &mut Frame, app: &App) {
    let [title, body, status, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(f.area());
    f.render_widget(Paragraph::new(title_line(app)), title);
    match app.view {
        View::Queues => queues(f, app, body),
        View::Groups => groups(f, app, body),
        View::Messages => messages(f, app, body),
    }
    let status_text = match &app.input {
        Some(i) => format!("{}: {}_", i.prompt(), i.text),
        None => app.status.clone(),
    };
    f.render_widget(Paragraph::new(status_text), status);
    let k = match app.view {
        View::Queues => KEYS[0],
        View::Groups => KEYS[1],
        View::Messages if app.whole_filter => KEYS[3],
        View::Messages => KEYS[2],
    };
    f.render_widget(Paragraph::new(k).style(dim(app)), keys);
    if app.help {
        help(f);
    }
    if let Some(a) = &app.action {
        action(f, app, a);
    }
}

fn title_line(app: &App) -> String {
    let mut t = "dlqctl ui".to_string();
    let queue = app.queues.get(app.queue_sel).map(|q| q.label.as_str());
    match (app.view, queue) {
        (View::Queues, _) => t.push_str(" · queues"),
        (View::Groups, Some(q)) => t.push_str(&format!(" · {q} · failure groups")),
        (View::Messages, Some(q)) => t.push_str(&format!(" · {q} · messages")),
        _ => {}
    }
    if app.read_only {
        t.push_str(" · read-only");
    }
    t
}

fn bold(app: &App) -> Style {
    if app.color {
        Style::new().add_modifier(Modifier::BOLD)
    } else {
        Style::new()
    }
}

fn dim(app: &App) -> Style {
    if app.color {
        Style::new().add_modifier(Modifier::DIM)
    } else {
        Style::new()
    }
}

/// The selected row: reversed (with or without colour, it must be seen), and marked `>`.
fn table<'a>(
    app: &App,
    header: Vec<&'a str>,
    rows: Vec<Row<'a>>,
    widths: Vec<Constraint>,
) -> Table<'a> {
    Table::new(rows, widths)
        .header(Row::new(header).style(bold(app)))
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .highlight_symbol(">")
}

fn pending<T>(l: &Load<T>) -> Option<String> {
    match l {
        Load::Idle => Some(String::new()),
        Load::Loading => Some("loading…".into()),
        Load::Failed(e) => Some(format!("error: {e}")),
        Load::Ready(_) => None,
    }
}

fn queues(f: &mut Frame, app: &App, area: Rect) {
    // As wide as the longest name, while the other columns keep theirs (65 columns: the
    // fixed ones, the gaps, the marker and 17 for CLASSES's "not read (below)"): queues
    // given as URLs differ at their ends (`?queue=…`), so a longer one shows its end.
    let longest = app
        .queues
        .iter()
        .map(|q| q.label.chars().count())
        .max()
        .unwrap_or(0);
    let width = longest
        .min(usize::from(area.width).saturating_sub(65))
        .max(14);
    let rows: Vec<Row> = app.queues.iter().map(|q| queue_row(q, width)).collect();
    let t = table(
        app,
        vec![
            "QUEUE",
            "BACKEND",
            "DEPTH",
            "OLDEST",
            "CLASSES t/p/u",
            "CHECK",
        ],
        rows,
        vec![
            Constraint::Length(width as u16),
            Constraint::Length(8),
            Constraint::Length(7),
            Constraint::Length(7),
            Constraint::Fill(1),
            Constraint::Length(20),
        ],
    );
    let selected = app.queues.get(app.queue_sel);
    let depths = selected.map_or(&[][..], |q| &q.depths[..]);
    let arrivals = match selected.map(|q| &q.info) {
        Some(Load::Ready(QueueInfo {
            arrivals: Some(a), ..
        })) => Some(a.text()),
        _ => None,
    };
    // The pane grows by the lines drawn under its text.
    let under = u16::from(arrivals.is_some()) + u16::from(depths.len() >= 2);
    let [list, detail] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(6 + under)]).areas(area);
    let mut state = TableState::new().with_selected(Some(app.queue_sel));
    f.render_stateful_widget(
        t.block(Block::new().borders(Borders::TOP).title("queues")),
        list,
        &mut state,
    );
    // The selected queue's note or error in full (its row has room for the start of it), and
    // each of its limits as `check` reports it.
    let mut text = match app.queues.get(app.queue_sel).map(|q| (&q.label, &q.info)) {
        Some((l, Load::Failed(e))) => format!("{l}: error: {e}"),
        Some((l, Load::Ready(i))) => match &i.note {
            Some(n) => format!("{l}: {n}"),
            None => format!("{l}: {} messages", i.depth.as_deref().unwrap_or("?")),
        },
        _ => String::new(),
    };
    if let Some(Load::Ready(QueueInfo { check: Some(c), .. })) =
        app.queues.get(app.queue_sel).map(|q| &q.info)
    {
        for l in &c.lines {
            text.push('\n');
            text.push_str(l);
        }
    }
    let b = Block::new().borders(Borders::TOP).title("selected queue");
    let inner = b.inner(detail);
    f.render_widget(b, detail);
    // Under the text: the arrivals per hour (from the census read), and the depth at each
    // refresh once there are two to compare.
    let [text_area, arrivals_area, spark_area] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(arrivals.is_some().into()),
        Constraint::Length((depths.len() >= 2).into()),
    ])
    .areas(inner);
    f.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }), text_area);
    if let Some(a) = arrivals {
        f.render_widget(Paragraph::new(a), arrivals_area);
    }
    if depths.len() >= 2 {
        let label = format!("depth, {} refreshes ", depths.len());
        let [l, s] = Layout::horizontal([
            Constraint::Length(label.chars().count() as u16),
            Constraint::Length(depths.len() as u16),
        ])
        .areas(spark_area);
        f.render_widget(Paragraph::new(label), l);
        f.render_widget(Sparkline::default().data(depths), s);
    }
}

/// A queue's row: what was read of it, or why nothing was.
/// `label` in `width` characters: its end, after a `…`, where it is longer.
fn tail(label: &str, width: usize) -> String {
    let n = label.chars().count();
    if n <= width {
        return label.to_string();
    }
    let rest: String = label.chars().skip(n - width.saturating_sub(1)).collect();
    format!("…{rest}")
}

fn queue_row(q: &QueueRow, width: usize) -> Row<'_> {
    let (backend, depth, oldest, classes, check) = match &q.info {
        Load::Ready(i) => (
            i.backend.clone(),
            i.depth.clone().unwrap_or("?".into()),
            i.oldest.clone().unwrap_or("-".into()),
            // The note in full is under the table.
            match &i.note {
                Some(_) => "not read (below)".into(),
                None => i.classes.clone().unwrap_or_default(),
            },
            i.check.as_ref().map_or("-".into(), |c| c.short.clone()),
        ),
        // `check` fails a queue it cannot reach.
        Load::Failed(e) => (
            String::new(),
            String::new(),
            String::new(),
            format!("error: {e}"),
            if q.limited { "FAIL reachable" } else { "-" }.into(),
        ),
        other => (
            String::new(),
            String::new(),
            String::new(),
            pending(other).unwrap_or_default(),
            String::new(),
        ),
    };
    Row::new(vec![
        Cell::new(tail(&q.label, width)),
        Cell::new(backend),
        Cell::new(depth),
        Cell::new(oldest),
        Cell::new(classes),
        Cell::new(check),
    ])
}

fn groups(f: &mut Frame, app: &App, area: Rect) {
    let [list, detail] = Layout::vertical([Constraint::Min(3), Constraint::Length(5)]).areas(area);
    let class = app.class.map(|c| format!(" · {c}")).unwrap_or_default();
    let heading = match (&app.groups, &app.query) {
        (Load::Ready(g), q) => format!(
            "{} of {}{}{class}{}",
            crate::human::count(g.items.len() as u64, "group", "groups"),
            crate::human::count(g.total, "message", "messages"),
            if g.complete { "" } else { " (partial)" },
            q.as_ref()
                .map(|q| format!(" · where {q}"))
                .unwrap_or_default()
        ),
        (_, Some(q)) => format!("where {q}{class}"),
        _ => format!("failure groups{class}"),
    };
    let block = Block::new().borders(Borders::TOP).title(heading);
    let loading = match (&app.groups, &app.read_progress) {
        (Load::Loading, Some(t)) => Some(t.clone()),
        (g, _) => pending(g),
    };
    if let Some(p) = loading {
        f.render_widget(
            Paragraph::new(p).block(block).wrap(Wrap { trim: false }),
            list,
        );
        return;
    }
    let Load::Ready(g) = &app.groups else { return };
    let rows: Vec<Row> = g
        .items
        .iter()
        .map(|g| {
            let fp = g
                .fingerprint
                .as_deref()
                .map_or("(other)".into(), |f| f.chars().take(8).collect::<String>());
            Row::new(vec![
                fp,
                g.class.clone(),
                g.count.to_string(),
                g.first_seen.clone(),
                g.last_seen.clone(),
            ])
        })
        .collect();
    let t = table(
        app,
        vec!["GROUP", "CLASS", "COUNT", "FIRST SEEN", "LAST SEEN"],
        rows,
        vec![
            Constraint::Length(8),
            Constraint::Fill(1),
            Constraint::Length(7),
            Constraint::Length(16),
            Constraint::Length(16),
        ],
    );
    let mut state = TableState::new().with_selected(Some(app.group_sel));
    f.render_stateful_widget(t.block(block), list, &mut state);
    if let Some(g) = app.group() {
        let text = format!(
            "fingerprint {}\nerror: {}",
            g.fingerprint
                .as_deref()
                .unwrap_or("none: the groups past the first 10,000, counted together"),
            g.error
        );
        let b = Block::new().borders(Borders::TOP).title("selected group");
        f.render_widget(
            Paragraph::new(text).block(b).wrap(Wrap { trim: false }),
            detail,
        );
    }
}

fn messages(f: &mut Frame, app: &App, area: Rect) {
    let [list, detail] = Layout::vertical([Constraint::Length(7), Constraint::Min(3)]).areas(area);
    let mut title = match (app.whole_filter, &app.groups, app.group()) {
        // The messages of the filter alone: as many as pass it.
        (true, Load::Ready(g), _) => format!(
            "{}{}{}",
            crate::human::count(g.total, "message", "messages"),
            app.class.map(|c| format!(" · {c}")).unwrap_or_default(),
            app.query
                .as_ref()
                .map(|q| format!(" · where {q}"))
                .unwrap_or_default()
        ),
        (false, _, Some(g)) => format!(
            "{} of group {}",
            crate::human::count(g.count, "message", "messages"),
            g.fingerprint
                .as_deref()
                .map_or("(other)", |f| &f[..f.len().min(8)])
        ),
        _ => "messages".into(),
    };
    if !app.marked.is_empty() {
        title.push_str(&format!(" · {} marked", app.marked.len()));
    }
    let block = Block::new().borders(Borders::TOP).title(title);
    if let Some(p) = pending(&app.messages) {
        f.render_widget(
            Paragraph::new(p).block(block).wrap(Wrap { trim: false }),
            list,
        );
        return;
    }
    let Load::Ready(ms) = &app.messages else {
        return;
    };
    let rows: Vec<Row> = ms
        .iter()
        .map(|m| {
            let mark = if app.marked.contains(&m.id) { "*" } else { " " };
            Row::new(vec![
                format!("{mark}{}", m.id),
                m.age.clone(),
                m.redrives.to_string(),
                m.error.clone(),
            ])
        })
        .collect();
    let t = table(
        app,
        vec!["ID", "AGE", "REDRIVES", "ERROR"],
        rows,
        vec![
            Constraint::Length(24),
            Constraint::Length(8),
            Constraint::Length(8),
            Constraint::Fill(1),
        ],
    );
    let mut state = TableState::new().with_selected(Some(app.message_sel));
    f.render_stateful_widget(t.block(block), list, &mut state);
    if let Some(m) = app.message() {
        let (title, text) = match app.raw {
            true => ("message · raw body (v: pretty)", &m.raw),
            false => ("message (v: raw body)", &m.detail),
        };
        let b = Block::new().borders(Borders::TOP).title(title);
        f.render_widget(
            Paragraph::new(text.as_str())
                .block(b)
                .wrap(Wrap { trim: false })
                .scroll((app.detail_scroll, 0)),
            detail,
        );
    }
}

/// A box in the middle of the screen, `h` lines high (at most the screen), cleared.
fn popup(f: &mut Frame, title: &str, h: u16) -> Rect {
    let a = f.area();
    let w = popup_width(a);
    let h = h.min(a.height.saturating_sub(2));
    let r = Rect::new(a.x + (a.width - w) / 2, a.y + (a.height - h) / 2, w, h);
    f.render_widget(Clear, r);
    f.render_widget(Block::bordered().title(title.to_string()), r);
    Rect::new(
        r.x + 1,
        r.y + 1,
        r.width.saturating_sub(2),
        r.height.saturating_sub(2),
    )
}

fn help(f: &mut Frame) {
    let text = "\
j / k, ↓ / ↑   move
enter          open: a queue's failure groups, a group's messages
m              groups: the messages of the / filter, every group's
J / K, PgDn/Up messages: scroll the message's detail
esc            back (and cancel a question)
/              groups: set a --where jq filter (enter sets, empty clears)
c              groups: transient, permanent, unclassified, all (--class)
space          messages: mark or unmark one
R, P, X        redrive, replay, purge the group (or filter), or the marked
E              export them to a file (as export -o)
e              messages: edit the selected one in $EDITOR (as edit)
v              messages: the body raw, as stored, or pretty again
r              queues: refresh now
?              this help (any key closes it)
q, Ctrl-C      quit";
    // Over the whole of the view, edge to edge: a box within it would cut its titles.
    let a = f.area();
    let r = Rect::new(a.x, a.y + 1, a.width, a.height.saturating_sub(3));
    f.render_widget(Clear, r);
    let b = Block::bordered().title("keys");
    f.render_widget(Paragraph::new(text).block(b), r);
}

fn action(f: &mut Frame, app: &App, a: &Action) {
    let name = app.kind.name();
    let back = [Line::from(""), Line::from("enter: back to the groups")];
    let text = |t: &str| -> Vec<Line> {
        unindent_warnings(t)
            .into_iter()
            .map(Line::from)
            .chain(back.clone())
            .collect()
    };
    let (title, lines): (String, Vec<Line>) = match a {
        Action::Planning => (
            name.to_string(),
            vec![
                Line::from("preparing the plan: counting what it would take…"),
                Line::from(app.run_progress.clone().unwrap_or_default()),
                Line::from("esc cancels"),
            ],
        ),
        Action::Running => (
            name.to_string(),
            vec![
                Line::from(format!("{name}: running…")),
                Line::from(app.run_progress.clone().unwrap_or_default()),
                Line::from("Ctrl-C stops it after its current batch"),
            ],
        ),
        Action::Confirm { plan, count, typed } => (
            format!("{name}: the plan"),
            confirm_lines(name, plan, *count, typed),
        ),
        Action::Done { summary, ok: true } => (format!("{name}: done"), text(summary)),
        Action::Done { summary, ok: false } => (
            format!("{name}: ended, not every message was done"),
            text(summary),
        ),
        Action::Failed(e) => (format!("{name}: failed"), text(e)),
    };
    let needed = height(&lines, popup_width(f.area()).saturating_sub(2));
    let inner = popup(f, &title, needed);
    // Taller than the screen: the end shows (the question is the last line).
    let hidden = needed.saturating_sub(inner.height + 2);
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((hidden, 0)),
        inner,
    );
}

/// The CLI's output for a box that wraps its lines itself: a `warning: ` line's continuation
/// lines (indented under its text for a terminal) joined to it, without their indentation;
/// every other line as it is (a summary's own indented lines stay).
fn unindent_warnings(t: &str) -> Vec<String> {
    const LEAD: &str = "warning: ";
    let pad = " ".repeat(LEAD.len());
    let mut out: Vec<String> = Vec::new();
    let mut in_warning = false;
    for l in t.lines() {
        match out.last_mut() {
            Some(last) if in_warning && l.starts_with(&pad) && !l.trim().is_empty() => {
                last.push(' ');
                last.push_str(l.trim_start());
            }
            _ => {
                in_warning = l.starts_with(LEAD);
                out.push(l.to_string());
            }
        }
    }
    out
}

/// A popup's width on a screen of `a`: the lines it wraps are as wide as its inside.
fn popup_width(a: Rect) -> u16 {
    a.width.saturating_sub(4).min(76)
}

/// The lines a popup needs for `lines` wrapped at `width` (a word wrap may take one more
/// for a long line), with its border.
fn height(lines: &[Line], width: u16) -> u16 {
    let w = usize::from(width.max(1));
    let n: usize = lines
        .iter()
        .map(|l| match l.width() {
            0 => 1,
            n if n <= w => 1,
            n => n.div_ceil(w) + 1,
        })
        .sum();
    u16::try_from(n + 2).unwrap_or(u16::MAX)
}

fn confirm_lines(
    name: &str,
    plan: &[(String, String)],
    count: Option<u64>,
    typed: &str,
) -> Vec<Line<'static>> {
    let mut lines: Vec<Line> = plan
        .iter()
        .map(|(k, v)| Line::from(format!("{k}: {}", v.replace('\n', " "))))
        .collect();
    lines.push(Line::from(""));
    lines.push(Line::from(match count {
        Some(n) if n > TYPE_COUNT_ABOVE => {
            format!("type {n} and enter to {name} them, esc to cancel: {typed}_")
        }
        _ => format!("{name}? y to start, n or esc to cancel"),
    }));
    lines
}
