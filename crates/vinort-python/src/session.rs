//! `InferenceSession` and the small classes it hands out, shaped like onnxruntime's.

use std::collections::BTreeMap;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict};

use vinort::{Dim, IoInfo, Runtime, ValueType};

use crate::convert;
use crate::errors::{InvalidArgument, NoSuchFile, guard};
use crate::providers::{self, CpuSettings, Requested};

/// A model ready to run: onnxruntime's `InferenceSession`.
///
/// `InferenceSession(path_or_bytes, sess_options=None, providers=None, provider_options=None)`
#[pyclass(module = "vinort", frozen)]
pub(crate) struct InferenceSession {
    session: vinort::Session,
    /// The providers that started, in order.
    providers: Vec<Requested>,
    model_path: Option<String>,
}

#[pymethods]
impl InferenceSession {
    #[new]
    #[pyo3(signature = (path_or_bytes, sess_options=None, providers=None, provider_options=None))]
    fn new(
        py: Python<'_>,
        path_or_bytes: &Bound<'_, PyAny>,
        sess_options: Option<&Bound<'_, PyAny>>,
        providers: Option<&Bound<'_, PyAny>>,
        provider_options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<InferenceSession> {
        let requested = providers::requested(providers, provider_options)?;
        let built = providers::build(&requested, CpuSettings::from_options(sess_options)?)?;
        let names: Vec<String> = built.iter().map(vinort::Provider::name).collect();

        let (builder, model_path) = if let Ok(b) = path_or_bytes.cast::<PyBytes>() {
            (guard(|| Runtime::from_bytes(b.as_bytes().to_vec()))?, None)
        } else if let Ok(b) = path_or_bytes.cast::<PyByteArray>() {
            (guard(|| Runtime::from_bytes(b.to_vec()))?, None)
        } else {
            let path: std::path::PathBuf = path_or_bytes.extract().map_err(|_| {
                PyTypeError::new_err("path_or_bytes must be a model path (str or os.PathLike) or the model's bytes")
            })?;
            if !path.exists() {
                return Err(NoSuchFile::new_err(format!("model file not found: {}", path.display())));
            }
            let shown = path.display().to_string();
            (guard(|| Runtime::load(&path))?, Some(shown))
        };
        // Compiling can take seconds (OpenVINO): other Python threads may run meanwhile.
        let session = py.detach(|| guard(|| builder.providers(built).build()))?;

        // A provider that could not start was skipped (onnxruntime warns the same way);
        // get_providers() then leaves it out. The plan records that only as a warning line
        // ("provider NAME skipped: why", SessionBuilder::build), so that line is what is read.
        let plan = session.plan();
        let mut started = vec![];
        for (r, name) in requested.into_iter().zip(&names) {
            let prefix = format!("provider {name} skipped");
            match plan.warnings.iter().find(|w| w.starts_with(&prefix)) {
                Some(w) => warn(py, &format!("{}: {w}", r.kind.ort_name()))?,
                None => started.push(r),
            }
        }
        Ok(InferenceSession { session, providers: started, model_path })
    }

    /// Runs the model: `run(output_names, input_feed, run_options=None)`. `output_names` is a
    /// list of output names, or None for all, in the model's order; `input_feed` maps each input
    /// name to a numpy array (or anything `numpy.asarray` takes). Returns the outputs as numpy
    /// arrays (sequences as lists), in the order asked for.
    #[pyo3(signature = (output_names, input_feed, run_options=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        output_names: Option<Vec<String>>,
        input_feed: &Bound<'py, PyAny>,
        run_options: Option<PyRef<'py, RunOptions>>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let outputs = self.session.outputs();
        // onnxruntime takes an empty list as "all outputs" too.
        let wanted: Vec<usize> = match output_names.as_deref() {
            None | Some([]) => (0..outputs.len()).collect(),
            Some(names) => names
                .iter()
                .map(|n| {
                    outputs.iter().position(|o| o.name == *n).ok_or_else(|| {
                        let known: Vec<&str> = outputs.iter().map(|o| o.name.as_str()).collect();
                        InvalidArgument::new_err(format!(
                            "output '{n}': the model has no such output (its outputs: {})",
                            known.join(", ")
                        ))
                    })
                })
                .collect::<PyResult<_>>()?,
        };
        let feed = input_feed
            .cast::<PyDict>()
            .map_err(|_| PyTypeError::new_err("input_feed must be a dict of input name to array"))?;
        let inputs = self.session.inputs();
        let mut held = Vec::with_capacity(feed.len());
        for (k, v) in feed.iter() {
            let name: String = k.extract().map_err(|_| PyTypeError::new_err("input_feed keys must be input names"))?;
            // An unknown name is left for vinort to report (with the model's input names).
            let declared = inputs.iter().find(|i| i.name == name).map_or(&ValueType::Unknown, |i| &i.ty);
            let h = convert::hold(&name, declared, &v)?;
            held.push((name, h));
        }
        let feed: Vec<(&str, vinort::Input<'_>)> =
            held.iter().map(|(n, h)| Ok((n.as_str(), h.input()?))).collect::<PyResult<_>>()?;
        let options = run_options.map(|o| o.inner.clone()).unwrap_or_default();
        let session = &self.session;
        // The numpy memory stays borrowed (`held`) while the GIL is released.
        let out = py.detach(move || guard(|| session.run_with_options(feed, &options)))?;
        wanted.into_iter().map(|i| convert::to_python(py, &out[i])).collect()
    }

    /// The model's inputs to feed (overridable initializers are in
    /// `get_overridable_initializers()`), as `NodeArg`s.
    fn get_inputs(&self) -> Vec<NodeArg> {
        self.session.inputs().iter().filter(|i| i.required()).map(NodeArg::from_io).collect()
    }

    /// The model's outputs, as `NodeArg`s.
    fn get_outputs(&self) -> Vec<NodeArg> {
        self.session.outputs().iter().map(NodeArg::from_io).collect()
    }

    /// Inputs that have an initializer, which a run may feed to override it.
    fn get_overridable_initializers(&self) -> Vec<NodeArg> {
        self.session.inputs().iter().filter(|i| !i.required()).map(NodeArg::from_io).collect()
    }

    /// The providers the session uses, onnxruntime's names, in priority order.
    fn get_providers(&self) -> Vec<&'static str> {
        self.providers.iter().map(|r| r.kind.ort_name()).collect()
    }

