#!/usr/bin/env python3
"""Write vinort's corpus of real-world model forms as test-case folders.

    gen_corpus.py OUT_DIR

Real models reach vinort in forms made by the tools users use, not as the plain float graphs
of models/generate.py and models/generate_bench.py: fused by onnxruntime.transformers,
quantized by onnxruntime.quantization, converted to float16, exported with model-local
functions, declaring repeated `?` dims, overriding initializers. This builds each form from
the repository's generated networks (builders imported from models/, never copied; the
GPT-2 and ViT builders live here) and writes one folder per case:

    OUT_DIR/<case>/model.onnx
    OUT_DIR/<case>/test_data_set_<N>/{input,output}_<K>.pb   (TensorProtos named after the values)
    OUT_DIR/<case>/tolerance.txt                               (read by vinort_tools::testcase)
    OUT_DIR/.complete                                          (written last)

ONNX Runtime's own tools, applied to networks built here the way torch.onnx exports them
(their patterns are the ones onnxruntime.transformers' fusion code matches, and the generator
fails if Attention or SkipLayerNormalization is not fused):

  base network (builder)                     case                       com.microsoft ops
  BERT, 2 layers, hidden 64                  bert_fused                 Attention, BiasGelu,
  (generate_bench.build_bert, torch_export)                             EmbedLayerNormalization,
                                                                        SkipLayerNormalization
  GPT-2 decoder, 2 layers, hidden 64         gpt2_fused                 Attention (unidirectional),
  (base_gpt2)                                                           EmbedLayerNormalization,
                                                                        FastGelu, SkipLayerNormalization
  ViT, 32x32 image, 8x8 patches, hidden 64   vit_fused                  Attention, BiasGelu,
  (base_vit)                                                            SkipLayerNormalization
  each of the three fused models             <base>_fused_fp16          the same, in float16
                                             <base>_fused_dynamic_int8  Attention -> QAttention; BERT's
                                                                        EmbedLayerNormalization ->
                                                                        QEmbedLayerNormalization (GPT-2's
                                                                        stays float); the rest as fused.
                                                                        MatMul -> DynamicQuantizeLinear +
                                                                        MatMulInteger (ViT's Conv ->
                                                                        ConvInteger)
                                             <base>_fused_matmul4bits   constant-weight MatMul ->
                                                                        MatMulNBits; the rest as fused
  MobileNetV2 224 (generate_bench)           mobilenetv2_qoperator_     QLinearAdd, QLinearGlobalAveragePool,
                                             per_channel_u8s8           QGemm (Conv -> ONNX's QLinearConv)

The tools: optimizer.optimize_model(model_type=bert|gpt2|vit, num_heads=4, hidden_size=64,
opt_level=0: the ONNX-level fusions only, as level 1 imports torch);
float16.convert_float_to_float16(keep_io_types=True); quantize_dynamic (int8 weights, with
DefaultTensorType FLOAT for the contrib ops' untyped outputs); MatMulNBitsQuantizer (4 bits,
symmetric, blocks of 32, accuracy_level unset); quantize_static in QOperator format
(per-channel int8 weights, uint8 activations, calibrated on seeded random images). The older
forms (QDQ, dynamic int8 and float16 of plain graphs) hold no com.microsoft op except
DynamicQuantizeLSTM in crnn_bilstm_dynamic_int8. docs/suites.md lists each case's
com.microsoft ops as read from the files.

Reference outputs come from onnxruntime's CPU execution provider with graph optimizations off
and one thread (models/generate.py's `reference_outputs`), never from vinort. Weights, inputs
and calibration data come from fixed seeds, so the output is reproducible.

Tolerances (|got - want| <= atol + rtol * |want|):

  - float32 forms: rtol 1e-3, atol 1e-4 (summation order differs between runtimes);
  - float16 forms: rtol 1e-2, atol 2e-2 (fp16 keeps ~3 decimal digits and its rounding
    compounds through the layers);
  - static QDQ int8 forms: atol = QDQ_STEPS (3) quantization steps of the output's scale (the
    scale of the DequantizeLinear producing the output), rtol 0. Every quantized activation is
    rounded to an integer; a runtime that fuses the scales differently (real int8 kernels
    instead of dequantize-compute-quantize) lands on the other side of some rounding ties, and
    each flip feeds the next layer. Measured on mobilenetv2_qdq_per_channel_u8s8 against this
    reference: ONNX Runtime's own fused kernels (QLinearConv, ORT_ENABLE_ALL) differ by up to
    2 steps (346 of 1000 logits by one, 4 by two), native OpenVINO 2026.4.1 by up to 2 (408
    and 6); the 64x64 CNNs by at most 1. Three steps keep one step of margin over that, while
    a real error (a wrong zero point, per-channel axis or rounding rule) moves most outputs by
    many steps;
  - dynamic int8 forms: the output is float (MatMulInteger/ConvInteger results rescaled), so
    there is no output step. DynamicQuantizeLinear picks its scale from the data at run time;
    a tie flipped in it moves one int8 activation by one step, which shifts a dot product by
    at most that step times the weight's magnitude. rtol 1e-2 and atol 2e-2 cover a few such
    flips after LayerNormalization/LogSoftmax renormalize; a wrong rounding rule (half away
    from zero instead of half to even) breaks it on many elements at once. The fused
    transformers' QAttention quantizes its input the same way (per tensor, from the data),
    and QEmbedLayerNormalization dequantizes uint8 tables without rounding anything at run
    time, so the same tolerance applies;
  - 4-bit forms (MatMulNBits): float32's, because nothing is rounded at run time: with
    accuracy_level unset the activations stay float32 and each weight dequantizes exactly
    ((q - 8) * scale: a small integer times a float32 scale is one rounding, the same in every
    runtime). Measured: onnxruntime's MatMulNBits output differs from the same model with the
    dequantized weights in a float32 MatMul by at most 2.4e-7 on all three networks;
  - QOperator int8 form: QDQ_STEPS output steps, as the static QDQ forms (the reference here
    is onnxruntime's QLinear kernels themselves; a runtime that dequantizes, computes in float
    and requantizes flips the same rounding ties the other way).

`.complete` and the reuse rule are those of scripts/gen_onnx_suites.py (it holds the shared
helpers): the stamp covers this file, that one, models/generate.py, models/generate_bench.py
and the versions of numpy, onnx, onnxruntime and onnx-ir.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "models"))

import gen_onnx_suites as common  # noqa: E402

SEED = 20251124
FP32 = (1e-3, 1e-4)
FP16 = (1e-2, 2e-2)
DYNAMIC_INT8 = (1e-2, 2e-2)
NBITS = FP32
QDQ_STEPS = 3
NBITS_BLOCK = 32
OPSET = 17
# What the stamp records besides the generators: onnx-ir is what MatMulNBitsQuantizer edits with.
PACKAGES = common.PACKAGES + ("onnx-ir",)


def rng(name: str):
    """One generator per case, so a case's data does not depend on the others."""
    import zlib

    import numpy as np

    return np.random.default_rng([SEED, zlib.crc32(name.encode())])


