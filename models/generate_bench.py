#!/usr/bin/env python3
"""Generate vinort's benchmark-size ONNX models and their reference outputs.

Usage (from the repository root; normally through scripts/gen-bench-models):

    PY=$(scripts/py-env | tail -1)
    "$PY" models/generate_bench.py [--out-dir DIR] [--stamp TEXT] [NAME ...]
    "$PY" models/generate_bench.py --verify-only [--out-dir DIR] [NAME ...]

Writes one folder per model in the standard ONNX test layout:

    DIR/<name>/model.onnx
    DIR/<name>/test_data_set_0/input_<i>.pb    (onnx.TensorProto, graph input order)
    DIR/<name>/test_data_set_0/output_<i>.pb   (onnx.TensorProto, graph output order)
    DIR/<name>/.vinort-bench-stamp             (only with --stamp; written last)

DIR defaults to $VINORT_BENCH_MODELS, else models/generated/ (git-ignored).
Each folder is built in a temporary sibling and renamed into place, so a
folder that exists is complete.

The models have the standard architectures at full size with seeded random
(untrained) weights, He-style scaled so activations stay finite and spread;
BatchNormalization is folded into the convolutions as in a deployed model.
Each model draws from its own generator, numpy.random.default_rng([SEED,
crc32(name)]), so generating one model alone gives the same bytes as
generating all of them.

    mobilenetv2          MobileNetV2 1.0, 1x3x224x224 -> logits 1x1000     (opset 17)
    mobilenetv2_qdq      the same, quantized by onnxruntime.quantization.quantize_static
                         (QDQ, per-channel int8 weights, uint8 activations)
    mobilenetv2_dynamic  the same, quantized by onnxruntime.quantization.quantize_dynamic
                         (uint8 weights; DynamicQuantizeLinear + ConvInteger per conv)
    resnet50             ResNet-50 v1.5, 1x3x224x224 -> logits 1x1000      (opset 17)
    bert_base            BERT-base encoder, 12 layers, hidden 768, seq 128 (opset 17)
    bert_mini            BERT-mini encoder, 4 layers, hidden 256, seq 128  (opset 17)
    bert_mini_int8       the same after onnxruntime.quantization.quantize_dynamic
                         (int8 weights; DynamicQuantizeLinear + MatMulInteger)
    partition_cnn_bench  ResNet-18 with one DeformConv in stage 2          (opset 19)
    bert_mini_fused      (only when named) BERT-mini as torch.onnx exports it, fused by
                         onnxruntime.transformers' optimizer (Attention,
                         EmbedLayerNormalization, SkipLayerNormalization, BiasGelu);
                         bert_mini_fused_fp16 and bert_mini_fused_matmul4bits are it
                         after convert_float_to_float16 and MatMulNBitsQuantizer
    segnet_bench         SegNet-style encoder-decoder, 3 MaxPool/MaxUnpool pairs,
                         1x3x224x224 -> logits 1x12x112x112                (opset 17)

partition_cnn_bench and segnet_bench force partitioning: OpenVINO has no
conversion rule for DeformConv or MaxUnpool. ORT 1.24's CPU EP lacks
DeformConv, so ORT+OpenVINO EP cannot run partition_cnn_bench at all; it has
MaxUnpool, so segnet_bench is the partitioned model both vinort and ORT+OVEP
run, each as OpenVINO pieces around three Cpu MaxUnpool nodes.

Reference outputs come from onnxruntime's CPU execution provider with its
default graph optimizations and 2 intra-op threads. --verify-openvino (or
--verify-only, which skips generation) compares OpenVINO CPU (f32 inference
precision) against them; a model with an op OpenVINO refuses is checked piece
by piece instead: every maximal run of other nodes (graph order) runs on
OpenVINO fed with onnxruntime's values of the tensors it reads, and its
outputs are compared with onnxruntime's (integer ones, such as the MaxPool
indices a MaxUnpool reads, exactly).
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import OPSET, SEED, GraphBuilder, f32, finish_model, i64  # noqa: E402

# scripts/gen-bench-models reads this line (keep it one line, names separated by spaces).
BENCH_MODELS = "mobilenetv2 mobilenetv2_qdq mobilenetv2_dynamic resnet50 bert_base bert_mini bert_mini_int8 partition_cnn_bench segnet_bench"
# Benchmark-size models made by ONNX Runtime's tools (scripts/perf-tool-models); written only
# when named, not part of the default set. One line, as above.
TOOL_MODELS = "bert_mini_fused bert_mini_fused_fp16 bert_mini_fused_matmul4bits"

PRODUCER = "vinort models/generate_bench.py"
DEFORM_OPSET = 19  # DeformConv exists from opset 19
DEFORM_IR_VERSION = 9  # the IR version that shipped with opset 19
ORT_THREADS = 2
REFUSED_BY_OPENVINO = {"DeformConv", "MaxUnpool"}  # no conversion rule in OpenVINO 2026.4's ONNX frontend
BN_EPS = 1e-5
STAMP_FILE = ".vinort-bench-stamp"
MAX_PROTO_BYTES = 2**31 - 1  # protobuf limit for a single serialized model
REPO_ROOT = Path(__file__).resolve().parent.parent


def model_rng(name: str) -> np.random.Generator:
    return np.random.default_rng([SEED, zlib.crc32(name.encode())])


def finish(b: GraphBuilder, name: str, inputs, outputs, architecture: str, opset: int = OPSET) -> onnx.ModelProto:
    model = finish_model(b, name, inputs, outputs, [("", opset)])
    if opset > 17:
        model.ir_version = DEFORM_IR_VERSION
    model.producer_name = PRODUCER
    model.doc_string = (
        f"vinort benchmark model '{name}', generated by models/generate_bench.py with seed {SEED} "
        f"(numpy default_rng([{SEED}, crc32('{name}')])); random untrained weights. {architecture}"
    )
    return model


# --------------------------------------------------------------------------
# CNN helpers: Conv with BatchNormalization folded in
# --------------------------------------------------------------------------


def folded_conv_params(b: GraphBuilder, prefix: str, cin: int, cout: int, k: int, group: int = 1,
                       gain: float = np.sqrt(2.0), gamma=(0.8, 1.2)) -> tuple[str, str]:
    """Conv weight ~N(0, gain/sqrt(fan_in)) and a BatchNormalization (random gamma,
    beta, running mean/var), folded into the conv's weight and bias like a
    deployed model. gain sqrt(2) keeps the second moment through Conv+ReLU
    (He); gain 1 suits a conv with no activation after it."""
    fan_in = (cin // group) * k * k
    w = b.normal((cout, cin // group, k, k), gain / np.sqrt(fan_in))
    bn_gamma = b.uniform((cout,), *gamma)
    bn_beta = b.normal((cout,), 0.05)
    bn_mean = b.normal((cout,), 0.05)
    bn_var = b.uniform((cout,), 0.8, 1.25)
    scale = bn_gamma / np.sqrt(bn_var + BN_EPS)
    weight = b.const(f"{prefix}.weight", f32(w * scale[:, None, None, None]))
    bias = b.const(f"{prefix}.bias", f32(bn_beta - bn_mean * scale))
    return weight, bias


def conv(b: GraphBuilder, x: str, prefix: str, cin: int, cout: int, k: int, stride: int = 1, group: int = 1,
         gain: float = np.sqrt(2.0), gamma=(0.8, 1.2)) -> str:
    weight, bias = folded_conv_params(b, prefix, cin, cout, k, group, gain, gamma)
    pad = k // 2
    return b.node("Conv", [x, weight, bias], f"{prefix}/Conv", kernel_shape=[k, k], strides=[stride, stride],
                  pads=[pad, pad, pad, pad], dilations=[1, 1], group=group)


def classifier(b: GraphBuilder, x: str, cin: int, classes: int) -> str:
    x = b.node("GlobalAveragePool", [x], "head/GlobalAveragePool")
    x = b.node("Flatten", [x], "head/Flatten", axis=1)
    w = b.const("fc.weight", b.normal((classes, cin), 1.0 / np.sqrt(cin)))
    bias = b.const("fc.bias", b.normal((classes,), 0.05))
    b.node("Gemm", [x, w, bias], "fc/Gemm", alpha=1.0, beta=1.0, transB=1)
    b.nodes[-1].output[0] = "logits"
    return "logits"


def image_io(size: int, classes: int):
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes])]
    return inputs, outputs


def image_feeds(rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
    return {"input": rng.standard_normal((1, 3, size, size)).astype(np.float32)}


# --------------------------------------------------------------------------
# mobilenetv2
# --------------------------------------------------------------------------


def build_mobilenetv2(rng: np.random.Generator):
    b = GraphBuilder(rng)
    relu6_min = b.const("relu6_min", f32(0.0))
    relu6_max = b.const("relu6_max", f32(6.0))

    def relu6(x, prefix):
        return b.node("Clip", [x, relu6_min, relu6_max], f"{prefix}/Relu6")

    x = relu6(conv(b, "input", "features.0", 3, 32, 3, stride=2), "features.0")  # 32x112x112
    # (expand ratio t, out channels c, repeats n, first stride s), MobileNetV2 paper table 2
    table = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    cin, idx = 32, 1
    for t, c, n, s in table:
        for i in range(n):
            stride = s if i == 0 else 1
            p = f"features.{idx}"
            residual = stride == 1 and cin == c
            hidden = cin * t
            h = x
            if t != 1:
                h = relu6(conv(b, h, f"{p}.expand", cin, hidden, 1), f"{p}.expand")
            h = relu6(conv(b, h, f"{p}.depthwise", hidden, hidden, 3, stride=stride, group=hidden),
                      f"{p}.depthwise")
            # linear bottleneck; a smaller BN gamma on residual branches keeps the sum bounded
            h = conv(b, h, f"{p}.project", hidden, c, 1, gain=1.0, gamma=(0.3, 0.6) if residual else (0.8, 1.2))
            if residual:
                h = b.node("Add", [x, h], f"{p}/residual/Add")
            x, cin, idx = h, c, idx + 1
    x = relu6(conv(b, x, f"features.{idx}", cin, 1280, 1), f"features.{idx}")  # 1280x7x7
    classifier(b, x, 1280, 1000)
    inputs, outputs = image_io(224, 1000)
    model = finish(b, "mobilenetv2", inputs, outputs,
                   "MobileNetV2 1.0 (224x224x3 -> 1000 logits): Conv+BN folded, Clip(0,6) activations, "
                   "17 inverted residual blocks with the standard (t,c,n,s) table, 1x1 conv to 1280, "
                   "GlobalAveragePool, Flatten, Gemm.")
    return model, image_feeds(rng, 224)


# --------------------------------------------------------------------------
# resnet50 and the ResNet-18 of partition_cnn_bench
# --------------------------------------------------------------------------


def resnet_stem(b: GraphBuilder) -> str:
    x = conv(b, "input", "conv1", 3, 64, 7, stride=2)  # 64x112x112
    x = b.node("Relu", [x], "conv1/Relu")
    return b.node("MaxPool", [x], "maxpool/MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])


LAST_BN_GAMMA = (0.15, 0.35)  # last BN of a residual branch: small, so the residual sums stay bounded


def build_resnet50(rng: np.random.Generator):
    b = GraphBuilder(rng)
    x = resnet_stem(b)  # 64x56x56
    cin = 64
    for stage, (width, blocks, first_stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]):
        cout = width * 4
        for i in range(blocks):
            p = f"layer{stage + 1}.{i}"
            stride = first_stride if i == 0 else 1
            h = b.node("Relu", [conv(b, x, f"{p}.conv1", cin, width, 1)], f"{p}.conv1/Relu")
            # v1.5: the stride sits on the 3x3 conv
            h = b.node("Relu", [conv(b, h, f"{p}.conv2", width, width, 3, stride=stride)], f"{p}.conv2/Relu")
            h = conv(b, h, f"{p}.conv3", width, cout, 1, gain=1.0, gamma=LAST_BN_GAMMA)
            shortcut = x
            if i == 0:
                shortcut = conv(b, x, f"{p}.downsample", cin, cout, 1, stride=stride, gain=1.0)
            h = b.node("Add", [shortcut, h], f"{p}/residual/Add")
            x = b.node("Relu", [h], f"{p}/Relu")
            cin = cout
    classifier(b, x, 2048, 1000)
    inputs, outputs = image_io(224, 1000)
    model = finish(b, "resnet50", inputs, outputs,
                   "ResNet-50 v1.5 (224x224x3 -> 1000 logits): 7x7/2 conv + MaxPool 3x3/2 stem, bottleneck "
                   "blocks [3,4,6,3] with the stride on the 3x3 conv, BN folded into the convs, Relu, "
                   "GlobalAveragePool, Flatten, Gemm 2048->1000.")
    return model, image_feeds(rng, 224)


def build_partition_cnn_bench(rng: np.random.Generator):
    """ResNet-18 at 224 whose layer2.1 second 3x3 conv is a modulated DeformConv (DCNv2):
    offsets from a 3x3 Conv of the block input, mask from Conv+Sigmoid of the block input.
    OpenVINO 2026.4 has no conversion rule for DeformConv-19, so vinort runs the graph as
    OpenVINO -> Cpu (DeformConv) -> OpenVINO."""
    b = GraphBuilder(rng)
    x = resnet_stem(b)  # 64x56x56
    cin = 64
    for stage, (cout, first_stride) in enumerate([(64, 1), (128, 2), (256, 2), (512, 2)]):
        for i in range(2):
            p = f"layer{stage + 1}.{i}"
            stride = first_stride if i == 0 else 1
            h = b.node("Relu", [conv(b, x, f"{p}.conv1", cin, cout, 3, stride=stride)], f"{p}.conv1/Relu")
            if p == "layer2.1":  # 128x28x28
                k = 3
                off_w = b.const(f"{p}.conv2_offset.weight", b.normal((2 * k * k, cin, k, k), 0.5 / np.sqrt(cin * k * k)))
                off_b = b.const(f"{p}.conv2_offset.bias", b.normal((2 * k * k,), 0.2))
                offset = b.node("Conv", [x, off_w, off_b], f"{p}.conv2_offset/Conv", kernel_shape=[k, k],
                                strides=[1, 1], pads=[1, 1, 1, 1], dilations=[1, 1], group=1)
                mask_w = b.const(f"{p}.conv2_mask.weight", b.normal((k * k, cin, k, k), 1.0 / np.sqrt(cin * k * k)))
                mask_b = b.const(f"{p}.conv2_mask.bias", b.normal((k * k,), 0.2))
                mask = b.node("Conv", [x, mask_w, mask_b], f"{p}.conv2_mask/Conv", kernel_shape=[k, k],
                              strides=[1, 1], pads=[1, 1, 1, 1], dilations=[1, 1], group=1)
                mask = b.node("Sigmoid", [mask], f"{p}.conv2_mask/Sigmoid")
                weight, bias = folded_conv_params(b, f"{p}.conv2", cout, cout, k, gain=1.0, gamma=LAST_BN_GAMMA)
                h = b.node("DeformConv", [h, weight, offset, bias, mask], f"{p}.conv2/DeformConv",
                           kernel_shape=[k, k], strides=[1, 1], pads=[1, 1, 1, 1], dilations=[1, 1],
                           group=1, offset_group=1)
            else:
                h = conv(b, h, f"{p}.conv2", cout, cout, 3, gain=1.0, gamma=LAST_BN_GAMMA)
            shortcut = x
            if stride != 1 or cin != cout:
                shortcut = conv(b, x, f"{p}.downsample", cin, cout, 1, stride=stride, gain=1.0)
            h = b.node("Add", [shortcut, h], f"{p}/residual/Add")
            x = b.node("Relu", [h], f"{p}/Relu")
            cin = cout
    classifier(b, x, 512, 1000)
    inputs, outputs = image_io(224, 1000)
    model = finish(b, "partition_cnn_bench", inputs, outputs,
                   "ResNet-18 (224x224x3 -> 1000 logits, BN folded, basic blocks [2,2,2,2]) whose layer2.1 "
                   "second 3x3 conv (128ch, 28x28) is a DeformConv (opset 19) with offsets from a 3x3 Conv "
                   "and a mask from Conv+Sigmoid of the block input; OpenVINO cannot run DeformConv, so "
                   "the graph partitions OpenVINO -> Cpu -> OpenVINO.", opset=DEFORM_OPSET)
    return model, image_feeds(rng, 224)


# --------------------------------------------------------------------------
# segnet_bench
# --------------------------------------------------------------------------


SEGNET_WIDTHS = (32, 64, 128)  # encoder stage widths; the decoder mirrors them
SEGNET_CLASSES = 12


def segmentation_io(size: int, classes: int, out_size: int):
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes, out_size, out_size])]
    return inputs, outputs


def build_segnet_bench(rng: np.random.Generator):
    """SegNet-style encoder-decoder: each encoder stage ends in a MaxPool that also returns
    its argmax indices, and the mirrored decoder stage starts with a MaxUnpool that puts
    values back at those positions. OpenVINO 2026.4 has no conversion rule for MaxUnpool
    while ORT's CPU EP implements it, so vinort and ORT+OpenVINO EP both split the graph
    into four OpenVINO pieces around three Cpu MaxUnpool nodes."""
    b = GraphBuilder(rng)

    def conv_relu(x, prefix, cin, cout, gain=np.sqrt(2.0)):
        return b.node("Relu", [conv(b, x, prefix, cin, cout, 3, gain=gain)], f"{prefix}/Relu")

    x = b.node("Relu", [conv(b, "input", "stem", 3, SEGNET_WIDTHS[0], 3, stride=2)], "stem/Relu")  # 32x112x112
    cin = SEGNET_WIDTHS[0]
    indices = []
    for stage, width in enumerate(SEGNET_WIDTHS):
        p = f"encoder{stage + 1}"
        x = conv_relu(x, f"{p}.conv1", cin, width)
        x = conv_relu(x, f"{p}.conv2", width, width)
        x, idx = b.node("MaxPool", [x], f"{p}/MaxPool", n_out=2, kernel_shape=[2, 2], strides=[2, 2])
        indices.append(idx)
        cin = width  # 32x56x56, 64x28x28, 128x14x14
    for stage in reversed(range(len(SEGNET_WIDTHS))):
        p = f"decoder{stage + 1}"
        # Even sizes throughout, so the inferred output size (2x) is the pre-pool size
        # and the optional output_shape input is not needed.
        x = b.node("MaxUnpool", [x, indices[stage]], f"{p}/MaxUnpool", kernel_shape=[2, 2], strides=[2, 2])
        width = SEGNET_WIDTHS[stage]
        cout = SEGNET_WIDTHS[max(stage - 1, 0)]
        # MaxUnpool leaves 3 of every 4 outputs zero, so the conv after it sees a quarter of
        # the He fan-in: a gain of sqrt(2 * 4) keeps the activations from halving per stage.
        x = conv_relu(x, f"{p}.conv1", width, width, gain=np.sqrt(2.0 * 4))
        x = conv_relu(x, f"{p}.conv2", width, cout)  # 64x28x28, 32x56x56, 32x112x112
    # per-pixel classifier: a plain 1x1 conv with bias (no BN), like the fc of the classifiers
    cin = SEGNET_WIDTHS[0]
    w = b.const("classifier.weight", b.normal((SEGNET_CLASSES, cin, 1, 1), 1.0 / np.sqrt(cin)))
    bias = b.const("classifier.bias", b.normal((SEGNET_CLASSES,), 0.05))
    b.node("Conv", [x, w, bias], "classifier/Conv", kernel_shape=[1, 1], strides=[1, 1], pads=[0, 0, 0, 0],
           dilations=[1, 1], group=1)
    b.nodes[-1].output[0] = "logits"
    inputs, outputs = segmentation_io(224, SEGNET_CLASSES, 112)
    model = finish(b, "segnet_bench", inputs, outputs,
                   "SegNet-style encoder-decoder (224x224x3 -> 12-class logits at 112x112): 3x3/2 conv stem to "
                   "32ch, encoder stages 32/64/128 of two 3x3 Conv+Relu (BN folded) then MaxPool 2x2/2 with "
                   "indices, decoder stages mirrored as MaxUnpool with the matching indices then two 3x3 "
                   "Conv+Relu, 1x1 conv classifier. OpenVINO cannot run MaxUnpool, so the graph partitions "
                   "OpenVINO -> Cpu -> OpenVINO -> Cpu -> OpenVINO -> Cpu -> OpenVINO.")
    return model, image_feeds(rng, 224)


# --------------------------------------------------------------------------
# BERT encoders
# --------------------------------------------------------------------------


def build_bert(rng: np.random.Generator, name: str, layers: int, hidden: int, heads: int, ffn: int,
               seq: int = 128, vocab: int = 30522, max_positions: int = 512, type_vocab: int = 2,
               padding: int = 16, torch_export: bool = False):
    """torch_export: write the position ids and the additive mask the way torch.onnx exports
    Hugging Face's BERT, the patterns onnxruntime.transformers' EmbedLayerNormalization and
    Attention fusions look for: `position_ids[:, :seq_len]` (Shape/Gather/Unsqueeze/Slice of
    a [1, max_positions] buffer) and `(1 - mask[:, None, None, :].float()) * -10000`
    (Unsqueeze, Unsqueeze, Cast, Sub, Mul). By default the positions are a [1, seq] constant and
    the int mask is Cast first and Unsqueezed last (the benchmark models' graph, kept as
    measured). Both forms compute the same values."""
    b = GraphBuilder(rng)
    head_dim = hidden // heads

    def linear(x, prefix, cin, cout):
        w = b.const(f"{prefix}.weight", b.normal((cin, cout), 1.0 / np.sqrt(cin)))
        bias = b.const(f"{prefix}.bias", b.normal((cout,), 0.05))
        y = b.node("MatMul", [x, w], f"{prefix}/MatMul")
        return b.node("Add", [y, bias], f"{prefix}/Add")

    def layer_norm(x, prefix):
        gamma = b.const(f"{prefix}.weight", b.uniform((hidden,), 0.8, 1.2))
        beta = b.const(f"{prefix}.bias", b.normal((hidden,), 0.05))
        return b.node("LayerNormalization", [x, gamma, beta], f"{prefix}/LayerNormalization",
                      axis=-1, epsilon=1e-12)

    # Embeddings: word + position + token type, then LayerNormalization.
    word_emb = b.const("embeddings.word_embeddings.weight", b.normal((vocab, hidden), 0.5))
    pos_emb = b.const("embeddings.position_embeddings.weight", b.normal((max_positions, hidden), 0.5))
    type_emb = b.const("embeddings.token_type_embeddings.weight", b.normal((type_vocab, hidden), 0.5))
    if torch_export:
        ids_shape = b.node("Shape", ["input_ids"], "embeddings/Shape")
        seq_len = b.node("Gather", [ids_shape, b.const("embeddings.seq_axis", i64(1))], "embeddings/Gather_len", axis=0)
        seq_len = b.node("Unsqueeze", [seq_len, b.const("embeddings.unsqueeze_len", i64([0]))], "embeddings/Unsqueeze")
        position_ids = b.node("Slice", [b.const("embeddings.position_ids", i64(np.arange(max_positions)[None, :])),
                                        b.const("embeddings.slice_start", i64([0])), seq_len,
                                        b.const("embeddings.slice_axes", i64([1])),
                                        b.const("embeddings.slice_steps", i64([1]))], "embeddings/Slice")
    else:
        position_ids = b.const("embeddings.position_ids", i64(np.arange(seq)[None, :]))
    words = b.node("Gather", [word_emb, "input_ids"], "embeddings/word_embeddings/Gather", axis=0)
    positions = b.node("Gather", [pos_emb, position_ids], "embeddings/position_embeddings/Gather", axis=0)
    types = b.node("Gather", [type_emb, "token_type_ids"], "embeddings/token_type_embeddings/Gather", axis=0)
    x = b.node("Add", [words, types], "embeddings/Add")
    x = b.node("Add", [x, positions], "embeddings/Add_1")
    x = layer_norm(x, "embeddings.LayerNorm")

    # Additive attention mask: (1 - mask) * -10000, shaped [1, 1, 1, seq].
    if torch_export:
        m = b.node("Unsqueeze", ["attention_mask", b.const("mask.unsqueeze_heads", i64([1]))], "mask/Unsqueeze")
        m = b.node("Unsqueeze", [m, b.const("mask.unsqueeze_queries", i64([2]))], "mask/Unsqueeze_1")
        m = b.node("Cast", [m], "mask/Cast", to=TensorProto.FLOAT)
        m = b.node("Sub", [b.const("mask.one", f32(1.0)), m], "mask/Sub")
        mask = b.node("Mul", [m, b.const("mask.neg_large", f32(-10000.0))], "mask/Mul")
    else:
        m = b.node("Cast", ["attention_mask"], "mask/Cast", to=TensorProto.FLOAT)
        m = b.node("Sub", [b.const("mask.one", f32(1.0)), m], "mask/Sub")
        m = b.node("Mul", [m, b.const("mask.neg_large", f32(-10000.0))], "mask/Mul")
        mask = b.node("Unsqueeze", [m, b.const("mask.unsqueeze_axes", i64([1, 2]))], "mask/Unsqueeze")

    split_heads_shape = b.const("attention.split_heads_shape", i64([1, seq, heads, head_dim]))
    merge_heads_shape = b.const("attention.merge_heads_shape", i64([1, seq, hidden]))
    scale = b.const("attention.scale", f32(np.sqrt(head_dim)))
    sqrt2 = b.const("gelu.sqrt2", f32(np.sqrt(2.0)))
    one = b.const("gelu.one", f32(1.0))
    half = b.const("gelu.half", f32(0.5))

    for li in range(layers):
        p = f"encoder.layer.{li}"
        q = linear(x, f"{p}.attention.self.query", hidden, hidden)
        k = linear(x, f"{p}.attention.self.key", hidden, hidden)
        v = linear(x, f"{p}.attention.self.value", hidden, hidden)
        q = b.node("Reshape", [q, split_heads_shape], f"{p}/attention/query/Reshape")
        k = b.node("Reshape", [k, split_heads_shape], f"{p}/attention/key/Reshape")
        v = b.node("Reshape", [v, split_heads_shape], f"{p}/attention/value/Reshape")
        q = b.node("Transpose", [q], f"{p}/attention/query/Transpose", perm=[0, 2, 1, 3])  # [1,H,S,D]
        k = b.node("Transpose", [k], f"{p}/attention/key/Transpose", perm=[0, 2, 3, 1])  # [1,H,D,S]
        v = b.node("Transpose", [v], f"{p}/attention/value/Transpose", perm=[0, 2, 1, 3])  # [1,H,S,D]
        s = b.node("MatMul", [q, k], f"{p}/attention/scores/MatMul")  # [1,H,S,S]
        s = b.node("Div", [s, scale], f"{p}/attention/scores/Div")
        s = b.node("Add", [s, mask], f"{p}/attention/scores/mask/Add")
        s = b.node("Softmax", [s], f"{p}/attention/Softmax", axis=-1)
        c = b.node("MatMul", [s, v], f"{p}/attention/context/MatMul")  # [1,H,S,D]
        c = b.node("Transpose", [c], f"{p}/attention/context/Transpose", perm=[0, 2, 1, 3])
        c = b.node("Reshape", [c, merge_heads_shape], f"{p}/attention/context/Reshape")  # [1,S,hidden]
        c = linear(c, f"{p}.attention.output.dense", hidden, hidden)
        c = b.node("Add", [c, x], f"{p}/attention/residual/Add")
        x = layer_norm(c, f"{p}.attention.output.LayerNorm")

        h = linear(x, f"{p}.intermediate.dense", hidden, ffn)
        # GELU (exact): x * 0.5 * (1 + erf(x / sqrt(2)))
        g = b.node("Div", [h, sqrt2], f"{p}/intermediate/gelu/Div")
        g = b.node("Erf", [g], f"{p}/intermediate/gelu/Erf")
        g = b.node("Add", [g, one], f"{p}/intermediate/gelu/Add")
        g = b.node("Mul", [h, g], f"{p}/intermediate/gelu/Mul")
        g = b.node("Mul", [g, half], f"{p}/intermediate/gelu/Mul_half")
        h = linear(g, f"{p}.output.dense", ffn, hidden)
        h = b.node("Add", [h, x], f"{p}/output/residual/Add")
        x = layer_norm(h, f"{p}.output.LayerNorm")

    b.nodes[-1].output[0] = "last_hidden_state"
    x = "last_hidden_state"

    # Pooler: first token (Gather index 0 on the sequence axis), Gemm (transB), Tanh.
    first = b.node("Gather", [x, b.const("pooler.first_token_index", i64(0))], "pooler/first_token/Gather", axis=1)
    w = b.const("pooler.dense.weight", b.normal((hidden, hidden), 1.0 / np.sqrt(hidden)))
    bias = b.const("pooler.dense.bias", b.normal((hidden,), 0.05))
    y = b.node("Gemm", [first, w, bias], "pooler/dense/Gemm", transB=1)
    b.node("Tanh", [y], "pooler/Tanh")
    b.nodes[-1].output[0] = "pooler_output"

    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, seq]),
        helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, [1, seq]),
    ]
    outputs = [
        helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, seq, hidden]),
        helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, [1, hidden]),
    ]
    model = finish(b, name, inputs, outputs,
                   f"BERT encoder: {layers} layers, hidden {hidden}, {heads} heads, FFN {ffn}, sequence {seq}, "
                   f"vocabulary {vocab}; word+position+token-type embeddings + LayerNormalization; attention as "
                   "MatMul/Add/Reshape/Transpose/MatMul/Div/Softmax/MatMul with the attention mask turned into "
                   "an additive bias (Cast/Sub/Mul, -10000); GELU with Erf; outputs last_hidden_state and "
                   "pooler_output (first token, Gemm, Tanh).")

    # Test input: [CLS] tokens [SEP] tokens [SEP], then `padding` [PAD] positions masked out.
    real = seq - padding
    input_ids = rng.integers(1000, vocab, (1, seq), dtype=np.int64)
    half_len = real // 2
    input_ids[0, 0], input_ids[0, half_len - 1], input_ids[0, real - 1] = 101, 102, 102
    input_ids[0, real:] = 0
    attention_mask = np.ones((1, seq), dtype=np.int64)
    attention_mask[0, real:] = 0
    token_type_ids = np.zeros((1, seq), dtype=np.int64)
    token_type_ids[0, half_len:real] = 1
    return model, {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}


def build_bert_base(rng):
    return build_bert(rng, "bert_base", layers=12, hidden=768, heads=12, ffn=3072)


def build_bert_mini(rng):
    return build_bert(rng, "bert_mini", layers=4, hidden=256, heads=4, ffn=1024)


def build_bert_mini_int8(rng):
    """bert_mini quantized the way users quantize a transformer for int8 CPU inference:
    onnxruntime.quantization's pre-processing and quantize_dynamic with int8 weights, MatMuls with
    a constant B only (scripts/gen_corpus.py's quantize_dynamic_int8). `rng` draws the float
    network, as for bert_mini."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import gen_corpus

    model, feeds = build_bert_mini(rng)
    return gen_corpus.quantize_dynamic_int8(model, {"MatMulConstBOnly": True}), feeds


def build_mobilenetv2_qdq(rng):
    """mobilenetv2 quantized the way users quantize a CNN for int8 CPU inference:
    onnxruntime.quantization's pre-processing and quantize_static in QDQ format, per-channel
    int8 weights, uint8 activations, calibrated on seeded random inputs (scripts/gen_corpus.py's
    quantize_static_qdq, the corpus's mobilenetv2_qdq_per_channel_u8s8). `rng` draws the
    float network, as for mobilenetv2."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import gen_corpus
    from onnxruntime.quantization import QuantType

    model, feeds = build_mobilenetv2(rng)
    return gen_corpus.quantize_static_qdq(model, "mobilenetv2_qdq", True, QuantType.QUInt8), feeds


def build_mobilenetv2_dynamic(rng):
    """mobilenetv2 quantized without calibration data: onnxruntime.quantization's pre-processing
    and quantize_dynamic, which puts a DynamicQuantizeLinear before every Conv and turns it into
    ConvInteger with uint8 weights (the weight type onnxruntime's ConvInteger takes). `rng` draws
    the float network, as for mobilenetv2."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import gen_corpus
    from onnxruntime.quantization import QuantType

    model, feeds = build_mobilenetv2(rng)
    return gen_corpus.quantize_dynamic_int8(model, weight_type=QuantType.QUInt8), feeds


def build_bert_mini_fused(rng, form=None):
    """bert_mini's shape in the form users hand to ONNX Runtime's tools (torch.onnx's position
    ids and mask), through optimize_model(bert) and then `form` (scripts/gen_corpus.py's
    to_float16 or quantize_4bit; the corpus applies the same tools to a 2-layer BERT)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import gen_corpus

    model, feeds = build_bert(rng, "bert_mini_fused", layers=4, hidden=256, heads=4, ffn=1024, torch_export=True)
    fused = gen_corpus.optimize_transformer(model, "bert", num_heads=4, hidden_size=256)
    return (form(fused) if form else fused), feeds


def tool_form(form_name):
    """A builder for bert_mini_fused after one of gen_corpus's tools; the float network draws
    from bert_mini_fused's generator, so all three forms share their weights."""

    def build(_rng):
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
        import gen_corpus

        return build_bert_mini_fused(model_rng("bert_mini_fused"), getattr(gen_corpus, form_name))

    return build


BUILDERS = {
    "mobilenetv2": build_mobilenetv2,
    "mobilenetv2_qdq": build_mobilenetv2_qdq,
    "mobilenetv2_dynamic": build_mobilenetv2_dynamic,
    "resnet50": build_resnet50,
    "bert_base": build_bert_base,
    "bert_mini": build_bert_mini,
    "bert_mini_int8": build_bert_mini_int8,
    "partition_cnn_bench": build_partition_cnn_bench,
    "segnet_bench": build_segnet_bench,
    "bert_mini_fused": build_bert_mini_fused,
    "bert_mini_fused_fp16": tool_form("to_float16"),
    "bert_mini_fused_matmul4bits": tool_form("quantize_4bit"),
}
assert list(BUILDERS) == BENCH_MODELS.split() + TOOL_MODELS.split()

# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------


def ort_session(path: Path) -> ort.InferenceSession:
    opts = ort.SessionOptions()  # default graph optimizations (ORT_ENABLE_ALL)
    opts.intra_op_num_threads = ORT_THREADS
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def check_output(name: str, out: onnx.ValueInfoProto, value: np.ndarray) -> None:
    declared = [d.dim_value for d in out.type.tensor_type.shape.dim]
    if list(value.shape) != declared:
        raise RuntimeError(f"{name}: output {out.name} has shape {value.shape}, declared {declared}")
    if not np.all(np.isfinite(value)):
        raise RuntimeError(f"{name}: output {out.name} is not finite")
    if value.size > 1 and float(np.ptp(value)) <= 1e-6 * max(1.0, float(np.abs(value).max())):
        raise RuntimeError(f"{name}: output {out.name} is (nearly) constant: {value.ravel()[:4]}")


def generate_one(name: str, out_dir: Path, stamp: str | None) -> dict:
    t0 = time.perf_counter()
    model, feeds = BUILDERS[name](model_rng(name))
    t_build = time.perf_counter() - t0
    size = model.ByteSize()
    if size > MAX_PROTO_BYTES:
        raise RuntimeError(f"{name}: {size} bytes is over the 2 GB protobuf limit")
    onnx.checker.check_model(model, full_check=True)

    final = out_dir / name
    if final.is_symlink() or (final.exists() and not final.is_dir()):
        raise RuntimeError(f"{final} exists and is not a folder; refusing to replace it")
    tmp = out_dir / f".{name}.tmp.{os.getpid()}"
    old = out_dir / f".{name}.old.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        ds = tmp / "test_data_set_0"
        ds.mkdir(parents=True)
        onnx.save(model, tmp / "model.onnx", save_as_external_data=False)
        for i, inp in enumerate(model.graph.input):
            (ds / f"input_{i}.pb").write_bytes(numpy_helper.from_array(feeds[inp.name], inp.name).SerializeToString())

        t1 = time.perf_counter()
        sess = ort_session(tmp / "model.onnx")
        t_session = time.perf_counter() - t1
        names = [o.name for o in model.graph.output]
        t2 = time.perf_counter()
        outputs = sess.run(names, feeds)
        t_first = time.perf_counter() - t2
        t3 = time.perf_counter()
        sess.run(names, feeds)
        t_warm = time.perf_counter() - t3
        del sess
        stats = []
        for i, (out, value) in enumerate(zip(model.graph.output, outputs)):
            check_output(name, out, value)
            stats.append(f"{out.name} {list(value.shape)} mean {value.mean():+.4f} std {value.std():.4f} "
                         f"range [{value.min():.3f}, {value.max():.3f}]")
            (ds / f"output_{i}.pb").write_bytes(numpy_helper.from_array(value, out.name).SerializeToString())
        if stamp is not None:
            (tmp / STAMP_FILE).write_text(stamp + "\n")
        # Swap into place: rename(2) cannot replace a non-empty folder, so move the old one aside first.
        if final.exists():
            final.rename(old)
        tmp.rename(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)

    hist = collections.Counter(n.op_type for n in model.graph.node)
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    file_size = (final / "model.onnx").stat().st_size
    print(f"{name}: {file_size / 1e6:.1f} MB, {len(model.graph.node)} nodes, {params:,} parameters, "
          f"opset {model.opset_import[0].version}, IR {model.ir_version}")
    print("    ops: " + ", ".join(f"{op} {n}" for op, n in sorted(hist.items())))
    for s in stats:
        print(f"    {s}")
    total = time.perf_counter() - t0
    print(f"    build {t_build:.1f}s, ORT session {t_session:.2f}s, ORT run {t_first * 1e3:.1f} ms "
          f"(first) / {t_warm * 1e3:.1f} ms (second), {ORT_THREADS} threads; total {total:.1f}s", flush=True)
    return {"name": name, "bytes": file_size, "params": params, "nodes": len(model.graph.node),
            "ort_first_ms": t_first * 1e3, "ort_warm_ms": t_warm * 1e3, "seconds": total}


# --------------------------------------------------------------------------
# OpenVINO verification
# --------------------------------------------------------------------------


def load_test_data(model_dir: Path, model: onnx.ModelProto):
    ds = model_dir / "test_data_set_0"

    def load(path):
        t = TensorProto()
        t.ParseFromString(path.read_bytes())
        return numpy_helper.to_array(t)

    feeds = {inp.name: load(ds / f"input_{i}.pb") for i, inp in enumerate(model.graph.input)}
    expected = {out.name: load(ds / f"output_{i}.pb") for i, out in enumerate(model.graph.output)}
    return feeds, expected


def compare(label: str, got: np.ndarray, ref: np.ndarray) -> float:
    got = np.asarray(got, dtype=np.float64).reshape(ref.shape)
    ref = np.asarray(ref, dtype=np.float64)
    diff = np.abs(got - ref)
    scale = float(np.abs(ref).max())
    big = np.abs(ref) >= 1e-2 * scale
    rel = float((diff[big] / np.abs(ref[big])).max()) if big.any() else 0.0
    max_abs = float(diff.max())
    print(f"    {label}: max abs diff {max_abs:.3e}, max |ref| {scale:.3g}, max abs / max |ref| "
          f"{max_abs / max(scale, 1e-30):.3e}, max rel diff {rel:.3e} (over |ref| >= 1% of max)")
    return max_abs / max(scale, 1e-30)


def openvino_compile(core, model):
    return core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})


