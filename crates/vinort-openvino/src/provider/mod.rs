//! The OpenVINO execution provider.
//!
//! [`OpenVinoProvider`] starts once (library, core, devices, properties), then answers the
//! partitioner through [`capability`] and compiles partitions through [`compile`]:
//!
//! | module | owns |
//! |---|---|
//! | `device` | device availability at start, the core's property answers for option resolution |
//! | `capability` | the ordered refusal layers (static → semantics → slow → table → probe) |
//! | `compile` | the compile strategies (whole file with `cache_dir`, partition file, in memory by address) and blame on failure |
//! | `partition` | [`OvPartition`]: compiled model(s), ports, running on a pooled request |
//! | `pool` | the bounded infer-request pool |
//! | `shape_cache` | `disable_dynamic_shapes`: per-shape compilations in an LRU |
//! | `evidence` | the nodes a failed whole-model conversion names, refused before the model is split |
//! | `handover` | binding inputs as host pointers, handing outputs over without copies |
//! | `timed` | OpenVINO's reads, compiles and imports under the compile deadline |
//! | `watch` | the thread that cancels requests of runs that must stop |

mod capability;
mod compile;
mod device;
mod evidence;
mod handover;
mod partition;
mod pool;
mod shape_cache;
mod timed;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use vinort_ir::{Capability, CompiledPartition, ExecutionProvider, Model, NodeIndex, PartitionDef, Result, WholeModel};

use compile::OnFailure;

pub use partition::OvPartition;
pub use shape_cache::SHAPE_CACHE;

use crate::error::{OvError, OvResult, to_ir_error};
use crate::export::{Weights, partition_model};
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
        let kind = crate::cpu_kind::current();
        if resolved.device == "CPU" && kind.cap_hides_bf16() && resolved.property("INFERENCE_PRECISION_HINT").is_none()
        {
            // OpenVINO 2026.4.1 picks bf16 from the CPU alone, and its bf16 kernels are above
            // the cap: every default-precision compile would fail (crate::cpu_kind).
            let (k, v) = kind.cap.clone().unwrap_or_default();
            resolved.properties.push(("INFERENCE_PRECISION_HINT".into(), "f32".into()));
            resolved.warnings.push(format!(
                "{k}={v} keeps OpenVINO's kernels below bf16: precision f32, the default of a CPU without bf16"
            ));
        }
        if self.options.enable_qdq_optimizer {
            // Said, not silently dropped: ORT rewrites QDQ graphs for NPU here; vinort hands
            // QDQ nodes to OpenVINO unchanged and OpenVINO's low-precision passes fuse them.
            resolved.warnings.push(
                "enable_qdq_optimizer: QDQ nodes are passed to OpenVINO unchanged (its low-precision transformations fuse them); no separate optimizer runs".into(),
            );
        }
        if let Some(i) = resolved.core_properties.iter().position(|(k, _)| k == "CACHE_DIR")
            && let Err(e) = crate::partition_cache::usable(Path::new(&resolved.core_properties[i].1))
        {
            // A cache only saves time: a folder that cannot be created or written costs the
            // cache, not the session (OpenVINO would fail every compile on it).
            let (_, dir) = resolved.core_properties.remove(i);
            resolved.warnings.push(format!("cache_dir {dir} is not usable ({e}): compiling without a model cache"));
        }
        for w in &resolved.warnings {
            tracing::warn!(provider = "OpenVino", "{w}");
        }
        // Arm by arm: `physical_devices().first()` compiled to a branch on a list length read
        // from a single device's padding before its variant was tested, which valgrind
        // reports as a jump on uninitialised memory (the result was right either way).
        let table_device = match &self.options.device {
            crate::options::Device::Single(d) => d.to_string(),
            meta => meta.physical_devices().first().map(|d| d.to_string()).unwrap_or_else(|| "CPU".into()),
        };
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
        // An input no type rule covers: the probe asks only whether OpenVINO converts the op.
        let untyped = capability::untyped_input(model, ix);
        let serialized = match &untyped {
            Some(_) => crate::export::stand_in_model(model, ix, &dedup, &outputs),
            None => partition_model(model, &[ix], &dedup, &outputs, Weights::ByAddress),
        };
        let verdict = match (serialized, ffi::core()) {
            (Err(e), _) => probe::Verdict::Refused(e.to_string()),
            (_, Err(e)) => probe::Verdict::Refused(first_line(&e.to_string())),
            // The weights `ser` references by address go with the compile.
            (Ok(ser), Ok(core)) => {
                let source = timed::Source::Bytes(ser.bytes);
                let (device, props) = (s.resolved.device.clone(), self.compile_props(s));
                match timed::read_and_compile(core, source, Default::default(), device, props, ser.by_address) {
                    Ok(_) => probe::Verdict::Ok,
                    Err(timed::Failed::Deadline(d)) => {
                        // OpenVINO's answer is unknown, so nothing goes to the file; this
                        // process does not ask again (a re-partition would wait as long).
                        let verdict = probe::Verdict::Refused(format!("compile deadline: {d}"));
                        probe::remember_in_process(&key, verdict.clone());
                        return verdict;
                    }
                    Err(e) => match &untyped {
                        Some(input) if !e.to_string().contains("No conversion rule found") => {
                            tracing::debug!(node = %n.name, input = %input, error = %first_line(&e.to_string()),
                                "stand-in probe failed on types only: left to a whole-partition compile");
                            probe::Verdict::Ok
                        }
                        _ => probe::Verdict::Refused(first_line(&e.to_string())),
                    },
                }
            }
        };
        tracing::debug!(node = %n.name, op = %n.op_type, verdict = ?verdict, "probe");
        probe::remember(&key, verdict.clone());
        verdict
    }
}

