#!/usr/bin/env python3
"""Measure which ONNX ops the installed OpenVINO really runs on CPU, and how well.

For every op of the seed list (default ONNX domain), every schema version in
effect from opset 7 up to the newest opset ONNX defines, and every input
element type that schema allows for the op's key type constraint, this builds a
minimal single-node ONNX model, asks OpenVINO (read_model, query_model,
compile_model with INFERENCE_PRECISION_HINT=f32, infer) and compares the
results with onnxruntime's CPU provider (falling back to onnx's reference
evaluator, then to a small numpy reference, when onnxruntime cannot run the
model).

Output: crates/vinort-openvino/data/ov_cpu_rules.tsv, consumed by
crates/vinort-openvino/src/rules/ (see its docs for the format).

Verdicts:
  supported      read, query, compile, infer all fine and results match
  unsupported    OpenVINO refused (read/query/compile/infer error, or a crash)
  wrong_result   OpenVINO ran it but the results differ from the reference
  model_invalid  the probe model itself is not valid ONNX (e.g. a deprecated
                 schema version); skipped

Each (op, schema version, dtype) case runs in a worker process so that a crash
inside OpenVINO is recorded as a verdict instead of killing the probe.

Usage: python3 scripts/probe_openvino_ops.py [--out PATH] [--ops Op1,Op2] [--jobs N]
"""

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
import zlib

import numpy as np
import onnx
import onnx.defs
from onnx import TensorProto, helper, numpy_helper

MIN_OPSET = 7
DEVICE = "CPU"
RTOL = 1e-3
ATOL = 1e-5
# One unit in the last place of the narrow float types is larger than RTOL
# (bfloat16: 2^-8 relative), so compare those with a tolerance of about 2 ulps.
NARROW_RTOL = {TensorProto.FLOAT16: 2e-3, TensorProto.BFLOAT16: 1.6e-2}
CASE_TIMEOUT = 20.0

SEED_OPS = """Abs Acos Acosh Add And ArgMax ArgMin Asin Asinh Atan Atanh AveragePool
BatchNormalization BitShift Ceil Celu Cast Clip Concat Constant ConstantOfShape Conv ConvInteger
ConvTranspose Cos Cosh CumSum DepthToSpace DequantizeLinear Div Dropout Einsum Elu Equal Erf Exp
Expand EyeLike Flatten Floor Gather GatherElements GatherND Gemm GlobalAveragePool GlobalLpPool
GlobalMaxPool Greater GreaterOrEqual GridSample Hardmax HardSigmoid Identity If ImageScaler
InstanceNormalization LeakyRelu Less LessOrEqual Log LogSoftmax Loop LRN LSTM MatMul MatMulInteger
Max MaxPool Mean MeanVarianceNormalization Min Mod Mul Neg NonMaxSuppression NonZero Not OneHot Or
Pad Pow PRelu QuantizeLinear QLinearMatMul Range Reciprocal ReduceL1 ReduceL2 ReduceLogSum
ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum ReduceSumSquare Relu Reshape
Resize ReverseSequence RoiAlign Round Scatter ScatterElements ScatterND Selu Shape Shrink Sigmoid
Sign Sin Sinh Size Slice Softmax Softplus Softsign SpaceToDepth Split Sqrt Squeeze Sub Sum Tan Tanh
ThresholdedRelu Tile TopK Transpose Unsqueeze Upsample Where Xor
LayerNormalization Gelu HardSwish GroupNormalization Mish Trilu""".split()

# The element types probed (when the schema allows them).
PROBE_TYPES = {
    "tensor(float)": TensorProto.FLOAT,
    "tensor(float16)": TensorProto.FLOAT16,
    "tensor(bfloat16)": TensorProto.BFLOAT16,
    "tensor(double)": TensorProto.DOUBLE,
    "tensor(int8)": TensorProto.INT8,
    "tensor(uint8)": TensorProto.UINT8,
    "tensor(int16)": TensorProto.INT16,
    "tensor(uint16)": TensorProto.UINT16,
    "tensor(int32)": TensorProto.INT32,
    "tensor(int64)": TensorProto.INT64,
    "tensor(uint32)": TensorProto.UINT32,
    "tensor(uint64)": TensorProto.UINT64,
    "tensor(bool)": TensorProto.BOOL,
    "tensor(string)": TensorProto.STRING,
}
TYPE_NAME = {v: k[len("tensor(") : -1] for k, v in PROBE_TYPES.items()}
FLOATS = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE}
UNSIGNED = {TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64}
F, I64, I32, B, U8, I8 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL, TensorProto.UINT8, TensorProto.INT8

# Which input's element type decides the verdict (the dtype column), when it is
# not input 0. "out" means the dtype column is the type of the output / the
# node's value attribute (no input carries it); the lookup then aggregates.
KEY_INPUT = {"Where": 1, "OneHot": 2, "Constant": "out", "ConstantOfShape": "out", "If": "out", "Loop": "out"}
# Ops whose probe covers a single element type per version.
SINGLE_DTYPE = {"If": F, "Loop": F}


class Skip(Exception):
    """The probe cannot build a model for this case."""


def np_dtype(dt):
    if dt == TensorProto.BFLOAT16:
        return np.float32  # fed as float32 and cast inside the model
    if dt == TensorProto.STRING:
        return object
    return helper.tensor_dtype_to_np_dtype(dt)


def bf16_tensor(name, arr):
    """A bfloat16 TensorProto in raw_data, the layout exporters write.

    (OpenVINO 2026.4 misreads bfloat16 tensors stored in int32_data: it takes
    the bit patterns as numbers.)
    """
    import ml_dtypes
    arr = np.asarray(arr, dtype=np.float32)
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.BFLOAT16
    t.dims.extend(arr.shape)
    t.raw_data = arr.astype(ml_dtypes.bfloat16).tobytes()
    return t


