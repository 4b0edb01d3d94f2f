//! Linear algebra and windowed ops: MatMul and Gemm ([`matmul`]), Conv and ConvTranspose
//! ([`conv`]), and the pools ([`pool`]). Shared pieces (the `gemm` crate wrapper, spatial
//! attribute rules) live in [`common`].

use crate::kernel::Registry;

pub(crate) mod common;
pub(crate) mod conv;
pub(crate) mod matmul;
pub(crate) mod pool;

#[cfg(test)]
mod tests;

pub(crate) fn register(r: &mut Registry) {
    matmul::register(r);
    conv::register(r);
    pool::register(r);
}
