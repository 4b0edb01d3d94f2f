//! A matrix product by constant f32 weights packed once, when the kernel is built: `Y = A·B`
//! (`+ bias + z`, then an activation) for every row of A, on AVX-512.
//!
//! The GEMM crate packs B again on every call (an eighth of a BERT's time went to packing
//! weights that never change). Here B is stored as blocks of 16 columns, `[⌈N/16⌉][K][16]`,
//! and multiplied by the NCHWc convolution's micro-kernel
//! ([`crate::kernels::conv::nchwc::regular_tile_dispatch`]): rows of A are its pixels and K its
//! input channels, a tile of up to 12 rows × 32 columns stays in registers over all of K, and
//! the bias, residual and activation are applied to the tile as it is stored. A task owns a
//! pair of column blocks over a run of rows, so its 2 × 16 × K weights stay in L1 while the rows
//! of A stream past.
//!
//! Each output element is one sum over k in order, so results are independent of threads and
//! tiles.

use vinort_ir::{Error, Result, Tensor};

use crate::kernels::conv::nchwc::{self, BLOCK, Out, RegularTile, regular_tile_dispatch};
use crate::kernels::epilogue::Act;

use super::few::{self, Few};

/// Rows of A per tile.
const TILE: usize = 12;
/// Rows of A per task.
const ROWS: usize = 8 * TILE;

/// B (`K × N`, row-major) packed for [`PackedB::product`].
#[derive(Debug)]
pub(crate) struct PackedB {
    k: usize,
    n: usize,
    /// `[⌈N/16⌉][K][16]`, columns past N zero; a tensor for its alignment.
    w: Tensor,
}

impl PackedB {
    /// Packs `b` when this CPU runs the micro-kernel.
    pub(crate) fn new(b: &[f32], k: usize, n: usize) -> Option<PackedB> {
        if !nchwc::available() || k == 0 || n == 0 || b.len() != k * n {
            return None;
        }
        let nb = n.div_ceil(BLOCK);
        // Every element written once, 16 columns of a row at a time (attention packs its
        // `Kᵀ` and `V` on every run); the last block's columns past N are zeroed.
        let w = Tensor::build_full::<f32>(&[nb * k * BLOCK], |p| {
            for (i, row) in b.chunks_exact(n).enumerate() {
                for (jb, cols) in row.chunks(BLOCK).enumerate() {
                    let at = (jb * k + i) * BLOCK;
                    p[at..at + cols.len()].copy_from_slice(cols);
                    p[at + cols.len()..at + BLOCK].fill(0.0);
                }
            }
        });
        Some(PackedB { k, n, w })
    }

    /// The shape of B it holds.
    pub(crate) fn shape(&self) -> [usize; 2] {
        [self.k, self.n]
    }

