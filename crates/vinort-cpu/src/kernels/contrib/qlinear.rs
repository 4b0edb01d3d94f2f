//! ONNX Runtime's QOperator contrib ops (`com.microsoft`, opset 1), the quantized operators
//! `onnxruntime.quantization.quantize_static(quant_format=QOperator)` writes, as
//! [ContribOperators.md](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md)
//! defines them and ONNX Runtime's CPU kernels (`onnxruntime/contrib_ops/cpu/quantization`,
//! MLAS) compute them:
//!
//! - QLinearAdd, QLinearMul (here): `A, A_scale, A_zero_point, B, B_scale, B_zero_point,
//!   C_scale, C_zero_point`, numpy broadcasting; u8 and i8 (and u16 for QLinearAdd, which ONNX
//!   Runtime also registers). Computed in f32 as MLAS does: Add as
//!   `(a − zA)·(sA/sC) + (b − zB)·(sB/sC) + zC`, Mul as
//!   `(a − zA)(b − zB)·(sA·sB/sC) + zC` (MLAS's x86 kernels), rounded half to even and
//!   saturated.
//! - QLinearConcat (here): `Y_scale, Y_zero_point`, then `(X, X_scale, X_zero_point)` triplets;
//!   `axis` (negative counts from the back). An input with the output's scale and zero point
//!   is copied; any other is requantized through a 256-entry table as ONNX Runtime does.
//! - QLinearWhere (here): `condition, X, X_scale, X_zero_point, Y, Y_scale, Y_zero_point,
//!   Z_scale, Z_zero_point`; X and Y are requantized to Z's scale and zero point through
//!   256-entry tables (copied when their parameters equal Z's, as ONNX Runtime does), then
//!   chosen by the broadcast condition; u8 and i8.
//! - com.microsoft QLinearConv (here): the ONNX QLinearConv kernel ([`crate::kernels::quant::qconv`]),
//!   with `channels_last` taking and giving NHWC tensors (weights stay `M × C/group × k…`).
//! - com.microsoft QuantizeLinear, DequantizeLinear (here): the ONNX kernels ([`qdq`]).
//! - [`qlinear_pool`][super::qlinear_pool]: QLinearAveragePool, QLinearGlobalAveragePool.
//! - [`qlinear_act`][super::qlinear_act]: QLinearSigmoid, QLinearLeakyRelu (lookup tables),
//!   QLinearSoftmax.
//!
//! Scales are f32 scalars (or 1-element 1-D tensors); zero points are optional (0) and must
//! have the data's element type. Outputs equal ONNX Runtime's except where its float rounding
//! lands on the other side of a half step (MLAS's vector kernels order some f32 operations
//! differently from one another), which moves a value by at most one quantization step.

use vinort_ir::Values;
use vinort_ir::tensor::numel;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in};
use crate::kernels::elementwise::binary::where_t;
use crate::kernels::elementwise::broadcast::{Broadcast, binary_slices};
use crate::kernels::quant::qconv::{ConvAttrs, parse_conv, qlinear_conv};
use crate::kernels::quant::{int_range, load_i32, one_f32, one_i32, store_int};
use crate::kernels::shape::slice::concat_tensors;
use crate::kernels::shape::transpose::transpose_tensor;

pub(crate) fn register(r: &mut Registry) {
    r.op("com.microsoft", "QLinearAdd", |i| binary_factory(i, Binary::Add));
    r.op("com.microsoft", "QLinearMul", |i| binary_factory(i, Binary::Mul));
    r.op("com.microsoft", "QLinearConcat", concat_factory);
    r.op("com.microsoft", "QLinearConv", conv_factory);
    r.op("com.microsoft", "QLinearWhere", where_factory);
}

/// The 8-bit quantized element types.
pub(crate) const Q8: [DType; 2] = [DType::U8, DType::I8];

