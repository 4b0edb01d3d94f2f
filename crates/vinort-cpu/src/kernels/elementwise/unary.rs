//! Unary elementwise ops.
//!
//! Float types (f32, f64; f16/bf16 computed in f32) for: Neg, Abs, Sqrt, Exp, Log, Erf, Tanh,
//! Sigmoid, Relu, LeakyRelu, HardSigmoid, HardSwish, Gelu, Reciprocal, Floor, Ceil, Round, Sign,
//! Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Elu, Selu, Celu, Softplus,
//! Softsign, ThresholdedRelu, Shrink, Mish — spec pages at
//! `https://onnx.ai/onnx/operators/onnx__<Op>.html`, e.g.
//! [Gelu](https://onnx.ai/onnx/operators/onnx__Gelu.html) (opset 20),
//! [Round](https://onnx.ai/onnx/operators/onnx__Round.html) (11–22, half to even),
//! [Relu](https://onnx.ai/onnx/operators/onnx__Relu.html) (1–14).
//! Integer types for Neg, Abs, Sign, Relu, Shrink and
//! [BitwiseNot](https://onnx.ai/onnx/operators/onnx__BitwiseNot.html) (18); bool for
//! [Not](https://onnx.ai/onnx/operators/onnx__Not.html).
//! [IsNaN](https://onnx.ai/onnx/operators/onnx__IsNaN.html) (9–20) and
//! [IsInf](https://onnx.ai/onnx/operators/onnx__IsInf.html) (10–20) give bool.
//! [Clip](https://onnx.ai/onnx/operators/onnx__Clip.html): bounds are attributes before opset
//! 11 and optional scalar inputs from 11 on; every numeric type.

use half::{bf16, f16};
use vinort_ir::{DType, Elem, Error, Result, RunContext, Tensor, Value};

use super::broadcast::unary_map;
use super::num::{Int, Num, bad_dtype, erf_f32, erf_f64, int_dispatch, is_half, narrow, widen};
use crate::kernel::{Kernel, NodeInfo, opt_tensor_in, tensor_in};

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Unary {
    Neg,
    Abs,
    Sqrt,
    Exp,
    Log,
    Erf,
    Tanh,
    Sigmoid,
    Relu,
    LeakyRelu { alpha: f32 },
    HardSigmoid { alpha: f32, beta: f32 },
    HardSwish,
    Gelu { tanh: bool },
    Reciprocal,
    Floor,
    Ceil,
    Round,
    Sign,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Elu { alpha: f32 },
    Selu { alpha: f32, gamma: f32 },
    Celu { alpha: f32 },
    Softplus,
    Softsign,
    ThresholdedRelu { alpha: f32 },
    Shrink { bias: f32, lambd: f32 },
    Mish,
    BitwiseNot,
    Not,
}

impl Unary {
    fn supports(self, dt: DType) -> bool {
        use Unary::*;
        let signed = matches!(dt, DType::I8 | DType::I16 | DType::I32 | DType::I64);
        match self {
            Not => dt == DType::Bool,
            BitwiseNot => dt.is_int(),
            Abs | Sign | Shrink { .. } => dt.is_float() || dt.is_int(),
            Neg | Relu => dt.is_float() || signed,
            _ => dt.is_float(),
        }
    }

