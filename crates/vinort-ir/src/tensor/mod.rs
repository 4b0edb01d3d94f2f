//! Dense tensors: an element type, a shape and storage that is owned (64-byte aligned),
//! shared with a memory-mapped model file, or borrowed from the caller.

use std::sync::Arc;

use bytes::Bytes;
use smallvec::SmallVec;

use crate::dtype::{DType, Elem};
use crate::error::{Error, Result};

#[cfg(feature = "ndarray")]
mod array;
mod buffer;

use buffer::Shared;
pub use buffer::{ALIGN, AlignedBuf, pool};

/// A tensor shape: one extent per axis, stored inline up to rank 6.
pub type Shape = SmallVec<[usize; 6]>;

/// Number of elements of a shape (1 for a scalar). A count that overflows `usize` saturates
/// at `usize::MAX`, which no allocation meets (see [`crate::limits`]): it never wraps to a
/// small number.
pub fn numel(shape: &[usize]) -> usize {
    crate::limits::byte_size(shape, 1).unwrap_or(usize::MAX)
}

/// Bytes of `n` elements of `size` bytes, saturating like [`numel`].
fn bytes_of(n: usize, size: usize) -> usize {
    n.saturating_mul(size)
}

/// Row-major strides (in elements) of a shape.
pub fn strides_of(shape: &[usize]) -> Shape {
    let mut s: Shape = smallvec::smallvec![1; shape.len()];
    // Saturating: the strides of a shape too big to allocate are never used for one.
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1].saturating_mul(shape[i + 1]);
    }
    s
}

/// The row-major multi-index of flat offset `flat` in `shape` (the inverse of summing index
/// times [`strides_of`]).
pub fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (i, d) in shape.iter().enumerate().rev() {
        if *d > 0 {
            idx[i] = flat % d;
            flat /= d;
        }
    }
    idx
}

/// Where a tensor's bytes live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A 64-byte aligned buffer this process allocated.
    Owned,
    /// A slice of shared bytes, such as the memory-mapped model file.
    Shared,
    /// Memory lent by the caller for the duration of one `run`.
    Borrowed,
}

#[derive(Clone)]
enum Data {
    /// Storage this process allocated ([`Origin::Owned`]), pooled when the last owner drops.
    Owned(Shared),
    Bytes {
        bytes: Bytes,
        origin: Origin,
    },
    Strings(Arc<[String]>),
}

/// A dense, row-major tensor. Cloning is cheap: storage is reference counted and never copied
/// implicitly.
#[derive(Clone)]
pub struct Tensor {
    dtype: DType,
    shape: Shape,
    data: Data,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensor<{}>{:?}", self.dtype, self.shape.as_slice())
    }
}

/// True when storage of `stored` may be viewed as elements of `as_`: the same type, or the
/// one-byte carrier of an unpacked sub-byte or 8-bit float type.
fn storage_compatible(stored: DType, as_: DType) -> bool {
    use DType::*;
    stored == as_
        || matches!(
            (stored, as_),
            (U4 | U2 | F4E2M1 | F8E4M3FN | F8E4M3FNUZ | F8E5M2 | F8E5M2FNUZ | F8E8M0, U8)
                | (I4 | I2, I8)
                | (F6E2M3 | F6E3M2, U8)
        )
}

impl Tensor {
    /// A tensor of zeros (empty strings for `String`).
    ///
    /// # Panics
    /// Like every infallible constructor here, when the tensor is over the memory limits
    /// ([`crate::limits`]): inside [`crate::limits::guard`] (every kernel runs in one) that
    /// is [`Error::MemoryLimit`]; the fallible constructors (`from_slice`, `from_vec`,
    /// `build_raw`, `build_as`) return that error themselves.
    pub fn zeros(dtype: DType, shape: &[usize]) -> Tensor {
        let n = numel(shape);
        if dtype == DType::String {
            if let Err(r) = crate::limits::check(bytes_of(n, std::mem::size_of::<String>())) {
                crate::limits::refuse(r)
            }
            return Tensor { dtype, shape: shape.into(), data: Data::Strings(vec![String::new(); n].into()) };
        }
        let buf = Shared::zeroed(bytes_of(n, dtype.size()));
        Tensor::from_aligned(dtype, shape, buf)
    }

