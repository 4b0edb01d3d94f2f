//! Which offered nodes OpenVINO takes: an ordered list of refusal layers.
//!
//! Each layer looks at one node and claims it, refuses it with a reason, or passes it on; the
//! first layer that answers decides, so a cheap certain refusal is never overridden by a later
//! layer and the expensive probe runs only for what every other layer left open. The order:
//!
//! 1. **static**: a value vinort cannot exchange with OpenVINO (element type, non-tensor), or
//!    one of float64, which OpenVINO's CPU plugin computes in float32;
//! 2. **semantics** ([`crate::semantics`]): attributes, constant inputs or data for which
//!    OpenVINO computes something other than ONNX;
//! 3. **slow** ([`crate::slow`]): measured slow paths the Cpu provider beats by far;
//! 4. **table** ([`crate::rules`]): the measured (op, opset, element type) table; claims or
//!    refuses what was measured, passes what was not (but refuses an unmeasured
//!    com.microsoft op: see [`table`]);
//! 5. **probe** ([`crate::probe`]): compiles the node alone and remembers the verdict.
//!
//! Static inference types every value of a model built from the ops vinort knows, so an input
//! of unknown type can only come from an op no rule covers (a custom domain). Such a node's
//! probe declares that input a float tensor of unknown rank (`export::stand_in_model`): it asks
//! only whether OpenVINO converts the op at all. "No conversion rule" refuses the node, named
//! like any other; any other answer claims it, and a partition compiled as a whole (the model
//! file itself when it is one partition) decides, its failure blamed and vetoed as usual.
//!
//! A new refusal rule is one entry in `semantics.rs` or `slow.rs`; this list changes only for
//! a new *kind* of check.

use vinort_ir::{DType, Model, NodeIndex, ValueType};

use crate::version::MEASURED;
use crate::{ffi, probe, rules, semantics, slow};

/// One layer's answer for one node.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Answer {
    /// OpenVINO runs it; later layers are not asked.
    Claim,
    /// OpenVINO must not run it in any context (a wrong answer, a crash, a slow path), for
    /// this reason; later layers are not asked.
    Refuse(String),
    /// OpenVINO would not convert or compile the node *alone*: a refusal when the model is
    /// split, but no evidence against a whole model that compiles.
    Soft(String),
    /// No opinion: ask the next layer.
    Pass,
}

impl Answer {
    fn refuse_if(why: Option<String>) -> Answer {
        why.map_or(Answer::Pass, Answer::Refuse)
    }
}

/// One refusal layer: a name for logs and docs, the prefix its reasons carry, and its question.
pub(super) struct Layer<Q> {
    pub(super) name: &'static str,
    pub(super) prefix: &'static str,
    pub(super) ask: fn(&Q) -> Answer,
    /// Asked before a whole-model compile ([`firm_refusal`]); the probe is not (it compiles
    /// the node alone, which proves nothing about the whole model).
    pub(super) whole: bool,
}

/// The refusal of the first layer that answers (prefixed with the layer's tag), or `None` when
/// the node is claimed. A node no layer answers is claimed; the real list ends with the probe,
/// which always answers.
pub(super) fn decide<Q>(layers: &[Layer<Q>], q: &Q) -> Option<String> {
    for layer in layers {
        match (layer.ask)(q) {
            Answer::Pass => continue,
            Answer::Claim => return None,
            Answer::Refuse(why) | Answer::Soft(why) => {
                tracing::trace!(layer = layer.name, reason = %why, "node refused");
                return Some(format!("{}{why}", layer.prefix));
            }
        }
    }
    None
}

/// The refusal that holds whatever the node's context, from the layers asked before a
/// whole-model compile, or `None`: a soft refusal (the node does not compile alone) is left
/// for the whole compile to confirm or disprove.
pub(super) fn firm_refusal<Q>(layers: &[Layer<Q>], q: &Q) -> Option<String> {
    for layer in layers.iter().filter(|l| l.whole) {
        match (layer.ask)(q) {
            Answer::Pass => continue,
            Answer::Claim | Answer::Soft(_) => return None,
            Answer::Refuse(why) => return Some(format!("{}{why}", layer.prefix)),
        }
    }
    None
}

