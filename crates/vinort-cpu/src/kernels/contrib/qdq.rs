//! ONNX Runtime's `com.microsoft` quantization ops (opset 1), as its
//! [ContribOperators](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md)
//! documentation defines them and its CPU kernels compute them, run on the ONNX-domain
//! kernels of [`crate::kernels::quant::qdq`] and [`super::norm`]:
//!
//! - [QuantizeLinear](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md#com.microsoft.QuantizeLinear):
//!   x (f32 or f16), `y_scale` per tensor or 1-D per `axis` (default 1), optional
//!   `y_zero_point` whose type (uint8, int8, uint16, int16, uint4, int4) is y's, uint8 without
//!   it. Unlike ONNX's op there is no `block_size`, `saturate`, `output_dtype` or `precision`:
//!   the quotient is taken in f32 for f16 x too (ONNX Runtime widens), rounded half to even,
//!   saturated.
//! - [DequantizeLinear](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md#com.microsoft.DequantizeLinear):
//!   `(x - x_zero_point) · x_scale`, per tensor or per `axis`, y of the scale's type.
//! - [QEmbedLayerNormalization](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md#com.microsoft.QEmbedLayerNormalization):
//!   the uint8 embedding tables, gamma and beta dequantized with their per-tensor scales and
//!   zero points (`(q - zp) · scale` in f32), then EmbedLayerNormalization (positions
//!   `0..seq`); outputs `layernorm_out` and `mask_index_out`.

use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::check_types;
use super::norm::Embed;
use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in};
use crate::kernels::quant::qdq::{Dequantize, Quantize};

pub(crate) fn register(r: &mut Registry) {
    r.op("com.microsoft", "QuantizeLinear", quantize_factory);
    r.op("com.microsoft", "DequantizeLinear", dequantize_factory);
    r.op("com.microsoft", "QEmbedLayerNormalization", qembed_factory);
}

/// The integer types of the com.microsoft Q/DQ ops.
const QTYPES: [DType; 6] = [DType::U8, DType::I8, DType::U16, DType::I16, DType::U4, DType::I4];

struct MsQuantize(Quantize);

fn quantize_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    check_types(info, &[0, 1], &[DType::F32, DType::F16])?;
    check_types(info, &[2], &QTYPES)?;
    Ok(Box::new(MsQuantize(Quantize::com_microsoft(info.node.attr_or::<i64>("axis", 1)?))))
}

/// A scale must be one element or 1-D (per axis): com.microsoft has no blocked form.
fn per_tensor_or_axis(scale: &Tensor) -> Result<()> {
    if scale.len() == 1 || scale.rank() == 1 {
        Ok(())
    } else {
        Err(Error::invalid(format!("scale must be a scalar or 1-D (per axis), got {:?}", scale.shape())))
    }
}

impl Kernel for MsQuantize {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let (x, scale, zp) = (tensor_in(inputs, 0)?, tensor_in(inputs, 1)?, opt_tensor_in(inputs, 2)?);
        per_tensor_or_axis(scale)?;
        if !matches!(x.dtype(), DType::F32 | DType::F16) {
            return Err(Error::unsupported(format!("QuantizeLinear of {} (float or float16)", x.dtype())));
        }
        if let Some(z) = zp
            && !QTYPES.contains(&z.dtype())
        {
            return Err(Error::unsupported(format!("QuantizeLinear to {}", z.dtype())));
        }
        Ok(smallvec::smallvec![self.0.quantize(x, scale, zp)?.into()])
    }
}

struct MsDequantize(Dequantize);

fn dequantize_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    check_types(info, &[0, 2], &[&QTYPES[..], &[DType::I32]].concat())?;
    check_types(info, &[1], &[DType::F32, DType::F16])?;
    Ok(Box::new(MsDequantize(Dequantize::with(info.node.attr_or::<i64>("axis", 1)?, 0))))
}

impl Kernel for MsDequantize {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let (x, scale, zp) = (tensor_in(inputs, 0)?, tensor_in(inputs, 1)?, opt_tensor_in(inputs, 2)?);
        per_tensor_or_axis(scale)?;
        Ok(smallvec::smallvec![self.0.dequantize(x, scale, zp)?.into()])
    }
}

struct QEmbed(Embed);

fn qembed_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    check_types(info, &[0, 1, 7], &[DType::I32])?;
    check_types(info, &[2, 3, 4, 5, 6, 13, 14, 15, 16, 17], &[DType::U8, DType::I8])?;
    check_types(info, &[8, 9, 10, 11, 12], &[DType::F32])?;
    Ok(Box::new(QEmbed(Embed { eps: info.node.attr_or::<f32>("epsilon", 1e-12)? as f64 })))
}

impl Kernel for QEmbed {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values> {
        let per_tensor = Dequantize::with(1, 0);
        // Tables at 2..=6 (segment at 4 optional), their scales at 8 + j and zero points at
        // 13 + j for the j-th table.
        let deq = |i: usize, j: usize, what: &str| -> Result<Option<Value>> {
            let Some(q) = opt_tensor_in(inputs, i)? else {
                return Ok(None);
            };
            let scale = tensor_in(inputs, 8 + j)?;
            let zp = opt_tensor_in(inputs, 13 + j)?;
            if scale.len() != 1 || zp.is_some_and(|z| z.len() != 1) {
                return Err(Error::invalid(format!("{what}'s scale and zero point must be scalars")));
            }
            Ok(Some(per_tensor.dequantize(q, scale, zp)?.into()))
        };
        let tables = [
            deq(2, 0, "word_embedding")?,
            deq(3, 1, "position_embedding")?,
            deq(4, 2, "segment_embedding")?,
            deq(5, 3, "gamma")?,
            deq(6, 4, "beta")?,
        ];
        let mut ins: Vec<Option<&Value>> = vec![inputs.first().copied().flatten(), inputs.get(1).copied().flatten()];
        ins.extend(tables.iter().map(Option::as_ref));
        ins.push(inputs.get(7).copied().flatten());
        let mut out = self.0.run(&ins, ctx)?;
        out.truncate(2);
        Ok(out)
    }
}