# ---------------------------------------------------------------------------------------------
# base networks
# ---------------------------------------------------------------------------------------------


def base_cnn():
    """models/generate.py's mobilenetv2_tiny and its input."""
    import generate

    import numpy as np

    model, feeds = generate.build_mobilenetv2_tiny(np.random.default_rng(generate.SEED))
    return model, feeds


def base_bert():
    """models/generate.py's bert_tiny and its inputs. Its builder draws after the CNN's in
    generate.py's main, so the same generator is advanced the same way."""
    import generate

    import numpy as np

    r = np.random.default_rng(generate.SEED)
    generate.build_mobilenetv2_tiny(r)
    return generate.build_bert_tiny(r)


def base_mobilenetv2():
    """models/generate_bench.py's MobileNetV2 1.0 at 224x224 (BN folded, logits out): the
    network of the QDQ model in issue 11's first row, about 14 MB in float."""
    import generate_bench

    return generate_bench.build_mobilenetv2(generate_bench.model_rng("mobilenetv2"))


def base_bert_fusable():
    """models/generate_bench.py's BERT encoder, small (2 layers, hidden 64, 4 heads, FFN 128,
    sequence 32, vocabulary 1536: its test ids are drawn from 1000 up), with position ids and
    attention mask as torch.onnx exports them, which onnxruntime.transformers'
    EmbedLayerNormalization and Attention fusions require. Inputs input_ids, attention_mask,
    token_type_ids (8 padding positions masked); outputs last_hidden_state, pooler_output."""
    import generate_bench

    return generate_bench.build_bert(generate_bench.model_rng("bert_fusable"), "bert_fusable", layers=2,
                                     hidden=64, heads=4, ffn=128, seq=32, vocab=1536, max_positions=64,
                                     padding=8, torch_export=True)


