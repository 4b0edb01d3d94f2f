//! Every kernel of the family against a naive reference written here with explicit index
//! math, on random shapes (ranks 0–5, zero and odd extents), random axes, perms and slice
//! parameters, over element widths 1, 2, 4, 8, 16 bytes and strings; plus hand-derived spec
//! examples and bad-input cases.

use proptest::prelude::*;
use vinort_ir::{Attr, DType, Error, Result, RunContext, Tensor, Value, ValueType, Values};

use crate::kernel::{NodeInfo, Registry};
use crate::test_support::{self as ts, ravel, run_op, unravel};

// ---------------------------------------------------------------- harness

fn run(op: &str, opset: i64, attrs: Vec<(&str, Attr)>, inputs: Vec<Option<Value>>, n_out: usize) -> Result<Values> {
    run_op(op, opset, attrs, &inputs, n_out)
}

/// Runs an op with tensor inputs and returns its tensor outputs.
fn run_t(
    op: &str,
    opset: i64,
    attrs: Vec<(&str, Attr)>,
    inputs: Vec<Option<Tensor>>,
    n_out: usize,
) -> Result<Vec<Tensor>> {
    run(op, opset, attrs, inputs.into_iter().map(|t| t.map(Value::Tensor)).collect(), n_out)?
        .into_iter()
        .map(Value::into_tensor)
        .collect()
}

fn run1(op: &str, opset: i64, attrs: Vec<(&str, Attr)>, inputs: Vec<Tensor>) -> Result<Tensor> {
    let mut out = run_t(op, opset, attrs, inputs.into_iter().map(Some).collect(), 1)?;
    out.pop().ok_or_else(|| Error::invalid("no output"))
}

fn ints(v: &[i64]) -> Tensor {
    Tensor::from_slice(&[v.len()], v).unwrap()
}

fn int(v: i64) -> Tensor {
    Tensor::scalar(v)
}

fn a_int(v: i64) -> Attr {
    Attr::Int(v)
}

fn a_ints(v: &[i64]) -> Attr {
    Attr::Ints(v.to_vec())
}

/// A tensor of `dtype` whose element `i` is distinguishable from every other (by bytes or
/// string), built over unaligned shared bytes to exercise that path too.
fn make(dtype: DType, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    if dtype == DType::String {
        return Tensor::from_strings(shape, (0..n).map(|i| format!("s{i}")).collect()).unwrap();
    }
    let w = dtype.size();
    let mut bytes = vec![0u8; 1];
    for i in 0..n {
        let v = (i as u128 + 1).wrapping_mul(0x0101_0101_0101_0101_0101_0101_0101_0101) ^ (i as u128);
        bytes.extend_from_slice(&v.to_le_bytes()[..w]);
    }
    let base = Tensor::from_shared_bytes(DType::U8, &[bytes.len()], bytes.into()).unwrap();
    let t = Tensor::from_shared_bytes(dtype, shape, base.shared_bytes().unwrap().slice(1..)).unwrap();
    if n.is_multiple_of(2) { t.to_aligned() } else { t }
}

/// Each element's identity: its bytes, or its string.
fn keys(t: &Tensor) -> Vec<Vec<u8>> {
    if t.dtype() == DType::String {
        t.as_strings().unwrap().iter().map(|s| s.as_bytes().to_vec()).collect()
    } else {
        t.as_bytes().chunks(t.dtype().size()).map(<[u8]>::to_vec).collect()
    }
}

