//! [Cast](https://onnx.ai/onnx/operators/onnx__Cast.html) (opsets 1–28) and
//! [CastLike](https://onnx.ai/onnx/operators/onnx__CastLike.html) (15–25) between every ONNX
//! element type but the complex ones: f32, f64, f16, bf16, i8–i64, u8–u64, bool, string, the
//! 8-bit floats (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0), FLOAT4E2M1, FLOAT6E2M3, FLOAT6E3M2,
//! INT4/UINT4 and INT2/UINT2.
//!
//! Rules from Cast-19: float to float rounds to nearest (±inf out of range); float to integer
//! truncates toward zero (the spec leaves out-of-range undefined; here it saturates and NaN
//! gives 0); integer to integer keeps the low bits (two's complement); anything to bool is
//! "not zero". Numbers print as the shortest string that parses back to the same value
//! ("NaN", "INF", "-INF" for the specials); strings parse as decimal or scientific numbers,
//! with "NaN", "INF", "+INF", "-INF" matched case-insensitively.
//!
//! The small float formats ([`float8`]) round to nearest even, with `saturate` (Cast-19,
//! default 1) choosing between the spec's two tables for out-of-range values, and
//! `round_mode` (Cast-24, default "up") for FLOAT8E8M0. The narrow integers ([`subbyte`])
//! keep their low bits. Both go through `f64`/`i128`, which hold every source value exactly
//! except 64-bit integers beyond 2^53 and long decimal strings, which round once before.

use half::{bf16, f16};
use vinort_ir::Values;
use vinort_ir::{DType, Elem, Error, Result, RunContext, Tensor, Value};

use super::broadcast::{unary_map, unary_slices};
use crate::kernel::{Kernel, NodeInfo, tensor_in, with_numeric};

#[path = "float8.rs"]
mod float8;
#[path = "subbyte.rs"]
mod subbyte;

use float8::{MiniFloat, RoundMode};
use subbyte::NarrowInt;

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

fn uncastable(dt: DType) -> Error {
    Error::invalid(format!("Cast does not support {dt}"))
}

/// The dtypes Cast handles: all but the complex ones.
pub(crate) fn castable(dt: DType) -> bool {
    !matches!(dt, DType::Complex64 | DType::Complex128)
}

/// The attributes that shape conversions to the small float formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CastOptions {
    /// Clamp out-of-range values to the largest finite value (Cast-19 `saturate`, default on).
    pub saturate: bool,
    /// FLOAT8E8M0 rounding (Cast-24 `round_mode`).
    round_mode: RoundMode,
}

impl Default for CastOptions {
    fn default() -> Self {
        CastOptions { saturate: true, round_mode: RoundMode::Up }
    }
}

/// A type stored one element per byte whose values need decoding: the small floats and the
/// narrow integers.
#[derive(Clone, Copy, Debug)]
enum Narrow {
    Float(MiniFloat),
    E8M0,
    Int(NarrowInt),
}

fn narrow(dt: DType) -> Option<Narrow> {
    Some(match dt {
        DType::F8E4M3FN => Narrow::Float(float8::E4M3FN),
        DType::F8E4M3FNUZ => Narrow::Float(float8::E4M3FNUZ),
        DType::F8E5M2 => Narrow::Float(float8::E5M2),
        DType::F8E5M2FNUZ => Narrow::Float(float8::E5M2FNUZ),
        DType::F4E2M1 => Narrow::Float(float8::E2M1),
        DType::F6E2M3 => Narrow::Float(float8::E2M3),
        DType::F6E3M2 => Narrow::Float(float8::E3M2),
        DType::F8E8M0 => Narrow::E8M0,
        DType::I4 => Narrow::Int(subbyte::I4),
        DType::U4 => Narrow::Int(subbyte::U4),
        DType::I2 => Narrow::Int(subbyte::I2),
        DType::U2 => Narrow::Int(subbyte::U2),
        _ => return None,
    })
}

