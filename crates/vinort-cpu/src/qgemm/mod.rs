//! Exact int8 matrix multiplication (the core of ONNX `MatMulInteger`,
//! `ConvInteger`, `QLinearMatMul` and `QLinearConv`) with AVX-512 VNNI, AVX2
//! and portable kernels.
//!
//! # What it computes
//!
//! `C[i][j] = Σ_p (A[i][p] − za_i) · (B[p][j] − zb_j)` in `i32` with
//! two's-complement wrapping: bit for bit what a naive loop using
//! `wrapping_sub` / `wrapping_mul` / `wrapping_add` gives, on every path.
//! `A` (m × k, row stride `lda`, the activations) and `B` (k × n, the
//! weights) are each `u8` or `i8`; `za` is per-tensor or per-row, `zb`
//! per-tensor or per-column.
//!
//! # How
//!
//! Every signedness combination is mapped onto `u8 × i8`, the operand types
//! of the VNNI instruction `vpdpbusd`: an `i8` activation `a` equals
//! `(a ^ 0x80) − 128`, so it is read as the `u8` `a ^ 0x80` with zero point
//! `za + 128`; a `u8` weight `b` is stored as the `i8` `b ^ 0x80` with zero
//! point `zb − 128`. With `a'`, `b'`, `za'`, `zb'` the remapped values,
//!
//! `Σ(a'−za')(b'−zb') = Σa'b' − zb'·rowsum(a') − za'·(colsum(b') − k·zb')`,
//!
//! a ring identity, hence exact modulo 2^32 for any zero points.
//!
//! * `PackedB::new` packs `B'` once into 64-byte lines (16 columns × 4
//!   consecutive k values, k zero-padded to a multiple of 4), grouped in
//!   panels of up to 48 columns, and precomputes `zb'` and
//!   `colsum(b') − k·zb'` per column.
//! * `qgemm` reads `A` in place (no copy): 4 bytes of a row are one `u32`
//!   broadcast to all lanes. The VNNI kernel keeps an 8-row × 48-column tile
//!   in 24 zmm accumulators, one `vpdpbusd` per 16 columns and 4 k values
//!   (the non-saturating form: each lane adds four `u8·i8` products, at most
//!   130 560 in magnitude, then wraps like `i32::wrapping_add`); a last line
//!   of at most 8 columns uses a ymm. When some `zb'` is nonzero it also
//!   gathers the 8 row words in one register and sums them with one more
//!   `vpdpbusd` against ones, so `rowsum(a')` costs no separate pass. The
//!   epilogue subtracts the zero-point terms (a scalar or one vector per tile
//!   when a zero point is uniform) and stores with masks, so the edges need
//!   no padding of `A` or `C`.
//! * The AVX2 kernel widens to `i16` and uses `vpmaddwd` (pairs of products,
//!   exact) instead of the saturating `vpmaddubsw`; the portable kernel is
//!   plain Rust that LLVM vectorizes. The path is chosen once per process
//!   from runtime CPU detection.
//!
//! # Why hand-written
//!
//! No well-kept Rust crate gives these semantics. BLAS-like crates
//! (`matrixmultiply`, `gemm`, …) are floating-point; the young integer GEMMs
//! do `i8 × i8` without zero points or expose raw-pointer APIs; the closest,
//! `rten-gemm` (RTen's GEMM), relies on the saturating `vpmaddubsw` on AVX2
//! machines, so it is exact only for range-reduced inputs there, and brings
//! its tensor and SIMD crates along. The production int8 GEMMs (oneDNN,
//! FBGEMM, XNNPACK, onnxruntime's MLAS) are C/C++. ONNX integer ops need all
//! four `u8`/`i8` combinations, per-row/per-column zero points and exact
//! `i32` wrap semantics on every CPU, which this module provides.

use rayon::prelude::*;

/// A borrowed int8 tensor: `u8` or `i8` elements.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Int8<'a> {
    U8(&'a [u8]),
    I8(&'a [i8]),
}

impl Int8<'_> {
    fn elems(&self) -> usize {
        match self {
            Int8::U8(s) => s.len(),
            Int8::I8(s) => s.len(),
        }
    }
}

