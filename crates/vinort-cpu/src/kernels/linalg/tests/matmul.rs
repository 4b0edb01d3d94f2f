//! MatMul and Gemm against numpy / spec references (https://onnx.ai/onnx/operators/onnx__MatMul.html,
//! https://onnx.ai/onnx/operators/onnx__Gemm.html).

use proptest::prelude::*;
use rand::Rng as _;
use vinort_ir::{DType, Tensor, ValueType};

use super::*;

/// numpy.matmul from its definition: 1-D operands promoted and their axis dropped, batch axes
/// broadcast right-aligned. None when the shapes do not fit.
fn matmul_ref(a_shape: &[usize], a: &[f64], b_shape: &[usize], b: &[f64]) -> Option<(Vec<usize>, Vec<f64>)> {
    let a2: Vec<usize> = if a_shape.len() == 1 { vec![1, a_shape[0]] } else { a_shape.to_vec() };
    let b2: Vec<usize> = if b_shape.len() == 1 { vec![b_shape[0], 1] } else { b_shape.to_vec() };
    let (m, k) = (a2[a2.len() - 2], a2[a2.len() - 1]);
    let (k2, n) = (b2[b2.len() - 2], b2[b2.len() - 1]);
    if k != k2 {
        return None;
    }
    let (ab, bb) = (&a2[..a2.len() - 2], &b2[..b2.len() - 2]);
    let r = ab.len().max(bb.len());
    let pad = |v: &[usize]| -> Vec<usize> { std::iter::repeat_n(1, r - v.len()).chain(v.iter().copied()).collect() };
    let (ap, bp) = (pad(ab), pad(bb));
    let mut batch = vec![];
    for i in 0..r {
        batch.push(match (ap[i], bp[i]) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        });
    }
    let mut out = vec![];
    for bi in indices(&batch) {
        let ai: Vec<usize> = bi.iter().zip(&ap).map(|(i, d)| if *d == 1 { 0 } else { *i }).collect();
        let bj: Vec<usize> = bi.iter().zip(&bp).map(|(i, d)| if *d == 1 { 0 } else { *i }).collect();
        let (ao, bo) = (flat(&ap, &ai) * m * k, flat(&bp, &bj) * k * n);
        for i in 0..m {
            for j in 0..n {
                out.push((0..k).map(|p| a[ao + i * k + p] * b[bo + p * n + j]).sum());
            }
        }
    }
    let mut shape = batch;
    if a_shape.len() > 1 {
        shape.push(m);
    }
    if b_shape.len() > 1 {
        shape.push(n);
    }
    Some((shape, out))
}

fn matmul_node() -> Node {
    node("MatMul", 13, 2, 1, vec![])
}

/// Builds A of `shape`; with `transposed`, the data is generated in [..., K, M] order and
/// transposed by the test, as a producer with another layout would hand it over.
fn make_a(rng: &mut StdRng, shape: &[usize], transposed: bool) -> Vec<f64> {
    let n: usize = shape.iter().product();
    if !transposed || shape.len() < 2 {
        return rand_vec(rng, n);
    }
    let r = shape.len();
    let mut src_shape = shape.to_vec();
    src_shape.swap(r - 1, r - 2);
    let data = rand_vec(rng, n);
    let mut perm: Vec<usize> = (0..r).collect();
    perm.swap(r - 1, r - 2);
    let (s, d) = permute(&src_shape, &data, &perm);
    assert_eq!(s, shape);
    d
}

