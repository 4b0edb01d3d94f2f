//! Helpers shared by the integration tests: reading the committed sample models and their
//! reference outputs, building small ONNX models in memory, comparing tensors.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use prost::Message;
use vinort::ir::proto::onnx;
use vinort::{Tensor, Value};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn model_dir(name: &str) -> PathBuf {
    repo().join("models").join(name)
}

/// `(name, tensor)` pairs of a test_data_set folder's `input_K.pb` or `output_K.pb` files.
pub fn read_pbs(dir: &Path, prefix: &str) -> Vec<(String, Tensor)> {
    vinort_tools::testcase::read_tensors(dir, prefix).unwrap_or_else(|e| panic!("{e}"))
}

/// Asserts `got` matches `want` elementwise: |got - want| <= atol + rtol * |want|.
pub fn assert_close(what: &str, got: &Value, want: &Tensor, rtol: f64, atol: f64) {
    let got = got.as_tensor().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (got.to_f64_vec().unwrap(), want.to_f64_vec().unwrap());
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!((a - b).abs() <= atol + rtol * b.abs(), "{what}: element {i}: got {a}, want {b}");
    }
}

/// Runs a sample model's `test_data_set_0` on `s` and checks every output against its
/// reference (rtol 1e-4, atol 1e-6).
pub fn check_sample(s: &vinort::Session, name: &str) {
    let data = model_dir(name).join("test_data_set_0");
    let inputs = read_pbs(&data, "input");
    let out = s.run(inputs.iter().map(|(n, t)| (n.as_str(), t))).unwrap();
    for (oname, want) in read_pbs(&data, "output") {
        assert_close(&oname, out.get(&oname).unwrap(), &want, 1e-4, 1e-6);
    }
}

pub fn tensor_type(elem: i32, dims: &[i64]) -> onnx::TypeProto {
    vinort::ir::proto::build::tensor_type(elem, dims.iter().map(|d| vinort::ir::proto::build::dim::fixed(*d)))
}

#[allow(unused_imports)] // not every test binary builds models
pub use vinort::ir::proto::build::{fixed_tensor_info as value_info, node};

pub fn f32_tensor(name: &str, dims: &[i64], data: &[f32]) -> onnx::TensorProto {
    onnx::TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(1),
        raw_data: Some(bytes::Bytes::from(data.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>())),
        ..Default::default()
    }
}

pub fn model(graph: onnx::GraphProto, opset: i64) -> onnx::ModelProto {
    onnx::ModelProto {
        ir_version: Some(8),
        opset_import: vec![onnx::OperatorSetIdProto { domain: Some(String::new()), version: Some(opset) }],
        graph: Some(graph),
        producer_name: Some("vinort-tests".into()),
        ..Default::default()
    }
}

pub fn encode(m: &onnx::ModelProto) -> Vec<u8> {
    m.encode_to_vec()
}

// Expected outcomes as data, the mechanism of the conformance suite (tests/conformance.rs) and
// the extra suites (tests/suites.rs): a TSV of `case, providers, status, reason` rows for every
// non-pass; a case/list without a row must pass.

/// The provider lists the suites run under: `openvino-fp32` is OpenVINO on the CPU at FP32.
pub const LISTS: [&str; 2] = ["cpu", "openvino-fp32,cpu"];

/// A [`LISTS`] entry's providers. OpenVINO must start (`error_on_failure`): a suite that
/// silently ran Cpu only would record Cpu's results as OpenVINO's.
pub fn providers(list: &str) -> Vec<vinort::Provider> {
    use vinort::openvino::Precision;
    let parsed: vinort_tools::providers::ProviderList =
        list.replace("openvino-fp32", "openvino").parse().expect("a LISTS entry");
    parsed.providers(&vinort::OpenVino::cpu().precision(Precision::Fp32), true)
}

/// The suites' session options: the cost model off. They check what each provider computes,
/// and every split node-test model is far too small for an OpenVINO partition to pay, so with
/// the cost model on the `openvino-fp32,cpu` list would run the Cpu provider again.
pub fn configure(b: vinort::SessionBuilder) -> vinort::SessionBuilder {
    b.cost_model(false)
}

