//! The com.microsoft QOperator kernels against onnxruntime 1.31.1: one-node models run on its
//! CPU provider with graph optimizations off, the expected outputs pasted below. Inputs are
//! `q` data, built identically on the Python side. Also: malformed inputs fail with errors.

use vinort_ir::{Attr, DType, Node, Tensor};

use crate::test_support::{self as ts, expect_err, tensor_of};

/// `(i·k + 7) mod 256` as u8, or that minus 128 as i8.
fn q(d: DType, shape: &[usize], k: usize) -> Tensor {
    let v: Vec<usize> = (0..shape.iter().product::<usize>()).map(|i| (i * k + 7) % 256).collect();
    match d {
        DType::U8 => tensor_of(shape, &v.iter().map(|x| *x as u8).collect::<Vec<_>>()),
        _ => tensor_of(shape, &v.iter().map(|x| (*x as i32 - 128) as i8).collect::<Vec<_>>()),
    }
}

fn qu(shape: &[usize], k: usize) -> Option<Tensor> {
    Some(q(DType::U8, shape, k))
}

fn qi(shape: &[usize], k: usize) -> Option<Tensor> {
    Some(q(DType::I8, shape, k))
}

fn s(v: f32) -> Option<Tensor> {
    Some(tensor_of(&[], &[v]))
}

fn zu(v: u8) -> Option<Tensor> {
    Some(tensor_of(&[], &[v]))
}

fn zi(v: i8) -> Option<Tensor> {
    Some(tensor_of(&[], &[v]))
}

fn ms(op: &str, inputs: &[Option<Tensor>], attrs: Vec<(&str, Attr)>) -> Node {
    let present: Vec<bool> = inputs.iter().map(Option::is_some).collect();
    ts::op(op, 1).domain("com.microsoft").input_mask(&present).outputs(1).attrs(attrs).build()
}

fn run(op: &str, inputs: &[Option<Tensor>], attrs: Vec<(&str, Attr)>) -> vinort_ir::Result<Tensor> {
    Ok(ts::run_node(&ms(op, inputs, attrs), inputs)?.remove(0))
}

/// Runs the node and compares with ONNX Runtime's output: shape, type and every value within
/// `steps` quantization steps.
#[track_caller]
fn check(op: &str, inputs: &[Option<Tensor>], attrs: Vec<(&str, Attr)>, (shape, want): (&[usize], &[i32]), steps: i32) {
    let y = run(op, inputs, attrs).unwrap_or_else(|e| panic!("{op}: {e}"));
    assert_eq!(y.shape(), shape, "{op}: shape");
    let d = inputs.iter().flatten().map(Tensor::dtype).find(|d| *d != DType::Bool);
    assert!(d == Some(y.dtype()) || op == "QLinearConcat", "{op}: type {}", y.dtype());
    let got: Vec<i32> = y.to_f64_vec().unwrap().into_iter().map(|v| v as i32).collect();
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= steps, "{op}: element {i} is {g}, onnxruntime {w}\n got {got:?}\nwant {want:?}");
    }
    assert_eq!(got.len(), want.len(), "{op}: count");
}

fn ints(v: &[i64]) -> Attr {
    Attr::Ints(v.to_vec())
}

include!("tests_qlinear_expected.rs");

#[test]
fn qlinear_add_broadcast_and_scalar() {
    let ins = [qu(&[2, 3, 4], 5), s(0.05), zu(120), qu(&[4], 3), s(0.02), zu(7), s(0.06), zu(130)];
    check("QLinearAdd", &ins, vec![], ADD_U8, 0);
    let ins = [qi(&[2, 3], 37), s(0.01), zi(0), qi(&[], 1), s(0.02), zi(0), s(0.03), zi(0)];
    check("QLinearAdd", &ins, vec![], ADD_I8, 0);
    // Absent zero points are 0 (ONNX Runtime's shape inference wants them, its kernel does not).
    let ins = [qi(&[2, 3], 37), s(0.01), None, qi(&[], 1), s(0.02), None, s(0.03), None];
    check("QLinearAdd", &ins, vec![], ADD_I8, 0);
}

