//! The random ops against their distributions: ranges, means and variances within five standard
//! errors (the seeds are fixed, so the tests are deterministic; the bounds are what any correct
//! sampler meets), reproducibility with a seed, fresh values without one, and output types.

use vinort_ir::{Attr, DType, Node, RunContext, Tensor, Value, ValueType};

use crate::kernel::{Kernel, NodeInfo};
use crate::test_support::{self as ts, expect_err, run_node};

/// Compiles `node` once, so a test can run the same kernel several times (as a session does).
fn compile(node: &Node, inputs: &[&Tensor]) -> Box<dyn Kernel> {
    let registry = crate::kernels::registry();
    let factory = registry.find(node).expect("registered");
    let info = NodeInfo {
        node,
        inputs: inputs.iter().map(|t| ValueType::tensor(t.dtype(), t.shape())).collect(),
        consts: vec![None; inputs.len()],
        outputs: vec![ValueType::Unknown; node.outputs.len()],
        scope: Default::default(),
    };
    factory(&info).expect("compiles")
}

fn run_kernel(k: &dyn Kernel, inputs: &[&Tensor]) -> Vec<Tensor> {
    let values: Vec<Value> = inputs.iter().map(|t| Value::Tensor((*t).clone())).collect();
    let refs: Vec<Option<&Value>> = values.iter().map(Some).collect();
    k.run(&refs, &RunContext::default()).expect("runs").into_iter().map(|v| v.into_tensor().expect("tensor")).collect()
}

fn f(v: f32) -> Attr {
    Attr::Float(v)
}

fn i(v: i64) -> Attr {
    Attr::Int(v)
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (m, v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0))
}

/// `got` is within five standard errors `se` of `want`.
#[track_caller]
fn within(what: &str, got: f64, want: f64, se: f64) {
    assert!((got - want).abs() <= 5.0 * se, "{what}: {got}, want {want} ± {}", 5.0 * se);
}

fn uniform(shape: &[i64], attrs: Vec<(&str, Attr)>) -> Node {
    let mut a = vec![("shape", Attr::Ints(shape.to_vec()))];
    a.extend(attrs);
    ts::op("RandomUniform", 22).attrs(a).build()
}

#[test]
fn uniform_values_lie_in_range_with_the_right_moments() {
    let n = 40_000;
    let node = uniform(&[200, 200], vec![("low", f(-2.0)), ("high", f(3.0)), ("seed", f(7.0))]);
    let y = run_node(&node, &[]).unwrap().remove(0);
    assert_eq!((y.dtype(), y.shape()), (DType::F32, &[200usize, 200][..]));
    let v = y.to_f64_vec().unwrap();
    assert!(v.iter().all(|x| (-2.0..=3.0).contains(x)));
    // U(a, b): mean (a+b)/2, variance (b-a)²/12; the variance's standard error uses the
    // fourth central moment (b-a)⁴/80.
    let (m, var) = mean_var(&v);
    let var_true = 25.0 / 12.0;
    within("mean", m, 0.5, (var_true / n as f64).sqrt());
    within("variance", var, var_true, ((625.0 / 80.0 - var_true * var_true) / n as f64).sqrt());
    // Both halves of the range are used (not, say, only [low, mid)).
    assert!(v.iter().any(|x| *x > 2.9) && v.iter().any(|x| *x < -1.9));
}

#[test]
fn normal_values_have_the_right_moments() {
    let n = 40_000.0f64;
    let node = ts::op("RandomNormal", 22)
        .attrs([("shape", Attr::Ints(vec![40_000])), ("mean", f(1.5)), ("scale", f(2.0)), ("seed", f(3.0))])
        .build();
    let v = run_node(&node, &[]).unwrap().remove(0).to_f64_vec().unwrap();
    let (m, var) = mean_var(&v);
    within("mean", m, 1.5, (4.0 / n).sqrt());
    // Var of the sample variance of a normal: 2σ⁴/(n-1).
    within("variance", var, 4.0, (2.0 * 16.0 / (n - 1.0)).sqrt());
    // About 4.55% of draws lie beyond two standard deviations.
    let tail = v.iter().filter(|x| (*x - 1.5).abs() > 4.0).count() as f64 / n;
    within("two-sigma tail", tail, 0.0455, (0.0455 * 0.9545 / n).sqrt());
}

