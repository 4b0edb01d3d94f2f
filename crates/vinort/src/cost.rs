//! The partitioner's cost model: is a region worth its own partition on the provider that
//! claimed it, or is it cheaper on the next provider that can run it?
//!
//! Every partition costs a hand-off per run ([`CostProfile::per_partition_us`]: for OpenVINO an
//! infer request round trip with its boundary tensors, about 20 µs on a CPU), and a provider
//! that computes heavy ops faster ([`CostProfile::heavy_speed`]) gains back a share of their
//! time. A region stays with its provider when that gain exceeds the hand-off:
//!
//! `heavy_us · (1 − 1 / heavy_speed) > per_partition_us − next.per_partition_us`
//!
//! `heavy_us` is the region's heavy work at the Cpu kernels' rate: the multiply-adds of its
//! convolutions, matrix products and recurrences, counted from the shapes inference gave the
//! values ([`macs`]). A symbolic extent counts as 1 on the first axis (a batch) and
//! [`SYMBOLIC_EXTENT`] elsewhere (a short sequence, a small image): the model's cost at a small
//! call, which is when hand-offs dominate. Light ops (elementwise, shape plumbing) run about as
//! fast anywhere, so they add to neither side.
//!
//! This is an estimate made before any run: vinort does not time candidate plans (the C API of
//! OpenVINO has no cheap way to run a region on made-up inputs whose dynamic extents the user
//! has not given yet). `SessionBuilder::cost_model(false)` (session config
//! `session.cost_model=off`) turns it off, leaving the rule it replaced: a region with no heavy
//! op and at most [`crate::partition::MIN_CHEAP_PARTITION`] nodes (or only elementwise ones)
//! moves on.

use vinort_ir::ops::{self, Traits};
use vinort_ir::{CostProfile, Dim, Model, NodeIndex, ValueId};

/// Multiply-adds per microsecond of one core of vinort's Cpu kernels on f32 products (AVX2 or
/// AVX-512 convolutions and GEMMs run 20–40 per ns; the low end is taken).
pub const CPU_MACS_PER_US: f64 = 20_000.0;

/// The estimate for one region on its provider against the next one that could run it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Verdict {
    /// Microseconds of heavy work at the Cpu kernels' rate.
    pub heavy_us: f64,
    /// Microseconds per run the region saves on its provider (its heavy-op gain less its
    /// extra hand-off); negative when it costs.
    pub saves_us: f64,
}

impl Verdict {
    /// True when the region pays for its partition.
    pub fn keeps(&self) -> bool {
        self.saves_us > 0.0
    }
}

/// The verdict for `nodes` on a provider of profile `on`, against one of profile `next`.
pub fn judge(model: &Model, nodes: &[NodeIndex], on: CostProfile, next: CostProfile) -> Verdict {
    let work: f64 = nodes.iter().map(|n| macs(model, *n) as f64).sum();
    let heavy_us = work / CPU_MACS_PER_US;
    let gain = heavy_us / next.heavy_speed.max(f64::MIN_POSITIVE) - heavy_us / on.heavy_speed.max(f64::MIN_POSITIVE);
    Verdict { heavy_us, saves_us: gain - (on.per_partition_us - next.per_partition_us) }
}

/// The multiply-adds of a heavy node (0 for any other, and for one whose shapes say too little).
pub fn macs(model: &Model, n: NodeIndex) -> u64 {
    let g = &model.graph;
    let node = g.node(n);
    if !ops::has_traits(node, Traits::HEAVY) {
        return 0;
    }
    let elems = |v: Option<&Option<ValueId>>| -> Option<u64> {
        let shape = g.value((*v?)?).ty.tensor_shape()?;
        Some(shape.iter().map(extent).product())
    };
    let dims = |v: Option<&Option<ValueId>>| -> Option<Vec<u64>> {
        let shape = g.value((*v?)?).ty.tensor_shape()?;
        Some(shape.iter().map(extent).collect())
    };
    let (ins, outs) = (&node.inputs, &node.outputs);
    let y = elems(outs.first()).unwrap_or(0);
    let estimate = match node.op_type.as_str() {
        // Every output element sums input channels / group × the kernel's taps: W's shape
        // [M, C/group, k...] without its first axis.
        "Conv" | "ConvInteger" | "NhwcConv" | "FusedConv" => {
            dims(ins.get(1)).map(|w| y * w.iter().skip(1).product::<u64>())
        }
        "QLinearConv" => dims(ins.get(3)).map(|w| y * w.iter().skip(1).product::<u64>()),
        // Every input element spreads over the kernel's taps and output channels per group.
        "ConvTranspose" => dims(ins.get(1)).zip(elems(ins.first())).map(|(w, x)| x * w.iter().skip(1).product::<u64>()),
        // Rows × K × N = |A| · N, A being [.., M, K] (or a Gemm's transposed [K, M]).
        "MatMul" | "MatMulInteger" | "Gemm" | "FusedMatMul" => {
            let a = elems(ins.first());
            let n = dims(outs.first()).and_then(|s| s.last().copied());
            a.zip(n).map(|(a, n)| a * n)
        }
        "QLinearMatMul" => {
            elems(ins.first()).zip(dims(outs.first()).and_then(|s| s.last().copied())).map(|(a, n)| a * n)
        }
        // Every step multiplies the input by W and the state by R for each direction and gate.
        "LSTM" | "GRU" | "RNN" => {
            let steps = dims(ins.first()).map(|x| x.iter().take(2).product::<u64>());
            let wr = elems(ins.get(1)).zip(elems(ins.get(2))).map(|(w, r)| w + r);
            steps.zip(wr).map(|(s, wr)| s * wr)
        }
        _ => None,
    };
    // A heavy op the shapes do not describe (attention, a custom product): its output times
    // a short reduction.
    estimate.unwrap_or(y * SHORT_REDUCTION)
}

