//! Optional ops (opset 15 on):
//! [Optional](https://onnx.ai/onnx/operators/onnx__Optional.html),
//! [OptionalHasElement](https://onnx.ai/onnx/operators/onnx__OptionalHasElement.html),
//! [OptionalGetElement](https://onnx.ai/onnx/operators/onnx__OptionalGetElement.html).
//!
//! From opset 18, OptionalHasElement also accepts a missing input (false) and a plain tensor or
//! sequence (true), and OptionalGetElement passes a plain tensor or sequence through; the
//! kernels accept these forms at every opset.

use vinort_ir::{Error, Result, Tensor, Value, ValueType};

use super::kernel;
use crate::kernel::{Kernel, NodeInfo, Registry};

pub(super) fn register(r: &mut Registry) {
    r.op("", "Optional", optional);
    r.op("", "OptionalHasElement", optional_has_element);
    r.op("", "OptionalGetElement", optional_get_element);
}

fn optional(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let declared = info.node.attr::<ValueType>("type")?;
    let has_input = info.node.inputs.first().is_some_and(Option::is_some);
    // The element type of an empty optional: the attribute, else what inference says.
    let elem = match (declared, info.outputs.first()) {
        (Some(t), _) => t,
        (None, Some(ValueType::Optional(t))) => (**t).clone(),
        (None, _) if has_input => ValueType::Unknown,
        (None, _) => return Err(info.node.error("an Optional without input needs the 'type' attribute")),
    };
    Ok(kernel(move |inputs| {
        Ok(smallvec::smallvec![match inputs.first().copied().flatten() {
            Some(v @ (Value::Tensor(_) | Value::Sequence(_))) => {
                Value::Optional(Some(Box::new(v.clone())), v.value_type())
            }
            Some(Value::Optional(..)) => return Err(Error::invalid("an optional cannot hold an optional")),
            None => Value::Optional(None, elem.clone()),
        }])
    }))
}

fn optional_has_element(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(kernel(|inputs| {
        let has = match inputs.first().copied().flatten() {
            None | Some(Value::Optional(None, _)) => false,
            Some(_) => true,
        };
        Ok(smallvec::smallvec![Value::Tensor(Tensor::scalar(has))])
    }))
}

fn optional_get_element(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(kernel(|inputs| match inputs.first().copied().flatten() {
        Some(Value::Optional(Some(v), _)) => Ok(smallvec::smallvec![(**v).clone()]),
        Some(Value::Optional(None, _)) => Err(Error::invalid("the optional input is empty")),
        Some(v) => Ok(smallvec::smallvec![v.clone()]),
        None => Err(Error::invalid("input 0 is required but missing")),
    }))
}