def openvino_run(compiled, feeds: dict[str, np.ndarray], out_names: list[str]):
    req = compiled.create_infer_request()
    t0 = time.perf_counter()
    req.infer(feeds)
    t_first = time.perf_counter() - t0
    t1 = time.perf_counter()
    req.infer(feeds)
    t_warm = time.perf_counter() - t1
    results = {name: np.array(req.get_tensor(name).data) for name in out_names}
    return results, t_first, t_warm


def openvino_pieces(model: onnx.ModelProto, refused: set[str]) -> list[list[int]]:
    """The OpenVINO-side pieces of a graph OpenVINO refuses as a whole: the maximal runs
    of nodes (indices, graph order) between nodes whose op is in `refused`."""
    pieces: list[list[int]] = [[]]
    for i, n in enumerate(model.graph.node):
        if n.op_type in refused:
            pieces.append([])
        else:
            pieces[-1].append(i)
    return [p for p in pieces if p]


def piece_boundary(model: onnx.ModelProto, piece: list[int]) -> tuple[list[str], list[str]]:
    """(inputs, outputs) of a piece: the tensors it reads that come from outside it (graph
    inputs or other nodes; not initializers), and the tensors it makes that are read
    outside it or are graph outputs."""
    members = set(piece)
    made = [o for i in piece for o in model.graph.node[i].output if o]
    skip = set(made) | {t.name for t in model.graph.initializer}
    inputs = list(dict.fromkeys(t for i in piece for t in model.graph.node[i].input if t and t not in skip))
    read_outside = {t for i, n in enumerate(model.graph.node) if i not in members for t in n.input}
    read_outside |= {o.name for o in model.graph.output}
    return inputs, [o for o in made if o in read_outside]


