//! `vinort` for Python: a drop-in for `onnxruntime.InferenceSession`.
//!
//! ```python
//! import vinort as ort
//! sess = ort.InferenceSession("model.onnx", providers=["OpenVINOExecutionProvider", "CPUExecutionProvider"])
//! probs, = sess.run(None, {"input": x})
//! ```
//!
//! The module is a thin layer over the `vinort` crate: [`session`] holds the Python classes,
//! [`convert`] moves values between numpy and vinort (C-contiguous inputs are borrowed, not
//! copied), [`providers`] reads onnxruntime's provider and session-option arguments, and
//! [`errors`] turns vinort's errors (and any panic) into Python exceptions.

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

/// onnxruntime's `get_device()`: where the default providers run.
#[pyfunction]
fn get_device() -> &'static str {
    "CPU"
}

/// The extension module: `import vinort`.
#[pymodule]
#[pyo3(name = "vinort")]
fn vinort_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(get_available_providers, m)?)?;
    m.add_function(wrap_pyfunction!(get_device, m)?)?;
    m.add_class::<session::InferenceSession>()?;
    m.add_class::<session::NodeArg>()?;
    m.add_class::<session::ModelMetadata>()?;
    m.add_class::<session::RunOptions>()?;
    m.add_class::<providers::SessionOptions>()?;
    m.add_class::<providers::GraphOptimizationLevel>()?;
    errors::register(m)
}
