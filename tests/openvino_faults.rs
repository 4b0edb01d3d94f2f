//! OpenVINO failing under a session: a partition that fails to compile in the middle of a
//! split plan, a device that fails while running, damaged files in `cache_dir`, and a cache
//! folder that cannot be written. Each has one clear outcome: the plan says what happened and
//! the outputs stay right, or the run is a typed error and the session runs again.
//! (A wrong `libopenvino_c` is tested in crates/vinort-cli/tests/openvino_library.rs: the
//! library is loaded once per process.)
//!
//! Tests of split plans build with `cost_model(false)`: their models are far too small for an
//! OpenVINO partition to pay for its hand-off, and the cost model would run them on Cpu alone.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::*;
use vinort::ir::{Capability, CompiledPartition, ExecutionProvider, NodeIndex, PartitionDef, RunContext};
use vinort::openvino::{OpenVinoOptions, OpenVinoProvider, Precision};
use vinort::{Cpu, Model, OpenVino, Provider, Runtime, Session, Value};

/// The OpenVINO provider with faults switched on from the test: compiling a partition that
/// holds the node `fail_compile` fails as a device error would, and while `fail_runs` is set
/// every run does.
#[derive(Debug)]
struct Faulty {
    inner: OpenVinoProvider,
    fail_compile: Option<String>,
    fail_runs: Arc<AtomicBool>,
}

struct FaultyRun {
    inner: Box<dyn CompiledPartition>,
    fail: Arc<AtomicBool>,
}

impl CompiledPartition for FaultyRun {
    fn run(&self, inputs: &[&Value], ctx: &RunContext) -> vinort::ir::Result<Vec<Value>> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(vinort::ir::Error::provider("OpenVINO", None, "device CPU was removed (injected)"));
        }
        self.inner.run(inputs, ctx)
    }
}

impl ExecutionProvider for Faulty {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn start(&self) -> vinort::ir::Result<()> {
        self.inner.start()
    }
    fn capability(&self, m: &Model, offered: &[NodeIndex]) -> vinort::ir::Result<Capability> {
        self.inner.capability(m, offered)
    }
    fn compile(&self, m: &Model, p: &PartitionDef) -> vinort::ir::Result<Box<dyn CompiledPartition>> {
        if let Some(name) = &self.fail_compile
            && p.nodes.iter().any(|n| m.graph.node(*n).name == *name)
        {
            return Err(vinort::ir::Error::provider("OpenVINO", None, "compile_model: device lost (injected)"));
        }
        Ok(Box::new(FaultyRun { inner: self.inner.compile(m, p)?, fail: self.fail_runs.clone() }))
    }
}

fn faulty(fail_compile: Option<&str>) -> (Faulty, Arc<AtomicBool>) {
    let fail_runs = Arc::new(AtomicBool::new(false));
    let inner = OpenVinoProvider::new(OpenVinoOptions::default().precision(Precision::Fp32), None);
    (Faulty { inner, fail_compile: fail_compile.map(str::to_owned), fail_runs: fail_runs.clone() }, fail_runs)
}

fn cnn(first: Provider) -> Session {
    Runtime::load(model_dir("partition_cnn").join("model.onnx"))
        .unwrap()
        .providers([first, Cpu::default().into()])
        .cost_model(false)
        .build()
        .unwrap()
}

#[test]
fn a_partition_that_fails_to_compile_mid_plan_goes_to_cpu_with_the_reason() {
    // The healthy split: OpenVINO, Cpu (the node OpenVINO gets wrong), OpenVINO.
    let healthy = cnn(Provider::new(faulty(None).0).error_on_failure());
    let kinds: Vec<&str> = healthy.plan().partitions.iter().map(|p| p.provider.as_str()).collect();
    assert_eq!(kinds, ["OpenVino(CPU)", "Cpu", "OpenVino(CPU)"], "{}", healthy.plan());
    // The last partition fails to compile after the first one compiled.
    let last = healthy.plan().partitions[2].nodes.clone();
    let s = cnn(Provider::new(faulty(Some(&last[0])).0).error_on_failure());
    let plan = s.plan();
    let kinds: Vec<&str> = plan.partitions.iter().map(|p| p.provider.as_str()).collect();
    assert_eq!(kinds, ["OpenVino(CPU)", "Cpu"], "the failed partition joins the Cpu one: {plan}");
    for node in &last {
        let r = plan.refusals.iter().find(|r| r.node == *node).unwrap_or_else(|| panic!("{node} has a reason: {plan}"));
        assert!(
            r.reason.contains("failed to compile its partition") && r.reason.contains("device lost"),
            "{}",
            r.reason
        );
    }
    check_sample(&s, "partition_cnn");
}

