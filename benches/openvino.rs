//! OpenVINO provider benches: latency of the sample models under each provider list, and
//! throughput of two threads on one session with `num_streams` 1 vs 2 (with 2 streams the two
//! runs overlap instead of queueing on one infer request).
//!
//! `cargo bench --bench openvino` (needs OpenVINO; `scripts/test` or `scripts/py-env` installs it).

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::{Duration, Instant};

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use vinort::openvino::Precision;
use vinort::{Provider, Session, Tensor};

fn sample_model(name: &str) -> PathBuf {
    common::repo().join("models").join(name)
}

fn sample_inputs(name: &str) -> Vec<(String, Tensor)> {
    common::inputs(&sample_model(name))
}

fn sample_session(name: &str, providers: Vec<Provider>) -> Session {
    common::session(&sample_model(name), providers)
}

fn latency(c: &mut Criterion) {
    for name in ["mobilenetv2_tiny", "bert_tiny", "partition_cnn"] {
        let feeds = sample_inputs(name);
        for (label, providers) in common::provider_lists() {
            let s = sample_session(name, providers());
            c.bench_function(&format!("{name}/{label}"), |b| {
                b.iter(|| s.run(feeds.iter().map(|(n, t)| (n.as_str(), t))).expect("run succeeds"))
            });
        }
    }
}

fn streams(c: &mut Criterion) {
    let feeds = sample_inputs("mobilenetv2_tiny");
    for n in [1u32, 2] {
        let ov = common::ov_cpu().precision(Precision::Fp32).num_streams(NonZeroU32::new(n).expect("non-zero"));
        let s = sample_session("mobilenetv2_tiny", common::providers("openvino,cpu", &ov));
        c.bench_function(&format!("mobilenetv2_tiny/2-threads/num_streams={n}"), |b| {
            b.iter_custom(|iters| {
                // Two threads share the iterations; elapsed time per pair of runs is what two
                // concurrent callers see.
                let start = Instant::now();
                std::thread::scope(|scope| {
                    for _ in 0..2 {
                        scope.spawn(|| {
                            for _ in 0..iters.div_ceil(2) {
                                s.run(feeds.iter().map(|(n, t)| (n.as_str(), t))).expect("run succeeds");
                            }
                        });
                    }
                });
                start.elapsed()
            })
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = latency, streams
}
criterion_main!(benches);
