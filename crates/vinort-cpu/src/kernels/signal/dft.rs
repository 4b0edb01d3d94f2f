//! [DFT](https://onnx.ai/onnx/operators/onnx__DFT.html), opsets 17 and 20.
//!
//! The input's last dim holds one value (real signal) or two (real, imaginary); the transform
//! runs along `axis`, which may be any other dim (`[-r, -2] ∪ [0, r-2]`). Opset 17 takes `axis`
//! as an attribute (default 1); opset 20 takes it as an optional scalar input (default -2).
//!
//! - `inverse=0`: complex output; `onesided=1` keeps bins `0..=dft_length/2` (RFFT).
//! - `inverse=1, onesided=0`: the inverse transform, divided by `dft_length`, complex output.
//! - `inverse=1, onesided=1` (IRFFT): the input is the one-sided half of a Hermitian spectrum and
//!   the output is real (last dim 1), `dft_length` samples long, by default
//!   `2·(signal_dim_axis - 1)`.
//!
//! `dft_length` cuts or zero-pads the input along the axis. The spec allows one-sided transforms
//! of real input (forward) and complex input (inverse) only; like ONNX's reference, the other
//! combinations are computed anyway (a forward one-sided transform of complex input keeps the
//! low bins, real input to IRFFT is a spectrum with zero imaginary parts).

use vinort_ir::Values;
use vinort_ir::{Error, Result, RunContext, Tensor, Value};

use super::fft::{Layout, Transform, transform};
use super::positive;
use crate::kernel::{Kernel, NodeInfo, norm_axis, opt_tensor_in, tensor_in};
use crate::kernels::ml::scalar_i64;
use crate::kernels::support::{load_f64, store_f64};

pub(super) fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let axis = if n.opset >= 20 { Axis::Input } else { Axis::Fixed(n.attr_or("axis", 1i64)?) };
    let flag = |name: &str| -> Result<bool> {
        match n.attr_or(name, 0i64)? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(n.error(format!("{name} must be 0 or 1, got {v}"))),
        }
    };
    Ok(Box::new(Dft { axis, inverse: flag("inverse")?, onesided: flag("onesided")? }))
}

/// Where the axis comes from.
#[derive(Clone, Copy, Debug)]
enum Axis {
    /// The opset-17 attribute.
    Fixed(i64),
    /// Opset 20's optional input 2 (default -2).
    Input,
}

struct Dft {
    axis: Axis,
    inverse: bool,
    onesided: bool,
}

impl Kernel for Dft {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let axis = match self.axis {
            Axis::Fixed(a) => a,
            Axis::Input => opt_tensor_in(inputs, 2)?.map(|t| scalar_i64(t, "DFT axis")).transpose()?.unwrap_or(-2),
        };
        let dft_length = opt_tensor_in(inputs, 1)?.map(|t| scalar_i64(t, "dft_length")).transpose()?;
        Ok(smallvec::smallvec![dft(x, axis, dft_length, self.inverse, self.onesided)?.into()])
    }
}

/// The DFT of `x` along `axis` as the module doc says.
pub(super) fn dft(x: &Tensor, axis: i64, dft_length: Option<i64>, inverse: bool, onesided: bool) -> Result<Tensor> {
    let shape = x.shape();
    let rank = shape.len();
    let complex = match shape.last() {
        Some(1) if rank >= 2 => false,
        Some(2) if rank >= 2 => true,
        _ => {
            return Err(Error::invalid(format!(
                "DFT input must have rank >= 2 and a last dim of 1 (real) or 2 (complex), got shape {shape:?}"
            )));
        }
    };
    let axis = norm_axis(axis, rank)?;
    if axis == rank - 1 {
        return Err(Error::invalid("the DFT axis cannot be the last dim, which holds the complex parts"));
    }
    let n = shape[axis];
    let len = match dft_length {
        Some(l) => positive(l, "dft_length")?,
        None if inverse && onesided => {
            positive(2 * (n as i64 - 1), "the IRFFT length 2·(signal_dim_axis - 1) (pass dft_length)")?
        }
        None => positive(n as i64, "the length of the DFT axis")?,
    };
    let t = match (inverse, onesided) {
        (false, _) => Transform::Forward { len, onesided },
        (true, false) => Transform::Inverse { len },
        (true, true) => Transform::InverseReal { len },
    };
    let layout =
        Layout { outer: shape[..axis].iter().product(), n, inner: shape[axis + 1..rank - 1].iter().product(), complex };
    let y = transform(&load_f64(x)?, layout, t)?;
    let mut out_shape = shape.to_vec();
    out_shape[axis] = t.out_len();
    out_shape[rank - 1] = t.out_parts();
    store_f64(x.dtype(), &out_shape, &y)
}
