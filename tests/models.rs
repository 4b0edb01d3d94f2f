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
