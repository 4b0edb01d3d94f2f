//! [RotaryEmbedding](https://onnx.ai/onnx/operators/onnx__RotaryEmbedding.html), opset 23–latest.
//!
//! Rotates the first `rotary_embedding_dim` (default: all) channels of each head by the angles
//! whose cosines and sines are given. The pairs are `(x[c], x[c + dim/2])`, or with
//! `interleaved` the neighbours `(x[2c], x[2c + 1])`:
//! `(x1, x2) -> (cos·x1 - sin·x2, sin·x1 + cos·x2)`. The caches are `[batch, seq, dim/2]`, or
//! `[max_pos, dim/2]` indexed by `position_ids [batch, seq]`. Input is `[batch, heads, seq,
//! head]` or `[batch, seq, heads * head]` (with `num_heads`); the output has its shape.

use vinort_ir::Values;
use vinort_ir::{Error, Result, RunContext, Value};

use super::{Rnd, store};
use crate::kernel::{Kernel, NodeInfo, Registry, index_below, opt_tensor_in, tensors_in};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "RotaryEmbedding", factory);
}

struct Rotary {
    interleaved: bool,
    dim: usize,
    num_heads: usize,
}

pub(crate) fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    if let Some(d) = info.input_dtype(0) {
        Rnd::of(d)?;
    }
    let dim = n.attr_or::<i64>("rotary_embedding_dim", 0)?;
    let heads = n.attr_or::<i64>("num_heads", 0)?;
    if dim < 0 || heads < 0 {
        return Err(Error::invalid("RotaryEmbedding rotary_embedding_dim and num_heads must be nonnegative"));
    }
    Ok(Box::new(Rotary {
        interleaved: n.attr_or::<i64>("interleaved", 0)? != 0,
        dim: dim as usize,
        num_heads: heads as usize,
    }))
}

impl Kernel for Rotary {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let [x, cos, sin] = tensors_in(inputs)?;
        let pos = opt_tensor_in(inputs, 3)?;
        let rt = Rnd::of(x.dtype())?;
        let shape = x.shape();
        // (batch, heads, seq, head) and whether the layout is [b, s, h*d].
        let (b, h, s, hd, three_d) = match *shape {
            [b, h, s, d] => (b, h, s, d, false),
            [b, s, hidden] => {
                let h = self.num_heads;
                if h == 0 || hidden % h != 0 {
                    return Err(Error::invalid(format!(
                        "RotaryEmbedding 3-D input needs num_heads dividing {hidden}, got {h}"
                    )));
                }
                (b, h, s, hidden / h, true)
            }
            _ => return Err(Error::invalid(format!("RotaryEmbedding input must be 3-D or 4-D, got {shape:?}"))),
        };
        let dim = if self.dim == 0 { hd } else { self.dim };
        if dim > hd || dim % 2 != 0 {
            return Err(Error::invalid(format!("rotary_embedding_dim {dim} must be even and at most {hd}")));
        }
        let half = dim / 2;
        let (cv, sv) = (cos.to_f64_vec()?, sin.to_f64_vec()?);
        if cos.shape() != sin.shape() || cos.shape().last() != Some(&half) {
            return Err(Error::invalid(format!(
                "RotaryEmbedding caches {:?} and {:?} must agree and end in {half}",
                cos.shape(),
                sin.shape()
            )));
        }
        // Row of the caches for (batch, position).
        let rows = cv.len() / half.max(1);
        let row_of: Box<dyn Fn(usize, usize) -> Result<usize>> = match pos {
            Some(p) => {
                let ids = p.to_i64_vec()?;
                if ids.len() != b * s {
                    return Err(Error::invalid(format!("position_ids {:?} must be [{b}, {s}]", p.shape())));
                }
                Box::new(move |bi, si| {
                    let id = ids[bi * s + si];
                    index_below(id, rows)
                        .ok_or_else(|| Error::invalid(format!("position id {id} is outside the cache of {rows}")))
                })
            }
            None => {
                if rows != b * s {
                    return Err(Error::invalid(format!("caches {:?} must be [{b}, {s}, {half}]", cos.shape())));
                }
                Box::new(move |bi, si| Ok(bi * s + si))
            }
        };
        let xv = x.to_f64_vec()?;
        let mut out = xv.clone();
        for bi in 0..b {
            for si in 0..s {
                let r = row_of(bi, si)?;
                let (c, sn) = (&cv[r * half..(r + 1) * half], &sv[r * half..(r + 1) * half]);
                for hi in 0..h {
                    let base = if three_d { ((bi * s + si) * h + hi) * hd } else { ((bi * h + hi) * s + si) * hd };
                    for k in 0..half {
                        let (i1, i2) = if self.interleaved {
                            (base + 2 * k, base + 2 * k + 1)
                        } else {
                            (base + k, base + k + half)
                        };
                        let (x1, x2) = (xv[i1], xv[i2]);
                        out[i1] = rt.r(rt.r(c[k] * x1) - rt.r(sn[k] * x2));
                        out[i2] = rt.r(rt.r(sn[k] * x1) + rt.r(c[k] * x2));
                    }
                }
            }
        }
        Ok(smallvec::smallvec![store(x.dtype(), shape, &out)?.into()])
    }
}
