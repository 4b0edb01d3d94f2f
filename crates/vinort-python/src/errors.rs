//! vinort's errors as Python exceptions, one class per kind of failure, all under
//! `vinort.VinortError` (a `RuntimeError`, like onnxruntime's exceptions), each carrying the
//! Rust message. A panic anywhere below becomes a `VinortError` too, never a crash and never
//! pyo3's `PanicException` (a `BaseException` that `except Exception` would not catch).

use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

create_exception!(vinort, VinortError, PyRuntimeError, "Every error vinort raises (a RuntimeError).");
create_exception!(
    vinort,
    InvalidArgument,
    VinortError,
    "A run input (unknown, missing, wrong element type or shape), an output name or a provider option is wrong."
);
create_exception!(vinort, NoSuchFile, VinortError, "The model file does not exist.");
create_exception!(vinort, InvalidModel, VinortError, "The model cannot be read, is not ONNX, or breaks ONNX's rules.");
create_exception!(
    vinort,
    UnsupportedNodes,
    VinortError,
    "Some nodes can be run by none of the session's providers; the message names each with every provider's reason."
);
create_exception!(
    vinort,
    ProviderError,
    VinortError,
    "An execution provider could not start, or failed compiling or running its part of the model."
);
create_exception!(vinort, RunCancelled, VinortError, "The run was terminated or passed its timeout.");
create_exception!(vinort, MemoryLimitExceeded, VinortError, "A tensor is larger than the memory limit allows.");

/// Adds the exception classes to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("VinortError", py.get_type::<VinortError>())?;
    m.add("InvalidArgument", py.get_type::<InvalidArgument>())?;
    m.add("NoSuchFile", py.get_type::<NoSuchFile>())?;
    m.add("InvalidModel", py.get_type::<InvalidModel>())?;
    m.add("UnsupportedNodes", py.get_type::<UnsupportedNodes>())?;
    m.add("ProviderError", py.get_type::<ProviderError>())?;
    m.add("RunCancelled", py.get_type::<RunCancelled>())?;
    m.add("MemoryLimitExceeded", py.get_type::<MemoryLimitExceeded>())?;
    Ok(())
}

/// The Python exception for a vinort error, with its full message.
pub(crate) fn to_py(e: vinort::Error) -> PyErr {
    let msg = e.to_string();
    match e {
        vinort::Error::Input { .. } | vinort::Error::Option(_) | vinort::Error::Config(_) => {
            InvalidArgument::new_err(msg)
        }
        vinort::Error::Model(_) => InvalidModel::new_err(msg),
        vinort::Error::UnsupportedNodes(_) => UnsupportedNodes::new_err(msg),
        vinort::Error::ProviderUnavailable { .. } | vinort::Error::Provider { .. } => ProviderError::new_err(msg),
        vinort::Error::Cancelled { .. } => RunCancelled::new_err(msg),
        vinort::Error::MemoryLimit { .. } => MemoryLimitExceeded::new_err(msg),
        _ => VinortError::new_err(msg),
    }
}

/// A failure below the Python layer, carried out of a GIL-free section (where no `PyErr`
/// may be made) to be raised once the GIL is back.
pub(crate) enum Failure {
    Vinort(vinort::Error),
    Panic(String),
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        match f {
            Failure::Vinort(e) => to_py(e),
            Failure::Panic(msg) => VinortError::new_err(format!("internal error (a panic in vinort): {msg}")),
        }
    }
}

/// Runs `f`, turning a panic into [`Failure::Panic`] with its message.
pub(crate) fn guard<T>(f: impl FnOnce() -> vinort::Result<T>) -> Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(Failure::Vinort),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            Err(Failure::Panic(msg))
        }
    }
}

/// A `vinort::ir` error (a tensor that is not what it should be) as a `VinortError`.
pub(crate) fn ir(e: vinort::ir::Error) -> PyErr {
    VinortError::new_err(e.to_string())
}
