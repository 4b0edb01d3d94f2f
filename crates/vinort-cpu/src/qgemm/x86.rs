//! The x86-64 kernels: AVX-512 VNNI and AVX2.

use super::{ABlock, LANES, Line, MR, PackedB, Panel, PanelView, Requant};
use std::arch::x86_64::*;

/// Where the VNNI kernel puts a tile's finished row of sums (the exact `C` values).
pub(super) trait Store {
    /// The first `ncols` lanes of `v` (in order, 16 per vector): row `r` of the block, columns
    /// `col .. col + ncols` of `C`.
    ///
    /// # Safety
    ///
    /// The CPU has AVX-512 F/BW/VL; `r` is a row of the block the store was made for, `ncols`
    /// is in `1 ..= 16·NV` and columns `col .. col + ncols` are below `n`.
    unsafe fn put<const NV: usize>(&mut self, r: usize, col: usize, v: [__m512i; NV], ncols: usize);
}

/// `C` as i32: row `r` at `r · ldc`, column `j` at `j − col_base`.
pub(super) struct I32Out<'c> {
    pub(super) c: &'c mut [i32],
    pub(super) ldc: usize,
    pub(super) col_base: usize,
}

impl Store for I32Out<'_> {
    #[inline(always)]
    unsafe fn put<const NV: usize>(&mut self, r: usize, col: usize, v: [__m512i; NV], ncols: usize) {
        let out = self.c[r * self.ldc + col - self.col_base..].as_mut_ptr();
        for (i, v) in v.into_iter().enumerate() {
            let cols = ncols.saturating_sub(i * LANES).min(LANES);
            let mask = ((1u32 << cols) - 1) as u16;
            // SAFETY: the masked lanes are columns of row r, inside `c` (the caller's contract).
            unsafe { _mm512_mask_storeu_epi32(out.add(i * LANES), mask, v) }
        }
    }
}

/// `C` requantized to bytes as it is stored ([`Requant`], i8 values when `SIGNED`): row `r`
/// at `r · ldy`. The parameters are copied in, so that the byte stores (which may alias any
/// memory, as far as the compiler knows) do not make it reload them.
pub(super) struct RequantOut<'y, 'q, const SIGNED: bool> {
    y: &'y mut [u8],
    ldy: usize,
    bias: &'q [i32],
    mult: &'q [f32],
    zy: i32,
    lo: f32,
    hi: f32,
    /// Whether the product must be clamped before its conversion; else the conversion cannot
    /// overflow and the packs' saturation is the clamp (see [`Requant::saturating`]).
    clamp: bool,
}

impl<'y, 'q, const SIGNED: bool> RequantOut<'y, 'q, SIGNED> {
    /// `bias` replaces `q.bias` (the zero-point terms folded in, or not).
    pub(super) fn new(y: &'y mut [u8], ldy: usize, q: &Requant<'q>, bias: &'q [i32]) -> Self {
        let (lo, hi) = q.bounds();
        let clamp = !q.saturating(SIGNED);
        RequantOut { y, ldy, bias, mult: q.mult, zy: q.zy, lo, hi, clamp }
    }
}

impl<const SIGNED: bool> Store for RequantOut<'_, '_, SIGNED> {
    #[inline(always)]
    unsafe fn put<const NV: usize>(&mut self, r: usize, col: usize, v: [__m512i; NV], ncols: usize) {
        let out = self.y[r * self.ldy + col..].as_mut_ptr();
        // SAFETY: columns col .. col + ncols are below n, which `bias` and `mult` cover
        // (checked by `qgemm_requant`): the loads are masked to them; the store writes bytes
        // of row r inside `y` (the caller's contract).
        unsafe {
            let mut w = [_mm512_setzero_si512(); 4];
            for (i, v) in v.into_iter().enumerate() {
                let cols = ncols.saturating_sub(i * LANES).min(LANES);
                let mask = ((1u32 << cols) - 1) as u16;
                let bias = _mm512_maskz_loadu_epi32(mask, self.bias.as_ptr().add(col + i * LANES));
                let mult = _mm512_maskz_loadu_ps(mask, self.mult.as_ptr().add(col + i * LANES));
                let mut f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(v, bias)), mult);
                if self.clamp {
                    f = _mm512_min_ps(_mm512_max_ps(f, _mm512_set1_ps(self.lo)), _mm512_set1_ps(self.hi));
                }
                let q = _mm512_cvt_roundps_epi32::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(f);
                w[i] = _mm512_add_epi32(q, _mm512_set1_epi32(self.zy));
            }
            for i in NV..4 {
                w[i] = w[0];
            }
            // Saturating packs: dword 4L + k of the packed vector holds lanes 4L..4L + 4 of
            // w[k]; the permutation puts w[0]'s 16 bytes first, then w[1]'s...
            let a = _mm512_packs_epi32(w[0], w[1]);
            let b = _mm512_packs_epi32(w[2], w[3]);
            let bytes = if SIGNED { _mm512_packs_epi16(a, b) } else { _mm512_packus_epi16(a, b) };
            let order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
            let mask = u64::MAX >> (64 - ncols);
            _mm512_mask_storeu_epi8(out.cast(), mask, _mm512_permutexvar_epi32(order, bytes));
        }
    }
}