class Ctx:
    """Collects one probe model."""

    def __init__(self, op, opset, dt, schema, variant, seed):
        self.op, self.opset, self.dt, self.schema, self.variant = op, opset, dt, schema, variant
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inputs, self.inits, self.outputs, self.feeds = [], [], [], [], {}
        self.ref = None  # optional numpy reference: feeds -> list of outputs

    def attr(self, name):
        return self.schema is not None and name in self.schema.attributes

    def values(self, shape, kind="any", dt=None):
        dt = self.dt if dt is None else dt
        r, n = self.rng, int(np.prod(shape)) if shape else 1
        if dt == TensorProto.STRING:
            return np.array(r.choice(["a", "bc", "def", ""], size=n), dtype=object).reshape(shape)
        if dt == TensorProto.BOOL:
            return r.integers(0, 2, size=n).astype(bool).reshape(shape)
        if dt in FLOATS:
            lo, hi = {"any": (-48, 48), "pos": (4, 48), "unit": (-14, 14), "ge1": (16, 48), "few": (-2, 2),
                      "small": (0, 48), "nonzero": (-48, 48), "exp": (-2, 2)}[kind]
            if kind == "few":
                v = r.integers(-2, 3, size=n) * 8
            else:
                v = r.integers(lo, hi + 1, size=n)
            if kind == "nonzero":
                v = np.where(v == 0, 16, v)
            return (v / 16.0).astype(np_dtype(dt)).reshape(shape)
        signed = dt not in UNSIGNED
        lo, hi = {"any": (-6 if signed else 0, 6 if signed else 9), "pos": (1, 6), "unit": (0, 1), "ge1": (1, 4),
                  "few": (-1 if signed else 0, 1), "small": (0, 3), "nonzero": (-6 if signed else 1, 6), "exp": (0, 3)}[kind]
        v = r.integers(lo, hi + 1, size=n)
        if kind == "nonzero":
            v = np.where(v == 0, 3, v)
        return v.astype(np_dtype(dt)).reshape(shape)

    def x(self, name, shape, kind="any", dt=None, value=None):
        dt = self.dt if dt is None else dt
        v = self.values(shape, kind, dt) if value is None else np.asarray(value, dtype=np_dtype(dt))
        self.inputs.append((name, dt, list(v.shape)))
        self.feeds[name] = v
        return name

    def init(self, name, value, dt):
        arr = np.asarray(value, dtype=np_dtype(dt))
        if dt == TensorProto.BFLOAT16:
            t = bf16_tensor(name, arr)
        elif dt == TensorProto.STRING:
            t = helper.make_tensor(name, dt, arr.shape, [s.encode() for s in arr.flatten()])
        else:
            t = numpy_helper.from_array(arr, name)
        self.inits.append(t)
        return name

    def node(self, op, ins, outs, **attrs):
        self.nodes.append(helper.make_node(op, ins, outs, **attrs))

    def out(self, name, dt=None, shape=None):
        self.outputs.append((name, self.dt if dt is None else dt, shape))


# ---------------------------------------------------------------- builders

UNARY = {  # op: (value kind, attributes)
    "Abs": ("any", {}), "Acos": ("unit", {}), "Acosh": ("ge1", {}), "Asin": ("unit", {}), "Asinh": ("any", {}),
    "Atan": ("any", {}), "Atanh": ("unit", {}), "Ceil": ("any", {}), "Cos": ("any", {}), "Cosh": ("any", {}),
    "Erf": ("any", {}), "Exp": ("any", {}), "Floor": ("any", {}), "Log": ("pos", {}), "Neg": ("any", {}),
    "Reciprocal": ("nonzero", {}), "Round": ("any", {}), "Sigmoid": ("any", {}), "Sign": ("any", {}),
    "Sin": ("any", {}), "Sinh": ("any", {}), "Softplus": ("any", {}), "Softsign": ("any", {}), "Sqrt": ("pos", {}),
    "Tan": ("unit", {}), "Tanh": ("any", {}), "Relu": ("any", {}), "Not": ("any", {}), "Identity": ("any", {}),
    "Elu": ("any", {"alpha": 0.5}), "Celu": ("any", {"alpha": 0.5}), "Selu": ("any", {}),
    "HardSigmoid": ("any", {}), "LeakyRelu": ("any", {"alpha": 0.1}), "ThresholdedRelu": ("any", {"alpha": 1.0}),
    "Shrink": ("any", {"lambd": 0.5, "bias": 0.25}), "Mish": ("any", {}), "HardSwish": ("any", {}),
    # Softmax on the last axis: opsets 11-12 flatten from `axis` on, which OpenVINO gets wrong;
    # that attribute case is a semantics rule (crates/vinort-openvino/src/semantics/mod.rs).
    "Softmax": ("any", {"axis": -1}), "LogSoftmax": ("any", {"axis": 1}), "Hardmax": ("any", {"axis": -1}),
    "Dropout": ("any", {}), "Flatten": ("any", {"axis": 1}),
}


def b_unary(c):
    kind, attrs = UNARY[c.op]
    if c.op == "Shrink" and c.dt not in FLOATS:
        attrs = {"lambd": 1.0, "bias": 0.0}  # integral values keep integer Shrink exact
    c.x("X", [2, 3, 4], kind)
    c.node(c.op, ["X"], ["Y"], **attrs)
    c.out("Y")


def b_gelu(c):
    c.x("X", [2, 3, 4])
    c.node("Gelu", ["X"], ["Y"], approximate=c.variant)
    c.out("Y")


def b_meta(c):  # Shape, Size
    c.x("X", [2, 3, 4])
    c.node(c.op, ["X"], ["Y"])
    c.out("Y", I64)


def b_nonzero(c):
    c.x("X", [3, 4], "few")
    c.node("NonZero", ["X"], ["Y"])
    c.out("Y", I64)


BINARY = {  # op: (kind A, kind B, output type or None)
    "Add": ("any", "any", None), "Sub": ("any", "any", None), "Mul": ("any", "any", None),
    "Div": ("any", "nonzero", None), "And": ("any", "any", None), "Or": ("any", "any", None),
    "Xor": ("any", "any", None), "Equal": ("few", "few", B), "Greater": ("few", "few", B),
    "GreaterOrEqual": ("few", "few", B), "Less": ("few", "few", B), "LessOrEqual": ("few", "few", B),
    "Mod": ("any", "nonzero", None),
}


def b_binary(c):
    ka, kb, odt = BINARY[c.op]
    if c.op == "Div" and c.dt not in FLOATS and c.dt not in UNSIGNED:
        pass  # signed integer division with negative operands: checks truncation toward zero
    attrs = {}
    if c.op == "Mod":
        attrs["fmod"] = 1 if (c.dt in FLOATS or c.variant == "fmod1") else 0
    c.x("A", [2, 3, 4], ka)
    c.x("B", [3, 4], kb)
    c.node(c.op, ["A", "B"], ["Y"], **attrs)
    c.out("Y", odt)


def b_pow(c):
    if c.dt in FLOATS:
        c.x("A", [2, 3, 4], "pos")
    else:
        c.x("A", [2, 3, 4], "any")
    ins = [x.type_str for x in c.schema.inputs]
    edt = c.dt
    if ins[1] != ins[0]:
        allowed = allowed_types(c.schema, ins[1])
        if c.dt not in allowed:
            edt = F
    c.x("B", [3, 4], "exp" if c.dt not in FLOATS else "few", dt=edt)
    c.node("Pow", ["A", "B"], ["Y"])
    c.out("Y")


def b_bitshift(c):
    c.x("A", [2, 3, 4])
    c.x("B", [3, 4], "small")
    c.node("BitShift", ["A", "B"], ["Y"], direction=c.variant)
    c.out("Y")


def b_prelu(c):
    c.x("X", [2, 3, 4])
    c.x("S", [4], "few")
    c.node("PRelu", ["X", "S"], ["Y"])
    c.out("Y")


