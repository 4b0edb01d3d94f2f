//! The parts of `ort`'s API a typical program calls that vinort added for docs/migration.md:
//! dimension overrides (the declared type changes, every provider compiles the fixed size, a
//! run of another size is refused by name), profiling (ONNX Runtime's Chrome-trace file,
//! parsed back), ONNX Runtime's session config entries (honoured, or named in a warning),
//! outputs taken by name, `RunOptions::set_tag` and clearing a binding.
//!
//! Tests of split plans build with `cost_model(false)`: their models are far too small for an
//! OpenVINO partition to pay for its hand-off, and the cost model would run them on Cpu alone.

mod common;

use std::path::Path;

use common::*;
use vinort::ir::proto::build::dim;
use vinort::ir::proto::{build, onnx};
use vinort::openvino::Precision;
use vinort::{Cpu, Dim, EmbedMode, Error, OpenVino, Provider, RunOptions, Runtime, Session, Tensor, TensorRef};

fn ov_cpu() -> Vec<Provider> {
    vec![OpenVino::cpu().precision(Precision::Fp32).error_on_failure(), Cpu::default().into()]
}

/// `y = relu(x) + z`, with `x` and `z` declared `[batch, 4]` and `y` `[batch, 4]`.
fn batch_model() -> Vec<u8> {
    let dims = || [dim::named("batch"), dim::fixed(4)];
    let graph = onnx::GraphProto {
        name: Some("batch".into()),
        node: vec![node("Relu", "relu", &["x"], &["r"]), node("Add", "add", &["r", "z"], &["y"])],
        input: vec![build::tensor_info("x", 1, dims()), build::tensor_info("z", 1, dims())],
        output: vec![build::tensor_info("y", 1, dims())],
        ..Default::default()
    };
    encode(&model(graph, 17))
}

fn symbol_dims(ty: &vinort::ValueType) -> Vec<Dim> {
    ty.tensor_shape().expect("a tensor of known rank").to_vec()
}

#[test]
fn a_dimension_override_fixes_the_declared_inputs_and_refuses_other_sizes() {
    let free = Runtime::from_bytes(batch_model()).unwrap().build().unwrap();
    let batch = Dim::Symbol("batch".into());
    assert_eq!(symbol_dims(&free.inputs()[0].ty), [batch.clone(), Dim::Fixed(4)]);

    let s = Runtime::from_bytes(batch_model()).unwrap().dimension_override("batch", 3).build().unwrap();
    // Every input naming the symbol is fixed, and inference carries the size to the rest.
    for io in s.inputs().iter().chain(s.outputs()) {
        assert_eq!(symbol_dims(&io.ty), [Dim::Fixed(3), Dim::Fixed(4)], "{}", io.name);
    }
    let g = &s.model().graph;
    let r = g.value_id("r").unwrap();
    assert_eq!(g.value(r).ty.static_shape(), Some(vec![3, 4]));
    assert!(s.plan().warnings.is_empty(), "{:?}", s.plan().warnings);

    let x: Vec<f32> = (0..12).map(|i| i as f32 - 6.0).collect();
    let z = vec![0.5f32; 12];
    let out = s
        .run([("x", TensorRef::from_slice(&[3, 4], &x).unwrap()), ("z", TensorRef::from_slice(&[3, 4], &z).unwrap())])
        .unwrap();
    let want: Vec<f32> = x.iter().map(|v| v.max(0.0) + 0.5).collect();
    assert_eq!(out["y"].as_tensor().unwrap().as_slice::<f32>().unwrap(), want);

    // The free session takes any batch; the fixed one refuses 2, naming input, axis and size.
    let two = || Tensor::from_vec(&[2, 4], vec![1f32; 8]).unwrap();
    assert!(free.run([("x", two()), ("z", two())]).is_ok());
    let three = Tensor::from_vec(&[3, 4], vec![1f32; 12]).unwrap();
    match s.run([("x", two()), ("z", three)]) {
        Err(Error::Input { name, message }) => {
            assert_eq!(name, "x");
            assert!(message.contains("dimension 0 is fixed to 3"), "{message}");
            assert!(message.contains("dimension_override(\"batch\", 3)"), "{message}");
        }
        other => panic!("expected an input error, got {other:?}"),
    }

    // A name no input dim has changes nothing, and the plan says so.
    let s = Runtime::from_bytes(batch_model()).unwrap().dimension_override("seq", 7).build().unwrap();
    assert_eq!(symbol_dims(&s.inputs()[0].ty), [batch, Dim::Fixed(4)]);
    assert!(s.plan().warnings.iter().any(|w| w.contains("\"seq\"") && w.contains("no input dim")), "{}", s.plan());
}