/// Rows of `A` per register tile of the VNNI kernel (the other kernels walk
/// the same tiles).
const MR: usize = 8;
/// Columns per 64-byte line of packed `B` (16 `i32` lanes of a zmm register).
const LANES: usize = 16;
/// Lines (of 16 columns) per panel of packed `B`: panels are 48 columns wide.
const NV_MAX: usize = 3;
/// Work (m·n·k multiply-adds) below which `parallel == true` still runs on
/// the calling thread. Measured on a 2-core Zen 5 with a warm pool: splitting
/// 2^19 multiply-adds (~3 µs of VNNI work) over 2 threads already saves ~25%,
/// while below that the fork-join (~1 µs) eats the gain.
const PAR_MIN_WORK: usize = 1 << 19;
/// Target size in bytes of one block of rows of `A` (kept in L2 while all
/// panels of `B` sweep over it).
const A_BLOCK_BYTES: usize = 64 * 1024;

/// 64 bytes of packed `B`: for one group of 4 k values, 16 columns × 4 bytes
/// (byte `4·c + q` holds `B'[4g + q][col0 + c]`). Aligned so that every line is
/// one cache line and one aligned zmm load.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([i8; 64]);

/// A panel of packed `B`: columns `col0 .. col0 + ncols`, `nv` lines per k group.
#[derive(Clone, Copy, Debug)]
struct Panel {
    col0: usize,
    ncols: usize,
    nv: usize,
    /// Index of the panel's first line in `PackedB::lines`; the panel holds
    /// `kg · nv` lines, line `g · nv + v` covering k group `g`, columns
    /// `col0 + 16v ..`.
    line0: usize,
}

/// `B` packed once (at model compile time), with its column sums and zero
/// points folded in.
#[derive(Clone)]
pub(crate) struct PackedB {
    k: usize,
    n: usize,
    /// Number of k groups of 4 (`k` rounded up to a multiple of 4, over 4).
    kg: usize,
    panels: Vec<Panel>,
    lines: Vec<Line>,
    /// `zb'` per column, zero-padded to whole lines of the last panel.
    zbq: Vec<i32>,
    /// `colsum(b') − k·zb'` per column (wrapping), zero-padded like `zbq`.
    csk: Vec<i32>,
    /// `Some(zb')` when all columns share `zb'` (then no per-column product
    /// is needed, and for `zb' == 0` no row sums of A either).
    zb_uniform: Option<i32>,
}

impl std::fmt::Debug for PackedB {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackedB")
            .field("k", &self.k)
            .field("n", &self.n)
            .field("panels", &self.panels.len())
            .finish_non_exhaustive()
    }
}

