//! `vinort run --output-dir DIR`: every output as `output_<i>.pb` (an ONNX `TensorProto` named
//! after the output, as test-data folders hold them) and as `<name>.npy`.
//!
//! The `.npy` writer is written here rather than taken from a crate: the format (NumPy's
//! `format.py`, version 1.0) is a magic string, a two-byte length and a Python-literal header
//! padded to 64 bytes, then the raw little-endian elements — about thirty lines — while the
//! crates that write it (`ndarray-npy`, `npyz`) bring `ndarray` or a generic array layer the
//! CLI has no other use for.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use vinort::ir::proto::prost::Message;
use vinort::ir::tensor_proto::tensor_to_proto;
use vinort::{DType, Tensor, Value};

/// Writes `outputs` (name, value, in graph order) into `dir`, creating it. Returns the files
/// written, and one note per output that could not be written as a `.npy` or at all.
pub fn write_outputs<'a>(
    dir: &Path,
    outputs: impl IntoIterator<Item = (&'a str, &'a Value)>,
) -> Result<(Vec<PathBuf>, Vec<String>)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = vec![];
    let mut notes = vec![];
    let mut stems: Vec<String> = vec![];
    for (i, (name, value)) in outputs.into_iter().enumerate() {
        let Value::Tensor(t) = value else {
            notes.push(format!("output {i} ({name}) is a {}: only tensors are written", value.value_type()));
            continue;
        };
        let pb = dir.join(format!("output_{i}.pb"));
        std::fs::write(&pb, tensor_to_proto(name, t).encode_to_vec())
            .with_context(|| format!("writing {}", pb.display()))?;
        written.push(pb);
        let stem = unique_stem(&file_stem(name, i), &stems, i);
        match npy(t) {
            Ok(bytes) => {
                let path = dir.join(format!("{stem}.npy"));
                std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
                written.push(path);
            }
            Err(e) => notes.push(format!("output {i} ({name}): no .npy written: {e}")),
        }
        stems.push(stem);
    }
    Ok((written, notes))
}

/// A file name from an output name: characters other than ASCII letters, digits, `-`, `_` and
/// `.` become `_`, a leading `.` too (no hidden files, no `..`), and at most 100 characters are
/// kept. An empty result is `output_<i>`.
fn file_stem(name: &str, i: usize) -> String {
    let mut s: String = name
        .chars()
        .take(100)
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' })
        .collect();
    if s.starts_with('.') {
        s.replace_range(..1, "_");
    }
    if s.is_empty() { format!("output_{i}") } else { s }
}

/// `stem`, or `stem_<i>` when an earlier output took it (compared without case, for
/// case-insensitive file systems).
fn unique_stem(stem: &str, taken: &[String], i: usize) -> String {
    let clash = |s: &str| taken.iter().any(|t| t.eq_ignore_ascii_case(s));
    if clash(stem) { format!("{stem}_{i}") } else { stem.to_owned() }
}

/// NumPy's `descr` for an element type, byte order included; `None` for types NumPy lacks
/// (bfloat16, the float8/float4/int4 families) and for strings (handled apart).
fn descr(d: DType) -> Option<&'static str> {
    let little = cfg!(target_endian = "little");
    let pick = |le: &'static str, be: &'static str| Some(if little { le } else { be });
    match d {
        DType::Bool => Some("|b1"),
        DType::U8 => Some("|u1"),
        DType::I8 => Some("|i1"),
        DType::U16 => pick("<u2", ">u2"),
        DType::I16 => pick("<i2", ">i2"),
        DType::U32 => pick("<u4", ">u4"),
        DType::I32 => pick("<i4", ">i4"),
        DType::U64 => pick("<u8", ">u8"),
        DType::I64 => pick("<i8", ">i8"),
        DType::F16 => pick("<f2", ">f2"),
        DType::F32 => pick("<f4", ">f4"),
        DType::F64 => pick("<f8", ">f8"),
        DType::Complex64 => pick("<c8", ">c8"),
        DType::Complex128 => pick("<c16", ">c16"),
        _ => None,
    }
}

