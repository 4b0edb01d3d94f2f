//! The OpenVINO provider on this machine's CPU (OpenVINO from PyPI, found by the library
//! search). CI installs OpenVINO; these tests fail — they do not skip — when it is missing.
//!
//! Tests of split plans build with `cost_model(false)`: their models are far too small for an
//! OpenVINO partition to pay for its hand-off, and the cost model would run them on Cpu alone.

mod common;

use common::*;
use vinort::openvino::Precision;
use vinort::{Cpu, OpenVino, Provider, Runtime, Session};

fn ov_session(name: &str) -> Session {
    Runtime::load(model_dir(name).join("model.onnx"))
        .unwrap()
        .providers([OpenVino::cpu().precision(Precision::Fp32).error_on_failure(), Cpu::default().into()])
        .build()
        .unwrap()
}

#[test]
fn openvino_is_found_and_reports_its_version_and_cpu() {
    assert!(OpenVino::is_available(), "OpenVINO must be installed (python3 -m pip install openvino==2026.4.1)");
    let (version, devices) = vinort::openvino::devices().unwrap();
    assert!(version.starts_with("2026."), "{version}");
    assert!(devices.iter().any(|(d, _)| d == "CPU"), "{devices:?}");
}

#[test]
fn sample_models_run_as_one_openvino_partition_and_match_the_reference() {
    for name in ["mobilenetv2_tiny", "bert_tiny"] {
        let s = ov_session(name);
        let plan = s.plan();
        assert_eq!(plan.partitions.len(), 1, "{name}: {plan}");
        let p = &plan.partitions[0];
        assert_eq!(p.provider, "OpenVino(CPU)", "{name}: {plan}");
        assert!(p.def.whole_graph);
        assert!(p.details.contains("compiled from memory, weights by address"), "{}", p.details);
        // FP32 really is f32 on this bf16-capable CPU.
        assert!(p.details.contains("INFERENCE_PRECISION_HINT=f32"), "{}", p.details);
        check_sample(&s, name);
    }
}

#[test]
fn outputs_the_caller_dropped_are_reused_and_held_ones_are_never_overwritten() {
    let s = ov_session("mobilenetv2_tiny");
    let data = model_dir("mobilenetv2_tiny").join("test_data_set_0");
    let (name, x) = read_pbs(&data, "input").remove(0);
    let (_, want) = read_pbs(&data, "output").remove(0);
    let other =
        vinort::Tensor::from_vec(x.shape(), x.to_vec::<f32>().unwrap().iter().map(|v| 0.5 - v).collect()).unwrap();
    let run = |t: &vinort::Tensor| s.run([(name.as_str(), t)]).unwrap().into_values().remove(0).into_tensor().unwrap();
    let a = run(&x);
    let a_bits = a.to_vec::<f32>().unwrap();
    // `a` is still held: the next run must write somewhere else.
    let b = run(&other);
    assert_ne!(a.data_ptr(), b.data_ptr());
    assert_eq!(a.to_vec::<f32>().unwrap(), a_bits, "a held output was overwritten by a later run");
    assert_ne!(b.to_vec::<f32>().unwrap(), a_bits, "the second input gives other logits");
    // Once the caller drops an output, the request writes into the same buffer again.
    let b_ptr = b.data_ptr();
    drop(b);
    let c = run(&x);
    assert_eq!(c.data_ptr(), b_ptr, "the dropped output's buffer was not reused");
    assert_eq!(c.to_vec::<f32>().unwrap(), a_bits);
    assert_close("output", &vinort::Value::Tensor(c), &want, 1e-4, 1e-6);
}

