//! The kernel interface and registry of the Cpu provider.

use std::collections::HashMap;
use std::ops::RangeInclusive;
use vinort_ir::Values;

use vinort_ir::{Error, Node, Result, RunContext, Tensor, Value, ValueType};

/// A kernel compiled for one node: attributes parsed, constants captured.
pub trait Kernel: Send + Sync {
    /// Computes the outputs from the inputs (`None` for omitted optional inputs). Inputs are
    /// the node's inputs followed by its implicit (outer-scope) inputs.
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values>;

    /// True when the kernel made its own form of constant input `i` when it was built
    /// (packed, transposed, widened) and at run reads only that input's shape and type, or
    /// reads its data through [`Tensor::to_aligned`] on a path that did not use its own form.
    /// The plan then keeps that constant as the model file maps it instead of an aligned copy,
    /// and the session's pages of the file can be released: one resident copy of the weight.
    fn holds_input(&self, _i: usize) -> bool {
        false
    }
}

/// What a kernel factory knows about its node at compile time.
pub struct NodeInfo<'a> {
    /// The node.
    pub node: &'a Node,
    /// Types of its inputs as far as inference knows them (`Unknown` for omitted ones).
    pub inputs: Vec<ValueType>,
    /// Values of inputs known before running (initializers, Constant outputs).
    pub consts: Vec<Option<Tensor>>,
    /// Types of its outputs as far as inference knows them.
    pub outputs: Vec<ValueType>,
    /// What the node's graph attributes (If branches, Loop and Scan bodies) are compiled with.
    pub scope: BodyScope,
}

/// What a node with graph attributes compiles its bodies with: the optimizer level of the
/// partition it is in, and the outer values the bodies read that are known before running
/// (a body's weights are often Constant nodes of the enclosing graph, sliced and concatenated
/// there; known here, the body folds that work away and its kernels pack their weights once).
#[derive(Clone, Debug)]
pub struct BodyScope {
    /// How much the optimizer rewrites the bodies.
    pub level: crate::optimize::OptLevel,
    /// For each of the node's implicit inputs, in order, its value when known before running.
    pub outer_consts: Vec<Option<Tensor>>,
}

impl Default for BodyScope {
    /// Bodies as written, nothing known of the outer scope (kernels built outside a partition).
    fn default() -> BodyScope {
        BodyScope { level: crate::optimize::OptLevel::Disabled, outer_consts: vec![] }
    }
}

