//! onnxruntime's provider arguments (`providers`, `provider_options`) and `SessionOptions`,
//! read into vinort's ordered provider list.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString, PyTuple};

use crate::errors;

/// The execution providers vinort has, under onnxruntime's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProviderKind {
    OpenVino,
    Cpu,
}

impl ProviderKind {
    const ALL: [ProviderKind; 2] = [ProviderKind::OpenVino, ProviderKind::Cpu];

    pub(crate) fn ort_name(self) -> &'static str {
        match self {
            ProviderKind::OpenVino => "OpenVINOExecutionProvider",
            ProviderKind::Cpu => "CPUExecutionProvider",
        }
    }

    fn from_ort_name(name: &str) -> PyResult<ProviderKind> {
        ProviderKind::ALL.into_iter().find(|k| k.ort_name() == name).ok_or_else(|| {
            let valid: Vec<&str> = ProviderKind::ALL.iter().map(|k| k.ort_name()).collect();
            PyValueError::new_err(format!("unknown execution provider '{name}' (vinort has: {})", valid.join(", ")))
        })
    }
}

/// The providers to use when none are given: OpenVINO then CPU, or CPU alone when the
/// OpenVINO library cannot be loaded.
pub(crate) fn available() -> Vec<ProviderKind> {
    if vinort::OpenVino::is_available() { ProviderKind::ALL.to_vec() } else { vec![ProviderKind::Cpu] }
}

/// One requested provider with its options as strings, as given.
#[derive(Debug, Clone)]
pub(crate) struct Requested {
    pub(crate) kind: ProviderKind,
    pub(crate) options: Vec<(String, String)>,
}

/// Reads `providers` and `provider_options` the way onnxruntime does: names or
/// `(name, options)` tuples, and optionally a list of option dicts parallel to the names.
pub(crate) fn requested(
    providers: Option<&Bound<'_, PyAny>>,
    provider_options: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<Requested>> {
    let Some(providers) = providers.filter(|p| !p.is_none()) else {
        if provider_options.is_some_and(|o| !o.is_none()) {
            return Err(PyValueError::new_err("'provider_options' is given but 'providers' is not"));
        }
        return Ok(available().into_iter().map(|kind| Requested { kind, options: vec![] }).collect());
    };
    if providers.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err("'providers' must be a list of provider names, not a string"));
    }
    let mut out: Vec<Requested> = vec![];
    let mut any_tuple = false;
    for item in providers.try_iter()? {
        let item = item?;
        let (name, options) = if let Ok(t) = item.cast::<PyTuple>() {
            any_tuple = true;
            if t.len() != 2 {
                return Err(PyValueError::new_err("a provider tuple must be (name, options dict)"));
            }
            (t.get_item(0)?.extract::<String>()?, option_pairs(&t.get_item(1)?)?)
        } else {
            let name = item
                .extract::<String>()
                .map_err(|_| PyTypeError::new_err("each provider must be a name or a (name, options dict) tuple"))?;
            (name, vec![])
        };
        let kind = ProviderKind::from_ort_name(&name)?;
        if out.iter().any(|r| r.kind == kind) {
            return Err(PyValueError::new_err(format!("provider '{name}' is given more than once")));
        }
        out.push(Requested { kind, options });
    }
    if out.is_empty() {
        return Err(PyValueError::new_err("'providers' is empty: give at least one execution provider"));
    }
    if let Some(opts) = provider_options.filter(|o| !o.is_none()) {
        if any_tuple {
            return Err(PyValueError::new_err(
                "options are given both in 'providers' tuples and in 'provider_options': use one",
            ));
        }
        let opts: Vec<Bound<'_, PyAny>> = opts.try_iter()?.collect::<PyResult<_>>()?;
        if opts.len() != out.len() {
            return Err(PyValueError::new_err(format!(
                "'provider_options' has {} entries for {} providers: give one dict per provider",
                opts.len(),
                out.len()
            )));
        }
        for (r, o) in out.iter_mut().zip(&opts) {
            r.options = option_pairs(o)?;
        }
    }
    Ok(out)
}

/// An options dict as `(key, value)` strings; values may be strings, numbers or booleans.
fn option_pairs(options: &Bound<'_, PyAny>) -> PyResult<Vec<(String, String)>> {
    let dict = options.cast::<PyDict>().map_err(|_| PyTypeError::new_err("provider options must be a dict"))?;
    dict.iter()
        .map(|(k, v)| {
            let key: String = k.extract().map_err(|_| PyTypeError::new_err("provider option keys must be strings"))?;
            // bool before int: Python's bool is an int.
            let value = if let Ok(b) = v.cast::<PyBool>() {
                if b.is_true() { "true" } else { "false" }.to_owned()
            } else if v.is_instance_of::<PyString>() || v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>() {
                v.str()?.to_string()
            } else {
                return Err(PyTypeError::new_err(format!(
                    "provider option '{key}': value must be a string, a number or a bool, got {}",
                    v.get_type().name()?
                )));
            };
            Ok((key, value))
        })
        .collect()
}

