//! Bad models and bad inputs give typed errors naming what is wrong — never a panic.

mod common;

use common::*;
use vinort::ir::proto::onnx;
use vinort::{Cpu, Error, Runtime, Tensor};

fn load_err(bytes: Vec<u8>) -> String {
    match Runtime::from_bytes(bytes) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

fn relu_graph() -> onnx::GraphProto {
    onnx::GraphProto {
        name: Some("g".into()),
        node: vec![node("Relu", "r", &["x"], &["y"])],
        input: vec![value_info("x", 1, &[2, 3])],
        output: vec![value_info("y", 1, &[2, 3])],
        ..Default::default()
    }
}

#[test]
fn truncated_file_is_a_decode_error() {
    let bytes = std::fs::read(model_dir("mobilenetv2_tiny").join("model.onnx")).unwrap();
    let e = load_err(bytes[..bytes.len() / 2].to_vec());
    assert!(e.contains("not a valid ONNX model"), "{e}");
}

#[test]
fn garbage_bytes_are_a_decode_error() {
    let e = load_err(vec![0xff; 64]);
    assert!(e.contains("not a valid ONNX model"), "{e}");
    let e = load_err(b"this is not protobuf at all".to_vec());
    assert!(e.contains("not a valid ONNX model") || e.contains("IR version"), "{e}");
}

#[test]
fn missing_file_names_the_path() {
    let e = Runtime::load("/nonexistent/model.onnx").err().unwrap().to_string();
    assert!(e.contains("/nonexistent/model.onnx"), "{e}");
}

#[test]
fn dangling_edge_names_the_node() {
    let mut g = relu_graph();
    g.node.push(node("Relu", "dangler", &["nowhere"], &["z"]));
    let e = load_err(encode(&model(g, 17)));
    assert!(e.contains("dangler") && e.contains("nowhere"), "{e}");
}

#[test]
fn cycle_names_a_node() {
    let mut g = relu_graph();
    g.node = vec![
        node("Add", "a", &["x", "c"], &["b"]),
        node("Relu", "c_node", &["b"], &["c"]),
        node("Relu", "r", &["b"], &["y"]),
    ];
    let e = load_err(encode(&model(g, 17)));
    assert!(e.contains("cycle"), "{e}");
}

#[test]
fn value_produced_twice_names_both_producers() {
    let mut g = relu_graph();
    g.node.push(node("Relu", "second", &["x"], &["y"]));
    let e = load_err(encode(&model(g, 17)));
    assert!(e.contains("second") && e.contains("'r'"), "{e}");
}

#[test]
fn unsupported_ir_version_and_missing_graph() {
    let mut m = model(relu_graph(), 17);
    m.ir_version = Some(99);
    assert!(load_err(encode(&m)).contains("IR version 99"));
    let mut m = model(relu_graph(), 17);
    m.graph = None;
    assert!(load_err(encode(&m)).contains("no graph"));
}

fn external_model(dir: &std::path::Path, location: &str, offset: &str, length: Option<&str>) -> std::path::PathBuf {
    let mut g = relu_graph();
    g.node = vec![node("Add", "add", &["x", "w"], &["y"])];
    let mut entries = vec![
        onnx::StringStringEntryProto { key: Some("location".into()), value: Some(location.into()) },
        onnx::StringStringEntryProto { key: Some("offset".into()), value: Some(offset.into()) },
    ];
    if let Some(l) = length {
        entries.push(onnx::StringStringEntryProto { key: Some("length".into()), value: Some(l.into()) });
    }
    g.initializer.push(onnx::TensorProto {
        name: Some("w".into()),
        dims: vec![2, 3],
        data_type: Some(1),
        data_location: Some(1),
        external_data: entries,
        ..Default::default()
    });
    let path = dir.join("model.onnx");
    std::fs::write(&path, encode(&model(g, 17))).unwrap();
    path
}

#[test]
fn external_data_loads_zero_copy_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let w: Vec<f32> = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let mut file = vec![0u8; 16];
    file.extend(w.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(dir.path().join("weights.bin"), &file).unwrap();
    let path = external_model(dir.path(), "weights.bin", "16", Some("24"));
    let s = Runtime::load(&path).unwrap().providers([Cpu::default().into()]).build().unwrap();
    let init = s.model().graph.initializers().next().unwrap().1;
    assert_eq!(init.origin(), vinort::ir::Origin::Shared);
    let x = Tensor::from_vec(&[2, 3], vec![1.0f32; 6]).unwrap();
    let out = s.run([("x", x)]).unwrap();
    assert_eq!(out[0].as_tensor().unwrap().as_slice::<f32>().unwrap(), &[2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
}

#[test]
fn external_data_escapes_and_bad_ranges_are_refused_naming_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("m");
    std::fs::create_dir(&inner).unwrap();
    std::fs::write(dir.path().join("secret.bin"), vec![0u8; 64]).unwrap();
    std::fs::write(inner.join("w.bin"), vec![0u8; 24]).unwrap();
    let cases = [
        ("../secret.bin", "0", None, "leaves the model's folder"),
        ("/etc/passwd", "0", None, "absolute path"),
        ("missing.bin", "0", None, "cannot open"),
        ("w.bin", "8", None, "beyond the end"),
        ("w.bin", "0", Some("12"), "does not match"),
        ("w.bin", "-4", None, "not a non-negative integer"),
    ];
    for (loc, off, len, want) in cases {
        let path = external_model(&inner, loc, off, len);
        let e = Runtime::load(&path).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("tensor 'w'") && e.contains(want), "{loc}: {e}");
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(dir.path().join("secret.bin"), inner.join("link.bin")).unwrap();
        let path = external_model(&inner, "link.bin", "0", None);
        let e = Runtime::load(&path).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("outside the model's folder"), "{e}");
        // OpenVINO reads this location from memory (the offset as an address): refused even
        // when a file of that name exists, so a model file can never point OpenVINO at memory.
        let marker = inner.join("*").join("_ORT_MEM_ADDR_");
        std::fs::create_dir_all(&marker).unwrap();
        std::fs::write(marker.join("*"), vec![0u8; 24]).unwrap();
        let path = external_model(&inner, "*/_ORT_MEM_ADDR_/*", "0", None);
        let e = Runtime::load(&path).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("tensor 'w'") && e.contains("reserved for in-memory data"), "{e}");
    }
    // Loaded from bytes there is no folder to resolve against.
    let bytes = std::fs::read(external_model(&inner, "w.bin", "0", None)).unwrap();
    assert!(load_err(bytes).contains("without a folder"));
}