fn zero_key(dtype: DType) -> Vec<u8> {
    vec![0; dtype.size()]
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

fn dims() -> impl Strategy<Value = usize> {
    prop_oneof![4 => 0usize..=3, 1 => Just(5usize), 1 => Just(7usize)]
}

fn shape_strategy(min_rank: usize, max_rank: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(dims(), min_rank..=max_rank).prop_filter("small", |s| numel(s) <= 2048)
}

fn dtype_strategy() -> impl Strategy<Value = DType> {
    prop::sample::select(vec![DType::U8, DType::F16, DType::F32, DType::I64, DType::Complex128, DType::String])
}

fn cfg() -> ProptestConfig {
    // No regression files: they would land outside this folder.
    crate::test_support::config(48)
}

// ---------------------------------------------------------------- zero-copy ops

#[test]
fn shape_ops_share_storage() {
    let x = Tensor::from_slice(&[2, 1, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let p = x.data_ptr();
    let r = run1("Reshape", 14, vec![], vec![x.clone(), ints(&[3, -1])]).unwrap();
    assert_eq!((r.shape(), r.data_ptr()), (&[3usize, 2][..], p));
    let f = run1("Flatten", 13, vec![("axis", a_int(-1))], vec![x.clone()]).unwrap();
    assert_eq!((f.shape(), f.data_ptr()), (&[2usize, 3][..], p));
    let s = run1("Squeeze", 13, vec![], vec![x.clone()]).unwrap();
    assert_eq!((s.shape(), s.data_ptr()), (&[2usize, 3][..], p));
    let s = run1("Squeeze", 11, vec![("axes", a_ints(&[-2]))], vec![x.clone()]).unwrap();
    assert_eq!((s.shape(), s.data_ptr()), (&[2usize, 3][..], p));
    let u = run1("Unsqueeze", 13, vec![], vec![x.clone(), ints(&[0, -1])]).unwrap();
    assert_eq!((u.shape(), u.data_ptr()), (&[1usize, 2, 1, 3, 1][..], p));
    let u = run1("Unsqueeze", 11, vec![("axes", a_ints(&[1]))], vec![x.clone()]).unwrap();
    assert_eq!((u.shape(), u.data_ptr()), (&[2usize, 1, 1, 3][..], p));
    let i = run1("Identity", 16, vec![], vec![x.clone()]).unwrap();
    assert_eq!((i.shape(), i.data_ptr()), (x.shape(), p));
    let d = run_t("Dropout", 13, vec![], vec![Some(x.clone())], 2).unwrap();
    assert_eq!(d[0].data_ptr(), p);
    assert_eq!(d[1].as_slice::<bool>().unwrap(), &[true; 6]);
    // A Slice of leading rows is one contiguous run: shared too.
    let y = Tensor::from_slice(&[4, 3], &(0..12).collect::<Vec<i32>>()).unwrap();
    let s = run1("Slice", 13, vec![], vec![y.clone(), ints(&[1]), ints(&[3])]).unwrap();
    assert_eq!(s.data_ptr() as usize, y.data_ptr() as usize + 3 * 4);
    assert_eq!(s.as_slice::<i32>().unwrap(), &[3, 4, 5, 6, 7, 8]);
}

#[test]
fn identity_passes_sequences_and_optionals() {
    let seq = Value::Sequence(vinort_ir::Sequence { dtype: DType::F32, items: vec![Tensor::scalar(1f32)] });
    let out = run("Identity", 16, vec![], vec![Some(seq)], 1).unwrap();
    assert_eq!(out[0].as_sequence().unwrap().items.len(), 1);
    let opt = Value::Optional(None, ValueType::tensor(DType::F32, &[]));
    assert!(matches!(run("Identity", 16, vec![], vec![Some(opt)], 1).unwrap()[0], Value::Optional(None, _)));
}

#[test]
fn reshape_rules() {
    let x = make(DType::I32, &[2, 3, 4]);
    let r = |spec: &[i64], allowzero: i64| {
        run1("Reshape", 14, vec![("allowzero", a_int(allowzero))], vec![x.clone(), ints(spec)])
            .map(|t| t.shape().to_vec())
    };
    assert_eq!(r(&[0, -1], 0).unwrap(), vec![2, 12]);
    assert_eq!(r(&[-1], 0).unwrap(), vec![24]);
    assert_eq!(r(&[4, 0, 2], 0).unwrap(), vec![4, 3, 2]);
    assert!(r(&[5, -1], 0).is_err());
    assert!(r(&[-1, -1], 0).is_err());
    assert!(r(&[0, 0, 0, 0], 0).is_err());
    assert!(r(&[0, 24], 1).is_err());
    assert!(r(&[-2, 12], 0).is_err());
    let e = make(DType::I32, &[0, 3]);
    let z = run1("Reshape", 14, vec![("allowzero", a_int(1))], vec![e.clone(), ints(&[3, 0])]).unwrap();
    assert_eq!(z.shape(), &[3, 0]);
    assert!(run1("Reshape", 14, vec![], vec![e, ints(&[0, -1])]).is_err());
    let v1 = run1("Reshape", 1, vec![("shape", a_ints(&[6, -1]))], vec![x]).unwrap();
    assert_eq!(v1.shape(), &[6, 4]);
    let s = run1("Reshape", 14, vec![], vec![Tensor::scalar(3f32), ints(&[1, 1])]).unwrap();
    assert_eq!(s.shape(), &[1, 1]);
}

#[test]
fn flatten_squeeze_unsqueeze_rules() {
    let x = make(DType::U8, &[2, 1, 3, 1]);
    let f = |axis| run1("Flatten", 13, vec![("axis", a_int(axis))], vec![x.clone()]).map(|t| t.shape().to_vec());
    assert_eq!(f(0).unwrap(), vec![1, 6]);
    assert_eq!(f(4).unwrap(), vec![6, 1]);
    assert_eq!(f(-4).unwrap(), vec![1, 6]);
    assert!(f(5).is_err() && f(-5).is_err());
    let sc = run1("Flatten", 13, vec![("axis", a_int(0))], vec![Tensor::scalar(1i8)]).unwrap();
    assert_eq!(sc.shape(), &[1, 1]);
    let sq = |axes: &[i64]| run1("Squeeze", 13, vec![], vec![x.clone(), ints(axes)]).map(|t| t.shape().to_vec());
    assert_eq!(sq(&[1, -1]).unwrap(), vec![2, 3]);
    assert!(sq(&[0]).is_err(), "extent 2 cannot be squeezed");
    assert!(sq(&[4]).is_err());
    assert!(sq(&[1, 1]).is_err());
    let un = |axes: &[i64]| run1("Unsqueeze", 13, vec![], vec![x.clone(), ints(axes)]).map(|t| t.shape().to_vec());
    assert_eq!(un(&[-1]).unwrap(), vec![2, 1, 3, 1, 1]);
    assert_eq!(un(&[0, 5]).unwrap(), vec![1, 2, 1, 3, 1, 1]);
    assert!(un(&[6]).is_err());
    assert!(un(&[1, 1]).is_err());
    let s = run1("Unsqueeze", 13, vec![], vec![Tensor::scalar(1f32), ints(&[0])]).unwrap();
    assert_eq!(s.shape(), &[1]);
}

#[test]
fn shape_size_constant() {
    let x = make(DType::F32, &[2, 3, 4]);
    let sh = |attrs| run1("Shape", 15, attrs, vec![x.clone()]).unwrap().to_i64_vec().unwrap();
    assert_eq!(sh(vec![]), vec![2, 3, 4]);
    assert_eq!(sh(vec![("start", a_int(-1))]), vec![4]);
    assert_eq!(sh(vec![("end", a_int(-1))]), vec![2, 3]);
    assert_eq!(sh(vec![("start", a_int(1)), ("end", a_int(2))]), vec![3]);
    assert_eq!(sh(vec![("start", a_int(-10)), ("end", a_int(10))]), vec![2, 3, 4]);
    assert_eq!(sh(vec![("start", a_int(2)), ("end", a_int(1))]), Vec::<i64>::new());
    assert_eq!(run1("Shape", 1, vec![], vec![Tensor::scalar(1u8)]).unwrap().shape(), &[0]);
    assert_eq!(run1("Size", 13, vec![], vec![x.clone()]).unwrap().to_i64_vec().unwrap(), vec![24]);
    let c = Tensor::from_slice(&[2], &[1.5f32, 2.5]).unwrap();
    let mut r = Registry::default();
    super::register(&mut r);
    let node = ts::op("Constant", 13).attrs([("value", Attr::Tensor(c.clone()))]).build();
    let info = NodeInfo::bare(&node);
    let k = r.find(&node).unwrap()(&info).unwrap();
    let a = k.run(&[], &RunContext::default()).unwrap()[0].as_tensor().unwrap().clone();
    let b = k.run(&[], &RunContext::default()).unwrap()[0].as_tensor().unwrap().clone();
    assert_eq!((a.data_ptr(), b.data_ptr()), (c.data_ptr(), c.data_ptr()));
    let ints_c = run1("Constant", 13, vec![("value_ints", a_ints(&[4, 5]))], vec![]).unwrap();
    assert_eq!(ints_c.to_i64_vec().unwrap(), vec![4, 5]);
    let s = run1("Constant", 13, vec![("value_string", Attr::String("hi".into()))], vec![]).unwrap();
    assert_eq!(s.as_strings().unwrap(), &["hi".to_owned()]);
    let f = run1("Constant", 13, vec![("value_float", Attr::Float(2.5))], vec![]).unwrap();
    assert_eq!(f.as_slice::<f32>().unwrap(), &[2.5]);
}

#[test]
fn constant_of_shape_and_eye_like() {
    let z = run1("ConstantOfShape", 20, vec![], vec![ints(&[2, 3])]).unwrap();
    assert_eq!((z.dtype(), z.as_slice::<f32>().unwrap()), (DType::F32, &[0.0f32; 6][..]));
    let v = Tensor::from_slice(&[1], &[7i64]).unwrap();
    let s = run1("ConstantOfShape", 20, vec![("value", Attr::Tensor(v))], vec![ints(&[])]).unwrap();
    assert_eq!((s.shape(), s.as_slice::<i64>().unwrap()), (&[][..], &[7i64][..]));
    let e = run1("ConstantOfShape", 20, vec![], vec![ints(&[0, 4])]).unwrap();
    assert_eq!(e.shape(), &[0, 4]);
    assert!(run1("ConstantOfShape", 20, vec![], vec![ints(&[-1])]).is_err());
    let x = make(DType::F32, &[3, 4]);
    let eye = |k| run1("EyeLike", 22, vec![("k", a_int(k))], vec![x.clone()]).unwrap().to_vec::<f32>().unwrap();
    #[rustfmt::skip]
    assert_eq!(eye(0), vec![1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1., 0.]);
    #[rustfmt::skip]
    assert_eq!(eye(2), vec![0., 0., 1., 0., 0., 0., 0., 1., 0., 0., 0., 0.]);
    #[rustfmt::skip]
    assert_eq!(eye(-1), vec![0., 0., 0., 0., 1., 0., 0., 0., 0., 1., 0., 0.]);
    assert_eq!(eye(9), vec![0.; 12]);
    let b = run1("EyeLike", 22, vec![("dtype", a_int(9))], vec![make(DType::I32, &[2, 2])]).unwrap();
    assert_eq!(b.as_slice::<bool>().unwrap(), &[true, false, false, true]);
    assert!(run1("EyeLike", 22, vec![], vec![make(DType::F32, &[2, 2, 2])]).is_err());
}

// ---------------------------------------------------------------- Transpose

fn ref_transpose(x: &[Vec<u8>], shape: &[usize], perm: &[usize]) -> Vec<Vec<u8>> {
    let out_shape: Vec<usize> = perm.iter().map(|p| shape[*p]).collect();
    (0..numel(&out_shape))
        .map(|f| {
            let oi = unravel(f, &out_shape);
            let mut ii = vec![0; shape.len()];
            for (o, p) in perm.iter().enumerate() {
                ii[*p] = oi[o];
            }
            x[ravel(&ii, shape)].clone()
        })
        .collect()
}

fn shape_and_perm() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    shape_strategy(0, 5).prop_flat_map(|s| {
        let r = s.len();
        (Just(s), Just((0..r).collect::<Vec<_>>()).prop_shuffle())
    })
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn transpose_matches_reference((shape, perm) in shape_and_perm(), dtype in dtype_strategy(), default in any::<bool>()) {
        let x = make(dtype, &shape);
        let perm = if default { (0..shape.len()).rev().collect() } else { perm };
        let attrs = if default { vec![] } else { vec![("perm", Attr::Ints(perm.iter().map(|p| *p as i64).collect()))] };
        let y = run1("Transpose", 21, attrs, vec![x.clone()]).unwrap();
        let want_shape: Vec<usize> = perm.iter().map(|p| shape[*p]).collect();
        prop_assert_eq!(y.shape(), want_shape.as_slice());
        prop_assert_eq!(y.dtype(), dtype);
        prop_assert_eq!(keys(&y), ref_transpose(&keys(&x), &shape, &perm));
    }
}

#[test]
fn transpose_large_tiled_and_bad_perm() {
    // Big enough to take the tiled path with partial tiles on both edges.
    let (a, b) = (67, 45);
    let x = Tensor::from_vec(&[a, b], (0..(a * b) as i32).collect()).unwrap();
    let y = run1("Transpose", 13, vec![], vec![x.clone()]).unwrap();
    let want: Vec<i32> = (0..a * b).map(|f| ((f % a) * b + f / a) as i32).collect();
    assert_eq!(y.to_vec::<i32>().unwrap(), want);
    let x3 = make(DType::U8, &[3, 40, 37]);
    let y3 = run1("Transpose", 13, vec![("perm", a_ints(&[2, 0, 1]))], vec![x3.clone()]).unwrap();
    assert_eq!(keys(&y3), ref_transpose(&keys(&x3), &[3, 40, 37], &[2, 0, 1]));
    for bad in [&[0, 0, 1][..], &[0, 1], &[0, 1, 3], &[0, 1, -1]] {
        assert!(run1("Transpose", 13, vec![("perm", a_ints(bad))], vec![x3.clone()]).is_err(), "{bad:?}");
    }
}

// ---------------------------------------------------------------- Slice

/// The spec's effective start/end/step rules, transcribed directly, then walked one step
/// at a time.
fn ref_slice_coords(dim: usize, start: i64, end: i64, step: i64) -> Vec<usize> {
    let d = dim as i64;
    let mut s = start.max(-d - 1);
    let mut e = end.clamp(-d - 1, d + 1);
    if s < 0 {
        s += d;
    }
    if e < 0 {
        e += d;
    }
    if step > 0 {
        s = s.clamp(0, d);
        e = e.clamp(0, d);
    } else {
        s = s.clamp(0, (d - 1).max(0));
        e = e.clamp(-1, d - 1);
    }
    let mut out = vec![];
    let mut i = s;
    while (step > 0 && i < e) || (step < 0 && i > e) {
        if i >= 0 && i < d {
            out.push(i as usize);
        }
        i += step;
    }
    out
}

fn ref_slice(x: &[Vec<u8>], shape: &[usize], params: &[(usize, i64, i64, i64)]) -> (Vec<usize>, Vec<Vec<u8>>) {
    let mut coords: Vec<Vec<usize>> = shape.iter().map(|d| (0..*d).collect()).collect();
    for &(a, s, e, st) in params {
        coords[a] = ref_slice_coords(shape[a], s, e, st);
    }
    let out_shape: Vec<usize> = coords.iter().map(Vec::len).collect();
    let data = (0..numel(&out_shape))
        .map(|f| {
            let oi = unravel(f, &out_shape);
            let ii: Vec<usize> = oi.iter().enumerate().map(|(a, i)| coords[a][*i]).collect();
            x[ravel(&ii, shape)].clone()
        })
        .collect();
    (out_shape, data)
}

fn slice_bound() -> impl Strategy<Value = i64> {
    prop_oneof![4 => -9i64..=9, 1 => Just(i64::MAX), 1 => Just(i64::MIN), 1 => Just(i32::MAX as i64)]
}

/// Per sliced axis: (axis, start, end, step).
type SliceParams = Vec<(i64, i64, i64, i64)>;

fn slice_case() -> impl Strategy<Value = (Vec<usize>, SliceParams)> {
    shape_strategy(1, 5).prop_flat_map(|s| {
        let r = s.len();
        let param = (0..r, slice_bound(), slice_bound(), prop_oneof![-3i64..=-1, 1i64..=3]);
        let axes = prop::collection::vec(param, 0..=r).prop_map(move |v| {
            let mut seen = vec![false; r];
            v.into_iter()
                .filter(|(a, ..)| !std::mem::replace(&mut seen[*a], true))
                .map(|(a, s, e, st)| (a as i64, s, e, st))
                .collect::<Vec<_>>()
        });
        (Just(s), axes)
    })
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn slice_matches_reference((shape, params) in slice_case(), dtype in dtype_strategy(), neg_axes in any::<bool>(), with_steps in any::<bool>()) {
        let x = make(dtype, &shape);
        let r = shape.len() as i64;
        let params: Vec<_> = if with_steps { params } else { params.into_iter().map(|(a, s, e, _)| (a, s, e, 1)).collect() };
        let col = |k: usize| params.iter().map(|p| [p.0, p.1, p.2, p.3][k]).collect::<Vec<i64>>();
        let axes: Vec<i64> = col(0).into_iter().map(|a| if neg_axes { a - r } else { a }).collect();
        let mut inputs = vec![Some(x.clone()), Some(ints(&col(1))), Some(ints(&col(2))), Some(ints(&axes))];
        if with_steps {
            inputs.push(Some(ints(&col(3))));
        }
        let y = run_t("Slice", 13, vec![], inputs, 1).unwrap().remove(0);
        let ref_params: Vec<_> = params.iter().map(|p| (p.0 as usize, p.1, p.2, p.3)).collect();
        let (want_shape, want) = ref_slice(&keys(&x), &shape, &ref_params);
        prop_assert_eq!(y.shape(), want_shape.as_slice());
        prop_assert_eq!(keys(&y), want);
    }
}

#[test]
fn slice_spec_examples_and_clamping() {
    let x = Tensor::from_vec(&[2, 4], vec![1i32, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    let sl = |s: &[i64], e: &[i64], a: Option<&[i64]>, st: Option<&[i64]>| {
        let mut inputs = vec![Some(x.clone()), Some(ints(s)), Some(ints(e)), a.map(ints)];
        inputs.push(st.map(ints));
        run_t("Slice", 13, vec![], inputs, 1).map(|mut v| {
            let t = v.remove(0);
            (t.shape().to_vec(), t.to_vec::<i32>().unwrap())
        })
    };
    assert_eq!(sl(&[1, 0], &[2, 3], Some(&[0, 1]), Some(&[1, 2])).unwrap(), (vec![1, 2], vec![5, 7]));
    assert_eq!(sl(&[0, 1], &[-1, 1000], None, None).unwrap(), (vec![1, 3], vec![2, 3, 4]));
    // INT_MIN end with a negative step walks to the front; start clamps to dim-1.
    assert_eq!(sl(&[100], &[i64::MIN], Some(&[1]), Some(&[-1])).unwrap(), (vec![2, 4], vec![4, 3, 2, 1, 8, 7, 6, 5]));
    assert_eq!(sl(&[-1], &[i64::MIN], Some(&[1]), Some(&[-2])).unwrap(), (vec![2, 2], vec![4, 2, 8, 6]));
    // Negative stepping clamps start to [0, dim-1]: a very negative start still takes index 0.
    assert_eq!(sl(&[-100], &[-100], Some(&[1]), Some(&[-1])).unwrap(), (vec![2, 1], vec![1, 5]));
    assert_eq!(sl(&[3], &[1], Some(&[-1]), None).unwrap(), (vec![2, 0], vec![]));
    assert_eq!(sl(&[0], &[i64::MAX], Some(&[1]), Some(&[3])).unwrap(), (vec![2, 2], vec![1, 4, 5, 8]));
    assert!(sl(&[0], &[1], Some(&[1]), Some(&[0])).is_err(), "zero step");
    assert!(sl(&[0], &[1], Some(&[2]), None).is_err(), "axis out of range");
    assert!(sl(&[0, 0], &[1, 1], Some(&[1, -1]), None).is_err(), "repeated axis");
    assert!(sl(&[0, 0], &[1], None, None).is_err(), "length mismatch");
    let v1 =
        run1("Slice", 1, vec![("starts", a_ints(&[0, 1])), ("ends", a_ints(&[-1, 1000]))], vec![x.clone()]).unwrap();
    assert_eq!(v1.to_vec::<i32>().unwrap(), vec![2, 3, 4]);
    let s = Tensor::from_strings(&[3], vec!["a".into(), "b".into(), "c".into()]).unwrap();
    let rs = run_t(
        "Slice",
        13,
        vec![],
        vec![Some(s), Some(ints(&[-1])), Some(ints(&[i64::MIN])), None, Some(ints(&[-1]))],
        1,
    )
    .unwrap();
    assert_eq!(rs[0].as_strings().unwrap(), &["c".to_owned(), "b".into(), "a".into()]);
}

// ---------------------------------------------------------------- Concat / Split

fn concat_case() -> impl Strategy<Value = (Vec<usize>, usize, Vec<usize>)> {
    shape_strategy(1, 4).prop_flat_map(|s| {
        let r = s.len();
        (Just(s), 0..r, prop::collection::vec(dims(), 1..=4))
    })
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn concat_matches_reference((base, axis, extents) in concat_case(), dtype in dtype_strategy(), neg in any::<bool>()) {
        let parts: Vec<Tensor> = extents.iter().map(|e| {
            let mut s = base.clone();
            s[axis] = *e;
            make(dtype, &s)
        }).collect();
        let a = if neg { axis as i64 - base.len() as i64 } else { axis as i64 };
        let y = run1("Concat", 13, vec![("axis", a_int(a))], parts.clone()).unwrap();
        let mut out_shape = base.clone();
        out_shape[axis] = extents.iter().sum();
        prop_assert_eq!(y.shape(), out_shape.as_slice());
        let ks: Vec<Vec<Vec<u8>>> = parts.iter().map(keys).collect();
        let want: Vec<Vec<u8>> = (0..numel(&out_shape)).map(|f| {
            let mut i = unravel(f, &out_shape);
            let mut k = 0;
            while i[axis] >= extents[k] {
                i[axis] -= extents[k];
                k += 1;
            }
            ks[k][ravel(&i, parts[k].shape())].clone()
        }).collect();
        prop_assert_eq!(keys(&y), want);
    }

    #[test]
    fn split_matches_reference((shape, axis) in shape_strategy(1, 4).prop_flat_map(|s| { let r = s.len(); (Just(s), 0..r) }),
                               n_out in 1usize..=4, dtype in dtype_strategy(), seed in any::<u64>()) {
        let x = make(dtype, &shape);
        let d = shape[axis];
        // Random sizes summing to d.
        let mut sizes = vec![0usize; n_out];
        let mut rng = seed;
        for _ in 0..d {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            sizes[(rng >> 33) as usize % n_out] += 1;
        }
        let split: Vec<i64> = sizes.iter().map(|s| *s as i64).collect();
        let outs = run_t("Split", 13, vec![("axis", a_int(axis as i64))], vec![Some(x.clone()), Some(ints(&split))], n_out).unwrap();
        let kx = keys(&x);
        let mut at = 0;
        for (o, s) in outs.iter().zip(&sizes) {
            let mut os = shape.clone();
            os[axis] = *s;
            prop_assert_eq!(o.shape(), os.as_slice());
            let want: Vec<Vec<u8>> = (0..numel(&os)).map(|f| {
                let mut i = unravel(f, &os);
                i[axis] += at;
                kx[ravel(&i, &shape)].clone()
            }).collect();
            prop_assert_eq!(keys(o), want);
            at += s;
        }
    }
}

#[test]
fn concat_and_split_edge_cases() {
    let a = Tensor::from_strings(&[1, 2], vec!["a".into(), "b".into()]).unwrap();
    let b = Tensor::from_strings(&[1, 1], vec!["c".into()]).unwrap();
    let e = Tensor::from_strings(&[1, 0], vec![]).unwrap();
    let c = run1("Concat", 13, vec![("axis", a_int(-1))], vec![a.clone(), e, b.clone()]).unwrap();
    assert_eq!(c.as_strings().unwrap(), &["a".to_owned(), "b".into(), "c".into()]);
    assert!(run1("Concat", 13, vec![("axis", a_int(0))], vec![a.clone(), b.clone()]).is_err(), "shape mismatch");
    assert!(run1("Concat", 13, vec![("axis", a_int(2))], vec![a.clone(), b]).is_err());
    assert!(run1("Concat", 13, vec![("axis", a_int(0))], vec![Tensor::scalar(1f32)]).is_err());
    assert!(
        run1("Concat", 13, vec![("axis", a_int(0))], vec![make(DType::F32, &[1]), make(DType::I32, &[1])]).is_err()
    );
    // Opset 18 num_outputs: 7 into 4 gives ceil(7/4)=2 per chunk and 1 in the last.
    let x = Tensor::from_vec(&[7], (0..7).collect::<Vec<i64>>()).unwrap();
    let outs = run_t("Split", 18, vec![("num_outputs", a_int(4))], vec![Some(x.clone())], 4).unwrap();
    let got: Vec<Vec<i64>> = outs.iter().map(|t| t.to_vec().unwrap()).collect();
    assert_eq!(got, vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6]]);
    assert!(run_t("Split", 18, vec![("num_outputs", a_int(4))], vec![Some(make(DType::F32, &[5]))], 4).is_err());
    assert!(run_t("Split", 13, vec![], vec![Some(x.clone())], 4).is_err(), "uneven before 18");
    let even = run_t(
        "Split",
        11,
        vec![("axis", a_int(-1))],
        vec![Some(Tensor::from_vec(&[2, 4], (0..8).collect::<Vec<i32>>()).unwrap())],
        2,
    )
    .unwrap();
    assert_eq!(even[1].to_vec::<i32>().unwrap(), vec![2, 3, 6, 7]);
    let attr = run_t("Split", 11, vec![("split", a_ints(&[3, 4]))], vec![Some(x.clone())], 2).unwrap();
    assert_eq!(attr[1].to_vec::<i64>().unwrap(), vec![3, 4, 5, 6]);
    assert!(run_t("Split", 13, vec![], vec![Some(x.clone()), Some(ints(&[3, 3]))], 2).is_err(), "sum mismatch");
    assert!(run_t("Split", 13, vec![], vec![Some(x), Some(ints(&[3, 5, -1]))], 3).is_err(), "negative size");
}

// ---------------------------------------------------------------- Gather family

fn gather_case() -> impl Strategy<Value = (Vec<usize>, usize, Vec<usize>, Vec<i64>)> {
    (shape_strategy(1, 3), shape_strategy(0, 2))
        .prop_flat_map(|(s, is)| {
            let r = s.len();
            (Just(s), 0..r, Just(is))
        })
        .prop_flat_map(|(s, a, is)| {
            let d = s[a] as i64;
            let n = numel(&is);
            let idx = if d == 0 { Just(vec![]).boxed() } else { prop::collection::vec(-d..d, n).boxed() };
            (Just(s), Just(a), Just(is), idx)
        })
        .prop_filter("indices need a non-empty axis", |(s, a, is, _)| s[*a] > 0 || numel(is) == 0)
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn gather_matches_reference((shape, axis, ishape, idx) in gather_case(), dtype in dtype_strategy(), i32_idx in any::<bool>()) {
        let x = make(dtype, &shape);
        let it = if i32_idx {
            Tensor::from_vec(&ishape, idx.iter().map(|v| *v as i32).collect()).unwrap()
        } else {
            Tensor::from_vec(&ishape, idx.clone()).unwrap()
        };
        let y = run1("Gather", 13, vec![("axis", a_int(axis as i64 - shape.len() as i64))], vec![x.clone(), it]).unwrap();
        let mut out_shape = shape[..axis].to_vec();
        out_shape.extend(&ishape);
        out_shape.extend(&shape[axis + 1..]);
        prop_assert_eq!(y.shape(), out_shape.as_slice());
        let kx = keys(&x);
        let q = ishape.len();
        let want: Vec<Vec<u8>> = (0..numel(&out_shape)).map(|f| {
            let oi = unravel(f, &out_shape);
            let j = ravel(&oi[axis..axis + q], &ishape);
            let v = idx[j];
            let v = if v < 0 { v + shape[axis] as i64 } else { v } as usize;
            let mut ii = oi[..axis].to_vec();
            ii.push(v);
            ii.extend(&oi[axis + q..]);
            kx[ravel(&ii, &shape)].clone()
        }).collect();
        prop_assert_eq!(keys(&y), want);
    }

    #[test]
    fn gather_elements_and_scatter_elements_match_reference(
        (shape, axis) in shape_strategy(1, 4).prop_flat_map(|s| { let r = s.len(); (Just(s), 0..r) }),
        dtype in dtype_strategy(), seed in any::<u64>(),
    ) {
        prop_assume!(shape[axis] > 0);
        let x = make(dtype, &shape);
        let d = shape[axis] as i64;
        // Index shape: at most the data shape off the axis, anything small along it.
        let mut ishape = shape.clone();
        let mut rng = seed;
        let mut next = || { rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); (rng >> 33) as usize };
        for (a, e) in ishape.iter_mut().enumerate() {
            *e = if a == axis { next() % 4 } else { next() % (*e + 1) };
        }
        let idx: Vec<i64> = (0..numel(&ishape)).map(|_| (next() as i64 % (2 * d)) - d).collect();
        let it = Tensor::from_vec(&ishape, idx.clone()).unwrap();
        let y = run1("GatherElements", 13, vec![("axis", a_int(axis as i64))], vec![x.clone(), it.clone()]).unwrap();
        prop_assert_eq!(y.shape(), ishape.as_slice());
        let kx = keys(&x);
        let target = |f: usize| {
            let mut i = unravel(f, &ishape);
            let v = idx[f];
            i[axis] = if v < 0 { v + d } else { v } as usize;
            ravel(&i, &shape)
        };
        let want: Vec<Vec<u8>> = (0..idx.len()).map(|f| kx[target(f)].clone()).collect();
        prop_assert_eq!(keys(&y), want);
        // Scatter the gathered elements of another tensor back (last write wins on repeats).
        let upd = make(dtype, &ishape);
        let s = run1("ScatterElements", 18, vec![("axis", a_int(axis as i64))], vec![x.clone(), it, upd.clone()]).unwrap();
        let mut want = kx.clone();
        for (f, u) in keys(&upd).into_iter().enumerate() {
            want[target(f)] = u;
        }
        prop_assert_eq!(keys(&s), want);
    }

    #[test]
    fn gather_nd_and_scatter_nd_match_reference(
        (shape, b, k) in shape_strategy(1, 4).prop_flat_map(|s| { let r = s.len(); (Just(s), 0..r) })
            .prop_flat_map(|(s, b)| { let r = s.len(); (Just(s), Just(b), 1..=(r - b)) }),
        extra in prop::collection::vec(0usize..=3, 0..=2),
        dtype in dtype_strategy(), seed in any::<u64>(),
    ) {
        prop_assume!(shape[b..b + k].iter().all(|d| *d > 0));
        let x = make(dtype, &shape);
        let mut ishape = shape[..b].to_vec();
        ishape.extend(&extra);
        ishape.push(k);
        let mut rng = seed;
        let mut next = || { rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); (rng >> 33) as i64 };
        let idx: Vec<i64> = (0..numel(&ishape)).map(|f| {
            let d = shape[b + f % k] as i64;
            next().rem_euclid(2 * d) - d
        }).collect();
        let it = Tensor::from_vec(&ishape, idx.clone()).unwrap();
        let y = run1("GatherND", 13, vec![("batch_dims", a_int(b as i64))], vec![x.clone(), it.clone()]).unwrap();
        let mut out_shape = ishape[..ishape.len() - 1].to_vec();
        out_shape.extend(&shape[b + k..]);
        prop_assert_eq!(y.shape(), out_shape.as_slice());
        let kx = keys(&x);
        let q = ishape.len();
        let source = |oi: &[usize]| {
            let t = ravel(&oi[..q - 1], &ishape[..q - 1]);
            let mut ii = oi[..b].to_vec();
            for j in 0..k {
                let v = idx[t * k + j];
                ii.push(if v < 0 { v + shape[b + j] as i64 } else { v } as usize);
            }
            ii.extend(&oi[q - 1..]);
            ravel(&ii, &shape)
        };
        let want: Vec<Vec<u8>> = (0..numel(&out_shape)).map(|f| kx[source(&unravel(f, &out_shape))].clone()).collect();
        prop_assert_eq!(keys(&y), want);
        if b == 0 {
            let upd = make(dtype, &out_shape);
            let s = run1("ScatterND", 18, vec![], vec![x.clone(), it, upd.clone()]).unwrap();
            let mut want = kx.clone();
            for (f, u) in keys(&upd).into_iter().enumerate() {
                want[source(&unravel(f, &out_shape))] = u;
            }
            prop_assert_eq!(keys(&s), want);
        }
    }
}

