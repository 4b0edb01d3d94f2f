//! Inference latency of the benchmark-size models (MobileNetV2, ResNet-50, BERT-base, BERT-mini,
//! and a CNN with a DeformConv OpenVINO cannot run) under `[OpenVino(CPU, FP32), Cpu]`,
//! `[OpenVino(CPU, default precision), Cpu]` and `[Cpu]`, batch 1.
//!
//! `cargo bench --bench latency` (generates the models on first use; needs OpenVINO, which
//! `scripts/py-env` installs). The side-by-side comparison with ONNX Runtime and native
//! OpenVINO is `scripts/perf-table` (docs/performance.md).

mod common;

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

fn latency(c: &mut Criterion) {
    let dir = common::bench_models();
    for name in ["mobilenetv2", "resnet50", "bert_base", "bert_mini", "partition_cnn_bench", "segnet_bench"] {
        let model = dir.join(name);
        let feeds = common::inputs(&model);
        let mut g = c.benchmark_group(name);
        if name == "bert_base" || name == "resnet50" {
            g.sample_size(10);
        }
        for (label, providers) in common::provider_lists() {
            let s = common::session(&model, providers());
            g.bench_function(label, |b| {
                b.iter(|| s.run(feeds.iter().map(|(n, t)| (n.as_str(), t))).expect("run succeeds"))
            });
        }
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    targets = latency
}
criterion_main!(benches);