/// unknown_op: com.example::FancyOp, then NotARealOp reading its output (so of a type no rule
/// knows). Both lists refuse both nodes in one error: OpenVINO's probe of NotARealOp declares
/// the unknown input a float tensor and finds no conversion for the op.
#[test]
fn unknown_ops_load_but_every_provider_list_refuses_every_one_of_them_in_one_error() {
    let path = model_dir("unknown_op").join("model.onnx");
    let lists: [(&str, Vec<vinort::Provider>); 2] = [
        ("cpu", vec![Cpu::default().into()]),
        ("openvino,cpu", vec![vinort::OpenVino::cpu().error_on_failure(), Cpu::default().into()]),
    ];
    for (list, providers) in lists {
        let builder = Runtime::load(&path).expect("unknown ops must load");
        let nodes: Vec<String> =
            builder.model().graph.node_indices().map(|n| builder.model().graph.node(n).op_type.clone()).collect();
        assert!(nodes.contains(&"FancyOp".to_string()));
        match builder.providers(providers).build() {
            Err(Error::UnsupportedNodes(v)) => {
                let names: Vec<&str> = v.iter().map(|n| n.node.as_str()).collect();
                assert_eq!(names.len(), 2, "[{list}] {names:?}");
                assert!(names.contains(&"fancy_0") && names.contains(&"not_a_real_op_0"), "[{list}] {names:?}");
                let fancy = v.iter().find(|n| n.node == "fancy_0").unwrap();
                assert_eq!(fancy.domain, "com.example");
                assert_eq!(fancy.opset, 1);
                let cpu = fancy.reasons.iter().find(|(p, _)| p == "Cpu").expect("Cpu's reason");
                assert!(cpu.1.contains("FancyOp"), "[{list}] {cpu:?}");
                let real = v.iter().find(|n| n.node == "not_a_real_op_0").unwrap();
                assert_eq!(real.reasons.len(), if list == "cpu" { 1 } else { 2 }, "[{list}] {:?}", real.reasons);
            }
            Err(e) => panic!("[{list}] wrong error: {e}"),
            Ok(_) => panic!("[{list}] the session must not build"),
        }
    }
}

