"""An exact ONNX Runtime reference for int8 products with uint8 activations and int8 weights.

ONNX defines MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv and the com.microsoft
integer ops (MatMulIntegerToFloat, QGemm, QAttention, DynamicQuantizeMatMul,
DynamicQuantizeLSTM) as exact 32-bit sums of products. ONNX Runtime's CPU kernels compute
`uint8 × int8` exactly only on CPUs with VNNI: on AVX2-only x86-64 CPUs its MLAS kernel uses
`vpmaddubsw`, which adds two `u8·s8` products into a saturating int16 (255·127·2 = 64 770 does not
fit), and ONNX Runtime documents that accuracy loss (the `reduce_range` advice of its
quantization guide). Its `uint8 × uint8` kernels widen to 16 bits first and are exact on every
CPU.

So references are computed on an equivalent model: every int8 weight `w` of such a product (with
zero point `zw`, 0 when absent) becomes the uint8 `w + 128` with zero point `zw + 128`. Since
`(w + 128) − (zw + 128) = w − zw`, the model is mathematically the same and ONNX Runtime computes
it exactly on every CPU. Only tensors every consumer of which is such a weight slot are
rewritten; anything else is left alone.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# op -> (index of the activation input, or None when the op quantizes a float input to uint8
# itself; index of the activation's zero point, of the same type), [(weight index, weight
# zero-point index), ...]
SLOTS = {
    ("", "MatMulInteger"): (0, 2, [(1, 3)]),
    ("", "ConvInteger"): (0, 2, [(1, 3)]),
    ("", "QLinearMatMul"): (0, 2, [(3, 5)]),
    ("", "QLinearConv"): (0, 2, [(3, 5)]),
    ("com.microsoft", "QLinearConv"): (0, 2, [(3, 5)]),
    ("com.microsoft", "MatMulIntegerToFloat"): (0, 4, [(1, 5)]),
    ("com.microsoft", "QGemm"): (0, 2, [(3, 5)]),
    ("com.microsoft", "QAttention"): (0, 6, [(1, 7)]),
    ("com.microsoft", "DynamicQuantizeMatMul"): (None, None, [(1, 3)]),
    ("com.microsoft", "DynamicQuantizeLSTM"): (None, None, [(1, 9), (2, 11)]),
}

# Quantized ops whose first output has the element type of their output zero point (index).
OUTPUT_ZERO_POINT = {
    ("", "QLinearConv"): 7,
    ("", "QLinearMatMul"): 7,
    ("com.microsoft", "QLinearConv"): 7,
    ("com.microsoft", "QLinearAdd"): 7,
    ("com.microsoft", "QLinearMul"): 7,
    ("com.microsoft", "QLinearAveragePool"): 4,
    ("com.microsoft", "QLinearGlobalAveragePool"): 4,
    ("com.microsoft", "QLinearLeakyRelu"): 4,
    ("com.microsoft", "QLinearSigmoid"): 4,
    ("com.microsoft", "QLinearSoftmax"): 4,
    ("com.microsoft", "QLinearConcat"): 1,
    ("com.microsoft", "QGemm"): 8,
}

# Ops whose first output has the element type of their first input.
SAME_TYPE = {"Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Identity", "MaxPool",
             "Concat", "Slice", "Split", "Gather", "Pad", "Expand", "Tile", "DepthToSpace",
             "SpaceToDepth", "Resize"}


def _domain(node) -> str:
    return "" if node.domain in ("", "ai.onnx") else node.domain


def _subgraph_names(graph) -> set[str]:
    """Every tensor name a node inside a subgraph of `graph` reads (outer-scope reads included)."""
    names: set[str] = set()

    def walk(g):
        for node in g.node:
            names.update(node.input)
            for attr in node.attribute:
                for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                    walk(sub)

    for node in graph.node:
        for attr in node.attribute:
            for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                walk(sub)
    return names


def _elem_types(model) -> dict[str, int]:
    """Element types of the values whose type is known without running the model."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - an unknown op stops nothing: fewer types are known
        inferred = model
    g = inferred.graph
    types = {t.name: t.data_type for t in g.initializer}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            types.setdefault(vi.name, vi.type.tensor_type.elem_type)
    # What shape inference leaves out (com.microsoft ops and what follows them), in node order.
    for node in g.node:
        if not node.output or node.output[0] in types:
            continue
        ins = list(node.input)
        if node.op_type == "DynamicQuantizeLinear":
            types[node.output[0]] = TensorProto.UINT8
        elif node.op_type == "QuantizeLinear":
            zp = ins[2] if len(ins) > 2 and ins[2] else None
            types[node.output[0]] = types.get(zp) if zp else TensorProto.UINT8
        elif (_domain(node), node.op_type) in OUTPUT_ZERO_POINT:
            k = OUTPUT_ZERO_POINT[(_domain(node), node.op_type)]
            if len(ins) > k and types.get(ins[k]):
                types[node.output[0]] = types[ins[k]]
        elif node.op_type in SAME_TYPE and ins and types.get(ins[0]):
            types[node.output[0]] = types[ins[0]]
    return {k: v for k, v in types.items() if v}


