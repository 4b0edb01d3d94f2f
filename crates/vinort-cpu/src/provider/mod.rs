//! The Cpu execution provider: claims every node it has a kernel for, and runs a partition as
//! a [`Plan`] of kernels.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use vinort_ir::{Values, limits};

use vinort_ir::exec::{Plan, PlanBuilder, Step};
use vinort_ir::{
    Capability, CompiledPartition, Error, ExecutionProvider, Graph, Model, NodeIndex, PartitionDef, Result, RunContext,
    Tensor, Value, ValueId,
};

use crate::kernel::{Kernel, Registry};
use crate::optimize::{Item, OptLevel, Work, build_item};

/// A pool the partitions' kernels run on, and whether one of its workers is running a whole
/// plan (see [`CpuPartition::run`]).
struct Pool {
    threads: rayon::ThreadPool,
    hosting: AtomicBool,
}

/// Whether a worker of rayon's global pool is running a whole plan.
static GLOBAL_HOSTING: AtomicBool = AtomicBool::new(false);

/// The claim on a pool's one hosted plan; released when dropped, also by a panic unwinding.
struct Host<'a>(&'a AtomicBool);

impl<'a> Host<'a> {
    fn claim(flag: &'a AtomicBool) -> Option<Host<'a>> {
        flag.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).ok().map(|_| Host(flag))
    }
}

impl Drop for Host<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

thread_local! {
    /// The own pool of the partition this thread runs kernel by kernel, if any: each kernel
    /// is handed to it, so the kernel's parallel loops run on its workers.
    static KERNEL_POOL: RefCell<Option<Arc<Pool>>> = const { RefCell::new(None) };
}

/// Sets [`KERNEL_POOL`] for the life of the guard, restoring what was there.
struct KernelPool(Option<Arc<Pool>>);

impl KernelPool {
    fn set(pool: &Arc<Pool>) -> KernelPool {
        KernelPool(KERNEL_POOL.with_borrow_mut(|p| p.replace(pool.clone())))
    }
}

impl Drop for KernelPool {
    fn drop(&mut self) {
        let previous = self.0.take();
        KERNEL_POOL.with_borrow_mut(|p| *p = previous);
    }
}

/// The process's thread pool of `n` threads, made on first use and shared by every session
/// asking for `n`, so sessions do not each bring their own threads.
fn pool_of(n: usize) -> Result<Arc<Pool>> {
    static POOLS: std::sync::Mutex<Vec<(usize, Arc<Pool>)>> = std::sync::Mutex::new(Vec::new());
    let mut pools = POOLS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, p)) = pools.iter().find(|(k, _)| *k == n) {
        return Ok(p.clone());
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(n.max(1))
        .thread_name(|i| format!("vinort-cpu-{i}"))
        .build()
        .map_err(|e| Error::invalid(format!("cannot start {n} Cpu threads: {e}")))?;
    let p = Arc::new(Pool { threads: p, hosting: AtomicBool::new(false) });
    pools.push((n, p.clone()));
    Ok(p)
}

/// The Cpu provider. Cheap to construct; the kernel registry is built once per process.
#[derive(Debug, Clone, Default)]
pub struct CpuProvider {
    /// How much the graph optimizer rewrites each partition.
    pub optimization: OptLevel,
    /// Threads of the pool the partitions' kernels run on (None: rayon's global pool).
    pub threads: Option<usize>,
    /// The pool's other workers sleep between kernels instead of polling for work through a
    /// hosted run ([`crate::par::with_warm_workers`]): for a process whose cores are busy with
    /// other work, as ONNX Runtime's `session.intra_op.allow_spinning=0`. Each parallel loop
    /// then pays its workers' wake-ups.
    pub sleep_between_kernels: bool,
}

pub(crate) fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(crate::kernels::registry)
}

/// A kernel bound to its node, so run-time errors name the node.
pub struct KernelStep {
    kernel: Box<dyn Kernel>,
    node: String,
    op: String,
}

