//! The graph IR: ONNX nodes and values on a petgraph DAG.
//!
//! The IR mirrors ONNX: every node, attribute and opset import is kept, whether or not any
//! provider can run it. Edges go from a value's producer to each of its consumers, so
//! petgraph's algorithms (topological order, reachability) apply directly.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use petgraph::graph::{DiGraph, NodeIndex};

use crate::attr::{Attr, FromAttr};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::value::{Dim, ValueType};

/// Index of a value within one [`Graph`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

impl ValueId {
    /// As a vector index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Where a value comes from.
#[derive(Clone, Debug)]
pub enum ValueSource {
    /// A graph input fed at run time (position in [`Graph::inputs`]).
    Input(usize),
    /// A constant initializer.
    Initializer(Tensor),
    /// Output `port` of a node.
    Node {
        /// The producer.
        node: NodeIndex,
        /// Its output position.
        port: usize,
    },
    /// A value of an enclosing graph, referenced by name from a subgraph.
    OuterScope,
}

/// A named value: an edge of the ONNX graph.
#[derive(Clone, Debug)]
pub struct ValueInfo {
    /// The ONNX name.
    pub name: String,
    /// The type: declared by the model, then refined by shape inference.
    pub ty: ValueType,
    /// Its origin.
    pub source: ValueSource,
}

/// One ONNX node.
#[derive(Clone, Debug)]
pub struct Node {
    /// Node name (generated as `{op}_{index}` when the model leaves it empty).
    pub name: String,
    /// Op type (`Conv`).
    pub op_type: String,
    /// Domain; the default ONNX domain is the empty string.
    pub domain: String,
    /// Opset version of `domain` in force for this node.
    pub opset: i64,
    /// Inputs in order; `None` for an omitted optional input.
    pub inputs: Vec<Option<ValueId>>,
    /// Outputs in order; `None` for an omitted optional output.
    pub outputs: Vec<Option<ValueId>>,
    /// Values of enclosing scopes read by this node's subgraphs (like ORT's implicit inputs):
    /// they are dependencies of the node even though no input names them.
    pub implicit_inputs: Vec<ValueId>,
    /// Attributes by name, in model order.
    pub attrs: Vec<(String, Attr)>,
    /// The node as the file had it, so a partition can be handed to another ONNX consumer
    /// (OpenVINO) exactly as written. Weights inside it share the file's bytes.
    pub proto: Option<Arc<vinort_proto::onnx::NodeProto>>,
}

impl Node {
    /// `op` or `domain::op`, for messages.
    pub fn qualified_op(&self) -> String {
        if self.domain.is_empty() || self.domain == "ai.onnx" {
            self.op_type.clone()
        } else {
            format!("{}::{}", self.domain, self.op_type)
        }
    }

    /// True for an op of the default ONNX domain with this type.
    pub fn is(&self, op_type: &str) -> bool {
        (self.domain.is_empty() || self.domain == "ai.onnx") && self.op_type == op_type
    }

    /// The raw attribute.
    pub fn attr_raw(&self, name: &str) -> Option<&Attr> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, a)| a)
    }

    /// An optional attribute of type `T`; a present attribute of another kind is an error.
    pub fn attr<T: FromAttr>(&self, name: &str) -> Result<Option<T>> {
        match self.attr_raw(name) {
            None => Ok(None),
            Some(a) => T::from_attr(a)
                .map(Some)
                .ok_or_else(|| self.error(format!("attribute '{name}' must be {}, found {}", T::EXPECTED, a.kind()))),
        }
    }

    /// An attribute with a default.
    pub fn attr_or<T: FromAttr>(&self, name: &str, default: T) -> Result<T> {
        Ok(self.attr(name)?.unwrap_or(default))
    }

    /// A required attribute.
    pub fn req_attr<T: FromAttr>(&self, name: &str) -> Result<T> {
        self.attr(name)?.ok_or_else(|| self.error(format!("required attribute '{name}' ({}) is missing", T::EXPECTED)))
    }

    /// A string attribute naming one of `choices` (spelling, value; several spellings may mean
    /// one value, as Resize's `linear`/`bilinear`), `default` when absent (`None`: required).
    /// Any other spelling is an error naming the node, the attribute and what it accepts.
    pub fn choice_attr<T: Copy>(&self, name: &str, default: Option<&str>, choices: &[(&str, T)]) -> Result<T> {
        let given = match default {
            Some(d) => self.attr_or::<String>(name, d.to_owned())?,
            None => self.req_attr::<String>(name)?,
        };
        match choices.iter().find(|(spelling, _)| *spelling == given) {
            Some(&(_, v)) => Ok(v),
            None => {
                let accepted: Vec<&str> = choices.iter().map(|(s, _)| *s).collect();
                Err(self.error(format!("unknown {name} '{given}' (accepted: {})", accepted.join(", "))))
            }
        }
    }

    /// An error about this node.
    pub fn error(&self, message: impl Into<String>) -> Error {
        Error::Node { node: self.name.clone(), op: self.qualified_op(), message: message.into() }
    }

    /// The subgraphs held in attributes (If branches, Loop/Scan bodies).
    pub fn subgraphs(&self) -> impl Iterator<Item = (&str, &Arc<Graph>)> {
        self.attrs.iter().flat_map(|(n, a)| {
            let v: Vec<(&str, &Arc<Graph>)> = match a {
                Attr::Graph(g) => vec![(n.as_str(), g)],
                Attr::Graphs(gs) => gs.iter().map(|g| (n.as_str(), g)).collect(),
                _ => vec![],
            };
            v
        })
    }
}

