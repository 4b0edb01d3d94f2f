//! `vinort-bench soak` and `vinort-bench stress`: the long-run measurements of
//! docs/reliability.md, run as a tool and reported, never as timed unit tests.
//!
//! * **soak**: builds and drops `--sessions` sessions (models and provider lists in turn),
//!   then runs `--inferences` inferences spread over one session per model and list, and
//!   samples the process's resident memory (RSS, `/proc/self/status`) after each tenth of
//!   each phase. Memory that a session or a run leaks shows as RSS that keeps growing; the
//!   report gives the samples and the growth from the first tenth (after warm-up) to the end.
//! * **stress**: one shared session per model and provider list, `--threads` threads for
//!   `--seconds`, each running a random session on one of several input variants (other
//!   values, and longer extents along symbolic dims). Every output is compared bit for bit
//!   with the same variant's output from a single-threaded run before the threads start. Any
//!   error or difference is counted and the first few are printed; RSS is sampled every second.
//!
//! Each prints its report and one JSON line, and fails (exit 1) on any error or difference.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use vinort::openvino::Precision;
use vinort::{Cpu, DType, Dim, OpenVino, Provider, Runtime, Session, Tensor, Value, ValueType};

/// The provider lists both commands cover by default.
pub const LISTS: &[&str] = &["cpu", "openvino,cpu"];

/// RSS after asking the allocators to return the free memory they keep to the system: what
/// is left is in use (or lost); the difference was free memory kept for reuse. The
/// allocators are glibc's (`malloc_trim`) and TBB's scalable allocator, which OpenVINO loads
/// (`libtbbmalloc`) and uses for its own objects (`scalable_allocation_command`, looked up
/// in the process, so nothing is linked against it).
pub fn trimmed_rss_kib() -> u64 {
    vinort::ir::heap::release_free_memory();
    rss_kib()
}

/// Parses `--lists` (`cpu;openvino,cpu`).
pub fn lists(text: &str) -> Result<Vec<String>> {
    let lists: Vec<String> = text.split(';').map(|l| l.trim().to_owned()).filter(|l| !l.is_empty()).collect();
    match lists.iter().find(|l| !LISTS.contains(&l.as_str())) {
        Some(bad) => bail!("unknown provider list '{bad}'; known: {}", LISTS.join(", ")),
        None if lists.is_empty() => bail!("--lists names no provider list"),
        None => Ok(lists),
    }
}

/// Resident memory of this process in KiB.
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn providers(list: &str) -> Vec<Provider> {
    match list {
        "cpu" => vec![Cpu::default().into()],
        _ => vec![OpenVino::cpu().precision(Precision::Fp32).error_on_failure(), Cpu::default().into()],
    }
}

fn build(model: &Path, list: &str) -> Result<Session> {
    let path = model.join("model.onnx");
    Ok(Runtime::load(&path)?.providers(providers(list)).build()?)
}

fn name_of(model: &Path) -> String {
    model.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// One set of inputs and the outputs a single-threaded run gave for them.
struct Variant {
    inputs: Vec<(String, Tensor)>,
    want: Vec<Value>,
}

/// A shared session with its input variants.
struct Case {
    label: String,
    session: Session,
    variants: Vec<Variant>,
}

/// `t` with `len` entries along `axis`, taken cyclically from its own (any element type but
/// strings).
fn resize_axis(t: &Tensor, axis: usize, len: usize) -> Result<Tensor> {
    let shape = t.shape().to_vec();
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product::<usize>() * t.dtype().size();
    let mut out_shape = shape.clone();
    out_shape[axis] = len;
    let bytes = t.as_bytes();
    Ok(Tensor::build_raw(t.dtype(), &out_shape, |out| {
        for o in 0..outer {
            for i in 0..len {
                let from = (o * shape[axis] + i % shape[axis]) * inner;
                let to = (o * len + i) * inner;
                out[to..to + inner].copy_from_slice(&bytes[from..from + inner]);
            }
        }
    })?)
}

/// Variant `k` of the test inputs: floats scaled and shifted by `k`, and for `k` odd every
/// symbolic or unknown dim of the inputs `k` longer (entries repeated cyclically).
fn variant(session: &Session, base: &[(String, Tensor)], k: usize) -> Result<Vec<(String, Tensor)>> {
    let mut out = vec![];
    for (name, t) in base {
        let mut t = t.clone();
        let info = session.inputs().iter().find(|i| i.name == *name);
        if k % 2 == 1
            && let Some(ValueType::Tensor(_, Some(dims))) = info.map(|i| &i.ty)
        {
            for (axis, d) in dims.iter().enumerate() {
                if matches!(d, Dim::Symbol(_) | Dim::Unknown) && t.shape().get(axis).is_some_and(|n| *n > 0) {
                    let len = t.shape()[axis] + k;
                    t = resize_axis(&t, axis, len)?;
                }
            }
        }
        if t.dtype() == DType::F32 {
            let scale = 1.0 + 0.05 * k as f32;
            let v: Vec<f32> = t.to_vec::<f32>()?.iter().map(|x| x * scale + 0.01 * k as f32).collect();
            t = Tensor::from_vec(t.shape(), v)?;
        }
        out.push((name.clone(), t));
    }
    Ok(out)
}

fn run(session: &Session, inputs: &[(String, Tensor)]) -> Result<Vec<Value>> {
    let out = session.run(inputs.iter().map(|(n, t)| (n.as_str(), t)))?;
    Ok((0..session.outputs().len()).map(|i| out[i].clone()).collect())
}

/// Bitwise equality of two outputs (NaN payloads included).
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_tensor(), b.as_tensor()) {
        (Ok(a), Ok(b)) => a.dtype() == b.dtype() && a.shape() == b.shape() && a.as_bytes() == b.as_bytes(),
        _ => format!("{a:?}") == format!("{b:?}"),
    }
}

