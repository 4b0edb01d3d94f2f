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
