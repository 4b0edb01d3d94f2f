//! Tests of the quantization kernels: the ONNX node test cases of these ops, run end to end
//! through the Cpu provider, and property tests of QuantizeLinear / DequantizeLinear against
//! naive per-element references written from the spec.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use vinort_ir::{DType, Tensor, Value};

use super::qdq::{Dequantize, Quantize};

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

/// Cases expected to fail, with the reason.
const KNOWN_FAILURES: &[(&str, &str)] = &[];

fn node_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/node")
}

fn load_pb(p: &Path) -> Result<Tensor, String> {
    let bytes = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
    let (_, t) = vinort_ir::tensor_proto::decode_tensor(bytes.into()).map_err(|e| e.to_string())?;
    Ok(t.to_aligned())
}

fn compare(i: usize, got: &Tensor, want: &Tensor) -> Result<(), String> {
    if got.dtype() != want.dtype() || got.shape() != want.shape() {
        return Err(format!(
            "output {i}: got {}{:?}, want {}{:?}",
            got.dtype(),
            got.shape(),
            want.dtype(),
            want.shape()
        ));
    }
    if want.dtype().is_float() {
        let (g, w) = (got.to_f64_vec().map_err(|e| e.to_string())?, want.to_f64_vec().map_err(|e| e.to_string())?);
        for (k, (g, w)) in g.iter().zip(&w).enumerate() {
            let ok = if w.is_nan() { g.is_nan() } else { (g - w).abs() <= 1e-3 * w.abs() + 1e-7 || g == w };
            if !ok {
                return Err(format!("output {i}[{k}]: got {g}, want {w}"));
            }
        }
        return Ok(());
    }
    if got.as_bytes() != want.as_bytes() {
        return Err(format!("output {i}: got bytes {:?}, want {:?}", got.as_bytes(), want.as_bytes()));
    }
    Ok(())
}

fn run_case(dir: &Path) -> Result<(), String> {
    let model = vinort_ir::Model::load(dir.join("model.onnx")).map_err(|e| e.to_string())?;
    let g = &model.graph;
    let plan = crate::provider::compile_nodes(g, g.topo_order(), g.inputs(), g.outputs()).map_err(|e| e.to_string())?;
    let data = dir.join("test_data_set_0");
    let inputs: Vec<Value> = (0..g.inputs().len())
        .map(|i| load_pb(&data.join(format!("input_{i}.pb"))).map(Value::Tensor))
        .collect::<Result<_, _>>()?;
    let refs: Vec<&Value> = inputs.iter().collect();
    let outs = plan.run(&refs, &vinort_ir::RunContext::default()).map_err(|e| e.to_string())?;
    for (i, o) in outs.iter().enumerate() {
        let want = load_pb(&data.join(format!("output_{i}.pb")))?;
        compare(i, o.as_tensor().map_err(|e| e.to_string())?, &want)?;
    }
    Ok(())
}

#[test]
fn onnx_node_cases() {
    let root = node_dir();
    if !root.exists() {
        println!("{} does not exist; skipping the ONNX node cases", root.display());
        return;
    }
    let (mut passed, mut failed) = (0, Vec::new());
    for case in CASES {
        match run_case(&root.join(case)) {
            Ok(()) => passed += 1,
            Err(e) => {
                println!("FAIL {case}: {e}");
                failed.push(*case);
            }
        }
    }
    println!("{passed} passed, {} failed", failed.len());
    let unexpected: Vec<&&str> = failed.iter().filter(|c| !KNOWN_FAILURES.iter().any(|(k, _)| k == *c)).collect();
    assert!(unexpected.is_empty(), "unexpected failures: {unexpected:?}");
}

/// Index of the scale for flat element `i` of `shape`, straight from the spec's definitions.
fn naive_scale_index(i: usize, shape: &[usize], scale_shape: &[usize], axis: usize, block: usize) -> usize {
    let mut idx = vec![0; shape.len()];
    let mut rem = i;
    for d in (0..shape.len()).rev() {
        idx[d] = rem % shape[d];
        rem /= shape[d];
    }
    if block == 0 {
        return idx[axis];
    }
    idx[axis] /= block;
    idx.iter().zip(scale_shape).fold(0, |acc, (i, s)| acc * s + i)
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

fn config() -> ProptestConfig {
    ProptestConfig { cases: 64, failure_persistence: None, ..Default::default() }
}

proptest! {
    #![proptest_config(config())]

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
