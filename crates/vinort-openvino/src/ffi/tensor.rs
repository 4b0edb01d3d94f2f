//! Tensors: host-pointer and OpenVINO-allocated tensors, shapes, element types.

use std::ffi::c_void;
use std::ptr;

use openvino_sys as sys;
use vinort_ir::DType;

use super::{OvError, OvResult, check};

owned_handle! {
    /// An OpenVINO tensor object (a reference to host memory, ours or OpenVINO's).
    OvTensor: ov_tensor_t, ov_tensor_free
}

// SAFETY: tensor objects are reference-counted by OpenVINO and may be freed from any thread.
unsafe impl Send for OvTensor {}
// SAFETY: only read through `&self` (shape, data pointer).
unsafe impl Sync for OvTensor {}

impl OvTensor {
    /// A tensor over memory we own.
    ///
    /// # Safety
    /// `data` must stay valid (and, for outputs, writable and not otherwise accessed) for as
    /// long as OpenVINO may use this tensor: until it is unbound or the request is dropped.
    pub unsafe fn from_host_ptr(dtype: DType, shape: &[usize], data: *const u8) -> OvResult<OvTensor> {
        let (et, s) = (element_type(dtype)?, OvShape::new(shape)?);
        let mut t = ptr::null_mut();
        // SAFETY: caller guarantees `data`; OpenVINO takes the shape by value (copies dims).
        check("ov_tensor_create_from_host_ptr", unsafe {
            sys::ov_tensor_create_from_host_ptr(et, s.0, data as *mut c_void, &mut t)
        })?;
        Ok(OvTensor { raw: t })
    }

    /// A tensor OpenVINO allocates (used as the next output buffer after a dynamically
    /// shaped output was taken over).
    pub fn allocate(dtype: DType, shape: &[usize]) -> OvResult<OvTensor> {
        let (et, s) = (element_type(dtype)?, OvShape::new(shape)?);
        let mut t = ptr::null_mut();
        // SAFETY: valid shape (copied by OpenVINO) and out-parameter.
        check("ov_tensor_create", unsafe { sys::ov_tensor_create(et, s.0, &mut t) })?;
        Ok(OvTensor { raw: t })
    }

    /// The shape.
    pub fn shape(&self) -> OvResult<Vec<usize>> {
        let mut s = sys::ov_shape_t { rank: 0, dims: ptr::null_mut() };
        // SAFETY: valid handle and out-parameter; freed below.
        check("ov_tensor_get_shape", unsafe { sys::ov_tensor_get_shape(self.raw, &mut s) })?;
        let v = (0..s.rank.max(0) as usize)
            // SAFETY: dims holds rank entries.
            .map(|i| unsafe { *s.dims.add(i) }.max(0) as usize)
            .collect();
        // SAFETY: s was filled by ov_tensor_get_shape.
        unsafe { sys::ov_shape_free(&mut s) };
        Ok(v)
    }

    /// Address and length of the tensor's bytes.
    pub fn bytes(&self) -> OvResult<(*const u8, usize)> {
        let mut p = ptr::null_mut();
        let mut n = 0usize;
        // SAFETY: valid handle and out-parameters.
        check("ov_tensor_data", unsafe { sys::ov_tensor_data(self.raw, &mut p) })?;
        // SAFETY: as above.
        check("ov_tensor_get_byte_size", unsafe { sys::ov_tensor_get_byte_size(self.raw, &mut n) })?;
        Ok((p as *const u8, n))
    }
}

/// An `ov_shape_t` owned for the duration of one call.
struct OvShape(sys::ov_shape_t);

impl OvShape {
    fn new(shape: &[usize]) -> OvResult<OvShape> {
        if shape.is_empty() {
            // `ov_shape_create` rejects rank 0, but a scalar is a valid shape: describe it
            // directly (nothing allocated, so nothing for Drop to free).
            return Ok(OvShape(sys::ov_shape_t { rank: 0, dims: ptr::null_mut() }));
        }
        let dims: Vec<i64> = shape.iter().map(|d| *d as i64).collect();
        let mut s = sys::ov_shape_t { rank: 0, dims: ptr::null_mut() };
        // SAFETY: dims valid for rank entries; OpenVINO copies them into `s`.
        check("ov_shape_create", unsafe { sys::ov_shape_create(dims.len() as i64, dims.as_ptr(), &mut s) })?;
        Ok(OvShape(s))
    }
}

impl Drop for OvShape {
    fn drop(&mut self) {
        if !self.0.dims.is_null() {
            // SAFETY: created by ov_shape_create, freed once.
            unsafe { sys::ov_shape_free(&mut self.0) };
        }
    }
}

fn element_type(dtype: DType) -> OvResult<sys::ov_element_type_e> {
    to_ov_type(dtype).ok_or(OvError::NoElementType(dtype))
}

/// An OpenVINO output tensor kept alive as the owner of vinort tensor bytes, so a
/// dynamically shaped output is handed over without copying.
pub struct OwnedOvBytes {
    tensor: OvTensor,
    ptr: *const u8,
    len: usize,
}

// SAFETY: the bytes are immutable once inference finished and the tensor is exclusively ours.
unsafe impl Send for OwnedOvBytes {}
// SAFETY: as above.
unsafe impl Sync for OwnedOvBytes {}

impl OwnedOvBytes {
    /// Takes over an output tensor.
    pub fn new(tensor: OvTensor) -> OvResult<OwnedOvBytes> {
        let (ptr, len) = tensor.bytes()?;
        Ok(OwnedOvBytes { tensor, ptr, len })
    }

    /// The tensor (for its shape).
    pub fn tensor(&self) -> &OvTensor {
        &self.tensor
    }
}

impl AsRef<[u8]> for OwnedOvBytes {
    fn as_ref(&self) -> &[u8] {
        if self.len == 0 || self.ptr.is_null() {
            return &[];
        }
        // SAFETY: OpenVINO owns ptr..ptr+len for as long as `tensor` lives, which is as long as
        // self lives.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// vinort's element type → OpenVINO's.
pub fn to_ov_type(d: DType) -> Option<sys::ov_element_type_e> {
    use sys::ov_element_type_e as E;
    Some(match d {
        DType::Bool => E::OV_BOOLEAN,
        DType::BF16 => E::BF16,
        DType::F16 => E::F16,
        DType::F32 => E::F32,
        DType::F64 => E::F64,
        DType::I8 => E::I8,
        DType::I16 => E::I16,
        DType::I32 => E::I32,
        DType::I64 => E::I64,
        DType::U8 => E::U8,
        DType::U16 => E::U16,
        DType::U32 => E::U32,
        DType::U64 => E::U64,
        _ => return None,
    })
}

/// OpenVINO's element type → vinort's.
pub fn from_ov_type(e: sys::ov_element_type_e) -> Option<DType> {
    use sys::ov_element_type_e as E;
    Some(match e {
        E::OV_BOOLEAN => DType::Bool,
        E::BF16 => DType::BF16,
        E::F16 => DType::F16,
        E::F32 => DType::F32,
        E::F64 => DType::F64,
        E::I8 => DType::I8,
        E::I16 => DType::I16,
        E::I32 => DType::I32,
        E::I64 => DType::I64,
        E::U8 => DType::U8,
        E::U16 => DType::U16,
        E::U32 => DType::U32,
        E::U64 => DType::U64,
        _ => return None,
    })
}
