#!/usr/bin/env python3
"""Write the com.microsoft contrib-op conformance suite (issue 12, item 4) as test-case folders.

    gen_contrib_suite.py OUT_DIR

ONNX Runtime's tools emit its contrib ops (transformers optimizer fusions, QOperator
quantization, MatMulNBits, LLM exports). This writes single-op cases for every op of issue 12
item 2, several per op (seeded random shapes and data, attribute variants, float16 where ONNX
Runtime's CPU EP has a float16 kernel), plus small graphs chaining them, one folder per case:

    OUT_DIR/<case>/model.onnx
    OUT_DIR/<case>/test_data_set_0/{input,output}_<K>.pb   (TensorProtos named after the values)
    OUT_DIR/<case>/tolerance.txt                             (read by vinort_tools::testcase)
    OUT_DIR/ops.tsv                                          (op, domain, its cases, or why none)
    OUT_DIR/.complete                                        (written last)

Case names are `<Op>_<variant>` (`graph_<what>` for the small graphs). Data inputs are graph
inputs; weights, scales and zero points are initializers, as the tools write them (OpenVINO's
frontend needs some of them constant). Signatures come from ONNX Runtime's ContribOperators
documentation and its registered schemas (`onnxruntime.capi.onnxruntime_pybind11_state.
get_all_operator_schema`); `onnx.defs` does not know com.microsoft.

References are onnxruntime's CPU execution provider (graph optimizations off, one thread),
never vinort. An op ONNX Runtime's CPU EP has no kernel for gets no case, since there is no
reference to hold a kernel to; ops.tsv and docs/conformance.md list it:

  - BiasAdd, BiasSplitGelu, BiasSoftmax, GroupNorm, GemmFastGelu: ONNX Runtime CPU has no
    kernel: no reference (onnxruntime 1.31.1 registers them for CUDA/ROCm/DML only).

Variants ONNX Runtime's CPU kernel refuses get no case either: Attention's 4-D mask (batch, 1,
max_sequence_length, max_sequence_length) ("4D mask in attention cpu kernel is not
supported"); GroupQueryAttention with a past and several new tokens for batch > 1; rotary
GroupQueryAttention with head_size not a multiple of 16.

"LayerNormalization (com.microsoft form)" and SimplifiedLayerNormalization are ONNX Runtime's
contrib schemas registered in the default domain: LayerNormalization at opset < 17 (before
ONNX had it, which is what the transformers optimizer emits into older models) and
SimplifiedLayerNormalization at any opset. Their cases import opset 16 and 17 respectively.

Tolerances (|got - want| <= atol + rtol * |want| for floats; integers allow atol whole steps):

  - float32: rtol 1e-3, atol 1e-4 (summation order differs between runtimes);
  - float16: rtol 1e-2, atol 2e-2 (fp16 keeps ~3 decimal digits);
  - quantized (uint8/int8) outputs of QLinear* ops, QGemm with a quantized output: atol 1,
    one quantization step. The result is a real number rounded to an integer; ONNX Runtime
    computes it through float lookup tables (QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax)
    or a fused requantization scale (QLinearAdd/Mul/Conv/AveragePool/Concat, QGemm) whose
    rounding differs from the exact product by an ulp, so a value within an ulp of a .5 tie
    lands on either side. A wrong zero point, scale or rounding rule moves many elements by
    more than one step;
  - QuantizeLinear: exact (it is a single division and round-half-to-even, as ONNX's own
    QuantizeLinear node tests are compared);
  - MatMulIntegerToFloat, QAttention, QEmbedLayerNormalization, QGemm with a float output,
    DequantizeLinear, MatMulNBits (accuracy_level unset: weights dequantized, float product):
    float32, since their integer parts are exact and the rest is float arithmetic;
  - DynamicQuantizeMatMul: rtol 1e-3 plus atol of one step of A's run-time quantization
    times the largest |dequantized B| (A's scale comes from A's range; an element at a
    rounding tie moves one step, which moves each output it feeds by at most that much);
  - DynamicQuantizeLSTM: rtol 1e-2, atol 2e-2, scripts/gen_corpus.py's dynamic int8
    tolerance: every step quantizes X and h at run time, a flipped tie feeds the recurrence.

`.complete` and the reuse rule are scripts/gen_onnx_suites.py's (it holds the shared helpers):
the stamp covers this file, that one and the package versions. Takes about 10 s.
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "models"))

import gen_onnx_suites as common  # noqa: E402

SEED = 20260512
FP32 = (1e-3, 1e-4)
FP16 = (1e-2, 2e-2)
QSTEP = (0.0, 1.0)
EXACT = (0.0, 0.0)
DYNAMIC_INT8 = (1e-2, 2e-2)
MS = "com.microsoft"

# Issue 12 item 2, in its order: (op, domain). Every one gets cases or a NO_REFERENCE reason.
OPS = [
    ("Attention", MS), ("MultiHeadAttention", MS), ("EmbedLayerNormalization", MS),
    ("SkipLayerNormalization", MS), ("SkipSimplifiedLayerNormalization", MS),
    ("SimplifiedLayerNormalization", ""), ("LayerNormalization", ""), ("BiasGelu", MS),
    ("FastGelu", MS), ("Gelu", MS), ("QuickGelu", MS), ("BiasAdd", MS), ("BiasSplitGelu", MS),
    ("BiasSoftmax", MS), ("GroupNorm", MS), ("RotaryEmbedding", MS), ("GroupQueryAttention", MS),
    ("FusedMatMul", MS), ("FusedConv", MS), ("FusedGemm", MS), ("GemmFastGelu", MS),
    ("MatMulNBits", MS), ("DynamicQuantizeMatMul", MS), ("MatMulIntegerToFloat", MS),
    ("QAttention", MS), ("QEmbedLayerNormalization", MS), ("QGemm", MS), ("QLinearAdd", MS),
    ("QLinearMul", MS), ("QLinearConcat", MS), ("QLinearGlobalAveragePool", MS),
    ("QLinearAveragePool", MS), ("QLinearSigmoid", MS), ("QLinearLeakyRelu", MS),
    ("QLinearSoftmax", MS), ("QLinearWhere", MS), ("QLinearConv", MS), ("QuantizeLinear", MS), ("DequantizeLinear", MS),
    ("DynamicQuantizeLSTM", MS),
]
NO_CPU_KERNEL = "ONNX Runtime CPU has no kernel: no reference"
NO_REFERENCE = {op: NO_CPU_KERNEL for op in ("BiasAdd", "BiasSplitGelu", "BiasSoftmax", "GroupNorm", "GemmFastGelu")}


def rng(name: str):
    """One generator per case, so a case's data does not depend on the others."""
    import numpy as np

    return np.random.default_rng([SEED, zlib.crc32(name.encode())])


class Init:
    """An initializer operand (weights, scales, zero points)."""

    def __init__(self, value):
        self.value = value


class Case:
    def __init__(self, name, model, feeds, tol):
        self.name, self.model, self.feeds, self.tol = name, model, feeds, tol


def elem(arr) -> int:
    from onnx import helper

    return helper.np_dtype_to_tensor_dtype(arr.dtype)


def tensor(name, arr):
    from onnx import numpy_helper

    return numpy_helper.from_array(arr, name)


def make_model(name, nodes, inputs, outputs, inits, onnx_opset=17, ms=True):
    """inputs: [(name, array)] graph inputs with the array's shape; outputs: [(name, elem type)]
    with the shape left to the runtime (the reference gives it)."""
    import onnx
    from onnx import helper

    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, elem(a), list(a.shape)) for n, a in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
        initializer=[tensor(n, a) for n, a in inits],
    )
    opsets = [helper.make_opsetid("", onnx_opset)]
    if ms:
        opsets.append(helper.make_opsetid(MS, 1))
    return helper.make_model(graph, opset_imports=opsets, ir_version=10,
                             producer_name="vinort scripts/gen_contrib_suite.py")


