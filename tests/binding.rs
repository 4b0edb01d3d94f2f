//! I/O binding: outputs an OpenVINO partition makes are written straight into the caller's
//! buffers (pointer identity), steady-state bound runs allocate no tensor buffer, the others
//! are copied in, and a buffer of the wrong shape is an error naming the output.

mod common;

use common::*;
use vinort::ir::stats;
use vinort::openvino::Precision;
use vinort::{Cpu, OpenVino, Provider, RunOptions, Runtime, Session, TensorRef};

fn session(providers: Vec<Provider>) -> Session {
    Runtime::load(model_dir("mobilenetv2_tiny").join("model.onnx")).unwrap().providers(providers).build().unwrap()
}

fn ov() -> Vec<Provider> {
    vec![OpenVino::cpu().precision(Precision::Fp32).error_on_failure(), Cpu::default().into()]
}

fn input(seed: f32) -> Vec<f32> {
    (0..3 * 64 * 64).map(|i| (i as f32 * 0.37 + seed).sin() * 0.5).collect()
}

fn plain_run(s: &Session, x: &[f32]) -> Vec<f32> {
    let out = s.run([("input", TensorRef::from_slice(&[1, 3, 64, 64], x).unwrap())]).unwrap();
    out[0].as_tensor().unwrap().as_slice::<f32>().unwrap().to_vec()
}

#[test]
fn openvino_writes_a_bound_output_in_place_and_allocates_nothing_per_run() {
    let s = session(ov());
    let (x, y) = (input(0.0), input(1.0));
    let (want_x, want_y) = (plain_run(&s, &x), plain_run(&s, &y));
    let mut probabilities = vec![0f32; 10];
    {
        let mut b = s.binding();
        b.bind_input("input", TensorRef::from_slice(&[1, 3, 64, 64], &x).unwrap()).unwrap();
        b.bind_output("probabilities", &[1, 10], &mut probabilities).unwrap();
        s.run_with(&mut b, &RunOptions::new()).unwrap();
        assert!(b.written_in_place("probabilities"), "OpenVINO must write the caller's buffer itself");
        let before = stats::snapshot();
        for _ in 0..10 {
            s.run_with(&mut b, &RunOptions::new()).unwrap();
        }
        let d = stats::snapshot().since(&before);
        assert_eq!((d.tensor_allocs, d.tensor_copies), (0, 0), "bound runs allocate and copy no tensor: {d:?}");
    }
    assert_eq!(probabilities, want_x);
    // A later unbound run must not write the buffer a binding used.
    let kept = probabilities.clone();
    assert_eq!(plain_run(&s, &y), want_y);
    assert_eq!(probabilities, kept, "an unbound run wrote into a buffer bound earlier");
}

#[test]
fn cpu_outputs_are_copied_in_and_wrong_buffers_are_named_errors() {
    let s = session(vec![Cpu::default().into()]);
    let x = input(2.0);
    let want = plain_run(&s, &x);
    let mut probabilities = vec![0f32; 10];
    let mut b = s.binding();
    b.bind_input("input", TensorRef::from_slice(&[1, 3, 64, 64], &x).unwrap()).unwrap();
    b.bind_output("probabilities", &[1, 10], &mut probabilities).unwrap();
    s.run_with(&mut b, &RunOptions::new()).unwrap();
    assert!(!b.written_in_place("probabilities"));
    drop(b);
    assert_eq!(probabilities, want);

    let mut wrong = vec![0f32; 10];
    let mut b = s.binding();
    b.bind_input("input", TensorRef::from_slice(&[1, 3, 64, 64], &x).unwrap()).unwrap();
    b.bind_output("probabilities", &[10, 1], &mut wrong).unwrap();
    let e = s.run_with(&mut b, &RunOptions::new()).unwrap_err().to_string();
    assert!(e.contains("probabilities") && e.contains("[10, 1]"), "{e}");
    let mut small = vec![0f32; 4];
    let e = b.bind_output("probabilities", &[1, 10], &mut small).unwrap_err().to_string();
    assert!(e.contains("does not hold 4"), "{e}");
    let mut ints = vec![0i64; 10];
    let e = s.binding().bind_output("probabilities", &[1, 10], &mut ints).unwrap_err().to_string();
    assert!(e.contains("float") || e.contains("f32"), "{e}");
    assert!(s.binding().bind_output("nope", &[1], &mut [0f32]).unwrap_err().to_string().contains("probabilities"));
    // Unbound outputs are read from the binding.
    let mut b = s.binding();
    b.bind_input("input", TensorRef::from_slice(&[1, 3, 64, 64], &x).unwrap()).unwrap();
    s.run_with(&mut b, &RunOptions::new()).unwrap();
    assert_eq!(b.output("probabilities").unwrap().as_tensor().unwrap().as_slice::<f32>().unwrap(), want);
}
