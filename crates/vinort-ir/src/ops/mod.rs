//! One home per op: what vinort knows about an ONNX operator independent of who runs it.
//!
//! Every op is one [`OpSpec`] line in [`table`]: domain, name, the opsets it exists in, its
//! shape/type rule (a pure function in [`crate::infer`]) and the [`Traits`] the partitioner
//! and graph optimizer read (cost class, elementwise, shape plumbing, commutative). Providers
//! key their own knowledge to the same `(domain, op, opset)`: the Cpu provider registers a
//! kernel factory per op and takes the opset range from here; the OpenVINO provider's
//! refusal rules name the op. Nothing else keeps a list of op names.
//!
//! Adding an op: one line in [`table`] (`op("Relu", 1, Some(rules::same_as_first), ELEMENTWISE)`),
//! then its kernel in the provider crate. Geometry several ops share (conv and pool windows)
//! lives in [`window`], parsed once and used by inference, the Cpu kernels and OpenVINO's
//! semantic rules alike.
//!
//! ```
//! use vinort_ir::ops::{self, Traits};
//! let relu = ops::spec("", "Relu", 14).expect("Relu is an ONNX op");
//! assert!(relu.traits.contains(Traits::ELEMENTWISE));
//! assert!(ops::spec("", "Conv", 22).is_some_and(|s| s.traits.contains(Traits::HEAVY)));
//! assert!(ops::spec("", "Upsample", 11).is_none()); // deprecated after opset 10
//! ```

mod table;
pub mod window;

use crate::error::{Error, Result};

/// The effective `(start, len)` of one sliced axis of extent `dim`, clamped as the
/// [Slice](https://onnx.ai/onnx/operators/onnx__Slice.html) spec says: starts to `[0, dim]`
/// (`[0, dim-1]` stepping backwards), ends to `[0, dim]` (`[-1, dim-1]`). Shape inference and
/// the Cpu kernel both use it.
pub fn slice_range(start: i64, end: i64, step: i64, dim: usize) -> Result<(usize, usize)> {
    if step == 0 {
        return Err(Error::invalid("Slice steps must not be 0"));
    }
    let d = dim as i128;
    let (start, end, step) = (start as i128, end as i128, step as i128);
    let start = if start < 0 { start + d } else { start };
    let end = if end < 0 { end + d } else { end };
    let (s, n) = if step > 0 {
        let (s, e) = (start.clamp(0, d), end.clamp(0, d));
        (s, if e > s { (e - s + step - 1) / step } else { 0 })
    } else {
        if dim == 0 {
            return Ok((0, 0));
        }
        let (s, e) = (start.clamp(0, d - 1), end.clamp(-1, d - 1));
        (s, if s > e { (s - e - step - 1) / -step } else { 0 })
    };
    Ok((s as usize, n as usize))
}

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::graph::Node;
use crate::infer::Rule;

/// Highest opset of the default domain vinort knows (ONNX 1.23).
pub const MAX_OPSET: i64 = 28;

/// Properties of an op the partitioner and the graph optimizer rely on, as a small bit set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Traits(u16);

impl Traits {
    /// No traits.
    pub const NONE: Traits = Traits(0);
    /// Work that dwarfs a partition boundary's cost (convolution, matrix product, recurrence,
    /// attention, control flow, Resize, NMS, RoiAlign): a partition holding one is always
    /// worth its boundaries (see the cost rule in the facade's partitioner).
    pub const HEAVY: Traits = Traits(1);
    /// Output element `i` depends only on input elements at `i` (after broadcasting).
    pub const ELEMENTWISE: Traits = Traits(1 << 1);
    /// Moves, reinterprets or describes data without arithmetic (Shape, Reshape, Cast...).
    pub const PLUMBING: Traits = Traits(1 << 2);
    /// The first two inputs may be swapped.
    pub const COMMUTATIVE: Traits = Traits(1 << 3);

    /// Both sets together (usable in constants).
    pub const fn with(self, other: Traits) -> Traits {
        Traits(self.0 | other.0)
    }

    /// True when every trait of `other` is in `self`.
    pub const fn contains(self, other: Traits) -> bool {
        self.0 & other.0 == other.0
    }
}

