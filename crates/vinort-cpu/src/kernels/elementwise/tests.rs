//! Every op against a naive reference (explicit index math, scalar formulas) on random shapes,
//! plus cases from the ONNX spec and bad inputs.
// Tables of (op, attributes, reference function) read best written out inline.
#![allow(clippy::type_complexity)]

use half::{bf16, f16};
use proptest::prelude::*;
use vinort_ir::{Attr, DType, Error, Result, Tensor};

use super::broadcast::{Broadcast, PAR_THRESHOLD, broadcast_shape};
use super::num::{erf_f32, erf_f64};
use crate::test_support::{
    self as ts, Known, assert_close, close, config, strings, tensor_of as t, unravel, vec1 as v1,
};

// ---------------------------------------------------------------------------------------------
// Harness

/// Compiles and runs one node. With `typed`, the factory sees the input types (so it can refuse
/// them); without, only the kernel sees them at run time.
fn run_node(
    op: &str,
    opset: i64,
    attrs: Vec<(&str, Attr)>,
    inputs: &[Option<Tensor>],
    typed: bool,
) -> Result<Vec<Tensor>> {
    let n = ts::op(op, opset).inputs(inputs.len()).attrs(attrs).build();
    ts::run_with(&n, inputs, if typed { Known::Types } else { Known::Nothing })
}

fn run(op: &str, opset: i64, attrs: Vec<(&str, Attr)>, inputs: &[Tensor]) -> Result<Tensor> {
    ts::run1(&ts::op(op, opset).inputs(inputs.len()).attrs(attrs).build(), inputs)
}

/// A small deterministic generator, so large tensors need no proptest shrinking.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 11
    }
    fn f32(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * (self.next() % 1_000_000) as f32 / 1_000_000.0
    }
}

fn rand_f32(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut g = Lcg(seed);
    (0..n).map(|_| g.f32(lo, hi)).collect()
}

// ---------------------------------------------------------------------------------------------
// Naive references: index math spelled out per element.

fn numel(s: &[usize]) -> usize {
    s.iter().product()
}

fn ref_shape(shapes: &[&[usize]]) -> Option<Vec<usize>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![];
    for d in 0..rank {
        let mut e = 1;
        for s in shapes {
            if d + s.len() < rank {
                continue;
            }
            let x = s[d + s.len() - rank];
            if x != 1 {
                if e != 1 && e != x {
                    return None;
                }
                e = x;
            }
        }
        out.push(e);
    }
    Some(out)
}

/// Flat index into an input of `shape` for output multi-index `out_idx`.
fn ref_index(out_idx: &[usize], shape: &[usize]) -> usize {
    let pad = out_idx.len() - shape.len();
    let mut flat = 0;
    for (k, &d) in shape.iter().enumerate() {
        let i = if d == 1 { 0 } else { out_idx[pad + k] };
        flat = flat * d + i;
    }
    flat
}

fn ref_binary<A: Copy, B: Copy, O>(
    sa: &[usize],
    a: &[A],
    sb: &[usize],
    b: &[B],
    f: impl Fn(A, B) -> O,
) -> (Vec<usize>, Vec<O>) {
    let shape = ref_shape(&[sa, sb]).unwrap();
    let out = (0..numel(&shape))
        .map(|i| {
            let idx = unravel(i, &shape);
            f(a[ref_index(&idx, sa)], b[ref_index(&idx, sb)])
        })
        .collect();
    (shape, out)
}

/// The error function by composite Simpson integration of 2/√π·e^(−t²) over [0, x].
fn ref_erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs().min(8.0);
    let n = 4000;
    let h = a / n as f64;
    let g = |t: f64| (-t * t).exp();
    let mut s = g(0.0) + g(a);
    for k in 1..n {
        s += g(k as f64 * h) * if k % 2 == 1 { 4.0 } else { 2.0 };
    }
    (s * h / 3.0 * 2.0 / std::f64::consts::PI.sqrt()).copysign(x)
}

// ---------------------------------------------------------------------------------------------
// Random broadcast-compatible shapes

fn dim() -> impl Strategy<Value = usize> {
    prop::sample::select(vec![0usize, 1, 1, 2, 3, 5, 7])
}

/// Two or three shapes that broadcast together: a random output shape, each input keeping a
/// suffix of it with some axes collapsed to 1.
fn shapes(n: usize) -> impl Strategy<Value = Vec<Vec<usize>>> {
    (
        prop::collection::vec(dim(), 0..=4),
        prop::collection::vec((0usize..=4, prop::collection::vec(any::<bool>(), 4)), n),
    )
        .prop_map(|(out, ins)| {
            ins.into_iter()
                .map(|(drop, ones)| {
                    let keep = &out[drop.min(out.len())..];
                    keep.iter().zip(&ones).map(|(d, one)| if *one { 1 } else { *d }).collect()
                })
                .collect()
        })
}

fn pair_with_values() -> impl Strategy<Value = (Vec<usize>, Vec<f32>, Vec<usize>, Vec<f32>)> {
    shapes(2).prop_flat_map(|s| {
        let (sa, sb) = (s[0].clone(), s[1].clone());
        let (na, nb) = (numel(&sa), numel(&sb));
        (
            Just(sa),
            prop::collection::vec(-4.0f32..4.0, na),
            Just(sb),
            prop::collection::vec(prop_oneof![-4.0f32..4.0, Just(0.0), Just(f32::NAN)], nb),
        )
    })
}

fn int_pair() -> impl Strategy<Value = (Vec<usize>, Vec<i32>, Vec<usize>, Vec<i32>)> {
    shapes(2).prop_flat_map(|s| {
        let (sa, sb) = (s[0].clone(), s[1].clone());
        let (na, nb) = (numel(&sa), numel(&sb));
        (
            Just(sa),
            prop::collection::vec(-50i32..50, na),
            Just(sb),
            prop::collection::vec(prop_oneof![-9i32..=-1, 1i32..=9], nb),
        )
    })
}

