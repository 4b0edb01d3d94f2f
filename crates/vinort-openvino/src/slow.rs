//! Refusals for speed: nodes OpenVINO computes correctly but on a slow path, where the Cpu
//! provider is measured to be much faster.
//!
//! [`crate::rules`] and [`crate::semantics`] refuse what OpenVINO cannot run or runs wrongly.
//! This module refuses what it runs far slower than a hand-off to the Cpu provider costs:
//! OpenVINO's CPU plugin keeps reference (unoptimised C++) implementations for some op
//! variants, and a single one of them can dominate a model's time. Each rule names the
//! measurement behind it; a rule applies to the CPU device only, where it was measured.

use vinort_ir::{Graph, NodeIndex};

use crate::version::MEASURED;

/// Why OpenVINO should not run this node on `device`, if a measured slow path says so.
pub fn refusal(g: &Graph, ix: NodeIndex, device: &str) -> Option<String> {
    let n = g.node(ix);
    if device != "CPU" || !matches!(n.domain.as_str(), "" | "ai.onnx") {
        return None;
    }
    match n.op_type.as_str() {
        // The second output (argmax indices) is what selects the slow kernel.
        "MaxPool" if n.outputs.get(1).is_some_and(Option::is_some) => Some(format!(
            "OpenVINO {MEASURED}'s CPU plugin runs MaxPool with the Indices output on its reference \
             implementation (segnet_bench: 3 such pools take ~38 ms there, ~0.14 ms as values-only \
             JIT pools); the Cpu provider computes values and indices in one pass"
        )),
        _ => None,
    }
}