def b_variadic(c):
    c.x("A", [2, 3, 4])
    c.x("B", [2, 3, 4] if c.schema.since_version < 8 else [3, 4])
    c.node(c.op, ["A", "B"], ["Y"])
    c.out("Y")


def b_where(c):
    c.x("C", [2, 3, 4], dt=B)
    c.x("A", [2, 3, 4])
    c.x("B", [3, 4])
    c.node("Where", ["C", "A", "B"], ["Y"])
    c.out("Y")


def b_arg(c):
    c.x("X", [3, 4], value=c.rng.permutation(12).reshape(3, 4) - (0 if c.dt in UNSIGNED else 6))
    c.node(c.op, ["X"], ["Y"], axis=1, keepdims=1)
    c.out("Y", I64)


def b_reduce(c):
    kind = "pos" if c.op in ("ReduceLogSum", "ReduceL1", "ReduceL2") else ("few" if c.op == "ReduceProd" else "any")
    c.x("X", [2, 3, 4], kind)
    if c.attr("axes"):
        c.node(c.op, ["X"], ["Y"], axes=[1], keepdims=1)
    else:
        c.init("axes", [1], I64)
        c.node(c.op, ["X", "axes"], ["Y"], keepdims=1)
    c.out("Y")


def b_cumsum(c):
    c.x("X", [2, 3, 4], "few")
    c.init("axis", np.array(1), I64)
    c.node("CumSum", ["X", "axis"], ["Y"])
    c.out("Y")


def b_topk(c):
    v = c.rng.permutation(12).reshape(3, 4) - (0 if c.dt in UNSIGNED else 6)
    c.x("X", [3, 4], value=v)
    if c.attr("k"):
        c.node("TopK", ["X"], ["V", "I"], k=2, axis=-1)
    else:
        c.init("K", [2], I64)
        c.node("TopK", ["X", "K"], ["V", "I"], axis=-1)
    c.out("V")
    c.out("I", I64)


def b_cast(c):
    to = {"float": F, "float16": TensorProto.FLOAT16, "double": TensorProto.DOUBLE, "int32": I32, "int64": I64,
          "uint8": U8, "int8": I8, "bool": B}[c.variant]
    if c.dt == TensorProto.STRING or to == c.dt:
        raise Skip("trivial")
    if c.dt in FLOATS:
        v = c.rng.integers(0, 160, size=24).reshape(2, 3, 4) / 16.0  # fractions in [0, 10): truncation check
        if to not in UNSIGNED and to != B:
            v = v - 5.0
        c.x("X", [2, 3, 4], value=v)
    else:
        c.x("X", [2, 3, 4], "any")
    c.node("Cast", ["X"], ["Y"], to=to)
    c.out("Y", to)


def b_clip(c):
    c.x("X", [2, 3, 4])
    if c.attr("min"):
        c.node("Clip", ["X"], ["Y"], min=-1.0, max=1.5)
    else:
        c.init("lo", np.array(-1 if c.dt not in UNSIGNED else 2), c.dt)
        c.init("hi", np.array(2 if c.dt not in FLOATS else 1.5), c.dt)
        c.node("Clip", ["X", "lo", "hi"], ["Y"])
    c.out("Y")


def b_concat(c):
    c.x("A", [2, 3, 4])
    c.x("B", [2, 2, 4])
    c.node("Concat", ["A", "B"], ["Y"], axis=1)
    c.out("Y")


def value_attr_tensor(c, shape):
    v = c.values(shape)
    if c.dt == TensorProto.BFLOAT16:
        return bf16_tensor("v", v), v
    if c.dt == TensorProto.STRING:
        return helper.make_tensor("v", c.dt, shape, [s.encode() for s in v.flatten()]), v
    return numpy_helper.from_array(v, "v"), v


def b_constant(c):
    t, v = value_attr_tensor(c, [2, 3])
    c.node("Constant", [], ["Y"], value=t)
    c.out("Y")
    c.ref = lambda feeds: [v]


def b_constant_of_shape(c):
    t, v = value_attr_tensor(c, [1])
    c.x("S", [2], dt=I64, value=[2, 3])
    c.node("ConstantOfShape", ["S"], ["Y"], value=t)
    c.out("Y")


def b_conv(c):
    c.x("X", [1, 2, 4, 4])
    c.init("W", c.values([3, 2, 1, 1], "few"), c.dt)
    c.init("Bi", c.values([3], "few"), c.dt)
    c.node("Conv", ["X", "W", "Bi"], ["Y"], kernel_shape=[1, 1])
    c.out("Y")


