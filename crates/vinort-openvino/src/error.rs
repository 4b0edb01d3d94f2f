//! [`OvError`]: everything that can go wrong between vinort and OpenVINO, typed.
//!
//! The provider's trait methods return [`vinort_ir::Error`]; an `OvError` crosses that border
//! in one place, [`to_ir_error`], so the mapping can change in one place.

use std::path::PathBuf;

use vinort_ir::DType;

use crate::ffi::finder::INSTALL_HINT;
use crate::options::OptionError;

/// A failure to find, load, start or call OpenVINO.
#[derive(Debug, Clone, thiserror::Error)]
pub enum OvError {
    /// `libopenvino_c` is nowhere the search looked.
    #[error(
        "the OpenVINO C library (libopenvino_c.so) was not found. Searched:\n  - {}\nInstall it with: {INSTALL_HINT}",
        tried.join("\n  - ")
    )]
    LibraryNotFound {
        /// Every place tried, each with what was wrong there.
        tried: Vec<String>,
    },
    /// The library was found but could not be loaded (or lacks a symbol vinort needs).
    #[error("cannot load {}: {message}", path.display())]
    Load {
        /// The library file.
        path: PathBuf,
        /// The loader's message.
        message: String,
    },
    /// A C API call returned a failure status.
    #[error("OpenVINO {call} failed ({status}): {message}")]
    Call {
        /// The C function.
        call: &'static str,
        /// Its status code.
        status: i32,
        /// OpenVINO's last error message.
        message: String,
    },
    /// A string argument cannot cross into C.
    #[error("OpenVINO argument contains NUL: {value:?}")]
    Nul {
        /// The string.
        value: String,
    },
    /// A tensor's element type has no OpenVINO equivalent.
    #[error("OpenVINO has no element type for {0}")]
    NoElementType(DType),
    /// The loaded OpenVINO is older than vinort supports.
    #[error(
        "OpenVINO {found} is older than {minimum}, the oldest release vinort supports (its rules were measured on {measured}); install a newer one: {INSTALL_HINT}"
    )]
    VersionTooOld {
        /// The loaded version.
        found: String,
        /// The oldest supported release.
        minimum: &'static str,
        /// The release the rules were measured on.
        measured: &'static str,
    },
    /// A requested device is not there.
    #[error("OpenVINO device {device} is not available on this machine (OpenVINO {version} sees: {})", available.join(", "))]
    DeviceUnavailable {
        /// The device asked for.
        device: String,
        /// The loaded OpenVINO version.
        version: String,
        /// The devices OpenVINO does see.
        available: Vec<String>,
    },
    /// The provider options do not resolve for this device.
    #[error(transparent)]
    Options(#[from] OptionError),
}

/// Result of an OpenVINO operation.
pub type OvResult<T> = Result<T, OvError>;

/// An [`OvError`] at the `ExecutionProvider` border: a provider failure of "OpenVINO" that
/// keeps the OpenVINO error whole as its source, so the facade's `Error::Provider` can hand it
/// to the caller (who may downcast it to [`OvError`]).
pub fn to_ir_error(e: OvError) -> vinort_ir::Error {
    vinort_ir::Error::provider("OpenVINO", None, e)
}