#[test]
fn gather_and_scatter_errors_and_reductions() {
    let x = Tensor::from_vec(&[2, 3], vec![1f32, 2., 3., 4., 5., 6.]).unwrap();
    assert!(run1("Gather", 13, vec![], vec![x.clone(), ints(&[2])]).is_err(), "index past the end");
    assert!(run1("Gather", 13, vec![], vec![x.clone(), ints(&[-3])]).is_err());
    assert!(run1("Gather", 13, vec![("axis", a_int(2))], vec![x.clone(), ints(&[0])]).is_err());
    let g = run1("Gather", 13, vec![("axis", a_int(1))], vec![x.clone(), int(-1)]).unwrap();
    assert_eq!((g.shape(), g.to_vec::<f32>().unwrap()), (&[2usize][..], vec![3., 6.]));
    let s = Tensor::from_strings(&[3], vec!["x".into(), "y".into(), "z".into()]).unwrap();
    let gs = run1("Gather", 13, vec![], vec![s, ints(&[2, 0, 2])]).unwrap();
    assert_eq!(gs.as_strings().unwrap(), &["z".to_owned(), "x".into(), "z".into()]);
    assert!(
        run1("GatherElements", 13, vec![], vec![x.clone(), Tensor::from_vec(&[1, 1], vec![5i64]).unwrap()]).is_err()
    );
    assert!(
        run1("GatherND", 13, vec![], vec![x.clone(), Tensor::from_vec(&[1, 3], vec![0i64, 0, 0]).unwrap()]).is_err()
    );
    // Spec example 1 of ScatterElements, then the reductions with a repeated index.
    let zeros = Tensor::zeros(DType::F32, &[3, 3]);
    let idx = Tensor::from_vec(&[2, 3], vec![1i64, 0, 2, 0, 2, 1]).unwrap();
    let upd = Tensor::from_vec(&[2, 3], vec![1.0f32, 1.1, 1.2, 2.0, 2.1, 2.2]).unwrap();
    let y = run1("ScatterElements", 11, vec![], vec![zeros, idx, upd]).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0, 1.1, 0.0, 1.0, 0.0, 2.2, 0.0, 2.1, 1.2]);
    let data = Tensor::from_vec(&[1, 5], vec![1i32, 2, 3, 4, 5]).unwrap();
    let idx = Tensor::from_vec(&[1, 3], vec![1i64, 1, -1]).unwrap();
    let upd = Tensor::from_vec(&[1, 3], vec![10i32, 20, 7]).unwrap();
    let red = |r: &str| {
        run1(
            "ScatterElements",
            18,
            vec![("axis", a_int(1)), ("reduction", Attr::String(r.into()))],
            vec![data.clone(), idx.clone(), upd.clone()],
        )
        .unwrap()
        .to_vec::<i32>()
        .unwrap()
    };
    assert_eq!(red("add"), vec![1, 32, 3, 4, 12]);
    assert_eq!(red("mul"), vec![1, 400, 3, 4, 35]);
    assert_eq!(red("max"), vec![1, 20, 3, 4, 7]);
    assert_eq!(red("min"), vec![1, 2, 3, 4, 5]);
    assert_eq!(red("none"), vec![1, 20, 3, 4, 7]);
    // ScatterND spec example 1 and an add reduction.
    let d = Tensor::from_vec(&[8], (1..=8).collect::<Vec<i64>>()).unwrap();
    let i = Tensor::from_vec(&[4, 1], vec![4i64, 3, 1, 7]).unwrap();
    let u = Tensor::from_vec(&[4], vec![9i64, 10, 11, 12]).unwrap();
    let y = run1("ScatterND", 16, vec![], vec![d.clone(), i.clone(), u.clone()]).unwrap();
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![1, 11, 3, 10, 9, 6, 7, 12]);
    let y =
        run1("ScatterND", 16, vec![("reduction", Attr::String("add".into()))], vec![d.clone(), i.clone(), u]).unwrap();
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![1, 13, 3, 14, 14, 6, 7, 20]);
    assert!(run1("ScatterND", 16, vec![], vec![d, i, Tensor::from_vec(&[3], vec![1i64, 2, 3]).unwrap()]).is_err());
    let s = Tensor::from_strings(&[2], vec!["a".into(), "b".into()]).unwrap();
    let u = Tensor::from_strings(&[1], vec!["z".into()]).unwrap();
    let r = run1("ScatterElements", 18, vec![("reduction", Attr::String("add".into()))], vec![s, ints(&[0]), u]);
    assert!(matches!(r, Err(Error::Unsupported(_))));
}

