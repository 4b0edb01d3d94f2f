//! Hand-derived spec examples of the sequence and optional ops, Loop/Scan/SequenceMap on small
//! built-in bodies through the ONNX node test cases, and bad-input cases.

use std::path::Path;

use vinort_ir::proto::onnx::{OptionalProto, SequenceProto, TensorProto};
use vinort_ir::proto::prost::Message;
use vinort_ir::tensor_proto::{ExternalData, tensor_from_proto};
use vinort_ir::{Attr, DType, Error, Node, Result, RunContext, Sequence, Tensor, Value, ValueId, ValueType};

use crate::kernel::{NodeInfo, Registry};

// ---------------------------------------------------------------- harness

fn run_with(
    op: &str,
    opset: i64,
    attrs: Vec<(&str, Attr)>,
    inputs: Vec<Option<Value>>,
    n_out: usize,
    outputs: Vec<ValueType>,
) -> Result<Vec<Value>> {
    let mut r = Registry::default();
    super::register(&mut r);
    let node = Node {
        name: "n".into(),
        op_type: op.into(),
        domain: String::new(),
        opset,
        inputs: inputs.iter().enumerate().map(|(i, v)| v.as_ref().map(|_| ValueId(i as u32))).collect(),
        outputs: (0..n_out).map(|i| Some(ValueId(100 + i as u32))).collect(),
        implicit_inputs: vec![],
        attrs: attrs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        proto: None,
    };
    let f = r.find(&node).map_err(Error::unsupported)?;
    let info = NodeInfo {
        node: &node,
        inputs: vec![ValueType::Unknown; inputs.len()],
        consts: vec![None; inputs.len()],
        outputs,
    };
    let k = f(&info)?;
    let refs: Vec<Option<&Value>> = inputs.iter().map(Option::as_ref).collect();
    k.run(&refs, &RunContext::default())
}

fn run(op: &str, opset: i64, attrs: Vec<(&str, Attr)>, inputs: Vec<Option<Value>>) -> Result<Value> {
    run_with(op, opset, attrs, inputs, 1, vec![ValueType::Unknown])?.pop().ok_or_else(|| Error::invalid("no output"))
}

fn t(v: &[f32]) -> Value {
    Value::Tensor(Tensor::from_slice(&[v.len()], v).unwrap())
}

fn i(v: i64) -> Option<Value> {
    Some(Value::Tensor(Tensor::scalar(v)))
}

fn seq(items: &[&[f32]]) -> Value {
    Value::Sequence(Sequence {
        dtype: DType::F32,
        items: items.iter().map(|v| Tensor::from_slice(&[v.len()], v).unwrap()).collect(),
    })
}

fn items(v: &Value) -> Vec<Vec<f32>> {
    v.as_sequence().unwrap().items.iter().map(|t| t.to_vec::<f32>().unwrap()).collect()
}

// ---------------------------------------------------------------- sequence ops

