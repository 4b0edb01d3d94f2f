//! The OpenVINO execution provider.
//!
//! [`OpenVinoProvider`] starts once (library, core, devices, properties), then answers the
//! partitioner through [`capability`] and compiles partitions through [`compile`]:
//!
//! | module | owns |
//! |---|---|
//! | `device` | device availability at start, the core's property answers for option resolution |
//! | `capability` | the ordered refusal layers (static → semantics → slow → table → probe) |
//! | `compile` | the compile strategies (whole file, partition file, in memory) and blame on failure |
//! | `partition` | [`OvPartition`]: compiled model(s), ports, running on a pooled request |
//! | `pool` | the bounded infer-request pool |
//! | `shape_cache` | `disable_dynamic_shapes`: per-shape compilations in an LRU |
//! | `handover` | binding inputs as host pointers, handing outputs over without copies |

mod capability;
mod compile;
mod device;
mod handover;
mod partition;
mod pool;
mod shape_cache;

use std::path::PathBuf;
use std::sync::OnceLock;

use vinort_ir::{Capability, CompiledPartition, ExecutionProvider, Model, NodeIndex, PartitionDef, Result};

pub use partition::OvPartition;
pub use shape_cache::SHAPE_CACHE;

use crate::error::{OvError, OvResult, to_ir_error};
use crate::export::partition_model;
use crate::ffi;
use crate::options::{OpenVinoOptions, Resolved};
use crate::probe;
use crate::version::{self, Compatibility, MEASURED};

/// The OpenVINO provider: options plus, once started, the resolved device and properties.
#[derive(Debug)]
pub struct OpenVinoProvider {
    options: OpenVinoOptions,
    library: Option<PathBuf>,
    started: OnceLock<OvResult<Started>>,
}

#[derive(Debug, Clone)]
struct Started {
    version: String,
    resolved: Resolved,
    /// The physical device used to look up the capability table and key probes.
    table_device: String,
}

impl OpenVinoProvider {
    /// A provider with these options; `library` overrides the search for `libopenvino_c`.
    pub fn new(options: OpenVinoOptions, library: Option<PathBuf>) -> OpenVinoProvider {
        OpenVinoProvider { options, library, started: OnceLock::new() }
    }

    /// The options.
    pub fn options(&self) -> &OpenVinoOptions {
        &self.options
    }

    fn started(&self) -> Result<&Started> {
        self.started.get_or_init(|| self.start_inner()).as_ref().map_err(|e| to_ir_error(e.clone()))
    }

    fn start_inner(&self) -> OvResult<Started> {
        ffi::load_library(self.library.as_deref())?;
        let core = ffi::core()?;
        let version = ffi::version()?;
        check_version(&version)?;
        device::check_available(core, &self.options, &version)?;
        let mut resolved = self.options.compile_properties(&device::CoreProps::default())?;
        if self.options.enable_qdq_optimizer {
            // Said, not silently dropped: ORT rewrites QDQ graphs for NPU here; vinort hands
            // QDQ nodes to OpenVINO unchanged and OpenVINO's low-precision passes fuse them.
            resolved.warnings.push(
                "enable_qdq_optimizer: QDQ nodes are passed to OpenVINO unchanged (its low-precision transformations fuse them); no separate optimizer runs".into(),
            );
        }
        for w in &resolved.warnings {
            tracing::warn!(provider = "OpenVino", "{w}");
        }
        let table_device =
            self.options.device.physical_devices().first().map(|d| d.to_string()).unwrap_or_else(|| "CPU".into());
        tracing::info!(version = %version, device = %resolved.device, properties = ?resolved.properties, "OpenVINO provider started");
        Ok(Started { version, resolved, table_device })
    }

    fn compile_props(&self, s: &Started) -> Vec<(String, String)> {
        let mut p = s.resolved.properties.clone();
        p.extend(s.resolved.core_properties.iter().cloned());
        p
    }

