//! `TensorProto` ⇄ [`Tensor`], including external data.
//!
//! `raw_data` and external data stay shared with the buffer they came from (the mapped model
//! file, or a mapped external-data file): a weight is never copied at load time, except for
//! sub-byte types, which are unpacked to one byte per element, and for the typed repeated
//! fields (`float_data`, ...), which protobuf has already decoded into vectors.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use half::{bf16, f16};
use prost::Message;
use vinort_proto::onnx::{self, TensorProto};

use crate::dtype::{DType, Elem};
use crate::error::{Error, Result};
use crate::tensor::{Tensor, numel};

/// Resolves external-data locations relative to the model's folder, mapping each file once.
#[derive(Debug, Default)]
pub struct ExternalData {
    base: Option<PathBuf>,
    maps: Mutex<HashMap<PathBuf, Bytes>>,
}

impl ExternalData {
    /// External data resolved against `base` (the model's folder); `None` refuses all
    /// external data (for models loaded from bytes without a folder).
    pub fn new(base: Option<PathBuf>) -> ExternalData {
        ExternalData { base, maps: Mutex::new(HashMap::new()) }
    }

    /// The files mapped so far (canonical paths) with their mappings.
    pub fn into_files(self) -> Vec<(PathBuf, Bytes)> {
        self.maps.into_inner().unwrap_or_else(|p| p.into_inner()).into_iter().collect()
    }

    fn load(&self, tensor: &str, entries: &[onnx::StringStringEntryProto], nbytes: usize) -> Result<Bytes> {
        let err = |message: String| Error::ExternalData { tensor: tensor.to_owned(), message };
        let mut location = None;
        let mut offset = 0usize;
        let mut length = None;
        for e in entries {
            let v = e.value.as_deref().unwrap_or("");
            match e.key.as_deref().unwrap_or("") {
                "location" => location = Some(v.to_owned()),
                "offset" => {
                    offset = v.parse().map_err(|_| err(format!("offset '{v}' is not a non-negative integer")))?
                }
                "length" => {
                    length = Some(
                        v.parse::<usize>().map_err(|_| err(format!("length '{v}' is not a non-negative integer")))?,
                    )
                }
                _ => {}
            }
        }
        let location = location.ok_or_else(|| err("no 'location' key".into()))?;
        // OpenVINO's ONNX reader takes this location as "the offset is a memory address": a
        // file naming it would make OpenVINO read arbitrary memory when it compiles the file.
        if location == IN_MEMORY_MARKER {
            return Err(err(format!(
                "location '{location}' is reserved for in-memory data; a model file cannot use it"
            )));
        }
        let rel = Path::new(&location);
        if rel.is_absolute() || location.starts_with('/') || location.starts_with('\\') {
            return Err(err(format!(
                "location '{location}' is an absolute path; it must be relative to the model's folder"
            )));
        }
        if rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
            return Err(err(format!("location '{location}' leaves the model's folder")));
        }
        let base = self.base.as_ref().ok_or_else(|| {
            err("the model was loaded from bytes without a folder, so external data cannot be found".into())
        })?;
        let path = base.join(rel);
        // Symbolic links could still point outside: compare canonical paths.
        let canon = path.canonicalize().map_err(|e| err(format!("cannot open '{}': {e}", path.display())))?;
        let canon_base =
            base.canonicalize().map_err(|e| err(format!("cannot resolve model folder '{}': {e}", base.display())))?;
        if !canon.starts_with(&canon_base) {
            return Err(err(format!("location '{location}' resolves outside the model's folder")));
        }
        let file_bytes = {
            let mut maps = self.maps.lock().unwrap_or_else(|p| p.into_inner());
            match maps.get(&canon) {
                Some(b) => b.clone(),
                None => {
                    let b = map_file(&canon).map_err(|e| err(format!("cannot map '{}': {e}", canon.display())))?;
                    maps.insert(canon.clone(), b.clone());
                    b
                }
            }
        };
        let len = length.unwrap_or(nbytes);
        if len != nbytes {
            return Err(err(format!(
                "length {len} does not match the {nbytes} bytes the tensor's type and shape need"
            )));
        }
        let end = offset.checked_add(len).filter(|e| *e <= file_bytes.len()).ok_or_else(|| {
            err(format!(
                "bytes {offset}..{} lie beyond the end of '{location}' ({} bytes)",
                offset as u128 + len as u128,
                file_bytes.len()
            ))
        })?;
        Ok(file_bytes.slice(offset..end))
    }
}

/// The external-data location OpenVINO's ONNX frontend reads from memory (see
/// `vinort_openvino::export`).
pub const IN_MEMORY_MARKER: &str = "*/_ORT_MEM_ADDR_/*";