def b_conv3(c):  # a 3x3 conv with padding and stride, the common real-world case
    c.x("X", [1, 2, 5, 5])
    c.init("W", c.values([3, 2, 3, 3], "few"), c.dt)
    c.node("Conv", ["X", "W"], ["Y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    c.out("Y")


def b_convt(c):
    c.x("X", [1, 2, 3, 3])
    c.init("W", c.values([2, 3, 2, 2], "few"), c.dt)
    c.node("ConvTranspose", ["X", "W"], ["Y"], kernel_shape=[2, 2], strides=[2, 2])
    c.out("Y")


def b_convint(c):
    c.x("X", [1, 2, 4, 4])
    c.init("W", c.values([3, 2, 1, 1], "few"), c.dt)
    c.init("xz", np.array(1), c.dt)
    c.node("ConvInteger", ["X", "W", "xz"], ["Y"], kernel_shape=[1, 1])
    c.out("Y", I32)


def b_matmulint(c):
    c.x("A", [2, 3])
    c.init("Bm", c.values([3, 4], "few"), c.dt)
    c.init("az", np.array(1), c.dt)
    c.node("MatMulInteger", ["A", "Bm", "az"], ["Y"])
    c.out("Y", I32)


def b_qlinearmatmul(c):
    c.x("A", [2, 3], value=c.rng.integers(0, 100, size=(2, 3)) - (0 if c.dt in UNSIGNED else 50))
    sdt = F
    c.init("as", np.array(0.05), sdt)
    c.init("az", np.array(3), c.dt)
    c.init("Bm", c.values([3, 4], "any"), c.dt)
    c.init("bs", np.array(0.1), sdt)
    c.init("bz", np.array(1), c.dt)
    c.init("ys", np.array(0.02), sdt)
    c.init("yz", np.array(5), c.dt)
    c.node("QLinearMatMul", ["A", "as", "az", "Bm", "bs", "bz", "ys", "yz"], ["Y"])
    c.out("Y")


def b_dequant(c):
    c.x("X", [2, 3, 4], value=c.rng.integers(0, 100, size=(2, 3, 4)) - (0 if c.dt in UNSIGNED else 50))
    c.init("s", np.array(0.125), F)
    ins = ["X", "s"]
    if c.dt != I32:
        c.init("z", np.array(3), c.dt)
        ins.append("z")
    c.node("DequantizeLinear", ins, ["Y"])
    c.out("Y", F)


def b_quant(c):
    zdt = U8 if c.variant.startswith("uint8") else I8
    if c.variant.endswith("noties"):  # x / scale never exactly n + 0.5
        c.x("X", [2, 3, 4], value=c.values([2, 3, 4]).astype(np.float64) + 1.0 / 64)
    else:  # many x / scale == n + 0.5: checks round-half-to-even
        c.x("X", [2, 3, 4])
    c.init("s", np.array(0.125), c.dt if c.opset >= 19 else F)
    c.init("z", np.array(3), zdt)
    c.node("QuantizeLinear", ["X", "s", "z"], ["Y"])
    c.out("Y", zdt)


def b_pool(c):
    c.x("X", [1, 2, 4, 4])
    attrs = {"kernel_shape": [2, 2]}
    if c.variant == "pad":
        attrs.update(strides=[2, 2], pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    c.node(c.op, ["X"], ["Y"], **attrs)
    c.out("Y")


def b_global_pool(c):
    c.x("X", [1, 2, 3, 3])
    c.node(c.op, ["X"], ["Y"])
    c.out("Y")


def b_batchnorm(c):
    c.x("X", [1, 2, 3, 3])
    pdt = c.dt
    for n, k in (("sc", "few"), ("bi", "few"), ("mu", "few"), ("var", "pos")):
        c.init(n, c.values([2], k, pdt), pdt)
    c.node("BatchNormalization", ["X", "sc", "bi", "mu", "var"], ["Y"])
    c.out("Y")


def b_instnorm(c):
    c.x("X", [1, 2, 3, 3])
    c.init("sc", c.values([2], "few"), c.dt)
    c.init("bi", c.values([2], "few"), c.dt)
    c.node("InstanceNormalization", ["X", "sc", "bi"], ["Y"])
    c.out("Y")


def b_layernorm(c):
    c.x("X", [2, 3, 4])
    c.init("sc", c.values([4], "few"), c.dt)
    c.init("bi", c.values([4], "few"), c.dt)
    c.node("LayerNormalization", ["X", "sc", "bi"], ["Y"], axis=-1)
    c.out("Y")


def b_groupnorm(c):
    c.x("X", [1, 4, 2, 2])
    n = 2 if c.schema.since_version < 21 else 4
    c.init("sc", c.values([n], "few"), c.dt)
    c.init("bi", c.values([n], "few"), c.dt)
    c.node("GroupNormalization", ["X", "sc", "bi"], ["Y"], num_groups=2)
    c.out("Y", None, [1, 4, 2, 2])


def b_mvn(c):
    c.x("X", [1, 2, 3, 3])
    c.node("MeanVarianceNormalization", ["X"], ["Y"])
    c.out("Y")


def b_lrn(c):
    c.x("X", [1, 4, 2, 2])
    c.node("LRN", ["X"], ["Y"], size=3)
    c.out("Y")


def b_depth_to_space(c):
    c.x("X", [1, 8, 2, 2])
    attrs = {"blocksize": 2}
    if c.attr("mode"):
        attrs["mode"] = c.variant
    c.node("DepthToSpace", ["X"], ["Y"], **attrs)
    c.out("Y")


def b_space_to_depth(c):
    c.x("X", [1, 2, 4, 4])
    c.node("SpaceToDepth", ["X"], ["Y"], blocksize=2)
    c.out("Y")


def b_einsum(c):
    c.x("A", [2, 3])
    c.x("B", [3, 4])
    c.node("Einsum", ["A", "B"], ["Y"], equation="ij,jk->ik")
    c.out("Y")


def b_matmul(c):
    c.x("A", [2, 2, 3])
    c.x("B", [3, 4])
    c.node("MatMul", ["A", "B"], ["Y"])
    c.out("Y")


def b_gemm(c):
    c.x("A", [2, 3])
    c.init("Bm", c.values([4, 3], "few"), c.dt)
    c.init("C", c.values([4], "few"), c.dt)
    ab = {"alpha": 0.5, "beta": 2.0} if c.dt in FLOATS else {}  # float scalars on integers: ill-defined
    c.node("Gemm", ["A", "Bm", "C"], ["Y"], transB=1, **ab)
    c.out("Y")


def b_expand(c):
    c.x("X", [3, 1])
    c.init("shape", [2, 3, 4], I64)
    c.node("Expand", ["X", "shape"], ["Y"])
    c.out("Y")


def b_eyelike(c):
    c.x("X", [3, 4])
    c.node("EyeLike", ["X"], ["Y"], k=1)
    c.out("Y")


def b_gather(c):
    c.x("X", [3, 4])
    c.init("idx", [2, -1, 0] if c.opset >= 11 else [2, 0, 1], I64)
    c.node("Gather", ["X", "idx"], ["Y"], axis=0)
    c.out("Y")


def b_gather_elements(c):
    c.x("X", [3, 4])
    c.init("idx", [[0, 3], [1, 1], [2, 0]], I64)
    c.node("GatherElements", ["X", "idx"], ["Y"], axis=1)
    c.out("Y")


def b_gather_nd(c):
    c.x("X", [2, 2, 3])
    c.init("idx", [[0, 1], [1, 0]], I64)
    c.node("GatherND", ["X", "idx"], ["Y"])
    c.out("Y")


def b_scatter_elements(c):
    c.x("X", [3, 3])
    c.init("idx", [[1, 0, 2], [0, 2, 1]], I64)
    c.x("U", [2, 3])
    c.node(c.op, ["X", "idx", "U"], ["Y"], axis=0)
    c.out("Y")


def b_scatter_nd(c):
    c.x("X", [4, 3])
    c.init("idx", [[1], [3]], I64)
    c.x("U", [2, 3])
    c.node("ScatterND", ["X", "idx", "U"], ["Y"])
    c.out("Y")


def b_grid_sample(c):
    c.x("X", [1, 1, 4, 4])
    c.x("G", [1, 2, 2, 2], "unit", dt=c.dt if c.dt in FLOATS else F)
    c.node("GridSample", ["X", "G"], ["Y"])
    c.out("Y")


def b_roialign(c):
    c.x("X", [1, 1, 4, 4])
    c.init("rois", [[0.5, 0.5, 3.0, 3.0]], c.dt)
    c.init("bi", [0], I64)
    c.node("RoiAlign", ["X", "rois", "bi"], ["Y"], output_height=2, output_width=2, sampling_ratio=2)
    c.out("Y")


def b_nms(c):
    c.x("boxes", [1, 4, 4], value=[[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3], [0, 4, 1, 5]]])
    c.x("scores", [1, 1, 4], value=[[[0.9, 0.8, 0.7, 0.3]]])
    c.init("mob", [3], I64)
    c.init("iou", [0.5], F)
    c.init("st", [0.2], F)
    c.node("NonMaxSuppression", ["boxes", "scores", "mob", "iou", "st"], ["Y"])
    c.out("Y", I64, [None, 3])


def b_onehot(c):
    c.x("I", [2, 3], dt=I64, value=[[0, 2, 1], [3, -1 if c.opset >= 11 else 1, 0]])
    c.init("depth", np.array(4), I64)
    c.init("vals", c.values([2], "pos") if c.dt != B else [False, True], c.dt)
    c.node("OneHot", ["I", "depth", "vals"], ["Y"], axis=-1)
    c.out("Y")


def b_pad(c):
    c.x("X", [2, 3])
    mode = c.variant
    if c.attr("pads"):
        c.node("Pad", ["X"], ["Y"], pads=[0, 1, 1, 0], mode=mode)
    else:
        c.init("pads", [0, 1, 1, 0], I64)
        c.node("Pad", ["X", "pads"], ["Y"], mode=mode)
    c.out("Y")


def b_range(c):
    if c.dt in UNSIGNED:
        raise Skip("unsigned not allowed")
    c.x("s", [], value=1)
    c.x("l", [], value=10)
    c.x("d", [], value=2 if c.dt not in FLOATS else 1.5)
    c.node("Range", ["s", "l", "d"], ["Y"])
    c.out("Y")


def b_reshape(c):
    c.x("X", [2, 3, 4])
    if c.attr("shape"):
        c.node("Reshape", ["X"], ["Y"], shape=[4, -1])
    else:
        c.init("shape", [4, 0, -1] if c.variant == "zero" else [4, -1], I64)
        c.node("Reshape", ["X", "shape"], ["Y"])
    c.out("Y")


def b_resize(c):
    c.x("X", [1, 1, 2, 3])
    scales = [1.0, 1.0, 2.0, 2.0]
    mode = c.variant
    if c.schema.since_version < 11:
        c.init("sc", scales, F)
        c.node("Resize", ["X", "sc"], ["Y"], mode=mode)
    else:
        c.init("roi", np.zeros([0]), F)
        c.init("sc", scales, F)
        c.node("Resize", ["X", "roi" if c.schema.since_version < 13 else "", "sc"], ["Y"], mode=mode)
    c.out("Y")
    if mode == "nearest":  # x2 nearest is a repeat for every coordinate mode used here
        c.ref = lambda f: [np.repeat(np.repeat(f["X"], 2, axis=2), 2, axis=3)]


def b_upsample(c):
    c.x("X", [1, 1, 2, 3])
    if c.attr("scales"):
        c.node("Upsample", ["X"], ["Y"], scales=[1.0, 1.0, 2.0, 2.0], mode="nearest")
    else:
        c.init("sc", [1.0, 1.0, 2.0, 2.0], F)
        c.node("Upsample", ["X", "sc"], ["Y"], mode="nearest")
    c.out("Y")
    c.ref = lambda f: [np.repeat(np.repeat(f["X"], 2, axis=2), 2, axis=3)]


def b_reverse_sequence(c):
    c.x("X", [4, 2, 3])
    c.init("lens", [3, 2], I64)
    c.node("ReverseSequence", ["X", "lens"], ["Y"], time_axis=0, batch_axis=1)
    c.out("Y")


def b_slice(c):
    c.x("X", [4, 5])
    if c.attr("starts"):
        c.node("Slice", ["X"], ["Y"], starts=[1, 0], ends=[3, 4], axes=[0, 1])
    else:
        c.init("st", [1, 4], I64)
        c.init("en", [3, 0], I64)
        c.init("ax", [0, 1], I64)
        c.init("sp", [1, -2], I64)  # includes a negative step
        c.node("Slice", ["X", "st", "en", "ax", "sp"], ["Y"])
    c.out("Y")


def b_split(c):
    c.x("X", [4, 3])
    if c.opset >= 18:
        c.node("Split", ["X"], ["Y0", "Y1"], axis=0, num_outputs=2)
    else:
        c.node("Split", ["X"], ["Y0", "Y1"], axis=0)
    c.out("Y0")
    c.out("Y1")


def b_squeeze(c):
    c.x("X", [2, 1, 3])
    if c.attr("axes"):
        c.node("Squeeze", ["X"], ["Y"], axes=[1])
    else:
        c.init("axes", [1], I64)
        c.node("Squeeze", ["X", "axes"], ["Y"])
    c.out("Y")


def b_unsqueeze(c):
    c.x("X", [2, 3])
    if c.attr("axes"):
        c.node("Unsqueeze", ["X"], ["Y"], axes=[0, 3])
    else:
        c.init("axes", [0, 3], I64)
        c.node("Unsqueeze", ["X", "axes"], ["Y"])
    c.out("Y")


def b_tile(c):
    c.x("X", [2, 3])
    c.init("rep", [2, 1], I64)
    c.node("Tile", ["X", "rep"], ["Y"])
    c.out("Y")


def b_transpose(c):
    c.x("X", [2, 3, 4])
    c.node("Transpose", ["X"], ["Y"], perm=[2, 0, 1])
    c.out("Y")


def b_trilu(c):
    c.x("X", [3, 4])
    c.init("k", np.array(1), I64)
    c.node("Trilu", ["X", "k"], ["Y"], upper=1 if c.variant == "upper" else 0)
    c.out("Y")


def b_lstm(c):
    h = 2
    c.x("X", [2, 1, 3], "few")
    c.init("W", c.values([1, 4 * h, 3], "few"), c.dt)
    c.init("R", c.values([1, 4 * h, h], "few"), c.dt)
    c.node("LSTM", ["X", "W", "R"], ["Y", "Yh"], hidden_size=h)
    c.out("Y")
    c.out("Yh")


def b_imagescaler(c):
    c.x("X", [1, 2, 2, 2])
    c.node("ImageScaler", ["X"], ["Y"], scale=2.0, bias=[0.5, -1.0])
    c.out("Y")
    c.ref = lambda f: [(f["X"] * 2.0 + np.array([0.5, -1.0]).reshape(1, 2, 1, 1)).astype(f["X"].dtype)]


def b_if(c):
    c.x("cond", [], dt=B, value=True)
    c.x("X", [2, 3], dt=F)
    then_g = helper.make_graph([helper.make_node("Relu", ["X"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", F, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["X"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", F, [2, 3])])
    c.node("If", ["cond"], ["Y"], then_branch=then_g, else_branch=else_g)
    c.out("Y", F)


def b_loop(c):
    c.init("M", np.array(3), I64)
    c.x("V", [2, 3], dt=F)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cin"], ["cout"]), helper.make_node("Add", ["vin", "vin"], ["vout"])],
        "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cin", B, []),
         helper.make_tensor_value_info("vin", F, [2, 3])],
        [helper.make_tensor_value_info("cout", B, []), helper.make_tensor_value_info("vout", F, [2, 3])])
    c.node("Loop", ["M", "", "V"], ["Y"], body=body)
    c.out("Y", F, [2, 3])