#[test]
fn openvino_compiles_the_overridden_size_and_the_dynamic_one_without_it() {
    // OpenVINO's own description of its compiled inputs: what it was given, not what vinort
    // declares.
    let described = |s: &Session| {
        assert_eq!(s.plan().partitions.len(), 1, "{}", s.plan());
        assert!(s.plan().partitions[0].provider.starts_with("OpenVino"), "{}", s.plan());
        s.plan().partitions[0].details.clone()
    };
    let free = Runtime::from_bytes(batch_model()).unwrap().providers(ov_cpu()).build().unwrap();
    assert!(described(&free).contains("x{?,4}"), "{}", described(&free));
    let fixed = Runtime::from_bytes(batch_model()).unwrap().providers(ov_cpu()).dimension_override("batch", 3);
    let fixed = fixed.build().unwrap();
    assert!(described(&fixed).contains("x{3,4}"), "{}", described(&fixed));

    // A model file with `cache_dir`, where OpenVINO compiles a whole model from its file and a
    // partition from a partition file: a fixed session must compile neither the file's
    // dynamic declaration nor another size's partition file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("batch.onnx");
    std::fs::write(&path, batch_model()).unwrap();
    let cache = dir.path().join("cache");
    let session = |batch: Option<usize>| {
        let ov = OpenVino::cpu().precision(Precision::Fp32).cache_dir(&cache).error_on_failure();
        let b = Runtime::load(&path).unwrap().providers([ov, Cpu::default().into()]);
        match batch {
            Some(n) => b.dimension_override("batch", n),
            None => b,
        }
        .build()
        .unwrap()
    };
    let free = session(None);
    assert!(described(&free).contains("x{?,4}") && described(&free).contains("from the model file"));
    for n in [3, 5, 3] {
        let fixed = session(Some(n));
        assert!(described(&fixed).contains(&format!("x{{{n},4}}")), "{}", described(&fixed));
        assert!(!described(&fixed).contains("from the model file"), "{}", described(&fixed));
        let two = Tensor::from_vec(&[2, 4], vec![1f32; 8]).unwrap();
        assert!(matches!(fixed.run([("x", two.clone()), ("z", two)]), Err(Error::Input { .. })));
    }
}

/// The trace file's events, each checked to have ONNX Runtime's fields.
fn read_trace(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let events: Vec<serde_json::Value> = serde_json::from_str(&text).expect("a JSON list of events");
    for e in &events {
        for field in ["cat", "pid", "tid", "dur", "ts", "ph", "name", "args"] {
            assert!(e.get(field).is_some(), "event without '{field}': {e}");
        }
        assert_eq!(e["ph"], "X", "{e}");
        assert_eq!(e["pid"].as_u64(), Some(u64::from(std::process::id())), "{e}");
        assert!(e["ts"].is_u64() && e["dur"].is_u64() && e["tid"].is_u64(), "{e}");
    }
    events
}

fn named<'a>(events: &'a [serde_json::Value], name: &str) -> Vec<&'a serde_json::Value> {
    events.iter().filter(|e| e["name"] == name).collect()
}