fn batch_of(full: &[usize], take: usize, ones_mask: u8) -> Vec<usize> {
    let sub = &full[full.len() - take..];
    sub.iter().enumerate().map(|(i, d)| if ones_mask & (1 << i) != 0 { 1 } else { *d }).collect()
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn matmul_matches_numpy(
        m in 0usize..19, n in 0usize..19, k in 0usize..23,
        full in prop::collection::vec(0usize..4, 0..3),
        a_rank_kind in 0usize..4, b_rank_kind in 0usize..4,
        a_ones in any::<u8>(), b_ones in any::<u8>(),
        transposed in any::<bool>(), const_b in any::<bool>(),
        dtype in prop::sample::select(vec![DType::F32, DType::F64, DType::F16, DType::BF16]),
        seed in any::<u64>(),
    ) {
        let mut rng = rng(seed);
        // kind 0: 1-D operand; otherwise a matrix with a suffix of the batch axes.
        let a_shape: Vec<usize> = if a_rank_kind == 0 { vec![k] } else {
            let mut s = batch_of(&full, (a_rank_kind - 1).min(full.len()), a_ones);
            s.extend([m, k]);
            s
        };
        let b_shape: Vec<usize> = if b_rank_kind == 0 { vec![k] } else {
            let mut s = batch_of(&full, (b_rank_kind - 1).min(full.len()), b_ones);
            s.extend([k, n]);
            s
        };
        let a = make_a(&mut rng, &a_shape, transposed);
        let b = rand_vec(&mut rng, b_shape.iter().product());
        let (ta, tb) = (tensor(dtype, &a_shape, &a), tensor(dtype, &b_shape, &b));
        // Reference on the values as the dtype holds them.
        let (a, b) = (ta.to_f64_vec().unwrap(), tb.to_f64_vec().unwrap());
        let got = run_node(&matmul_node(), &[Some(ta), Some(tb)], if const_b { &[1] } else { &[] });
        match matmul_ref(&a_shape, &a, &b_shape, &b) {
            Some((shape, want)) => {
                let got = got.unwrap();
                prop_assert_eq!(got[0].dtype(), dtype);
                let tol = if matches!(dtype, DType::F16 | DType::BF16) { 1e-2 } else { 1e-4 };
                assert_close(&got[0], &shape, &want, tol);
            }
            None => prop_assert!(got.is_err()),
        }
    }

    #[test]
    fn matmul_integers_wrap_like_the_reference(
        m in 0usize..7, n in 0usize..7, k in 0usize..9, batch in 1usize..3, one_d in any::<bool>(),
        dtype in prop::sample::select(vec![DType::I32, DType::I64, DType::U32, DType::U64]),
        seed in any::<u64>(),
    ) {
        let mut rng = rng(seed);
        let unsigned = matches!(dtype, DType::U32 | DType::U64);
        let mut vals = |n: usize| -> Vec<f64> {
            (0..n).map(|_| if unsigned { rng.random_range(0..9) as f64 } else { rng.random_range(-9..9) as f64 }).collect()
        };
        let a_shape = vec![batch, m, k];
        let b_shape = if one_d { vec![k] } else { vec![k, n] };
        let (a, b) = (vals(batch * m * k), vals(b_shape.iter().product()));
        let got = run1(&matmul_node(), &[Some(tensor(dtype, &a_shape, &a)), Some(tensor(dtype, &b_shape, &b))]).unwrap();
        let (shape, want) = matmul_ref(&a_shape, &a, &b_shape, &b).unwrap();
        prop_assert_eq!(got.dtype(), dtype);
        assert_close(&got, &shape, &want, 0.0);
    }
}

#[test]
fn matmul_hand_values_and_vector_cases() {
    let a = t32(&[2, 2], &[1., 2., 3., 4.]);
    let v = t32(&[2], &[5., 6.]);
    assert_close(&run1(&matmul_node(), &[Some(a.clone()), Some(v.clone())]).unwrap(), &[2], &[17., 39.], 0.0);
    assert_close(&run1(&matmul_node(), &[Some(v.clone()), Some(a)]).unwrap(), &[2], &[23., 34.], 0.0);
    // 1-D @ 1-D is a scalar.
    assert_close(&run1(&matmul_node(), &[Some(v.clone()), Some(v)]).unwrap(), &[], &[61.], 0.0);
}

#[test]
fn matmul_large_hits_threaded_paths() {
    let mut rng = rng(7);
    // Shared B folded into one tall product, a batch-parallel broadcast, and one big product
    // above gemm's own threading threshold.
    for (a_shape, b_shape) in
        [(vec![3, 67, 130], vec![130, 129]), (vec![4, 1, 33, 70], vec![3, 70, 65]), (vec![300, 257], vec![257, 301])]
    {
        let a = rand_vec(&mut rng, a_shape.iter().product());
        let b = rand_vec(&mut rng, b_shape.iter().product());
        let got = run1(&matmul_node(), &[Some(t32(&a_shape, &a)), Some(t32(&b_shape, &b))]).unwrap();
        let (shape, want) = matmul_ref(&a_shape, &a, &b_shape, &b).unwrap();
        assert_close(&got, &shape, &want, 1e-4);
    }
}

