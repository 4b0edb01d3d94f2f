//! Helpers shared by the integration tests: reading the committed sample models and their
//! reference outputs, building small ONNX models in memory, comparing tensors.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use prost::Message;
use vinort::ir::proto::onnx;
use vinort::{Tensor, Value};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn model_dir(name: &str) -> PathBuf {
    repo().join("models").join(name)
}

/// `(name, tensor)` pairs of a test_data_set folder's `input_K.pb` or `output_K.pb` files.
pub fn read_pbs(dir: &Path, prefix: &str) -> Vec<(String, Tensor)> {
    vinort_tools::testcase::read_tensors(dir, prefix).unwrap_or_else(|e| panic!("{e}"))
}

/// Asserts `got` matches `want` elementwise: |got - want| <= atol + rtol * |want|.
pub fn assert_close(what: &str, got: &Value, want: &Tensor, rtol: f64, atol: f64) {
    let got = got.as_tensor().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (got.to_f64_vec().unwrap(), want.to_f64_vec().unwrap());
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!((a - b).abs() <= atol + rtol * b.abs(), "{what}: element {i}: got {a}, want {b}");
    }
}

pub fn tensor_type(elem: i32, dims: &[i64]) -> onnx::TypeProto {
    use onnx::tensor_shape_proto::{Dimension, dimension::Value as D};
    onnx::TypeProto {
        value: Some(onnx::type_proto::Value::TensorType(onnx::type_proto::Tensor {
            elem_type: Some(elem),
            shape: Some(onnx::TensorShapeProto {
                dim: dims.iter().map(|d| Dimension { value: Some(D::DimValue(*d)), denotation: None }).collect(),
            }),
        })),
        denotation: None,
    }
}

pub fn value_info(name: &str, elem: i32, dims: &[i64]) -> onnx::ValueInfoProto {
    onnx::ValueInfoProto { name: Some(name.into()), r#type: Some(tensor_type(elem, dims)), ..Default::default() }
}

pub fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> onnx::NodeProto {
    onnx::NodeProto {
        op_type: Some(op.into()),
        name: Some(name.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

pub fn f32_tensor(name: &str, dims: &[i64], data: &[f32]) -> onnx::TensorProto {
    onnx::TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(1),
        raw_data: Some(bytes::Bytes::from(data.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>())),
        ..Default::default()
    }
}

pub fn model(graph: onnx::GraphProto, opset: i64) -> onnx::ModelProto {
    onnx::ModelProto {
        ir_version: Some(8),
        opset_import: vec![onnx::OperatorSetIdProto { domain: Some(String::new()), version: Some(opset) }],
        graph: Some(graph),
        producer_name: Some("vinort-tests".into()),
        ..Default::default()
    }
}

pub fn encode(m: &onnx::ModelProto) -> Vec<u8> {
    m.encode_to_vec()
}