    /// The op with its attributes (and their spec defaults) read from the node.
    pub(crate) fn parse(info: &NodeInfo<'_>) -> Result<Unary> {
        use Unary::*;
        let n = info.node;
        let f = |name: &str, default: f32| n.attr_or::<f32>(name, default);
        Ok(match n.op_type.as_str() {
            "Neg" => Neg,
            "Abs" => Abs,
            "Sqrt" => Sqrt,
            "Exp" => Exp,
            "Log" => Log,
            "Erf" => Erf,
            "Tanh" => Tanh,
            "Sigmoid" => Sigmoid,
            "Relu" => Relu,
            "LeakyRelu" => LeakyRelu { alpha: f("alpha", 0.01)? },
            "HardSigmoid" => HardSigmoid { alpha: f("alpha", 0.2)?, beta: f("beta", 0.5)? },
            "HardSwish" => HardSwish,
            "Gelu" => match n.attr_or::<String>("approximate", "none".into())?.as_str() {
                "none" => Gelu { tanh: false },
                "tanh" => Gelu { tanh: true },
                other => return Err(n.error(format!("approximate must be 'none' or 'tanh', got '{other}'"))),
            },
            "Reciprocal" => Reciprocal,
            "Floor" => Floor,
            "Ceil" => Ceil,
            "Round" => Round,
            "Sign" => Sign,
            "Sin" => Sin,
            "Cos" => Cos,
            "Tan" => Tan,
            "Asin" => Asin,
            "Acos" => Acos,
            "Atan" => Atan,
            "Sinh" => Sinh,
            "Cosh" => Cosh,
            "Asinh" => Asinh,
            "Acosh" => Acosh,
            "Atanh" => Atanh,
            "Elu" => Elu { alpha: f("alpha", 1.0)? },
            "Selu" => Selu { alpha: f("alpha", 1.673_263_2)?, gamma: f("gamma", 1.050_701)? },
            "Celu" => Celu { alpha: f("alpha", 1.0)? },
            "Softplus" => Softplus,
            "Softsign" => Softsign,
            "ThresholdedRelu" => ThresholdedRelu { alpha: f("alpha", 1.0)? },
            "Shrink" => Shrink { bias: f("bias", 0.0)?, lambd: f("lambd", 0.5)? },
            "Mish" => Mish,
            "BitwiseNot" => BitwiseNot,
            "Not" => Not,
            other => return Err(Error::unsupported(format!("{other} is not a unary elementwise op"))),
        })
    }

    /// The op on one tensor.
    pub(crate) fn apply(self, x: &Tensor) -> Result<Tensor> {
        let dt = x.dtype();
        if !self.supports(dt) {
            return Err(bad_dtype(&format!("{self:?}"), dt));
        }
        match dt {
            DType::Bool => unary_map::<bool, bool>(x, |v| !v),
            DType::F32 => float_f32(self, x),
            DType::F64 => float_f64(self, x),
            _ if is_half(dt) => narrow(float_f32(self, &widen(x)?)?, dt),
            _ => int_dispatch!(dt, int_op(self, x), Err(bad_dtype(&format!("{self:?}"), dt))),
        }
    }
}

