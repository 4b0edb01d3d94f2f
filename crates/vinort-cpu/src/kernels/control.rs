//! Control flow: [If](https://onnx.ai/onnx/operators/onnx__If.html) (opsets 1–24).
//!
//! Branches are compiled into Cpu plans when the node is compiled and run with the outer-scope
//! values the node receives as implicit inputs.

use std::sync::Arc;

use vinort_ir::{Error, Graph, Result, RunContext, Value};

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
    let then_branch = SubgraphPlan::compile(&then_g).map_err(|e| Error::unsupported(format!("then_branch: {e}")))?;
    let else_branch = SubgraphPlan::compile(&else_g).map_err(|e| Error::unsupported(format!("else_branch: {e}")))?;
    if then_branch.num_inputs != 0 || else_branch.num_inputs != 0 {
        return Err(n.error("If branches take no inputs"));
    }
    if then_branch.num_outputs != else_branch.num_outputs {
        return Err(n.error("If branches have different numbers of outputs"));
    }
    // The IR lists implicit inputs sorted by name (see the loader); the facade and the Cpu plan
    // pass them in that order after the explicit inputs.
    let mut implicit: Vec<String> = then_branch.outer_names.iter().chain(&else_branch.outer_names).cloned().collect();
    implicit.sort();
    implicit.dedup();
    Ok(Box::new(If { then_branch, else_branch, implicit }))
}

impl Kernel for If {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Vec<Value>> {
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
        branch.run(&args, ctx)
    }
}
