//! `vinort perf`: the counterpart of `onnxruntime_perf_test`.
//!
//! Phases, each measured on its own: session creation (load + partition + compile), the
//! first inference (lazy compilation and first-touch costs show up here), warm-up runs on
//! every thread at once (not measured), then the measured runs — a fixed number (`-m times -r N`) or for a time
//! (`-m duration -t S`), on `-c` threads sharing one session. The measured phase reports a
//! latency distribution, throughput, peak memory and per-inference counts of heap
//! allocations, tensor buffers and tensor copies.
//!
//! The measured phase is kept free of the tool's own heap allocations (latency buffers are
//! reserved beforehand, the progress bar is formatted on the stack) so the counts are the
//! inference's, not the harness's.

mod measure;
mod report;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use vinort::{Dim, Session, Value};
use vinort_tools::providers::ProviderArgs;
use vinort_tools::stats;

use measure::{Phase, measure};
use report::Report;

/// How long the measured phase runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// A fixed number of runs (`-r`).
    Times,
    /// Until `-t` seconds have passed.
    Duration,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Times => "times",
            Mode::Duration => "duration",
        }
    }
}

/// `vinort perf` arguments.
#[derive(clap::Args)]
pub struct PerfArgs {
    /// A model file, or a folder in the ONNX test layout (model.onnx and, optionally,
    /// test_data_set_0/input_K.pb used as inputs).
    model: PathBuf,
    #[command(flatten)]
    providers: ProviderArgs,
    /// Measure a number of runs (-r) or a duration (-t).
    #[arg(short = 'm', long, value_enum, default_value_t = Mode::Times)]
    mode: Mode,
    /// Measured runs in `times` mode, shared by all threads.
    #[arg(short = 'r', long, default_value_t = 100)]
    runs: usize,
    /// Seconds to measure in `duration` mode.
    #[arg(short = 't', long = "time", value_name = "SECONDS", default_value_t = 10.0)]
    seconds: f64,
    /// Threads running inferences at the same time on the one session.
    #[arg(short = 'c', long, default_value_t = 1)]
    concurrent: usize,
    /// Warm-up runs per thread after the first inference, all threads at once; not measured.
    #[arg(short = 'w', long, default_value_t = 5)]
    warmup: usize,
    /// Print one JSON object instead of the summary (and no progress bar).
    #[arg(long)]
    json: bool,
    /// No progress bar on stderr.
    #[arg(long)]
    no_progress: bool,
    /// An input from a TensorProto file: NAME=PATH (repeatable). It wins over test data.
    #[arg(long = "input", value_name = "NAME=PATH")]
    inputs: Vec<String>,
    /// Value for a symbolic dimension of random inputs: NAME=N (repeatable; default 1).
    #[arg(long = "dim", value_name = "NAME=N")]
    dims: Vec<String>,
    /// Seed for random inputs.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// I/O binding (`Session::run_with`): each thread binds the inputs once and writes the
    /// tensor outputs into buffers of its own made before measuring.
    #[arg(long)]
    bind: bool,
    /// Profile the session (onnxruntime_perf_test's -p): a Chrome trace of every run, its
    /// partitions and the Cpu partitions' kernels, written to `<PREFIX>_<time>.json`.
    #[arg(short = 'p', long, value_name = "PREFIX")]
    profile: Option<PathBuf>,
}