/// The float ops for one concrete type, so formulas read as written in the spec and each arm's
/// closure is a tight loop of its own.
macro_rules! float_ops {
    ($name:ident, $t:ident, $erf:path) => {
        fn $name(op: Unary, x: &Tensor) -> Result<Tensor> {
            use Unary::*;
            match op {
                Neg => map::<$t>(x, |v| -v),
                Abs => map::<$t>(x, |v| v.abs()),
                Sqrt => map::<$t>(x, |v| v.sqrt()),
                Exp => map::<$t>(x, |v| v.exp()),
                Log => map::<$t>(x, |v| v.ln()),
                Erf => map::<$t>(x, $erf),
                Tanh => map::<$t>(x, |v| v.tanh()),
                Sigmoid => map::<$t>(x, |v| 1.0 / (1.0 + (-v).exp())),
                // `v < 0` keeps NaN as NaN, like numpy's maximum(v, 0).
                Relu => map::<$t>(x, |v| if v < 0.0 { 0.0 } else { v }),
                LeakyRelu { alpha } => {
                    let a = alpha as $t;
                    map::<$t>(x, move |v| if v < 0.0 { a * v } else { v })
                }
                HardSigmoid { alpha, beta } => {
                    let (a, b) = (alpha as $t, beta as $t);
                    map::<$t>(x, move |v| (a * v + b).clamp(0.0, 1.0))
                }
                HardSwish => map::<$t>(x, |v| v * (v / 6.0 + 0.5).clamp(0.0, 1.0)),
                Gelu { tanh: false } => map::<$t>(x, |v| 0.5 * v * (1.0 + $erf(v * std::$t::consts::FRAC_1_SQRT_2))),
                Gelu { tanh: true } => {
                    let k = (2.0 / std::$t::consts::PI).sqrt();
                    map::<$t>(x, move |v| 0.5 * v * (1.0 + (k * (v + 0.044715 * v * v * v)).tanh()))
                }
                Reciprocal => map::<$t>(x, |v| 1.0 / v),
                Floor => map::<$t>(x, |v| v.floor()),
                Ceil => map::<$t>(x, |v| v.ceil()),
                Round => map::<$t>(x, |v| v.round_ties_even()),
                Sign => map::<$t>(x, <$t as Num>::sign_),
                Sin => map::<$t>(x, |v| v.sin()),
                Cos => map::<$t>(x, |v| v.cos()),
                Tan => map::<$t>(x, |v| v.tan()),
                Asin => map::<$t>(x, |v| v.asin()),
                Acos => map::<$t>(x, |v| v.acos()),
                Atan => map::<$t>(x, |v| v.atan()),
                Sinh => map::<$t>(x, |v| v.sinh()),
                Cosh => map::<$t>(x, |v| v.cosh()),
                Asinh => map::<$t>(x, |v| v.asinh()),
                Acosh => map::<$t>(x, |v| v.acosh()),
                Atanh => map::<$t>(x, |v| v.atanh()),
                Elu { alpha } => {
                    let a = alpha as $t;
                    map::<$t>(x, move |v| if v < 0.0 { a * v.exp_m1() } else { v })
                }
                Selu { alpha, gamma } => {
                    let (a, g) = (alpha as $t, gamma as $t);
                    map::<$t>(x, move |v| if v <= 0.0 { g * a * v.exp_m1() } else { g * v })
                }
                Celu { alpha } => {
                    let a = alpha as $t;
                    map::<$t>(x, move |v| v.max(0.0) + (a * (v / a).exp_m1()).min(0.0))
                }
                Softplus => map::<$t>(x, softplus),
                Softsign => map::<$t>(x, |v| v / (1.0 + v.abs())),
                ThresholdedRelu { alpha } => {
                    let a = alpha as $t;
                    map::<$t>(x, move |v| if v > a { v } else { 0.0 })
                }
                Shrink { bias, lambd } => {
                    let (b, l) = (bias as $t, lambd as $t);
                    map::<$t>(x, move |v| {
                        if v < -l {
                            v + b
                        } else if v > l {
                            v - b
                        } else {
                            0.0
                        }
                    })
                }
                Mish => map::<$t>(x, |v| v * softplus(v).tanh()),
                BitwiseNot | Not => Err(bad_dtype(&format!("{op:?}"), <$t as Elem>::DTYPE)),
            }
        }
    };
}

/// `unary_map` with the output type of the input; each call site's closure is its own loop.
fn map<T: Elem>(x: &Tensor, f: impl Fn(T) -> T + Sync) -> Result<Tensor> {
    unary_map::<T, T>(x, f)
}

/// ln(1 + eˣ) without overflowing for large x.
fn softplus<T: SoftplusFloat>(v: T) -> T {
    v.softplus()
}

trait SoftplusFloat {
    fn softplus(self) -> Self;
}

macro_rules! softplus_impl {
    ($($t:ty),*) => {$(
        impl SoftplusFloat for $t {
            fn softplus(self) -> $t {
                if self > 0.0 { self + (-self).exp().ln_1p() } else { self.exp().ln_1p() }
            }
        }
    )*};
}
softplus_impl!(f32, f64);

float_ops!(float_f32, f32, erf_f32);
float_ops!(float_f64, f64, erf_f64);

