#!/usr/bin/env python3
"""Write EPContext models compiled by ONNX Runtime + its OpenVINO EP, with ORT's outputs.

    gen_ort_context.py OUT_DIR [BENCH_MODELS_DIR]

Run with the interpreter of `scripts/py-env --ovep` (onnxruntime-openvino 1.24.1, which
bundles OpenVINO 2025.4.1); `scripts/gen-ort-context` does. tests/ort_context.rs (issue 14)
loads the files with vinort on OpenVINO 2025.4.1, and in a child process on another OpenVINO
to see the version refused by name.

For each source model, ONNX Runtime compiles a session with the OpenVINO EP (device_type CPU,
precision FP32) and the session config entries ep.context_enable=1,
ep.context_file_path=<case>/model.onnx and ep.context_embed_mode 1 and 0:

  source                                      structure ORT makes of it
  models/mobilenetv2_tiny                     one OpenVINO partition, one input
  models/bert_tiny                            one OpenVINO partition, two int64 inputs, two outputs
  BENCH_MODELS_DIR/segnet_bench               split: 4 OpenVINO partitions around 3 MaxUnpool nodes
  (scripts/gen-bench-models segnet_bench)     that ORT's CPU EP runs (OpenVINO has no MaxUnpool);
                                              the first partition has 4 outputs

Each case folder:

    OUT_DIR/<source>_embed<1|0>/model.onnx                (written by ONNX Runtime)
    OUT_DIR/<source>_embed0/model_OpenVINOExecutionProvider.bin   (embed_mode 0)
    OUT_DIR/<case>/test_data_set_0/{input,output}_<K>.pb  (TensorProtos named after the values)

The inputs are the source model's own `test_data_set_0` inputs (seeded by models/generate.py
and models/generate_bench.py). The outputs are those of the ORT session that compiled and
exported the blobs: its compiled models are what the blobs hold, so an import with the same
properties must give them bit for bit. They are not made by ORT loading its own context,
because onnxruntime-openvino 1.24.1 cannot: every load fails with "EP_FAIL : Unhandled
exception type: 1". The cause: the CPU plugin's exported blob holds the model as OpenVINO IR,
and importing it needs the IR frontend, which the wheel's bundled OpenVINO lacks (only
libopenvino_onnx_frontend); the IR frontend of the openvino==2025.4.1 wheel does not load into
that bundle either (undefined symbol ov::Any::Base::to_string: the bundle is a custom build,
version string 2025.4.1-0-test). ort-wrote.txt records the load attempt per case, so a fixed
wheel shows up there.

So vinort loads OpenVINO 2025.4.1 from the openvino==2025.4.1 wheel (the same release, a
complete build; it imports ORT's blobs), installed with `pip install --target` into
OUT_DIR/openvino-2025.4.1.

Also written:

    OUT_DIR/openvino.txt   `library <folder>` (that wheel's libopenvino_c, relative to OUT_DIR),
                           `version <full version>` (its ov_get_openvino_version),
                           `onnxruntime <version>`,
                           `ort_bundle <folder>` and `ort_bundle_version <version>` (ORT's own)
    OUT_DIR/ort-wrote.txt  what ORT wrote, read back from the files: every node with its
                           attributes, the OVEP_BIN containers' headers and metadata, and
                           whether ORT could load the context
    OUT_DIR/.complete      written last (scripts/gen_onnx_suites.py's stamp and reuse rule:
                           this file, the source models and inputs, the package versions)

What ORT 1.24.1 writes (ort-wrote.txt has the exact values): one com.microsoft::EPContext node
per OpenVINO partition, named like its partition_name `OpenVINOExecutionProvider_OpenVINO-EP-
subgraph_<N>_<K>` (N counts partitions in the process, K in the model), with the partition's
boundary as inputs and outputs, and string attributes partition_name, ep_sdk_version ("2025.4":
major.minor only), ep_cache_context, source ("OpenVINOExecutionProvider"), int attributes
max_size (0), main_context, embed_mode; no `notes`. The model has IR version 13, an empty
producer, no initializers, and ONNX nodes of the other partitions as they were. The blob is
never OpenVINO's exported model itself but an `OVEP_BIN` container (ORT's BinManager: a
40-byte header of five little-endian u64 — magic "OVEP_BIN", version 1, header size 40, BSON
offset, BSON size — then BSON metadata {version "1.0.0", producer
"onnxruntime-openvino-ep-1.24.1", blob_metadata_map: {partition_name: {data_offset, size}},
weights_metadata_map only with shared weights}, then each exported model at a 64 KiB aligned
offset, int32 when it fits). embed_mode 1: the first node (main_context=1) holds the container
of all the model's blobs, later nodes have main_context=0 and an empty ep_cache_context;
embed_mode 0: every node has main_context=1 and ep_cache_context names the one shared
`<stem>_OpenVINOExecutionProvider.bin`. A node finds its blob by its partition_name.
"""