#[test]
fn a_device_failing_while_running_is_an_error_and_the_session_runs_again() {
    let (p, fail_runs) = faulty(None);
    let s = cnn(Provider::new(p).error_on_failure());
    check_sample(&s, "partition_cnn");
    fail_runs.store(true, Ordering::SeqCst);
    let data = model_dir("partition_cnn").join("test_data_set_0");
    let inputs = read_pbs(&data, "input");
    let e = s.run(inputs.iter().map(|(n, t)| (n.as_str(), t))).expect_err("the run fails");
    let text = format!("{e:#}");
    assert!(text.contains("OpenVINO") && text.contains("was removed"), "{text}");
    fail_runs.store(false, Ordering::SeqCst);
    check_sample(&s, "partition_cnn");
}

fn cached(model: &str, dir: &Path) -> Session {
    Runtime::load(model_dir(model).join("model.onnx"))
        .unwrap()
        .providers([
            OpenVino::cpu().precision(Precision::Fp32).cache_dir(dir).error_on_failure(),
            Cpu::default().into(),
        ])
        .cost_model(false)
        .build()
        .unwrap()
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

fn openvino_details(s: &Session) -> Vec<String> {
    s.plan().partitions.iter().filter(|p| p.provider.starts_with("OpenVino")).map(|p| p.details.clone()).collect()
}

/// Flips one bit in the middle of the file, keeping its length (what OpenVINO does not notice).
fn flip_a_bit(path: &Path) {
    let mut perms = std::fs::metadata(path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(path, perms).unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn damaged_cache_blobs_are_compiled_anew_never_imported() {
    for model in ["mobilenetv2_tiny", "partition_cnn"] {
        let dir = tempfile::tempdir().unwrap();
        let cold = cached(model, dir.path());
        check_sample(&cold, model);
        let blobs = files(dir.path(), "blob");
        assert!(!blobs.is_empty(), "OpenVINO wrote its cache");
        for d in openvino_details(&cached(model, dir.path())) {
            assert!(d.contains("LOADED_FROM_CACHE=YES"), "warm: {d}");
        }
        // One bit flipped in every blob: measured, OpenVINO would import it and answer wrong.
        blobs.iter().for_each(|b| flip_a_bit(b));
        let after = cached(model, dir.path());
        for d in openvino_details(&after) {
            assert!(d.contains("was corrupted") && d.contains("LOADED_FROM_CACHE=NO"), "{model}: {d}");
        }
        check_sample(&after, model);
        for d in openvino_details(&cached(model, dir.path())) {
            assert!(d.contains("LOADED_FROM_CACHE=YES") && !d.contains("corrupted"), "rewritten: {d}");
        }
        // Cut short: compiled anew too.
        for b in files(dir.path(), "blob") {
            let f = std::fs::OpenOptions::new().write(true).open(&b).unwrap();
            f.set_len(f.metadata().unwrap().len() / 3).unwrap();
        }
        let after = cached(model, dir.path());
        for d in openvino_details(&after) {
            assert!(d.contains("LOADED_FROM_CACHE=NO"), "{model}: {d}");
        }
        check_sample(&after, model);
    }
}

#[test]
fn a_damaged_partition_file_is_written_anew_before_openvino_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    check_sample(&cached("partition_cnn", dir.path()), "partition_cnn");
    let parts = files(dir.path(), "onnx");
    assert_eq!(parts.len(), 2, "{parts:?}");
    let good: Vec<Vec<u8>> = parts.iter().map(|p| std::fs::read(p).unwrap()).collect();
    // Damaged weights in a file that still parses, and no blob to hide it: OpenVINO would
    // compile the damaged weights.
    files(dir.path(), "blob").iter().for_each(|b| std::fs::remove_file(b).unwrap());
    parts.iter().for_each(|p| flip_a_bit(p));
    let s = cached("partition_cnn", dir.path());
    check_sample(&s, "partition_cnn");
    for (p, good) in parts.iter().zip(&good) {
        assert_eq!(&std::fs::read(p).unwrap(), good, "{} written anew", p.display());
    }
}

#[test]
fn a_cache_folder_that_cannot_be_written_costs_the_cache_not_the_session() {
    // A folder below a regular file can be neither created nor written, for root too.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    for model in ["mobilenetv2_tiny", "partition_cnn"] {
        let s = cached(model, &file.join("cache"));
        let plan = s.plan();
        let w = plan.warnings.join("\n");
        assert!(w.contains("cache_dir") && w.contains("not usable") && w.contains("without a model cache"), "{w}");
        assert!(plan.refusals.is_empty() || model == "partition_cnn", "nothing refused for the cache: {plan}");
        assert!(plan.partitions.iter().any(|p| p.provider.starts_with("OpenVino")), "{plan}");
        check_sample(&s, model);
    }
}

/// Found by the 10,000-model black-box runs: a model input declared with 2^31 or 2^32 + 1
/// elements made OpenVINO's compile touch 16 GiB (22 s of system time; two side by side were
/// killed for memory), and Trilu of an empty int64[0, 2^31] grew to 24 GiB (OpenVINO builds
/// constants from the dims). Such nodes now stay with the Cpu provider, and the session builds
/// at once.
#[test]
fn static_tensors_past_the_memory_limit_never_reach_openvino() {
    let dir = repo().join("fuzz/regressions/blackbox");
    for name in ["static_16gib_weight_input", "static_16gib_axes_input", "trilu_empty_2pow31_dim"] {
        let t0 = std::time::Instant::now();
        let s = Runtime::load(dir.join(format!("{name}.onnx")))
            .unwrap()
            .providers([OpenVino::cpu().precision(Precision::Fp32).error_on_failure(), Cpu::default().into()])
            .memory_limit(1 << 30)
            .cost_model(false)
            .build()
            .unwrap();
        let plan = s.plan();
        assert!(
            plan.refusals.iter().any(|r| r.reason.contains("past the memory limit of 1073741824")),
            "{name}: {plan}"
        );
        assert!(t0.elapsed() < std::time::Duration::from_secs(10), "{name} took {:?}", t0.elapsed());
    }
}

/// A compile past the session's deadline is abandoned: its nodes are refused with a reason
/// naming the deadline and go to the next provider, and the session runs right.
#[test]
fn a_compile_past_its_deadline_is_refused_naming_the_deadline_and_cpu_runs_the_model() {
    let s = Runtime::load(model_dir("partition_cnn").join("model.onnx"))
        .unwrap()
        .providers([OpenVino::cpu().precision(Precision::Fp32).into(), Cpu::default().into()])
        .compile_timeout(std::time::Duration::from_nanos(1))
        .cost_model(false)
        .build()
        .unwrap();
    let plan = s.plan();
    assert!(plan.partitions.iter().all(|p| p.provider == "Cpu"), "{plan}");
    // Every node OpenVINO would have taken is refused for the deadline (the model's flattening
    // Softmax is refused before any compile, for its semantics).
    let by_deadline = plan.refusals.iter().filter(|r| r.reason.contains("compile deadline")).count();
    assert_eq!(by_deadline, plan.refusals.len() - 1, "{plan}");
    for r in plan.refusals.iter().filter(|r| r.reason.contains("compile deadline")) {
        assert!(r.reason.contains("did not finish within"), "{}", r.reason);
    }
    // A 1 ns deadline is also the build's whole budget: spent before OpenVINO's first call,
    // every call is refused without starting (none was waited for, none left running).
    assert!(plan.refusals.iter().any(|r| r.reason.contains("budget")), "{plan}");
    check_sample(&s, "partition_cnn");

    // No deadline (zero) and the default both compile it on OpenVINO.
    for limit in [Some(std::time::Duration::ZERO), None] {
        let b = Runtime::load(model_dir("partition_cnn").join("model.onnx"))
            .unwrap()
            .providers([OpenVino::cpu().precision(Precision::Fp32).into(), Cpu::default().into()]);
        let s = match limit {
            Some(l) => b.compile_timeout(l),
            None => b,
        }
        .cost_model(false)
        .build()
        .unwrap();
        assert!(s.plan().partitions.iter().any(|p| p.provider.starts_with("OpenVino")), "{}", s.plan());
        check_sample(&s, "partition_cnn");
    }
}
