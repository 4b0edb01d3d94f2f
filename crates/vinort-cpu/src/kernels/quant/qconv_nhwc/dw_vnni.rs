//! The depthwise channels-last QLinearConv on AVX-512 VNNI, when every `w − zw` fits in i8
//! (symmetric int8 weights, or u8 weights around 128: what quantizers write).
//!
//! `vpdpbusd` multiplies 64 unsigned bytes by 64 signed bytes and adds each group of four
//! products into one of 16 i32 lanes. A depthwise convolution has no four products of one
//! channel side by side in memory, so an output row is computed from a transposed copy of the
//! input rows it reads: for each group of four kernel rows and each input column, four vectors
//! whose i32 lane holds one channel's four input bytes, one per kernel row (a 4 × 4 byte
//! transpose of four 64-channel loads: eight unpacks). The weights are laid out to match once,
//! at build time: per kernel column, lane `i` holds the channel's four kernel-row weights. A
//! 3 × 3 kernel is then 3 `vpdpbusd` per 16 channels and output pixel (12 for 64), where a tap
//! at a time would take 9, with a quarter of each multiply wasted; and each transposed column
//! serves every output pixel whose window covers it (three, at stride 1).
//!
//! Per output row and block of 64 channels: the transposed columns of the padded input row are
//! built into a per-thread buffer (columns outside the image, rows outside it and the unused
//! fourth row of a group read a row of `zx` bytes); then each output pixel sums its kernel
//! columns from it. The input zero point comes out of the sums once: `Σ (x − zx)·w = Σ x·w −
//! zx·Σ w`, with `zx·Σ w` subtracted from each channel's bias at build time (padding reads `zx`,
//! so it adds nothing). i8 inputs are flipped to u8 by xor with 0x80 (`x + 128`), the zero
//! point with them. Accumulator `j`'s lane `4L + d` sums channel `16L + 4j + d` of the block;
//! the multipliers and biases are stored in that order, so the requantization
//! ([`super::x86::rq16_i32`], the portable formula) runs on the accumulators as they are, and
//! the packs that narrow them put the bytes back in channel order. The sums are exact i32
//! arithmetic (wrapping, like the portable kernel's), so the output is the same byte for byte
//! (tested against the generic NCHW kernel).

use std::arch::x86_64::*;
use std::cell::Cell;

use super::x86::{pack64, rq16_i32};
use super::{Q8, Requant};
use crate::kernels::conv::im2col::Geo3;

/// Channels per block: one vector of input bytes.
const BLOCK: usize = 64;

/// Kernel rows per group: the four bytes a `vpdpbusd` lane adds.
const ROWS: usize = 4;

/// Taps of the largest kernel taken; larger ones take the other loops.
const MAX_TAPS: usize = 64;

/// 64 bytes, one aligned vector.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct V64([u8; 64]);

thread_local! {
    /// The transposed input columns of the row being computed.
    static COLUMNS: Cell<Vec<V64>> = const { Cell::new(Vec::new()) };
}

/// A depthwise filter laid out for [`DwVnni::row`], with its requantization in lane order.
pub(super) struct DwVnni {
    /// Channels.
    c: usize,
    /// `c` in blocks of 64, the last one possibly partial.
    blocks: usize,
    kh: usize,
    kw: usize,
    /// `kh` in groups of four rows.
    groups: usize,
    /// `w − zw` as i8, `[block][group][kx][j]` vectors: byte `4(4L + d) + q` of vector `j`
    /// holds the weight of channel `64·block + 16L + 4j + d` at kernel row `4·group + q`,
    /// column `kx`; zero past the kernel's rows or the channels.
    w: Vec<V64>,
    /// Per `[block][j][4L + d]` (channel `64·block + 16L + 4j + d`): the multiplier, and the
    /// bias less `zx′ · Σ w` (`zx′` the zero point as the sums see it, `zx + 128` for i8
    /// inputs); padding lanes hold zeros.
    mult: Vec<f32>,
    bias: Vec<i32>,
    /// `zx` in X's own encoding, `blocks · 64` bytes: what a tap outside the image reads.
    pad: Vec<u8>,
}

/// The channel of lane `4L + d` of accumulator `j` in block `b`.
fn channel(b: usize, j: usize, lane: usize) -> usize {
    b * BLOCK + 16 * (lane / 4) + 4 * j + lane % 4
}