from __future__ import annotations

import ctypes
import struct
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

import gen_onnx_suites as common  # noqa: E402

PACKAGES = ("numpy", "onnx", "onnxruntime-openvino")
PROVIDER_OPTIONS = {"device_type": "CPU", "precision": "FP32"}
MAGIC = b"OVEP_BIN"
# The OpenVINO that ORT bundles, as a complete release: vinort loads this one (see the doc).
OPENVINO_WHEEL = "openvino==2025.4.1"
OPENVINO_DIR = "openvino-2025.4.1"
FRONTENDS = "libopenvino_*_frontend.so*"
FIXED = frozenset({"openvino.txt", "ort-wrote.txt", OPENVINO_DIR})


def sources(bench: Path) -> list[tuple[str, Path]]:
    return [
        ("mobilenetv2_tiny", REPO / "models" / "mobilenetv2_tiny"),
        ("bert_tiny", REPO / "models" / "bert_tiny"),
        ("segnet_bench", bench / "segnet_bench"),
    ]


def capi_dir() -> Path:
    import onnxruntime

    return Path(onnxruntime.__file__).resolve().parent / "capi"


def openvino_version(lib_dir: Path) -> str:
    """The full version of the OpenVINO in `lib_dir`, from its C API (ORT's wheel has no openvino
    module to ask)."""

    class Version(ctypes.Structure):
        _fields_ = [("build_number", ctypes.c_char_p), ("description", ctypes.c_char_p)]

    # The wheels ship versioned names only (libopenvino_c.so.2541).
    lib = ctypes.CDLL(str(min(lib_dir.glob("libopenvino_c.so*"))))
    v = Version()
    if lib.ov_get_openvino_version(ctypes.byref(v)) != 0:
        raise SystemExit("ov_get_openvino_version failed")
    try:
        return v.build_number.decode()
    finally:
        lib.ov_version_free(ctypes.byref(v))


# ---------------------------------------------------------------------------------------------
# reading back what ORT wrote
# ---------------------------------------------------------------------------------------------


def bson(data: bytes, at: int = 0) -> dict:
    """The BSON document at `at` (the types nlohmann::json::to_bson writes)."""
    (size,) = struct.unpack_from("<i", data, at)
    end, i, doc = at + size - 1, at + 4, {}
    while i < end:
        kind = data[i]
        name_end = data.index(b"\0", i + 1)
        name, i = data[i + 1:name_end].decode(), name_end + 1
        if kind in (0x03, 0x04):
            doc[name] = bson(data, i)
            i += struct.unpack_from("<i", data, i)[0]
        elif kind == 0x02:
            (n,) = struct.unpack_from("<i", data, i)
            doc[name], i = data[i + 4:i + 3 + n].decode(), i + 4 + n
        elif kind == 0x10:
            doc[name], i = struct.unpack_from("<i", data, i)[0], i + 4
        elif kind == 0x12:
            doc[name], i = struct.unpack_from("<q", data, i)[0], i + 8
        elif kind == 0x01:
            doc[name], i = struct.unpack_from("<d", data, i)[0], i + 8
        elif kind == 0x08:
            doc[name], i = bool(data[i]), i + 1
        else:
            raise SystemExit(f"BSON type 0x{kind:02x} at {i} is not one ORT writes")
    return doc


