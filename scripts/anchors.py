"""Which node cases do the anchor runtimes pass? (onnxruntime CPU EP, OpenVINO alone in f32)

Usage: $PY scripts/anchors.py NODE_DIR OUT.tsv
Writes `case<TAB>ort_cpu<TAB>openvino_f32` with pass/fail per case, using the onnx backend
comparison (rtol 1e-3, atol 1e-7, NaN equal). Sequence/optional cases are compared where both
runtimes return them; a runtime error counts as fail.
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

def main():
    import openvino as ov
    core = ov.Core()
    root, out = sys.argv[1], sys.argv[2]
    rows = []
    for name, m, sets in cases(root):
        res = []
        for f in (lambda: run_ort(m, sets), lambda: run_ov(core, m, sets)):
            try:
                res.append("pass" if f() else "fail")
            except Exception:
                res.append("fail")
        rows.append(f"{name}\t{res[0]}\t{res[1]}")
    open(out, "w").write("case\tort_cpu\topenvino_f32\n" + "\n".join(rows) + "\n")
    print(sum(r.split("\t")[1] == "pass" for r in rows), "ort;", sum(r.split("\t")[2] == "pass" for r in rows), "openvino")

main()
