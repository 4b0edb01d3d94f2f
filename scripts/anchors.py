"""Which node cases do the anchor runtimes pass?

Usage: $PY scripts/anchors.py NODE_DIR OUT.tsv [COLUMN...]
COLUMN is one of
  ort_cpu       onnxruntime CPU EP (the `onnxruntime` wheel of scripts/py-env)
  openvino_f32  OpenVINO alone, INFERENCE_PRECISION_HINT=f32 (the `openvino` wheel)
  ort_ovep      onnxruntime + OpenVINO EP (device CPU, precision FP32) + CPU fallback: needs the
                `onnxruntime-openvino` wheel, i.e. run with the python of `scripts/py-env --ovep`
(default: ort_cpu openvino_f32). Writes `case<TAB>column...` with pass/fail per case, using the
onnx backend comparison (rtol 1e-3, atol 1e-7, NaN equal). Columns already in OUT.tsv and not
asked for are kept, so the three anchors can be measured from two environments. Sequence and
optional outputs are compared where the runtime returns them; a runtime error counts as fail.
"""
import os, sys, glob
import numpy as np
import onnx
from onnx import numpy_helper

def load_pb(path, vi):
    data = open(path, "rb").read()
    t = vi.type
    if t.HasField("sequence_type"):
        s = onnx.SequenceProto(); s.ParseFromString(data); return numpy_helper.to_list(s)
    if t.HasField("optional_type"):
        o = onnx.OptionalProto(); o.ParseFromString(data); return numpy_helper.to_optional(o)
    p = onnx.TensorProto(); p.ParseFromString(data); return numpy_helper.to_array(p)

def close(a, b):
    if isinstance(b, list):
        return isinstance(a, list) and len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    if b is None:
        return a is None
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if b.dtype.kind in "fc":
        try:
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-3, atol=1e-7, equal_nan=True)
            return True
        except Exception:
            return False
    return a.dtype == b.dtype and np.array_equal(a, b)

def cases(root):
    for d in sorted(glob.glob(os.path.join(root, "test_*"))):
        m = onnx.load(os.path.join(d, "model.onnx"))
        sets = []
        for ds in sorted(glob.glob(os.path.join(d, "test_data_set_*"))):
            ins = [load_pb(os.path.join(ds, f"input_{i}.pb"), vi) for i, vi in enumerate(m.graph.input) if os.path.exists(os.path.join(ds, f"input_{i}.pb"))]
            outs = [load_pb(os.path.join(ds, f"output_{i}.pb"), vi) for i, vi in enumerate(m.graph.output)]
            sets.append((ins, outs))
        yield os.path.basename(d), m, sets

def run_ort(m, sets):
    import onnxruntime as ort
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in s.get_inputs()]
    for ins, outs in sets:
        got = s.run(None, dict(zip(names, ins)))
        if len(got) != len(outs) or not all(close(g, w) for g, w in zip(got, outs)):
            return False
    return bool(sets)

def run_ov(core, m, sets):
    c = core.compile_model(core.read_model(m.SerializeToString()), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    for ins, outs in sets:
        r = c(ins)
        got = [r[o] for o in c.outputs]
        if len(got) != len(outs) or not all(close(g, w) for g, w in zip(got, outs)):
            return False
    return bool(sets)

def run_ovep(m, sets):
    import onnxruntime as ort
    if "OpenVINOExecutionProvider" not in ort.get_available_providers():
        raise SystemExit("this onnxruntime has no OpenVINOExecutionProvider: use the python of scripts/py-env --ovep")
    s = ort.InferenceSession(m.SerializeToString(),
                             providers=["OpenVINOExecutionProvider", "CPUExecutionProvider"],
                             provider_options=[{"device_type": "CPU", "precision": "FP32"}, {}])
    names = [i.name for i in s.get_inputs()]
    for ins, outs in sets:
        got = s.run(None, dict(zip(names, ins)))
        if len(got) != len(outs) or not all(close(g, w) for g, w in zip(got, outs)):
            return False
    return bool(sets)

def main():
    root, out = sys.argv[1], sys.argv[2]
    columns = sys.argv[3:] or ["ort_cpu", "openvino_f32"]
    core = None
    if "openvino_f32" in columns:
        import openvino as ov
        core = ov.Core()
    runners = {
        "ort_cpu": lambda m, sets: run_ort(m, sets),
        "openvino_f32": lambda m, sets: run_ov(core, m, sets),
        "ort_ovep": lambda m, sets: run_ovep(m, sets),
    }
    for c in columns:
        if c not in runners:
            raise SystemExit(f"unknown column {c!r}; known: {', '.join(runners)}")
    table = {}
    header = ["case"]
    if os.path.exists(out):
        lines = open(out).read().splitlines()
        header = lines[0].split("\t")
        for l in lines[1:]:
            f = l.split("\t")
            table[f[0]] = dict(zip(header[1:], f[1:]))
    for c in columns:
        if c not in header:
            header.append(c)
    for name, m, sets in cases(root):
        row = table.setdefault(name, {})
        for c in columns:
            try:
                row[c] = "pass" if runners[c](m, sets) else "fail"
            except SystemExit:
                raise
            except Exception:
                row[c] = "fail"
    with open(out, "w") as f:
        f.write("\t".join(header) + "\n")
        for name in sorted(table):
            f.write("\t".join([name] + [table[name].get(c, "") for c in header[1:]]) + "\n")
    for c in header[1:]:
        print(c, sum(r.get(c) == "pass" for r in table.values()))

main()
