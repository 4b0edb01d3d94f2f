//! The quantized contrib kernels (MatMulNBits, DynamicQuantizeMatMul, MatMulIntegerToFloat,
//! QGemm, com.microsoft QuantizeLinear/DequantizeLinear, QEmbedLayerNormalization) against
//! onnxruntime 1.31.1: one-node models with these inputs as initializers, run on its CPU
//! provider with graph optimizations off; the expected values at the bottom are pasted from
//! its outputs. Inputs are `seq`/`useq` data, built identically on the Python side. Malformed
//! inputs must give errors, not panics.

use vinort_ir::{Attr, DType, Elem, Node, Tensor};

use crate::test_support::{self as ts, assert_close, tensor};
use expected::*;

/// `((i·k + 5) mod 19 − 9) / scale`, as in `tests.rs`.
fn seq(n: usize, k: usize, scale: f64) -> Vec<f64> {
    (0..n).map(|i| ((i * k + 5) % 19) as f64 - 9.0).map(|v| v / scale).collect()
}

/// `(i·k + 3) mod m`: integer codes.
fn useq(n: usize, k: usize, m: usize) -> Vec<usize> {
    (0..n).map(|i| (i * k + 3) % m).collect()
}

fn f(shape: &[usize], v: Vec<f64>) -> Option<Tensor> {
    Some(tensor(DType::F32, shape, &v))
}

fn fs(v: f64) -> Option<Tensor> {
    f(&[], vec![v])
}

fn ints<T: Elem + Copy>(shape: &[usize], v: &[T]) -> Option<Tensor> {
    Some(ts::tensor_of(shape, v))
}

fn u8s(shape: &[usize], k: usize) -> Option<Tensor> {
    let v: Vec<u8> = useq(shape.iter().product(), k, 256).into_iter().map(|v| v as u8).collect();
    ints(shape, &v)
}

fn ms(op: &str, inputs: &[Option<Tensor>], outputs: usize, attrs: Vec<(&str, Attr)>) -> Node {
    let present: Vec<bool> = inputs.iter().map(Option::is_some).collect();
    ts::op(op, 1).domain("com.microsoft").input_mask(&present).output_mask(&vec![true; outputs]).attrs(attrs).build()
}

#[track_caller]
fn check(n: &Node, inputs: &[Option<Tensor>], want: &[&[f64]], tol: f64) {
    let got = ts::run_node(n, inputs).unwrap_or_else(|e| panic!("{}: {e}", n.op_type));
    for (i, w) in want.iter().enumerate() {
        assert_close(&got[i].to_f64_vec().unwrap(), w, tol, tol, &format!("{} output {i}", n.op_type));
    }
}

fn nbits_attrs(k: i64, n: i64, bits: i64, block: i64) -> Vec<(&'static str, Attr)> {
    vec![("K", Attr::Int(k)), ("N", Attr::Int(n)), ("bits", Attr::Int(bits)), ("block_size", Attr::Int(block))]
}

/// The 4-bit case: K=40 (a partial second block of 32), N=3, packed zero points, bias.
fn nbits4_inputs() -> Vec<Option<Tensor>> {
    let b: Vec<u8> = useq(3 * 2 * 16, 7, 256).into_iter().map(|v| v as u8).collect();
    let scales: Vec<f64> = seq(6, 5, 200.0).into_iter().map(|v| v + 0.1).collect();
    vec![
        f(&[2, 40], seq(80, 3, 6.0)),
        ints(&[3, 2, 16], &b),
        f(&[6], scales),
        ints(&[3, 1], &[0x3au8, 0x05, 0xc7]),
        None,
        f(&[3], seq(3, 11, 4.0)),
    ]
}

#[test]
fn matmul_nbits_4_bit_partial_block_zero_points_bias() {
    let ins = nbits4_inputs();
    check(&ms("MatMulNBits", &ins, 1, nbits_attrs(40, 3, 4, 32)), &ins, &[NBITS4_Y], 1e-5);
}

#[test]
fn matmul_nbits_8_bit_default_zero_point() {
    let b: Vec<u8> = useq(3 * 32, 13, 256).into_iter().map(|v| v as u8).collect();
    let scales: Vec<f64> = seq(6, 5, 2000.0).into_iter().map(|v| v + 0.01).collect();
    let ins = [f(&[2, 32], seq(64, 3, 6.0)), ints(&[3, 2, 16], &b), f(&[6], scales)];
    check(&ms("MatMulNBits", &ins, 1, nbits_attrs(32, 3, 8, 16)), &ins, &[NBITS8_Y], 1e-5);
}