    fn from_aligned(dtype: DType, shape: &[usize], buf: Shared) -> Tensor {
        Tensor { dtype, shape: shape.into(), data: Data::Owned(buf) }
    }

    /// A new tensor whose elements `fill` writes (they start zeroed).
    pub fn build<T: Elem>(shape: &[usize], fill: impl FnOnce(&mut [T])) -> Tensor {
        Tensor::try_build::<T, std::convert::Infallible>(shape, |s| {
            fill(s);
            Ok(())
        })
        .unwrap_or_else(|e| match e {})
    }

    /// Like [`Tensor::build`] for a fill that can fail.
    pub fn try_build<T: Elem, E>(
        shape: &[usize],
        fill: impl FnOnce(&mut [T]) -> std::result::Result<(), E>,
    ) -> std::result::Result<Tensor, E> {
        let n = numel(shape);
        let mut buf = Shared::zeroed(bytes_of(n, std::mem::size_of::<T>()));
        fill(&mut buf.typed_mut::<T>()[..n])?;
        Ok(Tensor::from_aligned(T::DTYPE, shape, buf))
    }

    /// Like [`Tensor::try_build`] for a `fill` that writes every element: they start with
    /// unspecified values (what a pooled buffer last held; zeros for a fresh buffer and for
    /// `bool`, whose other bit patterns are not values), which spares zeroing the buffer.
    /// An element `fill` leaves alone is garbage, so use it only where every one is written.
    pub fn try_build_full<T: Elem, E>(
        shape: &[usize],
        fill: impl FnOnce(&mut [T]) -> std::result::Result<(), E>,
    ) -> std::result::Result<Tensor, E> {
        let n = numel(shape);
        let bytes = bytes_of(n, std::mem::size_of::<T>());
        // Every bit pattern is a value of every element type but bool.
        let mut buf = if T::DTYPE == DType::Bool { Shared::zeroed(bytes) } else { Shared::for_overwrite(bytes) };
        fill(&mut buf.typed_mut::<T>()[..n])?;
        Ok(Tensor::from_aligned(T::DTYPE, shape, buf))
    }

    /// [`Tensor::try_build_full`] for a fill that cannot fail.
    pub fn build_full<T: Elem>(shape: &[usize], fill: impl FnOnce(&mut [T])) -> Tensor {
        Tensor::try_build_full::<T, std::convert::Infallible>(shape, |s| {
            fill(s);
            Ok(())
        })
        .unwrap_or_else(|e| match e {})
    }

    /// A tensor of another storage-compatible type built like [`Tensor::build`], e.g. an
    /// `I4` tensor filled through `i8`.
    pub fn build_as<T: Elem>(dtype: DType, shape: &[usize], fill: impl FnOnce(&mut [T])) -> Result<Tensor> {
        if !storage_compatible(dtype, T::DTYPE) {
            return Err(Error::DTypeMismatch { expected: dtype, found: T::DTYPE });
        }
        let mut t = crate::limits::guard(|| Ok(Tensor::build::<T>(shape, fill)))?;
        t.dtype = dtype;
        Ok(t)
    }

    /// A tensor of any non-string type whose raw bytes `fill` writes (they start zeroed), for
    /// dtype-generic data movement. `Bool` bytes other than 0/1 are normalised afterwards.
    pub fn build_raw(dtype: DType, shape: &[usize], fill: impl FnOnce(&mut [u8])) -> Result<Tensor> {
        if dtype == DType::String {
            return Err(Error::invalid("string tensors have no raw bytes"));
        }
        let mut buf = crate::limits::guard(|| Ok(Shared::zeroed(bytes_of(numel(shape), dtype.size()))))?;
        fill(buf.as_mut_slice());
        if dtype == DType::Bool {
            for b in buf.as_mut_slice() {
                *b = (*b != 0) as u8;
            }
        }
        Ok(Tensor::from_aligned(dtype, shape, buf))
    }

