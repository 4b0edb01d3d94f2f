//! Model-local functions (`ModelProto.functions`, IR 8+) inlined at load, as ONNX Runtime does:
//! a node whose `(domain, op_type, overload)` names a function of the model is replaced by the
//! function's body, so the IR, the providers and the partitioner only ever see ONNX ops.
//!
//! Per the [IR spec](https://onnx.ai/onnx/repo-docs/IR.html#functions):
//! - the function's formal inputs and outputs bind to the node's actual ones by position (an
//!   absent optional input binds to the empty name); every other value of the body gets a name
//!   unique to this call, so two calls never share an intermediate;
//! - an attribute of a body node with `ref_attr_name` takes the calling node's attribute of that
//!   name, else the function's default (`attribute_proto`), else it is dropped (unset);
//! - a body node may call another function; calls nest up to [`MAX_DEPTH`], which also stops
//!   recursion;
//! - the function's own `opset_import` must agree with the model's for every domain both
//!   import; a domain only the function imports is added to the model's imports.
//!
//! This works on the protobuf messages before the graph is built, so subgraph attributes
//! (If/Loop/Scan bodies) inside function bodies and calls inside subgraphs are handled by the
//! same walk.

use std::collections::{BTreeMap, HashMap};

use crate::error::{Error, Result};
use crate::proto::onnx;

/// How deep function calls may nest (a recursive function hits this).
pub const MAX_DEPTH: usize = 32;

type Key = (String, String, String);

fn key(domain: Option<&str>, op: Option<&str>, overload: Option<&str>) -> Key {
    let d = domain.unwrap_or("");
    let d = if d == "ai.onnx" { "" } else { d };
    (d.to_owned(), op.unwrap_or("").to_owned(), overload.unwrap_or("").to_owned())
}

/// The model's graph with every call of a local function inlined, and the opset imports the
/// functions add. `None` when the model has no functions (the graph is used as it is).
pub(crate) fn inline(proto: &onnx::ModelProto, opsets: &mut BTreeMap<String, i64>) -> Result<Option<onnx::GraphProto>> {
    if proto.functions.is_empty() {
        return Ok(None);
    }
    let mut funcs: HashMap<Key, &onnx::FunctionProto> = HashMap::new();
    for f in &proto.functions {
        let k = key(f.domain.as_deref(), f.name.as_deref(), f.overload.as_deref());
        if funcs.insert(k.clone(), f).is_some() {
            return Err(Error::InvalidModel(format!("function {}::{} is defined twice", k.0, k.1)));
        }
        for o in &f.opset_import {
            let d = o.domain.clone().unwrap_or_default();
            let d = if d == "ai.onnx" { String::new() } else { d };
            let v = o.version.unwrap_or(1);
            match opsets.get(&d) {
                Some(have) if *have != v => {
                    return Err(Error::InvalidModel(format!(
                        "function {}::{} imports opset {v} of domain '{d}' but the model imports {have}",
                        k.0, k.1
                    )));
                }
                Some(_) => {}
                None => {
                    opsets.insert(d, v);
                }
            }
        }
    }
    let gp = proto.graph.as_ref().ok_or_else(|| Error::InvalidModel("the model has no graph".into()))?;
    let mut inliner = Inliner { funcs, calls: 0 };
    Ok(Some(inliner.graph(gp, 0)?))
}

struct Inliner<'a> {
    funcs: HashMap<Key, &'a onnx::FunctionProto>,
    /// Calls inlined so far: makes each call's value names unique.
    calls: usize,
}