#[test]
fn matmul_rejects_bad_inputs() {
    let n = matmul_node();
    let t = |s: &[usize]| Some(t32(s, &vec![0.0; s.iter().product()]));
    assert!(run1(&n, &[t(&[2, 3]), t(&[4, 2])]).is_err());
    assert!(run1(&n, &[t(&[2, 2, 3]), t(&[3, 3, 2])]).is_err());
    assert!(run1(&n, &[t(&[]), t(&[2])]).is_err());
    assert!(run1(&n, &[t(&[2, 3]), None]).is_err());
    let i = Some(tensor(DType::I32, &[3, 2], &[0.0; 6]));
    assert!(run1(&n, &[t(&[2, 3]), i]).is_err());
    // A dtype known at compile time and not implemented is refused by the factory.
    let info_node = matmul_node();
    let s = Tensor::from_vec(&[2], vec![true, false]).unwrap();
    assert!(matches!(run1(&info_node, &[Some(s.clone()), Some(s)]), Err(vinort_ir::Error::Unsupported(_))));
    let _ = ValueType::Unknown;
}

/// Gemm from its definition: alpha * A' B' + beta * C, C broadcast to (M, N).
#[allow(clippy::too_many_arguments)]
fn gemm_ref(
    (m, n, k): (usize, usize, usize),
    a: &[f64],
    b: &[f64],
    c: Option<(&[usize], &[f64])>,
    ta: bool,
    tb: bool,
    alpha: f64,
    beta: f64,
) -> Vec<f64> {
    let mut y = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0;
            for p in 0..k {
                let av = if ta { a[p * m + i] } else { a[i * k + p] };
                let bv = if tb { b[j * k + p] } else { b[p * n + j] };
                s += av * bv;
            }
            let cv = match c {
                None => 0.0,
                Some((shape, c)) => {
                    let full: Vec<usize> =
                        std::iter::repeat_n(1, 2 - shape.len()).chain(shape.iter().copied()).collect();
                    c[(if full[0] == 1 { 0 } else { i }) * full[1] + if full[1] == 1 { 0 } else { j }]
                }
            };
            y[i * n + j] = alpha * s + beta * cv;
        }
    }
    y
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn gemm_matches_definition(
        m in 0usize..17, n in 0usize..17, k in 0usize..17,
        ta in any::<bool>(), tb in any::<bool>(), c_kind in 0usize..7,
        alpha in prop::sample::select(vec![1.0f32, 0.5, -2.0]), beta in prop::sample::select(vec![1.0f32, 0.0, 0.25]),
        dtype in prop::sample::select(vec![DType::F32, DType::F64, DType::F16, DType::I32, DType::I64, DType::U64]),
        const_b in any::<bool>(), seed in any::<u64>(),
    ) {
        let mut rng = rng(seed);
        let int = !dtype.is_float();
        let (alpha, beta) = if int { (alpha.abs().round().max(1.0), beta.round()) } else { (alpha, beta) };
        let mut vals = |len: usize| -> Vec<f64> {
            if int { (0..len).map(|_| rng.random_range(0..7) as f64).collect() } else { rand_vec(&mut rng, len) }
        };
        let a_shape = if ta { [k, m] } else { [m, k] };
        let b_shape = if tb { [n, k] } else { [k, n] };
        let (a, b) = (vals(m * k), vals(k * n));
        let c_shape: Option<Vec<usize>> = match c_kind {
            0 => None,
            1 => Some(vec![]),
            2 => Some(vec![n]),
            3 => Some(vec![1, n]),
            4 => Some(vec![m, 1]),
            5 => Some(vec![1]),
            _ => Some(vec![m, n]),
        };
        let c = c_shape.as_ref().map(|s| vals(s.iter().product()));
        let nd = node("Gemm", 13, 3, 1, vec![float("alpha", alpha), float("beta", beta), int_attr("transA", ta), int_attr("transB", tb)]);
        let inputs = [
            Some(tensor(dtype, &a_shape, &a)),
            Some(tensor(dtype, &b_shape, &b)),
            c_shape.as_ref().zip(c.as_ref()).map(|(s, c)| tensor(dtype, s, c)),
        ];
        let (a, b) = (inputs[0].as_ref().unwrap().to_f64_vec().unwrap(), inputs[1].as_ref().unwrap().to_f64_vec().unwrap());
        let cf = inputs[2].as_ref().map(|t| t.to_f64_vec().unwrap());
        let got = run_node(&nd, &inputs, if const_b { &[1] } else { &[] }).unwrap();
        let want = gemm_ref((m, n, k), &a, &b, c_shape.as_deref().zip(cf.as_deref()), ta, tb, alpha as f64, beta as f64);
        let tol = if dtype == DType::F16 { 1e-2 } else if int { 0.0 } else { 1e-4 };
        prop_assert_eq!(got[0].dtype(), dtype);
        assert_close(&got[0], &[m, n], &want, tol);
    }
}

