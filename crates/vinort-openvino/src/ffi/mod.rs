//! Owning wrappers over OpenVINO's C API (runtime-linked through `openvino-sys`).
//!
//! One wrapper per C handle; `Drop` calls the matching free function and nothing else frees
//! it. Every status becomes an [`OvError`] carrying OpenVINO's last error message.

/// Declares the owning wrapper of one C handle kind: `Drop` calls the handle's free function,
/// and nothing else frees it.
macro_rules! owned_handle {
    ($(#[$doc:meta])* $name:ident: $raw:ident, $free:ident) => {
        $(#[$doc])*
        pub struct $name {
            pub(super) raw: *mut sys::$raw,
        }

        impl Drop for $name {
            fn drop(&mut self) {
                tracing::trace!("{}", stringify!($free));
                // SAFETY: `raw` came from the matching create call, and this wrapper is its
                // only owner, so it is freed exactly once.
                unsafe { sys::$free(self.raw) };
            }
        }
    };
}

mod compiled;
pub mod finder;
mod model;
mod ovcore;
mod tensor;

pub use compiled::{Canceller, CompiledModel, InferRequest, PortInfo};
pub use model::OvModel;
pub use ovcore::{Core, Properties};
pub use tensor::{OvTensor, OwnedOvBytes, from_ov_type, to_ov_type};

use std::ffi::{CStr, CString, c_char};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::OnceLock;

use openvino_sys as sys;

pub use crate::error::{OvError, OvResult};

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
    Err(OvError::Call { call, status: status as i32, message })
}

fn cstring(s: &str) -> OvResult<CString> {
    CString::new(s).map_err(|_| OvError::Nul { value: s.to_owned() })
}

/// Takes an OpenVINO-allocated C string, freeing it.
fn take_string(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: p is a NUL-terminated string OpenVINO allocated for us; freed right after.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    // SAFETY: allocated by OpenVINO for the caller to free with ov_free.
    unsafe { sys::ov_free(p) };
    s
}

static LIBRARY: OnceLock<OvResult<PathBuf>> = OnceLock::new();

/// Loads `libopenvino_c` once per process (searching as [`finder::search`] describes).
/// Later calls return the first outcome; an explicit path given after the library is loaded
/// is ignored.
pub fn load_library(explicit: Option<&Path>) -> OvResult<&'static Path> {
    LIBRARY
        .get_or_init(|| {
            let s = finder::search(explicit);
            let Some(path) = s.found else {
                return Err(OvError::LibraryNotFound { tried: s.tried });
            };
            sys::library::load_from(&path).map_err(|message| OvError::Load { path: path.clone(), message })?;
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

static CORE: OnceLock<OvResult<Core>> = OnceLock::new();

/// The one core of this process, created on first use (after [`load_library`]).
pub fn core() -> OvResult<&'static Core> {
    CORE.get_or_init(|| {
        load_library(None)?;
        let mut raw = ptr::null_mut();
        // SAFETY: raw is a valid out-parameter.
        check("ov_core_create", unsafe { sys::ov_core_create(&mut raw) })?;
        tracing::trace!("ov_core_create");
        Ok(Core { raw })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// How many distinct `(device, properties)` import cores a process keeps (each is a whole
/// OpenVINO core, kept for the process).
const MAX_IMPORT_CORES: usize = 16;

/// Cores that import blobs, one per device and property set (see [`import_with`]).
type ImportCores = std::sync::Mutex<Vec<((String, Vec<(String, String)>), &'static Core)>>;
static IMPORT_CORES: OnceLock<ImportCores> = OnceLock::new();

/// Imports an exported blob to run with `props`. OpenVINO's C API imports with no properties
/// (`ov_core_import_model`), and the CPU plugin then takes its defaults (bf16 on this kind of
/// CPU for a blob compiled f32), so the import goes through a core of its own whose device
/// properties are `props`: made once per distinct `(device, props)` and kept for the process
/// (compiled models of it may outlive any session).
pub fn import_with(blob: &[u8], device: &str, props: &[(String, String)]) -> OvResult<CompiledModel> {
    load_library(None)?;
    let key = (device.to_owned(), props.to_vec());
    let cores = IMPORT_CORES.get_or_init(Default::default);
    let mut cores = cores.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let core = match cores.iter().find(|(k, _)| *k == key) {
        Some((_, c)) => *c,
        None if cores.len() >= MAX_IMPORT_CORES => {
            return Err(OvError::Call {
                call: "import",
                status: -1,
                message: format!(
                    "{MAX_IMPORT_CORES} distinct device/property sets have been imported with already; \
                     vinort keeps no more import cores"
                ),
            });
        }
        None => {
            let mut raw = ptr::null_mut();
            // SAFETY: raw is a valid out-parameter.
            check("ov_core_create", unsafe { sys::ov_core_create(&mut raw) })?;
            let core = Core { raw };
            if !props.is_empty() {
                let p = Properties::new(props)?;
                let d = cstring(device)?;
                // SAFETY: valid core, device string and property array for the call.
                check("ov_core_set_properties", unsafe {
                    sys::ov_core_set_properties(core.raw, d.as_ptr(), p.raw.len(), p.raw.as_ptr())
                })?;
            }
            let leaked: &'static Core = Box::leak(Box::new(core));
            cores.push((key, leaked));
            leaked
        }
    };
    drop(cores);
    core.import(blob, device)
}