/// Profiles `session` over `runs` tagged runs and checks the trace against its plan.
fn check_profile(s: &Session, prefix: &Path, feeds: &[(String, Tensor)], runs: usize) {
    let started = s.profiling_start_ns().expect("a profiled session");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    assert!(started <= now && now - started < 600_000_000_000, "profiling started at {started}, now {now}");
    for k in 0..runs {
        let options = RunOptions::new().with_tag(format!("run-{k}"));
        s.run_with_options(feeds.iter().map(|(n, t)| (n.as_str(), t)), &options).unwrap();
    }
    let path = s.end_profiling().unwrap();
    let file = path.file_name().unwrap().to_str().unwrap();
    let stem = prefix.file_name().unwrap().to_str().unwrap();
    // `<prefix>_YYYY-MM-DD_HH-MM-SS_mmm.json`, as ONNX Runtime 1.31 names it.
    let stamp = file.strip_prefix(&format!("{stem}_")).and_then(|f| f.strip_suffix(".json")).unwrap();
    assert_eq!(path.parent(), prefix.parent());
    assert_eq!(stamp.len(), 23, "{file}");
    assert!(stamp.chars().enumerate().all(|(i, c)| match i {
        4 | 7 | 13 | 16 => c == '-',
        10 | 19 => c == '_',
        _ => c.is_ascii_digit(),
    }));

    let events = read_trace(&path);
    assert_eq!(named(&events, "session_initialization").len(), 1);
    let model_runs = named(&events, "model_run");
    assert_eq!(model_runs.len(), runs);
    let tags: Vec<&str> = model_runs.iter().map(|e| e["args"]["run_tag"].as_str().unwrap()).collect();
    assert_eq!(tags, (0..runs).map(|k| format!("run-{k}")).collect::<Vec<_>>());
    let parts = &s.plan().partitions;
    for (i, p) in parts.iter().enumerate() {
        let ran = named(&events, &format!("partition_{i}_kernel_time"));
        assert_eq!(ran.len(), runs, "partition {i}");
        for e in ran {
            assert_eq!(e["cat"], "Node");
            assert_eq!(e["args"]["provider"], p.provider.as_str());
            assert_eq!(e["args"]["node_count"].as_u64(), Some(p.nodes.len() as u64));
            // Inside one of the runs (times are whole microseconds).
            let (ts, dur) = (e["ts"].as_u64().unwrap(), e["dur"].as_u64().unwrap());
            assert!(
                model_runs.iter().any(|r| {
                    let (rts, rdur) = (r["ts"].as_u64().unwrap(), r["dur"].as_u64().unwrap());
                    rts <= ts + 1 && ts + dur <= rts + rdur + 2
                }),
                "partition event outside every run: {e}"
            );
        }
    }
    // Every kernel of a Cpu partition: `<node>_kernel_time` with its op, inside a run of its
    // partition; every Cpu partition's run holds at least one.
    let kernels: Vec<_> = events
        .iter()
        .filter(|e| e["cat"] == "Node" && !e["name"].as_str().unwrap().starts_with("partition_"))
        .collect();
    let inside = |k: &serde_json::Value, p: &serde_json::Value| {
        let (ts, dur) = (k["ts"].as_u64().unwrap(), k["dur"].as_u64().unwrap());
        let (pts, pdur) = (p["ts"].as_u64().unwrap(), p["dur"].as_u64().unwrap());
        pts <= ts + 1 && ts + dur <= pts + pdur + 2
    };
    for k in &kernels {
        assert!(k["name"].as_str().unwrap().ends_with("_kernel_time"), "{k}");
        assert!(!k["args"]["op_name"].as_str().unwrap().is_empty(), "{k}");
        assert_eq!(k["args"]["provider"], "Cpu", "{k}");
        let in_cpu_partition = events
            .iter()
            .any(|p| p["args"]["op_name"] == "partition" && p["args"]["provider"] == "Cpu" && inside(k, p));
        assert!(in_cpu_partition, "kernel event outside every Cpu partition's run: {k}");
    }
    for (i, _) in parts.iter().enumerate().filter(|(_, p)| p.provider == "Cpu") {
        for e in named(&events, &format!("partition_{i}_kernel_time")) {
            assert!(kernels.iter().any(|k| inside(k, e)), "partition {i} ran no kernel: {e}");
        }
    }
    assert_eq!(events.len(), 1 + runs * (1 + parts.len()) + kernels.len());

    // Ended: nothing more is recorded, a second end is an error, runs go on.
    assert!(matches!(s.end_profiling(), Err(Error::Config(_))));
    s.run(feeds.iter().map(|(n, t)| (n.as_str(), t))).unwrap();
    assert_eq!(read_trace(&path).len(), events.len());
}