/// Builds the shared cases: every model under every list, `variants` input variants each,
/// their expected outputs from single-threaded runs.
fn cases(models: &[PathBuf], lists: &[String], variants: usize) -> Result<Vec<Case>> {
    let mut out = vec![];
    for m in models {
        let base = crate::measure::inputs(m)?;
        for list in lists {
            let label = format!("{} [{list}]", name_of(m));
            let session = build(m, list).with_context(|| label.clone())?;
            let mut vs = vec![];
            for k in 0..variants {
                let inputs = variant(&session, &base, k)?;
                let want = run(&session, &inputs).with_context(|| format!("{label} variant {k}"))?;
                vs.push(Variant { inputs, want });
            }
            out.push(Case { label, session, variants: vs });
        }
    }
    Ok(out)
}

/// A small deterministic generator (xorshift64*), so a stress run's mix is repeatable per thread.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// `vinort-bench soak`.
pub fn soak(models: &[PathBuf], lists: &[String], sessions: usize, inferences: usize) -> Result<()> {
    if models.is_empty() {
        bail!("give at least one model folder");
    }
    let pairs: Vec<(&PathBuf, &str)> = models.iter().flat_map(|m| lists.iter().map(move |l| (m, l.as_str()))).collect();
    let feeds: Vec<Vec<(String, Tensor)>> = models.iter().map(|m| crate::measure::inputs(m)).collect::<Result<_>>()?;
    let start = rss_kib();
    let t0 = Instant::now();
    let mut build_samples = vec![];
    for i in 0..sessions {
        let (m, list) = pairs[i % pairs.len()];
        let s = build(m, list).with_context(|| format!("session {i}: {} [{list}]", name_of(m)))?;
        drop(s);
        if (i + 1) % (sessions / 10).max(1) == 0 {
            build_samples.push((i + 1, rss_kib()));
        }
    }
    let build_s = t0.elapsed().as_secs_f64();
    let held: Vec<(Session, usize)> = pairs
        .iter()
        .map(|(m, list)| Ok((build(m, list)?, models.iter().position(|x| x == *m).unwrap_or(0))))
        .collect::<Result<_>>()?;
    let t1 = Instant::now();
    let mut run_samples = vec![];
    for i in 0..inferences {
        let (s, m) = &held[i % held.len()];
        run(s, &feeds[*m]).with_context(|| format!("inference {i}"))?;
        if (i + 1) % (inferences / 10).max(1) == 0 {
            run_samples.push((i + 1, rss_kib()));
        }
    }
    let run_s = t1.elapsed().as_secs_f64();
    let trimmed = trimmed_rss_kib();
    let growth = |samples: &[(usize, u64)]| -> (u64, u64, i64) {
        let first = samples.first().map(|s| s.1).unwrap_or(0);
        let last = samples.last().map(|s| s.1).unwrap_or(0);
        (first, last, last as i64 - first as i64)
    };
    println!("soak: {} models x {lists:?}, start RSS {:.1} MiB", models.len(), mib(start));
    println!("  {sessions} sessions built and dropped in {build_s:.1} s; RSS after each tenth (MiB):");
    println!("    {}", build_samples.iter().map(|(n, r)| format!("{n}:{:.1}", mib(*r))).collect::<Vec<_>>().join(" "));
    println!("  {inferences} inferences on {} held sessions in {run_s:.1} s; RSS after each tenth (MiB):", held.len());
    println!("    {}", run_samples.iter().map(|(n, r)| format!("{n}:{:.1}", mib(*r))).collect::<Vec<_>>().join(" "));
    let (b0, b1, bg) = growth(&build_samples);
    let (r0, r1, rg) = growth(&run_samples);
    println!(
        "  growth from the first tenth to the end: sessions {:+.1} MiB ({:.1} -> {:.1}), inferences {:+.1} MiB ({:.1} -> {:.1})",
        bg as f64 / 1024.0,
        mib(b0),
        mib(b1),
        rg as f64 / 1024.0,
        mib(r0),
        mib(r1)
    );
    println!("  RSS at the end after the allocators' free memory was released: {:.1} MiB", mib(trimmed));
    println!(
        "{}",
        serde_json::json!({
            "command": "soak", "trimmed_kib": trimmed, "sessions": sessions, "inferences": inferences,
            "start_kib": start, "build_samples": build_samples, "run_samples": run_samples,
            "build_growth_kib": bg, "run_growth_kib": rg, "build_s": build_s, "run_s": run_s,
        })
    );
    Ok(())
}

