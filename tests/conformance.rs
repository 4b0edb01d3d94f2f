//! The ONNX backend node tests (onnx 1.23.2, 1,884 cases) under `[Cpu]` and
//! `[OpenVino(CPU, FP32), Cpu]`, checked against the expected outcomes recorded in
//! `tests/conformance/expected.tsv` (case, provider list, status, reason). Any regression and
//! any unexpected pass fails, so the file stays true.
//!
//! Data: `scripts/gen-node-tests` (run by `scripts/test`) writes the cases to
//! `tests/data/node` (or `$VINORT_NODE_TESTS`). Regenerate the expectations and
//! `docs/conformance.md` after real progress with `scripts/conformance --update`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use vinort_tools::testcase::{CaseOutcome, Status, TestCase, Tolerance, discover, run_case_with};

use common::{LISTS, first_line, providers, status_word};

fn node_dir() -> PathBuf {
    std::env::var_os("VINORT_NODE_TESTS").map(PathBuf::from).unwrap_or_else(|| common::repo().join("tests/data/node"))
}

fn expected_file() -> PathBuf {
    common::repo().join("tests/conformance/expected.tsv")
}

/// `(case, list) -> (status, reason)` for every non-pass.
fn read_expected() -> BTreeMap<(String, String), (String, String)> {
    common::read_expected(&expected_file())
}

/// `case -> [(anchor column, passed)]` from `tests/conformance/anchors.tsv` (scripts/anchors.py).
fn read_anchors() -> (Vec<String>, BTreeMap<String, Vec<bool>>) {
    let text = std::fs::read_to_string(common::repo().join("tests/conformance/anchors.tsv")).expect("anchors.tsv");
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().expect("header").split('\t').skip(1).map(str::to_owned).collect();
    let rows = lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].to_owned(), f[1..].iter().map(|v| *v == "pass").collect())
        })
        .collect();
    (header, rows)
}

/// `case -> reason` for the cases an anchor passes and `[OpenVino, Cpu]` does not.
fn read_anchor_exceptions() -> BTreeMap<String, String> {
    let text =
        std::fs::read_to_string(common::repo().join("tests/conformance/anchor_exceptions.tsv")).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (case, why) = l.split_once('\t').unwrap_or_else(|| panic!("malformed anchor exception: {l}"));
            assert!(!why.trim().is_empty(), "anchor exception without a reason: {case}");
            (case.to_owned(), why.to_owned())
        })
        .collect()
}

fn run_list(list: &str, cases: &[TestCase]) -> Vec<CaseOutcome> {
    cases.iter().map(|c| run_case_with(c, || providers(list), Tolerance::default(), common::configure)).collect()
}

fn cases() -> Vec<TestCase> {
    let dir = node_dir();
    assert!(
        dir.join(".complete").exists(),
        "ONNX node test data missing at {}: run scripts/gen-node-tests (scripts/test does)",
        dir.display()
    );
    let cases = discover(&[dir]).expect("test cases");
    assert_eq!(cases.len(), 1884, "onnx 1.23.2 has 1,884 node cases");
    cases
}

fn check_list(list: &str) {
    let cases = cases();
    let outcomes = run_list(list, &cases);
    let expected = read_expected();
    let (mut regressions, unexpected_passes) = common::check_expected(&expected, list, &outcomes);
    let passed = outcomes.iter().filter(|o| matches!(o.status, Status::Pass)).count();
    println!("{}", common::summary("", list, &outcomes));
    let target = if list == "cpu" { 1600 } else { 1650 };
    assert!(passed >= target, "[{list}] {passed} passed, below the target of {target}");
    if list != "cpu" {
        // Every case an anchor runtime passes must pass here, or be listed with its reason.
        let (_, anchors) = read_anchors();
        let exceptions = read_anchor_exceptions();
        for o in &outcomes {
            let anchor_passes = anchors.get(&o.name).is_some_and(|r| r.iter().any(|p| *p));
            let ok = matches!(o.status, Status::Pass);
            match (anchor_passes && !ok, exceptions.contains_key(&o.name)) {
                (true, false) => regressions
                    .push(format!("{} [{list}]: an anchor passes it and it is not in anchor_exceptions.tsv", o.name)),
                (false, true) => regressions
                    .push(format!("{} [{list}]: listed in anchor_exceptions.tsv but no longer an exception", o.name)),
                _ => {}
            }
        }
    }
    common::assert_no_drift(
        list,
        &regressions,
        &unexpected_passes,
        "update tests/conformance/expected.tsv with scripts/conformance --update",
    );
}

