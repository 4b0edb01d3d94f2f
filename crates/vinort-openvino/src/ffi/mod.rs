//! Owning wrappers over OpenVINO's C API (runtime-linked through `openvino-sys`).
//!
//! One wrapper per C handle; `Drop` calls the matching free function and nothing else frees
//! it. Every status becomes an [`OvError`] carrying OpenVINO's last error message.

pub mod finder;

use std::ffi::{CStr, CString, c_char, c_void};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::OnceLock;

use openvino_sys as sys;
use vinort_ir::DType;

/// A failed OpenVINO call.
#[derive(Debug, Clone, thiserror::Error)]
#[error("OpenVINO {call} failed ({status}): {message}")]
pub struct OvError {
    /// The C function.
    pub call: &'static str,
    /// Its status code.
    pub status: i32,
    /// OpenVINO's message.
    pub message: String,
}

/// Result of an OpenVINO call.
pub type OvResult<T> = Result<T, OvError>;

fn check(call: &'static str, status: sys::ov_status_e) -> OvResult<()> {
    if status == sys::ov_status_e::OK {
        return Ok(());
    }
    // SAFETY: returns a thread-local C string owned by OpenVINO, valid until the next call.
    let msg = unsafe { sys::ov_get_last_err_msg() };
    let message = if msg.is_null() {
        String::new()
    } else {
        // SAFETY: non-null, NUL-terminated (OpenVINO contract).
        unsafe { CStr::from_ptr(msg) }.to_string_lossy().trim().to_owned()
    };
    Err(OvError { call, status: status as i32, message })
}

fn cstring(s: &str) -> OvResult<CString> {
    CString::new(s).map_err(|_| OvError {
        call: "(argument)",
        status: -1,
        message: format!("string contains NUL: {s:?}"),
    })
}

/// Takes an OpenVINO-allocated C string, freeing it.
fn take_string(p: *mut c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: p is a NUL-terminated string OpenVINO allocated for us; freed right after.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    // SAFETY: allocated by OpenVINO for the caller to free with ov_free.
    unsafe { sys::ov_free(p) };
    s
}

static LIBRARY: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// Loads `libopenvino_c` once per process (searching as [`finder::search`] describes).
/// Later calls return the first outcome; an explicit path given after the library is loaded
/// is ignored.
pub fn load_library(explicit: Option<&Path>) -> Result<&'static Path, String> {
    LIBRARY
        .get_or_init(|| {
            let s = finder::search(explicit);
            let Some(path) = s.found else {
                return Err(format!(
                    "the OpenVINO C library (libopenvino_c.so) was not found. Searched:\n  - {}\nInstall it with: {}",
                    s.tried.join("\n  - "),
                    finder::INSTALL_HINT
                ));
            };
            sys::library::load_from(&path).map_err(|e| format!("cannot load {}: {e}", path.display()))?;
            tracing::debug!(path = %path.display(), "OpenVINO library loaded");
            Ok(path)
        })
        .as_deref()
        .map_err(Clone::clone)
}

/// The OpenVINO version string (`2026.4.1-...`).
pub fn version() -> OvResult<String> {
    let mut v = sys::ov_version_t { buildNumber: ptr::null(), description: ptr::null() };
    // SAFETY: v is a valid out-parameter; freed with ov_version_free below.
    check("ov_get_openvino_version", unsafe { sys::ov_get_openvino_version(&mut v) })?;
    let s = if v.buildNumber.is_null() {
        String::new()
    } else {
        // SAFETY: NUL-terminated string owned by v.
        unsafe { CStr::from_ptr(v.buildNumber) }.to_string_lossy().into_owned()
    };
    // SAFETY: v was filled by ov_get_openvino_version.
    unsafe { sys::ov_version_free(&mut v) };
    Ok(s)
}

/// The process-wide OpenVINO core.
pub struct Core {
    raw: *mut sys::ov_core_t,
}

// SAFETY: ov::Core is documented thread-safe for concurrent reads, compiles and queries; the
// handle is never mutated after creation (properties go to compile calls, not the core).
unsafe impl Send for Core {}
// SAFETY: as above.
unsafe impl Sync for Core {}

