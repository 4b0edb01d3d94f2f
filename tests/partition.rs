//! Partitioning across several providers: convex partitions in dependency order, boundary
//! tensors handed over by reference (pointer identity), refusals reported.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use vinort::ir::proto::onnx;
use vinort::ir::{Capability, CompiledPartition, ExecutionProvider, Model, NodeIndex, PartitionDef, RunContext, Value};
use vinort::{Provider, Runtime, Tensor};

/// `(provider, input pointers, output pointers)` of each partition run.
type Log = Arc<Mutex<Vec<(String, Vec<usize>, Vec<usize>)>>>;
/// `(provider, nodes, inputs, outputs)` of a planned partition.
type Summary = (String, Vec<String>, Vec<String>, Vec<String>);

/// A provider that claims only some op types and runs them with the Cpu kernels, recording the
/// data pointers of every tensor entering and leaving its partitions.
#[derive(Debug)]
struct Only {
    name: &'static str,
    ops: &'static [&'static str],
    log: Log,
}

struct Recording {
    inner: Box<dyn CompiledPartition>,
    name: String,
    log: Log,
}

impl CompiledPartition for Recording {
    fn run(&self, inputs: &[&Value], ctx: &RunContext) -> vinort::ir::Result<Vec<Value>> {
        let ptr = |v: &Value| v.as_tensor().map(|t| t.data_ptr() as usize).unwrap_or(0);
        let out = self.inner.run(inputs, ctx)?;
        self.log.lock().unwrap().push((
            self.name.clone(),
            inputs.iter().map(|v| ptr(v)).collect(),
            out.iter().map(ptr).collect(),
        ));
        Ok(out)
    }
}

impl ExecutionProvider for Only {
    fn name(&self) -> String {
        self.name.into()
    }
    fn capability(&self, model: &Model, offered: &[NodeIndex]) -> vinort::ir::Result<Capability> {
        let mut c = Capability::default();
        for n in offered {
            if self.ops.contains(&model.graph.node(*n).op_type.as_str()) {
                c.claimed.push(*n);
            } else {
                c.refused.push((*n, format!("{} only runs {:?}", self.name, self.ops)));
            }
        }
        Ok(c)
    }
    fn compile(&self, model: &Model, part: &PartitionDef) -> vinort::ir::Result<Box<dyn CompiledPartition>> {
        let inner = vinort_cpu::CpuProvider::default().compile(model, part)?;
        Ok(Box::new(Recording { inner, name: self.name.into(), log: self.log.clone() }))
    }
}

/// a = Relu(x); b = Neg(a); c = Relu(b); d = Relu(x); e = Add(c, d)
fn diamond() -> Vec<u8> {
    let g = onnx::GraphProto {
        name: Some("diamond".into()),
        node: vec![
            node("Relu", "a", &["x"], &["a"]),
            node("Neg", "b", &["a"], &["b"]),
            node("Relu", "c", &["b"], &["c"]),
            node("Relu", "d", &["x"], &["d"]),
            node("Add", "e", &["c", "d"], &["e"]),
        ],
        input: vec![value_info("x", 1, &[2, 3])],
        output: vec![value_info("e", 1, &[2, 3])],
        ..Default::default()
    };
    encode(&model(g, 17))
}

