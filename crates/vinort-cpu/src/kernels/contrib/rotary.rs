//! com.microsoft RotaryEmbedding: ONNX's RotaryEmbedding (opset 23, which came from it) with
//! the inputs ordered `input, position_ids, cos_cache, sin_cache`. `position_ids` is `(B, S)`,
//! or one start offset (shape `(1)`) from which positions count up. A 3-D input without
//! `num_heads` has one head per `2 · cos_cache.shape[1]` channels (ONNX Runtime requires
//! `num_heads` when `rotary_embedding_dim` is given). `scale` and `is_packed_batching` are
//! not used by ONNX Runtime's CPU kernel either. Runs on [`crate::kernels::attention::rotary`].

use vinort_ir::Values;
use vinort_ir::{Attr, DType, Error, Result, RunContext, Tensor, Value};

use super::{FLOATS, check_types};
use crate::kernel::{Kernel, NodeInfo, Registry, tensor_in};
use crate::kernels::attention::rotary;

pub(crate) fn register(r: &mut Registry) {
    r.op("com.microsoft", "RotaryEmbedding", factory);
}

struct MsRotary {
    /// The node as ONNX's RotaryEmbedding (num_heads filled in per run when absent).
    node: vinort_ir::Node,
    num_heads: i64,
    dim: i64,
}

fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    check_types(info, &[0, 2, 3], &FLOATS[..3])?;
    check_types(info, &[1], &[DType::I64])?;
    let num_heads = n.attr_or::<i64>("num_heads", 0)?;
    let dim = n.attr_or::<i64>("rotary_embedding_dim", 0)?;
    if dim > 0 && num_heads <= 0 {
        return Err(n.error("num_heads must be given with rotary_embedding_dim"));
    }
    let mut node = n.clone();
    node.domain = String::new();
    node.opset = 23;
    node.attrs.retain(|(k, _)| matches!(k.as_str(), "interleaved" | "num_heads" | "rotary_embedding_dim"));
    let inner = NodeInfo::bare(&node);
    rotary::factory(&inner)?;
    Ok(Box::new(MsRotary { node, num_heads, dim }))
}

impl Kernel for MsRotary {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let pos = tensor_in(inputs, 1)?;
        let cos = tensor_in(inputs, 2)?;
        tensor_in(inputs, 3)?;
        let (b, s) = match x.shape() {
            [b, s, _] => (*b, *s),
            [b, _, s, _] => (*b, *s),
            other => return Err(Error::invalid(format!("input must be 3-D or 4-D, got {other:?}"))),
        };
        if pos.dtype() != DType::I64 {
            return Err(Error::invalid(format!("position_ids must be int64, got {}", pos.dtype())));
        }
        let p = pos.to_i64_vec()?;
        let ids: Vec<i64> = match (pos.shape(), p.as_slice()) {
            ([1], [start]) => (0..b * s).map(|i| start + (i % s) as i64).collect(),
            (sh, _) if sh == [b, s] => p,
            (sh, _) => return Err(Error::invalid(format!("position_ids {sh:?} must be [{b}, {s}] or [1]"))),
        };
        let mut node = self.node.clone();
        if x.rank() == 3 && self.num_heads <= 0 && self.dim <= 0 {
            let head = 2 * cos.shape().get(1).copied().unwrap_or(0);
            let hidden = x.shape()[2];
            if head == 0 || hidden % head != 0 {
                return Err(Error::invalid(format!(
                    "cos_cache {:?} does not divide hidden size {hidden}",
                    cos.shape()
                )));
            }
            node.attrs.push(("num_heads".into(), Attr::Int((hidden / head) as i64)));
        }
        let info = NodeInfo::bare(&node);
        let kernel = rotary::factory(&info)?;
        let ids = Value::Tensor(Tensor::from_vec(&[b, s], ids)?);
        kernel.run(&[inputs[0], inputs[2], inputs[3], Some(&ids)], ctx)
    }
}
