//! vinort's OpenVINO execution provider.
#![deny(missing_docs)]

#[cfg(feature = "ffi")]
pub mod ffi;
pub mod options;
pub mod rules;