def base_gpt2(name: str = "gpt2_tiny", layers: int = 2, hidden: int = 64, heads: int = 4, seq: int = 16,
              vocab: int = 256, max_positions: int = 32):
    """A GPT-2 decoder written the way torch.onnx exports Hugging Face's GPT2LMHeadModel
    (no past, one input, one output): token + position embeddings (Gather, positions from
    Range over the input's length), pre-LN blocks whose Conv1D projections are
    Reshape/Gemm/Reshape (`addmm(bias, x.view(-1, n), W)`), fused QKV Split into heads, scores
    Div by sqrt(head size), the causal mask as `where(bias[:, :, k-q:k, :k], w, finfo.min)`
    with the query/key lengths read off the scores' Shape (Slice/Squeeze/Sub/Unsqueeze), MLP
    with GELU in its tanh form (`gelu_new`: Pow, Mul, Add, Tanh), a final LayerNormalization
    and the LM head tied to the token embedding (MatMul with its transpose). Input input_ids
    [1, seq] int64, output logits [1, seq, vocab]: the shape of the model that
    onnxruntime.transformers fuses with FusionGptAttentionNoPast."""
    import generate
    import numpy as np
    from generate import GraphBuilder, f32, i64
    from onnx import TensorProto, helper

    r = rng(name)
    b = GraphBuilder(r)
    head_dim = hidden // heads

    def layer_norm(x, prefix):
        gamma = b.const(f"{prefix}.weight", b.uniform((hidden,), 0.8, 1.2))
        beta = b.const(f"{prefix}.bias", b.normal((hidden,), 0.05))
        return b.node("LayerNormalization", [x, gamma, beta], f"{prefix}/LayerNormalization", axis=-1, epsilon=1e-5)

    def conv1d(x, prefix, cin, cout, std=None):
        """HF's Conv1D: x.view(-1, cin) @ W + b, viewed back to [1, S, cout]."""
        w = b.const(f"{prefix}.weight", b.normal((cin, cout), std or 1.0 / np.sqrt(cin)))
        bias = b.const(f"{prefix}.bias", b.normal((cout,), 0.05))
        x = b.node("Reshape", [x, flat_shape[cin]], f"{prefix}/Reshape")
        y = b.node("Gemm", [x, w, bias], f"{prefix}/Gemm")
        return b.node("Reshape", [y, b.const(f"{prefix}.out_shape", i64([1, seq, cout]))], f"{prefix}/Reshape_1")

    flat_shape = {n: b.const(f"flat_shape_{n}", i64([-1, n])) for n in (hidden, 4 * hidden)}
    wte = b.normal((vocab, hidden), 0.5)
    wte_name = b.const("transformer.wte.weight", wte)
    wpe = b.const("transformer.wpe.weight", b.normal((max_positions, hidden), 0.2))
    # A bool lower triangle, as GPT2Attention's `bias` buffer.
    causal = b.const("causal_bias", np.tril(np.ones((max_positions, max_positions), dtype=bool))[None, None])
    words = b.node("Gather", [wte_name, "input_ids"], "transformer/wte/Gather", axis=0)
    ids_shape = b.node("Shape", ["input_ids"], "transformer/Shape")
    length = b.node("Gather", [ids_shape, b.const("seq_axis", i64(1))], "transformer/Gather_len", axis=0)
    positions = b.node("Range", [b.const("range_start", i64(0)), length, b.const("range_delta", i64(1))],
                       "transformer/Range")
    positions = b.node("Unsqueeze", [positions, b.const("positions_axes", i64([0]))], "transformer/Unsqueeze")
    pos = b.node("Gather", [wpe, positions], "transformer/wpe/Gather", axis=0)
    x = b.node("Add", [words, pos], "transformer/Add")

    split_sizes = b.const("qkv_split", i64([hidden, hidden, hidden]))
    heads_shape = b.const("split_heads_shape", i64([1, seq, heads, head_dim]))
    merge_shape = b.const("merge_heads_shape", i64([1, seq, hidden]))
    scale = b.const("attn_scale", f32(np.sqrt(head_dim)))
    mask_value = b.const("mask_value", f32(np.finfo(np.float32).min))
    minus_one, minus_two = b.const("dim_last", i64([-1])), b.const("dim_second_last", i64([-2]))
    big = b.const("slice_to_end", i64([np.iinfo(np.int64).max]))
    zero1 = b.const("zero1", i64([0]))
    axis2, axis3 = b.const("axis2", i64([2])), b.const("axis3", i64([3]))
    squeeze_axes = b.const("squeeze0", i64([0]))
    c_gelu, c_cubic = b.const("gelu_c", f32(np.sqrt(2.0 / np.pi))), b.const("gelu_cubic", f32(0.044715))
    three, one, half = b.const("gelu_three", f32(3.0)), b.const("gelu_one", f32(1.0)), b.const("gelu_half", f32(0.5))

    for li in range(layers):
        p = f"transformer.h.{li}"
        h = layer_norm(x, f"{p}.ln_1")
        qkv = conv1d(h, f"{p}.attn.c_attn", hidden, 3 * hidden)
        q, k, v = b.node("Split", [qkv, split_sizes], f"{p}/attn/Split", n_out=3, axis=2)
        q = b.node("Transpose", [b.node("Reshape", [q, heads_shape], f"{p}/attn/q/Reshape")],
                   f"{p}/attn/q/Transpose", perm=[0, 2, 1, 3])
        k = b.node("Transpose", [b.node("Reshape", [k, heads_shape], f"{p}/attn/k/Reshape")],
                   f"{p}/attn/k/Transpose", perm=[0, 2, 3, 1])
        v = b.node("Transpose", [b.node("Reshape", [v, heads_shape], f"{p}/attn/v/Reshape")],
                   f"{p}/attn/v/Transpose", perm=[0, 2, 1, 3])
        s = b.node("MatMul", [q, k], f"{p}/attn/MatMul")
        s = b.node("Div", [s, scale], f"{p}/attn/Div")
        # causal_mask = bias[:, :, key_len - query_len : key_len, :key_len], lengths from Shape(s).
        shape = b.node("Shape", [s], f"{p}/attn/Shape")
        key_len = b.node("Squeeze", [b.node("Slice", [shape, minus_one, big, zero1], f"{p}/attn/Slice_key"),
                                     squeeze_axes], f"{p}/attn/Squeeze_key")
        query_len = b.node("Squeeze", [b.node("Slice", [shape, minus_two, minus_one, zero1], f"{p}/attn/Slice_query"),
                                       squeeze_axes], f"{p}/attn/Squeeze_query")
        start = b.node("Unsqueeze", [b.node("Sub", [key_len, query_len], f"{p}/attn/Sub"), squeeze_axes],
                       f"{p}/attn/Unsqueeze_start")
        end = b.node("Unsqueeze", [key_len, squeeze_axes], f"{p}/attn/Unsqueeze_end")
        rows = b.node("Slice", [causal, start, end, axis2], f"{p}/attn/Slice_rows")
        cmask = b.node("Slice", [rows, zero1, end, axis3], f"{p}/attn/Slice_cols")
        s = b.node("Where", [cmask, s, mask_value], f"{p}/attn/Where")
        s = b.node("Softmax", [s], f"{p}/attn/Softmax", axis=-1)
        c = b.node("MatMul", [s, v], f"{p}/attn/MatMul_1")
        c = b.node("Transpose", [c], f"{p}/attn/merge/Transpose", perm=[0, 2, 1, 3])
        c = b.node("Reshape", [c, merge_shape], f"{p}/attn/merge/Reshape")
        c = conv1d(c, f"{p}.attn.c_proj", hidden, hidden)
        x = b.node("Add", [x, c], f"{p}/Add")
        h = layer_norm(x, f"{p}.ln_2")
        h = conv1d(h, f"{p}.mlp.c_fc", hidden, 4 * hidden)
        # gelu_new: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
        g = b.node("Pow", [h, three], f"{p}/mlp/Pow")
        g = b.node("Mul", [c_cubic, g], f"{p}/mlp/Mul_cubic")
        g = b.node("Add", [h, g], f"{p}/mlp/Add")
        g = b.node("Mul", [c_gelu, g], f"{p}/mlp/Mul_c")
        g = b.node("Tanh", [g], f"{p}/mlp/Tanh")
        g = b.node("Add", [one, g], f"{p}/mlp/Add_one")
        g = b.node("Mul", [b.node("Mul", [half, h], f"{p}/mlp/Mul_half"), g], f"{p}/mlp/Mul")
        h = conv1d(g, f"{p}.mlp.c_proj", 4 * hidden, hidden)
        x = b.node("Add", [x, h], f"{p}/Add_1")

    x = layer_norm(x, "transformer.ln_f")
    b.node("MatMul", [x, b.const("lm_head.weight", np.ascontiguousarray(wte.T))], "lm_head/MatMul")
    b.nodes[-1].output[0] = "logits"
    model = generate.finish_model(
        b, name, [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, seq, vocab])], [("", OPSET)])
    return model, {"input_ids": r.integers(0, vocab, (1, seq), dtype=np.int64)}


