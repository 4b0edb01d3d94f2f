//! `vinort._vinort`, the native half of the Python package `vinort`, a drop-in for
//! onnxruntime.
//!
//! ```python
//! import vinort as ort
//! sess = ort.InferenceSession("model.onnx", providers=["OpenVINOExecutionProvider", "CPUExecutionProvider"])
//! probs, = sess.run(None, {"input": x})
//! ```
//!
//! The Python half (`python/vinort`) holds onnxruntime's surface (`InferenceSession`,
//! `SessionOptions`, `OrtValue`, `IOBinding`, `onnxruntime.capi`…) and normalizes its
//! arguments the way onnxruntime does; this half is a thin layer over the `vinort` crate:
//! [`session`] builds and runs a session in one call per run, [`convert`] moves values between
//! numpy and vinort (C-contiguous inputs are borrowed, not copied), [`providers`] builds the
//! provider list, and [`errors`] turns vinort's errors (and any panic) into onnxruntime's
//! exception classes.

use pyo3::prelude::*;

mod convert;
mod errors;
mod providers;
mod session;

/// The execution providers this build can use, onnxruntime's names, in the default order:
/// OpenVINO only when its library can be found and loaded.
#[pyfunction]
fn get_available_providers() -> Vec<&'static str> {
    providers::available().iter().map(|k| k.ort_name()).collect()
}

/// The version of the OpenVINO runtime vinort loads, or None when none can be found.
#[pyfunction]
fn openvino_version() -> Option<String> {
    vinort::openvino::devices().ok().map(|(version, _)| version.to_string())
}

/// What this machine's CPU kind makes vinort do (vinort's own, not onnxruntime's): the level of
/// the Cpu provider's kernels (`VINORT_CPU_ISA` caps it) and what OpenVINO's CPU plugin does
/// under oneDNN's ISA cap (`ONEDNN_MAX_CPU_ISA`): exact int8 products (VNNI; else vinort folds
/// int8 weights to f32 for it), AVX-512 kernels, bf16 as its default precision.
#[pyfunction]
fn cpu_kind(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let d = pyo3::types::PyDict::new(py);
    let ov = vinort::openvino::cpu_kind();
    d.set_item("kernels", vinort::isa::level().name())?;
    d.set_item("openvino_exact_int8", ov.exact_int8())?;
    d.set_item("openvino_avx512", ov.avx512())?;
    d.set_item("openvino_bf16_default", ov.bf16_default())?;
    d.set_item("description", format!("Cpu kernels {}; OpenVINO CPU {}", vinort::isa::isa(), ov.describe()))?;
    Ok(d)
}

/// The extension module: `vinort._vinort`.
#[pymodule]
#[pyo3(name = "_vinort")]
fn vinort_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(get_available_providers, m)?)?;
    m.add_function(wrap_pyfunction!(openvino_version, m)?)?;
    m.add_function(wrap_pyfunction!(cpu_kind, m)?)?;
    m.add_class::<session::Session>()?;
    m.add_class::<session::NodeArg>()?;
    m.add_class::<session::ModelMetadata>()?;
    m.add_class::<session::RunOptions>()?;
    errors::register(m)
}
