//! Shape and type inference: one pure rule per op, from input facts to output facts.
//!
//! Inference never fails a load: a rule that cannot decide returns `Unknown`, and the declared
//! type (if any) is kept. Where a rule decides, its answer wins over the declaration, because
//! real models declare wrong output shapes.
//!
//! Every op of [`crate::ops`] has a rule, and in ONNX every element type is known before run
//! time, so after loading every value of a model built from those ops has its element type
//! (`tests/infer_types.rs` checks this on ONNX's node-test models). Subgraphs are inferred
//! before the node that owns them, with the enclosing scope's types for their outer
//! references and the node's input types for body inputs the file leaves untyped, so
//! If/Loop/Scan/SequenceMap rules read their bodies' output types.
//!
//! Rules live by family: [`rules`] (tensor ops and the shared helpers), `plumbing` (data
//! movement: Reshape, Slice, Concat, Squeeze…), `quant`, `recurrent`,
//! `control` (subgraph ops, sequences, optionals), `generate` (random, windows, spectral),
//! `nn` (attention, losses, detection), `text` and `ml` (`ai.onnx.ml` and training ops).

pub(crate) mod contrib;
pub(crate) mod contrib_attention;
pub use contrib::fused_matmul_dims;
pub(crate) mod control;
pub(crate) mod data;
pub(crate) mod generate;
pub(crate) mod ml;
pub(crate) mod nn;
pub(crate) mod plumbing;
pub(crate) mod quant;
pub(crate) mod recurrent;
pub(crate) mod rules;
pub(crate) mod text;

use std::collections::HashMap;
use std::sync::Arc;

use crate::attr::Attr;
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::{Graph, Node, ValueId};
use crate::tensor::Tensor;

/// The highest rank inference derives from a run-time shape's length. ONNX sets none; real
/// models stay far below it, and larger declared lengths are hostile or broken.
pub const MAX_RANK: usize = 64;
use crate::value::{Dim, ValueType};

/// What a rule sees of a node's inputs.
pub struct InferCtx<'a> {
    /// The node.
    pub node: &'a Node,
    /// Known type of each input (`Unknown` for omitted ones).
    pub inputs: Vec<ValueType>,
    /// Constant value of each input, when known before running.
    pub consts: Vec<Option<Tensor>>,
}

impl InferCtx<'_> {
    /// Type of input `i` (`Unknown` past the end).
    pub fn ty(&self, i: usize) -> &ValueType {
        self.inputs.get(i).unwrap_or(&ValueType::Unknown)
    }
    /// Element type of input `i`.
    pub fn dtype(&self, i: usize) -> Option<DType> {
        self.ty(i).tensor_dtype()
    }
    /// Shape of input `i` when its rank is known.
    pub fn shape(&self, i: usize) -> Option<&[Dim]> {
        self.ty(i).tensor_shape()
    }
    /// Constant integer contents of input `i`.
    pub fn const_ints(&self, i: usize) -> Option<Vec<i64>> {
        self.consts.get(i)?.as_ref()?.to_i64_vec().ok()
    }
    /// The length of input `i` when it is 1-D with a fixed length: the rank of the shape a
    /// run-time shape tensor (Reshape's, Expand's) gives, or how many axes a run-time axes
    /// input names, even when its values are known only at run time.
    ///
    /// Every caller reads it as a rank (a run-time shape or axes list), so a length past
    /// [`MAX_RANK`] is unknown: a model's declared dims can be anything (a declared
    /// 4294967297 made a 100 GB shape).
    pub fn len_1d(&self, i: usize) -> Option<usize> {
        match self.shape(i)? {
            [d] => d.fixed().filter(|n| *n <= MAX_RANK),
            _ => None,
        }
    }
    /// True when input `i` is given.
    pub fn has(&self, i: usize) -> bool {
        self.node.inputs.get(i).is_some_and(Option::is_some)
    }
}