    /// `y = a·B (+ bias) (+ z)`, then `act`, for `a` of `rows × K` and `y`, `z` of `rows × N`;
    /// `bias` has N elements.
    pub(crate) fn product(
        &self,
        a: &[f32],
        y: &mut [f32],
        bias: Option<&[f32]>,
        z: Option<&[f32]>,
        act: Option<Act>,
    ) -> Result<()> {
        let (k, n) = (self.k, self.n);
        let rows = a.len() / k;
        let w = self.w.as_slice::<f32>()?;
        if a.len() != rows * k
            || y.len() != rows * n
            || z.is_some_and(|z| z.len() != y.len())
            || bias.is_some_and(|b| b.len() != n)
        {
            return Err(Error::invalid("packed matrix product buffers do not match their shapes"));
        }
        // Relu and Clip are applied by the kernels as they store; other activations after them.
        let clamp = act.and_then(Act::clamp);
        let out = Out(y.as_mut_ptr());
        if rows <= few::MAX_ROWS && few::available() {
            let few = Few { k, n, a, w, bias, z, clamp: clamp.unwrap_or(nchwc::NO_CLAMP) };
            let groups = few.groups(rows);
            let task = |g: usize| {
                // The whole wrapper, not its pointer field alone (which is not Sync).
                let out = &out;
                // SAFETY: the lengths of a, y, z and bias were checked above against rows, k
                // and n, the packed weights hold ⌈n/16⌉ blocks of k × 16 (built in `new`), the
                // CPU runs the kernel, and each task writes only its own group's columns.
                unsafe { few.group(g, out.0) }
            };
            let bar = if crate::par::warm() { few::WARM_PARALLEL_MACS } else { few::PARALLEL_MACS };
            if groups > 1 && crate::par::worth(rows * n * k, bar) {
                use rayon::prelude::*;
                (0..groups).into_par_iter().for_each(task);
            } else {
                (0..groups).for_each(task);
            }
            if let Some(act) = act.filter(|_| clamp.is_none()) {
                act.apply(y);
            }
            return Ok(());
        }
        let nb = n.div_ceil(BLOCK);
        let pairs = nb.div_ceil(2);
        let spans = rows.div_ceil(ROWS);
        let ctx = RegularTile {
            taps: &[(0, 0)],
            cin: k,
            lpb: k,
            lane: 1,
            blk: 0,
            px: k,
            wob: k * BLOCK,
            ys: n,
            clamp: clamp.unwrap_or(nchwc::NO_CLAMP),
            from_y: false,
            finish: true,
        };
        let task = |t: usize| {
            // The whole wrapper, not its pointer field alone (which is not Sync).
            let out = &out;
            let (pair, span) = (t / spans, t % spans);
            let ob = 2 * pair;
            let nob = (nb - ob).min(2);
            let cols = (n - ob * BLOCK).min(nob * BLOCK);
            let masks: [u16; 2] = std::array::from_fn(|o| lane_mask(cols.saturating_sub(o * BLOCK)));
            // The pair's biases, zero past N (read whole by the tile).
            let mut bv = [0f32; 2 * BLOCK];
            if let Some(b) = bias {
                bv[..cols].copy_from_slice(&b[ob * BLOCK..ob * BLOCK + cols]);
            }
            let (r0, r1) = (span * ROWS, ((span + 1) * ROWS).min(rows));
            let mut r = r0;
            while r < r1 {
                let h = (r1 - r).min(TILE);
                let ys: [usize; 2] = std::array::from_fn(|o| r * n + (ob + o.min(nob - 1)) * BLOCK);
                // SAFETY: rows r..r + h of A are inside `a` (rows × K, checked above) and the
                // tile reads K lanes of each; the packed weights hold ⌈N/16⌉ blocks of K × 16
                // (built in `new`), of which this pair's `nob`; `bv` holds 32 biases; the masked
                // lanes of rows r..r + h at columns ob·16.. lie inside `y` (and `z`, checked to
                // be as long), and no other task writes this pair's columns of these rows.
                unsafe {
                    regular_tile_dispatch(
                        &ctx,
                        nob,
                        h,
                        a.as_ptr().add(r * k),
                        w.as_ptr().add(ob * k * BLOCK),
                        bv.as_ptr(),
                        ys.map(|i| out.0.add(i)),
                        z.map(|z| ys.map(|i| z.as_ptr().add(i))),
                        masks,
                    );
                }
                if let Some(act) = act.filter(|_| clamp.is_none()) {
                    for row in r..r + h {
                        // SAFETY: this task's columns of a row it just wrote, touched by no
                        // other task.
                        let s = unsafe { std::slice::from_raw_parts_mut(out.0.add(row * n + ob * BLOCK), cols) };
                        act.apply(s);
                    }
                }
                r += h;
            }
        };
        let tasks = pairs * spans;
        if tasks > 1 && crate::par::worth(rows * n * k, crate::par::MACS) {
            use rayon::prelude::*;
            (0..tasks).into_par_iter().for_each(task);
        } else {
            (0..tasks).for_each(task);
        }
        Ok(())
    }
}

/// The first `lanes` (at most 16) lanes.
fn lane_mask(lanes: usize) -> u16 {
    if lanes >= BLOCK { u16::MAX } else { (1u16 << lanes) - 1 }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::test_support as ts;

    proptest! {
        #![proptest_config(ts::config(48))]

        /// Every element is the f64 sum of its products (within f32 rounding of K terms), plus
        /// the bias and residual, through the activation; columns past N and rows of other
        /// tiles are not touched. One to three rows take the few-row kernel, whose passes
        /// span 8 column blocks (so N past 128 for whole passes and narrow tails).
        #[test]
        fn packed_product_matches_the_definition(rows in prop_oneof![1usize..40, 1usize..4], k in 1usize..70,
                                                 n in prop_oneof![1usize..50, 120usize..300],
                                                 bias in any::<bool>(), res in any::<bool>(), act in 0usize..4,
                                                 seed in any::<u64>()) {
            use rand::{Rng, SeedableRng};
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut draw = |len: usize| (0..len).map(|_| rng.random_range(-2.0f32..2.0)).collect::<Vec<_>>();
            let (a, b, bv, z) = (draw(rows * k), draw(k * n), draw(n), draw(rows * n));
            let Some(p) = PackedB::new(&b, k, n) else { return Ok(()) };
            let mut y = vec![f32::NAN; rows * n];
            let act = [None, Some(Act::Relu), Some(Act::Clip(-0.5, 0.75)), Some(Act::Sigmoid)][act];
            p.product(&a, &mut y, bias.then_some(&bv[..]), res.then_some(&z[..]), act)
                .unwrap_or_else(|e| panic!("{e}"));
            let mut want = vec![0f64; rows * n];
            for (i, w) in want.iter_mut().enumerate() {
                let (r, c) = (i / n, i % n);
                let mut v: f64 = (0..k).map(|j| f64::from(a[r * k + j]) * f64::from(b[j * n + c])).sum();
                if bias { v += f64::from(bv[c]); }
                if res { v += f64::from(z[i]); }
                *w = match act {
                    None => v,
                    Some(Act::Relu) => v.max(0.0),
                    Some(Act::Clip(lo, hi)) => v.clamp(f64::from(lo), f64::from(hi)),
                    Some(_) => 1.0 / (1.0 + (-v).exp()),
                };
            }
            let got: Vec<f64> = y.iter().map(|v| f64::from(*v)).collect();
            ts::assert_close(&got, &want, 1e-5, 1e-5 * k as f64, "packed product");
        }
    }
}