#[test]
fn a_refused_node_in_the_middle_splits_into_convex_partitions_with_zero_copy_hand_off() {
    let log = Arc::new(Mutex::new(vec![]));
    let first = Only { name: "First", ops: &["Relu", "Add"], log: log.clone() };
    let second = Only { name: "Second", ops: &["Neg"], log: log.clone() };
    let s = Runtime::from_bytes(diamond())
        .unwrap()
        .providers([Provider::new(first), Provider::new(second)])
        .build()
        .unwrap();
    let plan = s.plan();
    let summary: Vec<Summary> = plan
        .partitions
        .iter()
        .map(|p| (p.provider.clone(), p.nodes.clone(), p.inputs.clone(), p.outputs.clone()))
        .collect();
    let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        summary,
        vec![
            ("First".into(), v(&["a"]), v(&["x"]), v(&["a"])),
            ("Second".into(), v(&["b"]), v(&["a"]), v(&["b"])),
            // `d` joins the later First partition: it is independent of `b`, and merging keeps
            // the partition graph acyclic.
            ("First".into(), v(&["c", "d", "e"]), v(&["b", "x"]), v(&["e"])),
        ]
    );
    assert!(plan.refusals.iter().any(|r| r.node == "b" && r.provider == "First" && r.reason.contains("only runs")));
    let text = plan.to_string();
    assert!(text.contains("3 partition(s)") && text.contains("refused nodes"), "{text}");

    let xs = vec![1.0f32, -2.0, 3.0, -4.0, 5.0, -6.0];
    let x = vinort::TensorRef::from_slice(&[2, 3], &xs).unwrap();
    let out = s.run([("x", x)]).unwrap();
    // e = Relu(-Relu(x)) + Relu(x) = Relu(x)
    assert_eq!(out[0].as_tensor().unwrap().as_slice::<f32>().unwrap(), &[1.0, 0.0, 3.0, 0.0, 5.0, 0.0]);

    let log = log.lock().unwrap();
    assert_eq!(log.len(), 3);
    let x_ptr = xs.as_ptr() as usize;
    // The caller's buffer reaches the first partition untouched...
    assert_eq!(log[0].1, vec![x_ptr]);
    // ...each boundary tensor arrives at the next partition at the address it left the
    // previous one (no copy)...
    assert_eq!(log[1].1[0], log[0].2[0]);
    assert_eq!(log[2].1, vec![log[1].2[0], x_ptr]);
    // ...and the caller gets the last partition's output buffer itself.
    assert_eq!(out[0].as_tensor().unwrap().data_ptr() as usize, log[2].2[0]);
}

#[test]
fn a_provider_that_cannot_start_is_skipped_with_a_warning_or_fails_on_request() {
    #[derive(Debug)]
    struct Broken;
    impl ExecutionProvider for Broken {
        fn name(&self) -> String {
            "Broken".into()
        }
        fn start(&self) -> vinort::ir::Result<()> {
            Err(vinort::ir::Error::unsupported("library not found (searched: /nowhere)"))
        }
        fn capability(&self, _: &Model, _: &[NodeIndex]) -> vinort::ir::Result<Capability> {
            unreachable!("never asked: it did not start")
        }
        fn compile(&self, _: &Model, _: &PartitionDef) -> vinort::ir::Result<Box<dyn CompiledPartition>> {
            unreachable!("never asked: it did not start")
        }
    }
    let s = Runtime::from_bytes(diamond())
        .unwrap()
        .providers([Provider::new(Broken), vinort::Cpu::default().into()])
        .build()
        .unwrap();
    assert!(s.plan().warnings.iter().any(|w| w.contains("Broken") && w.contains("/nowhere")));
    assert!(s.plan().partitions.iter().all(|p| p.provider == "Cpu"));
    let e = Runtime::from_bytes(diamond())
        .unwrap()
        .providers([Provider::new(Broken).error_on_failure(), vinort::Cpu::default().into()])
        .build()
        .err()
        .unwrap();
    assert!(e.to_string().contains("Broken") && e.to_string().contains("/nowhere"), "{e}");
    let x = Tensor::from_vec(&[2, 3], vec![1f32; 6]).unwrap();
    assert_eq!(s.run([("x", x)]).unwrap()[0].as_tensor().unwrap().as_slice::<f32>().unwrap(), &[1.0; 6]);
}

/// If with branches that read outer-scope values (`x` from the main graph).
#[test]
fn if_runs_the_chosen_branch_with_outer_scope_values() {
    let branch = |name: &str, op: &str| onnx::GraphProto {
        name: Some(name.into()),
        node: vec![node(op, &format!("{name}_op"), &["x", "x"], &[&format!("{name}_out")])],
        output: vec![value_info(&format!("{name}_out"), 1, &[3])],
        ..Default::default()
    };
    let mut if_node = node("If", "if", &["cond"], &["y"]);
    for (attr, g) in [("then_branch", branch("then", "Add")), ("else_branch", branch("else", "Mul"))] {
        if_node.attribute.push(onnx::AttributeProto {
            name: Some(attr.into()),
            r#type: Some(5),
            g: Some(g),
            ..Default::default()
        });
    }
    let g = onnx::GraphProto {
        name: Some("if".into()),
        node: vec![if_node],
        input: vec![value_info("cond", 9, &[]), value_info("x", 1, &[3])],
        output: vec![value_info("y", 1, &[3])],
        ..Default::default()
    };
    let s = Runtime::from_bytes(encode(&model(g, 17))).unwrap().build().unwrap();
    let node = s.model().graph.node(s.model().graph.topo_order()[0]);
    assert_eq!(node.implicit_inputs.len(), 1, "the branches' read of x is an implicit input");
    let x = || Tensor::from_vec(&[3], vec![1f32, 2.0, 3.0]).unwrap();
    let run = |c: bool| {
        s.run([("cond", Tensor::scalar(c)), ("x", x())]).unwrap()[0].as_tensor().unwrap().to_vec::<f32>().unwrap()
    };
    assert_eq!(run(true), vec![2.0, 4.0, 6.0]);
    assert_eq!(run(false), vec![1.0, 4.0, 9.0]);
}

