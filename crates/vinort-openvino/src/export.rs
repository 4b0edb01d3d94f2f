//! A partition as a standalone ONNX model, for OpenVINO's ONNX frontend.
//!
//! Nodes are the file's own `NodeProto`s (attributes and subgraphs exactly as written);
//! initializers the nodes read (directly or from subgraphs) are included with their bytes
//! shared, not copied, until the final encoding; boundary values become graph inputs and
//! outputs typed from the IR.

use prost::Message;
use vinort_ir::proto::onnx;
use vinort_ir::tensor_proto::tensor_to_proto;
use vinort_ir::{Dim, Error, Model, NodeIndex, Result, ValueId, ValueType};

/// ONNX `TypeProto` for a value type (None when it cannot be expressed).
pub fn type_proto(t: &ValueType) -> Option<onnx::TypeProto> {
    use onnx::type_proto::Value as V;
    use vinort_ir::proto::build::dim;
    let value = match t {
        ValueType::Tensor(d, shape) => V::TensorType(onnx::type_proto::Tensor {
            elem_type: Some(d.onnx_code()),
            shape: shape.as_ref().map(|s| onnx::TensorShapeProto {
                dim: s
                    .iter()
                    .map(|d| match d {
                        Dim::Fixed(n) => dim::fixed(*n as i64),
                        Dim::Symbol(s) => dim::named(s),
                        Dim::Unknown => dim::unknown(),
                    })
                    .collect(),
            }),
        }),
        ValueType::Sequence(e) => {
            V::SequenceType(Box::new(onnx::type_proto::Sequence { elem_type: type_proto(e).map(Box::new) }))
        }
        ValueType::Optional(e) => {
            V::OptionalType(Box::new(onnx::type_proto::Optional { elem_type: type_proto(e).map(Box::new) }))
        }
        _ => return None,
    };
    Some(onnx::TypeProto { value: Some(value), denotation: None })
}

/// Serializes nodes of the main graph with the given boundary as an ONNX model.
pub fn partition_model(model: &Model, nodes: &[NodeIndex], inputs: &[ValueId], outputs: &[ValueId]) -> Result<Vec<u8>> {
    let g = &model.graph;
    let mut node_protos = Vec::with_capacity(nodes.len());
    let mut inits: Vec<ValueId> = vec![];
    for &ix in nodes {
        let n = g.node(ix);
        let proto = n.proto.as_ref().ok_or_else(|| n.error("node has no original proto to serialize"))?;
        node_protos.push((**proto).clone());
        for v in n.inputs.iter().flatten().chain(&n.implicit_inputs) {
            if g.initializer(*v).is_some() && !inits.contains(v) {
                inits.push(*v);
            }
        }
    }
    let vi = |v: ValueId, need_type: bool| -> Result<onnx::ValueInfoProto> {
        let info = g.value(v);
        let ty = type_proto(&info.ty);
        if need_type && ty.is_none() {
            // Only an op without a type rule (a custom domain) leaves a value untyped; a graph
            // input of a standalone ONNX model must have a type, so this partition cannot be
            // written. The whole model file can still be compiled as it is.
            let what = match &info.ty {
                ValueType::Unknown => {
                    "untyped (no type rule covers its producer and the model declares none)".to_owned()
                }
                other => format!("{other}, which an ONNX graph input cannot declare"),
            };
            return Err(Error::unsupported(format!(
                "partition input '{}' is {what}, so the partition cannot be serialized for OpenVINO",
                info.name
            )));
        }
        Ok(onnx::ValueInfoProto { name: Some(info.name.clone()), r#type: ty, ..Default::default() })
    };
    let graph = onnx::GraphProto {
        name: Some("vinort_partition".into()),
        node: node_protos,
        initializer: inits
            .iter()
            .filter_map(|v| g.initializer(*v).map(|t| tensor_to_proto(&g.value(*v).name, t)))
            .collect(),
        input: inputs.iter().map(|v| vi(*v, true)).collect::<Result<_>>()?,
        output: outputs.iter().map(|v| vi(*v, false)).collect::<Result<_>>()?,
        ..Default::default()
    };
    let m = onnx::ModelProto {
        ir_version: Some(model.ir_version),
        opset_import: model
            .opsets
            .iter()
            .map(|(d, v)| onnx::OperatorSetIdProto { domain: Some(d.clone()), version: Some(*v) })
            .collect(),
        producer_name: Some("vinort".into()),
        graph: Some(graph),
        ..Default::default()
    };
    Ok(m.encode_to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantics::tests::{one_node, vi};

    /// A partition whose input has no type cannot be written; the error names the value.
    #[test]
    fn an_untyped_partition_input_is_named() {
        // elem_type 0 is ONNX's UNDEFINED: the input's type is unknown.
        let m = one_node("Relu", 14, &[vi("x", 0, &[2])], vec![], &["x"], vec![]);
        let g = &m.graph;
        let (x, y) = (g.value_id("x").unwrap(), g.value_id("y").unwrap());
        let e = partition_model(&m, g.topo_order(), &[x], &[y]).unwrap_err().to_string();
        assert!(e.contains("partition input 'x' is untyped"), "{e}");
        let typed = one_node("Relu", 14, &[vi("x", 1, &[2])], vec![], &["x"], vec![]);
        assert!(partition_model(&typed, typed.graph.topo_order(), &[x], &[y]).is_ok());
    }
}
