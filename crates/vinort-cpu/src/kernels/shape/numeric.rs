//! Kernels of this family that compute on element values, numeric types only:
//! [Range](https://onnx.ai/onnx/operators/onnx__Range.html) 11– (f32, f64, f16, bf16, i16, i32,
//! i64), [CumSum](https://onnx.ai/onnx/operators/onnx__CumSum.html) 11– (exclusive, reverse),
//! [TopK](https://onnx.ai/onnx/operators/onnx__TopK.html) 1– (`k` input from 10,
//! `largest`/`sorted` from 11).

use std::cmp::Ordering;

use vinort_ir::{DType, Error, Result, Tensor};

use super::copy::checked_numel;
use super::{kernel, scalar_int};
use crate::kernel::{Kernel, NodeInfo, Registry, norm_axis, tensor_in, with_numeric};
use crate::numeric::{Float, Int, Numeric, Zero, unsupported_dtype};

pub(super) fn register(r: &mut Registry) {
    r.op("", "Range", range);
    r.op("", "CumSum", cum_sum);
    r.op("", "TopK", top_k);
}

fn one<T: Numeric>(t: &Tensor, what: &str) -> Result<T> {
    match t.as_slice::<T>()? {
        [v] => Ok(*v),
        other => Err(Error::invalid(format!("Range {what} must be a scalar, it holds {}", other.len()))),
    }
}

/// `ceil((limit - start) / delta)` clamped at 0, exactly for integers.
fn int_count(start: i128, limit: i128, delta: i128) -> Result<usize> {
    if delta == 0 {
        return Err(Error::invalid("Range delta must not be 0"));
    }
    let (span, step) = if delta > 0 { (limit - start, delta) } else { (start - limit, -delta) };
    let n = if span <= 0 { 0 } else { (span + step - 1) / step };
    usize::try_from(n).map_err(|_| Error::invalid("Range is too long"))
}

fn float_count(start: f64, limit: f64, delta: f64) -> Result<usize> {
    let n = ((limit - start) / delta).ceil();
    if n.is_nan() || n == f64::INFINITY {
        return Err(Error::invalid(format!("Range({start}, {limit}, {delta}) has no finite length")));
    }
    let n = n.max(0.0);
    if n > isize::MAX as f64 / 16.0 {
        return Err(Error::invalid("Range is too long"));
    }
    Ok(n as usize)
}

pub(super) fn range_tensor(start: &Tensor, limit: &Tensor, delta: &Tensor) -> Result<Tensor> {
    let dtype = start.dtype();
    for t in [limit, delta] {
        if t.dtype() != dtype {
            return Err(Error::DTypeMismatch { expected: dtype, found: t.dtype() });
        }
    }
    match dtype {
        DType::I16 | DType::I32 | DType::I64 => {
            with_numeric!(int dtype, |T| range_int::<T>(start, limit, delta), other => Err(Error::unsupported(format!("Range does not support {other}"))))
        }
        _ => with_numeric!(float dtype, |T| range_float::<T>(start, limit, delta), other => {
            Err(Error::unsupported(format!("Range does not support {other}")))
        }),
    }
}

fn range_int<T: Int>(start: &Tensor, limit: &Tensor, delta: &Tensor) -> Result<Tensor> {
    let wide = |t: &Tensor, what: &str| -> Result<i128> { Ok(one::<T>(t, what)?.to_i128().unwrap_or_default()) };
    let (s, l, d) = (wide(start, "start")?, wide(limit, "limit")?, wide(delta, "delta")?);
    let n = int_count(s, l, d)?;
    checked_numel(&[n])?;
    // Every element lies between start and limit, so it fits the type.
    Ok(Tensor::build::<T>(&[n], |o| {
        o.iter_mut().enumerate().for_each(|(i, v)| *v = T::from_i128(s + i as i128 * d).unwrap_or_else(T::zero))
    }))
}

/// Floats (and f16/bf16, whose stash type is at least f32) are computed as `start + i * delta`
/// in f64, then rounded once to the output type.
fn range_float<T: Float>(start: &Tensor, limit: &Tensor, delta: &Tensor) -> Result<Tensor> {
    let (s, l, d) =
        (one::<T>(start, "start")?.as_f64(), one::<T>(limit, "limit")?.as_f64(), one::<T>(delta, "delta")?.as_f64());
    let n = float_count(s, l, d)?;
    Ok(Tensor::build::<T>(&[n], |o| o.iter_mut().enumerate().for_each(|(i, v)| *v = T::from_f64_as(s + i as f64 * d))))
}

