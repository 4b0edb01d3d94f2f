//! OpenVINO's reads, compiles and imports under the compile deadline
//! ([`vinort_ir::deadline`]). Its C API cannot cancel them, and a model can make its graph
//! passes spin for minutes, so each call runs on a thread of its own and the session stops
//! waiting at the deadline. Everything a call reads (the serialized model, the weights it
//! references by address, the blob) is moved into it, so an abandoned call holds its own
//! inputs and nothing it reads is freed under it; its result, when it comes, is dropped.

use std::path::PathBuf;

use vinort_ir::deadline::{self, Expired};
use vinort_ir::{Error, Tensor};

use crate::ffi::{CompiledModel, Core, OvModel};

/// Why a read-and-compile failed.
pub(super) enum Failed {
    /// `reshape_input` or `layout` did not apply: the user's error, not the nodes' fault.
    Edit(Error),
    /// Serializing, reading or compiling failed: some node is to blame.
    Nodes(String),
    /// OpenVINO did not finish within the deadline.
    Deadline(Expired),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Edit(e) => e.fmt(f),
            Failed::Nodes(m) => f.write_str(m),
            Failed::Deadline(d) => d.fmt(f),
        }
    }
}

impl Failed {
    pub(super) fn ov(e: crate::ffi::OvError) -> Failed {
        Failed::Nodes(e.to_string())
    }
}

/// What OpenVINO reads.
pub(super) enum Source {
    /// An ONNX model in memory (a serialized partition).
    Bytes(Vec<u8>),
    /// A model file.
    File(PathBuf),
}

/// One `reshape_input`: the input name, OpenVINO `(min, max)` dims, the shape as the user wrote it.
pub(super) type Reshape = (String, Vec<(i64, i64)>, String);

/// Edits of the read model before it compiles: `reshape_input` and `layout` (name, layout).
#[derive(Default, Clone)]
pub(super) struct Edits {
    pub(super) reshape: Vec<Reshape>,
    pub(super) layout: Vec<(String, String)>,
}

/// A read model and what it compiled to, with the weights it references by address.
pub(super) struct ReadAndCompiled {
    pub(super) model: OvModel,
    pub(super) compiled: CompiledModel,
    pub(super) weights: Vec<Tensor>,
}

/// Reads `source`, applies `edits` and compiles, within the deadline. `weights` (what the
/// source references by address) come back with the result.
pub(super) fn read_and_compile(
    core: &'static Core,
    source: Source,
    edits: Edits,
    device: String,
    props: Vec<(String, String)>,
    weights: Vec<Tensor>,
) -> Result<ReadAndCompiled, Failed> {
    deadline::within("OpenVINO's read and compile", move || {
        let mut model = match &source {
            Source::Bytes(b) => core.read_model_from_memory(b),
            Source::File(p) => core.read_model_from_file(p),
        }
        .map_err(Failed::ov)?;
        for (name, dims, shown) in &edits.reshape {
            model
                .reshape_input(name, dims)
                .map_err(|e| Failed::Edit(Error::invalid(format!("reshape_input {name}{shown}: {e}"))))?;
        }
        for (name, layout) in &edits.layout {
            model = model
                .with_input_layout(name, layout)
                .map_err(|e| Failed::Edit(Error::invalid(format!("layout {name}[{layout}]: {e}"))))?;
        }
        let compiled = core.compile(&model, &device, &props).map_err(Failed::ov)?;
        Ok(ReadAndCompiled { model, compiled, weights })
    })
    .map_err(Failed::Deadline)?
}

/// Reads and compiles a model file in one call ([`Core::compile_from_file`]), within the
/// deadline.
pub(super) fn compile_file(
    core: &'static Core,
    path: PathBuf,
    device: String,
    props: Vec<(String, String)>,
) -> Result<CompiledModel, Failed> {
    deadline::within("OpenVINO's compile of a model file", move || {
        core.compile_from_file(&path, &device, &props).map_err(Failed::ov)
    })
    .map_err(Failed::Deadline)?
}

/// Compiles a read model (a per-shape compile at run time), within the deadline. The model
/// is locked inside the call, so a later compile of an abandoned one waits in its own thread,
/// never in the caller's; `weights` (what the model references by address) are held by the
/// call.
pub(super) fn compile_shared(
    core: &'static Core,
    model: std::sync::Arc<std::sync::Mutex<OvModel>>,
    reshape: Vec<(String, Vec<(i64, i64)>)>,
    (device, props): (String, Vec<(String, String)>),
    weights: Vec<Tensor>,
) -> vinort_ir::Result<CompiledModel> {
    deadline::within("OpenVINO's compile for new input shapes", move || {
        let _weights = weights;
        let model = crate::lock(&model);
        for (name, dims) in &reshape {
            model.reshape_input(name, dims)?;
        }
        core.compile(&model, &device, &props)
    })
    .map_err(|e| Error::provider("OpenVINO", None, e))?
    .map_err(crate::error::to_ir_error)
}

/// Imports a compiled blob ([`crate::ffi::import_with`]), within the deadline.
pub(super) fn import(
    blob: bytes::Bytes,
    device: String,
    props: Vec<(String, String)>,
) -> Result<CompiledModel, Failed> {
    deadline::within("OpenVINO's import of a compiled blob", move || {
        crate::ffi::import_with(&blob, &device, &props).map_err(Failed::ov)
    })
    .map_err(Failed::Deadline)?
}
