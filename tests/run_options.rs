//! Run options: a run stops when another thread terminates it or its timeout passes, on the
//! Cpu provider (between kernels and between Loop iterations) and on OpenVINO (the request is
//! cancelled), and the session runs normally afterwards.

mod common;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use vinort::ir::proto::build::attr;
use vinort::ir::proto::onnx;
use vinort::openvino::Precision;
use vinort::{Cpu, Error, OpenVino, RunOptions, Runtime, Session, StopReason, Tensor};

/// `y = x + n` computed by a Loop adding 1 per iteration, `n` the trip count input: a run of a
/// trip count in the billions is a run that never ends unless stopped.
fn counting_loop() -> Vec<u8> {
    let body = onnx::GraphProto {
        name: Some("body".into()),
        node: vec![
            node("Identity", "keep_going", &["cond_in"], &["cond_out"]),
            node("Add", "step", &["acc_in", "one"], &["acc_out"]),
        ],
        input: vec![value_info("i", 7, &[]), value_info("cond_in", 9, &[]), value_info("acc_in", 1, &[4])],
        output: vec![value_info("cond_out", 9, &[]), value_info("acc_out", 1, &[4])],
        ..Default::default()
    };
    let graph = onnx::GraphProto {
        name: Some("counting".into()),
        node: vec![onnx::NodeProto {
            attribute: vec![attr::graph("body", body)],
            ..node("Loop", "count", &["n", "", "x"], &["y"])
        }],
        initializer: vec![f32_tensor("one", &[], &[1.0])],
        input: vec![value_info("n", 7, &[]), value_info("x", 1, &[4])],
        output: vec![value_info("y", 1, &[4])],
        ..Default::default()
    };
    encode(&model(graph, 17))
}

fn loop_inputs(n: i64) -> [(&'static str, Tensor); 2] {
    [("n", Tensor::scalar(n)), ("x", Tensor::from_vec(&[4], vec![0.5f32, 1.0, 2.0, -3.0]).unwrap())]
}

fn cpu_loop() -> Session {
    Runtime::from_bytes(counting_loop()).unwrap().providers([Cpu::default().into()]).build().unwrap()
}

/// Starts `run` on another thread, terminates it after `after`, and returns its result and how
/// long it took to return after the terminate call.
/// When the OpenVINO chain's run is stopped, well before it could end.
const STOP_AFTER: Duration = Duration::from_millis(100);
/// How soon a stopped run must return: far above the milliseconds measured, far below a run.
const STOP_WITHIN: Duration = Duration::from_secs(1);

fn terminate_after<T: Send + 'static>(
    options: &RunOptions,
    after: Duration,
    run: impl FnOnce() -> T + Send + 'static,
) -> (T, Duration) {
    let worker = std::thread::spawn(run);
    std::thread::sleep(after);
    assert!(!worker.is_finished(), "the run ended before it was terminated: the test proves nothing");
    let called = Instant::now();
    options.terminate();
    let result = worker.join().unwrap();
    (result, called.elapsed())
}

#[test]
fn terminate_stops_a_long_cpu_loop_and_the_session_runs_again() {
    let session = cpu_loop();
    let options = RunOptions::new().with_tag("loop-run");
    let (s, o) = (session.clone(), options.clone());
    let (result, latency) = terminate_after(&options, Duration::from_millis(200), move || {
        s.run_with_options(loop_inputs(i64::MAX), &o).map(|o| o.len())
    });
    match result {
        Err(Error::Cancelled { reason: StopReason::Terminated, tag }) => assert_eq!(tag.as_deref(), Some("loop-run")),
        other => panic!("expected a terminated run, got {other:?}"),
    }
    // Generous for a loaded CI machine; the latency is measured properly in `vinort-bench`.
    assert!(latency < Duration::from_secs(1), "stopped {latency:?} after the terminate call");
    // Terminated options stop every later run until unterminated.
    assert!(matches!(
        session.run_with_options(loop_inputs(3), &options),
        Err(Error::Cancelled { reason: StopReason::Terminated, .. })
    ));
    options.unterminate();
    let out = session.run_with_options(loop_inputs(3), &options).unwrap();
    assert_eq!(out[0].as_tensor().unwrap().as_slice::<f32>().unwrap(), &[3.5, 4.0, 5.0, 0.0]);
}

#[test]
fn a_timeout_stops_a_cpu_run() {
    let session = cpu_loop();
    let options = RunOptions::new().with_timeout(Duration::from_millis(100));
    let started = Instant::now();
    let result = session.run_with_options(loop_inputs(i64::MAX), &options);
    assert!(
        matches!(result, Err(Error::Cancelled { reason: StopReason::DeadlineExceeded, .. })),
        "expected a timed-out run, got {:?}",
        result.map(|o| o.len())
    );
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(100) && took < Duration::from_secs(2), "took {took:?}");
    // The timeout counts from each run's start: a short run under the same options finishes.
    let out = session.run_with_options(loop_inputs(2), &options).unwrap();
    assert_eq!(out[0].as_tensor().unwrap().as_slice::<f32>().unwrap(), &[2.5, 3.0, 4.0, -1.0]);
}

