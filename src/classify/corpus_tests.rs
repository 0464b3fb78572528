//! The built-in rules against the labelled corpus in tests/data/errors (real error texts from
//! nine ecosystems; labelling rule in its README). Fails when an ecosystem is below 95 % right,
//! when any case lands in the opposite class, or when any ambiguous case is classified. The
//! accuracy table is printed and kept up to date in docs/classification.md, with the table of
//! built-in rules.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;

use super::{Classifier, Kind};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Corpus {
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    label: String,
    text: String,
    source: String,
    why: String,
    /// Whether the text was found at `source` (tests/data/errors/README.md, "Verification").
    #[allow(dead_code)]
    verified: Option<bool>,
}

#[derive(Default)]
struct Tally {
    cases: usize,
    right: usize,
    unclassified: usize,
    wrong_direction: usize,
    ambiguous_classified: usize,
}

const MIN_RIGHT: f64 = 0.95;

fn load() -> BTreeMap<String, Vec<Case>> {
    load_from("tests/data/errors")
}

/// The corpus files under `dir` (relative to the crate), by ecosystem.
fn load_from(dir: &str) -> BTreeMap<String, Vec<Case>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("a corpus directory") {
        let path = entry.expect("dir entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).expect("corpus file");
            let corpus: Corpus =
                toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            files.insert(name, corpus.case);
        }
    }
    files
}

