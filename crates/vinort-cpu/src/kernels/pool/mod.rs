//! Pooling.
//!
//! - [`pooling`][pooling]: [MaxPool](https://onnx.ai/onnx/operators/onnx__MaxPool.html),
//!   [AveragePool](https://onnx.ai/onnx/operators/onnx__AveragePool.html),
//!   [LpPool](https://onnx.ai/onnx/operators/onnx__LpPool.html) and their global forms.
//! - [`unpool`][unpool]: [MaxUnpool](https://onnx.ai/onnx/operators/onnx__MaxUnpool.html).
//! - [`blocked`][blocked]: MaxPool in the NCHWc layout (placed by the optimizer's layout pass).

use crate::kernel::Registry;

pub(crate) mod blocked;
pub(crate) mod pooling;
pub(crate) mod unpool;

pub(crate) fn register(r: &mut Registry) {
    for family in [pooling::register, unpool::register] {
        family(r);
    }
}
