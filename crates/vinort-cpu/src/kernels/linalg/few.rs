//! A product of one to a few rows of A by packed constant weights ([`super::packed::PackedB`]):
//! a classifier's Linear layer at batch 1, a streaming model's frame.
//!
//! Such a product is all weight traffic: each of the `K × N` weights is read once for a handful
//! of multiply-adds, from L2 when the model is small. The tile kernel that [`PackedB::product`]
//! uses for many rows keeps 2 column blocks per pass, so with one row it has 2 running sums and
//! waits on its own additions; the `gemm` crate packs both operands again on every call. Here
//! one pass takes up to 8 column blocks (`R × 8` sums in registers, AVX-512; `R × 4` or
//! `R × 2` with AVX2), broadcasts each A value once for all of them, and prefetches each block's
//! stream a kilobyte ahead, which measured at 7.8 µs for a 1536 × 128 product where the dot
//! product path ran 11 µs.
//!
//! As in the tile kernel, each output is one sum over k in order, then `+ bias (+ z)` and the
//! clamp, so the result does not depend on how rows or columns are grouped.
//!
//! [`PackedB::product`]: super::packed::PackedB::product

use crate::kernels::conv::nchwc::BLOCK;

/// Rows of A the kernel takes at most per pass.
pub(super) const MAX_ROWS: usize = 3;

/// Multiply-adds from which a few-row product splits its column groups across threads. Far
/// above [`crate::par::MACS`]: such a product runs near L2 bandwidth on one core (a 256 × 768
/// step of a GRU, 196 K multiply-adds, takes ~8 µs), and waking a sleeping worker costs about
/// as much; a recurrence pays it at every step (a one-step GRU ran 55 µs with the hand-off,
/// 23 µs without).
pub(super) const PARALLEL_MACS: usize = 1 << 20;

/// [`PARALLEL_MACS`] while the pool's workers are kept polling ([`crate::par::warm`]): a split
/// is then a push and a steal, and each core streams its own half of the weights from its own
/// L2 (an LSTM of 128 × 100 steps, 65 K multiply-adds a step: onnxruntime splits each step on
/// two threads, 0.31 ms against 0.40 on one).
pub(super) const WARM_PARALLEL_MACS: usize = 1 << 15;

/// Whether this CPU runs the few-row kernel.
pub(super) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::isa::avx2()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Column blocks per pass of `rows` rows: the most whose sums fit in registers.
fn blocks_per_pass(rows: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    if crate::isa::avx512() {
        return 8;
    }
    if rows == 1 { 4 } else { 2 }
}

/// The operands of one product: A (`rows × k`), the packed weights `[⌈n/16⌉][k][16]`, the
/// bias (n values), the residual `z` (`rows × n`, as the output) and the clamp.
pub(super) struct Few<'a> {
    pub k: usize,
    pub n: usize,
    pub a: &'a [f32],
    pub w: &'a [f32],
    pub bias: Option<&'a [f32]>,
    pub z: Option<&'a [f32]>,
    pub clamp: [f32; 2],
}

