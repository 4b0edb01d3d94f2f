//! Measures how soon a run stops after `RunOptions::terminate`: a Loop that never ends on the
//! Cpu provider, and a long MatMul chain on OpenVINO (CPU, FP32).
//!
//! ```text
//! cargo run --release -p vinort --example cancel_latency
//! ```

use std::time::{Duration, Instant};

use vinort::ir::proto::build::{attr, fixed_tensor_info as info, model, node};
use vinort::ir::proto::onnx;
use vinort::ir::proto::prost::Message;
use vinort::openvino::Precision;
use vinort::{Cpu, OpenVino, Provider, RunOptions, Runtime, Session, Tensor};

fn weights(name: &str, dims: &[i64], value: f32) -> onnx::TensorProto {
    let n: i64 = dims.iter().product();
    onnx::TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(1),
        raw_data: Some((0..n).flat_map(|_| value.to_le_bytes()).collect::<Vec<u8>>().into()),
        ..Default::default()
    }
}

/// `y = x + n` by a Loop adding one per iteration.
fn endless_loop() -> Vec<u8> {
    let body = onnx::GraphProto {
        name: Some("body".into()),
        node: vec![
            node("Identity", "c", &["cond_in"], &["cond_out"]),
            node("Add", "a", &["acc_in", "one"], &["acc_out"]),
        ],
        input: vec![info("i", 7, &[]), info("cond_in", 9, &[]), info("acc_in", 1, &[4])],
        output: vec![info("cond_out", 9, &[]), info("acc_out", 1, &[4])],
        ..Default::default()
    };
    let graph = onnx::GraphProto {
        name: Some("loop".into()),
        node: vec![onnx::NodeProto {
            attribute: vec![attr::graph("body", body)],
            ..node("Loop", "l", &["n", "", "x"], &["y"])
        }],
        initializer: vec![weights("one", &[], 1.0)],
        input: vec![info("n", 7, &[]), info("x", 1, &[4])],
        output: vec![info("y", 1, &[4])],
        ..Default::default()
    };
    model(8, &[("", 17)], graph).encode_to_vec()
}

/// 240 products by one shared 1024×1024 weight: about a second on two cores.
fn matmul_chain() -> Vec<u8> {
    let nodes = (0..240)
        .map(|i| {
            let from = if i == 0 { "x".to_string() } else { format!("h{}", i - 1) };
            let to = if i == 239 { "y".to_string() } else { format!("h{i}") };
            node("MatMul", &format!("mm{i}"), &[&from, "w"], &[&to])
        })
        .collect();
    let graph = onnx::GraphProto {
        name: Some("chain".into()),
        node: nodes,
        initializer: vec![weights("w", &[1024, 1024], 1.0 / 1024.0)],
        input: vec![info("x", 1, &[512, 1024])],
        output: vec![info("y", 1, &[512, 1024])],
        ..Default::default()
    };
    model(8, &[("", 17)], graph).encode_to_vec()
}

/// Milliseconds from `terminate` to the run's return, over `rounds` runs stopped after `after`.
fn latencies(session: &Session, inputs: &[(&'static str, Tensor)], after: Duration, rounds: usize) -> Vec<f64> {
    (0..rounds)
        .map(|_| {
            let options = RunOptions::new();
            let (s, o, feeds) = (session.clone(), options.clone(), inputs.to_vec());
            let run = std::thread::spawn(move || s.run_with_options(feeds, &o).is_err());
            std::thread::sleep(after);
            let called = Instant::now();
            options.terminate();
            assert!(run.join().unwrap(), "the run was not stopped");
            called.elapsed().as_secs_f64() * 1e3
        })
        .collect()
}

fn report(what: &str, mut ms: Vec<f64>) {
    ms.sort_by(f64::total_cmp);
    println!(
        "{what}: stopped {:.2} ms (median), {:.2} ms (max) after terminate, {} runs",
        ms[ms.len() / 2],
        ms[ms.len() - 1],
        ms.len()
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let build = |bytes: Vec<u8>, p: Provider| Runtime::from_bytes(bytes).and_then(|b| b.providers([p]).build());
    let cpu = build(endless_loop(), Cpu::default().into())?;
    let feeds = [("n", Tensor::scalar(i64::MAX)), ("x", Tensor::from_vec(&[4], vec![0f32; 4])?)];
    report("Cpu, Loop", latencies(&cpu, &feeds, Duration::from_millis(50), 20));
    let ov = build(matmul_chain(), OpenVino::cpu().precision(Precision::Fp32).error_on_failure())?;
    let x = Tensor::from_vec(&[512, 1024], vec![0.5f32; 512 * 1024])?;
    let t = Instant::now();
    ov.run([("x", &x)])?;
    println!("OpenVINO chain: an uninterrupted run takes {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    report("OpenVINO, MatMul chain", latencies(&ov, &[("x", x)], Duration::from_millis(100), 10));
    Ok(())
}
