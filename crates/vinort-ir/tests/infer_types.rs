//! Static type inference is complete: in ONNX every value's element type is known before run
//! time, so after loading, every value of a model built from ops vinort knows has its dtype.
//!
//! Three kinds of evidence, none of them produced by vinort itself:
//! - every op spec has a rule (a spec without one types nothing);
//! - ONNX's own node-test models (`scripts/gen-node-tests`, folder in `VINORT_NODE_TESTS`) with
//!   every declared type of a non-input value stripped before loading: each value must be typed
//!   again, and where the file declared a type (written by ONNX from the reference outputs) the
//!   inferred one must agree with it;
//! - hand-built models whose expected types are read off the ONNX operator specs.

use std::collections::HashMap;
use std::path::Path;

use prost::Message;
use vinort_ir::proto::build::{self, attr, dim};
use vinort_ir::proto::onnx;
use vinort_ir::{DType, Dim, Graph, Model, ValueType, ops};

// ---------------------------------------------------------------------------------------------
// Building models

/// A tensor type; a negative dim is the named dim `n`.
fn tensor_type(elem: i32, dims: &[i64]) -> onnx::TypeProto {
    build::tensor_type(elem, dims.iter().map(|d| if *d < 0 { dim::named("n") } else { dim::fixed(*d) }))
}

fn vi(name: &str, elem: i32, dims: &[i64]) -> onnx::ValueInfoProto {
    onnx::ValueInfoProto { name: Some(name.into()), r#type: Some(tensor_type(elem, dims)), ..Default::default() }
}

/// A graph output without a declared type: inference must supply it.
fn out(name: &str) -> onnx::ValueInfoProto {
    onnx::ValueInfoProto { name: Some(name.into()), ..Default::default() }
}

fn node(op: &str, i: &[&str], o: &[&str], attrs: Vec<onnx::AttributeProto>) -> onnx::NodeProto {
    let name = format!("{op}_{}", o.first().copied().unwrap_or(""));
    onnx::NodeProto { attribute: attrs, ..build::node(op, &name, i, o) }
}

/// An initializer of `dtype` (ONNX code) and shape, zero-filled.
fn init(name: &str, dtype: i32, dims: &[i64]) -> onnx::TensorProto {
    let n: i64 = dims.iter().product();
    let size = match dtype {
        1 | 6 => 4,
        7 | 11 => 8,
        10 | 16 => 2,
        _ => 1,
    };
    onnx::TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(dtype),
        raw_data: Some(bytes::Bytes::from(vec![0u8; (n as usize) * size])),
        ..Default::default()
    }
}

fn load(opset: i64, g: onnx::GraphProto) -> Model {
    let m = build::model(10, &[("", opset), ("com.example", 1), ("com.microsoft", 1)], g);
    Model::from_bytes(m.encode_to_vec()).expect("the model loads")
}

fn ty(m: &Model, name: &str) -> ValueType {
    let g = &m.graph;
    g.value_id(name).map(|v| g.value(v).ty.clone()).unwrap_or(ValueType::Unknown)
}

fn t(d: DType, dims: &[Dim]) -> ValueType {
    ValueType::Tensor(d, Some(dims.to_vec()))
}

fn f(n: usize) -> Dim {
    Dim::Fixed(n)
}

// ---------------------------------------------------------------------------------------------
// What "typed" means

/// A type whose element types are all known (a tensor, or a sequence/optional/map of one).
fn typed(t: &ValueType) -> bool {
    match t {
        ValueType::Tensor(..) => true,
        ValueType::Sequence(e) | ValueType::Optional(e) | ValueType::Map(_, e) => typed(e),
        ValueType::Unknown => false,
    }
}