/// 16 i32 values to 16 bytes, saturating (to i8 when `signed`, else u8). Packs, not a
/// truncating `vpmovdb`, which the compiler fuses with a following store into a form that is
/// slow on AMD cores.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL (register operations only).
#[inline(always)]
pub(crate) unsafe fn narrow16(v: __m512i, signed: bool) -> __m128i {
    // SAFETY: the caller's contract.
    unsafe {
        // Per 128-bit lane: [l0..l3, h0..h3] as i16, then as bytes (twice); the dwords
        // [0, 4, 1, 5] then hold l0..l7, h0..h7.
        let w = _mm256_packs_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64::<1>(v));
        let b = if signed { _mm256_packs_epi16(w, w) } else { _mm256_packus_epi16(w, w) };
        _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5)))
    }
}

/// AVX-512 VNNI block driver: every panel sweeps over all row tiles of `a`, and each tile's
/// sums go to `out`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx512vl")]
pub(super) fn vnni_block<S: Store>(a: ABlock<'_>, b: &PackedB, panels: &[Panel], out: &mut S) {
    for panel in panels {
        let p = b.view(panel);
        for (t, tile) in a.tiles().enumerate() {
            let at = (t * MR, panel.col0);
            // At most 8 columns in the last line: a ymm does them.
            let half = (panel.ncols - 1) % LANES < 8;
            match (panel.nv, half) {
                (1, false) => vnni_rows::<1, false, S>(&tile, &p, out, at),
                (2, false) => vnni_rows::<2, false, S>(&tile, &p, out, at),
                (_, false) => vnni_rows::<3, false, S>(&tile, &p, out, at),
                (1, true) => vnni_rows::<1, true, S>(&tile, &p, out, at),
                (2, true) => vnni_rows::<2, true, S>(&tile, &p, out, at),
                (_, true) => vnni_rows::<3, true, S>(&tile, &p, out, at),
            }
        }
    }
}

/// The tile of `t.rows` rows at `at` (its first row in the block, its first column of `C`).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx512vl")]
fn vnni_rows<const NV: usize, const HALF: bool, S: Store>(
    t: &ABlock<'_>,
    p: &PanelView<'_>,
    out: &mut S,
    at: (usize, usize),
) {
    match t.rows {
        1 => vnni_tile::<1, NV, HALF, S>(t, p, out, at),
        2 => vnni_tile::<2, NV, HALF, S>(t, p, out, at),
        3 => vnni_tile::<3, NV, HALF, S>(t, p, out, at),
        4 => vnni_tile::<4, NV, HALF, S>(t, p, out, at),
        5 => vnni_tile::<5, NV, HALF, S>(t, p, out, at),
        6 => vnni_tile::<6, NV, HALF, S>(t, p, out, at),
        7 => vnni_tile::<7, NV, HALF, S>(t, p, out, at),
        _ => vnni_tile::<MR, NV, HALF, S>(t, p, out, at),
    }
}

#[inline]
#[target_feature(enable = "avx512f")]
fn load_line(l: &Line) -> __m512i {
    // SAFETY: `Line` is 64 bytes, 64-byte aligned.
    unsafe { _mm512_load_si512(l.0.as_ptr().cast()) }
}

#[inline]
#[target_feature(enable = "avx512f")]
fn load_i32x16(x: &[i32; 16]) -> __m512i {
    // SAFETY: `x` is 64 readable bytes; the load is unaligned.
    unsafe { _mm512_loadu_si512(x.as_ptr().cast()) }
}

