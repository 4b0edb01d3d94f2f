//! The QDQ fusions against the unfused graph: the matrix product ([`super::qdq::qdq_matmul`])
//! agrees with the float product of the dequantized operands within f32 rounding of the sum,
//! the addition ([`super::qdq::qdq_add`]) within one quantization step, and the plan runs each
//! as one integer kernel.

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vinort_ir::proto::build::{self, attr, fixed_tensor_info, node};
use vinort_ir::proto::onnx;
use vinort_ir::proto::prost::Message;
use vinort_ir::tensor_proto::tensor_to_proto;
use vinort_ir::{DType, Model, Tensor};

use super::OptLevel;
use super::tests_nhwc::{int8, run};
use crate::test_support as ts;

fn zero(signed: bool, n: usize, rng: &mut StdRng) -> Tensor {
    let t = if signed {
        Tensor::from_vec(&[n], (0..n).map(|_| rng.random_range(-3i8..4)).collect::<Vec<_>>())
    } else {
        Tensor::from_vec(&[n], (0..n).map(|_| rng.random_range(120u8..136)).collect::<Vec<_>>())
    };
    t.unwrap_or_else(|e| panic!("{e}"))
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.as_slice::<f32>().unwrap_or_else(|e| panic!("{e}")).to_vec()
}

proptest! {
    #![proptest_config(ts::config(32))]

    /// `DequantizeLinear → MatMul / Gemm` by constant int8 weights (per tensor or per column,
    /// with or without zero points, Gemm with `transB` and a float or int32-dequantized bias,
    /// then an optional Relu) equals the float graph within f32 rounding of the sum, and runs
    /// as one MatMulInteger (the Relu fused into it).
    #[test]
    fn qdq_matmul_becomes_an_integer_product(seed in any::<u64>(), kind in 0usize..4, a_signed in any::<bool>(),
                                             w_signed in any::<bool>(), per_col in any::<bool>(), zps in any::<bool>(),
                                             relu in any::<bool>(), m in 1usize..9, k in 1usize..40, n in 1usize..40) {
        let mut rng = StdRng::seed_from_u64(seed);
        let gemm = kind >= 2;
        let trans_b = kind == 2;
        // MatMul takes a 3-D A ([2, m, k]); Gemm a 2-D one.
        let a_shape: Vec<usize> = if gemm { vec![m, k] } else { vec![2, m, k] };
        let y_shape: Vec<usize> = if gemm { vec![m, n] } else { vec![2, m, n] };
        let w_shape = if trans_b { [n, k] } else { [k, n] };
        let scales = |rng: &mut StdRng, len: usize| -> Vec<f32> { (0..len).map(|_| rng.random_range(0.001f32..0.05)).collect() };
        let wlen = if per_col { n } else { 1 };
        let mut inits = vec![
            ("as", Tensor::scalar(rng.random_range(0.005f32..0.05))),
            ("wq", int8(&mut rng, w_signed, &w_shape)),
            ("ws", Tensor::from_vec(&[wlen], scales(&mut rng, wlen)).unwrap_or_else(|e| panic!("{e}"))),
        ];
        let mut dqa = vec!["aq", "as"];
        let mut dqw = vec!["wq", "ws"];
        if zps {
            inits.push(("az", zero(a_signed, 1, &mut rng).reshaped(&[]).unwrap_or_else(|e| panic!("{e}"))));
            inits.push(("wz", zero(w_signed, wlen, &mut rng)));
            dqa.push("az");
            dqw.push("wz");
        }
        // The weights' per-column axis: 1 for [K, N], 0 for Gemm's transposed [N, K].
        let axis = if trans_b { 0 } else { 1 };
        let mut nodes = vec![
            node("DequantizeLinear", "dqa", &dqa, &["a"]),
            onnx::NodeProto { attribute: vec![attr::int("axis", axis)], ..node("DequantizeLinear", "dqw", &dqw, &["w"]) },
        ];
        let prod = if relu { "p" } else { "y" };
        if gemm {
            let bias_from_int = kind == 2;
            if bias_from_int {
                let bq: Vec<i32> = (0..n).map(|_| rng.random_range(-3000..3000)).collect();
                inits.push(("bq", Tensor::from_vec(&[n], bq).unwrap_or_else(|e| panic!("{e}"))));
                inits.push(("bs", Tensor::scalar(0.0004f32)));
                nodes.push(node("DequantizeLinear", "dqb", &["bq", "bs"], &["b"]));
            } else {
                let b: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
                inits.push(("b", Tensor::from_vec(&[1, n], b).unwrap_or_else(|e| panic!("{e}"))));
            }
            nodes.push(onnx::NodeProto {
                attribute: vec![attr::int("transB", i64::from(trans_b))],
                ..node("Gemm", "gemm", &["a", "w", "b"], &[prod])
            });
        } else {
            nodes.push(node("MatMul", "mm", &["a", "w"], &[prod]));
        }
        if relu {
            nodes.push(node("Relu", "relu", &["p"], &["y"]));
        }
        let elem = |signed: bool| if signed { 3 } else { 2 };
        let dims: Vec<i64> = a_shape.iter().map(|d| *d as i64).collect();
        let g = onnx::GraphProto {
            name: Some("g".into()),
            node: nodes,
            input: vec![fixed_tensor_info("aq", elem(a_signed), &dims)],
            output: vec![build::tensor_info("y", 1, [])],
            initializer: inits.iter().map(|(n, t)| tensor_to_proto(n, t)).collect(),
            ..Default::default()
        };
        let md = Model::from_bytes(build::model(9, &[("", 21)], g).encode_to_vec()).unwrap_or_else(|e| panic!("{e}"));
        let x = int8(&mut rng, a_signed, &a_shape);
        let (off, _) = run(&md, &x, OptLevel::Disabled);
        let (on, ops) = run(&md, &x, OptLevel::Extended);
        prop_assert_eq!(ops, vec!["MatMulInteger".to_owned()], "one integer kernel");
        prop_assert_eq!(on[0].shape(), y_shape.as_slice());
        prop_assert_eq!(on[0].dtype(), DType::F32);
        // Bound: the sum of |terms| (each below 255 · 255 · scales) times a few f32 ulps.
        let bound = k as f32 * 255.0 * 255.0 * 0.05 * 0.05 * 4.0 * f32::EPSILON + 1e-6;
        for (i, (f, u)) in f32s(&on[0]).iter().zip(f32s(&off[0])).enumerate() {
            prop_assert!((f - u).abs() <= bound + 4.0 * f32::EPSILON * u.abs(), "element {}: fused {} unfused {}", i, f, u);
        }
    }
}

