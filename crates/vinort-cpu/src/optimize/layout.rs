//! The layout pass: f32 2-D Convs move to the blocked NCHWc layout
//! ([`crate::kernels::conv::nchwc`]), as ONNX Runtime's NCHWc transformer does at its
//! highest optimization level, and so does a MaxPool (values only) of a blocked Conv's output.
//!
//! A Conv moves when its weights (and bias) are constant, it is regular (group 1) or depthwise
//! (one input and one output channel per group), its fused tail is at most a residual and an
//! activation, and its input is 4-D f32. A depthwise conv moves only when its input already is
//! blocked: alone it does nine multiply-adds per element, about what two reorders cost.
//!
//! Values cross the boundary through reorders: a `ReorderInput` where an NCHW value is first
//! read by a blocked Conv (as its input or its residual), one per value however many read it
//! (except the input of a regular Conv of under 16 channels, such as a network's first, which
//! reads its NCHW planes in place);
//! a `ReorderOutput` right after a blocked Conv whose output is read by anything that stays in
//! NCHW, or is a partition output. A chain of Convs (and the residual Adds fused into them)
//! thus runs blocked from end to end.

use std::collections::HashMap;

use vinort_ir::{Attr, DType, Node, ValueId, ValueType};

use super::{Item, Work, is_f32};
use crate::kernels::conv::nchwc::{self, DOMAIN};
use crate::kernels::epilogue::Epilogue;

/// Moves the Convs that can run blocked into NCHWc.
pub(crate) fn nchwc(w: &mut Work<'_>) {
    if !nchwc::available() {
        return;
    }
    // Which items move: decided in order, since a depthwise conv needs a blocked input. A blocked
    // value does not say how many of its lanes are channels, so every value crossing into the
    // layout gets one channel count, and a conv whose weights expect another stays NCHW (where
    // its kernel reports the mismatch).
    let mut blocked_out = std::collections::HashSet::new();
    let mut channels: HashMap<ValueId, usize> = HashMap::new();
    let mut moves = vec![false; w.items.len()];
    for (i, m) in moves.iter_mut().enumerate() {
        let Some(it) = w.item(i) else { continue };
        if pool_eligible(it) {
            // A MaxPool of a blocked value stays in the layout, with the channels it reads.
            let (Some(x), Some(y)) = (it.node.inputs[0], it.node.outputs[0]) else { continue };
            let Some(&c) = channels.get(&x).filter(|_| blocked_out.contains(&x)) else { continue };
            if channels.get(&y).is_some_and(|have| *have != c) {
                continue;
            }
            channels.insert(y, c);
            *m = true;
            blocked_out.insert(y);
            continue;
        }
        let Some((depthwise, cin, cout)) = eligible(w, it) else { continue };
        let (Some(x), Some(y)) = (it.node.inputs[0], it.node.outputs[0]) else { continue };
        if depthwise && !blocked_out.contains(&x) {
            continue;
        }
        let z = it.epi.residual.and_then(|r| it.extra.get(r.wrapping_sub(it.node.inputs.len())).copied());
        let wants = [(x, cin), (y, cout)].into_iter().chain(z.map(|z| (z, cout)));
        if wants.clone().any(|(v, c)| channels.get(&v).is_some_and(|have| *have != c)) {
            continue;
        }
        channels.extend(wants);
        *m = true;
        blocked_out.insert(y);
    }
    if !moves.contains(&true) {
        return;
    }
    // A blocked output needs its NCHW form too when anything that stays NCHW reads it, or it
    // leaves the partition.
    let need_out: Vec<bool> = (0..moves.len())
        .map(|i| {
            let y = w.item(i).and_then(|it| it.node.outputs.first().copied().flatten());
            moves[i] && y.is_some_and(|y| w.keep.contains(&y) || w.readers(y).iter().any(|r| !moves[*r]))
        })
        .collect();
    let mut twin: HashMap<ValueId, ValueId> = HashMap::new();
    let old = std::mem::take(&mut w.items);
    let mut items = Vec::with_capacity(old.len() + 8);
    for (i, slot) in old.into_iter().enumerate() {
        let Item { mut node, epi, mut extra } = match slot {
            Some(it) if moves[i] => it,
            other => {
                items.push(other);
                continue;
            }
        };
        let x = node.inputs[0].unwrap_or(ValueId(u32::MAX));
        if node.is("MaxPool") {
            let c = channels.get(&x).copied().unwrap_or(0);
            node.inputs[0] = Some(blocked_input(w, &mut twin, &mut items, &node.name, x, c));
            let y = node.outputs[0].unwrap_or(ValueId(u32::MAX));
            let yb = w.new_value(ValueType::Tensor(DType::F32, None));
            twin.insert(y, yb);
            node.outputs = vec![Some(yb)];
            let name = node.name.clone();
            node.domain = DOMAIN.into();
            items.push(Some(Item { node, epi, extra }));
            if need_out[i] {
                items.push(Some(reorder("ReorderOutput", &name, yb, y, c)));
            }
            continue;
        }
        let depthwise = node.attr_or::<i64>("group", 1).unwrap_or(1) != 1;
        let cin = channels.get(&x).copied().unwrap_or(0);
        if !twin.contains_key(&x) && !depthwise && cin < nchwc::BLOCK {
            // A few channels (an image's three) are read in place from their planes.
            node.attrs.push(("nchw_input".into(), Attr::Int(1)));
        } else {
            node.inputs[0] = Some(blocked_input(w, &mut twin, &mut items, &node.name, x, cin));
        }
        if let Some(r) = epi.residual
            && let Some(z) = extra.get_mut(r.wrapping_sub(node.inputs.len()))
        {
            let c = channels.get(z).copied().unwrap_or(0);
            *z = blocked_input(w, &mut twin, &mut items, &node.name, *z, c);
        }
        let y = node.outputs[0].unwrap_or(ValueId(u32::MAX));
        let yb = w.new_value(ValueType::Tensor(DType::F32, None));
        twin.insert(y, yb);
        node.outputs[0] = Some(yb);
        let cout = channels.get(&y).copied().unwrap_or(0);
        let name = node.name.clone();
        node.domain = DOMAIN.into();
        items.push(Some(Item { node, epi, extra }));
        if need_out[i] {
            items.push(Some(reorder("ReorderOutput", &name, yb, y, cout)));
        }
    }
    w.items = items;
    w.touch();
}