#[test]
fn node_tests_on_cpu() {
    if std::env::var_os("VINORT_UPDATE_EXPECTED").is_some() {
        return; // `update` below rewrites the expectations instead.
    }
    check_list("cpu");
}

#[test]
fn node_tests_on_openvino_then_cpu() {
    if std::env::var_os("VINORT_UPDATE_EXPECTED").is_some() {
        return;
    }
    check_list("openvino-fp32,cpu");
}

/// With `VINORT_UPDATE_EXPECTED=1`: runs both lists, rewrites `expected.tsv` and
/// `docs/conformance.md`. Otherwise does nothing.
#[test]
fn update() {
    if std::env::var_os("VINORT_UPDATE_EXPECTED").is_none() {
        return;
    }
    let cases = cases();
    let results: Vec<(&str, Vec<CaseOutcome>)> = LISTS.iter().map(|l| (*l, run_list(l, &cases))).collect();
    let mut tsv = String::from(
        "# Expected non-pass outcomes of the ONNX node tests (onnx 1.23.2). A case/list missing here must pass.\n\
         # Regenerate with scripts/conformance --update after real progress.\n# case\tproviders\tstatus\treason\n",
    );
    // A reason someone extended with an explanation ("... (the reference was computed in
    // complex64)") keeps it while the measured message is unchanged.
    let before = read_expected();
    for (list, outs) in &results {
        for o in outs {
            let (word, msg) = status_word(&o.status);
            if word != "pass" {
                let mut reason = first_line(&msg).replace('\t', " ");
                // Also a failure measured larger before (on another CPU kind): the bound stays.
                if let Some((w, old)) = before.get(&(o.name.clone(), (*list).to_owned()))
                    && w == word
                    && (old.starts_with(&reason) || common::larger_failure(old, &reason))
                {
                    reason = old.clone();
                }
                tsv.push_str(&format!("{}\t{list}\t{word}\t{reason}\n", o.name));
            }
        }
    }
    std::fs::write(expected_file(), tsv).expect("write expected.tsv");
    // The contrib-op section belongs to scripts/suites --update: carried over as it is.
    let path = common::repo().join("docs/conformance.md");
    let mut doc = conformance_doc(&cases, &results);
    if let Some(section) = std::fs::read_to_string(&path).ok().as_deref().and_then(common::contrib_section) {
        doc = common::with_section(&doc, section);
    }
    std::fs::write(path, doc).expect("write docs");
}