#[test]
fn profiling_writes_onnx_runtimes_trace_with_every_run_and_partition() {
    let dir = tempfile::tempdir().unwrap();
    let feeds = read_pbs(&model_dir("mobilenetv2_tiny").join("test_data_set_0"), "input");
    let prefix = dir.path().join("cpu");
    let s =
        Runtime::load(model_dir("mobilenetv2_tiny").join("model.onnx")).unwrap().profiling(&prefix).build().unwrap();
    check_profile(&s, &prefix, &feeds, 3);

    // Split across providers: one event per partition per run.
    let feeds = read_pbs(&model_dir("partition_cnn").join("test_data_set_0"), "input");
    let prefix = dir.path().join("split");
    let s = Runtime::load(model_dir("partition_cnn").join("model.onnx"))
        .unwrap()
        .providers(ov_cpu())
        .profiling(&prefix)
        .cost_model(false)
        .build()
        .unwrap();
    assert!(s.plan().partitions.len() > 1, "{}", s.plan());
    check_profile(&s, &prefix, &feeds, 2);

    let plain = Runtime::load(model_dir("mobilenetv2_tiny").join("model.onnx")).unwrap().build().unwrap();
    assert!(matches!(plain.end_profiling(), Err(Error::Config(_))));
    assert_eq!(plain.profiling_start_ns(), None);
}

#[test]
fn disabling_the_cpu_fallback_refuses_cpu_and_leaves_unsupported_nodes_unsupported() {
    let mobilenet = model_dir("mobilenetv2_tiny").join("model.onnx");
    let no_fallback = |path: &Path| Runtime::load(path).unwrap().config_entry("session.disable_cpu_ep_fallback", "1");
    match no_fallback(&mobilenet).providers([Cpu::default().into()]).build() {
        Err(Error::Config(m)) => assert!(m.contains("session.disable_cpu_ep_fallback"), "{m}"),
        other => panic!("expected a configuration error, got {:?}", other.map(|s| s.plan().clone())),
    }
    match no_fallback(&mobilenet).build() {
        Err(Error::Config(m)) => assert!(m.contains("no provider registered"), "{m}"),
        other => panic!("expected a configuration error, got {:?}", other.map(|s| s.plan().clone())),
    }
    let ov = || [OpenVino::cpu().precision(Precision::Fp32).error_on_failure()];
    let s = no_fallback(&mobilenet).providers(ov()).build().unwrap();
    assert!(s.plan().partitions.iter().all(|p| p.provider.starts_with("OpenVino")), "{}", s.plan());
    // The unknown op has nobody to run it.
    match no_fallback(&model_dir("unknown_op").join("model.onnx")).providers(ov()).build() {
        Err(Error::UnsupportedNodes(nodes)) => assert!(!nodes.is_empty()),
        other => panic!("expected unsupported nodes, got {:?}", other.map(|s| s.plan().clone())),
    }
    // "0" is ONNX Runtime's default, anything but "0" and "1" an error.
    assert!(Runtime::load(&mobilenet).unwrap().config_entry("session.disable_cpu_ep_fallback", "0").build().is_ok());
    match Runtime::load(&mobilenet).unwrap().config_entry("session.disable_cpu_ep_fallback", "yes").build() {
        Err(Error::Config(m)) => assert!(m.contains("\"yes\""), "{m}"),
        other => panic!("expected a configuration error, got {:?}", other.map(|s| s.plan().clone())),
    }
}

