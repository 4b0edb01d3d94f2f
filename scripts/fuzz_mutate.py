"""Black-box mutation of ONNX models: makes hostile variants of seed models and runs the
vinort CLI on each, counting how each run ended.

A model file is untrusted input. This is the outside view of that: byte flips and
truncations of the file, and protobuf-aware edits of the kinds a broken or hostile file
carries (huge, negative or zero dims; bad element types; short or long raw_data; broken,
missing or mistyped attributes; dangling inputs; self-loops; deep If nesting; huge
ConstantOfShape / Expand / Tile / Range / Resize / Pad requests; odd IR and opset versions).
Every run must end as a success or as an error message with exit code 1: a panic (exit 101),
an abort or any other signal, or a run past the timeout is a failure.

    fuzz_mutate.py --vinort target/debug/vinort --seeds DIR... --count 2000 --seed 1 \
        --providers cpu --providers openvino,cpu [--keep DIR] [--jobs 2]

The generator is deterministic for a given --seed. Failing models are copied to --keep with
the command's output, so each can become a regression test.
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import onnx
from onnx import TensorProto, helper

HUGE = [2**31, 2**32 + 1, 2**40, 2**62, 2**63 - 1, 1099511627776, 10**12, 46341 * 46341]
ODD_INTS = [-1, -2, -(2**63), 0, 2**63 - 1, 2**31, 7, 1 << 40]


def seeds_from(dirs, max_bytes):
    out = []
    for d in dirs:
        for p in sorted(Path(d).rglob("*.onnx")):
            if p.stat().st_size <= max_bytes and not any(q.suffix == ".data" for q in p.parent.iterdir()):
                out.append(p)
    return out


# --- protobuf-aware edits: each takes (model, rng) and edits in place, or raises Skip ---


class Skip(Exception):
    pass


def graphs(g):
    yield g
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from graphs(a.g)
            for sg in a.graphs:
                yield from graphs(sg)


def pick(rng, seq):
    seq = list(seq)
    if not seq:
        raise Skip
    return rng.choice(seq)


def m_input_dims(m, rng):
    vi = pick(rng, list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info))
    t = vi.type.tensor_type
    if not t.shape.dim:
        t.shape.dim.add()
    d = pick(rng, t.shape.dim)
    r = rng.random()
    if r < 0.6:
        d.dim_value = rng.choice(HUGE)
    elif r < 0.8:
        d.dim_value = rng.choice([-1, -7, 0])
    else:
        d.dim_param = rng.choice(["?", "", "N", "batch"])
    if rng.random() < 0.3:
        for d2 in t.shape.dim:
            d2.dim_value = rng.choice(HUGE)


def m_dtype(m, rng):
    bad = rng.choice([0, 8, 15, 16, 17, 21, 22, 23, 24, 25, 99, -3, 2**31 - 1])
    r = rng.random()
    if r < 0.4:
        pick(rng, list(m.graph.input) + list(m.graph.output)).type.tensor_type.elem_type = bad
    elif r < 0.7:
        pick(rng, m.graph.initializer).data_type = bad
    else:
        n = pick(rng, [n for g in graphs(m.graph) for n in g.node if any(a.name == "to" for a in n.attribute)])
        next(a for a in n.attribute if a.name == "to").i = bad


def m_raw_data(m, rng):
    t = pick(rng, [t for t in m.graph.initializer if t.raw_data] or list(m.graph.initializer))
    if t.raw_data:
        r = rng.random()
        if r < 0.5:
            t.raw_data = t.raw_data[: rng.randrange(len(t.raw_data))]
        elif r < 0.7:
            t.raw_data = t.raw_data + bytes(rng.randrange(1, 64))
        else:
            t.dims.append(rng.choice(HUGE + [3, 0]))
    else:
        if t.dims:
            t.dims[rng.randrange(len(t.dims))] = rng.choice(HUGE + [-1, 0])
        else:
            t.dims.extend([rng.choice(HUGE)])


def m_attribute(m, rng):
    n = pick(rng, [n for g in graphs(m.graph) for n in g.node if n.attribute])
    a = pick(rng, n.attribute)
    r = rng.random()
    if r < 0.25:
        n.attribute.remove(a)
    elif r < 0.45:
        a.type = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 0, 99])
    elif r < 0.65:
        del a.ints[:]
        a.ints.extend(rng.choice(ODD_INTS + HUGE) for _ in range(rng.randrange(0, 9)))
        a.i = rng.choice(ODD_INTS + HUGE)
    elif r < 0.8:
        a.f = rng.choice([float("nan"), float("inf"), -1e38, 0.0, 1e30])
        del a.floats[:]
        a.floats.extend([float("nan"), 1e30, -1.0][: rng.randrange(4)])
    else:
        n.attribute.add().CopyFrom(a)  # duplicate attribute


def m_dangling(m, rng):
    n = pick(rng, [n for g in graphs(m.graph) for n in g.node if n.input])
    n.input[rng.randrange(len(n.input))] = rng.choice(["nowhere", "", "x" * 300, n.output[0] if n.output else "o"])


def m_self_loop(m, rng):
    g = m.graph
    if len(g.node) < 1:
        raise Skip
    n = pick(rng, [n for n in g.node if n.input and n.output])
    if rng.random() < 0.5:
        n.input[0] = n.output[0]
    else:
        # a cycle of two: an earlier node reads a later node's output
        later = pick(rng, g.node)
        if later.output:
            n.input[0] = later.output[0]


def m_duplicate_output(m, rng):
    g = m.graph
    if len(g.node) < 2:
        raise Skip
    a, b = rng.sample(list(g.node), 2)
    if a.output and b.output:
        b.output[0] = a.output[0]


def m_shuffle(m, rng):
    nodes = list(m.graph.node)
    rng.shuffle(nodes)
    del m.graph.node[:]
    m.graph.node.extend(nodes)


def m_versions(m, rng):
    r = rng.random()
    if r < 0.3:
        m.ir_version = rng.choice([0, 1, 2, 3, 99, 2**62, -1])
    elif r < 0.8:
        o = pick(rng, m.opset_import)
        o.version = rng.choice([0, 1, 2, 5, 27, 99, 1099511627776, 2**63 - 1, -1])
    else:
        o = m.opset_import.add()
        o.domain = rng.choice(["", "com.microsoft", "ai.onnx.ml", "weird"])
        o.version = rng.choice([1, 1099511627776, -5])


def add_big(m, rng, op):
    g = m.graph
    y = g.output[0].name if g.output else None
    if y is None:
        raise Skip
    big = [rng.choice(HUGE[:5] + [100000]) for _ in range(rng.randrange(1, 4))]
    name = f"fuzz_{op}"
    if op == "ConstantOfShape":
        shape = helper.make_tensor(name + "_shape", TensorProto.INT64, [len(big)], big)
        g.initializer.append(shape)
        g.node.append(helper.make_node("ConstantOfShape", [shape.name], [name]))
    elif op == "Expand":
        shape = helper.make_tensor(name + "_shape", TensorProto.INT64, [len(big)], big)
        one = helper.make_tensor(name + "_one", TensorProto.FLOAT, [1], [1.0])
        g.initializer.extend([shape, one])
        g.node.append(helper.make_node("Expand", [one.name, shape.name], [name]))
    elif op == "Tile":
        reps = helper.make_tensor(name + "_reps", TensorProto.INT64, [1], [big[0]])
        one = helper.make_tensor(name + "_one", TensorProto.FLOAT, [2], [1.0, 2.0])
        g.initializer.extend([reps, one])
        g.node.append(helper.make_node("Tile", [one.name, reps.name], [name]))
    elif op == "Range":
        s = helper.make_tensor(name + "_s", TensorProto.INT64, [], [0])
        e = helper.make_tensor(name + "_e", TensorProto.INT64, [], [big[0]])
        d = helper.make_tensor(name + "_d", TensorProto.INT64, [], [rng.choice([1, 0, -1])])
        g.initializer.extend([s, e, d])
        g.node.append(helper.make_node("Range", [s.name, e.name, d.name], [name]))
    elif op == "Resize":
        x = helper.make_tensor(name + "_x", TensorProto.FLOAT, [1, 1, 2, 2], [1.0, 2.0, 3.0, 4.0])
        sc = helper.make_tensor(name + "_sc", TensorProto.FLOAT, [4], [1.0, 1.0, 1e6, rng.choice([1e6, 1e30, -1.0])])
        g.initializer.extend([x, sc])
        g.node.append(helper.make_node("Resize", [x.name, "", sc.name], [name]))
    elif op == "Pad":
        x = helper.make_tensor(name + "_x", TensorProto.FLOAT, [2], [1.0, 2.0])
        p = helper.make_tensor(name + "_p", TensorProto.INT64, [2], [big[0], rng.choice([big[0], -(2**62)])])
        g.initializer.extend([x, p])
        g.node.append(helper.make_node("Pad", [x.name, p.name], [name]))
    out = helper.make_tensor_value_info(name, TensorProto.FLOAT if op != "Range" else TensorProto.INT64, None)
    g.output.append(out)


def m_big_op(m, rng):
    add_big(m, rng, rng.choice(["ConstantOfShape", "Expand", "Tile", "Range", "Resize", "Pad"]))


def m_big_op_from_input(m, rng):
    """A huge request decided at run time: ConstantOfShape of a shape computed from a graph
    input's values (random inputs are small, so scale them by a huge constant)."""
    g = m.graph
    x = pick(rng, [i for i in g.input if i.type.tensor_type.elem_type == TensorProto.FLOAT])
    k = helper.make_tensor("fuzz_k", TensorProto.FLOAT, [], [float(rng.choice(HUGE[:4]))])
    g.initializer.append(k)
    g.node.extend(
        [
            helper.make_node("ReduceMax", [x.name], ["fuzz_m"], keepdims=0),
            helper.make_node("Abs", ["fuzz_m"], ["fuzz_a"]),
            helper.make_node("Mul", ["fuzz_a", "fuzz_k"], ["fuzz_p"]),
            helper.make_node("Cast", ["fuzz_p"], ["fuzz_i"], to=TensorProto.INT64),
            helper.make_node("Reshape", ["fuzz_i", "fuzz_one"], ["fuzz_s"]),
            helper.make_node("ConstantOfShape", ["fuzz_s"], ["fuzz_y"]),
        ]
    )
    g.initializer.append(helper.make_tensor("fuzz_one", TensorProto.INT64, [1], [1]))
    g.output.append(helper.make_tensor_value_info("fuzz_y", TensorProto.FLOAT, None))


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, payload):
    """A length-delimited protobuf field."""
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def deep_if_model(depth):
    """Bytes of a ModelProto whose graph holds If nodes nested `depth` deep, built by hand:
    protobuf libraries refuse to build (or parse) messages nested this deep. Appended to a
    model's bytes, protobuf merging adds the node, its condition and its output to the graph."""
    f32_one = field(1, varint(1)) + varint(2 << 3 | 0) + varint(1) + field(8, "v") + field(9, b"\x00\x00\x80\x3f")
    out_vi = field(1, "fuzz_deep") + field(2, field(1, varint(1 << 3) + varint(1) + field(2, field(1, varint(1 << 3) + varint(1)))))
    const = field(2, "fuzz_deep") + field(4, "Constant") + field(5, field(1, "value") + varint(20 << 3) + varint(4) + field(5, f32_one))
    leaf = field(1, const) + field(2, "leaf") + field(12, out_vi)
    body = leaf
    for i in range(depth):
        attrs = field(5, field(1, "then_branch") + varint(20 << 3) + varint(5) + field(6, body))
        attrs += field(5, field(1, "else_branch") + varint(20 << 3) + varint(5) + field(6, leaf))
        node = field(1, "fuzz_cond") + field(2, "fuzz_deep") + field(3, f"if{i}") + field(4, "If") + attrs
        body = field(1, node) + field(2, f"b{i}") + field(12, out_vi)
    cond = varint(2 << 3) + varint(9) + field(8, "fuzz_cond") + field(9, b"\x01")
    return field(7, body + field(5, cond))


