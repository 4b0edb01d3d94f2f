//! The execution-provider interface: capability (GetCapability) and compilation.
//!
//! A provider is asked, in the user's order, which of the still unclaimed nodes it can run; it
//! answers with groups of nodes it wants to run together and a reason for every node it
//! refuses. The session then cuts the graph into partitions and asks each owning provider to
//! compile its partitions into [`CompiledPartition`]s, which the executor runs.

use petgraph::graph::NodeIndex;

use crate::error::Result;
use crate::graph::ValueId;
use crate::load::Model;
use crate::value::Value;

/// What a provider claims among the nodes offered to it.
#[derive(Debug, Default, Clone)]
pub struct Capability {
    /// Nodes the provider can run. The partitioner groups them into convex partitions.
    pub claimed: Vec<NodeIndex>,
    /// Every offered node not claimed, with the reason (the rule or probe that refused it).
    pub refused: Vec<(NodeIndex, String)>,
}

/// A partition handed to a provider to compile.
#[derive(Debug, Clone)]
pub struct PartitionDef {
    /// Its nodes, in topological order.
    pub nodes: Vec<NodeIndex>,
    /// Values it reads at run time that something outside it produces (graph inputs or other
    /// partitions' outputs), in the order `run` receives them. Initializers are not inputs:
    /// the provider takes them from the model.
    pub inputs: Vec<ValueId>,
    /// Values it produces that are read outside it (or are graph outputs), in the order `run`
    /// must return them.
    pub outputs: Vec<ValueId>,
    /// True when the partition is the whole main graph with the graph's own inputs and outputs,
    /// so a provider may compile the original model file instead.
    pub whole_graph: bool,
}

/// Told how long each kernel of a provider's plan took, for a profile's per-node events
/// (ONNX Runtime's `<node>_kernel_time`). Providers whose partition runs as one compiled
/// model (OpenVINO) have no kernels to report.
pub trait NodeTimes: Send + Sync {
    /// Node `node` (op `op`, `domain::Op` outside the default domain) ran on `provider`'s
    /// kernel from `began` to `ended`, on the calling thread.
    fn node(&self, node: &str, op: &str, provider: &str, began: std::time::Instant, ended: std::time::Instant);
}

/// Per-run options handed to every partition: a stop flag another thread may raise, a
/// deadline, a tag for the logs and, when profiling, where kernels report their times. Executors call [`RunContext::check`] between steps (and
/// control-flow kernels between iterations); providers with their own runtime (OpenVINO) watch
/// [`RunContext::stop_requested`] while their request runs and cancel it.
#[derive(Default, Clone)]
pub struct RunContext {
    terminate: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    deadline: Option<std::time::Instant>,
    tag: Option<std::sync::Arc<str>>,
    memory_limit: Option<usize>,
    node_times: Option<std::sync::Arc<dyn NodeTimes>>,
}

impl std::fmt::Debug for RunContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunContext")
            .field("terminate", &self.terminate)
            .field("deadline", &self.deadline)
            .field("tag", &self.tag)
            .field("memory_limit", &self.memory_limit)
            .field("node_times", &self.node_times.is_some())
            .finish()
    }
}

/// Why a run stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The caller raised the terminate flag.
    Terminated,
    /// The run's deadline passed.
    DeadlineExceeded,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopReason::Terminated => "the run was terminated by the caller",
            StopReason::DeadlineExceeded => "the run's deadline passed",
        })
    }
}

impl RunContext {
    /// A context watching `terminate` (a run stops once it is `true`), with an optional
    /// deadline and log tag.
    pub fn new(
        terminate: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
        deadline: Option<std::time::Instant>,
        tag: Option<std::sync::Arc<str>>,
    ) -> RunContext {
        RunContext { terminate, deadline, tag, memory_limit: None, node_times: None }
    }

    /// The same context with kernels reporting their times to `times` (per-node profiling).
    pub fn with_node_times(mut self, times: std::sync::Arc<dyn NodeTimes>) -> RunContext {
        self.node_times = Some(times);
        self
    }