#[test]
fn sequence_ops_follow_the_spec() {
    let e = run("SequenceEmpty", 11, vec![("dtype", Attr::Int(7))], vec![]).unwrap();
    assert_eq!(e.as_sequence().unwrap().dtype, DType::I64);
    assert!(e.as_sequence().unwrap().items.is_empty());
    let e = run("SequenceEmpty", 11, vec![], vec![]).unwrap();
    assert_eq!(e.as_sequence().unwrap().dtype, DType::F32);

    let s = run("SequenceConstruct", 11, vec![], vec![Some(t(&[1.0])), Some(t(&[2.0, 3.0]))]).unwrap();
    assert_eq!(items(&s), vec![vec![1.0], vec![2.0, 3.0]]);
    let bad = Value::Tensor(Tensor::scalar(1i64));
    assert!(run("SequenceConstruct", 11, vec![], vec![Some(t(&[1.0])), Some(bad.clone())]).is_err());

    let s3 = seq(&[&[1.0], &[2.0], &[3.0]]);
    let ins = |p: Option<Value>| run("SequenceInsert", 11, vec![], vec![Some(s3.clone()), Some(t(&[9.0])), p]);
    assert_eq!(items(&ins(None).unwrap()), vec![vec![1.0], vec![2.0], vec![3.0], vec![9.0]]);
    assert_eq!(items(&ins(i(0)).unwrap()), vec![vec![9.0], vec![1.0], vec![2.0], vec![3.0]]);
    assert_eq!(items(&ins(i(-1)).unwrap()), vec![vec![1.0], vec![2.0], vec![9.0], vec![3.0]]);
    assert_eq!(items(&ins(i(3)).unwrap()).len(), 4);
    assert!(ins(i(4)).is_err());
    assert!(ins(i(-4)).is_err());
    assert!(run("SequenceInsert", 11, vec![], vec![Some(s3.clone()), Some(bad)]).is_err());

    let era = |p: Option<Value>| run("SequenceErase", 11, vec![], vec![Some(s3.clone()), p]);
    assert_eq!(items(&era(None).unwrap()), vec![vec![1.0], vec![2.0]]);
    assert_eq!(items(&era(i(-3)).unwrap()), vec![vec![2.0], vec![3.0]]);
    assert!(era(i(3)).is_err());

    let at = |p: i64| run("SequenceAt", 11, vec![], vec![Some(s3.clone()), i(p)]);
    assert_eq!(at(-1).unwrap().as_tensor().unwrap().to_vec::<f32>().unwrap(), vec![3.0]);
    assert_eq!(at(1).unwrap().as_tensor().unwrap().to_vec::<f32>().unwrap(), vec![2.0]);
    assert!(at(3).is_err());
    let pos32 = Some(Value::Tensor(Tensor::scalar(0i32)));
    assert!(run("SequenceAt", 11, vec![], vec![Some(s3.clone()), pos32]).is_ok());

    let len = run("SequenceLength", 11, vec![], vec![Some(s3.clone())]).unwrap();
    assert_eq!(len.as_tensor().unwrap().to_vec::<i64>().unwrap(), vec![3]);
    assert!(run("SequenceLength", 11, vec![], vec![Some(t(&[1.0]))]).is_err());
}

#[test]
fn concat_and_split_follow_the_spec() {
    let s = seq(&[&[1.0, 2.0], &[3.0, 4.0]]);
    let c = |axis: i64, new_axis: i64| {
        run(
            "ConcatFromSequence",
            11,
            vec![("axis", Attr::Int(axis)), ("new_axis", Attr::Int(new_axis))],
            vec![Some(s.clone())],
        )
        .map(|v| v.into_tensor().unwrap())
    };
    let a = c(0, 0).unwrap();
    assert_eq!((a.shape(), a.to_vec::<f32>().unwrap()), (&[4usize][..], vec![1.0, 2.0, 3.0, 4.0]));
    let b = c(0, 1).unwrap();
    assert_eq!(b.shape(), &[2, 2]);
    let d = c(-1, 1).unwrap();
    assert_eq!((d.shape(), d.to_vec::<f32>().unwrap()), (&[2usize, 2][..], vec![1.0, 3.0, 2.0, 4.0]));
    assert!(c(1, 0).is_err());
    assert!(c(2, 1).is_err());

    let x = Value::Tensor(Tensor::from_slice(&[2, 3], &[1i32, 2, 3, 4, 5, 6]).unwrap());
    let split = |attrs: Vec<(&str, Attr)>, s: Option<Tensor>| {
        run("SplitToSequence", 11, attrs, vec![Some(x.clone()), s.map(Value::Tensor)]).map(|v| {
            v.as_sequence().unwrap().items.iter().map(|t| (t.shape().to_vec(), t.to_vec::<i32>().unwrap())).collect()
        })
    };
    let parts: Vec<(Vec<usize>, Vec<i32>)> = split(vec![("axis", Attr::Int(1))], None).unwrap();
    assert_eq!(parts, vec![(vec![2, 1], vec![1, 4]), (vec![2, 1], vec![2, 5]), (vec![2, 1], vec![3, 6])]);
    let parts = split(vec![("axis", Attr::Int(1)), ("keepdims", Attr::Int(0))], None).unwrap();
    assert_eq!(parts[2], (vec![2], vec![3, 6]));
    let parts = split(vec![("axis", Attr::Int(-1))], Some(Tensor::scalar(2i64))).unwrap();
    assert_eq!(parts, vec![(vec![2, 2], vec![1, 2, 4, 5]), (vec![2, 1], vec![3, 6])]);
    let parts = split(vec![("axis", Attr::Int(1))], Some(Tensor::from_slice(&[2], &[1i64, 2]).unwrap())).unwrap();
    assert_eq!(parts, vec![(vec![2, 1], vec![1, 4]), (vec![2, 2], vec![2, 3, 5, 6])]);
    assert!(split(vec![("axis", Attr::Int(1))], Some(Tensor::from_slice(&[2], &[1i64, 1]).unwrap())).is_err());
    assert!(split(vec![("axis", Attr::Int(2))], None).is_err());
}

