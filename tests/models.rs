//! The committed sample models run through the public API on `[Cpu]` and match reference
//! outputs computed by onnxruntime when they were generated (see models/README.md).

mod common;

use common::*;
use vinort::{Cpu, Runtime, Session};

fn session(name: &str) -> Session {
    Runtime::load(model_dir(name).join("model.onnx")).unwrap().providers([Cpu::default().into()]).build().unwrap()
}

fn check_model(name: &str) {
    let s = session(name);
    let data = model_dir(name).join("test_data_set_0");
    let inputs = read_pbs(&data, "input");
    let expected = read_pbs(&data, "output");
    assert!(!expected.is_empty());
    let out = s.run(inputs.iter().map(|(n, t)| (n.as_str(), t))).unwrap();
    assert_eq!(out.len(), expected.len());
    for (name, want) in &expected {
        let got = out.get(name).unwrap_or_else(|| panic!("no output {name}"));
        assert_close(name, got, want, 1e-4, 1e-6);
    }
}

#[test]
fn mobilenetv2_matches_onnxruntime_reference() {
    check_model("mobilenetv2_tiny");
}

#[test]
fn bert_matches_onnxruntime_reference() {
    check_model("bert_tiny");
}

#[test]
fn plan_reports_one_cpu_partition_with_boundaries() {
    let s = session("mobilenetv2_tiny");
    let plan = s.plan();
    assert_eq!(plan.partitions.len(), 1);
    let p = &plan.partitions[0];
    assert_eq!(p.provider, "Cpu");
    assert_eq!(p.inputs, vec!["input".to_string()]);
    assert_eq!(p.outputs, vec!["probabilities".to_string()]);
    assert!(p.def.whole_graph);
    assert_eq!(p.ops.get("Conv"), Some(&19));
}

#[test]
fn eight_threads_on_one_session_match_a_single_threaded_run() {
    let s = session("bert_tiny");
    let data = model_dir("bert_tiny").join("test_data_set_0");
    let inputs = read_pbs(&data, "input");
    let single = s.run(inputs.iter().map(|(n, t)| (n.as_str(), t))).unwrap();
    let bits = |o: &vinort::Outputs| -> Vec<Vec<u32>> {
        o.iter()
            .map(|(_, v)| v.as_tensor().unwrap().as_slice::<f32>().unwrap().iter().map(|f| f.to_bits()).collect())
            .collect()
    };
    let want = bits(&single);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| {
                    (0..5)
                        .map(|_| bits(&s.run(inputs.iter().map(|(n, t)| (n.as_str(), t))).unwrap()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for got in h.join().unwrap() {
                assert_eq!(got, want, "a concurrent run differs from the single-threaded one");
            }
        }
    });
}

#[test]
fn borrowed_inputs_give_the_same_results() {
    let s = session("mobilenetv2_tiny");
    let data = model_dir("mobilenetv2_tiny").join("test_data_set_0");
    let inputs = read_pbs(&data, "input");
    let (name, t) = &inputs[0];
    let owned = s.run([(name.as_str(), t)]).unwrap();
    let raw: Vec<f32> = t.to_vec().unwrap();
    let shape = t.shape().to_vec();
    let borrowed = s.run([(name.as_str(), vinort::TensorRef::from_slice(&shape, &raw).unwrap())]).unwrap();
    assert_eq!(
        owned[0].as_tensor().unwrap().as_slice::<f32>().unwrap(),
        borrowed[0].as_tensor().unwrap().as_slice::<f32>().unwrap()
    );
}

/// y = x + b where `b` is a graph input that also has an initializer: from IR 4 on an
/// overridable initializer (ONNX Runtime's semantics), before IR 4 a constant.
#[test]
fn an_input_with_an_initializer_is_an_overridable_default_from_ir_4() {
    use vinort::ir::proto::onnx;
    let build = |ir: i64| {
        let g = onnx::GraphProto {
            name: Some("overridable".into()),
            node: vec![node("Add", "add", &["x", "b"], &["y"])],
            input: vec![value_info("x", 1, &[2]), value_info("b", 1, &[2])],
            output: vec![value_info("y", 1, &[2])],
            initializer: vec![f32_tensor("b", &[2], &[10.0, 20.0])],
            ..Default::default()
        };
        let mut m = model(g, 14);
        m.ir_version = Some(ir);
        Runtime::from_bytes(encode(&m)).unwrap().providers([Cpu::default().into()]).build().unwrap()
    };
    let x = vinort::Tensor::from_vec(&[2], vec![1f32, 2.0]).unwrap();
    let b = vinort::Tensor::from_vec(&[2], vec![100f32, 200.0]).unwrap();
    let y = |out: vinort::Outputs| out[0].as_tensor().unwrap().to_vec::<f32>().unwrap();

    let s = build(8);
    let names: Vec<(&str, bool)> = s.inputs().iter().map(|i| (i.name.as_str(), i.required())).collect();
    assert_eq!(names, [("x", true), ("b", false)]);
    assert_eq!(y(s.run([("x", x.clone())]).unwrap()), [11.0, 22.0], "not fed: the initializer");
    assert_eq!(y(s.run([("x", x.clone()), ("b", b.clone())]).unwrap()), [101.0, 202.0], "fed: replaces it");
    let missing = s.run([("b", b.clone())]).unwrap_err().to_string();
    assert!(missing.contains("'x'") && missing.contains("missing"), "{missing}");

    let s = build(3);
    let names: Vec<&str> = s.inputs().iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["x"], "before IR 4 every initializer is listed as an input: a constant");
    assert_eq!(y(s.run([("x", x)]).unwrap()), [11.0, 22.0]);
    assert!(s.run([("b", b)]).is_err(), "a constant cannot be fed");
}

#[test]
fn metadata_props_and_descriptive_fields_are_exposed() {
    use vinort::ir::proto::onnx;
    let g = onnx::GraphProto {
        name: Some("meta".into()),
        doc_string: Some("the graph".into()),
        node: vec![node("Relu", "r", &["x"], &["y"])],
        input: vec![value_info("x", 1, &[2])],
        output: vec![value_info("y", 1, &[2])],
        ..Default::default()
    };
    let mut m = model(g, 14);
    m.domain = Some("com.example".into());
    m.model_version = Some(7);
    m.doc_string = Some("a model".into());
    let prop = |k: &str, v: &str| onnx::StringStringEntryProto { key: Some(k.into()), value: Some(v.into()) };
    m.metadata_props = vec![prop("labels", "cat,dog"), prop("author", "a"), prop("author", "b")];
    let s = Runtime::from_bytes(encode(&m)).unwrap().build().unwrap();
    let md = s.metadata();
    assert_eq!(
        (md.producer_name.as_str(), md.domain.as_str(), md.version, md.description.as_str()),
        ("vinort-tests", "com.example", 7, "a model")
    );
    assert_eq!((md.graph_name.as_str(), md.graph_description.as_str()), ("meta", "the graph"));
    let custom: Vec<(&str, &str)> = md.custom.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(custom, [("author", "b"), ("labels", "cat,dog")], "a repeated key keeps its last value");
}