    /// A tensor copied from a slice.
    pub fn from_slice<T: Elem>(shape: &[usize], data: &[T]) -> Result<Tensor> {
        check_len(shape, data.len())?;
        crate::stats::record_copy(std::mem::size_of_val(data));
        crate::limits::guard(|| Ok(Tensor::build::<T>(shape, |out| out.copy_from_slice(data))))
    }

    /// A tensor made from a `Vec` (copied once into aligned storage).
    pub fn from_vec<T: Elem>(shape: &[usize], data: Vec<T>) -> Result<Tensor> {
        Tensor::from_slice(shape, &data)
    }

    /// A scalar (rank 0) tensor.
    pub fn scalar<T: Elem>(v: T) -> Tensor {
        Tensor::build::<T>(&[], |o| o[0] = v)
    }

    /// A string tensor.
    pub fn from_strings(shape: &[usize], data: Vec<String>) -> Result<Tensor> {
        check_len(shape, data.len())?;
        Ok(Tensor { dtype: DType::String, shape: shape.into(), data: Data::Strings(data.into()) })
    }

    /// A tensor over shared bytes, without copying them when they are suitably aligned
    /// for `dtype`. Misaligned bytes stay shared too; [`Tensor::as_slice`] then reports
    /// [`Error::Misaligned`] and [`Tensor::to_aligned`] makes an aligned copy.
    ///
    /// `Bool` bytes other than 0 and 1 are normalised (copied), since they are not valid `bool`.
    pub fn from_shared_bytes(dtype: DType, shape: &[usize], bytes: Bytes) -> Result<Tensor> {
        if dtype == DType::String {
            return Err(Error::invalid("string tensors cannot be made from raw bytes"));
        }
        let n = numel(shape);
        if bytes.len() != bytes_of(n, dtype.size()) {
            return Err(Error::invalid(format!(
                "{} bytes cannot hold a {dtype} tensor of shape {shape:?} ({} bytes)",
                bytes.len(),
                bytes_of(n, dtype.size())
            )));
        }
        if dtype == DType::Bool && bytes.iter().any(|b| *b > 1) {
            return Ok(Tensor::build::<bool>(shape, |o| {
                for (o, b) in o.iter_mut().zip(bytes.iter()) {
                    *o = *b != 0;
                }
            }));
        }
        Ok(Tensor { dtype, shape: shape.into(), data: Data::Bytes { bytes, origin: Origin::Shared } })
    }

