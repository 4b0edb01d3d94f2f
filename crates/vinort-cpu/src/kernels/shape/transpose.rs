//! Axis permutations, every element type:
//! [Transpose](https://onnx.ai/onnx/operators/onnx__Transpose.html) 1–,
//! [DepthToSpace](https://onnx.ai/onnx/operators/onnx__DepthToSpace.html) 1– (DCR, CRD from 11),
//! [SpaceToDepth](https://onnx.ai/onnx/operators/onnx__SpaceToDepth.html) 1– (CRD from 28).
//!
//! All three are one strided copy. The copy engine merges axes that stay adjacent (so a perm
//! that moves whole blocks becomes a few long contiguous copies) and walks true transposes in
//! cache-sized tiles.

use vinort_ir::{Error, Result, Tensor};

use super::copy::{Dims, Step, Strided, dense_strides, run_plan};
use super::kernel;
use crate::kernel::{Kernel, NodeInfo, Registry, index_below, tensor_in};

pub(super) fn register(r: &mut Registry) {
    r.op("", "Transpose", transpose);
    r.op("", "DepthToSpace", depth_to_space);
    r.op("", "SpaceToDepth", space_to_depth);
}

/// `x` seen with `view` (same element count) and permuted by `perm`, stored as `out_shape`.
fn permute_view(x: &Tensor, view: &[usize], perm: &[usize], out_shape: &[usize]) -> Result<Tensor> {
    let vs = dense_strides(view);
    let shape: Dims<usize> = perm.iter().map(|p| view[*p]).collect();
    let strides: Dims<isize> = perm.iter().map(|p| vs[*p]).collect();
    run_plan(x.dtype(), &[x], out_shape, &[Step::Strided(Strided::dense(0, 0, strides, &shape))])
}

/// Transposes `x`: output axis `i` is input axis `perm[i]` (reversed axes when `perm` is None).
pub(crate) fn transpose_tensor(x: &Tensor, perm: Option<&[i64]>) -> Result<Tensor> {
    let r = x.rank();
    let perm: Dims<usize> = match perm {
        None => (0..r).rev().collect(),
        Some(p) => {
            let mut seen: Dims<bool> = smallvec::smallvec![false; r];
            let mut out = Dims::new();
            for &a in p {
                match index_below(a, r) {
                    Some(a) if !seen[a] => {
                        seen[a] = true;
                        out.push(a);
                    }
                    _ => return Err(Error::invalid(format!("perm {p:?} is not a permutation of {r} axes"))),
                }
            }
            if out.len() != r {
                return Err(Error::invalid(format!("perm {p:?} is not a permutation of {r} axes")));
            }
            out
        }
    };
    let shape: Dims<usize> = perm.iter().map(|p| x.shape()[*p]).collect();
    permute_view(x, x.shape(), &perm, &shape)
}

fn transpose(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let perm: Option<Vec<i64>> = info.node.attr("perm")?;
    Ok(kernel(move |inputs| Ok(smallvec::smallvec![transpose_tensor(tensor_in(inputs, 0)?, perm.as_deref())?.into()])))
}

/// Blocksize and whether the mode is CRD (column-row-depth) rather than the default DCR.
fn block_attrs(info: &NodeInfo<'_>) -> Result<(usize, bool)> {
    let n = info.node;
    let bs: i64 = n.req_attr("blocksize")?;
    let bs = usize::try_from(bs).ok().filter(|b| *b > 0).ok_or_else(|| n.error("blocksize must be positive"))?;
    let crd = match n.attr_or("mode", "DCR".to_owned())?.as_str() {
        "DCR" => false,
        "CRD" => true,
        m => return Err(n.error(format!("unknown mode '{m}'"))),
    };
    Ok((bs, crd))
}

fn nchw(x: &Tensor) -> Result<[usize; 4]> {
    match *x.shape() {
        [b, c, h, w] => Ok([b, c, h, w]),
        _ => Err(Error::invalid(format!("expected a 4-D input, got shape {:?}", x.shape()))),
    }
}

pub(super) fn depth_to_space_tensor(x: &Tensor, bs: usize, crd: bool) -> Result<Tensor> {
    let [b, c, h, w] = nchw(x)?;
    let too_big = || Error::invalid(format!("blocksize {bs} is too large"));
    let bb = bs.checked_mul(bs).ok_or_else(too_big)?;
    if !c.is_multiple_of(bb) {
        return Err(Error::invalid(format!("{c} channels do not divide into blocks of {bs}x{bs}")));
    }
    let c2 = c / bb;
    let out = [b, c2, h.checked_mul(bs).ok_or_else(too_big)?, w.checked_mul(bs).ok_or_else(too_big)?];
    if crd {
        permute_view(x, &[b, c2, bs, bs, h, w], &[0, 1, 4, 2, 5, 3], &out)
    } else {
        permute_view(x, &[b, bs, bs, c2, h, w], &[0, 3, 4, 1, 5, 2], &out)
    }
}

pub(super) fn space_to_depth_tensor(x: &Tensor, bs: usize, crd: bool) -> Result<Tensor> {
    let [b, c, h, w] = nchw(x)?;
    if !h.is_multiple_of(bs) || !w.is_multiple_of(bs) {
        return Err(Error::invalid(format!("spatial size {h}x{w} does not divide into blocks of {bs}")));
    }
    let view = [b, c, h / bs, bs, w / bs, bs];
    let depth = bs.checked_mul(bs).and_then(|bb| bb.checked_mul(c));
    let out = [b, depth.ok_or_else(|| Error::invalid(format!("blocksize {bs} is too large")))?, h / bs, w / bs];
    let perm = if crd { [0, 1, 3, 5, 2, 4] } else { [0, 3, 5, 1, 2, 4] };
    permute_view(x, &view, &perm, &out)
}

fn depth_to_space(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let (bs, crd) = block_attrs(info)?;
    Ok(kernel(move |inputs| Ok(smallvec::smallvec![depth_to_space_tensor(tensor_in(inputs, 0)?, bs, crd)?.into()])))
}

fn space_to_depth(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let (bs, crd) = block_attrs(info)?;
    Ok(kernel(move |inputs| Ok(smallvec::smallvec![space_to_depth_tensor(tensor_in(inputs, 0)?, bs, crd)?.into()])))
}
