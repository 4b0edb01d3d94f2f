//! A model over protobuf's 2 GiB limit, split between OpenVINO and Cpu, runs and matches.
//!
//! The model is made at test time in a temporary folder (removed after): `y = MatMul(x, W)`
//! with a 2.15 GB float weight `W` in an external data file, then `Cast` to float64 and an
//! `Add`, which OpenVINO must not compute (it computes f64 in f32), so the model splits. The
//! OpenVINO partition can only be written because it references `W` in the external data file
//! instead of inlining it (crates/vinort-openvino/src/export.rs).
//!
//! The values make the result exact in any summation order: every `x[k] * W[k][j]` is a
//! multiple of 1/8 and every partial sum stays far below 2^21, where f32 still holds
//! multiples of 1/8 exactly. So the reference, a plain loop here, must match bit for bit.
//!
//! Takes about a minute and 2.2 GB of disk (see docs/conformance.md); CI runs it.

mod common;

use std::io::Write;

use prost::Message;
use vinort::ir::proto::onnx;
use vinort::{Runtime, Tensor};

const K: usize = 16_384;
const N: usize = 32_800;

fn x(k: usize) -> f32 {
    ((k % 5) as f32 - 2.0) * 0.5
}

fn w(k: usize, j: usize) -> f32 {
    (((k + 3 * j) % 7) as f32 - 3.0) * 0.25
}

#[test]
fn a_split_model_over_2_gib_runs_and_matches() {
    let bytes = (K * N * 4) as u64;
    assert!(bytes > 1 << 31, "the weight alone must exceed protobuf's 2 GiB limit");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let t0 = std::time::Instant::now();
    {
        let f = std::fs::File::create(dir.path().join("model.onnx.data")).expect("create the data file");
        let mut out = std::io::BufWriter::with_capacity(1 << 22, f);
        let mut row = Vec::with_capacity(N * 4);
        for k in 0..K {
            row.clear();
            row.extend((0..N).flat_map(|j| w(k, j).to_le_bytes()));
            out.write_all(&row).expect("write the weights");
        }
        out.flush().expect("flush the weights");
    }
    let entry = |k: &str, v: String| onnx::StringStringEntryProto { key: Some(k.into()), value: Some(v) };
    let weight = onnx::TensorProto {
        name: Some("W".into()),
        dims: vec![K as i64, N as i64],
        data_type: Some(1),
        data_location: Some(onnx::tensor_proto::DataLocation::External as i32),
        external_data: vec![
            entry("location", "model.onnx.data".into()),
            entry("offset", "0".into()),
            entry("length", bytes.to_string()),
        ],
        ..Default::default()
    };
    let mut cast = common::node("Cast", "to_f64", &["y"], &["y64"]);
    cast.attribute.push(vinort::ir::proto::build::attr::int("to", 11));
    let one = onnx::TensorProto {
        name: Some("one".into()),
        dims: vec![1],
        data_type: Some(11),
        raw_data: Some(bytes::Bytes::from(1f64.to_le_bytes().to_vec())),
        ..Default::default()
    };
    let graph = onnx::GraphProto {
        name: Some("large".into()),
        node: vec![
            common::node("MatMul", "mm", &["x", "W"], &["y"]),
            cast,
            common::node("Add", "add", &["y64", "one"], &["z"]),
        ],
        input: vec![common::value_info("x", 1, &[1, K as i64])],
        output: vec![common::value_info("z", 11, &[1, N as i64])],
        initializer: vec![weight, one],
        ..Default::default()
    };
    let path = dir.path().join("model.onnx");
    std::fs::write(&path, common::model(graph, 17).encode_to_vec()).expect("write the model");
    let made = t0.elapsed();

    let t1 = std::time::Instant::now();
    let session = Runtime::load(&path).unwrap().providers(common::providers("openvino-fp32,cpu")).build().unwrap();
    let built = t1.elapsed();
    let plan = session.plan();
    let parts: Vec<(&str, usize)> = plan.partitions.iter().map(|p| (p.provider.as_str(), p.nodes.len())).collect();
    assert_eq!(parts, [("OpenVino(CPU)", 1), ("Cpu", 2)], "{plan}");
    assert!(plan.path.starts_with("split:") && plan.path.contains("float64"), "{}", plan.path);

    let xs: Vec<f32> = (0..K).map(x).collect();
    let t2 = std::time::Instant::now();
    let out = session.run([("x", Tensor::from_vec(&[1, K], xs.clone()).unwrap())]).unwrap();
    let ran = t2.elapsed();
    let got = out[0].as_tensor().unwrap().to_vec::<f64>().unwrap();
    let mut want = vec![0f32; N];
    for (k, xk) in xs.iter().enumerate() {
        for (j, acc) in want.iter_mut().enumerate() {
            *acc += xk * w(k, j);
        }
    }
    let wrong: Vec<(usize, f64, f32)> =
        (0..N).filter(|j| got[*j] != f64::from(want[*j]) + 1.0).map(|j| (j, got[j], want[j] + 1.0)).take(5).collect();
    assert!(wrong.is_empty(), "{} of {N} outputs differ, first (index, got, want): {wrong:?}", wrong.len());
    println!(
        "2.15 GB weight: made in {:.1} s, session built in {:.1} s, first run {:.2} s",
        made.as_secs_f64(),
        built.as_secs_f64(),
        ran.as_secs_f64()
    );
}
