//! Convolutions.
//!
//! - [`standard`][standard]: [Conv](https://onnx.ai/onnx/operators/onnx__Conv.html) and
//!   [ConvTranspose](https://onnx.ai/onnx/operators/onnx__ConvTranspose.html), 1-D to 3-D.
//! - [`deform`][deform]: [DeformConv](https://onnx.ai/onnx/operators/onnx__DeformConv.html)
//!   (opsets 19, 22), 2-D, with offset groups, optional mask and bias.
//!
//! [`depthwise`][depthwise] is the depthwise plane Conv and the integer convolutions share.
//! [`im2col`][im2col] is the window walk Conv and the quantized convolutions share; the window
//! attributes themselves are parsed in `kernels::window`. The quantized convolutions (ConvInteger, QLinearConv) live with the other quantized ops in
//! `kernels::quant`.

use crate::kernel::Registry;

pub(crate) mod deform;
pub(crate) mod depthwise;
pub(crate) mod im2col;
pub(crate) mod narrow;
pub(crate) mod nchwc;
pub(crate) mod standard;

pub(crate) fn register(r: &mut Registry) {
    for family in [standard::register, deform::register] {
        family(r);
    }
}