impl Narrow {
    fn get(self, byte: u8) -> Scalar {
        match self {
            Narrow::Float(f) => Scalar::F(f.decode(byte)),
            Narrow::E8M0 => Scalar::F(float8::e8m0_decode(byte)),
            Narrow::Int(i) => Scalar::I(i.decode(byte)),
        }
    }

    fn put(self, v: Scalar, opts: CastOptions) -> u8 {
        let f = match v {
            Scalar::F(f) => f,
            Scalar::I(i) => i as f64,
            Scalar::B(b) => f64::from(u8::from(b)),
        };
        match self {
            Narrow::Float(m) => m.encode(f, opts.saturate),
            Narrow::E8M0 => float8::e8m0_encode(f, opts.saturate, opts.round_mode),
            Narrow::Int(n) => match v {
                Scalar::I(i) => n.wrap(i),
                _ => n.wrap_float(f),
            },
        }
    }

    fn parse(self, s: &str, opts: CastOptions) -> Option<u8> {
        let s = s.trim();
        let v = match self {
            Narrow::Int(_) => s.parse::<i128>().ok().map(Scalar::I).or_else(|| parse_float(s).map(Scalar::F)),
            _ => parse_float(s).map(Scalar::F),
        }?;
        Some(self.put(v, opts))
    }

    fn format(self, byte: u8) -> String {
        match self.get(byte) {
            Scalar::I(i) => i.to_string(),
            // Every small-float value is exact in f32, whose shortest spelling is the shorter.
            Scalar::F(f) => format_float(f as f32),
            Scalar::B(b) => b.format(),
        }
    }
}

fn num_to<S: CastElem>(x: &Tensor, to: DType, opts: CastOptions) -> Result<Tensor> {
    fn go<S: CastElem, D: CastElem>(x: &Tensor) -> Result<Tensor> {
        unary_map::<S, D>(x, |v| D::put(v.get()))
    }
    if to == DType::String {
        let out: Vec<String> = x.as_slice::<S>()?.iter().map(|v| v.format()).collect();
        return Tensor::from_strings(x.shape(), out);
    }
    if let Some(n) = narrow(to) {
        let x = x.to_aligned();
        let xs = x.as_slice::<S>()?;
        return Tensor::build_raw(to, x.shape(), |out| unary_slices(xs, out, |v| n.put(v.get(), opts)));
    }
    match to {
        DType::Bool => go::<S, bool>(x),
        _ => with_numeric!(to, |D| go::<S, D>(x), other => Err(uncastable(other))),
    }
}