/// What a heavy op whose operands' shapes are not read here sums per output element.
const SHORT_REDUCTION: u64 = 64;

/// An extent as the estimate counts it: a symbolic one as 1.
fn extent(d: &Dim) -> u64 {
    d.fixed().map_or(1, |n| n as u64)
}

#[cfg(test)]
mod tests {
    use prost::Message;
    use vinort_ir::proto::build::{self, attr, dim, node, tensor_info};
    use vinort_ir::proto::onnx;

    use super::*;

    const CPU: CostProfile = CostProfile { per_partition_us: 1.0, heavy_speed: 1.0 };
    const OV: CostProfile = CostProfile { per_partition_us: 20.0, heavy_speed: 1.3 };

    /// A Conv of `c` to `m` channels (3x3, pads 1) over an input of `dims` (None: symbolic),
    /// then a MatMul of its flattened output by a [k, 10] weight, and a Relu.
    fn model(dims: [Option<i64>; 4], m: i64) -> Model {
        let extent = |d: Option<i64>| d.map_or_else(|| dim::named("s"), dim::fixed);
        let c = dims[1].unwrap_or(3);
        let w = vinort_ir::Tensor::from_vec(&[m as usize, c as usize, 3, 3], vec![0.5f32; (m * c * 9) as usize]);
        let w = w.unwrap_or_else(|e| panic!("{e}"));
        let g = onnx::GraphProto {
            name: Some("g".into()),
            node: vec![
                onnx::NodeProto {
                    attribute: vec![attr::ints("kernel_shape", &[3, 3]), attr::ints("pads", &[1, 1, 1, 1])],
                    ..node("Conv", "conv", &["x", "w"], &["y"])
                },
                node("Relu", "relu", &["y"], &["z"]),
            ],
            input: vec![tensor_info("x", 1, dims.map(extent))],
            output: vec![tensor_info("z", 1, [])],
            initializer: vec![vinort_ir::tensor_proto::tensor_to_proto("w", &w)],
            ..Default::default()
        };
        let bytes = build::model(9, &[("", 17)], g).encode_to_vec();
        Model::from_bytes(bytes).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn counts_multiply_adds_from_shapes() {
        // 8 output channels × 32 × 32 pixels, each 3 channels × 9 taps.
        let m = model([Some(1), Some(3), Some(32), Some(32)], 8);
        let [conv, relu] = [0, 1].map(NodeIndex::new);
        assert_eq!(macs(&m, conv), 8 * 32 * 32 * 27);
        assert_eq!(macs(&m, relu), 0, "light ops are not counted");
        // A symbolic extent counts once.
        let m = model([None, Some(3), None, Some(32)], 8);
        assert_eq!(macs(&m, conv), 8 * 32 * 27);
    }

    #[test]
    fn small_regions_move_and_large_ones_stay() {
        // 221 k multiply-adds: 11 µs of heavy work saves 2.5 µs on OpenVINO, less than the
        // 19 µs its partition costs beyond a Cpu one.
        let small = model([Some(1), Some(3), Some(32), Some(32)], 8);
        let v = judge(&small, &[NodeIndex::new(0), NodeIndex::new(1)], OV, CPU);
        assert!(!v.keeps() && v.saves_us < 0.0, "{v:?}");
        // 64 × 224² pixels × 27: 87 M multiply-adds, 4.3 ms; OpenVINO saves about 1 ms.
        let large = model([Some(1), Some(3), Some(224), Some(224)], 64);
        let v = judge(&large, &[NodeIndex::new(0)], OV, CPU);
        assert!(v.keeps() && v.saves_us > 900.0, "{v:?}");
        // Between two providers of one profile nothing is gained.
        assert!(!judge(&large, &[NodeIndex::new(0)], CPU, CPU).keeps());
    }
}