BUILDERS = {op: b_unary for op in UNARY}
BUILDERS.update({op: b_binary for op in BINARY})
BUILDERS.update({op: b_variadic for op in ("Max", "Min", "Mean", "Sum")})
BUILDERS.update({op: b_reduce for op in SEED_OPS if op.startswith("Reduce")})
BUILDERS.update({
    "Gelu": b_gelu, "Shape": b_meta, "Size": b_meta, "NonZero": b_nonzero, "Pow": b_pow, "BitShift": b_bitshift,
    "PRelu": b_prelu, "Where": b_where, "ArgMax": b_arg, "ArgMin": b_arg, "CumSum": b_cumsum, "TopK": b_topk,
    "Cast": b_cast, "Clip": b_clip, "Concat": b_concat, "Constant": b_constant,
    "ConstantOfShape": b_constant_of_shape, "Conv": None, "ConvTranspose": b_convt, "ConvInteger": b_convint,
    "MatMulInteger": b_matmulint, "QLinearMatMul": b_qlinearmatmul, "DequantizeLinear": b_dequant,
    "QuantizeLinear": b_quant, "AveragePool": b_pool, "MaxPool": b_pool, "GlobalAveragePool": b_global_pool,
    "GlobalMaxPool": b_global_pool, "GlobalLpPool": b_global_pool, "BatchNormalization": b_batchnorm,
    "InstanceNormalization": b_instnorm, "LayerNormalization": b_layernorm, "GroupNormalization": b_groupnorm,
    "MeanVarianceNormalization": b_mvn, "LRN": b_lrn, "DepthToSpace": b_depth_to_space,
    "SpaceToDepth": b_space_to_depth, "Einsum": b_einsum, "MatMul": b_matmul, "Gemm": b_gemm, "Expand": b_expand,
    "EyeLike": b_eyelike, "Gather": b_gather, "GatherElements": b_gather_elements, "GatherND": b_gather_nd,
    "Scatter": b_scatter_elements, "ScatterElements": b_scatter_elements, "ScatterND": b_scatter_nd,
    "GridSample": b_grid_sample, "RoiAlign": b_roialign, "NonMaxSuppression": b_nms, "OneHot": b_onehot,
    "Pad": b_pad, "Range": b_range, "Reshape": b_reshape, "Resize": b_resize, "Upsample": b_upsample,
    "ReverseSequence": b_reverse_sequence, "Slice": b_slice, "Split": b_split, "Squeeze": b_squeeze,
    "Unsqueeze": b_unsqueeze, "Tile": b_tile, "Transpose": b_transpose, "Trilu": b_trilu, "LSTM": b_lstm,
    "ImageScaler": b_imagescaler, "If": b_if, "Loop": b_loop,
})