impl PackedB {
    /// Packs `b`: k × n row-major (row stride n) when `trans == false`, or
    /// n × k row-major (Bᵀ given, as a Gemm `transB` / conv filter M × K) when
    /// `true`; `b` needs at least k·n elements. `zb` has length 1
    /// (per-tensor) or n (per-column). Both layouts are read sequentially;
    /// the packed form takes about `⌈k/4⌉·4 × ⌈n/16⌉·16` bytes plus 8 bytes
    /// per column.
    ///
    /// For a convolution `W[M × K] · cols[K × P]`, compute the transpose
    /// instead: `PackedB::new(W, K, M, true, zw)` and `qgemm` with the patches
    /// as rows of `A` (P × K) give `C` as P × M (pixels × channels).
    pub(crate) fn new(b: Int8<'_>, k: usize, n: usize, trans: bool, zb: &[i32]) -> Result<PackedB, String> {
        let need = k.checked_mul(n).ok_or_else(|| format!("qgemm: B size {k} x {n} overflows usize"))?;
        if b.elems() < need {
            return Err(format!("qgemm: B has {} elements, {k} x {n} needs {need}", b.elems()));
        }
        if zb.len() != 1 && zb.len() != n {
            return Err(format!("qgemm: B zero point has {} values, expected 1 or n = {n}", zb.len()));
        }
        let kg = k.div_ceil(4);
        let mut panels = Vec::with_capacity(n.div_ceil(LANES * NV_MAX));
        let mut col0 = 0;
        let mut line0 = 0usize;
        while col0 < n {
            let ncols = (n - col0).min(LANES * NV_MAX);
            let nv = ncols.div_ceil(LANES);
            panels.push(Panel { col0, ncols, nv, line0 });
            line0 = kg
                .checked_mul(nv)
                .and_then(|x| x.checked_add(line0))
                .ok_or_else(|| format!("qgemm: B size {k} x {n} overflows usize"))?;
            col0 += ncols;
        }
        let padded = panels.last().map_or(0, |p| p.col0 + p.nv * LANES);
        let mut lines = vec![Line([0; 64]); line0];
        let mut colsum = vec![0i32; padded];
        // B' (remapped to i8), in the caller's layout.
        let remapped: Vec<i8>;
        let (bq, zb_adj): (&[i8], i32) = match b {
            Int8::I8(s) => (&s[..need], 0),
            Int8::U8(s) => {
                remapped = s[..need].iter().map(|&x| (x ^ 0x80) as i8).collect();
                (&remapped, -128)
            }
        };
        // B'[p][j] goes to line `panel.line0 + (p/4)·nv + v`, byte `4·c + p%4`,
        // where `j = panel.col0 + 16v + c`. Both loops read `bq` in order.
        for panel in &panels {
            let cols = panel.col0..panel.col0 + panel.ncols;
            let lines = &mut lines[panel.line0..];
            if trans {
                // Column j of B is row j of Bᵀ: k contiguous values.
                for (within, j) in cols.enumerate() {
                    let (v, byte0) = (within / LANES, (within % LANES) * 4);
                    let column = &bq[j * k..(j + 1) * k];
                    for (g, quad) in column.chunks(4).enumerate() {
                        lines[g * panel.nv + v].0[byte0..byte0 + quad.len()].copy_from_slice(quad);
                    }
                    colsum[j] = column.iter().fold(0i32, |s, &x| s.wrapping_add(i32::from(x)));
                }
            } else {
                for (p, row) in bq.chunks_exact(n).enumerate() {
                    let (g, q) = (p / 4, p % 4);
                    let row = &row[cols.clone()];
                    for ((within, &x), sum) in row.iter().enumerate().zip(&mut colsum[cols.clone()]) {
                        lines[g * panel.nv + within / LANES].0[(within % LANES) * 4 + q] = x;
                        *sum = sum.wrapping_add(i32::from(x));
                    }
                }
            }
        }

        let kk = k as i32; // Only k mod 2^32 matters: the arithmetic wraps.
        let mut zbq = vec![0i32; padded];
        let mut csk = vec![0i32; padded];
        for j in 0..n {
            let z = if zb.len() == 1 { zb[0] } else { zb[j] }.wrapping_add(zb_adj);
            zbq[j] = z;
            csk[j] = colsum[j].wrapping_sub(kk.wrapping_mul(z));
        }
        let zb0 = zbq.first().copied().unwrap_or(0);
        let zb_uniform = zbq[..n].iter().all(|&z| z == zb0).then_some(zb0);
        Ok(PackedB { k, n, kg, panels, lines, zbq, csk, zb_uniform })
    }

    /// The inner dimension (rows of B, columns of A).
    pub(crate) fn k(&self) -> usize {
        self.k
    }

    /// The number of output columns.
    pub(crate) fn n(&self) -> usize {
        self.n
    }

    fn view(&self, p: &Panel) -> PanelView<'_> {
        let width = p.nv * LANES;
        PanelView {
            zb_uniform: self.zb_uniform,
            lines: &self.lines[p.line0..p.line0 + p.nv * self.kg],
            nv: p.nv,
            zq: &self.zbq[p.col0..p.col0 + width],
            csk: &self.csk[p.col0..p.col0 + width],
            ncols: p.ncols,
        }
    }
}

