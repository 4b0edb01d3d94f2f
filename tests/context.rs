//! Compiled-context models (ONNX Runtime's EPContext format): a saved session loads by
//! importing its OpenVINO blobs, with the precision they were compiled with (outputs bit for
//! bit those of the session that saved it), runs without the source model, keeps its Cpu
//! nodes, and refuses a damaged blob or another OpenVINO version's blob by name.
//!
//! Tests of split plans build with `cost_model(false)`: their models are far too small for an
//! OpenVINO partition to pay for its hand-off, and the cost model would run them on Cpu alone.

mod common;

use std::path::Path;

use common::*;
use vinort::ir::proto::onnx;
use vinort::ir::proto::prost::Message;
use vinort::openvino::Precision;
use vinort::{Cpu, EmbedMode, Error, OpenVino, Provider, Runtime, Session, Tensor};

fn ov(precision: Option<Precision>) -> Provider {
    let p = OpenVino::cpu();
    match precision {
        Some(x) => p.precision(x).error_on_failure(),
        None => p.error_on_failure(),
    }
}

fn build(path: &Path, precision: Option<Precision>) -> vinort::Result<Session> {
    Runtime::load(path)?.providers([ov(precision), Cpu::default().into()]).cost_model(false).build()
}

fn inputs(name: &str) -> Vec<(String, Tensor)> {
    read_pbs(&model_dir(name).join("test_data_set_0"), "input")
}

fn outputs_bits(s: &Session, feeds: &[(String, Tensor)]) -> Vec<Vec<u8>> {
    let out = s.run(feeds.iter().map(|(n, t)| (n.as_str(), t))).unwrap();
    out.iter().map(|(_, v)| v.as_tensor().unwrap().as_bytes().to_vec()).collect()
}

/// The saved model's nodes, decoded.
fn saved_nodes(path: &Path) -> Vec<onnx::NodeProto> {
    let m = onnx::ModelProto::decode(std::fs::read(path).unwrap().as_slice()).unwrap();
    m.graph.unwrap().node
}

#[test]
fn a_whole_model_context_imports_bit_identical_without_the_source_file() {
    for precision in [Some(Precision::Fp32), None] {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("model.onnx");
        std::fs::copy(model_dir("mobilenetv2_tiny").join("model.onnx"), &source).unwrap();
        let first = build(&source, precision).unwrap();
        let feeds = inputs("mobilenetv2_tiny");
        let want = outputs_bits(&first, &feeds);
        let ctx = dir.path().join("model_ctx.onnx");
        first.save_context(&ctx, EmbedMode::Embedded).unwrap();
        drop(first);
        std::fs::remove_file(&source).unwrap();

        let nodes = saved_nodes(&ctx);
        assert_eq!(nodes.len(), 1, "one EPContext node for the whole model");
        assert_eq!(
            (nodes[0].op_type.as_deref(), nodes[0].domain.as_deref()),
            (Some("EPContext"), Some("com.microsoft"))
        );
        // Loaded with default options: the blob keeps the precision it was compiled with.
        let loaded = build(&ctx, None).unwrap();
        let plan = loaded.plan().to_string();
        assert!(plan.contains("imported from its EPContext blob"), "{plan}");
        assert_eq!(loaded.plan().partitions.len(), 1, "{plan}");
        assert_eq!(outputs_bits(&loaded, &feeds), want, "precision {precision:?}: outputs differ after import");
    }
}

