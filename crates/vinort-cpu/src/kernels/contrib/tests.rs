//! The contrib kernels against onnxruntime 1.31.1 (one-node models run on its CPU provider with
//! graph optimizations off; the expected values are pasted from its outputs), and, for the ops
//! ONNX Runtime implements only on GPUs (BiasAdd, BiasSplitGelu, BiasSoftmax, GroupNorm,
//! GemmFastGelu), against numpy references computed from the documentation. Inputs are
//! `seq` data, built identically on the Python side.

use vinort_ir::{Attr, DType, Node, Tensor};

use crate::test_support::{self as ts, assert_close, tensor};

/// `((i·k + 5) mod 19 − 9) / scale`: small, varied, sign-mixed test data.
fn seq(n: usize, k: usize, scale: f64) -> Vec<f64> {
    (0..n).map(|i| ((i * k + 5) % 19) as f64 - 9.0).map(|v| v / scale).collect()
}

fn t(dtype: DType, shape: &[usize], k: usize) -> Tensor {
    tensor(dtype, shape, &seq(shape.iter().product(), k, 6.0))
}

fn f(shape: &[usize], k: usize) -> Option<Tensor> {
    Some(t(DType::F32, shape, k))
}

fn ints(shape: &[usize], v: &[i32]) -> Option<Tensor> {
    Some(ts::tensor_of(shape, v))
}

fn node(
    domain: &str,
    op: &str,
    opset: i64,
    inputs: &[Option<Tensor>],
    outputs: &[bool],
    attrs: Vec<(&str, Attr)>,
) -> Node {
    let present: Vec<bool> = inputs.iter().map(Option::is_some).collect();
    ts::op(op, opset).domain(domain).input_mask(&present).output_mask(outputs).attrs(attrs).build()
}

fn ms(op: &str, inputs: &[Option<Tensor>], outputs: &[bool], attrs: Vec<(&str, Attr)>) -> Node {
    node("com.microsoft", op, 1, inputs, outputs, attrs)
}

/// Runs the node and checks each requested output against `want` (f32 tolerance by default).
#[track_caller]
fn check(n: &Node, inputs: &[Option<Tensor>], want: &[(usize, &[f64])], tol: f64) -> Vec<Tensor> {
    let got = ts::run_node(n, inputs).unwrap_or_else(|e| panic!("{}: {e}", n.op_type));
    for (i, w) in want {
        assert_close(&got[*i].to_f64_vec().unwrap(), w, tol, tol, &format!("{} output {i}", n.op_type));
    }
    got
}

include!("tests_expected.rs");

const F32: f64 = 2e-6;

#[test]
fn skip_layer_norm_with_every_input_and_output() {
    let ins = [f(&[2, 3, 4], 7), f(&[3, 4], 5), f(&[4], 3), f(&[4], 11), f(&[4], 13)];
    let n = ms("SkipLayerNormalization", &ins, &[true; 4], vec![]);
    let got = check(&n, &ins, &[(0, SKIP_Y), (1, SKIP_MEAN), (2, SKIP_INV), (3, SKIP_SUM)], F32);
    assert_eq!(got[1].shape(), [2, 3, 1]);
    assert_eq!(got[2].dtype(), DType::F32);
}

#[test]
fn skip_layer_norm_f16_without_beta_and_bias() {
    let h = |s: &[usize], k| Some(t(DType::F16, s, k));
    let ins = [h(&[2, 3, 4], 7), h(&[2, 3, 4], 5), h(&[4], 3)];
    let n = ms("SkipLayerNormalization", &ins, &[true], vec![("epsilon", Attr::Float(1e-5))]);
    let got = check(&n, &ins, &[(0, SKIP_F16_Y)], 2e-3);
    assert_eq!(got[0].dtype(), DType::F16);
}

#[test]
fn skip_simplified_layer_norm_adds_its_bias() {
    let ins = [f(&[2, 3, 4], 7), f(&[3, 4], 5), f(&[4], 3), f(&[4], 13)];
    let n =
        ms("SkipSimplifiedLayerNormalization", &ins, &[true, false, true, true], vec![("epsilon", Attr::Float(1e-5))]);
    check(&n, &ins, &[(0, SSKIP_Y), (2, SSKIP_INV), (3, SSKIP_SUM)], F32);
}

