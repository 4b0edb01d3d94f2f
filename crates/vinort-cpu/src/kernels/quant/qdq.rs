//! [QuantizeLinear](https://onnx.ai/onnx/operators/onnx__QuantizeLinear.html) and
//! [DequantizeLinear](https://onnx.ai/onnx/operators/onnx__DequantizeLinear.html), opsets 10–28.
//!
//! Scales may be per-tensor (one element), per-axis (1-D, the length of `axis`) or blocked
//! (`block_size` > 0: the input's shape with `ceil(D/B)` on `axis`). Quantization divides in f32
//! (or in the `precision` type, or in f16/bf16 when both `x` and the scale are that type, as
//! the reference implementation's type promotion does), rounds half to even and saturates to
//! the target's range; small-float targets round with [`super::minifloat`].

use rayon::prelude::*;
use vinort_ir::Values;
use vinort_ir::{DType, Error, Node, Result, RunContext, Tensor, Value};

use super::minifloat::{self, Format};
use super::{int_range, load_f32, load_i32, one_f32, one_i32, round, round_to, store_float, store_int};
use crate::kernel::{Kernel, NodeInfo, Registry, norm_axis, opt_tensor_in, tensors_in};
use crate::par;

pub(crate) fn register(r: &mut Registry) {
    r.op("", "QuantizeLinear", quantize_factory);
    r.op("", "DequantizeLinear", dequantize_factory);
}

/// How scale (and zero-point) elements map onto the input, as rows of `inner` elements: row
/// `r = o * d + i` (outer index `o`, index `i` on the quantization axis).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Granularity {
    /// One scale for everything.
    Tensor,
    /// Scale `i` for row `(o, i)`.
    Axis { d: usize, inner: usize },
    /// Scales `((o * s + i / b) * inner)..+inner` for row `(o, i)`.
    Block { d: usize, inner: usize, b: usize, s: usize },
}

impl Granularity {
    /// Classifies a scale of shape `scale` for an input of shape `x`.
    pub(crate) fn new(x: &[usize], scale: &[usize], axis: i64, block_size: i64) -> Result<Granularity> {
        let n: usize = scale.iter().product();
        if n == 1 && (block_size <= 0 || scale.len() <= 1) {
            return Ok(Granularity::Tensor);
        }
        let a = norm_axis(axis, x.len())?;
        let d = x[a];
        let inner: usize = x[a + 1..].iter().product();
        if block_size <= 0 {
            if scale.len() != 1 || scale[0] != d {
                return Err(Error::invalid(format!(
                    "per-axis scale must have shape [{d}] (axis {a} of {x:?}), got {scale:?}"
                )));
            }
            return Ok(Granularity::Axis { d, inner });
        }
        let b = block_size as usize;
        let ok = scale.len() == x.len()
            && scale.iter().zip(x).enumerate().all(|(i, (s, xd))| if i == a { true } else { s == xd });
        let s = scale.get(a).copied().unwrap_or(0);
        // The spec's accepted block sizes for s blocks: ceil(d/s) ..= ceil(d/(s-1)) - 1, i.e.
        // s blocks cover d with the last one non-empty.
        if !ok || s == 0 && d != 0 || s * b < d || (s > 0 && (s - 1) * b >= d && d > 0) {
            return Err(Error::invalid(format!(
                "blocked scale of shape {scale:?} does not fit input {x:?} with axis {a} and block_size {b}"
            )));
        }
        Ok(Granularity::Block { d, inner, b, s })
    }

    /// Calls `f(x_offset, out_row, param)` for every row of the input (in parallel when large),
    /// where the parameter of element `j` of the row is `param.at(j)`.
    pub(crate) fn for_rows<O: Send>(&self, out: &mut [O], f: impl Fn(usize, &mut [O], Param) + Sync) {
        let n = out.len();
        let (d, inner) = match *self {
            Granularity::Tensor => (1, n),
            Granularity::Axis { d, inner } | Granularity::Block { d, inner, .. } => (d, inner),
        };
        if inner == 0 || n == 0 {
            return;
        }
        let param = |r: usize| match *self {
            Granularity::Tensor => Param::One(0),
            Granularity::Axis { .. } => Param::One(r % d),
            Granularity::Block { b, s, .. } => Param::Run(((r / d) * s + (r % d) / b) * inner),
        };
        if !par::worth(n, par::ELEMENTS) || n == inner {
            for (r, row) in out.chunks_mut(inner).enumerate() {
                f(r * inner, row, param(r));
            }
        } else {
            out.par_chunks_mut(inner).enumerate().for_each(|(r, row)| f(r * inner, row, param(r)));
        }
    }
}

