//! The `vinort` binary end to end: the main job, and what happens without OpenVINO.

use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn vinort() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_vinort"));
    c.current_dir(repo());
    c
}

/// A command that cannot find OpenVINO: no Python on PATH, no env var, no library path.
fn without_openvino() -> Command {
    let empty = std::env::temp_dir().join("vinort-empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let mut c = vinort();
    c.env("PATH", &empty).env_remove("VINORT_OPENVINO_LIB").env_remove("LD_LIBRARY_PATH");
    c
}

#[test]
fn run_prints_plan_check_and_timing() {
    let out = vinort()
        .args(["run", "models/mobilenetv2_tiny/model.onnx", "-e", "cpu", "-r", "3", "--test-data"])
        .arg("models/mobilenetv2_tiny/test_data_set_0")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("1 partition(s)") && text.contains("Cpu — 57 node(s)"), "{text}");
    assert!(text.contains("check output_0 (probabilities): shape ok"), "{text}");
    assert!(text.contains("session created in") && text.contains("median"), "{text}");
}

#[test]
fn without_openvino_the_default_warns_and_runs_on_cpu() {
    let out = without_openvino()
        .args(["run", "models/bert_tiny/model.onnx", "-e", "openvino,cpu", "-r", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("warning: provider OpenVino(CPU) skipped"), "{text}");
    assert!(text.contains("pip install openvino==2026.4.1"), "{text}");
    assert!(text.contains("Cpu — "), "{text}");
}

#[test]
fn without_openvino_strict_fails_listing_every_place_searched() {
    let out = without_openvino()
        .args(["run", "models/bert_tiny/model.onnx", "-e", "openvino,cpu", "--strict"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for want in ["VINORT_OPENVINO_LIB: not set", "python3 on PATH", "python3 -m pip install openvino==2026.4.1"] {
        assert!(err.contains(want), "missing '{want}' in:\n{err}");
    }
    let out = without_openvino().arg("devices").output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("was not found"));
}

/// An error reads the same with RUST_BACKTRACE set: one `error:` line naming what is wrong,
/// each cause once, and no stack dump.
#[test]
fn errors_read_well_with_rust_backtrace_set() {
    let out = vinort().env("RUST_BACKTRACE", "1").args(["run", "no/such/model.onnx", "-e", "cpu"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains("no/such/model.onnx") && err.contains("No such file"), "{err}");
    assert!(!err.contains("backtrace") && !err.contains("main.rs"), "a stack dump in:\n{err}");
    assert_eq!(err.matches("No such file").count(), 1, "a cause printed twice:\n{err}");
}

/// `vinort test` compares a case with its own tolerance.txt; `--rtol`/`--atol` override it; a
/// malformed file is an error naming it.
#[test]
fn test_uses_each_case_tolerance_file_unless_overridden() {
    let root = std::env::temp_dir().join(format!("vinort-cli-tolerance-{}", std::process::id()));
    let case = root.join("mobilenetv2_tiny");
    std::fs::create_dir_all(case.join("test_data_set_0")).unwrap();
    let src = repo().join("models/mobilenetv2_tiny");
    std::fs::copy(src.join("model.onnx"), case.join("model.onnx")).unwrap();
    for f in ["input_0.pb", "output_0.pb"] {
        std::fs::copy(src.join("test_data_set_0").join(f), case.join("test_data_set_0").join(f)).unwrap();
    }
    let test = |extra: &[&str]| {
        let out = vinort().args(["test", "-e", "cpu"]).args(extra).arg(&case).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    // Exact equality: vinort's summation order differs from the reference's in the last bits.
    std::fs::write(case.join("tolerance.txt"), "rtol=0\natol=0\n").unwrap();
    let (ok, text) = test(&[]);
    assert!(!ok && text.contains("FAIL mobilenetv2_tiny"), "{text}");
    let (ok, text) = test(&["--rtol", "1e-3", "--atol", "1e-7"]);
    assert!(ok && text.contains("1 passed, 0 failed"), "{text}");
    std::fs::write(case.join("tolerance.txt"), "rtol=loose\n").unwrap();
    let (ok, text) = test(&[]);
    assert!(!ok && text.contains("ERROR mobilenetv2_tiny") && text.contains("tolerance.txt"), "{text}");
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn compile_writes_a_context_that_runs_and_matches_its_test_data() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = dir.path().join("mobilenet_ctx.onnx");
    let out = vinort()
        .args(["compile", "models/mobilenetv2_tiny/model.onnx", "-e", "openvino,cpu", "--strict", "-o"])
        .arg(&ctx)
        .args(["-i", "precision|FP32"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("1 EPContext node(s)"), "{text}");
    let out = vinort()
        .args(["run"])
        .arg(&ctx)
        .args(["-e", "openvino,cpu", "--strict", "-r", "1", "--test-data", "models/mobilenetv2_tiny/test_data_set_0"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("imported from its EPContext blob"), "{text}");
    assert!(text.contains("check output_0 (probabilities): shape ok"), "{text}");
}

/// A model's declared dims are its word: random inputs for `[2^40, 2^40]` (an overflowing
/// size) and for `[2^36]` (over the memory limit) are clear errors, exit code 1, where they
/// were a "capacity overflow" panic and an allocation abort (found by mutation, issue 15).
#[test]
fn huge_declared_input_dims_are_errors_not_aborts() {
    use vinort::ir::proto::build;
    use vinort::ir::proto::prost::Message;
    let dir = tempfile::tempdir().unwrap();
    for (name, dims, want) in [
        ("overflow", vec![1i64 << 40, 1 << 40], "the size overflows"),
        ("huge", vec![1 << 36], "does not fit the memory limit"),
    ] {
        let graph = vinort::ir::proto::onnx::GraphProto {
            name: Some("g".into()),
            // Shape's output is small, so the build passes and the input is what is too big.
            node: vec![build::node("Shape", "s", &["x"], &["y"])],
            input: vec![build::fixed_tensor_info("x", 1, &dims)],
            output: vec![build::fixed_tensor_info("y", 7, &[dims.len() as i64])],
            ..Default::default()
        };
        let path = dir.path().join(format!("{name}.onnx"));
        std::fs::write(&path, build::model(8, &[("", 17)], graph).encode_to_vec()).unwrap();
        let out = vinort().args(["run", "-e", "cpu", "-r", "1"]).arg(&path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(want) && err.contains("input 'x'") && !err.contains("panicked"), "{name}: {err}");
    }
    // The limit is the caller's to set.
    let out = vinort()
        .args(["run", "models/mobilenetv2_tiny/model.onnx", "-e", "cpu", "-r", "1", "--memory-limit", "32K"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("memory limit of 32768 bytes"), "{err}");
}

/// `run --test-data` with a reference that differs: the comparison is still printed, then
/// exit code 1 with an error naming the output.
#[test]
fn run_with_mismatching_test_data_exits_1_naming_the_output() {
    use vinort::ir::proto::prost::Message;
    let dir = tempfile::tempdir().unwrap();
    let src = repo().join("models/mobilenetv2_tiny/test_data_set_0");
    std::fs::copy(src.join("input_0.pb"), dir.path().join("input_0.pb")).unwrap();
    let bytes = std::fs::read(src.join("output_0.pb")).unwrap();
    let (name, want) = vinort::ir::tensor_proto::decode_tensor(bytes.into()).unwrap();
    // The right shape, one value off by far more than the tolerance.
    let mut v = want.as_slice::<f32>().unwrap().to_vec();
    v[3] += 0.5;
    let wrong = vinort::Tensor::from_vec(want.shape(), v).unwrap();
    std::fs::write(
        dir.path().join("output_0.pb"),
        vinort::ir::tensor_proto::tensor_to_proto(&name, &wrong).encode_to_vec(),
    )
    .unwrap();
    let out = vinort()
        .args(["run", "models/mobilenetv2_tiny/model.onnx", "-e", "cpu", "-r", "1", "--test-data"])
        .arg(dir.path())
        .output()
        .unwrap();
    let (text, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{text}\n{err}");
    assert!(text.contains("check output_0 (probabilities): shape ok") && text.contains("MISMATCH"), "{text}");
    assert!(text.contains("median"), "the timing still runs: {text}");
    assert!(err.starts_with("error: 1 output(s) differ from the test data"), "{err}");
    assert!(err.contains("output_0 (probabilities)"), "{err}");
    // The right reference passes (exit 0), checked by run_prints_plan_check_and_timing; a
    // looser tolerance given on the command line passes this one too.
    let out = vinort()
        .args(["run", "models/mobilenetv2_tiny/model.onnx", "-e", "cpu", "-r", "1", "--atol", "1", "--test-data"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The header of a `.npy` file: (descr, shape text, data), checked against NumPy's format 1.0
/// by hand (magic, version, little-endian length, 64-byte alignment, newline).
fn npy_parts(bytes: &[u8]) -> (String, String, Vec<u8>) {
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00", "magic and version 1.0");
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert_eq!((10 + len) % 64, 0, "data aligned to 64 bytes");
    let header = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
    assert!(header.ends_with('\n'), "{header:?}");
    let header = header.trim_end();
    assert!(header.starts_with("{'descr': '") && header.ends_with(", }"), "{header}");
    assert!(header.contains("'fortran_order': False"), "{header}");
    let descr = header.split("'descr': '").nth(1).unwrap().split('\'').next().unwrap().to_owned();
    let shape = header.split("'shape': ").nth(1).unwrap().split(')').next().unwrap().to_owned() + ")";
    (descr, shape, bytes[10 + len..].to_vec())
}

/// `run --output-dir`: `output_<i>.pb` round-trips (name, dtype, shape, values against the
/// reference), and `<name>.npy` has NumPy's header and the same bytes; names are made safe.
#[test]
fn run_output_dir_writes_pb_and_npy_files() {
    use vinort::ir::proto::build;
    use vinort::ir::proto::prost::Message;
    let out_dir = tempfile::tempdir().unwrap();
    let out = vinort()
        .args(["run", "models/mobilenetv2_tiny/model.onnx", "-e", "cpu", "-r", "1", "--output-dir"])
        .arg(out_dir.path())
        .args(["--test-data", "models/mobilenetv2_tiny/test_data_set_0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let read = |p: &str| std::fs::read(out_dir.path().join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    let (name, got) = vinort::ir::tensor_proto::decode_tensor(read("output_0.pb").into()).unwrap();
    let reference = std::fs::read(repo().join("models/mobilenetv2_tiny/test_data_set_0/output_0.pb")).unwrap();
    let (_, want) = vinort::ir::tensor_proto::decode_tensor(reference.into()).unwrap();
    assert_eq!(name, "probabilities");
    assert_eq!((got.dtype(), got.shape()), (want.dtype(), want.shape()));
    for (g, w) in got.as_slice::<f32>().unwrap().iter().zip(want.as_slice::<f32>().unwrap()) {
        assert!((g - w).abs() <= 1e-4 + 1e-3 * w.abs(), "{g} against {w}");
    }
    let (descr, shape, data) = npy_parts(&read("probabilities.npy"));
    assert_eq!((descr.as_str(), shape.as_str()), ("<f4", "(1, 10)"));
    assert_eq!(data, got.as_bytes());

    // Bool and int64 outputs, one named like a path.
    let dir = tempfile::tempdir().unwrap();
    let graph = vinort::ir::proto::onnx::GraphProto {
        name: Some("g".into()),
        node: vec![
            build::node("IsNaN", "nan", &["x"], &["mask/nan"]),
            build::node("Shape", "shape", &["x"], &["shape"]),
        ],
        input: vec![build::fixed_tensor_info("x", 1, &[2, 3])],
        output: vec![build::fixed_tensor_info("mask/nan", 9, &[2, 3]), build::fixed_tensor_info("shape", 7, &[2])],
        ..Default::default()
    };
    let model = dir.path().join("kinds.onnx");
    std::fs::write(&model, build::model(8, &[("", 17)], graph).encode_to_vec()).unwrap();
    let outputs = dir.path().join("out");
    let out =
        vinort().args(["run", "-e", "cpu", "-r", "0"]).arg(&model).arg("--output-dir").arg(&outputs).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (descr, shape, data) = npy_parts(&std::fs::read(outputs.join("mask_nan.npy")).unwrap());
    assert_eq!((descr.as_str(), shape.as_str(), data), ("|b1", "(2, 3)", vec![0u8; 6]));
    let (descr, shape, data) = npy_parts(&std::fs::read(outputs.join("shape.npy")).unwrap());
    assert_eq!((descr.as_str(), shape.as_str()), ("<i8", "(2,)"));
    assert_eq!(data, [2i64.to_le_bytes(), 3i64.to_le_bytes()].concat());
    let (name, t) =
        vinort::ir::tensor_proto::decode_tensor(std::fs::read(outputs.join("output_0.pb")).unwrap().into()).unwrap();
    assert_eq!((name.as_str(), t.dtype(), t.shape()), ("mask/nan", vinort::DType::Bool, &[2usize, 3][..]));
}

/// `--version`: vinort's version and OpenVINO's, or why OpenVINO was not found — never an error.
#[test]
fn version_prints_vinort_and_openvino_versions() {
    let out = vinort().arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("vinort {}", env!("CARGO_PKG_VERSION")));
    let (version, _) = vinort::openvino::devices().expect("OpenVINO is installed for the tests");
    assert_eq!(lines[1], format!("OpenVINO {version}"), "{text}");
    // The machine kind, so a number or a failure can be told apart by CPU.
    assert!(lines[2].starts_with("OpenVINO CPU: capabilities ") && lines[2].contains("FP32"), "{text}");
    let kernels = format!("Cpu provider kernels: {}", vinort::isa::isa());
    assert_eq!(lines[3], kernels, "{text}");
    let capped = vinort().arg("--version").env("VINORT_CPU_ISA", "portable").output().unwrap();
    let capped = String::from_utf8_lossy(&capped.stdout);
    assert!(capped.contains("Cpu provider kernels: portable"), "{capped}");

    let out = without_openvino().arg("-V").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.starts_with(&format!("vinort {}\nOpenVINO: not found (", env!("CARGO_PKG_VERSION"))), "{text}");
    assert!(text.contains("VINORT_OPENVINO_LIB: not set"), "{text}");
    assert!(text.trim_end().ends_with(&format!("Cpu provider kernels: {}", vinort::isa::isa())), "{text}");
}

#[test]
fn completions_cover_every_command() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = vinort().args(["completions", shell]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && !text.is_empty(), "{shell}");
        // fish spells options `-l format`.
        for word in ["partition", "completions", "format", "output-dir"] {
            assert!(text.contains(word), "{shell}: no '{word}'");
        }
    }
}

/// A mutated silero-vad (nested `If`) on which OpenVINO's graph passes spin when handed a piece
/// of it: under both provider lists vinort ends in a typed error well within 90 s, never a hang
/// (issue 33; `tests/data/regressions/README.md`).
#[test]
fn a_model_openvino_spins_on_ends_in_a_typed_error_under_both_lists() {
    let model = "tests/data/regressions/openvino-compile-spins.onnx";
    for list in ["cpu", "openvino,cpu"] {
        let t0 = std::time::Instant::now();
        // `--timeout` turns a hang into exit 124, so this test cannot hang CI either.
        let out = vinort().args(["--timeout", "90s", "run", model, "-e", list]).output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "[{list}] a typed error, not a timeout:\n{stdout}\n{stderr}");
        assert!(stderr.contains("error: Cpu, node") && stderr.contains("(Conv)"), "[{list}] {stderr}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(90), "[{list}] {:?}", t0.elapsed());
        if list == "openvino,cpu" {
            // OpenVINO's failure on the whole model keeps the If holding the failing Conv away
            // from it: no piece containing it is compiled again.
            assert!(stdout.contains("If_0 (If) by OpenVino(CPU): OpenVINO failed to convert Conv"), "{stdout}");
        }
    }
}

/// `--timeout`: a command past its deadline ends with 124 (as `timeout(1)`), not 1 (a mismatch).
#[test]
fn a_command_past_its_timeout_exits_124_naming_the_option() {
    let out = vinort()
        .args(["--timeout", "1ms", "run", "models/mobilenetv2_tiny/model.onnx", "-e", "cpu", "-r", "1000000"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(124), "{stderr}");
    assert!(stderr.contains("did not finish within 1 ms (--timeout)"), "{stderr}");
    let out = vinort().args(["--timeout", "soon", "devices"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "a bad duration is a usage error: {stderr}");
    assert!(stderr.contains("'soon' is not a duration"), "{stderr}");
}
