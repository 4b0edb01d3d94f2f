//! ONNX Runtime's integer matrix products with float scaling (`com.microsoft`, opset 1), as its
//! [ContribOperators](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md)
//! documentation defines them and its CPU kernels (onnxruntime/contrib_ops/cpu/quantization)
//! compute them: the integer product of the zero-point-shifted operands is exact (i32), then
//! scaled in f32.
//!
//! - [MatMulIntegerToFloat](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md#com.microsoft.MatMulIntegerToFloat):
//!   `(A - a_zp) @ (B - b_zp) · a_scale · b_scale + bias`, numpy.matmul shapes; A and B uint8
//!   or int8; `a_scale`/`a_zero_point` per tensor, `b_scale`/`b_zero_point` per tensor or per
//!   column of B (numpy broadcast against B and Y); Y has `a_scale`'s type (f32 or f16).
//! - [DynamicQuantizeMatMul](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md#com.microsoft.DynamicQuantizeMatMul):
//!   A (f32) quantized to uint8 at run time over its whole range widened to include 0
//!   (DynamicQuantizeLinear's rule, ONNX Runtime's `GetQuantizationParameter`), then
//!   MatMulIntegerToFloat.
//! - [QGemm](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md#com.microsoft.QGemm):
//!   2-D `transA`/`transB`; `C` (int32, broadcast `()`, `(N)`, `(1, N)`, `(M, 1)`, `(M, N)`)
//!   is added to the integer accumulator, which is then scaled by `alpha · a_scale ·
//!   b_scale[n]` (divided by `y_scale` when given). With `y_zero_point` the result is
//!   requantized (rounded half to even, plus the zero point, saturated) to its type; without
//!   it Y is float.

use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::check_types;
use crate::kernel::{FnKernel, Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in};
use crate::kernels::quant::dynamic::dynamic_quantize;
use crate::kernels::quant::qmatmul::{matmul, shifted_i32};
use crate::kernels::quant::{expand, int_range, load_f32, load_i32, store_float, store_int};
use crate::kernels::shape::transpose::transpose_tensor;
use crate::qgemm::{Int8, PackedB, qgemm};

pub(crate) fn register(r: &mut Registry) {
    r.op("com.microsoft", "MatMulIntegerToFloat", integer_to_float_factory);
    r.op("com.microsoft", "DynamicQuantizeMatMul", dynamic_factory);
    r.op("com.microsoft", "QGemm", qgemm_factory);
}

const INT8: [DType; 2] = [DType::U8, DType::I8];

/// The single value of a per-tensor scale or zero point, or an error naming it.
fn one(t: &Tensor, what: &str) -> Result<f32> {
    if t.len() != 1 {
        return Err(Error::invalid(format!("{what} must be a scalar or 1-element tensor, got {:?}", t.shape())));
    }
    Ok(load_f32(t)?[0])
}

fn int8(t: &Tensor, what: &str) -> Result<()> {
    if INT8.contains(&t.dtype()) {
        Ok(())
    } else {
        Err(Error::unsupported(format!("{what} of type {} (uint8 or int8 expected)", t.dtype())))
    }
}