/// A shape rule: output types, in output order (fewer entries mean `Unknown` for the rest).
pub type Rule = fn(&InferCtx<'_>) -> Result<Vec<ValueType>>;

/// The rule for an op at an opset, if one is registered ([`crate::ops`] holds them).
pub fn rule_for(domain: &str, op_type: &str, opset: i64) -> Option<Rule> {
    crate::ops::spec(domain, op_type, opset)?.infer
}

/// The tensor a `Constant` node produces.
pub fn constant_node_value(n: &Node) -> Result<Tensor> {
    rules::constant_value(n)
}

/// True when a type's element types are all known: a tensor type, or a sequence, optional or
/// map of one. Shapes may still be open.
pub fn is_typed(t: &ValueType) -> bool {
    match t {
        ValueType::Tensor(..) => true,
        ValueType::Sequence(e) | ValueType::Optional(e) | ValueType::Map(_, e) => is_typed(e),
        ValueType::Unknown => false,
    }
}

/// Infers types through a graph in topological order, keeping declarations where no rule
/// decides. Also folds `Shape` of static shapes, so later rules see constant shape tensors.
pub fn infer_graph(g: &mut Graph) {
    infer_scoped(g, &HashMap::new());
}

/// Type names visible to a subgraph: the enclosing scopes' plus this graph's typed values.
type Scope = HashMap<String, ValueType>;

fn infer_scoped(g: &mut Graph, outer: &Scope) {
    for v in g.outer.clone() {
        let info = &mut g.values[v.index()];
        if info.ty == ValueType::Unknown
            && let Some(t) = outer.get(&info.name)
        {
            info.ty = t.clone();
        }
    }
    let mut folded: HashMap<ValueId, Tensor> = HashMap::new();
    for ix in g.order.clone() {
        if g.dag[ix].attrs.iter().any(|(_, a)| matches!(a, Attr::Graph(_) | Attr::Graphs(_))) {
            infer_subgraphs(g, ix, outer);
        }
        let node = &g.dag[ix];
        let Some(rule) = rule_for(&node.domain, &node.op_type, node.opset) else {
            continue;
        };
        let inputs = node
            .inputs
            .iter()
            .map(|v| v.map(|v| g.values[v.index()].ty.clone()).unwrap_or(ValueType::Unknown))
            .collect();
        let consts =
            node.inputs.iter().map(|v| v.and_then(|v| folded.get(&v).cloned().or_else(|| g.constant(v)))).collect();
        let ctx = InferCtx { node, inputs, consts };
        let out = match rule(&ctx) {
            Ok(o) => o,
            Err(e) => {
                tracing::debug!(node = %node.name, error = %e, "shape inference gave up");
                continue;
            }
        };
        if node.is("Shape")
            && let Some(s) = ctx.ty(0).static_shape()
        {
            let (start, end) = plumbing::shape_range(node, s.len()).unwrap_or((0, s.len()));
            let v: Vec<i64> = s[start..end].iter().map(|d| *d as i64).collect();
            if let (Some(Some(o)), Ok(t)) = (node.outputs.first(), Tensor::from_slice(&[v.len()], &v)) {
                folded.insert(*o, t);
            }
        }
        let outs = node.outputs.clone();
        for (o, ty) in outs.iter().zip(out) {
            let Some(o) = o else { continue };
            if ty == ValueType::Unknown {
                continue;
            }
            let declared = &g.values[o.index()].ty;
            if *declared != ValueType::Unknown && !compatible(declared, &ty) {
                tracing::debug!(value = %g.values[o.index()].name, %declared, inferred = %ty, "declared type disagrees with inference; using inference");
            }
            let merged = merge(declared, ty);
            g.set_type(*o, merged);
        }
    }
}

/// Infers the subgraphs of node `ix`, giving their outer references the types of this scope and
/// their untyped inputs the types the node feeds them.
fn infer_subgraphs(g: &mut Graph, ix: petgraph::graph::NodeIndex, outer: &Scope) {
    let mut scope = outer.clone();
    scope.extend(g.values.iter().filter(|v| v.ty != ValueType::Unknown).map(|v| (v.name.clone(), v.ty.clone())));
    let node = &g.dag[ix];
    let fed: Vec<ValueType> =
        node.inputs.iter().map(|v| v.map_or(ValueType::Unknown, |v| g.values[v.index()].ty.clone())).collect();
    let body_inputs = control::body_input_types(node, &fed);
    let node = &mut g.dag[ix];
    for (name, attr) in &mut node.attrs {
        let subs: Vec<&mut Arc<Graph>> = match attr {
            Attr::Graph(sub) => vec![sub],
            Attr::Graphs(subs) => subs.iter_mut().collect(),
            _ => continue,
        };
        for sub in subs {
            // Freshly loaded graphs are not shared, so this does not copy.
            let sub = Arc::make_mut(sub);
            if let Some(types) = body_inputs.as_ref().filter(|_| name == "body") {
                for (v, t) in sub.inputs.clone().into_iter().zip(types) {
                    if sub.values[v.index()].ty == ValueType::Unknown {
                        sub.values[v.index()].ty = t.clone();
                    }
                }
            }
            infer_scoped(sub, &scope);
        }
    }
}

/// Inferred facts refined by declared ones where inference left a dim open.
fn merge(declared: &ValueType, inferred: ValueType) -> ValueType {
    match (declared, inferred) {
        (ValueType::Tensor(dd, Some(ds)), ValueType::Tensor(id, Some(is))) if *dd == id && ds.len() == is.len() => {
            ValueType::Tensor(
                id,
                Some(is.into_iter().zip(ds).map(|(i, d)| if i == Dim::Unknown { d.clone() } else { i }).collect()),
            )
        }
        (ValueType::Tensor(dd, Some(ds)), ValueType::Tensor(id, None)) if *dd == id => {
            ValueType::Tensor(id, Some(ds.clone()))
        }
        (_, i) => i,
    }
}

fn compatible(a: &ValueType, b: &ValueType) -> bool {
    match (a, b) {
        (ValueType::Tensor(da, sa), ValueType::Tensor(db, sb)) => {
            da == db && Dim::shapes_agree(sa.as_deref(), sb.as_deref())
        }
        _ => true,
    }
}