#[test]
fn matmul_nbits_2_bit_float_zero_points() {
    let b: Vec<u8> = useq(3 * 2 * 4, 5, 256).into_iter().map(|v| v as u8).collect();
    let scales: Vec<f64> = seq(6, 5, 200.0).into_iter().map(|v| v + 0.1).collect();
    let zp: Vec<f64> = seq(6, 7, 5.0).into_iter().map(|v| v + 2.0).collect();
    let ins = [f(&[2, 32], seq(64, 3, 6.0)), ints(&[3, 2, 4], &b), f(&[6], scales), f(&[3, 2], zp)];
    check(&ms("MatMulNBits", &ins, 1, nbits_attrs(32, 3, 2, 16)), &ins, &[NBITS2_Y], 1e-5);
}

#[test]
fn matmul_nbits_rejects_malformed_inputs() {
    let ins = nbits4_inputs();
    // Bits outside {2, 4, 8} and block sizes that are no power of 2 (or below 16).
    for attrs in [nbits_attrs(40, 3, 3, 32), nbits_attrs(40, 3, 4, 24), nbits_attrs(40, 3, 4, 8)] {
        assert!(ts::run_node(&ms("MatMulNBits", &ins, 1, attrs), &ins).is_err());
    }
    // B one byte short, and attributes that do not match B.
    let mut short = ins.clone();
    short[1] = ints(&[3 * 2 * 16 - 1], &[0u8; 3 * 2 * 16 - 1]);
    assert!(ts::run_node(&ms("MatMulNBits", &short, 1, nbits_attrs(40, 3, 4, 32)), &short).is_err());
    assert!(ts::run_node(&ms("MatMulNBits", &ins, 1, nbits_attrs(40, 4, 4, 32)), &ins).is_err());
    // A whose last axis is not K, packed zero points of the wrong size.
    let mut bad_a = ins.clone();
    bad_a[0] = f(&[2, 39], seq(78, 3, 6.0));
    assert!(ts::run_node(&ms("MatMulNBits", &bad_a, 1, nbits_attrs(40, 3, 4, 32)), &bad_a).is_err());
    let mut bad_zp = ins.clone();
    bad_zp[3] = ints(&[2], &[1u8, 2]);
    assert!(ts::run_node(&ms("MatMulNBits", &bad_zp, 1, nbits_attrs(40, 3, 4, 32)), &bad_zp).is_err());
    // g_idx naming a group past k_blocks (2), negative, or of the wrong length.
    for g in [vec![2i32; 40], vec![-1i32; 40], vec![0i32; 39]] {
        let mut with_g = ins.clone();
        with_g[4] = ints(&[g.len()], &g);
        assert!(ts::run_node(&ms("MatMulNBits", &with_g, 1, nbits_attrs(40, 3, 4, 32)), &with_g).is_err());
    }
}

/// Per-column B scale and zero point shared by the integer products.
fn b_scale() -> Option<Tensor> {
    f(&[5], seq(5, 3, 400.0).into_iter().map(|v| v + 0.05).collect())
}

fn b_int8() -> Vec<i8> {
    useq(20, 7, 256).into_iter().map(|v| (v as i32 - 128) as i8).collect()
}

const B_ZP: [i8; 5] = [1, -2, 0, 3, -1];

#[test]
fn dynamic_quantize_matmul_per_column_bias() {
    let ins = [
        f(&[2, 3, 4], seq(24, 5, 3.0)),
        ints(&[4, 5], &b_int8()),
        b_scale(),
        ints(&[5], &B_ZP),
        f(&[5], seq(5, 2, 3.0)),
    ];
    check(&ms("DynamicQuantizeMatMul", &ins, 1, vec![]), &ins, &[DQMM_Y], 1e-5);
}

#[test]
fn matmul_integer_to_float_per_column_bias() {
    let ins = [
        u8s(&[3, 4], 11),
        u8s(&[4, 5], 9),
        fs(0.02),
        b_scale(),
        ints(&[], &[120u8]),
        ints(&[5], &[128u8, 127, 130, 126, 129]),
        f(&[5], seq(5, 2, 3.0)),
    ];
    check(&ms("MatMulIntegerToFloat", &ins, 1, vec![]), &ins, &[MITF_Y], 1e-5);
    // A per-K a_scale does not factor out of the sum: refused, as ONNX Runtime does.
    let mut bad = ins.clone();
    bad[2] = f(&[4], vec![0.02; 4]);
    assert!(ts::run_node(&ms("MatMulIntegerToFloat", &bad, 1, vec![]), &bad).is_err());
}

