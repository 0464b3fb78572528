//! The UI's vocabulary: keys, what is loaded, what the worker is asked for and sends back
//! (the state machine that uses them is app.rs).

/// A key, as the state machine sees it (crossterm's events are mapped in `mod.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Enter,
    Esc,
    Up,
    Down,
    Backspace,
    PageDown,
    PageUp,
    /// Ctrl-C: quits from anywhere (raw mode turns it into a key, not a signal).
    Interrupt,
}

/// Something that arrives later: nothing yet, on its way, here, or an error (shown, never fatal).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Load<T> {
    #[default]
    Idle,
    Loading,
    Ready(T),
    Failed(String),
}

/// One row of the queues view.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueRow {
    /// The name in dlqctl.toml, else the address as shown.
    pub label: String,
    pub info: Load<QueueInfo>,
    /// The depth read at each refresh, oldest first (the last [`DEPTH_SAMPLES`]).
    pub depths: Vec<u64>,
    /// `[queues.NAME.limits]` are set: a queue that cannot be read fails its check.
    pub limited: bool,
}

/// How many refreshes' depths the queues view keeps for its sparkline.
pub const DEPTH_SAMPLES: usize = 60;

/// What `inspect` says of a queue, as the row shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueInfo {
    pub backend: String,
    /// Messages (the backend's own count), as a person reads it.
    pub depth: Option<String>,
    /// Age of the oldest message read.
    pub oldest: Option<String>,
    /// Counts per kind of the messages read: `3 trans · 1 perm · 0 uncl`.
    pub classes: Option<String>,
    /// Why the messages were not read (SQS: a read counts as a receive).
    pub note: Option<String>,
    /// What `dlqctl check` says of the queue held to its `[queues.NAME.limits]` (None: it has
    /// none).
    pub check: Option<CheckStatus>,
    /// Messages dead-lettered per hour, from the census read for the classes (None: none
    /// read).
    pub arrivals: Option<super::arrivals::ArrivalLine>,
}

/// A queue held to its limits by `check`'s own code, as the queues view shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckStatus {
    /// The column: `OK`, `FAIL depth 12>10` (`+1`: one more failed), `WARN age ?`, `needs scan`.
    pub short: String,
    /// Whether a limit failed.
    pub failed: bool,
    /// A line per limit as `check` reports it, for the selected queue's pane.
    pub lines: Vec<String>,
}

/// One failure group (`classify --by fingerprint`).
#[derive(Clone, Debug, PartialEq)]
pub struct GroupItem {
    /// None: the row of the groups past the first 10,000, counted together.
    pub fingerprint: Option<String>,
    /// `kind/rule`.
    pub class: String,
    pub count: u64,
    pub first_seen: String,
    pub last_seen: String,
    /// The normalised error, else a sample error.
    pub error: String,
}

/// The groups of one queue under one `--where`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupList {
    pub items: Vec<GroupItem>,
    /// Messages that passed the filter.
    pub total: u64,
    /// Whether the whole queue was read.
    pub complete: bool,
}

/// One message of a group: the list's columns and the detail pane's text.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageItem {
    pub id: String,
    pub age: String,
    pub redrives: u32,
    pub error: String,
    /// The detail pane: what `peek --explain` shows of it (facts, error, classification,
    /// headers, body pretty-printed).
    pub detail: String,
    /// `v`: the body exactly as stored, escaped ([`super::raw::raw_body`]).
    pub raw: String,
}

/// A run (redrive, replay, purge) on the selected group, step by step.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Opening the queue, resolving the target, counting.
    Planning,
    /// The plan, and the question. `count`: how many will move, where known; above
    /// [`TYPE_COUNT_ABOVE`] the answer is that number typed, below it `y`.
    Confirm {
        plan: Vec<(String, String)>,
        count: Option<u64>,
        typed: String,
    },
    Running,
    /// The summary as the CLI prints it, and whether everything moved.
    Done {
        summary: String,
        ok: bool,
    },
    Failed(String),
}

/// What an action on a group does: the commands of the same names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunKind {
    /// `R`: back to each message's source.
    Redrive,
    /// `P`: copies to a target typed in; nothing removed.
    Replay,
    /// `X`: removed, archived first to a target typed in (`none`: no copy kept).
    Purge,
    /// `E`: written to a file typed in, as `export -o FILE` does; nothing removed.
    Export,
}