#[inline]
#[target_feature(enable = "avx512f")]
fn to_i32x16(v: __m512i) -> [i32; 16] {
    let mut x = [0i32; 16];
    // SAFETY: `x` is 64 writable bytes; the store is unaligned.
    unsafe { _mm512_storeu_si512(x.as_mut_ptr().cast(), v) };
    x
}

/// One k group: `acc[r][v] += dot4(a'[r], B'[v])` for all rows and
/// lines, and with `RS`, lane r of `rs` += the 4 bytes of `a'[r]`
/// (`a' = word ^ xor`). With `HALF`, the last line has at most 8 columns
/// and is done in a ymm register (its upper lanes are never stored).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx512vl")]
fn vnni_step<const R: usize, const NV: usize, const HALF: bool, const RS: bool>(
    acc: &mut [[__m512i; NV]; R],
    rs: &mut __m512i,
    words: &[u32; R],
    xor: __m512i,
    group: &[Line; NV],
) {
    let mut bv = [_mm512_setzero_si512(); NV];
    for (v, (x, line)) in bv.iter_mut().zip(group).enumerate() {
        *x = if HALF && v == NV - 1 {
            // SAFETY: `Line` is 64 bytes, 64-byte aligned: its first 32
            // are an aligned ymm.
            _mm512_castsi256_si512(unsafe { _mm256_load_si256(line.0.as_ptr().cast()) })
        } else {
            load_line(line)
        };
    }
    // The R words gathered in lanes 0..R (blends run beside vpdpbusd).
    let mut wv = _mm512_setzero_si512();
    for (r, (accr, &w)) in acc.iter_mut().zip(words).enumerate() {
        let av = _mm512_xor_si512(_mm512_set1_epi32(w as i32), xor);
        if RS {
            wv = _mm512_mask_mov_epi32(wv, 1 << r, av);
        }
        for (v, (s, &bx)) in accr.iter_mut().zip(&bv).enumerate() {
            *s = if HALF && v == NV - 1 {
                let (s256, a256) = (_mm512_castsi512_si256(*s), _mm512_castsi512_si256(av));
                _mm512_castsi256_si512(_mm256_dpbusd_epi32(s256, a256, _mm512_castsi512_si256(bx)))
            } else {
                _mm512_dpbusd_epi32(*s, av, bx)
            };
        }
    }
    if RS {
        *rs = _mm512_dpbusd_epi32(*rs, wv, _mm512_set1_epi8(1));
    }
}

/// Bytes `4g .. 4g + 4` of rows `0 .. R` of `t`, as stored.
///
/// # Safety
///
/// `4·g + 4 <= t.k` and `t.a` holds R rows of `t.k` bytes at stride
/// `t.lda` (`t.rows == R && t.covers_rows()`).
#[inline]
unsafe fn read_words<const R: usize>(t: &ABlock<'_>, g: usize) -> [u32; R] {
    let mut words = [0u32; R];
    for (r, w) in words.iter_mut().enumerate() {
        // SAFETY: by the contract, r·lda + 4·g + 4 <= (R − 1)·lda + k <= t.a.len().
        *w = unsafe { t.a.as_ptr().add(r * t.lda + 4 * g).cast::<u32>().read_unaligned() };
    }
    words
}

/// `R` rows × `NV`·16 columns of C.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx512vl")]
fn vnni_tile<const R: usize, const NV: usize, const HALF: bool, S: Store>(
    t: &ABlock<'_>,
    p: &PanelView<'_>,
    out: &mut S,
    at: (usize, usize),
) {
    let (acc, rs) = if t.need_rs { vnni_dot::<R, NV, HALF, true>(t, p) } else { vnni_dot::<R, NV, HALF, false>(t, p) };
    let rs = to_i32x16(rs);
    match (p.zb_uniform, t.za_uniform) {
        // Both zero-point terms vanish (or the caller folded them into its bias).
        (Some(0), Some(0)) => {
            for (r, row) in acc.iter().enumerate() {
                // SAFETY: row r of the tile is a row of the block; the panel's columns.
                unsafe { out.put(at.0 + r, at.1, *row, p.ncols) };
            }
        }
        (None, None) => vnni_store::<R, NV, false, false, S>(&acc, &rs, t, p, out, at),
        (None, Some(_)) => vnni_store::<R, NV, false, true, S>(&acc, &rs, t, p, out, at),
        (Some(_), None) => vnni_store::<R, NV, true, false, S>(&acc, &rs, t, p, out, at),
        (Some(_), Some(_)) => vnni_store::<R, NV, true, true, S>(&acc, &rs, t, p, out, at),
    }
}