fn table(tallies: &BTreeMap<String, Tally>) -> String {
    let mut t = String::from(
        "| ecosystem | cases | right | unclassified | wrong direction | ambiguous classified | right % |\n|---|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut total = Tally::default();
    let mut row = |name: &str, x: &Tally| {
        let _ = writeln!(
            t,
            "| {name} | {} | {} | {} | {} | {} | {:.1} |",
            x.cases,
            x.right,
            x.unclassified,
            x.wrong_direction,
            x.ambiguous_classified,
            100.0 * x.right as f64 / x.cases as f64
        );
    };
    for (name, x) in tallies {
        row(name, x);
        total.cases += x.cases;
        total.right += x.right;
        total.unclassified += x.unclassified;
        total.wrong_direction += x.wrong_direction;
        total.ambiguous_classified += x.ambiguous_classified;
    }
    row("**all**", &total);
    t
}

/// The built-in rules as a table: name, kind, reason, in order.
fn rules_table() -> String {
    let mut t = String::from("| # | rule | kind | reason |\n|---:|---|---|---|\n");
    for (i, r) in Classifier::builtin().rules().enumerate() {
        let kind = match r.kind {
            Kind::Unclassified => "ambiguous".to_string(),
            k => k.to_string(),
        };
        let reason = r.reason.as_deref().unwrap_or_default().replace('|', "\\|");
        let _ = writeln!(t, "| {} | `{}` | {kind} | {reason} |", i + 1, r.name);
    }
    t
}

/// Replace `text` between the `name` markers.
fn replace_between(doc: &str, name: &str, text: &str) -> String {
    let (begin, end) = (
        format!("<!-- {name}:begin -->"),
        format!("<!-- {name}:end -->"),
    );
    let (Some(b), Some(e)) = (doc.find(&begin), doc.find(&end)) else {
        panic!("docs/classification.md lacks the {begin} … {end} markers");
    };
    format!("{}{begin}\n{text}{}", &doc[..b], &doc[e..])
}

/// The tables between the markers in docs/classification.md must be current: with
/// `DLQCTL_UPDATE_DOCS=1` they are rewritten, otherwise a stale table fails the test (as the
/// generated CLI docs do).
fn update_docs(table: &str) {
    update_marked(&[("corpus-table", table), ("rules-table", &rules_table())]);
}

/// Rewrite (with `DLQCTL_UPDATE_DOCS=1`) or check the marked parts of docs/classification.md.
fn update_marked(parts: &[(&str, &str)]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/classification.md");
    let doc = std::fs::read_to_string(&path).expect("docs/classification.md");
    let new = parts.iter().fold(doc.clone(), |d, (name, text)| {
        replace_between(&d, name, text)
    });
    if new == doc {
        return;
    }
    if std::env::var_os("DLQCTL_UPDATE_DOCS").is_some() {
        std::fs::write(&path, new).expect("write docs/classification.md");
        eprintln!("updated the tables in docs/classification.md");
    } else {
        panic!(
            "docs/classification.md's tables are out of date: run `DLQCTL_UPDATE_DOCS=1 cargo test --lib corpus`"
        );
    }
}

/// The built-in rules against one corpus: the accuracy table and the misses.
fn measure(files: &BTreeMap<String, Vec<Case>>) -> (BTreeMap<String, Tally>, Vec<String>) {
    let c = Classifier::builtin();
    let mut tallies = BTreeMap::new();
    let mut misses = Vec::new();
    for (name, cases) in files {
        let t: &mut Tally = tallies.entry(name.clone()).or_default();
        for case in cases {
            assert!(
                case.source.starts_with("https://") && !case.why.is_empty(),
                "{name}: every case has a source and a why"
            );
            let want = match case.label.as_str() {
                "transient" => Kind::Transient,
                "permanent" => Kind::Permanent,
                "ambiguous" => Kind::Unclassified,
                other => panic!("{name}: unknown label {other}"),
            };
            let got = c.explain_text(&case.text);
            t.cases += 1;
            if got.kind == want {
                t.right += 1;
                continue;
            }
            match (want, got.kind) {
                (Kind::Unclassified, _) => t.ambiguous_classified += 1,
                (_, Kind::Unclassified) => t.unclassified += 1,
                _ => t.wrong_direction += 1,
            }
            let first = case.text.lines().next().unwrap_or_default();
            misses.push(format!(
                "{name}: labelled {}, got {}/{} (matched {:?}): {}",
                case.label,
                got.kind,
                got.rule,
                got.span.map(|s| s.text).unwrap_or_default(),
                first.chars().take(150).collect::<String>()
            ));
        }
    }
    (tallies, misses)
}

/// Fails on a wrong-direction case, a classified ambiguous one, or an ecosystem below 95 %.
fn hold(what: &str, tallies: &BTreeMap<String, Tally>) {
    for (name, t) in tallies {
        assert_eq!(
            t.wrong_direction, 0,
            "{what} {name}: cases in the opposite class"
        );
        assert_eq!(
            t.ambiguous_classified, 0,
            "{what} {name}: ambiguous cases must stay unclassified"
        );
        assert!(
            t.right as f64 >= MIN_RIGHT * t.cases as f64,
            "{what} {name}: {} of {} right, below {}%",
            t.right,
            t.cases,
            MIN_RIGHT * 100.0
        );
    }
}

#[test]
fn builtin_rules_against_the_labelled_corpus() {
    let files = load();
    assert_eq!(
        files.len(),
        12,
        "nine ecosystems, proxies/HTTP, cloud services and job systems in tests/data/errors"
    );
    let (tallies, misses) = measure(&files);
    let table = table(&tallies);
    eprintln!("{table}");
    for m in &misses {
        eprintln!("  {m}");
    }
    update_docs(&table);
    hold("corpus", &tallies);
}

/// The held-out corpus (tests/data/errors-heldout: collected by someone who did not write the
/// rules, never used to write them): only measured, with the same bar.
#[test]
fn builtin_rules_against_the_held_out_corpus() {
    held_out("tests/data/errors-heldout", "heldout-table", HELD_OUT);
}

/// The second held-out corpus (tests/data/errors-heldout-2, collected 2026-12-06 by someone who
/// saw neither the rules nor their output, nor the first held-out set's results): measured with
/// the same bar and rule set.
#[test]
fn builtin_rules_against_the_second_held_out_corpus() {
    held_out("tests/data/errors-heldout-2", "heldout2-table", HELD_OUT_2);
}

/// The third held-out corpus (tests/data/errors-heldout-3, collected 2026-12-06 by someone who
/// saw neither the rules nor their output, nor either earlier part's results; labels audited
/// before it was first measured).
#[test]
fn builtin_rules_against_the_third_held_out_corpus() {
    held_out("tests/data/errors-heldout-3", "heldout3-table", HELD_OUT_3);
}

/// What the rules reached on a held-out part: right at least, in the wrong direction at most,
/// ambiguous cases classified at most.
type Floor = (usize, usize, usize);

/// Issue 30's bar for the held-out corpus is 95 % right and no wrong direction; the rules do not
/// reach it yet (docs/classification.md, "The held-out measure"). What they reached is held here
/// so that a rule change cannot go back: raise these as the rules improve, never lower them.
/// (The second round of taxonomy rules, 2026-12-05, took it from 216 right, 7 wrong and 7
/// ambiguous classified to 240, 6 and 9; the third, the same day, to 254, 4 and 8; the fourth,
/// later that day, to 256, 4 and 6; the fifth to 260, 2 and 6; the sixth, that night, to 262, 1
/// and 5, and the seventh kept them.) On 2026-12-06 the labels were audited: two labellers,
/// each blind to the old labels and to the rules, relabelled all 274 texts, and the 8 labels
/// both gave alike and unlike the collector's were changed (tests/data/errors-heldout/README.md).
/// The same rules measure 263, 2 and 1 on the audited labels. 25 of its texts were later found
/// in the public corpus too (27 public cases, found again at their sources by rule rounds that
/// never saw this part; 8 were already there in the commit that added it): they are no longer
/// measured, and the floors start again from 238, 2 and 1 of the 249 left.
const HELD_OUT: Floor = (238, 2, 1);

/// What the 102 rules of the seventh round measured on the second held-out part the day it was
/// collected, on its audited labels (on the collector's labels: 149, 6 and 16): 151, 7 and 7.
/// Round 8b (job systems, 108 rules) took it to 152, 7 and 7.
const HELD_OUT_2: Floor = (152, 7, 7);

/// What the 102 rules of the seventh round measured on the third held-out part, on its audited
/// labels, before any rule was written after it was collected: 156, 10 and 7. Round 8b took it
/// to 157, 9 and 7.
const HELD_OUT_3: Floor = (157, 9, 7);

/// Measure the held-out part in `dir`, keep its table in docs/classification.md current, and
/// hold its floor. The misses are not printed: whoever runs this may write rules. A held-out
/// text that is also in the public corpus (the same once white space and numbers are set
/// aside) is not measured: rules were written against it.
fn held_out(dir: &str, marker: &str, floor: Floor) {
    let public: HashSet<String> = load()
        .values()
        .flatten()
        .map(|c| same_text(&c.text))
        .collect();
    let mut files = load_from(dir);
    assert!(files.len() >= 12, "{dir} has its twelve files");
    let mut left_out = 0;
    for cases in files.values_mut() {
        let before = cases.len();
        cases.retain(|c| !public.contains(&same_text(&c.text)));
        left_out += before - cases.len();
    }
    let (tallies, _misses) = measure(&files);
    let mut table = table(&tallies);
    if left_out > 0 {
        let _ = writeln!(
            table,
            "\nNot measured: {left_out} texts that are also in the public corpus (rules were written against them)."
        );
    }
    eprintln!("{dir}:\n{table}");
    update_marked(&[(marker, &table)]);
    let sum = |f: fn(&Tally) -> usize| tallies.values().map(f).sum::<usize>();
    let got = (
        sum(|t| t.right),
        sum(|t| t.wrong_direction),
        sum(|t| t.ambiguous_classified),
    );
    assert!(
        got.0 >= floor.0 && got.1 <= floor.1 && got.2 <= floor.2,
        "{dir}: (right, wrong direction, ambiguous classified) = {got:?}, worse than the {floor:?} reached before"
    );
}

/// A text as the held-out measure compares it with the public corpus: lower case, white space
/// collapsed, every run of digits one `0`.
fn same_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut words = text.split_whitespace().peekable();
    while let Some(w) = words.next() {
        let mut digits = false;
        for ch in w.chars() {
            if ch.is_ascii_digit() {
                if !digits {
                    out.push('0');
                }
                digits = true;
            } else {
                digits = false;
                out.extend(ch.to_lowercase());
            }
        }
        if words.peek().is_some() {
            out.push(' ');
        }
    }
    out
}

