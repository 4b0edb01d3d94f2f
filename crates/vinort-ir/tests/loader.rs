//! Loader behaviour on hand-built models: old IR conventions, sparse and typed initializers,
//! Constant nodes, nested graphs with outer-scope references, shape inference.

use prost::Message;
use vinort_ir::proto::build::{self, attr, dim, node, tensor_info};
use vinort_ir::proto::onnx;
use vinort_ir::{DType, Dim, Model, ValueSource, ValueType};

/// A tensor value; a negative dim is the named dim `batch`.
fn vi(name: &str, elem: i32, dims: &[i64]) -> onnx::ValueInfoProto {
    tensor_info(name, elem, dims.iter().map(|d| if *d < 0 { dim::named("batch") } else { dim::fixed(*d) }))
}

/// The header of a tensor of ONNX type `data_type`; callers put the values in a typed field
/// (`float_data`, `int64_data`) rather than `raw_data`.
fn typed(name: &str, data_type: i32, dims: &[i64]) -> onnx::TensorProto {
    onnx::TensorProto { name: Some(name.into()), dims: dims.to_vec(), data_type: Some(data_type), ..Default::default() }
}

fn model(ir: i64, g: onnx::GraphProto) -> Vec<u8> {
    build::model(ir, &[("", 13)], g).encode_to_vec()
}

#[test]
fn old_ir_inputs_with_initializers_are_constants_and_typed_fields_load() {
    let g = onnx::GraphProto {
        node: vec![node("Add", "add", &["x", "w"], &["y"])],
        input: vec![vi("x", 1, &[2]), vi("w", 1, &[2])],
        output: vec![vi("y", 1, &[2])],
        initializer: vec![onnx::TensorProto { float_data: vec![1.5, -2.5], ..typed("w", 1, &[2]) }],
        ..Default::default()
    };
    let m = Model::from_bytes(model(3, g)).unwrap();
    assert_eq!(m.ir_version, 3);
    assert_eq!(m.graph.inputs().len(), 1, "w has an initializer, so it is not a run-time input");
    let w = m.graph.value_id("w").unwrap();
    assert_eq!(m.graph.initializer(w).unwrap().to_vec::<f32>().unwrap(), vec![1.5, -2.5]);
}

#[test]
fn sparse_initializers_are_densified() {
    let values = onnx::TensorProto { float_data: vec![7.0, 9.0], ..typed("s", 1, &[2]) };
    let indices = onnx::TensorProto { dims: vec![2], data_type: Some(7), int64_data: vec![1, 5], ..Default::default() };
    let g = onnx::GraphProto {
        node: vec![node("Identity", "id", &["s"], &["y"])],
        output: vec![vi("y", 1, &[2, 3])],
        sparse_initializer: vec![onnx::SparseTensorProto {
            values: Some(values),
            indices: Some(indices),
            dims: vec![2, 3],
        }],
        ..Default::default()
    };
    let m = Model::from_bytes(model(8, g)).unwrap();
    let s = m.graph.initializer(m.graph.value_id("s").unwrap()).unwrap();
    assert_eq!(s.shape(), &[2, 3]);
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![0.0, 7.0, 0.0, 0.0, 0.0, 9.0]);
}

#[test]
fn subgraph_outer_references_become_implicit_inputs() {
    let body = onnx::GraphProto {
        name: Some("then".into()),
        node: vec![node("Add", "inner", &["x", "k"], &["t"])],
        output: vec![vi("t", 1, &[2])],
        ..Default::default()
    };
    let mut if_node = node("If", "if", &["c"], &["y"]);
    for name in ["then_branch", "else_branch"] {
        if_node.attribute.push(attr::graph(name, body.clone()));
    }
    let g = onnx::GraphProto {
        node: vec![node("Relu", "k_node", &["x"], &["k"]), if_node],
        input: vec![vi("c", 9, &[]), vi("x", 1, &[2])],
        output: vec![vi("y", 1, &[2])],
        ..Default::default()
    };
    let m = Model::from_bytes(model(8, g)).unwrap();
    let g = &m.graph;
    let if_ix = g.node_indices().find(|n| g.node(*n).op_type == "If").unwrap();
    let imp: Vec<&str> = g.node(if_ix).implicit_inputs.iter().map(|v| g.value(*v).name.as_str()).collect();
    assert_eq!(imp, vec!["k", "x"]);
    // k is produced by a node, so If must come after it.
    assert_eq!(g.node(g.topo_order()[1]).name, "if");
    let (_, then_g) = g.node(if_ix).subgraphs().next().unwrap();
    let outer: Vec<&str> = then_g.outer_refs().iter().map(|v| then_g.value(*v).name.as_str()).collect();
    assert_eq!(outer, vec!["x", "k"]);
    assert!(matches!(then_g.value(then_g.outer_refs()[0]).source, ValueSource::OuterScope));
}