/// The dot products `Σ a'·b'` of a tile, and (with `RS`) the row sums of
/// `a'` in lanes 0..R. Kept out of line so that the accumulators stay in
/// registers for the whole k loop.
#[inline(never)]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx512vl")]
fn vnni_dot<const R: usize, const NV: usize, const HALF: bool, const RS: bool>(
    t: &ABlock<'_>,
    p: &PanelView<'_>,
) -> ([[__m512i; NV]; R], __m512i) {
    let (groups, _) = p.lines.as_chunks::<NV>();
    let full = t.k / 4;
    // Guards the raw reads below: R rows of k bytes at stride lda.
    assert!(t.rows == R && t.covers_rows() && groups.len() == t.k.div_ceil(4));
    let mut acc = [[_mm512_setzero_si512(); NV]; R];
    let mut rs = _mm512_setzero_si512();
    let xor = _mm512_set1_epi32(t.xor() as i32);
    if R * NV < 6 {
        // Few accumulators: a second set over odd k groups hides the
        // latency of vpdpbusd.
        let mut acc2 = [[_mm512_setzero_si512(); NV]; R];
        let mut rs2 = _mm512_setzero_si512();
        let (pairs, _) = groups[..full].as_chunks::<2>();
        for (i, [even, odd]) in pairs.iter().enumerate() {
            // SAFETY: 2i + 1 < k / 4, and `t` holds R rows (asserted above).
            let (w0, w1) = unsafe { (read_words::<R>(t, 2 * i), read_words::<R>(t, 2 * i + 1)) };
            vnni_step::<R, NV, HALF, RS>(&mut acc, &mut rs, &w0, xor, even);
            vnni_step::<R, NV, HALF, RS>(&mut acc2, &mut rs2, &w1, xor, odd);
        }
        if full % 2 == 1 {
            // SAFETY: full − 1 < k / 4, and `t` holds R rows (asserted above).
            let words = unsafe { read_words::<R>(t, full - 1) };
            vnni_step::<R, NV, HALF, RS>(&mut acc, &mut rs, &words, xor, &groups[full - 1]);
        }
        for (a, b) in acc.iter_mut().zip(&acc2) {
            for (x, &y) in a.iter_mut().zip(b) {
                *x = _mm512_add_epi32(*x, y);
            }
        }
        rs = _mm512_add_epi32(rs, rs2);
    } else {
        for (g, group) in groups[..full].iter().enumerate() {
            // SAFETY: g < k / 4, and `t` holds R rows (asserted above).
            let words = unsafe { read_words::<R>(t, g) };
            vnni_step::<R, NV, HALF, RS>(&mut acc, &mut rs, &words, xor, group);
        }
    }
    if let Some(group) = groups.get(full) {
        // k % 4 != 0: the last group, zero-padded (after the xor, so that
        // the row sums stay right; packed B is zero there anyway).
        let rem = t.k % 4;
        let keep = (1u32 << (8 * rem)) - 1;
        let mut words = [0u32; R];
        for (r, w) in words.iter_mut().enumerate() {
            let x = if t.k >= 4 {
                // The last 4 bytes of the row, shifted to keep its last `rem`.
                // SAFETY: bytes k − 4 .. k of row r < R lie in `t.a`
                // (asserted above).
                let x = unsafe { t.a.as_ptr().add(r * t.lda + t.k - 4).cast::<u32>().read_unaligned() };
                x >> (8 * (4 - rem))
            } else {
                t.word(r, full)
            };
            *w = x ^ (t.xor() & keep);
        }
        vnni_step::<R, NV, HALF, RS>(&mut acc, &mut rs, &words, _mm512_setzero_si512(), group);
    }
    (acc, rs)
}