/// The parameter index for the elements of one row.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Param {
    /// Every element uses parameter `p`.
    One(usize),
    /// Element `j` uses parameter `p + j`.
    Run(usize),
}

impl Param {
    #[inline(always)]
    pub(crate) fn at(self, j: usize) -> usize {
        match self {
            Param::One(p) => p,
            Param::Run(p) => p + j,
        }
    }
}

/// Reads an optional dtype attribute (0 or absent means unset).
fn dtype_attr(node: &Node, name: &str) -> Result<Option<DType>> {
    match node.attr::<i64>(name)? {
        None | Some(0) => Ok(None),
        Some(c) => i32::try_from(c)
            .ok()
            .and_then(DType::from_onnx)
            .map(Some)
            .ok_or_else(|| node.error(format!("{name}={c} is not an ONNX element type"))),
    }
}

/// QuantizeLinear's parsed attributes.
pub(crate) struct Quantize {
    axis: i64,
    block_size: i64,
    saturate: bool,
    output_dtype: Option<DType>,
    precision: Option<DType>,
}

fn quantize_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let q = Quantize {
        axis: n.attr_or::<i64>("axis", 1)?,
        block_size: n.attr_or::<i64>("block_size", 0)?,
        saturate: n.attr_or::<i64>("saturate", 1)? != 0,
        output_dtype: dtype_attr(n, "output_dtype")?,
        precision: dtype_attr(n, "precision")?,
    };
    if let Some(d) = q.output_dtype
        && int_range(d).is_none()
        && minifloat::format_of(d).is_none()
    {
        return Err(Error::unsupported(format!("QuantizeLinear to {d}")));
    }
    if let Some(p) = q.precision
        && !matches!(p, DType::F32 | DType::F16 | DType::BF16 | DType::F64)
    {
        return Err(n.error(format!("precision must be a float type, got {p}")));
    }
    Ok(Box::new(q))
}

impl Kernel for Quantize {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let [x, scale] = tensors_in(inputs)?;
        let zp = opt_tensor_in(inputs, 2)?;
        Ok(smallvec::smallvec![self.quantize(x, scale, zp)?.into()])
    }
}

impl Quantize {
    /// com.microsoft QuantizeLinear: per-tensor or per-axis, the target type from the zero
    /// point (uint8 without one), dividing in f32 for every input type as ONNX Runtime does.
    pub(crate) fn com_microsoft(axis: i64) -> Quantize {
        Quantize { axis, block_size: 0, saturate: true, output_dtype: None, precision: Some(DType::F32) }
    }

    /// A kernel with these attributes (for tests and other kernels).
    #[cfg(test)]
    pub(crate) fn with(axis: i64, block_size: i64, output_dtype: Option<DType>) -> Quantize {
        Quantize { axis, block_size, saturate: true, output_dtype, precision: None }
    }

