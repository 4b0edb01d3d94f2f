"""Shared pieces of the vinort Python tests: the models, their inputs, and onnxruntime's
reference outputs.

Run through scripts/python-tests, which builds the wheel, generates the benchmark models and
points VINORT_OPENVINO_LIB at the project's OpenVINO.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

REPO = Path(__file__).resolve().parents[3]
MODELS = REPO / "models"
BENCH_DIR = Path(os.environ.get("VINORT_BENCH_MODELS") or MODELS / "generated")

sys.path.insert(0, str(MODELS))
import exact_int8  # noqa: E402  (models/exact_int8.py)

sys.path.remove(str(MODELS))

SAMPLE_MODELS = ["mobilenetv2_tiny", "bert_tiny", "partition_cnn"]
# The benchmark models models/generate_bench.py writes (its BENCH_MODELS line), so a model that
# was not generated is reported, not silently left out.
BENCH_MODELS = re.search(r'^BENCH_MODELS = "(.*)"$', (MODELS / "generate_bench.py").read_text(), re.M)[1].split()

OPENVINO_CPU = (
    ["OpenVINOExecutionProvider", "CPUExecutionProvider"],
    [{"device_type": "CPU", "precision": "FP32"}, {}],
)
CPU_ONLY = (["CPUExecutionProvider"], None)
PROVIDER_LISTS = {"openvino+cpu": OPENVINO_CPU, "cpu": CPU_ONLY}

# Models whose products are uint8 x int8 (see models/exact_int8.py): onnxruntime's reference is
# computed on the exact uint8 x uint8 equivalent, since its own uint8 x int8 kernels saturate on
# CPUs without VNNI where ONNX defines an exact sum.
INT8_MODELS = {"mobilenetv2_qdq", "bert_mini_int8", "mobilenetv2_dynamic"}

RTOL = 1e-4
ATOL = 1e-5


def model_dir(name: str) -> Path:
    return (BENCH_DIR if name in BENCH_MODELS else MODELS) / name


def require_model(name: str) -> Path:
    path = model_dir(name) / "model.onnx"
    if not path.exists():
        pytest.skip(
            f"BENCHMARK MODEL NOT GENERATED: {path} is missing; run scripts/gen-bench-models "
            "(scripts/python-tests does it first)"
        )
    return path


def load_test_data(name: str) -> tuple[dict[str, np.ndarray], list[tuple[str, np.ndarray]]]:
    """test_data_set_0: inputs by name, and (name, value) reference outputs in graph order."""
    ds = model_dir(name) / "test_data_set_0"

    def read(path: Path) -> tuple[str, np.ndarray]:
        t = onnx.TensorProto()
        t.ParseFromString(path.read_bytes())
        return t.name, numpy_helper.to_array(t)

    inputs = dict(read(p) for p in sorted(ds.glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1])))
    outputs = [read(p) for p in sorted(ds.glob("output_*.pb"), key=lambda p: int(p.stem.split("_")[1]))]
    return inputs, outputs


def _index_bounds(model: onnx.ModelProto) -> dict[str, int]:
    """For each graph input used as Gather indices into an initializer: the smallest table size,
    so random ids stay within every vocabulary they index."""
    sizes = {t.name: t.dims[0] for t in model.graph.initializer if t.dims}
    bounds: dict[str, int] = {}
    for node in model.graph.node:
        if node.op_type == "Gather" and len(node.input) > 1 and node.input[0] in sizes:
            idx = node.input[1]
            bounds[idx] = min(bounds.get(idx, sizes[node.input[0]]), sizes[node.input[0]])
    return bounds


def random_feeds(path: Path, seed: int = 0, sym_dim: int = 2) -> dict[str, np.ndarray]:
    """Seeded random inputs of each input's declared type; symbolic or unknown dims get
    `sym_dim`. Integer inputs that index an embedding table stay within it; other integer inputs
    (attention masks) are 0 or 1."""
    model = onnx.load(str(path), load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    bounds = _index_bounds(model)
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        shape = [d.dim_value if d.HasField("dim_value") else sym_dim for d in tt.shape.dim]
        if np.issubdtype(dtype, np.floating):
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_:
            feeds[vi.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            feeds[vi.name] = rng.integers(0, bounds.get(vi.name, 2), shape).astype(dtype)
    return feeds


_ORT_CACHE: dict = {}


def ort_reference(name: str, path: Path, feeds: dict[str, np.ndarray], unfused: bool = False,
                  extra_outputs: list[str] | None = None) -> list[np.ndarray]:
    """onnxruntime's outputs (CPU EP), all outputs in graph order, then `extra_outputs`.

    For the int8 models, on the exact uint8 x uint8 equivalent model (models/exact_int8.py).
    `unfused` turns onnxruntime's graph optimizations off (ORT_DISABLE_ALL), so a QDQ model runs
    as ONNX defines it (DequantizeLinear, a float op, QuantizeLinear) rather than through
    onnxruntime's fused int8 kernels, which round differently."""
    key = (name, unfused, tuple(extra_outputs or ()))
    if _ORT_CACHE.get("key") != key:
        model = with_outputs(onnx.load(str(path)), extra_outputs or [])
        if name in INT8_MODELS:
            model, _ = exact_int8.u8u8_equivalent(model, feeds)
        so = ort.SessionOptions()
        if unfused:
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        _ORT_CACHE.clear()
        _ORT_CACHE.update(key=key, sess=ort.InferenceSession(model.SerializeToString(), so,
                                                             providers=["CPUExecutionProvider"]))
    # The rewrite changes int8 weights; these models' inputs are float and int64 ids, which it
    # leaves as they are.
    assert not any(v.dtype == np.int8 for v in feeds.values())
    return _ORT_CACHE["sess"].run(None, feeds)


def with_outputs(model: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    """The model with intermediate values added as graph outputs (type left to inference)."""
    for n in names:
        model.graph.output.append(onnx.ValueInfoProto(name=n))
    return model


def assert_close(got: np.ndarray, want: np.ndarray, what: str, rtol: float = RTOL, atol: float = ATOL) -> None:
    assert isinstance(got, np.ndarray), f"{what}: got {type(got).__name__}, not a numpy array"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, want {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, want {want.shape}"
    if np.issubdtype(want.dtype, np.floating):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.fixture(scope="session")
def vinort():
    import vinort as v

    return v
