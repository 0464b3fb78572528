//! The UI's state and what each key does to it: no I/O, no terminal. A key gives an
//! [`Effect`] (work for the worker, `mod.rs` starts it); a result of that work comes back as a
//! [`Loaded`] (see [`App::on_loaded`]). Everything here is tested without a terminal (tests.rs).

pub use super::types::*;

/// The whole state of the UI.
#[derive(Debug)]
pub struct App {
    pub queues: Vec<QueueRow>,
    pub read_only: bool,
    /// Styles (bold, reverse, dim) beyond the selection: off with NO_COLOR or `--color never`.
    pub color: bool,
    pub view: View,
    pub queue_sel: usize,
    pub groups: Load<GroupList>,
    pub group_sel: usize,
    /// The class the groups view shows (`c` cycles it), None: every class.
    pub class: Option<&'static str>,
    /// The `--where` of the groups view (set with `/`).
    pub query: Option<String>,
    pub messages: Load<Vec<MessageItem>>,
    /// The messages view is of the filter (`/`, `c`) alone, every group's (`m`), not of the
    /// selected group: R, P, X and E act on the filter.
    pub whole_filter: bool,
    pub message_sel: usize,
    /// The ids of the messages marked with space in the messages view: R, P and X act on
    /// them (within the group) when there are any.
    pub marked: std::collections::BTreeSet<String>,
    /// Lines of the detail pane scrolled past (PgDn/PgUp, J/K).
    pub detail_scroll: u16,
    /// `v`: the detail pane shows the body exactly as stored rather than `peek`'s card.
    pub raw: bool,
    /// A filter or a target being typed.
    pub input: Option<Input>,
    pub help: bool,
    pub action: Option<Action>,
    /// What the action is.
    pub kind: RunKind,
    /// How far the groups' read is (shown while they load), and the run's (in its box).
    pub read_progress: Option<String>,
    pub run_progress: Option<String>,
    /// `[audit] require_reason` without `--reason`: a run asks for one first.
    pub needs_reason: bool,
    /// The reason typed for the run being asked for, and its target meanwhile.
    reason: Option<String>,
    pending_to: Option<String>,
    /// One line under the view: what just happened.
    pub status: String,
}

impl App {
    pub fn new(labels: Vec<String>, read_only: bool) -> App {
        App {
            queues: labels
                .into_iter()
                .map(|label| QueueRow {
                    label,
                    info: Load::Loading,
                    depths: Vec::new(),
                    limited: false,
                })
                .collect(),
            read_only,
            color: false,
            view: View::Queues,
            queue_sel: 0,
            groups: Load::Idle,
            group_sel: 0,
            query: None,
            class: None,
            messages: Load::Idle,
            whole_filter: false,
            message_sel: 0,
            marked: Default::default(),
            detail_scroll: 0,
            raw: false,
            input: None,
            help: false,
            action: None,
            kind: RunKind::Redrive,
            read_progress: None,
            run_progress: None,
            needs_reason: false,
            reason: None,
            pending_to: None,
            status: String::new(),
        }
    }

    /// The selected group, when the groups are loaded.
    pub fn group(&self) -> Option<&GroupItem> {
        match &self.groups {
            Load::Ready(g) => g.items.get(self.group_sel),
            _ => None,
        }
    }

    /// The selected message, when the messages are loaded.
    pub fn message(&self) -> Option<&MessageItem> {
        match &self.messages {
            Load::Ready(m) => m.get(self.message_sel),
            _ => None,
        }
    }

