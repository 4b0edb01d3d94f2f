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

use vinort_ir::Values;
use vinort_ir::{DType, Elem, Error, Result, RunContext, Tensor, Value};

use super::broadcast::unary_map;
use super::num::{erf_f32, erf_f64};
use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in, with_numeric};
use crate::numeric::{Float, Int, Numeric, bad_dtype, is_half, narrow, widen};
use crate::vmath::Fun;

/// The ops [`Unary`] runs, `(domain, op)`; each is registered for the opsets its spec in
/// `vinort_ir::ops` gives.
const OPS: &[(&str, &str)] = &[
    ("", "Neg"),
    ("", "Abs"),
    ("", "Sqrt"),
    ("", "Exp"),
    ("", "Log"),
    ("", "Erf"),
    ("", "Tanh"),
    ("", "Sigmoid"),
    ("", "Relu"),
    ("", "LeakyRelu"),
    ("", "HardSigmoid"),
    ("", "HardSwish"),
    ("", "Gelu"),
    ("", "Reciprocal"),
    ("", "Floor"),
    ("", "Ceil"),
    ("", "Round"),
    ("", "Sign"),
    ("", "Sin"),
    ("", "Cos"),
    ("", "Tan"),
    ("", "Asin"),
    ("", "Acos"),
    ("", "Atan"),
    ("", "Sinh"),
    ("", "Cosh"),
    ("", "Asinh"),
    ("", "Acosh"),
    ("", "Atanh"),
    ("", "Elu"),
    ("", "Selu"),
    ("", "Celu"),
    ("", "Softplus"),
    ("", "Softsign"),
    ("", "ThresholdedRelu"),
    ("", "Shrink"),
    ("", "Mish"),
    ("", "BitwiseNot"),
    ("", "Not"),
    ("com.microsoft", "QuickGelu"),
];

pub(crate) fn register(r: &mut Registry) {
    for (domain, op) in OPS {
        r.op(domain, op, unary_factory);
    }
}

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
    QuickGelu { alpha: f32 },
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
            "Gelu" => Gelu { tanh: n.choice_attr("approximate", Some("none"), &[("none", false), ("tanh", true)])? },
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
            "QuickGelu" => QuickGelu { alpha: f("alpha", 1.702)? },
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
            DType::F32 => match self {
                Unary::Exp => vmap(x, Fun::Exp),
                Unary::Tanh => vmap(x, Fun::Tanh),
                Unary::Sigmoid => vmap(x, Fun::Sigmoid),
                Unary::Erf => vmap(x, Fun::Erf),
                Unary::Gelu { tanh: false } => vmap(x, Fun::Gelu),
                Unary::Relu => vmap(x, Fun::Relu),
                _ => float_f32(self, x),
            },
            DType::F64 => float_f64(self, x),
            _ if is_half(dt) => narrow(float_f32(self, &*widen(x)?)?, dt),
            _ => with_numeric!(int dt, |T| int_op::<T>(self, x), _ => Err(bad_dtype(&format!("{self:?}"), dt))),
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
                Sign => map::<$t>(x, <$t as Numeric>::sign),
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
                QuickGelu { alpha } => {
                    let a = alpha as $t;
                    map::<$t>(x, move |v| v / (1.0 + (-a * v).exp()))
                }
                BitwiseNot | Not => Err(bad_dtype(&format!("{op:?}"), <$t as Elem>::DTYPE)),
            }
        }
    };
}

/// An f32 map through [`crate::vmath::apply_into`] (compiled for AVX-512 or AVX2 when the CPU
/// has them), in parallel chunks above [`crate::par::ELEMENTWISE`].
fn vmap(x: &Tensor, f: Fun) -> Result<Tensor> {
    use rayon::prelude::*;
    let x = x.to_aligned();
    let xs = x.as_slice::<f32>()?;
    Ok(Tensor::build::<f32>(x.shape(), |out| {
        if out.len() >= crate::par::ELEMENTWISE && !crate::par::serial() {
            let chunk = crate::par::ELEMENTWISE_CHUNK;
            out.par_chunks_mut(chunk).zip(xs.par_chunks(chunk)).for_each(|(o, x)| crate::vmath::apply_into(f, x, o));
        } else {
            crate::vmath::apply_into(f, xs, out);
        }
    }))
}

/// `unary_map` with the output type of the input; each call site's closure is its own loop.
fn map<T: Elem>(x: &Tensor, f: impl Fn(T) -> T + Sync) -> Result<Tensor> {
    unary_map::<T, T>(x, f)
}

/// ln(1 + eˣ) without overflowing for large x.
fn softplus<T: Float>(v: T) -> T {
    if v > T::zero() { v + (-v).exp().ln_1p() } else { v.exp().ln_1p() }
}