fn range(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(kernel(|inputs| {
        Ok(smallvec::smallvec![
            range_tensor(tensor_in(inputs, 0)?, tensor_in(inputs, 1)?, tensor_in(inputs, 2)?)?.into()
        ])
    }))
}

fn split_at_axis(shape: &[usize], a: usize) -> (usize, usize, usize) {
    (shape[..a].iter().product(), shape[a], shape[a + 1..].iter().product())
}

pub(super) fn cum_sum_tensor(x: &Tensor, axis: i64, exclusive: bool, reverse: bool) -> Result<Tensor> {
    let a = norm_axis(axis, x.rank())?;
    let (outer, d, inner) = split_at_axis(x.shape(), a);
    with_numeric!(x.dtype(), |T| {
        let src = x.as_slice::<T>()?;
        Ok(Tensor::build::<T>(x.shape(), |out| {
            for o in 0..outer {
                for i in 0..inner {
                    let mut acc = T::zero();
                    for step in 0..d {
                        let j = if reverse { d - 1 - step } else { step };
                        let at = (o * d + j) * inner + i;
                        if exclusive {
                            out[at] = acc;
                            acc = acc.wrap_add(src[at]);
                        } else {
                            acc = acc.wrap_add(src[at]);
                            out[at] = acc;
                        }
                    }
                }
            }
        }))
    }, other => Err(unsupported_dtype("CumSum", other)))
}

fn cum_sum(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let exclusive: bool = info.node.attr_or("exclusive", false)?;
    let reverse: bool = info.node.attr_or("reverse", false)?;
    Ok(kernel(move |inputs| {
        let axis = scalar_int(tensor_in(inputs, 1)?, "CumSum axis")?;
        Ok(smallvec::smallvec![cum_sum_tensor(tensor_in(inputs, 0)?, axis, exclusive, reverse)?.into()])
    }))
}

/// A total order with NaN above every number (numpy's sort order).
fn total<T: Numeric>(a: T, b: T) -> Ordering {
    match (a.is_nan_num(), b.is_nan_num()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

pub(super) fn top_k_tensors(x: &Tensor, k: i64, axis: i64, largest: bool) -> Result<(Tensor, Tensor)> {
    let a = norm_axis(axis, x.rank())?;
    let (outer, d, inner) = split_at_axis(x.shape(), a);
    let k = usize::try_from(k)
        .ok()
        .filter(|k| *k <= d)
        .ok_or_else(|| Error::invalid(format!("TopK k={k} is outside [0, {d}]")))?;
    let mut shape = x.shape().to_vec();
    shape[a] = k;
    checked_numel(&shape)?;
    // An empty tensor may still declare a huge axis: nothing is sorted, so no line is made.
    let d = if x.is_empty() { 0 } else { d };
    with_numeric!(x.dtype(), |T| {
        let src = x.as_slice::<T>()?;
        // Ties go to the lower index, as the spec requires, so the order is total.
        let order = |p: &(T, usize), q: &(T, usize)| {
            let by_value = if largest { total(q.0, p.0) } else { total(p.0, q.0) };
            by_value.then(p.1.cmp(&q.1))
        };
        let mut values = vec![T::zero(); outer * k * inner];
        let mut indices = vec![0i64; outer * k * inner];
        let mut line: Vec<(T, usize)> = Vec::with_capacity(d);
        for o in 0..outer {
            for i in 0..inner {
                line.clear();
                line.extend((0..d).map(|j| (src[(o * d + j) * inner + i], j)));
                if k > 0 && k < d {
                    line.select_nth_unstable_by(k - 1, order);
                }
                line.truncate(k);
                line.sort_unstable_by(order);
                for (j, (v, at)) in line.iter().enumerate() {
                    values[(o * k + j) * inner + i] = *v;
                    indices[(o * k + j) * inner + i] = *at as i64;
                }
            }
        }
        Ok((Tensor::from_vec(&shape, values)?, Tensor::from_vec(&shape, indices)?))
    }, other => Err(unsupported_dtype("TopK", other)))
}

fn top_k(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let axis: i64 = n.attr_or("axis", -1)?;
    let largest: bool = if n.opset >= 11 { n.attr_or("largest", true)? } else { true };
    // `sorted = 0` leaves the order unspecified; sorted output satisfies it too.
    let k_attr: Option<i64> = if n.opset < 10 { Some(n.req_attr("k")?) } else { None };
    Ok(kernel(move |inputs| {
        let k = match k_attr {
            Some(k) => k,
            None => scalar_int(tensor_in(inputs, 1)?, "TopK K")?,
        };
        let (v, i) = top_k_tensors(tensor_in(inputs, 0)?, k, axis, largest)?;
        Ok(smallvec::smallvec![v.into(), i.into()])
    }))
}
