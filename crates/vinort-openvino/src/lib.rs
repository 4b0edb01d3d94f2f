//! vinort's OpenVINO execution provider.
//!
//! Module map (what each module owns):
//!
//! | module | owns |
//! |---|---|
//! | [`provider`] | the [`provider::OpenVinoProvider`]: start-up, capability layers, compile strategies, request pool, per-shape cache, output hand-over (see its own map) |
//! | [`ffi`] | owning wrappers over OpenVINO's C API, one per handle kind; finding and loading the library |
//! | [`cpu_kind`] | what the CPU plugin does on this CPU under oneDNN's ISA cap: exact int8 (VNNI), bf16 by default |
//! | [`error`] | [`error::OvError`], the typed failures of finding, loading, starting and calling OpenVINO, and their one conversion at the provider border |
//! | `fnv` | the stable FNV-1a hash behind on-disk keys (probe cache, partition files) |
//! | [`options`] | the ORT-compatible provider options: parsing, validation, resolution to OpenVINO properties |
//! | [`rules`] | the measured capability table (`data/ov_cpu_rules.tsv`): format, parsing, lookup |
//! | [`semantics`] | refusals for attribute/data cases where OpenVINO computes something other than ONNX |
//! | [`slow`] | refusals for measured slow paths the Cpu provider beats |
//! | [`version`] | the OpenVINO release the rules were measured on; the start-up version check |
//! | [`probe`] | single-node compile probes, remembered on disk |
//! | [`export`] | a partition as a standalone ONNX model for OpenVINO's frontend |
//! | [`partition_cache`] | partition files in `cache_dir`, so OpenVINO's cache keys on a file |
//!
//! A new refusal rule is one entry in [`semantics`] or [`slow`]; the order in which the layers
//! are asked lives in `provider/capability.rs`.
#![deny(missing_docs)]

#[cfg(feature = "ffi")]
pub mod context;
pub mod cpu_kind;
pub mod error;
#[cfg(feature = "ffi")]
pub mod export;
#[cfg(feature = "ffi")]
pub mod ffi;
#[cfg(feature = "ffi")]
mod fnv;
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
pub mod version;

/// Locks a mutex, taking over the data of a thread that panicked while holding it: every value
/// guarded in this crate (caches, pools) stays consistent between statements.
#[cfg(feature = "ffi")]
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