#[test]
fn qlinear_mul() {
    let ins = [qu(&[2, 1, 4], 5), s(0.05), zu(120), qu(&[3, 1], 11), s(0.02), zu(100), s(0.15), zu(128)];
    check("QLinearMul", &ins, vec![], MUL_U8, 0);
    let ins = [qi(&[3, 4], 13), s(0.04), zi(-3), qi(&[3, 4], 7), s(0.05), zi(5), s(0.1), zi(-10)];
    check("QLinearMul", &ins, vec![], MUL_I8, 0);
}

#[test]
fn qlinear_concat_requantizes_and_copies() {
    let ins = [
        s(0.05),
        zu(100),
        qu(&[2, 2, 3], 5),
        s(0.05),
        zu(100),
        qu(&[2, 2, 1], 3),
        s(0.11),
        zu(90),
        qu(&[2, 2, 2], 7),
        s(0.02),
        zu(140),
    ];
    check("QLinearConcat", &ins, vec![("axis", Attr::Int(-1))], CONCAT_U8, 0);
    let ins = [s(0.5), zi(0), qi(&[1, 2, 2], 5), s(0.1), zi(-5), qi(&[1, 3, 2], 3), s(0.3), zi(4)];
    check("QLinearConcat", &ins, vec![("axis", Attr::Int(1))], CONCAT_I8, 0);
}

#[test]
fn qlinear_global_average_pool_nchw_and_nhwc() {
    let ins = [qu(&[2, 3, 4, 5], 7), s(0.05), zu(100), s(0.03), zu(120)];
    check("QLinearGlobalAveragePool", &ins, vec![("channels_last", Attr::Int(0))], GAP_U8, 0);
    let ins = [qi(&[2, 3, 3, 4], 11), s(0.05), zi(-4), s(0.02), zi(3)];
    check("QLinearGlobalAveragePool", &ins, vec![("channels_last", Attr::Int(1))], GAP_I8_NHWC, 0);
}

#[test]
fn qlinear_average_pool_geometries() {
    let ins = [qu(&[1, 2, 5, 5], 7), s(0.05), zu(100), s(0.03), zu(120)];
    let attrs = vec![
        ("kernel_shape", ints(&[3, 3])),
        ("strides", ints(&[2, 2])),
        ("pads", ints(&[1, 1, 1, 1])),
        ("count_include_pad", Attr::Int(1)),
    ];
    check("QLinearAveragePool", &ins, attrs, AP_U8_PAD, 0);
    let ins = [qi(&[1, 5, 6, 3], 11), s(0.04), zi(2), s(0.05), zi(-1)];
    let attrs = vec![
        ("kernel_shape", ints(&[2, 3])),
        ("strides", ints(&[2, 2])),
        ("pads", ints(&[0, 1, 1, 0])),
        ("ceil_mode", Attr::Int(1)),
        ("channels_last", Attr::Int(1)),
    ];
    check("QLinearAveragePool", &ins, attrs, AP_I8_NHWC_CEIL, 0);
    let ins = [qu(&[1, 2, 7], 13), s(0.1), zu(128), s(0.1), zu(128)];
    let attrs =
        vec![("kernel_shape", ints(&[3])), ("strides", ints(&[2])), ("auto_pad", Attr::String("SAME_UPPER".into()))];
    check("QLinearAveragePool", &ins, attrs, AP_U8_1D_SAME, 0);
    let ins = [qu(&[1, 1, 3, 4, 4], 3), s(0.1), zu(50), s(0.07), zu(60)];
    let attrs = vec![("kernel_shape", ints(&[2, 2, 2])), ("pads", ints(&[0, 1, 0, 1, 0, 1]))];
    check("QLinearAveragePool", &ins, attrs, AP_U8_3D, 0);
    // A window over the whole unpadded input takes the global (integer) form.
    let ins = [qu(&[1, 2, 3, 3], 29), s(0.05), zu(100), s(0.03), zu(120)];
    check("QLinearAveragePool", &ins, vec![("kernel_shape", ints(&[3, 3]))], AP_U8_WHOLE, 0);
}