    /// What a key does: the state changes here; the work it asks for is returned.
    pub fn on_key(&mut self, key: Key) -> Effect {
        if key == Key::Interrupt {
            if self.action == Some(Action::Running) {
                self.status = "stopping after the current batch; the UI closes then".into();
                return Effect::Stop;
            }
            return Effect::Quit;
        }
        // What the last key did is said until the next one.
        self.status.clear();
        if self.input.is_some() {
            return self.on_input_key(key);
        }
        if self.action.is_some() {
            return self.on_action_key(key);
        }
        if self.help {
            self.help = false;
            return Effect::None;
        }
        match key {
            Key::Char('q') => Effect::Quit,
            Key::Char('?') => {
                self.help = true;
                Effect::None
            }
            Key::Char('j') | Key::Down => self.step(1),
            Key::Char('k') | Key::Up => self.step(-1),
            Key::Enter => self.enter(),
            Key::Esc => self.back(),
            Key::Char('c') if self.view == View::Groups => {
                let at = CLASSES.iter().position(|c| Some(*c) == self.class);
                self.class = CLASSES.get(at.map_or(0, |i| i + 1)).copied();
                self.load_groups()
            }
            Key::Char('/') if self.view == View::Groups => {
                self.input = Some(Input {
                    purpose: Purpose::Where,
                    text: self.query.clone().unwrap_or_default(),
                });
                Effect::None
            }
            Key::Char('m') if self.view == View::Groups => self.open_filter(),
            Key::Char('r') if self.view == View::Queues => {
                self.status = "refreshing".into();
                Effect::LoadQueues
            }
            Key::Char('R') if self.view != View::Queues => self.run(RunKind::Redrive, None),
            Key::Char('P') if self.view != View::Queues => self.ask_target(RunKind::Replay),
            Key::Char('X') if self.view != View::Queues => self.ask_target(RunKind::Purge),
            Key::Char('E') if self.view != View::Queues => self.ask_target(RunKind::Export),
            Key::Char(' ') if self.view == View::Messages => self.mark(),
            Key::Char('e') if self.view == View::Messages => self.edit(),
            Key::Char('v') if self.view == View::Messages => {
                self.raw = !self.raw;
                self.detail_scroll = 0;
                Effect::None
            }
            Key::PageDown | Key::Char('J') if self.view == View::Messages => {
                self.detail_scroll = self.detail_scroll.saturating_add(10);
                Effect::None
            }
            Key::PageUp | Key::Char('K') if self.view == View::Messages => {
                self.detail_scroll = self.detail_scroll.saturating_sub(10);
                Effect::None
            }
            _ => Effect::None,
        }
    }

    /// A key while a line is typed: enter uses it, esc drops it. An empty `/` filter clears
    /// the filter; an empty target asks nothing.
    fn on_input_key(&mut self, key: Key) -> Effect {
        let Some(input) = self.input.as_mut() else {
            return Effect::None;
        };
        match key {
            Key::Char(c) => input.text.push(c),
            Key::Backspace => {
                input.text.pop();
            }
            Key::Esc => self.input = None,
            Key::Enter => {
                let text = input.text.trim().to_string();
                let purpose = input.purpose;
                self.input = None;
                return match purpose {
                    Purpose::Where => {
                        self.query = (!text.is_empty()).then_some(text);
                        self.load_groups()
                    }
                    Purpose::Target(_) if text.is_empty() => Effect::None,
                    Purpose::Target(RunKind::Purge) if text == "none" => {
                        self.run(RunKind::Purge, None)
                    }
                    Purpose::Target(kind) => self.run(kind, Some(text)),
                    Purpose::EditReason if text.is_empty() => {
                        self.status =
                            "edit: a reason is required ([audit] require_reason); nothing done"
                                .into();
                        Effect::None
                    }
                    Purpose::EditReason => self.edit_with(Some(text)),
                    Purpose::Reason(kind) if text.is_empty() => {
                        self.pending_to = None;
                        self.status = format!(
                            "{}: a reason is required ([audit] require_reason); nothing done",
                            kind.name()
                        );
                        Effect::None
                    }
                    Purpose::Reason(kind) => {
                        self.reason = Some(text);
                        let to = self.pending_to.take();
                        self.run(kind, to)
                    }
                };
            }
            _ => {}
        }
        Effect::None
    }

    /// A key while a run is on screen: its question, or its outcome.
    fn on_action_key(&mut self, key: Key) -> Effect {
        match (&mut self.action, key) {
            (Some(Action::Confirm { typed, count, .. }), k) => {
                let by_count = count.is_some_and(|n| n > TYPE_COUNT_ABOVE);
                match k {
                    Key::Esc | Key::Char('n') if !by_count || k == Key::Esc => {
                        self.action = None;
                        self.status = format!("{} cancelled; nothing done", self.kind.name());
                        Effect::Answer(false)
                    }
                    Key::Char('y') if !by_count => self.start(),
                    Key::Char(c) if by_count && c.is_ascii_digit() => {
                        typed.push(c);
                        Effect::None
                    }
                    Key::Backspace => {
                        typed.pop();
                        Effect::None
                    }
                    Key::Enter if by_count && count.is_some_and(|n| typed == &n.to_string()) => {
                        self.start()
                    }
                    _ => Effect::None,
                }
            }
            (Some(Action::Planning), Key::Esc) => {
                self.action = None;
                self.status = format!("{} cancelled; nothing done", self.kind.name());
                Effect::Answer(false)
            }
            (Some(Action::Done { .. } | Action::Failed(_)), Key::Char('q')) => Effect::Quit,
            (Some(Action::Done { .. } | Action::Failed(_)), Key::Esc | Key::Enter) => {
                self.action = None;
                // Back to the groups: the messages and the marks are of before the run.
                self.view = self.view.min(View::Groups);
                self.marked.clear();
                // The counts changed: read them again.
                self.load_groups()
            }
            _ => Effect::None,
        }
    }

