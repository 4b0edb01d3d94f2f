//! The int8 layout pass: QLinearConvs run channels-last, as ONNX Runtime's NHWC transformer
//! does for them at its highest optimization level.
//!
//! A QLinearConv moves when the prepared channels-last kernel
//! ([`crate::kernels::quant::qconv_nhwc`]) takes it (2-D, every parameter constant, regular or
//! depthwise). It becomes a com.microsoft QLinearConv with `channels_last = 1`, ONNX Runtime's
//! own spelling of the same thing.
//!
//! Elementwise ops between such convolutions move too, so a chain stays channels-last from end
//! to end: per-tensor DequantizeLinear / QuantizeLinear (what QDQ models put around every
//! residual Add), activations, and binary arithmetic whose non-scalar inputs are all
//! channels-last values of the output's own shape (a residual Add; not a per-channel bias,
//! whose broadcast depends on the layout). Such an op moves only when its inputs are already
//! channels-last, never to start a chain.
//!
//! Values cross the boundary through Transposes: `[0, 2, 3, 1]` where an NCHW value is first
//! read by a moved convolution (once per value, however many read it), `[0, 3, 1, 2]` right
//! after a moved item whose output is read by anything that stays NCHW or leaves the partition.
//! Every moved op computes exactly what it computed before, element for element, so results
//! are unchanged (tested).

use std::collections::{HashMap, HashSet};

use vinort_ir::{Attr, Dim, Node, ValueId, ValueType};

use super::{Item, Work, node_info};
use crate::kernels::epilogue::Epilogue;
use crate::kernels::quant::qconv_nhwc::NhwcConv;

/// Where each input of a movable item stands.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    /// A tensor in the layout (the convolution's X, an elementwise op's operands).
    Data,
    /// A scalar parameter, the same in any layout (absent inputs are fine too).
    Scalar,
    /// A parameter that must be a constant of one element (a per-tensor scale or zero point).
    ConstScalar,
}

/// Moves QLinearConvs, and the elementwise ops between them, to channels-last.
pub(crate) fn qconv(w: &mut Work<'_>) {
    let mut moves = vec![false; w.items.len()];
    // Values that will be produced channels-last.
    let mut inside: HashSet<ValueId> = HashSet::new();
    for (i, m) in moves.iter_mut().enumerate() {
        let Some(it) = w.item(i) else { continue };
        if conv_moves(w, it) || elementwise_moves(w, it, &inside) {
            *m = true;
            inside.extend(it.node.outputs.iter().flatten());
        }
    }
    if !moves.contains(&true) {
        return;
    }
    // A moved item's output needs its NCHW form too when anything staying NCHW reads it, or it
    // leaves the partition.
    let need_out: Vec<bool> = (0..moves.len())
        .map(|i| {
            moves[i]
                && w.item(i).is_some_and(|it| {
                    it.node
                        .outputs
                        .iter()
                        .flatten()
                        .any(|y| w.keep.contains(y) || w.readers(*y).iter().any(|r| !moves[*r]))
                })
        })
        .collect();
    let mut twin: HashMap<ValueId, ValueId> = HashMap::new();
    let old = std::mem::take(&mut w.items);
    let mut items = Vec::with_capacity(old.len() + 8);
    for (i, slot) in old.into_iter().enumerate() {
        let mut it = match slot {
            Some(it) if moves[i] => it,
            other => {
                items.push(other);
                continue;
            }
        };
        let roles = roles(&it.node).unwrap_or_default();
        for (p, role) in roles.iter().enumerate() {
            if *role != Role::Data {
                continue;
            }
            let Some(v) = it.node.inputs.get(p).copied().flatten() else { continue };
            let t = match twin.get(&v) {
                Some(t) => *t,
                // An elementwise op's other operands are scalars, the same in any layout.
                None if !it.node.is("QLinearConv") => continue,
                None => {
                    let t = w.new_value(permuted(&w.ty(v), TO_NHWC));
                    items.push(Some(transpose(&it.node.name, "ToNhwc", v, t, TO_NHWC)));
                    twin.insert(v, t);
                    t
                }
            };
            it.node.inputs[p] = Some(t);
        }
        let outputs: Vec<ValueId> = it.node.outputs.iter().flatten().copied().collect();
        for slot in it.node.outputs.iter_mut() {
            if let Some(y) = *slot {
                let t = w.new_value(permuted(&w.ty(y), TO_NHWC));
                twin.insert(y, t);
                *slot = Some(t);
            }
        }
        if it.node.is("QLinearConv") {
            it.node.domain = "com.microsoft".into();
            it.node.opset = 1;
            it.node.attrs.push(("channels_last".into(), Attr::Int(1)));
        }
        let name = it.node.name.clone();
        items.push(Some(it));
        if need_out[i] {
            for y in outputs {
                items.push(Some(transpose(&name, "ToNchw", twin[&y], y, TO_NCHW)));
            }
        }
    }
    w.items = items;
    w.touch();
}

const TO_NHWC: [usize; 4] = [0, 2, 3, 1];
const TO_NCHW: [usize; 4] = [0, 3, 1, 2];

