//! One direction's recurrence: the input projection of the whole sequence, then per step the
//! product of the previous hidden state by `Rᵀ` and the cell's gate equations.
//!
//! A recurrent node at batch 1 is a chain of small products, each waiting on the last: per
//! step a `[batch, hidden] × [hidden, gates·hidden]` product and a few vectors of gate math.
//! Constant f32 weights are therefore packed once, when the kernel is built
//! ([`PackedDir`]: `Wᵀ` and `Rᵀ` for [`PackedB`], whose few-row kernel keeps 8 column blocks of
//! sums in flight at batch 1), and the gate activations run over whole gate vectors through
//! [`Float::activate`] (vector sigmoid and tanh for f32). Other weights (f64, or computed at
//! run time) take the same loop with [`matmul`].

use vinort_ir::{Error, Result};

use super::activation::Activation;
use super::math::{Float, Mat, matmul};
use super::recurrent::Cell;
use crate::kernels::linalg::packed::PackedB;

/// One direction's constant f32 weights, packed once as `K × N` products take them.
#[derive(Debug)]
pub(crate) struct PackedDir {
    /// `Wᵀ`: input × gates·hidden.
    w: PackedB,
    /// `Rᵀ`: hidden × gates·hidden; for GRU without `linear_before_reset`, the z and r rows only
    /// (hidden × 2·hidden).
    r: PackedB,
    /// GRU without `linear_before_reset`: the candidate's rows of `Rᵀ` (hidden × hidden).
    r_h: Option<PackedB>,
}

impl PackedDir {
    /// Packs one direction's `w` (`[gates·hidden, input]`) and `r` (`[gates·hidden, hidden]`);
    /// None when this CPU has no packed kernels.
    pub(crate) fn new(cell: Cell, w: &[f32], r: &[f32], input: usize, hidden: usize) -> Option<PackedDir> {
        let gh = cell.gates() * hidden;
        let split = matches!(cell, Cell::Gru { linear_before_reset: false });
        let zr = if split { 2 * hidden } else { gh };
        Some(PackedDir {
            w: transposed(w, gh, input)?,
            r: transposed(&r[..zr * hidden], zr, hidden)?,
            r_h: if split { Some(transposed(&r[zr * hidden..], hidden, hidden)?) } else { None },
        })
    }
}

/// `m` (`rows × cols`, row-major) transposed and packed.
fn transposed(m: &[f32], rows: usize, cols: usize) -> Option<PackedB> {
    let t: Vec<f32> = (0..rows * cols).map(|x| m[(x % rows) * cols + x / rows]).collect();
    PackedB::new(&t, cols, rows)
}

/// `y = a · mᵀ` for `a` of `rows × k` and `m` row-major `[n, k]`, by `packed` (`mᵀ` packed)
/// when the element type is f32 and there is one.
fn product<T: Float>(
    a: &[T],
    (rows, n, k): (usize, usize, usize),
    m: &[T],
    packed: Option<&PackedB>,
    y: &mut [T],
) -> Result<()> {
    if let Some(p) = packed
        && let Some(done) = T::packed(p, &a[..rows * k], &mut y[..rows * n])
    {
        return done;
    }
    matmul((rows, n, k), Mat::rows(a, k), Mat::rows(m, k).t(), y, false)
}

/// What one direction reads: its slices of the weights and initial states, in compute type.
pub(crate) struct DirInput<'a, T> {
    /// `[gates * hidden, input]`.
    pub w: &'a [T],
    /// `[gates * hidden, hidden]`.
    pub r: &'a [T],
    /// The same weights packed, when constant f32.
    pub packed: Option<&'a PackedDir>,
    /// `[2 * gates * hidden]`: Wb then Rb.
    pub b: Option<&'a [T]>,
    /// `[3 * hidden]`: peepholes i, o, f.
    pub p: Option<&'a [T]>,
    /// `[batch, hidden]`.
    pub h0: Option<&'a [T]>,
    /// `[batch, hidden]`.
    pub c0: Option<&'a [T]>,
    pub acts: &'a [Activation],
    pub reverse: bool,
}

/// What one direction produces.
pub(crate) struct DirOutput<T> {
    /// `[seq, batch, hidden]`, when Y is wanted.
    pub y: Option<Vec<T>>,
    /// Final hidden state `[batch, hidden]`.
    pub h: Vec<T>,
    /// Final cell state `[batch, hidden]` (LSTM; empty otherwise).
    pub c: Vec<T>,
}