#[test]
fn wrong_inputs_are_clear_errors() {
    let s = Runtime::from_bytes(encode(&model(relu_graph(), 17))).unwrap().build().unwrap();
    let good = || Tensor::from_vec(&[2, 3], vec![0f32; 6]).unwrap();
    let cases: Vec<(Vec<(&str, Tensor)>, &str)> = vec![
        (vec![], "missing"),
        (vec![("x", good()), ("bogus", good())], "no such input"),
        (vec![("x", Tensor::from_vec(&[2, 3], vec![0i64; 6]).unwrap())], "element type float"),
        (vec![("x", Tensor::from_vec(&[3, 2], vec![0f32; 6]).unwrap())], "dimension 0 must be 2"),
        (vec![("x", Tensor::from_vec(&[6], vec![0f32; 6]).unwrap())], "expected rank 2"),
        (vec![("x", good()), ("x", good())], "more than once"),
    ];
    for (inputs, want) in cases {
        let e = s.run(inputs).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(want), "want '{want}' in: {e}");
    }
    assert!(s.run([("x", good())]).is_ok());
}

/// A `dim_param` shared between dims is a hint, as in ONNX Runtime: exporters name unrelated
/// dims `?` (a PaddleOCR classifier declares `?` twice and is fed 48 and 192), so dims sharing
/// a name may be fed different sizes.
#[test]
fn repeated_dim_params_are_hints_not_errors() {
    use onnx::tensor_shape_proto::{Dimension, dimension::Value as D};
    let input = |name: &str, dims: &[Option<i64>]| onnx::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(onnx::TypeProto {
            value: Some(onnx::type_proto::Value::TensorType(onnx::type_proto::Tensor {
                elem_type: Some(1),
                shape: Some(onnx::TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|d| Dimension {
                            value: Some(d.map_or_else(|| D::DimParam("?".into()), D::DimValue)),
                            denotation: None,
                        })
                        .collect(),
                }),
            })),
            denotation: None,
        }),
        ..Default::default()
    };
    // x: [?, 3, ?] is fed [2, 3, 5]; b: [?, 5] is fed [1, 5] and broadcasts.
    let g = onnx::GraphProto {
        name: Some("g".into()),
        node: vec![node("Add", "add", &["x", "b"], &["y"])],
        input: vec![input("x", &[None, Some(3), None]), input("b", &[None, Some(5)])],
        output: vec![onnx::ValueInfoProto { name: Some("y".into()), ..Default::default() }],
        ..Default::default()
    };
    let s = Runtime::from_bytes(encode(&model(g, 17))).unwrap().providers([Cpu::default().into()]).build().unwrap();
    let x = Tensor::from_vec(&[2, 3, 5], (0..30).map(|v| v as f32).collect()).unwrap();
    let b = Tensor::from_vec(&[1, 5], vec![100f32; 5]).unwrap();
    let out = s.run([("x", x), ("b", b)]).unwrap_or_else(|e| panic!("dims named '?' must not have to agree: {e}"));
    let want = Tensor::from_vec(&[2, 3, 5], (0..30).map(|v| v as f32 + 100.0).collect()).unwrap();
    assert_close("y", &out[0], &want, 0.0, 0.0);
}

/// Each kind of failure is its own variant, so a caller can react to it without parsing text.
#[test]
fn error_kinds_can_be_told_apart() {
    // A malformed model.
    assert!(matches!(Runtime::from_bytes(vec![0xff; 64]), Err(Error::Model(_))));
    assert!(matches!(Runtime::load("/no/such/model.onnx"), Err(Error::Model(_))));
    // An op nobody runs.
    let unknown = Runtime::load(model_dir("unknown_op").join("model.onnx")).unwrap();
    assert!(matches!(unknown.providers([Cpu::default().into()]).build(), Err(Error::UnsupportedNodes(_))));
    // A bad option, with the option's own error as the source.
    match vinort::OpenVino::from_key_values([("precision", "FP7")]) {
        Err(e @ Error::Option(_)) => assert!(e.to_string().contains("FP7"), "{e}"),
        other => panic!("want Error::Option, got {:?}", other.err()),
    }
    // A bad run input.
    let s = Runtime::from_bytes(encode(&model(relu_graph(), 17))).unwrap().build().unwrap();
    assert!(matches!(s.run([("bogus", Tensor::from_vec(&[2, 3], vec![0f32; 6]).unwrap())]), Err(Error::Input { .. })));
    // A provider failing at a node while running: the kernel's error is kept as the source.
    let graph = onnx::GraphProto {
        name: Some("g".into()),
        node: vec![node("Reshape", "r", &["x", "s"], &["y"])],
        input: vec![value_info("x", 1, &[2, 3]), value_info("s", 7, &[1])],
        output: vec![value_info("y", 1, &[6])],
        ..Default::default()
    };
    let s = Runtime::from_bytes(encode(&model(graph, 17))).unwrap().build().unwrap();
    let x = Tensor::from_vec(&[2, 3], vec![0f32; 6]).unwrap();
    match s.run([("x", x), ("s", Tensor::from_vec(&[1], vec![7i64]).unwrap())]) {
        Err(Error::Provider { provider, node, op, source }) => {
            assert_eq!((provider.as_str(), node.as_deref(), op.as_deref()), ("Cpu", Some("r"), Some("Reshape")));
            assert!(source.to_string().contains('7'), "{source}");
        }
        other => panic!("want Error::Provider, got {:?}", other.err()),
    }
}