#[test]
fn simplified_and_pre17_layer_norm_in_the_default_domain() {
    let ins = [f(&[2, 5], 7), f(&[5], 3)];
    let n = node("", "SimplifiedLayerNormalization", 13, &ins, &[true, true], vec![]);
    let got = check(&n, &ins, &[(0, SLN_Y), (1, SLN_INV)], F32);
    assert_eq!(got[1].shape(), [2, 1]);
    let ins = [f(&[2, 3, 4], 7), f(&[3, 4], 3), f(&[3, 4], 11)];
    let n = node("", "LayerNormalization", 13, &ins, &[true; 3], vec![("axis", Attr::Int(1))]);
    check(&n, &ins, &[(0, LN13_Y), (1, LN13_MEAN), (2, LN13_INV)], F32);
}

#[test]
fn gelu_family() {
    let x = Some(tensor(DType::F32, &[2, 5], &seq(10, 7, 3.0)));
    let b = f(&[5], 3);
    let one = |op: &str, ins: &[Option<Tensor>], want: &[f64], tol: f64| {
        check(&ms(op, ins, &[true], vec![]), ins, &[(0, want)], tol);
    };
    one("Gelu", std::slice::from_ref(&x), GELU, F32);
    one("BiasGelu", &[x.clone(), b.clone()], BIAS_GELU, F32);
    one("FastGelu", std::slice::from_ref(&x), FAST_GELU, F32);
    one("FastGelu", &[x.clone(), b.clone()], FAST_GELU_BIAS, F32);
    let h = |t: &Option<Tensor>| t.as_ref().map(|t| tensor(DType::F16, t.shape(), &t.to_f64_vec().unwrap()));
    one("FastGelu", &[h(&x), h(&b)], FAST_GELU_F16, 2e-3);
}

#[test]
fn bias_ops_follow_the_documentation() {
    let ins = [f(&[2, 2, 4], 7), f(&[4], 3), f(&[2, 2, 4], 5)];
    check(&ms("BiasAdd", &ins, &[true], vec![]), &ins, &[(0, BIAS_ADD)], F32);
    let ins = [f(&[2, 2, 4], 7), f(&[4], 3)];
    let got = check(&ms("BiasSplitGelu", &ins, &[true], vec![]), &ins, &[(0, BIAS_SPLIT_GELU)], F32);
    assert_eq!(got[0].shape(), [2, 2, 2]);
    let ins = [f(&[2, 2, 3], 7), f(&[2, 1, 3], 5)];
    for (axis, want) in [(2, BIAS_SOFTMAX_AX2), (1, BIAS_SOFTMAX_AX1)] {
        let attrs = vec![("axis", Attr::Int(axis)), ("is_inner_broadcast", Attr::Int(1))];
        check(&ms("BiasSoftmax", &ins, &[true], attrs), &ins, &[(0, want)], F32);
    }
}

#[test]
fn group_norm_nhwc_with_silu_and_nchw() {
    let attrs = |silu: i64, last: i64| {
        vec![("groups", Attr::Int(2)), ("activation", Attr::Int(silu)), ("channels_last", Attr::Int(last))]
    };
    let ins = [f(&[1, 2, 2, 4], 7), f(&[4], 3), f(&[4], 11)];
    check(&ms("GroupNorm", &ins, &[true], attrs(1, 1)), &ins, &[(0, GROUP_NORM_SILU)], F32);
    let ins = [f(&[1, 4, 2, 2], 7), f(&[4], 3), f(&[4], 11)];
    check(&ms("GroupNorm", &ins, &[true], attrs(0, 0)), &ins, &[(0, GROUP_NORM_NCHW)], F32);
}

#[test]
fn embed_layer_norm_with_segments_and_mask() {
    let ins = [
        ints(&[2, 3], &[1, 3, 0, 2, 2, 4]),
        ints(&[2, 3], &[0, 1, 1, 1, 0, 0]),
        f(&[5, 4], 7),
        f(&[6, 4], 5),
        f(&[2, 4], 3),
        f(&[4], 11),
        f(&[4], 13),
        ints(&[2, 3], &[1, 1, 0, 1, 1, 1]),
    ];
    let got = check(&ms("EmbedLayerNormalization", &ins, &[true; 3], vec![]), &ins, &[(0, EMB_Y), (2, EMB_SUM)], F32);
    assert_eq!(got[1].to_f64_vec().unwrap(), EMB_MASK);
    assert_eq!(got[1].dtype(), DType::I32);
    // No segments, no mask, position ids shared by the batch.
    let ins = [
        ints(&[2, 3], &[1, 3, 0, 2, 2, 4]),
        None,
        f(&[5, 4], 7),
        f(&[6, 4], 5),
        None,
        f(&[4], 11),
        f(&[4], 13),
        None,
        ints(&[1, 3], &[2, 0, 1]),
    ];
    let n = ms("EmbedLayerNormalization", &ins, &[true, true], vec![("epsilon", Attr::Float(1e-5))]);
    check(&n, &ins, &[(0, EMB_POS_Y)], F32);
}