/// `y = x·W·W·…·W` (`depth` products by one shared 1024×1024 weight of 1/1024 each, so values
/// stay in range): about a gigaflop per product, a run of about a second at `depth` 240.
fn matmul_chain(depth: usize) -> Vec<u8> {
    let mut nodes = vec![];
    let mut prev = "x".to_string();
    for i in 0..depth {
        let out = if i + 1 == depth { "y".to_string() } else { format!("h{i}") };
        nodes.push(node("MatMul", &format!("mm{i}"), &[&prev, "w"], &[&out]));
        prev = out;
    }
    let graph = onnx::GraphProto {
        name: Some("chain".into()),
        node: nodes,
        initializer: vec![f32_tensor("w", &[1024, 1024], &vec![1.0 / 1024.0; 1024 * 1024])],
        input: vec![value_info("x", 1, &[512, 1024])],
        output: vec![value_info("y", 1, &[512, 1024])],
        ..Default::default()
    };
    encode(&model(graph, 17))
}

#[test]
fn terminate_cancels_an_openvino_request_and_the_session_runs_again() {
    let session = Arc::new(
        Runtime::from_bytes(matmul_chain(240))
            .unwrap()
            .providers([OpenVino::cpu().precision(Precision::Fp32).error_on_failure()])
            .build()
            .unwrap(),
    );
    assert!(session.plan().to_string().contains("whole model"), "{}", session.plan());
    let x = Tensor::from_vec(&[512, 1024], (0..512 * 1024).map(|i| (i % 7) as f32).collect()).unwrap();
    let full = session.run([("x", &x)]).unwrap();
    let options = RunOptions::new();
    let (s, o, x2) = (session.clone(), options.clone(), x.clone());
    // 240 products of 512 x 1024 x 1024: 257 GFLOP, seconds on two cores. The bounds are
    // absolute and generous (other tests share the cores); the latency itself is measured by
    // examples/cancel_latency.rs, not here.
    let (result, latency) =
        terminate_after(&options, STOP_AFTER, move || s.run_with_options([("x", x2)], &o).map(|o| o.len()));
    assert!(
        matches!(result, Err(Error::Cancelled { reason: StopReason::Terminated, .. })),
        "expected a cancelled request, got {result:?}"
    );
    assert!(latency < STOP_WITHIN, "stopped {latency:?} after the call");
    // The cancelled request went back to the pool idle: the next runs are whole and right.
    options.unterminate();
    for _ in 0..2 {
        let again = session.run_with_options([("x", &x)], &options).unwrap();
        assert_eq!(
            again[0].as_tensor().unwrap().as_slice::<f32>().unwrap(),
            full[0].as_tensor().unwrap().as_slice::<f32>().unwrap()
        );
    }
    // A timeout on OpenVINO: the request is cancelled at the deadline.
    let started = Instant::now();
    let timed = session.run_with_options([("x", &x)], &RunOptions::new().with_timeout(STOP_AFTER));
    assert!(matches!(timed, Err(Error::Cancelled { reason: StopReason::DeadlineExceeded, .. })), "{timed:?}");
    assert!(started.elapsed() < STOP_AFTER + STOP_WITHIN, "took {:?}", started.elapsed());
}

/// Polls a future on this thread, parking between wake-ups (a minimal executor).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

#[test]
fn run_async_does_not_block_the_poller_and_completes_or_stops() {
    let session = cpu_loop();
    // A run of 1000 iterations completes through `.await`.
    let out = block_on(session.run_async(loop_inputs(1000), RunOptions::new())).unwrap();
    assert_eq!(out[0].as_tensor().unwrap().as_slice::<f32>().unwrap(), &[1000.5, 1001.0, 1002.0, 997.0]);
    // A run that never ends: polling returns at once (Pending), and a terminate ends it.
    let options = RunOptions::new();
    let mut pending = session.run_async(loop_inputs(i64::MAX), options.clone());
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let started = Instant::now();
    assert!(std::pin::Pin::new(&mut pending).poll(&mut cx).is_pending());
    // The run never ends: a poll that waited for it would not return at all.
    assert!(started.elapsed() < STOP_WITHIN, "a poll must not wait for the run");
    std::thread::sleep(Duration::from_millis(100));
    assert!(!pending.is_finished());
    options.terminate();
    assert!(matches!(block_on(pending), Err(Error::Cancelled { reason: StopReason::Terminated, .. })));
}
