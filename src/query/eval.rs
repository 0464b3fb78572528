//! Running a compiled jq program under a budget: a time limit per message, and Ctrl-C.
//!
//! jaq evaluates lazily: a program's outputs come from an iterator, but a single step of that
//! iterator can run for ever (`last(range(1e18))` folds over 10^18 numbers before it yields
//! anything). jaq has no hook to stop it, but every step of an evaluation clones the filter
//! context, which holds the program's global data ([`DataT::Data`]); here that data is a
//! [`Metered`] handle whose `clone` counts the steps and, every [`CHECK_EVERY`] of them, looks
//! at the clock and the interrupt flag. When the budget is spent or Ctrl-C was pressed, it
//! unwinds out of the evaluation with [`std::panic::resume_unwind`] (which, unlike `panic!`,
//! prints nothing), and [`run`] catches exactly that payload. This is how salsa cancels a
//! query. jaq's own `range`, the one generator that loops without cloning the context, is
//! replaced by one that counts its steps.
//!
//! Unwinding must be available: a build with `panic = "abort"` would turn a budget into a
//! crash, so it is refused at compile time.

#[cfg(panic = "abort")]
compile_error!(
    "--where and --transform stop a runaway jq program by unwinding: build with panic = \"unwind\""
);

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::time::{Duration, Instant};

use jaq_core::data::HasLut;
use jaq_core::native::{Fun, v};
use jaq_core::{DataT, Exn, ValX, ValXs, Vars};
use jaq_json::Val;

use crate::interrupt::Interrupt;

/// The budget of one evaluation, unless `DLQCTL_JQ_BUDGET_MS` says otherwise.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(1);

/// Steps between two looks at the clock and the interrupt flag (a step is a few dozen
/// nanoseconds: the clock is read a few thousand times a second at most).
const CHECK_EVERY: u32 = 1024;

/// jaq's data type for our programs: values are JSON, and the global data is a [`Metered`]
/// handle.
pub struct Budgeted;

impl DataT for Budgeted {
    type V<'a> = Val;
    type Data<'a> = Metered<'a>;
}

pub type Compiled = jaq_core::Filter<Budgeted>;

/// The lookup table of the program and the meter of this evaluation. Cloning it is a step.
pub struct Metered<'a> {
    lut: &'a jaq_core::Lut<Budgeted>,
    meter: &'a Meter<'a>,
}

impl<'a> Clone for Metered<'a> {
    fn clone(&self) -> Self {
        self.meter.step();
        Metered {
            lut: self.lut,
            meter: self.meter,
        }
    }
}

impl<'a> HasLut<'a, Budgeted> for Metered<'a> {
    fn lut(&self) -> &'a jaq_core::Lut<Budgeted> {
        self.lut
    }
}

/// Why an evaluation was stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// It ran past its time budget.
    Budget,
    /// Ctrl-C.
    Interrupted,
}

/// Counts the steps of one evaluation and stops it when the budget is spent or Ctrl-C is set.
pub struct Meter<'a> {
    steps: Cell<u32>,
    deadline: Instant,
    interrupt: Option<&'a Interrupt>,
    stopped: Cell<bool>,
}

impl Meter<'_> {
    fn step(&self) {
        let n = self.steps.get().wrapping_add(1);
        self.steps.set(n);
        if !n.is_multiple_of(CHECK_EVERY) || self.stopped.get() {
            return;
        }
        let stop = if self.interrupt.is_some_and(Interrupt::is_set) {
            Stop::Interrupted
        } else if Instant::now() >= self.deadline {
            Stop::Budget
        } else {
            return;
        };
        // Once: whatever runs while the stack unwinds must not throw again.
        self.stopped.set(true);
        resume_unwind(Box::new(stop));
    }
}

/// How long an evaluation may run, and the flag that stops it at once.
#[derive(Clone, Default)]
pub struct Limits {
    pub budget: Option<Duration>,
    pub interrupt: Option<Interrupt>,
}

impl Limits {
    pub fn budget(&self) -> Duration {
        self.budget.unwrap_or_else(default_budget)
    }
}

static BUDGET: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();

/// Set the budget every program gets unless its own says otherwise (`DLQCTL_JQ_BUDGET_MS`,
/// read once by the settings).
pub fn set_default_budget(d: Duration) {
    let _ = BUDGET.set(d);
}

fn default_budget() -> Duration {
    BUDGET.get().copied().unwrap_or(DEFAULT_BUDGET)
}

