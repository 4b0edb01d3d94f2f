//! Runtime, session building and running.

use smallvec::SmallVec;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use vinort_ir::exec::{Plan, PlanBuilder, Step};
use vinort_ir::{
    CompiledPartition, DType, Dim, Elem, Model, OutputBuffer, RunContext, Tensor, Value, ValueId, ValueType, WholeModel,
};

mod environment;
pub use environment::Environment;

use crate::config::Prepared;
use crate::error::{Error, Result};
use crate::inputs::{InputKey, RunInputs};
use crate::outputs::Outputs;
use crate::partition::{PartitionPlan, partition};
use crate::provider::Provider;

/// Entry point: load a model, then choose providers and build a [`Session`].
pub struct Runtime;

impl Runtime {
    /// Loads a model file (memory-mapped; weights are not copied).
    pub fn load(path: impl AsRef<Path>) -> Result<SessionBuilder> {
        Ok(SessionBuilder::new(Model::load(path).map_err(Error::Model)?))
    }

    /// Loads a model from bytes (external data is refused: there is no folder to find it in).
    pub fn from_bytes(bytes: impl Into<vinort_ir::proto::prost::bytes::Bytes>) -> Result<SessionBuilder> {
        Ok(SessionBuilder::new(Model::from_bytes(bytes).map_err(Error::Model)?))
    }
}

/// Configures a session: the ordered provider list.
pub struct SessionBuilder {
    model: Model,
    providers: Vec<Provider>,
    save_context: Option<(std::path::PathBuf, crate::EmbedMode)>,
    env: Option<Environment>,
    memory_limit: Option<usize>,
    compile_timeout: Option<std::time::Duration>,
    intra_threads: Option<usize>,
    optimization: Option<crate::GraphOptimizationLevel>,
    log_level: Option<LogLevel>,
    /// ONNX Runtime session config entries ([`SessionBuilder::config_entry`]).
    pub(crate) config: Vec<(String, String)>,
    /// Symbolic input dims fixed ([`SessionBuilder::dimension_override`]).
    pub(crate) dims: Vec<(String, usize)>,
    /// The profile's file prefix ([`SessionBuilder::profiling`]).
    pub(crate) profiling: Option<std::path::PathBuf>,
}

/// How much a session logs of its own doings ([`SessionBuilder::log_level`]), like `ort`'s
/// `LogLevel`. vinort logs through [`tracing`](https://docs.rs/tracing): the application's
/// subscriber shows what passes both this and its own filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Also warnings (a provider that could not start).
    Warning,
    /// Also the plan when the session is built, nodes refused at compile time and stopped runs.
    Info,
    /// Also every node a provider refused, with the reason.
    Verbose,
}

thread_local! {
    /// The [`LogLevel`] of the session being built on this thread.
    static BUILD_LOG_LEVEL: std::cell::Cell<Option<LogLevel>> = const { std::cell::Cell::new(None) };
}

/// True when the session being built on this thread logs events of level `at`.
pub(crate) fn logs(at: LogLevel) -> bool {
    BUILD_LOG_LEVEL.with(|l| l.get().is_none_or(|l| at <= l))
}

impl SessionBuilder {
    /// A builder for an already loaded model.
    pub fn new(model: Model) -> SessionBuilder {
        SessionBuilder {
            model,
            providers: vec![],
            save_context: None,
            env: None,
            memory_limit: None,
            compile_timeout: None,
            intra_threads: None,
            optimization: None,
            log_level: None,
            config: vec![],
            dims: vec![],
            profiling: None,
        }
    }

    /// Intra-op threads of the Cpu provider(s) of this session, like `ort`'s
    /// `with_intra_threads`: overrides [`crate::Cpu::threads`]. OpenVINO's threads are its own
    /// option (`num_of_threads`).
    ///
    /// ```
    /// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/mobilenetv2_tiny/model.onnx");
    /// use vinort::{GraphOptimizationLevel, LogLevel, Runtime};
    /// let session = Runtime::load(model)?
    ///     .intra_threads(2)
    ///     .optimization_level(GraphOptimizationLevel::Basic)
    ///     .log_level(LogLevel::Warning)
    ///     .build()?;
    /// assert_eq!(session.plan().partitions[0].provider, "Cpu");
    /// # Ok::<(), vinort::Error>(())
    /// ```
    pub fn intra_threads(mut self, n: usize) -> SessionBuilder {
        self.intra_threads = Some(n.max(1));
        self
    }

    /// How much the Cpu provider's graph optimizer rewrites, like `ort`'s
    /// `with_optimization_level`: overrides [`crate::Cpu::optimization`].
    pub fn optimization_level(mut self, level: crate::GraphOptimizationLevel) -> SessionBuilder {
        self.optimization = Some(level);
        self
    }

    /// The most this session logs of its own doings (its plan, refusals, skipped providers,
    /// stopped runs); by default everything goes to the `tracing` subscriber, which filters.
    pub fn log_level(mut self, level: LogLevel) -> SessionBuilder {
        self.log_level = Some(level);
        self
    }

    /// The loaded model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Sets the providers, in priority order: each claims what it can of what the ones before
    /// it left. With no call, the session uses `[Cpu]`.
    pub fn providers(mut self, providers: impl IntoIterator<Item = Provider>) -> SessionBuilder {
        self.providers = providers.into_iter().collect();
        self
    }

    /// Caps every single tensor of this session at `bytes`. Checked at build for every value
    /// whose shape is known then, and at run for every tensor a Cpu kernel allocates (on the
    /// thread running the kernel): either way a larger one is [`Error::MemoryLimit`] naming
    /// the node, never an allocation abort. All tensor storage of the process also meets
    /// [`vinort_ir::limits::memory_limit`] (a quarter of the physical memory unless set), with or
    /// without this.
    ///
    /// ```
    /// use vinort::{Error, Runtime};
    /// # let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/mobilenetv2_tiny/model.onnx");
    /// // Its first convolution makes a [1, 16, 32, 32] f32 tensor: 65,536 bytes.
    /// let session = Runtime::load(&model)?.memory_limit(60_000).build();
    /// let e = session.err().unwrap();
    /// assert!(matches!(e, Error::MemoryLimit { .. }), "{e}");
    /// assert!(Runtime::load(&model)?.memory_limit(1 << 20).build().is_ok());
    /// # Ok::<(), vinort::Error>(())
    /// ```
    pub fn memory_limit(mut self, bytes: usize) -> SessionBuilder {
        self.memory_limit = Some(bytes);
        self
    }

