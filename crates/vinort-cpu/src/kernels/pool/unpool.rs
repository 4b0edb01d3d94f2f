//! [MaxUnpool](https://onnx.ai/onnx/operators/onnx__MaxUnpool.html), opset 9–latest, any
//! element type: scatters pooled values back to the positions MaxPool's `Indices` recorded.
//!
//! Indices are flat positions in the whole output, so any element may land in any plane. What
//! MaxPool writes keeps each value in its own (image, channel) plane: when every index does
//! (checked first, in parallel), the planes scatter in parallel, each in element order, which
//! is the serial order within a plane, so duplicates resolve the same way. Otherwise one
//! serial pass in element order, the last write to a position winning.

use std::borrow::Cow;

use rayon::prelude::*;
use vinort_ir::{DType, Error, Result, Tensor, Value};

use crate::kernel::{FnKernel, Kernel, NodeInfo, Registry, index_below, opt_tensor_in, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "MaxUnpool", maxunpool_factory);
}

fn maxunpool_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let kernel: Vec<i64> = n.req_attr("kernel_shape")?;
    let k = kernel.len();
    let strides: Vec<i64> = n.attr_or("strides", vec![1; k])?;
    let pads: Vec<i64> = n.attr_or("pads", vec![0; 2 * k])?;
    if strides.len() != k || pads.len() != 2 * k || kernel.iter().chain(&strides).chain(&pads).any(|v| *v < 0) {
        return Err(n.error("kernel_shape, strides and pads do not agree"));
    }
    Ok(Box::new(FnKernel(move |inputs: &[Option<&Value>]| {
        let x = tensor_in(inputs, 0)?;
        let it = tensor_in(inputs, 1)?;
        let idx: Cow<'_, [i64]> = match it.as_slice::<i64>() {
            Ok(v) if it.dtype() == DType::I64 => Cow::Borrowed(v),
            _ => Cow::Owned(it.to_i64_vec()?),
        };
        let s = x.shape();
        if s.len() != k + 2 || idx.len() != x.len() {
            return Err(Error::invalid(format!("MaxUnpool input shape {s:?} does not fit the kernel and indices")));
        }
        let mut inferred: vinort_ir::Shape = smallvec::smallvec![s[0], s[1]];
        for d in 0..k {
            let v = (s[d + 2] as i64 - 1) * strides[d] - pads[d] - pads[k + d] + kernel[d];
            inferred.push(usize::try_from(v).map_err(|_| Error::invalid("MaxUnpool output extent is negative"))?);
        }
        let shape = match opt_tensor_in(inputs, 2)? {
            Some(t) => t
                .i64s()?
                .iter()
                .map(|v| usize::try_from(*v).map_err(|_| Error::invalid("negative output_shape")))
                .collect::<Result<vinort_ir::Shape>>()?,
            None => inferred.clone(),
        };
        if shape.len() != inferred.len() || shape.iter().zip(&inferred).any(|(a, b)| a < b) {
            return Err(Error::invalid(format!("output_shape {shape:?} is smaller than {inferred:?}")));
        }
        let total: usize = inferred.iter().product();
        // Indices address the inferred shape, which sits at the origin of the output.
        let positions = |i: i64| -> Result<usize> {
            index_below(i, total).ok_or_else(|| Error::invalid(format!("MaxUnpool index {i} is out of range")))
        };
        let y = if shape == inferred {
            let (plane_in, plane_out) = (s[2..].iter().product::<usize>(), inferred[2..].iter().product::<usize>());
            let own_planes = plane_in > 0
                && idx
                    .par_chunks(plane_in)
                    .enumerate()
                    .try_fold(
                        || true,
                        |own, (p, chunk)| -> Result<bool> {
                            let mut own = own;
                            for &i in chunk {
                                own &= positions(i)? / plane_out.max(1) == p;
                            }
                            Ok(own)
                        },
                    )
                    .try_reduce(|| true, |a, b| Ok(a && b))?;
            scatter(x, &idx, &shape, own_planes.then_some((plane_in, plane_out)), |i| i as usize)?
        } else {
            for &i in idx.iter() {
                positions(i)?;
            }
            let ost = vinort_ir::tensor::strides_of(&shape);
            let ist = vinort_ir::tensor::strides_of(&inferred);
            scatter(x, &idx, &shape, None, |i| {
                let (mut rem, mut off) = (i as usize, 0);
                for (a, b) in ist.iter().zip(ost.iter()) {
                    off += (rem / a) * b;
                    rem %= a;
                }
                off
            })?
        };
        Ok(smallvec::smallvec![Value::from(y)])
    })))
}

/// The output of `shape` (zeros) with `x`'s element `e` written at `at(idx[e])`, every index
/// already checked to be in range. With `planes` = (elements per input plane, per output
/// plane), every index is known to stay in its own plane and the planes run in parallel.
fn scatter(
    x: &Tensor,
    idx: &[i64],
    shape: &[usize],
    planes: Option<(usize, usize)>,
    at: impl Fn(i64) -> usize + Sync,
) -> Result<Tensor> {
    fn typed<T: Copy + Send + Sync>(
        out: &mut [T],
        x: &[T],
        idx: &[i64],
        planes: Option<(usize, usize)>,
        at: &(impl Fn(i64) -> usize + Sync),
    ) {
        match planes {
            Some((pi, po)) if po > 0 => {
                out.par_chunks_mut(po).zip(x.par_chunks(pi).zip(idx.par_chunks(pi))).enumerate().for_each(
                    |(p, (o, (xs, is)))| {
                        for (&v, &i) in xs.iter().zip(is) {
                            o[at(i) - p * po] = v;
                        }
                    },
                )
            }
            _ => {
                for (&v, &i) in x.iter().zip(idx) {
                    out[at(i)] = v;
                }
            }
        }
    }
    let xb = x.as_bytes();
    let es = x.dtype().size();
    Tensor::build_raw(x.dtype(), shape, |out| {
        let done = match es {
            4 => bytemuck::try_cast_slice::<u8, u32>(xb)
                .ok()
                .zip(bytemuck::try_cast_slice_mut::<u8, u32>(out).ok())
                .map(|(xs, o)| typed(o, xs, idx, planes, &at)),
            8 => bytemuck::try_cast_slice::<u8, u64>(xb)
                .ok()
                .zip(bytemuck::try_cast_slice_mut::<u8, u64>(out).ok())
                .map(|(xs, o)| typed(o, xs, idx, planes, &at)),
            2 => bytemuck::try_cast_slice::<u8, u16>(xb)
                .ok()
                .zip(bytemuck::try_cast_slice_mut::<u8, u16>(out).ok())
                .map(|(xs, o)| typed(o, xs, idx, planes, &at)),
            1 => {
                typed(out, xb, idx, planes, &at);
                Some(())
            }
            _ => None,
        };
        if done.is_none() {
            // A misaligned input or an odd element size: element by element, as bytes.
            for (e, &i) in idx.iter().enumerate() {
                let o = at(i);
                out[o * es..(o + 1) * es].copy_from_slice(&xb[e * es..(e + 1) * es]);
            }
        }
    })
}