#[test]
fn a_seed_repeats_every_run_and_no_seed_does_not() {
    let seeded = uniform(&[1000], vec![("seed", f(1.0))]);
    let k = compile(&seeded, &[]);
    let a = run_kernel(k.as_ref(), &[]).remove(0).to_vec::<f32>().unwrap();
    let b = run_kernel(k.as_ref(), &[]).remove(0).to_vec::<f32>().unwrap();
    assert_eq!(a, b, "a seeded node gives the same values on every run");
    // Another kernel of the same node (a second session) agrees too.
    assert_eq!(run_kernel(compile(&seeded, &[]).as_ref(), &[]).remove(0).to_vec::<f32>().unwrap(), a);
    let other = run_node(&uniform(&[1000], vec![("seed", f(2.0))]), &[]).unwrap().remove(0);
    assert_ne!(other.to_vec::<f32>().unwrap(), a, "another seed, other values");

    let k = compile(&uniform(&[1000], vec![]), &[]);
    let c = run_kernel(k.as_ref(), &[]).remove(0).to_vec::<f32>().unwrap();
    let d = run_kernel(k.as_ref(), &[]).remove(0).to_vec::<f32>().unwrap();
    assert_ne!(c, d, "without a seed every run draws afresh");
}

/// Past the parallel threshold values come in chunks with their own generators: still
/// reproducible, and no chunk repeats another.
#[test]
fn large_outputs_are_reproducible_and_chunks_differ() {
    let n = crate::par::ELEMENTWISE * 2 + 5;
    let node = uniform(&[n as i64], vec![("seed", f(11.0))]);
    let a = run_node(&node, &[]).unwrap().remove(0).to_vec::<f32>().unwrap();
    let b = run_node(&node, &[]).unwrap().remove(0).to_vec::<f32>().unwrap();
    assert_eq!(a, b);
    let chunk = super::CHUNK;
    assert_ne!(a[..chunk], a[chunk..2 * chunk]);
    let (m, _) = mean_var(&a.iter().map(|x| *x as f64).collect::<Vec<_>>());
    within("mean", m, 0.5, (1.0 / 12.0 / n as f64).sqrt());
}

#[test]
fn output_types_follow_dtype_or_the_input() {
    for (code, dt) in [(1, DType::F32), (11, DType::F64), (10, DType::F16), (16, DType::BF16)] {
        let y = run_node(&uniform(&[3, 2], vec![("dtype", i(code))]), &[]).unwrap().remove(0);
        assert_eq!((y.dtype(), y.shape()), (dt, &[3usize, 2][..]));
        assert!(y.to_f64_vec().unwrap().iter().all(|v| (0.0..=1.0).contains(v)));
    }
    let ints = Tensor::from_vec(&[2, 5], vec![0i32; 10]).unwrap();
    let like = ts::op("RandomNormalLike", 22).inputs(1).attrs([("dtype", i(11))]).build();
    let y = run_node(&like, &[Some(ints.clone())]).unwrap().remove(0);
    assert_eq!((y.dtype(), y.shape()), (DType::F64, &[2usize, 5][..]));
    let halves = ts::tensor(DType::F16, &[4], &[0.0; 4]);
    let like = ts::op("RandomUniformLike", 22).inputs(1).build();
    assert_eq!(run_node(&like, &[Some(halves)]).unwrap()[0].dtype(), DType::F16);
    expect_err(run_node(&like, &[Some(ints)]), "needs a float dtype");
}

#[test]
fn bad_attributes_are_errors() {
    expect_err(run_node(&uniform(&[2], vec![("dtype", i(6))]), &[]), "outputs float");
    expect_err(run_node(&uniform(&[2], vec![("dtype", i(1234))]), &[]), "unknown dtype");
    expect_err(run_node(&uniform(&[2, -1], vec![]), &[]), "negative dim");
    expect_err(run_node(&uniform(&[1 << 40, 1 << 40], vec![]), &[]), "too many elements");
    expect_err(run_node(&uniform(&[1 << 31, 1 << 31], vec![]), &[]), "do not fit in memory");
    expect_err(run_node(&uniform(&[2], vec![("high", f(f32::INFINITY))]), &[]), "must be finite");
    let neg = ts::op("RandomNormal", 22).attrs([("shape", Attr::Ints(vec![2])), ("scale", f(-1.0))]).build();
    expect_err(run_node(&neg, &[]), "must not be negative");
    let no_shape = ts::op("RandomNormal", 22).build();
    expect_err(run_node(&no_shape, &[]), "shape");
}

