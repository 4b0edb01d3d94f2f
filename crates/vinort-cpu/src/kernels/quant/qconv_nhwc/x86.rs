//! The AVX-512 forms of the depthwise row and of the requantization, written with intrinsics:
//! the compiler's own vectorization of the portable loops stores each 8-bit result with a
//! memory-destination `vpmovdb` (slow on AMD cores) and keeps tap bookkeeping in the inner loop.

use std::arch::x86_64::*;

use super::{Dw, LANES, Q8, Requant, dw_row_body, requant_body};
use crate::kernels::quant::round::requant_bounds;
use crate::kernels::window::valid_range;
use crate::qgemm::narrow16;

/// Taps a pixel's offset table holds; larger kernels take the portable loop.
const MAX_TAPS: usize = 64;

/// 16 elements of `X` from `p`, widened to i32.
#[inline(always)]
unsafe fn widen16<X: Q8>(p: *const X) -> __m512i {
    // SAFETY: the caller guarantees 16 readable elements at p.
    unsafe {
        let v = _mm_loadu_si128(p.cast());
        if X::SIGNED { _mm512_cvtepi8_epi32(v) } else { _mm512_cvtepu8_epi32(v) }
    }
}

/// Requantizes 16 sums of channels `c0..c0 + 16` (bias not yet added) to i32 values inside
/// Y's range: `requant_body`'s formula (the f32 product clamped to the range less the zero
/// point, rounded half to even by the conversion, plus the zero point).
#[inline(always)]
pub(super) unsafe fn rq16_i32(q: &Requant<'_>, c0: usize, acc: __m512i) -> __m512i {
    // SAFETY: the caller guarantees channels c0..c0 + 16 exist in q's slices.
    unsafe {
        let a = _mm512_add_epi32(acc, _mm512_loadu_si512(q.bias.as_ptr().add(c0).cast()));
        let v = _mm512_mul_ps(_mm512_cvtepi32_ps(a), _mm512_loadu_ps(q.mult.as_ptr().add(c0)));
        let (lo, hi) = requant_bounds(q.zy, q.range);
        let v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(lo)), _mm512_set1_ps(hi));
        let r = _mm512_cvt_roundps_epi32::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
        _mm512_add_epi32(r, _mm512_set1_epi32(q.zy))
    }
}

/// 16 i32 values to 16 bytes of `Y`, saturating.
#[inline(always)]
unsafe fn pack16<Y: Q8>(v: __m512i) -> __m128i {
    // SAFETY: the caller has AVX-512 (F/BW/VL); register operations only.
    unsafe { narrow16(v, Y::SIGNED) }
}

/// Four vectors of 16 i32 values to 64 bytes of `Y`, saturating, in the packs' order: dword
/// `4L + k` holds lanes `4L..4L + 4` of `v[k]`.
#[inline(always)]
pub(super) unsafe fn pack64<Y: Q8>(v: [__m512i; 4]) -> __m512i {
    // SAFETY: the caller has AVX-512 (F/BW); register operations only.
    unsafe {
        let (a, b) = (_mm512_packs_epi32(v[0], v[1]), _mm512_packs_epi32(v[2], v[3]));
        if Y::SIGNED { _mm512_packs_epi16(a, b) } else { _mm512_packus_epi16(a, b) }
    }
}

/// Requantizes 16 sums of channels `c0..c0 + 16` to 16 bytes of `Y`: `requant_body`'s values.
#[inline(always)]
unsafe fn rq16<Y: Q8>(q: &Requant<'_>, c0: usize, acc: __m512i) -> __m128i {
    // SAFETY: forwarded from the caller.
    unsafe { pack16::<Y>(rq16_i32(q, c0, acc)) }
}

/// `requant_body` over rows of `q.bias.len()` channels (`acc` and `out` hold whole rows): 64
/// channels at a time, then 16, then the last few through a zero-padded copy.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
pub(super) fn requant_avx512<Y: Q8>(q: &Requant<'_>, acc: &[i32], out: &mut [Y]) {
    let m = q.bias.len();
    assert!(m > 0 && q.mult.len() == m, "requantization parameters per channel");
    let full = m - m % LANES;
    // Dword 4k + L of the result is dword 4L + k of the packs.
    let order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    // The last m − full channels' parameters, zero-padded to a vector.
    let (mut mult, mut bias) = ([0f32; LANES], [0i32; LANES]);
    mult[..m - full].copy_from_slice(&q.mult[full..]);
    bias[..m - full].copy_from_slice(&q.bias[full..]);
    let tail = Requant { mult: &mult, bias: &bias, ..*q };
    for (acc, out) in acc.chunks_exact(m).zip(out.chunks_exact_mut(m)) {
        let mut c0 = 0;
        while c0 + 4 * LANES <= full {
            // SAFETY: c0 + 64 <= m, within every slice.
            unsafe {
                let (a, p) = (acc.as_ptr().add(c0), c0 + LANES);
                let v = pack64::<Y>([
                    rq16_i32(q, c0, _mm512_loadu_si512(a.cast())),
                    rq16_i32(q, p, _mm512_loadu_si512(a.add(LANES).cast())),
                    rq16_i32(q, p + LANES, _mm512_loadu_si512(a.add(2 * LANES).cast())),
                    rq16_i32(q, p + 2 * LANES, _mm512_loadu_si512(a.add(3 * LANES).cast())),
                ]);
                _mm512_storeu_si512(out.as_mut_ptr().add(c0).cast(), _mm512_permutexvar_epi32(order, v));
            }
            c0 += 4 * LANES;
        }
        for c0 in (c0..full).step_by(LANES) {
            // SAFETY: c0 + 16 <= m, within every slice.
            unsafe {
                let v = rq16::<Y>(q, c0, _mm512_loadu_si512(acc.as_ptr().add(c0).cast()));
                _mm_storeu_si128(out.as_mut_ptr().add(c0).cast(), v);
            }
        }
        if full < m {
            let mut a = [0i32; LANES];
            a[..m - full].copy_from_slice(&acc[full..]);
            let mut bytes = [Y::default(); LANES];
            // SAFETY: the padded copies hold 16 channels; `bytes` holds 16 elements of one byte.
            unsafe {
                let v = rq16::<Y>(&tail, 0, _mm512_loadu_si512(a.as_ptr().cast()));
                _mm_storeu_si128(bytes.as_mut_ptr().cast(), v);
            }
            out[full..].copy_from_slice(&bytes[..m - full]);
        }
    }
}

