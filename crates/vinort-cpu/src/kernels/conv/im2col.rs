//! The convolution window walk shared by Conv and ConvTranspose (f32/f64) and the quantized
//! convolutions (ConvInteger and QLinearConv, i32): one convolution's geometry with 1 to 3
//! spatial axes left-padded to three ([`Geo3`]) and the input offsets of its kernel taps
//! ([`Geo3::tap_offsets`]), and [`im2col`], which lays the input patches out as a matrix so the
//! convolution becomes one matrix product per (image, group).

use crate::kernels::window::{Geometry, Window, to3, valid_range};

/// One convolution's geometry with spatial axes left-padded to three.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geo3 {
    pub n: usize,
    pub c: usize,
    pub m: usize,
    pub group: usize,
    pub i: [usize; 3],
    pub o: [usize; 3],
    pub k: [usize; 3],
    pub s: [usize; 3],
    pub d: [usize; 3],
    /// Begin pads; negative only for a ConvTranspose whose output_shape asks for more than
    /// the natural size.
    pub p: [isize; 3],
}

impl Geo3 {
    /// `(C/group, M/group)` and the element counts of an input plane, an output plane and a
    /// kernel window: what every walk over this geometry starts from.
    pub(crate) fn sizes(&self) -> ((usize, usize), [usize; 3]) {
        ((self.c / self.group, self.m / self.group), [prod3(&self.i), prod3(&self.o), prod3(&self.k)])
    }

    /// A forward convolution's geometry: `(N, C, M, group)`, X's spatial extents, and the
    /// window resolved for W's kernel with its output geometry.
    pub(crate) fn forward(
        (n, c, m, group): (usize, usize, usize, usize),
        spatial: &[usize],
        win: &Window,
        geo: &Geometry,
    ) -> Geo3 {
        Geo3 {
            n,
            c,
            m,
            group,
            i: to3(spatial, 1),
            o: to3(&geo.out, 1),
            k: to3(&win.kernel, 1),
            s: to3(&win.strides, 1),
            d: to3(&win.dilations, 1),
            p: to3(&geo.pad_begin, 0).map(|v| v as isize),
        }
    }

    /// Per kernel tap, in W's `[k0, k1, k2]` order, the input offset it reads at output
    /// position 0 along each axis: `tap * dilation - pad_begin`.
    pub(crate) fn tap_offsets(&self) -> impl Iterator<Item = [isize; 3]> + use<> {
        let ([k0, k1, k2], [d0, d1, d2], [p0, p1, p2]) = (self.k, self.d, self.p);
        (0..k0).flat_map(move |a| {
            (0..k1).flat_map(move |b| {
                (0..k2).map(move |e| [(a * d0) as isize - p0, (b * d1) as isize - p1, (e * d2) as isize - p2])
            })
        })
    }
}

/// Product of the three extents.
pub(crate) fn prod3(v: &[usize; 3]) -> usize {
    v.iter().product()
}

/// Lays out the input patches of `cg` channels as a (cg * kernel) x (output positions) matrix
/// whose row order matches W's `[C/group, k0, k1, k2]` layout.
pub(crate) fn im2col<T: Copy + Default>(g: &Geo3, cg: usize, x: &[T], col: &mut [T]) {
    im2col_pad(g, cg, x, col, T::default())
}

/// [`im2col`] with `pad` for the positions outside the input (a quantized input's zero point,
/// so padding is zero once shifted).
pub(crate) fn im2col_pad<T: Copy>(g: &Geo3, cg: usize, x: &[T], col: &mut [T], pad: T) {
    let (pi, po) = (prod3(&g.i), prod3(&g.o));
    let same_width = g.s[1] == 1 && g.s[2] == 1 && g.o[2] == g.i[2];
    let mut rows = col.chunks_mut(po);
    for ci in 0..cg {
        let xc = &x[ci * pi..][..pi];
        for off in g.tap_offsets() {
            let Some(row) = rows.next() else { return };
            if same_width { tap_row_same_width(g, xc, off, row, pad) } else { tap_row(g, xc, off, row, pad) }
        }
    }
}

/// One tap's row of the column matrix (`off`: the tap's input offsets), output row by output
/// row.
fn tap_row<T: Copy>(g: &Geo3, xc: &[T], [off0, off1, off2]: [isize; 3], row: &mut [T], pad: T) {
    let ([i0, i1, i2], [_, o1, o2], [s0, s1, s2]) = (g.i, g.o, g.s);
    let (lo, hi) = valid_range(o2, i2, s2, off2);
    for (r0, dst0) in row.chunks_mut(o1 * o2).enumerate() {
        let y0 = (r0 * s0) as isize + off0;
        for (r1, dst) in dst0.chunks_mut(o2).enumerate() {
            let y1 = (r1 * s1) as isize + off1;
            if y0 < 0 || y0 >= i0 as isize || y1 < 0 || y1 >= i1 as isize || lo == hi {
                dst.fill(pad);
                continue;
            }
            dst[..lo].fill(pad);
            dst[hi..].fill(pad);
            let src = &xc[(y0 as usize * i1 + y1 as usize) * i2..][..i2];
            let start = (lo as isize * s2 as isize + off2) as usize;
            if s2 == 1 {
                dst[lo..hi].copy_from_slice(&src[start..start + (hi - lo)]);
            } else {
                for (dv, sv) in dst[lo..hi].iter_mut().zip(src[start..].iter().step_by(s2)) {
                    *dv = *sv;
                }
            }
        }
    }
}

