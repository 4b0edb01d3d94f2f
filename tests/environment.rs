//! Sessions of one model built through one `Environment` share their compiled form; other
//! providers, another file or a dropped session mean a new build.

mod common;

use common::*;
use vinort::openvino::Precision;
use vinort::{Cpu, Environment, OpenVino, Provider, Tensor};

fn ov() -> Vec<Provider> {
    vec![OpenVino::cpu().precision(Precision::Fp32).error_on_failure(), Cpu::default().into()]
}

#[test]
fn equal_sessions_of_one_file_are_shared_and_run_alike() {
    let path = model_dir("partition_cnn").join("model.onnx");
    let env = Environment::new();
    for list in [vec![Cpu::default().into()], ov()] {
        let a = env.load(&path).unwrap().providers(list.clone()).build().unwrap();
        let b = env.load(&path).unwrap().providers(list.clone()).build().unwrap();
        assert!(a.shares_with(&b), "{}", a.plan());
        let feeds = read_pbs(&model_dir("partition_cnn").join("test_data_set_0"), "input");
        let run = |s: &vinort::Session| {
            let out = s.run(feeds.iter().map(|(n, t)| (n.as_str(), t))).unwrap();
            out[0].as_tensor().unwrap().as_slice::<f32>().unwrap().to_vec()
        };
        assert_eq!(run(&a), run(&b));
    }
    // Different options, another session.
    let single = env.load(&path).unwrap().providers([Cpu::default().threads(1).into()]).build().unwrap();
    let default = env.load(&path).unwrap().providers([Cpu::default().into()]).build().unwrap();
    assert!(!single.shares_with(&default));
    // Outside the environment, nothing is shared.
    let alone = vinort::Runtime::load(&path).unwrap().providers([Cpu::default().into()]).build().unwrap();
    assert!(!alone.shares_with(&default));
}

#[test]
fn a_dropped_session_is_built_again_and_a_changed_file_is_not_shared() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.onnx");
    std::fs::copy(model_dir("mobilenetv2_tiny").join("model.onnx"), &path).unwrap();
    let env = Environment::new();
    let a = env.load(&path).unwrap().build().unwrap();
    assert_eq!(env.live_sessions(), 1);
    drop(a);
    assert_eq!(env.live_sessions(), 0, "sessions are held weakly");
    let b = env.load(&path).unwrap().build().unwrap();
    // Replaced by another file (another size): the live session is of the old one.
    use vinort::ir::proto::prost::Message;
    let bytes = std::fs::read(&path).unwrap();
    let m = vinort::ir::proto::onnx::ModelProto {
        doc_string: Some("edited".into()),
        ..vinort::ir::proto::onnx::ModelProto::decode(bytes.as_slice()).unwrap()
    };
    // Replaced, not rewritten in place: live sessions map the old file's weights.
    let tmp = dir.path().join("m.onnx.tmp");
    std::fs::write(&tmp, m.encode_to_vec()).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    assert_ne!(std::fs::metadata(&path).unwrap().len() as usize, bytes.len());
    let c = env.load(&path).unwrap().build().unwrap();
    assert!(!b.shares_with(&c), "a rewritten file is another model");
    let x = Tensor::from_vec(&[1, 3, 64, 64], vec![0.25f32; 3 * 64 * 64]).unwrap();
    assert_eq!(
        b.run([("input", &x)]).unwrap()[0].as_tensor().unwrap().as_slice::<f32>().unwrap(),
        c.run([("input", &x)]).unwrap()[0].as_tensor().unwrap().as_slice::<f32>().unwrap()
    );
}
