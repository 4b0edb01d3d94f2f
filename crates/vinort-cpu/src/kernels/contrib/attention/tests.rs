//! The attention-family kernels against onnxruntime 1.31 (one-node models run on its CPU
//! provider with graph optimizations off; the expected values in `tests_expected.rs` are
//! pasted from its outputs). Inputs are `seq` data built identically on the Python side:
//! `((i·k + 5) mod 19 − 9) / scale` as f32; QAttention's integers are pasted too.

use vinort_ir::{Attr, DType, Node, Tensor};

use crate::test_support::{self as ts, assert_close, expect_err, tensor, tensor_of};

fn seq(shape: &[usize], k: usize, scale: f64) -> Option<Tensor> {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| (((i * k + 5) % 19) as f64 - 9.0) / scale).collect();
    Some(tensor(DType::F32, shape, &v))
}

fn i32s(shape: &[usize], v: &[i32]) -> Option<Tensor> {
    Some(tensor_of(shape, v))
}

fn ms(op: &str, inputs: &[Option<Tensor>], outputs: usize, attrs: Vec<(&str, Attr)>) -> Node {
    let present: Vec<bool> = inputs.iter().map(Option::is_some).collect();
    ts::op(op, 1).domain("com.microsoft").input_mask(&present).outputs(outputs).attrs(attrs).build()
}

#[track_caller]
fn check(n: &Node, inputs: &[Option<Tensor>], want: &[&[f64]]) -> Vec<Tensor> {
    let got = ts::run_node(n, inputs).unwrap_or_else(|e| panic!("{}: {e}", n.op_type));
    for (i, w) in want.iter().enumerate() {
        assert_close(&got[i].to_f64_vec().unwrap_or_default(), w, 1e-5, 1e-4, &format!("{} output {i}", n.op_type));
    }
    got
}

include!("tests_expected.rs");

const B: usize = 2;
const S: usize = 3;
const D: usize = 8;
const N: i64 = 2;

/// Attention's input, packed QKV weights and bias, as the onnxruntime references were made.
fn x_w_b() -> [Option<Tensor>; 3] {
    [seq(&[B, S, D], 7, 6.0), seq(&[D, 3 * D], 5, 10.0), seq(&[3 * D], 3, 20.0)]
}

#[test]
fn attention_with_end_start_mask_past_and_causal() {
    let [x, w, b] = x_w_b();
    let ins = [x, w, b, i32s(&[4], &[5, 4, 0, 1]), seq(&[2, B, 2, 2, 4], 11, 6.0)];
    let attrs = vec![("num_heads", Attr::Int(N)), ("unidirectional", Attr::Int(1)), ("scale", Attr::Float(0.4))];
    let got = check(&ms("Attention", &ins, 2, attrs), &ins, &[ATTN_0, ATTN_1]);
    assert_eq!(got[1].shape(), [2, B, 2, 5, 4]);
}

#[test]
fn attention_with_key_lengths_and_per_batch_attention_bias() {
    let [x, w, b] = x_w_b();
    let ins = [x, w, b, i32s(&[2], &[3, 2]), None, seq(&[B, 1, S, S], 13, 4.0)];
    check(&ms("Attention", &ins, 1, vec![("num_heads", Attr::Int(N))]), &ins, &[ATTN_BIAS_0]);
}

#[test]
fn attention_with_3d_mask_wide_values_and_filter_value() {
    let m: Vec<i32> = (0..B * S * S).map(|i| i32::from(((i * 3 + 5) % 19) as f64 - 9.0 > -3.0)).collect();
    let ins = [seq(&[B, S, D], 7, 6.0), seq(&[D, 4 * D], 5, 10.0), seq(&[4 * D], 3, 20.0), i32s(&[B, S, S], &m)];
    let attrs = vec![
        ("num_heads", Attr::Int(N)),
        ("qkv_hidden_sizes", Attr::Ints(vec![8, 8, 16])),
        ("mask_filter_value", Attr::Float(-500.0)),
    ];
    let got = check(&ms("Attention", &ins, 1, attrs), &ins, &[ATTN_QKV_0]);
    assert_eq!(got[0].shape(), [B, S, 2 * D]);
}

