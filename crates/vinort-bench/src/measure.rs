//! One runtime on one model, in this process.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use vinort::openvino::Precision;
use vinort::{OpenVino, Provider, Runtime, Tensor, Value};
use vinort_openvino::ffi;
use vinort_tools::providers::ProviderList;
use vinort_tools::stats::percentile;
use vinort_tools::stats::{first_then_warm, ms, time_runs};

/// What one measurement found.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Measurement {
    /// The runtime's name (see [`crate::RUNTIMES`]).
    pub runtime: String,
    /// The model folder's name.
    pub model: String,
    /// Session creation (load + compile), ms.
    pub session_ms: f64,
    /// Session creation again with the model cache warm, ms, when measured.
    pub session_warm_ms: Option<f64>,
    /// The first inference, ms.
    pub first_ms: f64,
    /// Every measured inference, ms, in order.
    pub latencies_ms: Vec<f64>,
    /// A note (the partition plan for vinort, the providers ORT used).
    pub note: String,
    /// vinort only: what one timed inference allocated and copied, averaged over the timed runs.
    pub per_run: Option<PerRun>,
}

/// What one steady-state inference allocated and copied (vinort's counters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PerRun {
    /// Rust heap allocations (OpenVINO's own C++ allocations are not seen).
    pub heap_allocs: f64,
    /// Tensor buffers allocated.
    pub tensor_buffers: f64,
    /// Tensor buffers taken from the buffer pool instead.
    pub tensor_reuses: f64,
    /// Tensor data copies.
    pub tensor_copies: f64,
}

impl Measurement {
    /// The median latency, ms.
    pub fn median(&self) -> f64 {
        percentile(&self.latencies_ms, 50.0)
    }

    /// One JSON object on one line.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses what [`Measurement::to_json`] wrote.
    pub fn from_json(line: &str) -> Result<Measurement> {
        serde_json::from_str(line).with_context(|| format!("not a measurement: {line}"))
    }
}

/// The model's inputs, from `test_data_set_0/input_<i>.pb`, in graph order, with their names.
pub fn inputs(model_dir: &Path) -> Result<Vec<(String, Tensor)>> {
    let model = vinort::Model::load(model_dir.join("model.onnx"))?;
    let g = &model.graph;
    let mut out = vec![];
    for (i, v) in g.inputs().iter().enumerate() {
        let info = g.value(*v);
        let path = model_dir.join("test_data_set_0").join(format!("input_{i}.pb"));
        // An overridable initializer without a file keeps its initializer.
        if g.input_default(*v).is_some() && !path.exists() {
            continue;
        }
        let value = vinort_tools::testcase::read_value(&path, &info.ty)
            .with_context(|| format!("reading {}", path.display()))?;
        match value {
            Value::Tensor(t) => out.push((info.name.clone(), t)),
            _ => bail!("input {} is not a tensor", info.name),
        }
    }
    Ok(out)
}

/// How each runtime is measured (the same for every runtime of a table).
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    /// Timed runs.
    pub runs: usize,
    /// Untimed runs after the first.
    pub warmup: usize,
    /// Threads of every runtime (intra-op threads, INFERENCE_NUM_THREADS, rayon).
    pub threads: usize,
    /// A model cache folder: a second session is created with it warm and timed.
    pub cache_dir: Option<&'a Path>,
}

/// Measures `runtime` on the model in `model_dir`.
pub fn measure(runtime: &str, model_dir: &Path, plan: Plan<'_>) -> Result<Measurement> {
    let feeds = inputs(model_dir)?;
    let model_path = model_dir.join("model.onnx");
    let mut m = match runtime {
        "vinort-ov-f32" | "vinort-ov" | "vinort-cpu" => vinort_run(runtime, &model_path, &feeds, plan)?,
        "openvino-f32" | "openvino" => native_openvino(runtime == "openvino-f32", &model_path, &feeds, plan)?,
        "ort-cpu" | "ort-ovep" => crate::anchors::ort(runtime == "ort-ovep", &model_path, &feeds, plan)?,
        other => bail!("unknown runtime {other}"),
    };
    m.runtime = runtime.into();
    m.model = model_dir.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(m)
}

