//! Layer normalization spelled out in elementwise ops becomes one LayerNormalization, as ONNX
//! Runtime's LayerNormFusion does: PyTorch exports before opset 17 and Keras/tf2onnx exports
//! write it as
//!
//! `d = x − ReduceMean(x)`, `v = ReduceMean(d²)` (`Pow(d, 2)` or `Mul(d, d)`),
//! `y = d / Sqrt(v + ε) [· γ] [+ β]`
//!
//! over the last axis. Nine kernels, four passes over the row and three intermediate tensors
//! become one kernel and two passes. The statistics are the same two-pass mean and variance in
//! f32; the fused kernel multiplies by `1/√(v+ε)` where the graph divides by `√(v+ε)`, so the
//! results agree within a few ulps, not bit for bit (ONNX Runtime's fusion has the same
//! difference).

use vinort_ir::{Attr, DType, Node, Tensor, ValueId};

use super::fuse::{onnx, out1};
use super::{Item, Work, const_scalar, is_f32};
use crate::kernels::epilogue::Epilogue;

/// Fuses every match, at the Extended level.
pub(crate) fn layer_norm(w: &mut Work<'_>) {
    for i in 0..w.items.len() {
        if let Some(m) = layer_norm_at(w, i) {
            let scale = match m.gamma {
                Some(g) => g,
                None => {
                    w.new_const(Tensor::from_vec(&[m.c], vec![1f32; m.c]).ok().unwrap_or_else(|| Tensor::scalar(1f32)))
                }
            };
            let mut node = m.first;
            node.name = format!("{}/LayerNormalization", node.name);
            node.op_type = "LayerNormalization".into();
            node.domain = String::new();
            node.opset = 17;
            node.inputs = vec![Some(m.x), Some(scale), m.beta];
            node.outputs = vec![Some(m.y)];
            node.attrs = vec![("axis".into(), Attr::Int(-1)), ("epsilon".into(), Attr::Float(m.eps))];
            node.proto = None;
            for g in &m.gone {
                w.items[*g] = None;
            }
            w.items[m.last] = Some(Item { node, epi: Epilogue::default(), extra: vec![] });
            w.touch();
        }
    }
}

/// One match: the items it removes, the one the fused node replaces, and its operands.
struct Match {
    /// The first ReduceMean, which the fused node is made from (name, opset bookkeeping).
    first: Node,
    gone: Vec<usize>,
    last: usize,
    x: ValueId,
    y: ValueId,
    c: usize,
    eps: f32,
    gamma: Option<ValueId>,
    beta: Option<ValueId>,
}

/// The reader of `v` that is a `op` node with no epilogue, when it is `v`'s only reader.
fn sole<'a>(w: &'a Work<'_>, v: ValueId, op: &str) -> Option<(usize, &'a Node)> {
    let r = w.sole_reader(v)?;
    let it = w.item(r)?;
    (onnx(&it.node, op) && it.epi.is_empty()).then_some((r, &it.node))
}

/// True when `n` is a ReduceMean of `v` over only the last of its `rank` axes, keeping dims.
fn mean_of_last(w: &Work<'_>, n: &Node, v: ValueId, rank: usize) -> bool {
    if !onnx(n, "ReduceMean") || n.inputs.first() != Some(&Some(v)) || n.attr_or::<i64>("keepdims", 1).ok() != Some(1) {
        return false;
    }
    let axes: Option<Vec<i64>> = if n.opset >= 18 {
        let t = n.inputs.get(1).copied().flatten().and_then(|a| w.constant(a));
        t.and_then(|t| t.to_i64_vec().ok())
    } else {
        n.attr::<Vec<i64>>("axes").ok().flatten()
    };
    matches!(axes.as_deref(), Some([a]) if *a == -1 || *a == rank as i64 - 1)
}

/// The other input of a two-input node.
fn other(n: &Node, v: ValueId) -> Option<ValueId> {
    match n.inputs.as_slice() {
        [Some(a), Some(b)] if *a == v => Some(*b),
        [Some(a), Some(b)] if *b == v => Some(*a),
        _ => None,
    }
}

/// A constant f32 operand of `c` elements whose shape is `[c]` or `[1, …, 1, c]` of rank at
/// most `rank`, as a `[c]` value (made anew when its shape has leading ones).
fn row_const(w: &Work<'_>, v: ValueId, c: usize, rank: usize) -> Option<Tensor> {
    let t = w.constant(v)?;
    let s = t.shape();
    let fits =
        t.dtype() == DType::F32 && s.len() <= rank && s.last() == Some(&c) && s[..s.len() - 1].iter().all(|d| *d == 1);
    fits.then(|| t.to_aligned().reshaped(&[c]).ok()).flatten()
}

