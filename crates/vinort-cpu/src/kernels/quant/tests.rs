//! Tests of the quantization kernels: the ONNX node test cases of these ops, run end to end
//! through the Cpu provider, and property tests of QuantizeLinear / DequantizeLinear against
//! naive per-element references written from the spec.

use proptest::prelude::*;
use vinort_ir::{DType, Tensor};

use super::qdq::{Dequantize, Quantize};
use crate::test_support::{Cases, NODE_TOL, config, ravel, run_node_cases, unravel};

/// Node test cases of this family (the `_expanded` DynamicQuantizeLinear variants test the
/// function body, built from other families' ops, and are left to the suite-wide runner).
const CASES: &[&str] = &[
    "test_convinteger_with_padding",
    "test_convinteger_without_padding",
    "test_dequantizelinear",
    "test_dequantizelinear_axis",
    "test_dequantizelinear_blocked",
    "test_dequantizelinear_e4m3fn",
    "test_dequantizelinear_e4m3fn_float16",
    "test_dequantizelinear_e4m3fn_zero_point",
    "test_dequantizelinear_e5m2",
    "test_dequantizelinear_float4e2m1",
    "test_dequantizelinear_int16",
    "test_dequantizelinear_int2",
    "test_dequantizelinear_int4",
    "test_dequantizelinear_uint16",
    "test_dequantizelinear_uint2",
    "test_dequantizelinear_uint4",
    "test_dynamicquantizelinear",
    "test_dynamicquantizelinear_max_adjusted",
    "test_dynamicquantizelinear_min_adjusted",
    "test_matmulinteger",
    "test_qlinearconv",
    "test_qlinearmatmul_2D_int8_float16",
    "test_qlinearmatmul_2D_int8_float32",
    "test_qlinearmatmul_2D_uint8_float16",
    "test_qlinearmatmul_2D_uint8_float32",
    "test_qlinearmatmul_3D_int8_float16",
    "test_qlinearmatmul_3D_int8_float32",
    "test_qlinearmatmul_3D_uint8_float16",
    "test_qlinearmatmul_3D_uint8_float32",
    "test_quantizelinear",
    "test_quantizelinear_axis",
    "test_quantizelinear_blocked_asymmetric",
    "test_quantizelinear_blocked_symmetric",
    "test_quantizelinear_e4m3fn",
    "test_quantizelinear_e5m2",
    "test_quantizelinear_float4e2m1",
    "test_quantizelinear_int16",
    "test_quantizelinear_int2",
    "test_quantizelinear_int4",
    "test_quantizelinear_uint16",
    "test_quantizelinear_uint2",
    "test_quantizelinear_uint4",
];

#[test]
fn onnx_node_cases() {
    run_node_cases(Cases::Listed(CASES), &[], NODE_TOL);
}

/// Index of the scale for flat element `i` of `shape`, straight from the spec's definitions.
fn naive_scale_index(i: usize, shape: &[usize], scale_shape: &[usize], axis: usize, block: usize) -> usize {
    let mut idx = unravel(i, shape);
    if block == 0 {
        return idx[axis];
    }
    idx[axis] /= block;
    ravel(&idx, scale_shape)
}

