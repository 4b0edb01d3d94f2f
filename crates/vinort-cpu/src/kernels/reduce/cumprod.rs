//! [CumProd](https://onnx.ai/onnx/operators/onnx__CumProd.html), opset 26–latest: the running
//! product along an axis (`exclusive`, `reverse`), for f32, f64, f16 and bf16 (computed in f32)
//! and every integer type (integers wrap).

use vinort_ir::{Error, Result, Tensor, Value};

use super::elem::{Acc, RElem};
use crate::kernel::{FnKernel, Kernel, NodeInfo, Registry, norm_axis, tensor_in};
use crate::kernels::support::split;

pub(crate) fn register(r: &mut Registry) {
    r.op("", "CumProd", cumprod_factory);
}

fn cumprod_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let exclusive = info.node.attr_or::<bool>("exclusive", false)?;
    let reverse = info.node.attr_or::<bool>("reverse", false)?;
    Ok(Box::new(FnKernel(move |inputs: &[Option<&Value>]| {
        let x = tensor_in(inputs, 0)?;
        let axis = match tensor_in(inputs, 1)?.to_i64_vec()?.as_slice() {
            [a] => norm_axis(*a, x.rank())?,
            _ => return Err(Error::invalid("CumProd axis must be a scalar")),
        };
        let y = crate::kernel::with_numeric!(x.dtype(), |T| cumprod::<T>(x, axis, exclusive, reverse), other => {
            Err(Error::unsupported(format!("element type {other}")))
        })?;
        Ok(smallvec::smallvec![Value::from(y)])
    })))
}

fn cumprod<T: RElem>(x: &Tensor, axis: usize, exclusive: bool, reverse: bool) -> Result<Tensor> {
    let src = x.as_slice::<T>()?;
    let (outer, n, inner) = split(x.shape(), axis);
    Ok(Tensor::build::<T>(x.shape(), |out| {
        for o in 0..outer {
            for i in 0..inner {
                let mut acc = <T::A as Acc>::ONE;
                for s in 0..n {
                    let k = if reverse { n - 1 - s } else { s };
                    let at = (o * n + k) * inner + i;
                    if exclusive {
                        out[at] = T::store(acc);
                        acc = acc.mul(src[at].load());
                    } else {
                        acc = acc.mul(src[at].load());
                        out[at] = T::store(acc);
                    }
                }
            }
        }
    }))
}
