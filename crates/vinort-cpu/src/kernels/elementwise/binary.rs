//! Binary and variadic elementwise ops with multidirectional broadcasting.
//!
//! - Arithmetic: [Add](https://onnx.ai/onnx/operators/onnx__Add.html),
//!   [Sub](https://onnx.ai/onnx/operators/onnx__Sub.html),
//!   [Mul](https://onnx.ai/onnx/operators/onnx__Mul.html),
//!   [Div](https://onnx.ai/onnx/operators/onnx__Div.html) (opsets 1–14),
//!   [Mod](https://onnx.ai/onnx/operators/onnx__Mod.html) (10–28),
//!   [Pow](https://onnx.ai/onnx/operators/onnx__Pow.html) (1–15),
//!   [PRelu](https://onnx.ai/onnx/operators/onnx__PRelu.html) (1–16).
//!   Every float and integer type (f16/bf16 computed in f32); Pow bases f32/f64/f16/bf16/ints with
//!   an exponent of any numeric type.
//! - Variadic: [Max](https://onnx.ai/onnx/operators/onnx__Max.html),
//!   [Min](https://onnx.ai/onnx/operators/onnx__Min.html) (all numeric types),
//!   [Sum](https://onnx.ai/onnx/operators/onnx__Sum.html),
//!   [Mean](https://onnx.ai/onnx/operators/onnx__Mean.html) (float types).
//! - Comparisons [Equal](https://onnx.ai/onnx/operators/onnx__Equal.html) (also bool and
//!   string), [Less](https://onnx.ai/onnx/operators/onnx__Less.html),
//!   [Greater](https://onnx.ai/onnx/operators/onnx__Greater.html),
//!   [LessOrEqual](https://onnx.ai/onnx/operators/onnx__LessOrEqual.html),
//!   [GreaterOrEqual](https://onnx.ai/onnx/operators/onnx__GreaterOrEqual.html) → bool.
//! - Logic [And](https://onnx.ai/onnx/operators/onnx__And.html),
//!   [Or](https://onnx.ai/onnx/operators/onnx__Or.html),
//!   [Xor](https://onnx.ai/onnx/operators/onnx__Xor.html) on bool.
//! - Integer bits: [BitShift](https://onnx.ai/onnx/operators/onnx__BitShift.html) (11–28, with
//!   the opset-28 rules for signed types and out-of-range amounts),
//!   [BitwiseAnd](https://onnx.ai/onnx/operators/onnx__BitwiseAnd.html),
//!   [BitwiseOr](https://onnx.ai/onnx/operators/onnx__BitwiseOr.html),
//!   [BitwiseXor](https://onnx.ai/onnx/operators/onnx__BitwiseXor.html) (18).
//! - [Where](https://onnx.ai/onnx/operators/onnx__Where.html) (9–16): any element type,
//!   strings included.
//!
//! Opsets before 7 broadcast only with `broadcast=1`, aligning `B` at `axis` when given; that is
//! rewritten here as a reshape of `B` followed by numpy broadcasting.

use std::borrow::Cow;
use vinort_ir::Values;

use vinort_ir::tensor::numel;
use vinort_ir::{DType, Elem, Error, Result, RunContext, Tensor, Value};