    /// Compiles a single node alone (with the session's properties), remembering the verdict.
    fn probe(&self, model: &Model, ix: NodeIndex, s: &Started) -> probe::Verdict {
        let key = probe::key(&model.graph, ix, &s.resolved.device, &s.version);
        if let Some(v) = probe::lookup(&key) {
            return v;
        }
        let g = &model.graph;
        let n = g.node(ix);
        let inputs: Vec<_> = n
            .inputs
            .iter()
            .flatten()
            .chain(&n.implicit_inputs)
            .copied()
            .filter(|v| g.initializer(*v).is_none())
            .collect();
        let mut dedup = inputs.clone();
        dedup.dedup();
        let outputs: Vec<_> = n.outputs.iter().flatten().copied().collect();
        let verdict = match partition_model(model, &[ix], &dedup, &outputs) {
            Err(e) => probe::Verdict::Refused(e.to_string()),
            Ok(bytes) => match ffi::core().and_then(|c| {
                let m = c.read_model_from_memory(&bytes)?;
                c.compile(&m, &s.resolved.device, &self.compile_props(s))
            }) {
                Ok(_) => probe::Verdict::Ok,
                Err(e) => probe::Verdict::Refused(first_line(&e.to_string())),
            },
        };
        tracing::debug!(node = %n.name, op = %n.op_type, verdict = ?verdict, "probe");
        probe::remember(&key, verdict.clone());
        verdict
    }
}

/// The first non-empty line of an OpenVINO message, at most 300 characters: OpenVINO's
/// messages carry stack-like context that would swamp a partition plan.
fn first_line(s: &str) -> String {
    let l = s.lines().find(|l| !l.trim().is_empty()).unwrap_or(s);
    if l.len() > 300 {
        format!("{}…", &l[..l.char_indices().nth(300).map_or(l.len(), |(i, _)| i)])
    } else {
        l.to_owned()
    }
}

impl ExecutionProvider for OpenVinoProvider {
    fn name(&self) -> String {
        format!("OpenVino({})", self.options.device)
    }

    fn start(&self) -> Result<()> {
        self.started().map(|_| ())
    }

    fn warnings(&self) -> Vec<String> {
        match self.started.get() {
            Some(Ok(s)) => s.resolved.warnings.iter().map(|w| format!("{}: {w}", self.name())).collect(),
            _ => vec![],
        }
    }

    fn capability(&self, model: &Model, offered: &[NodeIndex]) -> Result<Capability> {
        let s = self.started()?;
        let probe = |ix| self.probe(model, ix, s);
        let layers = capability::layers();
        let mut cap = Capability::default();
        for &ix in offered {
            let q = capability::Query { model, ix, device: &s.table_device, probe: &probe };
            match capability::decide(&layers, &q) {
                None => cap.claimed.push(ix),
                Some(why) => cap.refused.push((ix, why)),
            }
        }
        Ok(cap)
    }

    fn compile(&self, model: &Model, part: &PartitionDef) -> Result<Box<dyn CompiledPartition>> {
        self.compile_partition(model, part)
    }
}

/// Compares the loaded OpenVINO with the release the rules were measured on: another release
/// is a warning (the rules may refuse what it fixed or claim what it broke), one older than
/// [`version::MINIMUM`] an error.
fn check_version(loaded: &str) -> OvResult<()> {
    match version::compare(loaded, MEASURED.full(), version::MINIMUM) {
        Compatibility::Measured => Ok(()),
        Compatibility::Different => {
            tracing::warn!(
                loaded,
                measured = MEASURED.full(),
                "OpenVINO {loaded} is loaded, but vinort's OpenVINO capability rules were measured on {}; \
                 re-measure them with `{}`",
                MEASURED.full(),
                version::REMEASURE
            );
            Ok(())
        }
        Compatibility::TooOld => Err(OvError::VersionTooOld {
            found: loaded.to_owned(),
            minimum: version::MINIMUM,
            measured: MEASURED.full(),
        }),
    }
}

/// Library search and version information, for `vinort devices` and error messages.
pub fn is_available() -> bool {
    ffi::load_library(None).is_ok()
}

/// The OpenVINO version and devices, or why OpenVINO cannot be used.
pub fn devices() -> OvResult<(String, Vec<(String, String)>)> {
    let core = ffi::core()?;
    let version = ffi::version()?;
    let devs = core.available_devices()?;
    Ok((
        version,
        devs.into_iter()
            .map(|d| {
                let full = core.property(&d, "FULL_DEVICE_NAME").unwrap_or_default();
                (d, full)
            })
            .collect(),
    ))
}