/// Owner of a mapping, shared by the `Bytes` sliced from it; [`LIVE`] holds it weakly.
struct SharedMap(Arc<memmap2::Mmap>);

impl AsRef<[u8]> for SharedMap {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Every mapping [`map_file`] made that is still alive, so that [`release_pages_of`] can check
/// that a slice lies inside one.
static LIVE: Mutex<Vec<std::sync::Weak<memmap2::Mmap>>> = Mutex::new(Vec::new());

/// Drops the pages under `bytes` from the resident set (`MADV_DONTNEED`) when `bytes` lies
/// inside a mapping [`map_file`] made (a weight, or a whole mapped model or external-data
/// file); does nothing for any other memory. Nothing is lost: the mapping is read-only and
/// never written, so a later read faults the same bytes back in from the page cache or the
/// file. A kernel builder that has just made its own form of a weight calls it (the build's
/// peak then holds one copy of each weight, not two), and a built session calls it on its
/// whole mapped files ([`crate::Model::release_weight_pages`]).
pub fn release_pages_of(bytes: &[u8]) {
    #[cfg(unix)]
    {
        let start = bytes.as_ptr() as usize;
        if bytes.is_empty() {
            return;
        }
        let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        live.retain(|w| w.strong_count() > 0);
        for map in live.iter().filter_map(std::sync::Weak::upgrade) {
            let base = map.as_ptr() as usize;
            if start >= base && start + bytes.len() <= base + map.len() {
                // SAFETY: DONTNEED discards private modifications of a mapping; this one is
                // read-only (PROT_READ) and file-backed, so every reader sees the file's bytes
                // again. The range (widened to whole pages by memmap2) lies inside it; failure
                // only leaves the pages resident.
                let _ = unsafe {
                    map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start - base, bytes.len())
                };
                return;
            }
        }
    }
}

/// Maps a whole file read-only and shares it as `Bytes` (empty files become empty bytes).
pub fn map_file(path: &Path) -> std::io::Result<Bytes> {
    let file = std::fs::File::open(path)?;
    if file.metadata()?.len() == 0 {
        return Ok(Bytes::new());
    }
    // SAFETY: the mapping is read-only; like every mmap-based loader we rely on model files
    // not being truncated while in use (documented in the crate docs).
    let map = Arc::new(unsafe { memmap2::Mmap::map(&file) }?);
    LIVE.lock().unwrap_or_else(|p| p.into_inner()).push(Arc::downgrade(&map));
    Ok(Bytes::from_owner(SharedMap(map)))
}

fn dims_of(name: &str, dims: &[i64]) -> Result<Vec<usize>> {
    let mut total: usize = 1;
    let mut out = Vec::with_capacity(dims.len());
    for d in dims {
        let d = usize::try_from(*d).map_err(|_| Error::Tensor {
            tensor: name.into(),
            message: format!("negative dimension {d} in {dims:?}"),
        })?;
        total = total.checked_mul(d).filter(|t| *t <= isize::MAX as usize / 16).ok_or_else(|| Error::Tensor {
            tensor: name.into(),
            message: format!("shape {dims:?} has too many elements"),
        })?;
        out.push(d);
    }
    Ok(out)
}

/// Converts a `TensorProto` to a tensor. `ext` resolves external data.
pub fn tensor_from_proto(t: &TensorProto, ext: &ExternalData) -> Result<Tensor> {
    let name = t.name.as_deref().unwrap_or("");
    let terr = |message: String| Error::Tensor { tensor: name.to_owned(), message };
    let code = t.data_type.unwrap_or(0);
    let dtype = DType::from_onnx(code).ok_or_else(|| terr(format!("unknown or undefined data type {code}")))?;
    let shape = dims_of(name, &t.dims)?;
    let n = numel(&shape);
    // A segment is one chunk of a larger tensor stored across several TensorProtos; read as
    // the whole tensor it would be a wrong value (onnxruntime refuses it too).
    if let Some(seg) = &t.segment {
        return Err(terr(format!(
            "is a segment ({}..{}) of a larger tensor (TensorProto.segment), which vinort does not assemble",
            seg.begin.unwrap_or(0),
            seg.end.unwrap_or(0)
        )));
    }

    let external = t.data_location == Some(onnx::tensor_proto::DataLocation::External as i32);
    if dtype == DType::String {
        if external || t.raw_data.is_some() {
            return Err(terr("string tensors must use string_data".into()));
        }
        if t.string_data.len() != n {
            return Err(terr(format!("{} strings given for shape {shape:?}", t.string_data.len())));
        }
        let s = t.string_data.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
        return Tensor::from_strings(&shape, s);
    }
    let packed_len = n
        .checked_mul(dtype.packed_bits())
        .map(|bits| bits.div_ceil(8))
        .ok_or_else(|| terr(format!("shape {shape:?} holds more {dtype} elements than memory can")))?;
    let raw = if external { Some(ext.load(name, &t.external_data, packed_len)?) } else { t.raw_data.clone() };
    if let Some(raw) = raw {
        if raw.len() != packed_len {
            return Err(terr(format!(
                "raw data has {} bytes, but a {dtype} tensor of shape {shape:?} needs {packed_len}",
                raw.len()
            )));
        }
        return match dtype.packed_bits() {
            4 | 2 => unpack_sub_byte(dtype, &shape, &raw),
            _ if matches!(dtype, DType::F6E2M3 | DType::F6E3M2) => {
                Err(Error::unsupported(format!("tensor '{name}': packed raw data of {dtype}")))
            }
            _ => Tensor::from_shared_bytes(dtype, &shape, raw).map_err(|e| terr(e.to_string())),
        };
    }
    typed_fields(t, dtype, &shape).map_err(|e| terr(e.to_string()))
}

