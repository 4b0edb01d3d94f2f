//! Picking a tile kernel for the CPU's kernel set and a tile's size.

#[cfg(target_arch = "x86_64")]
use super::{AVX2_PIXELS, BLOCK, Tiles, tiles, x86};

/// An output buffer that parallel tasks write at disjoint places through this pointer (the
/// blocked convs here, the packed MatMul). Every user splits its work so that no two tasks
/// write one element.
#[derive(Clone, Copy)]
pub(crate) struct Out(pub *mut f32);
// SAFETY: every user's tasks write only their own elements (a conv task its rows, see
// `BlockedConv::compute`; a packed MatMul task its column pair of its rows), so sharing the
// pointer between rayon's threads never lets two of them touch one element.
unsafe impl Send for Out {}
// SAFETY: as above.
unsafe impl Sync for Out {}

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
    /// `[lo, hi]` of a clamping activation applied as the tile stores ([`crate::kernels::epilogue::Epilogue::store_clamp`]);
    /// [`NO_CLAMP`] when there is none.
    pub clamp: [f32; 2],
    /// The sums start from the values at `y`: a previous pass over other input channels.
    pub from_y: bool,
    /// The last pass: bias, residual and clamp are applied as the tile stores.
    pub finish: bool,
}

/// Picks the tile of `nob` output blocks × `r` pixels; `masks` say which lanes of each
/// block are stored (and read from `z`). With AVX2 the work runs as tiles of one block × at
/// most [`AVX2_PIXELS`] pixels.
///
/// A blocked input read at stride 1 or 2 (16 or 32 elements between pixels, neighbouring
/// channels adjacent) gets a tile compiled for that stride: each pixel's broadcast is then a
/// load at a constant displacement. With the stride a run-time value, the address arithmetic
/// (a dozen integer adds per input channel) went to the ports the FMAs issue on, and a
/// ResNet-50 3×3 conv ran at about two thirds of the FMA rate.
///
/// # Safety
///
/// As [`x86::regular_tile`], and [`super::available`] is true.
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
        let avx2 = tiles() == Some(Tiles::Avx2);
        // SAFETY: the caller's contract is the tiles'; a stride is picked only when the
        // context has it.
        unsafe {
            match (avx2, c.lane, c.px) {
                (true, 1, 16) => avx2_tiles::<16>(c, nob, r, x, w, b, y, z, masks),
                (true, 1, 32) => avx2_tiles::<32>(c, nob, r, x, w, b, y, z, masks),
                (true, ..) => avx2_tiles::<0>(c, nob, r, x, w, b, y, z, masks),
                (false, 1, 16) => avx512_tile::<16>(c, nob, r, x, w, b, y, z, masks),
                (false, 1, 32) => avx512_tile::<32>(c, nob, r, x, w, b, y, z, masks),
                (false, ..) => avx512_tile::<0>(c, nob, r, x, w, b, y, z, masks),
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (c, nob, r, x, w, b, y, z, masks);
        unreachable!("NCHWc kernels are built only where `available()`");
    }
}

/// [`regular_tile_dispatch`] with AVX-512: the tile of `nob` blocks × `r` pixels whose input
/// stride is `PX` (0: the context's).
///
/// # Safety
///
/// As [`regular_tile_dispatch`], and `PX` is 0 or the context's `px` with `lane` 1.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn avx512_tile<const PX: usize>(
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
    macro_rules! pick {
        ($($r:literal)*) => {
            match (nob, r) {
                // SAFETY: the caller's contract is the tile's.
                $((2, $r) => unsafe { x86::regular_tile::<2, $r, PX>(c, x, w, b, y, z, masks) },)*
                // SAFETY: as above.
                $((_, $r) => unsafe { x86::regular_tile::<1, $r, PX>(c, x, w, b, y, z, masks) },)*
                _ => {}
            }
        };
    }
    pick!(1 2 3 4 5 6 7 8 9 10 11 12);
}

/// [`regular_tile_dispatch`] with AVX2: one block × at most [`AVX2_PIXELS`] pixels at a time,
/// input stride `PX` (0: the context's).
///
/// # Safety
///
/// As [`regular_tile_dispatch`], and `PX` is 0 or the context's `px` with `lane` 1.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn avx2_tiles<const PX: usize>(
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
    for o in 0..nob.min(2) {
        let mut s = 0;
        while s < r {
            let rr = (r - s).min(AVX2_PIXELS);
            // SAFETY: pixels s .. s + rr of block o are a part of the caller's tile: the input
            // at x + s·px on, the weights and bias of block o, and the outputs (and z) at s·ys
            // on, inside what the contract covers.
            unsafe {
                let (xs, wo, bo) = (x.add(s * c.px), w.add(o * c.wob), b.add(o * BLOCK));
                let (ys, zs) = (y[o].add(s * c.ys), z.map(|z| z[o].add(s * c.ys)));
                match rr {
                    1 => x86::regular_tile_avx2::<1, PX>(c, xs, wo, bo, ys, zs, masks[o]),
                    2 => x86::regular_tile_avx2::<2, PX>(c, xs, wo, bo, ys, zs, masks[o]),
                    3 => x86::regular_tile_avx2::<3, PX>(c, xs, wo, bo, ys, zs, masks[o]),
                    4 => x86::regular_tile_avx2::<4, PX>(c, xs, wo, bo, ys, zs, masks[o]),
                    5 => x86::regular_tile_avx2::<5, PX>(c, xs, wo, bo, ys, zs, masks[o]),
                    _ => x86::regular_tile_avx2::<6, PX>(c, xs, wo, bo, ys, zs, masks[o]),
                }
            }
            s += rr;
        }
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
