//! What the graph optimizer ([`crate::optimize`]) fuses into a Conv, MatMul or Gemm: the
//! elementwise ops that follow the product, applied to each block of the output while it is
//! still in cache, before the output tensor is sealed. That spares one pass over memory and one
//! buffer per fused op.
//!
//! The chain is `y = clamp(act(((y · scale) + bias) + z))`, each part optional, in the order
//! the unfused graph computes it: a scale over the last axis (an integer product's Cast to
//! float times its scales, for MatMulInteger), a bias over the last axis (MatMul + Add of a
//! constant `[N]`), a residual `z` of the output's own shape (an Add of another value), one
//! activation, then a clamp by constants (a Max or Min with a scalar, or a Clip, after the
//! activation: Keras exports write a bounded LeakyRelu as LeakyRelu then Max). Every formula is the
//! one the unfused op's kernel uses (`elementwise::unary`, Clip's comparisons, Add's `+`), in
//! f32, so the fused result is bit-for-bit the unfused one. Only f32 outputs are fused.

use std::any::TypeId;

use vinort_ir::{Error, Result, Tensor};

use crate::vmath;
use crate::vmath::Fun;

/// An activation the optimizer folds into the op before it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Act {
    /// `max(v, 0)`, NaN kept.
    Relu,
    /// `alpha * v` below zero.
    LeakyRelu(f32),
    /// Clip-13's `min(max(v, lo), hi)` (NaN passes).
    Clip(f32, f32),
    /// `1 / (1 + e^-v)`.
    Sigmoid,
    /// `clamp(alpha * v + beta, 0, 1)`.
    HardSigmoid(f32, f32),
    /// `v * clamp(v / 6 + 0.5, 0, 1)`.
    HardSwish,
    /// `tanh(v)`.
    Tanh,
    /// Gelu-20 with `approximate="none"`: `0.5 v (1 + erf(v / sqrt 2))`.
    Gelu,
}

impl Act {
    /// The activation as `[lo, hi]` for a kernel to apply while it stores, as
    /// `v < lo ? lo : v`, then `x > hi ? hi : x` (NaN passes, as in [`Act::apply`]), when it
    /// is a clamp (Relu, Clip).
    pub(crate) fn clamp(self) -> Option<[f32; 2]> {
        match self {
            Act::Relu => Some([0.0, f32::INFINITY]),
            Act::Clip(lo, hi) => Some([lo, hi]),
            _ => None,
        }
    }

    /// Applies the activation to every element in place, compiled for AVX-512 or AVX2 when the
    /// CPU has them ([`vmath::apply_in_place`]).
    pub(crate) fn apply(self, y: &mut [f32]) {
        match self {
            Act::Relu => vmath::apply_in_place(Fun::Relu, y),
            Act::LeakyRelu(a) => vmath::apply_in_place(Fun::LeakyRelu(a), y),
            Act::Clip(lo, hi) => vmath::apply_in_place(Fun::Clip(lo, hi), y),
            Act::Sigmoid => vmath::apply_in_place(Fun::Sigmoid, y),
            Act::HardSigmoid(a, b) => vmath::apply_in_place(Fun::HardSigmoid(a, b), y),
            Act::HardSwish => vmath::apply_in_place(Fun::HardSwish, y),
            Act::Tanh => vmath::apply_in_place(Fun::Tanh, y),
            Act::Gelu => vmath::apply_in_place(Fun::Gelu, y),
        }
    }
}

/// The fused tail of a product.
#[derive(Clone, Debug, Default)]
pub(crate) struct Epilogue {
    /// Input index of an f32 scale of one element or one per element of the last axis,
    /// multiplied first.
    pub scale: Option<usize>,
    /// A constant f32 bias over the output's last axis.
    pub bias: Option<Tensor>,
    /// Input index of a residual of the output's shape, added after the bias.
    pub residual: Option<usize>,
    /// The activation.
    pub act: Option<Act>,
    /// `[lo, hi]` applied after the activation as Clip does (`v < lo ? lo : v`, then
    /// `v > hi ? hi : v`, NaN passing), last.
    pub clamp: Option<[f32; 2]>,
}