/// An OpenVINO message in one line of at most 300 characters: OpenVINO's messages carry a
/// stack of "Exception from <file>:<line>" and "Check '…' failed at <file>" lines before the
/// words that say what went wrong; those are dropped and the rest joined.
impl OpenVinoProvider {
    /// `reshape_input` and `layout` name model inputs: a name that is none of them is an
    /// error listing the inputs (ONNX Runtime's OpenVINO EP fails too), not an option silently
    /// ignored. A `layout` entry for a model output is refused: vinort applies layouts to the
    /// inputs of the partitions they enter and has no output-side conversion.
    fn check_tensor_names(&self, model: &Model) -> Result<()> {
        let g = &model.graph;
        let inputs: Vec<&str> = g.inputs().iter().map(|v| g.value(*v).name.as_str()).collect();
        let outputs: Vec<&str> = g.outputs().iter().map(|v| g.value(*v).name.as_str()).collect();
        let unknown = |option: &str, name: &str| {
            vinort_ir::Error::invalid(format!(
                "{option} names '{name}', which is not an input of the model; its inputs are: {}",
                inputs.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ")
            ))
        };
        if let Some(r) = &self.options.reshape_input
            && let Some(i) = r.inputs.iter().find(|i| !inputs.contains(&i.name.as_str()))
        {
            return Err(unknown("reshape_input", &i.name));
        }
        if let Some(l) = &self.options.layout {
            for (name, layout) in &l.entries {
                if inputs.contains(&name.as_str()) {
                    continue;
                }
                if outputs.contains(&name.as_str()) {
                    return Err(vinort_ir::Error::unsupported(format!(
                        "layout {name}[{layout}] names an output of the model; vinort applies layouts to model inputs only"
                    )));
                }
                return Err(unknown("layout", name));
            }
        }
        Ok(())
    }
}

fn first_line(s: &str) -> String {
    let context = |l: &str| {
        let l = l.trim();
        l.is_empty() || l.starts_with("Exception from ") || (l.starts_with("Check '") && l.contains(" failed at "))
    };
    let mut parts = vec![];
    for (i, line) in s.lines().enumerate() {
        // The first line may be vinort's own prefix ("OpenVINO <call> failed (-1): ") followed
        // by the first context line.
        let line = match (i, line.find("Exception from ")) {
            (0, Some(at)) => {
                parts.push(line[..at].trim_end().to_owned());
                &line[at..]
            }
            _ => line,
        };
        if !context(line) {
            parts.push(line.trim().to_owned());
        }
    }
    let l = parts.into_iter().filter(|p| !p.is_empty()).collect::<Vec<_>>().join(" ");
    let l = if l.is_empty() { s.trim().to_owned() } else { l };
    match l.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &l[..i]),
        None => l,
    }
}

#[cfg(test)]
#[test]
fn first_line_keeps_what_went_wrong() {
    let e = "OpenVINO ov_core_compile_model_from_file_props failed (-1): Exception from src/inference/src/cpp/core.cpp:132:\nException from src/inference/src/dev/plugin.cpp:59:\nCheck 'false' failed at src/frontends/common_translators/src/unconverted_ops_report.cpp:151:\nFrontEnd API failed with OpConversionFailure:\nModel wasn't fully converted.\nSummary:\n-- No conversion rule found for operations: vinort.fn.Block\n\n";
    assert_eq!(
        first_line(e),
        "OpenVINO ov_core_compile_model_from_file_props failed (-1): FrontEnd API failed with OpConversionFailure: \
         Model wasn't fully converted. Summary: -- No conversion rule found for operations: vinort.fn.Block"
    );
    assert_eq!(first_line("plain"), "plain");
    assert_eq!(first_line(&"x".repeat(400)).chars().count(), 301);
}

impl ExecutionProvider for OpenVinoProvider {
    fn name(&self) -> String {
        format!("OpenVino({})", self.options.device)
    }

    fn start(&self) -> Result<()> {
        self.started().map(|_| ())
    }

    fn fingerprint(&self) -> String {
        format!("OpenVino {:?} library={:?}", self.options, self.library)
    }

    /// Measured on the CPU device (2-core EPYCs, OpenVINO 2026.4, one inference thread): each
    /// OpenVINO partition of a split silero-vad cost about 20 µs beyond the same nodes on the
    /// Cpu provider (infer request, tensor set-up, boundary copies), and split convolution
    /// networks ran 1.1-1.4x faster with their heavy regions on OpenVINO than on [Cpu]
    /// (docs/performance.md). Other devices add a transfer each way; no such device was here
    /// to measure, so their hand-off is taken as five times the CPU's.
    fn cost_profile(&self) -> Option<vinort_ir::CostProfile> {
        let cpu = self.options.device == crate::options::Device::CPU;
        Some(vinort_ir::CostProfile { per_partition_us: if cpu { 20.0 } else { 100.0 }, heavy_speed: 1.3 })
    }