impl KernelStep {
    /// The op it runs, `domain::Op` outside the default domain.
    pub fn op(&self) -> &str {
        &self.op
    }
}

impl Step for KernelStep {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values> {
        // Errors that already name their node (a kernel's own, or one from inside a
        // control-flow body) pass through; anything else gets this node attached, whole.
        let pool = KERNEL_POOL.with_borrow(Clone::clone);
        // A tensor over the memory limits unwinds out of the kernel (see `limits`): caught
        // here, on the thread that ran it, as an error naming this node.
        let run = || limits::guard(|| limits::with_session_limit(ctx.memory_limit(), || self.kernel.run(inputs, ctx)));
        let began = ctx.node_times().map(|_| std::time::Instant::now());
        let result = match pool {
            Some(p) if p.threads.current_thread_index().is_none() => p.threads.install(run),
            _ => run(),
        };
        if let (Some(times), Some(began)) = (ctx.node_times(), began) {
            times.node(&self.node, &self.op, "Cpu", began, std::time::Instant::now());
        }
        result.map_err(|e| match e {
            Error::Node { .. } | Error::Provider { .. } | Error::Stopped(_) => e,
            other => Error::Provider {
                provider: "Cpu".into(),
                node: Some(self.node.clone()),
                op: Some(self.op.clone()),
                source: Box::new(other),
            },
        })
    }
}

/// Builds the kernel for node `ix` of `graph`, as written.
pub fn build_kernel(graph: &Graph, ix: NodeIndex) -> Result<Box<dyn Kernel>> {
    let node = graph.node(ix);
    let work = Work::new(graph, &[], &[], &[]);
    build_item(&work, &Item { node: node.clone(), epi: Default::default(), extra: vec![] })
}

/// Compiles a set of nodes of a graph into a plan reading `inputs` and producing `outputs`,
/// after the graph optimizer rewrote them as `level` allows. Initializers the nodes read become
/// plan constants (aligned once, here, if the mapped file left them misaligned), as do the
/// values the optimizer folded. Also used for If/Loop/Scan bodies, whose inputs include the
/// outer values they read.
pub fn compile_nodes(
    graph: &Graph,
    nodes: &[NodeIndex],
    inputs: &[ValueId],
    outputs: &[ValueId],
    level: OptLevel,
) -> Result<Plan<KernelStep>> {
    let mut work = Work::new(graph, nodes, inputs, outputs);
    work.optimize(level);
    compile_work(&work, inputs, outputs)
}

/// Compiles what the optimizer left of a partition or body into a plan.
fn compile_work(work: &Work<'_>, inputs: &[ValueId], outputs: &[ValueId]) -> Result<Plan<KernelStep>> {
    let graph = work.graph;
    let mut b = PlanBuilder::<ValueId, KernelStep>::new();
    for v in inputs {
        b.input(*v);
    }
    let built = work
        .live()
        .map(|it| {
            let kernel = build_item(work, it)?;
            release_read_weights(graph, &it.node);
            Ok((it, kernel))
        })
        .collect::<Result<Vec<_>>>()?;
    // A constant is copied into aligned memory unless every kernel reading it keeps its own
    // form of it ([`Kernel::holds_input`]): then the mapped one is enough.
    let mut aligned: HashSet<ValueId> = outputs.iter().copied().collect();
    for (it, kernel) in &built {
        for (i, v) in it.reads().iter().enumerate() {
            if let Some(v) = v
                && !kernel.holds_input(i)
            {
                aligned.insert(*v);
            }
        }
    }
    let constant = |b: &mut PlanBuilder<ValueId, KernelStep>, v: ValueId| {
        if b.knows(v) {
            return;
        }
        let known = work
            .consts
            .get(&v)
            .or_else(|| (v.index() < graph.values().count()).then(|| graph.initializer(v)).flatten());
        if let Some(t) = known {
            b.constant(v, Value::Tensor(if aligned.contains(&v) { t.to_aligned() } else { t.clone() }));
        }
    };
    for (it, kernel) in built {
        let reads = it.reads();
        for v in reads.iter().flatten() {
            constant(&mut b, *v);
        }
        let node = &it.node;
        let step = KernelStep { kernel, node: node.name.clone(), op: node.qualified_op() };
        b.step(step, &reads, &node.outputs).map_err(|e| node.error(e.to_string()))?;
    }
    for v in outputs {
        constant(&mut b, *v);
        b.output(*v)?;
    }
    Ok(b.build())
}