/// The range of a quantized element type among `ok`, or an error naming it.
pub(crate) fn qrange(d: DType, ok: &[DType], what: &str) -> Result<(i32, i32)> {
    match int_range(d) {
        Some(r) if ok.contains(&d) => Ok(r),
        _ => Err(Error::unsupported(format!("{what} of type {d} (expected one of {ok:?})"))),
    }
}

/// A scale: an f32 scalar or 1-element 1-D tensor.
pub(crate) fn scale(t: &Tensor, what: &str) -> Result<f32> {
    if t.dtype() != DType::F32 {
        return Err(Error::invalid(format!("{what} must be float, got {}", t.dtype())));
    }
    if t.rank() > 1 || numel(t.shape()) != 1 {
        return Err(Error::invalid(format!("{what} must be a scalar or 1-D of size 1, got shape {:?}", t.shape())));
    }
    // One element read in place: a run allocates nothing for its parameters.
    one_f32(t)
}

/// A zero point of the data's type `d` (a scalar or 1-element 1-D tensor); 0 when absent.
pub(crate) fn zero_point(t: Option<&Tensor>, d: DType, what: &str) -> Result<i32> {
    let Some(t) = t else { return Ok(0) };
    if t.dtype() != d {
        return Err(Error::invalid(format!("{what} has type {}, the data {d}", t.dtype())));
    }
    if t.rank() > 1 || numel(t.shape()) != 1 {
        return Err(Error::invalid(format!("{what} must be a scalar or 1-D of size 1, got shape {:?}", t.shape())));
    }
    one_i32(t)
}

/// MLAS's QuantizeLinear of `v / scale` already divided: clamped to the type's range shifted
/// by the zero point, rounded half to even, shifted back. NaN becomes the zero point.
#[inline(always)]
pub(crate) fn requantize(v: f32, zp: i32, (lo, hi): (i32, i32)) -> i32 {
    let c = v.clamp((lo - zp) as f32, (hi - zp) as f32).round_ties_even();
    if c.is_nan() { zp } else { c as i32 + zp }
}

/// A 256-entry table (indexed by `x − lo`) mapping each quantized input value through `f` on
/// its dequantized value, then quantizing (ONNX Runtime's `QlinearBuildLookupTable`).
pub(crate) fn lookup_table(
    x_range: (i32, i32),
    (xs, xz): (f32, i32),
    (ys, yz): (f32, i32),
    y_range: (i32, i32),
    f: impl Fn(f32) -> f32,
) -> Vec<i32> {
    (x_range.0..=x_range.1).map(|x| requantize(f(xs * (x - xz) as f32) / ys, yz, y_range)).collect()
}

/// `x` mapped element by element through a [`lookup_table`], stored as `out`.
pub(crate) fn apply_table(x: &Tensor, lo: i32, table: &[i32], out: DType) -> Result<Tensor> {
    let v: Vec<i32> = load_i32(x)?.into_iter().map(|v| table[(v - lo) as usize]).collect();
    store_int(out, x.shape(), &v)
}

#[derive(Clone, Copy)]
enum Binary {
    Add,
    Mul,
}

fn binary_factory(info: &NodeInfo<'_>, op: Binary) -> Result<Box<dyn Kernel>> {
    let ok: &[DType] = match op {
        Binary::Add => &[DType::U8, DType::I8, DType::U16],
        Binary::Mul => &Q8,
    };
    for i in [0, 2, 3, 5, 7] {
        if let Some(d) = info.input_dtype(i) {
            qrange(d, ok, &format!("input {i}")).map_err(|e| info.node.error(e.to_string()))?;
        }
    }
    Ok(Box::new(op))
}