fn unpack_sub_byte(dtype: DType, shape: &[usize], raw: &[u8]) -> Result<Tensor> {
    let bits = dtype.packed_bits();
    let per = 8 / bits;
    let mask = (1u8 << bits) - 1;
    let get = |i: usize| (raw[i / per] >> ((i % per) * bits)) & mask;
    if matches!(dtype, DType::I4 | DType::I2) {
        // Sign-extend from the top bit of the field.
        Tensor::build_as::<i8>(dtype, shape, |out| {
            for (i, o) in out.iter_mut().enumerate() {
                let v = get(i);
                *o = (if v & (1 << (bits - 1)) != 0 { v | !mask } else { v }) as i8;
            }
        })
    } else {
        Tensor::build_as::<u8>(dtype, shape, |out| {
            for (i, o) in out.iter_mut().enumerate() {
                *o = get(i);
            }
        })
    }
}

fn check<T>(v: &[T], n: usize, field: &str) -> Result<()> {
    if v.len() != n {
        return Err(Error::invalid(format!("{field} has {} values, the shape needs {n}", v.len())));
    }
    Ok(())
}

/// A typed field whose values already have the element type: one per element, copied as is.
fn same_type_field<T: Elem>(shape: &[usize], values: &[T], field: &str) -> Result<Tensor> {
    check(values, numel(shape), field)?;
    Tensor::from_slice(shape, values)
}

fn from_i32s<T: Elem>(t: &TensorProto, shape: &[usize], conv: impl Fn(i32) -> T) -> Result<Tensor> {
    check(&t.int32_data, numel(shape), "int32_data")?;
    Ok(Tensor::build::<T>(shape, |o| {
        for (o, v) in o.iter_mut().zip(&t.int32_data) {
            *o = conv(*v);
        }
    }))
}

fn typed_fields(t: &TensorProto, dtype: DType, shape: &[usize]) -> Result<Tensor> {
    use DType::*;
    let n = numel(shape);
    match dtype {
        F32 => same_type_field(shape, &t.float_data, "float_data"),
        F64 => same_type_field(shape, &t.double_data, "double_data"),
        I64 => same_type_field(shape, &t.int64_data, "int64_data"),
        U64 => same_type_field(shape, &t.uint64_data, "uint64_data"),
        U32 => {
            check(&t.uint64_data, n, "uint64_data")?;
            Ok(Tensor::build::<u32>(shape, |o| o.iter_mut().zip(&t.uint64_data).for_each(|(o, v)| *o = *v as u32)))
        }
        I32 => from_i32s::<i32>(t, shape, |v| v),
        I16 => from_i32s::<i16>(t, shape, |v| v as i16),
        I8 => from_i32s::<i8>(t, shape, |v| v as i8),
        U16 => from_i32s::<u16>(t, shape, |v| v as u16),
        U8 => from_i32s::<u8>(t, shape, |v| v as u8),
        Bool => from_i32s::<bool>(t, shape, |v| v != 0),
        F16 => from_i32s::<f16>(t, shape, |v| f16::from_bits(v as u16)),
        BF16 => from_i32s::<bf16>(t, shape, |v| bf16::from_bits(v as u16)),
        F8E4M3FN | F8E4M3FNUZ | F8E5M2 | F8E5M2FNUZ | F8E8M0 | F6E2M3 | F6E3M2 => {
            let u = from_i32s::<u8>(t, shape, |v| v as u8)?;
            u.relabel(dtype)
        }
        U4 | I4 | F4E2M1 | U2 | I2 => {
            let per = 8 / dtype.packed_bits();
            let words = n.div_ceil(per);
            check(&t.int32_data, words, "int32_data (packed)")?;
            let raw: Vec<u8> = t.int32_data.iter().map(|v| *v as u8).collect();
            unpack_sub_byte(dtype, shape, &raw)
        }
        Complex64 => {
            check(&t.float_data, 2 * n, "float_data (complex pairs)")?;
            let b = Tensor::from_slice(&[2 * n], &t.float_data)?;
            Tensor::from_shared_bytes(Complex64, shape, b.shared_bytes().unwrap_or_default())
        }
        Complex128 => {
            check(&t.double_data, 2 * n, "double_data (complex pairs)")?;
            let b = Tensor::from_slice(&[2 * n], &t.double_data)?;
            Tensor::from_shared_bytes(Complex128, shape, b.shared_bytes().unwrap_or_default())
        }
        String => unreachable!("strings are handled by the caller"),
    }
}