#[test]
fn fused_matmul_transposes_batches() {
    let ins = [f(&[2, 3, 2, 4], 7), f(&[4, 3, 2, 5], 5)];
    let attrs = vec![("transBatchA", Attr::Int(1)), ("transBatchB", Attr::Int(1)), ("alpha", Attr::Float(0.5))];
    let got = check(&ms("FusedMatMul", &ins, &[true], attrs), &ins, &[(0, FMM)], F32);
    assert_eq!(got[0].shape(), [3, 2, 2, 5]);
    let ins = [Some(t(DType::F16, &[3, 4], 7)), Some(t(DType::F16, &[5, 4], 5))];
    let attrs = vec![("transB", Attr::Int(1)), ("alpha", Attr::Float(2.0))];
    check(&ms("FusedMatMul", &ins, &[true], attrs), &ins, &[(0, FMM_F16)], 2e-3);
}

#[test]
fn fused_gemm_activations() {
    let ins = [f(&[3, 4], 7), f(&[5, 4], 5), f(&[5], 3)];
    let attrs = vec![
        ("transB", Attr::Int(1)),
        ("alpha", Attr::Float(0.5)),
        ("beta", Attr::Float(2.0)),
        ("activation", Attr::String("LeakyRelu".into())),
        ("activation_alpha", Attr::Float(0.1)),
    ];
    check(&ms("FusedGemm", &ins, &[true], attrs), &ins, &[(0, FGEMM_LEAKY)], F32);
    let ins = [f(&[3, 4], 7), f(&[5, 4], 5)];
    for (act, params, want) in [
        ("HardSigmoid", [("activation_alpha", 0.3f32), ("activation_beta", 0.4)], FGEMM_HSIG),
        ("Selu", [("activation_alpha", 1.5), ("activation_gamma", 1.1)], FGEMM_SELU),
    ] {
        let mut attrs = vec![("transB", Attr::Int(1)), ("activation", Attr::String(act.into()))];
        attrs.extend(params.iter().map(|(k, v)| (*k, Attr::Float(*v))));
        check(&ms("FusedGemm", &ins, &[true], attrs), &ins, &[(0, want)], F32);
    }
}

#[test]
fn fused_conv_with_z_and_clip() {
    let ins = [f(&[1, 2, 4, 4], 7), f(&[3, 2, 3, 3], 5), f(&[3], 3), f(&[1, 3, 2, 2], 11)];
    let attrs = vec![("activation", Attr::String("Relu".into()))];
    check(&ms("FusedConv", &ins, &[true], attrs), &ins, &[(0, FCONV_RELU_Z)], 1e-5);
    let ins = [f(&[1, 2, 4, 4], 7), f(&[3, 2, 3, 3], 5), f(&[3], 3)];
    let attrs = vec![
        ("activation", Attr::String("Clip".into())),
        ("activation_params", Attr::Floats(vec![-1.0, 1.5])),
        ("pads", Attr::Ints(vec![1, 1, 1, 1])),
    ];
    check(&ms("FusedConv", &ins, &[true], attrs), &ins, &[(0, FCONV_CLIP)], 1e-5);
}

#[test]
fn gemm_fast_gelu() {
    let ins = [f(&[2, 3], 7), f(&[3, 4], 5), f(&[4], 3)];
    check(&ms("GemmFastGelu", &ins, &[true], vec![]), &ins, &[(0, GEMM_FAST_GELU)], F32);
}