    /// The longest a provider may spend on one compile it cannot interrupt (an OpenVINO
    /// compile, a single-node probe, a blob import), and the most a build spends on all of them
    /// together; `Duration::ZERO` waits for ever. Default
    /// [`vinort_ir::deadline::DEFAULT_COMPILE_TIMEOUT`] (60 s). A compile past it refuses its
    /// partition, naming the deadline, and the graph is partitioned again as after any
    /// compile failure (those nodes go to the next provider); the abandoned compile goes on
    /// running on its own thread until OpenVINO returns ([`vinort_ir::deadline`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use vinort::Runtime;
    /// # let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/mobilenetv2_tiny/model.onnx");
    /// let session = Runtime::load(&model)?.compile_timeout(Duration::from_secs(120)).build()?;
    /// # Ok::<(), vinort::Error>(())
    /// ```
    pub fn compile_timeout(mut self, timeout: std::time::Duration) -> SessionBuilder {
        self.compile_timeout = Some(timeout);
        self
    }

    /// Once built, saves the session as a compiled-context model at `path` (like ONNX
    /// Runtime's `ep.context_enable` + `ep.context_file_path`); see [`Session::save_context`].
    pub fn save_context(mut self, path: impl AsRef<Path>, embed: crate::EmbedMode) -> SessionBuilder {
        self.save_context = Some((path.as_ref().to_owned(), embed));
        self
    }

    /// Starts the providers, partitions the graph and compiles every partition.
    pub fn build(mut self) -> Result<Session> {
        let providers = std::mem::take(&mut self.providers);
        let (profiling, save) = (self.profiling.take(), self.save_context.take());
        let prepared = Prepared::new(&self.config, &mut self.model, &self.dims, profiling, save, &providers)?;
        let providers = if providers.is_empty() { vec![crate::Cpu::default().into()] } else { providers };
        let cpu = crate::provider::SessionCpuSettings {
            threads: self.intra_threads,
            level: self.optimization,
            sleep_between_kernels: prepared.sleep_between_kernels,
        };
        self.providers = providers.into_iter().map(|p| p.with_cpu_settings(cpu)).collect();
        let outer = BUILD_LOG_LEVEL.with(|l| l.replace(self.log_level));
        let built = self.build_logged(prepared);
        BUILD_LOG_LEVEL.with(|l| l.set(outer));
        built
    }

    fn build_logged(self, mut prepared: Prepared) -> Result<Session> {
        if logs(LogLevel::Warning) {
            for w in &prepared.warnings {
                tracing::warn!(warning = %w, "session setting not applied as asked");
            }
        }
        let save = prepared.save.take();
        // Providers see the session's limit while they claim and compile (the OpenVINO
        // provider refuses nodes with static tensors past it: OpenVINO allocates those itself).
        let deadline = self.compile_timeout;
        let session = vinort_ir::deadline::with_compile_timeout(deadline, || {
            vinort_ir::deadline::with_build_budget(|| {
                vinort_ir::limits::with_session_limit(self.memory_limit, || {
                    vinort_ir::tensor::pool::not_kept(|| match self.env.clone() {
                        Some(env) => self.build_shared(&env, prepared),
                        None => self.build_session(prepared),
                    })
                })
            })
        });
        // What the build freed (transient copies of weights) goes back to the system.
        vinort_ir::heap::release_free_memory();
        let session = session?;
        if let Some((path, embed)) = save {
            session.save_context(path, embed)?;
        }
        Ok(session)
    }

    fn build_session(self, prepared: Prepared) -> Result<Session> {
        let SessionBuilder { model, providers, memory_limit, log_level, .. } = self;
        let Prepared { warnings, fixed: fixed_dims, profiler, cost_model, .. } = prepared;
        // The file no longer says what the graph is once dims were fixed in memory.
        let file_is_graph = fixed_dims.is_empty();
        check_known_sizes(&model, memory_limit)?;
        let providers = if providers.is_empty() { vec![crate::Cpu::default().into()] } else { providers };
        let mut started = vec![];
        let mut warnings = warnings;
        for p in &providers {
            match p.ep.start() {
                Ok(()) => {
                    warnings.extend(p.ep.warnings());
                    started.push(p.ep.clone());
                }
                Err(e) if p.error_on_failure => {
                    return Err(Error::ProviderUnavailable { provider: p.name(), source: e });
                }
                Err(e) => {
                    if logs(LogLevel::Warning) {
                        tracing::warn!(provider = %p.name(), error = %e, "execution provider skipped");
                    }
                    warnings.push(format!("provider {} skipped: {e}", p.name()));
                }
            }
        }
        if started.is_empty() {
            return Err(Error::Config("no execution provider could start".into()));
        }
        let g = &model.graph;
        let (plan, b) = match whole_model_first(&model, &started, &warnings, file_is_graph)? {
            Ok(done) => done,
            Err((path, evidence)) => {
                // What the whole compile showed about single nodes holds for every piece.
                let vetoes = evidence.into_iter().map(|(n, why)| ((0, n), why)).collect();
                let (mut plan, b) = split(&model, &started, &warnings, vetoes, file_is_graph, cost_model)?;
                plan.path = path;
                (plan, b)
            }
        };
        let mut b = b;
        for v in g.outputs() {
            if !b.knows(*v)
                && let Some(t) = g.initializer(*v)
            {
                b.constant(*v, Value::Tensor(t.clone()));
            }
            b.output(*v)?;
        }
        if logs(LogLevel::Info) {
            tracing::info!(plan = %plan, "session built");
        }
        if let Some(p) = &profiler {
            p.initialized(&plan.partitions);
        }
        let inputs = g.inputs().iter().map(|v| io_info(g, *v)).collect();
        let outputs: Vec<IoInfo> = g.outputs().iter().map(|v| io_info(g, *v)).collect();
        let output_names = outputs.iter().map(|o| o.name.clone()).collect();
        // The providers hold their own forms of the weights they packed or compiled; what they
        // still read from the file faults back in at the first run (one copy, not two).
        model.release_weight_pages();
        Ok(Session {
            inner: Arc::new(Inner {
                plan: b.build(),
                report: plan,
                inputs,
                outputs,
                output_names,
                model,
                memory_limit,
                log_level,
                fixed_dims,
                profiler,
            }),
        })
    }
}