impl Drop for Core {
    fn drop(&mut self) {
        tracing::trace!("ov_core_free");
        // SAFETY: raw came from ov_core_create and is freed once.
        unsafe { sys::ov_core_free(self.raw) };
    }
}

static CORE: OnceLock<Result<Core, String>> = OnceLock::new();

/// The one core of this process, created on first use (after [`load_library`]).
pub fn core() -> Result<&'static Core, String> {
    CORE.get_or_init(|| {
        load_library(None)?;
        let mut raw = ptr::null_mut();
        // SAFETY: raw is a valid out-parameter.
        check("ov_core_create", unsafe { sys::ov_core_create(&mut raw) }).map_err(|e| e.to_string())?;
        tracing::trace!("ov_core_create");
        Ok(Core { raw })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Key/value properties held as C strings for one call.
pub struct Properties {
    _keys: Vec<CString>,
    _values: Vec<CString>,
    raw: Vec<sys::ov_property_t>,
}

impl Properties {
    /// Converts `(key, value)` pairs.
    pub fn new(pairs: &[(String, String)]) -> OvResult<Properties> {
        let keys: Vec<CString> = pairs.iter().map(|(k, _)| cstring(k)).collect::<OvResult<_>>()?;
        let values: Vec<CString> = pairs.iter().map(|(_, v)| cstring(v)).collect::<OvResult<_>>()?;
        let raw = keys
            .iter()
            .zip(&values)
            .map(|(k, v)| sys::ov_property_t { key: k.as_ptr(), value: v.as_ptr().cast::<c_void>() })
            .collect();
        Ok(Properties { _keys: keys, _values: values, raw })
    }
}

impl Core {
    /// Devices OpenVINO can use here (`CPU`, `GPU.0`...).
    pub fn available_devices(&self) -> OvResult<Vec<String>> {
        let mut d = sys::ov_available_devices_t { devices: ptr::null_mut(), size: 0 };
        // SAFETY: d is a valid out-parameter; freed below.
        check("ov_core_get_available_devices", unsafe { sys::ov_core_get_available_devices(self.raw, &mut d) })?;
        let mut out = Vec::with_capacity(d.size);
        for i in 0..d.size {
            // SAFETY: devices holds `size` valid C strings.
            let p = unsafe { *d.devices.add(i) };
            if !p.is_null() {
                // SAFETY: NUL-terminated, owned by d.
                out.push(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned());
            }
        }
        // SAFETY: d was filled by ov_core_get_available_devices.
        unsafe { sys::ov_available_devices_free(&mut d) };
        Ok(out)
    }

    /// A device property as a string (e.g. `SUPPORTED_PROPERTIES`, `FULL_DEVICE_NAME`).
    pub fn property(&self, device: &str, key: &str) -> OvResult<String> {
        let (d, k) = (cstring(device)?, cstring(key)?);
        let mut v = ptr::null_mut();
        // SAFETY: valid C strings and out-parameter.
        check("ov_core_get_property", unsafe { sys::ov_core_get_property(self.raw, d.as_ptr(), k.as_ptr(), &mut v) })?;
        Ok(take_string(v))
    }

    /// Reads an ONNX model from memory.
    pub fn read_model_from_memory(&self, onnx: &[u8]) -> OvResult<OvModel> {
        let mut m = ptr::null_mut();
        // SAFETY: the buffer is valid for its length during the call; OpenVINO copies what it
        // keeps. No separate weights tensor for ONNX.
        check("ov_core_read_model_from_memory_buffer", unsafe {
            sys::ov_core_read_model_from_memory_buffer(self.raw, onnx.as_ptr().cast(), onnx.len(), ptr::null(), &mut m)
        })?;
        Ok(OvModel { raw: m })
    }

    /// Reads a model file (external data resolves relative to it).
    pub fn read_model_from_file(&self, path: &Path) -> OvResult<OvModel> {
        let p = cstring(&path.to_string_lossy())?;
        let mut m = ptr::null_mut();
        // SAFETY: valid C string and out-parameter.
        check("ov_core_read_model", unsafe { sys::ov_core_read_model(self.raw, p.as_ptr(), ptr::null(), &mut m) })?;
        Ok(OvModel { raw: m })
    }

    /// Compiles a model for a device with properties.
    pub fn compile(&self, model: &OvModel, device: &str, props: &[(String, String)]) -> OvResult<CompiledModel> {
        let d = cstring(device)?;
        let p = Properties::new(props)?;
        let mut c = ptr::null_mut();
        // SAFETY: all pointers valid for the call; `p` keeps the strings alive.
        check("ov_core_compile_model_props", unsafe {
            sys::ov_core_compile_model_props(self.raw, model.raw, d.as_ptr(), p.raw.len(), p.raw.as_ptr(), &mut c)
        })?;
        tracing::trace!(device, "ov_core_compile_model_props");
        Ok(CompiledModel { raw: c })
    }

    /// Reads and compiles a model file in one call. With `CACHE_DIR` set, a cache hit skips
    /// reading the model at all (OpenVINO keys the cache on the file), which
    /// [`Core::read_model_from_file`] + [`Core::compile`] cannot do: they hash the whole read
    /// model, weights included, before looking in the cache.
    pub fn compile_from_file(&self, path: &Path, device: &str, props: &[(String, String)]) -> OvResult<CompiledModel> {
        let (m, d) = (cstring(&path.to_string_lossy())?, cstring(device)?);
        let p = Properties::new(props)?;
        let mut c = ptr::null_mut();
        // SAFETY: all pointers valid for the call; `p` keeps the strings alive.
        check("ov_core_compile_model_from_file_props", unsafe {
            sys::ov_core_compile_model_from_file_props(
                self.raw,
                m.as_ptr(),
                d.as_ptr(),
                p.raw.len(),
                p.raw.as_ptr(),
                &mut c,
            )
        })?;
        Ok(CompiledModel { raw: c })
    }

    /// Imports a compiled blob exported by [`CompiledModel::export`].
    pub fn import(&self, blob: &[u8], device: &str) -> OvResult<CompiledModel> {
        let d = cstring(device)?;
        let mut c = ptr::null_mut();
        // SAFETY: blob valid for its length; out-parameter valid.
        check("ov_core_import_model", unsafe {
            sys::ov_core_import_model(self.raw, blob.as_ptr().cast(), blob.len(), d.as_ptr(), &mut c)
        })?;
        Ok(CompiledModel { raw: c })
    }
}

/// A read (uncompiled) model.
pub struct OvModel {
    raw: *mut sys::ov_model_t,
}

// SAFETY: a model object may move between threads; vinort only touches one under a mutex.
unsafe impl Send for OvModel {}

impl OvModel {
    /// Gives input `name` a partial shape: `(min, max)` per dim, `-1` max for unbounded.
    pub fn reshape_input(&self, name: &str, dims: &[(i64, i64)]) -> OvResult<()> {
        let n = cstring(name)?;
        let ds: Vec<sys::ov_dimension_t> =
            dims.iter().map(|(min, max)| sys::ov_dimension_t { min: *min, max: *max }).collect();
        let mut ps = sys::ov_partial_shape_t { rank: sys::ov_dimension_t { min: 0, max: 0 }, dims: ptr::null_mut() };
        // SAFETY: ds valid for its length; ps freed below.
        check("ov_partial_shape_create", unsafe {
            sys::ov_partial_shape_create(ds.len() as i64, ds.as_ptr(), &mut ps)
        })?;
        // SAFETY: valid model, name and partial shape (passed by value, copied by OpenVINO).
        let st = unsafe { sys::ov_model_reshape_input_by_name(self.raw, n.as_ptr(), ps) };
        // SAFETY: ps came from ov_partial_shape_create.
        unsafe { sys::ov_partial_shape_free(&mut ps) };
        check("ov_model_reshape_input_by_name", st)
    }

    /// Declares the layout (`NCHW`, `NC?`...) of input `name`; returns the rebuilt model.
    pub fn with_input_layout(self, name: &str, layout: &str) -> OvResult<OvModel> {
        let (n, l) = (cstring(name)?, cstring(layout)?);
        let mut ppp = ptr::null_mut();
        // SAFETY: valid model and out-parameter; ppp freed at the end.
        check("ov_preprocess_prepostprocessor_create", unsafe {
            sys::ov_preprocess_prepostprocessor_create(self.raw, &mut ppp)
        })?;
        let result = (|| {
            let mut info = ptr::null_mut();
            // SAFETY: valid handles and out-parameter.
            check("ov_preprocess_prepostprocessor_get_input_info_by_name", unsafe {
                sys::ov_preprocess_prepostprocessor_get_input_info_by_name(ppp, n.as_ptr(), &mut info)
            })?;
            let mut model_info = ptr::null_mut();
            // SAFETY: valid handles and out-parameter.
            let st = unsafe { sys::ov_preprocess_input_info_get_model_info(info, &mut model_info) };
            if st != sys::ov_status_e::OK {
                // SAFETY: info came from get_input_info_by_name.
                unsafe { sys::ov_preprocess_input_info_free(info) };
                return check("ov_preprocess_input_info_get_model_info", st).map(|_| ptr::null_mut());
            }
            let mut lay = ptr::null_mut();
            // SAFETY: valid C string and out-parameter.
            let st = unsafe { sys::ov_layout_create(l.as_ptr(), &mut lay) };
            let st = if st == sys::ov_status_e::OK {
                // SAFETY: valid handles; OpenVINO copies the layout.
                let s2 = unsafe { sys::ov_preprocess_input_model_info_set_layout(model_info, lay) };
                // SAFETY: lay came from ov_layout_create.
                unsafe { sys::ov_layout_free(lay) };
                ("ov_preprocess_input_model_info_set_layout", s2)
            } else {
                ("ov_layout_create", st)
            };
            // SAFETY: both came from the getters above.
            unsafe {
                sys::ov_preprocess_input_model_info_free(model_info);
                sys::ov_preprocess_input_info_free(info);
            }
            check(st.0, st.1)?;
            let mut built = ptr::null_mut();
            // SAFETY: valid handle and out-parameter.
            check("ov_preprocess_prepostprocessor_build", unsafe {
                sys::ov_preprocess_prepostprocessor_build(ppp, &mut built)
            })?;
            Ok(built)
        })();
        // SAFETY: ppp came from ov_preprocess_prepostprocessor_create.
        unsafe { sys::ov_preprocess_prepostprocessor_free(ppp) };
        Ok(OvModel { raw: result? })
    }
}

impl Drop for OvModel {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { sys::ov_model_free(self.raw) };
    }
}

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

/// A compiled model.
pub struct CompiledModel {
    raw: *mut sys::ov_compiled_model_t,
}

// SAFETY: ov::CompiledModel is thread-safe for creating infer requests and reading properties.
unsafe impl Send for CompiledModel {}
// SAFETY: as above.
unsafe impl Sync for CompiledModel {}

impl Drop for CompiledModel {
    fn drop(&mut self) {
        tracing::trace!("ov_compiled_model_free");
        // SAFETY: owned handle, freed once.
        unsafe { sys::ov_compiled_model_free(self.raw) };
    }
}

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
        let p = unsafe { sys::ov_partial_shape_to_string(view) };
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: NUL-terminated string allocated by OpenVINO; freed with ov_free.
            let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
            // SAFETY: allocated by OpenVINO for the caller.
            unsafe { sys::ov_free(p) };
            s
        }
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

/// An infer request. Used by one thread at a time (the pool hands it out exclusively).
pub struct InferRequest {
    raw: *mut sys::ov_infer_request_t,
}

// SAFETY: an infer request may move between threads; exclusive use is enforced by `&mut self`.
unsafe impl Send for InferRequest {}

impl Drop for InferRequest {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { sys::ov_infer_request_free(self.raw) };
    }
}

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

/// An OpenVINO tensor object (a reference to host memory, ours or OpenVINO's).
pub struct OvTensor {
    raw: *mut sys::ov_tensor_t,
}

// SAFETY: tensor objects are reference-counted by OpenVINO and may be freed from any thread.
unsafe impl Send for OvTensor {}
// SAFETY: only read through `&self` (shape, data pointer).
unsafe impl Sync for OvTensor {}

impl Drop for OvTensor {
    fn drop(&mut self) {
        // SAFETY: owned reference, freed once.
        unsafe { sys::ov_tensor_free(self.raw) };
    }
}

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
    to_ov_type(dtype).ok_or_else(|| OvError {
        call: "(tensor)",
        status: -1,
        message: format!("OpenVINO has no element type for {dtype}"),
    })
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