use super::broadcast::{Broadcast, binary_map, broadcast_shape, ternary_slices};
use super::cast::cast_tensor;
use crate::kernel::with_numeric;
use crate::kernel::{Kernel, NodeInfo, norm_axis, tensor_in};
use crate::numeric::{Int, Numeric, bad_dtype, narrow, widen};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
    /// `fmod = 1`: C fmod (sign of the dividend); otherwise the floored (Python) remainder.
    Mod {
        fmod: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Lt,
    Gt,
    Le,
    Ge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bits {
    And,
    Or,
    Xor,
    Shl,
    Shr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinOp {
    Arith(Arith),
    Pow,
    Cmp(Cmp),
    /// Boolean And/Or/Xor (`Bits::Shl`/`Shr` never occur here).
    Logic(Bits),
    Bits(Bits),
    PRelu,
}

impl BinOp {
    fn name(self) -> &'static str {
        match self {
            BinOp::Arith(a) => match a {
                Arith::Add => "Add",
                Arith::Sub => "Sub",
                Arith::Mul => "Mul",
                Arith::Div => "Div",
                Arith::Max => "Max",
                Arith::Min => "Min",
                Arith::Mod { .. } => "Mod",
            },
            BinOp::Pow => "Pow",
            BinOp::Cmp(_) => "comparison",
            BinOp::Logic(_) => "logical op",
            BinOp::Bits(_) => "bitwise op",
            BinOp::PRelu => "PRelu",
        }
    }

    /// Whether the op handles inputs (the first one, for Pow and PRelu) of this element type.
    fn supports(self, dt: DType) -> bool {
        match self {
            BinOp::Arith(_) | BinOp::PRelu => dt.is_float() || dt.is_int(),
            BinOp::Pow => dt.is_float() || dt.is_int(),
            BinOp::Cmp(Cmp::Eq) => dt.is_float() || dt.is_int() || matches!(dt, DType::Bool | DType::String),
            BinOp::Cmp(_) => dt.is_float() || dt.is_int(),
            BinOp::Logic(_) => dt == DType::Bool,
            BinOp::Bits(_) => dt.is_int(),
        }
    }

    /// The op on two tensors, already aligned for numpy broadcasting.
    pub(crate) fn apply(self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let dt = a.dtype();
        if !self.supports(dt) {
            return Err(bad_dtype(self.name(), dt));
        }
        if self != BinOp::Pow && b.dtype() != dt {
            return Err(Error::invalid(format!(
                "{} needs inputs of one element type, got {dt} and {}",
                self.name(),
                b.dtype()
            )));
        }
        match self {
            // f16/bf16 compute in f32 and round once.
            BinOp::Arith(_) | BinOp::PRelu if dt.is_float() => {
                let (wa, wb) = (widen(a)?, widen(b)?);
                narrow(
                    with_numeric!(compute dt, |T| self.numeric::<T>(&wa, &wb), _ => Err(bad_dtype(self.name(), dt)))?,
                    dt,
                )
            }
            BinOp::Arith(_) | BinOp::PRelu => {
                with_numeric!(int dt, |T| self.numeric::<T>(a, b), _ => Err(bad_dtype(self.name(), dt)))
            }
            BinOp::Pow => pow(a, b),
            BinOp::Cmp(op) if dt == DType::String => {
                if op != Cmp::Eq {
                    return Err(bad_dtype(self.name(), dt));
                }
                strings_equal(a, b)
            }
            BinOp::Cmp(op) if dt == DType::Bool => compare::<bool>(op, a, b),
            BinOp::Cmp(op) => with_numeric!(dt, |T| compare::<T>(op, a, b), _ => Err(bad_dtype(self.name(), dt))),
            BinOp::Logic(op) => binary_map::<bool, bool, bool>(a, b, move |x, y| match op {
                Bits::And => x & y,
                Bits::Or => x | y,
                _ => x ^ y,
            }),
            BinOp::Bits(op) => with_numeric!(int dt, |T| bits::<T>(op, a, b), _ => Err(bad_dtype(self.name(), dt))),
        }
    }

    /// Arithmetic and PRelu in the element type `T`.
    fn numeric<T: Numeric>(self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        match self {
            BinOp::Arith(op) => arith::<T>(op, a, b),
            _ => prelu::<T>(a, b),
        }
    }
}

fn arith<T: Numeric>(op: Arith, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let divides = matches!(op, Arith::Div | Arith::Mod { .. });
    if divides && !T::IS_FLOAT && numel(&broadcast_shape(a.shape(), b.shape())?) > 0 {
        // A non-empty output reads every divisor element, so any zero would be used.
        if b.as_slice::<T>()?.iter().any(|v| v.is_zero()) {
            return Err(Error::invalid(format!("integer division by zero ({} {})", T::DTYPE, op_name(op))));
        }
    }
    match op {
        Arith::Add => binary_map(a, b, T::wrap_add),
        Arith::Sub => binary_map(a, b, T::wrap_sub),
        Arith::Mul => binary_map(a, b, T::wrap_mul),
        Arith::Div => binary_map(a, b, T::wrap_div),
        Arith::Max => binary_map(a, b, T::nan_max),
        Arith::Min => binary_map(a, b, T::nan_min),
        Arith::Mod { fmod: true } => binary_map(a, b, T::rem_trunc),
        Arith::Mod { fmod: false } => binary_map(a, b, T::rem_floor),
    }
}

fn op_name(op: Arith) -> &'static str {
    BinOp::Arith(op).name()
}

