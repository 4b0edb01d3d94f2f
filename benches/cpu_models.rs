//! Inference latency of the committed sample models on `[Cpu]`.
//!
//! `cargo bench --bench cpu_models`. Inputs are the models' own test_data_set_0 inputs.

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use vinort::ir::tensor_proto::decode_tensor;
use vinort::{Cpu, Runtime, Tensor};

fn inputs(dir: &Path) -> Vec<(String, Tensor)> {
    (0..)
        .map(|i| dir.join(format!("input_{i}.pb")))
        .take_while(|p| p.exists())
        .map(|p| decode_tensor(std::fs::read(&p).expect("readable input").into()).expect("valid TensorProto"))
        .collect()
}

fn bench(c: &mut Criterion) {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    for name in ["mobilenetv2_tiny", "bert_tiny"] {
        let dir = models.join(name);
        let session = Runtime::load(dir.join("model.onnx"))
            .expect("model loads")
            .providers([Cpu::default().into()])
            .build()
            .expect("session builds");
        let feeds = inputs(&dir.join("test_data_set_0"));
        c.bench_function(&format!("{name}/cpu"), |b| {
            b.iter(|| session.run(feeds.iter().map(|(n, t)| (n.as_str(), t))).expect("run succeeds"))
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