/// Gives back the mapped pages of the weights a kernel was just built from
/// ([`vinort_ir::tensor_proto::release_pages_of`]): what the kernel packed is its own now, and
/// what it reads at run faults back in, so a build holds one copy of each weight at a time.
fn release_read_weights(graph: &Graph, node: &vinort_ir::Node) {
    for v in node.inputs.iter().flatten() {
        if v.index() < graph.values().count()
            && let Some(t) = graph.initializer(*v)
        {
            vinort_ir::tensor_proto::release_pages_of(t.as_bytes());
        }
    }
}

/// A compiled Cpu partition.
pub struct CpuPartition {
    plan: Plan<KernelStep>,
    pool: Option<Arc<Pool>>,
    /// Where short runs go, by what they measured.
    placement: Placement,
    /// [`CpuProvider::sleep_between_kernels`].
    sleep_between_kernels: bool,
}

/// A plan whose runs take less than this may run on the caller's thread alone: handing a run to
/// a pool worker costs two thread wake-ups (10–20 µs on the 2-core VMs of docs/performance.md;
/// `perf` shows them as futex waits in rayon's `LockLatch`), and each parallel loop inside it
/// more. Whether it does is measured, not guessed. The bound is high because a plan of small
/// kernels gains little from a second thread and pays every hand-off: silero-vad (a 90 µs plan
/// on one thread) took 200 µs hosted on two; a plan that does gain keeps its hosted runs, and
/// the inline run measured every [`REMEASURE_EVERY`] costs it at most its own length once.
const INLINE_BELOW_NS: u64 = 1_000_000;

/// How often a short plan measures the placement it is not using, to follow a change.
const REMEASURE_EVERY: u64 = 64;

/// Run times kept per placement: the estimate is their median, so one run slowed by another
/// process (this VM's neighbours took single runs from 0.12 to 0.2 ms), or one lucky run of
/// the placement that varies more, does not decide where the next [`REMEASURE_EVERY`] runs
/// go; a lasting change shows after half of them. (A one-node GRU of 64 × 100 steps on 2
/// threads stuck on hosting, 0.14–0.16 ms, in half the sittings; inline it runs 0.11 ms, as on
/// one thread.)
const KEPT: usize = 5;

/// The last [`KEPT`] run times of a partition hosted on its pool and run on the caller's
/// thread (nanoseconds, 0: not measured), and a run counter.
#[derive(Default)]
struct Placement {
    hosted: Times,
    inline: Times,
    runs: AtomicU64,
}

/// A placement's last [`KEPT`] run times.
#[derive(Default)]
struct Times {
    ns: [AtomicU64; KEPT],
    next: AtomicU64,
}

impl Times {
    /// The median kept run (the lower of the middle two of an even count), 0 before any.
    fn estimate(&self) -> u64 {
        let mut t: smallvec::SmallVec<[u64; KEPT]> =
            self.ns.iter().map(|t| t.load(Ordering::Relaxed)).filter(|t| *t > 0).collect();
        t.sort_unstable();
        t.get(t.len().saturating_sub(1) / 2).copied().unwrap_or(0)
    }

    fn push(&self, ns: u64) {
        let at = self.next.fetch_add(1, Ordering::Relaxed) as usize % KEPT;
        self.ns[at].store(ns, Ordering::Relaxed);
    }
}

