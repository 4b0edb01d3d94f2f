//! [ArgMax](https://onnx.ai/onnx/operators/onnx__ArgMax.html) and
//! [ArgMin](https://onnx.ai/onnx/operators/onnx__ArgMin.html), opsets 1–latest
//! (`select_last_index` from 12), for every int type of 8–64 bits and f32, f64, f16, bf16.

use vinort_ir::Values;
use vinort_ir::tensor::numel;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::elem::RElem;
use crate::kernel::{Kernel, NodeInfo, Registry, norm_axis, tensor_in};
use crate::kernels::norm::for_rows;

pub(crate) fn register(r: &mut Registry) {
    for op in ["ArgMax", "ArgMin"] {
        r.op("", op, arg_factory);
    }
}

struct Arg {
    max: bool,
    axis: i64,
    keepdims: bool,
    last: bool,
}

fn arg_dtype_ok(d: DType) -> bool {
    use DType::*;
    matches!(d, F32 | F64 | F16 | BF16 | I8 | I16 | I32 | I64 | U8 | U16 | U32 | U64)
}

fn arg_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    if let Some(d) = info.input_dtype(0)
        && !arg_dtype_ok(d)
    {
        return Err(Error::unsupported(format!("{} is not implemented for {d}", n.op_type)));
    }
    Ok(Box::new(Arg {
        max: n.op_type == "ArgMax",
        axis: n.attr_or::<i64>("axis", 0)?,
        keepdims: n.attr_or::<i64>("keepdims", 1)? != 0,
        // Added in opset 12; absent before, which reads as the old first-index behaviour.
        last: n.attr_or::<i64>("select_last_index", 0)? != 0,
    }))
}

impl Kernel for Arg {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let t = crate::kernel::with_numeric!(x.dtype(), |T| self.run_t::<T>(x), d => {
            Err(Error::unsupported(format!("ArgMax/ArgMin of {d}")))
        })?;
        Ok(smallvec::smallvec![t.into()])
    }
}

impl Arg {
    fn run_t<T: RElem>(&self, x: &Tensor) -> Result<Tensor> {
        let shape = x.shape();
        let a = norm_axis(self.axis, shape.len())?;
        let (n, inner) = (shape[a], numel(&shape[a + 1..]));
        if n == 0 && numel(&shape[..a]) * inner > 0 {
            return Err(Error::invalid(format!("ArgMax/ArgMin over axis {a} of extent 0 has no answer")));
        }
        let mut out_shape = shape.to_vec();
        if self.keepdims {
            out_shape[a] = 1;
        } else {
            out_shape.remove(a);
        }
        let xs = x.as_slice::<T>()?;
        let (max, last) = (self.max, self.last);
        // `better(new, best)`: strictly better, or equal when the last index is wanted.
        let better = move |v: T::A, b: T::A| match (max, last) {
            (true, false) => v > b,
            (true, true) => v >= b,
            (false, false) => v < b,
            (false, true) => v <= b,
        };
        Ok(Tensor::build::<i64>(&out_shape, |out| {
            let block = n * inner;
            for_rows(xs, block, out, inner, |_, xb, ob| {
                let mut best: Vec<T::A> = xb.iter().take(inner).map(|v| v.load()).collect();
                ob.fill(0);
                for (r, xr) in xb.chunks_exact(inner).enumerate().skip(1) {
                    for ((b, o), v) in best.iter_mut().zip(ob.iter_mut()).zip(xr) {
                        let v = v.load();
                        if better(v, *b) {
                            *b = v;
                            *o = r as i64;
                        }
                    }
                }
            });
        }))
    }
}