#[test]
fn bernoulli_draws_ones_with_probability_p() {
    let n = 30_000;
    let p: Vec<f64> = (0..n).map(|k| [0.0, 1.0, 0.3][k % 3]).collect();
    let x = ts::tensor(DType::F64, &[n], &p);
    let node = ts::op("Bernoulli", 15).inputs(1).attrs([("seed", f(5.0))]).build();
    let y = run_node(&node, &[Some(x.clone())]).unwrap().remove(0);
    assert_eq!(y.dtype(), DType::F64, "the input's type by default");
    let v = y.to_f64_vec().unwrap();
    assert!(v.iter().step_by(3).all(|v| *v == 0.0), "p = 0 never gives 1");
    assert!(v.iter().skip(1).step_by(3).all(|v| *v == 1.0), "p = 1 always gives 1");
    let third: Vec<f64> = v.iter().skip(2).step_by(3).copied().collect();
    assert!(third.iter().all(|v| *v == 0.0 || *v == 1.0));
    let rate = third.iter().sum::<f64>() / third.len() as f64;
    within("rate", rate, 0.3, (0.3 * 0.7 / third.len() as f64).sqrt());

    for (code, dt) in [(9, DType::Bool), (7, DType::I64), (2, DType::U8), (16, DType::BF16)] {
        let node = ts::op("Bernoulli", 15).inputs(1).attrs([("dtype", i(code))]).build();
        let y = run_node(&node, &[Some(x.clone())]).unwrap().remove(0);
        assert_eq!((y.dtype(), y.shape()), (dt, &[n][..]));
    }
    let bool_out = ts::op("Bernoulli", 15).inputs(1).attrs([("dtype", i(9))]).build();
    let ones = run_node(&bool_out, &[Some(ts::tensor(DType::F32, &[4], &[1.0; 4]))]).unwrap().remove(0);
    assert_eq!(ones.as_slice::<bool>().unwrap(), &[true; 4]);
}

#[test]
fn bernoulli_rejects_probabilities_outside_0_1() {
    let node = ts::op("Bernoulli", 15).inputs(1).build();
    for bad in [1.5, -0.1, f64::NAN] {
        expect_err(run_node(&node, &[Some(ts::tensor(DType::F32, &[2], &[0.5, bad]))]), "must be in [0, 1]");
    }
    let strings = ts::op("Bernoulli", 15).inputs(1).attrs([("dtype", i(8))]).build();
    expect_err(run_node(&strings, &[Some(ts::tensor(DType::F32, &[1], &[0.5]))]), "cannot output");
}

#[test]
fn multinomial_samples_classes_by_their_probabilities() {
    let samples = 20_000;
    let probs = [0.2f64, 0.3, 0.5];
    // Unnormalised log-probabilities: any constant shift means the same distribution.
    let mut logits: Vec<f64> = probs.iter().map(|p| p.ln() + 7.0).collect();
    logits.extend([0.0, f64::NEG_INFINITY, 0.0]);
    let x = ts::tensor(DType::F32, &[2, 3], &logits);
    let node = ts::op("Multinomial", 7).inputs(1).attrs([("sample_size", i(samples)), ("seed", f(9.0))]).build();
    let y = run_node(&node, &[Some(x.clone())]).unwrap().remove(0);
    assert_eq!((y.dtype(), y.shape()), (DType::I32, &[2usize, samples as usize][..]));
    let v = y.to_i64_vec().unwrap();
    let (first, second) = v.split_at(samples as usize);
    for (c, p) in probs.iter().enumerate() {
        let rate = first.iter().filter(|k| **k == c as i64).count() as f64 / samples as f64;
        within(&format!("class {c}"), rate, *p, (p * (1.0 - p) / samples as f64).sqrt());
    }
    assert!(second.iter().all(|k| *k == 0 || *k == 2), "a class of probability 0 is never drawn");
    let rate = second.iter().filter(|k| **k == 0).count() as f64 / samples as f64;
    within("class 0 of two", rate, 0.5, (0.25 / samples as f64).sqrt());

    let node = ts::op("Multinomial", 7).inputs(1).attrs([("dtype", i(7)), ("sample_size", i(4))]).build();
    let y = run_node(&node, &[Some(x.clone())]).unwrap().remove(0);
    assert_eq!((y.dtype(), y.shape()), (DType::I64, &[2usize, 4][..]));
}

