//! `vinort partition --format json|dot|svg|html`: the session's partition plan as one document,
//! [`PlanDoc`] (the JSON of `docs/plan-format.md`), and the drawings made from it.
//!
//! Who runs what, and why a node was refused, come from the plan ([`vinort::PartitionPlan`]);
//! tensor types, shapes and edges come from the graph the session partitioned
//! ([`vinort::Session::model`]). Nodes are taken from that graph by index, never matched by
//! name: ONNX does not require unique node names, the loader names unnamed nodes `{op}_{k}`,
//! and inlining a model-local function adds nodes the file's graph does not have. Each node
//! says which of these its name is ([`NameSource`]). The Cpu provider's graph optimizer rewrites
//! its partitions only when it compiles them (fusions, folded constants, layouts): the plan, and
//! so this document, lists the nodes it was given, and its `details` say how many kernels they
//! became.

mod dot;
mod html;
mod layout;
mod style;
mod svg;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde::Serialize;
use vinort::ir::proto::onnx::ModelProto;
use vinort::ir::proto::prost::Message;
use vinort::ir::{Graph, NodeIndex, ValueId};
use vinort::{Dim, Session, ValueType};

pub use dot::to_dot;
pub use html::to_html;
pub use svg::to_svg;

/// The version of the JSON layout. Adding a field keeps it; removing or changing the meaning of
/// one bumps it.
pub const FORMAT_VERSION: u32 = 1;

/// The whole plan of one session, as `--format json` prints it.
#[derive(Debug, Serialize)]
pub struct PlanDoc {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// The model file as given on the command line.
    pub model: String,
    /// True when the first provider compiled the whole model at once.
    pub whole_model: bool,
    /// How the plan was made and why (`whole model: …` or `split: …`).
    pub path: String,
    /// Counts.
    pub summary: Summary,
    /// Providers skipped because they could not start, and other warnings.
    pub warnings: Vec<String>,
    /// The graph's inputs, in order (overridable initializers included).
    pub inputs: Vec<TensorDoc>,
    /// The graph's outputs, in order.
    pub outputs: Vec<TensorDoc>,
    /// Partitions in execution order.
    pub partitions: Vec<PartitionDoc>,
    /// Every refusal: one per node and provider that did not run it.
    pub refusals: Vec<RefusalDoc>,
    /// Every producer → consumer connection of the graph (initializers left out).
    pub edges: Vec<EdgeDoc>,
}

/// Counts over the plan.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Nodes in the graph the session partitioned.
    pub nodes: usize,
    /// Partitions.
    pub partitions: usize,
    /// Providers that own a partition, in the order they first appear.
    pub providers: Vec<String>,
    /// Nodes with at least one refusal.
    pub refused_nodes: usize,
    /// Distinct tensors that cross from one partition to another.
    pub boundary_tensors: usize,
}

/// A tensor (or other value) with its type as the session's graph knows it.
#[derive(Debug, Clone, Serialize)]
pub struct TensorDoc {
    /// The value's name.
    pub name: String,
    /// The whole type as text: `float[1,3,224,224]`, `int64[batch,?]`, `seq(float[3])`, `?`.
    #[serde(rename = "type")]
    pub ty: String,
    /// The element type's ONNX name (`float`, `int64`…) for a tensor, else null.
    pub dtype: Option<String>,
    /// Dims for a tensor of known rank, else null.
    pub shape: Option<Vec<DimDoc>>,
}

/// One dim: a number, a symbolic name, or null when nothing is known.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum DimDoc {
    /// A known extent.
    Fixed(usize),
    /// A named dim (`batch`).
    Symbol(String),
    /// Unknown: null.
    Unknown,
}

/// A partition.
#[derive(Debug, Serialize)]
pub struct PartitionDoc {
    /// Position in execution order, as `[i]` in the text plan.
    pub index: usize,
    /// The provider that runs it (`OpenVino(CPU)`, `Cpu`).
    pub provider: String,
    /// True when it is the whole graph with the graph's own inputs and outputs.
    pub whole_graph: bool,
    /// Its nodes, in the order the provider was given them.
    pub nodes: Vec<NodeDoc>,
    /// Nodes per op (`domain::Op` outside the default domain).
    pub op_counts: BTreeMap<String, usize>,
    /// Tensors entering it (initializers excluded).
    pub inputs: Vec<TensorDoc>,
    /// Tensors leaving it: read by another partition or graph outputs.
    pub outputs: Vec<TensorDoc>,
    /// The provider's own description of what it compiled, verbatim.
    pub details: String,
    /// The `KEY=value` pairs of `details` whose key is upper case (OpenVINO's effective
    /// properties), in order of their names.
    pub properties: BTreeMap<String, String>,
}

/// A node of the partitioned graph.
#[derive(Debug, Clone, Serialize)]
pub struct NodeDoc {
    /// Its index in the session's graph: unique in one document, used by `edges` and
    /// `refusals`.
    pub id: usize,
    /// Its name in the session's graph.
    pub name: String,
    /// Op type, `domain::Op` outside the default domain.
    pub op: String,
    /// Domain (`""` is the default ONNX domain).
    pub domain: String,
    /// The domain's opset in force.
    pub opset: i64,
    /// Where the name comes from.
    pub name_source: NameSource,
}

