//! ONNX's other backend suites (pytorch-converted, pytorch-operator, simple, light: 149 cases of
//! onnx 1.23.2), vinort's corpus of real-world model forms (fused by onnxruntime.transformers,
//! quantized, float16, local functions, repeated `?` dims, overridable initializers...;
//! onnxruntime references) and the com.microsoft contrib-op suite (issue 12: every contrib op
//! ONNX Runtime's tools emit, with onnxruntime CPU references) and real models shipped inside
//! PyPI wheels (PaddleOCR, silero-vad, ddddocr, openWakeWord, magika…; onnxruntime
//! references), under `[Cpu]` and
//! `[OpenVino(CPU, FP32), Cpu]`, checked against the expected outcomes recorded in
//! `tests/suites/<suite>.tsv` (case, provider list, status, reason) exactly as the node tests
//! are (`tests/conformance.rs`): a case/list without a row must pass, and a regression, an
//! unexpected pass or a row naming no case all fail.
//!
//! Data: `scripts/gen-onnx-suites`, `scripts/gen-corpus`, `scripts/gen-contrib-suite` and
//! `scripts/gen-wheel-models` (run by `scripts/test`) write the cases to
//! `tests/data/onnx-suites`, `tests/data/corpus`, `tests/data/contrib` and `tests/data/wheels`
//! (or `$VINORT_ONNX_SUITES`, `$VINORT_CORPUS`, `$VINORT_CONTRIB`, `$VINORT_WHEELS`). Each case is compared with its own tolerance (`tolerance.txt` written by
//! the generator, see `vinort_tools::testcase::read_tolerance`), else ONNX's default (rtol 1e-3,
//! atol 1e-7). Rewrite the expectations after real progress with `scripts/suites --update`
//! and review the diff; it also rewrites `docs/suites.md` and the contrib-op table of
//! `docs/conformance.md` (the section between [`CONTRIB_BEGIN`] and [`CONTRIB_END`], which
//! `scripts/conformance --update` keeps).

mod common;

use std::path::PathBuf;

use std::collections::BTreeSet;

use vinort_tools::testcase::{CaseOutcome, Status, TestCase, Tolerance, discover, read_tolerance, run_case_with};

/// A suite: its name (and expectations file `tests/suites/<name>.tsv`), its folder, and the
/// number of cases it must hold (`None`: whatever the generator made, at least one).
struct Suite {
    name: &'static str,
    dir: PathBuf,
    cases: Option<usize>,
}

/// What a bare failure message cannot say, measured and prefixed to the recorded reason by
/// `update`: `(case, list, explanation)`. An entry whose case/list passes makes `update` fail,
/// so the notes cannot go stale.
const NOTES: &[(&str, &str, &str)] =
    &[("ddddocr_common_old", "cpu", TIES), ("ddddocr_common_old", "openvino-fp32,cpu", TIES)];

/// Cases whose outcome depends on the CPU kind (its vector width decides a summation order an
/// ill-conditioned case is sensitive to): recorded as `fail@KIND` (`common::kind_of`), a failure
/// of at most the recorded size on that kind and a pass on the others. `(case, list, kind,
/// explanation)`.
const KIND_DEPENDENT: &[(&str, &str, &str, &str)] = &[(
    "light_squeezenet",
    "openvino-fp32,cpu",
    "avx512",
    "ill-conditioned: every logit is 9.47568538e9 in onnxruntime (all weights equal); with AVX-512, \
     OpenVINO's summation order gives 9.4756864e9..9.47568947e9 (3 ulps apart, 8 of 1000 at the max), so \
     Softmax puts 0.125 on 8 classes instead of 0.001 on all (native OpenVINO 2026.4.1 does the same); \
     on an AVX2-only CPU (measured: AMD EPYC without AVX-512, and ONEDNN_MAX_CPU_ISA=AVX2) the case passes",
)];