fn i64_tensor(name: &str, data: &[i64]) -> onnx::TensorProto {
    onnx::TensorProto {
        name: Some(name.into()),
        dims: vec![data.len() as i64],
        data_type: Some(7),
        raw_data: Some(bytes::Bytes::from(data.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>())),
        ..Default::default()
    }
}

/// Opset versions no ONNX release has are refused at load. OpenVINO's ONNX reader spun for
/// minutes on a default-domain import of 2^40 (found by mutation).
#[test]
fn absurd_opset_versions_are_refused_at_load() {
    for v in [1_099_511_627_776, 29, 0, -1] {
        let e = load_err(encode(&model(relu_graph(), v)));
        assert!(e.contains("opset import of ai.onnx") && e.contains(&format!("version {v}")), "{v}: {e}");
    }
    let mut m = model(relu_graph(), 17);
    m.opset_import.push(onnx::OperatorSetIdProto { domain: Some("my.domain".into()), version: Some(1 << 40) });
    assert!(load_err(encode(&m)).contains("opset import of my.domain"));
    // Real versions load: the newest default one, and a custom domain's 0.
    m.opset_import[1].version = Some(0);
    m.opset_import[0].version = Some(vinort::ir::ops::MAX_OPSET);
    assert!(Runtime::from_bytes(encode(&m)).is_ok());
}

/// ConstantOfShape of a constant shape: the output's shape is known at build, and 2^50 f32
/// elements are refused then, naming the node, before anything is compiled or folded.
#[test]
fn a_known_size_past_the_memory_limit_is_refused_at_build() {
    let g = onnx::GraphProto {
        name: Some("g".into()),
        node: vec![node("ConstantOfShape", "huge", &["shape"], &["y"])],
        initializer: vec![i64_tensor("shape", &[1 << 20, 1 << 20, 1 << 10])],
        output: vec![value_info("y", 1, &[])],
        ..Default::default()
    };
    let bytes = encode(&model(g, 17));
    for providers in ["cpu", "openvino-fp32,cpu"] {
        let e = Runtime::from_bytes(bytes.clone()).unwrap().providers(common::providers(providers)).build().err();
        match e {
            Some(Error::MemoryLimit { node, refused, .. }) => {
                assert_eq!(node.as_deref(), Some("huge"));
                assert_eq!(refused.bytes, 1 << 52);
            }
            other => panic!("{providers}: {other:?}"),
        }
    }
}

/// The same request decided at run time (the shape is an input) is a typed error naming the
/// node, for a size over the budget and for one whose byte count overflows; the session still
/// runs afterwards. A session's own limit caps single tensors.
#[test]
fn a_run_time_request_past_the_memory_limit_is_a_typed_error() {
    let g = onnx::GraphProto {
        name: Some("g".into()),
        node: vec![node("ConstantOfShape", "fill", &["shape"], &["y"])],
        input: vec![value_info("shape", 7, &[3])],
        output: vec![value_info("y", 1, &[])],
        ..Default::default()
    };
    let bytes = encode(&model(g, 17));
    let shape = |d: [i64; 3]| Tensor::from_vec(&[3], d.to_vec()).unwrap();
    for providers in ["cpu", "openvino-fp32,cpu"] {
        let s = Runtime::from_bytes(bytes.clone()).unwrap().providers(common::providers(providers)).build().unwrap();
        for (dims, overflow) in [([1 << 20, 1 << 20, 1 << 10], false), ([1 << 40, 1 << 40, 1 << 40], true)] {
            let e = s.run([("shape", shape(dims))]).err();
            let Some(Error::MemoryLimit { node, refused, .. }) = &e else { panic!("{providers} {dims:?}: {e:?}") };
            assert_eq!(node.as_deref(), Some("fill"), "{providers}");
            assert_eq!(refused.bytes == usize::MAX, overflow, "{providers}: {refused}");
        }
        let out = s.run([("shape", shape([2, 3, 4]))]).unwrap();
        assert_eq!(out["y"].as_tensor().unwrap().shape(), &[2, 3, 4]);
    }
    let s = Runtime::from_bytes(bytes).unwrap().memory_limit(4096).build().unwrap();
    assert!(s.run([("shape", shape([1, 32, 32]))]).is_ok(), "4096 bytes fit");
    let e = s.run([("shape", shape([1, 32, 33]))]).err();
    let Some(Error::MemoryLimit { refused, .. }) = &e else { panic!("{e:?}") };
    assert_eq!((refused.bytes, refused.limit), (4224, 4096));
    assert_eq!(refused.which, vinort::ir::limits::Which::Session);
}

