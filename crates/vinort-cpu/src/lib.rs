//! vinort's Cpu execution provider.
//!
//! Claims every node it has a kernel for; the kernels live in [`kernels`], one folder per kind
//! of op (elementwise, linalg, conv, pool, norm, reduce, shape, gather, quant, rnn, ...), each
//! checked against a naive reference on random shapes. A kernel is registered in its own file
//! with [`kernel::Registry::op`], which takes the opsets from the op's spec in
//! `vinort_ir::ops`: an op's opsets, shape rule and traits are written down once, there.
//!
//! Shared by every family: [`kernel`] (the kernel interface, the registry and THE dtype
//! dispatch `with_numeric!`), `numeric` (the one numeric trait set, on `num-traits`, and the
//! f16/bf16 widening helpers), `par` (when a kernel goes parallel) and [`isa`] (which
//! instruction sets the kernels use: detected once, capped by `VINORT_CPU_ISA`).
#![deny(missing_docs)]

pub mod isa;
pub mod kernel;
pub mod kernels;
pub(crate) mod numeric;
pub mod optimize;
pub(crate) mod par;
pub(crate) mod per_shape;
pub mod provider;
pub(crate) mod qgemm;
#[cfg(test)]
pub(crate) mod test_support;
pub(crate) mod vmath;

pub use provider::CpuProvider;
