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

/// A naive ConvInteger (2-D, NCHW) straight from the definition: `Σ (x − zx)(w − zw[m])` over
/// each window, padding contributing nothing, in i64 then wrapped to i32.
#[allow(clippy::too_many_arguments)]
fn naive_conv_integer(
    x: &[i32],
    [n, c, h, wd]: [usize; 4],
    w: &[i32],
    [m, cg, kh, kw]: [usize; 4],
    zx: i32,
    zw: &[i32],
    (group, stride, pad, dil): (usize, usize, usize, usize),
) -> (Vec<usize>, Vec<i32>) {
    let oh = (h + 2 * pad - dil * (kh - 1) - 1) / stride + 1;
    let ow = (wd + 2 * pad - dil * (kw - 1) - 1) / stride + 1;
    let mg = m / group;
    let mut out = vec![0i32; n * m * oh * ow];
    for ni in 0..n {
        for oc in 0..m {
            let gi = oc / mg;
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = 0i64;
                    for ci in 0..cg {
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let iy = (oy * stride + ky * dil) as i64 - pad as i64;
                                let ix = (ox * stride + kx * dil) as i64 - pad as i64;
                                if iy < 0 || ix < 0 || iy >= h as i64 || ix >= wd as i64 {
                                    continue;
                                }
                                let xv = x[((ni * c + gi * cg + ci) * h + iy as usize) * wd + ix as usize] - zx;
                                let wv = w[((oc * cg + ci) * kh + ky) * kw + kx] - zw[oc];
                                acc += i64::from(xv) * i64::from(wv);
                            }
                        }
                    }
                    out[((ni * m + oc) * oh + oy) * ow + ox] = acc as i32;
                }
            }
        }
    }
    (vec![n, m, oh, ow], out)
}

/// `len` values of an 8-bit type (i8 when `signed`, else u8), as i32.
fn draw_int8(rng: &mut rand::rngs::StdRng, len: usize, signed: bool) -> Vec<i32> {
    use rand::Rng;
    (0..len).map(|_| if signed { rng.random_range(-128..128) } else { rng.random_range(0..256) }).collect()
}

/// `v` as an i8 (`signed`) or u8 tensor of `shape`.
fn int8_tensor(v: &[i32], shape: &[usize], signed: bool) -> Tensor {
    if signed {
        Tensor::from_vec(shape, v.iter().map(|v| *v as i8).collect::<Vec<_>>())
    } else {
        Tensor::from_vec(shape, v.iter().map(|v| *v as u8).collect::<Vec<_>>())
    }
    .unwrap_or_else(|e| panic!("{e}"))
}