#[test]
fn eight_threads_on_an_openvino_session_agree() {
    let s = ov_session("bert_tiny");
    let data = model_dir("bert_tiny").join("test_data_set_0");
    let inputs = read_pbs(&data, "input");
    let bits = |o: &vinort::Outputs| -> Vec<Vec<u32>> {
        o.iter()
            .map(|(_, v)| v.as_tensor().unwrap().as_slice::<f32>().unwrap().iter().map(|f| f.to_bits()).collect())
            .collect()
    };
    let want = bits(&s.run(inputs.iter().map(|(n, t)| (n.as_str(), t))).unwrap());
    std::thread::scope(|scope| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| {
                    (0..5)
                        .map(|_| bits(&s.run(inputs.iter().map(|(n, t)| (n.as_str(), t))).unwrap()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in hs {
            for got in h.join().unwrap() {
                assert_eq!(got, want);
            }
        }
    });
}

#[test]
fn options_reach_openvino_and_are_read_back() {
    let s = Runtime::load(model_dir("mobilenetv2_tiny").join("model.onnx"))
        .unwrap()
        .providers([
            OpenVino::from_key_values([
                ("device_type", "CPU"),
                ("precision", "FP32"),
                ("num_streams", "2"),
                ("num_of_threads", "2"),
            ])
            .unwrap()
            .error_on_failure(),
            Cpu::default().into(),
        ])
        .build()
        .unwrap();
    let d = &s.plan().partitions[0].details;
    assert!(
        d.contains("NUM_STREAMS=2")
            && d.contains("INFERENCE_NUM_THREADS=2")
            && d.contains("INFERENCE_PRECISION_HINT=f32"),
        "{d}"
    );
    // Two streams: OpenVINO's optimal number of requests, and the pool's bound, is two.
    assert!(d.contains("; 2 infer request(s);"), "{d}");
    check_sample(&s, "mobilenetv2_tiny");
}

#[test]
fn bad_options_are_errors_naming_the_problem() {
    let bad = [
        ("device_type", "TPU", "TPU"),
        ("device_type", "HETERO:CPU", "HETERO"),
        ("reshape_input", "x[1,3,5..2]", "5..2"),
        ("load_config", "{not json", "load_config"),
        ("precision", "FP64", "FP64"),
        ("num_streams", "zero", "num_streams"),
    ];
    for (k, v, want) in bad {
        let e = OpenVino::from_key_values([(k, v)]).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(want), "{k}={v}: {e}");
    }
}

#[test]
fn a_device_that_is_not_here_is_skipped_with_a_reason_or_fails_on_request() {
    let path = model_dir("mobilenetv2_tiny").join("model.onnx");
    let s = Runtime::load(&path)
        .unwrap()
        .providers([OpenVino::device("GPU").unwrap().into(), Cpu::default().into()])
        .build()
        .unwrap();
    let w = s.plan().warnings.join("\n");
    assert!(w.contains("GPU") && w.contains("not available"), "{w}");
    assert!(s.plan().partitions.iter().all(|p| p.provider == "Cpu"));
    let e = Runtime::load(&path)
        .unwrap()
        .providers([OpenVino::device("NPU").unwrap().error_on_failure(), Provider::from(Cpu::default())])
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("NPU") && e.contains("not available"), "{e}");
}

/// `(provider, input pointers, output pointers)` per partition run.
type Log = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<usize>, Vec<usize>)>>>;

/// Records the data pointers entering and leaving each partition of the wrapped provider.
#[derive(Debug)]
struct Recorder<P> {
    inner: P,
    log: Log,
}

struct Recorded {
    inner: Box<dyn vinort::ir::CompiledPartition>,
    name: String,
    log: Log,
}

impl vinort::ir::CompiledPartition for Recorded {
    fn run(&self, inputs: &[&vinort::Value], ctx: &vinort::ir::RunContext) -> vinort::ir::Result<Vec<vinort::Value>> {
        let ptr = |v: &vinort::Value| v.as_tensor().map(|t| t.data_ptr() as usize).unwrap_or(0);
        let out = self.inner.run(inputs, ctx)?;
        self.log.lock().unwrap().push((
            self.name.clone(),
            inputs.iter().map(|v| ptr(v)).collect(),
            out.iter().map(ptr).collect(),
        ));
        Ok(out)
    }
}

impl<P: vinort::ir::ExecutionProvider> vinort::ir::ExecutionProvider for Recorder<P> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn start(&self) -> vinort::ir::Result<()> {
        self.inner.start()
    }
    fn capability(
        &self,
        m: &vinort::Model,
        offered: &[vinort::ir::NodeIndex],
    ) -> vinort::ir::Result<vinort::ir::Capability> {
        self.inner.capability(m, offered)
    }
    fn compile(
        &self,
        m: &vinort::Model,
        p: &vinort::ir::PartitionDef,
    ) -> vinort::ir::Result<Box<dyn vinort::ir::CompiledPartition>> {
        Ok(Box::new(Recorded { inner: self.inner.compile(m, p)?, name: self.inner.name(), log: self.log.clone() }))
    }
}

