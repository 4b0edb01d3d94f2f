//! Runs the ONNX node tests of this family's ops (`tests/data/node/test_<op>*`, without the
//! `_expanded` function bodies) through the Cpu provider and checks them at rtol 1e-3,
//! atol 1e-7.

use std::path::{Path, PathBuf};

use vinort_ir::{Model, RunContext, Tensor, Value};

use crate::provider::compile_nodes;

/// Test name prefixes of this family's ops.
const PREFIXES: &[&str] = &[
    "test_attention",
    "test_rotary_embedding",
    "test_swish",
    "test_swiglu",
    "test_linear_attention",
    "test_causal_conv_with_state",
];

/// Cases known not to pass, with the reason.
const EXPECTED_FAIL: &[(&str, &str)] = &[];

fn read(p: &Path) -> Result<Tensor, String> {
    let bytes = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
    let (_, t) = vinort_ir::tensor_proto::decode_tensor(bytes.into()).map_err(|e| e.to_string())?;
    Ok(t.to_aligned())
}

fn close(got: &Tensor, want: &Tensor) -> Result<(), String> {
    if got.shape() != want.shape() || got.dtype() != want.dtype() {
        return Err(format!("got {:?} {} want {:?} {}", got.shape(), got.dtype(), want.shape(), want.dtype()));
    }
    let (g, w) = (got.to_f64_vec().map_err(|e| e.to_string())?, want.to_f64_vec().map_err(|e| e.to_string())?);
    let mut bad = 0;
    let mut first = String::new();
    for (i, (g, w)) in g.iter().zip(&w).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= 1e-7 + 1e-3 * w.abs();
        if !ok {
            if bad == 0 {
                first = format!("at {i}: got {g} want {w}");
            }
            bad += 1;
        }
    }
    if bad > 0 { Err(format!("{bad}/{} differ, first {first}", w.len())) } else { Ok(()) }
}

fn run_case(dir: &Path) -> Result<(), String> {
    let model = Model::load(dir.join("model.onnx")).map_err(|e| e.to_string())?;
    let g = &model.graph;
    let plan = compile_nodes(g, g.topo_order(), g.inputs(), g.outputs()).map_err(|e| e.to_string())?;
    let mut sets: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    sets.sort();
    for set in sets {
        let inputs: Vec<Value> = (0..g.inputs().len())
            .map(|i| read(&set.join(format!("input_{i}.pb"))).map(Value::from))
            .collect::<Result<_, _>>()?;
        let refs: Vec<&Value> = inputs.iter().collect();
        let outs = plan.run(&refs, &RunContext::default()).map_err(|e| e.to_string())?;
        for (i, got) in outs.iter().enumerate() {
            let want = read(&set.join(format!("output_{i}.pb")))?;
            let got = got.as_tensor().map_err(|e| e.to_string())?;
            close(got, &want).map_err(|e| format!("output {i}: {e}"))?;
        }
    }
    Ok(())
}

#[test]
fn onnx_node_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/node");
    let Ok(entries) = std::fs::read_dir(&root) else {
        println!("{} not found: skipping the ONNX node tests", root.display());
        return;
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| PREFIXES.iter().any(|p| n.starts_with(p)) && !n.contains("_expanded"))
        .collect();
    names.sort();
    let (mut passed, mut failed, mut unexpected) = (0, 0, vec![]);
    for name in &names {
        let res = run_case(&root.join(name));
        let expected = EXPECTED_FAIL.iter().find(|(n, _)| n == name);
        match (&res, expected) {
            (Ok(()), None) => passed += 1,
            (Ok(()), Some(_)) => {
                passed += 1;
                println!("PASS (listed as failing) {name}");
            }
            (Err(e), Some((_, why))) => {
                failed += 1;
                println!("FAIL (expected: {why}) {name}: {e}");
            }
            (Err(e), None) => {
                failed += 1;
                println!("FAIL {name}: {e}");
                unexpected.push(name.clone());
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    assert!(unexpected.is_empty(), "unexpected failures: {unexpected:?}");
}