#[test]
fn optional_ops_follow_the_spec() {
    let ty = ValueType::Tensor(DType::F32, None);
    let o = run("Optional", 15, vec![("type", Attr::Type(ty.clone()))], vec![]).unwrap();
    assert!(matches!(&o, Value::Optional(None, t) if *t == ty));
    assert!(run("Optional", 15, vec![], vec![]).is_err());
    let full = run("Optional", 15, vec![], vec![Some(t(&[1.0]))]).unwrap();
    assert!(matches!(&full, Value::Optional(Some(_), _)));
    let has = |v: Option<Value>| {
        run("OptionalHasElement", 18, vec![], vec![v]).unwrap().into_tensor().unwrap().to_vec::<bool>().unwrap()
    };
    assert_eq!(has(Some(o.clone())), vec![false]);
    assert_eq!(has(Some(full.clone())), vec![true]);
    assert_eq!(has(Some(t(&[1.0]))), vec![true]);
    assert_eq!(has(None), vec![false]);
    let get = |v: Value| run("OptionalGetElement", 18, vec![], vec![Some(v)]);
    assert_eq!(get(full).unwrap().as_tensor().unwrap().to_vec::<f32>().unwrap(), vec![1.0]);
    assert_eq!(items(&get(seq(&[&[2.0]])).unwrap()), vec![vec![2.0]]);
    assert!(get(o).is_err());
}

// ---------------------------------------------------------------- ONNX node cases

/// Reads one serialized value, choosing the message by the declared type.
fn read_value(path: &Path, ty: &ValueType) -> std::result::Result<Value, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let tensor = |p: &TensorProto| {
        tensor_from_proto(p, &ExternalData::default()).map(|t| t.to_aligned()).map_err(|e| e.to_string())
    };
    let sequence = |p: &SequenceProto, declared: &ValueType| -> std::result::Result<Sequence, String> {
        let items = p.tensor_values.iter().map(tensor).collect::<std::result::Result<Vec<_>, _>>()?;
        let dtype = items
            .first()
            .map(Tensor::dtype)
            .or_else(|| declared.tensor_dtype())
            .ok_or("empty sequence of unknown element type")?;
        Ok(Sequence { dtype, items })
    };
    match ty {
        ValueType::Sequence(inner) => {
            let p = SequenceProto::decode(bytes.as_slice()).map_err(|e| e.to_string())?;
            Ok(Value::Sequence(sequence(&p, inner)?))
        }
        ValueType::Optional(inner) => {
            let p = OptionalProto::decode(bytes.as_slice()).map_err(|e| e.to_string())?;
            let content = if let Some(t) = &p.tensor_value {
                Some(Value::Tensor(tensor(t)?))
            } else if let Some(s) = &p.sequence_value {
                let declared = match inner.as_ref() {
                    ValueType::Sequence(e) => e.as_ref().clone(),
                    _ => ValueType::Unknown,
                };
                Some(Value::Sequence(sequence(s, &declared)?))
            } else {
                None
            };
            Ok(Value::Optional(content.map(Box::new), (**inner).clone()))
        }
        _ => {
            let p = TensorProto::decode(bytes.as_slice()).map_err(|e| e.to_string())?;
            Ok(Value::Tensor(tensor(&p)?))
        }
    }
}