impl<'a> NodeInfo<'a> {
    /// A node with nothing known of its values (kernels built outside a partition).
    pub fn bare(node: &'a Node) -> NodeInfo<'a> {
        NodeInfo {
            node,
            inputs: vec![],
            consts: vec![],
            outputs: vec![ValueType::Unknown; node.outputs.len()],
            scope: BodyScope::default(),
        }
    }

    /// Constant value of input `i`, if known at compile time.
    pub fn const_input(&self, i: usize) -> Option<&Tensor> {
        self.consts.get(i)?.as_ref()
    }

    /// Element type of input `i`, if known.
    pub fn input_dtype(&self, i: usize) -> Option<vinort_ir::DType> {
        self.inputs.get(i)?.tensor_dtype()
    }
}

/// Builds a kernel for a node, or refuses it with [`Error::Unsupported`] saying why.
pub type Factory = fn(&NodeInfo<'_>) -> Result<Box<dyn Kernel>>;

/// Factories of one `(domain, op)`, each for a range of opsets.
type Versions = Vec<(RangeInclusive<i64>, Factory)>;

/// Maps `(domain, op_type, opset)` to kernel factories.
#[derive(Default)]
pub struct Registry {
    map: HashMap<(&'static str, &'static str), Versions>,
    /// Ops registered with [`Registry::op`] that have no spec (a bug the registry test reports).
    unspecified: Vec<(&'static str, &'static str)>,
}

impl Registry {
    /// Registers a factory for every opset the op exists in, as its spec in
    /// [`vinort_ir::ops`] says: the usual way, so an op's opsets are written down once. An op
    /// with no spec is not registered (and the registry test fails).
    pub fn op(&mut self, domain: &'static str, op: &'static str, f: Factory) {
        match vinort_ir::ops::find(domain, op) {
            Some(spec) => self.add(domain, op, spec.opsets(), f),
            None => self.unspecified.push((domain, op)),
        }
    }

    /// Registers a factory for an op of a domain ("" is the default ONNX domain) over a range
    /// of opset versions, for ops whose kernels differ between opsets.
    pub fn add(&mut self, domain: &'static str, op: &'static str, opsets: RangeInclusive<i64>, f: Factory) {
        self.map.entry((domain, op)).or_default().push((opsets, f));
    }

    /// The factory for a node, or the reason there is none.
    pub fn find(&self, node: &Node) -> std::result::Result<Factory, String> {
        let domain = if node.domain == "ai.onnx" { "" } else { node.domain.as_str() };
        let Some(entries) = self.map.get(&(domain, node.op_type.as_str())) else {
            return Err(format!("no Cpu kernel for {}", node.qualified_op()));
        };
        entries.iter().find(|(r, _)| r.contains(&node.opset)).map(|(_, f)| *f).ok_or_else(|| {
            let ranges: Vec<String> = entries.iter().map(|(r, _)| format!("{}..={}", r.start(), r.end())).collect();
            format!("Cpu kernel for {} covers opsets {}, not {}", node.qualified_op(), ranges.join(", "), node.opset)
        })
    }

    /// Every registered `(domain, op)`.
    pub fn ops(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        self.map.keys().copied()
    }
}

/// Input `i` as a tensor; an error when it is missing or not a tensor.
pub fn tensor_in<'a>(inputs: &[Option<&'a Value>], i: usize) -> Result<&'a Tensor> {
    match inputs.get(i).copied().flatten() {
        Some(v) => v.as_tensor(),
        None => Err(Error::invalid(format!("input {i} is required but missing"))),
    }
}

/// Optional input `i` as a tensor (None when omitted or past the end).
pub fn opt_tensor_in<'a>(inputs: &[Option<&'a Value>], i: usize) -> Result<Option<&'a Tensor>> {
    inputs.get(i).copied().flatten().map(Value::as_tensor).transpose()
}

/// Inputs `0..N` as tensors, all required: [`tensor_in`] for each, in order, so the first
/// missing one is the error.
pub fn tensors_in<'a, const N: usize>(inputs: &[Option<&'a Value>]) -> Result<[&'a Tensor; N]> {
    let mut out = [None; N];
    for (i, t) in out.iter_mut().enumerate() {
        *t = Some(tensor_in(inputs, i)?);
    }
    Ok(out.map(|t| t.expect("every input was fetched above")))
}

/// Optional inputs `from..from + N` as tensors: [`opt_tensor_in`] for each, in order.
pub fn opt_tensors_in<'a, const N: usize>(
    inputs: &[Option<&'a Value>],
    from: usize,
) -> Result<[Option<&'a Tensor>; N]> {
    let mut out = [None; N];
    for (i, t) in out.iter_mut().enumerate() {
        *t = opt_tensor_in(inputs, from + i)?;
    }
    Ok(out)
}

/// Normalises a possibly negative axis against a rank.
pub fn norm_axis(axis: i64, rank: usize) -> Result<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return Err(Error::invalid(format!("axis {axis} is out of range for rank {rank}")));
    }
    Ok(if axis < 0 { (axis + r) as usize } else { axis as usize })
}

/// `i` as an index into `0..len`; `None` when it is negative or `len` or more (the caller says
/// what was out of range).
pub fn index_below(i: i64, len: usize) -> Option<usize> {
    usize::try_from(i).ok().filter(|i| *i < len)
}

/// Wraps a closure as a kernel, for ops whose attributes need no parsing.
pub struct FnKernel<F>(pub F);