#[test]
fn an_op_openvino_gets_wrong_splits_the_cnn_and_every_boundary_is_zero_copy() {
    let log = std::sync::Arc::new(std::sync::Mutex::new(vec![]));
    let ov = vinort::openvino::OpenVinoProvider::new(
        vinort::openvino::OpenVinoOptions::default().precision(Precision::Fp32),
        None,
    );
    let cpu = vinort_cpu::CpuProvider::default();
    let s = Runtime::load(model_dir("partition_cnn").join("model.onnx"))
        .unwrap()
        .providers([
            Provider::new(Recorder { inner: ov, log: log.clone() }).error_on_failure(),
            Provider::new(Recorder { inner: cpu, log: log.clone() }),
        ])
        .cost_model(false)
        .build()
        .unwrap();
    let plan = s.plan();
    let providers: Vec<&str> = plan.partitions.iter().map(|p| p.provider.as_str()).collect();
    assert_eq!(providers, ["OpenVino(CPU)", "Cpu", "OpenVino(CPU)"], "{plan}");
    assert_eq!(plan.partitions[1].nodes, ["softmax_flattening"]);
    let refusal = plan.refusals.iter().find(|r| r.node == "softmax_flattening").expect("the refusal is reported");
    assert!(refusal.reason.contains("Softmax-11") && refusal.reason.contains("instead of"), "{}", refusal.reason);

    let data = model_dir("partition_cnn").join("test_data_set_0");
    let (name, x) = read_pbs(&data, "input").remove(0);
    let raw = x.to_vec::<f32>().unwrap();
    let shape = x.shape().to_vec();
    let out = s.run([(name.as_str(), vinort::TensorRef::from_slice(&shape, &raw).unwrap())]).unwrap();
    let (_, want) = read_pbs(&data, "output").remove(0);
    assert_close("output", &out[0], &want, 1e-4, 1e-6);

    let log = log.lock().unwrap();
    assert_eq!(log.len(), 3);
    // The caller's buffer goes into OpenVINO as a host pointer, untouched.
    assert_eq!(log[0].1, vec![raw.as_ptr() as usize]);
    // OpenVINO wrote into the buffer the Cpu partition then reads, and back again.
    assert_eq!(log[1].1[0], log[0].2[0]);
    assert_eq!(log[2].1[0], log[1].2[0]);
    // The caller receives the buffer OpenVINO wrote last.
    assert_eq!(out[0].as_tensor().unwrap().data_ptr() as usize, log[2].2[0]);
}

/// y = Relu(x) with x of shape [N, 4] (N symbolic).
fn dynamic_relu() -> Vec<u8> {
    use vinort::ir::proto::onnx;
    let mut x = value_info("x", 1, &[0, 4]);
    if let Some(onnx::type_proto::Value::TensorType(t)) = x.r#type.as_mut().and_then(|t| t.value.as_mut()) {
        t.shape.as_mut().unwrap().dim[0].value = Some(onnx::tensor_shape_proto::dimension::Value::DimParam("N".into()));
    }
    let g = onnx::GraphProto {
        name: Some("dyn".into()),
        node: vec![node("Relu", "relu", &["x"], &["y"])],
        input: vec![x],
        output: vec![value_info("y", 1, &[])],
        ..Default::default()
    };
    encode(&model(g, 17))
}

#[test]
fn reshape_input_bounds_a_dynamic_input_and_dynamic_outputs_are_taken_over_safely() {
    let ov = OpenVino::from_key_values([("precision", "FP32"), ("reshape_input", "x[1..8,4]")]).unwrap();
    let s = Runtime::from_bytes(dynamic_relu())
        .unwrap()
        .providers([ov.error_on_failure(), Cpu::default().into()])
        .build()
        .unwrap();
    let d = &s.plan().partitions[0].details;
    assert!(d.contains("x{1..8,4}"), "the bounded shape reached OpenVINO (its notation): {d}");
    let run = |n: usize| {
        let x = vinort::Tensor::from_vec(&[n, 4], (0..4 * n).map(|i| i as f32 - 5.0).collect()).unwrap();
        s.run([("x", x)]).unwrap().into_values().remove(0).into_tensor().unwrap()
    };
    let first = run(3);
    let expect = |n: usize| (0..4 * n).map(|i| (i as f32 - 5.0).max(0.0)).collect::<Vec<f32>>();
    assert_eq!(first.shape(), &[3, 4]);
    assert_eq!(first.to_vec::<f32>().unwrap(), expect(3));
    // Later runs must not write into the output a caller already holds.
    let second = run(5);
    let third = run(3);
    assert_eq!(second.to_vec::<f32>().unwrap(), expect(5));
    assert_eq!(third.to_vec::<f32>().unwrap(), expect(3));
    assert_eq!(first.to_vec::<f32>().unwrap(), expect(3));
    assert_ne!(first.data_ptr(), third.data_ptr());
    // Outside the bounds OpenVINO refuses, and the error says so.
    let x = vinort::Tensor::from_vec(&[9, 4], vec![0f32; 36]).unwrap();
    assert!(s.run([("x", x)]).is_err());
}