// ---------------------------------------------------------------- Expand / Tile / Pad

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn expand_and_tile_match_reference(shape in shape_strategy(0, 4), dtype in dtype_strategy(), seed in any::<u64>()) {
        let x = make(dtype, &shape);
        let kx = keys(&x);
        let mut rng = seed;
        let mut next = || { rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); (rng >> 33) as usize };
        // Expand target: each dim of x either kept, or (if 1) grown, plus up to 2 new leading dims;
        // target dims may also be 1 where x has more.
        let lead = next() % 3;
        let mut target: Vec<i64> = (0..lead).map(|_| (next() % 3) as i64).collect();
        for d in &shape {
            target.push(if *d == 1 { (next() % 4) as i64 } else if next().is_multiple_of(3) { 1 } else { *d as i64 });
        }
        let y = run1("Expand", 13, vec![], vec![x.clone(), ints(&target)]).unwrap();
        let out_shape: Vec<usize> = target.iter().enumerate().map(|(i, t)| {
            if i < lead { *t as usize } else { let d = shape[i - lead]; if d == 1 { *t as usize } else { d } }
        }).collect();
        prop_assert_eq!(y.shape(), out_shape.as_slice());
        let want: Vec<Vec<u8>> = (0..numel(&out_shape)).map(|f| {
            let oi = unravel(f, &out_shape);
            let ii: Vec<usize> = shape.iter().enumerate().map(|(a, d)| if *d == 1 { 0 } else { oi[a + lead] }).collect();
            kx[ravel(&ii, &shape)].clone()
        }).collect();
        prop_assert_eq!(keys(&y), want);

        let reps: Vec<i64> = shape.iter().map(|_| (next() % 3) as i64).collect();
        let t = run1("Tile", 13, vec![], vec![x.clone(), ints(&reps)]).unwrap();
        let tshape: Vec<usize> = shape.iter().zip(&reps).map(|(d, r)| d * *r as usize).collect();
        prop_assert_eq!(t.shape(), tshape.as_slice());
        let want: Vec<Vec<u8>> = (0..numel(&tshape)).map(|f| {
            let oi = unravel(f, &tshape);
            let ii: Vec<usize> = oi.iter().zip(&shape).map(|(o, d)| o % d).collect();
            kx[ravel(&ii, &shape)].clone()
        }).collect();
        prop_assert_eq!(keys(&t), want);
    }

    #[test]
    fn pad_matches_reference(shape in shape_strategy(0, 4), dtype in dtype_strategy(), mode in 0usize..4, seed in any::<u64>()) {
        let x = make(dtype, &shape);
        let kx = keys(&x);
        let r = shape.len();
        let mut rng = seed;
        let mut next = || { rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); (rng >> 33) as i64 };
        let mode_name = ["constant", "reflect", "edge", "wrap"][mode];
        let mut pads = vec![0i64; 2 * r];
        for a in 0..r {
            let d = shape[a] as i64;
            for p in [a, a + r] {
                // Constant mode may crop; the others pad up to a few times the extent.
                pads[p] = if mode == 0 { next() % 4 - d.min(2) } else if d == 0 { 0 } else { next().rem_euclid(3 * d + 1) };
            }
            if mode == 0 && d + pads[a] + pads[a + r] < 0 {
                pads[a + r] = -d - pads[a];
            }
        }
        let cval = make(dtype, &[]);
        let with_value = mode == 0 && next().rem_euclid(2) == 0;
        let inputs = vec![Some(x.clone()), Some(ints(&pads)), if with_value { Some(cval.clone()) } else { None }];
        let y = run_t("Pad", 19, vec![("mode", Attr::String(mode_name.into()))], inputs, 1).unwrap().remove(0);
        let out_shape: Vec<usize> = (0..r).map(|a| (shape[a] as i64 + pads[a] + pads[a + r]) as usize).collect();
        prop_assert_eq!(y.shape(), out_shape.as_slice());
        let fill = if with_value { keys(&cval).remove(0) } else { zero_key(dtype) };
        // Reflection walked one step at a time, bouncing off both ends.
        let bounce = |mut i: i64, d: i64| -> i64 {
            if d == 1 { return 0; }
            let mut dir = 1;
            let mut pos = 0;
            if i < 0 { dir = -1; i = -i; }
            for _ in 0..i {
                if pos + dir < 0 || pos + dir >= d { dir = -dir; }
                pos += dir;
            }
            pos
        };
        let want: Vec<Vec<u8>> = (0..numel(&out_shape)).map(|f| {
            let oi = unravel(f, &out_shape);
            let mut ii = vec![];
            for a in 0..r {
                let d = shape[a] as i64;
                let i = oi[a] as i64 - pads[a];
                let src = match mode {
                    _ if (0..d).contains(&i) => i,
                    0 => return fill.clone(),
                    1 => bounce(i, d),
                    2 => i.clamp(0, d - 1),
                    _ => ((i % d) + d) % d,
                };
                ii.push(src as usize);
            }
            kx[ravel(&ii, &shape)].clone()
        }).collect();
        prop_assert_eq!(keys(&y), want);
    }
}

