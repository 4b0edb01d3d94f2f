//! The per-head computation of [Attention](https://onnx.ai/onnx/operators/onnx__Attention.html)
//! (opsets 23–latest, f32, f16, bf16 and f64 computed in f64 with the reference's roundings):
//! head-major layout, KV-cache concatenation, the combined mask bias, and the
//! scores → softmax → weighted-values loop of one (batch, head).

use vinort_ir::{DType, Error, Result, Tensor};

use super::Rnd;

/// Shapes of one call, in head-major terms.
#[derive(Clone, Copy, Debug)]
pub(super) struct Dims {
    pub(super) b: usize,
    pub(super) hq: usize,
    pub(super) hkv: usize,
    pub(super) sq: usize,
    /// New keys/values.
    pub(super) skv: usize,
    /// Past keys/values.
    pub(super) sp: usize,
    pub(super) d: usize,
    pub(super) dv: usize,
}

impl Dims {
    pub(super) fn tot(&self) -> usize {
        self.sp + self.skv
    }
}

/// Reorders `[b, s, h*d]` (3-D) into `[b, h, s, d]`; 4-D data is already in that order.
pub(super) fn head_major(x: Vec<f64>, b: usize, h: usize, s: usize, d: usize, three_d: bool) -> Vec<f64> {
    if !three_d || h == 1 || s == 1 {
        return x;
    }
    let mut out = vec![0.0; x.len()];
    for bi in 0..b {
        for si in 0..s {
            for hi in 0..h {
                let src = ((bi * s + si) * h + hi) * d;
                let dst = ((bi * h + hi) * s + si) * d;
                out[dst..dst + d].copy_from_slice(&x[src..src + d]);
            }
        }
    }
    out
}

/// Concatenates `past [b, h, sp, d]` and `new [b, h, s, d]` along the sequence axis.
pub(super) fn concat(past: Option<&[f64]>, new: &[f64], b: usize, h: usize, sp: usize, s: usize, d: usize) -> Vec<f64> {
    let Some(past) = past else { return new.to_vec() };
    let mut out = Vec::with_capacity((b * h) * (sp + s) * d);
    for bh in 0..b * h {
        out.extend_from_slice(&past[bh * sp * d..(bh + 1) * sp * d]);
        out.extend_from_slice(&new[bh * s * d..(bh + 1) * s * d]);
    }
    out
}

/// The additive mask input, padded with "masked" up to `tot` keys and broadcast (by strides)
/// to `[b, hq, sq, tot]`.
pub(super) struct Mask {
    pub(super) vals: Vec<f64>,
    pub(super) strides: [usize; 4],
}

impl Mask {
    pub(super) fn new(m: &Tensor, dims: &Dims) -> Result<Mask> {
        let shape = m.shape();
        let tot = dims.tot();
        let bad = || Error::invalid(format!("attn_mask of shape {shape:?} does not broadcast to the scores"));
        if shape.is_empty() || shape.len() > 4 {
            return Err(bad());
        }
        let last = shape[shape.len() - 1];
        if last > tot {
            return Err(bad());
        }
        let boolean = m.dtype() == DType::Bool;
        let raw = m.to_f64_vec()?;
        let conv = |v: f64| if boolean { if v != 0.0 { 0.0 } else { f64::NEG_INFINITY } } else { v };
        let rows = raw.len().checked_div(last).unwrap_or_else(|| shape[..shape.len() - 1].iter().product());
        let mut vals = Vec::with_capacity(rows * tot);
        for r in 0..rows {
            let row = raw.get(r * last..(r + 1) * last).unwrap_or(&[]);
            vals.extend(row.iter().map(|v| conv(*v)));
            vals.extend(std::iter::repeat_n(f64::NEG_INFINITY, tot - last));
        }
        let mut full = [1usize; 4];
        full[4 - shape.len()..].copy_from_slice(shape);
        full[3] = tot;
        let target = [dims.b, dims.hq, dims.sq, tot];
        let mut strides = [0usize; 4];
        let mut s = 1usize;
        for i in (0..4).rev() {
            if full[i] == target[i] && full[i] != 1 {
                strides[i] = s;
            } else if full[i] != 1 {
                return Err(bad());
            }
            s *= full[i];
        }
        Ok(Mask { vals, strides })
    }

    #[inline(always)]
    pub(super) fn at(&self, b: usize, h: usize, i: usize, j: usize) -> f64 {
        let s = &self.strides;
        self.vals[b * s[0] + h * s[1] + i * s[2] + j * s[3]]
    }
}

/// Everything the per-head loop reads.
pub(super) struct Job<'a> {
    pub(super) dims: Dims,
    pub(super) qs: &'a [f64],
    pub(super) ks: &'a [f64],
    pub(super) vs: &'a [f64],
    pub(super) mask: Option<&'a Mask>,
    pub(super) nonpad: Option<&'a [i64]>,
    pub(super) rt: Rnd,
    pub(super) sr: Rnd,
    pub(super) cap: Option<f64>,
    pub(super) causal: bool,
    pub(super) left: i64,
    pub(super) right: i64,
    pub(super) mode: i64,
    pub(super) want_qk: bool,
}

