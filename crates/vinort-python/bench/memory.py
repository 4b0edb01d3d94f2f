"""Resident memory a session adds, per runtime, each measured in a fresh process.

For every model and runtime a child process reads the model's inputs, returns the allocator's
free memory to the system and records its resident set (VmRSS) as the baseline; it then
imports the runtime (its libraries count: vinort loads OpenVINO's inside its first session),
builds a session, runs it once and records what that added (steady, after another trim) and
the peak on the way (VmHWM, reset at the baseline through /proc/self/clear_refs); then builds
a second session of the same file with the same options,
runs it once and records what that one added. Runtimes:

    ort-cpu      onnxruntime, CPUExecutionProvider
    vinort-cpu   vinort, [Cpu]
    vinort-ov    vinort, [OpenVino(CPU, default precision), Cpu]
    openvino     native OpenVINO (`openvino` package), compile_model(path, "CPU")

    python crates/vinort-python/bench/memory.py DIR... [--runtimes ...] [--threads 2]
        [--python RUNTIME=INTERPRETER ...] [--markdown]

A model folder holds model.onnx and test_data_set_0/input_*.pb. An interpreter can be given per
runtime (vinort's test virtualenv has no `openvino` package, the project's has no `vinort`);
scripts/python-bench-memory passes both. Linux only (procfs).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

RUNTIMES = ("ort-cpu", "vinort-cpu", "vinort-ov", "openvino")
LABELS = {
    "ort-cpu": "onnxruntime CPU EP",
    "vinort-cpu": "vinort [Cpu]",
    "vinort-ov": "vinort [OpenVino, Cpu]",
    "openvino": "OpenVINO native",
}


def status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} missing from /proc/self/status")


def trim() -> None:
    """Return freed heap memory to the system so RSS counts what is held, not what was."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def load_inputs(folder: Path) -> dict:
    import onnx
    from onnx import numpy_helper

    feeds = {}
    paths = sorted((folder / "test_data_set_0").glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
    for path in paths:
        t = onnx.TensorProto()
        t.ParseFromString(path.read_bytes())
        feeds[t.name] = numpy_helper.to_array(t)
    return feeds


def maker(runtime: str, model: str, threads: int):
    """A function building one session and a function running it once."""
    if runtime == "openvino":
        import openvino as ov

        cores = []

        def build():
            # The core is made by the first session, as vinort makes its own (process-wide) one
            # inside its first session's build: both sides count it.
            if not cores:
                cores.append(ov.Core())
            return cores[0].compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads})

        def run(compiled, feeds):
            compiled.create_infer_request().infer(feeds)

        return build, run
    if runtime == "ort-cpu":
        import onnxruntime as module

        providers, options = ["CPUExecutionProvider"], None
    else:
        import vinort as module

        if runtime == "vinort-cpu":
            providers, options = ["CPUExecutionProvider"], None
        else:
            providers = ["OpenVINOExecutionProvider", "CPUExecutionProvider"]
            options = [{"device_type": "CPU", "precision": "DEFAULT", "num_of_threads": str(threads)}, {}]

    def build():
        so = module.SessionOptions()
        so.intra_op_num_threads = threads
        return module.InferenceSession(model, so, providers=providers, provider_options=options)

    def run(session, feeds):
        session.run(None, feeds)

    return build, run


def child(runtime: str, folder: Path, threads: int) -> dict:
    feeds = load_inputs(folder)
    trim()
    base = status_kib("VmRSS")
    reset_peak()
    # The runtime's module is imported after the baseline: each side counts loading its
    # libraries (vinort loads OpenVINO's inside its first session, `import openvino` at once).
    build, run = maker(runtime, str(folder / "model.onnx"), threads)
    first = build()
    run(first, feeds)
    peak = status_kib("VmHWM") - base
    trim()
    one = status_kib("VmRSS") - base
    second = build()
    run(second, feeds)
    trim()
    two = status_kib("VmRSS") - base
    del first, second
    return {"first_kib": one, "peak_kib": peak, "second_kib": two - one}


def measure(runtime: str, folder: Path, threads: int, python: str) -> dict:
    out = subprocess.run(
        [python, __file__, "--child", runtime, str(folder), "--threads", str(threads)],
        capture_output=True, text=True,
    )
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["exit %d" % out.returncode])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def mib(kib: int) -> str:
    return f"{kib / 1024:.0f}"


def markdown(results: dict, runtimes: list) -> str:
    head = "| model | " + " | ".join(f"{LABELS[r]}: session, peak, second" for r in runtimes) + " |"
    lines = [head, "|---|" + "---|" * len(runtimes)]
    for model, row in results.items():
        cells = []
        for r in runtimes:
            m = row[r]
            if "error" in m:
                cells.append("failed")
            else:
                share = 100 * m["second_kib"] / max(m["first_kib"], 1)
                cells.append(f"{mib(m['first_kib'])}, {mib(m['peak_kib'])}, +{mib(m['second_kib'])} ({share:.0f}%)")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="*", type=Path)
    p.add_argument("--runtimes", nargs="+", default=list(RUNTIMES), choices=RUNTIMES)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--python", action="append", default=[], metavar="RUNTIME=INTERPRETER")
    p.add_argument("--markdown", action="store_true", help="print a markdown table (MiB) at the end")
    p.add_argument("--child", metavar="RUNTIME", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        print(json.dumps(child(a.child, a.models[0], a.threads)))
        return
    pythons = dict(kv.split("=", 1) for kv in a.python)
    results = {}
    for folder in a.models:
        results[folder.name] = {}
        for r in a.runtimes:
            m = measure(r, folder, a.threads, pythons.get(r, sys.executable))
            results[folder.name][r] = m
            print(json.dumps({"model": folder.name, "runtime": r, **m}), flush=True)
    if a.markdown:
        print(markdown(results, a.runtimes))


if __name__ == "__main__":
    main()