fn prelu<T: Numeric>(x: &Tensor, slope: &Tensor) -> Result<Tensor> {
    // The slope broadcasts to X, never the other way round.
    if broadcast_shape(x.shape(), slope.shape())?.as_slice() != x.shape() {
        return Err(Error::invalid(format!(
            "PRelu slope of shape {:?} does not broadcast to X of shape {:?}",
            slope.shape(),
            x.shape()
        )));
    }
    binary_map::<T, T, T>(x, slope, |x, s| if x < T::zero() { x.wrap_mul(s) } else { x })
}

fn compare<T: Elem + PartialOrd>(op: Cmp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    match op {
        Cmp::Eq => binary_map::<T, T, bool>(a, b, |x, y| x == y),
        Cmp::Lt => binary_map::<T, T, bool>(a, b, |x, y| x < y),
        Cmp::Gt => binary_map::<T, T, bool>(a, b, |x, y| x > y),
        Cmp::Le => binary_map::<T, T, bool>(a, b, |x, y| x <= y),
        Cmp::Ge => binary_map::<T, T, bool>(a, b, |x, y| x >= y),
    }
}

fn strings_equal(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let bc = Broadcast::new([a.shape(), b.shape(), &[]])?;
    let (xa, xb) = (a.as_strings()?, b.as_strings()?);
    let unit = [()];
    Ok(Tensor::build::<bool>(bc.shape(), |out| ternary_slices(&bc, xa, xb, &unit, out, |x, y, _| x == y)))
}

fn bits<T: Int>(op: Bits, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    match op {
        Bits::And => binary_map::<T, T, T>(a, b, |x, y| x & y),
        Bits::Or => binary_map::<T, T, T>(a, b, |x, y| x | y),
        Bits::Xor => binary_map::<T, T, T>(a, b, |x, y| x ^ y),
        Bits::Shl => binary_map(a, b, T::shl_or_zero),
        Bits::Shr => binary_map(a, b, T::shr_or_fill),
    }
}

/// Pow: the result has the base's type. Same-type float operands run directly; integer pairs
/// go through exact wrapping i64 powers; mixed pairs through f64 (Pow-12 allows the exponent any
/// numeric type).
fn pow(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (da, db) = (a.dtype(), b.dtype());
    if !(db.is_float() || db.is_int()) {
        return Err(bad_dtype("Pow exponent", db));
    }
    match (da, db) {
        // A squared term (x², as in a magnitude or a variance): one product, correctly rounded,
        // where powf costs a call per element.
        (DType::F32, DType::F32) if b.len() == 1 && b.to_aligned().as_slice::<f32>()? == [2.0] => {
            binary_map::<f32, f32, f32>(a, b, |x, _| x * x)
        }
        (DType::F32, DType::F32) => binary_map::<f32, f32, f32>(a, b, f32::powf),
        (DType::F64, DType::F64) => binary_map::<f64, f64, f64>(a, b, f64::powf),
        (DType::F16, DType::F16) | (DType::BF16, DType::BF16) | (DType::F16 | DType::BF16, DType::F32) => {
            narrow(binary_map::<f32, f32, f32>(&*widen(a)?, &*widen(b)?, f32::powf)?, da)
        }
        _ if da.is_int() && db.is_int() => {
            let wide = |t: &Tensor| Tensor::from_vec(t.shape(), t.to_i64_vec()?);
            cast_tensor(&binary_map::<i64, i64, i64>(&wide(a)?, &wide(b)?, int_pow)?, da)
        }
        _ => {
            let wide = |t: &Tensor| Tensor::from_vec(t.shape(), t.to_f64_vec()?);
            cast_tensor(&binary_map::<f64, f64, f64>(&wide(a)?, &wide(b)?, f64::powf)?, da)
        }
    }
}