/// Why ddddocr's dynamically quantized CRNN cannot be compared element by element.
const TIES: &str = "ties: its 22 DynamicQuantizeLinear nodes pick scales from the data, and an activation at an \
     exact rounding tie (x/scale = -8.5) lands one step apart after last-bit differences upstream; fed \
     onnxruntime's own input, vinort's DynamicQuantizeLinear matches it exactly, and onnxruntime's output \
     itself moves by up to 6.9 under 1e-6 relative input noise";

fn data_dir(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| common::repo().join(default))
}

/// ONNX's suites, with the case counts of onnx 1.23.2.
fn onnx_suites() -> Vec<Suite> {
    let root = data_dir("VINORT_ONNX_SUITES", "tests/data/onnx-suites");
    assert_generated(&root, "scripts/gen-onnx-suites");
    [("pytorch-converted", 82), ("pytorch-operator", 35), ("simple", 23), ("light", 9)]
        .into_iter()
        .map(|(name, n)| Suite { name, dir: root.join(name), cases: Some(n) })
        .collect()
}

fn corpus() -> Vec<Suite> {
    let dir = data_dir("VINORT_CORPUS", "tests/data/corpus");
    assert_generated(&dir, "scripts/gen-corpus");
    vec![Suite { name: "corpus", dir, cases: None }]
}

fn contrib() -> Vec<Suite> {
    let dir = data_dir("VINORT_CONTRIB", "tests/data/contrib");
    assert_generated(&dir, "scripts/gen-contrib-suite");
    vec![Suite { name: "contrib", dir, cases: None }]
}

/// Real models from PyPI wheels (scripts/gen_wheel_models.py pins the wheels).
fn wheels() -> Vec<Suite> {
    let dir = data_dir("VINORT_WHEELS", "tests/data/wheels");
    assert_generated(&dir, "scripts/gen-wheel-models");
    vec![Suite { name: "wheels", dir, cases: Some(26) }]
}

use common::{CONTRIB_BEGIN, CONTRIB_END};

/// One row of the contrib suite's `ops.tsv` (written by scripts/gen_contrib_suite.py): an op of
/// issue 12, its cases, or why it has none.
struct ContribOp {
    op: String,
    domain: String,
    cases: Vec<String>,
    no_reference: String,
}

fn contrib_ops(dir: &std::path::Path) -> Vec<ContribOp> {
    let path = dir.join("ops.tsv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert!(f.len() == 4, "malformed line in {}: {l}", path.display());
            ContribOp {
                op: f[0].to_owned(),
                domain: f[1].to_owned(),
                cases: f[2].split_whitespace().map(str::to_owned).collect(),
                no_reference: f[3].to_owned(),
            }
        })
        .collect()
}