    /// A tensor over memory lent by the caller.
    ///
    /// # Safety
    /// The returned tensor (and every clone of it) must be dropped before `data`'s borrow
    /// ends. vinort's session guarantees this for run inputs by detaching borrowed storage
    /// from outputs before `run` returns.
    pub unsafe fn borrow_slice<T: Elem>(shape: &[usize], data: &[T]) -> Result<Tensor> {
        check_len(shape, data.len())?;
        // SAFETY: the caller keeps `data` alive for as long as the tensor lives (see above);
        // the 'static lifetime is erased, not relied on.
        let bytes: &'static [u8] =
            unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) };
        Ok(Tensor {
            dtype: T::DTYPE,
            shape: shape.into(),
            data: Data::Bytes { bytes: Bytes::from_static(bytes), origin: Origin::Borrowed },
        })
    }

    /// A tensor of `dtype` over caller bytes (see [`Tensor::borrow_slice`] for the contract).
    ///
    /// # Safety
    /// As for [`Tensor::borrow_slice`]: the tensor must not outlive `bytes`.
    pub unsafe fn borrow_bytes(dtype: DType, shape: &[usize], bytes: &[u8]) -> Result<Tensor> {
        if dtype == DType::String || bytes.len() != bytes_of(numel(shape), dtype.size()) {
            return Err(Error::invalid(format!(
                "{} bytes cannot hold a {dtype} tensor of shape {shape:?}",
                bytes.len()
            )));
        }
        if dtype == DType::Bool && bytes.iter().any(|b| *b > 1) {
            return Err(Error::invalid("bool tensor bytes must be 0 or 1"));
        }
        // SAFETY: forwarded contract; the lifetime is erased, not relied on.
        let bytes: &'static [u8] = unsafe { std::slice::from_raw_parts(bytes.as_ptr(), bytes.len()) };
        Ok(Tensor {
            dtype,
            shape: shape.into(),
            data: Data::Bytes { bytes: Bytes::from_static(bytes), origin: Origin::Borrowed },
        })
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of axes.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        numel(&self.shape)
    }

    /// True when the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where the bytes live (strings count as owned).
    pub fn origin(&self) -> Origin {
        match &self.data {
            Data::Owned(_) | Data::Strings(_) => Origin::Owned,
            Data::Bytes { origin, .. } => *origin,
        }
    }

    /// The raw bytes (empty for string tensors).
    pub fn as_bytes(&self) -> &[u8] {
        match &self.data {
            Data::Owned(buf) => buf.as_slice(),
            Data::Bytes { bytes, .. } => bytes,
            Data::Strings(_) => &[],
        }
    }

    /// A shared byte handle on the storage, for zero-copy hand-off and views (None for
    /// strings). It keeps the storage alive as a clone of the tensor would.
    pub fn shared_bytes(&self) -> Option<Bytes> {
        match &self.data {
            Data::Owned(buf) => Some(Bytes::from_owner(buf.clone())),
            Data::Bytes { bytes, .. } => Some(bytes.clone()),
            Data::Strings(_) => None,
        }
    }

    /// Address of the first byte (for identity checks and FFI).
    pub fn data_ptr(&self) -> *const u8 {
        self.as_bytes().as_ptr()
    }

    /// The elements as `T`.
    pub fn as_slice<T: Elem>(&self) -> Result<&[T]> {
        if !storage_compatible(self.dtype, T::DTYPE) {
            return Err(Error::DTypeMismatch { expected: T::DTYPE, found: self.dtype });
        }
        let bytes = self.as_bytes();
        if bytes.is_empty() {
            return Ok(&[]);
        }
        if !(bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()) {
            return Err(Error::Misaligned { dtype: self.dtype });
        }
        // SAFETY: type and alignment checked above; length equals numel * size_of::<T>()
        // (checked by every constructor); bool bytes were validated on construction.
        Ok(unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), self.len()) })
    }

    /// Shape and elements as `T`, like `ort`'s `try_extract_tensor`: no copy, no ndarray.
    ///
    /// ```
    /// let t = vinort_ir::Tensor::from_slice(&[2, 2], &[1.0f32, 2.0, 3.0, 4.0])?;
    /// let (shape, data) = t.try_extract_tensor::<f32>()?;
    /// assert_eq!((shape, data), (&[2usize, 2][..], &[1.0f32, 2.0, 3.0, 4.0][..]));
    /// assert!(t.try_extract_tensor::<i64>().is_err()); // the wrong type is an error
    /// # Ok::<(), vinort_ir::Error>(())
    /// ```
    pub fn try_extract_tensor<T: Elem>(&self) -> Result<(&[usize], &[T])> {
        Ok((self.shape(), self.as_slice::<T>()?))
    }

    /// Shape and strings of a string tensor, like `ort`'s `try_extract_strings` (no copy).
    ///
    /// ```
    /// let t = vinort_ir::Tensor::from_strings(&[2], vec!["a".into(), "bc".into()])?;
    /// let (shape, strings) = t.try_extract_strings()?;
    /// assert_eq!((shape, strings), (&[2usize][..], &["a".to_string(), "bc".to_string()][..]));
    /// # Ok::<(), vinort_ir::Error>(())
    /// ```
    pub fn try_extract_strings(&self) -> Result<(&[usize], &[String])> {
        Ok((self.shape(), self.as_strings()?))
    }

    /// The one element of a tensor holding exactly one (any rank), like `ort`'s
    /// `try_extract_scalar`.
    ///
    /// ```
    /// let t = vinort_ir::Tensor::from_slice(&[1, 1], &[2.5f32])?;
    /// assert_eq!(t.try_extract_scalar::<f32>()?, 2.5);
    /// assert!(vinort_ir::Tensor::from_slice(&[2], &[1f32, 2.0])?.try_extract_scalar::<f32>().is_err());
    /// # Ok::<(), vinort_ir::Error>(())
    /// ```
    pub fn try_extract_scalar<T: Elem>(&self) -> Result<T> {
        match self.as_slice::<T>()? {
            [one] => Ok(*one),
            all => Err(Error::invalid(format!(
                "a scalar was asked of a tensor of shape {:?} ({} elements)",
                self.shape(),
                all.len()
            ))),
        }
    }

    /// The strings of a string tensor.
    pub fn as_strings(&self) -> Result<&[String]> {
        match &self.data {
            Data::Strings(s) => Ok(s),
            Data::Owned(_) | Data::Bytes { .. } => {
                Err(Error::DTypeMismatch { expected: DType::String, found: self.dtype })
            }
        }
    }

    /// The elements copied into a `Vec`.
    pub fn to_vec<T: Elem>(&self) -> Result<Vec<T>> {
        Ok(self.as_slice::<T>()?.to_vec())
    }

    /// This tensor with its storage guaranteed aligned for its element type: the same tensor
    /// when it already is, otherwise an aligned copy.
    pub fn to_aligned(&self) -> Tensor {
        match &self.data {
            Data::Bytes { bytes, .. }
                if !bytes.is_empty() && !(bytes.as_ptr() as usize).is_multiple_of(self.dtype.size().max(1)) =>
            {
                let mut buf = Shared::for_overwrite(bytes.len());
                buf.as_mut_slice().copy_from_slice(bytes);
                crate::stats::record_copy(bytes.len());
                Tensor::from_aligned(self.dtype, &self.shape, buf)
            }
            _ => self.clone(),
        }
    }

    /// True when typed access works (storage aligned for the element type).
    pub fn is_aligned(&self) -> bool {
        match &self.data {
            Data::Bytes { bytes, .. } => {
                bytes.is_empty() || (bytes.as_ptr() as usize).is_multiple_of(self.dtype.size().max(1))
            }
            Data::Owned(_) | Data::Strings(_) => true,
        }
    }

    /// A copy in storage this process owns, if the tensor borrows caller memory; otherwise
    /// the same tensor. Used so nothing borrowed outlives a `run`.
    pub fn detach_borrowed(self) -> Tensor {
        match &self.data {
            Data::Bytes { bytes, origin: Origin::Borrowed } => {
                let mut buf = Shared::for_overwrite(bytes.len());
                buf.as_mut_slice().copy_from_slice(bytes);
                crate::stats::record_copy(bytes.len());
                Tensor::from_aligned(self.dtype, &self.shape, buf)
            }
            _ => self,
        }
    }

    /// The same storage seen with another shape of equal element count (no copy).
    pub fn reshaped(&self, shape: &[usize]) -> Result<Tensor> {
        if numel(shape) != self.len() {
            return Err(Error::invalid(format!(
                "cannot reshape {:?} ({} elements) to {:?}",
                self.shape.as_slice(),
                self.len(),
                shape
            )));
        }
        Ok(Tensor { dtype: self.dtype, shape: shape.into(), data: self.data.clone() })
    }

    /// The same storage relabelled as another storage-compatible type (for example an I8
    /// tensor read back as I4); no copy.
    pub fn relabel(&self, dtype: DType) -> Result<Tensor> {
        if !storage_compatible(dtype, self.dtype) && !storage_compatible(self.dtype, dtype)
            || dtype.size() != self.dtype.size()
        {
            return Err(Error::DTypeMismatch { expected: dtype, found: self.dtype });
        }
        Ok(Tensor { dtype, shape: self.shape.clone(), data: self.data.clone() })
    }

    /// The same storage read as elements of `dtype` in `shape` (no copy): for kernels that
    /// fill bytes generically and then label them. The byte sizes must match, the storage
    /// must be aligned for `dtype`, and `bool` bytes must be 0 or 1.
    pub fn reinterpret(self, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        if dtype == DType::String || self.dtype == DType::String {
            return Err(Error::invalid("string tensors have no raw bytes to reinterpret"));
        }
        let bytes = self.as_bytes();
        if bytes.len() != bytes_of(numel(shape), dtype.size()) {
            return Err(Error::invalid(format!(
                "{} bytes cannot hold a {dtype} tensor of shape {shape:?}",
                bytes.len()
            )));
        }
        if !bytes.is_empty() && !(bytes.as_ptr() as usize).is_multiple_of(dtype.size().max(1)) {
            return Err(Error::Misaligned { dtype });
        }
        if dtype == DType::Bool && bytes.iter().any(|b| *b > 1) {
            return Err(Error::invalid("bool tensor bytes must be 0 or 1"));
        }
        Ok(Tensor { dtype, shape: shape.into(), data: self.data })
    }

    /// Integer elements as i64, borrowed when the tensor already holds aligned `int64`
    /// (shape, axes and index inputs usually do: no copy, no allocation), else widened
    /// as [`Tensor::to_i64_vec`] does.
    pub fn i64s(&self) -> Result<std::borrow::Cow<'_, [i64]>> {
        match self.as_slice::<i64>() {
            Ok(s) if self.dtype == DType::I64 => Ok(std::borrow::Cow::Borrowed(s)),
            _ => self.to_i64_vec().map(std::borrow::Cow::Owned),
        }
    }

    /// Integer elements widened to i64 (for shape, axes and index inputs).
    pub fn to_i64_vec(&self) -> Result<Vec<i64>> {
        use DType::*;
        // A small constant read from a file (a Slice's starts, a Reshape's shape) can sit at
        // any byte offset of the mapping; converting copies anyway, so copy it aligned first.
        if !self.is_aligned() {
            return self.to_aligned().to_i64_vec();
        }
        Ok(match self.dtype {
            I64 => self.to_vec::<i64>()?,
            I32 => self.as_slice::<i32>()?.iter().map(|v| *v as i64).collect(),
            I16 => self.as_slice::<i16>()?.iter().map(|v| *v as i64).collect(),
            I8 | I4 | I2 => self.as_slice::<i8>()?.iter().map(|v| *v as i64).collect(),
            U8 | U4 | U2 => self.as_slice::<u8>()?.iter().map(|v| *v as i64).collect(),
            U16 => self.as_slice::<u16>()?.iter().map(|v| *v as i64).collect(),
            U32 => self.as_slice::<u32>()?.iter().map(|v| *v as i64).collect(),
            U64 => self.as_slice::<u64>()?.iter().map(|v| *v as i64).collect(),
            Bool => self.as_slice::<bool>()?.iter().map(|v| *v as i64).collect(),
            other => {
                return Err(Error::invalid(format!("expected an integer tensor, got {other}")));
            }
        })
    }

    /// Numeric elements converted to f64 (floats and integers; for references and tests).
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        use DType::*;
        if !self.is_aligned() {
            return self.to_aligned().to_f64_vec();
        }
        Ok(match self.dtype {
            F32 => self.as_slice::<f32>()?.iter().map(|v| *v as f64).collect(),
            F64 => self.to_vec::<f64>()?,
            F16 => self.as_slice::<half::f16>()?.iter().map(|v| v.to_f64()).collect(),
            BF16 => self.as_slice::<half::bf16>()?.iter().map(|v| v.to_f64()).collect(),
            _ => self.to_i64_vec()?.into_iter().map(|v| v as f64).collect(),
        })
    }
}

