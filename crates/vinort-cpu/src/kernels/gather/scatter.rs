//! [TensorScatter](https://onnx.ai/onnx/operators/onnx__TensorScatter.html), opset 24–latest,
//! any element type: writes an update into a KV cache along the sequence axis, linearly or
//! circularly, at per-batch write indices.

use vinort_ir::{Error, Result, Tensor, Value};

use crate::kernel::{FnKernel, Kernel, NodeInfo, Registry, norm_axis, opt_tensor_in, tensor_in};
use crate::kernels::support::split;

pub(crate) fn register(r: &mut Registry) {
    r.op("", "TensorScatter", tensorscatter_factory);
}

fn tensorscatter_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let axis = n.attr_or::<i64>("axis", -2)?;
    let circular = n.choice_attr("mode", Some("linear"), &[("linear", false), ("circular", true)])?;
    Ok(Box::new(FnKernel(move |inputs: &[Option<&Value>]| {
        let past = tensor_in(inputs, 0)?;
        let upd = tensor_in(inputs, 1)?;
        let ps = past.shape();
        let us = upd.shape();
        let a = norm_axis(axis, ps.len())?;
        if a == 0
            || upd.dtype() != past.dtype()
            || us.len() != ps.len()
            || us.iter().zip(ps).enumerate().any(|(i, (u, p))| i != a && u != p)
            || us[a] > ps[a]
        {
            return Err(Error::invalid(format!("update {us:?} does not fit cache {ps:?} on axis {a}")));
        }
        let batch = ps[0];
        let wi = match opt_tensor_in(inputs, 2)? {
            Some(t) => t.to_i64_vec()?,
            None => vec![0; batch],
        };
        if wi.len() != batch {
            return Err(Error::invalid(format!("{} write indices for batch {batch}", wi.len())));
        }
        let (outer, max_seq, inner) = split(ps, a);
        let seq = us[a];
        let per_batch = outer / batch.max(1);
        let es = past.dtype().size();
        let (pb, ub) = (past.as_bytes(), upd.as_bytes());
        let row = inner * es;
        let mut err = None;
        let y = Tensor::build_raw(past.dtype(), ps, |out| {
            out.copy_from_slice(pb);
            for p in 0..outer {
                let w = wi[p / per_batch.max(1)];
                for s in 0..seq {
                    let mut c = w + s as i64;
                    if circular {
                        c = c.rem_euclid(max_seq as i64);
                    }
                    if c < 0 || c as usize >= max_seq {
                        err = Some(Error::invalid(format!("write index {c} is outside the cache")));
                        return;
                    }
                    let dst = (p * max_seq + c as usize) * row;
                    let src = (p * seq + s) * row;
                    out[dst..dst + row].copy_from_slice(&ub[src..src + row]);
                }
            }
        })?;
        if let Some(e) = err {
            return Err(e);
        }
        Ok(smallvec::smallvec![Value::from(y)])
    })))
}
