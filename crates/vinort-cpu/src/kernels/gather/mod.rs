//! Index-driven data movement that the `shape` family does not hold.
//!
//! - [`unique`][unique]: [Unique](https://onnx.ai/onnx/operators/onnx__Unique.html).
//! - [`scatter`][scatter]: [TensorScatter](https://onnx.ai/onnx/operators/onnx__TensorScatter.html).

use crate::kernel::Registry;

pub(crate) mod scatter;
pub(crate) mod unique;

pub(crate) fn register(r: &mut Registry) {
    for family in [unique::register, scatter::register] {
        family(r);
    }
}