/// The contrib-op section of docs/conformance.md: per op its cases, how many pass under each
/// list, and which providers ran its nodes under `[OpenVino, Cpu]`; then the ops without a
/// reference.
fn contrib_doc(suite: &Suite, results: &[(&str, Vec<CaseOutcome>)]) -> String {
    let ops = contrib_ops(&suite.dir);
    let passed = |list: &str, cases: &[String]| {
        let outs = &results.iter().find(|(l, _)| *l == list).expect("both lists ran").1;
        outs.iter().filter(|o| cases.contains(&o.name) && matches!(o.status, Status::Pass)).count()
    };
    let mut out = format!(
        "{CONTRIB_BEGIN}\n## com.microsoft contrib ops (issue 12)\n\n\
         Generated by `scripts/suites --update` (tests/suites.rs) from the contrib suite of `scripts/gen-contrib-suite`: \
         single-op cases and small graphs (`graph_*`, counted under every op they hold) with onnxruntime CPU \
         references; tolerances and variants in scripts/gen_contrib_suite.py, failures with reasons in \
         `tests/suites/contrib.tsv` and [suites.md](suites.md). Run by: the providers whose partitions held the op's \
         nodes in the sessions built under `[OpenVino, Cpu]` (nobody: no session was built).\n\n\
         | op | domain | cases | `[Cpu]` | `[OpenVino, Cpu]` | run by |\n|---|---|---|---|---|---|\n"
    );
    let ov_outs = &results.iter().find(|(l, _)| *l == "openvino-fp32,cpu").expect("both lists ran").1;
    for op in ops.iter().filter(|o| !o.cases.is_empty()) {
        let qualified = if op.domain.is_empty() { op.op.clone() } else { format!("{}::{}", op.domain, op.op) };
        let mut by = BTreeSet::new();
        for o in ov_outs.iter().filter(|o| op.cases.contains(&o.name)) {
            for (provider, ops) in &o.providers_used {
                if ops.contains(&qualified) {
                    by.insert(provider.clone());
                }
            }
        }
        let by = if by.is_empty() { "nobody".to_owned() } else { by.into_iter().collect::<Vec<_>>().join(", ") };
        let domain = if op.domain.is_empty() { "(default, ONNX Runtime's own schema)" } else { &op.domain };
        out.push_str(&format!(
            "| {} | {domain} | {} | {} | {} | {by} |\n",
            op.op,
            op.cases.len(),
            passed("cpu", &op.cases),
            passed("openvino-fp32,cpu", &op.cases)
        ));
    }
    out.push_str("\nOps without cases, and why:\n\n");
    for op in ops.iter().filter(|o| o.cases.is_empty()) {
        out.push_str(&format!("- {} ({}): {}\n", op.op, op.domain, op.no_reference));
    }
    out.push_str(&format!("\n{CONTRIB_END}\n"));
    out
}

fn assert_generated(dir: &std::path::Path, generator: &str) {
    assert!(
        dir.join(".complete").exists(),
        "test data missing at {}: run {generator} (scripts/test does)",
        dir.display()
    );
}

fn expected_file(suite: &str) -> PathBuf {
    common::repo().join("tests/suites").join(format!("{suite}.tsv"))
}

fn cases(suite: &Suite) -> Vec<TestCase> {
    let cases = discover(std::slice::from_ref(&suite.dir)).expect("test cases");
    match suite.cases {
        Some(n) => assert_eq!(cases.len(), n, "{}: expected {n} cases in {}", suite.name, suite.dir.display()),
        None => assert!(!cases.is_empty(), "{}: no cases in {}", suite.name, suite.dir.display()),
    }
    cases
}

fn run_list(list: &str, cases: &[TestCase]) -> Vec<CaseOutcome> {
    cases
        .iter()
        .map(|c| {
            let tol = read_tolerance(&c.dir, Tolerance::default()).unwrap_or_else(|e| panic!("{e}"));
            run_case_with(c, || common::providers(list), tol, common::configure)
        })
        .collect()
}

fn check(suites: &[Suite], list: &str) {
    let (mut regressions, mut unexpected_passes) = (vec![], vec![]);
    for suite in suites {
        let outcomes = run_list(list, &cases(suite));
        println!("{}", common::summary(&format!("[{}] ", suite.name), list, &outcomes));
        let (r, u) = common::check_expected(&common::read_expected(&expected_file(suite.name)), list, &outcomes);
        regressions.extend(r.into_iter().map(|m| format!("{}: {m}", suite.name)));
        unexpected_passes.extend(u.into_iter().map(|m| format!("{}: {m}", suite.name)));
    }
    common::assert_no_drift(
        list,
        &regressions,
        &unexpected_passes,
        "update tests/suites/*.tsv with scripts/suites --update",
    );
}

/// `Op xN, ...` of the com.microsoft nodes in a case's model (sorted by op), read from the
/// file itself so the table in docs/suites.md says what the tools actually emitted.
fn ms_ops_of(case: &TestCase) -> String {
    let path = case.dir.join("model.onnx");
    let model = vinort::Model::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut ops = std::collections::BTreeMap::<String, usize>::new();
    for ix in model.graph.node_indices() {
        let node = model.graph.node(ix);
        if node.domain == "com.microsoft" {
            *ops.entry(node.op_type.clone()).or_default() += 1;
        }
    }
    ops.iter().map(|(op, n)| format!("{op} x{n}")).collect::<Vec<_>>().join(", ")
}