    pub(crate) fn quantize(&self, x: &Tensor, scale: &Tensor, zp: Option<&Tensor>) -> Result<Tensor> {
        let out_dtype = match (zp.map(Tensor::dtype), self.output_dtype) {
            (Some(z), Some(o)) if z != o => {
                return Err(Error::invalid(format!("output_dtype {o} differs from the zero point's type {z}")));
            }
            (Some(z), _) => z,
            (None, Some(o)) => o,
            (None, None) => DType::U8,
        };
        if !matches!(x.dtype(), DType::F32 | DType::F16 | DType::BF16 | DType::I32 | DType::F64) {
            return Err(Error::unsupported(format!("QuantizeLinear input of type {}", x.dtype())));
        }
        let g = Granularity::new(x.shape(), scale.shape(), self.axis, self.block_size)?;
        check_zero_point(zp, scale, None)?;
        // Division precision: the attribute, else the promoted type of x and the scale.
        let prec = self.precision.unwrap_or(match (x.dtype(), scale.dtype()) {
            (DType::F16, DType::F16) => DType::F16,
            (DType::BF16, DType::BF16) => DType::BF16,
            _ => DType::F32,
        });
        // The common case (f32 data, one f32 scale, an 8-bit result) in one vectorized pass.
        if x.dtype() == DType::F32
            && scale.dtype() == DType::F32
            && prec == DType::F32
            && scale.len() == 1
            && zp.is_none_or(|z| z.len() == 1)
            && matches!(out_dtype, DType::U8 | DType::I8)
        {
            let x = x.to_aligned();
            let (xs, s) = (x.as_slice::<f32>()?, one_f32(scale)?);
            let z = zp.map(one_i32).transpose()?.unwrap_or(0) as f32;
            return match out_dtype {
                DType::U8 => {
                    Ok(Tensor::build::<u8>(x.shape(), |o| round::quantize(xs, s, z, (0.0, 255.0), o, |v| v as u8)))
                }
                _ => Ok(Tensor::build::<i8>(x.shape(), |o| round::quantize(xs, s, z, (-128.0, 127.0), o, |v| v as i8))),
            };
        }
        let xs = load_f32(x)?;
        let sc: Vec<f32> = load_f32(scale)?.into_iter().map(|s| round_to(prec, s)).collect();
        let quot = |i: usize, p: usize| round_to(prec, round_to(prec, xs[i]) / sc[p]);
        let shape = x.shape();
        let n = xs.len();
        if let Some((lo, hi)) = int_range(out_dtype) {
            let zs = match zp {
                Some(z) => load_i32(z)?,
                None => vec![0; scale.len()],
            };
            let mut out = vec![0i32; n];
            g.for_rows(&mut out, |off, row, p| {
                for (j, o) in row.iter_mut().enumerate() {
                    let k = p.at(j);
                    let v = quot(off + j, k).round_ties_even() as f64 + zs[k] as f64;
                    // NaN becomes the zero point's side of the range via the saturating cast.
                    *o = v.clamp(lo as f64, hi as f64) as i32;
                }
            });
            return store_int(out_dtype, shape, &out);
        }
        let Some(fmt) = minifloat::format_of(out_dtype) else {
            return Err(Error::unsupported(format!("QuantizeLinear to {out_dtype}")));
        };
        let zs = match zp {
            Some(z) => load_f32(z)?,
            None => vec![0.0; scale.len()],
        };
        let mut out = vec![0u8; n];
        let sat = self.saturate;
        g.for_rows(&mut out, |off, row, p| {
            for (j, o) in row.iter_mut().enumerate() {
                let k = p.at(j);
                *o = Format::encode(fmt, quot(off + j, k) + zs[k], sat);
            }
        });
        Tensor::build_as::<u8>(out_dtype, shape, |o| o.copy_from_slice(&out))
    }
}

/// DequantizeLinear's parsed attributes.
pub(crate) struct Dequantize {
    axis: i64,
    block_size: i64,
    output_dtype: Option<DType>,
}

fn dequantize_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let d = Dequantize {
        axis: n.attr_or::<i64>("axis", 1)?,
        block_size: n.attr_or::<i64>("block_size", 0)?,
        output_dtype: dtype_attr(n, "output_dtype")?,
    };
    if let Some(o) = d.output_dtype
        && !matches!(o, DType::F32 | DType::F16 | DType::BF16)
    {
        return Err(n.error(format!("output_dtype must be float, float16 or bfloat16, got {o}")));
    }
    Ok(Box::new(d))
}

