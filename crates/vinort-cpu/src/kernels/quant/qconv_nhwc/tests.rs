//! The channels-last kernel (both its AVX-512 and its portable loops) against ONNX's
//! QLinearConv as the generic kernel computes it on the NCHW form of the same input: equal
//! byte for byte, for any window, group form, element types and zero points.

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vinort_ir::{Attr, DType, RunContext, Tensor, Value, ValueType};

use super::NhwcConv;
use crate::kernel::{Kernel, NodeInfo};
use crate::test_support::{self as ts, Known};

/// `t` (4-D) with its axes permuted.
fn permute(t: &Tensor, perm: [usize; 4]) -> Tensor {
    let s = t.shape().to_vec();
    let shape: Vec<usize> = perm.iter().map(|&a| s[a]).collect();
    let bytes = t.as_bytes();
    let mut out = vec![0u8; bytes.len()];
    let stride = [s[1] * s[2] * s[3], s[2] * s[3], s[3], 1];
    let mut i = 0;
    for a in 0..shape[0] {
        for b in 0..shape[1] {
            for c in 0..shape[2] {
                for d in 0..shape[3] {
                    let idx = [a, b, c, d];
                    let src: usize = (0..4).map(|j| idx[j] * stride[perm[j]]).sum();
                    out[i] = bytes[src];
                    i += 1;
                }
            }
        }
    }
    match t.dtype() {
        DType::U8 => Tensor::from_vec(&shape, out),
        _ => Tensor::from_vec(&shape, out.into_iter().map(|b| b as i8).collect::<Vec<_>>()),
    }
    .unwrap_or_else(|e| panic!("{e}"))
}

fn bytes(rng: &mut StdRng, dtype: DType, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<u8> = (0..n).map(|_| rng.random()).collect();
    match dtype {
        DType::U8 => Tensor::from_vec(shape, v),
        _ => Tensor::from_vec(shape, v.into_iter().map(|b| b as i8).collect::<Vec<_>>()),
    }
    .unwrap_or_else(|e| panic!("{e}"))
}

fn zero_point(rng: &mut StdRng, dtype: DType, n: usize) -> Tensor {
    bytes(rng, dtype, &[n])
}

/// Weight zero points at the type's center: 0 for i8, 128 for u8.
fn weight_center(dtype: DType, n: usize) -> Tensor {
    match dtype {
        DType::U8 => Tensor::from_vec(&[n], vec![128u8; n]),
        _ => Tensor::from_vec(&[n], vec![0i8; n]),
    }
    .unwrap_or_else(|e| panic!("{e}"))
}

fn dtype(signed: bool) -> DType {
    if signed { DType::I8 } else { DType::U8 }
}