def container(data: bytes) -> list[str]:
    """Lines describing an OVEP_BIN container."""
    if not data.startswith(MAGIC):
        return [f"    not an OVEP_BIN container: {len(data)} bytes starting {data[:16]!r}"]
    magic, version, header_size, bson_at, bson_size = struct.unpack_from("<5Q", data, 0)
    meta = bson(data, bson_at)
    lines = [
        f"    OVEP_BIN container, {len(data)} bytes: header (5 x u64 LE) magic {magic:#x} version {version} "
        f"header_size {header_size} bson_start_offset {bson_at} bson_size {bson_size}",
        f"    BSON: version {meta.get('version')!r} producer {meta.get('producer')!r} "
        f"weights_metadata_map {meta.get('weights_metadata_map', '(absent)')!r}",
    ]
    for name, entry in meta.get("blob_metadata_map", {}).items():
        off, size = entry["data_offset"], entry["size"]
        lines.append(
            f"    blob {name!r}: data_offset {off} size {size} (64 KiB aligned: {off % 65536 == 0}), "
            f"starts {data[off:off + 16]!r}"
        )
    return lines


def describe(case: Path) -> list[str]:
    import onnx

    m = onnx.load(str(case / "model.onnx"), load_external_data=False)
    g = m.graph
    lines = [
        f"{case.name}: ir_version {m.ir_version}, producer {m.producer_name!r} {m.producer_version!r}, "
        f"opsets {sorted((o.domain, o.version) for o in m.opset_import)}",
        f"  inputs {[i.name for i in g.input]} outputs {[o.name for o in g.output]} "
        f"initializers {len(g.initializer)} value_info {len(g.value_info)}",
        f"  files {sorted(p.name for p in case.iterdir() if p.is_file())}",
    ]
    for n in g.node:
        lines.append(f"  node {n.domain or 'ai.onnx'}::{n.op_type} {n.name!r} inputs {list(n.input)} "
                     f"outputs {list(n.output)}")
        if n.op_type != "EPContext":
            continue
        for a in n.attribute:
            kind = onnx.AttributeProto.AttributeType.Name(a.type)
            if a.name == "ep_cache_context" and (len(a.s) > 200 or a.s.startswith(MAGIC)):
                lines.append(f"    {a.name} ({kind}): {len(a.s)} bytes")
                lines.extend(container(a.s))
            elif a.name == "ep_cache_context" and a.s:
                lines.append(f"    {a.name} ({kind}): {a.s.decode()!r} (a file next to the model)")
                lines.extend(container((case / a.s.decode()).read_bytes()))
            else:
                lines.append(f"    {a.name} ({kind}): {onnx.helper.get_attribute_value(a)!r}")
    return lines


# ---------------------------------------------------------------------------------------------
# generation
# ---------------------------------------------------------------------------------------------


def read_inputs(source: Path) -> list:
    import onnx
    from onnx import numpy_helper

    data = source / "test_data_set_0"
    out, k = [], 0
    while (data / f"input_{k}.pb").is_file():
        t = onnx.TensorProto()
        t.ParseFromString((data / f"input_{k}.pb").read_bytes())
        out.append((t.name, numpy_helper.to_array(t)))
        k += 1
    if not out:
        raise SystemExit(f"{data}: no input_K.pb")
    return out


def session(model: Path, context_to: Path | None = None, embed: int = 1):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3  # ORT warns that shape ops stay on its CPU EP
    if context_to is not None:
        so.add_session_config_entry("ep.context_enable", "1")
        so.add_session_config_entry("ep.context_file_path", str(context_to))
        so.add_session_config_entry("ep.context_embed_mode", str(embed))
    s = ort.InferenceSession(str(model), so, providers=["OpenVINOExecutionProvider"],
                             provider_options=[PROVIDER_OPTIONS])
    if s.get_providers()[0] != "OpenVINOExecutionProvider":
        raise SystemExit(f"{model}: ORT did not start the OpenVINO EP: {s.get_providers()}")
    return s