proptest! {
    #![proptest_config(config(48))]

    /// ConvInteger (the packed int8 product, and the exact-f32 depthwise path) equals the
    /// definition: plain, grouped and depthwise, 1x1 to 5x5 windows, strides, pads,
    /// dilations, u8 or i8 operands, per-tensor or per-channel weight zero points; both the
    /// generic kernel and the one prepared from constant weights, with X's zero point a
    /// constant or (as after DynamicQuantizeLinear) a runtime value.
    #[test]
    fn conv_integer_matches_definition(seed in any::<u64>(), kind in 0usize..4, k in 1usize..6, stride in 1usize..3,
                                       pad in 0usize..3, dil in 1usize..3, x_signed in any::<bool>(),
                                       w_signed in any::<bool>(), per_channel in any::<bool>()) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let (n, c, m, group) = match kind {
            0 => (1, 3, 5, 1),
            1 => (2, 4, 6, 2),
            2 => (1, 6, 6, 6),
            _ => (2, 16, 8, 1),
        };
        // The last kind has planes of more than one 192-pixel chunk.
        let extra = if kind == 3 { 20 } else { 6 };
        let (h, wd) = (k * dil + rng.random_range(0..extra), k * dil + rng.random_range(0..extra));
        let cg = c / group;
        let xv = draw_int8(&mut rng, n * c * h * wd, x_signed);
        let wv = draw_int8(&mut rng, m * cg * k * k, w_signed);
        let zx = draw_int8(&mut rng, 1, x_signed)[0];
        let zw = draw_int8(&mut rng, if per_channel { m } else { 1 }, w_signed);
        let zw_shape = [zw.len()];
        let inputs = [
            Some(int8_tensor(&xv, &[n, c, h, wd], x_signed)),
            Some(int8_tensor(&wv, &[m, cg, k, k], w_signed)),
            Some(int8_tensor(&[zx], &[], x_signed)),
            Some(int8_tensor(&zw, &zw_shape, w_signed)),
        ];
        let p = pad as i64;
        let node = crate::test_support::op("ConvInteger", 10).inputs(4).attrs([
            ("group", vinort_ir::Attr::Int(group as i64)),
            ("strides", vinort_ir::Attr::Ints(vec![stride as i64; 2])),
            ("pads", vinort_ir::Attr::Ints(vec![p; 4])),
            ("dilations", vinort_ir::Attr::Ints(vec![dil as i64; 2])),
        ]).build();
        let zw_full: Vec<i32> = if per_channel { zw.clone() } else { vec![zw[0]; m] };
        let (shape, want) = naive_conv_integer(&xv, [n, c, h, wd], &wv, [m, cg, k, k], zx, &zw_full, (group, stride, pad, dil));
        use crate::test_support::Known;
        for known in [Known::TypesAndConsts(&[1, 3]), Known::TypesAndConsts(&[1, 2, 3]), Known::Types] {
            let got = crate::test_support::run_with(&node, &inputs, known).unwrap_or_else(|e| panic!("{e}"));
            prop_assert_eq!(got[0].shape(), shape.as_slice());
            prop_assert_eq!(got[0].as_slice::<i32>().unwrap_or_default(), want.as_slice());
        }
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// QLinearConv equals its definition as ONNX Runtime computes it, `saturate(round_half_even(
    /// f32(Σ(x−zx)(w−zw) + bias) · x_scale·w_scale/y_scale) + zy)` (one f32 product), both when
    /// its parameters are constants at build time
    /// (the prepared kernel: packed weights, depthwise in f32, NCHW requantization in tiles)
    /// and when they are not (the generic kernel): plain, grouped, depthwise and pointwise
    /// convolutions, u8/i8 inputs, weights and outputs, per-tensor or per-channel weights.
    #[test]
    fn qlinear_conv_matches_definition(seed in any::<u64>(), kind in 0usize..5, k in 1usize..4, stride in 1usize..3,
                                       pad in 0usize..2, x_signed in any::<bool>(), w_signed in any::<bool>(),
                                       y_signed in any::<bool>(), per_channel in any::<bool>()) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let (n, c, m, group, k) = match kind {
            0 => (1, 3, 5, 1, k),
            1 => (2, 4, 6, 2, k),
            2 => (1, 24, 24, 24, k),
            3 => (1, 40, 36, 1, 1),
            _ => (2, 16, 8, 1, k),
        };
        let pad = if kind == 3 { 0 } else { pad };
        let (h, wd) = (k + rng.random_range(0..20), k + rng.random_range(0..20));
        let cg = c / group;
        let xv = draw_int8(&mut rng, n * c * h * wd, x_signed);
        let wv = draw_int8(&mut rng, m * cg * k * k, w_signed);
        let zx = draw_int8(&mut rng, 1, x_signed)[0];
        let zw = draw_int8(&mut rng, if per_channel { m } else { 1 }, w_signed);
        let zy = draw_int8(&mut rng, 1, y_signed)[0];
        let bias: Vec<i32> = (0..m).map(|_| rng.random_range(-5000..5000)).collect();
        let x_scale: f32 = rng.random_range(0.001..0.1);
        let y_scale: f32 = rng.random_range(0.01..0.5);
        let w_scale: Vec<f32> = (0..zw.len()).map(|_| rng.random_range(0.0005..0.05)).collect();
        let f = |v: &[f32], shape: &[usize]| Tensor::from_vec(shape, v.to_vec()).unwrap_or_else(|e| panic!("{e}"));
        let per = [zw.len()];
        let inputs = [
            Some(int8_tensor(&xv, &[n, c, h, wd], x_signed)),
            Some(f(&[x_scale], &[])),
            Some(int8_tensor(&[zx], &[], x_signed)),
            Some(int8_tensor(&wv, &[m, cg, k, k], w_signed)),
            Some(f(&w_scale, &per)),
            Some(int8_tensor(&zw, &per, w_signed)),
            Some(f(&[y_scale], &[])),
            Some(int8_tensor(&[zy], &[], y_signed)),
            Some(Tensor::from_vec(&[m], bias.clone()).unwrap_or_else(|e| panic!("{e}"))),
        ];
        let p = pad as i64;
        let node = crate::test_support::op("QLinearConv", 10).inputs(9).attrs([
            ("group", vinort_ir::Attr::Int(group as i64)),
            ("strides", vinort_ir::Attr::Ints(vec![stride as i64; 2])),
            ("pads", vinort_ir::Attr::Ints(vec![p; 4])),
        ]).build();
        let zw_full: Vec<i32> = if per_channel { zw.clone() } else { vec![zw[0]; m] };
        let (shape, acc) = naive_conv_integer(&xv, [n, c, h, wd], &wv, [m, cg, k, k], zx, &zw_full, (group, stride, pad, 1));
        let (lo, hi) = if y_signed { (-128, 127) } else { (0, 255) };
        let plane = shape[2] * shape[3];
        let want: Vec<i32> = acc.iter().enumerate().map(|(i, a)| {
            let oc = (i / plane) % m;
            let ws = if per_channel { w_scale[oc] } else { w_scale[0] };
            // ONNX Runtime's requantization (MLAS): the sum as f32 times the f32 multiplier,
            // rounded half to even, plus the zero point, saturated.
            let v = (a.wrapping_add(bias[oc]) as f32 * (x_scale * ws / y_scale)).round_ties_even();
            (v as i64 + i64::from(zy)).clamp(lo, hi) as i32
        }).collect();
        let consts = [1, 2, 3, 4, 5, 6, 7, 8];
        for known in [crate::test_support::Known::TypesAndConsts(&consts), crate::test_support::Known::Types] {
            let got = crate::test_support::run_with(&node, &inputs, known).unwrap_or_else(|e| panic!("{e}"));
            prop_assert_eq!(got[0].shape(), shape.as_slice());
            let got: Vec<i32> = if y_signed {
                got[0].as_slice::<i8>().unwrap_or_default().iter().map(|v| i32::from(*v)).collect()
            } else {
                got[0].as_slice::<u8>().unwrap_or_default().iter().map(|v| i32::from(*v)).collect()
            };
            prop_assert_eq!(&got, &want);
        }
    }
}

