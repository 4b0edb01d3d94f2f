"""Resident memory of sessions: a second session of the same file with the same options costs
(almost) nothing, and a [Cpu] session holds one copy of its weights.

Each case runs in a fresh interpreter (subprocess), so the resident set it reads is that of the
sessions it builds and nothing else the test run did.
"""

import json
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import PROVIDER_LISTS

H, K, N = 1024, 6144, 512

CHILD = textwrap.dedent(
    """
    import ctypes, json, sys
    import numpy as np
    import vinort

    def resident():
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024

    path, providers, options = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    x = np.random.default_rng(4).standard_normal((4, %d), dtype=np.float32)
    def session():
        s = vinort.InferenceSession(path, providers=providers, provider_options=options)
        s.run(None, {"X": x})
        return s
    base = resident()
    first = session()
    one = resident()
    second = session()
    two = resident()
    print(json.dumps({"first": one - base, "second": two - one}))
    """
    % H
)


def weights_model(path) -> int:
    """`Y = Gemm(MatMul(X, W1), W2, C, transB=1)`; returns the weights' bytes."""
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((H, K), dtype=np.float32)
    w2 = rng.standard_normal((N, K), dtype=np.float32)
    c = rng.standard_normal(N, dtype=np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["X", "W1"], ["H"]),
            helper.make_node("Gemm", ["H", "W2", "C"], ["Y"], transB=1),
        ],
        "weights",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, H])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4, N])],
        [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2"), numpy_helper.from_array(c, "C")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, str(path))
    return w1.nbytes + w2.nbytes


@pytest.mark.parametrize("list_name", list(PROVIDER_LISTS))
def test_a_second_session_of_a_file_shares_the_first(tmp_path, list_name):
    path = tmp_path / "weights.onnx"
    weight_bytes = weights_model(path)
    providers, options = PROVIDER_LISTS[list_name]
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), json.dumps(providers), json.dumps(options)],
        capture_output=True, text=True, check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    mib = 1 << 20
    assert got["first"] > weight_bytes // 2, f"the session holds its weights somewhere: {got}"
    assert got["second"] < 0.15 * got["first"], (
        f"a second session added {got['second'] / mib:.1f} MiB to the first's {got['first'] / mib:.1f} MiB"
    )
    if list_name == "cpu":
        # One copy of the weights (packed, or the mapped file), not two or three.
        assert got["first"] < 1.3 * weight_bytes + 16 * mib, (
            f"[Cpu] session holds {got['first'] / mib:.1f} MiB for {weight_bytes / mib:.1f} MiB of weights"
        )
