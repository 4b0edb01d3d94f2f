//! Shared by the bench targets: model folders, inputs, sessions, provider lists.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use vinort::openvino::Precision;
use vinort::{OpenVino, Provider, Runtime, Session, Tensor};
use vinort_tools::providers::ProviderList;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The benchmark-size models, generated on first use by `scripts/gen-bench-models` (seeded, no
/// downloads; a private Python environment is created if needed).
pub fn bench_models() -> PathBuf {
    if let Some(dir) = std::env::var_os("VINORT_BENCH_MODELS") {
        let dir = PathBuf::from(dir);
        if dir.join("resnet50/model.onnx").exists() {
            return dir;
        }
    }
    let out = Command::new(repo().join("scripts/gen-bench-models"))
        .current_dir(repo())
        .output()
        .expect("scripts/gen-bench-models runs (bash and python3 are needed)");
    assert!(out.status.success(), "scripts/gen-bench-models failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(stdout.lines().last().expect("the script prints the folder").trim())
}

/// `OpenVino::cpu()` pointed at an OpenVINO library: `VINORT_OPENVINO_LIB` when set, else the
/// private environment of `scripts/py-env` (created on first use), so `cargo bench` works on a
/// fresh clone without any setup.
pub fn ov_cpu() -> OpenVino {
    static LIB: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let lib = LIB.get_or_init(|| {
        if let Some(p) = std::env::var_os("VINORT_OPENVINO_LIB") {
            return Some(PathBuf::from(p));
        }
        // The lookup the scripts use (scripts/lib.sh): one place knows where the wheel keeps it.
        let out = Command::new("bash")
            .args(["-c", "source scripts/lib.sh && use_private_openvino && echo \"$VINORT_OPENVINO_LIB\""])
            .current_dir(repo())
            .output()
            .ok()?;
        let libs = String::from_utf8_lossy(&out.stdout).lines().last()?.trim().to_owned();
        (out.status.success() && !libs.is_empty()).then(|| PathBuf::from(libs))
    });
    match lib {
        Some(p) => OpenVino::cpu().library_path(p),
        None => OpenVino::cpu(),
    }
}

/// `test_data_set_0/input_<i>.pb` of a model folder, with the graph input names.
pub fn inputs(dir: &Path) -> Vec<(String, Tensor)> {
    vinort_tools::testcase::read_tensors(&dir.join("test_data_set_0"), "input").unwrap_or_else(|e| panic!("{e}"))
}

pub fn session(model_dir: &Path, providers: Vec<Provider>) -> Session {
    Runtime::load(model_dir.join("model.onnx"))
        .expect("model loads")
        .providers(providers)
        .build()
        .expect("session builds")
}

/// Makes a fresh provider list (providers are consumed by a session).
pub type MakeProviders = fn() -> Vec<Provider>;

/// `list` (`openvino,cpu`, `cpu`) with OpenVINO as `openvino`, which must start.
pub fn providers(list: &str, openvino: &OpenVino) -> Vec<Provider> {
    list.parse::<ProviderList>().expect("a valid provider list").providers(openvino, true)
}

/// The three provider lists every latency bench compares.
pub fn provider_lists() -> Vec<(&'static str, MakeProviders)> {
    vec![
        ("openvino-fp32+cpu", || providers("openvino,cpu", &ov_cpu().precision(Precision::Fp32))),
        ("openvino-default+cpu", || providers("openvino,cpu", &ov_cpu().precision(Precision::Default))),
        ("cpu", || providers("cpu", &OpenVino::cpu())),
    ]
}
