//! [Swish](https://onnx.ai/onnx/operators/onnx__Swish.html) (opset 24–latest),
//! `y = x · sigmoid(alpha · x)`, and [SwiGLU](https://onnx.ai/onnx/operators/onnx__SwiGLU.html)
//! (opset 28–latest), `y = Swish_alpha(a) · b` for equally shaped `a` and `b`.
//!
//! Each step is rounded to the element type as the reference computes it.

use vinort_ir::Values;
use vinort_ir::{Error, Result, RunContext, Value};

use super::{Rnd, store};
use crate::kernel::{Kernel, NodeInfo, Registry, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    for op in ["Swish", "SwiGLU"] {
        r.op("", op, factory);
    }
}

struct Swish {
    alpha: f32,
    glu: bool,
}

fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    if let Some(d) = info.input_dtype(0) {
        Rnd::of(d)?;
    }
    let n = info.node;
    Ok(Box::new(Swish { alpha: n.attr_or::<f32>("alpha", 1.0)?, glu: n.op_type == "SwiGLU" }))
}

/// `x · sigmoid(alpha · x)` with the reference's roundings in `rt`.
#[inline]
fn swish(x: f64, alpha: f64, rt: Rnd) -> f64 {
    let e = rt.r((rt.r(-alpha) * x).exp());
    rt.r(x * rt.r(1.0 / rt.r(1.0 + e)))
}

impl Kernel for Swish {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let a = tensor_in(inputs, 0)?;
        let rt = Rnd::of(a.dtype())?;
        let alpha = self.alpha as f64;
        let av = a.to_f64_vec()?;
        let out: Vec<f64> = if self.glu {
            let b = tensor_in(inputs, 1)?;
            if b.shape() != a.shape() || b.dtype() != a.dtype() {
                return Err(Error::invalid(format!(
                    "SwiGLU needs A and B of one shape and type, got {:?} {} and {:?} {}",
                    a.shape(),
                    a.dtype(),
                    b.shape(),
                    b.dtype()
                )));
            }
            let bv = b.to_f64_vec()?;
            av.iter().zip(&bv).map(|(x, y)| rt.r(swish(*x, alpha, rt) * y)).collect()
        } else {
            av.iter().map(|x| swish(*x, alpha, rt)).collect()
        };
        Ok(smallvec::smallvec![store(a.dtype(), a.shape(), &out)?.into()])
    }
}
