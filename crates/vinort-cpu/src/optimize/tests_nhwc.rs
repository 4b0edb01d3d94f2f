//! The int8 layout pass ([`super::nhwc`]): a QDQ-style chain of QLinearConvs, residual
//! DequantizeLinear → Add → QuantizeLinear and a side branch runs channels-last with the
//! optimizer at `All` and gives the very bytes of the graph as written.

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vinort_ir::proto::build::{self, attr, fixed_tensor_info, node};
use vinort_ir::proto::onnx;
use vinort_ir::proto::prost::Message;
use vinort_ir::tensor_proto::tensor_to_proto;
use vinort_ir::{DType, Model, RunContext, Tensor, Value};

use super::OptLevel;
use crate::provider::compile_nodes;
use crate::test_support as ts;

/// Random int8 data of `shape`, signed or not (shared with `tests_qdq`).
pub(super) fn int8(rng: &mut StdRng, signed: bool, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<u8> = (0..n).map(|_| rng.random()).collect();
    if signed {
        Tensor::from_vec(shape, v.into_iter().map(|b| b as i8).collect::<Vec<_>>())
    } else {
        Tensor::from_vec(shape, v)
    }
    .unwrap_or_else(|e| panic!("{e}"))
}

fn scalar_zp(rng: &mut StdRng, signed: bool) -> Tensor {
    int8(rng, signed, &[1]).reshaped(&[]).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs the model's graph at `level`; returns the outputs and the plan's ops (shared with
/// `tests_qdq`).
pub(super) fn run(md: &Model, x: &Tensor, level: OptLevel) -> (Vec<Tensor>, Vec<String>) {
    let g = &md.graph;
    let plan = compile_nodes(g, g.topo_order(), g.inputs(), g.outputs(), level).unwrap_or_else(|e| panic!("{e}"));
    let ops = plan.steps().map(|s| s.op().to_string()).collect();
    let xv = Value::Tensor(x.clone());
    let out = plan.run(&[&xv], &RunContext::default()).unwrap_or_else(|e| panic!("{level:?}: {e}"));
    (out.into_iter().map(|v| v.into_tensor().unwrap_or_else(|e| panic!("{e}"))).collect(), ops)
}

proptest! {
    #![proptest_config(ts::config(48))]

    /// x → conv1 (any window) → a; a → depthwise 3x3 → 1x1 → r; DQ(a) + DQ(r) → Q → y; and a
    /// depthwise conv of `a` with its own window → v. Outputs y, a and v, so `a` leaves the
    /// layout too. Every conv moves, the residual (a QLinearAdd once fused) moves with them,
    /// and the plan has one Transpose in (x) and one out per output.
    #[test]
    fn qlinearconv_chains_run_channels_last_unchanged(
        seed in any::<u64>(), n in 1usize..3, c in 1usize..20, m in 1usize..70, k in 1usize..4, s in 1usize..3,
        d in 1usize..3, pads in proptest::array::uniform4(0usize..3), h in 0usize..9, wd in 0usize..9,
        dk in 1usize..5, ds in 1usize..3, signed in proptest::array::uniform2(any::<bool>()),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let (act, wt) = (signed[0], signed[1]);
        let elem = if act { 3 } else { 2 };
        let reach = d * (k - 1) + 1;
        let (h, wd) = ((reach + h).saturating_sub(pads[0] + pads[2]).max(1), (reach + wd).saturating_sub(pads[1] + pads[3]).max(1));
        let out = |i: usize, p: usize| (i + p - reach) / s + 1;
        let (oh, ow) = (out(h, pads[0] + pads[2]), out(wd, pads[1] + pads[3]));
        let i64s = |v: &[usize]| v.iter().map(|x| *x as i64).collect::<Vec<_>>();
        let window = |k: usize, s: usize, d: usize, pads: &[usize], group: usize| {
            vec![
                attr::ints("kernel_shape", &[k as i64, k as i64]),
                attr::ints("strides", &[s as i64, s as i64]),
                attr::ints("dilations", &[d as i64, d as i64]),
                attr::ints("pads", &i64s(pads)),
                attr::int("group", group as i64),
            ]
        };
        // QLinearConv `name` of `x` by weights `w{name}`, scales and zero points of its own.
        let conv = |name: &str, x: &str, y: &str, attrs: Vec<onnx::AttributeProto>| {
            let i = |s: &str| format!("{name}_{s}");
            let ins = [x.to_string(), "xs".into(), "xz".into(), i("w"), i("ws"), i("wz"), i("ys"), "xz".into(), i("b")];
            let ins: Vec<&str> = ins.iter().map(String::as_str).collect();
            onnx::NodeProto { attribute: attrs, ..node("QLinearConv", name, &ins, &[y]) }
        };
        let dpads = [dk / 2; 4];
        let (dh, dw) = ((oh + 2 * (dk / 2) - dk) / ds + 1, (ow + 2 * (dk / 2) - dk) / ds + 1);
        let nodes = vec![
            conv("c1", "x", "a", window(k, s, d, &pads, 1)),
            conv("c2", "a", "p", window(3, 1, 1, &[1; 4], m)),
            conv("c3", "p", "r", window(1, 1, 1, &[0; 4], 1)),
            node("DequantizeLinear", "dqa", &["a", "xs", "xz"], &["af"]),
            node("DequantizeLinear", "dqr", &["r", "xs", "xz"], &["rf"]),
            node("Add", "add", &["af", "rf"], &["sum"]),
            node("QuantizeLinear", "q", &["sum", "ys", "xz"], &["y"]),
            conv("c4", "a", "v", window(dk, ds, 1, &dpads, m)),
        ];
        let mut inits: Vec<(String, Tensor)> = vec![
            ("xs".into(), Tensor::scalar(rng.random_range(0.01f32..0.05))),
            ("xz".into(), scalar_zp(&mut rng, act)),
            ("ys".into(), Tensor::scalar(rng.random_range(0.02f32..0.1))),
        ];
        for (name, cin, cg, kk) in [("c1", c, c, k), ("c2", m, 1, 3), ("c3", m, m, 1), ("c4", m, 1, dk)] {
            let _ = cin;
            let w = int8(&mut rng, wt, &[m, cg, kk, kk]);
            let ws: Vec<f32> = (0..m).map(|_| rng.random_range(0.002f32..0.02)).collect();
            let b: Vec<i32> = (0..m).map(|_| rng.random_range(-3000..3000)).collect();
            inits.push((format!("{name}_w"), w));
            inits.push((format!("{name}_ws"), Tensor::from_vec(&[m], ws).unwrap_or_else(|e| panic!("{e}"))));
            inits.push((format!("{name}_wz"), int8(&mut rng, wt, &[m])));
            inits.push((format!("{name}_ys"), Tensor::scalar(rng.random_range(0.05f32..0.3))));
            inits.push((format!("{name}_b"), Tensor::from_vec(&[m], b).unwrap_or_else(|e| panic!("{e}"))));
        }
        let shape = |s: [usize; 4]| s.map(|v| v as i64);
        let g = onnx::GraphProto {
            name: Some("g".into()),
            node: nodes,
            input: vec![fixed_tensor_info("x", elem, &shape([n, c, h, wd]))],
            output: vec![
                fixed_tensor_info("y", elem, &shape([n, m, oh, ow])),
                fixed_tensor_info("a", elem, &shape([n, m, oh, ow])),
                fixed_tensor_info("v", elem, &shape([n, m, dh, dw])),
            ],
            initializer: inits.iter().map(|(n, t)| tensor_to_proto(n, t)).collect(),
            ..Default::default()
        };
        let md = Model::from_bytes(build::model(9, &[("", 21)], g).encode_to_vec()).unwrap_or_else(|e| panic!("{e}"));
        let x = int8(&mut rng, act, &[n, c, h, wd]);
        // Against the same graph with the fusions but without the layout pass: the layout
        // changes no value (the QDQ fusions may, by a step; `tests_qdq` bounds them).
        let (want, _) = run(&md, &x, OptLevel::Extended);
        let (got, ops) = run(&md, &x, OptLevel::All);
        prop_assert_eq!(want.len(), 3);
        for (g, w) in got.iter().zip(&want) {
            prop_assert_eq!(g.dtype(), if act { DType::I8 } else { DType::U8 });
            prop_assert_eq!(g.shape(), w.shape());
            prop_assert_eq!(g.as_bytes(), w.as_bytes());
        }
        let count = |op: &str| ops.iter().filter(|o| *o == op).count();
        prop_assert_eq!(count("com.microsoft::QLinearConv"), 4, "{:?}", ops);
        prop_assert_eq!(count("com.microsoft::QLinearAdd"), 1, "{:?}", ops);
        prop_assert_eq!(count("Transpose"), 4, "{:?}", ops);
        prop_assert_eq!(count("QLinearConv"), 0, "{:?}", ops);
    }
}

/// A moved value read as an elementwise op's scalar operand (Clip's min here) keeps that op in
/// NCHW: only data operands are redirected to the channels-last form, so moving it would leave
/// its min unproduced.
#[test]
fn moved_value_as_a_scalar_operand_stays_readable() {
    let mut rng = StdRng::seed_from_u64(7);
    let nodes = vec![
        node("QLinearConv", "c", &["x", "xs", "xz", "w", "ws", "wz", "ys", "xz"], &["a"]),
        node("DequantizeLinear", "dq", &["a", "ys", "xz"], &["z"]),
        node("Clip", "clip", &["z", "z"], &["y"]),
    ];
    let inits: Vec<(&str, Tensor)> = vec![
        ("xs", Tensor::scalar(0.02f32)),
        ("xz", Tensor::scalar(128u8)),
        ("w", int8(&mut rng, true, &[1, 2, 1, 1])),
        ("ws", Tensor::scalar(0.01f32)),
        ("wz", Tensor::scalar(0i8)),
        ("ys", Tensor::scalar(0.05f32)),
    ];
    let g = onnx::GraphProto {
        name: Some("g".into()),
        node: nodes,
        input: vec![fixed_tensor_info("x", 2, &[1, 2, 1, 1])],
        output: vec![fixed_tensor_info("y", 1, &[1, 1, 1, 1])],
        initializer: inits.iter().map(|(n, t)| tensor_to_proto(n, t)).collect(),
        ..Default::default()
    };
    let md = Model::from_bytes(build::model(9, &[("", 21)], g).encode_to_vec()).unwrap_or_else(|e| panic!("{e}"));
    let x = int8(&mut rng, false, &[1, 2, 1, 1]);
    let (want, _) = run(&md, &x, OptLevel::Disabled);
    let (got, ops) = run(&md, &x, OptLevel::All);
    assert_eq!(got[0].as_bytes(), want[0].as_bytes());
    assert!(ops.iter().any(|o| o == "com.microsoft::QLinearConv"), "{ops:?}");
    assert!(ops.iter().any(|o| o == "Clip"), "{ops:?}");
}
