//! Running ONNX test cases: the engine behind `vinort test` and the conformance suite.
//!
//! A test case is a folder in the standard ONNX layout:
//!
//! ```text
//! <case>/model.onnx
//! <case>/test_data_set_0/input_0.pb    serialized TensorProto / SequenceProto / OptionalProto
//! <case>/test_data_set_0/output_0.pb   reference output, in graph-output order
//! ```
//!
//! [`discover`] finds cases, [`run_case`] builds a session with the given providers, feeds
//! every data set and [`compare`]s every output with its reference, and [`format_line`] /
//! [`summary_line`] print the result. A case never panics the runner: build failures, run
//! errors and kernel panics all become [`Status::Error`].
//!
//! ```no_run
//! use vinort_tools::testcase::{Tolerance, discover, format_line, run_case, summary_line};
//! let cases = discover(&["onnx/backend/test/data/node".into()])?;
//! let outcomes: Vec<_> =
//!     cases.iter().map(|c| run_case(c, || vec![vinort::Cpu::default().into()], Tolerance::default())).collect();
//! for o in &outcomes {
//!     println!("{}", format_line(o));
//! }
//! println!("{}", summary_line(&outcomes));
//! # Ok::<(), vinort_tools::testcase::CaseError>(())
//! ```

mod compare;
mod read;
#[cfg(test)]
mod tests;
mod tolerance;

use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use vinort_ir::{Graph, Node, Tensor, Value, ValueId, ValueType};

pub use compare::{
    ElementMismatch, Mismatch, MismatchKind, RangeMismatch, Tolerance, compare, compare_shape_and_dtype,
};
pub use read::{CaseError, read_tensor, read_tensors, read_value};
pub use tolerance::{TOLERANCE_FILE, read_tolerance};

use vinort::{Error, Provider, Runtime, Session};

/// Op types whose outputs are random: an output that depends on one of them (through any
/// chain of nodes, or a subgraph holding one) is checked on element type, shape and value
/// range only; the model's other outputs are compared by value as usual.
pub const RANDOM_OPS: &[&str] =
    &["Bernoulli", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial"];

/// The [`CaseOutcome::note`] of a case whose model contains a [`RANDOM_OPS`] op.
pub const RANDOM_NOTE: &str = "random op: outputs it reaches checked by shape, dtype and range, the others by value";

/// One test case: a folder holding `model.onnx` and its data sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCase {
    /// The folder's name (`test_abs`).
    pub name: String,
    /// The folder.
    pub dir: PathBuf,
    /// The `test_data_set_*` folders, in numeric order.
    pub data_sets: Vec<PathBuf>,
}

impl TestCase {
    /// The case in `dir`, which must hold `model.onnx`.
    pub fn from_dir(dir: &Path) -> Result<TestCase, CaseError> {
        if !dir.join("model.onnx").is_file() {
            return Err(CaseError::Layout { path: dir.into(), message: "no model.onnx in this folder".into() });
        }
        let name = match dir.file_name() {
            Some(n) => n.to_string_lossy().into_owned(),
            // `.` or `..`: name the case after the folder it resolves to.
            None => dir
                .canonicalize()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| dir.display().to_string()),
        };
        let mut data_sets = vec![];
        for entry in read_dir(dir)? {
            let entry = entry.map_err(|source| CaseError::Io { path: dir.into(), source })?;
            let file_name = entry.file_name();
            let Some(suffix) = file_name.to_str().and_then(|n| n.strip_prefix("test_data_set_")) else { continue };
            if entry.path().is_dir() {
                data_sets.push((suffix.parse::<u64>().unwrap_or(u64::MAX), file_name.clone(), entry.path()));
            }
        }
        data_sets.sort();
        Ok(TestCase { name, dir: dir.into(), data_sets: data_sets.into_iter().map(|(_, _, p)| p).collect() })
    }
}

fn read_dir(dir: &Path) -> Result<std::fs::ReadDir, CaseError> {
    std::fs::read_dir(dir).map_err(|source| CaseError::Io { path: dir.into(), source })
}

