//! Compile strategies, tried in order:
//!
//! 1. **whole file, with `cache_dir`**: the whole model with nothing to change on it before
//!    compiling: OpenVINO reads and compiles the file in one call, so a cache hit skips reading
//!    the model at all;
//! 2. **partition file** (see [`crate::partition_cache`]): a partition of a model file with
//!    `cache_dir` is written once as an ONNX file in the cache folder and compiled from that
//!    file, so OpenVINO's cache keys on the file and a warm session neither serializes the
//!    partition nor has OpenVINO read and hash it;
//! 3. **in memory**: the partition (the whole graph too) is serialized with its weights by
//!    address ([`crate::export`]), read by OpenVINO from memory, edited (`reshape_input`,
//!    `layout`) and compiled. For a whole model this is faster than OpenVINO reading the file
//!    (measured: 15–30% less session time on the benchmark models), because OpenVINO's ONNX
//!    reader copies every weight out of the file while by address it takes them where vinort's
//!    mapping holds them. When the serialized whole model does not compile, the file itself is
//!    tried before giving up (OpenVINO then says what it says of the user's own file). When a
//!    partition fails, each node is probed alone to find the ones to blame.
//!
//! Whichever compiles is checked against the partition's boundary and wrapped for running.

use std::path::Path;
use std::sync::{Arc, Mutex};

use vinort_ir::{CompiledPartition, Error, Model, NodeIndex, PartitionDef, Result};

use super::partition::{Compiled, OvPartition};
use super::shape_cache::{PerShape, SHAPE_CACHE, SingleFlight};
use super::timed::{self, Failed};
use super::{OpenVinoProvider, Started, first_line};
use crate::error::to_ir_error;
use crate::export::{Weights, partition_model_with};
use crate::ffi::{self, CompiledModel, Core, OvModel};
use crate::probe;

const FROM_FILE: &str = "compiled from the model file";
const FROM_SERIALIZED: &str = "compiled from a serialized partition";
const FROM_MEMORY: &str = "compiled from memory, weights by address";
const FROM_PARTITION_FILE: &str = "compiled from its partition file in cache_dir";

/// Ops whose output OpenVINO may make the same tensor as an input (or leave as a view): a
/// caller's buffer bound to such an output is not written as the output (measured on OpenVINO
/// 2026.4.1: Max/Sum of one input, Tile, Dropout, TopK indices; with Max of one input bound,
/// the buffer came back holding bytes that were neither the input nor the caller's, and a
/// tensor of vinort's own bound after it too), so I/O binding never binds those outputs and
/// copies them. Also every op that only moves or reshapes data, and an EPContext node (its
/// last op is not known).
const FORWARDING: &[&str] = &[
    "Identity",
    "Dropout",
    "Max",
    "Min",
    "Sum",
    "Mean",
    "Tile",
    "TopK",
    "Expand",
    "Reshape",
    "Squeeze",
    "Unsqueeze",
    "Flatten",
    "Cast",
    "CastLike",
    "Concat",
    "Split",
    "Slice",
    "Transpose",
    "Pad",
    "Gather",
    "Resize",
    "Upsample",
    "DepthToSpace",
    "SpaceToDepth",
    "If",
    "Loop",
    "Scan",
    "EPContext",
];

/// A context partition whose blob's ports are in the node's order while the partition's
/// boundary lists them in another.
struct Reordered {
    inner: Box<dyn CompiledPartition>,
    /// Port `i` takes the partition's input `in_perm[i]`.
    in_perm: Vec<usize>,
    /// The partition's output `k` is port `out_perm[k]`.
    out_perm: Vec<usize>,
}

impl Reordered {
    fn reorder(&self, out: Vec<vinort_ir::Value>) -> Result<Vec<vinort_ir::Value>> {
        let mut out: Vec<Option<vinort_ir::Value>> = out.into_iter().map(Some).collect();
        self.out_perm
            .iter()
            .map(|p| out.get_mut(*p).and_then(Option::take).ok_or_else(|| Error::invalid("context port missing")))
            .collect()
    }

    fn ported<'v>(&self, inputs: &[&'v vinort_ir::Value]) -> Result<smallvec::SmallVec<[&'v vinort_ir::Value; 8]>> {
        self.in_perm
            .iter()
            .map(|i| inputs.get(*i).copied().ok_or_else(|| Error::invalid("context input missing")))
            .collect()
    }
}