/// The match whose first ReduceMean is item `i`.
fn layer_norm_at(w: &mut Work<'_>, i: usize) -> Option<Match> {
    let it = w.item(i)?;
    let x = (*it.node.inputs.first()?)?;
    let shape = w.ty(x).static_shape()?;
    let (rank, c) = (shape.len(), *shape.last()?);
    if !is_f32(w, Some(x)) || !it.epi.is_empty() || c == 0 || !mean_of_last(w, &it.node, x, rank) {
        return None;
    }
    let mean = out1(&it.node)?;
    let (si, sub) = sole(w, mean, "Sub")?;
    if sub.inputs.as_slice() != [Some(x), Some(mean)] {
        return None;
    }
    let d = out1(sub)?;
    if w.keep.contains(&d) {
        return None;
    }
    // d is read twice: by its square and by the division.
    let readers = w.readers(d);
    let [r1, r2] = readers.as_slice() else { return None };
    let (sq, div) = {
        let a = w.item(*r1)?;
        if onnx(&a.node, "Div") { (*r2, *r1) } else { (*r1, *r2) }
    };
    let sq_node = &w.item(sq)?.node;
    let squares = (onnx(sq_node, "Pow")
        && sq_node.inputs.first() == Some(&Some(d))
        && const_scalar(w, sq_node.inputs.get(1).copied().flatten()) == Some(2.0))
        || (onnx(sq_node, "Mul") && sq_node.inputs.as_slice() == [Some(d), Some(d)]);
    let div_node = &w.item(div)?.node;
    if !squares || !onnx(div_node, "Div") || div_node.inputs.first() != Some(&Some(d)) || !w.item(sq)?.epi.is_empty() {
        return None;
    }
    let (vi, var) = sole(w, out1(sq_node)?, "ReduceMean")?;
    if !mean_of_last(w, var, out1(sq_node)?, rank) {
        return None;
    }
    let v = out1(var)?;
    let (ei, add) = sole(w, v, "Add")?;
    let eps = const_scalar(w, other(add, v))?;
    let (ri, sqrt) = sole(w, out1(add)?, "Sqrt")?;
    let s = out1(sqrt)?;
    if w.sole_reader(s)? != div || div_node.inputs.as_slice() != [Some(d), Some(s)] || !w.item(div)?.epi.is_empty() {
        return None;
    }
    if !(eps.is_finite() && eps >= 0.0) {
        return None;
    }
    let mut gone = vec![i, si, sq, vi, ei, ri];
    let (mut y, mut last) = (out1(div_node)?, div);
    // Then, optionally, a Mul by γ and an Add of β, each a row constant.
    let mut affine = |op: &str| {
        let (r, n) = sole(w, y, op)?;
        let t = other(n, y).and_then(|t| row_const(w, t, c, rank))?;
        let out = out1(n)?;
        gone.push(last);
        (y, last) = (out, r);
        Some(t)
    };
    let gamma = affine("Mul");
    let beta = affine("Add");
    let gamma = gamma.map(|g| w.new_const(g));
    let beta = beta.map(|b| w.new_const(b));
    let first = w.item(i)?.node.clone();
    Some(Match { first, gone, last, x, y, c, eps, gamma, beta })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use vinort_ir::proto::build::{self, fixed_tensor_info, node};
    use vinort_ir::proto::onnx;
    use vinort_ir::proto::prost::Message;
    use vinort_ir::tensor_proto::tensor_to_proto;
    use vinort_ir::{Model, RunContext, Tensor, Value};

    use super::super::OptLevel;
    use crate::provider::compile_nodes;

    /// The spelled-out layer norm over the last axis of `shape`, with or without γ and β,
    /// squaring by Pow or Mul, ReduceMean's axes as an attribute (opset 13) or input (18).
    fn model(shape: &[usize], pow: bool, affine: bool, opset: i64, eps: f32, d_out: bool) -> Model {
        let c = *shape.last().unwrap_or(&1);
        let mut rng = StdRng::seed_from_u64(3);
        let mut row = |lo: f32, hi: f32| -> Vec<f32> { (0..c).map(|_| rng.random_range(lo..hi)).collect() };
        let (g, b) = (row(0.5, 1.5), row(-1.0, 1.0));
        let mean = |x: &str, y: &str| {
            if opset >= 18 {
                node("ReduceMean", y, &[x, "axes"], &[y])
            } else {
                onnx::NodeProto {
                    attribute: vec![build::attr::ints("axes", &[-1])],
                    ..node("ReduceMean", y, &[x], &[y])
                }
            }
        };
        let mut nodes = vec![
            mean("x", "m"),
            node("Sub", "d", &["x", "m"], &["d"]),
            if pow { node("Pow", "p", &["d", "two"], &["p"]) } else { node("Mul", "p", &["d", "d"], &["p"]) },
            mean("p", "v"),
            node("Add", "e", &["v", "eps"], &["e"]),
            node("Sqrt", "s", &["e"], &["s"]),
            node("Div", "n", &["d", "s"], &[if affine { "n" } else { "y" }]),
        ];
        if affine {
            nodes.push(node("Mul", "g", &["n", "gamma"], &["gm"]));
            nodes.push(node("Add", "b", &["gm", "beta"], &["y"]));
        }
        let t = |s: &[usize], v: Vec<f32>| Tensor::from_vec(s, v).unwrap_or_else(|e| panic!("{e}"));
        let dims: Vec<i64> = shape.iter().map(|d| *d as i64).collect();
        let graph = onnx::GraphProto {
            name: Some("ln".into()),
            node: nodes,
            input: vec![fixed_tensor_info("x", 1, &dims)],
            output: std::iter::once("y").chain(d_out.then_some("d")).map(|o| fixed_tensor_info(o, 1, &dims)).collect(),
            initializer: vec![
                tensor_to_proto("two", &Tensor::scalar(2f32)),
                tensor_to_proto("eps", &Tensor::scalar(eps)),
                tensor_to_proto("gamma", &t(&[1, c], g)),
                tensor_to_proto("beta", &t(&[c], b)),
                tensor_to_proto("axes", &Tensor::from_vec(&[1], vec![-1i64]).unwrap_or_else(|e| panic!("{e}"))),
            ],
            ..Default::default()
        };
        Model::from_bytes(build::model(9, &[("", opset)], graph).encode_to_vec()).unwrap_or_else(|e| panic!("{e}"))
    }

    proptest! {
        #![proptest_config(crate::test_support::config(32))]

        /// Every spelling fuses into one LayerNormalization whose outputs are within a few ulps
        /// of the unfused graph's (which the ONNX node tests check against the reference).
        #[test]
        fn spelled_out_layer_norm_fuses(rows in 1usize..5, c in 1usize..70, pow in any::<bool>(), affine in any::<bool>(),
                                        opset18 in any::<bool>(), shift in -100f32..100.0, seed in any::<u64>()) {
            let shape = [2, rows, c];
            let md = model(&shape, pow, affine, if opset18 { 18 } else { 13 }, 1e-5, false);
            let mut rng = StdRng::seed_from_u64(seed);
            let x: Vec<f32> = (0..2 * rows * c).map(|_| shift + rng.random_range(-3.0f32..3.0)).collect();
            let x = Value::Tensor(Tensor::from_vec(&shape, x).unwrap_or_else(|e| panic!("{e}")));
            let g = &md.graph;
            let mut outs = vec![];
            for level in [OptLevel::Disabled, OptLevel::Extended] {
                let plan = compile_nodes(g, g.topo_order(), g.inputs(), g.outputs(), level).unwrap_or_else(|e| panic!("{e}"));
                if level == OptLevel::Extended {
                    let ops: Vec<String> = plan.steps().map(|s| s.op().to_string()).collect();
                    prop_assert_eq!(ops, vec!["LayerNormalization".to_string()]);
                }
                let y = plan.run(&[&x], &RunContext::default()).unwrap_or_else(|e| panic!("{e}"));
                outs.push(y[0].as_tensor().unwrap_or_else(|e| panic!("{e}")).to_f64_vec().unwrap_or_default());
            }
            for (a, b) in outs[0].iter().zip(&outs[1]) {
                prop_assert!((a - b).abs() <= 1e-5 * (1.0 + a.abs()), "{a} vs {b}");
            }
        }
    }

    /// A centred value the graph also outputs stays: nothing is fused.
    #[test]
    fn a_centred_value_read_elsewhere_is_left_alone() {
        let md = model(&[3, 8], true, true, 13, 1e-5, true);
        let g = &md.graph;
        let plan = compile_nodes(g, g.topo_order(), g.inputs(), g.outputs(), OptLevel::Extended)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(plan.steps().all(|s| s.op() != "LayerNormalization"));
    }
}