/// Stores `C = dot − rs·zb' − za'·(colsum − k·zb')` for a tile. `ZB_U` /
/// `ZA_U`: `zb'` / `za'` is uniform, so its product is a scalar per row /
/// a vector per tile instead of a vector product per output vector.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx512vl")]
fn vnni_store<const R: usize, const NV: usize, const ZB_U: bool, const ZA_U: bool, S: Store>(
    acc: &[[__m512i; NV]; R],
    rs: &[i32; 16],
    t: &ABlock<'_>,
    p: &PanelView<'_>,
    out: &mut S,
    (row0, col0): (usize, usize),
) {
    let (zq, _) = p.zq.as_chunks::<16>();
    let (csk, _) = p.csk.as_chunks::<16>();
    let zb_u = p.zb_uniform.unwrap_or(0);
    let za_u = _mm512_set1_epi32(t.za_uniform.unwrap_or(0));
    for (r, (accr, &rs)) in acc.iter().zip(rs).enumerate() {
        let rs_zb = _mm512_set1_epi32(rs.wrapping_mul(zb_u));
        let rs = _mm512_set1_epi32(rs);
        let za = if ZA_U { za_u } else { _mm512_set1_epi32(t.za(r)) };
        let mut sums = *accr;
        for (sum, (zq, csk)) in sums.iter_mut().zip(zq.iter().zip(csk)) {
            let row_term = if ZB_U { rs_zb } else { _mm512_mullo_epi32(rs, load_i32x16(zq)) };
            // With a uniform za' this product is the same for every row
            // (LLVM hoists it out of the row loop).
            let col_term = _mm512_mullo_epi32(za, load_i32x16(csk));
            *sum = _mm512_sub_epi32(_mm512_sub_epi32(*sum, row_term), col_term);
        }
        // SAFETY: row0 + r is a row of the block (the tile's R rows); the panel's columns.
        unsafe { out.put(row0 + r, col0, sums, p.ncols) };
    }
}

/// `Σ (x ^ xor)` over `row`, 32 bytes per `vpsadbw`.
#[target_feature(enable = "avx2")]
pub(super) fn row_sum_avx2(row: &[u8], xor: u8) -> u32 {
    let x = _mm256_set1_epi8(xor as i8);
    let zero = _mm256_setzero_si256();
    let mut acc = zero;
    let (chunks, tail) = row.as_chunks::<32>();
    for chunk in chunks {
        // SAFETY: `chunk` is 32 readable bytes; the load is unaligned.
        let v = unsafe { _mm256_loadu_si256(chunk.as_ptr().cast()) };
        acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_xor_si256(v, x), zero));
    }
    let mut lanes = [0u64; 4];
    // SAFETY: `lanes` is 32 writable bytes; the store is unaligned.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), acc) };
    let sum = lanes.iter().fold(0u64, |s, &x| s.wrapping_add(x)) as u32;
    sum.wrapping_add(super::row_sum_portable(tail, xor))
}

/// AVX2 block driver (exact: `vpmaddwd` on `i16`-widened bytes).
#[target_feature(enable = "avx2")]
pub(super) fn avx2_block(a: ABlock<'_>, b: &PackedB, panels: &[Panel], c: &mut [i32], ldc: usize, col_base: usize) {
    // Each 4-byte word of a' widened once to four u16 (a 64-bit lane).
    let kg = a.k.div_ceil(4);
    // This thread's buffer, kept across calls: a steady-state run allocates nothing here.
    let mut wide = WIDE.take();
    wide.clear();
    wide.resize(a.rows * kg, 0);
    let spread = |w: u32| {
        let x = u64::from(w ^ a.xor());
        (x & 0xFF) | (x & 0xFF00) << 8 | (x & 0xFF_0000) << 16 | (x & 0xFF00_0000) << 24
    };
    if kg > 0 {
        for (r, out) in wide.chunks_exact_mut(kg).enumerate() {
            let (words, _) = a.a[r * a.lda..][..a.k].as_chunks::<4>();
            for (x, w) in out.iter_mut().zip(words) {
                *x = spread(u32::from_le_bytes(*w));
            }
            if words.len() < kg {
                out[kg - 1] = spread(a.word(r, kg - 1));
            }
        }
    }
    for panel in panels {
        let p = b.view(panel);
        for (t, tile) in a.tiles().enumerate() {
            for r0 in (0..tile.rows).step_by(4) {
                let sub = tile.sub(r0, 4);
                let row0 = t * MR + r0;
                let w = &wide[row0 * kg..(row0 + sub.rows) * kg];
                let cc = &mut c[row0 * ldc + panel.col0 - col_base..];
                match sub.rows {
                    1 => avx2_tile::<1>(&sub, w, &p, cc, ldc),
                    2 => avx2_tile::<2>(&sub, w, &p, cc, ldc),
                    3 => avx2_tile::<3>(&sub, w, &p, cc, ldc),
                    _ => avx2_tile::<4>(&sub, w, &p, cc, ldc),
                }
            }
        }
    }
    WIDE.set(wide);
}