def base_vit(name: str = "vit_tiny", layers: int = 2, hidden: int = 64, heads: int = 4, mlp: int = 128,
             image: int = 32, patch: int = 8, classes: int = 10):
    """A ViT encoder as torch.onnx exports Hugging Face's ViTForImageClassification: patch
    embedding Conv (stride = kernel = patch), Reshape/Transpose to tokens, the class token
    Concat in front, position embeddings Added, pre-LN blocks (q/k/v MatMul+Add, heads
    Reshape/Transpose, scores Div by sqrt(head size), Softmax without mask, output projection,
    residual; MLP with exact GELU as Div/Erf/Add/Mul/Mul), a final LayerNormalization and the
    classifier on the class token (Gather, MatMul, Add). Input pixel_values [1, 3, 32, 32],
    output logits [1, classes]."""
    import generate
    import numpy as np
    from generate import GraphBuilder, f32, i64
    from onnx import TensorProto, helper

    r = rng(name)
    b = GraphBuilder(r)
    head_dim, tokens = hidden // heads, (image // patch) ** 2 + 1

    def linear(x, prefix, cin, cout):
        w = b.const(f"{prefix}.weight", b.normal((cin, cout), 1.0 / np.sqrt(cin)))
        bias = b.const(f"{prefix}.bias", b.normal((cout,), 0.05))
        return b.node("Add", [b.node("MatMul", [x, w], f"{prefix}/MatMul"), bias], f"{prefix}/Add")

    def layer_norm(x, prefix):
        gamma = b.const(f"{prefix}.weight", b.uniform((hidden,), 0.8, 1.2))
        beta = b.const(f"{prefix}.bias", b.normal((hidden,), 0.05))
        return b.node("LayerNormalization", [x, gamma, beta], f"{prefix}/LayerNormalization", axis=-1, epsilon=1e-12)

    w = b.const("patch.weight", b.normal((hidden, 3, patch, patch), 1.0 / np.sqrt(3 * patch * patch)))
    x = b.node("Conv", ["pixel_values", w, b.const("patch.bias", b.normal((hidden,), 0.05))], "patch/Conv",
               kernel_shape=[patch, patch], strides=[patch, patch])
    x = b.node("Reshape", [x, b.const("patch.flat_shape", i64([1, hidden, -1]))], "patch/Reshape")
    x = b.node("Transpose", [x], "patch/Transpose", perm=[0, 2, 1])
    x = b.node("Concat", [b.const("cls_token", b.normal((1, 1, hidden), 0.5)), x], "embeddings/Concat", axis=1)
    x = b.node("Add", [x, b.const("position_embeddings", b.normal((1, tokens, hidden), 0.2))], "embeddings/Add")

    heads_shape = b.const("split_heads_shape", i64([1, tokens, heads, head_dim]))
    merge_shape = b.const("merge_heads_shape", i64([1, tokens, hidden]))
    scale = b.const("attn_scale", f32(np.sqrt(head_dim)))
    sqrt2, one, half = b.const("gelu_sqrt2", f32(np.sqrt(2.0))), b.const("gelu_one", f32(1.0)), b.const("gelu_half", f32(0.5))
    for li in range(layers):
        p = f"encoder.layer.{li}"
        h = layer_norm(x, f"{p}.layernorm_before")
        q = linear(h, f"{p}.attention.query", hidden, hidden)
        k = linear(h, f"{p}.attention.key", hidden, hidden)
        v = linear(h, f"{p}.attention.value", hidden, hidden)
        q = b.node("Transpose", [b.node("Reshape", [q, heads_shape], f"{p}/q/Reshape")], f"{p}/q/Transpose", perm=[0, 2, 1, 3])
        k = b.node("Transpose", [b.node("Reshape", [k, heads_shape], f"{p}/k/Reshape")], f"{p}/k/Transpose", perm=[0, 2, 3, 1])
        v = b.node("Transpose", [b.node("Reshape", [v, heads_shape], f"{p}/v/Reshape")], f"{p}/v/Transpose", perm=[0, 2, 1, 3])
        s = b.node("Div", [b.node("MatMul", [q, k], f"{p}/scores/MatMul"), scale], f"{p}/scores/Div")
        s = b.node("Softmax", [s], f"{p}/Softmax", axis=-1)
        c = b.node("MatMul", [s, v], f"{p}/context/MatMul")
        c = b.node("Transpose", [c], f"{p}/context/Transpose", perm=[0, 2, 1, 3])
        c = b.node("Reshape", [c, merge_shape], f"{p}/context/Reshape")
        c = linear(c, f"{p}.attention.output", hidden, hidden)
        x = b.node("Add", [c, x], f"{p}/Add")
        h = layer_norm(x, f"{p}.layernorm_after")
        h = linear(h, f"{p}.intermediate", hidden, mlp)
        g = b.node("Erf", [b.node("Div", [h, sqrt2], f"{p}/gelu/Div")], f"{p}/gelu/Erf")
        g = b.node("Mul", [b.node("Mul", [h, b.node("Add", [g, one], f"{p}/gelu/Add")], f"{p}/gelu/Mul"), half],
                   f"{p}/gelu/Mul_half")
        h = linear(g, f"{p}.output", mlp, hidden)
        x = b.node("Add", [h, x], f"{p}/Add_1")

    x = layer_norm(x, "layernorm")
    x = b.node("Gather", [x, b.const("cls_index", i64(0))], "classifier/Gather", axis=1)
    linear(x, "classifier", hidden, classes)
    b.nodes[-1].output[0] = "logits"
    model = generate.finish_model(
        b, name, [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, [1, 3, image, image])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes])], [("", OPSET)])
    return model, {"pixel_values": r.standard_normal((1, 3, image, image)).astype(np.float32)}


