//! [QLinearMatMul](https://onnx.ai/onnx/operators/onnx__QLinearMatMul.html) (10, 21) and
//! [MatMulInteger](https://onnx.ai/onnx/operators/onnx__MatMulInteger.html) (10).
//!
//! Both follow numpy.matmul (1-D promotion, broadcast batch axes). Integer operands are
//! shifted by their zero points and accumulated in i32 (wrapping, as the spec allows);
//! float8 operands of QLinearMatMul (opset 21) are decoded and accumulated in f32. Scales and
//! zero points broadcast numpy-style against their operand (per tensor, per row `[.., M, 1]`,
//! per column `[.., 1, N]`). The requantization multiplier `a_scale * b_scale / y_scale` is
//! computed in the scales' type; the product with the accumulator is in f64, then rounded half
//! to even and saturated.

use rayon::prelude::*;
use vinort_ir::{DType, Error, Result, Tensor, Value};

use super::minifloat;
use super::{expand, int_range, load_f32, load_i32, round_to, store_int};
use crate::kernel::{FnKernel, Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in};
use crate::numeric::Numeric;
use crate::par;

pub(crate) fn register(r: &mut Registry) {
    r.op("", "QLinearMatMul", qlinear_factory);
    r.op("", "MatMulInteger", integer_factory);
}

/// numpy.matmul of `a` (shape `ash`) and `b` (shape `bsh`): the output shape and elements.
/// `T` is the accumulator: i32 (wrapping) or f32.
pub(crate) fn matmul<T: Numeric>(a: &[T], ash: &[usize], b: &[T], bsh: &[usize]) -> Result<(Vec<usize>, Vec<T>)> {
    if ash.is_empty() || bsh.is_empty() {
        return Err(Error::invalid("matmul operands must have rank 1 or more"));
    }
    let a2: Vec<usize> = if ash.len() == 1 { vec![1, ash[0]] } else { ash.to_vec() };
    let b2: Vec<usize> = if bsh.len() == 1 { vec![bsh[0], 1] } else { bsh.to_vec() };
    let (m, k) = (a2[a2.len() - 2], a2[a2.len() - 1]);
    let (k2, n) = (b2[b2.len() - 2], b2[b2.len() - 1]);
    if k != k2 {
        return Err(Error::invalid(format!("matmul inner extents differ: {ash:?} x {bsh:?}")));
    }
    let (ab, bb) = (&a2[..a2.len() - 2], &b2[..b2.len() - 2]);
    let rank = ab.len().max(bb.len());
    let pad = |s: &[usize]| -> Vec<usize> { std::iter::repeat_n(1, rank - s.len()).chain(s.iter().copied()).collect() };
    let (pa, pb) = (pad(ab), pad(bb));
    let mut batch = Vec::with_capacity(rank);
    for (x, y) in pa.iter().zip(&pb) {
        batch.push(match (*x, *y) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return Err(Error::invalid(format!("matmul batch axes do not broadcast: {ash:?} x {bsh:?}"))),
        });
    }
    let nb: usize = batch.iter().product();
    // Batch offsets (in matrices) of a and b for each output batch.
    let offsets = |p: &[usize]| -> Vec<usize> {
        let mut v = Vec::with_capacity(nb);
        for bi in 0..nb {
            let (mut rem, mut off, mut stride) = (bi, 0usize, 1usize);
            for d in (0..rank).rev() {
                let idx = rem % batch[d];
                rem /= batch[d];
                if p[d] != 1 {
                    off += idx * stride;
                }
                stride *= p[d];
            }
            v.push(off);
        }
        v
    };
    let (oa, ob) = (offsets(&pa), offsets(&pb));
    let mut out = vec![T::default(); nb * m * n];
    let row = |r: usize, o: &mut [T]| {
        let (bi, i) = (r / m.max(1), r % m.max(1));
        let arow = &a[(oa[bi] * m + i) * k..][..k];
        let bm = &b[ob[bi] * k * n..][..k * n];
        for (p, &av) in arow.iter().enumerate() {
            for (o, &bv) in o.iter_mut().zip(&bm[p * n..(p + 1) * n]) {
                *o = o.wrap_add(av.wrap_mul(bv));
            }
        }
    };
    if n > 0 {
        if !par::worth(out.len() * k, par::ELEMENTS) {
            out.chunks_mut(n).enumerate().for_each(|(r, o)| row(r, o));
        } else {
            out.par_chunks_mut(n).enumerate().for_each(|(r, o)| row(r, o));
        }
    }
    let mut shape = batch;
    if ash.len() > 1 {
        shape.push(m);
    }
    if bsh.len() > 1 {
        shape.push(n);
    }
    Ok((shape, out))
}

/// `x - zp` in i32, with `zp` broadcast to `x`'s shape (absent: 0).
pub(crate) fn shifted_i32(x: &Tensor, zp: Option<(&Tensor, Vec<usize>)>) -> Result<Vec<i32>> {
    let mut v = load_i32(x)?;
    if let Some((z, zshape)) = zp {
        let zs = expand(&load_i32(z)?, &zshape, x.shape())?;
        for (v, z) in v.iter_mut().zip(zs) {
            *v = v.wrapping_sub(z);
        }
    }
    Ok(v)
}

/// `x - zp` in f32 for float8 operands.
fn shifted_f32(x: &Tensor, zp: Option<&Tensor>) -> Result<Vec<f32>> {
    let mut v = load_f32(x)?;
    if let Some(z) = zp {
        let zs = expand(&load_f32(z)?, z.shape(), x.shape())?;
        for (v, z) in v.iter_mut().zip(zs) {
            *v -= z;
        }
    }
    Ok(v)
}