/// "N passed, M failed", and for a list with OpenVINO how the sessions were cut — one OpenVINO
/// partition (whole), OpenVINO and Cpu partitions (split), Cpu only — and why the others were
/// not whole, counted by the reason their plan's path gives.
pub fn summary(label: &str, list: &str, outcomes: &[vinort_tools::testcase::CaseOutcome]) -> String {
    use vinort_tools::testcase::Status;
    let passed = outcomes.iter().filter(|o| matches!(o.status, Status::Pass)).count();
    let mut line = format!("{label}[{list}] {passed} passed, {} failed", outcomes.len() - passed);
    if list == "cpu" {
        return line;
    }
    let built: Vec<_> = outcomes.iter().filter(|o| !o.providers_used.is_empty()).collect();
    let on_ov = |o: &vinort_tools::testcase::CaseOutcome| o.providers_used.iter().filter(|(p, _)| p != "Cpu").count();
    let whole = built.iter().filter(|o| o.providers_used.len() == 1 && on_ov(o) == 1).count();
    let cpu_only = built.iter().filter(|o| on_ov(o) == 0).count();
    line.push_str(&format!(
        " (sessions built: {}; one OpenVINO partition: {whole}, split: {}, Cpu only: {cpu_only})",
        built.len(),
        built.len() - whole - cpu_only
    ));
    let mut why = std::collections::BTreeMap::<String, usize>::new();
    for o in built.iter().filter(|o| !o.path.starts_with("whole model")) {
        *why.entry(split_reason(&o.path)).or_default() += 1;
    }
    let mut why: Vec<(String, usize)> = why.into_iter().collect();
    why.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    if !why.is_empty() {
        let shown: Vec<String> = why.iter().take(8).map(|(k, n)| format!("{k} x{n}")).collect();
        let more = if why.len() > 8 { format!("; {} more reasons", why.len() - 8) } else { String::new() };
        line.push_str(&format!("\n  not whole, why: {}{more}", shown.join("; ")));
    }
    line
}

/// A plan path's reason for splitting, as a short key: the refused op and the kind of rule,
/// or that the whole compile failed.
fn split_reason(path: &str) -> String {
    if let Some(rest) = path.split_once(" in any context, first ").map(|(_, r)| r) {
        let op = rest.split_once(" (").and_then(|(_, r)| r.split_once("): "));
        let Some((op, reason)) = op else { return rest.chars().take(60).collect() };
        let kind =
            if let Some((layer, _)) = reason.split_once(": ").filter(|(l, _)| !l.contains(' ') || *l == "slow path") {
                layer.to_owned()
            } else if reason.contains("float64") {
                "float64".into()
            } else if reason.contains("only tensors cross") {
                "non-tensor value".into()
            } else if reason.contains("does not exchange") {
                "element type not exchanged".into()
            } else {
                "other".into()
            };
        return format!("{op} {kind}");
    }
    if path.contains("failed to compile as a whole") {
        return "whole compile failed".into();
    }
    if path.contains("compiled model has") {
        return "compiled signature differs from the graph's".into();
    }
    path.chars().take(60).collect()
}

/// Fails when the outcomes drifted from the recorded expectations: regressions and unexpected
/// passes, with the command that rewrites the expectations.
pub fn assert_no_drift(list: &str, regressions: &[String], unexpected_passes: &[String], update: &str) {
    assert!(
        regressions.is_empty() && unexpected_passes.is_empty(),
        "[{list}] {} regression(s):\n{}\n{} unexpected pass(es) ({update}):\n{}",
        regressions.len(),
        regressions.join("\n"),
        unexpected_passes.len(),
        unexpected_passes.join("\n")
    );
}

/// The status column's word and the message of a non-pass.
pub fn status_word(s: &vinort_tools::testcase::Status) -> (&'static str, String) {
    use vinort_tools::testcase::Status;
    match s {
        Status::Pass => ("pass", String::new()),
        Status::Fail(m) => ("fail", m.clone()),
        Status::Error(m) => ("error", m.clone()),
        Status::Skip(m) => ("skip", m.clone()),
    }
}

/// A message's first line, cut to 300 characters: the reason column.
pub fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").chars().take(300).collect()
}

/// `(case, list) -> (status, reason)` of an expected-outcomes TSV; a missing file is empty.
pub fn read_expected(path: &Path) -> std::collections::BTreeMap<(String, String), (String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.splitn(4, '\t').collect();
            assert!(f.len() == 4, "malformed line in {}: {l}", path.display());
            ((f[0].to_owned(), f[1].to_owned()), (f[2].to_owned(), f[3].to_owned()))
        })
        .collect()
}

/// The size of an element mismatch as the comparison reports it (`… |diff| 0.0039 > 4.3e-4;
/// 8 of 192 elements differ`): the largest difference and how many elements differ.
pub fn mismatch_size(msg: &str) -> Option<(f64, usize)> {
    let diff = msg.split_once("|diff| ")?.1.split_whitespace().next()?.trim_end_matches(';').parse().ok()?;
    let count = match msg.split_once(" elements differ") {
        Some((head, _)) => head.rsplit_once(" of ")?.0.rsplit(' ').next()?.parse().ok()?,
        None => 1,
    };
    Some((diff, count))
}

/// True when a known failure measured as `now` is no larger than `recorded` (both sizes of
/// [`mismatch_size`]; a float's last digit is allowed).
pub fn within_recorded(now: (f64, usize), recorded: (f64, usize)) -> bool {
    now.0 <= recorded.0 * (1.0 + 1e-6) && now.1 <= recorded.1
}

