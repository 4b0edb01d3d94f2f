//! Comparing a produced value with a reference value, by the ONNX backend-test rule.

use std::fmt;

use vinort_ir::{DType, Tensor, Value};

/// How close a float result must be to its reference.
///
/// An element passes when `|got − want| ≤ atol + rtol·|want|`. NaN equals NaN; infinities
/// must match exactly (sign included). Integers, booleans and strings must be equal. Element
/// type and shape must always match exactly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Relative tolerance, scaled by the reference value's magnitude.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

impl Default for Tolerance {
    /// rtol 1e-3, atol 1e-7: the defaults of ONNX's own backend test runner.
    fn default() -> Tolerance {
        Tolerance { rtol: 1e-3, atol: 1e-7 }
    }
}

impl Tolerance {
    /// The largest difference allowed from the reference value `want`.
    pub fn allowed(&self, want: f64) -> f64 {
        self.atol + self.rtol * want.abs()
    }
}

/// The first way in which two values differ.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// Where inside the value: empty at the top, `item 2` inside a sequence, `optional value`
    /// inside an optional, nested left to right.
    pub location: String,
    /// What differs.
    pub kind: MismatchKind,
}

/// What differs between a produced value and its reference.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum MismatchKind {
    /// A tensor where a sequence was expected, and so on.
    Kind {
        /// What was produced (`a tensor`, `a sequence`, `an optional`).
        got: &'static str,
        /// What the reference is.
        want: &'static str,
    },
    /// Element types differ.
    DType {
        /// Produced.
        got: DType,
        /// Reference.
        want: DType,
    },
    /// Shapes differ.
    Shape {
        /// Produced.
        got: Vec<usize>,
        /// Reference.
        want: Vec<usize>,
    },
    /// Sequences of different lengths.
    Length {
        /// Produced.
        got: usize,
        /// Reference.
        want: usize,
    },
    /// One optional is empty and the other is not.
    Presence {
        /// Whether the produced optional holds a value.
        got: bool,
        /// Whether the reference holds one.
        want: bool,
    },
    /// Elements differ; this is the worst one.
    Element(Box<ElementMismatch>),
    /// An element lies outside the range a random op may produce.
    OutOfRange(Box<RangeMismatch>),
    /// A tensor's data could not be read (an internal inconsistency, not a numeric failure).
    Unreadable(String),
}

/// The first element of a random op's output outside the values the op may produce.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeMismatch {
    /// Index into the flattened tensor.
    pub flat: usize,
    /// Index per dimension.
    pub index: Vec<usize>,
    /// The produced value.
    pub got: String,
    /// The allowed values: `[low, high]`, `{0, 1}`, `[0, classes)` or `finite values`.
    pub expected: String,
    /// How many elements are outside.
    pub failing: usize,
    /// How many elements there are.
    pub total: usize,
}

/// The worst element of a tensor comparison: the one whose difference exceeds its allowance
/// the most. Values are formatted for their element type.
#[derive(Debug, Clone, PartialEq)]
pub struct ElementMismatch {
    /// Index into the flattened tensor.
    pub flat: usize,
    /// Index per dimension.
    pub index: Vec<usize>,
    /// The produced value.
    pub got: String,
    /// The reference value.
    pub want: String,
    /// `|got − want|` for numbers (NaN when one side is NaN); `None` for strings and booleans.
    pub diff: Option<f64>,
    /// The allowance `atol + rtol·|want|` for finite floats; `None` where equality is required.
    pub allowed: Option<f64>,
    /// How many elements fail.
    pub failing: usize,
    /// How many elements there are.
    pub total: usize,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.location.is_empty() {
            write!(f, "{} ", self.location)?;
        }
        write!(f, "{}", self.kind)
    }
}

impl fmt::Display for MismatchKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MismatchKind::Kind { got, want } => write!(f, "kind: got {got}, want {want}"),
            MismatchKind::DType { got, want } => write!(f, "element type: got {got}, want {want}"),
            MismatchKind::Shape { got, want } => write!(f, "shape: got {got:?}, want {want:?}"),
            MismatchKind::Length { got, want } => write!(f, "sequence length: got {got}, want {want}"),
            MismatchKind::Presence { got, want } => {
                let says = |p: &bool| if *p { "a value" } else { "empty" };
                write!(f, "optional: got {}, want {}", says(got), says(want))
            }
            MismatchKind::Element(e) => write!(f, "{e}"),
            MismatchKind::OutOfRange(r) => write!(f, "{r}"),
            MismatchKind::Unreadable(m) => write!(f, "cannot read the data: {m}"),
        }
    }
}