def compare_exact(label: str, got: np.ndarray, ref: np.ndarray) -> bool:
    """Integer tensors (MaxPool indices) must match exactly: a MaxUnpool scatters by them."""
    got = np.asarray(got).reshape(ref.shape)
    bad = int(np.count_nonzero(got != ref))
    print(f"    {label}: {ref.dtype} {'equal' if bad == 0 else f'{bad} of {ref.size} DIFFER'} ({ref.size} values)")
    return bad == 0


def verify_split_on_openvino(core, model: onnx.ModelProto, feeds, expected, refused: set[str]) -> bool:
    """OpenVINO refuses the ops in `refused`: check every OpenVINO-side piece between them
    instead, fed with the cut tensors computed by onnxruntime."""
    pieces = [(p, *piece_boundary(model, p)) for p in openvino_pieces(model, refused)]
    graph_inputs = {i.name for i in model.graph.input}
    graph_outputs = {o.name for o in model.graph.output}
    cut = sorted({t for _, ins, outs in pieces for t in ins + outs} - graph_inputs - graph_outputs)
    inferred = onnx.shape_inference.infer_shapes(model)
    infos = {v.name: v for v in inferred.graph.value_info}
    # One onnxruntime run with every cut tensor appended as an extra graph output.
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in cut:
        probe.graph.output.append(infos[name])
    with tempfile.TemporaryDirectory() as tmp:
        probe_path = Path(tmp) / "probe.onnx"
        onnx.save(probe, probe_path)
        sess = ort_session(probe_path)
        values = dict(zip(cut, sess.run(cut, feeds)))
        del sess
    values.update(feeds)
    values.update(expected)
    extractor = onnx.utils.Extractor(inferred)
    nodes = model.graph.node
    ok = True
    for k, (piece, ins, outs) in enumerate(pieces):
        part = extractor.extract_model(ins, outs)
        ov_model = core.read_model(part.SerializeToString(), b"")
        got, t_first, t_warm = openvino_run(openvino_compile(core, ov_model), {t: values[t] for t in ins}, outs)
        print(f"  OpenVINO piece {k + 1}/{len(pieces)}: {nodes[piece[0]].name} .. {nodes[piece[-1]].name}, "
              f"{len(part.graph.node)} nodes, run {t_first * 1e3:.1f} / {t_warm * 1e3:.1f} ms")
        print(f"    from {', '.join(ins)}")
        for t in outs:
            if np.issubdtype(values[t].dtype, np.integer):
                ok &= compare_exact(t, got[t], values[t])
            else:
                ok &= compare(t, got[t], values[t]) < 1e-3
    return ok


