//! A compiled model, its ports and its infer requests.

use std::path::Path;
use std::ptr;

use openvino_sys as sys;
use vinort_ir::DType;

use super::{OvResult, OvTensor, check, cstring, from_ov_type, take_string};

/// Element type and dims (None = dynamic) of a port.
#[derive(Debug, Clone, PartialEq)]
pub struct PortInfo {
    /// Element type in vinort's terms (None when OpenVINO's type has no ONNX equivalent).
    pub dtype: Option<DType>,
    /// Dims; `None` for dynamic ones; `None` overall for dynamic rank.
    pub dims: Option<Vec<Option<usize>>>,
    /// OpenVINO's partial shape, e.g. `[1..8,4]`.
    pub partial: String,
}

impl PortInfo {
    /// The static shape, if every dim is known.
    pub fn static_shape(&self) -> Option<Vec<usize>> {
        self.dims.as_ref()?.iter().copied().collect()
    }
}

owned_handle! {
    /// A compiled model.
    CompiledModel: ov_compiled_model_t, ov_compiled_model_free
}

// SAFETY: ov::CompiledModel is thread-safe for creating infer requests and reading properties.
unsafe impl Send for CompiledModel {}
// SAFETY: as above.
unsafe impl Sync for CompiledModel {}

fn port_info(port: *mut sys::ov_output_const_port_t) -> OvResult<PortInfo> {
    let mut et = sys::ov_element_type_e::DYNAMIC;
    // SAFETY: valid port and out-parameter.
    check("ov_port_get_element_type", unsafe { sys::ov_port_get_element_type(port, &mut et) })?;
    let mut ps = sys::ov_partial_shape_t { rank: sys::ov_dimension_t { min: 0, max: 0 }, dims: ptr::null_mut() };
    // SAFETY: valid port and out-parameter; freed below.
    check("ov_port_get_partial_shape", unsafe { sys::ov_port_get_partial_shape(port, &mut ps) })?;
    let partial = {
        let view = sys::ov_partial_shape_t { rank: ps.rank, dims: ps.dims };
        // SAFETY: a by-value view of the valid partial shape `ps` (not freed through the
        // view); the returned string is OpenVINO's allocation for us to free.
        take_string(unsafe { sys::ov_partial_shape_to_string(view) })
    };
    let dims = if ps.rank.min != ps.rank.max || ps.rank.min < 0 || ps.dims.is_null() && ps.rank.min > 0 {
        None
    } else {
        Some(
            (0..ps.rank.min as usize)
                .map(|i| {
                    // SAFETY: dims holds `rank` entries.
                    let d = unsafe { *ps.dims.add(i) };
                    (d.min == d.max && d.min >= 0).then_some(d.min as usize)
                })
                .collect(),
        )
    };
    // SAFETY: ps was filled by ov_port_get_partial_shape.
    unsafe { sys::ov_partial_shape_free(&mut ps) };
    Ok(PortInfo { dtype: from_ov_type(et), dims, partial })
}

impl CompiledModel {
    fn ports(&self, outputs: bool) -> OvResult<Vec<PortInfo>> {
        let mut n = 0usize;
        let st = if outputs {
            // SAFETY: valid handle and out-parameter.
            unsafe { sys::ov_compiled_model_outputs_size(self.raw, &mut n) }
        } else {
            // SAFETY: valid handle and out-parameter.
            unsafe { sys::ov_compiled_model_inputs_size(self.raw, &mut n) }
        };
        check("ov_compiled_model_ports_size", st)?;
        (0..n)
            .map(|i| {
                let mut port = ptr::null_mut();
                // SAFETY: i < n; port freed below.
                let st = unsafe {
                    if outputs {
                        sys::ov_compiled_model_output_by_index(self.raw, i, &mut port)
                    } else {
                        sys::ov_compiled_model_input_by_index(self.raw, i, &mut port)
                    }
                };
                check("ov_compiled_model_port_by_index", st)?;
                let info = port_info(port);
                // SAFETY: port came from *_by_index above.
                unsafe { sys::ov_output_const_port_free(port) };
                info
            })
            .collect()
    }

    /// Input ports, by index.
    pub fn inputs(&self) -> OvResult<Vec<PortInfo>> {
        self.ports(false)
    }

