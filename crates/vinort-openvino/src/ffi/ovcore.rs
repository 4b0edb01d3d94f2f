//! The OpenVINO core: device queries, reading and compiling models.

use std::ffi::{CStr, CString, c_void};
use std::path::Path;
use std::ptr;

use openvino_sys as sys;

use super::{CompiledModel, OvModel, OvResult, check, cstring, take_string};

owned_handle! {
    /// The process-wide OpenVINO core.
    Core: ov_core_t, ov_core_free
}

// SAFETY: ov::Core is documented thread-safe for concurrent reads, compiles and queries; the
// handle is never mutated after creation (properties go to compile calls, not the core).
unsafe impl Send for Core {}
// SAFETY: as above.
unsafe impl Sync for Core {}

/// Key/value properties held as C strings for one call.
pub struct Properties {
    _keys: Vec<CString>,
    _values: Vec<CString>,
    pub(super) raw: Vec<sys::ov_property_t>,
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
        if super::lacks("ov_core_compile_model_props") {
            return Err(super::older_api("ov_core_compile_model_props"));
        }
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
        if super::lacks("ov_core_compile_model_from_file_props") {
            return Err(super::older_api("ov_core_compile_model_from_file_props"));
        }
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