/// Refuses a model with a value whose shape, known at build, needs more bytes than the
/// memory limits allow: before any provider compiles (or constant-folds) it.
fn check_known_sizes(model: &Model, session_limit: Option<usize>) -> Result<()> {
    use vinort_ir::limits::{self, Refused, Which};
    let process = limits::memory_limit();
    let (limit, which) = match session_limit {
        Some(l) if l < process => (l, Which::Session),
        _ => (process, Which::Process),
    };
    let g = &model.graph;
    for ix in g.node_indices() {
        let node = g.node(ix);
        for v in node.outputs.iter().flatten() {
            let ty = &g.value(*v).ty;
            let (Some(dtype), Some(shape)) = (ty.tensor_dtype(), ty.static_shape()) else { continue };
            let bytes = limits::byte_size(&shape, dtype.size().max(1)).unwrap_or(usize::MAX);
            if bytes > limit {
                return Err(Error::MemoryLimit {
                    node: Some(node.name.clone()),
                    op: Some(node.qualified_op()),
                    refused: Refused { bytes, limit, held: 0, which, at_least: false },
                });
            }
        }
    }
    Ok(())
}

type Started = [Arc<dyn vinort_ir::ExecutionProvider>];
type Built = (PartitionPlan, PlanBuilder<ValueId, PartitionStep>);
/// Why the model is split, and the nodes the first provider must not get in any piece.
type SplitBecause = (String, Vec<(vinort_ir::NodeIndex, String)>);

/// Whole model first: the first provider compiles every node as one partition unless it names
/// a node it must refuse in any context. `Ok(Err((path, refused)))` says why the model is split
/// instead, and which nodes the first provider must not get in any piece.
fn whole_model_first(
    model: &Model,
    started: &Started,
    warnings: &[String],
    file_is_graph: bool,
) -> Result<std::result::Result<Built, SplitBecause>> {
    let first = &started[0];
    let Some(def) = crate::partition::whole(model, file_is_graph) else {
        return Ok(Err(("split: the graph has no nodes".into(), vec![])));
    };
    let whole = match first.compile_whole(model, &def) {
        // A provider's own failure (not the model's, not a limit) costs the whole-model path,
        // not the session: the split below compiles the parts or hands them on.
        Err(e @ vinort_ir::Error::Provider { .. }) => {
            WholeModel::Split(format!("failed to compile the whole model: {e}"))
        }
        other => other?,
    };
    match whole {
        WholeModel::Compiled(compiled, how) => {
            let g = &model.graph;
            let mut b = PlanBuilder::<ValueId, PartitionStep>::new();
            for v in g.inputs() {
                b.input(*v);
            }
            let mut part = crate::partition::planned(model, first.name(), &def);
            part.details = compiled.describe();
            let ins: Vec<Option<ValueId>> = def.inputs.iter().map(|v| Some(*v)).collect();
            let outs: Vec<Option<ValueId>> = def.outputs.iter().map(|v| Some(*v)).collect();
            b.step(PartitionStep { compiled, outputs: def.outputs.clone(), index: 0 }, &ins, &outs)?;
            let plan = PartitionPlan {
                partitions: vec![part],
                refusals: vec![],
                warnings: warnings.to_vec(),
                path: format!("whole model: {} {how}", first.name()),
            };
            Ok(Ok((plan, b)))
        }
        WholeModel::Split(why) => Ok(Err((format!("split: {} {why}", first.name()), vec![]))),
        WholeModel::SplitRefusing(why, refused) => Ok(Err((format!("split: {} {why}", first.name()), refused))),
        WholeModel::NotTried => {
            Ok(Err((format!("split: node by node ({} has no whole-model path)", first.name()), vec![])))
        }
    }
}

/// Partitions node by node and compiles every partition.
fn split(
    model: &Model,
    started: &Started,
    warnings: &[String],
    mut vetoes: HashMap<(usize, vinort_ir::NodeIndex), String>,
    file_is_graph: bool,
    cost_model: bool,
) -> Result<Built> {
    let g = &model.graph;
    // A provider may find at compile time that it cannot run some nodes it claimed (its
    // capability answer was wrong): those nodes are vetoed for it and the graph is
    // partitioned again, so a wrong answer costs time, never the session. `vetoes` starts
    // with what the whole-model compile showed.
    loop {
        let (defs, mut plan) = partition(model, started, &vetoes, file_is_graph, cost_model)?;
        plan.warnings = warnings.to_vec();
        let mut b = PlanBuilder::<ValueId, PartitionStep>::new();
        for v in g.inputs() {
            b.input(*v);
        }
        let mut refused = None;
        for (i, (pi, def)) in defs.iter().enumerate() {
            match started[*pi].compile(model, def) {
                Ok(compiled) => {
                    plan.partitions[i].details = compiled.describe();
                    let ins: Vec<Option<ValueId>> = def.inputs.iter().map(|v| Some(*v)).collect();
                    let outs: Vec<Option<ValueId>> = def.outputs.iter().map(|v| Some(*v)).collect();
                    b.step(PartitionStep { compiled, outputs: def.outputs.clone(), index: i }, &ins, &outs)?;
                }
                Err(vinort_ir::Error::RefusedAtCompile(nodes)) if !nodes.is_empty() => {
                    refused = Some((*pi, nodes));
                    break;
                }
                // The provider failed on this partition (an OpenVINO error, a device gone):
                // its nodes go to the next provider, and the plan says why.
                Err(e @ vinort_ir::Error::Provider { .. }) => {
                    let why = format!("{} failed to compile its partition: {e}", started[*pi].name());
                    refused = Some((*pi, def.nodes.iter().map(|n| (*n, why.clone())).collect()));
                    break;
                }
                Err(e) => return Err(e.into()),
            }
        }
        let Some((pi, nodes)) = refused else {
            return Ok((plan, b));
        };
        for (n, why) in nodes {
            if logs(LogLevel::Info) {
                tracing::info!(node = %g.node(n).name, provider = %started[pi].name(), reason = %why, "refused at compile time");
            }
            if vetoes.insert((pi, n), why).is_some() {
                return Err(Error::Config(format!(
                    "provider {} refused node '{}' again after it was vetoed",
                    started[pi].name(),
                    g.node(n).name
                )));
            }
        }
    }
}