def single(name, op, operands, outputs, attrs=None, tol=FP32, domain=MS, onnx_opset=17):
    """A one-node case. operands: (input name, array | Init(array) | None for an omitted
    optional input); outputs: (name | "" for an omitted optional output, elem type)."""
    from onnx import helper

    ins, feeds, inits, node_ins = [], {}, [], []
    for n, v in operands:
        if v is None:
            node_ins.append("")
        elif isinstance(v, Init):
            inits.append((n, v.value))
            node_ins.append(n)
        else:
            ins.append((n, v))
            feeds[n] = v
            node_ins.append(n)
    while node_ins and node_ins[-1] == "":
        node_ins.pop()
    node = helper.make_node(op, node_ins, [n for n, _ in outputs], name=f"{op}_node", domain=domain, **(attrs or {}))
    model = make_model(name, [node], ins, [(n, t) for n, t in outputs if n], inits, onnx_opset, ms=domain == MS)
    return Case(name, model, feeds, tol)


def with_cast_output(case, to):
    """The case with its one output cast to `to` by an ONNX Cast (opset 21, which knows 4-bit)."""
    from onnx import helper

    g = case.model.graph
    y = g.output[0].name
    g.node[0].output[0] = f"{y}_raw"
    g.node.append(helper.make_node("Cast", [f"{y}_raw"], [y], name="read_back", to=to))
    g.output[0].type.tensor_type.elem_type = to
    case.model.opset_import[0].version = 21
    return case


# ---------------------------------------------------------------------------------------------
# data helpers
# ---------------------------------------------------------------------------------------------

F = 1  # TensorProto.FLOAT
F16 = 10
U8, I8, I32, I64, U16, I16 = 2, 3, 6, 7, 4, 5


def randn(r, *shape, scale=1.0, dtype="float32"):
    return (r.standard_normal(shape) * scale).astype(dtype)


def qrand(r, dtype, *shape):
    import numpy as np

    info = np.iinfo(dtype)
    return r.integers(info.min, info.max + 1, size=shape).astype(dtype)


def scalar(v, dtype="float32"):
    import numpy as np

    return np.array(v, dtype=dtype)


def ftype(dtype):
    return F16 if dtype == "float16" else F


def ftol(dtype):
    return FP16 if dtype == "float16" else FP32


# ---------------------------------------------------------------------------------------------
# transformer fusions
# ---------------------------------------------------------------------------------------------


def attention_cases():
    import numpy as np

    out = []
    B, S, D, N = 2, 5, 16, 2
    H = D // N

    def case(variant, mask=None, past_len=0, attrs=None, attention_bias=False, qkv=None):
        name = f"Attention_{variant}"
        r = rng(name)
        hidden = qkv or (D, D, D)
        ops = [("input", randn(r, B, S, D)), ("weights", Init(randn(r, D, sum(hidden), scale=0.3))),
               ("bias", Init(randn(r, sum(hidden), scale=0.1)))]
        ops.append(("mask_index", mask(r) if mask else None))
        ops.append(("past", randn(r, 2, B, N, past_len, H) if past_len else None))
        ops.append(("attention_bias", randn(r, 1, N, S, S + past_len) if attention_bias else None))
        outs = [("output", F)] + ([("present", F)] if past_len else [])
        a = {"num_heads": N, **(attrs or {})}
        if qkv:
            a["qkv_hidden_sizes"] = list(qkv)
        out.append(single(name, "Attention", ops, outs, a))

    case("nomask")
    case("mask1d_key_lengths", lambda r: np.array([S, 3], dtype=np.int32))
    case("mask1d_end_start", lambda r: np.array([S, 4, 0, 1], dtype=np.int32))
    case("mask2d", lambda r: np.array([[1] * S, [1, 1, 1, 0, 0]], dtype=np.int32))
    case("mask3d", lambda r: (r.random((B, S, S)) > 0.3).astype(np.int32) | np.eye(S, dtype=np.int32))
    case("unidirectional", attrs={"unidirectional": 1})
    case("past_present", lambda r: np.array([[1] * (S + 3), [1] * (S + 1) + [0] * 2], dtype=np.int32), past_len=3)
    case("unidirectional_past", past_len=4, attrs={"unidirectional": 1})
    case("attention_bias", attention_bias=True)
    case("scale_mask_filter", lambda r: np.array([[1] * S, [1, 1, 0, 0, 0]], dtype=np.int32),
         attrs={"scale": 0.5, "mask_filter_value": -1000.0})
    case("qkv_hidden_sizes", qkv=(D, D, 2 * D))
    return out


def multihead_attention_cases():
    import numpy as np

    out = []
    B, S, L, D, N = 2, 4, 6, 16, 2
    H = D // N

    def case(variant, kv_len=L, bias=False, mask=None, past=0, attrs=None, attention_bias=False):
        name = f"MultiHeadAttention_{variant}"
        r = rng(name)
        ops = [("query", randn(r, B, S, D)), ("key", randn(r, B, kv_len, D)), ("value", randn(r, B, kv_len, D)),
               ("bias", Init(randn(r, 3 * D, scale=0.1)) if bias else None),
               ("key_padding_mask", mask if mask is not None else None),
               ("attention_bias", randn(r, 1, N, S, kv_len + past) if attention_bias else None),
               ("past_key", randn(r, B, N, past, H) if past else None),
               ("past_value", randn(r, B, N, past, H) if past else None)]
        outs = [("output", F)] + ([("present_key", F), ("present_value", F)] if past else [])
        out.append(single(name, "MultiHeadAttention", ops, outs, {"num_heads": N, **(attrs or {})}))

    case("cross")
    case("self_bias", kv_len=S, bias=True)
    case("key_padding_mask_2d", mask=np.array([[1] * L, [1] * 4 + [0] * 2], dtype=np.int32))
    case("key_padding_mask_1d", mask=np.array([L, 3], dtype=np.int32))
    case("attention_bias", attention_bias=True)
    case("past_present", kv_len=S, past=3)
    case("unidirectional", kv_len=S, attrs={"unidirectional": 1})
    case("scale", attrs={"scale": 0.25})
    return out


def embed_layer_norm_cases():
    import numpy as np

    out = []
    B, S, D, V, P = 2, 6, 16, 30, 10

    def case(variant, segment=True, mask=True, sum_out=False, position_ids=False):
        name = f"EmbedLayerNormalization_{variant}"
        r = rng(name)
        ops = [("input_ids", r.integers(0, V, (B, S)).astype(np.int32)),
               ("segment_ids", r.integers(0, 2, (B, S)).astype(np.int32) if segment else None),
               ("word_embedding", Init(randn(r, V, D))), ("position_embedding", Init(randn(r, P, D))),
               ("segment_embedding", Init(randn(r, 2, D)) if segment else None),
               ("gamma", Init(randn(r, D, scale=0.5) + 1)), ("beta", Init(randn(r, D, scale=0.1))),
               ("mask", np.array([[1] * S, [1] * 4 + [0] * 2], dtype=np.int32) if mask else None),
               ("position_ids", r.integers(0, P, (B, S)).astype(np.int64).astype(np.int32) if position_ids else None)]
        outs = [("output", F), ("mask_index", I32)]
        if sum_out:
            outs.append(("embedding_sum", F))
        out.append(single(name, "EmbedLayerNormalization", ops, outs, {"epsilon": 1e-5}))

    case("segment_mask")
    case("no_segment", segment=False)
    case("embedding_sum", sum_out=True)
    case("position_ids", position_ids=True)
    return out


