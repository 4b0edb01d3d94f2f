//! ONNX node tests of this family's ops, and checks against naive references.

use proptest::prelude::*;
use vinort_ir::{DType, Tensor};

use super::nll::{LossAttrs, Reduction, log_softmax_axis1, nll};
use crate::kernels::linalg::einsum::einsum_for_test;
use crate::test_support::{Cases, NODE_TOL, config, f32_tensor as f32t, prefixed, run_node_cases};

/// Name prefixes of the node tests of this family's ops.
const PREFIXES: &[&str] = &[
    "test_nllloss_",
    "test_sce_",
    "test_einsum_",
    "test_cumprod_",
    "test_det_",
    "test_unique_",
    "test_bitcast_",
    "test_maxunpool_",
    "test_momentum",
    "test_nesterov_momentum",
    "test_adagrad",
    "test_adam",
    "test_tensorscatter",
];

#[test]
fn onnx_node_tests() {
    run_node_cases(Cases::Matching(&prefixed(PREFIXES)), &[], NODE_TOL);
}

// ---------------------------------------------------------------- naive references

/// The loss of one (n, c, d) position by the textbook formula.
fn naive_nll(
    x: &[f64],
    (n, c, d): (usize, usize, usize),
    t: &[i64],
    w: Option<&[f64]>,
    ii: Option<i64>,
    red: Reduction,
) -> Vec<f64> {
    let mut l = Vec::new();
    let mut den = 0.0;
    for b in 0..n {
        for j in 0..d {
            let k = t[b * d + j];
            if Some(k) == ii {
                l.push(0.0);
                continue;
            }
            let wt = w.map_or(1.0, |w| w[k as usize]);
            l.push(-wt * x[(b * c + k as usize) * d + j]);
            den += wt;
        }
    }
    match red {
        Reduction::None => l,
        Reduction::Sum => vec![l.iter().sum()],
        Reduction::Mean => vec![l.iter().sum::<f64>() / den],
    }
}

fn reduction() -> impl Strategy<Value = Reduction> {
    prop_oneof![Just(Reduction::None), Just(Reduction::Sum), Just(Reduction::Mean)]
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn nll_matches_naive(
        n in 1usize..4, c in 1usize..5, d in 1usize..4, seed in any::<u64>(),
        red in reduction(), use_w in any::<bool>(), ii in prop::option::of(0i64..5),
    ) {
        use rand::{Rng, SeedableRng};
        let mut r = rand::rngs::StdRng::seed_from_u64(seed);
        let x: Vec<f64> = (0..n * c * d).map(|_| r.random_range(-3.0..3.0)).collect();
        let t: Vec<i64> = (0..n * d).map(|_| r.random_range(0..c as i64)).collect();
        let w: Vec<f64> = (0..c).map(|_| r.random_range(0.1..2.0)).collect();
        let w = use_w.then_some(w.as_slice());
        // Keep at least one target counted so a mean is defined.
        prop_assume!(ii != Some(t[0]));
        let attrs = LossAttrs { reduction: red, ignore_index: ii };
        let (got, shape) = nll(&x, &[n, c, d], &t, &[n, d], w, attrs).unwrap();
        let want = naive_nll(&x, (n, c, d), &t, w, ii, red);
        prop_assert_eq!(shape.len(), if red == Reduction::None { 2 } else { 0 });
        for (g, w) in got.iter().zip(&want) {
            prop_assert!((g - w).abs() <= 1e-9 * (1.0 + w.abs()), "{} vs {}", g, w);
        }
    }

    #[test]
    fn log_softmax_matches_naive(n in 1usize..3, c in 1usize..5, d in 1usize..4, seed in any::<u64>()) {
        use rand::{Rng, SeedableRng};
        let mut r = rand::rngs::StdRng::seed_from_u64(seed);
        let x: Vec<f64> = (0..n * c * d).map(|_| r.random_range(-5.0..5.0)).collect();
        let mut got = x.clone();
        log_softmax_axis1(&mut got, &[n, c, d]);
        for b in 0..n {
            for j in 0..d {
                let s: f64 = (0..c).map(|k| x[(b * c + k) * d + j].exp()).sum();
                for k in 0..c {
                    let want = x[(b * c + k) * d + j] - s.ln();
                    prop_assert!((got[(b * c + k) * d + j] - want).abs() < 1e-9);
                }
            }
        }
    }

    #[test]
    fn einsum_batch_matmul_matches_naive(b in 1usize..3, m in 1usize..4, k in 1usize..4, n in 1usize..4, seed in any::<u64>()) {
        use rand::{Rng, SeedableRng};
        let mut r = rand::rngs::StdRng::seed_from_u64(seed);
        let a: Vec<f64> = (0..b * m * k).map(|_| r.random_range(-2.0..2.0)).collect();
        let bb: Vec<f64> = (0..b * k * n).map(|_| r.random_range(-2.0..2.0)).collect();
        let (ta, tb) = (f32t(&[b, m, k], &a), f32t(&[b, k, n], &bb));
        let got = einsum_for_test("bij,bjk->bik", &[&ta, &tb]).unwrap();
        prop_assert_eq!(got.shape(), &[b, m, n]);
        let g = got.to_f64_vec().unwrap();
        let (a, bb) = (ta.to_f64_vec().unwrap(), tb.to_f64_vec().unwrap());
        for z in 0..b {
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k).map(|q| a[(z * m + i) * k + q] * bb[(z * k + q) * n + j]).sum();
                    prop_assert!((g[(z * m + i) * n + j] - want).abs() < 1e-4);
                }
            }
        }
        // The same with an ellipsis and an implicit output.
        let got2 = einsum_for_test("...ij,...jk", &[&ta, &tb]).unwrap();
        prop_assert_eq!(got2.to_f64_vec().unwrap(), g);
    }
}