fn updating() -> bool {
    std::env::var_os("VINORT_UPDATE_EXPECTED").is_some()
}

/// Checks `suites` under `list`, unless `update` is rewriting the expectations instead.
fn run(suites: fn() -> Vec<Suite>, list: &str) {
    if !updating() {
        check(&suites(), list);
    }
}

#[test]
fn onnx_suites_on_cpu() {
    run(onnx_suites, "cpu");
}

#[test]
fn onnx_suites_on_openvino_then_cpu() {
    run(onnx_suites, "openvino-fp32,cpu");
}

#[test]
fn corpus_on_cpu() {
    run(corpus, "cpu");
}

#[test]
fn corpus_on_openvino_then_cpu() {
    run(corpus, "openvino-fp32,cpu");
}

#[test]
fn contrib_on_cpu() {
    run(contrib, "cpu");
}

#[test]
fn contrib_on_openvino_then_cpu() {
    run(contrib, "openvino-fp32,cpu");
}

#[test]
fn wheels_on_cpu() {
    run(wheels, "cpu");
}

#[test]
fn wheels_on_openvino_then_cpu() {
    run(wheels, "openvino-fp32,cpu");
}

/// With `VINORT_UPDATE_EXPECTED=1`: runs every suite under both lists and rewrites
/// `tests/suites/<suite>.tsv`, `docs/suites.md` and the contrib section of
/// `docs/conformance.md`. Otherwise does nothing.
#[test]
fn update() {
    if !updating() {
        return;
    }
    let mut unused_notes: Vec<(&str, &str)> = NOTES.iter().map(|(c, l, _)| (*c, *l)).collect();
    let mut doc = String::from(
        "# Conformance: ONNX's other backend suites, vinort's corpus of tool-made models, the contrib-op suite\n\n\
         Generated by `scripts/suites --update` (tests/suites.rs). The ONNX suites come from the onnx wheel \
         (`onnx/backend/test/data/{pytorch-converted,pytorch-operator,simple,light}`, written by \
         `scripts/gen-onnx-suites`); the corpus is made by `scripts/gen-corpus` with onnxruntime's own tools \
         (transformers optimizer fusions, quantize_static QDQ and QOperator, quantize_dynamic, MatMulNBitsQuantizer, \
         float16 conversion) and onnx.helper, with onnxruntime references; the contrib suite (com.microsoft ops, \
         per-op table in [conformance.md](conformance.md)) is written by `scripts/gen-contrib-suite` with \
         onnx.helper and onnxruntime CPU references; the wheels suite holds real models shipped inside PyPI wheels \
         (scripts/gen_wheel_models.py pins them), with onnxruntime CPU references for seeded inputs. \
         \"One OpenVINO partition\" counts sessions that OpenVINO ran whole. Integer products of uint8 activations and int8 weights have their references computed on the equivalent uint8 × uint8 model (models/exact_int8.py): onnxruntime's uint8 × int8 kernels saturate on CPUs without VNNI, where ONNX defines an exact sum.\n\n",
    );
    let mut failures = String::new();
    let mut ms_table = String::new();
    let contrib = contrib();
    let mut contrib_section = None;
    for suite in onnx_suites().iter().chain(&corpus()).chain(&contrib).chain(&wheels()) {
        let cases = cases(suite);
        // The contrib suite's own ops are its per-op table in docs/conformance.md.
        for c in cases.iter().filter(|_| suite.name != "contrib") {
            let ops = ms_ops_of(c);
            if !ops.is_empty() {
                ms_table.push_str(&format!("| {} | {} | {ops} |\n", suite.name, c.name));
            }
        }
        let mut tsv = format!(
            "# Expected non-pass outcomes of the '{}' suite (tests/suites.rs). A case/list missing here must pass.\n\
             # Regenerate with scripts/suites --update after real progress, and review the diff.\n\
             # case\tproviders\tstatus\treason\n",
            suite.name
        );
        let mut results = vec![];
        let before = common::read_expected(&expected_file(suite.name));
        for list in common::LISTS {
            let outcomes = run_list(list, &cases);
            let line = common::summary(&format!("[{}] ", suite.name), list, &outcomes);
            println!("{line}");
            doc.push_str(&format!("- {}\n", line.replace("\n  ", "\n  - ")));
            for o in &outcomes {
                let (word, msg) = common::status_word(&o.status);
                let old = before.get(&(o.name.clone(), list.to_owned()));
                if let Some((_, _, kind, why)) = KIND_DEPENDENT.iter().find(|(c, l, ..)| *c == o.name && *l == list) {
                    // Measured on its kind; elsewhere (a pass) the recorded row is kept.
                    let reason = match (word, old) {
                        ("fail", _) if common::kind_of(list) == *kind => {
                            format!("{why}: {}", common::first_line(&msg).replace('\t', " "))
                        }
                        (_, Some((_, r))) => r.clone(),
                        _ => why.to_string(),
                    };
                    tsv.push_str(&format!("{}\t{list}\tfail@{kind}\t{reason}\n", o.name));
                    failures.push_str(&format!("| {} | {} | {list} | fail@{kind} | {reason} |\n", suite.name, o.name));
                    continue;
                }
                if word == "pass" {
                    continue;
                }
                // Paths inside the data folder are relative, so the file does not name this machine.
                let local = format!("{}/", suite.dir.display());
                let mut reason = common::first_line(&msg).replace('\t', " ").replace(&local, "");
                if let Some((_, _, note)) = NOTES.iter().find(|(c, l, _)| *c == o.name && *l == list) {
                    reason = format!("{note}: {reason}");
                    unused_notes.retain(|u| *u != (o.name.as_str(), list));
                }
                // A known failure keeps the largest size measured (on any CPU kind).
                if let Some((w, r)) = old
                    && w == word
                    && common::larger_failure(r, &reason)
                {
                    reason = r.clone();
                }
                tsv.push_str(&format!("{}\t{list}\t{word}\t{reason}\n", o.name));
                failures.push_str(&format!(
                    "| {} | {} | {list} | {word} | {} |\n",
                    suite.name,
                    o.name,
                    reason.replace('|', "\\|")
                ));
            }
            results.push((list, outcomes));
        }
        if suite.name == "contrib" {
            contrib_section = Some(contrib_doc(suite, &results));
        }
        std::fs::write(expected_file(suite.name), tsv).expect("write the expectations");
    }
    doc.push_str(
        "\n## com.microsoft ops in the cases\n\nRead from each case's model.onnx. The corpus's tool outputs \
         (onnxruntime.transformers' optimizer on the BERT, GPT-2 and ViT networks, then float16, quantize_dynamic \
         and MatMulNBitsQuantizer on the fused models; quantize_static QOperator on MobileNetV2) are described in \
         scripts/gen_corpus.py's module doc.\n\n| suite | case | com.microsoft ops |\n|---|---|---|\n",
    );
    doc.push_str(&ms_table);
    doc.push_str("\n## Failures and reasons\n\nThe same rows as `tests/suites/*.tsv`.\n\n| suite | case | providers | status | reason |\n|---|---|---|---|---|\n");
    doc.push_str(&failures);
    std::fs::write(common::repo().join("docs/suites.md"), doc).expect("write docs/suites.md");
    let conformance = common::repo().join("docs/conformance.md");
    let old = std::fs::read_to_string(&conformance).expect("docs/conformance.md");
    let section = contrib_section.expect("the contrib suite ran");
    std::fs::write(&conformance, common::with_section(&old, &section)).expect("write docs/conformance.md");
    assert!(unused_notes.is_empty(), "NOTES for cases that now pass (remove them): {unused_notes:?}");
}
