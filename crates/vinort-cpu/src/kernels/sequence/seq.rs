//! Sequence ops (opset 11 on):
//! [SequenceEmpty](https://onnx.ai/onnx/operators/onnx__SequenceEmpty.html),
//! [SequenceConstruct](https://onnx.ai/onnx/operators/onnx__SequenceConstruct.html),
//! [SequenceInsert](https://onnx.ai/onnx/operators/onnx__SequenceInsert.html),
//! [SequenceErase](https://onnx.ai/onnx/operators/onnx__SequenceErase.html),
//! [SequenceAt](https://onnx.ai/onnx/operators/onnx__SequenceAt.html),
//! [SequenceLength](https://onnx.ai/onnx/operators/onnx__SequenceLength.html),
//! [ConcatFromSequence](https://onnx.ai/onnx/operators/onnx__ConcatFromSequence.html),
//! [SplitToSequence](https://onnx.ai/onnx/operators/onnx__SplitToSequence.html).
//!
//! Sequences hold tensors by reference-counted storage, so building a sequence or reading an
//! element never copies tensor data.

use vinort_ir::{DType, Error, Result, Sequence, Tensor, Value};

use super::data;
use super::kernel;
use crate::kernel::{Kernel, NodeInfo, Registry, norm_axis, opt_tensor_in, tensor_in};

pub(super) fn register(r: &mut Registry) {
    r.op("", "SequenceEmpty", sequence_empty);
    r.op("", "SequenceConstruct", sequence_construct);
    r.op("", "SequenceInsert", sequence_insert);
    r.op("", "SequenceErase", sequence_erase);
    r.op("", "SequenceAt", sequence_at);
    r.op("", "SequenceLength", sequence_length);
    r.op("", "ConcatFromSequence", concat_from_sequence);
    r.op("", "SplitToSequence", split_to_sequence);
}

/// Input `i` as a sequence; an error when missing or of another kind.
pub(super) fn seq_in<'a>(inputs: &[Option<&'a Value>], i: usize) -> Result<&'a Sequence> {
    match inputs.get(i).copied().flatten() {
        Some(v) => v.as_sequence(),
        None => Err(Error::invalid(format!("input {i} is required but missing"))),
    }
}

/// A position input: one integer element.
fn position(t: &Tensor) -> Result<i64> {
    match t.to_i64_vec()?.as_slice() {
        [p] => Ok(*p),
        other => Err(Error::invalid(format!("position must hold one element, it has {}", other.len()))),
    }
}

/// Resolves a possibly negative position against `len`, accepting `-len..len + extra`.
fn resolve(pos: i64, len: usize, extra: usize) -> Result<usize> {
    let n = len as i64;
    if pos < -n || pos >= n + extra as i64 {
        return Err(Error::invalid(format!(
            "position {pos} is out of range [{}, {}] for a sequence of {len}",
            -n,
            n + extra as i64 - 1
        )));
    }
    Ok(if pos < 0 { (pos + n) as usize } else { pos as usize })
}

fn sequence_empty(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let code = info.node.attr_or::<i64>("dtype", DType::F32.onnx_code() as i64)?;
    let dtype = i32::try_from(code)
        .ok()
        .and_then(DType::from_onnx)
        .ok_or_else(|| info.node.error(format!("dtype {code} is no tensor element type")))?;
    Ok(kernel(move |_| Ok(smallvec::smallvec![Value::Sequence(Sequence { dtype, items: vec![] })])))
}

fn sequence_construct(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(kernel(|inputs| {
        let mut items = Vec::with_capacity(inputs.len());
        for i in 0..inputs.len() {
            items.push(tensor_in(inputs, i)?.clone());
        }
        let dtype = items.first().map(Tensor::dtype).ok_or_else(|| Error::invalid("SequenceConstruct needs inputs"))?;
        if let Some(t) = items.iter().find(|t| t.dtype() != dtype) {
            return Err(Error::invalid(format!("sequence elements must share one type: {dtype} and {}", t.dtype())));
        }
        Ok(smallvec::smallvec![Value::Sequence(Sequence { dtype, items })])
    }))
}