/// Everything provider-independent about one op.
#[derive(Clone, Copy, Debug)]
pub struct OpSpec {
    /// Domain: `""` for the default ONNX domain, `ai.onnx.ml`, `com.microsoft`...
    pub domain: &'static str,
    /// Op type as nodes name it.
    pub name: &'static str,
    /// First opset of `domain` that has the op.
    pub since: i64,
    /// Last opset that has it (inclusive); the domain's newest for ops still current.
    pub until: i64,
    /// Shape/type rule, when vinort has one.
    pub infer: Option<Rule>,
    /// Cost class and structural traits.
    pub traits: Traits,
}

impl OpSpec {
    /// The opsets this op exists in.
    pub fn opsets(&self) -> std::ops::RangeInclusive<i64> {
        self.since..=self.until
    }

    /// Same op, last valid at opset `last` (deprecated or removed after it).
    pub(crate) const fn until(mut self, last: i64) -> OpSpec {
        self.until = last;
        self
    }
}

/// The newest opset vinort knows for a domain.
pub const fn max_opset(domain: &str) -> i64 {
    match domain.as_bytes() {
        b"ai.onnx.ml" => 5,
        b"ai.onnx.preview" | b"ai.onnx.preview.training" | b"com.microsoft" => 1,
        _ => MAX_OPSET,
    }
}

/// `ai.onnx` is another name of the default domain.
fn canonical(domain: &str) -> &str {
    if domain == "ai.onnx" { "" } else { domain }
}

/// Domain -> op -> spec, built once from the table.
type Index = HashMap<&'static str, HashMap<&'static str, OpSpec>>;

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut ix = Index::new();
        for s in table::SPECS {
            ix.entry(s.domain).or_default().insert(s.name, *s);
        }
        ix
    })
}

/// The spec of `(domain, op)` whatever the opset.
pub fn find(domain: &str, op: &str) -> Option<&'static OpSpec> {
    index().get(canonical(domain))?.get(op)
}

/// The spec of `(domain, op)` when the op exists at `opset`.
pub fn spec(domain: &str, op: &str, opset: i64) -> Option<&'static OpSpec> {
    find(domain, op).filter(|s| s.opsets().contains(&opset))
}

/// The spec of a node's op at the node's opset.
pub fn spec_of(node: &Node) -> Option<&'static OpSpec> {
    spec(&node.domain, &node.op_type, node.opset)
}

/// True when the node's op has all of `traits`.
pub fn has_traits(node: &Node, traits: Traits) -> bool {
    spec_of(node).is_some_and(|s| s.traits.contains(traits))
}

/// Every op vinort knows.
pub fn all() -> impl Iterator<Item = &'static OpSpec> {
    table::SPECS.iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_is_listed_once() {
        let mut seen = std::collections::HashSet::new();
        for s in all() {
            assert!(seen.insert((s.domain, s.name)), "{}::{} is listed twice", s.domain, s.name);
            assert!(s.since <= s.until, "{}::{} has an empty opset range", s.domain, s.name);
        }
    }

    #[test]
    fn opset_ranges_follow_onnx() {
        // Versions from the ONNX operator changelog.
        assert_eq!(spec("", "Gelu", 20).map(|s| s.since), Some(20));
        assert!(spec("", "Gelu", 19).is_none());
        assert!(spec("ai.onnx", "Mod", 10).is_some());
        assert!(spec("", "Scatter", 10).is_some() && spec("", "Scatter", 11).is_none());
        assert!(spec("ai.onnx.ml", "LabelEncoder", 4).is_some());
        assert!(find("com.example", "Relu").is_none());
    }

    #[test]
    fn traits_are_sets() {
        let t = Traits::ELEMENTWISE.with(Traits::COMMUTATIVE);
        assert!(t.contains(Traits::ELEMENTWISE) && t.contains(Traits::COMMUTATIVE));
        assert!(!t.contains(Traits::HEAVY));
        assert!(t.contains(Traits::NONE));
        let add = find("", "Add").map(|s| s.traits);
        assert_eq!(add, Some(t));
    }
}
