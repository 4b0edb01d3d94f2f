"""Per-call cost of small models from Python: onnxruntime's CPU EP against vinort's [Cpu] and
[OpenVino(CPU, FP32), Cpu], the same calls in one process, interleaved.

Streaming models (voice activity, wake words) are called hundreds of times a second, so what a
call costs beyond its kernels (the Python layer, the feed checks, output arrays, OpenVINO's
request set-up) decides their speed. Each model folder holds model.onnx and test_data_set_0
(its inputs); each round times CALLS calls of every runtime, rounds alternate the order, and the
median round is reported as microseconds per call and as a ratio to onnxruntime.

    python crates/vinort-python/bench/calls.py DIR... [--calls 1000] [--rounds 7] [--threads 1]

scripts/python-bench runs it in the test virtualenv (release wheel) and prints a markdown
table for docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

import vinort


def load_inputs(folder: Path) -> dict:
    feeds = {}
    for path in sorted((folder / "test_data_set_0").glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1])):
        t = onnx.TensorProto()
        t.ParseFromString(path.read_bytes())
        feeds[t.name] = numpy_helper.to_array(t)
    return feeds


def sessions(model: str, threads: int) -> dict:
    """The runtimes, each with `threads` intra-op threads (a streaming caller's usual 1)."""
    def options(module):
        so = module.SessionOptions()
        so.intra_op_num_threads = threads
        return so

    ov = [{"device_type": "CPU", "precision": "FP32", "num_of_threads": threads}, {}]
    made = {
        "onnxruntime CPU": ort.InferenceSession(model, options(ort), providers=["CPUExecutionProvider"]),
        "vinort [Cpu]": vinort.InferenceSession(model, options(vinort), providers=["CPUExecutionProvider"]),
    }
    if "OpenVINOExecutionProvider" in vinort.get_available_providers():
        made["vinort [OpenVino, Cpu]"] = vinort.InferenceSession(
            model, options(vinort), providers=["OpenVINOExecutionProvider", "CPUExecutionProvider"],
            provider_options=ov)
    return made


def per_call_us(sess, feeds: dict, calls: int) -> float:
    run = sess.run
    start = time.perf_counter()
    for _ in range(calls):
        run(None, feeds)
    return (time.perf_counter() - start) / calls * 1e6


def measure(folder: Path, calls: int, rounds: int, threads: int) -> dict:
    feeds = load_inputs(folder)
    made = sessions(str(folder / "model.onnx"), threads)
    want = made["onnxruntime CPU"].run(None, feeds)
    for name, sess in made.items():  # warm up, and check each gives onnxruntime's outputs
        got = sess.run(None, feeds)
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4, err_msg=f"{folder.name} on {name}")
        per_call_us(sess, feeds, max(1, calls // 10))
    times = {name: [] for name in made}
    order = list(made)
    for r in range(rounds):
        for name in order if r % 2 == 0 else reversed(order):
            times[name].append(per_call_us(made[name], feeds, calls))
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    print(f"| model ({args.calls} calls, {args.threads} thread) | onnxruntime CPU µs/call | vinort [Cpu] | "
          f"vinort [OpenVino, Cpu] |")
    print("|---|---|---|---|")
    for folder in args.folders:
        m = measure(folder, args.calls, args.rounds, args.threads)
        base = m["onnxruntime CPU"]
        cells = [f"{m[k]:.1f} ({m[k] / base:.2f}×)" if k in m else "—"
                 for k in ["vinort [Cpu]", "vinort [OpenVino, Cpu]"]]
        print(f"| {folder.name} | {base:.1f} | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