# ---------------------------------------------------------------------------------------------
# forms
# ---------------------------------------------------------------------------------------------


class RandomReader:
    """onnxruntime.quantization's calibration reader interface over seeded random inputs."""

    def __init__(self, model, r, count: int = 8):
        import numpy as np
        from onnx import TensorProto

        self.batches = []
        for _ in range(count):
            feed = {}
            for vi in model.graph.input:
                tt = vi.type.tensor_type
                shape = [d.dim_value for d in tt.shape.dim]
                if tt.elem_type != TensorProto.FLOAT:
                    raise SystemExit(f"calibration data for {vi.name}: only float inputs are drawn")
                feed[vi.name] = r.standard_normal(shape).astype(np.float32)
            self.batches.append(feed)
        self.it = iter(self.batches)

    def get_next(self):
        return next(self.it, None)


def pre_process(src: Path, dst: Path) -> None:
    """onnxruntime.quantization's recommended first step (`python -m
    onnxruntime.quantization.preprocess`): ONNX shape inference and ORT's basic graph
    optimizations, which fold BatchNormalization into Conv and add ORT's usual opset imports.
    Symbolic shape inference is skipped: these models have static shapes."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    quant_pre_process(str(src), str(dst), skip_symbolic_shape=True)


def quantize_static_qdq(model, name: str, per_channel: bool, activation_type):
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    with tempfile.TemporaryDirectory() as tmp:
        src, pre, dst = Path(tmp, "float.onnx"), Path(tmp, "pre.onnx"), Path(tmp, "qdq.onnx")
        onnx.save(model, str(src))
        pre_process(src, pre)
        quantize_static(
            str(pre), str(dst), RandomReader(model, rng(name)),
            quant_format=QuantFormat.QDQ, per_channel=per_channel,
            activation_type=activation_type, weight_type=QuantType.QInt8,
        )
        return onnx.load(str(dst))


def quantize_dynamic_int8(model, extra_options=None, weight_type=None):
    """quantize_dynamic with int8 weights by default; pass QuantType.QUInt8 for a CNN, whose
    ConvInteger onnxruntime's CPU provider implements for uint8 weights only."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        src, pre, dst = Path(tmp, "float.onnx"), Path(tmp, "pre.onnx"), Path(tmp, "dynamic.onnx")
        onnx.save(model, str(src))
        pre_process(src, pre)
        quantize_dynamic(str(pre), str(dst), weight_type=weight_type or QuantType.QInt8,
                         extra_options=extra_options or {})
        return onnx.load(str(dst))


def to_float16(model):
    from onnxruntime.transformers.float16 import convert_float_to_float16

    # keep_io_types: users keep float32 inputs and outputs (Cast at the edges), as the
    # converter's docs recommend for serving.
    return convert_float_to_float16(copy(model), keep_io_types=True)


def copy(model):
    """The tools below edit the model they are given; the cases share their base models."""
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


def optimize_transformer(model, model_type: str, num_heads: int, hidden_size: int):
    """onnxruntime.transformers.optimizer.optimize_model with its ONNX-level fusions only
    (opt_level=0: no onnxruntime graph optimization, which at level 1 would import torch).
    Fails unless Attention and SkipLayerNormalization were fused, so a change in the base
    graphs or in onnxruntime that silently stops the fusion does not go unnoticed."""
    import onnx
    from onnxruntime.transformers.optimizer import optimize_model

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp, "float.onnx"), Path(tmp, "fused.onnx")
        onnx.save(model, str(src))
        # save_model_to_file adds the com.microsoft opset import the fused nodes need.
        optimize_model(str(src), model_type=model_type, num_heads=num_heads, hidden_size=hidden_size,
                       opt_level=0).save_model_to_file(str(dst))
        fused = onnx.load(str(dst))
    ops = contrib_ops(fused)
    missing = {"Attention", "SkipLayerNormalization"} - ops
    if missing:
        raise SystemExit(f"optimize_model({model_type}) fused no {sorted(missing)}; com.microsoft ops: {sorted(ops)}")
    return fused


