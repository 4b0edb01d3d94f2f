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

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use vinort::ir::stats;
use vinort::{Dim, Session, Value};

use vinort_tools::alloc_count::{self, HeapCounts};

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
    /// Providers in priority order, comma separated (openvino, cpu).
    #[arg(short = 'e', long, default_value = "openvino,cpu")]
    providers: String,
    /// OpenVINO options as "key|value key|value" (device_type, precision, num_streams...).
    #[arg(short = 'i', long, default_value = "")]
    options: String,
    /// Fail instead of skipping a provider that cannot start.
    #[arg(long)]
    strict: bool,
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
}

/// Runs `vinort perf`.
pub fn perf(a: &PerfArgs) -> Result<()> {
    check_args(a)?;
    let (model, data_set) = resolve_model(&a.model)?;
    let (session, creation_ms) = crate::build(&model, &a.providers, &a.options, a.strict)?;
    let Inputs { feeds, sources, notes } = make_inputs(&session, data_set.as_deref(), a)?;

    if !a.json {
        println!("model: {}", model.display());
        let opts = if a.options.trim().is_empty() { String::new() } else { format!(" (options: {})", a.options) };
        println!("providers: {}{opts}", a.providers);
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
    run_once(&session, &feeds).context("first inference")?;
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    if !a.json {
        println!("first inference: {first_ms:.3} ms");
    }
    // Warm-up runs concurrently so per-caller resources (OpenVINO creates infer requests on
    // demand, up to its pool size) exist before the measured phase.
    let mut typical_ms = first_ms;
    if a.warmup > 0 {
        let w = measure(&session, &feeds, Phase::RunsPerThread(a.warmup), a.concurrent, false, first_ms)
            .context("warm-up")?;
        typical_ms = w.latencies[w.latencies.len() / 2];
    }
    let phase = match a.mode {
        Mode::Times => Phase::Runs(a.runs),
        Mode::Duration => Phase::For(Duration::from_secs_f64(a.seconds)),
    };
    let progress = !a.json && !a.no_progress;
    let m = measure(&session, &feeds, phase, a.concurrent, progress, typical_ms)?;
    let peak = peak_memory_mib();
    let report =
        Report { a, model: &model, session: &session, sources: &sources, notes: &notes, creation_ms, first_ms };
    if a.json {
        println!("{}", report.json(&m, peak));
    } else {
        report.human(&m, peak);
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
    vinort::openvino::OpenVinoOptions::parse_cli(&a.options).map_err(|e| anyhow!("-i: {e}"))?;
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
    for info in session.inputs() {
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

/// What a measuring phase runs.
#[derive(Clone, Copy)]
enum Phase {
    /// This many runs, shared by the threads.
    Runs(usize),
    /// This many runs on each thread.
    RunsPerThread(usize),
    /// Runs on every thread until this long has passed.
    For(Duration),
}

fn run_once(session: &Session, feeds: &[(String, Value)]) -> Result<()> {
    // Values share their storage: a clone per run is a handle, not a copy of the data.
    session.run(feeds.iter().map(|(k, v)| (k.as_str(), v.clone())))?;
    Ok(())
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

/// What the measured phase produced.
struct Measured {
    /// Per-run latencies in ms, sorted.
    latencies: Vec<f64>,
    wall_s: f64,
    heap: HeapCounts,
    tensors: stats::Counts,
}

/// State shared by the measuring threads and the thread drawing progress.
struct Shared<'a> {
    session: &'a Session,
    feeds: &'a [(String, Value)],
    phase: Phase,
    /// Two rendezvous: every worker has reserved its buffers; then "go".
    barrier: Barrier,
    claimed: AtomicUsize,
    done: AtomicUsize,
    finished: AtomicUsize,
    abort: AtomicBool,
    main: Thread,
}

/// Marks a worker finished even when it panics, so the progress loop never waits forever.
struct Finished<'a, 'b>(&'a Shared<'b>);
impl Drop for Finished<'_, '_> {
    fn drop(&mut self) {
        self.0.finished.fetch_add(1, Ordering::Release);
        self.0.main.unpark();
    }
}

type WorkerResult = Result<(Vec<f64>, Instant, Instant), vinort::Error>;

fn worker(sh: &Shared<'_>, capacity: usize) -> WorkerResult {
    let _finished = Finished(sh);
    let mut latencies = Vec::with_capacity(capacity);
    sh.barrier.wait();
    sh.barrier.wait();
    let start = Instant::now();
    loop {
        if sh.abort.load(Ordering::Relaxed) {
            break;
        }
        let more = match sh.phase {
            Phase::Runs(n) => sh.claimed.fetch_add(1, Ordering::Relaxed) < n,
            Phase::RunsPerThread(n) => latencies.len() < n,
            Phase::For(d) => start.elapsed() < d,
        };
        if !more {
            break;
        }
        let t = Instant::now();
        let out = sh.session.run(sh.feeds.iter().map(|(k, v)| (k.as_str(), v.clone())));
        let ms = t.elapsed().as_secs_f64() * 1e3;
        match out {
            // Outputs are dropped outside the timed span, as a caller would use them first.
            Ok(out) => drop(out),
            Err(e) => {
                sh.abort.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        latencies.push(ms);
        sh.done.fetch_add(1, Ordering::Relaxed);
    }
    Ok((latencies, start, Instant::now()))
}

/// Runs `phase` on `c` threads sharing `session`. `typical_ms`, a latency seen before, sizes
/// the latency buffers of a timed phase.
fn measure(
    session: &Session,
    feeds: &[(String, Value)],
    phase: Phase,
    c: usize,
    progress: bool,
    typical_ms: f64,
) -> Result<Measured> {
    // Reserve the latency slots up front so the measured phase does not count our pushes;
    // past the reservation, growth is amortized and rare.
    const MAX_RESERVED: usize = 1 << 22;
    let capacity = match phase {
        // A thread may claim every run, but rarely does.
        Phase::Runs(n) => n.min((n / c).saturating_mul(2).saturating_add(64)),
        Phase::RunsPerThread(n) => n,
        // Generously: runs get faster once warm.
        Phase::For(d) => (d.as_secs_f64() * 1e3 / typical_ms.max(1e-3) * 2.0 + 64.0).min(MAX_RESERVED as f64) as usize,
    }
    .min(MAX_RESERVED);
    let sh = Shared {
        session,
        feeds,
        phase,
        barrier: Barrier::new(c + 1),
        claimed: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        finished: AtomicUsize::new(0),
        abort: AtomicBool::new(false),
        main: thread::current(),
    };
    let mut bar = Progress { enabled: progress, phase, drawn: false, last: None };
    let (results, heap, tensors) = thread::scope(|s| {
        let handles: Vec<_> = (0..c).map(|_| s.spawn(|| worker(&sh, capacity))).collect();
        let mut results: Vec<thread::Result<WorkerResult>> = Vec::with_capacity(c);
        sh.barrier.wait();
        let (heap0, tensors0) = (alloc_count::snapshot(), stats::snapshot());
        sh.barrier.wait();
        let started = Instant::now();
        while sh.finished.load(Ordering::Acquire) < c {
            // Woken by a finishing worker, else every 100 ms: at most ~10 redraws a second.
            thread::park_timeout(Duration::from_millis(100));
            bar.tick(started.elapsed(), sh.done.load(Ordering::Relaxed));
        }
        results.extend(handles.into_iter().map(|h| h.join()));
        let counts = (alloc_count::snapshot().since(&heap0), stats::snapshot().since(&tensors0));
        bar.finish(started.elapsed(), sh.done.load(Ordering::Relaxed));
        (results, counts.0, counts.1)
    });
    let mut latencies = Vec::with_capacity(sh.done.load(Ordering::Relaxed));
    let mut span: Option<(Instant, Instant)> = None;
    for r in results {
        let (lat, start, end) = r
            .map_err(|p| anyhow!("an inference thread panicked: {}", panic_message(p.as_ref())))?
            .context("an inference run failed")?;
        latencies.extend(lat);
        span = Some(span.map_or((start, end), |(s, e)| (s.min(start), e.max(end))));
    }
    if latencies.is_empty() {
        bail!("no measured run completed");
    }
    latencies.sort_by(f64::total_cmp);
    let wall_s = span.map_or(0.0, |(s, e)| e.duration_since(s).as_secs_f64());
    Ok(Measured { latencies, wall_s, heap, tensors })
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(no message)"
    }
}

/// A one-line bar on stderr, drawn only once the phase has lasted a second. Formats on the
/// stack: it runs during the measured phase, whose heap allocations are being counted.
struct Progress {
    enabled: bool,
    phase: Phase,
    drawn: bool,
    last: Option<Duration>,
}

const BAR_WIDTH: usize = 30;

impl Progress {
    fn tick(&mut self, elapsed: Duration, done: usize) {
        if !self.enabled || elapsed < Duration::from_secs(1) {
            return;
        }
        if self.last.is_some_and(|l| elapsed - l < Duration::from_millis(95)) {
            return;
        }
        self.last = Some(elapsed);
        self.draw(elapsed, done);
    }

    /// Draws the final state and ends the line, if a bar was shown at all.
    fn finish(&mut self, elapsed: Duration, done: usize) {
        if self.drawn {
            self.draw_as(elapsed, done, true);
            let _ = std::io::stderr().write_all(b"\n");
        }
    }

    fn draw(&mut self, elapsed: Duration, done: usize) {
        self.draw_as(elapsed, done, false);
    }

    /// Draws the bar; `finished` marks a duration-mode phase that ran its full time (the last
    /// run may have been timed a hair before the deadline, which would read 99%).
    fn draw_as(&mut self, elapsed: Duration, done: usize, finished: bool) {
        let (total, duration) = match self.phase {
            Phase::Runs(n) | Phase::RunsPerThread(n) => (Some(n), None),
            Phase::For(d) => (None, Some(d.as_secs_f64())),
        };
        let fraction = match (total, duration) {
            (Some(n), _) => done as f64 / n.max(1) as f64,
            (None, _) if finished => 1.0,
            (None, d) => elapsed.as_secs_f64() / d.unwrap_or(1.0).max(1e-9),
        }
        .clamp(0.0, 1.0);
        let filled = (fraction * BAR_WIDTH as f64).round() as usize;
        let mut buf = [0u8; 128];
        let mut w = std::io::Cursor::new(&mut buf[..]);
        let mut line = [b'.'; BAR_WIDTH];
        line[..filled].fill(b'#');
        let _ = w.write_all(b"\r[");
        let _ = w.write_all(&line);
        let pct = (fraction * 100.0).floor();
        let secs = elapsed.as_secs_f64();
        let _ = match (total, duration) {
            (Some(n), _) => write!(w, "] {pct:.0}% {done}/{n} runs {secs:.1}s"),
            (None, d) => write!(w, "] {pct:.0}% {done} runs {secs:.1}/{:.1}s", d.unwrap_or(0.0)),
        };
        let n = w.position() as usize;
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(&buf[..n]);
        let _ = err.flush();
        self.drawn = true;
    }
}

/// Latency statistics in ms.
struct Latency {
    min: f64,
    median: f64,
    p90: f64,
    p99: f64,
    max: f64,
    mean: f64,
}

impl Latency {
    /// From sorted, non-empty latencies. Percentiles are nearest-rank, so every figure is a
    /// latency that was measured and the figures are ordered.
    fn of(sorted: &[f64]) -> Latency {
        let n = sorted.len();
        let pct = |p: f64| sorted[((p / 100.0 * n as f64).ceil() as usize).clamp(1, n) - 1];
        Latency {
            min: sorted[0],
            median: pct(50.0),
            p90: pct(90.0),
            p99: pct(99.0),
            max: sorted[n - 1],
            mean: sorted.iter().sum::<f64>() / n as f64,
        }
    }
}

/// Peak resident set size (VmHWM), in MiB; `None` where /proc is not readable.
fn peak_memory_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib / 1024.0)
}

struct Report<'a> {
    a: &'a PerfArgs,
    model: &'a Path,
    session: &'a Session,
    sources: &'a [(String, String)],
    notes: &'a [String],
    creation_ms: f64,
    first_ms: f64,
}

/// Per-inference averages of the measured phase.
struct PerRun {
    heap_allocs: f64,
    heap_bytes: f64,
    tensor_buffers: f64,
    tensor_buffer_bytes: f64,
    tensor_copies: f64,
    tensor_copy_bytes: f64,
    tensor_reuses: f64,
}

impl PerRun {
    fn of(m: &Measured) -> PerRun {
        let n = m.latencies.len() as f64;
        PerRun {
            heap_allocs: m.heap.allocs as f64 / n,
            heap_bytes: m.heap.bytes as f64 / n,
            tensor_buffers: m.tensors.tensor_allocs as f64 / n,
            tensor_buffer_bytes: m.tensors.tensor_alloc_bytes as f64 / n,
            tensor_copies: m.tensors.tensor_copies as f64 / n,
            tensor_copy_bytes: m.tensors.tensor_copy_bytes as f64 / n,
            tensor_reuses: m.tensors.tensor_reuses as f64 / n,
        }
    }
}

fn throughput(m: &Measured) -> f64 {
    if m.wall_s > 0.0 { m.latencies.len() as f64 / m.wall_s } else { f64::NAN }
}

impl Report<'_> {
    fn human(&self, m: &Measured, peak: Option<f64>) {
        let a = self.a;
        let l = Latency::of(&m.latencies);
        let per = PerRun::of(m);
        println!("warm-up: {} run(s) per thread", a.warmup);
        let wall = if m.wall_s >= 1.0 { format!("{:.3} s", m.wall_s) } else { format!("{:.1} ms", m.wall_s * 1e3) };
        println!(
            "measured: {} run(s) in {wall} ({} mode, {} thread(s))",
            m.latencies.len(),
            a.mode.name(),
            a.concurrent
        );
        println!(
            "latency (ms): min {:.3} median {:.3} p90 {:.3} p99 {:.3} max {:.3} mean {:.3}",
            l.min, l.median, l.p90, l.p99, l.max, l.mean
        );
        println!("throughput: {:.1} inferences/s", throughput(m));
        match peak {
            Some(mib) => println!("peak memory: {mib:.1} MiB"),
            None => println!("peak memory: unavailable"),
        }
        println!(
            "per inference: {:.1} heap allocations ({:.0} bytes), {:.1} tensor buffers allocated ({:.0} bytes), {:.1} reused from the buffer pool, {:.1} tensor copies ({:.0} bytes)",
            per.heap_allocs,
            per.heap_bytes,
            per.tensor_buffers,
            per.tensor_buffer_bytes,
            per.tensor_reuses,
            per.tensor_copies,
            per.tensor_copy_bytes
        );
        if self.session.plan().partitions.iter().any(|p| p.provider.starts_with("OpenVino")) {
            println!("note: heap allocations count Rust allocations only, not OpenVINO's own");
        }
    }

    fn json(&self, m: &Measured, peak: Option<f64>) -> String {
        let a = self.a;
        let l = Latency::of(&m.latencies);
        let per = PerRun::of(m);
        let plan = self.session.plan();
        let providers = json_list(a.providers.split(',').map(|p| p.trim().to_ascii_lowercase()));
        // Already validated by `OpenVinoOptions::parse_cli`: whitespace-separated `key|value`.
        let options: Vec<String> = a
            .options
            .split_whitespace()
            .filter_map(|t| t.split_once('|'))
            .map(|(k, v)| format!("{}: {}", json_str(k), json_str(v)))
            .collect();
        let partitions: Vec<String> = plan
            .partitions
            .iter()
            .map(|p| format!("{{\"provider\": {}, \"nodes\": {}}}", json_str(&p.provider), p.nodes.len()))
            .collect();
        let inputs: Vec<String> = self
            .sources
            .iter()
            .map(|(n, s)| format!("{{\"name\": {}, \"source\": {}}}", json_str(n), json_str(s)))
            .collect();
        let mut o = String::from("{");
        let mut field = |k: &str, v: String| {
            if o.len() > 1 {
                o.push_str(", ");
            }
            let _ = write!(o, "{}: {v}", json_str(k));
        };
        field("model", json_str(&self.model.display().to_string()));
        field("providers", providers);
        field("options", format!("{{{}}}", options.join(", ")));
        field("strict", a.strict.to_string());
        field("mode", json_str(a.mode.name()));
        field("runs", m.latencies.len().to_string());
        field("duration_s", if a.mode == Mode::Duration { json_num(a.seconds) } else { "null".into() });
        field("concurrency", a.concurrent.to_string());
        field("warmup_per_thread", a.warmup.to_string());
        field("partitions", format!("[{}]", partitions.join(", ")));
        field("warnings", json_list(&plan.warnings));
        field("inputs", format!("[{}]", inputs.join(", ")));
        field("notes", json_list(self.notes));
        field("session_creation_ms", json_num(self.creation_ms));
        field("first_inference_ms", json_num(self.first_ms));
        field(
            "latency_ms",
            format!(
                "{{\"min\": {}, \"median\": {}, \"p90\": {}, \"p99\": {}, \"max\": {}, \"mean\": {}}}",
                json_num(l.min),
                json_num(l.median),
                json_num(l.p90),
                json_num(l.p99),
                json_num(l.max),
                json_num(l.mean)
            ),
        );
        field("wall_time_ms", json_num(m.wall_s * 1e3));
        field("throughput_per_s", json_num(throughput(m)));
        field("peak_memory_mib", peak.map_or("null".into(), json_num));
        field(
            "per_inference",
            format!(
                "{{\"heap_allocations\": {}, \"heap_bytes\": {}, \"tensor_buffers\": {}, \"tensor_buffer_bytes\": {}, \"tensor_copies\": {}, \"tensor_copy_bytes\": {}, \"tensor_buffers_reused\": {}}}",
                json_num(per.heap_allocs),
                json_num(per.heap_bytes),
                json_num(per.tensor_buffers),
                json_num(per.tensor_buffer_bytes),
                json_num(per.tensor_copies),
                json_num(per.tensor_copy_bytes),
                json_num(per.tensor_reuses)
            ),
        );
        o.push('}');
        o
    }
}

/// A JSON string literal: quotes, backslashes and control characters escaped.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON array of strings.
fn json_list<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let items: Vec<String> = items.into_iter().map(|s| json_str(s.as_ref())).collect();
    format!("[{}]", items.join(", "))
}

