//! A partition as a standalone ONNX model, for OpenVINO's ONNX frontend.
//!
//! Nodes are the file's own `NodeProto`s (attributes and subgraphs exactly as written);
//! boundary values become graph inputs and outputs typed from the IR; initializers the nodes
//! read (directly or from subgraphs) are included in one of two ways ([`Weights`]):
//!
//! - **by address**, for a partition OpenVINO reads from memory in this process: a weight of
//!   at least [`BY_ADDRESS_MIN_BYTES`] is written as ONNX external data whose location is
//!   OpenVINO's in-memory marker `*/_ORT_MEM_ADDR_/*` (the convention ONNX Runtime's OpenVINO
//!   EP uses, which OpenVINO's ONNX frontend honours: the offset is the address, the length the
//!   size). OpenVINO takes the bytes where vinort holds them (the model file's mapping, an
//!   external data file's mapping), so the serialized partition is a few kilobytes whatever
//!   the weights weigh, encoding copies no weight, and a partition of a model over protobuf's
//!   2 GiB limit can be written at all. The caller keeps the returned tensors alive as long
//!   as anything OpenVINO made from the partition (OpenVINO may share rather than copy them).
//!   A file path would not do: OpenVINO refuses external data outside the folder of the model
//!   it reads, and a partition read from memory has none.
//! - **inline**, for a partition written to disk (`cache_dir` partition files, read by a later
//!   process): every weight's bytes go into the file.
//!
//! vinort's loader refuses a model whose own external data names the marker (it is no file in
//! the model's folder), so only vinort's serializer ever writes it.
//!
//! With `fold_int8_weights` ([`partition_model_with`]), each `DequantizeLinear` of a constant
//! int8 weight is replaced by its f32 result, an initializer: OpenVINO then has no int8 weight
//! to run an int8 convolution or matrix product on. On x86 CPUs without VNNI its CPU plugin
//! multiplies uint8 activations by int8 weights with `vpmaddubsw`, which adds two products into
//! a saturating int16 (255·127·2 does not fit), so a QDQ model's int8 products come out wrong
//! there: measured on an AVX2-only CPU, mobilenetv2_qdq_per_channel_u8s8 was off by 0.24 (its
//! outputs span ±10; onnxruntime's unfused reference) and by 0.053 with the weights folded.

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

/// How a serialized partition carries its weights (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// Large weights by their address in this process (read from memory, now).
    ByAddress,
    /// Every weight's bytes in the file (written to disk).
    Inline,
}

/// A serialized partition and the weights it references by address, which must outlive
/// whatever OpenVINO reads from it.
pub struct Serialized {
    /// The ONNX model.
    pub bytes: Vec<u8>,
    /// The tensors referenced by address (empty for [`Weights::Inline`]).
    pub by_address: Vec<vinort_ir::Tensor>,
}

/// Serializes nodes of the main graph with the given boundary as an ONNX model.
pub fn partition_model(
    model: &Model,
    nodes: &[NodeIndex],
    inputs: &[ValueId],
    outputs: &[ValueId],
    weights: Weights,
) -> Result<Serialized> {
    partition_model_with(model, nodes, inputs, outputs, weights, false)
}

/// [`partition_model`], and with `fold_int8_weights` every `DequantizeLinear` of a constant
/// int8 weight replaced by its f32 value (see the module doc).
pub fn partition_model_with(
    model: &Model,
    nodes: &[NodeIndex],
    inputs: &[ValueId],
    outputs: &[ValueId],
    weights: Weights,
    fold_int8_weights: bool,
) -> Result<Serialized> {
    serialize(model, nodes, (inputs, outputs), weights, fold_int8_weights, false)
}

/// One node as a model that asks OpenVINO whether it converts the op at all: an input no type
/// rule covers (the node follows an op of a custom domain) is declared a float tensor of
/// unknown rank. What OpenVINO says about types proves nothing then; that it has no
/// conversion for the op does.
pub fn stand_in_model(model: &Model, ix: NodeIndex, inputs: &[ValueId], outputs: &[ValueId]) -> Result<Serialized> {
    serialize(model, &[ix], (inputs, outputs), Weights::ByAddress, false, true)
}

