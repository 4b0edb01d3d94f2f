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
