//! The normalisations without a learned scale, for f32, f64, f16 and bf16 (statistics in f32,
//! or f64 for f64 data):
//! [MeanVarianceNormalization](https://onnx.ai/onnx/operators/onnx__MeanVarianceNormalization.html)
//! (9–13), [LpNormalization](https://onnx.ai/onnx/operators/onnx__LpNormalization.html) (1–22)
//! and [LRN](https://onnx.ai/onnx/operators/onnx__LRN.html) (1–13).

use vinort_ir::Values;
use vinort_ir::tensor::numel;
use vinort_ir::{Error, Result, RunContext, Tensor, Value};

use super::channel::ncs;
use super::{
    Float, FloatKernel, GemmElem, Real, broadcast_to, float_factory, for_rows, not_float, positive_attr, require_float,
};
use crate::kernel::{Kernel, NodeInfo, Registry, norm_axis, tensor_in, with_numeric};
use crate::kernels::reduce::fold::{SumOf, reduce_fold};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "MeanVarianceNormalization", mvn_factory);
    r.op("", "LpNormalization", float_factory::<LpNorm>);
    r.op("", "LRN", float_factory::<Lrn>);
}

/// Not a [`FloatKernel`]: its `run_t` needs the reduction accumulator bounds on `T::R`, which
/// the trait's method cannot add.
struct Mvn {
    axes: Vec<i64>,
}

fn mvn_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    require_float(info, 0)?;
    Ok(Box::new(Mvn { axes: info.node.attr_or::<Vec<i64>>("axes", vec![0, 2, 3])? }))
}

impl Kernel for Mvn {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        with_numeric!(float x.dtype(), |T| self.run_t::<T>(x), other => Err(not_float(other)))
    }
}

impl Mvn {
    fn run_t<T: Float>(&self, x: &Tensor) -> Result<Values>
    where
        T::R: crate::kernels::reduce::elem::RElem<A = T::R> + crate::kernels::reduce::elem::Acc,
    {
        let shape = x.shape();
        let mut mask = vec![false; shape.len()];
        for &a in &self.axes {
            let a = norm_axis(a, shape.len())?;
            if std::mem::replace(&mut mask[a], true) {
                return Err(Error::invalid(format!("axis {a} is listed twice in axes {:?}", self.axes)));
            }
        }
        let kept: Vec<usize> = shape.iter().zip(&mask).map(|(d, r)| if *r { 1 } else { *d }).collect();
        let n = T::R::from_f64(shape.iter().zip(&mask).filter(|(_, r)| **r).map(|(d, _)| *d).product::<usize>() as f64);
        let xr: Vec<T::R> = x.as_slice::<T>()?.iter().map(|v| v.load()).collect();
        let sum = reduce_fold(&SumOf(|v: T::R| v), &xr, shape, &mask);
        let mean: Vec<T::R> = sum.iter().map(|s| *s / n).collect();
        let mean_full = broadcast_to(&mean, &kept, shape)?;
        let d: Vec<T::R> = xr.iter().zip(&mean_full).map(|(v, m)| *v - *m).collect();
        let sq = reduce_fold(&SumOf(|v: T::R| v * v), &d, shape, &mask);
        // The ONNX function adds 1e-9 to the standard deviation, not to the variance.
        let den: Vec<T::R> = sq.iter().map(|q| (*q / n).sqrt() + T::R::from_f64(1e-9)).collect();
        let den_full = broadcast_to(&den, &kept, shape)?;
        let y = Tensor::build::<T>(shape, |y| {
            for ((y, d), s) in y.iter_mut().zip(&d).zip(&den_full) {
                *y = T::store(*d / *s);
            }
        });
        Ok(smallvec::smallvec![y.into()])
    }
}

struct LpNorm {
    axis: i64,
    p: i64,
}