/// A computation graph (the main graph or a subgraph).
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// Graph name.
    pub name: String,
    pub(crate) dag: DiGraph<Node, ValueId>,
    pub(crate) values: Vec<ValueInfo>,
    pub(crate) by_name: HashMap<String, ValueId>,
    pub(crate) inputs: Vec<ValueId>,
    pub(crate) outputs: Vec<ValueId>,
    pub(crate) outer: Vec<ValueId>,
    pub(crate) order: Vec<NodeIndex>,
    pub(crate) opsets: Arc<BTreeMap<String, i64>>,
    /// Overridable initializers: graph inputs that also have an initializer (IR >= 4). The
    /// value is a runtime input; the tensor is what a run that does not feed it uses.
    pub(crate) defaults: HashMap<ValueId, Tensor>,
}

impl Graph {
    /// The node at `ix`.
    pub fn node(&self, ix: NodeIndex) -> &Node {
        &self.dag[ix]
    }

    /// Nodes in a topological order (producers before consumers).
    pub fn topo_order(&self) -> &[NodeIndex] {
        &self.order
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.dag.node_count()
    }

    /// The value with this id.
    pub fn value(&self, v: ValueId) -> &ValueInfo {
        &self.values[v.index()]
    }

    /// All values.
    pub fn values(&self) -> impl Iterator<Item = (ValueId, &ValueInfo)> {
        self.values.iter().enumerate().map(|(i, v)| (ValueId(i as u32), v))
    }

    /// Looks a value up by name.
    pub fn value_id(&self, name: &str) -> Option<ValueId> {
        self.by_name.get(name).copied()
    }

    /// Runtime inputs, in declaration order (initializers excluded).
    pub fn inputs(&self) -> &[ValueId] {
        &self.inputs
    }

    /// The default of an overridable initializer (a graph input that also has an initializer,
    /// IR >= 4): feeding the input replaces it, not feeding it uses it.
    pub fn input_default(&self, v: ValueId) -> Option<&Tensor> {
        self.defaults.get(&v)
    }

    /// Outputs in declaration order.
    pub fn outputs(&self) -> &[ValueId] {
        &self.outputs
    }

    /// Values of enclosing scopes this graph reads.
    pub fn outer_refs(&self) -> &[ValueId] {
        &self.outer
    }

    /// Opset version per domain ("" is the default domain).
    pub fn opsets(&self) -> &BTreeMap<String, i64> {
        &self.opsets
    }

    /// The initializer tensor of a value, if it is one.
    pub fn initializer(&self, v: ValueId) -> Option<&Tensor> {
        match &self.values[v.index()].source {
            ValueSource::Initializer(t) => Some(t),
            _ => None,
        }
    }

    /// Initializers in value order.
    pub fn initializers(&self) -> impl Iterator<Item = (ValueId, &Tensor)> {
        self.values().filter_map(|(id, v)| match &v.source {
            ValueSource::Initializer(t) => Some((id, t)),
            _ => None,
        })
    }