#[test]
fn ep_context_entries_save_a_compiled_context() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("mobilenet.onnx");
    std::fs::copy(model_dir("mobilenetv2_tiny").join("model.onnx"), &source).unwrap();
    let feeds = read_pbs(&model_dir("mobilenetv2_tiny").join("test_data_set_0"), "input");
    let run = |s: &Session| {
        let out = s.run(feeds.iter().map(|(n, t)| (n.as_str(), t))).unwrap();
        out["probabilities"].as_tensor().unwrap().as_bytes().to_vec()
    };

    // ONNX Runtime's default: `<model>_ctx.onnx` next to the model, blobs in files beside it.
    let first = Runtime::load(&source).unwrap().providers(ov_cpu()).config_entry("ep.context_enable", "1");
    let first = first.build().unwrap();
    let saved = dir.path().join("mobilenet_ctx.onnx");
    assert!(saved.is_file());
    let blobs = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "blob"));
    assert_eq!(blobs.count(), 1);
    let loaded = Runtime::load(&saved).unwrap().providers(ov_cpu()).build().unwrap();
    assert!(loaded.plan().partitions[0].details.contains("EPContext"), "{}", loaded.plan());
    assert_eq!(run(&loaded), run(&first));

    // A path and embed mode 1: one file.
    let embedded = dir.path().join("sub").join("embedded.onnx");
    std::fs::create_dir_all(embedded.parent().unwrap()).unwrap();
    Runtime::load(&source)
        .unwrap()
        .providers(ov_cpu())
        .config_entry("ep.context_enable", "1")
        .config_entry("ep.context_file_path", embedded.to_str().unwrap())
        .config_entry("ep.context_embed_mode", "1")
        .build()
        .unwrap();
    assert_eq!(std::fs::read_dir(embedded.parent().unwrap()).unwrap().count(), 1);
    let loaded = Runtime::load(&embedded).unwrap().providers(ov_cpu()).build().unwrap();
    assert_eq!(run(&loaded), run(&first));

    // Both ways of asking at once is an error.
    let both = Runtime::load(&source)
        .unwrap()
        .providers(ov_cpu())
        .config_entry("ep.context_enable", "1")
        .save_context(dir.path().join("other.onnx"), EmbedMode::Embedded)
        .build();
    assert!(matches!(both, Err(Error::Config(_))));
}

/// `session.intra_op.allow_spinning` is acted on (no warning), and a value other than "0"/"1"
/// is a config error naming the key; the session's answers do not depend on it.
#[test]
fn intra_op_spinning_is_honoured() {
    let mobilenet = model_dir("mobilenetv2_tiny").join("model.onnx");
    let build = |v: Option<&str>| {
        let b = Runtime::load(&mobilenet).unwrap().providers([vinort::Cpu::default().threads(2).into()]);
        match v {
            Some(v) => b.config_entry("session.intra_op.allow_spinning", v).build(),
            None => b.build(),
        }
    };
    let feeds = read_pbs(&model_dir("mobilenetv2_tiny").join("test_data_set_0"), "input");
    let run = |s: &Session| {
        let out = s.run(feeds.iter().map(|(n, t)| (n.as_str(), t))).unwrap();
        out["probabilities"].as_tensor().unwrap().as_bytes().to_vec()
    };
    let spinning = build(None).unwrap();
    let sleeping = build(Some("0")).unwrap();
    assert!(sleeping.plan().warnings.is_empty(), "{:?}", sleeping.plan().warnings);
    assert_eq!(run(&sleeping), run(&spinning));
    match build(Some("no")) {
        Err(Error::Config(m)) => assert!(m.contains("session.intra_op.allow_spinning"), "{m}"),
        other => panic!("expected a config error, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn config_entries_vinort_does_not_act_on_are_named_in_the_plan() {
    let mobilenet = model_dir("mobilenetv2_tiny").join("model.onnx");
    let s = Runtime::load(&mobilenet)
        .unwrap()
        .config_entry("session.set_denormal_as_zero", "1") // not used
        .config_entry("session.disable_prepacking", "0") // what vinort always does
        .config_entry("session.disable_aot_function_inlining", "1") // against what vinort always does
        .config_entry("made.up.key", "3")
        .config_entry("ep.context_file_path", "nowhere.onnx") // without ep.context_enable
        .build()
        .unwrap();
    let warnings = &s.plan().warnings;
    let about = |key: &str| warnings.iter().filter(|w| w.contains(&format!("'{key}'"))).count();
    assert_eq!(about("session.set_denormal_as_zero"), 1, "{warnings:?}");
    assert_eq!(about("session.disable_prepacking"), 0, "{warnings:?}");
    assert_eq!(about("session.disable_aot_function_inlining"), 1, "{warnings:?}");
    assert_eq!(about("made.up.key"), 1, "{warnings:?}");
    assert_eq!(about("ep.context_file_path"), 1, "{warnings:?}");
    assert_eq!(warnings.len(), 4, "{warnings:?}");
    assert!(!Path::new("nowhere.onnx").exists());
    // Every key the table lists as honoured is one the build acts on (tested above); the
    // table itself is public, so tools can show it.
    assert!(vinort::session_config::KEYS.iter().any(|(k, _)| *k == "session.disable_cpu_ep_fallback"));
}

#[test]
fn outputs_are_removed_by_name_and_keep_their_positions() {
    let data = model_dir("bert_tiny").join("test_data_set_0");
    let feeds = read_pbs(&data, "input");
    let want = read_pbs(&data, "output");
    let s = Runtime::load(model_dir("bert_tiny").join("model.onnx")).unwrap().build().unwrap();
    let mut out = s.run(feeds.iter().map(|(n, t)| (n.as_str(), t))).unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out.keys().collect::<Vec<_>>(), ["last_hidden_state", "pooled"]);
    let first = out.remove("last_hidden_state").expect("the model's first output");
    assert_close("last_hidden_state", &first, &want[0].1, 1e-4, 1e-5);
    assert!(out.remove("last_hidden_state").is_none() && !out.contains_key("last_hidden_state"));
    assert!(out.remove("no such output").is_none());
    // The second output is still at position 1, and the only one listed.
    assert_close("pooled", &out[1], &want[1].1, 1e-4, 1e-5);
    assert_eq!(out.len(), 1);
    assert_eq!(out.iter().map(|(n, _)| n).collect::<Vec<_>>(), ["pooled"]);
    let taken = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| out[0].kind())).unwrap_err();
    assert!(taken.downcast_ref::<String>().is_some_and(|m| m.contains("was removed")));
    let pairs: Vec<(String, vinort::Value)> = out.into_iter().collect();
    assert_eq!(pairs.len(), 1);
    assert_eq!(pairs[0].0, "pooled");
}

