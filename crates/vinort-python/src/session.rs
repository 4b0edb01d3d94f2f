//! The native session under `vinort.InferenceSession` (`vinort/_session.py`), and the small
//! classes it hands out, shaped like onnxruntime's. The Python layer normalizes onnxruntime's
//! arguments (providers, `SessionOptions`); this one loads, builds and runs, so a run costs
//! one call across the boundary.

use std::collections::BTreeMap;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use vinort::{Dim, IoInfo, Runtime, ValueType};

use crate::convert;
use crate::errors::{InvalidArgument, NoSuchFile, guard};
use crate::providers::{self, CpuSettings, Requested};

/// Every session of the process is built through one environment: a second session of the
/// same file with the same options shares the first's mapped model, packed weights and
/// compiled OpenVINO models while the first lives (`vinort::Environment`), where onnxruntime
/// would hold a second copy of everything.
static ENVIRONMENT: std::sync::LazyLock<vinort::Environment> = std::sync::LazyLock::new(vinort::Environment::new);

/// A built model: `vinort._vinort.Session(model, providers, intra_op_num_threads,
/// graph_optimization_level, free_dimensions)`, where `model` is a path or the model's bytes,
/// `providers` a list of `(onnxruntime name, [(key, value)])` in priority order, and
/// `free_dimensions` `(symbolic dim name, size)` pairs fixed for every run.
#[pyclass(module = "vinort._vinort", frozen)]
pub(crate) struct Session {
    session: vinort::Session,
    /// The providers that started, in order.
    providers: Vec<Requested>,
    /// The providers that could not start, with why: `(onnxruntime name, reason)`.
    skipped: Vec<(&'static str, String)>,
    model_path: Option<String>,
    /// Symbolic dims fixed by the caller (onnxruntime's `add_free_dimension_override_by_name`).
    fixed: Vec<(String, usize)>,
    /// The inputs a run must be given (no initializer, not optional), by name.
    required: Vec<String>,
}

#[pymethods]
impl Session {
    #[new]
    #[pyo3(signature = (model, providers, intra_op_num_threads=0, graph_optimization_level=99, free_dimensions=vec![], config_entries=vec![]))]
    fn new(
        py: Python<'_>,
        model: &Bound<'_, PyAny>,
        providers: Vec<(String, Vec<(String, String)>)>,
        intra_op_num_threads: i64,
        graph_optimization_level: i64,
        free_dimensions: Vec<(String, usize)>,
        config_entries: Vec<(String, String)>,
    ) -> PyResult<Session> {
        let requested = Requested::parse(providers)?;
        // onnxruntime takes 0 and any negative count as "its default".
        let cpu = CpuSettings {
            threads: usize::try_from(intra_op_num_threads).ok().filter(|n| *n > 0),
            level: Some(providers::level_from_code(graph_optimization_level)?),
        };
        let built = providers::build(&requested, cpu)?;
        let names: Vec<String> = built.iter().map(vinort::Provider::name).collect();

        let (builder, model_path) = if let Ok(b) = model.cast::<PyBytes>() {
            (guard(|| Runtime::from_bytes(b.as_bytes().to_vec()))?, None)
        } else {
            let path: std::path::PathBuf = model.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "Unable to load from type '{}'",
                    model.get_type().str().map(|s| s.to_string()).unwrap_or_default()
                ))
            })?;
            if !path.exists() {
                return Err(NoSuchFile::new_err(format!("model file not found: {}", path.display())));
            }
            let shown = path.display().to_string();
            (guard(|| ENVIRONMENT.load(&path))?, Some(shown))
        };
        // The session config entries, as `SessionBuilder::config_entry` takes them (vinort acts on
        // `session.cost_model` and `ep.context_*`; the others become plan warnings).
        let builder = config_entries.into_iter().fold(builder, |b, (k, v)| b.config_entry(k, v));
        // Compiling can take seconds (OpenVINO): other Python threads may run meanwhile.
        let session = py.detach(|| guard(|| builder.providers(built).build()))?;

        // A provider that could not start was skipped (onnxruntime warns the same way). The
        // plan records that only as a warning line ("provider NAME skipped: why",
        // SessionBuilder::build), so that line is what is read.
        let plan = session.plan();
        let (mut started, mut skipped) = (vec![], vec![]);
        for (r, name) in requested.into_iter().zip(&names) {
            let prefix = format!("provider {name} skipped");
            match plan.warnings.iter().find(|w| w.starts_with(&prefix)) {
                Some(w) => skipped.push((r.kind.ort_name(), w.clone())),
                None => started.push(r),
            }
        }
        let required = session
            .inputs()
            .iter()
            .filter(|i| i.required() && !matches!(i.ty, ValueType::Optional(_)))
            .map(|i| i.name.clone())
            .collect();
        Ok(Session { session, providers: started, skipped, model_path, fixed: free_dimensions, required })
    }

    /// Runs the model: `run(output_names, input_feed, run_options)`. `output_names` is a list
    /// of output names, or None for all, in the model's order; `input_feed` maps each input
    /// name to a numpy array (a list is converted to the input's element type, as onnxruntime
    /// does). Returns the outputs as numpy arrays (sequences as lists), in the order asked for.
    #[pyo3(signature = (output_names, input_feed, run_options=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        output_names: Option<Vec<String>>,
        input_feed: &Bound<'py, PyDict>,
        run_options: Option<PyRef<'py, RunOptions>>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let wanted = self.wanted(output_names.as_deref())?;
        let held = self.hold_feed(input_feed)?;
        let feed: Vec<(&str, vinort::Input<'_>)> =
            held.iter().map(|(n, h)| Ok((n.as_str(), h.input()?))).collect::<PyResult<_>>()?;
        let session = &self.session;
        let out = match run_options {
            Some(o) => {
                let options = o.inner.clone();
                py.detach(move || guard(|| session.run_with_options(feed, &options)))?
            }
            // The numpy memory stays borrowed (`held`) while the GIL is released.
            None => py.detach(move || guard(|| session.run(feed)))?,
        };
        wanted.into_iter().map(|i| convert::to_python(py, &out[i])).collect()
    }

    /// Runs with onnxruntime's I/O binding: `run_bound(input_feed, outputs, run_options)`, where
    /// `outputs` lists `(name, array or None)`: an array is written in place (C-contiguous,
    /// writeable, of the output's element type and shape), None asks for a new array. Returns,
    /// per output, the new array, or None for one written in place.
    #[pyo3(signature = (input_feed, outputs, run_options=None))]
    fn run_bound<'py>(
        &self,
        py: Python<'py>,
        input_feed: &Bound<'py, PyDict>,
        outputs: Vec<(String, Option<Bound<'py, PyAny>>)>,
        run_options: Option<PyRef<'py, RunOptions>>,
    ) -> PyResult<Vec<Option<Py<PyAny>>>> {
        self.wanted(Some(&outputs.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>()))?;
        let held = self.hold_feed(input_feed)?;
        let mut targets = vec![];
        for (name, array) in &outputs {
            if let Some(a) = array {
                targets.push((name.as_str(), convert::hold_output(name, a)?));
            }
        }
        let mut binding = self.session.binding();
        for (name, h) in &held {
            binding.bind_input(name, h.input()?).map_err(crate::errors::to_py)?;
        }
        for (name, t) in &mut targets {
            t.bind(&mut binding, name)?;
        }
        let options = run_options.map(|o| o.inner.clone()).unwrap_or_default();
        let session = &self.session;
        py.detach(|| guard(|| session.run_with(&mut binding, &options)))?;
        outputs
            .iter()
            .map(|(name, array)| match array {
                Some(_) => Ok(None),
                None => {
                    let v = binding
                        .output(name)
                        .ok_or_else(|| InvalidArgument::new_err(format!("output '{name}' was not computed")))?;
                    Ok(Some(convert::to_python(py, v)?))
                }
            })
            .collect()
    }

    /// The model's inputs to feed (overridable initializers are in
    /// `get_overridable_initializers()`), as `NodeArg`s.
    fn get_inputs(&self) -> Vec<NodeArg> {
        self.session.inputs().iter().filter(|i| i.required()).map(|i| self.node_arg(i)).collect()
    }

    /// The model's outputs, as `NodeArg`s.
    fn get_outputs(&self) -> Vec<NodeArg> {
        self.session.outputs().iter().map(|i| self.node_arg(i)).collect()
    }

    /// Inputs that have an initializer, which a run may feed to override it.
    fn get_overridable_initializers(&self) -> Vec<NodeArg> {
        self.session.inputs().iter().filter(|i| !i.required()).map(|i| self.node_arg(i)).collect()
    }

    /// The providers the session uses, onnxruntime's names, in priority order.
    fn get_providers(&self) -> Vec<&'static str> {
        self.providers.iter().map(|r| r.kind.ort_name()).collect()
    }

    /// The providers that could not start: `(onnxruntime name, why)`.
    fn skipped_providers(&self) -> Vec<(&'static str, String)> {
        self.skipped.clone()
    }

    /// The options of each provider the session uses, as given (values as strings). The CPU
    /// provider's are empty: vinort ignores them, as onnxruntime reports only what it uses.
    fn get_provider_options(&self) -> BTreeMap<&'static str, BTreeMap<String, String>> {
        self.providers
            .iter()
            .map(|r| {
                let options = match r.kind {
                    providers::ProviderKind::Cpu => BTreeMap::new(),
                    providers::ProviderKind::OpenVino => r.options.iter().cloned().collect(),
                };
                (r.kind.ort_name(), options)
            })
            .collect()
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

    /// The partitions in execution order: `(provider, node count)`.
    fn partitions(&self) -> Vec<(String, usize)> {
        self.session.plan().partitions.iter().map(|p| (p.provider.clone(), p.nodes.len())).collect()
    }

    /// The model file's path, or None for a model given as bytes.
    #[getter]
    fn model_path(&self) -> Option<&str> {
        self.model_path.as_deref()
    }
}

