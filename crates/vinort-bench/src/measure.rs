//! One runtime on one model, in this process.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use vinort::openvino::Precision;
use vinort::{Cpu, OpenVino, Provider, Runtime, Tensor, Value};
use vinort_openvino::ffi;

/// What one measurement found.
#[derive(Debug, Clone, Default)]
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
}

impl Measurement {
    /// The median latency, ms.
    pub fn median(&self) -> f64 {
        percentile(&self.latencies_ms, 50.0)
    }

    /// One JSON object on one line.
    pub fn to_json(&self) -> String {
        let lat: Vec<String> = self.latencies_ms.iter().map(|v| format!("{v:.4}")).collect();
        format!(
            "{{\"runtime\":{},\"model\":{},\"session_ms\":{:.3},\"session_warm_ms\":{},\"first_ms\":{:.4},\"median_ms\":{:.4},\"latencies_ms\":[{}],\"note\":{}}}",
            json_str(&self.runtime),
            json_str(&self.model),
            self.session_ms,
            self.session_warm_ms.map_or("null".into(), |v| format!("{v:.3}")),
            self.first_ms,
            self.median(),
            lat.join(","),
            json_str(&self.note)
        )
    }

    /// Parses what [`Measurement::to_json`] wrote (the harness's own format, nothing more).
    pub fn from_json(line: &str) -> Result<Measurement> {
        let field = |key: &str| -> Result<&str> {
            let tag = format!("\"{key}\":");
            let start = line.find(&tag).ok_or_else(|| anyhow!("no field {key} in {line}"))? + tag.len();
            let rest = &line[start..];
            let end = if rest.starts_with('[') {
                rest.find(']').map(|e| e + 1)
            } else if rest.starts_with('"') {
                let mut escaped = false;
                rest.char_indices().skip(1).find_map(|(i, c)| {
                    let end = c == '"' && !escaped;
                    escaped = c == '\\' && !escaped;
                    end.then_some(i + 1)
                })
            } else {
                rest.find([',', '}'])
            };
            Ok(&rest[..end.ok_or_else(|| anyhow!("unterminated field {key}"))?])
        };
        let num = |key: &str| -> Result<f64> { field(key)?.parse::<f64>().with_context(|| format!("field {key}")) };
        let unquote = |s: &str| s.trim_matches('"').replace("\\\"", "\"").replace("\\n", "\n").replace("\\\\", "\\");
        let lat = field("latencies_ms")?;
        let latencies_ms = lat
            .trim_matches(['[', ']'])
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse::<f64>().context("latency"))
            .collect::<Result<Vec<_>>>()?;
        let warm = field("session_warm_ms")?;
        Ok(Measurement {
            runtime: unquote(field("runtime")?),
            model: unquote(field("model")?),
            session_ms: num("session_ms")?,
            session_warm_ms: if warm == "null" { None } else { Some(warm.parse()?) },
            first_ms: num("first_ms")?,
            latencies_ms,
            note: unquote(field("note")?),
        })
    }
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The p-th percentile (nearest rank) of `v`.
pub fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