def skip_layer_norm_cases(simplified: bool):
    import numpy as np

    op = "SkipSimplifiedLayerNormalization" if simplified else "SkipLayerNormalization"
    out = []

    def case(variant, dtype="float32", beta=True, bias=True, skip2d=False, extra=False, shape=(2, 5, 24)):
        name = f"{op}_{variant}"
        r = rng(name)
        D = shape[-1]
        ops = [("input", randn(r, *shape, dtype=dtype)),
               ("skip", randn(r, *(shape[-2:] if skip2d else shape), dtype=dtype)),
               ("gamma", Init(randn(r, D, scale=0.5, dtype=dtype) + np.asarray(1, dtype)))]
        if not simplified:
            ops.append(("beta", Init(randn(r, D, scale=0.1, dtype=dtype)) if beta else None))
        ops.append(("bias", Init(randn(r, D, scale=0.1, dtype=dtype)) if bias else None))
        t = ftype(dtype)
        # mean / inv_std_var are float for every T (type U). An RMS norm has no mean (ONNX
        # Runtime writes zeros there): the simplified form leaves that output out.
        mean = ("", F) if simplified else ("mean", F)
        outs = [("output", t)] + ([mean, ("inv_std_var", F), ("input_skip_bias_sum", t)] if extra else [])
        out.append(single(name, op, ops, outs, {"epsilon": 1e-5}, tol=ftol(dtype)))

    if simplified:
        case("bias")
        case("no_bias", bias=False)
        case("2d_tokens", shape=(7, 32))
        case("all_outputs", extra=True)
        case("bias_fp16", dtype="float16")
        case("all_outputs_fp16", dtype="float16", extra=True)
    else:
        case("beta_bias")
        case("no_bias", bias=False)
        case("no_beta_no_bias", beta=False, bias=False)
        case("skip_2d", skip2d=True)
        case("all_outputs", extra=True)
        case("beta_bias_fp16", dtype="float16")
        case("all_outputs_fp16", dtype="float16", extra=True)
    return out


def layer_norm_cases():
    """ONNX Runtime's own LayerNormalization (default domain, opset < 17) and
    SimplifiedLayerNormalization (default domain, RMS norm)."""
    out = []
    for simplified in (False, True):
        op = "SimplifiedLayerNormalization" if simplified else "LayerNormalization"
        for variant, dtype, axis, with_b, extra in [
            ("last_axis", "float32", -1, True, False), ("axis1", "float32", 1, True, False),
            ("no_bias", "float32", -1, False, False), ("stats_outputs", "float32", -1, True, True),
            ("last_axis_fp16", "float16", -1, True, False), ("stats_outputs_fp16", "float16", -1, True, True),
        ]:
            if simplified and not with_b:
                continue  # it has no bias input
            name = f"{op}_{variant}"
            r = rng(name)
            shape = (2, 3, 16)
            norm = shape[axis:] if axis >= 0 else shape[axis:]
            ops = [("X", randn(r, *shape, scale=2, dtype=dtype)), ("scale", Init(randn(r, *norm, dtype=dtype)))]
            if not simplified:
                ops.append(("B", Init(randn(r, *norm, scale=0.1, dtype=dtype)) if with_b else None))
            t = ftype(dtype)
            outs = [("Y", t)]
            if extra:
                outs += [("inv_std_var", F)] if simplified else [("Mean", F), ("InvStdDev", F)]
            out.append(single(name, op, ops, outs, {"axis": axis, "epsilon": 1e-5}, tol=ftol(dtype), domain="",
                              onnx_opset=17 if simplified else 16))
    return out


def gelu_cases():
    out = []
    for name, op, shape, bias, attrs in [
        ("BiasGelu_3d", "BiasGelu", (2, 4, 32), True, {}),
        ("BiasGelu_2d", "BiasGelu", (5, 17), True, {}),
        ("FastGelu_bias", "FastGelu", (2, 4, 32), True, {}),
        ("FastGelu_no_bias", "FastGelu", (3, 33), False, {}),
        ("Gelu_3d", "Gelu", (2, 4, 32), False, {}),
        ("Gelu_odd", "Gelu", (7, 13), False, {}),
        ("QuickGelu_default_alpha", "QuickGelu", (2, 4, 32), False, {}),
        ("QuickGelu_alpha", "QuickGelu", (5, 19), False, {"alpha": 1.25}),
    ]:
        r = rng(name)
        ops = [("X", randn(r, *shape, scale=2))]
        if bias:
            ops.append(("bias", Init(randn(r, shape[-1]))))
        out.append(single(name, op, ops, [("Y", F)], attrs))
    return out


def rotary_cases():
    import numpy as np

    out = []

    def caches(max_len, half, dtype):
        inv = 1.0 / (10000 ** (np.arange(half) / half))
        ang = np.outer(np.arange(max_len), inv)
        return np.cos(ang).astype(dtype), np.sin(ang).astype(dtype)

    def case(variant, dtype="float32", layout="bsd", interleaved=0, pos="2d", rotary_dim=0):
        name = f"RotaryEmbedding_{variant}"
        r = rng(name)
        B, S, N, H = 2, 5, 2, 16
        half = (rotary_dim or H) // 2
        x = randn(r, *((B, S, N * H) if layout == "bsd" else (B, N, S, H)), dtype=dtype)
        if pos == "2d":
            p = np.stack([np.arange(S) + 2, np.arange(S)]).astype(np.int64)
        else:
            p = np.array([3], dtype=np.int64)
        cos, sin = caches(16, half, dtype)
        attrs = {"interleaved": interleaved}
        if rotary_dim:
            attrs.update(rotary_embedding_dim=rotary_dim, num_heads=N)
        ops = [("input", x), ("position_ids", p), ("cos_cache", Init(cos)), ("sin_cache", Init(sin))]
        out.append(single(name, "RotaryEmbedding", ops, [("output", ftype(dtype))], attrs, tol=ftol(dtype)))

    case("bsd")
    case("bnsh", layout="bnsh")
    case("interleaved", interleaved=1)
    case("position_offset", pos="offset")
    case("partial_rotary", rotary_dim=8)
    case("bsd_fp16", dtype="float16")
    case("interleaved_fp16", dtype="float16", interleaved=1)
    return out


def gqa_cases():
    import numpy as np

    out = []

    def case(variant, dtype="float32", S=4, past=0, packed=False, rotary=False, window=-1, softcap=0.0):
        name = f"GroupQueryAttention_{variant}"
        r = rng(name)
        # ONNX Runtime's rotary path wants head_size % 16 == 0.
        B, N, KV, H = 2, 4, 2, (16 if rotary else 8)
        total = past + S
        q = randn(r, B, S, N * H, dtype=dtype)
        k = randn(r, B, S, KV * H, dtype=dtype)
        v = randn(r, B, S, KV * H, dtype=dtype)
        # Both sequences use the whole buffer (seqlens_k = total - 1).
        ops = [("query", np.concatenate([q, k, v], axis=-1) if packed else q),
               ("key", None if packed else k), ("value", None if packed else v),
               ("past_key", randn(r, B, KV, past, H, dtype=dtype) if past else None),
               ("past_value", randn(r, B, KV, past, H, dtype=dtype) if past else None),
               ("seqlens_k", np.full((B,), total - 1, dtype=np.int32)),
               ("total_sequence_length", np.array(total, dtype=np.int32))]
        attrs = {"num_heads": N, "kv_num_heads": KV}
        if rotary:
            half = H // 2
            ang = np.outer(np.arange(32), 1.0 / (10000 ** (np.arange(half) / half)))
            ops += [("cos_cache", Init(np.cos(ang).astype(dtype))), ("sin_cache", Init(np.sin(ang).astype(dtype)))]
            attrs["do_rotary"] = 1
        if window > 0:
            attrs["local_window_size"] = window
        if softcap:
            attrs["softcap"] = softcap
        t = ftype(dtype)
        out.append(single(name, "GroupQueryAttention", ops, [("output", t), ("present_key", t), ("present_value", t)],
                          attrs, tol=ftol(dtype)))

    case("prompt")
    case("token_with_past", S=1, past=5)
    case("packed_qkv", packed=True)
    case("rotary_prompt", rotary=True)
    # With a past, ONNX Runtime takes several new tokens only for batch 1: one token here.
    case("rotary_token_with_past", past=3, S=1, rotary=True)
    case("local_window", S=6, window=3)
    case("softcap", softcap=5.0)
    case("prompt_fp16", dtype="float16")
    case("token_with_past_fp16", dtype="float16", S=1, past=5)
    return out


def fused_matmul_cases():
    out = []
    for variant, a, b, attrs in [
        ("alpha", (4, 6), (6, 5), {"alpha": 0.5}),
        ("transA", (6, 4), (6, 5), {"transA": 1}),
        ("transB_batched", (2, 4, 6), (2, 5, 6), {"transB": 1, "alpha": 2.0}),
        ("broadcast", (3, 2, 4, 6), (6, 7), {}),
        ("transBatchA", (4, 2, 6), (2, 6, 5), {"transBatchA": 1}),
        ("transBatchB", (2, 4, 6), (6, 2, 5), {"transBatchB": 1}),
    ]:
        name = f"FusedMatMul_{variant}"
        r = rng(name)
        out.append(single(name, "FusedMatMul", [("A", randn(r, *a)), ("B", randn(r, *b))], [("Y", F)], attrs))
    return out