/// `x` (of a [`Narrow`] type `src`) converted to `to`.
fn narrow_to(x: &Tensor, src: Narrow, to: DType, opts: CastOptions) -> Result<Tensor> {
    fn go<D: CastElem>(x: &Tensor, src: Narrow) -> Result<Tensor> {
        let xs = x.as_bytes();
        Ok(Tensor::build::<D>(x.shape(), |out| unary_slices(xs, out, |b| D::put(src.get(b)))))
    }
    let xs = x.as_bytes();
    if to == DType::String {
        return Tensor::from_strings(x.shape(), xs.iter().map(|b| src.format(*b)).collect());
    }
    if let Some(n) = narrow(to) {
        return Tensor::build_raw(to, x.shape(), |out| unary_slices(xs, out, |b| n.put(src.get(b), opts)));
    }
    match to {
        DType::Bool => go::<bool>(x, src),
        _ => with_numeric!(to, |D| go::<D>(x, src), other => Err(uncastable(other))),
    }
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

fn string_to_narrow(x: &Tensor, n: Narrow, to: DType, opts: CastOptions) -> Result<Tensor> {
    let strs = x.as_strings()?;
    let mut bad = None;
    let t = Tensor::build_raw(to, x.shape(), |out| {
        for (o, s) in out.iter_mut().zip(strs) {
            match n.parse(s, opts) {
                Some(b) => *o = b,
                None => {
                    bad = Some(s);
                    break;
                }
            }
        }
    })?;
    match bad {
        Some(s) => Err(Error::invalid(format!("cannot cast string '{s}' to {to}"))),
        None => Ok(t),
    }
}

/// `x` converted to `to` with Cast's rules and default attributes (usable by other kernels that
/// need a conversion).
pub fn cast_tensor(x: &Tensor, to: DType) -> Result<Tensor> {
    cast_tensor_with(x, to, CastOptions::default())
}

/// `x` converted to `to` with Cast's rules and the given attributes.
pub fn cast_tensor_with(x: &Tensor, to: DType, opts: CastOptions) -> Result<Tensor> {
    let from = x.dtype();
    if from == to {
        return Ok(x.clone());
    }
    for dt in [from, to] {
        if !castable(dt) {
            return Err(uncastable(dt));
        }
    }
    if let Some(src) = narrow(from) {
        return narrow_to(x, src, to, opts);
    }
    match from {
        DType::String => match narrow(to) {
            Some(n) => string_to_narrow(x, n, to, opts),
            None if to == DType::Bool => string_to::<bool>(x),
            None => with_numeric!(to, |D| string_to::<D>(x), other => Err(uncastable(other))),
        },
        DType::Bool => num_to::<bool>(x, to, opts),
        _ => with_numeric!(from, |S| num_to::<S>(x, to, opts), other => Err(uncastable(other))),
    }
}

struct Cast {
    /// The target type; `None` for CastLike, which takes it from its second input.
    to: Option<DType>,
    opts: CastOptions,
}

impl Kernel for Cast {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let to = match self.to {
            Some(t) => t,
            None => tensor_in(inputs, 1)?.dtype(),
        };
        Ok(smallvec::smallvec![cast_tensor_with(x, to, self.opts)?.into()])
    }
}

/// The `saturate` (Cast-19) and `round_mode` (Cast-24) attributes.
fn options(info: &NodeInfo<'_>) -> Result<CastOptions> {
    let n = info.node;
    let saturate = n.attr::<i64>("saturate")?.unwrap_or(1) != 0;
    let round_mode = match n.attr::<String>("round_mode")?.as_deref() {
        None | Some("up") => RoundMode::Up,
        Some("down") => RoundMode::Down,
        Some("nearest") => RoundMode::Nearest,
        Some(other) => return Err(n.error(format!("'round_mode' = '{other}' is not up, down or nearest"))),
    };
    Ok(CastOptions { saturate, round_mode })
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
    Ok(Box::new(Cast { to: Some(to), opts: options(info)? }))
}