/// Run `filter` on `input` and hand its outputs (an error as its one-line text) to `take`,
/// which pulls as many as it needs; the whole evaluation, `take` included, is under `limits`.
pub fn run<T>(
    filter: &Compiled,
    input: Val,
    limits: &Limits,
    take: impl FnOnce(&mut dyn Iterator<Item = Result<Val, String>>) -> T,
) -> Result<T, Stop> {
    let meter = Meter {
        steps: Cell::new(0),
        deadline: Instant::now() + limits.budget(),
        interrupt: limits.interrupt.as_ref(),
        stopped: Cell::new(false),
    };
    let data = Metered {
        lut: &filter.lut,
        meter: &meter,
    };
    let ctx = jaq_core::Ctx::<Budgeted>::new(data, Vars::new([]));
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut outputs = filter.id.run((ctx, input)).map(one_result);
        take(&mut outputs)
    }));
    match outcome {
        Ok(t) => Ok(t),
        Err(payload) => match payload.downcast::<Stop>() {
            Ok(stop) => Err(*stop),
            Err(other) => resume_unwind(other),
        },
    }
}

/// An output as a value or an error's text; `halt` (which would end dlqctl) is an error.
fn one_result(x: ValX<'_, Val>) -> Result<Val, String> {
    x.map_err(|e| match e.get_err() {
        Ok(e) => e.to_string(),
        Err(e) => match e.get_halt() {
            Ok(code) => format!("halt({code}) stops jq programs, not dlqctl"),
            Err(_) => "an internal jq exception".into(),
        },
    })
}

/// The natives of jaq's core, standard library and JSON, with `range` counting its steps.
pub fn funs() -> impl Iterator<Item = Fun<Budgeted>> {
    jaq_core::funs::<Budgeted>()
        .filter(|(name, args, _)| !(*name == "range" && args.len() == 3))
        .chain(std::iter::once(jaq_core::native::run::<Budgeted>((
            "range",
            v(3),
            |mut cv| {
                let by = cv.0.pop_var();
                let to = cv.0.pop_var();
                let from = cv.0.pop_var();
                let data = cv.0.data().clone();
                Box::new(range(Ok(from), to, by).inspect(move |_| {
                    data.meter.step();
                }))
            },
        ))))
        .chain(jaq_std::funs::<Budgeted>())
        .chain(jaq_json::funs::<Budgeted>())
}

/// jaq's `range($from; $to; $by)` (jaq-core's `funs.rs`, MIT), one value per step.
fn range<'a>(mut from: ValX<'a, Val>, to: Val, by: Val) -> ValXs<'a, Val> {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let cmp = by.partial_cmp(&Val::from(0isize)).unwrap_or(Equal);
    Box::new(std::iter::from_fn(move || match from.clone() {
        Ok(x) => match cmp {
            Greater => x < to,
            Less => x > to,
            Equal => x != to,
        }
        .then(|| std::mem::replace(&mut from, (x + by.clone()).map_err(Exn::from))),
        e @ Err(_) => {
            from = Ok(to.clone());
            Some(e)
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(code: &str) -> crate::query::Query {
        crate::query::Query::compile("--transform", code).unwrap()
    }

    fn first(code: &str, limits: &Limits) -> Result<Option<Result<Val, String>>, Stop> {
        run(&compile(code).filter, Val::Null, limits, |out| out.next())
    }

    #[test]
    fn a_runaway_program_stops_at_its_budget() {
        let limits = Limits {
            budget: Some(Duration::from_millis(50)),
            interrupt: None,
        };
        for code in [
            "last(range(1e18)) > 0",
            "[limit(1e12; repeat(1))] | length",
            "def f: f; f",
            "def f: . + 1 | f; 0 | f",
            "until(false; .)",
            "reduce range(1e18) as $x (0; . + $x)",
            "[range(1e18)] | length",
        ] {
            let started = Instant::now();
            assert_eq!(first(code, &limits), Err(Stop::Budget), "{code}");
            assert!(started.elapsed() < Duration::from_secs(5), "{code}");
        }
        // Within the budget, the result.
        assert_eq!(
            first("last(range(1000))", &limits)
                .unwrap()
                .unwrap()
                .unwrap(),
            Val::from(999isize)
        );
    }

    #[test]
    fn ctrl_c_stops_a_program_at_once() {
        // Set before the run: the meter sees it within its first thousand steps.
        let interrupt = Interrupt::default();
        interrupt.trigger();
        let limits = Limits {
            budget: Some(Duration::from_secs(600)),
            interrupt: Some(interrupt),
        };
        let started = Instant::now();
        assert_eq!(first("last(range(1e18))", &limits), Err(Stop::Interrupted));
        assert_eq!(first("def f: f; f", &limits), Err(Stop::Interrupted));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn halt_is_an_error_not_an_exit() {
        let e = first("halt", &Limits::default())
            .unwrap()
            .unwrap()
            .unwrap_err();
        assert!(e.contains("halt"), "{e}");
    }

    /// A panic that is not a budget's is not swallowed.
    #[test]
    fn other_panics_pass_through() {
        let r = catch_unwind(|| {
            run(
                &compile(".").filter,
                Val::Null,
                &Limits::default(),
                |_| -> () { panic!("a real bug") },
            )
        });
        assert!(r.is_err());
    }
}