def u8u8_equivalent(model: onnx.ModelProto, feeds: dict[str, np.ndarray]):
    """(model, feeds) with each rewritable uint8 × int8 weight made uint8 (see the module doc).
    The arguments are not changed; when nothing applies they are returned as they are."""
    g = model.graph
    types = _elem_types(model)
    inits = {t.name: t for t in g.initializer}
    inputs = {vi.name for vi in g.input}
    outputs = {vi.name for vi in g.output}
    inner = _subgraph_names(g)

    def source_ok(name: str) -> bool:
        # A weight or zero point we can rewrite: int8, given (an initializer or a feed), read
        # by no subgraph and not itself a graph output.
        if not name or name in outputs or name in inner:
            return False
        if name in inits:
            return inits[name].data_type == TensorProto.INT8
        return name in inputs and name in feeds and feeds[name].dtype == np.int8

    # (node, weight index, zero-point index) slots whose product is uint8 × int8.
    slots = []
    nodes = list(g.node)
    for k, node in enumerate(nodes):
        spec = SLOTS.get((_domain(node), node.op_type))
        if spec is None:
            continue
        a_index, az_index, pairs = spec
        if a_index is not None:
            a = node.input[a_index] if len(node.input) > a_index else ""
            az = node.input[az_index] if len(node.input) > az_index else ""
            if types.get(a, types.get(az)) != TensorProto.UINT8:
                continue
        for w, z in pairs:
            wn = node.input[w] if len(node.input) > w else ""
            zn = node.input[z] if len(node.input) > z else ""
            if source_ok(wn) and (not zn or source_ok(zn)):
                slots.append((k, w, z))

    # Keep only tensors that every consumer reads as a weight (or its zero point) in a slot.
    while True:
        roles = {}
        for k, w, z in slots:
            ins = nodes[k].input
            roles.setdefault(ins[w], set()).add((k, w))
            if len(ins) > z and ins[z]:
                roles.setdefault(ins[z], set()).add((k, z))
        bad = set()
        for k, node in enumerate(nodes):
            for i, name in enumerate(node.input):
                if name in roles and (k, i) not in roles[name]:
                    bad.add(name)

        def clean(slot):
            k, w, z = slot
            ins = nodes[k].input
            return ins[w] not in bad and not (len(ins) > z and ins[z] in bad)

        kept = [s for s in slots if clean(s)]
        if len(kept) == len(slots):
            break
        slots = kept
    if not slots:
        return model, feeds

    out = onnx.ModelProto()
    out.CopyFrom(model)
    og = out.graph
    new_feeds = dict(feeds)
    shifted = {}

    def shift(name: str) -> None:
        # int8 -> uint8 by adding 128, for an initializer or a feed, once.
        if name in shifted:
            return
        shifted[name] = True
        for t in og.initializer:
            if t.name == name:
                arr = numpy_helper.to_array(t).astype(np.int16) + 128
                t.CopyFrom(numpy_helper.from_array(arr.astype(np.uint8), name))
                return
        new_feeds[name] = (feeds[name].astype(np.int16) + 128).astype(np.uint8)
        for vi in og.input:
            if vi.name == name:
                vi.type.tensor_type.elem_type = TensorProto.UINT8

    added = 0
    for k, w, z in slots:
        onode = og.node[k]
        shift(onode.input[w])
        if len(onode.input) > z and onode.input[z]:
            shift(onode.input[z])
        else:
            # No zero point: int8 0 becomes uint8 128.
            name = f"__exact_int8_zero_point_{added}"
            added += 1
            og.initializer.append(helper.make_tensor(name, TensorProto.UINT8, [], [128]))
            while len(onode.input) <= z:
                onode.input.append("")
            onode.input[z] = name
    return out, new_feeds
