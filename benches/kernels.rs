//! Cpu provider kernel micro-benches, reported against the FLOP count: criterion's
//! "elements/s" here is FLOP/s (one multiply-add = 2 FLOP), so 80 Gelem/s means 80 GFLOP/s.
//!
//! - MatMul f32: 256³, 512³, 1024³, and BERT-base's 128×768×3072 projection.
//! - Conv f32 3×3: ResNet-50 stage 2 (1×64×56×56 → 64), stage 4 (1×256×14×14 → 256).
//! - Depthwise Conv f32 3×3: MobileNetV2's 1×144×56×56 and 1×960×7×7.
//!
//! Each op runs as a one-node model through a `[Cpu]` session (the per-run overhead is part of
//! what users pay; it is microseconds against milliseconds of arithmetic).
//!
//! `cargo bench --bench kernels`

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use prost::Message;
use vinort::ir::proto::onnx;
use vinort::{Cpu, Runtime, Session, Tensor};

fn vi(name: &str, dims: &[i64]) -> onnx::ValueInfoProto {
    use onnx::tensor_shape_proto::{Dimension, dimension::Value as D};
    onnx::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(onnx::TypeProto {
            value: Some(onnx::type_proto::Value::TensorType(onnx::type_proto::Tensor {
                elem_type: Some(1),
                shape: Some(onnx::TensorShapeProto {
                    dim: dims.iter().map(|d| Dimension { value: Some(D::DimValue(*d)), denotation: None }).collect(),
                }),
            })),
            denotation: None,
        }),
        ..Default::default()
    }
}

fn ints(name: &str, v: &[i64]) -> onnx::AttributeProto {
    onnx::AttributeProto {
        name: Some(name.into()),
        ints: v.to_vec(),
        r#type: Some(onnx::attribute_proto::AttributeType::Ints as i32),
        ..Default::default()
    }
}

fn int(name: &str, v: i64) -> onnx::AttributeProto {
    onnx::AttributeProto {
        name: Some(name.into()),
        i: Some(v),
        r#type: Some(onnx::attribute_proto::AttributeType::Int as i32),
        ..Default::default()
    }
}

/// A one-node model `op(a, b) -> y`, both inputs fed at run time, as a `[Cpu]` session.
fn one_node(op: &str, a: &[i64], b: &[i64], y: &[i64], attrs: Vec<onnx::AttributeProto>) -> Session {
    let graph = onnx::GraphProto {
        name: Some(op.into()),
        node: vec![onnx::NodeProto {
            op_type: Some(op.into()),
            name: Some("n".into()),
            input: vec!["a".into(), "b".into()],
            output: vec!["y".into()],
            attribute: attrs,
            ..Default::default()
        }],
        input: vec![vi("a", a), vi("b", b)],
        output: vec![vi("y", y)],
        ..Default::default()
    };
    let model = onnx::ModelProto {
        ir_version: Some(8),
        opset_import: vec![onnx::OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }],
        graph: Some(graph),
        ..Default::default()
    };
    Runtime::from_bytes(model.encode_to_vec())
        .expect("model loads")
        .providers([Cpu::default().into()])
        .build()
        .expect("session builds")
}

fn random(dims: &[i64]) -> Tensor {
    let shape: Vec<usize> = dims.iter().map(|d| *d as usize).collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    Tensor::build::<f32>(&shape, |o| {
        for v in o {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *v = (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
        }
    })
}

fn bench_one(c: &mut Criterion, group: &str, label: &str, flop: u64, s: &Session, a: &[i64], b: &[i64]) {
    let (ta, tb) = (random(a), random(b));
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(flop));
    g.bench_function(label, |bch| bch.iter(|| s.run([("a", &ta), ("b", &tb)]).expect("run succeeds")));
    g.finish();
}

fn matmul(c: &mut Criterion) {
    for (m, k, n) in [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (128, 768, 3072)] {
        let s = one_node("MatMul", &[m, k], &[k, n], &[m, n], vec![]);
        bench_one(c, "matmul_f32", &format!("{m}x{k}x{n}"), (2 * m * k * n) as u64, &s, &[m, k], &[k, n]);
    }
}

fn conv(c: &mut Criterion) {
    for (ch, hw) in [(64i64, 56i64), (256, 14)] {
        let (x, w, y) = ([1, ch, hw, hw], [ch, ch, 3, 3], [1, ch, hw, hw]);
        let attrs = vec![ints("kernel_shape", &[3, 3]), ints("pads", &[1, 1, 1, 1])];
        let s = one_node("Conv", &x, &w, &y, attrs);
        let flop = 2 * ch * ch * 9 * hw * hw;
        bench_one(c, "conv3x3_f32", &format!("{ch}ch_{hw}x{hw}"), flop as u64, &s, &x, &w);
    }
}

fn depthwise(c: &mut Criterion) {
    for (ch, hw) in [(144i64, 56i64), (960, 7)] {
        let (x, w, y) = ([1, ch, hw, hw], [ch, 1, 3, 3], [1, ch, hw, hw]);
        let attrs = vec![ints("kernel_shape", &[3, 3]), ints("pads", &[1, 1, 1, 1]), int("group", ch)];
        let s = one_node("Conv", &x, &w, &y, attrs);
        let flop = 2 * ch * 9 * hw * hw;
        bench_one(c, "depthwise3x3_f32", &format!("{ch}ch_{hw}x{hw}"), flop as u64, &s, &x, &w);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = matmul, conv, depthwise
}
criterion_main!(benches);