#[test]
fn a_tag_set_in_place_names_the_stopped_run() {
    let s = Runtime::load(model_dir("mobilenetv2_tiny").join("model.onnx")).unwrap().build().unwrap();
    let feeds = read_pbs(&model_dir("mobilenetv2_tiny").join("test_data_set_0"), "input");
    let mut options = RunOptions::new();
    options.set_tag("request-17");
    assert_eq!(options.tag(), Some("request-17"));
    options.terminate();
    match s.run_with_options(feeds.iter().map(|(n, t)| (n.as_str(), t)), &options) {
        Err(Error::Cancelled { tag, .. }) => assert_eq!(tag.as_deref(), Some("request-17")),
        other => panic!("expected a stopped run, got {other:?}"),
    }
}

#[test]
fn a_cleared_binding_allocates_its_outputs_and_needs_its_inputs_again() {
    let s = Runtime::load(model_dir("mobilenetv2_tiny").join("model.onnx")).unwrap().build().unwrap();
    let data = model_dir("mobilenetv2_tiny").join("test_data_set_0");
    let (inputs, outputs) = (read_pbs(&data, "input"), read_pbs(&data, "output"));
    let (input, want) = (&inputs[0].1, &outputs[0].1);
    let x = input.as_slice::<f32>().unwrap();
    let mut buffer = [0f32; 10];
    let mut b = s.binding();
    b.bind_input("input", TensorRef::from_slice(input.shape(), x).unwrap()).unwrap();
    b.bind_output("probabilities", &[1, 10], &mut buffer).unwrap();
    s.run_with(&mut b, &RunOptions::new()).unwrap();
    assert!(b.output("probabilities").is_none(), "a bound output is in its buffer");

    b.clear_outputs();
    s.run_with(&mut b, &RunOptions::new()).unwrap();
    let unbound = b.output("probabilities").expect("an unbound output is returned");
    assert_close("probabilities", unbound, want, 1e-4, 1e-6);

    b.clear_inputs();
    assert!(matches!(s.run_with(&mut b, &RunOptions::new()), Err(Error::Input { .. })));
    drop(b);
    let bound = Tensor::from_slice(&[1, 10], &buffer).unwrap();
    assert_close("probabilities (bound)", &vinort::Value::Tensor(bound), want, 1e-4, 1e-6);
}