/// A JSON number, to 6 decimals (`null` for NaN and infinities, which JSON cannot express).
/// Rust prints floats without exponents, which JSON accepts.
fn json_num(x: f64) -> String {
    if !x.is_finite() {
        "null".into()
    } else if x.abs() < 1e9 {
        format!("{}", (x * 1e6).round() / 1e6)
    } else {
        format!("{}", x.round())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_str("a\"b\\c\nd\u{1}é"), "\"a\\\"b\\\\c\\nd\\u0001é\"");
    }

    #[test]
    fn json_numbers_are_plain_or_null() {
        assert_eq!(json_num(1.5), "1.5");
        assert_eq!(json_num(1e-7), "0");
        assert_eq!(json_num(0.0012345678), "0.001235");
        assert_eq!(json_num(12345678901.7), "12345678902");
        assert_eq!(json_num(3.0), "3");
        assert_eq!(json_num(f64::NAN), "null");
        assert_eq!(json_num(f64::INFINITY), "null");
    }

    #[test]
    fn nearest_rank_percentiles_are_ordered_samples() {
        let v: Vec<f64> = (1..=200).map(f64::from).collect();
        let l = Latency::of(&v);
        assert_eq!((l.min, l.median, l.p90, l.p99, l.max), (1.0, 100.0, 180.0, 198.0, 200.0));
        let one = Latency::of(&[4.0]);
        assert_eq!((one.min, one.median, one.p99, one.max, one.mean), (4.0, 4.0, 4.0, 4.0, 4.0));
    }
}