#[test]
fn multihead_attention_self_with_bias_padding_mask_past_and_causal() {
    let ins = [
        seq(&[B, S, D], 7, 6.0),
        seq(&[B, S, D], 5, 6.0),
        seq(&[B, S, D], 3, 6.0),
        seq(&[3 * D], 2, 20.0),
        i32s(&[B, 5], &[1, 1, 1, 1, 0, 0, 1, 1, 1, 1]),
        None,
        seq(&[B, 2, 2, 4], 11, 6.0),
        seq(&[B, 2, 2, 4], 13, 6.0),
    ];
    let attrs = vec![("num_heads", Attr::Int(N)), ("unidirectional", Attr::Int(1))];
    check(&ms("MultiHeadAttention", &ins, 3, attrs), &ins, &[MHA_0, MHA_1, MHA_2]);
}

#[test]
fn multihead_attention_cross_bnsh_with_key_lengths() {
    let ins =
        [seq(&[B, S, D], 7, 6.0), seq(&[B, 2, 4, 4], 5, 6.0), seq(&[B, 2, 4, 4], 3, 6.0), None, i32s(&[2], &[4, 2])];
    let attrs = vec![("num_heads", Attr::Int(N)), ("scale", Attr::Float(0.3))];
    check(&ms("MultiHeadAttention", &ins, 1, attrs), &ins, &[MHA_BNSH_0]);
}

#[test]
fn group_query_attention_padded_prompt_window_softcap_smooth_softmax() {
    let ins = [
        seq(&[B, 5, 32], 7, 3.0),
        seq(&[B, 5, 16], 5, 3.0),
        seq(&[B, 5, 16], 3, 6.0),
        None,
        None,
        i32s(&[2], &[4, 2]),
        Some(tensor_of::<i32>(&[], &[5])),
    ];
    let attrs = vec![
        ("num_heads", Attr::Int(4)),
        ("kv_num_heads", Attr::Int(2)),
        ("local_window_size", Attr::Int(2)),
        ("softcap", Attr::Float(2.0)),
        ("smooth_softmax", Attr::Int(1)),
    ];
    check(&ms("GroupQueryAttention", &ins, 3, attrs), &ins, &[GQA_0, GQA_1, GQA_2]);
}

fn rotary_caches() -> (Option<Tensor>, Option<Tensor>) {
    let half = 8;
    let ang = |x: usize| (x / half) as f64 * (1.0 / 10000f64.powf((x % half) as f64 / half as f64));
    let cos: Vec<f64> = (0..8 * half).map(|x| ang(x).cos()).collect();
    let sin: Vec<f64> = (0..8 * half).map(|x| ang(x).sin()).collect();
    (Some(tensor(DType::F32, &[8, half], &cos)), Some(tensor(DType::F32, &[8, half], &sin)))
}

#[test]
fn group_query_attention_token_with_padded_past_and_interleaved_rotary() {
    let (cos, sin) = rotary_caches();
    let ins = [
        seq(&[B, 1, 64], 7, 3.0),
        seq(&[B, 1, 32], 5, 3.0),
        seq(&[B, 1, 32], 3, 6.0),
        seq(&[B, 2, 4, 16], 11, 6.0),
        seq(&[B, 2, 4, 16], 13, 6.0),
        i32s(&[2], &[3, 1]),
        Some(tensor_of::<i32>(&[], &[4])),
        cos,
        sin,
    ];
    let attrs = vec![
        ("num_heads", Attr::Int(4)),
        ("kv_num_heads", Attr::Int(2)),
        ("do_rotary", Attr::Int(1)),
        ("rotary_interleaved", Attr::Int(1)),
    ];
    check(&ms("GroupQueryAttention", &ins, 3, attrs), &ins, &[GQA_ROT_0, GQA_ROT_1, GQA_ROT_2]);
}