proptest! {
    #![proptest_config(ts::config(96))]

    #[test]
    fn channels_last_equals_onnx_qlinearconv(
        seed in any::<u64>(), n in 1usize..3, c in prop_oneof![1usize..40, 60usize..140], m in 1usize..24, depthwise in any::<bool>(),
        k in proptest::array::uniform2(prop_oneof![3 => 1usize..4, 1 => 4usize..7]), s in proptest::array::uniform2(1usize..3),
        d in proptest::array::uniform2(1usize..3), pads in proptest::array::uniform4(0usize..4),
        h in 1usize..10, w in 1usize..10, types in proptest::array::uniform3(any::<bool>()),
        per_channel in any::<bool>(), bias in any::<bool>(), symmetric in any::<bool>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let (xt, wt, yt) = (dtype(types[0]), dtype(types[1]), dtype(types[2]));
        let (m, group) = if depthwise { (c, c) } else { (m, 1) };
        let cg = c / group;
        let reach = |a: usize| d[a] * (k[a] - 1) + 1;
        let (h, w) = (h.max(reach(0).saturating_sub(pads[0] + pads[2])), w.max(reach(1).saturating_sub(pads[1] + pads[3])));
        let x = bytes(&mut rng, xt, &[n, c, h, w]);
        let wz_n = if per_channel { m } else { 1 };
        let ws: Vec<f32> = (0..wz_n).map(|_| rng.random_range(0.001f32..0.05)).collect();
        let inputs: Vec<Option<Tensor>> = vec![
            Some(x.clone()),
            Some(Tensor::scalar(rng.random_range(0.005f32..0.05))),
            Some(zero_point(&mut rng, xt, 1).reshaped(&[]).unwrap_or_else(|e| panic!("{e}"))),
            Some(bytes(&mut rng, wt, &[m, cg, k[0], k[1]])),
            Some(Tensor::from_vec(&[wz_n], ws).unwrap_or_else(|e| panic!("{e}"))),
            // Symmetric weights (zero point 0 for i8, 128 for u8) are what the VNNI depthwise
            // loop takes.
            Some(if symmetric { weight_center(wt, wz_n) } else { zero_point(&mut rng, wt, wz_n) }),
            Some(Tensor::scalar(rng.random_range(0.02f32..0.3))),
            Some(zero_point(&mut rng, yt, 1).reshaped(&[]).unwrap_or_else(|e| panic!("{e}"))),
            bias.then(|| Tensor::from_vec(&[m], (0..m).map(|_| rng.random_range(-20000i32..20000)).collect::<Vec<_>>())
                .unwrap_or_else(|e| panic!("{e}"))),
        ];
        let attrs = vec![
            ("kernel_shape", Attr::Ints(k.iter().map(|v| *v as i64).collect())),
            ("strides", Attr::Ints(s.iter().map(|v| *v as i64).collect())),
            ("dilations", Attr::Ints(d.iter().map(|v| *v as i64).collect())),
            ("pads", Attr::Ints(pads.iter().map(|v| *v as i64).collect())),
            ("group", Attr::Int(group as i64)),
        ];
        let present: Vec<bool> = inputs.iter().map(Option::is_some).collect();
        let onnx = ts::op("QLinearConv", 10).input_mask(&present).attrs(attrs.clone()).build();
        let want = ts::run_with(&onnx, &inputs, Known::Types).unwrap_or_else(|e| panic!("{e}")).remove(0);
        let want = permute(&want, [0, 2, 3, 1]);

        // Through the registry: com.microsoft QLinearConv, channels_last, constants known.
        let mut nhwc_inputs = inputs.clone();
        nhwc_inputs[0] = Some(permute(&x, [0, 2, 3, 1]));
        let node = ts::op("QLinearConv", 1).domain("com.microsoft").input_mask(&present)
            .attrs(attrs).attrs([("channels_last", Attr::Int(1))]).build();
        let consts: Vec<usize> = (1..9).collect();
        let got = ts::run_with(&node, &nhwc_inputs, Known::TypesAndConsts(&consts)).unwrap_or_else(|e| panic!("{e}")).remove(0);
        prop_assert_eq!(got.shape(), want.shape());
        prop_assert_eq!(got.as_bytes(), want.as_bytes());

        // The prepared kernel itself, with the AVX-512 loops and with the portable ones.
        let info = NodeInfo {
            node: &node,
            inputs: nhwc_inputs.iter().map(|t| t.as_ref().map_or(ValueType::Unknown, |t| ValueType::tensor(t.dtype(), t.shape()))).collect(),
            consts: nhwc_inputs.iter().enumerate().map(|(i, t)| if i == 0 { None } else { t.clone() }).collect(),
            outputs: vec![ValueType::Unknown],
            scope: Default::default(),
        };
        let mut kernel = NhwcConv::new(&info).unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("not prepared"));
        let xv = Value::Tensor(nhwc_inputs[0].clone().unwrap_or_else(|| unreachable!()));
        #[cfg(target_arch = "x86_64")]
        if depthwise && symmetric && crate::isa::avx512_vnni() {
            prop_assert!(kernel.vnni.is_some(), "symmetric depthwise weights take the VNNI loop");
        }
        for (vnni, avx512) in [(true, kernel.avx512), (false, kernel.avx512), (false, false)] {
            #[cfg(target_arch = "x86_64")]
            if !vnni {
                kernel.vnni = None;
            }
            kernel.avx512 = avx512;
            let y = kernel.run(&[Some(&xv)], &RunContext::default()).unwrap_or_else(|e| panic!("{e}"));
            let y = y[0].as_tensor().unwrap_or_else(|e| panic!("{e}"));
            prop_assert_eq!(y.as_bytes(), want.as_bytes(), "vnni {} avx512 {}", vnni, avx512);
        }
    }
}

/// A wrong input (rank, type) is a clear error, not a panic.
#[test]
fn wrong_input_is_an_error() {
    let mut rng = StdRng::seed_from_u64(1);
    let inputs: Vec<Option<Tensor>> = vec![
        Some(bytes(&mut rng, DType::U8, &[1, 4, 4, 3])),
        Some(Tensor::scalar(0.02f32)),
        Some(Tensor::scalar(128u8)),
        Some(bytes(&mut rng, DType::I8, &[2, 3, 1, 1])),
        Some(Tensor::scalar(0.01f32)),
        Some(Tensor::scalar(0i8)),
        Some(Tensor::scalar(0.1f32)),
        Some(Tensor::scalar(128u8)),
    ];
    let node =
        ts::op("QLinearConv", 1).domain("com.microsoft").inputs(8).attrs([("channels_last", Attr::Int(1))]).build();
    let consts: Vec<usize> = (1..8).collect();
    let ok = ts::run_with(&node, &inputs, Known::TypesAndConsts(&consts)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok[0].shape(), &[1, 4, 4, 2]);
    let mut bad = inputs.clone();
    bad[0] = Some(bytes(&mut rng, DType::U8, &[4, 4, 3]));
    ts::expect_err(ts::run_with(&node, &bad, Known::TypesAndConsts(&consts)), "4-D");
    bad[0] = Some(bytes(&mut rng, DType::U8, &[1, 4, 4, 5]));
    ts::expect_err(ts::run_with(&node, &bad, Known::TypesAndConsts(&consts)), "groups");
}

