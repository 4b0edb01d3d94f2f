//! Weights are not copied at load: initializer bytes lie inside the model file's mapping.

mod common;

use common::*;
use vinort::ir::{Model, Origin};

#[test]
fn initializers_point_into_the_file_mapping() {
    let m = Model::load(model_dir("mobilenetv2_tiny").join("model.onnx")).unwrap();
    let map = m.bytes.as_ptr() as usize..m.bytes.as_ptr() as usize + m.bytes.len();
    let mut weight_bytes = 0;
    let mut count = 0;
    for (_, t) in m.graph.initializers() {
        if t.len() > 16 {
            assert_eq!(t.origin(), Origin::Shared);
            assert!(map.contains(&(t.data_ptr() as usize)), "initializer outside the mapping");
            weight_bytes += t.as_bytes().len();
            count += 1;
        }
    }
    assert!(count > 10 && weight_bytes > 100_000, "{count} tensors, {weight_bytes} bytes");
}
