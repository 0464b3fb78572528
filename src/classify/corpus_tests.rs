//! The built-in rules against the labelled corpus in tests/data/errors (real error texts from
//! nine ecosystems; labelling rule in its README). Fails when an ecosystem is below 95 % right,
//! when any case lands in the opposite class, or when any ambiguous case is classified. The
//! accuracy table is printed and kept up to date in docs/classification.md, with the table of
//! built-in rules.

use std::collections::BTreeMap;
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
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/errors");
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("tests/data/errors") {
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
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/classification.md");
    let doc = std::fs::read_to_string(&path).expect("docs/classification.md");
    let new = replace_between(&doc, "corpus-table", table);
    let new = replace_between(&new, "rules-table", &rules_table());
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

#[test]
fn builtin_rules_against_the_labelled_corpus() {
    let c = Classifier::builtin();
    let files = load();
    assert_eq!(files.len(), 9, "nine ecosystems in tests/data/errors");
    let mut tallies = BTreeMap::new();
    let mut misses = Vec::new();
    for (name, cases) in &files {
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
    let table = table(&tallies);
    eprintln!("{table}");
    for m in &misses {
        eprintln!("  {m}");
    }
    update_docs(&table);
    for (name, t) in &tallies {
        assert_eq!(t.wrong_direction, 0, "{name}: cases in the opposite class");
        assert_eq!(
            t.ambiguous_classified, 0,
            "{name}: ambiguous cases must stay unclassified"
        );
        assert!(
            t.right as f64 >= MIN_RIGHT * t.cases as f64,
            "{name}: {} of {} right, below {}%",
            t.right,
            t.cases,
            MIN_RIGHT * 100.0
        );
    }
}

/// Fingerprints over the 432 real error texts: no template keeps a digit (every number, id,
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