/// A case the random search found: a crop and a pad on one axis leave a one-element copy, which
/// was once passed on as a view of the input instead of being padded.
#[test]
fn pad_that_crops_and_pads_one_axis_fills_the_rest() {
    let x = Tensor::from_vec(&[3, 2], vec![1u8, 2, 3, 4, 5, 6]).unwrap();
    let y = run_t("Pad", 19, vec![], vec![Some(x), Some(ints(&[0, -1, -2, 1]))], 1).unwrap().remove(0);
    assert_eq!(y.shape(), [1, 2]);
    assert_eq!(y.as_slice::<u8>().unwrap(), [2, 0]);
}

#[test]
fn pad_spec_examples() {
    let x = Tensor::from_vec(&[3, 2], vec![1.0f32, 1.2, 2.3, 3.4, 4.5, 5.7]).unwrap();
    let pad = |mode: &str, pads: &[i64]| {
        run_t("Pad", 19, vec![("mode", Attr::String(mode.into()))], vec![Some(x.clone()), Some(ints(pads))], 1)
            .unwrap()
            .remove(0)
            .to_vec::<f32>()
            .unwrap()
    };
    #[rustfmt::skip]
    assert_eq!(pad("constant", &[0, 2, 0, 0]), vec![0.0, 0.0, 1.0, 1.2, 0.0, 0.0, 2.3, 3.4, 0.0, 0.0, 4.5, 5.7]);
    #[rustfmt::skip]
    assert_eq!(pad("reflect", &[0, 2, 0, 0]), vec![1.0, 1.2, 1.0, 1.2, 2.3, 3.4, 2.3, 3.4, 4.5, 5.7, 4.5, 5.7]);
    #[rustfmt::skip]
    assert_eq!(pad("edge", &[0, 2, 0, 0]), vec![1.0, 1.0, 1.0, 1.2, 2.3, 2.3, 2.3, 3.4, 4.5, 4.5, 4.5, 5.7]);
    #[rustfmt::skip]
    assert_eq!(pad("wrap", &[2, 1, 1, 1]), vec![
        3.4, 2.3, 3.4, 2.3, 5.7, 4.5, 5.7, 4.5, 1.2, 1.0, 1.2, 1.0,
        3.4, 2.3, 3.4, 2.3, 5.7, 4.5, 5.7, 4.5, 1.2, 1.0, 1.2, 1.0,
    ]);
    // Reflect along a row [1, 2, 3] by 2 on each side: [3, 2, 1, 2, 3, 2, 1].
    let row = Tensor::from_vec(&[3], vec![1i32, 2, 3]).unwrap();
    let r = run_t(
        "Pad",
        13,
        vec![("mode", Attr::String("reflect".into()))],
        vec![Some(row.clone()), Some(ints(&[2, 2]))],
        1,
    )
    .unwrap();
    assert_eq!(r[0].to_vec::<i32>().unwrap(), vec![3, 2, 1, 2, 3, 2, 1]);
    // Constant value input, axes input (opset 18), and the legacy attribute form.
    let v = Tensor::scalar(9i32);
    let r =
        run_t("Pad", 18, vec![], vec![Some(row.clone()), Some(ints(&[1, 0])), Some(v), Some(ints(&[-1]))], 1).unwrap();
    assert_eq!(r[0].to_vec::<i32>().unwrap(), vec![9, 1, 2, 3]);
    let r = run1("Pad", 2, vec![("pads", a_ints(&[0, 2])), ("value", Attr::Float(5.0))], vec![row.clone()]).unwrap();
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![1, 2, 3, 5, 5]);
    let crop = run_t("Pad", 13, vec![], vec![Some(row.clone()), Some(ints(&[-1, -1]))], 1).unwrap();
    assert_eq!(crop[0].to_vec::<i32>().unwrap(), vec![2]);
    assert!(run_t("Pad", 13, vec![], vec![Some(row.clone()), Some(ints(&[-2, -2]))], 1).is_err());
    assert!(run_t("Pad", 13, vec![], vec![Some(row.clone()), Some(ints(&[1]))], 1).is_err());
    let edge_empty = run_t(
        "Pad",
        13,
        vec![("mode", Attr::String("edge".into()))],
        vec![Some(make(DType::F32, &[0])), Some(ints(&[1, 0]))],
        1,
    );
    assert!(edge_empty.is_err());
}