    fn warnings(&self) -> Vec<String> {
        match self.started.get() {
            Some(Ok(s)) => s.resolved.warnings.iter().map(|w| format!("{}: {w}", self.name())).collect(),
            _ => vec![],
        }
    }

    fn capability(&self, model: &Model, offered: &[NodeIndex]) -> Result<Capability> {
        self.check_tensor_names(model)?;
        let s = self.started()?;
        if crate::context::has_context_nodes(model) {
            return Ok(context_capability(model, offered));
        }
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
        if part.nodes.iter().any(|ix| crate::context::is_context_node(model.graph.node(*ix))) {
            return self.compile_context(model, part);
        }
        self.compile_partition(model, part, OnFailure::Blame)
    }

    /// Whole model first, as native OpenVINO would run it: unless a layer refuses a node in
    /// any context (static, semantics, slow path, a measured wrong answer or crash), the whole
    /// model is compiled at once, and only a failed compile splits it. A node the table or a
    /// probe refuses only *alone* (OpenVINO did not convert that single-node model) is no
    /// evidence against a whole model that compiles, so no probe runs here.
    fn compile_whole(&self, model: &Model, part: &PartitionDef) -> Result<WholeModel> {
        self.check_tensor_names(model)?;
        let s = self.started()?;
        if crate::context::has_context_nodes(model) {
            return Ok(match part.nodes[..] {
                [ix] if crate::context::is_context_node(model.graph.node(ix)) => WholeModel::Compiled(
                    self.compile_context(model, part)?,
                    "the model is one EPContext node: its compiled blob imported".into(),
                ),
                _ => WholeModel::Split(format!(
                    "the model holds EPContext node(s) among {} node(s): each context node runs alone, \
                     its ONNX nodes go to the next provider",
                    part.nodes.len()
                )),
            });
        }
        let layers = capability::layers();
        let never = |_| -> probe::Verdict { unreachable!("the probe layer is not asked before a whole compile") };
        let firm: Vec<(NodeIndex, String)> = part
            .nodes
            .iter()
            .filter_map(|&ix| {
                let q = capability::Query { model, ix, device: &s.table_device, probe: &never };
                capability::firm_refusal(&layers, &q).map(|why| (ix, why))
            })
            .collect();
        if let Some((ix, why)) = firm.first() {
            let n = model.graph.node(*ix);
            return Ok(WholeModel::Split(format!(
                "refuses {} node(s) in any context, first {} ({}): {why}",
                firm.len(),
                n.name,
                n.qualified_op()
            )));
        }
        match self.compile_partition(model, part, OnFailure::RefuseAll) {
            Ok(compiled) => Ok(WholeModel::Compiled(
                compiled,
                "compiled the model as a whole: no semantic, slow-path, wrong-answer or type rule refuses a node"
                    .into(),
            )),
            // Some nodes named by OpenVINO's conversion report: refused in every piece too.
            Err(vinort_ir::Error::RefusedAtCompile(nodes)) if !nodes.is_empty() && nodes.len() < part.nodes.len() => {
                let (ix, why) = &nodes[0];
                let n = model.graph.node(*ix);
                let first = format!("first {} ({})", n.name, n.qualified_op());
                Ok(WholeModel::SplitRefusing(
                    format!("failed to convert {} node(s) of the whole model, {first}: {why}", nodes.len()),
                    nodes,
                ))
            }
            Err(vinort_ir::Error::RefusedAtCompile(nodes)) => Ok(WholeModel::Split(
                nodes.first().map_or_else(|| "did not compile the model as a whole".into(), |(_, why)| why.clone()),
            )),
            Err(e) => Err(e),
        }
    }
}

/// In a model holding EPContext nodes (a compiled context), OpenVINO takes its own context
/// nodes and nothing else: the ONNX nodes there are what the session that compiled it left to
/// later providers, and compiling them now would undo the point of a context.
fn context_capability(model: &Model, offered: &[NodeIndex]) -> Capability {
    let g = &model.graph;
    let mut cap = Capability::default();
    for &ix in offered {
        let n = g.node(ix);
        if !crate::context::is_context_node(n) {
            cap.refused.push((ix, "a compiled-context model: its ONNX nodes are left to the next provider".into()));
            continue;
        }
        match crate::context::read(model, n) {
            Ok(_) => cap.claimed.push(ix),
            Err(e) => cap.refused.push((ix, e.to_string())),
        }
    }
    cap
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

/// One property of a device, as OpenVINO prints it (e.g. the CPU's
/// `OPTIMIZATION_CAPABILITIES`: `FP32 INT8 BF16 ...`).
pub fn device_property(device: &str, key: &str) -> OvResult<String> {
    ffi::core()?.property(device, key)
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