/// What a layer is asked about: one node of a model, on a device.
pub(super) struct Query<'a> {
    pub(super) model: &'a Model,
    pub(super) ix: NodeIndex,
    /// The physical device the table and the slow-path rules are keyed on.
    pub(super) device: &'a str,
    /// Compiles the node alone, remembering the verdict (the last layer's question).
    pub(super) probe: &'a dyn Fn(NodeIndex) -> probe::Verdict,
}

/// The layers, in the order they are asked.
pub(super) fn layers<'a>() -> [Layer<Query<'a>>; 6] {
    [
        Layer { name: "static", prefix: "", ask: exchangeable, whole: true },
        Layer { name: "semantics", prefix: "semantics: ", ask: semantic, whole: true },
        Layer { name: "slow", prefix: "slow path: ", ask: slow_path, whole: true },
        Layer { name: "qdq", prefix: "", ask: fake_quantize, whole: true },
        Layer { name: "table", prefix: "rule: ", ask: table, whole: true },
        Layer { name: "probe", prefix: "probe: ", ask: probed, whole: false },
    ]
}

/// Every value the node touches must cross into OpenVINO as a tensor of a type both sides know.
fn exchangeable(q: &Query) -> Answer {
    let g = &q.model.graph;
    let n = g.node(q.ix);
    for v in n.inputs.iter().flatten().chain(&n.implicit_inputs).chain(n.outputs.iter().flatten()) {
        let info = g.value(*v);
        match &info.ty {
            ValueType::Tensor(d, _) if ffi::to_ov_type(*d).is_none() => {
                return Answer::Refuse(format!("'{}' is {d}, which vinort does not exchange with OpenVINO", info.name));
            }
            // Measured: the CPU plugin runs f64 in f32, so values beyond f32's range or precision
            // come out wrong (pytorch-operator test_operator_add_broadcast: 3.4e38 instead of
            // 5.9e199). The Cpu provider computes f64 exactly.
            ValueType::Tensor(DType::F64, _) => {
                return Answer::Refuse(format!(
                    "'{}' is float64, which OpenVINO {MEASURED} computes in float32 (range and precision lost)",
                    info.name
                ));
            }
            // Unknown types are decided by the probe layer (see the module doc).
            ValueType::Tensor(..) | ValueType::Unknown => {}
            other => return Answer::Refuse(format!("'{}' is {other}; only tensors cross into OpenVINO", info.name)),
        }
    }
    Answer::Pass
}

fn semantic(q: &Query) -> Answer {
    Answer::refuse_if(semantics::refusal(&q.model.graph, q.ix))
}

fn slow_path(q: &Query) -> Answer {
    Answer::refuse_if(slow::refusal(&q.model.graph, q.ix, q.device))
}

fn table(q: &Query) -> Answer {
    let g = &q.model.graph;
    let n = g.node(q.ix);
    let dtypes: Vec<_> = n.inputs.iter().map(|v| v.and_then(|v| g.value(v).ty.tensor_dtype())).collect();
    match rules::lookup(&n.domain, &n.op_type, n.opset, q.device, &dtypes) {
        rules::Verdict::Supported { .. } => Answer::Claim,
        rules::Verdict::Refused { reason, firm: true } => Answer::Refuse(reason),
        rules::Verdict::Refused { reason, firm: false } => Answer::Soft(reason),
        // ONNX Runtime's contrib ops have no ONNX reference semantics for OpenVINO's frontend
        // to follow, and a conversion nobody compared with onnxruntime is a guess: QLinearWhere
        // converts and compiles, and came out wrong by up to 252 quantization steps. So a
        // contrib op the table has no row for at all is refused outright, not left to a
        // whole-model compile. (An unmeasured element type of a measured op passes, as for
        // ONNX's ops: float16 Attention runs whole and right in the fused-BERT corpus models.)
        rules::Verdict::Unknown if n.domain == "com.microsoft" && !rules::measures(&n.domain, &n.op_type) => {
            Answer::Refuse(format!(
                "OpenVINO {MEASURED}'s conversion of com.microsoft::{} was never compared with onnxruntime \
                 (scripts/probe_contrib_ops.py has no case for it)",
                n.op_type
            ))
        }
        rules::Verdict::Unknown => Answer::Pass,
    }
}

