//! The depthwise channels-last QLinearConv on AVX-512 VNNI, when every `w − zw` fits in i8
//! (symmetric int8 weights, or u8 weights around 128: what quantizers write).
//!
//! `vpdpbusd` multiplies 64 unsigned bytes by 64 signed bytes and adds each group of four
//! products into one of 16 i32 lanes. A depthwise tap has no four products to a lane, so the
//! weights are laid out to keep one: for each tap and block of 64 channels there are four weight
//! vectors, vector `j` holding channel `4i + j`'s weight in byte `4i + j` and zero in the other
//! three bytes of lane `i`. One load of 64 input channels and four `vpdpbusd` then add the
//! tap's 64 products into four accumulators, accumulator `j`'s lane `i` summing channel
//! `4i + j`: no widening, no zero-point subtraction and no multiply-and-add pair per tap, where
//! the 16-lane loop in [`super::x86`] spends four instructions per 16 channels. Per-pixel
//! bookkeeping is a pointer per tap.
//!
//! The input zero point comes out of the sums once: `Σ (x − zx)·w = Σ x·w − zx·Σ w`, with
//! `zx·Σ w` subtracted from each channel's bias at build time. Taps outside the image read a
//! row of `zx` bytes instead, so every pixel runs all taps and the border needs no other code.
//! i8 inputs are flipped to u8 by xor with 0x80 (`x + 128`), the zero point with them. The
//! multipliers and biases are stored in accumulator lane order, so the requantization
//! ([`super::x86::rq16_i32`], bit-identical to the portable formula) runs on the accumulators
//! as they are; its 64 result bytes go back to channel order with one byte shuffle. The sums are exact i32 arithmetic (wrapping, like the portable kernel's), so
//! the output is the same byte for byte (tested against the generic NCHW kernel).

use std::arch::x86_64::*;

use super::x86::{pack64, rq16_i32};
use super::{Q8, Requant};
use crate::kernels::conv::im2col::Geo3;

/// Channels per block: one vector of input bytes.
const BLOCK: usize = 64;

/// Taps a pixel's pointer table holds; larger kernels take the other loops.
const MAX_TAPS: usize = 64;

/// A depthwise filter laid out for [`DwVnni::row`], with its requantization in lane order.
pub(super) struct DwVnni {
    /// Channels.
    c: usize,
    /// `c` in blocks of 64, the last one possibly partial.
    blocks: usize,
    /// `w − zw` as i8, `[tap][block][j][64 bytes]`: vector j holds channel `64b + 4i + j`'s
    /// weight in byte `4i + j`, zero in the others.
    w: Vec<i8>,
    /// Per `[block][j][i]` (channel `64b + 4i + j`): the multiplier, and the bias less
    /// `zx′ · Σ w` (`zx′` the zero point as the sums see it, `zx + 128` for i8 inputs);
    /// padding lanes hold zeros.
    mult: Vec<f64>,
    mult32: Vec<f32>,
    bias: Vec<i32>,
    /// `zx` in X's own encoding, `blocks · 64` bytes: what a tap outside the image reads.
    pad: Vec<u8>,
}

impl DwVnni {
    /// The layout of `w` (`w − zw` as `[tap][channel]` i32) with `x`'s zero point `zx` and the
    /// per-channel multiplier and bias, or `None` when a weight does not fit in i8, the window
    /// has more than 64 taps, or the CPU lacks AVX-512 VNNI.
    pub(super) fn new(w: &[i32], c: usize, zx: i32, signed_x: bool, mult: &[f64], bias: &[i32]) -> Option<DwVnni> {
        if !crate::isa::avx512_vnni() || c == 0 || !w.len().is_multiple_of(c) || mult.len() != c || bias.len() != c {
            return None;
        }
        let taps = w.len() / c;
        if taps == 0 || taps > MAX_TAPS || w.iter().any(|v| i8::try_from(*v).is_err()) {
            return None;
        }
        let blocks = c.div_ceil(BLOCK);
        let lanes = blocks * BLOCK;
        // (block, j, i) → channel, and the vector byte 4i + j holds it.
        let channel = |b: usize, j: usize, i: usize| b * BLOCK + 4 * i + j;
        let mut wl = vec![0i8; taps * lanes * 4];
        for t in 0..taps {
            for b in 0..blocks {
                for j in 0..4 {
                    let v = &mut wl[((t * blocks + b) * 4 + j) * BLOCK..][..BLOCK];
                    for i in 0..16 {
                        let ch = channel(b, j, i);
                        if ch < c {
                            v[4 * i + j] = w[t * c + ch] as i8;
                        }
                    }
                }
            }
        }
        let zxs = zx + if signed_x { 128 } else { 0 };
        let (mut ml, mut bl) = (vec![0f64; lanes], vec![0i32; lanes]);
        for b in 0..blocks {
            for j in 0..4 {
                for i in 0..16 {
                    let ch = channel(b, j, i);
                    if ch < c {
                        let sum: i32 = (0..taps).map(|t| w[t * c + ch]).sum();
                        let at = (b * 4 + j) * 16 + i;
                        ml[at] = mult[ch];
                        bl[at] = bias[ch].wrapping_sub(zxs.wrapping_mul(sum));
                    }
                }
            }
        }
        // The zero point's bytes: u8 as it is, i8 two's complement (flipped with the data).
        let pad = vec![zx as u8; lanes];
        let mult32 = ml.iter().map(|m| *m as f32).collect();
        Some(DwVnni { c, blocks, w: wl, mult: ml, mult32, bias: bl, pad })
    }