fn f32s(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn broadcast_plan_visits_every_output_once(s in shapes(3)) {
        let expect = ref_shape(&[&s[0], &s[1], &s[2]]).unwrap();
        let bc = Broadcast::new([s[0].as_slice(), s[1].as_slice(), s[2].as_slice()]).unwrap();
        prop_assert_eq!(bc.shape(), expect.as_slice());
        let strides = bc.inner_strides();
        let mut seen = vec![0usize; bc.len()];
        // Walk from an arbitrary start too, as the parallel chunks do.
        let start = bc.len() / 3;
        for (lo, hi) in [(0, start), (start, bc.len())] {
            bc.for_segments(lo, hi, |pos, offs, n| {
                for k in 0..n {
                    let idx = unravel(pos + k, &expect);
                    seen[pos + k] += 1;
                    for i in 0..3 {
                        assert_eq!(offs[i] + k * strides[i], ref_index(&idx, &s[i]));
                    }
                }
            });
        }
        prop_assert!(seen.iter().all(|c| *c == 1));
    }

    #[test]
    fn f32_arith_matches_reference((sa, a, sb, b) in pair_with_values()) {
        let (ta, tb) = (t(&sa, &a), t(&sb, &b));
        let cases: [(&str, fn(f32, f32) -> f32); 4] =
            [("Add", |x, y| x + y), ("Sub", |x, y| x - y), ("Mul", |x, y| x * y), ("Div", |x, y| x / y)];
        for (op, f) in cases {
            let got = run(op, 14, vec![], &[ta.clone(), tb.clone()]).unwrap();
            let (shape, exp) = ref_binary(&sa, &a, &sb, &b, f);
            prop_assert_eq!(got.shape(), shape.as_slice());
            let exp: Vec<f64> = exp.into_iter().map(f64::from).collect();
            assert_close(&f32s(&got), &exp, 0.0, 0.0, op);
        }
        let nan_max = |x: f32, y: f32| if x.is_nan() || y.is_nan() { f32::NAN } else if x > y { x } else { y };
        let nan_min = |x: f32, y: f32| if x.is_nan() || y.is_nan() { f32::NAN } else if x < y { x } else { y };
        let cases: [(&str, &dyn Fn(f32, f32) -> f32, Vec<(&str, Attr)>); 4] = [
            ("Max", &nan_max, vec![]),
            ("Min", &nan_min, vec![]),
            ("Pow", &|x: f32, y: f32| x.powf(y), vec![]),
            ("Mod", &|x: f32, y: f32| x % y, vec![("fmod", Attr::Int(1))]),
        ];
        for (op, f, attrs) in cases {
            let got = run(op, 13, attrs, &[ta.clone(), tb.clone()]).unwrap();
            let (_, exp) = ref_binary(&sa, &a, &sb, &b, f);
            let exp: Vec<f64> = exp.into_iter().map(f64::from).collect();
            assert_close(&f32s(&got), &exp, 0.0, 0.0, op);
        }
    }

    #[test]
    fn f32_comparisons_match_reference((sa, a, sb, b) in pair_with_values()) {
        let cases: [(&str, fn(f32, f32) -> bool); 5] = [
            ("Equal", |x, y| x == y),
            ("Less", |x, y| x < y),
            ("Greater", |x, y| x > y),
            ("LessOrEqual", |x, y| x <= y),
            ("GreaterOrEqual", |x, y| x >= y),
        ];
        // Compare a with itself rounded to 1 decimal so equality actually happens.
        let b2: Vec<f32> = b.iter().map(|v| (v * 2.0).round() / 2.0).collect();
        let a2: Vec<f32> = a.iter().map(|v| (v * 2.0).round() / 2.0).collect();
        for (op, f) in cases {
            let got = run(op, 16, vec![], &[t(&sa, &a2), t(&sb, &b2)]).unwrap();
            let (shape, exp) = ref_binary(&sa, &a2, &sb, &b2, f);
            prop_assert_eq!(got.shape(), shape.as_slice());
            prop_assert_eq!(got.as_slice::<bool>().unwrap(), exp.as_slice(), "{}", op);
        }
    }

    #[test]
    fn int_arith_matches_reference((sa, a, sb, b) in int_pair()) {
        let (ta, tb) = (t(&sa, &a), t(&sb, &b));
        // Truncating division and both remainders, from real-number definitions.
        let trunc_div = |x: i32, y: i32| (x as f64 / y as f64).trunc() as i32;
        let floor_mod = |x: i32, y: i32| x - (x as f64 / y as f64).floor() as i32 * y;
        let trunc_mod = |x: i32, y: i32| x - trunc_div(x, y) * y;
        let cases: [(&str, &dyn Fn(i32, i32) -> i32, Vec<(&str, Attr)>); 8] = [
            ("Add", &|x, y| x + y, vec![]),
            ("Sub", &|x, y| x - y, vec![]),
            ("Mul", &|x, y| x * y, vec![]),
            ("Div", &trunc_div, vec![]),
            ("Mod", &floor_mod, vec![]),
            ("Mod", &trunc_mod, vec![("fmod", Attr::Int(1))]),
            ("Max", &|x, y| x.max(y), vec![]),
            ("Min", &|x, y| x.min(y), vec![]),
        ];
        for (op, f, attrs) in cases {
            let got = run(op, 13, attrs, &[ta.clone(), tb.clone()]).unwrap();
            let (shape, exp) = ref_binary(&sa, &a, &sb, &b, f);
            prop_assert_eq!(got.shape(), shape.as_slice());
            prop_assert_eq!(got.as_slice::<i32>().unwrap(), exp.as_slice(), "{}", op);
        }
        let cmp = run("Less", 13, vec![], &[ta.clone(), tb.clone()]).unwrap();
        let exp = ref_binary(&sa, &a, &sb, &b, |x, y| x < y).1;
        prop_assert_eq!(cmp.as_slice::<bool>().unwrap(), exp.as_slice());
        let bits: [(&str, fn(i32, i32) -> i32); 3] = [("BitwiseAnd", |x, y| x & y), ("BitwiseOr", |x, y| x | y), ("BitwiseXor", |x, y| x ^ y)];
        for (op, f) in bits {
            let got = run(op, 18, vec![], &[ta.clone(), tb.clone()]).unwrap();
            let exp = ref_binary(&sa, &a, &sb, &b, f).1;
            prop_assert_eq!(got.as_slice::<i32>().unwrap(), exp.as_slice(), "{}", op);
        }
        // Int base with a float exponent: through reals, truncated.
        let e: Vec<f32> = b.iter().map(|v| (v.abs() % 4) as f32).collect();
        let got = run("Pow", 15, vec![], &[ta.clone(), t(&sb, &e)]).unwrap();
        let (_, exp) = ref_binary(&sa, &a, &sb, &e, |x, y| (x as f64).powf(y as f64) as i32);
        prop_assert_eq!(got.as_slice::<i32>().unwrap(), exp.as_slice());
    }

    #[test]
    fn logic_and_where_match_reference(s in shapes(3), seed in any::<u64>()) {
        let mut g = Lcg(seed);
        let mk = |g: &mut Lcg, s: &[usize]| -> Vec<bool> { (0..numel(s)).map(|_| g.next().is_multiple_of(2)).collect() };
        let (c, x) = (mk(&mut g, &s[0]), mk(&mut g, &s[1]));
        let cases: [(&str, fn(bool, bool) -> bool); 3] = [("And", |a, b| a & b), ("Or", |a, b| a | b), ("Xor", |a, b| a ^ b)];
        for (op, f) in cases {
            let got = run(op, 7, vec![], &[t(&s[0], &c), t(&s[1], &x)]).unwrap();
            let exp = ref_binary(&s[0], &c, &s[1], &x, f).1;
            prop_assert_eq!(got.as_slice::<bool>().unwrap(), exp.as_slice());
        }
        let xs: Vec<i64> = (0..numel(&s[1])).map(|i| i as i64).collect();
        let ys: Vec<i64> = (0..numel(&s[2])).map(|i| -(i as i64) - 1).collect();
        let got = run("Where", 16, vec![], &[t(&s[0], &c), t(&s[1], &xs), t(&s[2], &ys)]).unwrap();
        let shape = ref_shape(&[&s[0], &s[1], &s[2]]).unwrap();
        let exp: Vec<i64> = (0..numel(&shape))
            .map(|i| {
                let idx = unravel(i, &shape);
                if c[ref_index(&idx, &s[0])] { xs[ref_index(&idx, &s[1])] } else { ys[ref_index(&idx, &s[2])] }
            })
            .collect();
        prop_assert_eq!(got.shape(), shape.as_slice());
        prop_assert_eq!(got.as_slice::<i64>().unwrap(), exp.as_slice());
        // The same with strings.
        let sx: Vec<String> = xs.iter().map(|v| format!("x{v}")).collect();
        let sy: Vec<String> = ys.iter().map(|v| format!("y{v}")).collect();
        let got = run("Where", 16, vec![], &[
            t(&s[0], &c),
            Tensor::from_strings(&s[1], sx).unwrap(),
            Tensor::from_strings(&s[2], sy).unwrap(),
        ]).unwrap();
        let exp: Vec<String> = exp.iter().map(|v| if *v >= 0 { format!("x{v}") } else { format!("y{v}") }).collect();
        prop_assert_eq!(got.as_strings().unwrap(), exp.as_slice());
    }

    #[test]
    fn half_types_round_once_from_f32((sa, a, sb, b) in pair_with_values()) {
        let ha: Vec<f16> = a.iter().map(|v| f16::from_f32(*v)).collect();
        let hb: Vec<f16> = b.iter().map(|v| f16::from_f32(*v)).collect();
        let got = run("Mul", 14, vec![], &[t(&sa, &ha), t(&sb, &hb)]).unwrap();
        prop_assert_eq!(got.dtype(), DType::F16);
        let (_, exp) = ref_binary(&sa, &ha, &sb, &hb, |x, y| f16::from_f32(x.to_f32() * y.to_f32()));
        let exp: Vec<f64> = exp.into_iter().map(f64::from).collect();
        assert_close(&f32s(&got), &exp, 0.0, 0.0, "f16 Mul");
        let ba: Vec<bf16> = a.iter().map(|v| bf16::from_f32(*v)).collect();
        let bb: Vec<bf16> = b.iter().map(|v| bf16::from_f32(*v)).collect();
        let got = run("Sub", 14, vec![], &[t(&sa, &ba), t(&sb, &bb)]).unwrap();
        let (_, exp) = ref_binary(&sa, &ba, &sb, &bb, |x, y| bf16::from_f32(x.to_f32() - y.to_f32()));
        let exp: Vec<f64> = exp.into_iter().map(f64::from).collect();
        assert_close(&f32s(&got), &exp, 0.0, 0.0, "bf16 Sub");
        let got = run("Less", 13, vec![], &[t(&sa, &ha), t(&sb, &hb)]).unwrap();
        let exp = ref_binary(&sa, &ha, &sb, &hb, |x, y| x.to_f32() < y.to_f32()).1;
        prop_assert_eq!(got.as_slice::<bool>().unwrap(), exp.as_slice());
    }

    #[test]
    fn variadic_ops_match_reference(s in shapes(3), seed in any::<u64>()) {
        let ins: Vec<Vec<f32>> = s.iter().enumerate().map(|(i, s)| rand_f32(numel(s), seed ^ i as u64, -3.0, 3.0)).collect();
        let tensors: Vec<Tensor> = s.iter().zip(&ins).map(|(s, v)| t(s, v)).collect();
        let shape = ref_shape(&[&s[0], &s[1], &s[2]]).unwrap();
        let at = |k: usize, i: usize| ins[k][ref_index(&unravel(i, &shape), &s[k])] as f64;
        let n = numel(&shape);
        let cases: [(&str, fn(f64, f64, f64) -> f64, f64); 4] = [
            ("Sum", |a, b, c| a + b + c, 1e-6),
            ("Mean", |a, b, c| (a + b + c) / 3.0, 1e-6),
            ("Max", |a, b, c| a.max(b).max(c), 0.0),
            ("Min", |a, b, c| a.min(b).min(c), 0.0),
        ];
        for (op, f, tol) in cases {
            let got = run(op, 13, vec![], &tensors).unwrap();
            prop_assert_eq!(got.shape(), shape.as_slice());
            let exp: Vec<f64> = (0..n).map(|i| f(at(0, i), at(1, i), at(2, i))).collect();
            assert_close(&f32s(&got), &exp, tol, tol, op);
        }
    }

    #[test]
    fn unary_float_ops_match_reference(shape in prop::collection::vec(dim(), 0..=4), seed in any::<u64>()) {
        for (op, attrs, lo, hi, f) in unary_cases() {
            let x = rand_f32(numel(&shape), seed, lo, hi);
            let got = run(op, 22, attrs.clone(), &[t(&shape, &x)]).unwrap();
            prop_assert_eq!(got.shape(), shape.as_slice());
            let exp: Vec<f64> = x.iter().map(|v| f(*v as f64)).collect();
            assert_close(&f32s(&got), &exp, 2e-6, 1e-6, op);
            // f64 has to be close to the reference to much tighter bounds.
            let x64: Vec<f64> = x.iter().map(|v| *v as f64).collect();
            let got = run(op, 22, attrs, &[t(&shape, &x64)]).unwrap();
            assert_close(&f32s(&got), &exp, 1e-12, 1e-13, op);
        }
    }
}

