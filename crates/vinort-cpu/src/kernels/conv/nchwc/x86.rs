//! The NCHWc tiles for AVX-512F and for AVX2 with FMA ([`super::Tiles`]).

use std::arch::x86_64::*;

use super::{BLOCK, RegularTile};

/// `v < lo ? lo : v`, then `x > hi ? hi : x` ([`crate::kernels::epilogue::Act::clamp`]),
/// bit for bit: `vmaxps`/`vminps` return their second operand when either is NaN or both
/// are zeros, so with `v` second NaN and -0 pass as in the scalar form. Branch-free and
/// applied to every tile (`[-∞, ∞]` is the identity): a branch here grew the tile past
/// what LLVM fully unrolls, and the rolled tile ran MobileNetV2 at half speed.
#[inline]
#[target_feature(enable = "avx512f")]
fn clamp(v: __m512, lo: __m512, hi: __m512) -> __m512 {
    _mm512_min_ps(hi, _mm512_max_ps(lo, v))
}

/// `NOB` output blocks × `R` pixels of a regular conv: every tap, every input channel, one
/// broadcast input value times one weight vector per block into `NOB·R` registers; then
/// `+ bias (+ z)`, the clamp and the stores.
///
/// # Safety
///
/// The CPU has AVX-512F. For every tap `(t, tw)`, input channel `ic` and pixel `r < R`,
/// `x + t + (ic / lpb)·blk + (ic % lpb)·lane + r·px` is readable, and `cin·16` weights
/// from `w + o·wob + tw` for `o < NOB` are; `w` holds `NOB` blocks of `wob`
/// elements (`[tap][cin][16]` each); `b` holds `16·NOB` biases; the lanes of `masks[o]`
/// at `y[o] + r·ys` (and `z[o]`) for `r < R` are valid, those of `y[o]` written by no one
/// else meanwhile. `PX` is 0, or the context's `px` with `lane` 1. With `from_y` the sums
/// start from the masked lanes at `y` (a previous pass over other input channels); without
/// `finish` they are stored as they are, with no bias, `z` or clamp.
// Indexing `acc[o][r]` by both loop counters keeps the fully unrolled nest plain.
#[allow(clippy::needless_range_loop)]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn regular_tile<const NOB: usize, const R: usize, const PX: usize>(
    c: &RegularTile<'_>,
    x: *const f32,
    w: *const f32,
    b: *const f32,
    y: [*mut f32; 2],
    z: Option<[*const f32; 2]>,
    masks: [u16; 2],
) {
    // SAFETY: every pointer formed and read below stays within the bounds of the
    // contract, and the CPU has AVX-512F.
    unsafe {
        let mut acc = [[_mm512_setzero_ps(); R]; NOB];
        if c.from_y {
            for o in 0..NOB {
                for r in 0..R {
                    acc[o][r] = _mm512_maskz_loadu_ps(masks[o], y[o].add(r * c.ys));
                }
            }
        }
        // A stride known at compile time makes every pixel's address a constant displacement.
        let (px, lane) = if PX == 0 { (c.px, c.lane) } else { (PX, 1) };
        let full = c.cin / c.lpb;
        let rest = c.cin % c.lpb;
        for &(toff, woff) in c.taps {
            let wt = w.add(woff);
            let xt = x.add(toff);
            // Whole blocks, then the partial one (only when there is one, so that no pointer
            // is formed past the input). A plain counted loop: an iterator chain here was
            // not inlined into this AVX-512 function and cost ResNet-50 a fifth of its time.
            for blk in 0..full + usize::from(rest > 0) {
                let lanes = if blk < full { c.lpb } else { rest };
                let xb = xt.add(blk * c.blk);
                let wb = wt.add(blk * c.lpb * BLOCK);
                for l in 0..lanes {
                    let mut wv = [_mm512_setzero_ps(); NOB];
                    for (o, v) in wv.iter_mut().enumerate() {
                        *v = _mm512_loadu_ps(wb.add(o * c.wob + l * BLOCK));
                    }
                    for r in 0..R {
                        let xv = _mm512_set1_ps(*xb.add(r * px + l * lane));
                        for o in 0..NOB {
                            acc[o][r] = _mm512_fmadd_ps(xv, wv[o], acc[o][r]);
                        }
                    }
                }
            }
        }
        if !c.finish {
            for o in 0..NOB {
                for r in 0..R {
                    _mm512_mask_storeu_ps(y[o].add(r * c.ys), masks[o], acc[o][r]);
                }
            }
            return;
        }
        let (lo, hi) = (_mm512_set1_ps(c.clamp[0]), _mm512_set1_ps(c.clamp[1]));
        for o in 0..NOB {
            let bv = _mm512_loadu_ps(b.add(o * BLOCK));
            for (r, a) in acc[o].iter().enumerate() {
                let mut v = _mm512_add_ps(*a, bv);
                if let Some(z) = z {
                    v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(masks[o], z[o].add(r * c.ys)));
                }
                v = clamp(v, lo, hi);
                _mm512_mask_storeu_ps(y[o].add(r * c.ys), masks[o], v);
            }
        }
    }
}

