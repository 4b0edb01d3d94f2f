//! Packing a block of a row-major `B` at run time, into memory reused from the last packing:
//! what a convolution does with its activations when they are the right operand (`W · X`, so
//! the product comes out channel-major, as NCHW wants it). [`PackedB::new`] packs constant
//! weights once; this is the per-run path, so it avoids allocation and interleaves 4 rows × 16
//! columns with SSE2 byte unpacks (part of every x86-64 CPU) instead of one scattered byte
//! store per element.

use super::{Int8, LANES, Line, NV_MAX, PackedB, Panel};

impl PackedB {
    /// An empty packing, to be filled by [`PackedB::repack_rows`].
    pub(crate) fn empty() -> PackedB {
        PackedB { k: 0, n: 0, kg: 0, panels: vec![], lines: vec![], zbq: vec![], csk: vec![], zb_uniform: Some(0) }
    }

    /// Packs columns `0..n` of the first `k` rows of `b` (row-major, row stride `ldb`) with one
    /// zero point `zb` for every column, in place of what this packing held: the same packing
    /// [`PackedB::new`] makes of that k × n matrix.
    pub(crate) fn repack_rows(&mut self, b: Int8<'_>, ldb: usize, k: usize, n: usize, zb: i32) -> Result<(), String> {
        let need = match k {
            0 => 0,
            _ => (k - 1).checked_mul(ldb).and_then(|v| v.checked_add(n)).ok_or("qgemm: B block overflows usize")?,
        };
        if ldb < n || b.elems() < need {
            return Err(format!("qgemm: B has {} elements, {k} rows of {n} at stride {ldb} need {need}", b.elems()));
        }
        let kg = k.div_ceil(4);
        self.panels.clear();
        let (mut col0, mut line0) = (0, 0usize);
        while col0 < n {
            let ncols = (n - col0).min(LANES * NV_MAX);
            let nv = ncols.div_ceil(LANES);
            self.panels.push(Panel { col0, ncols, nv, line0 });
            line0 = kg.checked_mul(nv).and_then(|x| x.checked_add(line0)).ok_or("qgemm: B block overflows usize")?;
            col0 += ncols;
        }
        let padded = self.panels.last().map_or(0, |p| p.col0 + p.nv * LANES);
        self.lines.clear();
        self.lines.resize(line0, Line([0; 64]));
        // csk first holds the column sums of the stored (remapped) bytes.
        self.csk.clear();
        self.csk.resize(padded, 0);
        let (xor, zb_adj) = match b {
            Int8::I8(_) => (0u8, 0),
            Int8::U8(_) => (0x80u8, -128),
        };
        let bytes: &[u8] = match b {
            Int8::U8(s) => &s[..need],
            // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid
            // for both.
            Int8::I8(s) => unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), need) },
        };
        let row = |p: usize| -> &[u8] { if p < k { &bytes[p * ldb..p * ldb + n] } else { &[] } };
        for g in 0..kg {
            let quad = [row(4 * g), row(4 * g + 1), row(4 * g + 2), row(4 * g + 3)];
            for panel in &self.panels {
                for v in 0..panel.nv {
                    let c0 = panel.col0 + v * LANES;
                    let line = &mut self.lines[panel.line0 + g * panel.nv + v].0;
                    interleave(&quad, c0, (panel.col0 + panel.ncols).min(c0 + LANES), xor, line);
                }
            }
            for r in quad {
                for (s, &x) in self.csk.iter_mut().zip(r) {
                    *s = s.wrapping_add(i32::from((x ^ xor) as i8));
                }
            }
        }
        let z = zb.wrapping_add(zb_adj);
        let kk = k as i32; // Only k mod 2^32 matters: the arithmetic wraps.
        self.zbq.clear();
        self.zbq.resize(padded, 0);
        self.zbq[..n].fill(z);
        for s in &mut self.csk[..n] {
            *s = s.wrapping_sub(kk.wrapping_mul(z));
        }
        (self.k, self.n, self.kg, self.zb_uniform) = (k, n, kg, Some(z));
        Ok(())
    }
}

/// One 64-byte line: for columns `c0..c1` (at most 16) of the four rows, byte `4·c + q` =
/// `rows[q][c0 + c] ^ xor`; a row beyond B (empty) and columns past `c1` stay zero.
#[inline]
fn interleave(rows: &[&[u8]; 4], c0: usize, c1: usize, xor: u8, line: &mut [i8; 64]) {
    #[cfg(target_arch = "x86_64")]
    if c1 - c0 == LANES && rows.iter().all(|r| r.len() >= c1) {
        use std::arch::x86_64::*;
        // SAFETY: each row has at least c1 = c0 + 16 bytes (checked above), so the four 16-byte
        // loads are in bounds; the four 16-byte stores cover exactly the 64-byte line. SSE2 is
        // part of the x86-64 baseline.
        unsafe {
            let x = _mm_set1_epi8(xor as i8);
            let ld = |q: usize| _mm_xor_si128(_mm_loadu_si128(rows[q].as_ptr().add(c0).cast()), x);
            let (a, b, c, d) = (ld(0), ld(1), ld(2), ld(3));
            let (ab_lo, ab_hi) = (_mm_unpacklo_epi8(a, b), _mm_unpackhi_epi8(a, b));
            let (cd_lo, cd_hi) = (_mm_unpacklo_epi8(c, d), _mm_unpackhi_epi8(c, d));
            let out = line.as_mut_ptr().cast::<__m128i>();
            _mm_storeu_si128(out, _mm_unpacklo_epi16(ab_lo, cd_lo));
            _mm_storeu_si128(out.add(1), _mm_unpackhi_epi16(ab_lo, cd_lo));
            _mm_storeu_si128(out.add(2), _mm_unpacklo_epi16(ab_hi, cd_hi));
            _mm_storeu_si128(out.add(3), _mm_unpackhi_epi16(ab_hi, cd_hi));
        }
        return;
    }
    for (q, r) in rows.iter().enumerate() {
        for (c, &x) in r.get(c0..c1).unwrap_or(&[]).iter().enumerate() {
            line[4 * c + q] = (x ^ xor) as i8;
        }
    }
}