def quantize_static_qoperator(model, name: str):
    """quantize_static in QOperator format (per-channel int8 weights, uint8 activations): Conv
    becomes QLinearConv, and the ops without an ONNX quantized form become com.microsoft ones
    (QLinearAdd, QLinearGlobalAveragePool, QGemm)."""
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    with tempfile.TemporaryDirectory() as tmp:
        src, pre, dst = Path(tmp, "float.onnx"), Path(tmp, "pre.onnx"), Path(tmp, "qop.onnx")
        onnx.save(model, str(src))
        pre_process(src, pre)
        quantize_static(
            str(pre), str(dst), RandomReader(model, rng(name)),
            quant_format=QuantFormat.QOperator, per_channel=True,
            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
        )
        return onnx.load(str(dst))


def quantize_dynamic_fused(model):
    """quantize_dynamic on a model fused by optimize_transformer. No pre_process: its ORT
    graph optimization would refold what the fusions made. DefaultTensorType: the quantizer
    needs the type of every tensor, and the contrib ops' outputs have none (ONNX shape
    inference does not know them)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp, "fused.onnx"), Path(tmp, "dynamic.onnx")
        onnx.save(model, str(src))
        quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        return onnx.load(str(dst))


def quantize_4bit(model):
    """MatMulNBitsQuantizer: every MatMul with a constant weight becomes com.microsoft
    MatMulNBits with 4-bit symmetric weights in blocks of 32 along K (hidden sizes here are
    64..256). accuracy_level is left unset (0): activations stay float32."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    q = MatMulNBitsQuantizer(copy(model), bits=4, block_size=NBITS_BLOCK, is_symmetric=True)
    q.process()
    return q.model.model


def contrib_ops(model) -> set[str]:
    return {n.op_type for n in model.graph.node if n.domain == "com.microsoft"}


def output_step_tolerance(model):
    """(rtol, atol) for a QDQ model: QDQ_STEPS steps of the largest scale among the
    DequantizeLinear nodes that produce graph outputs (see the module doc)."""
    from onnx import numpy_helper

    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    outs = {o.name for o in model.graph.output}
    steps = [
        float(inits[n.input[1]].max())
        for n in model.graph.node
        if n.op_type == "DequantizeLinear" and n.output[0] in outs and n.input[1] in inits
    ]
    if not steps:
        raise SystemExit("a QDQ model whose outputs are not dequantized: no output step to tolerate")
    # Rounded up a hair so a difference of exactly QDQ_STEPS steps passes despite float noise.
    return 0.0, QDQ_STEPS * max(steps) * (1 + 1e-6)


def crnn(name: str):
    """A CRNN text recognizer as OCR wheels ship it: Conv/Relu/MaxPool feature extractor over a
    1x1x32x100 line image, height pooled away, a bidirectional LSTM over the 25 columns
    (seq-major, as exported from PyTorch), then a Gemm classifier per time step with LogSoftmax
    (CTC head). Output: [25, 1, 37] log-probabilities."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    r = rng(name)
    hidden, classes, cin = 32, 37, 32
    t = {}

    def w(key, shape, std):
        t[key] = numpy_helper.from_array((r.standard_normal(shape) * std).astype(np.float32), key)
        return key

    def i64(key, values):
        t[key] = numpy_helper.from_array(np.asarray(values, dtype=np.int64), key)
        return key

    n = helper.make_node
    nodes = [
        n("Conv", ["image", w("c1.w", (16, 1, 3, 3), 0.4), w("c1.b", (16,), 0.1)], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        n("Relu", ["c1"], ["r1"], name="relu1"),
        n("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),  # 16x16x50
        n("Conv", ["p1", w("c2.w", (cin, 16, 3, 3), 0.15), w("c2.b", (cin,), 0.1)], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        n("Relu", ["c2"], ["r2"], name="relu2"),
        n("MaxPool", ["r2"], ["p2"], name="pool2", kernel_shape=[16, 2], strides=[16, 2]),  # 32x1x25
        n("Squeeze", ["p2", i64("squeeze_h", [2])], ["feat"], name="squeeze_height"),  # [1,32,25]
        n("Transpose", ["feat"], ["seq"], name="to_seq_major", perm=[2, 0, 1]),  # [25,1,32]
        n("LSTM", ["seq", w("lstm.W", (2, 4 * hidden, cin), 0.2), w("lstm.R", (2, 4 * hidden, hidden), 0.2),
                   w("lstm.B", (2, 8 * hidden), 0.1)],
          ["lstm_y", "lstm_h", "lstm_c"], name="bilstm", direction="bidirectional", hidden_size=hidden),
        n("Transpose", ["lstm_y"], ["y_t"], name="merge_dirs_transpose", perm=[0, 2, 1, 3]),  # [25,1,2,32]
        n("Reshape", ["y_t", i64("flat_shape", [-1, 2 * hidden])], ["y2"], name="flatten_steps"),  # [25,64]
        n("Gemm", ["y2", w("fc.w", (classes, 2 * hidden), 0.2), w("fc.b", (classes,), 0.1)], ["logits2"],
          name="classifier", transB=1),
        n("Reshape", ["logits2", i64("out_shape", [25, 1, classes])], ["logits"], name="unflatten_steps"),
        n("LogSoftmax", ["logits"], ["log_probs"], name="ctc_log_softmax", axis=2),
    ]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 1, 32, 100])],
        [helper.make_tensor_value_info("log_probs", TensorProto.FLOAT, [25, 1, classes])],
        initializer=list(t.values()),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8,
                              producer_name="vinort scripts/gen_corpus.py")
    onnx.checker.check_model(model, full_check=True)
    return model, {"image": r.random((1, 1, 32, 100)).astype(np.float32)}


def local_functions(name: str):
    """Model-local functions as exporters write them (torch.onnx's dynamo exporter,
    onnxscript): two functions of domain `vinort.fn` with their own opset imports; `Block`
    calls `ScaledAct` (a function calling a function), passes its attribute down by reference
    (`ref_attr_name`), and `ScaledAct`'s `alpha` has a default the second call relies on."""
    import numpy as np
    import onnx
    from onnx import AttributeProto, TensorProto, helper, numpy_helper

    r = rng(name)
    fn_domain = "vinort.fn"
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid(fn_domain, 1)]

    # ScaledAct(x; alpha=0.2, beta) = LeakyRelu(x, alpha) * beta
    def ref(name: str, refers_to: str) -> AttributeProto:
        """A float attribute taking the calling node's attribute `refers_to`."""
        return AttributeProto(name=name, ref_attr_name=refers_to, type=AttributeProto.FLOAT)

    leaky = helper.make_node("LeakyRelu", ["x"], ["a"])
    leaky.attribute.append(ref("alpha", "alpha"))
    beta = helper.make_node("Constant", [], ["b"])
    beta.attribute.append(ref("value_float", "beta"))
    scaled_act = helper.make_function(
        fn_domain, "ScaledAct", ["x"], ["y"],
        [leaky, beta, helper.make_node("Mul", ["a", "b"], ["y"])],
        [helper.make_opsetid("", OPSET)],
        attributes=["beta"],
    )
    scaled_act.attribute_proto.append(helper.make_attribute("alpha", 0.2))

    # Block(x, w, bias; slope) = ScaledAct(MatMul(x, w) + bias; alpha=slope, beta=2.0)
    act = helper.make_node("ScaledAct", ["h"], ["y"], domain=fn_domain, beta=2.0)
    act.attribute.append(ref("alpha", "slope"))
    block = helper.make_function(
        fn_domain, "Block", ["x", "w", "bias"], ["y"],
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "bias"], ["h"]), act],
        opsets, attributes=["slope"],
    )

    inits = [
        numpy_helper.from_array((r.standard_normal((16, 16)) / 4).astype(np.float32), "w1"),
        numpy_helper.from_array((r.standard_normal(16) / 10).astype(np.float32), "b1"),
        numpy_helper.from_array((r.standard_normal((16, 8)) / 4).astype(np.float32), "w2"),
        numpy_helper.from_array((r.standard_normal(8) / 10).astype(np.float32), "b2"),
    ]
    nodes = [
        helper.make_node("Block", ["x", "w1", "b1"], ["h1"], name="block1", domain=fn_domain, slope=0.1),
        helper.make_node("Block", ["h1", "w2", "b2"], ["h2"], name="block2", domain=fn_domain, slope=0.3),
        # Called directly too, leaving alpha at the function's default.
        helper.make_node("ScaledAct", ["h2"], ["y"], name="act_default", domain=fn_domain, beta=0.5),
    ]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=opsets, ir_version=10, functions=[scaled_act, block],
                              producer_name="vinort scripts/gen_corpus.py")
    onnx.checker.check_model(model, full_check=True)
    return model, [{"x": r.standard_normal((4, 16)).astype(np.float32)}]


