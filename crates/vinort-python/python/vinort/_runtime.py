"""onnxruntime's module functions (``get_all_providers``, logger severity, telemetry, build
info, seeds…) and ``install_as_onnxruntime``, the one switch that makes ``import
onnxruntime`` give vinort to code that imports onnxruntime itself.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

from . import _vinort
from ._session import ALL_PROVIDERS

#: The onnxruntime release whose Python API vinort follows (its behaviour is tested against
#: that release): what ``onnxruntime.__version__`` says once vinort is installed as it, since
#: packages compare it to decide which API to call.
ONNXRUNTIME_API_VERSION = "1.31.1"

_logger = {"severity": 2, "verbosity": 0}
_telemetry = {"enabled": False}


def get_all_providers():
    """Every provider name onnxruntime knows; ``get_available_providers()`` lists vinort's."""
    return list(ALL_PROVIDERS)


def get_device() -> str:
    """Where the default providers run."""
    return "CPU"


def get_version_string() -> str:
    """The onnxruntime release whose API vinort follows (vinort's own is ``vinort.__version__``)."""
    return ONNXRUNTIME_API_VERSION


def get_build_info() -> str:
    ov = _vinort.openvino_version()
    return (f"vinort {_vinort.__version__} (onnxruntime API {ONNXRUNTIME_API_VERSION}), "
            f"OpenVINO {ov if ov else 'not found'}, Cpu kernels {_vinort.cpu_kind()['kernels']}")


def has_collective_ops() -> bool:
    return False


def set_default_logger_severity(severity: int) -> None:
    """0 verbose … 4 fatal, as onnxruntime; vinort logs through Rust's ``tracing`` (silent
    unless the process installs a subscriber), so the value is kept and checked only."""
    if not 0 <= int(severity) <= 4:
        raise _vinort.VinortError(f"severity >= 0 && severity <= 4 was false. Invalid logging severity: {severity}")
    _logger["severity"] = int(severity)


def set_default_logger_verbosity(verbosity: int) -> None:
    _logger["verbosity"] = int(verbosity)


def enable_telemetry_events() -> None:
    """vinort sends no telemetry: a no-op, for code written for onnxruntime."""
    _telemetry["enabled"] = True


def disable_telemetry_events() -> None:
    _telemetry["enabled"] = False


def set_seed(seed: int) -> None:
    """Seeds the random ops (RandomNormal…)? vinort's are seeded per node by the model's
    ``seed`` attribute; the global seed is kept for code that sets it."""
    int(seed)


def set_global_thread_pool_sizes(intra_op_num_threads: int = 0, inter_op_num_threads: int = 0) -> None:
    """Kept for code written for onnxruntime: vinort's sessions have their own threads
    (``SessionOptions.intra_op_num_threads``)."""


def preload_dlls(*args, **kwargs) -> None:
    """onnxruntime's CUDA DLL preloading: nothing to preload for vinort."""


# --- install_as_onnxruntime -------------------------------------------------------------------

#: The submodules of onnxruntime that real code imports, and vinort's module for each.
_SUBMODULES = {
    "capi": "vinort.capi",
    "capi._pybind_state": "vinort.capi._pybind_state",
    "capi.onnxruntime_pybind11_state": "vinort.capi.onnxruntime_pybind11_state",
    "capi.onnxruntime_inference_collection": "vinort.capi.onnxruntime_inference_collection",
}


class _Finder(importlib.abc.MetaPathFinder):
    """Answers ``import onnxruntime.X`` for the X vinort has no module for: from the real
    onnxruntime's pure-Python tools when it is installed too (``onnxruntime.quantization``,
    ``onnxruntime.tools``…, which then run on vinort), else a clear ``ModuleNotFoundError``."""

    def __init__(self, real_dirs):
        self.real_dirs = real_dirs

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("onnxruntime.") or fullname in sys.modules:
            return None
        if self.real_dirs:
            return None  # the facade's __path__ (the real package folder) finds it
        raise ModuleNotFoundError(
            f"No module named '{fullname}': vinort is installed as onnxruntime and has no such module "
            "(it provides onnxruntime's runtime API: InferenceSession, SessionOptions, OrtValue, capi); "
            "install onnxruntime too for its tools",
            name=fullname,
        )


def _real_onnxruntime_dirs():
    spec = importlib.machinery.PathFinder.find_spec("onnxruntime")
    return list(spec.submodule_search_locations or []) if spec and spec.submodule_search_locations else []


def install_as_onnxruntime() -> types.ModuleType:
    """Makes ``import onnxruntime`` (and ``onnxruntime.capi…``) give vinort, for packages that
    import onnxruntime themselves. Call it before they import onnxruntime. Returns the module
    ``onnxruntime`` now is: vinort's names, with ``__version__`` the onnxruntime API version
    vinort follows. Set ``VINORT_AS_ONNXRUNTIME=1`` to have every Python process of the
    environment do this at start-up (the wheel's ``vinort_onnxruntime.pth``)."""
    import vinort

    current = sys.modules.get("onnxruntime")
    if current is not None and getattr(current, "__vinort__", False):
        return current
    if current is not None:
        raise ImportError(
            "onnxruntime was imported before vinort.install_as_onnxruntime(): call it first, before "
            "the package that imports onnxruntime"
        )
    facade = types.ModuleType("onnxruntime", "vinort, installed as onnxruntime (vinort.install_as_onnxruntime)")
    for name in vinort.__all__:
        setattr(facade, name, getattr(vinort, name))
    real = _real_onnxruntime_dirs()
    facade.__dict__.update(__version__=ONNXRUNTIME_API_VERSION, __vinort__=True, __path__=real, capi=vinort.capi,
                           __file__=vinort.__file__)
    sys.modules["onnxruntime"] = facade
    for sub, target in _SUBMODULES.items():
        sys.modules[f"onnxruntime.{sub}"] = importlib.import_module(target)
    sys.meta_path.insert(0, _Finder(real))
    return facade


def _install_from_environment() -> None:
    """The ``.pth`` hook: installs when ``VINORT_AS_ONNXRUNTIME=1``."""
    if os.environ.get("VINORT_AS_ONNXRUNTIME") == "1":
        install_as_onnxruntime()
