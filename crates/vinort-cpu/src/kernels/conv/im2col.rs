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
    let ([i0, i1, i2], [_, o1, o2], [s0, s1, s2]) = (g.i, g.o, g.s);
    let (pi, po) = (prod3(&g.i), prod3(&g.o));
    let mut rows = col.chunks_mut(po);
    for ci in 0..cg {
        let xc = &x[ci * pi..][..pi];
        for [off0, off1, off2] in g.tap_offsets() {
            let Some(row) = rows.next() else { return };
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
    }
}