/// Runs `vinort perf`.
pub fn perf(a: &PerfArgs) -> Result<()> {
    check_args(a)?;
    let (model, data_set) = resolve_model(&a.model)?;
    let (session, creation_ms) = crate::build_profiled(&model, &a.providers, a.profile.as_deref())?;
    let Inputs { feeds, sources, notes } = make_inputs(&session, data_set.as_deref(), a)?;

    if !a.json {
        println!("model: {}", model.display());
        let (list, options) = (&a.providers.providers, &a.providers.options);
        let opts = if options.trim().is_empty() { String::new() } else { format!(" (options: {options})") };
        println!("providers: {list}{opts}");
        print_plan(&session);
        for (name, source) in &sources {
            println!("input '{name}': {source}");
        }
        for n in &notes {
            println!("note: {n}");
        }
        println!("session creation: {creation_ms:.1} ms");
    }

    let t = Instant::now();
    let outputs = run_once(&session, &feeds).context("first inference")?;
    let first_ms = stats::ms(t.elapsed());
    // With --bind: each tensor output's type and shape, for the threads' buffers.
    let bound: Option<Vec<measure::OutputSpec>> = a.bind.then(|| {
        outputs
            .iter()
            .filter_map(|(name, v)| v.as_tensor().ok().map(|t| (name.to_owned(), t.dtype(), t.shape().to_vec())))
            .collect()
    });
    let bound = bound.as_deref();
    if !a.json {
        println!("first inference: {first_ms:.3} ms");
    }
    // Warm-up runs concurrently so per-caller resources (OpenVINO creates infer requests on
    // demand, up to its pool size) exist before the measured phase.
    let mut typical_ms = first_ms;
    if a.warmup > 0 {
        let w = measure(&session, &feeds, bound, Phase::RunsPerThread(a.warmup), a.concurrent, false, first_ms)
            .context("warm-up")?;
        typical_ms = w.latencies[w.latencies.len() / 2];
    }
    let phase = match a.mode {
        Mode::Times => Phase::Runs(a.runs),
        Mode::Duration => Phase::For(Duration::from_secs_f64(a.seconds)),
    };
    let progress = !a.json && !a.no_progress;
    let m = measure(&session, &feeds, bound, phase, a.concurrent, progress, typical_ms)?;
    let peak = peak_memory_mib();
    let report =
        Report { a, model: &model, session: &session, sources: &sources, notes: &notes, creation_ms, first_ms };
    if a.json {
        println!("{}", report.json(&m, peak));
    } else {
        report.human(&m, peak);
    }
    if a.profile.is_some() {
        let trace = session.end_profiling().context("writing the profile")?;
        // On stderr with --json, so stdout stays one JSON object.
        if a.json { eprintln!("profile: {}", trace.display()) } else { println!("profile: {}", trace.display()) }
    }
    Ok(())
}

fn check_args(a: &PerfArgs) -> Result<()> {
    if a.mode == Mode::Times && a.runs == 0 {
        bail!("-r/--runs must be at least 1");
    }
    if a.mode == Mode::Duration && !(a.seconds.is_finite() && a.seconds > 0.0) {
        bail!("-t/--time must be a positive number of seconds (got {})", a.seconds);
    }
    if a.mode == Mode::Duration && a.seconds > 1e9 {
        bail!("-t/--time is too large (got {} s)", a.seconds);
    }
    if a.concurrent == 0 {
        bail!("-c/--concurrent must be at least 1");
    }
    // Checked even when OpenVINO is not in -e, so a typo never goes unnoticed.
    a.providers.check_options().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}

/// The model file, and the data set folder whose `input_K.pb` feed it (for a test-case folder).
fn resolve_model(path: &Path) -> Result<(PathBuf, Option<PathBuf>)> {
    if path.is_dir() {
        let model = path.join("model.onnx");
        if !model.is_file() {
            bail!(
                "'{}' is a folder without model.onnx (expected a model file or an ONNX test-case folder)",
                path.display()
            );
        }
        let data = path.join("test_data_set_0");
        return Ok((model, data.is_dir().then_some(data)));
    }
    if !path.is_file() {
        bail!("model '{}' does not exist", path.display());
    }
    Ok((path.to_owned(), None))
}

/// The values fed to every run.
struct Inputs {
    feeds: Vec<(String, Value)>,
    /// Per input: its name, type and where it came from.
    sources: Vec<(String, String)>,
    /// Guesses made (symbolic dimensions set to 1).
    notes: Vec<String>,
}