#[test]
fn qgemm_transposed_per_column_bias_requantized() {
    let a: Vec<u8> = useq(12, 11, 256).into_iter().map(|v| v as u8).collect();
    let at: Vec<u8> = (0..12).map(|i| a[(i % 3) * 4 + i / 3]).collect();
    let b = b_int8();
    let bt: Vec<i8> = (0..20).map(|i| b[(i % 4) * 5 + i / 4]).collect();
    let ins = [
        ints(&[4, 3], &at),
        fs(0.02),
        ints(&[], &[120u8]),
        ints(&[5, 4], &bt),
        b_scale(),
        ints(&[5], &B_ZP),
        ints(&[5], &[100i32, -200, 300, 0, -50]),
        fs(1.0),
        ints(&[], &[128u8]),
    ];
    let attrs = vec![("transA", Attr::Int(1)), ("transB", Attr::Int(1)), ("alpha", Attr::Float(0.75))];
    check(&ms("QGemm", &ins, 1, attrs), &ins, &[QGEMM_Y], 0.0);
}

#[test]
fn qgemm_float_output() {
    let ins = [u8s(&[3, 4], 11), fs(0.02), ints(&[], &[120u8]), ints(&[4, 5], &b_int8()), fs(0.01), ints(&[], &[2i8])];
    check(&ms("QGemm", &ins, 1, vec![]), &ins, &[QGEMM_F], 1e-5);
}

/// With B and every parameter constant (what quantizers write) QGemm packs B once at build
/// time: ONNX Runtime's values still, and the generic kernel's bytes with transB, per-column
/// zero points, C and a requantized output.
#[test]
fn qgemm_prepared_matches() {
    let ins = [u8s(&[3, 4], 11), fs(0.02), ints(&[], &[120u8]), ints(&[4, 5], &b_int8()), fs(0.01), ints(&[], &[2i8])];
    let consts: Vec<usize> = (1..ins.len()).collect();
    let got = ts::run_with(&ms("QGemm", &ins, 1, vec![]), &ins, ts::Known::TypesAndConsts(&consts))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_close(&got[0].to_f64_vec().unwrap_or_default(), QGEMM_F, 1e-5, 1e-5, "prepared QGemm");
    let b = b_int8();
    let bt: Vec<i8> = (0..20).map(|i| b[(i % 4) * 5 + i / 4]).collect();
    let ins = [
        u8s(&[6, 4], 7),
        fs(0.02),
        ints(&[], &[120u8]),
        ints(&[5, 4], &bt),
        b_scale(),
        ints(&[5], &B_ZP),
        ints(&[5], &[100i32, -200, 300, 0, -50]),
        fs(0.05),
        ints(&[], &[128u8]),
    ];
    let node = ms("QGemm", &ins, 1, vec![("transB", Attr::Int(1))]);
    let want = ts::run_with(&node, &ins, ts::Known::Types).unwrap_or_else(|e| panic!("{e}"));
    let consts: Vec<usize> = (1..ins.len()).collect();
    let got = ts::run_with(&node, &ins, ts::Known::TypesAndConsts(&consts)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got[0].shape(), &[6, 5]);
    assert_eq!(got[0].as_bytes(), want[0].as_bytes());
}

#[test]
fn ms_quantize_and_dequantize_linear() {
    let x = f(&[3, 4], seq(12, 5, 2.0));
    let ins = [x.clone(), f(&[3], vec![0.001, 0.002, 0.0005]), ints(&[3], &[10i16, -20, 0])];
    check(&ms("QuantizeLinear", &ins, 1, vec![("axis", Attr::Int(0))]), &ins, &[MSQ_Y], 0.0);
    let ins = [x, fs(0.05)];
    check(&ms("QuantizeLinear", &ins, 1, vec![]), &ins, &[MSQ_U8], 0.0);
    let xu: Vec<u16> = useq(12, 1234, 65536).into_iter().map(|v| v as u16).collect();
    let ins = [ints(&[3, 4], &xu), f(&[4], vec![0.001, 0.002, 0.0005, 0.01]), ints(&[4], &[30000u16, 100, 0, 65535])];
    check(&ms("DequantizeLinear", &ins, 1, vec![("axis", Attr::Int(1))]), &ins, &[MSDQ_Y], 1e-6);
    // A blocked (2-D) scale is ONNX's, not com.microsoft's.
    let ins = [f(&[3, 4], seq(12, 5, 2.0)), f(&[3, 2], vec![0.1; 6])];
    assert!(ts::run_node(&ms("QuantizeLinear", &ins, 1, vec![]), &ins).is_err());
}

