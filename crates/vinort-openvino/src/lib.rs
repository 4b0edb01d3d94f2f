//! vinort's OpenVINO execution provider.
#![deny(missing_docs)]

#[cfg(feature = "ffi")]
pub mod export;
#[cfg(feature = "ffi")]
pub mod ffi;
pub mod options;
#[cfg(feature = "ffi")]
pub mod partition_cache;
#[cfg(feature = "ffi")]
pub mod probe;
#[cfg(feature = "ffi")]
pub mod provider;
pub mod rules;
pub mod semantics;
pub mod slow;