// ---------------------------------------------------------------- Range

#[test]
fn range_spec_examples() {
    let r = |s: Tensor, l: Tensor, d: Tensor| run1("Range", 11, vec![], vec![s, l, d]);
    let y = r(int(3), int(9), int(3)).unwrap();
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![3, 6]);
    let y = r(int(10), int(4), int(-2)).unwrap();
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![10, 8, 6]);
    let y = r(Tensor::scalar(1i32), Tensor::scalar(2i32), Tensor::scalar(5i32)).unwrap();
    assert_eq!(y.to_vec::<i32>().unwrap(), vec![1]);
    assert_eq!(r(int(5), int(1), int(1)).unwrap().shape(), &[0]);
    let y = r(Tensor::scalar(0.0f32), Tensor::scalar(1.0f32), Tensor::scalar(0.25f32)).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.0, 0.25, 0.5, 0.75]);
    let y = r(Tensor::scalar(1.0f64), Tensor::scalar(2.05f64), Tensor::scalar(0.5f64)).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![1.0, 1.5, 2.0]);
    let y = r(Tensor::scalar(-3i16), Tensor::scalar(3i16), Tensor::scalar(4i16)).unwrap();
    assert_eq!(y.to_vec::<i16>().unwrap(), vec![-3, 1]);
    let h = |v: f32| Tensor::scalar(half::f16::from_f32(v));
    let y = r(h(0.0), h(2.0), h(0.5)).unwrap();
    assert_eq!(y.to_f64_vec().unwrap(), vec![0.0, 0.5, 1.0, 1.5]);
    let big = r(int(i64::MIN), int(i64::MIN + 3), int(1)).unwrap();
    assert_eq!(big.to_vec::<i64>().unwrap(), vec![i64::MIN, i64::MIN + 1, i64::MIN + 2]);
    assert!(r(int(0), int(5), int(0)).is_err());
    assert!(r(Tensor::scalar(0.0f32), Tensor::scalar(f32::INFINITY), Tensor::scalar(1.0f32)).is_err());
    assert!(r(int(0), Tensor::scalar(5i32), int(1)).is_err());
    assert!(matches!(r(Tensor::scalar(0u8), Tensor::scalar(5u8), Tensor::scalar(1u8)), Err(Error::Unsupported(_))));
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn range_matches_reference(start in -50i64..50, limit in -50i64..50, delta in prop_oneof![-7i64..=-1, 1i64..=7]) {
        let y = run1("Range", 11, vec![], vec![int(start), int(limit), int(delta)]).unwrap();
        let mut want = vec![];
        let mut v = start;
        while (delta > 0 && v < limit) || (delta < 0 && v > limit) {
            want.push(v);
            v += delta;
        }
        prop_assert_eq!(y.to_vec::<i64>().unwrap(), want.clone());
        let yf = run1("Range", 11, vec![], vec![Tensor::scalar(start as f32 / 4.0), Tensor::scalar(limit as f32 / 4.0), Tensor::scalar(delta as f32 / 4.0)]).unwrap();
        let wf: Vec<f32> = want.iter().map(|v| *v as f32 / 4.0).collect();
        prop_assert_eq!(yf.to_vec::<f32>().unwrap(), wf);
    }
}

