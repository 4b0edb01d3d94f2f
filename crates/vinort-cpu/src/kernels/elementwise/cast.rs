//! [Cast](https://onnx.ai/onnx/operators/onnx__Cast.html) (opsets 1–28) and
//! [CastLike](https://onnx.ai/onnx/operators/onnx__CastLike.html) (15–25) between f32, f64, f16,
//! bf16, i8–i64, u8–u64, bool and string.
//!
//! Rules from Cast-19: float to float rounds to nearest (±inf out of range); float to integer
//! truncates toward zero (the spec leaves out-of-range undefined; here it saturates and NaN
//! gives 0); integer to integer keeps the low bits (two's complement); anything to bool is
//! "not zero". Numbers print as the shortest string that parses back to the same value
//! ("NaN", "INF", "-INF" for the specials); strings parse as decimal or scientific numbers,
//! with "NaN", "INF", "+INF", "-INF" matched case-insensitively. The 8-bit and sub-byte float
//! and integer formats are refused as unsupported, so `saturate` (which only affects them) is
//! ignored.

use half::{bf16, f16};
use vinort_ir::{DType, Elem, Error, Result, RunContext, Tensor, Value};

use super::broadcast::unary_map;
use crate::kernel::{Kernel, NodeInfo, tensor_in};

/// Calls `$body` with `$T` bound to the Rust type of a castable, non-string dtype.
macro_rules! with_elem {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            DType::F16 => {
                type $T = f16;
                $body
            }
            DType::BF16 => {
                type $T = bf16;
                $body
            }
            DType::I8 => {
                type $T = i8;
                $body
            }
            DType::I16 => {
                type $T = i16;
                $body
            }
            DType::I32 => {
                type $T = i32;
                $body
            }
            DType::I64 => {
                type $T = i64;
                $body
            }
            DType::U8 => {
                type $T = u8;
                $body
            }
            DType::U16 => {
                type $T = u16;
                $body
            }
            DType::U32 => {
                type $T = u32;
                $body
            }
            DType::U64 => {
                type $T = u64;
                $body
            }
            DType::Bool => {
                type $T = bool;
                $body
            }
            other => Err(Error::invalid(format!("Cast does not support {other}"))),
        }
    };
}

/// A value on its way between two element types: the widest form of its kind.
#[derive(Clone, Copy)]
enum Scalar {
    F(f64),
    I(i128),
    B(bool),
}

/// An element type Cast converts from and to.
trait CastElem: Elem {
    fn get(self) -> Scalar;
    fn put(v: Scalar) -> Self;
    fn parse(s: &str) -> Option<Self>;
    fn format(self) -> String;
}

macro_rules! cast_int {
    ($($t:ty),*) => {$(
        impl CastElem for $t {
            fn get(self) -> Scalar {
                Scalar::I(self as i128)
            }
            fn put(v: Scalar) -> Self {
                match v {
                    Scalar::F(f) => f as $t,
                    Scalar::I(i) => i as $t,
                    Scalar::B(b) => b as $t,
                }
            }
            fn parse(s: &str) -> Option<Self> {
                // Cast-19 leaves "2.718" to an integer undefined; truncating it is the
                // friendliest reading.
                let s = s.trim();
                s.parse::<i128>().ok().map(|i| i as $t).or_else(|| parse_float(s).map(|f| f as $t))
            }
            fn format(self) -> String {
                self.to_string()
            }
        }
    )*};
}
cast_int!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! cast_float {
    ($t:ty, $to:expr, $from_f64:expr, $from_i128:expr, $from_str:expr) => {
        impl CastElem for $t {
            fn get(self) -> Scalar {
                Scalar::F($to(self))
            }
            fn put(v: Scalar) -> Self {
                match v {
                    Scalar::F(f) => $from_f64(f),
                    Scalar::I(i) => $from_i128(i),
                    Scalar::B(b) => $from_f64(b as u8 as f64),
                }
            }
            fn parse(s: &str) -> Option<Self> {
                $from_str(s)
            }
            fn format(self) -> String {
                format_float(self)
            }
        }
    };
}
cast_float!(f64, |v: f64| v, |f: f64| f, |i: i128| i as f64, parse_float);
// Parsing straight to f32 avoids rounding twice through f64.
cast_float!(f32, |v: f32| v as f64, |f: f64| f as f32, |i: i128| i as f32, |s: &str| parse_float_as::<f32>(s));
cast_float!(f16, f16::to_f64, f16::from_f64, |i: i128| f16::from_f64(i as f64), |s: &str| parse_float(s)
    .map(f16::from_f64));
cast_float!(bf16, bf16::to_f64, bf16::from_f64, |i: i128| bf16::from_f64(i as f64), |s: &str| parse_float(s)
    .map(bf16::from_f64));

impl CastElem for bool {
    fn get(self) -> Scalar {
        Scalar::B(self)
    }
    fn put(v: Scalar) -> Self {
        match v {
            // NaN is not zero, so it is true.
            Scalar::F(f) => f != 0.0,
            Scalar::I(i) => i != 0,
            Scalar::B(b) => b,
        }
    }
    fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("true") {
            Some(true)
        } else if s.eq_ignore_ascii_case("false") {
            Some(false)
        } else {
            parse_float(s).map(|f| f != 0.0)
        }
    }
    fn format(self) -> String {
        // numpy's spelling, which the ONNX reference implementation produces.
        if self { "True".into() } else { "False".into() }
    }
}