#[test]
fn a_split_models_context_keeps_its_cpu_nodes_and_blob_files_work() {
    let dir = tempfile::tempdir().unwrap();
    let source = model_dir("partition_cnn").join("model.onnx");
    let first = build(&source, Some(Precision::Fp32)).unwrap();
    let ov_parts = first.plan().partitions.iter().filter(|p| p.provider.starts_with("OpenVino")).count();
    let cpu_nodes: usize = first.plan().partitions.iter().filter(|p| p.provider == "Cpu").map(|p| p.nodes.len()).sum();
    assert!(ov_parts >= 1 && cpu_nodes >= 1, "the model must be split to test this:\n{}", first.plan());
    let feeds = inputs("partition_cnn");
    let want = outputs_bits(&first, &feeds);
    let ctx = dir.path().join("cnn_ctx.onnx");
    first.save_context(&ctx, EmbedMode::Files).unwrap();

    let nodes = saved_nodes(&ctx);
    let contexts = nodes.iter().filter(|n| n.op_type.as_deref() == Some("EPContext")).count();
    assert_eq!(contexts, ov_parts, "one EPContext node per OpenVINO partition");
    assert_eq!(nodes.len() - contexts, cpu_nodes, "the Cpu partitions' nodes stay ONNX nodes");
    let blobs: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "blob"))
        .collect();
    assert_eq!(blobs.len(), ov_parts, "embed_mode 0 writes a blob file per partition");

    let loaded = build(&ctx, None).unwrap();
    assert_eq!(loaded.plan().partitions.len(), first.plan().partitions.len(), "{}", loaded.plan());
    assert_eq!(outputs_bits(&loaded, &feeds), want);

    // A damaged blob is refused by name before OpenVINO reads it.
    let mut bytes = std::fs::read(&blobs[0]).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&blobs[0], &bytes).unwrap();
    let e = build(&ctx, None).err().expect("a damaged blob must not load").to_string();
    assert!(e.contains("damaged") && e.contains("CRC-32"), "{e}");
    // A missing one too.
    std::fs::remove_file(&blobs[0]).unwrap();
    let e = build(&ctx, None).err().expect("a missing blob must not load").to_string();
    assert!(e.contains("cannot read the context blob"), "{e}");
}

/// Rewrites one attribute of every EPContext node of a saved model.
fn edit_contexts(path: &Path, f: impl Fn(&mut onnx::NodeProto)) {
    let mut m = onnx::ModelProto::decode(std::fs::read(path).unwrap().as_slice()).unwrap();
    for n in &mut m.graph.as_mut().unwrap().node {
        if n.op_type.as_deref() == Some("EPContext") {
            f(n);
        }
    }
    std::fs::write(path, m.encode_to_vec()).unwrap();
}

fn set_attr(n: &mut onnx::NodeProto, name: &str, value: &[u8]) {
    let a = n.attribute.iter_mut().find(|a| a.name.as_deref() == Some(name)).unwrap();
    a.s = Some(value.to_vec().into());
}

#[test]
fn another_versions_blob_and_a_corrupt_blob_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let first = build(&model_dir("mobilenetv2_tiny").join("model.onnx"), Some(Precision::Fp32)).unwrap();
    let ctx = dir.path().join("m_ctx.onnx");
    first.save_context(&ctx, EmbedMode::Embedded).unwrap();
    let version = vinort::openvino::devices().unwrap().0;

    let other = dir.path().join("other_version.onnx");
    std::fs::copy(&ctx, &other).unwrap();
    edit_contexts(&other, |n| set_attr(n, "ep_sdk_version", b"2024.0.0-12345"));
    let e = build(&other, None).err().expect("another version's blob must not load");
    let msg = e.to_string();
    assert!(msg.contains("2024.0.0-12345") && msg.contains(&version) && msg.contains("vinort compile"), "{msg}");

    // A blob without vinort's notes (as ONNX Runtime writes them) goes to OpenVINO as it is:
    // garbage must come back as OpenVINO's error, not a crash.
    let foreign = dir.path().join("foreign.onnx");
    std::fs::copy(&ctx, &foreign).unwrap();
    edit_contexts(&foreign, |n| {
        n.attribute.retain(|a| a.name.as_deref() != Some("notes"));
        set_attr(n, "ep_cache_context", &vec![0x42; 4096]);
    });
    let e = build(&foreign, None).err().expect("a garbage blob must not load");
    assert!(matches!(e, Error::Model(_) | Error::Provider { .. } | Error::Ir(_)), "{e:?}");
    assert!(e.to_string().contains("could not import its blob"), "{e}");

    // A node for another provider is named as such.
    let qnn = dir.path().join("qnn.onnx");
    std::fs::copy(&ctx, &qnn).unwrap();
    edit_contexts(&qnn, |n| set_attr(n, "source", b"QNNExecutionProvider"));
    let e = build(&qnn, None).err().expect("another provider's context").to_string();
    assert!(e.contains("QNNExecutionProvider"), "{e}");
}
