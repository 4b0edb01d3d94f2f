//! Linear algebra: MatMul and Gemm ([`matmul`]), [Einsum](https://onnx.ai/onnx/operators/onnx__Einsum.html)
//! ([`einsum`]) and [Det](https://onnx.ai/onnx/operators/onnx__Det.html) ([`det`]). Shared
//! pieces (the `gemm` crate wrapper, f16/bf16 widening, spatial attribute rules) live in
//! [`common`]; [`packed`] multiplies by constant f32 weights packed once ([`few`] when A has few rows).

use crate::kernel::Registry;

pub(crate) mod common;
pub(crate) mod det;
pub mod einsum;
mod few;
pub(crate) mod matmul;
pub(crate) mod packed;

#[cfg(test)]
mod tests;

pub(crate) fn register(r: &mut Registry) {
    for family in [matmul::register, einsum::register, det::register] {
        family(r);
    }
}