fn int_op<T: Int>(op: Unary, x: &Tensor) -> Result<Tensor> {
    match op {
        Unary::Neg => unary_map::<T, T>(x, T::neg_),
        Unary::Abs => unary_map::<T, T>(x, T::abs_),
        Unary::Sign => unary_map::<T, T>(x, T::sign_),
        Unary::Relu => unary_map::<T, T>(x, |v| v.max_(T::ZERO)),
        Unary::BitwiseNot => unary_map::<T, T>(x, T::not),
        Unary::Shrink { bias, lambd } => {
            // The thresholds and bias are floats: compare and shift in f64, then convert back.
            let (b, l) = (bias as f64, lambd as f64);
            unary_map::<T, T>(x, move |v| {
                let f = v.to_f64();
                if f < -l {
                    T::from_f64(f + b)
                } else if f > l {
                    T::from_f64(f - b)
                } else {
                    T::ZERO
                }
            })
        }
        _ => Err(bad_dtype(&format!("{op:?}"), T::DTYPE)),
    }
}

struct UnaryKernel(Unary);

impl Kernel for UnaryKernel {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Vec<Value>> {
        Ok(vec![self.0.apply(tensor_in(inputs, 0)?)?.into()])
    }
}

pub(crate) fn unary_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let op = Unary::parse(info)?;
    if let Some(dt) = info.input_dtype(0)
        && !op.supports(dt)
    {
        return Err(Error::unsupported(format!("{} on {dt} tensors", info.node.op_type)));
    }
    Ok(Box::new(UnaryKernel(op)))
}

/// IsNaN and IsInf (with its `detect_negative`/`detect_positive` switches).
#[derive(Clone, Copy, Debug)]
enum Class {
    NaN,
    Inf { neg: bool, pos: bool },
}

fn classify<T: Elem>(
    x: &Tensor,
    c: Class,
    nan: fn(T) -> bool,
    inf: fn(T) -> bool,
    neg: fn(T) -> bool,
) -> Result<Tensor> {
    match c {
        Class::NaN => unary_map::<T, bool>(x, nan),
        Class::Inf { neg: dn, pos: dp } => unary_map::<T, bool>(x, move |v| inf(v) && if neg(v) { dn } else { dp }),
    }
}

struct ClassKernel(Class);

impl Kernel for ClassKernel {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Vec<Value>> {
        let x = tensor_in(inputs, 0)?;
        let c = self.0;
        let out = match x.dtype() {
            DType::F32 => classify::<f32>(x, c, f32::is_nan, f32::is_infinite, f32::is_sign_negative),
            DType::F64 => classify::<f64>(x, c, f64::is_nan, f64::is_infinite, f64::is_sign_negative),
            DType::F16 => classify::<f16>(x, c, f16::is_nan, f16::is_infinite, f16::is_sign_negative),
            DType::BF16 => classify::<bf16>(x, c, bf16::is_nan, bf16::is_infinite, bf16::is_sign_negative),
            dt => Err(bad_dtype(if matches!(c, Class::NaN) { "IsNaN" } else { "IsInf" }, dt)),
        }?;
        Ok(vec![out.into()])
    }
}

pub(crate) fn class_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let c = if n.op_type == "IsNaN" {
        Class::NaN
    } else {
        Class::Inf {
            neg: n.attr_or::<i64>("detect_negative", 1)? != 0,
            pos: n.attr_or::<i64>("detect_positive", 1)? != 0,
        }
    };
    if let Some(dt) = info.input_dtype(0)
        && !dt.is_float()
    {
        return Err(Error::unsupported(format!("{} on {dt} tensors", n.op_type)));
    }
    Ok(Box::new(ClassKernel(c)))
}

/// Element types Clip can bound, with their default bounds (`numeric_limits` lowest and max).
trait Bound: Elem + PartialOrd {
    const LOWEST: Self;
    const HIGHEST: Self;
    fn from_f32(v: f32) -> Self;
}