    /// Output row `oy` of one image (`x`, `[H][W][C]`) into `y` (`[OW][C]`), requantized with
    /// `channels`' zero point, range and bound (its per-channel slices are not used: this
    /// filter holds its own, in lane order).
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW/VL/DQ and VNNI (checked by [`DwVnni::new`]).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")]
    pub(super) unsafe fn row<X: Q8, Y: Q8>(&self, g: &Geo3, x: &[X], oy: usize, y: &mut [Y], channels: &Requant<'_>) {
        let (c, ih, iw, ow) = (self.c, g.i[1], g.i[2], g.o[2]);
        let (kh, kw, sy, sx, dy, dx) = (g.k[1], g.k[2], g.s[1], g.s[2], g.d[1], g.d[2]);
        let taps = kh * kw;
        assert!(
            g.c == c && taps <= MAX_TAPS && self.w.len() == taps * self.blocks * 4 * BLOCK,
            "depthwise geometry does not match the prepared filter"
        );
        assert!(x.len() >= ih * iw * c && y.len() >= ow * c, "depthwise row out of bounds");
        let q = Requant { mult: &self.mult, mult32: &self.mult32, bias: &self.bias, ..*channels };
        let order = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
        let flip = _mm512_set1_epi8(if X::SIGNED { i8::MIN } else { 0 });
        let y0 = (oy * sy) as isize - g.p[1];
        let mut ptrs = [self.pad.as_ptr(); MAX_TAPS];
        for ox in 0..ow {
            let x0 = (ox * sx) as isize - g.p[2];
            for ky in 0..kh {
                let iy = y0 + (ky * dy) as isize;
                for kx in 0..kw {
                    let ix = x0 + (kx * dx) as isize;
                    let inside = (0..ih as isize).contains(&iy) && (0..iw as isize).contains(&ix);
                    ptrs[ky * kw + kx] = if inside {
                        // SAFETY: (iy, ix) is a pixel of the image, whose c bytes start there.
                        unsafe { x.as_ptr().add((iy as usize * iw + ix as usize) * c).cast() }
                    } else {
                        self.pad.as_ptr()
                    };
                }
            }
            for b in 0..self.blocks {
                let c0 = b * BLOCK;
                let n = (c - c0).min(BLOCK);
                let mask = if n == BLOCK { u64::MAX } else { (1u64 << n) - 1 };
                // SAFETY: every tap pointer starts c bytes of a pixel or the pad row (blocks · 64
                // bytes), so bytes c0..c0 + n are readable; the masked load reads no others. The
                // weights hold taps · blocks · 4 vectors (asserted); out has the pixel's c bytes.
                unsafe {
                    let mut acc = [_mm512_setzero_si512(); 4];
                    let wp = self.w.as_ptr().add(b * 4 * BLOCK);
                    for (t, p) in ptrs[..taps].iter().enumerate() {
                        let xv = if n == BLOCK {
                            _mm512_loadu_si512(p.add(c0).cast())
                        } else {
                            _mm512_maskz_loadu_epi8(mask, p.add(c0).cast())
                        };
                        let xv = _mm512_xor_si512(xv, flip);
                        let wt = wp.add(t * self.blocks * 4 * BLOCK);
                        for (j, a) in acc.iter_mut().enumerate() {
                            *a = _mm512_dpbusd_epi32(*a, xv, _mm512_loadu_si512(wt.add(j * BLOCK).cast()));
                        }
                    }
                    // (Not a closure: it would not inherit this function's target features.)
                    let v = pack64::<Y>([
                        rq16_i32(&q, b * 64, acc[0]),
                        rq16_i32(&q, b * 64 + 16, acc[1]),
                        rq16_i32(&q, b * 64 + 32, acc[2]),
                        rq16_i32(&q, b * 64 + 48, acc[3]),
                    ]);
                    // Byte 4j + r of each 128-bit lane L is acc[j]'s lane 4L + r, channel
                    // 16L + 4r + j: a 4 × 4 byte transpose per lane puts it there.
                    let v = _mm512_shuffle_epi8(v, order);
                    _mm512_mask_storeu_epi8(y.as_mut_ptr().add(ox * c + c0).cast(), mask, v);
                }
            }
        }
    }
}