impl Placement {
    /// True to run this time on the caller's thread: never before hosted runs measured under
    /// [`INLINE_BELOW_NS`]; then once to measure; then whichever measured faster (the median
    /// of its last [`KEPT`] runs), measuring the other every [`REMEASURE_EVERY`] runs.
    fn inline(&self) -> bool {
        let (hosted, inline) = (self.hosted.estimate(), self.inline.estimate());
        if hosted == 0 || hosted >= INLINE_BELOW_NS {
            return false;
        }
        if inline == 0 {
            return true;
        }
        let explore = self.runs.fetch_add(1, Ordering::Relaxed) % REMEASURE_EVERY == REMEASURE_EVERY - 1;
        (inline < hosted) != explore
    }

    fn record(&self, inline: bool, took: std::time::Duration) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1);
        if inline { &self.inline } else { &self.hosted }.push(ns);
    }
}

impl CompiledPartition for CpuPartition {
    /// Runs the plan on a worker of its pool when no other plan is there: a kernel's parallel
    /// loop then starts on that worker while the others steal, and the caller sleeps once per
    /// run instead of once per kernel (ResNet-50: 45 ms against 58 ms on two cores, the
    /// difference being context switches). One plan per pool at most: a worker waiting inside a
    /// parallel loop may pick up an injected job, and were whole plans of many callers
    /// injected, one could nest inside another without bound. Callers arriving while a plan is
    /// hosted run their plans themselves, kernel by kernel handed to the pool as before (a
    /// worker of another pool hands its whole plan to the partition's own pool instead). A
    /// plan whose runs are shorter than [`INLINE_BELOW_NS`] runs on the caller's thread alone
    /// (its kernels' loops not handed to any pool) when that measured faster ([`Placement`]).
    fn run(&self, inputs: &[&Value], ctx: &RunContext) -> Result<Vec<Value>> {
        let run = || self.plan.run(inputs, ctx);
        let on_worker = match &self.pool {
            Some(p) => p.threads.current_thread_index().is_some(),
            None => rayon::current_thread_index().is_some(),
        };
        if on_worker {
            // Already inside the pool (a control-flow body, or a kernel of a caller's plan).
            return run();
        }
        if self.pool.as_ref().is_some_and(|p| p.threads.current_num_threads() == 1) {
            // One thread asked for: it is the caller's, as ONNX Runtime runs such a session.
            // Handing the run to the pool's one worker costs two wake-ups, and more when other
            // threads spin on the same cores (OpenVINO's TBB workers, a BLAS): measured from
            // Python beside an OpenVINO session, 100 µs for a 27 µs plan.
            let _serial = crate::par::Serial::enter();
            return run();
        }
        let inline = self.placement.inline();
        let started = std::time::Instant::now();
        let out = if inline {
            // On the caller's thread alone: a short plan's parallel loops would each hand work
            // to sleeping workers and wait for them (a 20 µs one-step GRU took 40–130 µs so).
            let _serial = crate::par::Serial::enter();
            run()
        } else {
            self.run_hosted(run)
        };
        self.placement.record(inline, started.elapsed());
        out
    }

    fn describe(&self) -> String {
        format!("{} kernels", self.plan.steps().count())
    }
}

impl CpuPartition {
    /// Runs `run` with the plan hosted on a worker of the partition's pool (see
    /// [`CompiledPartition::run`] above), or kernel by kernel when another plan is hosted.
    fn run_hosted(&self, run: impl FnOnce() -> Result<Vec<Value>> + Send) -> Result<Vec<Value>> {
        let hosting = self.pool.as_ref().map_or(&GLOBAL_HOSTING, |p| &p.hosting);
        match (Host::claim(hosting), &self.pool) {
            (Some(_host), Some(p)) if self.sleep_between_kernels => p.threads.install(run),
            (Some(_host), None) if self.sleep_between_kernels => rayon::scope(|_| run()),
            (Some(_host), Some(p)) => p.threads.install(|| crate::par::with_warm_workers(run)),
            (Some(_host), None) => rayon::scope(|_| crate::par::with_warm_workers(run)),
            // A worker of another pool would steal its pool's jobs while each kernel waits in
            // `p`, and they would see this thread's kernel pool: it hands the plan over whole.
            (None, Some(p)) if rayon::current_thread_index().is_some() => p.threads.install(run),
            (None, Some(p)) => {
                let _kernels = KernelPool::set(p);
                run()
            }
            (None, None) => run(),
        }
    }
}