/// A shape, an axis, a block size (0 = per-axis) and the matching scale shape.
fn layout() -> impl Strategy<Value = (Vec<usize>, usize, usize, Vec<usize>)> {
    (proptest::collection::vec(1usize..5, 1..4), any::<prop::sample::Index>(), 0usize..4).prop_map(
        |(shape, ax, block)| {
            let axis = ax.index(shape.len());
            let scale_shape = if block == 0 {
                vec![shape[axis]]
            } else {
                let mut s = shape.clone();
                s[axis] = shape[axis].div_ceil(block);
                s
            };
            (shape, axis, block, scale_shape)
        },
    )
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn quantize_matches_naive((shape, axis, block, sshape) in layout(), seed in any::<u64>(), signed in any::<bool>()) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let n: usize = shape.iter().product();
        let ns: usize = sshape.iter().product();
        let x: Vec<f32> = (0..n).map(|_| rng.random_range(-300.0f32..300.0)).collect();
        let s: Vec<f32> = (0..ns).map(|_| rng.random_range(0.1f32..4.0)).collect();
        let (dt, lo, hi) = if signed { (DType::I8, -128, 127) } else { (DType::U8, 0, 255) };
        let z: Vec<i32> = (0..ns).map(|_| rng.random_range(lo..=hi)).collect();
        let xt = Tensor::from_slice(&shape, &x).unwrap();
        let st = Tensor::from_slice(&sshape, &s).unwrap();
        let zt = super::store_int(dt, &sshape, &z).unwrap();
        let got = Quantize::with(axis as i64, block as i64, None).quantize(&xt, &st, Some(&zt)).unwrap();
        prop_assert_eq!(got.dtype(), dt);
        let got = got.to_i64_vec().unwrap();
        for i in 0..n {
            let k = naive_scale_index(i, &shape, &sshape, axis, block);
            let want = ((x[i] / s[k]).round_ties_even() as i64 + z[k] as i64).clamp(lo as i64, hi as i64);
            prop_assert_eq!(got[i], want, "element {}", i);
        }
        // Dequantizing gives back (q - z) * s.
        let back = Dequantize::with(axis as i64, block as i64)
            .dequantize(&super::store_int(dt, &shape, &got.iter().map(|v| *v as i32).collect::<Vec<_>>()).unwrap(), &st, Some(&zt))
            .unwrap();
        let back = back.as_slice::<f32>().unwrap();
        for i in 0..n {
            let k = naive_scale_index(i, &shape, &sshape, axis, block);
            prop_assert_eq!(back[i], (got[i] - z[k] as i64) as f32 * s[k], "element {}", i);
        }
    }

    #[test]
    fn int4_quantize_saturates((shape, axis, block, sshape) in layout(), seed in any::<u64>()) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let n: usize = shape.iter().product();
        let ns: usize = sshape.iter().product();
        let x: Vec<f32> = (0..n).map(|_| rng.random_range(-20.0f32..20.0)).collect();
        let s: Vec<f32> = (0..ns).map(|_| rng.random_range(0.5f32..2.0)).collect();
        let xt = Tensor::from_slice(&shape, &x).unwrap();
        let st = Tensor::from_slice(&sshape, &s).unwrap();
        let got = Quantize::with(axis as i64, block as i64, Some(DType::I4)).quantize(&xt, &st, None).unwrap();
        prop_assert_eq!(got.dtype(), DType::I4);
        let got = got.as_slice::<i8>().unwrap();
        for i in 0..n {
            let k = naive_scale_index(i, &shape, &sshape, axis, block);
            let want = (x[i] / s[k]).round_ties_even().clamp(-8.0, 7.0) as i8;
            prop_assert_eq!(got[i], want, "element {}", i);
        }
    }
}

#[test]
fn bad_block_shapes_are_rejected() {
    let x = Tensor::from_slice(&[2, 6], &[0f32; 12]).unwrap();
    // 6 elements in blocks of 2 need exactly 3 scales on the axis.
    for s in [2usize, 4] {
        let st = Tensor::from_slice(&[2, s], &vec![1f32; 2 * s]).unwrap();
        assert!(Quantize::with(1, 2, None).quantize(&x, &st, None).is_err(), "{s} blocks");
    }
    let st = Tensor::from_slice(&[2, 3], &[1f32; 6]).unwrap();
    assert!(Quantize::with(1, 2, None).quantize(&x, &st, None).is_ok());
}

#[test]
fn dynamic_quantize_spec_example() {
    let (y, s, z) = super::dynamic::dynamic_quantize(&[0.0, 2.0, -3.0, -2.5, 1.34, 0.5]);
    assert_eq!(s, 5.0 / 255.0);
    assert_eq!(z, 153);
    assert_eq!(y, vec![153, 255, 0, 26, 221, 179]);
}