    /// Where kernels report their times, when the run is profiled.
    pub fn node_times(&self) -> Option<&dyn NodeTimes> {
        self.node_times.as_deref()
    }

    /// The same context with the session's limit on a single buffer (see
    /// [`crate::limits::with_session_limit`]), which executors apply while kernels run.
    pub fn with_memory_limit(mut self, limit: Option<usize>) -> RunContext {
        self.memory_limit = limit;
        self
    }

    /// The session's limit on a single buffer, if it set one.
    pub fn memory_limit(&self) -> Option<usize> {
        self.memory_limit
    }

    /// Why the run must stop now, if it must.
    pub fn stop_requested(&self) -> Option<StopReason> {
        if self.terminate.as_ref().is_some_and(|t| t.load(std::sync::atomic::Ordering::Relaxed)) {
            return Some(StopReason::Terminated);
        }
        if self.deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Some(StopReason::DeadlineExceeded);
        }
        None
    }

    /// [`Error::Stopped`] when the run must stop.
    #[inline]
    pub fn check(&self) -> Result<()> {
        if self.terminate.is_none() && self.deadline.is_none() {
            return Ok(());
        }
        match self.stop_requested() {
            Some(r) => Err(crate::Error::Stopped(r)),
            None => Ok(()),
        }
    }

    /// True when nothing can stop the run (no flag, no deadline).
    pub fn is_unbounded(&self) -> bool {
        self.terminate.is_none() && self.deadline.is_none()
    }

    /// The deadline, if any.
    pub fn deadline(&self) -> Option<std::time::Instant> {
        self.deadline
    }

    /// The run's tag, if any.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }
}

/// A partition compiled by its provider, ready to run many times, from many threads at once.
pub trait CompiledPartition: Send + Sync {
    /// Runs once. `inputs` follow [`PartitionDef::inputs`]; the result follows
    /// [`PartitionDef::outputs`]. Inputs are shared, never copied by the caller.
    fn run(&self, inputs: &[&Value], ctx: &RunContext) -> Result<Vec<Value>>;

    /// Runs once like [`CompiledPartition::run`], writing each output that has a buffer in
    /// `into` (I/O binding: a caller's memory for a model output) straight into it where the
    /// provider can; the value returned for such an output then lies in that buffer. Where it
    /// cannot (the default), it returns the output as `run` does and the caller copies it.
    fn run_into(&self, inputs: &[&Value], into: &[Option<OutputBuffer>], ctx: &RunContext) -> Result<Vec<Value>> {
        let _ = into;
        self.run(inputs, ctx)
    }

    /// Human-readable facts about the compiled form (device, effective properties...).
    fn describe(&self) -> String {
        String::new()
    }

    /// The compiled form as a blob a later session loads without compiling (an EPContext
    /// node's content); `None` when the provider has no such form, and the partition's nodes
    /// are saved as ONNX nodes instead.
    fn export_context(&self) -> Option<Result<ContextBlob>> {
        None
    }
}

/// A caller's buffer for one output of a run (I/O binding): writable, `len` bytes, holding a
/// tensor of `dtype` and `shape`, valid for the whole run.
#[derive(Debug, Clone)]
pub struct OutputBuffer {
    /// Start of the buffer.
    pub ptr: *mut u8,
    /// Its length in bytes.
    pub len: usize,
    /// Element type it holds.
    pub dtype: crate::DType,
    /// Shape it holds.
    pub shape: crate::Shape,
}

/// A compiled partition saved as an EPContext node ([`CompiledPartition::export_context`]).
#[derive(Debug, Clone)]
pub struct ContextBlob {
    /// The provider's name in ONNX Runtime's terms (the node's `source`).
    pub source: String,
    /// The version of the provider's runtime that made the blob (`ep_sdk_version`).
    pub sdk_version: String,
    /// What the loader needs beyond the blob (the node's `notes`).
    pub notes: String,
    /// The compiled model.
    pub blob: Vec<u8>,
}

