//! Partitioning: providers claim nodes in the user's order; claimed nodes are grouped into
//! convex partitions (no path leaves a partition and comes back), so partitions run in a
//! dependency order with every tensor crossing a boundary exactly once, by reference.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use vinort_ir::ops::{self, Traits};
use vinort_ir::{Model, NodeIndex, PartitionDef, ValueId, ValueSource};

use crate::error::{Error, RefusedNode, Result};

/// A partition in the plan, as shown to users.
#[derive(Debug, Clone)]
pub struct PlannedPartition {
    /// Owning provider.
    pub provider: String,
    /// What the provider compiled (nodes, boundary values).
    pub def: PartitionDef,
    /// Node names, in order.
    pub nodes: Vec<String>,
    /// Op histogram.
    pub ops: BTreeMap<String, usize>,
    /// Names of values entering.
    pub inputs: Vec<String>,
    /// Names of values leaving.
    pub outputs: Vec<String>,
    /// The provider's description of its compiled form.
    pub details: String,
}

/// Why a provider did not take a node that a later provider then ran.
#[derive(Debug, Clone)]
pub struct Refusal {
    /// Node name.
    pub node: String,
    /// The node in the session's graph ([`crate::Session::model`]): names need not be unique.
    pub node_index: NodeIndex,
    /// Op type (qualified with its domain when not default).
    pub op: String,
    /// Provider that refused.
    pub provider: String,
    /// The rule or probe that refused it.
    pub reason: String,
}

/// Which provider runs which nodes, the tensors crossing each boundary, and why nodes were
/// refused: the session's report. No fallback is silent.
#[derive(Debug, Clone, Default)]
pub struct PartitionPlan {
    /// Partitions in execution order.
    pub partitions: Vec<PlannedPartition>,
    /// Refusals by providers earlier in the list.
    pub refusals: Vec<Refusal>,
    /// Providers skipped because they could not start, and other warnings.
    pub warnings: Vec<String>,
    /// How the plan was made: the whole model compiled at once by the first provider, or
    /// split node by node, and why.
    pub path: String,
}

impl fmt::Display for PartitionPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for w in &self.warnings {
            writeln!(f, "warning: {w}")?;
        }
        if !self.path.is_empty() {
            writeln!(f, "path: {}", self.path)?;
        }
        writeln!(f, "{} partition(s):", self.partitions.len())?;
        for (i, p) in self.partitions.iter().enumerate() {
            let ops: Vec<String> = p.ops.iter().map(|(k, v)| format!("{k}x{v}")).collect();
            writeln!(f, "  [{i}] {} — {} node(s): {}", p.provider, p.nodes.len(), ops.join(" "))?;
            writeln!(f, "      in:  {}", short_list(&p.inputs))?;
            writeln!(f, "      out: {}", short_list(&p.outputs))?;
            if !p.details.is_empty() {
                writeln!(f, "      {}", p.details)?;
            }
        }
        if !self.refusals.is_empty() {
            writeln!(f, "refused nodes:")?;
            for r in &self.refusals {
                writeln!(f, "  {} ({}) by {}: {}", r.node, r.op, r.provider, r.reason)?;
            }
        }
        Ok(())
    }
}

fn short_list(v: &[String]) -> String {
    if v.len() <= 8 { v.join(", ") } else { format!("{}, … ({} in all)", v[..8].join(", "), v.len()) }
}

