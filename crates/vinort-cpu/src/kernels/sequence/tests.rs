//! Hand-derived spec examples of the sequence and optional ops, Loop/Scan/SequenceMap on small
//! built-in bodies through the ONNX node test cases, and bad-input cases.

use vinort_ir::{Attr, DType, Error, Result, Sequence, Tensor, Value, ValueType};

use crate::test_support::{Cases, NODE_TOL, run_node_cases, run_op};

// ---------------------------------------------------------------- harness

fn run(op: &str, opset: i64, attrs: Vec<(&str, Attr)>, inputs: Vec<Option<Value>>) -> Result<Value> {
    run_op(op, opset, attrs, &inputs, 1)?.pop().ok_or_else(|| Error::invalid("no output"))
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

#[test]
fn onnx_node_cases() {
    let pick = |n: &str| {
        ["loop", "scan", "sequence", "optional", "split_to_sequence", "concat_from", "if_"]
            .iter()
            .any(|k| n.contains(k))
            && !n.contains("reversesequence")
    };
    run_node_cases(Cases::Matching(&pick), &[], NODE_TOL);
}
