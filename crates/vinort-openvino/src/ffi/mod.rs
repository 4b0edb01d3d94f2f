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
    // SAFETY: returns a copy of the thread's last error message, allocated for the caller
    // (valgrind found it leaked when read in place): take_string frees it with ov_free.
    let message = take_string(unsafe { sys::ov_get_last_err_msg() }).trim().to_owned();
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
            check_library(&path)?;
            sys::library::load_from(&path).map_err(|message| OvError::Load { path: path.clone(), message })?;
            tracing::debug!(path = %path.display(), "OpenVINO library loaded");
            Ok(path)
        })
        .as_deref()
        .map_err(Clone::clone)
}

/// Every C function vinort calls (the free functions of the owned handles included): a library
/// lacking one is refused when it is loaded, because openvino-sys would panic at the first call
/// of a missing function. A test checks the list against the calls in the source.
pub const SYMBOLS: &[&str] = &[
    "ov_available_devices_free",
    "ov_compiled_model_create_infer_request",
    "ov_compiled_model_export_model",
    "ov_compiled_model_free",
    "ov_compiled_model_get_property",
    "ov_compiled_model_input_by_index",
    "ov_compiled_model_inputs_size",
    "ov_compiled_model_output_by_index",
    "ov_compiled_model_outputs_size",
    "ov_core_compile_model_from_file_props",
    "ov_core_compile_model_props",
    "ov_core_create",
    "ov_core_free",
    "ov_core_get_available_devices",
    "ov_core_get_property",
    "ov_core_import_model",
    "ov_core_read_model",
    "ov_core_read_model_from_memory_buffer",
    "ov_core_set_properties",
    "ov_core_set_property",
    "ov_free",
    "ov_get_last_err_msg",
    "ov_get_openvino_version",
    "ov_infer_request_cancel",
    "ov_infer_request_free",
    "ov_infer_request_get_output_tensor_by_index",
    "ov_infer_request_infer",
    "ov_infer_request_set_input_tensor_by_index",
    "ov_infer_request_set_output_tensor_by_index",
    "ov_layout_create",
    "ov_layout_free",
    "ov_model_free",
    "ov_model_reshape_input_by_name",
    "ov_output_const_port_free",
    "ov_partial_shape_create",
    "ov_partial_shape_free",
    "ov_partial_shape_to_string",
    "ov_port_get_element_type",
    "ov_port_get_partial_shape",
    "ov_preprocess_input_info_free",
    "ov_preprocess_input_info_get_model_info",
    "ov_preprocess_input_model_info_free",
    "ov_preprocess_input_model_info_set_layout",
    "ov_preprocess_prepostprocessor_build",
    "ov_preprocess_prepostprocessor_create",
    "ov_preprocess_prepostprocessor_free",
    "ov_preprocess_prepostprocessor_get_input_info_by_name",
    "ov_shape_create",
    "ov_shape_free",
    "ov_tensor_create",
    "ov_tensor_create_from_host_ptr",
    "ov_tensor_data",
    "ov_tensor_free",
    "ov_tensor_get_byte_size",
    "ov_tensor_get_shape",
    "ov_version_free",
];

/// Functions of [`SYMBOLS`] that OpenVINO 2025.x lacks (the non-variadic compile and
/// set-properties calls came later; 2025.4.1 has none of them, 2026.4.1 all). A library
/// without them still loads: it imports compiled blobs (EPContext models written by ONNX
/// Runtime's OpenVINO EP, which bundles 2025.4.1), setting properties one by one with
/// `ov_core_set_property`, and a compile on it is refused by name ([`lacks`]).
pub const NEWER_SYMBOLS: &[&str] =
    &["ov_core_compile_model_from_file_props", "ov_core_compile_model_props", "ov_core_set_properties"];

/// The [`NEWER_SYMBOLS`] the loaded library lacks.
static LACKING: OnceLock<Vec<&'static str>> = OnceLock::new();

/// True when the loaded library lacks the C function `name` (one of [`NEWER_SYMBOLS`]).
pub(crate) fn lacks(name: &str) -> bool {
    LACKING.get().is_some_and(|l| l.contains(&name))
}

/// The error for a call the loaded library cannot make.
pub(crate) fn older_api(call: &'static str) -> OvError {
    OvError::Call {
        call,
        status: -1,
        message: format!(
            "OpenVINO {} lacks {call} (OpenVINO 2026's C API): vinort compiles models only with OpenVINO 2026, \
             and imports compiled blobs (EPContext) with this one",
            version().unwrap_or_default()
        ),
    }
}