impl fmt::Display for RangeMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "element {} (flat {}): got {}, outside {}",
            fmt_index(&self.index),
            self.flat,
            self.got,
            self.expected
        )?;
        if self.failing > 1 {
            write!(f, "; {} of {} elements outside", self.failing, self.total)?;
        }
        Ok(())
    }
}

impl fmt::Display for ElementMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "element {} (flat {}): got {}, want {}", fmt_index(&self.index), self.flat, self.got, self.want)?;
        match (self.diff, self.allowed) {
            (Some(d), Some(a)) => write!(f, ", |diff| {} > {}", fmt_num(d), fmt_allowance(a))?,
            (Some(d), None) if d.is_finite() => write!(f, ", |diff| {} (must be equal)", fmt_num(d))?,
            _ => f.write_str(" (must be equal)")?,
        }
        if self.failing > 1 {
            write!(f, "; {} of {} elements differ", self.failing, self.total)?;
        }
        Ok(())
    }
}

fn fmt_index(index: &[usize]) -> String {
    let parts: Vec<String> = index.iter().map(|i| i.to_string()).collect();
    format!("[{}]", parts.join(","))
}

/// A difference, short: plain notation in the usual range, otherwise scientific.
fn fmt_num(x: f64) -> String {
    if x == 0.0 || (1e-3..1e7).contains(&x.abs()) {
        // Through f32: differences are diagnostics, seven digits are plenty and read better.
        format!("{}", x as f32)
    } else {
        trim_exp(&format!("{x:.4e}"))
    }
}

/// An allowance, three significant digits (`1.25e-3`).
fn fmt_allowance(x: f64) -> String {
    trim_exp(&format!("{x:.2e}"))
}

fn trim_exp(s: &str) -> String {
    match s.split_once('e') {
        Some((m, e)) if m.contains('.') => format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.')),
        _ => s.to_owned(),
    }
}

pub(crate) use vinort_ir::tensor::unravel;

fn at(location: &str, kind: MismatchKind) -> Mismatch {
    Mismatch { location: location.to_owned(), kind }
}

fn join(location: &str, inner: &str) -> String {
    if location.is_empty() { inner.to_owned() } else { format!("{location} {inner}") }
}

/// Compares a produced value with its reference.
///
/// Kinds must match; tensors must have the same element type and shape, then every element is
/// checked and the worst one (largest excess over its allowance) is reported. Sequences
/// compare length then items; optionals compare presence then content.
///
/// Floats (f16, bf16, f32, f64, and complex parts) follow [`Tolerance`]. Integers are compared
/// in their own width, so 2⁵³+1 ≠ 2⁵³ for int64, and may differ by `atol` rounded down to whole
/// steps, `rtol` ignored: exact under the default tolerance; a quantized (uint8/int8) output
/// whose case allows `atol=1` may land one quantization step off, as a rounding tie can. The 8-bit, 6-bit and 4-bit float
/// formats are compared by their stored bytes, exactly: vinort keeps them undecoded, and a
/// bit-exact match is what their reference outputs (produced by casts) call for.
pub fn compare(got: &Value, want: &Value, tol: Tolerance) -> Result<(), Mismatch> {
    compare_in("", got, want, Some(tol))
}

/// Compares only the structure of two values: kinds, sequence lengths, optional presence,
/// element types and shapes — not element values. Used for outputs of random ops.
pub fn compare_shape_and_dtype(got: &Value, want: &Value) -> Result<(), Mismatch> {
    compare_in("", got, want, None)
}

