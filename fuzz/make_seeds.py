"""Writes the seed corpus of the `model` and `openvino_model` fuzz targets: one tiny model per
kind of node the fuzzer should start from (shape arithmetic, sizes from inputs, control flow,
quantization, recurrent, strings). Run with the project's Python (scripts/py-env):

    python fuzz/make_seeds.py fuzz/seeds/model fuzz/seeds/tensor
"""

import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def model(name, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="vinort-fuzz-seeds")
    m.ir_version = 8
    return name, m


def seeds():
    x = vi("x", F, [1, 2, 4, 4])
    y = vi("y", F, None)
    yield model("add", [helper.make_node("Add", ["x", "x"], ["y"])], [x], [y])
    yield model(
        "conv_relu_pool",
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
        ],
        [x],
        [y],
        [const("w", np.ones((3, 2, 3, 3), np.float32)), const("b", np.zeros(3, np.float32))],
    )
    yield model(
        "shape_arith",
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Gather", ["s", "i"], ["g"], axis=0),
            helper.make_node("Concat", ["g", "m1"], ["t"], axis=0),
            helper.make_node("Reshape", ["x", "t"], ["y"]),
        ],
        [x],
        [y],
        [const("i", np.array([0, 1], np.int64)), const("m1", np.array([-1], np.int64))],
    )
    yield model(
        "sizes_from_inputs",
        [
            helper.make_node("ConstantOfShape", ["s"], ["a"], value=const("v", np.array([1.5], np.float32))),
            helper.make_node("Expand", ["a", "s"], ["b"]),
            helper.make_node("Tile", ["b", "r"], ["y"]),
        ],
        [vi("s", I64, [2]), vi("r", I64, [2])],
        [y],
    )
    yield model(
        "resize_pad_slice",
        [
            helper.make_node("Resize", ["x", "", "sc"], ["a"], mode="linear"),
            helper.make_node("Pad", ["a", "p"], ["b"], mode="reflect"),
            helper.make_node("Slice", ["b", "st", "en", "ax"], ["y"]),
        ],
        [x],
        [y],
        [
            const("sc", np.array([1, 1, 2, 2], np.float32)),
            const("p", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)),
            const("st", np.array([1], np.int64)),
            const("en", np.array([5], np.int64)),
            const("ax", np.array([3], np.int64)),
        ],
    )
    yield model(
        "range_onehot_topk",
        [
            helper.make_node("Range", ["s", "l", "d"], ["r"]),
            helper.make_node("OneHot", ["r", "depth", "vals"], ["o"]),
            helper.make_node("TopK", ["o", "k"], ["y", "idx"], axis=-1),
        ],
        [vi("l", I64, [])],
        [y, vi("idx", I64, None)],
        [
            const("s", np.array(0, np.int64)),
            const("d", np.array(1, np.int64)),
            const("depth", np.array(5, np.int64)),
            const("vals", np.array([0, 1], np.float32)),
            const("k", np.array([2], np.int64)),
        ],
    )
    then_g = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "then", [], [vi("t", F, None)])
    else_g = helper.make_graph([helper.make_node("Abs", ["x"], ["e"])], "else", [], [vi("e", F, None)])
    yield model(
        "if_branches",
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0), helper.make_node("Greater", ["s", "z"], ["c"]),
         helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
        [x],
        [y],
        [const("z", np.array(0, np.float32))],
    )
    body = helper.make_graph(
        [helper.make_node("Add", ["acc", "one"], ["acc2"]), helper.make_node("Identity", ["cond"], ["cond2"])],
        "body",
        [vi("i", I64, []), vi("cond", TensorProto.BOOL, []), vi("acc", F, [1])],
        [vi("cond2", TensorProto.BOOL, []), vi("acc2", F, [1])],
        [const("one", np.array([1], np.float32))],
    )
    yield model(
        "loop_count",
        [helper.make_node("Loop", ["m", "c", "a0"], ["y"], body=body)],
        [vi("m", I64, [])],
        [y],
        [const("c", np.array(True)), const("a0", np.array([0], np.float32))],
    )
    yield model(
        "qdq_matmul",
        [
            helper.make_node("QuantizeLinear", ["a", "s", "z"], ["q"]),
            helper.make_node("DequantizeLinear", ["q", "s", "z"], ["dq"]),
            helper.make_node("MatMul", ["dq", "w"], ["y"]),
        ],
        [vi("a", F, [2, 4])],
        [y],
        [const("s", np.array(0.1, np.float32)), const("z", np.array(128, np.uint8)),
         const("w", np.ones((4, 3), np.float32))],
    )
    yield model(
        "lstm",
        [helper.make_node("LSTM", ["a", "W", "R"], ["y", "h"], hidden_size=3)],
        [vi("a", F, [2, 1, 4])],
        [y, vi("h", F, None)],
        [const("W", np.ones((1, 12, 4), np.float32) * 0.1), const("R", np.ones((1, 12, 3), np.float32) * 0.1)],
    )
    yield model(
        "softmax_layernorm_gather",
        [
            helper.make_node("Gather", ["emb", "ids"], ["e"]),
            helper.make_node("LayerNormalization", ["e", "g", "b"], ["n"], axis=-1),
            helper.make_node("Softmax", ["n"], ["y"], axis=-1),
        ],
        [vi("ids", I64, [1, 3])],
        [y],
        [const("emb", np.ones((10, 4), np.float32)), const("g", np.ones(4, np.float32)),
         const("b", np.zeros(4, np.float32))],
    )
    yield model(
        "cast_where_split",
        [
            helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
            helper.make_node("Cast", ["h"], ["f"], to=F),
            helper.make_node("Less", ["f", "x"], ["c"]),
            helper.make_node("Where", ["c", "f", "x"], ["w"]),
            helper.make_node("Split", ["w"], ["y", "y2"], axis=1, num_outputs=2),
        ],
        [x],
        [y, vi("y2", F, None)],
        opset=18,
    )
    yield model(
        "strings",
        [helper.make_node("StringNormalizer", ["s"], ["y"], case_change_action="UPPER")],
        [vi("s", TensorProto.STRING, [3])],
        [vi("y", TensorProto.STRING, None)],
    )


def tensors():
    """Seeds of the `tensor` target: test-data `.pb` files of several element types."""
    yield "f32", numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "x")
    yield "i64", numpy_helper.from_array(np.array([[0, -1], [5, 2]], np.int64), "i")
    yield "bool", numpy_helper.from_array(np.array([True, False, True]), "b")
    yield "f16", numpy_helper.from_array(np.ones((2, 2), np.float16), "h")
    yield "str", helper.make_tensor("s", TensorProto.STRING, [2], [b"ab", b"c"])


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, m in seeds():
        (out / f"{name}.onnx").write_bytes(m.SerializeToString())
        print(name)
    if len(sys.argv) > 2:
        out = Path(sys.argv[2])
        out.mkdir(parents=True, exist_ok=True)
        for name, t in tensors():
            (out / f"{name}.pb").write_bytes(t.SerializeToString())


if __name__ == "__main__":
    main()