macro_rules! bound {
    ($($t:ty),*) => {$(
        impl Bound for $t {
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            fn from_f32(v: f32) -> Self { v as $t }
        }
    )*};
}
bound!(f32, f64, i8, i16, i32, i64, u8, u16, u32, u64);

impl Bound for f16 {
    const LOWEST: Self = f16::MIN;
    const HIGHEST: Self = f16::MAX;
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
}

impl Bound for bf16 {
    const LOWEST: Self = bf16::MIN;
    const HIGHEST: Self = bf16::MAX;
    fn from_f32(v: f32) -> Self {
        bf16::from_f32(v)
    }
}

/// Clip. Before opset 11 the bounds are float attributes; from 11 they are optional one-element
/// inputs of the input's type.
struct Clip {
    attrs: Option<(Option<f32>, Option<f32>)>,
}

/// `max(lo, min(hi, v))` in the order Clip-13 specifies: when `lo > hi` everything becomes `hi`.
/// Comparisons with NaN are false, so NaN passes through.
fn clip_t<T: Bound>(
    x: &Tensor,
    lo: Option<&Tensor>,
    hi: Option<&Tensor>,
    attrs: Option<(Option<f32>, Option<f32>)>,
) -> Result<Tensor> {
    let bound = |t: Option<&Tensor>, attr: Option<f32>, default: T| -> Result<T> {
        match (t, attr) {
            (Some(t), _) => match t.as_slice::<T>() {
                Ok([v]) => Ok(*v),
                Ok(s) => Err(Error::invalid(format!("Clip bounds must hold one element, got {}", s.len()))),
                Err(_) => Err(Error::invalid(format!("Clip bound is {}, input is {}", t.dtype(), T::DTYPE))),
            },
            (None, Some(a)) => Ok(T::from_f32(a)),
            (None, None) => Ok(default),
        }
    };
    let (alo, ahi) = attrs.unwrap_or((None, None));
    let lo = bound(lo, alo, T::LOWEST)?;
    let hi = bound(hi, ahi, T::HIGHEST)?;
    unary_map::<T, T>(x, move |v| {
        let v = if v < lo { lo } else { v };
        if v > hi { hi } else { v }
    })
}

impl Kernel for Clip {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Vec<Value>> {
        let x = tensor_in(inputs, 0)?;
        let (lo, hi) =
            if self.attrs.is_some() { (None, None) } else { (opt_tensor_in(inputs, 1)?, opt_tensor_in(inputs, 2)?) };
        let a = self.attrs;
        let out = match x.dtype() {
            DType::F16 => clip_t::<f16>(x, lo, hi, a),
            DType::BF16 => clip_t::<bf16>(x, lo, hi, a),
            DType::F32 => clip_t::<f32>(x, lo, hi, a),
            DType::F64 => clip_t::<f64>(x, lo, hi, a),
            DType::I8 => clip_t::<i8>(x, lo, hi, a),
            DType::I16 => clip_t::<i16>(x, lo, hi, a),
            DType::I32 => clip_t::<i32>(x, lo, hi, a),
            DType::I64 => clip_t::<i64>(x, lo, hi, a),
            DType::U8 => clip_t::<u8>(x, lo, hi, a),
            DType::U16 => clip_t::<u16>(x, lo, hi, a),
            DType::U32 => clip_t::<u32>(x, lo, hi, a),
            DType::U64 => clip_t::<u64>(x, lo, hi, a),
            dt => Err(bad_dtype("Clip", dt)),
        }?;
        Ok(vec![out.into()])
    }
}

pub(crate) fn clip_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let attrs = if n.opset < 11 { Some((n.attr::<f32>("min")?, n.attr::<f32>("max")?)) } else { None };
    if let Some(dt) = info.input_dtype(0)
        && !(dt.is_float() || dt.is_int())
    {
        return Err(Error::unsupported(format!("Clip on {dt} tensors")));
    }
    Ok(Box::new(Clip { attrs }))
}
