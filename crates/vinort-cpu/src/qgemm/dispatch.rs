//! Which kernel family runs: detection of the CPU's features once, and the portable
//! kernels every CPU can run.

use std::sync::OnceLock;

use super::*;

/// `Σ (x ^ xor)` over the bytes of `row`, modulo 2^32 (8 bytes at a time).
pub(super) fn row_sum_portable(row: &[u8], xor: u8) -> u32 {
    const LOW: u64 = 0x00FF_00FF_00FF_00FF;
    let x8 = u64::from_ne_bytes([xor; 8]);
    let (chunks, tail) = row.as_chunks::<8>();
    let mut sum = 0u32;
    for chunk in chunks {
        let v = u64::from_le_bytes(*chunk) ^ x8;
        // Four 16-bit lanes of byte pairs (<= 510 each), then their total
        // (<= 2040) in the top 16 bits of the product.
        let pairs = (v & LOW) + ((v >> 8) & LOW);
        sum = sum.wrapping_add((pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48) as u32);
    }
    tail.iter().fold(sum, |s, &x| s.wrapping_add(u32::from(x ^ xor)))
}

/// The kernel family to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Isa {
    Avx512Vnni,
    Avx2,
    Portable,
}

impl Isa {
    pub(super) fn is_available(self) -> bool {
        match self {
            // The kernel level (crate::isa) includes every feature these kernels enable.
            Isa::Avx512Vnni => crate::isa::avx512_vnni(),
            Isa::Avx2 => crate::isa::avx2(),
            Isa::Portable => true,
        }
    }

    /// The best kernel family of this CPU, detected once.
    pub(super) fn detected() -> Isa {
        static ISA: OnceLock<Isa> = OnceLock::new();
        *ISA.get_or_init(|| {
            [Isa::Avx512Vnni, Isa::Avx2].into_iter().find(|isa| isa.is_available()).unwrap_or(Isa::Portable)
        })
    }
}

/// An [`Isa`] whose instructions this CPU has been checked to support.
/// Constructed only by [`Kern::checked`].
#[derive(Clone, Copy)]
pub(super) struct Kern(Isa);

impl Kern {
    pub(super) fn checked(isa: Isa) -> Result<Kern, String> {
        if isa.is_available() {
            Ok(Kern(isa))
        } else {
            Err(format!("qgemm: {isa:?} kernels are not supported by this CPU"))
        }
    }

    /// Computes the columns of `panels` for all rows of `a` into `c` (row
    /// stride `ldc`, column `j` of B stored at `j − col_base`).
    pub(super) fn block(
        self,
        a: ABlock<'_>,
        b: &PackedB,
        panels: &[Panel],
        c: &mut [i32],
        ldc: usize,
        col_base: usize,
    ) {
        match self.0 {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `Kern` holding `Avx512Vnni` is only built by
            // `Kern::checked`, after runtime detection of avx512f, avx512bw,
            // avx512vl and avx512vnni, the features `vnni_block` is compiled
            // for; it reads and writes memory only through the given slices.
            Isa::Avx512Vnni => unsafe { x86::vnni_block(a, b, panels, &mut x86::I32Out { c, ldc, col_base }) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `Kern` holding `Avx2` is only built by
            // `Kern::checked`, after runtime detection of avx2, the feature
            // `avx2_block` is compiled for.
            Isa::Avx2 => unsafe { x86::avx2_block(a, b, panels, c, ldc, col_base) },
            _ => portable_block(a, b, panels, c, ldc, col_base),
        }
    }

    /// Whether the kernels compute `rowsum(a')` themselves.
    pub(super) fn sums_rows(self) -> bool {
        self.0 == Isa::Avx512Vnni
    }

    /// `Σ (x ^ xor)` over the bytes of `row`, modulo 2^32.
    pub(super) fn row_sum(self, row: &[u8], xor: u8) -> u32 {
        match self.0 {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `Kern` holding `Avx2` is only built by
            // `Kern::checked`, after runtime detection of avx2.
            Isa::Avx2 => unsafe { x86::row_sum_avx2(row, xor) },
            _ => row_sum_portable(row, xor),
        }
    }
}

/// Plain-Rust kernel: same layouts, same (wrapping) results.
pub(super) fn portable_block(a: ABlock<'_>, b: &PackedB, panels: &[Panel], c: &mut [i32], ldc: usize, col_base: usize) {
    let xor = a.xor().to_le_bytes();
    for panel in panels {
        let p = b.view(panel);
        for r in 0..a.rows {
            // acc[v][4c + q] sums the products of k values ≡ q (mod 4) of
            // column 16v + c: an elementwise loop of 16-bit products (a u8
            // times an i8 fits in i16) widened into i32, which vectorizes.
            let mut acc = [[0i32; 64]; NV_MAX];
            let (words, _) = a.a[r * a.lda..][..a.k].as_chunks::<4>();
            for (g, group) in p.lines.chunks_exact(p.nv).enumerate() {
                let w = words.get(g).map_or_else(|| a.word(r, g).to_le_bytes(), |w| *w);
                let pattern = [[0, 1, 2, 3].map(|q| i16::from(w[q] ^ xor[q])); 16];
                for (acc, line) in acc.iter_mut().zip(group) {
                    for ((s, &x), &y) in acc.iter_mut().zip(pattern.as_flattened()).zip(&line.0) {
                        *s = s.wrapping_add(i32::from(x * i16::from(y)));
                    }
                }
            }
            let (rs, za) = (a.rs(r), a.za(r));
            let row = &mut c[r * ldc + panel.col0 - col_base..][..p.ncols];
            let sums = acc.as_flattened().as_chunks::<4>().0;
            for (j, (o, q)) in row.iter_mut().zip(sums).enumerate() {
                let dot = q.iter().fold(0i32, |s, &x| s.wrapping_add(x));
                *o = dot.wrapping_sub(rs.wrapping_mul(p.zq[j])).wrapping_sub(za.wrapping_mul(p.csk[j]));
            }
        }
    }
}