/// Assigns nodes to providers and cuts convex partitions.
///
/// `providers` are the started providers in the user's order. Returns per partition the index
/// of its provider and its definition, plus the plan (without compiled details).
/// `vetoes` are nodes a provider claimed but then refused while compiling: they are treated as
/// refused by that provider, with the reason it gave. `file_is_graph` is false when the graph
/// was changed after loading (fixed dims), so no partition may stand for the file.
pub(crate) fn partition(
    model: &Model,
    providers: &[std::sync::Arc<dyn vinort_ir::ExecutionProvider>],
    vetoes: &HashMap<(usize, NodeIndex), String>,
    file_is_graph: bool,
    cost_model: bool,
) -> Result<(Vec<(usize, PartitionDef)>, PartitionPlan)> {
    let g = &model.graph;
    // Every provider is asked about every node, so the cost rule below knows who else could
    // run a node. Ownership still follows the user's order.
    let all: Vec<NodeIndex> = g.topo_order().to_vec();
    let mut claims: Vec<HashSet<NodeIndex>> = Vec::with_capacity(providers.len());
    let mut refused: Vec<HashMap<NodeIndex, String>> = Vec::with_capacity(providers.len());
    for p in providers {
        let cap = p.capability(model, &all)?;
        claims.push(cap.claimed.into_iter().collect());
        refused.push(cap.refused.into_iter().collect());
    }
    let mut vetoes = vetoes.clone();
    let (owner, groups) = loop {
        let owner: HashMap<NodeIndex, usize> = all
            .iter()
            .filter_map(|n| {
                (0..providers.len())
                    .find(|pi| claims[*pi].contains(n) && !vetoes.contains_key(&(*pi, *n)))
                    .map(|pi| (*n, pi))
            })
            .collect();
        if owner.len() < all.len() {
            break (owner, vec![]);
        }
        let groups = convex_groups(model, &owner);
        let mut changed = false;
        if groups.len() > 1 {
            for (pi, nodes) in &groups {
                // The first later provider that can take every node (a provider that refused a
                // node while compiling cannot).
                let takes = |q: usize| nodes.iter().all(|n| claims[q].contains(n) && !vetoes.contains_key(&(q, *n)));
                let Some(next) = (pi + 1..providers.len()).find(|q| takes(*q)) else { continue };
                let profiles = providers[*pi].cost_profile().filter(|_| cost_model);
                let why = if let Some(on) = profiles {
                    let after = providers[next].cost_profile().unwrap_or_default();
                    let v = crate::cost::judge(model, nodes, on, after);
                    if v.keeps() {
                        continue;
                    }
                    format!(
                        "cost model: {} node(s), {:.1} µs of heavy work, would save {:.1} µs per run on {} \
                         against a partition hand-off of {:.1} µs more; {} runs them",
                        nodes.len(),
                        v.heavy_us,
                        v.saves_us + on.per_partition_us - after.per_partition_us,
                        providers[*pi].name(),
                        on.per_partition_us - after.per_partition_us,
                        providers[next].name(),
                    )
                } else if worth_a_partition(model, nodes) {
                    continue;
                } else {
                    format!(
                        "cost rule: a partition of {} cheap node(s) costs more in boundary hand-offs than it saves",
                        nodes.len()
                    )
                };
                for n in nodes {
                    vetoes.insert((*pi, *n), why.clone());
                }
                changed = true;
            }
        }
        if !changed {
            break (owner, groups);
        }
    };
    let mut reasons: HashMap<NodeIndex, Vec<(String, String)>> = HashMap::new();
    let mut plan = PartitionPlan::default();
    for n in &all {
        let upto = owner.get(n).copied().unwrap_or(providers.len());
        for pi in 0..upto {
            let why =
                vetoes.get(&(pi, *n)).or_else(|| refused[pi].get(n)).cloned().unwrap_or_else(|| "not claimed".into());
            if crate::session::logs(crate::LogLevel::Verbose) {
                tracing::debug!(node = %g.node(*n).name, provider = %providers[pi].name(), reason = %why, "refused");
            }
            reasons.entry(*n).or_default().push((providers[pi].name(), why));
        }
    }
    let unsupported: Vec<RefusedNode> = g
        .topo_order()
        .iter()
        .filter(|n| !owner.contains_key(n))
        .map(|n| {
            let node = g.node(*n);
            RefusedNode {
                node: node.name.clone(),
                op_type: node.op_type.clone(),
                domain: node.domain.clone(),
                opset: node.opset,
                reasons: reasons
                    .get(n)
                    .cloned()
                    .unwrap_or_else(|| vec![("(none)".into(), "no provider was asked".into())]),
            }
        })
        .collect();
    if !unsupported.is_empty() {
        return Err(Error::UnsupportedNodes(unsupported));
    }
    for (n, rs) in &reasons {
        for (p, why) in rs {
            plan.refusals.push(Refusal {
                node: g.node(*n).name.clone(),
                node_index: *n,
                op: g.node(*n).qualified_op(),
                provider: p.clone(),
                reason: why.clone(),
            });
        }
    }
    plan.refusals.sort_by(|a, b| a.node.cmp(&b.node).then(a.node_index.cmp(&b.node_index)));

    let defs = groups.into_iter().map(|(pi, nodes)| (pi, boundary(model, nodes))).collect::<Vec<_>>();
    let whole = defs.len() == 1 && file_is_graph;
    let defs: Vec<(usize, PartitionDef)> = defs
        .into_iter()
        .map(|(pi, mut d)| {
            d.whole_graph = whole && is_whole_graph(model, &d);
            (pi, d)
        })
        .collect();
    for (pi, d) in &defs {
        plan.partitions.push(planned(model, providers[*pi].name(), d));
    }
    Ok((defs, plan))
}