impl CompiledPartition for Reordered {
    fn run(&self, inputs: &[&vinort_ir::Value], ctx: &vinort_ir::RunContext) -> Result<Vec<vinort_ir::Value>> {
        self.reorder(self.inner.run(&self.ported(inputs)?, ctx)?)
    }

    fn run_into(
        &self,
        inputs: &[&vinort_ir::Value],
        into: &[Option<vinort_ir::OutputBuffer>],
        ctx: &vinort_ir::RunContext,
    ) -> Result<Vec<vinort_ir::Value>> {
        let mut ported: Vec<Option<vinort_ir::OutputBuffer>> = vec![None; self.out_perm.len()];
        for (k, p) in self.out_perm.iter().enumerate() {
            ported[*p] = into.get(k).cloned().flatten();
        }
        self.reorder(self.inner.run_into(&self.ported(inputs)?, &ported, ctx)?)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn export_context(&self) -> Option<Result<vinort_ir::ContextBlob>> {
        // Its blob's ports are in the old node's order, which a saved node would not keep.
        Some(Err(Error::unsupported(
            "this context partition's ports were reordered when it was loaded; compile the source model to save a context",
        )))
    }
}

/// What every strategy needs about one partition.
struct Job<'a> {
    core: &'static Core,
    started: &'a Started,
    model: &'a Model,
    part: &'a PartitionDef,
    props: Vec<(String, String)>,
    input_names: Vec<&'a str>,
    /// `reshape_input`, `layout` or `disable_dynamic_shapes` change the read model before it
    /// compiles, which only the in-memory strategy can do.
    edits_inputs: bool,
    /// Int8 weights are dequantized before OpenVINO sees them: its CPU plugin would run their
    /// products with saturation on this CPU (crate::export's module doc). The model file is
    /// then never compiled as it is.
    fold_int8_weights: bool,
    /// What the plan should say about the compile (corrupted cache blobs removed).
    notes: std::cell::RefCell<Vec<String>>,
}

impl Job<'_> {
    /// Runs one compile; with a cache folder (and a model file to key on), OpenVINO's cache
    /// blobs are checked before it and recorded after it ([`crate::partition_cache::Blobs`]).
    fn cached<T, E>(&self, compile: impl FnOnce() -> std::result::Result<T, E>) -> std::result::Result<T, E> {
        let s = self.started;
        let Some(entry) = self.props.iter().find(|(k, _)| k == "CACHE_DIR").and_then(|(_, dir)| {
            crate::partition_cache::entry(
                Path::new(dir),
                self.model,
                self.part,
                &s.resolved.device,
                &s.version,
                &self.props,
            )
        }) else {
            return compile();
        };
        let blobs = crate::partition_cache::Blobs::check(&entry);
        self.notes.borrow_mut().extend(blobs.removed.iter().cloned());
        let compiled = compile();
        if compiled.is_ok() {
            blobs.record();
        }
        compiled
    }
}

/// What a failed compile does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OnFailure {
    /// Probe each node alone to find the ones to blame (a partition of a split model).
    Blame,
    /// Refuse every node with the compile's error, probing nothing (the whole-model attempt:
    /// the model is split next anyway, and the per-node layers decide there).
    RefuseAll,
}

