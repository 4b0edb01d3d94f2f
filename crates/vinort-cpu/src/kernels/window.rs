//! Window geometry for every windowed op (Conv, ConvTranspose, DeformConv, the pools,
//! ConvInteger, QLinearConv): the attributes and ONNX's output-extent rule come from
//! [`vinort_ir::ops::window`], the one place shape inference and OpenVINO's semantic rules read
//! them too; this module adds only the loop-nest helpers the kernels share.

pub(crate) use vinort_ir::ops::window::{AutoPad, Geometry, Window, WindowAttrs};

/// Left-pads a per-axis list to three axes with `fill`, so 1-D, 2-D and 3-D windows share one
/// loop nest.
pub(crate) fn to3(v: &[usize], fill: usize) -> [usize; 3] {
    let mut o = [fill; 3];
    let off = 3 - v.len();
    o[off..].copy_from_slice(v);
    o
}

/// The range of `o` in `0..out` for which `o * s + off` lies in `0..len`.
pub(crate) fn valid_range(out: usize, len: usize, s: usize, off: isize) -> (usize, usize) {
    let s = s as isize;
    let lo = if off >= 0 { 0 } else { (-off + s - 1) / s };
    let hi = if len as isize - off <= 0 { 0 } else { (len as isize - off + s - 1) / s };
    let hi = (hi as usize).min(out);
    let lo = (lo as usize).min(hi);
    (lo, hi)
}
