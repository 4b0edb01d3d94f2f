//! vinort's errors as Python exceptions.
//!
//! Callers of onnxruntime catch the classes of `onnxruntime.capi.onnxruntime_pybind11_state`
//! (`InvalidArgument`, `Fail`, `NoSuchFile`, `InvalidProtobuf`, …), so those names exist here
//! with onnxruntime's meaning and vinort raises them where onnxruntime would. vinort's own,
//! finer kinds (`UnsupportedNodes`, `RunCancelled`, …) are subclasses of the onnxruntime class
//! that onnxruntime raises in their place, so `except onnxruntime…NotImplemented` and
//! `except vinort.UnsupportedNodes` both work. All derive from `vinort.VinortError`, a
//! `RuntimeError` (onnxruntime's derive from `Exception`: a handler for those catches these).
//! A panic anywhere below becomes a `VinortError`, never a crash and never pyo3's
//! `PanicException` (a `BaseException` that `except Exception` would not catch).

use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

create_exception!(vinort, VinortError, PyRuntimeError, "Every error vinort raises (a RuntimeError).");
// onnxruntime's status codes, one class each (onnxruntime_pybind11_state).
create_exception!(vinort, Fail, VinortError, "onnxruntime's FAIL: the operation failed.");
create_exception!(
    vinort,
    InvalidArgument,
    VinortError,
    "onnxruntime's INVALID_ARGUMENT: a run input (unknown name, wrong element type, rank or dim), an output name or a provider option is wrong."
);
create_exception!(vinort, NoSuchFile, VinortError, "onnxruntime's NO_SUCHFILE: the model file does not exist.");
create_exception!(vinort, NoModel, VinortError, "onnxruntime's NO_MODEL.");
create_exception!(vinort, EngineError, VinortError, "onnxruntime's ENGINE_ERROR.");
create_exception!(vinort, RuntimeException, VinortError, "onnxruntime's RUNTIME_EXCEPTION: running failed.");
create_exception!(
    vinort,
    InvalidModel,
    VinortError,
    "vinort's: the model cannot be read, is not ONNX, or breaks ONNX's rules (InvalidProtobuf or InvalidGraph)."
);
create_exception!(
    vinort,
    InvalidProtobuf,
    InvalidModel,
    "onnxruntime's INVALID_PROTOBUF: the bytes are not an ONNX model."
);
create_exception!(vinort, InvalidGraph, InvalidModel, "onnxruntime's INVALID_GRAPH: the model breaks ONNX's rules.");
create_exception!(vinort, ModelLoaded, VinortError, "onnxruntime's MODEL_LOADED.");
create_exception!(vinort, NotImplemented, VinortError, "onnxruntime's NOT_IMPLEMENTED: no implementation for a node.");
create_exception!(vinort, EPFail, VinortError, "onnxruntime's EP_FAIL: an execution provider failed.");
create_exception!(vinort, ModelLoadCanceled, VinortError, "onnxruntime's MODEL_LOAD_CANCELED.");
create_exception!(vinort, ModelRequiresCompilation, VinortError, "onnxruntime's MODEL_REQUIRES_COMPILATION.");
create_exception!(vinort, NotFound, VinortError, "onnxruntime's NOT_FOUND.");
create_exception!(vinort, DeviceReset, VinortError, "onnxruntime's DEVICE_RESET.");
// vinort's finer kinds.
create_exception!(
    vinort,
    UnsupportedNodes,
    NotImplemented,
    "Some nodes can be run by none of the session's providers; the message names each with every provider's reason."
);
create_exception!(
    vinort,
    ProviderError,
    EPFail,
    "An execution provider could not start, or failed compiling or running its part of the model."
);
create_exception!(vinort, RunCancelled, Fail, "The run was terminated or passed its timeout.");
create_exception!(vinort, MemoryLimitExceeded, RuntimeException, "A tensor is larger than the memory limit allows.");

/// Adds the exception classes to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("VinortError", py.get_type::<VinortError>())?;
    m.add("Fail", py.get_type::<Fail>())?;
    m.add("InvalidArgument", py.get_type::<InvalidArgument>())?;
    m.add("NoSuchFile", py.get_type::<NoSuchFile>())?;
    m.add("NoModel", py.get_type::<NoModel>())?;
    m.add("EngineError", py.get_type::<EngineError>())?;
    m.add("RuntimeException", py.get_type::<RuntimeException>())?;
    m.add("InvalidModel", py.get_type::<InvalidModel>())?;
    m.add("InvalidProtobuf", py.get_type::<InvalidProtobuf>())?;
    m.add("InvalidGraph", py.get_type::<InvalidGraph>())?;
    m.add("ModelLoaded", py.get_type::<ModelLoaded>())?;
    m.add("NotImplemented", py.get_type::<NotImplemented>())?;
    m.add("EPFail", py.get_type::<EPFail>())?;
    m.add("ModelLoadCanceled", py.get_type::<ModelLoadCanceled>())?;
    m.add("ModelRequiresCompilation", py.get_type::<ModelRequiresCompilation>())?;
    m.add("NotFound", py.get_type::<NotFound>())?;
    m.add("DeviceReset", py.get_type::<DeviceReset>())?;
    m.add("UnsupportedNodes", py.get_type::<UnsupportedNodes>())?;
    m.add("ProviderError", py.get_type::<ProviderError>())?;
    m.add("RunCancelled", py.get_type::<RunCancelled>())?;
    m.add("MemoryLimitExceeded", py.get_type::<MemoryLimitExceeded>())?;
    Ok(())
}

/// The Python exception for a vinort error, with its full message: the class onnxruntime
/// raises for the same failure (or vinort's subclass of it).
pub(crate) fn to_py(e: vinort::Error) -> PyErr {
    let msg = e.to_string();
    match e {
        vinort::Error::Input { .. } | vinort::Error::Option(_) | vinort::Error::Config(_) => {
            InvalidArgument::new_err(msg)
        }
        vinort::Error::Model(vinort::ir::Error::Decode(_)) => InvalidProtobuf::new_err(msg),
        vinort::Error::Model(vinort::ir::Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            NoSuchFile::new_err(msg)
        }
        vinort::Error::Model(vinort::ir::Error::Io { .. }) => Fail::new_err(msg),
        vinort::Error::Model(_) => InvalidGraph::new_err(msg),
        vinort::Error::UnsupportedNodes(_) => UnsupportedNodes::new_err(msg),
        vinort::Error::ProviderUnavailable { .. } | vinort::Error::Provider { .. } => ProviderError::new_err(msg),
        vinort::Error::Cancelled { .. } => RunCancelled::new_err(msg),
        vinort::Error::MemoryLimit { .. } => MemoryLimitExceeded::new_err(msg),
        _ => RuntimeException::new_err(msg),
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