fn same_tensor(a: &Tensor, b: &Tensor) -> std::result::Result<(), String> {
    if a.dtype() != b.dtype() || a.shape() != b.shape() {
        return Err(format!("got {a:?}, expected {b:?}"));
    }
    if a.dtype() == DType::String {
        return if a.as_strings().ok() == b.as_strings().ok() { Ok(()) } else { Err("strings differ".into()) };
    }
    let (x, y) = (a.to_f64_vec().map_err(|e| e.to_string())?, b.to_f64_vec().map_err(|e| e.to_string())?);
    let exact = !a.dtype().is_float();
    for (k, (p, q)) in x.iter().zip(&y).enumerate() {
        let ok = if exact { p == q } else { (p - q).abs() <= 1e-7 + 1e-3 * q.abs() || (p.is_nan() && q.is_nan()) };
        if !ok {
            return Err(format!("element {k}: got {p}, expected {q}"));
        }
    }
    Ok(())
}

fn same_value(a: &Value, b: &Value) -> std::result::Result<(), String> {
    match (a, b) {
        (Value::Tensor(x), Value::Tensor(y)) => same_tensor(x, y),
        (Value::Sequence(x), Value::Sequence(y)) => {
            if x.items.len() != y.items.len() {
                return Err(format!("sequence of {} elements, expected {}", x.items.len(), y.items.len()));
            }
            x.items.iter().zip(&y.items).try_for_each(|(p, q)| same_tensor(p, q))
        }
        (Value::Optional(x, _), Value::Optional(y, _)) => match (x, y) {
            (None, None) => Ok(()),
            (Some(p), Some(q)) => same_value(p, q),
            _ => Err(format!("optional presence differs: got {}, expected {}", x.is_some(), y.is_some())),
        },
        _ => Err(format!("got {}, expected {}", a.kind(), b.kind())),
    }
}

fn run_case(dir: &Path) -> std::result::Result<(), String> {
    let model = vinort_ir::Model::load(dir.join("model.onnx")).map_err(|e| e.to_string())?;
    let g = &model.graph;
    let plan = crate::provider::compile_nodes(g, g.topo_order(), g.inputs(), g.outputs()).map_err(|e| e.to_string())?;
    let mut sets: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    sets.sort();
    for set in sets {
        let inputs = g
            .inputs()
            .iter()
            .enumerate()
            .map(|(k, v)| read_value(&set.join(format!("input_{k}.pb")), &g.value(*v).ty))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let expected = g
            .outputs()
            .iter()
            .enumerate()
            .map(|(k, v)| read_value(&set.join(format!("output_{k}.pb")), &g.value(*v).ty))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let refs: Vec<&Value> = inputs.iter().collect();
        let got = plan.run(&refs, &RunContext::default()).map_err(|e| e.to_string())?;
        if got.len() != expected.len() {
            return Err(format!("{} outputs, expected {}", got.len(), expected.len()));
        }
        for (k, (a, b)) in got.iter().zip(&expected).enumerate() {
            same_value(a, b).map_err(|e| format!("output {k}: {e}"))?;
        }
    }
    Ok(())
}

/// Cases expected to fail, with the reason.
const KNOWN_FAILURES: &[(&str, &str)] = &[];

#[test]
fn onnx_node_cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/node");
    if !root.exists() {
        println!("{} does not exist; node cases skipped", root.display());
        return;
    }
    let pick = |n: &str| {
        ["loop", "scan", "sequence", "optional", "split_to_sequence", "concat_from", "if_"]
            .iter()
            .any(|k| n.contains(k))
            && !n.contains("reversesequence")
    };
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| pick(n))
        .collect();
    names.sort();
    let (mut passed, mut failed) = (0, 0);
    let mut unexpected = vec![];
    for name in &names {
        match run_case(&root.join(name)) {
            Ok(()) => {
                passed += 1;
                println!("pass {name}");
            }
            Err(e) => {
                failed += 1;
                println!("FAIL {name}: {e}");
                if !KNOWN_FAILURES.iter().any(|(n, _)| n == name) {
                    unexpected.push(name.clone());
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    assert!(unexpected.is_empty(), "unexpected failures: {unexpected:?}");
}