/// `dw_row_body` with the taps of each pixel listed once and 64 or 16 channels summed per
/// pass over them.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
pub(super) fn dw_row_avx512<X: Q8, Y: Q8>(d: &Dw<'_>, x: &[X], oy: usize, y: &mut [Y]) {
    let g = d.g;
    let (c, ih, iw, ow) = (g.c, g.i[1], g.i[2], g.o[2]);
    let (kh, kw, sy, sx, dy, dx) = (g.k[1], g.k[2], g.s[1], g.s[2], g.d[1], g.d[2]);
    if kh * kw > MAX_TAPS || y.len() < ow * c || d.w.len() < kh * kw * c || x.len() < ih * iw * c {
        return dw_row_body(d, x, oy, y);
    }
    let y0 = (oy * sy) as isize - g.p[1];
    let (ky0, ky1) = valid_range(kh, ih, dy, y0);
    let full = c - c % LANES;
    let zx = _mm512_set1_epi32(d.zx);
    let mut offs = [(0usize, 0usize); MAX_TAPS];
    // Pixels whose window lies inside the image across (ox in in0..in1) share this row's
    // taps, shifted: (offset at input column 0, filter offset).
    let span = (kw - 1) * dx + 1;
    let (in0, in1) = if iw >= span { valid_range(ow, iw - span + 1, sx, -g.p[2]) } else { (0, 0) };
    let mut rel = [(0usize, 0usize); MAX_TAPS];
    let mut nrel = 0;
    for ky in ky0..ky1 {
        let iy = (y0 + (ky * dy) as isize) as usize;
        for kx in 0..kw {
            rel[nrel] = ((iy * iw + kx * dx) * c, (ky * kw + kx) * c);
            nrel += 1;
        }
    }
    for ox in 0..ow {
        let x0 = (ox * sx) as isize - g.p[2];
        let mut n = 0;
        if (in0..in1).contains(&ox) {
            let shift = x0 as usize * c;
            for (o, r) in offs.iter_mut().zip(&rel[..nrel]) {
                *o = (r.0 + shift, r.1);
            }
            n = nrel;
        } else {
            let (kx0, kx1) = valid_range(kw, iw, dx, x0);
            for ky in ky0..ky1 {
                let iy = (y0 + (ky * dy) as isize) as usize;
                for kx in kx0..kx1 {
                    let ix = (x0 + (kx * dx) as isize) as usize;
                    offs[n] = ((iy * iw + ix) * c, (ky * kw + kx) * c);
                    n += 1;
                }
            }
        }
        let taps = &offs[..n];
        let out = &mut y[ox * c..][..c];
        let (xp, wp) = (x.as_ptr(), d.w.as_ptr());
        // SAFETY: every (iy, ix) is inside the image and every tap inside the filter (the
        // valid ranges), so x[xo + c0..][..16] and w[wo + c0..][..16] are in bounds for
        // c0 + 16 <= c (lengths checked above); out has c elements.
        unsafe {
            let mut c0 = 0;
            while c0 + 4 * LANES <= full {
                let mut acc = [_mm512_setzero_si512(); 4];
                for &(xo, wo) in taps {
                    for (j, a) in acc.iter_mut().enumerate() {
                        let at = c0 + j * LANES;
                        let xv = _mm512_sub_epi32(widen16(xp.add(xo + at)), zx);
                        let wv = _mm512_loadu_si512(wp.add(wo + at).cast());
                        *a = _mm512_add_epi32(*a, _mm512_mullo_epi32(xv, wv));
                    }
                }
                for (j, a) in acc.into_iter().enumerate() {
                    let at = c0 + j * LANES;
                    _mm_storeu_si128(out.as_mut_ptr().add(at).cast(), rq16::<Y>(&d.q, at, a));
                }
                c0 += 4 * LANES;
            }
            while c0 < full {
                let mut a = _mm512_setzero_si512();
                for &(xo, wo) in taps {
                    let xv = _mm512_sub_epi32(widen16(xp.add(xo + c0)), zx);
                    let wv = _mm512_loadu_si512(wp.add(wo + c0).cast());
                    a = _mm512_add_epi32(a, _mm512_mullo_epi32(xv, wv));
                }
                _mm_storeu_si128(out.as_mut_ptr().add(c0).cast(), rq16::<Y>(&d.q, c0, a));
                c0 += LANES;
            }
        }
        if full < c {
            let mut acc = [0i32; LANES];
            for &(xo, wo) in taps {
                for (l, a) in acc[..c - full].iter_mut().enumerate() {
                    *a += (x[xo + full + l].to_i32() - d.zx) * d.w[wo + full + l];
                }
            }
            let q = Requant { mult: &d.q.mult[full..], bias: &d.q.bias[full..], ..d.q };
            requant_body(&q, &acc[..c - full], &mut out[full..]);
        }
    }
}