/// Every node of the main graph as one partition (for the whole-model-first attempt), or
/// `None` for a graph without nodes. `file_is_graph` as for [`partition`].
pub(crate) fn whole(model: &Model, file_is_graph: bool) -> Option<PartitionDef> {
    let g = &model.graph;
    let all = g.topo_order().to_vec();
    if all.is_empty() {
        return None;
    }
    let mut d = boundary(model, all);
    d.whole_graph = file_is_graph && is_whole_graph(model, &d);
    Some(d)
}

/// The partition has the graph's own inputs and outputs, so a provider may compile the model
/// file instead. Not when an input is an overridable initializer: a file reader (OpenVINO's)
/// folds those into constants, and a fed value would be ignored.
fn is_whole_graph(model: &Model, d: &PartitionDef) -> bool {
    let g = &model.graph;
    d.inputs == g.inputs() && d.outputs == g.outputs() && g.inputs().iter().all(|v| g.input_default(*v).is_none())
}

/// A partition as shown in the plan (details come after compiling).
pub(crate) fn planned(model: &Model, provider: String, d: &PartitionDef) -> PlannedPartition {
    let g = &model.graph;
    let mut ops = BTreeMap::new();
    for n in &d.nodes {
        *ops.entry(g.node(*n).qualified_op()).or_insert(0) += 1;
    }
    PlannedPartition {
        provider,
        def: d.clone(),
        nodes: d.nodes.iter().map(|n| g.node(*n).name.clone()).collect(),
        ops,
        inputs: d.inputs.iter().map(|v| g.value(*v).name.clone()).collect(),
        outputs: d.outputs.iter().map(|v| g.value(*v).name.clone()).collect(),
        details: String::new(),
    }
}

/// Nodes in a partition at or below which, with no heavy op among them, a partition does not
/// pay for its boundaries.
pub const MIN_CHEAP_PARTITION: usize = 3;

/// The cost rule. Every partition boundary costs a synchronous hand-off (for OpenVINO an infer
/// request round trip, tens of microseconds) while elementwise and shape-plumbing ops cost
/// about as much on any provider. So a partition with no heavy op ([`Traits::HEAVY`]:
/// convolution, matrix product, recurrent, attention, control flow...) is not worth its
/// boundaries when another partition exists and a later provider can run its nodes, if it is
/// made only of elementwise ops (of any number: they save nothing anywhere) or has at most
/// [`MIN_CHEAP_PARTITION`] nodes; its nodes then move there and join their neighbours. (Shape
/// plumbing does not count as elementwise here: moving a model's shape arithmetic regroups the
/// rest of a dynamic-shape graph, which measured worse, not better.)
///
/// Measured: a `quantize_dynamic` MobileNetV2, whose int8 convolutions run on the Cpu provider,
/// left OpenVINO 53 islands of 4-6 Cast/Mul/Add/Clip nodes between them, and its 106-partition
/// plan took 17.6 ms against 13.1 ms for the same model on the Cpu provider alone.
fn worth_a_partition(model: &Model, nodes: &[NodeIndex]) -> bool {
    let has = |n: &NodeIndex, t: Traits| ops::has_traits(model.graph.node(*n), t);
    if nodes.iter().any(|n| has(n, Traits::HEAVY)) {
        return true;
    }
    let elementwise_only = nodes.iter().all(|n| has(n, Traits::ELEMENTWISE));
    !elementwise_only && nodes.len() > MIN_CHEAP_PARTITION
}

/// ONNX Runtime's node for a partition compiled ahead of time (`com.microsoft::EPContext`).
pub(crate) fn is_context_node(n: &vinort_ir::Node) -> bool {
    n.op_type == "EPContext" && n.domain == "com.microsoft"
}

