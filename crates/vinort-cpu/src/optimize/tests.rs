//! Every rewrite is checked the same way: the same model compiled with the optimizer off and
//! on runs on the same random inputs, the optimized plan has fewer kernels (the pattern was
//! found), and the outputs agree: bit for bit for folding and the epilogue fusions, within a
//! stated bound for Conv+BatchNormalization and GELU, which round differently by design.

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vinort_ir::proto::build::{self, attr, fixed_tensor_info, node};
use vinort_ir::proto::onnx;
use vinort_ir::proto::prost::Message;
use vinort_ir::tensor_proto::tensor_to_proto;
use vinort_ir::{Model, RunContext, Tensor, Value};

use super::OptLevel;
use crate::provider::compile_nodes;
use crate::test_support as ts;

const F32: i32 = 1;

fn random(rng: &mut StdRng, shape: &[usize], scale: f32) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|_| rng.random_range(-scale..scale)).collect();
    Tensor::from_vec(shape, v).unwrap_or_else(|e| panic!("{e}"))
}

/// A model of `nodes` with f32 inputs and outputs of the given shapes and `inits` as initializers.
fn model(
    nodes: Vec<onnx::NodeProto>,
    inputs: &[(&str, &[usize])],
    outputs: &[(&str, &[usize])],
    inits: &[(&str, Tensor)],
) -> Model {
    let info = |(n, s): &(&str, &[usize])| fixed_tensor_info(n, F32, &s.iter().map(|d| *d as i64).collect::<Vec<_>>());
    let g = onnx::GraphProto {
        name: Some("g".into()),
        node: nodes,
        input: inputs.iter().map(info).collect(),
        output: outputs.iter().map(info).collect(),
        initializer: inits.iter().map(|(n, t)| tensor_to_proto(n, t)).collect(),
        ..Default::default()
    };
    let m = build::model(9, &[("", 20)], g);
    Model::from_bytes(m.encode_to_vec()).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `model` with the optimizer off and on; returns both outputs and both kernel counts.
fn both(model: &Model, inputs: &[Tensor]) -> (Vec<Tensor>, Vec<Tensor>, usize, usize) {
    both_at(model, inputs, OptLevel::Extended)
}

/// [`both`] with the optimizer at `level`.
fn both_at(model: &Model, inputs: &[Tensor], level: OptLevel) -> (Vec<Tensor>, Vec<Tensor>, usize, usize) {
    let g = &model.graph;
    let values: Vec<Value> = inputs.iter().cloned().map(Value::Tensor).collect();
    let refs: Vec<&Value> = values.iter().collect();
    let mut outs = vec![];
    let mut counts = vec![];
    for level in [OptLevel::Disabled, level] {
        let plan = compile_nodes(g, g.topo_order(), g.inputs(), g.outputs(), level).unwrap_or_else(|e| panic!("{e}"));
        counts.push(plan.steps().count());
        let got = plan.run(&refs, &RunContext::default()).unwrap_or_else(|e| panic!("{level:?}: {e}"));
        outs.push(got.into_iter().map(|v| v.into_tensor().unwrap_or_else(|e| panic!("{e}"))).collect::<Vec<_>>());
    }
    let on = outs.pop().unwrap_or_default();
    let off = outs.pop().unwrap_or_default();
    (off, on, counts[0], counts[1])
}

fn f32s(t: &Tensor) -> Vec<f64> {
    t.as_slice::<f32>().unwrap_or_else(|e| panic!("{e}")).iter().map(|v| f64::from(*v)).collect()
}

/// Bit-for-bit equal f32 tensors (NaN equal to NaN).
fn assert_same(a: &Tensor, b: &Tensor) {
    assert_eq!(a.shape(), b.shape());
    let (x, y) = (a.as_slice::<f32>().unwrap_or_default(), b.as_slice::<f32>().unwrap_or_default());
    for (i, (p, q)) in x.iter().zip(y).enumerate() {
        assert!(p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()), "element {i}: {p} vs {q}");
    }
}

fn conv_attrs(k: usize, pad: usize, group: usize) -> Vec<onnx::AttributeProto> {
    let p = pad as i64;
    vec![
        attr::ints("kernel_shape", &[k as i64, k as i64]),
        attr::ints("pads", &[p, p, p, p]),
        attr::int("group", group as i64),
    ]
}