/// The `.npy` (format 1.0) bytes of a tensor, C order. Strings become NumPy's fixed-width
/// UTF-32 `<U{n}`, `n` the longest string's length in characters.
pub fn npy(t: &Tensor) -> Result<Vec<u8>> {
    let (descr, data): (String, Vec<u8>) = if t.dtype() == DType::String {
        let strings = t.as_strings()?;
        let width = strings.iter().map(|s| s.chars().count()).max().unwrap_or(0).max(1);
        let mut data = Vec::with_capacity(strings.len() * width * 4);
        for s in strings {
            let mut n = 0;
            for c in s.chars() {
                data.extend_from_slice(&(c as u32).to_le_bytes());
                n += 1;
            }
            data.resize(data.len() + (width - n) * 4, 0);
        }
        (format!("<U{width}"), data)
    } else {
        let Some(d) = descr(t.dtype()) else { bail!("NumPy has no {} type", t.dtype()) };
        (d.to_owned(), t.as_bytes().to_vec())
    };
    let shape = match t.shape() {
        [] => "()".to_owned(),
        [n] => format!("({n},)"),
        dims => format!("({})", dims.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64 and
    // ended by a newline, so the data starts aligned.
    let total = (10 + header.len() + 1).div_ceil(64) * 64;
    header.push_str(&" ".repeat(total - 10 - header.len() - 1));
    header.push('\n');
    let Ok(len) = u16::try_from(header.len()) else {
        bail!("a shape of {} dims is too long for .npy 1.0", t.shape().len())
    };
    let mut out = Vec::with_capacity(total + data.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&data);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_numpys_1_0_layout() {
        let t = Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let b = npy(&t).unwrap();
        assert_eq!(&b[..8], b"\x93NUMPY\x01\x00");
        let len = u16::from_le_bytes([b[8], b[9]]) as usize;
        assert_eq!((10 + len) % 64, 0);
        let header = std::str::from_utf8(&b[10..10 + len]).unwrap();
        assert!(header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), "{header}");
        assert!(header.ends_with('\n'));
        assert_eq!(&b[10 + len..], t.as_bytes());
    }

    #[test]
    fn npy_scalars_vectors_bools_and_strings() {
        let header = |t: &Tensor| {
            let b = npy(t).unwrap();
            let len = u16::from_le_bytes([b[8], b[9]]) as usize;
            (String::from_utf8(b[10..10 + len].to_vec()).unwrap(), b[10 + len..].to_vec())
        };
        let (h, _) = header(&Tensor::from_vec(&[], vec![7i64]).unwrap());
        assert!(h.contains("'descr': '<i8'") && h.contains("'shape': ()"), "{h}");
        let (h, d) = header(&Tensor::from_vec(&[3], vec![true, false, true]).unwrap());
        assert!(h.contains("'descr': '|b1'") && h.contains("'shape': (3,)"), "{h}");
        assert_eq!(d, [1, 0, 1]);
        let (h, d) = header(&Tensor::from_strings(&[2], vec!["ab".into(), "é".into()]).unwrap());
        assert!(h.contains("'descr': '<U2'"), "{h}");
        assert_eq!(d.len(), 16);
        assert_eq!(&d[8..12], &('é' as u32).to_le_bytes());
        assert!(npy(&Tensor::zeros(DType::BF16, &[1])).is_err());
    }

    #[test]
    fn file_stems_are_safe_and_unique() {
        assert_eq!(file_stem("../a/b:c", 0), "_._a_b_c");
        assert_eq!(file_stem("", 3), "output_3");
        assert_eq!(file_stem("prob.s-1_x", 0), "prob.s-1_x");
        assert_eq!(unique_stem("Y", &["y".into()], 4), "Y_4");
    }
}
