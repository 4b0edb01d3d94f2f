//! Reductions and scans.
//!
//! - [`ops`][ops]: the ten `Reduce*` ops, ArgMax and ArgMin.
//! - [`cumprod`][cumprod]: [CumProd](https://onnx.ai/onnx/operators/onnx__CumProd.html).

use crate::kernel::Registry;

pub(crate) mod cumprod;
pub mod ops;

pub(crate) fn register(r: &mut Registry) {
    ops::register(r);
    cumprod::register(r);
}
