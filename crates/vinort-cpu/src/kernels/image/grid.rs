//! [GridSample](https://onnx.ai/onnx/operators/onnx__GridSample.html) (16, 20, 22; any
//! number of spatial axes) and [AffineGrid](https://onnx.ai/onnx/operators/onnx__AffineGrid.html)
//! (20), for float types (computed in f64).
//!
//! GridSample follows the spec's (and PyTorch's) conventions: grid coordinates are normalised
//! to [-1, 1] in reversed axis order (x = width first), nearest rounds half to even, and the
//! bicubic filter uses a = -0.75. Padding is applied to each tap's index.

use rayon::prelude::*;
use vinort_ir::Values;
use vinort_ir::tensor::numel;
use vinort_ir::{Error, Result, RunContext, Value};

use super::resize::Mode::{self, Cubic, Linear, Nearest};
use super::{PAR_MIN, extent, need_float, store_acc};

use crate::kernel::{Kernel, NodeInfo, Registry, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "GridSample", grid_sample_factory);
    r.op("", "AffineGrid", affine_grid_factory);
}

/// `mode`'s spellings: opset 16 says bilinear/bicubic, opset 20 linear/cubic.
const MODES: [(&str, Mode); 5] =
    [("bilinear", Linear), ("linear", Linear), ("nearest", Nearest), ("bicubic", Cubic), ("cubic", Cubic)];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Padding {
    Zeros,
    Border,
    Reflection,
}

struct GridSample {
    mode: Mode,
    padding: Padding,
    align_corners: bool,
}

fn grid_sample_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let default = if n.opset >= 20 { "linear" } else { "bilinear" };
    let mode = n.choice_attr("mode", Some(default), &MODES)?;
    let padding = n.choice_attr(
        "padding_mode",
        Some("zeros"),
        &[("zeros", Padding::Zeros), ("border", Padding::Border), ("reflection", Padding::Reflection)],
    )?;
    Ok(Box::new(GridSample { mode, padding, align_corners: n.attr_or::<i64>("align_corners", 0)? != 0 }))
}

/// Reflects `x` into `[lo, hi]` by bouncing off the nearer border.
fn reflect(x: f64, lo: f64, hi: f64) -> f64 {
    let span = hi - lo;
    if span <= 0.0 {
        return lo;
    }
    if x < lo {
        let d = lo - x;
        let k = (d / span).floor();
        let r = d - k * span;
        if k as i64 % 2 == 0 { lo + r } else { hi - r }
    } else if x > hi {
        let d = x - hi;
        let k = (d / span).floor();
        let r = d - k * span;
        if k as i64 % 2 == 0 { hi - r } else { lo + r }
    } else {
        x
    }
}