#[test]
fn qlinear_lookup_table_activations() {
    let ins = [qu(&[4, 8], 9), s(0.05), zu(128), s(1.0 / 256.0), zu(0)];
    check("QLinearSigmoid", &ins, vec![], SIGMOID_U8, 0);
    let ins = [qi(&[4, 8], 9), s(0.07), zi(3), s(1.0 / 256.0), zi(-128)];
    check("QLinearSigmoid", &ins, vec![], SIGMOID_I8, 0);
    let ins = [qi(&[4, 8], 9), s(0.05), zi(-2), s(0.03), zi(10)];
    check("QLinearLeakyRelu", &ins, vec![("alpha", Attr::Float(0.1))], LRELU_I8, 0);
    let ins = [qu(&[3, 5], 17), s(0.05), zu(128), s(0.04), zu(100)];
    check("QLinearLeakyRelu", &ins, vec![], LRELU_U8, 0);
}

#[test]
fn qlinear_softmax_opsets() {
    let ins = [qu(&[2, 3, 4], 7), s(0.1), zu(128), s(1.0 / 256.0), zu(0)];
    check("QLinearSoftmax", &ins, vec![("opset", Attr::Int(12)), ("axis", Attr::Int(1))], SOFTMAX_U8_12, 0);
    let ins = [qi(&[2, 3, 4], 7), s(0.08), zi(0), s(1.0 / 256.0), zi(-128)];
    check("QLinearSoftmax", &ins, vec![("opset", Attr::Int(13)), ("axis", Attr::Int(1))], SOFTMAX_I8_13, 0);
    let ins = [qu(&[3, 5], 11), s(0.2), zu(128), s(1.0 / 200.0), zu(3)];
    check("QLinearSoftmax", &ins, vec![("opset", Attr::Int(13))], SOFTMAX_U8_13, 0);
}

#[test]
fn qlinear_conv_channels_last_and_nchw() {
    let w = q(DType::I8, &[6, 2, 3, 3], 5);
    let ins = [
        qu(&[1, 5, 5, 4], 7),
        s(0.02),
        zu(120),
        Some(w),
        Some(tensor_of(&[6], &[0.01f32, 0.02, 0.015, 0.01, 0.03, 0.02])),
        Some(tensor_of(&[6], &[0i8; 6])),
        s(0.05),
        zu(128),
        Some(tensor_of(&[6], &[100i32, -200, 0, 50, -30, 700])),
    ];
    let attrs = vec![
        ("group", Attr::Int(2)),
        ("pads", ints(&[1, 1, 1, 1])),
        ("strides", ints(&[2, 1])),
        ("channels_last", Attr::Int(1)),
    ];
    check("QLinearConv", &ins, attrs, CONV_NHWC, 0);
    let ins = [qi(&[1, 2, 4, 4], 3), s(0.03), zi(-1), qi(&[3, 2, 2, 2], 7), s(0.02), zi(0), s(2.0), zi(2)];
    check("QLinearConv", &ins, vec![], CONV_NCHW, 0);
}