impl Epilogue {
    /// True when there is nothing to apply.
    pub fn is_empty(&self) -> bool {
        self.scale.is_none()
            && self.bias.is_none()
            && self.residual.is_none()
            && self.act.is_none()
            && self.clamp.is_none()
    }

    /// The activation and the clamp after it as one clamp a kernel can apply while it stores,
    /// when both are clamps (or absent, but not both absent).
    pub fn store_clamp(&self) -> Option<[f32; 2]> {
        match (self.act, self.clamp) {
            (None, None) => None,
            (None, Some(c)) => Some(c),
            (Some(a), None) => a.clamp(),
            (Some(_), Some(_)) => None,
        }
    }

    /// The activation then the clamp, in place, for a kernel that stored without them.
    pub fn activate(&self, y: &mut [f32]) {
        if let Some(a) = self.act {
            a.apply(y);
        }
        self.clamp_after(y);
    }

    /// The clamp alone, for a kernel that applied the activation as it stored.
    pub fn clamp_after(&self, y: &mut [f32]) {
        if let Some([lo, hi]) = self.clamp {
            vmath::apply_in_place(Fun::Clip(lo, hi), y);
        }
    }

    /// The run-time operands of the chain among a kernel's inputs, checked against an output
    /// of `len` elements.
    pub fn operands<'a>(&self, inputs: &[Option<&'a vinort_ir::Value>], len: usize) -> Result<Operands<'a>> {
        let f32s = |i: usize| crate::kernel::tensor_in(inputs, i).and_then(|t| t.as_slice::<f32>());
        let z = self.residual.map(f32s).transpose()?;
        if let Some(z) = z
            && z.len() != len
        {
            return Err(Error::invalid(format!("fused residual has {} elements, the output {len}", z.len())));
        }
        Ok(Operands { z, scale: self.scale.map(f32s).transpose()? })
    }

    /// Applies the chain to `y`, the block of the output starting at element `offset`, whose
    /// rows along the last axis have `row` elements; `ops` are the run-time operands. Does
    /// nothing unless `T` is f32 (the optimizer fuses only f32 outputs).
    pub fn apply<T: 'static>(&self, y: &mut [T], offset: usize, row: usize, ops: Operands<'_>) -> Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        if TypeId::of::<T>() != TypeId::of::<f32>() {
            return Err(Error::invalid("a fused epilogue on a non-f32 output"));
        }
        // SAFETY: T is f32 (checked just above), so the slice has f32's layout and length.
        let y: &mut [f32] = unsafe { &mut *(std::ptr::from_mut::<[T]>(y) as *mut [f32]) };
        match ops.scale {
            Some([s]) => y.iter_mut().for_each(|v| *v *= *s),
            Some(s) if s.len() == row && row > 0 && y.len().is_multiple_of(row) => {
                for r in y.chunks_exact_mut(row) {
                    r.iter_mut().zip(s).for_each(|(v, s)| *v *= *s);
                }
            }
            Some(s) => return Err(Error::invalid(format!("fused scale of {} elements for rows of {row}", s.len()))),
            None => {}
        }
        if let Some(b) = &self.bias {
            let b = b.as_slice::<f32>()?;
            if b.len() != row || row == 0 || !offset.is_multiple_of(row) || !y.len().is_multiple_of(row) {
                return Err(Error::invalid(format!("fused bias of {} elements for rows of {row}", b.len())));
            }
            for r in y.chunks_exact_mut(row) {
                r.iter_mut().zip(b).for_each(|(v, b)| *v += *b);
            }
        }
        if let Some(z) = ops.z {
            let z = z.get(offset..offset + y.len()).ok_or_else(|| Error::invalid("fused residual is too short"))?;
            y.iter_mut().zip(z).for_each(|(v, z)| *v += *z);
        }
        self.activate(y);
        Ok(())
    }
}

/// The run-time operands of an [`Epilogue`]: its residual and its scale.
#[derive(Clone, Copy, Default)]
pub(crate) struct Operands<'a> {
    /// The whole residual.
    pub z: Option<&'a [f32]>,
    /// The scale (one element, or one per element of the last axis).
    pub scale: Option<&'a [f32]>,
}