fn io_info(g: &vinort_ir::Graph, v: ValueId) -> IoInfo {
    let info = g.value(v);
    IoInfo { name: info.name.clone(), ty: info.ty.clone(), default: g.input_default(v).cloned() }
}

/// Name and type of a model input or output.
#[derive(Debug, Clone)]
pub struct IoInfo {
    /// The name.
    pub name: String,
    /// Element type and shape, with symbolic dims as named in the model.
    pub ty: ValueType,
    /// For an overridable initializer (a graph input that also has an initializer, IR >= 4,
    /// ONNX Runtime's `get_overridable_initializers`): the value a run that does not feed the
    /// input uses. `None` for inputs that must be fed, and for outputs.
    pub default: Option<Tensor>,
}

impl IoInfo {
    /// True when a run must feed this input (it has no default).
    pub fn required(&self) -> bool {
        self.default.is_none()
    }
}

struct PartitionStep {
    compiled: Box<dyn CompiledPartition>,
    /// The values it returns, in order (to find the bound outputs among them).
    outputs: Vec<ValueId>,
    /// Its position in the plan's partitions.
    index: usize,
}

impl PartitionStep {
    fn run_into(
        &self,
        inputs: &[Option<&Value>],
        into: &[Option<OutputBuffer>],
        ctx: &RunContext,
    ) -> vinort_ir::Result<vinort_ir::Values> {
        let ins: smallvec::SmallVec<[&Value; 8]> = inputs
            .iter()
            .map(|v| v.ok_or_else(|| vinort_ir::Error::invalid("partition input missing")))
            .collect::<vinort_ir::Result<_>>()?;
        // A partition's outputs arrive as a Vec: kept on the heap as they are, no copy.
        let out = if into.iter().all(Option::is_none) {
            self.compiled.run(&ins, ctx)
        } else {
            self.compiled.run_into(&ins, into, ctx)
        };
        out.map(vinort_ir::Values::from_vec)
    }
}

impl Step for PartitionStep {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> vinort_ir::Result<vinort_ir::Values> {
        self.run_into(inputs, &[], ctx)
    }
}

pub(crate) struct Inner {
    plan: Plan<PartitionStep>,
    report: PartitionPlan,
    inputs: Vec<IoInfo>,
    outputs: Vec<IoInfo>,
    /// The output names, shared by every [`Outputs`] (no per-run copies).
    output_names: Arc<[String]>,
    model: Model,
    /// [`SessionBuilder::memory_limit`].
    memory_limit: Option<usize>,
    /// [`SessionBuilder::log_level`].
    log_level: Option<LogLevel>,
    /// The input dims [`SessionBuilder::dimension_override`] fixed.
    fixed_dims: Vec<crate::dims::FixedDim>,
    /// [`SessionBuilder::profiling`].
    pub(crate) profiler: Option<Arc<crate::profiling::Profiler>>,
}

/// A compiled model, ready to run. `Send + Sync`: [`Session::run`] may be called from many
/// threads at once; cloning shares the compiled partitions.
#[derive(Clone)]
pub struct Session {
    pub(crate) inner: Arc<Inner>,
}

/// I/O binding, like ONNX Runtime's `IoBinding`: inputs bound once (borrowed without a copy,
/// or shared values) and outputs written into the caller's buffers, for runs that allocate no
/// tensor buffer of their own ([`Session::run_with`]).
///
/// ```
/// # fn main() -> Result<(), vinort::Error> {
/// let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/mobilenetv2_tiny/model.onnx");
/// let session = vinort::Runtime::load(model)?.build()?;
/// let (shape, x) = ([1, 3, 64, 64], vec![0.5f32; 3 * 64 * 64]);
/// let mut probabilities = [0f32; 10];
/// let mut b = session.binding();
/// b.bind_input("input", vinort::TensorRef::from_slice(&shape, &x)?)?;
/// b.bind_output("probabilities", &[1, 10], &mut probabilities)?;
/// session.run_with(&mut b, &vinort::RunOptions::new())?;
/// drop(b);
/// assert!((probabilities.iter().sum::<f32>() - 1.0).abs() < 1e-4);
/// # Ok(()) }
/// ```
pub struct Binding<'a> {
    session: Session,
    inputs: Vec<Option<Value>>,
    outputs: Vec<Option<OutputBuffer>>,
    results: Vec<Option<Value>>,
    in_place: Vec<bool>,
    _borrows: std::marker::PhantomData<&'a mut [u8]>,
}

// SAFETY: the raw pointers in `outputs` come from `&'a mut` slices the binding borrows
// exclusively, so moving the binding to another thread moves that exclusive access with it.
unsafe impl Send for Binding<'_> {}

impl<'a> Binding<'a> {
    /// Binds an input by name (a [`TensorRef`] is used where it lies, for every run).
    pub fn bind_input(&mut self, name: &str, value: impl Into<Input<'a>>) -> Result<()> {
        let infos = &self.session.inner.inputs;
        let pos = infos.iter().position(|i| i.name == name).ok_or_else(|| Error::Input {
            name: name.into(),
            message: format!(
                "the model has no such input (its inputs: {})",
                infos.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        })?;
        let v = match value.into() {
            Input::Value(v) => v,
            // SAFETY: the borrowed storage lives for 'a, which outlives the binding; a run
            // returns no value over it (bound outputs are the caller's, others are detached).
            Input::Borrowed(t) => Value::Tensor(unsafe { Tensor::borrow_bytes(t.dtype, &t.shape, t.bytes) }?),
            Input::Invalid(e) => return Err(e),
        };
        check_input(&infos[pos], &v)?;
        self.inputs[pos] = Some(v);
        Ok(())
    }

    /// Binds an output by name to the caller's buffer, holding a tensor of `shape`.
    pub fn bind_output<T: Elem>(&mut self, name: &str, shape: &[usize], buffer: &'a mut [T]) -> Result<()> {
        if shape.iter().product::<usize>() != buffer.len() {
            return Err(Error::Config(format!(
                "bind_output '{name}': shape {shape:?} does not hold {} elements",
                buffer.len()
            )));
        }
        // SAFETY: any initialised `T: Elem` is a valid byte sequence and every byte pattern a
        // valid `T`; the byte view keeps the exclusive borrow for 'a.
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(buffer.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(buffer)) };
        self.bind_output_bytes(name, T::DTYPE, shape, bytes)
    }