/// A QuantizeLinear whose every consumer is a DequantizeLinear (the QDQ form quantization
/// tools write around every quantized op) is claimed before the table, which refuses
/// QuantizeLinear for its tie rounding (and com.microsoft's for int16, one step off).
///
/// Measured on OpenVINO 2026.4.1 CPU (f32): QuantizeLinear rounds `x / scale` ties (`n + ½`)
/// differently from ONNX's round-half-to-even, so its *integer* output differs by one on exact
/// ties, and the table refuses it. In the Q→DQ form OpenVINO fuses the pair (with the op it
/// wraps) into its low-precision pipeline: the integer never leaves, and the dequantized
/// activation moves by one quantization step on exact ties only. That is the accuracy contract
/// of QDQ models: ONNX Runtime's own fused int8 kernels differ from the unfused graph by up to
/// two steps on mobilenetv2_qdq (docs/conformance.md). A QuantizeLinear whose integers are read
/// by anything else, or are a graph output, stays with the table's refusal.
fn fake_quantize(q: &Query) -> Answer {
    let g = &q.model.graph;
    let n = g.node(q.ix);
    // ONNX's ops or ONNX Runtime's com.microsoft twins (16-bit and 4-bit QDQ models).
    let either = |n: &vinort_ir::Node, op: &str| {
        n.op_type == op && matches!(n.domain.as_str(), "" | "ai.onnx" | "com.microsoft")
    };
    if !either(n, "QuantizeLinear") {
        return Answer::Pass;
    }
    let Some(Some(out)) = n.outputs.first() else { return Answer::Pass };
    let consumers = g.consumers(*out);
    let only_dequantized = !consumers.is_empty()
        && !g.outputs().contains(out)
        && consumers.iter().all(|c| either(g.node(*c), "DequantizeLinear"));
    if only_dequantized { Answer::Claim } else { Answer::Pass }
}

/// An input of the node whose type no rule knows (it comes from an op vinort has no rule for).
pub(super) fn untyped_input(model: &Model, ix: NodeIndex) -> Option<String> {
    let g = &model.graph;
    let n = g.node(ix);
    n.inputs
        .iter()
        .flatten()
        .chain(&n.implicit_inputs)
        .find(|v| g.value(**v).ty == ValueType::Unknown && g.initializer(**v).is_none())
        .map(|v| g.value(*v).name.clone())
}