#[test]
fn multinomial_rejects_bad_inputs() {
    let x = ts::tensor(DType::F32, &[1, 2], &[0.0, 0.0]);
    let with = |attrs: Vec<(&str, Attr)>| ts::op("Multinomial", 7).inputs(1).attrs(attrs).build();
    expect_err(run_node(&with(vec![("dtype", i(1))]), &[Some(x.clone())]), "int32 or int64");
    expect_err(run_node(&with(vec![("sample_size", i(-1))]), &[Some(x.clone())]), "must not be negative");
    let flat = ts::tensor(DType::F32, &[2], &[0.0, 0.0]);
    expect_err(run_node(&with(vec![]), &[Some(flat)]), "[batch, classes]");
    let dead = ts::tensor(DType::F32, &[1, 2], &[f64::NEG_INFINITY, f64::NEG_INFINITY]);
    expect_err(run_node(&with(vec![]), &[Some(dead)]), "gives no distribution");
    let nan = ts::tensor(DType::F32, &[1, 2], &[0.0, f64::NAN]);
    expect_err(run_node(&with(vec![]), &[Some(nan)]), "gives no distribution");
}

fn dropout(seed: Option<i64>) -> Node {
    let attrs: Vec<(&str, Attr)> = seed.map(|s| ("seed", i(s))).into_iter().collect();
    ts::op("Dropout", 22).inputs(3).outputs(2).attrs(attrs).build()
}

#[test]
fn training_dropout_scales_kept_elements_and_masks_the_rest() {
    let n = 20_000;
    let x: Vec<f64> = (0..n).map(|k| 1.0 + (k % 7) as f64).collect();
    let xt = ts::tensor(DType::F32, &[4, n / 4], &x);
    let (ratio, train) = (Tensor::scalar(0.25f32), Tensor::scalar(true));
    let k = compile(&dropout(Some(0)), &[&xt, &ratio, &train]);
    let out = run_kernel(k.as_ref(), &[&xt, &ratio, &train]);
    let (y, mask) = (&out[0], &out[1]);
    assert_eq!((y.dtype(), y.shape()), (DType::F32, xt.shape()));
    assert_eq!((mask.dtype(), mask.shape()), (DType::Bool, xt.shape()));
    let m = mask.as_slice::<bool>().unwrap();
    for ((y, x), keep) in y.to_vec::<f32>().unwrap().iter().zip(&x).zip(m) {
        let want = if *keep { (*x as f32) * (1.0 / 0.75) } else { 0.0 };
        assert_eq!(*y, want);
    }
    let kept = m.iter().filter(|k| **k).count() as f64 / n as f64;
    within("kept", kept, 0.75, (0.75 * 0.25 / n as f64).sqrt());
    // A seed gives the same mask on every run.
    assert_eq!(run_kernel(k.as_ref(), &[&xt, &ratio, &train])[1].as_slice::<bool>().unwrap(), m);
    // Without one, runs differ.
    let k = compile(&dropout(None), &[&xt, &ratio, &train]);
    let a = run_kernel(k.as_ref(), &[&xt, &ratio, &train]).remove(1);
    let b = run_kernel(k.as_ref(), &[&xt, &ratio, &train]).remove(1);
    assert_ne!(a.as_slice::<bool>().unwrap(), b.as_slice::<bool>().unwrap());
}

#[test]
fn dropout_is_the_exact_identity_at_ratio_0_or_outside_training() {
    let xt = ts::tensor(DType::F32, &[3, 5], &(0..15).map(|k| k as f64 - 7.5).collect::<Vec<_>>());
    for (ratio, train) in [(0.0f32, true), (0.5, false), (0.9, false)] {
        let (r, t) = (Tensor::scalar(ratio), Tensor::scalar(train));
        let out = run_node(&dropout(Some(3)), &[Some(xt.clone()), Some(r), Some(t)]).unwrap();
        assert_eq!(out[0].data_ptr(), xt.data_ptr(), "ratio {ratio} training {train}: the input itself");
        assert_eq!(out[1].as_slice::<bool>().unwrap(), &[true; 15]);
    }
}

#[test]
fn training_dropout_types_and_bad_ratios() {
    let train = Tensor::scalar(true);
    for dt in [DType::F16, DType::BF16, DType::F64] {
        let xt = ts::tensor(dt, &[64], &[2.0; 64]);
        let out = run_node(&dropout(Some(1)), &[Some(xt), Some(Tensor::scalar(0.5f32)), Some(train.clone())]).unwrap();
        assert_eq!(out[0].dtype(), dt);
        let (y, m) = (out[0].to_f64_vec().unwrap(), out[1].as_slice::<bool>().unwrap());
        assert!(y.iter().zip(m).all(|(y, k)| *y == if *k { 4.0 } else { 0.0 }));
    }
    let xt = ts::tensor(DType::F32, &[4], &[1.0; 4]);
    for bad in [1.0f32, 1.5, -0.5, f32::NAN] {
        let r = run_node(&dropout(None), &[Some(xt.clone()), Some(Tensor::scalar(bad)), Some(train.clone())]);
        expect_err(r, "ratio must be in [0, 1)");
    }
}
