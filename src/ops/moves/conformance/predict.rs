//! A dry run predicts its run: the same engine, a session that settles nothing and a sink that
//! accepts everything. For any mix of filters, `--max`, batch size, loop guard, transform and
//! settling by position, the dry run's counts are the real run's, failures included where the
//! target says before sending what it would refuse (QueueSink::check: SQS's binary bodies, a
//! table without a column a copy needs). What only the server decides (a constraint, an
//! unroutable copy) a dry run cannot know.

use proptest::prelude::*;

use super::*;

#[derive(Clone, Debug)]
struct Case {
    mode: Mode,
    n: usize,
    batch_size: usize,
    max: Option<u64>,
    /// 0: none, 1: `--class transient`, 2: a body regex, 3: a set of ids.
    filter: u8,
    by_position: bool,
    /// The loop guard (redrive and replay only); `--park` is always given with it.
    max_redrives: Option<u32>,
    /// A transform that refuses every fifth order (redrive and replay only).
    transform: bool,
    /// A purge's archive (`--archive`); false: `--no-archive`.
    archive: bool,
    /// The target refuses the poisoned bodies, and says so before sending.
    refuse: bool,
}

fn cases() -> impl Strategy<Value = Case> {
    (
        prop_oneof![Just(Mode::Redrive), Just(Mode::Replay), Just(Mode::Purge)],
        0usize..90,
        1usize..25,
        proptest::option::of(1u64..100),
        0u8..4,
        any::<bool>(),
        proptest::option::of(1u32..4),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(
                mode,
                n,
                batch_size,
                max,
                filter,
                by_position,
                max_redrives,
                transform,
                archive,
                refuse,
            )| {
                let copies = mode != Mode::Purge;
                Case {
                    mode,
                    n,
                    batch_size,
                    max,
                    filter,
                    // A purge filtered on a source that settles by position is refused.
                    by_position: by_position && !(mode == Mode::Purge && filter != 0),
                    max_redrives: max_redrives.filter(|_| copies),
                    transform: transform && copies,
                    archive,
                    refuse,
                }
            },
        )
}

impl Case {
    fn pair(&self) -> Pair {
        let pair = Pair::seeded(self.n);
        let q = pair.queues.queue(&pair.dlq);
        let mut q = q.lock().unwrap();
        q.by_position = self.by_position;
        for (i, m) in q.messages.iter_mut().enumerate() {
            m.partition = Some((i % 3) as i32);
            for _ in 0..(i % 4) {
                m.count_redrive();
            }
        }
        drop(q);
        if self.refuse {
            pair.queues
                .queue(&pair.main)
                .lock()
                .unwrap()
                .refuse_before_send_with = Some("poison".into());
        }
        pair
    }

    fn request(&self, pair: &Pair, dry_run: bool) -> MoveRequest {
        let mut req = pair.request(self.mode);
        req.dry_run = dry_run;
        req.batch_size = self.batch_size;
        req.max = self.max;
        match self.filter {
            1 => req.filter.class = vec!["transient".into()],
            2 => req.filter.body = Some(Regex::new(r#""order": \d*[13579]\b"#).unwrap()),
            3 => req.filter.ids = Some((0..self.n).step_by(3).map(|i| format!("m{i}")).collect()),
            _ => {}
        }
        req.max_redrives = self.max_redrives;
        if self.max_redrives.is_some() {
            let park = Address::parse("postgres://app@db.internal/orders?table=parked").unwrap();
            req.park = Some((park, crate::backend::OpenOptions::default()));
        }
        if self.transform {
            req.transform = Some(
                crate::query::Transform::compile(
                    r#"if (.json.order % 5 == 0) then .id = "new" else .json.fixed = true end"#,
                )
                .unwrap(),
            );
        }
        if self.mode == Mode::Purge && !self.archive {
            req.to = None;
        }
        req
    }
}

/// What a dry run predicts of a run, from its JSON summary.
fn prediction(s: &serde_json::Value) -> serde_json::Value {
    let keys = [
        "examined",
        "matched",
        "moved",
        "skipped",
        "failed",
        "held",
        "parked",
        "committed_past",
        "destinations",
    ];
    keys.iter().map(|k| (k.to_string(), s[k].clone())).collect()
}

fn dry_then_real(case: &Case) -> (serde_json::Value, serde_json::Value) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let pair = case.pair();
        let (ctx, out) = pair.ctx(OutputFormat::Json);
        run(&ctx, case.request(&pair, true)).await.unwrap();
        let dry = summary(&out);
        assert_eq!(
            pair.ids(&pair.dlq),
            all(case.n),
            "a dry run changes nothing"
        );
        assert!(pair.ids(&pair.main).is_empty(), "a dry run sends nothing");
        let (ctx, out) = pair.ctx(OutputFormat::Json);
        run(&ctx, case.request(&pair, false)).await.unwrap();
        (dry, summary(&out))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn a_dry_run_predicts_its_run(case in cases()) {
        let (dry, real) = dry_then_real(&case);
        prop_assert_eq!(prediction(&dry), prediction(&real), "dry {} real {}", dry, real);
        let word = match case.mode {
            Mode::Redrive => "would_move",
            Mode::Replay => "would_copy",
            Mode::Purge => "would_remove",
        };
        prop_assert_eq!(&dry[word], &real["moved"]);
    }
}