/// `R` pixels of one block of a depthwise conv: per tap, the 16 channels of each pixel times
/// their 16 weights; then `+ bias (+ z)`, the clamp `lh` and the stores.
///
/// # Safety
///
/// The CPU has AVX-512F. For every tap `(t, v)` and pixel `r < R`, the 16 elements at
/// `x + t + r·px` are readable, and the 16 weights at `w + v`; `b` 16 biases; `y` (and `z`)
/// `16·R` elements, `y` written by no one else meanwhile.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn depthwise_tile<const R: usize>(
    taps: &[(usize, usize)],
    px: usize,
    x: *const f32,
    w: *const f32,
    b: *const f32,
    y: *mut f32,
    z: Option<*const f32>,
    [lo, hi]: [f32; 2],
) {
    // SAFETY: every pointer formed and read below stays within the bounds of the
    // contract, and the CPU has AVX-512F.
    unsafe {
        let mut acc = [_mm512_setzero_ps(); R];
        for &(toff, woff) in taps {
            let wv = _mm512_loadu_ps(w.add(woff));
            let xt = x.add(toff);
            for (r, a) in acc.iter_mut().enumerate() {
                *a = _mm512_fmadd_ps(_mm512_loadu_ps(xt.add(r * px)), wv, *a);
            }
        }
        let bv = _mm512_loadu_ps(b);
        let (lo, hi) = (_mm512_set1_ps(lo), _mm512_set1_ps(hi));
        for (r, a) in acc.iter().enumerate() {
            let mut v = _mm512_add_ps(*a, bv);
            if let Some(z) = z {
                v = _mm512_add_ps(v, _mm512_loadu_ps(z.add(r * BLOCK)));
            }
            v = clamp(v, lo, hi);
            _mm512_storeu_ps(y.add(r * BLOCK), v);
        }
    }
}

/// [`clamp`] for AVX2: the same operand order, so NaN and -0 pass alike.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn clamp8(v: __m256, lo: __m256, hi: __m256) -> __m256 {
    _mm256_min_ps(hi, _mm256_max_ps(lo, v))
}

/// The lanes of one half of a block (bits 0..8 of `bits`) as an AVX2 load/store mask.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn half_mask(bits: u16) -> __m256i {
    let sel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(i32::from(bits & 0xFF)), sel), sel)
}