/// Finds test cases. Each path is either a case folder (it holds `model.onnx`) or a folder of
/// case folders, which are taken in name order (sub-folders without `model.onnx` are
/// ignored). A path that is neither is an error naming it.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<TestCase>, CaseError> {
    let mut cases = vec![];
    for path in paths {
        if path.join("model.onnx").is_file() {
            cases.push(TestCase::from_dir(path)?);
            continue;
        }
        if !path.is_dir() {
            return Err(CaseError::Layout {
                path: path.clone(),
                message: "not a folder (expected a test case folder or a folder of them)".into(),
            });
        }
        let mut dirs = vec![];
        for entry in read_dir(path)? {
            let entry = entry.map_err(|source| CaseError::Io { path: path.clone(), source })?;
            let p = entry.path();
            if p.join("model.onnx").is_file() {
                dirs.push((entry.file_name(), p));
            }
        }
        if dirs.is_empty() {
            return Err(CaseError::Layout {
                path: path.clone(),
                message: "holds no model.onnx, and no folder directly inside it does".into(),
            });
        }
        dirs.sort();
        for (_, d) in dirs {
            cases.push(TestCase::from_dir(&d)?);
        }
    }
    Ok(cases)
}

/// How a case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Every output of every data set matched.
    Pass,
    /// An output differs from its reference: the first difference found.
    Fail(String),
    /// The case could not be run: loading, building (unsupported nodes), reading data,
    /// running, or a panic.
    Error(String),
    /// Nothing was compared, and why.
    Skip(String),
}

/// The result of [`run_case`].
#[derive(Debug, Clone)]
pub struct CaseOutcome {
    /// The case's name.
    pub name: String,
    /// How it ended.
    pub status: Status,
    /// How the case was checked when not the usual way ([`RANDOM_NOTE`]).
    pub note: Option<String>,
    /// Per partition of the session, in execution order: provider name and the op types it
    /// ran (empty when the session was not built).
    pub providers_used: Vec<(String, Vec<String>)>,
    /// How the session's plan was made (`PartitionPlan::path`: whole model, or split and why;
    /// empty when the session was not built).
    pub path: String,
}

/// Runs one case: builds a session with the providers `providers` returns, feeds every data
/// set and compares every output with its reference.
///
/// `input_K.pb` feeds the model's K-th input. A data set may have fewer input files than the
/// model has inputs (trailing optional inputs omitted): what exists is fed, and a missing
/// input declared as an ONNX optional is fed as an empty optional. `output_K.pb` is compared
/// with the K-th output by [`compare`], or, when the model contains a [`RANDOM_OPS`] op, by
/// element type and shape plus the op's value range.
///
/// Never panics: a panic while building or running becomes [`Status::Error`] `panic: ...`.
pub fn run_case(case: &TestCase, providers: impl Fn() -> Vec<Provider>, tol: Tolerance) -> CaseOutcome {
    run_case_with(case, providers, tol, |b| b)
}

/// [`run_case`] with the session builder passed through `configure` before it builds (a
/// session option such as `cost_model(false)`, which the suites set to keep testing the
/// providers' split plans on models too small for a split to pay).
pub fn run_case_with(
    case: &TestCase,
    providers: impl Fn() -> Vec<Provider>,
    tol: Tolerance,
    configure: impl Fn(vinort::SessionBuilder) -> vinort::SessionBuilder,
) -> CaseOutcome {
    let mut outcome = CaseOutcome {
        name: case.name.clone(),
        status: Status::Pass,
        note: None,
        providers_used: vec![],
        path: String::new(),
    };
    let result = catch_unwind(AssertUnwindSafe(|| run_inner(case, &providers, &configure, tol, &mut outcome)));
    outcome.status = match result {
        Ok(status) => status,
        Err(payload) => Status::Error(format!("panic: {}", panic_message(payload.as_ref()))),
    };
    outcome
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a payload that is not a string)".into()
    }
}

