//! Tests: the ONNX node tests of this family, and Resize against naive references.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vinort_ir::{Attr, DType, Node, Tensor};

use crate::test_support::{self as ts, Cases, NODE_TOL, prefixed, run_node, run_node_cases};

/// Name prefixes of the node tests of this family's ops.
const PREFIXES: &[&str] = &[
    "test_resize",
    "test_upsample",
    "test_gridsample",
    "test_affine_grid",
    "test_col2im",
    "test_center_crop_pad",
    "test_roialign",
    "test_nonmaxsuppression",
    "test_image_decoder",
];

const KNOWN_FAILURES: &[(&str, &str)] = &[];

#[test]
fn onnx_node_tests() {
    run_node_cases(Cases::Matching(&prefixed(PREFIXES)), KNOWN_FAILURES, NODE_TOL);
}

fn node(op: &str, opset: i64, attrs: Vec<(&str, Attr)>, n_in: usize) -> Node {
    ts::op(op, opset).inputs(n_in).attrs(attrs).build()
}

fn run(node: &Node, inputs: &[Option<Tensor>]) -> Tensor {
    run_node(node, inputs).unwrap_or_else(|e| panic!("{e}")).remove(0)
}

fn s(v: &str) -> Attr {
    Attr::String(v.into())
}

fn resize(attrs: Vec<(&str, Attr)>, x: Tensor, scales: Option<&[f32]>, sizes: Option<&[i64]>) -> Tensor {
    let sc = scales.map(|s| Tensor::from_slice(&[s.len()], s).unwrap());
    let sz = sizes.map(|s| Tensor::from_slice(&[s.len()], s).unwrap());
    run(&node("Resize", 19, attrs, 4), &[Some(x), None, sc, sz])
}