/// Where a node's name comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NameSource {
    /// The model file's graph has a node of this name.
    Model,
    /// The file left the node unnamed; the loader named it `{op}_{k}`.
    Generated,
    /// The node comes from inlining a model-local function: `{call}/{function}#{n}/{name}`.
    Function,
}

/// Why one provider did not run one node.
#[derive(Debug, Clone, Serialize)]
pub struct RefusalDoc {
    /// The node's `id`.
    pub node_id: usize,
    /// The node's name.
    pub node: String,
    /// Its op.
    pub op: String,
    /// The provider that refused it.
    pub provider: String,
    /// The rule's label when the reason starts with one (`semantics`, `slow path`, `rule`,
    /// `probe`, `cost rule`), else null.
    pub rule: Option<String>,
    /// The whole reason, verbatim.
    pub reason: String,
}

/// One connection: a value from its producer to one consumer.
#[derive(Debug, Clone, Serialize)]
pub struct EdgeDoc {
    /// The value.
    #[serde(flatten)]
    pub tensor: TensorDoc,
    /// The producing node's `id`, or null for a graph input.
    pub from: Option<usize>,
    /// The consuming node's `id`, or null when this edge is a graph output.
    pub to: Option<usize>,
    /// True when `from` and `to` are nodes of different partitions.
    pub crosses_partitions: bool,
    /// True when the consumer reads the value inside a subgraph (If/Loop/Scan body) rather than
    /// as an input.
    pub implicit: bool,
}

impl PlanDoc {
    /// The document of `session`, loaded from `model`.
    pub fn new(model: &Path, session: &Session) -> PlanDoc {
        let plan = session.plan();
        let g = &session.model().graph;
        let in_file = file_node_names(session);
        let node_doc = |ix: NodeIndex| {
            let n = g.node(ix);
            let unnamed = n.proto.as_ref().is_some_and(|p| p.name.as_deref().unwrap_or("").is_empty());
            let name_source = if unnamed {
                NameSource::Generated
            } else if in_file.as_ref().is_none_or(|names| names.contains(n.name.as_str())) {
                NameSource::Model
            } else {
                NameSource::Function
            };
            NodeDoc {
                id: ix.index(),
                name: n.name.clone(),
                op: n.qualified_op(),
                domain: n.domain.clone(),
                opset: n.opset,
                name_source,
            }
        };
        let mut part_of: HashMap<NodeIndex, usize> = HashMap::new();
        let mut providers: Vec<String> = vec![];
        let partitions: Vec<PartitionDoc> = plan
            .partitions
            .iter()
            .enumerate()
            .map(|(i, p)| {
                for n in &p.def.nodes {
                    part_of.insert(*n, i);
                }
                if !providers.contains(&p.provider) {
                    providers.push(p.provider.clone());
                }
                PartitionDoc {
                    index: i,
                    provider: p.provider.clone(),
                    whole_graph: p.def.whole_graph,
                    nodes: p.def.nodes.iter().map(|n| node_doc(*n)).collect(),
                    op_counts: p.ops.clone(),
                    inputs: p.def.inputs.iter().map(|v| tensor_doc(g, *v)).collect(),
                    outputs: p.def.outputs.iter().map(|v| tensor_doc(g, *v)).collect(),
                    details: p.details.clone(),
                    properties: properties(&p.details),
                }
            })
            .collect();
        let refusals: Vec<RefusalDoc> = plan
            .refusals
            .iter()
            .map(|r| RefusalDoc {
                node_id: r.node_index.index(),
                node: r.node.clone(),
                op: r.op.clone(),
                provider: r.provider.clone(),
                rule: rule_label(&r.reason),
                reason: r.reason.clone(),
            })
            .collect();
        let edges = edges(g, &part_of);
        let refused: HashSet<usize> = refusals.iter().map(|r| r.node_id).collect();
        let crossing: HashSet<&str> =
            edges.iter().filter(|e| e.crosses_partitions).map(|e| e.tensor.name.as_str()).collect();
        let summary = Summary {
            nodes: g.node_count(),
            partitions: partitions.len(),
            providers,
            refused_nodes: refused.len(),
            boundary_tensors: crossing.len(),
        };
        PlanDoc {
            format_version: FORMAT_VERSION,
            model: model.display().to_string(),
            whole_model: plan.path.starts_with("whole model"),
            path: plan.path.clone(),
            summary,
            warnings: plan.warnings.clone(),
            inputs: g.inputs().iter().map(|v| tensor_doc(g, *v)).collect(),
            outputs: g.outputs().iter().map(|v| tensor_doc(g, *v)).collect(),
            partitions,
            refusals,
            edges,
        }
    }