fn compare_in(location: &str, got: &Value, want: &Value, tol: Option<Tolerance>) -> Result<(), Mismatch> {
    match (got, want) {
        (Value::Tensor(g), Value::Tensor(w)) => {
            compare_tensor_meta(g, w).map_err(|k| at(location, k))?;
            match tol {
                Some(tol) => compare_tensor_data(g, w, tol).map_err(|k| at(location, k)),
                None => Ok(()),
            }
        }
        (Value::Sequence(g), Value::Sequence(w)) => {
            if g.dtype != w.dtype {
                return Err(at(location, MismatchKind::DType { got: g.dtype, want: w.dtype }));
            }
            if g.items.len() != w.items.len() {
                return Err(at(location, MismatchKind::Length { got: g.items.len(), want: w.items.len() }));
            }
            for (i, (gi, wi)) in g.items.iter().zip(&w.items).enumerate() {
                let loc = join(location, &format!("item {i}"));
                compare_in(&loc, &Value::Tensor(gi.clone()), &Value::Tensor(wi.clone()), tol)?;
            }
            Ok(())
        }
        (Value::Optional(g, _), Value::Optional(w, _)) => match (g, w) {
            (None, None) => Ok(()),
            (Some(g), Some(w)) => compare_in(&join(location, "optional value"), g, w, tol),
            _ => Err(at(location, MismatchKind::Presence { got: g.is_some(), want: w.is_some() })),
        },
        _ => Err(at(location, MismatchKind::Kind { got: got.kind(), want: want.kind() })),
    }
}

fn compare_tensor_meta(got: &Tensor, want: &Tensor) -> Result<(), MismatchKind> {
    if got.dtype() != want.dtype() {
        return Err(MismatchKind::DType { got: got.dtype(), want: want.dtype() });
    }
    if got.shape() != want.shape() {
        return Err(MismatchKind::Shape { got: got.shape().to_vec(), want: want.shape().to_vec() });
    }
    Ok(())
}

/// The running worst element of one comparison.
struct Worst {
    shape: Vec<usize>,
    total: usize,
    failing: usize,
    worst: Option<(f64, ElementMismatch)>,
}

impl Worst {
    fn new(t: &Tensor) -> Worst {
        Worst { shape: t.shape().to_vec(), total: t.len(), failing: 0, worst: None }
    }

    /// Records a failing element; `excess` orders failures (the first of equals is kept).
    fn fail(&mut self, flat: usize, excess: f64, make: impl FnOnce() -> (String, String, Option<f64>, Option<f64>)) {
        self.failing += 1;
        if self.worst.as_ref().is_some_and(|(e, _)| *e >= excess) {
            return;
        }
        let (got, want, diff, allowed) = make();
        let index = unravel(flat, &self.shape);
        let m = ElementMismatch { flat, index, got, want, diff, allowed, failing: 0, total: self.total };
        self.worst = Some((excess, m));
    }

    fn finish(self) -> Result<(), MismatchKind> {
        match self.worst {
            None => Ok(()),
            Some((_, mut m)) => {
                m.failing = self.failing;
                Err(MismatchKind::Element(Box::new(m)))
            }
        }
    }
}

fn unreadable(e: impl fmt::Display) -> MismatchKind {
    MismatchKind::Unreadable(e.to_string())
}