/// Opens the library on its own and checks it exports every function in [`SYMBOLS`] and
/// reports a `year.minor` version: an OpenVINO too old for vinort, or a library that is not
/// OpenVINO's C API, is an error naming what is wrong before openvino-sys binds it (which
/// would panic on a missing function or an unreadable version).
fn check_library(path: &Path) -> OvResult<()> {
    let load = |message: String| OvError::Load { path: path.to_owned(), message };
    // SAFETY: opening a shared library runs its initialisers; this is the library the caller
    // chose to load (openvino-sys opens the same file right after).
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| load(e.to_string()))?;
    let missing: Vec<&str> = SYMBOLS
        .iter()
        // SAFETY: only the symbol's presence is checked; it is never called through this handle.
        .filter(|name| unsafe { lib.get::<unsafe extern "C" fn()>(name.as_bytes()) }.is_err())
        .copied()
        .collect();
    let (newer, missing): (Vec<&str>, Vec<&str>) = missing.into_iter().partition(|n| NEWER_SYMBOLS.contains(n));
    match missing.as_slice() {
        [] => {
            let _ = LACKING.set(newer);
            let version = version_of(&lib).map_err(load)?;
            use crate::version::{self as v, Compatibility, MEASURED};
            match v::parse(&version).as_deref() {
                Some([_, _, ..]) if v::compare(&version, MEASURED.full(), v::MINIMUM) == Compatibility::TooOld => {
                    let old = OvError::VersionTooOld { found: version, minimum: v::MINIMUM, measured: MEASURED.full() };
                    Err(load(old.to_string()))
                }
                Some([_, _, ..]) => Ok(()),
                _ => Err(load(format!("its version `{version}` is not OpenVINO's `year.minor...`"))),
            }
        }
        [..] if missing.len() + newer.len() == SYMBOLS.len() => {
            Err(load("it exports none of OpenVINO's C API (is it libopenvino_c?)".to_owned()))
        }
        _ => Err(load(format!(
            "it lacks {} of the {} OpenVINO C functions vinort calls ({}{}): an OpenVINO older than {} or not a \
             complete build; install one with `{}`",
            missing.len(),
            SYMBOLS.len(),
            missing.iter().take(4).copied().collect::<Vec<_>>().join(", "),
            if missing.len() > 4 { ", ..." } else { "" },
            crate::version::MINIMUM,
            finder::INSTALL_HINT
        ))),
    }
}

/// The version a library reports, called through `lib` (before openvino-sys binds it).
fn version_of(lib: &libloading::Library) -> Result<String, String> {
    type GetVersion = unsafe extern "C" fn(*mut sys::ov_version_t) -> sys::ov_status_e;
    type FreeVersion = unsafe extern "C" fn(*mut sys::ov_version_t);
    // SAFETY: both symbols were found above and have these C signatures in OpenVINO's C API.
    let (get, free) = unsafe {
        (
            lib.get::<GetVersion>(b"ov_get_openvino_version").map_err(|e| e.to_string())?,
            lib.get::<FreeVersion>(b"ov_version_free").map_err(|e| e.to_string())?,
        )
    };
    let mut v = sys::ov_version_t { buildNumber: ptr::null(), description: ptr::null() };
    // SAFETY: v is a valid out-parameter.
    if unsafe { get(&mut v) } != sys::ov_status_e::OK {
        return Err("its ov_get_openvino_version failed".to_owned());
    }
    let s = match v.buildNumber.is_null() {
        true => String::new(),
        // SAFETY: NUL-terminated string owned by v until it is freed below.
        false => unsafe { CStr::from_ptr(v.buildNumber) }.to_string_lossy().into_owned(),
    };
    // SAFETY: v was filled by the library's ov_get_openvino_version.
    unsafe { free(&mut v) };
    Ok(s)
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
            let d = cstring(device)?;
            if !props.is_empty() && lacks("ov_core_set_properties") {
                for (k, v) in props {
                    let (k, v) = (cstring(k)?, cstring(v)?);
                    // SAFETY: valid core and C strings for the call.
                    check("ov_core_set_property", unsafe {
                        sys::ov_core_set_property(core.raw, d.as_ptr(), k.as_ptr(), v.as_ptr())
                    })?;
                }
            } else if !props.is_empty() {
                let p = Properties::new(props)?;
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

#[cfg(test)]
mod tests {
    use super::SYMBOLS;

    /// Every `sys::ov_*(` call and owned handle's free function in the crate is in [`SYMBOLS`],
    /// so a library lacking one is refused at load instead of panicking at the call.
    #[test]
    fn symbols_lists_every_c_function_called() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut called = std::collections::BTreeSet::new();
        let mut stack = vec![src];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                let text = std::fs::read_to_string(&p).unwrap();
                for (i, _) in text.match_indices("ov_") {
                    let name: String =
                        text[i..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                    let rest = &text[i + name.len()..];
                    let call = text[..i].ends_with("sys::") && rest.starts_with('(');
                    // The free function of an `owned_handle!`, named after the handle type.
                    let handle_free = name.ends_with("_free") && text[..i].ends_with("_t, ");
                    if call || handle_free {
                        called.insert(name);
                    }
                }
            }
        }
        assert!(called.len() > 40, "the scan found too few calls: {called:?}");
        let missing: Vec<&String> = called.iter().filter(|n| !SYMBOLS.contains(&n.as_str())).collect();
        assert!(missing.is_empty(), "called but not in SYMBOLS: {missing:?}");
    }
}