/// A float from a Cast string: decimal or scientific, or one of the reserved special names.
fn parse_float(s: &str) -> Option<f64> {
    parse_float_as::<f64>(s)
}

fn parse_float_as<F: std::str::FromStr + From<f32>>(s: &str) -> Option<F> {
    let s = s.trim();
    let special = |name: &str| s.eq_ignore_ascii_case(name);
    if special("nan") || special("+nan") || special("-nan") {
        Some(F::from(f32::NAN))
    } else if special("inf") || special("+inf") || special("infinity") || special("+infinity") {
        Some(F::from(f32::INFINITY))
    } else if special("-inf") || special("-infinity") {
        Some(F::from(f32::NEG_INFINITY))
    } else {
        s.parse::<F>().ok()
    }
}

/// The shortest round-trip spelling of a float: positional between 1e-4 and 1e16 (numpy's
/// range), scientific outside it.
fn format_float<F: Into<f64> + Copy + std::fmt::Display + std::fmt::LowerExp>(v: F) -> String {
    let f: f64 = v.into();
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "INF".into() } else { "-INF".into() }
    } else if f == 0.0 || (1e-4..1e16).contains(&f.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// The dtypes Cast handles.
pub(crate) fn castable(dt: DType) -> bool {
    dt.is_float() || dt.is_int() || matches!(dt, DType::Bool | DType::String)
}

fn num_to<S: CastElem>(x: &Tensor, to: DType) -> Result<Tensor> {
    fn go<S: CastElem, D: CastElem>(x: &Tensor) -> Result<Tensor> {
        unary_map::<S, D>(x, |v| D::put(v.get()))
    }
    if to == DType::String {
        let out: Vec<String> = x.as_slice::<S>()?.iter().map(|v| v.format()).collect();
        return Tensor::from_strings(x.shape(), out);
    }
    with_elem!(to, D => go::<S, D>(x))
}

fn string_to<D: CastElem>(x: &Tensor) -> Result<Tensor> {
    let strs = x.as_strings()?;
    Tensor::try_build::<D, Error>(x.shape(), |out| {
        for (o, s) in out.iter_mut().zip(strs) {
            *o = D::parse(s).ok_or_else(|| Error::invalid(format!("cannot cast string '{s}' to {}", D::DTYPE)))?;
        }
        Ok(())
    })
}

/// `x` converted to `to` with Cast's rules (usable by other kernels that need a conversion).
pub fn cast_tensor(x: &Tensor, to: DType) -> Result<Tensor> {
    let from = x.dtype();
    if from == to {
        return Ok(x.clone());
    }
    match from {
        DType::String => match to {
            DType::String => Ok(x.clone()),
            _ => with_elem!(to, D => string_to::<D>(x)),
        },
        _ => with_elem!(from, S => num_to::<S>(x, to)),
    }
}

struct Cast {
    /// The target type; `None` for CastLike, which takes it from its second input.
    to: Option<DType>,
}

impl Kernel for Cast {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Vec<Value>> {
        let x = tensor_in(inputs, 0)?;
        let to = match self.to {
            Some(t) => t,
            None => tensor_in(inputs, 1)?.dtype(),
        };
        for dt in [x.dtype(), to] {
            if !castable(dt) {
                return Err(Error::invalid(format!("Cast does not support {dt}")));
            }
        }
        Ok(vec![cast_tensor(x, to)?.into()])
    }
}

/// The `to` attribute: a `TensorProto.DataType` number, or before opset 6 its name.
fn target(info: &NodeInfo<'_>) -> Result<DType> {
    let n = info.node;
    if let Ok(Some(code)) = n.attr::<i64>("to") {
        return i32::try_from(code)
            .ok()
            .and_then(DType::from_onnx)
            .ok_or_else(|| n.error(format!("'to' = {code} is not an ONNX data type")));
    }
    let name = n.req_attr::<String>("to")?;
    DType::ALL
        .into_iter()
        .find(|d| {
            let proto = match d {
                DType::F32 => "FLOAT",
                DType::F64 => "DOUBLE",
                DType::F16 => "FLOAT16",
                DType::BF16 => "BFLOAT16",
                _ => d.onnx_name(),
            };
            proto.eq_ignore_ascii_case(&name)
        })
        .ok_or_else(|| n.error(format!("'to' = '{name}' is not an ONNX data type")))
}

pub(crate) fn cast_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let to = target(info)?;
    let from = info.input_dtype(0);
    for dt in from.into_iter().chain([to]) {
        if !castable(dt) {
            return Err(Error::unsupported(format!("Cast involving {dt}")));
        }
    }
    Ok(Box::new(Cast { to: Some(to) }))
}

pub(crate) fn cast_like_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    for dt in [info.input_dtype(0), info.input_dtype(1)].into_iter().flatten() {
        if !castable(dt) {
            return Err(Error::unsupported(format!("CastLike involving {dt}")));
        }
    }
    Ok(Box::new(Cast { to: None }))
}