def conv_builder(c):
    return b_conv3(c) if c.variant == "3x3" else b_conv(c)


BUILDERS["Conv"] = conv_builder

# Several variants per case; the case's verdict is the worst of them.
VARIANTS = {
    "Cast": ["float", "float16", "int32", "int64", "uint8", "bool"],
    "QuantizeLinear": ["uint8", "int8", "uint8-noties", "int8-noties"], "MaxPool": ["k2", "pad"], "AveragePool": ["k2", "pad"],
    "Conv": ["1x1", "3x3"], "DepthToSpace": ["DCR", "CRD"], "Resize": ["nearest", "linear"],
    "Pad": ["constant", "reflect", "edge"], "Trilu": ["upper", "lower"], "BitShift": ["LEFT", "RIGHT"],
    "Gelu": ["none", "tanh"], "Mod": ["fmod0", "fmod1"], "Reshape": ["plain", "zero"],
}


# ------------------------------------------------------------ schema work


def allowed_types(schema, type_str):
    if type_str.startswith("tensor("):
        return [PROBE_TYPES[type_str]] if type_str in PROBE_TYPES else []
    for tc in schema.type_constraints:
        if tc.type_param_str == type_str:
            return [PROBE_TYPES[t] for t in tc.allowed_type_strs if t in PROBE_TYPES]
    return []


def key_type_str(op, schema):
    key = KEY_INPUT.get(op, 0)
    if key == "out":
        return schema.outputs[0].type_str
    return schema.inputs[key].type_str


def schema_versions(op):
    """[(schema or None, since, until)] for opsets MIN_OPSET..latest."""
    latest = onnx.defs.onnx_opset_version()
    hist = sorted((s for s in onnx.defs.get_all_schemas_with_history() if s.domain == "" and s.name == op),
                  key=lambda s: s.since_version)
    if not hist:
        return [(None, MIN_OPSET, latest)]
    out = []
    for i, s in enumerate(hist):
        until = hist[i + 1].since_version - 1 if i + 1 < len(hist) else latest
        if until < MIN_OPSET:
            continue
        out.append((s, max(s.since_version, MIN_OPSET), until))
    return out


def case_dtypes(op, schema):
    if op in SINGLE_DTYPE:
        return [SINGLE_DTYPE[op]]
    if schema is None:  # ImageScaler: float types per its old experimental definition
        return [F, TensorProto.FLOAT16, TensorProto.DOUBLE]
    if op == "Constant":
        return [t for t in PROBE_TYPES.values()]
    if op == "ConstantOfShape":
        return allowed_types(schema, "T2")
    return sorted(set(allowed_types(schema, key_type_str(op, schema))))