fn run_inner(
    case: &TestCase,
    providers: &dyn Fn() -> Vec<Provider>,
    configure: &dyn Fn(vinort::SessionBuilder) -> vinort::SessionBuilder,
    tol: Tolerance,
    out: &mut CaseOutcome,
) -> Status {
    let model_path = case.dir.join("model.onnx");
    let builder = match Runtime::load(&model_path) {
        Ok(b) => b,
        Err(e) => return Status::Error(format!("cannot load '{}': {e}", model_path.display())),
    };
    let session = match configure(builder.providers(providers())).build() {
        Ok(s) => s,
        Err(e) => return Status::Error(build_error_message(&e)),
    };
    out.path = session.plan().path.clone();
    out.providers_used =
        session.plan().partitions.iter().map(|p| (p.provider.clone(), p.ops.keys().cloned().collect())).collect();
    let g = &session.model().graph;
    let random = random_values(g);
    if !random.is_empty() {
        out.note = Some(RANDOM_NOTE.into());
    }
    if case.data_sets.is_empty() {
        return Status::Skip("no test_data_set_* folder (the model built; nothing to compare)".into());
    }
    let several = case.data_sets.len() > 1;
    for ds in &case.data_sets {
        let prefix = if several {
            format!("{}: ", ds.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
        } else {
            String::new()
        };
        match run_data_set(&session, ds, &random, tol) {
            Ok(None) => {}
            Ok(Some(failure)) => return Status::Fail(format!("{prefix}{failure}")),
            Err(e) => return Status::Error(format!("{prefix}{e}")),
        }
    }
    Status::Pass
}

/// The error of a failed build; unsupported nodes are listed on the first line, so the
/// one-line report names them.
fn build_error_message(e: &Error) -> String {
    match e {
        Error::UnsupportedNodes(nodes) => {
            let list: Vec<String> = nodes
                .iter()
                .map(|n| {
                    let op = if n.domain.is_empty() || n.domain == "ai.onnx" {
                        n.op_type.clone()
                    } else {
                        format!("{}::{}", n.domain, n.op_type)
                    };
                    format!("{op} '{}'", n.node)
                })
                .collect();
            format!("{} unsupported node(s): {}\n{e}", nodes.len(), list.join(", "))
        }
        other => format!("session build failed: {other}"),
    }
}

/// Runs one data set. `Ok(Some(description))` when an output differs; `Err` when the data
/// set cannot be run.
fn run_data_set(
    session: &Session,
    dir: &Path,
    random: &HashSet<ValueId>,
    tol: Tolerance,
) -> Result<Option<String>, String> {
    let input_files = numbered_files(dir, "input_").map_err(|e| e.to_string())?;
    let output_files = numbered_files(dir, "output_").map_err(|e| e.to_string())?;
    let (ins, outs) = (session.inputs(), session.outputs());
    for (kind, files, declared) in [("input", input_files.len(), ins.len()), ("output", output_files.len(), outs.len())]
    {
        if files > declared {
            return Err(format!(
                "'{}' has {files} {kind} files, but the model has {declared} {kind}(s)",
                dir.display()
            ));
        }
    }
    let g = &session.model().graph;
    let mut feeds: Vec<(ValueId, String, Value)> = vec![];
    for (k, info) in ins.iter().enumerate() {
        let value = match input_files.get(k) {
            Some(path) => read_value(path, &info.ty).map_err(|e| e.to_string())?,
            // ONNX Runtime treats an omitted optional-typed graph input as an empty optional.
            None => match &info.ty {
                ValueType::Optional(inner) => Value::Optional(None, (**inner).clone()),
                _ => continue,
            },
        };
        feeds.push((g.inputs()[k], info.name.clone(), value));
    }
    // References are read before running so a bad file is reported as such.
    let wants = output_files
        .iter()
        .zip(outs)
        .map(|(path, info)| read_value(path, &info.ty))
        .collect::<Result<Vec<Value>, CaseError>>()
        .map_err(|e| e.to_string())?;
    let got = session.run(feeds.iter().map(|(_, name, v)| (name.as_str(), v.clone()))).map_err(|e| {
        let msg = e.to_string();
        format!("run failed: {msg}")
    })?;
    let fed: HashMap<ValueId, &Value> = feeds.iter().map(|(id, _, v)| (*id, v)).collect();
    let mut failures = vec![];
    for (k, want) in wants.iter().enumerate() {
        let result = if random.contains(&g.outputs()[k]) {
            let range = output_range(g, g.outputs()[k], &fed)?;
            compare_shape_and_dtype(&got[k], want).and_then(|()| check_range(&got[k], &range, tol))
        } else {
            compare(&got[k], want, tol)
        };
        if let Err(m) = result {
            failures.push(format!("output {k} {m}"));
        }
    }
    Ok(match failures.len() {
        0 => None,
        1 => failures.pop(),
        n => Some(format!("{} (and {} more failing output(s))", failures[0], n - 1)),
    })
}

/// `input_0.pb, input_1.pb, ...` of a data set, in numeric order; a gap is an error.
fn numbered_files(dir: &Path, prefix: &str) -> Result<Vec<PathBuf>, CaseError> {
    let mut found: Vec<(usize, PathBuf)> = vec![];
    for entry in read_dir(dir)? {
        let entry = entry.map_err(|source| CaseError::Io { path: dir.into(), source })?;
        let name = entry.file_name();
        let Some(digits) = name.to_str().and_then(|n| n.strip_prefix(prefix)).and_then(|n| n.strip_suffix(".pb"))
        else {
            continue;
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(k) = digits.parse::<usize>() {
            found.push((k, entry.path()));
        }
    }
    found.sort();
    for (i, (k, _)) in found.iter().enumerate() {
        if *k != i {
            return Err(CaseError::Layout {
                path: dir.into(),
                message: format!("{prefix}{i}.pb is missing, but {prefix}{k}.pb exists"),
            });
        }
    }
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

fn is_random(node: &Node) -> bool {
    (node.domain.is_empty() || node.domain == "ai.onnx") && RANDOM_OPS.contains(&node.op_type.as_str())
}

/// A random op, or a node whose subgraphs (at any depth) hold one.
fn holds_random(node: &Node) -> bool {
    is_random(node) || node.subgraphs().any(|(_, sg)| sg.topo_order().iter().any(|ix| holds_random(sg.node(*ix))))
}

/// The values of the main graph that depend on a random op.
fn random_values(g: &Graph) -> HashSet<ValueId> {
    let mut random = HashSet::new();
    for &ix in g.topo_order() {
        let n = g.node(ix);
        if holds_random(n) || n.inputs.iter().flatten().chain(&n.implicit_inputs).any(|v| random.contains(v)) {
            random.extend(n.outputs.iter().flatten().copied());
        }
    }
    random
}

/// The values a random op's output may take.
#[derive(Debug, Clone, PartialEq)]
enum RandomRange {
    /// Not produced directly by a random op: element type and shape only.
    Any,
    /// RandomUniform(Like): `[low, high]`.
    Between(f64, f64),
    /// RandomNormal(Like): any finite value.
    Finite,
    /// Bernoulli: 0 or 1.
    ZeroOrOne,
    /// Multinomial: class indices `0..classes` (upper bound unknown when the class count is).
    Index(Option<usize>),
}

/// The range of graph output `out` when a random op produces it directly.
fn output_range(g: &Graph, out: ValueId, fed: &HashMap<ValueId, &Value>) -> Result<RandomRange, String> {
    let Some(ix) = g.producer(out) else { return Ok(RandomRange::Any) };
    let node = g.node(ix);
    if !is_random(node) {
        return Ok(RandomRange::Any);
    }
    let attr = |name: &str, default: f32| node.attr_or::<f32>(name, default).map(f64::from).map_err(|e| e.to_string());
    Ok(match node.op_type.as_str() {
        "RandomUniform" | "RandomUniformLike" => RandomRange::Between(attr("low", 0.0)?, attr("high", 1.0)?),
        "RandomNormal" | "RandomNormalLike" => RandomRange::Finite,
        "Bernoulli" => RandomRange::ZeroOrOne,
        "Multinomial" => {
            // Input 0 is [batch, class_size]; each sample is an index into the classes.
            let classes = node.inputs.first().copied().flatten().and_then(|v| {
                let shape = match fed.get(&v) {
                    Some(Value::Tensor(t)) => Some(t.shape().to_vec()),
                    _ => g.initializer(v).map(|t| t.shape().to_vec()).or_else(|| g.value(v).ty.static_shape()),
                };
                shape.and_then(|s| s.last().copied())
            });
            RandomRange::Index(classes)
        }
        _ => RandomRange::Any,
    })
}

fn check_range(got: &Value, range: &RandomRange, tol: Tolerance) -> Result<(), Mismatch> {
    let (Value::Tensor(t), false) = (got, *range == RandomRange::Any) else { return Ok(()) };
    let fail = |kind| Err(Mismatch { location: String::new(), kind });
    let values = match t.to_aligned().to_f64_vec() {
        Ok(v) => v,
        Err(e) => return fail(MismatchKind::Unreadable(e.to_string())),
    };
    let (ok, expected): (Box<dyn Fn(f64) -> bool>, String) = match range {
        RandomRange::Any => return Ok(()),
        RandomRange::Between(lo, hi) => {
            // Slack for outputs rounded to a narrower float type than the attributes.
            let slack = tol.allowed(lo.abs().max(hi.abs()));
            let (lo, hi) = (*lo, *hi);
            (Box::new(move |v| v >= lo - slack && v <= hi + slack), format!("[{lo}, {hi}]"))
        }
        RandomRange::Finite => (Box::new(f64::is_finite), "finite values".into()),
        RandomRange::ZeroOrOne => (Box::new(|v| v == 0.0 || v == 1.0), "{0, 1}".into()),
        RandomRange::Index(classes) => {
            let classes = *classes;
            let bound = classes.map(|c| c.to_string()).unwrap_or_else(|| "∞".into());
            (
                Box::new(move |v| v >= 0.0 && v.fract() == 0.0 && classes.is_none_or(|c| v < c as f64)),
                format!("[0, {bound})"),
            )
        }
    };
    let bad: Vec<usize> = values.iter().enumerate().filter(|(_, v)| !ok(**v)).map(|(i, _)| i).collect();
    match bad.first() {
        None => Ok(()),
        Some(&flat) => fail(MismatchKind::OutOfRange(Box::new(RangeMismatch {
            flat,
            index: compare::unravel(flat, t.shape()),
            got: show_element(t, values[flat]),
            expected,
            failing: bad.len(),
            total: values.len(),
        }))),
    }
}

fn show_element(t: &Tensor, v: f64) -> String {
    if t.dtype() == vinort_ir::DType::F64 { format!("{v}") } else { format!("{}", v as f32) }
}

/// One line for a case: `PASS test_abs`, `FAIL test_x: output 0 element ...`,
/// `ERROR test_y: <first line of the message>`, `SKIP test_z: <reason>`. A note is appended
/// in parentheses.
pub fn format_line(o: &CaseOutcome) -> String {
    let first = |s: &str| s.lines().next().unwrap_or("").to_owned();
    let mut line = match &o.status {
        Status::Pass => format!("PASS {}", o.name),
        Status::Fail(d) => format!("FAIL {}: {}", o.name, first(d)),
        Status::Error(m) => format!("ERROR {}: {}", o.name, first(m)),
        Status::Skip(r) => format!("SKIP {}: {}", o.name, first(r)),
    };
    if let Some(note) = &o.note {
        line.push_str(&format!(" ({note})"));
    }
    line
}

/// `N passed, M failed` (failures and errors), with `, K skipped` when any were skipped.
pub fn summary_line(outcomes: &[CaseOutcome]) -> String {
    let count = |f: fn(&Status) -> bool| outcomes.iter().filter(|o| f(&o.status)).count();
    let passed = count(|s| matches!(s, Status::Pass));
    let failed = count(|s| matches!(s, Status::Fail(_) | Status::Error(_)));
    let skipped = count(|s| matches!(s, Status::Skip(_)));
    let mut line = format!("{passed} passed, {failed} failed");
    if skipped > 0 {
        line.push_str(&format!(", {skipped} skipped"));
    }
    line
}
