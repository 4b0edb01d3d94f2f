//! The execution providers vinort has, under onnxruntime's names, built from the list the
//! Python layer (`vinort/_session.py`) normalized the way onnxruntime does.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

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

/// The providers this build can use, in the default order: OpenVINO then CPU, or CPU alone
/// when the OpenVINO library cannot be loaded.
pub(crate) fn available() -> Vec<ProviderKind> {
    if vinort::OpenVino::is_available() { ProviderKind::ALL.to_vec() } else { vec![ProviderKind::Cpu] }
}

/// One requested provider with its options as strings, as given.
#[derive(Debug, Clone)]
pub(crate) struct Requested {
    pub(crate) kind: ProviderKind,
    pub(crate) options: Vec<(String, String)>,
}

impl Requested {
    pub(crate) fn parse(list: Vec<(String, Vec<(String, String)>)>) -> PyResult<Vec<Requested>> {
        list.into_iter()
            .map(|(name, options)| Ok(Requested { kind: ProviderKind::from_ort_name(&name)?, options }))
            .collect()
    }
}

/// What a session takes from `SessionOptions`: the CPU provider's threads and graph optimizer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CpuSettings {
    pub(crate) threads: Option<usize>,
    pub(crate) level: Option<vinort::GraphOptimizationLevel>,
}

impl CpuSettings {
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
pub(crate) fn level_from_code(code: i64) -> PyResult<vinort::GraphOptimizationLevel> {
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

/// Builds the vinort providers for the requested list. The CPU provider's options are
/// onnxruntime's arena and allocator knobs, which vinort's buffer pool has no use for: they
/// are accepted and ignored, as onnxruntime ignores keys its CPU provider does not know.
pub(crate) fn build(requested: &[Requested], cpu: CpuSettings) -> PyResult<Vec<vinort::Provider>> {
    requested
        .iter()
        .map(|r| match r.kind {
            ProviderKind::OpenVino => {
                let pairs = r.options.iter().map(|(k, v)| (k.as_str(), v.as_str()));
                Ok(vinort::OpenVino::from_key_values(pairs).map_err(errors::to_py)?.into())
            }
            ProviderKind::Cpu => Ok(cpu.cpu().into()),
        })
        .collect()
}
