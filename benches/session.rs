//! Session creation time: load + partition + compile, first ever (a fresh, empty OpenVINO model
//! cache every iteration) and again with `cache_dir` warm (the compiled blob is imported), for
//! MobileNetV2 and BERT-mini under `[OpenVino(CPU), Cpu]`, and `[Cpu]` for reference.
//!
//! `cargo bench --bench session`

mod common;

use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use vinort::openvino::Precision;
use vinort::{Cpu, Provider};

fn with_cache(dir: &std::path::Path) -> Vec<Provider> {
    vec![common::ov_cpu().precision(Precision::Fp32).cache_dir(dir).error_on_failure(), Cpu::default().into()]
}

fn creation(c: &mut Criterion) {
    let models = common::bench_models();
    for name in ["mobilenetv2", "bert_mini"] {
        let model = models.join(name);
        let mut g = c.benchmark_group(format!("session/{name}"));
        g.sample_size(10);
        g.bench_function("openvino-fp32+cpu/cold-cache", |b| {
            b.iter_batched(
                || tempfile::tempdir().expect("temp dir"),
                |cache| common::session(&model, with_cache(cache.path())),
                BatchSize::PerIteration,
            )
        });
        let warm = tempfile::tempdir().expect("temp dir");
        drop(common::session(&model, with_cache(warm.path())));
        g.bench_function("openvino-fp32+cpu/warm-cache", |b| {
            b.iter(|| common::session(&model, with_cache(warm.path())))
        });
        g.bench_function("cpu", |b| b.iter(|| common::session(&model, vec![Cpu::default().into()])));
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    targets = creation
}
criterion_main!(benches);