/// `(A - a_zp) @ (B - b_zp) · a_scale · b_scale + bias` with A already shifted (`av`, shape
/// `ash`) and B given as `(B, b_zero_point, b_scale)`, in f32, stored as `out`.
fn scaled_product(
    av: &[i32],
    ash: &[usize],
    a_scale: f32,
    (b, b_zp, b_scale): (&Tensor, Option<&Tensor>, &Tensor),
    bias: Option<&Tensor>,
    out: DType,
) -> Result<Tensor> {
    int8(b, "B")?;
    if let Some(z) = b_zp
        && z.dtype() != b.dtype()
    {
        return Err(Error::invalid(format!("b_zero_point has type {}, B {}", z.dtype(), b.dtype())));
    }
    let bv = shifted_i32(b, b_zp.map(|z| (z, z.shape().to_vec())))?;
    let (shape, acc) = matmul(av, ash, &bv, b.shape())?;
    // a_scale · b_scale in f32, as ONNX Runtime forms the multiplier before the product.
    let bs = expand(&load_f32(b_scale)?, b_scale.shape(), &shape)
        .map_err(|_| Error::invalid(format!("b_scale {:?} does not broadcast to {shape:?}", b_scale.shape())))?;
    let n = shape.last().copied().unwrap_or(1).max(1);
    let bias = match bias {
        Some(t) => {
            if t.len() != n || t.rank() != 1 {
                return Err(Error::invalid(format!("bias must be [{n}], got {:?}", t.shape())));
            }
            Some(load_f32(t)?)
        }
        None => None,
    };
    let y: Vec<f32> = acc
        .iter()
        .zip(&bs)
        .enumerate()
        .map(|(i, (c, s))| *c as f32 * (a_scale * s) + bias.as_ref().map_or(0.0, |b| b[i % n]))
        .collect();
    store_float(out, &shape, &y)
}

fn integer_to_float_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    check_types(info, &[0, 1, 4, 5], &INT8)?;
    check_types(info, &[2, 3, 6], &[DType::F32, DType::F16])?;
    Ok(Box::new(FnKernel(|inputs: &[Option<&Value>]| {
        let a = tensor_in(inputs, 0)?;
        let b = tensor_in(inputs, 1)?;
        let (a_s, b_s) = (tensor_in(inputs, 2)?, tensor_in(inputs, 3)?);
        let (a_zp, b_zp) = (opt_tensor_in(inputs, 4)?, opt_tensor_in(inputs, 5)?);
        int8(a, "A")?;
        if let Some(z) = a_zp {
            if z.dtype() != a.dtype() {
                return Err(Error::invalid(format!("a_zero_point has type {}, A {}", z.dtype(), a.dtype())));
            }
            one(z, "a_zero_point")?;
        }
        // ONNX Runtime takes A's scale and zero point per tensor only: a per-column (K) scale
        // does not factor out of the sum.
        let scale = one(a_s, "a_scale")?;
        let av = shifted_i32(a, a_zp.map(|z| (z, vec![])))?;
        let out = a_s.dtype();
        Ok(smallvec::smallvec![
            scaled_product(&av, a.shape(), scale, (b, b_zp, b_s), opt_tensor_in(inputs, 6)?, out)?.into()
        ])
    })))
}

fn dynamic_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    check_types(info, &[0, 2, 4], &[DType::F32])?;
    check_types(info, &[1, 3], &INT8)?;
    Ok(Box::new(FnKernel(|inputs: &[Option<&Value>]| {
        let a = tensor_in(inputs, 0)?;
        if a.dtype() != DType::F32 {
            return Err(Error::unsupported(format!("DynamicQuantizeMatMul A of type {} (float expected)", a.dtype())));
        }
        let (q, scale, zp) = dynamic_quantize(a.as_slice::<f32>()?);
        let av: Vec<i32> = q.into_iter().map(|v| v as i32 - zp as i32).collect();
        let (b, b_s, b_zp) = (tensor_in(inputs, 1)?, tensor_in(inputs, 2)?, opt_tensor_in(inputs, 3)?);
        Ok(smallvec::smallvec![
            scaled_product(&av, a.shape(), scale, (b, b_zp, b_s), opt_tensor_in(inputs, 4)?, DType::F32)?.into()
        ])
    })))
}

/// QGemm's attributes.
struct QGemm {
    alpha: f32,
    trans_a: bool,
    trans_b: bool,
}

fn qgemm_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    check_types(info, &[0, 2, 3, 5, 8], &INT8)?;
    check_types(info, &[1, 4, 7], &[DType::F32])?;
    check_types(info, &[6], &[DType::I32])?;
    let q = QGemm {
        alpha: n.attr_or::<f32>("alpha", 1.0)?,
        trans_a: n.attr_or::<i64>("transA", 0)? != 0,
        trans_b: n.attr_or::<i64>("transB", 0)? != 0,
    };
    Ok(match PackedQGemm::new(info, &q)? {
        Some(b) => Box::new(PreparedQGemm { q, b }),
        None => Box::new(q),
    })
}