/// Models the black-box mutation run broke (issue 15), each now an error or a run, never a
/// panic or an abort: shape inference over declared dims whose product overflows, a run-time
/// shape declared 2^32+1 long, Resize scales of 1e30, and If nesting past protobuf's depth.
#[test]
fn mutation_regressions_are_errors_or_runs() {
    let build_run = |m: onnx::ModelProto| -> Result<(), String> {
        let s = Runtime::from_bytes(encode(&m)).map_err(|e| e.to_string())?.build().map_err(|e| e.to_string())?;
        let inputs: Vec<(String, Tensor)> = s
            .inputs()
            .iter()
            .map(|i| {
                let shape: Vec<usize> = i.ty.static_shape().unwrap_or_default();
                (i.name.clone(), Tensor::zeros(i.ty.tensor_dtype().unwrap(), &shape))
            })
            .collect();
        s.run(inputs.iter().map(|(k, v)| (k.as_str(), v))).map(|_| ()).map_err(|e| e.to_string())
    };
    // Flatten of [2^40, 2^40, 0]: the flattened dims overflow, the tensor is empty.
    let g = onnx::GraphProto {
        name: Some("g".into()),
        node: vec![node("Flatten", "f", &["x"], &["y"])],
        input: vec![value_info("x", 1, &[1 << 40, 1 << 40, 0])],
        output: vec![value_info("y", 1, &[])],
        ..Default::default()
    };
    assert_eq!(build_run(model(g, 17)), Ok(()));
    // Reshape whose shape input declares 2^32 + 1 elements: inference made a 100 GB shape.
    let g = onnx::GraphProto {
        name: Some("g".into()),
        node: vec![node("Reshape", "r", &["x", "shape"], &["y"])],
        input: vec![value_info("x", 1, &[2, 3]), value_info("shape", 7, &[(1 << 32) + 1])],
        output: vec![value_info("y", 1, &[])],
        ..Default::default()
    };
    let e = Runtime::from_bytes(encode(&model(g, 17))).unwrap().build().unwrap().run([
        ("x", Tensor::zeros(vinort::DType::F32, &[2, 3])),
        ("shape", Tensor::from_vec(&[1], vec![6i64]).unwrap()),
    ]);
    assert!(e.err().is_some_and(|e| e.to_string().contains("input 'shape'")));
    // Col2Im whose image_shape input declares 2^40 values: inference read that as a rank.
    let g = onnx::GraphProto {
        name: Some("g".into()),
        node: vec![node("Col2Im", "c", &["x", "image", "block"], &["y"])],
        input: vec![value_info("x", 1, &[1, 4, 4]), value_info("image", 7, &[1 << 40]), value_info("block", 7, &[2])],
        output: vec![value_info("y", 1, &[])],
        ..Default::default()
    };
    assert!(Runtime::from_bytes(encode(&model(g, 18))).unwrap().build().is_ok());
    // Resize by 1e30: refused before any coordinate map is built.
    let x = f32_tensor("x", &[1, 1, 2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let g = onnx::GraphProto {
        name: Some("g".into()),
        node: vec![node("Resize", "big", &["x", "", "scales"], &["y"])],
        initializer: vec![x, f32_tensor("scales", &[4], &[1.0, 1.0, 1e6, 1e30])],
        output: vec![value_info("y", 1, &[])],
        ..Default::default()
    };
    let e = build_run(model(g, 13)).unwrap_err();
    assert!(e.contains("memory limit") && e.contains("'big'"), "{e}");
    // Found by AFL (fuzz/): an initializer declaring 2^80 elements, Concat of scalars, and
    // an antialiased Resize by 1e-30 (its filter asked for 2^60 taps).
    let mut g = relu_graph();
    g.initializer.push(onnx::TensorProto {
        name: Some("w".into()),
        dims: vec![1 << 40, 1 << 40],
        data_type: Some(1),
        ..Default::default()
    });
    assert!(load_err(encode(&model(g, 17))).contains("tensor 'w'"));
    let g = onnx::GraphProto {
        name: Some("g".into()),
        node: vec![node("Concat", "c", &["a", "b"], &["y"])],
        input: vec![value_info("a", 1, &[]), value_info("b", 1, &[])],
        output: vec![value_info("y", 1, &[])],
        ..Default::default()
    };
    let mut concat = node("Concat", "c", &["a", "b"], &["y"]);
    concat.attribute.push(vinort::ir::proto::build::attr::int("axis", 0));
    let g = onnx::GraphProto { node: vec![concat], ..g };
    let e = build_run(model(g, 13)).unwrap_err();
    assert!(e.contains("(Concat)"), "{e}");
    let mut resize = node("Resize", "tiny", &["x", "", "scales"], &["y"]);
    resize.attribute.push(vinort::ir::proto::build::attr::int("antialias", 1));
    resize.attribute.push(vinort::ir::proto::build::attr::string("mode", "linear"));
    let g = onnx::GraphProto {
        name: Some("g".into()),
        node: vec![resize],
        initializer: vec![
            f32_tensor("x", &[1, 1, 2, 2], &[1.0, 2.0, 3.0, 4.0]),
            f32_tensor("scales", &[4], &[1.0, 1.0, 1.0, 1e-30]),
        ],
        output: vec![value_info("y", 1, &[])],
        ..Default::default()
    };
    assert_eq!(build_run(model(g, 18)), Ok(()), "an empty output");
    // If nested 200 deep: prost stops at 100 levels; the message names the ends of the path.
    let leaf = onnx::GraphProto { name: Some("leaf".into()), ..Default::default() };
    let mut body = leaf.clone();
    for _ in 0..200 {
        let mut n = node("If", "i", &["c"], &[]);
        n.attribute.push(vinort::ir::proto::build::attr::graph("then_branch", body));
        n.attribute.push(vinort::ir::proto::build::attr::graph("else_branch", leaf.clone()));
        body = onnx::GraphProto { name: Some("b".into()), node: vec![n], ..Default::default() };
    }
    let e = load_err(encode(&model(body, 17)));
    assert!(e.contains("recursion limit") && e.contains("levels") && e.len() < 400, "{e}");
}

/// Every input AFL found crashing or hanging a target (fuzz/regressions, see fuzz/README.md)
/// loads, builds and runs on `[Cpu]` to a result or an error, never a panic, within a time
/// that is not a hang.
#[test]
fn afl_findings_stay_fixed() {
    let dir = common::repo().join("fuzz/regressions");
    let mut models = 0;
    for entry in std::fs::read_dir(dir.join("model")).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let t0 = std::time::Instant::now();
        let outcome = std::panic::catch_unwind(|| {
            let Ok(b) = Runtime::from_bytes(bytes) else { return };
            let Ok(s) = b.memory_limit(64 << 20).build() else { return };
            let mut inputs = vec![];
            for i in s.inputs().iter().filter(|i| i.required()) {
                let (Some(dt), Some(shape)) = (i.ty.tensor_dtype(), i.ty.static_shape()) else { return };
                if shape.iter().product::<usize>() > 1 << 16 || dt == vinort::DType::String {
                    return;
                }
                inputs.push((i.name.clone(), Tensor::zeros(dt, &shape)));
            }
            let _ = s.run(inputs.iter().map(|(k, v)| (k.as_str(), v)));
        });
        assert!(outcome.is_ok(), "{} panicked", path.display());
        assert!(t0.elapsed() < std::time::Duration::from_secs(30), "{} took {:?}", path.display(), t0.elapsed());
        models += 1;
    }
    let mut tensors = 0;
    for entry in std::fs::read_dir(dir.join("tensor")).unwrap() {
        let path = entry.unwrap().path();
        let bytes = bytes::Bytes::from(std::fs::read(&path).unwrap());
        let outcome = std::panic::catch_unwind(|| vinort::ir::tensor_proto::decode_tensor(bytes).map(|_| ()));
        assert!(outcome.is_ok(), "{} panicked", path.display());
        tensors += 1;
    }
    assert!(models >= 29 && tensors >= 13, "{models} models, {tensors} tensors");
}