    /// The options of each provider the session uses, as given (values as strings).
    fn get_provider_options(&self) -> BTreeMap<&'static str, BTreeMap<String, String>> {
        self.providers.iter().map(|r| (r.kind.ort_name(), r.options.iter().cloned().collect())).collect()
    }

    /// What the model says about itself.
    fn get_modelmeta(&self) -> ModelMetadata {
        let m = self.session.metadata();
        ModelMetadata {
            producer_name: m.producer_name.clone(),
            graph_name: m.graph_name.clone(),
            domain: m.domain.clone(),
            description: m.description.clone(),
            graph_description: m.graph_description.clone(),
            version: if m.version == 0 && !declares_model_version(&self.session.model().bytes) {
                NO_VERSION
            } else {
                m.version
            },
            custom_metadata_map: m.custom.clone(),
        }
    }

    /// The partition plan: which provider runs which nodes, the tensors between them, and why
    /// every refused node was refused.
    fn plan(&self) -> String {
        self.session.plan().to_string()
    }

    /// The model file's path, or None for a model given as bytes.
    #[getter]
    fn model_path(&self) -> Option<&str> {
        self.model_path.as_deref()
    }
}

/// Emits a Python `UserWarning`.
fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    py.import("warnings")?.call_method1("warn", (message,))?;
    Ok(())
}

/// One dim of a `NodeArg` shape, as onnxruntime gives it.
#[derive(Debug, Clone)]
enum ShapeDim {
    Fixed(usize),
    Symbol(String),
    Unknown,
}

/// A model input or output: onnxruntime's `NodeArg`.
#[pyclass(module = "vinort", frozen)]
#[derive(Debug, Clone)]
pub(crate) struct NodeArg {
    #[pyo3(get)]
    name: String,
    dims: Vec<ShapeDim>,
    #[pyo3(get, name = "type")]
    ty: String,
}