impl OpenVinoProvider {
    /// Compiles a partition with the first strategy that works.
    pub(super) fn compile_partition(
        &self,
        model: &Model,
        part: &PartitionDef,
        on_failure: OnFailure,
    ) -> Result<Box<dyn CompiledPartition>> {
        let started = self.started()?;
        let input_names: Vec<&str> = part.inputs.iter().map(|v| model.graph.value(*v).name.as_str()).collect();
        let o = &self.options;
        let edits_inputs = o.disable_dynamic_shapes
            || o.reshape_input
                .as_ref()
                .is_some_and(|r| r.inputs.iter().any(|i| input_names.contains(&i.name.as_str())))
            || o.layout.as_ref().is_some_and(|l| l.entries.iter().any(|(n, _)| input_names.contains(&n.as_str())));
        let job = Job {
            core: ffi::core().map_err(to_ir_error)?,
            started,
            model,
            part,
            props: self.compile_props(started),
            input_names,
            edits_inputs,
            fold_int8_weights: started.resolved.device.contains("CPU")
                && !crate::cpu_kind::current().exact_int8()
                && crate::export::dequantizes_int8_weights(model, &part.nodes),
            notes: Default::default(),
        };
        let file_tried = match whole_file(&job) {
            Some(Ok(compiled)) => return self.finish(&job, None, compiled, FROM_FILE, vec![]),
            // No other strategy is tried on what OpenVINO could not finish in time.
            Some(Err(Failed::Deadline(e))) => return Err(self.failed(&job, &Failed::Deadline(e), on_failure)),
            // The file did not compile: the model vinort serializes may (OpenVINO's reader
            // lacks what vinort's loader does, such as inlining model-local functions), but
            // reading the file again would fail the same way.
            Some(Err(e)) => {
                tracing::debug!(error = %first_line(&e.to_string()), "the model file did not compile; serializing it");
                true
            }
            None => false,
        };
        // The plan says when int8 weights were dequantized, and why.
        let folded = |how: &str| match job.fold_int8_weights {
            true => format!(
                "{how}; int8 weights dequantized to f32 (no VNNI in reach of OpenVINO here: its int8 products saturate)"
            ),
            false => how.to_owned(),
        };
        match partition_file(&job) {
            Some(Ok(compiled)) => return self.finish(&job, None, compiled, &folded(FROM_PARTITION_FILE), vec![]),
            Some(Err(e)) => return Err(self.failed(&job, &Failed::Deadline(e), on_failure)),
            None => {}
        }
        let done = self.in_memory(&job, on_failure, !file_tried)?;
        let how = match (done.from_file, part.whole_graph) {
            (true, _) => FROM_FILE,
            (false, true) => FROM_MEMORY,
            (false, false) => FROM_SERIALIZED,
        };
        let how = if done.from_file { how.to_owned() } else { folded(how) };
        self.finish(&job, Some(done.template), done.compiled, &how, done.weights)
    }

    /// An EPContext node's partition: its blob imported with the device and properties it was
    /// compiled with (recorded by vinort; the session's own for a node ONNX Runtime wrote), no
    /// compile, no ONNX weights. Another OpenVINO version's blob is refused by name before
    /// OpenVINO reads it; a corrupted one fails OpenVINO's import with its message.
    pub(super) fn compile_context(&self, model: &Model, part: &PartitionDef) -> Result<Box<dyn CompiledPartition>> {
        let started = self.started()?;
        let g = &model.graph;
        let [ix] = part.nodes[..] else {
            return Err(Error::invalid("an EPContext partition must hold exactly its one node"));
        };
        let n = g.node(ix);
        let c = crate::context::read(model, n)?;
        if !crate::context::same_version(&c.sdk_version, &started.version) {
            return Err(crate::context::version_mismatch(n, &c.sdk_version, &started.version));
        }
        // The blob's ports follow the node's inputs and outputs; the partition's boundary may
        // list them in another order: mapped by value.
        let node_inputs: Vec<vinort_ir::ValueId> = n.inputs.iter().flatten().copied().collect();
        let node_outputs: Vec<vinort_ir::ValueId> = n.outputs.iter().flatten().copied().collect();
        let position = |list: &[vinort_ir::ValueId], v: &vinort_ir::ValueId| list.iter().position(|x| x == v);
        let in_perm: Option<Vec<usize>> = node_inputs.iter().map(|v| position(&part.inputs, v)).collect();
        let out_perm: Option<Vec<usize>> = part.outputs.iter().map(|v| position(&node_outputs, v)).collect();
        let (Some(in_perm), Some(out_perm)) = (in_perm, out_perm) else {
            return Err(n.error(
                "EPContext node's inputs must be run-time values (no initializer) and its outputs the values it makes",
            ));
        };
        if node_inputs.len() != part.inputs.len() || node_outputs.len() != part.outputs.len() {
            return Err(n.error("EPContext node names one value twice among its inputs or outputs"));
        }
        let (device, props) = match &c.recorded {
            Some(r) => {
                if let Some((k, _)) = r.properties.iter().find(|(k, _)| !crate::context::importable_property(k)) {
                    return Err(n.error(format!(
                        "its notes ask for property {k}, which vinort never imports with (it names a file or folder, \
                         or is not an OpenVINO property name)"
                    )));
                }
                (r.device.clone(), r.properties.clone())
            }
            None => (
                started.resolved.device.clone(),
                self.compile_props(started).into_iter().filter(|(k, _)| k != "CACHE_DIR").collect(),
            ),
        };
        if device != started.resolved.device {
            return Err(n.error(format!(
                "its blob was compiled for device {device}, but this provider runs on {}",
                started.resolved.device
            )));
        }
        let compiled = match timed::import(c.blob.clone(), device.clone(), props.clone()) {
            Ok(compiled) => compiled,
            Err(Failed::Deadline(d)) => {
                return Err(Error::RefusedAtCompile(refuse_all(part, &format!("compile deadline: {d}"))));
            }
            Err(e) => {
                return Err(n.error(format!(
                    "OpenVINO could not import its blob ({}): {}",
                    c.origin,
                    super::first_line(&e.to_string())
                )));
            }
        };
        // The blob's own boundary: the node's order.
        let ported = PartitionDef { inputs: node_inputs, outputs: node_outputs, ..part.clone() };
        let job = Job {
            core: ffi::core().map_err(to_ir_error)?,
            started,
            model,
            part: &ported,
            props,
            input_names: ported.inputs.iter().map(|v| g.value(*v).name.as_str()).collect(),
            edits_inputs: false,
            // Nothing is serialized: the blob is what it is.
            fold_int8_weights: false,
            notes: Default::default(),
        };
        let how = format!("imported from its EPContext blob ({}), no compile", c.origin);
        // OpenVINO imports from memory in place: the compiled model keeps reading the blob's
        // buffer (its weights), so the buffer lives as long as the partition. (Measured: a
        // blob file's bytes dropped after the import gave outputs off by 0.12.)
        let blob = vinort_ir::Tensor::from_shared_bytes(vinort_ir::DType::U8, &[c.blob.len()], c.blob.clone())?;
        let inner = match self.finish(&job, None, compiled, &how, vec![blob]) {
            Err(Error::RefusedAtCompile(why)) => {
                return Err(n.error(format!(
                    "its blob does not match the node: {}",
                    why.first().map_or("", |(_, w)| w.as_str())
                )));
            }
            other => other?,
        };
        let identity = |p: &[usize]| p.iter().enumerate().all(|(i, j)| i == *j);
        if identity(&in_perm) && identity(&out_perm) {
            return Ok(inner);
        }
        Ok(Box::new(Reordered { inner, in_perm, out_perm }))
    }