#[test]
fn qembed_layer_norm_with_segments_and_mask() {
    let ins = [
        ints(&[2, 3], &[1i32, 4, 0, 2, 2, 3]),
        ints(&[2, 3], &[0i32, 1, 1, 1, 0, 0]),
        u8s(&[5, 4], 7),
        u8s(&[3, 4], 11),
        u8s(&[2, 4], 13),
        u8s(&[4], 17),
        u8s(&[4], 19),
        ints(&[2, 3], &[1i32, 1, 0, 1, 1, 1]),
        fs(0.02),
        fs(0.01),
        fs(0.015),
        fs(0.01),
        fs(0.002),
        ints(&[], &[128u8]),
        ints(&[], &[120u8]),
        ints(&[], &[130u8]),
        ints(&[], &[0u8]),
        ints(&[], &[128u8]),
    ];
    let n = ms("QEmbedLayerNormalization", &ins, 2, vec![("epsilon", Attr::Float(1e-5))]);
    check(&n, &ins, &[QEMB_Y, QEMB_MASK], 1e-5);
    // An input id past the vocabulary is an error.
    let mut bad = ins.clone();
    bad[0] = ints(&[2, 3], &[1i32, 5, 0, 2, 2, 3]);
    assert!(ts::run_node(&n, &bad).is_err());
}

/// Pasted from onnxruntime 1.31.1 (CPU provider) by a one-off script building the same inputs.
#[rustfmt::skip]
mod expected {
    pub(super) const NBITS4_Y: &[f64] = &[-2.510833263397217, -1.5699999332427979, -3.044999599456787, 3.310832977294922, 3.0933332443237305, 0.43833333253860474];
    pub(super) const NBITS8_Y: &[f64] = &[-1.0779998302459717, -2.128833055496216, -4.822082996368408, -5.178666591644287, -1.900833010673523, -1.3507499694824219];
    pub(super) const NBITS2_Y: &[f64] = &[0.04800000786781311, 0.06633336842060089, 0.008333325386047363, 0.05350002273917198, 0.16166669130325317, -0.24533337354660034];
    pub(super) const DQMM_Y: &[f64] = &[1.9805489778518677, 2.475039005279541, 3.1783530712127686, 3.8607845306396484, 3.624392032623291, -2.0119216442108154, -1.6289608478546143, -1.2048234939575195, -0.7848039269447327, -0.5459607839584351, -5.885804176330566, -5.603313446044922, -5.444353103637695, -5.2730393409729, -4.558196067810059, -9.845333099365234, -9.668196678161621, -9.782235145568848, -9.867156982421875, -8.670902252197266, 0.45866668224334717, 0.1872156262397766, 0.25105881690979004, 0.2813725471496582, -1.1636079549789429, -3.4876861572265625, -3.8508431911468506, -4.0492939949035645, -4.26421594619751, -5.203843116760254];
    pub(super) const MITF_Y: &[f64] = &[19.1386661529541, 19.824832916259766, 21.07379913330078, 18.0816650390625, 17.461334228515625, 11.0426664352417, 11.882832527160645, 13.039400100708008, 11.811666488647461, 11.917332649230957, 2.9466662406921387, 3.9408328533172607, 5.005000114440918, 5.541666507720947, 6.37333345413208];
    pub(super) const QGEMM_Y: &[f64] = &[147.0, 147.0, 149.0, 150.0, 148.0, 139.0, 139.0, 141.0, 141.0, 140.0, 131.0, 131.0, 132.0, 132.0, 132.0];
    pub(super) const QGEMM_F: &[f64] = &[6.374799728393555, 5.811999797821045, 5.249199867248535, 4.686399936676025, 4.123600006103516, 3.7523999214172363, 3.435999870300293, 3.1195998191833496, 2.8032000064849854, 2.486799955368042, 1.1299999952316284, 1.059999942779541, 0.9899999499320984, 0.9199999570846558, 0.8499999642372131];
    pub(super) const MSQ_Y: &[f64] = &[-1990.0, 510.0, 3010.0, -3990.0, -770.0, 480.0, 1730.0, -1770.0, -2000.0, 3000.0, 8000.0, -6000.0];
    pub(super) const MSQ_U8: &[f64] = &[0.0, 10.0, 60.0, 0.0, 0.0, 20.0, 70.0, 0.0, 0.0, 30.0, 80.0, 0.0];
    pub(super) const MSDQ_Y: &[f64] = &[-29.99700164794922, 2.2740001678466797, 1.2355000972747803, -618.2999877929688, -25.06100082397461, 12.146000862121582, 3.703500270843506, -568.9400024414062, -20.125001907348633, 22.018001556396484, 6.171500205993652, -519.5800170898438];
    pub(super) const QEMB_Y: &[f64] = &[-0.29024842381477356, -0.30144086480140686, -0.008534431457519531, 0.5884714126586914, -0.29024839401245117, -0.301440954208374, -0.008534267544746399, 0.5884712934494019, -0.29024839401245117, -0.301440954208374, -0.008534267544746399, 0.5884712934494019, -0.29024839401245117, -0.301440954208374, -0.008534267544746399, 0.5884712934494019, -0.29024842381477356, -0.301440954208374, -0.008534431457519531, 0.5884714126586914, -0.29024839401245117, -0.30144086480140686, -0.008534237742424011, 0.588471531867981];
    pub(super) const QEMB_MASK: &[f64] = &[2.0, 3.0];
}
