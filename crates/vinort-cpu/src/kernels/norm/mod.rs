//! Normalisation and softmax kernels (the reductions they build on live in `kernels::reduce`).
//!
//! - [`softmax`][softmax]: [Softmax](https://onnx.ai/onnx/operators/onnx__Softmax.html),
//!   [LogSoftmax](https://onnx.ai/onnx/operators/onnx__LogSoftmax.html),
//!   [Hardmax](https://onnx.ai/onnx/operators/onnx__Hardmax.html).
//! - [`normalization`][normalization]: LayerNormalization and RMSNormalization.
//! - [`channel`][channel]: BatchNormalization, InstanceNormalization and GroupNormalization.
//! - [`unscaled`][unscaled]: MeanVarianceNormalization, LpNormalization and LRN.
//!
//! Floating-point kernels cover f32, f64, f16 and bf16; the half types are computed in f32
//! (f64 stays f64), so no kernel accumulates in a 16-bit type.

use rayon::prelude::*;
use vinort_ir::Values;
use vinort_ir::{DType, Elem, Error, Node, Result, RunContext, Tensor, Value};

use crate::kernel::{Kernel, NodeInfo, Registry, tensor_in, with_numeric};
use crate::kernels::elementwise::broadcast::Broadcast;
pub(crate) use crate::kernels::linalg::common::{GemmElem, Real};
use crate::numeric::Numeric;
use crate::par;

pub mod channel;
pub mod normalization;
pub mod softmax;
#[cfg(test)]
pub(crate) mod testutil;
pub mod unscaled;

pub(crate) fn register(r: &mut Registry) {
    for family in [softmax::register, normalization::register, channel::register, unscaled::register] {
        family(r);
    }
}

/// A floating-point element type and the type it is computed in.
pub(crate) trait Float: Elem {
    /// The compute type.
    type R: Real;
    /// True when `R` is `Self`, so intermediate values stored in the output lose nothing.
    const EXACT: bool;
    /// Widens to the compute type.
    fn load(self) -> Self::R;
    /// Rounds back from the compute type.
    fn store(v: Self::R) -> Self;
}

impl Float for f32 {
    type R = f32;
    const EXACT: bool = true;
    #[inline(always)]
    fn load(self) -> f32 {
        self
    }
    #[inline(always)]
    fn store(v: f32) -> f32 {
        v
    }
}

impl Float for f64 {
    type R = f64;
    const EXACT: bool = true;
    #[inline(always)]
    fn load(self) -> f64 {
        self
    }
    #[inline(always)]
    fn store(v: f64) -> f64 {
        v
    }
}

/// f16 and bf16 compute in f32 and round back once, through the crate's one widen/narrow set.
impl<H: crate::numeric::HalfSlice> Float for H {
    type R = f32;
    const EXACT: bool = false;
    #[inline(always)]
    fn load(self) -> f32 {
        crate::numeric::widen_elem(self)
    }
    #[inline(always)]
    fn store(v: f32) -> Self {
        crate::numeric::narrow_elem(v)
    }
}

/// The error of a float-only kernel given a tensor of another element type.
pub(crate) fn not_float(d: DType) -> Error {
    Error::unsupported(format!("element type {d} (expected a float type)"))
}

/// Refuses a node whose input `i` has a known non-float element type.
pub(crate) fn require_float(info: &NodeInfo<'_>, i: usize) -> Result<()> {
    match info.input_dtype(i) {
        Some(d) if !d.is_float() => Err(Error::unsupported(format!(
            "{} input {i} of type {d}: only float, double, float16 and bfloat16 are implemented",
            info.node.qualified_op()
        ))),
        _ => Ok(()),
    }
}