/// An execution provider.
pub trait ExecutionProvider: Send + Sync + std::fmt::Debug {
    /// Short name shown in plans (`Cpu`, `OpenVino(CPU)`).
    fn name(&self) -> String;

    /// Starts the provider (loads libraries, opens devices). A provider that cannot start is
    /// skipped or fails the session, as the user's registration policy says.
    fn start(&self) -> Result<()> {
        Ok(())
    }

    /// Warnings about the provider's configuration (ignored options...), shown in the plan.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// Which of `offered` (nodes of the main graph) this provider can run.
    fn capability(&self, model: &Model, offered: &[NodeIndex]) -> Result<Capability>;

    /// Compiles a partition of the main graph made only of nodes this provider claimed.
    fn compile(&self, model: &Model, part: &PartitionDef) -> Result<Box<dyn CompiledPartition>>;

    /// What decides the partitions this provider compiles beyond the model: sessions of one
    /// model built in one vinort `Environment` share their
    /// compiled partitions when every provider's fingerprint is equal. The default is this
    /// instance's address (shared only with itself); providers whose compiled form depends
    /// only on their options return those.
    fn fingerprint(&self) -> String {
        format!("{:p}", self as *const Self)
    }

    /// Whole model first: asked of the first provider in the list before any per-node
    /// question. A provider that can compile a whole model at once (as its native runtime
    /// would) and finds no node it must refuse whatever the context (a wrong answer, a slow
    /// path) compiles `part` (every node of the main graph) and returns it; per-node rules and
    /// probes then never run. Otherwise it says why the model must be split. The default:
    /// the provider has no whole-model path.
    fn compile_whole(&self, model: &Model, part: &PartitionDef) -> Result<WholeModel> {
        let _ = (model, part);
        Ok(WholeModel::NotTried)
    }

    /// What a partition costs on this provider beyond its kernels, and how fast it computes
    /// heavy ops against vinort's Cpu kernels: the partitioner's cost model weighs the two
    /// for every region this provider claims. `None` (the default) declares nothing, and its
    /// regions are judged by the plain rule (only regions without a heavy op move); as the
    /// provider after another, it counts as [`CostProfile::default`].
    fn cost_profile(&self) -> Option<CostProfile> {
        None
    }
}

/// A provider's costs as the partitioner's cost model sees them (estimates, measured on the
/// machines the project is tested on; see `docs/architecture.md`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostProfile {
    /// Microseconds one partition's run costs beyond its kernels (hand-off, request set-up,
    /// boundary tensors).
    pub per_partition_us: f64,
    /// Heavy ops' speed relative to vinort's Cpu kernels (1.0 = as fast).
    pub heavy_speed: f64,
}

impl Default for CostProfile {
    /// An in-process provider like the Cpu one: a microsecond per partition, Cpu speed.
    fn default() -> CostProfile {
        CostProfile { per_partition_us: 1.0, heavy_speed: 1.0 }
    }
}

/// A provider's answer to [`ExecutionProvider::compile_whole`].
pub enum WholeModel {
    /// The whole model compiled as one partition; the string says how.
    Compiled(Box<dyn CompiledPartition>, String),
    /// The model must be split, for this reason (a named refusal or the whole compile's error).
    Split(String),
    /// The model must be split, and the whole compile showed that these nodes fail in it, each
    /// for its reason: they must not reach this provider in any piece of the model either.
    SplitRefusing(String, Vec<(NodeIndex, String)>),
    /// The provider has no whole-model path; partition node by node.
    NotTried,
}

impl std::fmt::Debug for WholeModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WholeModel::Compiled(_, how) => write!(f, "Compiled({how:?})"),
            WholeModel::Split(why) => write!(f, "Split({why:?})"),
            WholeModel::SplitRefusing(why, nodes) => write!(f, "SplitRefusing({why:?}, {} node(s))", nodes.len()),
            WholeModel::NotTried => f.write_str("NotTried"),
        }
    }
}
