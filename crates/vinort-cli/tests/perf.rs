//! `vinort perf` end to end, on the Rust CPU provider so OpenVINO is not needed. No timing
//! is asserted beyond the ordering of the statistics.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn perf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vinort")).current_dir(repo()).arg("perf").args(args).output().unwrap()
}

fn texts(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// [`perf`] that must succeed: its stdout and stderr.
fn perf_ok(args: &[&str]) -> (String, String) {
    let out = perf(args);
    let (text, err) = texts(&out);
    assert!(out.status.success(), "{text}\n{err}");
    (text, err)
}

/// The number after `label` in `text` (e.g. `throughput: ` → 431.7).
fn number_after(text: &str, label: &str) -> f64 {
    let rest = &text[text.find(label).unwrap_or_else(|| panic!("no '{label}' in:\n{text}")) + label.len()..];
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    rest[..end].parse().unwrap_or_else(|_| panic!("no number after '{label}' in:\n{text}"))
}

#[test]
fn summary_has_every_field() {
    let (text, _) = perf_ok(&["models/mobilenetv2_tiny", "-e", "cpu", "-r", "20"]);
    for want in [
        "partitions: 1",
        "[0] Cpu: 57 node(s)",
        "test_data_set_0/input_0.pb",
        "session creation: ",
        "first inference: ",
        "warm-up: 5 run(s) per thread",
        "measured: 20 run(s)",
        "latency (ms): min ",
        "throughput: ",
        "peak memory: ",
        "per inference: ",
        "heap allocations",
        "tensor buffers",
        "tensor copies",
    ] {
        assert!(text.contains(want), "missing '{want}' in:\n{text}");
    }
    let stats: Vec<f64> = ["min ", "median ", "p90 ", "p99 ", "max "].iter().map(|l| number_after(&text, l)).collect();
    assert!(stats.windows(2).all(|w| w[0] <= w[1]), "{stats:?}\n{text}");
    assert!(number_after(&text, "throughput: ") > 0.0, "{text}");
    // The CPU kernels allocate their output buffers: the counters see them.
    assert!(number_after(&text, "per inference: ") > 0.0, "{text}");
    assert!(number_after(&text, "heap allocations (") > 0.0, "{text}");
}

#[test]
fn json_is_one_valid_object_with_ordered_statistics() {
    let (text, err) = perf_ok(&["models/mobilenetv2_tiny", "-e", "cpu", "-r", "20", "--json"]);
    assert!(!err.contains('\r'), "no progress bar with --json: {err}");
    let json: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    let get = |path: &[&str]| {
        path.iter().fold(&json, |v, k| v.get(k).unwrap_or_else(|| panic!("no key {path:?} in:\n{text}")))
    };
    let num = |path: &[&str]| get(path).as_f64().unwrap_or_else(|| panic!("{path:?} is not a number in:\n{text}"));
    assert_eq!(get(&["model"]).as_str(), Some("models/mobilenetv2_tiny/model.onnx"));
    assert_eq!(get(&["providers"]), &json!(["cpu"]));
    assert_eq!(get(&["options"]), &json!({}));
    assert_eq!(get(&["mode"]).as_str(), Some("times"));
    assert_eq!(num(&["runs"]), 20.0);
    assert_eq!(num(&["concurrency"]), 1.0);
    for key in ["session_creation_ms", "first_inference_ms", "wall_time_ms", "throughput_per_s", "peak_memory_mib"] {
        assert!(num(&[key]) > 0.0, "{key} in:\n{text}");
    }
    let stats: Vec<f64> = ["min", "median", "p90", "p99", "max"].iter().map(|k| num(&["latency_ms", k])).collect();
    assert!(stats[0] > 0.0 && stats.windows(2).all(|w| w[0] <= w[1]), "{stats:?}");
    let mean = num(&["latency_ms", "mean"]);
    assert!(stats[0] <= mean && mean <= stats[4], "{mean} {stats:?}");
    for key in ["heap_allocations", "heap_bytes", "tensor_buffers", "tensor_copies"] {
        assert!(num(&["per_inference", key]) >= 0.0, "{key} in:\n{text}");
    }
    let Value::Array(parts) = get(&["partitions"]) else { panic!("partitions is not an array:\n{text}") };
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].get("provider").and_then(Value::as_str), Some("Cpu"));
    assert_eq!(parts[0].get("nodes").and_then(Value::as_f64), Some(57.0));
}