    /// Serializes the partition (weights by address), applies `reshape_input` and `layout`,
    /// and compiles; a whole model that fails so is tried from its file (when `file_fallback`);
    /// on failure blames the nodes that fail alone.
    fn in_memory(&self, job: &Job, on_failure: OnFailure, file_fallback: bool) -> Result<InMemory> {
        let (model, part) = (job.model, job.part);
        // reshape_input and layout name model inputs; they apply to the partitions those
        // inputs enter.
        let mut edits = timed::Edits::default();
        if let Some(r) = &self.options.reshape_input {
            for shape in r.inputs.iter().filter(|i| job.input_names.contains(&i.name.as_str())) {
                edits.reshape.push((shape.name.clone(), ov_dims(&shape.dims), shape.partial_shape().to_string()));
            }
        }
        if let Some(l) = &self.options.layout {
            for (name, layout) in l.entries.iter().filter(|(n, _)| job.input_names.contains(&n.as_str())) {
                edits.layout.push((name.clone(), layout.as_str().to_owned()));
            }
        }
        let target = || (job.started.resolved.device.clone(), job.props.clone());
        let attempt = |file: Option<&Path>| -> std::result::Result<InMemory, Failed> {
            let (source, weights) = match file {
                Some(path) => (timed::Source::File(path.to_owned()), vec![]),
                None => {
                    let s = partition_model_with(
                        model,
                        &part.nodes,
                        &part.inputs,
                        &part.outputs,
                        Weights::ByAddress,
                        job.fold_int8_weights,
                    )
                    .map_err(|e| Failed::Nodes(e.to_string()))?;
                    (timed::Source::Bytes(s.bytes), s.by_address)
                }
            };
            let (device, props) = target();
            let done =
                job.cached(|| timed::read_and_compile(job.core, source, edits.clone(), device, props, weights))?;
            Ok(InMemory {
                template: done.model,
                compiled: done.compiled,
                from_file: file.is_some(),
                weights: done.weights,
            })
        };
        let file = match (&model.path, part.whole_graph && file_fallback && !job.fold_int8_weights) {
            (Some(path), true) => Some(path.as_path()),
            _ => None,
        };
        let outcome = match (attempt(None), file) {
            (Err(Failed::Nodes(e)), Some(path)) => {
                tracing::debug!(error = %first_line(&e), "the serialized model did not compile; reading the file");
                attempt(Some(path))
            }
            (outcome, _) => outcome,
        };
        match outcome {
            Ok(done) => Ok(done),
            // A bad reshape_input/layout is the user's error, not the nodes' fault.
            Err(Failed::Edit(e)) => Err(e),
            Err(failed) => Err(self.failed(job, &failed, on_failure)),
        }
    }

