//! A case's own tolerance: `<case>/tolerance.txt`.
//!
//! ONNX's backend runner lets a case loosen the default tolerance (its `data.json` `rtol` /
//! `atol`, e.g. densenet121 in the `light` suite), and generated corpora need per-model
//! tolerances (float16 or int8 models cannot meet an fp32 one). The generators
//! (`scripts/gen_node_tests.py`, `scripts/gen_onnx_suites.py`, `scripts/gen_corpus.py`) write
//! such a tolerance as a small text file next to `model.onnx`:
//!
//! ```text
//! rtol=0.002
//! atol=1e-07
//! ```
//!
//! One `key=value` per line; `#` starts a comment line; a key left out keeps the caller's
//! default. Unknown keys and unparsable or negative numbers are errors naming the file, so a
//! typo cannot silently tighten or loosen a check.

use std::path::Path;

use super::{CaseError, Tolerance};

/// The file name, inside a case folder.
pub const TOLERANCE_FILE: &str = "tolerance.txt";

/// The tolerance of the case in `case_dir`: its [`TOLERANCE_FILE`] applied over `default`, or
/// `default` when the case has none.
pub fn read_tolerance(case_dir: &Path, default: Tolerance) -> Result<Tolerance, CaseError> {
    let path = case_dir.join(TOLERANCE_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(default),
        Err(source) => return Err(CaseError::Io { path, source }),
    };
    let bad = |message: String| CaseError::Decode { path: path.clone(), message };
    let mut tol = default;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (key, value) = line.split_once('=').ok_or_else(|| bad(format!("'{line}' is not key=value")))?;
        let v: f64 = value.trim().parse().map_err(|_| bad(format!("'{}' is not a number", value.trim())))?;
        if !(v.is_finite() && v >= 0.0) {
            return Err(bad(format!("{} must be a finite number >= 0, got {v}", key.trim())));
        }
        match key.trim() {
            "rtol" => tol.rtol = v,
            "atol" => tol.atol = v,
            other => return Err(bad(format!("unknown key '{other}' (rtol, atol)"))),
        }
    }
    Ok(tol)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_file(text: Option<&str>) -> Result<Tolerance, CaseError> {
        let dir = tempfile::tempdir().unwrap();
        if let Some(t) = text {
            std::fs::write(dir.path().join(TOLERANCE_FILE), t).unwrap();
        }
        read_tolerance(dir.path(), Tolerance::default())
    }

    #[test]
    fn missing_file_keeps_the_default() {
        assert_eq!(with_file(None).unwrap(), Tolerance::default());
    }

    #[test]
    fn keys_override_the_default_one_by_one() {
        assert_eq!(with_file(Some("rtol=0.002\natol=1e-07\n")).unwrap(), Tolerance { rtol: 0.002, atol: 1e-7 });
        assert_eq!(
            with_file(Some("# fp16\n atol = 0.02 \n")).unwrap(),
            Tolerance { atol: 0.02, ..Tolerance::default() }
        );
    }

    #[test]
    fn malformed_files_are_errors_naming_the_file() {
        for text in ["rtol 0.1", "rtol=abc", "rtol=-1", "atol=inf", "tol=0.1"] {
            let e = with_file(Some(text)).unwrap_err().to_string();
            assert!(e.contains(TOLERANCE_FILE), "{text}: {e}");
        }
    }
}
