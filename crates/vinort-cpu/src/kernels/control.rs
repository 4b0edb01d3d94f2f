//! Control flow: [If](https://onnx.ai/onnx/operators/onnx__If.html) (opsets 1–24), and
//! [`Body`], the compiled graph attribute that every other op with one runs (Loop, Scan and
//! SequenceMap in `sequence/looping.rs`, FlexAttention's `score_mod`/`prob_mod` in
//! `attention/flex.rs`).
//!
//! Branches and bodies are compiled into Cpu plans when the node is compiled and run with the
//! outer-scope values the node receives as implicit inputs.

use std::sync::Arc;
use vinort_ir::Values;

use vinort_ir::{Attr, DType, Error, Graph, Result, RunContext, Value};

use crate::kernel::{Kernel, NodeInfo, Registry, tensor_in};
use crate::provider::SubgraphPlan;

pub(crate) fn register(r: &mut Registry) {
    r.op("", "If", if_factory);
}

struct If {
    then_branch: SubgraphPlan,
    else_branch: SubgraphPlan,
    /// Names of the node's implicit inputs, in the order they follow the condition.
    implicit: Vec<String>,
}

fn if_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let then_g = n.req_attr::<Arc<Graph>>("then_branch")?;
    let else_g = n.req_attr::<Arc<Graph>>("else_branch")?;
    // The IR lists implicit inputs sorted by name (see the loader); the facade and the Cpu plan
    // pass them in that order after the explicit inputs.
    let implicit = implicit_names(n);
    let known = |name: &str| outer_const(info, &implicit, name);
    let level = info.scope.level;
    let then_branch =
        SubgraphPlan::compile(&then_g, level, known).map_err(|e| Error::unsupported(format!("then_branch: {e}")))?;
    let else_branch =
        SubgraphPlan::compile(&else_g, level, known).map_err(|e| Error::unsupported(format!("else_branch: {e}")))?;
    if then_branch.num_inputs != 0 || else_branch.num_inputs != 0 {
        return Err(n.error("If branches take no inputs"));
    }
    if then_branch.num_outputs != else_branch.num_outputs {
        return Err(n.error("If branches have different numbers of outputs"));
    }
    Ok(Box::new(If { then_branch, else_branch, implicit }))
}

/// The names of the outer values a node's graph attributes read, sorted: the order of the
/// node's implicit inputs (the loader gives the node the sorted union over all of its graph
/// attributes; FlexAttention has two).
fn implicit_names(node: &vinort_ir::Node) -> Vec<String> {
    let mut implicit: Vec<String> = vec![];
    for (_, a) in &node.attrs {
        let graphs: &[Arc<Graph>] = match a {
            Attr::Graph(g) => std::slice::from_ref(g),
            Attr::Graphs(gs) => gs,
            _ => continue,
        };
        for sub in graphs {
            implicit.extend(sub.outer_refs().iter().map(|v| sub.value(*v).name.clone()));
        }
    }
    implicit.sort();
    implicit.dedup();
    implicit
}

/// The value of outer value `name` when it is known before running.
fn outer_const(info: &NodeInfo<'_>, implicit: &[String], name: &str) -> Option<vinort_ir::Tensor> {
    let pos = implicit.iter().position(|n| n == name)?;
    info.scope.outer_consts.get(pos)?.clone()
}

impl Kernel for If {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values> {
        let cond = tensor_in(inputs, 0)?;
        let c = match cond.as_slice::<bool>()? {
            [c] => *c,
            other => return Err(Error::invalid(format!("condition must hold one element, it has {}", other.len()))),
        };
        let branch = if c { &self.then_branch } else { &self.else_branch };
        let outer = &inputs[1..];
        let mut args = Vec::with_capacity(branch.outer_names.len());
        for name in &branch.outer_names {
            let pos = self
                .implicit
                .iter()
                .position(|n| n == name)
                .ok_or_else(|| Error::invalid(format!("outer value '{name}' not bound")))?;
            args.push(
                outer
                    .get(pos)
                    .copied()
                    .flatten()
                    .ok_or_else(|| Error::invalid(format!("outer value '{name}' missing")))?,
            );
        }
        branch.run(&args, ctx).map(Values::from_vec)
    }
}

/// A compiled graph attribute with the positions of its outer values among the node's implicit
/// inputs.
pub(crate) struct Body {
    pub(crate) plan: SubgraphPlan,
    /// For each outer value the body reads, its index among the node's implicit inputs.
    outer_pos: Vec<usize>,
    /// Declared element type and static shape of each body output, when known.
    pub(crate) out_types: Vec<(Option<DType>, Option<Vec<usize>>)>,
}

impl Body {
    /// Compiles graph attribute `attr` of the node (an error when it is missing).
    pub(crate) fn compile(info: &NodeInfo<'_>, attr: &str) -> Result<Body> {
        let g = info.node.req_attr::<Arc<Graph>>(attr)?;
        Body::compile_graph(info, attr, &g)
    }

    /// Compiles graph attribute `attr` if the node has it.
    pub(crate) fn compile_opt(info: &NodeInfo<'_>, attr: &str) -> Result<Option<Body>> {
        info.node.attr::<Arc<Graph>>(attr)?.map(|g| Body::compile_graph(info, attr, &g)).transpose()
    }

    fn compile_graph(info: &NodeInfo<'_>, attr: &str, g: &Arc<Graph>) -> Result<Body> {
        let implicit = implicit_names(info.node);
        let plan = SubgraphPlan::compile(g, info.scope.level, |name| outer_const(info, &implicit, name))
            .map_err(|e| Error::unsupported(format!("{attr}: {e}")))?;
        let outer_pos =
            plan.outer_names.iter().map(|n| implicit.iter().position(|m| m == n).unwrap_or(usize::MAX)).collect();
        let out_types = g
            .outputs()
            .iter()
            .map(|v| {
                let ty = &g.value(*v).ty;
                (ty.tensor_dtype(), ty.static_shape())
            })
            .collect();
        Ok(Body { plan, outer_pos, out_types })
    }

    /// Runs with formal inputs; `outer` are the node's implicit inputs.
    pub(crate) fn run(&self, formal: &[&Value], outer: &[Option<&Value>], ctx: &RunContext) -> Result<Values> {
        if formal.len() != self.plan.num_inputs {
            return Err(Error::invalid(format!(
                "the body takes {} inputs, {} given",
                self.plan.num_inputs,
                formal.len()
            )));
        }
        let mut args: Vec<&Value> = Vec::with_capacity(formal.len() + self.outer_pos.len());
        args.extend_from_slice(formal);
        for (name, pos) in self.plan.outer_names.iter().zip(&self.outer_pos) {
            args.push(
                outer
                    .get(*pos)
                    .copied()
                    .flatten()
                    .ok_or_else(|| Error::invalid(format!("outer value '{name}' missing")))?,
            );
        }
        let out = self.plan.run(&args, ctx)?;
        if out.len() != self.plan.num_outputs {
            return Err(Error::invalid("the body returned a wrong number of outputs"));
        }
        Ok(out.into())
    }
}
