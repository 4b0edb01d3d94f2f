//! The reduction engine shared by every `Reduce*` op and the normalisations: a reduction is a
//! [`Fold`] (state, step, merge, read-out), and [`reduce_fold`] applies one over any set of
//! axes.
//!
//! Axes are merged into runs of kept and reduced extents first. A reduced innermost run is a
//! per-row fold; a kept innermost run folds whole input rows into output rows, which is
//! contiguous and vectorizes. Work is split on rayon along the outermost kept run, or across
//! the input when everything is reduced.

use rayon::prelude::*;

use super::elem::{Acc, RElem};
use crate::par::{ELEMENTS as PAR_MIN, GRAIN};

/// A reduction as a fold: a state per output, a step per element, a merge of two partial
/// states (for lanes and threads), and a read-out.
pub(crate) trait Fold<A: Acc>: Sync {
    type S: Copy + Send + Sync;
    fn init(&self) -> Self::S;
    fn step(&self, s: Self::S, x: A) -> Self::S;
    fn merge(&self, a: Self::S, b: Self::S) -> Self::S;
    fn out(&self, s: Self::S) -> A;
}

/// Sum of `map(x)`.
pub(crate) struct SumOf<M>(pub(crate) M);

impl<A: Acc, M: Fn(A) -> A + Sync> Fold<A> for SumOf<M> {
    type S = A;
    fn init(&self) -> A {
        A::ZERO
    }
    #[inline(always)]
    fn step(&self, s: A, x: A) -> A {
        s.add((self.0)(x))
    }
    #[inline(always)]
    fn merge(&self, a: A, b: A) -> A {
        a.add(b)
    }
    fn out(&self, s: A) -> A {
        s
    }
}

pub(crate) struct ProdOf;

impl<A: Acc> Fold<A> for ProdOf {
    type S = A;
    fn init(&self) -> A {
        A::ONE
    }
    #[inline(always)]
    fn step(&self, s: A, x: A) -> A {
        s.mul(x)
    }
    #[inline(always)]
    fn merge(&self, a: A, b: A) -> A {
        a.mul(b)
    }
    fn out(&self, s: A) -> A {
        s
    }
}

/// Max (`MAX = true`) or min; NaN wins, as in numpy.
pub(crate) struct Extreme<A, const MAX: bool>(pub(crate) A);

impl<A: Acc, const MAX: bool> Fold<A> for Extreme<A, MAX> {
    type S = A;
    fn init(&self) -> A {
        self.0
    }
    #[inline(always)]
    fn step(&self, s: A, x: A) -> A {
        let better = if MAX { x > s } else { x < s };
        if better || x.is_nan() { x } else { s }
    }
    #[inline(always)]
    fn merge(&self, a: A, b: A) -> A {
        self.step(a, b)
    }
    fn out(&self, s: A) -> A {
        s
    }
}

/// Log-sum-exp in one pass: the state is (running max, sum of exp(x - max)), rescaled when the
/// max grows, so no exponential overflows.
pub(crate) struct LogSumExp;

impl<A: Acc> Fold<A> for LogSumExp {
    type S = (A, A);
    fn init(&self) -> (A, A) {
        (A::from_f64(f64::NEG_INFINITY), A::ZERO)
    }
    #[inline(always)]
    fn step(&self, (m, s): (A, A), x: A) -> (A, A) {
        if x > m {
            (x, s.mul(m.sub(x).exp()).add(A::ONE))
        } else if x == m {
            // Also covers x = m = ±inf, where x - m would be NaN.
            (m, s.add(A::ONE))
        } else {
            (m, s.add(x.sub(m).exp()))
        }
    }
    fn merge(&self, (m1, s1): (A, A), (m2, s2): (A, A)) -> (A, A) {
        if m1 == m2 {
            (m1, s1.add(s2))
        } else if m1 > m2 {
            (m1, s1.add(s2.mul(m2.sub(m1).exp())))
        } else if m2 > m1 {
            (m2, s2.add(s1.mul(m1.sub(m2).exp())))
        } else {
            (A::from_f64(f64::NAN), A::ZERO)
        }
    }
    fn out(&self, (m, s): (A, A)) -> A {
        A::from_f64(s.to_f64().ln() + m.to_f64())
    }
}

/// Folds `x` (row-major `shape`) over the masked axes; the result is in row-major order of
/// the kept axes.
pub(crate) fn reduce_fold<T: RElem, F: Fold<T::A>>(f: &F, x: &[T], shape: &[usize], mask: &[bool]) -> Vec<T::A> {
    let out_n: usize = shape.iter().zip(mask).filter(|(_, r)| !**r).map(|(d, _)| *d).product();
    let mut acc = vec![f.init(); out_n];
    if x.is_empty() || out_n == 0 {
        return acc.into_iter().map(|s| f.out(s)).collect();
    }
    // Runs of kept / reduced extents; extents of 1 change no layout and are dropped.
    let mut cd: Vec<usize> = Vec::new();
    let mut red: Vec<bool> = Vec::new();
    for (&d, &r) in shape.iter().zip(mask) {
        if d == 1 {
            continue;
        }
        match (cd.last_mut(), red.last()) {
            (Some(l), Some(&lr)) if lr == r => *l *= d,
            _ => {
                cd.push(d);
                red.push(r);
            }
        }
    }
    if cd.is_empty() {
        cd.push(1);
        red.push(false);
    }
    if cd.len() == 1 && red[0] {
        acc[0] = fold_all(f, x);
    } else {
        fold_runs(f, x, &cd, &red, &mut acc);
    }
    acc.into_iter().map(|s| f.out(s)).collect()
}