/// Fingerprints over the real error texts: no template keeps a digit (every number, id,
/// time, address or path has a placeholder), and the same failure with other values (each
/// digit 1-9 changed, zeros kept so that `0x…` stays hex) has the same fingerprint.
#[test]
fn fingerprints_of_real_errors_ignore_their_values() {
    use crate::classify::fingerprint::{id_of, template};
    let mut texts = 0;
    for (file, cases) in load() {
        for c in cases {
            // The first line is what a fingerprint reads.
            let t = template(None, Some(&c.text));
            assert!(
                !t.bytes().any(|b| b.is_ascii_digit()),
                "{file}: a digit survived in the template of `{}`: {t}",
                c.text
            );
            let shifted: String = c
                .text
                .chars()
                .map(|ch| match ch.to_digit(10) {
                    Some(d) if d > 0 => char::from_digit(d % 9 + 1, 10).unwrap(),
                    _ => ch,
                })
                .collect();
            assert_eq!(
                id_of(&t),
                id_of(&template(None, Some(&shifted))),
                "{file}: `{}` and `{shifted}` are one failure",
                c.text
            );
            texts += 1;
        }
    }
    assert!(texts >= 400, "{texts}");
}

/// The same failure with numbers of other lengths (`cust-7` and `cust-7777`, `order 8` and
/// `order 81234`) has the same fingerprint. Digits that give a text its shape are left alone:
/// timestamps, times, addresses, versions and paths (next to `.`, `:`, `/`, `\\` or a
/// digit-joining `-`), hex (`0x…`, all-hex tokens such as UUIDs and object ids).
#[test]
fn fingerprints_of_real_errors_ignore_the_length_of_their_numbers() {
    use crate::classify::fingerprint::{id_of, template};
    let mut changed = 0;
    for (file, cases) in load() {
        for c in cases {
            let Some(first) = c.text.lines().map(str::trim).find(|l| !l.is_empty()) else {
                continue;
            };
            let other = other_lengths(first);
            if other == first {
                continue;
            }
            changed += 1;
            let (a, b) = (template(None, Some(first)), template(None, Some(&other)));
            assert_eq!(
                id_of(&a),
                id_of(&b),
                "{file}: `{first}` and `{other}` are one failure ({a} / {b})"
            );
        }
    }
    assert!(changed >= 100, "{changed}");
}

