"""Recurrent benchmark models: one ONNX GRU or LSTM node each, at the sizes speech models use,
with seeded weights, written as test-case folders (model.onnx, test_data_set_0/input_0.pb) for
calls.py.

    python crates/vinort-python/bench/recurrent_models.py OUT_DIR

gru_256x100     GRU, hidden 256, input 256, 100 steps, batch 1, linear_before_reset (PyTorch's
                export; DeepFilterNet-sized)
gru_64x100      the same at hidden 64 (per-step overhead dominates)
gru_256_step    one step of the first (a streaming call)
lstm_128x100    LSTM, hidden 128, 100 steps, batch 1
bilstm_128_b4   bidirectional LSTM, hidden 128, 50 steps, batch 4
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MODELS = {
    # name: (op, steps, batch, input, hidden, directions)
    "gru_256x100": ("GRU", 100, 1, 256, 256, 1),
    "gru_64x100": ("GRU", 100, 1, 64, 64, 1),
    "gru_256_step": ("GRU", 1, 1, 256, 256, 1),
    "lstm_128x100": ("LSTM", 100, 1, 128, 128, 1),
    "bilstm_128_b4": ("LSTM", 50, 4, 128, 128, 2),
}


def write(folder: Path, op: str, seq: int, batch: int, inp: int, hid: int, dirs: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    gates = 3 if op == "GRU" else 4

    def draw(*shape):
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)

    attrs = {"hidden_size": hid, "direction": "bidirectional" if dirs == 2 else "forward"}
    if op == "GRU":
        attrs["linear_before_reset"] = 1
    node = helper.make_node(op, ["x", "W", "R", "B"], ["y", "y_h"], **attrs)
    graph = helper.make_graph(
        [node], folder.name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, inp])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [seq, dirs, batch, hid]),
         helper.make_tensor_value_info("y_h", TensorProto.FLOAT, [dirs, batch, hid])],
        [numpy_helper.from_array(draw(dirs, gates * hid, inp), "W"),
         numpy_helper.from_array(draw(dirs, gates * hid, hid), "R"),
         numpy_helper.from_array(draw(dirs, 2 * gates * hid), "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    (folder / "test_data_set_0").mkdir(parents=True, exist_ok=True)
    onnx.save(model, folder / "model.onnx")
    x = numpy_helper.from_array(rng.standard_normal((seq, batch, inp)).astype(np.float32), "x")
    (folder / "test_data_set_0" / "input_0.pb").write_bytes(x.SerializeToString())


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    for seed, (name, spec) in enumerate(MODELS.items()):
        write(out / name, *spec, seed=seed)
        print(out / name)


if __name__ == "__main__":
    main()