/// Groups nodes into convex partitions per provider, greedily in topological order: a node
/// joins an existing partition of its provider unless that would create a cycle between
/// partitions (the partition is an ancestor of another partition the node depends on).
fn convex_groups(model: &Model, owner: &HashMap<NodeIndex, usize>) -> Vec<(usize, Vec<NodeIndex>)> {
    let g = &model.graph;
    let dag = g.dag();
    let mut part_of: HashMap<NodeIndex, usize> = HashMap::new();
    let mut parts: Vec<(usize, Vec<NodeIndex>)> = vec![];
    let mut deps: Vec<HashSet<usize>> = vec![];
    let ancestors = |deps: &Vec<HashSet<usize>>, start: usize| -> HashSet<usize> {
        let mut seen = HashSet::new();
        let mut stack: Vec<usize> = deps[start].iter().copied().collect();
        while let Some(p) = stack.pop() {
            if seen.insert(p) {
                stack.extend(deps[p].iter().copied());
            }
        }
        seen
    };
    // An EPContext node is a compiled partition already: it runs alone, nothing joins it.
    let mut sealed: HashSet<usize> = HashSet::new();
    for &n in g.topo_order() {
        let pi = owner[&n];
        let alone = is_context_node(g.node(n));
        let preds: HashSet<usize> = dag.neighbors_directed(n, petgraph::Incoming).map(|p| part_of[&p]).collect();
        // Partitions reachable backwards from the node through other partitions.
        let mut blocked: HashSet<usize> = HashSet::new();
        for q in &preds {
            blocked.extend(ancestors(&deps, *q));
        }
        // Prefer a partition the node reads from; else the newest compatible one.
        let joinable = |p: &usize| parts[*p].0 == pi && !blocked.contains(p) && !sealed.contains(p);
        let candidate = if alone {
            None
        } else {
            preds.iter().copied().filter(joinable).max().or_else(|| (0..parts.len()).rev().find(joinable))
        };
        let target = match candidate {
            Some(p) => p,
            None => {
                parts.push((pi, vec![]));
                deps.push(HashSet::new());
                parts.len() - 1
            }
        };
        parts[target].1.push(n);
        part_of.insert(n, target);
        if alone {
            sealed.insert(target);
        }
        for q in preds {
            if q != target {
                deps[target].insert(q);
            }
        }
    }
    // Order partitions so each runs after those it depends on.
    let mut order = vec![];
    let mut done = vec![false; parts.len()];
    fn visit(p: usize, deps: &[HashSet<usize>], done: &mut [bool], order: &mut Vec<usize>) {
        if done[p] {
            return;
        }
        done[p] = true;
        let mut ds: Vec<usize> = deps[p].iter().copied().collect();
        ds.sort_unstable();
        for d in ds {
            visit(d, deps, done, order);
        }
        order.push(p);
    }
    for p in 0..parts.len() {
        visit(p, &deps, &mut done, &mut order);
    }
    let topo_pos: HashMap<NodeIndex, usize> = g.topo_order().iter().enumerate().map(|(i, n)| (*n, i)).collect();
    order
        .into_iter()
        .map(|p| {
            let (pi, mut nodes) = parts[p].clone();
            nodes.sort_by_key(|n| topo_pos[n]);
            (pi, nodes)
        })
        .collect()
}

/// The values entering and leaving a set of nodes.
fn boundary(model: &Model, nodes: Vec<NodeIndex>) -> PartitionDef {
    let g = &model.graph;
    let inside: HashSet<NodeIndex> = nodes.iter().copied().collect();
    let mut produced: HashSet<ValueId> = HashSet::new();
    for n in &nodes {
        produced.extend(g.node(*n).outputs.iter().flatten().copied());
    }
    let mut inputs: Vec<ValueId> = vec![];
    for n in &nodes {
        let node = g.node(*n);
        for v in node.inputs.iter().flatten().chain(node.implicit_inputs.iter()) {
            let external = !produced.contains(v) && !matches!(g.value(*v).source, ValueSource::Initializer(_));
            if external && !inputs.contains(v) {
                inputs.push(*v);
            }
        }
    }
    let graph_outputs: HashSet<ValueId> = g.outputs().iter().copied().collect();
    let mut outputs: Vec<ValueId> = vec![];
    for n in &nodes {
        for v in g.node(*n).outputs.iter().flatten() {
            let read_outside = g.consumers(*v).iter().any(|c| !inside.contains(c));
            if (read_outside || graph_outputs.contains(v)) && !outputs.contains(v) {
                outputs.push(*v);
            }
        }
    }
    // A partition that is the whole graph takes inputs and gives outputs in graph order, so a
    // provider may compile the original file with identical signatures.
    if inside.len() == g.node_count() {
        let ins: Vec<ValueId> = g.inputs().iter().copied().filter(|v| inputs.contains(v)).collect();
        if ins.len() == inputs.len() {
            inputs = ins;
        }
        let outs: Vec<ValueId> = g.outputs().iter().copied().filter(|v| produced.contains(v)).collect();
        let mut dedup = outs.clone();
        dedup.dedup();
        if outs.len() == outputs.len() && dedup.len() == outs.len() {
            outputs = outs;
        }
    }
    PartitionDef { nodes, inputs, outputs, whole_graph: false }
}
