//! Reductions and scans.
//!
//! - [`ops`][ops]: the ten `Reduce*` ops.
//! - [`arg`][arg]: ArgMax and ArgMin.
//! - [`cumprod`][cumprod]: [CumProd](https://onnx.ai/onnx/operators/onnx__CumProd.html).
//! - [`fold`][fold] and [`elem`][elem]: the fold engine and element/accumulator types the
//!   reductions and the normalisations share.

use crate::kernel::Registry;

pub(crate) mod arg;
pub(crate) mod cumprod;
pub mod elem;
pub(crate) mod fold;
pub mod ops;

pub(crate) fn register(r: &mut Registry) {
    for family in [ops::register, arg::register, cumprod::register] {
        family(r);
    }
}