#[test]
fn shape_inference_folds_shape_into_reshape_and_overrides_wrong_declarations() {
    let shape_const = onnx::TensorProto { int64_data: vec![-1], ..typed("tail", 7, &[1]) };
    let mut concat = node("Concat", "cat", &["head", "tail"], &["target"]);
    concat.attribute.push(attr::int("axis", 0));
    let mut gather = node("Gather", "g", &["shp", "zero"], &["head0"]);
    gather.attribute.push(attr::int("axis", 0));
    let g = onnx::GraphProto {
        node: vec![
            node("Shape", "shape", &["x"], &["shp"]),
            gather,
            node("Unsqueeze", "unsq", &["head0", "axes0"], &["head"]),
            concat,
            node("Reshape", "reshape", &["x", "target"], &["y"]),
            node("Reshape", "reshape2", &["x", "t2"], &["y2"]),
        ],
        input: vec![vi("x", 1, &[4, 3, 5])],
        // Declared wrongly on purpose: inference knows better.
        output: vec![vi("y", 1, &[99, 99]), vi("y2", 1, &[99, 99])],
        initializer: vec![
            shape_const,
            onnx::TensorProto { int64_data: vec![-1, 5], ..typed("t2", 7, &[2]) },
            onnx::TensorProto { int64_data: vec![0], ..typed("zero", 7, &[]) },
            onnx::TensorProto { int64_data: vec![0], ..typed("axes0", 7, &[1]) },
        ],
        ..Default::default()
    };
    let m = Model::from_bytes(model(8, g)).unwrap();
    let shp = &m.graph.value(m.graph.value_id("shp").unwrap()).ty;
    assert_eq!(*shp, ValueType::tensor(DType::I64, &[3]));
    let gathered = &m.graph.value(m.graph.value_id("head0").unwrap()).ty;
    assert_eq!(*gathered, ValueType::tensor(DType::I64, &[]));
    // Concat of a non-folded value leaves the Reshape target unknown; the rank is still known
    // from the declaration and the dtype from inference.
    let y = &m.graph.value(m.graph.value_id("y").unwrap()).ty;
    assert_eq!(y.tensor_dtype(), Some(DType::F32));
    // A constant target decides: the declared [99, 99] is replaced by the real [12, 5].
    let y2 = &m.graph.value(m.graph.value_id("y2").unwrap()).ty;
    assert_eq!(*y2, ValueType::tensor(DType::F32, &[12, 5]));
}

#[test]
fn symbolic_dims_survive_and_elementwise_inference_broadcasts() {
    let g = onnx::GraphProto {
        node: vec![node("Add", "add", &["x", "b"], &["y"]), node("Relu", "relu", &["y"], &["z"])],
        input: vec![vi("x", 1, &[-1, 1, 4]), vi("b", 1, &[3, 1])],
        output: vec![vi("z", 1, &[])],
        ..Default::default()
    };
    let m = Model::from_bytes(model(8, g)).unwrap();
    let z = &m.graph.value(m.graph.value_id("z").unwrap()).ty;
    assert_eq!(
        *z,
        ValueType::Tensor(DType::F32, Some(vec![Dim::Symbol("batch".into()), Dim::Fixed(3), Dim::Fixed(4)]))
    );
}