#[test]
fn rotary_embedding_contrib_layouts() {
    let pos = Some(ts::tensor_of(&[1], &[2i64]));
    let ins = [f(&[1, 2, 8], 7), pos, f(&[6, 2], 5), f(&[6, 2], 3)];
    check(&ms("RotaryEmbedding", &ins, &[true], vec![("interleaved", Attr::Int(1))]), &ins, &[(0, ROPE_3D)], F32);
    let pos = Some(ts::tensor_of(&[1, 2], &[1i64, 3]));
    let ins = [f(&[1, 2, 2, 4], 7), pos, f(&[6, 2], 5), f(&[6, 2], 3)];
    check(&ms("RotaryEmbedding", &ins, &[true], vec![]), &ins, &[(0, ROPE_4D)], F32);
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let err = |n: &Node, ins: &[Option<Tensor>]| assert!(ts::run_node(n, ins).is_err(), "{} accepted", n.op_type);
    // SkipLayerNormalization: 4-D input, skip of another hidden size, missing gamma, f64 vs f32.
    let ins = [f(&[1, 2, 3, 4], 7), f(&[1, 2, 3, 4], 5), f(&[4], 3)];
    err(&ms("SkipLayerNormalization", &ins, &[true], vec![]), &ins);
    let ins = [f(&[2, 4], 7), f(&[2, 3], 5), f(&[4], 3)];
    err(&ms("SkipLayerNormalization", &ins, &[true], vec![]), &ins);
    let ins = [f(&[2, 4], 7), f(&[2, 4], 5), None];
    err(&ms("SkipLayerNormalization", &ins, &[true], vec![]), &ins);
    let ins = [f(&[2, 4], 7), Some(t(DType::F64, &[2, 4], 5)), f(&[4], 3)];
    err(&ms("SkipLayerNormalization", &ins, &[true], vec![]), &ins);
    // Integer input refused at compile time, naming the node.
    let n = ms("FastGelu", &[f(&[2], 1)], &[true], vec![]);
    let e = ts::compile(&n, &[DType::I32]).unwrap_err();
    assert!(e.to_string().contains("FastGelu_test"), "{e}");
    // Bias of the wrong length; BiasSplitGelu with an odd last dim.
    let ins = [f(&[2, 3], 7), f(&[2], 3)];
    err(&ms("BiasGelu", &ins, &[true], vec![]), &ins);
    let ins = [f(&[1, 2, 3], 7), f(&[3], 3)];
    err(&ms("BiasSplitGelu", &ins, &[true], vec![]), &ins);
    // Required attributes.
    assert!(ts::compile(&ms("BiasSoftmax", &[f(&[1], 1), f(&[1], 1)], &[true], vec![]), &[DType::F32; 2]).is_err());
    assert!(
        ts::compile(&ms("GroupNorm", &[f(&[1], 1), f(&[1], 1), f(&[1], 1)], &[true], vec![]), &[DType::F32; 3])
            .is_err()
    );
    assert!(ts::compile(&ms("FusedGemm", &[f(&[1], 1), f(&[1], 1)], &[true], vec![]), &[DType::F32; 2]).is_err());
    let leaky = vec![("activation", Attr::String("LeakyRelu".into()))];
    assert!(
        ts::compile(&ms("FusedGemm", &[f(&[1], 1), f(&[1], 1)], &[true], leaky.clone()), &[DType::F32; 2]).is_err()
    );
    assert!(ts::compile(&ms("FusedConv", &[f(&[1], 1), f(&[1], 1)], &[true], leaky), &[DType::F32; 2]).is_err());
    // FusedMatMul: transBatchA needs equal ranks of 3 or more.
    let ins = [f(&[2, 3, 4], 7), f(&[4, 5], 5)];
    err(&ms("FusedMatMul", &ins, &[true], vec![("transBatchA", Attr::Int(1))]), &ins);
    // EmbedLayerNormalization: an id outside the table.
    let ins = [ints(&[1, 2], &[1, 9]), None, f(&[5, 4], 7), f(&[6, 4], 5), None, f(&[4], 11), f(&[4], 13)];
    err(&ms("EmbedLayerNormalization", &ins, &[true, true], vec![]), &ins);
    // RotaryEmbedding: position ids of the wrong shape, rotary_embedding_dim without num_heads.
    let ins = [f(&[1, 2, 8], 7), Some(ts::tensor_of(&[3], &[0i64, 1, 2])), f(&[6, 2], 5), f(&[6, 2], 3)];
    err(&ms("RotaryEmbedding", &ins, &[true], vec![]), &ins);
    let dim = vec![("rotary_embedding_dim", Attr::Int(4))];
    assert!(ts::compile(&ms("RotaryEmbedding", &ins, &[true], dim), &[DType::F32, DType::I64]).is_err());
}