impl DwVnni {
    /// The layout of `w` (`w − zw` as `[ky·kw + kx][channel]` i32 for a `kh × kw` kernel) with
    /// `x`'s zero point `zx` and the per-channel multiplier and bias, or `None` when a weight
    /// does not fit in i8, the window has more than 64 taps, or the CPU lacks AVX-512 VNNI.
    #[allow(clippy::too_many_arguments)] // The filter, its shape, and the requantization.
    pub(super) fn new(
        w: &[i32],
        c: usize,
        (kh, kw): (usize, usize),
        zx: i32,
        signed_x: bool,
        mult: &[f32],
        bias: &[i32],
    ) -> Option<DwVnni> {
        let taps = kh * kw;
        if !crate::isa::avx512_vnni() || c == 0 || taps == 0 || taps > MAX_TAPS || w.len() != taps * c {
            return None;
        }
        if mult.len() != c || bias.len() != c || w.iter().any(|v| i8::try_from(*v).is_err()) {
            return None;
        }
        let (blocks, groups) = (c.div_ceil(BLOCK), kh.div_ceil(ROWS));
        let mut wl = vec![V64([0; 64]); blocks * groups * kw * 4];
        for b in 0..blocks {
            for g in 0..groups {
                for kx in 0..kw {
                    for j in 0..4 {
                        let v = &mut wl[((b * groups + g) * kw + kx) * 4 + j].0;
                        for lane in 0..16 {
                            let ch = channel(b, j, lane);
                            for q in 0..ROWS {
                                let ky = g * ROWS + q;
                                if ch < c && ky < kh {
                                    v[4 * lane + q] = w[(ky * kw + kx) * c + ch] as i8 as u8;
                                }
                            }
                        }
                    }
                }
            }
        }
        let zxs = zx + if signed_x { 128 } else { 0 };
        let lanes = blocks * BLOCK;
        let (mut ml, mut bl) = (vec![0f32; lanes], vec![0i32; lanes]);
        for b in 0..blocks {
            for j in 0..4 {
                for lane in 0..16 {
                    let ch = channel(b, j, lane);
                    if ch < c {
                        let sum: i32 = (0..taps).map(|t| w[t * c + ch]).sum();
                        let at = (b * 4 + j) * 16 + lane;
                        ml[at] = mult[ch];
                        bl[at] = bias[ch].wrapping_sub(zxs.wrapping_mul(sum));
                    }
                }
            }
        }
        // The zero point's bytes: u8 as it is, i8 two's complement (flipped with the data).
        let pad = vec![zx as u8; lanes];
        Some(DwVnni { c, blocks, kh, kw, groups, w: wl, mult: ml, bias: bl, pad })
    }