fn vinort_providers(runtime: &str, threads: usize, cache_dir: Option<&Path>) -> Result<Vec<Provider>> {
    let list: ProviderList = if runtime == "vinort-cpu" { "cpu" } else { "openvino,cpu" }.parse()?;
    let mut ov = OpenVino::cpu().set("num_of_threads", &threads.to_string())?;
    // ONNX Runtime's OpenVINO EP (and so `OpenVino::cpu()`) defaults CPU to FP32; the
    // "default precision" column is OpenVINO's own choice (bf16 on this CPU), as natively.
    ov = ov.precision(if runtime == "vinort-ov-f32" { Precision::Fp32 } else { Precision::Default });
    if let Some(dir) = cache_dir {
        ov = ov.cache_dir(dir);
    }
    Ok(list.providers(&ov, true))
}

fn vinort_run(runtime: &str, model: &Path, feeds: &[(String, Tensor)], plan: Plan<'_>) -> Result<Measurement> {
    let Plan { runs, warmup, threads, cache_dir } = plan;
    // The Cpu provider's kernels use rayon's global pool: size it like the other runtimes.
    rayon_threads(threads);
    let t0 = Instant::now();
    let session = Runtime::load(model)?.providers(vinort_providers(runtime, threads, cache_dir)?).build()?;
    let session_ms = ms(t0.elapsed());
    let session_warm_ms = match cache_dir {
        Some(_) if runtime != "vinort-cpu" => {
            let t = Instant::now();
            let again = Runtime::load(model)?.providers(vinort_providers(runtime, threads, cache_dir)?).build()?;
            let warm = ms(t.elapsed());
            drop(again);
            Some(warm)
        }
        _ => None,
    };
    // Dropping the outputs is part of a run, as it is for ONNX Runtime's.
    let run = || -> Result<()> { Ok(session.run(feeds.iter().map(|(n, t)| (n.as_str(), t))).map(drop)?) };
    let first_ms = first_then_warm(warmup, run)?;
    let (heap0, tensors0) = (vinort_tools::alloc_count::snapshot(), vinort::ir::stats::snapshot());
    let latencies_ms = time_runs(runs, run)?;
    let (heap, tensors) =
        (vinort_tools::alloc_count::snapshot().since(&heap0), vinort::ir::stats::snapshot().since(&tensors0));
    // The timed loop allocates nothing of its own (`latencies_ms` has its capacity), so the
    // counts are the inferences'.
    let n = runs as f64;
    let per_run = PerRun {
        heap_allocs: heap.allocs as f64 / n,
        tensor_buffers: tensors.tensor_allocs as f64 / n,
        tensor_reuses: tensors.tensor_reuses as f64 / n,
        tensor_copies: tensors.tensor_copies as f64 / n,
    };
    let note = session
        .plan()
        .partitions
        .iter()
        .map(|p| format!("{} x{}", p.provider, p.nodes.len()))
        .collect::<Vec<_>>()
        .join(" -> ");
    Ok(Measurement {
        session_ms,
        session_warm_ms,
        first_ms,
        latencies_ms,
        note,
        per_run: Some(per_run),
        ..Default::default()
    })
}

fn rayon_threads(n: usize) {
    // Fails only when the global pool already exists (one measurement per process: it does not).
    let _ = rayon::ThreadPoolBuilder::new().num_threads(n).build_global();
}

/// A model compiled whole by OpenVINO through its C API, inputs bound once as host pointers
/// over the feeds (no copy), as a native OpenVINO application would.
struct NativeOv {
    // Field order: the request goes before the tensors it reads and the model it came from.
    req: ffi::InferRequest,
    _bound: Vec<ffi::OvTensor>,
    compiled: ffi::CompiledModel,
    session_ms: f64,
    session_warm_ms: Option<f64>,
}