type UnaryCase = (&'static str, Vec<(&'static str, Attr)>, f32, f32, fn(f64) -> f64);

/// Each float unary op (at opset 22, or its last opset) with its domain and a reference formula
/// straight from the spec text.
fn unary_cases() -> Vec<UnaryCase> {
    fn gelu(x: f64) -> f64 {
        0.5 * x * (1.0 + ref_erf(x / 2f64.sqrt()))
    }
    fn gelu_tanh(x: f64) -> f64 {
        0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh())
    }
    vec![
        ("Neg", vec![], -5.0, 5.0, |x| -x),
        ("Abs", vec![], -5.0, 5.0, f64::abs),
        ("Sqrt", vec![], 0.0, 9.0, f64::sqrt),
        ("Exp", vec![], -8.0, 8.0, f64::exp),
        ("Log", vec![], 0.01, 50.0, f64::ln),
        ("Erf", vec![], -4.0, 4.0, ref_erf),
        ("Tanh", vec![], -6.0, 6.0, f64::tanh),
        ("Sigmoid", vec![], -10.0, 10.0, |x| 1.0 / (1.0 + (-x).exp())),
        ("Relu", vec![], -5.0, 5.0, |x| if x > 0.0 { x } else { 0.0 }),
        ("LeakyRelu", vec![("alpha", Attr::Float(0.25))], -5.0, 5.0, |x| if x >= 0.0 { x } else { 0.25 * x }),
        // The default alpha is the f32 nearest 0.2.
        ("HardSigmoid", vec![], -5.0, 5.0, |x| (0.2f32 as f64 * x + 0.5).clamp(0.0, 1.0)),
        ("HardSwish", vec![], -5.0, 5.0, |x| x * (x / 6.0 + 0.5).clamp(0.0, 1.0)),
        ("Reciprocal", vec![], 0.1, 5.0, |x| 1.0 / x),
        ("Floor", vec![], -5.0, 5.0, f64::floor),
        ("Ceil", vec![], -5.0, 5.0, f64::ceil),
        ("Round", vec![], -5.0, 5.0, f64::round_ties_even),
        ("Sign", vec![], -5.0, 5.0, |x| {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        }),
        ("Sin", vec![], -5.0, 5.0, f64::sin),
        ("Cos", vec![], -5.0, 5.0, f64::cos),
        ("Tan", vec![], -1.2, 1.2, f64::tan),
        ("Asin", vec![], -1.0, 1.0, f64::asin),
        ("Acos", vec![], -1.0, 1.0, f64::acos),
        ("Atan", vec![], -5.0, 5.0, f64::atan),
        ("Sinh", vec![], -5.0, 5.0, f64::sinh),
        ("Cosh", vec![], -5.0, 5.0, f64::cosh),
        ("Asinh", vec![], -5.0, 5.0, f64::asinh),
        ("Acosh", vec![], 1.0, 6.0, f64::acosh),
        ("Atanh", vec![], -0.99, 0.99, f64::atanh),
        ("Elu", vec![("alpha", Attr::Float(0.5))], -5.0, 5.0, |x| if x < 0.0 { 0.5 * (x.exp() - 1.0) } else { x }),
        ("Selu", vec![], -5.0, 5.0, |x| {
            // The spec's defaults, spelled as the spec spells them (both are exact f32 values).
            #[allow(clippy::excessive_precision)]
            let (a, g) = (1.67326319217681884765625, 1.05070102214813232421875);
            if x <= 0.0 { g * (a * x.exp() - a) } else { g * x }
        }),
        ("Celu", vec![("alpha", Attr::Float(2.0))], -5.0, 5.0, |x| {
            x.max(0.0) + (2.0 * ((x / 2.0).exp() - 1.0)).min(0.0)
        }),
        ("Softplus", vec![], -20.0, 20.0, |x| (x.exp() + 1.0).ln()),
        ("Softsign", vec![], -5.0, 5.0, |x| x / (1.0 + x.abs())),
        ("ThresholdedRelu", vec![("alpha", Attr::Float(0.5))], -2.0, 2.0, |x| if x > 0.5 { x } else { 0.0 }),
        ("Shrink", vec![("bias", Attr::Float(0.5)), ("lambd", Attr::Float(1.5))], -3.0, 3.0, |x| {
            if x < -1.5 {
                x + 0.5
            } else if x > 1.5 {
                x - 0.5
            } else {
                0.0
            }
        }),
        ("Mish", vec![], -10.0, 10.0, |x| x * (1.0 + x.exp()).ln().tanh()),
        ("Gelu", vec![], -5.0, 5.0, gelu),
        ("Gelu", vec![("approximate", Attr::String("tanh".into()))], -5.0, 5.0, gelu_tanh),
    ]
}