impl RunKind {
    pub fn name(self) -> &'static str {
        match self {
            RunKind::Redrive => "redrive",
            RunKind::Replay => "replay",
            RunKind::Purge => "purge",
            RunKind::Export => "export",
        }
    }
}

/// What a line typed at the bottom is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// `/`: the groups' `--where`.
    Where,
    /// The target of a replay, or the archive of a purge.
    Target(RunKind),
    /// Why: `[audit] require_reason` is set and `dlqctl ui` was not given `--reason`.
    Reason(RunKind),
    /// The same, for `e` (an edit of the selected message).
    EditReason,
}

/// A line being typed at the bottom of the screen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    pub purpose: Purpose,
    pub text: String,
}

impl Input {
    /// What the line says before the text.
    pub fn prompt(&self) -> &'static str {
        match self.purpose {
            Purpose::Where => "where",
            Purpose::Target(RunKind::Purge) => "archive to (a file or queue; none: no copy)",
            Purpose::Target(RunKind::Export) => "export to (a file, JSON Lines)",
            Purpose::Target(_) => "replay to (a queue, table, topic or file)",
            Purpose::Reason(_) | Purpose::EditReason => "reason (the audit trail requires one)",
        }
    }
}

/// What the row of the groups past the first 10,000 (`classify`'s "(other groups)") says when
/// opened or acted on: it has no fingerprint of its own.
pub(super) const OTHER_GROUPS: &str =
    "the groups past the first 10,000 are counted together: narrow them with / first";

/// What `c` cycles through in the groups view (after them: every class again), as `--class`
/// takes them (a rule of kind `ambiguous` counts as unclassified).
pub const CLASSES: [&str; 3] = ["transient", "permanent", "unclassified"];

/// Above this many messages a run is confirmed by typing the count, not `y`.
pub const TYPE_COUNT_ABOVE: u64 = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum View {
    Queues,
    Groups,
    Messages,
}

/// Work for the worker. Queue indices are into [`App::queues`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    None,
    Quit,
    /// Inspect every queue again.
    LoadQueues,
    LoadGroups {
        queue: usize,
        query: Option<String>,
        /// `c`: the class the groups view shows (`--class`), None: all.
        class: Option<&'static str>,
    },
    LoadMessages {
        queue: usize,
        /// None: every group's (the messages view of the filter, `m`).
        fingerprint: Option<String>,
        query: Option<String>,
        class: Option<&'static str>,
    },
    /// Prepare a run on a group (its fingerprint under the view's filter), or on the filter
    /// alone (no fingerprint: the messages view of the filter), and show its plan.
    PlanRun {
        kind: RunKind,
        queue: usize,
        fingerprint: Option<String>,
        query: Option<String>,
        class: Option<&'static str>,
        /// `--reason`, typed in when the audit requires one (None: `dlqctl ui --reason`'s).
        reason: Option<String>,
        /// The marked messages (none: the whole group), by id as `--id` takes them.
        ids: Vec<String>,
        /// Replay: the target; purge: the archive (None: none).
        to: Option<String>,
    },
    /// The answer to the plan's question: start (true) or drop it.
    Answer(bool),
    /// `e`: `dlqctl edit QUEUE --id ID`, on the terminal (the UI steps aside meanwhile).
    Edit {
        queue: usize,
        id: String,
        /// `--reason`, typed in when the audit requires one (None: `dlqctl ui --reason`'s).
        reason: Option<String>,
    },
    /// Ctrl-C during a run: stop it after its current batch (as in the CLI), then quit.
    Stop,
}

/// What the worker sends back.
#[derive(Debug)]
pub enum Loaded {
    Queue(usize, Load<QueueInfo>),
    Groups {
        queue: usize,
        query: Option<String>,
        class: Option<&'static str>,
        groups: Load<GroupList>,
    },
    Messages {
        queue: usize,
        fingerprint: Option<String>,
        messages: Load<Vec<MessageItem>>,
    },
    Action(Action),
    /// How far a groups read (`run` false) or a run is, as its progress bar would say.
    Progress {
        run: bool,
        text: String,
    },
}
