#!/usr/bin/env python3
"""Generate vinort's sample ONNX models and their reference outputs.

Usage (from the repository root):

    PY=$(scripts/py-env | tail -1)
    "$PY" models/generate.py

Writes, next to this file, one folder per model in the standard ONNX test
layout:

    models/<name>/model.onnx
    models/<name>/test_data_set_0/input_<i>.pb    (onnx.TensorProto)
    models/<name>/test_data_set_0/output_<i>.pb   (onnx.TensorProto)

Weights and inputs come from a fixed numpy seed (no downloads); reference
outputs come from onnxruntime's CPU execution provider with every graph
optimization disabled (ORT_DISABLE_ALL) and one thread, so running the script
twice produces byte-identical files.

Only the ops of vinort's first kernel set are used.
"""

from __future__ import annotations

import collections
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import exact_int8  # noqa: E402

OPSET = 17
IR_VERSION = 8  # the IR version that shipped with opset 17
PRODUCER = "vinort models/generate.py"
MODELS_DIR = Path(__file__).resolve().parent
SEED = 20240601


class GraphBuilder:
    """Small helper: named nodes, initializers, unique value names."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._names: set[str] = set()

    def _unique(self, name: str) -> str:
        if name in self._names:
            raise ValueError(f"duplicate name {name}")
        self._names.add(name)
        return name

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(array), self._unique(name)))
        return name

    def node(self, op: str, inputs: list[str], name: str, n_out: int = 1, domain: str = "", **attrs) -> str | list[str]:
        name = self._unique(name)
        outputs = [name] if n_out == 1 else [f"{name}_out{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=name, domain=domain, **attrs))
        return outputs[0] if n_out == 1 else outputs

    def normal(self, shape, std: float) -> np.ndarray:
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    def uniform(self, shape, lo: float, hi: float) -> np.ndarray:
        return self.rng.uniform(lo, hi, shape).astype(np.float32)


def f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def finish_model(b: GraphBuilder, name: str, inputs, outputs, opsets) -> onnx.ModelProto:
    graph = helper.make_graph(b.nodes, name, inputs, outputs, initializer=b.initializers)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid(domain, version) for domain, version in opsets],
        producer_name=PRODUCER,
        producer_version="1",
        ir_version=IR_VERSION,
    )
    model.doc_string = f"vinort sample model '{name}', generated with seed {SEED}"
    return model


# --------------------------------------------------------------------------
# mobilenetv2_tiny
# --------------------------------------------------------------------------


def build_mobilenetv2_tiny(rng: np.random.Generator) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    b = GraphBuilder(rng)
    relu6_min = b.const("relu6_min", f32(0.0))
    relu6_max = b.const("relu6_max", f32(6.0))

    def conv(x, prefix, cin, cout, k, stride=1, group=1, bias=False):
        fan_in = (cin // group) * k * k
        w = b.const(f"{prefix}.weight", b.normal((cout, cin // group, k, k), np.sqrt(2.0 / fan_in)))
        ins = [x, w]
        if bias:
            ins.append(b.const(f"{prefix}.bias", b.normal((cout,), 0.1)))
        pad = k // 2
        return b.node(
            "Conv", ins, f"{prefix}/Conv",
            kernel_shape=[k, k], strides=[stride, stride], pads=[pad, pad, pad, pad],
            dilations=[1, 1], group=group,
        )

    def bn(x, prefix, c):
        scale = b.const(f"{prefix}.bn.scale", b.uniform((c,), 0.5, 1.5))
        shift = b.const(f"{prefix}.bn.bias", b.normal((c,), 0.1))
        mean = b.const(f"{prefix}.bn.running_mean", b.normal((c,), 0.2))
        var = b.const(f"{prefix}.bn.running_var", b.uniform((c,), 0.5, 2.0))
        return b.node("BatchNormalization", [x, scale, shift, mean, var], f"{prefix}/BatchNormalization",
                      epsilon=1e-5, momentum=0.9)

    def relu6(x, prefix):
        return b.node("Clip", [x, relu6_min, relu6_max], f"{prefix}/Relu6")

    # Stem: 3x64x64 -> 16x32x32
    x = conv("input", "stem", 3, 16, 3, stride=2)
    x = relu6(bn(x, "stem", 16), "stem")

    # (expand ratio, out channels, stride)
    blocks = [
        (1, 16, 1),  # no expand conv, residual
        (4, 24, 2),  # 16x16
        (4, 24, 1),  # residual
        (4, 32, 2),  # 8x8
        (4, 32, 1),  # residual
        (4, 48, 1),  # channel change, no residual
    ]
    cin = 16
    for i, (t, cout, stride) in enumerate(blocks):
        p = f"block{i}"
        h = x
        hidden = cin * t
        if t != 1:
            h = relu6(bn(conv(h, f"{p}.expand", cin, hidden, 1), f"{p}.expand", hidden), f"{p}.expand")
        h = conv(h, f"{p}.depthwise", hidden, hidden, 3, stride=stride, group=hidden)
        h = relu6(bn(h, f"{p}.depthwise", hidden), f"{p}.depthwise")
        h = bn(conv(h, f"{p}.project", hidden, cout, 1), f"{p}.project", cout)
        if stride == 1 and cin == cout:
            h = b.node("Add", [x, h], f"{p}/residual/Add")
        x = h
        cin = cout

    # Head: 1x1 conv with bias (no BN) -> ReLU6 -> GAP -> Flatten -> Gemm -> Softmax
    x = relu6(conv(x, "head", cin, 128, 1, bias=True), "head")
    x = b.node("GlobalAveragePool", [x], "head/GlobalAveragePool")
    x = b.node("Flatten", [x], "head/Flatten", axis=1)
    w = b.const("classifier.weight", b.normal((10, 128), np.sqrt(2.0 / 128)))
    bias = b.const("classifier.bias", b.normal((10,), 0.1))
    x = b.node("Gemm", [x, w, bias], "classifier/Gemm", alpha=1.0, beta=1.0, transB=1)
    x = b.node("Softmax", [x], "classifier/Softmax", axis=-1)
    b.nodes[-1].output[0] = "probabilities"

    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 64, 64])]
    outputs = [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 10])]
    model = finish_model(b, "mobilenetv2_tiny", inputs, outputs, [("", OPSET)])
    feeds = {"input": rng.standard_normal((1, 3, 64, 64)).astype(np.float32)}
    return model, feeds


# --------------------------------------------------------------------------
# bert_tiny
# --------------------------------------------------------------------------


def build_bert_tiny(rng: np.random.Generator) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    b = GraphBuilder(rng)
    vocab, seq, hidden, heads, ffn, layers = 100, 16, 32, 4, 64, 2
    head_dim = hidden // heads

    def linear(x, prefix, cin, cout):
        w = b.const(f"{prefix}.weight", b.normal((cin, cout), 1.0 / np.sqrt(cin)))
        bias = b.const(f"{prefix}.bias", b.normal((cout,), 0.05))
        y = b.node("MatMul", [x, w], f"{prefix}/MatMul")
        return b.node("Add", [y, bias], f"{prefix}/Add")

    def layer_norm(x, prefix):
        gamma = b.const(f"{prefix}.gamma", b.uniform((hidden,), 0.8, 1.2))
        beta = b.const(f"{prefix}.beta", b.normal((hidden,), 0.1))
        return b.node("LayerNormalization", [x, gamma, beta], f"{prefix}/LayerNormalization",
                      axis=-1, epsilon=1e-12)

    # Embeddings: word (Gather on input_ids) + position (Range over the
    # runtime sequence length, then Gather).
    word_emb = b.const("embeddings.word", b.normal((vocab, hidden), 0.5))
    pos_emb = b.const("embeddings.position", b.normal((seq, hidden), 0.5))
    words = b.node("Gather", [word_emb, "input_ids"], "embeddings/word/Gather", axis=0)
    ids_shape = b.node("Shape", ["input_ids"], "embeddings/position/Shape")
    seq_len = b.node("Gather", [ids_shape, b.const("embeddings.position.seq_axis", i64(1))],
                     "embeddings/position/seq_len/Gather", axis=0)
    positions = b.node("Range", [b.const("embeddings.position.start", i64(0)), seq_len,
                                 b.const("embeddings.position.delta", i64(1))],
                       "embeddings/position/Range")
    positions = b.node("Unsqueeze", [positions, b.const("embeddings.position.unsqueeze_axes", i64([0]))],
                       "embeddings/position/Unsqueeze")
    pos = b.node("Gather", [pos_emb, positions], "embeddings/position/Gather", axis=0)
    x = b.node("Add", [words, pos], "embeddings/Add")
    x = layer_norm(x, "embeddings.ln")

    # Additive attention mask: (1 - mask) * -10000, shaped [1, 1, 1, seq].
    m = b.node("Cast", ["attention_mask"], "mask/Cast", to=TensorProto.FLOAT)
    m = b.node("Sub", [b.const("mask.one", f32(1.0)), m], "mask/Sub")
    m = b.node("Mul", [m, b.const("mask.neg_large", f32(-10000.0))], "mask/Mul")
    mask = b.node("Unsqueeze", [m, b.const("mask.unsqueeze_axes", i64([1, 2]))], "mask/Unsqueeze")

    split_heads_shape = b.const("attention.split_heads_shape", i64([1, seq, heads, head_dim]))
    merge_heads_shape = b.const("attention.merge_heads_shape", i64([0, 0, -1]))
    scale = b.const("attention.scale", f32(np.sqrt(head_dim)))
    sqrt2 = b.const("gelu.sqrt2", f32(np.sqrt(2.0)))
    one = b.const("gelu.one", f32(1.0))
    half = b.const("gelu.half", f32(0.5))

    for li in range(layers):
        p = f"layer{li}"
        q = linear(x, f"{p}.attention.query", hidden, hidden)
        k = linear(x, f"{p}.attention.key", hidden, hidden)
        v = linear(x, f"{p}.attention.value", hidden, hidden)
        q = b.node("Reshape", [q, split_heads_shape], f"{p}/attention/query/Reshape")
        k = b.node("Reshape", [k, split_heads_shape], f"{p}/attention/key/Reshape")
        v = b.node("Reshape", [v, split_heads_shape], f"{p}/attention/value/Reshape")
        q = b.node("Transpose", [q], f"{p}/attention/query/Transpose", perm=[0, 2, 1, 3])  # [1,4,16,8]
        k = b.node("Transpose", [k], f"{p}/attention/key/Transpose", perm=[0, 2, 3, 1])  # [1,4,8,16]
        v = b.node("Transpose", [v], f"{p}/attention/value/Transpose", perm=[0, 2, 1, 3])  # [1,4,16,8]
        s = b.node("MatMul", [q, k], f"{p}/attention/scores/MatMul")  # [1,4,16,16]
        s = b.node("Div", [s, scale], f"{p}/attention/scores/Div")
        s = b.node("Add", [s, mask], f"{p}/attention/scores/mask/Add")
        s = b.node("Softmax", [s], f"{p}/attention/Softmax", axis=-1)
        c = b.node("MatMul", [s, v], f"{p}/attention/context/MatMul")  # [1,4,16,8]
        c = b.node("Transpose", [c], f"{p}/attention/context/Transpose", perm=[0, 2, 1, 3])
        c = b.node("Reshape", [c, merge_heads_shape], f"{p}/attention/context/Reshape")  # [1,16,32]
        c = linear(c, f"{p}.attention.output", hidden, hidden)
        c = b.node("Add", [c, x], f"{p}/attention/residual/Add")
        x = layer_norm(c, f"{p}.attention.ln")

        h = linear(x, f"{p}.ffn.intermediate", hidden, ffn)
        # GELU: x * 0.5 * (1 + erf(x / sqrt(2)))
        g = b.node("Div", [h, sqrt2], f"{p}/ffn/gelu/Div")
        g = b.node("Erf", [g], f"{p}/ffn/gelu/Erf")
        g = b.node("Add", [g, one], f"{p}/ffn/gelu/Add")
        g = b.node("Mul", [h, g], f"{p}/ffn/gelu/Mul")
        g = b.node("Mul", [g, half], f"{p}/ffn/gelu/Mul_half")
        h = linear(g, f"{p}.ffn.output", ffn, hidden)
        h = b.node("Add", [h, x], f"{p}/ffn/residual/Add")
        x = layer_norm(h, f"{p}.ffn.ln")

    b.nodes[-1].output[0] = "last_hidden_state"
    x = "last_hidden_state"

    # Pooler: first token via Slice + Squeeze, Gemm (transB), Tanh.
    first = b.node("Slice", [x, b.const("pooler.slice_starts", i64([0])), b.const("pooler.slice_ends", i64([1])),
                             b.const("pooler.slice_axes", i64([1])), b.const("pooler.slice_steps", i64([1]))],
                   "pooler/first_token/Slice")  # [1,1,32]
    first = b.node("Squeeze", [first, b.const("pooler.squeeze_axes", i64([1]))], "pooler/first_token/Squeeze")
    w = b.const("pooler.weight", b.normal((hidden, hidden), 1.0 / np.sqrt(hidden)))
    bias = b.const("pooler.bias", b.normal((hidden,), 0.05))
    y = b.node("Gemm", [first, w, bias], "pooler/Gemm", transB=1)
    b.node("Tanh", [y], "pooler/Tanh")
    b.nodes[-1].output[0] = "pooled"

    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, seq]),
    ]
    outputs = [
        helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, seq, hidden]),
        helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [1, hidden]),
    ]
    model = finish_model(b, "bert_tiny", inputs, outputs, [("", OPSET)])
    input_ids = rng.integers(0, vocab, (1, seq), dtype=np.int64)
    attention_mask = np.ones((1, seq), dtype=np.int64)
    attention_mask[0, 12:] = 0  # 12 real tokens, 4 padding
    return model, {"input_ids": input_ids, "attention_mask": attention_mask}


# --------------------------------------------------------------------------
# unknown_op
# --------------------------------------------------------------------------


def build_unknown_op() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Relu", ["x"], ["relu_0"], name="relu_0"),
        helper.make_node("FancyOp", ["relu_0"], ["fancy_0"], name="fancy_0", domain="com.example", alpha=0.5),
        helper.make_node("Relu", ["fancy_0"], ["relu_1"], name="relu_1"),
        helper.make_node("NotARealOp", ["relu_1"], ["y"], name="not_a_real_op_0"),
    ]
    graph = helper.make_graph(
        nodes, "unknown_op",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.example", 1)],
        producer_name=PRODUCER, producer_version="1", ir_version=IR_VERSION,
    )
    model.doc_string = "vinort sample model 'unknown_op': loads, but cannot be run (FancyOp, NotARealOp)"
    return model


# --------------------------------------------------------------------------
# partition_cnn: an op OpenVINO gets wrong in the middle of a CNN
# --------------------------------------------------------------------------


def build_partition_cnn(rng: np.random.Generator) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """Conv/Relu, then Softmax at opset 11 over axis 1 of a rank-4 tensor, then Conv/Relu/pool.

    At opset 11 Softmax flattens the input to 2-D at `axis` and normalises over the whole
    tail (C*H*W here). OpenVINO 2026.4.1 normalises over the one axis instead (measured by
    scripts/probe_openvino_ops.py), so vinort must run this node on Cpu: the session splits
    into OpenVINO -> Cpu -> OpenVINO partitions.
    """
    w1 = f32(rng.normal(0, 0.4, (8, 3, 3, 3)))
    b1 = f32(rng.normal(0, 0.1, (8,)))
    w2 = f32(rng.normal(0, 0.4, (4, 8, 1, 1)))
    b2 = f32(rng.normal(0, 0.1, (4,)))
    nodes = [
        helper.make_node("Conv", ["input", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Softmax", ["r1"], ["sm"], name="softmax_flattening", axis=1),
        helper.make_node("Mul", ["sm", "scale"], ["sm_scaled"], name="rescale"),
        helper.make_node("Conv", ["sm_scaled", "w2", "b2"], ["c2"], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["output"], name="flatten"),
    ]
    inits = [
        numpy_helper.from_array(w1, "w1"),
        numpy_helper.from_array(b1, "b1"),
        numpy_helper.from_array(w2, "w2"),
        numpy_helper.from_array(b2, "b2"),
        numpy_helper.from_array(f32([8 * 16 * 16.0]), "scale"),
    ]
    graph = helper.make_graph(
        nodes, "partition_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 4])],
        initializer=inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 11)], producer_name=PRODUCER, producer_version="1",
        ir_version=IR_VERSION,
    )
    model.doc_string = "vinort sample model 'partition_cnn': Softmax-11 (wrong on OpenVINO) inside a CNN"
    feeds = {"input": f32(rng.normal(0, 1, (1, 3, 16, 16)))}
    return model, feeds


# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------


def reference_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # uint8 x int8 products are exact in ONNX Runtime only on VNNI CPUs: see exact_int8.
    model, feeds = exact_int8.u8u8_equivalent(model, feeds)
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in model.graph.output]
    return sess.run(names, feeds)


def write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def write_model(name: str, model: onnx.ModelProto, feeds: dict[str, np.ndarray] | None) -> None:
    out_dir = MODELS_DIR / name
    if out_dir.exists():
        shutil.rmtree(out_dir)
    if feeds is not None:
        onnx.checker.check_model(model, full_check=True)
    write_bytes(out_dir / "model.onnx", model.SerializeToString())
    if feeds is None:
        return
    ds = out_dir / "test_data_set_0"
    for i, inp in enumerate(model.graph.input):
        tensor = numpy_helper.from_array(feeds[inp.name], inp.name)
        write_bytes(ds / f"input_{i}.pb", tensor.SerializeToString())
    outputs = reference_outputs(model, feeds)
    for i, (out, value) in enumerate(zip(model.graph.output, outputs)):
        declared = [d.dim_value for d in out.type.tensor_type.shape.dim]
        if list(value.shape) != declared:
            raise RuntimeError(f"{name}: output {out.name} has shape {value.shape}, declared {declared}")
        if not np.all(np.isfinite(value)):
            raise RuntimeError(f"{name}: output {out.name} is not finite")
        tensor = numpy_helper.from_array(value, out.name)
        write_bytes(ds / f"output_{i}.pb", tensor.SerializeToString())


def summarize(name: str, model: onnx.ModelProto) -> None:
    hist = collections.Counter(
        (f"{n.domain}::{n.op_type}" if n.domain else n.op_type) for n in model.graph.node
    )
    path = MODELS_DIR / name / "model.onnx"
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    print(f"{name}: {path.stat().st_size} bytes, {len(model.graph.node)} nodes, {params} parameters")
    for op, count in sorted(hist.items()):
        print(f"    {op:<22} {count}")


def main() -> int:
    rng = np.random.default_rng(SEED)
    built = {}
    model, feeds = build_mobilenetv2_tiny(rng)
    built["mobilenetv2_tiny"] = (model, feeds)
    model, feeds = build_bert_tiny(rng)
    built["bert_tiny"] = (model, feeds)
    built["unknown_op"] = (build_unknown_op(), None)
    model, feeds = build_partition_cnn(rng)
    built["partition_cnn"] = (model, feeds)

    print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__}")
    for name, (model, feeds) in built.items():
        write_model(name, model, feeds)
        summarize(name, model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
