//! The measuring phases of `vinort perf`: `-c` threads sharing one session, run counts or a
//! deadline, heap and tensor counters read around the phase, and the progress bar.

use std::io::Write as _;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use vinort::ir::stats;
use vinort::{DType, RunOptions, Session, Value};
use vinort_tools::alloc_count::{self, HeapCounts};

/// What a measuring phase runs.
#[derive(Clone, Copy)]
pub(super) enum Phase {
    /// This many runs, shared by the threads.
    Runs(usize),
    /// This many runs on each thread.
    RunsPerThread(usize),
    /// Runs on every thread until this long has passed.
    For(Duration),
}

/// What the measured phase produced.
pub(super) struct Measured {
    /// Per-run latencies in ms, sorted.
    pub latencies: Vec<f64>,
    pub wall_s: f64,
    pub heap: HeapCounts,
    pub tensors: stats::Counts,
}

/// A tensor output's name, element type and shape, bound with `--bind`.
pub(super) type OutputSpec = (String, DType, Vec<usize>);

/// State shared by the measuring threads and the thread drawing progress.
struct Shared<'a> {
    session: &'a Session,
    feeds: &'a [(String, Value)],
    bound: Option<&'a [OutputSpec]>,
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
    // --bind: this thread's output buffers (u64 words, so aligned for every element type) and
    // its binding, made before the measured phase starts.
    let specs = sh.bound.unwrap_or(&[]);
    let mut buffers: Vec<Vec<u64>> = specs
        .iter()
        .map(|(_, d, shape)| vec![0u64; (shape.iter().product::<usize>() * d.size()).div_ceil(8)])
        .collect();
    let binding = sh.bound.map(|_| bind(sh, specs, &mut buffers));
    let options = RunOptions::new();
    sh.barrier.wait();
    sh.barrier.wait();
    // A binding that failed is reported after the rendezvous, which every thread must reach.
    let mut binding = match binding {
        Some(Err(e)) => {
            sh.abort.store(true, Ordering::Relaxed);
            return Err(e);
        }
        Some(Ok(b)) => Some(b),
        None => None,
    };
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
        let out = match &mut binding {
            Some(b) => sh.session.run_with(b, &options).map(|()| None),
            None => sh.session.run(sh.feeds.iter().map(|(k, v)| (k.as_str(), v.clone()))).map(Some),
        };
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

/// A binding of the feeds and of `buffers`, one per spec.
fn bind<'a>(
    sh: &Shared<'_>,
    specs: &[OutputSpec],
    buffers: &'a mut [Vec<u64>],
) -> Result<vinort::Binding<'a>, vinort::Error> {
    let mut b = sh.session.binding();
    for (name, v) in sh.feeds {
        b.bind_input(name, v.clone())?;
    }
    for ((name, dtype, shape), buf) in specs.iter().zip(buffers.iter_mut()) {
        let bytes = shape.iter().product::<usize>() * dtype.size();
        let words: &'a mut [u64] = buf.as_mut_slice();
        // SAFETY: a u64 buffer of at least `bytes` bytes viewed as bytes, borrowed exclusively for 'a.
        let view = unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), bytes) };
        b.bind_output_bytes(name, *dtype, shape, view)?;
    }
    Ok(b)
}

/// Runs `phase` on `c` threads sharing `session`. `typical_ms`, a latency seen before, sizes
/// the latency buffers of a timed phase.
pub(super) fn measure(
    session: &Session,
    feeds: &[(String, Value)],
    bound: Option<&[OutputSpec]>,
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
        bound,
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