/// QGemm whose B (and B's zero point) are constants, what quantizers write for a Gemm layer:
/// B is packed once as the VNNI GEMM's right operand ([`crate::qgemm`]) and A is read in
/// place, instead of both being widened to i32 (and B transposed) on every run. The exact i32
/// sums and everything after them are the generic kernel's.
struct PreparedQGemm {
    q: QGemm,
    b: PackedQGemm,
}

struct PackedQGemm {
    packed: PackedB,
    a_dtype: DType,
}

impl PackedQGemm {
    fn new(info: &NodeInfo<'_>, q: &QGemm) -> Result<Option<PackedQGemm>> {
        let (Some(a_dtype), Some(b)) = (info.input_dtype(0), info.const_input(3)) else { return Ok(None) };
        let zb = match info.node.inputs.get(5).copied().flatten() {
            None => None,
            Some(_) => match info.const_input(5) {
                Some(z) => Some(z),
                None => return Ok(None),
            },
        };
        if q.trans_a || !INT8.contains(&a_dtype) || !INT8.contains(&b.dtype()) || b.rank() != 2 {
            return Ok(None);
        }
        if zb.is_some_and(|z| z.dtype() != b.dtype() || z.rank() > 1) {
            return Ok(None);
        }
        let (k, n) = if q.trans_b { (b.shape()[1], b.shape()[0]) } else { (b.shape()[0], b.shape()[1]) };
        let zb = match zb.map(load_i32).transpose()? {
            None => vec![0],
            Some(z) if z.len() == 1 || z.len() == n => z,
            // Another length is the generic kernel's error to report.
            Some(_) => return Ok(None),
        };
        let b = b.to_aligned();
        let view = match b.dtype() {
            DType::U8 => Int8::U8(b.as_slice::<u8>()?),
            _ => Int8::I8(b.as_slice::<i8>()?),
        };
        let packed = PackedB::new(view, k, n, q.trans_b, &zb).map_err(Error::invalid)?;
        Ok(Some(PackedQGemm { packed, a_dtype }))
    }
}

impl Kernel for PreparedQGemm {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values> {
        let a = tensor_in(inputs, 0)?;
        let (k, n) = (self.b.packed.k(), self.b.packed.n());
        if a.dtype() != self.b.a_dtype || a.rank() != 2 || a.shape()[1] != k {
            // The generic kernel reports what is wrong.
            return self.q.run(inputs, ctx);
        }
        let m = a.shape()[0];
        let za = match opt_tensor_in(inputs, 2)? {
            Some(z) => one(z, "a_zero_point")? as i32,
            None => 0,
        };
        let a = a.to_aligned();
        let view = match a.dtype() {
            DType::U8 => Int8::U8(a.as_slice::<u8>()?),
            _ => Int8::I8(a.as_slice::<i8>()?),
        };
        let mut acc = vec![0i32; m * n];
        qgemm(m, view, k, &[za], &self.b.packed, &mut acc, n, true).map_err(Error::invalid)?;
        self.q.finish(inputs, acc, m, n)
    }
}

/// A 2-D operand, transposed when asked.
fn oriented(t: &Tensor, trans: bool, what: &str) -> Result<Tensor> {
    if t.rank() != 2 {
        return Err(Error::invalid(format!("{what} must be 2-D, got {:?}", t.shape())));
    }
    if trans { transpose_tensor(t, None) } else { Ok(t.clone()) }
}