def repeated_unknown_dims(name: str):
    """An image classifier whose input declares [1, 3, '?', '?'] (PaddleOCR's text-direction
    classifier does): both dims are named '?', yet they differ at run time (48 x 192), which
    ONNX Runtime accepts. A second data set uses another size (32 x 100)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    r = rng(name)
    inits = [
        numpy_helper.from_array((r.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32), "cw"),
        numpy_helper.from_array((r.standard_normal(8) * 0.1).astype(np.float32), "cb"),
        numpy_helper.from_array((r.standard_normal((2, 8)) * 0.5).astype(np.float32), "fw"),
        numpy_helper.from_array((r.standard_normal(2) * 0.1).astype(np.float32), "fb"),
    ]
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "cw", "cb"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[2, 2]),
        n("Relu", ["c"], ["r"], name="relu"),
        n("GlobalAveragePool", ["r"], ["g"], name="gap"),
        n("Flatten", ["g"], ["f"], name="flatten"),
        n("Gemm", ["f", "fw", "fb"], ["logits"], name="fc", transB=1),
        n("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "?", "?"])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 2])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8,
                              producer_name="vinort scripts/gen_corpus.py")
    onnx.checker.check_model(model, full_check=True)
    feeds = [{"x": r.standard_normal((1, 3, h, w)).astype(np.float32)} for h, w in ((48, 192), (32, 100))]
    return model, feeds


def overridable_initializer(name: str):
    """IR >= 4: a graph input that also has an initializer is a default the caller may
    override. Data set 0 feeds only `x` (the initializer is used); data set 1 feeds `bias` too
    (the fed value replaces it). `bias` is the last input, so input_K.pb numbering is the same
    whether or not a runtime lists overridable inputs."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    r = rng(name)
    w = (r.standard_normal((6, 4)) / 3).astype(np.float32)
    default_bias = np.linspace(-1, 1, 4, dtype=np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="matmul"),
        helper.make_node("Add", ["m", "bias"], ["y"], name="add_bias"),
    ]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
         helper.make_tensor_value_info("bias", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(default_bias, "bias")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8,
                              producer_name="vinort scripts/gen_corpus.py")
    onnx.checker.check_model(model, full_check=True)
    x = r.standard_normal((2, 6)).astype(np.float32)
    return model, [{"x": x}, {"x": x, "bias": np.array([10, 20, 30, 40], dtype=np.float32)}]


