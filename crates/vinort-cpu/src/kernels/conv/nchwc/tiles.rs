//! Picking a tile kernel for the CPU's kernel set and a tile's size.

#[cfg(target_arch = "x86_64")]
use super::{AVX2_PIXELS, BLOCK, Tiles, tiles, x86};

/// The clamp of a tile without a clamping activation: the identity.
pub(crate) const NO_CLAMP: [f32; 2] = [f32::NEG_INFINITY, f32::INFINITY];

/// What a regular tile needs besides its pointers. Also the micro-kernel of a MatMul by
/// packed constant weights ([`crate::kernels::linalg::packed`]): rows of A are its pixels, K
/// its channels.
pub(crate) struct RegularTile<'a> {
    /// The taps: (input offset from the tile's pointer, packed weight offset of the tap).
    pub taps: &'a [(usize, usize)],
    /// Input channels.
    pub cin: usize,
    /// Input channels per block: 16, or all of them when the input is NCHW.
    pub lpb: usize,
    /// Input elements between neighbouring channels of a block: 1, or a plane when NCHW.
    pub lane: usize,
    /// Input elements per input block (plane × 16).
    pub blk: usize,
    /// Input elements between neighbouring output pixels (stride × 16).
    pub px: usize,
    /// Packed weight elements per output block.
    pub wob: usize,
    /// Output elements between neighbouring pixels (16 blocked, N for a row-major matrix).
    pub ys: usize,
    /// `[lo, hi]` of a clamping activation applied as the tile stores ([`Epilogue::store_clamp`]);
    /// [`NO_CLAMP`] when there is none.
    pub clamp: [f32; 2],
}

/// Picks the tile of `nob` output blocks × `r` pixels; `masks` say which lanes of each
/// block are stored (and read from `z`). With AVX2 the work runs as tiles of one block × at
/// most [`AVX2_PIXELS`] pixels.
///
/// # Safety
///
/// As [`x86::regular_tile`], and [`available`] is true.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn regular_tile_dispatch(
    c: &RegularTile<'_>,
    nob: usize,
    r: usize,
    x: *const f32,
    w: *const f32,
    b: *const f32,
    y: [*mut f32; 2],
    z: Option<[*const f32; 2]>,
    masks: [u16; 2],
) {
    #[cfg(target_arch = "x86_64")]
    {
        if tiles() == Some(Tiles::Avx2) {
            for o in 0..nob.min(2) {
                let mut s = 0;
                while s < r {
                    let rr = (r - s).min(AVX2_PIXELS);
                    // SAFETY: pixels s .. s + rr of block o are a part of the caller's tile:
                    // the input at x + s·px on, the weights and bias of block o, and the
                    // outputs (and z) at s·ys on, inside what the contract covers.
                    unsafe {
                        let (xs, wo, bo) = (x.add(s * c.px), w.add(o * c.wob), b.add(o * BLOCK));
                        let (ys, zs) = (y[o].add(s * c.ys), z.map(|z| z[o].add(s * c.ys)));
                        match rr {
                            1 => x86::regular_tile_avx2::<1>(c, xs, wo, bo, ys, zs, masks[o]),
                            2 => x86::regular_tile_avx2::<2>(c, xs, wo, bo, ys, zs, masks[o]),
                            3 => x86::regular_tile_avx2::<3>(c, xs, wo, bo, ys, zs, masks[o]),
                            4 => x86::regular_tile_avx2::<4>(c, xs, wo, bo, ys, zs, masks[o]),
                            5 => x86::regular_tile_avx2::<5>(c, xs, wo, bo, ys, zs, masks[o]),
                            _ => x86::regular_tile_avx2::<6>(c, xs, wo, bo, ys, zs, masks[o]),
                        }
                    }
                    s += rr;
                }
            }
            return;
        }
        macro_rules! pick {
            ($($r:literal)*) => {
                match (nob, r) {
                    // SAFETY: the caller's contract is the tile's.
                    $((2, $r) => unsafe { x86::regular_tile::<2, $r>(c, x, w, b, y, z, masks) },)*
                    // SAFETY: as above.
                    $((_, $r) => unsafe { x86::regular_tile::<1, $r>(c, x, w, b, y, z, masks) },)*
                    _ => {}
                }
            };
        }
        pick!(1 2 3 4 5 6 7 8 9 10 11 12);
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (c, nob, r, x, w, b, y, z, masks);
        unreachable!("NCHWc kernels are built only where `available()`");
    }
}

/// Picks the depthwise tile of `r` pixels (with AVX2, tiles of at most [`AVX2_PIXELS`]).
///
/// # Safety
///
/// As [`x86::depthwise_tile`], and [`available`] is true.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn depthwise_tile_dispatch(
    taps: &[(usize, usize)],
    px: usize,
    r: usize,
    x: *const f32,
    w: *const f32,
    b: *const f32,
    y: *mut f32,
    z: Option<*const f32>,
    clamp: [f32; 2],
) {
    #[cfg(target_arch = "x86_64")]
    {
        if tiles() == Some(Tiles::Avx2) {
            let mut s = 0;
            while s < r {
                let rr = (r - s).min(AVX2_PIXELS);
                // SAFETY: pixels s .. s + rr are a part of the caller's tile: the input at
                // x + s·px on, the outputs (and z) at s·16 on.
                unsafe {
                    let (xs, ys, zs) = (x.add(s * px), y.add(s * BLOCK), z.map(|z| z.add(s * BLOCK)));
                    match rr {
                        1 => x86::depthwise_tile_avx2::<1>(taps, px, xs, w, b, ys, zs, clamp),
                        2 => x86::depthwise_tile_avx2::<2>(taps, px, xs, w, b, ys, zs, clamp),
                        3 => x86::depthwise_tile_avx2::<3>(taps, px, xs, w, b, ys, zs, clamp),
                        4 => x86::depthwise_tile_avx2::<4>(taps, px, xs, w, b, ys, zs, clamp),
                        5 => x86::depthwise_tile_avx2::<5>(taps, px, xs, w, b, ys, zs, clamp),
                        _ => x86::depthwise_tile_avx2::<6>(taps, px, xs, w, b, ys, zs, clamp),
                    }
                }
                s += rr;
            }
            return;
        }
        macro_rules! pick {
            ($($r:literal)*) => {
                match r {
                    // SAFETY: the caller's contract is the tile's.
                    $($r => unsafe { x86::depthwise_tile::<$r>(taps, px, x, w, b, y, z, clamp) },)*
                    _ => {}
                }
            };
        }
        pick!(1 2 3 4 5 6 7 8 9 10 11 12);
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (taps, px, r, x, w, b, y, z, clamp);
        unreachable!("NCHWc kernels are built only where `available()`");
    }
}