proptest! {
    #![proptest_config(config(24))]

    /// One row of A (a classifier at batch 1) takes the packed few-row kernel when B is a
    /// constant f32 (alpha 1, C a bias), else the vector-times-matrix path: dot products over
    /// contiguous columns of B (transB) or sums down its rows, parallel once large; the lane
    /// remainders, C broadcast and alpha must all come out as the definition says.
    #[test]
    fn gemm_of_one_row_matches_definition(
        n in prop_oneof![1usize..40, 700usize..1200], k in 1usize..100,
        tb in any::<bool>(), c_kind in 0usize..3, f64_ty in any::<bool>(),
        alpha in prop::sample::select(vec![1.0f32, -2.0]), beta in prop::sample::select(vec![1.0f32, 0.0, 0.25]),
        const_b in any::<bool>(), seed in any::<u64>(),
    ) {
        let mut rng = rng(seed);
        let dtype = if f64_ty { DType::F64 } else { DType::F32 };
        let (a, b) = (rand_vec(&mut rng, k), rand_vec(&mut rng, k * n));
        let b_shape = if tb { [n, k] } else { [k, n] };
        let c_shape: Option<Vec<usize>> = [None, Some(vec![n]), Some(vec![1])][c_kind].clone();
        let c = c_shape.as_ref().map(|s| rand_vec(&mut rng, s.iter().product()));
        let nd = node("Gemm", 13, 3, 1, vec![float("alpha", alpha), float("beta", beta), int_attr("transB", tb)]);
        let inputs = [
            Some(tensor(dtype, &[1, k], &a)),
            Some(tensor(dtype, &b_shape, &b)),
            c_shape.as_ref().zip(c.as_ref()).map(|(s, c)| tensor(dtype, s, c)),
        ];
        let got = run_node(&nd, &inputs, if const_b { &[1] } else { &[] }).unwrap();
        let want = gemm_ref((1, n, k), &a, &b, c_shape.as_deref().zip(c.as_deref()), false, tb, alpha as f64, beta as f64);
        assert_close(&got[0], &[1, n], &want, 1e-4);
    }
}

fn int_attr(name: &str, v: bool) -> (String, vinort_ir::Attr) {
    int(name, v as i64)
}

#[test]
fn gemm_hand_values_and_errors() {
    let nd = node("Gemm", 11, 3, 1, vec![float("alpha", 2.0), float("beta", 3.0), int("transB", 1)]);
    let a = t32(&[1, 2], &[1., 2.]);
    let b = t32(&[2, 2], &[1., 0., 1., 1.]); // B^T = [[1, 1], [0, 1]]
    let c = t32(&[2], &[1., -1.]);
    // A B^T = [1, 3]; 2 * [1, 3] + 3 * [1, -1] = [5, 3].
    assert_close(&run1(&nd, &[Some(a.clone()), Some(b.clone()), Some(c)]).unwrap(), &[1, 2], &[5., 3.], 0.0);
    assert_close(&run1(&nd, &[Some(a.clone()), Some(b.clone()), None]).unwrap(), &[1, 2], &[2., 6.], 0.0);
    assert!(run1(&nd, &[Some(a.clone()), Some(b.clone()), Some(t32(&[3], &[0.; 3]))]).is_err());
    assert!(run1(&nd, &[Some(a.clone()), Some(b.clone()), Some(t32(&[2, 1, 2], &[0.; 4]))]).is_err());
    assert!(run1(&nd, &[Some(t32(&[1, 3], &[0.; 3])), Some(b.clone()), None]).is_err());
    assert!(run1(&nd, &[Some(t32(&[1, 1, 2], &[0.; 2])), Some(b.clone()), None]).is_err());
    // Opset 6 without `broadcast` takes C only at the exact output shape.
    let old = node("Gemm", 6, 3, 1, vec![]);
    assert!(run1(&old, &[Some(a.clone()), Some(b.clone()), Some(t32(&[2], &[0.; 2]))]).is_err());
    let old_b = node("Gemm", 6, 3, 1, vec![int("broadcast", 1)]);
    assert!(run1(&old_b, &[Some(a), Some(b), Some(t32(&[2], &[0.; 2]))]).is_ok());
}