/// Does an inferred type agree with one ONNX declared? Element types must be equal; ranks and
/// fixed extents must agree where both sides know them.
fn agrees(inferred: &ValueType, declared: &ValueType) -> bool {
    match (inferred, declared) {
        (ValueType::Tensor(a, sa), ValueType::Tensor(b, sb)) => {
            a == b && Dim::shapes_agree(sa.as_deref(), sb.as_deref())
        }
        (ValueType::Sequence(a), ValueType::Sequence(b)) | (ValueType::Optional(a), ValueType::Optional(b)) => {
            agrees(a, b)
        }
        (ValueType::Map(ka, a), ValueType::Map(kb, b)) => ka == kb && agrees(a, b),
        (_, ValueType::Unknown) => true,
        _ => false,
    }
}

/// Values of the main graph without a known element type, as `name (op)`.
fn untyped(m: &Model) -> Vec<String> {
    let g = &m.graph;
    g.values()
        .filter(|(_, v)| !typed(&v.ty))
        .map(|(id, v)| {
            let op = g.producer(id).map(|ix| g.node(ix).qualified_op()).unwrap_or_else(|| "graph input".into());
            format!("'{}' ({op})", v.name)
        })
        .collect()
}

/// True when every node (subgraphs included) is an op of the table at its opset.
fn all_ops_known(g: &Graph) -> Result<(), String> {
    for ix in g.topo_order() {
        let n = g.node(*ix);
        if ops::spec_of(n).is_none() {
            return Err(format!("{} at opset {}", n.qualified_op(), n.opset));
        }
        for (_, sub) in n.subgraphs() {
            all_ops_known(sub)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Completeness

#[test]
fn every_op_spec_has_a_type_rule() {
    let missing: Vec<String> =
        ops::all().filter(|s| s.infer.is_none()).map(|s| format!("{}::{}", s.domain, s.name)).collect();
    assert!(missing.is_empty(), "{} ops have no type rule: {}", missing.len(), missing.join(", "));
}

/// Removes every declared type of a value a node produces (graph outputs, value_info), here
/// and in subgraphs, so only inference can type them again.
fn strip(g: &mut onnx::GraphProto) {
    g.value_info.clear();
    for o in &mut g.output {
        o.r#type = None;
    }
    for n in &mut g.node {
        for a in &mut n.attribute {
            if let Some(sub) = a.g.as_mut() {
                strip(sub);
            }
            for sub in &mut a.graphs {
                strip(sub);
            }
        }
    }
}

/// Checks one node-test model; `Ok(false)` when it uses an op outside the table.
fn check_node_model(path: &Path, failures: &mut Vec<String>) -> Result<bool, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let mut proto = onnx::ModelProto::decode(bytes.as_slice()).map_err(|e| e.to_string())?;
    let g = proto.graph.as_mut().ok_or("no graph")?;
    let declared: HashMap<String, ValueType> = g
        .output
        .iter()
        .chain(&g.value_info)
        .filter_map(|v| Some((v.name.clone()?, vinort_ir::load::value_type_from_proto(v.r#type.as_ref()?))))
        .collect();
    strip(g);
    let model = Model::from_bytes_in(proto.encode_to_vec().into(), path.parent().map(Path::to_path_buf))
        .map_err(|e| e.to_string())?;
    if all_ops_known(&model.graph).is_err() {
        return Ok(false);
    }
    let case = path.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let bad = untyped(&model);
    if !bad.is_empty() {
        failures.push(format!("{case}: untyped {}", bad.join(", ")));
    }
    for (_, v) in model.graph.values() {
        if let Some(d) = declared.get(&v.name)
            && typed(&v.ty)
            && !agrees(&v.ty, d)
        {
            failures.push(format!("{case}: '{}' inferred {} but ONNX declares {d}", v.name, v.ty));
        }
    }
    Ok(true)
}

/// A generated data folder: `$var`, else `tests/data/<default>` of the repository; missing is
/// a failure naming the script that makes it (scripts/test runs them all first).
fn generated(var: &str, default: &str, script: &str) -> std::path::PathBuf {
    let dir = std::env::var_os(var)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data").join(default));
    assert!(dir.is_dir(), "{} is missing: run {script} (or set {var}); scripts/test does", dir.display());
    dir
}

#[test]
fn every_value_of_every_node_test_model_is_typed() {
    let dir = generated("VINORT_NODE_TESTS", "node", "scripts/gen-node-tests");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", Path::new(&dir).display()))
        .filter_map(|e| e.ok().map(|e| e.path().join("model.onnx")))
        .filter(|p| p.is_file())
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "no node-test models under {}", Path::new(&dir).display());
    let (mut checked, mut outside) = (0, vec![]);
    let mut failures = vec![];
    for p in &cases {
        match check_node_model(p, &mut failures) {
            Ok(true) => checked += 1,
            Ok(false) => outside.push(p.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned())),
            Err(e) => failures.push(format!("{}: {e}", p.display())),
        }
    }
    eprintln!(
        "{checked} node-test models checked; {} use ops outside the table (model-local functions): {:?}",
        outside.len(),
        outside
    );
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Every `.onnx` file of the generated corpora of real-world model forms (searched
/// recursively: the corpus made with ONNX Runtime's tools, `onnxruntime.quantization` outputs
/// among them, and the real models shipped in PyPI wheels; or the folders of
/// `VINORT_TYPED_MODELS`, `:`-separated) that uses only ops of the table is fully typed.
#[test]
fn every_value_of_real_world_models_is_typed() {
    let mut stack: Vec<std::path::PathBuf> = match std::env::var_os("VINORT_TYPED_MODELS") {
        Some(dirs) => std::env::split_paths(&dirs).collect(),
        None => vec![
            generated("VINORT_CORPUS", "corpus", "scripts/gen-corpus"),
            generated("VINORT_WHEELS", "wheels", "scripts/gen-wheel-models"),
        ],
    };
    let (mut failures, mut checked) = (vec![], 0);
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).into_iter().flatten().flatten().map(|e| e.path()));
            continue;
        }
        if p.extension().is_none_or(|e| e != "onnx") {
            continue;
        }
        match Model::load(&p) {
            Err(e) => failures.push(format!("{}: {e}", p.display())),
            Ok(m) => match all_ops_known(&m.graph) {
                Err(op) => eprintln!("{}: skipped, {op} is not in the table", p.display()),
                Ok(()) => {
                    checked += 1;
                    let bad = untyped(&m);
                    if !bad.is_empty() {
                        failures.push(format!("{}: untyped {}", p.display(), bad.join(", ")));
                    }
                }
            },
        }
    }
    eprintln!("{checked} models checked");
    assert!(checked > 0, "no model with only ops of the table was found: the corpora are empty");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Hand-built models, expected types from the ONNX operator specs

/// A QDQ model as `onnxruntime.quantization.quantize_static` writes it: Q/DQ around a Conv
/// with a per-channel int8 weight.
#[test]
fn qdq_types_follow_the_spec() {
    let g = onnx::GraphProto {
        node: vec![
            node("QuantizeLinear", &["x", "xs", "xz"], &["xq"], vec![]),
            node("DequantizeLinear", &["xq", "xs", "xz"], &["xd"], vec![]),
            node("DequantizeLinear", &["w", "ws", "wz"], &["wd"], vec![attr::int("axis", 0)]),
            node("Conv", &["xd", "wd"], &["y"], vec![]),
            // No zero point and no output_dtype: uint8 (QuantizeLinear spec).
            node("QuantizeLinear", &["y", "xs"], &["yq"], vec![]),
        ],
        input: vec![vi("x", 1, &[1, 3, 8, 8])],
        output: vec![out("yq"), out("xd")],
        initializer: vec![
            init("xs", 1, &[]),
            init("xz", 2, &[]),
            init("w", 3, &[4, 3, 3, 3]),
            init("ws", 1, &[4]),
            init("wz", 3, &[4]),
        ],
        ..Default::default()
    };
    let m = load(13, g);
    assert_eq!(ty(&m, "xq"), t(DType::U8, &[f(1), f(3), f(8), f(8)]), "y has y_zero_point's type");
    assert_eq!(ty(&m, "xd"), t(DType::F32, &[f(1), f(3), f(8), f(8)]), "DequantizeLinear-13 gives float");
    assert_eq!(ty(&m, "wd"), t(DType::F32, &[f(4), f(3), f(3), f(3)]));
    assert_eq!(ty(&m, "y"), t(DType::F32, &[f(1), f(4), f(6), f(6)]));
    assert_eq!(ty(&m, "yq"), t(DType::U8, &[f(1), f(4), f(6), f(6)]), "no zero point: uint8");
    assert!(untyped(&m).is_empty(), "{:?}", untyped(&m));
}

#[test]
fn quantize_linear_output_dtype_and_dequantize_scale_type() {
    let g = onnx::GraphProto {
        node: vec![
            // opset 21+: output_dtype decides when there is no zero point (7 = int16... here 3 = int8).
            node("QuantizeLinear", &["x", "s"], &["q"], vec![attr::int("output_dtype", 3)]),
            // opset 19+: y has x_scale's type (T2 = float16 here).
            node("DequantizeLinear", &["q", "s16"], &["d16"], vec![]),
            // opset 23+: output_dtype overrides the scale's type (1 = float).
            node("DequantizeLinear", &["q", "s16"], &["d32"], vec![attr::int("output_dtype", 1)]),
        ],
        input: vec![vi("x", 1, &[2, 5])],
        output: vec![out("d16"), out("d32")],
        initializer: vec![init("s", 1, &[]), init("s16", 10, &[])],
        ..Default::default()
    };
    let m = load(23, g);
    assert_eq!(ty(&m, "q"), t(DType::I8, &[f(2), f(5)]));
    assert_eq!(ty(&m, "d16"), t(DType::F16, &[f(2), f(5)]));
    assert_eq!(ty(&m, "d32"), t(DType::F32, &[f(2), f(5)]));
}

#[test]
fn dynamic_quantize_linear_gives_uint8_float_uint8() {
    let g = onnx::GraphProto {
        node: vec![node("DynamicQuantizeLinear", &["x"], &["y", "scale", "zp"], vec![])],
        input: vec![vi("x", 1, &[-1, 7])],
        output: vec![out("y"), out("scale"), out("zp")],
        ..Default::default()
    };
    let m = load(11, g);
    assert_eq!(ty(&m, "y"), t(DType::U8, &[Dim::Symbol("n".into()), f(7)]));
    assert_eq!(ty(&m, "scale"), t(DType::F32, &[]), "y_scale is a float scalar");
    assert_eq!(ty(&m, "zp"), t(DType::U8, &[]), "y_zero_point is a uint8 scalar");
}

/// LSTM, GRU, RNN: Y is [seq, num_directions, batch, hidden], Y_h/Y_c [num_directions, batch,
/// hidden]; with layout = 1 (opset 14+) batch comes first: Y [batch, seq, num_directions,
/// hidden], Y_h/Y_c [batch, num_directions, hidden]. All of X's type.
#[test]
fn recurrent_outputs_follow_the_spec_layouts() {
    let (seq, batch, input, hidden) = (5, 2, 3, 4);
    let mut nodes = vec![];
    let mut inits = vec![];
    for (op, gates) in [("LSTM", 4), ("GRU", 3), ("RNN", 1)] {
        for (layout, dirs, direction) in [(0, 2, "bidirectional"), (1, 1, "forward")] {
            let tag = format!("{op}{layout}");
            let (w, r) = (format!("{tag}_w"), format!("{tag}_r"));
            inits.push(init(&w, 1, &[dirs, gates * hidden, input]));
            inits.push(init(&r, 1, &[dirs, gates * hidden, hidden]));
            let x = if layout == 0 { "x" } else { "xb" };
            let outs = [format!("{tag}_y"), format!("{tag}_yh"), format!("{tag}_yc")];
            let n_out = if op == "LSTM" { 3 } else { 2 };
            let outs: Vec<&str> = outs[..n_out].iter().map(String::as_str).collect();
            nodes.push(node(
                op,
                &[x, &w, &r],
                &outs,
                vec![
                    attr::int("hidden_size", hidden),
                    attr::int("layout", layout),
                    attr::string("direction", direction),
                ],
            ));
        }
    }
    let g = onnx::GraphProto {
        node: nodes,
        input: vec![vi("x", 10, &[seq, batch, input]), vi("xb", 10, &[batch, seq, input])],
        initializer: inits,
        output: vec![out("LSTM0_y")],
        ..Default::default()
    };
    let m = load(14, g);
    let (s, b, h) = (f(seq as usize), f(batch as usize), f(hidden as usize));
    for op in ["LSTM", "GRU", "RNN"] {
        assert_eq!(ty(&m, &format!("{op}0_y")), t(DType::F16, &[s.clone(), f(2), b.clone(), h.clone()]), "{op}");
        assert_eq!(ty(&m, &format!("{op}0_yh")), t(DType::F16, &[f(2), b.clone(), h.clone()]), "{op}");
        assert_eq!(ty(&m, &format!("{op}1_y")), t(DType::F16, &[b.clone(), s.clone(), f(1), h.clone()]), "{op}");
        assert_eq!(ty(&m, &format!("{op}1_yh")), t(DType::F16, &[b.clone(), f(1), h.clone()]), "{op}");
    }
    assert_eq!(ty(&m, "LSTM0_yc"), t(DType::F16, &[f(2), b.clone(), h.clone()]));
    assert_eq!(ty(&m, "LSTM1_yc"), t(DType::F16, &[b, f(1), h]));
}

/// Random ops: `dtype` attribute, default float for RandomX, the input's type for RandomXLike
/// and Bernoulli, int32 for Multinomial; DFT keeps the input's type.
#[test]
fn random_and_spectral_ops_are_typed() {
    let g = onnx::GraphProto {
        node: vec![
            node("RandomNormal", &[], &["rn"], vec![attr::ints("shape", &[2, 3])]),
            node("RandomUniform", &[], &["ru"], vec![attr::ints("shape", &[4]), attr::int("dtype", 11)]),
            node("RandomNormalLike", &["x"], &["rnl"], vec![]),
            node("RandomUniformLike", &["x"], &["rul"], vec![attr::int("dtype", 10)]),
            node("Bernoulli", &["x"], &["b"], vec![]),
            node("Bernoulli", &["x"], &["bb"], vec![attr::int("dtype", 9)]),
            node("Multinomial", &["x"], &["mn"], vec![attr::int("sample_size", 3)]),
            node("Multinomial", &["x"], &["mn64"], vec![attr::int("dtype", 7)]),
            node("DFT", &["c"], &["dft"], vec![attr::int("axis", 1)]),
        ],
        input: vec![vi("x", 11, &[2, 6]), vi("c", 1, &[2, 8, 1])],
        output: vec![out("dft")],
        ..Default::default()
    };
    let m = load(17, g);
    assert_eq!(ty(&m, "rn"), t(DType::F32, &[f(2), f(3)]));
    assert_eq!(ty(&m, "ru"), t(DType::F64, &[f(4)]));
    assert_eq!(ty(&m, "rnl"), t(DType::F64, &[f(2), f(6)]));
    assert_eq!(ty(&m, "rul"), t(DType::F16, &[f(2), f(6)]));
    assert_eq!(ty(&m, "b"), t(DType::F64, &[f(2), f(6)]));
    assert_eq!(ty(&m, "bb"), t(DType::Bool, &[f(2), f(6)]));
    assert_eq!(ty(&m, "mn"), t(DType::I32, &[f(2), f(3)]));
    assert_eq!(ty(&m, "mn64").tensor_dtype(), Some(DType::I64));
    // A real signal [batch, n, 1] becomes complex [batch, n, 2].
    assert_eq!(ty(&m, "dft"), t(DType::F32, &[f(2), f(8), f(2)]));
}

/// If, Loop and Scan outputs come from their bodies' outputs; sequence ops from their elements.
#[test]
fn control_flow_and_sequences_are_typed() {
    let then_branch = onnx::GraphProto {
        name: Some("then".into()),
        node: vec![node("Cast", &["x"], &["a"], vec![attr::int("to", 7)])],
        output: vec![out("a")],
        ..Default::default()
    };
    let else_branch = onnx::GraphProto {
        name: Some("else".into()),
        node: vec![node("Neg", &["xi"], &["b"], vec![])],
        output: vec![out("b")],
        ..Default::default()
    };
    // Loop body: (iter, cond, acc) -> (cond, acc + x, scan-out x)
    let loop_body = onnx::GraphProto {
        name: Some("loop".into()),
        node: vec![
            node("Identity", &["cond_in"], &["cond_out"], vec![]),
            node("Add", &["acc_in", "x"], &["acc_out"], vec![]),
            node("Identity", &["x"], &["scan_out"], vec![]),
        ],
        input: vec![vi("iter", 7, &[]), vi("cond_in", 9, &[]), vi("acc_in", 1, &[3])],
        output: vec![out("cond_out"), out("acc_out"), out("scan_out")],
        ..Default::default()
    };
    // Scan body: (state, elem) -> (state + elem, elem * 2 as int)
    let scan_body = onnx::GraphProto {
        name: Some("scan".into()),
        node: vec![
            node("Add", &["s_in", "e"], &["s_out"], vec![]),
            node("Cast", &["e"], &["e_out"], vec![attr::int("to", 6)]),
        ],
        input: vec![vi("s_in", 1, &[3]), vi("e", 1, &[3])],
        output: vec![out("s_out"), out("e_out")],
        ..Default::default()
    };
    let g = onnx::GraphProto {
        node: vec![
            node("Cast", &["x"], &["xi"], vec![attr::int("to", 7)]),
            node(
                "If",
                &["c"],
                &["if_out"],
                vec![attr::graph("then_branch", then_branch), attr::graph("else_branch", else_branch)],
            ),
            node("Loop", &["trip", "c", "x"], &["loop_acc", "loop_scan"], vec![attr::graph("body", loop_body)]),
            node(
                "Scan",
                &["x", "xs"],
                &["scan_state", "scan_ys"],
                vec![attr::graph("body", scan_body), attr::int("num_scan_inputs", 1)],
            ),
            node("SequenceConstruct", &["x", "x"], &["seq"], vec![]),
            node("SequenceAt", &["seq", "trip"], &["at"], vec![]),
            node("SequenceLength", &["seq"], &["len"], vec![]),
            node("SequenceEmpty", &[], &["empty"], vec![attr::int("dtype", 7)]),
            node("SequenceInsert", &["empty", "xi"], &["ins"], vec![]),
            node("SplitToSequence", &["xs"], &["split"], vec![]),
            node("ConcatFromSequence", &["split"], &["cat"], vec![attr::int("axis", 0)]),
            node("Optional", &["x"], &["opt"], vec![]),
            node("OptionalHasElement", &["opt"], &["has"], vec![]),
            node("OptionalGetElement", &["opt"], &["got"], vec![]),
        ],
        input: vec![vi("x", 1, &[3]), vi("c", 9, &[]), vi("trip", 7, &[]), vi("xs", 1, &[4, 3])],
        output: vec![out("if_out"), out("loop_acc"), out("scan_ys")],
        ..Default::default()
    };
    let m = load(18, g);
    assert_eq!(ty(&m, "if_out"), t(DType::I64, &[f(3)]), "both branches give int64 [3]");
    assert_eq!(ty(&m, "loop_acc"), t(DType::F32, &[f(3)]));
    assert_eq!(ty(&m, "loop_scan"), t(DType::F32, &[Dim::Unknown, f(3)]), "scan outputs gain the iteration axis");
    assert_eq!(ty(&m, "scan_state"), t(DType::F32, &[f(3)]));
    assert_eq!(ty(&m, "scan_ys"), t(DType::I32, &[f(4), f(3)]));
    let seq_of = |d, s: Option<Vec<Dim>>| ValueType::Sequence(Box::new(ValueType::Tensor(d, s)));
    assert_eq!(ty(&m, "seq"), seq_of(DType::F32, Some(vec![f(3)])));
    assert_eq!(ty(&m, "at"), t(DType::F32, &[f(3)]));
    assert_eq!(ty(&m, "len"), t(DType::I64, &[]));
    assert_eq!(ty(&m, "empty"), seq_of(DType::I64, None));
    assert_eq!(ty(&m, "ins").tensor_dtype(), None);
    assert!(matches!(ty(&m, "ins"), ValueType::Sequence(e) if e.tensor_dtype() == Some(DType::I64)));
    assert!(matches!(ty(&m, "split"), ValueType::Sequence(e) if e.tensor_dtype() == Some(DType::F32)));
    assert_eq!(ty(&m, "cat").tensor_dtype(), Some(DType::F32));
    assert_eq!(ty(&m, "opt"), ValueType::Optional(Box::new(t(DType::F32, &[f(3)]))));
    assert_eq!(ty(&m, "has"), t(DType::Bool, &[]));
    assert_eq!(ty(&m, "got"), t(DType::F32, &[f(3)]));
    assert!(untyped(&m).is_empty(), "{:?}", untyped(&m));
}

/// ONNX Runtime's contrib ops in the table: QLinearConv's output has y_zero_point's type,
/// Attention's the input's, DynamicQuantizeLSTM's outputs X's (its R is stored transposed,
/// `[num_directions, hidden_size, 4 * hidden_size]`).
#[test]
fn com_microsoft_ops_are_typed() {
    let ms = |mut n: onnx::NodeProto| {
        n.domain = Some("com.microsoft".into());
        n
    };
    let g = onnx::GraphProto {
        node: vec![
            ms(node("QLinearConv", &["xq", "s", "zu", "w", "s", "zi", "s", "zu"], &["conv"], vec![])),
            ms(node("Attention", &["h", "qkv", "bias"], &["att"], vec![attr::int("num_heads", 3)])),
            ms(node(
                "DynamicQuantizeLSTM",
                &["seq", "lw", "lr", "", "", "", "", "", "s", "zi", "s", "zi"],
                &["ly", "lh", "lc"],
                vec![],
            )),
        ],
        input: vec![vi("xq", 2, &[1, 3, 8, 8]), vi("h", 1, &[2, 5, 12]), vi("seq", 1, &[7, 2, 4])],
        output: vec![out("conv"), out("att"), out("ly")],
        initializer: vec![
            init("s", 1, &[]),
            init("zu", 2, &[]),
            init("zi", 3, &[]),
            init("w", 3, &[4, 3, 3, 3]),
            init("qkv", 1, &[12, 36]),
            init("bias", 1, &[36]),
            init("lw", 3, &[1, 4, 24]),
            init("lr", 3, &[1, 6, 24]),
        ],
        ..Default::default()
    };
    let m = load(13, g);
    assert_eq!(ty(&m, "conv"), t(DType::U8, &[f(1), f(4), f(6), f(6)]));
    assert_eq!(ty(&m, "att"), t(DType::F32, &[f(2), f(5), f(12)]));
    assert_eq!(ty(&m, "ly"), t(DType::F32, &[f(7), f(1), f(2), f(6)]));
    assert_eq!(ty(&m, "lc"), t(DType::F32, &[f(1), f(2), f(6)]));
}

/// An op nobody knows keeps its output untyped (no guessing), and that is the only gap.
#[test]
fn an_unknown_custom_op_is_the_only_untyped_value() {
    let mut custom = node("Mystery", &["x"], &["m"], vec![]);
    custom.domain = Some("com.example".into());
    let g = onnx::GraphProto {
        node: vec![custom, node("Relu", &["x"], &["r"], vec![])],
        input: vec![vi("x", 1, &[2])],
        output: vec![out("m"), out("r")],
        ..Default::default()
    };
    let m = load(17, g);
    assert_eq!(untyped(&m), vec!["'m' (com.example::Mystery)".to_string()]);
}