/// `ty` with its 4-D shape permuted by `perm`.
fn permuted(ty: &ValueType, perm: [usize; 4]) -> ValueType {
    match ty {
        ValueType::Tensor(d, Some(s)) if s.len() == 4 => {
            ValueType::Tensor(*d, Some(perm.iter().map(|&a| s[a].clone()).collect()))
        }
        ValueType::Tensor(d, _) => ValueType::Tensor(*d, Some(vec![Dim::Unknown; 4])),
        other => other.clone(),
    }
}

fn transpose(of: &str, what: &str, from: ValueId, to: ValueId, perm: [usize; 4]) -> Item {
    let node = Node {
        name: format!("{of}/{what}"),
        op_type: "Transpose".into(),
        domain: String::new(),
        opset: 13,
        inputs: vec![Some(from)],
        outputs: vec![Some(to)],
        implicit_inputs: vec![],
        attrs: vec![("perm".into(), Attr::Ints(perm.iter().map(|&a| a as i64).collect()))],
        proto: None,
    };
    Item { node, epi: Epilogue::default(), extra: vec![] }
}

fn onnx_domain(n: &Node) -> bool {
    n.domain.is_empty() || n.domain == "ai.onnx"
}

/// What each input of an op that may move is, or None for an op that stays.
fn roles(n: &Node) -> Option<Vec<Role>> {
    use Role::*;
    if n.domain == "com.microsoft" {
        return match n.op_type.as_str() {
            "QLinearAdd" | "QLinearMul" => {
                Some(vec![Data, ConstScalar, ConstScalar, Data, ConstScalar, ConstScalar, ConstScalar, ConstScalar])
            }
            _ => None,
        };
    }
    if !onnx_domain(n) {
        return None;
    }
    let data = vec![Data; n.inputs.len()];
    match n.op_type.as_str() {
        "QLinearConv" => Some(vec![Data]),
        "DequantizeLinear" | "QuantizeLinear" => Some(vec![Data, ConstScalar, ConstScalar]),
        "Clip" => Some(vec![Data, Scalar, Scalar]),
        "Relu" | "LeakyRelu" | "Sigmoid" | "Tanh" | "HardSigmoid" | "HardSwish" | "Identity" | "Cast" | "Abs"
        | "Neg" | "Exp" | "Erf" | "Sqrt" | "Floor" | "Ceil" | "Round" | "Elu" | "Selu" | "Softplus" => {
            (n.inputs.len() == 1).then_some(data)
        }
        "Add" | "Sub" | "Mul" | "Div" | "Max" | "Min" | "Sum" | "Mean" | "PRelu" => Some(data),
        _ => None,
    }
}

/// A QLinearConv the channels-last kernel takes.
fn conv_moves(w: &Work<'_>, it: &Item) -> bool {
    let n = &it.node;
    if !n.is("QLinearConv") || !onnx_domain(n) || !it.epi.is_empty() || !it.extra.is_empty() {
        return false;
    }
    if !n.implicit_inputs.is_empty() || n.outputs.len() != 1 || n.outputs[0].is_none() {
        return false;
    }
    let Some(x) = n.inputs.first().copied().flatten() else { return false };
    if w.ty(x).tensor_shape().map(<[Dim]>::len) != Some(4) {
        return false;
    }
    matches!(NhwcConv::new(&node_info(w, n)), Ok(Some(_)))
}

/// An elementwise op whose operands are all channels-last values of its output's shape (or
/// scalars), at least one of them.
fn elementwise_moves(w: &Work<'_>, it: &Item, inside: &HashSet<ValueId>) -> bool {
    let n = &it.node;
    if n.is("QLinearConv") || !it.epi.is_empty() || !it.extra.is_empty() || !n.implicit_inputs.is_empty() {
        return false;
    }
    let Some(roles) = roles(n) else { return false };
    let [Some(y)] = n.outputs.as_slice() else { return false };
    if n.inputs.len() > roles.len() {
        return false;
    }
    // Block-wise quantization reads along an axis.
    if n.attr_or::<i64>("block_size", 0).unwrap_or(1) != 0 {
        return false;
    }
    let Some(shape) = w.ty(*y).tensor_shape().map(<[Dim]>::to_vec) else { return false };
    if shape.len() != 4 || shape.iter().any(|d| matches!(d, Dim::Unknown)) {
        return false;
    }
    let mut any = false;
    for (v, role) in n.inputs.iter().zip(&roles) {
        let Some(v) = *v else { continue };
        let one = |v: ValueId| w.constant(v).is_some_and(|t| t.len() == 1);
        let ok = match role {
            Role::Data if inside.contains(&v) => {
                any = true;
                w.ty(v).tensor_shape() == Some(shape.as_slice())
            }
            Role::Data => one(v),
            // A moved value is no longer produced under its own id: only Data operands are
            // redirected to the channels-last form.
            Role::Scalar => {
                !inside.contains(&v) && w.ty(v).tensor_shape().is_some_and(|s| s.iter().all(|d| *d == Dim::Fixed(1)))
            }
            Role::ConstScalar if inside.contains(&v) => false,
            Role::ConstScalar => one(v),
        };
        if !ok {
            return false;
        }
    }
    any
}