def write_case(source: Path, case: Path, embed: int) -> list[str]:
    import numpy as np
    from onnx import numpy_helper

    case.mkdir()
    ctx = case / "model.onnx"
    # The session that compiles and exports: its compiled models are the blobs, so its outputs
    # are what an import of the blobs must give.
    compiled = session(source / "model.onnx", ctx, embed)
    if not ctx.is_file():
        raise SystemExit(f"ORT wrote no context model at {ctx}")
    feeds = read_inputs(source)
    names = [o.name for o in compiled.get_outputs()]
    want = compiled.run(None, dict(feeds))
    del compiled
    data = case / "test_data_set_0"
    data.mkdir()
    for k, (name, arr) in enumerate(feeds):
        (data / f"input_{k}.pb").write_bytes(numpy_helper.from_array(arr, name).SerializeToString())
    for k, (name, arr) in enumerate(zip(names, want)):
        (data / f"output_{k}.pb").write_bytes(numpy_helper.from_array(arr, name).SerializeToString())
    # ORT importing its own context, as vinort does. onnxruntime-openvino 1.24.1 cannot: see
    # the module doc.
    try:
        got = session(ctx).run(None, dict(feeds))
    except Exception as e:  # noqa: BLE001 - ORT raises its own exception types
        return [f"  ORT + OpenVINO EP loading this context: fails: {str(e).strip()}"]
    notes = []
    for name, arr, w in zip(names, got, want):
        diff = float(np.max(np.abs(arr.astype(np.float64) - w.astype(np.float64)))) if arr.size else 0.0
        same = "bit-identical" if arr.tobytes() == w.tobytes() else f"max |diff| {diff:g}"
        notes.append(f"  ORT + OpenVINO EP loading this context: output {name!r}: {same} to the exporting session")
    return notes


def install_openvino(dest: Path) -> Path:
    """OpenVINO OPENVINO_WHEEL's libraries in `dest`: the folder vinort loads."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--quiet", "--no-deps",
                    "--target", str(dest), OPENVINO_WHEEL], check=True, stdout=sys.stderr)
    libs = dest / "openvino" / "libs"
    if not any(libs.glob("libopenvino_ir_frontend.so*")):
        raise SystemExit(f"{libs}: no libopenvino_ir_frontend (blobs cannot be imported without it)")
    return libs


def version_in_child(lib_dir: Path) -> str:
    """`openvino_version` in a process of its own: one process loads one OpenVINO, and
    importing onnxruntime loads ORT's."""
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import gen_ort_context as g; " \
           f"print(g.openvino_version(__import__('pathlib').Path({str(lib_dir)!r})))"
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip()


def fill(bench: Path):
    def run(tmp: Path) -> int:
        import onnxruntime

        bundle = capi_dir()
        bundled = version_in_child(bundle)
        if not bundled.startswith(OPENVINO_WHEEL.split("==")[1] + "-"):
            raise SystemExit(f"ORT bundles OpenVINO {bundled}, but {OPENVINO_WHEEL} is pinned here")
        libs = install_openvino(tmp / OPENVINO_DIR)
        full = version_in_child(libs)
        # Relative to OUT_DIR, which may move (`tmp` itself is renamed into place).
        (tmp / "openvino.txt").write_text(
            f"library {libs.relative_to(tmp)}\nversion {full}\nonnxruntime {onnxruntime.__version__}\n"
            f"ort_bundle {bundle}\nort_bundle_version {bundled}\n")
        report = [
            f"# ONNX Runtime {onnxruntime.__version__} + OpenVINO EP (bundled OpenVINO {bundled}), "
            f"provider options {PROVIDER_OPTIONS}",
            f"# vinort loads {OPENVINO_WHEEL} ({full}) from {libs.relative_to(tmp)}",
            # Why ORT cannot load its own contexts: importing a CPU blob reads IR (module doc).
            f"# frontends ORT bundles: {sorted({p.name.split('.so')[0] for p in bundle.glob(FRONTENDS)})}",
            "",
        ]
        cases = 0
        for name, source in sources(bench):
            for embed in (1, 0):
                case = tmp / f"{name}_embed{embed}"
                notes = write_case(source, case, embed)
                report += describe(case) + notes + [""]
                cases += 1
                common.log(f"{case.name}: written")
        (tmp / "ort-wrote.txt").write_text("\n".join(report))
        return cases

    return run


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    bench = Path(argv[1]) if len(argv) == 2 else REPO / "models" / "generated"
    srcs = sources(bench)
    for _, s in srcs:
        if not (s / "model.onnx").is_file():
            raise SystemExit(f"{s}/model.onnx is missing (segnet_bench: run scripts/gen-bench-models segnet_bench)")
    stamped = [Path(__file__).resolve()] + [
        p for _, s in srcs for p in [s / "model.onnx", *sorted((s / "test_data_set_0").glob("input_*.pb"))]
    ]
    return common.generator_main([str(out)], __doc__, "ONNX Runtime + OpenVINO EP context models", stamped,
                                 fill(bench), fixed=FIXED, packages=PACKAGES)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