#[test]
fn the_cost_rule_moves_a_tiny_cheap_partition_to_the_next_provider_but_keeps_heavy_ones() {
    // y = Neg(Relu(Neg(x))) @ w: Relu is the only node `First` takes among cheap ops.
    let g = |first_takes_matmul: bool| {
        let mut graph = onnx::GraphProto {
            name: Some("cost".into()),
            node: vec![
                node("Neg", "n1", &["x"], &["a"]),
                node("Relu", "r", &["a"], &["b"]),
                node("Neg", "n2", &["b"], &["c"]),
                node("MatMul", "mm", &["c", "w"], &["y"]),
            ],
            input: vec![value_info("x", 1, &[2, 2])],
            output: vec![value_info("y", 1, &[2, 2])],
            ..Default::default()
        };
        graph.initializer.push(f32_tensor("w", &[2, 2], &[1.0, 0.0, 0.0, 1.0]));
        let log = Arc::new(Mutex::new(vec![]));
        let ops: &'static [&'static str] = if first_takes_matmul { &["Relu", "MatMul"] } else { &["Relu"] };
        let first = Only { name: "First", ops, log };
        Runtime::from_bytes(encode(&model(graph, 17)))
            .unwrap()
            .providers([Provider::new(first), vinort::Cpu::default().into()])
            .build()
            .unwrap()
    };
    let s = g(false);
    let plan = s.plan();
    assert_eq!(plan.partitions.len(), 1, "{plan}");
    assert_eq!(plan.partitions[0].provider, "Cpu");
    let r = plan.refusals.iter().find(|r| r.node == "r" && r.provider == "First").expect("refusal recorded");
    assert!(r.reason.contains("cost rule"), "{}", r.reason);
    let x = Tensor::from_vec(&[2, 2], vec![1f32, -2.0, 3.0, -4.0]).unwrap();
    // Neg(Relu(Neg(x))) = -max(-x, 0) = min(x, 0)
    assert_eq!(s.run([("x", x)]).unwrap()[0].as_tensor().unwrap().as_slice::<f32>().unwrap(), &[0.0, -2.0, 0.0, -4.0]);

    // The MatMul is real work and stays on `First`; the lone Relu still moves, so the Cpu
    // part is one partition instead of three.
    let s = g(true);
    let parts: Vec<(&str, usize)> = s.plan().partitions.iter().map(|p| (p.provider.as_str(), p.nodes.len())).collect();
    assert_eq!(parts, [("Cpu", 3), ("First", 1)], "{}", s.plan());
}

#[test]
fn the_cost_rule_moves_an_elementwise_only_partition_of_any_size_but_keeps_other_work() {
    // y = MatMul(chain(MatMul(x, w)), w): `First` takes the five-op chain between the products,
    // which only the Cpu provider runs.
    let g = |middle: &'static str| {
        let ops = ["Relu", "Neg", middle, "Sigmoid", "Tanh"];
        let names = ["c0", "c1", "c2", "c3", "c4", "c5"];
        let mut nodes = vec![node("MatMul", "mm1", &["x", "w"], &["c0"])];
        for (i, op) in ops.iter().enumerate() {
            nodes.push(node(op, &format!("e{i}"), &[names[i]], &[names[i + 1]]));
        }
        nodes.push(node("MatMul", "mm2", &["c5", "w"], &["y"]));
        let mut graph = onnx::GraphProto {
            name: Some("cost5".into()),
            node: nodes,
            input: vec![value_info("x", 1, &[2, 2])],
            output: vec![value_info("y", 1, &[2, 2])],
            ..Default::default()
        };
        graph.initializer.push(f32_tensor("w", &[2, 2], &[1.0, 0.0, 0.0, 1.0]));
        let first =
            Only { name: "First", ops: &["Relu", "Neg", "Abs", "Softmax", "Sigmoid", "Tanh"], log: Default::default() };
        Runtime::from_bytes(encode(&model(graph, 17)))
            .unwrap()
            .providers([Provider::new(first), vinort::Cpu::default().into()])
            .build()
            .unwrap()
    };
    let parts = |s: &vinort::Session| -> Vec<(String, usize)> {
        s.plan().partitions.iter().map(|p| (p.provider.clone(), p.nodes.len())).collect()
    };
    // Five elementwise ops: more than MIN_CHEAP_PARTITION, yet not worth two boundaries.
    let s = g("Abs");
    assert_eq!(parts(&s), [("Cpu".to_string(), 7)], "{}", s.plan());
    let x = Tensor::from_vec(&[2, 2], vec![1f32, -2.0, 3.0, -4.0]).unwrap();
    let want: Vec<f32> =
        [1f32, -2.0, 3.0, -4.0].iter().map(|v| (1.0 / (1.0 + (-(-v.max(0.0)).abs()).exp())).tanh()).collect();
    let got = s.run([("x", x)]).unwrap()[0].as_tensor().unwrap().to_vec::<f32>().unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-6, "{got:?} vs {want:?}");
    }
    // With a Softmax among them the partition is more than elementwise work: it stays.
    let s = g("Softmax");
    let want = [("Cpu".to_string(), 1), ("First".to_string(), 5), ("Cpu".to_string(), 1)];
    assert_eq!(parts(&s), want, "{}", s.plan());
}