impl NativeOv {
    fn new(
        f32_precision: bool,
        model: &Path,
        feeds: &[(String, Tensor)],
        threads: usize,
        cache_dir: Option<&Path>,
    ) -> Result<NativeOv> {
        let err = |e: ffi::OvError| anyhow!("{e}");
        // Timed from before the library is loaded and the core created, like vinort's first
        // session (which loads OpenVINO lazily) and like an application's first compile.
        let t0 = Instant::now();
        ffi::load_library(None).map_err(|e| anyhow!("{e}"))?;
        let core = ffi::core().map_err(|e| anyhow!("{e}"))?;
        let mut props = vec![("INFERENCE_NUM_THREADS".to_owned(), threads.to_string())];
        if f32_precision {
            // What vinort's precision FP32 sets: f32 arithmetic and no dynamic int8 quantization
            // of activations. Without the second the CPU plugin quantizes the activations of
            // MatMuls with compressed (4-bit, int8) weights, a different and less accurate
            // computation (bert_mini_fused_matmul4bits: 1.5x faster, not within f32 tolerance).
            props.push(("INFERENCE_PRECISION_HINT".into(), "f32".into()));
            props.push(("DYNAMIC_QUANTIZATION_GROUP_SIZE".into(), "0".into()));
        }
        props.push(("PERFORMANCE_HINT".into(), "LATENCY".into()));
        if let Some(dir) = cache_dir {
            props.push(("CACHE_DIR".into(), dir.display().to_string()));
        }
        // One call from the file, as OpenVINO's documentation recommends (with CACHE_DIR a
        // cache hit then skips reading the model).
        let compile = || -> Result<ffi::CompiledModel> { core.compile_from_file(model, "CPU", &props).map_err(err) };
        let compiled = compile()?;
        let session_ms = ms(t0.elapsed());
        let session_warm_ms = match cache_dir {
            Some(_) => {
                let t = Instant::now();
                drop(compile()?);
                Some(ms(t.elapsed()))
            }
            None => None,
        };
        let mut req = compiled.infer_request().map_err(err)?;
        let ports = compiled.inputs().map_err(err)?;
        if ports.len() != feeds.len() {
            bail!("OpenVINO sees {} inputs, the test data has {}", ports.len(), feeds.len());
        }
        let mut bound = vec![];
        for (i, (_, t)) in feeds.iter().enumerate() {
            // SAFETY: the caller keeps `feeds` alive and unchanged for as long as this value
            // lives (`req` is dropped first); OpenVINO only reads inputs.
            let ov = unsafe { ffi::OvTensor::from_host_ptr(t.dtype(), t.shape(), t.data_ptr()) }.map_err(err)?;
            req.set_input(i, &ov).map_err(err)?;
            bound.push(ov);
        }
        Ok(NativeOv { req, _bound: bound, compiled, session_ms, session_warm_ms })
    }

    fn infer(&mut self) -> Result<()> {
        self.req.infer().map_err(|e| anyhow!("{e}"))
    }
}

fn native_openvino(
    f32_precision: bool,
    model: &Path,
    feeds: &[(String, Tensor)],
    plan: Plan<'_>,
) -> Result<Measurement> {
    let Plan { runs, warmup, threads, cache_dir } = plan;
    let mut n = NativeOv::new(f32_precision, model, feeds, threads, cache_dir)?;
    let first_ms = first_then_warm(warmup, || n.infer())?;
    let latencies_ms = time_runs(runs, || n.infer())?;
    let precision = n.compiled.property("INFERENCE_PRECISION_HINT").unwrap_or_else(|_| "?".into());
    let group = n.compiled.property("DYNAMIC_QUANTIZATION_GROUP_SIZE").unwrap_or_else(|_| "?".into());
    Ok(Measurement {
        session_ms: n.session_ms,
        session_warm_ms: n.session_warm_ms,
        first_ms,
        latencies_ms,
        note: format!(
            "whole model compiled by OpenVINO, INFERENCE_PRECISION_HINT={precision} DYNAMIC_QUANTIZATION_GROUP_SIZE={group}"
        ),
        ..Default::default()
    })
}

/// vinort and native OpenVINO in one process, at one precision, their runs alternating
/// (vinort first in even pairs, OpenVINO first in odd ones): both see the same moments of a
/// noisy machine, which separate processes minutes apart do not.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Paired {
    /// vinort's latencies, ms.
    pub vinort_ms: Vec<f64>,
    /// Native OpenVINO's latencies, ms, pair by pair with `vinort_ms`.
    pub native_ms: Vec<f64>,
}

impl Paired {
    /// vinort's latency ÷ OpenVINO's, order-balanced: the geometric mean of the median ratio
    /// over the pairs where vinort ran first and the median over those where OpenVINO did.
    /// Whichever runs second in a pair is measurably slower (on 2 cores the first one's
    /// worker threads still spin for a moment), so the two halves lean opposite ways and
    /// their geometric mean cancels the lean.
    pub fn median_ratio(&self) -> f64 {
        let half = |start: usize| -> f64 {
            let r: Vec<f64> =
                self.vinort_ms.iter().zip(&self.native_ms).skip(start).step_by(2).map(|(a, b)| a / b).collect();
            percentile(&r, 50.0)
        };
        if self.vinort_ms.len() < 2 {
            return half(0);
        }
        (half(0) * half(1)).sqrt()
    }