/// What a session takes from `SessionOptions` (vinort's or onnxruntime's: read by attribute).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CpuSettings {
    threads: Option<usize>,
    level: Option<vinort::GraphOptimizationLevel>,
}

impl CpuSettings {
    pub(crate) fn from_options(options: Option<&Bound<'_, PyAny>>) -> PyResult<CpuSettings> {
        let Some(o) = options.filter(|o| !o.is_none()) else { return Ok(CpuSettings::default()) };
        let mut s = CpuSettings::default();
        if let Ok(n) = o.getattr("intra_op_num_threads") {
            let n: i64 = n.extract()?;
            if n < 0 {
                return Err(PyValueError::new_err(format!(
                    "intra_op_num_threads must be 0 (default) or more, got {n}"
                )));
            }
            s.threads = (n > 0).then_some(n as usize);
        }
        if let Ok(level) = o.getattr("graph_optimization_level") {
            // onnxruntime's enum, vinort's enum or a plain int: all convert with int().
            let code: i64 = o.py().get_type::<PyInt>().call1((level,))?.extract()?;
            s.level = Some(level_from_code(code)?);
        }
        Ok(s)
    }

    fn cpu(self) -> vinort::Cpu {
        let mut cpu = vinort::Cpu::default();
        if let Some(n) = self.threads {
            cpu = cpu.threads(n);
        }
        if let Some(level) = self.level {
            cpu = cpu.optimization(level);
        }
        cpu
    }
}

/// onnxruntime's `GraphOptimizationLevel` values. `ORT_ENABLE_LAYOUT` (3) is the layout level
/// onnxruntime added below `ORT_ENABLE_ALL`; vinort's layout changes are all in `All`.
fn level_from_code(code: i64) -> PyResult<vinort::GraphOptimizationLevel> {
    use vinort::GraphOptimizationLevel as L;
    Ok(match code {
        0 => L::Disabled,
        1 => L::Basic,
        2 => L::Extended,
        3 | 99 => L::All,
        other => {
            return Err(PyValueError::new_err(format!(
                "graph_optimization_level {other} is not one of ORT_DISABLE_ALL (0), ORT_ENABLE_BASIC (1), \
                 ORT_ENABLE_EXTENDED (2), ORT_ENABLE_LAYOUT (3), ORT_ENABLE_ALL (99)"
            )));
        }
    })
}

/// Builds the vinort providers for the requested list.
pub(crate) fn build(requested: &[Requested], cpu: CpuSettings) -> PyResult<Vec<vinort::Provider>> {
    requested
        .iter()
        .map(|r| match r.kind {
            ProviderKind::OpenVino => {
                let pairs = r.options.iter().map(|(k, v)| (k.as_str(), v.as_str()));
                Ok(vinort::OpenVino::from_key_values(pairs).map_err(errors::to_py)?.into())
            }
            ProviderKind::Cpu => match r.options.first() {
                // onnxruntime's CPU provider has no options worth mapping; a key is a mistake.
                Some((k, _)) => Err(errors::InvalidArgument::new_err(format!(
                    "CPUExecutionProvider has no option '{k}' (set threads and the optimization level with SessionOptions)"
                ))),
                None => Ok(cpu.cpu().into()),
            },
        })
        .collect()
}

/// onnxruntime's `GraphOptimizationLevel`: how much the CPU provider's graph optimizer rewrites.
#[pyclass(module = "vinort", eq, eq_int, frozen)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GraphOptimizationLevel {
    #[pyo3(name = "ORT_DISABLE_ALL")]
    DisableAll = 0,
    #[pyo3(name = "ORT_ENABLE_BASIC")]
    EnableBasic = 1,
    #[pyo3(name = "ORT_ENABLE_EXTENDED")]
    EnableExtended = 2,
    #[pyo3(name = "ORT_ENABLE_LAYOUT")]
    EnableLayout = 3,
    #[pyo3(name = "ORT_ENABLE_ALL")]
    EnableAll = 99,
}

/// onnxruntime's `SessionOptions`. vinort reads `intra_op_num_threads` (the CPU provider's
/// threads; 0 = one per core) and `graph_optimization_level`; every other attribute
/// onnxruntime code sets (`log_severity_level`, `execution_mode`, …) is accepted and ignored.
#[pyclass(module = "vinort", dict)]
#[derive(Debug)]
pub(crate) struct SessionOptions {
    #[pyo3(get, set)]
    intra_op_num_threads: i64,
    #[pyo3(get, set)]
    inter_op_num_threads: i64,
    #[pyo3(get, set)]
    graph_optimization_level: Py<PyAny>,
}

#[pymethods]
impl SessionOptions {
    #[new]
    fn new(py: Python<'_>) -> PyResult<SessionOptions> {
        Ok(SessionOptions {
            intra_op_num_threads: 0,
            inter_op_num_threads: 0,
            graph_optimization_level: Py::new(py, GraphOptimizationLevel::EnableAll)?.into_any(),
        })
    }
}