    /// The JSON text, pretty-printed, with a final newline.
    pub fn to_json(&self) -> String {
        // Serializing plain structs of strings, numbers and maps with string keys cannot fail.
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Refusals by node id, in plan order.
    fn refusals_of(&self) -> HashMap<usize, Vec<&RefusalDoc>> {
        let mut m: HashMap<usize, Vec<&RefusalDoc>> = HashMap::new();
        for r in &self.refusals {
            m.entry(r.node_id).or_default().push(r);
        }
        m
    }
}

/// The node names of the file's own graph, or `None` when the file cannot be read again (a
/// model built from bytes that are gone): every name then counts as the model's.
fn file_node_names(session: &Session) -> Option<HashSet<String>> {
    let m = ModelProto::decode(session.model().bytes.clone()).ok()?;
    Some(m.graph?.node.into_iter().filter_map(|n| n.name).collect())
}

fn tensor_doc(g: &Graph, v: ValueId) -> TensorDoc {
    let info = g.value(v);
    let shape = info.ty.tensor_shape().map(|dims| {
        dims.iter()
            .map(|d| match d {
                Dim::Fixed(n) => DimDoc::Fixed(*n),
                Dim::Symbol(s) => DimDoc::Symbol(s.clone()),
                Dim::Unknown => DimDoc::Unknown,
            })
            .collect()
    });
    let dtype = match &info.ty {
        ValueType::Tensor(d, _) => Some(d.to_string()),
        _ => None,
    };
    TensorDoc { name: info.name.clone(), ty: info.ty.to_string(), dtype, shape }
}

/// Every producer → consumer pair per value, then one edge per graph output. Values consumed
/// twice by the same node appear once.
fn edges(g: &Graph, part_of: &HashMap<NodeIndex, usize>) -> Vec<EdgeDoc> {
    let mut out = vec![];
    let mut seen: HashSet<(ValueId, Option<NodeIndex>, NodeIndex)> = HashSet::new();
    for &consumer in g.topo_order() {
        let node = g.node(consumer);
        let explicit = node.inputs.iter().flatten().map(|v| (*v, false));
        let implicit = node.implicit_inputs.iter().map(|v| (*v, true));
        for (v, implicit) in explicit.chain(implicit) {
            let producer = g.producer(v);
            let is_input = g.inputs().contains(&v);
            // Initializers are weights, not connections.
            if producer.is_none() && !is_input {
                continue;
            }
            if !seen.insert((v, producer, consumer)) {
                continue;
            }
            let crosses = producer.is_some_and(|p| part_of.get(&p) != part_of.get(&consumer));
            out.push(EdgeDoc {
                tensor: tensor_doc(g, v),
                from: producer.map(NodeIndex::index),
                to: Some(consumer.index()),
                crosses_partitions: crosses,
                implicit,
            });
        }
    }
    for &v in g.outputs() {
        if let Some(p) = g.producer(v) {
            out.push(EdgeDoc {
                tensor: tensor_doc(g, v),
                from: Some(p.index()),
                to: None,
                crosses_partitions: false,
                implicit: false,
            });
        }
    }
    out
}

/// `KEY=value` tokens of a provider's description whose key is an upper-case identifier.
fn properties(details: &str) -> BTreeMap<String, String> {
    details
        .split(|c: char| c.is_whitespace() || c == ';')
        .filter_map(|t| t.split_once('='))
        .filter(|(k, v)| {
            let mut chars = k.chars();
            chars.next().is_some_and(|c| c.is_ascii_uppercase())
                && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                && !v.is_empty()
        })
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The label a refusal reason starts with (`probe: …` → `probe`): one or two lower-case words
/// before the first `: `. Providers prefix their refusal layers this way; other reasons have
/// none.
fn rule_label(reason: &str) -> Option<String> {
    let (head, _) = reason.split_once(": ")?;
    let words: Vec<&str> = head.split(' ').collect();
    let ok = words.len() <= 2 && words.iter().all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase()));
    ok.then(|| head.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_are_the_upper_case_pairs_of_the_details() {
        let d = "OpenVINO 2026.4.1 on CPU; inputs x{1,3}; 1 infer request(s); INFERENCE_PRECISION_HINT=f32 \
                 NUM_STREAMS=1; note=lower x=1";
        let p = properties(d);
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(p["INFERENCE_PRECISION_HINT"], "f32");
        assert_eq!(p["NUM_STREAMS"], "1");
        assert!(properties("12 kernels").is_empty());
    }

    #[test]
    fn rule_labels_are_short_lower_case_prefixes() {
        assert_eq!(rule_label("probe: no conversion rule").as_deref(), Some("probe"));
        assert_eq!(rule_label("slow path: MaxPool with indices").as_deref(), Some("slow path"));
        assert_eq!(rule_label("cost rule: a partition of 2 cheap node(s)").as_deref(), Some("cost rule"));
        assert_eq!(rule_label("'x' is double, which vinort does not exchange: no"), None);
        assert_eq!(rule_label("OpenVino(CPU) failed to compile its partition: boom"), None);
        assert_eq!(rule_label("not claimed"), None);
    }
}