impl Job<'_> {
    /// Bias for query `i`, key `j` of batch `b`, head `h`.
    #[inline]
    pub(super) fn bias(&self, b: usize, h: usize, i: usize, j: usize, offset: i64) -> f64 {
        let mut v = self.mask.map_or(0.0, |m| m.at(b, h, i, j));
        let (i, j) = (i as i64, j as i64);
        if self.causal && j > i + offset {
            v += f64::NEG_INFINITY;
        }
        if self.left >= 0 || self.right >= 0 {
            let diff = i + offset - j;
            if (self.left >= 0 && diff > self.left) || (self.right >= 0 && -diff > self.right) {
                v += f64::NEG_INFINITY;
            }
        }
        if let Some(np) = self.nonpad
            && j >= np[b]
        {
            v += f64::NEG_INFINITY;
        }
        v
    }

    /// One `(batch, head)`: returns `Y [sq, dv]` and, if wanted, the qk output `[sq, tot]`.
    pub(super) fn head(&self, bh: usize) -> (Vec<f64>, Vec<f64>) {
        let Dims { hq, hkv, sq, d, dv, sp, .. } = self.dims;
        let tot = self.dims.tot();
        let (b, h) = (bh / hq, bh % hq);
        let kvh = h / (hq / hkv);
        let q = &self.qs[bh * sq * d..(bh + 1) * sq * d];
        let k = &self.ks[(b * hkv + kvh) * tot * d..(b * hkv + kvh + 1) * tot * d];
        let v = &self.vs[(b * hkv + kvh) * tot * dv..(b * hkv + kvh + 1) * tot * dv];
        let offset = match self.nonpad {
            Some(np) if sp == 0 => np[b] - sq as i64,
            _ => sp as i64,
        };
        let (rt, sr) = (self.rt, self.sr);
        let mut y = vec![0.0; sq * dv];
        let mut qk_out = if self.want_qk { vec![0.0; sq * tot] } else { Vec::new() };
        let mut w = vec![0.0; tot];
        for i in 0..sq {
            let qi = &q[i * d..(i + 1) * d];
            let mut all_masked = true;
            for (j, wj) in w.iter_mut().enumerate() {
                let kj = &k[j * d..(j + 1) * d];
                let mut s = rt.r(qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>());
                if let Some(c) = self.cap {
                    s = rt.r(rt.r(rt.r(s / c).tanh()) * c);
                }
                let bias = self.bias(b, h, i, j, offset);
                all_masked &= bias == f64::NEG_INFINITY;
                let sb = rt.r(s + bias);
                if self.want_qk && self.mode < 3 {
                    qk_out[i * tot + j] = if self.mode == 2 { sb } else { s };
                }
                *wj = sr.r(sb);
            }
            softmax(&mut w, sr);
            if all_masked {
                w.fill(0.0);
            }
            if self.want_qk && self.mode == 3 {
                qk_out[i * tot..(i + 1) * tot].copy_from_slice(&w);
            }
            let yi = &mut y[i * dv..(i + 1) * dv];
            for (j, p) in w.iter().enumerate() {
                let p = rt.r(*p);
                let vj = &v[j * dv..(j + 1) * dv];
                // Skipping zero weights is exact unless V holds inf or NaN (0 * inf = NaN).
                if p != 0.0 || vj.iter().any(|x| !x.is_finite()) {
                    for (o, x) in yi.iter_mut().zip(vj) {
                        *o += p * x;
                    }
                }
            }
            for o in yi.iter_mut() {
                *o = rt.r(*o);
            }
        }
        (y, qk_out)
    }
}

/// In-place softmax of one row with the reference's rounding in type `sr`: an all `-inf` row
/// becomes all zeros.
pub(super) fn softmax(w: &mut [f64], sr: Rnd) {
    let mut m = f64::NEG_INFINITY;
    let mut nan = false;
    for x in w.iter() {
        nan |= x.is_nan();
        if *x > m {
            m = *x;
        }
    }
    if nan {
        w.fill(f64::NAN);
        return;
    }
    if m == f64::NEG_INFINITY {
        m = 0.0;
    }
    let mut sum = 0.0;
    for x in w.iter_mut() {
        *x = sr.r(sr.r(*x - m).exp());
        // bfloat16 sums are rounded after every addition (ml_dtypes has no wider accumulator);
        // numpy accumulates float16 sums in float32.
        sum = if sr == Rnd::BF16 { sr.r(sum + *x) } else { sum + *x };
    }
    let mut sum = sr.r(sum);
    if sum == 0.0 {
        sum = 1.0;
    }
    for x in w.iter_mut() {
        *x = sr.r(*x / sum);
    }
}