    /// Output row `oy` of one image (`x`, `[H][W][C]`) into `y` (`[OW][C]`), requantized with
    /// `channels`' zero point and range (its per-channel slices are not used: this filter
    /// holds its own, in lane order).
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW/VL/DQ and VNNI (checked by [`DwVnni::new`]).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")]
    pub(super) unsafe fn row<X: Q8, Y: Q8>(&self, g: &Geo3, x: &[X], oy: usize, y: &mut [Y], channels: &Requant<'_>) {
        let (c, ih, iw, ow) = (self.c, g.i[1], g.i[2], g.o[2]);
        let (kh, kw, sy, sx, dy, dx) = (g.k[1], g.k[2], g.s[1], g.s[2], g.d[1], g.d[2]);
        assert!(
            g.c == c && kh == self.kh && kw == self.kw && self.w.len() == self.blocks * self.groups * kw * 4,
            "depthwise geometry does not match the prepared filter"
        );
        assert!(x.len() >= ih * iw * c && y.len() >= ow * c, "depthwise row out of bounds");
        if ow == 0 {
            return;
        }
        let q = Requant { mult: &self.mult, bias: &self.bias, ..*channels };
        let flip = _mm512_set1_epi8(if X::SIGNED { i8::MIN } else { 0 });
        // Padded input columns the row reads: column `col` is input column `col − left`.
        let span = (ow - 1) * sx + (kw - 1) * dx + 1;
        let left = g.p[2];
        // Each kernel row's input row, `None` outside the image.
        let mut rows = [None; MAX_TAPS];
        for (ky, r) in rows[..kh].iter_mut().enumerate() {
            let iy = (oy * sy) as isize - g.p[1] + (ky * dy) as isize;
            *r = (0..ih as isize).contains(&iy).then_some(iy as usize);
        }
        let xp = x.as_ptr().cast::<u8>();
        let mut cols = COLUMNS.take();
        cols.clear();
        cols.resize(self.groups * span * 4, V64([0; 64]));
        for b in 0..self.blocks {
            let c0 = b * BLOCK;
            let n = (c - c0).min(BLOCK);
            let mask = if n == BLOCK { u64::MAX } else { (1u64 << n) - 1 };
            // SAFETY (both loops): a source pointer is a pixel of the image (whose c bytes
            // start there) or the pad row (blocks · 64 bytes), so bytes c0..c0 + n are
            // readable and the masked loads read no others; `cols` holds groups · span · 4
            // vectors, the weights blocks · groups · kw · 4 (asserted); out has the row's
            // ow · c bytes.
            for grp in 0..self.groups {
                for col in 0..span {
                    let ix = col as isize - left;
                    let mut src = [self.pad.as_ptr(); ROWS];
                    if (0..iw as isize).contains(&ix) {
                        for (qr, s) in src.iter_mut().enumerate() {
                            if let Some(Some(iy)) = rows[..kh].get(grp * ROWS + qr) {
                                // SAFETY: (iy, ix) is a pixel of the image.
                                *s = unsafe { xp.add((iy * iw + ix as usize) * c) };
                            }
                        }
                    }
                    // SAFETY: see above.
                    unsafe {
                        let ld = |i: usize| src[i].add(c0);
                        let t =
                            transpose4([load(mask, ld(0)), load(mask, ld(1)), load(mask, ld(2)), load(mask, ld(3))]);
                        let out = cols.as_mut_ptr().add((grp * span + col) * 4);
                        for (j, v) in t.into_iter().enumerate() {
                            _mm512_store_si512(out.add(j).cast(), _mm512_xor_si512(v, flip));
                        }
                    }
                }
            }
            let wb = &self.w[b * self.groups * kw * 4..];
            for ox in 0..ow {
                // SAFETY: see above; every column ox·sx + kx·dx is below span.
                unsafe {
                    let mut acc = [_mm512_setzero_si512(); 4];
                    for grp in 0..self.groups {
                        for kx in 0..kw {
                            let t = cols.as_ptr().add((grp * span + ox * sx + kx * dx) * 4);
                            let wv = wb.as_ptr().add((grp * kw + kx) * 4);
                            for (j, a) in acc.iter_mut().enumerate() {
                                let (tv, wj) =
                                    (_mm512_load_si512(t.add(j).cast()), _mm512_load_si512(wv.add(j).cast()));
                                *a = _mm512_dpbusd_epi32(*a, tv, wj);
                            }
                        }
                    }
                    // (Not a closure: it would not inherit this function's target features.)
                    let v = pack64::<Y>([
                        rq16_i32(&q, c0, acc[0]),
                        rq16_i32(&q, c0 + 16, acc[1]),
                        rq16_i32(&q, c0 + 32, acc[2]),
                        rq16_i32(&q, c0 + 48, acc[3]),
                    ]);
                    _mm512_mask_storeu_epi8(y.as_mut_ptr().add(ox * c + c0).cast(), mask, v);
                }
            }
        }
        COLUMNS.set(cols);
    }
}

/// The bytes of `mask` at `p`, zero elsewhere.
///
/// # Safety
/// The CPU has AVX-512 BW, and the masked bytes at `p` are readable.
#[inline(always)]
unsafe fn load(mask: u64, p: *const u8) -> __m512i {
    // SAFETY: the caller's contract.
    unsafe { _mm512_maskz_loadu_epi8(mask, p.cast()) }
}

/// Four rows of 64 channels to four vectors whose i32 lane `4L + d` of vector `j` holds
/// channel `16L + 4j + d`'s four bytes, row `q` in byte `q`.
///
/// # Safety
/// The CPU has AVX-512 BW (register operations only).
#[inline(always)]
unsafe fn transpose4([r0, r1, r2, r3]: [__m512i; 4]) -> [__m512i; 4] {
    // SAFETY: the caller's contract.
    unsafe {
        // Per 128-bit lane L: byte pairs (r0, r1) and (r2, r3) of channels 16L + 0..8 (lo) and
        // 16L + 8..16 (hi), then word pairs of those: four channels' four bytes per vector.
        let (a_lo, a_hi) = (_mm512_unpacklo_epi8(r0, r1), _mm512_unpackhi_epi8(r0, r1));
        let (b_lo, b_hi) = (_mm512_unpacklo_epi8(r2, r3), _mm512_unpackhi_epi8(r2, r3));
        [
            _mm512_unpacklo_epi16(a_lo, b_lo),
            _mm512_unpackhi_epi16(a_lo, b_lo),
            _mm512_unpacklo_epi16(a_hi, b_hi),
            _mm512_unpackhi_epi16(a_hi, b_hi),
        ]
    }
}