    /// The nodes a failed compile refuses: those that fail alone when blaming (if none does,
    /// the partition fails only as a whole and all of it goes back), else all of them.
    fn failed(&self, job: &Job, failed: &Failed, on_failure: OnFailure) -> Error {
        let (model, part) = (job.model, job.part);
        let e = match failed {
            // Nothing is probed after a deadline: a probe could spin the same way, and the
            // partition is refused whole (its nodes go to the next provider).
            Failed::Deadline(d) => return Error::RefusedAtCompile(refuse_all(part, &format!("compile deadline: {d}"))),
            Failed::Nodes(e) => e.as_str(),
            Failed::Edit(e) => return Error::invalid(e.to_string()),
        };
        let why = format!("partition failed to compile as a whole: {}", first_line(e));
        if on_failure == OnFailure::RefuseAll {
            // The nodes OpenVINO's conversion report names, when it names some of them.
            let named: Vec<_> = super::evidence::conversion_failures(model, e)
                .into_iter()
                .filter(|(ix, _)| part.nodes.contains(ix))
                .collect();
            return Error::RefusedAtCompile(if named.is_empty() { refuse_all(part, &why) } else { named });
        }
        let mut blamed: Vec<(NodeIndex, String)> = part
            .nodes
            .iter()
            .filter_map(|&ix| match self.probe(model, ix, job.started) {
                probe::Verdict::Ok => None,
                probe::Verdict::Refused(r) => Some((ix, format!("compile probe: {r}"))),
            })
            .collect();
        if blamed.is_empty() {
            blamed = refuse_all(part, &why);
        }
        Error::RefusedAtCompile(blamed)
    }

    /// Checks a compiled partition against its definition and wraps it for running.
    fn finish(
        &self,
        job: &Job,
        template: Option<OvModel>,
        compiled: CompiledModel,
        how: &str,
        weights: Vec<vinort_ir::Tensor>,
    ) -> Result<Box<dyn CompiledPartition>> {
        let (s, part) = (job.started, job.part);
        let inputs = compiled.inputs().map_err(to_ir_error)?;
        let outputs = compiled.outputs().map_err(to_ir_error)?;
        if inputs.len() != part.inputs.len() || outputs.len() != part.outputs.len() {
            let why = format!(
                "compiled model has {} inputs/{} outputs, the partition {}/{}",
                inputs.len(),
                outputs.len(),
                part.inputs.len(),
                part.outputs.len()
            );
            return Err(Error::RefusedAtCompile(refuse_all(part, &why)));
        }
        let count =
            |key: &str| -> usize { compiled.property(key).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(1) };
        let pool_size = count("OPTIMAL_NUMBER_OF_INFER_REQUESTS").max(count("NUM_STREAMS")).clamp(1, 64);
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
        let shapes: Vec<String> =
            inputs.iter().zip(&job.input_names).map(|(p, n)| format!("{n}{}", p.partial)).collect();
        let mut describe = format!(
            "OpenVINO {} on {}; inputs {}; {}; {} infer request(s); {}",
            s.version,
            s.resolved.device,
            shapes.join(" "),
            how,
            pool_size,
            effective.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
        );
        for note in job.notes.borrow().iter() {
            describe = format!("{describe}; {note}");
        }
        tracing::info!(partition = %describe, "OpenVINO partition compiled");
        let dynamic = inputs.iter().any(|p| p.static_shape().is_none());
        if self.options.disable_dynamic_shapes && dynamic {
            describe = format!("{describe}; disable_dynamic_shapes: compiled per input shape, last {SHAPE_CACHE} kept");
        }
        // `template` is there whenever disable_dynamic_shapes is (the one-call compile is not
        // used then).
        let per_shape = match (self.options.disable_dynamic_shapes && dynamic, template) {
            (true, Some(template)) => Some(PerShape {
                template: Arc::new(Mutex::new(template)),
                weights: weights.clone(),
                names: job.input_names.iter().map(|n| n.to_string()).collect(),
                device: s.resolved.device.clone(),
                props: job.props.clone(),
                cache: SingleFlight::new(SHAPE_CACHE),
            }),
            _ => None,
        };
        // What a later import needs: CACHE_DIR is not a property of the compiled model.
        let recorded: Vec<(String, String)> = job.props.iter().filter(|(k, _)| k != "CACHE_DIR").cloned().collect();
        let g = &job.model.graph;
        let bindable = part
            .outputs
            .iter()
            .map(|v| g.producer(*v).is_some_and(|ix| !FORWARDING.contains(&g.node(ix).op_type.as_str())))
            .collect();
        Ok(Box::new(OvPartition {
            fixed: Arc::new(Compiled::new(compiled, inputs, outputs, pool_size, bindable)),
            compiled_with: (s.version.clone(), s.resolved.device.clone(), recorded),
            per_shape,
            describe,
            effective,
            _weights: weights,
        }))
    }
}