fn compare_tensor_data(got: &Tensor, want: &Tensor, tol: Tolerance) -> Result<(), MismatchKind> {
    use DType::*;
    // Typed access needs aligned storage; this is a no-op for tensors that already are.
    let (got, want) = (got.to_aligned(), want.to_aligned());
    let mut w = Worst::new(&want);
    let dtype = want.dtype();
    match dtype {
        F32 | F64 | F16 | BF16 => {
            let g = got.to_f64_vec().map_err(unreadable)?;
            let r = want.to_f64_vec().map_err(unreadable)?;
            let show = |v: f64| if dtype == F64 { format!("{v}") } else { format!("{}", v as f32) };
            for (i, (a, b)) in g.iter().zip(&r).enumerate() {
                check_float(&mut w, i, *a, *b, tol, &show, "");
            }
        }
        Complex64 | Complex128 => {
            let g = complex_parts(&got);
            let r = complex_parts(&want);
            let show = |v: f64| if dtype == Complex128 { format!("{v}") } else { format!("{}", v as f32) };
            for (k, (a, b)) in g.iter().zip(&r).enumerate() {
                check_float(&mut w, k / 2, *a, *b, tol, &show, if k % 2 == 0 { " (real)" } else { " (imag)" });
            }
        }
        String => {
            let g = got.as_strings().map_err(unreadable)?;
            let r = want.as_strings().map_err(unreadable)?;
            for (i, (a, b)) in g.iter().zip(r).enumerate() {
                if a != b {
                    w.fail(i, 1.0, || (format!("{a:?}"), format!("{b:?}"), None, None));
                }
            }
        }
        Bool => {
            let g = got.as_slice::<bool>().map_err(unreadable)?;
            let r = want.as_slice::<bool>().map_err(unreadable)?;
            for (i, (a, b)) in g.iter().zip(r).enumerate() {
                if a != b {
                    w.fail(i, 1.0, || (a.to_string(), b.to_string(), None, None));
                }
            }
        }
        U8 | I8 | U16 | I16 | I32 | I64 | U32 | U64 | U4 | I4 | U2 | I2 => {
            let g = ints(&got).map_err(unreadable)?;
            let r = ints(&want).map_err(unreadable)?;
            // Whole steps only: rtol would loosen large int64 values (an index, a size).
            let steps = tol.atol.floor() as u128;
            let allowed = (steps > 0).then_some(steps as f64);
            for (i, (a, b)) in g.iter().zip(&r).enumerate() {
                let d = a.abs_diff(*b);
                if d > steps {
                    w.fail(i, d as f64, || (a.to_string(), b.to_string(), Some(d as f64), allowed));
                }
            }
        }
        F8E4M3FN | F8E4M3FNUZ | F8E5M2 | F8E5M2FNUZ | F8E8M0 | F4E2M1 | F6E2M3 | F6E3M2 => {
            for (i, (a, b)) in got.as_bytes().iter().zip(want.as_bytes()).enumerate() {
                if a != b {
                    w.fail(i, 1.0, || (format!("0x{a:02x}"), format!("0x{b:02x}"), None, None));
                }
            }
        }
    }
    w.finish()
}

fn check_float(w: &mut Worst, i: usize, a: f64, b: f64, tol: Tolerance, show: &dyn Fn(f64) -> String, part: &str) {
    let shown = || (format!("{}{part}", show(a)), format!("{}{part}", show(b)));
    if a.is_nan() || b.is_nan() || a.is_infinite() || b.is_infinite() {
        // NaN matches NaN; an infinity matches only itself.
        let same = (a.is_nan() && b.is_nan()) || a == b;
        if !same {
            w.fail(i, f64::INFINITY, || {
                let (g, r) = shown();
                (g, r, Some((a - b).abs()), None)
            });
        }
        return;
    }
    let diff = (a - b).abs();
    let allowed = tol.allowed(b);
    if diff > allowed {
        w.fail(i, diff - allowed, || {
            let (g, r) = shown();
            (g, r, Some(diff), Some(allowed))
        });
    }
}

/// Real and imaginary parts, interleaved, read from native-endian bytes (no alignment needed).
fn complex_parts(t: &Tensor) -> Vec<f64> {
    let b = t.as_bytes();
    if t.dtype() == DType::Complex64 {
        b.chunks_exact(4).map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]) as f64).collect()
    } else {
        b.chunks_exact(8).map(|c| f64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect()
    }
}

/// Integer elements widened to i128, which holds every i64 and u64 exactly.
fn ints(t: &Tensor) -> vinort_ir::Result<Vec<i128>> {
    use DType::*;
    fn wide<T: vinort_ir::Elem + Into<i128>>(t: &Tensor) -> vinort_ir::Result<Vec<i128>> {
        Ok(t.as_slice::<T>()?.iter().map(|v| (*v).into()).collect())
    }
    match t.dtype() {
        I64 => wide::<i64>(t),
        U64 => wide::<u64>(t),
        I32 => wide::<i32>(t),
        U32 => wide::<u32>(t),
        I16 => wide::<i16>(t),
        U16 => wide::<u16>(t),
        I8 | I4 | I2 => wide::<i8>(t),
        U8 | U4 | U2 => wide::<u8>(t),
        other => Err(vinort_ir::Error::invalid(format!("{other} is not an integer type"))),
    }
}