#[test]
fn malformed_inputs_are_errors() {
    // A scale that is not a scalar.
    let ins = [qu(&[4], 5), Some(tensor_of(&[2], &[0.1f32, 0.2])), zu(1), qu(&[4], 3), s(0.1), zu(1), s(0.1), zu(1)];
    expect_err(run("QLinearAdd", &ins, vec![]), "A_scale must be a scalar");
    // A zero point of another type than its data.
    let ins = [qu(&[4], 5), s(0.1), zi(1), qu(&[4], 3), s(0.1), zu(1), s(0.1), zu(1)];
    expect_err(run("QLinearAdd", &ins, vec![]), "A_zero_point has type");
    let ins = [qu(&[2, 2], 5), s(0.1), zu(1), s(0.2), zi(0)];
    expect_err(run("QLinearSigmoid", &ins, vec![]), "Y_zero_point has type");
    // Shapes that do not broadcast.
    let ins = [qu(&[3], 5), s(0.1), zu(1), qu(&[4], 3), s(0.1), zu(1), s(0.1), zu(1)];
    assert!(run("QLinearMul", &ins, vec![]).is_err());
    // Bad pads: negative, or of the wrong length.
    let ins = [qu(&[1, 1, 4, 4], 5), s(0.1), zu(1), s(0.1), zu(1)];
    let attrs = vec![("kernel_shape", ints(&[2, 2])), ("pads", ints(&[-1, 0, 0, 0]))];
    expect_err(run("QLinearAveragePool", &ins, attrs), "non-negative");
    let attrs = vec![("kernel_shape", ints(&[2, 2])), ("pads", ints(&[1, 1]))];
    expect_err(run("QLinearAveragePool", &ins, attrs), "pads has 2 values");
    expect_err(run("QLinearAveragePool", &ins, vec![]), "kernel_shape");
    // Rank below 3 for a pool; QLinearConcat inputs not in triplets; softmax without opset.
    let ins2 = [qu(&[4, 4], 5), s(0.1), zu(1), s(0.1), zu(1)];
    expect_err(run("QLinearGlobalAveragePool", &ins2, vec![]), "rank >= 3");
    let ins = [s(0.1), zu(1), qu(&[2], 1), s(0.1)];
    expect_err(run("QLinearConcat", &ins, vec![("axis", Attr::Int(0))]), "triplets");
    let ins = [qu(&[2, 3], 5), s(0.1), zu(1), s(0.1), zu(1)];
    expect_err(run("QLinearSoftmax", &ins, vec![]), "opset");
    expect_err(run("QLinearSoftmax", &ins, vec![("opset", Attr::Int(13)), ("axis", Attr::Int(2))]), "axis");
    // Float data is refused when the kernel is built.
    let n = ms("QLinearLeakyRelu", &[s(1.0), s(0.1), zu(1), s(0.1), zu(1)], vec![]);
    assert!(ts::compile(&n, &[DType::F32, DType::F32, DType::U8, DType::F32, DType::U8]).is_err());
    // A conv zero point of another type than its data.
    let ins = [qu(&[1, 1, 3, 3], 5), s(0.1), zi(1), qi(&[1, 1, 2, 2], 3), s(0.1), zi(0), s(0.1), zu(1)];
    expect_err(run("QLinearConv", &ins, vec![]), "zero point");
}

/// `(i·7 + 3) mod 5 < 2`, as on the Python side.
fn cond(shape: &[usize]) -> Option<Tensor> {
    let v: Vec<bool> = (0..shape.iter().product::<usize>()).map(|i| (i * 7 + 3) % 5 < 2).collect();
    Some(tensor_of(shape, &v))
}

#[test]
fn qlinear_where_requantizes_both_branches_to_z() {
    let sh = [2, 3, 4];
    let u8s = [cond(&sh), qu(&sh, 5), s(0.05), zu(128), qu(&sh, 11), s(0.02), zu(100), s(0.03), zu(120)];
    check("QLinearWhere", &u8s, vec![], WHERE_U8, 0);
    // Parameters equal to Z's: the values are taken as they are.
    let sh = [2, 3];
    let same = [cond(&sh), qu(&sh, 5), s(0.05), zu(128), qu(&sh, 11), s(0.05), zu(128), s(0.05), zu(128)];
    check("QLinearWhere", &same, vec![], WHERE_U8_SAME, 0);
    // Three-way broadcasting, int8.
    let i8s = [cond(&[2, 1, 4]), qi(&[3, 1], 9), s(0.05), zi(3), qi(&[1, 3, 4], 13), s(0.02), zi(-10), s(0.03), zi(0)];
    check("QLinearWhere", &i8s, vec![], WHERE_I8_BROADCAST, 0);
    // A float condition, mixed X/Y types and shapes that do not broadcast are errors.
    let mut bad = i8s.clone();
    bad[0] = s(1.0);
    expect_err(run("QLinearWhere", &bad, vec![]), "condition");
    let mut bad = i8s.clone();
    bad[4] = qu(&[1, 3, 4], 13);
    expect_err(run("QLinearWhere", &bad, vec![]), "type");
    let mut bad = i8s;
    bad[1] = qi(&[3, 2], 9);
    assert!(run("QLinearWhere", &bad, vec![]).is_err());
}