pub(crate) fn cast_like_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    for dt in [info.input_dtype(0), info.input_dtype(1)].into_iter().flatten() {
        if !castable(dt) {
            return Err(Error::unsupported(format!("CastLike involving {dt}")));
        }
    }
    Ok(Box::new(Cast { to: None, opts: options(info)? }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(t: &Tensor) -> Vec<u8> {
        t.as_bytes().to_vec()
    }

    #[test]
    fn floats_to_float8_and_back() -> Result<()> {
        let x = Tensor::from_slice(&[5], &[0.5f32, -448.0, 1e6, f32::NEG_INFINITY, f32::NAN])?;
        let sat = cast_tensor(&x, DType::F8E4M3FN)?;
        assert_eq!(sat.dtype(), DType::F8E4M3FN);
        assert_eq!(bytes(&sat), [0x30, 0xFE, 0x7E, 0xFE, 0x7F]);
        let opts = CastOptions { saturate: false, ..CastOptions::default() };
        assert_eq!(bytes(&cast_tensor_with(&x, DType::F8E4M3FN, opts)?), [0x30, 0xFE, 0x7F, 0xFF, 0x7F]);
        assert_eq!(bytes(&cast_tensor_with(&x, DType::F8E5M2, opts)?), [0x38, 0xDF, 0x7C, 0xFC, 0x7E]);
        let back = cast_tensor(&sat, DType::F32)?;
        let v = back.as_slice::<f32>()?;
        assert_eq!(&v[..4], [0.5, -448.0, 448.0, -448.0]);
        assert!(v[4].is_nan());
        // f16 and f64 sources, and float8 to float8.
        let h = cast_tensor(&x, DType::F16)?;
        assert_eq!(bytes(&cast_tensor(&h, DType::F8E4M3FN)?), bytes(&sat));
        let d = cast_tensor(&x, DType::F64)?;
        assert_eq!(bytes(&cast_tensor(&d, DType::F8E4M3FN)?), bytes(&sat));
        let e5 = cast_tensor(&sat, DType::F8E5M2FNUZ)?;
        assert_eq!(cast_tensor(&e5, DType::F64)?.as_slice::<f64>()?[..2], [0.5, -448.0]);
        Ok(())
    }

    #[test]
    fn integers_and_bools_to_small_types() -> Result<()> {
        let x = Tensor::from_slice(&[6], &[-9i32, -8, 7, 8, 15, 300])?;
        let i4 = cast_tensor(&x, DType::I4)?;
        assert_eq!(i4.as_slice::<i8>()?, [7, -8, 7, -8, -1, -4]);
        let u4 = cast_tensor(&x, DType::U4)?;
        assert_eq!(u4.as_slice::<u8>()?, [7, 8, 7, 8, 15, 12]);
        assert_eq!(cast_tensor(&i4, DType::I64)?.as_slice::<i64>()?, [7, -8, 7, -8, -1, -4]);
        assert_eq!(cast_tensor(&i4, DType::U2)?.as_slice::<u8>()?, [3, 0, 3, 0, 3, 0]);
        assert_eq!(bytes(&cast_tensor(&x, DType::F8E4M3FN)?), [0xD1, 0xD0, 0x4E, 0x50, 0x57, 0x79]);
        let b = Tensor::from_slice(&[2], &[true, false])?;
        assert_eq!(bytes(&cast_tensor(&b, DType::F4E2M1)?), [0x2, 0x0]);
        assert_eq!(cast_tensor(&cast_tensor(&b, DType::I2)?, DType::Bool)?.as_slice::<bool>()?, [true, false]);
        assert_eq!(bytes(&cast_tensor(&x, DType::F8E8M0)?), [131, 130, 130, 130, 131, 136]);
        Ok(())
    }

    #[test]
    fn strings_to_and_from_small_types() -> Result<()> {
        let s = Tensor::from_strings(&[4], vec!["0.5".into(), "-INF".into(), "NaN".into(), "1e3".into()])?;
        assert_eq!(bytes(&cast_tensor(&s, DType::F8E5M2)?), [0x38, 0xFB, 0x7E, 0x64]);
        let i = Tensor::from_strings(&[3], vec!["7".into(), "-8".into(), "2.9".into()])?;
        assert_eq!(cast_tensor(&i, DType::I4)?.as_slice::<i8>()?, [7, -8, 2]);
        let f8 = cast_tensor(&s, DType::F8E4M3FN)?;
        let back = cast_tensor(&f8, DType::String)?;
        assert_eq!(back.as_strings()?, ["0.5", "-448", "NaN", "448"]);
        let i4 = cast_tensor(&i, DType::I4)?;
        assert_eq!(cast_tensor(&i4, DType::String)?.as_strings()?, ["7", "-8", "2"]);
        assert!(cast_tensor(&Tensor::from_strings(&[1], vec!["x".into()])?, DType::F8E4M3FN).is_err());
        Ok(())
    }

    #[test]
    fn complex_is_refused() {
        assert!(!castable(DType::Complex64));
        assert!(castable(DType::F6E3M2));
        assert!(castable(DType::U2));
    }
}