#[test]
fn qattention_u8u8_per_column_scale_and_zero_point() {
    let sw: Vec<f32> = (0..3 * D).map(|i| (i % 5) as f32 * 0.001 + 0.002).collect();
    let zw: Vec<u8> = (0..3 * D).map(|i| (i * 7 % 256) as u8).collect();
    let ins = [
        Some(tensor_of(&[B, S, D], QX)),
        Some(tensor_of(&[D, 3 * D], QW)),
        seq(&[3 * D], 3, 20.0),
        Some(tensor_of::<f32>(&[], &[0.01])),
        Some(tensor_of(&[3 * D], &sw)),
        i32s(&[B, S], &[1, 1, 1, 1, 1, 0]),
        Some(tensor_of::<u8>(&[], &[120])),
        Some(tensor_of(&[3 * D], &zw)),
    ];
    check(&ms("QAttention", &ins, 1, vec![("num_heads", Attr::Int(N))]), &ins, &[QATTN_0]);
}

#[test]
fn bad_inputs_are_errors() {
    let x = x_w_b();
    // num_heads that does not divide the hidden size, or is missing.
    expect_err(ts::run_node(&ms("Attention", &x, 1, vec![("num_heads", Attr::Int(3))]), &x), "multiple of 3 heads");
    expect_err(ts::run_node(&ms("Attention", &x, 1, vec![]), &x), "num_heads");
    expect_err(ts::run_node(&ms("Attention", &x, 1, vec![("num_heads", Attr::Int(-1))]), &x), "positive");
    // qkv_hidden_sizes whose sum overflows i64 (it once overflowed instead of being refused).
    let huge = vec![("num_heads", Attr::Int(N)), ("qkv_hidden_sizes", Attr::Ints(vec![i64::MAX, i64::MAX, 2]))];
    expect_err(ts::run_node(&ms("Attention", &x, 1, huge), &x), "qkv_hidden_sizes");
    // A mask of the wrong shape.
    let mut m = x.to_vec();
    m.push(i32s(&[3], &[1, 2, 3]));
    expect_err(ts::run_node(&ms("Attention", &m, 1, vec![("num_heads", Attr::Int(N))]), &m), "mask_index");
    // Weights that do not match the input.
    let w = [seq(&[B, S, D], 7, 6.0), seq(&[D + 1, 3 * D], 5, 10.0)];
    expect_err(ts::run_node(&ms("Attention", &w, 1, vec![("num_heads", Attr::Int(N))]), &w), "weights");
    // MultiHeadAttention with a key of another length than its value.
    let kv = [seq(&[B, S, D], 7, 6.0), seq(&[B, 4, D], 5, 6.0), seq(&[B, 3, D], 3, 6.0)];
    expect_err(ts::run_node(&ms("MultiHeadAttention", &kv, 1, vec![("num_heads", Attr::Int(N))]), &kv), "key");
    // GroupQueryAttention: seqlens beyond the total length, kv heads not dividing heads.
    let g = |seqlens: &[i32]| {
        [
            seq(&[B, 2, 32], 7, 3.0),
            seq(&[B, 2, 16], 5, 3.0),
            seq(&[B, 2, 16], 3, 6.0),
            None,
            None,
            i32s(&[2], seqlens),
            Some(tensor_of::<i32>(&[], &[2])),
        ]
    };
    let attrs = || vec![("num_heads", Attr::Int(4)), ("kv_num_heads", Attr::Int(2))];
    let ins = g(&[1, 9]);
    expect_err(ts::run_node(&ms("GroupQueryAttention", &ins, 3, attrs()), &ins), "seqlens_k[1]");
    let ins = g(&[1, -5]);
    expect_err(ts::run_node(&ms("GroupQueryAttention", &ins, 3, attrs()), &ins), "seqlens_k[1]");
    let bad = vec![("num_heads", Attr::Int(4)), ("kv_num_heads", Attr::Int(3))];
    let ins = g(&[1, 1]);
    expect_err(ts::run_node(&ms("GroupQueryAttention", &ins, 3, bad), &ins), "kv_num_heads");
    // QAttention with a float input.
    let q = [
        seq(&[B, S, D], 7, 6.0),
        seq(&[D, 3 * D], 5, 10.0),
        seq(&[3 * D], 3, 20.0),
        seq(&[], 1, 1.0),
        seq(&[], 1, 1.0),
    ];
    assert!(ts::run_node(&ms("QAttention", &q, 1, vec![("num_heads", Attr::Int(N))]), &q).is_err());
}