impl Kernel for Binary {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let a = tensor_in(inputs, 0)?;
        let b = tensor_in(inputs, 3)?;
        let d = a.dtype();
        let range = match self {
            Binary::Add => qrange(d, &[DType::U8, DType::I8, DType::U16], "A")?,
            Binary::Mul => qrange(d, &Q8, "A")?,
        };
        if b.dtype() != d {
            return Err(Error::invalid(format!("B has type {}, A {d}", b.dtype())));
        }
        let sa = scale(tensor_in(inputs, 1)?, "A_scale")?;
        let za = zero_point(opt_tensor_in(inputs, 2)?, d, "A_zero_point")?;
        let sb = scale(tensor_in(inputs, 4)?, "B_scale")?;
        let zb = zero_point(opt_tensor_in(inputs, 5)?, d, "B_zero_point")?;
        let sc = scale(tensor_in(inputs, 6)?, "C_scale")?;
        let zc = zero_point(opt_tensor_in(inputs, 7)?, d, "C_zero_point")?;
        if a.shape() == b.shape() && matches!(d, DType::U8 | DType::I8) {
            // Same shapes (a residual Add): one pass over the bytes, into the output.
            let p = BinaryParams { op: *self, a: (sa, za), b: (sb, zb), c: (sc, zc), range };
            let y = if d == DType::U8 { same_shape(p, a, b, |v| v as u8) } else { same_shape(p, a, b, |v| v as i8) }?;
            return Ok(smallvec::smallvec![y.into()]);
        }
        let bc = Broadcast::new([a.shape(), b.shape()])?;
        let (av, bv) = (load_i32(a)?, load_i32(b)?);
        let mut out = vec![0i32; bc.len()];
        match self {
            Binary::Add => {
                let (ra, rb, zc) = (sa / sc, sb / sc, zc as f32);
                // The zero point is added before rounding, as MLAS does.
                binary_slices(&bc, &av, &bv, &mut out, |x, y| {
                    requantize(ra * (x - za) as f32 + rb * (y - zb) as f32 + zc, 0, range)
                });
            }
            Binary::Mul => {
                let (r, zc) = (sa * sb / sc, zc as f32);
                // MLAS (SSE2) adds the zero point before rounding, like Add.
                binary_slices(&bc, &av, &bv, &mut out, |x, y| {
                    requantize(((x - za) as i64 * (y - zb) as i64) as f32 * r + zc, 0, range)
                });
            }
        }
        Ok(smallvec::smallvec![store_int(d, bc.shape(), &out)?.into()])
    }
}

/// A binary QLinear op's parameters: the op, (scale, zero point) of A, B and C, C's range.
#[derive(Clone, Copy)]
struct BinaryParams {
    op: Binary,
    a: (f32, i32),
    b: (f32, i32),
    c: (f32, i32),
    range: (i32, i32),
}

/// QLinearAdd / QLinearMul of two tensors of one shape, element by element with the general
/// path's formulas (the same f32 operations in the same order).
fn same_shape<T: vinort_ir::Elem + Copy + Into<i32> + TryFrom<i32>>(
    p: BinaryParams,
    a: &Tensor,
    b: &Tensor,
    cast: impl Fn(i32) -> T + Copy,
) -> Result<Tensor> {
    let (at, bt) = (a.to_aligned(), b.to_aligned());
    let (a, b) = (at.as_slice::<T>()?, bt.as_slice::<T>()?);
    Tensor::try_build_full::<T, Error>(at.shape(), |out| {
        #[cfg(target_arch = "x86_64")]
        if crate::isa::avx2() {
            // SAFETY: the CPU running this code supports AVX2 (and so SSE4.1), checked above.
            unsafe { same_shape_avx2(p, a, b, out, cast) };
            return Ok(());
        }
        same_shape_body(p, a, b, out, cast);
        Ok(())
    })
}

/// [`same_shape_body`] compiled with AVX2, where rounding to even is one instruction (the
/// baseline build calls `rintf` per element).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn same_shape_avx2<T: Copy + Into<i32> + TryFrom<i32>>(
    p: BinaryParams,
    a: &[T],
    b: &[T],
    out: &mut [T],
    cast: impl Fn(i32) -> T + Copy,
) {
    same_shape_body(p, a, b, out, cast)
}

