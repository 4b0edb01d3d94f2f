#!/usr/bin/env python3
"""Write ONNX's other backend test suites (the ones besides `node`) as test-case folders.

    gen_onnx_suites.py OUT_DIR

The onnx wheel ships, under onnx/backend/test/data/, four suites besides the node tests:
pytorch-converted (82 cases), pytorch-operator (35), simple (23) and light (9), 149 cases in
onnx 1.23.2. This writes all of them, one folder per suite:

    OUT_DIR/<suite>/<case>/model.onnx
    OUT_DIR/<suite>/<case>/test_data_set_<N>/{input,output}_<K>.pb
    OUT_DIR/<suite>/<case>/tolerance.txt      (only when not rtol=1e-3, atol=1e-7)
    OUT_DIR/.complete                         (written last)

The first three suites already have this layout and are copied byte for byte. `light` holds
only `light_<name>.onnx` and `light_<name>_output_0.pb`: onnx's runner
(onnx/backend/test/runner/__init__.py, `_add_model_test` with `use_dummy`) feeds every graph
input that is not an initializer with `(np.arange(n).reshape(shape) / n).astype(np.float32)`
(a dim without a value counts as 1; the light models have none), numbering the input files
over those inputs only, and compares with the stored `_output_0.pb`. The rtol/atol it uses come
from data/real/test_<name>/data.json (densenet121 has rtol 2e-3). The light cases are named
after their file (`light_squeezenet`).

`.complete` records the pinned package versions, the case count and the sha256 of the
generator files; a folder whose stamp matches is reused at once (the check imports neither
onnx nor numpy). Generation goes to a temporary sibling that is renamed into place under an
flock on the parent folder, so a folder that looks complete is complete. `write_atomically`
and friends are shared with scripts/gen_corpus.py.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path

SUITES = ("pytorch-converted", "pytorch-operator", "simple", "light")
EXPECTED_CASES = {"1.23.2": 149}
DEFAULT_RTOL, DEFAULT_ATOL = 1e-3, 1e-7
STAMP = ".complete"
PACKAGES = ("numpy", "onnx", "onnxruntime")


def log(msg: str) -> None:
    print(f"{Path(sys.argv[0]).stem}: {msg}", file=sys.stderr)


def stamp_text(sources: list[Path], cases: int | None, packages=PACKAGES) -> str:
    """What `.complete` holds: package versions, generator digests and (once known) the count."""
    lines = [f"{p}={metadata.version(p)}" for p in packages]
    for src in sources:
        lines.append(f"{src.name}={hashlib.sha256(src.read_bytes()).hexdigest()}")
    if cases is not None:
        lines.append(f"cases={cases}")
    return "\n".join(lines) + "\n"


def count_cases(folder: Path) -> int:
    return sum(1 for p in folder.rglob("model.onnx"))


def is_complete(out: Path, sources: list[Path], packages=PACKAGES) -> bool:
    """Does OUT hold a whole generation by these sources and package versions?"""
    try:
        stamp = (out / STAMP).read_text()
    except OSError:
        return False
    fields = dict(line.split("=", 1) for line in stamp.splitlines() if "=" in line)
    if not fields.get("cases", "").isdigit():
        return False
    if stamp != stamp_text(sources, int(fields["cases"]), packages):
        return False
    return count_cases(out) == int(fields["cases"])


def write_atomically(out: Path, sources: list[Path], allowed: set[str], fill, packages=PACKAGES) -> None:
    """Unless OUT is already complete, runs `fill(tmp) -> case count` into a temporary sibling
    and swaps it into place. `allowed` names the entries OUT may hold: anything else means the
    folder is not ours, and it is left alone."""
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    if is_complete(out, sources, packages):
        return
    lock = os.open(out.parent, os.O_RDONLY)
    try:
        # Concurrent generators wait here; the first one's result is then reused.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_complete(out, sources, packages):
            return
        if out.exists() or out.is_symlink():
            if not out.is_dir() or out.is_symlink():
                raise SystemExit(f"{out} exists and is not a folder; refusing to replace it")
            strange = sorted(set(os.listdir(out)) - allowed - {STAMP})
            if strange:
                raise SystemExit(f"{out} holds {strange[0]!r}, which is not generated data; refusing to replace it")
        # Leftovers of runs killed before they could clean up; safe to remove under the lock.
        for stale in out.parent.glob(f".{out.name}.tmp.*"):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp.", dir=out.parent))
        try:
            os.chmod(tmp, 0o777 & ~current_umask())
            cases = fill(tmp)
            (tmp / STAMP).write_text(stamp_text(sources, cases, packages))
            if not is_complete(tmp, sources, packages):
                raise SystemExit(f"generated data in {tmp} failed its completeness check")
            old = out.parent / f".{out.name}.tmp.old"
            if out.exists():
                os.rename(out, old)
            os.rename(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        os.close(lock)  # releases the flock


def generator_main(argv: list[str], doc: str, what: str, sources: list[Path], fill, fixed=frozenset(),
                   packages=PACKAGES) -> int:
    """The command line every generator shares: `OUT_DIR` (else print `doc`, exit 2), then
    `write_atomically` into it. Case folders (those holding a model.onnx) and the `fixed`
    entries are what OUT may already hold."""
    if len(argv) != 1:
        print(doc, file=sys.stderr)
        return 2
    out = Path(argv[0])
    if not is_complete(out.resolve(), sources, packages):
        log(f"writing {what} to {out}")
    allowed = set(fixed)
    if out.is_dir():
        allowed |= {p.name for p in out.iterdir() if (p / "model.onnx").is_file()}
    write_atomically(out, sources, allowed, fill, packages)
    return 0


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_tolerance(case_dir: Path, rtol: float, atol: float) -> None:
    """`tolerance.txt` in the format of scripts/gen_node_tests.py, read by
    vinort_tools::testcase::read_tolerance."""
    (case_dir / "tolerance.txt").write_text(f"rtol={rtol!r}\natol={atol!r}\n")


def onnx_data_dir() -> Path:
    import onnx

    return Path(onnx.__file__).resolve().parent / "backend" / "test" / "data"


def copy_layout_suite(src: Path, dst: Path) -> int:
    """A suite whose cases already have the test-case layout (and maybe a data.json)."""
    import json

    n = 0
    for case in sorted(p for p in src.iterdir() if (p / "model.onnx").is_file()):
        target = dst / case.name
        shutil.copytree(case, target, ignore=shutil.ignore_patterns("data.json", "__pycache__"))
        if (case / "data.json").is_file():
            data = json.loads((case / "data.json").read_text())
            rtol, atol = data.get("rtol", DEFAULT_RTOL), data.get("atol", DEFAULT_ATOL)
            if (rtol, atol) != (DEFAULT_RTOL, DEFAULT_ATOL):
                write_tolerance(target, rtol, atol)
        n += 1
    return n


def write_light_suite(data: Path, dst: Path) -> int:
    """The `light` models with the inputs onnx's runner makes for them (see the module doc)."""
    import json

    import numpy as np
    import onnx
    from onnx import numpy_helper

    n = 0
    for model_path in sorted((data / "light").glob("light_*.onnx")):
        name = model_path.stem
        model = onnx.load(str(model_path))
        case = dst / name
        ds = case / "test_data_set_0"
        ds.mkdir(parents=True)
        shutil.copyfile(model_path, case / "model.onnx")
        inits = {t.name for t in model.graph.initializer}
        k = 0
        for vi in model.graph.input:
            if vi.name in inits:
                continue
            tt = vi.type.tensor_type
            if tt.elem_type != onnx.TensorProto.FLOAT:
                raise SystemExit(f"{name}: input {vi.name} is not float; onnx's runner cannot feed it either")
            shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim)
            count = int(np.prod(shape))
            value = (np.arange(count).reshape(shape) / count).astype(np.float32)
            (ds / f"input_{k}.pb").write_bytes(numpy_helper.from_array(value, vi.name).SerializeToString())
            k += 1
        outputs = sorted(model_path.parent.glob(f"{name}_output_*.pb"))
        if len(outputs) != len(model.graph.output):
            raise SystemExit(f"{name}: {len(outputs)} reference outputs for {len(model.graph.output)} graph outputs")
        for i in range(len(outputs)):
            shutil.copyfile(model_path.parent / f"{name}_output_{i}.pb", ds / f"output_{i}.pb")
        # The runner's tolerance for this model lives with its "real" twin.
        real = data / "real" / f"test_{name.removeprefix('light_')}" / "data.json"
        meta = json.loads(real.read_text()) if real.is_file() else {}
        rtol, atol = meta.get("rtol", DEFAULT_RTOL), meta.get("atol", DEFAULT_ATOL)
        if (rtol, atol) != (DEFAULT_RTOL, DEFAULT_ATOL):
            write_tolerance(case, rtol, atol)
        n += 1
    return n


def fill(tmp: Path) -> int:
    import onnx

    data = onnx_data_dir()
    total = 0
    for suite in SUITES:
        (tmp / suite).mkdir()
        if suite == "light":
            n = write_light_suite(data, tmp / suite)
        else:
            n = copy_layout_suite(data / suite, tmp / suite)
        log(f"{suite}: {n} cases")
        total += n
    want = EXPECTED_CASES.get(onnx.__version__)
    if want is not None and total != want:
        raise SystemExit(f"onnx {onnx.__version__} should give {want} cases, found {total}")
    return total


def main(argv: list[str]) -> int:
    return generator_main(argv, __doc__, f"ONNX's {', '.join(SUITES)} suites", [Path(__file__).resolve()], fill,
                          fixed=frozenset(SUITES))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