#[test]
fn a_second_session_with_the_same_cache_dir_loads_from_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let session = || {
        Runtime::load(model_dir("mobilenetv2_tiny").join("model.onnx"))
            .unwrap()
            .providers([OpenVino::cpu().precision(Precision::Fp32).cache_dir(cache.path()).error_on_failure()])
            .build()
            .unwrap()
    };
    let cold = session();
    let d = &cold.plan().partitions[0].details;
    assert!(d.contains("LOADED_FROM_CACHE=NO") || d.contains("LOADED_FROM_CACHE=false"), "{d}");
    let warm = session();
    let d = &warm.plan().partitions[0].details;
    assert!(d.contains("LOADED_FROM_CACHE=YES") || d.contains("LOADED_FROM_CACHE=true"), "{d}");
    check_sample(&warm, "mobilenetv2_tiny");
}

#[test]
fn partitions_of_a_split_model_use_the_cache_dir_through_partition_files() {
    let cache = tempfile::tempdir().unwrap();
    let session = || {
        Runtime::load(model_dir("partition_cnn").join("model.onnx"))
            .unwrap()
            .providers([
                OpenVino::cpu().precision(Precision::Fp32).cache_dir(cache.path()).error_on_failure(),
                Cpu::default().into(),
            ])
            .cost_model(false)
            .build()
            .unwrap()
    };
    let details = |s: &Session| -> Vec<String> {
        s.plan().partitions.iter().filter(|p| p.provider.starts_with("OpenVino")).map(|p| p.details.clone()).collect()
    };
    let from_file = "compiled from its partition file in cache_dir";
    let cold = session();
    for d in details(&cold) {
        assert!(d.contains(from_file) && d.contains("LOADED_FROM_CACHE=NO"), "{d}");
        assert!(d.contains("INFERENCE_PRECISION_HINT=f32"), "{d}");
    }
    check_sample(&cold, "partition_cnn");
    let mut files: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("vinort-partition-") && name.ends_with(".onnx")
        })
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "one partition file per OpenVINO partition: {files:?}");
    let warm = session();
    for d in details(&warm) {
        assert!(d.contains(from_file) && d.contains("LOADED_FROM_CACHE=YES"), "{d}");
        assert!(d.contains("INFERENCE_PRECISION_HINT=f32"), "{d}");
    }
    check_sample(&warm, "partition_cnn");
    // A partition file that no longer matches the checksum taken when it was written is not
    // trusted: it is written anew before OpenVINO reads it.
    let good = std::fs::read(&files[0]).unwrap();
    std::fs::write(&files[0], b"not an onnx model").unwrap();
    let again = session();
    for d in details(&again) {
        assert!(d.contains(from_file), "{d}");
    }
    check_sample(&again, "partition_cnn");
    assert_eq!(std::fs::read(&files[0]).unwrap(), good);
}