    /// Binds an output by name to a byte buffer holding a `dtype` tensor of `shape`, aligned
    /// for `dtype` (for callers that handle element types at run time).
    pub fn bind_output_bytes(&mut self, name: &str, dtype: DType, shape: &[usize], buffer: &'a mut [u8]) -> Result<()> {
        let infos = &self.session.inner.outputs;
        let pos = infos.iter().position(|o| o.name == name).ok_or_else(|| {
            Error::Config(format!(
                "bind_output: the model has no output '{name}' (its outputs: {})",
                infos.iter().map(|o| o.name.as_str()).collect::<Vec<_>>().join(", ")
            ))
        })?;
        if dtype == DType::String || shape.iter().product::<usize>() * dtype.size() != buffer.len() {
            return Err(Error::Config(format!(
                "bind_output '{name}': {} bytes do not hold a {dtype} tensor of shape {shape:?}",
                buffer.len()
            )));
        }
        if !(buffer.as_ptr() as usize).is_multiple_of(dtype.size().max(1)) {
            return Err(Error::Config(format!("bind_output '{name}': the buffer is not aligned for {dtype}")));
        }
        if let Some(d) = infos[pos].ty.tensor_dtype()
            && d != dtype
        {
            return Err(Error::Config(format!("bind_output '{name}': the output is {d}, the buffer {dtype}")));
        }
        self.outputs[pos] =
            Some(OutputBuffer { ptr: buffer.as_mut_ptr(), len: buffer.len(), dtype, shape: shape.into() });
        Ok(())
    }

    /// Unbinds every input (`ort`'s `clear_inputs`).
    pub fn clear_inputs(&mut self) {
        self.inputs.iter_mut().for_each(|i| *i = None);
    }

    /// Unbinds every output (`ort`'s `clear_outputs`): the next run allocates them, and
    /// [`Binding::output`] reads them.
    pub fn clear_outputs(&mut self) {
        self.outputs.iter_mut().for_each(|o| *o = None);
    }

    /// After a run, an output that was not bound.
    pub fn output(&self, name: &str) -> Option<&Value> {
        let pos = self.session.inner.outputs.iter().position(|o| o.name == name)?;
        self.results[pos].as_ref()
    }

    /// After a run, true when the bound output was written straight into the buffer (no copy).
    pub fn written_in_place(&self, name: &str) -> bool {
        self.session.inner.outputs.iter().position(|o| o.name == name).is_some_and(|k| self.in_place[k])
    }
}

/// Options of one run, like ONNX Runtime's `RunOptions`: a terminate flag (shared by clones,
/// so one clone given to another thread stops the runs made with the others), a timeout and a
/// tag shown in the logs of the run.
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct RunOptions {
    terminate: Arc<AtomicBool>,
    timeout: Option<std::time::Duration>,
    tag: Option<Arc<str>>,
}

impl RunOptions {
    /// No timeout, no tag, not terminated.
    pub fn new() -> RunOptions {
        RunOptions::default()
    }

    /// Stops every run made with these options (or a clone of them) that is going on or
    /// starts later, until [`RunOptions::unterminate`]. Safe to call from any thread.
    pub fn terminate(&self) {
        self.terminate.store(true, Ordering::Relaxed);
    }

    /// Lets runs with these options go on again (ORT's `UnsetTerminate`).
    pub fn unterminate(&self) {
        self.terminate.store(false, Ordering::Relaxed);
    }

    /// True after [`RunOptions::terminate`].
    pub fn is_terminated(&self) -> bool {
        self.terminate.load(Ordering::Relaxed)
    }

    /// Each run stops with [`Error::Cancelled`] once it has taken this long.
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> RunOptions {
        self.timeout = Some(timeout);
        self
    }

    /// Names the run in the logs (ORT's `run_tag`).
    pub fn with_tag(mut self, tag: impl Into<String>) -> RunOptions {
        self.set_tag(tag);
        self
    }

    /// Names the run in the logs and its profile, in place (`ort`'s `set_tag`).
    pub fn set_tag(&mut self, tag: impl Into<String>) {
        self.tag = Some(Arc::from(tag.into()));
    }

    /// The tag, if any.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    fn context(&self) -> RunContext {
        let deadline = self.timeout.map(|t| std::time::Instant::now() + t);
        RunContext::new(Some(self.terminate.clone()), deadline, self.tag.clone())
    }
}

/// What a worker thread hands back to a [`RunFuture`]: the result once there, and the waker
/// of the task that last polled.
struct AsyncRun {
    state: std::sync::Mutex<AsyncState>,
    done: std::sync::Condvar,
}

/// The result once there, and the waker of the task that last polled.
type AsyncState = (Option<Result<Outputs>>, Option<std::task::Waker>);

impl AsyncRun {
    fn lock(&self) -> std::sync::MutexGuard<'_, AsyncState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn finish(&self, out: Result<Outputs>) {
        let waker = {
            let mut st = self.lock();
            st.0 = Some(out);
            st.1.take()
        };
        self.done.notify_all();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The pending result of [`Session::run_async`]: `.await` it, or [`RunFuture::wait`] from
/// synchronous code.
#[must_use = "the run goes on, but its outputs are lost unless awaited"]
pub struct RunFuture {
    shared: Arc<AsyncRun>,
}

impl RunFuture {
    /// Blocks the calling thread until the run ends.
    pub fn wait(self) -> Result<Outputs> {
        let mut st = self.shared.lock();
        loop {
            if let Some(out) = st.0.take() {
                return out;
            }
            st = self.shared.done.wait(st).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// True once the run has ended (the result is ready).
    pub fn is_finished(&self) -> bool {
        self.shared.lock().0.is_some()
    }
}

impl std::future::Future for RunFuture {
    type Output = Result<Outputs>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<Outputs>> {
        let mut st = self.shared.lock();
        match st.0.take() {
            Some(out) => std::task::Poll::Ready(out),
            None => {
                st.1 = Some(cx.waker().clone());
                std::task::Poll::Pending
            }
        }
    }
}

impl std::fmt::Debug for RunFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RunFuture(finished: {})", self.is_finished())
    }
}

/// A tensor borrowed from the caller for one run: its memory goes to the providers untouched.
#[derive(Debug, Clone)]
pub struct TensorRef<'a> {
    shape: SmallVec<[usize; 6]>,
    dtype: DType,
    bytes: &'a [u8],
}