// ---------------------------------------------------------------------------------------------
// Large tensors (rayon path), non-contiguous data, odd sizes

#[test]
fn large_and_odd_sizes_take_every_path() {
    let cases: [(&[usize], &[usize]); 6] = [
        (&[70_001], &[70_001]),        // same shape, parallel
        (&[300, 257], &[257]),         // inner-contiguous bias, parallel
        (&[1, 300, 1], &[7, 1, 257]),  // both broadcast, inner stride 0/1 mixed
        (&[70_003], &[]),              // tensor-scalar
        (&[], &[33]),                  // scalar-tensor, odd and small
        (&[3, 1, 65_537], &[1, 2, 1]), // inner run of both kinds
    ];
    for (sa, sb) in cases {
        let a = rand_f32(numel(sa), 1, -2.0, 2.0);
        let b = rand_f32(numel(sb), 2, -2.0, 2.0);
        let got = run("Add", 14, vec![], &[t(sa, &a), t(sb, &b)]).unwrap();
        let (shape, exp) = ref_binary(sa, &a, sb, &b, |x, y| x + y);
        assert_eq!(got.shape(), shape.as_slice());
        assert_eq!(got.as_slice::<f32>().unwrap(), exp.as_slice(), "{sa:?} + {sb:?}");
        let got =
            run("Where", 16, vec![], &[t(sa, &a.iter().map(|v| *v > 0.0).collect::<Vec<_>>()), t(sa, &a), t(sb, &b)])
                .unwrap();
        let (_, exp) = ref_binary(sa, &a, sb, &b, |x, y| if x > 0.0 { x } else { y });
        assert_eq!(got.as_slice::<f32>().unwrap(), exp.as_slice());
    }
    let n = PAR_THRESHOLD * 2 + 3;
    let x = rand_f32(n, 3, -6.0, 6.0);
    for (op, attrs, _, _, f) in
        unary_cases().into_iter().filter(|c| ["Relu", "Sigmoid", "Tanh", "Erf", "Gelu"].contains(&c.0))
    {
        let got = run(op, 22, attrs, &[v1(&x)]).unwrap();
        let exp: Vec<f64> = x.iter().map(|v| f(*v as f64)).collect();
        assert_close(&f32s(&got), &exp, 2e-6, 1e-6, op);
    }
    let h: Vec<f16> = x.iter().map(|v| f16::from_f32(*v)).collect();
    let got = run("Relu", 14, vec![], &[v1(&h)]).unwrap();
    let exp: Vec<f16> = h.iter().map(|v| if v.to_f32() > 0.0 { *v } else { f16::ZERO }).collect();
    assert_eq!(got.as_slice::<f16>().unwrap(), exp.as_slice());
}

#[test]
fn transposed_operand_matches_reference() {
    // D is 37×61; feed Dᵀ (61×37, materialised by the test) plus a bias over D's rows, which in
    // the transposed layout runs along the last axis.
    let (m, n) = (37, 61);
    let d = rand_f32(m * n, 5, -1.0, 1.0);
    let mut dt = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            dt[j * m + i] = d[i * n + j];
        }
    }
    let bias = rand_f32(m, 6, -1.0, 1.0);
    let col = rand_f32(n, 7, -1.0, 1.0);
    let got = run("Sub", 14, vec![], &[t(&[n, m], &dt), t(&[m], &bias)]).unwrap();
    let got2 = run("Mul", 14, vec![], &[t(&[n, m], &dt), t(&[n, 1], &col)]).unwrap();
    let (g, g2) = (got.as_slice::<f32>().unwrap(), got2.as_slice::<f32>().unwrap());
    for j in 0..n {
        for i in 0..m {
            assert_eq!(g[j * m + i], d[i * n + j] - bias[i]);
            assert_eq!(g2[j * m + i], d[i * n + j] * col[j]);
        }
    }
}