/// Converts a tensor to a `TensorProto` with `raw_data` (sub-byte types packed). The bytes are
/// shared with the tensor when it needs no packing.
pub fn tensor_to_proto(name: &str, t: &Tensor) -> TensorProto {
    let mut p = TensorProto {
        name: Some(name.to_owned()),
        dims: t.shape().iter().map(|d| *d as i64).collect(),
        data_type: Some(t.dtype().onnx_code()),
        ..Default::default()
    };
    if t.dtype() == DType::String {
        p.string_data =
            t.as_strings().map(|s| s.iter().map(|s| Bytes::from(s.clone().into_bytes())).collect()).unwrap_or_default();
        return p;
    }
    let bits = t.dtype().packed_bits();
    if bits < 8 {
        let per = 8 / bits;
        let mask = (1u8 << bits) - 1;
        let src = t.as_bytes();
        let mut out = vec![0u8; src.len().div_ceil(per)];
        for (i, v) in src.iter().enumerate() {
            out[i / per] |= (v & mask) << ((i % per) * bits);
        }
        p.raw_data = Some(Bytes::from(out));
    } else {
        p.raw_data = Some(t.shared_bytes().unwrap_or_default());
    }
    p
}

/// Decodes a serialized `TensorProto` (as in `input_0.pb` files) into a tensor.
pub fn decode_tensor(bytes: Bytes) -> Result<(String, Tensor)> {
    let p = TensorProto::decode(bytes).map_err(|e| Error::decode(&e))?;
    // A standalone file's raw bytes sit at an arbitrary offset: align them once here so
    // consumers get typed access.
    let t = tensor_from_proto(&p, &ExternalData::new(None))?.to_aligned();
    Ok((p.name.unwrap_or_default(), t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int4_round_trips_through_packing() {
        let vals: Vec<i8> = vec![-8, -1, 0, 7, 3];
        let t = Tensor::build_as::<i8>(DType::I4, &[5], |o| o.copy_from_slice(&vals)).unwrap();
        let p = tensor_to_proto("x", &t);
        assert_eq!(p.raw_data.as_ref().unwrap().len(), 3);
        let back = tensor_from_proto(&p, &ExternalData::default()).unwrap();
        assert_eq!(back.dtype(), DType::I4);
        assert_eq!(back.as_slice::<i8>().unwrap(), &vals[..]);
    }

    /// A segment of a larger tensor is refused, naming the tensor, never read as a whole one.
    #[test]
    fn a_tensor_segment_is_refused() {
        let seg = TensorProto {
            data_type: Some(7),
            dims: vec![1],
            int64_data: vec![2],
            name: Some("axes".into()),
            segment: Some(onnx::tensor_proto::Segment { begin: Some(-1), end: Some(-1_099_511_627_776) }),
            ..Default::default()
        };
        let e = tensor_from_proto(&seg, &ExternalData::default()).unwrap_err().to_string();
        assert!(e.contains("'axes'") && e.contains("segment"), "{e}");
    }

    #[test]
    fn typed_fields_and_bad_counts() {
        let p =
            TensorProto { data_type: Some(10), dims: vec![2], int32_data: vec![0x3c00, 0xc000], ..Default::default() };
        let t = tensor_from_proto(&p, &ExternalData::default()).unwrap();
        assert_eq!(t.to_f64_vec().unwrap(), vec![1.0, -2.0]);
        let bad = TensorProto {
            data_type: Some(1),
            dims: vec![3],
            float_data: vec![1.0],
            name: Some("w".into()),
            ..Default::default()
        };
        let e = tensor_from_proto(&bad, &ExternalData::default()).unwrap_err().to_string();
        assert!(e.contains("'w'") && e.contains("float_data"), "{e}");
        let neg = TensorProto { data_type: Some(1), dims: vec![-3], ..Default::default() };
        assert!(tensor_from_proto(&neg, &ExternalData::default()).is_err());
        let huge = TensorProto { data_type: Some(1), dims: vec![1 << 40, 1 << 40], ..Default::default() };
        assert!(tensor_from_proto(&huge, &ExternalData::default()).is_err());
    }
}