fn is_int8(d: DType) -> bool {
    matches!(d, DType::I8 | DType::U8)
}

fn is_f8(d: DType) -> bool {
    matches!(d, DType::F8E4M3FN | DType::F8E4M3FNUZ | DType::F8E5M2 | DType::F8E5M2FNUZ)
}

fn qlinear_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    for i in [0, 3] {
        if let Some(d) = info.input_dtype(i)
            && !is_int8(d)
            && (info.node.opset < 21 || !is_f8(d))
        {
            return Err(Error::unsupported(format!("QLinearMatMul input of type {d}")));
        }
    }
    Ok(Box::new(FnKernel(|inputs: &[Option<&Value>]| {
        let a = tensor_in(inputs, 0)?;
        let (a_s, a_zp) = (tensor_in(inputs, 1)?, opt_tensor_in(inputs, 2)?);
        let b = tensor_in(inputs, 3)?;
        let (b_s, b_zp) = (tensor_in(inputs, 4)?, opt_tensor_in(inputs, 5)?);
        let (y_s, y_zp) = (tensor_in(inputs, 6)?, opt_tensor_in(inputs, 7)?);
        let out_dtype = y_zp.map_or(a.dtype(), Tensor::dtype);
        // The product as f64, in the output shape.
        let (shape, acc): (Vec<usize>, Vec<f64>) = if is_int8(a.dtype()) && is_int8(b.dtype()) {
            let av = shifted_i32(a, a_zp.map(|z| (z, z.shape().to_vec())))?;
            let bv = shifted_i32(b, b_zp.map(|z| (z, z.shape().to_vec())))?;
            let (s, c) = matmul(&av, a.shape(), &bv, b.shape())?;
            (s, c.into_iter().map(f64::from).collect())
        } else {
            let av = shifted_f32(a, a_zp)?;
            let bv = shifted_f32(b, b_zp)?;
            let (s, c) = matmul(&av, a.shape(), &bv, b.shape())?;
            (s, c.into_iter().map(f64::from).collect())
        };
        let sd = a_s.dtype();
        let as_ = expand(&load_f32(a_s)?, a_s.shape(), &shape)?;
        let bs = expand(&load_f32(b_s)?, b_s.shape(), &shape)?;
        let ys = expand(&load_f32(y_s)?, y_s.shape(), &shape)?;
        let mult = |i: usize| round_to(sd, round_to(sd, as_[i] * bs[i]) / ys[i]) as f64;
        if let Some((lo, hi)) = int_range(out_dtype).filter(|_| is_int8(out_dtype)) {
            let zs = match y_zp {
                Some(z) => expand(&load_i32(z)?, z.shape(), &shape)?,
                None => vec![0; acc.len()],
            };
            let q: Vec<i32> = acc
                .iter()
                .enumerate()
                .map(|(i, c)| (c * mult(i) + zs[i] as f64).round_ties_even().clamp(lo as f64, hi as f64) as i32)
                .collect();
            return Ok(smallvec::smallvec![store_int(out_dtype, &shape, &q)?.into()]);
        }
        let Some(fmt) = minifloat::format_of(out_dtype) else {
            return Err(Error::unsupported(format!("QLinearMatMul output of type {out_dtype}")));
        };
        let zs = match y_zp {
            Some(z) => expand(&load_f32(z)?, z.shape(), &shape)?,
            None => vec![0.0; acc.len()],
        };
        let q: Vec<u8> = acc.iter().enumerate().map(|(i, c)| fmt.encode((c * mult(i)) as f32 + zs[i], true)).collect();
        Ok(smallvec::smallvec![Tensor::build_as::<u8>(out_dtype, &shape, |o| o.copy_from_slice(&q))?.into()])
    })))
}

fn integer_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    super::packed::packed_factory(info, generic_integer_factory(info)?, None)
}

/// MatMulInteger with a constant B packed at build time (when B is one) and the optimizer's
/// float tail `epi`.
pub(crate) fn fused_integer_factory(
    info: &NodeInfo<'_>,
    epi: crate::kernels::epilogue::Epilogue,
) -> Result<Box<dyn Kernel>> {
    super::packed::packed_factory(info, generic_integer_factory(info)?, Some(epi))
}

fn generic_integer_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    for i in [0, 1] {
        if let Some(d) = info.input_dtype(i)
            && !is_int8(d)
        {
            return Err(Error::unsupported(format!("MatMulInteger input of type {d}")));
        }
    }
    Ok(Box::new(FnKernel(|inputs: &[Option<&Value>]| {
        let a = tensor_in(inputs, 0)?;
        let b = tensor_in(inputs, 1)?;
        let (a_zp, b_zp) = (opt_tensor_in(inputs, 2)?, opt_tensor_in(inputs, 3)?);
        // A 1-D a_zero_point of M elements is per row of A: shape [M, 1].
        let a_zp = a_zp.map(|z| {
            let r = a.rank();
            if z.rank() == 1 && z.len() > 1 && r >= 2 && z.len() == a.shape()[r - 2] {
                (z, vec![z.len(), 1])
            } else {
                (z, z.shape().to_vec())
            }
        });
        let av = shifted_i32(a, a_zp)?;
        let bv = shifted_i32(b, b_zp.map(|z| (z, z.shape().to_vec())))?;
        let (shape, c) = matmul(&av, a.shape(), &bv, b.shape())?;
        Ok(smallvec::smallvec![Tensor::from_vec(&shape, c)?.into()])
    })))
}