/// True when recorded reason `old` measures a failure at least as large as `new` does, in
/// both its largest difference and its count, so an update keeps the largest bound seen.
pub fn larger_failure(old: &str, new: &str) -> bool {
    match (mismatch_size(old), mismatch_size(new)) {
        (Some(o), Some(n)) => within_recorded(n, o),
        _ => false,
    }
}

/// The CPU kind a list's numerics depend on, as expected.tsv names it in a `fail@KIND` status:
/// `avx512` when the list's first provider runs AVX-512 kernels (OpenVINO's under oneDNN's
/// ISA cap, vinort's under `VINORT_CPU_ISA`), else `avx2`.
pub fn kind_of(list: &str) -> &'static str {
    let avx512 = if list.starts_with("openvino") {
        vinort::openvino::cpu_kind().avx512()
    } else {
        vinort::isa::level() >= vinort::isa::Level::Avx512
    };
    if avx512 { "avx512" } else { "avx2" }
}

/// Differences between `outcomes` under `list` and the recorded expectations:
/// `(regressions, unexpected passes)`. A row naming a case that is not in `outcomes` is a
/// regression too (stale), so the file cannot collect dead rows.
///
/// A `fail` row whose reason records an element mismatch (`|diff| D …; K of N elements
/// differ`) is a bound: the case fails as a regression once its largest difference or its
/// count of differing elements grows past it. `fail@KIND` is a failure on that CPU kind
/// ([`kind_of`]) and a pass on the others.
pub fn check_expected(
    expected: &std::collections::BTreeMap<(String, String), (String, String)>,
    list: &str,
    outcomes: &[vinort_tools::testcase::CaseOutcome],
) -> (Vec<String>, Vec<String>) {
    let (mut regressions, mut unexpected_passes) = (vec![], vec![]);
    let kind = kind_of(list);
    for o in outcomes {
        let (word, msg) = status_word(&o.status);
        let row = expected.get(&(o.name.clone(), list.to_owned()));
        // A failure expected on another kind of CPU only: a pass is expected here.
        let row = row.filter(|(want, _)| want.split_once('@').is_none_or(|(_, k)| k == kind));
        match (row, word) {
            (None, "pass") => {}
            (None, _) => {
                regressions.push(format!("{} [{list}]: expected pass, got {word}: {}", o.name, first_line(&msg)))
            }
            (Some((want, _)), "pass") => unexpected_passes.push(format!("{} [{list}] ({want})", o.name)),
            (Some((want, _)), got) if want.split('@').next() != Some(got) => {
                regressions.push(format!("{} [{list}]: expected {want}, got {got}: {}", o.name, first_line(&msg)))
            }
            (Some((_, reason)), "fail") => {
                if let Some(recorded) = mismatch_size(reason) {
                    match mismatch_size(&msg) {
                        Some(now) if within_recorded(now, recorded) => {}
                        now => regressions.push(format!(
                            "{} [{list}]: a known failure grew: recorded |diff| {} on {} element(s), now {}: {}",
                            o.name,
                            recorded.0,
                            recorded.1,
                            now.map_or("another kind of failure".into(), |(d, k)| format!("|diff| {d} on {k}")),
                            first_line(&msg)
                        )),
                    }
                }
            }
            _ => {}
        }
    }
    for (case, l) in expected.keys() {
        if l == list && !outcomes.iter().any(|o| &o.name == case) {
            regressions.push(format!("{case} [{list}]: recorded, but there is no such case"));
        }
    }
    (regressions, unexpected_passes)
}

// docs/conformance.md has two writers: `scripts/conformance --update` (tests/conformance.rs)
// writes the node-test part, `scripts/suites --update` (tests/suites.rs) the contrib-op section
// between these markers. Each keeps the other's part.

/// First line of the contrib-op section of docs/conformance.md.
pub const CONTRIB_BEGIN: &str = "<!-- contrib ops: generated by scripts/suites --update (tests/suites.rs) -->";
/// Last line of that section.
pub const CONTRIB_END: &str = "<!-- end of contrib ops -->";

/// The contrib-op section of `doc` (markers included), if it has one.
pub fn contrib_section(doc: &str) -> Option<&str> {
    let start = doc.find(CONTRIB_BEGIN)?;
    let end = doc[start..].find(CONTRIB_END)? + start + CONTRIB_END.len();
    Some(&doc[start..end])
}

/// `doc` with its contrib-op section replaced by `section` (markers included), or `section`
/// appended when it has none.
pub fn with_section(doc: &str, section: &str) -> String {
    let section = section.trim_end();
    match contrib_section(doc) {
        Some(old) => doc.replacen(old, section, 1),
        None => format!("{}\n\n{section}\n", doc.trim_end()),
    }
}
