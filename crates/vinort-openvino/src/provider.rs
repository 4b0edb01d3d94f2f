//! The OpenVINO execution provider.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use vinort_ir::{
    Capability, CompiledPartition, DType, Error, ExecutionProvider, Model, NodeIndex, PartitionDef, Result, RunContext,
    Tensor, Value, ValueType,
};

use crate::export::partition_model;
use crate::ffi::{self, CompiledModel, InferRequest, OvTensor, OwnedOvBytes, PortInfo};
use crate::options::{DeviceProperties, OpenVinoOptions, Resolved};
use crate::probe;
use crate::rules;

/// The OpenVINO provider: options plus, once started, the resolved device and properties.
#[derive(Debug)]
pub struct OpenVinoProvider {
    options: OpenVinoOptions,
    library: Option<PathBuf>,
    started: OnceLock<std::result::Result<Started, String>>,
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
        self.started.get_or_init(|| self.start_inner()).as_ref().map_err(|e| Error::unsupported(e.clone()))
    }

    fn start_inner(&self) -> std::result::Result<Started, String> {
        ffi::load_library(self.library.as_deref())?;
        let core = ffi::core()?;
        let version = ffi::version().map_err(|e| e.to_string())?;
        // A device that answers a property query is there. Listing every device instead costs
        // tens of milliseconds (OpenVINO loads and probes every plugin), so the full list is
        // only asked for when a device does not answer, to say what OpenVINO does see.
        for d in self.options.device.physical_devices() {
            let name = d.to_string();
            if core.property(&name, "FULL_DEVICE_NAME").is_ok() {
                continue;
            }
            let available = core.available_devices().map_err(|e| e.to_string())?;
            let kind = name.split('.').next().unwrap_or(&name).to_owned();
            if !available
                .iter()
                .any(|a| *a == name || a.split('.').next() == Some(kind.as_str()) && !name.contains('.'))
            {
                return Err(format!(
                    "OpenVINO device {name} is not available on this machine (OpenVINO {version} sees: {})",
                    available.join(", ")
                ));
            }
        }
        let props = CoreProps::default();
        let mut resolved = self.options.compile_properties(&props).map_err(|e| e.to_string())?;
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
            Ok(bytes) => match ffi::core().map_err(Error::unsupported).and_then(|c| {
                let m = c.read_model_from_memory(&bytes).map_err(|e| Error::unsupported(e.to_string()))?;
                c.compile(&m, &s.resolved.device, &self.compile_props(s)).map_err(|e| Error::unsupported(e.to_string()))
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

fn first_line(s: &str) -> String {
    let l = s.lines().find(|l| !l.trim().is_empty()).unwrap_or(s);
    if l.len() > 300 {
        format!("{}…", &l[..l.char_indices().nth(300).map_or(l.len(), |(i, _)| i)])
    } else {
        l.to_owned()
    }
}

#[derive(Default)]
struct CoreProps {
    /// The core's device list, asked for only when a bare `AUTO` needs it.
    available: std::cell::OnceCell<Vec<String>>,
    /// Each device's `SUPPORTED_PROPERTIES`, asked for once per device.
    supported: std::cell::RefCell<std::collections::HashMap<String, Vec<String>>>,
}

/// Read-only properties OpenVINO lists among a device's supported ones.
const READ_ONLY: &[&str] = &[
    "AVAILABLE_DEVICES",
    "SUPPORTED_PROPERTIES",
    "RANGE_FOR_ASYNC_INFER_REQUESTS",
    "RANGE_FOR_STREAMS",
    "FULL_DEVICE_NAME",
    "OPTIMIZATION_CAPABILITIES",
    "DEVICE_ARCHITECTURE",
    "DEVICE_TYPE",
    "DEVICE_ID",
    "EXECUTION_DEVICES",
    "OPTIMAL_NUMBER_OF_INFER_REQUESTS",
    "CACHING_PROPERTIES",
    "DEVICE_GOPS",
    "DEVICE_UUID",
    "DEVICE_LUID",
    "CPU_DENORMALS_OPTIMIZATION_SUPPORTED",
];

impl DeviceProperties for CoreProps {
    fn supported(&self, device: &str, key: &str) -> bool {
        let Ok(core) = ffi::core() else { return false };
        let mut cache = self.supported.borrow_mut();
        let keys = cache.entry(device.to_owned()).or_insert_with(|| {
            core.property(device, "SUPPORTED_PROPERTIES")
                .map(|s| s.split([' ', ',', '\n']).map(|k| k.trim().to_owned()).filter(|k| !k.is_empty()).collect())
                .unwrap_or_default()
        });
        keys.iter().any(|k| k == key)
    }
    fn mutable(&self, _device: &str, key: &str) -> bool {
        !READ_ONLY.contains(&key)
    }
    fn available_devices(&self) -> Vec<String> {
        self.available
            .get_or_init(|| ffi::core().ok().and_then(|c| c.available_devices().ok()).unwrap_or_default())
            .clone()
    }
}

/// Why a node cannot go to OpenVINO before asking the table or a probe.
fn static_refusal(model: &Model, ix: NodeIndex) -> Option<String> {
    let g = &model.graph;
    let n = g.node(ix);
    for v in n.inputs.iter().flatten().chain(&n.implicit_inputs).chain(n.outputs.iter().flatten()) {
        let info = g.value(*v);
        match &info.ty {
            ValueType::Tensor(d, _) if ffi::to_ov_type(*d).is_none() => {
                return Some(format!("'{}' is {d}, which vinort does not exchange with OpenVINO", info.name));
            }
            ValueType::Tensor(..) => {}
            ValueType::Unknown if g.initializer(*v).is_none() && n.inputs.contains(&Some(*v)) => {
                return Some(format!("the type of input '{}' is not known before run time", info.name));
            }
            ValueType::Unknown => {}
            other => return Some(format!("'{}' is {other}; only tensors cross into OpenVINO", info.name)),
        }
    }
    None
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
        let g = &model.graph;
        let mut cap = Capability::default();
        for &ix in offered {
            let n = g.node(ix);
            if let Some(why) = static_refusal(model, ix) {
                cap.refused.push((ix, why));
                continue;
            }
            if let Some(why) = crate::semantics::refusal(g, ix) {
                cap.refused.push((ix, format!("semantics: {why}")));
                continue;
            }
            if let Some(why) = crate::slow::refusal(g, ix, &s.table_device) {
                cap.refused.push((ix, format!("slow path: {why}")));
                continue;
            }
            let dtypes: Vec<Option<DType>> =
                n.inputs.iter().map(|v| v.and_then(|v| g.value(v).ty.tensor_dtype())).collect();
            match rules::lookup(&n.domain, &n.op_type, n.opset, &s.table_device, &dtypes) {
                rules::Verdict::Supported { .. } => cap.claimed.push(ix),
                rules::Verdict::Refused { reason } => cap.refused.push((ix, format!("rule: {reason}"))),
                rules::Verdict::Unknown => match self.probe(model, ix, s) {
                    probe::Verdict::Ok => cap.claimed.push(ix),
                    probe::Verdict::Refused(r) => cap.refused.push((ix, format!("probe: {r}"))),
                },
            }
        }
        Ok(cap)
    }

    fn compile(&self, model: &Model, part: &PartitionDef) -> Result<Box<dyn CompiledPartition>> {
        let s = self.started()?;
        let core = ffi::core().map_err(Error::unsupported)?;
        let props = self.compile_props(s);
        let ov_err = |e: ffi::OvError| Error::unsupported(e.to_string());
        let input_names: Vec<&str> = part.inputs.iter().map(|v| model.graph.value(*v).name.as_str()).collect();
        // The whole model with nothing to change on it before compiling: OpenVINO reads and
        // compiles the file in one call, so external data resolves and, with cache_dir, a
        // cache hit skips reading the model at all.
        let edits_inputs = self.options.disable_dynamic_shapes
            || self
                .options
                .reshape_input
                .as_ref()
                .is_some_and(|r| r.inputs.iter().any(|i| input_names.contains(&i.name.as_str())))
            || self
                .options
                .layout
                .as_ref()
                .is_some_and(|l| l.entries.iter().any(|(n, _)| input_names.contains(&n.as_str())));
        if let (Some(path), true, false) = (&model.path, part.whole_graph, edits_inputs) {
            match core.compile_from_file(path, &s.resolved.device, &props) {
                Ok(compiled) => {
                    return self.finish_compile(s, part, &input_names, None, compiled, &props, FROM_FILE);
                }
                Err(e) => tracing::debug!(error = %e, "compiling the model file failed; trying the partition"),
            }
        }
        // A partition of a model file with cache_dir: the partition is written once as an
        // ONNX file in the cache folder (see `partition_cache`) and compiled from that file,
        // so OpenVINO's cache keys on the file and a warm session neither serializes the
        // partition nor has OpenVINO read and hash it.
        let cache_entry = match (props.iter().find(|(k, _)| k == "CACHE_DIR"), part.whole_graph, edits_inputs) {
            (Some((_, dir)), false, false) => {
                crate::partition_cache::entry(Path::new(dir), model, part, &s.resolved.device, &s.version, &props)
            }
            _ => None,
        };
        if let Some(entry) = &cache_entry {
            let written = entry.is_file()
                || crate::partition_cache::store(entry, |tmp| {
                    let bytes =
                        partition_model(model, &part.nodes, &part.inputs, &part.outputs).map_err(|e| e.to_string())?;
                    std::fs::write(tmp, bytes).map_err(|e| e.to_string())
                })
                .map_err(|e| tracing::warn!(entry = %entry.display(), error = %e, "could not write the partition file"))
                .is_ok();
            if written {
                match core.compile_from_file(entry, &s.resolved.device, &props) {
                    Ok(compiled) => {
                        return self.finish_compile(s, part, &input_names, None, compiled, &props, FROM_PARTITION_FILE);
                    }
                    Err(e) => {
                        // Not trusted again: the next session writes it anew.
                        tracing::warn!(entry = %entry.display(), error = %e, "partition file did not compile; compiling from memory");
                        let _ = std::fs::remove_file(entry);
                    }
                }
            }
        }
        // Otherwise read the original file (or the partition) and edit the read model.
        let from_file = match (&model.path, part.whole_graph) {
            (Some(path), true) => core.read_model_from_file(path).ok(),
            _ => None,
        };
        let attempt = (|| -> Result<(ffi::OvModel, CompiledModel)> {
            let mut m = match from_file {
                Some(m) => m,
                None => {
                    let bytes = partition_model(model, &part.nodes, &part.inputs, &part.outputs)?;
                    core.read_model_from_memory(&bytes).map_err(ov_err)?
                }
            };
            // reshape_input and layout name model inputs; they apply to the partitions those
            // inputs enter.
            if let Some(r) = &self.options.reshape_input {
                for shape in r.inputs.iter().filter(|i| input_names.contains(&i.name.as_str())) {
                    m.reshape_input(&shape.name, &ov_dims(&shape.dims)).map_err(|e| {
                        Error::invalid(format!("reshape_input {}{}: {e}", shape.name, shape.partial_shape()))
                    })?;
                }
            }
            if let Some(l) = &self.options.layout {
                for (name, layout) in l.entries.iter().filter(|(n, _)| input_names.contains(&n.as_str())) {
                    m = m
                        .with_input_layout(name, layout.as_str())
                        .map_err(|e| Error::invalid(format!("layout {name}[{layout}]: {e}")))?;
                }
            }
            let c = core.compile(&m, &s.resolved.device, &props).map_err(ov_err)?;
            Ok((m, c))
        })();
        let attempt = match attempt {
            // A bad reshape_input/layout is the user's error, not the nodes' fault.
            Err(Error::Invalid(msg)) => return Err(Error::Invalid(msg)),
            other => other,
        };
        let (template, compiled) = match attempt {
            Ok(c) => c,
            Err(e) => {
                // Find the nodes to blame: probe each alone; if none fails alone, the partition
                // fails only as a whole and all of it goes back.
                let mut blamed: Vec<(NodeIndex, String)> = part
                    .nodes
                    .iter()
                    .filter_map(|&ix| match self.probe(model, ix, s) {
                        probe::Verdict::Ok => None,
                        probe::Verdict::Refused(r) => Some((ix, format!("compile probe: {r}"))),
                    })
                    .collect();
                if blamed.is_empty() {
                    let why = format!("partition failed to compile as a whole: {}", first_line(&e.to_string()));
                    blamed = part.nodes.iter().map(|ix| (*ix, why.clone())).collect();
                }
                return Err(Error::RefusedAtCompile(blamed));
            }
        };
        let how = if from_file_used(model, part) { FROM_FILE } else { FROM_SERIALIZED };
        self.finish_compile(s, part, &input_names, Some(template), compiled, &props, how)
    }
}

const FROM_FILE: &str = "compiled from the model file";
const FROM_SERIALIZED: &str = "compiled from a serialized partition";
const FROM_PARTITION_FILE: &str = "compiled from its partition file in cache_dir";

impl OpenVinoProvider {
    /// Checks a compiled partition against its definition and wraps it for running.
    #[allow(clippy::too_many_arguments)]
    fn finish_compile(
        &self,
        s: &Started,
        part: &PartitionDef,
        input_names: &[&str],
        template: Option<ffi::OvModel>,
        compiled: CompiledModel,
        props: &[(String, String)],
        how: &str,
    ) -> Result<Box<dyn CompiledPartition>> {
        let ov_err = |e: ffi::OvError| Error::unsupported(e.to_string());
        let inputs = compiled.inputs().map_err(ov_err)?;
        let outputs = compiled.outputs().map_err(ov_err)?;
        if inputs.len() != part.inputs.len() || outputs.len() != part.outputs.len() {
            let why = format!(
                "compiled model has {} inputs/{} outputs, the partition {}/{}",
                inputs.len(),
                outputs.len(),
                part.inputs.len(),
                part.outputs.len()
            );
            return Err(Error::RefusedAtCompile(part.nodes.iter().map(|ix| (*ix, why.clone())).collect()));
        }
        let optimal: usize =
            compiled.property("OPTIMAL_NUMBER_OF_INFER_REQUESTS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(1);
        let streams: usize = compiled.property("NUM_STREAMS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(1);
        let pool_size = optimal.max(streams).clamp(1, 64);
        let mut effective = vec![];
        for key in [
            "INFERENCE_PRECISION_HINT",
            "NUM_STREAMS",
            "INFERENCE_NUM_THREADS",
            "EXECUTION_MODE_HINT",
            "PERFORMANCE_HINT",
            "LOADED_FROM_CACHE",
        ] {
            if let Ok(v) = compiled.property(key) {
                effective.push((key.to_owned(), v));
            }
        }
        let shapes: Vec<String> = inputs.iter().zip(input_names).map(|(p, n)| format!("{n}{}", p.partial)).collect();
        let describe = format!(
            "OpenVINO {} on {}; inputs {}; {}; {} infer request(s); {}",
            s.version,
            s.resolved.device,
            shapes.join(" "),
            how,
            pool_size,
            effective.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
        );
        tracing::info!(partition = %describe, "OpenVINO partition compiled");
        let dynamic = inputs.iter().any(|p| p.static_shape().is_none());
        // `template` is there whenever disable_dynamic_shapes is (the one-call compile is not
        // used then).
        let per_shape = match (self.options.disable_dynamic_shapes && dynamic, template) {
            (true, Some(template)) => Some(PerShape {
                template: Mutex::new(template),
                names: input_names.iter().map(|n| n.to_string()).collect(),
                device: s.resolved.device.clone(),
                props: props.to_vec(),
                cache: Mutex::new(vec![]),
            }),
            _ => None,
        };
        Ok(Box::new(OvPartition {
            fixed: Arc::new(Compiled::new(compiled, inputs, outputs, pool_size)),
            per_shape,
            describe: if self.options.disable_dynamic_shapes && dynamic {
                format!("{describe}; disable_dynamic_shapes: compiled per input shape, last {SHAPE_CACHE} kept")
            } else {
                describe
            },
            effective,
        }))
    }
}

/// `reshape_input` dims as OpenVINO `(min, max)` pairs (`-1` max: unbounded).
fn ov_dims(dims: &[crate::options::Dim]) -> Vec<(i64, i64)> {
    use crate::options::Dim;
    dims.iter()
        .map(|d| match d {
            Dim::Fixed(n) => (*n as i64, *n as i64),
            Dim::Bounded { min, max } => (*min as i64, *max as i64),
            Dim::Dynamic => (0, -1),
        })
        .collect()
}

fn from_file_used(model: &Model, part: &PartitionDef) -> bool {
    model.path.is_some() && part.whole_graph
}

/// One bound host-pointer tensor: re-wrapped only when the address or shape changes.
struct Binding {
    ptr: usize,
    shape: Vec<usize>,
    // Our reference to the bound OpenVINO tensor object, dropped when re-bound.
    _tensor: OvTensor,
}

struct Slot {
    req: InferRequest,
    inputs: Vec<Option<Binding>>,
    /// Per output, the OpenVINO tensor the last run handed to the caller, which is still the
    /// request's output tensor: reused when the caller has dropped it (see `Compiled::infer`).
    outputs: Vec<Option<Arc<OwnedOvBytes>>>,
}

/// An output handed to the caller: OpenVINO's tensor, shared with the slot that may reuse it.
struct HandedOut(Arc<OwnedOvBytes>);

impl AsRef<[u8]> for HandedOut {
    fn as_ref(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

struct Pool {
    free: Mutex<Vec<Slot>>,
    cv: Condvar,
    created: Mutex<usize>,
    max: usize,
}

/// How many shape-specialised compilations a `disable_dynamic_shapes` partition keeps: the
/// cache is bounded (least recently used goes first) so varying shapes cannot grow memory
/// without end.
pub const SHAPE_CACHE: usize = 8;

/// A compiled model with its ports and pool of infer requests.
struct Compiled {
    compiled: CompiledModel,
    inputs: Vec<PortInfo>,
    outputs: Vec<PortInfo>,
    /// Each output's shape when the port's shape is static.
    static_outputs: Vec<Option<vinort_ir::Shape>>,
    pool: Pool,
}

/// The concrete input shapes a compilation is specialised to.
type ShapeKey = Vec<Vec<usize>>;

/// `disable_dynamic_shapes`: the read model, re-shaped to each run's concrete input shapes and
/// compiled once per shape signature.
struct PerShape {
    template: Mutex<ffi::OvModel>,
    names: Vec<String>,
    device: String,
    props: Vec<(String, String)>,
    /// Most recently used first.
    cache: Mutex<Vec<(ShapeKey, Arc<Compiled>)>>,
}

impl PerShape {
    fn get(&self, shapes: Vec<Vec<usize>>, pool_size: usize) -> Result<Arc<Compiled>> {
        {
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(pos) = cache.iter().position(|(k, _)| *k == shapes) {
                let hit = cache.remove(pos);
                let c = hit.1.clone();
                cache.insert(0, hit);
                return Ok(c);
            }
        }
        let err = |e: ffi::OvError| Error::invalid(e.to_string());
        let compiled = {
            let model = self.template.lock().unwrap_or_else(|p| p.into_inner());
            for (name, shape) in self.names.iter().zip(&shapes) {
                let dims: Vec<(i64, i64)> = shape.iter().map(|d| (*d as i64, *d as i64)).collect();
                model.reshape_input(name, &dims).map_err(err)?;
            }
            let core = ffi::core().map_err(Error::unsupported)?;
            core.compile(&model, &self.device, &self.props).map_err(err)?
        };
        let inputs = compiled.inputs().map_err(err)?;
        let outputs = compiled.outputs().map_err(err)?;
        let c = Arc::new(Compiled::new(compiled, inputs, outputs, pool_size));
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.insert(0, (shapes, c.clone()));
        cache.truncate(SHAPE_CACHE);
        Ok(c)
    }
}

/// A compiled OpenVINO partition.
pub struct OvPartition {
    fixed: Arc<Compiled>,
    per_shape: Option<PerShape>,
    describe: String,
    effective: Vec<(String, String)>,
}

impl OvPartition {
    /// Properties read back from the compiled model.
    pub fn effective_properties(&self) -> &[(String, String)] {
        &self.effective
    }
}

impl Compiled {
    fn new(compiled: CompiledModel, inputs: Vec<PortInfo>, outputs: Vec<PortInfo>, max: usize) -> Compiled {
        let static_outputs = outputs.iter().map(|p| p.static_shape().map(Into::into)).collect();
        Compiled {
            compiled,
            inputs,
            outputs,
            static_outputs,
            pool: Pool { free: Mutex::new(vec![]), cv: Condvar::new(), created: Mutex::new(0), max },
        }
    }

    fn take(&self) -> Result<Slot> {
        let mut free = self.pool.free.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(s) = free.pop() {
                return Ok(s);
            }
            let mut created = self.pool.created.lock().unwrap_or_else(|p| p.into_inner());
            if *created < self.pool.max {
                *created += 1;
                drop(created);
                drop(free);
                let req = self.compiled.infer_request().map_err(|e| Error::invalid(e.to_string()))?;
                return Ok(Slot {
                    req,
                    inputs: (0..self.inputs.len()).map(|_| None).collect(),
                    outputs: (0..self.outputs.len()).map(|_| None).collect(),
                });
            }
            drop(created);
            free = self.pool.cv.wait(free).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn give_back(&self, slot: Slot) {
        self.pool.free.lock().unwrap_or_else(|p| p.into_inner()).push(slot);
        self.pool.cv.notify_one();
    }

    fn infer(&self, slot: &mut Slot, inputs: &[&Value]) -> Result<Vec<Value>> {
        let err = |e: ffi::OvError| Error::invalid(e.to_string());
        if inputs.len() != self.inputs.len() {
            return Err(Error::invalid(format!(
                "OpenVINO partition expects {} inputs, got {}",
                self.inputs.len(),
                inputs.len()
            )));
        }
        for (i, (v, port)) in inputs.iter().zip(&self.inputs).enumerate() {
            let t = v.as_tensor()?;
            if port.dtype.is_some_and(|d| d != t.dtype()) {
                return Err(Error::invalid(format!("input {i}: OpenVINO expects {:?}, got {}", port.dtype, t.dtype())));
            }
            let ptr = t.data_ptr() as usize;
            let fresh = match &slot.inputs[i] {
                Some(b) => b.ptr != ptr || b.shape != t.shape(),
                None => true,
            };
            if fresh {
                // SAFETY: the input tensor outlives this inference (the caller holds it for the
                // whole call); a later call with another buffer re-binds before inferring, so
                // OpenVINO never reads a stale address. OpenVINO does not write inputs.
                let ov = unsafe { OvTensor::from_host_ptr(t.dtype(), t.shape(), t.data_ptr()) }.map_err(err)?;
                slot.req.set_input(i, &ov).map_err(err)?;
                slot.inputs[i] = Some(Binding { ptr, shape: t.shape().to_vec(), _tensor: ov });
            }
        }
        // Outputs: OpenVINO writes into the output tensors of the request, and vinort hands
        // each one to the caller as the output's storage (no copy). Binding buffers of our own
        // instead is not reliable: for graphs that forward an input to an output (Max/Sum of
        // one input, Tile, Dropout, TopK indices measured on OpenVINO 2026.4.1) the CPU plugin
        // leaves a user-bound output unwritten. So the request keeps writing into a tensor we
        // handed out as long as the caller has dropped it (steady state: no buffer allocated
        // per run); only when the caller still holds the last result does the request get a
        // fresh tensor, so a later run never overwrites what the caller holds.
        for (j, held) in slot.outputs.iter_mut().enumerate() {
            let Some(arc) = held else { continue };
            // `get_mut` succeeds only when no clone of the handed-out bytes is alive, and
            // synchronizes with the thread that dropped the last one.
            if Arc::get_mut(arc).is_some() {
                continue;
            }
            let d = self.outputs[j].dtype.ok_or_else(|| Error::invalid("output element type unknown"))?;
            let shape = match &self.static_outputs[j] {
                Some(s) => s.to_vec(),
                None => arc.tensor().shape().map_err(err)?,
            };
            let next = OvTensor::allocate(d, &shape).map_err(err)?;
            vinort_ir::stats::record_alloc(shape.iter().product::<usize>() * d.size());
            slot.req.set_output(j, &next).map_err(err)?;
            *held = None;
        }
        slot.req.infer().map_err(err)?;
        let mut out = Vec::with_capacity(self.outputs.len());
        for j in 0..self.outputs.len() {
            let d = self.outputs[j].dtype.ok_or_else(|| Error::invalid("output element type unknown"))?;
            let ovt = slot.req.output(j).map_err(err)?;
            let (ptr, len) = ovt.bytes().map_err(err)?;
            let shape: vinort_ir::Shape = match &self.static_outputs[j] {
                Some(s) => s.clone(),
                // The C API cannot describe a rank-0 shape (`ov_tensor_get_shape` fails on
                // scalars); the port says when an output is a scalar.
                None => match ovt.shape() {
                    Ok(s) => s.into(),
                    Err(_) if self.outputs[j].dims.as_deref() == Some(&[]) => vinort_ir::Shape::new(),
                    Err(e) => return Err(err(e)),
                },
            };
            let shared = match &slot.outputs[j] {
                // The same tensor as last run, written again: hand it out again.
                Some(a) if (**a).as_ref().as_ptr() == ptr && (**a).as_ref().len() == len && len > 0 => a.clone(),
                _ => {
                    let a = Arc::new(OwnedOvBytes::new(ovt).map_err(err)?);
                    slot.outputs[j] = Some(a.clone());
                    a
                }
            };
            let bytes = bytes::Bytes::from_owner(HandedOut(shared));
            // OpenVINO's allocations are aligned; `to_aligned` is a no-op then and a safety
            // net otherwise.
            out.push(Value::Tensor(Tensor::from_shared_bytes(d, &shape, bytes)?.to_aligned()));
        }
        Ok(out)
    }
}

impl CompiledPartition for OvPartition {
    fn run(&self, inputs: &[&Value], _ctx: &RunContext) -> Result<Vec<Value>> {
        let c = match &self.per_shape {
            Some(ps) => {
                let shapes =
                    inputs.iter().map(|v| v.as_tensor().map(|t| t.shape().to_vec())).collect::<Result<Vec<_>>>()?;
                ps.get(shapes, self.fixed.pool.max)?
            }
            None => self.fixed.clone(),
        };
        let mut slot = c.take()?;
        let r = c.infer(&mut slot, inputs);
        // Host pointers of this run's inputs stay bound in the slot; they are re-bound (see
        // `fresh`) before the slot infers again, so none is read after its run.
        c.give_back(slot);
        r
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }
}

/// Library search and version information, for `vinort devices` and error messages.
pub fn is_available() -> bool {
    ffi::load_library(None).is_ok()
}

/// The OpenVINO version and devices, or why OpenVINO cannot be used.
pub fn devices() -> std::result::Result<(String, Vec<(String, String)>), String> {
    let core = ffi::core()?;
    let version = ffi::version().map_err(|e| e.to_string())?;
    let devs = core.available_devices().map_err(|e| e.to_string())?;
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