    fn start(&mut self) -> Effect {
        self.action = Some(Action::Running);
        Effect::Answer(true)
    }

    /// `e`: edit the selected message as `dlqctl edit` does (refused in `--read-only`).
    fn edit(&mut self) -> Effect {
        if self.read_only {
            self.status = "read-only: edit is disabled (started with --read-only)".into();
            return Effect::None;
        }
        if self.message().is_none() {
            return Effect::None;
        }
        if self.needs_reason {
            self.input = Some(Input {
                purpose: Purpose::EditReason,
                text: String::new(),
            });
            return Effect::None;
        }
        self.edit_with(None)
    }

    /// `dlqctl edit` of the selected message, with the reason typed for it.
    fn edit_with(&mut self, reason: Option<String>) -> Effect {
        match self.message() {
            Some(m) => Effect::Edit {
                queue: self.queue_sel,
                id: m.id.clone(),
                reason,
            },
            None => Effect::None,
        }
    }

    /// Back from `dlqctl edit` (its output was on the terminal): the groups, read again, as
    /// after a run.
    pub fn edited(&mut self, outcome: String) -> Effect {
        self.view = View::Groups;
        self.marked.clear();
        self.status = outcome;
        self.load_groups()
    }

    /// Space: mark the selected message, or unmark it.
    fn mark(&mut self) -> Effect {
        if let Some(id) = self.message().map(|m| m.id.clone())
            && !self.marked.remove(&id)
        {
            self.marked.insert(id);
        }
        self.status = match self.marked.len() {
            0 => "no message marked: R, P and X act on the group".into(),
            n => format!("{n} marked: R, P and X act on them; space unmarks"),
        };
        Effect::None
    }

    fn step(&mut self, by: isize) -> Effect {
        let (sel, len) = match self.view {
            View::Queues => (&mut self.queue_sel, self.queues.len()),
            View::Groups => (
                &mut self.group_sel,
                list_len(&self.groups, |g| g.items.len()),
            ),
            View::Messages => (&mut self.message_sel, list_len(&self.messages, Vec::len)),
        };
        if len > 0 {
            *sel = sel.saturating_add_signed(by).min(len - 1);
        }
        self.detail_scroll = 0;
        Effect::None
    }

    fn enter(&mut self) -> Effect {
        match self.view {
            View::Queues if !self.queues.is_empty() => {
                self.view = View::Groups;
                self.query = None;
                self.class = None;
                self.load_groups()
            }
            View::Groups => match self.group().map(|g| g.fingerprint.clone()) {
                Some(None) => {
                    self.status = format!("{OTHER_GROUPS}; then open one");
                    Effect::None
                }
                Some(Some(fingerprint)) => self.open_messages(Some(fingerprint)),
                None => Effect::None,
            },
            _ => Effect::None,
        }
    }

    /// `m`: the messages view of the `/` filter (and `c` class) alone, every group's; R, P, X
    /// and E there act on the filter. Without a filter it would be the whole queue: refused.
    fn open_filter(&mut self) -> Effect {
        if self.query.is_none() && self.class.is_none() {
            self.status =
                "m lists the messages of a filter: set one with / (or a class with c) first".into();
            return Effect::None;
        }
        self.open_messages(None)
    }

    /// The messages view of a group (None: of the filter alone).
    fn open_messages(&mut self, fingerprint: Option<String>) -> Effect {
        self.view = View::Messages;
        self.whole_filter = fingerprint.is_none();
        self.messages = Load::Loading;
        self.message_sel = 0;
        self.marked.clear();
        self.detail_scroll = 0;
        Effect::LoadMessages {
            queue: self.queue_sel,
            fingerprint,
            query: self.query.clone(),
            class: self.class,
        }
    }

    fn back(&mut self) -> Effect {
        match self.view {
            View::Messages => {
                self.view = View::Groups;
                self.marked.clear();
            }
            View::Groups => {
                self.view = View::Queues;
                self.groups = Load::Idle;
            }
            View::Queues => {}
        }
        Effect::None
    }