#[test]
fn layout_cache_dir_and_load_config_reach_openvino() {
    let cache = tempfile::tempdir().unwrap();
    let ov = OpenVino::from_key_values([
        ("precision", "FP32"),
        ("layout", "input[NCHW]"),
        ("load_config", r#"{"CPU": {"INFERENCE_NUM_THREADS": "1", "NOT_A_PROPERTY": "x"}}"#),
    ])
    .unwrap()
    .cache_dir(cache.path());
    let s = Runtime::load(model_dir("mobilenetv2_tiny").join("model.onnx"))
        .unwrap()
        .providers([ov.error_on_failure(), Cpu::default().into()])
        .build()
        .unwrap();
    let d = &s.plan().partitions[0].details;
    assert!(d.contains("INFERENCE_NUM_THREADS=1"), "{d}");
    let w = s.plan().warnings.join("\n");
    assert!(w.contains("NOT_A_PROPERTY"), "unknown load_config keys are reported: {w}");
    assert!(std::fs::read_dir(cache.path()).unwrap().next().is_some(), "OpenVINO wrote its cache");
    check_sample(&s, "mobilenetv2_tiny");

    // A layout of the wrong rank is the user's error and names the option.
    let bad = OpenVino::from_key_values([("layout", "x[NCHW]")]).unwrap();
    let e =
        Runtime::from_bytes(dynamic_relu()).unwrap().providers([bad.error_on_failure(), Cpu::default().into()]).build();
    let e = e.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("layout x[NCHW]"), "{e}");
}