proptest! {
    #![proptest_config(config(24))]

    /// DynamicQuantizeLinear equals the spec's formulas, computed here element by element in
    /// f32: the range widened to 0, `scale = (max − min) / 255`, `zp = saturate(round(−min /
    /// scale))`, `y = saturate(round(x / scale) + zp)`, on tensors large enough to be split
    /// across threads, with a NaN somewhere (the whole range becomes NaN) or an infinity.
    #[test]
    fn dynamic_quantize_matches_spec(seed in any::<u64>(), len in prop_oneof![1usize..300, 60_000usize..200_000],
                                     spread in 0.001f32..1000.0, offset in -1.0f32..1.0, special in 0usize..4) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut x: Vec<f32> = (0..len).map(|_| (rng.random_range(-1.0f32..1.0) + offset) * spread).collect();
        let at = rng.random_range(0..len);
        match special {
            0 => x[at] = f32::NAN,
            1 => x[at] = f32::INFINITY,
            _ => {}
        }
        let (hi, lo) = if x.iter().any(|v| v.is_nan()) {
            (f32::NAN, f32::NAN)
        } else {
            (x.iter().fold(0f32, |a, v| a.max(*v)), x.iter().fold(0f32, |a, v| a.min(*v)))
        };
        let scale = if hi == lo { 1.0 } else { hi - lo } / 255.0;
        let zp = (-lo / scale).clamp(0.0, 255.0).round_ties_even();
        let q = |v: f32| {
            let r = ((v / scale).round_ties_even() + zp).clamp(0.0, 255.0);
            if r.is_nan() { 0 } else { r as u8 }
        };
        let want: Vec<u8> = x.iter().map(|v| q(*v)).collect();
        let (y, s, z) = super::dynamic::dynamic_quantize(&x);
        prop_assert_eq!(s.to_bits(), scale.to_bits());
        prop_assert_eq!(z, if zp.is_nan() { 0 } else { zp as u8 });
        prop_assert!(y == want, "quantized data differs");
    }
}
