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

/// A MatMul whose constant B is packed keeps B as the file maps it, misaligned or not
/// (`Kernel::holds_input`); the products the packed form does not take (a 1-D A, an empty A)
/// still read B (aligned on the way by `to_compute`) and get it right.
#[test]
fn a_held_misaligned_weight_still_serves_the_unpacked_paths() {
    use vinort::ir::proto::build::{dim, tensor_info};
    use vinort::ir::proto::onnx;
    use vinort::{Cpu, Runtime, Tensor};
    let (k, n) = (40usize, 24usize);
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 7 % 23) as f32 - 11.0) / 8.0).collect();
    let dir = tempfile::tempdir().unwrap();
    // A model with B at a misaligned offset of its file, A of rank 1 or 2.
    let session = |rank: usize| {
        let path = dir.path().join(format!("rank{rank}.onnx"));
        let a_dims =
            if rank == 1 { vec![dim::fixed(k as i64)] } else { vec![dim::named("rows"), dim::fixed(k as i64)] };
        let misaligned = (0..4).any(|pad| {
            let name = format!("B{}", "_".repeat(pad));
            let graph = onnx::GraphProto {
                name: Some("held".into()),
                node: vec![node("MatMul", "mm", &["A", &name], &["Y"])],
                initializer: vec![f32_tensor(&name, &[k as i64, n as i64], &b)],
                input: vec![tensor_info("A", 1, a_dims.clone())],
                output: vec![onnx::ValueInfoProto { name: Some("Y".into()), ..Default::default() }],
                ..Default::default()
            };
            std::fs::write(&path, encode(&model(graph, 13))).unwrap();
            Model::load(&path).unwrap().graph.initializers().all(|(_, t)| !t.is_aligned())
        });
        assert!(misaligned, "no padding put B at a misaligned offset");
        Runtime::load(&path).unwrap().providers([Cpu::default().into()]).build().unwrap()
    };
    let a: Vec<f32> = (0..k).map(|i| (i as f32 - 20.0) / 16.0).collect();
    let want: Vec<f32> = (0..n).map(|j| (0..k).map(|i| a[i] * b[i * n + j]).sum()).collect();
    let check = |s: &vinort::Session, shape: &[usize]| {
        let out = s.run([("A", &Tensor::from_vec(shape, a.clone()).unwrap())]).unwrap();
        let got = out[0].as_tensor().unwrap().as_slice::<f32>().unwrap().to_vec();
        assert_eq!(got.len(), n, "A of shape {shape:?}");
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "A of shape {shape:?}: {g} vs {w}");
        }
    };
    let (one, two) = (session(1), session(2));
    check(&two, &[1, k]); // the packed product
    check(&one, &[k]); // a 1-D A: the general path reads B
    let empty = two.run([("A", &Tensor::from_vec(&[0, k], Vec::<f32>::new()).unwrap())]).unwrap();
    assert_eq!(empty[0].as_tensor().unwrap().shape(), &[0, n]);
}