/// Strategy 1: the whole model file in one call, with `cache_dir` and nothing edited before
/// compiling. `None` when the strategy does not apply; else the compile's outcome.
fn whole_file(job: &Job) -> Option<std::result::Result<CompiledModel, Failed>> {
    let cache = job.props.iter().any(|(k, _)| k == "CACHE_DIR");
    let (Some(path), true, false, true, false) =
        (&job.model.path, job.part.whole_graph, job.edits_inputs, cache, job.fold_int8_weights)
    else {
        return None;
    };
    let (device, props) = (job.started.resolved.device.clone(), job.props.clone());
    Some(job.cached(|| timed::compile_file(job.core, path.clone(), device, props)))
}

/// Strategy 2: a partition of a model file with `cache_dir`, through its partition file.
/// `Some(Err)` when OpenVINO did not finish in time (no other strategy is tried then).
fn partition_file(job: &Job) -> Option<std::result::Result<CompiledModel, vinort_ir::deadline::Expired>> {
    let s = job.started;
    let dir = match (job.props.iter().find(|(k, _)| k == "CACHE_DIR"), job.part.whole_graph, job.edits_inputs) {
        (Some((_, dir)), false, false) => dir,
        _ => return None,
    };
    // Whether int8 weights were folded changes the file: part of its key.
    let mut keyed = job.props.clone();
    if job.fold_int8_weights {
        keyed.push(("vinort: int8 weights dequantized".into(), "1".into()));
    }
    let entry =
        crate::partition_cache::entry(Path::new(dir), job.model, job.part, &s.resolved.device, &s.version, &keyed)?;
    let (model, part) = (job.model, job.part);
    let written = crate::partition_cache::intact(&entry)
        || crate::partition_cache::store(&entry, |tmp| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            // Read by later processes: weights inline, never by address.
            let s = partition_model_with(
                model,
                &part.nodes,
                &part.inputs,
                &part.outputs,
                Weights::Inline,
                job.fold_int8_weights,
            )?;
            Ok(std::fs::write(tmp, s.bytes)?)
        })
        .and_then(|()| Ok(crate::partition_cache::seal(&entry)?))
        .map_err(|e| tracing::warn!(entry = %entry.display(), error = %e, "could not write the partition file"))
        .is_ok();
    if !written {
        return None;
    }
    let (device, props) = (s.resolved.device.clone(), job.props.clone());
    match job.cached(|| timed::compile_file(job.core, entry.clone(), device, props)) {
        Ok(compiled) => Some(Ok(compiled)),
        Err(Failed::Deadline(e)) => Some(Err(e)),
        Err(e) => {
            // Not trusted again: the next session writes it anew.
            tracing::warn!(entry = %entry.display(), error = %e, "partition file did not compile; compiling from memory");
            let _ = std::fs::remove_file(&entry);
            None
        }
    }
}

/// What the in-memory strategy compiled.
struct InMemory {
    /// The read model (kept for per-shape compiles).
    template: OvModel,
    compiled: CompiledModel,
    /// Read from the model file rather than a serialized partition.
    from_file: bool,
    /// Weights the serialized partition referenced by address.
    weights: Vec<vinort_ir::Tensor>,
}

/// Every node of the partition refused for one reason.
fn refuse_all(part: &PartitionDef, why: &str) -> Vec<(NodeIndex, String)> {
    part.nodes.iter().map(|ix| (*ix, why.to_owned())).collect()
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