#[test]
fn empty_tensors_broadcast_to_empty() {
    let a = Tensor::zeros(DType::F32, &[0, 3]);
    let b = v1(&[1.0f32, 2.0, 3.0]);
    let out = run("Add", 14, vec![], &[a.clone(), b.clone()]).unwrap();
    assert_eq!(out.shape(), &[0, 3]);
    assert!(
        run("Add", 14, vec![], &[Tensor::zeros(DType::F32, &[1, 0]), t(&[4, 1], &[1.0f32; 4])]).unwrap().shape()
            == [4, 0]
    );
    // No division happens on an empty output, so a zero divisor is not an error.
    let z = run("Div", 14, vec![], &[Tensor::zeros(DType::I32, &[0]), v1(&[0i32])]).unwrap();
    assert_eq!(z.shape(), &[0]);
    assert_eq!(run("Sqrt", 13, vec![], &[a]).unwrap().shape(), &[0, 3]);
    assert!(run("Add", 14, vec![], &[Tensor::zeros(DType::F32, &[0]), v1(&[1.0f32, 2.0])]).is_err());
}

// ---------------------------------------------------------------------------------------------
// Spec cases (expected values from the spec text and its examples)

#[test]
fn round_is_half_to_even() {
    let x = [0.1f32, 0.5, 0.9, 1.2, 1.5, 1.8, 2.3, 2.5, 2.7, -1.1, -1.5, -1.9, -2.2, -2.5, -2.8];
    let exp = [0.0f32, 0.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 3.0, -1.0, -2.0, -2.0, -2.0, -2.0, -3.0];
    assert_eq!(run("Round", 11, vec![], &[v1(&x)]).unwrap().as_slice::<f32>().unwrap(), &exp);
}

#[test]
fn integer_div_and_mod_sign_rules() {
    let div = run("Div", 14, vec![], &[v1(&[7i64, -7, 7, -7]), v1(&[2i64, 2, -2, -2])]).unwrap();
    assert_eq!(div.as_slice::<i64>().unwrap(), &[3, -3, -3, 3]);
    let (x, y) = (v1(&[-4i32, 7, 5, 4, -7, 8]), v1(&[2i32, -3, 8, -2, 3, 5]));
    let m = run("Mod", 13, vec![], &[x.clone(), y.clone()]).unwrap();
    assert_eq!(m.as_slice::<i32>().unwrap(), &[0, -2, 5, 0, 2, 3]);
    let f = run("Mod", 13, vec![("fmod", Attr::Int(1))], &[x, y]).unwrap();
    assert_eq!(f.as_slice::<i32>().unwrap(), &[0, 1, 5, 0, -1, 3]);
    let u = run("Div", 14, vec![], &[v1(&[200u8, 7]), v1(&[7u8, 200])]).unwrap();
    assert_eq!(u.as_slice::<u8>().unwrap(), &[28, 0]);
    // i32::MIN / -1 overflows; it must not panic.
    assert!(run("Div", 14, vec![], &[v1(&[i32::MIN]), v1(&[-1i32])]).is_ok());
}

#[test]
fn float_mod_follows_spec() {
    let x = v1(&[-4.3f32, 7.2, 5.0, 4.3, -7.2, 8.0]);
    let y = v1(&[2.1f32, -3.4, 8.0, -2.1, 3.4, 5.0]);
    let f = run("Mod", 13, vec![("fmod", Attr::Int(1))], &[x.clone(), y.clone()]).unwrap();
    assert_close(&f32s(&f), &[-0.1, 0.4, 5.0, 0.1, -0.4, 3.0], 1e-5, 1e-5, "fmod");
    let m = run("Mod", 28, vec![], &[x, y]).unwrap();
    assert_close(&f32s(&m), &[2.0, -3.0, 5.0, -2.0, 3.0, 3.0], 1e-5, 1e-5, "floor mod");
    // Mod-28 special cases.
    let inf = f32::INFINITY;
    let m = run("Mod", 28, vec![], &[v1(&[inf, 1.0, 3.0, -3.0, 0.0]), v1(&[2.0f32, 0.0, inf, inf, -2.0])]).unwrap();
    let m = m.as_slice::<f32>().unwrap();
    assert!(m[0].is_nan() && m[1].is_nan());
    assert_eq!(&m[2..4], &[3.0, inf]);
    assert!(m[4] == 0.0 && m[4].is_sign_negative());
}

#[test]
fn clip_bounds() {
    let x = v1(&[-2.0f32, 0.0, 2.0, f32::NAN]);
    let only_max = run_node("Clip", 13, vec![], &[Some(x.clone()), None, Some(Tensor::scalar(1.0f32))], true).unwrap();
    let got = only_max[0].as_slice::<f32>().unwrap();
    assert_eq!(&got[..3], &[-2.0, 0.0, 1.0]);
    assert!(got[3].is_nan());
    let both = run("Clip", 13, vec![], &[x.clone(), Tensor::scalar(-1.0f32), Tensor::scalar(1.0f32)]).unwrap();
    assert_eq!(&both.as_slice::<f32>().unwrap()[..3], &[-1.0, 0.0, 1.0]);
    // min > max: everything becomes max.
    let inv = run("Clip", 13, vec![], &[x.clone(), Tensor::scalar(2.0f32), Tensor::scalar(1.0f32)]).unwrap();
    assert_eq!(&inv.as_slice::<f32>().unwrap()[..3], &[1.0, 1.0, 1.0]);
    let attrs = run("Clip", 6, vec![("min", Attr::Float(-0.5))], &[x]).unwrap();
    assert_eq!(&attrs.as_slice::<f32>().unwrap()[..3], &[-0.5, 0.0, 2.0]);
    let ints = run("Clip", 13, vec![], &[v1(&[-100i64, 5, 100]), Tensor::scalar(0i64), Tensor::scalar(10i64)]).unwrap();
    assert_eq!(ints.as_slice::<i64>().unwrap(), &[0, 5, 10]);
    let u = run_node("Clip", 12, vec![], &[Some(v1(&[3u8, 200])), Some(Tensor::scalar(10u8))], true).unwrap();
    assert_eq!(u[0].as_slice::<u8>().unwrap(), &[10, 200]);
    assert!(run("Clip", 13, vec![], &[v1(&[1.0f32]), v1(&[0.0f32, 1.0])]).is_err());
    assert!(run("Clip", 13, vec![], &[v1(&[1.0f32]), Tensor::scalar(0i32)]).is_err());
}