impl Inliner<'_> {
    fn graph(&mut self, g: &onnx::GraphProto, depth: usize) -> Result<onnx::GraphProto> {
        let mut out = g.clone();
        out.node = self.nodes(&g.node, depth)?;
        Ok(out)
    }

    /// The nodes with calls replaced by bodies, and subgraph attributes walked.
    fn nodes(&mut self, nodes: &[onnx::NodeProto], depth: usize) -> Result<Vec<onnx::NodeProto>> {
        let mut out = Vec::with_capacity(nodes.len());
        for n in nodes {
            let k = key(n.domain.as_deref(), n.op_type.as_deref(), n.overload.as_deref());
            match self.funcs.get(&k).copied() {
                Some(f) => {
                    if depth >= MAX_DEPTH {
                        return Err(Error::InvalidModel(format!(
                            "function calls nest deeper than {MAX_DEPTH} levels at {}::{} (recursion?)",
                            k.0, k.1
                        )));
                    }
                    let body = self.expand(n, f)?;
                    out.extend(self.nodes(&body, depth + 1)?);
                }
                None => {
                    let mut n = n.clone();
                    for a in &mut n.attribute {
                        if let Some(g) = &a.g {
                            a.g = Some(self.graph(g, depth)?);
                        }
                        let gs = std::mem::take(&mut a.graphs);
                        a.graphs = gs.iter().map(|g| self.graph(g, depth)).collect::<Result<_>>()?;
                    }
                    out.push(n);
                }
            }
        }
        Ok(out)
    }

    /// One call's body: values renamed for this call, attribute references resolved.
    fn expand(&mut self, call: &onnx::NodeProto, f: &onnx::FunctionProto) -> Result<Vec<onnx::NodeProto>> {
        let fname = f.name.as_deref().unwrap_or("");
        if call.input.len() > f.input.len() || call.output.len() > f.output.len() {
            return Err(Error::InvalidModel(format!(
                "node '{}' calls function {fname} with {} inputs and {} outputs; it declares {} and {}",
                call.name.as_deref().unwrap_or(""),
                call.input.len(),
                call.output.len(),
                f.input.len(),
                f.output.len()
            )));
        }
        self.calls += 1;
        let prefix = format!("{}/{fname}#{}/", call.name.as_deref().unwrap_or(""), self.calls);
        let mut names: HashMap<&str, String> = HashMap::new();
        for (i, formal) in f.input.iter().enumerate() {
            names.insert(formal, call.input.get(i).cloned().unwrap_or_default());
        }
        for (i, formal) in f.output.iter().enumerate() {
            // An output the caller does not take stays internal to this call.
            let actual = call.output.get(i).filter(|s| !s.is_empty()).cloned();
            names.insert(formal, actual.unwrap_or_else(|| format!("{prefix}{formal}")));
        }
        let rename = |names: &HashMap<&str, String>, v: &str| -> String {
            if v.is_empty() {
                return String::new();
            }
            names.get(v).cloned().unwrap_or_else(|| format!("{prefix}{v}"))
        };
        let attr_of = |name: &str| -> Option<&onnx::AttributeProto> {
            call.attribute
                .iter()
                .find(|a| a.name.as_deref() == Some(name))
                .or_else(|| f.attribute_proto.iter().find(|a| a.name.as_deref() == Some(name)))
        };
        let mut body = Vec::with_capacity(f.node.len());
        for n in &f.node {
            let mut n = n.clone();
            n.name = Some(format!("{prefix}{}", n.name.as_deref().unwrap_or("")));
            n.input = n.input.iter().map(|v| rename(&names, v)).collect();
            n.output = n.output.iter().map(|v| rename(&names, v)).collect();
            let mut attrs = Vec::with_capacity(n.attribute.len());
            for a in &n.attribute {
                let a = match a.ref_attr_name.as_deref().filter(|r| !r.is_empty()) {
                    Some(r) => match attr_of(r) {
                        Some(v) => onnx::AttributeProto { name: a.name.clone(), ref_attr_name: None, ..v.clone() },
                        None => continue, // unset in the call and without a default: absent
                    },
                    None => a.clone(),
                };
                attrs.push(rename_subgraphs(a, &names, &prefix));
            }
            n.attribute = attrs;
            body.push(n);
        }
        Ok(body)
    }
}