def m_tensor_fields(m, rng):
    t = pick(rng, list(m.graph.initializer) + [a.t for g in graphs(m.graph) for n in g.node for a in n.attribute if a.HasField("t")])
    r = rng.random()
    if r < 0.3:
        t.data_location = 1  # external, with broken locations
        del t.external_data[:]
        e = t.external_data.add()
        e.key, e.value = rng.choice([("location", "../../etc/passwd"), ("location", "nope.bin"), ("offset", "-5"), ("length", "99999999999")])
    elif r < 0.6:
        t.ClearField("raw_data")
        t.float_data.extend([1.0] * rng.randrange(0, 3))
    else:
        t.segment.begin = rng.choice([-1, 0, 5])
        t.segment.end = rng.choice([-(2**40), 2**40])


EDITS = [
    (m_input_dims, 14),
    (m_dtype, 8),
    (m_raw_data, 8),
    (m_attribute, 14),
    (m_dangling, 5),
    (m_self_loop, 4),
    (m_duplicate_output, 3),
    (m_shuffle, 2),
    (m_versions, 8),
    (m_big_op, 8),
    (m_big_op_from_input, 4),
    (m_tensor_fields, 4),
]


def byte_mutation(data, rng):
    b = bytearray(data)
    r = rng.random()
    if r < 0.35 or len(b) < 8:
        b = b[: rng.randrange(len(b) + 1)]
    elif r < 0.8:
        for _ in range(rng.randrange(1, 12)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    else:
        # a varint made huge: 10 0xff bytes at a random place
        at = rng.randrange(len(b))
        b[at:at] = b"\xff" * rng.randrange(1, 11) + b"\x01"
    return bytes(b)


def mutate(seed_bytes, rng):
    if rng.random() < 0.3:
        return byte_mutation(seed_bytes, rng), "bytes"
    if rng.random() < 0.03:
        return seed_bytes + deep_if_model(rng.choice([20, 60, 200, 1000])), "deep_if"
    m = onnx.ModelProto()
    m.ParseFromString(seed_bytes)
    names = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        fns, weights = zip(*EDITS)
        f = rng.choices(fns, weights)[0]
        try:
            f(m, rng)
            names.append(f.__name__[2:])
        except (Skip, ValueError, IndexError, TypeError, StopIteration):
            continue
    return m.SerializeToString(), "+".join(names) or "none"


def classify(rc, out):
    if rc is None:
        return "hang"
    if "panicked at" in out or rc == 101:
        return "panic"
    if rc < 0 or rc > 128:
        return "signal" if rc != 134 and rc != -6 else "abort"
    if "memory allocation of" in out:
        return "abort"
    return "ok" if rc in (0, 1) else f"exit{rc}"


def run_one(args, path, providers):
    cmd = [args.vinort, "run", str(path), "-e", providers, "-r", "1", *args.vinort_arg]
    env = dict(os.environ, RUST_BACKTRACE="0")
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=args.timeout, env=env)
        out = (p.stdout + p.stderr).decode(errors="replace")
        return classify(p.returncode, out), out
    except subprocess.TimeoutExpired as e:
        out = ((e.stdout or b"") + (e.stderr or b"")).decode(errors="replace")
        return "hang", out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vinort", required=True)
    ap.add_argument("--seeds", nargs="+", required=True, help="folders searched for *.onnx")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--providers", action="append", help="an -e list; repeatable (default cpu)")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--max-seed-bytes", type=int, default=2_000_000)
    ap.add_argument("--keep", help="folder for failing models and their outputs")
    ap.add_argument("--vinort-arg", action="append", default=[], help="an extra argument of `vinort run` (repeatable)")
    args = ap.parse_args()
    providers = args.providers or ["cpu"]
    seeds = seeds_from(args.seeds, args.max_seed_bytes)
    if not seeds:
        sys.exit("no seed models found")
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="vinort-fuzz-"))
    jobs = []
    for i in range(args.count):
        seed = rng.choice(seeds)
        data, how = mutate(seed.read_bytes(), rng)
        path = work / f"m{i:06}.onnx"
        path.write_bytes(data)
        jobs.append((path, providers[i % len(providers)], seed, how))
    counts = {}
    failures = []

    def go(job):
        path, prov, seed, how = job
        kind, out = run_one(args, path, prov)
        return job, kind, out

    with ThreadPoolExecutor(args.jobs) as ex:
        for (path, prov, seed, how), kind, out in ex.map(go, jobs):
            counts[(prov, kind)] = counts.get((prov, kind), 0) + 1
            if kind != "ok":
                failures.append((path, prov, seed, how, kind, out))
    for (prov, kind), n in sorted(counts.items()):
        print(f"{prov:>14} {kind:>7}: {n}")
    for path, prov, seed, how, kind, out in failures:
        tail = "\n    ".join(out.strip().splitlines()[-4:])
        print(f"FAIL {kind} [{prov}] {path.name} from {seed} ({how}):\n    {tail}")
        if args.keep:
            keep = Path(args.keep)
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, keep / f"{kind}-{path.name}")
            (keep / f"{kind}-{path.stem}.txt").write_text(f"{prov}\n{seed}\n{how}\n\n{out}")
    shutil.rmtree(work)
    print(f"{len(jobs)} models, {len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
