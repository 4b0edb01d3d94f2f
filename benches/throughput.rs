//! Throughput with several threads on one session: 2 and 4 caller threads on MobileNetV2 and
//! BERT-mini under `[OpenVino(CPU, FP32), Cpu]` with `num_streams` 1 and 2 (with 2 streams two
//! inferences overlap instead of queueing on one infer request), and under `[Cpu]`.
//! Criterion reports inferences per second (one element = one inference).
//!
//! `cargo bench --bench throughput`

mod common;

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use vinort::openvino::Precision;
use vinort::{Cpu, Provider, Session, Tensor};

fn concurrent(s: &Session, feeds: &[(String, Tensor)], threads: u64, iters: u64) -> Duration {
    let start = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                for _ in 0..iters {
                    s.run(feeds.iter().map(|(n, t)| (n.as_str(), t))).expect("run succeeds");
                }
            });
        }
    });
    start.elapsed()
}

fn throughput(c: &mut Criterion) {
    let models = common::bench_models();
    for name in ["mobilenetv2", "bert_mini"] {
        let model = models.join(name);
        let feeds = common::inputs(&model);
        let mut g = c.benchmark_group(format!("throughput/{name}"));
        g.sample_size(10);
        let lists: Vec<(String, Vec<Provider>)> = vec![
            ("openvino-fp32+cpu/num_streams=1".into(), vec![ov(1), Cpu::default().into()]),
            ("openvino-fp32+cpu/num_streams=2".into(), vec![ov(2), Cpu::default().into()]),
            ("cpu".into(), vec![Cpu::default().into()]),
        ];
        for (label, providers) in lists {
            let s = common::session(&model, providers);
            for threads in [2u64, 4] {
                g.throughput(Throughput::Elements(threads));
                g.bench_function(format!("{label}/{threads}-threads"), |b| {
                    b.iter_custom(|iters| concurrent(&s, &feeds, threads, iters))
                });
            }
        }
        g.finish();
    }
}

fn ov(streams: u32) -> Provider {
    common::ov_cpu()
        .precision(Precision::Fp32)
        .num_streams(NonZeroU32::new(streams).expect("non-zero"))
        .error_on_failure()
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    targets = throughput
}
criterion_main!(benches);