def build_cases():
    """(name, model, [feeds per data set], (rtol, atol)) of every corpus case."""
    from onnxruntime.quantization import QuantType

    cnn, cnn_feeds = base_cnn()
    bert, bert_feeds = base_bert()
    crnn_model, crnn_feeds = crnn("crnn_bilstm")
    cases = [
        ("cnn_fp32", cnn, [cnn_feeds], FP32),
        ("bert_fp32", bert, [bert_feeds], FP32),
        ("crnn_bilstm", crnn_model, [crnn_feeds], FP32),
    ]
    qdq = quantize_static_qdq(cnn, "cnn_qdq_per_channel_u8s8", True, QuantType.QUInt8)
    cases.append(("cnn_qdq_per_channel_u8s8", qdq, [cnn_feeds], output_step_tolerance(qdq)))
    qdq = quantize_static_qdq(cnn, "cnn_qdq_per_tensor_s8s8", False, QuantType.QInt8)
    cases.append(("cnn_qdq_per_tensor_s8s8", qdq, [cnn_feeds], output_step_tolerance(qdq)))
    mnv2, mnv2_feeds = base_mobilenetv2()
    qdq = quantize_static_qdq(mnv2, "mobilenetv2_qdq_per_channel_u8s8", True, QuantType.QUInt8)
    cases.append(("mobilenetv2_qdq_per_channel_u8s8", qdq, [mnv2_feeds], output_step_tolerance(qdq)))
    # MatMulConstBOnly (quantize_dynamic's default, spelled out): only MatMuls with a constant
    # B become MatMulInteger; attention's activation x activation products stay float.
    cases.append(("bert_dynamic_int8", quantize_dynamic_int8(bert, {"MatMulConstBOnly": True}), [bert_feeds],
                  DYNAMIC_INT8))
    # Conv -> ConvInteger, LSTM -> com.microsoft DynamicQuantizeLSTM, Gemm stays float.
    cases.append(("crnn_bilstm_dynamic_int8", quantize_dynamic_int8(crnn_model), [crnn_feeds], DYNAMIC_INT8))
    cases.append(("cnn_fp16", to_float16(cnn), [cnn_feeds], FP16))
    cases.append(("bert_fp16", to_float16(bert), [bert_feeds], FP16))
    # onnxruntime.transformers tools on the three transformer networks: the fused model, then
    # each of float16, dynamic int8 and 4-bit weights applied to it (the order users apply them).
    for base, (model, feeds), model_type in (
        ("bert", base_bert_fusable(), "bert"),
        ("gpt2", base_gpt2(), "gpt2"),
        ("vit", base_vit(), "vit"),
    ):
        fused = optimize_transformer(model, model_type, num_heads=4, hidden_size=64)
        cases.append((f"{base}_fused", fused, [feeds], FP32))
        cases.append((f"{base}_fused_fp16", to_float16(fused), [feeds], FP16))
        cases.append((f"{base}_fused_dynamic_int8", quantize_dynamic_fused(fused), [feeds], DYNAMIC_INT8))
        cases.append((f"{base}_fused_matmul4bits", quantize_4bit(fused), [feeds], NBITS))
    qop = quantize_static_qoperator(mnv2, "mobilenetv2_qoperator_per_channel_u8s8")
    cases.append(("mobilenetv2_qoperator_per_channel_u8s8", qop, [mnv2_feeds], output_step_tolerance(qop)))
    m, feeds = local_functions("local_functions")
    cases.append(("local_functions", m, feeds, FP32))
    m, feeds = repeated_unknown_dims("repeated_unknown_dims")
    cases.append(("repeated_unknown_dims", m, feeds, FP32))
    m, feeds = overridable_initializer("overridable_initializer")
    cases.append(("overridable_initializer", m, feeds, FP32))
    return cases


def reference_outputs(model, feeds):
    """onnxruntime CPU EP, optimizations off, one thread (models/generate.py's settings)."""
    import generate

    return generate.reference_outputs(model, feeds)


def write_case(out: Path, name: str, model, data_sets, tol) -> None:
    import numpy as np
    from onnx import numpy_helper

    case = out / name
    case.mkdir()
    (case / "model.onnx").write_bytes(model.SerializeToString(deterministic=True))
    common.write_tolerance(case, *tol)
    for n, feeds in enumerate(data_sets):
        ds = case / f"test_data_set_{n}"
        ds.mkdir()
        # input_K follows graph.input order; an input left out of `feeds` ends the list.
        for k, vi in enumerate(model.graph.input):
            if vi.name not in feeds:
                break
            (ds / f"input_{k}.pb").write_bytes(numpy_helper.from_array(feeds[vi.name], vi.name).SerializeToString())
        for k, (vi, value) in enumerate(zip(model.graph.output, reference_outputs(model, feeds))):
            if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
                raise SystemExit(f"{name}: output {vi.name} is not finite")
            (ds / f"output_{k}.pb").write_bytes(numpy_helper.from_array(value, vi.name).SerializeToString())


def fill(tmp: Path) -> int:
    import logging

    import onnxruntime

    # The quantizer's advice and ORT's graph warnings (an initializer that is also an input is
    # the point of one case) are noise here.
    logging.getLogger().setLevel(logging.ERROR)
    onnxruntime.set_default_logger_severity(3)
    cases = build_cases()
    for name, model, data_sets, tol in cases:
        write_case(tmp, name, model, data_sets, tol)
        common.log(f"{name}: {len(model.graph.node)} nodes, rtol {tol[0]:g}, atol {tol[1]:g}")
    return len(cases)


def main(argv: list[str]) -> int:
    sources = [Path(__file__).resolve(), Path(common.__file__).resolve()]
    sources += [REPO / "models" / m for m in ("generate.py", "generate_bench.py", "exact_int8.py")]
    return common.generator_main(argv, __doc__, "the corpus of model forms", sources, fill, packages=PACKAGES)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