// ---------------------------------------------------------------- DepthToSpace / SpaceToDepth

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn depth_space_match_reference(b in 0usize..3, c in 1usize..3, h in 0usize..3, w in 1usize..4, bs in 1usize..4,
                                   crd in any::<bool>(), dtype in dtype_strategy()) {
        let mode = Attr::String(if crd { "CRD" } else { "DCR" }.into());
        let x = make(dtype, &[b, c * bs * bs, h, w]);
        let y = run1("DepthToSpace", 13, vec![("blocksize", a_int(bs as i64)), ("mode", mode.clone())], vec![x.clone()]).unwrap();
        prop_assert_eq!(y.shape(), &[b, c, h * bs, w * bs][..]);
        let (kx, ky) = (keys(&x), keys(&y));
        let xs = [b, c * bs * bs, h, w];
        let ys = [b, c, h * bs, w * bs];
        for n in 0..b { for ch in 0..c { for hh in 0..h { for ww in 0..w { for i in 0..bs { for j in 0..bs {
            let src_c = if crd { ch * bs * bs + i * bs + j } else { (i * bs + j) * c + ch };
            prop_assert_eq!(&ky[ravel(&[n, ch, hh * bs + i, ww * bs + j], &ys)], &kx[ravel(&[n, src_c, hh, ww], &xs)]);
        }}}}}}
        // SpaceToDepth inverts DepthToSpace in the same mode.
        let back = run1("SpaceToDepth", 28, vec![("blocksize", a_int(bs as i64)), ("mode", mode)], vec![y]).unwrap();
        prop_assert_eq!(back.shape(), x.shape());
        prop_assert_eq!(keys(&back), kx);
    }
}

#[test]
fn depth_space_errors() {
    let x = make(DType::F32, &[1, 3, 2, 2]);
    assert!(run1("DepthToSpace", 13, vec![("blocksize", a_int(2))], vec![x.clone()]).is_err());
    assert!(run1("SpaceToDepth", 13, vec![("blocksize", a_int(3))], vec![x.clone()]).is_err());
    assert!(run1("SpaceToDepth", 13, vec![("blocksize", a_int(0))], vec![x]).is_err());
    assert!(run1("DepthToSpace", 13, vec![("blocksize", a_int(1))], vec![make(DType::F32, &[1, 3, 2])]).is_err());
}

// ---------------------------------------------------------------- Trilu / CumSum / TopK / others

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn trilu_matches_reference(shape in shape_strategy(2, 4), k in -4i64..4, upper in any::<bool>(), dtype in dtype_strategy()) {
        let x = make(dtype, &shape);
        let y = run_t("Trilu", 14, vec![("upper", a_int(upper as i64))], vec![Some(x.clone()), Some(int(k))], 1).unwrap().remove(0);
        let r = shape.len();
        let kx = keys(&x);
        let zero = if dtype == DType::String { vec![] } else { zero_key(dtype) };
        let want: Vec<Vec<u8>> = (0..numel(&shape)).map(|f| {
            let i = unravel(f, &shape);
            let (row, col) = (i[r - 2] as i64, i[r - 1] as i64);
            let keep = if upper { col - row >= k } else { col - row <= k };
            if keep { kx[f].clone() } else { zero.clone() }
        }).collect();
        prop_assert_eq!(keys(&y), want);
    }

    #[test]
    fn cum_sum_matches_reference((shape, axis) in shape_strategy(1, 4).prop_flat_map(|s| { let r = s.len(); (Just(s), 0..r) }),
                                 exclusive in any::<bool>(), reverse in any::<bool>()) {
        let n = numel(&shape);
        let x = Tensor::from_vec(&shape, (0..n as i64).map(|v| v * 7 % 11 - 5).collect()).unwrap();
        let xv = x.to_vec::<i64>().unwrap();
        let attrs = vec![("exclusive", a_int(exclusive as i64)), ("reverse", a_int(reverse as i64))];
        let y = run1("CumSum", 14, attrs, vec![x.clone(), Tensor::scalar(axis as i32 - shape.len() as i32)]).unwrap();
        let want: Vec<i64> = (0..n).map(|f| {
            let i = unravel(f, &shape);
            (0..shape[axis]).filter(|j| {
                let c = i[axis];
                match (exclusive, reverse) {
                    (false, false) => *j <= c,
                    (true, false) => *j < c,
                    (false, true) => *j >= c,
                    (true, true) => *j > c,
                }
            }).map(|j| { let mut ii = i.clone(); ii[axis] = j; xv[ravel(&ii, &shape)] }).sum()
        }).collect();
        prop_assert_eq!(y.to_vec::<i64>().unwrap(), want);
    }

    #[test]
    fn top_k_matches_reference((shape, axis) in shape_strategy(1, 3).prop_flat_map(|s| { let r = s.len(); (Just(s), 0..r) }),
                               largest in any::<bool>(), kfrac in 0usize..=4, modulus in 1i32..6) {
        let n = numel(&shape);
        // Few distinct values, so ties are common and the index tie-break is exercised.
        let x = Tensor::from_vec(&shape, (0..n as i32).map(|v| (v * 5 + 3) % modulus).map(|v| v as f32).collect()).unwrap();
        let xv = x.to_vec::<f32>().unwrap();
        let d = shape[axis];
        let k = d * kfrac / 4;
        let attrs = vec![("axis", a_int(axis as i64)), ("largest", a_int(largest as i64))];
        let out = run_t("TopK", 11, attrs, vec![Some(x.clone()), Some(ints(&[k as i64]))], 2).unwrap();
        let mut os = shape.clone();
        os[axis] = k;
        prop_assert_eq!(out[0].shape(), os.as_slice());
        let (vals, idxs) = (out[0].to_vec::<f32>().unwrap(), out[1].to_vec::<i64>().unwrap());
        for f in 0..numel(&os) {
            let oi = unravel(f, &os);
            // Reference: a stable sort of the line by value.
            let mut line: Vec<(f32, usize)> = (0..d).map(|j| { let mut ii = oi.clone(); ii[axis] = j; (xv[ravel(&ii, &shape)], j) }).collect();
            line.sort_by(|a, b| if largest { b.0.partial_cmp(&a.0).unwrap() } else { a.0.partial_cmp(&b.0).unwrap() });
            let (v, j) = line[oi[axis]];
            prop_assert_eq!(vals[f], v);
            prop_assert_eq!(idxs[f], j as i64);
        }
    }
}

#[test]
fn top_k_spec_cases_and_errors() {
    let x = Tensor::from_vec(&[3, 4], (0..12).map(|v| v as f32).collect()).unwrap();
    let out = run_t("TopK", 1, vec![("k", a_int(3))], vec![Some(x.clone())], 2).unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![3., 2., 1., 7., 6., 5., 11., 10., 9.]);
    assert_eq!(out[1].to_vec::<i64>().unwrap(), vec![3, 2, 1, 3, 2, 1, 3, 2, 1]);
    let nan = Tensor::from_vec(&[3], vec![1.0f32, f32::NAN, 2.0]).unwrap();
    let out = run_t("TopK", 11, vec![], vec![Some(nan), Some(ints(&[2]))], 2).unwrap();
    assert_eq!(out[1].to_vec::<i64>().unwrap(), vec![1, 2], "NaN ranks above every number");
    assert!(run_t("TopK", 11, vec![], vec![Some(x.clone()), Some(ints(&[5]))], 2).is_err());
    assert!(run_t("TopK", 11, vec![], vec![Some(x.clone()), Some(ints(&[-1]))], 2).is_err());
    assert!(run_t("TopK", 11, vec![("axis", a_int(2))], vec![Some(x), Some(ints(&[1]))], 2).is_err());
    // An empty input with a huge sorted axis (found by AFL): once a 1.7 TB scratch line.
    let empty = Tensor::zeros(DType::F32, &[0, 1 << 37]);
    let out = run_t("TopK", 11, vec![], vec![Some(empty), Some(ints(&[3]))], 2).unwrap();
    assert_eq!((out[0].shape(), out[1].shape()), (&[0, 3][..], &[0, 3][..]));
}

#[test]
fn cum_sum_spec_example() {
    let x = Tensor::from_vec(&[3], vec![1f64, 2., 3.]).unwrap();
    let cs = |e: i64, r: i64| {
        run1("CumSum", 14, vec![("exclusive", a_int(e)), ("reverse", a_int(r))], vec![x.clone(), int(0)])
            .unwrap()
            .to_vec::<f64>()
            .unwrap()
    };
    assert_eq!(cs(0, 0), vec![1., 3., 6.]);
    assert_eq!(cs(1, 0), vec![0., 1., 3.]);
    assert_eq!(cs(0, 1), vec![6., 5., 3.]);
    assert_eq!(cs(1, 1), vec![5., 3., 0.]);
    assert!(run1("CumSum", 14, vec![], vec![x, int(1)]).is_err());
}