impl Few<'_> {
    /// Column groups of the product: tasks a caller may run in parallel, each writing only its
    /// own columns of `y`.
    pub(super) fn groups(&self, rows: usize) -> usize {
        self.n.div_ceil(BLOCK).div_ceil(blocks_per_pass(rows.min(MAX_ROWS)))
    }

    /// Columns of group `g` for every row of A, into `y`.
    ///
    /// # Safety
    ///
    /// `available()`; the slices hold what [`Few`] says (the caller checked their lengths);
    /// `y` points at `rows × n` writable values of which no other task writes group `g`'s
    /// columns meanwhile.
    pub(super) unsafe fn group(&self, g: usize, y: *mut f32) {
        let rows = self.a.len() / self.k;
        let per = blocks_per_pass(rows.min(MAX_ROWS));
        let nb = self.n.div_ceil(BLOCK);
        let (b0, b1) = (g * per, ((g + 1) * per).min(nb));
        let mut r = 0;
        while r < rows {
            let h = (rows - r).min(MAX_ROWS);
            // SAFETY: rows r..r + h of A and y, blocks b0..b1 of the weights, as the contract says.
            unsafe { self.pass(r, h, b0, b1 - b0, y) };
            r += h;
        }
    }

    /// Rows `r..r + h` by blocks `b0..b0 + nb`.
    ///
    /// # Safety
    ///
    /// As [`Few::group`], with `h ≤ MAX_ROWS` and `nb ≤ blocks_per_pass(h)`.
    unsafe fn pass(&self, r: usize, h: usize, b0: usize, nb: usize, y: *mut f32) {
        #[cfg(target_arch = "x86_64")]
        {
            let p = Pass { few: self, r, b0, y };
            // SAFETY: the contract, and the CPU has what each branch's kernel needs.
            unsafe {
                if crate::isa::avx512() {
                    return match h {
                        1 => p.avx512_rows::<1>(nb),
                        2 => p.avx512_rows::<2>(nb),
                        _ => p.avx512_rows::<3>(nb),
                    };
                }
                match h {
                    1 => p.avx2_rows::<1>(nb),
                    2 => p.avx2_rows::<2>(nb),
                    _ => p.avx2_rows::<3>(nb),
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (r, h, b0, nb, y);
            unreachable!("the few-row kernel runs only where `available()`");
        }
    }
}

/// One pass: its rows start at `r`, its blocks at `b0`.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Pass<'a> {
    few: &'a Few<'a>,
    r: usize,
    b0: usize,
    y: *mut f32,
}

/// Prefetch distance in rows of k (each a 64-byte line of one block's stream).
#[cfg(target_arch = "x86_64")]
const AHEAD: usize = 16;