/// Products the fusion must leave alone run as written: an activation quantized per column
/// (its scale does not factor out of the sum), and weights quantized along K.
#[test]
fn qdq_matmul_leaves_what_does_not_factor() {
    let mut rng = StdRng::seed_from_u64(5);
    let (m, k, n) = (3, 8, 5);
    for (a_len, w_axis, w_len) in [(k, 1, 1), (1, 0, k)] {
        let inits = [
            ("as", Tensor::from_vec(&[a_len], vec![0.02f32; a_len]).unwrap_or_else(|e| panic!("{e}"))),
            ("wq", int8(&mut rng, true, &[k, n])),
            ("ws", Tensor::from_vec(&[w_len], vec![0.01f32; w_len]).unwrap_or_else(|e| panic!("{e}"))),
        ];
        let nodes = vec![
            onnx::NodeProto {
                attribute: vec![attr::int("axis", 1)],
                ..node("DequantizeLinear", "dqa", &["aq", "as"], &["a"])
            },
            onnx::NodeProto {
                attribute: vec![attr::int("axis", w_axis)],
                ..node("DequantizeLinear", "dqw", &["wq", "ws"], &["w"])
            },
            node("MatMul", "mm", &["a", "w"], &["y"]),
        ];
        let g = onnx::GraphProto {
            name: Some("g".into()),
            node: nodes,
            input: vec![fixed_tensor_info("aq", 2, &[m as i64, k as i64])],
            output: vec![build::tensor_info("y", 1, [])],
            initializer: inits.iter().map(|(n, t)| tensor_to_proto(n, t)).collect(),
            ..Default::default()
        };
        let md = Model::from_bytes(build::model(9, &[("", 21)], g).encode_to_vec()).unwrap_or_else(|e| panic!("{e}"));
        let x = int8(&mut rng, false, &[m, k]);
        let (on, ops) = run(&md, &x, OptLevel::Extended);
        assert!(!ops.iter().any(|o| o == "MatMulInteger"), "a_scale of {a_len}, w axis {w_axis}: {ops:?}");
        let (off, _) = run(&md, &x, OptLevel::Disabled);
        assert_eq!(f32s(&on[0]), f32s(&off[0]));
    }
}