/// A zero point holds one value per scale and, for DequantizeLinear, has x's type (`x_dtype`).
fn check_zero_point(zp: Option<&Tensor>, scale: &Tensor, x_dtype: Option<DType>) -> Result<()> {
    let Some(z) = zp else { return Ok(()) };
    if z.len() != scale.len() {
        let (zs, ss) = (z.shape(), scale.shape());
        return Err(Error::invalid(format!("zero point shape {zs:?} differs from scale shape {ss:?}")));
    }
    match x_dtype {
        Some(x) if z.dtype() != x => {
            Err(Error::invalid(format!("zero point type {} differs from x type {x}", z.dtype())))
        }
        _ => Ok(()),
    }
}

impl Kernel for Dequantize {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let [x, scale] = tensors_in(inputs)?;
        let zp = opt_tensor_in(inputs, 2)?;
        Ok(smallvec::smallvec![self.dequantize(x, scale, zp)?.into()])
    }
}

/// `(x − z) · s` for every element of an 8-bit tensor, into a new f32 tensor.
fn dequantize_per_tensor<T: Copy + Into<i32> + Sync>(x: &[T], shape: &[usize], z: i32, s: f32) -> Tensor {
    let map = |o: &mut [f32], x: &[T]| {
        for (o, &v) in o.iter_mut().zip(x) {
            *o = (v.into() - z) as f32 * s;
        }
    };
    Tensor::build_full::<f32>(shape, |out| {
        if !par::worth(out.len(), par::ELEMENTWISE) {
            map(out, x)
        } else {
            out.par_chunks_mut(par::ELEMENTWISE_CHUNK)
                .zip(x.par_chunks(par::ELEMENTWISE_CHUNK))
                .for_each(|(o, x)| map(o, x));
        }
    })
}

impl Dequantize {
    /// A kernel with these attributes (com.microsoft DequantizeLinear, tests).
    pub(crate) fn with(axis: i64, block_size: i64) -> Dequantize {
        Dequantize { axis, block_size, output_dtype: None }
    }

    pub(crate) fn dequantize(&self, x: &Tensor, scale: &Tensor, zp: Option<&Tensor>) -> Result<Tensor> {
        let out_dtype = self.output_dtype.unwrap_or(match scale.dtype() {
            d @ (DType::F16 | DType::BF16) => d,
            _ => DType::F32,
        });
        let g = Granularity::new(x.shape(), scale.shape(), self.axis, self.block_size)?;
        check_zero_point(zp, scale, Some(x.dtype()))?;
        if scale.len() == 1 && out_dtype == DType::F32 && matches!(x.dtype(), DType::U8 | DType::I8) {
            // One scale (an activation's): one pass straight into the output, in parallel
            // when large. The same arithmetic as below: the 8-bit difference is exact in f32.
            let (s, z) = (one_f32(scale)?, zp.map(one_i32).transpose()?.unwrap_or(0));
            match x.dtype() {
                DType::U8 => return Ok(dequantize_per_tensor(x.as_slice::<u8>()?, x.shape(), z, s)),
                DType::I8 => return Ok(dequantize_per_tensor(x.as_slice::<i8>()?, x.shape(), z, s)),
                _ => {}
            }
        }
        let sc = load_f32(scale)?;
        let mut out = vec![0f32; x.len()];
        if minifloat::format_of(x.dtype()).is_some() {
            let xs = load_f32(x)?;
            let zs = match zp {
                Some(z) => load_f32(z)?,
                None => vec![0.0; scale.len()],
            };
            g.for_rows(&mut out, |off, row, p| {
                for (j, o) in row.iter_mut().enumerate() {
                    let k = p.at(j);
                    *o = (xs[off + j] - zs[k]) * sc[k];
                }
            });
        } else {
            let xs = load_i32(x).map_err(|_| Error::unsupported(format!("DequantizeLinear of {}", x.dtype())))?;
            let zs = match zp {
                Some(z) => load_i32(z)?,
                None => vec![0; scale.len()],
            };
            g.for_rows(&mut out, |off, row, p| {
                for (j, o) in row.iter_mut().enumerate() {
                    let k = p.at(j);
                    *o = (xs[off + j] as i64 - zs[k] as i64) as f32 * sc[k];
                }
            });
        }
        store_float(out_dtype, x.shape(), &out)
    }
}
