//! A wrong `libopenvino_c`: not a library, one without OpenVINO's C API, one too old, one
//! lacking functions vinort calls, one reporting no version. Each is a clear error naming the
//! file and what is wrong, never a panic (openvino-sys would panic at the first call of a
//! missing function, and on a version it cannot parse). The stand-in libraries are built here
//! with the C compiler (`cc`), since the process loads OpenVINO once: each case runs the
//! binary with `VINORT_OPENVINO_LIB` pointing at one of them.

use std::path::{Path, PathBuf};
use std::process::Command;

use vinort_openvino::ffi::SYMBOLS;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds `libopenvino_c.so` in `dir` exporting `symbols` (each a stub returning a failure
/// status) and, with `version`, an `ov_get_openvino_version` reporting it.
fn stand_in(dir: &Path, version: Option<&str>, symbols: &[&str]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let mut c = String::new();
    if let Some(version) = version {
        c += "typedef struct { const char* buildNumber; const char* description; } ov_version_t;\n";
        c += &format!("int ov_get_openvino_version(ov_version_t* v) {{ v->buildNumber = \"{version}\"; return 0; }}\n");
        c += "void ov_version_free(ov_version_t* v) { (void)v; }\n";
    }
    for s in symbols.iter().filter(|s| !["ov_get_openvino_version", "ov_version_free"].contains(s)) {
        c += &format!("int {s}(void) {{ return -1; }}\n");
    }
    let src = dir.join("stand_in.c");
    std::fs::write(&src, c).unwrap();
    let lib = dir.join("libopenvino_c.so");
    let out = Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(&lib).arg(&src).output().expect("cc runs");
    assert!(out.status.success(), "cc failed: {}", String::from_utf8_lossy(&out.stderr));
    lib
}

/// `vinort run` strict on OpenVINO with this library: it must fail cleanly; returns stderr.
fn run_with(lib: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_vinort"))
        .current_dir(repo())
        .env("VINORT_OPENVINO_LIB", lib)
        .args(["run", "models/bert_tiny/model.onnx", "-e", "openvino,cpu", "--strict", "-r", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "a clean failure, not a crash or a success:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(&lib.display().to_string()), "the error names the file:\n{err}");
    err
}

#[test]
fn a_wrong_openvino_library_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();

    let not_a_library = tmp.path().join("text").join("libopenvino_c.so");
    std::fs::create_dir_all(not_a_library.parent().unwrap()).unwrap();
    std::fs::write(&not_a_library, "not an ELF file").unwrap();
    let err = run_with(&not_a_library);
    assert!(err.contains("cannot load"), "{err}");

    let foreign = stand_in(&tmp.path().join("foreign"), None, &["unrelated_function"]);
    let err = run_with(&foreign);
    assert!(err.contains("exports none of OpenVINO's C API"), "{err}");

    let older = stand_in(&tmp.path().join("older"), Some("2024.6.0-17404-4c0f47d2335-releases/2024/6"), SYMBOLS);
    let err = run_with(&older);
    assert!(err.contains("2024.6.0") && err.contains("2025.1"), "names the version and the minimum:\n{err}");

    let dropped = ["ov_core_create", "ov_infer_request_infer", "ov_tensor_data"];
    let kept: Vec<&str> = SYMBOLS.iter().copied().filter(|s| !dropped.contains(s)).collect();
    let lacking = stand_in(&tmp.path().join("lacking"), Some("2026.4.1"), &kept);
    let err = run_with(&lacking);
    assert!(err.contains(&format!("lacks 3 of the {} OpenVINO C functions", SYMBOLS.len())), "{err}");
    assert!(dropped.iter().all(|d| err.contains(d)), "names the missing functions:\n{err}");

    let unversioned = stand_in(&tmp.path().join("unversioned"), Some("custom build"), SYMBOLS);
    let err = run_with(&unversioned);
    assert!(err.contains("`custom build` is not OpenVINO's"), "{err}");
}