def key_inputs_spec(op):
    """Which node inputs carry the dtype column's type (from the newest schema)."""
    key = KEY_INPUT.get(op, 0)
    if key == "out":
        return "out"
    vers = schema_versions(op)
    s = vers[-1][0]
    if s is None:
        return "0"
    ts = s.inputs[key].type_str
    idx = [str(i) for i, inp in enumerate(s.inputs) if inp.type_str == ts]
    if s.inputs[-1].type_str == ts and s.inputs[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic:
        idx[-1] += "+"
    return ",".join(idx)


# ------------------------------------------------------------- the model


def build_model(c):
    nodes = list(c.nodes)
    inputs, outputs = [], []
    for name, dt, shape in c.inputs:
        if dt == TensorProto.BFLOAT16:  # fed as float, cast to bfloat16 inside
            inputs.append(helper.make_tensor_value_info(name + "_f32", F, shape))
            nodes.insert(0, helper.make_node("Cast", [name + "_f32"], [name], to=dt))
            c.feeds[name + "_f32"] = c.feeds.pop(name)
        else:
            inputs.append(helper.make_tensor_value_info(name, dt, shape))
    for name, dt, shape in c.outputs:
        if dt == TensorProto.BFLOAT16:
            nodes.append(helper.make_node("Cast", [name], [name + "_f32"], to=F))
            outputs.append(helper.make_tensor_value_info(name + "_f32", F, shape))
        else:
            outputs.append(helper.make_tensor_value_info(name, dt, shape))
    graph = helper.make_graph(nodes, "probe", inputs, outputs, c.inits)
    opset = helper.make_opsetid("", c.opset)
    model = helper.make_model(graph, opset_imports=[opset])
    model.ir_version = max(helper.find_min_ir_version_for([opset]), 7)
    try:  # fill in the outputs' shapes (the checker wants them)
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001  (ImageScaler: no schema; the checker reports the rest)
        pass
    return model


def first_line(e):
    s = str(e).strip().replace("\t", " ")
    lines = [ln.strip() for ln in s.splitlines() if ln.strip()]
    # OpenVINO errors start with a source location line; keep the informative part.
    noise = ("Exception from", "Check ", "While validating", "FrontEnd API failed", "Model wasn't fully converted",
             "-- ", "Summary:")
    keep = [ln for ln in lines if not ln.startswith(noise)]
    keep = keep or lines or [type(e).__name__]
    msg = keep[0]
    if msg.endswith(":") and len(keep) > 1:  # "... failed with OpConversionFailure:" + the cause
        msg = msg + " " + keep[1]
    for p in ("[ERROR]", "[ GENERAL_ERROR ]"):
        msg = msg.replace(p, "").strip()
    return msg[:160]


def compare(ov_out, ref_out, dt_hint):
    """None when equal, else a short description of the difference."""
    for i, (a, r) in enumerate(zip(ov_out, ref_out)):
        a, r = np.asarray(a), np.asarray(r)
        if a.shape != r.shape:
            return f"output {i} shape {list(a.shape)} vs reference {list(r.shape)}"
        if r.dtype == object or a.dtype == object:
            if not np.array_equal(a.astype(str), r.astype(str)):
                return f"output {i} strings differ"
            continue
        if r.dtype.kind in "biu" and a.dtype.kind in "fc":
            return f"output {i} element type {a.dtype} vs reference {r.dtype}"
        if r.dtype.kind == "f" or a.dtype.kind == "f":
            af, rf = a.astype(np.float64), r.astype(np.float64)
            rtol = NARROW_RTOL.get(dt_hint, RTOL)
            if not np.allclose(af, rf, rtol=rtol, atol=ATOL, equal_nan=True):
                d = np.abs(af - rf)
                d = np.where(np.isnan(af) & np.isnan(rf), 0, d)
                return f"output {i} max diff {np.nanmax(d):.4g}"
        else:
            if not np.array_equal(a.astype(np.int64) if a.dtype.kind in "biu" else a,
                                  r.astype(np.int64) if r.dtype.kind in "biu" else r):
                d = np.abs(a.astype(np.float64) - r.astype(np.float64))
                return f"output {i} max diff {d.max():.4g} (integers)"
    if len(ov_out) != len(ref_out):
        return f"{len(ov_out)} outputs vs reference {len(ref_out)}"
    return None


def reference(model, feeds, c):
    errs = []
    if c.dt == TensorProto.STRING:
        # onnxruntime 1.31.1 mangles some string outputs (Gather, Split return ''): use onnx's
        # numpy reference evaluator first for strings.
        try:
            from onnx.reference import ReferenceEvaluator
            return [np.asarray(x) for x in ReferenceEvaluator(model).run(None, feeds)], "onnx.reference"
        except Exception as e:  # noqa: BLE001
            errs.append("onnx.reference: " + first_line(e)[:60])
    try:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        so.log_severity_level = 4
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return sess.run(None, feeds), "onnxruntime"
    except Exception as e:  # noqa: BLE001
        errs.append("onnxruntime: " + first_line(e)[:60])
    try:
        from onnx.reference import ReferenceEvaluator
        return [np.asarray(x) for x in ReferenceEvaluator(model).run(None, feeds)], "onnx.reference"
    except Exception as e:  # noqa: BLE001
        errs.append("onnx.reference: " + first_line(e)[:60])
    if c.ref is not None:
        return c.ref(feeds), "numpy"
    return None, "; ".join(errs)


def bf16_twin_reference(op, opset, variant, schema, seed, narrow=None):
    """Reference for a bfloat16 case: the same model in float32 on onnxruntime,
    outputs rounded to bfloat16 (the probe's values are all exact in bfloat16)."""
    import ml_dtypes
    narrow = ml_dtypes.bfloat16 if narrow is None else narrow
    t = Ctx(op, opset, F, schema, variant, seed)
    try:
        BUILDERS[op](t)
    except Skip:
        return None, "no float32 twin"
    model = build_model(t)
    ref, how = reference(model, t.feeds, t)
    if ref is None:
        return None, how
    ref = [np.asarray(r).astype(narrow).astype(np.float32) if np.asarray(r).dtype == np.float32 else r for r in ref]
    return ref, how + f" (float32 twin, rounded to {np.dtype(narrow).name})"


def feed_order(c):
    return [n + "_f32" if dt == TensorProto.BFLOAT16 else n for n, dt, _ in c.inputs]


def run_case(core, tmpdir, op, since, opset, dt, variant, schema):
    """One probe: (verdict, reason)."""
    seed = zlib.crc32(f"{op}/{opset}/{variant}".encode())
    c = Ctx(op, opset, dt, schema, variant, seed)
    try:
        BUILDERS[op](c)
    except Skip as e:
        return "skip", str(e)
    model = build_model(c)
    if schema is not None:
        try:
            onnx.checker.check_model(model, full_check=True)
        except Exception as e:  # noqa: BLE001
            return "model_invalid", "onnx checker: " + first_line(e)
    path = os.path.join(tmpdir, "m.onnx")
    onnx.save(model, path)
    # OpenVINO
    try:
        m = core.read_model(path)
    except Exception as e:  # noqa: BLE001
        return "unsupported", "read_model: " + first_line(e)
    try:
        q = core.query_model(m, DEVICE)
        missing = [o.get_type_name() for o in m.get_ordered_ops()
                   if o.get_type_name() not in ("Parameter", "Result", "Constant") and o.get_friendly_name() not in q]
        if missing:
            return "unsupported", "query_model: not supported on CPU: " + ",".join(sorted(set(missing)))
    except Exception as e:  # noqa: BLE001
        return "unsupported", "query_model: " + first_line(e)
    try:
        cm = core.compile_model(m, DEVICE, {"INFERENCE_PRECISION_HINT": "f32"})
    except Exception as e:  # noqa: BLE001
        return "unsupported", "compile_model: " + first_line(e)
    try:
        req = cm.create_infer_request()
        # By position: OpenVINO may rename a parameter whose tensor is also an output (Dropout).
        feeds = [c.feeds[n] for n in feed_order(c)]
        feeds = [v.astype(str) if v.dtype == object else v for v in feeds]
        res = req.infer(feeds)
        ov_out = [np.array(res[o]) for o in cm.outputs]
    except Exception as e:  # noqa: BLE001
        return "unsupported", "infer: " + first_line(e)
    ref = None
    if dt == TensorProto.BFLOAT16:
        ref, how = bf16_twin_reference(op, opset, variant, schema, seed)
    if ref is None:
        ref, how = reference(model, c.feeds, c)
    if ref is None:
        return "supported", f"compiled and ran; results not compared (no reference runtime runs it: {how[:60]})"
    diff = compare(ov_out, ref, dt)
    if diff is not None and dt == TensorProto.FLOAT16:
        # onnxruntime computes some float16 kernels in float16 (e.g. HardSigmoid's alpha rounded to
        # float16); OpenVINO computes in float32 (the precision hint). Accept a match with the float32
        # computation rounded to float16.
        ref2, how2 = bf16_twin_reference(op, opset, variant, schema, seed, narrow=np.float16)
        if ref2 is not None and compare(ov_out, ref2, dt) is None:
            return "supported", f"matches {how2} ({how}: {diff})"
    if diff is not None:
        return "wrong_result", f"{diff} vs {how}"
    return "supported", f"matches {how}"


def worker_main(conn):
    import openvino as ov
    core = ov.Core()
    core.set_property("CPU", {"INFERENCE_NUM_THREADS": 1})
    schemas = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        while True:
            msg = conn.recv()
            if msg is None:
                return
            op, since, opset, dt, variant = msg
            key = (op, since)
            if key not in schemas:
                schemas[key] = next((s for s, sv, _ in schema_versions(op) if s is not None and s.since_version == since), None)
            try:
                out = run_case(core, tmpdir, op, since, opset, dt, variant, schemas[key])
            except Exception as e:  # noqa: BLE001  (a probe bug, reported as such)
                out = ("model_invalid", "probe error: " + first_line(e))
            conn.send(out)


class Worker:
    def __init__(self):
        self.start()

    def start(self):
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker_main, args=(child,), daemon=True)
        self.proc.start()

    def run(self, case):
        self.conn.send(case)
        if self.conn.poll(CASE_TIMEOUT):
            try:
                return self.conn.recv()
            except EOFError:
                pass
        code = self.proc.exitcode
        self.proc.kill()
        self.proc.join()
        self.start()
        if code is None:
            return ("unsupported", f"OpenVINO did not finish within {CASE_TIMEOUT:.0f} s")
        return ("unsupported", f"process crashed (exit code {code}) in OpenVINO")