fn probed(q: &Query) -> Answer {
    match (q.probe)(q.ix) {
        probe::Verdict::Ok => Answer::Claim,
        probe::Verdict::Refused(r) => Answer::Refuse(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake query: what each fake layer answers.
    struct Script([Answer; 3]);

    const FAKE: &[Layer<Script>] = &[
        Layer { name: "a", prefix: "a: ", ask: |s| s.0[0].clone(), whole: true },
        Layer { name: "b", prefix: "b: ", ask: |s| s.0[1].clone(), whole: true },
        Layer { name: "c", prefix: "c: ", ask: |s| s.0[2].clone(), whole: false },
    ];

    fn refuse(why: &str) -> Answer {
        Answer::Refuse(why.into())
    }

    #[test]
    fn capability_first_answer_wins() {
        use Answer::{Claim, Pass};
        let decide = |s: [Answer; 3]| decide(FAKE, &Script(s));
        assert_eq!(decide([refuse("x"), refuse("y"), Claim]), Some("a: x".into()), "the first refusal wins");
        assert_eq!(decide([Pass, refuse("y"), refuse("z")]), Some("b: y".into()), "a pass asks the next layer");
        assert_eq!(decide([Pass, Claim, refuse("z")]), None, "a claim stops before a later refusal");
        assert_eq!(decide([Pass, Pass, refuse("z")]), Some("c: z".into()));
        assert_eq!(decide([Pass, Pass, Pass]), None, "nothing against it: claimed");
        let soft = || Answer::Soft("alone".into());
        assert_eq!(decide([Pass, soft(), Claim]), Some("b: alone".into()), "split: a soft refusal refuses");
    }

    #[test]
    fn capability_whole_model_check_skips_soft_refusals_and_the_probe() {
        use Answer::{Claim, Pass};
        let firm = |s: [Answer; 3]| firm_refusal(FAKE, &Script(s));
        let soft = || Answer::Soft("alone".into());
        assert_eq!(firm([refuse("x"), Claim, Claim]), Some("a: x".into()), "a firm refusal splits the model");
        assert_eq!(firm([soft(), refuse("y"), Claim]), None, "a soft refusal is left to the whole compile");
        assert_eq!(firm([Pass, refuse("y"), Claim]), Some("b: y".into()));
        assert_eq!(firm([Pass, Pass, refuse("probe")]), None, "layers not marked `whole` are not asked");
    }

    #[test]
    fn capability_layers_go_from_cheap_to_expensive() {
        let names: Vec<&str> = layers().iter().map(|l| l.name).collect();
        assert_eq!(names, ["static", "semantics", "slow", "qdq", "table", "probe"]);
        let prefixes: Vec<&str> = layers().iter().map(|l| l.prefix).collect();
        assert_eq!(prefixes, ["", "semantics: ", "slow path: ", "", "rule: ", "probe: "]);
        let whole: Vec<bool> = layers().iter().map(|l| l.whole).collect();
        assert_eq!(whole, [true, true, true, true, true, false], "only the probe is skipped before a whole compile");
    }

    #[test]
    fn capability_real_layers_answer_in_order_and_probe_last() {
        use crate::semantics::tests::{one_node, vi};
        let ask = |m: &Model, probe: &dyn Fn(NodeIndex) -> probe::Verdict| {
            decide(&layers(), &Query { model: m, ix: m.graph.topo_order()[0], device: "CPU", probe })
        };
        let not_asked = |_| -> probe::Verdict { panic!("probed although an earlier layer answered") };
        let (f32_x, string_x) = (vi("x", 1, &[2]), vi("x", 8, &[2]));

        let why = ask(&one_node("Identity", 13, &[string_x], vec![], &["x"], vec![]), &not_asked);
        assert!(why.as_deref().is_some_and(|w| w.contains("which vinort does not exchange with OpenVINO")), "{why:?}");
        for op in ["Add", "Identity"] {
            let inputs: Vec<_> =
                if op == "Add" { vec![vi("x", 11, &[2]), vi("b", 11, &[2])] } else { vec![vi("x", 11, &[2])] };
            let names: Vec<&str> = if op == "Add" { vec!["x", "b"] } else { vec!["x"] };
            let why = ask(&one_node(op, 14, &inputs, vec![], &names, vec![]), &not_asked);
            assert!(why.as_deref().is_some_and(|w| w.contains("float64") && w.contains("float32")), "{op}: {why:?}");
        }
        let k = vinort_ir::tensor_proto::tensor_to_proto("k", &vinort_ir::Tensor::from_slice(&[1], &[1i64]).unwrap());
        let topk = one_node("TopK", 11, std::slice::from_ref(&f32_x), vec![k], &["x", "k"], vec![]);
        let why = ask(&topk, &not_asked);
        assert!(why.as_deref().is_some_and(|w| w.starts_with("semantics: OpenVINO")), "{why:?}");
        let relu = one_node("Relu", 14, std::slice::from_ref(&f32_x), vec![], &["x"], vec![]);
        assert_eq!(ask(&relu, &not_asked), None, "the table claims a measured op without a probe");

        let unmeasured = one_node("NotMeasured", 14, std::slice::from_ref(&f32_x), vec![], &["x"], vec![]);
        let refused = |_| probe::Verdict::Refused("no conversion rule".into());
        assert_eq!(ask(&unmeasured, &refused), Some("probe: no conversion rule".into()));
        assert_eq!(ask(&unmeasured, &|_| probe::Verdict::Ok), None);
    }

    /// A com.microsoft op the table never measured is refused before a whole-model compile
    /// (its conversion is a guess); a measured one's unmeasured element type is not.
    #[test]
    fn capability_refuses_unmeasured_contrib_ops_firmly() {
        use crate::semantics::tests::{node_model, vi};
        let contrib = |op: &str, inputs: &[vinort_ir::proto::onnx::ValueInfoProto], names: &[&str]| {
            node_model(("com.microsoft", op), &[("", 17), ("com.microsoft", 1)], inputs, vec![], names, &["y"], vec![])
        };
        let firm = |m: &Model| {
            firm_refusal(
                &layers(),
                &Query { model: m, ix: m.graph.topo_order()[0], device: "CPU", probe: &|_| panic!("probed") },
            )
        };
        let trilu = contrib("Trilu", &[vi("x", 1, &[3, 3])], &["x"]);
        let why = firm(&trilu);
        assert!(
            why.as_deref().is_some_and(|w| w.contains("com.microsoft::Trilu") && w.contains("never compared")),
            "{why:?}"
        );
        // QuickGelu is measured for float; float16 was not, and is left to the whole compile.
        assert_eq!(firm(&contrib("QuickGelu", &[vi("x", 10, &[4])], &["x"])), None);
        assert_eq!(firm(&contrib("QuickGelu", &[vi("x", 1, &[4])], &["x"])), None);
        // The same op name in the default domain is ONNX's, not a contrib guess.
        assert!(rules::measures("com.microsoft", "QuickGelu") && !rules::measures("com.microsoft", "Trilu"));
    }

    /// A node reading a value no type rule covers (the output of an unknown custom op) is not
    /// refused for the unknown type: it reaches the probe (which declares the input a float of
    /// unknown rank), and the probe's verdict decides, so an op OpenVINO has no conversion for
    /// is refused and named even behind an untyped value.
    #[test]
    fn untyped_inputs_are_decided_by_the_probe() {
        use crate::semantics::tests::vi;
        use prost::Message;
        use vinort_ir::proto::onnx;
        let node = |op: &str, domain: &str, i: &str, o: &str| onnx::NodeProto {
            op_type: Some(op.into()),
            domain: Some(domain.into()),
            name: Some(o.into()),
            input: vec![i.into()],
            output: vec![o.into()],
            ..Default::default()
        };
        let graph = onnx::GraphProto {
            name: Some("g".into()),
            node: vec![
                node("Mystery", "com.example", "x", "m"),
                node("Relu", "", "m", "y"),
                // Not in the measured table either: the probe layer decides.
                node("NotMeasured", "", "m", "z"),
            ],
            input: vec![vi("x", 1, &[2])],
            output: ["y", "z"].map(|o| onnx::ValueInfoProto { name: Some(o.into()), ..Default::default() }).to_vec(),
            ..Default::default()
        };
        let model = vinort_ir::proto::build::model(9, &[("", 14), ("com.example", 1)], graph);
        let m = Model::from_bytes(model.encode_to_vec()).unwrap();
        assert_eq!(m.graph.value(m.graph.value_id("m").unwrap()).ty, ValueType::Unknown, "no rule types 'm'");
        let converts = |_| probe::Verdict::Ok;
        let no_rule = |_| probe::Verdict::Refused("No conversion rule found for NotMeasured".into());
        let at = |op: &str| m.graph.topo_order().iter().copied().find(|ix| m.graph.node(*ix).op_type == op).unwrap();
        let ask = |op, probe: &dyn Fn(NodeIndex) -> probe::Verdict| {
            decide(&layers(), &Query { model: &m, ix: at(op), device: "CPU", probe })
        };
        // Relu is in the measured table, which claims it whatever the input's type.
        assert_eq!(ask("Relu", &no_rule), None);
        assert_eq!(ask("NotMeasured", &converts), None, "the probe converts it, so it is claimed");
        let why = ask("NotMeasured", &no_rule);
        assert!(why.as_deref().is_some_and(|w| w.contains("No conversion rule")), "{why:?}");
    }
}