/// One output block × `R` pixels of a regular conv with AVX2: the block's 16 lanes are two
/// registers; otherwise as [`regular_tile`] with `NOB = 1`.
///
/// # Safety
///
/// The CPU has AVX2 and FMA; the rest as [`regular_tile`] for one block (`y`, `z`, `mask`
/// are block 0's).
#[allow(clippy::needless_range_loop)]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn regular_tile_avx2<const R: usize, const PX: usize>(
    c: &RegularTile<'_>,
    x: *const f32,
    w: *const f32,
    b: *const f32,
    y: *mut f32,
    z: Option<*const f32>,
    mask: u16,
) {
    // SAFETY: every pointer formed and read below stays within the bounds of the
    // contract (masked lanes are neither read nor written), and the CPU has AVX2 and FMA.
    unsafe {
        let mut acc = [[_mm256_setzero_ps(); 2]; R];
        let masks = [half_mask(mask), half_mask(mask >> 8)];
        if c.from_y {
            for r in 0..R {
                for h in 0..2 {
                    acc[r][h] = _mm256_maskload_ps(y.add(r * c.ys + 8 * h), masks[h]);
                }
            }
        }
        let (px, lane) = if PX == 0 { (c.px, c.lane) } else { (PX, 1) };
        let full = c.cin / c.lpb;
        let rest = c.cin % c.lpb;
        for &(toff, woff) in c.taps {
            let wt = w.add(woff);
            let xt = x.add(toff);
            for blk in 0..full + usize::from(rest > 0) {
                let lanes = if blk < full { c.lpb } else { rest };
                let xb = xt.add(blk * c.blk);
                let wb = wt.add(blk * c.lpb * BLOCK);
                for l in 0..lanes {
                    let w0 = _mm256_loadu_ps(wb.add(l * BLOCK));
                    let w1 = _mm256_loadu_ps(wb.add(l * BLOCK + 8));
                    for r in 0..R {
                        let xv = _mm256_broadcast_ss(&*xb.add(r * px + l * lane));
                        acc[r][0] = _mm256_fmadd_ps(xv, w0, acc[r][0]);
                        acc[r][1] = _mm256_fmadd_ps(xv, w1, acc[r][1]);
                    }
                }
            }
        }
        if !c.finish {
            for r in 0..R {
                for h in 0..2 {
                    _mm256_maskstore_ps(y.add(r * c.ys + 8 * h), masks[h], acc[r][h]);
                }
            }
            return;
        }
        let (lo, hi) = (_mm256_set1_ps(c.clamp[0]), _mm256_set1_ps(c.clamp[1]));
        let bv = [_mm256_loadu_ps(b), _mm256_loadu_ps(b.add(8))];
        for (r, a) in acc.iter().enumerate() {
            for h in 0..2 {
                let at = r * c.ys + 8 * h;
                let mut v = _mm256_add_ps(a[h], bv[h]);
                if let Some(z) = z {
                    let zv = if mask == u16::MAX {
                        _mm256_loadu_ps(z.add(at))
                    } else {
                        _mm256_maskload_ps(z.add(at), masks[h])
                    };
                    v = _mm256_add_ps(v, zv);
                }
                v = clamp8(v, lo, hi);
                if mask == u16::MAX {
                    _mm256_storeu_ps(y.add(at), v);
                } else {
                    _mm256_maskstore_ps(y.add(at), masks[h], v);
                }
            }
        }
    }
}

/// `R` pixels of one block of a depthwise conv with AVX2 (two registers per pixel);
/// otherwise as [`depthwise_tile`].
///
/// # Safety
///
/// The CPU has AVX2 and FMA; the rest as [`depthwise_tile`].
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn depthwise_tile_avx2<const R: usize>(
    taps: &[(usize, usize)],
    px: usize,
    x: *const f32,
    w: *const f32,
    b: *const f32,
    y: *mut f32,
    z: Option<*const f32>,
    [lo, hi]: [f32; 2],
) {
    // SAFETY: every pointer formed and read below stays within the bounds of the
    // contract, and the CPU has AVX2 and FMA.
    unsafe {
        let mut acc = [[_mm256_setzero_ps(); 2]; R];
        for &(toff, woff) in taps {
            let (w0, w1) = (_mm256_loadu_ps(w.add(woff)), _mm256_loadu_ps(w.add(woff + 8)));
            let xt = x.add(toff);
            for (r, a) in acc.iter_mut().enumerate() {
                a[0] = _mm256_fmadd_ps(_mm256_loadu_ps(xt.add(r * px)), w0, a[0]);
                a[1] = _mm256_fmadd_ps(_mm256_loadu_ps(xt.add(r * px + 8)), w1, a[1]);
            }
        }
        let bv = [_mm256_loadu_ps(b), _mm256_loadu_ps(b.add(8))];
        let (lo, hi) = (_mm256_set1_ps(lo), _mm256_set1_ps(hi));
        for (r, a) in acc.iter().enumerate() {
            for h in 0..2 {
                let at = r * BLOCK + 8 * h;
                let mut v = _mm256_add_ps(a[h], bv[h]);
                if let Some(z) = z {
                    v = _mm256_add_ps(v, _mm256_loadu_ps(z.add(at)));
                }
                _mm256_storeu_ps(y.add(at), clamp8(v, lo, hi));
            }
        }
    }
}