#[test]
fn one_hot_non_zero_compress_reverse_sequence() {
    let idx = Tensor::from_vec(&[3], vec![0i64, -1, 5]).unwrap();
    let vals = Tensor::from_vec(&[2], vec![0.5f32, 2.0]).unwrap();
    let y = run1("OneHot", 11, vec![], vec![idx.clone(), Tensor::scalar(3.0f32), vals.clone()]).unwrap();
    assert_eq!(y.shape(), &[3, 3]);
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0, 0.5, 0.5, 0.5, 0.5, 2.0, 0.5, 0.5, 0.5]);
    let y0 = run1("OneHot", 11, vec![("axis", a_int(0))], vec![idx.clone(), ints(&[3]), vals.clone()]).unwrap();
    assert_eq!(y0.to_vec::<f32>().unwrap(), vec![2.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 2.0, 0.5]);
    let sv = Tensor::from_strings(&[2], vec!["off".into(), "on".into()]).unwrap();
    let ys = run1("OneHot", 11, vec![], vec![Tensor::scalar(1i32), int(2), sv]).unwrap();
    assert_eq!(ys.as_strings().unwrap(), &["off".to_owned(), "on".into()]);
    assert!(run1("OneHot", 11, vec![], vec![idx.clone(), int(0), vals.clone()]).is_err());
    assert!(run1("OneHot", 11, vec![("axis", a_int(2))], vec![idx, int(3), vals]).is_err());

    let x = Tensor::from_vec(&[2, 3], vec![0.0f32, -0.0, 3.0, f32::NAN, 0.0, 1.0]).unwrap();
    let nz = run1("NonZero", 13, vec![], vec![x]).unwrap();
    assert_eq!((nz.shape(), nz.to_vec::<i64>().unwrap()), (&[2usize, 3][..], vec![0, 1, 1, 2, 0, 2]));
    let s = Tensor::from_strings(&[3], vec!["".into(), "a".into(), "".into()]).unwrap();
    assert_eq!(run1("NonZero", 13, vec![], vec![s]).unwrap().to_vec::<i64>().unwrap(), vec![1]);
    let sc = run1("NonZero", 13, vec![], vec![Tensor::scalar(4i32)]).unwrap();
    assert_eq!(sc.shape(), &[1, 1]);

    let x = Tensor::from_vec(&[3, 2], vec![1i32, 2, 3, 4, 5, 6]).unwrap();
    let cond = |v: &[bool]| Tensor::from_slice(&[v.len()], v).unwrap();
    let c = run1("Compress", 11, vec![("axis", a_int(0))], vec![x.clone(), cond(&[false, true])]).unwrap();
    assert_eq!((c.shape(), c.to_vec::<i32>().unwrap()), (&[1usize, 2][..], vec![3, 4]));
    let c = run1("Compress", 11, vec![("axis", a_int(-1))], vec![x.clone(), cond(&[false, true])]).unwrap();
    assert_eq!(c.to_vec::<i32>().unwrap(), vec![2, 4, 6]);
    let c = run1("Compress", 11, vec![], vec![x.clone(), cond(&[false, true, true, false, true])]).unwrap();
    assert_eq!(c.to_vec::<i32>().unwrap(), vec![2, 3, 5]);
    assert!(run1("Compress", 11, vec![("axis", a_int(0))], vec![x, cond(&[false, false, false, true])]).is_err());

    // Spec example 1: time_axis 0, batch_axis 1.
    let x = Tensor::from_vec(&[4, 4], (0..16).map(|i| ((i % 4) * 4 + i / 4) as f32).collect()).unwrap();
    let lens = Tensor::from_vec(&[4], vec![4i64, 3, 2, 1]).unwrap();
    let y = run1("ReverseSequence", 10, vec![], vec![x.clone(), lens]).unwrap();
    #[rustfmt::skip]
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![3., 6., 9., 12., 2., 5., 8., 13., 1., 4., 10., 14., 0., 7., 11., 15.]);
    let x2 = Tensor::from_vec(&[4, 4], (0..16).map(|i| i as f32).collect()).unwrap();
    let lens = Tensor::from_vec(&[4], vec![1i64, 2, 3, 4]).unwrap();
    let y =
        run1("ReverseSequence", 10, vec![("batch_axis", a_int(0)), ("time_axis", a_int(1))], vec![x2, lens]).unwrap();
    #[rustfmt::skip]
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![0., 1., 2., 3., 5., 4., 6., 7., 10., 9., 8., 11., 15., 14., 13., 12.]);
    assert!(
        run1("ReverseSequence", 10, vec![], vec![x, Tensor::from_vec(&[4], vec![5i64, 1, 1, 1]).unwrap()]).is_err()
    );
}

#[test]
fn dropout_modes() {
    let x = Tensor::from_vec(&[3], vec![1.0f32, 2.0, 3.0]).unwrap();
    let tr = Tensor::scalar(true);
    // Training mode at the default ratio 0.5 keeps each element doubled or drops it to 0 (the
    // random family tests the mask's statistics).
    let y = run_t("Dropout", 13, vec![], vec![Some(x.clone()), None, Some(tr.clone())], 1).unwrap();
    for (y, x) in y[0].to_vec::<f32>().unwrap().into_iter().zip([1.0f32, 2.0, 3.0]) {
        assert!(y == 0.0 || y == 2.0 * x, "{y} from {x}");
    }
    let out = run_t("Dropout", 13, vec![], vec![Some(x.clone()), Some(Tensor::scalar(0.0f32)), Some(tr)], 2).unwrap();
    assert_eq!(out[0].data_ptr(), x.data_ptr());
    assert_eq!(out[1].as_slice::<bool>().unwrap(), &[true; 3]);
    let old = run_t("Dropout", 7, vec![("ratio", Attr::Float(0.3))], vec![Some(x.clone())], 2).unwrap();
    assert_eq!(old[1].to_vec::<f32>().unwrap(), vec![1.0; 3]);
    assert_eq!(run_t("Dropout", 13, vec![], vec![Some(x)], 1).unwrap().len(), 1);
}

#[test]
fn opset_ranges_and_registration() {
    let mut r = Registry::default();
    super::register(&mut r);
    let mut ops: Vec<&str> = r.ops().map(|(_, o)| o).collect();
    ops.sort();
    for op in [
        "Compress",
        "Concat",
        "Constant",
        "ConstantOfShape",
        "CumSum",
        "DepthToSpace",
        "Dropout",
        "Expand",
        "EyeLike",
        "Flatten",
        "Gather",
        "GatherElements",
        "GatherND",
        "Identity",
        "NonZero",
        "OneHot",
        "Pad",
        "Range",
        "Reshape",
        "ReverseSequence",
        "ScatterElements",
        "ScatterND",
        "Shape",
        "Size",
        "Slice",
        "SpaceToDepth",
        "Split",
        "Squeeze",
        "TopK",
        "Transpose",
        "Trilu",
        "Unsqueeze",
        "Tile",
    ] {
        assert!(ops.contains(&op), "{op} missing");
    }
}

#[test]
fn extreme_parameters_are_errors_not_panics() {
    let x = make(DType::F32, &[2, 3]);
    let p = |mode: &str, pads: &[i64]| {
        run_t("Pad", 13, vec![("mode", Attr::String(mode.into()))], vec![Some(x.clone()), Some(ints(pads))], 1)
    };
    let cropped = p("constant", &[i64::MIN, 0, i64::MAX, 0]).unwrap();
    assert_eq!((cropped[0].shape(), cropped[0].to_vec::<f32>().unwrap()), (&[1usize, 3][..], vec![0.0; 3]));
    assert!(p("reflect", &[i64::MIN, 0, i64::MAX, 0]).is_ok());
    assert!(p("constant", &[i64::MAX, 0, i64::MAX, 0]).is_err());
    let sl = |s: i64, e: i64, st: i64| {
        run_t(
            "Slice",
            13,
            vec![],
            vec![Some(x.clone()), Some(ints(&[s])), Some(ints(&[e])), Some(ints(&[1])), Some(ints(&[st]))],
            1,
        )
        .map(|v| v[0].shape().to_vec())
    };
    assert_eq!(sl(0, i64::MAX, i64::MAX).unwrap(), vec![2, 1]);
    assert_eq!(sl(i64::MAX, i64::MIN, i64::MIN).unwrap(), vec![2, 1]);
    assert!(
        run1("DepthToSpace", 13, vec![("blocksize", a_int(i64::MAX))], vec![make(DType::F32, &[1, 4, 0, 0])]).is_err()
    );
    assert!(
        run1("SpaceToDepth", 13, vec![("blocksize", a_int(1 << 40))], vec![make(DType::F32, &[1, 4, 0, 0])]).is_err()
    );
    assert!(run1("Reshape", 14, vec![], vec![x.clone(), ints(&[i64::MAX, i64::MAX, 0])]).is_err());
    assert!(run1("Expand", 13, vec![], vec![x.clone(), ints(&[i64::MAX, 1, 1])]).is_err());
    assert!(run1("Tile", 13, vec![], vec![x.clone(), ints(&[i64::MAX, 2])]).is_err());
    assert!(run1("Range", 11, vec![], vec![int(i64::MIN), int(i64::MAX), int(1)]).is_err());
    assert!(run1("Gather", 13, vec![], vec![x.clone(), ints(&[i64::MIN])]).is_err());
    assert!(run1("Shape", 15, vec![("start", a_int(i64::MIN)), ("end", a_int(i64::MAX))], vec![x]).is_ok());
}