    /// Output ports, by index.
    pub fn outputs(&self) -> OvResult<Vec<PortInfo>> {
        self.ports(true)
    }

    /// A property of the compiled model as a string.
    pub fn property(&self, key: &str) -> OvResult<String> {
        let k = cstring(key)?;
        let mut v = ptr::null_mut();
        // SAFETY: valid handle, C string and out-parameter.
        check("ov_compiled_model_get_property", unsafe {
            sys::ov_compiled_model_get_property(self.raw, k.as_ptr(), &mut v)
        })?;
        Ok(take_string(v))
    }

    /// Exports the compiled blob to a file (re-import with [`Core::import`]).
    pub fn export(&self, path: &Path) -> OvResult<()> {
        let p = cstring(&path.to_string_lossy())?;
        // SAFETY: valid handle and path.
        check("ov_compiled_model_export_model", unsafe { sys::ov_compiled_model_export_model(self.raw, p.as_ptr()) })
    }

    /// A new infer request.
    pub fn infer_request(&self) -> OvResult<InferRequest> {
        let mut r = ptr::null_mut();
        // SAFETY: valid handle and out-parameter.
        check("ov_compiled_model_create_infer_request", unsafe {
            sys::ov_compiled_model_create_infer_request(self.raw, &mut r)
        })?;
        Ok(InferRequest { raw: r })
    }
}

owned_handle! {
    /// An infer request. Used by one thread at a time (the pool hands it out exclusively).
    InferRequest: ov_infer_request_t, ov_infer_request_free
}

// SAFETY: an infer request may move between threads; exclusive use is enforced by `&mut self`.
unsafe impl Send for InferRequest {}

impl InferRequest {
    /// Binds input `i` to a tensor. OpenVINO keeps its own reference to the tensor object; the
    /// memory behind a host-pointer tensor must stay valid until the next bind or inference
    /// ends, which [`crate::provider`] guarantees by holding the vinort tensor.
    pub fn set_input(&mut self, i: usize, t: &OvTensor) -> OvResult<()> {
        // SAFETY: valid handles.
        check("ov_infer_request_set_input_tensor_by_index", unsafe {
            sys::ov_infer_request_set_input_tensor_by_index(self.raw, i, t.raw)
        })
    }

    /// Binds output `i` to a tensor (OpenVINO writes into its memory).
    pub fn set_output(&mut self, i: usize, t: &OvTensor) -> OvResult<()> {
        // SAFETY: valid handles.
        check("ov_infer_request_set_output_tensor_by_index", unsafe {
            sys::ov_infer_request_set_output_tensor_by_index(self.raw, i, t.raw)
        })
    }

    /// Runs synchronously.
    pub fn infer(&mut self) -> OvResult<()> {
        // SAFETY: valid handle; bound tensors are alive (see set_input).
        check("ov_infer_request_infer", unsafe { sys::ov_infer_request_infer(self.raw) })
    }

    /// A handle that cancels this request's run from another thread.
    pub fn canceller(&self) -> Canceller {
        Canceller { raw: self.raw }
    }

    /// The tensor OpenVINO holds for output `i` (its own when none was bound).
    pub fn output(&mut self, i: usize) -> OvResult<OvTensor> {
        let mut t = ptr::null_mut();
        // SAFETY: valid handle and out-parameter; the returned tensor is a new reference.
        check("ov_infer_request_get_output_tensor_by_index", unsafe {
            sys::ov_infer_request_get_output_tensor_by_index(self.raw, i, &mut t)
        })?;
        Ok(OvTensor { raw: t })
    }
}

/// Cancels a running request from another thread (`ov_infer_request_cancel`, which OpenVINO
/// documents for exactly that). It does not own the request.
pub struct Canceller {
    raw: *mut sys::ov_infer_request_t,
}

// SAFETY: only `cancel` uses the pointer, and its caller guarantees the request is alive.
unsafe impl Send for Canceller {}

impl Canceller {
    /// Asks the request's current run to stop; it then ends with an error status.
    ///
    /// # Safety
    /// The request must not have been freed.
    pub unsafe fn cancel(&self) -> OvResult<()> {
        // SAFETY: the request is alive (the caller's contract).
        check("ov_infer_request_cancel", unsafe { sys::ov_infer_request_cancel(self.raw) })
    }
}