float_ops!(float_f32, f32, erf_f32);
float_ops!(float_f64, f64, erf_f64);

fn int_op<T: Int>(op: Unary, x: &Tensor) -> Result<Tensor> {
    match op {
        Unary::Neg => unary_map::<T, T>(x, T::wrap_neg),
        Unary::Abs => unary_map::<T, T>(x, T::wrap_abs),
        Unary::Sign => unary_map::<T, T>(x, T::sign),
        Unary::Relu => unary_map::<T, T>(x, |v| v.nan_max(T::zero())),
        Unary::BitwiseNot => unary_map::<T, T>(x, |v| !v),
        Unary::Shrink { bias, lambd } => {
            // The thresholds and bias are floats: compare and shift in f64, then convert back.
            let (b, l) = (bias as f64, lambd as f64);
            unary_map::<T, T>(x, move |v| {
                let f = v.as_f64();
                if f < -l {
                    T::from_f64_as(f + b)
                } else if f > l {
                    T::from_f64_as(f - b)
                } else {
                    T::zero()
                }
            })
        }
        _ => Err(bad_dtype(&format!("{op:?}"), T::DTYPE)),
    }
}

struct UnaryKernel(Unary);

impl Kernel for UnaryKernel {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        Ok(smallvec::smallvec![self.0.apply(tensor_in(inputs, 0)?)?.into()])
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

fn classify<T: Float>(x: &Tensor, c: Class) -> Result<Tensor> {
    match c {
        Class::NaN => unary_map::<T, bool>(x, T::is_nan),
        Class::Inf { neg: dn, pos: dp } => {
            unary_map::<T, bool>(x, move |v| v.is_infinite() && if v.is_sign_negative() { dn } else { dp })
        }
    }
}

struct ClassKernel(Class);

impl Kernel for ClassKernel {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let c = self.0;
        let out = with_numeric!(float x.dtype(), |T| classify::<T>(x, c),
            dt => Err(bad_dtype(if matches!(c, Class::NaN) { "IsNaN" } else { "IsInf" }, dt)))?;
        Ok(smallvec::smallvec![out.into()])
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

/// Clip. Before opset 11 the bounds are float attributes; from 11 they are optional one-element
/// inputs of the input's type.
struct Clip {
    attrs: Option<(Option<f32>, Option<f32>)>,
}

/// `max(lo, min(hi, v))` in the order Clip-13 specifies: when `lo > hi` everything becomes `hi`.
/// Comparisons with NaN are false, so NaN passes through.
fn clip_t<T: Numeric>(
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
            (None, Some(a)) => Ok(T::from_f64_as(f64::from(a))),
            (None, None) => Ok(default),
        }
    };
    let (alo, ahi) = attrs.unwrap_or((None, None));
    // `min_value` is numeric_limits' lowest for floats too.
    let lo = bound(lo, alo, T::min_value())?;
    let hi = bound(hi, ahi, T::max_value())?;
    unary_map::<T, T>(x, move |v| {
        let v = if v < lo { lo } else { v };
        if v > hi { hi } else { v }
    })
}

impl Kernel for Clip {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let (lo, hi) =
            if self.attrs.is_some() { (None, None) } else { (opt_tensor_in(inputs, 1)?, opt_tensor_in(inputs, 2)?) };
        let a = self.attrs;
        let out = with_numeric!(x.dtype(), |T| clip_t::<T>(x, lo, hi, a), dt => Err(bad_dtype("Clip", dt)))?;
        Ok(smallvec::smallvec![out.into()])
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

#[cfg(test)]
mod tests {
    use vinort_ir::attr::Attr;

    use crate::test_support as ts;

    /// com.microsoft QuickGelu: `x * sigmoid(alpha * x)`, alpha 1.702 by default.
    #[test]
    fn quick_gelu_follows_the_contrib_spec() {
        let xs = [-4.0, -1.5, -0.25, 0.0, 0.5, 3.0];
        for alpha in [None, Some(1.0f32)] {
            let mut node = ts::op("QuickGelu", 1).domain("com.microsoft");
            if let Some(a) = alpha {
                node = node.attrs([("alpha", Attr::Float(a))]);
            }
            let got = ts::run1(&node.build(), &[ts::f32_tensor(&[6], &xs)]).unwrap();
            let got: Vec<f64> = got.as_slice::<f32>().unwrap().iter().map(|v| f64::from(*v)).collect();
            let a = f64::from(alpha.unwrap_or(1.702));
            let want: Vec<f64> = xs.iter().map(|x| x / (1.0 + (-a * x).exp())).collect();
            ts::assert_close(&got, &want, 1e-6, 1e-7, "QuickGelu");
        }
    }
}