impl<'a> TensorRef<'a> {
    /// Borrows a slice as a tensor of the given shape (row-major).
    pub fn from_slice<T: Elem>(shape: &[usize], data: &'a [T]) -> Result<TensorRef<'a>> {
        if shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) != Some(data.len()) {
            return Err(Error::Config(format!("shape {shape:?} does not hold {} elements", data.len())));
        }
        // SAFETY: any initialised `T: Elem` is readable as bytes; the borrow keeps it alive.
        let bytes = unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) };
        Ok(TensorRef { shape: shape.into(), dtype: T::DTYPE, bytes })
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Address of the borrowed data: the caller's own memory (for zero-copy checks).
    pub fn data_ptr(&self) -> *const u8 {
        self.bytes.as_ptr()
    }
}

/// One run input: an owned/shared value or a borrowed tensor.
pub enum Input<'a> {
    /// A value (cheap to clone: storage is shared).
    Value(Value),
    /// Caller memory.
    Borrowed(TensorRef<'a>),
    /// A conversion into an input that failed (an array too large for the memory limit, for
    /// example); a run given it returns this error.
    Invalid(Error),
}

impl From<Tensor> for Input<'_> {
    fn from(t: Tensor) -> Self {
        Input::Value(Value::Tensor(t))
    }
}
impl From<&Tensor> for Input<'_> {
    fn from(t: &Tensor) -> Self {
        Input::Value(Value::Tensor(t.clone()))
    }
}
impl From<Value> for Input<'_> {
    fn from(v: Value) -> Self {
        Input::Value(v)
    }
}
impl<'a> From<TensorRef<'a>> for Input<'a> {
    fn from(t: TensorRef<'a>) -> Self {
        Input::Borrowed(t)
    }
}

impl Session {
    /// Model inputs (names, dtypes, shapes with symbolic dims).
    pub fn inputs(&self) -> &[IoInfo] {
        &self.inner.inputs
    }

    /// Model outputs.
    pub fn outputs(&self) -> &[IoInfo] {
        &self.inner.outputs
    }

    /// The partition plan: which provider runs which nodes, boundary tensors, refusals.
    pub fn plan(&self) -> &PartitionPlan {
        &self.inner.report
    }

    /// The loaded model.
    pub fn model(&self) -> &Model {
        &self.inner.model
    }

    /// True when both share one compiled form (a clone, or sessions an [`Environment`]
    /// shared).
    pub fn shares_with(&self, other: &Session) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Saves the session as a compiled-context model (ONNX Runtime's EPContext format): every
    /// OpenVINO partition becomes a `com.microsoft::EPContext` node holding its compiled blob
    /// (or naming a blob file next to `path`, [`crate::EmbedMode::Files`]), the Cpu partitions
    /// stay ONNX nodes. A session built from the saved file imports the blobs, with the
    /// properties they were compiled with, instead of compiling: same outputs, bit for bit,
    /// and no ONNX weights needed for the OpenVINO parts.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), vinort::Error> {
    /// use vinort::{Cpu, EmbedMode, OpenVino, Runtime};
    /// let providers = || [OpenVino::cpu().into(), Cpu::default().into()];
    /// let first = Runtime::load("model.onnx")?.providers(providers()).build()?;
    /// first.save_context("model_ctx.onnx", EmbedMode::Embedded)?;
    /// // Later, maybe in another process: no compile.
    /// let fast = Runtime::load("model_ctx.onnx")?.providers(providers()).build()?;
    /// println!("{}", fast.plan());
    /// # Ok(()) }
    /// ```
    pub fn save_context(&self, path: impl AsRef<Path>, embed: crate::EmbedMode) -> Result<()> {
        let partitions = &self.inner.report.partitions;
        let steps: Vec<&PartitionStep> = self.inner.plan.steps().collect();
        if steps.len() != partitions.len() {
            return Err(Error::Config("the plan's steps do not match its partitions".into()));
        }
        let parts = partitions
            .iter()
            .zip(steps)
            .map(|(planned, step)| {
                let blob = step.compiled.export_context().transpose().map_err(|e| Error::Provider {
                    provider: planned.provider.clone(),
                    node: None,
                    op: None,
                    source: Box::new(e),
                })?;
                Ok(crate::context::Part { planned, blob })
            })
            .collect::<Result<Vec<_>>>()?;
        crate::context::write(&self.inner.model, &parts, path.as_ref(), embed)
    }

    /// What the model file says about itself: producer, domain, version, descriptions and
    /// `metadata_props` (ONNX Runtime's `ModelMetadata`).
    pub fn metadata(&self) -> &vinort_ir::Metadata {
        &self.inner.model.metadata
    }

    /// Runs the model. Every input must be given once, by name; an overridable initializer
    /// ([`IoInfo::default`]) may be left out, and then its initializer is used.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), vinort::Error> {
    /// let session = vinort::Runtime::load("model.onnx")?.providers([vinort::Cpu::default().into()]).build()?;
    /// let x = vinort::Tensor::from_vec(&[1, 3, 224, 224], vec![0f32; 3 * 224 * 224])?;
    /// let out = session.run([("input", x)])?;
    /// println!("{:?}", out[0]);
    /// # Ok(()) }
    /// ```
    pub fn run<'a>(&self, inputs: impl RunInputs<'a>) -> Result<Outputs> {
        self.run_ctx(inputs, &RunContext::default())
    }