/// Folds a contiguous row into one state with eight independent lanes: it breaks the
/// dependency chain (so the loop vectorizes) and keeps float sums more accurate.
#[inline]
fn fold_row<T: RElem, F: Fold<T::A>>(f: &F, s: F::S, x: &[T]) -> F::S {
    let mut lanes = [f.init(); 8];
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l = f.step(*l, v.load());
        }
    }
    let mut tail = f.init();
    for v in chunks.remainder() {
        tail = f.step(tail, v.load());
    }
    let l = lanes;
    let a = f.merge(f.merge(l[0], l[1]), f.merge(l[2], l[3]));
    let b = f.merge(f.merge(l[4], l[5]), f.merge(l[6], l[7]));
    f.merge(s, f.merge(f.merge(a, b), tail))
}

/// Everything reduced: split the input across threads and merge the partial states.
fn fold_all<T: RElem, F: Fold<T::A>>(f: &F, x: &[T]) -> F::S {
    if x.len() < PAR_MIN || crate::par::serial() {
        return fold_row(f, f.init(), x);
    }
    x.par_chunks(GRAIN * 4).map(|c| fold_row(f, f.init(), c)).reduce(|| f.init(), |a, b| f.merge(a, b))
}

/// The general case over merged runs `cd` (alternating kept and reduced).
fn fold_runs<T: RElem, F: Fold<T::A>>(f: &F, x: &[T], cd: &[usize], red: &[bool], acc: &mut [F::S]) {
    let m = cd.len();
    let mut istride = vec![1usize; m];
    for i in (0..m - 1).rev() {
        istride[i] = istride[i + 1] * cd[i + 1];
    }
    let mut ostride = vec![0usize; m];
    let mut s = 1usize;
    for i in (0..m).rev() {
        if !red[i] {
            ostride[i] = s;
            s *= cd[i];
        }
    }
    // The outermost kept run: its output rows are contiguous, so it is where threads split.
    let Some(j) = red.iter().position(|r| !r) else { return };
    let geo = Runs { cd, red, istride: &istride, ostride: &ostride, split: j };
    let piece = ostride[j];
    let work_per_index = x.len() / cd[j];
    if x.len() < PAR_MIN || cd[j] < 2 || crate::par::serial() {
        geo.fold(f, x, 0, cd[j], acc);
        return;
    }
    let per = (GRAIN / work_per_index.max(1)).max(1);
    acc.par_chunks_mut(per * piece).enumerate().for_each(|(c, out)| {
        let lo = c * per;
        geo.fold(f, x, lo, (lo + per).min(cd[j]), out);
    });
}

struct Runs<'a> {
    cd: &'a [usize],
    red: &'a [bool],
    istride: &'a [usize],
    ostride: &'a [usize],
    split: usize,
}

impl Runs<'_> {
    /// Folds the part of `x` whose index along run `split` is in `lo..hi` into `out`, the
    /// matching slice of the output.
    fn fold<T: RElem, F: Fold<T::A>>(&self, f: &F, x: &[T], lo: usize, hi: usize, out: &mut [F::S]) {
        let (cd, j) = (self.cd, self.split);
        let last = cd.len() - 1;
        let (a, b) = if j == last { (lo, hi) } else { (0, cd[last]) };
        let mut idx = vec![0usize; last];
        if j < last {
            idx[j] = lo;
        }
        loop {
            let mut ioff = 0;
            let mut ooff = 0;
            for (i, &ix) in idx.iter().enumerate() {
                ioff += ix * self.istride[i];
                if !self.red[i] {
                    ooff += (ix - if i == j { lo } else { 0 }) * self.ostride[i];
                }
            }
            let row = x.get(ioff + a..ioff + b).unwrap_or(&[]);
            if self.red[last] {
                if let Some(o) = out.get_mut(ooff) {
                    *o = fold_row(f, *o, row);
                }
            } else if let Some(o) = out.get_mut(ooff..ooff + row.len()) {
                for (o, v) in o.iter_mut().zip(row) {
                    *o = f.step(*o, v.load());
                }
            }
            // Advance the odometer over every run but the last, keeping run `split` in lo..hi.
            let mut i = last;
            loop {
                if i == 0 {
                    return;
                }
                i -= 1;
                idx[i] += 1;
                let end = if i == j { hi } else { cd[i] };
                if idx[i] < end {
                    break;
                }
                idx[i] = if i == j { lo } else { 0 };
            }
        }
    }
}