thread_local! {
    /// The widened words of A for [`avx2_block`], reused (taken out for a call, so a nested
    /// call on the same thread gets a new one instead of a conflict).
    static WIDE: std::cell::Cell<Vec<u64>> = const { std::cell::Cell::new(Vec::new()) };
}

#[inline]
#[target_feature(enable = "avx2")]
fn widen16(x: &[i8; 16]) -> __m256i {
    // SAFETY: `x` is 16 readable bytes; the load is unaligned.
    _mm256_cvtepi8_epi16(unsafe { _mm_loadu_si128(x.as_ptr().cast()) })
}

#[inline]
#[target_feature(enable = "avx2")]
fn load_i32x8(x: &[i32; 8]) -> __m256i {
    // SAFETY: `x` is 32 readable bytes; the load is unaligned.
    unsafe { _mm256_loadu_si256(x.as_ptr().cast()) }
}

/// `R` rows (`wide`: their widened words, `kg` per row), 8 columns at a time.
#[target_feature(enable = "avx2")]
fn avx2_tile<const R: usize>(t: &ABlock<'_>, wide: &[u64], p: &PanelView<'_>, c: &mut [i32], ldc: usize) {
    let kg = t.k.div_ceil(4);
    let (zq, _) = p.zq.as_chunks::<8>();
    let (csk, _) = p.csk.as_chunks::<8>();
    for (col, (zq, csk)) in (0..p.ncols).step_by(8).zip(zq.iter().zip(csk)) {
        let (v, half) = (col / LANES, (col % LANES) / 8);
        let mut lo = [_mm256_setzero_si256(); R];
        let mut hi = [_mm256_setzero_si256(); R];
        for (g, group) in p.lines.chunks_exact(p.nv).enumerate() {
            let (quarters, _) = group[v].0.as_chunks::<16>();
            // Columns col..col+4 and col+4..col+8, 4 k values each, as i16.
            let b_lo = widen16(&quarters[2 * half]);
            let b_hi = widen16(&quarters[2 * half + 1]);
            for (r, (l, h)) in lo.iter_mut().zip(&mut hi).enumerate() {
                // a0 a1 a2 a3 as u16, repeated over the register.
                let aw = _mm256_set1_epi64x(wide[r * kg + g] as i64);
                *l = _mm256_add_epi32(*l, _mm256_madd_epi16(aw, b_lo));
                *h = _mm256_add_epi32(*h, _mm256_madd_epi16(aw, b_hi));
            }
        }
        let zq = load_i32x8(zq);
        let csk = load_i32x8(csk);
        let cols = (p.ncols - col).min(8);
        for (r, (&l, &h)) in lo.iter().zip(&hi).enumerate() {
            // Lanes of l: (c0: k0k1, k2k3), (c1: ...), ...; hadd gives
            // c0 c1 c4 c5 | c2 c3 c6 c7, the permute restores the order.
            let s = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_hadd_epi32(l, h));
            let rs = _mm256_set1_epi32(t.rs(r));
            let za = _mm256_set1_epi32(t.za(r));
            let s = _mm256_sub_epi32(s, _mm256_mullo_epi32(rs, zq));
            let s = _mm256_sub_epi32(s, _mm256_mullo_epi32(za, csk));
            let out = &mut c[r * ldc + col..][..cols];
            if let Ok(out) = <&mut [i32; 8]>::try_from(&mut *out) {
                // SAFETY: `out` is 32 writable bytes; the store is unaligned.
                unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), s) };
            } else {
                let mut tmp = [0i32; 8];
                // SAFETY: `tmp` is 32 writable bytes; the store is unaligned.
                unsafe { _mm256_storeu_si256(tmp.as_mut_ptr().cast(), s) };
                out.copy_from_slice(&tmp[..cols]);
            }
        }
    }
}