/// The per-op table: op types of each case's model (main graph), pass counts per list, and
/// which providers ran the op's nodes under `[OpenVino, Cpu]`.
fn conformance_doc(cases: &[TestCase], results: &[(&str, Vec<CaseOutcome>)]) -> String {
    let ops_of = |c: &TestCase| -> BTreeSet<String> {
        vinort::Model::load(c.dir.join("model.onnx"))
            .map(|m| m.graph.node_indices().map(|n| m.graph.node(n).qualified_op()).collect())
            .unwrap_or_default()
    };
    // A case counts for the op its name starts with when that op is in its model; otherwise for
    // every op in it (expanded function cases contain many).
    let mut per_op: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, c) in cases.iter().enumerate() {
        let ops = ops_of(c);
        let main = ops
            .iter()
            .filter(|op| c.name.to_ascii_lowercase().starts_with(&format!("test_{}", op.to_ascii_lowercase())))
            .max_by_key(|op| op.len())
            .cloned();
        for op in main.map(|m| vec![m]).unwrap_or_else(|| ops.into_iter().collect()) {
            per_op.entry(op).or_default().push(i);
        }
    }
    let passed = |list: usize, i: usize| matches!(results[list].1[i].status, Status::Pass);
    let total = cases.len();
    let p0 = (0..total).filter(|i| passed(0, *i)).count();
    let p1 = (0..total).filter(|i| passed(1, *i)).count();
    let mut out = format!(
        "# Conformance: ONNX backend node tests\n\n\
         Generated by `scripts/conformance --update` from one run of the {total} node cases of onnx 1.23.2\n\
         (tolerance rtol 1e-3, atol 1e-7, NaN equal; random ops checked on shape, dtype and range only).\n\n\
         | provider list | passed | of |\n|---|---|---|\n| `[Cpu]` | **{p0}** | {total} |\n| `[OpenVino(CPU, FP32), Cpu]` | **{p1}** | {total} |\n\n\
         ONNX's other backend suites (pytorch-converted, pytorch-operator, simple, light) and the corpus of \
         models made with onnxruntime's tools, the com.microsoft contrib-op suite and real models from PyPI wheels, with their \
         whole/split statistics: [suites.md](suites.md).\n\n\
         A split model over protobuf's 2 GiB limit (a 2.15 GB MatMul weight in external data on OpenVINO, a float64 \
         tail on Cpu) is made at test time and checked exactly by `cargo test -p vinort --test large_model -- \
         --nocapture` (part of the test suite; about 18 s and 2.2 GB of temporary disk).\n\n\
         ## Per op\n\nExecuted by: the providers that ran the op's nodes in passing or failing runs under `[OpenVino, Cpu]`.\n\n\
         | op | cases | `[Cpu]` | `[OpenVino, Cpu]` | executed by |\n|---|---|---|---|---|\n"
    );
    let cut = common::summary("", results[1].0, &results[1].1);
    let cut = cut.split_once(" (").map_or(cut.as_str(), |(_, r)| r);
    out.insert_str(
        out.find("ONNX's other backend suites").unwrap_or(out.len()),
        &format!(
            "How the `[OpenVino, Cpu]` sessions were cut (whole model first, split only when a rule refuses a node in \
             any context or the whole compile fails): ({}\n\n",
            cut.replace("\n  not whole, why:", "\n\nNot whole, by the reason the plan gives:")
        ),
    );
    for (op, idx) in &per_op {
        let a = idx.iter().filter(|i| passed(0, **i)).count();
        let b = idx.iter().filter(|i| passed(1, **i)).count();
        let mut by: BTreeSet<String> = BTreeSet::new();
        for i in idx {
            for (prov, ops) in &results[1].1[*i].providers_used {
                if ops.iter().any(|o| o == op) {
                    by.insert(prov.clone());
                }
            }
        }
        let by = if by.is_empty() { "—".to_owned() } else { by.into_iter().collect::<Vec<_>>().join(", ") };
        out.push_str(&format!("| {op} | {} | {a} | {b} | {by} |\n", idx.len()));
    }
    let (anchor_cols, anchors) = read_anchors();
    let exceptions = read_anchor_exceptions();
    out.push_str(
        "\n## Against the anchors\n\nMeasured on the same cases with `scripts/anchors.py` (same tolerance), \
         recorded in `tests/conformance/anchors.tsv`:\n\n| runtime | passed |\n|---|---|\n",
    );
    for (k, col) in anchor_cols.iter().enumerate() {
        let name = match col.as_str() {
            "ort_cpu" => "ONNX Runtime 1.31.1, CPU EP",
            "openvino_f32" => "OpenVINO 2026.4.1 alone (f32)",
            "ort_ovep" => "ONNX Runtime 1.24.1 + OpenVINO EP (CPU, FP32) + CPU fallback",
            other => other,
        };
        out.push_str(&format!("| {name} | {} |\n", anchors.values().filter(|r| r.get(k) == Some(&true)).count()));
    }
    let union: Vec<&String> = anchors.iter().filter(|(_, r)| r.iter().any(|p| *p)).map(|(c, _)| c).collect();
    let idx: BTreeMap<&str, usize> = cases.iter().enumerate().map(|(i, c)| (c.name.as_str(), i)).collect();
    let ours = union.iter().filter(|c| idx.get(c.as_str()).is_some_and(|i| passed(1, *i))).count();
    out.push_str(&format!(
        "| passed by at least one of the above | {} |\n| of those, passed by `[OpenVino(CPU, FP32), Cpu]` | **{ours}** |\n\n\
         Exceptions (an anchor passes, we do not), from `tests/conformance/anchor_exceptions.tsv`; CI fails when \
         this list is incomplete or stale:\n\n| case | reason |\n|---|---|\n",
        union.len()
    ));
    for (case, why) in &exceptions {
        out.push_str(&format!("| {case} | {} |\n", why.replace('|', "\\|")));
    }
    out.push_str("\n## Failures and reasons\n\nThe same list as `tests/conformance/expected.tsv`.\n\n| case | providers | status | reason |\n|---|---|---|---|\n");
    for (list, outs) in results {
        for o in outs {
            let (word, msg) = status_word(&o.status);
            if word != "pass" {
                out.push_str(&format!("| {} | {list} | {word} | {} |\n", o.name, first_line(&msg).replace('|', "\\|")));
            }
        }
    }
    out
}