/// `text` with each number made longer (one or two digits) or shorter (three or more): a
/// number on its own (`order 8812`) or ending an id after its letters (`cust-7`, `JOB42`).
/// Digits that give a text its shape are left alone: those next to `.`, `:`, `/`, `\\` or `,`
/// (times, addresses, versions, paths), joined to other digits by `-` (dates), in codes
/// (`40P01`, `0x…`) and in all-hex tokens (UUIDs, object ids).
fn other_lengths(text: &str) -> String {
    let re = regex::Regex::new(r"[A-Za-z0-9_-]+").unwrap();
    let id = regex::Regex::new(r"^([A-Za-z]+[-_]?)([0-9]+)$").unwrap();
    let number = regex::Regex::new(r"^[1-9][0-9]*$").unwrap();
    let shaped = |c: Option<char>| matches!(c, Some('.' | ':' | '/' | '\\' | ',' | '-' | '+'));
    let mut out = String::new();
    let mut last = 0;
    for m in re.find_iter(text) {
        out.push_str(&text[last..m.start()]);
        last = m.end();
        let token = m.as_str();
        let before = text[..m.start()].chars().next_back();
        let after = text[m.end()..].chars().next();
        let free = !shaped(before) && !shaped(after);
        let longer = |run: &str| {
            let n = if run.len() >= 3 { 1 } else { run.len() + 3 };
            "7".repeat(n)
        };
        match (number.is_match(token), id.captures(token)) {
            (true, _) if free => out.push_str(&longer(token)),
            (_, Some(c)) if free && !c[2].starts_with('0') => {
                out.push_str(&c[1]);
                out.push_str(&longer(&c[2]));
            }
            _ => out.push_str(token),
        }
    }
    out.push_str(&text[last..]);
    out
}