SEVERITY = {"supported": 0, "skip": 0, "model_invalid": 1, "unsupported": 2, "wrong_result": 3}


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "crates", "vinort-openvino", "data", "ov_cpu_rules.tsv"))
    ap.add_argument("--ops", default="")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    ops = sorted(set(args.ops.split(",")) if args.ops else set(SEED_OPS) | {"If", "Loop"})
    missing = [o for o in ops if o not in BUILDERS]
    if missing:
        sys.exit(f"no builder for {missing}")

    cases = []  # (op, since, opset, until, dt, variant)
    for op in ops:
        for schema, since, until in schema_versions(op):
            sv = schema.since_version if schema is not None else 0
            for dt in case_dtypes(op, schema):
                for variant in VARIANTS.get(op, [""]):
                    cases.append((op, sv, since, until, dt, variant))

    t0 = time.time()
    results = {}
    import threading
    lock = threading.Lock()
    queue = list(cases)

    def drive():
        w = Worker()
        while True:
            with lock:
                if not queue:
                    break
                case = queue.pop(0)
            op, sv, since, until, dt, variant = case
            r = w.run((op, sv, since, dt, variant))
            with lock:
                results[case] = r
        w.conn.send(None)
        w.proc.join(5)

    threads = [threading.Thread(target=drive) for _ in range(max(1, args.jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.time() - t0

    # Worst variant per (op, range, dtype).
    grouped = {}
    for case in cases:  # the cases' (deterministic) order, not completion order
        op, sv, since, until, dt, variant = case
        verdict, reason = results[case]
        if verdict != "skip":
            grouped.setdefault((op, since, until, TYPE_NAME[dt]), []).append((variant, verdict, reason))
    per = {}
    for k, lst in grouped.items():
        worst = max(SEVERITY[v] for _, v, _ in lst)
        bad = [x for x in lst if SEVERITY[x[1]] == worst]
        verdict, reason = bad[0][1], bad[0][2]
        if verdict == "supported":
            unverified = [x for x in lst if "not compared" in x[2]]
            reason = (unverified or bad)[0][2]
        if bad[0][0] and verdict != "supported":
            reason = f"[{','.join(x[0] for x in bad)}] {reason}"
            ok = [x[0] for x in lst if x[1] == "supported"]
            if ok:
                reason += f" (fine: {','.join(ok)})"
        per[k] = (verdict, reason)

    # Collapse consecutive ranges with identical verdicts.
    rows = []
    by = {}
    for (op, since, until, dtn), v in per.items():
        by.setdefault((op, dtn), []).append((since, until, v))
    for (op, dtn), lst in by.items():
        lst.sort()
        cur = None
        for since, until, (verdict, reason) in lst:
            if cur and cur[1] + 1 == since and cur[2] == verdict:
                if reason.split(" vs ")[0] not in cur[3] and verdict != "supported":
                    extra = f" | from opset {since}: {reason}"
                    cur[3] = (cur[3] + extra) if len(cur[3]) + len(extra) < 300 else cur[3]
                cur[1] = until
            else:
                if cur:
                    rows.append((op, dtn, *cur))
                cur = [since, until, verdict, reason]
        rows.append((op, dtn, *cur))
    rows.sort(key=lambda r: (r[0], r[2], r[1]))

    import onnxruntime
    import openvino as ov
    ver = ov.get_version()
    short = ver.split("-")[0]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(f"# openvino_version\t{short}\n")
        f.write(f"# vinort OpenVINO capability table, measured by scripts/probe_openvino_ops.py on OpenVINO {ver}, "
                f"device {DEVICE}, INFERENCE_PRECISION_HINT=f32; reference onnxruntime {onnxruntime.__version__} CPU "
                f"(fallback onnx {onnx.__version__} reference evaluator); rtol {RTOL} (float16 {NARROW_RTOL[TensorProto.FLOAT16]}, "
                f"bfloat16 {NARROW_RTOL[TensorProto.BFLOAT16]}), atol {ATOL}, integers and bools exact. Do not edit by hand: rerun the probe.\n")
        f.write("# key_input lines: which node inputs carry the dtype column's type (first known wins; 'N+' = N and "
                "all later variadic inputs; 'out' = the output's type, no input carries it)\n")
        for op in ops:
            f.write(f"# key_input\t{op}\t{key_inputs_spec(op)}\n")
        f.write("domain\top\tsince_opset\tuntil_opset\tdtype\tverdict\treason\n")
        for op, dtn, since, until, verdict, reason in rows:
            reason = reason.replace("\t", " ").replace("\n", " ")
            f.write(f"ai.onnx\t{op}\t{since}\t{until}\t{dtn}\t{verdict}\t{reason}\n")
    counts = {}
    for r in rows:
        counts[r[4]] = counts.get(r[4], 0) + 1
    print(f"{len(cases)} cases in {elapsed:.1f} s; rows {len(rows)}: {counts}", file=sys.stderr)
    for r in rows:
        if r[4] == "wrong_result":
            print("WRONG", *r, sep="\t", file=sys.stderr)


if __name__ == "__main__":
    main()