/// [`tap_row`] when the last two strides are 1 and output rows are as wide as input rows (a
/// "same"-padded convolution): the in-bounds rows of the tap are then a single shifted copy of
/// the input plane, after which only each row's padding columns are set. Row by row, a small
/// plane (a 56-wide int8 row is 56 bytes) cost one `memcpy` and two `memset` calls per output
/// row and tap, which took half a 3x3 int8 convolution's time.
fn tap_row_same_width<T: Copy>(g: &Geo3, xc: &[T], [off0, off1, off2]: [isize; 3], row: &mut [T], pad: T) {
    let ([i0, i1, i2], [_, o1, o2], [s0, _, _]) = (g.i, g.o, g.s);
    let (lo, hi) = valid_range(o2, i2, 1, off2);
    // Output rows r1 in a..b read input rows r1 + off1 inside 0..i1.
    let (a, b) = valid_range(o1, i1, 1, off1);
    for (r0, dst0) in row.chunks_mut(o1 * o2).enumerate() {
        let y0 = (r0 * s0) as isize + off0;
        if y0 < 0 || y0 >= i0 as isize || a == b || lo == hi {
            dst0.fill(pad);
            continue;
        }
        dst0[..a * o2].fill(pad);
        dst0[b * o2..].fill(pad);
        // Output (r1, c) reads plane element (r1 + off1)·i2 + c + off2 of depth y0, i.e. its
        // own index plus `shift`. The first and the last in-bounds elements are inside the
        // input, so everything between them is too.
        let shift = y0 * (i1 * i2) as isize + off1 * i2 as isize + off2;
        let (d0, d1) = (a * o2 + lo, (b - 1) * o2 + hi);
        let src = (d0 as isize + shift) as usize;
        dst0[d0..d1].copy_from_slice(&xc[src..src + (d1 - d0)]);
        if lo > 0 || hi < o2 {
            for r in dst0[a * o2..b * o2].chunks_exact_mut(o2) {
                r[..lo].fill(pad);
                r[hi..].fill(pad);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::test_support::config;

    /// The definition: row `(c, k0, k1, k2)`, column `(o0, o1, o2)` holds input
    /// `x[c][o·s + k·d − p]` per axis, or `pad` where that is outside the input.
    fn naive(g: &Geo3, cg: usize, x: &[i32], pad: i32) -> Vec<i32> {
        let mut out = Vec::new();
        for c in 0..cg {
            for k0 in 0..g.k[0] {
                for k1 in 0..g.k[1] {
                    for k2 in 0..g.k[2] {
                        for o0 in 0..g.o[0] {
                            for o1 in 0..g.o[1] {
                                for o2 in 0..g.o[2] {
                                    let at = |o: usize, k: usize, a: usize| (o * g.s[a] + k * g.d[a]) as isize - g.p[a];
                                    let (y0, y1, y2) = (at(o0, k0, 0), at(o1, k1, 1), at(o2, k2, 2));
                                    let inside = |v: isize, a: usize| v >= 0 && v < g.i[a] as isize;
                                    out.push(if inside(y0, 0) && inside(y1, 1) && inside(y2, 2) {
                                        x[((c * g.i[0] + y0 as usize) * g.i[1] + y1 as usize) * g.i[2] + y2 as usize]
                                    } else {
                                        pad
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }

    proptest! {
        #![proptest_config(config(128))]

        /// Both walks (the general one and the same-width shifted copy) lay out the patches
        /// as defined, over 1 to 3 spatial axes, strides, dilations and pads, including pads
        /// wider than the kernel reaches.
        #[test]
        fn im2col_matches_definition(i in proptest::array::uniform3(1usize..7), k in proptest::array::uniform3(1usize..4),
                                     s in proptest::array::uniform3(1usize..3), d in proptest::array::uniform3(1usize..3),
                                     p in proptest::array::uniform3(0usize..4), same in any::<bool>(), cg in 1usize..3) {
            // `same` picks pads that keep each extent (with stride 1), the shifted-copy case.
            let (s, p) = if same { ([s[0], 1, 1], [p[0], (k[1] - 1) * d[1] / 2, (k[2] - 1) * d[2] / 2]) } else { (s, p) };
            let ext = |a: usize, pe: usize| (i[a] + p[a] + pe).checked_sub((k[a] - 1) * d[a] + 1).map(|v| v / s[a] + 1);
            // End pads complete the total so that "same" shapes come out exactly.
            let end = |a: usize| if same && a > 0 { (k[a] - 1) * d[a] - p[a] } else { p[a] };
            let (Some(o0), Some(o1), Some(o2)) = (ext(0, end(0)), ext(1, end(1)), ext(2, end(2))) else { return Ok(()) };
            let g = Geo3 { n: 1, c: cg, m: 1, group: 1, i, o: [o0, o1, o2], k, s, d, p: p.map(|v| v as isize) };
            let x: Vec<i32> = (0..cg * prod3(&i)).map(|v| v as i32 + 1).collect();
            let mut col = vec![-7; cg * prod3(&k) * prod3(&g.o)];
            im2col_pad(&g, cg, &x, &mut col, 0);
            prop_assert_eq!(col, naive(&g, cg, &x, 0));
        }
    }
}
