#!/usr/bin/env python3
"""Write the ONNX backend node test cases to disk in the standard layout.

    gen_node_tests.py OUT_DIR [--expect-onnx VERSION] [--expect-count N] [-v]

Layout, one folder per case of onnx.backend.test.case.node:

    OUT_DIR/<case>/model.onnx
    OUT_DIR/<case>/test_data_set_<N>/input_<K>.pb
    OUT_DIR/<case>/test_data_set_<N>/output_<K>.pb
    OUT_DIR/.complete                     (written last)

Each .pb file holds one value, encoded according to the DECLARED type of the
matching graph input/output (not the Python type of the value):

    tensor_type    -> onnx.TensorProto
    sequence_type  -> onnx.SequenceProto
    optional_type  -> onnx.OptionalProto (elem_type UNDEFINED when empty)
    map_type       -> onnx.MapProto

and is named after that graph input/output. Encoding by declared type also
gives empty sequences the right elem_type.

A case gets `<case>/tolerance.txt` (`rtol=...`, `atol=...` lines) only when
its tolerance differs from the backend-test default (rtol=1e-3, atol=1e-7);
onnx 1.23.2 has no such case, so none is written for it.

`.complete` records the onnx version, the case count and the sha256 of this
script; scripts/gen-node-tests compares it to decide whether to regenerate.
OUT_DIR must be missing or empty. Output is deterministic: the same onnx
version and script give byte-identical files.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import warnings

DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-7
SEQ_KINDS = ("sequence_type", "optional_type", "map_type")


def script_digest() -> str:
    with open(os.path.abspath(__file__), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load_cases():
    """All node test cases, in onnx's own (import) order."""
    import numpy as np
    from onnx.backend.test.case.node import collect_testcases

    # The case modules compute their expected outputs with numpy and trip
    # harmless overflow / divide-by-zero warnings on purpose; hide them.
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return list(collect_testcases(None))


class Encoder:
    """Converts test-case values to protos, driven by a TypeProto."""

    def __init__(self) -> None:
        import numpy as np
        import onnx
        from onnx import numpy_helper

        self.np = np
        self.onnx = onnx
        self.numpy_helper = numpy_helper

    def encode(self, value, tp, name: str, where: str):
        kind = tp.WhichOneof("value")
        if kind == "tensor_type":
            return self.tensor(value, tp.tensor_type.elem_type, name, where)
        if kind == "sequence_type":
            return self.sequence(value, tp.sequence_type.elem_type, name, where)
        if kind == "optional_type":
            return self.optional(value, tp.optional_type.elem_type, name, where)
        if kind == "map_type":
            return self.map(value, tp.map_type, name, where)
        raise TypeError(f"{where}: unsupported declared type {kind!r}")

    def tensor(self, value, elem_type: int, name: str, where: str):
        onnx = self.onnx
        if isinstance(value, onnx.TensorProto):
            t = onnx.TensorProto()
            t.CopyFrom(value)
        else:
            t = self.numpy_helper.from_array(self.np.asarray(value))
        if name:
            t.name = name
        else:
            t.ClearField("name")
        if elem_type and t.data_type != elem_type:
            raise TypeError(
                f"{where}: value is {onnx.TensorProto.DataType.Name(t.data_type)}"
                f" but declared {onnx.TensorProto.DataType.Name(elem_type)}"
            )
        return t

    def _container_kind(self, tp, enum, where: str) -> int:
        """SequenceProto/OptionalProto elem_type for an element TypeProto."""
        kind = tp.WhichOneof("value")
        table = {
            "tensor_type": enum.TENSOR,
            "sparse_tensor_type": enum.SPARSE_TENSOR,
            "sequence_type": enum.SEQUENCE,
            "map_type": enum.MAP,
            "optional_type": getattr(enum, "OPTIONAL", None),
        }
        code = table.get(kind)
        if code is None:
            raise TypeError(f"{where}: unsupported element type {kind!r}")
        return code

    def _fill(self, holder, field: str, value, tp, where: str) -> None:
        """Encode VALUE as TP and store it in holder.<field> (message field)."""
        getattr(holder, field).CopyFrom(self.encode(value, tp, "", where))

    def sequence(self, value, elem_tp, name: str, where: str):
        S = self.onnx.SequenceProto
        seq = S()
        if name:
            seq.name = name
        seq.elem_type = self._container_kind(elem_tp, S, where)
        field = {
            S.TENSOR: "tensor_values",
            S.SEQUENCE: "sequence_values",
            S.MAP: "map_values",
            S.OPTIONAL: "optional_values",
        }.get(seq.elem_type)
        if field is None:
            raise TypeError(f"{where}: unsupported sequence element type")
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{where}: declared a sequence, got {type(value).__name__}")
        repeated = getattr(seq, field)
        for i, elem in enumerate(value):
            repeated.add().CopyFrom(self.encode(elem, elem_tp, "", f"{where}[{i}]"))
        return seq

    def optional(self, value, elem_tp, name: str, where: str):
        O = self.onnx.OptionalProto
        opt = O()
        if name:
            opt.name = name
        if value is None:
            opt.elem_type = O.UNDEFINED  # the empty optional
            return opt
        opt.elem_type = self._container_kind(elem_tp, O, where)
        field = {
            O.TENSOR: "tensor_value",
            O.SEQUENCE: "sequence_value",
            O.MAP: "map_value",
            O.OPTIONAL: "optional_value",
        }.get(opt.elem_type)
        if field is None:
            raise TypeError(f"{where}: unsupported optional element type")
        self._fill(opt, field, value, elem_tp, where)
        return opt

    def map(self, value, map_tp, name: str, where: str):
        onnx = self.onnx
        m = onnx.MapProto()
        if name:
            m.name = name
        if not isinstance(value, dict):
            raise TypeError(f"{where}: declared a map, got {type(value).__name__}")
        m.key_type = map_tp.key_type
        keys = list(value.keys())
        if map_tp.key_type == onnx.TensorProto.STRING:
            m.string_keys.extend(
                k if isinstance(k, bytes) else str(k).encode("utf-8") for k in keys
            )
        else:
            m.keys.extend(int(k) for k in keys)
        m.values.CopyFrom(
            self.sequence([value[k] for k in keys], map_tp.value_type, "", where)
        )
        return m