/// One panel of packed `B`, as the kernels see it.
struct PanelView<'b> {
    /// `kg · nv` lines: line `g · nv + v` is k group `g`, columns `16v ..`.
    lines: &'b [Line],
    nv: usize,
    /// `nv · 16` values each.
    zq: &'b [i32],
    csk: &'b [i32],
    ncols: usize,
    zb_uniform: Option<i32>,
}

/// Rows of `A` as the kernels read them, in place: row `r` is
/// `a[r · lda .. r · lda + k]`, and 4 consecutive bytes are read as one
/// little-endian `u32` (xor `0x8080_8080` when the elements are `i8`, giving
/// `a'`).
#[derive(Clone, Copy)]
struct ABlock<'a> {
    a: &'a [u8],
    lda: usize,
    k: usize,
    rows: usize,
    signed: bool,
    /// Whether `rowsum(a')` is needed (not when every `zb'` is 0).
    need_rs: bool,
    /// `rowsum(a')` per row when needed, precomputed for the kernels that do
    /// not compute it on the fly (empty otherwise).
    rs: &'a [i32],
    /// `Some(za')` when every row has the same `za'`; else `za` has one per row.
    za_uniform: Option<i32>,
    za: &'a [i32],
}

impl<'a> ABlock<'a> {
    /// Whether `a` holds all the rows (validated once per call; the kernels
    /// check it again before reading through raw pointers).
    fn covers_rows(&self) -> bool {
        self.rows == 0
            || (self.rows - 1)
                .checked_mul(self.lda)
                .and_then(|x| x.checked_add(self.k))
                .is_some_and(|need| need <= self.a.len())
    }

    /// Rows `r0 ..` (at most `rows` of them).
    fn sub(self, r0: usize, rows: usize) -> ABlock<'a> {
        let rows = rows.min(self.rows.saturating_sub(r0));
        ABlock {
            a: self.a.get(r0 * self.lda..).unwrap_or(&[]),
            rows,
            rs: self.rs.get(r0..r0 + rows).unwrap_or(&[]),
            za: self.za.get(r0..r0 + rows).unwrap_or(&[]),
            ..self
        }
    }

    /// The same rows in tiles of at most [`MR`].
    fn tiles(self) -> impl Iterator<Item = ABlock<'a>> {
        (0..self.rows).step_by(MR).map(move |r0| self.sub(r0, MR))
    }

    fn rs(&self, r: usize) -> i32 {
        self.rs.get(r).copied().unwrap_or(0)
    }

    fn za(&self, r: usize) -> i32 {
        self.za_uniform.unwrap_or_else(|| self.za[r])
    }

    /// Bytes `4g .. 4g + 4` of row `r` as stored (not yet xor'ed), zero past
    /// k: padding meets zero bytes of packed `B`, whatever its value.
    fn word(&self, r: usize, g: usize) -> u32 {
        let row = &self.a[r * self.lda..][..self.k];
        let mut bytes = [0u8; 4];
        for (d, &x) in bytes.iter_mut().zip(&row[4 * g..]) {
            *d = x;
        }
        u32::from_le_bytes(bytes)
    }

    fn xor(&self) -> u32 {
        if self.signed { 0x8080_8080 } else { 0 }
    }
}

/// Per-row values of a block of `A`: `rowsum(a')` and `za'` (when needed).
#[derive(Default)]
struct RowInfo {
    rs: Vec<i32>,
    za: Vec<i32>,
}

/// `A` as given by the caller (validated), viewed as bytes.
struct ASrc<'a> {
    a: &'a [u8],
    signed: bool,
    lda: usize,
    k: usize,
    za: &'a [i32],
    za_uniform: Option<i32>,
    need_rs: bool,
}