impl<F> Kernel for FnKernel<F>
where
    F: Fn(&[Option<&Value>]) -> Result<Values> + Send + Sync,
{
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        (self.0)(inputs)
    }
}

/// Highest opset of the default domain vinort knows (ONNX 1.23).
pub use vinort_ir::ops::MAX_OPSET;

/// THE dtype dispatch of the Cpu kernels: runs `$body` with `$T` bound to the Rust type of an
/// element type; any other type goes to the `$other => $fallback` arm. The bound types implement
/// [`crate::numeric::Numeric`]. Four sets:
///
/// - `with_numeric!(dt, |T| body, other => fallback)`: every numeric type (floats including
///   f16/bf16, and 8- to 64-bit integers);
/// - `with_numeric!(float dt, ...)`: f32, f64, f16, bf16 ([`crate::numeric::Float`]);
/// - `with_numeric!(int dt, ...)`: the eight integer types ([`crate::numeric::Int`]);
/// - `with_numeric!(compute dt, ...)`: the type a float kernel computes in: f32 for f32, f16
///   and bf16 (the body sees tensors widened by [`crate::numeric::widen`]), f64 for f64.
///
/// One macro with arms, not one macro per family, so a new element type is added in one place.
macro_rules! with_numeric {
    (float $dtype:expr, |$T:ident| $body:expr, $other:pat => $fallback:expr) => {
        $crate::kernel::with_numeric!(@match $dtype, $T, $body, $other => $fallback;
            F32 => f32, F64 => f64, F16 => ::half::f16, BF16 => ::half::bf16)
    };
    (int $dtype:expr, |$T:ident| $body:expr, $other:pat => $fallback:expr) => {
        $crate::kernel::with_numeric!(@match $dtype, $T, $body, $other => $fallback;
            I8 => i8, I16 => i16, I32 => i32, I64 => i64, U8 => u8, U16 => u16, U32 => u32, U64 => u64)
    };
    (compute $dtype:expr, |$T:ident| $body:expr, $other:pat => $fallback:expr) => {
        $crate::kernel::with_numeric!(@match $dtype, $T, $body, $other => $fallback;
            F32 | F16 | BF16 => f32, F64 => f64)
    };
    (@match $dtype:expr, $T:ident, $body:expr, $other:pat => $fallback:expr;
        $($($D:ident)|+ => $ty:ty),+) => {
        match $dtype {
            $($(vinort_ir::DType::$D)|+ => {
                type $T = $ty;
                $body
            })+
            $other => $fallback,
        }
    };
    ($dtype:expr, |$T:ident| $body:expr, $other:pat => $fallback:expr) => {
        $crate::kernel::with_numeric!(@match $dtype, $T, $body, $other => $fallback;
            F32 => f32, F64 => f64, F16 => ::half::f16, BF16 => ::half::bf16,
            I8 => i8, I16 => i16, I32 => i32, I64 => i64, U8 => u8, U16 => u16, U32 => u32, U64 => u64)
    };
}
pub(crate) use with_numeric;

#[cfg(test)]
mod tests {
    /// One home per op: every kernel is registered for an op the op table knows, and only for
    /// opsets that op exists in.
    #[test]
    fn every_registration_matches_an_op_spec() {
        let registry = crate::kernels::registry();
        let mut wrong: Vec<String> =
            registry.unspecified.iter().map(|(d, o)| format!("{d}::{o} has no spec in vinort_ir::ops")).collect();
        for ((domain, op), versions) in &registry.map {
            let Some(spec) = vinort_ir::ops::find(domain, op) else {
                wrong.push(format!("{domain}::{op} has no spec in vinort_ir::ops"));
                continue;
            };
            for (range, _) in versions {
                if range.is_empty() || *range.start() < spec.since || *range.end() > spec.until {
                    wrong.push(format!("{domain}::{op} registered for {range:?}, spec says {:?}", spec.opsets()));
                }
            }
        }
        wrong.sort();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