/// A provider with a whole-model path: it would refuse `Neg` node by node (as a single-node
/// probe might), but compiles the whole model unless told it must split it.
#[derive(Debug)]
struct WholeFirst {
    split: Option<&'static str>,
    asked: Arc<Mutex<usize>>,
}

impl ExecutionProvider for WholeFirst {
    fn name(&self) -> String {
        "Whole".into()
    }
    fn capability(&self, model: &Model, offered: &[NodeIndex]) -> vinort::ir::Result<Capability> {
        *self.asked.lock().unwrap() += 1;
        Only { name: "Whole", ops: &["Relu", "Add"], log: Log::default() }.capability(model, offered)
    }
    fn compile(&self, model: &Model, part: &PartitionDef) -> vinort::ir::Result<Box<dyn CompiledPartition>> {
        vinort_cpu::CpuProvider::default().compile(model, part)
    }
    fn compile_whole(&self, model: &Model, part: &PartitionDef) -> vinort::ir::Result<vinort::ir::WholeModel> {
        Ok(match self.split {
            Some(why) => vinort::ir::WholeModel::Split(why.into()),
            None => vinort::ir::WholeModel::Compiled(self.compile(model, part)?, "compiled it whole".into()),
        })
    }
}

#[test]
fn the_first_provider_compiles_the_whole_model_before_any_per_node_question() {
    let asked = Arc::new(Mutex::new(0));
    let first = WholeFirst { split: None, asked: asked.clone() };
    let s = Runtime::from_bytes(diamond()).unwrap().providers([Provider::new(first), vinort::Cpu::default().into()]);
    let s = s.build().unwrap();
    let plan = s.plan();
    assert_eq!(*asked.lock().unwrap(), 0, "no per-node capability question when the whole model compiles");
    assert_eq!(plan.partitions.len(), 1, "{plan}");
    assert_eq!(plan.partitions[0].provider, "Whole");
    assert_eq!(plan.partitions[0].nodes.len(), 5);
    assert!(plan.partitions[0].def.whole_graph);
    assert!(plan.refusals.is_empty(), "{plan}");
    assert_eq!(plan.path, "whole model: Whole compiled it whole");
    assert!(plan.to_string().starts_with("path: whole model: Whole"), "{plan}");
    let xs = [1.0f32, -2.0, 3.0, -4.0, 5.0, -6.0];
    let out = s.run([("x", vinort::TensorRef::from_slice(&[2, 3], &xs).unwrap())]).unwrap();
    assert_eq!(out[0].as_tensor().unwrap().as_slice::<f32>().unwrap(), &[1.0, 0.0, 3.0, 0.0, 5.0, 0.0]);

    // When it must split, the per-node path runs and the plan says why.
    let first = WholeFirst { split: Some("refuses Neg in any context"), asked: asked.clone() };
    let s = Runtime::from_bytes(diamond()).unwrap().providers([Provider::new(first), vinort::Cpu::default().into()]);
    let s = s.build().unwrap();
    let plan = s.plan();
    assert_eq!(*asked.lock().unwrap(), 1);
    assert_eq!(plan.path, "split: Whole refuses Neg in any context");
    assert!(plan.refusals.iter().any(|r| r.node == "b" && r.reason.contains("only runs")), "{plan}");

    // A provider without a whole-model path is asked node by node.
    let s = Runtime::from_bytes(diamond()).unwrap().build().unwrap();
    assert_eq!(s.plan().path, "split: node by node (Cpu has no whole-model path)");
}

