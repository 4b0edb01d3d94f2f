//! vinort's Cpu execution provider.
//!
//! Claims every node it has a kernel for; the kernels live in [`kernels`], one file per op
//! family, each checked against a naive reference on random shapes.
//!
//! Shared by every family: [`kernel`] (the kernel interface, the registry and THE dtype
//! dispatch `with_numeric!`), `numeric` (the one numeric trait set, on `num-traits`, and the
//! f16/bf16 widening helpers) and `par` (when a kernel goes parallel).
#![deny(missing_docs)]

pub mod kernel;
pub mod kernels;
pub(crate) mod numeric;
pub(crate) mod par;
pub mod provider;

pub use provider::CpuProvider;