    /// One JSON object on one line.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses what [`Paired::to_json`] wrote.
    pub fn from_json(line: &str) -> Result<Paired> {
        serde_json::from_str(line).with_context(|| format!("not a paired run: {line}"))
    }
}

/// Measures vinort `[OpenVino(CPU, precision), Cpu]` against native OpenVINO at the same
/// precision (f32, or OpenVINO's default), alternating run by run in this process.
pub fn paired(f32_precision: bool, model_dir: &Path, runs: usize, warmup: usize, threads: usize) -> Result<Paired> {
    let feeds = inputs(model_dir)?;
    let model = model_dir.join("model.onnx");
    rayon_threads(threads);
    let runtime = if f32_precision { "vinort-ov-f32" } else { "vinort-ov" };
    let session = Runtime::load(&model)?.providers(vinort_providers(runtime, threads, None)?).build()?;
    if session.plan().partitions.len() != 1 {
        bail!("vinort splits this model ({}); a paired run compares whole-model compiles", session.plan());
    }
    let mut native = NativeOv::new(f32_precision, &model, &feeds, threads, None)?;
    let vinort = || -> Result<f64> {
        let t = Instant::now();
        let out = session.run(feeds.iter().map(|(n, t)| (n.as_str(), t)))?;
        let e = ms(t.elapsed());
        drop(out);
        Ok(e)
    };
    for _ in 0..warmup {
        vinort()?;
        native.infer()?;
    }
    let (mut a, mut b) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for i in 0..runs {
        let time_native = |n: &mut NativeOv| -> Result<f64> {
            let t = Instant::now();
            n.infer()?;
            Ok(ms(t.elapsed()))
        };
        if i % 2 == 0 {
            a.push(vinort()?);
            b.push(time_native(&mut native)?);
        } else {
            b.push(time_native(&mut native)?);
            a.push(vinort()?);
        }
    }
    Ok(Paired { vinort_ms: a, native_ms: b })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paired_ratio_cancels_which_side_ran_second() {
        // Pairs alternate: vinort first in pairs 0 and 2, OpenVINO first in pairs 1 and 3.
        // Both are equally fast, but the second of a pair always takes 25% longer.
        let p = Paired { vinort_ms: vec![2.0, 2.5, 2.0, 2.5], native_ms: vec![2.5, 2.0, 2.5, 2.0] };
        assert!((p.median_ratio() - 1.0).abs() < 1e-12, "{}", p.median_ratio());
        // vinort 10% slower in every pair, no order effect: 1.1.
        let p = Paired { vinort_ms: vec![1.1, 2.2, 1.1, 2.2], native_ms: vec![1.0, 2.0, 1.0, 2.0] };
        assert!((p.median_ratio() - 1.1).abs() < 1e-12, "{}", p.median_ratio());
    }

    #[test]
    fn measurements_and_pairs_survive_their_json_lines() {
        let m = Measurement {
            runtime: "vinort-ov".into(),
            model: "m \"quoted\"".into(),
            session_ms: 12.5,
            session_warm_ms: Some(3.25),
            first_ms: 1.5,
            latencies_ms: vec![1.0, 2.0, 3.0],
            note: "OpenVino(CPU) x3 -> Cpu x1".into(),
            per_run: Some(PerRun { heap_allocs: 3.0, tensor_buffers: 0.0, tensor_reuses: 56.0, tensor_copies: 0.5 }),
        };
        let back = Measurement::from_json(&m.to_json()).unwrap();
        assert_eq!(back.model, m.model);
        assert_eq!(back.note, m.note);
        assert_eq!(back.latencies_ms, m.latencies_ms);
        assert_eq!(back.session_warm_ms, Some(3.25));
        assert_eq!(back.per_run, m.per_run);
        let none = Measurement { per_run: None, ..m.clone() };
        assert_eq!(Measurement::from_json(&none.to_json()).unwrap().per_run, None);
        assert_eq!(back.median(), 2.0);
        let p = Paired { vinort_ms: vec![1.5, 2.0], native_ms: vec![1.25, 3.0] };
        let q = Paired::from_json(&p.to_json()).unwrap();
        assert_eq!((q.vinort_ms, q.native_ms), (p.vinort_ms, p.native_ms));
    }
}