#[cfg(target_arch = "x86_64")]
impl Pass<'_> {
    /// `H` rows by `nb` (1 to 8) blocks with AVX-512: the kernel compiled for that many.
    ///
    /// # Safety
    ///
    /// As [`Few::pass`]; AVX-512F.
    #[target_feature(enable = "avx512f")]
    unsafe fn avx512_rows<const H: usize>(&self, nb: usize) {
        // SAFETY: the caller's contract, with nb blocks.
        unsafe {
            match nb {
                8 => self.avx512::<H, 8>(),
                7 => self.avx512::<H, 7>(),
                6 => self.avx512::<H, 6>(),
                5 => self.avx512::<H, 5>(),
                4 => self.avx512::<H, 4>(),
                3 => self.avx512::<H, 3>(),
                2 => self.avx512::<H, 2>(),
                _ => self.avx512::<H, 1>(),
            }
        }
    }

    /// `H` rows by `NB` blocks with AVX-512: `H · NB` running sums.
    ///
    /// # Safety
    ///
    /// As [`Few::pass`]; AVX-512F.
    #[target_feature(enable = "avx512f")]
    unsafe fn avx512<const H: usize, const NB: usize>(&self) {
        use std::arch::x86_64::*;
        let f = self.few;
        let k = f.k;
        // SAFETY: A holds rows r..r + H of k values, the weights NB blocks of k × 16 from b0;
        // prefetches may point anywhere (they never fault) and are formed with wrapping_add.
        unsafe {
            let a = f.a.as_ptr().add(self.r * k);
            let w = f.w.as_ptr().add(self.b0 * k * BLOCK);
            let mut acc = [[_mm512_setzero_ps(); NB]; H];
            for i in 0..k {
                for b in 0..NB {
                    _mm_prefetch::<_MM_HINT_T0>(w.wrapping_add((b * k + i + AHEAD) * BLOCK).cast());
                }
                for (row, sums) in acc.iter_mut().enumerate() {
                    let x = _mm512_set1_ps(*a.add(row * k + i));
                    for (b, s) in sums.iter_mut().enumerate() {
                        *s = _mm512_fmadd_ps(x, _mm512_loadu_ps(w.add((b * k + i) * BLOCK)), *s);
                    }
                }
            }
            let mut lanes = [[0f32; BLOCK]; NB];
            for (row, sums) in acc.iter().enumerate() {
                for (l, s) in lanes.iter_mut().zip(sums) {
                    _mm512_storeu_ps(l.as_mut_ptr(), *s);
                }
                self.store(row, lanes.as_flattened());
            }
        }
    }

    /// `H` rows by `nb` (1 to 4) blocks with AVX2: the kernel compiled for that many.
    ///
    /// # Safety
    ///
    /// As [`Few::pass`]; AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2_rows<const H: usize>(&self, nb: usize) {
        // SAFETY: the caller's contract, with nb blocks.
        unsafe {
            match nb {
                4 => self.avx2::<H, 4>(),
                3 => self.avx2::<H, 3>(),
                2 => self.avx2::<H, 2>(),
                _ => self.avx2::<H, 1>(),
            }
        }
    }

    /// `H` rows by `NB` blocks with AVX2: two 8-lane sums per block and row.
    ///
    /// # Safety
    ///
    /// As [`Few::pass`]; AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2<const H: usize, const NB: usize>(&self) {
        use std::arch::x86_64::*;
        let f = self.few;
        let k = f.k;
        // SAFETY: as in `avx512`.
        unsafe {
            let a = f.a.as_ptr().add(self.r * k);
            let w = f.w.as_ptr().add(self.b0 * k * BLOCK);
            let mut acc = [[[_mm256_setzero_ps(); 2]; NB]; H];
            for i in 0..k {
                for b in 0..NB {
                    _mm_prefetch::<_MM_HINT_T0>(w.wrapping_add((b * k + i + AHEAD) * BLOCK).cast());
                }
                for (row, sums) in acc.iter_mut().enumerate() {
                    let x = _mm256_set1_ps(*a.add(row * k + i));
                    for (b, s) in sums.iter_mut().enumerate() {
                        let wb = w.add((b * k + i) * BLOCK);
                        s[0] = _mm256_fmadd_ps(x, _mm256_loadu_ps(wb), s[0]);
                        s[1] = _mm256_fmadd_ps(x, _mm256_loadu_ps(wb.add(8)), s[1]);
                    }
                }
            }
            let mut lanes = [[0f32; BLOCK]; NB];
            for (row, sums) in acc.iter().enumerate() {
                for (l, s) in lanes.iter_mut().zip(sums) {
                    _mm256_storeu_ps(l.as_mut_ptr(), s[0]);
                    _mm256_storeu_ps(l.as_mut_ptr().add(8), s[1]);
                }
                self.store(row, lanes.as_flattened());
            }
        }
    }

    /// Row `row` of the pass from its sums over the pass's blocks: `+ bias (+ z)`, the clamp
    /// (NaN passes, as the tile kernel's), and the columns inside n stored. Inlined into the
    /// kernel that calls it, so it is vectorized for that kernel's instruction set; each case
    /// of bias and z is its own loop over slices (a recurrence stores every step: 12% of an
    /// LSTM's time went to the loop that tested both per element through a raw pointer).
    ///
    /// # Safety
    ///
    /// As [`Few::pass`].
    #[inline(always)]
    unsafe fn store(&self, row: usize, sums: &[f32]) {
        let f = self.few;
        let c0 = self.b0 * BLOCK;
        let cols = sums.len().min(f.n - c0);
        let at = (self.r + row) * f.n + c0;
        // SAFETY: columns c0 .. c0 + cols < n of a row of this pass, in `y` and this task's own.
        let y = unsafe { std::slice::from_raw_parts_mut(self.y.add(at), cols) };
        let sums = &sums[..cols];
        let [lo, hi] = f.clamp;
        let clamp = |v: f32| {
            let v = if v < lo { lo } else { v };
            if v > hi { hi } else { v }
        };
        match (f.bias.map(|b| &b[c0..c0 + cols]), f.z.map(|z| &z[at..at + cols])) {
            (None, None) => y.iter_mut().zip(sums).for_each(|(o, s)| *o = clamp(*s)),
            (Some(b), None) => y.iter_mut().zip(sums).zip(b).for_each(|((o, s), b)| *o = clamp(s + b)),
            (None, Some(z)) => y.iter_mut().zip(sums).zip(z).for_each(|((o, s), z)| *o = clamp(s + z)),
            (Some(b), Some(z)) => {
                y.iter_mut().zip(sums).zip(b).zip(z).for_each(|(((o, s), b), z)| *o = clamp((s + b) + z))
            }
        }
    }
}
