#!/usr/bin/env python3
"""Measure how the installed OpenVINO runs ONNX Runtime's com.microsoft contrib ops on CPU.

scripts/probe_openvino_ops.py measures the default ONNX domain from ONNX's schemas; onnx.defs
does not know com.microsoft, so this probe takes its cases from the contrib-op suite's
generator (scripts/gen_contrib_suite.py: every contrib op ONNX Runtime's tools emit, several
attribute variants each, onnxruntime CPU references and per-case tolerances). Each single-op
case is read, compiled (INFERENCE_PRECISION_HINT=f32, one thread) and run by OpenVINO in a
worker process (a crash is a verdict), and compared with onnxruntime under the case's own
tolerance.

The verdicts are folded per (op, element type of the key input) into the com.microsoft rows of
crates/vinort-openvino/data/ov_cpu_rules.tsv (the rows of other domains are kept as they are):

  supported     every variant runs and matches, apart from the variants a semantic rule of
                crates/vinort-openvino/src/semantics/contrib.rs refuses (SEMANTIC below; the
                reason column names them);
  unsupported   OpenVINO refuses every variant;
  wrong_result  a variant no semantic rule covers gives a wrong answer.

A SEMANTIC entry whose variant now matches is reported as stale (OpenVINO was fixed: drop
the rule and rerun).

Usage: python3 scripts/probe_contrib_ops.py [--out PATH] [--ops Op1,Op2] [--list]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_contrib_suite as suite  # noqa: E402

MS = "com.microsoft"
CASE_TIMEOUT = 60.0

# Variants OpenVINO gets wrong or refuses that crates/vinort-openvino/src/semantics/contrib.rs
# refuses by attribute, input, output or type, so the op's row can still say supported: the
# rule's name -> the cases it refuses. A rule none of whose cases differ any more is stale.
SEMANTIC = {
    "attention_scale": ["Attention_scale_mask_filter"],
    "embed_layer_norm_sum": ["EmbedLayerNormalization_embedding_sum"],
    "fused_gemm_activation": ["FusedGemm_sigmoid", "FusedGemm_tanh_alpha_beta", "FusedGemm_hard_sigmoid"],
    "fused_matmul_trans_batch": ["FusedMatMul_transBatchA", "FusedMatMul_transBatchB"],
    "matmul_nbits_g_idx": ["MatMulNBits_b4_blk16_g_idx"],
    "rotary_partial_or_offset": ["RotaryEmbedding_partial_rotary", "RotaryEmbedding_position_offset"],
    "half_statistics": ["SkipLayerNormalization_all_outputs_fp16", "SkipSimplifiedLayerNormalization_all_outputs_fp16"],
    "qlinear_concat_requantize": ["QLinearConcat_u8_axis1", "QLinearConcat_s8_axis_last"],
}
COVERED = {case: rule for rule, cases in SEMANTIC.items() for case in cases}

# The properties vinort sets for [OpenVino(CPU, FP32)]: exact f32, no dynamic quantization of
# activations for int8/4-bit weights.
CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"}

# Which input carries the row's element type, when it is not input 0 (written as key_input
# lines qualified by the domain).
KEY_INPUT = {"QLinearConcat": "2", "QLinearWhere": "1"}

SEVERITY = {"supported": 0, "unsupported": 1, "wrong_result": 2}


def type_name(elem: int) -> str:
    from onnx import helper

    return helper.tensor_dtype_to_np_dtype(elem).name.replace("float32", "float").replace("float64", "double")


def single_op(case) -> str | None:
    nodes = case.model.graph.node
    return nodes[0].op_type if len(nodes) == 1 and nodes[0].domain == MS else None


def key_type(case) -> str:
    g = case.model.graph
    node = g.node[0]
    k = int(KEY_INPUT.get(node.op_type, "0"))
    name = node.input[k]
    for vi in g.input:
        if vi.name == name:
            return type_name(vi.type.tensor_type.elem_type)
    for t in g.initializer:
        if t.name == name:
            return type_name(t.data_type)
    return "unknown"


def compare(got, want, tol) -> str | None:
    import numpy as np

    rtol, atol = tol
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return f"output {i} shape {list(g.shape)} instead of {list(w.shape)}"
        if g.dtype != w.dtype:
            return f"output {i} type {g.dtype} instead of {w.dtype}"
        if w.dtype.kind in "iub":
            d = np.abs(g.astype(np.int64) - w.astype(np.int64))
            if d.size and d.max() > atol:
                return f"output {i} differs by up to {int(d.max())} steps ({int((d > atol).sum())} of {d.size})"
        else:
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            bad = np.abs(g64 - w64) > atol + rtol * np.abs(w64)
            if bad.any():
                return f"output {i} max diff {float(np.abs(g64 - w64).max()):.3g} ({int(bad.sum())} of {bad.size})"
    return None


def run_case(core, tmp: str, case):
    import numpy as np

    path = os.path.join(tmp, "m.onnx")
    Path(path).write_bytes(case.model.SerializeToString())
    try:
        m = core.read_model(path)
    except Exception as e:  # noqa: BLE001
        return "unsupported", "read_model: " + first_line(e)
    try:
        cm = core.compile_model(m, "CPU", CONFIG)
        res = cm.create_infer_request().infer({vi.name: case.feeds[vi.name] for vi in case.model.graph.input})
        got = [np.array(res[o]) for o in cm.outputs]
    except Exception as e:  # noqa: BLE001
        return "unsupported", "compile/infer: " + first_line(e)
    want = suite.reference_outputs(case.model, case.feeds)
    diff = compare(got, want, case.tol)
    return ("wrong_result", diff) if diff else ("supported", "matches onnxruntime")


def first_line(e: Exception) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return (lines[-1] if lines else type(e).__name__)[:160]


def worker_main(conn, names):
    import openvino as ov

    core = ov.Core()
    core.set_property("CPU", {"INFERENCE_NUM_THREADS": 1})
    cases = {c.name: c for build in suite.BUILDERS for c in build() if c.name in names}
    with tempfile.TemporaryDirectory() as tmp:
        while (name := conn.recv()) is not None:
            try:
                conn.send(run_case(core, tmp, cases[name]))
            except Exception as e:  # noqa: BLE001 - a probe bug, reported as such
                conn.send(("unsupported", "probe error: " + first_line(e)))


class Worker:
    def __init__(self, names):
        self.names = names
        self.start()

    def start(self):
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker_main, args=(child, self.names), daemon=True)
        self.proc.start()

    def run(self, name):
        self.conn.send(name)
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
            return "unsupported", f"OpenVINO did not finish within {CASE_TIMEOUT:.0f} s"
        return "unsupported", f"process crashed (exit code {code}) in OpenVINO"

    def close(self):
        self.conn.send(None)
        self.proc.join(5)


def fold(results):
    """(op, dtype) -> (verdict, reason) from [(case, op, dtype, verdict, reason)]."""
    groups = {}
    for name, op, dt, verdict, reason in results:
        groups.setdefault((op, dt), []).append((name, verdict, reason))
    rows = {}
    for key, lst in sorted(groups.items()):
        covered = [x for x in lst if x[0] in COVERED and x[1] != "supported"]
        rest = [x for x in lst if x not in covered]
        if not rest:
            rest = covered  # every variant is refused by rule: the row records the worst
            covered = []
        worst = max(SEVERITY[v] for _, v, _ in rest)
        bad = [x for x in rest if SEVERITY[x[1]] == worst]
        verdict = bad[0][1]
        if verdict == "supported":
            reason = f"matches onnxruntime ({len(rest)} variant{'s' if len(rest) > 1 else ''})"
        else:
            reason = f"[{','.join(x[0] for x in bad)}] {bad[0][2]}"
            fine = [x[0] for x in rest if x[1] == "supported"]
            if fine:
                reason += f" (fine: {','.join(fine)})"
        if covered:
            reason += "; refused by semantics: " + ", ".join(f"{x[0]} ({COVERED[x[0]]}: {x[2]})" for x in covered)
        rows[key] = (verdict, reason[:600])
    return rows


def write_table(out: Path, rows, ops):
    import onnxruntime
    import openvino as ov

    lines = out.read_text().splitlines()
    keep = [ln for ln in lines if not ln.startswith(MS + "\t") and not ln.startswith(f"# key_input\t{MS}::")]
    header = next(i for i, ln in enumerate(keep) if ln.startswith("domain\t"))
    keys = [f"# key_input\t{MS}::{op}\t{KEY_INPUT[op]}" for op in sorted(KEY_INPUT) if op in ops]
    note = (f"# com.microsoft rows: measured by scripts/probe_contrib_ops.py on OpenVINO {ov.get_version()} from "
            f"the contrib suite's cases, reference onnxruntime {onnxruntime.__version__} CPU, each case's tolerance")
    keep = [ln for ln in keep if not ln.startswith("# com.microsoft rows:")]
    header = next(i for i, ln in enumerate(keep) if ln.startswith("domain\t"))
    body = keep[: header] + [note] + keys + keep[header:]
    for (op, dt), (verdict, reason) in sorted(rows.items()):
        body.append(f"{MS}\t{op}\t1\t1\t{dt}\t{verdict}\t{reason}")
    out.write_text("\n".join(body) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE.parent / "crates/vinort-openvino/data/ov_cpu_rules.tsv"))
    ap.add_argument("--ops", default="", help="only these ops (comma separated); the table is then not written")
    ap.add_argument("--list", action="store_true", help="print each case's verdict")
    args = ap.parse_args()
    import onnxruntime

    onnxruntime.set_default_logger_severity(3)
    wanted = set(filter(None, args.ops.split(",")))
    cases = [c for build in suite.BUILDERS for c in build()]
    cases = [c for c in cases if single_op(c) and (not wanted or single_op(c) in wanted)]
    unknown = set(COVERED) - {c.name for c in cases}
    if unknown and not wanted:
        sys.exit(f"SEMANTIC names cases the suite does not have: {sorted(unknown)}")
    worker = Worker({c.name for c in cases})
    results = []
    for c in cases:
        verdict, reason = worker.run(c.name)
        results.append((c.name, single_op(c), key_type(c), verdict, reason))
        if args.list:
            print(f"{c.name}\t{verdict}\t{reason}", file=sys.stderr)
    worker.close()
    differs = {name for name, _, _, v, _ in results if v != "supported"}
    stale = [rule for rule, names in SEMANTIC.items() if not differs & set(names) and (not wanted or set(names) & {c.name for c in cases})]
    for rule in stale:
        print(f"STALE semantic rule {rule}: none of {SEMANTIC[rule]} differs any more", file=sys.stderr)
    rows = fold(results)
    for (op, dt), (verdict, reason) in rows.items():
        if verdict != "supported":
            print(f"{verdict.upper()}\t{op}\t{dt}\t{reason}", file=sys.stderr)
    if not wanted:
        write_table(Path(args.out), rows, {op for op, _ in rows})
        print(f"{len(cases)} cases, {len(rows)} com.microsoft rows written to {args.out}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
