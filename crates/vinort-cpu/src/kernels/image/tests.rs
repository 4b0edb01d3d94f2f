//! Tests: the ONNX node tests of this family, and Resize against naive references.

use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vinort_ir::{Attr, DType, Node, RunContext, Tensor, Value, ValueId, ValueType};

use crate::kernel::{NodeInfo, Registry};

const OPS: &[&str] =
    &["resize", "upsample", "gridsample", "affine_grid", "col2im", "center_crop_pad", "roialign", "nonmaxsuppression"];

/// Cases known to fail, with the reason.
const KNOWN_FAILURES: &[(&str, &str)] = &[];

fn compare(got: &Tensor, want: &Tensor) -> Result<(), String> {
    if got.shape() != want.shape() {
        return Err(format!("shape {:?}, want {:?}", got.shape(), want.shape()));
    }
    if got.dtype() != want.dtype() {
        return Err(format!("dtype {}, want {}", got.dtype(), want.dtype()));
    }
    if want.dtype().is_float() {
        let (g, w) = (got.to_f64_vec().map_err(|e| e.to_string())?, want.to_f64_vec().map_err(|e| e.to_string())?);
        for (i, (g, w)) in g.iter().zip(&w).enumerate() {
            let ok = if w.is_nan() { g.is_nan() } else { (g - w).abs() <= 1e-7 + 1e-3 * w.abs() };
            if !ok {
                return Err(format!("element {i}: got {g}, want {w}"));
            }
        }
    } else if got.as_bytes() != want.as_bytes() {
        return Err("integer elements differ".into());
    }
    Ok(())
}

fn run_case(dir: &Path) -> Result<(), String> {
    let m = vinort_ir::Model::load(dir.join("model.onnx")).map_err(|e| e.to_string())?;
    let g = &m.graph;
    let plan = crate::provider::compile_nodes(g, g.topo_order(), g.inputs(), g.outputs()).map_err(|e| e.to_string())?;
    let data = dir.join("test_data_set_0");
    let load = |name: String| -> Result<Tensor, String> {
        let bytes = std::fs::read(data.join(&name)).map_err(|e| format!("{name}: {e}"))?;
        Ok(vinort_ir::tensor_proto::decode_tensor(bytes.into()).map_err(|e| e.to_string())?.1.to_aligned())
    };
    let inputs: Vec<Value> =
        (0..g.inputs().len()).map(|i| load(format!("input_{i}.pb")).map(Value::Tensor)).collect::<Result<_, _>>()?;
    let refs: Vec<&Value> = inputs.iter().collect();
    let outs = plan.run(&refs, &RunContext::default()).map_err(|e| e.to_string())?;
    for (i, o) in outs.iter().enumerate() {
        let want = load(format!("output_{i}.pb"))?;
        let got = o.as_tensor().map_err(|e| e.to_string())?;
        compare(got, &want).map_err(|e| format!("output {i}: {e}"))?;
    }
    Ok(())
}

#[test]
fn onnx_node_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/node");
    if !root.exists() {
        println!("no node tests at {}: skipped", root.display());
        return;
    }
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with("_expanded") && OPS.iter().any(|op| n.starts_with(&format!("test_{op}"))))
        .collect();
    names.sort();
    let (mut passed, mut failed) = (0, Vec::new());
    for n in &names {
        match run_case(&root.join(n)) {
            Ok(()) => passed += 1,
            Err(e) => {
                println!("FAIL {n}: {e}");
                failed.push(n.clone());
            }
        }
    }
    for op in OPS {
        let of = |n: &String| n.starts_with(&format!("test_{op}"));
        let total = names.iter().filter(|n| of(n)).count();
        let bad = failed.iter().filter(|n| of(n)).count();
        println!("  {op}: {} of {total} passed", total - bad);
    }
    println!("{passed} passed, {} failed", failed.len());
    let unexpected: Vec<&String> = failed.iter().filter(|n| !KNOWN_FAILURES.iter().any(|(k, _)| k == n)).collect();
    assert!(unexpected.is_empty(), "unexpected failures: {unexpected:?}");
}

fn node(op: &str, opset: i64, attrs: Vec<(&str, Attr)>, n_in: usize) -> Node {
    Node {
        name: format!("{op}_test"),
        op_type: op.into(),
        domain: String::new(),
        opset,
        inputs: (0..n_in).map(|i| Some(ValueId(i as u32))).collect(),
        outputs: vec![Some(ValueId(100))],
        implicit_inputs: vec![],
        attrs: attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        proto: None,
    }
}

fn run(node: &Node, inputs: &[Option<Tensor>]) -> Tensor {
    let mut r = Registry::default();
    super::register(&mut r);
    let info = NodeInfo {
        node,
        inputs: inputs
            .iter()
            .map(|t| t.as_ref().map_or(ValueType::Unknown, |t| ValueType::tensor(t.dtype(), t.shape())))
            .collect(),
        consts: vec![None; inputs.len()],
        outputs: vec![ValueType::Unknown],
    };
    let k = r.find(node).map(|f| f(&info)).unwrap_or_else(|e| panic!("{e}")).unwrap();
    let vals: Vec<Option<Value>> = inputs.iter().map(|t| t.clone().map(Value::from)).collect();
    let refs: Vec<Option<&Value>> = vals.iter().map(Option::as_ref).collect();
    k.run(&refs, &RunContext::default()).unwrap().remove(0).into_tensor().unwrap()
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
