//! Inference latency of the committed sample models on `[Cpu]`.
//!
//! `cargo bench --bench cpu_models`. Inputs are the models' own test_data_set_0 inputs.

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use vinort::Cpu;

fn bench(c: &mut Criterion) {
    for name in ["mobilenetv2_tiny", "bert_tiny"] {
        let dir = common::repo().join("models").join(name);
        let session = common::session(&dir, vec![Cpu::default().into()]);
        let feeds = common::inputs(&dir);
        c.bench_function(&format!("{name}/cpu"), |b| {
            b.iter(|| session.run(feeds.iter().map(|(n, t)| (n.as_str(), t))).expect("run succeeds"))
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