    /// Runs the model under [`RunOptions`]: another thread may stop the run with
    /// [`RunOptions::terminate`], a timeout bounds it, and its tag names it in the logs. A
    /// stopped run returns [`Error::Cancelled`]; OpenVINO requests are cancelled and go back
    /// to their pool idle.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), vinort::Error> {
    /// use std::time::Duration;
    /// let session = vinort::Runtime::load("model.onnx")?.build()?;
    /// let x = vinort::Tensor::from_vec(&[1, 3, 224, 224], vec![0f32; 3 * 224 * 224])?;
    /// let options = vinort::RunOptions::new().with_timeout(Duration::from_millis(50)).with_tag("request-17");
    /// let stopper = options.clone(); // give this to another thread: `stopper.terminate()`
    /// match session.run_with_options([("input", x)], &options) {
    ///     Err(vinort::Error::Cancelled { reason, .. }) => println!("stopped: {reason}"),
    ///     other => println!("{:?}", other.map(|o| o.len())),
    /// }
    /// # drop(stopper);
    /// # Ok(()) }
    /// ```
    pub fn run_with_options<'a>(&self, inputs: impl RunInputs<'a>, options: &RunOptions) -> Result<Outputs> {
        let ctx = options.context();
        let span = options.tag.as_deref().map(|tag| tracing::info_span!("run", tag = %tag));
        let _entered = span.as_ref().map(tracing::Span::enter);
        let started = std::time::Instant::now();
        let out = self.run_ctx(inputs, &ctx);
        if let Err(Error::Cancelled { reason, .. }) = &out
            && self.inner.log_level.is_none_or(|l| l >= LogLevel::Info)
        {
            tracing::info!(%reason, after_ms = started.elapsed().as_secs_f64() * 1e3, "run stopped");
        }
        out.map_err(|e| match e {
            Error::Cancelled { reason, .. } => Error::Cancelled { reason, tag: options.tag.as_deref().map(Into::into) },
            e => e,
        })
    }

    /// Runs the model on a worker thread of its own and returns a [`Future`] of the outputs,
    /// so an async caller (tokio, async-std, any executor) never blocks its threads on a run.
    /// Inputs are owned values (cheap to clone: storage is shared). Dropping the future does
    /// not stop the run; [`RunOptions::terminate`] does.
    ///
    /// ```
    /// # fn main() -> Result<(), vinort::Error> {
    /// let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/mobilenetv2_tiny/model.onnx");
    /// let session = vinort::Runtime::load(model)?.build()?;
    /// let x = vinort::Tensor::from_vec(&[1, 3, 64, 64], vec![0.5f32; 3 * 64 * 64])?;
    /// let pending = session.run_async([("input", x)], vinort::RunOptions::new());
    /// // In async code: `let outputs = pending.await?;`
    /// let outputs = pending.wait()?;
    /// assert_eq!(outputs.len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn run_async<K: Into<String>, V: Into<Value>>(
        &self,
        inputs: impl IntoIterator<Item = (K, V)>,
        options: RunOptions,
    ) -> RunFuture {
        let inputs: Vec<(String, Value)> = inputs.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        let shared = Arc::new(AsyncRun { state: std::sync::Mutex::new((None, None)), done: std::sync::Condvar::new() });
        let (session, result) = (self.clone(), shared.clone());
        let spawned = std::thread::Builder::new().name("vinort-run".into()).spawn(move || {
            let out = session.run_with_options(inputs, &options);
            result.finish(out);
        });
        if let Err(e) = spawned {
            shared.finish(Err(Error::Config(format!("could not start a thread for the run: {e}"))));
        }
        RunFuture { shared }
    }

    fn run_ctx<'a>(&self, inputs: impl RunInputs<'a>, ctx: &RunContext) -> Result<Outputs> {
        // Inline storage: a steady-state run of a model with up to 8 inputs allocates nothing
        // here (`vinort perf` counts the heap allocations per inference).
        let n = self.inner.inputs.len();
        let mut given: SmallVec<[Option<Value>; 8]> = (0..n).map(|_| None).collect();
        inputs.for_each_input(&mut |key, v| {
            let infos = &self.inner.inputs;
            let pos = match key {
                InputKey::Name(name) => infos.iter().position(|i| i.name == name).ok_or_else(|| {
                    let known: Vec<&str> = infos.iter().map(|i| i.name.as_str()).collect();
                    Error::Input {
                        name: name.into(),
                        message: format!("the model has no such input (its inputs: {})", known.join(", ")),
                    }
                })?,
                InputKey::Position(i) if i < n => i,
                InputKey::Position(i) => {
                    return Err(Error::Input {
                        name: format!("#{i}"),
                        message: format!("input {} given by position, but the model has {n} input(s)", i + 1),
                    });
                }
            };
            let name = infos[pos].name.as_str();
            let value = match v {
                Input::Value(v) => v,
                // SAFETY: the borrowed storage lives for 'a, which outlasts this call; every
                // output is detached from borrowed storage below before returning, and no
                // kernel keeps inputs beyond a run.
                Input::Borrowed(t) => Value::Tensor(unsafe { Tensor::borrow_bytes(t.dtype, &t.shape, t.bytes) }?),
                Input::Invalid(e) => return Err(e),
            };
            if given[pos].replace(value).is_some() {
                return Err(Error::Input { name: name.into(), message: "given more than once".into() });
            }
            Ok(())
        })?;
        let values = self.execute(given, ctx, &[])?;
        let values = values.into_iter().map(Value::detach_borrowed).collect();
        Ok(Outputs::new(self.inner.output_names.clone(), values))
    }

    /// Runs on the given inputs (by model input position), writing outputs into `into` (by
    /// model output position) where a partition can.
    fn execute(
        &self,
        given: SmallVec<[Option<Value>; 8]>,
        ctx: &RunContext,
        into: &[Option<OutputBuffer>],
    ) -> Result<Vec<Value>> {
        let n = self.inner.inputs.len();
        let mut ordered: SmallVec<[Value; 8]> = SmallVec::with_capacity(n);
        for (k, (info, v)) in self.inner.inputs.iter().zip(given).enumerate() {
            let v = match (v, &info.default) {
                (Some(v), _) => v,
                // Shares the initializer's storage.
                (None, Some(default)) => Value::Tensor(default.clone()),
                (None, None) => {
                    return Err(Error::Input {
                        name: info.name.clone(),
                        message: "missing (every model input without an initializer must be given)".into(),
                    });
                }
            };
            crate::dims::check(&self.inner.fixed_dims, k, info, &v)?;
            check_input(info, &v)?;
            // Kernels need element-aligned storage; a caller's misaligned shared bytes are
            // copied once (the only copy of an input vinort ever makes).
            let v = match v {
                Value::Tensor(t) if !t.is_aligned() => Value::Tensor(t.to_aligned()),
                v => v,
            };
            ordered.push(v);
        }
        check_symbols(&self.inner.inputs, &ordered)?;
        let limited;
        let ctx = match self.inner.memory_limit {
            Some(l) => {
                limited = ctx.clone().with_memory_limit(Some(l));
                &limited
            }
            None => ctx,
        };
        let refs: SmallVec<[&Value; 8]> = ordered.iter().collect();
        let profiler = self.inner.profiler.as_ref().filter(|p| p.is_on());
        if into.iter().all(Option::is_none) && profiler.is_none() {
            return Ok(self.inner.plan.run(&refs, ctx)?);
        }
        let profiled = profiler.map(|p| ctx.clone().with_node_times(p.clone()));
        let ctx = profiled.as_ref().unwrap_or(ctx);
        let began = std::time::Instant::now();
        let graph_outputs = self.inner.model.graph.outputs();
        let out = self.inner.plan.run_with(&refs, ctx, |step, ins, ctx| {
            let dests: SmallVec<[Option<OutputBuffer>; 4]> = step
                .outputs
                .iter()
                .map(|v| graph_outputs.iter().position(|o| o == v).and_then(|k| into.get(k).cloned().flatten()))
                .collect();
            match profiler {
                Some(p) => p.partition(step.index, &self.inner.report.partitions[step.index], || {
                    step.run_into(ins, &dests, ctx)
                }),
                None => step.run_into(ins, &dests, ctx),
            }
        });
        if let Some(p) = profiler {
            p.model_run(began, ctx.tag());
        }
        Ok(out?)
    }

    /// An I/O binding for this session ([`Binding`]).
    pub fn binding<'a>(&self) -> Binding<'a> {
        let (ni, no) = (self.inner.inputs.len(), self.inner.outputs.len());
        Binding {
            session: self.clone(),
            inputs: (0..ni).map(|_| None).collect(),
            outputs: (0..no).map(|_| None).collect(),
            results: (0..no).map(|_| None).collect(),
            in_place: vec![false; no],
            _borrows: std::marker::PhantomData,
        }
    }

    /// Runs with an I/O binding: its bound inputs (every input without a default must be
    /// bound), each bound output written into its buffer. An OpenVINO partition writes a model
    /// output straight into the bound buffer when the output's shape is static and no
    /// forwarding op makes it ([`Binding::written_in_place`] says which were); the others are
    /// copied in. A run whose output does not have the bound buffer's type and shape fails
    /// naming the output. Outputs not bound are read with [`Binding::output`].
    pub fn run_with(&self, binding: &mut Binding<'_>, options: &RunOptions) -> Result<()> {
        if !binding.session.shares_with(self) {
            return Err(Error::Config("the binding was made by another session".into()));
        }
        // A failed run leaves no result of an earlier one behind.
        binding.results.iter_mut().for_each(|r| *r = None);
        binding.in_place.iter_mut().for_each(|p| *p = false);
        let given: SmallVec<[Option<Value>; 8]> = binding.inputs.iter().cloned().collect();
        let into: SmallVec<[Option<OutputBuffer>; 4]> = binding.outputs.iter().cloned().collect();
        let values = self.execute(given, &options.context(), &into)?;
        for (k, v) in values.into_iter().enumerate() {
            let Some(b) = &binding.outputs[k] else {
                binding.results[k] = Some(v.detach_borrowed());
                continue;
            };
            let name = &self.inner.outputs[k].name;
            let t = v.as_tensor().map_err(|_| Error::Config(format!("output '{name}' is not a tensor")))?;
            if t.dtype() != b.dtype || t.shape() != b.shape.as_slice() {
                return Err(Error::Config(format!(
                    "output '{name}': the run made a {} tensor of shape {:?}, the bound buffer holds {} of shape {:?}",
                    t.dtype(),
                    t.shape(),
                    b.dtype,
                    b.shape.as_slice()
                )));
            }
            if t.data_ptr() == b.ptr.cast_const() {
                binding.in_place[k] = true;
                continue;
            }
            let bytes = t.as_bytes();
            // SAFETY: the bound buffer is `b.len` writable bytes borrowed for the binding's
            // lifetime, and it holds exactly this dtype and shape (checked above).
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), b.ptr, bytes.len().min(b.len)) };
            vinort_ir::stats::record_copy(bytes.len());
        }
        Ok(())
    }
}