/// Keys' cubic convolution weights for the four taps around fraction `t` (a = -0.75).
fn cubic_weights(t: f64) -> [f64; 4] {
    let a = -0.75;
    let near = |d: f64| ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0;
    let far = |d: f64| ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a;
    [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
}

impl GridSample {
    /// Resolves a tap index along an axis of extent `d` under the padding mode (None: zero).
    fn index(&self, i: i64, d: usize, lo: f64, hi: f64) -> Option<usize> {
        let last = d as i64 - 1;
        match self.padding {
            Padding::Zeros => (0..d as i64).contains(&i).then_some(i as usize),
            Padding::Border => Some(i.clamp(0, last.max(0)) as usize),
            Padding::Reflection => Some((reflect(i as f64, lo, hi).trunc() as i64).clamp(0, last.max(0)) as usize),
        }
    }

    /// The taps (index or None, weight) along one axis for normalised coordinate `g`.
    fn axis_taps(&self, g: f64, d: usize, out: &mut Vec<(Option<usize>, f64)>) {
        out.clear();
        let len = d as f32;
        let g = g as f32;
        // Denormalise in f32, as the reference does.
        let mut x = if self.align_corners { (g + 1.0) / 2.0 * (len - 1.0) } else { ((g + 1.0) * len - 1.0) / 2.0 };
        let (lo, hi) = if self.align_corners { (0.0, d as f64 - 1.0) } else { (-0.5, d as f64 - 0.5) };
        if self.mode == Mode::Nearest {
            x = x.round_ties_even();
        }
        let mut x = x as f64;
        if x < lo || x > hi {
            match self.padding {
                Padding::Border => x = x.clamp(0.0, d as f64 - 1.0),
                Padding::Reflection => x = reflect(x, lo, hi),
                Padding::Zeros => {}
            }
        }
        if !x.is_finite() {
            out.push((None, 0.0));
            return;
        }
        match self.mode {
            Mode::Nearest => out.push((self.index(x.trunc() as i64, d, lo, hi), 1.0)),
            Mode::Linear => {
                let f = x.floor();
                let t = x - f;
                let i = f as i64;
                out.push((self.index(i, d, lo, hi), 1.0 - t));
                out.push((self.index(i + 1, d, lo, hi), t));
            }
            Mode::Cubic => {
                let f = x.floor();
                let i = f as i64;
                for (k, w) in cubic_weights(x - f).into_iter().enumerate() {
                    out.push((self.index(i - 1 + k as i64, d, lo, hi), w));
                }
            }
        }
    }
}

impl Kernel for GridSample {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let grid = tensor_in(inputs, 1)?;
        need_float(x, "GridSample input X")?;
        need_float(grid, "GridSample grid")?;
        let (xs, gs) = (x.shape(), grid.shape());
        let k = xs.len().saturating_sub(2);
        if xs.len() < 3 || gs.len() != xs.len() || gs[0] != xs[0] || gs[gs.len() - 1] != k {
            return Err(Error::invalid(format!("GridSample: X {xs:?} and grid {gs:?} do not match")));
        }
        let (n, c) = (xs[0], xs[1]);
        let in_sp = &xs[2..];
        let out_sp = &gs[1..gs.len() - 1];
        let (pin, pout) = (numel(in_sp), numel(out_sp));
        let mut out_shape = vec![n, c];
        out_shape.extend_from_slice(out_sp);
        if pin == 0 && n * c * pout != 0 {
            return Err(Error::invalid("GridSample: cannot sample an empty image"));
        }
        let xv = x.to_f64_vec()?;
        let gv = grid.to_f64_vec()?;
        let mut y = vec![0.0f64; n * c * pout];
        if !y.is_empty() {
            let mut ist = vec![1usize; k];
            for a in (0..k.saturating_sub(1)).rev() {
                ist[a] = ist[a + 1] * in_sp[a + 1];
            }
            // One batch item at a time; its points in parallel, each point applying its taps to
            // every channel.
            for b in 0..n {
                let xb = &xv[b * c * pin..(b + 1) * c * pin];
                let gb = &gv[b * pout * k..(b + 1) * pout * k];
                let point = |p: usize| -> Vec<f64> {
                    let mut per_axis: Vec<Vec<(Option<usize>, f64)>> = vec![Vec::new(); k];
                    for (a, taps) in per_axis.iter_mut().enumerate() {
                        self.axis_taps(gb[p * k + (k - 1 - a)], in_sp[a], taps);
                    }
                    let mut vals = vec![0.0f64; c];
                    let mut idx = vec![0usize; k];
                    'taps: loop {
                        let mut w = 1.0;
                        let mut off = Some(0usize);
                        for a in 0..k {
                            let (i, wa) = per_axis[a][idx[a]];
                            w *= wa;
                            off = match (off, i) {
                                (Some(o), Some(i)) => Some(o + i * ist[a]),
                                _ => None,
                            };
                        }
                        if let Some(o) = off
                            && w != 0.0
                        {
                            for (ch, v) in vals.iter_mut().enumerate() {
                                *v += w * xb[ch * pin + o];
                            }
                        }
                        for a in (0..k).rev() {
                            idx[a] += 1;
                            if idx[a] < per_axis[a].len() {
                                continue 'taps;
                            }
                            idx[a] = 0;
                        }
                        break;
                    }
                    vals
                };
                let cols: Vec<Vec<f64>> = if !crate::par::worth(pout * c, PAR_MIN / 8) {
                    (0..pout).map(point).collect()
                } else {
                    (0..pout).into_par_iter().map(point).collect()
                };
                for (p, vals) in cols.iter().enumerate() {
                    for (ch, v) in vals.iter().enumerate() {
                        y[(b * c + ch) * pout + p] = *v;
                    }
                }
            }
        }
        Ok(smallvec::smallvec![Value::Tensor(store_acc(x.dtype(), &out_shape, &y)?)])
    }
}

struct AffineGrid {
    align_corners: bool,
}

fn affine_grid_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(Box::new(AffineGrid { align_corners: info.node.attr_or::<i64>("align_corners", 0)? != 0 }))
}

impl AffineGrid {
    /// The normalised coordinate of position `i` of `d`.
    fn base(&self, i: usize, d: usize) -> f64 {
        if self.align_corners {
            if d <= 1 { -1.0 } else { -1.0 + 2.0 * i as f64 / (d - 1) as f64 }
        } else {
            -1.0 + (2 * i + 1) as f64 / d as f64
        }
    }
}

impl Kernel for AffineGrid {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let theta = tensor_in(inputs, 0)?;
        need_float(theta, "AffineGrid theta")?;
        let size = tensor_in(inputs, 1)?.to_i64_vec()?;
        let sp: Vec<usize> = size.iter().skip(2).map(|v| extent(*v, "size")).collect::<Result<_>>()?;
        let k = sp.len();
        let ts = theta.shape();
        if !(k == 2 || k == 3) || ts.len() != 3 || ts[1] != k || ts[2] != k + 1 || size[0] != ts[0] as i64 {
            return Err(Error::invalid(format!("AffineGrid: theta {ts:?} does not match size {size:?}")));
        }
        let n = ts[0];
        let th = theta.to_f64_vec()?;
        let pts = numel(&sp);
        let mut out = vec![0.0f64; n * pts * k];
        let mut shape = vec![n];
        shape.extend_from_slice(&sp);
        shape.push(k);
        for b in 0..n {
            let t = &th[b * k * (k + 1)..(b + 1) * k * (k + 1)];
            for p in 0..pts {
                // Homogeneous point in (x, y[, z], 1) order: the last spatial axis first.
                let mut rem = p;
                let mut h = vec![1.0f64; k + 1];
                for a in (0..k).rev() {
                    let i = rem % sp[a];
                    rem /= sp[a];
                    h[k - 1 - a] = self.base(i, sp[a]);
                }
                for r in 0..k {
                    out[(b * pts + p) * k + r] = (0..=k).map(|j| t[r * (k + 1) + j] * h[j]).sum();
                }
            }
        }
        Ok(smallvec::smallvec![Value::Tensor(store_acc(theta.dtype(), &shape, &out)?)])
    }
}