/// The activations an epilogue takes, as nodes reading `x` and writing `y`, with their extra
/// initializers.
fn activation(which: usize, x: &str, y: &str) -> (onnx::NodeProto, Vec<(&'static str, Tensor)>) {
    let plain = |op: &str| node(op, "act", &[x], &[y]);
    match which {
        0 => (plain("Relu"), vec![]),
        1 => (onnx::NodeProto { attribute: vec![attr::float("alpha", 0.3)], ..plain("LeakyRelu") }, vec![]),
        2 => (
            node("Clip", "act", &[x, "lo", "hi"], &[y]),
            vec![("lo", Tensor::scalar(-0.5f32)), ("hi", Tensor::scalar(0.75f32))],
        ),
        3 => (plain("Sigmoid"), vec![]),
        4 => (plain("HardSigmoid"), vec![]),
        5 => (plain("HardSwish"), vec![]),
        6 => (plain("Tanh"), vec![]),
        _ => (plain("Gelu"), vec![]),
    }
}

proptest! {
    #![proptest_config(ts::config(24))]

    /// Conv (+ residual Add) + activation, grouped, depthwise and 1x1, equals the unfused graph
    /// bit for bit.
    #[test]
    fn conv_epilogues_are_exact(seed in any::<u64>(), act in 0usize..8, residual in any::<bool>(),
                                 kind in 0usize..3, c in 1usize..5, h in 3usize..9) {
        let mut rng = StdRng::seed_from_u64(seed);
        let (k, pad, group, m) = match kind {
            0 => (3, 1, 1, 4),
            1 => (3, 1, c, c),
            _ => (1, 0, 1, 3),
        };
        let x = random(&mut rng, &[1, c, h, h], 2.0);
        let w = random(&mut rng, &[m, c / group, k, k], 1.0);
        let b = random(&mut rng, &[m], 0.5);
        let z = random(&mut rng, &[1, m, h, h], 1.0);
        let mut nodes = vec![onnx::NodeProto { attribute: conv_attrs(k, pad, group), ..node("Conv", "conv", &["x", "w", "b"], &["c"]) }];
        let mut feeds = vec![x];
        let xshape = [1, c, h, h];
        let mut inputs: Vec<(&str, &[usize])> = vec![("x", &xshape)];
        let zshape = [1, m, h, h];
        let pre = if residual {
            nodes.push(node("Add", "add", &["z", "c"], &["s"]));
            inputs.push(("z", &zshape));
            feeds.push(z);
            "s"
        } else {
            "c"
        };
        let (a, extra) = activation(act, pre, "y");
        nodes.push(a);
        let mut inits = vec![("w", w), ("b", b)];
        inits.extend(extra);
        let m = model(nodes, &inputs, &[("y", &zshape)], &inits);
        let (off, on, n_off, n_on) = both(&m, &feeds);
        prop_assert_eq!(n_on, 1, "{} kernels before, {} after", n_off, n_on);
        assert_same(&off[0], &on[0]);
    }

    /// A Max or Min by a scalar (of any rank up to the product's) after a Conv or MatMul, with or
    /// without an activation between, or a Clip after one: fused into the product at Extended
    /// (and the Conv blocked at All), bit for bit, NaN passing as unfused; a scalar of higher
    /// rank, which broadcasts the output up, stays a node of its own.
    #[test]
    fn clamps_after_products_are_exact(seed in any::<u64>(), act in proptest::option::of(0usize..8),
                                       clamp in 0usize..3, scalar_rank in 0usize..6, conv in any::<bool>(),
                                       c in 1usize..20, h in 2usize..7) {
        let mut rng = StdRng::seed_from_u64(seed);
        let (xshape, full, wshape): (Vec<usize>, Vec<usize>, Vec<usize>) = if conv {
            (vec![1, c, h, h], vec![1, 17, h, h], vec![17, c, 3, 3])
        } else {
            (vec![h, c], vec![h, 5], vec![c, 5])
        };
        let mut x: Vec<f32> = f32s(&random(&mut rng, &xshape, 2.0)).into_iter().map(|v| v as f32).collect();
        x[0] = f32::NAN;
        let x = Tensor::from_vec(&xshape, x).unwrap_or_else(|e| panic!("{e}"));
        let mut nodes = vec![if conv {
            onnx::NodeProto { attribute: conv_attrs(3, 1, 1), ..node("Conv", "p", &["x", "w"], &["p"]) }
        } else {
            node("MatMul", "p", &["x", "w"], &["p"])
        }];
        let mut inits = vec![("w", random(&mut rng, &wshape, 1.0))];
        let pre = match act {
            Some(a) => {
                let (n, extra) = activation(a, "p", "a");
                nodes.push(n);
                inits.extend(extra);
                "a"
            }
            None => "p",
        };
        let bound = rng.random_range(-0.6f32..0.6);
        nodes.push(match clamp {
            0 => node("Max", "clamp", &["k", pre], &["y"]),
            1 => node("Min", "clamp", &[pre, "k"], &["y"]),
            _ => node("Clip", "clamp", &[pre, "clo", "chi"], &["y"]),
        });
        let k = Tensor::from_vec(&vec![1; scalar_rank], vec![bound]).unwrap_or_else(|e| panic!("{e}"));
        inits.extend([("k", k), ("clo", Tensor::scalar(-bound.abs())), ("chi", Tensor::scalar(bound.abs() + 0.1))]);
        let fused = clamp == 2 || scalar_rank <= full.len();
        let out: Vec<usize> = std::iter::repeat_n(1, if fused { 0 } else { scalar_rank - full.len() }).chain(full).collect();
        let md = model(nodes, &[("x", &xshape)], &[("y", &out)], &inits);
        let (off, on, _, _) = both_at(&md, std::slice::from_ref(&x), OptLevel::Extended);
        assert_same(&off[0], &on[0]);
        // Blocked, the sums run in another order: within their rounding, NaN where unfused.
        let (off, on, _, _) = both_at(&md, std::slice::from_ref(&x), OptLevel::All);
        for (o, f) in f32s(&on[0]).iter().zip(&f32s(&off[0])) {
            prop_assert!(o.is_nan() == f.is_nan() && (f.is_nan() || (o - f).abs() <= 1e-5 + 1e-5 * f.abs()), "{o} vs {f}");
        }
        let g = &md.graph;
        let plan = compile_nodes(g, g.topo_order(), g.inputs(), g.outputs(), OptLevel::Extended).unwrap_or_else(|e| panic!("{e}"));
        let ops: Vec<String> = plan.steps().map(|s| s.op().to_string()).collect();
        prop_assert_eq!(ops.len(), if fused { 1 } else { 2 }, "{:?}", ops);
    }

    /// MatMul by a constant + bias Add + residual Add + activation, A of rank 2 or 3.
    #[test]
    fn matmul_epilogues_are_exact(seed in any::<u64>(), act in 0usize..8, rank3 in any::<bool>(),
                                   m in 1usize..9, k in 1usize..20, n in 1usize..12) {
        let mut rng = StdRng::seed_from_u64(seed);
        let ashape: Vec<usize> = if rank3 { vec![2, m, k] } else { vec![m, k] };
        let yshape: Vec<usize> = if rank3 { vec![2, m, n] } else { vec![m, n] };
        let a = random(&mut rng, &ashape, 2.0);
        let z = random(&mut rng, &yshape, 1.0);
        let (act_node, extra) = activation(act, "s", "y");
        let nodes = vec![
            node("MatMul", "mm", &["a", "w"], &["p"]),
            node("Add", "bias", &["p", "b"], &["q"]),
            node("Add", "res", &["q", "z"], &["s"]),
            act_node,
        ];
        let mut inits = vec![("w", random(&mut rng, &[k, n], 1.0)), ("b", random(&mut rng, &[n], 0.5))];
        inits.extend(extra);
        let m = model(nodes, &[("a", &ashape), ("z", &yshape)], &[("y", &yshape)], &inits);
        let (off, on, _, n_on) = both(&m, &[a, z]);
        prop_assert_eq!(n_on, 1);
        assert_same(&off[0], &on[0]);
    }

    /// Conv + BatchNormalization folds into one Conv within f32 rounding of the two steps.
    #[test]
    fn conv_batchnorm_folds(seed in any::<u64>(), c in 1usize..5, m in 1usize..6, bias in any::<bool>()) {
        let mut rng = StdRng::seed_from_u64(seed);
        let x = random(&mut rng, &[2, c, 6, 6], 2.0);
        let var = Tensor::from_vec(&[m], (0..m).map(|_| rng.random_range(0.1f32..2.0)).collect()).unwrap_or_else(|e| panic!("{e}"));
        let conv_in: &[&str] = if bias { &["x", "w", "b"] } else { &["x", "w"] };
        let nodes = vec![
            onnx::NodeProto { attribute: conv_attrs(3, 1, 1), ..node("Conv", "conv", conv_in, &["c"]) },
            onnx::NodeProto { attribute: vec![attr::float("epsilon", 1e-3)], ..node("BatchNormalization", "bn", &["c", "g", "be", "mu", "var"], &["y"]) },
        ];
        let inits = vec![
            ("w", random(&mut rng, &[m, c, 3, 3], 1.0)),
            ("b", random(&mut rng, &[m], 0.5)),
            ("g", random(&mut rng, &[m], 2.0)),
            ("be", random(&mut rng, &[m], 1.0)),
            ("mu", random(&mut rng, &[m], 1.0)),
            ("var", var),
        ];
        let md = model(nodes, &[("x", &[2, c, 6, 6])], &[("y", &[2, m, 6, 6])], &inits);
        let x2 = x.clone();
        let (off, on, _, n_on) = both(&md, &[x2]);
        prop_assert_eq!(n_on, 1);
        // Two roundings of a sum of 9c products against one: a few ulps of the largest term.
        ts::assert_close(&f32s(&on[0]), &f32s(&off[0]), 1e-4, 1e-4, "Conv+BatchNormalization");
    }

    /// The five-op erf GELU (both placements of the ½) becomes one Gelu, within a few ulps.
    #[test]
    fn gelu_pattern_fuses(seed in any::<u64>(), half_first in any::<bool>(), mul_form in any::<bool>(), n in 1usize..40) {
        let mut rng = StdRng::seed_from_u64(seed);
        let x = random(&mut rng, &[3, n], 4.0);
        let scale = if mul_form { node("Mul", "scale", &["x", "inv_sqrt2"], &["d"]) } else { node("Div", "scale", &["x", "sqrt2"], &["d"]) };
        let mut nodes = vec![scale, node("Erf", "erf", &["d"], &["e"]), node("Add", "one", &["e", "one"], &["a"])];
        if half_first {
            nodes.push(node("Mul", "half", &["x", "half"], &["h"]));
            nodes.push(node("Mul", "mul", &["h", "a"], &["y"]));
        } else {
            nodes.push(node("Mul", "mul", &["x", "a"], &["m"]));
            nodes.push(node("Mul", "half", &["m", "half"], &["y"]));
        }
        let inits = vec![
            ("sqrt2", Tensor::scalar(std::f32::consts::SQRT_2)),
            ("inv_sqrt2", Tensor::scalar(std::f32::consts::FRAC_1_SQRT_2)),
            ("one", Tensor::scalar(1.0f32)),
            ("half", Tensor::scalar(0.5f32)),
        ];
        let md = model(nodes, &[("x", &[3, n])], &[("y", &[3, n])], &inits);
        let (off, on, _, n_on) = both(&md, &[x]);
        prop_assert_eq!(n_on, 1);
        // The unfused form computes 1 + erf(x/√2) in f32, which cancels for x ≪ 0: its absolute
        // error there is about |x|·2⁻²⁴ ≈ 3e-7 for |x| ≤ 4; elsewhere both agree to 1e-6.
        ts::assert_close(&f32s(&on[0]), &f32s(&off[0]), 1e-6, 1e-6, "GELU");
    }
}

/// A value read twice, or a partition output, is not fused away; results stay exact.
#[test]
fn shared_values_are_not_fused() {
    let mut rng = StdRng::seed_from_u64(7);
    let nodes = vec![
        node("MatMul", "mm", &["a", "w"], &["p"]),
        node("Relu", "r", &["p"], &["y"]),
        node("Sigmoid", "s", &["p"], &["y2"]),
    ];
    let md =
        model(nodes, &[("a", &[4, 5])], &[("y", &[4, 3]), ("y2", &[4, 3])], &[("w", random(&mut rng, &[5, 3], 1.0))]);
    let (off, on, n_off, n_on) = both(&md, &[random(&mut rng, &[4, 5], 1.0)]);
    assert_eq!((n_off, n_on), (3, 3));
    assert_same(&off[0], &on[0]);
    assert_same(&off[1], &on[1]);

    // The MatMul's output is also a graph output: its Relu stays separate.
    let nodes = vec![node("MatMul", "mm", &["a", "w"], &["p"]), node("Relu", "r", &["p"], &["y"])];
    let md =
        model(nodes, &[("a", &[4, 5])], &[("y", &[4, 3]), ("p", &[4, 3])], &[("w", random(&mut rng, &[5, 3], 1.0))]);
    let (off, on, _, n_on) = both(&md, &[random(&mut rng, &[4, 5], 1.0)]);
    assert_eq!(n_on, 2);
    assert_same(&off[1], &on[1]);
}

/// Constant subgraphs fold: a dequantized int8 weight and the Shape→Gather→Concat→Reshape
/// arithmetic on a static shape run at compile time, and the results are unchanged.
#[test]
fn constants_fold() {
    let mut rng = StdRng::seed_from_u64(3);
    let wq: Vec<i8> = (0..20).map(|_| rng.random_range(-100i8..100)).collect();
    let nodes = vec![
        node("DequantizeLinear", "dq", &["wq", "ws"], &["w"]),
        node("MatMul", "mm", &["a", "w"], &["p"]),
        node("Shape", "shape", &["p"], &["s"]),
        node("Gather", "first", &["s", "zero"], &["d0"]),
        node("Concat", "cat", &["d0", "minus1"], &["target"]),
        node("Reshape", "reshape", &["p", "target"], &["y"]),
    ];
    let nodes = nodes
        .into_iter()
        .map(|n| {
            if n.op_type.as_deref() == Some("Concat") {
                onnx::NodeProto { attribute: vec![attr::int("axis", 0)], ..n }
            } else {
                n
            }
        })
        .collect();
    let inits = vec![
        ("wq", Tensor::from_vec(&[5, 4], wq).unwrap_or_else(|e| panic!("{e}"))),
        ("ws", Tensor::scalar(0.02f32)),
        ("zero", Tensor::from_vec(&[1], vec![0i64]).unwrap_or_else(|e| panic!("{e}"))),
        ("minus1", Tensor::from_vec(&[1], vec![-1i64]).unwrap_or_else(|e| panic!("{e}"))),
    ];
    let md = model(nodes, &[("a", &[2, 3, 5])], &[("y", &[2, 12])], &inits);
    let (off, on, n_off, n_on) = both(&md, &[random(&mut rng, &[2, 3, 5], 1.0)]);
    assert_eq!((n_off, n_on), (6, 2), "only MatMul and Reshape are left");
    // The folded weight is a constant, so the MatMul multiplies by it packed: the same products
    // summed in another order than the unoptimized run's GEMM, a few f32 roundings apart.
    ts::assert_close(&f32s(&on[0]), &f32s(&off[0]), 1e-6, 1e-6, "folded dequantized weight");
}

proptest! {
    #![proptest_config(ts::config(16))]

    /// Dynamic quantization's MatMulInteger + Cast + Mul by the scales + bias + residual +
    /// activation is one kernel, bit for bit the unfused graph; weights i8 or u8, per-tensor or
    /// per-column scales and zero points; products of up to 2 × 110 × 260 outputs, past the size
    /// from which the fused tail runs in parallel blocks of rows.
    #[test]
    fn integer_matmul_tail_is_exact(seed in any::<u64>(), act in 0usize..8, (m, n) in prop_oneof![(1usize..7, 1usize..20), (90usize..110, 200usize..260)],
                                    k in 1usize..40, per_column in any::<bool>(), unsigned in any::<bool>()) {
        let mut rng = StdRng::seed_from_u64(seed);
        let cols = if per_column { n } else { 1 };
        let ws = Tensor::from_vec(&[cols], (0..cols).map(|_| rng.random_range(0.001f32..0.05)).collect()).unwrap_or_else(|e| panic!("{e}"));
        let (wq, wz) = if unsigned {
            let q: Vec<u8> = (0..k * n).map(|_| rng.random()).collect();
            let z: Vec<u8> = (0..cols).map(|_| rng.random()).collect();
            (Tensor::from_vec(&[k, n], q), Tensor::from_vec(&[cols], z))
        } else {
            let q: Vec<i8> = (0..k * n).map(|_| rng.random()).collect();
            let z: Vec<i8> = (0..cols).map(|_| rng.random_range(-20..20)).collect();
            (Tensor::from_vec(&[k, n], q), Tensor::from_vec(&[cols], z))
        };
        let (act_node, extra) = activation(act, "r", "y");
        let nodes = vec![
            node("DynamicQuantizeLinear", "dql", &["x"], &["xq", "xs", "xz"]),
            node("Mul", "scales", &["xs", "ws"], &["s"]),
            node("MatMulInteger", "mmi", &["xq", "wq", "xz", "wz"], &["acc"]),
            onnx::NodeProto { attribute: vec![attr::int("to", 1)], ..node("Cast", "cast", &["acc"], &["accf"]) },
            node("Mul", "scale", &["accf", "s"], &["p"]),
            node("Add", "bias", &["b", "p"], &["q"]),
            node("Add", "res", &["q", "z"], &["r"]),
            act_node,
        ];
        let mut inits = vec![
            ("wq", wq.unwrap_or_else(|e| panic!("{e}"))),
            ("wz", wz.unwrap_or_else(|e| panic!("{e}"))),
            ("ws", ws),
            ("b", random(&mut rng, &[n], 0.5)),
        ];
        inits.extend(extra);
        let md = model(nodes, &[("x", &[2, m, k]), ("z", &[2, m, n])], &[("y", &[2, m, n])], &inits);
        let feeds = [random(&mut rng, &[2, m, k], 3.0), random(&mut rng, &[2, m, n], 1.0)];
        let (off, on, n_off, n_on) = both(&md, &feeds);
        prop_assert_eq!((n_off, n_on), (8, 3), "DynamicQuantizeLinear, the scales' Mul and one fused kernel");
        assert_same(&off[0], &on[0]);
    }
}

proptest! {
    #![proptest_config(ts::config(16))]

    /// QDQ Conv (uint8 activations, int8 per-channel weights, int32 bias as quantizers write
    /// them) becomes one QLinearConv. The fused form requantizes the exact integer sum once; the
    /// unfused one rounds a float convolution first, so the two may differ by one quantization
    /// step where the float sum lands next to a rounding boundary, never more.
    #[test]
    fn qdq_conv_becomes_qlinearconv(seed in any::<u64>(), c in 1usize..6, m in 1usize..6, k in 1usize..4, h in 3usize..9) {
        let mut rng = StdRng::seed_from_u64(seed);
        let xs = 0.02f32;
        let ws: Vec<f32> = (0..m).map(|_| rng.random_range(0.002f32..0.02)).collect();
        let bs: Vec<f32> = ws.iter().map(|w| xs * w).collect();
        let t = |shape: &[usize], v: Vec<f32>| Tensor::from_vec(shape, v).unwrap_or_else(|e| panic!("{e}"));
        let xq: Vec<u8> = (0..c * h * h).map(|_| rng.random()).collect();
        let wq: Vec<i8> = (0..m * c * k * k).map(|_| rng.random()).collect();
        let bq: Vec<i32> = (0..m).map(|_| rng.random_range(-5000..5000)).collect();
        let nodes = vec![
            node("DequantizeLinear", "dqx", &["xq", "xs", "xz"], &["x"]),
            onnx::NodeProto { attribute: vec![attr::int("axis", 0)], ..node("DequantizeLinear", "dqw", &["wq", "ws", "wz"], &["w"]) },
            onnx::NodeProto { attribute: vec![attr::int("axis", 0)], ..node("DequantizeLinear", "dqb", &["bq", "bs"], &["b"]) },
            onnx::NodeProto { attribute: conv_attrs(k, k / 2, 1), ..node("Conv", "conv", &["x", "w", "b"], &["y"]) },
            node("QuantizeLinear", "q", &["y", "ys", "yz"], &["yq"]),
        ];
        let inits = vec![
            ("xs", Tensor::scalar(xs)),
            ("xz", Tensor::scalar(128u8)),
            ("wq", Tensor::from_vec(&[m, c, k, k], wq).unwrap_or_else(|e| panic!("{e}"))),
            ("ws", t(&[m], ws)),
            ("wz", Tensor::from_vec(&[m], vec![0i8; m]).unwrap_or_else(|e| panic!("{e}"))),
            ("bq", Tensor::from_vec(&[m], bq).unwrap_or_else(|e| panic!("{e}"))),
            ("bs", t(&[m], bs)),
            ("ys", Tensor::scalar(0.05f32)),
            ("yz", Tensor::scalar(100u8)),
        ];
        let g = onnx::GraphProto {
            name: Some("g".into()),
            node: nodes,
            input: vec![fixed_tensor_info("xq", 2, &[1, c as i64, h as i64, h as i64])],
            output: vec![build::tensor_info("yq", 2, [])],
            initializer: inits.iter().map(|(n, t)| tensor_to_proto(n, t)).collect(),
            ..Default::default()
        };
        let md = Model::from_bytes(build::model(9, &[("", 20)], g).encode_to_vec()).unwrap_or_else(|e| panic!("{e}"));
        let x = Tensor::from_vec(&[1, c, h, h], xq).unwrap_or_else(|e| panic!("{e}"));
        let (off, on, n_off, n_on) = both(&md, &[x]);
        prop_assert_eq!((n_off, n_on), (5, 1));
        prop_assert_eq!(off[0].shape(), on[0].shape());
        let (a, b) = (off[0].as_slice::<u8>().unwrap_or_default(), on[0].as_slice::<u8>().unwrap_or_default());
        for (p, q) in a.iter().zip(b) {
            prop_assert!(p.abs_diff(*q) <= 1, "{} vs {}", p, q);
        }
    }

}

proptest! {
    #![proptest_config(ts::config(64))]

    /// A chain of Convs moved to NCHWc (regular with any kernel, stride, padding and dilation,
    /// then depthwise, then 1x1 with the first's output as residual, and a second depthwise of
    /// any window beside them) equals the NCHW graph
    /// within f32 rounding of its sums, for channel counts below, at and past one block (and
    /// past one pass of the regular tile: 16 channels per pass with a 3x3 kernel), with the
    /// first output also read by the graph (so it is reordered back as well).
    #[test]
    fn nchwc_conv_chains_match_nchw(seed in any::<u64>(), act in 0usize..8, n in 1usize..3, c in 1usize..60,
                                    m in 1usize..36, k in 1usize..4, s in 1usize..3, d in 1usize..3,
                                    pads in proptest::array::uniform4(0usize..3), h in 0usize..9, wd in 0usize..9,
                                    dk in 1usize..5, ds in 1usize..3, dd in 1usize..3, dpads in proptest::array::uniform4(0usize..4),
                                    dact in 0usize..9) {
        let mut rng = StdRng::seed_from_u64(seed);
        let reach = d * (k - 1) + 1;
        // Pads within the dilated kernel, the ones the layout pass takes.
        let pads = pads.map(|p| p.min(reach));
        let (h, wd) = ((reach + h).saturating_sub(pads[0] + pads[2]).max(1), (reach + wd).saturating_sub(pads[1] + pads[3]).max(1));
        let out = |i: usize, p: usize| (i + p - reach) / s + 1;
        prop_assume!(h + pads[0] + pads[2] >= reach && wd + pads[1] + pads[3] >= reach);
        let (oh, ow) = (out(h, pads[0] + pads[2]), out(wd, pads[1] + pads[3]));
        let xs = [n, c, h, wd];
        let ys = [n, m, oh, ow];
        let i64s = |v: &[usize]| v.iter().map(|x| *x as i64).collect::<Vec<_>>();
        // A square window's attributes.
        let window = |k: usize, s: usize, d: usize, pads: &[usize]| {
            vec![
                attr::ints("kernel_shape", &[k as i64, k as i64]),
                attr::ints("strides", &[s as i64, s as i64]),
                attr::ints("dilations", &[d as i64, d as i64]),
                attr::ints("pads", &i64s(pads)),
            ]
        };
        let conv1 = onnx::NodeProto { attribute: window(k, s, d, &pads), ..node("Conv", "c1", &["x", "w1", "b1"], &["p"]) };
        let (a1, extra) = activation(act, "p", "a");
        let conv2 = onnx::NodeProto {
            attribute: vec![attr::ints("pads", &[1, 1, 1, 1]), attr::int("group", m as i64)],
            ..node("Conv", "c2", &["a", "w2"], &["q"])
        };
        // A second depthwise conv of `a` with its own window, whose edges are clipped.
        let dreach = dd * (dk - 1) + 1;
        let dpads = dpads.map(|p| p.min(dreach));
        prop_assume!(oh + dpads[0] + dpads[2] >= dreach && ow + dpads[1] + dpads[3] >= dreach);
        let dshape = [n, m, (oh + dpads[0] + dpads[2] - dreach) / ds + 1, (ow + dpads[1] + dpads[3] - dreach) / ds + 1];
        let mut attrs = window(dk, ds, dd, &dpads);
        attrs.push(attr::int("group", m as i64));
        // The depthwise conv's own activation (none when `dact` is 8), fused into its tile.
        let conv4 = onnx::NodeProto { attribute: attrs, ..node("Conv", "c4", &["a", "w4", "b4"], &[if dact < 8 { "v0" } else { "v" }]) };
        let mut nodes = vec![
            conv1,
            a1,
            conv2,
            node("Conv", "c3", &["q", "w3", "b3"], &["r"]),
            node("Add", "res", &["r", "a"], &["y"]),
            conv4,
        ];
        let mut extra4 = vec![];
        if dact < 8 {
            let (a4, e) = activation(dact, "v0", "v");
            nodes.push(onnx::NodeProto { name: Some("act4".into()), ..a4 });
            extra4 = e;
        }
        let mut inits = vec![
            ("w1", random(&mut rng, &[m, c, k, k], 1.0)),
            ("b1", random(&mut rng, &[m], 0.5)),
            ("w2", random(&mut rng, &[m, 1, 3, 3], 1.0)),
            ("w3", random(&mut rng, &[m, m, 1, 1], 1.0)),
            ("b3", random(&mut rng, &[m], 0.5)),
            ("w4", random(&mut rng, &[m, 1, dk, dk], 1.0)),
            ("b4", random(&mut rng, &[m], 0.5)),
        ];
        inits.extend(extra);
        // Clip's bounds are shared when both activations are Clips.
        inits.extend(extra4.into_iter().filter(|(n, _)| !inits.iter().any(|(m, _)| m == n)).collect::<Vec<_>>());
        let md = model(nodes, &[("x", &xs)], &[("y", &ys), ("a", &ys), ("v", &dshape)], &inits);
        let x = random(&mut rng, &xs, 2.0);
        let (off, on, _, _) = both_at(&md, std::slice::from_ref(&x), OptLevel::All);
        for (o, f) in on.iter().zip(&off) {
            prop_assert_eq!(o.shape(), f.shape());
            // Sums of up to 9·c products of terms below 2 (then m more) in another order.
            ts::assert_close(&f32s(o), &f32s(f), 1e-4, 1e-4, "NCHWc chain");
        }
        let g = &md.graph;
        let plan = compile_nodes(g, g.topo_order(), g.inputs(), g.outputs(), OptLevel::All).unwrap_or_else(|e| panic!("{e}"));
        let ops: Vec<&str> = plan.steps().map(|s| s.op()).collect();
        if !crate::kernels::conv::nchwc::available() {
            // Below AVX2 (or with VINORT_CPU_ISA=portable) the graph stays NCHW.
            prop_assert!(!ops.iter().any(|o| o.starts_with("vinort.nchwc::")), "blocked ops at ISA {}: {:?}", crate::isa::level(), ops);
            return Ok(());
        }
        prop_assert_eq!(ops.iter().filter(|o| **o == "vinort.nchwc::Conv").count(), 4, "{:?}", ops);
        // One reorder in (x, unless under 16 channels are read in place), one out per output
        // read outside (a, y, v).
        let reorders_in = usize::from(c >= 16);
        prop_assert_eq!(ops.iter().filter(|o| **o == "vinort.nchwc::ReorderInput").count(), reorders_in, "{:?}", ops);
        prop_assert_eq!(ops.iter().filter(|o| **o == "vinort.nchwc::ReorderOutput").count(), 3, "{:?}", ops);
    }
}

proptest! {
    #![proptest_config(ts::config(48))]

    /// A MaxPool of a blocked Conv's output (any kernel, stride, dilation, pads within the
    /// kernel, ceil mode) stays blocked and feeds the next Conv blocked: the values equal the
    /// NCHW graph's (the pool is exact; the convs round their sums in another order), for its
    /// own output read outside too, and the plan has one blocked MaxPool.
    #[test]
    fn nchwc_max_pool_matches_nchw(seed in any::<u64>(), n in 1usize..3, c in 1usize..20, m in 1usize..36,
                                   h in 1usize..12, wd in 1usize..12, k in proptest::array::uniform2(1usize..4),
                                   s in proptest::array::uniform2(1usize..3), d in proptest::array::uniform2(1usize..3),
                                   pads in proptest::array::uniform4(0usize..3), ceil in any::<bool>()) {
        let mut rng = StdRng::seed_from_u64(seed);
        let ext = [0, 1].map(|a| d[a] * (k[a] - 1) + 1);
        // Pads below the dilated kernel, so every window reaches the input.
        let pads: Vec<i64> = (0..4).map(|i| pads[i].min(ext[i % 2] - 1) as i64).collect();
        prop_assume!(h + pads[0] as usize + pads[2] as usize >= ext[0] && wd + pads[1] as usize + pads[3] as usize >= ext[1]);
        let i64s = |v: &[usize]| v.iter().map(|x| *x as i64).collect::<Vec<_>>();
        let conv1 = onnx::NodeProto {
            attribute: vec![attr::ints("pads", &[1, 1, 1, 1])],
            ..node("Conv", "c1", &["x", "w1", "b1"], &["a"])
        };
        let pool = onnx::NodeProto {
            attribute: vec![
                attr::ints("kernel_shape", &i64s(&k)),
                attr::ints("strides", &i64s(&s)),
                attr::ints("dilations", &i64s(&d)),
                attr::ints("pads", &pads),
                attr::int("ceil_mode", i64::from(ceil)),
            ],
            ..node("MaxPool", "mp", &["r"], &["p"])
        };
        let nodes = vec![conv1, node("Relu", "act", &["a"], &["r"]), pool, node("Conv", "c2", &["p", "w2", "b2"], &["y"])];
        let inits = [
            ("w1", random(&mut rng, &[m, c, 3, 3], 1.0)),
            ("b1", random(&mut rng, &[m], 0.5)),
            ("w2", random(&mut rng, &[m, m, 1, 1], 1.0)),
            ("b2", random(&mut rng, &[m], 0.5)),
        ];
        let xs = [n, c, h, wd];
        let g = onnx::GraphProto {
            name: Some("g".into()),
            node: nodes,
            input: vec![fixed_tensor_info("x", F32, &i64s(&xs))],
            output: vec![build::tensor_info("y", F32, []), build::tensor_info("p", F32, [])],
            initializer: inits.iter().map(|(n, t)| tensor_to_proto(n, t)).collect(),
            ..Default::default()
        };
        let md = Model::from_bytes(build::model(9, &[("", 20)], g).encode_to_vec()).unwrap_or_else(|e| panic!("{e}"));
        let x = random(&mut rng, &xs, 2.0);
        let (off, on, _, _) = both_at(&md, std::slice::from_ref(&x), OptLevel::All);
        for (o, f) in on.iter().zip(&off) {
            prop_assert_eq!(o.shape(), f.shape());
            ts::assert_close(&f32s(o), &f32s(f), 1e-4, 1e-4, "NCHWc MaxPool");
        }
        let g = &md.graph;
        let plan = compile_nodes(g, g.topo_order(), g.inputs(), g.outputs(), OptLevel::All).unwrap_or_else(|e| panic!("{e}"));
        let ops: Vec<&str> = plan.steps().map(|s| s.op()).collect();
        if !crate::kernels::conv::nchwc::available() {
            prop_assert!(!ops.iter().any(|o| o.starts_with("vinort.nchwc::")), "blocked ops at ISA {}: {:?}", crate::isa::level(), ops);
            return Ok(());
        }
        prop_assert_eq!(ops.iter().filter(|o| **o == "vinort.nchwc::MaxPool").count(), 1, "{:?}", ops);
        prop_assert!(!ops.contains(&"MaxPool"), "{:?}", ops);
    }
}

/// Relu and Clip fused into the NCHWc tiles keep NaN as the unfused ops do (`vmaxps` and
/// `vminps` return their second operand on NaN: with the operands swapped, a NaN pixel would
/// come out as the bound), for a regular and a depthwise conv.
#[test]
fn nchwc_fused_clamps_pass_nan() {
    let mut rng = StdRng::seed_from_u64(11);
    let (c, h) = (16, 5);
    let (relu, _) = activation(0, "p", "a");
    let (clip, bounds) = activation(2, "q", "y");
    let nodes = vec![
        node("Conv", "c1", &["x", "w1", "b1"], &["p"]),
        relu,
        onnx::NodeProto {
            attribute: vec![attr::ints("pads", &[1, 1, 1, 1]), attr::int("group", c as i64)],
            ..node("Conv", "c2", &["a", "w2", "b2"], &["q"])
        },
        onnx::NodeProto { name: Some("clip".into()), ..clip },
    ];
    let mut inits = vec![
        ("w1", random(&mut rng, &[c, c, 1, 1], 1.0)),
        ("b1", random(&mut rng, &[c], 0.5)),
        ("w2", random(&mut rng, &[c, 1, 3, 3], 1.0)),
        ("b2", random(&mut rng, &[c], 0.5)),
    ];
    inits.extend(bounds);
    let md = model(nodes, &[("x", &[1, c, h, h])], &[("y", &[1, c, h, h])], &inits);
    let mut x: Vec<f32> = f32s(&random(&mut rng, &[1, c, h, h], 2.0)).into_iter().map(|v| v as f32).collect();
    // One NaN pixel: every channel of it, and of its depthwise neighbours, is NaN.
    for ch in 0..c {
        x[ch * h * h + 2 * h + 2] = f32::NAN;
    }
    let x = Tensor::from_vec(&[1, c, h, h], x).unwrap_or_else(|e| panic!("{e}"));
    let (off, on, _, _) = both_at(&md, std::slice::from_ref(&x), OptLevel::All);
    let g = &md.graph;
    let plan =
        compile_nodes(g, g.topo_order(), g.inputs(), g.outputs(), OptLevel::All).unwrap_or_else(|e| panic!("{e}"));
    // Blocked where the ISA has the tiles (AVX2 up); NCHW (and the same values) below.
    let blocked = if crate::kernels::conv::nchwc::available() { 2 } else { 0 };
    let n = plan.steps().filter(|s| s.op() == "vinort.nchwc::Conv").count();
    assert_eq!(n, blocked, "blocked convs at ISA {}", crate::isa::level());
    let (on, off) = (f32s(&on[0]), f32s(&off[0]));
    let nans = off.iter().filter(|v| v.is_nan()).count();
    assert_eq!(nans, c * 9, "the unfused graph spreads the NaN to 3x3 pixels");
    for (i, (o, f)) in on.iter().zip(&off).enumerate() {
        assert_eq!(o.is_nan(), f.is_nan(), "element {i}: fused {o}, unfused {f}");
        if !f.is_nan() {
            assert!((o - f).abs() <= 1e-4 + 1e-4 * f.abs(), "element {i}: fused {o}, unfused {f}");
        }
    }
}

/// Geometries a proptest rarely draws, from a review of the NCHWc kernels: a stride larger than
/// the kernel, a pad wider than the kernel (stays NCHW), and a conv whose weights expect more
/// channels than its blocked input has (stays NCHW, and fails there by name).
#[test]
fn nchwc_edge_geometries_match_nchw() {
    let mut rng = StdRng::seed_from_u64(7);
    let conv = |name: &str, ins: &[&str], out: &str, attrs: Vec<onnx::AttributeProto>| onnx::NodeProto {
        attribute: attrs,
        ..node("Conv", name, ins, &[out])
    };
    // (input shape, first conv's attributes and weights, depthwise pads, output shape)
    type Case = ([usize; 4], Vec<onnx::AttributeProto>, [usize; 4], [i64; 4], [usize; 4]);
    let cases: [Case; 2] = [
        (
            [2, 17, 9, 11],
            vec![attr::ints("strides", &[5, 4]), attr::ints("pads", &[2, 1, 2, 0])],
            [20, 17, 3, 3],
            [1, 1, 1, 1],
            [2, 20, 5, 5],
        ),
        ([1, 3, 5, 5], vec![attr::ints("pads", &[2, 0, 0, 0])], [16, 3, 1, 1], [0, 0, 0, 0], [1, 16, 7, 5]),
    ];
    for (xs, attrs, ws, dpads, ys) in cases {
        let m = ws[0];
        let nodes = vec![
            conv("c1", &["x", "w1", "b1"], "a", attrs),
            conv(
                "c2",
                &["a", "w2", "b2"],
                "y",
                vec![attr::ints("pads", &dpads), attr::int("group", m as i64), attr::ints("kernel_shape", &[1, 1])],
            ),
        ];
        let inits = vec![
            ("w1", random(&mut rng, &ws, 1.0)),
            ("b1", random(&mut rng, &[m], 0.5)),
            ("w2", random(&mut rng, &[m, 1, 1, 1], 1.0)),
            ("b2", random(&mut rng, &[m], 0.5)),
        ];
        let md = model(nodes, &[("x", &xs)], &[("y", &ys)], &inits);
        let x = random(&mut rng, &xs, 2.0);
        let (off, on, _, _) = both_at(&md, std::slice::from_ref(&x), OptLevel::All);
        assert_eq!(on[0].shape(), ys);
        ts::assert_close(&f32s(&on[0]), &f32s(&off[0]), 1e-4, 1e-4, "NCHWc edge geometry");
    }
    // 20 channels made, 24 expected: neither conv may read padding lanes as channels.
    let nodes = vec![conv("c1", &["x", "w1"], "a", vec![]), conv("c2", &["a", "w2"], "y", vec![])];
    let inits = vec![("w1", random(&mut rng, &[20, 4, 1, 1], 1.0)), ("w2", random(&mut rng, &[8, 24, 1, 1], 1.0))];
    let md = model(nodes, &[("x", &[1, 4, 3, 3])], &[("y", &[1, 8, 3, 3])], &inits);
    let g = &md.graph;
    let plan =
        compile_nodes(g, g.topo_order(), g.inputs(), g.outputs(), OptLevel::All).unwrap_or_else(|e| panic!("{e}"));
    let x = Value::Tensor(random(&mut rng, &[1, 4, 3, 3], 1.0));
    let err = plan.run(&[&x], &RunContext::default()).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("channel"), "expected a channel mismatch, got {err:?}");
}