/// The sizes and settings of one direction's run.
pub(crate) struct Recurrence<'a> {
    pub cell: Cell,
    pub seq: usize,
    pub batch: usize,
    pub input: usize,
    pub hidden: usize,
    pub clip: Option<f32>,
    pub want_y: bool,
    pub lens: Option<&'a [usize]>,
}

impl Recurrence<'_> {
    /// Runs the recurrence of one direction over the whole sequence `x` (`[seq, batch, input]`).
    pub(crate) fn run<T: Float>(&self, x: &[T], inp: &DirInput<'_, T>) -> Result<DirOutput<T>> {
        let Recurrence { cell, seq, batch, input, hidden: h, .. } = *self;
        let gh = cell.gates() * h;
        let lbr = matches!(cell, Cell::Gru { linear_before_reset: true });
        let clip = self.clip.map(|c| T::from_f64(c as f64));
        let clip = |v: &mut [T]| {
            if let Some(c) = clip {
                for x in v {
                    *x = if *x > c {
                        c
                    } else if *x < -c {
                        -c
                    } else {
                        *x
                    };
                }
            }
        };
        let act = |i: usize| inp.acts.get(i).copied().ok_or_else(|| Error::invalid("missing activation function"));

        // Every step's input projection at once: xw[t * batch + b] = X[t, b] @ W^T.
        let mut xw = vec![T::ZERO; seq * batch * gh];
        product(x, (seq * batch, gh, input), inp.w, inp.packed.map(|p| &p.w), &mut xw)?;
        let mut rbh: Option<&[T]> = None;
        if let Some(bias) = inp.b {
            let (wb, rb) = bias.split_at(gh);
            // The reset gate scales GRU's Rbh under linear_before_reset, so it stays apart.
            if lbr {
                rbh = Some(&rb[2 * h..]);
            }
            let folded: Vec<T> =
                wb.iter().zip(rb).enumerate().map(|(j, (w, r))| if lbr && j >= 2 * h { *w } else { *w + *r }).collect();
            for row in xw.chunks_exact_mut(gh) {
                for (v, b) in row.iter_mut().zip(&folded) {
                    *v += *b;
                }
            }
        }

        let mut hs = inp.h0.map_or_else(|| vec![T::ZERO; batch * h], <[T]>::to_vec);
        let mut cs = match cell {
            Cell::Lstm { .. } => inp.c0.map_or_else(|| vec![T::ZERO; batch * h], <[T]>::to_vec),
            _ => Vec::new(),
        };
        let mut y = self.want_y.then(|| vec![T::ZERO; seq * batch * h]);
        let mut rec = vec![T::ZERO; batch * gh];
        // One batch entry's gate pre-activations, then activations; and a hidden-wide scratch.
        let (mut gate, mut tmp) = (vec![T::ZERO; gh], vec![T::ZERO; h]);
        // GRU without linear_before_reset: `r ⊙ H` and its product with Rh.
        let (mut rh, mut rh_r) = match cell {
            Cell::Gru { linear_before_reset: false } => (vec![T::ZERO; batch * h], vec![T::ZERO; batch * h]),
            _ => (Vec::new(), Vec::new()),
        };
        let r_all = inp.packed.map(|p| &p.r);

        for s in 0..seq {
            let t = if inp.reverse { seq - 1 - s } else { s };
            let active = |b: usize| self.lens.is_none_or(|l| t < l[b]);
            if !(0..batch).any(active) {
                continue;
            }
            let xt = &xw[t * batch * gh..(t + 1) * batch * gh];
            match cell {
                Cell::Rnn => {
                    let f = act(0)?;
                    product(&hs, (batch, h, h), inp.r, r_all, &mut rec)?;
                    for b in (0..batch).filter(|b| active(*b)) {
                        let g = &mut gate[..h];
                        for ((g, xv), rv) in g.iter_mut().zip(&xt[b * h..]).zip(&rec[b * h..]) {
                            *g = *xv + *rv;
                        }
                        clip(g);
                        f.apply(g);
                        hs[b * h..(b + 1) * h].copy_from_slice(g);
                    }
                }
                Cell::Lstm { input_forget } => {
                    let (f, g_act, h_act) = (act(0)?, act(1)?, act(2)?);
                    product(&hs, (batch, gh, h), inp.r, r_all, &mut rec)?;
                    for b in (0..batch).filter(|b| active(*b)) {
                        // Gates i, o, f, c; peepholes i, o, f.
                        for ((g, pv), xv) in gate.iter_mut().zip(&rec[b * gh..]).zip(&xt[b * gh..]) {
                            *g = *pv + *xv;
                        }
                        let (hrow, crow) = (&mut hs[b * h..(b + 1) * h], &mut cs[b * h..(b + 1) * h]);
                        let (i, rest) = gate.split_at_mut(h);
                        let (o, rest) = rest.split_at_mut(h);
                        let (fg, c) = rest.split_at_mut(h);
                        if let Some(p) = inp.p {
                            for j in 0..h {
                                i[j] += p[j] * crow[j];
                                fg[j] += p[2 * h + j] * crow[j];
                            }
                        }
                        clip(i);
                        f.apply(i);
                        if input_forget {
                            for (fv, iv) in fg.iter_mut().zip(i.iter()) {
                                *fv = T::ONE - *iv;
                            }
                        } else {
                            clip(fg);
                            f.apply(fg);
                        }
                        clip(c);
                        g_act.apply(c);
                        for j in 0..h {
                            crow[j] = fg[j] * crow[j] + i[j] * c[j];
                        }
                        if let Some(p) = inp.p {
                            for j in 0..h {
                                o[j] += p[h + j] * crow[j];
                            }
                        }
                        clip(o);
                        f.apply(o);
                        tmp.copy_from_slice(crow);
                        h_act.apply(&mut tmp);
                        for ((hv, ov), cv) in hrow.iter_mut().zip(o.iter()).zip(&tmp) {
                            *hv = *ov * *cv;
                        }
                    }
                }
                Cell::Gru { linear_before_reset: true } => {
                    let (f, g_act) = (act(0)?, act(1)?);
                    product(&hs, (batch, gh, h), inp.r, r_all, &mut rec)?;
                    for b in (0..batch).filter(|b| active(*b)) {
                        let (pre, xr) = (&rec[b * gh..(b + 1) * gh], &xt[b * gh..(b + 1) * gh]);
                        for ((g, xv), pv) in gate.iter_mut().zip(xr).zip(pre) {
                            *g = *xv + *pv;
                        }
                        let (zr, n) = gate.split_at_mut(2 * h);
                        clip(zr);
                        f.apply(zr);
                        let (z, r) = zr.split_at(h);
                        for j in 0..h {
                            let rb = rbh.map_or(T::ZERO, |rb| rb[j]);
                            n[j] = xr[2 * h + j] + r[j] * (pre[2 * h + j] + rb);
                        }
                        clip(n);
                        g_act.apply(n);
                        for ((hv, zv), nv) in hs[b * h..(b + 1) * h].iter_mut().zip(z).zip(n.iter()) {
                            *hv = (T::ONE - *zv) * *nv + *zv * *hv;
                        }
                    }
                }
                Cell::Gru { linear_before_reset: false } => {
                    let (f, g_act) = (act(0)?, act(1)?);
                    // z and r first; the candidate's recurrent product needs r ⊙ H.
                    let zr = &mut rec[..batch * 2 * h];
                    product(&hs, (batch, 2 * h, h), &inp.r[..2 * h * h], r_all, zr)?;
                    for b in 0..batch {
                        let (row, xr) = (&mut zr[b * 2 * h..(b + 1) * 2 * h], &xt[b * gh..b * gh + 2 * h]);
                        for (v, xv) in row.iter_mut().zip(xr) {
                            *v = *xv + *v;
                        }
                        clip(row);
                        f.apply(row);
                        for j in 0..h {
                            rh[b * h + j] = row[h + j] * hs[b * h + j];
                        }
                    }
                    let r_h = inp.packed.and_then(|p| p.r_h.as_ref());
                    product(&rh, (batch, h, h), &inp.r[2 * h * h..], r_h, &mut rh_r)?;
                    for b in (0..batch).filter(|b| active(*b)) {
                        let n = &mut tmp[..];
                        for ((nv, xv), rv) in n.iter_mut().zip(&xt[b * gh + 2 * h..]).zip(&rh_r[b * h..]) {
                            *nv = *xv + *rv;
                        }
                        clip(n);
                        g_act.apply(n);
                        let z = &rec[b * 2 * h..b * 2 * h + h];
                        for ((hv, zv), nv) in hs[b * h..(b + 1) * h].iter_mut().zip(z).zip(n.iter()) {
                            *hv = (T::ONE - *zv) * *nv + *zv * *hv;
                        }
                    }
                }
            }
            if let Some(y) = y.as_mut() {
                for b in (0..batch).filter(|b| active(*b)) {
                    let dst = (t * batch + b) * h;
                    y[dst..dst + h].copy_from_slice(&hs[b * h..(b + 1) * h]);
                }
            }
        }
        Ok(DirOutput { y, h: hs, c: cs })
    }
}
