//! Finding `libopenvino_c` at run time.
//!
//! Order: an explicit path given in code, then the `VINORT_OPENVINO_LIB` environment variable
//! (a file or a folder), then the `openvino` package of the Python found on `PATH`
//! (`site-packages/openvino/libs/libopenvino_c.so.*` — the PyPI wheel ships only versioned
//! names), then system locations. Every place tried is remembered for the error message.

use std::path::{Path, PathBuf};

/// The environment variable naming the OpenVINO C library (file) or its folder.
pub const ENV_VAR: &str = "VINORT_OPENVINO_LIB";

/// The command that installs the OpenVINO release vinort is tested with.
pub const INSTALL_HINT: &str = "python3 -m pip install openvino==2026.4.1";

/// Where the search looked and what it found.
#[derive(Debug, Clone, Default)]
pub struct Search {
    /// Places tried, in order, each with what was wrong there.
    pub tried: Vec<String>,
    /// The library, when found.
    pub found: Option<PathBuf>,
}

fn lib_in_dir(dir: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut best: Option<(Vec<u64>, PathBuf)> = None;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_prefix("libopenvino_c.so") else { continue };
        // "" (unversioned) or ".2641" / ".2026.4.1": prefer the highest version.
        let version: Vec<u64> = rest.split('.').filter(|s| !s.is_empty()).map(|s| s.parse().unwrap_or(0)).collect();
        if best.as_ref().is_none_or(|(v, _)| version > *v) {
            best = Some((version, e.path()));
        }
    }
    best.map(|(_, p)| p)
}

fn check(path: &Path, what: &str, s: &mut Search) -> bool {
    if path.is_file() {
        s.found = Some(path.to_owned());
        return true;
    }
    if path.is_dir() {
        if let Some(p) = lib_in_dir(path) {
            s.found = Some(p);
            return true;
        }
        s.tried.push(format!("{what}: {} (no libopenvino_c.so* in it)", path.display()));
    } else {
        s.tried.push(format!("{what}: {} (does not exist)", path.display()));
    }
    false
}

fn python_paths(python: &str) -> Result<Vec<PathBuf>, String> {
    let out = std::process::Command::new(python)
        .args(["-c", "import sys; print('\\n'.join(p for p in sys.path if p))"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{python} exited with {}", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().map(PathBuf::from).collect())
}

/// Searches for the library.
pub fn search(explicit: Option<&Path>) -> Search {
    let mut s = Search::default();
    if let Some(p) = explicit
        && check(p, "explicit path", &mut s)
    {
        return s;
    }
    match std::env::var_os(ENV_VAR) {
        Some(v) if !v.is_empty() => {
            if check(Path::new(&v), ENV_VAR, &mut s) {
                return s;
            }
        }
        _ => s.tried.push(format!("{ENV_VAR}: not set")),
    }
    for python in ["python3", "python"] {
        match python_paths(python) {
            Ok(paths) => {
                let mut any = false;
                for p in paths {
                    let libs = p.join("openvino").join("libs");
                    if libs.is_dir() {
                        any = true;
                        if check(&libs, &format!("{python} package"), &mut s) {
                            return s;
                        }
                    }
                }
                if !any {
                    s.tried.push(format!("{python} on PATH: no 'openvino' package in its sys.path"));
                }
            }
            Err(e) => s.tried.push(format!("{python} on PATH: {e}")),
        }
    }
    let mut system: Vec<PathBuf> =
        std::env::var_os("LD_LIBRARY_PATH").map(|v| std::env::split_paths(&v).collect()).unwrap_or_default();
    system.extend(
        ["/opt/intel/openvino/runtime/lib/intel64", "/usr/local/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib"]
            .iter()
            .map(PathBuf::from),
    );
    for dir in system {
        if dir.is_dir() {
            if let Some(p) = lib_in_dir(&dir) {
                s.found = Some(p);
                return s;
            }
            s.tried.push(format!("system: {} (no libopenvino_c.so*)", dir.display()));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefers_the_highest_versioned_name_and_explains_misses() {
        let d = tempfile::tempdir().unwrap();
        for n in ["libopenvino_c.so.2541", "libopenvino_c.so.2641", "libopenvino.so.2641"] {
            std::fs::write(d.path().join(n), b"").unwrap();
        }
        assert_eq!(lib_in_dir(d.path()).unwrap().file_name().unwrap(), "libopenvino_c.so.2641");
        let s = search(Some(d.path()));
        assert_eq!(s.found.unwrap().file_name().unwrap(), "libopenvino_c.so.2641");
        let empty = tempfile::tempdir().unwrap();
        let mut s = Search::default();
        assert!(!check(empty.path(), "explicit path", &mut s));
        assert!(s.tried[0].contains("no libopenvino_c.so*"));
        assert!(!check(&empty.path().join("nope"), "x", &mut s));
        assert!(s.tried[1].contains("does not exist"));
    }
}