#[inline(always)]
/// `cast` converts a value of T's range to T.
fn same_shape_body<T: Copy + Into<i32> + TryFrom<i32>>(
    p: BinaryParams,
    a: &[T],
    b: &[T],
    out: &mut [T],
    cast: impl Fn(i32) -> T + Copy,
) {
    let BinaryParams { op, a: (sa, za), b: (sb, zb), c: (sc, zc), range } = p;
    // Invariant: `requantize` saturates to C's range, which is T's.
    let narrow = |v: i32| T::try_from(v).unwrap_or_else(|_| unreachable!("requantize saturates to the type's range"));
    let pairs = out.iter_mut().zip(a.iter().zip(b));
    match op {
        Binary::Add if (sa / sc).is_finite() && (sb / sc).is_finite() => {
            // Finite ratios of integers make no NaN: the clamp is max/min and the conversion
            // exact, which vectorize (`requantize`'s NaN test and `clamp` do not). The same
            // operations in the same order, so the same values.
            let (ra, rb, zc) = (sa / sc, sb / sc, zc as f32);
            let (lo, hi) = (range.0 as f32, range.1 as f32);
            for (o, (x, y)) in pairs {
                let (x, y): (i32, i32) = ((*x).into(), (*y).into());
                let v = (ra * (x - za) as f32 + rb * (y - zb) as f32 + zc).max(lo).min(hi).round_ties_even();
                // SAFETY: v is an integer within the 8-bit range (finite: no NaN, clamped).
                *o = cast(unsafe { v.to_int_unchecked::<i32>() });
            }
        }
        Binary::Add => {
            let (ra, rb, zc) = (sa / sc, sb / sc, zc as f32);
            for (o, (x, y)) in pairs {
                let (x, y): (i32, i32) = ((*x).into(), (*y).into());
                *o = narrow(requantize(ra * (x - za) as f32 + rb * (y - zb) as f32 + zc, 0, range));
            }
        }
        Binary::Mul => {
            let (r, zc) = (sa * sb / sc, zc as f32);
            for (o, (x, y)) in pairs {
                let (x, y): (i32, i32) = ((*x).into(), (*y).into());
                *o = narrow(requantize(((x - za) as i64 * (y - zb) as i64) as f32 * r + zc, 0, range));
            }
        }
    }
}

struct Concat {
    axis: i64,
}

fn concat_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let count = n.inputs.len().saturating_sub(2);
    if count == 0 || !count.is_multiple_of(3) {
        return Err(n.error(format!(
            "QLinearConcat needs Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triplets, got {} inputs",
            n.inputs.len()
        )));
    }
    for i in (1..n.inputs.len()).filter(|i| i % 3 != 0) {
        if let Some(d) = info.input_dtype(i) {
            qrange(d, &Q8, &format!("input {i}")).map_err(|e| n.error(e.to_string()))?;
        }
    }
    Ok(Box::new(Concat { axis: n.req_attr::<i64>("axis")? }))
}

impl Kernel for Concat {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let first = tensor_in(inputs, 2)?;
        let y_zp = opt_tensor_in(inputs, 1)?;
        let d = y_zp.map_or(first.dtype(), Tensor::dtype);
        let range = qrange(d, &Q8, "Y_zero_point")?;
        let ys = scale(tensor_in(inputs, 0)?, "Y_scale")?;
        let yz = zero_point(y_zp, d, "Y_zero_point")?;
        let mut parts = Vec::with_capacity(inputs.len() / 3);
        for i in (2..inputs.len()).step_by(3) {
            let x = tensor_in(inputs, i)?;
            if x.dtype() != d {
                return Err(Error::invalid(format!("input {i} has type {}, the output {d}", x.dtype())));
            }
            let xs = scale(tensor_in(inputs, i + 1)?, &format!("input {} (scale)", i + 1))?;
            let xz = zero_point(opt_tensor_in(inputs, i + 2)?, d, &format!("input {} (zero point)", i + 2))?;
            parts.push(if xs == ys && xz == yz {
                x.clone()
            } else {
                apply_table(x, range.0, &lookup_table(range, (xs, xz), (ys, yz), range, |v| v), d)?
            });
        }
        let refs: Vec<&Tensor> = parts.iter().collect();
        Ok(smallvec::smallvec![concat_tensors(&refs, self.axis)?.into()])
    }
}