/// A float-only kernel: attributes read once when the node is compiled, then run per element
/// type of input 0. [`float_factory`] and [`FloatOnly`] give every such kernel the same refusal
/// of non-float inputs and the same dtype dispatch.
pub(crate) trait FloatKernel: Send + Sync + Sized + 'static {
    /// Reads the node's attributes; called once input 0 is known not to be a non-float type.
    fn new(info: &NodeInfo<'_>) -> Result<Self>;
    /// Runs with input 0, `x`, holding `T` (all inputs at hand for the others).
    fn run_t<T: Float>(&self, x: &Tensor, inputs: &[Option<&Value>]) -> Result<Values>;
}

/// The factory of a [`FloatKernel`]: refuses a known non-float input 0, then reads attributes.
pub(crate) fn float_factory<K: FloatKernel>(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    require_float(info, 0)?;
    Ok(Box::new(FloatOnly(K::new(info)?)))
}

/// A [`FloatKernel`] as a [`Kernel`].
pub(crate) struct FloatOnly<K>(K);

impl<K: FloatKernel> Kernel for FloatOnly<K> {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        with_numeric!(float x.dtype(), |T| self.0.run_t::<T>(x, inputs), other => Err(not_float(other)))
    }
}

/// A required integer attribute that must be positive (GroupNormalization's `num_groups`,
/// LRN's `size`).
pub(crate) fn positive_attr(n: &Node, name: &str) -> Result<usize> {
    let v = n.req_attr::<i64>(name)?;
    if v <= 0 {
        return Err(n.error(format!("{name} must be positive, got {v}")));
    }
    Ok(v as usize)
}

/// A float tensor's elements converted to the compute type `R`, whatever float type it holds
/// (the ONNX schemas let scale, bias and statistics differ in type from the data).
pub(crate) fn load_real<R: Real>(t: &Tensor) -> Result<Vec<R>> {
    with_numeric!(float t.dtype(), |T| Ok(t.as_slice::<T>()?.iter().map(|v| R::from_f64(v.as_f64())).collect()),
        other => Err(Error::invalid(format!("expected a float tensor, got {other}"))))
}

/// Expands `vals` of shape `from` to shape `to` under ONNX's unidirectional (numpy)
/// broadcasting, or says why it cannot.
pub(crate) fn broadcast_to<R: Copy>(vals: &[R], from: &[usize], to: &[usize]) -> Result<Vec<R>> {
    let bad = || Error::invalid(format!("shape {from:?} does not broadcast to {to:?}"));
    if vals.len() != vinort_ir::tensor::numel(from) {
        return Err(bad());
    }
    let bc = Broadcast::new([to, from]).map_err(|_| bad())?;
    if bc.shape() != to {
        return Err(bad());
    }
    let [_, step] = bc.inner_strides();
    let mut out = Vec::with_capacity(bc.len());
    bc.for_segments(0, bc.len(), |_, [_, off], n| out.extend((0..n).map(|i| vals[off + i * step])));
    Ok(out)
}

/// Calls `f(row_index, x_row, out_row)` for each of the equally many rows of `x` (length `xrow`) and
/// `out` (length `orow`), on rayon when there is enough work. Rows of `x` may be empty
/// (an empty reduced extent) while rows of `out` are not.
pub(crate) fn for_rows<U, T, F>(x: &[U], xrow: usize, out: &mut [T], orow: usize, f: F)
where
    U: Sync,
    T: Send,
    F: Fn(usize, &[U], &mut [T]) + Sync + Send,
{
    if orow == 0 {
        return;
    }
    let rows = out.len() / orow;
    let work = xrow.max(orow);
    let row_x = |r: usize| x.get(r * xrow..(r + 1) * xrow).unwrap_or(&[]);
    if rows * work < par::ELEMENTS || rows < 2 || par::serial() {
        for (r, o) in out.chunks_exact_mut(orow).enumerate() {
            f(r, row_x(r), o);
        }
        return;
    }
    let per = (par::GRAIN / work.max(1)).max(1);
    out.par_chunks_mut(per * orow).enumerate().for_each(|(c, block)| {
        for (k, o) in block.chunks_exact_mut(orow).enumerate() {
            f(c * per + k, row_x(c * per + k), o);
        }
    });
}
