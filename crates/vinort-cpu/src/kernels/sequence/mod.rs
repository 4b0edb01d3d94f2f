//! Control-flow, sequence and optional kernels of the default ONNX domain:
//! [Loop](https://onnx.ai/onnx/operators/onnx__Loop.html),
//! [Scan](https://onnx.ai/onnx/operators/onnx__Scan.html),
//! [SequenceMap](https://onnx.ai/onnx/operators/onnx__SequenceMap.html) (in `looping`);
//! the sequence ops (in `seq`); the optional ops (in `optional`).
//!
//! [If](https://onnx.ai/onnx/operators/onnx__If.html) lives in `kernels/control.rs`; it passes
//! sequences and optionals through like tensors.

use vinort_ir::Values;
use vinort_ir::{Result, Value};

use crate::kernel::{FnKernel, Kernel, Registry};

mod data;
mod looping;
mod optional;
mod seq;

#[cfg(test)]
mod tests;

pub(crate) fn register(r: &mut Registry) {
    for family in [looping::register, seq::register, optional::register] {
        family(r);
    }
}

/// Wraps a closure over the inputs as a kernel (the signature pins the closure's lifetimes).
fn kernel(f: impl Fn(&[Option<&Value>]) -> Result<Values> + Send + Sync + 'static) -> Box<dyn Kernel> {
    Box::new(FnKernel(f))
}