#[test]
fn gelu_spec_values() {
    let x = v1(&[-1.0f32, 0.0, 1.0]);
    let t = run("Gelu", 20, vec![("approximate", Attr::String("tanh".into()))], std::slice::from_ref(&x)).unwrap();
    assert_close(&f32s(&t), &[-0.158_808_01, 0.0, 0.841_192], 1e-6, 1e-7, "gelu tanh");
    let e = run("Gelu", 20, vec![], std::slice::from_ref(&x)).unwrap();
    assert_close(&f32s(&e), &[-0.158_655_25, 0.0, 0.841_344_7], 1e-6, 1e-7, "gelu erf");
    assert!(run("Gelu", 20, vec![("approximate", Attr::String("fast".into()))], &[x]).is_err());
}

#[test]
fn erf_is_accurate() {
    for i in -600..=600 {
        let x = i as f64 / 100.0;
        let r = ref_erf(x);
        assert!(close(erf_f64(x), r, 1e-13, 1e-15), "erf_f64({x}) = {} vs {r}", erf_f64(x));
        let x32 = x as f32;
        let r = ref_erf(x32 as f64);
        assert!(close(erf_f32(x32) as f64, r, 3e-7, 1e-30), "erf_f32({x}) = {} vs {r}", erf_f32(x32));
    }
    assert!(erf_f32(f32::NAN).is_nan() && erf_f64(f64::NAN).is_nan());
    assert_eq!(erf_f32(f32::INFINITY), 1.0);
    assert_eq!(erf_f64(f64::NEG_INFINITY), -1.0);
}

#[test]
fn integer_unary_ops() {
    let x = v1(&[-3i32, 0, 5, i32::MIN]);
    assert_eq!(
        run("Abs", 13, vec![], std::slice::from_ref(&x)).unwrap().as_slice::<i32>().unwrap(),
        &[3, 0, 5, i32::MIN]
    );
    assert_eq!(
        run("Neg", 13, vec![], std::slice::from_ref(&x)).unwrap().as_slice::<i32>().unwrap(),
        &[3, 0, -5, i32::MIN]
    );
    assert_eq!(run("Sign", 13, vec![], std::slice::from_ref(&x)).unwrap().as_slice::<i32>().unwrap(), &[-1, 0, 1, -1]);
    assert_eq!(run("Relu", 14, vec![], std::slice::from_ref(&x)).unwrap().as_slice::<i32>().unwrap(), &[0, 0, 5, 0]);
    assert_eq!(run("BitwiseNot", 18, vec![], &[v1(&[0u8, 0xF0])]).unwrap().as_slice::<u8>().unwrap(), &[0xFF, 0x0F]);
    let s =
        run("Shrink", 9, vec![("bias", Attr::Float(1.0)), ("lambd", Attr::Float(2.0))], &[v1(&[-5i8, -2, 0, 2, 5])])
            .unwrap();
    assert_eq!(s.as_slice::<i8>().unwrap(), &[-4, 0, 0, 0, 4]);
    assert_eq!(run("Not", 1, vec![], &[v1(&[true, false])]).unwrap().as_slice::<bool>().unwrap(), &[false, true]);
    assert_eq!(
        run("Sign", 13, vec![], &[v1(&[-0.0f32, 0.0, -2.0])]).unwrap().as_slice::<f32>().unwrap(),
        &[0.0, 0.0, -1.0]
    );
}

#[test]
fn is_nan_and_is_inf() {
    let x = v1(&[1.0f32, f32::NAN, f32::INFINITY, f32::NEG_INFINITY]);
    assert_eq!(
        run("IsNaN", 20, vec![], std::slice::from_ref(&x)).unwrap().as_slice::<bool>().unwrap(),
        &[false, true, false, false]
    );
    assert_eq!(
        run("IsInf", 20, vec![], std::slice::from_ref(&x)).unwrap().as_slice::<bool>().unwrap(),
        &[false, false, true, true]
    );
    let pos = run("IsInf", 20, vec![("detect_negative", Attr::Int(0))], std::slice::from_ref(&x)).unwrap();
    assert_eq!(pos.as_slice::<bool>().unwrap(), &[false, false, true, false]);
    let neg = run("IsInf", 20, vec![("detect_positive", Attr::Int(0))], &[x]).unwrap();
    assert_eq!(neg.as_slice::<bool>().unwrap(), &[false, false, false, true]);
    let h = v1(&[f16::NAN, f16::ONE]);
    assert_eq!(run("IsNaN", 20, vec![], &[h]).unwrap().as_slice::<bool>().unwrap(), &[true, false]);
}

#[test]
fn pow_mixed_types() {
    let p = run("Pow", 15, vec![], &[v1(&[2i64, 3, -2, 2]), v1(&[3i32, 2, 3, -1])]).unwrap();
    assert_eq!(p.as_slice::<i64>().unwrap(), &[8, 9, -8, 0]);
    let p = run("Pow", 15, vec![], &[v1(&[2.0f32, 4.0, -2.0]), v1(&[3i64, -1, 2])]).unwrap();
    assert_eq!(p.as_slice::<f32>().unwrap(), &[8.0, 0.25, 4.0]);
    let p = run("Pow", 15, vec![], &[v1(&[4.0f32]), v1(&[0.5f64])]).unwrap();
    assert_eq!(p.as_slice::<f32>().unwrap(), &[2.0]);
    let p = run("Pow", 15, vec![], &[v1(&[f16::from_f32(3.0)]), v1(&[2.0f32])]).unwrap();
    assert_eq!(p.as_slice::<f16>().unwrap(), &[f16::from_f32(9.0)]);
}

#[test]
fn bit_shift() {
    let x = v1(&[16u8, 4, 1]);
    let y = v1(&[1u8, 2, 3]);
    let r = run("BitShift", 11, vec![("direction", Attr::String("RIGHT".into()))], &[x.clone(), y.clone()]).unwrap();
    assert_eq!(r.as_slice::<u8>().unwrap(), &[8, 1, 0]);
    let l = run("BitShift", 11, vec![("direction", Attr::String("LEFT".into()))], &[v1(&[1u32, 2]), v1(&[1u32, 2])])
        .unwrap();
    assert_eq!(l.as_slice::<u32>().unwrap(), &[2, 8]);
    let big = run("BitShift", 11, vec![("direction", Attr::String("LEFT".into()))], &[x, v1(&[8u8, 200, 7])]).unwrap();
    assert_eq!(big.as_slice::<u8>().unwrap(), &[0, 0, 128]);
    // Opset 28 rules for signed types: arithmetic right shift, sign fill when out of range.
    let s = run(
        "BitShift",
        28,
        vec![("direction", Attr::String("RIGHT".into()))],
        &[v1(&[-8i32, -8, 8, -8]), v1(&[1i32, 100, 100, -1])],
    )
    .unwrap();
    assert_eq!(s.as_slice::<i32>().unwrap(), &[-4, -1, 0, -1]);
    assert!(run("BitShift", 11, vec![("direction", Attr::String("UP".into()))], &[v1(&[1u8]), v1(&[1u8])]).is_err());
}