impl FloatKernel for LpNorm {
    fn new(info: &NodeInfo<'_>) -> Result<Self> {
        let n = info.node;
        let p = n.attr_or::<i64>("p", 2)?;
        if p != 1 && p != 2 {
            return Err(n.error(format!("p must be 1 or 2, got {p}")));
        }
        Ok(LpNorm { axis: n.attr_or::<i64>("axis", -1)?, p })
    }

    fn run_t<T: Float>(&self, x: &Tensor, _: &[Option<&Value>]) -> Result<Values> {
        let shape = x.shape();
        let a = norm_axis(self.axis, shape.len())?;
        let (n, inner) = (shape[a], numel(&shape[a + 1..]));
        let xs = x.as_slice::<T>()?;
        let l1 = self.p == 1;
        let block = n * inner;
        let y = Tensor::build::<T>(shape, |y| {
            for_rows(xs, block, y, block, |_, xb, yb| {
                let mut norm = vec![T::R::ZERO; inner];
                for xr in xb.chunks_exact(inner) {
                    for (s, v) in norm.iter_mut().zip(xr) {
                        let v = v.load();
                        *s += if l1 { v.abs() } else { v * v };
                    }
                }
                // A zero norm gives 0, not 0/0 (the ONNX reference does the same).
                let inv: Vec<T::R> = norm
                    .iter()
                    .map(|s| {
                        let s = if l1 { *s } else { s.sqrt() };
                        if s == T::R::ZERO { T::R::ZERO } else { T::R::ONE / s }
                    })
                    .collect();
                for (xr, yr) in xb.chunks_exact(inner).zip(yb.chunks_exact_mut(inner)) {
                    for ((y, v), i) in yr.iter_mut().zip(xr).zip(&inv) {
                        *y = T::store(v.load() * *i);
                    }
                }
            });
        });
        Ok(smallvec::smallvec![y.into()])
    }
}

struct Lrn {
    size: usize,
    alpha: f32,
    beta: f32,
    bias: f32,
}

impl FloatKernel for Lrn {
    fn new(info: &NodeInfo<'_>) -> Result<Self> {
        let n = info.node;
        let size = positive_attr(n, "size")?;
        Ok(Lrn {
            size,
            alpha: n.attr_or::<f32>("alpha", 1e-4)?,
            beta: n.attr_or::<f32>("beta", 0.75)?,
            bias: n.attr_or::<f32>("bias", 1.0)?,
        })
    }

    fn run_t<T: Float>(&self, x: &Tensor, _: &[Option<&Value>]) -> Result<Values> {
        let (_, c, s) = ncs(x.shape(), "LRN")?;
        let xs = x.as_slice::<T>()?;
        let (before, after) = ((self.size - 1) / 2, self.size / 2);
        let k = T::R::from_f64(self.alpha as f64 / self.size as f64);
        let (bias, beta) = (T::R::from_f64(self.bias as f64), T::R::from_f64(self.beta as f64));
        let block = c * s;
        let y = Tensor::build::<T>(x.shape(), |y| {
            for_rows(xs, block, y, block, |_, xb, yb| {
                let sq: Vec<T::R> = xb
                    .iter()
                    .map(|v| {
                        let v = v.load();
                        v * v
                    })
                    .collect();
                let mut win = vec![T::R::ZERO; s];
                for (ch, (xr, yr)) in xb.chunks_exact(s).zip(yb.chunks_exact_mut(s)).enumerate() {
                    win.fill(T::R::ZERO);
                    let (lo, hi) = (ch.saturating_sub(before), (ch + after).min(c - 1));
                    for q in sq.chunks_exact(s).take(hi + 1).skip(lo) {
                        for (w, q) in win.iter_mut().zip(q) {
                            *w += *q;
                        }
                    }
                    for ((y, v), w) in yr.iter_mut().zip(xr).zip(&win) {
                        *y = T::store(v.load() / (bias + k * *w).powf(beta));
                    }
                }
            });
        });
        Ok(smallvec::smallvec![y.into()])
    }
}