/// The blocked twin of `v` (of `c` channels), made by a `ReorderInput` pushed now when `v` has
/// none yet.
fn blocked_input(
    w: &mut Work<'_>,
    twin: &mut HashMap<ValueId, ValueId>,
    items: &mut Vec<Option<Item>>,
    of: &str,
    v: ValueId,
    c: usize,
) -> ValueId {
    if let Some(b) = twin.get(&v) {
        return *b;
    }
    let b = w.new_value(ValueType::Tensor(DType::F32, None));
    items.push(Some(reorder("ReorderInput", of, v, b, c)));
    twin.insert(v, b);
    b
}

/// A reorder node between `from` and `to`, of a value of `channels` channels.
fn reorder(op: &str, of: &str, from: ValueId, to: ValueId, channels: usize) -> Item {
    let attrs = vec![("channels".to_string(), Attr::Int(channels as i64))];
    let node = Node {
        name: format!("{of}/{op}"),
        op_type: op.into(),
        domain: DOMAIN.into(),
        opset: 1,
        inputs: vec![Some(from)],
        outputs: vec![Some(to)],
        implicit_inputs: vec![],
        attrs,
        proto: None,
    };
    Item { node, epi: Epilogue::default(), extra: vec![] }
}

/// `Some((depthwise, input channels, output channels))` when the item is a Conv the NCHWc
/// kernels take.
fn eligible(w: &Work<'_>, it: &Item) -> Option<(bool, usize, usize)> {
    let n = &it.node;
    if !n.is("Conv") || !(n.domain.is_empty() || n.domain == "ai.onnx") || !n.implicit_inputs.is_empty() {
        return None;
    }
    if it.epi.scale.is_some() || it.epi.bias.is_some() || n.outputs.len() != 1 {
        return None;
    }
    let x = (*n.inputs.first()?)?;
    n.outputs[0]?;
    if !is_f32(w, Some(x)) || w.ty(x).tensor_shape().map(<[_]>::len) != Some(4) {
        return None;
    }
    let wt = w.constant((*n.inputs.get(1)?)?)?;
    if let Some(b) = n.inputs.get(2).copied().flatten()
        && w.constant(b).is_none_or(|b| b.dtype() != DType::F32)
    {
        return None;
    }
    let &[m, cg, kh, kw] = wt.shape() else { return None };
    if wt.dtype() != DType::F32 || kh == 0 || kw == 0 || m == 0 || cg == 0 {
        return None;
    }
    // Pads no wider than the dilated kernel (any real network's, and what the blocked kernels'
    // window clipping is tested on): wider ones, whose outputs see no input at all, stay NCHW.
    let win = crate::kernels::window::WindowAttrs::parse(n).ok()?.resolve(&[kh, kw]).ok()?;
    let extent = |a: usize| (win.kernel[a] - 1).checked_mul(win.dilations[a])?.checked_add(1);
    let pads_fit = (0..2).all(|a| extent(a).is_some_and(|e| win.pads[a] <= e && win.pads[a + 2] <= e));
    if !pads_fit {
        return None;
    }
    let group = n.attr_or::<i64>("group", 1).ok()?;
    // The channel count the input declares must match the weights'.
    let c = w.ty(x).tensor_shape()?[1].fixed();
    match group {
        1 => (c.is_none_or(|c| c == cg)).then_some((false, cg, m)),
        g if cg == 1 && usize::try_from(g).ok() == Some(m) && c.is_none_or(|c| c == m) => Some((true, m, m)),
        _ => None,
    }
}

/// A MaxPool the blocked kernel takes (once its input is known to be blocked): values only,
/// nothing fused, 2-D, every window reaching the input (pads below the dilated kernel).
fn pool_eligible(it: &Item) -> bool {
    let n = &it.node;
    if !n.is("MaxPool") || !(n.domain.is_empty() || n.domain == "ai.onnx") || !n.implicit_inputs.is_empty() {
        return false;
    }
    if !it.epi.is_empty() || !it.extra.is_empty() || n.outputs.iter().skip(1).any(Option::is_some) {
        return false;
    }
    let Ok(attrs) = crate::kernels::window::WindowAttrs::parse(n) else { return false };
    let Some(&[kh, kw]) = attrs.kernel.as_deref() else { return false };
    let Ok(win) = attrs.resolve(&[kh, kw]) else { return false };
    let extent = |a: usize| (win.kernel[a].checked_sub(1)?).checked_mul(win.dilations[a])?.checked_add(1);
    (0..2).all(|a| extent(a).is_some_and(|e| win.pads[a] < e && win.pads[a + 2] < e))
}