    /// A value known before running: an initializer or the output of a `Constant` node.
    pub fn constant(&self, v: ValueId) -> Option<Tensor> {
        match &self.values[v.index()].source {
            ValueSource::Initializer(t) => Some(t.clone()),
            ValueSource::Node { node, .. } => {
                let n = &self.dag[*node];
                if n.is("Constant") { crate::infer::constant_node_value(n).ok() } else { None }
            }
            _ => None,
        }
    }

    /// The node producing a value, if a node does.
    pub fn producer(&self, v: ValueId) -> Option<NodeIndex> {
        match self.values[v.index()].source {
            ValueSource::Node { node, .. } => Some(node),
            _ => None,
        }
    }

    /// Nodes reading a value (directly; subgraph reads show as implicit inputs).
    pub fn consumers(&self, v: ValueId) -> Vec<NodeIndex> {
        self.order
            .iter()
            .copied()
            .filter(|n| {
                let node = &self.dag[*n];
                node.inputs.contains(&Some(v)) || node.implicit_inputs.contains(&v)
            })
            .collect()
    }

    /// The petgraph DAG (edges producer → consumer, weighted by the value).
    pub fn dag(&self) -> &DiGraph<Node, ValueId> {
        &self.dag
    }

    /// All node indices.
    pub fn node_indices(&self) -> impl Iterator<Item = NodeIndex> + '_ {
        self.dag.node_indices()
    }

    /// Fixes symbolic dims (`dim_param`s) of the graph inputs' declared shapes: every dim
    /// named `symbol` becomes `size`, for each `(symbol, size)`, as ONNX Runtime's free
    /// dimension overrides do; then types are inferred again so the sizes reach every value
    /// they decide. Returns each changed `(input, axis, symbol, size)`.
    pub fn fix_input_dims(&mut self, fixes: &[(&str, usize)]) -> Vec<(ValueId, usize, String, usize)> {
        let mut fixed = vec![];
        for &v in &self.inputs {
            let ValueType::Tensor(_, Some(dims)) = &mut self.values[v.index()].ty else { continue };
            for (axis, d) in dims.iter_mut().enumerate() {
                let Dim::Symbol(s) = d else { continue };
                if let Some(&(symbol, size)) = fixes.iter().find(|(symbol, _)| s == symbol) {
                    fixed.push((v, axis, symbol.to_owned(), size));
                    *d = Dim::Fixed(size);
                }
            }
        }
        if !fixed.is_empty() {
            crate::infer::infer_graph(self);
        }
        fixed
    }

    /// Sets a value's type (used by shape inference).
    pub(crate) fn set_type(&mut self, v: ValueId, ty: ValueType) {
        self.values[v.index()].ty = ty;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(attrs: Vec<(String, Attr)>) -> Node {
        Node {
            name: "r".into(),
            op_type: "Resize".into(),
            domain: String::new(),
            opset: 19,
            inputs: vec![],
            outputs: vec![],
            implicit_inputs: vec![],
            attrs,
            proto: None,
        }
    }

    const MODES: [(&str, u8); 3] = [("nearest", 0), ("linear", 1), ("bilinear", 1)];

    #[test]
    fn choice_attr_maps_spellings_defaults_and_names_what_is_wrong() {
        let mode = |v: &str| node(vec![("mode".into(), Attr::String(v.into()))]);
        assert_eq!(mode("bilinear").choice_attr("mode", Some("nearest"), &MODES).unwrap(), 1);
        assert_eq!(mode("nearest").choice_attr("mode", None, &MODES).unwrap(), 0);
        assert_eq!(node(vec![]).choice_attr("mode", Some("linear"), &MODES).unwrap(), 1);
        let e = mode("cubic").choice_attr("mode", Some("nearest"), &MODES).unwrap_err().to_string();
        assert!(
            e.contains("'r'") && e.contains("unknown mode 'cubic'") && e.contains("nearest, linear, bilinear"),
            "{e}"
        );
        let e = node(vec![]).choice_attr("mode", None, &MODES).unwrap_err().to_string();
        assert!(e.contains("required attribute 'mode'"), "{e}");
        let e = node(vec![("mode".into(), Attr::Int(1))]).choice_attr("mode", None, &MODES).unwrap_err().to_string();
        assert!(e.contains("must be"), "{e}");
    }
}