#[test]
fn spec_example_nearest_upsample() {
    // The spec's nearest example: [[1,2],[3,4]] scaled by [1,1,2,3] with asymmetric / floor.
    let x = Tensor::from_slice(&[1, 1, 2, 2], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let y = resize(
        vec![("mode", s("nearest")), ("coordinate_transformation_mode", s("asymmetric")), ("nearest_mode", s("floor"))],
        x,
        Some(&[1.0, 1.0, 2.0, 3.0]),
        None,
    );
    assert_eq!(y.shape(), &[1, 1, 4, 6]);
    let want = [1., 1., 1., 2., 2., 2., 1., 1., 1., 2., 2., 2., 3., 3., 3., 4., 4., 4., 3., 3., 3., 4., 4., 4.];
    assert_eq!(y.to_vec::<f32>().unwrap(), want.map(|v: f64| v as f32));
}

#[test]
fn spec_example_linear_half_pixel() {
    // 2x2 -> 4x4 bilinear, half_pixel: the first row is 1, 1.25, 1.75, 2 (hand-derived).
    let x = Tensor::from_slice(&[1, 1, 2, 2], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let y = resize(vec![("mode", s("linear"))], x, Some(&[1.0, 1.0, 2.0, 2.0]), None).to_vec::<f32>().unwrap();
    let want = [1.0, 1.25, 1.75, 2.0, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3.0, 3.25, 3.75, 4.0];
    assert_eq!(y, want);
}

#[test]
fn nearest_int8_and_uint8() {
    let x = Tensor::from_slice(&[1, 3], &[-5i8, 0, 7]).unwrap();
    let y = resize(vec![], x, None, Some(&[1, 6]));
    assert_eq!(y.to_vec::<i8>().unwrap(), [-5, -5, 0, 0, 7, 7]);
    let x = Tensor::from_slice(&[4], &[1u8, 2, 3, 4]).unwrap();
    let y = resize(vec![], x, None, Some(&[2]));
    // half_pixel: outputs sample 0.5 and 2.5, rounded down to 0 and 2.
    assert_eq!(y.to_vec::<u8>().unwrap(), [1, 3]);
}

/// Naive N-d resize: for each output element, the weighted sum over the cartesian product of
/// per-axis taps, computed from the spec formulas directly.
fn naive(x: &[f64], shape: &[usize], out: &[usize], linear: bool, ctm: &str) -> Vec<f64> {
    let r = shape.len();
    let n: usize = out.iter().product();
    let axis_taps = |a: usize, o: usize| -> Vec<(usize, f64)> {
        let (li, lo) = (shape[a] as f64, out[a] as f64);
        let sc = lo / li;
        let xo = match ctm {
            "asymmetric" => o as f64 / sc,
            "align_corners" => {
                if lo == 1.0 {
                    0.0
                } else {
                    o as f64 * (li - 1.0) / (lo - 1.0)
                }
            }
            _ => (o as f64 + 0.5) / sc - 0.5,
        };
        let clamp = |v: f64| v.clamp(0.0, li - 1.0) as usize;
        if linear {
            let xc = xo.clamp(0.0, li - 1.0);
            let f = xc.floor();
            vec![(clamp(f), 1.0 - (xc - f)), (clamp(f + 1.0), xc - f)]
        } else {
            let f = xo.floor();
            let i = if xo - f > 0.5 { f + 1.0 } else { f };
            vec![(clamp(i), 1.0)]
        }
    };
    let st = super::strides(shape);
    (0..n)
        .map(|i| {
            let mut rem = i;
            let mut idx = vec![0; r];
            for a in (0..r).rev() {
                idx[a] = rem % out[a];
                rem /= out[a];
            }
            let taps: Vec<Vec<(usize, f64)>> = (0..r).map(|a| axis_taps(a, idx[a])).collect();
            let mut sum = 0.0;
            let mut k = vec![0; r];
            loop {
                let (mut w, mut off) = (1.0, 0);
                for a in 0..r {
                    w *= taps[a][k[a]].1;
                    off += taps[a][k[a]].0 * st[a];
                }
                sum += w * x[off];
                let mut a = r;
                loop {
                    if a == 0 {
                        return sum;
                    }
                    a -= 1;
                    k[a] += 1;
                    if k[a] < taps[a].len() {
                        break;
                    }
                    k[a] = 0;
                }
            }
        })
        .collect()
}

#[test]
fn random_shapes_against_naive() {
    let mut rng = StdRng::seed_from_u64(7);
    for case in 0..60 {
        let r = rng.random_range(1..=4);
        let shape: Vec<usize> = (0..r).map(|_| rng.random_range(1..=5)).collect();
        let out: Vec<usize> = shape.iter().map(|d| rng.random_range(1..=2 * d + 2)).collect();
        let n: usize = shape.iter().product();
        let x: Vec<f64> = (0..n).map(|_| rng.random_range(-2.0..2.0f32) as f64).collect();
        let xt = Tensor::build::<f32>(&shape, |o| o.iter_mut().zip(&x).for_each(|(o, v)| *o = *v as f32));
        let sizes: Vec<i64> = out.iter().map(|v| *v as i64).collect();
        for (linear, ctm) in
            [(false, "half_pixel"), (true, "half_pixel"), (true, "asymmetric"), (true, "align_corners")]
        {
            let mode = if linear { "linear" } else { "nearest" };
            let y = resize(
                vec![("mode", s(mode)), ("coordinate_transformation_mode", s(ctm))],
                xt.clone(),
                None,
                Some(&sizes),
            );
            assert_eq!(y.shape(), out.as_slice());
            let got = y.to_f64_vec().unwrap();
            let want = naive(&x, &shape, &out, linear, ctm);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!((g - w).abs() <= 1e-5, "case {case} {mode}/{ctm} {shape:?}->{out:?} [{i}]: {g} vs {w}");
            }
        }
    }
}

#[test]
fn f16_and_f64_linear_agree_with_f32() {
    let v: Vec<f32> = (0..24).map(|i| i as f32 * 0.25).collect();
    let x32 = Tensor::from_slice(&[2, 3, 4], &v).unwrap();
    let x64 = Tensor::build::<f64>(&[2, 3, 4], |o| o.iter_mut().zip(&v).for_each(|(o, v)| *o = *v as f64));
    let x16 = Tensor::build::<half::f16>(&[2, 3, 4], |o| {
        o.iter_mut().zip(&v).for_each(|(o, v)| *o = half::f16::from_f32(*v))
    });
    let a = vec![("mode", s("linear"))];
    let y32 = resize(a.clone(), x32, None, Some(&[2, 5, 7])).to_f64_vec().unwrap();
    let y64 = resize(a.clone(), x64, None, Some(&[2, 5, 7]));
    assert_eq!(y64.dtype(), DType::F64);
    let y16 = resize(a, x16, None, Some(&[2, 5, 7]));
    assert_eq!(y16.dtype(), DType::F16);
    for ((a, b), c) in y32.iter().zip(y64.to_f64_vec().unwrap()).zip(y16.to_f64_vec().unwrap()) {
        assert!((a - b).abs() < 1e-5 && (a - c).abs() < 1e-2, "{a} {b} {c}");
    }
}

/// Output sizes a hostile model sets to astronomical values (RoiAlign's output_height ×
/// output_width, Col2Im's image_shape) are refused as a memory-limit error before anything is
/// allocated, never an allocation abort (found by the black-box run of issue 33: 120 TB).
#[test]
fn astronomical_output_sizes_are_a_memory_limit_error() {
    let roi = node(
        "RoiAlign",
        16,
        vec![
            ("output_height", Attr::Int(1 << 24)),
            ("output_width", Attr::Int(1 << 24)),
            ("mode", Attr::String("max".into())),
        ],
        3,
    );
    let x = Tensor::from_vec(&[1, 1, 2, 2], vec![1f32; 4]).unwrap_or_else(|e| panic!("{e}"));
    let rois = Tensor::from_vec(&[1, 4], vec![0f32, 0.0, 1.0, 1.0]).unwrap_or_else(|e| panic!("{e}"));
    let bi = Tensor::from_vec(&[1], vec![0i64]).unwrap_or_else(|e| panic!("{e}"));
    let e = run_node(&roi, &[Some(x), Some(rois), Some(bi)]).err().map(|e| e.to_string());
    assert!(e.as_deref().is_some_and(|e| e.contains("memory")), "{e:?}");
    let col = node("Col2Im", 18, vec![], 3);
    let cols = Tensor::from_vec(&[1, 1, 1], vec![1f32]).unwrap_or_else(|e| panic!("{e}"));
    let big = Tensor::from_vec(&[2], vec![1i64 << 31, 1 << 31]).unwrap_or_else(|e| panic!("{e}"));
    let block = Tensor::from_vec(&[2], vec![1i64 << 31, 1 << 31]).unwrap_or_else(|e| panic!("{e}"));
    let e = run_node(&col, &[Some(cols), Some(big), Some(block)]).err().map(|e| e.to_string());
    assert!(e.is_some(), "Col2Im with a 2^62-pixel image ran");
}