/// The model's inputs, from `test_data_set_0/input_<i>.pb`, in graph order, with their names.
pub fn inputs(model_dir: &Path) -> Result<Vec<(String, Tensor)>> {
    let model = vinort::Model::load(model_dir.join("model.onnx"))?;
    let g = &model.graph;
    let mut out = vec![];
    for (i, v) in g.inputs().iter().filter(|v| g.initializer(**v).is_none()).enumerate() {
        let info = g.value(*v);
        let path = model_dir.join("test_data_set_0").join(format!("input_{i}.pb"));
        let value =
            vinort::testcase::read_value(&path, &info.ty).with_context(|| format!("reading {}", path.display()))?;
        match value {
            Value::Tensor(t) => out.push((info.name.clone(), t)),
            _ => bail!("input {} is not a tensor", info.name),
        }
    }
    Ok(out)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Measures `runtime` on the model in `model_dir`.
pub fn measure(
    runtime: &str,
    model_dir: &Path,
    runs: usize,
    warmup: usize,
    threads: usize,
    cache_dir: Option<&Path>,
) -> Result<Measurement> {
    let feeds = inputs(model_dir)?;
    let model_path = model_dir.join("model.onnx");
    let mut m = match runtime {
        "vinort-ov-f32" | "vinort-ov" | "vinort-cpu" => {
            vinort_run(runtime, &model_path, &feeds, runs, warmup, threads, cache_dir)?
        }
        "openvino-f32" | "openvino" => {
            native_openvino(runtime == "openvino-f32", &model_path, &feeds, runs, warmup, threads, cache_dir)?
        }
        "ort-cpu" | "ort-ovep" => {
            crate::anchors::ort(runtime == "ort-ovep", &model_path, &feeds, runs, warmup, threads, cache_dir)?
        }
        other => bail!("unknown runtime {other}"),
    };
    m.runtime = runtime.into();
    m.model = model_dir.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(m)
}

fn vinort_providers(runtime: &str, threads: usize, cache_dir: Option<&Path>) -> Result<Vec<Provider>> {
    let cpu: Provider = Cpu::default().into();
    if runtime == "vinort-cpu" {
        return Ok(vec![cpu]);
    }
    let mut ov = OpenVino::cpu().set("num_of_threads", &threads.to_string())?;
    // ONNX Runtime's OpenVINO EP (and so `OpenVino::cpu()`) defaults CPU to FP32; the
    // "default precision" column is OpenVINO's own choice (bf16 on this CPU), as natively.
    ov = ov.precision(if runtime == "vinort-ov-f32" { Precision::Fp32 } else { Precision::Default });
    if let Some(dir) = cache_dir {
        ov = ov.cache_dir(dir);
    }
    Ok(vec![ov.error_on_failure(), cpu])
}

fn vinort_run(
    runtime: &str,
    model: &Path,
    feeds: &[(String, Tensor)],
    runs: usize,
    warmup: usize,
    threads: usize,
    cache_dir: Option<&Path>,
) -> Result<Measurement> {
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
    let run = || session.run(feeds.iter().map(|(n, t)| (n.as_str(), t)));
    let t = Instant::now();
    run()?;
    let first_ms = ms(t.elapsed());
    for _ in 0..warmup {
        run()?;
    }
    let mut latencies_ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let out = run()?;
        latencies_ms.push(ms(t.elapsed()));
        drop(out);
    }
    let note = session
        .plan()
        .partitions
        .iter()
        .map(|p| format!("{} x{}", p.provider, p.nodes.len()))
        .collect::<Vec<_>>()
        .join(" -> ");
    Ok(Measurement { session_ms, session_warm_ms, first_ms, latencies_ms, note, ..Default::default() })
}

fn rayon_threads(n: usize) {
    // Fails only when the global pool already exists (one measurement per process: it does not).
    let _ = rayon::ThreadPoolBuilder::new().num_threads(n).build_global();
}

fn native_openvino(
    f32_precision: bool,
    model: &Path,
    feeds: &[(String, Tensor)],
    runs: usize,
    warmup: usize,
    threads: usize,
    cache_dir: Option<&Path>,
) -> Result<Measurement> {
    let err = |e: ffi::OvError| anyhow!("{e}");
    // Timed from before the library is loaded and the core created, like vinort's first session
    // (which loads OpenVINO lazily) and like an application's first compile.
    let t0 = Instant::now();
    ffi::load_library(None).map_err(|e| anyhow!("{e}"))?;
    let core = ffi::core().map_err(|e| anyhow!("{e}"))?;
    let mut props = vec![("INFERENCE_NUM_THREADS".to_owned(), threads.to_string())];
    if f32_precision {
        props.push(("INFERENCE_PRECISION_HINT".into(), "f32".into()));
    }
    props.push(("PERFORMANCE_HINT".into(), "LATENCY".into()));
    if let Some(dir) = cache_dir {
        props.push(("CACHE_DIR".into(), dir.display().to_string()));
    }
    // One call from the file, as OpenVINO's documentation recommends (with CACHE_DIR a cache
    // hit then skips reading the model).
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
    // Host-pointer input tensors over the feeds (no copy), bound once, as a native OpenVINO
    // application would; OpenVINO allocates the outputs.
    let mut bound = vec![];
    for (i, (_, t)) in feeds.iter().enumerate() {
        // SAFETY: `feeds` outlives `req` and every inference below; OpenVINO only reads inputs.
        let ov = unsafe { ffi::OvTensor::from_host_ptr(t.dtype(), t.shape(), t.data_ptr()) }.map_err(err)?;
        req.set_input(i, &ov).map_err(err)?;
        bound.push(ov);
    }
    let t = Instant::now();
    req.infer().map_err(err)?;
    let first_ms = ms(t.elapsed());
    for _ in 0..warmup {
        req.infer().map_err(err)?;
    }
    let mut latencies_ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        req.infer().map_err(err)?;
        latencies_ms.push(ms(t.elapsed()));
    }
    let precision = compiled.property("INFERENCE_PRECISION_HINT").unwrap_or_else(|_| "?".into());
    Ok(Measurement {
        session_ms,
        session_warm_ms,
        first_ms,
        latencies_ms,
        note: format!("whole model compiled by OpenVINO, INFERENCE_PRECISION_HINT={precision}"),
        ..Default::default()
    })
}