impl<'a> ASrc<'a> {
    fn new(a: Int8<'a>, lda: usize, k: usize, za: &'a [i32], b: &PackedB) -> ASrc<'a> {
        let (a, signed) = match a {
            Int8::U8(s) => (s, false),
            // SAFETY: `i8` and `u8` have the same size and alignment and every
            // bit pattern is valid for both; the new slice borrows the same
            // memory for the same lifetime, read-only.
            Int8::I8(s) => (unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), s.len()) }, true),
        };
        let za_adj = if signed { 128 } else { 0 };
        let za0 = za.first().copied().unwrap_or(0);
        let za_uniform = za.iter().all(|&z| z == za0).then_some(za0.wrapping_add(za_adj));
        ASrc { a, signed, lda, k, za, za_uniform, need_rs: b.zb_uniform != Some(0) }
    }

    /// Rows `row0 .. row0 + rows`, with what the kernel needs per row in `info`.
    fn block<'s>(&'s self, kern: Kern, row0: usize, rows: usize, info: &'s mut RowInfo) -> ABlock<'s> {
        let (xor, za_adj) = if self.signed { (0x80u8, 128i32) } else { (0, 0) };
        let rows_of = |i: usize| &self.a[i * self.lda..][..self.k];
        info.rs.clear();
        if self.need_rs && !kern.sums_rows() {
            info.rs.extend((row0..row0 + rows).map(|i| kern.row_sum(rows_of(i), xor) as i32));
        }
        info.za.clear();
        if self.za_uniform.is_none() {
            info.za.extend(self.za[row0..row0 + rows].iter().map(|z| z.wrapping_add(za_adj)));
        }
        ABlock {
            a: &self.a[row0 * self.lda..],
            lda: self.lda,
            k: self.k,
            rows,
            signed: self.signed,
            need_rs: self.need_rs,
            rs: &info.rs,
            za_uniform: self.za_uniform,
            za: &info.za,
        }
    }
}

mod dispatch;
mod repack;
mod requant;
#[cfg(target_arch = "x86_64")]
mod x86;
pub(crate) use requant::{Requant, qgemm_requant};
#[cfg(target_arch = "x86_64")]
pub(crate) use x86::narrow16;

use dispatch::{Isa, Kern, row_sum_portable};

/// C (m × n, row stride `ldc`) = the exact product described in the module
/// docs, `C[i][j] = Σ_p (A[i][p] − za_i)·(B[p][j] − zb_j)` wrapping in `i32`.
///
/// * `a`: m × k (`k = b.k()`), row stride `lda >= k`, at least
///   `(m − 1)·lda + k` elements; `za`: 1 value (per-tensor) or m (per-row).
/// * `c`: row stride `ldc >= n` (`n = b.n()`), at least `(m − 1)·ldc + n`
///   elements. Only the first n elements of each of the m rows are written
///   (overwritten, not accumulated into); the gaps are left untouched.
/// * No alignment is required of `a` or `c`.
/// * `parallel`: when the product has at least 2^19 multiply-adds, split it
///   over rayon's current pool (`rayon::current_num_threads()`, so it follows
///   `ThreadPool::install`): by blocks of rows, or by column panels when m is
///   small. With `false` everything runs on the calling thread; pass `false`
///   from inside a rayon task that already has its share of the work.
///
/// Returns `Err` (and writes nothing) when a size or length is inconsistent.
#[allow(clippy::too_many_arguments)] // The GEMM shape: A, lda, za, B, C, ldc.
pub(crate) fn qgemm(
    m: usize,
    a: Int8<'_>,
    lda: usize,
    za: &[i32],
    b: &PackedB,
    c: &mut [i32],
    ldc: usize,
    parallel: bool,
) -> Result<(), String> {
    let par_min = parallel.then_some(PAR_MIN_WORK);
    qgemm_impl(Isa::detected(), m, a, lda, za, b, c, ldc, par_min)
}

