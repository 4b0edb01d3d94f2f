//! The ONNX protobuf schema, compiled with prost.
//!
//! The schema is vendored in `proto/` from the `onnx==1.23.2` release (IR version 14, opset 28):
//! `proto/onnx.proto` is that release's `onnx-ml.proto` (the superset that also carries the
//! `ai.onnx.ml` map and opaque types) and `proto/onnx-data.proto` holds the sequence, map and
//! optional protos used by test data.
//!
//! All `bytes` fields decode to [`bytes::Bytes`]. Decoding a message from a `Bytes` that owns a
//! memory-mapped file makes `TensorProto::raw_data` a slice of that mapping, not a copy:
//!
//! ```
//! use prost::Message;
//! use vinort_proto::onnx::TensorProto;
//! let t = TensorProto { raw_data: Some(bytes::Bytes::from_static(&[1, 2, 3, 4])), ..Default::default() };
//! let wire = bytes::Bytes::from(t.encode_to_vec());
//! let back = TensorProto::decode(wire.clone()).unwrap();
//! let raw = back.raw_data.unwrap();
//! // The decoded bytes point into `wire`: no copy was made.
//! let range = wire.as_ptr() as usize..wire.as_ptr() as usize + wire.len();
//! assert!(range.contains(&(raw.as_ptr() as usize)));
//! ```
#![deny(missing_docs)]

/// Generated types of the `onnx` protobuf package.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod onnx {
    include!(concat!(env!("OUT_DIR"), "/onnx.rs"));
}

pub use prost;

/// Constructors for the messages hand-built models need most (tests, tools, and partition
/// export), so each user does not spell out the nested `TypeProto` again.
///
/// ```
/// use vinort_proto::build::{attr, dim, node, tensor_info};
/// let x = tensor_info("x", 1, [dim::fixed(1), dim::named("batch"), dim::unknown()]);
/// assert_eq!(x.name.as_deref(), Some("x"));
/// let relu = vinort_proto::onnx::NodeProto { attribute: vec![attr::int("axis", 1)], ..node("Softmax", "s", &["x"], &["y"]) };
/// assert_eq!(relu.attribute[0].i, Some(1));
/// ```
pub mod build {
    use crate::onnx;

    /// Dimensions of a `TensorShapeProto`.
    pub mod dim {
        use crate::onnx::tensor_shape_proto::{Dimension, dimension::Value};

        /// A dimension of known size.
        pub fn fixed(n: i64) -> Dimension {
            Dimension { value: Some(Value::DimValue(n)), denotation: None }
        }
        /// A named dimension (`dim_param`).
        pub fn named(name: &str) -> Dimension {
            Dimension { value: Some(Value::DimParam(name.into())), denotation: None }
        }
        /// A dimension with neither size nor name.
        pub fn unknown() -> Dimension {
            Dimension { value: None, denotation: None }
        }
    }

    /// A node of the default domain (set `domain`/`attribute` with struct update syntax).
    pub fn node(op_type: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> onnx::NodeProto {
        onnx::NodeProto {
            op_type: Some(op_type.into()),
            name: Some(name.into()),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    /// Attributes, each with its `type` field set as ONNX requires.
    pub mod attr {
        use crate::onnx::{self, attribute_proto::AttributeType};

        fn named(name: &str, t: AttributeType) -> onnx::AttributeProto {
            onnx::AttributeProto { name: Some(name.into()), r#type: Some(t as i32), ..Default::default() }
        }
        /// An `INT` attribute.
        pub fn int(name: &str, v: i64) -> onnx::AttributeProto {
            onnx::AttributeProto { i: Some(v), ..named(name, AttributeType::Int) }
        }
        /// An `INTS` attribute.
        pub fn ints(name: &str, v: &[i64]) -> onnx::AttributeProto {
            onnx::AttributeProto { ints: v.to_vec(), ..named(name, AttributeType::Ints) }
        }
        /// A `FLOAT` attribute.
        pub fn float(name: &str, v: f32) -> onnx::AttributeProto {
            onnx::AttributeProto { f: Some(v), ..named(name, AttributeType::Float) }
        }
        /// A `FLOATS` attribute.
        pub fn floats(name: &str, v: &[f32]) -> onnx::AttributeProto {
            onnx::AttributeProto { floats: v.to_vec(), ..named(name, AttributeType::Floats) }
        }
        /// A `STRING` attribute.
        pub fn string(name: &str, v: &str) -> onnx::AttributeProto {
            onnx::AttributeProto { s: Some(v.as_bytes().to_vec().into()), ..named(name, AttributeType::String) }
        }
        /// A `GRAPH` attribute (a control-flow body).
        pub fn graph(name: &str, g: onnx::GraphProto) -> onnx::AttributeProto {
            onnx::AttributeProto { g: Some(g), ..named(name, AttributeType::Graph) }
        }
    }

    /// The `TypeProto` of a tensor of ONNX element type `elem_type` with the given dimensions.
    pub fn tensor_type(
        elem_type: i32,
        dims: impl IntoIterator<Item = onnx::tensor_shape_proto::Dimension>,
    ) -> onnx::TypeProto {
        onnx::TypeProto {
            value: Some(onnx::type_proto::Value::TensorType(onnx::type_proto::Tensor {
                elem_type: Some(elem_type),
                shape: Some(onnx::TensorShapeProto { dim: dims.into_iter().collect() }),
            })),
            denotation: None,
        }
    }

    /// A `ValueInfoProto` for a tensor (see [`tensor_type`]).
    pub fn tensor_info(
        name: &str,
        elem_type: i32,
        dims: impl IntoIterator<Item = onnx::tensor_shape_proto::Dimension>,
    ) -> onnx::ValueInfoProto {
        onnx::ValueInfoProto {
            name: Some(name.into()),
            r#type: Some(tensor_type(elem_type, dims)),
            ..Default::default()
        }
    }

    /// An opset import (`""` is the default domain).
    pub fn opset(domain: &str, version: i64) -> onnx::OperatorSetIdProto {
        onnx::OperatorSetIdProto { domain: Some(domain.into()), version: Some(version) }
    }

    /// A model of IR version `ir_version` holding `graph` and importing `opsets` as
    /// `(domain, version)` pairs, `""` being the default domain (set `functions` and the rest
    /// with struct update syntax).
    pub fn model(ir_version: i64, opsets: &[(&str, i64)], graph: onnx::GraphProto) -> onnx::ModelProto {
        onnx::ModelProto {
            ir_version: Some(ir_version),
            opset_import: opsets.iter().map(|(d, v)| opset(d, *v)).collect(),
            graph: Some(graph),
            ..Default::default()
        }
    }

    /// A `ValueInfoProto` for a tensor whose dimensions are all of known size.
    pub fn fixed_tensor_info(name: &str, elem_type: i32, dims: &[i64]) -> onnx::ValueInfoProto {
        tensor_info(name, elem_type, dims.iter().map(|d| dim::fixed(*d)))
    }
}
