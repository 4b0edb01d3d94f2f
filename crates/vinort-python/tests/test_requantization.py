"""QLinearConv's requantization is onnxruntime's, to the bit.

ONNX defines QLinearConv's output as the rounded, saturated `(sum + bias) · x_scale·w_scale /
y_scale + y_zero_point` without fixing the precision of the product. onnxruntime (MLAS) computes
it in f32: the sum as f32 times the f32 multiplier, rounded half to even, plus the zero point.
Where that f32 product is exactly a half-integer and the exact product is not, another precision
rounds the other way. These models put such products in every output channel (the multiplier
`f32(h / a)` makes the f32 product of `a` exactly the half-integer `h`), for a pointwise and a
depthwise convolution, and the test first checks that exact arithmetic would indeed disagree
with onnxruntime there, so that equality means the same formula and not luck.
"""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import PROVIDER_LISTS

CHANNELS = 64
ZX = 100
# Weights as u8 around 128 (onnxruntime's u8 x u8 kernels are exact on every CPU kind).
ZW = 128


def near_tie_channel(rng: np.random.Generator, x_at: int) -> tuple[int, float, int]:
    """A weight, a multiplier and a bias whose sum at input value `x_at` has an f32 product that
    is exactly a half-integer while the exact product is not."""
    while True:
        w = int(rng.integers(1, 6))
        h = float(rng.integers(0, 200)) + 0.5
        a = int(rng.integers(1000, 30000))
        mult = np.float32(h / a)
        product32 = np.float32(np.float32(a) * mult)
        exact = a * float(mult)
        if product32 == h and exact != h:
            return w, float(mult), a - (x_at - ZX) * w


def conv_model(depthwise: bool, rng: np.random.Generator) -> tuple[bytes, np.ndarray, np.ndarray]:
    """A 1x1 QLinearConv (CHANNELS outputs from one input channel, or depthwise over CHANNELS),
    its input (every byte value in each input channel) and the ties' positions."""
    cin = CHANNELS if depthwise else 1
    xs = np.arange(256, dtype=np.uint8).reshape(16, 16)
    x = np.broadcast_to(xs, (1, cin, 16, 16)).copy()
    ws, mults, biases = [], [], []
    for _ in range(CHANNELS):
        w, mult, bias = near_tie_channel(rng, int(rng.integers(0, 256)))
        ws.append(ZW + w)
        mults.append(mult)
        biases.append(bias)
    w = np.array(ws, np.uint8).reshape(CHANNELS, 1, 1, 1)
    inits = [
        numpy_helper.from_array(np.array(1.0, np.float32), "xs"),
        numpy_helper.from_array(np.array(ZX, np.uint8), "zx"),
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(np.array(mults, np.float32), "ws"),
        numpy_helper.from_array(np.full(CHANNELS, ZW, np.uint8), "zw"),
        numpy_helper.from_array(np.array(1.0, np.float32), "ys"),
        numpy_helper.from_array(np.array(3, np.uint8), "zy"),
        numpy_helper.from_array(np.array(biases, np.int32), "bias"),
    ]
    node = helper.make_node("QLinearConv", ["x", "xs", "zx", "w", "ws", "zw", "ys", "zy", "bias"], ["y"],
                            kernel_shape=[1, 1], group=CHANNELS if depthwise else 1)
    graph = helper.make_graph([node], "requant", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, cin, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, CHANNELS, 16, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    # The two formulas, over every output value.
    xi = x.astype(np.int64) - ZX
    wi = (w.astype(np.int64) - ZW).reshape(1, CHANNELS, 1, 1)
    acc = (xi if depthwise else np.broadcast_to(xi, (1, CHANNELS, 16, 16))) * wi + np.array(biases).reshape(1, -1, 1, 1)
    m32 = np.array(mults, np.float32).reshape(1, -1, 1, 1)
    f32 = np.clip(np.rint(acc.astype(np.float32) * m32) + 3, 0, 255).astype(np.uint8)
    exact = np.clip(np.rint(acc.astype(np.float64) * m32.astype(np.float64)) + 3, 0, 255).astype(np.uint8)
    return model.SerializeToString(), x, (f32, exact)


@pytest.mark.parametrize("depthwise", [False, True], ids=["pointwise", "depthwise"])
@pytest.mark.parametrize("plist", ["cpu"])
def test_qlinearconv_requantizes_as_onnxruntime(vinort, plist, depthwise):
    model, x, (f32, exact) = conv_model(depthwise, np.random.default_rng(11 + depthwise))
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_array_equal(want, f32, err_msg="onnxruntime's formula as this test writes it")
    ties = int((f32 != exact).sum())
    assert ties >= CHANNELS // 4, f"only {ties} outputs where exact arithmetic rounds otherwise"
    providers, options = PROVIDER_LISTS[plist]
    sess = vinort.InferenceSession(model, providers=providers, provider_options=options)
    got = sess.run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, want)
