//! ONNX Runtime, loaded at run time from the PyPI wheels through the `ort` crate
//! (`--features anchors`).
//!
//! `ort-cpu` loads `libonnxruntime.so.1.31.1` from the `onnxruntime` wheel of `scripts/py-env`;
//! `ort-ovep` loads `libonnxruntime.so.1.24.1` from the `onnxruntime-openvino` wheel of
//! `scripts/py-env --ovep`, whose OpenVINO EP library sits next to it. `ORT_DYLIB_PATH`
//! overrides the search.

use std::path::{Path, PathBuf};

use anyhow::Result;
use vinort::Tensor;

use crate::Measurement;
use crate::measure::Plan;

/// Where the ONNX Runtime library of this runtime is, or every place tried.
#[cfg_attr(not(feature = "anchors"), allow(dead_code))]
pub fn library(ovep: bool) -> std::result::Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("ORT_DYLIB_PATH") {
        return Ok(PathBuf::from(p));
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = repo.join(if ovep { ".venv-ovep" } else { ".venv" });
    let mut tried = vec![];
    let lib = venv.join("lib");
    let pythons: Vec<PathBuf> = std::fs::read_dir(&lib)
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.join("site-packages").is_dir()).collect())
        .unwrap_or_default();
    for py in pythons {
        let capi = py.join("site-packages/onnxruntime/capi");
        tried.push(capi.display().to_string());
        if let Ok(entries) = std::fs::read_dir(&capi) {
            let mut libs: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("libonnxruntime.so.")))
                .collect();
            libs.sort();
            if let Some(l) = libs.pop() {
                return Ok(l);
            }
        }
    }
    Err(format!(
        "no ONNX Runtime library for {}: set ORT_DYLIB_PATH or run scripts/py-env{} (looked in: {})",
        if ovep { "ort-ovep" } else { "ort-cpu" },
        if ovep { " --ovep" } else { "" },
        if tried.is_empty() { venv.display().to_string() } else { tried.join(", ") }
    ))
}

#[cfg(not(feature = "anchors"))]
pub fn ort(_ovep: bool, _model: &Path, _feeds: &[(String, Tensor)], _plan: Plan<'_>) -> Result<Measurement> {
    anyhow::bail!("this vinort-bench was built without ONNX Runtime: rebuild with --features anchors")
}

#[cfg(feature = "anchors")]
pub fn ort(ovep: bool, model: &Path, feeds: &[(String, Tensor)], plan: Plan<'_>) -> Result<Measurement> {
    let Plan { runs, warmup, threads, cache_dir } = plan;
    use std::time::Instant;

    use anyhow::{Context, anyhow, bail};
    use ort::session::Session;
    use ort::session::builder::GraphOptimizationLevel;
    use ort::value::{DynValue, Tensor as OrtTensor};
    use vinort::DType;

    let lib = library(ovep).map_err(|e| anyhow!(e))?;
    let env = ort::init_from(&lib)
        .with_context(|| format!("loading {}", lib.display()))?
        .build()
        .map_err(|e| anyhow!("{e}"))?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let build = |cache: Option<&Path>| -> Result<Session> {
        let mut b = Session::builder(&env)
            .map_err(|e| anyhow!("{e}"))?
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(|e| anyhow!("{e}"))?
            .with_intra_threads(threads)
            .map_err(|e| anyhow!("{e}"))?;
        if ovep {
            let mut ep = ort::ep::OpenVINO::default().with_device_type("CPU").with_num_threads(threads);
            if let Some(dir) = cache {
                ep = ep.with_cache_dir(dir.display());
            }
            b = b.with_execution_providers([ep.build().error_on_failure()]).map_err(|e| anyhow!("{e}"))?;
        }
        b.commit_from_file(model).map_err(|e| anyhow!("{e}"))
    };
    let t0 = Instant::now();
    let mut session = build(cache_dir)?;
    let session_ms = ms(t0.elapsed());
    let session_warm_ms = match (ovep, cache_dir) {
        (true, Some(dir)) => {
            let t = Instant::now();
            drop(build(Some(dir))?);
            Some(ms(t.elapsed()))
        }
        _ => None,
    };
    let mut values: Vec<(String, DynValue)> = vec![];
    for (name, t) in feeds {
        let shape: Vec<i64> = t.shape().iter().map(|d| *d as i64).collect();
        let v: DynValue = match t.dtype() {
            DType::F32 => OrtTensor::from_array((shape, t.to_vec::<f32>()?)).map_err(|e| anyhow!("{e}"))?.into_dyn(),
            DType::I64 => OrtTensor::from_array((shape, t.to_vec::<i64>()?)).map_err(|e| anyhow!("{e}"))?.into_dyn(),
            DType::I32 => OrtTensor::from_array((shape, t.to_vec::<i32>()?)).map_err(|e| anyhow!("{e}"))?.into_dyn(),
            other => bail!("input {name}: {other} inputs are not wired into the ONNX Runtime harness"),
        };
        values.push((name.clone(), v));
    }
    let run = |session: &mut Session| -> Result<()> {
        let inputs: Vec<(&str, &DynValue)> = values.iter().map(|(n, v)| (n.as_str(), v)).collect();
        let out = session.run(inputs).map_err(|e| anyhow!("{e}"))?;
        drop(out);
        Ok(())
    };
    let first_ms = vinort_tools::stats::first_then_warm(warmup, || run(&mut session))?;
    let latencies_ms = vinort_tools::stats::time_runs(runs, || run(&mut session))?;
    let note = format!(
        "{} ({}), {threads} intra-op threads",
        lib.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
        if ovep { "OpenVINO EP device CPU, CPU EP fallback" } else { "CPU EP" }
    );
    Ok(Measurement { session_ms, session_warm_ms, first_ms, latencies_ms, note, ..Default::default() })
}
