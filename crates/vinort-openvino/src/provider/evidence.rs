//! What a failed whole-model compile says about single nodes.
//!
//! When OpenVINO's ONNX frontend cannot convert the whole model, its message lists each node
//! it failed on (`While validating ONNX node '<Node(Conv): NAME>': …`, NAME being the node's
//! name or, when that is empty, its first output). A piece of the model that still holds such
//! a node fails the same way, or, worse, converts in a context where OpenVINO's later passes
//! spin (`shared/regressions/openvino-compile-spins.onnx`: the whole file is rejected in
//! 0.2 s, a piece of it kept OpenVINO's graph rewriting busy for minutes). So those nodes are
//! refused before the model is split, with the frontend's words. A node inside a subgraph
//! makes the main-graph node that holds it (an `If`, `Loop` or `Scan`) refused.

use std::collections::HashMap;

use vinort_ir::proto::onnx;
use vinort_ir::{Model, NodeIndex};

/// Nodes OpenVINO's message names as failed conversions, each with the frontend's reason.
/// Empty when the message is not a conversion report or names no node of the model.
pub(super) fn conversion_failures(model: &Model, message: &str) -> Vec<(NodeIndex, String)> {
    if !message.contains("OpConversionFailure") && !message.contains("wasn't fully converted") {
        return vec![];
    }
    let names = names_to_nodes(model);
    let mut found: Vec<(NodeIndex, String)> = vec![];
    for (op, name, reason) in failed_nodes(message) {
        let Some(ix) = names.get(name.as_str()) else { continue };
        if found.iter().any(|(seen, _)| seen == ix) {
            continue;
        }
        let inner = model.graph.node(*ix).name != name
            && !model.graph.node(*ix).outputs.iter().flatten().any(|v| model.graph.value(*v).name == name);
        let place = if inner { format!(" (its subgraph node '{name}')") } else { String::new() };
        found.push((*ix, format!("OpenVINO failed to convert {op}{place} in the whole model: {reason}")));
    }
    found
}

/// `(op, node description, reason)` of each `<Node(OP): NAME>` in the message: the reason is
/// the last line of its entry that is not a source location.
fn failed_nodes(message: &str) -> Vec<(String, String, String)> {
    let mut out = vec![];
    // Entries start with "-- "; the summary after "Summary:" names op types only.
    let body = message.split("Summary:").next().unwrap_or(message);
    for entry in body.split("\n-- ") {
        let Some(at) = entry.find("<Node(") else { continue };
        let rest = &entry[at + "<Node(".len()..];
        let Some((op, rest)) = rest.split_once("): ") else { continue };
        let Some((name, _)) = rest.split_once(">'") else { continue };
        let reason = entry
            .lines()
            .map(str::trim)
            .rfind(|l| {
                !l.is_empty()
                    && !l.starts_with("Check '")
                    && !l.starts_with("Exception from ")
                    && !l.starts_with("While validating ONNX node")
                    && !l.starts_with("FrontEnd API failed")
                    && !l.ends_with("with a message:")
            })
            .unwrap_or("conversion failed")
            .to_owned();
        out.push((op.to_owned(), name.to_owned(), reason));
    }
    out
}

/// Every name a node of the model (at any depth) goes by, to the main-graph node holding it.
fn names_to_nodes(model: &Model) -> HashMap<String, NodeIndex> {
    fn walk(p: &onnx::NodeProto, ix: NodeIndex, out: &mut HashMap<String, NodeIndex>) {
        if let Some(n) = p.name.as_deref().filter(|n| !n.is_empty()) {
            out.entry(n.to_owned()).or_insert(ix);
        }
        if let Some(first) = p.output.first().filter(|o| !o.is_empty()) {
            out.entry(first.clone()).or_insert(ix);
        }
        for a in &p.attribute {
            for g in a.g.iter().chain(&a.graphs) {
                for inner in &g.node {
                    walk(inner, ix, out);
                }
            }
        }
    }
    let g = &model.graph;
    let mut out = HashMap::new();
    for ix in g.node_indices() {
        let n = g.node(ix);
        if !n.name.is_empty() {
            out.insert(n.name.clone(), ix);
        }
        if let Some(Some(v)) = n.outputs.first() {
            out.entry(g.value(*v).name.clone()).or_insert(ix);
        }
        if let Some(p) = &n.proto {
            walk(p, ix, &mut out);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "OpenVINO ov_core_read_model_from_memory_buffer failed (-1): Exception from src/inference/src/cpp/core.cpp:84:
Check 'false' failed at src/frontends/common_translators/src/unconverted_ops_report.cpp:151:
FrontEnd API failed with OpConversionFailure:
Model wasn't fully converted. Failed operations detailed log:
-- Conv-16 with a message:
While validating ONNX node '<Node(Conv): b/Conv_output_0>': Check 'data.get_partial_shape().rank().is_static()' failed at src/frontends/onnx/frontend/src/op/conv.cpp:38:
FrontEnd API failed with GeneralFailure:
The input data tensor's rank has to be known (static)

-- ReduceMean-16 with a message:
Check '(supported_types.find(ov_input.get_element_type()) != supported_types.end())' failed at src/frontends/onnx/frontend/src/op/reduce.cpp:134:
While validating ONNX node '<Node(ReduceMean): mean>':
Unsupported input type dynamic

Summary:
-- Conversion is failed for: Conv-16, ReduceMean-16
";

    #[test]
    fn the_report_names_nodes_and_their_reasons() {
        let got = failed_nodes(REPORT);
        assert_eq!(
            got,
            vec![
                (
                    "Conv".into(),
                    "b/Conv_output_0".into(),
                    "The input data tensor's rank has to be known (static)".into()
                ),
                ("ReduceMean".into(), "mean".into(), "Unsupported input type dynamic".into()),
            ]
        );
        assert!(failed_nodes("Summary:\n-- No conversion rule found for operations: X-1").is_empty());
    }
}