fn make_inputs(session: &Session, data_set: Option<&Path>, a: &PerfArgs) -> Result<Inputs> {
    let dims: Vec<(String, usize)> = a
        .dims
        .iter()
        .map(|d| {
            let (k, v) = d.split_once('=').with_context(|| format!("--dim wants NAME=N, got '{d}'"))?;
            Ok((k.to_owned(), v.parse().with_context(|| format!("--dim {k}: '{v}' is not a number"))?))
        })
        .collect::<Result<_>>()?;
    let mut given: Vec<(String, Value, String)> = vec![];
    for spec in &a.inputs {
        let (k, p) = spec.split_once('=').with_context(|| format!("--input wants NAME=PATH, got '{spec}'"))?;
        if !session.inputs().iter().any(|i| i.name == k) {
            let known: Vec<&str> = session.inputs().iter().map(|i| i.name.as_str()).collect();
            bail!("--input {k}: the model has no such input (its inputs: {})", known.join(", "));
        }
        given.push((k.to_owned(), Value::Tensor(crate::load_pb(Path::new(p))?), format!("from {p}")));
    }
    if let Some(dir) = data_set {
        for (k, info) in session.inputs().iter().enumerate() {
            let p = dir.join(format!("input_{k}.pb"));
            if p.is_file() && !given.iter().any(|(n, ..)| *n == info.name) {
                let v = vinort_tools::testcase::read_value(&p, &info.ty)?;
                given.push((info.name.clone(), v, format!("from {}", p.display())));
            }
        }
    }
    let mut notes = vec![];
    let mut rng = crate::Rng(a.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    // An overridable initializer not given keeps its initializer.
    for info in session.inputs().iter().filter(|i| i.required()) {
        if given.iter().any(|(n, ..)| *n == info.name) {
            continue;
        }
        for (i, d) in info.ty.tensor_shape().unwrap_or_default().iter().enumerate() {
            match d {
                Dim::Symbol(s) if !dims.iter().any(|(k, _)| k == s) => {
                    notes.push(format!("input '{}': symbolic dimension '{s}' set to 1 (use --dim {s}=N)", info.name))
                }
                Dim::Unknown => notes.push(format!("input '{}': unknown dimension {i} set to 1", info.name)),
                _ => {}
            }
        }
        let t = crate::random_input(info, &dims, &mut rng)?;
        given.push((info.name.clone(), Value::Tensor(t), format!("random (seed {})", a.seed)));
    }
    given.sort_by_key(|(n, ..)| session.inputs().iter().position(|i| i.name == *n));
    let mut feeds = Vec::with_capacity(given.len());
    let mut sources = Vec::with_capacity(given.len());
    for (name, v, from) in given {
        sources.push((name.clone(), format!("{} {from}", describe(&v))));
        feeds.push((name, v));
    }
    Ok(Inputs { feeds, sources, notes })
}

fn describe(v: &Value) -> String {
    match v {
        Value::Tensor(t) => format!("{} {:?}", t.dtype(), t.shape()),
        other => other.value_type().to_string(),
    }
}

fn run_once(session: &Session, feeds: &[(String, Value)]) -> Result<vinort::Outputs> {
    // Values share their storage: a clone per run is a handle, not a copy of the data.
    Ok(session.run(feeds.iter().map(|(k, v)| (k.as_str(), v.clone())))?)
}

fn print_plan(session: &Session) {
    let plan = session.plan();
    for w in &plan.warnings {
        println!("warning: {w}");
    }
    println!("partitions: {}", plan.partitions.len());
    for (i, p) in plan.partitions.iter().enumerate() {
        println!("  [{i}] {}: {} node(s)", p.provider, p.nodes.len());
    }
}

/// Peak resident set size (VmHWM), in MiB; `None` where /proc is not readable.
fn peak_memory_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib / 1024.0)
}