/// [`Only`] declaring OpenVINO's cost profile on a CPU: 20 µs per partition, heavy ops 1.3x.
#[derive(Debug)]
struct Priced(Only);

impl ExecutionProvider for Priced {
    fn name(&self) -> String {
        self.0.name()
    }
    fn capability(&self, model: &Model, offered: &[NodeIndex]) -> vinort::ir::Result<Capability> {
        self.0.capability(model, offered)
    }
    fn compile(&self, model: &Model, part: &PartitionDef) -> vinort::ir::Result<Box<dyn CompiledPartition>> {
        self.0.compile(model, part)
    }
    fn cost_profile(&self) -> Option<vinort::ir::CostProfile> {
        Some(vinort::ir::CostProfile { per_partition_us: 20.0, heavy_speed: 1.3 })
    }
}

/// y = MatMul(Neg(MatMul(x, w)), w) for x of [rows, k] and w of [k, k], the Neg on Cpu only.
fn sandwich(rows: usize, k: usize) -> vinort::SessionBuilder {
    let mut graph = onnx::GraphProto {
        name: Some("sandwich".into()),
        node: vec![
            node("MatMul", "mm1", &["x", "w"], &["a"]),
            node("Neg", "neg", &["a"], &["b"]),
            node("MatMul", "mm2", &["b", "w"], &["y"]),
        ],
        input: vec![value_info("x", 1, &[rows as i64, k as i64])],
        output: vec![value_info("y", 1, &[rows as i64, k as i64])],
        ..Default::default()
    };
    let w: Vec<f32> = (0..k * k).map(|i| if i % (k + 1) == 0 { 1.0 } else { 0.0 }).collect();
    graph.initializer.push(f32_tensor("w", &[k as i64, k as i64], &w));
    let first = Priced(Only { name: "First", ops: &["MatMul"], log: Arc::new(Mutex::new(vec![])) });
    Runtime::from_bytes(encode(&model(graph, 17)))
        .unwrap()
        .providers([Provider::new(first), vinort::Cpu::default().into()])
}

fn providers_of(s: &vinort::Session) -> Vec<String> {
    s.plan().partitions.iter().map(|p| p.provider.clone()).collect()
}

#[test]
fn the_cost_model_gives_a_region_to_the_provider_it_is_cheaper_on() {
    // Two 4x4 products: 128 multiply-adds gain nothing against a 20 µs hand-off each, so the
    // whole model runs as one Cpu partition, and the plan says why.
    let s = sandwich(4, 4).build().unwrap();
    assert_eq!(providers_of(&s), ["Cpu"], "{}", s.plan());
    let r = s.plan().refusals.iter().find(|r| r.node == "mm1" && r.provider == "First").expect("refusal");
    assert!(r.reason.starts_with("cost model: 1 node(s)") && r.reason.contains("Cpu runs them"), "{}", r.reason);
    let x = Tensor::from_vec(&[4, 4], (0..16).map(|i| i as f32).collect()).unwrap();
    let y = s.run([("x", x)]).unwrap();
    let want: Vec<f32> = (0..16).map(|i| -(i as f32)).collect();
    assert_eq!(y[0].as_tensor().unwrap().as_slice::<f32>().unwrap(), want.as_slice());

    // Off (by the builder or by the session config entry), the plain rule keeps the products
    // on First: three partitions.
    let off = sandwich(4, 4).cost_model(false).build().unwrap();
    assert_eq!(providers_of(&off), ["First", "Cpu", "First"], "{}", off.plan());
    let off = sandwich(4, 4).config_entry("session.cost_model", "off").build().unwrap();
    assert_eq!(providers_of(&off), ["First", "Cpu", "First"]);
    match sandwich(4, 4).config_entry("session.cost_model", "maybe").build() {
        Err(vinort::Error::Config(m)) => assert!(m.contains("session.cost_model") && m.contains("maybe"), "{m}"),
        other => panic!("expected a config error, got {:?}", other.map(|_| ())),
    }

    // Two [64, 512] x [512, 512] products: 16.8 M multiply-adds each, about 840 µs at the Cpu
    // rate, of which First saves about 190 µs: each stays on First.
    let s = sandwich(64, 512).build().unwrap();
    assert_eq!(providers_of(&s), ["First", "Cpu", "First"], "{}", s.plan());
}