impl CpuProvider {
    /// The names of every op with a Cpu kernel, as `domain::op` ("" domain printed bare).
    pub fn supported_ops() -> Vec<String> {
        let mut v: Vec<String> =
            registry().ops().map(|(d, o)| if d.is_empty() { o.to_owned() } else { format!("{d}::{o}") }).collect();
        v.sort();
        v
    }
}

impl ExecutionProvider for CpuProvider {
    fn name(&self) -> String {
        "Cpu".into()
    }

    fn fingerprint(&self) -> String {
        format!(
            "Cpu optimization={:?} threads={:?} sleep_between_kernels={}",
            self.optimization, self.threads, self.sleep_between_kernels
        )
    }

    fn capability(&self, model: &Model, offered: &[NodeIndex]) -> Result<Capability> {
        let mut cap = Capability::default();
        for &ix in offered {
            let built = build_kernel(&model.graph, ix);
            release_read_weights(&model.graph, model.graph.node(ix));
            match built {
                Ok(_) => cap.claimed.push(ix),
                Err(Error::Unsupported(why)) => cap.refused.push((ix, why)),
                Err(e) => cap.refused.push((ix, e.to_string())),
            }
        }
        Ok(cap)
    }

    fn compile(&self, model: &Model, part: &PartitionDef) -> Result<Box<dyn CompiledPartition>> {
        let plan = compile_nodes(&model.graph, &part.nodes, &part.inputs, &part.outputs, self.optimization)?;
        let pool = self.threads.map(pool_of).transpose()?;
        Ok(Box::new(CpuPartition {
            plan,
            pool,
            placement: Placement::default(),
            sleep_between_kernels: self.sleep_between_kernels,
        }))
    }
}

/// A subgraph compiled for a control-flow kernel: its formal inputs, then the outer values it
/// reads, in [`Graph::outer_refs`] order.
pub struct SubgraphPlan {
    plan: Plan<KernelStep>,
    /// Number of formal inputs.
    pub num_inputs: usize,
    /// Number of outputs.
    pub num_outputs: usize,
    /// Names of the outer-scope values it reads, in the order `run` wants them after the
    /// formal inputs.
    pub outer_names: Vec<String>,
}

impl SubgraphPlan {
    /// Compiles a whole subgraph on the Cpu provider, rewritten as `level` allows. Outer values
    /// for which `known` gives a value are constants of the body (folded with the rest, and no
    /// longer among [`SubgraphPlan::outer_names`]); the others are read at run time.
    pub fn compile(g: &Arc<Graph>, level: OptLevel, known: impl Fn(&str) -> Option<Tensor>) -> Result<SubgraphPlan> {
        let mut inputs: Vec<ValueId> = g.inputs().to_vec();
        let mut consts = vec![];
        let mut outer_names = vec![];
        for &v in g.outer_refs() {
            let name = &g.value(v).name;
            match known(name) {
                Some(t) => consts.push((v, t)),
                None => {
                    inputs.push(v);
                    outer_names.push(name.clone());
                }
            }
        }
        let mut work = Work::new(g, g.topo_order(), &inputs, g.outputs());
        work.consts.extend(consts);
        work.optimize(level);
        let plan = compile_work(&work, &inputs, g.outputs())?;
        Ok(SubgraphPlan { plan, num_inputs: g.inputs().len(), num_outputs: g.outputs().len(), outer_names })
    }

    /// Runs with formal inputs followed by outer values.
    pub fn run(&self, inputs: &[&Value], ctx: &RunContext) -> Result<Vec<Value>> {
        self.plan.run(inputs, ctx)
    }
}

#[cfg(test)]
mod tests;