fn serialize(
    model: &Model,
    nodes: &[NodeIndex],
    (inputs, outputs): (&[ValueId], &[ValueId]),
    weights: Weights,
    fold_int8_weights: bool,
    stand_in_types: bool,
) -> Result<Serialized> {
    let g = &model.graph;
    let mut node_protos = Vec::with_capacity(nodes.len());
    let mut inits: Vec<ValueId> = vec![];
    let mut folded: Vec<(ValueId, vinort_ir::Tensor)> = vec![];
    for &ix in nodes {
        let n = g.node(ix);
        if fold_int8_weights
            && let Some(t) = dequantized_weight(model, ix)?
            && let Some(Some(out)) = n.outputs.first()
            && !outputs.contains(out)
        {
            folded.push((*out, t));
            continue;
        }
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
        let ty = match (&info.ty, stand_in_types) {
            (ValueType::Unknown, true) => Some(onnx::TypeProto {
                value: Some(onnx::type_proto::Value::TensorType(onnx::type_proto::Tensor {
                    elem_type: Some(vinort_ir::DType::F32.onnx_code()),
                    shape: None,
                })),
                ..Default::default()
            }),
            (ty, _) => type_proto(ty),
        };
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
    let mut kept = vec![];
    let mut add = |name: &str, t: &vinort_ir::Tensor| {
        let (proto, by_address) = initializer(name, t, weights);
        if by_address {
            kept.push(t.clone());
        }
        proto
    };
    let mut initializer_protos: Vec<onnx::TensorProto> =
        inits.iter().filter_map(|v| Some(add(&g.value(*v).name, g.initializer(*v)?))).collect();
    initializer_protos.extend(folded.iter().map(|(v, t)| add(&g.value(*v).name, t)));
    let graph = onnx::GraphProto {
        name: Some("vinort_partition".into()),
        node: node_protos,
        initializer: initializer_protos,
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
    Ok(Serialized { bytes: m.encode_to_vec(), by_address: kept })
}

/// Whether any of `nodes` is a `DequantizeLinear` of a constant int8 tensor, which
/// [`partition_model_with`] folds when asked to.
pub fn dequantizes_int8_weights(model: &Model, nodes: &[NodeIndex]) -> bool {
    let g = &model.graph;
    nodes.iter().map(|ix| g.node(*ix)).any(|n| {
        n.op_type == "DequantizeLinear"
            && matches!(n.domain.as_str(), "" | "ai.onnx")
            && n.inputs
                .first()
                .copied()
                .flatten()
                .and_then(|v| g.initializer(v))
                .is_some_and(|x| x.dtype() == vinort_ir::DType::I8)
    })
}

/// The f32 value of a `DequantizeLinear` node of a constant int8 weight with an f32 scale
/// (per tensor or per axis; not blocked), or `None` when the node is not one.
fn dequantized_weight(model: &Model, ix: NodeIndex) -> Result<Option<vinort_ir::Tensor>> {
    use vinort_ir::DType;
    let g = &model.graph;
    let n = g.node(ix);
    if n.op_type != "DequantizeLinear" || !matches!(n.domain.as_str(), "" | "ai.onnx") {
        return Ok(None);
    }
    let constant = |i: usize| n.inputs.get(i).copied().flatten().and_then(|v| g.initializer(v));
    let (Some(x), Some(scale)) = (constant(0), constant(1)) else { return Ok(None) };
    let zero = match n.inputs.get(2).copied().flatten() {
        None => None,
        Some(v) => match g.initializer(v) {
            Some(z) if z.dtype() == DType::I8 => Some(z),
            _ => return Ok(None),
        },
    };
    if x.dtype() != DType::I8 || scale.dtype() != DType::F32 || n.attr_or::<i64>("block_size", 0)? != 0 {
        return Ok(None);
    }
    let shape = x.shape();
    // A scale inside the model file's mapping may sit at any offset.
    let scale = scale.to_aligned();
    let (xs, ss) = (x.as_slice::<i8>()?, scale.as_slice::<f32>()?);
    let zs = zero.map(|z| z.as_slice::<i8>()).transpose()?;
    // Per tensor: one scale (rank 0 or [1]); per axis: one per index along `axis`.
    let per_tensor = ss.len() == 1 && scale.shape().len() <= 1;
    let (len, inner) = if per_tensor {
        (1, 1)
    } else {
        let rank = shape.len() as i64;
        let axis = n.attr_or::<i64>("axis", 1)?;
        let axis = if axis < 0 { axis + rank } else { axis };
        if scale.shape().len() != 1 || !(0..rank).contains(&axis) || shape[axis as usize] != ss.len() {
            return Ok(None);
        }
        (ss.len(), shape[axis as usize + 1..].iter().product::<usize>())
    };
    if zs.is_some_and(|z| z.len() != ss.len()) {
        return Ok(None);
    }
    let y: Vec<f32> = xs
        .iter()
        .enumerate()
        .map(|(i, &q)| {
            let k = if per_tensor { 0 } else { (i / inner) % len };
            let z = zs.map_or(0, |z| i32::from(z[k]));
            // ONNX: (x - zero_point) * scale, the difference exact in f32.
            (i32::from(q) - z) as f32 * ss[k]
        })
        .collect();
    Ok(Some(vinort_ir::Tensor::from_vec(shape, y)?))
}

/// Below this many bytes a weight is inlined even by address: small constants (shapes, scales,
/// zero points) are most of a graph's initializers and cost nothing to copy.
pub const BY_ADDRESS_MIN_BYTES: usize = 1024;

/// OpenVINO's ONNX frontend reads external data at this location from memory (offset: the
/// address, length: the size).
pub const IN_MEMORY_LOCATION: &str = vinort_ir::tensor_proto::IN_MEMORY_MARKER;

/// An initializer as a `TensorProto`, and whether it references the tensor's bytes by address.
fn initializer(name: &str, t: &vinort_ir::Tensor, weights: Weights) -> (onnx::TensorProto, bool) {
    let bytes = t.as_bytes();
    // Packed (sub-byte) types are unpacked in memory; strings have no bytes to point at.
    let addressable = t.dtype().packed_bits() >= 8 && t.dtype() != vinort_ir::DType::String;
    if weights == Weights::Inline || !addressable || bytes.len() < BY_ADDRESS_MIN_BYTES {
        return (tensor_to_proto(name, t), false);
    }
    let entry = |k: &str, v: String| onnx::StringStringEntryProto { key: Some(k.into()), value: Some(v) };
    let proto = onnx::TensorProto {
        name: Some(name.to_owned()),
        dims: t.shape().iter().map(|d| *d as i64).collect(),
        data_type: Some(t.dtype().onnx_code()),
        data_location: Some(onnx::tensor_proto::DataLocation::External as i32),
        external_data: vec![
            entry("location", IN_MEMORY_LOCATION.into()),
            entry("offset", (bytes.as_ptr() as usize).to_string()),
            entry("length", bytes.len().to_string()),
        ],
        ..Default::default()
    };
    (proto, true)
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
        let e = partition_model(&m, g.topo_order(), &[x], &[y], Weights::Inline).err().unwrap().to_string();
        assert!(e.contains("partition input 'x' is untyped"), "{e}");
        let typed = one_node("Relu", 14, &[vi("x", 1, &[2])], vec![], &["x"], vec![]);
        assert!(partition_model(&typed, typed.graph.topo_order(), &[x], &[y], Weights::Inline).is_ok());
    }
}

#[cfg(test)]
mod weight_tests {
    use super::*;
    use prost::Message;
    use vinort_ir::Tensor;
    use vinort_ir::tensor_proto::tensor_to_proto;

    /// y = (x + big) * small: by address, the partition points at `big`'s bytes where the
    /// loaded model holds them and inlines `small`; inline, it carries both.
    #[test]
    fn large_weights_go_by_address_small_ones_and_files_on_disk_inline() {
        use vinort_ir::proto::build::{fixed_tensor_info as vi, node};
        let n = 4096;
        let big: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        let graph = onnx::GraphProto {
            name: Some("g".into()),
            node: vec![node("Add", "add", &["x", "big"], &["s"]), node("Mul", "mul", &["s", "small"], &["y"])],
            input: vec![vi("x", 1, &[n as i64])],
            output: vec![vi("y", 1, &[n as i64])],
            initializer: vec![
                tensor_to_proto("big", &Tensor::from_slice(&[n], &big).unwrap()),
                tensor_to_proto("small", &Tensor::from_slice(&[4], &[2f32; 4]).unwrap()),
            ],
            ..Default::default()
        };
        let proto = vinort_ir::proto::build::model(9, &[("", 17)], graph);
        let m = Model::from_bytes(proto.encode_to_vec()).unwrap();
        let g = &m.graph;
        let id = |s: &str| g.value_id(s).unwrap();
        let held = g.initializer(id("big")).unwrap();

        let s = partition_model(&m, g.topo_order(), &[id("x")], &[id("y")], Weights::ByAddress).unwrap();
        assert!(s.bytes.len() < 1024, "{} bytes: the big weight was inlined", s.bytes.len());
        assert_eq!(s.by_address.len(), 1);
        assert_eq!(s.by_address[0].as_bytes().as_ptr(), held.as_bytes().as_ptr(), "the caller keeps big alive");
        let part = onnx::ModelProto::decode(s.bytes.as_slice()).unwrap();
        let inits = part.graph.unwrap().initializer;
        let get = |name: &str| inits.iter().find(|t| t.name.as_deref() == Some(name)).unwrap().clone();
        let small = get("small");
        assert!(small.external_data.is_empty() && small.raw_data.is_some(), "small weights are inlined");
        let big_p = get("big");
        assert_eq!(big_p.data_location, Some(onnx::tensor_proto::DataLocation::External as i32));
        let entry = |k: &str| {
            big_p.external_data.iter().find(|e| e.key.as_deref() == Some(k)).and_then(|e| e.value.clone()).unwrap()
        };
        assert_eq!(entry("location"), IN_MEMORY_LOCATION);
        assert_eq!(entry("offset"), (held.as_bytes().as_ptr() as usize).to_string());
        assert_eq!(entry("length"), (n * 4).to_string());
        assert_eq!(big_p.dims, [n as i64]);

        let s = partition_model(&m, g.topo_order(), &[id("x")], &[id("y")], Weights::Inline).unwrap();
        assert!(s.bytes.len() > n * 4 && s.by_address.is_empty(), "inline carries every weight");
    }

    /// A per-axis DequantizeLinear of an int8 weight (axis 0, as a conv's weights are) folds to
    /// `(w - zp[k]) * scale[k]` along that axis, computed here by hand; the node and its int8
    /// inputs leave the partition, and the f32 weight is handed over like any other.
    #[test]
    fn int8_weight_dequantize_folds_to_its_f32_value() {
        use vinort_ir::proto::build::{attr, fixed_tensor_info as vi, node};
        // w: [2, 3] int8 with per-row scales and zero points; y = x * dq(w), x broadcast [3].
        let w: [i8; 6] = [-128, 0, 127, 5, -7, 100];
        let (scale, zp) = ([0.5f32, 0.25], [3i8, -2]);
        let dq = onnx::NodeProto {
            attribute: vec![attr::int("axis", 0)],
            ..node("DequantizeLinear", "dq", &["w", "s", "z"], &["wf"])
        };
        let graph = onnx::GraphProto {
            name: Some("g".into()),
            node: vec![dq, node("Mul", "mul", &["x", "wf"], &["y"])],
            input: vec![vi("x", 1, &[3])],
            output: vec![vi("y", 1, &[2, 3])],
            initializer: vec![
                tensor_to_proto("w", &Tensor::from_slice(&[2, 3], &w).unwrap()),
                tensor_to_proto("s", &Tensor::from_slice(&[2], &scale).unwrap()),
                tensor_to_proto("z", &Tensor::from_slice(&[2], &zp).unwrap()),
            ],
            ..Default::default()
        };
        let proto = vinort_ir::proto::build::model(9, &[("", 21)], graph);
        let m = Model::from_bytes(proto.encode_to_vec()).unwrap();
        let g = &m.graph;
        let id = |s: &str| g.value_id(s).unwrap();
        assert!(dequantizes_int8_weights(&m, g.topo_order()));

        let s = partition_model_with(&m, g.topo_order(), &[id("x")], &[id("y")], Weights::Inline, true).unwrap();
        let part = onnx::ModelProto::decode(s.bytes.as_slice()).unwrap().graph.unwrap();
        let ops: Vec<_> = part.node.iter().map(|n| n.op_type.clone().unwrap_or_default()).collect();
        assert_eq!(ops, ["Mul"]);
        let names: Vec<_> = part.initializer.iter().map(|t| t.name.clone().unwrap_or_default()).collect();
        assert_eq!(names, ["wf"], "only the folded weight is left");
        let wf = &part.initializer[0];
        assert_eq!((wf.dims.as_slice(), wf.data_type), (&[2i64, 3][..], Some(1)));
        let raw = wf.raw_data.as_deref().unwrap();
        let got: Vec<f32> = raw.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(got, [-65.5f32, -1.5, 62.0, 1.75, -1.25, 25.5]);

        // Unasked, or for a float weight, nothing changes.
        let s = partition_model_with(&m, g.topo_order(), &[id("x")], &[id("y")], Weights::Inline, false).unwrap();
        let part = onnx::ModelProto::decode(s.bytes.as_slice()).unwrap().graph.unwrap();
        assert_eq!(part.node.len(), 2);
    }
}