def fmt_float(x: float) -> str:
    return repr(float(x))


def write_bytes(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", help="folder to write (must be missing or empty)")
    ap.add_argument("--expect-onnx", help="fail unless onnx.__version__ is this")
    ap.add_argument("--expect-count", type=int, help="fail unless this many cases")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="list the cases with non-tensor inputs/outputs on stderr")
    args = ap.parse_args(argv)

    import onnx

    if args.expect_onnx and onnx.__version__ != args.expect_onnx:
        print(f"gen_node_tests: onnx {onnx.__version__} is installed, "
              f"expected {args.expect_onnx}", file=sys.stderr)
        return 1

    out = args.out_dir
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        print(f"gen_node_tests: {out} exists and is not an empty folder",
              file=sys.stderr)
        return 1

    cases = load_cases()
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        print("gen_node_tests: duplicate case names", file=sys.stderr)
        return 1
    if args.expect_count is not None and len(cases) != args.expect_count:
        print(f"gen_node_tests: onnx {onnx.__version__} has {len(cases)} node "
              f"cases, expected {args.expect_count}", file=sys.stderr)
        return 1

    os.makedirs(out, exist_ok=True)
    enc = Encoder()
    kinds = {"tensor_type": 0, "sequence_type": 0, "optional_type": 0, "map_type": 0}
    n_tolerance = n_files = 0
    for case in cases:
        name = case.name
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"unusable case name {name!r}")
        cdir = os.path.join(out, name)
        os.mkdir(cdir)
        model = case.model
        write_bytes(os.path.join(cdir, "model.onnx"),
                    model.SerializeToString(deterministic=True))
        n_files += 1
        if (case.rtol, case.atol) != (DEFAULT_RTOL, DEFAULT_ATOL):
            write_bytes(os.path.join(cdir, "tolerance.txt"),
                        f"rtol={fmt_float(case.rtol)}\natol={fmt_float(case.atol)}\n"
                        .encode())
            n_tolerance += 1
        graph = model.graph
        for n, (inputs, outputs) in enumerate(case.data_sets or []):
            ddir = os.path.join(cdir, f"test_data_set_{n}")
            os.mkdir(ddir)
            for prefix, values, infos in (("input", inputs, graph.input),
                                          ("output", outputs, graph.output)):
                if len(values) != len(infos):
                    raise ValueError(
                        f"{name}: {len(values)} {prefix} values for "
                        f"{len(infos)} graph {prefix}s")
                for k, (value, vi) in enumerate(zip(values, infos)):
                    kind = vi.type.WhichOneof("value")
                    kinds[kind] = kinds.get(kind, 0) + 1
                    where = f"{name} {prefix} {k} ({vi.name})"
                    if args.verbose and kind in SEQ_KINDS:
                        print(f"{kind:14} {prefix:6} {name}.{vi.name}",
                              file=sys.stderr)
                    proto = enc.encode(value, vi.type, vi.name, where)
                    write_bytes(os.path.join(ddir, f"{prefix}_{k}.pb"),
                                proto.SerializeToString(deterministic=True))
                    n_files += 1

    # Last: the marker that says this folder is whole.
    write_bytes(os.path.join(out, ".complete"),
                (f"onnx={onnx.__version__}\n"
                 f"cases={len(cases)}\n"
                 f"generator={script_digest()}\n").encode())

    print(f"gen_node_tests: wrote {len(cases)} node cases of onnx "
          f"{onnx.__version__} ({n_files} files; values: "
          f"{kinds['tensor_type']} tensor, {kinds['sequence_type']} sequence, "
          f"{kinds['optional_type']} optional, {kinds['map_type']} map; "
          f"{n_tolerance} tolerance files) to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