#[test]
fn reshape_input_and_layout_names_must_be_model_inputs() {
    let build = |key: &str, value: &str| {
        let ov = OpenVino::from_key_values([(key, value)]).unwrap();
        Runtime::load(model_dir("mobilenetv2_tiny").join("model.onnx"))
            .unwrap()
            .providers([ov.into(), Cpu::default().into()])
            .build()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    for (key, value) in [("reshape_input", "data[1,3,32,32]"), ("layout", "data[NCHW]")] {
        let e = build(key, value);
        assert!(e.contains(&format!("{key} names 'data'")) && e.contains("'input'"), "{key}: {e}");
    }
    // An output's layout is refused, not silently dropped.
    let e = build("layout", "probabilities[NC]");
    assert!(e.contains("layout probabilities[NC] names an output"), "{e}");
    // A name that is an input is accepted.
    assert_eq!(build("layout", "input[NCHW]"), "");
}

#[test]
fn disable_dynamic_shapes_compiles_per_shape_with_a_bounded_cache() {
    let ov = OpenVino::from_key_values([("precision", "FP32"), ("disable_dynamic_shapes", "true")]).unwrap();
    let s = Runtime::from_bytes(dynamic_relu())
        .unwrap()
        .providers([ov.error_on_failure(), Cpu::default().into()])
        .build()
        .unwrap();
    assert!(s.plan().partitions[0].details.contains("compiled per input shape"), "{}", s.plan());
    // More distinct shapes than the cache holds, then the first again (recompiled after eviction).
    for n in (1..=10).chain([1, 3]) {
        let x = vinort::Tensor::from_vec(&[n, 4], (0..4 * n).map(|i| 2.0 - i as f32).collect()).unwrap();
        let y = s.run([("x", x)]).unwrap().into_values().remove(0).into_tensor().unwrap();
        assert_eq!(y.shape(), &[n, 4]);
        assert_eq!(y.to_vec::<f32>().unwrap(), (0..4 * n).map(|i| (2.0 - i as f32).max(0.0)).collect::<Vec<_>>());
    }
}

/// Conv -> Relu -> MaxPool (values and indices) -> MaxUnpool -> Conv -> Relu on 1x4x8x8.
fn conv_pool_unpool_conv() -> Vec<u8> {
    use vinort::ir::proto::onnx;
    let weights = |name: &str, seed: f32| {
        let data: Vec<f32> = (0..4 * 4 * 9).map(|i| ((i as f32 * 0.37 + seed).sin()) * 0.3).collect();
        f32_tensor(name, &[4, 4, 3, 3], &data)
    };
    let conv = |name: &str, x: &str, w: &str, y: &str| {
        let mut n = node("Conv", name, &[x, w], &[y]);
        n.attribute.push(vinort::ir::proto::build::attr::ints("pads", &[1, 1, 1, 1]));
        n
    };
    let mut pool = node("MaxPool", "pool", &["r1"], &["p", "idx"]);
    pool.attribute.extend([
        vinort::ir::proto::build::attr::ints("kernel_shape", &[2, 2]),
        vinort::ir::proto::build::attr::ints("strides", &[2, 2]),
    ]);
    let mut unpool = node("MaxUnpool", "unpool", &["p", "idx"], &["u"]);
    unpool.attribute.extend([
        vinort::ir::proto::build::attr::ints("kernel_shape", &[2, 2]),
        vinort::ir::proto::build::attr::ints("strides", &[2, 2]),
    ]);
    let g = onnx::GraphProto {
        name: Some("unpool".into()),
        node: vec![
            conv("conv1", "x", "w1", "c1"),
            node("Relu", "relu1", &["c1"], &["r1"]),
            pool,
            unpool,
            conv("conv2", "u", "w2", "c2"),
            node("Relu", "relu2", &["c2"], &["y"]),
        ],
        initializer: vec![weights("w1", 0.1), weights("w2", 1.7)],
        input: vec![value_info("x", 1, &[1, 4, 8, 8])],
        output: vec![value_info("y", 1, &[1, 4, 8, 8])],
        ..Default::default()
    };
    encode(&model(g, 17))
}

#[test]
fn an_op_openvino_lacks_runs_on_cpu_and_shape_inference_keeps_the_rest_on_openvino() {
    // OpenVINO 2026.4 has no MaxUnpool. Its output shape must be inferred, or every node after
    // it would fall to Cpu (a value of unknown type cannot cross into OpenVINO).
    let s = Runtime::from_bytes(conv_pool_unpool_conv())
        .unwrap()
        .providers([OpenVino::cpu().precision(Precision::Fp32).error_on_failure(), Cpu::default().into()])
        .cost_model(false)
        .build()
        .unwrap();
    let plan = s.plan();
    let shape: Vec<(&str, usize)> = plan.partitions.iter().map(|p| (p.provider.as_str(), p.nodes.len())).collect();
    // The MaxPool goes to Cpu too: it outputs indices, which OpenVINO computes on a slow
    // reference path (crates/vinort-openvino/src/slow.rs).
    assert_eq!(shape, [("OpenVino(CPU)", 2), ("Cpu", 2), ("OpenVino(CPU)", 2)], "{plan}");
    let text = plan.to_string();
    assert!(text.contains("slow path: OpenVINO 2026.4's CPU plugin runs MaxPool with the Indices output"), "{text}");
    let cpu_only =
        Runtime::from_bytes(conv_pool_unpool_conv()).unwrap().providers([Cpu::default().into()]).build().unwrap();
    let x =
        vinort::Tensor::from_vec(&[1, 4, 8, 8], (0..256).map(|i| ((i * 7919) % 251) as f32 / 125.0 - 1.0).collect())
            .unwrap();
    let got = s.run([("x", &x)]).unwrap();
    let want = cpu_only.run([("x", &x)]).unwrap();
    let want = want["y"].as_tensor().unwrap();
    assert!(want.to_vec::<f32>().unwrap().iter().any(|v| *v > 0.0), "the test input reaches the output");
    assert_close("y", &got["y"], want, 1e-5, 1e-6);
}

#[test]
fn int64_constants_beyond_int32_run_on_cpu_and_stay_exact() {
    use vinort::ir::proto::onnx;
    // OpenVINO's CPU plugin computes int64 in int32 (Add(1, 2^40) gives -2147483648 there).
    let i64_tensor = |name: &str, v: &[i64]| onnx::TensorProto {
        name: Some(name.into()),
        dims: vec![v.len() as i64],
        data_type: Some(7),
        raw_data: Some(bytes::Bytes::from(v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())),
        ..Default::default()
    };
    let g = onnx::GraphProto {
        name: Some("wide".into()),
        node: vec![node("Add", "small", &["x", "one"], &["a"]), node("Add", "wide", &["a", "big"], &["y"])],
        initializer: vec![i64_tensor("one", &[1, 1]), i64_tensor("big", &[1 << 40, 5])],
        input: vec![value_info("x", 7, &[2])],
        output: vec![value_info("y", 7, &[2])],
        ..Default::default()
    };
    let s = Runtime::from_bytes(encode(&model(g, 17)))
        .unwrap()
        .providers([OpenVino::cpu().precision(Precision::Fp32).error_on_failure(), Cpu::default().into()])
        .build()
        .unwrap();
    let plan = s.plan().to_string();
    assert!(plan.contains("beyond int32"), "{plan}");
    let x = vinort::Tensor::from_vec(&[2], vec![0i64, 2]).unwrap();
    let y = s.run([("x", &x)]).unwrap().into_values().remove(0).into_tensor().unwrap();
    assert_eq!(y.to_vec::<i64>().unwrap(), [(1 << 40) + 1, 8]);
}