/// `vinort-bench stress`.
pub fn stress(models: &[PathBuf], lists: &[String], threads: usize, seconds: u64, variants: usize) -> Result<()> {
    if models.is_empty() {
        bail!("give at least one model folder");
    }
    let cases = Arc::new(cases(models, lists, variants.max(1))?);
    let start = rss_kib();
    let stop = Arc::new(AtomicBool::new(false));
    let runs = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let failed = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (cases, stop, runs, failures, failed) =
                (cases.clone(), stop.clone(), runs.clone(), failures.clone(), failed.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t as u64 + 1).wrapping_mul(0x1000_0000_01b3));
                // Odd threads keep their last outputs while the next run goes, as a server
                // that answers after starting the next request does: the provider must then
                // not write over them.
                let mut kept = vec![];
                while !stop.load(Ordering::Relaxed) {
                    let c = &cases[rng.below(cases.len())];
                    let k = rng.below(c.variants.len());
                    let v = &c.variants[k];
                    let problem = match run(&c.session, &v.inputs) {
                        Err(e) => Some(format!("{} variant {k}: error {e:#}", c.label)),
                        Ok(got) => {
                            let differs = !got.iter().zip(&v.want).all(|(g, w)| same(g, w));
                            if t % 2 == 1 {
                                kept = got;
                            }
                            differs.then(|| {
                                format!("{} variant {k}: outputs differ from the single-threaded run", c.label)
                            })
                        }
                    };
                    runs.fetch_add(1, Ordering::Relaxed);
                    std::hint::black_box(&kept);
                    if let Some(p) = problem {
                        failed.fetch_add(1, Ordering::Relaxed);
                        let mut f = failures.lock().unwrap_or_else(|e| e.into_inner());
                        if f.len() < 10 {
                            f.push(p);
                        }
                    }
                }
            })
        })
        .collect();
    let mut samples = vec![];
    // Tensor bytes vinort's buffers hold (pools included), beside RSS: growth in RSS that
    // these do not show is outside vinort's tensors (the allocator, OpenVINO).
    let mut held = vec![];
    // Bytes live on Rust's heap (every vinort allocation, tensors included).
    let mut live = vec![];
    while t0.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_secs(1).min(Duration::from_secs(seconds).saturating_sub(t0.elapsed())));
        samples.push((t0.elapsed().as_secs(), rss_kib()));
        held.push(vinort::ir::limits::held() / 1024);
        live.push(vinort_tools::alloc_count::live_bytes() / 1024);
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        if w.join().is_err() {
            failed.fetch_add(1, Ordering::Relaxed);
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let trimmed = trimmed_rss_kib();
    let runs = runs.load(Ordering::Relaxed);
    let failed = failed.load(Ordering::Relaxed);
    let tenth = (samples.len() / 10).max(1);
    let early = samples.get(tenth - 1).map(|s| s.1).unwrap_or(start);
    let end = samples.last().map(|s| s.1).unwrap_or(start);
    let peak = samples.iter().map(|s| s.1).max().unwrap_or(start);
    println!(
        "stress: {threads} threads x {secs:.0} s over {} shared sessions ({} models x {lists:?}), {} input variants each",
        cases.len(),
        models.len(),
        variants
    );
    println!("  {runs} runs ({:.0}/s), {failed} errors or differences", runs as f64 / secs);
    println!(
        "  RSS (MiB): before threads {:.1}, after the first tenth {:.1}, end {:.1}, peak {:.1}; growth after the first tenth {:+.1}",
        mib(start),
        mib(early),
        mib(end),
        mib(peak),
        (end as f64 - early as f64) / 1024.0
    );
    println!("  RSS after the threads ended and the allocators' free memory was released: {:.1} MiB", mib(trimmed));
    println!(
        "  vinort tensor memory held (MiB): after the first tenth {:.1}, end {:.1}, peak {:.1}",
        mib(held.get(tenth - 1).copied().unwrap_or(0) as u64),
        mib(held.last().copied().unwrap_or(0) as u64),
        mib(held.iter().copied().max().unwrap_or(0) as u64)
    );
    println!(
        "  Rust heap live (MiB): after the first tenth {:.1}, end {:.1}, peak {:.1}",
        mib(live.get(tenth - 1).copied().unwrap_or(0)),
        mib(live.last().copied().unwrap_or(0)),
        mib(live.iter().copied().max().unwrap_or(0))
    );
    for f in failures.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        println!("  {f}");
    }
    println!(
        "{}",
        serde_json::json!({
            "command": "stress", "threads": threads, "seconds": secs, "sessions": cases.len(),
            "variants": variants, "runs": runs, "failed": failed, "start_kib": start,
            "early_kib": early, "end_kib": end, "trimmed_kib": trimmed, "peak_kib": peak, "samples": samples, "held_kib": held, "live_kib": live,
        })
    );
    if failed > 0 {
        bail!("{failed} of {runs} runs failed or differed from the single-threaded run");
    }
    Ok(())
}