impl Kernel for QGemm {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let a = oriented(tensor_in(inputs, 0)?, self.trans_a, "A")?;
        let a_zp = opt_tensor_in(inputs, 2)?;
        let b = oriented(tensor_in(inputs, 3)?, self.trans_b, "B")?;
        let (b_s, b_zp) = (tensor_in(inputs, 4)?, opt_tensor_in(inputs, 5)?);
        int8(&a, "A")?;
        int8(&b, "B")?;
        let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
        if b.shape()[0] != k {
            return Err(Error::invalid(format!("op(A) is {m}x{k} but op(B) is {:?}", b.shape())));
        }
        let per_col = |t: &Tensor, what: &str| -> Result<()> {
            match t.shape() {
                [] => Ok(()),
                [d] if *d == 1 || *d == n => Ok(()),
                s => Err(Error::invalid(format!("{what} must be a scalar or 1-D of 1 or N={n}, got {s:?}"))),
            }
        };
        per_col(b_s, "b_scale")?;
        let a_zv = match a_zp {
            Some(z) => one(z, "a_zero_point")? as i32,
            None => 0,
        };
        if let Some(z) = b_zp {
            per_col(z, "b_zero_point")?;
        }
        let av: Vec<i32> = load_i32(&a)?.into_iter().map(|v| v - a_zv).collect();
        let bv = shifted_i32(&b, b_zp.map(|z| (z, z.shape().to_vec())))?;
        let (_, acc) = matmul(&av, &[m, k], &bv, &[k, n])?;
        self.finish(inputs, acc, m, n)
    }
}

impl QGemm {
    /// Y from the exact sums `acc` (m × n): C added, then scaled, and requantized when
    /// `y_zero_point` is given.
    fn finish(&self, inputs: &[Option<&Value>], mut acc: Vec<i32>, m: usize, n: usize) -> Result<Values> {
        let (a_s, b_s) = (tensor_in(inputs, 1)?, tensor_in(inputs, 4)?);
        let c = opt_tensor_in(inputs, 6)?;
        let (y_s, y_zp) = (opt_tensor_in(inputs, 7)?, opt_tensor_in(inputs, 8)?);
        match b_s.shape() {
            [] => {}
            [d] if *d == 1 || *d == n => {}
            s => return Err(Error::invalid(format!("b_scale must be a scalar or 1-D of 1 or N={n}, got {s:?}"))),
        }
        if let Some(c) = c {
            let cv = c.as_slice::<i32>()?;
            let ok = matches!(c.shape(), [] | [_] | [1, _] | [_, 1] | [_, _]);
            let cv = expand(cv, c.shape(), &[m, n])
                .ok()
                .filter(|_| ok)
                .ok_or_else(|| Error::invalid(format!("C {:?} does not broadcast to [{m}, {n}]", c.shape())))?;
            acc.iter_mut().zip(cv).for_each(|(a, c)| *a = a.wrapping_add(c));
        }
        let a_scale = one(a_s, "a_scale")?;
        let y_scale = y_s.map(|t| one(t, "y_scale")).transpose()?;
        let scales: Vec<f32> = load_f32(b_s)?
            .into_iter()
            .map(|b| {
                let s = self.alpha * a_scale * b;
                y_scale.map_or(s, |y| s / y)
            })
            .collect();
        let scale = |i: usize| scales[if scales.len() == 1 { 0 } else { i % n }];
        let Some(z) = y_zp else {
            let y: Vec<f32> = acc.iter().enumerate().map(|(i, v)| *v as f32 * scale(i)).collect();
            return Ok(smallvec::smallvec![Tensor::from_vec(&[m, n], y)?.into()]);
        };
        let Some((lo, hi)) = int_range(z.dtype()).filter(|_| INT8.contains(&z.dtype())) else {
            return Err(Error::unsupported(format!("QGemm output of type {}", z.dtype())));
        };
        let zv = one(z, "y_zero_point")?;
        let q: Vec<i32> = acc
            .iter()
            .enumerate()
            .map(|(i, v)| ((*v as f32 * scale(i)).round_ties_even() + zv).clamp(lo as f32, hi as f32) as i32)
            .collect();
        Ok(smallvec::smallvec![store_int(z.dtype(), &[m, n], &q)?.into()])
    }
}