impl Session {
    /// The output positions for `names` (None or empty: all, as onnxruntime takes them).
    fn wanted(&self, names: Option<&[String]>) -> PyResult<Vec<usize>> {
        let outputs = self.session.outputs();
        match names {
            None | Some([]) => Ok((0..outputs.len()).collect()),
            Some(names) => names
                .iter()
                .map(|n| {
                    outputs.iter().position(|o| o.name == *n).ok_or_else(|| {
                        let known: Vec<&str> = outputs.iter().map(|o| o.name.as_str()).collect();
                        InvalidArgument::new_err(format!(
                            "Invalid output name: '{n}': the model has no such output (its outputs: {})",
                            known.join(", ")
                        ))
                    })
                })
                .collect(),
        }
    }

    /// The feed as run inputs. Like onnxruntime: a required input missing from the feed is a
    /// `ValueError` naming all of them (before any other check); an unknown name is left for
    /// vinort to report (`InvalidArgument`, with the model's input names).
    fn hold_feed<'py>(&self, feed: &Bound<'py, PyDict>) -> PyResult<Vec<(String, convert::Held<'py>)>> {
        let missing: Vec<&str> =
            self.required.iter().filter(|n| !feed.contains(n.as_str()).unwrap_or(false)).map(String::as_str).collect();
        if !missing.is_empty() {
            let py = feed.py();
            let given = PyList::new(py, feed.keys())?.repr()?.to_string();
            let missing = PyList::new(py, missing)?.repr()?.to_string();
            return Err(PyValueError::new_err(format!(
                "Required inputs ({missing}) are missing from input feed ({given})."
            )));
        }
        let inputs = self.session.inputs();
        let mut held = Vec::with_capacity(feed.len());
        for (k, v) in feed.iter() {
            let name: String = match k.cast::<PyString>() {
                Ok(s) => s.to_str()?.to_owned(),
                Err(_) => return Err(PyTypeError::new_err("input_feed keys must be input names (str)")),
            };
            let info = inputs.iter().find(|i| i.name == name);
            let declared = info.map_or(&ValueType::Unknown, |i| &i.ty);
            let h = convert::hold(&name, declared, &v)?;
            if let (Some(info), false) = (info, self.fixed.is_empty()) {
                self.check_fixed(info, &h)?;
            }
            held.push((name, h));
        }
        Ok(held)
    }

    /// A tensor fed for an input with a dim the caller fixed must have that size there.
    fn check_fixed(&self, info: &IoInfo, held: &convert::Held<'_>) -> PyResult<()> {
        let (Some(dims), Some(shape)) = (info.ty.tensor_shape(), held.shape()) else { return Ok(()) };
        for (i, (d, got)) in dims.iter().zip(&shape).enumerate() {
            if let Dim::Symbol(s) = d
                && let Some((_, want)) = self.fixed.iter().find(|(n, _)| n == s)
                && want != got
            {
                return Err(InvalidArgument::new_err(format!(
                    "Got invalid dimensions for input: {} for the following indices\n index: {i} Got: {got} Expected: {want}\n \
                     (dimension '{s}' is fixed by add_free_dimension_override_by_name)",
                    info.name
                )));
            }
        }
        Ok(())
    }

    fn node_arg(&self, io: &IoInfo) -> NodeArg {
        let mut arg = NodeArg::from_io(io);
        for d in &mut arg.dims {
            if let ShapeDim::Symbol(s) = d
                && let Some((_, n)) = self.fixed.iter().find(|(name, _)| name == s)
            {
                *d = ShapeDim::Fixed(*n);
            }
        }
        arg
    }
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
/// options with `RunCancelled` (a `Fail`, as in onnxruntime); `logid` (or vinort's `run_tag`)
/// names the run in vinort's logs; `timeout_ms` (vinort's) bounds it. onnxruntime's other
/// attributes and run config entries are kept and have no effect.
#[pyclass(module = "vinort")]
#[derive(Debug)]
pub(crate) struct RunOptions {
    inner: vinort::RunOptions,
    tag: String,
    timeout_ms: Option<u64>,
    #[pyo3(get, set)]
    log_severity_level: i64,
    #[pyo3(get, set)]
    log_verbosity_level: i64,
    #[pyo3(get, set)]
    only_execute_path_to_fetches: bool,
    config: BTreeMap<String, String>,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            inner: vinort::RunOptions::default(),
            tag: String::new(),
            timeout_ms: None,
            log_severity_level: -1,
            log_verbosity_level: 0,
            only_execute_path_to_fetches: false,
            config: BTreeMap::new(),
        }
    }
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

    /// onnxruntime's name for the run's tag.
    #[getter]
    fn logid(&self) -> &str {
        &self.tag
    }

    #[setter]
    fn set_logid(&mut self, tag: String) {
        self.set_run_tag(tag);
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

    /// Sets a run config entry (onnxruntime's keys; kept, no effect in vinort).
    fn add_run_config_entry(&mut self, key: String, value: String) {
        self.config.insert(key, value);
    }

    /// A run config entry; a `RuntimeError` for a key never set, as in onnxruntime.
    fn get_run_config_entry(&self, key: &str) -> PyResult<String> {
        self.config.get(key).cloned().ok_or_else(|| {
            pyo3::exceptions::PyRuntimeError::new_err(format!("RunOptions does not have configuration with key: {key}"))
        })
    }
}