struct Conv {
    attrs: ConvAttrs,
    channels_last: bool,
}

fn conv_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let attrs = parse_conv(info, 0, 3)?;
    let channels_last = info.node.attr_or::<i64>("channels_last", 0)? != 0;
    // Constant parameters (what quantizers and ONNX Runtime's NHWC transformer write, and what
    // the optimizer's int8 layout pass makes): the prepared channels-last kernel, no transposes.
    if channels_last && let Some(k) = crate::kernels::quant::qconv_nhwc::NhwcConv::new(info)? {
        return Ok(Box::new(k));
    }
    Ok(Box::new(Conv { attrs, channels_last }))
}

/// The permutation NHWC → NCHW of a rank-`r` tensor, or back.
pub(crate) fn nhwc_perm(r: usize, to_nchw: bool) -> Vec<i64> {
    let r = r as i64;
    let mut p: Vec<i64> = (0..r).collect();
    if r >= 3 {
        if to_nchw {
            p = [0, r - 1].into_iter().chain(1..r - 1).collect();
        } else {
            p = [0].into_iter().chain(2..r).chain([1]).collect();
        }
    }
    p
}

impl Kernel for Conv {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        if !self.channels_last {
            return Ok(smallvec::smallvec![qlinear_conv(&self.attrs, inputs)?.into()]);
        }
        let x = tensor_in(inputs, 0)?;
        if x.rank() < 3 {
            return Err(Error::invalid(format!("channels_last input must be [N, spatial..., C], got {:?}", x.shape())));
        }
        let nchw: Value = transpose_tensor(x, Some(&nhwc_perm(x.rank(), true)))?.into();
        let mut ins = inputs.to_vec();
        ins[0] = Some(&nchw);
        let y = qlinear_conv(&self.attrs, &ins)?;
        Ok(smallvec::smallvec![transpose_tensor(&y, Some(&nhwc_perm(y.rank(), false)))?.into()])
    }
}

struct QWhere;

fn where_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    for i in [1, 3, 4, 6, 8] {
        if let Some(d) = info.input_dtype(i) {
            qrange(d, &Q8, &format!("input {i}")).map_err(|e| info.node.error(e.to_string()))?;
        }
    }
    Ok(Box::new(QWhere))
}

impl Kernel for QWhere {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let c = tensor_in(inputs, 0)?;
        if c.dtype() != DType::Bool {
            return Err(Error::invalid(format!("condition must be bool, got {}", c.dtype())));
        }
        let (x, y) = (tensor_in(inputs, 1)?, tensor_in(inputs, 4)?);
        let d = x.dtype();
        let range = qrange(d, &Q8, "X")?;
        if y.dtype() != d {
            return Err(Error::invalid(format!("Y has type {}, X {d}", y.dtype())));
        }
        let z = (scale(tensor_in(inputs, 7)?, "Z_scale")?, zero_point(opt_tensor_in(inputs, 8)?, d, "Z_zero_point")?);
        // X or Y in Z's parameters: the same values, or each of the 256 through a table.
        let to_z = |t: &Tensor, at: usize, what: &str| -> Result<Tensor> {
            let s = scale(tensor_in(inputs, at)?, &format!("{what}_scale"))?;
            let zp = zero_point(opt_tensor_in(inputs, at + 1)?, d, &format!("{what}_zero_point"))?;
            if (s, zp) == z {
                return Ok(t.clone());
            }
            apply_table(t, range.0, &lookup_table(range, (s, zp), z, range, |v| v), d)
        };
        let (xz, yz) = (to_z(x, 2, "X")?, to_z(y, 5, "Y")?);
        let out = match d {
            DType::U8 => where_t::<u8>(c, &xz, &yz)?,
            _ => where_t::<i8>(c, &xz, &yz)?,
        };
        Ok(smallvec::smallvec![out.into()])
    }
}