impl NodeArg {
    fn from_io(io: &IoInfo) -> NodeArg {
        // onnxruntime gives [] for an unknown rank and for non-tensors.
        let dims = io
            .ty
            .tensor_shape()
            .unwrap_or_default()
            .iter()
            .map(|d| match d {
                Dim::Fixed(n) => ShapeDim::Fixed(*n),
                Dim::Symbol(s) => ShapeDim::Symbol(s.clone()),
                Dim::Unknown => ShapeDim::Unknown,
            })
            .collect();
        NodeArg { name: io.name.clone(), dims, ty: type_string(&io.ty) }
    }
}

#[pymethods]
impl NodeArg {
    /// Ints for fixed dims, the name for symbolic ones, None for unknown ones.
    #[getter]
    fn shape(&self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        self.dims
            .iter()
            .map(|d| {
                Ok(match d {
                    ShapeDim::Fixed(n) => n.into_pyobject(py)?.into_any().unbind(),
                    ShapeDim::Symbol(s) => s.into_pyobject(py)?.into_any().unbind(),
                    ShapeDim::Unknown => py.None(),
                })
            })
            .collect()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let shape = self.shape(py)?.into_pyobject(py)?.repr()?.to_string();
        Ok(format!("NodeArg(name='{}', type='{}', shape={shape})", self.name, self.ty))
    }
}

/// onnxruntime's type string: `tensor(float)`, `seq(tensor(int64))`, `map(string,tensor(float))`,
/// `optional(tensor(float))`.
fn type_string(ty: &ValueType) -> String {
    match ty {
        ValueType::Tensor(d, _) => format!("tensor({})", d.onnx_name()),
        ValueType::Sequence(t) => format!("seq({})", type_string(t)),
        ValueType::Optional(t) => format!("optional({})", type_string(t)),
        ValueType::Map(k, v) => format!("map({},{})", k.onnx_name(), type_string(v)),
        _ => "unknown".into(),
    }
}

/// onnxruntime's `ModelMetadata.version` of a model that declares none.
const NO_VERSION: i64 = i64::MAX;

/// The one `ModelProto` field [`declares_model_version`] reads; prost skips every other field
/// without decoding it (the graph is one length-delimited field).
#[derive(Clone, PartialEq, prost::Message)]
struct ModelVersionOnly {
    #[prost(int64, optional, tag = "5")]
    model_version: Option<i64>,
}

/// Whether the model sets `model_version`: vinort's metadata reads an absent version as 0,
/// where onnxruntime reports `i64::MAX`, and `get_modelmeta()` follows onnxruntime.
fn declares_model_version(bytes: &[u8]) -> bool {
    use prost::Message;
    ModelVersionOnly::decode(bytes).is_ok_and(|m| m.model_version.is_some())
}

/// onnxruntime's `ModelMetadata`.
#[pyclass(module = "vinort", frozen, get_all)]
#[derive(Debug, Clone)]
pub(crate) struct ModelMetadata {
    producer_name: String,
    graph_name: String,
    domain: String,
    description: String,
    graph_description: String,
    version: i64,
    custom_metadata_map: BTreeMap<String, String>,
}

/// onnxruntime's `RunOptions`: `terminate = True` (from another thread) stops a run using these
/// options with `RunCancelled`; `run_tag` names the run in vinort's logs; `timeout_ms` (vinort's)
/// bounds it. Other attributes onnxruntime code sets are accepted and ignored.
#[pyclass(module = "vinort", dict)]
#[derive(Debug, Default)]
pub(crate) struct RunOptions {
    inner: vinort::RunOptions,
    tag: String,
    timeout_ms: Option<u64>,
}

#[pymethods]
impl RunOptions {
    #[new]
    fn new() -> RunOptions {
        RunOptions::default()
    }

    #[getter]
    fn terminate(&self) -> bool {
        self.inner.is_terminated()
    }

    #[setter]
    fn set_terminate(&self, stop: bool) {
        if stop { self.inner.terminate() } else { self.inner.unterminate() }
    }

    #[getter]
    fn run_tag(&self) -> &str {
        &self.tag
    }

    #[setter]
    fn set_run_tag(&mut self, tag: String) {
        self.inner = self.inner.clone().with_tag(tag.clone());
        self.tag = tag;
    }

    #[getter]
    fn timeout_ms(&self) -> Option<u64> {
        self.timeout_ms
    }

    #[setter]
    fn set_timeout_ms(&mut self, ms: u64) {
        self.inner = self.inner.clone().with_timeout(std::time::Duration::from_millis(ms));
        self.timeout_ms = Some(ms);
    }
}