#[test]
fn duration_mode_draws_a_progress_bar_on_stderr() {
    let (text, err) = perf_ok(&["models/mobilenetv2_tiny", "-e", "cpu", "-m", "duration", "-t", "1.5"]);
    assert!(text.contains("(duration mode, 1 thread(s))"), "{text}");
    let bar = err.lines().find(|l| l.contains("\r[")).unwrap_or_else(|| panic!("no bar in stderr: {err:?}"));
    let last = bar.rsplit('\r').next().unwrap_or_default();
    assert!(last.starts_with("[###") && last.contains("] 100% ") && last.contains(" runs "), "{last:?}");
    assert!(last.ends_with("/1.5s"), "{last:?}");
    assert!(!text.contains('\r'), "the bar belongs on stderr: {text:?}");

    let (_, err) = perf_ok(&["models/mobilenetv2_tiny", "-e", "cpu", "-m", "duration", "-t", "1.2", "--no-progress"]);
    assert!(!err.contains('\r'), "--no-progress still drew: {err:?}");
}

#[test]
fn bad_arguments_are_clear_errors() {
    for (args, want) in [
        (&["models/mobilenetv2_tiny", "-e", "cpu", "-i", "precision"][..], "-i: "),
        (&["models/mobilenetv2_tiny", "-e", "cpu", "-i", "colour|blue"][..], "unknown OpenVINO provider option"),
        (&["models/mobilenetv2_tiny", "-e", "cpu", "-r", "0"][..], "-r/--runs must be at least 1"),
        (&["models/mobilenetv2_tiny", "-e", "cpu", "-m", "duration", "-t", "0"][..], "-t/--time must be a positive"),
        (&["models/mobilenetv2_tiny", "-e", "cpu", "-c", "0"][..], "-c/--concurrent must be at least 1"),
        (&["models/mobilenetv2_tiny", "-e", "tpu"][..], "unknown provider 'tpu'"),
        (&["models/mobilenetv2_tiny", "-m", "often"][..], "invalid value 'often'"),
        (&["models/no_such_model.onnx", "-e", "cpu"][..], "does not exist"),
        (&["models", "-e", "cpu"][..], "is a folder without model.onnx"),
    ] {
        let out = perf(args);
        let (text, err) = texts(&out);
        assert!(!out.status.success(), "{args:?} succeeded:\n{text}");
        assert!(err.contains(want), "{args:?}: missing '{want}' in:\n{err}");
        assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
    }
}

#[test]
fn concurrent_threads_share_the_runs_and_report_throughput() {
    // A model file, not a test-case folder: inputs are random.
    let (text, _) = perf_ok(&["models/mobilenetv2_tiny/model.onnx", "-e", "cpu", "-r", "40", "-c", "2"]);
    assert!(text.contains("input 'input': float [1, 3, 64, 64] random (seed 0)"), "{text}");
    assert!(text.contains("measured: 40 run(s)") && text.contains("(times mode, 2 thread(s))"), "{text}");
    assert!(number_after(&text, "throughput: ") > 0.0, "{text}");
    assert!(text.contains(" inferences/s"), "{text}");
}

/// `--bind`: OpenVINO writes the outputs into each thread's bound buffers, so a measured run
/// allocates and copies no tensor; on the Cpu provider the output is copied in.
#[test]
fn bind_runs_write_into_bound_buffers() {
    let args = ["models/mobilenetv2_tiny", "-e", "openvino,cpu", "--strict", "-i", "precision|FP32", "-r", "20"];
    let (text, _) = perf_ok(&[&args[..], &["--bind", "-c", "2"]].concat());
    assert!(text.contains("0.0 tensor buffers allocated (0 bytes)"), "{text}");
    assert!(text.contains("0.0 tensor copies (0 bytes)"), "{text}");
    let (text, _) = perf_ok(&["models/mobilenetv2_tiny", "-e", "cpu", "-r", "20", "--bind"]);
    assert!(text.contains("1.0 tensor copies"), "the Cpu provider's output is copied into the buffer:\n{text}");
}