#[test]
fn equal_on_strings_and_bools() {
    let e = run("Equal", 19, vec![], &[strings(&[3], &["a", "b", "c"]), strings(&[1], &["b"])]).unwrap();
    assert_eq!(e.as_slice::<bool>().unwrap(), &[false, true, false]);
    let b = run("Equal", 13, vec![], &[v1(&[true, false]), v1(&[true, true])]).unwrap();
    assert_eq!(b.as_slice::<bool>().unwrap(), &[true, false]);
    let n = run("Equal", 13, vec![], &[v1(&[f32::NAN]), v1(&[f32::NAN])]).unwrap();
    assert_eq!(n.as_slice::<bool>().unwrap(), &[false]);
}

#[test]
fn prelu_and_legacy_broadcast() {
    let x = t(&[1, 2, 2], &[-1.0f32, 2.0, -3.0, 4.0]);
    let p = run("PRelu", 16, vec![], &[x.clone(), t(&[2, 1], &[0.5f32, 0.25])]).unwrap();
    assert_eq!(p.as_slice::<f32>().unwrap(), &[-0.5, 2.0, -0.75, 4.0]);
    // Opset 6: a per-channel slope of shape [C].
    let p6 = run("PRelu", 6, vec![], &[t(&[1, 2, 2], &[-1.0f32, 2.0, -3.0, 4.0]), v1(&[0.5f32, 0.25])]).unwrap();
    assert_eq!(p6.as_slice::<f32>().unwrap(), &[-0.5, 2.0, -0.75, 4.0]);
    // The slope may not grow X.
    assert!(run("PRelu", 16, vec![], &[v1(&[1.0f32, -1.0]), t(&[2, 2], &[1.0f32; 4])]).is_err());
    let pi = run("PRelu", 16, vec![], &[v1(&[-4i32, 4]), v1(&[3i32])]).unwrap();
    assert_eq!(pi.as_slice::<i32>().unwrap(), &[-12, 4]);
    // Opset < 7: B aligned at `axis`.
    let a = t(&[2, 3], &[0.0f32, 0.0, 0.0, 10.0, 10.0, 10.0]);
    let legacy =
        run("Add", 6, vec![("broadcast", Attr::Int(1)), ("axis", Attr::Int(0))], &[a.clone(), v1(&[1.0f32, 2.0])])
            .unwrap();
    assert_eq!(legacy.as_slice::<f32>().unwrap(), &[1.0, 1.0, 1.0, 12.0, 12.0, 12.0]);
    let suffix = run("Add", 6, vec![("broadcast", Attr::Int(1))], &[a.clone(), v1(&[1.0f32, 2.0, 3.0])]).unwrap();
    assert_eq!(suffix.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0, 11.0, 12.0, 13.0]);
    assert!(run("Add", 6, vec![], &[a, v1(&[1.0f32, 2.0, 3.0])]).is_err());
}

#[test]
fn variadic_edge_cases() {
    let one = run("Max", 13, vec![], &[v1(&[1.0f32, 2.0])]).unwrap();
    assert_eq!(one.as_slice::<f32>().unwrap(), &[1.0, 2.0]);
    let nan = run("Max", 13, vec![], &[v1(&[1.0f32, f32::NAN]), v1(&[f32::NAN, 0.0])]).unwrap();
    assert!(nan.as_slice::<f32>().unwrap().iter().all(|v| v.is_nan()));
    let m = run("Mean", 13, vec![], &[v1(&[f16::from_f32(1.0)]), v1(&[f16::from_f32(2.0)])]).unwrap();
    assert_eq!(m.as_slice::<f16>().unwrap(), &[f16::from_f32(1.5)]);
    let mi = run("Min", 13, vec![], &[v1(&[5u16, 1]), v1(&[3u16]), v1(&[4u16, 9])]).unwrap();
    assert_eq!(mi.as_slice::<u16>().unwrap(), &[3, 1]);
}

#[test]
fn cast_between_numbers() {
    let f = v1(&[2.7f32, -2.7, 0.0, f32::NAN, 300.0]);
    assert_eq!(
        run("Cast", 19, vec![("to", Attr::Int(6))], std::slice::from_ref(&f)).unwrap().as_slice::<i32>().unwrap()[..3],
        [2, -2, 0]
    );
    assert_eq!(
        run("Cast", 19, vec![("to", Attr::Int(9))], std::slice::from_ref(&f)).unwrap().as_slice::<bool>().unwrap(),
        &[true, true, false, true, true]
    );
    // Integer narrowing keeps the low bits: the spec's 200 (int16) -> -56 (int8).
    let n = run("Cast", 19, vec![("to", Attr::Int(3))], &[v1(&[200i16, -1, 256])]).unwrap();
    assert_eq!(n.as_slice::<i8>().unwrap(), &[-56, -1, 0]);
    let u = run("Cast", 19, vec![("to", Attr::Int(4))], &[v1(&[-1i32])]).unwrap();
    assert_eq!(u.as_slice::<u16>().unwrap(), &[65535]);
    let b = run("Cast", 19, vec![("to", Attr::Int(1))], &[v1(&[true, false])]).unwrap();
    assert_eq!(b.as_slice::<f32>().unwrap(), &[1.0, 0.0]);
    let h = run("Cast", 19, vec![("to", Attr::Int(10))], &[v1(&[1.5f64, 65520.0])]).unwrap();
    assert_eq!(h.as_slice::<f16>().unwrap(), &[f16::from_f32(1.5), f16::INFINITY]);
    let bf = run("Cast", 19, vec![("to", Attr::Int(16))], &[v1(&[3i64])]).unwrap();
    assert_eq!(bf.as_slice::<bf16>().unwrap(), &[bf16::from_f32(3.0)]);
    let big = run("Cast", 19, vec![("to", Attr::Int(1))], &[v1(&[16_777_217i64])]).unwrap();
    assert_eq!(big.as_slice::<f32>().unwrap(), &[16_777_216.0]);
    // Opset 1 names the type.
    let old = run("Cast", 1, vec![("to", Attr::String("INT64".into()))], &[v1(&[1.9f32])]).unwrap();
    assert_eq!(old.as_slice::<i64>().unwrap(), &[1]);
    let like = run("CastLike", 15, vec![], &[v1(&[7i32]), Tensor::scalar(0.0f64)]).unwrap();
    assert_eq!(like.as_slice::<f64>().unwrap(), &[7.0]);
}