    fn load_groups(&mut self) -> Effect {
        self.groups = Load::Loading;
        self.read_progress = None;
        self.group_sel = 0;
        Effect::LoadGroups {
            queue: self.queue_sel,
            query: self.query.clone(),
            class: self.class,
        }
    }

    /// The group an action would act on (Some(None): the filter alone, in its messages view),
    /// or why there is none (read-only, nothing selected, no fingerprint): said on the status
    /// line.
    fn target_group(&mut self, kind: RunKind) -> Option<Option<String>> {
        let name = kind.name();
        // An export changes nothing: it is allowed in --read-only.
        if self.read_only && kind != RunKind::Export {
            self.status = format!("read-only: {name} is disabled (started with --read-only)");
            return None;
        }
        if self.view == View::Messages && self.whole_filter {
            return Some(None);
        }
        let Some(g) = self.group() else {
            self.status = "no group selected".into();
            return None;
        };
        let fingerprint = g.fingerprint.clone();
        if fingerprint.is_none() {
            self.status = format!("{OTHER_GROUPS}; then {name} one");
        }
        fingerprint.map(Some)
    }

    /// `P`, `X`: ask where the copies go, then [`App::run`].
    fn ask_target(&mut self, kind: RunKind) -> Effect {
        if self.target_group(kind).is_some() {
            self.input = Some(Input {
                purpose: Purpose::Target(kind),
                text: String::new(),
            });
        }
        Effect::None
    }

    /// Plan a run on the selected group (refused in `--read-only`).
    fn run(&mut self, kind: RunKind, to: Option<String>) -> Effect {
        let Some(fingerprint) = self.target_group(kind) else {
            return Effect::None;
        };
        if kind != RunKind::Export && self.needs_reason && self.reason.is_none() {
            self.pending_to = to;
            self.input = Some(Input {
                purpose: Purpose::Reason(kind),
                text: String::new(),
            });
            return Effect::None;
        }
        self.kind = kind;
        self.run_progress = None;
        // An export has no plan and no question: it changes nothing.
        self.action = Some(match kind {
            RunKind::Export => Action::Running,
            _ => Action::Planning,
        });
        Effect::PlanRun {
            kind,
            queue: self.queue_sel,
            fingerprint,
            query: self.query.clone(),
            class: self.class,
            reason: self.reason.take(),
            ids: match self.view {
                View::Messages => self.marked.iter().cloned().collect(),
                _ => Vec::new(),
            },
            to,
        }
    }

    /// A result of the worker: kept when it is still wanted (the same queue and filter).
    pub fn on_loaded(&mut self, l: Loaded) {
        match l {
            Loaded::Queue(i, info) => {
                if let Some(q) = self.queues.get_mut(i) {
                    // The depth as a number (`~240` on SQS is approximate, still a depth).
                    let depth = match &info {
                        Load::Ready(QueueInfo { depth: Some(d), .. }) => {
                            d.trim_start_matches('~').replace(',', "").parse().ok()
                        }
                        _ => None,
                    };
                    if let Some(d) = depth {
                        q.depths.push(d);
                        let over = q.depths.len().saturating_sub(DEPTH_SAMPLES);
                        q.depths.drain(..over);
                    }
                    q.info = info;
                }
            }
            Loaded::Groups {
                queue,
                query,
                class,
                groups,
            } => {
                let same = queue == self.queue_sel && query == self.query && class == self.class;
                if self.view != View::Queues && same {
                    self.groups = groups;
                }
            }
            Loaded::Messages {
                queue,
                fingerprint,
                messages,
            } => {
                let same = match &fingerprint {
                    None => self.whole_filter,
                    Some(_) => {
                        !self.whole_filter
                            && self.group().map(|g| &g.fingerprint) == Some(&fingerprint)
                    }
                };
                if self.view == View::Messages && queue == self.queue_sel && same {
                    self.messages = messages;
                }
            }
            Loaded::Progress { run: false, text } => {
                if self.groups == Load::Loading {
                    self.read_progress = Some(text);
                }
            }
            Loaded::Progress { run: true, text } => {
                if matches!(self.action, Some(Action::Planning | Action::Running)) {
                    self.run_progress = Some(text);
                }
            }
            Loaded::Action(a) => {
                // A plan that comes back after esc was pressed is not shown again.
                if self.action.is_some() {
                    self.action = Some(a);
                }
            }
        }
    }
}

fn list_len<T>(l: &Load<T>, len: impl Fn(&T) -> usize) -> usize {
    match l {
        Load::Ready(t) => len(t),
        _ => 0,
    }
}