/// The portable and AVX-512 requantizations against ONNX Runtime's formula written out here
/// (the sum as f32, one f32 product, rounded half to even, plus the zero point, saturated), on
/// the cases where another formula would differ: half-integer f32 products of inexact exact
/// products (where the f64 product rounds the other way), sums beyond 2²⁴ (where the f32 sum
/// rounds), odd and even zero points, both output types.
#[cfg(target_arch = "x86_64")]
#[test]
fn requantization_is_onnxruntimes_formula() {
    use super::{Q8, Requant, requant_body, x86::requant_avx512};

    fn check<Y: Q8 + PartialEq + std::fmt::Debug>(rng: &mut StdRng, range: (i32, i32)) {
        // 64 + 16 + 5 channels: the 64-wide loop, the 16-wide one and the tail; two rows.
        let n = 85;
        let mut hazards = [0usize; 2];
        for round in 0..400 {
            let mult: Vec<f32> = (0..n)
                .map(|_| match rng.random_range(0..4) {
                    0 => 2f32.powi(-rng.random_range(0..12)),
                    1 => rng.random_range(1e-7f32..1e-3),
                    2 => rng.random_range(0.001f32..2.0),
                    _ => 3.0 * 2f32.powi(-rng.random_range(1..10)),
                })
                .collect();
            let bias: Vec<i32> = (0..n).map(|_| rng.random_range(-1000..1000)).collect();
            let kinds = if round % 3 == 0 { 4 } else { 2 };
            let acc: Vec<i32> = (0..2 * n)
                .map(|i| i % n)
                .map(|c| {
                    let m = f64::from(mult[c]);
                    match rng.random_range(0..kinds) {
                        // Near a half-integer product: (k + 1/2) / m − bias, rounded.
                        0 => ((rng.random_range(-300..300) as f64 + 0.5) / m).round() as i32 - bias[c],
                        1 => rng.random_range(-5000..5000),
                        // Beyond 2²⁴ and near a half-integer product: where an f32 sum rounds.
                        2 => {
                            let k = rng.random_range(-200..200) as f64 + 0.5;
                            let a = (k / m).round() as i64 + rng.random_range(-3..=3);
                            a.clamp(i32::MIN.into(), i32::MAX.into()) as i32 - bias[c]
                        }
                        _ => rng.random_range(i32::MIN..i32::MAX),
                    }
                })
                .collect();
            let zy = rng.random_range(range.0..=range.1);
            let want: Vec<Y> = acc
                .iter()
                .enumerate()
                .map(|(i, &acc)| {
                    let c = i % n;
                    let a = acc.wrapping_add(bias[c]);
                    let ort = ((a as f32 * mult[c]).round_ties_even() as i64 + i64::from(zy))
                        .clamp(range.0.into(), range.1.into());
                    // Where exact arithmetic would give another value, by cause: the test must
                    // reach both for the comparison to mean anything.
                    let exact = ((f64::from(a) * f64::from(mult[c])).round_ties_even() as i64 + i64::from(zy))
                        .clamp(range.0.into(), range.1.into());
                    if ort != exact {
                        hazards[usize::from(a.unsigned_abs() > 1 << 24)] += 1;
                    }
                    Y::from_i32(ort as i32)
                })
                .collect();
            let q = Requant { mult: &mult, bias: &bias, zy, range };
            let mut got = vec![Y::default(); 2 * n];
            for (a, g) in acc.chunks(n).zip(got.chunks_mut(n)) {
                requant_body(&q, a, g);
            }
            assert_eq!(got, want, "portable, round {round}, zy {zy}");
            if crate::isa::avx512() {
                let mut got = vec![Y::default(); 2 * n];
                // SAFETY: the CPU has AVX-512 (checked above).
                unsafe { requant_avx512(&q, &acc, &mut got) };
                assert_eq!(got, want, "AVX-512, round {round}, zy {zy}");
            }
        }
        assert!(
            hazards[0] > 0 && hazards[1] > 0,
            "lanes exact arithmetic would round otherwise (ties, big sums): {hazards:?}"
        );
    }
    let mut rng = StdRng::seed_from_u64(7);
    check::<u8>(&mut rng, (0, 255));
    check::<i8>(&mut rng, (-128, 127));
}
