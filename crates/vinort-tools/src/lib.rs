//! Tooling around vinort that the runtime itself never needs: the CLI (`vinort test`,
//! `vinort perf`), the benchmark harness, the benches and the conformance suite share it, so
//! each piece exists once and the `vinort` facade stays a runtime API.
//!
//! - [`testcase`]: ONNX test-case folders (`model.onnx` + `test_data_set_N/*.pb`): finding,
//!   reading, running and comparing them.
//! - [`providers`]: `-e openvino,cpu -i "key|value" --strict` to providers ([`providers::ProviderList`],
//!   and with the `cli` feature the `clap` arguments every subcommand flattens).
//! - [`stats`]: timed runs and nearest-rank latency percentiles; [`json`]: reports as JSON.
//! - [`alloc_count`]: a counting global allocator, for allocations per inference.
#![deny(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

pub mod alloc_count;
pub mod json;
pub mod providers;
pub mod stats;
pub mod testcase;