#[test]
fn cast_strings() {
    let s = strings(&[7], &["NaN", "INF", "-INF", "+inf", "1e-5", "100.5", " 3 "]);
    let f = run("Cast", 19, vec![("to", Attr::Int(1))], &[s]).unwrap();
    let f = f.as_slice::<f32>().unwrap();
    assert!(f[0].is_nan());
    assert_eq!(&f[1..], &[f32::INFINITY, f32::NEG_INFINITY, f32::INFINITY, 1e-5, 100.5, 3.0]);
    let i = run("Cast", 19, vec![("to", Attr::Int(7))], &[strings(&[3], &["-12", "1000", "100.5"])]).unwrap();
    assert_eq!(i.as_slice::<i64>().unwrap(), &[-12, 1000, 100]);
    let out =
        run("Cast", 19, vec![("to", Attr::Int(8))], &[v1(&[314.15926f32, 0.1, f32::NAN, f32::NEG_INFINITY, -2.0])])
            .unwrap();
    assert_eq!(out.as_strings().unwrap(), &["314.15927", "0.1", "NaN", "-INF", "-2"]);
    let back = run("Cast", 19, vec![("to", Attr::Int(1))], std::slice::from_ref(&out)).unwrap();
    assert_eq!(back.as_slice::<f32>().unwrap()[..2], [314.15926f32, 0.1]);
    let ints = run("Cast", 19, vec![("to", Attr::Int(8))], &[v1(&[-5i8, 7])]).unwrap();
    assert_eq!(ints.as_strings().unwrap(), &["-5", "7"]);
    assert!(run("Cast", 19, vec![("to", Attr::Int(1))], &[strings(&[1], &["Hello"])]).is_err());
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn cast_round_trips_through_strings(x in prop::collection::vec(any::<f32>(), 0..20), y in prop::collection::vec(any::<i64>(), 0..20)) {
        let s = run("Cast", 19, vec![("to", Attr::Int(8))], &[v1(&x)]).unwrap();
        let back = run("Cast", 19, vec![("to", Attr::Int(1))], &[s]).unwrap();
        for (a, b) in x.iter().zip(back.as_slice::<f32>().unwrap()) {
            prop_assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
        }
        let s = run("Cast", 19, vec![("to", Attr::Int(8))], &[v1(&y)]).unwrap();
        let back = run("Cast", 19, vec![("to", Attr::Int(7))], &[s]).unwrap();
        prop_assert_eq!(back.as_slice::<i64>().unwrap(), y.as_slice());
    }

    #[test]
    fn cast_matches_reference_conversions(y in prop::collection::vec(any::<i64>(), 0..20), x in prop::collection::vec(-1e6f64..1e6, 0..20)) {
        // Integer to integer: the low bits (two's complement).
        let got = run("Cast", 19, vec![("to", Attr::Int(5))], &[v1(&y)]).unwrap();
        let exp: Vec<i16> = y.iter().map(|v| (v.rem_euclid(65536) as i32 - if v.rem_euclid(65536) >= 32768 { 65536 } else { 0 }) as i16).collect();
        prop_assert_eq!(got.as_slice::<i16>().unwrap(), exp.as_slice());
        // Float to integer: truncation toward zero.
        let got = run("Cast", 19, vec![("to", Attr::Int(6))], &[v1(&x)]).unwrap();
        let exp: Vec<i32> = x.iter().map(|v| if *v >= 0.0 { v.floor() as i32 } else { -((-v).floor() as i32) }).collect();
        prop_assert_eq!(got.as_slice::<i32>().unwrap(), exp.as_slice());
    }
}

// ---------------------------------------------------------------------------------------------
// Bad inputs: errors, never panics

#[test]
fn bad_inputs_are_errors() {
    let f = v1(&[1.0f32, 2.0, 3.0]);
    // Incompatible broadcast.
    assert!(matches!(run("Add", 14, vec![], &[f.clone(), v1(&[1.0f32, 2.0])]), Err(Error::Invalid(_))));
    assert!(broadcast_shape(&[2, 3], &[3, 2]).is_err());
    assert!(Broadcast::new([&[4usize][..], &[0usize][..]]).is_err());
    // Mixed element types.
    assert!(matches!(run("Mul", 14, vec![], &[f.clone(), v1(&[1i32, 2, 3])]), Err(Error::Invalid(_))));
    assert!(run("Where", 16, vec![], &[v1(&[1i32]), f.clone(), f.clone()]).is_err());
    assert!(run("Where", 16, vec![], &[v1(&[true]), f.clone(), v1(&[1.0f64])]).is_err());
    // Missing inputs.
    assert!(run_node("Add", 14, vec![], &[Some(f.clone()), None], true).is_err());
    assert!(run_node("Add", 14, vec![], &[Some(f.clone())], true).is_err());
    assert!(run_node("Where", 16, vec![], &[Some(v1(&[true])), None, Some(f.clone())], true).is_err());
    assert!(run_node("Relu", 14, vec![], &[None], true).is_err());
    // Integer division by zero.
    assert!(matches!(run("Div", 14, vec![], &[v1(&[1i32, 2]), v1(&[1i32, 0])]), Err(Error::Invalid(_))));
    assert!(run("Mod", 13, vec![], &[v1(&[1u8]), v1(&[0u8])]).is_err());
    assert!(run("Mod", 13, vec![("fmod", Attr::Int(2))], &[f.clone(), f.clone()]).is_err());
    // Unsupported dtypes: refused by the factory when known, Invalid at run time otherwise.
    let i = v1(&[1i32, 4]);
    assert!(matches!(run("Sqrt", 13, vec![], std::slice::from_ref(&i)), Err(Error::Unsupported(_))));
    let late = run_node("Sqrt", 13, vec![], &[Some(i.clone())], false);
    assert!(matches!(late, Err(Error::Invalid(_))), "{late:?}");
    assert!(matches!(run_node("Sum", 13, vec![], &[Some(i.clone()), Some(i.clone())], false), Err(Error::Invalid(_))));
    assert!(matches!(run_node("And", 7, vec![], &[Some(i.clone()), Some(i.clone())], false), Err(Error::Invalid(_))));
    assert!(matches!(
        run_node("BitwiseAnd", 18, vec![], &[Some(f.clone()), Some(f.clone())], false),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        run_node("Less", 13, vec![], &[Some(strings(&[1], &["a"])), Some(strings(&[1], &["b"]))], false),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(run_node("IsNaN", 20, vec![], &[Some(i.clone())], false), Err(Error::Invalid(_))));
    assert!(matches!(run_node("Neg", 13, vec![], &[Some(v1(&[1u8]))], false), Err(Error::Invalid(_))));
    assert!(matches!(run("Neg", 13, vec![], &[v1(&[1u8])]), Err(Error::Unsupported(_))));
    // complex64 is outside Cast's type list.
    assert!(run("Cast", 21, vec![("to", Attr::Int(14))], std::slice::from_ref(&f)).is_err());
    assert!(run("Cast", 21, vec![("to", Attr::Int(99))], std::slice::from_ref(&f)).is_err());
    assert!(run("Cast", 21, vec![], std::slice::from_ref(&f)).is_err());
    // Ops outside their opset range.
    assert!(run("Gelu", 19, vec![], std::slice::from_ref(&f)).is_err());
    assert!(run("Mod", 9, vec![], &[f.clone(), f]).is_err());
}