/// Integer power with wrapping multiplication. A negative exponent gives what truncating the
/// real power gives: 1 for base 1, ±1 for base −1, 0 otherwise (including base 0, where the real
/// power is infinite and C++ runtimes are undefined).
fn int_pow(base: i64, exp: i64) -> i64 {
    if exp < 0 {
        return match base {
            1 => 1,
            -1 => {
                if exp % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    let (mut acc, mut b, mut e) = (1i64, base, exp as u64);
    while e > 0 {
        if e & 1 == 1 {
            acc = acc.wrapping_mul(b);
        }
        b = b.wrapping_mul(b);
        e >>= 1;
    }
    acc
}

/// Opset < 7 broadcasting of the second input (`broadcast` and `axis` attributes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Legacy {
    broadcast: bool,
    axis: Option<i64>,
}

impl Legacy {
    /// The legacy rule for ops that had it, when the node's opset predates numpy broadcasting.
    pub(crate) fn of(info: &NodeInfo<'_>) -> Result<Option<Legacy>> {
        let n = info.node;
        if n.opset >= 7 {
            return Ok(None);
        }
        Ok(Some(Legacy { broadcast: n.attr_or::<i64>("broadcast", 0)? != 0, axis: n.attr::<i64>("axis")? }))
    }

    fn align<'t>(self, a: &Tensor, b: &'t Tensor) -> Result<Cow<'t, Tensor>> {
        if !self.broadcast {
            if a.shape() != b.shape() {
                return Err(Error::invalid(format!(
                    "without broadcast=1 (opset < 7) the inputs must have equal shapes, got {:?} and {:?}",
                    a.shape(),
                    b.shape()
                )));
            }
            return Ok(Cow::Borrowed(b));
        }
        let Some(axis) = self.axis else { return Ok(Cow::Borrowed(b)) };
        let axis = norm_axis(axis, a.rank().max(1))?;
        if axis + b.rank() > a.rank() {
            return Err(Error::invalid(format!(
                "B of shape {:?} does not fit A of shape {:?} at axis {axis}",
                b.shape(),
                a.shape()
            )));
        }
        let mut shape = vec![1; a.rank()];
        shape[axis..axis + b.rank()].copy_from_slice(b.shape());
        Ok(Cow::Owned(b.reshaped(&shape)?))
    }
}

/// A two-input op.
pub(crate) struct Binary {
    pub(crate) op: BinOp,
    pub(crate) legacy: Option<Legacy>,
    /// PRelu before opset 7 takes a per-channel slope of shape [C].
    pub(crate) channel_slope: bool,
}

impl Kernel for Binary {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let a = tensor_in(inputs, 0)?;
        let b = tensor_in(inputs, 1)?;
        let mut b = match self.legacy {
            Some(l) => l.align(a, b)?,
            None => Cow::Borrowed(b),
        };
        if self.channel_slope && b.rank() == 1 && a.rank() >= 2 && b.len() == a.shape()[1] && b.len() > 1 {
            let mut shape = vec![1; a.rank() - 1];
            shape[0] = b.len();
            b = Cow::Owned(b.reshaped(&shape)?);
        }
        Ok(smallvec::smallvec![self.op.apply(a, &b)?.into()])
    }
}

pub(crate) fn binary_factory(info: &NodeInfo<'_>, op: BinOp) -> Result<Box<dyn Kernel>> {
    if let Some(dt) = info.input_dtype(0)
        && !op.supports(dt)
    {
        return Err(Error::unsupported(format!("{} on {dt} tensors", info.node.op_type)));
    }
    let had_legacy = !matches!(op, BinOp::Arith(Arith::Max | Arith::Min | Arith::Mod { .. }) | BinOp::PRelu);
    let legacy = if had_legacy { Legacy::of(info)? } else { None };
    Ok(Box::new(Binary { op, legacy, channel_slope: op == BinOp::PRelu && info.node.opset < 7 }))
}

pub(crate) fn mod_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let fmod = info.node.attr_or::<i64>("fmod", 0)?;
    if fmod != 0 && fmod != 1 {
        return Err(info.node.error(format!("fmod must be 0 or 1, got {fmod}")));
    }
    binary_factory(info, BinOp::Arith(Arith::Mod { fmod: fmod == 1 }))
}

pub(crate) fn bitshift_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let op = match info.node.req_attr::<String>("direction")?.as_str() {
        "LEFT" => Bits::Shl,
        "RIGHT" => Bits::Shr,
        other => return Err(info.node.error(format!("direction must be LEFT or RIGHT, got '{other}'"))),
    };
    binary_factory(info, BinOp::Bits(op))
}

/// Max, Min, Sum and Mean over one or more inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Variadic {
    Max,
    Min,
    Sum,
    Mean,
}