fn check_len(shape: &[usize], len: usize) -> Result<()> {
    if numel(shape) != len {
        return Err(Error::invalid(format!("shape {shape:?} needs {} elements, got {len}", numel(shape))));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bool tensor built "full" from a pooled buffer that held other bytes still starts at
    /// false (other bit patterns are not bools), while an f32 one may start with what the
    /// buffer held; `build` zeroes either way.
    #[test]
    fn build_full_zeroes_only_bool() {
        let len = 4099; // a size no other test uses, so the pooled buffer is this one
        for _ in 0..2 {
            drop(Tensor::build::<u8>(&[len], |o| o.fill(0xA5)));
            let b = Tensor::build_full::<bool>(&[len], |_| {});
            assert!(b.as_slice::<bool>().unwrap().iter().all(|v| !*v));
            drop(b);
            drop(Tensor::build::<u8>(&[len], |o| o.fill(0xA5)));
            let z = Tensor::build::<u8>(&[len], |_| {});
            assert!(z.as_slice::<u8>().unwrap().iter().all(|v| *v == 0));
        }
    }

    #[test]
    fn owned_storage_is_64_byte_aligned() {
        for n in [0usize, 1, 3, 17, 1000] {
            let t = Tensor::zeros(DType::F32, &[n]);
            assert_eq!(t.data_ptr() as usize % ALIGN, 0, "n={n}");
            assert_eq!(t.origin(), Origin::Owned);
        }
    }

    #[test]
    fn typed_access_checks_dtype_and_alignment() {
        let t = Tensor::from_slice(&[2, 2], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(t.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0, 4.0]);
        assert!(matches!(t.as_slice::<i32>(), Err(Error::DTypeMismatch { .. })));
        let raw = Bytes::from(vec![0u8; 17]);
        let odd = raw.slice(1..17);
        let m = Tensor::from_shared_bytes(DType::F32, &[4], odd.clone()).unwrap();
        if !(odd.as_ptr() as usize).is_multiple_of(4) {
            assert!(matches!(m.as_slice::<f32>(), Err(Error::Misaligned { .. })));
        }
        assert_eq!(m.to_aligned().as_slice::<f32>().unwrap(), &[0.0; 4]);
        // Converting reads never fail on alignment: a Slice's starts or a Reshape's shape read
        // from a file sits at any offset.
        let mut raw = vec![0u8; 17];
        raw[1..9].copy_from_slice(&(-7i64).to_le_bytes());
        raw[9..17].copy_from_slice(&3i64.to_le_bytes());
        let ints = Tensor::from_shared_bytes(DType::I64, &[2], Bytes::from(raw).slice(1..17)).unwrap();
        assert_eq!(ints.to_i64_vec().unwrap(), [-7, 3]);
        assert_eq!(ints.to_f64_vec().unwrap(), [-7.0, 3.0]);
    }

    #[test]
    fn shared_bytes_are_not_copied_and_bad_lengths_rejected() {
        let raw = Bytes::from(vec![0u8; 16]);
        let t = Tensor::from_shared_bytes(DType::I32, &[4], raw.clone()).unwrap();
        assert_eq!(t.data_ptr(), raw.as_ptr());
        assert_eq!(t.origin(), Origin::Shared);
        assert!(Tensor::from_shared_bytes(DType::I32, &[5], raw).is_err());
    }

    #[test]
    fn bool_bytes_are_validated() {
        let t = Tensor::from_shared_bytes(DType::Bool, &[3], Bytes::from(vec![0u8, 1, 7])).unwrap();
        assert_eq!(t.as_slice::<bool>().unwrap(), &[false, true, true]);
    }

    #[test]
    fn reshape_shares_storage_and_borrowed_detaches() {
        let data = [1i64, 2, 3, 4, 5, 6];
        // SAFETY: the tensors die before `data`.
        let b = unsafe { Tensor::borrow_slice(&[2, 3], &data) }.unwrap();
        assert_eq!(b.data_ptr(), data.as_ptr().cast());
        let r = b.reshaped(&[3, 2]).unwrap();
        assert_eq!(r.data_ptr(), b.data_ptr());
        assert!(b.reshaped(&[4]).is_err());
        let d = r.detach_borrowed();
        assert_ne!(d.data_ptr(), data.as_ptr().cast());
        assert_eq!(d.as_slice::<i64>().unwrap(), &data);
        assert_eq!(strides_of(&[2, 3, 4]).as_slice(), &[12, 4, 1]);
    }
}
