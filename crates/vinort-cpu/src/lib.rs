//! vinort's Cpu execution provider.
//!
//! Claims every node it has a kernel for; the kernels live in [`kernels`], one file per op
//! family, each checked against a naive reference on random shapes.
#![deny(missing_docs)]

pub mod kernel;
pub mod kernels;
pub mod provider;
#[cfg(test)]
pub(crate) mod test_support;

pub use provider::CpuProvider;