/// A body node's subgraph attributes read the function's values by their body names; those
/// become this call's names. Names the subgraph defines itself are renamed consistently too,
/// which keeps them distinct from everything outside.
fn rename_subgraphs(mut a: onnx::AttributeProto, names: &HashMap<&str, String>, prefix: &str) -> onnx::AttributeProto {
    fn walk(g: &mut onnx::GraphProto, names: &HashMap<&str, String>, prefix: &str) {
        let r = |v: &mut String| {
            if !v.is_empty() {
                *v = names.get(v.as_str()).cloned().unwrap_or_else(|| format!("{prefix}{v}"));
            }
        };
        for n in &mut g.node {
            n.input.iter_mut().for_each(r);
            n.output.iter_mut().for_each(r);
            for a in &mut n.attribute {
                if let Some(sg) = &mut a.g {
                    walk(sg, names, prefix);
                }
                a.graphs.iter_mut().for_each(|sg| walk(sg, names, prefix));
            }
        }
        for vi in g.input.iter_mut().chain(g.output.iter_mut()).chain(g.value_info.iter_mut()) {
            if let Some(name) = &mut vi.name {
                r(name);
            }
        }
        for t in &mut g.initializer {
            if let Some(name) = &mut t.name {
                r(name);
            }
        }
    }
    if let Some(g) = &mut a.g {
        walk(g, names, prefix);
    }
    a.graphs.iter_mut().for_each(|g| walk(g, names, prefix));
    a
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use crate::Model;
    use crate::proto::build::{self, attr, fixed_tensor_info, node, opset};
    use crate::proto::onnx;

    fn call(op: &str, name: &str, i: &[&str], o: &[&str], attrs: Vec<onnx::AttributeProto>) -> onnx::NodeProto {
        onnx::NodeProto { domain: Some("local".into()), attribute: attrs, ..node(op, name, i, o) }
    }

    /// `Scale(x) = Mul(x, Constant(value_float = @k))`, `Block(x) = Relu(Scale(x))`: nested calls,
    /// an attribute reference with a default, and a call overriding it.
    fn model(funcs: Vec<onnx::FunctionProto>, calls: Vec<onnx::NodeProto>) -> Model {
        let g = onnx::GraphProto {
            name: Some("g".into()),
            node: calls,
            input: vec![fixed_tensor_info("x", 1, &[2])],
            output: vec![fixed_tensor_info("y", 1, &[2]), fixed_tensor_info("z", 1, &[2])],
            ..Default::default()
        };
        let m = onnx::ModelProto { functions: funcs, ..build::model(9, &[("", 18), ("local", 1)], g) };
        Model::from_bytes(m.encode_to_vec()).unwrap()
    }

    /// Function `name` of the `local` domain from `x` to `y`.
    fn local(
        name: &str,
        node: Vec<onnx::NodeProto>,
        opset_import: Vec<onnx::OperatorSetIdProto>,
    ) -> onnx::FunctionProto {
        onnx::FunctionProto {
            name: Some(name.into()),
            domain: Some("local".into()),
            input: vec!["x".into()],
            output: vec!["y".into()],
            node,
            opset_import,
            ..Default::default()
        }
    }

    fn funcs() -> Vec<onnx::FunctionProto> {
        let k_ref = onnx::AttributeProto {
            name: Some("value_float".into()),
            ref_attr_name: Some("k".into()),
            r#type: Some(1),
            ..Default::default()
        };
        let scale = onnx::FunctionProto {
            attribute_proto: vec![attr::float("k", 2.0)],
            ..local(
                "Scale",
                vec![
                    onnx::NodeProto { attribute: vec![k_ref], ..node("Constant", "c", &[], &["k"]) },
                    node("Mul", "m", &["x", "k"], &["y"]),
                ],
                vec![opset("", 18)],
            )
        };
        let block = local(
            "Block",
            vec![call("Scale", "s", &["x"], &["t"], vec![]), node("Relu", "r", &["t"], &["y"])],
            vec![opset("", 18), opset("local", 1)],
        );
        vec![scale, block]
    }

    #[test]
    fn nested_calls_inline_with_attribute_references() {
        let m = model(
            funcs(),
            vec![
                call("Block", "b1", &["x"], &["y"], vec![]),
                call("Scale", "s2", &["x"], &["z"], vec![attr::float("k", 3.0)]),
            ],
        );
        let g = &m.graph;
        let ops: Vec<String> = g.topo_order().iter().map(|ix| g.node(*ix).op_type.clone()).collect();
        let mut sorted = ops.clone();
        sorted.sort();
        assert_eq!(sorted, ["Constant", "Constant", "Mul", "Mul", "Relu"], "{ops:?}");
        // The two calls' constants carry the default (2) and the call's value (3).
        let mut ks: Vec<f32> = g
            .topo_order()
            .iter()
            .map(|ix| g.node(*ix))
            .filter(|n| n.op_type == "Constant")
            .map(|n| n.attr::<f32>("value_float").unwrap().unwrap())
            .collect();
        ks.sort_by(f32::total_cmp);
        assert_eq!(ks, [2.0, 3.0]);
        // Each call's intermediates are its own.
        let muls: Vec<_> = g.topo_order().iter().map(|ix| g.node(*ix)).filter(|n| n.op_type == "Mul").collect();
        assert_ne!(muls[0].inputs[1], muls[1].inputs[1]);
        assert_eq!(g.value(g.outputs()[0]).ty.tensor_dtype(), Some(crate::DType::F32), "typed after inlining");
    }

    #[test]
    fn recursion_and_conflicting_opsets_are_errors() {
        let mut f = funcs();
        f[0].node = vec![call("Scale", "again", &["x"], &["y"], vec![])];
        let g = onnx::GraphProto {
            node: vec![call("Scale", "s", &["x"], &["y"], vec![])],
            input: vec![fixed_tensor_info("x", 1, &[2])],
            output: vec![fixed_tensor_info("y", 1, &[2])],
            ..Default::default()
        };
        let m = onnx::ModelProto { functions: f, ..build::model(9, &[("", 18), ("local", 1)], g.clone()) };
        let e = Model::from_bytes(m.encode_to_vec()).unwrap_err().to_string();
        assert!(e.contains("nest deeper"), "{e}");

        let mut f = funcs();
        f[0].opset_import = vec![opset("", 13)];
        let m = onnx::ModelProto { functions: f, graph: Some(g), ..m };
        let e = Model::from_bytes(m.encode_to_vec()).unwrap_err().to_string();
        assert!(e.contains("imports opset 13") && e.contains("model imports 18"), "{e}");
    }
}