/// Validates a product's sizes (A m × k at stride `lda`, `za` 1 or m values, C m × n at stride
/// `ldc`) and returns C cut to what it needs, or `None` when there is nothing to compute.
fn checked<'c, T>(
    m: usize,
    a: Int8<'_>,
    lda: usize,
    za: &[i32],
    b: &PackedB,
    c: &'c mut [T],
    ldc: usize,
) -> Result<Option<&'c mut [T]>, String> {
    let (k, n) = (b.k, b.n);
    if za.len() != 1 && za.len() != m {
        return Err(format!("qgemm: A zero point has {} values, expected 1 or m = {m}", za.len()));
    }
    if lda < k {
        return Err(format!("qgemm: lda = {lda} < k = {k}"));
    }
    if ldc < n {
        return Err(format!("qgemm: ldc = {ldc} < n = {n}"));
    }
    if m == 0 || n == 0 {
        return Ok(None);
    }
    let need = |rows: usize, ld: usize, cols: usize| {
        (rows - 1)
            .checked_mul(ld)
            .and_then(|x| x.checked_add(cols))
            .ok_or_else(|| format!("qgemm: size {rows} x {ld} overflows usize"))
    };
    let need_a = need(m, lda, k)?;
    if a.elems() < need_a {
        return Err(format!("qgemm: A has {} elements, {m} x {k} with lda {lda} needs {need_a}", a.elems()));
    }
    let need_c = need(m, ldc, n)?;
    if c.len() < need_c {
        return Err(format!("qgemm: C has {} elements, {m} x {n} with ldc {ldc} needs {need_c}", c.len()));
    }
    Ok(Some(&mut c[..need_c]))
}

/// Rows per block: about A_BLOCK_BYTES of A (kept in L2 while the panels of B sweep over it),
/// a multiple of MR.
fn block_rows(k: usize) -> usize {
    (A_BLOCK_BYTES / k.max(1)).clamp(2 * MR, 64 * MR) / MR * MR
}

#[allow(clippy::too_many_arguments)]
fn qgemm_impl(
    isa: Isa,
    m: usize,
    a: Int8<'_>,
    lda: usize,
    za: &[i32],
    b: &PackedB,
    c: &mut [i32],
    ldc: usize,
    par_min: Option<usize>,
) -> Result<(), String> {
    let kern = Kern::checked(isa)?;
    let Some(c) = checked(m, a, lda, za, b, c, ldc)? else { return Ok(()) };
    let (k, n) = (b.k, b.n);
    let src = ASrc::new(a, lda, k, za, b);
    let mc = block_rows(k);

    let work = m.saturating_mul(n).saturating_mul(k);
    let threads = match par_min {
        // Not while a one-thread plan runs on its caller's thread: rayon's calls there would go
        // to the global pool (more threads than asked for, and a hand-off per product).
        Some(min) if crate::par::worth(work, min) => rayon::current_num_threads(),
        _ => 1,
    };
    if threads <= 1 {
        let mut info = RowInfo::default();
        for (i, chunk) in c.chunks_mut(mc.saturating_mul(ldc)).enumerate() {
            let row0 = i * mc;
            let block = src.block(kern, row0, (m - row0).min(mc), &mut info);
            kern.block(block, b, &b.panels, chunk, ldc, 0);
        }
    } else if m >= 2 * MR * threads || b.panels.len() < 2 || m > 64 * MR {
        // Split over blocks of rows of C.
        let rows = m.div_ceil(threads).div_ceil(MR) * MR;
        let rows = rows.min(mc);
        c.par_chunks_mut(rows.saturating_mul(ldc)).enumerate().for_each_init(RowInfo::default, |info, (i, chunk)| {
            let row0 = i * rows;
            let block = src.block(kern, row0, (m - row0).min(rows), info);
            kern.block(block, b, &b.panels, chunk, ldc, 0);
        });
    } else {
        // Few rows, several panels (e.g. batch-1 MatMul): split over panels,
        // each task computing its columns into a buffer of its own.
        let per_task = b.panels.len().div_ceil(threads);
        let parts: Vec<(usize, usize, Vec<i32>)> = b
            .panels
            .par_chunks(per_task)
            .map(|panels| {
                let col0 = panels[0].col0;
                let width = panels.iter().map(|p| p.ncols).sum::<usize>();
                let mut info = RowInfo::default();
                let block = src.block(kern, 0, m, &mut info);
                let mut buf = vec![0i32; m * width];
                kern.block(block, b, panels, &mut buf, width, col0);
                (col0, width, buf)
            })
            .collect();
        for (col0, width, buf) in parts {
            for (crow, brow) in c.chunks_mut(ldc).zip(buf.chunks_exact(width)) {
                crow[col0..col0 + width].copy_from_slice(brow);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