fn check_input(info: &IoInfo, v: &Value) -> Result<()> {
    let err = |message: String| Error::Input { name: info.name.clone(), message };
    match (&info.ty, v) {
        (ValueType::Tensor(dtype, shape), Value::Tensor(t)) => {
            if t.dtype() != *dtype {
                return Err(err(format!("expected element type {dtype}, got {}", t.dtype())));
            }
            if let Some(shape) = shape {
                if shape.len() != t.rank() {
                    return Err(err(format!("expected rank {} ({}), got shape {:?}", shape.len(), info.ty, t.shape())));
                }
                for (i, (d, g)) in shape.iter().zip(t.shape()).enumerate() {
                    if let Dim::Fixed(n) = d
                        && n != g
                    {
                        return Err(err(format!("dimension {i} must be {n} ({}), got shape {:?}", info.ty, t.shape())));
                    }
                }
            }
            Ok(())
        }
        (ValueType::Tensor(..), other) => Err(err(format!("expected a tensor, got {}", other.kind()))),
        (ValueType::Sequence(_), Value::Sequence(_)) | (ValueType::Optional(_), Value::Optional(..)) => Ok(()),
        (ValueType::Sequence(_), other) => Err(err(format!("expected a sequence, got {}", other.kind()))),
        (ValueType::Optional(_), other) => Err(err(format!("expected an optional, got {}", other.kind()))),
        _ => Ok(()),
    }
}

/// A symbolic dim (`dim_param`) shared by several input dims is a hint, as in ONNX Runtime:
/// exporters reuse names like `?` or `batch` for dims that differ, and such models run. A
/// mismatch within a run is logged at debug level, never an error; kernels check the shapes
/// they really need.
fn check_symbols(infos: &[IoInfo], values: &[Value]) -> Result<()> {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return Ok(());
    }
    // A linear scan: models have a handful of symbolic dims, and inline storage keeps the
    // check allocation-free.
    let mut seen: SmallVec<[(&str, usize, &str); 8]> = SmallVec::new();
    for (info, v) in infos.iter().zip(values) {
        let (Some(shape), Value::Tensor(t)) = (info.ty.tensor_shape(), v) else { continue };
        for (d, got) in shape.iter().zip(t.shape()) {
            if let Dim::Symbol(s) = d {
                match seen.iter().find(|(name, ..)| *name == s.as_str()) {
                    Some((_, n, other)) if n != got => {
                        tracing::debug!(
                            dim = %s,
                            input = %info.name,
                            size = got,
                            other_input = %other,
                            other_size = *n,
                            "dims sharing a dim_param differ (a hint only)"
                        );
                    }
                    Some(_) => {}
                    None => seen.push((s.as_str(), *got, info.name.as_str())),
                }
            }
        }
    }
    Ok(())
}