def verify_openvino(names: list[str], out_dir: Path) -> bool:
    import openvino as ov

    core = ov.Core()
    print(f"OpenVINO {ov.__version__} vs onnxruntime {ort.__version__} reference outputs (CPU, f32):")
    all_ok = True
    for name in names:
        model_dir = out_dir / name
        path = model_dir / "model.onnx"
        model = onnx.load(path)
        feeds, expected = load_test_data(model_dir, model)
        print(f"{name}:")
        try:
            t0 = time.perf_counter()
            compiled = openvino_compile(core, str(path))
            t_compile = time.perf_counter() - t0
        except RuntimeError as e:
            refused = {n.op_type for n in model.graph.node} & REFUSED_BY_OPENVINO
            text = str(e)
            summary = [line[3:].strip() for line in text.split("Summary:")[-1].splitlines() if line.startswith("-- ")]
            print(f"  OpenVINO refused the whole model: {'; '.join(summary) or text.strip()}")
            if not refused:
                all_ok = False
                continue
            print(f"  (expected: vinort runs {', '.join(sorted(refused))} on Cpu)")
            all_ok &= verify_split_on_openvino(core, model, feeds, expected, refused)
            continue
        got, t_first, t_warm = openvino_run(compiled, feeds, list(expected))
        del compiled
        print(f"  compile {t_compile:.2f}s, run {t_first * 1e3:.1f} ms (first) / {t_warm * 1e3:.1f} ms (second)")
        for k, ref in expected.items():
            all_ok &= compare(k, got[k], ref) < 1e-3
    return all_ok


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"models to write (default: all of {BENCH_MODELS})")
    parser.add_argument("--out-dir", type=Path,
                        default=Path(os.environ.get("VINORT_BENCH_MODELS") or REPO_ROOT / "models" / "generated"))
    parser.add_argument("--stamp", help=f"text to record in <name>/{STAMP_FILE} (scripts/gen-bench-models)")
    parser.add_argument("--verify-openvino", action="store_true", help="after writing, compare OpenVINO with ORT")
    parser.add_argument("--verify-only", action="store_true", help="only compare existing models with OpenVINO")
    args = parser.parse_args()
    names = args.names or BENCH_MODELS.split()
    unknown = [n for n in names if n not in BUILDERS]
    if unknown:
        parser.error(f"unknown model(s) {' '.join(unknown)}; known: {BENCH_MODELS} {TOOL_MODELS}")
    out_dir = args.out_dir.resolve()

    if not args.verify_only:
        out_dir.mkdir(parents=True, exist_ok=True)
        print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__}; writing to {out_dir}")
        t0 = time.perf_counter()
        rows = [generate_one(name, out_dir, args.stamp) for name in names]
        print(f"generated {len(rows)} model(s), {sum(r['bytes'] for r in rows) / 1e6:.1f} MB, "
              f"in {time.perf_counter() - t0:.1f}s")
    if args.verify_only or args.verify_openvino:
        if not verify_openvino(names, out_dir):
            print("OpenVINO verification FAILED", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