impl Variadic {
    fn supports(self, dt: DType) -> bool {
        match self {
            Variadic::Max | Variadic::Min => dt.is_float() || dt.is_int(),
            Variadic::Sum | Variadic::Mean => dt.is_float(),
        }
    }
}

struct VariadicKernel(Variadic);

impl Kernel for VariadicKernel {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let op = self.0;
        let first = tensor_in(inputs, 0)?;
        let dt = first.dtype();
        if !op.supports(dt) {
            return Err(bad_dtype(&format!("{op:?}"), dt));
        }
        let arith = match op {
            Variadic::Max => Arith::Max,
            Variadic::Min => Arith::Min,
            Variadic::Sum | Variadic::Mean => Arith::Add,
        };
        // f16/bf16 accumulate in f32 and round once at the end.
        let mut acc = widen(first)?.into_owned();
        for i in 1..inputs.len() {
            let t = tensor_in(inputs, i)?;
            if t.dtype() != dt {
                return Err(Error::invalid(format!("{op:?} input {i} is {}, input 0 is {dt}", t.dtype())));
            }
            acc = BinOp::Arith(arith).apply(&acc, &*widen(t)?)?;
        }
        if op == Variadic::Mean {
            let n = inputs.len();
            acc = match acc.dtype() {
                DType::F32 => super::broadcast::unary_map::<f32, f32>(&acc, |v| v / n as f32)?,
                _ => super::broadcast::unary_map::<f64, f64>(&acc, |v| v / n as f64)?,
            };
        }
        Ok(smallvec::smallvec![narrow(acc, dt)?.into()])
    }
}

pub(crate) fn variadic_factory(info: &NodeInfo<'_>, op: Variadic) -> Result<Box<dyn Kernel>> {
    if let Some(dt) = info.input_dtype(0)
        && !op.supports(dt)
    {
        return Err(Error::unsupported(format!("{} on {dt} tensors", info.node.op_type)));
    }
    if info.node.inputs.is_empty() {
        return Err(info.node.error("needs at least one input"));
    }
    Ok(Box::new(VariadicKernel(op)))
}

struct Where;

/// ONNX Where of same-typed `x` and `y` (QLinearWhere picks its requantized branches with it).
pub(crate) fn where_t<T: Elem>(c: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let bc = Broadcast::new([c.shape(), x.shape(), y.shape()])?;
    let (x, y) = (x.to_aligned(), y.to_aligned());
    let (cs, xs, ys) = (c.as_slice::<bool>()?, x.as_slice::<T>()?, y.as_slice::<T>()?);
    Ok(Tensor::build::<T>(bc.shape(), |out| ternary_slices(&bc, cs, xs, ys, out, |c, x, y| if *c { *x } else { *y })))
}

impl Kernel for Where {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let (c, x, y) = (tensor_in(inputs, 0)?, tensor_in(inputs, 1)?, tensor_in(inputs, 2)?);
        if c.dtype() != DType::Bool {
            return Err(Error::invalid(format!("Where condition must be bool, got {}", c.dtype())));
        }
        let dt = x.dtype();
        if y.dtype() != dt {
            return Err(Error::invalid(format!("Where branches differ in type: {dt} and {}", y.dtype())));
        }
        let out = if dt == DType::String {
            let bc = Broadcast::new([c.shape(), x.shape(), y.shape()])?;
            let (cs, xs, ys) = (c.as_slice::<bool>()?, x.as_strings()?, y.as_strings()?);
            let mut out = vec![String::new(); bc.len()];
            ternary_slices(&bc, cs, xs, ys, &mut out, |c, x, y| if *c { x.clone() } else { y.clone() });
            Tensor::from_strings(bc.shape(), out)?
        } else if dt == DType::Bool {
            where_t::<bool>(c, x, y)?
        } else {
            with_numeric!(dt, |T| where_t::<T>(c, x, y), _ => Err(bad_dtype("Where", dt)))?
        };
        Ok(smallvec::smallvec![out.into()])
    }
}

pub(crate) fn where_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    if let Some(dt) = info.input_dtype(1)
        && !(dt.is_float() || dt.is_int() || matches!(dt, DType::Bool | DType::String))
    {
        return Err(Error::unsupported(format!("Where on {dt} tensors")));
    }
    Ok(Box::new(Where))
}
