//! The Cpu execution provider: claims every node it has a kernel for, and runs a partition as
//! a [`Plan`] of kernels.

use std::sync::{Arc, OnceLock};

use vinort_ir::exec::{Plan, PlanBuilder, Step};
use vinort_ir::{
    Capability, CompiledPartition, Error, ExecutionProvider, Graph, Model, NodeIndex, PartitionDef, Result, RunContext,
    Value, ValueId, ValueType,
};

use crate::kernel::{Kernel, NodeInfo, Registry};

/// The Cpu provider. Cheap to construct; the kernel registry is built once per process.
#[derive(Debug, Clone, Default)]
pub struct CpuProvider {
    _private: (),
}

fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(crate::kernels::registry)
}

/// A kernel bound to its node, so run-time errors name the node.
pub struct KernelStep {
    kernel: Box<dyn Kernel>,
    node: String,
    op: String,
}

impl Step for KernelStep {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Vec<Value>> {
        // Errors that already name their node (a kernel's own, or one from inside a
        // control-flow body) pass through; anything else gets this node attached, whole.
        self.kernel.run(inputs, ctx).map_err(|e| match e {
            Error::Node { .. } | Error::Provider { .. } => e,
            other => Error::Provider {
                provider: "Cpu".into(),
                node: Some(self.node.clone()),
                op: Some(self.op.clone()),
                source: Box::new(other),
            },
        })
    }
}

/// Builds the kernel for node `ix` of `graph`.
pub fn build_kernel(graph: &Graph, ix: NodeIndex) -> Result<Box<dyn Kernel>> {
    let node = graph.node(ix);
    let factory = registry().find(node).map_err(Error::Unsupported)?;
    let ty = |v: &Option<ValueId>| v.map(|v| graph.value(v).ty.clone()).unwrap_or(ValueType::Unknown);
    let info = NodeInfo {
        node,
        inputs: node.inputs.iter().map(ty).collect(),
        // Kernels read constants with typed access when they are built; protobuf leaves raw_data
        // unaligned, so a misaligned one (common for 2-byte f16 weights) is aligned here, once
        // per build, instead of making the factory refuse the node.
        consts: node.inputs.iter().map(|v| v.and_then(|v| graph.constant(v)).map(|t| t.to_aligned())).collect(),
        outputs: node.outputs.iter().map(ty).collect(),
    };
    factory(&info)
}

/// Compiles a set of nodes of a graph into a plan reading `inputs` and producing `outputs`.
/// Initializers the nodes read become plan constants (aligned once, here, if the mapped file
/// left them misaligned). Also used for If/Loop/Scan bodies, whose inputs include the outer
/// values they read.
pub fn compile_nodes(
    graph: &Graph,
    nodes: &[NodeIndex],
    inputs: &[ValueId],
    outputs: &[ValueId],
) -> Result<Plan<KernelStep>> {
    let mut b = PlanBuilder::<ValueId, KernelStep>::new();
    for v in inputs {
        b.input(*v);
    }
    for &ix in nodes {
        let node = graph.node(ix);
        let reads: Vec<Option<ValueId>> =
            node.inputs.iter().copied().chain(node.implicit_inputs.iter().map(|v| Some(*v))).collect();
        for v in reads.iter().flatten() {
            if !b.knows(*v)
                && let Some(t) = graph.initializer(*v)
            {
                b.constant(*v, Value::Tensor(t.to_aligned()));
            }
        }
        let kernel = build_kernel(graph, ix)?;
        let step = KernelStep { kernel, node: node.name.clone(), op: node.qualified_op() };
        b.step(step, &reads, &node.outputs).map_err(|e| node.error(e.to_string()))?;
    }
    for v in outputs {
        if !b.knows(*v)
            && let Some(t) = graph.initializer(*v)
        {
            b.constant(*v, Value::Tensor(t.to_aligned()));
        }
        b.output(*v)?;
    }
    Ok(b.build())
}

/// A compiled Cpu partition.
pub struct CpuPartition {
    plan: Plan<KernelStep>,
}

impl CompiledPartition for CpuPartition {
    fn run(&self, inputs: &[&Value], ctx: &RunContext) -> Result<Vec<Value>> {
        self.plan.run(inputs, ctx)
    }

    fn describe(&self) -> String {
        format!("{} kernels", self.plan.steps().count())
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

    fn capability(&self, model: &Model, offered: &[NodeIndex]) -> Result<Capability> {
        let mut cap = Capability::default();
        for &ix in offered {
            match build_kernel(&model.graph, ix) {
                Ok(_) => cap.claimed.push(ix),
                Err(Error::Unsupported(why)) => cap.refused.push((ix, why)),
                Err(e) => cap.refused.push((ix, e.to_string())),
            }
        }
        Ok(cap)
    }

    fn compile(&self, model: &Model, part: &PartitionDef) -> Result<Box<dyn CompiledPartition>> {
        let plan = compile_nodes(&model.graph, &part.nodes, &part.inputs, &part.outputs)?;
        Ok(Box::new(CpuPartition { plan }))
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
    /// Compiles a whole subgraph on the Cpu provider.
    pub fn compile(g: &Arc<Graph>) -> Result<SubgraphPlan> {
        let mut inputs: Vec<ValueId> = g.inputs().to_vec();
        inputs.extend_from_slice(g.outer_refs());
        let plan = compile_nodes(g, g.topo_order(), &inputs, g.outputs())?;
        Ok(SubgraphPlan {
            plan,
            num_inputs: g.inputs().len(),
            num_outputs: g.outputs().len(),
            outer_names: g.outer_refs().iter().map(|v| g.value(*v).name.clone()).collect(),
        })
    }

    /// Runs with formal inputs followed by outer values.
    pub fn run(&self, inputs: &[&Value], ctx: &RunContext) -> Result<Vec<Value>> {
        self.plan.run(inputs, ctx)
    }
}