fn sequence_insert(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(kernel(|inputs| {
        let s = seq_in(inputs, 0)?;
        let t = tensor_in(inputs, 1)?;
        if t.dtype() != s.dtype {
            return Err(Error::invalid(format!("cannot insert a {} tensor into a sequence of {}", t.dtype(), s.dtype)));
        }
        let at = match opt_tensor_in(inputs, 2)? {
            Some(p) => resolve(position(p)?, s.items.len(), 1)?,
            None => s.items.len(),
        };
        let mut items = s.items.clone();
        items.insert(at, t.clone());
        Ok(smallvec::smallvec![Value::Sequence(Sequence { dtype: s.dtype, items })])
    }))
}

fn sequence_erase(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(kernel(|inputs| {
        let s = seq_in(inputs, 0)?;
        let at = match opt_tensor_in(inputs, 1)? {
            Some(p) => resolve(position(p)?, s.items.len(), 0)?,
            None if s.items.is_empty() => return Err(Error::invalid("cannot erase from an empty sequence")),
            None => s.items.len() - 1,
        };
        let mut items = s.items.clone();
        items.remove(at);
        Ok(smallvec::smallvec![Value::Sequence(Sequence { dtype: s.dtype, items })])
    }))
}

fn sequence_at(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(kernel(|inputs| {
        let s = seq_in(inputs, 0)?;
        let at = resolve(position(tensor_in(inputs, 1)?)?, s.items.len(), 0)?;
        Ok(smallvec::smallvec![Value::Tensor(s.items[at].clone())])
    }))
}

fn sequence_length(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(kernel(|inputs| Ok(smallvec::smallvec![Value::Tensor(Tensor::scalar(seq_in(inputs, 0)?.items.len() as i64))])))
}

fn concat_from_sequence(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let axis = info.node.req_attr::<i64>("axis")?;
    let new_axis = info.node.attr_or::<bool>("new_axis", false)?;
    Ok(kernel(move |inputs| {
        let s = seq_in(inputs, 0)?;
        let first = s.items.first().ok_or_else(|| Error::invalid("cannot concatenate an empty sequence"))?;
        let refs: Vec<&Tensor> = s.items.iter().collect();
        let out = if new_axis {
            data::stack(&refs, norm_axis(axis, first.rank() + 1)?)?
        } else {
            if first.rank() == 0 {
                return Err(Error::invalid("cannot concatenate scalars without new_axis"));
            }
            data::concat(&refs, norm_axis(axis, first.rank())?)?
        };
        Ok(smallvec::smallvec![Value::Tensor(out)])
    }))
}

fn split_to_sequence(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let axis = info.node.attr_or::<i64>("axis", 0)?;
    let keepdims = info.node.attr_or::<bool>("keepdims", true)?;
    Ok(kernel(move |inputs| {
        let x = tensor_in(inputs, 0)?;
        let ax = norm_axis(axis, x.rank())?;
        let dim = x.shape()[ax];
        let split = opt_tensor_in(inputs, 1)?;
        let (lengths, squeeze) = match split {
            None => (vec![1; dim], !keepdims),
            Some(s) => {
                let v = s.to_i64_vec()?;
                if v.iter().any(|l| *l < 0) {
                    return Err(Error::invalid(format!("split lengths must not be negative: {v:?}")));
                }
                if s.rank() == 0 {
                    let chunk = v[0] as usize;
                    if chunk == 0 && dim > 0 {
                        return Err(Error::invalid("split must be positive"));
                    }
                    let mut l = vec![chunk; dim.checked_div(chunk).unwrap_or(0)];
                    if chunk > 0 && dim % chunk != 0 {
                        l.push(dim % chunk);
                    }
                    (l, false)
                } else if s.rank() == 1 {
                    let l: Vec<usize> = v.iter().map(|l| *l as usize).collect();
                    if l.iter().sum::<usize>() != dim {
                        return Err(Error::invalid(format!(
                            "split lengths {v:?} do not add up to the extent {dim} of axis {ax}"
                        )));
                    }
                    (l, false)
                } else {
                    return Err(Error::invalid(format!("split must be a scalar or 1-D, it has rank {}", s.rank())));
                }
            }
        };
        let mut items = Vec::with_capacity(lengths.len());
        let mut start = 0;
        for len in lengths {
            let part = if squeeze { data::take(x, ax, start)? } else { data::slice_axis(x, ax, start, len)? };
            items.push(part);
            start += len;
        }
        Ok(smallvec::smallvec![Value::Sequence(Sequence { dtype: x.dtype(), items })])
    }))
}
