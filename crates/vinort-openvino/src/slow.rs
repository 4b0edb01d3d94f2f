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
        // Measured with onnxruntime in the same script (2 threads, f32 inference precision,
        // the op followed by Cast and Mul as quantize_dynamic writes it, medians of 50).
        "ConvInteger" => Some(format!(
            "OpenVINO {MEASURED}'s CPU plugin runs ConvInteger 1.8-4.7x slower than the Cpu provider's \
             int8 kernel (u8 1x1 16->96 at 112x112: 1.4-2.6 ms vs 0.4-0.6 ms; depthwise 3x3 96 channels: \
             1.5-3.0 ms vs 0.9-1.0 ms; 3x3 64->64 at 56x56: 1.3-1.6 ms vs 0.7-1.3 ms; the higher times \
             with a runtime input zero point, as DynamicQuantizeLinear produces)"
        )),
        "MatMulInteger" => Some(format!(
            "OpenVINO {MEASURED}'s CPU plugin runs MatMulInteger ~3.5x slower than the Cpu provider's \
             int8 kernel (u8 [1,128,256] x [256,1024]: 0.75-0.80 ms vs 0.21 ms, with a runtime or a \
             constant input zero point)"
        )),
        _ => None,
    }
}