#[test]
fn einsum_forms() {
    let a = Tensor::from_vec(&[2, 3], vec![1i64, 2, 3, 4, 5, 6]).unwrap();
    let sq = Tensor::from_vec(&[3, 3], (1..=9).collect::<Vec<i32>>()).unwrap();
    let v = |t: Tensor| t.to_i64_vec().unwrap();
    assert_eq!(v(einsum_for_test("ij->ji", &[&a]).unwrap()), vec![1, 4, 2, 5, 3, 6]);
    assert_eq!(v(einsum_for_test("ji", &[&a]).unwrap()), vec![1, 4, 2, 5, 3, 6]);
    assert_eq!(v(einsum_for_test("ij", &[&a]).unwrap()), vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(v(einsum_for_test("ij->", &[&a]).unwrap()), vec![21]);
    assert_eq!(v(einsum_for_test("ij->i", &[&a]).unwrap()), vec![6, 15]);
    assert_eq!(v(einsum_for_test("ii->i", &[&sq]).unwrap()), vec![1, 5, 9]);
    assert_eq!(v(einsum_for_test("ii", &[&sq]).unwrap()), vec![15]);
    assert_eq!(v(einsum_for_test("i j , k j -> i k", &[&a, &a]).unwrap()), vec![14, 32, 32, 77]);
    let h = Tensor::from_vec(&[2], vec![half::f16::from_f32(1.5), half::f16::from_f32(2.0)]).unwrap();
    let got = einsum_for_test("i,i", &[&h, &h]).unwrap();
    assert_eq!(got.dtype(), DType::F16);
    assert_eq!(got.to_f64_vec().unwrap(), vec![6.25]);
    assert!(einsum_for_test("ij,jk", &[&a, &a]).is_err());
}

#[test]
fn det_and_unique_small() {
    assert!((crate::kernels::linalg::det::det(vec![4.0, 3.0, 6.0, 3.0], 2) + 6.0).abs() < 1e-12);
    assert_eq!(crate::kernels::linalg::det::det(vec![1.0, 2.0, 2.0, 4.0], 2), 0.0);
    let x = Tensor::from_vec(&[6], vec![2.0f32, 1.0, 1.0, 3.0, 4.0, 3.0]).unwrap();
    let out = crate::kernels::gather::unique::unique::<f32>(&x, None, false).unwrap();
    let v: Vec<Vec<f64>> = out.iter().map(|o| o.as_tensor().unwrap().to_f64_vec().unwrap()).collect();
    assert_eq!(v[0], vec![2.0, 1.0, 3.0, 4.0]);
    assert_eq!(v[1], vec![0.0, 1.0, 3.0, 4.0]);
    assert_eq!(v[2], vec![0.0, 1.0, 1.0, 2.0, 3.0, 2.0]);
    assert_eq!(v[3], vec![1.0, 2.0, 2.0, 1.0]);
}