def fused_conv_cases():
    out = []
    for variant, act, params, z, extra in [
        ("relu", "Relu", None, False, {}),
        ("sigmoid", "Sigmoid", None, False, {}),
        ("tanh", "Tanh", None, False, {}),
        ("leaky_relu", "LeakyRelu", [0.2], False, {"strides": [2, 2]}),
        ("clip", "Clip", [-0.5, 0.75], False, {}),
        ("hard_sigmoid", "HardSigmoid", [0.3, 0.4], False, {}),
        ("relu_sum", "Relu", None, True, {}),
        ("grouped_relu", "Relu", None, False, {"group": 2}),
    ]:
        name = f"FusedConv_{variant}"
        r = rng(name)
        C, M, g = 4, 6, extra.get("group", 1)
        attrs = {"activation": act, "kernel_shape": [3, 3], "pads": [1, 1, 1, 1], **extra}
        if params:
            attrs["activation_params"] = params
        stride = extra.get("strides", [1, 1])[0]
        ops = [("X", randn(r, 1, C, 9, 9)), ("W", Init(randn(r, M, C // g, 3, 3, scale=0.3))),
               ("B", Init(randn(r, M, scale=0.1))),
               ("Z", randn(r, 1, M, 9 // stride + (9 % stride > 0) * 0, 9 // stride) if z else None)]
        out.append(single(name, "FusedConv", ops, [("Y", F)], attrs))
    return out


def fused_gemm_cases():
    out = []
    for variant, act, extra, trans_b in [
        ("relu", "Relu", {}, 0),
        ("leaky_relu", "LeakyRelu", {"activation_alpha": 0.1}, 1),
        ("tanh_alpha_beta", "Tanh", {"alpha": 0.5, "beta": 2.0}, 0),
        ("sigmoid", "Sigmoid", {}, 1),
        ("hard_sigmoid", "HardSigmoid", {"activation_alpha": 0.3, "activation_beta": 0.4}, 0),
    ]:
        name = f"FusedGemm_{variant}"
        r = rng(name)
        M, K, N = 5, 8, 7
        ops = [("A", randn(r, M, K)), ("B", Init(randn(r, *((N, K) if trans_b else (K, N))))),
               ("C", Init(randn(r, N)))]
        out.append(single(name, "FusedGemm", ops, [("Y", F)], {"activation": act, "transB": trans_b, **extra}))
    return out


# ---------------------------------------------------------------------------------------------
# quantization
# ---------------------------------------------------------------------------------------------


def pack_bits(q, bits):
    """Packs unsigned values along the last axis, `8 / bits` per byte, first value in the low
    bits (MatMulNBits' layout for B and packed zero points)."""
    import numpy as np

    per = 8 // bits
    pad = (-q.shape[-1]) % per
    if pad:
        q = np.concatenate([q, np.zeros(q.shape[:-1] + (pad,), q.dtype)], axis=-1)
    q = q.reshape(q.shape[:-1] + (-1, per)).astype(np.uint8)
    packed = np.zeros(q.shape[:-1], np.uint8)
    for j in range(per):
        packed |= (q[..., j] << (j * bits)).astype(np.uint8)
    return packed


def matmul_nbits_cases():
    import numpy as np

    out = []

    def case(variant, bits, block, K=128, N=12, zp="packed", dtype="float32", g_idx=False, bias=False, a_shape=None):
        name = f"MatMulNBits_{variant}"
        r = rng(name)
        k_blocks = -(-K // block)
        q = r.integers(0, 2 ** bits, (N, k_blocks * block)).astype(np.uint8)
        q[:, K:] = 0
        B = pack_bits(q.reshape(N, k_blocks, block), bits)
        scales = (r.random((N, k_blocks)) * 0.05 + 0.01).astype(dtype)
        ops = [("A", randn(r, *(a_shape or (3, K)), dtype=dtype)), ("B", Init(B)), ("scales", Init(scales))]
        if zp == "packed":
            ops.append(("zero_points", Init(pack_bits(r.integers(0, 2 ** bits, (N, k_blocks)).astype(np.uint8), bits))))
        elif zp == "float":
            ops.append(("zero_points", Init((r.random((N, k_blocks)) * (2 ** bits - 1)).astype(dtype))))
        else:
            ops.append(("zero_points", None))
        ops.append(("g_idx", Init((np.arange(K) // block).astype(np.int32)) if g_idx else None))
        ops.append(("bias", Init(randn(r, N, dtype=dtype)) if bias else None))
        out.append(single(name, "MatMulNBits", ops, [("Y", ftype(dtype))],
                          {"K": K, "N": N, "bits": bits, "block_size": block}, tol=ftol(dtype)))

    for bits in (2, 4, 8):
        for block in (16, 32, 128):
            case(f"b{bits}_blk{block}_zp", bits, block)
        case(f"b{bits}_blk32_no_zp", bits, 32, zp=None)
    case("b4_blk32_float_zp", 4, 32, zp="float")
    case("b4_blk32_partial_block", 4, 32, K=80)
    case("b4_blk16_g_idx", 4, 16, g_idx=True)
    case("b4_blk32_bias_3d", 4, 32, bias=True, a_shape=(2, 3, 128))
    case("b4_blk32_fp16", 4, 32, dtype="float16")
    case("b8_blk32_no_zp_fp16", 8, 32, zp=None, dtype="float16")
    case("b4_blk32_float_zp_fp16", 4, 32, zp="float", dtype="float16")
    return out


def dynamic_quantize_matmul_cases():
    import numpy as np

    out = []
    for variant, btype, per_col, zp, bias in [
        ("s8_per_tensor", np.int8, False, False, False),
        ("s8_per_column_bias", np.int8, True, False, True),
        ("u8_zero_point", np.uint8, False, True, False),
        ("u8_per_column_zero_point_bias", np.uint8, True, True, True),
    ]:
        name = f"DynamicQuantizeMatMul_{variant}"
        r = rng(name)
        M, K, N = 4, 16, 6
        A = randn(r, 2, M, K)
        Bq = qrand(r, btype, K, N)
        bs = (r.random(N) * 0.02 + 0.005).astype(np.float32) if per_col else scalar(0.01)
        bz = (qrand(r, btype, N) if per_col else np.array(r.integers(100, 156), dtype=btype)) if zp else None
        ops = [("A", A), ("B", Init(Bq)), ("b_scale", Init(bs)), ("b_zero_point", Init(bz) if zp else None),
               ("bias", Init(randn(r, N)) if bias else None)]
        # One step of A's run-time quantization (uint8 over [min(0, A), max(0, A)], see the
        # module doc) times the largest |dequantized B|.
        a_step = (max(0.0, float(A.max())) - min(0.0, float(A.min()))) / 255
        deq = (Bq.astype(np.float64) - (bz.astype(np.float64) if zp else 0)) * bs
        out.append(single(name, "DynamicQuantizeMatMul", ops, [("Y", F)],
                          tol=(FP32[0], FP32[1] + a_step * float(np.abs(deq).max()))))
    return out


def matmul_integer_to_float_cases():
    import numpy as np

    out = []
    for variant, at, bt, per_col, zps, bias in [
        ("u8s8", np.uint8, np.int8, False, True, False),
        ("u8u8_per_column_bias", np.uint8, np.uint8, True, True, True),
        ("s8s8_no_zero_points", np.int8, np.int8, False, False, False),
        ("s8s8_per_column_bias", np.int8, np.int8, True, True, True),
    ]:
        name = f"MatMulIntegerToFloat_{variant}"
        r = rng(name)
        M, K, N = 5, 12, 7
        ops = [("A", qrand(r, at, 2, M, K)), ("B", Init(qrand(r, bt, K, N))), ("a_scale", Init(scalar(0.02))),
               ("b_scale", Init((r.random(N) * 0.02 + 0.005).astype(np.float32) if per_col else scalar(0.01))),
               ("a_zero_point", Init(np.array(r.integers(-5, 5) + (128 if at == np.uint8 else 0), dtype=at)) if zps else None),
               ("b_zero_point", Init(qrand(r, bt, N) if per_col else np.array(3, dtype=bt)) if zps else None),
               ("bias", Init(randn(r, N)) if bias else None)]
        out.append(single(name, "MatMulIntegerToFloat", ops, [("Y", F)]))
    return out


def qattention_cases():
    import numpy as np

    out = []
    B, S, D, N = 2, 4, 16, 2
    H = D // N
    for variant, wt, per_col, mask, past, uni in [
        ("u8s8", np.int8, False, False, 0, 0),
        ("u8u8_mask", np.uint8, False, True, 0, 0),
        ("per_column_weight_scale", np.int8, True, True, 0, 0),
        ("unidirectional_past", np.int8, False, False, 3, 1),
    ]:
        name = f"QAttention_{variant}"
        r = rng(name)
        ops = [("input", qrand(r, np.uint8, B, S, D)), ("weight", Init(qrand(r, wt, D, 3 * D))),
               ("bias", Init(randn(r, 3 * D, scale=0.1))), ("input_scale", Init(scalar(0.01))),
               ("weight_scale", Init((r.random(3 * D) * 0.004 + 0.001).astype(np.float32) if per_col else scalar(0.003))),
               ("mask_index", np.array([S, 2], dtype=np.int32) if mask else None),
               ("input_zero_point", Init(np.array(128, dtype=np.uint8))),
               ("weight_zero_point", Init(np.array(128 if wt == np.uint8 else 0, dtype=wt))),
               ("past", randn(r, 2, B, N, past, H) if past else None)]
        outs = [("output", F)] + ([("present", F)] if past else [])
        out.append(single(name, "QAttention", ops, outs, {"num_heads": N, "unidirectional": uni}))
    return out


def qembed_layer_norm_cases():
    import numpy as np

    out = []
    B, S, D, V, P = 2, 5, 16, 20, 8
    for variant, segment in [("segment_mask", True), ("segment_mask_other_seed", True)]:
        name = f"QEmbedLayerNormalization_{variant}"
        r = rng(name)
        u8 = lambda *s: qrand(r, np.uint8, *s)  # noqa: E731
        ops = [("input_ids", r.integers(0, V, (B, S)).astype(np.int32)),
               ("segment_ids", r.integers(0, 2, (B, S)).astype(np.int32) if segment else None),
               ("word_embedding_quant", Init(u8(V, D))), ("position_embedding_quant", Init(u8(P, D))),
               ("segment_embedding", Init(u8(2, D)) if segment else None),
               ("gamma_quant", Init(u8(D))), ("beta_quant", Init(u8(D))),
               ("mask", np.array([[1] * S, [1, 1, 1, 0, 0]], dtype=np.int32)),
               ("word_embedding_scale", Init(scalar(0.02))), ("position_embedding_scale", Init(scalar(0.01))),
               ("segment_embedding_scale", Init(scalar(0.015)) if segment else None),
               ("gamma_scale", Init(scalar(0.01))), ("beta_scale", Init(scalar(0.002))),
               ("word_embedding_zero_point", Init(np.array(128, np.uint8))),
               ("position_embedding_zero_point", Init(np.array(120, np.uint8))),
               ("segment_embedding_zero_point", Init(np.array(130, np.uint8)) if segment else None),
               ("gamma_zero_point", Init(np.array(0, np.uint8))), ("beta_zero_point", Init(np.array(128, np.uint8)))]
        out.append(single(name, "QEmbedLayerNormalization", ops, [("layernorm_out", F), ("mask_index_out", I32)],
                          {"epsilon": 1e-5}))
    return out


def qgemm_cases():
    import numpy as np

    out = []
    for variant, at, bt, quant_out, trans_b, per_col, c, alpha in [
        ("u8s8_float_out", np.uint8, np.int8, False, 0, False, False, 1.0),
        ("u8u8_float_out_bias_transB", np.uint8, np.uint8, False, 1, False, True, 1.0),
        ("u8s8_per_column_quant_out", np.uint8, np.int8, True, 0, True, True, 1.0),
        ("s8s8_quant_out_alpha", np.int8, np.int8, True, 1, False, False, 0.5),
    ]:
        name = f"QGemm_{variant}"
        r = rng(name)
        M, K, N = 4, 16, 6
        ops = [("A", qrand(r, at, M, K)), ("a_scale", Init(scalar(0.02))),
               ("a_zero_point", Init(np.array(128 if at == np.uint8 else 2, dtype=at))),
               ("B", Init(qrand(r, bt, *((N, K) if trans_b else (K, N))))),
               ("b_scale", Init((r.random(N) * 0.01 + 0.002).astype(np.float32) if per_col else scalar(0.005))),
               ("b_zero_point", Init(qrand(r, bt, N) if per_col else np.array(1, dtype=bt))),
               ("C", Init(r.integers(-2000, 2000, N).astype(np.int32)) if c else None)]
        yt = U8 if at == np.uint8 else I8
        if quant_out:
            ops += [("y_scale", Init(scalar(0.05))), ("y_zero_point", Init(np.array(128 if at == np.uint8 else 0, dtype=at)))]
        out.append(single(name, "QGemm", ops, [("Y", yt if quant_out else F)], {"transB": trans_b, "alpha": alpha},
                          tol=QSTEP if quant_out else FP32))
    return out


def qlinear_binary_cases(op):
    import numpy as np

    out = []
    # The saturating variants give C a scale too small for the result's range, so most elements
    # clamp to the type's ends (OpenVINO 2026.4.1 wraps them around instead).
    for variant, dt, bshape in [("u8", np.uint8, (2, 3, 4, 5)), ("s8", np.int8, (2, 3, 4, 5)),
                                ("u8_broadcast", np.uint8, (3, 1, 1)), ("s8_scalar_b", np.int8, ()),
                                ("u8_saturating", np.uint8, (2, 3, 4, 5)), ("s8_saturating", np.int8, (2, 3, 4, 5))]:
        name = f"{op}_{variant}"
        r = rng(name)
        z = 128 if dt == np.uint8 else 0
        c_scale = 0.05 if op == "QLinearAdd" else 0.1
        if variant.endswith("saturating"):
            c_scale /= 20
        ops = [("A", qrand(r, dt, 2, 3, 4, 5)), ("A_scale", Init(scalar(0.03))), ("A_zero_point", Init(np.array(z + 3, dt))),
               ("B", qrand(r, dt, *bshape)), ("B_scale", Init(scalar(0.02))), ("B_zero_point", Init(np.array(z - 5, dt))),
               ("C_scale", Init(scalar(c_scale))), ("C_zero_point", Init(np.array(z, dt)))]
        out.append(single(name, op, ops, [("C", elem(np.zeros(0, dt)))], tol=QSTEP))
    return out


def qlinear_unary_cases():
    import numpy as np

    out = []
    for op, variant, dt, attrs in [
        ("QLinearSigmoid", "u8", np.uint8, {}), ("QLinearSigmoid", "s8", np.int8, {}),
        ("QLinearLeakyRelu", "u8", np.uint8, {"alpha": 0.1}), ("QLinearLeakyRelu", "s8", np.int8, {"alpha": 0.3}),
    ]:
        name = f"{op}_{variant}"
        r = rng(name)
        z = 128 if dt == np.uint8 else 0
        y_scale, y_z = (1 / 256, 0 if dt == np.uint8 else -128) if op == "QLinearSigmoid" else (0.04, z)
        ops = [("X", qrand(r, dt, 3, 4, 7)), ("X_scale", Init(scalar(0.05))), ("X_zero_point", Init(np.array(z + 2, dt))),
               ("Y_scale", Init(scalar(y_scale))), ("Y_zero_point", Init(np.array(y_z, dt)))]
        out.append(single(name, op, ops, [("Y", elem(np.zeros(0, dt)))], attrs, tol=QSTEP))
    return out


def qlinear_where_cases():
    """QLinearWhere (quantize_static QOperator writes it for Where with ForceQuantizeNoInputCheck):
    X and Y requantized to Z's scale and zero point, chosen by a broadcast condition."""
    import numpy as np

    out = []
    for variant, dt, shapes, same in [("u8", np.uint8, ((2, 3, 4), (2, 3, 4), (2, 3, 4)), False),
                                      ("u8_same_params", np.uint8, ((3, 5), (3, 5), (3, 5)), True),
                                      ("s8", np.int8, ((2, 3, 4), (2, 3, 4), (2, 3, 4)), False),
                                      ("s8_broadcast", np.int8, ((2, 1, 4), (3, 1), (1, 3, 4)), False)]:
        name = f"QLinearWhere_{variant}"
        r = rng(name)
        z = 128 if dt == np.uint8 else 0
        x_p, y_p = ((0.05, z), (0.05, z)) if same else ((0.05, z + 3), (0.02, z - 10))
        ops = [("condition", r.random(shapes[0]) > 0.5),
               ("X", qrand(r, dt, *shapes[1])), ("X_scale", Init(scalar(x_p[0]))), ("X_zero_point", Init(np.array(x_p[1], dt))),
               ("Y", qrand(r, dt, *shapes[2])), ("Y_scale", Init(scalar(y_p[0]))), ("Y_zero_point", Init(np.array(y_p[1], dt))),
               ("Z_scale", Init(scalar(0.05 if same else 0.03))),
               ("Z_zero_point", Init(np.array(z + (0 if same or variant == "s8_broadcast" else 7), dt)))]
        out.append(single(name, "QLinearWhere", ops, [("Z", elem(np.zeros(0, dt)))], tol=QSTEP))
    return out


def qlinear_softmax_cases():
    import numpy as np

    out = []
    for variant, dt, opset, axis in [("u8_opset13", np.uint8, 13, -1), ("s8_opset13", np.int8, 13, 1),
                                     ("u8_opset12_flatten", np.uint8, 12, 1)]:
        name = f"QLinearSoftmax_{variant}"
        r = rng(name)
        z = 128 if dt == np.uint8 else 0
        ops = [("X", qrand(r, dt, 2, 3, 6)), ("X_scale", Init(scalar(0.015))), ("x_zero_point", Init(np.array(z, dt))),
               ("y_scale", Init(scalar(1 / 256))), ("y_zero_point", Init(np.array(0 if dt == np.uint8 else -128, dt)))]
        out.append(single(name, "QLinearSoftmax", ops, [("Y", elem(np.zeros(0, dt)))], {"opset": opset, "axis": axis},
                          tol=QSTEP))
    return out


def qlinear_concat_cases():
    import numpy as np

    out = []
    for variant, dt, axis, scales in [("u8_axis1", np.uint8, 1, (0.05, 0.02, 0.1)),
                                      ("s8_axis_last", np.int8, -1, (0.03, 0.03, 0.03)),
                                      ("u8_same_scale", np.uint8, 0, (0.05, 0.05, 0.05))]:
        name = f"QLinearConcat_{variant}"
        r = rng(name)
        z = 128 if dt == np.uint8 else 0
        ops = [("Y_scale", Init(scalar(0.06))), ("Y_zero_point", Init(np.array(z, dt)))]
        for i, s in enumerate(scales):
            shape = [2, 3, 4]
            shape[axis] = i + 1
            ops += [(f"X{i}", qrand(r, dt, *shape)), (f"X{i}_scale", Init(scalar(s))),
                    (f"X{i}_zero_point", Init(np.array(z + i, dt)))]
        out.append(single(name, "QLinearConcat", ops, [("Y", elem(np.zeros(0, dt)))], {"axis": axis}, tol=QSTEP))
    return out


def qlinear_pool_cases():
    import numpy as np

    out = []
    for variant, dt, cl in [("u8_nchw", np.uint8, 0), ("u8_nhwc", np.uint8, 1), ("s8_nchw", np.int8, 0)]:
        name = f"QLinearGlobalAveragePool_{variant}"
        r = rng(name)
        z = 128 if dt == np.uint8 else 0
        ops = [("X", qrand(r, dt, *((2, 5, 6, 3) if cl else (2, 3, 5, 6)))), ("x_scale", Init(scalar(0.05))),
               ("x_zero_point", Init(np.array(z + 1, dt))), ("y_scale", Init(scalar(0.02))),
               ("y_zero_point", Init(np.array(z - 2, dt)))]
        out.append(single(name, "QLinearGlobalAveragePool", ops, [("Y", elem(np.zeros(0, dt)))], {"channels_last": cl},
                          tol=QSTEP))
    for variant, dt, attrs in [
        ("u8_k3_s2", np.uint8, {"kernel_shape": [3, 3], "strides": [2, 2]}),
        ("u8_pads_count_include_pad", np.uint8, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
        ("s8_pads_exclude_pad_ceil", np.int8, {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 0, 0],
                                                "ceil_mode": 1}),
        ("u8_nhwc", np.uint8, {"kernel_shape": [2, 2], "channels_last": 1}),
        ("s8_k3_s2", np.int8, {"kernel_shape": [3, 3], "strides": [2, 2]}),
    ]:
        name = f"QLinearAveragePool_{variant}"
        r = rng(name)
        z = 128 if dt == np.uint8 else 0
        ops = [("X", qrand(r, dt, *((1, 7, 7, 3) if attrs.get("channels_last") else (1, 3, 7, 7)))),
               ("x_scale", Init(scalar(0.05))), ("x_zero_point", Init(np.array(z + 1, dt))),
               ("y_scale", Init(scalar(0.04))), ("y_zero_point", Init(np.array(z - 2, dt)))]
        out.append(single(name, "QLinearAveragePool", ops, [("Y", elem(np.zeros(0, dt)))], attrs, tol=QSTEP))
    return out


def qlinear_conv_cases():
    import numpy as np

    out = []
    for variant, xt, wt, attrs, bias, per_ch in [
        ("u8s8_nhwc_bias", np.uint8, np.int8, {"channels_last": 1}, True, False),
        ("u8u8_nhwc_strides", np.uint8, np.uint8, {"channels_last": 1, "strides": [2, 2]}, False, False),
        ("s8s8_nhwc_per_channel", np.int8, np.int8, {"channels_last": 1}, True, True),
        ("u8s8_nhwc_depthwise", np.uint8, np.int8, {"channels_last": 1, "group": 4}, True, False),
        ("u8s8_nchw", np.uint8, np.int8, {}, True, False),
    ]:
        name = f"QLinearConv_{variant}"
        r = rng(name)
        C, M, g = 4, (4 if attrs.get("group") else 6), attrs.get("group", 1)
        xz = 128 if xt == np.uint8 else 0
        x_shape = (1, 9, 9, C) if attrs.get("channels_last") else (1, C, 9, 9)
        ops = [("x", qrand(r, xt, *x_shape)), ("x_scale", Init(scalar(0.02))), ("x_zero_point", Init(np.array(xz, xt))),
               ("w", Init(qrand(r, wt, M, C // g, 3, 3))),
               ("w_scale", Init((r.random(M) * 0.01 + 0.002).astype(np.float32) if per_ch else scalar(0.005))),
               ("w_zero_point", Init(np.zeros(M, wt) if per_ch else np.array(128 if wt == np.uint8 else 0, wt))),
               ("y_scale", Init(scalar(0.2))), ("y_zero_point", Init(np.array(xz, xt))),
               ("B", Init(r.integers(-500, 500, M).astype(np.int32)) if bias else None)]
        out.append(single(name, "QLinearConv", ops, [("y", elem(np.zeros(0, xt)))],
                          {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], **attrs}, tol=QSTEP))
    return out


def quantize_linear_cases():
    import ml_dtypes
    import numpy as np

    out = []
    for variant, qt, axis in [("u8", np.uint8, None), ("s8_per_axis", np.int8, 1), ("u16", np.uint16, None),
                              ("s16_per_axis", np.int16, 0), ("u4", ml_dtypes.uint4, None),
                              ("s4_per_axis", ml_dtypes.int4, 1)]:
        for op in ("QuantizeLinear", "DequantizeLinear"):
            name = f"{op}_{variant}"
            r = rng(name)
            shape = (3, 4, 5)
            info = ml_dtypes.iinfo(qt) if qt in (ml_dtypes.uint4, ml_dtypes.int4) else np.iinfo(qt)
            n = shape[axis] if axis is not None else None
            step = 4.0 / (int(info.max) - int(info.min))
            scale = (r.random(n) * step + step).astype(np.float32) if n else scalar(step)
            mid = (int(info.max) + int(info.min)) // 2
            zp = (r.integers(mid - 2, mid + 3, n) if n else np.array(mid + 1)).astype(qt)
            attrs = {"axis": axis} if axis is not None else {}
            four = qt in (ml_dtypes.uint4, ml_dtypes.int4)
            if op == "QuantizeLinear":
                ops = [("x", randn(r, *shape, scale=1.5)), ("y_scale", Init(scale)), ("y_zero_point", Init(zp))]
                case = single(name, op, ops, [("y", elem(np.zeros(0, qt)))], attrs, tol=EXACT)
                if four:
                    # onnxruntime's Python API cannot return int4 tensors: the case reads them
                    # back through ONNX's Cast (opset 21) to 8 bits, which is exact.
                    case = with_cast_output(case, I8 if qt == ml_dtypes.int4 else U8)
                out.append(case)
            else:
                x = r.integers(int(info.min), int(info.max) + 1, shape).astype(qt)
                # ... nor take them as inputs: 4-bit x is an initializer.
                ops = [("x", Init(x) if four else x), ("x_scale", Init(scale)), ("x_zero_point", Init(zp))]
                out.append(single(name, op, ops, [("y", F)], attrs))
    # Ties: every x / scale is exactly n + 1/2 (scale a power of two), which ONNX rounds to the
    # even n; the ONNX-domain probe found OpenVINO rounding them otherwise.
    for variant, qt in [("u8_ties", np.uint8), ("s8_ties", np.int8)]:
        name = f"QuantizeLinear_{variant}"
        r = rng(name)
        info = np.iinfo(qt)
        n = r.integers(int(info.min), int(info.max), (4, 6))
        ops = [("x", ((n + 0.5) * 0.25).astype(np.float32)), ("y_scale", Init(scalar(0.25))),
               ("y_zero_point", Init(np.array(0, qt)))]
        out.append(single(name, "QuantizeLinear", ops, [("y", elem(np.zeros(0, qt)))], tol=EXACT))
    name = "DequantizeLinear_s32_per_tensor"
    r = rng(name)
    ops = [("x", r.integers(-(2 ** 20), 2 ** 20, (4, 6)).astype(np.int32)), ("x_scale", Init(scalar(1e-4))),
           ("x_zero_point", Init(np.array(0, np.int32)))]
    out.append(single(name, "DequantizeLinear", ops, [("y", F)]))
    return out


def dynamic_quantize_lstm_cases():
    import numpy as np

    out = []
    T, Bt, I, Hd = 5, 2, 8, 6
    for variant, direction, wt, per_ch, extras in [
        ("forward_s8", "forward", np.int8, False, False),
        ("bidirectional_u8", "bidirectional", np.uint8, False, False),
        ("reverse_s8_per_channel", "reverse", np.int8, True, False),
        ("bidirectional_s8_initial_state_lens", "bidirectional", np.int8, False, True),
    ]:
        name = f"DynamicQuantizeLSTM_{variant}"
        r = rng(name)
        D = 2 if direction == "bidirectional" else 1
        sshape = (D, 4 * Hd) if per_ch else (D,)
        wz = 128 if wt == np.uint8 else 0
        ops = [("X", randn(r, T, Bt, I)), ("W", Init(qrand(r, wt, D, I, 4 * Hd))), ("R", Init(qrand(r, wt, D, Hd, 4 * Hd))),
               ("B", Init(randn(r, D, 8 * Hd, scale=0.1))),
               ("sequence_lens", np.array([T, 3], np.int32) if extras else None),
               ("initial_h", randn(r, D, Bt, Hd, scale=0.5) if extras else None),
               ("initial_c", randn(r, D, Bt, Hd, scale=0.5) if extras else None),
               ("P", None),
               ("W_scale", Init((r.random(sshape) * 0.004 + 0.002).astype(np.float32))),
               ("W_zero_point", Init(np.full(sshape, wz, wt))),
               ("R_scale", Init((r.random(sshape) * 0.004 + 0.002).astype(np.float32))),
               ("R_zero_point", Init(np.full(sshape, wz, wt)))]
        out.append(single(name, "DynamicQuantizeLSTM", ops, [("Y", F), ("Y_h", F), ("Y_c", F)],
                          {"hidden_size": Hd, "direction": direction}, tol=DYNAMIC_INT8))
    return out


# ---------------------------------------------------------------------------------------------
# small graphs
# ---------------------------------------------------------------------------------------------


def graph_cases():
    """Chains as the tools emit them: a fused BERT layer, a QOperator CNN block, an LLM block."""
    import numpy as np
    from onnx import helper

    out = []
    n = helper.make_node

    # EmbedLayerNormalization -> Attention (1-D mask from the embedding) -> SkipLayerNormalization
    # -> MatMul + BiasGelu -> MatMul -> SkipLayerNormalization: transformers optimizer's BERT.
    name = "graph_bert_layer"
    r = rng(name)
    B, S, D, V, P, N = 2, 6, 16, 30, 8, 2
    inits = [("we", randn(r, V, D)), ("pe", randn(r, P, D)), ("se", randn(r, 2, D)), ("g0", randn(r, D, scale=0.2) + 1),
             ("b0", randn(r, D, scale=0.1)), ("qkv_w", randn(r, D, 3 * D, scale=0.3)), ("qkv_b", randn(r, 3 * D, scale=0.1)),
             ("o_w", randn(r, D, D, scale=0.3)), ("o_b", randn(r, D, scale=0.1)), ("g1", randn(r, D, scale=0.2) + 1),
             ("b1", randn(r, D, scale=0.1)), ("f1_w", randn(r, D, 4 * D, scale=0.3)), ("f1_b", randn(r, 4 * D, scale=0.1)),
             ("f2_w", randn(r, 4 * D, D, scale=0.2)), ("f2_b", randn(r, D, scale=0.1)), ("g2", randn(r, D, scale=0.2) + 1),
             ("b2", randn(r, D, scale=0.1))]
    nodes = [
        n("EmbedLayerNormalization", ["ids", "seg", "we", "pe", "se", "g0", "b0", "mask"], ["emb", "mask_index"],
          domain=MS, epsilon=1e-12),
        n("Attention", ["emb", "qkv_w", "qkv_b", "mask_index"], ["att"], domain=MS, num_heads=N),
        n("MatMul", ["att", "o_w"], ["att_o"]),
        n("SkipLayerNormalization", ["att_o", "emb", "g1", "b1", "o_b"], ["ln1"], domain=MS, epsilon=1e-12),
        n("MatMul", ["ln1", "f1_w"], ["f1"]),
        n("BiasGelu", ["f1", "f1_b"], ["gelu"], domain=MS),
        n("MatMul", ["gelu", "f2_w"], ["f2"]),
        n("SkipLayerNormalization", ["f2", "ln1", "g2", "b2", "f2_b"], ["y"], domain=MS, epsilon=1e-12),
    ]
    feeds = {"ids": r.integers(0, V, (B, S)).astype(np.int32), "seg": r.integers(0, 2, (B, S)).astype(np.int32),
             "mask": np.array([[1] * S, [1] * 4 + [0] * 2], np.int32)}
    model = make_model(name, nodes, list(feeds.items()), [("y", F)], inits)
    out.append(Case(name, model, feeds, FP32))

    # QuantizeLinear -> QLinearConv (NHWC) -> QLinearAdd (residual) -> QLinearGlobalAveragePool
    # -> DequantizeLinear: quantize_static's QOperator format.
    name = "graph_qoperator_cnn"
    r = rng(name)
    C = 4
    q = lambda v, t=np.uint8: np.array(v, t)  # noqa: E731
    inits = [("xs", scalar(0.02)), ("xz", q(128)), ("w", qrand(r, np.int8, C, C, 3, 3)), ("ws", scalar(0.01)),
             ("wz", q(0, np.int8)), ("cs", scalar(0.05)), ("cz", q(120)), ("cb", r.integers(-300, 300, C).astype(np.int32)),
             ("as", scalar(0.06)), ("az", q(125)), ("ps", scalar(0.03)), ("pz", q(128))]
    nodes = [
        n("QuantizeLinear", ["x", "xs", "xz"], ["xq"], domain=MS),
        n("QLinearConv", ["xq", "xs", "xz", "w", "ws", "wz", "cs", "cz", "cb"], ["c"], domain=MS, channels_last=1,
          kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("QLinearAdd", ["c", "cs", "cz", "xq", "xs", "xz", "as", "az"], ["a"], domain=MS),
        n("QLinearGlobalAveragePool", ["a", "as", "az", "ps", "pz"], ["p"], domain=MS, channels_last=1),
        n("DequantizeLinear", ["p", "ps", "pz"], ["y"], domain=MS),
    ]
    feeds = {"x": randn(r, 1, 8, 8, C)}
    model = make_model(name, nodes, list(feeds.items()), [("y", F)], inits)
    # One step of the last quantized tensor (ps): the chain's rounding is that of its ops.
    out.append(Case(name, model, feeds, (0.0, 0.03 * (1 + 1e-6))))

    # SimplifiedLayerNormalization -> MatMulNBits (q, k, v) -> RotaryEmbedding -> GroupQueryAttention
    # -> MatMulNBits -> SkipSimplifiedLayerNormalization: an LLM decoder block after the
    # 4-bit quantizer.
    name = "graph_llm_block"
    r = rng(name)
    B, S, D, N, KV, H, blk = 1, 4, 32, 4, 2, 8, 16
    inits = [("ln_w", randn(r, D, scale=0.2) + 1), ("ln2_w", randn(r, D, scale=0.2) + 1), ("pos", np.arange(S, dtype=np.int64)[None])]
    half = H // 2
    ang = np.outer(np.arange(16), 1.0 / (10000 ** (np.arange(half) / half)))
    inits += [("cos", np.cos(ang).astype(np.float32)), ("sin", np.sin(ang).astype(np.float32)),
              ("seqlens", np.full((B,), S - 1, np.int32)), ("total", np.array(S, np.int32))]
    nodes = [n("SimplifiedLayerNormalization", ["x", "ln_w"], ["h"], axis=-1, epsilon=1e-6)]
    for proj, out_dim in (("q", N * H), ("k", KV * H), ("v", KV * H), ("o", D)):
        kb = D // blk
        qv = r.integers(0, 16, (out_dim, kb * blk)).astype(np.uint8)
        inits += [(f"{proj}_B", pack_bits(qv.reshape(out_dim, kb, blk), 4)),
                  (f"{proj}_s", (r.random((out_dim, kb)) * 0.05 + 0.01).astype(np.float32))]
        src = "att" if proj == "o" else "h"
        nodes.append(n("MatMulNBits", [src, f"{proj}_B", f"{proj}_s"], [f"{proj}_p"], domain=MS, K=D, N=out_dim, bits=4,
                       block_size=blk))
    nodes += [
        n("RotaryEmbedding", ["q_p", "pos", "cos", "sin"], ["q_r"], domain=MS),
        n("RotaryEmbedding", ["k_p", "pos", "cos", "sin"], ["k_r"], domain=MS),
        n("GroupQueryAttention", ["q_r", "k_r", "v_p", "", "", "seqlens", "total"], ["att", "present_k", "present_v"],
          domain=MS, num_heads=N, kv_num_heads=KV),
        n("SkipSimplifiedLayerNormalization", ["o_p", "x", "ln2_w"], ["y"], domain=MS, epsilon=1e-6),
    ]
    feeds = {"x": randn(r, B, S, D)}
    model = make_model(name, nodes, list(feeds.items()), [("y", F), ("present_k", F), ("present_v", F)], inits)
    out.append(Case(name, model, feeds, FP32))
    return out


BUILDERS = [
    attention_cases, multihead_attention_cases, embed_layer_norm_cases,
    lambda: skip_layer_norm_cases(False), lambda: skip_layer_norm_cases(True), layer_norm_cases, gelu_cases,
    rotary_cases, gqa_cases, fused_matmul_cases, fused_conv_cases, fused_gemm_cases, matmul_nbits_cases,
    dynamic_quantize_matmul_cases, matmul_integer_to_float_cases, qattention_cases, qembed_layer_norm_cases,
    qgemm_cases, lambda: qlinear_binary_cases("QLinearAdd"), lambda: qlinear_binary_cases("QLinearMul"),
    qlinear_concat_cases, qlinear_pool_cases, qlinear_unary_cases, qlinear_softmax_cases, qlinear_where_cases, qlinear_conv_cases,
    quantize_linear_cases, dynamic_quantize_lstm_cases, graph_cases,
]


# ---------------------------------------------------------------------------------------------
# references and output
# ---------------------------------------------------------------------------------------------


def reference_outputs(model, feeds):
    """onnxruntime CPU EP, optimizations off, one thread."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    # uint8 x int8 products are exact in ONNX Runtime only on VNNI CPUs: see models/exact_int8.py.
    import exact_int8

    model, feeds = exact_int8.u8u8_equivalent(model, feeds)
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def case_ops(model):
    """The ops of OPS a case's graph holds."""
    known = {(op, dom) for op, dom in OPS}
    return sorted({n.op_type for n in model.graph.node if (n.op_type, n.domain) in known})


def write_case(out: Path, case: Case) -> None:
    import numpy as np
    from onnx import numpy_helper

    d = out / case.name
    d.mkdir()
    (d / "model.onnx").write_bytes(case.model.SerializeToString(deterministic=True))
    common.write_tolerance(d, *case.tol)
    ds = d / "test_data_set_0"
    ds.mkdir()
    try:
        values = reference_outputs(case.model, case.feeds)
    except Exception as e:  # noqa: BLE001 - the case is wrong, not the runtime: say which
        raise SystemExit(f"{case.name}: onnxruntime refuses the model: {e}") from e
    # input_K follows graph.input order (every graph input is fed).
    for k, vi in enumerate(case.model.graph.input):
        (ds / f"input_{k}.pb").write_bytes(numpy_helper.from_array(case.feeds[vi.name], vi.name).SerializeToString())
    for k, (vi, value) in enumerate(zip(case.model.graph.output, values)):
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise SystemExit(f"{case.name}: output {vi.name} is not finite")
        (ds / f"output_{k}.pb").write_bytes(numpy_helper.from_array(value, vi.name).SerializeToString())


def fill(tmp: Path) -> int:
    import onnxruntime

    onnxruntime.set_default_logger_severity(3)
    cases = [c for build in BUILDERS for c in build()]
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate case names")
    per_op = {op: [] for op, _ in OPS}
    for case in cases:
        write_case(tmp, case)
        for op in case_ops(case.model):
            per_op[op].append(case.name)
    rows = ["# op\tdomain\tcases (space separated)\twhy there are none (empty when there are cases)"]
    for op, dom in OPS:
        why = NO_REFERENCE.get(op, "")
        if bool(per_op[op]) == bool(why):
            raise SystemExit(f"{op}: {len(per_op[op])} cases and no-reference reason {why!r}: exactly one of the two")
        rows.append(f"{op}\t{dom}\t{' '.join(per_op[op])}\t{why}")
    (tmp / "ops.tsv").write_text("\n".join(rows) + "\n")
    fp16 = sum(1 for c in cases if "fp16" in c.name)
    common.log(f"{len(cases)} cases ({fp16} float16) over {sum(1 for v in per_op.values() if v)} ops")
    return len(cases)


def main(argv: list[str]) -> int:
    sources = [Path(__file__).resolve(), Path(common.__file__).resolve(), REPO / "models" / "exact_int8.py"]
    return common.generator_main(argv, __doc__, "the contrib-op suite", sources, fill, fixed=frozenset({"ops.tsv"}))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