proptest! {
    #![proptest_config(ts::config(32))]

    /// `Add(DequantizeLinear(x), DequantizeLinear(c)) → QuantizeLinear` (c a constant of the
    /// same shape or broadcast per channel, zero points present or not, u8 or i8) runs as one
    /// QLinearAdd whose bytes are within one step of the float graph's, and equal to it on most
    /// elements (a step only where the float sum sat next to a rounding boundary).
    #[test]
    fn qdq_add_becomes_qlinear_add(seed in any::<u64>(), signed in any::<bool>(), zps in any::<bool>(),
                                   per_channel_b in any::<bool>(), c in 1usize..6, hw in 1usize..9) {
        let mut rng = StdRng::seed_from_u64(seed);
        let shape = [1, c, hw, hw];
        let b_shape: Vec<usize> = if per_channel_b { vec![1, c, 1, 1] } else { shape.to_vec() };
        let mut inits = vec![
            ("as", Tensor::scalar(rng.random_range(0.005f32..0.05))),
            ("bq", int8(&mut rng, signed, &b_shape)),
            ("bs", Tensor::scalar(rng.random_range(0.005f32..0.05))),
            ("ys", Tensor::scalar(rng.random_range(0.01f32..0.1))),
            ("yz", zero(signed, 1, &mut rng).reshaped(&[]).unwrap_or_else(|e| panic!("{e}"))),
        ];
        let (mut dqa, mut dqb) = (vec!["x", "as"], vec!["bq", "bs"]);
        if zps {
            inits.push(("az", zero(signed, 1, &mut rng).reshaped(&[]).unwrap_or_else(|e| panic!("{e}"))));
            inits.push(("bz", zero(signed, 1, &mut rng).reshaped(&[]).unwrap_or_else(|e| panic!("{e}"))));
            dqa.push("az");
            dqb.push("bz");
        }
        let nodes = vec![
            node("DequantizeLinear", "dqa", &dqa, &["a"]),
            node("DequantizeLinear", "dqb", &dqb, &["b"]),
            node("Add", "add", &["a", "b"], &["s"]),
            node("QuantizeLinear", "q", &["s", "ys", "yz"], &["y"]),
        ];
        let elem = if signed { 3 } else { 2 };
        let dims: Vec<i64> = shape.iter().map(|d| *d as i64).collect();
        let g = onnx::GraphProto {
            name: Some("g".into()),
            node: nodes,
            input: vec![fixed_tensor_info("x", elem, &dims)],
            output: vec![fixed_tensor_info("y", elem, &dims)],
            initializer: inits.iter().map(|(n, t)| tensor_to_proto(n, t)).collect(),
            ..Default::default()
        };
        let md = Model::from_bytes(build::model(9, &[("", 21)], g).encode_to_vec()).unwrap_or_else(|e| panic!("{e}"));
        let x = int8(&mut rng, signed, &shape);
        let (off, _) = run(&md, &x, OptLevel::Disabled);
        let (on, ops) = run(&md, &x, OptLevel::Extended);
        prop_assert_eq!(ops, vec!["com.microsoft::QLinearAdd".to_owned()], "one integer kernel");
        prop_assert_eq!(on[0].dtype(), off[0].dtype());
        let v = |t: &Tensor| -> Vec<i32> {
            if signed { t.as_slice::<i8>().unwrap_or_default().iter().map(|x| i32::from(*x)).collect() }
            else { t.as_slice::<u8>().unwrap_or_default().iter().map(|x| i32::from(*x)).collect() }
        };
        let (a, b) = (v(&on[0]), v(&off[0]));
        prop_assert_eq!(a.len(), b.len());
        prop_assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() <= 1), "more than a step apart");
        let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
        prop_assert!(same * 10 >= a.len() * 9, "{} of {} equal", same, a.len());
    }
}

/// An Add whose dequantizations are per channel (QLinearAdd takes scalars only) stays float.
#[test]
fn qdq_add_leaves_per_channel_scales() {
    let mut rng = StdRng::seed_from_u64(3);
    let inits = [
        ("as", Tensor::from_vec(&[2], vec![0.02f32, 0.03]).unwrap_or_else(|e| panic!("{e}"))),
        ("bq", int8(&mut rng, false, &[1, 2, 2, 2])),
        ("bs", Tensor::scalar(0.02f32)),
        ("ys", Tensor::scalar(0.05f32)),
        ("yz", Tensor::scalar(128u8)),
    ];
    let nodes = vec![
        onnx::NodeProto {
            attribute: vec![attr::int("axis", 1)],
            ..node("DequantizeLinear", "dqa", &["x", "as"], &["a"])
        },
        node("DequantizeLinear", "dqb", &["bq", "bs"], &["b"]),
        node("Add", "add", &["a", "b"], &["s"]),
        node("QuantizeLinear", "q", &["s", "ys", "yz"], &["y"]),
    ];
    let g = onnx::GraphProto {
        name: Some("g".into()),
        node: nodes,
        input: vec![fixed_tensor_info("x", 2, &[1, 2, 2, 2])],
        output: vec![fixed_tensor_info("y", 2, &[1, 2, 2, 2])],
        initializer: inits.iter().map(|(n, t)| tensor_to_proto(n, t)).collect(),
        ..Default::default()
    };
    let md = Model::from_bytes(build::model(9, &[("", 21)], g).encode_to_vec()).unwrap_or_else(|e| panic!("{e}"));
    let x = int8(&mut rng, false, &[1, 2, 2, 2]);
    let (off, _) = run(&md, &x, OptLevel::Disabled);
    let (on, ops) = run(&md, &x, OptLevel::Extended);
    assert!(ops.iter().any(|o| o == "Add") && !ops.iter().any(|o| o.contains("QLinearAdd")), "{ops:?}");
    assert_eq!(on[0].as_bytes(), off[0].as_bytes());
}
