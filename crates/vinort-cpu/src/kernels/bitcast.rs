//! [BitCast](https://onnx.ai/onnx/operators/onnx__BitCast.html), opset 26–latest: reinterprets
//! the bytes of a tensor as another element type of the same bit width.

use vinort_ir::{DType, Error, Result, Tensor, Value};

use crate::kernel::{FnKernel, Kernel, NodeInfo, Registry, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "BitCast", bitcast_factory);
}

/// True when a type is stored one element per `size()` bytes with no unused bits.
fn whole_bytes(d: DType) -> bool {
    d != DType::String && d.packed_bits() == 8 * d.size()
}

fn bitcast_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let code = info.node.req_attr::<i64>("to")?;
    let to = i32::try_from(code)
        .ok()
        .and_then(DType::from_onnx)
        .ok_or_else(|| info.node.error(format!("unknown element type {code}")))?;
    if !whole_bytes(to) {
        return Err(Error::unsupported(format!("BitCast to {to}")));
    }
    Ok(Box::new(FnKernel(move |inputs: &[Option<&Value>]| {
        let x = tensor_in(inputs, 0)?;
        if !whole_bytes(x.dtype()) || x.dtype().size() != to.size() {
            return Err(Error::invalid(format!("BitCast from {} to {to}: bit widths differ", x.dtype())));
        }
        let y = Tensor::build_raw(to, x.shape(), |b| b.copy_from_slice(x.as_bytes()))?;
        Ok(smallvec::smallvec![Value::from(y)])
    })))
}
