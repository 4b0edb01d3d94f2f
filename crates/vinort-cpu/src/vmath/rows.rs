//! Row reductions over f32 with the vectorized [`exp`]: softmax, compiled per instruction set
//! like the element loops in [`super::fun`] (fused multiply-adds on the AVX paths).
//!
//! Sums and maxima run in 16 independent lanes (then combined), which is what lets LLVM keep
//! them in one vector register: a single running f32 sum is a serial dependency it may not
//! reorder.

use super::exp;

const L: usize = 16;

/// The maximum of `x` ignoring NaN (`-inf` for an empty or all-NaN row), as a `v > m` scan
/// would find it.
#[inline(always)]
fn max(x: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; L];
    let mut chunks = x.chunks_exact(L);
    for c in &mut chunks {
        for (m, &v) in lanes.iter_mut().zip(c) {
            *m = if v > *m { v } else { *m };
        }
    }
    let mut m = f32::NEG_INFINITY;
    for &v in lanes.iter().chain(chunks.remainder()) {
        m = if v > m { v } else { m };
    }
    m
}

/// `y = exp(x − max x) / Σ exp(x − max x)`.
#[inline(always)]
fn softmax_portable<const FMA: bool>(x: &[f32], y: &mut [f32]) {
    let m = max(x);
    let mut lanes = [0.0f32; L];
    let mut xs = x.chunks_exact(L);
    let mut ys = y.chunks_exact_mut(L);
    for (xc, yc) in (&mut xs).zip(&mut ys) {
        for ((o, &v), s) in yc.iter_mut().zip(xc).zip(lanes.iter_mut()) {
            let e = exp::<FMA>(v - m);
            *o = e;
            *s += e;
        }
    }
    let mut s = 0.0;
    for (o, &v) in ys.into_remainder().iter_mut().zip(xs.remainder()) {
        let e = exp::<FMA>(v - m);
        *o = e;
        s += e;
    }
    let s = lanes.iter().sum::<f32>() + s;
    let inv = 1.0 / s;
    for o in y.iter_mut() {
        *o *= inv;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
fn softmax_avx512(x: &[f32], y: &mut [f32]) {
    softmax_portable::<true>(x, y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn softmax_avx2(x: &[f32], y: &mut [f32]) {
    softmax_portable::<true>(x, y)
}

/// Softmax of one row (`x` and `y` of one length): the row maximum is subtracted before
/// exponentiating, so no finite input overflows.
///
/// # Panics
/// If the lengths differ.
pub(crate) fn softmax_row(x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "softmax_row: length mismatch");
    #[cfg(target_arch = "x86_64")]
    {
        if crate::isa::avx512() {
            // SAFETY: the running CPU supports AVX-512F, checked just above.
            return unsafe { softmax_avx512(x, y) };
        }
        if crate::isa::avx2() {
            // SAFETY: the running CPU supports AVX2 and FMA, checked just above.
            return unsafe { softmax_avx2(x, y) };
        }
    }
    softmax_portable::<false>(x, y)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Against the definition in f64: within a few f32 ulps of each probability, and
        /// large inputs do not overflow.
        #[test]
        fn softmax_matches_definition(x in proptest::collection::vec(-80.0f32..80.0, 1..100), shift in -1e4f32..1e4) {
            let x: Vec<f32> = x.iter().map(|v| v + shift).collect();
            let mut y = vec![0.0; x.len()];
            softmax_row(&x, &mut y);
            let m = x.iter().fold(f64::NEG_INFINITY, |m, v| m.max(f64::from(*v)));
            let e: Vec<f64> = x.iter().map(|v| (f64::from(*v) - m).exp()).collect();
            let s: f64 = e.iter().sum();
            for (i, (got, e)) in y.iter().zip(&e).enumerate() {
                let want = e / s;
                prop_assert!((f64::from(*got) - want).abs() <= 4e-6 * want + 1e-37, "element {i}: {got} vs {want}");
            }
        }
    }
}
